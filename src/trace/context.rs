//! W3C Trace Context, written by hand: `traceparent` and `tracestate`, and Level 2's
//! `traceresponse`.
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
//!
//! A server that ran a request answers with `traceresponse` (Trace Context Level 2, "Trace
//! Context HTTP Response Headers Format"): `version "-" trace-id "-" child-id "-" trace-flags`,
//! the grammar of `traceparent` with the callee's own span as `child-id`
//! ([`SpanContext::traceresponse`]).

use std::fmt;

/// A 16-byte trace id; never all zeros on a valid context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceId(pub u128);

/// An 8-byte span id; never all zeros on a valid context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanId(pub u64);

impl TraceId {
    /// A random, non-zero trace id.
    pub(crate) fn random() -> TraceId {
        loop {
            let mut b = [0u8; 16];
            crate::ids::random_bytes(&mut b);
            let id = u128::from_be_bytes(b);
            if id != 0 {
                return TraceId(id);
            }
        }
    }

    /// Parse 32 lowercase hex digits.
    #[cfg(test)]
    pub(crate) fn from_hex(s: &str) -> Option<TraceId> {
        (s.len() == 32 && is_lower_hex(s)).then(|| u128::from_str_radix(s, 16).ok().map(TraceId))?
    }
}

impl SpanId {
    /// A random, non-zero span id.
    pub(crate) fn random() -> SpanId {
        loop {
            let id = crate::ids::random_u64();
            if id != 0 {
                return SpanId(id);
            }
        }
    }

    /// Parse 16 lowercase hex digits.
    #[cfg(test)]
    pub(crate) fn from_hex(s: &str) -> Option<SpanId> {
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

#[cfg(test)]
fn is_lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The `sampled` bit of `trace-flags` (§3.2.2.5).
pub(crate) const FLAG_SAMPLED: u8 = 0x01;
/// The `random-trace-id` bit of `trace-flags` (Level 2).
const FLAG_RANDOM_TRACE_ID: u8 = 0x02;

/// The name of the W3C `traceresponse` response header, lower-case as Level 2 recommends.
pub(crate) const TRACERESPONSE: &str = "traceresponse";

/// A span's identity as it crosses a process boundary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanContext {
    /// The trace the span belongs to.
    pub trace_id: TraceId,
    /// The span itself.
    pub(crate) span_id: SpanId,
    /// `trace-flags` as received (readers mask bits; reserved bits are kept, as OTel does).
    pub(crate) flags: u8,
    /// Vendor state carried along the trace (W3C `tracestate`).
    pub(crate) trace_state: TraceState,
    /// Whether this context came from another process.
    pub(crate) is_remote: bool,
}

impl SpanContext {
    /// The `traceparent` header value for this context, at version 00.
    pub(crate) fn traceparent(&self) -> String {
        format!("00-{}-{}-{:02x}", self.trace_id, self.span_id, self.flags)
    }

