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

use super::{ExportResource, Scope, Writer, write_request};
use crate::json::python::write_str;
use crate::trace::record::SpanRecord;
use crate::trace::span_json::write_double;

/// One `ExportTraceServiceRequest` as OTLP/JSON text, on one line.
pub fn encode(spans: &[SpanRecord], resource: &ExportResource, scope: &Scope) -> String {
    let mut w = Json {
        o: String::with_capacity(256 + spans.len() * 512),
        first: true,
    };
    w.object(|w| write_request(w, spans, resource, scope));
    w.o
}

/// The text written so far, and whether the object being written has no member yet.
struct Json {
    o: String,
    first: bool,
}

impl Json {
    /// Start the member `name` of the object being written.
    fn member(&mut self, name: &str) {
        if !self.first {
            self.o.push(',');
        }
        self.first = false;
        self.o.push('"');
        self.o.push_str(name);
        self.o.push_str("\":");
    }

    /// An object whose members `body` writes.
    fn object(&mut self, body: impl FnOnce(&mut Json)) {
        self.o.push('{');
        self.first = true;
        body(self);
        self.o.push('}');
        self.first = false;
    }
}

impl Writer for Json {
    /// An empty value leaves `value` out of its `KeyValue`: an unset message field is the same
    /// empty `AnyValue` to every proto3 JSON reader, and rotel refuses `"value":{}`.
    const EMPTY_VALUE: bool = false;

    fn message(&mut self, _: u32, name: &str, body: impl FnOnce(&mut Json)) {
        self.member(name);
        self.object(body);
    }

    fn repeated<T>(
        &mut self,
        _: u32,
        name: &str,
        items: &[T],
        always: bool,
        body: impl Fn(&mut Json, &T),
    ) {
        if items.is_empty() && !always {
            return;
        }
        self.member(name);
        self.o.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.o.push(',');
            }
            self.object(|w| body(w, item));
        }
        self.o.push(']');
    }

    fn text(&mut self, _: u32, name: &str, s: &str) {
        self.member(name);
        write_str(&mut self.o, s, true);
    }

    /// Lowercase hex, not proto3 JSON's base64.
    fn id(&mut self, _: u32, name: &str, id: &[u8]) {
        self.member(name);
        self.o.push_str(&format!("\"{}\"", crate::ids::hex(id)));
    }

    fn time(&mut self, _: u32, name: &str, ns: u64) {
        if ns != 0 {
            self.member(name);
            self.o.push_str(&format!("\"{ns}\""));
        }
    }

    fn enumeration(&mut self, _: u32, name: &str, n: u8) {
        self.member(name);
        self.o.push_str(&n.to_string());
    }

    fn bool(&mut self, _: u32, name: &str, b: bool) {
        self.member(name);
        self.o.push_str(if b { "true" } else { "false" });
    }

    fn int64(&mut self, _: u32, name: &str, i: i64) {
        self.member(name);
        self.o.push_str(&format!("\"{i}\""));
    }

    fn double(&mut self, _: u32, name: &str, x: f64) {
        self.member(name);
        write_double(&mut self.o, x);
    }
}
