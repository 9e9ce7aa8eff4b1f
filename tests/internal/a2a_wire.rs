//! The A2A wire, end to end over real HTTP/1.1 bytes: loopback TCP and the in-memory transport
//! through the same handler. Named for the behaviour each test proves.

use ddwire::agent::builtin::{Echo, Hello};
use ddwire::agent::server::{self, serve_in_memory};
use ddwire::agent::{Agent, AgentError, RunContext};
use ddwire::contract::AgentSpec;
use ddwire::contract::ContractError;
use ddwire::contract::{AgentResult, InvocationRequest};
use ddwire::trace;
use ddwire::wire::WireError;
use ddwire::wire::a2a::card::{self, EXTENSION_URI};
use ddwire::wire::a2a::client::{A2aClient, Target};
use ddwire::wire::a2a::model::{Message, Part, Role, Task, TaskState};
use ddwire::wire::a2a::{Binding, artifact};
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::memory::MemoryNet;
use serde_json::{Map, Value, json};
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(10);
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn hello_request() -> Value {
    json!({"agent_id": "hello.world", "input": {"schema_class": "Message", "message_text": "hi there"}})
}

fn message(data: Vec<Value>, metadata: Option<Value>) -> Message {
    let mut m = Message::new(Role::User, data.into_iter().map(Part::data).collect());
    m.metadata = metadata.and_then(|v| v.as_object().cloned());
    m
}

fn in_memory(agent: Arc<dyn Agent>) -> (A2aClient, Target) {
    let net = MemoryNet::new();
    let base = serve_in_memory(&net, agent);
    let client = A2aClient::new(HttpClient::memory(net));
    let card = client.fetch_card(&base, T).unwrap();
    (client, Target::from_card(&card).unwrap())
}

/// The `agent-result` body of a completed task.
fn agent_result(task: &Task) -> Value {
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let results = task.artifacts_named(artifact::AGENT_RESULT);
    assert_eq!(results.len(), 1);
    let Part::Data { data, .. } = &results[0].parts[0] else {
        panic!("not a data part")
    };
    data.clone()
}

