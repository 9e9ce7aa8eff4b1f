//! A2A's task and context rules, message shape, history, ListTasks, non-blocking sends and
//! cancellation on the agent server, in both bindings over loopback TCP (and the in-memory
//! transport where an endpoint is built by hand). Each test is named for the rule it proves;
//! the spec sections are A2A 1.0 §3.1–§3.4 and 0.3 §7.

use super::rpc;

use ddwire::agent::builtin::{Echo, Hello};
use ddwire::agent::server;
use ddwire::wire::a2a::endpoint::{
    CallContext, Endpoint, Execute, Plan, Progress, Reply, TaskPlan, TaskStore,
};
use ddwire::wire::a2a::error::BACKGROUND_FULL;
use ddwire::wire::a2a::model::{Message, Task};
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::memory::MemoryNet;
use ddwire::wire::http::{Limits, Request};
use rpc::{B, BOTH, Rpc, T, error_reason, texts};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// An agent served on loopback, and a JSON-RPC client for it.
struct Served {
    rpc: Rpc,
    base: String,
    /// Stopped when dropped.
    _server: ddwire::wire::http::server::Server,
}

impl Served {
    fn echo(delay: Duration) -> Served {
        Served::of(Arc::new(Echo::with_delay(delay)))
    }

    fn of(agent: Arc<dyn ddwire::agent::Agent>) -> Served {
        let server = server::serve(agent, "127.0.0.1:0", None).expect("serves on loopback");
        let base = server.base_url();
        Served {
            rpc: Rpc::tcp(&format!("{base}/a2a")),
            base,
            _server: server,
        }
    }
}

fn id_of(task: &Value) -> String {
    task["id"].as_str().expect("a task id").to_string()
}

fn echo_request() -> Value {
    json!({"agent_id": "echo.wire", "input": {"schema_class": "Echo", "value": 1}})
}

// --- Task and context rules -------------------------------------------------------------------

#[test]
fn a_message_naming_an_unknown_task_is_refused_as_task_not_found_in_both_bindings() {
    let s = Served::echo(Duration::ZERO);
    for b in BOTH {
        let mut message = b.text("m-unknown", "hello");
        message["taskId"] = json!("no-such-task");
        let error = s.rpc.err(b, b.send(), json!({ "message": message }));
        assert_eq!(error["code"], -32001, "{b:?} {error}");
        // No task was made under the client's id.
        assert_eq!(
            s.rpc.err(b, b.get(), json!({"id": "no-such-task"}))["code"],
            -32001
        );
    }
}

#[test]
fn a_message_to_a_finished_task_is_refused_and_the_task_keeps_its_history_in_both_bindings() {
    let s = Served::echo(Duration::ZERO);
    for b in BOTH {
        let first = s.rpc.send(b, b.text("tck-complete-task-1", "first turn"));
        assert_eq!(first["status"]["state"], b.state("completed"));
        let id = id_of(&first);
        let mut again = b.text("m-again", "second turn");
        again["taskId"] = json!(id);
        let error = s.rpc.err(b, b.send(), json!({ "message": again }));
        // 1.0 §3.1.1 UnsupportedOperationError; 0.3 names no code, ddwire uses the same.
        assert_eq!(error["code"], -32004, "{b:?} {error}");
        assert!(error["message"].as_str().unwrap().contains("terminal"));
        let kept = s.rpc.get(b, &id);
        assert_eq!(kept["contextId"], first["contextId"]);
        assert_eq!(kept["history"].as_array().unwrap().len(), 1);
        assert_eq!(texts(&kept["history"][0]), ["first turn"]);
    }
}

