//! The one error type of the crate.
//!
//! Every fallible function in ddwire returns [`Error`]. Each variant is a kind of failure a
//! caller can act on; its `Display` is a complete sentence fit for a log line or a JSON-RPC
//! error message, and mirrors the reference implementation's text where one exists.

use std::fmt;

/// Everything that can go wrong in ddwire.
#[derive(Debug)]
pub enum Error {
    /// Bytes that are not JSON, or JSON that breaks a documented limit (size, depth).
    Json(String),
    /// A document that does not conform to the contract: which document, and every violation.
    Contract {
        /// `InvocationRequest`, `Envelope`, `AgentResult`, ...
        kind: &'static str,
        /// Each violation, in the order found.
        messages: Vec<String>,
    },
    /// A canonicalisation name that is not registered (a programmer error in the reference).
    UnknownCanonicalisation(String),
    /// A malformed `traceparent`, `tracestate` or span JSON document.
    Trace(String),
    /// Bad command-line usage; the CLI exits with code 2.
    Usage(String),
    /// A file or socket operation failed; the string says what was being done.
    Io(String, std::io::Error),
}

impl Error {
    /// Shorthand for a contract violation with one message.
    pub fn contract(kind: &'static str, message: impl Into<String>) -> Error {
        Error::Contract {
            kind,
            messages: vec![message.into()],
        }
    }

    /// Shorthand for an I/O error with what was being done.
    pub fn io(context: impl Into<String>, err: std::io::Error) -> Error {
        Error::Io(context.into(), err)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Json(m) => write!(f, "invalid JSON: {m}"),
            // The reference's ContractViolation text: "<kind> violates the contract:\n  - a\n  - b".
            Error::Contract { kind, messages } => {
                write!(f, "{kind} violates the contract:")?;
                for m in messages {
                    write!(f, "\n  - {m}")?;
                }
                Ok(())
            }
            Error::UnknownCanonicalisation(m) | Error::Trace(m) | Error::Usage(m) => f.write_str(m),
            Error::Io(context, e) => write!(f, "{context}: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(_, e) => Some(e),
            _ => None,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
