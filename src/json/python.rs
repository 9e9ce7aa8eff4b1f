//! JSON text exactly as CPython's `json.dumps` writes it.
//!
//! Data Director's hashes and trace files are defined by what Python's `json` module writes:
//! content hashes are `json.dumps(x, sort_keys=True, separators=(",", ":"),
//! ensure_ascii=False)`, span JSON is `json.dumps(d)` (separators `", "` and `": "`,
//! `ensure_ascii=True`), and the run store writes `json.dumps(d, indent=2)`. This module
//! reproduces those bytes from a [`serde_json::Value`]:
//!
//! - numbers follow Python's `json.loads` then `json.dumps`: an integer literal stays an
//!   arbitrary-precision integer (`-0` becomes `0`); a literal with a fraction or exponent is a
//!   double printed with `float.__repr__` (`1.0`, `1e+16`, `1e-07`, `Infinity`);
//! - strings are escaped as `json.encoder` does (`\n`, `\u001f`, and with `ensure_ascii`
//!   every non-printable-ASCII character as `\uXXXX`, astral ones as surrogate pairs);
//! - an object's keys come in code-point order, as `sort_keys=True` writes them (a `Value`'s
//!   map holds them in UTF-8 byte order, which is code-point order).
//!
//! One more spelling is pydantic's (`model_dump_json`, which `ag-ui-protocol`'s `EventEncoder`
//! writes AG-UI events with): the same text but for floats below 1e-4 ([`Floats::Pydantic`]).

use serde_json::{Map, Number, Value};

/// How to lay out the text: the arguments of `json.dumps` that matter to its bytes.
/// `sort_keys` is not among them: a `Value`'s object (serde_json's map, built without
/// `preserve_order`, is a BTreeMap) iterates its keys in byte order, which is the code-point
/// order `sort_keys=True` gives, and holds no other order to write; ordered output comes from
/// typed writers, and [`reformat`] keeps a text's own order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Style {
    /// Between items: `", "` by default, `","` when indenting or compact.
    pub(crate) item_separator: &'static str,
    /// Between a key and its value: `": "` by default, `":"` compact.
    pub(crate) key_separator: &'static str,
    /// `indent=N`: newline and N spaces per level.
    pub(crate) indent: Option<usize>,
    /// `ensure_ascii=True` (Python's default).
    pub(crate) ensure_ascii: bool,
    /// How floats are spelled.
    pub(crate) floats: Floats,
}

/// How a float is spelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Floats {
    /// `float.__repr__` ([`float_repr`]): `1e-05`, `1e+16`.
    Python,
    /// pydantic-core's JSON: `float.__repr__` but for positional notation down to 1e-5 and an
    /// exponent without zero padding (`0.00001`, `1e-6`, `1e+16`); non-finite values are `null`
    /// (its default `ser_json_inf_nan='null'`).
    Pydantic,
}

impl Style {
    /// `json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`: the bytes
    /// every content hash is taken over.
    pub(crate) const CANONICAL: Style = Style {
        item_separator: ",",
        key_separator: ":",
        indent: None,
        ensure_ascii: false,
        floats: Floats::Python,
    };
    /// `json.dumps(x)`: Python's defaults, one line with `", "` and `": "`.
    pub(crate) const DEFAULT: Style = Style {
        item_separator: ", ",
        key_separator: ": ",
        indent: None,
        ensure_ascii: true,
        floats: Floats::Python,
    };
    /// pydantic's `model_dump_json()`: compact, UTF-8 as it is, pydantic's float spelling. Keys
    /// keep the value's order (a `serde_json` map's is sorted).
    pub(crate) const PYDANTIC: Style = Style {
        item_separator: ",",
        key_separator: ":",
        indent: None,
        ensure_ascii: false,
        floats: Floats::Pydantic,
    };
    /// `json.dumps(x, indent=2)`: how the run store writes documents.
    pub(crate) const INDENT2: Style = Style {
        item_separator: ",",
        key_separator: ": ",
        indent: Some(2),
        ensure_ascii: true,
        floats: Floats::Python,
    };
}

/// `json.dumps(value, **style)`.
pub(crate) fn dumps(value: &Value, style: Style) -> String {
    // Sized for a run's envelope, so that writing one does not grow the buffer nine times.
    let mut out = String::with_capacity(4096);
    write_value(&mut out, value, style, 0);
    out
}