#[test]
fn a_message_whose_context_is_not_its_tasks_is_refused_and_changes_nothing() {
    let s = Served::echo(Duration::ZERO);
    for b in BOTH {
        let asking = s.rpc.send(b, b.text("tck-input-required-1", "start"));
        assert_eq!(asking["status"]["state"], b.state("input-required"));
        let id = id_of(&asking);
        let mut wrong = b.text("m-wrong", "wrong context");
        wrong["taskId"] = json!(id);
        wrong["contextId"] = json!("some-other-context");
        let error = s.rpc.err(b, b.send(), json!({ "message": wrong }));
        assert_eq!(error["code"], -32602, "{b:?} {error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("some-other-context")
        );
        // No side effect: the refused message is not in the history, the task still waits.
        let kept = s.rpc.get(b, &id);
        assert_eq!(kept["status"]["state"], b.state("input-required"));
        assert_eq!(kept["history"].as_array().unwrap().len(), 1);
    }
}

#[test]
fn a_message_naming_only_its_task_continues_it_in_the_tasks_context() {
    let s = Served::echo(Duration::ZERO);
    for b in BOTH {
        let asking = s.rpc.send(b, b.text("tck-input-required-2", "start"));
        let (id, context) = (id_of(&asking), asking["contextId"].clone());
        let mut next = b.text("tck-complete-task-2", "answer");
        next["taskId"] = json!(id);
        let done = s.rpc.send(b, next);
        assert_eq!(done["id"], id.as_str());
        assert_eq!(done["contextId"], context, "{b:?}: the context is inferred");
        assert_eq!(done["status"]["state"], b.state("completed"));
        // Inferred on the stored message too, not only on the task.
        let history = done["history"].as_array().unwrap();
        assert_eq!(history.last().unwrap()["contextId"], context);
        assert_eq!(history.last().unwrap()["taskId"], id.as_str());
        // A matching contextId is accepted as well.
        let again = s.rpc.send(b, b.text("tck-input-required-3", "start"));
        let mut next = b.text("tck-complete-task-3", "answer");
        next["taskId"] = again["id"].clone();
        next["contextId"] = again["contextId"].clone();
        assert_eq!(s.rpc.send(b, next)["status"]["state"], b.state("completed"));
    }
}

#[test]
fn a_continued_task_keeps_its_whole_history_in_order() {
    let s = Served::echo(Duration::ZERO);
    for b in BOTH {
        let asking = s.rpc.send(b, b.text("tck-input-required-4", "one"));
        let id = id_of(&asking);
        for (prefix, text) in [
            ("tck-input-required-5", "two"),
            ("tck-complete-task-6", "three"),
        ] {
            let mut next = b.text(prefix, text);
            next["taskId"] = json!(id);
            s.rpc.send(b, next);
        }
        let task = s.rpc.get(b, &id);
        let history = task["history"].as_array().unwrap();
        let said: Vec<(String, Vec<String>)> = history
            .iter()
            .map(|m| (m["role"].as_str().unwrap().to_string(), texts(m)))
            .collect();
        let (user, agent) = match b {
            B::V03 => ("user", "agent"),
            B::V10 => ("ROLE_USER", "ROLE_AGENT"),
        };
        let question =
            vec!["Input required: send another message to this task to continue it.".to_string()];
        assert_eq!(
            said,
            [
                (user.to_string(), vec!["one".to_string()]),
                (agent.to_string(), question.clone()),
                (user.to_string(), vec!["two".to_string()]),
                (agent.to_string(), question),
                (user.to_string(), vec!["three".to_string()]),
            ],
            "{b:?}"
        );
        assert_eq!(texts(&task["status"]["message"]), ["Hello from TCK"]);
    }
}

// --- Message shape ----------------------------------------------------------------------------

#[test]
fn a_message_without_parts_message_id_or_role_is_invalid_params_in_both_bindings() {
    let s = Served::echo(Duration::ZERO);
    for b in BOTH {
        let whole = b.text("m-shape", "hello");
        let without = |key: &str| {
            let mut m = whole.clone();
            m.as_object_mut().unwrap().remove(key);
            m
        };
        let mut empty = whole.clone();
        empty["parts"] = json!([]);
        for (message, field) in [
            (empty, "params.message.parts"),
            (without("parts"), "params.message.parts"),
            (without("messageId"), "params.message.messageId"),
            (without("role"), "params.message.role"),
        ] {
            let error = s.rpc.err(b, b.send(), json!({ "message": message }));
            assert_eq!(error["code"], -32602, "{b:?} {field}: {error}");
            assert!(
                error["message"].as_str().unwrap().contains(field),
                "{b:?}: {error}"
            );
        }
        let error = s.rpc.err(b, b.send(), json!({}));
        assert_eq!(error["code"], -32602);
    }
}

