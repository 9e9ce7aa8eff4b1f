//! The request log and the wire log, over loopback TCP: a harness and its agents (hello.world
//! and the delegating director.route) each on a real socket, as `ddwire serve` and
//! `ddwire agent` run them, with one wire log for the whole process.

use super::common;

use common::{TempDir, permissive_profile};
use ddwire::agent::Agent;
use ddwire::agent::builtin::{Director, Hello};
use ddwire::agent::server as agent_server;
use ddwire::harness::conductor::Conductor;
use ddwire::harness::identity::{Authenticator, demo_principal};
use ddwire::harness::policy::Profile;
use ddwire::harness::registry::{Registry, RemoteAgent};
use ddwire::harness::server::{Harness, handler};
use ddwire::harness::store::RunStore;
use ddwire::wire::a2a::client::{A2aClient, Target};
use ddwire::wire::a2a::model::{Message, Part, Role, TaskState};
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::log::{Format, Level, RequestLog};
use ddwire::wire::http::server::{self, Server};
use ddwire::wire::http::{Handler, Limits, Response};
use ddwire::wire::wirelog::{self, WireLog};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

/// A writer the test reads back: where the request log's lines go.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sink {
    fn lines(&self) -> Vec<Value> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON log line"))
            .collect()
    }
}

/// A harness with hello.world and director.route, every server and client writing to `wire`,
/// the harness's request log (JSON, debug) to `log`.
struct Stack {
    url: String,
    client: A2aClient,
    _servers: Vec<Server>,
    harness: Server,
}

fn stack(wire: &WireLog, log: &Sink, runs: &Path) -> Stack {
    let client = A2aClient::new(HttpClient::tcp_logged(wire.clone()));
    let agents: Vec<Arc<dyn Agent>> = vec![Arc::new(Hello::new()), Arc::new(Director::new())];
    let profile = permissive_profile(&agents);
    let mut registry = Registry::default();
    let mut servers = Vec::new();
    for agent in agents {
        let bound = server::bind("127.0.0.1:0", Limits::DEFAULT)
            .unwrap()
            .with_wire_log(wire.clone());
        let s = agent_server::serve_on(bound, agent, None, client.clone(), None).unwrap();
        registry
            .add(RemoteAgent::from_url(&client, &s.base_url(), T).unwrap())
            .unwrap();
        servers.push(s);
    }
    let conductor = Conductor::new(
        registry,
        Profile::from_bytes(profile.as_bytes(), "profile.json").unwrap(),
        RunStore::open(runs).unwrap(),
        client.clone(),
    );
    let bound = server::bind("127.0.0.1:0", Limits::DEFAULT)
        .unwrap()
        .with_wire_log(wire.clone())
        .with_request_log(Arc::new(RequestLog::to(
            Format::Json,
            Level::Debug,
            Box::new(log.clone()),
        )));
    let url = bound.default_public_url();
    let harness = Arc::new(Harness::new(
        conductor,
        Some(Authenticator::Operator(demo_principal())),
        &url,
    ));
    let harness = bound.serve(handler(harness)).unwrap();
    Stack {
        url,
        client,
        _servers: servers,
        harness,
    }
}

fn invoke(stack: &Stack, agent: &str, bearer: &str) -> Value {
    let card = stack.client.fetch_card(&stack.url, T).unwrap();
    let target = Target::from_card(&card).unwrap();
    let request = json!({"agent_id": agent,
        "input": {"schema_class": "Message", "message_text": "Say hello for me"}});
    let auth = format!("Bearer {bearer}");
    let task = stack
        .client
        .send_for_task(
            &target,
            Message::new(Role::User, vec![Part::data(request)]),
            &[("Authorization", auth.as_str())],
            T,
        )
        .unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    let Part::Data { data, .. } = &task.artifacts[0].parts[0] else {
        panic!("an envelope part")
    };
    data.clone()
}

/// Every line of a wire log, parsed.
fn read_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

/// A message's bytes, head and body, decoded as the log encodes them.
fn bytes_of(m: &Value) -> Vec<u8> {
    let part = |k: &str| {
        let text = m[k].as_str().unwrap();
        match m[format!("{k}_encoding")].as_str().unwrap() {
            "utf-8" => text.as_bytes().to_vec(),
            "base64" => base64_decode(text),
            other => panic!("unknown encoding {other}"),
        }
    };
    let mut out = part("head");
    out.extend(part("body"));
    out
}

