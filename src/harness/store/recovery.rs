//! Recovery: what a writer does on open, under the store's lock, so the index and the run
//! directories agree again whatever stopped the writers before it.
//!
//! 1. Each writer holds a lock on its own file, `.ddwire/writer-<id>.lock`, for as long as it
//!    runs; the kernel releases it when the process ends, however it ends. A writer whose lock
//!    can be taken has stopped: its journal segments are replayed (every committed run is
//!    restored to its directory, byte for byte, and indexed if it is not) and then removed, and
//!    its unfinished temporary entries (`.tmp-<writer>-…`) are removed. A live writer's are
//!    left alone.
//! 2. The index is read once: a line that is not JSON (a crash, or a torn append that another
//!    append was glued onto) is removed and kept aside in `.ddwire/dropped-index-lines.txt`; a
//!    run indexed twice keeps its first line; an unfinished last line is cut off, or given its
//!    newline if it is a whole document. The index is rewritten (to a new file, synced, and
//!    renamed over the old one) only when a line must go from its middle.
//! 3. Every run directory holding an `envelope.json` that the index does not name is indexed
//!    (oldest id first), so every complete run is indexed exactly once.
//!
//! Everything recovery changed is synced before it returns, and the [`Recovery`] report says
//! what it was, for the log.

use super::StoreError;
use super::files::{
    dir_names, io_at, read_if_any, shown, sync_all, sync_dir, write_new, write_via,
};
use super::index::{self, Forward};
use super::journal::{self, Record};
use super::{COMPACT, CONTROL_DIR, ENVELOPE_FILE, INDEX_NAME, SCHEMAS_DIR, TMP_PREFIX};
use crate::harness::{HarnessError, Result};
use crate::ids::{is_uuid7, random_u64};
use crate::json::python;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Where recovery keeps index lines it removed because they were not JSON.
pub(crate) const DROPPED_LINES: &str = "dropped-index-lines.txt";

/// What recovery repaired. Empty when the store was left clean.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Recovery {
    /// Leftover temporary entries removed: runs or schemas whose write never finished.
    pub(crate) removed: Vec<PathBuf>,
    /// Runs restored or repaired from the journal of a writer that stopped.
    pub(crate) replayed: Vec<String>,
    /// Whether the index ended in an unfinished line, which was cut off or completed.
    pub(crate) torn_tail: bool,
    /// Runs whose directory was complete but missing from the index, now appended to it.
    pub(crate) indexed: Vec<String>,
    /// Line numbers of index lines that were not JSON, removed (and kept aside in
    /// `.ddwire/dropped-index-lines.txt`).
    pub(crate) dropped_lines: Vec<usize>,
    /// Runs that were indexed more than once; only the first line was kept.
    pub(crate) duplicates: Vec<String>,
    /// Run directories whose `envelope.json` is not a JSON object naming that id (a reference
    /// writer that crashed mid-file): left as they are and not indexed.
    pub(crate) unreadable: Vec<String>,
    /// Stopped writers whose journals were replayed and removed.
    pub(crate) writers: Vec<String>,
}

impl Recovery {
    /// Whether there was nothing to repair.
    pub(crate) fn is_clean(&self) -> bool {
        *self == Recovery::default()
    }
}

impl fmt::Display for Recovery {
    /// One line for the log: what was repaired.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_clean() {
            return f.write_str("nothing to repair");
        }
        // Each part is `{verb} {count} {what}`, said only when the count is not zero.
        let said =
            |verb: &str, n: usize, what: String| (n > 0).then(|| format!("{verb} {n} {what}"));
        let parts: Vec<String> = [
            said(
                "replayed the journals",
                self.writers.len(),
                format!(
                    "writer(s) left when they stopped without closing the store{}",
                    if self.replayed.is_empty() && self.indexed.is_empty() {
                        " (nothing was missing)"
                    } else {
                        ""
                    }
                ),
            ),
            said("restored", self.replayed.len(), "run(s) from them".into()),
            said("removed", self.removed.len(), "unfinished write(s)".into()),
            self.torn_tail
                .then(|| "repaired an unfinished last index line".into()),
            said(
                "removed",
                self.dropped_lines.len(),
                format!(
                    "index line(s) that were not JSON (lines {:?}, kept in {CONTROL_DIR}/{DROPPED_LINES})",
                    self.dropped_lines
                ),
            ),
            said("removed", self.duplicates.len(), "duplicate index line(s)".into()),
            said("indexed", self.indexed.len(), "run(s) missing from the index".into()),
            said(
                "left",
                self.unreadable.len(),
                format!(
                    "run directory(ies) whose envelope.json is unreadable: {}",
                    self.unreadable.join(", ")
                ),
            ),
        ]
        .into_iter()
        .flatten()
        .collect();
        f.write_str(&parts.join("; "))
    }
}

