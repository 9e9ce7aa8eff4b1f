//! The run store: every invocation's envelope, request, trace and grounding report, kept once.
//!
//! # Layout
//!
//! The same files, in the same formats, as the reference's `workbench.store.RunStore`, so each
//! side reads the other's runs:
//!
//! ```text
//! <runs>/invocations.jsonl             the index: one envelope per line, json.dumps(env, separators=(",", ":"))
//! <runs>/<invocation_id>/envelope.json json.dumps(env, indent=2), never overwritten
//! <runs>/<invocation_id>/request.json  json.dumps(request, indent=2)
//! <runs>/<invocation_id>/spans.jsonl   one span JSON document per line, as the caller gave it
//! <runs>/<invocation_id>/grounding.txt the grounding summary + "\n"
//! <runs>/schemas/<digest>.json         each class schema checked against, json.dumps(schema, indent=2)
//! ```
//!
//! JSON is written byte for byte as CPython's `json.dumps` writes it ([`python::dumps`]), so
//! non-ASCII text is `\uXXXX`-escaped as in the reference. Identifiers are UUIDv7, so the
//! directory names sort chronologically and the index is in the order runs were finished.
//!
//! # Write-once and crash safety
//!
//! The reference writes a run's files one by one into `<runs>/<id>/`; a crash can leave half a
//! run. [`RunStore::append`] instead builds the whole run in a temporary directory inside
//! `<runs>` and publishes it with one `rename(2)`:
//!
//! 1. every input is validated (a UUIDv7 id, 64-hex digests, span lines without line breaks)
//!    before the file system is touched;
//! 2. each class schema not yet kept is written to `schemas/.tmp-…`, fsynced, and renamed to
//!    `schemas/<digest>.json` (content-addressed, so a lost race rewrites identical bytes);
//! 3. the run's files are written to `<runs>/.tmp-<pid>-<random>-<id>/`, each fsynced, then
//!    the directory itself is fsynced;
//! 4. under a lock held per store root by every [`RunStore`] in the process, the store checks
//!    that `<id>` holds no run and renames the temporary directory to `<runs>/<id>`. Because
//!    `rename(2)` fails with `ENOTEMPTY`/`EEXIST` onto a non-empty directory, a writer in
//!    another process that got there first is refused too, never overwritten;
//! 5. `<runs>` is fsynced, so the rename is durable;
//! 6. only then is the index line appended (one write under a per-path lock, fsynced, through
//!    [`jsonl::append`]), so concurrent writers never interleave lines.
//!
//! A crash before step 4 leaves a `.tmp-*` directory and no run; a crash between steps 4 and 6
//! leaves a complete run directory with no index line, or with a torn one.
//!
//! # Recovery on open
//!
//! [`RunStore::open`] repairs both, so the index and the run directories always agree:
//! it removes leftover `.tmp-*` entries (in `<runs>` and `<runs>/schemas`), cuts off a torn
//! last index line (or ends it with its newline, if it is a whole document), and appends to the
//! index every run directory holding an `envelope.json` whose id the index does not name
//! (oldest id first). A temporary directory whose name carries the process id of another live
//! process (checked through `/proc`) is left alone, since that process may still be writing it.
//! Recovery scans the index and the root directory once, so open a store once and share it.
//!
//! # Memory
//!
//! The store holds only its root and two locks per root; nothing per run. `has` asks the file
//! system; listings stream the index line by line.

use crate::contract::ids::{is_sha256_hex, is_uuid7, random_u64};
use crate::contract::schema_digest;
use crate::error::{Error, Result};
use crate::json::python::{self, Style};
use crate::trace::jsonl;
use serde_json::{Map, Value};
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// The index file, one envelope per line.
pub const INDEX_NAME: &str = "invocations.jsonl";
/// The directory of class schemas, one file per digest.
pub const SCHEMAS_DIR: &str = "schemas";
/// A run's envelope, `json.dumps(env, indent=2)`.
pub const ENVELOPE_FILE: &str = "envelope.json";
/// A run's request document, `json.dumps(request, indent=2)`.
pub const REQUEST_FILE: &str = "request.json";
/// A run's whole trace, one span JSON document per line.
pub const SPANS_FILE: &str = "spans.jsonl";
/// A run's grounding summary and a newline.
pub const GROUNDING_FILE: &str = "grounding.txt";

/// Entries in `<runs>` and `<runs>/schemas` starting with this are unfinished writes.
const TMP_PREFIX: &str = ".tmp-";

/// `json.dumps(x, separators=(",", ":"))`: one index line.
const COMPACT: Style = Style {
    sort_keys: false,
    item_separator: ",",
    key_separator: ":",
    indent: None,
    ensure_ascii: true,
    floats: python::Floats::Python,
};

/// One run to store. `schemas` pairs each class schema the run was checked against with its
/// digest (`schema_digest`, as the envelope names it).
pub struct NewRun<'a> {
    pub envelope: &'a Value,
    pub request: &'a Value,
    pub spans: &'a [String],
    pub grounding: &'a str,
    pub schemas: &'a [(&'a str, &'a Value)],
}

/// What [`RunStore::open`] repaired after a crash.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Leftover temporary entries removed: runs or schemas whose write never finished.
    pub removed: Vec<PathBuf>,
    /// Whether the index ended in an unfinished line, which was cut off or completed.
    pub torn_tail: bool,
    /// Runs whose directory was complete but missing from the index, now appended to it.
    pub indexed: Vec<String>,
    /// Run directories whose `envelope.json` is not a JSON object naming that id (a reference
    /// writer that crashed mid-file): left as they are and not indexed.
    pub unreadable: Vec<String>,
}

impl Recovery {
    /// Whether there was nothing to repair.
    pub fn is_clean(&self) -> bool {
        *self == Recovery::default()
    }
}

/// The run store at one root directory. Cheap to share between threads (`&RunStore`).
#[derive(Debug)]
pub struct RunStore {
    root: PathBuf,
    index: PathBuf,
    locks: Arc<RootLocks>,
}

/// The locks every [`RunStore`] on one root shares, whatever path it was opened by.
#[derive(Debug, Default)]
struct RootLocks {
    /// Held shared by each append while its temporary directory exists, and exclusively by
    /// recovery, so recovery never removes an append in progress in this process.
    writers: RwLock<()>,
    /// Held while checking that a run id is free and renaming a run into place.
    names: Mutex<()>,
}

fn root_locks(root: &Path) -> Result<Arc<RootLocks>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<RootLocks>>>> = OnceLock::new();
    let key = fs::canonicalize(root).map_err(|e| Error::io("resolving the run store's root", e))?;
    let mut locks = LOCKS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    Ok(locks.entry(key).or_default().clone())
}

impl RunStore {
    /// Open (creating it if need be) the store at `root`, and recover from any crash of an
    /// earlier writer (see the module documentation).
    pub fn open(root: impl Into<PathBuf>) -> Result<RunStore> {
        Ok(RunStore::open_reporting(root)?.0)
    }