fn base64_decode(text: &str) -> Vec<u8> {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let digits: Vec<u32> = text
        .bytes()
        .filter(|&b| b != b'=')
        .map(|b| B64.iter().position(|&x| x == b).unwrap() as u32)
        .collect();
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, d)| n | d << (18 - 6 * i));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

/// Every `"dd.delegation_token"` member's value in a JSON document.
fn tokens(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "dd.delegation_token" {
                    out.push(v.as_str().unwrap_or("").to_string());
                }
                tokens(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| tokens(v, out)),
        _ => {}
    }
}

#[test]
fn every_message_in_and_out_is_logged_byte_exact_with_credentials_and_tokens_masked() {
    let dir = TempDir::new("wire-log");
    let path = dir.path().join("wire.jsonl");
    let wire = WireLog::create(&path).unwrap();
    let log = Sink::default();
    let stack = stack(&wire, &log, &dir.path().join("runs"));
    let envelope = invoke(&stack, "director.route", "caller-secret-0123");
    assert_eq!(envelope["outcome"]["status"], "succeeded", "{envelope}");
    assert_eq!(envelope["delegations"].as_array().unwrap().len(), 1);

    // A request of our own, chunked, straight onto the socket: the server logs it as sent.
    let sent: &[u8] = b"POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer raw-secret\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    let mut raw = TcpStream::connect(stack.harness.local_addr()).unwrap();
    raw.set_read_timeout(Some(T)).unwrap();
    raw.write_all(sent).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = raw.read(&mut buf).unwrap();
        assert!(n > 0);
        answer.extend_from_slice(&buf[..n]);
    }
    drop(raw);
    std::thread::sleep(Duration::from_millis(100));
    drop(stack);
    let stats = wire.close(T);
    assert_eq!((stats.dropped, stats.failed), (0, 0));

    let lines = read_log(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    for secret in ["caller-secret-0123", "raw-secret"] {
        assert!(!text.contains(secret), "{secret} reached the wire log");
    }
    assert_eq!(lines.last().unwrap()["type"], "end");
    assert_eq!(lines.last().unwrap()["written"], stats.written);
    let messages: Vec<&Value> = lines.iter().filter(|l| l["type"] == "message").collect();
    assert_eq!(messages.len() as u64, stats.written);

    // The raw request, byte for byte, its credentials masked in place.
    let masked = String::from_utf8_lossy(sent).replace("raw-secret", "**********");
    let ours = messages
        .iter()
        .find(|m| m["side"] == "server" && m["head"].as_str().unwrap().starts_with("POST /runs"))
        .expect("the raw request");
    assert_eq!(String::from_utf8(bytes_of(ours)).unwrap(), masked);
    assert_eq!(ours["redacted"], json!(["authorization"]));
    assert_eq!(
        ours["body"], "2\r\n{}\r\n0\r\n\r\n",
        "as framed on the wire"
    );
    let reply = messages
        .iter()
        .find(|m| {
            m["side"] == "server"
                && m["direction"] == "out"
                && m["connection"] == ours["connection"]
        })
        .expect("its answer, on the same connection");
    assert!(reply["head"].as_str().unwrap().starts_with("HTTP/1.1 404"));
    assert!(answer.starts_with(b"HTTP/1.1 404"));

    // What each client sent is what a server received, and the other way round: both
    // captures are byte-exact (the client's taken under ureq, the server's from its buffer).
    let client: Vec<&&Value> = messages.iter().filter(|m| m["side"] == "client").collect();
    assert!(
        client.len() >= 8,
        "cards, the call, the callback: {}",
        client.len()
    );
    for m in &client {
        let want = if m["direction"] == "out" { "in" } else { "out" };
        let bytes = bytes_of(m);
        assert!(
            messages
                .iter()
                .any(|s| s["side"] == "server" && s["direction"] == want && bytes_of(s) == bytes),
            "no server message matches {m}"
        );
    }

    // The grant's token travels to the director, back to the harness, and in the tasks'
    // history: masked every time, and named.
    let mut with_token = 0;
    for m in &messages {
        let body = String::from_utf8(bytes_of(m)).unwrap_or_default();
        let Some(json_start) = body.find("\r\n\r\n{") else {
            continue;
        };
        let Ok(doc) = serde_json::from_str::<Value>(&body[json_start + 4..]) else {
            continue;
        };
        let mut found = Vec::new();
        tokens(&doc, &mut found);
        if !found.is_empty() {
            with_token += 1;
            assert!(
                found
                    .iter()
                    .all(|t| !t.is_empty() && t.bytes().all(|b| b == b'*')),
                "{found:?}"
            );
            assert!(
                m["redacted"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("dd.delegation_token"))
            );
        }
    }
    assert!(
        with_token >= 4,
        "call out, call in, callback out, callback in: {with_token}"
    );
    // The caller's bearer token is masked on both sides (and the raw request's on one).
    let bearer: Vec<&str> = messages
        .iter()
        .filter(|m| {
            m["redacted"]
                .as_array()
                .unwrap()
                .contains(&json!("authorization"))
        })
        .map(|m| m["head"].as_str().unwrap())
        .collect();
    assert_eq!(bearer.len(), 3, "{bearer:?}");
    assert!(
        bearer.iter().all(|h| h
            .to_ascii_lowercase()
            .contains("authorization: bearer ****")),
        "{bearer:?}"
    );
}

