//! [`RunStore`]: the run store opened for writing, with group commit.
//!
//! Every run passes through three steps:
//!
//! 1. On the caller's thread, it is validated, encoded as one journal record, and written,
//!    unsynced, to a temporary directory `<runs>/.tmp-<writer>-<random>-<id>/`.
//! 2. The run joins the writer's queue. A caller that finds no commit in progress leads one: it
//!    takes every run waiting at that moment (a group), appends their records to the writer's
//!    journal segment with one write, and syncs it once: the group is durable, in one fsync
//!    round whatever its size. A lone caller commits its own run at once and writes its
//!    directory while the writer's sync thread syncs the journal, so the two wait for each
//!    other only as long as the slower takes (where a sync costs less than the hand-over, as on
//!    tmpfs, it syncs on its own thread instead); a caller that finds a commit in progress writes
//!    its directory meanwhile, and the runs that arrive while one group syncs make up the next.
//!    A directory that cannot be written after its record was synced is undone as below.
//! 3. Under the store's lock (a `flock` on `.ddwire/store.lock`, which every writer process
//!    takes), each run's temporary directory is renamed to `<runs>/<id>` (`rename(2)` refuses
//!    a directory that holds a run, so an id is never taken twice), and the group's index lines
//!    are appended with one write. Then each caller is answered.
//!
//! A run that could not be published (its id was taken, the disk filled up at the index) is
//! undone, all of it: its directory goes back, any index bytes written are truncated away, and
//! its journal record is marked void in place (which needs no new space) and synced, so neither
//! this writer nor a recovery ever publishes it. The caller is told it was not stored, and may
//! send it again.
//!
//! A checkpoint makes the published files durable in their own right (synced on the store's
//! fsync threads, off every caller's path) some time after a segment is full (35 s, by when the
//! kernel has written them back itself, so the syncs cost next to nothing; sooner if more than
//! eight full segments wait), and when the store is dropped. Then the segment is kept as a
//! spare and reused for a later segment, or removed. A writer that stops without a checkpoint
//! leaves its segments for the next writer's recovery to replay.
//!
//! A record is written over zeros already on the disk, not appended (unless it outgrows
//! them): a group's fsync then changes no file-system metadata, which on ext4 spares it a
//! journal commit of everything the store changed since the last one (milliseconds for a
//! single stream, against a fraction of one; `benches/harness.sh`). A spare is a full-size
//! segment of zeros, written and synced on the checkpoint thread once the segment in use is a
//! quarter full; a segment made on the commit path, at open or when no spare is ready, is
//! 1 MiB of zeros and full at that size.

use super::StoreError;
use super::files::{io_at, shown, sync_all, sync_dir, write_new, write_via};
use super::journal;
use super::reader::RunReader;
use super::recovery::{self, Recovery, segment_name, tmp_name, writer_lock_name};
use super::{
    AGENT_REPLY_FILE, COMPACT, CONTROL_DIR, ENVELOPE_FILE, GROUNDING_FILE, INDEX_NAME, NewRun,
    REQUEST_FILE, SCHEMAS_DIR, SPANS_FILE, check_digest, check_extra_name,
};
use crate::contract::schema_digest;
use crate::harness::{HarnessError, Result};
use crate::ids::{is_uuid7, random_u64};
use crate::json::python::{self, Style};
use crate::text::Unpoison;
use crossbeam_channel::{RecvTimeoutError, Sender};
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::ops::Deref;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A segment is handed to the checkpoint once it holds this much, unless
/// `DD_JOURNAL_SEGMENT_BYTES` says otherwise (at least [`MIN_SEGMENT_BYTES`]).
pub(crate) const SEGMENT_BYTES: u64 = 32 << 20;
/// The smallest segment size `DD_JOURNAL_SEGMENT_BYTES` may set.
pub(crate) const MIN_SEGMENT_BYTES: u64 = 64 << 10;
/// How much of a segment made on the commit path (at open, or at a rollover with no spare
/// ready) is written as zeros before its first record: enough for dozens of runs, small enough
/// to write and sync in a few milliseconds. Such a segment is full at this size, and a
/// full-size spare, written off the commit path, takes over from it.
pub(crate) const MADE_SEGMENT_BYTES: u64 = 1 << 20;

/// The segment size: [`SEGMENT_BYTES`], or `DD_JOURNAL_SEGMENT_BYTES` (a smaller size makes
/// checkpoints more frequent and recovery shorter; tests use it to rotate often).
fn segment_bytes() -> u64 {
    std::env::var("DD_JOURNAL_SEGMENT_BYTES")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(SEGMENT_BYTES, |n| n.max(MIN_SEGMENT_BYTES))
}
/// The most runs one group commits.
const MAX_GROUP: usize = 256;
/// The largest group buffer kept between commits.
const MAX_KEPT_BUFFER: usize = 4 << 20;
/// Runs per batch of fsyncs in a checkpoint.
const CHECKPOINT_BATCH: usize = 64;
/// The store's lock file, in `.ddwire/`.
pub(crate) const STORE_LOCK: &str = "store.lock";

/// The run store at one root directory, opened for writing (or, by
/// `RunStore::open_read_only`, for reading only). It is also a [`RunReader`]: every read
/// method works on it. Share it between threads (`&RunStore`); open a root once per process.
#[derive(Debug)]
pub struct RunStore {
    reader: RunReader,
    writer: Option<Writer>,
}

impl Deref for RunStore {
    type Target = RunReader;

    fn deref(&self) -> &RunReader {
        &self.reader
    }
}

struct Writer {
    /// `<pid>-<16 hex digits>`: names this writer's lock, journal and temporary entries.
    id: String,
    commits: Commits,
    lock_path: PathBuf,
    /// Held (locked) for as long as this writer runs.
    _lock: File,
    /// The class schemas already checked against their digests, written out.
    schemas: SchemaMemo,
}

/// Class schemas a run was checked against, by digest: the schema as given and its
/// `json.dumps(schema, indent=2)`, once it was found finite and matching its digest. A later
/// run giving an equal schema under the same digest is prepared from here: without
/// `preserve_order`, `serde_json`'s maps are sorted, so equal values write identical text and
/// have the same digest, and every check it passed passes again. Hashing and writing the
/// schema again on every run cost about an eighth of the store stage's instructions. The text
/// is shared with each run's journal record, not copied.
#[derive(Default)]
struct SchemaMemo(Mutex<HashMap<String, Kept>>);

/// A class schema the memo holds.
struct Kept {
    schema: Value,
    text: Arc<str>,
}

/// Most schemas the memo holds; past it, it starts over (a registry rarely has this many).
const MAX_MEMO_SCHEMAS: usize = 256;

