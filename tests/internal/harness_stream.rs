//! Streamed harness runs over loopback TCP, in both bindings: `message/stream` and
//! `SendStreamingMessage` answer Server-Sent Events (the task as submitted, a `working` update
//! per conductor stage, the envelope, a final status update), a failure ends the stream with a
//! final `failed` update naming its cause, `tasks/resubscribe` / `SubscribeToTask` follow a
//! running task, an idle stream sends keep-alive comments, and agents do not stream.

use super::common;
use super::rpc;

use ddwire::agent::Agent;
use ddwire::agent::builtin::{Echo, Failing, Hello};
use ddwire::contract::{Principal, PrincipalKind};
use ddwire::harness::identity::{Authenticator, token_digest};
use ddwire::harness::server::{self as harness_server, Harness};
use ddwire::ids::new_uuid7;
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::drain::Drain;
use ddwire::wire::http::{Limits, server::Server};
use rpc::{B, BOTH, Rpc, T};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const TOKEN: &str = "stream-token";

/// A harness on loopback over echo (with `delay`), hello and demo.failing, whose agents are
/// served on loopback too; `keep_alive` is the harness's stream keep-alive period.
struct Served {
    base: String,
    runs: PathBuf,
    /// Stopped before the run store is removed.
    harness: Option<Server>,
    agents: Vec<Server>,
}

impl Served {
    fn new(delay: Duration, keep_alive: Duration) -> Served {
        Served::draining(delay, keep_alive, Drain::new())
    }

    /// The same, sharing `drain` with the harness.
    fn draining(delay: Duration, keep_alive: Duration, drain: Drain) -> Served {
        let runs = std::env::temp_dir().join(format!("ddwire-harness-stream-{}", new_uuid7()));
        let agents: Vec<Arc<dyn Agent>> = vec![
            Arc::new(Echo::with_delay(delay)),
            Arc::new(Hello::new()),
            Arc::new(Failing::new()),
        ];
        let (conductor, servers) = common::tcp_conductor(agents, &runs);
        let principal = Principal::new(
            "https://orcid.org/0000-0002-1825-0097",
            "Josiah Carberry",
            PrincipalKind::Person,
        )
        .expect("a principal");
        let auth = Authenticator::Bearer(vec![ddwire::harness::identity::Token::new(
            token_digest(TOKEN),
            principal,
        )]);
        let bound = ddwire::wire::http::server::bind("127.0.0.1:0", Limits::DEFAULT).unwrap();
        let base = bound.default_public_url();
        let harness = Arc::new(
            Harness::new(conductor, Some(auth), &base)
                .with_keep_alive(keep_alive)
                .with_drain(drain),
        );
        let server = bound
            .serve(harness_server::handler(harness))
            .expect("the harness serves");
        Served {
            base,
            runs,
            harness: Some(server),
            agents: servers,
        }
    }

    fn rpc(&self) -> Rpc {
        Rpc::tcp(&format!("{}/a2a", self.base))
            .with_header("Authorization", &format!("Bearer {TOKEN}"))
    }

    /// One streaming call: the response's content type, and each SSE item in order (a
    /// comment as `:<text>`, an event as its JSON-RPC response).
    fn stream(&self, binding: B, method: &str, params: Value) -> (String, Vec<Item>) {
        let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
        let mut request = ClientRequest::post_json(
            format!("{}/a2a", self.base),
            body.to_string().into_bytes(),
            T,
        )
        .header("Authorization", &format!("Bearer {TOKEN}"))
        .header("Accept", "text/event-stream");
        if binding == B::V10 {
            request = request.header("A2A-Version", "1.0");
        }
        let response = HttpClient::tcp()
            .send(request)
            .expect("the stream ends within the deadline");
        assert_eq!(response.status, 200);
        let content_type = response.header("content-type").unwrap_or("").to_string();
        let text = String::from_utf8(response.body).expect("UTF-8");
        let items = text
            .split("\n\n")
            .filter(|frame| !frame.is_empty())
            .map(|frame| {
                if let Some(comment) = frame.strip_prefix(':') {
                    return Item::Comment(comment.trim().to_string());
                }
                let data = frame
                    .strip_prefix("data: ")
                    .unwrap_or_else(|| panic!("a frame is one data line: {frame:?}"));
                assert!(!data.contains('\n'), "one line per frame: {frame:?}");
                let value: Value = serde_json::from_str(data).expect("a JSON-RPC response");
                assert_eq!(value["id"], 9, "{value}");
                Item::Event(value)
            })
            .collect();
        (content_type, items)
    }

