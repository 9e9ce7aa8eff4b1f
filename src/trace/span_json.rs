//! Span JSON: the text OpenTelemetry Python's `ReadableSpan.to_json(indent=None)` writes.
//!
//! A span crosses the wire as this JSON *string*, not as a structured value, because A2A's
//! protobuf `Struct` would turn every integer into a double. ddwire writes
//! exactly the bytes the Python SDK (opentelemetry-sdk 1.45) would write for the same content
//! and reads any valid variant of them (`indent=4`, ids with or without `0x`, upper-case hex).
//!
//! Shape, in key order (see `fixtures/spans/README.md` for the SDK code paths):
//! `{"name", "context": {"trace_id": "0x…", "span_id": "0x…", "trace_state": "<repr>"},
//! "kind": "SpanKind.X", "parent_id": "0x…"|null, "start_time", "end_time",
//! "status": {"status_code"[, "description"]}, "attributes", "events", "links",
//! "resource": {"attributes", "schema_url"}}`, written by `json.dumps` with its default
//! separators `", "` and `": "` and `ensure_ascii=True`.

use super::TraceError;
use super::context::{SpanId, TraceId, TraceState};
use super::record::{
    AttrValue, Attributes, Event, Link, Resource, SpanKind, SpanRecord, Status, StatusCode,
};

type Result<T, E = TraceError> = std::result::Result<T, E>;
use crate::json::python::{self, Style, float_repr, write_str};
use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use std::fmt;
use std::fmt::Write as _;

/// Write a span as one line of span JSON.
pub fn to_json(span: &SpanRecord) -> String {
    // Sized for a span with a few attributes and events, so that writing one seldom grows it.
    let mut o = String::with_capacity(1024);
    o.push_str("{\"name\": ");
    write_str(&mut o, &span.name, true);
    o.push_str(", \"context\": ");
    write_context(&mut o, span.trace_id, span.span_id, &span.trace_state);
    o.push_str(", \"kind\": \"SpanKind.");
    o.push_str(span.kind.name());
    o.push_str("\", \"parent_id\": ");
    match span.parent_id {
        Some(p) => {
            let _ = write!(o, "\"0x{p}\"");
        }
        None => o.push_str("null"),
    }
    // The SDK writes `null` for a falsy (zero) start or end time.
    for (key, ns) in [("start_time", span.start_ns), ("end_time", span.end_ns)] {
        let _ = write!(o, ", \"{key}\": ");
        if ns == 0 {
            o.push_str("null");
        } else {
            o.push('"');
            o.push_str(&crate::time::otel_time(ns));
            o.push('"');
        }
    }
    o.push_str(", \"status\": {\"status_code\": \"");
    o.push_str(span.status.code.name());
    o.push('"');
    if let Some(d) = span.status.description.as_deref().filter(|d| !d.is_empty()) {
        o.push_str(", \"description\": ");
        write_str(&mut o, d, true);
    }
    o.push_str("}, \"attributes\": ");
    write_attributes(&mut o, &span.attributes);
    o.push_str(", \"events\": ");
    list(&mut o, &span.events, |o, e| {
        o.push_str("{\"name\": ");
        write_str(o, &e.name, true);
        o.push_str(", \"timestamp\": \"");
        o.push_str(&crate::time::otel_time(e.time_ns));
        o.push_str("\", \"attributes\": ");
        write_attributes(o, &e.attributes);
        o.push('}');
    });
    o.push_str(", \"links\": ");
    list(&mut o, &span.links, |o, l| {
        o.push_str("{\"context\": ");
        write_context(o, l.trace_id, l.span_id, &l.trace_state);
        o.push_str(", \"attributes\": ");
        write_attributes(o, &l.attributes);
        o.push('}');
    });
    o.push_str(", \"resource\": {\"attributes\": ");
    write_attributes(&mut o, &span.resource.attributes);
    o.push_str(", \"schema_url\": ");
    write_str(&mut o, &span.resource.schema_url, true);
    o.push_str("}}");
    o
}

fn write_context(o: &mut String, trace_id: TraceId, span_id: SpanId, state: &TraceState) {
    let _ = write!(
        o,
        "{{\"trace_id\": \"0x{trace_id}\", \"span_id\": \"0x{span_id}\", \"trace_state\": "
    );
    write_str(o, &state.python_repr(), true);
    o.push('}');
}

