//! The harness's own transports over the in-memory wire (the reference's `test_transport.py`):
//! A2A in both bindings, AG-UI over Server-Sent Events, and the JSON routes. Spec invariants 2,
//! 12 and 15, and the spec's AG-UI paragraph.

use super::common;

use common::*;
use ddwire::agent::Agent;
use ddwire::agent::builtin::{Hello, Stub};
use ddwire::contract::{GroundingMode, Principal, PrincipalKind};
use ddwire::harness::identity::{Authenticator, token_digest};
use ddwire::harness::testkit::{HARNESS_URL, TestHarness};
use ddwire::ids::new_uuid7;
use ddwire::wire::WireError;
use ddwire::wire::a2a::card::MANIFEST_EXTENSION_URI;
use ddwire::wire::a2a::client::Target;
use ddwire::wire::a2a::model::{Message, Part, Role, TaskState};
use ddwire::wire::a2a::{Binding, artifact};
use ddwire::wire::http::client::ClientRequest;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The agents every transport test serves: two built-ins and two scripted ones.
fn agents() -> Vec<Arc<dyn Agent>> {
    vec![
        Arc::new(Hello::new()),
        Arc::new(Stub::new()),
        Arc::new(ScriptedAgent::new(GroundingMode::InputOnly, reviews())),
        Arc::new(
            ScriptedAgent::new(GroundingMode::Retrieval, checks(vec![source_a()]))
                .steps(vec![Step::Retrieve(source_a())]),
        ),
    ]
}

fn harness() -> TestHarness {
    TestHarness::new(agents())
}

fn naming_a_profile() -> Value {
    let mut doc = request("fake.input-only", record());
    doc["policy_bundle_ref"] = json!("profile:test-permissive@v1");
    doc
}

fn saying_whom_it_acts_for() -> Value {
    let mut doc = request("fake.input-only", record());
    doc["acting_for"] =
        json!({"principal_id": "https://orcid.org/0000-0000-0000-0000", "name": "Else"});
    doc
}

fn v03(th: &TestHarness) -> Target {
    Target {
        binding: Binding::V03,
        url: th.target().url,
    }
}

fn steward() -> Principal {
    Principal::new(
        "urn:example:role:data-steward",
        "Data steward",
        PrincipalKind::AccountableRole,
    )
    .unwrap()
}

fn bearer_harness() -> TestHarness {
    let agents = agents();
    let profile = permissive_profile(&agents);
    harness_with(
        agents,
        &profile,
        Some(Authenticator::Bearer(vec![
            ddwire::harness::identity::Token::new(token_digest("s3cret"), steward()),
        ])),
    )
}

// --- A2A -------------------------------------------------------------------------------------

/// The harness card lists one skill per registered agent with its grounding mode and input
/// classes, offers JSON-RPC first, and carries the manifest a delegation agent routes from.
#[test]
fn agent_card_lists_one_skill_per_agent_from_the_manifest() {
    let th = harness();
    let card = th.client.fetch_card(HARNESS_URL, T).unwrap();
    let skills: Vec<&Value> = card["skills"].as_array().unwrap().iter().collect();
    let ids: BTreeSet<&str> = skills.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        BTreeSet::from([
            "fake.input-only",
            "fake.retrieval",
            "hello.world",
            "stub.abstain"
        ])
    );
    assert_eq!(skills.len(), 4);
    let tags: BTreeSet<&str> = skills
        .iter()
        .find(|s| s["id"] == "fake.input-only")
        .unwrap()["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        [
            "data-director",
            "grounding:input_only",
            "accepts:ProbeRecord"
        ]
        .iter()
        .all(|t| tags.contains(t)),
        "{tags:?}"
    );
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    // The harness streams runs (message/stream); its agents do not.
    assert_eq!(card["capabilities"]["streaming"], true);
    let manifest = card["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["uri"] == MANIFEST_EXTENSION_URI)
        .expect("the manifest extension");
    assert_eq!(
        manifest["params"]["agents"],
        Value::Array(th.harness.conductor.registry.manifest())
    );
}

/// Spec invariant 12: `SendMessage` (A2A 1.0) and `message/send` (v0.3) both return a
/// completed task whose `envelope` artifact holds the envelope, and the run is stored; the task
/// is the run, so `tasks/get` answers it from the store.
#[test]
fn a2a_message_send_returns_envelope_artifact() {
    let th = harness();
    for target in [th.target(), v03(&th)] {
        let task = send_to(
            &th,
            &target,
            a2a_message(vec![request("fake.retrieval", claim())], None),
            &[],
        );
        assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
        assert_eq!(task.artifacts[0].name.as_deref(), Some(artifact::ENVELOPE));
        // Only a delegated call gets the envelope as text too.
        assert!(task.artifacts_named(artifact::ENVELOPE_JSON).is_empty());
        let env = envelope_of(&task);
        assert_eq!(env["outcome"]["status"], "succeeded", "{env}");
        assert_eq!(env["grounding_mode"], "retrieval");
        assert_eq!(env["requires_human_review"], true);
        let id = env["invocation_id"].as_str().unwrap();
        assert_eq!(task.id, id);
        assert_eq!(stored_envelope(&th.runs, id), env);

        let fetched = th.client.get_task(&target, id, T).unwrap();
        assert_eq!(fetched.status.state, TaskState::Completed);
        assert_eq!(envelope_of(&fetched), env);
    }
    assert_eq!(index_ids(&th.runs).len(), 2);
    let err = th
        .client
        .get_task(&th.target(), &new_uuid7(), T)
        .unwrap_err();
    assert!(
        // A2A's TaskNotFoundError.
        matches!(err, WireError::JsonRpc { code: -32001, .. }),
        "{err}"
    );
}

