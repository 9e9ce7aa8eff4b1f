//! Outcomes: what an invocation came to, and the closed vocabularies around it.

use super::ContractError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How an invocation ended. There is no `completed` and no `refused`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    /// The agent produced a grounded payload.
    Succeeded,
    /// The agent declined, with a reason code.
    Abstained,
    /// The decision belongs to a person (`referred_to`).
    Referred,
    /// Something went wrong; `problem` says what (RFC 9457).
    Failed,
    /// Waiting on a condition; `problem` says which.
    Suspended,
}

/// Why an agent abstained or referred.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    // abstained
    /// Abstained: no resource qualified.
    NoQualifyingResource,
    /// Abstained: retrieval found no candidates.
    NoCandidatesRetrieved,
    /// Abstained: the registry it reads could not be reached.
    RegistryUnavailable,
    /// Abstained: the request does not apply to this agent.
    NotApplicable,
    /// Abstained: the input is not enough to decide.
    InsufficientInput,
    /// Abstained: the agent does not implement what was asked.
    CapabilityNotImplemented,
    // referred
    /// Referred: a person must judge it.
    RequiresHumanJudgement,
    /// Referred: the profile requires approval for the agent's action class.
    PolicyRequiresApproval,
    /// Referred: the request is outside the agent's scope.
    OutsideAgentScope,
}

/// The grounding contract an agent declares, which decides the linter's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroundingMode {
    /// Rests on records it retrieved (rules G1–G4).
    Retrieval,
    /// Rests only on its input, may call a model (R1–R3).
    InputOnly,
    /// Rests only on its input, calls no model (R1–R3, N1).
    None,
    /// Rests on its input and on the envelopes of invocations it delegated (D1–D3).
    Delegation,
}

/// How a payload field came about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Derivation {
    /// Filled in from a fixed template.
    Template,
    /// Written by a model.
    Model,
    /// Derived lexically from the input or evidence (matching, counting).
    Lexical,
    /// Read from a registry record.
    Registry,
}

macro_rules! wire_names {
    ($ty:ty { $($variant:ident => $name:literal),* $(,)? }) => {
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$(<$ty>::$variant),*];
            /// The value as the contract spells it.
            pub(crate) fn as_str(self) -> &'static str {
                match self { $(<$ty>::$variant => $name),* }
            }
            /// The value the contract spells `s`, if any.
            pub(crate) fn parse(s: &str) -> Option<$ty> {
                match s { $($name => Some(<$ty>::$variant),)* _ => None }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

impl OutcomeStatus {
    /// `s` as an outcome, or an error naming every one (for a filter that would otherwise
    /// silently match nothing).
    pub(crate) fn parse_or_list(s: &str) -> Result<OutcomeStatus, ContractError> {
        OutcomeStatus::parse(s).ok_or_else(|| ContractError::UnknownOutcome {
            given: s.to_string(),
        })
    }
}

wire_names!(OutcomeStatus {
    Succeeded => "succeeded", Abstained => "abstained", Referred => "referred",
    Failed => "failed", Suspended => "suspended",
});
wire_names!(ReasonCode {
    NoQualifyingResource => "no_qualifying_resource",
    NoCandidatesRetrieved => "no_candidates_retrieved",
    RegistryUnavailable => "registry_unavailable",
    NotApplicable => "not_applicable",
    InsufficientInput => "insufficient_input",
    CapabilityNotImplemented => "capability_not_implemented",
    RequiresHumanJudgement => "requires_human_judgement",
    PolicyRequiresApproval => "policy_requires_approval",
    OutsideAgentScope => "outside_agent_scope",
});
wire_names!(GroundingMode {
    Retrieval => "retrieval", InputOnly => "input_only", None => "none", Delegation => "delegation",
});
wire_names!(Derivation {
    Template => "template", Model => "model", Lexical => "lexical", Registry => "registry",
});

/// What an invocation came to, in one sentence and a status. Closed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// How the invocation ended.
    pub status: OutcomeStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Why it abstained or was referred; `None` otherwise.
    pub(crate) reason_code: Option<ReasonCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Who decides a referred invocation (a role, such as `data_steward`).
    pub(crate) referred_to: Option<String>,
    /// One sentence for a person: what happened.
    pub(crate) statement: String,
}

impl Outcome {
    /// An outcome of `status` with no reason code and no referral.
    fn of(status: OutcomeStatus, statement: impl Into<String>) -> Outcome {
        Outcome {
            status,
            reason_code: None,
            referred_to: None,
            statement: statement.into(),
        }
    }

    /// A `suspended` outcome: the agent waits for input, and `resume_condition` says what it
    /// needs (a person reads it; the harness answers A2A `input-required` with it).
    pub(crate) fn suspended(resume_condition: impl Into<String>) -> Outcome {
        Outcome::of(OutcomeStatus::Suspended, resume_condition)
    }

    /// A `succeeded` outcome.
    pub fn succeeded(statement: impl Into<String>) -> Outcome {
        Outcome::of(OutcomeStatus::Succeeded, statement)
    }

    /// An `abstained` outcome with its reason.
    pub fn abstained(reason: ReasonCode, statement: impl Into<String>) -> Outcome {
        Outcome {
            reason_code: Some(reason),
            ..Outcome::of(OutcomeStatus::Abstained, statement)
        }
    }

    /// A `referred` outcome: who decides, and why.
    pub(crate) fn referred(
        reason: ReasonCode,
        to: impl Into<String>,
        statement: impl Into<String>,
    ) -> Outcome {
        Outcome {
            reason_code: Some(reason),
            referred_to: Some(to.into()),
            ..Outcome::of(OutcomeStatus::Referred, statement)
        }
    }

    /// A `failed` outcome (the envelope must then carry a problem).
    pub(crate) fn failed(statement: impl Into<String>) -> Outcome {
        Outcome::of(OutcomeStatus::Failed, statement)
    }
}
