//! OTLP/JSON: an `ExportTraceServiceRequest` as the JSON Protobuf Encoding of
//! opentelemetry-proto `docs/specification.md` §"JSON Protobuf Encoding" writes it.
//!
//! That is the proto3 JSON mapping with OTLP's deviations: `traceId`, `spanId` and
//! `parentSpanId` are lowercase hex (not base64), enums are integers (never names), keys are
//! lowerCamelCase; int64 and fixed64 values (`startTimeUnixNano`, `intValue`, ...) are decimal
//! strings; non-finite doubles are the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
//!
//! The bytes are those `opentelemetry-exporter-otlp-json-file` 0.66b1's `FileSpanExporter`
//! writes for one batch, less its newline: members in `.proto` declaration order, fields at
//! their default value left out (but a set `AnyValue` member is always written, and `resource`,
//! `scope` and `status` always appear, `{}` when empty), compact separators, non-ASCII text as
//! `\uXXXX` escapes (`json.dumps`' `ensure_ascii`), floats as Python's `repr`. Two spellings
//! differ, both equivalent for any proto3 JSON reader and both needed by rotel, which refuses
//! the exporter's: an empty array or map keeps `"values":[]`, and an empty value (Python's
//! `None`) leaves `"value"` out of its `KeyValue` instead of writing `"value":{}`.

use super::{Any, ExportResource, Scope, groups, key_values};
use crate::json::python::{float_repr, write_str};
use crate::trace::record::{Event, Link, SpanRecord};

/// One `ExportTraceServiceRequest` as OTLP/JSON text, on one line.
pub fn encode(spans: &[SpanRecord], resource: &ExportResource, scope: &Scope) -> String {
    let mut o = String::with_capacity(256 + spans.len() * 512);
    o.push_str("{\"resourceSpans\":[");
    for (i, group) in groups(spans, resource).iter().enumerate() {
        comma(&mut o, i);
        o.push_str("{\"resource\":{");
        let attributes: Vec<(&str, Any)> = group
            .attributes
            .iter()
            .filter_map(|(k, v)| super::any(v).map(|a| (*k, a)))
            .collect();
        if !attributes.is_empty() {
            o.push_str("\"attributes\":");
            write_key_values(&mut o, &attributes);
        }
        o.push_str("},\"scopeSpans\":[{\"scope\":{");
        let mut first = true;
        for (key, value) in [("name", &scope.name), ("version", &scope.version)] {
            if !value.is_empty() {
                member(&mut o, &mut first, key);
                write_str(&mut o, value, true);
            }
        }
        o.push_str("},\"spans\":[");
        write_list(&mut o, &group.spans, |o, span| write_span(o, span));
        o.push_str("]}]");
        if !group.schema_url.is_empty() {
            o.push_str(",\"schemaUrl\":");
            write_str(&mut o, group.schema_url, true);
        }
        o.push('}');
    }
    o.push_str("]}");
    o
}

fn comma(o: &mut String, index: usize) {
    if index > 0 {
        o.push(',');
    }
}

/// `items`, each by `write`, comma-separated.
fn write_list<T>(o: &mut String, items: &[T], write: impl Fn(&mut String, &T)) {
    for (i, item) in items.iter().enumerate() {
        comma(o, i);
        write(o, item);
    }
}

/// Start the member `key` of an object being written.
fn member(o: &mut String, first: &mut bool, key: &str) {
    if !*first {
        o.push(',');
    }
    *first = false;
    o.push('"');
    o.push_str(key);
    o.push_str("\":");
}