    /// [`RunStore::open`], also saying what recovery repaired, for a log line.
    pub fn open_reporting(root: impl Into<PathBuf>) -> Result<(RunStore, Recovery)> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| Error::io("creating the run store's root", e))?;
        let store = RunStore {
            index: root.join(INDEX_NAME),
            locks: root_locks(&root)?,
            root,
        };
        let recovery = store.recover()?;
        Ok((store, recovery))
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The index file, `<root>/invocations.jsonl`.
    pub fn index_path(&self) -> &Path {
        &self.index
    }

    /// Whether a run is stored under `invocation_id`: its `envelope.json` exists.
    pub fn has(&self, invocation_id: &str) -> bool {
        self.run_file(invocation_id, ENVELOPE_FILE)
            .is_some_and(|p| p.exists())
    }

    /// Store one run, once. Returns its directory.
    ///
    /// Refuses, with nothing written, an envelope whose `invocation_id` is not a lowercase
    /// UUIDv7, a digest that is not 64 lowercase hex digits or does not match its schema, and a
    /// span line containing a line break. An id already stored is
    /// [`Error::DuplicateInvocation`], and the stored run is left exactly as it was.
    pub fn append(&self, run: &NewRun) -> Result<PathBuf> {
        self.append_with_files(run, &[])
    }

    /// [`RunStore::append`], with more text files in the run directory (such as the
    /// reference's `sources.txt`), written and published with the others. A name is plain
    /// ASCII letters, digits, `.`, `_` and `-`, does not start with `.`, and is not one of the
    /// store's own files.
    pub fn append_with_files(&self, run: &NewRun, files: &[(&str, &str)]) -> Result<PathBuf> {
        let id = run
            .envelope
            .get("invocation_id")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Error::Store("an envelope without a string invocation_id cannot be stored".into())
            })?;
        if !is_uuid7(id) {
            return Err(Error::Store(format!(
                "invocation_id {id:?} is not a lowercase UUIDv7, so it names no run directory; \
                 nothing was stored"
            )));
        }
        for (digest, _) in run.schemas {
            check_digest(digest)?;
        }
        for (name, _) in files {
            check_extra_name(name)?;
        }
        let mut spans = String::with_capacity(run.spans.iter().map(|l| l.len() + 1).sum());
        for line in run.spans {
            if line.contains(['\n', '\r']) {
                return Err(Error::Store(format!(
                    "a span line of run {id} contains a line break, which would split it in \
                     two; nothing was stored"
                )));
            }
            spans.push_str(line);
            spans.push('\n');
        }
        let envelope = python::dumps(run.envelope, Style::INDENT2);
        let request = python::dumps(run.request, Style::INDENT2);
        let grounding = format!("{}\n", run.grounding);
        let index_line = python::dumps(run.envelope, COMPACT);
        let mut contents: Vec<(&str, &str)> = vec![
            (ENVELOPE_FILE, &envelope),
            (REQUEST_FILE, &request),
            (SPANS_FILE, &spans),
            (GROUNDING_FILE, &grounding),
        ];
        contents.extend_from_slice(files);

        let _writing = self.locks.writers.read().unwrap_or_else(|p| p.into_inner());
        if self.has(id) {
            return Err(Error::DuplicateInvocation(id.to_string()));
        }
        self.keep_schemas(run.schemas)?;
        let tmp = self.root.join(tmp_name(id));
        let published =
            write_dir(&self.root, &tmp, &contents).and_then(|()| self.publish(&tmp, id));
        if published.is_err() {
            let _ = fs::remove_dir_all(&tmp);
        }
        let dir = published?;
        // The run is in place; a failure from here on is repaired by the next open.
        sync_dir(&self.root, &self.root)?;
        jsonl::append(&self.index, &[index_line]).map_err(|e| self.relative(e))?;
        Ok(dir)
    }

    /// Move a finished temporary run directory to `<root>/<id>`, refusing an id that is taken.
    fn publish(&self, tmp: &Path, id: &str) -> Result<PathBuf> {
        let target = self.root.join(id);
        let _naming = self.locks.names.lock().unwrap_or_else(|p| p.into_inner());
        if self.has(id) {
            return Err(Error::DuplicateInvocation(id.to_string()));
        }
        // rename(2) would replace an empty directory (a run the reference began and never
        // wrote), which is no run; onto anything else it fails, and the checks above and below
        // make that the second guard against overwriting, across processes too.
        match fs::rename(tmp, &target) {
            Ok(()) => Ok(target),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::DirectoryNotEmpty
                        | ErrorKind::AlreadyExists
                        | ErrorKind::NotADirectory
                ) =>
            {
                if self.has(id) {
                    Err(Error::DuplicateInvocation(id.to_string()))
                } else {
                    Err(Error::Store(format!(
                        "{} already exists and is not a complete run; it was left as it is and \
                         run {id} was not stored",
                        shown(&self.root, &target)
                    )))
                }
            }
            Err(e) => Err(Error::io(
                format!(
                    "moving run {id} into place at {}",
                    shown(&self.root, &target)
                ),
                e,
            )),
        }
    }

    /// Keep each class schema not yet kept under its digest. Every digest is checked against
    /// its schema before any is written.
    fn keep_schemas(&self, schemas: &[(&str, &Value)]) -> Result<()> {
        let dir = self.root.join(SCHEMAS_DIR);
        let mut missing = Vec::new();
        for (digest, schema) in schemas {
            let path = dir.join(format!("{digest}.json"));
            if path.exists() {
                continue;
            }
            let actual = schema_digest(schema);
            if actual != *digest {
                return Err(Error::Store(format!(
                    "the class schema given as {digest} has digest {actual}; a schema is kept \
                     only under its own digest, and nothing was stored"
                )));
            }
            missing.push((digest, path, schema));
        }
        if missing.is_empty() {
            return Ok(());
        }
        match fs::create_dir(&dir) {
            Ok(()) => sync_dir(&self.root, &self.root)?,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => {
                let what = format!("creating {}", shown(&self.root, &dir));
                return Err(Error::io(what, e));
            }
        }
        for (digest, path, schema) in missing {
            // Content-addressed: a writer that lost a race replaces the file with equal bytes.
            let tmp = dir.join(tmp_name(digest));
            let written = write_new(
                &self.root,
                &tmp,
                python::dumps(schema, Style::INDENT2).as_bytes(),
            )
            .and_then(|file| {
                file.sync_all()
                    .map_err(|e| Error::io(format!("syncing {}", shown(&self.root, &tmp)), e))
            })
            .and_then(|()| {
                fs::rename(&tmp, &path).map_err(|e| {
                    Error::io(format!("moving {} into place", shown(&self.root, &path)), e)
                })
            });
            if written.is_err() {
                let _ = fs::remove_file(&tmp);
            }
            written?;
        }
        sync_dir(&self.root, &dir)
    }

    /// The stored envelope, or `None` if no run has that id (or it is not a UUIDv7).
    pub fn envelope(&self, invocation_id: &str) -> Result<Option<Value>> {
        read_json(&self.root, self.run_file(invocation_id, ENVELOPE_FILE))
    }

    /// The stored envelope's exact text. A delegated child's envelope is answered as this text,
    /// so its hash survives the wire.
    pub fn envelope_text(&self, invocation_id: &str) -> Result<Option<String>> {
        read_text(&self.root, self.run_file(invocation_id, ENVELOPE_FILE))
    }

    /// The stored request document.
    pub fn request(&self, invocation_id: &str) -> Result<Option<Value>> {
        read_json(&self.root, self.run_file(invocation_id, REQUEST_FILE))
    }

    /// The run's `spans.jsonl` text, one span JSON document per line.
    pub fn spans(&self, invocation_id: &str) -> Result<Option<String>> {
        read_text(&self.root, self.run_file(invocation_id, SPANS_FILE))
    }

    /// The run's grounding summary as it was given: the text of `grounding.txt` without the
    /// newline the store ends it with.
    pub fn grounding(&self, invocation_id: &str) -> Result<Option<String>> {
        Ok(
            read_text(&self.root, self.run_file(invocation_id, GROUNDING_FILE))?.map(|mut text| {
                if text.ends_with('\n') {
                    text.pop();
                }
                text
            }),
        )
    }

    /// The class schema kept under `digest`. Anything but 64 lowercase hex digits names
    /// nothing, so no path outside the store can be read.
    pub fn schema(&self, digest: &str) -> Result<Option<Value>> {
        let path = is_sha256_hex(digest)
            .then(|| self.root.join(SCHEMAS_DIR).join(format!("{digest}.json")));
        read_json(&self.root, path)
    }

    /// Every stored envelope, in index order (oldest first).
    pub fn list(&self) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        self.scan(|envelope| out.push(envelope))?;
        Ok(out)
    }

    /// The reference's `GET /runs`: newest first, one row per run,
    /// `{invocation_id, agent_id, status, completed_at, acting_for}`, where `acting_for` is the
    /// principal's name, or `null` for a run stored before envelopes named one. A field the
    /// envelope lacks is `null`.
    pub fn listing(&self) -> Result<Vec<Value>> {
        let mut rows = Vec::new();
        self.scan(|e| {
            let mut row = Map::new();
            row.insert("invocation_id".into(), field(&e, &["invocation_id"]));
            row.insert("agent_id".into(), field(&e, &["agent_id"]));
            row.insert("status".into(), field(&e, &["outcome", "status"]));
            row.insert("completed_at".into(), field(&e, &["completed_at"]));
            row.insert("acting_for".into(), field(&e, &["acting_for", "name"]));
            rows.push(Value::Object(row));
        })?;
        rows.reverse();
        Ok(rows)
    }

    /// One row per `conversation_id` that any stored run carries, most recently active first
    /// (by `last_completed_at`, ties in index order):
    ///
    /// - `conversation_id`;
    /// - `turns`: the runs a caller made (no `parent_invocation_id`), as the reference counts;
    /// - `runs`: every run in the conversation, delegated children included;
    /// - `agent_id` and `started_at`: the agent and `completed_at` of the first turn;
    /// - `last_completed_at` and `last_status`: the `completed_at` and status of the last turn;
    /// - `agent_ids`: every agent that ran in it, children's included, in first-seen order.
    ///
    /// The first six are the reference's summary (`workbench.conversations`). A conversation
    /// with no turn yet (a delegated child is stored before its parent) is listed too, its
    /// first and last fields taken from its runs.
    pub fn conversations(&self) -> Result<Vec<Value>> {
        let mut order: Vec<Conversation> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        self.scan(|e| {
            let Some(id) = e
                .get("conversation_id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
            else {
                return;
            };
            let i = *at.entry(id.to_string()).or_insert_with(|| {
                order.push(Conversation::new(id));
                order.len() - 1
            });
            order[i].add(&e);
        })?;
        let mut rows: Vec<Value> = order.into_iter().map(Conversation::row).collect();
        // Newest first, as the reference sorts (by `str(last_completed_at)`); the sort is
        // stable, so ties keep index order.
        rows.sort_by_cached_key(|row| Reverse(python::py_str(&row["last_completed_at"])));
        Ok(rows)
    }

    /// The envelopes of one conversation, delegated children included, in index order; `None`
    /// if no stored run carries `conversation_id`.
    pub fn conversation(&self, conversation_id: &str) -> Result<Option<Vec<Value>>> {
        let mut out = Vec::new();
        self.scan(|e| {
            if e.get("conversation_id").and_then(Value::as_str) == Some(conversation_id) {
                out.push(e);
            }
        })?;
        Ok((!out.is_empty()).then_some(out))
    }

    /// Repair what a crashed writer left (see the module documentation). [`RunStore::open`]
    /// calls it; calling it again is harmless.
    pub fn recover(&self) -> Result<Recovery> {
        let _alone = self
            .locks
            .writers
            .write()
            .unwrap_or_else(|p| p.into_inner());
        let mut recovery = Recovery::default();
        for dir in [self.root.clone(), self.root.join(SCHEMAS_DIR)] {
            recovery.removed.extend(remove_leftovers(&self.root, &dir)?);
        }
        recovery.torn_tail = self.repair_tail()?;

        let mut indexed = HashSet::new();
        self.scan(|e| {
            if let Some(Value::String(id)) = e.get("invocation_id") {
                indexed.insert(id.clone());
            }
        })?;
        let mut missing = Vec::new();
        for name in dir_names(&self.root, &self.root)? {
            if is_uuid7(&name) && !indexed.contains(&name) && self.has(&name) {
                missing.push(name);
            }
        }
        drop(indexed);
        missing.sort();
        let mut lines = Vec::new();
        for id in missing {
            match self.envelope(&id) {
                Ok(Some(e)) if e.get("invocation_id").and_then(Value::as_str) == Some(&id) => {
                    lines.push(python::dumps(&e, COMPACT));
                    recovery.indexed.push(id);
                }
                _ => recovery.unreadable.push(id),
            }
        }
        if !lines.is_empty() {
            jsonl::append(&self.index, &lines).map_err(|e| self.relative(e))?;
        }
        Ok(recovery)
    }

    /// End the index with a whole line: an unfinished last line (a crash mid-append) is cut
    /// off, or completed with its newline if it is a whole JSON object. Returns whether the
    /// index needed it.
    fn repair_tail(&self) -> Result<bool> {
        let context =
            |what: &str| format!("{what} the run index {}", shown(&self.root, &self.index));
        let mut file = match OpenOptions::new().read(true).write(true).open(&self.index) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::io(context("opening"), e)),
        };
        let len = file
            .metadata()
            .map_err(|e| Error::io(context("reading"), e))?
            .len();
        let tail_start =
            last_line_start(&mut file, len).map_err(|e| Error::io(context("reading"), e))?;
        if tail_start == len {
            return Ok(false);
        }
        let mut tail = Vec::new();
        file.seek(SeekFrom::Start(tail_start))
            .and_then(|_| file.read_to_end(&mut tail))
            .map_err(|e| Error::io(context("reading"), e))?;
        let whole = serde_json::from_slice::<Value>(&tail).is_ok_and(|v| v.is_object());
        if whole {
            file.seek(SeekFrom::End(0))
                .and_then(|_| file.write_all(b"\n"))
                .map_err(|e| Error::io(context("completing the last line of"), e))?;
        } else {
            file.set_len(tail_start)
                .map_err(|e| Error::io(context("cutting the torn last line off"), e))?;
        }
        file.sync_all()
            .map_err(|e| Error::io(context("syncing"), e))?;
        Ok(true)
    }

    /// Call `each` with every envelope of the index, in order, one at a time.
    ///
    /// An unfinished last line (an append in progress, or a crash not yet recovered) is
    /// skipped; any other line that is not a JSON object is an error. A run indexed twice
    /// (recovery racing a writer in another process) is given once, at its first line.
    fn scan(&self, mut each: impl FnMut(Value)) -> Result<()> {
        let mut seen = HashSet::new();
        self.scan_lines(
            |line, complete, number| match serde_json::from_slice::<Value>(line) {
                Ok(Value::Object(e)) => {
                    let fresh = match e.get("invocation_id").and_then(Value::as_str) {
                        Some(id) => seen.insert(id.to_string()),
                        None => true,
                    };
                    if fresh {
                        each(Value::Object(e));
                    }
                    Ok(())
                }
                _ if !complete => Ok(()),
                Ok(_) => Err(self.bad_line(number, "is not a JSON object")),
                Err(e) => Err(self.bad_line(number, &format!("is not JSON: {e}"))),
            },
        )
    }

    /// Stream the index's non-blank lines as `(bytes, ends_with_newline, line_number)`.
    fn scan_lines(&self, mut each: impl FnMut(&[u8], bool, usize) -> Result<()>) -> Result<()> {
        let file = match File::open(&self.index) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                return Err(Error::io(
                    format!("opening the run index {}", shown(&self.root, &self.index)),
                    e,
                ));
            }
        };
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut buf = Vec::new();
        let mut number = 0;
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf).map_err(|e| {
                Error::io(
                    format!("reading the run index {}", shown(&self.root, &self.index)),
                    e,
                )
            })?;
            if n == 0 {
                return Ok(());
            }
            number += 1;
            let complete = buf.ends_with(b"\n");
            let line = buf.trim_ascii();
            if !line.is_empty() {
                each(line, complete, number)?;
            }
        }
    }

    fn bad_line(&self, number: usize, what: &str) -> Error {
        Error::Store(format!(
            "line {number} of the run index {} {what}",
            shown(&self.root, &self.index)
        ))
    }

    /// An error [`jsonl::append`] made of the index, naming its paths as the store names them
    /// (see [`shown`]): relative to the root.
    fn relative(&self, e: Error) -> Error {
        match e {
            Error::Io(context, source) => {
                let context = context
                    .replace(
                        &self.index.display().to_string(),
                        &shown(&self.root, &self.index),
                    )
                    .replace(
                        &self.root.display().to_string(),
                        &shown(&self.root, &self.root),
                    );
                Error::Io(context, source)
            }
            other => other,
        }
    }

    /// `<root>/<id>/<name>`, or `None` if `id` is not a UUIDv7 (and so could name a path
    /// outside the store).
    fn run_file(&self, invocation_id: &str, name: &str) -> Option<PathBuf> {
        is_uuid7(invocation_id).then(|| self.root.join(invocation_id).join(name))
    }
}

