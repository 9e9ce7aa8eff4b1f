//! The harness's A2A tasks over loopback TCP, in both bindings: a task is a run (its id the
//! request's `invocation_id`, its context the request's conversation), the task and context
//! rules, non-blocking sends that run the conductor in the background, cancellation that stops
//! waiting for the agent and is stored as a documented outcome, and ListTasks from the run
//! store, scoped to the caller's principal.

use super::common;
use super::rpc;

use ddwire::agent::Agent;
use ddwire::agent::builtin::{Echo, Hello};
use ddwire::contract::{Principal, PrincipalKind};
use ddwire::harness::identity::{Authenticator, token_digest};
use ddwire::harness::server::{self as harness_server, Harness};
use ddwire::ids::new_uuid7;
use ddwire::wire::http::client::ClientRequest;
use ddwire::wire::http::{Limits, server::Server};
use rpc::{B, BOTH, Rpc, T, error_reason};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const CARBERRY: &str = "carberry-token";
const OTHER: &str = "other-token";

fn principal(id: &str, name: &str) -> Principal {
    Principal::new(id, name, PrincipalKind::Person).expect("a valid principal")
}

/// A harness on loopback over echo (with `delay`) and hello, each served on loopback too,
/// authenticating two principals by bearer token.
struct Served {
    rpc: Rpc,
    runs: PathBuf,
    /// Leave the run store when dropped (for a second harness over it).
    keep_runs: bool,
    // Stopped when dropped, harness first.
    _harness: Server,
    _agents: Vec<Server>,
}

impl Served {
    fn new(delay: Duration) -> Served {
        Served::over(
            delay,
            std::env::temp_dir().join(format!("ddwire-harness-tasks-{}", new_uuid7())),
        )
    }

    /// A harness over the run store at `runs` (a second harness over the same store reads the
    /// first one's runs, as after a restart).
    fn over(delay: Duration, runs: PathBuf) -> Served {
        let agents: Vec<Arc<dyn Agent>> =
            vec![Arc::new(Echo::with_delay(delay)), Arc::new(Hello::new())];
        let (conductor, servers) = common::tcp_conductor(agents, &runs);
        let auth = Authenticator::Bearer(vec![
            ddwire::harness::identity::Token::new(
                token_digest(CARBERRY),
                principal("https://orcid.org/0000-0002-1825-0097", "Josiah Carberry"),
            ),
            ddwire::harness::identity::Token::new(
                token_digest(OTHER),
                principal("https://example.org/people/other", "Other Person"),
            ),
        ]);
        let bound = ddwire::wire::http::server::bind("127.0.0.1:0", Limits::DEFAULT).unwrap();
        let base = bound.default_public_url();
        let harness = Arc::new(Harness::new(conductor, Some(auth), &base));
        let server = bound
            .serve(harness_server::handler(harness))
            .expect("the harness serves");
        Served {
            rpc: Rpc::tcp(&format!("{base}/a2a"))
                .with_header("Authorization", &format!("Bearer {CARBERRY}")),
            runs,
            keep_runs: false,
            _harness: server,
            _agents: servers,
        }
    }

    fn as_other(&self) -> Rpc {
        let mut rpc = self.rpc.clone();
        rpc.headers.clear();
        rpc.with_header("Authorization", &format!("Bearer {OTHER}"))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if !self.keep_runs {
            let _ = std::fs::remove_dir_all(&self.runs);
        }
    }
}

fn echo_request(conversation: Option<&str>) -> Value {
    let mut request = json!({"agent_id": "echo.wire", "invocation_id": new_uuid7(),
                             "input": {"schema_class": "Echo", "value": 1}});
    if let Some(c) = conversation {
        request["conversation_id"] = json!(c);
    }
    request
}

fn id_of(task: &Value) -> String {
    task["id"].as_str().expect("a task id").to_string()
}

fn envelope_of(task: &Value) -> Value {
    let artifacts = task["artifacts"].as_array().expect("artifacts");
    let envelope = artifacts
        .iter()
        .find(|a| a["name"] == "envelope")
        .expect("an envelope artifact");
    envelope["parts"][0]["data"].clone()
}

#[test]
fn a_harness_task_is_its_run_named_after_the_invocation_in_its_requests_conversation() {
    let s = Served::new(Duration::ZERO);
    for b in BOTH {
        let request = echo_request(None);
        let task = s.rpc.send(b, b.data("m-run", request.clone()));
        assert_eq!(
            task["status"]["state"],
            b.state("completed"),
            "{b:?} {task}"
        );
        assert_eq!(task["id"], request["invocation_id"]);
        assert_eq!(
            task["contextId"], request["invocation_id"],
            "outside a conversation"
        );
        assert_eq!(
            envelope_of(&task)["invocation_id"],
            request["invocation_id"]
        );
        let conversation = new_uuid7();
        let in_conversation = echo_request(Some(&conversation));
        let task = s.rpc.send(b, b.data("m-conv", in_conversation));
        assert_eq!(task["contextId"], conversation.as_str());
    }
}

