//! The routes the browser view reads: `GET /viewer` and `GET /runs/{id}/grounding`, through the
//! harness's handler on the in-memory transport (real HTTP/1.1 bytes).

mod common;

use common::*;
use ddwire::agent::builtin::{Hello, Ungrounded};
use ddwire::harness::testkit::{HARNESS_URL, TestHarness};
use ddwire::wire::http::client::ClientRequest;
use serde_json::json;
use std::sync::Arc;

fn harness() -> TestHarness {
    TestHarness::new(vec![Arc::new(Hello::new()), Arc::new(Ungrounded::new())])
}

#[test]
fn the_viewer_is_one_html_page_that_may_load_nothing_from_elsewhere() {
    let th = harness();
    let r = th
        .client
        .http
        .send(ClientRequest::get(format!("{HARNESS_URL}/viewer"), T))
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let policy = r.header("content-security-policy").unwrap();
    assert!(
        policy.starts_with("default-src 'none'; script-src 'sha256-"),
        "{policy}"
    );
    assert!(policy.contains("connect-src 'self'"), "{policy}");
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    let page = String::from_utf8(r.body).unwrap();
    for route in ["/runs?", "/spans", "/grounding", "/agents", "/agui"] {
        assert!(page.contains(route), "the page does not use {route}");
    }
    assert!(!page.contains("<script src"), "no external script");
    assert!(
        !page.contains("<link rel=\"stylesheet\""),
        "no external style"
    );
}

#[test]
fn a_runs_grounding_report_is_served_as_data() {
    let th = harness();
    let passed = th
        .invoke(&request("hello.world", message("hi")))
        .unwrap()
        .envelope
        .invocation_id;
    let withheld = th
        .invoke(&request("demo.ungrounded", message("Atlantis?")))
        .unwrap()
        .envelope
        .invocation_id;
    let (status, report) = get(&th, &format!("/runs/{passed}/grounding"));
    assert_eq!(status, 200);
    assert_eq!(report["invocation_id"], passed.as_str());
    assert_eq!(report["passed"], true);
    assert_eq!(report["mode"], "input_only");
    assert_eq!(
        (&report["retrieval_count"], &report["chat_count"]),
        (&json!(0), &json!(1))
    );
    assert_eq!(
        report["summary"],
        "grounding: passed [input_only] (0 retrieval, 1 chat spans)"
    );
    let (status, report) = get(&th, &format!("/runs/{}/grounding", &withheld[..23]));
    assert_eq!(status, 200, "a unique prefix names the run");
    assert_eq!(report["passed"], false);
    let violations = report["violations"].as_array().unwrap();
    assert_eq!(violations.len(), 1);
    assert!(
        violations[0]
            .as_str()
            .unwrap()
            .starts_with("R2: payload cites 'src:atlantis-almanac'")
    );
    let (status, _) = get(&th, "/runs/01a22d2a-0000-7000-8000-000000000000/grounding");
    assert_eq!(status, 404);
}

/// One report shape for HTTP and `ddwire lint --json`: the linter run again over the stored
/// files, so a failed run's counts are numbers, as lint gives them, not `null`; and the stored
/// verdict beside it.
#[test]
fn the_grounding_route_answers_what_lint_json_prints_for_a_failed_run_too() {
    let th = TestHarness::new(vec![Arc::new(ddwire::agent::builtin::Failing::new())]);
    let failed = th
        .invoke(&request("demo.failing", message("boom")))
        .unwrap()
        .envelope;
    let id = failed.invocation_id;
    let (status, report) = get(&th, &format!("/runs/{id}/grounding"));
    assert_eq!(status, 200, "{report}");
    let lint = std::process::Command::new(env!("CARGO_BIN_EXE_ddwire"))
        .args(["lint", &id, "--json", "--runs"])
        .arg(&th.runs)
        .output()
        .unwrap();
    let lint: serde_json::Value = serde_json::from_slice(&lint.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&lint.stderr));
    });
    assert_eq!(report, lint);
    assert!(report["retrieval_count"].is_number(), "{report}");
    assert!(report["chat_count"].is_number(), "{report}");
    assert_eq!(report["agrees"], true, "{report}");
}

#[test]
fn the_runs_route_refuses_an_unknown_status_with_400_naming_the_valid_ones() {
    let th = harness();
    let r = th
        .client
        .http
        .send(ClientRequest::get(
            format!("{HARNESS_URL}/runs?status=bogus"),
            T,
        ))
        .unwrap();
    assert_eq!(r.status, 400);
    let body = String::from_utf8_lossy(&r.body);
    assert!(
        body.contains("succeeded") && body.contains("suspended"),
        "{body}"
    );
}