/// One conversation's summary, built while streaming the index.
struct Conversation {
    id: String,
    turns: u64,
    runs: u64,
    agent_ids: Vec<Value>,
    /// `(agent_id, completed_at)` of the first turn, and of the first run.
    first_turn: Option<(Value, Value)>,
    first_run: Option<(Value, Value)>,
    /// `(completed_at, status)` of the last turn, and of the last run.
    last_turn: Option<(Value, Value)>,
    last_run: Option<(Value, Value)>,
}

impl Conversation {
    fn new(id: &str) -> Conversation {
        Conversation {
            id: id.to_string(),
            turns: 0,
            runs: 0,
            agent_ids: Vec::new(),
            first_turn: None,
            first_run: None,
            last_turn: None,
            last_run: None,
        }
    }

    fn add(&mut self, e: &Value) {
        let agent = field(e, &["agent_id"]);
        let completed = field(e, &["completed_at"]);
        let last = (completed.clone(), field(e, &["outcome", "status"]));
        // As the reference tests it: an envelope with a (non-empty) parent is not a turn.
        let is_turn =
            !matches!(e.get("parent_invocation_id"), Some(Value::String(p)) if !p.is_empty());
        self.runs += 1;
        if !agent.is_null() && !self.agent_ids.contains(&agent) {
            self.agent_ids.push(agent.clone());
        }
        if is_turn {
            self.turns += 1;
            self.first_turn
                .get_or_insert_with(|| (agent.clone(), completed.clone()));
            self.last_turn = Some(last.clone());
        }
        self.first_run.get_or_insert((agent, completed));
        self.last_run = Some(last);
    }

