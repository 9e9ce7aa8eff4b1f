//! The AgentResult: what an agent returns. Never an Envelope: the conductor alone fills
//! identifiers, timestamps, telemetry, grounding mode and input hash.

use super::evidence::{EvidenceItem, Payload};
use super::outcome::Outcome;
use serde::{Deserialize, Serialize};

/// An agent's answer, as it crosses the wire (`wire._result_to_document` in the reference):
/// `outcome` and `evidence` always, the rest only when set. Token counts accept `3.0`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentResult {
    pub outcome: Outcome,
    #[serde(default)]
    pub evidence: Vec<EvidenceItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Payload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::json::lenient::opt_u64"
    )]
    pub input_tokens: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::json::lenient::opt_u64"
    )]
    pub output_tokens: Option<u64>,
}

impl AgentResult {
    /// A result with just an outcome.
    pub fn new(outcome: Outcome) -> AgentResult {
        AgentResult {
            outcome,
            evidence: Vec::new(),
            payload: None,
            model_id: None,
            input_tokens: None,
            output_tokens: None,
        }
    }
}
