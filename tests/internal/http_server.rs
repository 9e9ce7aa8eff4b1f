//! ddwire's HTTP/1.1 server over loopback TCP, probed as an attacker would: every probe that
//! broke the tiny_http server (the Server issue), every limit in `docs/limits.md`, and the
//! framing rules of RFC 9112 that keep a request from being smuggled.
//!
//! Each test starts its own server on a free port, talks raw bytes to it with a read timeout
//! on every socket, and stops it. Time bounds are generous (the machine may be loaded) but
//! still prove the bound: a 1 s service bound is checked against a server that is holding
//! hundreds of hostile connections, a 10 s deadline against what a per-read timeout would
//! allow (forever).

use super::raw_http;

use ddwire::agent::builtin::Hello;
use ddwire::wire::http::server::{self, Server};
use ddwire::wire::http::{Handler, Limits, Request, Response};
use raw_http::read_response;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every socket read in these tests waits at most this long.
const T: Duration = Duration::from_secs(10);
const SMUGGLED: &str = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";

/// A server whose handler records every call as "METHOD /path", and answers:
/// `/big` with 8 MiB, `/hang` after `hang` is released (or 30 s), anything else with the
/// body's length; a refused body with its own status.
struct Probe {
    server: Server,
    calls: Arc<Mutex<Vec<String>>>,
    hang: Arc<AtomicBool>,
}

impl Probe {
    fn new(limits: Limits) -> Probe {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let hang = Arc::new(AtomicBool::new(true));
        let handler: Handler = {
            let (calls, hang) = (Arc::clone(&calls), Arc::clone(&hang));
            Arc::new(move |r: Request| {
                calls
                    .lock()
                    .unwrap()
                    .push(format!("{} {}", r.method, r.path));
                if let Some(e) = &r.body_error {
                    return Response::error(e.status(), &e.to_string());
                }
                match r.path.as_str() {
                    "/big" => Response::bytes(200, "text/plain", vec![b'x'; 8 << 20]),
                    "/hang" => {
                        let until = Instant::now() + Duration::from_secs(30);
                        while hang.load(Ordering::SeqCst) && Instant::now() < until {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Response::empty(204)
                    }
                    _ => Response::bytes(
                        200,
                        "text/plain",
                        format!("{} {} {}", r.method, r.path, r.body.len()).into_bytes(),
                    ),
                }
            })
        };
        let server = server::serve("127.0.0.1:0", handler, limits).unwrap();
        Probe {
            server,
            calls,
            hang,
        }
    }

    fn addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.hang.store(false, Ordering::SeqCst);
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    s.set_write_timeout(Some(T)).unwrap();
    s
}

/// What came back on a connection: the bytes until the server closed it (or `wait` passed).
struct Reply {
    text: String,
    closed: bool,
}

impl Reply {
    /// The status of every response, in order.
    fn statuses(&self) -> Vec<u16> {
        let mut out = Vec::new();
        let mut rest = self.text.as_str();
        while let Some(i) = rest.find("HTTP/1.1 ") {
            let at_start = i == 0 || rest[..i].ends_with('\n') || rest[..i].ends_with('}');
            if at_start && let Some(Ok(code)) = rest.get(i + 9..i + 12).map(str::parse) {
                out.push(code);
            }
            rest = &rest[i + 9..];
        }
        out
    }
}

/// Read until the server closes the connection or `wait` passes.
fn read_reply(s: &mut TcpStream, wait: Duration) -> Reply {
    let until = Instant::now() + wait;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 65536];
    let closed = loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break false;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut chunk) {
            Ok(0) => break true,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break false;
            }
            // A reset after the answer counts as closed.
            Err(_) => break true,
        }
    };
    Reply {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        closed,
    }
}

/// Send `bytes` on a new connection and read what comes back until it closes (5 s at most).
fn exchange(addr: SocketAddr, bytes: &[u8]) -> Reply {
    let mut s = connect(addr);
    s.write_all(bytes).unwrap();
    read_reply(&mut s, Duration::from_secs(5))
}

