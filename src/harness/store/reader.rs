//! [`RunReader`]: the run store opened for reading only.
//!
//! A reader never creates, removes, truncates or appends anything: not the store's directory
//! (a mistyped path is an error that names it), not the index (a torn last line is skipped, a
//! bad line is counted and skipped), not a lock file. So it works on a read-only file system,
//! and beside a live writer, whose runs it sees as they are published: a run directory appears
//! whole (it is renamed into place), and an index line only once it is complete.

use super::StoreError;
use super::files::{dir_names, read_json, read_text};
use super::index::{self, Page, Query, Scan};
use super::{
    AGENT_REPLY_FILE, ENVELOPE_FILE, GROUNDING_FILE, INDEX_NAME, REQUEST_FILE, SCHEMAS_DIR,
    SPANS_FILE,
};
use crate::contract::formats::is_sha256_hex;
use crate::harness::{HarnessError, Result};
use crate::ids::is_uuid7;
use crate::trace::SpanRecord;
use serde_json::Value;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// A listing opened by [`RunReader::listing`], ready to be read.
#[derive(Debug)]
pub(crate) struct Listing {
    file: Option<std::fs::File>,
    start: u64,
    query: Query,
}

impl Listing {
    /// Call `each` with `(index line offset, listing row)` for every run the query matches,
    /// newest first, until it breaks (see [`RunReader::rows_newest_first`]).
    pub(crate) fn rows(self, mut each: impl FnMut(u64, Value) -> ControlFlow<()>) -> Result<Scan> {
        self.scan(index::line_head, |offset, head| {
            each(offset, index::listing_row(&head))
        })
    }

    /// One page: at most the query's `limit` rows (100 if unset), and a cursor to the next
    /// page if more runs match (see [`RunReader::page`]).
    pub(crate) fn page(self) -> Result<Page> {
        let limit = self.query.limit.unwrap_or(100);
        let mut page = Page::default();
        let mut last: Option<(u64, Value)> = None;
        let scan = self.rows(|offset, row| {
            if page.rows.len() == limit {
                // One more matches: there is a next page, after the last row given.
                if let Some((at, id)) = &last {
                    page.next = id.as_str().map(|id| index::Cursor {
                        after: id.to_string(),
                        at: *at,
                    });
                }
                return ControlFlow::Break(());
            }
            last = Some((offset, row["invocation_id"].clone()));
            page.rows.push(row);
            ControlFlow::Continue(())
        })?;
        page.skipped = scan.skipped;
        Ok(page)
    }

    fn scan(
        self,
        read: index::ReadLine,
        each: impl FnMut(u64, Value) -> ControlFlow<()>,
    ) -> Result<Scan> {
        match self.file {
            Some(file) => index::scan_backward(file, self.start, &self.query, read, each),
            None => Ok(Scan::default()),
        }
    }
}

/// How many candidates an ambiguous id prefix names in its error.
pub(crate) const CANDIDATES_SHOWN: usize = 10;

/// The run store at one root directory, for reading. Cheap to share between threads.
#[derive(Clone, Debug)]
pub struct RunReader {
    root: PathBuf,
    index: PathBuf,
}

impl RunReader {
    /// Open the store at `root` for reading. It must exist and be a directory; nothing is
    /// created. (A directory without an index is a store with no runs yet.)
    pub fn open(root: impl Into<PathBuf>) -> Result<RunReader> {
        let root = root.into();
        let shown = std::path::absolute(&root).unwrap_or_else(|_| root.clone());
        match std::fs::metadata(&root) {
            Ok(m) if m.is_dir() => Ok(RunReader::at(root)),
            Ok(_) => Err(StoreError::NotADirectory { store: shown }.into()),
            Err(e) => Err(HarnessError::io(
                format!("opening the run store {}", shown.display()),
                e,
            )),
        }
    }

    /// A reader of `root`, unchecked (the writer has just made it).
    pub(crate) fn at(root: PathBuf) -> RunReader {
        RunReader {
            index: root.join(INDEX_NAME),
            root,
        }
    }

    /// The store's root directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The index file, `<root>/invocations.jsonl`.
    #[cfg(test)]
    pub(crate) fn index_path(&self) -> &Path {
        &self.index
    }

    /// Whether a run is stored under `invocation_id`: its `envelope.json` exists.
    pub(crate) fn has(&self, invocation_id: &str) -> bool {
        self.run_file(invocation_id, ENVELOPE_FILE)
            .is_some_and(|p| p.exists())
    }