fn spans_of(body: &Value) -> Vec<trace::SpanRecord> {
    body["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| trace::from_json(s.as_str().unwrap()).unwrap())
        .collect()
}

#[test]
fn an_in_memory_agent_and_its_loopback_twin_produce_the_same_outcome() {
    let (mem_client, mem_target) = in_memory(Arc::new(Hello::new()));
    let server = server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let tcp_client = A2aClient::default();
    let tcp_target =
        Target::from_card(&tcp_client.fetch_card(&server.base_url(), T).unwrap()).unwrap();
    let run = |client: &A2aClient, target: &Target| {
        let task = client
            .send_for_task(target, message(vec![hello_request()], None), &[], T)
            .unwrap();
        let body = agent_result(&task);
        let result = AgentResult::from_document(&body["result"]).unwrap();
        (
            result.outcome,
            result.payload.map(|p| p.0["reply_text"].clone()),
            spans_of(&body).len(),
        )
    };
    assert_eq!(run(&mem_client, &mem_target), run(&tcp_client, &tcp_target));
    assert_eq!(mem_target.binding, Binding::V10);
    server.shutdown();
}

#[test]
fn a2a_rejects_malformed_request() {
    let (client, target) = in_memory(Arc::new(Hello::new()));
    let two = vec![hello_request(), hello_request()];
    let task = client
        .send_for_task(&target, message(two, None), &[], T)
        .unwrap();
    assert_eq!(task.status.state, TaskState::Failed);
    assert_eq!(
        task.failure_detail().unwrap(),
        "expected exactly one data part, got 2"
    );
    // A message without parts is not well formed: refused before any task is made.
    match client.send_for_task(&target, message(vec![], None), &[], T) {
        Err(WireError::JsonRpc {
            code: -32602,
            message,
            ..
        }) => {
            assert!(message.contains("params.message.parts"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let mut bad = hello_request();
    bad["acting_for"] =
        json!({"principal_id": "https://orcid.org/0000-0002-1825-0097", "name": "X"});
    let task = client
        .send_for_task(&target, message(vec![bad], None), &[], T)
        .unwrap();
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(
        task.failure_detail().unwrap().contains("acting_for"),
        "{:?}",
        task.failure_detail()
    );
}

#[test]
fn agent_spans_join_the_callers_trace_under_the_traceparent_it_sent() {
    let (client, target) = in_memory(Arc::new(Hello::new()));
    let meta = json!({"traceparent": TRACEPARENT});
    let task = client
        .send_for_task(&target, message(vec![hello_request()], Some(meta)), &[], T)
        .unwrap();
    let spans = spans_of(&agent_result(&task));
    assert_eq!(spans.len(), 1);
    assert_eq!(
        spans[0].trace_id.to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(
        spans[0].parent_id.map(|p| p.to_string()).as_deref(),
        Some("00f067aa0ba902b7")
    );
    assert!(spans[0].is(trace::SpanName::Chat));
}

#[test]
fn the_http_traceparent_header_parents_the_spans_when_metadata_has_none() {
    let (client, target) = in_memory(Arc::new(Hello::new()));
    let task = client
        .send_for_task(
            &target,
            message(vec![hello_request()], None),
            &[("traceparent", TRACEPARENT)],
            T,
        )
        .unwrap();
    let spans = spans_of(&agent_result(&task));
    assert_eq!(
        spans[0].trace_id.to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
}

#[test]
fn an_invalid_traceparent_starts_a_new_trace() {
    let (client, target) = in_memory(Arc::new(Hello::new()));
    let meta = json!({"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"});
    let task = client
        .send_for_task(&target, message(vec![hello_request()], Some(meta)), &[], T)
        .unwrap();
    let spans = spans_of(&agent_result(&task));
    assert_eq!(spans[0].parent_id, None);
}

#[test]
fn the_input_ref_and_hash_in_metadata_reach_the_run_context() {
    let (client, target) = in_memory(Arc::new(Hello::new()));
    let meta = json!({"dd.input_ref": "input:given", "dd.input_hash": "a".repeat(64)});
    let task = client
        .send_for_task(&target, message(vec![hello_request()], Some(meta)), &[], T)
        .unwrap();
    let result = &agent_result(&task)["result"];
    assert_eq!(result["evidence"][0]["source_id"], "input:given");
    assert_eq!(result["evidence"][0]["content_hash"], "a".repeat(64));
    assert_eq!(
        result["payload"]["grounded_on"][0]["source_id"],
        "input:given"
    );
}

#[test]
fn a_data_part_whose_integers_arrive_as_floats_is_accepted() {
    let (client, target) = in_memory(Arc::new(Echo::new()));
    let request = json!({"agent_id": "echo.wire", "input": {"schema_class": "Echo", "value": {"n": 1.0, "m": [2.0]}}});
    let task = client
        .send_for_task(&target, message(vec![request], None), &[], T)
        .unwrap();
    assert_eq!(
        agent_result(&task)["result"]["payload"]["value"],
        json!({"n": 1.0, "m": [2.0]})
    );
}

/// Raw JSON-RPC over the in-memory wire: status and body.
fn post(
    net: &MemoryNet,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Value, Vec<(String, String)>) {
    let mut req = ClientRequest::post_json(url, body.as_bytes().to_vec(), T);
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let r = net.send(req).unwrap();
    let v = if r.body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&r.body).unwrap()
    };
    (r.status, v, r.headers)
}

fn hello_net() -> (MemoryNet, String) {
    let net = MemoryNet::new();
    let base = serve_in_memory(&net, Arc::new(Hello::new()));
    (net, format!("{base}/a2a"))
}

fn send_body(id: &str, method: &str) -> String {
    let params = if method == "message/send" {
        json!({"message": {"kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "data", "data": hello_request()}]}})
    } else {
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": hello_request()}]}})
    };
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

#[test]
fn the_response_id_echoes_the_request_ids_json_type() {
    let (net, url) = hello_net();
    for id in ["1", "\"1\"", "null"] {
        let (status, body, _) = post(&net, &url, &[], &send_body(id, "message/send"));
        assert_eq!(status, 200);
        assert_eq!(
            body["id"],
            serde_json::from_str::<Value>(id).unwrap(),
            "{id}"
        );
        assert_eq!(body["result"]["kind"], "task");
    }
}

#[test]
fn a_notification_gets_no_json_rpc_body() {
    let (net, url) = hello_net();
    let body = send_body("1", "message/send").replace(r#""id":1,"#, "");
    let (status, body, _) = post(&net, &url, &[], &body);
    assert_eq!((status, body), (204, Value::Null));
}

#[test]
fn json_rpc_errors_carry_the_standard_codes_with_http_200() {
    let (net, url) = hello_net();
    let cases = [
        ("{", -32700, Value::Null),
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"message/send"}"#,
            -32600,
            json!(1),
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"message/send"}"#,
            -32600,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#,
            -32601,
            json!(2),
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"message/send","params":{"message":{"role":"user","parts":[]}}}"#,
            -32602,
            json!(3),
        ),
        ("[]", -32600, Value::Null),
    ];
    for (body, code, id) in cases {
        let (status, reply, _) = post(&net, &url, &[], body);
        assert_eq!(status, 200, "{body}");
        assert_eq!(reply["error"]["code"], code, "{body}: {reply}");
        assert_eq!(reply["id"], id, "{body}");
    }
}

#[test]
fn a_batch_gets_an_array_of_responses_without_notifications() {
    let (net, url) = hello_net();
    let notification = send_body("0", "message/send").replace(r#""id":0,"#, "");
    let batch = format!("[{}, 1, {}]", send_body("7", "message/send"), notification);
    let (status, reply, _) = post(&net, &url, &[], &batch);
    assert_eq!(status, 200);
    let replies = reply.as_array().unwrap();
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0]["id"], 7);
    assert_eq!(replies[1]["error"]["code"], -32600);
}

#[test]
fn a_body_over_the_limit_is_http_413_with_a_json_rpc_error() {
    let (net, url) = hello_net();
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5 << 20)
    );
    let (status, reply, _) = post(&net, &url, &[], &big);
    assert_eq!(status, 413);
    assert_eq!(reply["error"]["code"], -32600);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4194304"),
        "{reply}"
    );
}

#[test]
fn nesting_beyond_the_depth_limit_is_a_parse_error() {
    let (net, url) = hello_net();
    let deep = format!("{}1{}", "[".repeat(65), "]".repeat(65));
    let (_, reply, _) = post(&net, &url, &[], &deep);
    assert_eq!(reply["error"]["code"], -32700);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("64 levels")
    );
}

#[test]
fn the_a2a_version_header_must_match_the_methods_binding() {
    let (net, url) = hello_net();
    let (_, reply, _) = post(&net, &url, &[], &send_body("1", "SendMessage"));
    assert_eq!(reply["error"]["code"], -32009);
    let (_, reply, _) = post(
        &net,
        &url,
        &[("A2A-Version", "1.0")],
        &send_body("1", "message/send"),
    );
    assert_eq!(reply["error"]["code"], -32009);
    let (_, reply, _) = post(
        &net,
        &url,
        &[("A2A-Version", "2.0")],
        &send_body("1", "SendMessage"),
    );
    assert_eq!(reply["error"]["code"], -32009);
    let (_, reply, _) = post(
        &net,
        &url,
        &[("A2A-Version", "1.0")],
        &send_body("1", "SendMessage"),
    );
    assert_eq!(
        reply["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let (_, reply, _) = post(
        &net,
        &format!("{url}?A2A-Version=1.0"),
        &[],
        &send_body("1", "SendMessage"),
    );
    assert!(reply.get("result").is_some(), "{reply}");
}

#[test]
fn tasks_the_server_has_seen_are_answered_and_others_are_not_found() {
    let (net, url) = hello_net();
    let (_, reply, _) = post(&net, &url, &[], &send_body("1", "message/send"));
    let id = reply["result"]["id"].as_str().unwrap().to_string();
    let get = |method: &str, version: &[(&str, &str)], id: &str| {
        post(
            &net,
            &url,
            version,
            &format!(r#"{{"jsonrpc":"2.0","id":9,"method":"{method}","params":{{"id":"{id}"}}}}"#),
        )
        .1
    };
    assert_eq!(get("tasks/get", &[], &id)["result"]["id"], id.as_str());
    assert_eq!(
        get("GetTask", &[("A2A-Version", "1.0")], &id)["result"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(get("tasks/get", &[], "nope")["error"]["code"], -32001);
    assert_eq!(get("tasks/cancel", &[], &id)["error"]["code"], -32002);
    assert_eq!(
        get("CancelTask", &[("A2A-Version", "1.0")], "nope")["error"]["code"],
        -32001
    );
}

#[test]
fn an_agent_refuses_streaming_because_it_answers_whole_replies() {
    let (net, url) = hello_net();
    let (_, reply, _) = post(&net, &url, &[], &send_body("1", "message/stream"));
    assert_eq!(reply["error"]["code"], -32004);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("streaming: false")
    );
}

#[test]
fn an_undeclared_extended_card_is_an_unsupported_operation_in_1_0() {
    // A2A 1.0 §3.3.4: the card does not declare `extendedAgentCard`, so -32004; A2A 0.3 names
    // -32007 for an authenticated extended card that is not configured.
    let (net, url) = hello_net();
    let call = |method: &str, version: &str| {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{}}}}"#);
        post(&net, &url, &[("A2A-Version", version)], &body).1["error"]["code"].clone()
    };
    assert_eq!(call("GetExtendedAgentCard", "1.0"), -32004);
    assert_eq!(call("agent/getAuthenticatedExtendedCard", "0.3"), -32007);
}

#[test]
fn the_data_director_extension_is_acknowledged_when_requested() {
    let (net, url) = hello_net();
    let (_, _, headers) = post(
        &net,
        &url,
        &[("X-A2A-Extensions", EXTENSION_URI)],
        &send_body("1", "message/send"),
    );
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "x-a2a-extensions" && v == EXTENSION_URI),
        "{headers:?}"
    );
}

