//! The wire log: every HTTP message a process sends or receives, byte for byte, one JSON line
//! per message, for auditors (`--wire-log FILE`; the format is `vendor-notes/wire-log.md`).
//!
//! ```text
//! {"type":"message","time":"2026-01-02T03:04:05.123456Z","side":"server","direction":"in",
//!  "connection":7,"peer":"127.0.0.1:50412","local":"127.0.0.1:8000","complete":true,
//!  "head":"POST /a2a HTTP/1.1\r\nHost: …\r\n\r\n","head_encoding":"utf-8",
//!  "body":"{\"jsonrpc\":\"2.0\",…}","body_encoding":"utf-8","body_bytes":412,"redacted":[]}
//! ```
//!
//! - Every logged byte passes one seam, a `Tap` per connection: the server's connections,
//!   the client's (TCP or TLS, blocking calls and streams alike; where a client's message
//!   ends is read from its own framing) and the in-memory transport's client all hand it what
//!   they read and write.
//! - A message is its head (start line and header fields, up to and including the empty line)
//!   and its body exactly as framed on the wire (a chunked body with its chunk sizes). Text that
//!   is valid UTF-8 is written as a JSON string; anything else as standard base64 (RFC 4648
//!   §4), and `*_encoding` says which.
//! - Secrets are masked in place, each byte by `*`, so lengths and framing stay as they were:
//!   the credentials of `Authorization` and `Proxy-Authorization` (the scheme is kept), the
//!   value of `DD-Signature` ([`super::sign`]), and the string value of every
//!   `"dd.delegation_token"` member in a body. `redacted` names what was masked. Nothing else
//!   differs from the bytes on the wire.
//! - A streamed response (Server-Sent Events, a listing) is one message, logged when its last
//!   chunk has been written; `complete` is `false` when the connection ended first.
//! - At most [`MESSAGE_CAP`] bytes of one message are kept: a message that grows past it (a
//!   large body, a stream that never ends) is written as soon as it does, as its first
//!   [`MESSAGE_CAP`] bytes marked `"truncated": true`, and the rest is only counted, in a
//!   `truncated` line written when the message ends. So the log holds at most that much of any
//!   message in memory, and a stream shows in the file while it is open.
//! - Logging never blocks a request: the bytes are handed to a writer thread through a queue
//!   bounded in messages ([`QUEUE_MESSAGES`]) and bytes ([`QUEUE_BYTES`]) (the crate's one
//!   background worker, `wire::worker`). A message that does not fit is dropped and counted;
//!   the writer records each run of drops as a `lost` line as soon as it can, and
//!   [`WireLog::close`] ends the file with an `end` line of the totals.

use crate::text::{Base64, base64, base64_decode, escape};
use crate::wire::WireError;
use crate::wire::worker::{self, Jobs, Worker};
use serde_json::{Value, json};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The most messages waiting for the writer.
pub(crate) const QUEUE_MESSAGES: usize = 4096;
/// The most bytes of messages waiting for the writer.
pub(crate) const QUEUE_BYTES: usize = 64 * 1024 * 1024;
/// The most bytes of one message kept and written (head and body as framed, 1 MiB); past it,
/// bytes are counted, not kept.
pub(crate) const MESSAGE_CAP: usize = 1024 * 1024;

/// The member of a message's metadata whose value is a bearer credential for delegation.
const DELEGATION_TOKEN_KEY: &[u8] = b"\"dd.delegation_token\"";
/// Header fields whose values are masked, and whether the first word of the value, a scheme,
/// is kept (of credentials, `Bearer ****`) rather than masked too.
const MASKED_FIELDS: [(&str, bool); 3] = [
    ("authorization", true),
    ("proxy-authorization", true),
    ("dd-signature", false),
];

/// Which end of the connection this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// This process accepted the connection.
    Server,
    /// This process opened it.
    Client,
}

impl Side {
    /// `server` or `client`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

/// Which way a message went, seen from this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Received.
    In,
    /// Sent.
    Out,
}

impl Direction {
    /// `in` or `out`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Direction::In => "in",
            Direction::Out => "out",
        }
    }
}

