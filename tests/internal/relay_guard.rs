//! The relay defends itself: each finding of the "Guard" issue reproduced over loopback, and
//! shown refused. Callers without a token, browsers, peer URLs that smuggle a path, credentials
//! or an internal address, redirects, loops through the relay itself or another relay, hanging
//! peers' health, a peer claiming another's task, a stream client that never reads, and a
//! reply larger than the relay reads.

use ddwire::contract::tokens::{Role as TokenRole, Token, token_digest};
use ddwire::contract::{Principal, PrincipalKind};
use ddwire::relay::{self, PeerSpec, Relay, RelayConfig, Role};
use ddwire::wire::http::client::{ClientRequest, HttpClient};
use ddwire::wire::http::drain::Drain;
use ddwire::wire::http::egress::Egress;
use ddwire::wire::http::{self, Limits};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(20);

fn loopback() -> Egress {
    Egress::allowing(["127.0.0.1/32"]).unwrap()
}

/// A relay over `peers`, set up by `tune`, served on loopback with `limits`.
fn relay_with(
    peers: Vec<(&str, String)>,
    limits: Limits,
    tune: impl FnOnce(&mut RelayConfig),
) -> (Arc<Relay>, http::server::Server) {
    let specs = peers
        .into_iter()
        .map(|(id, url)| PeerSpec::new(id, &url, Role::Leaf).unwrap())
        .collect();
    let mut config = RelayConfig::new(specs, "http://placeholder");
    config.timeout = Duration::from_secs(10);
    config.egress = loopback();
    tune(&mut config);
    let relay = Arc::new(Relay::new(config).unwrap());
    let server = http::server::serve("127.0.0.1:0", relay::handler(relay.clone()), limits).unwrap();
    relay.set_public_url(&server.base_url());
    (relay, server)
}

fn request(
    method: &str,
    url: &str,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    if method == "DELETE" {
        return (delete(url, headers), Value::Null);
    }
    let mut request = match body {
        Some(b) => ClientRequest::post_json(url, b.to_string().into_bytes(), DEADLINE),
        None => ClientRequest::get(url, DEADLINE),
    };
    for (k, v) in headers {
        request.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(k));
        request = request.header(k, v);
    }
    let response = HttpClient::tcp().send(request).unwrap();
    let body = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    (response.status, body)
}

/// `DELETE url` over a raw connection (the client sends GET and POST only): its status.
fn delete(url: &str, headers: &[(&str, &str)]) -> u16 {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = TcpStream::connect(host).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        stream,
        "DELETE {path} HTTP/1.1\r\nhost: {host}\r\n{extra}connection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn send_to(target: &str, task: Option<&str>, meta: Value) -> Value {
    let mut meta = meta;
    meta["agent.target"] = json!(target);
    let mut message = json!({"kind": "message", "role": "user", "messageId": ddwire::ids::new_uuid7(),
        "parts": [{"kind": "text", "text": "hi"}], "metadata": meta});
    if let Some(t) = task {
        message["taskId"] = json!(t);
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}})
}

fn class_of(reply: &Value) -> (i64, String) {
    (
        reply["error"]["code"].as_i64().unwrap_or(0),
        reply["error"]["data"]["class"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

/// What a raw peer does with one request: `(method, path, body)` to raw response bytes, or
/// `None` to hold the connection open without answering.
type Answer = Arc<dyn Fn(&str, &str, &[u8]) -> Option<Vec<u8>> + Send + Sync>;

/// A raw TCP peer answering each request with `answer`; counts the connections it accepted.
fn raw_peer(answer: Answer) -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicU64::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(DEADLINE));
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let length: usize = head
                    .to_ascii_lowercase()
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while buf.len() < head_end + length {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let mut line = head.split_whitespace();
                let (method, path) = (line.next().unwrap_or(""), line.next().unwrap_or(""));
                match answer(method, path, &buf[head_end..]) {
                    Some(bytes) => {
                        let _ = stream.write_all(&bytes);
                    }
                    None => std::thread::sleep(DEADLINE),
                }
            });
        }
    });
    (base, accepted)
}