    /// The `traceresponse` header value naming this span as the operation that answered a
    /// request (Trace Context Level 2, "traceresponse Header Field Values"), at version 00:
    /// `00-<trace-id>-<child-id>-<trace-flags>`. Only the flags Level 2 defines (`sampled`,
    /// `random-trace-id`) are kept; it requires every other bit to be zero.
    pub(crate) fn traceresponse(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            self.trace_id,
            self.span_id,
            self.flags & (FLAG_SAMPLED | FLAG_RANDOM_TRACE_ID)
        )
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
/// longer than [`TRACEPARENT_MAX_LEN`] is ignored. The value is read as bytes, and any
/// non-ASCII byte makes it invalid (HTTP field values are ASCII, RFC 9110 §5.5), so no
/// input can split a character.
pub(crate) fn parse_traceparent(header: &str) -> Option<(TraceId, SpanId, u8)> {
    if header.len() > TRACEPARENT_MAX_LEN || !header.is_ascii() {
        return None;
    }
    let b = header.as_bytes();
    let b = trim_ows(b.strip_suffix(b"\n").unwrap_or(b));
    if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return None;
    }
    let version = hex_value(&b[..2])?;
    if version == 0xff {
        return None;
    }
    let rest = &b[55..];
    if version == 0 && !rest.is_empty() {
        return None;
    }
    if !rest.is_empty() && rest[0] != b'-' {
        return None;
    }
    let trace_id = hex_value(&b[3..35]).map(TraceId).filter(|t| t.0 != 0)?;
    let span_id = hex_value(&b[36..52])
        .map(|v| SpanId(v as u64))
        .filter(|s| s.0 != 0)?;
    let flags = hex_value(&b[53..55])? as u8;
    Some((trace_id, span_id, flags))
}

/// The value of 1 to 32 lowercase hex digits; `None` for anything else (no sign, no case).
fn hex_value(digits: &[u8]) -> Option<u128> {
    if digits.is_empty() || digits.len() > 32 {
        return None;
    }
    digits.iter().try_fold(0u128, |acc, &c| {
        let nibble = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        Some((acc << 4) | u128::from(nibble))
    })
}

/// `bytes` without leading and trailing spaces and tabs (optional whitespace, RFC 9110 §5.6.3).
fn trim_ows(bytes: &[u8]) -> &[u8] {
    let ows = |c: &u8| *c == b' ' || *c == b'\t';
    let start = bytes.iter().position(|c| !ows(c)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|c| !ows(c)).map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// The longest `traceparent` OpenTelemetry Python reads (future versions may add fields).
pub(crate) const TRACEPARENT_MAX_LEN: usize = 512;

/// The most members a `tracestate` may carry (§3.3.1.1).
pub(crate) const TRACESTATE_MAX_MEMBERS: usize = 32;

/// The longest `tracestate` OpenTelemetry Python reads; a longer one is dropped whole.
pub(crate) const TRACESTATE_MAX_LEN: usize = 8192;

/// Vendor-specific trace data: ordered `key=value` members (§3.3).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceState(pub Vec<(String, String)>);

impl TraceState {
    /// Parse one or more comma-joined `tracestate` header values. `None` means the whole
    /// header is dropped: a malformed member, a duplicate key, more than 32 members, or any
    /// non-ASCII byte (the grammar admits none). Empty members and optional whitespace around
    /// commas are allowed (§3.3.1.1). Read as bytes, so no input can split a character.
    pub(crate) fn parse(header: &str) -> Option<TraceState> {
        if header.len() > TRACESTATE_MAX_LEN || !header.is_ascii() {
            return None;
        }
        let mut members: Vec<(String, String)> = Vec::new();
        // Optional whitespace (spaces and tabs) around each member is allowed (§3.3.1.2).
        for raw in header.as_bytes().split(|&c| c == b',') {
            let member = trim_ows(raw);
            if member.is_empty() {
                continue;
            }
            let eq = member.iter().position(|&c| c == b'=')?;
            let (key, value) = (&member[..eq], &member[eq + 1..]);
            if !valid_key(key)
                || !valid_value(value)
                || members.iter().any(|(k, _)| k.as_bytes() == key)
            {
                return None;
            }
            // Both are ASCII, checked above.
            members.push((ascii(key), ascii(value)));
        }
        (members.len() <= TRACESTATE_MAX_MEMBERS).then_some(TraceState(members))
    }

    /// The header value: members joined by `,`.
    pub(crate) fn header(&self) -> String {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.join(",")
    }

    /// `repr(TraceState)` in OpenTelemetry Python: a Python list of `{key=k, value=v}`
    /// strings, e.g. `['{key=rojo, value=00f067aa0ba902b7}']`, or `[]`.
    pub(crate) fn python_repr(&self) -> String {
        let items: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| crate::json::python::str_repr(&format!("{{key={k}, value={v}}}")))
            .collect();
        format!("[{}]", items.join(", "))
    }

    /// Whether there are no members.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Key grammar (Level 1, §3.3.1.3.1): `lcalpha 0*255(lcalpha / DIGIT / "_" / "-" / "*" /
/// "/")`, or `tenant "@" system` with a 1–241 character tenant starting with a letter or
/// digit and a 1–14 character system starting with a letter.
fn valid_key(b: &[u8]) -> bool {
    let body = |c: u8| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'_' | b'-' | b'*' | b'/')
    };
    match b.iter().position(|&c| c == b'@') {
        None => {
            (1..=256).contains(&b.len()) && b[0].is_ascii_lowercase() && b.iter().all(|&c| body(c))
        }
        Some(at) => {
            let (t, s) = (&b[..at], &b[at + 1..]);
            (1..=241).contains(&t.len())
                && (t[0].is_ascii_lowercase() || t[0].is_ascii_digit())
                && t.iter().all(|&c| body(c))
                && (1..=14).contains(&s.len())
                && s[0].is_ascii_lowercase()
                && s.iter().all(|&c| body(c))
        }
    }
}

