//! The JSON-lines span file: one span JSON document per line, UTF-8, LF.
//!
//! [`append`] writes a whole batch of lines with one `write_all` on a file opened for
//! appending, under a lock held per path, then flushes and syncs. Two writers in this process
//! therefore never interleave lines; writers in other processes are protected by the kernel's
//! `O_APPEND` semantics for a single write call on a local file system.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Append `lines` (each without its newline) to `path` as one batch, creating the file and
/// its parent directory. A line that contains a newline is refused: it would become two lines.
pub fn append(path: &Path, lines: &[String]) -> Result<()> {
    let mut buf = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        if line.contains('\n') || line.contains('\r') {
            return Err(Error::Trace(
                "a JSON line must not contain a line break".into(),
            ));
        }
        buf.push_str(line);
        buf.push('\n');
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    let lock = path_lock(path);
    let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    file.write_all(buf.as_bytes())
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    file.flush()
        .map_err(|e| Error::io(format!("flushing {}", path.display()), e))?;
    file.sync_data()
        .map_err(|e| Error::io(format!("syncing {}", path.display()), e))
}

/// Read a JSON-lines file: its non-empty lines.
pub fn read_lines(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect())
}

fn path_lock(path: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let key = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut locks = LOCKS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    locks.entry(key).or_default().clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_writers_never_interleave_lines() {
        let dir = std::env::temp_dir().join(format!("ddwire-jsonl-{}", crate::ids::new_uuid7()));
        let path = dir.join("spans.jsonl");
        std::thread::scope(|s| {
            for w in 0..8 {
                let path = &path;
                s.spawn(move || {
                    for i in 0..50 {
                        let lines: Vec<String> = (0..5)
                            .map(|j| {
                                format!(
                                    "{{\"w\": {w}, \"i\": {i}, \"j\": {j}, \"pad\": \"{}\"}}",
                                    "x".repeat(500)
                                )
                            })
                            .collect();
                        append(path, &lines).unwrap();
                    }
                });
            }
        });
        let lines = read_lines(&path).unwrap();
        assert_eq!(lines.len(), 8 * 50 * 5);
        for batch in lines.chunks(5) {
            let docs: Vec<serde_json::Value> = batch
                .iter()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert!(
                docs.iter()
                    .all(|d| d["w"] == docs[0]["w"] && d["i"] == docs[0]["i"]),
                "a batch was split"
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_line_with_a_line_break_is_refused() {
        let path = std::env::temp_dir().join("ddwire-never-written.jsonl");
        assert!(append(&path, &["a\nb".to_string()]).is_err());
        assert!(!path.exists());
    }
}