#[test]
fn the_request_log_has_one_line_per_request_with_the_run_and_whom_it_acted_for() {
    let dir = TempDir::new("request-log");
    let wire = WireLog::create(dir.path().join("wire.jsonl")).unwrap();
    let log = Sink::default();
    let stack = stack(&wire, &log, &dir.path().join("runs"));
    let envelope = invoke(&stack, "hello.world", "t");
    let id = envelope["invocation_id"].as_str().unwrap();
    let http = HttpClient::tcp();
    let get = |path: &str| {
        http.send(ClientRequest::get(format!("{}{path}", stack.url), T))
            .unwrap()
            .status
    };
    assert_eq!(get(&format!("/runs/{}", &id[..20])), 200);
    assert_eq!(get("/nowhere?x=1"), 404);
    // A head larger than the server takes: refused before a request line is read.
    let mut raw = TcpStream::connect(stack.harness.local_addr()).unwrap();
    raw.set_read_timeout(Some(T)).unwrap();
    let big = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    let _ = raw.write_all(big.as_bytes());
    let mut answer = Vec::new();
    let _ = raw.read_to_end(&mut answer);
    assert!(answer.starts_with(b"HTTP/1.1 431"));
    drop(stack);

    let lines = log.lines();
    let a2a: Vec<&Value> = lines.iter().filter(|l| l["target"] == "/a2a").collect();
    assert_eq!(a2a.len(), 1, "{lines:?}");
    let call = a2a[0];
    assert_eq!(call["method"], "POST");
    assert_eq!(call["status"], 200);
    assert_eq!(call["level"], "info");
    assert_eq!(call["invocation_id"], id);
    assert_eq!(call["principal"], "urn:ddwire:demo:operator");
    assert!(call["bytes"].as_u64().unwrap() > 100);
    assert!(
        call["request_bytes"].as_u64().unwrap() > 100,
        "shown at debug"
    );
    assert!(call["user_agent"].as_str().unwrap().starts_with("ddwire/"));
    assert!(call["duration_ms"].as_f64().unwrap() > 0.0);
    assert!(call["peer"].as_str().unwrap().starts_with("127.0.0.1:"));
    let read = lines
        .iter()
        .find(|l| l["target"].as_str().unwrap().starts_with("/runs/"))
        .unwrap();
    assert_eq!(
        read["invocation_id"], id,
        "a prefix is noted as the run it names"
    );
    let missing = lines.iter().find(|l| l["status"] == 404).unwrap();
    assert_eq!(missing["target"], "/nowhere?x=1");
    assert_eq!(missing["level"], "warn");
    let refused = lines.iter().find(|l| l["status"] == 431).unwrap();
    assert_eq!(
        (&refused["method"], &refused["target"]),
        (&json!("-"), &json!("-"))
    );
    assert!(
        refused["note"].as_str().unwrap().contains("16384"),
        "{refused}"
    );
    let _ = wire.close(T);
}