impl SchemaMemo {
    /// The text kept for `schema` under `digest`, if an equal schema was kept under it.
    fn text(&self, digest: &str, schema: &Value) -> Option<Arc<str>> {
        let memo = self.0.lock().unpoisoned();
        match memo.get(digest) {
            Some(kept) if kept.schema == *schema => Some(Arc::clone(&kept.text)),
            _ => None,
        }
    }

    fn keep(&self, digest: &str, schema: &Value, text: String) -> Arc<str> {
        let text: Arc<str> = text.into();
        let mut memo = self.0.lock().unpoisoned();
        if memo.len() >= MAX_MEMO_SCHEMAS {
            memo.clear();
        }
        let kept = Kept {
            schema: schema.clone(),
            text: Arc::clone(&text),
        };
        memo.insert(digest.to_string(), kept);
        text
    }
}

/// One run on its way to the journal.
struct Job {
    ticket: u64,
    id: String,
    tmp: PathBuf,
    record: Vec<u8>,
    index_line: String,
}

/// Group commit led by the callers: runs wait in a queue, and whichever caller finds no commit
/// in progress leads one for everything waiting (its own run among them), then hands the
/// results out. A lone caller so commits its own run itself (handing only the fsync to the
/// writer's sync thread, see [`Syncer`]); under load, the runs that arrive while one group
/// syncs make up the next.
struct Commits {
    queue: Mutex<Queue>,
    turn: Condvar,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Job>,
    /// Whether a caller is leading a commit (and holds the committer).
    leading: bool,
    /// Set by [`RunStore::close`]: every later commit is refused.
    closed: bool,
    /// The journal and its state, held by the leader while it commits; `None` if a leader
    /// panicked with it.
    committer: Option<Committer>,
    /// Results of finished runs, by ticket, until their callers collect them.
    done: HashMap<u64, Result<()>>,
    next_ticket: u64,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The store's lock, held while it lives.
struct StoreLock(File);

impl StoreLock {
    fn acquire(control: &Path) -> Result<StoreLock> {
        let (root, path) = (
            control.parent().unwrap_or(control),
            control.join(STORE_LOCK),
        );
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_at(root, "opening the store lock", &path))?;
        file.lock().map_err(io_at(root, "locking", &path))?;
        Ok(StoreLock(file))
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

impl RunStore {
    /// Open (creating it if need be) the store at `root` for writing, and recover from
    /// whatever stopped an earlier writer (see `super::recovery`).
    pub fn open(root: impl Into<PathBuf>) -> Result<RunStore> {
        Ok(RunStore::open_reporting(root)?.0)
    }

    /// [`RunStore::open`], also saying what recovery repaired, for the log.
    pub(crate) fn open_reporting(root: impl Into<PathBuf>) -> Result<(RunStore, Recovery)> {
        RunStore::open_with(root.into(), segment_bytes())
    }

    /// Open with journal segments of `segment_bytes`.
    pub(crate) fn open_with(root: PathBuf, segment_bytes: u64) -> Result<(RunStore, Recovery)> {
        // First, so that failing to start it leaves nothing on disk.
        let syncer = Syncer::start()?;
        let control = root.join(CONTROL_DIR);
        fs::create_dir_all(&control).map_err(|e| {
            HarnessError::io(format!("creating the run store {}", root.display()), e)
        })?;
        let reader = RunReader::at(root.clone());
        let held = StoreLock::acquire(&control)?;
        let id = format!("{}-{:016x}", std::process::id(), random_u64());
        let lock_path = control.join(writer_lock_name(&id));
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&lock_path)
            .map_err(io_at(&root, "creating", &lock_path))?;
        lock.try_lock().map_err(|e| {
            StoreError::failed(format!("locking {}: {e}", shown(&root, &lock_path)))
        })?;
        let recovered = recovery::recover(&root, &id);
        let ready = recovered.and_then(|recovery| {
            // An empty index marks a store with no runs yet, for readers.
            OpenOptions::new()
                .append(true)
                .create(true)
                .open(root.join(INDEX_NAME))
                .map_err(|e| {
                    HarnessError::io(format!("creating the run index in {}", root.display()), e)
                })?;
            let segment = Segment::create(&control, &id, 0, MADE_SEGMENT_BYTES.min(segment_bytes))?;
            Ok((recovery, segment))
        });
        drop(held);
        let (recovery, segment) = match ready {
            Ok(r) => r,
            Err(e) => {
                let _ = fs::remove_file(&lock_path);
                return Err(e);
            }
        };
        let (checkpoints, pending) = crossbeam_channel::unbounded::<Chore>();
        let spare: Spare = Arc::default();
        let checkpointer = {
            let (root, spare, writer) = (root.clone(), Arc::clone(&spare), id.clone());
            std::thread::Builder::new()
                .name("ddwire-checkpoint".into())
                .spawn(move || chores(&root, &writer, &spare, segment_bytes, pending))
                .map_err(|e| HarnessError::io("starting the run store's checkpoint thread", e))?
        };
        let committer = Committer {
            root: root.clone(),
            control,
            writer: id.clone(),
            segment,
            segment_bytes,
            spare,
            checkpoints: Some(checkpoints),
            spare_asked: false,
            buffer: Vec::new(),
            checkpointer: Some(checkpointer),
            syncer,
            last_sync: Duration::ZERO,
            broken: None,
        };
        let store = RunStore {
            reader,
            writer: Some(Writer {
                id,
                commits: Commits {
                    queue: Mutex::new(Queue {
                        committer: Some(committer),
                        ..Queue::default()
                    }),
                    turn: Condvar::new(),
                },
                lock_path,
                _lock: lock,
                schemas: SchemaMemo::default(),
            }),
        };
        Ok((store, recovery))
    }

    /// Open the store at `root` for reading only: every read method works, `RunStore::append`
    /// refuses, and nothing on disk is created or changed (see [`RunReader::open`]).
    pub(crate) fn open_read_only(root: impl Into<PathBuf>) -> Result<RunStore> {
        Ok(RunStore {
            reader: RunReader::open(root)?,
            writer: None,
        })
    }

    /// The store as a reader.
    pub(crate) fn reader(&self) -> &RunReader {
        &self.reader
    }

    /// This writer's id (`<pid>-<16 hex digits>`), which names its lock, journal and
    /// temporary entries; `None` when read-only.
    #[cfg(test)]
    pub(crate) fn writer_id(&self) -> Option<&str> {
        self.writer.as_ref().map(|w| w.id.as_str())
    }

    /// Whether runs can be stored (the store was not opened read-only).
    pub(crate) fn is_writable(&self) -> bool {
        self.writer.is_some()
    }

