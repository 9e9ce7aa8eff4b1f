//! A2A over JSON-RPC, both bindings on one endpoint.
//!
//! - [`model`]: one model of messages, parts, tasks and artifacts.
//! - `codec`: the one writer and reader between that model and either binding's JSON, told
//!   the binding; `Binding` spells what differs by name (methods, versions, enum names).
//! - `v03` and `v10`: what only one binding has: its method names, how it tells a part's type
//!   (`kind` against a oneof), the options of its send, its reading of task ids; and for 1.0
//!   `ListTasks`.
//! - `fast`: the typed reader of a send in its plain shape (`message/send`, `SendMessage`),
//!   straight from the body's text, which declines all else to `codec`.
//! - `card`: agent cards that both SDK generations read, with the Data Director extension.
//! - `endpoint`: the server side: JSON-RPC dispatch, version negotiation, the task rules,
//!   non-blocking sends.
//! - `tasks`: the bounded task store, progress and cancellation, `ListTasks`.
//! - `stream`: the events of a streamed call (`message/stream`, `SendStreamingMessage`,
//!   `tasks/resubscribe`, `SubscribeToTask`), each written and read in both bindings.
//! - `error`: why a call is refused, as each binding writes it.
//! - [`client`]: the calling side, over TCP or the in-memory transport; `reply`, its typed
//!   reader of a send's reply that is a plain task (anything else is read the general way).
//! - `health`: the cards of the peers a registry keeps (the harness's agents, the relay's
//!   peers), read timed, many at once, and again in the background.

pub(crate) mod card;
pub mod client;
pub(crate) mod codec;
pub(crate) mod endpoint;
pub(crate) mod error;
pub(crate) mod fast;
pub(crate) mod fields;
pub(crate) mod health;
pub mod model;
pub(crate) mod reply;
pub(crate) mod stream;
pub(crate) mod tasks;
pub(crate) mod v03;
pub(crate) mod v10;

pub use tasks::{Progress, Reply};

use model::{Role, TaskState};
use serde_json::Value;

/// Where an A2A endpoint is served, and the agent card.
pub(crate) const JSONRPC_PATH: &str = "/a2a";
/// The agent card's well-known path (A2A 0.3 and 1.0).
pub(crate) const CARD_PATH: &str = "/.well-known/agent-card.json";
/// The card path before A2A 0.3, still served for old clients.
pub(crate) const LEGACY_CARD_PATH: &str = "/.well-known/agent.json";

/// Message metadata keys of the Data Director wire (`dd_sdk.wire`).
pub(crate) mod meta {
    /// `input:<invocation_id>`: the source id that cites the input.
    pub(crate) const INPUT_REF: &str = "dd.input_ref";
    /// The `dd-input-json-v1` hash of the input.
    pub(crate) const INPUT_HASH: &str = "dd.input_hash";
    /// The W3C `traceparent` of the caller's span.
    pub(crate) const TRACEPARENT: &str = "traceparent";
    /// The W3C `tracestate` accompanying it.
    pub(crate) const TRACESTATE: &str = "tracestate";
    /// Where a delegation agent calls the harness back.
    pub(crate) const DELEGATE_URL: &str = "dd.delegate_url";
    /// The bearer capability that allows it.
    pub(crate) const DELEGATION_TOKEN: &str = "dd.delegation_token";
    /// On a delegation callback: the invocation the grant was issued for. The harness refuses
    /// a token presented for another parent.
    pub(crate) const PARENT_INVOCATION_ID: &str = "dd.parent_invocation_id";
    /// In a harness task's metadata, once its run is stored: the trace id of the run (32
    /// lowercase hex, the envelope's `telemetry.trace_id`), so a caller that reads no envelope
    /// can still find the run's trace.
    pub(crate) const TRACE_ID: &str = "dd.trace_id";
    /// On a streamed harness run's `working` status updates: the conductor stage starting
    /// (`policy_gate`, `input_check`, `agent_call`, `grounding_check`, `store`).
    pub(crate) const STAGE: &str = "dd.stage";
    /// On the harness's second call to an agent that suspended a run: the caller's data part
    /// that resumes it.
    pub(crate) const RESUMPTION: &str = "dd.resumption";
    /// On an `input-required` harness task: when its suspended run stops being answerable
    /// (RFC 3339); past it the run is stored as expired.
    pub(crate) const EXPIRES_AT: &str = "dd.expires_at";
    /// On a streamed harness run's final `failed` status update (and its task): the URI of the
    /// contract problem type the run's envelope carries.
    pub(crate) const PROBLEM_TYPE: &str = "dd.problem_type";
    /// On a streamed call's final `failed` status update when no run was made: what the
    /// caller got wrong (the codes AG-UI's `RUN_ERROR` carries: `invalid_request`,
    /// `unknown_agent`, `unauthenticated`, `duplicate_invocation`, `lineage_refused`,
    /// `internal_error`).
    pub(crate) const ERROR: &str = "dd.error";
}

