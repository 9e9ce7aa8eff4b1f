//! W3C Trace Context, written by hand: `traceparent` and `tracestate`.
//!
//! Follows W3C Trace Context Level 1 (Recommendation, 2021) §3.2 `traceparent` and §3.3
//! `tracestate`, with Level 2's reading of the flags, and behaves as OpenTelemetry Python's
//! `TraceContextTextMapPropagator` does wherever the specification leaves a choice:
//!
//! - an invalid `traceparent` is ignored and the trace restarts (§3.2.2.3, §3.2.4);
//! - a future version (`01`..`fe`) is read by its version-00 prefix, extra fields ignored,
//!   and re-written at version 00 (§3.2.4 "Versioning of traceparent");
//! - `tracestate` is read only when `traceparent` is valid, and one malformed member, a
//!   duplicate key or more than 32 members drops the whole `tracestate` (§3.3.1; OpenTelemetry's
//!   choice, since the spec allows dropping).

use std::fmt;

/// A 16-byte trace id; never all zeros on a valid context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceId(pub u128);

/// An 8-byte span id; never all zeros on a valid context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanId(pub u64);

impl TraceId {
    /// A random, non-zero trace id.
    pub fn random() -> TraceId {
        loop {
            let mut b = [0u8; 16];
            crate::contract::ids::random_bytes(&mut b);
            let id = u128::from_be_bytes(b);
            if id != 0 {
                return TraceId(id);
            }
        }
    }

    /// Parse 32 lowercase hex digits.
    pub fn from_hex(s: &str) -> Option<TraceId> {
        (s.len() == 32 && is_lower_hex(s)).then(|| u128::from_str_radix(s, 16).ok().map(TraceId))?
    }
}

impl SpanId {
    /// A random, non-zero span id.
    pub fn random() -> SpanId {
        loop {
            let id = crate::contract::ids::random_u64();
            if id != 0 {
                return SpanId(id);
            }
        }
    }

    /// Parse 16 lowercase hex digits.
    pub fn from_hex(s: &str) -> Option<SpanId> {
        (s.len() == 16 && is_lower_hex(s)).then(|| u64::from_str_radix(s, 16).ok().map(SpanId))?
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The `sampled` bit of `trace-flags` (§3.2.2.5).
pub const FLAG_SAMPLED: u8 = 0x01;

/// A span's identity as it crosses a process boundary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanContext {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    /// `trace-flags` as received (readers mask bits; reserved bits are kept, as OTel does).
    pub flags: u8,
    pub trace_state: TraceState,
    /// Whether this context came from another process.
    pub is_remote: bool,
}

impl SpanContext {
    /// The `traceparent` header value for this context, at version 00.
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-{:02x}", self.trace_id, self.span_id, self.flags)
    }

    /// Read a context from `traceparent` and `tracestate` header values. `None` means the
    /// trace restarts: the caller should start a new root.
    pub fn extract(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<SpanContext> {
        let (trace_id, span_id, flags) = parse_traceparent(traceparent?)?;
        // §3.3.1.1: a bad tracestate never invalidates the traceparent.
        let trace_state = tracestate.and_then(TraceState::parse).unwrap_or_default();
        Some(SpanContext {
            trace_id,
            span_id,
            flags,
            trace_state,
            is_remote: true,
        })
    }
}

/// Parse a `traceparent` value: `(trace-id, parent-id, trace-flags)`, or `None` when the
/// header is invalid and the trace must restart.
///
/// Grammar (§3.2.2): `version "-" trace-id "-" parent-id "-" trace-flags`, lowercase hex
/// only. Version `ff` is invalid; version `00` allows nothing after the flags; a higher
/// version allows `"-" *` extra fields. As OpenTelemetry Python does: leading and trailing
/// spaces and tabs are trimmed, one final `\n` is tolerated (its regex's `$`), and a header
/// longer than [`TRACEPARENT_MAX_LEN`] is ignored.
pub fn parse_traceparent(header: &str) -> Option<(TraceId, SpanId, u8)> {
    if header.len() > TRACEPARENT_MAX_LEN {
        return None;
    }
    let value = header
        .strip_suffix('\n')
        .unwrap_or(header)
        .trim_matches([' ', '\t']);
    let b = value.as_bytes();
    if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return None;
    }
    let version = &value[..2];
    if !is_lower_hex(version) || version == "ff" {
        return None;
    }
    let rest = &value[55..];
    if version == "00" && !rest.is_empty() {
        return None;
    }
    if !rest.is_empty() && !rest.starts_with('-') {
        return None;
    }
    let trace_id = TraceId::from_hex(&value[3..35]).filter(|t| t.0 != 0)?;
    let span_id = SpanId::from_hex(&value[36..52]).filter(|s| s.0 != 0)?;
    let flags_hex = &value[53..55];
    if !is_lower_hex(flags_hex) {
        return None;
    }
    let flags = u8::from_str_radix(flags_hex, 16).ok()?;
    Some((trace_id, span_id, flags))
}