/// `POST /` is the A2A endpoint as well as `POST /a2a`, in both bindings, as `serve --help`
/// says: the root trims to no path segment and must still route.
#[test]
fn a2a_message_send_to_the_root_path_is_answered_like_a2a() {
    let th = harness();
    let root = format!("{HARNESS_URL}/");
    for binding in [Binding::V10, Binding::V03] {
        let target = Target {
            binding,
            url: root.clone(),
        };
        let task = send_to(
            &th,
            &target,
            a2a_message(vec![request("hello.world", message("hi"))], None),
            &[],
        );
        assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
        assert_eq!(envelope_of(&task)["outcome"]["status"], "succeeded");
    }
}

/// Spec invariant 12: an input the agent does not accept is an outcome the conductor decided:
/// a completed task carrying a failed `input-not-accepted` envelope.
#[test]
fn a2a_input_mismatch_is_an_envelope_not_a_transport_failure() {
    let th = harness();
    let task = send(&th, request("fake.retrieval", record()));
    assert_eq!(task.status.state, TaskState::Completed);
    let env = envelope_of(&task);
    assert!(failed_with(&env, "input-not-accepted"), "{env}");
    assert!(
        th.harness
            .conductor
            .store
            .has(env["invocation_id"].as_str().unwrap())
    );
}

/// Spec invariant 2: a request must carry exactly one data part, the InvocationRequest; two,
/// none (text only), or one that is not a request is a failed task and no run is made.
#[test]
fn a2a_rejects_malformed_request() {
    let th = harness();
    let one = request("stub.abstain", message("hello"));
    let text_only = Message::new(Role::User, vec![Part::text("hello")]);
    for (sent, detail) in [
        (
            a2a_message(vec![one.clone(), one.clone()], None),
            "expected exactly one data part, got 2",
        ),
        (text_only, "expected exactly one data part, got 0"),
        (
            a2a_message(vec![json!({"agent_id": "stub.abstain"})], None),
            "input",
        ),
    ] {
        let task = send_to(&th, &th.target(), sent, &[]);
        assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
        let reason = task.failure_detail().unwrap();
        assert!(reason.contains(detail), "{reason}");
        assert!(task.artifacts.is_empty());
    }
    assert!(index_ids(&th.runs).is_empty());
    assert_eq!(get(&th, "/runs"), (200, json!([])));
}

/// Spec invariant 12: a request that names its own profile is refused and runs nothing.
#[test]
fn a2a_fails_a_request_naming_a_profile_and_runs_nothing() {
    let agent = ScriptedAgent::new(GroundingMode::InputOnly, reviews()).arc();
    let th = TestHarness::new(vec![dyn_agent(&agent)]);
    let task = send(&th, naming_a_profile());
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(task.failure_detail().unwrap().contains("policy_bundle_ref"));
    assert!(index_ids(&th.runs).is_empty());
    assert_eq!(agent.calls(), 0);
}

/// Spec invariant 15: whom a run acts for is never read from the request; a request that says
/// is refused by A2A (a failed task) and by AG-UI (one RUN_ERROR), and nothing is stored.
#[test]
fn a_request_saying_whom_it_acts_for_is_refused_by_both_transports() {
    let th = harness();
    let task = send(&th, saying_whom_it_acts_for());
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(task.failure_detail().unwrap().contains("acting_for"));

    let (status, _, stream) = post_agui(&th, &agui_body(&saying_whom_it_acts_for(), "t1"), &[]);
    assert_eq!(status, 200);
    assert!(run_error_message(&stream).contains("acting_for"));
    assert!(index_ids(&th.runs).is_empty());
}

/// A caller may not set lineage: `parent_invocation_id` is the conductor's, from a grant.
#[test]
fn a2a_refuses_a_request_that_sets_its_own_lineage() {
    let th = harness();
    let mut doc = request("stub.abstain", message("hello"));
    doc["parent_invocation_id"] = json!(new_uuid7());
    let task = send(&th, doc.clone());
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(
        task.failure_detail()
            .unwrap()
            .contains("set by the conductor")
    );
    let (_, _, stream) = post_agui(&th, &agui_body(&doc, "t1"), &[]);
    assert_eq!(types(&events(&stream)), ["RUN_ERROR"]);
    assert!(index_ids(&th.runs).is_empty());
}

