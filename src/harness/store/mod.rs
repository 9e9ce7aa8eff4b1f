//! The run store: every invocation's envelope, request, trace, grounding report and the
//! agent's reply, kept once, durable at speed, readable by anything that reads JSON.
//!
//! # Layout
//!
//! The same files, in the same formats, as the reference's `workbench.store.RunStore`, so each
//! side reads the other's runs:
//!
//! ```text
//! <runs>/invocations.jsonl                 the index: one envelope per line, json.dumps(env, separators=(",", ":"))
//! <runs>/<invocation_id>/envelope.json     json.dumps(env, indent=2), never overwritten
//! <runs>/<invocation_id>/request.json      json.dumps(request, indent=2)
//! <runs>/<invocation_id>/spans.jsonl       one span JSON document per line
//! <runs>/<invocation_id>/grounding.txt     the grounding summary + "\n"
//! <runs>/<invocation_id>/agent-result.json the agent's reply as received, before any withholding:
//!                                          {"result": <AgentResult>, "spans": [<span JSON text>…]}
//!                                          (ddwire's own; absent when the agent was not called)
//! <runs>/<invocation_id>/turns.json        the turns of a run an agent suspended (ddwire's own)
//! <runs>/<invocation_id>/approval.json     the steward's approval a run carried out (ddwire's own)
//! <runs>/schemas/<digest>.json             each class schema checked against, json.dumps(schema, indent=2)
//! <runs>/.ddwire/                          ddwire's own: the store lock, each writer's lock and journal,
//!                                          suspended/<id>.json, each run an agent suspended, until it is stored,
//!                                          and decisions/<id>.json, a steward's decision on a referred run
//! ```
//!
//! JSON is written byte for byte as CPython's `json.dumps` writes it (`python::dumps`), so
//! non-ASCII text is `\uXXXX`-escaped as in the reference. Identifiers are UUIDv7, so the
//! directory names sort chronologically; the index is in the order runs were stored.
//!
//! # JSON that can be read back
//!
//! Everything the store writes parses again with any strict JSON reader. A number no double
//! can hold (`1e999`) is the one value that would not (Python spells it `Infinity`): the
//! contract refuses it in a caller's request and in an agent's reply, and the store refuses to
//! write it. Readers take a lone surrogate escape, which Python writes and serde_json refuses,
//! as U+FFFD, and skip (and count) an index line that is not JSON, so a store another program
//! wrote never becomes unreadable.
//!
//! # Writing: write-once, crash-safe, one fsync round per group
//!
//! [`RunStore`] (see `writer` for the steps) writes each run to a temporary directory,
//! commits it to a write-ahead journal that concurrent runs share (one write and one fsync
//! for the whole group), then renames its directory into place and appends its index line under
//! the store's lock. So:
//!
//! - a run is acknowledged only once it is durable, and the caller's wait is one fsync round;
//! - a run appears whole or not at all: readers see its directory only after the rename, and
//!   index lines only once complete;
//! - a run that could not be stored is not stored at all (its directory and index bytes are
//!   taken back and its journal record voided), so the same id may be sent again;
//! - nothing is ever overwritten: `rename(2)` refuses a directory that holds a run.
//!
//! # Recovery on open
//!
//! A writer recovers the store when it opens it, under the store's lock: it replays the journal
//! of every writer that stopped without a checkpoint, removes their unfinished temporary
//! entries, mends the index (a torn last line, a line that is not JSON, a run indexed twice),
//! and indexes every complete run directory the index does not name. See `recovery`.
//!
//! # Several writers, one store
//!
//! Harness processes on one machine may share a store: each has its own journal, and every
//! step that touches shared state (renaming a run into place, appending to the index, recovery)
//! holds the store's lock, a `flock(2)` on `.ddwire/store.lock`. No index line is lost or
//! written twice. For harness replicas on several hosts, the shared file system must provide:
//!
//! - `flock(2)` locks that exclude across hosts and are released when a holder dies (NFSv4
//!   with its lock manager; not NFSv3 without `lockd`, and not most FUSE or object-store
//!   mounts);
//! - atomic `rename(2)` of a directory within the store, failing onto a non-empty directory;
//! - `fsync(2)` that makes data durable on the server before it returns (NFS `sync` exports,
//!   or `COMMIT` honoured), and close-to-open consistency, so a reader sees what a writer
//!   renamed and appended once it opens the file again;
//! - appends that land at the end of the file as it is (the index is appended to under the
//!   lock, reopened each time, so `O_APPEND` need not be atomic across clients).
//!
//! A store on such a file system is a single point that every replica writes through; traces
//! leave it for a standard backend through OTLP export.
//!
//! # Reading
//!
//! [`RunReader`] opens a store read-only and never changes it (see `reader`); a `RunStore`
//! is also a reader. Listings page through the index newest first (`RunReader::page`,
//! `RunReader::newest_first`) with filters (`Query`), a block at a time, so memory stays
//! flat whatever the store's size. A run may be named by a unique prefix of its id
//! (`RunReader::resolve`).

pub(crate) mod index;
pub(crate) mod journal;
pub(crate) mod reader;
pub(crate) mod recovery;
pub(crate) mod writer;

mod files;

pub(crate) use index::{Query, parse_time};
pub(crate) use reader::CANDIDATES_SHOWN;
pub use reader::RunReader;
pub use writer::RunStore;

use crate::contract::formats::is_sha256_hex;
use crate::harness::Result;
use crate::json::python::{self, Style};
use serde_json::Value;
use std::path::PathBuf;

