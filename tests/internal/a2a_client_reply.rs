//! The A2A client's typed reader of a send's reply (`wire::a2a::reply`) against what ddwire's
//! own agent server answers: the harness calls its agents this way, so each such reply must
//! take the fast path, and give what the general reader gives.

use ddwire::agent::builtin::{Echo, Hello};
use ddwire::agent::server::serve_in_memory;
use ddwire::wire::a2a::codec::{decode_result, encode_send_params};
use ddwire::wire::a2a::model::{Message, Part, Role, SendParams, SendResult};
use ddwire::wire::a2a::{Binding, JSONRPC_PATH, Operation, reply};
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::memory::MemoryNet;
use ddwire::wire::jsonrpc;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn every_reply_of_ddwires_agent_server_to_a_harness_call_is_read_by_the_typed_reader() {
    let net = MemoryNet::new();
    let echo = serve_in_memory(&net, Arc::new(Echo::new()));
    let hello = serve_in_memory(&net, Arc::new(Hello::new()));
    let http = HttpClient::memory(net);
    let calls = [
        (
            &echo,
            json!({"agent_id": "echo.wire", "input": {"schema_class": "Echo", "value": {"n": 1}}}),
        ),
        (
            &hello,
            json!({"agent_id": "hello.world", "input": {"schema_class": "Message", "message_text": "hi"}}),
        ),
        // Refused by the agent: a failed task, its reason in the status message.
        (
            &echo,
            json!({"agent_id": "echo.wire", "input": {"schema_class": "Nope"}}),
        ),
    ];
    for binding in [Binding::V03, Binding::V10] {
        for (base, doc) in &calls {
            let id = json!(ddwire::ids::new_uuid7());
            let mut message = Message::new(Role::User, vec![Part::data(doc.clone())]);
            let mut metadata = serde_json::Map::new();
            metadata.insert(
                "traceparent".into(),
                json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            );
            message.metadata = Some(metadata);
            let params = SendParams {
                message,
                configuration: None,
                metadata: None,
            };
            let params = encode_send_params(binding, &params);
            let body = jsonrpc::request(&id, binding.method(Operation::Send), params).to_string();
            let url = format!("{}{JSONRPC_PATH}", base.trim_end_matches('/'));
            let request = ClientRequest::post_json(url, body.into_bytes(), Duration::from_secs(10))
                .header("A2A-Version", binding.version());
            let response = http.send(request).unwrap();
            assert_eq!(response.status, 200);
            let text = String::from_utf8_lossy(&response.body);
            let fast = reply::read_task(binding, &response.body, id.as_str().unwrap())
                .unwrap_or_else(|| panic!("{binding:?} declined: {text}"));
            let general = jsonrpc::read_response(&response.body, &id).unwrap();
            let general = decode_result(binding, general).unwrap();
            assert_eq!(general, SendResult::Task(fast), "{binding:?}: {text}");
        }
    }
}
