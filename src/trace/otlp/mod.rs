//! OTLP: stored spans as one `ExportTraceServiceRequest`, in OTLP/JSON or in protobuf.
//!
//! Written by hand, with no protobuf crate: [`json::encode`] writes the OTLP/JSON body
//! (`application/json`), [`proto::encode`] the binary protobuf body
//! (`application/x-protobuf`), both from the same spans, resource and scope. The messages and
//! field numbers are those of opentelemetry-proto v1.11.0
//! (`opentelemetry/proto/collector/trace/v1/trace_service.proto`, `trace/v1/trace.proto`,
//! `common/v1/common.proto`, `resource/v1/resource.proto`); the JSON mapping is the one in its
//! `docs/specification.md` §"JSON Protobuf Encoding". Both encoders write exactly the bytes the
//! OpenTelemetry Python exporters write for equal spans (`fixtures/otlp/`), except for the
//! differences listed in `vendor-notes/otlp.md`.
//!
//! Spans are exported as stored: name, kind, ids, times, attributes, events, links and status
//! as the [`SpanRecord`] holds them, nothing derived. Spans are grouped by the resource they
//! carry, one `ResourceSpans` per distinct stored resource in order of first appearance, each
//! with one `ScopeSpans` under the exporter's [`Scope`]; [`ExportResource`] says what the
//! exporter adds to those resources.
//!
//! ```
//! use ddwire::trace::otlp::{self, ExportResource, Scope};
//! use ddwire::trace::Tracer;
//!
//! let tracer = Tracer::new("hello.world");
//! let root = tracer.invoke_agent("hello.world");
//! let trace_id = root.context().trace_id;
//! root.end();
//! let spans = tracer.take(trace_id);
//!
//! let resource = ExportResource::default(); // the stored resources as they are
//! let json = otlp::json::encode(&spans, &resource, &Scope::ddwire());
//! assert!(json.starts_with(r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"telemetry.sdk.language""#));
//! assert!(json.contains(&format!(r#""traceId":"{trace_id}""#)));
//!
//! let body = otlp::proto::encode(&spans, &resource, &Scope::ddwire());
//! assert_eq!(body[0], 0x0a); // field 1 (resource_spans), length-delimited
//! assert_eq!(otlp::Encoding::Protobuf.content_type(), "application/x-protobuf");
//! ```

pub mod json;
pub mod proto;

use super::context::{SpanId, TraceId, TraceState};
use super::record::{AttrValue, Attributes, SpanRecord};
use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// The two OTLP/HTTP payload encodings (specification.md §"OTLP/HTTP").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// OTLP/JSON, `http/json`.
    Json,
    /// Binary protobuf, `http/protobuf`.
    Protobuf,
}

impl Encoding {
    /// The exact `Content-Type` of a request body in this encoding. Receivers compare it as a
    /// string: rotel refuses `application/json; charset=utf-8`, Phoenix anything but
    /// `application/x-protobuf`.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Json => "application/json",
            Encoding::Protobuf => "application/x-protobuf",
        }
    }

    /// The `OTEL_EXPORTER_OTLP_PROTOCOL` value naming it (`http/json`, `http/protobuf`).
    pub(crate) fn protocol(self) -> &'static str {
        match self {
            Encoding::Json => "http/json",
            Encoding::Protobuf => "http/protobuf",
        }
    }

    /// The encoding an `OTEL_EXPORTER_OTLP_PROTOCOL` value names; `None` for anything else
    /// (`grpc` included: ddwire speaks OTLP/HTTP only).
    pub(crate) fn from_protocol(value: &str) -> Option<Encoding> {
        [Encoding::Json, Encoding::Protobuf]
            .into_iter()
            .find(|e| e.protocol() == value)
    }

    /// Encode `spans` as one `ExportTraceServiceRequest` body in this encoding.
    pub(crate) fn encode(
        self,
        spans: &[SpanRecord],
        resource: &ExportResource,
        scope: &Scope,
    ) -> Vec<u8> {
        match self {
            Encoding::Json => json::encode(spans, resource, scope).into_bytes(),
            Encoding::Protobuf => proto::encode(spans, resource, scope),
        }
    }
}

