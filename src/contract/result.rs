//! The AgentResult: what an agent returns. Never an Envelope: the conductor alone fills
//! identifiers, timestamps, telemetry, grounding mode and input hash.

use super::evidence::{EvidenceItem, Payload};
use super::outcome::Outcome;
use crate::json::lenient::opt_u64;
use serde::{Deserialize, Serialize};

/// An agent's answer, as it crosses the wire (`wire._result_to_document` in the reference):
/// `outcome` and `evidence` always, the rest only when set. Token counts accept `3.0`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentResult {
    /// What the invocation came to, as the agent decided.
    pub(crate) outcome: Outcome,
    #[serde(default)]
    /// What the payload rests on.
    pub evidence: Vec<EvidenceItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The payload, for a succeeded result.
    pub payload: Option<Payload>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The model the agent called, if any.
    pub model_id: Option<String>,
    #[serde(default, deserialize_with = "opt_u64")]
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Input tokens the model counted, if reported.
    pub(crate) input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "opt_u64")]
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Output tokens the model counted, if reported.
    pub(crate) output_tokens: Option<u64>,
}

impl AgentResult {
    /// Read an agent's result document (`wire._result_from_document`): outcome and evidence
    /// items closed, the payload open but naming its class (`grounded_on` defaults to `[]`),
    /// token counts integers even when spelled `3.0`. A document outside the contract is
    /// [`ContractError::Violation`](super::ContractError::Violation) listing every violation.
    pub(crate) fn from_document(
        document: &serde_json::Value,
    ) -> Result<AgentResult, super::ContractError> {
        let errors = super::validate::agent_result_errors(document);
        if !errors.is_empty() {
            return Err(super::ContractError::Violation {
                document: "AgentResult",
                violations: errors,
            });
        }
        let mut result: AgentResult = AgentResult::deserialize(document)
            .map_err(|e| super::ContractError::violation("AgentResult", e.to_string()))?;
        if let Some(payload) = &mut result.payload {
            payload
                .0
                .entry("grounded_on")
                .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        }
        Ok(result)
    }

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