    fn send_stream(&self, binding: B, request: Value) -> Vec<Value> {
        let (content_type, items) = self.stream(
            binding,
            stream_method(binding),
            json!({"message": binding.data(&new_uuid7(), request)}),
        );
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        events_of(items)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        drop(self.harness.take());
        let _ = std::fs::remove_dir_all(&self.runs);
    }
}

#[derive(Debug)]
enum Item {
    Comment(String),
    Event(Value),
}

fn events_of(items: Vec<Item>) -> Vec<Value> {
    items
        .into_iter()
        .filter_map(|i| match i {
            Item::Event(v) => Some(v),
            Item::Comment(_) => None,
        })
        .collect()
}

fn stream_method(binding: B) -> &'static str {
    match binding {
        B::V03 => "message/stream",
        B::V10 => "SendStreamingMessage",
    }
}

fn subscribe_method(binding: B) -> &'static str {
    match binding {
        B::V03 => "tasks/resubscribe",
        B::V10 => "SubscribeToTask",
    }
}

/// What one event is, read the same way in both bindings: its kind (`task`,
/// `status-update`, `artifact-update`, `message`) and the object itself.
fn kind_of(binding: B, response: &Value) -> (&'static str, Value) {
    let result = &response["result"];
    match binding {
        B::V03 => {
            let kind = match result["kind"].as_str() {
                Some("task") => "task",
                Some("status-update") => "status-update",
                Some("artifact-update") => "artifact-update",
                Some("message") => "message",
                other => panic!("an unknown kind {other:?}: {response}"),
            };
            (kind, result.clone())
        }
        B::V10 => {
            for (key, kind) in [
                ("task", "task"),
                ("statusUpdate", "status-update"),
                ("artifactUpdate", "artifact-update"),
                ("message", "message"),
            ] {
                if let Some(inner) = result.get(key) {
                    return (kind, inner.clone());
                }
            }
            panic!("no StreamResponse member: {response}")
        }
    }
}

fn request_for(agent_id: &str, input: Value) -> Value {
    json!({"agent_id": agent_id, "invocation_id": new_uuid7(), "input": input})
}

fn hello_input() -> Value {
    json!({"schema_class": "Message", "message_text": "Grüße"})
}

