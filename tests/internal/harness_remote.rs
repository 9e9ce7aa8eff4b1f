//! Agents behind A2A, as the harness calls them (the reference's `test_remote.py`): what crosses
//! the wire, and what the conductor does with it. Spec invariants 1, 4, 6, 7 and 13.

use super::common;

use common::*;
use ddwire::agent::server::serve_in_memory;
use ddwire::contract::validate_envelope;
use ddwire::contract::{GroundingMode, InvocationRequest};
use ddwire::harness::conductor::Conductor;
use ddwire::harness::policy::Profile;
use ddwire::harness::registry::{Registry, RemoteAgent};
use ddwire::harness::store::RunStore;
use ddwire::harness::testkit::{TestHarness, test_principal};
use ddwire::trace::{SpanContext, SpanId, SpanName, Tracer, attr};
use ddwire::wire::a2a::client::A2aClient;
use ddwire::wire::http::memory::MemoryNet;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Spec invariants 1, 4, 6: the agent's spans come back beside its result and join the
/// conductor's trace under `invoke_agent`, parented through the `traceparent` it was sent.
#[test]
fn agent_spans_join_the_conductors_trace_under_invoke_agent() {
    let agent = ScriptedAgent::new(GroundingMode::Retrieval, checks(vec![source_a()]))
        .steps(vec![Step::Retrieve(source_a())])
        .arc();
    let th = TestHarness::new(vec![dyn_agent(&agent)]);
    let run = invoke(&th, request("fake.retrieval", claim()));
    assert_eq!(
        run.envelope.outcome.status.as_str(),
        "succeeded",
        "{}",
        run.envelope.outcome.statement
    );

    let spans = stored_spans(&th.runs, &run.envelope.invocation_id);
    let root = only(&spans, "invoke_agent");
    let retrieval = only(&spans, "retrieval");
    assert_eq!(retrieval.trace_id, root.trace_id);
    assert_eq!(
        Some(root.trace_id.to_string()),
        run.envelope.telemetry.trace_id
    );
    assert_eq!(retrieval.parent_id, Some(root.span_id));
    // The retrieval span was recorded by the agent's own tracer, not the conductor's.
    assert_eq!(
        retrieval.resource.attributes.get("service.name"),
        Some(&"fake.retrieval".into())
    );
    assert_eq!(agent.calls(), 1);
}

/// Assert that `run` was withheld by the linter for a reason naming `why`; its envelope.
fn assert_withheld(run: &ddwire::harness::conductor::Run, why: &str) -> serde_json::Value {
    let env = run.envelope.to_document();
    assert!(failed_with(&env, "grounding-violation"), "{env}");
    let statement = &run.envelope.outcome.statement;
    assert!(statement.contains(why), "{why}: {statement}");
    env
}

fn spoofing(attribute: &'static str, value: String) -> ScriptedAgent {
    ScriptedAgent::new(
        GroundingMode::InputOnly,
        behave(move |_, ctx| {
            let chat = ctx.tracer.chat("fake-model");
            chat.set(attribute, value.as_str());
            chat.end();
            Ok(review_of_input(ctx))
        }),
    )
}

/// Spec invariant 7: `dd.grounding_mode` and `dd.input_hash` belong to the conductor's root;
/// an agent span carrying one is a grounding violation that names the attribute.
#[test]
fn a_span_carrying_a_conductor_attribute_is_withheld() {
    for (attribute, value) in [
        (attr::GROUNDING_MODE, "none".to_string()),
        (attr::INPUT_HASH, "0".repeat(64)),
    ] {
        let th = TestHarness::new(vec![Arc::new(spoofing(attribute, value))]);
        let run = invoke(&th, request("fake.input-only", record()));
        let env = assert_withheld(&run, attribute);
        assert!(env.get("payload").is_none());
    }
}

