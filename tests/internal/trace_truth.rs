//! The trace tells the truth (issue 16): a run's stored trace and its stored envelope never
//! disagree, a caller's `traceparent` becomes a link on the run's root (never its parent), and
//! the reply names the run's trace.
//!
//! Every run here crosses the real A2A or AG-UI wire (real HTTP/1.1 bytes on the in-memory
//! transport) into the harness, whose agents are served by the same agent server they run in
//! production; the assertions read the run store's files (`spans.jsonl`, `envelope.json`), not
//! what the conductor returned.

use super::common;

use common::*;
use ddwire::agent::Agent;
use ddwire::agent::builtin;
use ddwire::contract::{AgentResult, GroundingMode, Outcome, OutcomeStatus};
use ddwire::harness::testkit::{HARNESS_URL, TestHarness};
use ddwire::ids::new_uuid7;
use ddwire::trace::waterfall::RunView;
use ddwire::trace::{AttrValue, SpanContext, SpanRecord, StatusCode, attr, event};
use ddwire::wire::a2a::meta;
use ddwire::wire::http::client::{ClientRequest, ClientResponse};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A caller's span, as the W3C examples spell one (Trace Context §3.2).
const CALLER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The built-in agents under the demo's profile (`echo.wire` not enabled), as `ddwire demo`
/// runs them.
fn demo_harness() -> TestHarness {
    let agents: Vec<Arc<dyn Agent>> = builtin::NAMES
        .iter()
        .map(|(name, _)| builtin::by_name(name).expect("a built-in agent"))
        .collect();
    let profile = json!({
        "profile_id": "ddwire-default",
        "version": 1,
        "agents": {
            "hello.world": "converse",
            "stub.abstain": "advise",
            "director.route": "converse",
            "demo.ungrounded": "converse",
            "demo.failing": "advise"
        },
        "actions_requiring_approval": []
    });
    TestHarness::with_profile(agents, &profile.to_string(), Duration::from_secs(30))
}

/// How the envelope says a run ended, as the trace must tell it too.
#[derive(Debug, PartialEq)]
enum Told {
    /// Not failed: the root's status is UNSET, and it has no `withheld` event.
    NotFailed,
    /// Failed without withholding: ERROR described by the problem's title.
    Failed,
    /// Withheld by the grounding check: ERROR, and a `withheld` event naming the rules.
    WithheldByGrounding,
    /// Withheld by validation (a result outside the contract): ERROR, and a `withheld` event.
    WithheldByValidation,
}

/// The run's root span: the one `invoke_agent` span without a parent.
fn root_of(spans: &[SpanRecord]) -> &SpanRecord {
    let roots: Vec<&SpanRecord> = spans.iter().filter(|s| s.parent_id.is_none()).collect();
    assert_eq!(roots.len(), 1, "one root: {spans:?}");
    assert_eq!(roots[0].name, "invoke_agent");
    roots[0]
}

fn string_array(value: Option<&AttrValue>) -> Vec<String> {
    match value {
        Some(AttrValue::StringArray(items)) => items.clone(),
        other => panic!("a string array, not {other:?}"),
    }
}