/// A handler that streams three chunks, 150 ms apart.
fn slow_stream() -> Handler {
    Arc::new(|_| {
        let (tx, rx) = crossbeam_channel::bounded(4);
        std::thread::spawn(move || {
            for chunk in ["data: 1\n\n", "data: 2\n\n", "data: 3\n\n"] {
                std::thread::sleep(Duration::from_millis(150));
                let _ = tx.send(chunk.as_bytes().to_vec());
            }
        });
        Response::stream(200, "text/event-stream", rx).noting_invocation("run-1")
    })
}

#[test]
fn a_stream_is_logged_once_written_whole_and_the_wire_log_holds_it_as_one_message() {
    let dir = TempDir::new("stream-log");
    let path = dir.path().join("wire.jsonl");
    let wire = WireLog::create(&path).unwrap();
    let log = Sink::default();
    let server = server::bind("127.0.0.1:0", Limits::DEFAULT)
        .unwrap()
        .with_wire_log(wire.clone())
        .with_request_log(Arc::new(RequestLog::to(
            Format::Json,
            Level::Info,
            Box::new(log.clone()),
        )))
        .serve(slow_stream())
        .unwrap();
    let mut s = TcpStream::connect(server.local_addr()).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    s.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(9).any(|w| w == b"data: 1\n\n") {
        let n = s.read(&mut buf).unwrap();
        got.extend_from_slice(&buf[..n]);
    }
    assert!(
        log.lines().is_empty(),
        "nothing is logged while the stream is open"
    );
    while !got.ends_with(b"0\r\n\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    let deadline = Instant::now() + T;
    while log.lines().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let line = &log.lines()[0];
    assert_eq!(
        line["bytes"], 27,
        "three chunks of 9 bytes, framing not counted"
    );
    assert!(line["duration_ms"].as_f64().unwrap() >= 300.0, "{line}");
    assert_eq!(line["invocation_id"], "run-1");
    drop(s);
    server.shutdown();
    wire.close(T);
    let messages: Vec<Value> = read_log(&path)
        .into_iter()
        .filter(|l| l["type"] == "message" && l["direction"] == "out")
        .collect();
    assert_eq!(messages.len(), 1);
    let body = messages[0]["body"].as_str().unwrap();
    assert_eq!(
        body,
        "9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n9\r\ndata: 3\n\n\r\n0\r\n\r\n"
    );
    assert_eq!(
        format!("{}{body}", messages[0]["head"].as_str().unwrap()).as_bytes(),
        got.as_slice(),
        "what the client read, byte for byte"
    );
}

/// A wire log whose writer cannot write (a FIFO nobody reads) must not slow a request: what
/// does not fit the queue is dropped, counted, and recorded as lost once the writer can write.
#[test]
fn a_stuck_wire_log_never_blocks_a_request_and_counts_what_it_dropped() {
    let dir = TempDir::new("stuck-wire-log");
    let fifo = dir.path().join("wire.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // The reader opens the FIFO (which lets the writer's open return) and reads nothing until
    // told to.
    let (go, wait) = crossbeam_channel::bounded::<()>(0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::File::open(&fifo).unwrap();
            wait.recv().unwrap();
            let mut all = String::new();
            f.read_to_string(&mut all).unwrap();
            all
        })
    };
    let wire = WireLog::with_queue(&fifo, 16, 1 << 20).unwrap();
    let ok: Handler = Arc::new(|_| Response::bytes(200, "text/plain", vec![b'x'; 2048]));
    let server = server::bind("127.0.0.1:0", Limits::DEFAULT)
        .unwrap()
        .with_wire_log(wire.clone())
        .serve(ok)
        .unwrap();
    let http = HttpClient::tcp();
    let started = Instant::now();
    for _ in 0..400 {
        let r = http.send(ClientRequest::get(server.base_url(), T)).unwrap();
        assert_eq!(r.status, 200);
    }
    // 800 messages of 2 KiB and more: far beyond the pipe's 64 KiB and the 16 queued.
    assert!(started.elapsed() < T, "the requests were held up");
    let stuck = wire.stats();
    assert!(stuck.dropped > 0, "{stuck:?}");
    server.shutdown();
    go.send(()).unwrap();
    let stats = wire.close(T);
    let text = reader.join().unwrap();
    assert_eq!(stats.written + stats.dropped, 800, "{stats:?}");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lost: u64 = lines
        .iter()
        .filter(|l| l["type"] == "lost")
        .map(|l| l["messages"].as_u64().unwrap())
        .sum();
    assert_eq!(
        lost, stats.dropped,
        "every drop is recorded where it happened"
    );
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "end");
    assert_eq!(end["dropped"], stats.dropped);
    assert_eq!(end["written"], stats.written);
}

