//! Server-Sent Events (WHATWG HTML §9.2), the framing AG-UI and streamed A2A run over: a
//! writer ([`event`], [`comment`]) and a reader ([`Reader`]).
//!
//! Writing: each event is one `data:` line holding single-line JSON, ended by a blank line,
//! with LF line ends only: `@ag-ui/client` splits events on `\n\n` and fails on CRLF, and this
//! is exactly what ag-ui-protocol's Python `EventEncoder` and the a2a-sdk servers (sse-starlette)
//! write. Comment lines (`: …`) keep a connection alive through proxies and are ignored by
//! every client.
//!
//! Reading follows the parsing rules of §9.2.6 for any server: lines end in CRLF, LF or CR; a
//! leading byte order mark is skipped; `data` lines join with `\n`; `event`, `id` and `retry`
//! are kept; a field without a colon is a field with an empty value; a blank line dispatches
//! the event, and an event with no data is not dispatched; an unfinished event at the end of
//! the stream is dropped. A line or an event longer than the reader's limit is an error, never
//! unbounded memory.

use std::fmt;
use std::io::Read;

/// The content type of an event stream.
pub(crate) const CONTENT_TYPE: &str = "text/event-stream";

/// One event: `data: <json>\n\n`. The JSON must be a single line (serde_json's compact output
/// always is).
pub(crate) fn event(json: &str) -> Vec<u8> {
    debug_assert!(
        !json.contains('\n'),
        "an SSE data line must not contain a newline"
    );
    let mut out = Vec::with_capacity(json.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(json.as_bytes());
    out.extend_from_slice(b"\n\n");
    out
}

/// A comment line, ignored by clients: `: <text>\n\n`. Every line end in `text` (LF, CR or
/// both: WHATWG HTML §9.2.5 ends a line at any of them) becomes a space, so the text stays one
/// comment and can never start a `data:` line of its own.
pub(crate) fn comment(text: &str) -> Vec<u8> {
    format!(": {}\n\n", text.replace(['\n', '\r'], " ")).into_bytes()
}

/// One dispatched event (§9.2.6 "dispatch the event").
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    /// The event type (`event:`); `message` when none was given.
    pub(crate) name: String,
    /// The `data:` lines, joined with `\n`.
    pub(crate) data: String,
    /// The last event id seen on the stream (`id:`), if any.
    pub(crate) last_id: Option<String>,
    /// A reconnection time the server asked for in this event (`retry:`), in milliseconds.
    pub(crate) retry_ms: Option<u64>,
}

/// What a stream yields: an event, or a comment (a keep-alive, say).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Item {
    /// A dispatched event.
    Event(Event),
    /// A comment line's text, after the colon and one space.
    Comment(String),
}

/// Why a stream could not be read.
#[derive(Debug)]
pub(crate) enum SseError {
    /// A line, or the data of one event, is longer than the reader's limit.
    TooLong { limit: usize },
    /// A line is not UTF-8 (§9.2.5: the stream is UTF-8).
    NotUtf8 { line: usize },
    /// Reading the underlying stream failed (a timeout, a reset connection).
    Io(std::io::Error),
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::TooLong { limit } => write!(
                f,
                "the event stream holds a line or an event longer than {limit} bytes"
            ),
            SseError::NotUtf8 { line } => {
                write!(f, "line {line} of the event stream is not UTF-8")
            }
            SseError::Io(e) => write!(f, "reading the event stream failed: {e}"),
        }
    }
}

impl std::error::Error for SseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SseError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Reads events from a byte stream as they arrive, holding at most `limit` bytes of one line or
/// event. Every read is the underlying reader's: give it a timeout (a socket's read timeout) so
/// that a silent server cannot hold the reader forever.
pub(crate) struct Reader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Where the unread bytes of `buf` start.
    at: usize,
    eof: bool,
    limit: usize,
    /// Lines read, for error messages.
    lines: usize,
    started: bool,
    // The event being built.
    name: Option<String>,
    data: String,
    has_data: bool,
    last_id: Option<String>,
    retry_ms: Option<u64>,
}

/// The reader's default limit on a line or an event: 16 MiB, as large as a request body the
/// HTTP server accepts.
// The fuzz target and the tests read with it; the relay sets its own.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) const DEFAULT_LIMIT: usize = 16 << 20;

impl<R: Read> Reader<R> {
    /// A reader of `inner` with the [`DEFAULT_LIMIT`].
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn new(inner: R) -> Reader<R> {
        Reader::with_limit(inner, DEFAULT_LIMIT)
    }

