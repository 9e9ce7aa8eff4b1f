//! The fixed trace format: span names and the `dd.*` attributes Data Director owns, and the
//! few informational names the conductor adds beside them.
//!
//! This is the only place in ddwire that spells a span name, an attribute key or a span event
//! name. Agents use the tracer's span helpers and never spell a name or key themselves.
//! Changing a span name or an owned key changes the wire format (`vendor-notes/span-json.md`);
//! the informational keys and event names are ddwire's own, outside the owned set: nothing
//! reads them to decide anything.

use std::fmt;

/// The six span names of the trace format. Closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum SpanName {
    /// The root of one invocation; opened by the conductor.
    InvokeAgent,
    /// The institutional profile's decision, before the agent runs.
    PolicyGate,
    /// One record retrieved; carries its source id and content hash.
    Retrieval,
    /// One model call; carries the model id and token counts.
    Chat,
    /// One tool call.
    ExecuteTool,
    /// One delegation to another agent through the harness.
    Delegate,
}

impl SpanName {
    /// Every span name.
    pub(crate) const ALL: [SpanName; 6] = [
        SpanName::InvokeAgent,
        SpanName::PolicyGate,
        SpanName::Retrieval,
        SpanName::Chat,
        SpanName::ExecuteTool,
        SpanName::Delegate,
    ];

    /// The name as it appears on the wire.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SpanName::InvokeAgent => "invoke_agent",
            SpanName::PolicyGate => "policy_gate",
            SpanName::Retrieval => "retrieval",
            SpanName::Chat => "chat",
            SpanName::ExecuteTool => "execute_tool",
            SpanName::Delegate => "delegate",
        }
    }

    /// The span name spelled `s`, if it is one of the six.
    pub(crate) fn parse(s: &str) -> Option<SpanName> {
        SpanName::ALL.into_iter().find(|n| n.as_str() == s)
    }
}