/// Spec invariant 6: imported spans are kept under the conductor's trace whatever trace they
/// name, so a `none` agent that hides its model call in a trace of its own does not escape.
#[test]
fn a_span_outside_the_invocations_trace_is_withheld() {
    let agent = ScriptedAgent::new(
        GroundingMode::None,
        behave(|_, ctx| {
            ctx.tracer
                .span(SpanName::Chat)
                .attribute(attr::MODEL_ID, "hidden-model")
                .new_trace()
                .start()
                .end();
            Ok(review_of_input(ctx))
        }),
    );
    let th = TestHarness::new(vec![Arc::new(agent)]);
    let run = invoke(&th, request("fake.none", record()));
    assert_withheld(&run, "not the invocation's trace");
    // The foreign span was not dropped: it is stored beside the conductor's.
    let spans = stored_spans(&th.runs, &run.envelope.invocation_id);
    let root = only(&spans, "invoke_agent");
    let chat = only(&spans, "chat");
    assert_ne!(chat.trace_id, root.trace_id);
    // Read back from the store, the trace still shows it.
    let offline = lint_stored(&th.runs, &run.envelope.invocation_id);
    assert!(
        offline
            .violations
            .iter()
            .any(|v| v.starts_with("G0") && v.contains("not the invocation's trace")),
        "{:?}",
        offline.violations
    );
}

/// Spec invariant 6: a span in the invocation's trace that hangs outside the tree rooted at
/// `invoke_agent` is withheld too.
#[test]
fn a_span_that_does_not_descend_from_invoke_agent_is_withheld() {
    let agent = ScriptedAgent::new(
        GroundingMode::InputOnly,
        behave(|_, ctx| {
            let root = ctx
                .tracer
                .remote_parent()
                .expect("the conductor's traceparent")
                .clone();
            let elsewhere = SpanContext {
                span_id: SpanId::random(),
                ..root
            };
            ctx.tracer
                .span(SpanName::Chat)
                .attribute(attr::MODEL_ID, "m")
                .parent(elsewhere)
                .start()
                .end();
            Ok(review_of_input(ctx))
        }),
    );
    let th = TestHarness::new(vec![Arc::new(agent)]);
    let run = invoke(&th, request("fake.input-only", record()));
    assert_withheld(&run, "does not descend from invoke_agent");
}

/// Spec invariant 13: an agent past its timeout is a failed `agent-error` envelope, returned
/// when the timeout expires, not when the agent finishes.
#[test]
fn an_agent_that_exceeds_its_timeout_is_a_failed_envelope() {
    let slow = ScriptedAgent::new(
        GroundingMode::None,
        behave(|_, ctx| {
            std::thread::sleep(Duration::from_millis(1000));
            Ok(review_of_input(ctx))
        }),
    );
    let agents: Vec<Arc<dyn ddwire::agent::Agent>> = vec![Arc::new(slow)];
    let profile = permissive_profile(&agents);
    let th = TestHarness::with_profile(agents, &profile, Duration::from_millis(100));
    let started = Instant::now();
    let run = invoke(&th, request("fake.none", record()));
    let elapsed = started.elapsed();
    let env = run.envelope.to_document();
    assert!(failed_with(&env, "agent-error"), "{env}");
    assert!(
        env["problem"]["detail"]
            .as_str()
            .unwrap()
            .contains("timeout"),
        "{env}"
    );
    assert!(elapsed < Duration::from_millis(900), "{elapsed:?}");
    // The failure is stored like any run, and the stored envelope is valid.
    validate_envelope(&stored_envelope(&th.runs, &run.envelope.invocation_id)).unwrap();
}

/// Spec invariant 13: an agent that goes away after registration (its host taken off the
/// in-memory network) is a failed `agent-error` envelope whose detail says the connection was
/// refused, titled as unreachable rather than as an exception the agent raised.
#[test]
fn an_agent_that_goes_away_after_registration_is_a_failed_envelope() {
    let th = TestHarness::new(vec![Arc::new(ScriptedAgent::new(
        GroundingMode::None,
        reviews(),
    ))]);
    th.net.remove("fake.none.agents.test");
    let run = invoke(&th, request("fake.none", record()));
    let env = run.envelope.to_document();
    assert!(failed_with(&env, "agent-error"), "{env}");
    assert!(
        env["problem"]["detail"]
            .as_str()
            .unwrap()
            .contains("connection refused"),
        "{env}"
    );
    // Its own problem: nothing reached the agent, so it did not raise anything.
    assert_eq!(
        env["problem"]["title"], "Agent could not be reached",
        "{env}"
    );
    assert!(
        env["outcome"]["statement"]
            .as_str()
            .unwrap()
            .starts_with("Agent unreachable: "),
        "{env}"
    );
    assert!(th.harness.conductor.store.has(&run.envelope.invocation_id));
}

