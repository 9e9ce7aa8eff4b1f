//! The calling side of A2A: fetch a card, pick the binding it prefers, send one message.
//!
//! Every failure is a typed [`WireError`]: [`WireError::Connect`] (the words "connection
//! refused" when it was), [`WireError::Timeout`], [`WireError::HttpStatus`],
//! [`WireError::JsonRpc`] (an error without an `id`, as the a2a-sdk 0.3 server sends, is
//! accepted), or [`WireError::Protocol`] for a reply outside the protocol. Nothing here panics
//! on what a peer sends.
//!
//! A client given a `Signer` (`A2aClient::signed`) signs every JSON-RPC call it sends
//! (see [`crate::wire::sign`]); card fetches are never signed, since a card is public.

use super::codec::{Json, decode_result, decode_task};
use super::model::{Message, SendResult, Task};
use super::{Binding, CARD_PATH, LEGACY_CARD_PATH, Operation, card::EXTENSION_URI, v10};
use crate::wire::WireError;
use crate::wire::http::client::{ClientRequest, ClientResponse, HttpClient};
use crate::wire::jsonrpc;
use crate::wire::sign::Signer;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Value, json};
use std::time::Duration;

type Result<T, E = WireError> = std::result::Result<T, E>;

/// What a JSON-RPC call asks for (`Accept`), unless it is a stream.
const JSON: &str = "application/json";

/// The default per-call timeout (the reference's `DEFAULT_TIMEOUT_S`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where to send JSON-RPC, and in which binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The binding the endpoint speaks.
    pub(crate) binding: Binding,
    /// The JSON-RPC URL.
    pub(crate) url: String,
}

impl Target {
    /// The target a card prefers: its first JSON-RPC interface in `supportedInterfaces` (A2A
    /// 1.0 §8.3.2: the earlier entry wins), else a v0.3 card's `url` (0.3 §5.6.3).
    pub fn from_card(card: &Value) -> Result<Target> {
        let (binding, url) = super::card::pick_binding(card)?;
        Ok(Target { binding, url })
    }
}

/// An A2A client on a shared HTTP client (connections are reused between calls).
#[derive(Clone)]
pub struct A2aClient {
    /// The HTTP client the calls go through (TCP or in memory).
    pub(crate) http: HttpClient,
    /// Used when a call names no timeout of its own.
    pub(crate) timeout: Duration,
    /// Signs every JSON-RPC call, when set.
    pub(crate) signer: Option<Signer>,
}

