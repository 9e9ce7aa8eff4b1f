//! The probes' view of the wire: one request, and what came back.
//!
//! Probes send what a well-behaved client never would (bad JSON, notifications, batches,
//! oversized bodies), so they build their bodies themselves and read the answer as bytes;
//! the A2A codecs ([`crate::wire::a2a::v03`], [`crate::wire::a2a::v10`]) read the results.

use crate::text::{Keep, truncate};
use crate::wire::WireError;
use crate::wire::a2a::client::Target;
use crate::wire::a2a::{Binding, v10};
use crate::wire::http::client::{ClientRequest, HttpClient};
use crate::wire::{jsonrpc, sse};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// The most characters of a peer's body a report quotes.
pub(crate) const QUOTE_CHARS: usize = 240;

/// One HTTP answer.
#[derive(Clone, Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) content_type: Option<String>,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    /// The body as JSON, if it is JSON.
    pub(super) fn json(&self) -> Option<Value> {
        crate::json::parse(&self.body, crate::json::Limits::DEFAULT).ok()
    }

    /// `HTTP 200 application/json: {"jsonrpc":…` with the body cut to a readable length.
    pub(super) fn describe(&self) -> String {
        let ct = self.content_type.as_deref().unwrap_or("no content type");
        if self.body.is_empty() {
            format!("HTTP {} {ct}, empty body", self.status)
        } else {
            format!("HTTP {} {ct}: {}", self.status, quote(&self.body))
        }
    }

    /// The JSON-RPC error of a single error response.
    pub(super) fn rpc_error(&self) -> Option<Refusal> {
        rpc_error_of(&self.json()?)
    }

    /// Whether the body is a server-sent event stream.
    pub(super) fn is_event_stream(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"))
    }
}

/// A JSON-RPC error response's code and message, shown as `error <code> (<message>)`.
pub(crate) struct Refusal {
    pub(crate) code: i64,
    message: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "error {} ({})",
            self.code,
            quote(self.message.as_bytes())
        )
    }
}

/// The error of a JSON-RPC error response object.
pub(crate) fn rpc_error_of(doc: &Value) -> Option<Refusal> {
    let error = doc.get("error")?;
    let code = error.get("code")?.as_i64()?;
    let message = error.get("message").and_then(Value::as_str);
    Some(Refusal {
        code,
        message: message.unwrap_or("").to_string(),
    })
}

/// Bytes from a peer as text fit for a report: lossy UTF-8, control characters shown as
/// spaces, cut at [`QUOTE_CHARS`] characters with the full length noted.
pub(crate) fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes).replace(char::is_control, " ");
    let cut = format!("… ({} bytes)", bytes.len());
    truncate(&text, Keep::Chars(QUOTE_CHARS), &cut).into_owned()
}

/// How a request went: an answer, or the transport error that stopped it.
pub(crate) type Sent = Result<Answer, WireError>;

/// Sends the probes' requests: the one HTTP client, the caller's token, the per-request
/// timeout.
pub(crate) struct Wire {
    pub(crate) http: HttpClient,
    pub(crate) token: Option<String>,
    pub(crate) timeout: Duration,
    /// Extensions to ask for on every JSON-RPC call (the Data Director one, when the card
    /// declares it: a ddwire agent acknowledges it).
    pub(crate) extensions: Vec<String>,
}

impl Wire {
    /// `GET url`.
    pub(super) fn get(&self, url: &str) -> Sent {
        let request = ClientRequest::get(url, self.timeout)
            .header("Accept", "application/json")
            .header("A2A-Version", v10::PROTOCOL_VERSION);
        self.send(request)
    }

    /// `POST` `body` as JSON to the target, in its binding (its version and extensions
    /// headers), with extra header fields (which replace the binding's of the same name).
    pub(super) fn post(&self, t: &Target, body: Vec<u8>, extra: &[(&str, &str)]) -> Sent {
        let mut request = ClientRequest::post_json(&t.url, body, self.timeout)
            .header("Accept", "application/json, text/event-stream");
        if t.binding == Binding::V10 {
            request = request.header("A2A-Version", v10::PROTOCOL_VERSION);
        }
        if !self.extensions.is_empty() {
            request = request.header(t.binding.extensions_header(), &self.extensions.join(", "));
        }
        for (name, value) in extra {
            request
                .headers
                .retain(|(k, _)| !k.eq_ignore_ascii_case(name));
            request = request.header(name, value);
        }
        self.send(request)
    }

    /// `POST` a JSON document to the target.
    pub(super) fn post_json(&self, t: &Target, doc: &Value) -> Sent {
        self.post(t, doc.to_string().into_bytes(), &[])
    }

    /// A JSON-RPC call with an id: `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`.
    pub(super) fn call(&self, t: &Target, id: &Value, method: &str, params: Value) -> Sent {
        self.post_json(t, &jsonrpc::request(id, method, params))
    }

    /// Sends `request` with the caller's token.
    fn send(&self, mut request: ClientRequest) -> Sent {
        if let Some(token) = &self.token {
            request = request.header("Authorization", &format!("Bearer {token}"));
        }
        let response = self.http.send(request)?;
        Ok(Answer {
            status: response.status,
            content_type: response.header("content-type").map(str::to_string),
            body: response.body,
        })
    }
}

/// A fresh request id for a probe (`ddwire-check-<uuid7>`), so a log line can be traced back.
pub(crate) fn fresh_id() -> Value {
    Value::String(format!("ddwire-check-{}", crate::ids::new_uuid7()))
}

/// The `data:` payloads of a server-sent event stream read whole, by the wire's reader
/// ([`sse::Reader`], WHATWG HTML §9.2.6). A probe is lenient where a browser is not: bytes
/// that are not UTF-8 are read lossily, and the body is ended with a blank line, so that the
/// last event counts even when the server closed before ending it.
pub(crate) fn sse_data(body: &[u8]) -> Vec<String> {
    let mut text = String::from_utf8_lossy(body).into_owned();
    text.push_str("\n\n");
    // No line of the text is longer than the text: the limit never refuses it.
    let mut reader = sse::Reader::with_limit(text.as_bytes(), text.len());
    std::iter::from_fn(|| reader.next_event().ok().flatten())
        .map(|event| event.data)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_is_cut_at_a_character_boundary_and_names_the_full_length() {
        let long = "é".repeat(QUOTE_CHARS + 10);
        let q = quote(long.as_bytes());
        assert!(q.starts_with(&"é".repeat(QUOTE_CHARS)));
        assert!(q.ends_with(&format!("… ({} bytes)", long.len())));
        assert_eq!(quote(b"a\nb\x00c"), "a b c");
        assert_eq!(quote(b"\xff ok"), "\u{fffd} ok");
    }

    #[test]
    fn sse_events_are_read_by_blank_lines_whatever_the_line_ends() {
        let body = b": comment\r\nevent: x\r\ndata: {\"a\":1}\r\n\r\ndata:1\ndata: 2\n\ndata: last";
        assert_eq!(sse_data(body), vec!["{\"a\":1}", "1\n2", "last"]);
        assert!(sse_data(b"").is_empty());
    }
}
