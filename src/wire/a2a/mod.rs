//! A2A over JSON-RPC, both bindings on one endpoint.
//!
//! - [`model`]: one model of messages, parts, tasks and artifacts.
//! - `v03` and `v10`: thin codecs between that model and each binding's JSON.
//! - [`card`]: agent cards that both SDK generations read, with the Data Director extension.
//! - `endpoint`: the server side: JSON-RPC dispatch, version negotiation, the task rules,
//!   non-blocking sends.
//! - `tasks`: the bounded task store, progress and cancellation, `ListTasks`.
//! - `stream`: the events of a streamed call (`message/stream`, `SendStreamingMessage`,
//!   `tasks/resubscribe`, `SubscribeToTask`), each written and read in both bindings.
//! - `error`: why a call is refused, as each binding writes it.
//! - [`client`]: the calling side, over TCP or the in-memory transport.
//! - `health`: the cards of the peers a registry keeps (the harness's agents, the relay's
//!   peers), read timed, many at once, and again in the background.

pub mod card;
pub mod client;
pub(crate) mod endpoint;
pub(crate) mod error;
pub(crate) mod health;
pub mod model;
pub(crate) mod stream;
pub(crate) mod tasks;
pub(crate) mod v03;
pub(crate) mod v10;

pub use endpoint::SIGNATURE_REFUSED;
pub use tasks::{Progress, Reply};

/// Where an A2A endpoint is served, and the agent card.
pub const JSONRPC_PATH: &str = "/a2a";
/// The agent card's well-known path (A2A 0.3 and 1.0).
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
/// The card path before A2A 0.3, still served for old clients.
pub const LEGACY_CARD_PATH: &str = "/.well-known/agent.json";

/// Message metadata keys of the Data Director wire (`dd_sdk.wire`).
pub mod meta {
    /// `input:<invocation_id>`: the source id that cites the input.
    pub const INPUT_REF: &str = "dd.input_ref";
    /// The `dd-input-json-v1` hash of the input.
    pub const INPUT_HASH: &str = "dd.input_hash";
    /// The W3C `traceparent` of the caller's span.
    pub const TRACEPARENT: &str = "traceparent";
    /// The W3C `tracestate` accompanying it.
    pub const TRACESTATE: &str = "tracestate";
    /// Where a delegation agent calls the harness back.
    pub const DELEGATE_URL: &str = "dd.delegate_url";
    /// The bearer capability that allows it.
    pub const DELEGATION_TOKEN: &str = "dd.delegation_token";
    /// On a delegation callback: the invocation the grant was issued for. The harness refuses
    /// a token presented for another parent.
    pub const PARENT_INVOCATION_ID: &str = "dd.parent_invocation_id";
    /// In a harness task's metadata, once its run is stored: the trace id of the run (32
    /// lowercase hex, the envelope's `telemetry.trace_id`), so a caller that reads no envelope
    /// can still find the run's trace.
    pub const TRACE_ID: &str = "dd.trace_id";
    /// On a streamed harness run's `working` status updates: the conductor stage starting
    /// (`policy_gate`, `input_check`, `agent_call`, `grounding_check`, `store`).
    pub const STAGE: &str = "dd.stage";
    /// On the harness's second call to an agent that suspended a run: the caller's data part
    /// that resumes it.
    pub const RESUMPTION: &str = "dd.resumption";
    /// On an `input-required` harness task: when its suspended run stops being answerable
    /// (RFC 3339); past it the run is stored as expired.
    pub const EXPIRES_AT: &str = "dd.expires_at";
    /// On a streamed harness run's final `failed` status update (and its task): the URI of the
    /// contract problem type the run's envelope carries.
    pub const PROBLEM_TYPE: &str = "dd.problem_type";
    /// On a streamed call's final `failed` status update when no run was made: what the
    /// caller got wrong (the codes AG-UI's `RUN_ERROR` carries: `invalid_request`,
    /// `unknown_agent`, `unauthenticated`, `duplicate_invocation`, `lineage_refused`,
    /// `internal_error`).
    pub const ERROR: &str = "dd.error";
}

