//! `ddwire check` against real endpoints over loopback and the in-memory transport: ddwire's
//! own agent and harness pass every probe strictly, and servers broken on purpose (ids echoed
//! as strings, streaming declared but refused, notifications answered, a hang on a large
//! body, a card at the old path or naming a bind-all address) fail or warn on exactly the
//! probes that check those rules.

use ddwire::agent::builtin::{Echo, Hello};
use ddwire::agent::server;
use ddwire::check::{self, Bindings, CheckError, Options, ProbeResult, Report, Status};
use ddwire::harness::testkit::{HARNESS_URL, TestHarness};
use ddwire::wire::http::client::HttpClient;
use ddwire::wire::http::{self, Body, Handler, Limits, Request, Response};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// A ddwire hello agent on loopback, its responses passed through `alter`, its card
/// through `card` (and served only at the pre-0.3 path when `legacy_only`).
fn served(
    alter: impl Fn(&Request, Response) -> Response + Send + Sync + 'static,
    card: impl Fn(Value) -> Value + Send + Sync + 'static,
    limits: Limits,
    legacy_only: bool,
) -> (http::server::Server, String) {
    let bound = http::server::bind("127.0.0.1:0", limits).expect("a loopback port");
    let base = bound.default_public_url();
    let inner = server::handler(Arc::new(Hello::new()), &base);
    let handler: Handler = Arc::new(move |request: Request| {
        let is_card = request.path.starts_with("/.well-known/");
        if legacy_only && request.path == ddwire::wire::a2a::CARD_PATH {
            return Response::error(404, "no route");
        }
        let copy = Request {
            body: Vec::new(),
            ..request.clone()
        };
        let response = inner(request);
        if is_card && response.status == 200 {
            let Body::Bytes(bytes) = &response.body else {
                return response;
            };
            let value: Value = serde_json::from_slice(bytes).expect("the card is JSON");
            return Response::json(200, &card(value));
        }
        alter(&copy, response)
    });
    let server = bound.serve(handler).expect("serves");
    (server, base)
}

fn unchanged(_: &Request, r: Response) -> Response {
    r
}

fn body_json(r: &Response) -> Option<Value> {
    match &r.body {
        Body::Bytes(b) => serde_json::from_slice(b).ok(),
        Body::Stream(_) => None,
    }
}

fn find<'a>(report: &'a Report, id: &str) -> Vec<&'a ProbeResult> {
    report.results.iter().filter(|r| r.id == id).collect()
}

fn status_of(report: &Report, id: &str) -> Status {
    let found = find(report, id);
    assert!(!found.is_empty(), "no probe {id} in\n{}", report.text());
    found[0].status
}

fn not_passed(report: &Report) -> Vec<String> {
    report
        .results
        .iter()
        .filter(|r| !matches!(r.status, Status::Pass | Status::Skip))
        .map(|r| r.name())
        .collect()
}

fn options(base: &str) -> Options {
    let mut o = Options::new(base);
    o.timeout = Duration::from_secs(20);
    o
}

#[test]
fn a_ddwire_agent_passes_every_probe_strictly_in_both_bindings_over_loopback() {
    let agent = server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let mut o = options(&agent.base_url());
    o.bindings = Bindings::Both;
    o.dd = true;
    o.strict = true;
    let report = check::run(&o).unwrap();
    assert_eq!(report.exit_code(), 0, "{}", report.text());
    assert_eq!(report.bindings.len(), 2);
    assert!(not_passed(&report).is_empty(), "{}", report.text());
    // Only the probes A2A 0.3 has no rule for are skipped.
    let skipped: Vec<String> = report
        .results
        .iter()
        .filter(|r| r.status == Status::Skip)
        .map(|r| r.name())
        .collect();
    assert_eq!(skipped, ["a2a.version [0.3]", "a2a.extended-card [0.3]"]);
    let reply = &find(&report, "dd.reply")[0];
    assert!(reply.detail.as_deref().unwrap().contains("AgentResult"));
}