#[test]
fn the_card_serves_both_bindings_and_never_a_wildcard_address() {
    let server = server::serve(Arc::new(Hello::new()), "0.0.0.0:0", None).unwrap();
    let port = server.local_addr().port();
    let client = A2aClient::default();
    let card = client
        .fetch_card(&format!("http://127.0.0.1:{port}"), T)
        .unwrap();
    let endpoint = format!("http://127.0.0.1:{port}/a2a");
    assert_eq!(card["url"], endpoint.as_str());
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert_eq!(card["preferredTransport"], "JSONRPC");
    let versions: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["protocolVersion"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["1.0", "0.3"]);
    assert_eq!(card["capabilities"]["streaming"], false);
    let ext = &card["capabilities"]["extensions"][0];
    assert_eq!(
        (ext["uri"].as_str(), ext["required"].as_bool()),
        (Some(EXTENSION_URI), Some(true))
    );
    let legacy = HttpClient::tcp()
        .send(ClientRequest::get(
            format!("http://127.0.0.1:{port}/.well-known/agent.json"),
            T,
        ))
        .unwrap();
    assert_eq!(legacy.status, 200);
    server.shutdown();
}

/// A2A 1.0 §8.3.2: a client selects the first supported entry of `supportedInterfaces`; a card
/// with none is a v0.3 card, called at its `url` when `preferredTransport` is JSON-RPC, else at
/// a JSON-RPC `additionalInterfaces` entry (0.3 §5.6.3).
#[test]
fn a_card_is_called_at_its_first_json_rpc_interface_in_the_cards_order() {
    let target = |card: Value| Target::from_card(&card).map(|t| (t.binding, t.url));
    let listed = |first: &str, second: &str| {
        json!({"url": "http://h/legacy", "protocolVersion": "0.3", "supportedInterfaces": [
            {"url": "http://h/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": format!("http://h/{first}"), "protocolBinding": "JSONRPC", "protocolVersion": first},
            {"url": format!("http://h/{second}"), "protocolBinding": "JSONRPC", "protocolVersion": second}]})
    };
    assert_eq!(
        target(listed("1.0", "0.3")).unwrap(),
        (Binding::V10, "http://h/1.0".into())
    );
    assert_eq!(
        target(listed("0.3", "1.0")).unwrap(),
        (Binding::V03, "http://h/0.3".into())
    );
    let v03 = json!({"url": "http://h/grpc", "preferredTransport": "GRPC",
        "additionalInterfaces": [{"url": "http://h/rpc", "transport": "JSONRPC"}]});
    assert_eq!(target(v03).unwrap(), (Binding::V03, "http://h/rpc".into()));
    let none = json!({"url": "http://h/grpc", "preferredTransport": "GRPC"});
    assert!(matches!(target(none), Err(WireError::Protocol { .. })));
}

