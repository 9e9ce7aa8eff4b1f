//! OTLP/HTTP export: sending what [`crate::trace::otlp`] encodes to an OpenTelemetry receiver.
//!
//! Three parts, each usable alone (the harness uses all three; a relay needs no harness):
//!
//! - [`OtlpConfig`]: where and how, resolved from flags and the standard `OTEL_EXPORTER_OTLP_*`,
//!   `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` variables (`config`);
//! - [`send()`]: one export request, POSTed with the exact `Content-Type` of its encoding and
//!   retried as OTLP/HTTP says (429, 502, 503, 504 and unreachable receivers; exponential
//!   backoff with jitter; `Retry-After` honoured) (`mod@send`);
//! - [`Exporter`]: a bounded queue and a thread of its own, so exporting never slows or fails
//!   the caller; what was exported, dropped and failed is counted in `ExportStats`
//!   (`exporter`).
//!
//! Follows opentelemetry-proto v1.11.0 `docs/specification.md` §"OTLP/HTTP" and the
//! OpenTelemetry specification's `protocol/exporter.md`. Not covered: gRPC and gzip. An `https`
//! endpoint is called over TLS through [`crate::wire::tls`] (`config` says with what trust).
//!
//! ```
//! use ddwire::trace::{otlp::Encoding, Tracer};
//! use ddwire::wire::http::{client::HttpClient, memory::MemoryNet, Limits, Response};
//! use ddwire::wire::otlp::{send, OtlpConfig, RetryPolicy};
//! use std::sync::{Arc, Mutex};
//!
//! // A receiver on the in-memory transport (real HTTP/1.1 bytes, no socket).
//! let net = MemoryNet::new();
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let log = seen.clone();
//! net.serve("collector:4318", Arc::new(move |req: ddwire::wire::http::Request| {
//!     log.lock().unwrap().push((req.path.clone(), req.header("content-type").map(str::to_string)));
//!     Response::bytes(200, "application/x-protobuf", Vec::new())
//! }), Limits::DEFAULT);
//!
//! let tracer = Tracer::new("hello.world");
//! let root = tracer.invoke_agent("hello.world");
//! let trace_id = root.context().trace_id;
//! root.end();
//! let spans = tracer.take(trace_id);
//!
//! let config = OtlpConfig::new("http://collector:4318/v1/traces", Encoding::Protobuf)?;
//! let delivery = send(&HttpClient::memory(net), &config, &spans, &RetryPolicy::default())?;
//! assert_eq!((delivery.spans, delivery.attempts), (1, 1));
//! assert_eq!(seen.lock().unwrap()[0], ("/v1/traces".to_string(), Some("application/x-protobuf".to_string())));
//! # Ok::<(), ddwire::wire::otlp::OtlpError>(())
//! ```

pub(crate) mod config;
pub(crate) mod exporter;
pub(crate) mod send;

pub(crate) use config::Local;
pub use config::OtlpConfig;
pub(crate) use config::{OtlpFlags, new_instance_id, resource_from_env};
pub use exporter::{ErrorHook, ExportStats, Exporter, ExporterOptions};
pub use send::{Delivery, RetryPolicy, send};

use std::fmt;
use std::time::Duration;