/// One HTTP message as it crossed the wire.
#[derive(Clone, Debug)]
pub(crate) struct Capture {
    pub(crate) side: Side,
    pub(crate) direction: Direction,
    /// The connection, numbered in this process ([`connection_id`]).
    pub(crate) connection: u64,
    /// The other end: an address, or the URL's authority for a client.
    pub(crate) peer: String,
    /// This end's address, when known.
    pub(crate) local: Option<String>,
    /// When the message's last byte (or, for its first part, the byte that passed the cap)
    /// was read or written, in nanoseconds since the epoch.
    pub(crate) time_ns: u64,
    /// Head and body, as on the wire.
    pub(crate) bytes: Vec<u8>,
    /// `false` when the message was cut short (the peer went away, a limit was hit).
    pub(crate) complete: bool,
    /// Which part of its message this is.
    pub(crate) part: Part,
}

/// Which part of a message a [`Capture`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// All of it.
    Whole,
    /// Its first [`MESSAGE_CAP`] bytes: more followed.
    First,
    /// None of its bytes: how many followed its first [`MESSAGE_CAP`], not kept.
    Rest(u64),
}

/// One connection as the wire log sees it: the one seam every logged byte passes through, on
/// both sides. The server's connections ([`super::http::server`]) hand it what they read and
/// write; the client's ([`super::http::client`]) what ureq's transport sends and receives, over
/// TCP or TLS, for blocking and streamed calls alike, and what the in-memory transport carries.
///
/// It holds the message coming in and the one going out while their bytes pass, each kept up
/// to [`MESSAGE_CAP`] (written as its first part as soon as it passes the cap, counted after
/// that), and writes a message when its side says it has ended ([`Tap::end`]); one still open
/// when the tap is dropped is written as incomplete. A tap with no log ([`Tap::off`]) does
/// nothing, so a connection need not ask whether it is logged.
pub(crate) struct Tap {
    log: Option<WireLog>,
    side: Side,
    connection: u64,
    peer: String,
    local: Option<String>,
    /// The message coming in, and the one going out, while open.
    open: [Option<Recording>; 2],
}

/// A message whose bytes are passing: its first [`MESSAGE_CAP`] bytes (none once they have
/// been written as its first part), the count of the bytes after them, and when the last
/// byte passed.
#[derive(Default)]
struct Recording {
    bytes: Vec<u8>,
    beyond: u64,
    last_ns: u64,
}

impl Tap {
    /// A tap for a connection that is not logged.
    pub(crate) fn off() -> Tap {
        Tap {
            log: None,
            side: Side::Server,
            connection: 0,
            peer: String::new(),
            local: None,
            open: [None, None],
        }
    }

    /// A tap writing to `log` what `side` of connection `connection` (see [`connection_id`])
    /// reads and writes; `peer` is the other end (an address, or a URL's authority), `local`
    /// this end's address when known.
    pub(crate) fn new(
        log: &WireLog,
        side: Side,
        connection: u64,
        peer: String,
        local: Option<String>,
    ) -> Tap {
        Tap {
            log: Some(log.clone()),
            side,
            connection,
            peer,
            local,
            open: [None, None],
        }
    }

    /// Bytes read, part of the message coming in (one is begun if none is open).
    pub(crate) fn received(&mut self, bytes: &[u8]) {
        self.push(Direction::In, bytes);
    }

    /// Bytes written, part of the message going out (one is begun if none is open).
    pub(crate) fn sent(&mut self, bytes: &[u8]) {
        self.push(Direction::Out, bytes);
    }

    /// A message whose bytes are all at hand, going `direction`.
    pub(crate) fn message(&mut self, direction: Direction, bytes: &[u8], complete: bool) {
        self.push(direction, bytes);
        self.end(direction, complete);
    }

    fn push(&mut self, direction: Direction, data: &[u8]) {
        let Some(log) = &self.log else { return };
        if data.is_empty() {
            return;
        }
        let now = crate::time::now_ns();
        let open = self.open[direction as usize].get_or_insert_with(Recording::default);
        open.last_ns = now;
        if open.beyond > 0 {
            open.beyond += data.len() as u64;
            return;
        }
        let take = MESSAGE_CAP.saturating_sub(open.bytes.len()).min(data.len());
        open.bytes.extend_from_slice(&data[..take]);
        open.beyond = (data.len() - take) as u64;
        if open.beyond > 0 {
            let first = std::mem::take(&mut open.bytes);
            log.record(self.capture(direction, first, false, Part::First, now));
        }
    }