#[test]
fn a_spec_round_trips_through_its_card() {
    let hello = Hello::new();
    let card = card::agent_card(hello.spec(), "http://hello.test");
    assert_eq!(&card::spec_from_card(&card).unwrap(), hello.spec());
    let tags = card["skills"][0]["tags"].as_array().unwrap();
    assert!(
        tags.contains(&json!("grounding:input_only")) && tags.contains(&json!("accepts:Message"))
    );
}

/// An edit to a card's description.
type Edit = Box<dyn FnOnce(&mut Map<String, Value>)>;

fn card_with(edit: impl FnOnce(&mut Map<String, Value>)) -> Result<AgentSpec, ContractError> {
    let mut card = card::agent_card(Hello::new().spec(), "http://hello.test");
    let params = card["capabilities"]["extensions"][0]["params"]
        .as_object_mut()
        .unwrap();
    edit(params);
    card::spec_from_card(&card)
}

#[test]
fn a_card_without_the_spec_extension_is_rejected() {
    let mut card = card::agent_card(Hello::new().spec(), "http://hello.test");
    card["capabilities"]["extensions"] = json!([]);
    let err = card::spec_from_card(&card).unwrap_err();
    assert!(matches!(err, ContractError::Spec { .. }));
    assert!(err.to_string().contains(EXTENSION_URI), "{err}");
}

