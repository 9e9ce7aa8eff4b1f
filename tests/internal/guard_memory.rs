//! The guards against memory and connections out of proportion to a request, each over
//! loopback HTTP: the JSON reader's element budget, the budget for bodies in flight, the
//! per-client connection limit, the wire log's cap per message, and a `--tokens` harness
//! refusing an unauthenticated body before parsing it.

use super::common;
use super::raw_http;

use ddwire::agent::builtin::Hello;
use ddwire::wire::http::server::{self, Server};
use ddwire::wire::http::{Handler, Limits, Request, Response};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(10);

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    s.set_write_timeout(Some(T)).unwrap();
    s
}

/// One answer: status, head, body.
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Read exactly one response with a `Content-Length` body.
fn read_answer(s: &mut TcpStream) -> Answer {
    let (status, head, body) = raw_http::read_response(s);
    Answer { status, head, body }
}

/// POST `body` to `path` with `headers` on a new connection; the answer.
fn post(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut s = connect(addr);
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    // The server may answer before reading the whole body (a refusal): a failed write then
    // is no failure of the test.
    let _ = s.write_all(body);
    read_answer(&mut s)
}

/// A `message/send` whose data part holds `data` (raw JSON text).
fn send_body(data: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m1","role":"user","parts":[{{"kind":"data","data":{data}}}]}}}}}}"#
    )
    .into_bytes()
}

/// `[1,1,…]` of `n` elements.
fn ones(n: usize) -> String {
    let mut s = String::with_capacity(2 * n + 1);
    s.push('[');
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push('1');
    }
    s.push(']');
    s
}

/// Finding 5: a dense body (`[1,1,…]`, 2 bytes an element) is refused by the JSON reader's
/// pre-scan as a parse error (-32700) naming the limit, before a tree is built; a body of as
/// many bytes in text-sized elements is served.
#[test]
fn a_json_rpc_body_over_the_element_budget_is_a_parse_error_naming_the_limit() {
    let agent = ddwire::agent::server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let addr = agent.local_addr();
    let dense = send_body(&ones(1_000_000));
    let answer = post(addr, "/", &[], &dense);
    let reply = answer.json();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "more than {} array elements and object members in a document of {} bytes",
            ddwire::json::max_elements(dense.len()),
            dense.len()
        )),
        "{message}"
    );
    // As many bytes of words: far inside the budget, and read as a request.
    let words = vec!["\"a longer word\""; 120_000].join(",");
    let answer = post(addr, "/", &[], &send_body(&format!("[{words}]")));
    assert_ne!(answer.json()["error"]["code"], -32700, "{}", answer.text());
}

/// What a gated server's `/hold` handler waits on, and how many have reached it.
#[derive(Default)]
struct Gate {
    open: AtomicBool,
    /// `/hold` handlers entered: each holds its whole body from then until the gate opens.
    held: AtomicUsize,
}

impl Gate {
    fn store(&self, open: bool, order: Ordering) {
        self.open.store(open, order);
    }

