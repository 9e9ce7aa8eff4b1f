//! `ddwire relay` over loopback: real ddwire agents as peers, and raw TCP peers that misbehave
//! in each way a peer can (a 404 with a JSON body, garbage, a hang, a cut connection), each
//! failure observed in its class.

use ddwire::agent::builtin::Echo;
use ddwire::relay::{self, PeerSpec, Relay, RelayConfig, Role, Topology};
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::egress::Egress;
use ddwire::wire::http::{self, Limits};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(20);

struct Setup {
    relay: Arc<Relay>,
    server: http::server::Server,
    _agents: Vec<http::server::Server>,
    traces: PathBuf,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.traces);
    }
}

impl Setup {
    fn url(&self) -> String {
        self.server.base_url()
    }
}

fn echo_agent(delay: Option<Duration>) -> http::server::Server {
    let agent = match delay {
        Some(d) => Echo::with_delay(d),
        None => Echo::new(),
    };
    ddwire::agent::server::serve(Arc::new(agent), "127.0.0.1:0", None).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ddwire-relay-{name}-{}", ddwire::ids::new_uuid7()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A relay over `peers` (id, url, role), forwarding with `timeout`.
fn relay_over(
    name: &str,
    peers: Vec<(&str, String, Role)>,
    topology: Topology,
    timeout: Duration,
    agents: Vec<http::server::Server>,
) -> Setup {
    let traces = temp_dir(name);
    let specs = peers
        .into_iter()
        .map(|(id, url, role)| PeerSpec::new(id, &url, role).unwrap())
        .collect();
    let mut config = RelayConfig::new(specs, "http://placeholder");
    config.topology = topology;
    config.timeout = timeout;
    config.traces_dir = Some(traces.clone());
    // The peers here are loopback servers, which a relay refuses unless told otherwise.
    config.egress = Egress::allowing(["127.0.0.1/32"]).unwrap();
    config.allow_registration = true;
    let relay = Arc::new(Relay::new(config).unwrap());
    let server = http::server::serve(
        "127.0.0.1:0",
        relay::handler(relay.clone()),
        Limits::DEFAULT,
    )
    .unwrap();
    relay.set_public_url(&server.base_url());
    Setup {
        relay,
        server,
        _agents: agents,
        traces,
    }
}

fn post(url: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = ClientRequest::post_json(url, body.to_string().into_bytes(), DEADLINE);
    for (k, v) in headers {
        request = request.header(k, v);
    }
    let response = HttpClient::tcp().send(request).unwrap();
    let body = if response.body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&response.body).unwrap()
    };
    (response.status, body)
}

fn get(url: &str) -> (u16, Value) {
    let response = HttpClient::tcp()
        .send(ClientRequest::get(url, DEADLINE))
        .unwrap();
    (
        response.status,
        serde_json::from_slice(&response.body).unwrap(),
    )
}

fn send_v03(text: &str, context: &str, meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {"message": {
        "kind": "message", "role": "user", "messageId": ddwire::ids::new_uuid7(),
        "contextId": context, "parts": [{"kind": "text", "text": text}], "metadata": meta}}})
}

