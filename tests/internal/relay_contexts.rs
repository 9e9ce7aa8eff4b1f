//! A2A contexts through the relay: a client's second turn names the first turn's contextId
//! and no taskId (A2A 1.0 §3.4.3), and the harness behind the relay starts it in the same
//! conversation, as it does when called directly.

use super::common;

use common::{TempDir, message, request, tcp_conductor};
use ddwire::agent::Agent;
use ddwire::agent::builtin::Hello;
use ddwire::harness::identity::Authenticator;
use ddwire::harness::server::{self as harness_server, Harness};
use ddwire::harness::testkit::test_principal;
use ddwire::relay::{self, PeerSpec, Relay, RelayConfig, Role};
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::egress::Egress;
use ddwire::wire::http::{self, Limits};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

fn post(url: &str, body: &Value) -> Value {
    let request = ClientRequest::post_json(url, body.to_string().into_bytes(), T)
        .header("A2A-Version", "1.0");
    let response = HttpClient::tcp().send(request).unwrap();
    serde_json::from_slice(&response.body).unwrap()
}

#[test]
fn a_second_turn_through_the_relay_joins_the_first_turns_conversation() {
    let runs = TempDir::new("relay-contexts");
    let agents: Vec<Arc<dyn Agent>> = vec![Arc::new(Hello::new())];
    let (conductor, _agents) = tcp_conductor(agents, runs.path());
    let bound = http::server::bind("127.0.0.1:0", Limits::DEFAULT).unwrap();
    let harness_url = bound.default_public_url();
    let harness = Arc::new(Harness::new(
        conductor,
        Some(Authenticator::Operator(test_principal())),
        &harness_url,
    ));
    let _harness_server = bound.serve(harness_server::handler(harness)).unwrap();
    let mut config = RelayConfig::new(
        vec![PeerSpec::new("dd", &harness_url, Role::Leaf).unwrap()],
        "http://placeholder",
    );
    config.egress = Egress::allowing(["127.0.0.1/32"]).unwrap();
    let relay = Arc::new(Relay::new(config).unwrap());
    let relay_server =
        http::server::serve("127.0.0.1:0", relay::handler(relay), Limits::DEFAULT).unwrap();
    let url = format!("{}/a2a", relay_server.base_url());
    let turn = |context: Option<&str>| {
        let mut message = json!({"messageId": ddwire::ids::new_uuid7(), "role": "ROLE_USER",
            "parts": [{"data": request("hello.world", message("hi"))}],
            "metadata": {"agent.target": "dd"}});
        if let Some(c) = context {
            message["contextId"] = json!(c);
        }
        let reply = post(
            &url,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                    "params": {"message": message}}),
        );
        reply["result"]["task"].clone()
    };
    let first = turn(None);
    let context = first["contextId"]
        .as_str()
        .unwrap_or_else(|| panic!("{first}"));
    let second = turn(Some(context));
    assert_eq!(second["contextId"], context, "{second}");
    assert_ne!(second["id"], first["id"]);
    assert_eq!(
        second["status"]["state"], "TASK_STATE_COMPLETED",
        "{second}"
    );
    for task in [&first, &second] {
        let envelope = &task["artifacts"][0]["parts"][0]["data"];
        assert_eq!(envelope["conversation_id"], context, "{envelope}");
    }
}