/// Spec invariant 12: an unknown agent is a failed task naming the agent and the known ones.
#[test]
fn a2a_reports_an_unknown_agent_as_a_failed_task() {
    let th = harness();
    let task = send(&th, request("no.such.agent", message("hello")));
    assert_eq!(task.status.state, TaskState::Failed);
    let reason = task.failure_detail().unwrap();
    assert!(
        reason.contains("no.such.agent") && reason.contains("hello.world"),
        "{reason}"
    );
    assert!(index_ids(&th.runs).is_empty());
}

/// Spec invariant 15: each transport records the principal its authenticator names, and
/// `/runs` shows it.
#[test]
fn each_transport_records_the_principal_its_authenticator_names() {
    let th = harness();
    let task = send(&th, request("fake.retrieval", claim()));
    assert_eq!(task.status.state, TaskState::Completed);
    let (_, _, stream) = post_agui(
        &th,
        &agui_body(&request("fake.retrieval", claim()), "t1"),
        &[],
    );
    assert_eq!(types(&events(&stream)).last().unwrap(), "RUN_FINISHED");
    let ids = index_ids(&th.runs);
    assert_eq!(ids.len(), 2);
    for id in &ids {
        assert_eq!(stored_envelope(&th.runs, id)["acting_for"], principal_doc());
    }
    let (status, runs) = get(&th, "/runs");
    assert_eq!(status, 200);
    let names: BTreeSet<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["acting_for"].as_str().unwrap())
        .collect();
    assert_eq!(names, BTreeSet::from(["Josiah Carberry"]));
}

/// Spec invariants 12, 15: under a bearer authenticator an unauthenticated caller is refused
/// before its body is parsed, with HTTP 401 and a `Bearer` challenge (`invalid_token` when a
/// token was presented), on A2A as a JSON-RPC error, and nothing runs; a caller presenting a
/// known token acts for the principal the token names, whatever else it says.
#[test]
fn an_unauthenticated_caller_is_refused_by_both_transports() {
    let th = bearer_harness();
    let post = |path: &str, body: &Value, auth: Option<&str>| {
        let mut req = ClientRequest::post_json(
            format!("{HARNESS_URL}{path}"),
            body.to_string().into_bytes(),
            T,
        );
        if let Some(auth) = auth {
            req = req.header("Authorization", auth);
        }
        th.client.http.send(req).unwrap()
    };
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": new_uuid7(), "role": "user",
                    "parts": [{"kind": "data", "data": request("stub.abstain", message("hello"))}]}}});
    for (auth, challenge) in [
        (None, "Bearer realm=\"ddwire\""),
        (
            Some("Bearer guess"),
            "Bearer realm=\"ddwire\", error=\"invalid_token\"",
        ),
    ] {
        let answer = post("/a2a", &call, auth);
        assert_eq!(answer.status, 401);
        assert_eq!(answer.header("www-authenticate"), Some(challenge));
        let reply: Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(reply["id"], Value::Null, "{reply}");
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        let text = reply["error"]["message"].as_str().unwrap();
        assert!(text.starts_with("Unauthenticated: "), "{text}");
        assert!(
            text.contains("unauthenticated") || text.contains("token"),
            "{text}"
        );
    }
    let agui = post(
        "/agui",
        &agui_body(&request("stub.abstain", message("hello")), "t1"),
        None,
    );
    assert_eq!(agui.status, 401);
    assert_eq!(
        agui.header("www-authenticate"),
        Some("Bearer realm=\"ddwire\"")
    );
    assert!(index_ids(&th.runs).is_empty());

    let ok = send_to(
        &th,
        &th.target(),
        a2a_message(vec![request("stub.abstain", message("hello"))], None),
        &[("Authorization", "Bearer s3cret")],
    );
    assert_eq!(ok.status.state, TaskState::Completed);
    assert_eq!(
        envelope_of(&ok)["acting_for"],
        serde_json::to_value(steward()).unwrap()
    );
    let (_, _, stream) = post_agui(
        &th,
        &agui_body(&request("stub.abstain", message("hello")), "t1"),
        &[("Authorization", "Bearer s3cret")],
    );
    let finished = events(&stream);
    assert_eq!(types(&finished).last().unwrap(), "RUN_FINISHED");
    assert_eq!(
        finished.last().unwrap()["result"]["acting_for"]["name"],
        "Data steward"
    );
}

/// RFC 9110 §11.1: the authentication scheme name is case-insensitive, so `BEARER` and
/// `bearer` authenticate as `Bearer` does, on both transports.
#[test]
fn the_bearer_scheme_is_matched_case_insensitively_by_both_transports() {
    let th = bearer_harness();
    for scheme in ["BEARER", "bearer", "BeArEr"] {
        let header = format!("{scheme} s3cret");
        let task = send_to(
            &th,
            &th.target(),
            a2a_message(vec![request("stub.abstain", message("hello"))], None),
            &[("Authorization", &header)],
        );
        assert_eq!(
            task.status.state,
            TaskState::Completed,
            "{header}: {task:?}"
        );
        let (_, _, stream) = post_agui(
            &th,
            &agui_body(&request("stub.abstain", message("hello")), "t1"),
            &[("Authorization", &header)],
        );
        assert_eq!(
            types(&events(&stream)).last().unwrap(),
            "RUN_FINISHED",
            "{header}"
        );
    }
    assert_eq!(index_ids(&th.runs).len(), 6);
}