fn json_answer(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A peer with a v0.3 card at its base whose sends and gets are answered with the task `task`.
fn task_peer(task: &'static str, name: &'static str) -> (String, Arc<AtomicU64>) {
    let base = Arc::new(std::sync::OnceLock::<String>::new());
    let b = base.clone();
    let (url, hits) = raw_peer(Arc::new(move |method, _path, body| {
        if method == "GET" {
            let card = json!({"name": name, "url": format!("{}/a2a", b.get().unwrap()),
                "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC", "version": "1",
                "description": name, "capabilities": {}, "skills": [],
                "defaultInputModes": [], "defaultOutputModes": []});
            return Some(json_answer("200 OK", &card.to_string()));
        }
        let id = serde_json::from_slice::<Value>(body)
            .map(|v| v["id"].clone())
            .unwrap_or(Value::Null);
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": {"kind": "task", "id": task,
            "contextId": format!("ctx-{name}"), "status": {"state": "working"},
            "metadata": {"served_by": name}}});
        Some(json_answer("200 OK", &reply.to_string()))
    }));
    base.set(url.clone()).unwrap();
    (url, hits)
}

fn principal(id: &str) -> Principal {
    Principal::new(
        &format!("https://example.org/{id}"),
        id,
        PrincipalKind::Person,
    )
    .unwrap()
}

#[test]
fn with_tokens_a_caller_needs_one_and_changing_peers_needs_an_admin_token() {
    let (peer, _) = task_peer("t-auth", "auth");
    let mut admin = Token::new(token_digest("admin-secret"), principal("admin"));
    admin.role = TokenRole::Admin;
    let user = Token::new(token_digest("user-secret"), principal("user"));
    let (_relay, server) = relay_with(vec![("A", peer.clone())], Limits::DEFAULT, |c| {
        c.tokens = Some(vec![admin, user]);
        c.allow_registration = true;
    });
    let base = server.base_url();
    let user_h = [("Authorization", "Bearer user-secret")];
    let admin_h = [("Authorization", "Bearer admin-secret")];
    // No token, or an unknown one: 401, before anything is forwarded.
    let call = send_to("A", None, json!({}));
    assert_eq!(
        request("POST", &format!("{base}/a2a"), Some(&call), &[]).0,
        401
    );
    let wrong = [("Authorization", "Bearer nope")];
    assert_eq!(
        request("POST", &format!("{base}/a2a"), Some(&call), &wrong).0,
        401
    );
    assert_eq!(request("GET", &format!("{base}/peers"), None, &[]).0, 401);
    let (status, reply) = request("POST", &format!("{base}/a2a"), Some(&call), &user_h);
    assert_eq!(
        (status, reply["result"]["id"].as_str()),
        (200, Some("t-auth")),
        "{reply}"
    );
    // Liveness, readiness and the peers' cards stay open, as an agent's card is.
    assert_eq!(request("GET", &format!("{base}/livez"), None, &[]).0, 200);
    let card = format!("{base}/peers/A/.well-known/agent-card.json");
    assert_eq!(request("GET", &card, None, &[]).0, 200);
    // Changing the peers: an admin's token, not a caller's.
    let new = json!({"id": "B", "url": peer});
    assert_eq!(
        request("POST", &format!("{base}/peers"), Some(&new), &[]).0,
        401
    );
    assert_eq!(
        request("POST", &format!("{base}/peers"), Some(&new), &user_h).0,
        403
    );
    assert_eq!(
        request("DELETE", &format!("{base}/peers/A"), None, &[]).0,
        401
    );
    assert_eq!(
        request("DELETE", &format!("{base}/peers/A"), None, &user_h).0,
        403
    );
    assert_eq!(
        request("POST", &format!("{base}/peers"), Some(&new), &admin_h).0,
        201
    );
    assert_eq!(
        request("DELETE", &format!("{base}/peers/B"), None, &admin_h).0,
        200
    );
}

#[test]
fn runtime_registration_is_off_unless_allowed() {
    let (peer, _) = task_peer("t-reg", "reg");
    let (relay, server) = relay_with(vec![("A", peer.clone())], Limits::DEFAULT, |_| {});
    let base = server.base_url();
    let (status, body) = request(
        "POST",
        &format!("{base}/peers"),
        Some(&json!({"id": "B", "url": peer})),
        &[],
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.to_string().contains("--allow-registration"), "{body}");
    assert_eq!(
        request("DELETE", &format!("{base}/peers/A"), None, &[]).0,
        403
    );
    assert_eq!(relay.peer_ids(), ["A"]);
}

