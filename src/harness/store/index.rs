//! Reading the index, `<runs>/invocations.jsonl`, a line at a time in either direction, and the
//! listing queries over it.
//!
//! Nothing here holds more than one line (and one 64 KiB block) at a time, so a listing costs
//! the same memory whatever the store's size. Only complete lines are read: a last line
//! without its newline is an append in progress (or a crash not yet recovered) and is skipped.
//! A complete line that is not a JSON object (which only a crash or another program can leave,
//! and which the writer's recovery removes) is skipped too, and counted, so one bad line never
//! makes the store unreadable.

use super::INDEX_NAME;
use super::StoreError;
use crate::harness::{HarnessError, Result};
use serde_json::{Map, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::path::Path;

/// What a failed read of the index says (never where the store is: see `files::shown`).
pub(crate) const INDEX_READ: &str = "reading the run index invocations.jsonl in the run store";

/// How much of the index is read at a time.
const BLOCK: usize = 1 << 16;

/// One complete line of the index: where it starts, and its bytes without the newline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) offset: u64,
    pub(crate) bytes: Vec<u8>,
}

/// Open the index for reading; `None` if there is none yet.
pub(crate) fn open(path: &Path) -> Result<Option<(File, u64)>> {
    match File::open(path) {
        Ok(file) => {
            let len = file
                .metadata()
                .map_err(|e| HarnessError::io(INDEX_READ, e))?
                .len();
            Ok(Some((file, len)))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(HarnessError::io(
            format!("opening the run index {INDEX_NAME} in the run store"),
            e,
        )),
    }
}

/// The complete lines of a file before `end`, last first.
pub(crate) struct Backward {
    file: File,
    /// File bytes `[buf_start, buf_start + buf.len())`, not yet given out.
    buf: Vec<u8>,
    buf_start: u64,
    /// Everything before `hi` is still to be read; `hi` is 0 or just after a newline, except
    /// at first, when an unfinished last line may follow the last newline.
    hi: u64,
    skip_tail: bool,
    block: usize,
}

impl Backward {
    /// Read backwards from `end`, which must be a line start or the end of the file.
    pub(crate) fn new(mut file: File, end: u64) -> std::io::Result<Backward> {
        let mut unterminated = false;
        if end > 0 {
            let mut last = [0u8];
            file.seek(SeekFrom::Start(end - 1))?;
            file.read_exact(&mut last)?;
            unterminated = last[0] != b'\n';
        }
        Ok(Backward {
            file,
            buf: Vec::new(),
            buf_start: end,
            hi: end,
            skip_tail: unterminated,
            block: BLOCK,
        })
    }

    /// Read `block` bytes before `buf_start` into the buffer.
    fn extend(&mut self, block: usize) -> std::io::Result<()> {
        let start = self.buf_start.saturating_sub(block as u64);
        let mut more = vec![0u8; (self.buf_start - start) as usize];
        self.file.seek(SeekFrom::Start(start))?;
        self.file.read_exact(&mut more)?;
        more.extend_from_slice(&self.buf);
        self.buf = more;
        self.buf_start = start;
        Ok(())
    }

    /// Where the last newline before `before` is, reading back as far as needed.
    fn newline_before(&mut self, before: u64) -> std::io::Result<Option<u64>> {
        let mut block = self.block;
        loop {
            if before >= self.buf_start {
                let upto = (before - self.buf_start) as usize;
                if let Some(i) = self.buf[..upto].iter().rposition(|&b| b == b'\n') {
                    return Ok(Some(self.buf_start + i as u64));
                }
            }
            if self.buf_start == 0 {
                return Ok(None);
            }
            self.extend(block)?;
            // A line longer than a block: read more at a time, so a long line costs linear
            // time, not quadratic.
            block = block.saturating_mul(2).min(1 << 26);
        }
    }

    /// The next complete line, going back.
    pub(crate) fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        if self.skip_tail {
            // The unfinished last line is never given out.
            self.skip_tail = false;
            self.hi = self.newline_before(self.hi)?.map_or(0, |n| n + 1);
        }
        if self.hi == 0 {
            return Ok(None);
        }
        let end = self.hi - 1; // the newline
        let start = self.newline_before(end)?.map_or(0, |n| n + 1);
        let bytes =
            self.buf[(start - self.buf_start) as usize..(end - self.buf_start) as usize].to_vec();
        self.buf.truncate((start - self.buf_start) as usize);
        self.hi = start;
        Ok(Some(Line {
            offset: start,
            bytes,
        }))
    }
}

