//! JSON as Data Director's wire and hashes need it: bounded parsing, Python-identical
//! output, and numbers that tolerate the float spelling protobuf gives integers.
//!
//! - `parse` reads untrusted bytes with explicit `Limits` (size and nesting depth) and an
//!   element budget proportional to the size (`max_elements`), so a hostile body is refused
//!   with a clear message before it can exhaust the stack or memory.
//! - `python` writes bytes identical to CPython's `json.dumps`, which defines every content
//!   hash and the span JSON lines.
//! - `lenient` holds serde helpers for integers that arrive as `3.0` (the a2a-sdk 1.x client
//!   sends every number in a data part through a protobuf `Struct`, i.e. as a double).
//! - `non_finite` finds a number no double can hold (`1e999`). serde_json is built with
//!   `arbitrary_precision`, so such a literal parses, but every writer that spells numbers as
//!   Python does would print it as `Infinity`, which no strict JSON reader accepts. The
//!   contract's documents refuse it at the boundary (see `contract::validate`), and the run store
//!   refuses to write it.
//! - `from_slice_lossy` reads text that Python's `json` wrote with a lone surrogate escape
//!   (`"\ud800"`, legal to Python, refused by serde_json), replacing each with U+FFFD, so a
//!   store another writer made stays readable.

pub(crate) mod lenient;
pub(crate) mod python;

use serde_json::Value;
use std::fmt;

/// Why bytes were refused as JSON.
#[derive(Debug)]
#[non_exhaustive]
pub enum JsonError {
    /// The document is larger than `Limits::max_bytes`.
    TooLarge {
        /// The document's size in bytes.
        bytes: usize,
        /// The limit it broke.
        limit: usize,
    },
    /// Arrays and objects nest deeper than `Limits::max_depth`.
    TooDeep {
        /// The limit it broke.
        limit: usize,
    },
    /// An integer literal longer than Python's `json.loads` accepts (`MAX_INTEGER_DIGITS`).
    IntegerTooLong {
        /// How many digits it has.
        digits: usize,
        /// The limit it broke.
        limit: usize,
    },
    /// More array elements and object members than `max_elements` allows a document of its
    /// size: refused by the pre-scan, before any tree is built.
    TooManyElements {
        /// The document's size in bytes.
        bytes: usize,
        /// The budget it broke.
        limit: usize,
    },
    /// A `\u` escape names a lone surrogate (U+D800 to U+DFFF without its pair), which is no
    /// Unicode character.
    LoneSurrogate {
        /// The parser's own report, with its line and column.
        source: serde_json::Error,
    },
    /// Not JSON: the parser's report, with its line and column.
    Syntax {
        /// The parser's error.
        source: serde_json::Error,
    },
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid JSON: ")?;
        match self {
            JsonError::TooLarge { bytes, limit } => write!(
                f,
                "document of {bytes} bytes exceeds the limit of {limit} bytes"
            ),
            JsonError::TooDeep { limit } => {
                write!(f, "nesting deeper than the limit of {limit} levels")
            }
            JsonError::IntegerTooLong { digits, limit } => write!(
                f,
                "an integer of {digits} digits exceeds Python's limit of {limit}"
            ),
            JsonError::TooManyElements { bytes, limit } => write!(
                f,
                "more than {limit} array elements and object members in a document of {bytes} \
                 bytes (the limit is {ELEMENTS_FLOOR}, or one per {BYTES_PER_ELEMENT} bytes in \
                 a larger document)"
            ),
            JsonError::LoneSurrogate { source } => write!(
                f,
                "a \\u escape names a lone surrogate (U+D800 to U+DFFF without its pair), which \
                 is no Unicode character ({source})"
            ),
            JsonError::Syntax { source } => source.fmt(f),
        }
    }
}

impl std::error::Error for JsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JsonError::LoneSurrogate { source } | JsonError::Syntax { source } => Some(source),
            _ => None,
        }
    }
}

/// Explicit limits on untrusted JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Largest accepted document, in bytes.
    pub(crate) max_bytes: usize,
    /// Deepest accepted nesting of arrays and objects (the top-level value is depth 1).
    pub(crate) max_depth: usize,
}