    /// The full id of the one run whose id starts with `reference` (case-insensitive), which
    /// may be a whole id. [`StoreError::NoSuchRun`] if none does, [`StoreError::AmbiguousRun`] (naming
    /// some candidates) if several do.
    pub(crate) fn resolve(&self, reference: &str) -> Result<String> {
        let not_found = || {
            HarnessError::from(StoreError::NoSuchRun {
                reference: reference.to_string(),
                store: self.shown_root(),
            })
        };
        let prefix = reference.trim().to_ascii_lowercase();
        if is_uuid7(&prefix) {
            return if self.has(&prefix) {
                Ok(prefix)
            } else {
                Err(not_found())
            };
        }
        let plausible = !prefix.is_empty()
            && prefix.len() < 36
            && prefix.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
        if !plausible {
            return Err(not_found());
        }
        // One pass over the directory, keeping only the first few matches in id order.
        let mut shown: Vec<String> = Vec::new();
        let mut total = 0usize;
        for name in dir_names(&self.root, &self.root)? {
            if !name.starts_with(&prefix) || !is_uuid7(&name) || !self.has(&name) {
                continue;
            }
            total += 1;
            let at = shown.partition_point(|s| *s < name);
            if at < CANDIDATES_SHOWN {
                shown.insert(at, name);
                shown.truncate(CANDIDATES_SHOWN);
            }
        }
        match total {
            0 => Err(not_found()),
            1 => Ok(shown.remove(0)),
            _ => Err(StoreError::AmbiguousRun {
                prefix: reference.to_string(),
                candidates: shown,
                total,
            }
            .into()),
        }
    }

    /// The root as messages name it: absolute.
    pub(crate) fn shown_root(&self) -> PathBuf {
        std::path::absolute(&self.root).unwrap_or_else(|_| self.root.clone())
    }

    /// The stored envelope, or `None` if no run has that id (or it is not a UUIDv7).
    pub fn envelope(&self, invocation_id: &str) -> Result<Option<Value>> {
        read_json(&self.root, self.run_file(invocation_id, ENVELOPE_FILE))
    }

    /// The stored envelope's exact text. A delegated child's envelope is answered as this text,
    /// so its hash survives the wire.
    pub(crate) fn envelope_text(&self, invocation_id: &str) -> Result<Option<String>> {
        read_text(&self.root, self.run_file(invocation_id, ENVELOPE_FILE))
    }

    /// The stored request document.
    pub(crate) fn request(&self, invocation_id: &str) -> Result<Option<Value>> {
        read_json(&self.root, self.run_file(invocation_id, REQUEST_FILE))
    }

    /// The run's `spans.jsonl` text, one span JSON document per line.
    pub(crate) fn spans(&self, invocation_id: &str) -> Result<Option<String>> {
        read_text(&self.root, self.run_file(invocation_id, SPANS_FILE))
    }

    /// The agent's reply as the conductor received it, before any withholding:
    /// `{"result": <AgentResult document>, "spans": [<span JSON text>…]}`. `None` for a run
    /// whose agent was not called or did not answer (and for runs stored before it was kept).
    pub(crate) fn agent_reply(&self, invocation_id: &str) -> Result<Option<Value>> {
        read_json(&self.root, self.run_file(invocation_id, AGENT_REPLY_FILE))
    }

