//! The trace as data: span names, span records, span JSON, the tracer, trace context, and the
//! OTLP encodings of spans.
//!
//! Knows no transport and no conductor. The layout follows OpenTelemetry's data model; the
//! text follows OpenTelemetry Python's `ReadableSpan.to_json`, because that is the string an
//! agent written with the Python SDK returns beside its result.

pub mod context;
pub mod jsonl;
pub mod names;
pub mod otlp;
pub mod record;
pub mod span_json;
pub mod tracer;
pub mod tree;

pub use context::{SpanContext, SpanId, TraceId, TraceState};
pub use names::{CONDUCTOR_ATTRIBUTES, OWNED_ATTRIBUTES, SpanName, attr};
pub use record::{
    AttrValue, Attributes, Event, Link, Resource, SpanKind, SpanRecord, Status, StatusCode,
};
pub use span_json::{from_json, to_json};
pub use tracer::{ActiveSpan, SpanBuilder, Tracer};
