//! `ddwire export`: stored runs to an OTLP receiver on loopback TCP or to a file, the flags and
//! variables that choose where, and its usage errors.

use super::{ddwire, text};
use ddwire::ids::new_uuid7;
use ddwire::trace::from_json;
use ddwire::wire::http::server::{self, Server};
use ddwire::wire::http::{Handler, Limits, Request, Response};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    ddwire()
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs")
}

/// A run store holding the fixture's delegated run and two more cases, as three runs completed
/// on 1, 2 and 3 January 2026. Returns the store and the runs' ids, oldest first.
fn store() -> (PathBuf, Vec<String>) {
    let dir = std::env::temp_dir().join(format!("ddwire-cli-export-{}", new_uuid7()));
    let cases = std::fs::read_to_string("fixtures/otlp/cases.jsonl").unwrap();
    let mut ids = Vec::new();
    for (day, name) in [
        "dd_delegated_run",
        "kinds_and_status",
        "links_and_trace_state",
    ]
    .iter()
    .enumerate()
    {
        let case: Value = cases
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|c| c["case"] == *name)
            .unwrap();
        let id = new_uuid7();
        let run = dir.join(&id);
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(
            run.join("envelope.json"),
            format!(
                "{{\"invocation_id\": \"{id}\", \"completed_at\": \"2026-01-0{}T00:00:00Z\"}}",
                day + 1
            ),
        )
        .unwrap();
        let lines: Vec<&str> = case["spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        std::fs::write(run.join("spans.jsonl"), lines.join("\n") + "\n").unwrap();
        ids.push(id);
    }
    (dir, ids)
}

/// A stored run's span ids, sorted.
fn span_ids(path: &Path, id: &str) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_to_string(path.join(id).join("spans.jsonl"))
        .unwrap()
        .lines()
        .map(|l| from_json(l).unwrap().span_id.to_string())
        .collect();
    ids.sort();
    ids
}

/// The span ids in one OTLP/JSON request, sorted (spans are grouped by resource).
fn request_span_ids(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for rs in request["resourceSpans"].as_array().unwrap() {
        for ss in rs["scopeSpans"].as_array().unwrap() {
            for s in ss["spans"].as_array().unwrap() {
                out.push(s["spanId"].as_str().unwrap().to_string());
            }
        }
    }
    out.sort();
    out
}

type Seen = Arc<Mutex<Vec<Request>>>;

fn receiver(status: u16) -> (Server, String, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let handler: Handler = Arc::new(move |r: Request| {
        log.lock().unwrap().push(r);
        Response::bytes(status, "application/json", b"{}".to_vec())
    });
    let server = server::serve("127.0.0.1:0", handler, Limits::DEFAULT).unwrap();
    let base = format!("http://{}", server.local_addr());
    (server, base, seen)
}

