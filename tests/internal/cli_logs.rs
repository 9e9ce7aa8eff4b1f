//! The logging flags of `ddwire serve`, `invoke` and `send`, and `ddwire wirelog`: real
//! processes on loopback.

use super::common::TempDir;
use super::{ddwire, text};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `ddwire serve` on a free port with no agents, its stderr collected.
struct Serve {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
}

impl Serve {
    fn start(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Serve {
        let agents = dir.join("agents.json");
        std::fs::write(&agents, r#"{"agents": []}"#).unwrap();
        let mut command = ddwire();
        command
            .args(["serve", "--port", "0", "--agents"])
            .arg(&agents)
            .arg("--runs")
            .arg(dir.join("runs"))
            .args([
                "--acting-for-id",
                "urn:test:operator",
                "--acting-for-name",
                "Op",
            ])
            .args(extra)
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = crossbeam_channel::bounded::<String>(1);
        {
            let stderr = Arc::clone(&stderr);
            let pipe = child.stderr.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    if let Some(rest) = line.split("harness on ").nth(1) {
                        let _ = tx.try_send(rest.split(' ').next().unwrap_or("").to_string());
                    }
                    let mut all = stderr.lock().unwrap();
                    all.push_str(&line);
                    all.push('\n');
                }
            });
        }
        let url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("serve starts");
        Serve { child, url, stderr }
    }

    /// Its stderr once `want` request lines have been logged (or 10 s have passed).
    fn stderr_after(&self, want: usize, is_request: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let all = self.stderr.lock().unwrap().clone();
            if all.lines().filter(|l| is_request(l)).count() >= want || Instant::now() > deadline {
                return all;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(url: &str) -> u16 {
    ddwire::wire::http::client::HttpClient::tcp()
        .send(ddwire::wire::http::client::ClientRequest::get(
            url,
            Duration::from_secs(10),
        ))
        .unwrap()
        .status
}

#[test]
fn serve_logs_each_request_as_json_at_the_level_asked_and_nothing_when_quiet() {
    let dir = TempDir::new("cli-logs-levels");
    let json = Serve::start(&dir.0, &["--log-format", "json"], &[]);
    assert_eq!(get(&format!("{}/livez", json.url)), 200);
    assert_eq!(get(&format!("{}/nowhere", json.url)), 404);
    let err = json.stderr_after(2, |l| l.starts_with('{'));
    let lines: Vec<Value> = err
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(lines[0]["target"], "/livez");
    assert_eq!(lines[0]["level"], "info");
    assert_eq!(lines[1]["status"], 404);
    drop(json);

    // DD_LOG=warn keeps the refusal and drops the success; --quiet drops both.
    let warn = Serve::start(&dir.0, &[], &[("DD_LOG", "warn")]);
    assert_eq!(get(&format!("{}/livez", warn.url)), 200);
    assert_eq!(get(&format!("{}/nowhere", warn.url)), 404);
    let err = warn.stderr_after(1, |l| l.contains(" WARN "));
    assert!(err.contains(" WARN  GET /nowhere 404 "), "{err}");
    assert!(!err.contains("/livez"), "{err}");
    drop(warn);
    let quiet = Serve::start(&dir.0, &["--quiet", "--log-level", "debug"], &[]);
    assert_eq!(get(&format!("{}/nowhere", quiet.url)), 404);
    std::thread::sleep(Duration::from_millis(300));
    let err = quiet.stderr_after(0, |_| true);
    assert!(!err.contains("/nowhere"), "{err}");
}

#[test]
fn a_log_setting_that_is_not_one_stops_start_up() {
    let dir = TempDir::new("cli-logs-bad-setting");
    for (args, env, says) in [
        (
            vec!["--log-level", "loud"],
            None,
            "--log-level: log level \"loud\"",
        ),
        (
            vec!["--log-format", "xml"],
            None,
            "--log-format: log format \"xml\"",
        ),
        (vec![], Some("chatty"), "DD_LOG: log level \"chatty\""),
    ] {
        let mut c = ddwire();
        c.args(["serve", "--port", "0", "--runs"])
            .arg(dir.0.join("runs"))
            .args(["--acting-for-id", "urn:x:op", "--acting-for-name", "Op"])
            .args(&args);
        if let Some(v) = env {
            c.env("DD_LOG", v);
        }
        let out: Output = c.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    }
}

#[test]
fn serve_and_send_write_wire_logs_that_wirelog_prints() {
    let dir = TempDir::new("cli-logs-wire");
    let served = dir.0.join("serve.jsonl");
    let harness = Serve::start(
        &dir.0,
        &["--quiet", "--wire-log", served.to_str().unwrap()],
        &[],
    );
    let data = dir.0.join("request.json");
    std::fs::write(
        &data,
        r#"{"agent_id": "nobody.here", "input": {"schema_class": "Message", "message_text": "hi"}}"#,
    )
    .unwrap();
    let sent = dir.0.join("send.jsonl");
    let out = ddwire()
        .args(["send", &harness.url, "--data"])
        .arg(&data)
        .arg("--wire-log")
        .arg(&sent)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed task: {}",
        text(&out.stderr)
    );
    // The server logs each message once it has written it, on its log's own thread: wait for
    // the four (at most 10 s) before stopping it, or a loaded machine kills it mid-write.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&served)
        .map(|t| t.lines().count())
        .unwrap_or(0)
        < 4
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(harness);

    // `send` closed its log: every message, then the totals.
    let lines: Vec<Value> = std::fs::read_to_string(&sent)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5, "card out and in, call out and in, end");
    assert_eq!(lines[4]["type"], "end");
    assert_eq!(lines[4]["written"], 4);
    assert!(lines[..4].iter().all(|l| l["side"] == "client"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&sent).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "message bodies are for the owner only");
    }
    // The harness's log holds the same four messages, seen from the server.
    let served_lines = std::fs::read_to_string(&served).unwrap();
    assert_eq!(served_lines.lines().count(), 4, "{served_lines}");

    let out = ddwire().arg("wirelog").arg(&sent).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let shown = text(&out.stdout);
    assert_eq!(shown.matches("── ").count(), 5, "{shown}");
    assert!(
        shown.contains("client side  → out to 127.0.0.1:"),
        "{shown}"
    );
    assert!(
        shown.contains("\nGET /.well-known/agent-card.json HTTP/1.1\n"),
        "{shown}"
    );
    assert!(shown.contains("nobody.here"), "bodies are shown: {shown}");
    assert!(shown.contains("end of log: 4 written, 0 dropped, 0 failed to write"));
    let heads = ddwire()
        .arg("wirelog")
        .arg(&sent)
        .arg("--heads")
        .output()
        .unwrap();
    assert!(!text(&heads.stdout).contains("nobody.here"));
    let one = ddwire()
        .arg("wirelog")
        .arg(&sent)
        .args(["--connection", &lines[0]["connection"].to_string()])
        .output()
        .unwrap();
    assert_eq!(
        text(&one.stdout).matches("── ").count(),
        4,
        "the end line has no connection"
    );

    // A line that is not a wire log line is named, and the exit code says so.
    std::fs::write(&sent, "{\"type\": \"message\"}\nnot json\n").unwrap();
    let out = ddwire().arg("wirelog").arg(&sent).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("line 2 is not a wire log line"),
        "{}",
        text(&out.stderr)
    );
}