/// The complete lines of a file from `start` up to `end`, first first.
pub(crate) struct Forward {
    reader: BufReader<File>,
    offset: u64,
    end: u64,
    /// Set once an unfinished last line was met.
    pub(crate) unterminated: bool,
}

impl Forward {
    pub(crate) fn new(mut file: File, start: u64, end: u64) -> std::io::Result<Forward> {
        file.seek(SeekFrom::Start(start))?;
        Ok(Forward {
            reader: BufReader::with_capacity(BLOCK, file),
            offset: start,
            end,
            unterminated: false,
        })
    }

    pub(crate) fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        if self.offset >= self.end {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        let limit = self.end - self.offset;
        let n = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut bytes)?;
        if n == 0 {
            return Ok(None);
        }
        let offset = self.offset;
        self.offset += n as u64;
        if bytes.pop() != Some(b'\n') {
            self.unterminated = true;
            return Ok(None);
        }
        Ok(Some(Line { offset, bytes }))
    }
}

/// The `invocation_id` an index line names, read without building the rest of the document.
pub(crate) fn line_id(bytes: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head {
        invocation_id: Option<Value>,
    }
    let id = match serde_json::from_slice::<Head>(bytes) {
        Ok(head) => head.invocation_id,
        // Not an object, or a lone surrogate somewhere: the lenient reader decides.
        Err(_) => match crate::json::from_slice_lossy(bytes) {
            Ok(Value::Object(mut map)) => map.remove("invocation_id"),
            _ => None,
        },
    };
    match id {
        Some(Value::String(id)) => Some(id),
        _ => None,
    }
}

/// The fields of an index line a listing row and the filters need, as a small document: a
/// line is read without building its payload, evidence or telemetry.
pub(crate) fn line_head(bytes: &[u8]) -> std::result::Result<Value, BadLine> {
    #[derive(serde::Deserialize)]
    struct Head {
        invocation_id: Option<Value>,
        agent_id: Option<Value>,
        completed_at: Option<Value>,
        conversation_id: Option<Value>,
        outcome: Option<Value>,
        acting_for: Option<Value>,
    }
    match serde_json::from_slice::<Head>(bytes) {
        Ok(head) => {
            let mut map = Map::new();
            for (key, value) in [
                ("invocation_id", head.invocation_id),
                ("agent_id", head.agent_id),
                ("completed_at", head.completed_at),
                ("conversation_id", head.conversation_id),
                ("outcome", head.outcome),
                ("acting_for", head.acting_for),
            ] {
                if let Some(v) = value {
                    map.insert(key.into(), v);
                }
            }
            Ok(Value::Object(map))
        }
        Err(_) => line_envelope(bytes),
    }
}

/// Why an index line holds no envelope (recovery drops it, a listing skips it).
#[derive(Debug)]
pub(crate) enum BadLine {
    /// JSON, but not an object.
    NotAnObject,
    /// Not JSON at all: the parser's report.
    NotJson(serde_json::Error),
}

impl std::fmt::Display for BadLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadLine::NotAnObject => f.write_str("is not a JSON object"),
            BadLine::NotJson(e) => write!(f, "is not JSON: {e}"),
        }
    }
}

/// The envelope an index line holds, or why it holds none.
pub(crate) fn line_envelope(bytes: &[u8]) -> std::result::Result<Value, BadLine> {
    match crate::json::from_slice_lossy(bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(BadLine::NotAnObject),
        Err(e) => Err(BadLine::NotJson(e)),
    }
}

/// Which runs a listing gives, and where it starts. Every filter given must match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Query {
    /// At most this many rows (a page); `None` for all.
    pub(crate) limit: Option<usize>,
    /// Continue after this run: the rows older than it (the last row of the previous page).
    pub(crate) after: Option<String>,
    /// Where the `after` run's line starts in the index, as a page's `Cursor` gives it: a
    /// hint that spares searching the index for it. Checked, and ignored if it is wrong.
    pub(crate) at: Option<u64>,
    /// Runs of this agent (`agent_id`).
    pub(crate) agent_id: Option<String>,
    /// Runs with this outcome status (`succeeded`, `failed`, ...).
    pub(crate) status: Option<String>,
    /// Runs acting for this principal: its `principal_id` or its `name`.
    pub(crate) principal: Option<String>,
    /// Runs acting for exactly this `principal_id` (the reader's own runs, when reads follow
    /// identity: a name never matches here).
    pub(crate) principal_id: Option<String>,
    /// Runs of this conversation (`conversation_id`).
    pub(crate) conversation_id: Option<String>,
    /// Runs completed at or after this time (nanoseconds since the epoch; see [`parse_time`]).
    pub(crate) since: Option<i128>,
    /// Runs completed before this time.
    pub(crate) until: Option<i128>,
}

