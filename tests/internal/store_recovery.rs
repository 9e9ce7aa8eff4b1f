//! The run store under the failures the Store issue reproduced: a full disk at the index
//! append (on a small tmpfs), a read-only file system, read commands run on a store with crash
//! leftovers, and a mistyped `--runs`. In each, the store stays readable, a writer opens it
//! again, nothing acknowledged is lost, and reading never changes it.
//!
//! Mounting needs root (or `CAP_SYS_ADMIN`); where it is not permitted those tests print why
//! and pass without checking anything (`.ci/run` runs as root).

use super::common;

use common::*;
use ddwire::agent::builtin::Echo;
use ddwire::contract::InvocationRequest;
use ddwire::harness::conductor::Conductor;
use ddwire::harness::policy::Profile;
use ddwire::harness::registry::Registry;
use ddwire::harness::server::{self as harness_server, Harness};
use ddwire::harness::store::{Query, RunReader, RunStore};
use ddwire::harness::testkit::{HARNESS_URL, test_principal};
use ddwire::ids::new_uuid7;
use ddwire::wire::a2a::client::A2aClient;
use ddwire::wire::http::Limits;
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::memory::MemoryNet;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    /// `None`, with a message saying why, where mounting is not permitted.
    fn mount(label: &str, size: &str) -> Option<Tmpfs> {
        let path = std::env::temp_dir().join(format!("ddwire-tmpfs-{label}-{}", new_uuid7()));
        fs::create_dir_all(&path).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { path }),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                    Err(e) => e.to_string(),
                };
                eprintln!(
                    "skipped: cannot mount a tmpfs ({why}); this test needs root where mount(2) is permitted"
                );
                let _ = fs::remove_dir(&path);
                None
            }
        }
    }

    fn remount(&self, options: &str) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        let _ = fs::remove_dir_all(&self.path);
    }
}