/// Spec invariant 13 over a socket: an agent whose loopback server has stopped is a failed
/// envelope at once. The conductor's client may reuse the connection kept alive from reading
/// the card: the stopped server answers a request on it with 503 and closes it; a new
/// connection is refused.
#[test]
fn an_agent_whose_loopback_server_stopped_is_a_failed_envelope() {
    let client = A2aClient::default();
    let server = ddwire::agent::server::serve(
        Arc::new(ScriptedAgent::new(GroundingMode::None, reviews())),
        "127.0.0.1:0",
        None,
    )
    .unwrap();
    let mut registry = Registry::default();
    registry
        .add(RemoteAgent::from_url(&client, &server.base_url(), Duration::from_secs(2)).unwrap())
        .unwrap();
    let runs = TempDir::new("remote-gone-tcp");
    let profile = Profile::from_bytes(
        br#"{"profile_id": "p", "agents": {"fake.none": "advise"}}"#,
        "p.json",
    )
    .unwrap();
    let conductor = Conductor::new(
        registry,
        profile,
        RunStore::open(runs.path()).unwrap(),
        client,
    );
    let server_url = server.base_url();
    server.shutdown();
    let request = InvocationRequest::from_value(&request("fake.none", record())).unwrap();
    let run = conductor.invoke(request, &test_principal()).unwrap();
    let env = run.envelope.to_document();
    assert!(failed_with(&env, "agent-error"), "{env}");
    let detail = env["problem"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("503") || detail.contains("connection refused"),
        "{env}"
    );
    // A new connection is refused outright.
    let fresh = A2aClient::default().fetch_card(&server_url, Duration::from_secs(2));
    assert!(fresh.is_err());
    assert!(fresh.unwrap_err().to_string().contains("refused"));
}

/// Spec invariant 1: the in-memory transport and loopback TCP carry the same bytes through the
/// same agent server, so the conductor reaches the same outcome over either.
#[test]
fn an_in_process_agent_and_its_remote_twin_produce_the_same_outcome() {
    let agent = ScriptedAgent::new(GroundingMode::None, returns(abstain("Nothing."))).arc();
    let th = TestHarness::new(vec![dyn_agent(&agent)]);
    let in_memory = invoke(&th, request("fake.none", record())).envelope;

    let runs = TempDir::new("remote-twin");
    let (conductor, servers) = tcp_conductor(vec![dyn_agent(&agent)], runs.path());
    let request = InvocationRequest::from_value(&request("fake.none", record())).unwrap();
    let over_tcp = conductor
        .invoke(request, &test_principal())
        .unwrap()
        .envelope;
    for s in servers {
        s.shutdown();
    }

    assert_eq!(in_memory.outcome, over_tcp.outcome);
    assert_eq!(in_memory.grounding_mode, over_tcp.grounding_mode);
    assert_eq!(in_memory.agent_version, over_tcp.agent_version);
    assert_eq!(in_memory.outcome.status.as_str(), "abstained");
    assert_eq!(agent.calls(), 2);
}

/// A hand-written peer that answers as `answer(call)` decides, registered as `fake.none`.
fn misbehaving(answer: impl Fn(&Value) -> Value + Send + Sync + 'static) -> TestHarness {
    let net = MemoryNet::new();
    let base = "http://peer.test";
    let card = card_of(&scripted_spec(GroundingMode::None), base);
    raw_peer(&net, "peer.test", card, answer);
    harness_on(
        net,
        &[base.to_string()],
        r#"{"profile_id": "test-permissive", "agents": {"fake.none": "advise"}}"#,
        None,
        T,
    )
}