#[test]
fn a_browser_page_cannot_register_peers_or_call_through_the_relay() {
    let (peer, _) = task_peer("t-web", "web");
    let (relay, server) = relay_with(vec![], Limits::DEFAULT, |c| c.allow_registration = true);
    let base = server.base_url();
    let new = json!({"id": "B", "url": peer});
    let url = format!("{base}/peers");
    // A form can post text/plain without a preflight: refused before any route.
    let (status, _) = request("POST", &url, Some(&new), &[("Content-Type", "text/plain")]);
    assert_eq!(status, 415);
    let (status, _) = request(
        "POST",
        &url,
        Some(&new),
        &[("Origin", "https://evil.example")],
    );
    assert_eq!(status, 403);
    // A name that rebinds to loopback is not a name the relay answers to.
    let (status, _) = request("POST", &url, Some(&new), &[("Host", "evil.example")]);
    assert_eq!(status, 421);
    let call = send_to("B", None, json!({}));
    let (status, _) = request(
        "POST",
        &format!("{base}/a2a"),
        Some(&call),
        &[("Origin", "https://evil.example")],
    );
    assert_eq!(status, 403);
    assert!(relay.peer_ids().is_empty());
}

#[test]
fn a_peer_url_with_a_query_credentials_or_a_fragment_is_refused() {
    let (_relay, server) = relay_with(vec![], Limits::DEFAULT, |c| c.allow_registration = true);
    let url = format!("{}/peers", server.base_url());
    for (bad, why) in [
        ("http://127.0.0.1:9/m/secret?x=", "query"),
        ("http://user:pass@127.0.0.1:9", "credentials"),
        ("http://127.0.0.1:9/#x", "fragment"),
    ] {
        let (status, body) = request("POST", &url, Some(&json!({"id": "X", "url": bad})), &[]);
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.to_string().contains(why), "{bad}: {body}");
    }
    assert_eq!(request("GET", &url, None, &[]).1["peers"], json!([]));
}

#[test]
fn internal_destinations_are_refused_unless_allowed_even_behind_a_name() {
    let (peer, hits) = task_peer("t-int", "int");
    let port = peer.rsplit(':').next().unwrap().to_string();
    // The default policy: loopback, link-local and metadata addresses refused.
    let (_relay, server) = relay_with(vec![], Limits::DEFAULT, |c| {
        c.allow_registration = true;
        c.egress = Egress::default();
    });
    let url = format!("{}/peers", server.base_url());
    for bad in [
        "http://169.254.169.254",
        "http://100.100.100.200",
        "http://[fd00:ec2::254]",
        "http://0.0.0.0:80",
        peer.as_str(),
    ] {
        let (status, body) = request("POST", &url, Some(&json!({"id": "X", "url": bad})), &[]);
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.to_string().contains("--peer-allow"), "{bad}: {body}");
    }
    // A name resolving to loopback is checked after resolution: registered, but never reached.
    let named = format!("http://localhost:{port}");
    let (status, body) = request("POST", &url, Some(&json!({"id": "L", "url": named})), &[]);
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["health"]["state"], "down", "{body}");
    let call = send_to("L", None, json!({}));
    let (_, reply) = request(
        "POST",
        &format!("{}/a2a", server.base_url()),
        Some(&call),
        &[],
    );
    assert_eq!(
        class_of(&reply),
        (-32017, "destination_refused".into()),
        "{reply}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the peer was contacted");
}

