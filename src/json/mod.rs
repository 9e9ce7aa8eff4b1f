//! JSON as Data Director's wire and hashes need it: bounded parsing, Python-identical
//! output, and numbers that tolerate the float spelling protobuf gives integers.
//!
//! - [`parse`] reads untrusted bytes with explicit [`Limits`] (size and nesting depth), so a
//!   hostile body is refused with a clear message before it can exhaust the stack or memory.
//! - [`python`] writes bytes identical to CPython's `json.dumps`, which defines every content
//!   hash and the span JSON lines.
//! - [`lenient`] holds serde helpers for integers that arrive as `3.0` (the a2a-sdk 1.x client
//!   sends every number in a data part through a protobuf `Struct`, i.e. as a double).

pub mod lenient;
pub mod python;

use crate::error::{Error, Result};
use serde_json::Value;

/// Explicit limits on untrusted JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted document, in bytes.
    pub max_bytes: usize,
    /// Deepest accepted nesting of arrays and objects (the top-level value is depth 1).
    pub max_depth: usize,
}

impl Limits {
    /// 4 MiB and 64 levels: far above any contract document (an envelope nests about 6
    /// levels), far below what could exhaust a worker thread's stack.
    pub const DEFAULT: Limits = Limits {
        max_bytes: 4 * 1024 * 1024,
        max_depth: 64,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// Parse untrusted bytes into a [`Value`], refusing anything over `limits`.
///
/// Number literals are kept exactly as written (serde_json's `arbitrary_precision`), so an
/// integer beyond 2^64 or a float spelled `1E2` hashes as Python would hash it.
pub fn parse(bytes: &[u8], limits: Limits) -> Result<Value> {
    if bytes.len() > limits.max_bytes {
        return Err(Error::Json(format!(
            "document of {} bytes exceeds the limit of {} bytes",
            bytes.len(),
            limits.max_bytes
        )));
    }
    check_depth(bytes, limits.max_depth)?;
    let value = serde_json::from_slice(bytes).map_err(|e| Error::Json(e.to_string()))?;
    check_integer_digits(&value)?;
    Ok(value)
}

/// Parse a `&str` with the default limits.
pub fn parse_str(text: &str) -> Result<Value> {
    parse(text.as_bytes(), Limits::DEFAULT)
}

/// Refuse nesting deeper than `max_depth`, scanning bytes without building anything.
///
/// Brackets inside string literals do not count. The scan is lenient about everything else:
/// the real parser reports grammar errors afterwards.
pub fn check_depth(bytes: &[u8], max_depth: usize) -> Result<()> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
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
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max_depth {
                    return Err(Error::Json(format!(
                        "nesting deeper than the limit of {max_depth} levels"
                    )));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// The longest integer literal Python's `json.loads` accepts (`sys.int_info
/// .default_max_str_digits`). A longer one could be hashed here but never by the reference, so
/// it is refused as Python refuses it.
pub const MAX_INTEGER_DIGITS: usize = 4300;

fn check_integer_digits(v: &Value) -> Result<()> {
    match v {
        Value::Number(n) => {
            let text = n.to_string();
            let digits = text.trim_start_matches('-').len();
            if !python::is_float_literal(&text) && digits > MAX_INTEGER_DIGITS {
                return Err(Error::Json(format!(
                    "an integer of {digits} digits exceeds Python's limit of {MAX_INTEGER_DIGITS}"
                )));
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(check_integer_digits),
        Value::Object(map) => map.values().try_for_each(check_integer_digits),
        _ => Ok(()),
    }
}

/// The JSON type of a value, as JSON Schema names it (`"object"`, `"integer"`, ...).
pub fn type_name(v: &Value) -> &'static str {
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
    fn integer_and_number_are_told_apart_by_the_literal() {
        let v = parse_str("[1, 1.0, 1e2]").unwrap();
        let names: Vec<_> = v.as_array().unwrap().iter().map(type_name).collect();
        assert_eq!(names, ["integer", "number", "number"]);
    }
}