/// Spec invariants 4, 5, 6: the reply carries the spans beside the result, each as a JSON
/// string; the conductor files them under its trace.
#[test]
fn the_reply_carries_the_spans_beside_the_result() {
    let th = misbehaving(|call| {
        let traceparent = call["params"]["message"]["metadata"]["traceparent"]
            .as_str()
            .map(str::to_string);
        let tracer = Tracer::new("peer")
            .with_remote_parent(SpanContext::extract(traceparent.as_deref(), None));
        tracer.execute_tool("lookup").end();
        let spans: Vec<Value> = tracer
            .take_all()
            .iter()
            .map(|s| Value::String(ddwire::trace::to_json(s)))
            .collect();
        let result = json!({"outcome": {"status": "abstained", "reason_code": "not_applicable", "statement": "Peer."}, "evidence": []});
        completed_with(call, json!({"result": result, "spans": spans}))
    });
    let run = invoke(&th, request("fake.none", record()));
    assert_eq!(run.envelope.outcome.statement, "Peer.");
    let spans = stored_spans(&th.runs, &run.envelope.invocation_id);
    let root = only(&spans, "invoke_agent");
    let tool = only(&spans, "execute_tool");
    assert_eq!(
        (tool.trace_id, tool.parent_id),
        (root.trace_id, Some(root.span_id))
    );
    assert!(run.report.passed, "{:?}", run.report.violations);
}

/// How a hand-written peer answers one JSON-RPC call.
type Answer = Box<dyn Fn(&Value) -> Value + Send + Sync>;

/// Spec invariants 5 and 13: a reply whose spans are not JSON strings, whose agent-result is
/// outside the contract, whose task failed, or which has no agent-result artifact is a failed
/// `agent-error` envelope, stored and valid; the conductor does not crash.
#[test]
fn a_reply_outside_the_contract_is_an_agent_error() {
    let abstained = json!({"outcome": {"status": "abstained", "reason_code": "not_applicable", "statement": "x"}, "evidence": []});
    let cases: Vec<(&str, Answer)> = vec![
        ("not JSON strings", {
            let abstained = abstained.clone();
            Box::new(move |call| {
                let span = json!({"name": "retrieval", "context": {"trace_id": "0x01", "span_id": "0x02"}});
                completed_with(call, json!({"result": abstained, "spans": [span]}))
            })
        }),
        (
            "does not conform to the contract",
            Box::new(|call| {
                completed_with(
                    call,
                    json!({"result": {"outcome": {"statement": "no status"}}, "spans": []}),
                )
            }),
        ),
        (
            "the peer gave up",
            Box::new(|call| {
                json!({"task": {"id": "t", "contextId": "c",
                    "status": {"state": "TASK_STATE_FAILED", "message": {"messageId": "m", "role": "ROLE_AGENT",
                        "parts": [{"data": {"error": "the peer gave up"}}]}},
                    "history": [call["params"]["message"]]}})
            }),
        ),
        (
            "agent-result artifacts",
            Box::new(|call| {
                json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
                    "history": [call["params"]["message"]]}})
            }),
        ),
        (
            "returned no task",
            Box::new(
                |_| json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}),
            ),
        ),
    ];
    for (expected, answer) in cases {
        let th = misbehaving(answer);
        let run = invoke(&th, request("fake.none", record()));
        let env = run.envelope.to_document();
        assert!(failed_with(&env, "agent-error"), "{expected}: {env}");
        assert!(
            env["problem"]["detail"]
                .as_str()
                .unwrap()
                .contains(expected),
            "{expected}: {env}"
        );
        validate_envelope(&stored_envelope(&th.runs, &run.envelope.invocation_id)).unwrap();
    }
}

