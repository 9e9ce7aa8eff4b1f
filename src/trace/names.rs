//! The fixed trace format: span names and the `dd.*` attributes Data Director owns.
//!
//! This is the only place in ddwire that spells a span name or an owned attribute key
//! Agents use the tracer's span helpers and never spell a name or key themselves. Changing
//! either changes the wire format (`vendor-notes/span-json.md`).

use std::fmt;

/// The six span names of the trace format. Closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpanName {
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
    pub const ALL: [SpanName; 6] = [
        SpanName::InvokeAgent,
        SpanName::PolicyGate,
        SpanName::Retrieval,
        SpanName::Chat,
        SpanName::ExecuteTool,
        SpanName::Delegate,
    ];

    /// The name as it appears on the wire.
    pub fn as_str(self) -> &'static str {
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
    pub fn parse(s: &str) -> Option<SpanName> {
        SpanName::ALL.into_iter().find(|n| n.as_str() == s)
    }
}

impl fmt::Display for SpanName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The owned attribute keys (`OWNED_ATTRIBUTES` in the reference's `dd_sdk.tracing`).
pub mod attr {
    /// The span's operation; equals the span name. Set by every helper.
    pub const OPERATION: &str = "dd.operation";
    /// The agent a span concerns (for `delegate`, the agent delegated *to*).
    pub const AGENT_ID: &str = "dd.agent_id";
    /// What a `retrieval` fetched, or `invocation:<child>` on a `delegate` span.
    pub const SOURCE_ID: &str = "dd.source_id";
    /// The content hash of what `dd.source_id` names (64 hex).
    pub const CONTENT_HASH: &str = "dd.content_hash";
    /// The model a `chat` span called.
    pub const MODEL_ID: &str = "dd.model_id";
    /// Input tokens of a model call (int).
    pub const INPUT_TOKENS: &str = "dd.input_tokens";
    /// Output tokens of a model call (int).
    pub const OUTPUT_TOKENS: &str = "dd.output_tokens";
    /// The invocation's outcome status. Conductor only, root only.
    pub const OUTCOME: &str = "dd.outcome";
    /// The declared grounding mode. Conductor only, root only.
    pub const GROUNDING_MODE: &str = "dd.grounding_mode";
    /// The `dd-input-json-v1` hash of the input. Conductor only, root only.
    pub const INPUT_HASH: &str = "dd.input_hash";
    /// Informational, not owned: the tool an `execute_tool` span ran. Nothing reads it.
    pub const TOOL_NAME: &str = "dd.tool_name";
}

/// The ten owned attributes: the only ones the linter and the provenance writer read.
pub const OWNED_ATTRIBUTES: [&str; 10] = [
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
pub const CONDUCTOR_ATTRIBUTES: [&str; 3] = [attr::GROUNDING_MODE, attr::INPUT_HASH, attr::OUTCOME];

/// Whether `key` is one of the [`OWNED_ATTRIBUTES`].
pub(crate) fn is_owned(key: &str) -> bool {
    OWNED_ATTRIBUTES.contains(&key)
}