fn spans_of(setup: &Setup, session: &str) -> Vec<Value> {
    let text =
        std::fs::read_to_string(setup.traces.join(format!("{session}.jsonl"))).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The session's spans once at least `n` are written: a stream's hop ends on its own thread
/// just after its last event is passed on.
fn spans_at_least(setup: &Setup, session: &str, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let spans = spans_of(setup, session);
        if spans.len() >= n || std::time::Instant::now() > deadline {
            return spans;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"].get(key)
}

/// The error's code and class: `data.class` (v0.3), or the ErrorInfo's `metadata.class` (1.0).
fn error_class(reply: &Value) -> (i64, String) {
    let error = &reply["error"];
    let class = error["data"]["class"]
        .as_str()
        .or_else(|| error["data"][0]["metadata"]["class"].as_str())
        .unwrap_or_default();
    (
        error["code"].as_i64().unwrap_or_default(),
        class.to_string(),
    )
}

/// `DELETE url` over a raw connection (the crate's client sends GET and POST only).
fn delete(url: &str) -> u16 {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    write!(
        stream,
        "DELETE {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_send_goes_to_the_peer_its_metadata_names_and_each_hop_is_a_span_in_the_callers_trace() {
    let (a, b) = (echo_agent(None), echo_agent(None));
    let setup = relay_over(
        "send",
        vec![
            ("A", a.base_url(), Role::Hub),
            ("B", b.base_url(), Role::Leaf),
        ],
        Topology::Open,
        DEADLINE,
        vec![a, b],
    );
    let context = ddwire::ids::new_uuid7();
    let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let (status, reply) = post(
        &format!("{}/a2a", setup.url()),
        &send_v03(
            "hi B",
            &context,
            json!({"agent.id": "A", "agent.target": "B"}),
        ),
        &[("traceparent", caller)],
    );
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["result"]["status"]["state"], "completed", "{reply}");
    assert_eq!(reply["result"]["contextId"], context.as_str());

    let spans = spans_of(&setup, &context);
    assert_eq!(spans.len(), 2, "{spans:?}");
    let server = spans.iter().find(|s| s["name"] == "a2a.task").unwrap();
    let client = spans
        .iter()
        .find(|s| s["name"] == "a2a.relay.forward")
        .unwrap();
    let trace_id = server["context"]["trace_id"].as_str().unwrap();
    assert!(
        trace_id.contains("4bf92f3577b34da6a3ce929d0e0e4736"),
        "{server}"
    );
    assert!(
        server["parent_id"]
            .as_str()
            .unwrap()
            .contains("00f067aa0ba902b7")
    );
    assert_eq!(server["kind"], "SpanKind.SERVER");
    assert_eq!(client["kind"], "SpanKind.CLIENT");
    assert_eq!(client["parent_id"], server["context"]["span_id"]);
    for span in [server, client] {
        assert_eq!(attr(span, "session.id").unwrap(), context.as_str());
    }
    assert_eq!(attr(server, "user.id").unwrap(), "A");
    assert_eq!(attr(server, "a2a.peer.id").unwrap(), "B");
    assert_eq!(attr(server, "a2a.task.state").unwrap(), "completed");
    let change = &server["events"][0];
    assert_eq!(change["name"], "a2a.task.state_change");
    assert_eq!(change["attributes"]["to"], "completed");
}

#[test]
fn tasks_get_and_cancel_go_to_the_peer_that_owns_the_task() {
    let (a, b) = (echo_agent(None), echo_agent(Some(Duration::from_secs(30))));
    let setup = relay_over(
        "owner",
        vec![
            ("A", a.base_url(), Role::Leaf),
            ("B", b.base_url(), Role::Leaf),
        ],
        Topology::Open,
        DEADLINE,
        vec![a, b],
    );
    let context = ddwire::ids::new_uuid7();
    let mut send = send_v03("slow", &context, json!({"agent.target": "B"}));
    send["params"]["configuration"] = json!({"blocking": false});
    let (_, reply) = post(&format!("{}/a2a", setup.url()), &send, &[]);
    let task_id = reply["result"]["id"].as_str().expect("a task").to_string();

    // No target in either call: the relay remembers that B answered for the task.
    let get =
        json!({"jsonrpc": "2.0", "id": "g", "method": "tasks/get", "params": {"id": task_id}});
    let (_, got) = post(&format!("{}/a2a", setup.url()), &get, &[]);
    assert_eq!(got["result"]["id"], task_id.as_str(), "{got}");
    let cancel =
        json!({"jsonrpc": "2.0", "id": "c", "method": "tasks/cancel", "params": {"id": task_id}});
    let (_, canceled) = post(&format!("{}/a2a", setup.url()), &cancel, &[]);
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );

    let spans = spans_of(&setup, &context);
    let cancel_span = spans
        .iter()
        .find(|s| s["name"] == "a2a.task.cancel")
        .unwrap();
    assert_eq!(attr(cancel_span, "a2a.peer.id").unwrap(), "B");
    let change = &cancel_span["events"][0]["attributes"];
    assert_eq!(change["to"], "canceled", "{cancel_span}");
    assert!(change["from"].is_string(), "{cancel_span}");

    // A task no peer is known to own is refused, naming why.
    let get = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nobody's"}});
    let (_, reply) = post(
        &format!("{}/a2a", setup.url()),
        &get,
        &[("A2A-Version", "1.0")],
    );
    assert_eq!(
        error_class(&reply),
        (-32015, "unknown_peer".into()),
        "{reply}"
    );
}

#[test]
fn the_1_0_binding_is_forwarded_by_path_and_a_peers_own_error_is_passed_on_as_sent() {
    let a = echo_agent(None);
    let setup = relay_over(
        "v10",
        vec![("A", a.base_url(), Role::Leaf)],
        Topology::Open,
        DEADLINE,
        vec![a],
    );
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "role": "ROLE_USER", "messageId": "m-1", "contextId": "ctx-v10",
        "parts": [{"text": "hello"}]}}});
    let (_, reply) = post(
        &format!("{}/peers/A/a2a", setup.url()),
        &send,
        &[("A2A-Version", "1.0")],
    );
    assert_eq!(
        reply["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{reply}"
    );
    let spans = spans_of(&setup, "ctx-v10");
    assert_eq!(attr(&spans[1], "a2a.binding").unwrap(), "1.0");

    let cancel = json!({"jsonrpc": "2.0", "id": 2, "method": "CancelTask",
                        "params": {"id": reply["result"]["task"]["id"]}});
    let (_, reply) = post(
        &format!("{}/a2a", setup.url()),
        &cancel,
        &[("A2A-Version", "1.0")],
    );
    // A finished task cannot be canceled: the peer's own -32002, untouched.
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
}

