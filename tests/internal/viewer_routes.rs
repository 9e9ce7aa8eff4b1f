//! The routes the browser view reads: `GET /viewer`, `GET /runs/{id}/grounding` and
//! `GET /runs/{id}/waterfall`, through the harness's handler on the in-memory transport (real
//! HTTP/1.1 bytes) and on loopback TCP.

use super::common;

use common::*;
use ddwire::agent::builtin::{Director, Hello, Ungrounded};
use ddwire::harness::server as harness_server;
use ddwire::harness::testkit::{HARNESS_URL, TestHarness};
use ddwire::harness::view;
use ddwire::trace::waterfall;
use ddwire::wire::http::Limits;
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use serde_json::{Value, json};
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
    let lint = std::process::Command::new(crate::internal_tests::ddwire_exe())
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

/// The viewer draws what the harness computes once: `GET /runs/{id}/waterfall`, over loopback
/// TCP, is what `ddwire show --json` prints for the same stored run and what
/// `trace::waterfall::to_json` gives for it: for a run that succeeded, one whose result was
/// withheld (its root marked) and one that delegated (its child nested under the `delegate`
/// span), each named by a unique prefix too.
#[test]
fn the_waterfall_route_serves_what_ddwire_show_json_prints() {
    let th = TestHarness::new(vec![
        Arc::new(Director::new()),
        Arc::new(Hello::new()),
        Arc::new(Ungrounded::new()),
    ]);
    let id_of = |agent: &str, text: &str| {
        th.invoke(&request(agent, message(text)))
            .unwrap()
            .envelope
            .invocation_id
    };
    let passed = id_of("hello.world", "hi");
    let withheld = id_of("demo.ungrounded", "Atlantis?");
    let parent = id_of("director.route", "say hello for me");
    let server = ddwire::wire::http::server::serve(
        "127.0.0.1:0",
        harness_server::handler(Arc::clone(&th.harness)),
        Limits::DEFAULT,
    )
    .unwrap();
    let client = HttpClient::default();
    let served = |reference: &str| -> Value {
        let url = format!("{}/runs/{reference}/waterfall", server.base_url());
        let r = client.send(ClientRequest::get(url, T)).unwrap();
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.header("content-type"), Some("application/json"));
        serde_json::from_slice(&r.body).unwrap()
    };
    let mut views = Vec::new();
    for id in [&passed, &withheld, &parent] {
        let doc = served(id);
        let show = std::process::Command::new(crate::internal_tests::ddwire_exe())
            .args(["show", id, "--json", "--runs"])
            .arg(&th.runs)
            .output()
            .unwrap();
        let shown: Value = serde_json::from_slice(&show.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&show.stderr));
        });
        assert_eq!(
            doc, shown,
            "the route and ddwire show --json differ for {id}"
        );
        let stored = view::load(th.harness.conductor.store.reader(), id)
            .unwrap()
            .unwrap();
        assert_eq!(doc, waterfall::to_json(&stored));
        assert_eq!(served(&id[..23]), doc, "a unique prefix names the run");
        views.push(doc);
    }
    let spans = |doc: &Value| doc["spans"].as_array().unwrap().clone();

    // Every span in start order, with its depth in the run's tree and what `show` writes.
    let ok = &views[0];
    assert_eq!(ok["withheld"], false);
    assert!(spans(ok).iter().all(|s| s["withheld"] == false));
    let starts: Vec<u64> = spans(ok)
        .iter()
        .map(|s| s["start_ns"].as_u64().unwrap())
        .collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
    let root = &spans(ok)[0];
    assert_eq!(
        (&root["name"], &root["depth"]),
        (&json!("invoke_agent"), &json!(0))
    );
    assert_eq!(root["offset_ns"], 0);
    let chat = spans(ok).into_iter().find(|s| s["name"] == "chat").unwrap();
    assert_eq!(chat["depth"], 1);
    assert!(chat["attributes"]["dd.model_id"].is_string(), "{chat}");
    assert!(
        chat["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k.as_str().unwrap().starts_with("model ")),
        "{chat}"
    );

    // The withheld run: why, on the run, and its root and the agent's spans marked.
    let held = &views[1];
    assert_eq!(held["withheld"], true);
    assert_eq!(
        held["withheld_reason"],
        "Output failed the grounding linter"
    );
    let marked: Vec<Value> = spans(held)
        .into_iter()
        .filter(|s| s["withheld"] == true)
        .map(|s| s["name"].clone())
        .collect();
    // The ungrounded agent records no span of its own: the root is marked, and the gate the
    // conductor recorded is not.
    assert_eq!(marked, [json!("invoke_agent")]);
    assert!(
        spans(held)
            .iter()
            .any(|s| s["name"] == "policy_gate" && s["withheld"] == false),
        "{held}"
    );

    // The delegation: the child named by the delegate span and the envelope, nested, and its
    // own view names its parent.
    let director = &views[2];
    let delegate = spans(director)
        .into_iter()
        .find(|s| s["name"] == "delegate")
        .unwrap();
    let child = delegate["delegated_invocation_id"].as_str().unwrap();
    assert_eq!(director["delegated_invocation_ids"], json!([child]));
    assert_eq!(director["children"][0]["invocation_id"], child);
    assert_eq!(director["children"][0]["agent_id"], "hello.world");
    let own = served(child);
    assert_eq!(own["parent_invocation_id"], parent.as_str());
    assert_eq!(own["spans"][0]["depth"], 0, "the child's root is a root");
    assert_eq!(
        spans(&own).len(),
        spans(&director["children"][0]).len(),
        "the child's own view holds the spans nested in its parent's"
    );
    let url = format!(
        "{}/runs/{}/waterfall",
        server.base_url(),
        ddwire::ids::new_uuid7()
    );
    assert_eq!(client.send(ClientRequest::get(url, T)).unwrap().status, 404);
}
