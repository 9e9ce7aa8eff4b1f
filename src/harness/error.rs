//! The harness's error: what a lower layer reported on the harness's way, and the harness's
//! own concepts (who is calling, which agent, whose lineage, which run) on top.

use super::store::StoreError;
use crate::agent::server::ServeError;
use crate::contract::ContractError;
use crate::contract::tokens::TokenError;
use crate::json::JsonError;
use crate::trace::TraceError;
use crate::wire::WireError;
use std::fmt;

/// Why the harness refused a request, could not start, or could not finish a run.
///
/// Non-exhaustive: a `match` on it needs a catch-all arm. Every variant holds what went wrong
/// in fields; every `Display` is a sentence fit for a log line, a JSON-RPC error message or a
/// problem detail, in the reference implementation's words where it has them.
#[derive(Debug)]
#[non_exhaustive]
pub enum HarnessError {
    /// Bytes that are not JSON, or JSON that breaks a documented limit (size, depth).
    Json(JsonError),
    /// A document, agent description or canonicalisation outside the contract.
    Contract(ContractError),
    /// A malformed span JSON document.
    Trace(TraceError),
    /// A call to a peer failed: unreachable, too slow, or answered outside the protocol; or a
    /// socket could not be served.
    Wire(WireError),
    /// The run store refused a write, or holds a file it cannot read, or has no such run.
    Store(StoreError),
    /// Configuration the harness cannot use: a profile, the agents configuration, a tokens
    /// file, a key, the principal runs act for.
    Config {
        /// Which configuration: `agent configuration agents.json`, `DD_PRINCIPAL_ID`.
        source: String,
        /// What is wrong with it, as a whole sentence that names it (the reference's words
        /// where it has them: `agent configuration agents.json not found`).
        message: String,
    },
    /// A caller's credentials name no principal, or the harness takes no such request.
    Unauthenticated {
        /// Why the caller was refused.
        reason: String,
    },
    /// A request names an agent the registry does not hold.
    UnknownAgent {
        /// The agent asked for.
        agent_id: String,
        /// Every agent the registry holds.
        known: Vec<String>,
        /// Agents configured but not admitted, each with why (unreachable, bad card...).
        unavailable: Vec<(String, String)>,
        /// Agents built against a contract this harness cannot govern, each with why.
        incompatible: Vec<(String, String)>,
    },
    /// A request's lineage is not one the conductor issued, or a delegation was refused.
    Delegation {
        /// Why the delegation was refused.
        reason: String,
    },
    /// An `invocation_id` that is already stored (or running): runs are write-once.
    DuplicateInvocation {
        /// The id sent again.
        invocation_id: String,
    },
    /// A message asked to resume a run that is not waiting for it: none is suspended under
    /// that id, or it was suspended for another principal.
    Resume {
        /// The run named.
        invocation_id: String,
        /// Why it cannot be resumed.
        reason: String,
    },
    /// A file or socket operation failed.
    Io {
        /// What was being done (`reading agents.json`).
        context: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl HarnessError {
    /// An I/O error, with what was being done.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> HarnessError {
        HarnessError::Io {
            context: context.into(),
            source,
        }
    }

    /// A configuration error: which configuration, and the sentence that says what is wrong.
    pub(crate) fn config(source: impl Into<String>, message: impl Into<String>) -> HarnessError {
        HarnessError::Config {
            source: source.into(),
            message: message.into(),
        }
    }

    /// A refused delegation, and why.
    pub(crate) fn delegation(reason: impl Into<String>) -> HarnessError {
        HarnessError::Delegation {
            reason: reason.into(),
        }
    }

    /// A caller refused for its credentials, and why.
    pub(crate) fn unauthenticated(reason: impl Into<String>) -> HarnessError {
        HarnessError::Unauthenticated {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HarnessError::Json(e) => e.fmt(f),
            HarnessError::Contract(e) => e.fmt(f),
            HarnessError::Trace(e) => e.fmt(f),
            HarnessError::Wire(e) => e.fmt(f),
            HarnessError::Store(e) => e.fmt(f),
            HarnessError::Config { message, .. } => f.write_str(message),
            HarnessError::Unauthenticated { reason } | HarnessError::Delegation { reason } => {
                f.write_str(reason)
            }
            HarnessError::UnknownAgent {
                agent_id,
                known,
                unavailable,
                incompatible,
            } => {
                let repr = |s: &String| crate::json::python::str_repr(s);
                let known: Vec<String> = known.iter().map(repr).collect();
                write!(
                    f,
                    "no agent registered as {}; known: [{}]",
                    repr(agent_id),
                    known.join(", ")
                )?;
                for (name, reason) in unavailable {
                    write!(f, "\n  {name} unavailable: {reason}")?;
                }
                for (name, reason) in incompatible {
                    write!(f, "\n  {name} incompatible: {reason}")?;
                }
                Ok(())
            }
            // The reference's DuplicateInvocation text.
            HarnessError::DuplicateInvocation { invocation_id } => write!(
                f,
                "invocation_id {invocation_id} has already been used; send each request with a new one"
            ),
            HarnessError::Resume {
                invocation_id,
                reason,
            } => write!(f, "run {invocation_id} cannot be resumed: {reason}"),
            HarnessError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for HarnessError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HarnessError::Json(e) => Some(e),
            HarnessError::Contract(e) => Some(e),
            HarnessError::Trace(e) => Some(e),
            HarnessError::Wire(e) => Some(e),
            HarnessError::Store(e) => Some(e),
            HarnessError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<JsonError> for HarnessError {
    fn from(e: JsonError) -> HarnessError {
        HarnessError::Json(e)
    }
}

impl From<ContractError> for HarnessError {
    fn from(e: ContractError) -> HarnessError {
        HarnessError::Contract(e)
    }
}

impl From<TraceError> for HarnessError {
    fn from(e: TraceError) -> HarnessError {
        HarnessError::Trace(e)
    }
}

impl From<WireError> for HarnessError {
    fn from(e: WireError) -> HarnessError {
        HarnessError::Wire(e)
    }
}

impl From<StoreError> for HarnessError {
    fn from(e: StoreError) -> HarnessError {
        HarnessError::Store(e)
    }
}

/// A tokens file the harness cannot use is configuration; a caller whose token it does not
/// hold is unauthenticated.
impl From<TokenError> for HarnessError {
    fn from(e: TokenError) -> HarnessError {
        match e {
            TokenError::MissingBearer | TokenError::UnknownToken => {
                HarnessError::unauthenticated(e.to_string())
            }
            TokenError::Unreadable { ref path, .. }
            | TokenError::Json { ref path, .. }
            | TokenError::Shape { ref path, .. }
            | TokenError::Principal { ref path, .. } => {
                HarnessError::config(path.clone(), e.to_string())
            }
            TokenError::NoRandomness { .. } => HarnessError::config(
                "the operating system's random number generator",
                e.to_string(),
            ),
        }
    }
}

/// An agent the harness serves (the test kit's) that cannot be served: its socket is the
/// wire's failure; an agent id no signing key can carry is its configuration's.
impl From<ServeError> for HarnessError {
    fn from(e: ServeError) -> HarnessError {
        match e {
            ServeError::Wire(e) => HarnessError::Wire(e),
            ServeError::KeyId { ref agent_id, .. } => {
                HarnessError::config(agent_id.clone(), e.to_string())
            }
        }
    }
}

/// The harness's result type.
pub(crate) type Result<T, E = HarnessError> = std::result::Result<T, E>;