/// Append one value to `out`.
pub(crate) fn write_value(out: &mut String, value: &Value, style: Style, level: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        // With serde_json's `arbitrary_precision`, the number's text is the literal as read.
        Value::Number(n) => write_number(out, n.as_str(), style.floats),
        Value::String(s) => write_str(out, s, style.ensure_ascii),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(style.item_separator);
                }
                newline(out, style, level + 1);
                write_value(out, item, style, level + 1);
            }
            newline(out, style, level);
            out.push(']');
        }
        Value::Object(map) => write_object(out, map, style, level),
    }
}

/// Append one object, its members in `style`'s order.
pub(crate) fn write_object(out: &mut String, map: &Map<String, Value>, style: Style, level: usize) {
    if map.is_empty() {
        out.push_str("{}");
        return;
    }
    // In the map's byte order of keys, which is `sort_keys=True`'s (see `Style`).
    out.push('{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push_str(style.item_separator);
        }
        newline(out, style, level + 1);
        write_str(out, k, style.ensure_ascii);
        out.push_str(style.key_separator);
        write_value(out, v, style, level + 1);
    }
    newline(out, style, level);
    out.push('}');
}

fn newline(out: &mut String, style: Style, level: usize) {
    if let Some(width) = style.indent {
        const SPACES: &str = "                                ";
        out.push('\n');
        let mut left = width * level;
        while left > 0 {
            let n = left.min(SPACES.len());
            out.push_str(&SPACES[..n]);
            left -= n;
        }
    }
}

/// A JSON number literal as Python's `json` round trip prints it, its floats as `floats` says.
fn write_number(out: &mut String, text: &str, floats: Floats) {
    if is_float_literal(text) {
        let x: f64 = text.parse().unwrap_or(f64::NAN);
        match floats {
            Floats::Python => out.push_str(&float_repr(x)),
            Floats::Pydantic => out.push_str(&float_pydantic(x)),
        }
    } else if text.trim_start_matches('-').bytes().all(|b| b == b'0') {
        out.push('0'); // int("-0") == 0
    } else {
        out.push_str(text);
    }
}

/// Re-write JSON text as `json.dumps(json.loads(text), **style)` would, keeping the key
/// order of the text (where a [`Value`] would sort it): this is
/// for documents whose order is part of their bytes, such as span attributes.
///
/// Returns `None` if `text` is not a single JSON value.
pub(crate) fn reformat(text: &str, style: Style) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut p = Reformat {
        s: text.as_bytes(),
        i: 0,
        style,
    };
    p.value(&mut out, 0)?;
    p.ws();
    (p.i == p.s.len()).then_some(out)
}

/// A recursive-descent walk over JSON text that writes as it reads. Grammar per RFC 8259 §2–7;
/// the depth is bounded by the caller's [`crate::json::check_depth`].
struct Reformat<'a> {
    s: &'a [u8],
    i: usize,
    style: Style,
}

impl Reformat<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.ws();
        let hit = self.s.get(self.i) == Some(&b);
        if hit {
            self.i += 1;
        }
        hit
    }

    fn value(&mut self, out: &mut String, level: usize) -> Option<()> {
        self.ws();
        match *self.s.get(self.i)? {
            b'{' => self.container(out, level, b'}', true),
            b'[' => self.container(out, level, b']', false),
            b'"' => {
                let s = self.string()?;
                write_str(out, &s, self.style.ensure_ascii);
                Some(())
            }
            b't' | b'f' | b'n' => {
                for word in ["true", "false", "null"] {
                    if self.s[self.i..].starts_with(word.as_bytes()) {
                        self.i += word.len();
                        out.push_str(word);
                        return Some(());
                    }
                }
                None
            }
            _ => {
                let start = self.i;
                while self.i < self.s.len()
                    && matches!(
                        self.s[self.i],
                        b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'
                    )
                {
                    self.i += 1;
                }
                let literal = std::str::from_utf8(&self.s[start..self.i]).ok()?;
                // Let serde_json judge the number grammar.
                serde_json::from_str::<Number>(literal).ok()?;
                write_number(out, literal, Floats::Python);
                Some(())
            }
        }
    }

    fn container(&mut self, out: &mut String, level: usize, close: u8, object: bool) -> Option<()> {
        self.i += 1;
        out.push(if object { '{' } else { '[' });
        if self.eat(close) {
            out.push(close as char);
            return Some(());
        }
        let mut first = true;
        loop {
            if !first {
                out.push_str(self.style.item_separator);
            }
            first = false;
            newline(out, self.style, level + 1);
            if object {
                self.ws();
                let key = self.string()?;
                write_str(out, &key, self.style.ensure_ascii);
                if !self.eat(b':') {
                    return None;
                }
                out.push_str(self.style.key_separator);
            }
            self.value(out, level + 1)?;
            if self.eat(b',') {
                continue;
            }
            if self.eat(close) {
                break;
            }
            return None;
        }
        newline(out, self.style, level);
        out.push(close as char);
        Some(())
    }

    /// One string literal, decoded (serde_json judges the escapes).
    fn string(&mut self) -> Option<String> {
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i;
        self.i += 1;
        while self.i < self.s.len() {
            match self.s[self.i] {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    let literal = std::str::from_utf8(&self.s[start..self.i]).ok()?;
                    return serde_json::from_str(literal).ok();
                }
                _ => self.i += 1,
            }
        }
        None
    }
}