/// A writer's lock file name.
pub(crate) fn writer_lock_name(writer: &str) -> String {
    format!("writer-{writer}.lock")
}

/// A writer's journal segment file name.
pub(crate) fn segment_name(writer: &str, seq: u64) -> String {
    format!("writer-{writer}.{seq}.wal")
}

/// The name of a writer's checkpointed segment kept for reuse.
pub(crate) fn spare_name(writer: &str) -> String {
    format!("writer-{writer}.spare.wal")
}

/// A fresh temporary name for `what` (a run id or a digest), owned by `writer`:
/// `.tmp-<writer>-<random>-<what>`.
pub(crate) fn tmp_name(writer: &str, what: &str) -> String {
    format!("{TMP_PREFIX}{writer}-{:016x}-{what}", random_u64())
}

/// The writer a temporary entry belongs to: the two fields after `.tmp-` (`<pid>-<random>`).
fn tmp_owner(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(TMP_PREFIX)?;
    let first = rest.find('-')?;
    let second = rest[first + 1..].find('-').map(|i| first + 1 + i)?;
    Some(&rest[..second])
}

/// A writer that stopped: its id, its journal segments in order, and its lock, held until its
/// files are gone.
struct Stopped {
    writer: String,
    segments: Vec<(u64, String)>,
    _lock: Option<File>,
}

/// The ids an index names, kept small: a UUID in 16 bytes.
#[derive(Default)]
struct Ids {
    uuids: HashSet<u128>,
    other: HashSet<String>,
}

impl Ids {
    fn key(id: &str) -> Option<u128> {
        let b = id.as_bytes();
        if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
            return None;
        }
        let hex: String = id.chars().filter(|c| *c != '-').collect();
        u128::from_str_radix(&hex, 16).ok()
    }

    /// Add `id`; `false` if it was there.
    fn insert(&mut self, id: &str) -> bool {
        match Ids::key(id) {
            Some(k) => self.uuids.insert(k),
            None => self.other.insert(id.to_string()),
        }
    }

    fn contains(&self, id: &str) -> bool {
        match Ids::key(id) {
            Some(k) => self.uuids.contains(&k),
            None => self.other.contains(id),
        }
    }
}

/// How the index ends.
#[derive(Default)]
enum Tail {
    /// Empty, or ending with a newline.
    #[default]
    Clean,
    /// A whole document without its newline, starting at the offset.
    Whole(u64),
    /// An unfinished line starting at the offset.
    Torn(u64),
}

/// What one read of the index found.
#[derive(Default)]
struct IndexState {
    ids: Ids,
    /// Line numbers of complete lines that are not JSON.
    bad: Vec<usize>,
    /// Line numbers of lines naming a run an earlier line named.
    duplicates: Vec<usize>,
    tail: Tail,
    len: u64,
}

fn read_index(path: &Path, recovery: &mut Recovery) -> Result<IndexState> {
    let io = |e| HarnessError::io(index::INDEX_READ, e);
    let mut state = IndexState::default();
    let Some((file, len)) = index::open(path)? else {
        return Ok(state);
    };
    state.len = len;
    let mut lines = Forward::new(file.try_clone().map_err(io)?, 0, len).map_err(io)?;
    let mut number = 0;
    let mut end_of_complete = 0;
    while let Some(line) = lines.next_line().map_err(io)? {
        number += 1;
        end_of_complete = line.offset + line.bytes.len() as u64 + 1;
        if line.bytes.trim_ascii().is_empty() {
            continue;
        }
        match line_state(&line.bytes) {
            LineState::Run(id) => {
                if !state.ids.insert(&id) {
                    state.duplicates.push(number);
                    recovery.duplicates.push(id);
                }
            }
            LineState::Other => {}
            LineState::Bad => state.bad.push(number),
        }
    }
    if lines.unterminated {
        let fragment = read_from(file, end_of_complete).map_err(io)?;
        state.tail = match line_state(&fragment) {
            LineState::Run(id) => {
                if !state.ids.insert(&id) {
                    // A whole copy of a line already there: drop it with the tail.
                    recovery.duplicates.push(id);
                    Tail::Torn(end_of_complete)
                } else {
                    Tail::Whole(end_of_complete)
                }
            }
            LineState::Other => Tail::Whole(end_of_complete),
            LineState::Bad => Tail::Torn(end_of_complete),
        };
        recovery.torn_tail = true;
    }
    Ok(state)
}