/// A fresh connection's GET, timed: (status, how long it took).
fn timed_get(addr: SocketAddr, path: &str) -> (u16, Duration) {
    let started = Instant::now();
    let mut s = connect(addr);
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let (status, _, _) = read_response(&mut s);
    (status, started.elapsed())
}

/// Probe a legitimate client every `every` until `stop`, asserting each is served within
/// 1 s; returns the slowest.
fn legit_client_stays_served(addr: SocketAddr, path: &str, for_: Duration) -> Duration {
    let until = Instant::now() + for_;
    let mut slowest = Duration::ZERO;
    let mut probes = 0;
    while Instant::now() < until {
        let (status, took) = timed_get(addr, path);
        assert_eq!(status, 200);
        assert!(
            took < Duration::from_secs(1),
            "a legitimate GET took {took:?}"
        );
        slowest = slowest.max(took);
        probes += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(probes >= 3);
    slowest
}

// --- Framing: nothing smuggled -------------------------------------------------------------

#[test]
fn no_ambiguous_framing_ever_executes_a_smuggled_request() {
    let probe = Probe::new(Limits::DEFAULT);
    let long = "y".repeat(20_000);
    let cases: Vec<(&str, String, u16)> = vec![
        (
            "two Content-Lengths, different",
            format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: {}\r\n\r\n{SMUGGLED}", SMUGGLED.len()),
            400,
        ),
        (
            "two Content-Lengths, equal",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n".to_string() + SMUGGLED,
            400,
        ),
        (
            "Content-Length with Transfer-Encoding",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_string() + SMUGGLED,
            400,
        ),
        (
            "Transfer-Encoding with Content-Length",
            format!("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: {}\r\n\r\n0\r\n\r\n{SMUGGLED}", 5 + SMUGGLED.len()),
            400,
        ),
        (
            "Transfer-Encoding: xchunked",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n".to_string() + SMUGGLED,
            400,
        ),
        (
            "Transfer-Encoding: chunked, identity",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n".to_string() + SMUGGLED,
            400,
        ),
        (
            "Transfer-Encoding in HTTP/1.0",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n0\r\n\r\n".to_string() + SMUGGLED,
            400,
        ),
        (
            "Transfer-Encoding folded onto a second line",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n".to_string() + SMUGGLED,
            400,
        ),
        (
            "a space before the colon",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n".to_string() + SMUGGLED,
            400,
        ),
        (
            "a chunk size with a bare LF",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\n\r\n".to_string() + SMUGGLED,
            400,
        ),
        (
            "a chunk longer than its size",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n".to_string() + SMUGGLED,
            400,
        ),
        (
            "a 400 with Connection: close, then a request",
            "GET / HTTP/1.1\nHost: x\n\n".to_string() + SMUGGLED,
            400,
        ),
        (
            "a 431 with Connection: close, then a request",
            format!("GET / HTTP/1.1\r\nHost: x\r\nX: {long}\r\n\r\n{SMUGGLED}"),
            431,
        ),
    ];
    let mut cases = cases;
    for bad in ["-1", "abc", "+2", "2, 2", " 0x2", "2 2"] {
        cases.push((
            "an invalid Content-Length",
            format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {bad}\r\n\r\nxx{SMUGGLED}"),
            400,
        ));
    }
    for (what, bytes, status) in &cases {
        let reply = exchange(probe.addr(), bytes.as_bytes());
        assert_eq!(reply.statuses(), vec![*status], "{what}: {}", reply.text);
        assert!(
            reply.text.contains("Connection: close\r\n"),
            "{what}: {}",
            reply.text
        );
        assert!(reply.closed, "{what}: the connection stayed open");
        assert!(reply.text.contains("\"error\""), "{what}: no reason given");
    }
    assert_eq!(probe.calls(), Vec::<String>::new(), "the handler ran");
}

#[test]
fn nothing_is_read_after_a_response_that_closes_the_connection() {
    let probe = Probe::new(Limits::DEFAULT);
    let bytes =
        "GET /first HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string() + SMUGGLED;
    let reply = exchange(probe.addr(), bytes.as_bytes());
    assert_eq!(reply.statuses(), vec![200], "{}", reply.text);
    assert!(reply.closed);
    assert_eq!(probe.calls(), vec!["GET /first".to_string()]);
}

#[test]
fn a_body_cut_short_by_eof_is_never_a_request() {
    let probe = Probe::new(Limits::DEFAULT);
    for bytes in [
        &b"POST /cut HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"[..],
        b"POST /cut HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n",
        b"POST /cut HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n",
        b"POST /cut HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc",
    ] {
        let mut s = connect(probe.addr());
        s.write_all(bytes).unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let reply = read_reply(&mut s, Duration::from_secs(5));
        assert!(reply.closed, "{bytes:?}");
        assert_eq!(reply.statuses(), Vec::<u16>::new(), "{}", reply.text);
    }
    assert_eq!(probe.calls(), Vec::<String>::new());
}

// --- The request line and header fields ----------------------------------------------------

#[test]
fn malformed_heads_get_their_status_and_a_reason_at_once() {
    let probe = Probe::new(Limits::DEFAULT);
    let cases: &[(&[u8], u16, &str)] = &[
        (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "HTTP/2.0"),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "HTTP/2.0"),
        (b"GET / HTTP/1.1\nHost: x\n\n", 400, "CRLF"),
        (b"GET /caf\xff HTTP/1.1\r\nHost: x\r\n\r\n", 400, "0xff"),
        (b"get / HTTP/1.1\r\nHost: x\r\n\r\n", 501, "case-sensitive"),
        (
            b"BREW / HTTP/1.1\r\nHost: x\r\n\r\n",
            501,
            "not implemented",
        ),
        (b"GET / HTTP/1.1\r\n\r\n", 400, "Host"),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            400,
            "more than one Host",
        ),
        (
            b"GET  / HTTP/1.1\r\nHost: x\r\n\r\n",
            400,
            "malformed request line",
        ),
        (
            b"GET / HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n",
            400,
            "malformed header",
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nExpect: tea\r\n\r\n",
            417,
            "100-continue",
        ),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            501,
            "gzip",
        ),
    ];
    for (bytes, status, reason) in cases {
        let started = Instant::now();
        let reply = exchange(probe.addr(), bytes);
        assert_eq!(reply.statuses(), vec![*status], "{bytes:?}: {}", reply.text);
        assert!(reply.text.contains(reason), "{bytes:?}: {}", reply.text);
        assert!(reply.closed);
        // Answered, not left to a timeout.
        assert!(started.elapsed() < Duration::from_secs(3), "{bytes:?}");
    }
    assert_eq!(probe.calls(), Vec::<String>::new());
}