    /// Whether a run could be stored now: the store is open for writing and a file can be
    /// created (and removed) in its control folder. A full or remounted-read-only disk fails
    /// here, which is what a readiness probe needs to know.
    pub(crate) fn probe_writable(&self) -> std::io::Result<()> {
        let Some(writer) = &self.writer else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "the store is open read-only",
            ));
        };
        let probe = self
            .root()
            .join(CONTROL_DIR)
            .join(format!("probe-{}", writer.id));
        let written = std::fs::write(&probe, b"ok");
        let removed = std::fs::remove_file(&probe);
        written.and(removed)
    }

    fn writer(&self) -> Result<&Writer> {
        self.writer
            .as_ref()
            .ok_or(HarnessError::Store(StoreError::ReadOnly))
    }

    /// Close the store for writing now, as dropping it would, even while other handles still
    /// share it (a drained process exits with idle connection threads holding the harness):
    /// a commit in progress finishes, the journal is checkpointed, and this writer's lock and
    /// journal files are removed, so the next start has nothing to recover. Appends after
    /// this fail. A read-only store has nothing to close.
    pub(crate) fn close(&self) {
        if let Some(writer) = &self.writer {
            writer.close();
        }
    }

    /// Store one run, once. Returns its directory.
    ///
    /// Refuses, with nothing written, an envelope whose `invocation_id` is not a lowercase
    /// UUIDv7, a digest that is not 64 lowercase hex digits or does not match its schema, a
    /// span line containing a line break, and a document holding a number no double can hold
    /// (it could not be read back). An id already stored is [`HarnessError::DuplicateInvocation`],
    /// and the stored run is left exactly as it was. When this returns `Ok`, the run is
    /// durable, in its directory and in the index; when it returns `Err`, nothing of it is
    /// stored and the same id may be sent again.
    #[cfg(test)]
    pub(crate) fn append(&self, run: &NewRun) -> Result<PathBuf> {
        self.append_with_files(run, &[])
    }

    /// [`RunStore::append`], with more text files in the run directory (such as the
    /// reference's `sources.txt`), written and published with the others. A name is plain
    /// ASCII letters, digits, `.`, `_` and `-`, does not start with `.`, and is not one of the
    /// store's own files.
    pub(crate) fn append_with_files(
        &self,
        run: &NewRun,
        files: &[(&str, &str)],
    ) -> Result<PathBuf> {
        let writer = self.writer()?;
        let prepared = prepare(run, files, &writer.schemas)?;
        let id = prepared.id.as_str();
        if self.has(id) {
            return Err(HarnessError::DuplicateInvocation {
                invocation_id: id.to_string(),
            });
        }
        let root = self.root();
        self.keep_schemas(&writer.id, &prepared.schemas)?;
        let tmp = root.join(tmp_name(&writer.id, id));
        let files: Vec<(&str, &[u8])> = prepared
            .files
            .iter()
            .map(|(n, c)| (*n, c.as_bytes()))
            .collect();
        let schemas: Vec<(&str, &[u8])> = prepared
            .schemas
            .iter()
            .map(|(d, c)| (d.as_str(), c.as_bytes()))
            .collect();
        let record = journal::encode(id, &files, &schemas, prepared.index_line.as_bytes());
        let job = Job {
            ticket: 0,
            id: id.to_string(),
            tmp: tmp.clone(),
            record,
            index_line: prepared.index_line,
        };
        let outcome = writer
            .commits
            .commit(job, || write_run_dir(root, &tmp, &prepared.files));
        match outcome {
            Ok(()) => Ok(root.join(id)),
            Err(e) => {
                let _ = fs::remove_dir_all(&tmp);
                Err(e)
            }
        }
    }

    /// Write each class schema not yet kept under its digest (through a temporary file renamed
    /// into place; content-addressed, so a writer that lost a race rewrote equal bytes). Not
    /// synced: the run's journal record holds them too.
    fn keep_schemas(&self, writer: &str, schemas: &[(String, Arc<str>)]) -> Result<()> {
        let root = self.root();
        let dir = root.join(SCHEMAS_DIR);
        let mut made = false;
        for (digest, text) in schemas {
            let path = dir.join(format!("{digest}.json"));
            if path.exists() {
                continue;
            }
            if !made {
                fs::create_dir_all(&dir).map_err(io_at(root, "creating", &dir))?;
                made = true;
            }
            write_via(
                root,
                &dir.join(tmp_name(writer, digest)),
                &path,
                text.as_bytes(),
            )?;
        }
        Ok(())
    }
}

impl Commits {
    /// Commit `job` with whatever else is waiting; its result. `write_dir` writes the job's
    /// temporary directory. A caller that finds the journal idle and nobody waiting leads at
    /// once and writes its directory while the journal syncs, so a lone caller's file creation
    /// and fsync round overlap instead of adding up; any other caller writes its directory
    /// first, while the commit in progress syncs, and then joins the queue.
    fn commit(&self, mut job: Job, write_dir: impl FnOnce() -> Result<()>) -> Result<()> {
        let mut queue = self.queue.lock().unpoisoned();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        job.ticket = ticket;
        let idle = !queue.leading && !queue.closed && queue.waiting.is_empty();
        if idle && let Some(committer) = queue.committer.take() {
            let (_queue, mut results) = self.lead(queue, committer, &[job], Some(write_dir));
            self.turn.notify_all();
            return results.pop().unwrap_or_else(|| {
                Err(StoreError::failed("the commit gave no result; nothing was stored").into())
            });
        }
        // A closed store or a lost journal refuses below, with no directory written for it.
        if !queue.closed && (queue.leading || queue.committer.is_some()) {
            drop(queue);
            write_dir()?;
            queue = self.queue.lock().unpoisoned();
        }
        queue.waiting.push(job);
        loop {
            if let Some(result) = queue.done.remove(&ticket) {
                return result;
            }
            if queue.closed {
                queue.waiting.retain(|j| j.ticket != ticket);
                return Err(StoreError::failed(
                    "the run store is closed: the process is shutting down; nothing was stored",
                )
                .into());
            }
            if queue.leading {
                queue = self.turn.wait(queue).unpoisoned();
                continue;
            }
            let Some(committer) = queue.committer.take() else {
                // A leader panicked with the journal: nothing can be committed any more.
                queue.waiting.retain(|j| j.ticket != ticket);
                return Err(StoreError::failed(
                    "the run store's journal was lost to a failed commit; restart the harness \
                     to recover the store; nothing was stored",
                )
                .into());
            };
            let take = queue.waiting.len().min(MAX_GROUP);
            let group: Vec<Job> = queue.waiting.drain(..take).collect();
            let results;
            (queue, results) = self.lead(queue, committer, &group, None::<fn() -> Result<()>>);
            for (job, result) in group.into_iter().zip(results) {
                queue.done.insert(job.ticket, result);
            }
            self.turn.notify_all();
        }
    }