fn write_attributes(o: &mut String, attributes: &Attributes) {
    o.push('{');
    for (i, (k, v)) in attributes.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        write_str(o, k, true);
        o.push_str(": ");
        write_attr_value(o, v);
    }
    o.push('}');
}

/// `items` as a JSON array, each written by `each`.
fn list<T>(o: &mut String, items: &[T], mut each: impl FnMut(&mut String, &T)) {
    o.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        each(o, item);
    }
    o.push(']');
}

fn write_attr_value(o: &mut String, v: &AttrValue) {
    match v {
        AttrValue::String(s) => write_str(o, s, true),
        AttrValue::Bool(b) => o.push_str(if *b { "true" } else { "false" }),
        AttrValue::Int(i) => o.push_str(&i.to_string()),
        AttrValue::Double(x) => write_double(o, *x),
        AttrValue::StringArray(a) => list(o, a, |o, s| write_str(o, s, true)),
        AttrValue::BoolArray(a) => list(o, a, |o, b| o.push_str(if *b { "true" } else { "false" })),
        AttrValue::IntArray(a) => list(o, a, |o, i| o.push_str(&i.to_string())),
        AttrValue::DoubleArray(a) => list(o, a, |o, x| write_double(o, *x)),
        AttrValue::Json(text) => o.push_str(text),
    }
}

/// A double attribute value. A finite one is spelled as Python's `float.__repr__`; Python's
/// `json.dumps` would write infinity and NaN as the bare words `Infinity` and `NaN`, which are
/// not JSON and which no strict reader (this one included) accepts, so they are written as the
/// strings `"Infinity"`, `"-Infinity"` and `"NaN"`, as OTLP/JSON spells them.
pub(crate) fn write_double(o: &mut String, x: f64) {
    if x.is_finite() {
        o.push_str(&float_repr(x));
    } else {
        o.push('"');
        o.push_str(&float_repr(x));
        o.push('"');
    }
}

/// The span as its stored line reads back: what `from_json(&to_json(span))` returns, without
/// writing and reading the whole line when only its times would change.
///
/// A line keeps each time as OpenTelemetry Python writes it, whole microseconds (rounded as
/// CPython's double arithmetic rounds), so an exporter handed the tracer's own records must
/// send those times to send what the run store holds. Everything else of an ordinary span
/// reads back as it was; a span holding anything a line spells differently (a raw JSON or
/// non-finite attribute value, an empty array, whose element type a line cannot tell, or an
/// empty status description, which a line leaves out) takes the whole round trip.
#[cfg(test)]
pub(crate) fn as_stored(span: &SpanRecord) -> SpanRecord {
    into_stored(span.clone())
}

/// [`as_stored`], for a span the caller is done with.
pub(crate) fn into_stored(mut span: SpanRecord) -> SpanRecord {
    if !reads_back_but_for_times(&span) {
        // A line the tracer wrote always reads back; the fallback is for a span that could not.
        return from_json(&to_json(&span)).unwrap_or(span);
    }
    span.start_ns = stored_time(span.start_ns);
    span.end_ns = stored_time(span.end_ns);
    for event in &mut span.events {
        event.time_ns = stored_time(event.time_ns);
    }
    span
}

/// A time as a line writes and reads it (0, unknown, is `null` and stays 0).
fn stored_time(ns: u64) -> u64 {
    if ns == 0 {
        return 0;
    }
    crate::time::otel_time_read_back(ns)
}

/// Whether every value of `span` but its times reads back from its line as it is.
fn reads_back_but_for_times(span: &SpanRecord) -> bool {
    fn plain(attributes: &Attributes) -> bool {
        attributes.iter().all(|(_, v)| match v {
            AttrValue::Json(_) => false,
            AttrValue::Double(x) => x.is_finite(),
            AttrValue::DoubleArray(a) => !a.is_empty() && a.iter().all(|x| x.is_finite()),
            AttrValue::StringArray(a) => !a.is_empty(),
            AttrValue::BoolArray(a) => !a.is_empty(),
            AttrValue::IntArray(a) => !a.is_empty(),
            AttrValue::String(_) | AttrValue::Bool(_) | AttrValue::Int(_) => true,
        })
    }
    span.status.description.as_deref() != Some("")
        && plain(&span.attributes)
        && plain(&span.resource.attributes)
        && span.events.iter().all(|e| plain(&e.attributes))
        && span.links.iter().all(|l| plain(&l.attributes))
}