#[test]
fn head_is_answered_wherever_get_is_with_the_same_head_and_no_body() {
    let hello = ddwire::agent::server::serve(Arc::new(Hello::new()), "127.0.0.1:0", None).unwrap();
    let card = "/.well-known/agent-card.json";
    let get = exchange(
        hello.local_addr(),
        format!("GET {card} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    let head = exchange(
        hello.local_addr(),
        format!("HEAD {card} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    let split = |text: &str| {
        let (h, b) = text.split_once("\r\n\r\n").unwrap();
        let fields: Vec<String> = h
            .lines()
            .filter(|l| !l.starts_with("Date:"))
            .map(str::to_string)
            .collect();
        (fields, b.to_string())
    };
    let (get_fields, get_body) = split(&get.text);
    let (head_fields, head_body) = split(&head.text);
    assert_eq!(get_fields, head_fields);
    assert!(get_fields[0].starts_with("HTTP/1.1 200"), "{get_fields:?}");
    assert!(get_body.len() > 100);
    assert_eq!(head_body, "");
    assert!(head.closed);
    hello.shutdown();
}

#[test]
fn pipelined_requests_are_answered_in_order_on_one_connection() {
    let probe = Probe::new(Limits::DEFAULT);
    let mut s = connect(probe.addr());
    s.write_all(
        b"GET /1 HTTP/1.1\r\nHost: x\r\n\r\nPOST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc\
          POST /3 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n\
          HEAD /4 HTTP/1.1\r\nHost: x\r\n\r\nGET /5 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    )
    .unwrap();
    let mut bodies = Vec::new();
    for _ in 0..3 {
        let (status, head, body) = read_response(&mut s);
        assert_eq!(status, 200);
        assert!(!head.contains("Connection: close"), "{head}");
        bodies.push(String::from_utf8(body).unwrap());
    }
    assert_eq!(bodies, ["GET /1 0", "POST /2 3", "POST /3 2"]);
    // HEAD: the length a GET would have, and no body before the next response.
    let (status, head, _) = {
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut byte).unwrap();
            buf.push(byte[0]);
        }
        (200, String::from_utf8(buf).unwrap(), ())
    };
    assert_eq!(status, 200);
    assert!(head.contains("Content-Length: 8\r\n"), "{head}");
    let (status, head, body) = read_response(&mut s);
    assert_eq!((status, body.as_slice()), (200, &b"GET /5 0"[..]));
    assert!(head.contains("Connection: keep-alive\r\n"), "{head}");
    assert_eq!(
        probe.calls(),
        ["GET /1", "POST /2", "POST /3", "GET /4", "GET /5"]
    );
}

#[test]
fn expect_100_continue_gets_an_interim_response_before_the_body() {
    let probe = Probe::new(Limits::DEFAULT);
    let mut s = connect(probe.addr());
    s.write_all(
        b"POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n",
    )
    .unwrap();
    let mut interim = [0u8; 25];
    s.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(b"body").unwrap();
    let (status, _, body) = read_response(&mut s);
    assert_eq!((status, body.as_slice()), (200, &b"POST /e 4"[..]));
}

// --- Limits: each bound proved ------------------------------------------------------------

/// A head of exactly `len` bytes, complete (ending in the blank line) or not.
fn head_of(len: usize, complete: bool) -> Vec<u8> {
    let mut bytes = b"GET /h HTTP/1.1\r\nHost: x\r\nX-Pad: ".to_vec();
    let end: &[u8] = if complete { b"\r\n\r\n" } else { b"" };
    bytes.resize(len - end.len(), b'p');
    bytes.extend_from_slice(end);
    bytes
}

#[test]
fn a_head_that_fills_the_16_kib_buffer_is_431_at_once_without_another_byte() {
    let probe = Probe::new(Limits::DEFAULT);
    assert_eq!(Limits::DEFAULT.max_header_bytes, 16 * 1024);
    let mut s = connect(probe.addr());
    // Exactly the buffer, no line end: the server decides on these bytes alone.
    s.write_all(&head_of(16 * 1024, false)).unwrap();
    let reply = read_reply(&mut s, Duration::from_secs(5));
    assert_eq!(reply.statuses(), vec![431], "{}", reply.text);
    assert!(reply.text.contains("16384 bytes"), "{}", reply.text);
    assert!(reply.closed);
    assert!(probe.calls().is_empty());
}

#[test]
fn a_head_of_exactly_16_kib_is_served_and_one_byte_less_waits_for_more() {
    let probe = Probe::new(Limits::DEFAULT);
    let head = head_of(16 * 1024, true);
    let mut s = connect(probe.addr());
    s.write_all(&head[..head.len() - 1]).unwrap();
    // Incomplete and within the buffer: no answer yet.
    let early = read_reply(&mut s, Duration::from_millis(500));
    assert!(early.text.is_empty() && !early.closed, "{}", early.text);
    s.write_all(&head[head.len() - 1..]).unwrap();
    let (status, _, body) = read_response(&mut s);
    assert_eq!((status, body.as_slice()), (200, &b"GET /h 0"[..]));
}

#[test]
fn sixty_four_header_fields_are_served_and_sixty_five_are_431() {
    let probe = Probe::new(Limits::DEFAULT);
    let with = |fields: usize| {
        let mut head = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n".to_string();
        for i in 2..fields {
            head.push_str(&format!("X-{i}: {i}\r\n"));
        }
        head.push_str("\r\n");
        exchange(probe.addr(), head.as_bytes()).statuses()
    };
    assert_eq!(with(64), vec![200]);
    assert_eq!(with(65), vec![431]);
}

#[test]
fn a_body_of_4_mib_is_served_and_one_byte_more_is_413_before_it_is_sent() {
    let probe = Probe::new(Limits::DEFAULT);
    let limit = Limits::DEFAULT.max_body_bytes;
    assert_eq!(limit, 4 << 20);
    let mut s = connect(probe.addr());
    s.write_all(
        format!("POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: {limit}\r\n\r\n").as_bytes(),
    )
    .unwrap();
    s.write_all(&vec![b'b'; limit]).unwrap();
    let (status, _, body) = read_response(&mut s);
    assert_eq!(
        (status, String::from_utf8(body).unwrap()),
        (200, format!("POST /b {limit}"))
    );
    // One byte over, declared: refused without sending a byte of the body.
    let over = format!(
        "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        limit + 1
    );
    let reply = exchange(probe.addr(), over.as_bytes());
    assert_eq!(reply.statuses(), vec![413], "{}", reply.text);
    assert!(reply.text.contains("4194304"));
    assert!(reply.closed);
    // One byte over, chunked: refused as soon as the chunk size says so.
    let chunked = format!(
        "POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
        limit + 1
    );
    let reply = exchange(probe.addr(), chunked.as_bytes());
    assert_eq!(reply.statuses(), vec![413], "{}", reply.text);
}

#[test]
fn a_head_dripped_byte_by_byte_is_408_at_the_head_deadline_not_later() {
    let limits = Limits {
        head_timeout: Duration::from_millis(1500),
        ..Limits::DEFAULT
    };
    let probe = Probe::new(limits);
    let mut s = connect(probe.addr());
    let started = Instant::now();
    // Steady progress every 100 ms: a per-read timeout would never fire.
    let mut answer = None;
    for b in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: "
        .iter()
        .chain([b'a'; 200].iter())
    {
        if s.write_all(&[*b]).is_err() {
            break;
        }
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut buf = [0u8; 4096];
        if let Ok(n) = s.read(&mut buf)
            && n > 0
        {
            answer = Some((
                String::from_utf8_lossy(&buf[..n]).into_owned(),
                started.elapsed(),
            ));
            break;
        }
    }
    let (text, at) = answer.expect("an answer while dripping");
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(at >= Duration::from_millis(1500), "answered after {at:?}");
    assert!(at < Duration::from_millis(4500), "answered after {at:?}");
    // A connection that sends nothing is closed quietly at the same deadline.
    let mut idle = connect(probe.addr());
    let started = Instant::now();
    let reply = read_reply(&mut idle, Duration::from_secs(6));
    assert!(reply.closed && reply.text.is_empty(), "{}", reply.text);
    assert!(started.elapsed() >= Duration::from_millis(1400));
}

#[test]
fn a_body_dripped_byte_by_byte_is_408_at_the_body_deadline() {
    let limits = Limits {
        body_timeout: Duration::from_millis(1500),
        ..Limits::DEFAULT
    };
    let probe = Probe::new(limits);
    let mut s = connect(probe.addr());
    s.write_all(b"POST /drip HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        .unwrap();
    let started = Instant::now();
    let mut text = String::new();
    for _ in 0..100 {
        if s.write_all(b"d").is_err() {
            break;
        }
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut buf = [0u8; 4096];
        if let Ok(n) = s.read(&mut buf)
            && n > 0
        {
            text = String::from_utf8_lossy(&buf[..n]).into_owned();
            break;
        }
    }
    let at = started.elapsed();
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("did not arrive within 1.5 s"), "{text}");
    assert!(
        at >= Duration::from_millis(1500) && at < Duration::from_millis(4500),
        "{at:?}"
    );
}

#[test]
fn a_kept_alive_connection_is_closed_after_the_idle_timeout() {
    let limits = Limits {
        idle_timeout: Duration::from_millis(700),
        ..Limits::DEFAULT
    };
    let probe = Probe::new(limits);
    let mut s = connect(probe.addr());
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    read_response(&mut s);
    let started = Instant::now();
    let reply = read_reply(&mut s, Duration::from_secs(5));
    assert!(reply.closed && reply.text.is_empty());
    let after = started.elapsed();
    assert!(
        after >= Duration::from_millis(600) && after < Duration::from_secs(4),
        "{after:?}"
    );
}

#[test]
fn past_the_connection_cap_a_connection_gets_503_and_is_closed() {
    let limits = Limits {
        max_connections: 4,
        ..Limits::DEFAULT
    };
    let probe = Probe::new(limits);
    let held: Vec<TcpStream> = (0..4).map(|_| connect(probe.addr())).collect();
    let deadline = Instant::now() + T;
    while probe.server.connections() < 4 {
        assert!(
            Instant::now() < deadline,
            "the four connections never counted"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let reply = exchange(probe.addr(), b"GET /fifth HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(reply.statuses(), vec![503], "{}", reply.text);
    assert!(
        reply.text.contains("limit of 4 connections"),
        "{}",
        reply.text
    );
    assert!(reply.text.contains("Retry-After: 1\r\n"));
    assert!(reply.closed);
    drop(held);
    // Once they have gone, connections are served again.
    let deadline = Instant::now() + T;
    loop {
        let reply = exchange(
            probe.addr(),
            b"GET /again HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        if reply.statuses() == vec![200] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never served again: {}",
            reply.text
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(probe.calls(), ["GET /again"]);
}

#[test]
fn a_client_that_never_reads_is_dropped_at_the_write_timeout_and_frees_its_slot() {
    let limits = Limits {
        max_connections: 1,
        write_timeout: Duration::from_millis(1000),
        ..Limits::DEFAULT
    };
    let probe = Probe::new(limits);
    let mut stuck = connect(probe.addr());
    stuck
        .write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let started = Instant::now();
    // The slot is held while the server is blocked writing 8 MiB nobody reads...
    let deadline = Instant::now() + T;
    while probe.calls().is_empty() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    let busy = exchange(probe.addr(), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(busy.statuses(), vec![503], "{}", busy.text);
    // ...and freed once a write has made no progress for the write timeout.
    let deadline = Instant::now() + T;
    loop {
        let reply = exchange(
            probe.addr(),
            b"GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        if reply.statuses() == vec![200] {
            break;
        }
        assert!(Instant::now() < deadline, "the slot was never freed");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(started.elapsed() >= Duration::from_millis(1000));
    drop(stuck);
}

// --- Probes: nobody starves -------------------------------------------------------------

#[test]
fn a_legitimate_client_is_served_within_1s_during_300_slowloris_connections() {
    // Default limits (the 10 s head deadline is the one `docs/limits.md` states), but for the
    // per-client cap: every connection here comes from 127.0.0.1, standing for 300 clients.
    // (One client holding many is `tests/internal/guard_memory.rs`.)
    let probe = Probe::new(Limits {
        max_connections_per_client: Limits::DEFAULT.max_connections,
        ..Limits::DEFAULT
    });
    assert_eq!(Limits::DEFAULT.head_timeout, Duration::from_secs(10));
    let started = Instant::now();
    let mut lorises: Vec<TcpStream> = (0..300).map(|_| connect(probe.addr())).collect();
    let prefix = b"GET / HTTP/1.1\r\nHost: x\r\nX-Loris: ";
    let dripping = Arc::new(AtomicBool::new(true));
    let dripper = {
        let dripping = Arc::clone(&dripping);
        let mut socks: Vec<TcpStream> = lorises.iter().map(|s| s.try_clone().unwrap()).collect();
        std::thread::spawn(move || {
            let mut i = 0;
            while dripping.load(Ordering::SeqCst) {
                let byte = prefix.get(i).copied().unwrap_or(b'z');
                for s in &mut socks {
                    let _ = s.write_all(&[byte]);
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(250));
            }
        })
    };
    let deadline = Instant::now() + T;
    while probe.server.connections() < 300 {
        assert!(
            Instant::now() < deadline,
            "only {} connections",
            probe.server.connections()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let slowest = legit_client_stays_served(probe.addr(), "/healthz", Duration::from_secs(7));
    eprintln!("300 slowloris connections: slowest legitimate GET {slowest:?}");
    // Each loris is answered 408 at the head deadline, however steadily it drips.
    for s in &mut lorises {
        let reply = read_reply(s, Duration::from_secs(10));
        assert_eq!(reply.statuses(), vec![408], "{}", reply.text);
        assert!(reply.closed);
    }
    let at = started.elapsed();
    assert!(
        at >= Duration::from_secs(10) && at < Duration::from_secs(16),
        "{at:?}"
    );
    dripping.store(false, Ordering::SeqCst);
    dripper.join().unwrap();
    let calls = probe.calls();
    assert!(calls.iter().all(|c| c == "GET /healthz"), "{calls:?}");
}

#[test]
fn a_legitimate_client_is_served_within_1s_during_16_body_drippers() {
    let limits = Limits {
        body_timeout: Duration::from_secs(4),
        ..Limits::DEFAULT
    };
    let probe = Probe::new(limits);
    let mut drippers: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut s = connect(probe.addr());
            s.write_all(b"POST /drip HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    let dripping = Arc::new(AtomicBool::new(true));
    let dripper = {
        let dripping = Arc::clone(&dripping);
        let mut socks: Vec<TcpStream> = drippers.iter().map(|s| s.try_clone().unwrap()).collect();
        std::thread::spawn(move || {
            while dripping.load(Ordering::SeqCst) {
                for s in &mut socks {
                    let _ = s.write_all(b"d");
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let slowest = legit_client_stays_served(probe.addr(), "/healthz", Duration::from_secs(3));
    eprintln!("16 body drippers: slowest legitimate GET {slowest:?}");
    for s in &mut drippers {
        let reply = read_reply(s, Duration::from_secs(8));
        assert_eq!(reply.statuses(), vec![408], "{}", reply.text);
    }
    dripping.store(false, Ordering::SeqCst);
    dripper.join().unwrap();
}

#[test]
fn a_legitimate_client_is_served_within_1s_while_16_clients_never_read_a_large_reply() {
    let probe = Probe::new(Limits::DEFAULT);
    let stuck: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut s = connect(probe.addr());
            s.write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    let deadline = Instant::now() + T;
    while probe.calls().len() < 16 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    let slowest = legit_client_stays_served(probe.addr(), "/healthz", Duration::from_secs(2));
    eprintln!("16 clients not reading 8 MiB: slowest legitimate GET {slowest:?}");
    drop(stuck);
}

#[test]
fn a_legitimate_client_is_served_within_1s_during_16_calls_that_hang() {
    let probe = Probe::new(Limits::DEFAULT);
    let hung: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut s = connect(probe.addr());
            s.write_all(b"GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    let deadline = Instant::now() + T;
    while probe.calls().len() < 16 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    let slowest = legit_client_stays_served(probe.addr(), "/healthz", Duration::from_secs(2));
    eprintln!("16 hung calls: slowest legitimate GET {slowest:?}");
    drop(hung);
}