    /// Commit `group` with `committer`, taken from `queue`: the queue is marked as led and
    /// unlocked meanwhile, then locked again with the committer back. Returns it and one result
    /// per job; the caller hands the results out and wakes the others.
    fn lead<'a>(
        &'a self,
        mut queue: MutexGuard<'a, Queue>,
        mut committer: Committer,
        group: &[Job],
        own_dir: Option<impl FnOnce() -> Result<()>>,
    ) -> (MutexGuard<'a, Queue>, Vec<Result<()>>) {
        queue.leading = true;
        drop(queue);
        // If the commit panics, the guard wakes the others (who then find no committer).
        let guard = Leading(self);
        let results = committer.commit(group, own_dir);
        std::mem::forget(guard);
        let mut queue = self.queue.lock().unpoisoned();
        queue.committer = Some(committer);
        queue.leading = false;
        (queue, results)
    }
}

/// Set while a caller leads a commit; dropped only if it panics.
struct Leading<'a>(&'a Commits);

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        let mut queue = self.0.queue.lock().unpoisoned();
        queue.leading = false;
        self.0.turn.notify_all();
    }
}

impl Writer {
    /// What dropping the writer does, while others may still hold the store: wait for a
    /// commit in progress, checkpoint the journal, and remove this writer's lock file.
    fn close(&self) {
        let mut queue = self.commits.queue.lock().unpoisoned();
        while queue.leading {
            queue = self.commits.turn.wait(queue).unpoisoned();
        }
        queue.closed = true;
        let committer = queue.committer.take();
        self.commits.turn.notify_all();
        drop(queue);
        if let Some(committer) = committer {
            committer.finish();
        }
        let _ = fs::remove_file(&self.lock_path);
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Every append has returned (they borrow the store): checkpoint the last segment, stop
        // the checkpoint thread, and only then let this writer's lock go.
        self.close();
    }
}

/// A run, validated and serialised.
struct Prepared<'a> {
    id: String,
    /// `(file name, content)`, the envelope first.
    files: Vec<(&'a str, String)>,
    /// `(digest, json.dumps(schema, indent=2))`.
    schemas: Vec<(String, Arc<str>)>,
    index_line: String,
}

fn prepare<'a>(run: &NewRun, extra: &[(&'a str, &str)], memo: &SchemaMemo) -> Result<Prepared<'a>> {
    let id = run
        .envelope
        .get("invocation_id")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            StoreError::refused("an envelope without a string invocation_id cannot be stored")
        })?;
    if !is_uuid7(id) {
        return Err(StoreError::refused(format!(
            "invocation_id {id:?} is not a lowercase UUIDv7, so it names no run directory; \
             nothing was stored"
        ))
        .into());
    }
    for (digest, _) in run.schemas {
        check_digest(digest)?;
    }
    for (name, _) in extra {
        check_extra_name(name)?;
    }
    let finite = |what: &str, doc: &Value| -> Result<()> {
        match crate::json::non_finite(doc) {
            Some(found) => Err(StoreError::refused(format!(
                "the {what} of run {id} holds {found}; written out it could not be read back, \
                 so nothing was stored"
            ))
            .into()),
            None => Ok(()),
        }
    };
    finite("envelope", run.envelope)?;
    finite("request", run.request)?;
    if let Some(reply) = run.agent_reply {
        finite("agent reply", reply)?;
    }
    let mut schemas = Vec::with_capacity(run.schemas.len());
    for (digest, schema) in run.schemas {
        if let Some(text) = memo.text(digest, schema) {
            schemas.push((digest.to_string(), text));
            continue;
        }
        finite("class schema", schema)?;
        let actual = schema_digest(schema);
        if actual != *digest {
            return Err(StoreError::refused(format!(
                "the class schema given as {digest} has digest {actual}; a schema is kept \
                 only under its own digest, and nothing was stored"
            ))
            .into());
        }
        let text = memo.keep(digest, schema, python::dumps(schema, Style::INDENT2));
        schemas.push((digest.to_string(), text));
    }
    let mut spans = String::with_capacity(run.spans.iter().map(|l| l.len() + 1).sum());
    for line in run.spans {
        if line.contains(['\n', '\r']) {
            return Err(StoreError::refused(format!(
                "a span line of run {id} contains a line break, which would split it in two; \
                 nothing was stored"
            ))
            .into());
        }
        spans.push_str(line);
        spans.push('\n');
    }
    let mut files = vec![
        (ENVELOPE_FILE, python::dumps(run.envelope, Style::INDENT2)),
        (REQUEST_FILE, python::dumps(run.request, Style::INDENT2)),
        (SPANS_FILE, spans),
        (GROUNDING_FILE, format!("{}\n", run.grounding)),
    ];
    if let Some(reply) = run.agent_reply {
        files.push((AGENT_REPLY_FILE, python::dumps(reply, Style::INDENT2)));
    }
    files.extend(extra.iter().map(|(n, t)| (*n, t.to_string())));
    Ok(Prepared {
        id: id.to_string(),
        index_line: python::dumps(run.envelope, COMPACT),
        files,
        schemas,
    })
}

/// Create `dir` (under `root`) and write each file in it, unsynced.
fn write_run_dir(root: &Path, dir: &Path, files: &[(&str, String)]) -> Result<()> {
    fs::create_dir(dir).map_err(io_at(root, "creating", dir))?;
    for (name, text) in files {
        write_new(root, &dir.join(name), text.as_bytes())?;
    }
    Ok(())
}

/// The journal segment the leading caller appends to.
struct Segment {
    /// Shared with the syncer thread while it syncs.
    file: Arc<File>,
    path: PathBuf,
    seq: u64,
    /// Where the next record goes.
    len: u64,
    /// The length at which it is full and the next segment takes over.
    full_at: u64,
}