/// `Span` (trace.proto), members in declaration order.
fn write_span(o: &mut String, span: &SpanRecord) {
    o.push_str(&format!(
        "{{\"traceId\":\"{}\",\"spanId\":\"{}\"",
        span.trace_id, span.span_id
    ));
    if !span.trace_state.is_empty() {
        o.push_str(",\"traceState\":");
        write_str(o, &span.trace_state.header(), true);
    }
    if let Some(parent) = span.parent_id {
        o.push_str(&format!(",\"parentSpanId\":\"{parent}\""));
    }
    if !span.name.is_empty() {
        o.push_str(",\"name\":");
        write_str(o, &span.name, true);
    }
    o.push_str(&format!(",\"kind\":{}", span.kind.otlp()));
    if span.start_ns != 0 {
        o.push_str(&format!(",\"startTimeUnixNano\":\"{}\"", span.start_ns));
    }
    if span.end_ns != 0 {
        o.push_str(&format!(",\"endTimeUnixNano\":\"{}\"", span.end_ns));
    }
    let attributes = key_values(&span.attributes);
    if !attributes.is_empty() {
        o.push_str(",\"attributes\":");
        write_key_values(o, &attributes);
    }
    if !span.events.is_empty() {
        o.push_str(",\"events\":[");
        write_list(o, &span.events, write_event);
        o.push(']');
    }
    if !span.links.is_empty() {
        o.push_str(",\"links\":[");
        write_list(o, &span.links, write_link);
        o.push(']');
    }
    o.push_str(",\"status\":{");
    let mut first = true;
    if let Some(message) = span.status.description.as_deref().filter(|m| !m.is_empty()) {
        member(o, &mut first, "message");
        write_str(o, message, true);
    }
    let code = span.status.code.otlp();
    if code != 0 {
        member(o, &mut first, "code");
        o.push_str(&code.to_string());
    }
    o.push_str("}}");
}

/// `Span.Event`.
fn write_event(o: &mut String, event: &Event) {
    o.push('{');
    let mut first = true;
    if event.time_ns != 0 {
        member(o, &mut first, "timeUnixNano");
        o.push_str(&format!("\"{}\"", event.time_ns));
    }
    if !event.name.is_empty() {
        member(o, &mut first, "name");
        write_str(o, &event.name, true);
    }
    let attributes = key_values(&event.attributes);
    if !attributes.is_empty() {
        member(o, &mut first, "attributes");
        write_key_values(o, &attributes);
    }
    o.push('}');
}

/// `Span.Link`.
fn write_link(o: &mut String, link: &Link) {
    o.push_str(&format!(
        "{{\"traceId\":\"{}\",\"spanId\":\"{}\"",
        link.trace_id, link.span_id
    ));
    if !link.trace_state.is_empty() {
        o.push_str(",\"traceState\":");
        write_str(o, &link.trace_state.header(), true);
    }
    let attributes = key_values(&link.attributes);
    if !attributes.is_empty() {
        o.push_str(",\"attributes\":");
        write_key_values(o, &attributes);
    }
    o.push('}');
}

/// `repeated KeyValue` (common.proto).
fn write_key_values(o: &mut String, values: &[(&str, Any)]) {
    o.push('[');
    write_list(o, values, |o, (key, value)| write_key_value(o, key, value));
    o.push(']');
}

/// A `KeyValue`. An empty value (Python's `None`) leaves `value` out: an unset message field
/// is the same empty `AnyValue` to every proto3 JSON reader, and rotel refuses `"value":{}`.
fn write_key_value(o: &mut String, key: &str, value: &Any) {
    o.push('{');
    let mut first = true;
    if !key.is_empty() {
        member(o, &mut first, "key");
        write_str(o, key, true);
    }
    if *value != Any::Empty {
        member(o, &mut first, "value");
        write_any(o, value);
    }
    o.push('}');
}

/// `AnyValue`: exactly one member, written even at its default value (it is a `oneof`).
fn write_any(o: &mut String, value: &Any) {
    match value {
        Any::Empty => o.push_str("{}"),
        Any::Str(s) => {
            o.push_str("{\"stringValue\":");
            write_str(o, s, true);
            o.push('}');
        }
        Any::Bool(b) => o.push_str(if *b {
            "{\"boolValue\":true}"
        } else {
            "{\"boolValue\":false}"
        }),
        Any::Int(i) => o.push_str(&format!("{{\"intValue\":\"{i}\"}}")),
        Any::Double(x) => {
            o.push_str("{\"doubleValue\":");
            if x.is_finite() {
                o.push_str(&float_repr(*x));
            } else {
                // proto3 JSON spells the non-finite doubles as strings.
                o.push('"');
                o.push_str(&float_repr(*x));
                o.push('"');
            }
            o.push('}');
        }
        // `values` is written even when empty: `[]` and an absent field are the same to a
        // proto3 JSON reader, and rotel refuses `"arrayValue":{}`.
        Any::Array(items) => {
            o.push_str("{\"arrayValue\":{\"values\":[");
            write_list(o, items, write_any);
            o.push_str("]}}");
        }
        Any::KvList(entries) => {
            o.push_str("{\"kvlistValue\":{\"values\":[");
            write_list(o, entries, |o, (key, value)| write_key_value(o, key, value));
            o.push_str("]}}");
        }
    }
}
