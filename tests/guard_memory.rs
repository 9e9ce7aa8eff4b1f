//! The guards against memory and connections out of proportion to a request, each over
//! loopback HTTP: the JSON reader's element budget, the budget for bodies in flight, the
//! per-client connection limit, the wire log's cap per message, and a `--tokens` harness
//! refusing an unauthenticated body before parsing it.

use ddwire::agent::builtin::Hello;
use ddwire::wire::http::Limits;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
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
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = s
            .read(&mut byte)
            .expect("a response head before the timeout");
        assert_eq!(
            n,
            1,
            "EOF inside a head: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0; length];
    s.read_exact(&mut body).unwrap();
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
