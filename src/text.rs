//! Text from a peer made safe to print: what a terminal or a log line shows as it is, and
//! nothing it would act on. A control character (ESC above all: ECMA-48 escape sequences can
//! retitle a window, clear the screen or move the cursor) is written as `\u{…}`, a byte that
//! is not UTF-8 as `\xNN`; printable characters stay as they are.

use std::borrow::Cow;

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
pub fn escape_str(text: &str, lines: bool) -> Cow<'_, str> {
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
}