#[test]
fn the_harness_passes_every_probe_strictly_with_its_manifest_and_envelope() {
    let harness = TestHarness::new(vec![Arc::new(Hello::new()), Arc::new(Echo::new())]);
    let mut o = options(HARNESS_URL);
    o.http = HttpClient::memory(harness.net.clone());
    o.bindings = Bindings::Both;
    o.dd = true;
    o.strict = true;
    let report = check::run(&o).unwrap();
    assert_eq!(report.exit_code(), 0, "{}", report.text());
    let dd = &find(&report, "card.dd")[0];
    assert_eq!(
        dd.detail.as_deref(),
        Some("a harness serving [echo.wire, hello.world]")
    );
    for reply in find(&report, "dd.reply") {
        assert_eq!(reply.detail.as_deref(), Some("an envelope, succeeded"));
    }
}

#[test]
fn ids_echoed_as_strings_and_refused_streaming_fail_naming_the_rule_and_what_came_back() {
    let stringify = |_: &Request, r: Response| match body_json(&r) {
        Some(mut doc) if doc.get("id").is_some_and(Value::is_number) => {
            doc["id"] = Value::String(doc["id"].to_string());
            Response::json(r.status, &doc)
        }
        _ => r,
    };
    let streaming = |mut card: Value| {
        card["capabilities"]["streaming"] = json!(true);
        card
    };
    let (_server, base) = served(stringify, streaming, Limits::DEFAULT, false);
    let report = check::run(&options(&base)).unwrap();
    assert_eq!(report.exit_code(), 1);
    let failed: Vec<String> = not_passed(&report);
    assert_eq!(
        failed,
        ["jsonrpc.id [1.0]", "a2a.streaming [1.0]"],
        "{}",
        report.text()
    );
    let id = &find(&report, "jsonrpc.id")[0];
    assert_eq!(id.spec, "JSON-RPC 2.0 §5");
    let detail = id.detail.as_deref().unwrap();
    assert!(
        detail.contains("sent id 7 (a number), got id \"7\" (a string)"),
        "{detail}"
    );
    assert!(detail.contains("HTTP 200 application/json: {"), "{detail}");
    let stream = find(&report, "a2a.streaming")[0].detail.clone().unwrap();
    assert!(
        stream.contains("declares capabilities.streaming: true, but SendStreamingMessage was refused with error -32004"),
        "{stream}"
    );
    // The JUnit report carries both failures, with their spec sections.
    let junit = report.junit();
    assert!(junit.contains("failures=\"2\""));
    assert!(junit.contains("<failure message=\"MUST JSON-RPC 2.0 §5: the response echoes"));
}

/// Answers a notification the way a2a-sdk does: with an error body.
fn answer_notifications(request: &Request, r: Response) -> Response {
    if r.status == 204 && request.method == "POST" {
        return Response::json(
            200,
            &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "id is required"}}),
        );
    }
    r
}

#[test]
fn answering_a_notification_warns_and_fails_only_under_strict() {
    let (_server, base) = served(answer_notifications, |c| c, Limits::DEFAULT, false);
    let lenient = check::run(&options(&base)).unwrap();
    assert_eq!(lenient.exit_code(), 0, "{}", lenient.text());
    assert_eq!(status_of(&lenient, "jsonrpc.notification"), Status::Warn);
    assert_eq!(not_passed(&lenient), ["jsonrpc.notification [1.0]"]);
    let mut o = options(&base);
    o.strict = true;
    let strict = check::run(&o).unwrap();
    assert_eq!(strict.exit_code(), 1);
    assert_eq!(status_of(&strict, "jsonrpc.notification"), Status::Fail);
    assert!(
        strict
            .text()
            .contains("found: the notification was answered: HTTP 200")
    );
}

#[test]
fn a_server_that_hangs_on_a_large_body_fails_the_oversize_probe_within_the_timeout() {
    let hang =
        |request: &Request, r: Response| {
            if request.headers.iter().any(|(k, v)| {
                k == "content-length" && v.parse::<usize>().is_ok_and(|n| n > 1 << 20)
            }) {
                std::thread::sleep(Duration::from_secs(4));
            }
            r
        };
    let limits = Limits {
        max_body_bytes: 16 << 20,
        ..Limits::DEFAULT
    };
    let (_server, base) = served(hang, |c| c, limits, false);
    let mut o = options(&base);
    o.timeout = Duration::from_secs(1);
    let report = check::run(&o).unwrap();
    assert_eq!(
        not_passed(&report),
        ["jsonrpc.oversize [1.0]"],
        "{}",
        report.text()
    );
    let detail = find(&report, "jsonrpc.oversize")[0].detail.clone().unwrap();
    assert!(
        detail.contains("within 1.0 s: the server hangs on it"),
        "{detail}"
    );
    assert!(find(&report, "jsonrpc.oversize")[0].latency < Duration::from_secs(4));
}