enum LineState {
    Run(String),
    /// A JSON object naming no run: kept as it is.
    Other,
    Bad,
}

fn line_state(bytes: &[u8]) -> LineState {
    match index::line_id(bytes) {
        Some(id) => LineState::Run(id),
        None => match index::line_envelope(bytes) {
            Ok(_) => LineState::Other,
            Err(_) => LineState::Bad,
        },
    }
}

/// Recover the store at `root`. The caller holds the store's lock and is writer `me`.
pub(crate) fn recover(root: &Path, me: &str) -> Result<Recovery> {
    let control = root.join(CONTROL_DIR);
    let index_path = root.join(INDEX_NAME);
    let mut recovery = Recovery::default();

    // 1. Which writers are running, and which stopped with journals to replay.
    let ControlEntries {
        writers,
        spares,
        tmps,
    } = control_entries(root, &control)?;
    let (live, stopped) = live_and_stopped(&control, me, writers);

    // 2. Unfinished writes of writers that are not running.
    remove_unfinished_writes(root, &control, me, &live, tmps, &mut recovery)?;

    // 3. The index as it stands.
    let mut state = read_index(&index_path, &mut recovery)?;

    // 4. Replay the journals of stopped writers.
    let mut to_index: Vec<Vec<u8>> = Vec::new();
    let mut to_sync: Vec<PathBuf> = Vec::new();
    for Stopped {
        writer, segments, ..
    } in &stopped
    {
        for (_, name) in segments {
            journal::read(&control.join(name), |_, record| {
                replay(root, me, &record, &mut to_sync, &mut recovery)?;
                if state.ids.insert(&record.id) {
                    to_index.push(record.index_line);
                    recovery.indexed.push(record.id);
                }
                Ok(())
            })?;
        }
        recovery.writers.push(writer.clone());
    }

    // 5. Complete run directories the index does not name.
    index_unnamed_runs(root, &mut state, &mut to_index, &mut recovery)?;

    // 6. Mend the index.
    let index_changed = if !state.bad.is_empty() || !state.duplicates.is_empty() {
        rewrite_index(root, &index_path, &state, &to_index, &mut recovery)?;
        true
    } else {
        append_to_index(root, &index_path, &state, &to_index)?
    };

    // 7. Make what was restored durable, then forget the stopped writers.
    if !to_sync.is_empty() || !recovery.removed.is_empty() {
        to_sync.push(root.join(SCHEMAS_DIR));
        to_sync.push(root.to_path_buf());
        sync_all(root, to_sync)?;
    }
    if index_changed {
        sync_dir(root, root)?;
    }
    forget_stopped(root, &control, stopped, &spares)?;
    Ok(recovery)
}

/// What the control directory holds, by kind.
#[derive(Default)]
struct ControlEntries {
    /// Every writer with a lock, a spare or a journal here, with its journal segments as
    /// `(sequence number, file name)`.
    writers: BTreeMap<String, Vec<(u64, String)>>,
    /// `(writer, file name)` of checkpointed journals, which hold nothing to replay.
    spares: Vec<(String, String)>,
    /// Unfinished temporary entries.
    tmps: Vec<String>,
}