/// The stages a stream reported, in order, and the position of each event kind.
fn stages_of(binding: B, events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| kind_of(binding, e))
        .filter(|(k, _)| *k == "status-update")
        .filter_map(|(_, u)| u["metadata"]["dd.stage"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_streamed_run_sends_the_task_each_stage_then_the_envelope_and_a_final_completed_update() {
    let s = Served::new(Duration::ZERO, Duration::from_secs(15));
    for binding in BOTH {
        let request = request_for("hello.world", hello_input());
        let id = request["invocation_id"].as_str().unwrap().to_string();
        let events = s.send_stream(binding, request);
        let kinds: Vec<(&str, Value)> = events.iter().map(|e| kind_of(binding, e)).collect();

        let (first, task) = &kinds[0];
        assert_eq!(*first, "task", "{events:?}");
        assert_eq!(task["id"], id.as_str(), "the task is the run");
        assert_eq!(task["status"]["state"], binding.state("submitted"));
        assert_eq!(
            stages_of(binding, &events),
            [
                "policy_gate",
                "input_check",
                "agent_call",
                "grounding_check",
                "store"
            ]
        );
        // Every status update before the last is `working`, and only the last is final.
        let updates: Vec<&Value> = kinds
            .iter()
            .filter(|(k, _)| *k == "status-update")
            .map(|(_, u)| u)
            .collect();
        let (last, working) = updates.split_last().unwrap();
        for update in working {
            assert_eq!(update["status"]["state"], binding.state("working"));
            assert_eq!(update["taskId"], id.as_str());
            if binding == B::V03 {
                assert_eq!(update["final"], false);
            }
        }
        assert_eq!(last["status"]["state"], binding.state("completed"));
        if binding == B::V03 {
            assert_eq!(last["final"], true);
        }
        assert_eq!(kinds.last().unwrap().0, "status-update", "final comes last");

        // The envelope comes after every check and the store, just before the final update.
        let artifact_at = kinds
            .iter()
            .position(|(k, _)| *k == "artifact-update")
            .expect("an artifact");
        let store_at = kinds
            .iter()
            .position(|(_, u)| u["metadata"]["dd.stage"] == "store")
            .unwrap();
        assert!(artifact_at > store_at, "{events:?}");
        assert_eq!(artifact_at, kinds.len() - 2);
        let artifact = &kinds[artifact_at].1["artifact"];
        assert_eq!(artifact["name"], "envelope");
        let envelope = &artifact["parts"][0]["data"];
        assert_eq!(envelope["outcome"]["status"], "succeeded");
        let stored: Value = serde_json::from_slice(
            &HttpClient::tcp()
                .send(
                    ClientRequest::get(format!("{}/runs/{id}", s.base), T)
                        .header("Authorization", &format!("Bearer {TOKEN}")),
                )
                .unwrap()
                .body,
        )
        .unwrap();
        assert_eq!(envelope, &stored, "the streamed envelope is the stored one");

        // The task, asked for afterwards, ended as the stream said.
        let got = s.rpc().get(binding, &id);
        assert_eq!(got["status"]["state"], binding.state("completed"));
    }
}

#[test]
fn a_streamed_run_whose_agent_fails_ends_with_a_final_failed_update_naming_the_problem_type() {
    let s = Served::new(Duration::ZERO, Duration::from_secs(15));
    for binding in BOTH {
        let request = request_for("demo.failing", hello_input());
        let events = s.send_stream(binding, request);
        let (kind, last) = kind_of(binding, events.last().unwrap());
        assert_eq!(kind, "status-update");
        assert_eq!(last["status"]["state"], binding.state("failed"));
        assert_eq!(
            last["metadata"]["dd.problem_type"],
            "https://w3id.org/data-director/problems/agent-error",
            "{last}"
        );
        if binding == B::V03 {
            assert_eq!(last["final"], true);
        }
        // The run went through every stage, and its envelope still reaches the caller.
        assert_eq!(stages_of(binding, &events).len(), 5);
        let envelope = events
            .iter()
            .map(|e| kind_of(binding, e))
            .find(|(k, _)| *k == "artifact-update")
            .expect("the envelope")
            .1;
        assert_eq!(
            envelope["artifact"]["parts"][0]["data"]["outcome"]["status"],
            "failed"
        );
    }
}

#[test]
fn a_streamed_call_to_an_agent_that_went_away_ends_failed_never_hung() {
    let mut s = Served::new(Duration::ZERO, Duration::from_secs(15));
    // hello.world stops answering after it was registered.
    drop(s.agents.remove(1));
    for binding in BOTH {
        let events = s.send_stream(binding, request_for("hello.world", hello_input()));
        let (_, last) = kind_of(binding, events.last().unwrap());
        assert_eq!(last["status"]["state"], binding.state("failed"), "{last}");
        assert_eq!(
            last["metadata"]["dd.problem_type"],
            "https://w3id.org/data-director/problems/agent-error"
        );
    }
}

#[test]
fn a_streamed_request_that_makes_no_run_ends_failed_naming_the_callers_error() {
    let s = Served::new(Duration::ZERO, Duration::from_secs(15));
    for binding in BOTH {
        let events = s.send_stream(binding, request_for("no.such.agent", hello_input()));
        assert_eq!(kind_of(binding, &events[0]).0, "task");
        let (_, last) = kind_of(binding, events.last().unwrap());
        assert_eq!(last["status"]["state"], binding.state("failed"));
        assert_eq!(last["metadata"]["dd.error"], "unknown_agent", "{last}");

        // Two data parts: refused before any run, in the task, as message/send does.
        let mut message = binding.data(&new_uuid7(), json!({"a": 1}));
        let part = message["parts"][0].clone();
        message["parts"].as_array_mut().unwrap().push(part);
        let (_, items) = s.stream(binding, stream_method(binding), json!({"message": message}));
        let events = events_of(items);
        assert_eq!(events.len(), 2, "the task, then its end: {events:?}");
        let (_, last) = kind_of(binding, &events[1]);
        assert_eq!(last["status"]["state"], binding.state("failed"));
        assert_eq!(last["metadata"]["dd.error"], "invalid_request");
    }
}

#[test]
fn a_refused_stream_is_one_sse_frame_holding_the_json_rpc_error() {
    let s = Served::new(Duration::ZERO, Duration::from_secs(15));
    for binding in BOTH {
        let (content_type, items) = s.stream(
            binding,
            subscribe_method(binding),
            json!({"id": new_uuid7()}),
        );
        assert!(content_type.starts_with("text/event-stream"));
        let events = events_of(items);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0]["error"]["code"], -32001, "{:?}", events[0]);

        // A message without parts.
        let mut message = binding.text(&new_uuid7(), "x");
        message["parts"] = json!([]);
        let (_, items) = s.stream(binding, stream_method(binding), json!({"message": message}));
        let events = events_of(items);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0]["error"]["code"], -32602, "{:?}", events[0]);
    }
}