/// A harness served without an authenticator runs nothing for an ordinary caller: it accepts
/// only delegation callbacks under a live grant.
#[test]
fn a_harness_without_an_authenticator_runs_nothing_for_a_caller() {
    let agents = agents();
    let profile = permissive_profile(&agents);
    let th = harness_with(agents, &profile, None);
    let task = send(&th, request("stub.abstain", message("hello")));
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(
        task.failure_detail()
            .unwrap()
            .contains("only delegation callbacks")
    );
    let (_, _, stream) = post_agui(
        &th,
        &agui_body(&request("stub.abstain", message("hello")), "t1"),
        &[],
    );
    assert_eq!(types(&events(&stream)), ["RUN_ERROR"]);
    assert!(index_ids(&th.runs).is_empty());
}

/// The JSON routes: runs, a run, its spans, agents, an agent, health; unknown or traversing
/// ids are 404 with `{"error": …}` naming what was asked for.
#[test]
fn the_json_routes_serve_runs_and_agents_and_404_anything_else() {
    let th = harness();
    let run = invoke(&th, request("fake.retrieval", claim()));
    let id = run.envelope.invocation_id.clone();

    let (status, runs) = get(&th, "/runs");
    assert_eq!(status, 200);
    assert_eq!(
        runs,
        json!([{
            "invocation_id": id, "agent_id": "fake.retrieval", "status": "succeeded",
            "completed_at": run.envelope.completed_at, "acting_for": "Josiah Carberry",
        }])
    );
    assert_eq!(
        get(&th, &format!("/runs/{id}")),
        (200, run.envelope.to_document())
    );
    let (status, spans) = get(&th, &format!("/runs/{id}/spans"));
    assert_eq!(status, 200);
    let lines: Vec<String> = spans
        .as_str()
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines, span_lines(&th.runs, &id));

    let (status, agents) = get(&th, "/agents");
    assert_eq!(status, 200);
    assert_eq!(agents, th.harness.conductor.registry.listing());
    let (status, agent) = get(&th, "/agents/hello.world");
    assert_eq!(status, 200);
    assert_eq!(agent["spec"]["agent_id"], "hello.world");
    assert_eq!(agent["card"]["name"], "hello.world");
    let (status, error) = get(&th, "/agents/no.such.agent");
    assert_eq!(status, 404);
    assert!(error["error"].as_str().unwrap().contains("no.such.agent"));

    let (status, health) = get(&th, "/healthz");
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["status"], "ready");
    assert_eq!(health["agents"]["available"], 4);
    assert_eq!(health["store"]["writable"], true);
    let (status, live) = get(&th, "/livez");
    assert_eq!((status, live), (200, json!({"status": "live"})));

    let digest = run.envelope.input_schema.clone().unwrap();
    let (status, schema) = get(&th, &format!("/schema/sha256/{digest}"));
    assert_eq!((status, schema), (200, probe_claim().json_schema));

    let unknown = new_uuid7();
    for path in [
        format!("/runs/{unknown}"),
        format!("/runs/{unknown}/spans"),
        format!("/agui/runs/{unknown}"),
        "/runs/..".to_string(),
        "/runs/..%2Finvocations.jsonl".to_string(),
        "/runs/../invocations.jsonl".to_string(),
        format!("/runs/..%2F{id}/spans"),
        "/agui/runs/..%2F..%2Fetc%2Fpasswd".to_string(),
        "/schema/sha256/..%2Finvocations.jsonl".to_string(),
        format!("/schema/sha256/{}", "0".repeat(64)),
        "/conversations/..".to_string(),
        "/nowhere".to_string(),
    ] {
        let (status, body) = get(&th, &path);
        assert_eq!(status, 404, "{path}: {body}");
        assert!(body["error"].is_string(), "{path}: {body}");
    }
    let (_, error) = get(&th, &format!("/runs/{unknown}"));
    assert!(error["error"].as_str().unwrap().contains(&unknown));
}

// --- AG-UI -----------------------------------------------------------------------------------

const STEPS: [&str; 4] = [
    "policy_gate",
    "input_check",
    "agent_call",
    "grounding_check",
];

/// The event types a live run of the given steps emits.
fn run_types(steps: &[&str]) -> Vec<String> {
    let mut out = vec!["RUN_STARTED".to_string()];
    for _ in steps {
        out.push("STEP_STARTED".into());
        out.push("STEP_FINISHED".into());
    }
    out.push("RUN_FINISHED".into());
    out
}

fn step_names(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "STEP_STARTED")
        .map(|e| e["stepName"].as_str().unwrap().to_string())
        .collect()
}