/// Read run `id`'s stored `spans.jsonl` and `envelope.json` apart and check they tell the
/// same story: the same trace, and a root whose status, `dd.outcome` and `withheld` event say
/// what the envelope's outcome and problem say. Returns how the run ended and its root.
fn check_agreement(runs: &Path, id: &str) -> (Told, SpanRecord) {
    let envelope = stored_envelope(runs, id);
    let spans = stored_spans(runs, id);
    let root = root_of(&spans).clone();
    let trace_id = root.trace_id.to_string();
    assert_eq!(envelope["telemetry"]["trace_id"], trace_id.as_str(), "{id}");
    for span in &spans {
        assert_eq!(span.trace_id, root.trace_id, "one trace per run: {span:?}");
    }

    let status = envelope["outcome"]["status"].as_str().unwrap_or_default();
    let problem_type = problem_type(&envelope);
    let statement = envelope["outcome"]["statement"]
        .as_str()
        .unwrap_or_default();
    let withheld: Vec<_> = root
        .events
        .iter()
        .filter(|e| e.name == event::WITHHELD)
        .collect();
    let told = if status != "failed" {
        Told::NotFailed
    } else if problem_type.ends_with("/grounding-violation") {
        Told::WithheldByGrounding
    } else if statement.starts_with("Agent result violates the contract") {
        Told::WithheldByValidation
    } else {
        Told::Failed
    };

    match told {
        Told::NotFailed => {
            assert_eq!(root.status.code, StatusCode::Unset, "{id}: {root:?}");
            assert_eq!(root.status.description, None);
            assert_eq!(root.owned_str(attr::OUTCOME), Some(status));
        }
        _ => {
            assert_eq!(root.status.code, StatusCode::Error, "{id}: {root:?}");
            let title = envelope["problem"]["title"].as_str().expect("a title");
            assert_eq!(root.status.description.as_deref(), Some(title), "{id}");
        }
    }
    match told {
        Told::NotFailed | Told::Failed => {
            assert!(
                withheld.is_empty(),
                "{id}: nothing was withheld: {withheld:?}"
            );
            if told == Told::Failed {
                assert_eq!(root.owned_str(attr::OUTCOME), Some("failed"));
            }
        }
        Told::WithheldByGrounding | Told::WithheldByValidation => {
            let [event] = withheld.as_slice() else {
                panic!("{id}: one withheld event: {:?}", root.events)
            };
            // The root still says what the agent claimed; the event and the
            // status say what became of it. Only a success is withheld for its grounding.
            if told == Told::WithheldByGrounding {
                assert_eq!(root.owned_str(attr::OUTCOME), Some("succeeded"), "{id}");
            }
            let stage = if told == Told::WithheldByGrounding {
                "grounding_check"
            } else {
                "validation"
            };
            assert_eq!(
                event.attributes.get(attr::WITHHELD_STAGE),
                Some(&AttrValue::String(stage.into()))
            );
            let violations = string_array(event.attributes.get(attr::WITHHELD_VIOLATIONS));
            assert!(!violations.is_empty());
            for violation in &violations {
                assert!(statement.contains(violation.as_str()), "{violation}");
            }
            if told == Told::WithheldByGrounding {
                let rules = string_array(event.attributes.get(attr::WITHHELD_RULES));
                assert!(!rules.is_empty());
                // Each rule the event names is one a violation in the envelope names.
                for rule in &rules {
                    assert!(
                        statement.contains(&format!("{rule}:")),
                        "{rule}: {statement}"
                    );
                }
                // And the stored grounding report lists the same violations.
                let report = grounding_txt(runs, id);
                let listed: Vec<&str> = report
                    .lines()
                    .filter_map(|l| l.trim_start().strip_prefix("- "))
                    .collect();
                assert_eq!(listed, violations, "{id}: {report}");
            }
        }
    }
    // The waterfall (`ddwire show`, the viewer) reads the same files to the same verdict.
    let view = RunView {
        envelope: envelope.clone(),
        spans: spans.clone(),
        ..RunView::default()
    };
    let withheld_told = matches!(told, Told::WithheldByGrounding | Told::WithheldByValidation);
    assert_eq!(view.withheld().is_some(), withheld_told, "{id}");
    (told, root)
}

/// The run an A2A reply made, and the `dd.trace_id` in the task's metadata.
fn run_of(task: &ddwire::wire::a2a::model::Task) -> (String, Option<String>) {
    let envelope = envelope_of(task);
    let trace_id = task
        .metadata
        .as_ref()
        .and_then(|m| m.get(meta::TRACE_ID))
        .and_then(Value::as_str)
        .map(str::to_string);
    (
        envelope["invocation_id"].as_str().unwrap().to_string(),
        trace_id,
    )
}