/// Read one span JSON document (any whitespace; ids with or without `0x`).
pub fn from_json(text: &str) -> Result<SpanRecord> {
    crate::json::check_depth(text.as_bytes(), 16)
        .map_err(|e| TraceError::span_json(None, e.to_string()))?;
    let doc: SpanDoc =
        serde_json::from_str(text).map_err(|e| TraceError::span_json(None, e.to_string()))?;
    doc.into_record()
}

#[derive(Deserialize)]
struct SpanDoc {
    name: String,
    context: ContextDoc,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    parent_id: Option<String>,
    #[serde(default)]
    start_time: Option<String>,
    #[serde(default)]
    end_time: Option<String>,
    #[serde(default)]
    status: Option<StatusDoc>,
    #[serde(default)]
    attributes: Option<OrderedMap>,
    #[serde(default)]
    events: Vec<EventDoc>,
    #[serde(default)]
    links: Vec<LinkDoc>,
    #[serde(default)]
    resource: Option<ResourceDoc>,
}

#[derive(Deserialize)]
struct ContextDoc {
    trace_id: String,
    span_id: String,
    #[serde(default)]
    trace_state: Option<String>,
}

#[derive(Deserialize)]
struct StatusDoc {
    status_code: String,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
struct EventDoc {
    name: String,
    timestamp: String,
    #[serde(default)]
    attributes: Option<OrderedMap>,
}

#[derive(Deserialize)]
struct LinkDoc {
    context: ContextDoc,
    #[serde(default)]
    attributes: Option<OrderedMap>,
}

#[derive(Deserialize)]
struct ResourceDoc {
    #[serde(default)]
    attributes: Option<OrderedMap>,
    #[serde(default)]
    schema_url: Option<String>,
}

/// A JSON object read in document order (serde_json's `Map` would sort it), each value kept
/// as its raw text.
struct OrderedMap(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for OrderedMap {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OrderedMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of attributes")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<OrderedMap, A::Error> {
                let mut out: Vec<(String, Box<RawValue>)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    // A repeated key keeps its first position and its last value, as a dict.
                    match out.iter_mut().find(|(key, _)| *key == k) {
                        Some(slot) => slot.1 = v,
                        None => out.push((k, v)),
                    }
                }
                Ok(OrderedMap(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl SpanDoc {
    fn into_record(self) -> Result<SpanRecord> {
        let (trace_id, span_id, trace_state) = read_context(&self.context)?;
        let parent_id = self
            .parent_id
            .as_deref()
            .map(|p| read_span_id(p, "parent_id"))
            .transpose()?;
        let kind = match self.kind.as_deref() {
            None => SpanKind::Internal,
            Some(k) => {
                SpanKind::from_name(k.strip_prefix("SpanKind.").unwrap_or(k)).ok_or_else(|| {
                    TraceError::span_json(Some("kind"), format!("unknown kind {k:?}"))
                })?
            }
        };
        let status = match self.status {
            None => Status::default(),
            Some(s) => Status {
                code: match s.status_code.as_str() {
                    "UNSET" => StatusCode::Unset,
                    "OK" => StatusCode::Ok,
                    "ERROR" => StatusCode::Error,
                    other => {
                        return Err(TraceError::span_json(
                            Some("status_code"),
                            format!("unknown status_code {other:?}"),
                        ));
                    }
                },
                description: s.description,
            },
        };
        let mut events = Vec::with_capacity(self.events.len());
        for e in self.events {
            events.push(Event {
                time_ns: read_time(Some(&e.timestamp), "event timestamp")?,
                attributes: read_attributes(e.attributes)?,
                name: e.name,
            });
        }
        let mut links = Vec::with_capacity(self.links.len());
        for l in self.links {
            let (trace_id, span_id, trace_state) = read_context(&l.context)?;
            links.push(Link {
                trace_id,
                span_id,
                trace_state,
                attributes: read_attributes(l.attributes)?,
            });
        }
        let resource = match self.resource {
            None => Resource::default(),
            Some(r) => Resource {
                attributes: read_attributes(r.attributes)?,
                schema_url: r.schema_url.unwrap_or_default(),
            },
        };
        Ok(SpanRecord {
            name: self.name,
            trace_id,
            span_id,
            parent_id,
            trace_state,
            kind,
            start_ns: read_time(self.start_time.as_deref(), "start_time")?,
            end_ns: read_time(self.end_time.as_deref(), "end_time")?,
            status,
            attributes: read_attributes(self.attributes)?,
            events,
            links,
            resource: std::sync::Arc::new(resource),
        })
    }
}

fn read_context(c: &ContextDoc) -> Result<(TraceId, SpanId, TraceState)> {
    let trace_id = read_hex(&c.trace_id, 32).map(TraceId).ok_or_else(|| {
        TraceError::span_json(
            Some("trace_id"),
            format!("trace_id {:?} is not 32 hex digits", c.trace_id),
        )
    })?;
    let span_id = read_span_id(&c.span_id, "span_id")?;
    let trace_state = match c.trace_state.as_deref() {
        None => TraceState::default(),
        Some(repr) => parse_trace_state_repr(repr).ok_or_else(|| {
            TraceError::span_json(
                Some("trace_state"),
                format!("trace_state {repr:?} is not a TraceState repr"),
            )
        })?,
    };
    Ok((trace_id, span_id, trace_state))
}

/// An id of exactly `digits` hex digits, with or without `0x`.
fn read_hex(s: &str, digits: usize) -> Option<u128> {
    let hex = s.strip_prefix("0x").unwrap_or(s);
    // `from_str_radix` would take a leading `+`: check the digits first.
    (hex.len() == digits && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u128::from_str_radix(hex, 16).ok())
        .flatten()
}

fn read_span_id(s: &str, what: &'static str) -> Result<SpanId> {
    read_hex(s, 16).map(|id| SpanId(id as u64)).ok_or_else(|| {
        TraceError::span_json(Some(what), format!("{what} {s:?} is not 16 hex digits"))
    })
}

fn read_time(s: Option<&str>, what: &'static str) -> Result<u64> {
    match s {
        None => Ok(0),
        Some(text) => crate::time::parse_rfc3339(text)
            .and_then(|ns| u64::try_from(ns).ok())
            .ok_or_else(|| {
                TraceError::span_json(
                    Some(what),
                    format!("{what} {text:?} is not an ISO 8601 UTC time"),
                )
            }),
    }
}

fn read_attributes(map: Option<OrderedMap>) -> Result<Attributes> {
    let mut out = Attributes::default();
    for (key, raw) in map.map(|m| m.0).unwrap_or_default() {
        let parsed = serde_json::from_str::<Value>(raw.get()).ok();
        // `1e999` parses, but would be written back as `Infinity`, which no reader accepts.
        if let Some(found) = parsed.as_ref().and_then(crate::json::non_finite) {
            return Err(TraceError::span_json(
                Some("attributes"),
                format!(
                    "attribute {key:?} holds the number {}, which is not finite",
                    found.literal
                ),
            ));
        }
        let typed = parsed.as_ref().and_then(attr_value);
        let value = match typed {
            Some(v) => v,
            None => {
                AttrValue::Json(python::reformat(raw.get(), Style::DEFAULT).ok_or_else(|| {
                    TraceError::span_json(
                        Some("attributes"),
                        format!("attribute {key:?} is not JSON"),
                    )
                })?)
            }
        };
        // Pushed, not `set`: a document is read as written, empty keys and all.
        out.0.push((key, value));
    }
    Ok(out)
}

/// A JSON value as one of the typed attribute variants (a scalar, or a homogeneous array of
/// them), if it is one; `None` for anything that needs [`AttrValue::Json`].
pub(crate) fn attr_value(v: &Value) -> Option<AttrValue> {
    fn int(n: &serde_json::Number) -> Option<i64> {
        let text = n.to_string();
        if crate::json::python::is_float_literal(&text) {
            None
        } else {
            text.parse().ok()
        }
    }
    fn double(n: &serde_json::Number) -> Option<f64> {
        let text = n.to_string();
        if crate::json::python::is_float_literal(&text) {
            text.parse().ok()
        } else {
            None
        }
    }
    Some(match v {
        Value::String(s) => AttrValue::String(s.clone()),
        Value::Bool(b) => AttrValue::Bool(*b),
        Value::Number(n) => match int(n) {
            Some(i) => AttrValue::Int(i),
            None => AttrValue::Double(double(n)?),
        },
        Value::Array(items) => match items.first() {
            None | Some(Value::String(_)) => AttrValue::StringArray(
                items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string))
                    .collect::<Option<_>>()?,
            ),
            Some(Value::Bool(_)) => {
                AttrValue::BoolArray(items.iter().map(Value::as_bool).collect::<Option<_>>()?)
            }
            Some(Value::Number(first)) if int(first).is_some() => AttrValue::IntArray(
                items
                    .iter()
                    .map(|i| i.as_number().and_then(int))
                    .collect::<Option<_>>()?,
            ),
            Some(Value::Number(_)) => AttrValue::DoubleArray(
                items
                    .iter()
                    .map(|i| i.as_number().and_then(double))
                    .collect::<Option<_>>()?,
            ),
            _ => return None,
        },
        Value::Null | Value::Object(_) => return None,
    })
}

/// Read back `repr(TraceState)`: a Python list of `'{key=k, value=v}'` strings.
pub(crate) fn parse_trace_state_repr(repr: &str) -> Option<TraceState> {
    let inner = repr.trim().strip_prefix('[')?.strip_suffix(']')?;
    let mut members = Vec::new();
    let mut rest = inner.trim_start();
    while !rest.is_empty() {
        let (item, after) = read_py_str(rest)?;
        let body = item.strip_prefix("{key=")?.strip_suffix('}')?;
        let (k, v) = body.split_once(", value=")?;
        members.push((k.to_string(), v.to_string()));
        rest = after.trim_start();
        if let Some(after_comma) = rest.strip_prefix(',') {
            rest = after_comma.trim_start();
        } else if !rest.is_empty() {
            return None;
        }
    }
    Some(TraceState(members))
}

/// One Python string literal (`'…'` or `"…"`, with `\\`, `\'`, `\"`, `\n`, `\r`, `\t`,
/// `\xNN` escapes): its value and the text after it.
fn read_py_str(s: &str) -> Option<(String, &str)> {
    let quote = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let mut out = String::new();
    let mut chars = s[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                let (_, e) = chars.next()?;
                match e {
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'x' => {
                        let h: String = [chars.next()?.1, chars.next()?.1].iter().collect();
                        out.push(char::from_u32(u32::from_str_radix(&h, 16).ok()?)?);
                    }
                    other => out.push(other),
                }
            }
            c if c == quote => return Some((out, &s[1 + i + 1..])),
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_span_with_nothing_set_is_written_as_the_sdk_writes_it() {
        let span = SpanRecord {
            name: "root".into(),
            trace_id: TraceId(0x5a18),
            span_id: SpanId(0x2f2a),
            parent_id: None,
            trace_state: TraceState::default(),
            kind: SpanKind::Internal,
            start_ns: 1_700_000_000_000_000_000,
            end_ns: 1_700_000_000_000_001_000,
            status: Status::default(),
            attributes: Attributes::default(),
            events: vec![],
            links: vec![],
            resource: Default::default(),
        };
        let json = to_json(&span);
        assert_eq!(
            json,
            "{\"name\": \"root\", \"context\": {\"trace_id\": \"0x00000000000000000000000000005a18\", \
             \"span_id\": \"0x0000000000002f2a\", \"trace_state\": \"[]\"}, \"kind\": \"SpanKind.INTERNAL\", \
             \"parent_id\": null, \"start_time\": \"2023-11-14T22:13:20.000000Z\", \"end_time\": \
             \"2023-11-14T22:13:20.000001Z\", \"status\": {\"status_code\": \"UNSET\"}, \"attributes\": {}, \
             \"events\": [], \"links\": [], \"resource\": {\"attributes\": {}, \"schema_url\": \"\"}}"
        );
        assert_eq!(from_json(&json).unwrap(), span);
    }

    /// A span of every kind of value the tracer records, from `seed`: times anywhere in
    /// u64's nanoseconds (beyond 2106 too, where a line's microseconds drift), the rounding
    /// edges of a microsecond, and now and then what a line spells differently.
    fn random_span(seed: u64) -> SpanRecord {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let time = |next: &mut dyn FnMut() -> u64| match next() % 5 {
            0 => 0,
            1 => next(),
            2 => 1_700_000_000_000_000_000 + next() % 1_000_000_000,
            3 => {
                (1_600_000_000 + next() % 1_000_000_000) * 1_000_000_000
                    + 999_999_500
                    + next() % 500
            }
            _ => 1_764_000_000_000_000_000 + (next() % 10_000) * 1_000 + 499 + next() % 3,
        };
        let value = |next: &mut dyn FnMut() -> u64| -> AttrValue {
            let x = f64::from_bits(next());
            match next() % 12 {
                0 => AttrValue::String(format!("s{}\u{e9}\"", next() % 100)),
                1 => AttrValue::Bool(next().is_multiple_of(2)),
                2 => AttrValue::Int(next() as i64),
                3 => AttrValue::Double(x),
                4 => AttrValue::Double((next() % 1000) as f64 / 7.0),
                5 => AttrValue::StringArray((0..next() % 3).map(|i| format!("v{i}")).collect()),
                6 => AttrValue::IntArray((0..next() % 3).map(|i| i as i64 - 1).collect()),
                7 => AttrValue::BoolArray((0..next() % 3).map(|i| i == 1).collect()),
                8 => AttrValue::DoubleArray((0..next() % 3).map(|i| i as f64 + 0.5).collect()),
                9 => AttrValue::Json("{\"b\": 1, \"a\": [1, null]}".into()),
                _ => AttrValue::Int((next() % 100) as i64),
            }
        };
        let attributes = |next: &mut dyn FnMut() -> u64| {
            let mut a = Attributes::default();
            for i in 0..next() % 4 {
                a.set(format!("k{i}"), value(next));
            }
            a
        };
        let start_ns = time(&mut next);
        let end_ns = time(&mut next);
        let events = (0..next() % 3)
            .map(|i| Event {
                name: format!("e{i}"),
                time_ns: time(&mut next).max(1),
                attributes: attributes(&mut next),
            })
            .collect();
        let links = (0..next() % 2)
            .map(|_| Link {
                trace_id: TraceId(u128::from(next()) << 64 | u128::from(next()) | 1),
                span_id: SpanId(next() | 1),
                trace_state: TraceState(vec![("rojo".into(), "00f067aa0ba902b7".into())]),
                attributes: attributes(&mut next),
            })
            .collect();
        let code = [StatusCode::Unset, StatusCode::Ok, StatusCode::Error][(next() % 3) as usize];
        let description = match next() % 3 {
            0 => None,
            1 => Some(String::new()),
            _ => Some("Output failed the grounding linter".into()),
        };
        SpanRecord {
            name: "invoke_agent".into(),
            trace_id: TraceId(u128::from(next()) << 64 | u128::from(next()) | 1),
            span_id: SpanId(next() | 1),
            parent_id: next().is_multiple_of(2).then(|| SpanId(next() | 1)),
            trace_state: TraceState::default(),
            kind: SpanKind::Internal,
            start_ns,
            end_ns,
            status: Status { code, description },
            attributes: attributes(&mut next),
            events,
            links,
            resource: std::sync::Arc::new(Resource {
                attributes: attributes(&mut next),
                schema_url: String::new(),
            }),
        }
    }

    #[test]
    fn a_span_as_stored_is_what_its_stored_line_reads_back() {
        let mut fast = 0;
        for seed in 0..5_000 {
            let span = random_span(seed);
            let read_back = from_json(&to_json(&span)).unwrap();
            let stored = as_stored(&span);
            // NaN is never equal to itself: compare such spans by their lines.
            if to_json(&stored) != to_json(&read_back) || (stored != read_back && stored == stored)
            {
                panic!("seed {seed}: {span:?}\nas stored {stored:?}\nread back {read_back:?}");
            }
            fast += usize::from(reads_back_but_for_times(&span));
        }
        // Both paths were taken many times.
        assert!(
            (1_000..4_000).contains(&fast),
            "{fast} of 5000 took the fast path"
        );
    }

    #[test]
    fn trace_state_repr_round_trips_with_quotes_in_values() {
        let ts = TraceState(vec![
            ("rojo".into(), "00f067aa0ba902b7".into()),
            ("a".into(), "it's".into()),
        ]);
        let repr = ts.python_repr();
        assert_eq!(
            repr,
            "['{key=rojo, value=00f067aa0ba902b7}', \"{key=a, value=it's}\"]"
        );
        assert_eq!(parse_trace_state_repr(&repr), Some(ts));
        assert_eq!(parse_trace_state_repr("[]"), Some(TraceState::default()));
    }

    #[test]
    fn a_nested_map_attribute_is_kept_in_its_order_as_python_1_45_does() {
        let text = r#"{"name": "x", "context": {"trace_id": "0x00000000000000000000000000000001", "span_id": "0x0000000000000001"}, "attributes": {"map": {"b":1, "a": [1, null]}}}"#;
        let span = from_json(text).unwrap();
        assert_eq!(
            span.attributes.get("map"),
            Some(&AttrValue::Json("{\"b\": 1, \"a\": [1, null]}".into()))
        );
    }

    #[test]
    fn a_non_finite_double_is_written_as_a_string_that_reads_back() {
        let mut span = from_json(r#"{"name": "x", "context": {"trace_id": "0x00000000000000000000000000000001", "span_id": "0x0000000000000001"}}"#).unwrap();
        span.attributes.set("inf", f64::INFINITY);
        span.attributes
            .set("list", AttrValue::DoubleArray(vec![1.5, f64::NAN, -0.0]));
        let text = to_json(&span);
        assert!(
            text.contains(r#""inf": "Infinity", "list": [1.5, "NaN", -0.0]"#),
            "{text}"
        );
        let back = from_json(&text).unwrap();
        assert_eq!(
            back.attributes.get("inf"),
            Some(&AttrValue::String("Infinity".into()))
        );
        assert!(serde_json::from_str::<Value>(&text).is_ok());
    }

    #[test]
    fn a_number_that_overflows_a_double_is_refused_on_reading() {
        for attr in ["1e999", "[1.0, -1e400]", r#"{"deep": [1e999]}"#] {
            let text = format!(
                r#"{{"name": "x", "context": {{"trace_id": "0x00000000000000000000000000000001", "span_id": "0x0000000000000001"}}, "attributes": {{"score": {attr}}}}}"#
            );
            let err = from_json(&text).unwrap_err().to_string();
            assert!(err.contains("\"score\" holds the number"), "{err}");
            assert!(err.contains("not finite"), "{err}");
        }
    }

    #[test]
    fn a_document_without_a_context_is_refused_with_a_reason() {
        let err = from_json(r#"{"name": "x"}"#).unwrap_err().to_string();
        assert!(err.contains("missing field `context`"), "{err}");
    }

    #[test]
    fn an_id_with_a_sign_or_a_non_hex_character_is_refused() {
        let doc = |trace: &str, span: &str| {
            format!(
                r#"{{"name": "x", "context": {{"trace_id": "{trace}", "span_id": "{span}", "trace_state": "[]"}}}}"#
            )
        };
        let (trace, span) = ("0x4bf92f3577b34da6a3ce929d0e0e4736", "0x00f067aa0ba902b7");
        assert!(from_json(&doc(trace, span)).is_ok());
        for (t, sp) in [
            ("0x+bf92f3577b34da6a3ce929d0e0e4736", span),
            (trace, "0x+0f067aa0ba902b7"),
            ("0x4bf92f3577b34da6a3ce929d0e0e47é", span),
            (trace, "0x00f067aa0ba902é"),
        ] {
            let err = from_json(&doc(t, sp)).unwrap_err().to_string();
            assert!(err.contains("hex digits"), "{t} {sp}: {err}");
        }
    }
}