#[test]
fn the_readable_form_names_each_message_then_shows_its_head_and_body() {
    let line = json!({"type": "message", "time": "2026-01-01T00:00:00Z", "side": "client",
        "direction": "out", "connection": 4, "peer": "127.0.0.1:9", "local": null,
        "complete": true, "head": "GET / HTTP/1.1\r\nHost: a\r\n\r\n", "head_encoding": "utf-8",
        "body": "", "body_encoding": "utf-8", "body_bytes": 0, "redacted": []});
    assert_eq!(
        wirelog::readable(&line.to_string()).unwrap(),
        "── 2026-01-01T00:00:00Z  conn 4  client side  → out to 127.0.0.1:9\nGET / HTTP/1.1\nHost: a\n"
    );
}

#[test]
fn a_connection_refused_at_the_cap_is_logged_with_why() {
    let log = Sink::default();
    let ok: Handler = Arc::new(|_| Response::empty(204));
    let limits = Limits {
        max_connections: 1,
        ..Limits::DEFAULT
    };
    let server = server::bind("127.0.0.1:0", limits)
        .unwrap()
        .with_request_log(Arc::new(RequestLog::to(
            Format::Json,
            Level::Info,
            Box::new(log.clone()),
        )))
        .serve(ok)
        .unwrap();
    let held = TcpStream::connect(server.local_addr()).unwrap();
    let deadline = Instant::now() + T;
    while server.connections() < 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut second = TcpStream::connect(server.local_addr()).unwrap();
    second.set_read_timeout(Some(T)).unwrap();
    let mut answer = Vec::new();
    let _ = second.read_to_end(&mut answer);
    assert!(answer.starts_with(b"HTTP/1.1 503"));
    // The line is written once the answer is out, so it may follow the client's read.
    let deadline = Instant::now() + T;
    while log.lines().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let line = &log.lines()[0];
    assert_eq!(line["status"], 503);
    assert_eq!(line["level"], "error");
    assert_eq!(line["method"], "-");
    assert!(
        line["note"]
            .as_str()
            .unwrap()
            .contains("limit of 1 connections"),
        "{line}"
    );
    drop(held);
    server.shutdown();
}

#[test]
fn an_agents_request_log_names_the_invocation_it_ran() {
    let log = Sink::default();
    let bound = server::bind("127.0.0.1:0", Limits::DEFAULT)
        .unwrap()
        .with_request_log(Arc::new(RequestLog::to(
            Format::Json,
            Level::Info,
            Box::new(log.clone()),
        )));
    let public = bound.default_public_url();
    let server = bound
        .serve(agent_server::handler(Arc::new(Hello::new()), &public))
        .unwrap();
    let client = A2aClient::default();
    let target = Target::from_card(&client.fetch_card(&server.base_url(), T).unwrap()).unwrap();
    let id = ddwire::ids::new_uuid7();
    let request = json!({"invocation_id": id, "agent_id": "hello.world",
        "input": {"schema_class": "Message", "message_text": "hi"}});
    let task = client
        .send_for_task(
            &target,
            Message::new(Role::User, vec![Part::data(request)]),
            &[],
            T,
        )
        .unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    server.shutdown();
    let call = log
        .lines()
        .into_iter()
        .find(|l| l["target"] == "/a2a")
        .unwrap();
    assert_eq!(call["invocation_id"], id.as_str());
    assert_eq!(
        call["principal"],
        Value::Null,
        "an agent knows no principal"
    );
    let card = log
        .lines()
        .into_iter()
        .find(|l| l["target"] != "/a2a")
        .unwrap();
    assert_eq!(card["invocation_id"], Value::Null);
}

