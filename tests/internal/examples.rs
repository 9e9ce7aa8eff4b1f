//! Every file in `examples/` goes through the CLI as its README says to use it, so none can go
//! stale: the messages are invoked through a harness started with the example agents config,
//! profile and tokens, the Rust example agent is served and invoked, and each run's verdict is
//! reproduced by `ddwire lint`. A file this test does not know is a failure: add it here.

use super::{ddwire, run, text};
use ddwire::agent::{builtin, server};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
/// The token examples/tokens.json holds the digest of, for Josiah Carberry.
const TOKEN: &str = "example-token-do-not-deploy";

/// Files checked elsewhere: the README (read by people), the Python agent (run by the interop
/// suite, `tests/interop/run a2a-python-agent`).
const CHECKED_ELSEWHERE: &[&str] = &["README.md", "python_agent/"];

fn example(path: &str) -> String {
    format!("{EXAMPLES}/{path}")
}

/// Every file under examples/, relative to it.
fn files(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if entry.path().is_dir() {
            files(&entry.path(), &format!("{name}/"), out);
        } else {
            out.push(name);
        }
    }
}

/// A child process killed when dropped, so a failing assertion leaves nothing running.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The example agent binary, built if `cargo test` was asked for one test file only.
fn glossary_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.parent().and_then(Path::parent).unwrap();
    let bin = target.join("examples").join("glossary_agent");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--example", "glossary_agent"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "building the example agent");
    }
    bin
}

/// Read `child`'s stream until a line containing `marker`, within 60 s; the line.
fn line_with(stream: impl std::io::Read + Send + 'static, marker: &'static str) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = String::new();
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if line.contains(marker) {
                let _ = tx.send(Ok(line));
                // Keep draining so the child never blocks on a full pipe.
                continue;
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        let _ = tx.send(Err(seen));
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(line)) => line,
        Ok(Err(seen)) => panic!("the process ended without {marker:?}:\n{seen}"),
        Err(_) => panic!("no {marker:?} within 60 s"),
    }
}

/// `ddwire invoke` of `agent` on the example input `input` (a path under examples/), through the
/// harness at `harness`, as the example token's principal.
fn invoke_as_carberry(harness: &str, agent: &str, input: &str) -> Output {
    run(&[
        "invoke",
        "--harness",
        harness,
        "--token",
        TOKEN,
        "--agent",
        agent,
        "--input",
        &example(input),
    ])
}

/// `ddwire serve` on the example agents config `agents`, the example profile `profile` and
/// the example tokens, its runs in `runs`: the running server and its start-up line.
fn serve_examples(agents: &Path, profile: &str, runs: &Path) -> (Running, String) {
    let mut serve = ddwire()
        .args(["serve", "--port", "0", "--quiet", "--agents"])
        .arg(agents)
        .args(["--profile", &example(profile)])
        .args(["--tokens", &example("tokens.json")])
        .arg("--runs")
        .arg(runs)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = serve.stderr.take().unwrap();
    let running = Running(serve);
    (running, line_with(stderr, "harness on http://"))
}

fn url_in(line: &str) -> String {
    let start = line.find("http://").expect("a URL");
    line[start..]
        .split(|c: char| c.is_whitespace() || c == ')')
        .next()
        .unwrap()
        .to_string()
}

/// The built-in agents and the example agent on free loopback ports: name → base URL.
fn start_agents() -> (
    Vec<ddwire::wire::http::server::Server>,
    Running,
    BTreeMap<String, String>,
) {
    let mut servers = Vec::new();
    let mut urls = BTreeMap::new();
    for (name, _) in builtin::NAMES {
        let agent = builtin::by_name(name).unwrap();
        let s = server::serve(agent, "127.0.0.1:0", None).unwrap();
        urls.insert(name.to_string(), s.base_url());
        servers.push(s);
    }
    let mut child = Command::new(glossary_binary())
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let glossary = Running(child);
    urls.insert("glossary".into(), url_in(&line_with(stdout, "http://")));
    (servers, glossary, urls)
}

