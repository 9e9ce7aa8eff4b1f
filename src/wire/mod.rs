//! Bytes on the wire: HTTP, JSON-RPC 2.0, A2A, AG-UI, Server-Sent Events, the HMAC
//! signature on calls between the harness and its agents, and OTLP/HTTP export.
//!
//! Knows the contract and the trace format, never the harness or an agent.

pub mod a2a;
pub(crate) mod agui;
pub(crate) mod hmac;
pub mod http;
pub(crate) mod jsonrpc;
pub mod otlp;
pub mod sign;
pub(crate) mod sse;
pub mod tls;
pub(crate) mod wirelog;
pub(crate) mod worker;

use std::fmt;
use std::time::Duration;

/// Why a call to a peer failed, or a socket or file of the wire's could not be opened.
#[derive(Debug)]
#[non_exhaustive]
pub enum WireError {
    /// The peer could not be reached (the reason says "connection refused" when it was).
    Connect {
        /// The URL called.
        url: String,
        /// Why it could not be reached.
        reason: String,
    },
    /// The peer accepted the connection, then closed or reset it before its whole answer
    /// arrived: a crash mid-reply, a response or event stream cut short. Unlike
    /// [`WireError::Connect`], the request may have reached the peer.
    Disconnected {
        /// The URL called.
        url: String,
        /// How the connection ended.
        reason: String,
    },
    /// The call did not finish in time.
    Timeout {
        /// The URL called.
        url: String,
        /// The deadline it missed.
        after: Duration,
    },
    /// The peer answered with an HTTP status that is not a valid reply.
    HttpStatus {
        /// The URL called.
        url: String,
        /// The status it answered.
        status: u16,
        /// The body it answered (the message shows its first 200 characters).
        body: String,
    },
    /// The peer answered with a JSON-RPC error object (JSON-RPC 2.0 §5.1).
    JsonRpc {
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
        /// The error's `data` member, if any.
        data: Option<serde_json::Value>,
    },
    /// The peer's reply is outside the protocol (HTTP, JSON-RPC, A2A) or the contract.
    Protocol {
        /// The URL called, when the reply is tied to one.
        url: Option<String>,
        /// What is wrong with the reply.
        reason: String,
    },
    /// A TLS handshake failed, or the build has no TLS for an `https://` URL: the cause
    /// names which (unknown CA, expired, wrong host, timeout, plain HTTP on the other side).
    Tls {
        /// The URL called.
        url: String,
        /// Why the handshake failed.
        cause: tls::TlsFailure,
    },
    /// The destination is refused by the client's egress policy
    /// (`http::egress`): no connection was made.
    Egress {
        /// The URL called.
        url: String,
        /// Which address was refused, and why.
        reason: http::egress::EgressError,
    },
    /// The call was given up because its caller stopped waiting for it (a canceled task's
    /// call, see `http::client`'s "Interrupting a call"); the request may have reached the peer.
    Interrupted {
        /// The URL called.
        url: String,
    },
    /// The request could not be signed (a field breaks the signature's grammar).
    Sign {
        /// The URL to be called.
        url: String,
        /// Which field, and why.
        source: sign::SignError,
    },
    /// A local socket, thread or file the wire needs could not be had: a listening socket
    /// bound, an accept thread started, a wire log opened.
    Io {
        /// What was being done (`binding 127.0.0.1:8000`).
        context: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl WireError {
    /// A reply from `url` outside the protocol, and why.
    pub(crate) fn protocol(url: Option<&str>, reason: impl Into<String>) -> WireError {
        WireError::Protocol {
            url: url.map(str::to_owned),
            reason: reason.into(),
        }
    }

    /// A local I/O failure, with what was being done.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> WireError {
        WireError::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Connect { url, reason } => write!(f, "cannot reach {url}: {reason}"),
            WireError::Disconnected { url, reason } => write!(
                f,
                "{url} closed the connection before its answer was complete ({reason})"
            ),
            WireError::Timeout { url, after } => write!(
                f,
                "{url} did not answer within {:.1} s (timeout)",
                after.as_secs_f64()
            ),
            // A peer's words are escaped: they end up on terminals and in log lines.
            WireError::HttpStatus { url, status, body } => {
                let excerpt = crate::text::truncate(body, crate::text::Keep::Chars(200), "");
                let excerpt = crate::text::escape_str(&excerpt, false);
                write!(f, "{url} answered HTTP {status}: {excerpt}")
            }
            WireError::JsonRpc { code, message, .. } => {
                let message = crate::text::escape_str(message, false);
                write!(f, "JSON-RPC error {code}: {message}")
            }
            WireError::Protocol {
                url: Some(url),
                reason,
            } => write!(f, "{url}: {}", crate::text::escape_str(reason, false)),
            WireError::Protocol { url: None, reason } => {
                f.write_str(&crate::text::escape_str(reason, false))
            }
            WireError::Tls { url, cause } => write!(f, "TLS with {url} failed: {cause}"),
            WireError::Egress { url, reason } => {
                write!(f, "{url}: the destination is not allowed: {reason}")
            }
            WireError::Sign { url, source } => write!(f, "{url}: {source}"),
            WireError::Io { context, source } => write!(f, "{context}: {source}"),
            WireError::Interrupted { url } => write!(
                f,
                "the call to {url} was interrupted: its caller stopped waiting for it"
            ),
        }
    }
}

impl std::error::Error for WireError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WireError::Sign { source, .. } => Some(source),
            WireError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peers_words_in_an_error_cannot_forge_a_log_line_or_drive_a_terminal() {
        let forged = "bad\n2026-01-01 INFO forged line \u{1b}[2J";
        let errors = [
            WireError::HttpStatus {
                url: "http://p".into(),
                status: 400,
                body: forged.into(),
            },
            WireError::JsonRpc {
                code: -32000,
                message: forged.into(),
                data: None,
            },
            WireError::protocol(Some("http://p"), forged),
            WireError::protocol(None, forged),
        ];
        for e in errors {
            let shown = e.to_string();
            assert!(
                !shown.contains('\n') && !shown.contains('\u{1b}'),
                "{shown}"
            );
            assert!(shown.contains("\\u{a}2026-01-01 INFO forged"), "{shown}");
        }
    }
}