impl Segment {
    /// A new segment, its name durable in `.ddwire/`, written as zeros up to `full_at` (at
    /// least its header): a record then overwrites blocks that are already allocated and
    /// written, so syncing it changes no file-system metadata. An append would change the
    /// file's size, which on ext4 makes every group's fsync a journal commit of everything
    /// the store changed since the last one (milliseconds, against a fraction of one).
    fn create(control: &Path, writer: &str, seq: u64, full_at: u64) -> Result<Segment> {
        let path = control.join(segment_name(writer, seq));
        let header = journal::segment_header(seq);
        let made = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut file| {
                file.write_all(&header)?;
                let zeros = full_at.saturating_sub(header.len() as u64);
                if let Err(e) = write_zeros(&mut file, zeros) {
                    if !matches!(e.kind(), ErrorKind::StorageFull | ErrorKind::QuotaExceeded) {
                        return Err(e);
                    }
                    // A disk too full for the zeros still takes a segment that grows as
                    // records come (each group's fsync then syncs its size too): the store
                    // opens, reads and recovers on a full disk, and refuses only the runs
                    // that do not fit.
                    file.set_len(header.len() as u64)?;
                    stderr_line!(
                        "ddwire: run store {}: no room to write the journal {} ahead ({e}); it \
                         grows as runs come",
                        control.parent().unwrap_or(control).display(),
                        segment_name(writer, seq)
                    );
                }
                file.sync_data()?;
                Ok(file)
            });
        let file = match made {
            Ok(f) => f,
            Err(e) => {
                let _ = fs::remove_file(&path);
                let root = control.parent().unwrap_or(control);
                return Err(io_at(root, "creating the journal", &path)(e));
            }
        };
        sync_dir(control.parent().unwrap_or(control), control)?;
        Ok(Segment {
            file: Arc::new(file),
            path,
            seq,
            len: journal::SEGMENT_HEADER as u64,
            full_at: full_at.max(journal::SEGMENT_HEADER as u64),
        })
    }

    /// A checkpointed segment file used again as segment `seq`: its blocks are allocated and
    /// written, so a record written over them is synced without any file-system metadata (on
    /// ext4, no journal commit), which makes the one fsync a group waits for much cheaper. The
    /// caller holds the spare's lock. The header is written before the rename, so a file named
    /// as a segment always starts as one.
    fn reuse(
        spare: &Path,
        control: &Path,
        writer: &str,
        seq: u64,
        full_at: u64,
    ) -> Result<Segment> {
        let path = control.join(segment_name(writer, seq));
        let context = io_at(
            control.parent().unwrap_or(control),
            "reusing the journal",
            spare,
        );
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(spare)
            .map_err(context)?;
        file.write_all_at(&journal::segment_header(seq), 0)
            .and_then(|()| file.sync_data())
            .map_err(context)?;
        fs::rename(spare, &path).map_err(context)?;
        sync_dir(control.parent().unwrap_or(control), control)?;
        Ok(Segment {
            file: Arc::new(file),
            path,
            seq,
            len: journal::SEGMENT_HEADER as u64,
            full_at,
        })
    }
}

