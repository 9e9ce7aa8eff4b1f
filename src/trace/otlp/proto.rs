//! Binary protobuf: an `ExportTraceServiceRequest` in the proto3 wire format, written by hand.
//!
//! The wire format is protobuf's "Encoding" guide: each field is a key (`field_number << 3 |
//! wire_type`, a varint) and a value: a base-128 varint (wire type 0: enums, `uint32`, `int64`
//! as its 64-bit two's complement), 8 little-endian bytes (type 1: `fixed64`, `double`), a
//! varint length and that many bytes (type 2: strings, bytes, embedded messages) or 4
//! little-endian bytes (type 5: `fixed32`). Fields are written in field-number order, as the
//! upb runtime under the Python exporter serialises them; proto3 scalars at their default value
//! (`""`, `0`) are left out, except a `oneof` member (`AnyValue`), which is written whenever
//! set. Embedded messages the Python exporter always sets (`Resource`, `InstrumentationScope`,
//! `Status`, `KeyValue.value`) are always written, empty when they hold nothing.
//!
//! Field numbers, from opentelemetry-proto v1.11.0:
//!
//! | message (file) | fields written |
//! |---|---|
//! | `ExportTraceServiceRequest` (collector/trace/v1/trace_service.proto) | 1 `resource_spans` |
//! | `ResourceSpans` (trace/v1/trace.proto) | 1 `resource`, 2 `scope_spans`, 3 `schema_url` |
//! | `ScopeSpans` | 1 `scope`, 2 `spans` |
//! | `Span` | 1 `trace_id`, 2 `span_id`, 3 `trace_state`, 4 `parent_span_id`, 5 `name`, 6 `kind`, 7 `start_time_unix_nano` (fixed64), 8 `end_time_unix_nano` (fixed64), 9 `attributes`, 11 `events`, 13 `links`, 15 `status` |
//! | `Span.Event` | 1 `time_unix_nano` (fixed64), 2 `name`, 3 `attributes` |
//! | `Span.Link` | 1 `trace_id`, 2 `span_id`, 3 `trace_state`, 4 `attributes` |
//! | `Status` | 2 `message`, 3 `code` |
//! | `Resource` (resource/v1/resource.proto) | 1 `attributes` |
//! | `InstrumentationScope` (common/v1/common.proto) | 1 `name`, 2 `version` |
//! | `KeyValue` | 1 `key`, 2 `value` |
//! | `AnyValue` | 1 `string_value`, 2 `bool_value`, 3 `int_value`, 4 `double_value`, 5 `array_value`, 6 `kvlist_value` |
//! | `ArrayValue`, `KeyValueList` | 1 `values` |

use super::{ExportResource, Scope, Writer, write_request};
use crate::trace::record::SpanRecord;

/// One `ExportTraceServiceRequest` as binary protobuf.
pub fn encode(spans: &[SpanRecord], resource: &ExportResource, scope: &Scope) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + spans.len() * 256);
    write_request(&mut out, spans, resource, scope);
    out
}

/// Protobuf wire types ("Encoding" guide, §"Message Structure").
const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

fn varint_field(out: &mut Vec<u8>, field: u32, n: u64) {
    key(out, field, VARINT);
    varint(out, n);
}

fn fixed64(out: &mut Vec<u8>, field: u32, n: u64) {
    key(out, field, I64);
    out.extend_from_slice(&n.to_le_bytes());
}

/// A length-delimited field holding `bytes`, written even when empty.
fn bytes_always(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    key(out, field, LEN);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// An embedded message, always written (empty when `body` writes nothing). Its length comes
/// before it, so the body is written in place after a one-byte length, which is mended once
/// the body is done: rewritten when under 128 bytes (most attributes), else widened to its
/// varint, moving the body along. Either way no buffer is made per message (two a key-value),
/// and the bytes are those of writing the body first and the length before it.
fn message(out: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    key(out, field, LEN);
    let at = out.len();
    out.push(0);
    body(out);
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        varint(&mut prefix, len as u64);
        out.splice(at..=at, prefix);
    }
}

impl Writer for Vec<u8> {
    /// `KeyValue.value` is always set by the Python exporter, to an empty `AnyValue` for `None`.
    const EMPTY_VALUE: bool = true;

    fn message(&mut self, field: u32, _: &str, body: impl FnOnce(&mut Vec<u8>)) {
        message(self, field, body);
    }

    fn repeated<T>(
        &mut self,
        field: u32,
        _: &str,
        items: &[T],
        _: bool,
        body: impl Fn(&mut Vec<u8>, &T),
    ) {
        for item in items {
            message(self, field, |m| body(m, item));
        }
    }

    fn text(&mut self, field: u32, _: &str, s: &str) {
        bytes_always(self, field, s.as_bytes());
    }

    fn id(&mut self, field: u32, _: &str, id: &[u8]) {
        bytes_always(self, field, id);
    }

    fn time(&mut self, field: u32, _: &str, ns: u64) {
        if ns != 0 {
            fixed64(self, field, ns);
        }
    }

    fn enumeration(&mut self, field: u32, _: &str, n: u8) {
        varint_field(self, field, u64::from(n));
    }

    fn bool(&mut self, field: u32, _: &str, b: bool) {
        varint_field(self, field, u64::from(b));
    }

    /// int64 is the varint of its 64-bit two's complement (negative: ten bytes).
    fn int64(&mut self, field: u32, _: &str, i: i64) {
        varint_field(self, field, i as u64);
    }

    fn double(&mut self, field: u32, _: &str, x: f64) {
        fixed64(self, field, x.to_bits());
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Any, any_value};
    use super::*;

    #[test]
    fn an_embedded_message_is_its_key_its_varint_length_and_its_body_at_every_length_boundary() {
        for len in [0usize, 1, 127, 128, 129, 16_383, 16_384, 300_000] {
            let body: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut written = vec![0xAA];
            message(&mut written, 11, |m| m.extend_from_slice(&body));
            let mut expected = vec![0xAA];
            bytes_always(&mut expected, 11, &body);
            assert_eq!(written, expected, "body of {len} bytes");
        }
    }

    #[test]
    fn varints_are_base_128_little_endian_groups() {
        let enc = |n: u64| {
            let mut v = Vec::new();
            varint(&mut v, n);
            v
        };
        assert_eq!(enc(0), [0x00]);
        assert_eq!(enc(1), [0x01]);
        assert_eq!(enc(127), [0x7f]);
        assert_eq!(enc(128), [0x80, 0x01]);
        assert_eq!(enc(150), [0x96, 0x01]); // the "Encoding" guide's own example
        assert_eq!(enc(300), [0xac, 0x02]);
        assert_eq!(
            enc(u64::MAX),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
    }

    #[test]
    fn a_negative_int64_takes_ten_bytes_as_its_twos_complement() {
        let mut v = Vec::new();
        any_value(&mut v, &Any::Int(-1));
        assert_eq!(
            v,
            [
                0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
            ]
        );
    }

    #[test]
    fn a_oneof_member_at_its_default_value_is_still_written() {
        let written = |value: Any| {
            let mut v = Vec::new();
            any_value(&mut v, &value);
            v
        };
        assert_eq!(written(Any::Str("".into())), [0x0a, 0x00]);
        assert_eq!(written(Any::Bool(false)), [0x10, 0x00]);
        assert_eq!(written(Any::Int(0)), [0x18, 0x00]);
        assert_eq!(written(Any::Double(0.0)), [0x21, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(written(Any::Array(vec![])), [0x2a, 0x00]);
        assert_eq!(written(Any::Empty), [] as [u8; 0]);
    }
}