    fn row(self) -> Value {
        let (agent_id, started_at) = self.first_turn.or(self.first_run).unwrap_or_default();
        let (last_completed_at, last_status) = self.last_turn.or(self.last_run).unwrap_or_default();
        let mut row = Map::new();
        row.insert("conversation_id".into(), Value::String(self.id));
        row.insert("agent_id".into(), agent_id);
        row.insert("turns".into(), self.turns.into());
        row.insert("runs".into(), self.runs.into());
        row.insert("started_at".into(), started_at);
        row.insert("last_completed_at".into(), last_completed_at);
        row.insert("last_status".into(), last_status);
        row.insert("agent_ids".into(), Value::Array(self.agent_ids));
        Value::Object(row)
    }
}

/// The value at `path` in `doc`, or `null` where any step is missing or not an object.
fn field(doc: &Value, path: &[&str]) -> Value {
    path.iter()
        .try_fold(doc, |v, key| v.as_object()?.get(*key))
        .cloned()
        .unwrap_or(Value::Null)
}

fn check_digest(digest: &str) -> Result<()> {
    if is_sha256_hex(digest) {
        Ok(())
    } else {
        Err(Error::Store(format!(
            "class schema digest {digest:?} is not 64 lowercase hex digits; nothing was stored"
        )))
    }
}

fn check_extra_name(name: &str) -> Result<()> {
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    let own = [ENVELOPE_FILE, REQUEST_FILE, SPANS_FILE, GROUNDING_FILE].contains(&name);
    if plain && !own {
        Ok(())
    } else {
        Err(Error::Store(format!(
            "{name:?} cannot name a file in a run directory; nothing was stored"
        )))
    }
}

/// A fresh temporary name for `what` (a run id or a digest): `.tmp-<pid>-<random>-<what>`.
fn tmp_name(what: &str) -> String {
    format!(
        "{TMP_PREFIX}{}-{:016x}-{what}",
        std::process::id(),
        random_u64()
    )
}

/// Whether a `.tmp-*` entry may belong to a write still in progress in another live process.
/// Writers in this process hold the store's lock while theirs exist, so recovery (which holds
/// it exclusively) sees only leftovers of its own process.
fn written_by_another_live_process(name: &str) -> bool {
    let pid = name
        .strip_prefix(TMP_PREFIX)
        .and_then(|rest| rest.split_once('-'))
        .and_then(|(pid, _)| pid.parse::<u32>().ok());
    pid.is_some_and(|pid| {
        pid != std::process::id() && Path::new("/proc").join(pid.to_string()).exists()
    })
}

/// Remove the unfinished writes left in `dir`; returns what was removed.
fn remove_leftovers(root: &Path, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for name in dir_names(root, dir)? {
        if !name.starts_with(TMP_PREFIX) || written_by_another_live_process(&name) {
            continue;
        }
        let path = dir.join(&name);
        let gone = match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&path),
            Ok(_) => fs::remove_file(&path),
            Err(e) => Err(e),
        };
        match gone {
            Ok(()) => removed.push(path),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Error::io(
                    format!("removing the unfinished write {}", shown(root, &path)),
                    e,
                ));
            }
        }
    }
    if !removed.is_empty() {
        sync_dir(root, dir)?;
    }
    Ok(removed)
}

/// The UTF-8 names in `dir`; none if it does not exist.
fn dir_names(root: &Path, dir: &Path) -> Result<Vec<String>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("listing {}", shown(root, dir)), e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("listing {}", shown(root, dir)), e))?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    Ok(names)
}

/// The offset where the last line of a `len`-byte file starts: `len` if the file is empty or
/// ends with a newline. Reads backwards in blocks, so a large index costs one block.
fn last_line_start(file: &mut File, len: u64) -> io::Result<u64> {
    const BLOCK: u64 = 1 << 16;
    let mut end = len;
    let mut block = Vec::new();
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        block.resize((end - start) as usize, 0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block)?;
        if end == len && block.last() == Some(&b'\n') {
            return Ok(len);
        }
        if let Some(i) = block.iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// Create `dir` and write each `(name, text)` in it, then make every file and the directory
/// durable. The fsyncs are issued together, on the store's fsync threads, so the file system
/// can commit them in one journal transaction: on ext4 that costs about one fsync instead of
/// one per file, and the run is just as durable when this returns.
fn write_dir(root: &Path, dir: &Path, files: &[(&str, &str)]) -> Result<()> {
    fs::create_dir(dir).map_err(|e| Error::io(format!("creating {}", shown(root, dir)), e))?;
    let mut written = Vec::with_capacity(files.len());
    for (name, text) in files {
        let path = dir.join(name);
        written.push((write_new(root, &path, text.as_bytes())?, path));
    }
    let (done, results) = crossbeam_channel::bounded(written.len());
    let count = written.len();
    for (file, path) in written {
        let done = done.clone();
        let path = shown(root, &path);
        run_fsync(Box::new(move || {
            let synced = file
                .sync_all()
                .map_err(|e| Error::io(format!("syncing {path}"), e));
            let _ = done.send(synced);
        }));
    }
    drop(done);
    let dir_synced = sync_dir(root, dir);
    for _ in 0..count {
        results
            .recv()
            .map_err(|_| Error::Store("an fsync thread stopped before it answered".into()))??;
    }
    dir_synced
}

/// An fsync to run off the calling thread.
type FsyncJob = Box<dyn FnOnce() + Send>;

/// How many fsyncs may run at once: the files of a few concurrent runs.
const FSYNC_THREADS: usize = 8;

/// Run `job` on the store's fsync threads, started on first use and kept for the life of the
/// process (starting threads for every run would cost more than the fsyncs save, and fragment
/// the allocator's memory). Without them (a thread could not be started), the job runs here.
fn run_fsync(job: FsyncJob) {
    static JOBS: OnceLock<Option<crossbeam_channel::Sender<FsyncJob>>> = OnceLock::new();
    let jobs = JOBS.get_or_init(|| {
        let (tx, rx) = crossbeam_channel::unbounded::<FsyncJob>();
        let mut started = 0;
        for i in 0..FSYNC_THREADS {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("ddwire-fsync-{i}"))
                .spawn(move || rx.iter().for_each(|job| job()));
            started += usize::from(spawned.is_ok());
        }
        (started > 0).then_some(tx)
    });
    match jobs {
        Some(tx) => {
            if let Err(unsent) = tx.send(job) {
                (unsent.into_inner())();
            }
        }
        None => job(),
    }
}

/// Write a file that must not exist yet; the caller makes it durable.
fn write_new(root: &Path, path: &Path, bytes: &[u8]) -> Result<File> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io(format!("creating {}", shown(root, path)), e))?;
    file.write_all(bytes)
        .map_err(|e| Error::io(format!("writing {}", shown(root, path)), e))?;
    Ok(file)
}

/// Make the entries of `dir` durable (a rename into it, a file created in it).
fn sync_dir(root: &Path, dir: &Path) -> Result<()> {
    #[cfg(unix)]
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(format!("syncing the directory {}", shown(root, dir)), e))?;
    #[cfg(not(unix))]
    let _ = (root, dir);
    Ok(())
}

/// The text of `path`, or `None` if there is no such file (or no path was given).
fn read_text(root: &Path, path: Option<PathBuf>) -> Result<Option<String>> {
    let Some(path) = path else { return Ok(None) };
    match fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => Ok(None),
        Err(e) => Err(Error::io(format!("reading {}", shown(root, &path)), e)),
    }
}

