//! Text from a peer made safe to print: what a terminal or a log line shows as it is, and
//! nothing it would act on. A control character (ESC above all: ECMA-48 escape sequences can
//! retitle a window, clear the screen or move the cursor) is written as `\u{…}`, a byte that
//! is not UTF-8 as `\xNN`; printable characters stay as they are.
//!
//! Beside it, the crate's one text truncation ([`truncate`]), its one base64 (RFC 4648:
//! [`base64`], [`base64_decode`]) and its one percent-decoding ([`percent_decode`]), which
//! every layer above uses, and its one way past a poisoned lock ([`Unpoison`]).

use std::borrow::Cow;
use std::io::Write;

/// Write one diagnostic line to stderr, ignoring a failed write: what `stderr_line!` calls.
pub(crate) fn write_stderr_line(args: std::fmt::Arguments<'_>) {
    // One `write_all` of the whole line, so lines from several threads do not interleave.
    let line = format!("{args}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Bytes as text a terminal shows as they are; line ends are kept with `lines` (a bare CR is
/// dropped), and tabs always.
pub(crate) fn escape(bytes: &[u8], lines: bool) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        push_escaped(chunk.valid(), lines, &mut out);
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// `text` with every control character escaped (line ends too unless `lines`): borrowed when
/// there is none, as for nearly every string.
pub(crate) fn escape_str(text: &str, lines: bool) -> Cow<'_, str> {
    let safe = |c: char| !c.is_control() || c == '\t' || (lines && c == '\n');
    if text.chars().all(safe) {
        Cow::Borrowed(text)
    } else {
        let mut out = String::with_capacity(text.len() + 8);
        push_escaped(text, lines, &mut out);
        Cow::Owned(out)
    }
}

fn push_escaped(text: &str, lines: bool, out: &mut String) {
    for c in text.chars() {
        match c {
            '\n' if lines => out.push('\n'),
            '\r' if lines => {}
            '\t' => out.push('\t'),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
}

/// How much of a text [`truncate`] keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Keep {
    /// At most this many characters (code points, as Python slices a `str`).
    Chars(usize),
    /// At most this many bytes, cut back to a character boundary.
    Bytes(usize),
}

/// `text` cut to what `keep` allows, with `mark` after it when anything was cut (`"…"`, say;
/// `""` for none). Borrowed when nothing is added.
pub(crate) fn truncate<'a>(text: &'a str, keep: Keep, mark: &str) -> Cow<'a, str> {
    let end = match keep {
        Keep::Chars(n) => text.char_indices().nth(n).map_or(text.len(), |(at, _)| at),
        Keep::Bytes(n) => {
            let mut end = text.len().min(n);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            end
        }
    };
    if end == text.len() || mark.is_empty() {
        Cow::Borrowed(&text[..end])
    } else {
        Cow::Owned(format!("{}{mark}", &text[..end]))
    }
}

/// The two alphabets of RFC 4648.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Base64 {
    /// §4: `+` and `/`, padded with `=` to a multiple of four characters.
    Standard,
    /// §5: `-` and `_`, unpadded (as Python's `secrets.token_urlsafe` writes it).
    UrlSafe,
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `bytes` in base64 (RFC 4648 §4 or §5, as `alphabet` says).
pub(crate) fn base64(bytes: &[u8], alphabet: Base64) -> String {
    let digits = match alphabet {
        Base64::Standard => STANDARD,
        Base64::UrlSafe => URL_SAFE,
    };
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(digits[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
        if alphabet == Base64::Standard {
            out.push_str(&"=="[..3 - chunk.len()]);
        }
    }
    out
}

/// Decode standard base64 (RFC 4648 §4, padding optional); `None` if it is not base64.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().take_while(|&b| b != b'=').collect();
    if text.len() - digits.len() > 2 || digits.len() % 4 == 1 {
        return None;
    }
    let value = |c: u8| STANDARD.iter().position(|&x| x == c).map(|v| v as u32);
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    Some(out)
}