fn ddwire(args: &[&str]) -> Output {
    let mut c = Command::new(crate::internal_tests::ddwire_exe());
    for var in [
        "DD_RUNS_DIR",
        "DD_PRINCIPAL_ID",
        "DD_PRINCIPAL_NAME",
        "DD_AGENTS_CONFIG",
    ] {
        c.env_remove(var);
    }
    c.args(args).output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn echo_request(id: &str, value: Value) -> InvocationRequest {
    InvocationRequest::from_value(&json!({
        "invocation_id": id,
        "agent_id": "echo.wire",
        "input": {"schema_class": "Echo", "value": value},
    }))
    .unwrap()
}

/// How many times each id appears in the index.
fn index_counts(runs: &Path) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    let text = fs::read_to_string(runs.join("invocations.jsonl")).unwrap_or_default();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("every index line is JSON");
        *counts
            .entry(v["invocation_id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    counts
}

fn leftovers(runs: &Path) -> Vec<String> {
    fs::read_dir(runs)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(".tmp-"))
        .collect()
}

/// Fill the file system `dir` is on with a file, and free `pages` pages of it.
fn fill_leaving(dir: &Path, pages: u64) -> PathBuf {
    let path = dir.join("filler");
    let mut file = File::create(&path).unwrap();
    for chunk in [64 * 1024, 4096] {
        let block = vec![0xa5u8; chunk];
        while file.write_all(&block).is_ok() {}
    }
    let len = file.metadata().unwrap().len();
    file.set_len(len.saturating_sub(pages * 4096)).unwrap();
    path
}

/// A store opened on a disk with less room than a journal segment written ahead (1 MiB of
/// zeros) still opens: its segment grows as runs come instead, so the harness starts, reads
/// and recovers on a nearly full disk, and stores the runs that fit.
#[test]
fn a_store_opens_and_stores_on_a_disk_too_full_to_write_its_journal_ahead() {
    let Some(fs_) = Tmpfs::mount("enospc-open", "2m") else {
        return;
    };
    let runs = fs_.path.join("runs");
    fs::create_dir_all(&runs).unwrap();
    let filler = fill_leaving(&fs_.path, 64);
    let (conductor, _net) = bare_conductor(vec![Arc::new(Echo::new())], &runs);
    let id = new_uuid7();
    let run = conductor
        .invoke(echo_request(&id, json!("x")), &test_principal())
        .unwrap();
    assert_eq!(run.envelope.outcome.status.as_str(), "succeeded");
    assert_eq!(index_counts(&runs).get(&id), Some(&1));
    let segments: Vec<u64> = fs::read_dir(runs.join(".ddwire"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".wal"))
        .map(|e| e.metadata().unwrap().len())
        .collect();
    assert!(
        !segments.is_empty() && segments.iter().all(|len| *len < 1 << 20),
        "a segment as long as one written ahead: {segments:?}"
    );
    drop(conductor);
    fs::remove_file(filler).unwrap();
    let store = RunStore::open(&runs).unwrap();
    assert!(store.has(&id));
}

/// The issue's ENOSPC: a full disk at the index append left a torn line, a failed task for a
/// run whose directory was in place, and a retry refused as a duplicate. Here the free space
/// is swept page by page through every step of storing a run (its files, the journal, the
/// index): at each point the run is either stored, complete and indexed once, or not stored at
/// all (no directory, the index byte for byte as it was, nothing left behind) and the same id
/// goes through once space is freed. Then a writer opens the store again and everything
/// acknowledged is there.
#[test]
fn a_full_disk_never_leaves_a_run_half_stored() {
    let Some(fs_) = Tmpfs::mount("enospc", "2m") else {
        return;
    };
    let runs = fs_.path.join("runs");
    let (conductor, _net) = bare_conductor(vec![Arc::new(Echo::new())], &runs);
    let invoke = |id: &str, value: &Value| {
        conductor.invoke(echo_request(id, value.clone()), &test_principal())
    };
    let mut acked: Vec<String> = Vec::new();

    // A probe run gives the length of an index line for a value of known length.
    let probe = new_uuid7();
    invoke(&probe, &json!("x")).unwrap();
    acked.push(probe);
    let line_of = |runs: &Path| {
        fs::read_to_string(runs.join("invocations.jsonl"))
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .len() as u64
    };
    let probe_line = line_of(&runs);

    let mut failures: Vec<String> = Vec::new();
    for round in 0..3 {
        // A value whose index line crosses into a new page by a little: the index append then
        // needs exactly one more page, after everything else the run needs.
        let index_len = fs::metadata(runs.join("invocations.jsonl")).unwrap().len();
        let spare = 4096 - (index_len + probe_line) % 4096;
        let value = json!("x".repeat((1 + spare + 40 + round * 7) as usize));
        for pages in 0..40 {
            let filler = fill_leaving(&fs_.path, pages);
            let id = new_uuid7();
            let index_before = fs::read(runs.join("invocations.jsonl")).unwrap();
            match invoke(&id, &value) {
                Ok(run) => {
                    assert_eq!(run.envelope.outcome.status.as_str(), "succeeded");
                    assert_eq!(index_counts(&runs).get(&id), Some(&1));
                    fs::remove_file(&filler).unwrap();
                    acked.push(id);
                    break;
                }
                Err(e) => {
                    let message = e.to_string();
                    assert!(message.contains("No space left"), "{message}");
                    assert!(!runs.join(&id).exists(), "{message}: a directory was left");
                    assert_eq!(
                        fs::read(runs.join("invocations.jsonl")).unwrap(),
                        index_before,
                        "{message}: the index changed"
                    );
                    assert!(
                        leftovers(&runs).is_empty(),
                        "{message}: {:?}",
                        leftovers(&runs)
                    );
                    assert!(
                        RunReader::open(&runs)
                            .unwrap()
                            .page(&Query::default())
                            .is_ok()
                    );
                    fs::remove_file(&filler).unwrap();
                    // Space freed: the same id goes through.
                    invoke(&id, &value).unwrap_or_else(|e| panic!("the retry of {id}: {e}"));
                    assert_eq!(index_counts(&runs).get(&id), Some(&1));
                    acked.push(id);
                    failures.push(message);
                }
            }
        }
    }
    eprintln!(
        "{} runs stored, {} refused on a full disk ({} at the index append)",
        acked.len(),
        failures.len(),
        failures.iter().filter(|m| m.contains("run index")).count()
    );
    assert!(
        failures
            .iter()
            .any(|m| m.contains("appending to the run index")),
        "the sweep never hit the index append: {failures:#?}"
    );
    assert!(
        failures
            .iter()
            .any(|m| m.contains("creating") || m.contains("writing"))
    );

    // The harness restarts: a writer opens the store, and every acknowledged run is there once.
    drop(conductor);
    let (store, recovery) = RunStore::open_reporting(&runs).unwrap();
    assert!(
        recovery.indexed.is_empty() && recovery.dropped_lines.is_empty(),
        "{recovery:?}"
    );
    let counts = index_counts(&runs);
    for id in &acked {
        assert_eq!(counts.get(id), Some(&1), "{id}");
        assert!(store.has(id));
    }
    assert_eq!(counts.len(), acked.len());
}

/// Every path under `dir` with its bytes (for files) and modification time: what a reader
/// must never change.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Option<Vec<u8>>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let bytes = if meta.is_dir() {
                todo.push(path.clone());
                None
            } else {
                Some(fs::read(&path).unwrap())
            };
            out.insert(path, (bytes, meta.modified().unwrap()));
        }
        out.insert(
            d.clone(),
            (None, fs::metadata(&d).unwrap().modified().unwrap()),
        );
    }
    out
}

