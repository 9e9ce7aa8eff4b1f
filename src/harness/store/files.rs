//! File-system helpers the store's reader and writer share: reading a run's files, writing a
//! new file, and making files and directories durable.

use super::StoreError;
use crate::harness::{HarnessError, Result};
use serde_json::Value;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

/// `path` as an error message names it: relative to the store's `root` and said to be in the
/// run store, never absolute. A message can reach a remote caller (a failed task, a RUN_ERROR,
/// an HTTP 500), and where the server keeps its files is none of the caller's business.
pub(crate) fn shown(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(relative) if relative.as_os_str().is_empty() => "the run store's root".to_string(),
        Ok(relative) => format!("{} in the run store", relative.display()),
        Err(_) => format!(
            "{} near the run store",
            path.file_name().unwrap_or_default().to_string_lossy()
        ),
    }
}

/// The bytes of `path`, or `None` if there is no such file.
pub(crate) fn read_if_any(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What failed `doing` something to `path` (under `root`) says: `"{doing} {shown path}"`.
pub(crate) fn io_at<'a>(
    root: &'a Path,
    doing: &'a str,
    path: &'a Path,
) -> impl Fn(std::io::Error) -> HarnessError + Copy + 'a {
    move |e| HarnessError::io(format!("{doing} {}", shown(root, path)), e)
}

/// The text of `path` (under `root`), or `None` if there is no such file (or no path was
/// given).
pub(crate) fn read_text(root: &Path, path: Option<PathBuf>) -> Result<Option<String>> {
    let Some(path) = path else { return Ok(None) };
    let Some(bytes) = read_if_any(&path).map_err(io_at(root, "reading", &path))? else {
        return Ok(None);
    };
    let text = String::from_utf8(bytes).map_err(|_| StoreError::Unreadable {
        file: shown(root, &path),
        reason: "is not UTF-8 text".into(),
    })?;
    Ok(Some(text))
}

/// [`read_text`], parsed as JSON. A lone surrogate escape (which Python writes) reads as
/// U+FFFD, so a file another writer made never makes a run unreadable for that alone.
pub(crate) fn read_json(root: &Path, path: Option<PathBuf>) -> Result<Option<Value>> {
    let named = path.as_ref().map(|p| shown(root, p));
    let Some(text) = read_text(root, path)? else {
        return Ok(None);
    };
    let value =
        crate::json::from_slice_lossy(text.as_bytes()).map_err(|e| StoreError::Unreadable {
            file: named.unwrap_or_default(),
            reason: format!("is not JSON: {e}"),
        })?;
    Ok(Some(value))
}

/// The UTF-8 names in `dir` (under `root`); none if it does not exist.
pub(crate) fn dir_names(root: &Path, dir: &Path) -> Result<Vec<String>> {
    let listing = io_at(root, "listing", dir);
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(listing(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(listing)?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    Ok(names)
}

/// Write a file that must not exist yet. Nothing is synced: the journal is what makes a run
/// durable, and a checkpoint syncs the file later.
pub(crate) fn write_new(root: &Path, path: &Path, bytes: &[u8]) -> Result<File> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io_at(root, "creating", path))?;
    file.write_all(bytes)
        .map_err(io_at(root, "writing", path))?;
    Ok(file)
}

/// Write `content` to `path` through the new file `tmp` renamed over it, so no reader sees it
/// half written; `tmp` is removed if either step fails.
pub(crate) fn write_via(root: &Path, tmp: &Path, path: &Path, content: &[u8]) -> Result<()> {
    let written = write_new(root, tmp, content).and_then(|_| {
        fs::rename(tmp, path)
            .map_err(|e| HarnessError::io(format!("moving {} into place", shown(root, path)), e))
    });
    if written.is_err() {
        let _ = fs::remove_file(tmp);
    }
    written
}

/// Make the entries of `dir` durable (a rename into it, a file created or removed in it).
pub(crate) fn sync_dir(root: &Path, dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_at(root, "syncing the directory", dir))
}

/// Make every path (a file or a directory) durable. The fsyncs are issued together, from up to
/// [`FSYNC_THREADS`] threads started for the call, so the file system commits them in as few
/// journal transactions as it can (on ext4, concurrent fsyncs share one commit); starting the
/// threads costs microseconds against milliseconds of fsyncs, and nothing outlives the call. A
/// path that no longer exists is skipped: whoever removed it made that durable.
pub(crate) fn sync_all(root: &Path, paths: Vec<PathBuf>) -> Result<()> {
    let sync = |path: &PathBuf| match File::open(path).and_then(|f| f.sync_all()) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        other => other.map_err(io_at(root, "syncing", path)),
    };
    let threads = paths.len().min(FSYNC_THREADS);
    if threads <= 1 {
        return paths.iter().try_for_each(sync);
    }
    // Thread `t` syncs paths t, t + threads, t + 2 * threads, ...
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (paths, sync) = (&paths, &sync);
                let work = move || paths.iter().skip(t).step_by(threads).try_for_each(sync);
                std::thread::Builder::new()
                    .name(format!("ddwire-fsync-{t}"))
                    .spawn_scoped(scope, work)
                    // No thread to be had: this share is synced here instead.
                    .map_err(|_| paths.iter().skip(t).step_by(threads).try_for_each(sync))
            })
            .collect();
        let mut first_error = None;
        for handle in handles {
            let synced = match handle {
                Ok(handle) => handle.join().unwrap_or_else(|_| {
                    Err(StoreError::failed("an fsync thread panicked before it answered").into())
                }),
                Err(synced_here) => synced_here,
            };
            if let Err(e) = synced {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    })
}

/// How many fsyncs may run at once.
const FSYNC_THREADS: usize = 8;
