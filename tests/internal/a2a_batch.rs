//! A JSON-RPC batch to a hung agent is answered within one batch deadline. White-box: the
//! deadline is an internal knob of the A2A endpoint, set here to 1 s so the test is quick.

use ddwire::agent::builtin::Hello;
use ddwire::agent::{Agent, AgentError, RunContext, server};
use ddwire::contract::{AgentResult, AgentSpec, InvocationRequest};
use ddwire::wire::a2a::client::A2aClient;
use ddwire::wire::a2a::endpoint::{CallContext, Endpoint};
use ddwire::wire::a2a::model::{Message, Task};
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::{Handler, Limits, server as http_server};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(10);

/// An agent that answers only after `.1`, with an error.
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

fn send_body(id: &str) -> String {
    let request = json!({"agent_id": "hello.world", "input": {"schema_class": "Message", "message_text": "hi there"}});
    let params = json!({"message": {"kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "data", "data": request}]}});
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"message/send","params":{params}}}"#)
}

#[test]
fn a_batch_of_32_calls_to_a_hung_agent_is_answered_within_one_deadline() {
    let hung: Arc<dyn Agent> = Arc::new(Slow(Hello::new().spec().clone(), Duration::from_secs(8)));
    let client = A2aClient::default();
    let mut endpoint = Endpoint::new(Arc::new(
        move |m: &Message, t: Option<&Task>, ctx: &CallContext| {
            server::plan(&hung, m, t, ctx, &client)
        },
    ));
    endpoint.batch_deadline = Duration::from_secs(1);
    let handler: Handler = Arc::new(move |r| endpoint.handle(&r));
    let http = http_server::serve("127.0.0.1:0", handler, Limits::DEFAULT).unwrap();
    let calls: Vec<String> = (0..32).map(|i| send_body(&i.to_string())).collect();
    let started = std::time::Instant::now();
    let reply = HttpClient::tcp()
        .send(ClientRequest::post_json(
            format!("{}/a2a", http.base_url()),
            format!("[{}]", calls.join(",")).into_bytes(),
            T,
        ))
        .unwrap();
    let took = started.elapsed();
    // One deadline (1 s), not 32 agent calls of 8 s, nor even one.
    assert!(took < Duration::from_secs(5), "answered after {took:?}");
    assert_eq!(reply.status, 200);
    let replies: Vec<Value> = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(replies.len(), 32);
    for (i, r) in replies.iter().enumerate() {
        assert_eq!(r["id"], json!(i));
        assert_eq!(
            r["error"]["code"],
            -32000, // JSON-RPC's server error, for a call not finished in time
            "{r}"
        );
    }
    drop(http);
}