#[test]
fn a_card_built_against_another_contract_is_incompatible_not_malformed() {
    for version in [json!("0.1.0"), json!("99.0.0"), Value::Null] {
        let err = card_with(|p| {
            p.insert("contract_version".into(), version.clone());
        })
        .unwrap_err();
        assert!(
            matches!(err, ContractError::Version { .. }),
            "{version}: {err}"
        );
    }
}

#[test]
fn a_card_that_breaks_its_description_is_refused_with_the_reason() {
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|p| drop(p.remove("action_class"))),
            "lacks ['action_class']",
        ),
        (
            Box::new(|p| drop(p.insert("accepts".into(), json!([])))),
            "accepts nothing",
        ),
        (
            Box::new(|p| drop(p["schemas"].as_object_mut().unwrap().remove("Message"))),
            "carries no schema for it",
        ),
        (
            Box::new(|p| p["schemas"]["Message"]["json_schema"]["title"] = json!("altered")),
            "does not match its digest",
        ),
        (
            Box::new(|p| {
                drop(p.insert(
                    "derivations".into(),
                    json!({"reply_text": {"how": "magic"}}),
                ))
            }),
            "malformed derivations",
        ),
    ];
    for (edit, expected) in cases {
        let err = card_with(edit).unwrap_err().to_string();
        assert!(err.contains(expected), "{err} should contain {expected}");
    }
}

#[test]
fn a_payload_class_that_does_not_require_grounded_on_is_refused() {
    let err = card_with(|p| {
        let schema = &mut p["schemas"]["Reply"]["json_schema"];
        schema["required"] = json!(["schema_class", "reply_text", "reply_derivation"]);
        let digest = ddwire::contract::schema_digest(schema);
        p["schemas"]["Reply"]["digest"] = json!(digest);
    })
    .unwrap_err();
    assert!(
        err.to_string().contains("does not mix in Grounded"),
        "{err}"
    );
}