/// Artifact names of the Data Director wire.
pub(crate) mod artifact {
    /// An agent's reply: one data part `{"result": AgentResult, "spans": [span JSON strings]}`.
    pub(crate) const AGENT_RESULT: &str = "agent-result";
    /// The harness's reply: one data part holding the envelope.
    pub(crate) const ENVELOPE: &str = "envelope";
    /// For a delegated call: the stored envelope as text, so its hash survives the wire.
    pub(crate) const ENVELOPE_JSON: &str = "envelope-json";
}

/// Which A2A binding a request or a peer speaks. The two bindings carry one model
/// ([`model`]) and are written and read by one codec (`codec`); what differs between them is
/// spelled here (method names, versions, enum names) and, where the specifications shape an
/// object differently, in `v03` and `v10`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Binding {
    /// A2A v0.3: `message/send`, `kind` discriminators.
    V03,
    /// A2A 1.0: `SendMessage`, ProtoJSON, `A2A-Version: 1.0`.
    V10,
}

/// An operation both bindings define, each under a name of its own (A2A 1.0 §9.4, v0.3 §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    /// `message/send`, `SendMessage`.
    Send,
    /// `message/stream`, `SendStreamingMessage`.
    Stream,
    /// `tasks/get`, `GetTask`.
    GetTask,
    /// `tasks/cancel`, `CancelTask`.
    CancelTask,
}

/// Each task state as the bindings spell it, in the order of [`TaskState`]'s variants: v0.3's
/// name (0.3 §6.3), 1.0's ProtoJSON name and its enum number (1.0 §4.1.3; ProtoJSON reads
/// either).
const STATES: [(TaskState, &str, &str, i64); 9] = [
    (TaskState::Submitted, "submitted", "TASK_STATE_SUBMITTED", 1),
    (TaskState::Working, "working", "TASK_STATE_WORKING", 2),
    (
        TaskState::InputRequired,
        "input-required",
        "TASK_STATE_INPUT_REQUIRED",
        6,
    ),
    (TaskState::Completed, "completed", "TASK_STATE_COMPLETED", 3),
    (TaskState::Canceled, "canceled", "TASK_STATE_CANCELED", 5),
    (TaskState::Failed, "failed", "TASK_STATE_FAILED", 4),
    (TaskState::Rejected, "rejected", "TASK_STATE_REJECTED", 7),
    (
        TaskState::AuthRequired,
        "auth-required",
        "TASK_STATE_AUTH_REQUIRED",
        8,
    ),
    (TaskState::Unknown, "unknown", "TASK_STATE_UNSPECIFIED", 0),
];

/// Each role as the bindings spell it, in the order of [`Role`]'s variants: v0.3's name (0.3
/// §6.4 `Message.role`), 1.0's ProtoJSON name and its enum number (1.0 §4.1.5).
const ROLES: [(Role, &str, &str, i64); 2] = [
    (Role::User, "user", "ROLE_USER", 1),
    (Role::Agent, "agent", "ROLE_AGENT", 2),
];

impl Binding {
    /// The binding a JSON-RPC method belongs to, if it is an A2A method.
    pub(crate) fn of_method(method: &str) -> Option<Binding> {
        if v03::METHODS.contains(&method) {
            Some(Binding::V03)
        } else if v10::METHODS.contains(&method) {
            Some(Binding::V10)
        } else {
            None
        }
    }