/// Everything that can go wrong configuring or sending an OTLP export.
#[derive(Debug)]
pub enum OtlpError {
    /// A flag or variable that cannot be used: which, its value, and why.
    Config {
        /// The flag or variable.
        setting: String,
        /// Its value as given.
        value: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// The receiver could not be reached, or did not answer in time, after `attempts` tries.
    Unreachable {
        /// The receiver's URL.
        url: String,
        /// How many requests were made.
        attempts: u32,
        /// The last transport error.
        error: crate::wire::WireError,
    },
    /// The receiver answered with a status that is not success (after `attempts` tries, for a
    /// retryable one).
    Refused {
        /// The receiver's URL.
        url: String,
        /// The HTTP status it answered.
        status: u16,
        /// How many requests were made.
        attempts: u32,
        /// The start of its answer, as text.
        body: String,
    },
    /// The receiver asked to wait longer than the exporter's limit before retrying.
    RetryAfterTooLong {
        /// The receiver's URL.
        url: String,
        /// The HTTP status it answered.
        status: u16,
        /// The wait it asked for (`Retry-After`).
        after: Duration,
        /// The longest wait the exporter accepts.
        limit: Duration,
    },
    /// The request would be larger than the limit, so it was not sent.
    TooLarge {
        /// The request's size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The receiver accepted the request but rejected some spans (not retried).
    PartialSuccess {
        /// The receiver's URL.
        url: String,
        /// How many spans it rejected.
        rejected_spans: u64,
        /// Its message about them.
        message: String,
    },
    /// The background exporter's queue was full: the batch was dropped (`dropped` so far).
    QueueFull {
        /// The queue's capacity, in runs.
        capacity: usize,
        /// How many batches have been dropped so far.
        dropped: u64,
    },
    /// The exporter's thread could not be started.
    Start {
        /// The operating system's error.
        error: std::io::Error,
    },
}

impl OtlpError {
    /// How many requests were made, where that is known.
    pub(crate) fn attempts(&self) -> Option<u32> {
        match self {
            OtlpError::Unreachable { attempts, .. } | OtlpError::Refused { attempts, .. } => {
                Some(*attempts)
            }
            _ => None,
        }
    }
}

impl fmt::Display for OtlpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tries = |n: &u32| {
            if *n == 1 {
                String::new()
            } else {
                format!(" (after {n} attempts)")
            }
        };
        match self {
            OtlpError::Config {
                setting,
                value,
                reason,
            } => write!(f, "{setting}={value:?} cannot be used: {reason}"),
            OtlpError::Unreachable {
                url,
                attempts,
                error,
            } => write!(f, "OTLP export to {url} failed{}: {error}", tries(attempts)),
            OtlpError::Refused {
                url,
                status,
                attempts,
                body,
            } => {
                write!(
                    f,
                    "OTLP receiver {url} refused the export with HTTP {status}"
                )?;
                f.write_str(&tries(attempts))?;
                if !body.is_empty() {
                    write!(f, ": {body}")?;
                }
                match status {
                    404 => f.write_str(
                        " (is this the traces URL? --otlp-endpoint takes a base URL and appends /v1/traces; --otlp-traces-endpoint takes the full URL)",
                    ),
                    415 => f.write_str(
                        " (the receiver does not take this Content-Type; try the other --otlp-protocol)",
                    ),
                    _ => Ok(()),
                }
            }
            OtlpError::RetryAfterTooLong {
                url,
                status,
                after,
                limit,
            } => write!(
                f,
                "OTLP receiver {url} answered HTTP {status} and asked to retry after {} s, longer than the {} s the exporter waits; the batch is given up",
                after.as_secs(),
                limit.as_secs()
            ),
            OtlpError::TooLarge { bytes, limit } => write!(
                f,
                "the OTLP request would be {bytes} bytes, more than the limit of {limit}; it was not sent"
            ),
            OtlpError::PartialSuccess {
                url,
                rejected_spans,
                message,
            } => {
                write!(
                    f,
                    "OTLP receiver {url} accepted the export but rejected {rejected_spans} span(s)"
                )?;
                if !message.is_empty() {
                    write!(f, ": {message}")?;
                }
                Ok(())
            }
            OtlpError::QueueFull { capacity, dropped } => write!(
                f,
                "the OTLP export queue is full ({capacity} batches waiting): a run's spans were dropped, {dropped} so far"
            ),
            OtlpError::Start { error } => {
                write!(f, "the OTLP exporter's thread could not start: {error}")
            }
        }
    }
}

impl std::error::Error for OtlpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OtlpError::Unreachable { error, .. } => Some(error),
            OtlpError::Start { error } => Some(error),
            _ => None,
        }
    }
}