/// A store holding three runs, and a harness over it that stays open (a live writer).
fn populated(runs: &Path) -> (Conductor, MemoryNet, Vec<String>) {
    let (conductor, net) = bare_conductor(vec![Arc::new(Echo::new())], runs);
    let ids: Vec<String> = (0..3)
        .map(|i| {
            let id = new_uuid7();
            conductor
                .invoke(echo_request(&id, json!(i)), &test_principal())
                .unwrap();
            id
        })
        .collect();
    (conductor, net, ids)
}

/// Every read route of a harness over a read-only store: `(path, status)`.
fn read_routes(runs: &Path, id: &str) -> Vec<(String, u16)> {
    let net = MemoryNet::new();
    let client = A2aClient::new(HttpClient::memory(net.clone()));
    let store = RunStore::open_read_only(runs).unwrap();
    let profile = Profile::from_bytes(br#"{"profile_id": "ro", "agents": {}}"#, "ro.json").unwrap();
    let conductor = Conductor::new(Registry::default(), profile, store, client.clone());
    let harness = Arc::new(Harness::new(
        conductor,
        Some(ddwire::harness::identity::Authenticator::Operator(
            test_principal(),
        )),
        HARNESS_URL,
    ));
    net.serve(
        "harness.test",
        harness_server::handler(Arc::clone(&harness)),
        Limits::DEFAULT,
    );
    let prefix = &id[..16];
    let mut out = Vec::new();
    for path in [
        "/runs".to_string(),
        "/runs?limit=2".to_string(),
        format!("/runs/{id}"),
        format!("/runs/{prefix}"),
        format!("/runs/{prefix}/spans"),
        format!("/runs/{id}/agent-result"),
        "/conversations".to_string(),
        format!("/agui/runs/{prefix}"),
    ] {
        let r = client
            .http
            .send(ClientRequest::get(format!("{HARNESS_URL}{path}"), T))
            .unwrap();
        out.push((path, r.status));
    }
    // An invocation is refused with a clear reason, and nothing is written.
    let refused = harness
        .conductor
        .invoke(echo_request(&new_uuid7(), json!(1)), &test_principal())
        .unwrap_err();
    assert!(refused.to_string().contains("read-only"), "{refused}");
    out
}

/// The issue's read commands that wrote: `runs` deleted `.tmp-*` entries, cut a last line that
/// was not JSON, and appended duplicate index lines beside a live writer. Every read command,
/// route and reader call on a store with crash leftovers now leaves every byte and timestamp
/// as it was.
#[test]
fn reading_never_changes_the_store() {
    let dir = TempDir::new("readers");
    let runs = dir.path().join("runs");
    let (conductor, _net, ids) = populated(&runs);
    // Crash leftovers of a writer in another process: a temporary directory, a torn last
    // index line, a stopped writer's lock and journal, a run directory not indexed.
    fs::create_dir(runs.join(format!(".tmp-424242-00000000deadbeef-0000-{}", new_uuid7())))
        .unwrap();
    OpenOptions::new()
        .append(true)
        .open(runs.join("invocations.jsonl"))
        .unwrap()
        .write_all(b"{\"invocation_id\":\"01")
        .unwrap();
    fs::write(runs.join(".ddwire/writer-424242-00000000deadbeef.lock"), "").unwrap();
    fs::write(
        runs.join(".ddwire/writer-424242-00000000deadbeef.0.wal"),
        "ddwirej1",
    )
    .unwrap();
    let unindexed = new_uuid7();
    fs::create_dir(runs.join(&unindexed)).unwrap();
    fs::write(
        runs.join(&unindexed).join("envelope.json"),
        format!("{{\"invocation_id\": \"{unindexed}\"}}"),
    )
    .unwrap();
    let before = snapshot(&runs);
    std::thread::sleep(std::time::Duration::from_millis(20));

    let store = runs.to_str().unwrap();
    for args in [
        vec!["runs", "--runs", store],
        vec!["runs", "--json", "--limit", "1", "--runs", store],
        vec![
            "runs",
            "--agent",
            "echo.wire",
            "--since",
            "2020-01-01",
            "--runs",
            store,
        ],
        vec!["show", &ids[0][..14], "--runs", store],
        vec!["replay", &ids[1], "--runs", store],
    ] {
        let out = ddwire(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let listed = ddwire(&["runs", "--runs", store]);
    assert_eq!(text(&listed.stdout).lines().count(), 3);
    assert!(
        text(&listed.stdout)
            .lines()
            .next()
            .unwrap()
            .starts_with(&ids[2])
    );
    let spans = runs.join(&ids[0]).join("spans.jsonl");
    let envelope = runs.join(&ids[0]).join("envelope.json");
    let out = ddwire(&["lint", spans.to_str().unwrap(), envelope.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let reader = RunReader::open(&runs).unwrap();
    assert_eq!(reader.page(&Query::default()).unwrap().rows.len(), 3);
    assert_eq!(reader.resolve(&ids[0][..20]).unwrap(), ids[0]);
    for (path, status) in read_routes(&runs, &ids[0]) {
        assert_eq!(status, 200, "{path}");
    }
    assert_eq!(snapshot(&runs), before, "a reader changed the store");
    drop(conductor);
}

/// `runs`, `show` and `replay` exited 2 on a read-only store. On a read-only file system they
/// work, as do the reader, the GET routes of a harness opened read-only, and `serve
/// --read-only`; a writer is refused with the reason.
#[test]
fn a_read_only_store_reads() {
    let Some(fs_) = Tmpfs::mount("readonly", "16m") else {
        return;
    };
    let runs = fs_.path.join("runs");
    let (conductor, _net, ids) = populated(&runs);
    drop(conductor);
    fs_.remount("ro");
    assert!(
        fs::write(fs_.path.join("probe"), "x").is_err(),
        "the remount did not take"
    );

    let store = runs.to_str().unwrap();
    let out = ddwire(&["runs", "--runs", store]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 3);
    for command in ["show", "replay"] {
        let out = ddwire(&[command, &ids[1][..15], "--runs", store]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{command}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stdout).contains(&ids[1]), "{command}");
    }
    for (path, status) in read_routes(&runs, &ids[2]) {
        assert_eq!(status, 200, "{path}");
    }
    let err = RunStore::open(&runs).unwrap_err().to_string();
    assert!(err.contains("Read-only file system"), "{err}");
}

/// `ddwire show ID` from another directory said `no run …` without saying where it looked;
/// a mistyped `--runs` was created. Now both name the directory and say how to name another,
/// and nothing is created.
#[test]
fn a_mistyped_store_or_run_is_an_error_naming_where_it_looked() {
    let dir = TempDir::new("mistyped");
    let typo = dir.path().join("rnus");
    let out = ddwire(&["runs", "--runs", typo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains(typo.to_str().unwrap()), "{err}");
    assert!(err.contains("--runs DIR or DD_RUNS_DIR"), "{err}");
    assert!(!typo.exists(), "a reader created the store");

    let runs = dir.path().join("runs");
    let (conductor, _net, ids) = populated(&runs);
    let absolute = std::path::absolute(&runs).unwrap();
    let missing = new_uuid7();
    let out = ddwire(&["show", &missing, "--runs", runs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "no run {missing} in the run store {}",
            absolute.display()
        )),
        "{err}"
    );
    assert!(err.contains("DD_RUNS_DIR"), "{err}");

    // A prefix all three runs share is ambiguous, and the candidates are named.
    let shared = common_prefix(&ids);
    let out = ddwire(&["show", &shared, "--runs", runs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("matches 3 runs"), "{err}");
    assert!(ids.iter().all(|id| err.contains(id)), "{err}");
    drop(conductor);
}

fn common_prefix(ids: &[String]) -> String {
    let first = &ids[0];
    let n = (0..first.len())
        .take_while(|&i| {
            ids.iter()
                .all(|id| id.as_bytes().get(i) == first.as_bytes().get(i))
        })
        .count();
    first[..n.max(1)].to_string()
}