    /// The binding of a declared protocol version, by its major number (`0.3` is v0.3, `1.0`
    /// is 1.0), as a2a-sdk's `validate_version` compares them.
    pub(crate) fn of_version(version: &str) -> Option<Binding> {
        match version.trim().split('.').next() {
            Some("0") => Some(Binding::V03),
            Some("1") => Some(Binding::V10),
            _ => None,
        }
    }

    /// The version header value this binding sends (`A2A-Version`).
    pub(crate) fn version(self) -> &'static str {
        self.pick("0.3", v10::PROTOCOL_VERSION)
    }

    /// The extensions header this binding uses.
    pub(crate) fn extensions_header(self) -> &'static str {
        self.pick("X-A2A-Extensions", "A2A-Extensions")
    }

    /// What this binding calls `operation`.
    pub(crate) fn method(self, operation: Operation) -> &'static str {
        let (v03, v10) = match operation {
            Operation::Send => (v03::SEND, v10::SEND),
            Operation::Stream => (v03::STREAM, v10::STREAM),
            Operation::GetTask => (v03::GET_TASK, v10::GET_TASK),
            Operation::CancelTask => (v03::CANCEL_TASK, v10::CANCEL_TASK),
        };
        self.pick(v03, v10)
    }

    /// The name of a task state (`completed`, `TASK_STATE_COMPLETED`).
    #[inline]
    pub(crate) fn state_name(self, state: TaskState) -> &'static str {
        let (_, v03, v10, _) = STATES[state as usize];
        self.pick(v03, v10)
    }

    /// The task state `v` names, in this binding's spelling (1.0: or its number).
    pub(crate) fn state_from(self, v: &Value) -> Option<TaskState> {
        self.spelled(&STATES, v)
    }

    /// The name of a role (`user`, `ROLE_USER`).
    #[inline]
    pub(crate) fn role_name(self, role: Role) -> &'static str {
        let (_, v03, v10, _) = ROLES[role as usize];
        self.pick(v03, v10)
    }

    /// The role `v` names, in this binding's spelling (1.0: or its number).
    pub(crate) fn role_from(self, v: &Value) -> Option<Role> {
        self.spelled(&ROLES, v)
    }

    /// `v03` or `v10`, whichever is this binding's.
    #[inline]
    fn pick<T>(self, v03: T, v10: T) -> T {
        match self {
            Binding::V03 => v03,
            Binding::V10 => v10,
        }
    }

    /// The entry of an enum `table` whose name in this binding is `v` (1.0: or whose number).
    fn spelled<T: Copy>(self, table: &[(T, &str, &str, i64)], v: &Value) -> Option<T> {
        table
            .iter()
            .find(|(_, v03, v10, number)| match self {
                Binding::V03 => v.as_str() == Some(v03),
                Binding::V10 => v.as_str() == Some(v10) || v.as_i64() == Some(*number),
            })
            .map(|entry| entry.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spelling_table_is_in_the_order_of_its_enums_variants() {
        for (i, (state, ..)) in STATES.iter().enumerate() {
            assert_eq!(*state as usize, i, "{state:?}");
        }
        for (i, (role, ..)) in ROLES.iter().enumerate() {
            assert_eq!(*role as usize, i, "{role:?}");
        }
    }

    #[test]
    fn each_binding_reads_back_the_names_it_writes_and_1_0_reads_enum_numbers() {
        for binding in [Binding::V03, Binding::V10] {
            for (state, ..) in STATES {
                let name = Value::from(binding.state_name(state));
                assert_eq!(binding.state_from(&name), Some(state));
            }
            for (role, ..) in ROLES {
                let name = Value::from(binding.role_name(role));
                assert_eq!(binding.role_from(&name), Some(role));
            }
        }
        assert_eq!(
            Binding::V10.state_from(&Value::from(3)),
            Some(TaskState::Completed)
        );
        assert_eq!(Binding::V03.state_from(&Value::from(3)), None);
        assert_eq!(
            Binding::V03.state_from(&Value::from("TASK_STATE_COMPLETED")),
            None
        );
        assert_eq!(Binding::V10.role_from(&Value::from(2)), Some(Role::Agent));
    }
}