fn control_entries(root: &Path, control: &Path) -> Result<ControlEntries> {
    let mut entries = ControlEntries::default();
    for name in dir_names(root, control)? {
        if name.starts_with(TMP_PREFIX) {
            entries.tmps.push(name);
            continue;
        }
        let Some(rest) = name.strip_prefix("writer-") else {
            continue;
        };
        if let Some(w) = rest.strip_suffix(".lock") {
            entries.writers.entry(w.to_string()).or_default();
        } else if let Some(w) = rest.strip_suffix(".spare.wal") {
            // Checkpointed: nothing in it to replay.
            entries.writers.entry(w.to_string()).or_default();
            entries.spares.push((w.to_string(), name.clone()));
        } else if let Some((w, seq)) = rest.strip_suffix(".wal").and_then(|r| r.rsplit_once('.'))
            && let Ok(seq) = seq.parse::<u64>()
        {
            entries
                .writers
                .entry(w.to_string())
                .or_default()
                .push((seq, name.clone()));
        }
    }
    Ok(entries)
}

/// The other writers that are running, and those that stopped (their locks now held here).
fn live_and_stopped(
    control: &Path,
    me: &str,
    writers: BTreeMap<String, Vec<(u64, String)>>,
) -> (HashSet<String>, Vec<Stopped>) {
    let mut live: HashSet<String> = HashSet::new();
    let mut stopped: Vec<Stopped> = Vec::new();
    for (writer, mut segments) in writers {
        if writer == me {
            continue;
        }
        // A writer is running if its lock file exists and someone holds it. A stopped writer's
        // lock is kept, held, so nobody else decides the same meanwhile.
        let path = control.join(writer_lock_name(&writer));
        let lock = match OpenOptions::new().read(true).write(true).open(&path) {
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Ok(file) if file.try_lock().is_ok() => Some(file),
            // Held, or cannot tell: treat it as running, and touch nothing of it.
            _ => {
                live.insert(writer);
                continue;
            }
        };
        segments.sort();
        stopped.push(Stopped {
            writer,
            segments,
            _lock: lock,
        });
    }
    (live, stopped)
}

/// Remove the temporary entries of writers that are not running (neither `me` nor `live`),
/// in the store's root, its schemas and its control directory (whose names are
/// `control_tmps`).
fn remove_unfinished_writes(
    root: &Path,
    control: &Path,
    me: &str,
    live: &HashSet<String>,
    control_tmps: Vec<String>,
    recovery: &mut Recovery,
) -> Result<()> {
    let schemas = root.join(SCHEMAS_DIR);
    let mut stray = Vec::new();
    for (dir, names) in [
        (root, dir_names(root, root)?),
        (schemas.as_path(), dir_names(root, &schemas)?),
        (control, control_tmps),
    ] {
        for name in names {
            let owned = tmp_owner(&name).is_some_and(|o| o == me || live.contains(o));
            if name.starts_with(TMP_PREFIX) && !owned {
                stray.push(dir.join(&name));
            }
        }
    }
    for path in stray {
        let gone = match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&path),
            Ok(_) => fs::remove_file(&path),
            Err(e) => Err(e),
        };
        match gone {
            Ok(()) => recovery.removed.push(path),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io_at(root, "removing the unfinished write", &path)(e)),
        }
    }
    Ok(())
}

/// Queue for the index every complete run directory it does not name, oldest id first; a
/// directory whose envelope does not name it is reported unreadable and left alone.
fn index_unnamed_runs(
    root: &Path,
    state: &mut IndexState,
    to_index: &mut Vec<Vec<u8>>,
    recovery: &mut Recovery,
) -> Result<()> {
    let mut names: Vec<String> = dir_names(root, root)?
        .into_iter()
        .filter(|n| is_uuid7(n) && !state.ids.contains(n))
        .collect();
    names.sort();
    for name in names {
        let path = root.join(&name).join(ENVELOPE_FILE);
        let Some(bytes) = read_if_any(&path).map_err(io_at(root, "reading", &path))? else {
            continue;
        };
        match crate::json::from_slice_lossy(&bytes) {
            Ok(envelope)
                if envelope.get("invocation_id").and_then(Value::as_str) == Some(&name) =>
            {
                to_index.push(python::dumps(&envelope, COMPACT).into_bytes());
                state.ids.insert(&name);
                recovery.indexed.push(name);
            }
            _ => recovery.unreadable.push(name),
        }
    }
    Ok(())
}