/// The writer's thread that syncs the journal while the leading caller writes its own run's
/// directory: on ext4 the directory's five file creations take about as long as the fsync
/// round, and each waited for the other. The hand-over is a mutex and a condition variable,
/// which park at once, where a channel would spin first and burn the CPU other runs need.
struct Syncer {
    shared: Arc<(Mutex<SyncStep>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

/// The shortest sync worth overlapping with a lone caller's directory: a shorter one (on tmpfs,
/// or a disk whose cache acknowledges at once) is done on the caller's thread, since handing it
/// to the sync thread and back costs two wake-ups, about as much as it saves.
const OVERLAP_WORTH: Duration = Duration::from_micros(50);

/// What the syncer thread is asked to do, and its answer.
enum SyncStep {
    Idle,
    Asked(Arc<File>),
    Syncing,
    /// The sync's result and how long it took.
    Done(std::io::Result<()>, Duration),
    Stop,
}

impl Syncer {
    fn start() -> Result<Syncer> {
        let shared = Arc::new((Mutex::new(SyncStep::Idle), Condvar::new()));
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("ddwire-journal-sync".into())
            .spawn(move || {
                let (state, changed) = &*theirs;
                let mut held = state.lock().unpoisoned();
                loop {
                    match std::mem::replace(&mut *held, SyncStep::Syncing) {
                        SyncStep::Asked(file) => {
                            drop(held);
                            let started = Instant::now();
                            let synced = file.sync_data();
                            let took = started.elapsed();
                            held = state.lock().unpoisoned();
                            if matches!(*held, SyncStep::Stop) {
                                return;
                            }
                            *held = SyncStep::Done(synced, took);
                            changed.notify_all();
                        }
                        SyncStep::Stop => return,
                        other => {
                            *held = other;
                            held = changed.wait(held).unpoisoned();
                        }
                    }
                }
            })
            .map_err(|e| HarnessError::io("starting the run store's journal sync thread", e))?;
        Ok(Syncer {
            shared,
            thread: Some(thread),
        })
    }

    /// `file.sync_data()` on the syncer thread while `work` runs on this one: the sync's result
    /// and time, and `work`'s result.
    fn sync_during<T>(
        &self,
        file: &Arc<File>,
        work: impl FnOnce() -> T,
    ) -> (std::io::Result<()>, Duration, T) {
        let (state, changed) = &*self.shared;
        *state.lock().unpoisoned() = SyncStep::Asked(Arc::clone(file));
        changed.notify_all();
        let done = work();
        let mut held = state.lock().unpoisoned();
        loop {
            match std::mem::replace(&mut *held, SyncStep::Idle) {
                SyncStep::Done(synced, took) => return (synced, took, done),
                other => {
                    *held = other;
                    held = changed.wait(held).unpoisoned();
                }
            }
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        let (state, changed) = &*self.shared;
        *state.lock().unpoisoned() = SyncStep::Stop;
        changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A checkpointed segment kept for reuse, shared by the commit and checkpoint threads.
type Spare = Arc<Mutex<Option<PathBuf>>>;

/// The journal and what goes with it, held by whichever caller leads a commit.
struct Committer {
    root: PathBuf,
    control: PathBuf,
    writer: String,
    segment: Segment,
    /// When the segment is full.
    segment_bytes: u64,
    spare: Spare,
    checkpoints: Option<Sender<Chore>>,
    /// Whether a spare has been asked for since the last rotation.
    spare_asked: bool,
    /// The buffer a group's records are gathered in, kept between commits.
    buffer: Vec<u8>,
    checkpointer: Option<JoinHandle<()>>,
    syncer: Syncer,
    /// How long the last sync of the journal took.
    last_sync: Duration,
    /// Set when the journal is in a state no run can be committed to; every append then fails
    /// with this, until a restart recovers.
    broken: Option<String>,
}

impl Committer {
    /// The writer is closing: checkpoint the last segment (or remove it if it holds nothing),
    /// wait for the checkpoints, and remove the spare.
    fn finish(mut self) {
        if self.segment.len > journal::SEGMENT_HEADER as u64 {
            if let Some(tx) = &self.checkpoints {
                let _ = tx.send(Chore::Checkpoint(self.segment.path.clone(), Instant::now()));
            }
        } else {
            let _ = fs::remove_file(&self.segment.path);
        }
        drop(self.checkpoints.take());
        if let Some(handle) = self.checkpointer.take() {
            let _ = handle.join();
        }
        if let Some(spare) = self.spare.lock().unpoisoned().take() {
            let _ = fs::remove_file(spare);
        }
    }

    /// Commit a group: journal, publish, answer. Returns one result per job. With
    /// `own_dir`, the group is the leader's one job, whose directory that writes while the
    /// syncer thread syncs the journal (a panic in it is that run's error); without it, every
    /// job's directory is already written.
    fn commit(
        &mut self,
        group: &[Job],
        own_dir: Option<impl FnOnce() -> Result<()>>,
    ) -> Vec<Result<()>> {
        let every = |e: &dyn Fn() -> HarnessError| group.iter().map(|_| Err(e())).collect();
        if let Some(why) = &self.broken {
            return every(&|| StoreError::failed(why.clone()).into());
        }
        // 1. One write and one fsync for the whole group.
        let before = self.segment.len;
        // One buffer for the life of the writer: a group's records are written with one call,
        // and a buffer allocated per group (up to hundreds of KiB, of varying size) would leave
        // the allocator's arenas fragmented.
        let mut bytes = std::mem::take(&mut self.buffer);
        bytes.clear();
        let mut offsets = Vec::with_capacity(group.len());
        for job in group {
            let start = bytes.len();
            offsets.push(before + start as u64);
            bytes.extend_from_slice(&job.record);
            journal::seal(&mut bytes[start..], self.segment.seq);
        }
        let path = self.segment.path.clone();
        // Every job of the group fails alike when the journal could not be written or synced.
        let journal_failed = |doing: &str, e: &std::io::Error| -> Vec<Result<()>> {
            let shown = shown(&self.root, &path);
            let what = format!("{doing} the journal {shown}; nothing was stored");
            every(&|| HarnessError::io(what.clone(), copy_io(e)))
        };
        let written = self.segment.file.write_all_at(&bytes, before);
        if bytes.capacity() <= MAX_KEPT_BUFFER {
            self.buffer = bytes;
        }
        if let Err(e) = written {
            let _ = self.segment.file.set_len(before);
            return journal_failed("writing", &e);
        }
        let own_dir = own_dir.map(|write_dir| {
            || {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(write_dir)).unwrap_or_else(
                    |_| {
                        Err(StoreError::failed(
                            "writing the run's directory panicked; nothing was stored",
                        )
                        .into())
                    },
                )
            }
        });
        let (synced, took, dir) = match own_dir {
            Some(write_dir) if self.last_sync >= OVERLAP_WORTH => {
                let (synced, took, dir) = self.syncer.sync_during(&self.segment.file, write_dir);
                (synced, took, Some(dir))
            }
            own_dir => {
                let started = Instant::now();
                let synced = self.segment.file.sync_data();
                (
                    synced,
                    started.elapsed(),
                    own_dir.map(|write_dir| write_dir()),
                )
            }
        };
        self.last_sync = took;
        if let Err(e) = synced {
            // Whether the records reached the disk is unknown: take them back, so that no
            // recovery publishes runs their callers were told failed.
            let undone = self
                .segment
                .file
                .set_len(before)
                .and_then(|()| self.segment.file.sync_data());
            if let Err(u) = undone {
                self.broken = Some(format!(
                    "the journal {} could not be synced ({e}) nor cut back ({u}); restart the \
                     harness to recover the run store",
                    shown(&self.root, &path)
                ));
            }
            return journal_failed("syncing", &e);
        }
        self.segment.len = before + group.iter().map(|j| j.record.len() as u64).sum::<u64>();

        // 2. Publish under the store's lock, each run whose directory was written.
        let ready = match dir {
            Some(Err(e)) => vec![Err(e)],
            _ => group.iter().map(|_| Ok(())).collect(),
        };
        let mut results = self.publish(group, ready);

        // 3. Void what was journaled but not published, so no recovery publishes it.
        self.void_unpublished(&mut results, &offsets);
        // 4. A segment a quarter full has a preallocated successor made, off this path; a full
        // one goes to the checkpoint.
        self.rotate();
        results
    }

    /// Mark void, and sync, the journal records (at `offsets`) of the runs whose `results` are
    /// errors. Should that fail, the journal is broken and each such error says that a restart
    /// may still store its run.
    fn void_unpublished(&mut self, results: &mut [Result<()>], offsets: &[u64]) {
        let path = &self.segment.path;
        let failed: Vec<u64> = results
            .iter()
            .zip(offsets)
            .filter(|(r, _)| r.is_err())
            .map(|(_, o)| *o)
            .collect();
        if !failed.is_empty() {
            let voided = failed
                .iter()
                .try_for_each(|o| journal::void(&self.segment.file, *o))
                .and_then(|()| self.segment.file.sync_data());
            if let Err(e) = voided {
                stderr_line!(
                    "ddwire: run store {}: marking unpublished runs void in the journal {} failed: {e}; a recovery may publish them",
                    self.root.display(),
                    path.display()
                );
                self.broken = Some(format!(
                    "the journal {} could not be written ({e}); restart the harness to recover \
                     the run store",
                    shown(&self.root, path)
                ));
                // Its record stays valid: the run is not stored now, but a restart may store it.
                for result in results.iter_mut().filter(|r| r.is_err()) {
                    let why = std::mem::replace(result, Ok(())).unwrap_err();
                    *result = Err(StoreError::failed(format!(
                        "{why}; marking its journal record void then failed ({e}), so the \
                         harness's next start may still store this run"
                    ))
                    .into());
                }
            }
        }
    }

    /// Ask for a spare once the segment is a quarter full, and move to the next segment once it
    /// is full, handing the full one to the checkpoint.
    fn rotate(&mut self) {
        if !self.spare_asked && self.segment.len >= self.segment.full_at / 4 {
            self.spare_asked = true;
            if let Some(tx) = &self.checkpoints {
                let _ = tx.send(Chore::Prepare);
            }
        }
        if self.segment.len >= self.segment.full_at {
            self.spare_asked = false;
            let seq = self.segment.seq + 1;
            let made = MADE_SEGMENT_BYTES.min(self.segment_bytes);
            // The spare's name is reused by whoever keeps the next one: hold the lock until this
            // one is renamed away, so it is this file that becomes the segment.
            let mut kept = self.spare.lock().unpoisoned();
            let next = match kept.take() {
                Some(spare) => {
                    let full_at = self.segment_bytes;
                    Segment::reuse(&spare, &self.control, &self.writer, seq, full_at).or_else(|e| {
                        stderr_line!(
                            "ddwire: run store {}: {e}; a new segment is made instead",
                            self.root.display()
                        );
                        let _ = fs::remove_file(&spare);
                        Segment::create(&self.control, &self.writer, seq, made)
                    })
                }
                None => Segment::create(&self.control, &self.writer, seq, made),
            };
            drop(kept);
            match next {
                Ok(next) => {
                    let full = std::mem::replace(&mut self.segment, next);
                    if let Some(tx) = &self.checkpoints {
                        let _ = tx.send(Chore::Checkpoint(full.path, Instant::now()));
                    }
                }
                Err(e) => stderr_line!(
                    "ddwire: run store {}: starting a new journal segment failed, the current one goes on: {e}",
                    self.root.display()
                ),
            }
        }
    }

    /// Rename each run that is `ready` into place and append the index lines of those that
    /// made it, under the store's lock. A failure at the index undoes the whole group.
    fn publish(&self, group: &[Job], ready: Vec<Result<()>>) -> Vec<Result<()>> {
        if ready.iter().all(Result::is_err) {
            return ready;
        }
        let held = match StoreLock::acquire(&self.control) {
            Ok(held) => held,
            Err(e) => {
                let message = e.to_string();
                return ready
                    .into_iter()
                    .map(|ready| {
                        ready.and_then(|()| {
                            Err(StoreError::failed(format!("{message}; nothing was stored")).into())
                        })
                    })
                    .collect();
            }
        };
        // The index is opened once, to check its last line and to append to it.
        let index = self.root.join(INDEX_NAME);
        let mut opened = open_index(&index);
        // A writer in another process stopped mid-append: recover now, before this group's
        // runs are in place, so its torn line never has this group's lines glued onto it and
        // its runs are indexed (once) at once rather than at the next start.
        if let Ok((file, len)) = &opened
            && index_is_torn(file, *len).unwrap_or(false)
        {
            match recovery::recover(&self.root, &self.writer) {
                Ok(report) => stderr_line!(
                    "ddwire: run store {}: a writer stopped mid-append; recovered: {report}",
                    self.root.display()
                ),
                Err(e) => stderr_line!(
                    "ddwire: run store {}: a writer stopped mid-append, and recovering failed: {e}",
                    self.root.display()
                ),
            }
            // Recovery may have put a new index in place.
            opened = open_index(&index);
        }
        let mut results: Vec<Result<()>> = group
            .iter()
            .zip(ready)
            .map(|(job, ready)| {
                ready.and_then(|()| rename_into_place(&job.tmp, &self.root, &job.id))
            })
            .collect();
        let mut lines = String::new();
        for (job, result) in group.iter().zip(&results) {
            if result.is_ok() {
                lines.push_str(&job.index_line);
                lines.push('\n');
            }
        }
        if !lines.is_empty() {
            let appended =
                opened.and_then(|(mut file, base)| append_index(&mut file, base, lines.as_bytes()));
            if let Err(e) = appended {
                for (job, result) in group.iter().zip(results.iter_mut()) {
                    if result.is_ok() {
                        let _ = fs::rename(self.root.join(&job.id), &job.tmp);
                        *result = Err(HarnessError::io(
                            format!(
                                "appending to the run index {}; run {} was not stored",
                                shown(&self.root, &index),
                                job.id
                            ),
                            copy_io(&e),
                        ));
                    }
                }
            }
        }
        drop(held);
        results
    }
}

/// An I/O error of the same kind and text, for each of several callers.
fn copy_io(e: &std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), e.to_string())
}

/// Move a finished temporary run directory to `<root>/<id>`, refusing an id that is taken.
fn rename_into_place(tmp: &Path, root: &Path, id: &str) -> Result<()> {
    let target = root.join(id);
    let has_run = || target.join(ENVELOPE_FILE).exists();
    let duplicate = || HarnessError::DuplicateInvocation {
        invocation_id: id.to_string(),
    };
    if has_run() {
        return Err(duplicate());
    }
    // rename(2) would replace an empty directory (a run the reference began and never wrote),
    // which is no run; onto anything else it fails, which is the guard across processes.
    match fs::rename(tmp, &target) {
        Ok(()) => Ok(()),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::DirectoryNotEmpty | ErrorKind::AlreadyExists | ErrorKind::NotADirectory
            ) =>
        {
            if has_run() {
                Err(duplicate())
            } else {
                Err(StoreError::failed(format!(
                    "{} already exists and is not a complete run; it was left as it is and \
                     run {id} was not stored",
                    shown(root, &target)
                ))
                .into())
            }
        }
        Err(e) => Err(HarnessError::io(
            format!("moving run {id} into place at {}", shown(root, &target)),
            e,
        )),
    }
}

/// The run index opened to read its last byte and to append (created if missing), and its
/// length.
fn open_index(index: &Path) -> std::io::Result<(File, u64)> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(index)?;
    let len = file.metadata()?.len();
    Ok((file, len))
}