#[test]
fn a_message_naming_an_unknown_task_is_refused_by_the_harness_in_both_bindings() {
    let s = Served::new(Duration::ZERO);
    for b in BOTH {
        let mut message = b.data("m-unknown", echo_request(None));
        message["taskId"] = json!(new_uuid7());
        let error = s.rpc.err(b, b.send(), json!({ "message": message }));
        assert_eq!(error["code"], -32001, "{b:?} {error}");
    }
    // Nothing ran.
    let index = std::fs::read(s.runs.join("invocations.jsonl")).unwrap_or_default();
    assert!(index.is_empty(), "a run was stored");
}

#[test]
fn a_message_to_a_finished_run_is_refused_and_the_run_is_unchanged() {
    let s = Served::new(Duration::ZERO);
    for b in BOTH {
        let first = s.rpc.send(b, b.data("m-first", echo_request(None)));
        let id = id_of(&first);
        let mut again = b.data("m-again", echo_request(None));
        again["taskId"] = json!(id);
        let error = s.rpc.err(b, b.send(), json!({ "message": again }));
        assert_eq!(error["code"], -32004, "{b:?} {error}");
        let kept = s.rpc.get(b, &id);
        assert_eq!(kept["status"]["state"], b.state("completed"));
        assert_eq!(envelope_of(&kept)["invocation_id"], id.as_str());
    }
}

#[test]
fn a_message_whose_context_is_not_its_requests_conversation_is_refused() {
    let s = Served::new(Duration::ZERO);
    for b in BOTH {
        let conversation = new_uuid7();
        let request = echo_request(Some(&conversation));
        let mut message = b.data("m-ctx", request.clone());
        message["contextId"] = json!("another-context");
        let error = s.rpc.err(b, b.send(), json!({ "message": message }));
        assert_eq!(error["code"], -32602, "{b:?} {error}");
        assert!(error["message"].as_str().unwrap().contains("contextId"));
        // The same context is accepted.
        let mut message = b.data("m-ctx-ok", request);
        message["contextId"] = json!(conversation);
        assert_eq!(
            s.rpc.send(b, message)["status"]["state"],
            b.state("completed")
        );
    }
}

#[test]
fn the_harness_checks_message_shape_before_its_one_data_part_rule() {
    let s = Served::new(Duration::ZERO);
    for b in BOTH {
        let mut empty = b.text("m-empty", "x");
        empty["parts"] = json!([]);
        assert_eq!(
            s.rpc.err(b, b.send(), json!({ "message": empty }))["code"],
            -32602
        );
        let text = s.rpc.send(b, b.text("m-text", "hello"));
        assert_eq!(
            text["status"]["state"],
            b.state("failed"),
            "a message without exactly one data part is a failed task"
        );
    }
}

#[test]
fn a_non_blocking_send_runs_the_conductor_in_the_background_and_get_task_shows_it() {
    let s = Served::new(Duration::from_millis(800));
    for b in BOTH {
        let request = echo_request(None);
        let response = s.rpc.call(
            b,
            b.send(),
            json!({"message": b.data("m-nb", request.clone()), "configuration": b.non_blocking()}),
        );
        let task = b.sent_task(&response);
        assert_eq!(
            task["status"]["state"],
            b.state("submitted"),
            "{b:?} {response}"
        );
        assert_eq!(task["id"], request["invocation_id"]);
        let id = id_of(&task);
        s.rpc.wait_for(b, &id, "working");
        let done = s.rpc.wait_for(b, &id, "completed");
        assert_eq!(envelope_of(&done)["outcome"]["status"], "succeeded");
    }
}