/// Mend an index with no bad or duplicate lines in place: cut off its torn last line or end
/// its whole one, append `to_index`, and sync it. Whether the file changed.
fn append_to_index(
    root: &Path,
    index_path: &Path,
    state: &IndexState,
    to_index: &[Vec<u8>],
) -> Result<bool> {
    if state.len == 0 && to_index.is_empty() {
        return Ok(false);
    }
    let mut appended: Vec<u8> = Vec::new();
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(index_path)
        .map_err(io_at(root, "opening", index_path))?;
    match state.tail {
        Tail::Clean => {}
        Tail::Whole(_) => appended.push(b'\n'),
        Tail::Torn(start) => file.set_len(start).map_err(io_at(
            root,
            "cutting the torn last line off",
            index_path,
        ))?,
    }
    for line in to_index {
        appended.extend_from_slice(line);
        appended.push(b'\n');
    }
    if !appended.is_empty() {
        file.seek(SeekFrom::End(0))
            .and_then(|_| file.write_all(&appended))
            .map_err(io_at(root, "appending to", index_path))?;
    }
    let changed = matches!(state.tail, Tail::Torn(_)) || !appended.is_empty();
    if changed {
        file.sync_all()
            .map_err(io_at(root, "syncing", index_path))?;
    }
    Ok(changed)
}

/// Remove the journals, spares and lock files of the `stopped` writers, whose runs are now
/// restored and indexed, and sync the control directory if any went.
fn forget_stopped(
    root: &Path,
    control: &Path,
    stopped: Vec<Stopped>,
    spares: &[(String, String)],
) -> Result<()> {
    let forgot = !stopped.is_empty();
    for gone in stopped {
        let spares = spares.iter().filter(|(w, _)| *w == gone.writer);
        for name in gone
            .segments
            .iter()
            .map(|(_, n)| n)
            .chain(spares.map(|(_, n)| n))
        {
            remove_if_present(&control.join(name))?;
        }
        remove_if_present(&control.join(writer_lock_name(&gone.writer)))?;
    }
    if forgot {
        sync_dir(root, control)?;
    }
    Ok(())
}

fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => {
            Err(HarnessError::io(format!("removing {}", path.display()), e))
        }
        _ => Ok(()),
    }
}

/// Make the run directory and schemas of a journal record what the record says. A directory
/// already holding another complete run with that id (a writer that lost a race for the id)
/// is left alone.
fn replay(
    root: &Path,
    me: &str,
    record: &Record,
    to_sync: &mut Vec<PathBuf>,
    recovery: &mut Recovery,
) -> Result<()> {
    if !is_uuid7(&record.id) {
        return Err(StoreError::Unreadable {
            file: "a journal record".into(),
            reason: format!("names the run {:?}, which is not a UUIDv7", record.id),
        }
        .into());
    }
    let target = root.join(&record.id);
    let envelope = record
        .files
        .iter()
        .find(|(n, _)| n == ENVELOPE_FILE)
        .map(|(_, c)| c.as_slice())
        .unwrap_or_default();
    let existing =
        read_if_any(&target.join(ENVELOPE_FILE)).map_err(io_at(root, "reading", &target))?;
    let mut changed = false;
    match existing {
        Some(bytes) if bytes == envelope => {
            // Ours: put back any file a power loss cut short.
            for (name, content) in &record.files {
                let path = target.join(name);
                if fs::read(&path).ok().as_deref() != Some(content.as_slice()) {
                    replace_file(root, &path, content)?;
                    to_sync.push(path);
                    changed = true;
                }
            }
        }
        Some(bytes)
            if crate::json::from_slice_lossy(&bytes)
                .ok()
                .and_then(|v| v.get("invocation_id")?.as_str().map(str::to_string))
                .as_deref()
                == Some(&record.id) =>
        {
            // Another run holds this id; this record lost the race for it.
            return Ok(());
        }
        _ => {
            // Missing, or cut short before its files reached the disk: write it whole.
            let fresh = root.join(tmp_name(me, &record.id));
            fs::create_dir(&fresh).map_err(io_at(root, "creating", &fresh))?;
            for (name, content) in &record.files {
                write_new(root, &fresh.join(name), content)?;
            }
            let old = target.exists().then(|| root.join(tmp_name(me, &record.id)));
            if let Some(old) = &old {
                fs::rename(&target, old).map_err(|e| {
                    HarnessError::io(format!("moving {} aside", shown(root, &target)), e)
                })?;
            }
            fs::rename(&fresh, &target)
                .map_err(|e| HarnessError::io(format!("moving run {} into place", record.id), e))?;
            if let Some(old) = old {
                let _ = fs::remove_dir_all(&old);
            }
            for (name, _) in &record.files {
                to_sync.push(target.join(name));
            }
            changed = true;
        }
    }
    if changed {
        to_sync.push(target);
        recovery.replayed.push(record.id.clone());
    }
    let schemas = root.join(SCHEMAS_DIR);
    for (digest, content) in &record.schemas {
        if !crate::contract::formats::is_sha256_hex(digest) {
            continue;
        }
        let path = schemas.join(format!("{digest}.json"));
        if fs::read(&path).ok().as_deref() != Some(content.as_slice()) {
            fs::create_dir_all(&schemas).map_err(io_at(root, "creating", &schemas))?;
            replace_file(root, &path, content)?;
            to_sync.push(path);
        }
    }
    Ok(())
}