    /// The run's grounding summary as it was given: the text of `grounding.txt` without the
    /// newline the store ends it with.
    pub(crate) fn grounding(&self, invocation_id: &str) -> Result<Option<String>> {
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
    pub(crate) fn schema(&self, digest: &str) -> Result<Option<Value>> {
        let path = is_sha256_hex(digest)
            .then(|| self.root.join(SCHEMAS_DIR).join(format!("{digest}.json")));
        read_json(&self.root, path)
    }

    /// Call `each` with `(index line offset, envelope)` for every run `query` matches, newest
    /// first, until it breaks, reading the index from its end (or from `query.after`) a block
    /// at a time: memory stays flat whatever the store's size. `query.limit` is not applied.
    pub(crate) fn newest_first(
        &self,
        query: &Query,
        each: impl FnMut(u64, Value) -> ControlFlow<()>,
    ) -> Result<Scan> {
        self.listing(query)?.scan(index::line_envelope, each)
    }

    /// Call `each` with `(index line offset, listing row)` for every run `query` matches,
    /// newest first, until it breaks: `RunReader::newest_first` reading only the fields a
    /// row needs (`index::listing_row`), so a large payload costs nothing to skip.
    pub(crate) fn rows_newest_first(
        &self,
        query: &Query,
        each: impl FnMut(u64, Value) -> ControlFlow<()>,
    ) -> Result<Scan> {
        self.listing(query)?.rows(each)
    }

    /// Open a listing newest first: the index is opened and the place `query.after` names is
    /// found now (so a broken store or an unknown `after` is an error before anything is
    /// sent), and its rows are read later with [`Listing::rows`], which is `Send` so another
    /// thread can stream them.
    pub(crate) fn listing(&self, query: &Query) -> Result<Listing> {
        let (file, start) = match index::open(&self.index)? {
            Some((file, len)) => {
                let start = index::start_of(&file, len, query, &self.shown_root())?;
                (Some(file), start)
            }
            None => match &query.after {
                Some(after) => {
                    return Err(StoreError::NoSuchRun {
                        reference: after.clone(),
                        store: self.shown_root(),
                    }
                    .into());
                }
                None => (None, 0),
            },
        };
        Ok(Listing {
            file,
            start,
            query: query.clone(),
        })
    }

    /// Call `each` with every stored envelope, oldest first (index order), until it breaks.
    pub(crate) fn oldest_first(
        &self,
        mut each: impl FnMut(Value) -> ControlFlow<()>,
    ) -> Result<Scan> {
        index::scan_forward(&self.index, |_, envelope| each(envelope))
    }

    /// One page of the listing, newest first: at most `query.limit` rows (100 if unset) of
    /// `index::listing_row`, and a cursor to the next page if more runs match.
    #[cfg(test)]
    pub(crate) fn page(&self, query: &Query) -> Result<Page> {
        self.listing(query)?.page()
    }

    /// The id of every whole run on disk, oldest first (UUIDv7 order): a directory named by a
    /// UUIDv7 that holds `envelope.json` (written last before the directory is renamed into
    /// place, so it marks a whole run), whether or not the index lists it yet. With `since_ns`
    /// (nanoseconds since the epoch), only the runs whose `completed_at` is at or after it; a run
    /// without a readable one is then left out. What `ddwire export --all` sends.
    pub fn run_ids(&self, since_ns: Option<i128>) -> Result<Vec<String>> {
        let mut ids: Vec<String> = dir_names(&self.root, &self.root)?
            .into_iter()
            .filter(|name| is_uuid7(name) && self.has(name))
            .collect();
        if let Some(since) = since_ns {
            ids.retain(|id| {
                let envelope = self.envelope(id).ok().flatten();
                let completed = envelope
                    .as_ref()
                    .and_then(|e| e.get("completed_at")?.as_str())
                    .and_then(crate::time::parse_rfc3339);
                completed.is_some_and(|t| t >= since)
            });
        }
        ids.sort();
        Ok(ids)
    }

    /// The spans stored for a run, parsed, in stored order (none if it kept no trace); `None`
    /// if no run has that id. A line that is not span JSON is a [`StoreError::Unreadable`]
    /// naming the run and the line.
    pub(crate) fn span_records(&self, invocation_id: &str) -> Result<Option<Vec<SpanRecord>>> {
        if !self.has(invocation_id) {
            return Ok(None);
        }
        let text = self.spans(invocation_id)?.unwrap_or_default();
        let mut spans = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let span = crate::trace::from_json(line).map_err(|e| StoreError::Unreadable {
                file: format!(
                    "{invocation_id}/{SPANS_FILE} in the run store, line {},",
                    n + 1
                ),
                reason: e.to_string(),
            })?;
            spans.push(span);
        }
        Ok(Some(spans))
    }

    /// A JSON file the conductor kept beside the run's envelope (`turns.json`, `approval.json`),
    /// or `None` if the run has none by that name.
    pub(crate) fn beside(&self, invocation_id: &str, name: &str) -> Result<Option<Value>> {
        read_json(&self.root, self.run_file(invocation_id, name))
    }

    /// `<root>/<id>/<name>`, or `None` if `id` is not a UUIDv7 (and so could name a path
    /// outside the store).
    pub(crate) fn run_file(&self, invocation_id: &str, name: &str) -> Option<PathBuf> {
        is_uuid7(invocation_id).then(|| self.root.join(invocation_id).join(name))
    }
}