/// Whether a JSON number literal is a float in Python's `json.loads` (it has a fraction or
/// an exponent; otherwise it is an `int`).
pub(crate) fn is_float_literal(text: &str) -> bool {
    text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

/// `float.__repr__`, with `json.dumps`'s spelling of the non-finite values.
///
/// CPython's `repr` is the shortest string that round-trips (`format_float_short` in
/// `Python/pystrtod.c`, mode `'r'`): positional notation when the decimal exponent lies in
/// `-4 <= e < 16`, scientific otherwise with a signed exponent of at least two digits, and
/// `.0` appended to a positional integer.
pub(crate) fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    shortest_digits(x, -4, true)
}

/// A float as pydantic-core writes it in JSON (see [`Floats::Pydantic`]).
pub(crate) fn float_pydantic(x: f64) -> String {
    if !x.is_finite() {
        return "null".into();
    }
    shortest_digits(x, -5, false)
}

/// The shortest round-trip digits of a finite `x`, positional when the decimal point position
/// lies in `lowest_positional < decpt <= 16`, scientific otherwise with a signed exponent,
/// zero-padded to two digits when `pad_exponent` (as CPython pads it).
fn shortest_digits(x: f64, lowest_positional: i32, pad_exponent: bool) -> String {
    // Rust's `{:e}` yields the same shortest round-trip digits: "d[.ddd]e<exp>".
    let sci = format!("{:e}", x);
    let (mantissa, exp) = sci
        .split_once('e')
        .expect("LowerExp always writes an exponent");
    let exp: i32 = exp.parse().expect("LowerExp writes a decimal exponent");
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    // Python's decpt: the value is 0.d1d2... * 10^decpt.
    let decpt = exp + 1;
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if decpt <= lowest_positional || decpt > 16 {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        let magnitude = e.unsigned_abs();
        if pad_exponent && magnitude < 10 {
            out.push('0');
        }
        out.push_str(&magnitude.to_string());
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-decpt) as usize));
        out.push_str(&digits);
    } else {
        let decpt = decpt as usize;
        if digits.len() <= decpt {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', decpt - digits.len()));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..decpt]);
            out.push('.');
            out.push_str(&digits[decpt..]);
        }
    }
    out
}

/// A string literal as `json.encoder` writes it (`encode_basestring` or, with `ensure_ascii`,
/// `encode_basestring_ascii`).
pub(crate) fn write_str(out: &mut String, s: &str, ensure_ascii: bool) {
    out.reserve(s.len() + 2);
    out.push('"');
    // Characters written as they are go out in runs, copied at once: where the run began.
    // Scanned by byte: it stops only at an ASCII byte or, with `ensure_ascii`, at the first
    // byte of a character beyond ASCII (whose other bytes are stepped over with it), so always
    // where a character begins.
    let bytes = s.as_bytes();
    let mut plain = 0;
    let mut at = 0;
    while let Some(&b) = bytes.get(at) {
        let as_is = b >= 0x20 && b != b'"' && b != b'\\' && (!ensure_ascii || b < 0x7f);
        if as_is {
            at += 1;
            continue;
        }
        let Some(c) = s[at..].chars().next() else {
            break;
        };
        out.push_str(&s[plain..at]);
        at += c.len_utf8();
        plain = at;
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => push_u_escape(out, c as u32),
            // Outside printable ASCII, with `ensure_ascii`: its UTF-16 units.
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    push_u_escape(out, *unit as u32);
                }
            }
        }
    }
    out.push_str(&s[plain..]);
    out.push('"');
}

fn push_u_escape(out: &mut String, unit: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push_str("\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((unit >> shift) & 0xf) as usize] as char);
    }
}