/// The AG-UI paragraph: a run emits RUN_STARTED echoing the client's ids, a STEP_STARTED /
/// STEP_FINISHED pair per conductor stage, then RUN_FINISHED with the envelope as result; a
/// replay of the stored run emits the same event types in the same order and the same result.
#[test]
fn agui_run_and_replay_emit_started_steps_and_finished() {
    let th = harness();
    let (status, content_type, stream) = post_agui(
        &th,
        &agui_body(&request("fake.input-only", record()), "t1"),
        &[],
    );
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let live = events(&stream);
    assert_eq!(types(&live), run_types(&STEPS));
    assert_eq!(step_names(&live), STEPS);
    assert_eq!(
        (&live[0]["threadId"], &live[0]["runId"]),
        (&json!("t1"), &json!("r1"))
    );
    let finished = live.last().unwrap();
    assert_eq!(
        (&finished["threadId"], &finished["runId"]),
        (&json!("t1"), &json!("r1"))
    );
    let result = &finished["result"];
    assert_eq!(result["outcome"]["status"], "succeeded", "{result}");
    assert_eq!(result["payload"]["schema_class"], "ProbeReview");
    let id = result["invocation_id"].as_str().unwrap();
    assert_eq!(&stored_envelope(&th.runs, id), result);

    let (status, replayed) = get_stream(&th, &format!("/agui/runs/{id}"));
    assert_eq!(status, 200);
    let replay = events(&replayed);
    assert_eq!(types(&replay), types(&live));
    assert_eq!(step_names(&replay), step_names(&live));
    assert_eq!(&replay.last().unwrap()["result"], result);
    assert_eq!(replay[0]["runId"], id);

    let (_, runs) = get(&th, "/runs");
    assert_eq!(runs[0]["status"], "succeeded");
}

/// A replay emits the stages the stored run went through: a run refused by policy or by the
/// input check replays with the same steps it ran live.
#[test]
fn agui_replay_follows_the_stages_each_run_went_through() {
    let agents = agents();
    let th = TestHarness::with_profile(
        agents,
        r#"{"profile_id": "p", "agents": {"fake.retrieval": "advise", "stub.abstain": "advise"}, "actions_requiring_approval": []}"#,
        T,
    );
    for (doc, steps) in [
        (
            request("fake.input-only", record()),
            vec!["policy_gate", "grounding_check"],
        ),
        (
            request("fake.retrieval", record()),
            vec!["policy_gate", "input_check", "grounding_check"],
        ),
        (request("stub.abstain", message("hi")), STEPS.to_vec()),
    ] {
        let (_, _, stream) = post_agui(&th, &agui_body(&doc, "t1"), &[]);
        let live = events(&stream);
        assert_eq!(types(&live), run_types(&steps), "{doc}");
        assert_eq!(step_names(&live), steps);
        let id = doc["invocation_id"].as_str().unwrap();
        let (_, replayed) = get_stream(&th, &format!("/agui/runs/{id}"));
        let replay = events(&replayed);
        assert_eq!(types(&replay), types(&live), "{doc}");
        assert_eq!(step_names(&replay), steps);
        assert_eq!(
            replay.last().unwrap()["result"],
            live.last().unwrap()["result"]
        );
    }
}

/// An agent may itself refer a decision for approval; its run went through every stage, and its
/// replay says so, unlike a referral by the policy gate, which ran no agent.
#[test]
fn agui_replay_tells_an_agents_referral_from_the_policy_gates() {
    let referring = ScriptedAgent::new(
        GroundingMode::None,
        returns(ddwire::contract::AgentResult::new(
            ddwire::contract::Outcome::referred(
                ddwire::contract::ReasonCode::PolicyRequiresApproval,
                "data_steward",
                "Publishing this needs a steward's approval.",
            ),
        )),
    )
    .arc();
    let th = TestHarness::new(vec![dyn_agent(&referring)]);
    let doc = request("fake.none", record());
    let (_, _, stream) = post_agui(&th, &agui_body(&doc, "t1"), &[]);
    let live = events(&stream);
    assert_eq!(step_names(&live), STEPS);
    assert_eq!(
        live.last().unwrap()["result"]["outcome"]["status"],
        "referred"
    );
    assert_eq!(referring.calls(), 1);
    let (_, replayed) = get_stream(
        &th,
        &format!("/agui/runs/{}", doc["invocation_id"].as_str().unwrap()),
    );
    let replay = events(&replayed);
    assert_eq!(step_names(&replay), step_names(&live));
    assert_eq!(types(&replay), types(&live));
}