/// ASCII bytes as text (the caller has checked they are ASCII).
fn ascii(bytes: &[u8]) -> String {
    bytes.iter().map(|&c| char::from(c)).collect()
}

/// Value grammar (§3.3.1.3.2): 1–256 printable ASCII characters other than `,` and `=`, the
/// last not a space.
fn valid_value(b: &[u8]) -> bool {
    let chr = |c: u8| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=';
    (1..=256).contains(&b.len()) && b.iter().all(|&c| chr(c)) && b[b.len() - 1] != b' '
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceresponse_names_the_callees_span_at_version_00_with_only_level_2_flags() {
        let mut ctx = SpanContext::extract(Some(VALID), Some("rojo=1")).unwrap();
        assert_eq!(ctx.traceresponse(), VALID);
        // Bits Level 2 leaves undefined are written as zero; sampled and random-trace-id stay.
        ctx.flags = 0xff;
        assert_eq!(
            ctx.traceresponse(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03"
        );
        ctx.flags = 0;
        let written = ctx.traceresponse();
        assert!(written.ends_with("-00"));
        // The grammar is traceparent's: it reads back as the same trace and span.
        let read = parse_traceparent(&written).unwrap();
        assert_eq!((read.0, read.1), (ctx.trace_id, ctx.span_id));
    }

    /// The probe: a two-byte character whose bytes straddle byte 55 (the end of the
    /// flags) used to be sliced through, which panics.
    #[test]
    fn a_multi_byte_character_near_byte_55_is_invalid_not_a_panic() {
        let straddling = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0é";
        assert_eq!(straddling.len(), 56);
        assert_eq!(parse_traceparent(straddling), None);
        assert_eq!(SpanContext::extract(Some(straddling), None), None);
    }

    #[test]
    fn a_non_ascii_character_anywhere_in_a_traceparent_is_invalid() {
        for hostile in ["é", "\u{10ffff}", "€", "\u{0301}"] {
            for i in 0..=VALID.len() {
                let replaced = format!(
                    "{}{hostile}{}",
                    &VALID[..i],
                    &VALID[(i + 1).min(VALID.len())..]
                );
                let inserted = format!("{}{hostile}{}", &VALID[..i], &VALID[i..]);
                assert_eq!(parse_traceparent(&replaced), None, "{replaced:?}");
                assert_eq!(parse_traceparent(&inserted), None, "{inserted:?}");
            }
        }
        // A future version's extra fields are read as bytes too.
        let future = format!("01{}-é", &VALID[2..]);
        assert_eq!(parse_traceparent(&future), None);
        assert!(parse_traceparent(&format!("01{}-extra", &VALID[2..])).is_some());
    }

    #[test]
    fn the_traceparent_grammar_still_reads_what_it_read() {
        assert_eq!(
            parse_traceparent(VALID),
            Some((
                TraceId(0x4bf92f3577b34da6a3ce929d0e0e4736),
                SpanId(0x00f067aa0ba902b7),
                1
            ))
        );
        assert!(parse_traceparent(&format!(" \t{VALID}\t \n")).is_some());
        for bad in [
            "",
            "00",
            &VALID.to_uppercase(),
            &VALID.replace("-01", "-+1"),
            &VALID.replacen("00-", "ff-", 1),
            &format!("{VALID}-extra"),
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_tracestate_with_any_non_ascii_byte_is_dropped_whole() {
        assert_eq!(
            TraceState::parse("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"),
            Some(TraceState(vec![
                ("rojo".into(), "00f067aa0ba902b7".into()),
                ("congo".into(), "t61rcWkgMzE".into())
            ]))
        );
        for hostile in [
            "rojo=00f067aa0ba902b7,congo=é",
            "réjo=1",
            "rojo=1,\u{a0}congo=2",
            "a@é=1",
            "é",
        ] {
            assert_eq!(TraceState::parse(hostile), None, "{hostile:?}");
        }
        assert_eq!(TraceState::parse("t@sys=1").map(|s| s.0.len()), Some(1));
        assert_eq!(TraceState::parse("t@=1"), None);
    }
}
