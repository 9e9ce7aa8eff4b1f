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
    /// An agent description (a card's extension) that does not rebuild into a spec.
    Spec(String),
    /// An agent description built against a contract version this one cannot govern; the
    /// registry lists such an agent as incompatible rather than unavailable.
    ContractVersion(String),
    /// The configured principal is missing or malformed, or a caller's credentials name none.
    Identity(String),
    /// An institutional profile could not be loaded or is malformed.
    Policy(String),
    /// The agents configuration is missing or malformed, or registers one id twice.
    Registry(String),
    /// A request names an agent the registry does not hold.
    UnknownAgent(String),
    /// A request's lineage is not one the conductor issued, or a grant was refused.
    Delegation(String),
    /// A peer could not be reached (the text says "connection refused" when it was).
    Connect { url: String, reason: String },
    /// A call did not finish in time.
    Timeout {
        url: String,
        after: std::time::Duration,
    },
    /// A peer answered with an HTTP status that is not a valid reply.
    HttpStatus {
        url: String,
        status: u16,
        body: String,
    },
    /// A peer answered with a JSON-RPC error.
    JsonRpc {
        code: i64,
        message: String,
        data: Option<serde_json::Value>,
    },
    /// A peer's reply is outside the protocol or the contract.
    Wire(String),
    /// A file or socket operation failed; the string says what was being done.
    Io(String, std::io::Error),
    /// The run store refused a write or found a stored file it cannot read; the string says
    /// which and why.
    Store(String),
    /// An `invocation_id` that is already stored (or running): runs are write-once. Holds the id.
    DuplicateInvocation(String),
    /// No stored run has this id, or an id starting with it.
    NoSuchRun {
        /// The id or prefix asked for.
        reference: String,
        /// The run store looked in.
        store: std::path::PathBuf,
    },
    /// An id prefix that several stored runs share.
    AmbiguousRun {
        prefix: String,
        /// The first few matching ids, in order.
        candidates: Vec<String>,
        /// How many runs match.
        total: usize,
    },
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
            Error::UnknownCanonicalisation(m)
            | Error::Trace(m)
            | Error::Usage(m)
            | Error::Wire(m)
            | Error::Spec(m)
            | Error::ContractVersion(m)
            | Error::Identity(m)
            | Error::Policy(m)
            | Error::Registry(m)
            | Error::UnknownAgent(m)
            | Error::Delegation(m)
            | Error::Store(m) => f.write_str(m),
            // The reference's DuplicateInvocation text.
            Error::DuplicateInvocation(id) => write!(
                f,
                "invocation_id {id} has already been used; send each request with a new one"
            ),
            Error::NoSuchRun { reference, store } => {
                write!(f, "no run {reference} in the run store {}", store.display())
            }
            Error::AmbiguousRun {
                prefix,
                candidates,
                total,
            } => {
                write!(
                    f,
                    "the run id prefix {prefix} matches {total} runs: {}",
                    candidates.join(", ")
                )?;
                if *total > candidates.len() {
                    write!(f, " and {} more", total - candidates.len())?;
                }
                f.write_str("; give more of the id")
            }
            Error::Connect { url, reason } => write!(f, "cannot reach {url}: {reason}"),
            Error::Timeout { url, after } => {
                write!(
                    f,
                    "{url} did not answer within {:.1} s (timeout)",
                    after.as_secs_f64()
                )
            }
            Error::HttpStatus { url, status, body } => {
                let excerpt: String = body.chars().take(200).collect();
                write!(f, "{url} answered HTTP {status}: {excerpt}")
            }
            Error::JsonRpc { code, message, .. } => write!(f, "JSON-RPC error {code}: {message}"),
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