impl Limits {
    /// 4 MiB and 64 levels: far above any contract document (an envelope nests about 6
    /// levels), far below what could exhaust a worker thread's stack.
    pub(crate) const DEFAULT: Limits = Limits {
        max_bytes: 4 * 1024 * 1024,
        max_depth: 64,
    };
}

/// Parse untrusted bytes into a [`Value`], refusing anything over `limits`.
///
/// Number literals are kept exactly as written (serde_json's `arbitrary_precision`), so an
/// integer beyond 2^64 or a float spelled `1E2` hashes as Python would hash it.
pub(crate) fn parse(bytes: &[u8], limits: Limits) -> Result<Value, JsonError> {
    if bytes.len() > limits.max_bytes {
        return Err(JsonError::TooLarge {
            bytes: bytes.len(),
            limit: limits.max_bytes,
        });
    }
    let longest_digit_run = scan(bytes, limits.max_depth, max_elements(bytes.len()))?;
    // Text checked as UTF-8 once is parsed as a `str`, which serde_json does not check again
    // string by string; other bytes are parsed as bytes, for serde_json's own error.
    let parsed = match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    };
    let value = parsed.map_err(|source| {
        if replace_lone_surrogates(bytes) != bytes {
            JsonError::LoneSurrogate { source }
        } else {
            JsonError::Syntax { source }
        }
    })?;
    // An integer literal's digits are one run of digits outside strings, so only text with a
    // run that long can hold one too long; the tree is walked for it only then.
    if longest_digit_run > MAX_INTEGER_DIGITS {
        check_integer_digits(&value)?;
    }
    Ok(value)
}