#[test]
fn a_class_schema_that_does_not_designate_its_class_is_refused() {
    let err = card_with(|p| {
        let schema = &mut p["schemas"]["Message"]["json_schema"];
        schema["properties"]["schema_class"]["enum"] = json!(["Other"]);
        let digest = ddwire::contract::schema_digest(schema);
        p["schemas"]["Message"]["digest"] = json!(digest);
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("does not require schema_class = 'Message'"),
        "{err}"
    );
}

struct Slow(AgentSpec, Duration);

impl Agent for Slow {
    fn spec(&self) -> &AgentSpec {
        &self.0
    }
    fn run(&self, _: &InvocationRequest, _: &RunContext<'_>) -> Result<AgentResult, AgentError> {
        std::thread::sleep(self.1);
        Err(AgentError::new("TooSlow", "never answers in time"))
    }
}

#[test]
fn the_client_reports_each_failure_as_a_typed_error() {
    // Connection refused: a port nothing listens on.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let client = A2aClient::default();
    let err = client.fetch_card(&format!("http://{free}"), T).unwrap_err();
    assert!(
        matches!(err, WireError::Connect { .. }) && err.to_string().contains("connection refused"),
        "{err}"
    );

    // Timeout, over TCP.
    let slow = Slow(Hello::new().spec().clone(), Duration::from_millis(500));
    let server = server::serve(Arc::new(slow), "127.0.0.1:0", None).unwrap();
    let target = Target::from_card(&client.fetch_card(&server.base_url(), T).unwrap()).unwrap();
    let err = client
        .send(
            &target,
            message(vec![hello_request()], None),
            &[],
            Duration::from_millis(100),
        )
        .unwrap_err();
    assert!(matches!(err, WireError::Timeout { .. }), "{err}");
    server.shutdown();

    // An HTTP error, a JSON-RPC error without an id, and a reply outside A2A, in memory.
    let net = MemoryNet::new();
    let canned = |status: u16, body: &'static str| -> ddwire::wire::http::Handler {
        Arc::new(move |_| {
            ddwire::wire::http::Response::bytes(
                status,
                "application/json",
                body.as_bytes().to_vec(),
            )
        })
    };
    net.serve(
        "broken.test",
        Arc::new(|_| ddwire::wire::http::Response::bytes(500, "text/plain", b"boom".to_vec())),
        Default::default(),
    );
    net.serve(
        "noid.test",
        canned(
            200,
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"bad"}}"#,
        ),
        Default::default(),
    );
    net.serve(
        "odd.test",
        canned(200, r#"{"jsonrpc":"2.0","id":"ID","result":{"neither":1}}"#),
        Default::default(),
    );
    let client = A2aClient::new(HttpClient::memory(net));
    let target = |host: &str| Target {
        binding: Binding::V10,
        url: format!("http://{host}/a2a"),
    };
    let err = client
        .send(
            &target("broken.test"),
            message(vec![json!({})], None),
            &[],
            T,
        )
        .unwrap_err();
    assert!(
        matches!(err, WireError::HttpStatus { status: 500, .. }),
        "{err}"
    );
    let err = client
        .send(&target("noid.test"), message(vec![json!({})], None), &[], T)
        .unwrap_err();
    assert!(
        matches!(err, WireError::JsonRpc { code: -32700, .. }),
        "{err}"
    );
    let err = client
        .send(&target("odd.test"), message(vec![json!({})], None), &[], T)
        .unwrap_err();
    assert!(matches!(err, WireError::Protocol { .. }), "{err}");
}

/// Read one response with a `Content-Length` body from `stream`: (head, body). Fails, never
/// hangs, when the server closes early or goes quiet (the stream has a read timeout).
fn read_one_response(stream: &mut std::net::TcpStream) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = stream
            .read(&mut byte)
            .expect("a response head before the timeout");
        assert_eq!(
            n,
            1,
            "EOF inside a response head: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("a Content-Length")
        .parse()
        .unwrap();
    let mut body = vec![0; length];
    stream.read_exact(&mut body).expect("the whole body");
    (head, body)
}

#[test]
fn a_connection_is_kept_alive_across_requests() {
    let server = server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let mut stream = std::net::TcpStream::connect(server.local_addr()).unwrap();
    stream.set_read_timeout(Some(T)).unwrap();
    let request = "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut cards = Vec::new();
    for _ in 0..2 {
        // The same connection: a write after a close would fail, a read would see EOF.
        stream.write_all(request.as_bytes()).unwrap();
        let (head, body) = read_one_response(&mut stream);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(
            !head.to_ascii_lowercase().contains("connection: close"),
            "{head}"
        );
        cards.push(serde_json::from_slice::<Value>(&body).unwrap());
    }
    assert_eq!(cards[0], cards[1]);
    assert_eq!(cards[0]["name"], Hello::new().spec().agent_id.as_str());
    server.shutdown();
}