    /// The message going `direction` has ended (`complete`: in full): write it, or, if its
    /// first part was written, the count of its rest. Nothing if none is open.
    pub(crate) fn end(&mut self, direction: Direction, complete: bool) {
        let Some(open) = self.open[direction as usize].take() else {
            return;
        };
        let Some(log) = &self.log else { return };
        let capture = if open.beyond == 0 {
            self.capture(direction, open.bytes, complete, Part::Whole, open.last_ns)
        } else {
            let rest = Part::Rest(open.beyond);
            self.capture(direction, Vec::new(), complete, rest, open.last_ns)
        };
        log.record(capture);
    }

    fn capture(
        &self,
        direction: Direction,
        bytes: Vec<u8>,
        complete: bool,
        part: Part,
        time_ns: u64,
    ) -> Capture {
        Capture {
            side: self.side,
            direction,
            connection: self.connection,
            peer: self.peer.clone(),
            local: self.local.clone(),
            time_ns,
            bytes,
            complete,
            part,
        }
    }
}

impl Drop for Tap {
    /// A message still open when its connection is done with was cut short.
    fn drop(&mut self) {
        self.end(Direction::In, false);
        self.end(Direction::Out, false);
    }
}

/// What the writer has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WireStats {
    /// Message lines written.
    pub(crate) written: u64,
    /// Messages dropped because the queue was full (or the writer had stopped).
    pub(crate) dropped: u64,
    /// Lines that could not be written to the file.
    pub(crate) failed: u64,
}

impl fmt::Display for WireStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} messages written, {} dropped (queue full), {} failed to write",
            self.written, self.dropped, self.failed
        )
    }
}

/// Why a wire log could not be opened.
#[derive(Debug)]
pub(crate) enum WireLogError {
    /// The file could not be opened for appending.
    Open {
        /// The file named.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The writer thread could not be started.
    Thread(std::io::Error),
}

impl fmt::Display for WireLogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireLogError::Open { path, error } => {
                write!(f, "cannot open the wire log {}: {error}", path.display())
            }
            WireLogError::Thread(e) => write!(f, "cannot start the wire log's writer: {e}"),
        }
    }
}

impl std::error::Error for WireLogError {}

impl From<WireLogError> for WireError {
    fn from(e: WireLogError) -> WireError {
        match e {
            WireLogError::Open { path, error } => {
                WireError::io(format!("opening the wire log {}", path.display()), error)
            }
            WireLogError::Thread(error) => WireError::io("starting the wire log's writer", error),
        }
    }
}

/// A wire log being written: cheap to clone, shared by a server and the clients of a process.
#[derive(Clone)]
pub(crate) struct WireLog {
    inner: Arc<Inner>,
}

impl fmt::Debug for WireLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WireLog")
            .field("path", &self.inner.path)
            .finish()
    }
}

struct Inner {
    path: PathBuf,
    queue: Worker<Capture>,
    written: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
}

impl Inner {
    fn stats(&self) -> WireStats {
        WireStats {
            written: self.written.load(Ordering::SeqCst),
            dropped: self.dropped.load(Ordering::SeqCst),
            failed: self.failed.load(Ordering::SeqCst),
        }
    }
}

/// Connections are numbered once per process, whichever side opened them, so the ids in one
/// wire log never collide.
static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// A new connection id.
pub(crate) fn connection_id() -> u64 {
    NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed)
}

impl WireLog {
    /// Open `path` for appending (created with mode 0600: it holds message bodies) and start
    /// the writer thread, with a queue of [`QUEUE_MESSAGES`] and [`QUEUE_BYTES`].
    pub(crate) fn create(path: impl AsRef<Path>) -> Result<WireLog, WireLogError> {
        WireLog::with_queue(path, QUEUE_MESSAGES, QUEUE_BYTES)
    }