#[test]
fn canceling_a_running_harness_task_stops_waiting_for_the_agent_and_stores_the_cancellation() {
    // The agent works for 10 s; the run must be stored well before (the agent server, dropped
    // at the end, still waits for its calls to finish).
    let s = Served::new(Duration::from_secs(10));
    let mut canceled_ids = Vec::new();
    for b in BOTH {
        let request = echo_request(None);
        let response = s.rpc.call(
            b,
            b.send(),
            json!({"message": b.data("m-cancel", request), "configuration": b.non_blocking()}),
        );
        let id = id_of(&b.sent_task(&response));
        s.rpc.wait_for(b, &id, "working");
        let started = std::time::Instant::now();
        let canceled = s.rpc.ok(b, b.cancel(), json!({ "id": id }));
        assert_eq!(canceled["status"]["state"], b.state("canceled"), "{b:?}");
        // The conductor stops waiting and stores the run, long before the agent's 10 s.
        let until = std::time::Instant::now() + T;
        let stored = loop {
            let task = s.rpc.get(b, &id);
            if task["artifacts"].is_array() {
                break task;
            }
            assert!(std::time::Instant::now() < until, "never stored: {task}");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(stored["status"]["state"], b.state("canceled"));
        let envelope = envelope_of(&stored);
        assert_eq!(envelope["outcome"]["status"], "failed");
        assert_eq!(
            envelope["problem"]["type"],
            "https://w3id.org/data-director/problems/agent-error"
        );
        let detail = envelope["problem"]["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("echo.wire: Canceled: the caller canceled task"),
            "{detail}"
        );
        assert_eq!(
            s.rpc.err(b, b.cancel(), json!({ "id": id }))["code"],
            -32002
        );
        canceled_ids.push(id);
    }
    // After a restart the stored run is still a canceled task.
    let mut s = s;
    s.keep_runs = true;
    let runs = s.runs.clone();
    drop(s);
    let again = Served::over(Duration::ZERO, runs);
    for (b, id) in BOTH.into_iter().zip(&canceled_ids) {
        let task = again.rpc.get(b, id);
        assert_eq!(task["status"]["state"], b.state("canceled"), "{b:?} {task}");
        assert_eq!(
            again.rpc.err(b, b.cancel(), json!({ "id": id }))["code"],
            -32002
        );
    }
}

#[test]
fn list_tasks_lists_the_callers_runs_only_running_ones_first_paged_and_filtered() {
    let s = Served::new(Duration::from_millis(1500));
    let b = B::V10;
    let conversation = new_uuid7();
    let mine: Vec<String> = (0..3)
        .map(|i| {
            let conv = (i == 1).then_some(conversation.as_str());
            id_of(
                &s.rpc
                    .send(b, b.data(&format!("m-mine-{i}"), echo_request(conv))),
            )
        })
        .collect();
    let theirs = s.as_other().send(b, b.data("m-theirs", echo_request(None)));
    let running = b.sent_task(&s.rpc.call(
        b,
        b.send(),
        json!({"message": b.data("m-running", echo_request(None)), "configuration": b.non_blocking()}),
    ));
    let list = |params: Value| s.rpc.ok(b, "ListTasks", params);
    let ids = |page: &Value| -> Vec<String> {
        page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(id_of)
            .collect()
    };

    let all = list(json!({}));
    assert_eq!(all["totalSize"], 4, "{all}");
    let listed = ids(&all);
    assert_eq!(listed[0], id_of(&running), "the running task first");
    assert_eq!(
        &listed[1..],
        [mine[2].clone(), mine[1].clone(), mine[0].clone()]
    );
    assert!(
        !listed.contains(&id_of(&theirs)),
        "another principal's run is not listed"
    );
    assert_eq!(
        ids(&s.as_other().ok(b, "ListTasks", json!({}))),
        [id_of(&theirs)]
    );

    // Paged, two at a time, across the running task and the stored runs.
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let mut params = json!({"pageSize": 2});
        if !token.is_empty() {
            params["pageToken"] = json!(token);
        }
        let page = list(params);
        assert_eq!(page["totalSize"], 4);
        seen.extend(ids(&page));
        token = page["nextPageToken"].as_str().unwrap().to_string();
        if token.is_empty() {
            break;
        }
        assert!(seen.len() < 4);
    }
    assert_eq!(seen, listed);

    assert_eq!(
        ids(&list(json!({"contextId": conversation}))),
        [mine[1].clone()]
    );
    assert_eq!(
        ids(&list(json!({"status": "TASK_STATE_COMPLETED"}))),
        [mine[2].clone(), mine[1].clone(), mine[0].clone()]
    );
    let page = list(
        json!({"includeArtifacts": true, "historyLength": 0, "pageSize": 1, "pageToken": all_after_running(&list)}),
    );
    let task = &page["tasks"][0];
    assert!(task.get("history").is_none());
    assert_eq!(envelope_of(task)["invocation_id"], mine[2].as_str());
    let page = list(json!({"pageSize": 1, "pageToken": all_after_running(&list)}));
    let task = &page["tasks"][0];
    assert!(
        task.get("artifacts").is_none(),
        "artifacts are left out by default"
    );
    assert_eq!(
        task["history"][0]["parts"][0]["data"]["invocation_id"],
        mine[2].as_str()
    );
    let bad = s.rpc.err(b, "ListTasks", json!({"pageToken": "0123"}));
    assert_eq!(bad["code"], -32602);
    s.rpc.wait_for(b, &id_of(&running), "completed");
}

/// The page token after the first (running) task.
fn all_after_running(list: &dyn Fn(Value) -> Value) -> String {
    let first = list(json!({"pageSize": 1}));
    first["nextPageToken"].as_str().unwrap().to_string()
}

#[test]
fn list_tasks_is_refused_to_a_caller_without_credentials() {
    let s = Served::new(Duration::ZERO);
    let mut anonymous = s.rpc.clone();
    anonymous.headers.clear();
    // Refused before the body is read: HTTP 401, and the JSON-RPC error names no id.
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "ListTasks", "params": {}});
    let request = ClientRequest::post_json(&anonymous.url, body.to_string().into_bytes(), T)
        .header("A2A-Version", "1.0");
    let response = anonymous.http.send(request).unwrap();
    assert_eq!(response.status, 401);
    assert_eq!(
        response.header("www-authenticate"),
        Some("Bearer realm=\"ddwire\"")
    );
    let reply: Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(reply["id"], Value::Null, "{reply}");
    let error = &reply["error"];
    assert_eq!(error["code"], -32600, "{error}");
    // "Unauthenticated: send Authorization: …", the word said once.
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("unauthenticated")
    );
    assert_eq!(error_reason(error), Some("INVALID_REQUEST"));
}
