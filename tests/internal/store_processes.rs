//! The run store shared by harness processes, spawned from the built binary: `kill -9` under
//! 16 concurrent invocations, 20 times, with every acknowledged run complete and indexed once
//! and nothing partial ever visible; three harnesses writing one store under load with no
//! index line lost or written twice; and `ddwire runs` reading beside them, never writing.
//!
//! The harnesses run with 64 KiB journal segments, so kills also land in segment rotations,
//! checkpoints and reuse. `DDWIRE_KILL_CYCLES` sets the number of kill cycles (default 20).

use ddwire::agent::builtin::Echo;
use ddwire::harness::store::{RunReader, RunStore};
use ddwire::ids::new_uuid7;
use ddwire::wire::a2a::client::{A2aClient, Target};
use ddwire::wire::a2a::model::{Message, Part, Role, TaskState};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CLIENTS: usize = 16;
const FILES: [&str; 5] = [
    "envelope.json",
    "request.json",
    "spans.jsonl",
    "grounding.txt",
    "agent-result.json",
];

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("ddwire-processes-{tag}-{}", new_uuid7()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An echo agent served in this process, and the config files a harness needs to call it.
struct Setup {
    _agent: ddwire::wire::http::server::Server,
    agents: PathBuf,
    profile: PathBuf,
}

fn setup(dir: &Path) -> Setup {
    let agent = ddwire::agent::server::serve(Arc::new(Echo::new()), "127.0.0.1:0", None).unwrap();
    let agents = dir.join("agents.json");
    std::fs::write(
        &agents,
        json!({"agents": [{"url": agent.base_url()}]}).to_string(),
    )
    .unwrap();
    let profile = dir.join("profile.json");
    std::fs::write(
        &profile,
        r#"{"profile_id": "processes", "version": 1, "agents": {"echo.wire": "advise"}}"#,
    )
    .unwrap();
    Setup {
        _agent: agent,
        agents,
        profile,
    }
}

/// A `ddwire serve` process on a free loopback port.
struct Harness {
    child: Child,
    url: String,
}

impl Harness {
    fn spawn(runs: &Path, setup: &Setup) -> Harness {
        let mut child = Command::new(crate::internal_tests::ddwire_exe())
            .args(["serve", "--port", "0", "--runs"])
            .arg(runs)
            .arg("--agents")
            .arg(&setup.agents)
            .arg("--profile")
            .arg(&setup.profile)
            .args([
                "--acting-for-id",
                "https://orcid.org/0000-0002-1825-0097",
                "--acting-for-name",
                "Josiah Carberry",
            ])
            .env_remove("DD_RUNS_DIR")
            // Small journal segments, so kills land in rotations, checkpoints and reuse too.
            .env("DD_JOURNAL_SEGMENT_BYTES", "65536")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ddwire serve starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = crossbeam_channel::bounded::<String>(1);
        let said = Arc::new(Mutex::new(String::new()));
        let log = Arc::clone(&said);
        std::thread::spawn(move || {
            // Read every line, so the harness never blocks on a full pipe.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("harness on http://").nth(1) {
                    let addr = rest.split_whitespace().next().unwrap_or("").to_string();
                    let _ = tx.try_send(addr);
                }
                let mut log = log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| {
                panic!(
                    "the harness did not say where it listens ({e}); it said:\n{}",
                    said.lock().unwrap()
                )
            });
        Harness {
            child,
            url: format!("http://{addr}"),
        }
    }

    fn kill(mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Invoke echo through the harness at `url` until `stop`, or until the harness stops
/// answering; every run it acknowledged goes to `acked`.
fn load(url: String, stop: Arc<AtomicBool>, acked: Arc<Mutex<Vec<String>>>) {
    let client = A2aClient::default();
    let Ok(card) = client.fetch_card(&url, Duration::from_secs(10)) else {
        return;
    };
    let target = Target::from_card(&card).unwrap();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let id = new_uuid7();
        let doc = json!({"invocation_id": id, "agent_id": "echo.wire",
                         "input": {"schema_class": "Echo", "value": {"n": i, "text": "kill"}}});
        let message = Message::new(Role::User, vec![Part::data(doc)]);
        match client.send_for_task(&target, message, &[], Duration::from_secs(30)) {
            Ok(task) if task.status.state == TaskState::Completed => {
                acked.lock().unwrap().push(id);
            }
            Ok(task) => panic!("a run was refused: {task:?}"),
            Err(_) => return, // the harness is gone
        }
        i += 1;
    }
}

/// How many times each id is in the index; every complete line must be JSON.
fn index_counts(runs: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(runs.join("invocations.jsonl")).unwrap_or_default();
    let mut counts = BTreeMap::new();
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    for line in complete.lines() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("an index line is not JSON ({e}): {line}"));
        *counts
            .entry(v["invocation_id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    counts
}

/// Every run directory visible: each one must be complete (nothing partial is ever visible).
fn visible_runs(runs: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(runs).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if !ddwire::ids::is_uuid7(&name) {
            continue;
        }
        for file in FILES {
            let text = std::fs::read_to_string(runs.join(&name).join(file))
                .unwrap_or_else(|e| panic!("run {name} is partial: {file}: {e}"));
            if file.ends_with(".json") {
                let v: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("run {name}: {file} is not whole: {e}"));
                if file == "envelope.json" {
                    assert_eq!(v["invocation_id"], name.as_str());
                }
            }
        }
        out.insert(name);
    }
    out
}

/// Every acknowledged run is complete and indexed once; with `recovered`, every visible run is
/// indexed exactly once and no unfinished write is left.
fn check(runs: &Path, acked: &[String], recovered: bool) -> usize {
    let visible = visible_runs(runs);
    let counts = index_counts(runs);
    for id in acked {
        assert!(visible.contains(id), "acknowledged run {id} is not stored");
        assert_eq!(
            counts.get(id),
            Some(&1),
            "acknowledged run {id} is not indexed once"
        );
    }
    assert!(counts.values().all(|n| *n == 1), "a run is indexed twice");
    assert!(
        counts.keys().all(|id| visible.contains(id)),
        "the index names a run that is not stored"
    );
    if recovered {
        assert_eq!(
            counts.len(),
            visible.len(),
            "a stored run is missing from the index after recovery"
        );
        let left: Vec<String> = std::fs::read_dir(runs)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with(".tmp-"))
            .collect();
        assert!(left.is_empty(), "unfinished writes left: {left:?}");
    }
    visible.len()
}