/// Artifact names of the Data Director wire.
pub mod artifact {
    /// An agent's reply: one data part `{"result": AgentResult, "spans": [span JSON strings]}`.
    pub const AGENT_RESULT: &str = "agent-result";
    /// The harness's reply: one data part holding the envelope.
    pub const ENVELOPE: &str = "envelope";
    /// For a delegated call: the stored envelope as text, so its hash survives the wire.
    pub const ENVELOPE_JSON: &str = "envelope-json";
}

/// Which A2A binding a request or a peer speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// A2A v0.3: `message/send`, `kind` discriminators.
    V03,
    /// A2A 1.0: `SendMessage`, ProtoJSON, `A2A-Version: 1.0`.
    V10,
}

impl Binding {
    /// The binding a JSON-RPC method belongs to, if it is an A2A method.
    pub fn of_method(method: &str) -> Option<Binding> {
        if v03::METHODS.contains(&method) {
            Some(Binding::V03)
        } else if v10::METHODS.contains(&method) {
            Some(Binding::V10)
        } else {
            None
        }
    }

    /// The version header value this binding sends (`A2A-Version`).
    pub fn version(self) -> &'static str {
        match self {
            Binding::V03 => "0.3",
            Binding::V10 => v10::PROTOCOL_VERSION,
        }
    }

    /// The extensions header this binding uses.
    pub fn extensions_header(self) -> &'static str {
        match self {
            Binding::V03 => "X-A2A-Extensions",
            Binding::V10 => "A2A-Extensions",
        }
    }
}

/// Write a list field only when it has items (both bindings leave empty lists out).
fn list<M: serde::ser::SerializeMap>(m: &mut M, key: &str, v: &[String]) -> Result<(), M::Error> {
    if v.is_empty() {
        Ok(())
    } else {
        m.serialize_entry(key, v)
    }
}

// Decoding helpers both bindings share. Decoders take their JSON by value and move what they
// keep out of it: a data part can be large, and a copy would cost as much as the parse.

/// `v` as an object, or an error naming `at`.
fn object(
    v: serde_json::Value,
    at: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, error::DecodeError> {
    match v {
        serde_json::Value::Object(m) => Ok(m),
        _ => Err(error::DecodeError::new(at, "must be an object")),
    }
}

/// The strings of a JSON array (anything else in it, or a value that is no array, is none).
fn strings(v: Option<serde_json::Value>) -> Vec<String> {
    match v {
        Some(serde_json::Value::Array(a)) => a
            .into_iter()
            .filter_map(|v| match v {
                serde_json::Value::String(s) => Some(s),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A model view as a JSON value.
fn to_value<T: serde::Serialize>(v: T) -> serde_json::Value {
    serde_json::to_value(v).expect("a model value always serialises")
}

/// A count parameter (`historyLength`, `pageSize`): absent, or a non-negative integer that an
/// `int32` holds (ProtoJSON also writes integers as strings). Anything else is refused.
pub(crate) fn count_param(
    v: Option<&serde_json::Value>,
    field: &str,
) -> Result<Option<usize>, error::A2aError> {
    use serde_json::Value;
    let n = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_i64().or_else(|| {
            // 5.0 is an integer to a protobuf parser; 5.5 is not.
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                .map(|f| f as i64)
        }),
        Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
        Some(_) => None,
    };
    match n {
        Some(n) if n < 0 => Err(error::A2aError::invalid(
            field,
            format!("must be a non-negative integer, got {n}"),
        )),
        Some(n) if n <= i64::from(i32::MAX) => Ok(Some(n as usize)),
        _ => Err(error::A2aError::invalid(
            field,
            format!(
                "must be a non-negative integer, got {}",
                v.map(|v| v.to_string()).unwrap_or_default()
            ),
        )),
    }
}
