//! What can be wrong with a document, a description or a name under the contract.

use super::OutcomeStatus;
use std::fmt;

/// A document, agent description, principal or canonicalisation outside the contract.
#[derive(Debug)]
#[non_exhaustive]
pub enum ContractError {
    /// A document that does not conform: which document, and every violation, in the order
    /// found (the reference's `ContractViolation`).
    Violation {
        /// `InvocationRequest`, `Envelope`, `AgentResult`...
        document: &'static str,
        /// Each violation, as the reference words it.
        violations: Vec<String>,
    },
    /// A canonicalisation name that is not registered (a programmer error in the reference).
    UnknownCanonicalisation {
        /// The name asked for.
        name: String,
        /// Every registered name.
        registered: Vec<&'static str>,
    },
    /// An agent description (a card's extension, a class schema) that does not rebuild into a
    /// spec (the reference's `SpecError`).
    Spec {
        /// The agent the description is of, when it names one.
        agent: Option<String>,
        /// What is wrong, in the reference's words (`agent description lacks ['accepts']`).
        reason: String,
    },
    /// An agent description built against a contract version this one cannot govern; the
    /// registry lists such an agent as incompatible rather than unavailable.
    Version {
        /// The agent, as the reference quotes it (`'hello.world'`).
        agent: String,
        /// The version it declares, if any.
        declared: Option<String>,
        /// The version this crate governs.
        governed: &'static str,
    },
    /// A principal that breaks the contract's rules (its id is no IRI, its name is blank).
    Principal {
        /// Each problem found.
        problems: Vec<String>,
    },
    /// A name that is no outcome status (a filter's, say).
    UnknownOutcome {
        /// The name given.
        given: String,
    },
}

impl ContractError {
    /// A violation of `document` with one message.
    pub(crate) fn violation(document: &'static str, message: impl Into<String>) -> ContractError {
        ContractError::Violation {
            document,
            violations: vec![message.into()],
        }
    }

    /// A description (of `agent`, if known) that does not rebuild into a spec, and why.
    pub(crate) fn spec(agent: Option<&str>, reason: impl Into<String>) -> ContractError {
        ContractError::Spec {
            agent: agent.map(str::to_owned),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The reference's ContractViolation text: "<kind> violates the contract:\n  - a\n  - b".
            ContractError::Violation {
                document,
                violations,
            } => {
                write!(f, "{document} violates the contract:")?;
                for v in violations {
                    write!(f, "\n  - {v}")?;
                }
                Ok(())
            }
            // The reference's message for an unregistered name.
            ContractError::UnknownCanonicalisation { name, registered } => write!(
                f,
                "unknown canonicalisation {}; registered: [{}]",
                crate::json::python::str_repr(name),
                registered
                    .iter()
                    .map(|n| crate::json::python::str_repr(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ContractError::Spec { reason, .. } => f.write_str(reason),
            ContractError::Version {
                agent,
                declared: None,
                governed,
            } => write!(
                f,
                "agent {agent} declares no contract version; this harness governs contract {governed}"
            ),
            ContractError::Version {
                agent,
                declared: Some(declared),
                governed,
            } => write!(
                f,
                "agent {agent} was built against contract {declared}; this harness governs contract {governed}"
            ),
            ContractError::Principal { problems } => f.write_str(&problems.join("; ")),
            ContractError::UnknownOutcome { given } => {
                let all: Vec<&str> = OutcomeStatus::ALL.iter().map(|o| o.as_str()).collect();
                write!(
                    f,
                    "{given:?} is not an outcome status: one of {}",
                    all.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for ContractError {}