#[test]
fn a_card_that_redirects_is_not_followed() {
    let (inner, inner_hits) = task_peer("t-inner", "inner");
    let target = format!("{inner}/.well-known/agent-card.json");
    let (redirector, _) = raw_peer(Arc::new(move |_, _, _| {
        Some(
            format!(
                "HTTP/1.1 302 Found\r\nlocation: {target}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            .into_bytes(),
        )
    }));
    let (_relay, server) = relay_with(vec![], Limits::DEFAULT, |c| c.allow_registration = true);
    let (status, body) = request(
        "POST",
        &format!("{}/peers", server.base_url()),
        Some(&json!({"id": "R", "url": redirector})),
        &[],
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["card"], Value::Null, "{body}");
    assert!(body["card_error"].to_string().contains("302"), "{body}");
    assert_eq!(inner_hits.load(Ordering::SeqCst), 0);
}

#[test]
fn a_relay_that_is_its_own_peer_refuses_the_loop_at_the_first_repeat() {
    let (relay, server) = relay_with(vec![], Limits::DEFAULT, |c| c.allow_registration = true);
    let base = server.base_url();
    let port = base.rsplit(':').next().unwrap().to_string();
    // Its own address is refused outright.
    let (status, body) = request(
        "POST",
        &format!("{base}/peers"),
        Some(&json!({"id": "me", "url": base})),
        &[],
    );
    assert_eq!(status, 400, "{body}");
    // Another name for itself, pointing at one of its own peer routes: the card fetch comes
    // back carrying its own Via, and stops there (508), once.
    let alias = format!("http://localhost:{port}/peers/alias");
    let (status, body) = request(
        "POST",
        &format!("{base}/peers"),
        Some(&json!({"id": "alias", "url": alias})),
        &[],
    );
    assert_eq!(status, 201, "{body}");
    assert!(body["card_error"].to_string().contains("508"), "{body}");
    // A send through it: one hop, then loop_detected, within a fraction of the deadline.
    let started = Instant::now();
    let call = send_to("alias", None, json!({}));
    let (_, reply) = request("POST", &format!("{base}/a2a"), Some(&call), &[]);
    assert_eq!(reply["error"]["code"], -32016, "{reply}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(relay.peer_ids(), ["alias"]);
}

#[test]
fn two_relays_pointing_at_each_other_stop_at_the_first_repeat() {
    let (relay_a, server_a) = relay_with(vec![], Limits::DEFAULT, |c| c.allow_registration = true);
    let (_relay_b, server_b) = relay_with(
        vec![("a", format!("{}/peers/b", server_a.base_url()))],
        Limits::DEFAULT,
        |_| {},
    );
    let (status, body) = request(
        "POST",
        &format!("{}/peers", server_a.base_url()),
        Some(&json!({"id": "b", "url": format!("{}/peers/a", server_b.base_url())})),
        &[],
    );
    assert_eq!(status, 201, "{body}");
    let call = send_to("b", None, json!({}));
    let started = Instant::now();
    let (_, reply) = request(
        "POST",
        &format!("{}/a2a", server_a.base_url()),
        Some(&call),
        &[],
    );
    assert_eq!(reply["error"]["code"], -32016, "{reply}");
    assert!(
        reply["error"]["message"].to_string().contains("leads back"),
        "{reply}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(relay_a);
}

#[test]
fn a_call_that_passed_too_many_relays_is_refused() {
    let (peer, hits) = task_peer("t-hops", "hops");
    let (_relay, server) = relay_with(vec![("A", peer)], Limits::DEFAULT, |_| {});
    let call = send_to("A", None, json!({"relay.hops": relay::DEFAULT_MAX_HOPS}));
    let (_, reply) = request(
        "POST",
        &format!("{}/a2a", server.base_url()),
        Some(&call),
        &[],
    );
    assert_eq!(
        class_of(&reply),
        (-32016, "loop_detected".into()),
        "{reply}"
    );
    let via = (0..relay::DEFAULT_MAX_HOPS)
        .map(|i| format!("1.1 other-{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let call = send_to("A", None, json!({}));
    let (_, reply) = request(
        "POST",
        &format!("{}/a2a", server.base_url()),
        Some(&call),
        &[("Via", &via)],
    );
    assert_eq!(
        class_of(&reply),
        (-32016, "loop_detected".into()),
        "{reply}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[test]
fn hanging_peers_do_not_hold_health_or_the_peers_list() {
    let (hang, _) = raw_peer(Arc::new(|_, _, _| None));
    let peers: Vec<(String, String)> = (0..32)
        .map(|i| (format!("h{i}"), format!("{hang}/p{i}")))
        .collect();
    let (_relay, server) = relay_with(
        peers.iter().map(|(i, u)| (i.as_str(), u.clone())).collect(),
        Limits::DEFAULT,
        |_| {},
    );
    let started = Instant::now();
    let (status, health) = request("GET", &format!("{}/healthz", server.base_url()), None, &[]);
    assert_eq!(status, 503, "{health}");
    let (status, listed) = request("GET", &format!("{}/peers", server.base_url()), None, &[]);
    assert_eq!(status, 200);
    assert_eq!(listed["peers"].as_array().unwrap().len(), 32);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_peer_cannot_claim_another_peers_task() {
    let (victim, victim_hits) = task_peer("shared-task", "victim");
    let (thief, _) = task_peer("shared-task", "thief");
    let (_relay, server) = relay_with(vec![("B", victim), ("A", thief)], Limits::DEFAULT, |_| {});
    let a2a = format!("{}/a2a", server.base_url());
    let (_, reply) = request("POST", &a2a, Some(&send_to("B", None, json!({}))), &[]);
    assert_eq!(
        reply["result"]["metadata"]["served_by"], "victim",
        "{reply}"
    );
    // The thief answers with the victim's task id: refused, not passed on, not recorded.
    let (_, reply) = request("POST", &a2a, Some(&send_to("A", None, json!({}))), &[]);
    assert_eq!(
        class_of(&reply),
        (-32018, "task_conflict".into()),
        "{reply}"
    );
    // The task's calls still go to the victim.
    let before = victim_hits.load(Ordering::SeqCst);
    let get =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": "shared-task"}});
    let (_, reply) = request("POST", &a2a, Some(&get), &[]);
    assert_eq!(
        reply["result"]["metadata"]["served_by"], "victim",
        "{reply}"
    );
    let cancel = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"id": "shared-task"}});
    let (_, reply) = request("POST", &a2a, Some(&cancel), &[]);
    assert_eq!(
        reply["result"]["metadata"]["served_by"], "victim",
        "{reply}"
    );
    assert!(victim_hits.load(Ordering::SeqCst) > before);
}

/// A peer answering every stream call with endless events (2 KB each), counting the bytes it
/// wrote, and setting `stopped` when its connection fails (the relay closed it).
fn endless_peer(written: Arc<AtomicU64>, stopped: Arc<AtomicBool>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let (written, stopped) = (written.clone(), stopped.clone());
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                let n = conn.read(&mut buf).unwrap_or(0);
                if buf[..n].starts_with(b"GET") {
                    let _ = conn.write_all(&json_answer("404 Not Found", "{}"));
                    return;
                }
                let event = json!({"jsonrpc": "2.0", "id": "s", "result": {"kind": "status-update",
                    "taskId": "endless", "contextId": "c", "status": {"state": "working"},
                    "final": false, "metadata": {"pad": "x".repeat(2_000)}}});
                let frame = format!("data: {event}\n\n");
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
                );
                let _ = conn.set_write_timeout(Some(Duration::from_millis(500)));
                let until = Instant::now() + Duration::from_secs(60);
                while Instant::now() < until {
                    match conn.write(frame.as_bytes()) {
                        Ok(n) => {
                            written.fetch_add(n as u64, Ordering::SeqCst);
                        }
                        Err(e)
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) => {}
                        Err(_) => break,
                    }
                }
                stopped.store(true, Ordering::SeqCst);
            });
        }
    });
    base
}