#[test]
fn a_contract_agent_fails_a_well_formed_message_without_one_data_part_after_the_shape_check() {
    let s = Served::of(Arc::new(Hello::new()));
    for b in BOTH {
        let task = s.rpc.send(b, b.text("m-text", "hello"));
        assert_eq!(task["status"]["state"], b.state("failed"), "{b:?} {task}");
        let reason = &task["status"]["message"]["parts"][0]["data"]["error"];
        assert_eq!(reason, "expected exactly one data part, got 0");
        // The shape check comes first: no parts at all is not a task.
        let mut empty = b.text("m-empty", "x");
        empty["parts"] = json!([]);
        assert_eq!(
            s.rpc.err(b, b.send(), json!({ "message": empty }))["code"],
            -32602
        );
    }
}

// --- History ----------------------------------------------------------------------------------

#[test]
fn get_task_shows_as_much_history_as_history_length_asks_and_refuses_a_negative_one() {
    let s = Served::echo(Duration::ZERO);
    for b in BOTH {
        let asking = s.rpc.send(b, b.text("tck-input-required-7", "one"));
        let id = id_of(&asking);
        let mut next = b.text("tck-complete-task-7", "two");
        next["taskId"] = json!(id);
        s.rpc.send(b, next);
        let shown = |length: Option<Value>| {
            let mut params = json!({ "id": id });
            if let Some(n) = length {
                params["historyLength"] = n;
            }
            s.rpc.ok(b, b.get(), params)
        };
        assert_eq!(shown(None)["history"].as_array().unwrap().len(), 3);
        assert!(
            shown(Some(json!(0))).get("history").is_none(),
            "{b:?}: 0 omits history"
        );
        let last = shown(Some(json!(1)));
        assert_eq!(last["history"].as_array().unwrap().len(), 1);
        assert_eq!(texts(&last["history"][0]), ["two"], "the latest message");
        assert_eq!(
            shown(Some(json!(99)))["history"].as_array().unwrap().len(),
            3
        );
        for bad in [json!(-1), json!(1.5), json!("many")] {
            let error = s
                .rpc
                .err(b, b.get(), json!({"id": id, "historyLength": bad}));
            assert_eq!(error["code"], -32602, "{b:?} {bad}");
            assert!(error["message"].as_str().unwrap().contains("historyLength"));
        }
    }
}