    /// Wait until `n` `/hold` handlers have been entered. A request in flight has not yet
    /// read its body; a handler has, so the budget then holds it.
    fn wait_held(&self, n: usize) {
        let deadline = Instant::now() + T;
        while self.held.load(Ordering::SeqCst) < n {
            assert!(
                Instant::now() < deadline,
                "{} held",
                self.held.load(Ordering::SeqCst)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A server whose handler waits for `gate` to open on `/hold` (up to 10 s), and answers the
/// body's length otherwise.
fn gated_server(addr: &str, limits: Limits) -> (Server, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let handler: Handler = {
        let gate = Arc::clone(&gate);
        Arc::new(move |r: Request| {
            if r.path == "/hold" {
                gate.held.fetch_add(1, Ordering::SeqCst);
                let until = Instant::now() + T;
                while !gate.open.load(Ordering::SeqCst) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            Response::bytes(200, "text/plain", r.body.len().to_string().into_bytes())
        })
    };
    (server::serve(addr, handler, limits).unwrap(), gate)
}

/// Finding 5: bodies in flight are bounded across connections. With 1 MiB of budget, a second
/// 600 KiB body waits while the first's handler holds its bytes: it is served if room is made
/// within the wait, and answered 503 with `Retry-After` and the reason if not, and the budget
/// is whole again once the handlers return.
#[test]
fn a_body_past_the_memory_budget_waits_briefly_then_is_503_with_retry_after_and_a_reason() {
    let limits = Limits {
        max_body_memory: 1 << 20,
        ..Limits::DEFAULT
    };
    let (server, gate) = gated_server("127.0.0.1:0", limits);
    let addr = server.local_addr();
    let body = vec![b'x'; 600 << 10];
    let holder = {
        let body = body.clone();
        std::thread::spawn(move || post(addr, "/hold", &[], &body))
    };
    gate.wait_held(1);
    // No room within the wait: refused, with the reason and when to come back.
    let started = Instant::now();
    let refused = post(addr, "/", &[], &body);
    let waited = started.elapsed();
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert!(
        refused.head.contains("Retry-After: 1\r\n"),
        "{}",
        refused.head
    );
    assert!(
        refused.head.contains("Connection: close\r\n"),
        "{}",
        refused.head
    );
    assert_eq!(
        refused.json()["error"],
        "the server holds its limit of 1048576 bytes of request bodies in flight; try again later"
    );
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    // Room made within the wait: served.
    let waiting = {
        let body = body.clone();
        std::thread::spawn(move || post(addr, "/", &[], &body))
    };
    std::thread::sleep(Duration::from_millis(300));
    gate.store(true, Ordering::SeqCst);
    assert_eq!(holder.join().unwrap().text(), (600 << 10).to_string());
    let served = waiting.join().unwrap();
    assert_eq!(
        (served.status, served.text()),
        (200, (600 << 10).to_string())
    );
    // Everything given back: two bodies that together fill the budget are served at once.
    gate.store(false, Ordering::SeqCst);
    let half = vec![b'y'; 500 << 10];
    let first = {
        let half = half.clone();
        std::thread::spawn(move || post(addr, "/hold", &[], &half))
    };
    gate.wait_held(2);
    assert_eq!(post(addr, "/", &[], &half).status, 200);
    gate.store(true, Ordering::SeqCst);
    assert_eq!(first.join().unwrap().status, 200);
}

/// Finding 5: a chunked body is counted as it grows, so it cannot pass the budget by declaring
/// no length.
#[test]
fn a_chunked_body_is_counted_as_it_grows_and_refused_past_the_budget() {
    let limits = Limits {
        max_body_memory: 1 << 20,
        ..Limits::DEFAULT
    };
    let (server, gate) = gated_server("127.0.0.1:0", limits);
    let addr = server.local_addr();
    let holder = std::thread::spawn(move || post(addr, "/hold", &[], &vec![b'x'; 700 << 10]));
    gate.wait_held(1);
    let mut s = connect(addr);
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 64 << 10, "z".repeat(64 << 10));
    // 640 KiB in ten chunks: past the 324 KiB left, however it is cut.
    for _ in 0..10 {
        if s.write_all(chunk.as_bytes()).is_err() {
            break;
        }
    }
    let refused = read_answer(&mut s);
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert!(refused.text().contains("bytes of request bodies in flight"));
    gate.store(true, Ordering::SeqCst);
    assert_eq!(holder.join().unwrap().status, 200);
}

/// Finding 8: one client's connections are capped by its address, counted from the accept.
/// Past its cap, a connection is answered 503 with the reason and closed; another client (here
/// `::1` beside `127.0.0.1` on one dual-stack socket) is served meanwhile.
#[test]
fn past_its_per_client_cap_a_connection_gets_503_and_another_client_is_served() {
    let limits = Limits {
        max_connections_per_client: 4,
        ..Limits::DEFAULT
    };
    let (server, _gate) = gated_server("[::]:0", limits);
    let port = server.local_addr().port();
    let v4: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let v6: SocketAddr = format!("[::1]:{port}").parse().unwrap();
    let held: Vec<TcpStream> = (0..4).map(|_| connect(v4)).collect();
    let deadline = Instant::now() + T;
    while server.connections() < 4 {
        assert!(Instant::now() < deadline, "never counted");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut fifth = connect(v4);
    fifth
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let refused = read_answer(&mut fifth);
    assert_eq!(refused.status, 503);
    assert!(refused.head.contains("Retry-After: 1\r\n"));
    assert_eq!(
        refused.json()["error"],
        "this client (127.0.0.1) holds its limit of 4 connections; close one or try again later"
    );
    let mut rest = Vec::new();
    assert_eq!(
        fifth.read_to_end(&mut rest).unwrap_or(0),
        0,
        "closed after it"
    );
    // Another address is another client.
    let mut other = connect(v6);
    other
        .write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
        .unwrap();
    assert_eq!(read_answer(&mut other).text(), "2");
    // Once one of its connections closes, the first client is served again.
    drop(held);
    let deadline = Instant::now() + T;
    while server.connections() > 1 {
        assert!(Instant::now() < deadline, "never released");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut again = connect(v4);
    again
        .write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nh")
        .unwrap();
    assert_eq!(read_answer(&mut again).text(), "1");
}

/// Finding 8 as reported, scaled to a test: one client holds many connections that drip
/// their heads, past what the default per-client cap lets it keep, on a server whose global
/// cap it would otherwise fill; every call of another client is served meanwhile.
#[test]
fn one_client_dripping_heads_on_many_connections_cannot_starve_another() {
    let limits = Limits {
        max_connections: 100,
        ..Limits::DEFAULT
    };
    assert_eq!(limits.max_connections_per_client, 64);
    let (server, _gate) = gated_server("[::]:0", limits);
    let port = server.local_addr().port();
    let v4: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let v6: SocketAddr = format!("[::1]:{port}").parse().unwrap();
    let mut lorises: Vec<TcpStream> = Vec::new();
    for _ in 0..150 {
        let mut s = connect(v4);
        let _ = s.write_all(b"GET / HTTP/1.1\r\n");
        lorises.push(s);
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut served = 0;
    let mut i = 0;
    while Instant::now() < deadline {
        for s in &mut lorises {
            let _ = s.write_all(b"X");
        }
        let mut s = connect(v6);
        s.write_all(
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
        )
        .unwrap();
        let answer = read_answer(&mut s);
        assert_eq!(
            (answer.status, answer.text()),
            (200, "3".to_string()),
            "call {i}"
        );
        served += 1;
        i += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(served >= 10, "{served}");
    assert!(server.connections() <= 64 + 1, "{}", server.connections());
}

/// The wire log's whole lines in `path`, as JSON. The log is read while its writer thread
/// appends to it, so a last line without its newline is still being written and is left for
/// the next read (parsing it would fail on a half-written line).
fn log_lines(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    whole
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Finding 6: the wire log keeps at most 1 MiB of a message. A stream that does not end is
/// written once it passes the cap, while it is still open (its first MiB, marked truncated),
/// and its rest only counted, in a `truncated` line when it ends; a large request body the
/// same. `ddwire wirelog`'s reader shows every line.
#[test]
fn the_wire_log_writes_the_first_mib_of_a_message_as_it_goes_and_counts_the_rest() {
    use ddwire::wire::wirelog::{MESSAGE_CAP, WireLog, readable};
    let dir = common::TempDir::new("guard-wirelog");
    let path = dir.path().join("wire.jsonl");
    let log = WireLog::create(&path).unwrap();
    let handler: Handler = Arc::new(|r: Request| {
        if r.path != "/stream" {
            return Response::bytes(200, "text/plain", r.body.len().to_string().into_bytes());
        }
        let (tx, rx) = crossbeam_channel::bounded(4);
        std::thread::spawn(move || {
            let chunk = b"data: keep-alive\n\n".repeat(4096);
            let until = Instant::now() + Duration::from_secs(20);
            while Instant::now() < until && tx.send(chunk.clone()).is_ok() {}
        });
        Response::stream(200, "text/event-stream", rx)
    });
    let server = server::bind("127.0.0.1:0", Limits::DEFAULT)
        .unwrap()
        .with_wire_log(log.clone())
        .serve(handler)
        .unwrap();
    let addr = server.local_addr();
    // A body of 3 MiB: its first MiB logged, 2 MiB counted.
    let body = vec![b'b'; 3 << 20];
    assert_eq!(post(addr, "/", &[], &body).text(), (3 << 20).to_string());
    // A stream read to 3 MiB: its first MiB is in the file while it is open.
    let mut s = connect(addr);
    s.write_all(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut read = 0;
    let mut buf = vec![0; 64 << 10];
    while read < 3 << 20 {
        read += s.read(&mut buf).unwrap();
    }
    let deadline = Instant::now() + T;
    let first = loop {
        let lines = log_lines(&path);
        if let Some(first) = lines
            .iter()
            .find(|l| l["direction"] == "out" && l["truncated"] == true)
        {
            break first.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no first part while open: {lines:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let head = first["head"].as_str().unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert_eq!(
        head.len() + first["body_bytes"].as_u64().unwrap() as usize,
        MESSAGE_CAP
    );
    assert_eq!(first["complete"], false);
    drop(s);
    let deadline = Instant::now() + T;
    let lines = loop {
        let lines = log_lines(&path);
        if lines.iter().filter(|l| l["type"] == "truncated").count() == 2 {
            break lines;
        }
        assert!(Instant::now() < deadline, "{lines:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    server.shutdown();
    log.close(T);
    let rests: Vec<&Value> = lines.iter().filter(|l| l["type"] == "truncated").collect();
    // The body: complete, 3 MiB and its head, less the MiB logged.
    let request = lines
        .iter()
        .find(|l| l["direction"] == "in" && l["truncated"] == true)
        .unwrap();
    let request_head = request["head"].as_str().unwrap().len() as u64;
    assert_eq!(rests[0]["direction"], "in");
    assert_eq!(rests[0]["complete"], true);
    assert_eq!(
        rests[0]["bytes_not_logged"].as_u64().unwrap(),
        request_head + (3 << 20) - MESSAGE_CAP as u64
    );
    // The stream: cut short by the client, at least the 2 MiB read past the first.
    assert_eq!(rests[1]["direction"], "out");
    assert_eq!(rests[1]["complete"], false);
    assert!(rests[1]["bytes_not_logged"].as_u64().unwrap() >= 2 << 20);
    let longest = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::len)
        .max()
        .unwrap();
    assert!(longest < 2 * MESSAGE_CAP, "a line of {longest} bytes");
    for line in std::fs::read_to_string(&path).unwrap().lines() {
        let shown = readable(line).unwrap_or_else(|| panic!("unreadable: {line:.200}"));
        if line.contains("\"type\":\"truncated\"") {
            assert!(shown.contains("bytes of this message, over the 1048576 logged, not logged"));
        }
    }
}

/// Finding 5: a `--tokens` harness refuses a caller without a valid credential before it parses
/// the body: a body that is not even JSON gets the 401 (with the challenge, and on A2A the
/// JSON-RPC error), not the parse error a caller with a token gets for it.
#[test]
fn a_tokens_harness_refuses_an_unauthenticated_body_with_401_before_parsing_it() {
    use ddwire::harness::identity::{Authenticator, Token, token_digest};
    use ddwire::harness::server::{Harness, handler};
    let runs = common::TempDir::new("guard-harness");
    let (conductor, _net) = common::bare_conductor(vec![Arc::new(Hello::new())], runs.path());
    let auth = Authenticator::Bearer(vec![Token::new(
        token_digest("s3cret"),
        ddwire::harness::testkit::test_principal(),
    )]);
    let harness = Arc::new(Harness::new(conductor, Some(auth), "http://127.0.0.1"));
    let server = server::serve("127.0.0.1:0", handler(harness), Limits::DEFAULT).unwrap();
    let addr = server.local_addr();
    let garbage = vec![b'['; 1 << 20];
    for path in ["/a2a", "/"] {
        let refused = post(addr, path, &[], &garbage);
        assert_eq!(refused.status, 401, "{path}: {}", refused.text());
        assert!(
            refused
                .head
                .contains("WWW-Authenticate: Bearer realm=\"ddwire\"\r\n"),
            "{}",
            refused.head
        );
        let reply = refused.json();
        assert_eq!(
            (reply["id"].clone(), reply["error"]["code"].clone()),
            (Value::Null, (-32600).into())
        );
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Unauthenticated: ")
        );
    }
    let wrong = post(addr, "/a2a", &[("Authorization", "Bearer guess")], &garbage);
    assert_eq!(wrong.status, 401);
    assert!(
        wrong.head.contains("error=\"invalid_token\""),
        "{}",
        wrong.head
    );
    let agui = post(addr, "/agui", &[], &garbage);
    assert_eq!(agui.status, 401);
    assert!(agui.json()["error"].is_string());
    // With the token, the same bytes are parsed, and refused as what they are.
    let parsed = post(
        addr,
        "/a2a",
        &[("Authorization", "Bearer s3cret")],
        &garbage,
    );
    assert_eq!(parsed.json()["error"]["code"], -32700, "{}", parsed.text());
    // What needs no credential is still served.
    let mut s = connect(addr);
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert_ne!(read_answer(&mut s).status, 401);
}

/// The new limits are flags of `serve` and `agent` (shown on `agent`), each refused at start when it could not
/// work (no room for one whole body, no connection at all).
#[test]
fn the_limit_flags_are_checked_at_start_with_a_reason() {
    for (args, says) in [
        (
            &["agent", "hello", "--max-body-memory", "1"][..],
            "--max-body-memory must be at least 4 (MiB): one whole request body",
        ),
        (
            &["agent", "echo", "--max-connections-per-client", "0"][..],
            "--max-connections-per-client must be at least 1",
        ),
    ] {
        let out = std::process::Command::new(crate::internal_tests::ddwire_exe())
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
