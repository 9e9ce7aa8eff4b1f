//! The Envelope: what the harness returns for one invocation, filled by the conductor.

use super::evidence::{EvidenceItem, Payload};
use super::outcome::{GroundingMode, Outcome, OutcomeStatus};
use super::principal::Principal;
use super::problem::ProblemDetails;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The record of one invocation. Fields in the contract's slot order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    pub invocation_id: String,
    pub agent_id: String,
    pub agent_version: String,
    pub completed_at: String,
    pub grounding_mode: GroundingMode,
    /// `profile:<id>@v<n>`: the deployment's profile, never the request's.
    pub policy_bundle_ref: String,
    /// SHA-256 of the profile file's bytes.
    pub policy_digest: String,
    /// Named by the authentication boundary, never by the request.
    pub acting_for: Principal,
    pub contract_version: String,
    /// Digest of the accepted input class schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<String>,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Payload>,
    /// Digest of the payload class schema; present exactly when `payload` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_schema: Option<String>,
    #[serde(default)]
    pub evidence: Vec<EvidenceItem>,
    pub telemetry: Telemetry,
    /// Always `true`: every output is for a person to review.
    #[serde(deserialize_with = "must_be_true")]
    pub requires_human_review: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<ProblemDetails>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_invocation_id: Option<String>,
    /// Left out when empty, so envelopes of agents that cannot delegate are unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delegations: Vec<Delegation>,
}

fn must_be_true<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match bool::deserialize(d)? {
        true => Ok(true),
        false => Err(serde::de::Error::custom(
            "requires_human_review must be true",
        )),
    }
}

/// What the run cost, as far as it was measured. Closed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Telemetry {
    /// 32 lowercase hex digits: the root `invoke_agent` span's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
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
    #[serde(default)]
    pub energy_method: EnergyMethod,
    /// Always written, `null` when not measured: the slot exists, honestly empty. Last, as
    /// the reference's `setdefault` appends it.
    #[serde(default)]
    pub energy_estimate_j: Option<f64>,
}

impl Telemetry {
    /// Telemetry for a trace, with nothing measured.
    pub fn for_trace(trace_id: impl Into<String>) -> Telemetry {
        Telemetry {
            trace_id: Some(trace_id.into()),
            model_id: None,
            input_tokens: None,
            output_tokens: None,
            energy_method: EnergyMethod::NotMeasured,
            energy_estimate_j: None,
        }
    }
}

/// How `energy_estimate_j` was obtained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnergyMethod {
    #[default]
    NotMeasured,
    Estimated,
    Measured,
}

/// One child invocation, as the conductor recorded it. Closed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delegation {
    pub delegated_invocation_id: String,
    pub delegated_agent_id: String,
    pub delegated_agent_version: String,
    pub delegated_status: OutcomeStatus,
    /// `dd-envelope-json-v1` hash of the child's stored envelope.
    pub content_hash: String,
}

impl Envelope {
    /// The document as stored and sent: `None` left out, `energy_estimate_j: null` kept,
    /// `delegations` left out when empty.
    pub fn to_document(&self) -> Value {
        serde_json::to_value(self).expect("an envelope always serialises")
    }

    /// The `dd-envelope-json-v1` hash of this envelope's document.
    pub fn content_hash(&self) -> String {
        super::canonical::envelope_hash(&self.to_document())
    }
}