/// Spec invariant 1: the harness reaches an agent through the agent server at the URL its card
/// names, and the agent's run sees the request the caller sent.
#[test]
fn the_agent_sees_the_request_and_the_input_reference_the_conductor_sent() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record_seen = Arc::clone(&seen);
    let agent = ScriptedAgent::new(
        GroundingMode::None,
        behave(move |req, ctx| {
            record_seen.lock().unwrap().push((
                req.invocation_id.clone(),
                ctx.input_ref.clone(),
                ctx.input_hash.clone(),
                ctx.delegate.is_none(),
            ));
            Ok(review_of_input(ctx))
        }),
    );
    let net = MemoryNet::new();
    let url = serve_in_memory(&net, Arc::new(agent));
    assert_eq!(url, "http://fake.none.agents.test");
    let th = harness_on(
        net,
        &[url],
        r#"{"profile_id": "p", "agents": {"fake.none": "advise"}}"#,
        None,
        T,
    );
    let doc = request("fake.none", record());
    let run = invoke(&th, doc.clone());
    let id = doc["invocation_id"].as_str().unwrap().to_string();
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.as_slice(),
        [(
            id.clone(),
            format!("input:{id}"),
            ddwire::contract::input_hash(&doc["input"]),
            true
        )]
    );
    assert!(run.report.passed, "{:?}", run.report.violations);
}

/// Spec invariant 3: an agent returns an AgentResult, never an Envelope; whatever else its
/// reply says, the conductor alone fills identifiers, timestamps, telemetry, grounding mode,
/// profile and principal.
#[test]
fn an_agent_cannot_fill_what_only_the_conductor_fills() {
    let th = misbehaving(|call| {
        let result = json!({
            "outcome": {"status": "abstained", "reason_code": "not_applicable", "statement": "Posing."},
            "evidence": [],
            "invocation_id": "01900000-0000-7000-8000-000000000000",
            "grounding_mode": "retrieval",
            "policy_bundle_ref": "profile:anything@v9",
            "acting_for": {"principal_id": "urn:x:someone", "name": "Someone"},
            "telemetry": {"trace_id": "0".repeat(32), "energy_method": "measured"},
            "requires_human_review": false,
        });
        completed_with(call, json!({"result": result, "spans": []}))
    });
    let doc = request("fake.none", record());
    let run = invoke(&th, doc.clone());
    let env = run.envelope.to_document();
    assert_eq!(env["outcome"]["statement"], "Posing.");
    assert_eq!(env["invocation_id"], doc["invocation_id"]);
    assert_eq!(env["grounding_mode"], "none");
    assert_eq!(env["policy_bundle_ref"], "profile:test-permissive@v1");
    assert_eq!(env["acting_for"], principal_doc());
    assert_eq!(env["requires_human_review"], true);
    assert_eq!(env["telemetry"]["energy_method"], "not_measured");
    let spans = stored_spans(&th.runs, &run.envelope.invocation_id);
    assert_eq!(
        env["telemetry"]["trace_id"],
        only(&spans, "invoke_agent").trace_id.to_string()
    );
}

/// Spec invariant 10: attributes outside the owned set are informational; an agent's
/// `dd.tool_name` or any other key changes nothing the linter decides.
#[test]
fn informational_attributes_change_nothing_the_linter_decides() {
    let agent = ScriptedAgent::new(
        GroundingMode::InputOnly,
        behave(|_, ctx| {
            ctx.tracer.execute_tool("grep").end();
            let chat = ctx.tracer.chat("m");
            chat.set("gen_ai.request.model", "m");
            chat.set("dd.grounding_mode_hint", "retrieval");
            chat.end();
            Ok(review_of_input(ctx))
        }),
    );
    let th = TestHarness::new(vec![Arc::new(agent)]);
    let run = invoke(&th, request("fake.input-only", record()));
    assert!(run.report.passed, "{:?}", run.report.violations);
    assert_eq!(run.envelope.outcome.status.as_str(), "succeeded");
    let spans = stored_spans(&th.runs, &run.envelope.invocation_id);
    let tool = only(&spans, "execute_tool");
    assert!(tool.attributes.get(attr::TOOL_NAME).is_some());
    assert!(tool.owned(attr::TOOL_NAME).is_none());
}
