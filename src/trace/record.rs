//! The plain span record: one finished span as data.
//!
//! The linter, the run store and the span-JSON codec all read and write this struct; nothing
//! in ddwire holds a span as anything else once it has ended, so the linter reads only owned
//! attributes of plain records, never a tracer's objects.

use super::context::{SpanContext, SpanId, TraceId, TraceState};
use super::names::{SpanName, is_owned};
use std::sync::Arc;

/// One finished span.
#[derive(Clone, Debug, PartialEq)]
pub struct SpanRecord {
    /// The span name. Kept as text: a span read from an agent may carry any name.
    pub(crate) name: String,
    /// The trace the span belongs to.
    pub(crate) trace_id: TraceId,
    /// The span's own id.
    pub span_id: SpanId,
    /// The parent span's id; `None` for a root span.
    pub parent_id: Option<SpanId>,
    /// The span's own context's trace state (inherited from a remote parent).
    pub(crate) trace_state: TraceState,
    /// The span's kind (OpenTelemetry's `SpanKind`).
    pub(crate) kind: SpanKind,
    /// Nanoseconds since the Unix epoch; 0 when unknown.
    pub(crate) start_ns: u64,
    /// Nanoseconds since the Unix epoch; 0 when unknown.
    pub(crate) end_ns: u64,
    /// The span's status.
    pub(crate) status: Status,
    /// In insertion order, which span JSON keeps.
    pub(crate) attributes: Attributes,
    /// Timestamped events, in the order they were added.
    pub(crate) events: Vec<Event>,
    /// Links to spans of other traces (a delegated child's root links to its parent's span).
    pub(crate) links: Vec<Link>,
    /// The resource that produced the span (its `service.name`), shared by the spans of one
    /// tracer or one document.
    pub(crate) resource: Arc<Resource>,
}

impl SpanRecord {
    /// Whether the span is named `name`.
    pub(crate) fn is(&self, name: SpanName) -> bool {
        self.name == name.as_str()
    }

    /// An owned attribute's value; `None` for an unowned key, even if the span carries it
    /// (the linter reads owned attributes only).
    pub(crate) fn owned(&self, key: &str) -> Option<&AttrValue> {
        if is_owned(key) {
            self.attributes.get(key)
        } else {
            None
        }
    }

    /// An owned attribute as text, if it is a string.
    pub fn owned_str(&self, key: &str) -> Option<&str> {
        self.attributes.get_str(key).filter(|_| is_owned(key))
    }

    /// This span's context, for a child in another process or a link.
    pub(crate) fn context(&self) -> SpanContext {
        SpanContext {
            trace_id: self.trace_id,
            span_id: self.span_id,
            flags: super::context::FLAG_SAMPLED,
            trace_state: self.trace_state.clone(),
            is_remote: false,
        }
    }
}

/// OpenTelemetry's span kinds, each numbered as OTLP's `SpanKind` enum numbers it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SpanKind {
    #[default]
    /// An operation inside a process (the default).
    Internal = 1,
    /// The server side of a remote call.
    Server = 2,
    /// The client side of a remote call.
    Client = 3,
    /// The producer of an asynchronous message.
    Producer = 4,
    /// The consumer of an asynchronous message.
    Consumer = 5,
}

impl SpanKind {
    /// The upper-case name (`INTERNAL`, ...).
    pub(crate) fn name(self) -> &'static str {
        match self {
            SpanKind::Internal => "INTERNAL",
            SpanKind::Server => "SERVER",
            SpanKind::Client => "CLIENT",
            SpanKind::Producer => "PRODUCER",
            SpanKind::Consumer => "CONSUMER",
        }
    }

    /// The kind named `name` (`INTERNAL`, ...).
    pub(crate) fn from_name(name: &str) -> Option<SpanKind> {
        [
            SpanKind::Internal,
            SpanKind::Server,
            SpanKind::Client,
            SpanKind::Producer,
            SpanKind::Consumer,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }

    /// The OTLP enum number (`SPAN_KIND_INTERNAL` = 1, ...).
    pub(crate) fn otlp(self) -> u8 {
        self as u8
    }
}

/// A span's status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Status {
    /// The status code.
    pub(crate) code: StatusCode,
    /// Only meaningful with [`StatusCode::Error`]; OpenTelemetry drops it otherwise.
    pub(crate) description: Option<String>,
}

impl Status {
    /// A status as OpenTelemetry's `Status(code, description)` keeps it: the description
    /// only with `ERROR`.
    pub(crate) fn new(code: StatusCode, description: Option<&str>) -> Status {
        let description = description
            .filter(|_| code == StatusCode::Error)
            .map(str::to_string);
        Status { code, description }
    }
}

