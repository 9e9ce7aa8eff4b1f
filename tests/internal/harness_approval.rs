//! A data steward's decision on a referred run, over loopback TCP: only a token with the role
//! `steward` decides, once; an approval runs the agent on the referred run's stored input for
//! the same principal, as a new run linked both ways and recorded beside it and in its trace;
//! a decline runs nothing; an approval is bound to its window, the profile, the agent and the
//! input, and is never spent twice.

use super::common;
use common::*;
use ddwire::agent::Agent;
use ddwire::agent::builtin::Hello;
use ddwire::harness::conductor::Conductor;
use ddwire::harness::identity::{Authenticator, Role, Token, token_digest};
use ddwire::harness::policy::Profile;
use ddwire::harness::server::{self as harness_server, Harness};
use ddwire::harness::store::RunStore;
use ddwire::harness::testkit::test_principal;
use ddwire::wire::a2a::client::{A2aClient, Target};
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::drain::Drain;
use ddwire::wire::http::server::{self as http_server, Server};
use ddwire::wire::http::{Limits, memory::MemoryNet};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const ALICE: &str = "https://orcid.org/0000-0002-1825-0097";
const STEWARD: &str = "urn:example:role:data-steward";

/// The profile every test refers `hello.world` under; `version` changes its digest.
fn careful(version: u32) -> String {
    json!({
        "profile_id": "careful",
        "version": version,
        "agents": {"hello.world": "converse"},
        "actions_requiring_approval": ["converse"],
    })
    .to_string()
}

fn person(id: &str, name: &str) -> ddwire::contract::Principal {
    ddwire::contract::Principal::new(id, name, ddwire::contract::PrincipalKind::Person).unwrap()
}

/// Alice (a principal), Bob (another), an auditor, and a steward.
fn tokens() -> Authenticator {
    let mut auditor = Token::new(
        token_digest("auditor-token"),
        person("urn:example:auditor", "Ada Auditor"),
    );
    auditor.role = Role::Auditor;
    let mut steward = Token::new(
        token_digest("steward-token"),
        person(STEWARD, "Data steward"),
    );
    steward.role = Role::Steward;
    Authenticator::Bearer(vec![
        Token::new(token_digest("alice-token"), person(ALICE, "Alice")),
        Token::new(
            token_digest("bob-token"),
            person("https://orcid.org/0000-0001-5109-3700", "Bob"),
        ),
        auditor,
        steward,
    ])
}

/// A harness on loopback over `hello.world` (served in memory), with the profile `profile`,
/// approvals open for `approve_for`, over the store at `runs`.
struct Served {
    server: Server,
    _net: MemoryNet,
}

impl Served {
    fn url(&self) -> String {
        self.server.base_url()
    }
}

fn harness(runs: &Path, profile: &str, approve_for: Duration, auth: Authenticator) -> Served {
    harness_draining_with(runs, profile, approve_for, auth, Drain::new())
}

/// [`harness`], sharing `drain` with the test.
fn harness_draining_with(
    runs: &Path,
    profile: &str,
    approve_for: Duration,
    auth: Authenticator,
    drain: Drain,
) -> Served {
    let agents: Vec<Arc<dyn Agent>> = vec![Arc::new(Hello::new())];
    let (conductor, net) = bare_conductor(agents, &runs.join("scratch"));
    let mut conductor = Conductor::new(
        conductor.registry,
        Profile::from_bytes(profile.as_bytes(), "careful.json").unwrap(),
        RunStore::open(runs).unwrap(),
        conductor.client,
    );
    conductor.approve_for = approve_for;
    let bound = http_server::bind("127.0.0.1:0", Limits::DEFAULT).unwrap();
    let public = bound.default_public_url();
    let harness = Arc::new(Harness::new(conductor, Some(auth), &public).with_drain(drain));
    let server = bound.serve(harness_server::handler(harness)).unwrap();
    Served { server, _net: net }
}