/// The text of `bytes` if [`parse`] would take it as far as its limits go (size, depth,
/// element budget, integer length) and it is UTF-8; `None` otherwise. For a typed reader that
/// parses the text itself and leaves every refusal to [`parse`]: what it accepts then passed
/// the same limits, and what `parse` would refuse it never reads.
pub(crate) fn within_limits(bytes: &[u8], limits: Limits) -> Option<&str> {
    if bytes.len() > limits.max_bytes {
        return None;
    }
    let longest_digit_run = scan(bytes, limits.max_depth, max_elements(bytes.len())).ok()?;
    if longest_digit_run > MAX_INTEGER_DIGITS {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// A JSON object read as `T`, and only an object.
///
/// serde's derived readers also take a struct from an array of its fields in order
/// (`["2.0", 1, "message/send", {…}]`), which no reader of a JSON-RPC or A2A document should
/// accept: this reads `T` through [`deserialize_map`](serde::Deserializer::deserialize_map),
/// so anything but an object is a type error.
pub(crate) struct Obj<T>(pub T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Obj<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(MapOnly(d)).map(Obj)
    }
}

/// A deserializer that reads every value as a map (see [`Obj`]).
struct MapOnly<D>(D);

impl<'de, D: serde::Deserializer<'de>> serde::Deserializer<'de> for MapOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(v)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// Parse a `&str` with the default limits.
pub fn parse_str(text: &str) -> Result<Value, JsonError> {
    parse(text.as_bytes(), Limits::DEFAULT)
}

/// Refuse nesting deeper than `max_depth`, scanning bytes without building anything.
///
/// Brackets inside string literals do not count. The scan is lenient about everything else:
/// the real parser reports grammar errors afterwards.
pub(crate) fn check_depth(bytes: &[u8], max_depth: usize) -> Result<(), JsonError> {
    scan(bytes, max_depth, usize::MAX).map(|_| ())
}

/// The element budget of a document of any size: below it, [`parse`] never refuses a
/// document for its element count.
pub(crate) const ELEMENTS_FLOOR: usize = 100_000;
/// Above [`ELEMENTS_FLOOR`], a document needs this many bytes of text per element on average.
pub(crate) const BYTES_PER_ELEMENT: usize = 8;

/// The most array elements and object members (counted together, at every depth) that
/// [`parse`] accepts in a document of `bytes` bytes: [`ELEMENTS_FLOOR`], or one per
/// [`BYTES_PER_ELEMENT`] bytes when that is more.
///
/// Why: a tree costs memory per element, not per byte. serde_json's `Value` is 32 bytes,
/// and each number literal (kept as text) and each string is one more allocation, so
/// `[1,1,…]` (2 bytes per element) builds a tree 17 to 25 times its size, where one element
/// per 8 bytes bounds that part to about 5 times. It cannot bound an object's map node (a few
/// hundred bytes however few its members), only how many there can be. Contract and A2A
/// documents carry text (a message part, a key and its value) at tens of bytes per element,
/// far inside the budget; a document of 100,000 elements or fewer is never refused for it.
pub(crate) fn max_elements(bytes: usize) -> usize {
    ELEMENTS_FLOOR.max(bytes / BYTES_PER_ELEMENT)
}

/// [`check_depth`], also refusing more than `max_elements` elements and members, and measuring
/// the longest run of ASCII digits outside string literals. One pass, nothing allocated.
fn scan(bytes: &[u8], max_depth: usize, max_elements: usize) -> Result<usize, JsonError> {
    let mut depth = 0usize;
    let (mut run, mut longest) = (0usize, 0usize);
    // Elements are the commas inside containers plus one per container that is not empty: a
    // container just opened counts one when its next byte that is not white space does not
    // close it.
    let mut elements = 0usize;
    let mut opened = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        if opened && !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            opened = false;
            if !matches!(b, b']' | b'}') {
                elements += 1;
            }
        }
        if b.is_ascii_digit() {
            run += 1;
            longest = longest.max(run);
            continue;
        }
        run = 0;
        match b {
            // A string counts for nothing: skip to its closing quote, a backslash taking the
            // byte after it along.
            b'"' => loop {
                match bytes[i..].iter().position(|&c| c == b'"' || c == b'\\') {
                    None => i = bytes.len(),
                    Some(k) if bytes[i + k] == b'\\' => {
                        i = (i + k + 2).min(bytes.len());
                        continue;
                    }
                    Some(k) => i += k + 1,
                }
                break;
            },
            b'[' | b'{' => {
                depth += 1;
                if depth > max_depth {
                    return Err(JsonError::TooDeep { limit: max_depth });
                }
                opened = true;
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' => elements += 1,
            _ => {}
        }
        if elements > max_elements {
            return Err(JsonError::TooManyElements {
                bytes: bytes.len(),
                limit: max_elements,
            });
        }
    }
    Ok(longest)
}

/// The longest integer literal Python's `json.loads` accepts (`sys.int_info
/// .default_max_str_digits`). A longer one could be hashed here but never by the reference, so
/// it is refused as Python refuses it.
pub(crate) const MAX_INTEGER_DIGITS: usize = 4300;

fn check_integer_digits(v: &Value) -> Result<(), JsonError> {
    match v {
        Value::Number(n) => {
            // The literal as read (arbitrary_precision keeps it): no copy per number.
            let text = n.as_str();
            let digits = text.trim_start_matches('-').len();
            if digits > MAX_INTEGER_DIGITS && !python::is_float_literal(text) {
                return Err(JsonError::IntegerTooLong {
                    digits,
                    limit: MAX_INTEGER_DIGITS,
                });
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(check_integer_digits),
        Value::Object(map) => map.values().try_for_each(check_integer_digits),
        _ => Ok(()),
    }
}

/// A number that no double can hold, and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NonFinite {
    /// The instance location, keys and indexes joined with `/`, or `<root>` (as the contract's
    /// schema errors name it).
    pub(crate) path: String,
    /// The literal as it was written (`1e999`).
    pub(crate) literal: String,
}

impl std::fmt::Display for NonFinite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the number {} is not finite (it overflows a double); JSON numbers must be finite",
            self.path, self.literal
        )
    }
}

/// Whether a number literal is a float that overflows a double (`1e999`, `-1e400`). Integer
/// literals are arbitrary-precision integers in Python and here, so they never are.
pub(crate) fn is_non_finite_literal(text: &str) -> bool {
    python::is_float_literal(text) && text.parse::<f64>().map_or(true, |x| !x.is_finite())
}