/// A peer whose card names `/a2a` and whose `message/stream` answer is an event stream of four
/// events for the call's id (the task, working, an artifact, completed), chunked as ddwire's
/// server writes it; served on loopback, writing to `wire`.
fn streaming_peer(wire: &WireLog) -> Server {
    let bound = server::bind("127.0.0.1:0", Limits::DEFAULT)
        .unwrap()
        .with_wire_log(wire.clone());
    let base = bound.default_public_url();
    let card = json!({"name": "streamer", "url": format!("{base}/a2a"),
        "preferredTransport": "JSONRPC", "protocolVersion": "0.3.0", "version": "1",
        "description": "streams", "capabilities": {"streaming": true}, "skills": [],
        "defaultInputModes": [], "defaultOutputModes": []});
    let handler: Handler = Arc::new(move |request: ddwire::wire::http::Request| {
        if request.method == "GET" {
            return Response::json(200, &card);
        }
        let id = serde_json::from_slice::<Value>(&request.body).unwrap()["id"].clone();
        let status = |state: &str, last: bool| {
            json!({"kind": "status-update", "taskId": "t-1", "contextId": "ctx-log",
                   "status": {"state": state}, "final": last})
        };
        let results = [
            json!({"kind": "task", "id": "t-1", "contextId": "ctx-log",
                   "status": {"state": "submitted"}}),
            status("working", false),
            json!({"kind": "artifact-update", "taskId": "t-1", "contextId": "ctx-log",
                   "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "done"}]}}),
            status("completed", true),
        ];
        let (tx, rx) = crossbeam_channel::bounded(8);
        for result in results {
            let event = json!({"jsonrpc": "2.0", "id": id, "result": result});
            tx.send(format!("data: {event}\n\n").into_bytes()).unwrap();
        }
        // The stream's end (the chunked terminator) comes well after its last event, as a
        // server's can: the relay must still read it for the stream to be logged whole.
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            drop(tx);
        });
        Response::stream(200, "text/event-stream", rx)
    });
    bound.serve(handler).unwrap()
}

/// A stream the relay forwards passes through its client's side of the wire log as a blocking
/// call does: the request it sent, and the event stream as it read it, byte for byte what the
/// peer's server wrote, logged whole once the stream ended.
#[test]
fn a_stream_the_relay_forwards_is_in_the_wire_log_on_its_client_side_byte_for_byte() {
    use ddwire::relay::{self, PeerSpec, Relay, RelayConfig, Role};
    let dir = TempDir::new("relay-stream-log");
    let path = dir.path().join("wire.jsonl");
    let wire = WireLog::create(&path).unwrap();
    let peer = streaming_peer(&wire);
    let peer_addr = peer.local_addr().to_string();
    let spec = PeerSpec::new("streamer", &peer.base_url(), Role::Leaf).unwrap();
    let mut config = RelayConfig::new(vec![spec], "http://placeholder");
    config.http = HttpClient::tcp_logged(wire.clone());
    config.egress = ddwire::wire::http::egress::Egress::allowing(["127.0.0.1/32"]).unwrap();
    let relay = Arc::new(Relay::new(config).unwrap());
    let served = server::serve(
        "127.0.0.1:0",
        relay::handler(relay.clone()),
        Limits::DEFAULT,
    )
    .unwrap();
    relay.set_public_url(&served.base_url());

    let call = json!({"jsonrpc": "2.0", "id": "s-1", "method": "message/stream", "params": {
        "message": {"kind": "message", "role": "user", "messageId": ddwire::ids::new_uuid7(),
                    "contextId": "ctx-log", "parts": [{"kind": "text", "text": "stream me"}],
                    "metadata": {"agent.target": "streamer"}}}});
    let request = ClientRequest::post_json(
        format!("{}/a2a", served.base_url()),
        call.to_string().into_bytes(),
        T,
    )
    .header("Accept", "text/event-stream");
    let answer = HttpClient::tcp().send(request).unwrap();
    let text = String::from_utf8(answer.body).unwrap();
    assert!(text.contains(r#""state":"completed""#), "{text}");

    // The relay's forward ends on its own thread just after the last event is passed on.
    let is_stream = |m: &Value| {
        m["type"] == "message"
            && m["direction"] == "in"
            && m["head"]
                .as_str()
                .is_some_and(|h| h.to_ascii_lowercase().contains("text/event-stream"))
    };
    let deadline = Instant::now() + T;
    while !read_log(&path)
        .iter()
        .any(|m| m["side"] == "client" && is_stream(m))
    {
        assert!(
            Instant::now() < deadline,
            "no client-side stream in the log"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(served);
    drop(peer);
    let stats = wire.close(T);
    assert_eq!((stats.dropped, stats.failed), (0, 0));

    let lines = read_log(&path);
    let read = lines
        .iter()
        .find(|m| m["side"] == "client" && is_stream(m))
        .unwrap();
    assert_eq!(read["complete"], true, "{read}");
    assert_eq!(read["peer"], peer_addr);
    let body = String::from_utf8(bytes_of(read)).unwrap();
    for state in ["submitted", "working", "completed"] {
        assert!(body.contains(state), "{state} missing from {body}");
    }
    let written = lines
        .iter()
        .find(|m| {
            m["side"] == "server"
                && m["direction"] == "out"
                && m["head"]
                    .as_str()
                    .is_some_and(|h| h.contains("text/event-stream"))
        })
        .expect("the peer's server logged the stream it wrote");
    assert_eq!(
        bytes_of(read),
        bytes_of(written),
        "what the relay read is what the peer wrote"
    );
    let forwarded = lines
        .iter()
        .find(|m| {
            m["side"] == "client"
                && m["direction"] == "out"
                && m["connection"] == read["connection"]
                && m["head"]
                    .as_str()
                    .is_some_and(|h| h.starts_with("POST /a2a"))
        })
        .expect("the forwarded call, on the same connection");
    assert!(
        String::from_utf8(bytes_of(forwarded))
            .unwrap()
            .contains("message/stream"),
        "{forwarded}"
    );
    assert!(
        lines.iter().any(|m| m["side"] == "server"
            && m["direction"] == "in"
            && bytes_of(m) == bytes_of(forwarded)),
        "the peer received what the relay sent"
    );
}

/// A loopback server that answers one request on each connection with `answer`, then closes.
fn answering_once(answer: &'static [u8]) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                    _ => break,
                }
            }
            let _ = stream.write_all(answer);
        }
    });
    base
}