/// The AG-UI thread is the conversation: threadId is the request's conversation_id, a threadId
/// naming another conversation gets one RUN_ERROR, and conversations are served.
#[test]
fn agui_thread_is_the_conversation_and_conversations_are_served() {
    let th = harness();
    let conv = new_uuid7();
    let mut doc = request("fake.input-only", record());
    doc["conversation_id"] = json!(conv);
    let (_, _, stream) = post_agui(&th, &agui_body(&doc, &conv), &[]);
    let ok = events(&stream);
    assert_eq!(ok[0]["threadId"], conv);
    assert_eq!(ok.last().unwrap()["result"]["conversation_id"], conv);

    let mut other = doc.clone();
    other["invocation_id"] = json!(new_uuid7());
    let (status, _, stream) = post_agui(&th, &agui_body(&other, "t9"), &[]);
    assert_eq!(status, 200);
    assert!(run_error_message(&stream).contains("conversation_id"));
    assert!(
        !th.harness
            .conductor
            .store
            .has(other["invocation_id"].as_str().unwrap())
    );

    let (status, index) = get(&th, "/conversations");
    assert_eq!(status, 200);
    assert_eq!(index[0]["conversation_id"], conv);
    assert_eq!(index[0]["agent_id"], "fake.input-only");
    let (status, found) = get(&th, &format!("/conversations/{conv}"));
    assert_eq!(status, 200);
    assert_eq!(found["conversation_id"], conv);
    assert_eq!(found["runs"][0]["invocation_id"], doc["invocation_id"]);
    let unknown = new_uuid7();
    let (status, error) = get(&th, &format!("/conversations/{unknown}"));
    assert_eq!(status, 404);
    assert_eq!(error["error"], format!("no conversation {unknown}"));
}

/// A request without a conversation run under a threadId that is a UUIDv7 joins that thread
/// as its conversation, so later turns can find it.
#[test]
fn agui_a_uuid_thread_becomes_the_requests_conversation() {
    let th = harness();
    let thread = new_uuid7();
    let doc = request("fake.input-only", record());
    let (_, _, stream) = post_agui(&th, &agui_body(&doc, &thread), &[]);
    let live = events(&stream);
    assert_eq!(live[0]["threadId"], thread);
    assert_eq!(live.last().unwrap()["result"]["conversation_id"], thread);
}

/// Spec invariant 12: an unknown agent or a request naming a profile gets HTTP 200 and exactly
/// one RUN_ERROR whose message names the agent or the key.
#[test]
fn agui_reports_an_unknown_agent_or_a_request_naming_a_profile_as_run_error() {
    let th = harness();
    for (doc, needle) in [
        (request("no.such.agent", record()), "no.such.agent"),
        (naming_a_profile(), "policy_bundle_ref"),
    ] {
        let (status, _, stream) = post_agui(&th, &agui_body(&doc, "t1"), &[]);
        assert_eq!(status, 200);
        let message = run_error_message(&stream);
        assert!(message.contains(needle), "{message}");
    }
    let (_, _, stream) = post_agui(&th, &json!({"threadId": "t1", "forwardedProps": {}}), &[]);
    assert!(
        run_error_message(&stream).contains("forwardedProps.request must be an InvocationRequest")
    );
    assert!(index_ids(&th.runs).is_empty());
}

/// Framing: LF-only `data: <json>\n\n` frames, each one line of JSON with `type` first, and no
/// event field is `null` (the envelope inside RUN_FINISHED is the stored document, as is).
#[test]
fn agui_frames_are_lf_only_data_lines_and_no_event_field_is_null() {
    let th = harness();
    let (_, _, ok) = post_agui(
        &th,
        &agui_body(&request("stub.abstain", message("hi")), "t1"),
        &[],
    );
    let (_, _, refused) = post_agui(&th, &agui_body(&naming_a_profile(), "t1"), &[]);
    for stream in [ok, refused] {
        assert!(!stream.contains('\r'), "{stream:?}");
        assert!(stream.ends_with("\n\n"));
        let frames: Vec<&str> = stream
            .split("\n\n")
            .filter(|f| !f.is_empty() && !f.starts_with(':'))
            .collect();
        assert_eq!(frames.len(), sse_data(&stream).len());
        for frame in frames {
            let data = frame.strip_prefix("data: ").expect("a data line");
            assert!(!data.contains('\n'), "{frame}");
            assert!(data.starts_with("{\"type\":"), "{frame}");
            let event: Value = serde_json::from_str(data).unwrap();
            for (key, value) in event.as_object().unwrap() {
                assert!(!value.is_null(), "{key} is null in {data}");
            }
        }
    }
}

/// A request that cannot be run is a single RUN_ERROR, never followed by RUN_FINISHED, even
/// when it is the conductor that refuses it: a second request with the id of a run still in
/// progress gets one RUN_ERROR while the first run finishes normally.
#[test]
fn agui_never_finishes_a_run_after_run_error() {
    let (entered_tx, entered_rx) = crossbeam_channel::bounded::<()>(1);
    let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(1);
    let gated = ScriptedAgent::new(
        GroundingMode::InputOnly,
        behave(move |_, ctx| {
            let _ = entered_tx.send(());
            let _ = release_rx.recv_timeout(T);
            Ok(review_of_input(ctx))
        }),
    );
    let th = Arc::new(TestHarness::new(vec![Arc::new(gated)]));
    let doc = request("fake.input-only", record());
    let first = {
        let (th, body) = (Arc::clone(&th), agui_body(&doc, "t1"));
        std::thread::spawn(move || post_agui(&th, &body, &[]).2)
    };
    entered_rx
        .recv_timeout(T)
        .expect("the first run reached the agent");

    let (status, _, stream) = post_agui(&th, &agui_body(&doc, "t1"), &[]);
    assert_eq!(status, 200);
    assert!(run_error_message(&stream).contains("has already been used"));

    release_tx.send(()).unwrap();
    let first = events(&first.join().unwrap());
    assert_eq!(types(&first), run_types(&STEPS));
    assert_eq!(
        index_ids(&th.runs),
        [doc["invocation_id"].as_str().unwrap()]
    );
    // And a stored id sent again is refused before the run starts.
    let (_, _, stream) = post_agui(&th, &agui_body(&doc, "t1"), &[]);
    assert_eq!(types(&events(&stream)), ["RUN_ERROR"]);
}

