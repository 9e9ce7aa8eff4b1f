//! The crate's error type, and how each layer's own error becomes it.
//!
//! Each layer speaks its own typed error: [`JsonError`](crate::json::JsonError) for bytes that
//! are not JSON, [`ContractError`](crate::contract::ContractError) for documents outside the
//! contract, [`TraceError`](crate::trace::TraceError) for span JSON, [`WireError`] for a call to
//! a peer, [`StoreError`](crate::harness::store::StoreError) for the run store. Each converts
//! into [`Error`] at the boundary (`?` does it), and only the harness adds its own concepts
//! (who is calling, which agent, whose lineage) on top. Every variant holds what went wrong in
//! fields; every `Display` is a complete sentence fit for a log line, a JSON-RPC error message
//! or a problem detail, and mirrors the reference implementation's text where one exists.

use crate::contract::ContractError;
use crate::harness::store::StoreError;
use crate::json::JsonError;
use crate::trace::TraceError;
use crate::wire::WireError;
use std::fmt;

/// Everything that can go wrong in ddwire.
///
/// Non-exhaustive: new kinds of failure may be added without a breaking release, so a `match`
/// on it needs a catch-all arm.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Bytes that are not JSON, or JSON that breaks a documented limit (size, depth).
    Json(JsonError),
    /// A document, agent description or canonicalisation outside the contract.
    Contract(ContractError),
    /// A malformed span JSON document.
    Trace(TraceError),
    /// A call to a peer failed: unreachable, too slow, or answered outside the protocol.
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

impl Error {
    /// An I/O error, with what was being done.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// A configuration error: which configuration, and the sentence that says what is wrong.
    pub(crate) fn config(source: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Config {
            source: source.into(),
            message: message.into(),
        }
    }

    /// A refused delegation, and why.
    pub(crate) fn delegation(reason: impl Into<String>) -> Error {
        Error::Delegation {
            reason: reason.into(),
        }
    }

    /// A caller refused for its credentials, and why.
    pub(crate) fn unauthenticated(reason: impl Into<String>) -> Error {
        Error::Unauthenticated {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Json(e) => e.fmt(f),
            Error::Contract(e) => e.fmt(f),
            Error::Trace(e) => e.fmt(f),
            Error::Wire(e) => e.fmt(f),
            Error::Store(e) => e.fmt(f),
            Error::Config { message, .. } => f.write_str(message),
            Error::Unauthenticated { reason } | Error::Delegation { reason } => f.write_str(reason),
            Error::UnknownAgent {
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
            Error::DuplicateInvocation { invocation_id } => write!(
                f,
                "invocation_id {invocation_id} has already been used; send each request with a new one"
            ),
            Error::Resume {
                invocation_id,
                reason,
            } => write!(f, "run {invocation_id} cannot be resumed: {reason}"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Json(e) => Some(e),
            Error::Contract(e) => Some(e),
            Error::Trace(e) => Some(e),
            Error::Wire(e) => Some(e),
            Error::Store(e) => Some(e),
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<JsonError> for Error {
    fn from(e: JsonError) -> Error {
        Error::Json(e)
    }
}

impl From<ContractError> for Error {
    fn from(e: ContractError) -> Error {
        Error::Contract(e)
    }
}

impl From<TraceError> for Error {
    fn from(e: TraceError) -> Error {
        Error::Trace(e)
    }
}

impl From<WireError> for Error {
    fn from(e: WireError) -> Error {
        Error::Wire(e)
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Error {
        Error::Store(e)
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