    /// [`WireLog::create`] with a queue of at most `messages` messages and `bytes` bytes.
    pub(crate) fn with_queue(
        path: impl AsRef<Path>,
        messages: usize,
        bytes: usize,
    ) -> Result<WireLog, WireLogError> {
        let path = path.as_ref().to_path_buf();
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).map_err(|error| WireLogError::Open {
            path: path.clone(),
            error,
        })?;
        let (queue, jobs) = worker::queue(messages, bytes);
        let inner = Arc::new(Inner {
            path,
            queue,
            written: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        });
        let writer = Arc::clone(&inner);
        inner
            .queue
            .start("ddwire-wire-log", move || write_loop(&writer, file, &jobs))
            .map_err(WireLogError::Thread)?;
        Ok(WireLog { inner })
    }

    /// The file written.
    pub(crate) fn path(&self) -> &Path {
        &self.inner.path
    }

    /// What was written, dropped and failed so far.
    pub(crate) fn stats(&self) -> WireStats {
        self.inner.stats()
    }

    /// Hand a message to the writer, never waiting: if the queue is full it is dropped and
    /// counted.
    pub(crate) fn record(&self, capture: Capture) {
        let len = capture.bytes.len();
        if self.inner.queue.offer(capture, len).is_err() {
            self.inner.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Stop taking messages, let the writer write what is queued and an `end` line with the
    /// totals, and wait for it up to `timeout`. Returns the totals. Later messages are dropped.
    pub(crate) fn close(&self, timeout: Duration) -> WireStats {
        self.inner.queue.close(timeout);
        self.stats()
    }
}

/// The writer: one line per message; a `lost` line whenever messages were dropped since the
/// last one; an `end` line once every sender is gone. Flushes whenever the queue is empty.
fn write_loop(inner: &Inner, file: File, jobs: &Jobs<Capture>) {
    let mut out = BufWriter::with_capacity(64 * 1024, file);
    let mut reported = 0u64;
    let put = |line: &Value, out: &mut BufWriter<File>| -> bool {
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        out.write_all(&bytes).is_ok()
    };
    loop {
        let capture = match jobs.try_next() {
            Ok(c) => Some(c),
            Err(crossbeam_channel::TryRecvError::Empty) => {
                if out.flush().is_err() {
                    inner.failed.fetch_add(1, Ordering::SeqCst);
                }
                jobs.next()
            }
            Err(crossbeam_channel::TryRecvError::Disconnected) => None,
        };
        let dropped = inner.dropped.load(Ordering::SeqCst);
        if dropped > reported {
            let line = json!({
                "type": "lost",
                "time": crate::time::rfc3339(crate::time::now_ns() as i128),
                "messages": dropped - reported,
                "reason": "the wire log's queue was full; these messages were not logged",
            });
            if put(&line, &mut out) {
                reported = dropped;
            }
        }
        let Some(capture) = capture else { break };
        if put(&message_line(&capture), &mut out) {
            inner.written.fetch_add(1, Ordering::SeqCst);
        } else {
            inner.failed.fetch_add(1, Ordering::SeqCst);
        }
    }
    let stats = inner.stats();
    let end = json!({
        "type": "end",
        "time": crate::time::rfc3339(crate::time::now_ns() as i128),
        "written": stats.written,
        "dropped": stats.dropped,
        "failed": stats.failed,
    });
    if !put(&end, &mut out) || out.flush().is_err() {
        inner.failed.fetch_add(1, Ordering::SeqCst);
    }
}

/// The JSON line of one message, secrets masked; of the rest of a message past the cap, its
/// count.
fn message_line(c: &Capture) -> Value {
    if let Part::Rest(bytes) = c.part {
        return json!({
            "type": "truncated",
            "time": crate::time::rfc3339(c.time_ns as i128),
            "side": c.side.as_str(),
            "direction": c.direction.as_str(),
            "connection": c.connection,
            "peer": c.peer,
            "complete": c.complete,
            "logged_bytes": MESSAGE_CAP,
            "bytes_not_logged": bytes,
        });
    }
    let mut bytes = c.bytes.clone();
    let split = head_end(&bytes).unwrap_or(bytes.len());
    let mut redacted: Vec<&str> = Vec::new();
    let (head, body) = bytes.split_at_mut(split);
    redact_head(head, &mut redacted);
    if redact_tokens(body) {
        redacted.push("dd.delegation_token");
    }
    let (head_text, head_encoding) = encode(head);
    let (body_text, body_encoding) = encode(body);
    let mut line = json!({
        "type": "message",
        "time": crate::time::rfc3339(c.time_ns as i128),
        "side": c.side.as_str(),
        "direction": c.direction.as_str(),
        "connection": c.connection,
        "peer": c.peer,
        "local": c.local,
        "complete": c.complete,
        "head": head_text,
        "head_encoding": head_encoding,
        "body": body_text,
        "body_encoding": body_encoding,
        "body_bytes": body.len(),
        "redacted": redacted,
    });
    if c.part == Part::First {
        line["truncated"] = Value::Bool(true);
    }
    line
}

/// Where the head ends: just after the first empty line.
fn head_end(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
}

/// Text as a JSON string when it is UTF-8, else base64.
fn encode(bytes: &[u8]) -> (String, &'static str) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_string(), "utf-8"),
        Err(_) => (base64(bytes, Base64::Standard), "base64"),
    }
}