/// The instrumentation scope every exported span is listed under (`InstrumentationScope`,
/// common.proto). Span JSON does not record the scope a span was made with, so the exporter
/// names one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    /// `InstrumentationScope.name`.
    pub(crate) name: String,
    /// `InstrumentationScope.version`; empty for none.
    pub(crate) version: String,
}

impl Scope {
    /// `ddwire` at this crate's version: the tracer that recorded the harness's spans and
    /// imported its agents'.
    pub fn ddwire() -> Scope {
        Scope {
            name: "ddwire".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// What the exporter adds to the resources the spans were stored with.
///
/// A stored span carries the resource of the program that made it: the harness's own spans
/// `service.name = "ddwire-harness"`, an agent's spans its agent id, a Python agent's the
/// Python SDK's resource. Those stay as stored, with two additions:
///
/// - the resource whose stored `service.name` is `ExportResource::local_service` (the
///   exporting program's own spans), or a span with no resource at all, takes every
///   attribute of `ExportResource::local`, replacing a stored value of the same key in
///   place (`OTEL_SERVICE_NAME`, `service.version`, `service.instance.id`);
/// - every resource takes each attribute of `ExportResource::common` whose key it lacks
///   (`OTEL_RESOURCE_ATTRIBUTES`): a stored attribute is never overwritten by it.
///
/// The default adds nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExportResource {
    /// The stored `service.name` of the exporting program's own spans; `None` for none.
    pub(crate) local_service: Option<String>,
    /// The exporting program's own resource attributes.
    pub(crate) local: Attributes,
    /// Attributes every resource gets where it lacks the key.
    pub(crate) common: Attributes,
}

/// One `ResourceSpans`: a resource as exported, and its spans in input order.
pub(crate) struct Group<'a> {
    pub(crate) attributes: Vec<(&'a str, &'a AttrValue)>,
    pub(crate) schema_url: &'a str,
    pub(crate) spans: Vec<&'a SpanRecord>,
}

/// Group `spans` by stored resource, in order of first appearance, as the Python exporters
/// group by `ReadableSpan.resource`; a group's resource is written as its first span stored it.
pub(crate) fn groups<'a>(spans: &'a [SpanRecord], resource: &'a ExportResource) -> Vec<Group<'a>> {
    let mut groups: Vec<Group<'a>> = Vec::new();
    let mut stored: Vec<&'a super::record::Resource> = Vec::new();
    for span in spans {
        match stored.iter().position(|r| same_resource(r, &span.resource)) {
            Some(i) => groups[i].spans.push(span),
            None => {
                stored.push(&span.resource);
                groups.push(Group {
                    attributes: merged(&span.resource.attributes, resource),
                    schema_url: &span.resource.schema_url,
                    spans: vec![span],
                });
            }
        }
    }
    groups
}

/// Whether two resources are one, as OpenTelemetry Python's `Resource.__eq__` decides: the same
/// schema URL and the same attributes, in any order.
fn same_resource(a: &super::record::Resource, b: &super::record::Resource) -> bool {
    a.schema_url == b.schema_url
        && a.attributes.len() == b.attributes.len()
        && a.attributes
            .iter()
            .all(|(k, v)| b.attributes.get(k) == Some(v))
}

/// A stored resource's attributes with the exporter's additions ([`ExportResource`]).
fn merged<'a>(stored: &'a Attributes, add: &'a ExportResource) -> Vec<(&'a str, &'a AttrValue)> {
    let mut out: Vec<(&str, &AttrValue)> = stored.iter().collect();
    let service = stored.get_str("service.name");
    let local = stored.is_empty() || (service.is_some() && service == add.local_service.as_deref());
    if local {
        for (k, v) in add.local.iter() {
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some(slot) => slot.1 = v,
                None => out.push((k, v)),
            }
        }
    }
    for (k, v) in add.common.iter() {
        if !out.iter().any(|(key, _)| *key == k) {
            out.push((k, v));
        }
    }
    out
}