/// Write `content` to `path` through a temporary file renamed over it, so no reader sees it
/// half written.
fn replace_file(root: &Path, path: &Path, content: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!("{TMP_PREFIX}{:016x}", random_u64()));
    write_via(root, &tmp, path, content)
}

/// Write the index again without its bad and duplicate lines, ending it whole, with
/// `to_index` appended, and rename it over the old one.
fn rewrite_index(
    root: &Path,
    index_path: &Path,
    state: &IndexState,
    to_index: &[Vec<u8>],
    recovery: &mut Recovery,
) -> Result<()> {
    let control = root.join(CONTROL_DIR);
    let new_path = control.join(format!("{TMP_PREFIX}index-{:016x}", random_u64()));
    let dropped_path = control.join(DROPPED_LINES);
    let (reading, writing) = (
        io_at(root, "reading", index_path),
        io_at(root, "writing", &new_path),
    );
    let mut out = std::io::BufWriter::new(
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&new_path)
            .map_err(io_at(root, "creating", &new_path))?,
    );
    let mut put = |line: &[u8]| {
        out.write_all(line)
            .and_then(|_| out.write_all(b"\n"))
            .map_err(writing)
    };
    let mut dropped = OpenOptions::new()
        .append(true)
        .create(true)
        .open(&dropped_path)
        .map_err(io_at(root, "opening", &dropped_path))?;
    let file = File::open(index_path).map_err(io_at(root, "opening", index_path))?;
    let mut lines = Forward::new(file, 0, state.len).map_err(reading)?;
    let (mut number, mut bad, mut dup) = (
        0,
        state.bad.iter().peekable(),
        state.duplicates.iter().peekable(),
    );
    let stamp = crate::time::now_rfc3339();
    while let Some(line) = lines.next_line().map_err(reading)? {
        number += 1;
        if bad.peek().is_some_and(|n| **n == number) {
            bad.next();
            let mut kept =
                format!("# line {number} of {INDEX_NAME}, removed {stamp}\n").into_bytes();
            kept.extend_from_slice(&line.bytes);
            kept.push(b'\n');
            dropped
                .write_all(&kept)
                .map_err(io_at(root, "writing", &dropped_path))?;
            recovery.dropped_lines.push(number);
            continue;
        }
        if dup.peek().is_some_and(|n| **n == number) {
            dup.next();
            continue;
        }
        put(&line.bytes)?;
    }
    if let Tail::Whole(start) = state.tail {
        let file = File::open(index_path).map_err(io_at(root, "opening", index_path))?;
        let mut rest = read_from(file, start).map_err(reading)?;
        rest.truncate((state.len - start) as usize);
        put(&rest)?;
    }
    for line in to_index {
        put(line)?;
    }
    let file = out.into_inner().map_err(|e| writing(e.into_error()))?;
    file.sync_all().map_err(io_at(root, "syncing", &new_path))?;
    dropped
        .sync_all()
        .map_err(io_at(root, "syncing", &dropped_path))?;
    fs::rename(&new_path, index_path).map_err(io_at(root, "replacing", index_path))?;
    sync_dir(root, &control)?;
    Ok(())
}

/// The rest of `file` from `start`.
fn read_from(mut file: File, start: u64) -> std::io::Result<Vec<u8>> {
    let mut rest = Vec::new();
    file.seek(SeekFrom::Start(start))?;
    file.read_to_end(&mut rest)?;
    Ok(rest)
}