#[test]
fn export_help_names_every_flag_and_standard_variable() {
    let out = run(&["export", "--help"], &[]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for word in [
        "--all",
        "--since",
        "--runs",
        "--otlp-endpoint",
        "--otlp-traces-endpoint",
        "--otlp-file",
        "--otlp-protocol",
        "--otlp-header",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_SERVICE_NAME",
        "OTEL_RESOURCE_ATTRIBUTES",
    ] {
        assert!(help.contains(word), "export --help lacks {word}");
    }
    assert!(text(&run(&["--help"], &[]).stdout).contains("  export "));
    for cmd in ["serve", "demo"] {
        let help = text(&run(&[cmd, "--help"], &[]).stdout);
        for flag in [
            "--otlp-endpoint",
            "--otlp-traces-endpoint",
            "--otlp-protocol",
            "--otlp-header",
        ] {
            assert!(help.contains(flag), "{cmd} --help lacks {flag}");
        }
    }
}

/// Arguments, environment, and what the refusal must say.
type Refusal<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

#[test]
fn export_refuses_what_it_cannot_do_with_exit_code_2_and_a_reason() {
    let (dir, ids) = store();
    let runs = dir.to_str().unwrap();
    let cases: [Refusal; 8] = [
        (
            &["export", "--all", "--runs", runs],
            &[],
            "nowhere to export",
        ),
        (
            &["export", "--runs", runs, "--otlp-file", "-"],
            &[],
            "RUN_IDs, or --all",
        ),
        (
            &[
                "export",
                &ids[0],
                "--all",
                "--runs",
                runs,
                "--otlp-file",
                "-",
            ],
            &[],
            "not both",
        ),
        (
            &[
                "export",
                &ids[0],
                "--since",
                "1h",
                "--runs",
                runs,
                "--otlp-file",
                "-",
            ],
            &[],
            "--since goes with --all",
        ),
        (
            &[
                "export",
                "--all",
                "--since",
                "yesterday",
                "--runs",
                runs,
                "--otlp-file",
                "-",
            ],
            &[],
            "--since expects",
        ),
        (
            &[
                "export",
                "--all",
                "--runs",
                runs,
                "--otlp-endpoint",
                "https://collector:4318",
                "--ca-file",
                "/nonexistent/ca.pem",
            ],
            &[],
            if cfg!(feature = "tls") {
                "cannot read /nonexistent/ca.pem"
            } else {
                "no TLS"
            },
        ),
        (
            &["export", "--all", "--runs", runs],
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ],
            "OTLP/HTTP only",
        ),
        (
            &[
                "export",
                "--all",
                "--runs",
                runs,
                "--otlp-file",
                "-",
                "--otlp-protocol",
                "http/protobuf",
            ],
            &[],
            "always writes OTLP/JSON",
        ),
    ];
    for (args, env, says) in cases {
        let out = run(args, env);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn otlp_file_appends_one_request_per_run_in_the_collector_file_format() {
    let (dir, ids) = store();
    let file = dir.join("traces.jsonl");
    let args = [
        "export",
        "--all",
        "--runs",
        dir.to_str().unwrap(),
        "--otlp-file",
        file.to_str().unwrap(),
    ];
    let out = run(
        &args,
        &[("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("3 run(s)"),
        "{}",
        text(&out.stderr)
    );
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    for (line, id) in lines.iter().zip(&ids) {
        assert_eq!(request_span_ids(line), span_ids(&dir, id));
        for rs in line["resourceSpans"].as_array().unwrap() {
            let attrs = rs["resource"]["attributes"].to_string();
            assert!(attrs.contains("deployment.environment"), "{attrs}");
        }
    }
    // The harness's own resource says its version; `export` is not the process that made the
    // spans, so it names no instance.
    let harness = lines[0]["resourceSpans"][0]["resource"]["attributes"].to_string();
    assert!(
        harness.contains("ddwire-harness") && harness.contains("service.version"),
        "{harness}"
    );
    assert!(!harness.contains("service.instance.id"), "{harness}");
    // Appended, as the collector's file exporter does; - writes to stdout.
    assert!(run(&args, &[]).status.success());
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 6);
    let out = run(
        &[
            "export",
            &ids[1],
            "--runs",
            dir.to_str().unwrap(),
            "--otlp-file",
            "-",
        ],
        &[],
    );
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(request_span_ids(&line), span_ids(&dir, &ids[1]));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn export_posts_each_run_to_the_endpoint_the_flags_or_variables_name() {
    let (dir, ids) = store();
    let runs = dir.to_str().unwrap();
    let (_server, base, seen) = receiver(200);

    // --otlp-endpoint is a base URL: /v1/traces is appended. Headers go on every request.
    let out = run(
        &[
            "export",
            &ids[0],
            &ids[2],
            "--runs",
            runs,
            "--otlp-endpoint",
            &base,
            "--otlp-protocol",
            "http/json",
            "--otlp-header",
            "x-tenant=dd",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        for (request, id) in seen.iter().zip([&ids[0], &ids[2]]) {
            assert_eq!(request.path, "/v1/traces");
            assert_eq!(request.header("content-type"), Some("application/json"));
            assert_eq!(request.header("x-tenant"), Some("dd"));
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            assert_eq!(request_span_ids(&body), span_ids(&dir, id));
        }
    }

    // The variables, a traces endpoint used as it is, protobuf by default, and --since.
    seen.lock().unwrap().clear();
    let out = run(
        &[
            "export",
            "--all",
            "--since",
            "2026-01-02T00:00:00Z",
            "--runs",
            runs,
        ],
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                &format!("{base}/custom/traces"),
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20abc"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "runs completed on 2 and 3 January");
    assert_eq!(seen[0].path, "/custom/traces");
    assert_eq!(
        seen[0].header("content-type"),
        Some("application/x-protobuf")
    );
    assert_eq!(seen[0].header("authorization"), Some("Bearer abc"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_refused_or_missing_run_is_reported_and_exits_1() {
    let (dir, ids) = store();
    let runs = dir.to_str().unwrap();
    let (_server, base, seen) = receiver(400);
    let missing = new_uuid7();
    let out = run(
        &[
            "export",
            &ids[0],
            &missing,
            "--runs",
            runs,
            "--otlp-endpoint",
            &base,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("HTTP 400") && err.contains(&format!("no run {missing}")),
        "{err}"
    );
    assert!(err.contains("2 run(s) failed"), "{err}");
    assert_eq!(seen.lock().unwrap().len(), 1, "a 400 is not retried");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `ddwire export --all --otlp-file - | head -1`: the reader stopping is no error; the command
/// ends quietly with 0, as every other command does on a closed pipe.
#[test]
fn export_to_stdout_ends_quietly_when_the_reader_stops() {
    let (dir, ids) = store();
    assert!(ids.len() > 1, "the store holds several runs");
    let mut child = ddwire()
        .args([
            "export",
            "--all",
            "--runs",
            dir.to_str().unwrap(),
            "--otlp-file",
            "-",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader is gone before the first line is written (it reads the store first), so
    // every write finds the pipe closed.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    std::fs::remove_dir_all(dir).unwrap();
}