/// An event stream answering the call `id` as a v0.3 agent writes one: the task, working, an
/// artifact, completed (final). `cut` stops after two events; `garbage` sends a non-JSON event
/// second. The body ends when the connection closes.
fn sse_reply(mode: &str, id: &Value) -> String {
    let frame = |result: Value| {
        format!(
            "data: {}\n\n",
            json!({"jsonrpc": "2.0", "id": id, "result": result})
        )
    };
    // Each peer its own task id: a relay refuses a peer answering for another peer's task.
    let task = if mode == "ok" {
        "st-1".to_string()
    } else {
        format!("st-1-{mode}")
    };
    let status = |state: &str, last: bool| {
        json!({"kind": "status-update", "taskId": task, "contextId": "ctx-stream",
               "status": {"state": state}, "final": last})
    };
    let mut events = vec![
        frame(
            json!({"kind": "task", "id": task, "contextId": "ctx-stream", "status": {"state": "submitted"}}),
        ),
        if mode == "garbage" {
            "data: {not json\n\n".to_string()
        } else {
            frame(status("working", false))
        },
        ": keep-alive\n\n".to_string(),
        frame(
            json!({"kind": "artifact-update", "taskId": task, "contextId": "ctx-stream",
                     "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "done"}]}}),
        ),
        frame(status("completed", true)),
    ];
    if mode == "cut" {
        events.truncate(2);
    }
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{}",
        events.concat()
    )
}

/// A raw TCP peer: a valid v0.3 card on GET, and `post` for every POST.
fn raw_peer(post: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let card = json!({"name": "raw", "url": format!("{base}/a2a"), "preferredTransport": "JSONRPC",
                      "protocolVersion": "0.3.0", "version": "1", "description": "raw",
                      "capabilities": {}, "skills": [], "defaultInputModes": [],
                      "defaultOutputModes": []})
    .to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let card = card.clone();
            std::thread::spawn(move || {
                stream.set_read_timeout(Some(DEADLINE)).unwrap();
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let Ok(n) = stream.read(&mut chunk) else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while buf.len() < head_end + length {
                    let Ok(n) = stream.read(&mut chunk) else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let answer = |status: &str, body: &str| {
                    format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let call_id = serde_json::from_slice::<Value>(&buf[head_end..])
                    .map(|v| v["id"].clone())
                    .unwrap_or(Value::Null);
                let reply = if head.starts_with("get ") {
                    answer("200 OK", &card)
                } else if post == "sse-slow" {
                    // One event, then nothing for 5 s.
                    let mut first = sse_reply("ok", &call_id);
                    // The head and the first event: up to the end of its JSON and the blank line.
                    if let Some(end) = first.find("}\n\n") {
                        first.truncate(end + 3);
                    }
                    let _ = stream.write_all(first.as_bytes());
                    std::thread::sleep(Duration::from_secs(5));
                    return;
                } else if let Some(mode) = post.strip_prefix("sse-") {
                    sse_reply(mode, &call_id)
                } else {
                    match post {
                        "404-json" => answer(
                            "404 Not Found",
                            r#"{"jsonrpc":"2.0","id":null,"result":{"id":"made-up","status":{"state":"completed"}}}"#,
                        ),
                        "garbage" => "this is not HTTP at all\r\n\r\n".to_string(),
                        "not-a-task" => answer(
                            "200 OK",
                            &json!({"jsonrpc": "2.0", "id": call_id, "result": "ok"}).to_string(),
                        ),
                        "hang" => {
                            std::thread::sleep(Duration::from_secs(5));
                            return;
                        }
                        // "cut": half a head, then the connection closes.
                        _ => "HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\n{\"jsonrpc\"".into(),
                    }
                };
                let _ = stream.write_all(reply.as_bytes());
            });
        }
    });
    base
}

