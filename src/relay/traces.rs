//! Where a hop's spans go once it ends: a JSON-lines file per session under the traces
//! directory (one span JSON document per line, as a run's `spans.jsonl` in the run store),
//! and the OTLP exporter's queue.
//!
//! The session is the A2A `contextId`. A context id made only of `A-Z a-z 0-9 . _ -` (at most
//! 128, not starting with a dot) names its file as it is, `<contextId>.jsonl`; any other, and
//! any that would pass for one of the relay's own names (`no-session`, `session-…`), is
//! written to `session-<sha256 of the id, hex>.jsonl`, so no context id can reach outside the
//! directory or into another session's file. Spans of a call that names no context (a
//! refusal before any answer) go to `no-session.jsonl`.
//!
//! A hop's spans are appended with one write under a lock, so concurrent hops of a session
//! never interleave within a line. A write that fails is counted and reported on stderr (the
//! first, then every hundredth), and never fails the call.

use super::RelayError;
use crate::text::Unpoison;
use crate::trace::SpanRecord;
use crate::trace::relay_lint::session_file_name;
use crate::wire::otlp::Exporter;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a relay's spans go.
pub(crate) struct TraceSink {
    pub(crate) dir: Option<PathBuf>,
    pub(crate) exporter: Option<Exporter>,
    /// Held while a hop's lines are appended.
    write_lock: Mutex<()>,
    pub(crate) spans_written: AtomicU64,
    pub(crate) write_errors: AtomicU64,
}

impl TraceSink {
    /// A sink writing under `dir` (created if missing) and exporting through `exporter`.
    pub(crate) fn new(
        dir: Option<PathBuf>,
        exporter: Option<Exporter>,
    ) -> Result<TraceSink, RelayError> {
        if let Some(dir) = &dir {
            std::fs::create_dir_all(dir).map_err(|source| RelayError::Traces {
                dir: dir.clone(),
                source,
            })?;
        }
        Ok(TraceSink {
            dir,
            exporter,
            write_lock: Mutex::new(()),
            spans_written: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
        })
    }

    /// Keep one hop's spans: append them to the session's file and queue them for export.
    pub(crate) fn record(&self, session: Option<&str>, spans: Vec<SpanRecord>) {
        if spans.is_empty() {
            return;
        }
        if let Some(dir) = &self.dir {
            let path = dir.join(session_file_name(session));
            let mut text = String::new();
            for span in &spans {
                text.push_str(&crate::trace::to_json(span));
                text.push('\n');
            }
            match self.append(&path, text.as_bytes()) {
                Ok(()) => {
                    self.spans_written
                        .fetch_add(spans.len() as u64, Ordering::Relaxed);
                }
                Err(e) => {
                    let n = self.write_errors.fetch_add(1, Ordering::Relaxed);
                    if n.is_multiple_of(100) {
                        stderr_line!(
                            "ddwire relay: cannot write spans to {}: {e} ({} write(s) failed so far)",
                            path.display(),
                            n + 1
                        );
                    }
                }
            }
        }
        if let Some(exporter) = &self.exporter {
            exporter.export(spans);
        }
    }

    fn append(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let _held = self.write_lock.lock().unpoisoned();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        file.write_all(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::session_file_name as file_name;

    #[test]
    fn a_context_id_names_its_file_only_when_it_is_a_safe_plain_name() {
        assert_eq!(
            file_name(Some("0196f7d2-1c2b-7a3e-9f00-000000000001")),
            "0196f7d2-1c2b-7a3e-9f00-000000000001.jsonl"
        );
        assert_eq!(file_name(None), "no-session.jsonl");
        for hostile in [
            "../../etc/passwd",
            "a/b",
            ".hidden",
            "",
            "no-session",
            "session-abc",
            "ctx with spaces",
            "é",
        ] {
            let name = file_name(Some(hostile));
            assert!(
                name.starts_with("session-") && name.len() == 8 + 64 + 6,
                "{hostile}: {name}"
            );
        }
        assert_ne!(file_name(Some("a/b")), file_name(Some("a\\b")));
        assert_eq!(file_name(Some(&"x".repeat(129))).len(), 8 + 64 + 6);
    }
}