#[test]
fn a_send_shows_as_much_history_as_its_configuration_asks_and_refuses_a_negative_length() {
    let s = Served::echo(Duration::ZERO);
    for b in BOTH {
        let none = s.rpc.call(
            b,
            b.send(),
            json!({"message": b.text("m-h0", "hi"), "configuration": {"historyLength": 0}}),
        );
        let task = b.sent_task(&none);
        assert_eq!(
            task["status"]["state"],
            b.state("completed"),
            "{b:?} {none}"
        );
        assert!(task.get("history").is_none(), "{b:?}: {task}");
        // The task itself keeps its history.
        assert_eq!(
            s.rpc.get(b, &id_of(&task))["history"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        let error = s.rpc.err(
            b,
            b.send(),
            json!({"message": b.text("m-h1", "hi"), "configuration": {"historyLength": -1}}),
        );
        assert_eq!(error["code"], -32602, "{b:?}");
    }
}

// --- ListTasks --------------------------------------------------------------------------------

fn list(s: &Served, params: Value) -> Value {
    s.rpc.ok(B::V10, "ListTasks", params)
}

fn ids(page: &Value) -> Vec<String> {
    page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect()
}

#[test]
fn list_tasks_filters_by_context_status_and_status_time() {
    let s = Served::echo(Duration::ZERO);
    let b = B::V10;
    let mut in_context = b.text("tck-complete-task-l1", "a");
    in_context["contextId"] = json!("ctx-list-1");
    let a = s.rpc.send(b, in_context);
    assert_eq!(
        a["contextId"], "ctx-list-1",
        "a client's new context is accepted"
    );
    let waiting = s.rpc.send(b, b.text("tck-input-required-l2", "b"));
    std::thread::sleep(Duration::from_millis(20));
    // Now, as ddwire stamps a request's issued_at (RFC 3339, microseconds).
    let since = ddwire::contract::InvocationRequest::new(
        "now",
        ddwire::contract::Input(serde_json::Map::new()),
    )
    .issued_at;
    std::thread::sleep(Duration::from_millis(20));
    let late = s.rpc.send(b, b.text("tck-complete-task-l3", "c"));

    let everything = list(&s, json!({}));
    assert_eq!(everything["totalSize"], 3);
    assert_eq!(
        ids(&everything),
        [id_of(&late), id_of(&waiting), id_of(&a)],
        "newest first"
    );
    assert_eq!(
        ids(&list(&s, json!({"contextId": "ctx-list-1"}))),
        [id_of(&a)]
    );
    // ProtoJSON's original field names are read too, as the 1.0 TCK sends them.
    assert_eq!(
        ids(&list(&s, json!({"context_id": "ctx-list-1"}))),
        [id_of(&a)]
    );
    let waiting_only = list(&s, json!({"status": "TASK_STATE_INPUT_REQUIRED"}));
    assert_eq!(ids(&waiting_only), [id_of(&waiting)]);
    assert_eq!(waiting_only["totalSize"], 1);
    assert_eq!(
        ids(&list(&s, json!({"status": 6}))),
        [id_of(&waiting)],
        "by number"
    );
    assert_eq!(
        ids(&list(&s, json!({"statusTimestampAfter": since}))),
        [id_of(&late)]
    );
    let none = list(&s, json!({"contextId": "nothing-here"}));
    assert_eq!(
        none,
        json!({"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0})
    );
}

#[test]
fn list_tasks_pages_with_opaque_tokens_and_counts_the_total() {
    let s = Served::echo(Duration::ZERO);
    let b = B::V10;
    let mut sent: Vec<String> = (0..5)
        .map(|i| id_of(&s.rpc.send(b, b.text(&format!("m-page-{i}"), "x"))))
        .collect();
    sent.reverse();
    let mut seen = Vec::new();
    let mut token = Value::Null;
    loop {
        let mut params = json!({"pageSize": 2});
        if !token.is_null() {
            params["pageToken"] = token.clone();
        }
        let page = list(&s, params);
        assert_eq!(page["pageSize"], 2);
        assert_eq!(page["totalSize"], 5);
        seen.extend(ids(&page));
        token = page["nextPageToken"].clone();
        if token == "" {
            break;
        }
        assert!(seen.len() < 5, "a page token after the last page");
    }
    assert_eq!(seen, sent);
    let default = list(&s, json!({}));
    assert_eq!(default["pageSize"], 50, "the default page size");
    assert_eq!(default["nextPageToken"], "");
    assert_eq!(list(&s, json!({"pageSize": 100}))["pageSize"], 100);
}

#[test]
fn list_tasks_limits_history_and_leaves_artifacts_out_unless_asked() {
    let s = Served::echo(Duration::ZERO);
    let b = B::V10;
    let with_artifact = s.rpc.send(b, b.text("tck-artifact-text-l", "x"));
    assert_eq!(
        with_artifact["artifacts"][0]["parts"][0]["text"],
        "Generated text content"
    );
    let page = list(&s, json!({}));
    let task = &page["tasks"][0];
    assert!(
        task.get("artifacts").is_none(),
        "includeArtifacts defaults to false: {task}"
    );
    assert_eq!(task["history"].as_array().unwrap().len(), 1);
    let page = list(&s, json!({"includeArtifacts": true, "historyLength": 0}));
    let task = &page["tasks"][0];
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "Generated text content"
    );
    assert!(task.get("history").is_none(), "{task}");
}

#[test]
fn list_tasks_refuses_bad_sizes_tokens_states_times_and_history_lengths() {
    let s = Served::echo(Duration::ZERO);
    for (params, field) in [
        (json!({"pageSize": 0}), "pageSize"),
        (json!({"pageSize": -1}), "pageSize"),
        (json!({"pageSize": 101}), "pageSize"),
        (json!({"pageToken": "not-a-token"}), "pageToken"),
        (json!({"status": "TASK_STATE_RUNNING"}), "status"),
        (
            json!({"statusTimestampAfter": "-1"}),
            "statusTimestampAfter",
        ),
        (
            json!({"statusTimestampAfter": "2026-01-02T03:04:05"}),
            "statusTimestampAfter",
        ),
        (json!({"historyLength": -1}), "historyLength"),
        (json!({"includeArtifacts": "yes"}), "includeArtifacts"),
    ] {
        let error = s.rpc.err(B::V10, "ListTasks", params.clone());
        assert_eq!(error["code"], -32602, "{params}");
        assert!(
            error["message"].as_str().unwrap().contains(field),
            "{error}"
        );
        assert_eq!(error_reason(&error), Some("INVALID_PARAMS"));
    }
}

#[test]
fn a_0_3_client_finds_no_tasks_list_method_because_0_3_has_none_over_json_rpc() {
    let s = Served::echo(Duration::ZERO);
    let error = s.rpc.err(B::V03, "tasks/list", json!({}));
    assert_eq!(error["code"], -32601);
    assert!(error.get("data").is_none());
}

#[test]
fn the_agent_server_lists_and_finds_only_the_tasks_its_bounded_store_still_holds() {
    // The same endpoint the agent server runs, with a store of three tasks.
    let net = MemoryNet::new();
    let agent: Arc<dyn ddwire::agent::Agent> = Arc::new(Echo::new());
    let client = ddwire::wire::a2a::client::A2aClient::new(HttpClient::memory(net.clone()));
    let execute: Execute = Arc::new(move |m: &Message, t: Option<&Task>, ctx: &CallContext| {
        server::plan(&agent, m, t, ctx, &client)
    });
    let mut endpoint = Endpoint::new(execute);
    endpoint.tasks = TaskStore::new(3);
    let url = serve_endpoint(&net, "bounded.test", endpoint);
    let rpc = Rpc::memory(HttpClient::memory(net), &url);
    let b = B::V10;
    let sent: Vec<String> = (0..5)
        .map(|i| id_of(&rpc.send(b, b.text(&format!("m-bound-{i}"), "x"))))
        .collect();
    let page = rpc.ok(b, "ListTasks", json!({}));
    assert_eq!(page["totalSize"], 3);
    assert_eq!(
        rpc.err(b, b.get(), json!({"id": sent[0]}))["code"],
        -32001,
        "forgotten"
    );
    assert_eq!(rpc.get(b, &sent[4])["id"], sent[4].as_str());
}

/// Serve an endpoint on the in-memory network at `host`; its JSON-RPC URL.
fn serve_endpoint(net: &MemoryNet, host: &str, endpoint: Endpoint) -> String {
    let handler: ddwire::wire::http::Handler =
        Arc::new(move |request: Request| endpoint.handle(&request));
    format!("{}/a2a", net.serve(host, handler, Limits::DEFAULT))
}

// --- Errors, routes, card ---------------------------------------------------------------------

#[test]
fn a2a_1_0_errors_carry_error_info_and_0_3_errors_carry_no_data() {
    let s = Served::echo(Duration::ZERO);
    let error = s.rpc.err(B::V10, "GetTask", json!({"id": "missing"}));
    assert_eq!(error["code"], -32001);
    assert_eq!(
        error["data"],
        json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
                "domain": "a2a-protocol.org", "metadata": {}}])
    );
    let error = s.rpc.err(B::V10, "SendStreamingMessage", json!({}));
    assert_eq!(error_reason(&error), Some("UNSUPPORTED_OPERATION"));
    let error = s.rpc.err(B::V10, "NoSuchMethod", json!({}));
    assert_eq!(
        (error["code"].as_i64(), error_reason(&error)),
        (Some(-32601), Some("METHOD_NOT_FOUND"))
    );
    let error = s.rpc.err(B::V03, "tasks/get", json!({"id": "missing"}));
    assert_eq!(error, json!({"code": -32001, "message": "Task not found"}));
}