/// examples/agents.json with each URL replaced by where that agent was started.
fn agents_config(urls: &BTreeMap<String, String>, dir: &Path) -> PathBuf {
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(example("agents.json")).unwrap()).unwrap();
    for entry in config["agents"].as_array_mut().unwrap() {
        let name = entry["name"].as_str().unwrap().to_string();
        let url = urls
            .get(&name)
            .unwrap_or_else(|| panic!("examples/agents.json names {name:?}, which no agent is"));
        entry["url"] = Value::String(url.clone());
    }
    let path = dir.join("agents.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

#[test]
fn every_example_file_runs_through_the_cli_as_documented() {
    let dir = std::env::temp_dir().join(format!("ddwire-examples-{}", ddwire::ids::new_uuid7()));
    std::fs::create_dir_all(&dir).unwrap();
    let runs = dir.join("runs");
    let mut covered: Vec<String> = Vec::new();

    let (servers, _glossary, urls) = start_agents();
    let agents = agents_config(&urls, &dir);
    covered.push("agents.json".into());
    covered.push("glossary_agent.rs".into());

    // The profile checks, and names every agent the config serves.
    let out = run(&["profile", &example("profile.json")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    for id in [
        "hello.world",
        "stub.abstain",
        "director.route",
        "echo.wire",
        "demo.ungrounded",
        "demo.failing",
        "example.glossary",
    ] {
        assert!(listing.contains(id), "profile.json enables {id}: {listing}");
    }
    covered.push("profile.json".into());

    // The tokens file holds the digest `token hash` gives for the documented token.
    let out = run(&["token", "hash", TOKEN]);
    let digest = text(&out.stdout).trim().to_string();
    let tokens: Value =
        serde_json::from_str(&std::fs::read_to_string(example("tokens.json")).unwrap()).unwrap();
    assert_eq!(
        tokens[&digest]["name"], "Josiah Carberry",
        "tokens.json keys Josiah Carberry by the digest of {TOKEN:?}"
    );
    covered.push("tokens.json".into());

    // A harness on the example configs.
    let (_serve, started) = serve_examples(&agents, "profile.json", &runs);
    assert!(
        started.contains("0 unavailable, 0 incompatible"),
        "{started}"
    );
    let harness = url_in(&started);

    // Each message, to the agent it is named for, as the caller the token names.
    let agent_ids: BTreeMap<&str, &str> = BTreeMap::from([
        ("hello", "hello.world"),
        ("stub", "stub.abstain"),
        ("director", "director.route"),
        ("echo", "echo.wire"),
        ("ungrounded", "demo.ungrounded"),
        ("failing", "demo.failing"),
        ("glossary", "example.glossary"),
    ]);
    let expected: BTreeMap<&str, &str> = BTreeMap::from([
        ("hello", "succeeded"),
        ("stub", "abstained"),
        ("director", "succeeded"),
        ("echo", "succeeded"),
        ("ungrounded", "failed"),
        ("failing", "failed"),
        ("glossary", "succeeded"),
    ]);
    let mut names = Vec::new();
    files(Path::new(&example("messages")), "", &mut names);
    for file in &names {
        let name = file
            .strip_suffix(".json")
            .expect("messages/ holds JSON files");
        let agent = agent_ids
            .get(name)
            .unwrap_or_else(|| panic!("messages/{file} names no agent this test knows"));
        let out = invoke_as_carberry(&harness, agent, &format!("messages/{file}"));
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out.stderr));
        let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            envelope["outcome"]["status"], expected[name],
            "{file}: {envelope}"
        );
        assert_eq!(envelope["acting_for"]["name"], "Josiah Carberry");
        // The stored verdict is reproduced offline.
        let id = envelope["invocation_id"].as_str().unwrap();
        let lint = run(&["lint", id, "--runs", runs.to_str().unwrap()]);
        let stored = std::fs::read_to_string(runs.join(id).join("grounding.txt")).unwrap();
        assert_eq!(text(&lint.stdout), stored, "{file}: {}", text(&lint.stderr));
        if name == "glossary" {
            assert_eq!(
                stored.trim(),
                "grounding: passed [retrieval] (1 retrieval, 1 chat spans)"
            );
        }
        covered.push(format!("messages/{file}"));
    }

    // The request document, sent to the harness as any A2A caller would.
    let out = run(&[
        "send",
        &harness,
        "--token",
        TOKEN,
        "--data",
        &example("request.json"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"succeeded\""));
    covered.push("request.json".into());

    drop(_serve);

    // A referred run and its steward, as the README's session has it.
    let (_steward_serve, started) = serve_examples(&agents, "profile-steward.json", &runs);
    let harness = url_in(&started);
    let out = invoke_as_carberry(&harness, "hello.world", "messages/hello.json");
    let referred: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(referred["outcome"]["status"], "referred", "{referred}");
    assert_eq!(referred["outcome"]["referred_to"], "data_steward");
    let id = referred["invocation_id"].as_str().unwrap();
    let out = run(&[
        "approve",
        id,
        "--harness",
        &harness,
        "--token",
        "example-steward-token-do-not-deploy",
        "--reason",
        "checked",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let approved: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(approved["outcome"]["status"], "succeeded", "{approved}");
    assert_eq!(approved["acting_for"]["name"], "Josiah Carberry");
    let show = run(&["show", id, "--runs", runs.to_str().unwrap()]);
    let shown = text(&show.stdout);
    assert!(
        shown.contains("approved by urn:example:role:data-steward")
            && shown.contains(approved["invocation_id"].as_str().unwrap()),
        "{shown}"
    );
    covered.push("profile-steward.json".into());
    drop(_steward_serve);

    for s in servers {
        s.shutdown();
    }
    std::fs::remove_dir_all(&dir).unwrap();

    let mut all = Vec::new();
    files(Path::new(EXAMPLES), "", &mut all);
    let stale: Vec<&String> = all
        .iter()
        .filter(|f| !covered.contains(f) && !CHECKED_ELSEWHERE.iter().any(|c| f.starts_with(c)))
        .collect();
    assert!(
        stale.is_empty(),
        "examples/ files no test runs: {stale:?}; add them to tests/internal/examples.rs"
    );
}

#[test]
fn the_example_agent_serves_until_stopped_and_says_where() {
    let start = Instant::now();
    let mut child = Command::new(glossary_binary())
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _running = Running(child);
    let url = url_in(&line_with(stdout, "http://"));
    let card = ddwire::wire::a2a::client::A2aClient::default()
        .fetch_card(&url, Duration::from_secs(30))
        .unwrap();
    assert_eq!(card["name"], "example.glossary", "{card}");
    assert!(start.elapsed() < Duration::from_secs(120));
}