/// The longest `traceparent` OpenTelemetry Python reads (future versions may add fields).
pub const TRACEPARENT_MAX_LEN: usize = 512;

/// The most members a `tracestate` may carry (§3.3.1.1).
pub const TRACESTATE_MAX_MEMBERS: usize = 32;

/// The longest `tracestate` OpenTelemetry Python reads; a longer one is dropped whole.
pub const TRACESTATE_MAX_LEN: usize = 8192;

/// Vendor-specific trace data: ordered `key=value` members (§3.3).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceState(pub Vec<(String, String)>);

impl TraceState {
    /// Parse one or more comma-joined `tracestate` header values. `None` means the whole
    /// header is dropped: a malformed member, a duplicate key, or more than 32 members.
    /// Empty members and optional whitespace around commas are allowed (§3.3.1.1).
    pub fn parse(header: &str) -> Option<TraceState> {
        if header.len() > TRACESTATE_MAX_LEN {
            return None;
        }
        let mut members: Vec<(String, String)> = Vec::new();
        // Optional whitespace (spaces and tabs) around each member is allowed (§3.3.1.2).
        for raw in header.split(',') {
            let member = raw.trim_matches([' ', '\t']);
            if member.is_empty() {
                continue;
            }
            let (key, value) = member.split_once('=')?;
            if !valid_key(key) || !valid_value(value) || members.iter().any(|(k, _)| k == key) {
                return None;
            }
            members.push((key.to_string(), value.to_string()));
        }
        (members.len() <= TRACESTATE_MAX_MEMBERS).then_some(TraceState(members))
    }

    /// The header value: members joined by `,`.
    pub fn header(&self) -> String {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.join(",")
    }

    /// `repr(TraceState)` in OpenTelemetry Python: a Python list of `{key=k, value=v}`
    /// strings, e.g. `['{key=rojo, value=00f067aa0ba902b7}']`, or `[]`.
    pub fn python_repr(&self) -> String {
        let items: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| crate::json::python::str_repr(&format!("{{key={k}, value={v}}}")))
            .collect();
        format!("[{}]", items.join(", "))
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Key grammar (Level 1, §3.3.1.3.1): `lcalpha 0*255(lcalpha / DIGIT / "_" / "-" / "*" /
/// "/")`, or `tenant "@" system` with a 1–241 character tenant starting with a letter or
/// digit and a 1–14 character system starting with a letter.
fn valid_key(key: &str) -> bool {
    let body = |c: u8| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'-' | b'*' | b'/')
    };
    let b = key.as_bytes();
    match key.split_once('@') {
        None => {
            (1..=256).contains(&b.len()) && b[0].is_ascii_lowercase() && b.iter().all(|&c| body(c))
        }
        Some((tenant, system)) => {
            let (t, s) = (tenant.as_bytes(), system.as_bytes());
            (1..=241).contains(&t.len())
                && (t[0].is_ascii_lowercase() || t[0].is_ascii_digit())
                && t.iter().all(|&c| body(c))
                && (1..=14).contains(&s.len())
                && s[0].is_ascii_lowercase()
                && s.iter().all(|&c| body(c))
        }
    }
}

/// Value grammar (§3.3.1.3.2): 1–256 printable ASCII characters other than `,` and `=`, the
/// last not a space.
fn valid_value(value: &str) -> bool {
    let b = value.as_bytes();
    let chr = |c: u8| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=';
    (1..=256).contains(&b.len()) && b.iter().all(|&c| chr(c)) && b[b.len() - 1] != b' '
}