#[test]
fn each_way_a_peer_can_fail_is_its_own_class_and_never_a_made_up_success() {
    let cases = [
        ("404-json", -32011, "peer_404"),
        ("garbage", -32014, "peer_invalid_reply"),
        ("not-a-task", -32014, "peer_invalid_reply"),
        ("hang", -32012, "peer_timeout"),
        ("cut", -32013, "peer_disconnect"),
    ];
    let mut peers: Vec<(&str, String, Role)> = cases
        .iter()
        .map(|(kind, _, _)| (*kind, raw_peer(kind), Role::Leaf))
        .collect();
    // Nothing listens here: the port of a listener dropped at once.
    let gone = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    peers.push(("gone", format!("http://{gone}"), Role::Leaf));
    let setup = relay_over(
        "fail",
        peers,
        Topology::Open,
        Duration::from_secs(1),
        vec![],
    );
    let mut all = cases.to_vec();
    all.push(("gone", -32013, "peer_disconnect"));
    for (peer, code, class) in all {
        let context = format!("ctx-{peer}");
        let (status, reply) = post(
            &format!("{}/a2a", setup.url()),
            &send_v03("x", &context, json!({"agent.target": peer})),
            &[],
        );
        assert_eq!(status, 200);
        assert!(reply.get("result").is_none(), "{peer}: {reply}");
        assert_eq!(
            error_class(&reply),
            (code, class.to_string()),
            "{peer}: {reply}"
        );
        assert_eq!(reply["error"]["data"]["peer"], peer);
        let spans = spans_of(&setup, &context);
        let server = spans.iter().find(|s| s["name"] == "a2a.task").unwrap();
        assert_eq!(attr(server, "a2a.relay.failure_class").unwrap(), class);
        assert_eq!(server["status"]["status_code"], "ERROR", "{server}");
    }
    let (_, health) = get(&format!("{}/healthz", setup.url()));
    assert_eq!(health["failed"]["peer_timeout"], 1, "{health}");
}

#[test]
fn under_a_star_a_leaf_cannot_reach_another_leaf_by_any_method_streams_included() {
    let (hub, w1, w2) = (echo_agent(None), echo_agent(None), echo_agent(None));
    let setup = relay_over(
        "star",
        vec![
            ("hub", hub.base_url(), Role::Hub),
            ("w1", w1.base_url(), Role::Leaf),
            ("w2", w2.base_url(), Role::Leaf),
        ],
        Topology::Star,
        DEADLINE,
        vec![hub, w1, w2],
    );
    let url = format!("{}/a2a", setup.url());
    let (_, ok) = post(
        &url,
        &send_v03("up", "c1", json!({"agent.id": "w1", "agent.target": "hub"})),
        &[],
    );
    assert_eq!(ok["result"]["status"]["state"], "completed", "{ok}");
    let (_, ok) = post(
        &url,
        &send_v03(
            "down",
            "c1",
            json!({"agent.id": "hub", "agent.target": "w2"}),
        ),
        &[],
    );
    assert!(ok.get("result").is_some(), "{ok}");

    let mut stream = send_v03(
        "sideways",
        "c2",
        json!({"agent.id": "w1", "agent.target": "w2"}),
    );
    let send = stream.clone();
    stream["method"] = json!("message/stream");
    let get = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get",
                     "params": {"id": "t", "metadata": {"agent.id": "w1", "agent.target": "w2"}}});
    for call in [send, stream, get] {
        let (_, refused) = post(&url, &call, &[]);
        assert_eq!(
            error_class(&refused),
            (-32010, "topology_violation".into()),
            "{refused}"
        );
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("\"w1\" (leaf)")
        );
    }
    // The path names the target just as well: the gate still holds.
    let (_, refused) = post(
        &format!("{}/peers/w2/a2a", setup.url()),
        &send_v03("sideways", "c2", json!({"agent.id": "w1"})),
        &[],
    );
    assert_eq!(refused["error"]["code"], -32010);
}

#[test]
fn a_batch_and_a_call_without_a_target_are_refused_saying_why() {
    let a = echo_agent(None);
    let setup = relay_over(
        "refuse",
        vec![("A", a.base_url(), Role::Leaf)],
        Topology::Open,
        DEADLINE,
        vec![a],
    );
    let url = format!("{}/a2a", setup.url());
    let (_, reply) = post(&url, &send_v03("s", "c", json!({})), &[]);
    assert_eq!(error_class(&reply), (-32015, "unknown_peer".into()));
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("agent.target")
    );
    let (_, reply) = post(&url, &send_v03("s", "c", json!({"agent.target": "Z"})), &[]);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("known: [A]"),
        "{reply}"
    );
    let (_, reply) = post(&url, &json!([send_v03("s", "c", json!({}))]), &[]);
    assert_eq!(reply["error"]["code"], -32600);
    let (_, reply) = post(
        &url,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "nope"}),
        &[],
    );
    assert_eq!(reply["error"]["code"], -32601);
}