impl Query {
    /// Whether a stored envelope passes every filter.
    pub(crate) fn matches(&self, envelope: &Value) -> bool {
        let text = |path: &[&str]| {
            path.iter()
                .try_fold(envelope, |v, k| v.get(*k))
                .and_then(Value::as_str)
        };
        let equal = |want: &Option<String>, path: &[&str]| {
            want.as_deref().is_none_or(|w| text(path) == Some(w))
        };
        if !equal(&self.agent_id, &["agent_id"])
            || !equal(&self.principal_id, &["acting_for", "principal_id"])
            || !equal(&self.status, &["outcome", "status"])
            || !equal(&self.conversation_id, &["conversation_id"])
        {
            return false;
        }
        if let Some(who) = self.principal.as_deref()
            && text(&["acting_for", "principal_id"]) != Some(who)
            && text(&["acting_for", "name"]) != Some(who)
        {
            return false;
        }
        if self.since.is_some() || self.until.is_some() {
            let Some(at) = text(&["completed_at"]).and_then(crate::time::parse_rfc3339) else {
                return false;
            };
            if self.since.is_some_and(|s| at < s) || self.until.is_some_and(|u| at >= u) {
                return false;
            }
        }
        true
    }
}

/// A time for [`Query::since`] and [`Query::until`]: RFC 3339 (`2026-01-02T03:04:05Z`,
/// offsets allowed) or a UTC date (`2026-01-02`, its midnight).
pub(crate) fn parse_time(text: &str) -> Option<i128> {
    crate::time::parse_rfc3339(text).or_else(|| {
        let date = text.as_bytes();
        (date.len() == 10 && date[4] == b'-' && date[7] == b'-')
            .then(|| crate::time::parse_rfc3339(&format!("{text}T00:00:00Z")))
            .flatten()
    })
}

/// Where the next page starts: after the run `after`, whose line starts at `at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cursor {
    /// The id of the last run listed.
    pub(crate) after: String,
    /// Where that run's index line starts (a hint: the id decides).
    pub(crate) at: u64,
}

/// One page of a listing, newest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Page {
    /// One row per run (see `listing_row`).
    pub(crate) rows: Vec<Value>,
    /// Where the next page starts, if more runs match.
    pub(crate) next: Option<Cursor>,
    /// Complete index lines that are not JSON objects, skipped.
    pub(crate) skipped: usize,
}

/// What a scan of the index met besides runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Complete index lines that are not JSON objects (only a crash or another program leaves
    /// them; the writer's recovery removes them), skipped.
    pub(crate) skipped: usize,
    /// The first skipped line's problem, for a message.
    pub(crate) first_problem: Option<String>,
}

impl Scan {
    fn skip(&mut self, line: &Line, why: BadLine) {
        self.skipped += 1;
        self.first_problem
            .get_or_insert_with(|| format!("the index line at byte {} {why}", line.offset));
    }
}

/// The listing row of a stored envelope, as the reference's `GET /runs` gives it:
/// `{invocation_id, agent_id, status, completed_at, acting_for}`, where `acting_for` is the
/// principal's name, or `null` for a run stored before envelopes named one. A field the
/// envelope lacks is `null`.
pub(crate) fn listing_row(envelope: &Value) -> Value {
    let mut row = Map::new();
    row.insert("invocation_id".into(), field(envelope, &["invocation_id"]));
    row.insert("agent_id".into(), field(envelope, &["agent_id"]));
    row.insert("status".into(), field(envelope, &["outcome", "status"]));
    row.insert("completed_at".into(), field(envelope, &["completed_at"]));
    row.insert(
        "acting_for".into(),
        field(envelope, &["acting_for", "name"]),
    );
    Value::Object(row)
}