#[test]
fn a_request_head_over_the_limit_is_http_431_after_reading_at_most_the_buffer() {
    let server = server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let limit = ddwire::wire::http::Limits::DEFAULT.max_header_bytes;
    // Through a real client, a head of 20,000 bytes.
    let mut req = ClientRequest::get(
        format!("{}/.well-known/agent-card.json", server.base_url()),
        T,
    );
    req = req.header("X-Big", &"y".repeat(20_000));
    let response = HttpClient::tcp().send(req).unwrap();
    assert_eq!(response.status, 431);
    // The bound: a head of exactly the buffer, with no line end, is refused on those bytes
    // alone (the server sends 431 without waiting for one more byte), and closes.
    let mut stream = std::net::TcpStream::connect(server.local_addr()).unwrap();
    stream.set_read_timeout(Some(T)).unwrap();
    let mut head = b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    head.resize(limit, b'y');
    stream.write_all(&head).unwrap();
    let (reply, body) = read_one_response(&mut stream);
    assert!(reply.starts_with("HTTP/1.1 431"), "{reply}");
    assert!(reply.contains("Connection: close"), "{reply}");
    assert!(String::from_utf8_lossy(&body).contains(&format!("{limit} bytes")));
    let mut rest = Vec::new();
    assert_eq!(
        stream.read_to_end(&mut rest).unwrap(),
        0,
        "the connection stays open"
    );
    // One byte less is still a head in progress: no answer yet.
    let mut stream = std::net::TcpStream::connect(server.local_addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    stream.write_all(&head[..limit - 1]).unwrap();
    let mut byte = [0u8; 1];
    let early = stream.read(&mut byte);
    assert!(
        matches!(&early, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "{early:?}"
    );
    server.shutdown();
}

#[test]
fn shutdown_lets_a_request_in_flight_finish() {
    let slow = Slow(Hello::new().spec().clone(), Duration::from_millis(300));
    let server = server::serve(Arc::new(slow), "127.0.0.1:0", None).unwrap();
    let client = A2aClient::default();
    let target = Target::from_card(&client.fetch_card(&server.base_url(), T).unwrap()).unwrap();
    let call = std::thread::spawn(move || {
        client.send_for_task(&target, message(vec![hello_request()], None), &[], T)
    });
    std::thread::sleep(Duration::from_millis(100));
    server.shutdown();
    let task = call.join().unwrap().unwrap();
    assert_eq!(
        task.failure_detail().unwrap(),
        "TooSlow: never answers in time"
    );
}

/// A loopback TCP peer that reads one request per connection and answers it with `reply`
/// (raw bytes, whatever they are), then closes: the peer no ddwire server would be.
fn raw_tcp_peer(reply: &'static [u8]) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            stream.set_read_timeout(Some(T)).unwrap();
            let mut buf = [0u8; 8192];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(reply);
        }
    });
    format!("http://{addr}/a2a")
}

#[test]
fn a_404_is_never_a_result_even_with_a_json_rpc_success_body() {
    // The body answers any id: the client must not take it for the call's result.
    let url = raw_tcp_peer(
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 54\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{\"kind\":\"task\"}}\r\n",
    );
    let target = Target {
        binding: Binding::V03,
        url,
    };
    let err = A2aClient::default()
        .call(&target, "tasks/get", json!({"id": "t"}), &[], T)
        .unwrap_err();
    assert!(
        matches!(err, WireError::HttpStatus { status: 404, .. }),
        "{err:?}"
    );
}

#[test]
fn a_json_rpc_error_with_an_http_error_status_stays_a_json_rpc_error_but_a_result_does_not() {
    let net = MemoryNet::new();
    net.serve(
        "refused.test",
        Arc::new(|_| {
            ddwire::wire::http::Response::json(
                401,
                &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32040, "message": "unsigned"}}),
            )
        }),
        Default::default(),
    );
    net.serve(
        "odd.test",
        Arc::new(|req: ddwire::wire::http::Request| {
            let call: Value = serde_json::from_slice(&req.body).unwrap();
            ddwire::wire::http::Response::json(
                500,
                &json!({"jsonrpc": "2.0", "id": call["id"], "result": {"id": "t"}}),
            )
        }),
        Default::default(),
    );
    let client = A2aClient::new(HttpClient::memory(net));
    let target = |host: &str| Target {
        binding: Binding::V03,
        url: format!("http://{host}/a2a"),
    };
    let err = client
        .call(
            &target("refused.test"),
            "tasks/get",
            json!({"id": "t"}),
            &[],
            T,
        )
        .unwrap_err();
    assert!(
        matches!(err, WireError::JsonRpc { code: -32040, .. }),
        "{err:?}"
    );
    let err = client
        .call(&target("odd.test"), "tasks/get", json!({"id": "t"}), &[], T)
        .unwrap_err();
    assert!(
        matches!(err, WireError::HttpStatus { status: 500, .. }),
        "{err:?}"
    );
}