/// One step of an instance path: borrowed while a document is walked, written out by
/// [`location`] only for a value that is reported.
#[derive(Clone, Copy)]
pub(crate) enum Seg<'v> {
    Key(&'v str),
    Index(usize),
}

/// The reference's error location: path segments joined with `/`, or `<root>`.
pub(crate) fn location(path: &[Seg<'_>]) -> String {
    if path.is_empty() {
        return "<root>".into();
    }
    let parts: Vec<String> = path
        .iter()
        .map(|seg| match seg {
            Seg::Key(k) => (*k).to_owned(),
            Seg::Index(i) => i.to_string(),
        })
        .collect();
    parts.join("/")
}

/// The first number in `v`, depth first in document order, that is not finite as a double.
pub(crate) fn non_finite(v: &Value) -> Option<NonFinite> {
    fn walk<'a>(v: &'a Value, path: &mut Vec<Seg<'a>>) -> Option<NonFinite> {
        match v {
            Value::Number(n) => {
                let text = n.as_str();
                is_non_finite_literal(text).then(|| NonFinite {
                    path: location(path),
                    literal: text.to_string(),
                })
            }
            Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                path.push(Seg::Index(i));
                let found = walk(item, path);
                path.pop();
                found
            }),
            Value::Object(map) => map.iter().find_map(|(k, item)| {
                path.push(Seg::Key(k));
                let found = walk(item, path);
                path.pop();
                found
            }),
            _ => None,
        }
    }
    walk(v, &mut Vec::new())
}

/// Parse JSON text as serde_json does, except that a `\uXXXX` escape of a lone surrogate
/// (which Python's `json.dumps` writes for a `str` holding one, and serde_json refuses) reads
/// as U+FFFD. Text without one costs one parse.
pub(crate) fn from_slice_lossy(bytes: &[u8]) -> serde_json::Result<Value> {
    match serde_json::from_slice(bytes) {
        Err(e) => {
            let mended = replace_lone_surrogates(bytes);
            if mended == bytes {
                return Err(e);
            }
            serde_json::from_slice(&mended).map_err(|_| e)
        }
        ok => ok,
    }
}

/// `bytes` with every `\uD800`–`\uDFFF` escape that is not half of a high-low pair replaced
/// by `\ufffd`. Escapes are found as a JSON string scanner finds them (a `\\u` is not one).
fn replace_lone_surrogates(bytes: &[u8]) -> Vec<u8> {
    fn escape_at(b: &[u8], i: usize) -> Option<u16> {
        let hex = b.get(i..i + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    }
    let high = |u: u16| (0xd800..0xdc00).contains(&u);
    let low = |u: u16| (0xdc00..0xe000).contains(&u);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match escape_at(bytes, i) {
            Some(u) if high(u) && escape_at(bytes, i + 6).is_some_and(low) => {
                out.extend_from_slice(&bytes[i..i + 12]);
                i += 12;
            }
            Some(u) if high(u) || low(u) => {
                out.extend_from_slice(b"\\ufffd");
                i += 6;
            }
            _ => {
                // Any other escape: copy it whole, so `\\` never starts a false match.
                let end = (i + 2).min(bytes.len());
                out.extend_from_slice(&bytes[i..end]);
                i = end;
            }
        }
    }
    out
}