/// The value at `path` in `doc`, or `null` where any step is missing or not an object.
pub(crate) fn field(doc: &Value, path: &[&str]) -> Value {
    path.iter()
        .try_fold(doc, |v, key| v.as_object()?.get(*key))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Where a listing newest first starts: the end of the index, or the line of `query.after`.
/// `Err(NoSuchRun)` if the index does not name `after`.
pub(crate) fn start_of(file: &File, len: u64, query: &Query, store: &Path) -> Result<u64> {
    let Some(after) = query.after.as_deref() else {
        return Ok(len);
    };
    let io = |e| HarnessError::io(INDEX_READ, e);
    if let Some(at) = query.at.filter(|at| *at < len) {
        let line_start = at == 0 || {
            let mut before = [0u8];
            let mut f = file;
            f.seek(SeekFrom::Start(at - 1)).map_err(io)?;
            f.read_exact(&mut before).map_err(io)?;
            before[0] == b'\n'
        };
        if line_start {
            let mut lines = Forward::new(file.try_clone().map_err(io)?, at, len).map_err(io)?;
            if let Some(line) = lines.next_line().map_err(io)?
                && line_id(&line.bytes).as_deref() == Some(after)
            {
                return Ok(at);
            }
        }
    }
    let mut lines = Backward::new(file.try_clone().map_err(io)?, len).map_err(io)?;
    while let Some(line) = lines.next_line().map_err(io)? {
        // Cheap before parsing: the id's text must be in the line.
        if memmem(&line.bytes, after.as_bytes()) && line_id(&line.bytes).as_deref() == Some(after) {
            return Ok(line.offset);
        }
    }
    Err(StoreError::NoSuchRun {
        reference: after.to_string(),
        store: store.to_path_buf(),
    }
    .into())
}

/// Whether `needle` occurs in `haystack`.
pub(crate) fn memmem(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// How a scan reads an index line: [`line_envelope`] or, for a listing, [`line_head`].
pub(crate) type ReadLine = fn(&[u8]) -> std::result::Result<Value, BadLine>;

/// Call `each` with `(line offset, envelope)` for every run the index holds before `end`
/// that `query` matches, newest first, until it breaks. `query.limit` is not applied here.
pub(crate) fn scan_backward(
    file: File,
    end: u64,
    query: &Query,
    read: ReadLine,
    mut each: impl FnMut(u64, Value) -> ControlFlow<()>,
) -> Result<Scan> {
    let mut lines = Backward::new(file, end).map_err(|e| HarnessError::io(INDEX_READ, e))?;
    scan_lines(
        || lines.next_line(),
        read,
        |offset, envelope| {
            if query.matches(&envelope) {
                each(offset, envelope)
            } else {
                ControlFlow::Continue(())
            }
        },
    )
}

/// Call `each` with every envelope of the index, oldest first.
pub(crate) fn scan_forward(
    index: &Path,
    each: impl FnMut(u64, Value) -> ControlFlow<()>,
) -> Result<Scan> {
    let Some((file, len)) = open(index)? else {
        return Ok(Scan::default());
    };
    let mut lines = Forward::new(file, 0, len).map_err(|e| HarnessError::io(INDEX_READ, e))?;
    scan_lines(|| lines.next_line(), line_envelope, each)
}

/// Each line `next` gives that is not blank, read by `read`, to `each` until it breaks; a
/// line that does not read is skipped and counted.
fn scan_lines(
    mut next: impl FnMut() -> std::io::Result<Option<Line>>,
    read: ReadLine,
    mut each: impl FnMut(u64, Value) -> ControlFlow<()>,
) -> Result<Scan> {
    let mut scan = Scan::default();
    while let Some(line) = next().map_err(|e| HarnessError::io(INDEX_READ, e))? {
        if line.bytes.trim_ascii().is_empty() {
            continue;
        }
        match read(&line.bytes) {
            Ok(envelope) => {
                if each(line.offset, envelope).is_break() {
                    break;
                }
            }
            Err(why) => scan.skip(&line, why),
        }
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(tag: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("ddwire-index-{tag}-{}", crate::ids::new_uuid7()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn backward(bytes: &[u8], block: usize) -> (Vec<(u64, String)>, bool) {
        let torn = !bytes.is_empty() && !bytes.ends_with(b"\n");
        let path = temp_file("back", bytes);
        let mut lines = Backward::new(File::open(&path).unwrap(), bytes.len() as u64).unwrap();
        lines.block = block;
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            out.push((line.offset, String::from_utf8(line.bytes).unwrap()));
        }
        std::fs::remove_file(path).unwrap();
        (out, torn)
    }

    #[test]
    fn lines_read_backwards_whatever_the_block_size_and_an_unfinished_last_line_is_skipped() {
        let text = b"a\nbb\n\nlong line here\nc\n";
        let want: Vec<(u64, String)> = vec![
            (21, "c".into()),
            (6, "long line here".into()),
            (5, "".into()),
            (2, "bb".into()),
            (0, "a".into()),
        ];
        for block in [1, 2, 3, 7, 64] {
            assert_eq!(
                backward(text, block),
                (want.clone(), false),
                "block {block}"
            );
        }
        let mut torn = text.to_vec();
        torn.extend_from_slice(b"{\"half");
        for block in [1, 4, 64] {
            assert_eq!(
                backward(&torn, block),
                (want.clone(), true),
                "block {block}"
            );
        }
        assert_eq!(backward(b"", 4), (vec![], false));
        assert_eq!(backward(b"only torn", 4), (vec![], true));
        assert_eq!(backward(b"x\n", 4), (vec![(0, "x".into())], false));
    }

    #[test]
    fn lines_read_forwards_and_an_unfinished_last_line_is_not_given() {
        let path = temp_file("fwd", b"a\nbb\ntorn");
        let mut lines = Forward::new(File::open(&path).unwrap(), 0, 9).unwrap();
        let mut got = Vec::new();
        while let Some(l) = lines.next_line().unwrap() {
            got.push((l.offset, l.bytes));
        }
        assert_eq!(got, vec![(0, b"a".to_vec()), (2, b"bb".to_vec())]);
        assert!(lines.unterminated);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_line_id_is_read_wherever_the_key_is() {
        let id = "019bd5a2-7c1e-7d3a-9f00-0123456789ab";
        assert_eq!(
            line_id(format!(r#"{{"invocation_id":"{id}","agent_id":"x"}}"#).as_bytes()).as_deref(),
            Some(id)
        );
        assert_eq!(
            line_id(
                format!(
                    r#"{{"a":{{"invocation_id":"nested"}},"invocation_id":"{id}","z":"\ud800"}}"#
                )
                .as_bytes()
            )
            .as_deref(),
            Some(id)
        );
        assert_eq!(line_id(b"[1]"), None);
        assert_eq!(line_id(b"{\"invocation_id\": 7}"), None);
        assert_eq!(
            line_id(format!(r#"{{"agent_id": "x", "invocation_id": "{id}"}}"#).as_bytes())
                .as_deref(),
            Some(id)
        );
        assert_eq!(
            line_id(b"{\"invocation_id\":\"short\"}").as_deref(),
            Some("short")
        );
        assert_eq!(line_id(b"not json"), None);
    }

    #[test]
    fn filters_match_agent_status_principal_conversation_and_time() {
        let env = serde_json::json!({
            "invocation_id": "i", "agent_id": "hello", "completed_at": "2026-01-02T03:04:05.5Z",
            "outcome": {"status": "failed"}, "conversation_id": "c",
            "acting_for": {"principal_id": "https://orcid.org/1", "name": "Jo"}
        });
        let q = |f: fn(&mut Query)| {
            let mut q = Query::default();
            f(&mut q);
            q.matches(&env)
        };
        assert!(q(|_| {}));
        assert!(q(|q| q.agent_id = Some("hello".into())));
        assert!(!q(|q| q.agent_id = Some("hell".into())));
        assert!(q(|q| q.status = Some("failed".into())));
        assert!(!q(|q| q.status = Some("succeeded".into())));
        assert!(q(|q| q.principal = Some("Jo".into())));
        assert!(q(|q| q.principal = Some("https://orcid.org/1".into())));
        assert!(!q(|q| q.principal = Some("j".into())));
        assert!(q(|q| q.conversation_id = Some("c".into())));
        assert!(q(|q| q.since = parse_time("2026-01-02")));
        assert!(q(|q| q.since = parse_time("2026-01-02T03:04:05.5Z")));
        assert!(!q(|q| q.since = parse_time("2026-01-02T03:04:06Z")));
        assert!(q(|q| q.until = parse_time("2026-01-03")));
        assert!(!q(|q| q.until = parse_time("2026-01-02T03:04:05.5Z")));
        assert!(q(|q| q.until = parse_time("2026-01-02T05:00:00+01:00")));
        assert_eq!(parse_time("yesterday"), None);
    }
}