/// Append `lines` to the index `file`, `base` bytes long, with one write. On failure the index
/// is cut back to where it ended, so it never holds part of a line. The caller holds the
/// store's lock.
fn append_index(file: &mut File, base: u64, lines: &[u8]) -> std::io::Result<()> {
    if let Err(e) = file.write_all(lines) {
        let _ = file.set_len(base);
        return Err(e);
    }
    Ok(())
}

/// Whether the index ends in an unfinished line: a writer in another process stopped in the
/// middle of an append (a live writer never leaves one, since it cuts a failed append back).
fn index_is_torn(file: &File, len: u64) -> std::io::Result<bool> {
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] != b'\n')
}

/// How long a full segment waits before its checkpoint. By then the kernel has written the
/// runs' files back on its own (Linux writes dirty pages back after 30 s, and ext4 commits its
/// journal every 5 s), so syncing them costs next to nothing and never competes with the
/// fsync a group of runs waits for.
const CHECKPOINT_DELAY: Duration = Duration::from_secs(35);
/// How many full segments may wait; beyond, the oldest is checkpointed at once (so the journal
/// on disk, and what a recovery replays, stay bounded: 8 × 32 MiB by default).
const MAX_WAITING_SEGMENTS: usize = 8;

/// What the checkpoint thread is asked to do.
enum Chore {
    /// Checkpoint this segment, which filled at that instant.
    Checkpoint(PathBuf, Instant),
    /// Make a spare segment now, if there is none: a file of zeros as large as a segment,
    /// written and synced, so the next segment is overwritten in place from its first record.
    Prepare,
}