#[test]
fn a_stream_to_a_client_that_does_not_read_holds_a_fixed_buffer_and_is_cut() {
    let written = Arc::new(AtomicU64::new(0));
    let stopped = Arc::new(AtomicBool::new(false));
    let peer = endless_peer(written.clone(), stopped.clone());
    let limits = Limits {
        write_timeout: Duration::from_secs(2),
        ..Limits::DEFAULT
    };
    // With the process's drain guard on the stream, as `ddwire relay` runs it.
    let (_relay, server) = relay_with(vec![("S", peer)], limits, |c| {
        c.drain = Some(Drain::new());
    });
    // A client that sends a stream call and never reads a byte of the answer.
    let mut client = TcpStream::connect(server.local_addr()).unwrap();
    let call = json!({"jsonrpc": "2.0", "id": "s", "method": "message/stream", "params": {"message": {
        "kind": "message", "role": "user", "messageId": "m", "parts": [{"kind": "text", "text": "go"}],
        "metadata": {"agent.target": "S"}}}})
    .to_string();
    write!(
        client,
        "POST /a2a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{call}",
        call.len()
    )
    .unwrap();
    // The relay stops reading the peer once its few events and the sockets' buffers are
    // full; the no-progress write limit then ends the client's connection, and the relay
    // closes the peer's.
    let deadline = Instant::now() + Duration::from_secs(40);
    while !stopped.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let bytes = written.load(Ordering::SeqCst);
    assert!(
        stopped.load(Ordering::SeqCst),
        "the relay still reads the peer ({bytes} bytes)"
    );
    // Socket buffers on loopback hold a few MB; the relay itself holds a few events.
    assert!(
        bytes < 64 << 20,
        "the relay read {bytes} bytes for a client that read none"
    );
    drop(client);
}

#[test]
fn a_peer_reply_beyond_the_relays_cap_is_refused_not_buffered() {
    let big = "x".repeat((relay::MAX_REPLY_BYTES + 1024) as usize);
    let (peer, _) = raw_peer(Arc::new(move |method, _, body| {
        if method == "GET" {
            return Some(json_answer("404 Not Found", "{}"));
        }
        let id = serde_json::from_slice::<Value>(body)
            .map(|v| v["id"].clone())
            .unwrap();
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": {"kind": "task", "id": "big",
            "contextId": "c", "status": {"state": "completed"}, "metadata": {"pad": big}}});
        Some(json_answer("200 OK", &reply.to_string()))
    }));
    let (_relay, server) = relay_with(vec![("A", peer)], Limits::DEFAULT, |_| {});
    let call = send_to("A", None, json!({}));
    let (_, reply) = request(
        "POST",
        &format!("{}/a2a", server.base_url()),
        Some(&call),
        &[],
    );
    assert_eq!(
        class_of(&reply),
        (-32014, "peer_invalid_reply".into()),
        "{reply}"
    );
    assert!(
        reply["error"]["message"].to_string().contains("limit"),
        "{reply}"
    );
}