/// `repr(s)` for a Python `str`: single quotes unless the text holds a `'` and no `"`.
///
/// Used where the reference interpolates `{x!r}` into a message, and for
/// `repr(TraceState)` in span JSON.
pub(crate) fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `str(v)` of the Python value `json.loads` would make of `v` (used by the FAIRsharing
/// projection, which stringifies list members). Containers print as Python's `repr`.
pub(crate) fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// `repr(v)` of the Python value `json.loads` would make of `v`.
pub(crate) fn py_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => {
            let mut s = String::new();
            write_number(&mut s, n.as_str(), Floats::Python);
            match s.as_str() {
                "Infinity" => "inf".into(),
                "-Infinity" => "-inf".into(),
                "NaN" => "nan".into(),
                _ => s,
            }
        }
        Value::String(s) => str_repr(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", str_repr(k), py_repr(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_pydantic_matches_pydantic_core_to_json() {
        // pydantic_core.to_json(vals) with pydantic-core 2.50.5 (ag-ui-protocol's venv).
        let cases = [
            (1e-4, "0.0001"),
            (1.5e-4, "0.00015"),
            (1e-5, "0.00001"),
            (2.5e-5, "0.000025"),
            (1e-6, "1e-6"),
            (1.2345e-6, "1.2345e-6"),
            (1e-7, "1e-7"),
            (1.5e-10, "1.5e-10"),
            (5e-324, "5e-324"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (1e300, "1e+300"),
            (0.1, "0.1"),
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (1e-320, "1e-320"),
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
        ];
        for (x, want) in cases {
            assert_eq!(float_pydantic(x), want, "{x:e}");
        }
    }

    #[test]
    fn float_repr_matches_cpython_for_the_boundaries_of_positional_notation() {
        let cases = [
            (1.0, "1.0"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345.6, "123456789012345.6"),
            (1e-5, "1e-05"),
            (1e-7, "1e-07"),
            (0.0001, "0.0001"),
            (-0.0, "-0.0"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (2.5e-5, "2.5e-05"),
            (1.0000000000000002, "1.0000000000000002"),
            (1e22, "1e+22"),
            (9007199254740993.0, "9007199254740992.0"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::NAN, "NaN"),
        ];
        for (x, want) in cases {
            assert_eq!(float_repr(x), want, "repr({x:e})");
        }
    }

    #[test]
    fn strings_escape_as_the_json_encoder_does() {
        let mut s = String::new();
        write_str(&mut s, "a\"\\\n\u{1}\u{7f}é😀", false);
        assert_eq!(s, "\"a\\\"\\\\\\n\\u0001\u{7f}é😀\"");
        let mut s = String::new();
        write_str(&mut s, "\u{7f}é😀/", true);
        assert_eq!(s, "\"\\u007f\\u00e9\\ud83d\\ude00/\"");
        // Plain runs between escapes, at either end, and none at all.
        let mixed = [
            "",
            "plain",
            "\tlead",
            "trail\n",
            "a\"b\\c\u{1f}d",
            "x é y 😀 z\u{7f}",
        ];
        for text in mixed {
            let mut s = String::new();
            write_str(&mut s, text, false);
            assert_eq!(s, serde_json::to_string(text).unwrap(), "{text:?}");
        }
        let mut s = String::new();
        write_str(&mut s, "x é y 😀 z\u{7f}\"", true);
        assert_eq!(s, "\"x \\u00e9 y \\ud83d\\ude00 z\\u007f\\\"\"");
    }

    #[test]
    fn repr_picks_quotes_like_python() {
        assert_eq!(str_repr("src:b"), "'src:b'");
        assert_eq!(str_repr("it's"), "\"it's\"");
        assert_eq!(str_repr("both ' and \""), "'both \\' and \"'");
    }

    #[test]
    fn minus_zero_integer_prints_as_zero_and_big_integers_keep_every_digit() {
        let v: Value = serde_json::from_str("[-0, 18446744073709551617, 1E2]").unwrap();
        assert_eq!(
            dumps(&v, Style::CANONICAL),
            "[0,18446744073709551617,100.0]"
        );
    }

    #[test]
    fn reformat_keeps_key_order_and_rewrites_numbers_and_escapes() {
        let text = r#"{ "b" : [1.0e1, -0, 18446744073709551616] ,"a":{"\u00e9":null}}"#;
        assert_eq!(
            reformat(text, Style::DEFAULT).unwrap(),
            "{\"b\": [10.0, 0, 18446744073709551616], \"a\": {\"\\u00e9\": null}}"
        );
        assert_eq!(reformat("[1,]", Style::DEFAULT), None);
        assert_eq!(reformat("[1] 2", Style::DEFAULT), None);
    }

    #[test]
    fn indent_two_matches_the_run_store_layout() {
        let v: Value = serde_json::from_str(r#"{"a":[1,{}],"b":[]}"#).unwrap();
        assert_eq!(
            dumps(&v, Style::INDENT2),
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}"
        );
    }
}
