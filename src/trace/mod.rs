//! The trace as data: span names, span records, span JSON, the tracer, trace context, the
//! OTLP encodings of spans, and the linter of relay sessions read back (`relay_lint`).
//!
//! Knows no transport and no conductor. The layout follows OpenTelemetry's data model; the
//! text follows OpenTelemetry Python's `ReadableSpan.to_json`, because that is the string an
//! agent written with the Python SDK returns beside its result.

pub(crate) mod context;
pub(crate) mod names;
pub mod otlp;
pub(crate) mod record;
pub(crate) mod relay_lint;
pub(crate) mod span_json;
pub(crate) mod tracer;
pub(crate) mod waterfall;

pub use context::{SpanContext, SpanId, TraceId, TraceState};
pub use names::attr;
pub(crate) use names::{CONDUCTOR_ATTRIBUTES, SpanName, event};
#[cfg(test)]
pub(crate) use record::Resource;
pub use record::SpanRecord;
pub(crate) use record::{AttrValue, Attributes, SpanKind, StatusCode};
#[cfg(test)]
pub(crate) use record::{Event, Link, Status};
pub(crate) use span_json::into_stored;
pub use span_json::{from_json, to_json};
pub use tracer::{ActiveSpan, Tracer};
#[cfg(test)]
pub(crate) use tracer::{MAX_ATTRIBUTES, MAX_EVENTS};

/// A span JSON document that is not one.
#[derive(Debug)]
#[non_exhaustive]
pub enum TraceError {
    /// The text is not a span JSON document OpenTelemetry Python would write.
    SpanJson {
        /// The field to blame (`trace_id`, `start_time`...), when one is.
        field: Option<&'static str>,
        /// What is wrong (`trace_id "0x12" is not 32 hex digits`).
        reason: String,
    },
    /// A relay session file holds no span at all.
    EmptySession,
    /// A line of a relay session file is not a span JSON document.
    SessionLine {
        /// The line, from 1.
        line: usize,
        /// The line is the file's last and has no newline: a write cut short.
        truncated: bool,
        /// What is wrong with it.
        reason: String,
    },
}

impl TraceError {
    pub(crate) fn span_json(field: Option<&'static str>, reason: impl Into<String>) -> TraceError {
        TraceError::SpanJson {
            field,
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceError::SpanJson { reason, .. } => write!(f, "span JSON: {reason}"),
            TraceError::EmptySession => f.write_str("the session file holds no span"),
            TraceError::SessionLine {
                line,
                truncated,
                reason,
            } => {
                let cut = if *truncated {
                    " (the last line, cut short: the file is truncated)"
                } else {
                    ""
                };
                write!(f, "line {line}{cut}: {reason}")
            }
        }
    }
}

impl std::error::Error for TraceError {}