#[test]
fn every_outcome_the_demo_makes_is_told_alike_by_its_stored_trace_and_envelope() {
    let th = demo_harness();
    let echo = json!({"schema_class": "Echo", "value": 1});
    let cases = [
        (
            "hello.world",
            message("Hello"),
            "succeeded",
            Told::NotFailed,
        ),
        (
            "stub.abstain",
            message("Decide?"),
            "abstained",
            Told::NotFailed,
        ),
        ("echo.wire", echo.clone(), "failed", Told::Failed),
        ("hello.world", echo, "failed", Told::Failed),
        (
            "demo.ungrounded",
            message("Capital of Atlantis?"),
            "failed",
            Told::WithheldByGrounding,
        ),
        (
            "demo.failing",
            message("Please try"),
            "failed",
            Told::Failed,
        ),
        (
            "director.route",
            message("Say hello"),
            "succeeded",
            Told::NotFailed,
        ),
    ];
    for (agent, input, status, expected) in cases {
        let task = send(&th, request(agent, input));
        let (id, named) = run_of(&task);
        let (told, root) = check_agreement(&th.runs, &id);
        assert_eq!(told, expected, "{agent}");
        assert_eq!(
            stored_envelope(&th.runs, &id)["outcome"]["status"],
            status,
            "{agent}"
        );
        // The reply names the run's trace, and so does the task read again.
        assert_eq!(named, Some(root.trace_id.to_string()), "{agent}");
        let again = th.client.get_task(&th.target(), &task.id, T).unwrap();
        assert_eq!(run_of(&again).1, named, "{agent}");
        // A delegated child is a run of its own, told alike, linked to the parent's
        // `delegate` span.
        for delegation in stored_envelope(&th.runs, &id)["delegations"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let child = delegation["delegated_invocation_id"].as_str().unwrap();
            let (child_told, child_root) = check_agreement(&th.runs, child);
            assert_eq!(child_told, Told::NotFailed);
            let delegate = only(&stored_spans(&th.runs, &id), "delegate").clone();
            assert_eq!(child_root.links.len(), 1, "{child_root:?}");
            assert_eq!(child_root.links[0].span_id, delegate.span_id);
            assert_ne!(child_root.trace_id, root.trace_id);
        }
    }
}

#[test]
fn a_run_whose_agent_times_out_is_told_alike_by_its_stored_trace_and_envelope() {
    let slow = ScriptedAgent::new(
        GroundingMode::None,
        behave(|_, ctx| {
            std::thread::sleep(Duration::from_millis(1000));
            Ok(review_of_input(ctx))
        }),
    );
    let agents: Vec<Arc<dyn Agent>> = vec![Arc::new(slow)];
    let profile = permissive_profile(&agents);
    let th = TestHarness::with_profile(agents, &profile, Duration::from_millis(100));
    let task = send(&th, request("fake.none", record()));
    let (id, _) = run_of(&task);
    assert!(failed_with(&stored_envelope(&th.runs, &id), "agent-error"));
    assert_eq!(check_agreement(&th.runs, &id).0, Told::Failed);
}

#[test]
fn a_run_whose_harness_panicked_is_told_alike_by_its_stored_trace_and_envelope() {
    let th = TestHarness::new(vec![Arc::new(ScriptedAgent::new(
        GroundingMode::None,
        reviews(),
    ))]);
    th.panic_in_calls_to(Some("fake.none"));
    let task = send(&th, request("fake.none", record()));
    th.panic_in_calls_to(None);
    let (id, named) = run_of(&task);
    assert_eq!(
        stored_envelope(&th.runs, &id)["outcome"]["status"],
        "failed"
    );
    let (told, root) = check_agreement(&th.runs, &id);
    assert_eq!(told, Told::Failed);
    assert_eq!(named, Some(root.trace_id.to_string()));
}

#[test]
fn a_result_outside_the_contract_is_withheld_with_an_event_naming_its_violations() {
    // Abstained without a reason code: outside the contract, so validation withholds it.
    let th = TestHarness::new(vec![Arc::new(ScriptedAgent::new(
        GroundingMode::None,
        returns(AgentResult::new(Outcome {
            status: OutcomeStatus::Abstained,
            reason_code: None,
            referred_to: None,
            statement: "No reason.".into(),
        })),
    ))]);
    let task = send(&th, request("fake.none", record()));
    let (id, _) = run_of(&task);
    let (told, root) = check_agreement(&th.runs, &id);
    assert_eq!(told, Told::WithheldByValidation);
    assert_eq!(root.owned_str(attr::OUTCOME), Some("abstained"));
}

// --- The caller's trace ------------------------------------------------------------------