const DAY: Duration = Duration::from_secs(86_400);

/// Send `hello.world` a message as the holder of `token`, over A2A: the stored envelope.
fn invoke_as(served: &Served, token: &str, text: &str) -> Value {
    let client = A2aClient::default();
    let card = client.fetch_card(&served.url(), T).unwrap();
    let target = Target::from_card(&card).unwrap();
    let mut doc = request("hello.world", message(text));
    doc["conversation_id"] = json!(ddwire::ids::new_uuid7());
    let auth = format!("Bearer {token}");
    let task = client
        .send_for_task(
            &target,
            a2a_message(vec![doc], None),
            &[("Authorization", auth.as_str())],
            T,
        )
        .expect("the harness answers with a task");
    envelope_of(&task)
}

/// `METHOD <served><path>` with `token` (if any) and `body`: status, headers and JSON body.
fn call(
    served: &Served,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, Option<String>, Value) {
    let url = format!("{}{path}", served.url());
    let mut request = if method == "POST" {
        ClientRequest::post_json(url, body.as_bytes().to_vec(), T)
    } else {
        ClientRequest::get(url, T)
    };
    if let Some(token) = token {
        request = request.header("Authorization", &format!("Bearer {token}"));
    }
    let r = HttpClient::tcp()
        .send(request)
        .expect("the harness answers");
    let challenge = r.header("www-authenticate").map(str::to_string);
    let text = String::from_utf8(r.body).unwrap();
    (
        r.status,
        challenge,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// `GET /runs/{id}/approval` as Alice, whose run was referred.
fn approval_as_alice(served: &Served, id: &str) -> (u16, Option<String>, Value) {
    call(
        served,
        "GET",
        &format!("/runs/{id}/approval"),
        Some("alice-token"),
        "",
    )
}

fn approve(served: &Served, id: &str, token: &str) -> (u16, Value) {
    let (status, _, body) = call(
        served,
        "POST",
        &format!("/runs/{id}/approve"),
        Some(token),
        r#"{"reason": "checked the recipient"}"#,
    );
    (status, body)
}

fn referred(served: &Served) -> String {
    let envelope = invoke_as(served, "alice-token", "publish this");
    assert_eq!(envelope["outcome"]["status"], "referred", "{envelope}");
    assert_eq!(
        envelope["outcome"]["reason_code"],
        "policy_requires_approval"
    );
    envelope["invocation_id"].as_str().unwrap().to_string()
}

#[test]
fn a_stewards_approval_runs_the_agent_on_the_same_input_for_the_same_principal_as_a_new_linked_run()
{
    let runs = TempDir::new("approval");
    let served = harness(runs.path(), &careful(1), DAY, tokens());
    let id = referred(&served);
    let referred_before = std::fs::read(runs.path().join(&id).join("envelope.json")).unwrap();

    let (status, body) = approve(&served, &id, "steward-token");
    assert_eq!(status, 200, "{body}");
    let envelope = &body["envelope"];
    let new_id = envelope["invocation_id"].as_str().unwrap();
    assert_ne!(new_id, id);
    assert_eq!(envelope["outcome"]["status"], "succeeded", "{envelope}");
    assert_eq!(envelope["acting_for"]["principal_id"], ALICE);

    // The same input, and the same conversation, as the referred run.
    let (old_request, new_request) = (
        stored_request(runs.path(), &id),
        stored_request(runs.path(), new_id),
    );
    assert_eq!(old_request["input"], new_request["input"]);
    assert_eq!(
        old_request["conversation_id"],
        new_request["conversation_id"]
    );
    assert_eq!(
        stored_envelope(runs.path(), new_id)["conversation_id"],
        old_request["conversation_id"]
    );

    // Recorded beside the new run: who, when, which run.
    let decision = &body["decision"];
    assert_eq!(decision["decision"], "approved");
    assert_eq!(decision["referred_invocation_id"], id.as_str());
    assert_eq!(decision["invocation_id"], new_id);
    assert_eq!(decision["decided_by"]["principal_id"], STEWARD);
    assert_eq!(decision["reason"], "checked the recipient");
    let beside: Value = serde_json::from_slice(
        &std::fs::read(runs.path().join(new_id).join("approval.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(&beside, decision);

    // And in the new run's trace, as an event on its root span.
    let spans = stored_spans(runs.path(), new_id);
    let root = only(&spans, "invoke_agent");
    let event = root
        .events
        .iter()
        .find(|e| e.name == "approved")
        .expect("an approved event on the root");
    let attr = |k: &str| format!("{:?}", event.attributes.get(k).unwrap());
    assert!(attr("dd.approval.referred_invocation_id").contains(&id));
    assert!(attr("dd.approval.by").contains(STEWARD));
    assert!(attr("dd.approval.at").contains(decision["decided_at"].as_str().unwrap()));
    // Its root links to the referred run's root.
    let referred_spans = stored_spans(runs.path(), &id);
    let referred_root = only(&referred_spans, "invoke_agent");
    assert!(
        root.links
            .iter()
            .any(|l| l.trace_id == referred_root.trace_id && l.span_id == referred_root.span_id),
        "{:?}",
        root.links
    );

    // The referred run is unchanged; both runs name the decision, so each links to the other.
    assert_eq!(
        std::fs::read(runs.path().join(&id).join("envelope.json")).unwrap(),
        referred_before
    );
    for run in [id.as_str(), new_id] {
        let (status, _, record) = approval_as_alice(&served, run);
        assert_eq!(status, 200, "{record}");
        assert_eq!(&record, decision);
    }
}

#[test]
fn an_approval_is_single_use_a_second_approval_or_a_decline_after_it_is_refused() {
    let runs = TempDir::new("approval-once");
    let served = harness(runs.path(), &careful(1), DAY, tokens());
    let id = referred(&served);
    let (status, first) = approve(&served, &id, "steward-token");
    assert_eq!(status, 200, "{first}");
    let stored = index_ids(runs.path()).len();

    let (status, again) = approve(&served, &id, "steward-token");
    assert_eq!(status, 409, "{again}");
    let error = again["error"].as_str().unwrap();
    assert!(error.contains("already approved"), "{error}");
    assert_eq!(again["decision"], first["decision"]);
    let (status, _, declined) = call(
        &served,
        "POST",
        &format!("/runs/{id}/decline"),
        Some("steward-token"),
        "",
    );
    assert_eq!(status, 409, "{declined}");
    assert_eq!(index_ids(runs.path()).len(), stored, "no second run");

    // A harness started again over the store still knows the approval was spent.
    drop(served);
    let again = harness(runs.path(), &careful(1), DAY, tokens());
    let (status, body) = approve(&again, &id, "steward-token");
    assert_eq!(status, 409, "{body}");
    assert_eq!(index_ids(runs.path()).len(), stored);
}

#[test]
fn two_approvals_at_once_make_exactly_one_run() {
    let runs = TempDir::new("approval-race");
    let served = Arc::new(harness(runs.path(), &careful(1), DAY, tokens()));
    let id = referred(&served);
    let before = index_ids(runs.path()).len();
    let racers: Vec<_> = (0..4)
        .map(|_| {
            let (served, id) = (Arc::clone(&served), id.clone());
            std::thread::spawn(move || approve(&served, &id, "steward-token").0)
        })
        .collect();
    let mut statuses: Vec<u16> = racers.into_iter().map(|t| t.join().unwrap()).collect();
    statuses.sort();
    assert_eq!(statuses, [200, 409, 409, 409]);
    assert_eq!(index_ids(runs.path()).len(), before + 1);
}

#[test]
fn nobody_but_a_steward_decides_the_run_owner_another_principal_and_an_auditor_get_403_and_no_token_401()
 {
    let runs = TempDir::new("approval-who");
    let served = harness(runs.path(), &careful(1), DAY, tokens());
    let id = referred(&served);
    for token in ["alice-token", "bob-token", "auditor-token"] {
        for action in ["approve", "decline"] {
            let (status, _, body) = call(
                &served,
                "POST",
                &format!("/runs/{id}/{action}"),
                Some(token),
                "",
            );
            assert_eq!(status, 403, "{token} {action}: {body}");
            assert!(
                body["error"].as_str().unwrap().contains("steward"),
                "{body}"
            );
        }
    }
    let (status, challenge, body) = call(&served, "POST", &format!("/runs/{id}/approve"), None, "");
    assert_eq!(status, 401);
    assert!(challenge.unwrap().starts_with("Bearer"));
    // Plain JSON, as every route but the A2A endpoint answers: not a JSON-RPC error.
    assert!(
        body["error"].is_string() && body.get("jsonrpc").is_none(),
        "{body}"
    );
    let (status, _, _) = call(
        &served,
        "POST",
        &format!("/runs/{id}/approve"),
        Some("forged-token"),
        "",
    );
    assert_eq!(status, 401);
    // Nothing was decided: the steward still can.
    let (status, body) = approve(&served, &id, "steward-token");
    assert_eq!(status, 200, "{body}");
}

#[test]
fn a_harness_without_tokens_has_no_steward_so_refuses_every_decision() {
    let runs = TempDir::new("approval-operator");
    let served = harness(
        runs.path(),
        &careful(1),
        DAY,
        Authenticator::Operator(test_principal()),
    );
    let id = invoke_as(&served, "ignored", "publish")["invocation_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _, body) = call(&served, "POST", &format!("/runs/{id}/approve"), None, "");
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("--tokens"),
        "{body}"
    );
}

#[test]
fn a_decline_is_recorded_once_runs_nothing_and_shuts_out_an_approval() {
    let runs = TempDir::new("approval-decline");
    let served = harness(runs.path(), &careful(1), DAY, tokens());
    let id = referred(&served);
    let before = index_ids(runs.path()).len();
    let (status, _, body) = call(
        &served,
        "POST",
        &format!("/runs/{id}/decline"),
        Some("steward-token"),
        r#"{"reason": "not for publication"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let decision = &body["decision"];
    assert_eq!(decision["decision"], "declined");
    assert_eq!(decision["decided_by"]["principal_id"], STEWARD);
    assert_eq!(decision["reason"], "not for publication");
    assert!(decision.get("invocation_id").is_none());
    assert!(body.get("envelope").is_none());
    assert_eq!(
        index_ids(runs.path()).len(),
        before,
        "a decline runs nothing"
    );
    let (status, _, record) = approval_as_alice(&served, &id);
    assert_eq!((status, &record), (200, decision));
    let (status, body) = approve(&served, &id, "steward-token");
    assert_eq!(status, 409, "{body}");
    assert!(body["error"].as_str().unwrap().contains("already declined"));
}

#[test]
fn an_approval_after_its_window_is_refused_as_expired() {
    let runs = TempDir::new("approval-expired");
    let served = harness(
        runs.path(),
        &careful(1),
        Duration::from_millis(300),
        tokens(),
    );
    let id = referred(&served);
    std::thread::sleep(Duration::from_millis(600));
    let (status, body) = approve(&served, &id, "steward-token");
    assert_eq!(status, 410, "{body}");
    assert!(body["error"].as_str().unwrap().contains("window closed"));
}

#[test]
fn an_approval_is_bound_to_the_profile_that_referred_the_run() {
    let runs = TempDir::new("approval-profile");
    let served = harness(runs.path(), &careful(1), DAY, tokens());
    let id = referred(&served);
    drop(served);
    let changed = harness(runs.path(), &careful(2), DAY, tokens());
    let (status, body) = approve(&changed, &id, "steward-token");
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("policy digest"),
        "{body}"
    );
    // Refused, not spent: under the referring profile it is still approvable.
    drop(changed);
    let same = harness(runs.path(), &careful(1), DAY, tokens());
    assert_eq!(approve(&same, &id, "steward-token").0, 200);
}

#[test]
fn an_approval_is_bound_to_the_input_the_referred_trace_hashed() {
    let runs = TempDir::new("approval-input");
    let served = harness(runs.path(), &careful(1), DAY, tokens());
    let id = referred(&served);
    let path = runs.path().join(&id).join("request.json");
    let mut request: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    request["input"]["message_text"] = json!("publish something else");
    std::fs::write(&path, serde_json::to_vec_pretty(&request).unwrap()).unwrap();
    let (status, body) = approve(&served, &id, "steward-token");
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("hashes to"),
        "{body}"
    );
}

#[test]
fn only_a_run_the_profile_referred_can_be_decided() {
    let runs = TempDir::new("approval-which");
    let permissive = permissive_profile(&[Arc::new(Hello::new())]);
    let served = harness(runs.path(), &permissive, DAY, tokens());
    let id = invoke_as(&served, "alice-token", "hi")["invocation_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = approve(&served, &id, "steward-token");
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("not referred"),
        "{body}"
    );
    let missing = ddwire::ids::new_uuid7();
    assert_eq!(approve(&served, &missing, "steward-token").0, 404);
    let (status, _, body) = approval_as_alice(&served, &id);
    assert_eq!(status, 404, "{body}");
}

#[test]
fn a_decision_body_other_than_empty_or_a_reason_is_refused_400() {
    let runs = TempDir::new("approval-body");
    let served = harness(runs.path(), &careful(1), DAY, tokens());
    let id = referred(&served);
    for body in [
        r#"{"reason": 7}"#,
        r#"{"reason": "x", "run": "y"}"#,
        "[]",
        "{not json",
    ] {
        let (status, _, answer) = call(
            &served,
            "POST",
            &format!("/runs/{id}/approve"),
            Some("steward-token"),
            body,
        );
        assert_eq!(status, 400, "{body}: {answer}");
    }
    assert_eq!(approve(&served, &id, "steward-token").0, 200);
}

#[test]
fn a_draining_harness_takes_no_decision() {
    let runs = TempDir::new("approval-drain");
    let drain = Drain::new();
    let served = harness_draining_with(runs.path(), &careful(1), DAY, tokens(), drain.clone());
    let id = referred(&served);
    drain.start();
    let (status, body) = approve(&served, &id, "steward-token");
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        stored_envelope(runs.path(), &id)["outcome"]["status"],
        "referred"
    );
    let (status, _, _) = approval_as_alice(&served, &id);
    assert_eq!(status, 404, "nothing was decided");
}

#[test]
fn a_referred_run_another_run_delegated_is_not_decided_on_its_own() {
    let runs = TempDir::new("approval-delegated");
    let served = harness(runs.path(), &careful(1), DAY, tokens());
    let id = referred(&served);
    // As a delegated child's stored request reads: it names the run that delegated it.
    let path = runs.path().join(&id).join("request.json");
    let mut request: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    request["parent_invocation_id"] = json!(ddwire::ids::new_uuid7());
    std::fs::write(&path, serde_json::to_vec_pretty(&request).unwrap()).unwrap();
    let (status, body) = approve(&served, &id, "steward-token");
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("delegated"),
        "{body}"
    );
}

#[test]
fn an_unreadable_decision_record_is_an_error_never_taken_for_no_decision() {
    let runs = TempDir::new("approval-corrupt");
    let served = harness(runs.path(), &careful(1), DAY, tokens());
    let id = referred(&served);
    let dir = runs.path().join(".ddwire/decisions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{id}.json")), b"{not json").unwrap();
    let (status, _, body) = approval_as_alice(&served, &id);
    assert_eq!(status, 500, "{body}");
    // Nor does an approval go ahead over it.
    let (status, body) = approve(&served, &id, "steward-token");
    assert_ne!(status, 200, "{body}");
}