#[test]
fn kill_9_under_16_concurrent_invocations_loses_no_acknowledged_run() {
    let cycles: usize = std::env::var("DDWIRE_KILL_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let dir = Dir::new("kill");
    let setup = setup(&dir.0);
    let runs = dir.0.join("runs");
    let mut acked_total: Vec<String> = Vec::new();
    let started = Instant::now();
    for cycle in 0..cycles {
        let harness = Harness::spawn(&runs, &setup);
        // The new harness recovered from the last kill before it listened.
        check(&runs, &acked_total, true);
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let (url, stop, acked) = (harness.url.clone(), stop.clone(), acked.clone());
                std::thread::spawn(move || load(url, stop, acked))
            })
            .collect();
        // Runs are under way before the kill's moment is counted, however slow a loaded
        // machine makes the harness's start: each cycle kills a harness with work in flight.
        let serving = Instant::now();
        while acked.lock().unwrap().is_empty() {
            assert!(
                serving.elapsed() < Duration::from_secs(60),
                "the harness acknowledged no run in 60 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Then a random moment in 150..600 ms (RandomState is seeded at random per process).
        let wait = 150
            + std::hash::BuildHasher::hash_one(
                &std::collections::hash_map::RandomState::new(),
                0u8,
            ) % 450;
        std::thread::sleep(Duration::from_millis(wait));
        harness.kill();
        stop.store(true, Ordering::Relaxed);
        for c in clients {
            c.join().expect("a client thread panicked");
        }
        let acked = std::mem::take(&mut *acked.lock().unwrap());
        acked_total.extend(acked);
        // Straight after the kill, before any recovery: nothing partial is visible.
        check(&runs, &acked_total, false);
        eprintln!(
            "cycle {cycle}: killed after {wait} ms; {} runs acknowledged so far",
            acked_total.len()
        );
    }
    let (store, recovery) = RunStore::open_reporting(&runs).unwrap();
    eprintln!("last recovery: {recovery}");
    let stored = check(&runs, &acked_total, true);
    drop(store);
    eprintln!(
        "{cycles} kills in {:.1} s: {} runs acknowledged, {stored} stored, every one indexed once",
        started.elapsed().as_secs_f64(),
        acked_total.len()
    );
    assert!(acked_total.len() >= cycles, "the harness barely ran");
}

#[test]
fn three_harnesses_share_one_store_beside_a_reader() {
    let dir = Dir::new("three");
    let setup = setup(&dir.0);
    let runs = dir.0.join("runs");
    let harnesses: Vec<Harness> = (0..3).map(|_| Harness::spawn(&runs, &setup)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let url = harnesses[i % 3].url.clone();
            let (stop, acked) = (stop.clone(), acked.clone());
            std::thread::spawn(move || load(url, stop, acked))
        })
        .collect();
    // `ddwire runs` beside the three writers: it always reads, and never writes.
    let reader = {
        let (runs, stop) = (runs.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut listings = 0;
            while !stop.load(Ordering::Relaxed) {
                let out = Command::new(crate::internal_tests::ddwire_exe())
                    .args(["runs", "--json", "--runs"])
                    .arg(&runs)
                    .output()
                    .unwrap();
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let mut seen = BTreeSet::new();
                for line in String::from_utf8(out.stdout).unwrap().lines() {
                    let row: Value = serde_json::from_str(line).unwrap();
                    assert!(
                        seen.insert(row["invocation_id"].as_str().unwrap().to_string()),
                        "a listing named a run twice"
                    );
                }
                listings += 1;
            }
            listings
        })
    };
    // Three seconds, and on a loaded machine as long as it takes the three to store more
    // than 30 runs between them.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) || acked.lock().unwrap().len() <= 30 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the harnesses barely ran"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().expect("a client thread panicked");
    }
    let listings = reader.join().expect("the reader thread panicked");
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    let stored = check(&runs, &acked, true);
    assert_eq!(
        stored,
        acked.len(),
        "a run was stored that nobody acknowledged"
    );
    for h in harnesses {
        h.kill();
    }
    // The three stopped without a checkpoint: a writer replays their journals, and finds
    // nothing to add or remove in the index.
    let (_store, recovery) = RunStore::open_reporting(&runs).unwrap();
    assert!(
        recovery.indexed.is_empty()
            && recovery.duplicates.is_empty()
            && recovery.dropped_lines.is_empty(),
        "{recovery:?}"
    );
    assert_eq!(recovery.writers.len(), 3, "{recovery:?}");
    check(&runs, &acked, true);
    let page = RunReader::open(&runs)
        .unwrap()
        .page(&Default::default())
        .unwrap();
    assert_eq!(page.skipped, 0);
    eprintln!(
        "3 harnesses: {} runs acknowledged and indexed once; {listings} listings beside them",
        acked.len()
    );
    assert!(acked.len() > 30, "the harnesses barely ran");
}
