//! Reading stored runs for export, read-only.
//!
//! `ddwire export` may run beside a live harness, on a copy of a store, or on a store it may
//! not write, so it never opens a [`super::store::RunStore`] (whose `open` repairs what a
//! crashed writer left). It reads the files the store publishes (see the store's layout):
//! a run is a directory `<runs>/<invocation_id>/` named by a UUIDv7 and holding `envelope.json`
//! (written last before the directory is renamed into place, so a directory with one is a
//! whole run) and `spans.jsonl`. Unfinished writes (`.tmp-*`) and anything else are ignored.

use super::store::StoreError;
use crate::error::{Error, Result};
use crate::ids::is_uuid7;
use crate::trace::SpanRecord;
use serde_json::Value;
use std::path::Path;

const ENVELOPE_FILE: &str = "envelope.json";
const SPANS_FILE: &str = "spans.jsonl";

/// The ids of every whole run under `runs`, oldest first (UUIDv7 order), keeping those whose
/// envelope's `completed_at` is at or after `since_ns` (nanoseconds since the epoch) when it
/// is given; a run without a readable `completed_at` is then left out.
pub fn run_ids(runs: &Path, since_ns: Option<i128>) -> Result<Vec<String>> {
    let entries = std::fs::read_dir(runs)
        .map_err(|e| Error::io(format!("reading the run store {}", runs.display()), e))?;
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("reading {}", runs.display()), e))?;
        let Some(id) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let envelope = entry.path().join(ENVELOPE_FILE);
        if !is_uuid7(&id) || !envelope.is_file() {
            continue;
        }
        if let Some(since) = since_ns {
            let completed = std::fs::read(&envelope)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                .and_then(|doc| doc.get("completed_at")?.as_str().map(str::to_string))
                .and_then(|t| crate::time::parse_rfc3339(&t));
            if completed.is_none_or(|t| t < since) {
                continue;
            }
        }
        ids.push(id);
    }
    ids.sort();
    Ok(ids)
}

/// The spans stored for run `id` under `runs`, in stored order; `None` if no run has that id.
/// A line that is not span JSON is a [`StoreError::Unreadable`] naming the run and the line.
pub fn run_spans(runs: &Path, id: &str) -> Result<Option<Vec<SpanRecord>>> {
    // Only a UUIDv7 names a run, so no id can reach outside the store.
    let dir = runs.join(id);
    if !is_uuid7(id) || !dir.join(ENVELOPE_FILE).is_file() {
        return Ok(None);
    }
    let path = dir.join(SPANS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
    };
    let mut spans = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let span = crate::trace::from_json(line).map_err(|e| StoreError::Unreadable {
            file: format!("{}, line {},", path.display(), n + 1),
            reason: e.to_string(),
        })?;
        spans.push(span);
    }
    Ok(Some(spans))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::new_uuid7;

    fn store() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ddwire-export-{}", new_uuid7()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn put(runs: &Path, id: &str, completed_at: &str, spans: &str) {
        let dir = runs.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(ENVELOPE_FILE),
            format!("{{\"completed_at\": \"{completed_at}\"}}"),
        )
        .unwrap();
        std::fs::write(dir.join(SPANS_FILE), spans).unwrap();
    }

    #[test]
    fn whole_runs_are_listed_oldest_first_and_since_filters_by_completion_time() {
        let runs = store();
        let (a, b) = (new_uuid7(), new_uuid7());
        put(&runs, &b, "2026-01-02T00:00:00Z", "");
        put(&runs, &a, "2026-01-01T00:00:00Z", "");
        // Not runs: an unfinished write, a directory without an envelope, a stray file.
        std::fs::create_dir_all(runs.join(format!(".tmp-1-2-{}", new_uuid7()))).unwrap();
        std::fs::create_dir_all(runs.join(new_uuid7())).unwrap();
        std::fs::write(runs.join("invocations.jsonl"), "").unwrap();
        assert_eq!(run_ids(&runs, None).unwrap(), [a.clone(), b.clone()]);
        let since = crate::time::parse_rfc3339("2026-01-01T12:00:00Z");
        assert_eq!(run_ids(&runs, since).unwrap(), [b]);
        std::fs::remove_dir_all(&runs).unwrap();
    }

    #[test]
    fn spans_are_read_in_order_and_a_bad_line_or_a_foreign_id_is_refused() {
        let runs = store();
        let id = new_uuid7();
        let tracer = crate::trace::Tracer::new("t");
        let root = tracer.invoke_agent("a");
        let trace_id = root.context().trace_id;
        root.end();
        let line = crate::trace::to_json(&tracer.take(trace_id)[0]);
        put(
            &runs,
            &id,
            "2026-01-01T00:00:00Z",
            &format!("{line}\n\n{line}\n"),
        );
        assert_eq!(run_spans(&runs, &id).unwrap().unwrap().len(), 2);
        assert!(run_spans(&runs, "../etc").unwrap().is_none());
        assert!(run_spans(&runs, &new_uuid7()).unwrap().is_none());
        put(
            &runs,
            &id,
            "2026-01-01T00:00:00Z",
            &format!("{line}\nnot json\n"),
        );
        let err = run_spans(&runs, &id).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        std::fs::remove_dir_all(&runs).unwrap();
    }
}