#[test]
fn peers_are_added_listed_with_card_and_health_and_removed_and_health_follows_them() {
    let setup = relay_over("peers", vec![], Topology::Open, DEADLINE, vec![]);
    let base = setup.url();
    let (status, health) = get(&format!("{base}/healthz"));
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));
    assert_eq!(get(&format!("{base}/livez")).0, 200);

    let agent = echo_agent(None);
    let (status, added) = post(
        &format!("{base}/peers"),
        &json!({"id": "E", "url": agent.base_url(), "role": "hub"}),
        &[],
    );
    assert_eq!(status, 201, "{added}");
    assert_eq!(added["health"]["state"], "up");
    let (_, listed) = get(&format!("{base}/peers"));
    let peer = &listed["peers"][0];
    assert_eq!(
        (peer["id"].as_str(), peer["role"].as_str()),
        (Some("E"), Some("hub"))
    );
    assert_eq!(peer["card"]["name"], "echo.wire");
    // The card served through the relay points at the relay.
    let (_, card) = get(&format!("{base}/peers/E/.well-known/agent-card.json"));
    let via = format!("{base}/peers/E/a2a");
    assert!(card.to_string().contains(&via), "{card}");
    assert!(!card.to_string().contains(&agent.base_url()), "{card}");

    let (status, refused) = post(
        &format!("{base}/peers"),
        &json!({"id": "../x", "url": "http://a"}),
        &[],
    );
    assert_eq!(status, 400, "{refused}");

    drop(agent);
    // Health is checked in the background, never by a request: run one check now.
    setup.relay.check_peers();
    let (status, health) = get(&format!("{base}/healthz"));
    assert_eq!(
        (status, health["status"].as_str()),
        (503, Some("unavailable")),
        "{health}"
    );
    assert_eq!(delete(&format!("{base}/peers/E")), 200);
    assert_eq!(delete(&format!("{base}/peers/E")), 404);
    assert_eq!(get(&format!("{base}/peers")).1["peers"], json!([]));
    assert!(setup.relay.peer_ids().is_empty());
}

/// POST a stream call and read the whole event stream (the relay ends it): each event's JSON.
fn stream_events(url: &str, body: &Value) -> (String, Vec<Value>, String) {
    let request = ClientRequest::post_json(url, body.to_string().into_bytes(), DEADLINE)
        .header("Accept", "text/event-stream");
    let response = HttpClient::tcp().send(request).unwrap();
    let content_type = response
        .header("content-type")
        .unwrap_or_default()
        .to_string();
    let text = String::from_utf8(response.body).unwrap();
    let events = text
        .split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    (content_type, events, text)
}