    /// A reader of `inner` that refuses a line or an event longer than `limit` bytes.
    pub(crate) fn with_limit(inner: R, limit: usize) -> Reader<R> {
        Reader {
            inner,
            buf: Vec::new(),
            at: 0,
            eof: false,
            limit,
            lines: 0,
            started: false,
            name: None,
            data: String::new(),
            has_data: false,
            last_id: None,
            retry_ms: None,
        }
    }

    /// The reader it reads from, and with it any bytes this reader has not yet taken; bytes
    /// taken and not yet returned as an event are dropped.
    pub(crate) fn into_inner(self) -> R {
        self.inner
    }

    /// The next event or comment; `None` at the end of the stream (an unfinished event there is
    /// dropped, §9.2.6).
    pub(crate) fn next_item(&mut self) -> Result<Option<Item>, SseError> {
        loop {
            let Some(line) = self.next_line()? else {
                return Ok(None);
            };
            if line.is_empty() {
                if let Some(event) = self.dispatch() {
                    return Ok(Some(Item::Event(event)));
                }
                continue;
            }
            if let Some(text) = line.strip_prefix(':') {
                return Ok(Some(Item::Comment(
                    text.strip_prefix(' ').unwrap_or(text).to_string(),
                )));
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_str(), ""),
            };
            match field {
                "data" => {
                    if self.data.len() + value.len() + 1 > self.limit {
                        return Err(SseError::TooLong { limit: self.limit });
                    }
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                    self.has_data = true;
                }
                "event" => self.name = Some(value.to_string()),
                "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
                "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                    self.retry_ms = value.parse().ok();
                }
                _ => {} // §9.2.6: any other field is ignored
            }
        }
    }

    /// The next event, skipping comments; `None` at the end of the stream.
    pub(crate) fn next_event(&mut self) -> Result<Option<Event>, SseError> {
        loop {
            match self.next_item()? {
                Some(Item::Event(e)) => return Ok(Some(e)),
                Some(Item::Comment(_)) => {}
                None => return Ok(None),
            }
        }
    }

    /// The event built so far, if it has data; the per-event fields reset either way.
    fn dispatch(&mut self) -> Option<Event> {
        let name = self.name.take();
        let retry_ms = self.retry_ms.take();
        if !self.has_data {
            self.data.clear();
            return None;
        }
        self.has_data = false;
        Some(Event {
            name: name
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "message".into()),
            data: std::mem::take(&mut self.data),
            last_id: self.last_id.clone(),
            retry_ms,
        })
    }

    /// The next line without its end (CRLF, LF or CR); `None` at the end of the stream. A last
    /// line without an end is dropped with its event.
    fn next_line(&mut self) -> Result<Option<String>, SseError> {
        loop {
            let unread = &self.buf[self.at..];
            let end = unread.iter().position(|b| *b == b'\n' || *b == b'\r');
            if let Some(i) = end {
                // A CR as the last byte read may be the first half of a CRLF: read on first.
                let cr_at_edge = unread[i] == b'\r' && i + 1 == unread.len() && !self.eof;
                if !cr_at_edge {
                    // The line end: one byte, or two for CRLF.
                    let skip = 1 + usize::from(unread[i..].starts_with(b"\r\n"));
                    let mut line = &unread[..i];
                    if !self.started {
                        self.started = true;
                        line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
                    }
                    self.lines += 1;
                    let text = std::str::from_utf8(line)
                        .map_err(|_| SseError::NotUtf8 { line: self.lines })?
                        .to_string();
                    self.at += i + skip;
                    return Ok(Some(text));
                }
            } else if unread.len() > self.limit {
                return Err(SseError::TooLong { limit: self.limit });
            }
            if self.eof {
                return Ok(None);
            }
            self.fill()?;
        }
    }

    /// Read more bytes, first dropping those already consumed.
    fn fill(&mut self) -> Result<(), SseError> {
        if self.at > 0 {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        let mut chunk = [0u8; 8192];
        loop {
            match self.inner.read(&mut chunk) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(SseError::Io(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_lf_framed_data_lines_and_comments_are_ignored() {
        let mut stream = event(r#"{"type":"RUN_STARTED"}"#);
        stream.extend(comment("keep-alive"));
        stream.extend(event(r#"{"type":"RUN_FINISHED"}"#));
        let text = String::from_utf8(stream).unwrap();
        assert_eq!(
            text,
            "data: {\"type\":\"RUN_STARTED\"}\n\n: keep-alive\n\ndata: {\"type\":\"RUN_FINISHED\"}\n\n"
        );
        assert!(!text.contains('\r'));
    }

    /// A reader that hands out its bytes `step` at a time, as a socket may.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(self.bytes.len()).min(out.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn items(bytes: &[u8], step: usize) -> Vec<Item> {
        let mut reader = Reader::new(Trickle { bytes, step });
        let mut out = Vec::new();
        while let Some(item) = reader.next_item().unwrap() {
            out.push(item);
        }
        out
    }

    fn data(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Event(e) => Some(e.data.clone()),
                Item::Comment(_) => None,
            })
            .collect()
    }

    #[test]
    fn what_the_writer_writes_the_reader_reads_back_whatever_the_read_sizes() {
        let mut stream = event(r#"{"a":1}"#);
        stream.extend(comment("keep-alive"));
        stream.extend(event(r#"{"b":"ü"}"#));
        for step in [1, 2, 3, 7, 8192] {
            let got = items(&stream, step);
            assert_eq!(
                got,
                vec![
                    Item::Event(Event {
                        name: "message".into(),
                        data: r#"{"a":1}"#.into(),
                        last_id: None,
                        retry_ms: None
                    }),
                    Item::Comment("keep-alive".into()),
                    Item::Event(Event {
                        name: "message".into(),
                        data: r#"{"b":"ü"}"#.into(),
                        last_id: None,
                        retry_ms: None
                    }),
                ],
                "step {step}"
            );
        }
    }

    #[test]
    fn crlf_cr_and_lf_line_ends_and_a_leading_bom_all_read_the_same() {
        for stream in [
            "\u{feff}data: one\r\n\r\ndata: two\r\n\r\n",
            "data: one\r\rdata: two\r\r",
            "data: one\n\ndata: two\n\n",
        ] {
            for step in [1, 4, 100] {
                assert_eq!(
                    data(&items(stream.as_bytes(), step)),
                    vec!["one", "two"],
                    "{stream:?} in steps of {step}"
                );
            }
        }
    }

    #[test]
    fn fields_follow_the_whatwg_rules() {
        let stream = "event: update\nid: 7\nretry: 3000\ndata:no space\ndata:  two spaces\n\n\
                      data\n\n\
                      : just a comment\n\
                      id\ndata: after\nunknown: field\n\n\
                      event: nothing\n\n\
                      data: unfinished";
        let got = items(stream.as_bytes(), 5);
        let events: Vec<&Event> = got
            .iter()
            .filter_map(|i| match i {
                Item::Event(e) => Some(e),
                Item::Comment(_) => None,
            })
            .collect();
        assert_eq!(events.len(), 3, "{got:?}");
        assert_eq!(events[0].name, "update");
        assert_eq!(events[0].data, "no space\n two spaces");
        assert_eq!(events[0].last_id.as_deref(), Some("7"));
        assert_eq!(events[0].retry_ms, Some(3000));
        // `data` without a colon is data with an empty value.
        assert_eq!(events[1].data, "");
        assert_eq!(events[1].name, "message");
        assert_eq!(events[1].last_id.as_deref(), Some("7"), "the id persists");
        // `id` without a value resets the last id.
        assert_eq!(events[2].data, "after");
        assert_eq!(events[2].last_id.as_deref(), Some(""));
        assert!(got.contains(&Item::Comment("just a comment".into())));
    }

    #[test]
    fn a_line_or_an_event_beyond_the_limit_is_refused_and_bad_utf8_is_named() {
        let long = format!("data: {}\n\n", "x".repeat(100));
        let mut reader = Reader::with_limit(long.as_bytes(), 50);
        assert!(matches!(
            reader.next_item(),
            Err(SseError::TooLong { limit: 50 })
        ));
        let many = "data: 0123456789\n".repeat(10) + "\n";
        let mut reader = Reader::with_limit(many.as_bytes(), 64);
        assert!(matches!(reader.next_item(), Err(SseError::TooLong { .. })));
        let mut reader = Reader::new(&b"data: ok\n\ndata: \xff\n\n"[..]);
        assert!(matches!(reader.next_event(), Ok(Some(_))));
        let err = reader.next_event().unwrap_err();
        assert!(matches!(err, SseError::NotUtf8 { line: 3 }), "{err}");
    }

    /// Regression (found by the `sse` fuzz target): a bare CR in a comment's text ended the
    /// comment line for a browser, so `"x\rdata: {...}"` would have dispatched an event.
    #[test]
    fn a_line_end_of_any_kind_in_a_comment_stays_inside_the_comment() {
        for text in [
            "a\rdata: {}",
            "a\r\ndata: {}",
            "a\ndata: {}",
            "\r\r",
            "✓\u{1}\r?",
        ] {
            let framed = String::from_utf8(comment(text)).unwrap();
            let body = framed.strip_suffix("\n\n").expect("one frame");
            assert!(body.starts_with(": "), "{framed:?}");
            assert!(
                !body.contains(['\r', '\n']),
                "{text:?} broke the line: {framed:?}"
            );
        }
    }
}