impl fmt::Display for SpanName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The owned attribute keys (`OWNED_ATTRIBUTES` in the reference's `dd_sdk.tracing`), then
/// the informational ones, each marked so. Only the first ten are in `OWNED_ATTRIBUTES`.
pub mod attr {
    /// The span's operation; equals the span name. Set by every helper.
    pub(crate) const OPERATION: &str = "dd.operation";
    /// The agent a span concerns (for `delegate`, the agent delegated *to*).
    pub(crate) const AGENT_ID: &str = "dd.agent_id";
    /// What a `retrieval` fetched, or `invocation:<child>` on a `delegate` span.
    pub(crate) const SOURCE_ID: &str = "dd.source_id";
    /// The content hash of what `dd.source_id` names (64 hex).
    pub(crate) const CONTENT_HASH: &str = "dd.content_hash";
    /// The model a `chat` span called.
    pub const MODEL_ID: &str = "dd.model_id";
    /// Input tokens of a model call (int).
    pub(crate) const INPUT_TOKENS: &str = "dd.input_tokens";
    /// Output tokens of a model call (int).
    pub(crate) const OUTPUT_TOKENS: &str = "dd.output_tokens";
    /// The invocation's outcome status. Conductor only, root only.
    pub(crate) const OUTCOME: &str = "dd.outcome";
    /// The declared grounding mode. Conductor only, root only.
    pub(crate) const GROUNDING_MODE: &str = "dd.grounding_mode";
    /// The `dd-input-json-v1` hash of the input. Conductor only, root only.
    pub(crate) const INPUT_HASH: &str = "dd.input_hash";
    /// Informational, not owned: the tool an `execute_tool` span ran. Nothing reads it.
    pub(crate) const TOOL_NAME: &str = "dd.tool_name";
    /// Informational, not owned: on a stage event of the root (`policy_gate`, `input_check`),
    /// the stage's decision (`permitted`, `not_enabled`, `accepted`, `refused`...).
    pub(crate) const STAGE_DECISION: &str = "dd.stage.decision";
    /// Informational, not owned: on the root's `agent_call` event, `answered` or `failed`.
    pub(crate) const STAGE_RESULT: &str = "dd.stage.result";
    /// Informational, not owned: on a [`WITHHELD`](super::event::WITHHELD) event, the stage
    /// that withheld the result: `grounding_check` or `validation`.
    pub(crate) const WITHHELD_STAGE: &str = "dd.withheld.stage";
    /// Informational, not owned: on a [`WITHHELD`](super::event::WITHHELD) event by the
    /// grounding check, the ids of the linter rules that failed (`G0`, `R2`...), each once, in
    /// the order the linter found them (a string array).
    pub(crate) const WITHHELD_RULES: &str = "dd.withheld.rules";
    /// Informational, not owned: on a [`WITHHELD`](super::event::WITHHELD) event, every
    /// violation as the envelope's statement lists it (a string array).
    pub(crate) const WITHHELD_VIOLATIONS: &str = "dd.withheld.violations";
    /// Informational, not owned: on an [`APPROVED`](super::event::APPROVED) event, the
    /// referred run the steward approved.
    pub(crate) const APPROVAL_REFERRED: &str = "dd.approval.referred_invocation_id";
    /// Informational, not owned: on an [`APPROVED`](super::event::APPROVED) event, the
    /// steward's `principal_id`.
    pub(crate) const APPROVAL_BY: &str = "dd.approval.by";
    /// Informational, not owned: on an [`APPROVED`](super::event::APPROVED) event, when the
    /// steward decided (RFC 3339).
    pub(crate) const APPROVAL_AT: &str = "dd.approval.at";
}

/// The names of the span events the conductor records on the root `invoke_agent` span, beside
/// the stage events (named after the stage: `policy_gate`, `input_check`, `agent_call`).
/// Informational: no check reads them.
pub(crate) mod event {
    /// The conductor withheld the agent's result: the envelope says `failed` whatever the
    /// agent claimed (its `dd.outcome` on the root). Carries
    /// [`WITHHELD_STAGE`](super::attr::WITHHELD_STAGE),
    /// [`WITHHELD_RULES`](super::attr::WITHHELD_RULES) (grounding check only) and
    /// [`WITHHELD_VIOLATIONS`](super::attr::WITHHELD_VIOLATIONS).
    pub(crate) const WITHHELD: &str = "withheld";
    /// A steward approved the referred run this run carries out, so the policy gate let it
    /// through. Carries [`APPROVAL_REFERRED`](super::attr::APPROVAL_REFERRED),
    /// [`APPROVAL_BY`](super::attr::APPROVAL_BY) and [`APPROVAL_AT`](super::attr::APPROVAL_AT).
    pub(crate) const APPROVED: &str = "approved";
}

/// The ten owned attributes: the only ones the linter and the provenance writer read.
pub(crate) const OWNED_ATTRIBUTES: [&str; 10] = [
    attr::OPERATION,
    attr::AGENT_ID,
    attr::SOURCE_ID,
    attr::CONTENT_HASH,
    attr::MODEL_ID,
    attr::INPUT_TOKENS,
    attr::OUTPUT_TOKENS,
    attr::OUTCOME,
    attr::GROUNDING_MODE,
    attr::INPUT_HASH,
];

/// The attributes only the conductor may set, and only on the root `invoke_agent` span
/// (a span from an agent carrying one violates linter rule G0). In the reference's order.
pub(crate) const CONDUCTOR_ATTRIBUTES: [&str; 3] =
    [attr::GROUNDING_MODE, attr::INPUT_HASH, attr::OUTCOME];

/// Whether `key` is one of the [`OWNED_ATTRIBUTES`].
pub(crate) fn is_owned(key: &str) -> bool {
    OWNED_ATTRIBUTES.contains(&key)
}

/// The spans and attributes `ddwire relay` records for each hop it forwards. Informational,
/// never owned: nothing in ddwire judges them, and no `dd.*` key is among them. They follow
/// the relay they replace (otel-a2a-relay's "Span shape": `a2a.task` spans with
/// `session.id`, `a2a.task.id`, `agent.id`, `graph.node.*`, state changes and stream chunks
/// as events), OpenInference's semantic conventions (`openinference.span.kind`,
/// `session.id`, `user.id`, `input.value`, `output.value`, `graph.node.id`,
/// `graph.node.parent_id`, so Phoenix draws sessions and the agent graph), and
/// OpenTelemetry's semantic conventions for RPC (`rpc.system`, `rpc.method`,
/// `rpc.jsonrpc.error_code`) and HTTP (`http.response.status_code`, `url.full`).
pub(crate) mod relay {
    /// SERVER: a send or a stream, as the relay received it (the seed's `a2a.task`).
    pub(crate) const SPAN_TASK: &str = "a2a.task";
    /// SERVER: `tasks/get` / `GetTask`.
    pub(crate) const SPAN_TASK_GET: &str = "a2a.task.get";
    /// SERVER: `tasks/cancel` / `CancelTask` (the seed's `a2a.task.cancel`).
    pub(crate) const SPAN_TASK_CANCEL: &str = "a2a.task.cancel";
    /// SERVER: `tasks/resubscribe` / `SubscribeToTask`.
    pub(crate) const SPAN_TASK_SUBSCRIBE: &str = "a2a.task.subscribe";
    /// SERVER: `ListTasks`.
    pub(crate) const SPAN_TASKS_LIST: &str = "a2a.tasks.list";
    /// SERVER: any other A2A method the relay forwards (push notification configs, the
    /// extended card).
    pub(crate) const SPAN_CALL: &str = "a2a.call";
    /// CLIENT: the forward to the peer (the seed's `a2a.relay.forward`).
    pub(crate) const SPAN_FORWARD: &str = "a2a.relay.forward";

    /// The span's events: a task's state changed (`from`, `to`, A2A 0.3 state names).
    pub(crate) const EVENT_STATE_CHANGE: &str = "a2a.task.state_change";
    /// One event of a stream passed on to the caller (`seq` from 0, `final`, `kind`).
    pub(crate) const EVENT_STREAM_CHUNK: &str = "a2a.message.stream_chunk";
    /// Event attribute keys.
    pub(crate) const FROM: &str = "from";
    pub(crate) const TO: &str = "to";
    pub(crate) const SEQ: &str = "seq";
    pub(crate) const FINAL: &str = "final";
    pub(crate) const KIND: &str = "kind";

    /// OpenInference: the session a span belongs to; the relay uses the A2A `contextId`.
    pub(crate) const SESSION_ID: &str = "session.id";
    /// OpenInference: who sent the call (message metadata `agent.id`), when declared.
    pub(crate) const USER_ID: &str = "user.id";
    /// OpenInference: `AGENT` on every relay span, as the seed sets it.
    pub(crate) const SPAN_KIND: &str = "openinference.span.kind";
    /// OpenInference: the call's input (the message, or the params) as JSON.
    pub(crate) const INPUT_VALUE: &str = "input.value";
    pub(crate) const INPUT_MIME_TYPE: &str = "input.mime_type";
    /// OpenInference: the call's output (the result) as JSON.
    pub(crate) const OUTPUT_VALUE: &str = "output.value";
    pub(crate) const OUTPUT_MIME_TYPE: &str = "output.mime_type";
    /// OpenInference agent graph: this node, and the node that called it.
    pub(crate) const GRAPH_NODE_ID: &str = "graph.node.id";
    pub(crate) const GRAPH_NODE_PARENT_ID: &str = "graph.node.parent_id";

    /// The seed's agent identity attributes: the relay's own id, name and role on its spans.
    pub(crate) const AGENT_ID: &str = "agent.id";
    pub(crate) const AGENT_NAME: &str = "agent.name";
    pub(crate) const AGENT_ROLE: &str = "agent.role";

    /// A2A: the task the call concerns, and its state when the call ended (0.3 names).
    pub(crate) const TASK_ID: &str = "a2a.task.id";
    pub(crate) const TASK_STATE: &str = "a2a.task.state";
    /// A2A: the binding a call was made in (`0.3`, `1.0`).
    pub(crate) const BINDING: &str = "a2a.binding";
    /// The peer a call is forwarded to, and its role.
    pub(crate) const PEER_ID: &str = "a2a.peer.id";
    pub(crate) const PEER_ROLE: &str = "a2a.peer.role";
    /// The sender's role, when it is a registered peer.
    pub(crate) const SENDER_ROLE: &str = "a2a.sender.role";
    /// How the relay handled the call: `forward`, `forward-stream` or `reject`.
    pub(crate) const MODE: &str = "a2a.relay.mode";
    /// Why the call failed, one of the relay's failure classes (`peer_timeout`, ...).
    pub(crate) const FAILURE_CLASS: &str = "a2a.relay.failure_class";
    /// The events a stream passed on.
    pub(crate) const STREAM_EVENTS: &str = "a2a.relay.stream_events";
    /// `true` when the caller of a stream went away before the peer's last event.
    pub(crate) const CALLER_GONE: &str = "a2a.relay.caller_gone";

    /// The values of [`FAILURE_CLASS`]: the relay's failure classes, in the order of
    /// `relay::failure::FailureClass::ALL` (which spells each through this list).
    pub(crate) const FAILURE_CLASSES: [&str; 13] = [
        "topology_violation",
        "peer_404",
        "peer_timeout",
        "peer_disconnect",
        "peer_jsonrpc_error",
        "peer_invalid_reply",
        "unknown_peer",
        "binding_unsupported",
        "unsupported_operation",
        "invalid_params",
        "loop_detected",
        "destination_refused",
        "task_conflict",
    ];

    /// OpenTelemetry semantic conventions (RPC, HTTP).
    pub(crate) const RPC_SYSTEM: &str = "rpc.system";
    pub(crate) const RPC_METHOD: &str = "rpc.method";
    pub(crate) const RPC_JSONRPC_ERROR_CODE: &str = "rpc.jsonrpc.error_code";
    pub(crate) const HTTP_STATUS: &str = "http.response.status_code";
    pub(crate) const URL_FULL: &str = "url.full";

    /// Every span name above.
    pub(crate) const SPAN_NAMES: [&str; 7] = [
        SPAN_TASK,
        SPAN_TASK_GET,
        SPAN_TASK_CANCEL,
        SPAN_TASK_SUBSCRIBE,
        SPAN_TASKS_LIST,
        SPAN_CALL,
        SPAN_FORWARD,
    ];

    /// Every span attribute key above: the only keys a relay span carries.
    pub(crate) const SPAN_KEYS: [&str; 27] = [
        SESSION_ID,
        USER_ID,
        SPAN_KIND,
        INPUT_VALUE,
        INPUT_MIME_TYPE,
        OUTPUT_VALUE,
        OUTPUT_MIME_TYPE,
        GRAPH_NODE_ID,
        GRAPH_NODE_PARENT_ID,
        AGENT_ID,
        AGENT_NAME,
        AGENT_ROLE,
        TASK_ID,
        TASK_STATE,
        BINDING,
        PEER_ID,
        PEER_ROLE,
        SENDER_ROLE,
        MODE,
        FAILURE_CLASS,
        STREAM_EVENTS,
        CALLER_GONE,
        RPC_SYSTEM,
        RPC_METHOD,
        RPC_JSONRPC_ERROR_CODE,
        HTTP_STATUS,
        URL_FULL,
    ];

    /// Every span event name above.
    pub(crate) const EVENT_NAMES: [&str; 2] = [EVENT_STATE_CHANGE, EVENT_STREAM_CHUNK];

    /// Every key an event above carries.
    pub(crate) const EVENT_KEYS: [&str; 6] = [FROM, TO, TASK_ID, SEQ, FINAL, KIND];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_informational_keys_stay_outside_the_owned_set_of_ten() {
        assert_eq!(OWNED_ATTRIBUTES.len(), 10);
        for key in [
            attr::TOOL_NAME,
            attr::STAGE_DECISION,
            attr::STAGE_RESULT,
            attr::WITHHELD_STAGE,
            attr::WITHHELD_RULES,
            attr::WITHHELD_VIOLATIONS,
        ] {
            assert!(key.starts_with("dd."), "{key}");
            assert!(!is_owned(key), "{key} must not be owned");
        }
        assert!(SpanName::parse(event::WITHHELD).is_none());
    }
}