#[test]
fn a_card_only_at_the_pre_0_3_path_warns_and_a_bind_all_address_fails() {
    let bind_all = |mut card: Value| {
        let url = card["url"]
            .as_str()
            .unwrap()
            .replace("127.0.0.1", "0.0.0.0");
        card["url"] = Value::String(url);
        card
    };
    let (_server, base) = served(unchanged, bind_all, Limits::DEFAULT, true);
    let report = check::run(&options(&base)).unwrap();
    assert_eq!(status_of(&report, "card.location"), Status::Warn);
    assert_eq!(
        report.card_url.as_deref(),
        Some(format!("{base}/.well-known/agent.json").as_str())
    );
    assert_eq!(status_of(&report, "card.interfaces"), Status::Fail);
    let detail = find(&report, "card.interfaces")[0].detail.clone().unwrap();
    assert!(
        detail.contains("advertises the bind-all address 0.0.0.0, which no client can reach"),
        "{detail}"
    );
}

#[test]
fn a_binding_the_card_does_not_declare_is_noted_not_probed() {
    let only_v10 = |mut card: Value| {
        let obj = card.as_object_mut().unwrap();
        for key in ["url", "protocolVersion", "preferredTransport"] {
            obj.remove(key);
        }
        card["supportedInterfaces"]
            .as_array_mut()
            .unwrap()
            .retain(|i| i["protocolVersion"] == "1.0");
        card
    };
    let (_server, base) = served(unchanged, only_v10, Limits::DEFAULT, false);
    let mut o = options(&base);
    o.bindings = Bindings::Both;
    let report = check::run(&o).unwrap();
    assert_eq!(report.exit_code(), 0, "{}", report.text());
    assert_eq!(report.bindings.len(), 1);
    assert_eq!(
        report.notes,
        ["the card declares no A2A 0.3 JSON-RPC interface; not probed in it"]
    );
}

#[test]
fn a_users_message_is_sent_and_a_bad_one_is_refused_before_any_request() {
    let agent = server::serve(Arc::new(Echo::new()), "127.0.0.1:0", None).unwrap();
    let mut o = options(&agent.base_url());
    o.dd = true;
    o.message = Some(
        json!({"agent_id": "echo.wire", "input": {"schema_class": "Echo", "value": [1, "two"]}}),
    );
    let report = check::run(&o).unwrap();
    assert_eq!(report.exit_code(), 0, "{}", report.text());
    o.message = Some(json!({"parts": "not a list"}));
    match check::run(&o) {
        Err(e @ CheckError::BadMessage { .. }) => {
            assert!(e.to_string().contains("neither an A2A 0.3 message"), "{e}")
        }
        other => panic!("expected BadMessage, got {other:?}"),
    }
}

#[test]
fn the_token_goes_as_a_bearer_on_every_request() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (seen, missing) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (s, m) = (Arc::clone(&seen), Arc::clone(&missing));
    let count = move |request: &Request, r: Response| {
        s.fetch_add(1, Ordering::SeqCst);
        if request.header("authorization") != Some("Bearer s3cret") {
            m.fetch_add(1, Ordering::SeqCst);
        }
        r
    };
    let (_server, base) = served(count, |c| c, Limits::DEFAULT, false);
    let mut o = options(&base);
    o.token = Some("s3cret".into());
    let report = check::run(&o).unwrap();
    assert_eq!(report.exit_code(), 0, "{}", report.text());
    assert!(seen.load(Ordering::SeqCst) >= 15);
    assert_eq!(missing.load(Ordering::SeqCst), 0);
}

#[test]
fn nothing_answering_is_an_error_not_a_report() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut o = options(&format!("http://127.0.0.1:{port}"));
    o.timeout = Duration::from_secs(2);
    match check::run(&o) {
        Err(e @ CheckError::Unreachable { .. }) => {
            assert!(e.to_string().contains("connection refused"), "{e}")
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    assert!(matches!(
        check::run(&Options::new("ftp://example.org")),
        Err(CheckError::BadUrl { .. })
    ));
}
