//! The request log: one line per request a server answered, on stderr, written after the
//! response.
//!
//! ```text
//! 2026-01-02T03:04:05.123456Z INFO  POST /a2a 200 1534B 12.408ms peer=127.0.0.1:50412 conn=7 invocation=01a2… principal=urn:ddwire:demo:operator
//! {"time":"2026-01-02T03:04:05.123456Z","level":"info","method":"POST","target":"/a2a","status":200,"bytes":1534,"duration_ms":12.408,"peer":"127.0.0.1:50412","connection":7,"invocation_id":"01a2…","principal":"urn:ddwire:demo:operator"}
//! ```
//!
//! - `time` is when the request's head had arrived; `duration_ms` runs from then until the
//!   last byte of the response was written (a stream included).
//! - `bytes` counts the response body as the handler gave it (for a stream, every chunk's
//!   bytes without the chunked framing).
//! - `invocation` and `principal` appear when the handler knew them ([`super::Notes`]).
//! - A request the server refused itself (a head too large, a slow client, the connection cap)
//!   is logged too, its method and target `-` when they were never read, with `note` saying why.
//!
//! A line's level follows its status: 5xx is `error`, 4xx `warn`, anything else `info`. The
//! log shows the lines at or above its [`Level`]; at `debug` each line also carries the
//! request's `User-Agent` and body size. Text or JSON ([`Format`]); every field that came from
//! a peer is escaped, so a request cannot forge a line.

use crate::text::Unpoison;
use std::fmt;
use std::io::Write;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

/// How a line is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Space-separated fields, `key=value` after the first six.
    Text,
    /// One JSON object per line.
    Json,
}

impl FromStr for Format {
    type Err = LogSettingError;
    fn from_str(s: &str) -> Result<Format, LogSettingError> {
        match s {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            other => Err(LogSettingError {
                setting: "log format",
                value: other.to_string(),
                expected: "text or json",
            }),
        }
    }
}

/// How much is logged, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    /// Server errors (5xx) only.
    Error,
    /// And refusals (4xx).
    Warn,
    /// And every other request (the default).
    Info,
    /// Every request, with the request's `User-Agent` and body size.
    Debug,
}

impl Level {
    /// `error`, `warn`, `info` or `debug`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }

    /// The level a response's status is logged at.
    pub(crate) fn of_status(status: u16) -> Level {
        match status {
            500.. => Level::Error,
            400..=499 => Level::Warn,
            _ => Level::Info,
        }
    }
}

impl FromStr for Level {
    type Err = LogSettingError;
    fn from_str(s: &str) -> Result<Level, LogSettingError> {
        match s.to_ascii_lowercase().as_str() {
            "error" => Ok(Level::Error),
            "warn" | "warning" => Ok(Level::Warn),
            "info" => Ok(Level::Info),
            "debug" => Ok(Level::Debug),
            _ => Err(LogSettingError {
                setting: "log level",
                value: s.to_string(),
                expected: "error, warn, info or debug",
            }),
        }
    }
}

/// A log format or level that is not one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LogSettingError {
    /// `log format` or `log level`.
    pub(crate) setting: &'static str,
    /// What was given.
    pub(crate) value: String,
    /// What would have been taken.
    pub(crate) expected: &'static str,
}

impl fmt::Display for LogSettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {:?} is not one: give {}",
            self.setting, self.value, self.expected
        )
    }
}

impl std::error::Error for LogSettingError {}

/// One request, as logged.
#[derive(Clone, Debug, Default)]
pub(crate) struct Entry {
    /// When the head had arrived, nanoseconds since the epoch.
    pub(crate) time_ns: u64,
    /// `-` when the request line was never read.
    pub(crate) method: String,
    /// Path and query as sent; `-` when never read.
    pub(crate) target: String,
    /// The status answered.
    pub(crate) status: u16,
    /// Response body bytes written.
    pub(crate) bytes: u64,
    /// From the head's arrival to the response's last byte.
    pub(crate) duration: Duration,
    /// The client's address.
    pub(crate) peer: Option<SocketAddr>,
    /// The connection's number in this process.
    pub(crate) connection: u64,
    /// The run the handler noted.
    pub(crate) invocation_id: Option<String>,
    /// Whom the handler noted the request acted for.
    pub(crate) principal: Option<String>,
    /// Why the server answered itself, when it did.
    pub(crate) note: Option<String>,
    /// The request's `User-Agent` (shown at `debug`).
    pub(crate) user_agent: Option<String>,
    /// The request's body size (shown at `debug`).
    pub(crate) request_bytes: Option<u64>,
}

/// Where request lines go, and which.
pub(crate) struct RequestLog {
    format: Format,
    level: Level,
    out: Mutex<Box<dyn Write + Send>>,
}

impl RequestLog {
    /// Lines at or above `level`, in `format`, on stderr.
    pub(crate) fn stderr(format: Format, level: Level) -> RequestLog {
        RequestLog::to(format, level, Box::new(std::io::stderr()))
    }

    /// Lines at or above `level`, in `format`, to `out` (each line one `write_all`).
    pub(crate) fn to(format: Format, level: Level, out: Box<dyn Write + Send>) -> RequestLog {
        RequestLog {
            format,
            level,
            out: Mutex::new(out),
        }
    }

    /// Whether lines at `level` are written.
    pub(crate) fn enabled(&self, level: Level) -> bool {
        level <= self.level
    }

    /// Write `entry`'s line if its level is shown. A failed write is ignored: the log never
    /// fails a request.
    pub(crate) fn record(&self, entry: &Entry) {
        let level = Level::of_status(entry.status);
        if !self.enabled(level) {
            return;
        }
        let mut line = match self.format {
            Format::Text => self.text(entry, level),
            Format::Json => self.json(entry, level),
        };
        line.push('\n');
        let mut out = self.out.lock().unpoisoned();
        let _ = out.write_all(line.as_bytes());
        let _ = out.flush();
    }

