//! The calling side of A2A: fetch a card, pick the binding it prefers, send one message.
//!
//! Every failure is a typed [`WireError`]: [`WireError::Connect`] (the words "connection
//! refused" when it was), [`WireError::Timeout`], [`WireError::HttpStatus`],
//! [`WireError::JsonRpc`] (an error without an `id`, as the a2a-sdk 0.3 server sends, is
//! accepted), or [`WireError::Protocol`] for a reply outside the protocol. Nothing here panics
//! on what a peer sends.
//!
//! A client given a [`Signer`] ([`A2aClient::signed`]) signs every JSON-RPC call it sends
//! (see [`crate::wire::sign`]); card fetches are never signed, since a card is public.

use super::model::{Message, SendParams, SendResult, Task};
use super::{Binding, CARD_PATH, LEGACY_CARD_PATH, card::EXTENSION_URI, v03, v10};
use crate::wire::WireError;
use crate::wire::http::client::{ClientRequest, HttpClient};
use crate::wire::jsonrpc;
use crate::wire::sign::Signer;
use serde_json::{Value, json};
use std::time::Duration;

type Result<T, E = WireError> = std::result::Result<T, E>;

/// The default per-call timeout (the reference's `DEFAULT_TIMEOUT_S`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where to send JSON-RPC, and in which binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The binding the endpoint speaks.
    pub binding: Binding,
    /// The JSON-RPC URL.
    pub url: String,
}

impl Target {
    /// The target a card prefers (see `super::card::pick_binding`).
    pub fn from_card(card: &Value) -> Result<Target> {
        let (binding, url) = super::card::pick_binding(card)?;
        Ok(Target { binding, url })
    }
}

/// An A2A client on a shared HTTP client (connections are reused between calls).
#[derive(Clone)]
pub struct A2aClient {
    /// The HTTP client the calls go through (TCP or in memory).
    pub http: HttpClient,
    /// Used when a call names no timeout of its own.
    pub timeout: Duration,
    /// Signs every JSON-RPC call, when set.
    pub signer: Option<Signer>,
}

impl Default for A2aClient {
    fn default() -> Self {
        A2aClient::new(HttpClient::tcp())
    }
}

impl A2aClient {
    /// A client over `http` with the default timeout.
    pub fn new(http: HttpClient) -> A2aClient {
        A2aClient {
            http,
            timeout: DEFAULT_TIMEOUT,
            signer: None,
        }
    }

    /// The same client (sharing its connections), signing every JSON-RPC call with `signer`.
    pub fn signed(&self, signer: Signer) -> A2aClient {
        A2aClient {
            signer: Some(signer),
            ..self.clone()
        }
    }

    /// `GET <base>/.well-known/agent-card.json` (falling back to the pre-0.3 `agent.json`).
    pub fn fetch_card(&self, base_url: &str, timeout: Duration) -> Result<Value> {
        let base = base_url.trim_end_matches('/');
        let mut last = None;
        for path in [CARD_PATH, LEGACY_CARD_PATH] {
            let url = format!("{base}{path}");
            let response = self.http.send(
                ClientRequest::get(&url, timeout).header("A2A-Version", v10::PROTOCOL_VERSION),
            )?;
            if response.status == 200 {
                return crate::json::parse(&response.body, crate::json::Limits::DEFAULT).map_err(
                    |e| {
                        WireError::protocol(
                            None,
                            format!("the agent card at {url} is not JSON: {e}"),
                        )
                    },
                );
            }
            last = Some(WireError::HttpStatus {
                url,
                status: response.status,
                body: String::from_utf8_lossy(&response.body).into(),
            });
            if response.status != 404 {
                break;
            }
        }
        Err(last.expect("at least one card path was tried"))
    }

    /// Send a message and return what the agent answered.
    pub fn send(
        &self,
        target: &Target,
        message: Message,
        extra_headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<SendResult> {
        let params = SendParams {
            message,
            configuration: None,
            metadata: None,
        };
        let (method, params) = match target.binding {
            Binding::V03 => (v03::SEND, v03::encode_send_params(&params)),
            Binding::V10 => (v10::SEND, v10::encode_send_params(&params)),
        };
        let result = self.call(target, method, params, extra_headers, timeout)?;
        match target.binding {
            Binding::V03 => v03::decode_result(result),
            Binding::V10 => v10::decode_result(result),
        }
        .map_err(|e| {
            WireError::protocol(Some(&target.url), format!("the reply is outside A2A: {e}"))
        })
    }

    /// Send a message and require a task back (a message reply is outside the contract).
    pub fn send_for_task(
        &self,
        target: &Target,
        message: Message,
        extra_headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Task> {
        match self.send(target, message, extra_headers, timeout)? {
            SendResult::Task(task) => Ok(task),
            SendResult::Message(_) => Err(WireError::protocol(
                None,
                format!("{} returned no task (a message instead)", target.url),
            )),
        }
    }

    /// `tasks/get` / `GetTask`.
    pub fn get_task(&self, target: &Target, task_id: &str, timeout: Duration) -> Result<Task> {
        let method = if target.binding == Binding::V03 {
            v03::GET_TASK
        } else {
            v10::GET_TASK
        };
        let result = self.call(target, method, json!({ "id": task_id }), &[], timeout)?;
        match target.binding {
            Binding::V03 => v03::decode_task(result),
            Binding::V10 => v10::decode_task(result),
        }
        .map_err(|e| {
            WireError::protocol(Some(&target.url), format!("the task is outside A2A: {e}"))
        })
    }

    /// One JSON-RPC call in `target`'s binding; the `result`, or a typed error.
    pub fn call(
        &self,
        target: &Target,
        method: &str,
        params: Value,
        extra_headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Value> {
        // Always an id: a notification would get no answer.
        let id = Value::String(crate::ids::new_uuid7());
        let body = jsonrpc::request(&id, method, params)
            .to_string()
            .into_bytes();
        let mut request = ClientRequest::post_json(&target.url, body, timeout)
            .header("Accept", "application/json")
            .header(target.binding.extensions_header(), EXTENSION_URI);
        if target.binding == Binding::V10 {
            request = request.header("A2A-Version", v10::PROTOCOL_VERSION);
        }
        for (k, v) in extra_headers {
            request = request.header(k, v);
        }
        if let Some(signer) = &self.signer {
            let signature = signer
                .sign_url(request.method, &request.url, &request.body)
                .map_err(|source| WireError::Sign {
                    url: target.url.clone(),
                    source,
                })?;
            for (name, value) in signature.headers() {
                request = request.header(name, &value);
            }
        }
        let response = self.http.send(request)?;
        let looks_like_json = response
            .header("content-type")
            .is_some_and(|c| c.contains("json"));
        if response.status != 200 && !looks_like_json {
            return Err(WireError::HttpStatus {
                url: target.url.clone(),
                status: response.status,
                body: String::from_utf8_lossy(&response.body).into(),
            });
        }
        match jsonrpc::read_response(&response.body, &id) {
            // Not a JSON-RPC answer: the HTTP status and the body say more than the parse error.
            Err(WireError::Protocol { .. }) if response.status != 200 => {
                Err(WireError::HttpStatus {
                    url: target.url.clone(),
                    status: response.status,
                    body: String::from_utf8_lossy(&response.body).into(),
                })
            }
            other => other,
        }
    }
}