#[test]
fn json_rpc_is_answered_at_the_a2a_path_with_a_trailing_slash_as_httpx_clients_post() {
    let s = Served::echo(Duration::ZERO);
    let slash = Rpc::tcp(&format!("{}/a2a/", s.base));
    let task = slash.send(B::V10, B::V10.text("m-slash", "hello"));
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
}

#[test]
fn the_card_carries_an_etag_last_modified_and_cache_control_and_answers_304_when_unchanged() {
    let s = Served::echo(Duration::ZERO);
    let http = HttpClient::tcp();
    let url = format!("{}/.well-known/agent-card.json", s.base);
    let first = http.send(ClientRequest::get(&url, T)).unwrap();
    assert_eq!(first.status, 200);
    let etag = first.header("etag").expect("an ETag").to_string();
    assert!(etag.starts_with("W/\""), "{etag}");
    assert!(first.header("cache-control").unwrap().contains("max-age="));
    let modified = first.header("last-modified").expect("a Last-Modified");
    assert!(modified.ends_with(" GMT"), "{modified}");
    let again = http
        .send(ClientRequest::get(&url, T).header("If-None-Match", &etag))
        .unwrap();
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let other = http
        .send(ClientRequest::get(&url, T).header("If-None-Match", "W/\"other\""))
        .unwrap();
    assert_eq!(other.status, 200);
    let card: Value = serde_json::from_slice(&first.body).unwrap();
    assert!(
        card["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == "echo.text")
    );
    assert!(
        card["defaultInputModes"]
            .as_array()
            .unwrap()
            .contains(&json!("text/plain"))
    );
}

// --- Non-blocking sends and cancellation ------------------------------------------------------

#[test]
fn a_non_blocking_send_answers_submitted_at_once_and_get_task_shows_its_progress() {
    let s = Served::echo(Duration::from_millis(600));
    for b in BOTH {
        for message in [b.text("m-nb", "slow"), b.data("m-nb-data", echo_request())] {
            let response = s.rpc.call(
                b,
                b.send(),
                json!({"message": message, "configuration": b.non_blocking()}),
            );
            let task = b.sent_task(&response);
            assert_eq!(
                task["status"]["state"],
                b.state("submitted"),
                "{b:?} {response}"
            );
            assert_eq!(task["history"].as_array().unwrap().len(), 1);
            let id = id_of(&task);
            s.rpc.wait_for(b, &id, "working");
            let done = s.rpc.wait_for(b, &id, "completed");
            assert_eq!(done["id"], id.as_str());
        }
        // Without it, a send blocks until the task is done.
        let blocking = s.rpc.send(b, b.text("m-blocking", "slow"));
        assert_eq!(blocking["status"]["state"], b.state("completed"));
    }
}

#[test]
fn canceling_a_running_task_cancels_it_and_a_finished_or_unknown_task_cannot_be() {
    let s = Served::echo(Duration::from_secs(30));
    for b in BOTH {
        for message in [
            b.text("m-cancel", "slow"),
            b.data("m-cancel-data", echo_request()),
        ] {
            let response = s.rpc.call(
                b,
                b.send(),
                json!({"message": message, "configuration": b.non_blocking()}),
            );
            let id = id_of(&b.sent_task(&response));
            s.rpc.wait_for(b, &id, "working");
            let canceled = s.rpc.ok(b, b.cancel(), json!({ "id": id }));
            assert_eq!(canceled["status"]["state"], b.state("canceled"), "{b:?}");
            assert_eq!(canceled["history"].as_array().unwrap().len(), 1);
            let again = s.rpc.err(b, b.cancel(), json!({ "id": id }));
            assert_eq!(again["code"], -32002, "{b:?}: canceled is terminal");
            // The work stops: the task stays canceled.
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(s.rpc.get(b, &id)["status"]["state"], b.state("canceled"));
        }
        let error = s.rpc.err(b, b.cancel(), json!({"id": "no-such-task"}));
        assert_eq!(error["code"], -32001);
    }
    let quick = Served::echo(Duration::ZERO);
    for b in BOTH {
        let waiting = quick.rpc.send(b, b.text("tck-input-required-c", "wait"));
        let canceled = quick.rpc.ok(b, b.cancel(), json!({ "id": waiting["id"] }));
        assert_eq!(
            canceled["status"]["state"],
            b.state("canceled"),
            "input-required can be"
        );
        let done = quick.rpc.send(b, b.text("m-done", "x"));
        let error = quick.rpc.err(b, b.cancel(), json!({ "id": done["id"] }));
        assert_eq!(error["code"], -32002, "{b:?}");
    }
}

#[test]
fn a_non_blocking_send_beyond_the_background_limit_is_refused() {
    let net = MemoryNet::new();
    let (release, hold) = crossbeam_channel::bounded::<()>(0);
    let execute: Execute = Arc::new(move |_: &Message, _: Option<&Task>, _: &CallContext| {
        let hold = hold.clone();
        Plan::Task(TaskPlan::run(move |task: &Progress| {
            task.working();
            let _ = hold.recv_timeout(Duration::from_secs(20));
            Reply::completed(Vec::new())
        }))
    });
    let mut endpoint = Endpoint::new(execute);
    endpoint.max_background = 1;
    let url = serve_endpoint(&net, "busy.test", endpoint);
    let rpc = Rpc::memory(HttpClient::memory(net), &url);
    for b in BOTH {
        let params =
            |id: &str| json!({"message": b.text(id, "x"), "configuration": b.non_blocking()});
        let first = b.sent_task(&rpc.call(b, b.send(), params("m-bg-1")));
        assert_eq!(first["status"]["state"], b.state("submitted"));
        let error = rpc.err(b, b.send(), params("m-bg-2"));
        assert_eq!(error["code"], BACKGROUND_FULL, "{b:?} {error}");
        release.send(()).unwrap();
        rpc.wait_for(b, &id_of(&first), "completed");
    }
}

#[test]
fn one_principal_holding_its_share_of_background_tasks_leaves_the_rest_to_others() {
    let net = MemoryNet::new();
    let (release, hold) = crossbeam_channel::unbounded::<()>();
    // The owner is the caller the X-Who header names (as the harness's principal would be).
    let execute: Execute = Arc::new(move |_: &Message, _: Option<&Task>, ctx: &CallContext| {
        let hold = hold.clone();
        let who = ctx
            .headers
            .iter()
            .find(|(k, _)| k == "x-who")
            .map(|(_, v)| v.clone());
        let mut plan = TaskPlan::run(move |task: &Progress| {
            task.working();
            let _ = hold.recv_timeout(Duration::from_secs(20));
            Reply::completed(Vec::new())
        });
        plan.owner = who;
        Plan::Task(plan)
    });
    let mut endpoint = Endpoint::new(execute);
    endpoint.max_background = 4;
    endpoint.max_background_per_owner = 2;
    let url = serve_endpoint(&net, "shared.test", endpoint);
    let rpc = Rpc::memory(HttpClient::memory(net), &url);
    let b = B::V10;
    let as_ = |who: &str| rpc.with_header("X-Who", who);
    let params = |id: &str| json!({"message": b.text(id, "x"), "configuration": b.non_blocking()});
    let (alice, bob) = (as_("alice"), as_("bob"));
    let mut held = Vec::new();
    for i in 0..2 {
        let task = b.sent_task(&alice.call(b, b.send(), params(&format!("m-a-{i}"))));
        assert_eq!(task["status"]["state"], b.state("submitted"));
        held.push(task);
    }
    let error = alice.err(b, b.send(), params("m-a-3"));
    assert_eq!(error["code"], BACKGROUND_FULL, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("one principal's share"),
        "{error}"
    );
    // Bob still gets his share, and the endpoint's limit still holds for all.
    for i in 0..2 {
        let task = b.sent_task(&bob.call(b, b.send(), params(&format!("m-b-{i}"))));
        assert_eq!(task["status"]["state"], b.state("submitted"));
        held.push(task);
    }
    let error = as_("carol").err(b, b.send(), params("m-c-1"));
    assert_eq!(error["code"], BACKGROUND_FULL, "{error}");
    for _ in &held {
        release.send(()).unwrap();
    }
    for task in &held {
        rpc.wait_for(b, &id_of(task), "completed");
    }
    // Shares are given back when the tasks end.
    let again = b.sent_task(&alice.call(b, b.send(), params("m-a-4")));
    assert_eq!(again["status"]["state"], b.state("submitted"));
    release.send(()).unwrap();
    rpc.wait_for(b, &id_of(&again), "completed");
}

// --- The echo agent as a conformance subject --------------------------------------------------

#[test]
fn the_echo_agent_answers_text_with_text_and_its_contract_calls_as_before() {
    let s = Served::echo(Duration::ZERO);
    for b in BOTH {
        let task = s.rpc.send(b, b.text("m-echo", "say it back"));
        assert_eq!(task["status"]["state"], b.state("completed"));
        assert_eq!(texts(&task["status"]["message"]), ["say it back"]);
        let contract = s.rpc.send(b, b.data("m-contract", echo_request()));
        assert_eq!(contract["status"]["state"], b.state("completed"));
        assert_eq!(contract["artifacts"][0]["name"], "agent-result");
        let mut two = b.data("m-two", echo_request());
        let part = two["parts"][0].clone();
        two["parts"].as_array_mut().unwrap().push(part);
        let refused = s.rpc.send(b, two);
        assert_eq!(
            refused["status"]["state"],
            b.state("failed"),
            "two data parts"
        );
    }
}

#[test]
fn the_echo_agent_follows_the_tck_scenario_its_message_id_names() {
    let s = Served::echo(Duration::ZERO);
    let b = B::V10;
    let artifact = |prefix: &str| {
        let task = s
            .rpc
            .send(b, b.text(&format!("{prefix}-1a2b3c4d-jsonrpc"), "x"));
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{prefix}");
        task["artifacts"][0]["parts"][0].clone()
    };
    assert_eq!(
        artifact("tck-artifact-text")["text"],
        "Generated text content"
    );
    assert_eq!(
        artifact("tck-artifact-file"),
        json!({"raw": "dGNr", "filename": "output.txt", "mediaType": "text/plain"})
    );
    assert_eq!(
        artifact("tck-artifact-file-url"),
        json!({"url": "https://example.com/output.txt", "filename": "output.txt", "mediaType": "text/plain"})
    );
    assert_eq!(
        artifact("tck-artifact-data")["data"],
        json!({"key": "value", "count": 42})
    );
    let message = s.rpc.ok(
        b,
        "SendMessage",
        json!({"message": b.text("tck-message-response-1", "x")}),
    );
    assert_eq!(texts(&message["message"]), ["Direct message response"]);
    assert_eq!(message["message"]["role"], "ROLE_AGENT");
    let rejected = s.rpc.send(b, b.text("tck-reject-task-1", "x"));
    assert_eq!(rejected["status"]["state"], "TASK_STATE_REJECTED");
    let complete = s.rpc.send(b, b.text("tck-complete-task-1", "x"));
    assert_eq!(texts(&complete["status"]["message"]), ["Hello from TCK"]);
}