/// A v0.3 `message/send` body carrying `doc`, with message `metadata`, spelled by hand.
fn send_body(doc: Value, metadata: Map<String, Value>) -> Vec<u8> {
    json!({
        "jsonrpc": "2.0",
        "id": new_uuid7(),
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": new_uuid7(),
                "role": "user",
                "parts": [{"kind": "data", "data": doc}],
                "metadata": metadata,
            },
            "configuration": {"blocking": true, "acceptedOutputModes": ["application/json"]},
        },
    })
    .to_string()
    .into_bytes()
}

/// POST a `message/send` to the harness with extra header fields; the HTTP response.
fn post_send(th: &TestHarness, body: Vec<u8>, headers: &[(&str, &str)]) -> ClientResponse {
    let mut request = ClientRequest::post_json(th.target().url, body, T);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    th.client.http.send(request).expect("the harness answers")
}

/// The invocation id in a `message/send` reply's task.
fn invocation_in(response: &ClientResponse) -> String {
    let reply: Value = serde_json::from_slice(&response.body).expect("JSON");
    let artifacts = reply["result"]["artifacts"].as_array().expect("artifacts");
    let envelope = artifacts
        .iter()
        .find(|a| a["name"] == "envelope")
        .expect("an envelope artifact");
    assert_eq!(
        reply["result"]["metadata"][meta::TRACE_ID],
        envelope["parts"][0]["data"]["telemetry"]["trace_id"],
        "{reply}"
    );
    envelope["parts"][0]["data"]["invocation_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn hello_harness() -> TestHarness {
    TestHarness::new(vec![builtin::by_name("hello").unwrap()])
}

fn hello() -> Value {
    request("hello.world", message("Hello"))
}

/// The `traceresponse` a reply carries names the stored run's root: its trace and span.
fn assert_names_root(traceresponse: Option<&str>, root: &SpanRecord) {
    assert_eq!(
        traceresponse,
        Some(format!("00-{}-{}-01", root.trace_id, root.span_id).as_str())
    );
}

#[test]
fn a_callers_traceparent_header_on_a2a_becomes_a_link_on_the_runs_root_in_a_trace_of_its_own() {
    let th = hello_harness();
    let response = post_send(
        &th,
        send_body(hello(), Map::new()),
        &[
            ("traceparent", CALLER),
            ("tracestate", "rojo=00f067aa0ba902b7"),
        ],
    );
    assert_eq!(response.status, 200);
    let id = invocation_in(&response);
    let spans = stored_spans(&th.runs, &id);
    let root = root_of(&spans);
    let caller = SpanContext::extract(Some(CALLER), None).unwrap();
    assert_ne!(
        root.trace_id, caller.trace_id,
        "the run keeps its own trace"
    );
    assert_eq!(root.parent_id, None);
    assert_eq!(root.links.len(), 1, "{root:?}");
    assert_eq!(root.links[0].trace_id, caller.trace_id);
    assert_eq!(root.links[0].span_id, caller.span_id);
    assert_eq!(
        root.links[0].trace_state.0,
        vec![("rojo".to_string(), "00f067aa0ba902b7".to_string())]
    );
    // The agent's spans are in the run's trace, under its root, not the caller's.
    assert!(spans.iter().all(|s| s.trace_id == root.trace_id));
    assert_names_root(response.header("traceresponse"), root);
}

#[test]
fn a_callers_traceparent_in_the_message_metadata_becomes_a_link_on_the_runs_root() {
    let th = hello_harness();
    let mut metadata = Map::new();
    metadata.insert(meta::TRACEPARENT.into(), json!(CALLER));
    let response = post_send(&th, send_body(hello(), metadata), &[]);
    let id = invocation_in(&response);
    let spans = stored_spans(&th.runs, &id);
    let root = root_of(&spans);
    let caller = SpanContext::extract(Some(CALLER), None).unwrap();
    assert_eq!(root.links.len(), 1);
    assert_eq!(
        (root.links[0].trace_id, root.links[0].span_id),
        (caller.trace_id, caller.span_id)
    );
    assert_ne!(root.trace_id, caller.trace_id);
}

#[test]
fn an_invalid_traceparent_is_ignored_and_the_run_is_linked_to_nothing() {
    let th = hello_harness();
    for bad in [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "not a traceparent",
    ] {
        let response = post_send(&th, send_body(hello(), Map::new()), &[("traceparent", bad)]);
        assert_eq!(response.status, 200);
        let id = invocation_in(&response);
        let spans = stored_spans(&th.runs, &id);
        let root = root_of(&spans);
        assert!(root.links.is_empty(), "{bad}: {root:?}");
        assert_names_root(response.header("traceresponse"), root);
    }
}

#[test]
fn a_send_that_makes_no_run_names_no_trace() {
    let th = hello_harness();
    let response = post_send(
        &th,
        send_body(request("no.such.agent", message("Hi")), Map::new()),
        &[("traceparent", CALLER)],
    );
    assert_eq!(response.status, 200);
    let reply: Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(reply["result"]["status"]["state"], "failed", "{reply}");
    assert_eq!(response.header("traceresponse"), None);
}

/// `POST /agui` with headers: the HTTP response, its stream read to the end.
fn post_agui_raw(th: &TestHarness, body: &Value, headers: &[(&str, &str)]) -> ClientResponse {
    let mut request = ClientRequest::post_json(
        format!("{HARNESS_URL}/agui"),
        body.to_string().into_bytes(),
        T,
    )
    .header("Accept", "text/event-stream");
    for (name, value) in headers {
        request = request.header(name, value);
    }
    th.client.http.send(request).expect("the harness answers")
}

#[test]
fn a_callers_traceparent_on_agui_becomes_a_link_and_run_finished_names_the_runs_trace() {
    let th = hello_harness();
    let thread = new_uuid7();
    let response = post_agui_raw(
        &th,
        &agui_body(&hello(), &thread),
        &[("traceparent", CALLER)],
    );
    assert_eq!(response.status, 200);
    let stream = String::from_utf8(response.body.clone()).unwrap();
    let events = events(&stream);
    let finished = events.last().expect("events");
    assert_eq!(finished["type"], "RUN_FINISHED", "{stream}");
    let id = finished["result"]["invocation_id"].as_str().unwrap();
    let spans = stored_spans(&th.runs, id);
    let root = root_of(&spans);
    assert_eq!(
        finished["result"]["telemetry"]["trace_id"],
        root.trace_id.to_string()
    );
    let caller = SpanContext::extract(Some(CALLER), None).unwrap();
    assert_eq!(root.links.len(), 1);
    assert_eq!(
        (root.links[0].trace_id, root.links[0].span_id),
        (caller.trace_id, caller.span_id)
    );
    assert_ne!(root.trace_id, caller.trace_id);
    assert_names_root(response.header("traceresponse"), root);
}

#[test]
fn a_send_reusing_a_stored_runs_id_names_no_trace_on_either_transport() {
    let th = hello_harness();
    let first = post_send(&th, send_body(hello(), Map::new()), &[]);
    let id = invocation_in(&first);
    let mut reused = hello();
    reused["invocation_id"] = json!(id);
    // A2A: the conductor refuses it (a failed task), and no run is made.
    let again = post_send(&th, send_body(reused.clone(), Map::new()), &[]);
    let reply: Value = serde_json::from_slice(&again.body).unwrap();
    assert_eq!(reply["result"]["status"]["state"], "failed", "{reply}");
    assert_eq!(again.header("traceresponse"), None);
    assert!(reply["result"].get("metadata").is_none(), "{reply}");
    // Nor when the send does not wait: it is answered before the conductor refuses the run.
    let mut body: Value = serde_json::from_slice(&send_body(reused.clone(), Map::new())).unwrap();
    body["params"]["configuration"]["blocking"] = json!(false);
    let at_once = post_send(&th, body.to_string().into_bytes(), &[]);
    assert_eq!(at_once.status, 200);
    assert_eq!(at_once.header("traceresponse"), None);
    // AG-UI: one RUN_ERROR, and the head names no trace either.
    let response = post_agui_raw(&th, &agui_body(&reused, &new_uuid7()), &[]);
    let stream = String::from_utf8(response.body.clone()).unwrap();
    let events = events(&stream);
    assert_eq!(types(&events), ["RUN_ERROR"], "{stream}");
    assert_eq!(response.header("traceresponse"), None);
}