/// An attribute value as OTLP's `AnyValue` (common.proto) holds it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Any<'a> {
    /// An `AnyValue` with no member set: what the Python exporters write for `None`.
    Empty,
    Str(Cow<'a, str>),
    Bool(bool),
    Int(i64),
    Double(f64),
    Array(Vec<Any<'a>>),
    KvList(Vec<(Cow<'a, str>, Any<'a>)>),
}

/// `value` as an `AnyValue`, or `None` when OTLP cannot hold it: an integer outside int64
/// (which the Python protobuf exporter also drops, with the whole attribute).
pub(crate) fn any(value: &AttrValue) -> Option<Any<'_>> {
    Some(match value {
        AttrValue::String(s) => Any::Str(Cow::Borrowed(s)),
        AttrValue::Bool(b) => Any::Bool(*b),
        AttrValue::Int(i) => Any::Int(*i),
        AttrValue::Double(x) => Any::Double(*x),
        AttrValue::StringArray(a) => {
            Any::Array(a.iter().map(|s| Any::Str(Cow::Borrowed(s))).collect())
        }
        AttrValue::BoolArray(a) => Any::Array(a.iter().map(|b| Any::Bool(*b)).collect()),
        AttrValue::IntArray(a) => Any::Array(a.iter().map(|i| Any::Int(*i)).collect()),
        AttrValue::DoubleArray(a) => Any::Array(a.iter().map(|x| Any::Double(*x)).collect()),
        AttrValue::Json(text) => serde_json::from_str::<JsonAny>(text).ok()?.0?,
    })
}

/// An [`AttrValue::Json`] text read as an `AnyValue` tree, keeping object keys in order
/// (the order Python wrote them in), as `_encode_value` maps a Python value: `null` → no
/// member, an object → `kvlistValue`, an array → `arrayValue`, an integer literal → `intValue`
/// (`None` when it does not fit int64), a literal with a fraction or exponent → `doubleValue`.
struct JsonAny(Option<Any<'static>>);

impl<'de> Deserialize<'de> for JsonAny {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <Box<RawValue>>::deserialize(d)?;
        Ok(JsonAny(read_any(raw.get())))
    }
}

fn read_any(text: &str) -> Option<Any<'static>> {
    let text = text.trim();
    Some(match text.as_bytes().first()? {
        b'n' => Any::Empty,
        b't' => Any::Bool(true),
        b'f' => Any::Bool(false),
        b'"' => Any::Str(Cow::Owned(serde_json::from_str(text).ok()?)),
        b'[' => {
            let items: Vec<Box<RawValue>> = serde_json::from_str(text).ok()?;
            Any::Array(
                items
                    .iter()
                    .map(|i| read_any(i.get()))
                    .collect::<Option<_>>()?,
            )
        }
        b'{' => {
            let OrderedRaw(entries) = serde_json::from_str(text).ok()?;
            let mut values = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                values.push((Cow::Owned(k), read_any(v.get())?));
            }
            Any::KvList(values)
        }
        _ if crate::json::python::is_float_literal(text) => Any::Double(text.parse().ok()?),
        _ => Any::Int(text.parse().ok()?),
    })
}

