//! The `ddwire` binary: help, usage errors, and the commands that must refuse to run.

use super::common::TempDir;
use super::{ddwire, text};
use std::process::{Output, Stdio};

fn run(args: &[&str]) -> Output {
    ddwire()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

fn temp_dir(tag: &str) -> TempDir {
    TempDir::new(&format!("cli-{tag}"))
}

#[test]
fn help_and_version_describe_every_command() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for cmd in [
        "demo", "serve", "invoke", "agent", "agents", "runs", "show", "trace", "replay", "lint",
        "hash", "send", "check", "export",
    ] {
        assert!(
            help.contains(&format!("  {cmd} ")),
            "{cmd} missing from --help"
        );
        let sub = run(&[cmd, "--help"]);
        assert!(sub.status.success(), "{cmd} --help");
        assert!(text(&sub.stdout).contains("Usage: ddwire"), "{cmd} --help");
    }
    let version = run(&["--version"]);
    assert_eq!(
        text(&version.stdout).trim(),
        format!("ddwire {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn an_unknown_command_or_flag_is_a_usage_error_with_exit_code_2() {
    let out = run(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown command \"frobnicate\""));
    let out = run(&["hash", "--nope", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown option --nope"));
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn hash_prints_the_content_hash_python_would_compute() {
    let case = std::fs::read_to_string("fixtures/canonical/cases.jsonl").unwrap();
    let first: serde_json::Value = serde_json::from_str(case.lines().next().unwrap()).unwrap();
    let mut child = ddwire()
        .args([
            "hash",
            "--canonicalisation",
            first["canonicalisation"].as_str().unwrap(),
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(first["input"].as_str().unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(text(&out.stdout).trim(), first["sha256"].as_str().unwrap());
    let out = run(&["hash", "--canonicalisation", "nope", "Cargo.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown canonicalisation 'nope'"));
}

#[test]
fn the_cli_runs_nothing_without_a_principal() {
    let runs = temp_dir("noprincipal");
    let input = runs.join("input.json");
    std::fs::write(
        &input,
        r#"{"schema_class": "Message", "message_text": "hi"}"#,
    )
    .unwrap();
    let runs_arg = runs.join("store");
    let out = run(&[
        "invoke",
        "--agent",
        "hello.world",
        "--input",
        input.to_str().unwrap(),
        "--runs",
        runs_arg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("DD_PRINCIPAL_ID and DD_PRINCIPAL_NAME unset"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["serve", "--port", "0", "--runs", runs_arg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("every invocation acts for a named human"));
    assert!(
        !runs_arg.exists(),
        "nothing may be written without a principal"
    );
}

#[test]
fn a_malformed_principal_stops_start_up() {
    let out = run(&[
        "serve",
        "--port",
        "0",
        "--acting-for-id",
        "0000-0002-1825-0097",
        "--acting-for-name",
        "J",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("the configured principal is malformed"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn serve_warns_when_bound_beyond_loopback_without_bearer_tokens() {
    let runs = temp_dir("warn");
    let agents = runs.join("agents.json");
    std::fs::write(&agents, r#"{"agents": []}"#).unwrap();
    let mut child = ddwire()
        .args([
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--agents",
            agents.to_str().unwrap(),
        ])
        .args(["--runs", runs.join("store").to_str().unwrap()])
        .args([
            "--acting-for-id",
            "https://orcid.org/0000-0002-1825-0097",
            "--acting-for-name",
            "Josiah Carberry",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut buf = [0u8; 4096];
    use std::io::Read;
    while !seen.contains("warning") && std::time::Instant::now() < deadline {
        match stderr.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(seen.contains("warning: bound beyond loopback"), "{seen}");
}

/// `--cors-origin` takes an origin exactly as a browser sends it; anything else stops `serve`
/// at start with the shape expected.
#[test]
fn serve_refuses_a_cors_origin_that_is_not_an_origin() {
    let runs = temp_dir("cors");
    let agents = runs.join("agents.json");
    std::fs::write(&agents, r#"{"agents": []}"#).unwrap();
    for bad in [
        "localhost:5173",
        "http://localhost:5173/",
        "http://x/viewer",
    ] {
        let out = ddwire()
            .args(["serve", "--port", "0", "--agents", agents.to_str().unwrap()])
            .args(["--runs", runs.join("store").to_str().unwrap()])
            .args([
                "--acting-for-id",
                "https://orcid.org/0000-0002-1825-0097",
                "--acting-for-name",
                "Josiah Carberry",
                "--cors-origin",
                bad,
            ])
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{bad}");
        let err = text(&out.stderr);
        assert!(
            err.contains("is not an origin") && err.contains("scheme://host[:port]"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn lint_exits_0_for_a_grounded_run_and_1_for_a_violation() {
    let dir = "fixtures/runs";
    let mut seen = (false, false);
    for entry in std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
    {
        let spans = entry.path().join("spans.jsonl");
        let envelope = entry.path().join("envelope.json");
        if !spans.exists() || !envelope.exists() {
            continue;
        }
        let out = run(&["lint", spans.to_str().unwrap(), envelope.to_str().unwrap()]);
        let summary = text(&out.stdout);
        match out.status.code() {
            Some(0) => {
                assert!(summary.starts_with("grounding: passed"), "{summary}");
                seen.0 = true;
            }
            Some(1) => {
                assert!(summary.starts_with("grounding: FAILED"), "{summary}");
                seen.1 = true;
            }
            other => panic!("lint exited {other:?}: {}", text(&out.stderr)),
        }
    }
    assert_eq!(
        seen,
        (true, true),
        "the fixtures hold a passing and a failing run"
    );
}

#[test]
fn check_exits_0_for_a_ddwire_agent_and_writes_each_format() {
    use ddwire::agent::builtin::Hello;
    let agent =
        ddwire::agent::server::serve(std::sync::Arc::new(Hello::new()), "127.0.0.1:0", None)
            .unwrap();
    let url = agent.base_url();
    let out = run(&["check", &url, "--dd", "--strict"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let report = text(&out.stdout);
    assert!(report.contains("PASS  a2a.send [1.0]"), "{report}");
    assert!(
        report.contains("0 failed") && report.ends_with("PASSED\n"),
        "{report}"
    );

    let dir = temp_dir("check");
    let xml = dir.join("check.xml");
    let out = run(&[
        "check",
        &url,
        "--format",
        "junit",
        "--out",
        xml.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("PASSED (report: "),
        "{}",
        text(&out.stderr)
    );
    let junit = std::fs::read_to_string(&xml).unwrap();
    assert!(junit.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));

    let out = run(&["check", &url, "--format", "json", "--binding", "0.3"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["bindings"], serde_json::json!(["0.3"]));
    assert_eq!(doc["exit_code"], 0);
}

#[test]
fn check_exits_2_for_bad_usage_or_nothing_answering() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    for (args, says) in [
        (vec!["check"], "expects one URL"),
        (vec!["check", &url, "--binding", "2.0"], "--binding must be"),
        (vec!["check", &url, "--format", "xml"], "--format must be"),
        (vec!["check", &url, "--timeout", "0"], "--timeout must be"),
        (
            vec!["check", "example.org"],
            "is not an http:// or https:// URL",
        ),
        (vec!["check", &url], "nothing answered at"),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// A filter that could match nothing for a typo is refused, naming the values it takes.
#[test]
fn runs_refuses_an_unknown_status_and_lists_the_valid_ones() {
    let dir = temp_dir("runs-status");
    let out = run(&["runs", "--status", "bogus", "--runs", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    for status in ["succeeded", "abstained", "referred", "failed", "suspended"] {
        assert!(said.contains(status), "{said}");
    }
    let ok = run(&[
        "runs",
        "--status",
        "failed",
        "--runs",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
}

/// Every flag a command's option list names is in its usage line too, so neither can drift
/// from the other.
#[test]
fn every_commands_usage_line_names_every_flag_it_lists() {
    let help = text(&run(&["--help"]).stdout);
    let commands: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(commands.len() > 10, "{help}");
    for command in commands {
        let page = text(&run(&[&command, "--help"]).stdout);
        let usage: String = page
            .lines()
            .skip_while(|l| !l.starts_with("Usage:"))
            .take_while(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        let listed = page
            .lines()
            .filter_map(|l| l.strip_prefix("  --"))
            .filter_map(|l| l.split_whitespace().next());
        for flag in listed {
            let named = usage.match_indices(&format!("--{flag}")).any(|(i, m)| {
                !usage[i + m.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
            });
            assert!(
                named,
                "`ddwire {command}`: --{flag} is listed but not in {usage}"
            );
        }
    }
}

/// `serve --read-only` runs nothing, so it needs no principal to act for: it serves the stored
/// runs to whoever may read them (every run, without --tokens), refuses every invocation, and
/// its viewer offers no form (the page reads `/healthz`'s `store.read_only`).
#[test]
fn serve_read_only_needs_no_principal_and_serves_the_stored_runs() {
    use std::io::{BufRead, BufReader};
    let dir = temp_dir("read-only");
    let runs = dir.join("runs");
    let made = run(&["demo", "--quiet", "--runs", runs.to_str().unwrap()]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made.stderr));
    let agents = dir.join("agents.json");
    std::fs::write(&agents, r#"{"agents": []}"#).unwrap();
    let mut child = ddwire()
        .args(["serve", "--read-only", "--port", "0", "--quiet", "--runs"])
        .arg(&runs)
        .arg("--agents")
        .arg(&agents)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    let mut url = None;
    for line in stderr.by_ref().map_while(Result::ok) {
        if let Some(rest) = line.split_once("harness on ").map(|(_, r)| r) {
            url = rest.split_whitespace().next().map(str::to_string);
            break;
        }
        said.push(line);
    }
    // Read the rest as it comes: a closed pipe would end serve at its next line to stderr.
    std::thread::spawn(move || stderr.for_each(drop));
    /// Killed however the test ends.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _child = Killed(child);
    let url = url.unwrap_or_else(|| panic!("serve --read-only did not start: {said:?}"));
    let http = ddwire::wire::http::client::HttpClient::tcp();
    let get = |path: &str| {
        http.send(ddwire::wire::http::client::ClientRequest::get(
            format!("{url}{path}"),
            std::time::Duration::from_secs(10),
        ))
        .unwrap()
    };
    let listed = get("/runs");
    assert_eq!(listed.status, 200);
    let rows: serde_json::Value = serde_json::from_slice(&listed.body).unwrap();
    // The demo's seven invocations, and the run its director delegated.
    assert_eq!(rows.as_array().map(Vec::len), Some(8), "the demo's runs");
    let health: serde_json::Value = serde_json::from_slice(&get("/healthz").body).unwrap();
    assert_eq!(health["store"]["read_only"], true, "{health}");
    let page = String::from_utf8(get("/viewer").body).unwrap();
    assert!(
        page.contains("health.store.read_only"),
        "the page hides its form"
    );
}