/// RunAgentInput keys in snake_case are read as the Python models read them; the events are
/// camelCase whatever the input was.
#[test]
fn agui_accepts_snake_case_run_agent_input_keys() {
    let th = harness();
    let conv = new_uuid7();
    let mut doc = request("fake.input-only", record());
    doc["conversation_id"] = json!(conv);
    let body = json!({"thread_id": conv, "run_id": "r2", "forwarded_props": {"request": doc}});
    let (_, _, stream) = post_agui(&th, &body, &[]);
    let live = events(&stream);
    assert_eq!(types(&live), run_types(&STEPS));
    assert_eq!(
        (&live[0]["threadId"], &live[0]["runId"]),
        (&json!(conv), &json!("r2"))
    );
    assert!(live[0].get("thread_id").is_none());
    assert_eq!(
        live.last().unwrap()["result"]["outcome"]["status"],
        "succeeded"
    );
}

/// `GET` a stream from the harness: the status and the raw body.
fn get_stream(th: &TestHarness, path: &str) -> (u16, String) {
    let r = th
        .client
        .http
        .send(ddwire::wire::http::client::ClientRequest::get(
            format!("{HARNESS_URL}{path}"),
            T,
        ))
        .unwrap();
    assert!(!String::from_utf8_lossy(&r.body).contains('\r'));
    (r.status, String::from_utf8(r.body).unwrap())
}

/// The same harness over loopback TCP: agents on their own sockets, the harness on another, a
/// delegation calling the harness back over TCP, and an AG-UI stream over a real socket.
#[test]
fn the_harness_serves_a2a_and_agui_over_loopback_tcp() {
    use ddwire::agent::builtin::Director;
    use ddwire::harness::conductor::Conductor;
    use ddwire::harness::policy::Profile;
    use ddwire::harness::registry::{Registry, RemoteAgent};
    use ddwire::harness::server::{Harness, handler};
    use ddwire::harness::store::RunStore;
    use ddwire::harness::testkit::test_principal;
    use ddwire::wire::a2a::client::A2aClient;
    use ddwire::wire::http::client::{ClientRequest, HttpClient};
    use ddwire::wire::http::{Limits, server};

    let agents: Vec<Arc<dyn Agent>> = vec![Arc::new(Director::new()), Arc::new(Hello::new())];
    let profile = permissive_profile(&agents);
    let client = A2aClient::default();
    let mut registry = Registry::default();
    let mut servers = Vec::new();
    for agent in agents {
        let s = ddwire::agent::server::serve(agent, "127.0.0.1:0", None).unwrap();
        registry
            .add(RemoteAgent::from_url(&client, &s.base_url(), T).unwrap())
            .unwrap();
        servers.push(s);
    }
    let runs = TempDir::new("transport-tcp");
    let conductor = Conductor::new(
        registry,
        Profile::from_bytes(profile.as_bytes(), "p.json").unwrap(),
        RunStore::open(runs.path()).unwrap(),
        client.clone(),
    );
    let bound = server::bind("127.0.0.1:0", Limits::DEFAULT).unwrap();
    let base = bound.default_public_url();
    let harness = Arc::new(Harness::new(
        conductor,
        Some(Authenticator::Operator(test_principal())),
        &base,
    ));
    assert_eq!(
        harness.conductor.callback_url.as_deref(),
        Some(base.as_str())
    );
    let harness_server = bound.serve(handler(Arc::clone(&harness))).unwrap();

    let target = Target::from_card(&client.fetch_card(&base, T).unwrap()).unwrap();
    let task = client
        .send_for_task(
            &target,
            a2a_message(vec![request("director.route", message("hi"))], None),
            &[],
            T,
        )
        .unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    let env = envelope_of(&task);
    assert_eq!(env["outcome"]["status"], "succeeded", "{env}");
    assert_eq!(env["delegations"][0]["delegated_agent_id"], "hello.world");
    assert_eq!(index_ids(runs.path()).len(), 2);

    let http = HttpClient::tcp();
    let body = agui_body(&request("hello.world", message("over a socket")), "t1");
    let r = http
        .send(ClientRequest::post_json(
            format!("{base}/agui"),
            body.to_string().into_bytes(),
            T,
        ))
        .unwrap();
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let stream = String::from_utf8(r.body).unwrap();
    assert!(!stream.contains('\r'));
    let live = events(&stream);
    assert_eq!(types(&live), run_types(&STEPS));
    assert_eq!(
        live.last().unwrap()["result"]["payload"]["reply_text"],
        "Hello! You said: over a socket"
    );
    let r = http
        .send(ClientRequest::get(format!("{base}/runs"), T))
        .unwrap();
    let rows: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 3);

    harness_server.shutdown();
    for s in servers {
        s.shutdown();
    }
}