/// A JSON object's members in document order, each value as raw text.
struct OrderedRaw(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for OrderedRaw {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OrderedRaw;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedRaw, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, Box<RawValue>>()? {
                    out.push(entry);
                }
                Ok(OrderedRaw(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A span's attributes as `KeyValue`s, those OTLP cannot hold left out (see [`any`]).
pub(crate) fn key_values(attributes: &Attributes) -> Vec<(&str, Any<'_>)> {
    attributes
        .iter()
        .filter_map(|(k, v)| any(v).map(|a| (k, a)))
        .collect()
}

/// How an encoding writes a field. The walk below (`write_request` and the messages it holds)
/// names each field both by its number, for protobuf, and by its lowerCamelCase name, for
/// OTLP/JSON, so both encoders write the same fields in the same order from one definition.
pub(crate) trait Writer {
    /// Whether `KeyValue.value` is written when it holds nothing (Python's `None`).
    const EMPTY_VALUE: bool;
    /// An embedded message, always written (empty when `body` writes nothing).
    fn message(&mut self, field: u32, name: &str, body: impl FnOnce(&mut Self));
    /// A repeated message field, `body` writing each item's message; with no items the field
    /// is left out, unless `always` (OTLP/JSON then writes `[]`).
    fn repeated<T>(
        &mut self,
        field: u32,
        name: &str,
        items: &[T],
        always: bool,
        body: impl Fn(&mut Self, &T),
    );
    /// A `string`, written even when empty (see [`string`]).
    fn text(&mut self, field: u32, name: &str, s: &str);
    /// A `bytes` id: `trace_id`, `span_id` or `parent_span_id`.
    fn id(&mut self, field: u32, name: &str, id: &[u8]);
    /// A `fixed64` time in nanoseconds, left out when 0.
    fn time(&mut self, field: u32, name: &str, ns: u64);
    /// An enum value, written even when 0.
    fn enumeration(&mut self, field: u32, name: &str, n: u8);
    /// The `AnyValue` members other than a string or a message.
    fn bool(&mut self, field: u32, name: &str, b: bool);
    /// See [`Writer::bool`].
    fn int64(&mut self, field: u32, name: &str, i: i64);
    /// See [`Writer::bool`].
    fn double(&mut self, field: u32, name: &str, x: f64);
}

/// An `ExportTraceServiceRequest` holding `spans`, one `ResourceSpans` a [`Group`].
pub(crate) fn write_request<W: Writer>(
    w: &mut W,
    spans: &[SpanRecord],
    resource: &ExportResource,
    scope: &Scope,
) {
    w.repeated(
        1,
        "resourceSpans",
        &groups(spans, resource),
        true,
        |rs, group| {
            rs.message(1, "resource", |r| {
                let attributes: Vec<(&str, Any)> = group
                    .attributes
                    .iter()
                    .filter_map(|(k, v)| any(v).map(|a| (*k, a)))
                    .collect();
                key_value_list(r, 1, "attributes", &attributes, false);
            });
            rs.repeated(2, "scopeSpans", &[scope], false, |ss, scope| {
                ss.message(1, "scope", |s| {
                    string(s, 1, "name", &scope.name);
                    string(s, 2, "version", &scope.version);
                });
                ss.repeated(2, "spans", &group.spans, false, |s, span| {
                    write_span(s, span)
                });
            });
            string(rs, 3, "schemaUrl", group.schema_url);
        },
    );
}

/// `Span` (trace.proto).
fn write_span<W: Writer>(w: &mut W, span: &SpanRecord) {
    write_ids(w, span.trace_id, span.span_id, &span.trace_state);
    if let Some(parent) = span.parent_id {
        w.id(4, "parentSpanId", &parent.0.to_be_bytes());
    }
    string(w, 5, "name", &span.name);
    w.enumeration(6, "kind", span.kind.otlp());
    w.time(7, "startTimeUnixNano", span.start_ns);
    w.time(8, "endTimeUnixNano", span.end_ns);
    attributes(w, 9, &span.attributes);
    w.repeated(11, "events", &span.events, false, |e, event| {
        e.time(1, "timeUnixNano", event.time_ns);
        string(e, 2, "name", &event.name);
        attributes(e, 3, &event.attributes);
    });
    w.repeated(13, "links", &span.links, false, |l, link| {
        write_ids(l, link.trace_id, link.span_id, &link.trace_state);
        attributes(l, 4, &link.attributes);
    });
    w.message(15, "status", |s| {
        string(
            s,
            2,
            "message",
            span.status.description.as_deref().unwrap_or(""),
        );
        let code = span.status.code.otlp();
        if code != 0 {
            s.enumeration(3, "code", code);
        }
    });
}

/// Fields 1 `trace_id`, 2 `span_id` and 3 `trace_state`, the same in `Span` and `Span.Link`.
fn write_ids<W: Writer>(w: &mut W, trace_id: TraceId, span_id: SpanId, state: &TraceState) {
    w.id(1, "traceId", &trace_id.0.to_be_bytes());
    w.id(2, "spanId", &span_id.0.to_be_bytes());
    string(w, 3, "traceState", &state.header());
}

/// A `string` field, left out when empty (proto3 implicit presence).
fn string<W: Writer>(w: &mut W, field: u32, name: &str, s: &str) {
    if !s.is_empty() {
        w.text(field, name, s);
    }
}

/// The `attributes` of a span, an event or a link, those OTLP cannot hold left out.
fn attributes<W: Writer>(w: &mut W, field: u32, attributes: &Attributes) {
    key_value_list(w, field, "attributes", &key_values(attributes), false);
}

/// `repeated KeyValue` (common.proto).
fn key_value_list<W: Writer, K: AsRef<str>>(
    w: &mut W,
    field: u32,
    name: &str,
    entries: &[(K, Any)],
    always: bool,
) {
    w.repeated(field, name, entries, always, |kv, (key, value)| {
        string(kv, 1, "key", key.as_ref());
        if W::EMPTY_VALUE || *value != Any::Empty {
            kv.message(2, "value", |a| any_value(a, value));
        }
    });
}

/// The members of an `AnyValue`: the one set `oneof` member, even at its default value. An
/// array's or a list's `values` is written even when empty: `[]` and an absent field are the
/// same to a proto3 JSON reader, and rotel refuses `"arrayValue":{}`.
pub(crate) fn any_value<W: Writer>(w: &mut W, value: &Any) {
    match value {
        Any::Empty => {}
        Any::Str(s) => w.text(1, "stringValue", s),
        Any::Bool(b) => w.bool(2, "boolValue", *b),
        Any::Int(i) => w.int64(3, "intValue", *i),
        Any::Double(x) => w.double(4, "doubleValue", *x),
        Any::Array(items) => w.message(5, "arrayValue", |a| {
            a.repeated(1, "values", items, true, any_value)
        }),
        Any::KvList(entries) => w.message(6, "kvlistValue", |l| {
            key_value_list(l, 1, "values", entries, true)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::record::Resource;
    use crate::trace::{SpanId, Tracer};

    fn attrs(pairs: &[(&str, &str)]) -> Attributes {
        let mut a = Attributes::default();
        for (k, v) in pairs {
            a.set(*k, *v);
        }
        a
    }

    fn spans_with(resources: &[Resource]) -> Vec<SpanRecord> {
        let tracer = Tracer::new("t");
        let root = tracer.invoke_agent("a");
        let trace_id = root.context().trace_id;
        root.end();
        let template = tracer.take(trace_id).remove(0);
        resources
            .iter()
            .enumerate()
            .map(|(i, r)| SpanRecord {
                span_id: SpanId(i as u64 + 1),
                resource: std::sync::Arc::new(r.clone()),
                ..template.clone()
            })
            .collect()
    }

    fn exported(group: &Group) -> Vec<(String, AttrValue)> {
        group
            .attributes
            .iter()
            .map(|(k, v)| (k.to_string(), (*v).clone()))
            .collect()
    }

    #[test]
    fn spans_are_grouped_by_resource_in_first_seen_order_and_equal_resources_in_any_order_are_one()
    {
        let a = Resource {
            attributes: attrs(&[("service.name", "a"), ("x", "1")]),
            schema_url: String::new(),
        };
        let a_reordered = Resource {
            attributes: attrs(&[("x", "1"), ("service.name", "a")]),
            schema_url: String::new(),
        };
        let b = Resource {
            attributes: attrs(&[("service.name", "b")]),
            schema_url: String::new(),
        };
        let b_schema = Resource {
            schema_url: "https://opentelemetry.io/schemas/1.21.0".into(),
            ..b.clone()
        };
        let spans = spans_with(&[b.clone(), a.clone(), b_schema, a_reordered, b]);
        let none = ExportResource::default();
        let groups = groups(&spans, &none);
        let ids: Vec<Vec<u64>> = groups
            .iter()
            .map(|g| g.spans.iter().map(|s| s.span_id.0).collect())
            .collect();
        assert_eq!(ids, [vec![1, 5], vec![2, 4], vec![3]]);
        // A group's resource is written as its first span stored it.
        assert_eq!(exported(&groups[1])[0].0, "service.name");
        assert_eq!(
            groups[2].schema_url,
            "https://opentelemetry.io/schemas/1.21.0"
        );
    }

    #[test]
    fn the_local_service_takes_the_exporters_identity_and_every_resource_the_common_attributes_it_lacks()
     {
        let harness = Resource {
            attributes: attrs(&[("service.name", "ddwire-harness"), ("env", "stored")]),
            schema_url: String::new(),
        };
        let agent = Resource {
            attributes: attrs(&[("service.name", "hello.world")]),
            schema_url: String::new(),
        };
        let spans = spans_with(&[harness, agent, Resource::default()]);
        let add = ExportResource {
            local_service: Some("ddwire-harness".into()),
            local: attrs(&[
                ("service.name", "prod-harness"),
                ("service.instance.id", "i-1"),
            ]),
            common: attrs(&[("env", "prod"), ("region", "eu")]),
        };
        let groups = groups(&spans, &add);
        let s = |pairs: &[(&str, &str)]| -> Vec<(String, AttrValue)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), AttrValue::from(*v)))
                .collect()
        };
        // Replaced in place; a stored attribute is never overwritten by a common one.
        assert_eq!(
            exported(&groups[0]),
            s(&[
                ("service.name", "prod-harness"),
                ("env", "stored"),
                ("service.instance.id", "i-1"),
                ("region", "eu"),
            ])
        );
        // Another producer's resource keeps its identity.
        assert_eq!(
            exported(&groups[1]),
            s(&[
                ("service.name", "hello.world"),
                ("env", "prod"),
                ("region", "eu")
            ])
        );
        // A span with no resource is the exporter's own.
        assert_eq!(
            exported(&groups[2]),
            s(&[
                ("service.name", "prod-harness"),
                ("service.instance.id", "i-1"),
                ("env", "prod"),
                ("region", "eu"),
            ])
        );
    }

    #[test]
    fn a_json_attribute_keeps_its_key_order_and_null_becomes_an_empty_value() {
        let v = AttrValue::Json(r#"{"b": 1, "a": [1.5, null, "x", true], "n": {}}"#.into());
        assert_eq!(
            any(&v),
            Some(Any::KvList(vec![
                ("b".into(), Any::Int(1)),
                (
                    "a".into(),
                    Any::Array(vec![
                        Any::Double(1.5),
                        Any::Empty,
                        Any::Str("x".into()),
                        Any::Bool(true)
                    ])
                ),
                ("n".into(), Any::KvList(vec![])),
            ]))
        );
    }

    #[test]
    fn an_attribute_holding_an_integer_beyond_int64_is_left_out_as_the_python_exporter_drops_it() {
        for text in [
            "18446744073709551616",
            "[1, -9223372036854775809]",
            "{\"k\": [18446744073709551615]}",
        ] {
            assert_eq!(any(&AttrValue::Json(text.into())), None, "{text}");
        }
        let mut a = Attributes::default();
        a.set("big", AttrValue::Json("18446744073709551616".into()));
        a.set("kept", 1i64);
        assert_eq!(key_values(&a), vec![("kept", Any::Int(1))]);
    }

    #[test]
    fn protocol_names_and_content_types_are_the_exact_strings_receivers_compare() {
        assert_eq!(Encoding::from_protocol("http/json"), Some(Encoding::Json));
        assert_eq!(
            Encoding::from_protocol("http/protobuf"),
            Some(Encoding::Protobuf)
        );
        assert_eq!(Encoding::from_protocol("grpc"), None);
        assert_eq!(Encoding::Json.content_type(), "application/json");
        assert_eq!(Encoding::Protobuf.content_type(), "application/x-protobuf");
    }
}
