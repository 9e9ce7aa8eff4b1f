//! The Envelope: what the harness returns for one invocation, filled by the conductor.

use super::evidence::{EvidenceItem, Payload};
use super::outcome::{GroundingMode, Outcome, OutcomeStatus};
use super::principal::Principal;
use super::problem::ProblemDetails;
use crate::json::lenient::opt_u64;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The record of one invocation. Fields in the contract's slot order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// The invocation's id, the request's UUIDv7.
    pub(crate) invocation_id: String,
    /// The agent that ran (or would have run).
    pub(crate) agent_id: String,
    /// The agent's version, from its card.
    pub(crate) agent_version: String,
    /// When the conductor finished the run, RFC 3339 in UTC.
    pub(crate) completed_at: String,
    /// The grounding mode the run was held to: the agent's declared one.
    pub(crate) grounding_mode: GroundingMode,
    /// `profile:<id>@v<n>`: the deployment's profile, never the request's.
    pub(crate) policy_bundle_ref: String,
    /// SHA-256 of the profile file's bytes.
    pub(crate) policy_digest: String,
    /// Named by the authentication boundary, never by the request.
    pub(crate) acting_for: Principal,
    /// The contract version the envelope conforms to ([`CONTRACT_VERSION`](super::CONTRACT_VERSION)).
    pub(crate) contract_version: String,
    /// Digest of the accepted input class schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input_schema: Option<String>,
    /// What the invocation came to.
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The agent's payload, present only for a succeeded, grounded result.
    pub(crate) payload: Option<Payload>,
    /// Digest of the payload class schema; present exactly when `payload` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) payload_schema: Option<String>,
    #[serde(default)]
    /// What the payload rests on.
    pub(crate) evidence: Vec<EvidenceItem>,
    /// The run's trace id and what it cost.
    pub(crate) telemetry: Telemetry,
    /// Always `true`: every output is for a person to review.
    #[serde(deserialize_with = "must_be_true")]
    pub(crate) requires_human_review: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Why a run did not succeed (RFC 9457), when it failed or was suspended.
    pub(crate) problem: Option<ProblemDetails>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The conversation the run belongs to, if the request named one (or its grant did).
    pub(crate) conversation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The delegating run, for a run made under a delegation grant.
    pub(crate) parent_invocation_id: Option<String>,
    /// Left out when empty, so envelopes of agents that cannot delegate are unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) delegations: Vec<Delegation>,
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Telemetry {
    /// 32 lowercase hex digits: the root `invoke_agent` span's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The model the agent called, if any.
    pub(crate) model_id: Option<String>,
    #[serde(default, deserialize_with = "opt_u64")]
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Input tokens the model counted, if reported.
    pub(crate) input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "opt_u64")]
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Output tokens the model counted, if reported.
    pub(crate) output_tokens: Option<u64>,
    #[serde(default)]
    /// How `energy_estimate_j` was arrived at.
    pub(crate) energy_method: EnergyMethod,
    /// Always written, `null` when not measured: the slot exists, honestly empty. Last, as
    /// the reference's `setdefault` appends it.
    #[serde(default)]
    pub(crate) energy_estimate_j: Option<f64>,
}

impl Telemetry {
    /// Telemetry for a trace, with nothing measured.
    pub(crate) fn for_trace(trace_id: impl Into<String>) -> Telemetry {
        Telemetry {
            trace_id: Some(trace_id.into()),
            ..Telemetry::default()
        }
    }
}

/// How `energy_estimate_j` was obtained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EnergyMethod {
    #[default]
    /// No energy figure is given.
    NotMeasured,
    /// The figure is an estimate.
    Estimated,
    /// The figure was measured.
    Measured,
}

/// One child invocation, as the conductor recorded it. Closed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Delegation {
    /// The child run's invocation id.
    pub(crate) delegated_invocation_id: String,
    /// The agent the child ran.
    pub(crate) delegated_agent_id: String,
    /// That agent's version.
    pub(crate) delegated_agent_version: String,
    /// How the child ended.
    pub(crate) delegated_status: OutcomeStatus,
    /// `dd-envelope-json-v1` hash of the child's stored envelope.
    pub(crate) content_hash: String,
}

impl Envelope {
    /// The document as stored and sent: `None` left out, `energy_estimate_j: null` kept,
    /// `delegations` left out when empty.
    pub(crate) fn to_document(&self) -> Value {
        serde_json::to_value(self).expect("an envelope always serialises")
    }

    /// The `dd-envelope-json-v1` hash of this envelope's document.
    pub fn content_hash(&self) -> String {
        super::canonical::envelope_hash(&self.to_document())
    }
}