    fn text(&self, e: &Entry, level: Level) -> String {
        let mut line = format!(
            "{} {:<5} {} {} {} {}B {:.3}ms",
            crate::time::rfc3339(e.time_ns as i128),
            level.as_str().to_ascii_uppercase(),
            field(&e.method),
            field(&e.target),
            e.status,
            e.bytes,
            e.duration.as_secs_f64() * 1e3,
        );
        let mut kv = |k: &str, v: &str| {
            line.push(' ');
            line.push_str(k);
            line.push('=');
            line.push_str(&field(v));
        };
        kv("peer", &e.peer.map_or("-".into(), |p| p.to_string()));
        kv("conn", &e.connection.to_string());
        kv("invocation", e.invocation_id.as_deref().unwrap_or("-"));
        kv("principal", e.principal.as_deref().unwrap_or("-"));
        if let Some(note) = &e.note {
            kv("note", note);
        }
        if self.level >= Level::Debug {
            kv("user_agent", e.user_agent.as_deref().unwrap_or("-"));
            kv(
                "request_bytes",
                &e.request_bytes.map_or("-".into(), |n| n.to_string()),
            );
        }
        line
    }

    fn json(&self, e: &Entry, level: Level) -> String {
        let mut doc = serde_json::json!({
            "time": crate::time::rfc3339(e.time_ns as i128),
            "level": level.as_str(),
            "method": e.method,
            "target": e.target,
            "status": e.status,
            "bytes": e.bytes,
            "duration_ms": (e.duration.as_secs_f64() * 1e6).round() / 1e3,
            "peer": e.peer.map(|p| p.to_string()),
            "connection": e.connection,
            "invocation_id": e.invocation_id,
            "principal": e.principal,
        });
        if let Some(note) = &e.note {
            doc["note"] = note.as_str().into();
        }
        if self.level >= Level::Debug {
            doc["user_agent"] = e.user_agent.clone().into();
            doc["request_bytes"] = e.request_bytes.into();
        }
        doc.to_string()
    }
}

/// A field of a text line: as it is when it is plain, else quoted with JSON's escapes, so a
/// space, a quote or a control character from a peer cannot split or forge a line.
fn field(value: &str) -> String {
    // Empty is quoted too (`""`), so that it still reads as a field.
    let plain = value
        .chars()
        .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\');
    if plain && !value.is_empty() {
        value.to_string()
    } else {
        serde_json::Value::String(value.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn entry(status: u16) -> Entry {
        Entry {
            time_ns: 1_767_225_600_000_000_000,
            method: "POST".into(),
            target: "/a2a".into(),
            status,
            bytes: 12,
            duration: Duration::from_micros(1500),
            peer: Some("127.0.0.1:5000".parse().unwrap()),
            connection: 4,
            invocation_id: Some("01a2".into()),
            principal: Some("urn:p".into()),
            ..Entry::default()
        }
    }

    fn lines(format: Format, level: Level, entries: &[Entry]) -> String {
        let sink = Shared::default();
        let log = RequestLog::to(format, level, Box::new(sink.clone()));
        for e in entries {
            log.record(e);
        }
        String::from_utf8(sink.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn a_text_line_names_time_method_target_status_bytes_duration_and_who() {
        assert_eq!(
            lines(Format::Text, Level::Info, &[entry(200)]),
            "2026-01-01T00:00:00Z INFO  POST /a2a 200 12B 1.500ms peer=127.0.0.1:5000 conn=4 invocation=01a2 principal=urn:p\n"
        );
    }

    #[test]
    fn a_json_line_has_the_same_fields() {
        let line = lines(Format::Json, Level::Info, &[entry(503)]);
        let doc: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(doc["level"], "error");
        assert_eq!(doc["status"], 503);
        assert_eq!(doc["duration_ms"], 1.5);
        assert_eq!(doc["invocation_id"], "01a2");
        assert_eq!(doc["principal"], "urn:p");
        assert_eq!(doc["peer"], "127.0.0.1:5000");
    }

    #[test]
    fn the_level_keeps_lines_by_status_severity() {
        let all = [entry(200), entry(404), entry(500)];
        let count = |level| lines(Format::Text, level, &all).lines().count();
        assert_eq!(count(Level::Error), 1);
        assert_eq!(count(Level::Warn), 2);
        assert_eq!(count(Level::Info), 3);
        let debug = lines(Format::Text, Level::Debug, &all[..1]);
        assert!(
            debug.ends_with(" user_agent=- request_bytes=-\n"),
            "{debug}"
        );
    }

    #[test]
    fn a_peers_text_cannot_split_or_forge_a_line() {
        let mut e = entry(400);
        e.target = "/x\n2026-01-01T00:00:00Z INFO  GET / 200".into();
        e.principal = Some("a b\"c".into());
        let text = lines(Format::Text, Level::Info, &[e]);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.contains(r#" "/x\n2026-01-01T00:00:00Z INFO  GET / 200" "#),
            "{text}"
        );
        assert!(text.contains(r#"principal="a b\"c""#), "{text}");
    }

    #[test]
    fn settings_parse_and_refuse_with_what_would_do() {
        assert_eq!("WARN".parse::<Level>(), Ok(Level::Warn));
        assert_eq!("json".parse::<Format>(), Ok(Format::Json));
        let e = "loud".parse::<Level>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "log level \"loud\" is not one: give error, warn, info or debug"
        );
    }
}