/// [`read_text`], parsed as JSON.
fn read_json(root: &Path, path: Option<PathBuf>) -> Result<Option<Value>> {
    let named = path.as_ref().map(|p| shown(root, p));
    read_text(root, path)?
        .map(|text| {
            serde_json::from_str(&text).map_err(|e| {
                Error::Store(format!("{} is not JSON: {e}", named.unwrap_or_default()))
            })
        })
        .transpose()
}

/// `path` as an error message names it: relative to the store's root and said to be in the run
/// store (`<id>/envelope.json in the run store`), so no message that reaches a caller tells
/// where the server keeps its files. A path outside the root (none is made) shows its last
/// component only.
fn shown(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(relative) if relative.as_os_str().is_empty() => "the run store's root".to_string(),
        Ok(relative) => format!("{} in the run store", relative.display()),
        Err(_) => format!(
            "{} near the run store",
            path.file_name().unwrap_or_default().to_string_lossy()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::new_uuid7;
    use serde_json::json;

    /// A store root under the temp directory, removed when dropped.
    struct TempRoot(PathBuf);

    impl TempRoot {
        fn new(tag: &str) -> TempRoot {
            TempRoot(std::env::temp_dir().join(format!("ddwire-store-{tag}-{}", new_uuid7())))
        }
    }

    impl Drop for TempRoot {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn envelope(id: &str, agent: &str, completed_at: &str) -> Value {
        json!({
            "invocation_id": id,
            "agent_id": agent,
            "agent_version": "0.1.0",
            "completed_at": completed_at,
            "grounding_mode": "input_only",
            "policy_bundle_ref": "profile:test-permissive@v1",
            "policy_digest": "0".repeat(64),
            "acting_for": {
                "principal_id": "https://orcid.org/0000-0002-1825-0097",
                "name": "Josiah Carberry",
                "principal_kind": "person",
                "assurance": "asserted"
            },
            "contract_version": "0.7.0",
            "outcome": {"status": "succeeded", "statement": "Hello, Wörld."},
            "telemetry": {"trace_id": "a".repeat(32), "input_tokens": 3, "energy_estimate_j": null,
                          "energy_method": "not_measured"},
            "requires_human_review": true
        })
    }

    fn request(id: &str) -> Value {
        json!({"invocation_id": id, "agent_id": "hello", "input": {"schema_class": "Message", "message_text": "hi"}})
    }

    /// Store a run with one span and no schema.
    fn put(store: &RunStore, envelope: &Value) -> Result<PathBuf> {
        let id = envelope["invocation_id"].as_str().unwrap_or("");
        store.append(&NewRun {
            envelope,
            request: &request(id),
            spans: &[format!("{{\"name\": \"invoke_agent\", \"id\": \"{id}\"}}")],
            grounding: "grounding: passed [input_only] (0 retrieval, 1 chat spans)",
            schemas: &[],
        })
    }

    fn ids(envelopes: &[Value]) -> Vec<String> {
        envelopes
            .iter()
            .map(|e| e["invocation_id"].as_str().unwrap().to_string())
            .collect()
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        dir_names(dir, dir)
            .unwrap()
            .into_iter()
            .filter(|n| n.starts_with(TMP_PREFIX))
            .collect()
    }

    /// Every path under `dir`, relative, sorted.
    fn tree(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for entry in fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
                if path.is_dir() {
                    todo.push(path);
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn every_run_is_stored_with_its_files() {
        let root = TempRoot::new("files");
        let store = RunStore::open(&root.0).unwrap();
        let id = new_uuid7();
        let env = envelope(&id, "hello", "2026-01-02T03:04:05.678901Z");
        let req = request(&id);
        let schema = json!({"type": "object", "title": "Réponse", "properties": {"x": {"type": "number", "minimum": 1.0}}});
        let digest = schema_digest(&schema);
        let spans = vec![
            r#"{"name": "invoke_agent", "context": {"span_id": "0x1"}}"#.to_string(),
            r#"{"name": "chat", "attributes": {"dd.model_id": "m"}}"#.to_string(),
        ];
        let summary = "grounding: passed [input_only] (0 retrieval, 1 chat spans)";
        let dir = store
            .append_with_files(
                &NewRun {
                    envelope: &env,
                    request: &req,
                    spans: &spans,
                    grounding: summary,
                    schemas: &[(&digest, &schema)],
                },
                &[("sources.txt", "sources: 0 verified, 0 unresolved\n")],
            )
            .unwrap();

        assert_eq!(dir, root.0.join(&id));
        assert!(store.has(&id));
        let read = |name: &str| fs::read_to_string(dir.join(name)).unwrap();
        assert_eq!(read(ENVELOPE_FILE), python::dumps(&env, Style::INDENT2));
        assert!(read(ENVELOPE_FILE).contains("\"statement\": \"Hello, W\\u00f6rld.\""));
        assert_eq!(read(REQUEST_FILE), python::dumps(&req, Style::INDENT2));
        assert_eq!(read(SPANS_FILE), format!("{}\n{}\n", spans[0], spans[1]));
        assert_eq!(read(GROUNDING_FILE), format!("{summary}\n"));
        assert_eq!(read("sources.txt"), "sources: 0 verified, 0 unresolved\n");
        let schema_file = root.0.join(SCHEMAS_DIR).join(format!("{digest}.json"));
        assert_eq!(
            fs::read_to_string(schema_file).unwrap(),
            python::dumps(&schema, Style::INDENT2)
        );

        assert_eq!(store.envelope(&id).unwrap(), Some(env.clone()));
        assert_eq!(store.envelope_text(&id).unwrap(), Some(read(ENVELOPE_FILE)));
        assert_eq!(store.request(&id).unwrap(), Some(req));
        assert_eq!(store.spans(&id).unwrap(), Some(read(SPANS_FILE)));
        assert_eq!(store.grounding(&id).unwrap().as_deref(), Some(summary));
        assert_eq!(store.schema(&digest).unwrap(), Some(schema));
        assert_eq!(
            fs::read_to_string(store.index_path()).unwrap(),
            format!("{}\n", python::dumps(&env, COMPACT))
        );
        assert_eq!(store.list().unwrap(), vec![env]);
        assert!(leftovers(&root.0).is_empty());
        assert!(leftovers(&root.0.join(SCHEMAS_DIR)).is_empty());
    }

    #[test]
    fn run_ids_sort_chronologically() {
        let root = TempRoot::new("order");
        let store = RunStore::open(&root.0).unwrap();
        let made: Vec<String> = (0..20)
            .map(|i| {
                let id = new_uuid7();
                put(
                    &store,
                    &envelope(&id, "hello", &format!("2026-01-01T00:00:{i:02}Z")),
                )
                .unwrap();
                id
            })
            .collect();
        let listed = ids(&store.list().unwrap());
        assert_eq!(listed, made);
        let mut sorted = listed.clone();
        sorted.sort();
        assert_eq!(listed, sorted, "the index is in id order");
        let mut dirs: Vec<String> = dir_names(&root.0, &root.0)
            .unwrap()
            .into_iter()
            .filter(|n| is_uuid7(n))
            .collect();
        dirs.sort();
        assert_eq!(dirs, made, "directory names sort as the runs were made");
    }

    #[test]
    fn the_store_never_overwrites_a_run() {
        let root = TempRoot::new("once");
        let store = RunStore::open(&root.0).unwrap();
        let id = new_uuid7();
        put(&store, &envelope(&id, "hello", "2026-01-01T00:00:00Z")).unwrap();
        let before = fs::read(root.0.join(&id).join(ENVELOPE_FILE)).unwrap();

        // A second write of the id, by this store or another one on the same root.
        let other = RunStore::open(&root.0).unwrap();
        for s in [&store, &other] {
            let err = put(s, &envelope(&id, "impostor", "2026-01-02T00:00:00Z")).unwrap_err();
            assert!(
                matches!(err, Error::DuplicateInvocation(ref d) if *d == id),
                "{err}"
            );
            assert_eq!(
                err.to_string(),
                format!(
                    "invocation_id {id} has already been used; send each request with a new one"
                )
            );
        }
        assert_eq!(
            fs::read(root.0.join(&id).join(ENVELOPE_FILE)).unwrap(),
            before
        );
        assert_eq!(jsonl::read_lines(store.index_path()).unwrap().len(), 1);

        // Racing writers of one id: exactly one wins, the others are refused.
        let raced = new_uuid7();
        let won: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let (store, raced) = (&store, &raced);
                    s.spawn(move || {
                        match put(
                            store,
                            &envelope(raced, &format!("agent{i}"), "2026-01-03T00:00:00Z"),
                        ) {
                            Ok(_) => true,
                            Err(Error::DuplicateInvocation(_)) => false,
                            Err(e) => panic!("{e}"),
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(won.iter().filter(|w| **w).count(), 1);
        assert_eq!(jsonl::read_lines(store.index_path()).unwrap().len(), 2);

        // The second guard: a directory that holds something other than a run is never
        // replaced, even though it has no envelope.json for the first check to see.
        let squatted = new_uuid7();
        fs::create_dir(root.0.join(&squatted)).unwrap();
        fs::write(root.0.join(&squatted).join("note.txt"), "mine").unwrap();
        let err = put(
            &store,
            &envelope(&squatted, "hello", "2026-01-04T00:00:00Z"),
        )
        .unwrap_err();
        assert!(matches!(err, Error::Store(_)), "{err}");
        assert!(err.to_string().contains("is not a complete run"), "{err}");
        assert!(!store.has(&squatted));
        assert_eq!(
            fs::read_to_string(root.0.join(&squatted).join("note.txt")).unwrap(),
            "mine"
        );
        assert_eq!(
            tree(&root.0.join(&squatted)),
            vec![PathBuf::from("note.txt")]
        );

        // An empty directory (a run the reference began and never wrote) is no run: replaced.
        let begun = new_uuid7();
        fs::create_dir(root.0.join(&begun)).unwrap();
        put(&store, &envelope(&begun, "hello", "2026-01-05T00:00:00Z")).unwrap();
        assert!(store.has(&begun));

        assert_eq!(jsonl::read_lines(store.index_path()).unwrap().len(), 3);
        assert!(leftovers(&root.0).is_empty());
    }

    #[test]
    fn a_crash_before_the_rename_leaves_no_run() {
        let root = TempRoot::new("crash-before");
        let store = RunStore::open(&root.0).unwrap();
        let kept = new_uuid7();
        put(&store, &envelope(&kept, "hello", "2026-01-01T00:00:00Z")).unwrap();
        let index_before = fs::read(store.index_path()).unwrap();

        // What a writer killed mid-write leaves: half a run, and half a schema.
        let id = new_uuid7();
        let crashed = [
            root.0.join(format!(".tmp-{id}-partial")),
            root.0
                .join(format!(".tmp-4294967295-00000000deadbeef-{id}")),
        ];
        for dir in &crashed {
            fs::create_dir(dir).unwrap();
            fs::write(dir.join(ENVELOPE_FILE), "{\"invocation_id\": \"").unwrap();
        }
        fs::create_dir_all(root.0.join(SCHEMAS_DIR)).unwrap();
        let half_schema = root
            .0
            .join(SCHEMAS_DIR)
            .join(format!(".tmp-4294967295-0-{}", "a".repeat(64)));
        fs::write(&half_schema, "{\"type\"").unwrap();
        // The temporary directory of another live process may still be being written.
        let live = root.0.join(format!(".tmp-1-0-{}", new_uuid7()));
        let check_live = Path::new("/proc/1").exists() && std::process::id() != 1;
        if check_live {
            fs::create_dir(&live).unwrap();
        }

        let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
        let mut removed = recovery.removed.clone();
        removed.sort();
        let mut expected = vec![crashed[0].clone(), crashed[1].clone(), half_schema];
        expected.sort();
        assert_eq!(removed, expected);
        assert!(!recovery.torn_tail && recovery.indexed.is_empty());
        assert!(!store.has(&id));
        assert_eq!(store.envelope(&id).unwrap(), None);
        assert_eq!(ids(&store.list().unwrap()), vec![kept]);
        assert_eq!(fs::read(store.index_path()).unwrap(), index_before);
        assert!(crashed.iter().all(|d| !d.exists()));
        if check_live {
            assert!(live.exists(), "another live process's write was removed");
        }
        // The id is free: the run can be made now.
        put(&store, &envelope(&id, "hello", "2026-01-02T00:00:00Z")).unwrap();
        assert!(store.has(&id));
    }

    #[test]
    fn a_crash_after_the_rename_is_indexed_on_open() {
        let root = TempRoot::new("crash-after");
        let store = RunStore::open(&root.0).unwrap();
        let first = envelope(&new_uuid7(), "hello", "2026-01-01T00:00:00Z");
        put(&store, &first).unwrap();

        // A run renamed into place whose index line was never written, or only half of it.
        let id = new_uuid7();
        let orphan = envelope(&id, "hello", "2026-01-02T00:00:00Z");
        let files = [
            (ENVELOPE_FILE, python::dumps(&orphan, Style::INDENT2)),
            (REQUEST_FILE, python::dumps(&request(&id), Style::INDENT2)),
            (SPANS_FILE, String::new()),
            (
                GROUNDING_FILE,
                "grounding: passed [input_only] (0 retrieval, 0 chat spans)\n".into(),
            ),
        ];
        let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
        write_dir(&root.0, &root.0.join(&id), &files).unwrap();
        let line = python::dumps(&orphan, COMPACT);
        let mut index = OpenOptions::new()
            .append(true)
            .open(store.index_path())
            .unwrap();
        index.write_all(&line.as_bytes()[..line.len() / 2]).unwrap();
        drop(index);
        // Until recovery, readers skip the torn line rather than fail.
        assert_eq!(store.list().unwrap(), vec![first.clone()]);

        let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
        assert!(recovery.torn_tail);
        assert_eq!(recovery.indexed, vec![id.clone()]);
        assert!(recovery.removed.is_empty() && recovery.unreadable.is_empty());
        assert_eq!(store.list().unwrap(), vec![first.clone(), orphan.clone()]);
        let lines = jsonl::read_lines(store.index_path()).unwrap();
        assert_eq!(lines, vec![python::dumps(&first, COMPACT), line]);

        // Recovery is idempotent, and the store goes on.
        let (store, again) = RunStore::open_reporting(&root.0).unwrap();
        assert!(again.is_clean(), "{again:?}");
        let third = envelope(&new_uuid7(), "hello", "2026-01-03T00:00:00Z");
        put(&store, &third).unwrap();
        assert_eq!(store.list().unwrap(), vec![first, orphan, third]);
    }

    #[test]
    fn concurrent_writers_append_the_index_without_interleaving() {
        let root = TempRoot::new("concurrent");
        let store = RunStore::open(&root.0).unwrap();
        std::thread::scope(|s| {
            for w in 0..8 {
                let store = &store;
                s.spawn(move || {
                    for i in 0..50 {
                        let mut env =
                            envelope(&new_uuid7(), &format!("agent-{w}"), "2026-01-01T00:00:00Z");
                        env["outcome"]["statement"] =
                            json!(format!("{w}/{i} {}", "x".repeat(2000)));
                        put(store, &env).unwrap();
                    }
                });
            }
        });
        let lines = jsonl::read_lines(store.index_path()).unwrap();
        assert_eq!(lines.len(), 400);
        let mut seen = HashSet::new();
        for line in &lines {
            let env: Value = serde_json::from_str(line).expect("every index line is one envelope");
            let id = env["invocation_id"].as_str().unwrap();
            assert!(seen.insert(id.to_string()), "{id} indexed twice");
            assert_eq!(store.envelope(id).unwrap(), Some(env));
        }
        assert!(leftovers(&root.0).is_empty());
        assert!(RunStore::open_reporting(&root.0).unwrap().1.is_clean());
    }

    #[test]
    fn an_invalid_id_never_touches_the_filesystem() {
        let root = TempRoot::new("invalid");
        let store = RunStore::open(root.0.join("runs")).unwrap();
        let escape = format!("escaped-{}", new_uuid7());
        let upper = new_uuid7().to_uppercase();
        let bad = [
            format!("../{escape}"),
            "..".into(),
            ".".into(),
            String::new(),
            "/tmp".into(),
            upper,
        ];
        for id in &bad {
            let err = put(&store, &envelope(id, "hello", "2026-01-01T00:00:00Z")).unwrap_err();
            assert!(matches!(err, Error::Store(_)), "{id}: {err}");
            assert!(!store.has(id));
            assert_eq!(store.envelope(id).unwrap(), None);
            assert_eq!(store.envelope_text(id).unwrap(), None);
            assert_eq!(store.request(id).unwrap(), None);
            assert_eq!(store.spans(id).unwrap(), None);
            assert_eq!(store.grounding(id).unwrap(), None);
        }
        let no_id = json!({"agent_id": "hello"});
        assert!(put(&store, &no_id).is_err());
        for digest in ["../../etc/passwd", &"A".repeat(64), &"a".repeat(63), ""] {
            assert_eq!(store.schema(digest).unwrap(), None);
        }

        // A valid id with a bad digest, span line or file name is refused before any write.
        let id = new_uuid7();
        let env = envelope(&id, "hello", "2026-01-01T00:00:00Z");
        let req = request(&id);
        let schema = json!({"type": "object"});
        let good = schema_digest(&schema);
        let lines = ["{}".to_string()];
        let broken = ["{\n}".to_string()];
        let runs = [
            (&[("../evil", &schema)][..], &lines[..]),
            (&[(good.as_str(), &schema), ("A", &schema)][..], &lines[..]),
            (&[(good.as_str(), &schema)][..], &broken[..]),
        ];
        for (schemas, spans) in runs {
            let run = NewRun {
                envelope: &env,
                request: &req,
                spans,
                grounding: "g",
                schemas,
            };
            assert!(store.append(&run).is_err());
        }
        let run = NewRun {
            envelope: &env,
            request: &req,
            spans: &lines,
            grounding: "g",
            schemas: &[],
        };
        for name in ["../x", ".hidden", "a/b", ENVELOPE_FILE, ""] {
            assert!(
                store.append_with_files(&run, &[(name, "x")]).is_err(),
                "{name}"
            );
        }
        assert!(!store.has(&id));
        assert!(tree(&store.root).is_empty(), "{:?}", tree(&store.root));
        assert_eq!(tree(&root.0), vec![PathBuf::from("runs")]);
        assert!(!std::env::temp_dir().join(&escape).exists());
    }

    #[test]
    fn a_schema_is_written_once() {
        let root = TempRoot::new("schema");
        let store = RunStore::open(&root.0).unwrap();
        let schema = json!({"type": "object", "required": ["reply_text"]});
        let digest = schema_digest(&schema);
        let run = |id: &str| {
            let env = envelope(id, "hello", "2026-01-01T00:00:00Z");
            store.append(&NewRun {
                envelope: &env,
                request: &request(id),
                spans: &[],
                grounding: "g",
                schemas: &[(&digest, &schema)],
            })
        };
        run(&new_uuid7()).unwrap();
        let path = root.0.join(SCHEMAS_DIR).join(format!("{digest}.json"));
        let first = fs::metadata(&path).unwrap();
        run(&new_uuid7()).unwrap();
        let second = fs::metadata(&path).unwrap();
        assert_eq!(first.modified().unwrap(), second.modified().unwrap());
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            assert_eq!(first.ino(), second.ino(), "the schema file was replaced");
        }
        assert_eq!(store.schema(&digest).unwrap(), Some(schema.clone()));
        assert_eq!(
            dir_names(&root.0, &root.0.join(SCHEMAS_DIR)).unwrap(),
            vec![format!("{digest}.json")]
        );

        // A schema is kept only under its own digest, and a mismatch anywhere keeps none.
        let fresh = json!({"type": "string"});
        let fresh_digest = schema_digest(&fresh);
        let other = "0".repeat(64);
        let env = envelope(&new_uuid7(), "hello", "2026-01-01T00:00:00Z");
        let err = store
            .append(&NewRun {
                envelope: &env,
                request: &json!({}),
                spans: &[],
                grounding: "g",
                schemas: &[(&fresh_digest, &fresh), (&other, &schema)],
            })
            .unwrap_err();
        assert!(err.to_string().contains(&digest), "{err}");
        assert_eq!(store.schema(&other).unwrap(), None);
        assert_eq!(store.schema(&fresh_digest).unwrap(), None);
        assert_eq!(store.list().unwrap().len(), 2);
    }

    #[test]
    fn listing_is_newest_first_and_names_the_principal() {
        let root = TempRoot::new("listing");
        let store = RunStore::open(&root.0).unwrap();
        let (a, b, c) = (new_uuid7(), new_uuid7(), new_uuid7());
        put(&store, &envelope(&a, "hello", "2026-01-01T00:00:00Z")).unwrap();
        let mut before_adr18 = envelope(&b, "quality", "2026-01-02T00:00:00Z");
        before_adr18.as_object_mut().unwrap().remove("acting_for");
        before_adr18["outcome"]["status"] = json!("abstained");
        put(&store, &before_adr18).unwrap();
        let mut role = envelope(&c, "r3", "2026-01-03T00:00:00Z");
        role["acting_for"]["name"] = json!("Data steward");
        role["outcome"]["status"] = json!("referred");
        put(&store, &role).unwrap();

        assert_eq!(
            store.listing().unwrap(),
            vec![
                json!({"invocation_id": c, "agent_id": "r3", "status": "referred",
                       "completed_at": "2026-01-03T00:00:00Z", "acting_for": "Data steward"}),
                json!({"invocation_id": b, "agent_id": "quality", "status": "abstained",
                       "completed_at": "2026-01-02T00:00:00Z", "acting_for": null}),
                json!({"invocation_id": a, "agent_id": "hello", "status": "succeeded",
                       "completed_at": "2026-01-01T00:00:00Z", "acting_for": "Josiah Carberry"}),
            ]
        );
        assert_eq!(
            RunStore::open(root.0.join("empty"))
                .unwrap()
                .listing()
                .unwrap(),
            Vec::<Value>::new()
        );
    }

    #[test]
    fn conversations_group_runs() {
        let root = TempRoot::new("conversations");
        let store = RunStore::open(&root.0).unwrap();
        let (talk, chat) = (new_uuid7(), new_uuid7());
        let run = |agent: &str,
                   at: &str,
                   conversation: Option<&str>,
                   parent: Option<&str>,
                   status: &str| {
            let id = new_uuid7();
            let mut env = envelope(&id, agent, at);
            env["outcome"]["status"] = json!(status);
            if let Some(c) = conversation {
                env["conversation_id"] = json!(c);
            }
            if let Some(p) = parent {
                env["parent_invocation_id"] = json!(p);
            }
            put(&store, &env).unwrap();
            (id, env)
        };
        let (turn1, e1) = run(
            "director",
            "2026-01-01T00:00:01Z",
            Some(&talk),
            None,
            "succeeded",
        );
        let (_, e2) = run(
            "quality",
            "2026-01-01T00:00:02Z",
            Some(&talk),
            Some(&turn1),
            "failed",
        );
        // A run outside any conversation is in no row (the rows above are the whole list).
        run("hello", "2026-01-01T00:00:03Z", None, None, "succeeded");
        let (_, e3) = run(
            "hello",
            "2026-01-01T00:00:04Z",
            Some(&chat),
            None,
            "succeeded",
        );
        let (_, e4) = run(
            "director",
            "2026-01-01T00:00:05Z",
            Some(&talk),
            None,
            "abstained",
        );

        assert_eq!(
            store.conversations().unwrap(),
            vec![
                json!({"conversation_id": talk, "agent_id": "director", "turns": 2, "runs": 3,
                       "started_at": "2026-01-01T00:00:01Z",
                       "last_completed_at": "2026-01-01T00:00:05Z", "last_status": "abstained",
                       "agent_ids": ["director", "quality"]}),
                json!({"conversation_id": chat, "agent_id": "hello", "turns": 1, "runs": 1,
                       "started_at": "2026-01-01T00:00:04Z",
                       "last_completed_at": "2026-01-01T00:00:04Z", "last_status": "succeeded",
                       "agent_ids": ["hello"]}),
            ]
        );
        assert_eq!(store.conversation(&talk).unwrap(), Some(vec![e1, e2, e4]));
        assert_eq!(store.conversation(&chat).unwrap(), Some(vec![e3]));
        assert_eq!(store.conversation(&new_uuid7()).unwrap(), None);
        assert_eq!(store.list().unwrap().len(), 5);

        // A delegated child is stored before its parent: its conversation is listed already.
        let pending = new_uuid7();
        run(
            "quality",
            "2026-01-01T00:00:06Z",
            Some(&pending),
            Some(&new_uuid7()),
            "succeeded",
        );
        let rows = store.conversations().unwrap();
        assert_eq!(rows[0]["conversation_id"], json!(pending));
        assert_eq!(
            (rows[0]["turns"].clone(), rows[0]["runs"].clone()),
            (json!(0), json!(1))
        );
        assert_eq!(rows[0]["agent_id"], json!("quality"));
    }

    #[test]
    fn a_store_written_by_the_reference_reads() {
        let root = TempRoot::new("reference");
        let id = "019bd5a2-7c1e-7d3a-9f00-0123456789ab";
        let conversation = "019bd5a2-7c00-7000-8000-000000000001";
        let digest = "5f2c".repeat(16);
        // Exactly what Python's json.dumps(env, indent=2) writes: ensure_ascii escapes, ", "
        // never appears at line ends, no newline at the end of the file.
        let envelope_text = format!(
            r#"{{
  "invocation_id": "{id}",
  "agent_id": "hello",
  "agent_version": "0.3.1",
  "completed_at": "2026-01-02T03:04:05.678901Z",
  "grounding_mode": "input_only",
  "policy_bundle_ref": "profile:default@v1",
  "policy_digest": "{zeros}",
  "acting_for": {{
    "principal_id": "https://orcid.org/0000-0002-1825-0097",
    "name": "Jos\u00e9 Carberry \ud83d\ude00",
    "principal_kind": "person",
    "assurance": "asserted"
  }},
  "contract_version": "0.7.0",
  "input_schema": "{digest}",
  "outcome": {{
    "status": "succeeded",
    "statement": "Replied."
  }},
  "payload": {{
    "schema_class": "Reply",
    "reply_text": "Gr\u00fc\u00df dich",
    "reply_derivation": "template",
    "grounded_on": []
  }},
  "evidence": [],
  "telemetry": {{
    "trace_id": "{trace}",
    "model_id": null,
    "input_tokens": 12,
    "output_tokens": 3,
    "energy_estimate_j": null,
    "energy_method": "not_measured"
  }},
  "requires_human_review": true,
  "conversation_id": "{conversation}"
}}"#,
            zeros = "0".repeat(64),
            trace = "ab".repeat(16),
        );
        let index_line = format!(
            concat!(
                r#"{{"invocation_id":"{id}","agent_id":"hello","agent_version":"0.3.1","#,
                r#""completed_at":"2026-01-02T03:04:05.678901Z","grounding_mode":"input_only","#,
                r#""policy_bundle_ref":"profile:default@v1","policy_digest":"{zeros}","#,
                r#""acting_for":{{"principal_id":"https://orcid.org/0000-0002-1825-0097","#,
                r#""name":"Jos\u00e9 Carberry \ud83d\ude00","principal_kind":"person","assurance":"asserted"}},"#,
                r#""contract_version":"0.7.0","input_schema":"{digest}","#,
                r#""outcome":{{"status":"succeeded","statement":"Replied."}},"#,
                r#""payload":{{"schema_class":"Reply","reply_text":"Gr\u00fc\u00df dich","reply_derivation":"template","grounded_on":[]}},"#,
                r#""evidence":[],"telemetry":{{"trace_id":"{trace}","model_id":null,"input_tokens":12,"output_tokens":3,"#,
                r#""energy_estimate_j":null,"energy_method":"not_measured"}},"requires_human_review":true,"#,
                r#""conversation_id":"{conversation}"}}"#
            ),
            id = id,
            zeros = "0".repeat(64),
            digest = digest,
            trace = "ab".repeat(16),
            conversation = conversation,
        );
        let request_text = format!(
            "{{\n  \"invocation_id\": \"{id}\",\n  \"agent_id\": \"hello\",\n  \"input\": {{\n    \"schema_class\": \"Message\",\n    \"message_text\": \"Gr\\u00fc\\u00df\"\n  }},\n  \"conversation_id\": \"{conversation}\"\n}}"
        );
        let spans_text = "{\"name\": \"invoke_agent\", \"attributes\": {\"dd.grounding_mode\": \"input_only\"}}\n{\"name\": \"chat\", \"attributes\": {}}\n";
        let schema_text = "{\n  \"type\": \"object\",\n  \"title\": \"Message \\u2014 text\",\n  \"required\": [\n    \"message_text\"\n  ]\n}";
        let run_dir = root.0.join(id);
        fs::create_dir_all(&run_dir).unwrap();
        fs::create_dir_all(root.0.join(SCHEMAS_DIR)).unwrap();
        fs::write(run_dir.join(ENVELOPE_FILE), &envelope_text).unwrap();
        fs::write(run_dir.join(REQUEST_FILE), &request_text).unwrap();
        fs::write(run_dir.join(SPANS_FILE), spans_text).unwrap();
        fs::write(
            run_dir.join(GROUNDING_FILE),
            "grounding: passed [input_only] (0 retrieval, 1 chat spans)\n",
        )
        .unwrap();
        fs::write(
            run_dir.join("sources.txt"),
            "sources: 0 verified, 0 unresolved\n",
        )
        .unwrap();
        fs::write(
            root.0.join(SCHEMAS_DIR).join(format!("{digest}.json")),
            schema_text,
        )
        .unwrap();
        fs::write(root.0.join(INDEX_NAME), format!("{index_line}\n")).unwrap();

        let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
        assert!(recovery.is_clean(), "{recovery:?}");
        assert!(store.has(id));
        let env = store.envelope(id).unwrap().unwrap();
        assert_eq!(env["acting_for"]["name"], json!("José Carberry 😀"));
        assert_eq!(env["payload"]["reply_text"], json!("Grüß dich"));
        assert_eq!(
            store.envelope_text(id).unwrap().as_deref(),
            Some(envelope_text.as_str())
        );
        // Our writer produces the reference's bytes (in the document's own key order).
        assert_eq!(
            python::reformat(&envelope_text, Style::INDENT2).unwrap(),
            envelope_text
        );
        assert_eq!(python::reformat(&index_line, COMPACT).unwrap(), index_line);
        assert_eq!(store.list().unwrap(), vec![env.clone()]);
        assert_eq!(
            store.listing().unwrap(),
            vec![
                json!({"invocation_id": id, "agent_id": "hello", "status": "succeeded",
                        "completed_at": "2026-01-02T03:04:05.678901Z", "acting_for": "José Carberry 😀"})
            ]
        );
        assert_eq!(
            store.request(id).unwrap().unwrap()["input"]["message_text"],
            json!("Grüß")
        );
        assert_eq!(store.spans(id).unwrap().as_deref(), Some(spans_text));
        assert_eq!(
            store.grounding(id).unwrap().as_deref(),
            Some("grounding: passed [input_only] (0 retrieval, 1 chat spans)")
        );
        assert_eq!(
            store.schema(&digest).unwrap().unwrap()["title"],
            json!("Message — text")
        );
        assert_eq!(
            store.conversation(conversation).unwrap(),
            Some(vec![env.clone()])
        );
        assert_eq!(store.conversations().unwrap()[0]["turns"], json!(1));

        // A reference run that crashed before its index line (it writes the index after
        // envelope.json) is indexed on open; one whose envelope.json was cut short is not.
        let late = "019bd5a2-7c1f-7000-8000-000000000002";
        let late_env = envelope_text.replace(id, late);
        fs::create_dir(root.0.join(late)).unwrap();
        fs::write(root.0.join(late).join(ENVELOPE_FILE), &late_env).unwrap();
        let cut = "019bd5a2-7c1f-7000-8000-000000000003";
        fs::create_dir(root.0.join(cut)).unwrap();
        fs::write(root.0.join(cut).join(ENVELOPE_FILE), &envelope_text[..100]).unwrap();
        let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
        assert_eq!(recovery.indexed, vec![late.to_string()]);
        assert_eq!(recovery.unreadable, vec![cut.to_string()]);
        assert_eq!(
            ids(&store.list().unwrap()),
            vec![id.to_string(), late.to_string()]
        );
        assert_eq!(store.spans(late).unwrap(), None);
        assert_eq!(
            fs::read_to_string(root.0.join(late).join(ENVELOPE_FILE)).unwrap(),
            late_env
        );
    }
}