/// The JSON type of a value, as JSON Schema names it (`"object"`, `"integer"`, ...).
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if !python::is_float_literal(&n.to_string()) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `scan` read one byte at a time, as it was before strings were skipped in one step.
    fn scan_bytewise(
        bytes: &[u8],
        max_depth: usize,
        max_elements: usize,
    ) -> Result<usize, JsonError> {
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        let (mut run, mut longest, mut elements, mut opened) = (0usize, 0usize, 0usize, false);
        for &b in bytes {
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            if opened && !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                opened = false;
                if !matches!(b, b']' | b'}') {
                    elements += 1;
                }
            }
            if b.is_ascii_digit() {
                run += 1;
                longest = longest.max(run);
                continue;
            }
            run = 0;
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > max_depth {
                        return Err(JsonError::TooDeep { limit: max_depth });
                    }
                    opened = true;
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                b',' => elements += 1,
                _ => {}
            }
            if elements > max_elements {
                return Err(JsonError::TooManyElements {
                    bytes: bytes.len(),
                    limit: max_elements,
                });
            }
        }
        Ok(longest)
    }

    #[test]
    fn the_limits_scan_skips_strings_exactly_as_a_bytewise_reading_does() {
        // Every text of up to 6 bytes over an alphabet of the bytes the scan tells apart,
        // and longer ones drawn from it, under tight limits so that every error is reached.
        let alphabet = b"\"\\[]{},1 a";
        let mut texts: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..6 {
            let longer: Vec<Vec<u8>> = texts
                .iter()
                .filter(|t| t.len() == texts.last().map_or(0, |l| l.len()))
                .flat_map(|t| {
                    alphabet.iter().map(move |&c| {
                        let mut t = t.clone();
                        t.push(c);
                        t
                    })
                })
                .collect();
            texts.extend(longer);
        }
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            let len = (seed % 40) as usize;
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[(seed % alphabet.len() as u64) as usize]
                })
                .collect();
            texts.push(text);
        }
        for text in &texts {
            for (depth, elements) in [(2, 3), (64, 100_000)] {
                assert_eq!(
                    format!("{:?}", scan(text, depth, elements)),
                    format!("{:?}", scan_bytewise(text, depth, elements)),
                    "{}",
                    String::from_utf8_lossy(text)
                );
            }
        }
    }

    #[test]
    fn a_document_over_the_size_limit_is_refused_with_both_numbers() {
        let err = parse(
            b"[1,2,3]",
            Limits {
                max_bytes: 3,
                max_depth: 8,
            },
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid JSON: document of 7 bytes exceeds the limit of 3 bytes"
        );
    }

    #[test]
    fn nesting_over_the_depth_limit_is_refused_but_brackets_in_strings_do_not_count() {
        let limits = Limits {
            max_bytes: 1000,
            max_depth: 3,
        };
        assert!(parse(b"[[[1]]]", limits).is_ok());
        assert!(parse(br#"[[["[[[[\"[["]]]"#, limits).is_ok());
        let err = parse(b"[[[[1]]]]", limits).unwrap_err();
        assert!(
            err.to_string()
                .contains("nesting deeper than the limit of 3 levels")
        );
    }

    #[test]
    fn very_deep_input_is_refused_before_the_parser_recurses() {
        let deep = "[".repeat(100_000);
        assert!(parse(deep.as_bytes(), Limits::DEFAULT).is_err());
    }

    #[test]
    fn elements_over_the_budget_are_refused_by_the_scan_and_commas_in_strings_do_not_count() {
        let array = |n: usize, item: &str| format!("[{}]", vec![item; n].join(","));
        // The floor: exactly 100,000 elements pass however densely written; one more does not.
        assert!(parse(array(ELEMENTS_FLOOR, "1").as_bytes(), Limits::DEFAULT).is_ok());
        let over = array(ELEMENTS_FLOOR + 1, "1");
        match parse(over.as_bytes(), Limits::DEFAULT) {
            Err(JsonError::TooManyElements { bytes, limit }) => {
                assert_eq!((bytes, limit), (over.len(), ELEMENTS_FLOOR));
            }
            other => panic!("{other:?}"),
        }
        // Nesting does not escape the count: members and elements at every depth add up.
        let nested = array(4, &array(30_000, "{\"k\":[]}"));
        let err = parse(nested.as_bytes(), Limits::DEFAULT).unwrap_err();
        let limit = nested.len() / BYTES_PER_ELEMENT;
        assert!(limit > ELEMENTS_FLOOR);
        assert_eq!(
            err.to_string(),
            format!(
                "invalid JSON: more than {limit} array elements and object members in a document \
                 of {} bytes (the limit is 100000, or one per 8 bytes in a larger document)",
                nested.len()
            )
        );
        // Empty containers hold nothing; commas and brackets inside strings are text.
        let text = array(ELEMENTS_FLOOR, "[ ]");
        assert!(parse(text.as_bytes(), Limits::DEFAULT).is_ok());
        let commas = format!("[\"{}\"]", ",".repeat(3 * ELEMENTS_FLOOR));
        assert!(parse(commas.as_bytes(), Limits::DEFAULT).is_ok());
        // A larger document gets one element per 8 bytes: text-sized elements pass.
        let words = array(2 * ELEMENTS_FLOOR, "\"a word\"");
        assert!(words.len() / BYTES_PER_ELEMENT >= 2 * ELEMENTS_FLOOR);
        assert!(parse(words.as_bytes(), Limits::DEFAULT).is_ok());
        assert_eq!(max_elements(4 << 20), 524_288);
        // The depth check alone counts nothing.
        assert!(check_depth(over.as_bytes(), 64).is_ok());
    }

    #[test]
    fn an_integer_literal_longer_than_pythons_limit_is_refused_and_no_other_long_run_is() {
        let digits = |n: usize| "7".repeat(n);
        for (text, refused) in [
            (format!("[{}]", digits(MAX_INTEGER_DIGITS)), false),
            (format!("[{}]", digits(MAX_INTEGER_DIGITS + 1)), true),
            (
                format!("{{\"n\": -{}}}", digits(MAX_INTEGER_DIGITS + 1)),
                true,
            ),
            // As long a run in a string, or in a float's digits, is no integer.
            (format!("[\"{}\"]", digits(MAX_INTEGER_DIGITS + 1)), false),
            (format!("[0.{}]", digits(MAX_INTEGER_DIGITS + 1)), false),
        ] {
            let result = parse(text.as_bytes(), Limits::DEFAULT);
            match result {
                Err(JsonError::IntegerTooLong { digits, limit }) => {
                    assert!(refused, "{} refused", text.len());
                    assert_eq!(
                        (digits, limit),
                        (MAX_INTEGER_DIGITS + 1, MAX_INTEGER_DIGITS)
                    );
                }
                other => assert!(!refused && other.is_ok(), "{}: {other:?}", text.len()),
            }
        }
    }

    #[test]
    fn a_float_that_overflows_a_double_is_found_with_its_path_and_an_integer_never_is() {
        let v = parse_str(r#"{"a": [1, {"b": 1e999}], "c": -1e400}"#).unwrap();
        let found = non_finite(&v).unwrap();
        assert_eq!(
            (found.path.as_str(), found.literal.as_str()),
            ("a/1/b", "1e+999")
        );
        assert!(
            found
                .to_string()
                .contains("a/1/b: the number 1e+999 is not finite")
        );
        assert_eq!(
            non_finite(&parse_str("-1e400").unwrap()).unwrap().path,
            "<root>"
        );
        let fine = format!(
            "[1e308, -1.7976931348623157e308, 1e-999, -0.0, 5e-324, {}]",
            "9".repeat(400)
        );
        assert_eq!(non_finite(&parse_str(&fine).unwrap()), None);
    }

    #[test]
    fn a_lone_surrogate_escape_reads_as_the_replacement_character() {
        assert!(serde_json::from_slice::<Value>(br#"["\ud800"]"#).is_err());
        let v = from_slice_lossy(
            br#"["\ud800", "a\udc00b", "\ud83d\ude00", "\\ud800", "\ud800\ud800\udc00"]"#,
        )
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!([
                "\u{fffd}",
                "a\u{fffd}b",
                "😀",
                "\\ud800",
                "\u{fffd}\u{10000}"
            ])
        );
        assert!(from_slice_lossy(b"[1,").is_err());
    }

    #[test]
    fn integer_and_number_are_told_apart_by_the_literal() {
        let v = parse_str("[1, 1.0, 1e2]").unwrap();
        let names: Vec<_> = v.as_array().unwrap().iter().map(type_name).collect();
        assert_eq!(names, ["integer", "number", "number"]);
    }
}