/// `%XX` escapes decoded (RFC 3986 §2.1), and with `plus_as_space` a `+` as a space (the
/// form encoding of a query string); `None` for a bad escape or bytes that are not UTF-8.
pub(crate) fn percent_decode(text: &str, plus_as_space: bool) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' if plus_as_space => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// A lock whose holder panicked is taken all the same: every guarded value in the crate is
/// left consistent between statements (a counter, a map, a queue), so one panicking request
/// must not take every later one down with it. For what `Mutex::lock`, `RwLock::read` and
/// `write`, and `Condvar::wait` return.
pub(crate) trait Unpoison<G> {
    /// The guard, poisoned or not.
    fn unpoisoned(self) -> G;
}

impl<G> Unpoison<G> for std::sync::LockResult<G> {
    fn unpoisoned(self) -> G {
        self.unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_shown_not_acted_on() {
        let attack = "ok\u{1b}]0;PWNED\u{7}\u{1b}[2J done";
        assert_eq!(
            escape_str(attack, true),
            "ok\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J done"
        );
        assert_eq!(escape(attack.as_bytes(), false), escape_str(attack, false));
    }

    #[test]
    fn plain_text_is_borrowed_and_line_ends_kept_only_when_asked() {
        assert!(matches!(
            escape_str("plain text\tand tab", false),
            Cow::Borrowed(_)
        ));
        assert_eq!(escape_str("a\nb", true), "a\nb");
        assert_eq!(escape_str("a\nb", false), "a\\u{a}b");
        assert_eq!(escape(b"a\r\nb\xff", true), "a\nb\\xff");
    }

    #[test]
    fn truncation_counts_characters_or_bytes_and_marks_only_a_cut() {
        assert_eq!(truncate("héllo", Keep::Chars(2), "…"), "hé…");
        assert_eq!(truncate("héllo", Keep::Chars(5), "…"), "héllo");
        assert!(matches!(
            truncate("héllo", Keep::Chars(9), "…"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            truncate("héllo", Keep::Bytes(2), ""),
            "h",
            "never inside a character"
        );
        assert_eq!(truncate("héllo", Keep::Bytes(3), "[cut]"), "hé[cut]");
    }

    #[test]
    fn percent_decoding_reads_escapes_and_a_plus_only_in_a_query() {
        assert_eq!(
            percent_decode("a%20b+c%2B", true).as_deref(),
            Some("a b c+")
        );
        assert_eq!(
            percent_decode("a%20b+c%2B", false).as_deref(),
            Some("a b+c+")
        );
        assert_eq!(percent_decode("%C3%A9", false).as_deref(), Some("é"));
        for bad in ["%", "%4", "%zz", "%C3", "a%g0"] {
            assert_eq!(percent_decode(bad, true), None, "{bad}");
        }
    }

    #[test]
    fn base64_follows_rfc_4648_test_vectors_both_ways() {
        // RFC 4648 §10.
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes(), Base64::Standard), coded);
            assert_eq!(base64_decode(coded).unwrap(), plain.as_bytes());
        }
        assert_eq!(base64_decode("Zm9v!"), None);
        assert_eq!(base64_decode("Z"), None);
    }

    #[test]
    fn base64url_follows_rfc_4648_test_vectors_without_padding() {
        // RFC 4648 §10, padding dropped.
        for (input, want) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes(), Base64::UrlSafe), want, "{input:?}");
        }
        assert_eq!(base64(&[0xfb, 0xff], Base64::UrlSafe), "-_8");
    }

    #[test]
    fn base64url_matches_rfc_4648_without_padding() {
        let base64url = |bytes: &[u8]| base64(bytes, Base64::UrlSafe);
        assert_eq!(base64url(b""), "");
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
        assert_eq!(base64url(&[0u8; 32]).len(), 43);
    }
}
