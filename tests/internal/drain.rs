//! Drain on SIGTERM, against the real binary: a run in flight when the signal arrives
//! finishes and is stored, a new connection is refused, and the process exits 0.

#![cfg(unix)]

use super::common;
use common::*;
use ddwire::wire::a2a::client::{A2aClient, Target};
use ddwire::wire::a2a::model::TaskState;
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A spawned `ddwire` whose stderr is collected; killed if the test ends first.
struct Spawned {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Spawned {
    /// `ddwire args…` with its stderr piped, clear of the environment a developer may have set.
    fn command(args: &[&str]) -> Command {
        let mut command = Command::new(crate::internal_tests::ddwire_exe());
        command
            .args(args)
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("DD_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command
    }

    fn start(args: &[&str]) -> Spawned {
        let mut child = Spawned::command(args).spawn().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut all = sink.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        Spawned { child, stderr }
    }

    /// [`Spawned::start`], but the reader of its stderr hangs up after the first line holding
    /// `marker`, which it returns: every later diagnostic meets a closed pipe.
    fn start_and_hang_up(args: &[&str], marker: &str) -> (Spawned, String) {
        let mut child = Spawned::command(args).spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let line = loop {
            match lines.next() {
                Some(Ok(line)) if line.contains(marker) => break line,
                Some(Ok(line)) => seen.push_str(&(line + "\n")),
                _ => panic!("no {marker:?} before stderr ended:\n{seen}"),
            }
        };
        drop(lines);
        let spawned = Spawned {
            child,
            stderr: Arc::new(Mutex::new(format!("(stderr closed after {marker:?})"))),
        };
        (spawned, line)
    }

    /// The first stderr line containing `marker`, waiting up to 30 s.
    fn line_with(&self, marker: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let all = self.stderr.lock().unwrap().clone();
            if let Some(line) = all.lines().find(|l| l.contains(marker)) {
                return line.to_string();
            }
            assert!(Instant::now() < deadline, "no {marker:?} in:\n{all}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Send SIG`name` with `kill` (procps), or Python's `os.kill` where there is no `kill`
    /// binary: the test crate stays free of `unsafe`.
    fn signal(&self, name: &str) {
        let pid = self.child.id().to_string();
        let status = match Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
        {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Command::new("python3")
                .args([
                    "-c",
                    &format!("import os, signal; os.kill({pid}, signal.SIG{name})"),
                ])
                .status()
                .expect("neither kill nor python3 is installed to send a signal"),
            other => other.unwrap(),
        };
        assert!(status.success(), "sending SIG{name} failed");
    }

    /// The exit status, waiting up to `limit`.
    fn exit_within(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "still running after {limit:?}:\n{}",
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `http://127.0.0.1:PORT` from a start-up line naming it after `prefix`.
fn url_after(line: &str, prefix: &str) -> String {
    let rest = line.split(prefix).nth(1).expect("the address follows");
    let addr = rest.split([' ', ')']).next().unwrap();
    format!("http://{addr}")
}

fn get_json(url: &str) -> (u16, Value) {
    let r = HttpClient::tcp()
        .send(ClientRequest::get(url, Duration::from_secs(10)))
        .expect("the server answers");
    (
        r.status,
        serde_json::from_slice(&r.body).unwrap_or(Value::Null),
    )
}

/// An echo agent that takes `delay` seconds over each run (with `agent_drain` as its
/// `--drain-timeout`, or the default), and a harness in front of it that may call it, drains
/// within `serve_drain` seconds and stores its runs in `dir/runs`. Returns the agent, the
/// harness and the harness's URL.
fn echo_behind_a_harness(
    dir: &TempDir,
    delay: &str,
    agent_drain: Option<&str>,
    serve_drain: &str,
) -> (Spawned, Spawned, String) {
    let mut agent_args = vec!["agent", "echo", "--port", "0", "--delay", delay, "--quiet"];
    if let Some(drain) = agent_drain {
        agent_args.extend(["--drain-timeout", drain]);
    }
    let agent = Spawned::start(&agent_args);
    let agent_url = url_after(&agent.line_with("listening on"), "listening on http://");
    let agents = dir.path().join("agents.json");
    std::fs::write(&agents, json!({"agents": [{"url": agent_url}]}).to_string()).unwrap();
    let profile = dir.path().join("profile.json");
    std::fs::write(
        &profile,
        json!({"profile_id": "drain", "version": 1, "agents": {"echo.wire": "advise"}}).to_string(),
    )
    .unwrap();
    let serve = Spawned::start(&[
        "serve",
        "--port",
        "0",
        "--agents",
        agents.to_str().unwrap(),
        "--profile",
        profile.to_str().unwrap(),
        "--runs",
        dir.path().join("runs").to_str().unwrap(),
        "--acting-for-id",
        "urn:test:operator",
        "--acting-for-name",
        "Op",
        "--drain-timeout",
        serve_drain,
        "--quiet",
    ]);
    let harness = url_after(&serve.line_with("harness on"), "harness on http://");
    (agent, serve, harness)
}

/// A blocking send of an echo run to `harness`, on a thread of its own, once the harness says
/// it is in flight: the run's id, and the call to join for its answer.
fn run_in_flight(
    harness: &str,
    value: i64,
) -> (
    String,
    std::thread::JoinHandle<Result<ddwire::wire::a2a::model::Task, ddwire::wire::WireError>>,
) {
    let client = A2aClient::default();
    let target = Target::from_card(&client.fetch_card(harness, T).unwrap()).unwrap();
    let doc = request("echo.wire", json!({"schema_class": "Echo", "value": value}));
    let id = doc["invocation_id"].as_str().unwrap().to_string();
    let call = std::thread::spawn(move || {
        client.send_for_task(
            &target,
            a2a_message(vec![doc], None),
            &[],
            Duration::from_secs(60),
        )
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while get_json(&format!("{harness}/healthz")).1["runs_in_flight"] != 1 {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    (id, call)
}

#[test]
fn sigterm_drains_a_run_in_flight_to_the_store_refuses_new_connections_and_exits_0() {
    let dir = TempDir::new("drain");
    // An echo agent that takes 3 s over each run: long enough to be caught in flight.
    let (mut agent, mut serve, harness) = echo_behind_a_harness(&dir, "3", None, "30");
    let runs = dir.path().join("runs");
    assert_eq!(get_json(&format!("{harness}/healthz")).0, 200);

    // A run in flight: the harness is waiting on the agent.
    let (id, call) = run_in_flight(&harness, 7);

    serve.signal("TERM");
    serve.line_with("SIGTERM: draining");
    // The listener is closed: a new connection is refused while the run goes on.
    let addr = harness.trim_start_matches("http://").to_string();
    assert!(
        std::net::TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_secs(5))
            .is_err(),
        "a new connection was accepted during the drain"
    );
    assert!(
        serve.child.try_wait().unwrap().is_none(),
        "serve exited before its run finished"
    );

    let task = call.join().unwrap().expect("the run in flight is answered");
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(envelope_of(&task)["outcome"]["status"], "succeeded");
    let status = serve.exit_within(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", serve.stderr.lock().unwrap());
    serve.line_with("drained in");
    assert_eq!(stored_envelope(&runs, &id)["invocation_id"], id.as_str());

    // The agent drains too.
    agent.signal("INT");
    assert_eq!(agent.exit_within(Duration::from_secs(30)).code(), Some(0));
}

#[test]
fn a_drain_that_runs_out_of_time_ends_the_agui_stream_with_run_error_and_still_exits_0() {
    let dir = TempDir::new("drain-cut");
    let (mut agent, mut serve, harness) = echo_behind_a_harness(&dir, "60", Some("1"), "0.5");
    let doc = request("echo.wire", json!({"schema_class": "Echo", "value": 1}));
    let body = agui_body(&doc, &new_thread());
    let url = format!("{harness}/agui");
    let stream = std::thread::spawn(move || {
        HttpClient::tcp()
            .send(
                ClientRequest::post_json(
                    url,
                    body.to_string().into_bytes(),
                    Duration::from_secs(60),
                )
                .header("Accept", "text/event-stream"),
            )
            .map(|r| String::from_utf8_lossy(&r.body).into_owned())
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while get_json(&format!("{harness}/healthz")).1["runs_in_flight"] != 1 {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    serve.signal("TERM");
    let text = stream.join().unwrap().expect("the stream is answered");
    let events = events(&text);
    let last = events.last().expect("events");
    assert_eq!(last["type"], "RUN_ERROR", "{text}");
    assert_eq!(last["code"], "shutting_down", "{text}");
    assert_eq!(serve.exit_within(Duration::from_secs(30)).code(), Some(0));
    serve.line_with("drain timeout");
    agent.signal("TERM");
    // The agent's own drain gives up on its 60 s run after its 1 s drain timeout.
    assert_eq!(agent.exit_within(Duration::from_secs(30)).code(), Some(0));
}

/// A free loopback port, and an agents file in `dir` naming a hello agent there, which is
/// not started yet.
fn agents_naming_a_hello_not_yet_started(dir: &TempDir) -> (u16, std::path::PathBuf) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let agents = dir.path().join("agents.json");
    std::fs::write(
        &agents,
        json!({"agents": [{"name": "hello", "url": format!("http://127.0.0.1:{port}")}]})
            .to_string(),
    )
    .unwrap();
    (port, agents)
}

/// Start the hello agent on `port` and invoke it through `harness`: the agent, and the task
/// the harness answered with.
fn start_hello_and_run_it(port: u16, harness: &str) -> (Spawned, ddwire::wire::a2a::model::Task) {
    let agent = Spawned::start(&["agent", "hello", "--port", &port.to_string(), "--quiet"]);
    agent.line_with("listening on");
    let client = A2aClient::default();
    let target = Target::from_card(&client.fetch_card(harness, T).unwrap()).unwrap();
    let doc = request("hello.world", message("hi"));
    let task = client
        .send_for_task(&target, a2a_message(vec![doc], None), &[], T)
        .unwrap();
    (agent, task)
}

/// Issue 13's dead end: `serve` started before its agents says they are unavailable and will
/// be fetched again, and then admits one that comes up.
#[test]
fn serve_started_before_its_agents_says_they_will_be_retried_and_admits_them() {
    let dir = TempDir::new("serve-first");
    let (port, agents) = agents_naming_a_hello_not_yet_started(&dir);
    let mut serve = Spawned::start(&[
        "serve",
        "--port",
        "0",
        "--agents",
        agents.to_str().unwrap(),
        "--runs",
        dir.path().join("runs").to_str().unwrap(),
        "--acting-for-id",
        "urn:test:operator",
        "--acting-for-name",
        "Op",
        "--quiet",
    ]);
    let harness = url_after(&serve.line_with("harness on"), "harness on http://");
    serve.line_with("[hello] unavailable: cannot read the agent card");
    let retried = serve.line_with("fetched again in the background");
    assert!(retried.contains("start them in any order"), "{retried}");
    assert_eq!(get_json(&format!("{harness}/healthz")).0, 503);

    let (mut agent, task) = start_hello_and_run_it(port, &harness);
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(get_json(&format!("{harness}/healthz")).0, 200);
    serve.signal("TERM");
    assert_eq!(serve.exit_within(Duration::from_secs(30)).code(), Some(0));
    agent.signal("TERM");
    assert_eq!(agent.exit_within(Duration::from_secs(30)).code(), Some(0));
}

#[test]
fn a_second_signal_during_the_drain_exits_at_once_with_status_1() {
    let dir = TempDir::new("drain-twice");
    let (mut agent, mut serve, harness) = echo_behind_a_harness(&dir, "60", Some("0"), "600");
    let client = A2aClient::default();
    let target = Target::from_card(&client.fetch_card(&harness, T).unwrap()).unwrap();
    let doc = request("echo.wire", json!({"schema_class": "Echo", "value": 1}));
    let _call = std::thread::spawn(move || {
        let _ = client.send_for_task(
            &target,
            a2a_message(vec![doc], None),
            &[],
            Duration::from_secs(90),
        );
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while get_json(&format!("{harness}/healthz")).1["runs_in_flight"] != 1 {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    serve.signal("TERM");
    serve.line_with("SIGTERM: draining");
    serve.signal("INT");
    // Well before the 600 s drain timeout.
    assert_eq!(serve.exit_within(Duration::from_secs(30)).code(), Some(1));
    serve.line_with("SIGINT during the drain: exiting now");
    agent.signal("TERM");
    assert_eq!(agent.exit_within(Duration::from_secs(30)).code(), Some(0));
}

fn new_thread() -> String {
    ddwire::ids::new_uuid7()
}

#[test]
fn sigterm_drains_the_relay_a_forward_in_flight_is_answered_and_it_exits_0() {
    let dir = TempDir::new("drain-relay");
    let agent = Spawned::start(&["agent", "echo", "--port", "0", "--delay", "3", "--quiet"]);
    let agent_url = url_after(&agent.line_with("listening on"), "listening on http://");
    let peers = dir.path().join("peers.json");
    std::fs::write(
        &peers,
        json!({"peers": [{"id": "echo", "url": agent_url}]}).to_string(),
    )
    .unwrap();
    let mut relay = Spawned::start(&[
        "relay",
        "--port",
        "0",
        "--peers",
        peers.to_str().unwrap(),
        "--peer-allow",
        "127.0.0.1/32",
        "--drain-timeout",
        "30",
        "--quiet",
    ]);
    let base = url_after(&relay.line_with("relay: on"), "relay: on http://");
    assert_eq!(get_json(&format!("{base}/healthz")).0, 200);

    // A forward in flight: the echo agent works on it for 3 s.
    let url = format!("{base}/peers/echo/a2a");
    let call = std::thread::spawn(move || {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
            "kind": "message", "role": "user", "messageId": "m-drain", "parts": [{"kind": "text", "text": "slow"}]}}});
        HttpClient::tcp().send(ClientRequest::post_json(
            &url,
            body.to_string().into_bytes(),
            Duration::from_secs(60),
        ))
    });
    std::thread::sleep(Duration::from_millis(500));
    relay.signal("TERM");
    relay.line_with("SIGTERM: draining");
    let addr = base.trim_start_matches("http://").to_string();
    assert!(
        std::net::TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_secs(5))
            .is_err(),
        "a new connection was accepted during the drain"
    );
    let answer = call
        .join()
        .unwrap()
        .expect("the forward in flight is answered");
    let reply: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(reply["result"]["status"]["state"], "completed", "{reply}");
    let status = relay.exit_within(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{}", relay.stderr.lock().unwrap());
    relay.line_with("drained in");
}

/// The writer files a run store keeps while a process writes to it (`writer-*.wal`,
/// `writer-*.lock`): none may be left after a clean drain, or the next start reports a
/// recovery an operator reads as a crash.
fn writer_files(runs: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(runs.join(".ddwire"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("writer-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_blocking_send_still_running_at_the_drain_deadline_is_answered_shutting_down_and_stored() {
    let dir = TempDir::new("drain-blocking");
    let (mut agent, mut serve, harness) = echo_behind_a_harness(&dir, "60", Some("1"), "0.5");
    let runs = dir.path().join("runs");
    let (id, call) = run_in_flight(&harness, 3);
    serve.signal("TERM");
    match call.join().unwrap() {
        Err(ddwire::wire::WireError::JsonRpc { code, message, .. }) => {
            assert_eq!(code, -32042, "{message}");
            assert!(message.starts_with("shutting_down"), "{message}");
        }
        other => panic!("expected a shutting_down error, got {other:?}"),
    }
    assert_eq!(serve.exit_within(Duration::from_secs(30)).code(), Some(0));
    // Nothing lost: the run is stored, failed as canceled, and the store closed cleanly.
    let stored = stored_envelope(&runs, &id);
    assert_eq!(stored["outcome"]["status"], "failed", "{stored}");
    assert!(writer_files(&runs).is_empty(), "{:?}", writer_files(&runs));
    agent.signal("TERM");
    assert_eq!(agent.exit_within(Duration::from_secs(30)).code(), Some(0));
}

#[test]
fn a_clean_drain_after_a_delegation_leaves_no_writer_for_the_next_start() {
    let dir = TempDir::new("drain-delegation");
    let mut director = Spawned::start(&["agent", "director", "--port", "0", "--quiet"]);
    let mut hello = Spawned::start(&["agent", "hello", "--port", "0", "--quiet"]);
    let director_url = url_after(&director.line_with("listening on"), "listening on http://");
    let hello_url = url_after(&hello.line_with("listening on"), "listening on http://");
    let agents = dir.path().join("agents.json");
    std::fs::write(
        &agents,
        json!({"agents": [{"url": director_url, "timeout_s": 60}, {"url": hello_url}]}).to_string(),
    )
    .unwrap();
    let runs = dir.path().join("runs");
    let mut serve = Spawned::start(&[
        "serve",
        "--port",
        "0",
        "--agents",
        agents.to_str().unwrap(),
        "--runs",
        runs.to_str().unwrap(),
        "--acting-for-id",
        "urn:test:operator",
        "--acting-for-name",
        "Op",
        "--quiet",
    ]);
    let harness = url_after(&serve.line_with("harness on"), "harness on http://");
    let client = A2aClient::default();
    let target = Target::from_card(&client.fetch_card(&harness, T).unwrap()).unwrap();
    let doc = request("director.route", message("hello there"));
    let task = client
        .send_for_task(
            &target,
            a2a_message(vec![doc], None),
            &[],
            Duration::from_secs(60),
        )
        .expect("the harness answers");
    let envelope = envelope_of(&task);
    assert_eq!(
        envelope["delegations"].as_array().map(Vec::len),
        Some(1),
        "{envelope}"
    );
    // The director's kept-alive callback connection is still open to the harness.
    serve.signal("TERM");
    assert_eq!(serve.exit_within(Duration::from_secs(30)).code(), Some(0));
    assert!(writer_files(&runs).is_empty(), "{:?}", writer_files(&runs));
    for agent in [&mut director, &mut hello] {
        agent.signal("TERM");
        assert_eq!(agent.exit_within(Duration::from_secs(30)).code(), Some(0));
    }
}

/// `eprintln!` panics when stderr is closed: a harness whose log reader went away (a
/// supervisor restarted, a pipe's reader ended) died on its next diagnostic. Now every line
/// after the hang-up (start-up notes, the registry admitting an agent, the drain) meets the
/// closed pipe, and the harness serves on and drains with status 0.
#[test]
fn a_harness_whose_stderr_reader_hung_up_keeps_serving_and_drains_with_status_0() {
    let dir = TempDir::new("stderr-gone");
    let (port, agents) = agents_naming_a_hello_not_yet_started(&dir);
    let (mut serve, line) = Spawned::start_and_hang_up(
        &[
            "serve",
            "--port",
            "0",
            "--agents",
            agents.to_str().unwrap(),
            "--runs",
            dir.path().join("runs").to_str().unwrap(),
            "--acting-for-id",
            "urn:test:operator",
            "--acting-for-name",
            "Op",
        ],
        "harness on",
    );
    let harness = url_after(&line, "harness on http://");
    // Its start-up notes after that line go to the closed pipe first.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(get_json(&format!("{harness}/healthz")).0, 503);

    let (mut agent, task) = start_hello_and_run_it(port, &harness);
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(
        serve.child.try_wait().unwrap(),
        None,
        "the harness is still running"
    );
    serve.signal("TERM");
    assert_eq!(serve.exit_within(Duration::from_secs(30)).code(), Some(0));
    agent.signal("TERM");
    assert_eq!(agent.exit_within(Duration::from_secs(30)).code(), Some(0));
}