/// Where a logged client's message ends is read from the message itself: a body delimited by
/// the connection's close is whole when the peer closes, one shorter than its
/// `Content-Length` is logged as cut short; the in-memory transport logs the same way.
#[test]
fn a_logged_clients_responses_end_where_their_framing_says_whole_or_cut_short() {
    let dir = TempDir::new("client-framing-log");
    let path = dir.path().join("wire.jsonl");
    let wire = WireLog::create(&path).unwrap();
    let client = HttpClient::tcp_logged(wire.clone());
    let until_close = answering_once(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it");
    let r = client.send(ClientRequest::get(until_close, T)).unwrap();
    assert_eq!(r.body, b"all of it");
    let cut = answering_once(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello");
    assert!(client.send(ClientRequest::get(cut, T)).is_err());
    let net = ddwire::wire::http::memory::MemoryNet::new();
    let ok: Handler = Arc::new(|_| Response::bytes(200, "text/plain", b"in memory".to_vec()));
    let base = net.serve("memory.test", ok, Limits::DEFAULT);
    let in_memory = HttpClient::memory(net).logged(wire.clone());
    assert_eq!(
        in_memory.send(ClientRequest::get(base, T)).unwrap().status,
        200
    );
    drop(client);
    wire.close(T);

    let lines = read_log(&path);
    let response = |body: &str| {
        lines
            .iter()
            .find(|m| m["direction"] == "in" && m["body"] == body)
            .unwrap_or_else(|| panic!("no response {body:?} in {lines:?}"))
    };
    assert_eq!(response("all of it")["complete"], true);
    assert_eq!(response("hello")["complete"], false);
    let memory = response("in memory");
    assert_eq!(
        (&memory["complete"], &memory["side"]),
        (&json!(true), &json!("client"))
    );
    assert_eq!(memory["peer"], "memory.test");
    let requests = lines
        .iter()
        .filter(|m| m["direction"] == "out" && m["complete"] == true)
        .count();
    assert_eq!(
        requests, 3,
        "each request, whole, as soon as it was sent: {lines:?}"
    );
}