/// OpenTelemetry's status codes, each numbered as OTLP's `Status.StatusCode` numbers it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum StatusCode {
    #[default]
    /// Nothing was said about the outcome (the default).
    Unset = 0,
    /// The operation succeeded, as its owner asserts.
    Ok = 1,
    /// The operation failed.
    Error = 2,
}

impl StatusCode {
    /// `UNSET`, `OK` or `ERROR`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            StatusCode::Unset => "UNSET",
            StatusCode::Ok => "OK",
            StatusCode::Error => "ERROR",
        }
    }

    /// The OTLP enum number.
    pub(crate) fn otlp(self) -> u8 {
        self as u8
    }
}

/// An attribute value: the types OpenTelemetry allows (a scalar, or a homogeneous array).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum AttrValue {
    /// A string.
    String(String),
    /// A boolean.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Double(f64),
    /// An array of strings.
    StringArray(Vec<String>),
    /// An array of booleans.
    BoolArray(Vec<bool>),
    /// An array of integers.
    IntArray(Vec<i64>),
    /// An array of doubles.
    DoubleArray(Vec<f64>),
    /// Anything else OpenTelemetry Python 1.45 keeps and writes: `null`, integers beyond
    /// 64 bits, mixed or nested sequences, maps. Held as the JSON text Python writes for it
    /// (`json.dumps` defaults, keys in their original order), so it round-trips byte for byte.
    Json(String),
}

impl From<&str> for AttrValue {
    fn from(s: &str) -> Self {
        AttrValue::String(s.to_string())
    }
}
impl From<String> for AttrValue {
    fn from(s: String) -> Self {
        AttrValue::String(s)
    }
}
impl From<bool> for AttrValue {
    fn from(b: bool) -> Self {
        AttrValue::Bool(b)
    }
}
impl From<i64> for AttrValue {
    fn from(i: i64) -> Self {
        AttrValue::Int(i)
    }
}
impl From<u64> for AttrValue {
    fn from(i: u64) -> Self {
        AttrValue::Int(i64::try_from(i).unwrap_or(i64::MAX))
    }
}
impl From<f64> for AttrValue {
    fn from(x: f64) -> Self {
        AttrValue::Double(x)
    }
}

/// Attributes in insertion order, with the semantics of OpenTelemetry Python's
/// `BoundedAttributes`: setting an existing key moves it to the end, an empty key is dropped.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Attributes(pub Vec<(String, AttrValue)>);

impl Attributes {
    /// The value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&AttrValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value of `key`, if it is a string.
    pub(crate) fn get_str(&self, key: &str) -> Option<&str> {
        match self.get(key) {
            Some(AttrValue::String(s)) => Some(s),
            _ => None,
        }
    }

    /// Set `key`; an existing key moves to the end, an empty key is ignored.
    pub(crate) fn set(&mut self, key: impl Into<String>, value: impl Into<AttrValue>) {
        let key = key.into();
        if key.is_empty() {
            return;
        }
        self.0.retain(|(k, _)| *k != key);
        self.0.push((key, value.into()));
    }

    /// How many there are.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Iterate in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &AttrValue)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// A timed annotation on a span.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Event {
    /// The event's name.
    pub(crate) name: String,
    /// When it happened, in nanoseconds since the Unix epoch.
    pub(crate) time_ns: u64,
    /// Its attributes.
    pub(crate) attributes: Attributes,
}

/// A reference to a span in another trace (how a delegated child points at its parent's
/// `delegate` span).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Link {
    /// The linked span's trace.
    pub(crate) trace_id: TraceId,
    /// The linked span.
    pub(crate) span_id: SpanId,
    /// The linked span's trace state.
    pub(crate) trace_state: TraceState,
    /// The link's attributes.
    pub(crate) attributes: Attributes,
}

/// The entity that produced the spans.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Resource {
    /// Resource attributes (`service.name`, `telemetry.sdk.*`...).
    pub(crate) attributes: Attributes,
    /// The schema URL of the attributes; empty when none.
    pub(crate) schema_url: String,
}

impl Resource {
    /// ddwire's resource for a service: the SDK attributes OpenTelemetry's
    /// `Resource.create` adds, naming ddwire honestly, then `service.name`.
    pub(crate) fn for_service(service_name: &str) -> Resource {
        let mut attributes = Attributes::default();
        attributes.set("telemetry.sdk.language", "rust");
        attributes.set("telemetry.sdk.name", "ddwire");
        attributes.set("telemetry.sdk.version", env!("CARGO_PKG_VERSION"));
        attributes.set("service.name", service_name);
        Resource {
            attributes,
            schema_url: String::new(),
        }
    }
}