/// Mask the credentials of the fields that carry them, in place, naming each field masked.
fn redact_head(head: &mut [u8], redacted: &mut Vec<&'static str>) {
    let mut start = 0;
    while start < head.len() {
        let end = head[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(head.len(), |i| start + i + 1);
        let line = &mut head[start..end];
        if let Some(colon) = line.iter().position(|&b| b == b':') {
            let (name, value) = line.split_at_mut(colon);
            let name = std::str::from_utf8(name).unwrap_or("").trim();
            let lower = name.to_ascii_lowercase();
            let value = &mut value[1..];
            // The value without its line end.
            let len = value
                .iter()
                .rposition(|&b| b != b'\r' && b != b'\n')
                .map_or(0, |i| i + 1);
            let value = &mut value[..len];
            if let Some(&(field, keeps_scheme)) = MASKED_FIELDS.iter().find(|f| f.0 == lower) {
                // The leading spaces are kept, and the scheme if there is one.
                let lead = value
                    .iter()
                    .take_while(|&&b| b == b' ' || b == b'\t')
                    .count();
                let from = match value[lead..].iter().position(|&b| b == b' ') {
                    Some(i) if keeps_scheme => lead + i + 1,
                    _ => lead,
                };
                mask(&mut value[from..]);
                redacted.push(field);
            }
        }
        start = end;
    }
}

/// Mask the string value of every `"dd.delegation_token"` member; whether one was found.
fn redact_tokens(body: &mut [u8]) -> bool {
    let mut found = false;
    let mut from = 0;
    while let Some(at) = find(&body[from..], DELEGATION_TOKEN_KEY) {
        let mut i = from + at + DELEGATION_TOKEN_KEY.len();
        from = i;
        while body.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if body.get(i) != Some(&b':') {
            continue;
        }
        i += 1;
        while body.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if body.get(i) != Some(&b'"') {
            continue;
        }
        i += 1;
        while i < body.len() && body[i] != b'"' {
            let step = if body[i] == b'\\' { 2 } else { 1 };
            let end = (i + step).min(body.len());
            mask(&mut body[i..end]);
            i = end;
        }
        found = true;
        from = i;
    }
    found
}

fn mask(bytes: &mut [u8]) {
    bytes.iter_mut().for_each(|b| *b = b'*');
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// One line of a wire log, for people: a rule naming the message (time, connection, which
/// way, the peer, what was masked), then its head and body as text. Control characters a peer
/// sent are shown escaped (`\x1b`), never passed to the terminal; a body that is not UTF-8 is
/// decoded from base64 and shown the same way. `None` if the line is not a wire log line.
pub(crate) fn readable(line: &str) -> Option<String> {
    let doc: Value = serde_json::from_str(line).ok()?;
    let text = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or("");
    let number = |k: &str| doc.get(k).and_then(Value::as_u64).unwrap_or(0);
    match text("type") {
        "message" => {
            let direction = match text("direction") {
                "in" => "← in from",
                "out" => "→ out to",
                _ => return None,
            };
            let mut rule = format!(
                "── {}  conn {}  {} side  {direction} {}",
                text("time"),
                number("connection"),
                text("side"),
                escape(text("peer").as_bytes(), false),
            );
            if doc.get("truncated") == Some(&Value::Bool(true)) {
                rule.push_str("  (its first bytes only: see the truncated line)");
            } else if doc.get("complete") == Some(&Value::Bool(false)) {
                rule.push_str("  (incomplete)");
            }
            let masked: Vec<&str> = doc
                .get("redacted")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !masked.is_empty() {
                rule.push_str(&format!("  (masked: {})", masked.join(", ")));
            }
            let part = |k: &str| -> Option<Vec<u8>> {
                let value = text(k);
                match doc.get(format!("{k}_encoding")).and_then(Value::as_str) {
                    Some("base64") => base64_decode(value),
                    _ => Some(value.as_bytes().to_vec()),
                }
            };
            let head = part("head")?;
            let body = part("body")?;
            let mut out = rule;
            out.push('\n');
            out.push_str(escape(&head, true).trim_end_matches('\n'));
            out.push('\n');
            if !body.is_empty() {
                if doc.get("body_encoding").and_then(Value::as_str) == Some("base64") {
                    out.push_str(&format!(
                        "({} bytes that are not UTF-8, escaped below)\n",
                        body.len()
                    ));
                }
                out.push('\n');
                out.push_str(&escape(&body, true));
                if !body.ends_with(b"\n") {
                    out.push('\n');
                }
            }
            Some(out)
        }
        "truncated" => Some(format!(
            "── {}  conn {}  {} side  {} {}: {} more bytes of this message, over the {} logged, not logged{}\n",
            text("time"),
            number("connection"),
            text("side"),
            if text("direction") == "in" {
                "← in from"
            } else {
                "→ out to"
            },
            escape(text("peer").as_bytes(), false),
            number("bytes_not_logged"),
            number("logged_bytes"),
            if doc.get("complete") == Some(&Value::Bool(false)) {
                "  (incomplete)"
            } else {
                ""
            }
        )),
        "lost" => Some(format!(
            "!! {}  {} message(s) lost: {}\n",
            text("time"),
            number("messages"),
            text("reason")
        )),
        "end" => Some(format!(
            "── {}  end of log: {} written, {} dropped, {} failed to write\n",
            text("time"),
            number("written"),
            number("dropped"),
            number("failed")
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_readable_message_escapes_what_a_peer_could_use_against_a_terminal() {
        let line = message_line(&Capture {
            side: Side::Server,
            direction: Direction::In,
            connection: 9,
            peer: "127.0.0.1:2".into(),
            local: None,
            time_ns: 1_767_225_600_000_000_000,
            bytes: b"GET /x HTTP/1.1\r\nAuthorization: Bearer t0k\r\n\r\nhi \x1b[31mred\xff"
                .to_vec(),
            complete: false,
            part: Part::Whole,
        })
        .to_string();
        let text = readable(&line).unwrap();
        assert_eq!(
            text,
            "── 2026-01-01T00:00:00Z  conn 9  server side  ← in from 127.0.0.1:2  (incomplete)  (masked: authorization)\n\
             GET /x HTTP/1.1\nAuthorization: Bearer ***\n\
             (12 bytes that are not UTF-8, escaped below)\n\n\
             hi \\u{1b}[31mred\\xff\n"
        );
        assert_eq!(readable("{\"type\":\"other\"}"), None);
        assert_eq!(readable("not json"), None);
    }

    #[test]
    fn credentials_and_signatures_are_masked_in_place_keeping_the_scheme_and_lengths() {
        let mut head = b"POST /a2a HTTP/1.1\r\nauthorization: Bearer s3cr3t\r\nDD-Signature: v1=abcd\r\nDD-Nonce: n\r\n\r\n".to_vec();
        let before = head.len();
        let mut redacted = Vec::new();
        redact_head(&mut head, &mut redacted);
        assert_eq!(
            String::from_utf8(head.clone()).unwrap(),
            "POST /a2a HTTP/1.1\r\nauthorization: Bearer ******\r\nDD-Signature: *******\r\nDD-Nonce: n\r\n\r\n"
        );
        assert_eq!(head.len(), before);
        assert_eq!(redacted, ["authorization", "dd-signature"]);
    }

    #[test]
    fn every_delegation_token_in_a_body_is_masked_escapes_included() {
        let mut body = br#"{"metadata":{"dd.delegation_token" : "ab\"c","x":1},"h":[{"dd.delegation_token":"zz"}]}"#.to_vec();
        assert!(redact_tokens(&mut body));
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"metadata":{"dd.delegation_token" : "*****","x":1},"h":[{"dd.delegation_token":"**"}]}"#
        );
        let mut plain =
            br#"{"dd.delegation_token_hint":"keep","t":"dd.delegation_token"}"#.to_vec();
        let copy = plain.clone();
        assert!(!redact_tokens(&mut plain));
        assert_eq!(
            plain, copy,
            "only a member named exactly so, with a string value"
        );
    }

    #[test]
    fn a_message_line_splits_head_from_body_and_base64s_what_is_not_utf8() {
        let line = message_line(&Capture {
            side: Side::Client,
            direction: Direction::In,
            connection: 3,
            peer: "127.0.0.1:1".into(),
            local: None,
            time_ns: 1_767_225_600_000_000_000,
            bytes: b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n\xff\x00".to_vec(),
            complete: true,
            part: Part::Whole,
        });
        assert_eq!(line["head"], "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n");
        assert_eq!(line["head_encoding"], "utf-8");
        assert_eq!(line["body"], "/wA=");
        assert_eq!(line["body_encoding"], "base64");
        assert_eq!(line["body_bytes"], 2);
        assert_eq!(line["time"], "2026-01-01T00:00:00Z");
        assert_eq!(line["side"], "client");
    }
}
