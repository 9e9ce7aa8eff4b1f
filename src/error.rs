//! The crate's error type: the umbrella at the top, which every layer's own error becomes.
//!
//! Each layer speaks its own typed error and knows nothing of this one:
//! [`JsonError`](crate::json::JsonError) for bytes that are not JSON,
//! [`ContractError`](crate::contract::ContractError) for documents outside the contract,
//! [`TraceError`](crate::trace::TraceError) for span JSON, [`WireError`] for a call to a peer
//! or a socket, [`ServeError`] for an agent that cannot be served,
//! [`HarnessError`](crate::harness::HarnessError) for the harness (the run store, who is
//! calling, which agent, whose lineage), [`CheckError`] for `ddwire check`, [`RelayError`] for
//! the relay. Each converts into [`Error`] with `?`; a lower layer's failure passed up through a
//! higher one keeps its own variant here ([`Error::Wire`] whichever layer saw it), so a caller
//! matches what went wrong, not the path it took. No module of the crate names this one.

use crate::agent::server::ServeError;
use crate::check::CheckError;
use crate::contract::ContractError;
use crate::harness::HarnessError;
use crate::harness::store::StoreError;
use crate::json::JsonError;
use crate::relay::RelayError;
use crate::trace::TraceError;
use crate::wire::WireError;
use crate::wire::wirelog::WireLogError;
use std::fmt;

/// Everything that can go wrong in ddwire, by the layer that says what went wrong.
///
/// Non-exhaustive: new kinds of failure may be added without a breaking release, so a `match`
/// on it needs a catch-all arm. Its `Display` is the layer's error's, word for word.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Bytes that are not JSON, or JSON that breaks a documented limit (size, depth).
    Json(JsonError),
    /// A document, agent description, canonicalisation or tokens file outside the contract.
    Contract(ContractError),
    /// A malformed span JSON document.
    Trace(TraceError),
    /// A call to a peer failed (unreachable, too slow, or answered outside the protocol), or a
    /// socket or wire log could not be opened.
    Wire(WireError),
    /// An agent could not be served: its id cannot be its key's.
    Agent(ServeError),
    /// The harness refused a request or could not run it: the run store, configuration,
    /// credentials, an unknown agent, a refused delegation, a repeated invocation, a resume.
    /// Never one of the lower layers' failures above, which keep their own variants.
    Harness(HarnessError),
    /// `ddwire check` could not start its probes.
    Check(CheckError),
    /// The relay's configuration is unusable.
    Relay(RelayError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Json(e) => e.fmt(f),
            Error::Contract(e) => e.fmt(f),
            Error::Trace(e) => e.fmt(f),
            Error::Wire(e) => e.fmt(f),
            Error::Agent(e) => e.fmt(f),
            Error::Harness(e) => e.fmt(f),
            Error::Check(e) => e.fmt(f),
            Error::Relay(e) => e.fmt(f),
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
            Error::Agent(e) => Some(e),
            Error::Harness(e) => Some(e),
            Error::Check(e) => Some(e),
            Error::Relay(e) => Some(e),
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

impl From<WireLogError> for Error {
    fn from(e: WireLogError) -> Error {
        Error::Wire(e.into())
    }
}

impl From<ServeError> for Error {
    fn from(e: ServeError) -> Error {
        match e {
            ServeError::Wire(e) => Error::Wire(e),
            e => Error::Agent(e),
        }
    }
}

impl From<HarnessError> for Error {
    fn from(e: HarnessError) -> Error {
        match e {
            HarnessError::Json(e) => Error::Json(e),
            HarnessError::Contract(e) => Error::Contract(e),
            HarnessError::Trace(e) => Error::Trace(e),
            HarnessError::Wire(e) => Error::Wire(e),
            e => Error::Harness(e),
        }
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Error {
        Error::Harness(HarnessError::Store(e))
    }
}

impl From<CheckError> for Error {
    fn from(e: CheckError) -> Error {
        Error::Check(e)
    }
}

impl From<RelayError> for Error {
    fn from(e: RelayError) -> Error {
        Error::Relay(e)
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