#[test]
fn a_peers_stream_is_passed_on_event_by_event_each_a_span_event_with_its_sequence_number() {
    let peers = vec![
        ("ok", raw_peer("sse-ok"), Role::Leaf),
        ("cut", raw_peer("sse-cut"), Role::Leaf),
        ("garbage", raw_peer("sse-garbage"), Role::Leaf),
    ];
    let setup = relay_over(
        "stream",
        peers,
        Topology::Open,
        Duration::from_secs(5),
        vec![],
    );
    let url = format!("{}/a2a", setup.url());
    let mut call = send_v03("stream me", "ctx-stream", json!({"agent.target": "ok"}));
    call["method"] = json!("message/stream");
    call["id"] = json!("s-1");
    let (content_type, events, text) = stream_events(&url, &call);
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    assert!(
        text.contains(": keep-alive"),
        "the keep-alive comment is passed on: {text}"
    );
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["result"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["task", "status-update", "artifact-update", "status-update"]
    );
    assert!(
        events.iter().all(|e| e["id"] == "s-1"),
        "each event answers the caller's id"
    );

    let spans = spans_at_least(&setup, "ctx-stream", 2);
    let server = spans.iter().find(|s| s["name"] == "a2a.task").unwrap();
    let chunks: Vec<&Value> = server["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "a2a.message.stream_chunk")
        .collect();
    let seqs: Vec<i64> = chunks
        .iter()
        .map(|e| e["attributes"]["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [0, 1, 2, 3]);
    assert_eq!(chunks[3]["attributes"]["final"], true);
    let states: Vec<&str> = server["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "a2a.task.state_change")
        .map(|e| e["attributes"]["to"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["submitted", "working", "completed"]);
    assert_eq!(attr(server, "a2a.relay.mode").unwrap(), "forward-stream");
    // A streamed hop's CLIENT span records what a blocking hop's does.
    let client = spans
        .iter()
        .find(|s| s["kind"].as_str().is_some_and(|k| k.ends_with("CLIENT")))
        .unwrap_or_else(|| panic!("no CLIENT span: {spans:?}"));
    assert_eq!(
        attr(client, "session.id").unwrap(),
        "ctx-stream",
        "{client}"
    );
    assert_eq!(
        client["attributes"]["http.response.status_code"], 200,
        "{client}"
    );

    // The task's owner is known from the stream: a get with no target goes to the peer.
    // A stream cut short, or an event that is not JSON, ends with one error event.
    for (peer, class, code) in [
        ("cut", "peer_disconnect", -32013),
        ("garbage", "peer_invalid_reply", -32014),
    ] {
        call["params"]["message"]["metadata"] = json!({"agent.target": peer});
        let (_, events, _) = stream_events(&url, &call);
        let last = events.last().unwrap();
        assert_eq!(last["id"], "s-1");
        assert_eq!(
            error_class(last),
            (code, class.to_string()),
            "{peer}: {events:?}"
        );
        assert!(
            events
                .iter()
                .rev()
                .skip(1)
                .all(|e| e.get("result").is_some()),
            "{peer}: {events:?}"
        );
    }
}

#[test]
fn a_stream_to_a_peer_that_does_not_stream_gets_the_peers_own_error() {
    let a = echo_agent(None);
    let setup = relay_over(
        "nostream",
        vec![("A", a.base_url(), Role::Leaf)],
        Topology::Open,
        DEADLINE,
        vec![a],
    );
    let mut call = send_v03("s", "c", json!({"agent.target": "A"}));
    call["method"] = json!("message/stream");
    let (_, reply) = post(&format!("{}/a2a", setup.url()), &call, &[]);
    assert!(reply.get("result").is_none(), "{reply}");
    assert!(reply["error"]["code"].is_i64(), "{reply}");
    let spans = spans_of(&setup, "c");
    let server = spans.iter().find(|s| s["name"] == "a2a.task").unwrap();
    assert_eq!(
        attr(server, "a2a.relay.failure_class").unwrap(),
        "peer_jsonrpc_error"
    );
}

/// The streamed hop ends its CLIENT span as the blocking hop does: a peer's JSON-RPC error
/// is named on it by its code, whichever way the call went.
#[test]
fn a_peers_error_code_is_on_the_client_span_of_a_streamed_hop_as_of_a_blocking_one() {
    let a = echo_agent(None);
    let setup = relay_over(
        "errcode",
        vec![("A", a.base_url(), Role::Leaf)],
        Topology::Open,
        DEADLINE,
        vec![a],
    );
    // A task the peer does not know names no session: its spans are the relay's no-session.
    for (method, session) in [("message/stream", "c-stream"), ("tasks/get", "no-session")] {
        let mut call = send_v03("s", session, json!({"agent.target": "A"}));
        call["method"] = json!(method);
        if method == "tasks/get" {
            call["params"] = json!({"id": "no-such-task"});
        }
        let (_, reply) = post(&format!("{}/peers/A/a2a", setup.url()), &call, &[]);
        let code = reply["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("{reply}"));
        let spans = spans_at_least(&setup, session, 2);
        let client = spans
            .iter()
            .find(|s| s["kind"].as_str().is_some_and(|k| k.ends_with("CLIENT")))
            .unwrap_or_else(|| panic!("{method}: no CLIENT span: {spans:?}"));
        assert_eq!(
            attr(client, "rpc.jsonrpc.error_code"),
            Some(&json!(code)),
            "{method}: {client}"
        );
        assert_eq!(
            attr(client, "a2a.relay.failure_class").unwrap(),
            "peer_jsonrpc_error",
            "{method}: {client}"
        );
    }
}

#[test]
fn a_hops_spans_are_exported_over_otlp_through_the_exporter() {
    use ddwire::trace::otlp::Encoding;
    use ddwire::wire::otlp::{Exporter, ExporterOptions, OtlpConfig};
    let (got, bodies) = crossbeam_channel::unbounded::<Vec<u8>>();
    let receiver = http::server::serve(
        "127.0.0.1:0",
        Arc::new(move |request: http::Request| {
            let _ = got.send(request.body);
            http::Response::json(200, &json!({}))
        }),
        Limits::DEFAULT,
    )
    .unwrap();
    let config = OtlpConfig::new(
        &format!("{}/v1/traces", receiver.base_url()),
        Encoding::Json,
    )
    .unwrap();
    let exporter =
        Exporter::start(config, HttpClient::tcp(), ExporterOptions::default(), None).unwrap();
    let a = echo_agent(None);
    let mut config = RelayConfig::new(
        vec![PeerSpec::new("A", &a.base_url(), Role::Leaf).unwrap()],
        "http://placeholder",
    );
    config.exporter = Some(exporter);
    config.egress = Egress::allowing(["127.0.0.1/32"]).unwrap();
    let relay = Arc::new(Relay::new(config).unwrap());
    let server = http::server::serve(
        "127.0.0.1:0",
        relay::handler(relay.clone()),
        Limits::DEFAULT,
    )
    .unwrap();
    let (_, reply) = post(
        &format!("{}/a2a", server.base_url()),
        &send_v03("otlp", "ctx-otlp", json!({"agent.target": "A"})),
        &[],
    );
    assert_eq!(reply["result"]["status"]["state"], "completed", "{reply}");
    assert!(relay.exporter().unwrap().flush(DEADLINE));
    let body = bodies.recv_timeout(DEADLINE).expect("an OTLP request");
    let text = String::from_utf8(body).unwrap();
    for expected in ["a2a.task", "a2a.relay.forward", "ctx-otlp", "session.id"] {
        assert!(text.contains(expected), "{expected} not in {text}");
    }
}

/// A ddwire echo agent whose card offers only the `binding` ("1.0" or "0.3") JSON-RPC
/// interface (the agent itself answers both, so what the relay sent is what the card allowed).
fn echo_offering_only(binding: &'static str) -> http::server::Server {
    let listener_addr = Arc::new(std::sync::OnceLock::<String>::new());
    let base = listener_addr.clone();
    let agent = ddwire::agent::server::handler(Arc::new(Echo::new()), "http://placeholder");
    let handler: http::Handler = Arc::new(move |request: http::Request| {
        if request.method == "GET" && request.path.starts_with("/.well-known/") {
            let url = format!("{}/a2a", base.get().unwrap());
            let card = match binding {
                "1.0" => json!({"name": "echo-1.0-only", "supportedInterfaces": [
                    {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}),
                _ => json!({"name": "echo-0.3-only", "url": url, "preferredTransport": "JSONRPC",
                            "protocolVersion": "0.3.0"}),
            };
            return http::Response::json(200, &card);
        }
        agent(request)
    });
    let server = http::server::serve("127.0.0.1:0", handler, Limits::DEFAULT).unwrap();
    listener_addr.set(server.base_url()).unwrap();
    server
}

#[test]
fn a_call_to_a_peer_of_the_other_binding_is_translated_both_ways() {
    let (only10, only03) = (echo_offering_only("1.0"), echo_offering_only("0.3"));
    let setup = relay_over(
        "translate",
        vec![
            ("v10", only10.base_url(), Role::Leaf),
            ("v03", only03.base_url(), Role::Leaf),
        ],
        Topology::Open,
        DEADLINE,
        vec![only10, only03],
    );
    let url = format!("{}/a2a", setup.url());
    // A v0.3 caller, a 1.0-only peer: the task comes back in v0.3.
    let (_, reply) = post(
        &url,
        &send_v03("hi", "ctx-tr", json!({"agent.target": "v10"})),
        &[],
    );
    assert_eq!(reply["result"]["kind"], "task", "{reply}");
    assert_eq!(reply["result"]["status"]["state"], "completed", "{reply}");
    let task_id = reply["result"]["id"].as_str().unwrap().to_string();
    let spans = spans_of(&setup, "ctx-tr");
    let client = spans
        .iter()
        .find(|s| s["name"] == "a2a.relay.forward")
        .unwrap();
    assert_eq!(attr(client, "a2a.binding").unwrap(), "1.0");
    assert_eq!(attr(client, "rpc.method").unwrap(), "SendMessage");
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task_id}});
    let (_, got) = post(&url, &get, &[]);
    assert_eq!(got["result"]["status"]["state"], "completed", "{got}");

    // A 1.0 caller, a 0.3-only peer: the task comes back in 1.0.
    let send = json!({"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {
        "role": "ROLE_USER", "messageId": "m-tr", "contextId": "ctx-tr10",
        "parts": [{"text": "hello"}], "metadata": {"agent.target": "v03"}}}});
    let (_, reply) = post(&url, &send, &[("A2A-Version", "1.0")]);
    assert_eq!(
        reply["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{reply}"
    );
    let spans = spans_of(&setup, "ctx-tr10");
    let client = spans
        .iter()
        .find(|s| s["name"] == "a2a.relay.forward")
        .unwrap();
    assert_eq!(attr(client, "a2a.binding").unwrap(), "0.3");

    // Params that are no A2A send are refused as such, not forwarded.
    let bad = json!({"jsonrpc": "2.0", "id": 4, "method": "message/send",
                     "params": {"message": {"parts": "nope"}, "metadata": {"agent.target": "v10"}}});
    let (_, reply) = post(&url, &bad, &[]);
    assert_eq!(
        error_class(&reply),
        (-32602, "invalid_params".into()),
        "{reply}"
    );
}

#[test]
fn the_relay_command_refuses_a_bad_peers_file_naming_the_file_and_the_entry() {
    let dir = temp_dir("cli");
    let file = dir.join("peers.json");
    std::fs::write(&file, r#"{"peers": [{"id": "a", "url": "ftp://x"}]}"#).unwrap();
    let out = std::process::Command::new(crate::internal_tests::ddwire_exe())
        .args(["relay", "--port", "0", "--peers"])
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("peers.json") && err.contains("peers[0]") && err.contains("http://"),
        "{err}"
    );
}

#[test]
fn a_stream_open_when_the_drain_is_cut_ends_with_an_error_event() {
    let traces = temp_dir("drain");
    let drain = ddwire::wire::http::drain::Drain::new();
    let mut config = RelayConfig::new(
        vec![PeerSpec::new("slow", &raw_peer("sse-slow"), Role::Leaf).unwrap()],
        "http://placeholder",
    );
    config.drain = Some(drain.clone());
    config.traces_dir = Some(traces.clone());
    // The peers here are loopback servers, which a relay refuses unless told otherwise.
    config.egress = Egress::allowing(["127.0.0.1/32"]).unwrap();
    config.allow_registration = true;
    let relay = Arc::new(Relay::new(config).unwrap());
    let server = http::server::serve(
        "127.0.0.1:0",
        relay::handler(relay.clone()),
        Limits::DEFAULT,
    )
    .unwrap();
    let mut call = send_v03("s", "ctx-drain", json!({"agent.target": "slow"}));
    call["method"] = json!("message/stream");
    let url = format!("{}/a2a", server.base_url());
    let reader = std::thread::spawn(move || stream_events(&url, &call));
    std::thread::sleep(Duration::from_millis(500));
    drain.cut();
    let (_, events, text) = reader.join().unwrap();
    let _ = std::fs::remove_dir_all(&traces);
    assert_eq!(events.len(), 2, "{text}");
    assert_eq!(events[0]["result"]["kind"], "task");
    assert_eq!(events[1]["error"]["code"], -32000, "{text}");
}

/// The relay answers for the protocol as a peer would: a version it cannot carry for the
/// method is -32009 from the relay itself, on every route, before anything is forwarded.
#[test]
fn the_relay_refuses_a_version_it_cannot_carry_as_a_peer_would() {
    let setup = relay_over(
        "version",
        vec![("A", raw_peer("a"), Role::Leaf)],
        Topology::Open,
        Duration::from_secs(5),
        vec![],
    );
    let get = json!({"jsonrpc": "2.0", "id": 4, "method": "GetTask", "params": {"id": "t"}});
    for url in [
        format!("{}/a2a", setup.url()),
        format!("{}/peers/A/a2a", setup.url()),
    ] {
        for version in [Some("9.9"), Some("0.3"), None] {
            let headers: Vec<(&str, &str)> = version.iter().map(|v| ("A2A-Version", *v)).collect();
            let (_, reply) = post(&url, &get, &headers);
            assert_eq!(reply["error"]["code"], -32009, "{url} {version:?}: {reply}");
        }
    }
    let send = json!({"jsonrpc": "2.0", "id": 5, "method": "message/send", "params": {}});
    let (_, reply) = post(
        &format!("{}/a2a", setup.url()),
        &send,
        &[("A2A-Version", "1.0")],
    );
    assert_eq!(reply["error"]["code"], -32009, "{reply}");
}

/// The relay's root serves a card of its own, a skill per peer, so an A2A client that reads a
/// card first (`ddwire send RELAY --metadata '{"agent.target": "echo"}'`) can call through it.
#[test]
fn the_relays_root_card_routes_by_agent_target_to_any_peer() {
    let agent = echo_agent(None);
    let setup = relay_over(
        "root-card",
        vec![("echo", agent.base_url(), Role::Leaf)],
        Topology::Open,
        Duration::from_secs(5),
        vec![agent],
    );
    let client = ddwire::wire::a2a::client::A2aClient::default();
    let card = client.fetch_card(&setup.url(), DEADLINE).unwrap();
    assert_eq!(card["name"], "ddwire relay", "{card}");
    assert_eq!(card["skills"][0]["id"], "echo", "{card}");
    let target = ddwire::wire::a2a::client::Target::from_card(&card).unwrap();
    assert!(target.url.ends_with("/a2a"), "{}", target.url);
    let mut message = ddwire::wire::a2a::model::Message::new(
        ddwire::wire::a2a::model::Role::User,
        vec![ddwire::wire::a2a::model::Part::text("through the root")],
    );
    let mut metadata = serde_json::Map::new();
    metadata.insert("agent.target".into(), json!("echo"));
    message.metadata = Some(metadata);
    let task = client
        .send_for_task(&target, message, &[], DEADLINE)
        .expect("the relay forwards by agent.target");
    assert_eq!(
        task.status.state,
        ddwire::wire::a2a::model::TaskState::Completed,
        "{task:?}"
    );
}