impl std::fmt::Debug for A2aClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aClient")
            .field("timeout", &self.timeout)
            .field("signed", &self.signer.is_some())
            .finish_non_exhaustive()
    }
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
    pub(crate) fn signed(&self, signer: Signer) -> A2aClient {
        A2aClient {
            signer: Some(signer),
            ..self.clone()
        }
    }

    /// `GET <base>/.well-known/agent-card.json` (falling back to the pre-0.3 `agent.json`).
    pub fn fetch_card(&self, base_url: &str, timeout: Duration) -> Result<Value> {
        self.fetch_card_with(base_url, timeout, &[])
    }

    /// [`A2aClient::fetch_card`], sending `headers` too (a relay's `Via`).
    pub(crate) fn fetch_card_with(
        &self,
        base_url: &str,
        timeout: Duration,
        headers: &[(&str, &str)],
    ) -> Result<Value> {
        let base = base_url.trim_end_matches('/');
        let mut last = None;
        for path in [CARD_PATH, LEGACY_CARD_PATH] {
            let url = format!("{base}{path}");
            let mut request =
                ClientRequest::get(&url, timeout).header("A2A-Version", v10::PROTOCOL_VERSION);
            for (k, v) in headers {
                request = request.header(k, v);
            }
            let response = self.http.send(request)?;
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
    ///
    /// The request is written straight from `message`; a reply that is a task in its plain
    /// shape is read straight from the body (`super::reply`), and any other reply the general
    /// way, which alone reports what is wrong with one.
    pub(crate) fn send(
        &self,
        target: &Target,
        message: Message,
        extra_headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<SendResult> {
        let binding = target.binding;
        let id = Value::String(crate::ids::new_uuid7());
        let method = binding.method(Operation::Send);
        let params = SendBody(binding, &message);
        let call = self.request(
            target,
            &id,
            method,
            params,
            extra_headers,
            timeout,
            true,
            JSON,
        )?;
        let response = self.http.send(call)?;
        let expected = id.as_str().unwrap_or_default();
        if response.status == 200
            && let Some(task) = super::reply::read_task(binding, &response.body, expected)
        {
            return Ok(SendResult::Task(task));
        }
        let result = read_reply_of(&target.url, &response, &id)?;
        decode_result(binding, result).map_err(|e| {
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
        let method = target.binding.method(Operation::GetTask);
        let result = self.call(target, method, json!({ "id": task_id }), &[], timeout)?;
        decode_task(target.binding, result).map_err(|e| {
            WireError::protocol(Some(&target.url), format!("the task is outside A2A: {e}"))
        })
    }

    /// One JSON-RPC call in `target`'s binding; the `result`, or a typed error.
    ///
    /// Only an HTTP 200 carries a result. Any other status is [`WireError::HttpStatus`],
    /// except a JSON-RPC error sent with one (a refused signature's 401, say), which is
    /// [`WireError::JsonRpc`]; a 404 is always [`WireError::HttpStatus`], whatever its body
    /// says, since the endpoint is not there.
    pub fn call(
        &self,
        target: &Target,
        method: &str,
        params: Value,
        extra_headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Value> {
        self.call_announcing(target, method, params, extra_headers, timeout, true)
    }

    /// [`A2aClient::call`], announcing the Data Director extension (`X-A2A-Extensions` /
    /// `A2A-Extensions`) only if `announce`: a relay passes its caller's extensions on instead.
    pub(crate) fn call_announcing(
        &self,
        target: &Target,
        method: &str,
        params: Value,
        extra_headers: &[(&str, &str)],
        timeout: Duration,
        announce: bool,
    ) -> Result<Value> {
        // Always an id: a notification would get no answer.
        let id = Value::String(crate::ids::new_uuid7());
        let call = self.request(
            target,
            &id,
            method,
            params,
            extra_headers,
            timeout,
            announce,
            JSON,
        );
        read_reply_of(&target.url, &self.http.send(call?)?, &id)
    }

    /// The HTTP request of one JSON-RPC call, signed when the client signs.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn request(
        &self,
        target: &Target,
        id: &Value,
        method: &str,
        params: impl Serialize,
        extra_headers: &[(&str, &str)],
        timeout: Duration,
        announce: bool,
        accept: &str,
    ) -> Result<ClientRequest> {
        // Sized for a typical invocation, so that writing it does not grow the buffer.
        let mut body = Vec::with_capacity(1024);
        serde_json::to_writer(
            &mut body,
            &RequestBody {
                id,
                jsonrpc: "2.0",
                method,
                params,
            },
        )
        .expect("a JSON value and the model always serialise");
        let mut request =
            ClientRequest::post_json(&target.url, body, timeout).header("Accept", accept);
        if announce {
            request = request.header(target.binding.extensions_header(), EXTENSION_URI);
        }
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
        Ok(request)
    }
}

/// A JSON-RPC request object (2.0 §4), always with an id, written straight from its params:
/// the members in the order a value tree writes them (sorted), as `jsonrpc::request` builds.
#[derive(Serialize)]
struct RequestBody<'a, P> {
    id: &'a Value,
    jsonrpc: &'static str,
    method: &'a str,
    params: P,
}

/// A blocking send's params, the document `codec::encode_send_params` builds, written straight
/// from the message (by the codec's writer, so its members come in the codec's order rather
/// than sorted): a v0.3 send asks for `blocking: true` and JSON output; a 1.0 send leaves
/// `returnImmediately` false, so it has no configuration.
struct SendBody<'a>(Binding, &'a Message);

/// v0.3's `MessageSendConfiguration` (0.3 §7.1.1) for a blocking call that wants JSON.
#[derive(Serialize)]
struct BlockingForJson {
    #[serde(rename = "acceptedOutputModes")]
    accepted_output_modes: [&'static str; 1],
    blocking: bool,
}

impl Serialize for SendBody<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let SendBody(binding, message) = *self;
        let mut m = s.serialize_map(None)?;
        if binding == Binding::V03 {
            let blocking = BlockingForJson {
                accepted_output_modes: ["application/json"],
                blocking: true,
            };
            m.serialize_entry("configuration", &blocking)?;
        }
        m.serialize_entry("message", &Json(binding, message))?;
        m.end()
    }
}

/// [`read_reply`] of a whole response.
fn read_reply_of(url: &str, response: &ClientResponse, id: &Value) -> Result<Value> {
    read_reply(
        url,
        response.status,
        response.header("content-type"),
        &response.body,
        id,
    )
}

/// Read a JSON-RPC reply to the call `id` that `url` answered with `status`: see
/// [`A2aClient::call`] for which statuses carry what.
pub(crate) fn read_reply(
    url: &str,
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    id: &Value,
) -> Result<Value> {
    let http_status = || WireError::HttpStatus {
        url: url.to_string(),
        status,
        body: String::from_utf8_lossy(body).into(),
    };
    if status == 200 {
        return jsonrpc::read_response(body, id);
    }
    let looks_like_json = content_type.is_some_and(|c| c.contains("json"));
    if status != 404
        && looks_like_json
        && let Err(e @ WireError::JsonRpc { .. }) = jsonrpc::read_response(body, id)
    {
        return Err(e);
    }
    Err(http_status())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::a2a::codec::encode_send_params;
    use crate::wire::a2a::model::{Part, Role, SendParams};
    use crate::wire::http::memory::MemoryNet;

    /// A send's body as the value tree `jsonrpc::request` and `encode_send_params` build.
    fn as_a_tree(binding: Binding, id: &Value, message: Message) -> String {
        let params = SendParams {
            message,
            configuration: None,
            metadata: None,
        };
        let params = encode_send_params(binding, &params);
        jsonrpc::request(id, binding.method(Operation::Send), params).to_string()
    }

    #[test]
    fn a_send_is_written_straight_from_the_message_as_the_value_tree_would_hold_it() {
        let client = A2aClient::new(HttpClient::memory(MemoryNet::new()));
        let id = json!("01a229c2-bbf5-7000-8000-000000000001");
        let doc = json!({"agent_id": "echo.wire", "input": {"schema_class": "Echo",
                         "value": {"n": 1.50, "big": 123456789012345678901234567890_u128.to_string(),
                                   "s": "\u{e9}\"\\\n\u{1F600}", "e": 1e300}}});
        let mut metadata = serde_json::Map::new();
        metadata.insert("traceparent".into(), json!("00-4bf9-00f0-01"));
        metadata.insert("dd.input_hash".into(), json!("245e"));
        for binding in [Binding::V03, Binding::V10] {
            let target = Target {
                binding,
                url: "http://agent/a2a".into(),
            };
            for part in [Part::data(doc.clone()), Part::encoded(&doc)] {
                let mut message = Message::new(Role::User, vec![part, Part::text("hi")]);
                message.metadata = Some(metadata.clone());
                message.context_id = Some("c".into());
                let method = binding.method(Operation::Send);
                let params = SendBody(binding, &message);
                let request = client
                    .request(
                        &target,
                        &id,
                        method,
                        params,
                        &[],
                        DEFAULT_TIMEOUT,
                        true,
                        "a",
                    )
                    .unwrap();
                let written: Value = serde_json::from_slice(&request.body).unwrap();
                // The same document: written as a tree writes it, the bytes are the tree's.
                let tree = as_a_tree(binding, &id, message);
                assert_eq!(written.to_string(), tree, "{binding:?}");
            }
        }
    }

    #[test]
    fn any_other_call_is_written_as_the_value_tree_writes_it() {
        let client = A2aClient::new(HttpClient::memory(MemoryNet::new()));
        let target = Target {
            binding: Binding::V10,
            url: "http://agent/a2a".into(),
        };
        let (id, params) = (json!(7), json!({"id": "t", "historyLength": 2}));
        let request = client
            .request(
                &target,
                &id,
                "GetTask",
                params.clone(),
                &[],
                DEFAULT_TIMEOUT,
                true,
                "a",
            )
            .unwrap();
        let tree = jsonrpc::request(&id, "GetTask", params).to_string();
        assert_eq!(String::from_utf8(request.body).unwrap(), tree);
    }
}