/// The index file, one envelope per line.
pub(crate) const INDEX_NAME: &str = "invocations.jsonl";
/// The directory of class schemas, one file per digest.
pub(crate) const SCHEMAS_DIR: &str = "schemas";
/// A run's envelope, `json.dumps(env, indent=2)`.
pub(crate) const ENVELOPE_FILE: &str = "envelope.json";
/// A run's request document, `json.dumps(request, indent=2)`.
pub(crate) const REQUEST_FILE: &str = "request.json";
/// A run's whole trace, one span JSON document per line.
pub(crate) const SPANS_FILE: &str = "spans.jsonl";
/// A run's grounding summary and a newline.
pub(crate) const GROUNDING_FILE: &str = "grounding.txt";
/// The agent's reply as received: `{"result": <AgentResult>, "spans": [<span JSON text>…]}`.
pub(crate) const AGENT_REPLY_FILE: &str = "agent-result.json";
/// ddwire's own directory in a store: locks and journals.
pub(crate) const CONTROL_DIR: &str = ".ddwire";

/// The files the store itself writes in a run directory.
pub(crate) const OWN_FILES: [&str; 5] = [
    ENVELOPE_FILE,
    REQUEST_FILE,
    SPANS_FILE,
    GROUNDING_FILE,
    AGENT_REPLY_FILE,
];

/// Entries in `<runs>` and `<runs>/schemas` starting with this are unfinished writes.
pub(crate) const TMP_PREFIX: &str = ".tmp-";

/// `json.dumps(x, separators=(",", ":"))`: one index line.
pub(crate) const COMPACT: Style = Style {
    item_separator: ",",
    key_separator: ":",
    indent: None,
    ensure_ascii: true,
    floats: python::Floats::Python,
};

/// One run to store. `schemas` pairs each class schema the run was checked against with its
/// digest (`schema_digest`, as the envelope names it).
pub(crate) struct NewRun<'a> {
    /// The envelope, as it is stored.
    pub(crate) envelope: &'a Value,
    /// The request the run answered.
    pub(crate) request: &'a Value,
    /// Every span of the run, as span JSON lines.
    pub(crate) spans: &'a [String],
    /// The grounding linter's summary.
    pub(crate) grounding: &'a str,
    /// Each class schema the run was checked against, with its digest.
    pub(crate) schemas: &'a [(&'a str, &'a Value)],
    /// The agent's reply as received (`{"result": …, "spans": […]}`), when it answered.
    pub(crate) agent_reply: Option<&'a Value>,
}

/// Why the run store refused a write, cannot read what it holds, or has no such run.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// The store is open read-only: nothing is written, so a harness over it makes no runs.
    ReadOnly,
    /// The store's root is not a directory.
    NotADirectory {
        /// The root, as given.
        store: PathBuf,
    },
    /// A stored file that cannot be read back.
    Unreadable {
        /// The file, named relative to the store (`<id>/envelope.json in the run store`).
        file: String,
        /// What is wrong with it (`is not UTF-8 text`).
        reason: String,
    },
    /// A run refused before anything of it was written: an id that names no run directory, a
    /// digest or file name out of grammar, a number that would not read back.
    Refused {
        /// Why, ending with what was (not) stored.
        reason: String,
    },
    /// A write or a recovery that could not be finished; nothing of the run was stored.
    Failed {
        /// Why, ending with what was (not) stored.
        reason: String,
    },
    /// No stored run has this id, or an id starting with it.
    NoSuchRun {
        /// The id or prefix asked for.
        reference: String,
        /// The run store looked in.
        store: PathBuf,
    },
    /// An id prefix that several stored runs share.
    AmbiguousRun {
        /// The prefix asked for.
        prefix: String,
        /// The first few matching ids, in order.
        candidates: Vec<String>,
        /// How many runs match.
        total: usize,
    },
}

impl StoreError {
    pub(crate) fn refused(reason: impl Into<String>) -> StoreError {
        StoreError::Refused {
            reason: reason.into(),
        }
    }

    pub(crate) fn failed(reason: impl Into<String>) -> StoreError {
        StoreError::Failed {
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::ReadOnly => f.write_str(
                "the run store is open read-only; this harness makes no runs and nothing is stored",
            ),
            StoreError::NotADirectory { store } => {
                write!(f, "the run store {} is not a directory", store.display())
            }
            StoreError::Unreadable { file, reason } => write!(f, "{file} {reason}"),
            StoreError::Refused { reason } | StoreError::Failed { reason } => f.write_str(reason),
            StoreError::NoSuchRun { reference, store } => {
                write!(f, "no run {reference} in the run store {}", store.display())
            }
            StoreError::AmbiguousRun {
                prefix,
                candidates,
                total,
            } => {
                write!(
                    f,
                    "the run id prefix {prefix} matches {total} runs: {}",
                    candidates.join(", ")
                )?;
                if *total > candidates.len() {
                    write!(f, " and {} more", total - candidates.len())?;
                }
                f.write_str("; give more of the id")
            }
        }
    }
}

impl std::error::Error for StoreError {}

fn check_digest(digest: &str) -> Result<()> {
    if is_sha256_hex(digest) {
        Ok(())
    } else {
        Err(StoreError::refused(format!(
            "class schema digest {digest:?} is not 64 lowercase hex digits; nothing was stored"
        ))
        .into())
    }
}

fn check_extra_name(name: &str) -> Result<()> {
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if plain && !OWN_FILES.contains(&name) {
        Ok(())
    } else {
        Err(StoreError::refused(format!(
            "{name:?} cannot name a file in a run directory; nothing was stored"
        ))
        .into())
    }
}

#[cfg(test)]
mod tests;
