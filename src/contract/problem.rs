//! Problem details (RFC 9457 shape) and the problem types the conductor produces.

use crate::json::lenient::opt_i64;
use serde::{Deserialize, Serialize};

/// The namespace of Data Director's problem types (a w3id not yet registered).
pub(crate) const PROBLEM_BASE: &str = "https://w3id.org/data-director/problems/";

/// RFC 9457 problem details. The status member is `http_status`, not the RFC's `status`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProblemDetails {
    #[serde(rename = "type")]
    /// The problem type URI (`https://w3id.org/data-director/problems/<slug>`).
    pub(crate) type_: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The problem type's short, human-readable summary.
    pub(crate) title: Option<String>,
    #[serde(default, deserialize_with = "opt_i64")]
    #[serde(skip_serializing_if = "Option::is_none")]
    /// The HTTP status the problem corresponds to (RFC 9457's `status`).
    pub(crate) http_status: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// What happened in this occurrence, for a person.
    pub(crate) detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A URI naming this occurrence, if any.
    pub(crate) instance: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// For a suspended run: the condition that resumes it.
    pub(crate) resume_condition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// For a suspended run: when to try again, RFC 3339.
    pub(crate) resume_after: Option<String>,
}

/// The problem types the conductor produces, with the reference's titles and statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ProblemType {
    /// The institutional profile does not enable the agent.
    AgentNotPermitted,
    /// The agent declares another action class than the profile assigns it.
    ActionClassMismatch,
    /// The output failed the grounding linter and was withheld.
    GroundingViolation,
    /// The agent could not be run, failed, or answered outside the contract.
    AgentError,
    /// The input is not of a class the agent accepts, or breaks its schema.
    InputNotAccepted,
}

impl ProblemType {
    /// Every problem type.
    pub(crate) const ALL: [ProblemType; 5] = [
        ProblemType::AgentNotPermitted,
        ProblemType::ActionClassMismatch,
        ProblemType::GroundingViolation,
        ProblemType::AgentError,
        ProblemType::InputNotAccepted,
    ];

    /// The last segment of the type URI.
    pub(crate) fn slug(self) -> &'static str {
        match self {
            ProblemType::AgentNotPermitted => "agent-not-permitted",
            ProblemType::ActionClassMismatch => "action-class-mismatch",
            ProblemType::GroundingViolation => "grounding-violation",
            ProblemType::AgentError => "agent-error",
            ProblemType::InputNotAccepted => "input-not-accepted",
        }
    }

    /// The full type URI.
    pub(crate) fn uri(self) -> String {
        format!("{PROBLEM_BASE}{}", self.slug())
    }

    /// The reference's title.
    pub(crate) fn title(self) -> &'static str {
        match self {
            ProblemType::AgentNotPermitted => "Agent not enabled by the institutional profile",
            ProblemType::ActionClassMismatch => {
                "Agent declares an action class the institutional profile does not assign it"
            }
            ProblemType::GroundingViolation => "Output failed the grounding linter",
            ProblemType::AgentError => "Agent raised an exception",
            ProblemType::InputNotAccepted => "Agent does not accept this input",
        }
    }

    /// The reference's HTTP status.
    pub(crate) fn http_status(self) -> i64 {
        match self {
            ProblemType::AgentNotPermitted | ProblemType::ActionClassMismatch => 403,
            ProblemType::GroundingViolation | ProblemType::AgentError => 500,
            ProblemType::InputNotAccepted => 422,
        }
    }

    /// Problem details of this type with `detail`.
    pub(crate) fn with_detail(self, detail: impl Into<String>) -> ProblemDetails {
        ProblemDetails {
            type_: self.uri(),
            title: Some(self.title().to_string()),
            http_status: Some(self.http_status()),
            detail: Some(detail.into()),
            instance: None,
            resume_condition: None,
            resume_after: None,
        }
    }

    /// The problem type a URI names, if it is one of ours.
    pub(crate) fn from_uri(uri: &str) -> Option<ProblemType> {
        let slug = uri.strip_prefix(PROBLEM_BASE)?;
        ProblemType::ALL.into_iter().find(|p| p.slug() == slug)
    }
}