/// The conductor records each stage it ran, and how it came out, as an event on the run's root
/// span, so the trace keeps the invocation's decision points.
#[test]
fn each_stage_that_ran_is_an_event_on_the_root_span() {
    let th = harness();
    let doc = request("fake.input-only", record());
    let run = th.invoke(&doc).unwrap();
    let id = doc["invocation_id"].as_str().unwrap();
    let spans = th.conductor().store.spans(id).unwrap().unwrap();
    let root: Value = spans
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|s| s["name"] == "invoke_agent")
        .unwrap();
    let stages: Vec<(String, Value)> = root["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["attributes"].clone(),
            )
        })
        .collect();
    assert_eq!(
        stages,
        [
            (
                "policy_gate".to_owned(),
                json!({"dd.stage.decision": "permitted"})
            ),
            (
                "input_check".to_owned(),
                json!({"dd.stage.decision": "accepted"})
            ),
            (
                "agent_call".to_owned(),
                json!({"dd.stage.result": "answered"})
            ),
        ]
    );
    assert!(run.envelope.problem.is_none());
}

/// A run stored without stage events (written by the reference, say) still replays: its stages
/// are read from its envelope.
#[test]
fn a_run_stored_without_stage_events_replays_the_stages_its_envelope_shows() {
    let th = harness();
    let doc = request("fake.input-only", record());
    let (_, _, stream) = post_agui(&th, &agui_body(&doc, "t1"), &[]);
    let live = events(&stream);
    let id = doc["invocation_id"].as_str().unwrap();
    let path = th.runs.join(id).join("spans.jsonl");
    let without_events: String = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut span: Value = serde_json::from_str(l).unwrap();
            span["events"] = json!([]);
            format!("{span}\n")
        })
        .collect();
    std::fs::write(&path, without_events).unwrap();
    let (_, replayed) = get_stream(&th, &format!("/agui/runs/{id}"));
    let replay = events(&replayed);
    assert_eq!(step_names(&replay), step_names(&live));
    assert_eq!(types(&replay), types(&live));
}

/// `tasks/get` returns the task `message/send` answered, as it was sent: the same context,
/// artifact ids, status time and history, for a completed task and for a failed one alike.
#[test]
fn get_task_returns_the_task_the_send_answered_completed_or_failed() {
    let th = harness();
    for target in [th.target(), v03(&th)] {
        for doc in [
            request("fake.input-only", record()),
            request("nobody", record()),
        ] {
            let sent = send_to(&th, &target, a2a_message(vec![doc], None), &[]);
            let fetched = th.client.get_task(&target, &sent.id, T).unwrap();
            assert_eq!(fetched, sent);
            assert_eq!(th.client.get_task(&target, &sent.id, T).unwrap(), sent);
        }
    }
}

/// A run the endpoint no longer remembers (answered before a restart, say) is rebuilt from the
/// run store: its id, envelope and completion time, and the same task on every call.
#[test]
fn a_task_the_endpoint_forgot_is_rebuilt_from_the_store_the_same_each_time() {
    let th = harness();
    let sent = send_to(
        &th,
        &th.target(),
        a2a_message(vec![request("fake.input-only", record())], None),
        &[],
    );
    // A second endpoint over the same harness remembers no task, as after a restart. It is
    // reached at another name, which the harness would refuse (421), so the name it was
    // reached at is put back before the harness sees the request.
    let restarted_handler = ddwire::harness::server::handler(Arc::clone(&th.harness));
    th.net.serve(
        "restarted.test",
        Arc::new(move |mut r: ddwire::wire::http::Request| {
            r.headers = r
                .headers
                .iter()
                .map(|(name, value)| match name.as_str() {
                    "host" => (name.clone(), "harness.test".into()),
                    _ => (name.clone(), value.clone()),
                })
                .collect();
            restarted_handler(r)
        }),
        ddwire::wire::http::Limits::DEFAULT,
    );
    let mut restarted = th.target();
    restarted.url = restarted.url.replace("harness.test", "restarted.test");
    assert_ne!(restarted.url, th.target().url);
    let rebuilt = th.client.get_task(&restarted, &sent.id, T).unwrap();
    assert_eq!(rebuilt.id, sent.id);
    assert_eq!(rebuilt.status.state, TaskState::Completed);
    assert_eq!(envelope_of(&rebuilt), envelope_of(&sent));
    let env = envelope_of(&sent);
    assert_eq!(
        rebuilt.status.timestamp.as_deref(),
        env["completed_at"].as_str()
    );
    assert_eq!(
        th.client.get_task(&restarted, &sent.id, T).unwrap(),
        rebuilt
    );
}