/// The checkpoint thread: each full segment, [`CHECKPOINT_DELAY`] after it filled (or at once
/// if too many wait, or when the writer closes), and spares when asked.
fn chores(
    root: &Path,
    writer: &str,
    spare: &Spare,
    segment_bytes: u64,
    pending: crossbeam_channel::Receiver<Chore>,
) {
    let mut waiting: VecDeque<(PathBuf, Instant)> = VecDeque::new();
    let mut closing = false;
    let take = |chore: Chore, waiting: &mut VecDeque<(PathBuf, Instant)>| match chore {
        Chore::Checkpoint(path, at) => waiting.push_back((path, at)),
        Chore::Prepare => {
            if let Err(e) = prepare_spare(root, writer, spare, segment_bytes) {
                stderr_line!(
                    "ddwire: run store {}: preparing a journal segment failed, segments grow as they go: {e}",
                    root.display()
                );
            }
        }
    };
    loop {
        // How long the oldest full segment may still wait; `None` while none waits.
        let wait = match waiting.front() {
            None if closing => return,
            None => None,
            Some(_) if closing || waiting.len() > MAX_WAITING_SEGMENTS => Some(Duration::ZERO),
            Some((_, full_at)) => Some(CHECKPOINT_DELAY.saturating_sub(full_at.elapsed())),
        };
        if wait != Some(Duration::ZERO) {
            let next = match wait {
                Some(wait) => pending.recv_timeout(wait),
                None => pending.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match next {
                Ok(next) => take(next, &mut waiting),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => closing = true,
            }
            continue;
        }
        if let Some((segment, _)) = waiting.pop_front()
            && let Err(e) = checkpoint(root, &segment, writer, spare, segment_bytes)
        {
            stderr_line!(
                "ddwire: run store {}: checkpoint of {} failed, kept for recovery: {e}",
                root.display(),
                segment.display()
            );
        }
        // Whatever else arrived meanwhile.
        while let Ok(next) = pending.try_recv() {
            take(next, &mut waiting);
        }
    }
}

/// Write `n` zero bytes at the file's position.
fn write_zeros(file: &mut File, mut n: u64) -> std::io::Result<()> {
    let zeros = vec![0u8; n.min(1 << 20) as usize];
    while n > 0 {
        let chunk = n.min(zeros.len() as u64) as usize;
        file.write_all(&zeros[..chunk])?;
        n -= chunk as u64;
    }
    Ok(())
}

/// Write a spare segment of zeros, synced, unless there is a spare already.
fn prepare_spare(root: &Path, writer: &str, spare: &Spare, segment_bytes: u64) -> Result<()> {
    if spare.lock().unpoisoned().is_some() {
        return Ok(());
    }
    let control = root.join(CONTROL_DIR);
    let path = control.join(recovery::spare_name(writer));
    let tmp = control.join(tmp_name(writer, "spare"));
    let written = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        write_zeros(&mut file, segment_bytes)?;
        file.sync_all()
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_at(root, "writing", &tmp)(e));
    }
    let mut kept = spare.lock().unpoisoned();
    if kept.is_some() {
        // A checkpoint kept one meanwhile.
        let _ = fs::remove_file(&tmp);
        return Ok(());
    }
    fs::rename(&tmp, &path)
        .map_err(|e| HarnessError::io(format!("moving {} into place", shown(root, &path)), e))?;
    *kept = Some(path);
    drop(kept);
    sync_dir(root, &control)
}

/// Make every run a segment holds durable in its own files; then keep the segment as the
/// spare for reuse (if there is none), or remove it.
fn checkpoint(
    root: &Path,
    segment: &Path,
    writer: &str,
    spare: &Spare,
    segment_bytes: u64,
) -> Result<()> {
    let mut batch: Vec<PathBuf> = Vec::new();
    let mut runs = 0;
    // Most runs name the same few schemas: each is synced once per checkpoint, not once a run.
    let mut schemas: HashSet<String> = HashSet::new();
    journal::read_names(segment, |_, record| {
        let dir = root.join(&record.id);
        for (name, _) in &record.files {
            batch.push(dir.join(name));
        }
        batch.push(dir);
        for (digest, _) in &record.schemas {
            if schemas.insert(digest.clone()) {
                batch.push(root.join(SCHEMAS_DIR).join(format!("{digest}.json")));
            }
        }
        runs += 1;
        if runs % CHECKPOINT_BATCH == 0 {
            sync_all(root, std::mem::take(&mut batch))?;
        }
        Ok(())
    })?;
    sync_all(root, batch)?;
    sync_all(
        root,
        vec![
            root.to_path_buf(),
            root.join(SCHEMAS_DIR),
            root.join(INDEX_NAME),
        ],
    )?;
    let control = root.join(CONTROL_DIR);
    let mut kept = spare.lock().unpoisoned();
    // A segment made short on the commit path is not kept: as the spare it would stand in the
    // way of a full-size one.
    let full_size = fs::metadata(segment).is_ok_and(|m| m.len() >= segment_bytes);
    if kept.is_none() && full_size {
        // Its records are all durable elsewhere now; reused, they are left behind as records
        // of another sequence number, which no reader takes.
        let path = control.join(recovery::spare_name(writer));
        fs::rename(segment, &path).map_err(|e| {
            HarnessError::io(format!("keeping {} for reuse", shown(root, segment)), e)
        })?;
        *kept = Some(path);
    } else {
        fs::remove_file(segment).map_err(io_at(root, "removing", segment))?;
    }
    drop(kept);
    sync_dir(root, &control)
}

#[cfg(test)]
mod syncer_tests {
    use super::*;

    /// The sync thread syncs while the caller's work runs, hands both results back each time,
    /// and is joined when dropped, even right after a sync.
    #[test]
    fn the_sync_thread_syncs_while_the_work_runs_and_stops_when_dropped() {
        let dir = std::env::temp_dir().join(format!("ddwire-syncer-{}", crate::ids::new_uuid7()));
        fs::create_dir_all(&dir).unwrap();
        let file = Arc::new(File::create(dir.join("journal")).unwrap());
        let syncer = Syncer::start().unwrap();
        for n in 0..200u32 {
            file.write_all_at(&n.to_le_bytes(), u64::from(n) * 4)
                .unwrap();
            let (synced, _, done) = syncer.sync_during(&file, || n * 2);
            synced.unwrap();
            assert_eq!(done, n * 2);
        }
        drop(syncer);
        assert_eq!(fs::read(dir.join("journal")).unwrap().len(), 800);
        fs::remove_dir_all(&dir).unwrap();
    }
}