#[test]
fn a_peer_that_closes_mid_answer_is_a_disconnect_and_garbage_is_outside_the_protocol() {
    let target = |url| Target {
        binding: Binding::V03,
        url,
    };
    let client = A2aClient::default();
    let call = |url| client.call(&target(url), "tasks/get", json!({"id": "t"}), &[], T);
    for cut in [
        &b""[..],
        b"HTTP/1.1 200 OK\r\nContent-Le",
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
    ] {
        let err = call(raw_tcp_peer(cut)).unwrap_err();
        assert!(
            matches!(err, WireError::Disconnected { .. }),
            "{:?}: {err:?}",
            String::from_utf8_lossy(cut)
        );
    }
    let err = call(raw_tcp_peer(b"hello there\r\n\r\n")).unwrap_err();
    assert!(matches!(err, WireError::Protocol { .. }), "{err:?}");
}

/// message/send in its plain shape is read straight from the body (v0.3's typed reader); any
/// other shape is read the general way. Over TCP, the same call in both shapes gets the same
/// answer, and params the typed reader declines and the general reader refuses get the general
/// reader's error.
#[test]
fn a_plain_message_send_and_the_same_call_in_a_shape_the_typed_reader_declines_answer_alike() {
    let agent = server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let url = format!("{}/a2a", agent.base_url());
    let client = HttpClient::tcp();
    let post = |body: String| -> Value {
        let r = client
            .send(ClientRequest::post_json(&url, body.into_bytes(), T))
            .unwrap();
        assert_eq!(r.status, 200);
        serde_json::from_slice(&r.body).unwrap()
    };
    let plain = send_body("1", "message/send");
    // A member the typed reader does not know, which the general reader ignores.
    let declined = plain.replacen("{\"jsonrpc\"", "{\"x-extra\":true,\"jsonrpc\"", 1);
    assert_ne!(plain, declined);
    let (a, b) = (post(plain), post(declined));
    for reply in [&a, &b] {
        assert_eq!(reply["id"], 1, "{reply}");
        assert_eq!(reply["result"]["status"]["state"], "completed", "{reply}");
    }
    let (a, b) = (&a["result"], &b["result"]);
    for m in ["messageId", "role", "parts", "kind"] {
        assert_eq!(a["history"][0][m], b["history"][0][m], "{m}");
    }
    let result = |t: &Value| t["artifacts"][0]["parts"][0]["data"]["result"]["outcome"].clone();
    assert_eq!(result(a), result(b));
    assert!(result(a)["status"].is_string(), "{a}");
    // An array where the params object belongs: the general reader's -32602.
    let array = r#"{"jsonrpc":"2.0","id":2,"method":"message/send","params":[{"kind":"message","messageId":"m","role":"user","parts":[]}]}"#;
    let refused = post(array.to_string());
    assert_eq!(refused["id"], 2, "{refused}");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    agent.shutdown();
}

/// SendMessage in its plain shape is read straight from the body too (the typed reader both
/// bindings share); any other shape is read the general way. Over TCP, with the 1.0 version
/// header, the same call in both shapes gets the same answer, and params the typed reader
/// declines and the general reader refuses get the general reader's error.
#[test]
fn a_plain_send_message_and_the_same_call_in_a_shape_the_typed_reader_declines_answer_alike() {
    let agent = server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let url = format!("{}/a2a", agent.base_url());
    let client = HttpClient::tcp();
    let post = |body: String| -> Value {
        let request =
            ClientRequest::post_json(&url, body.into_bytes(), T).header("A2A-Version", "1.0");
        let r = client.send(request).unwrap();
        assert_eq!(r.status, 200);
        serde_json::from_slice(&r.body).unwrap()
    };
    let plain = send_body("1", "SendMessage");
    // The proto name of a member, which the general reader reads as the JSON name.
    let declined = plain.replacen("\"messageId\"", "\"message_id\"", 1);
    assert_ne!(plain, declined);
    let (a, b) = (post(plain), post(declined));
    for reply in [&a, &b] {
        assert_eq!(reply["id"], 1, "{reply}");
        assert_eq!(
            reply["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{reply}"
        );
    }
    let (a, b) = (&a["result"]["task"], &b["result"]["task"]);
    for m in ["messageId", "role", "parts"] {
        assert_eq!(a["history"][0][m], b["history"][0][m], "{m}");
    }
    let result = |t: &Value| t["artifacts"][0]["parts"][0]["data"]["result"]["outcome"].clone();
    assert_eq!(result(a), result(b));
    assert!(result(a)["status"].is_string(), "{a}");
    // Two members of the part's oneof: the general reader's -32602.
    let two = r#"{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi","data":null}]}}}"#;
    let refused = post(two.to_string());
    assert_eq!(refused["id"], 2, "{refused}");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    agent.shutdown();
}