#[test]
fn resubscribing_follows_a_running_task_to_its_end_and_an_ended_one_is_refused() {
    let s = Served::new(Duration::from_millis(1500), Duration::from_secs(15));
    for binding in BOTH {
        let request = json!({"agent_id": "echo.wire", "invocation_id": new_uuid7(),
                             "input": {"schema_class": "Echo", "value": 1}});
        let id = request["invocation_id"].as_str().unwrap().to_string();
        let sent = s.rpc().call(
            binding,
            binding.send(),
            json!({"message": binding.data(&new_uuid7(), request),
                   "configuration": binding.non_blocking()}),
        );
        assert_eq!(binding.sent_task(&sent)["id"], id.as_str());
        s.rpc().wait_for(binding, &id, "working");
        let (_, items) = s.stream(binding, subscribe_method(binding), json!({"id": id}));
        let events = events_of(items);
        let (first, task) = kind_of(binding, &events[0]);
        assert_eq!(first, "task");
        assert_eq!(task["status"]["state"], binding.state("working"));
        let (_, last) = kind_of(binding, events.last().unwrap());
        assert_eq!(last["status"]["state"], binding.state("completed"));
        assert!(
            events
                .iter()
                .any(|e| kind_of(binding, e).0 == "artifact-update"),
            "{events:?}"
        );
        // The task has ended: there is nothing to follow.
        let (_, items) = s.stream(binding, subscribe_method(binding), json!({"id": id}));
        let events = events_of(items);
        assert_eq!(events[0]["error"]["code"], -32004, "{:?}", events[0]);
    }
}

#[test]
fn an_idle_stream_sends_keep_alive_comments_while_the_agent_works() {
    let s = Served::new(Duration::from_millis(600), Duration::from_millis(50));
    let request = json!({"agent_id": "echo.wire", "invocation_id": new_uuid7(),
                         "input": {"schema_class": "Echo", "value": 1}});
    let (_, items) = s.stream(
        B::V03,
        "message/stream",
        json!({"message": B::V03.data(&new_uuid7(), request)}),
    );
    let comments = items
        .iter()
        .filter(|i| matches!(i, Item::Comment(c) if c == "keep-alive"))
        .count();
    assert!(comments >= 1, "{items:?}");
    let events = events_of(items);
    let (_, last) = kind_of(B::V03, events.last().unwrap());
    assert_eq!(last["status"]["state"], "completed");
}

#[test]
fn the_harness_card_declares_streaming_and_an_agents_card_and_endpoint_do_not() {
    let s = Served::new(Duration::ZERO, Duration::from_secs(15));
    let card = |base: &str| -> Value {
        let response = HttpClient::tcp()
            .send(ClientRequest::get(
                format!("{base}/.well-known/agent-card.json"),
                T,
            ))
            .unwrap();
        serde_json::from_slice(&response.body).unwrap()
    };
    assert_eq!(card(&s.base)["capabilities"]["streaming"], true);
    let agent = s.agents[0].base_url();
    assert_eq!(card(&agent)["capabilities"]["streaming"], false);
    // The agent refuses the stream methods as a plain JSON-RPC error (-32004).
    for binding in BOTH {
        let error = Rpc::tcp(&format!("{agent}/a2a")).err(
            binding,
            stream_method(binding),
            json!({"message": binding.text(&new_uuid7(), "hi")}),
        );
        assert_eq!(error["code"], -32004, "{error}");
    }
}

#[test]
fn a_stream_still_open_when_the_drain_is_cut_ends_with_a_final_failed_update() {
    let drain = Drain::new();
    let s = Served::draining(
        Duration::from_secs(3),
        Duration::from_secs(15),
        drain.clone(),
    );
    let cutter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(800));
        drain.cut();
    });
    let id = new_uuid7();
    let request = json!({"agent_id": "echo.wire", "invocation_id": id,
                         "input": {"schema_class": "Echo", "value": 1}});
    let events = s.send_stream(B::V03, request);
    cutter.join().unwrap();
    // The run the cut stream carried is not lost: it is stored once its agent answers (and only
    // then may the test remove the store).
    let index = s.runs.join("invocations.jsonl");
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&index).is_ok_and(|lines| lines.contains(&id)) {
        assert!(
            std::time::Instant::now() < until,
            "the cut run was never stored"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (kind, last) = kind_of(B::V03, events.last().unwrap());
    assert_eq!(kind, "status-update", "{events:?}");
    assert_eq!(last["status"]["state"], "failed");
    assert_eq!(last["final"], true);
    assert_eq!(last["metadata"]["dd.error"], "shutting_down", "{last}");
}
