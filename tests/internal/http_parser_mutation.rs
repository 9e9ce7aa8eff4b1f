//! A seeded mutation test of the HTTP parser, run by `cargo test` so CI keeps what the
//! cargo-fuzz targets (`fuzz/`) found: real requests recorded from the a2a-sdk clients
//! (`fixtures/a2a/`) and hand-written edge cases are mutated ten thousand times with a
//! small xorshift generator (no dependency, the same cases every run), and every result must
//! keep the parser's invariants:
//!
//! - nothing panics;
//! - a head is never longer than its input or its buffer, and every prefix of a complete head
//!   is incomplete (the parser is incremental: bytes arriving in pieces give the same head);
//! - a head's framing is unambiguous: chunked only alone and in HTTP/1.1, one
//!   `Content-Length` at most, one `Host` at most (and one in HTTP/1.1);
//! - a body never exceeds its limit, never consumes more than it is given, and decodes the
//!   same whether its bytes arrive at once or split at random points;
//! - served in memory, a request runs the handler at most once, with a body within the limit,
//!   and the answer parses as one HTTP response.

use ddwire::wire::http::body::BodyReader;
use ddwire::wire::http::chunked::ChunkedDecoder;
use ddwire::wire::http::head::{self, Framing, METHODS};
use ddwire::wire::http::memory::{parse_response, serve_bytes};
use ddwire::wire::http::{BodyError, Handler, Limits, Request, Response};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::rng::Rng;

/// Limits small enough that mutations reach every edge.
const LIMITS: Limits = Limits {
    max_body_bytes: 64,
    max_header_bytes: 384,
    max_headers: 8,
    ..Limits::DEFAULT
};

/// Requests the clients really sent, from the fixtures, plus the grammar's edge cases.
fn seeds() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = vec![
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET /a?b=c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".to_vec(),
        b"HEAD /.well-known/agent-card.json HTTP/1.1\r\nHost: a.test\r\n\r\n".to_vec(),
        b"POST /a2a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n".to_vec(),
        b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}".to_vec(),
        b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"GET http://x:1/p HTTP/1.1\r\nHost: x:1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n".to_vec(),
    ];
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/a2a");
    for file in std::fs::read_dir(fixtures).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            if record["direction"] != "client-request" {
                continue;
            }
            let mut head = b"POST /a2a HTTP/1.1\r\nHost: agent.test\r\n".to_vec();
            for (k, v) in record["headers"].as_object().unwrap() {
                head.extend_from_slice(format!("{k}: {}\r\n", v.as_str().unwrap()).as_bytes());
            }
            let body = record["body"].as_str().unwrap().as_bytes();
            // The body cut to the mutation limits, framed both ways.
            let body = &body[..body.len().min(60)];
            let mut by_length = head.clone();
            by_length
                .extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            by_length.extend_from_slice(body);
            seeds.push(by_length);
            let mut chunked = head;
            chunked.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
            for piece in body.chunks(17) {
                chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                chunked.extend_from_slice(piece);
                chunked.extend_from_slice(b"\r\n");
            }
            chunked.extend_from_slice(b"0\r\n\r\n");
            seeds.push(chunked);
        }
    }
    assert!(seeds.len() > 12, "the fixtures gave no requests");
    seeds
}

const PIECES: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\r",
    b" ",
    b"\t",
    b":",
    b",",
    b";",
    b"0",
    b"f",
    b"-",
    b"+",
    b"\x00",
    b"\xff",
    b"Transfer-Encoding: chunked\r\n",
    b"Content-Length: 3\r\n",
    b"Content-Length: 99999999999999999999\r\n",
    b"Host: y\r\n",
    b"Connection: close\r\n",
    b"Expect: 100-continue\r\n",
    b" HTTP/2.0",
    b"0\r\n\r\n",
    b"ffffffffffffffff\r\n",
];

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(6) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = rng.next() as u8;
            }
            1 if !out.is_empty() => {
                out.remove(rng.below(out.len()));
            }
            2 => {
                let piece = PIECES[rng.below(PIECES.len())];
                out.splice(at..at, piece.iter().copied());
            }
            3 => out.truncate(at),
            4 if !out.is_empty() => {
                let from = rng.below(out.len());
                let to = (from + rng.below(32)).min(out.len());
                let copy = out[from..to].to_vec();
                out.splice(at..at, copy);
            }
            _ => {
                let piece = PIECES[rng.below(PIECES.len())];
                let end = (at + piece.len()).min(out.len());
                out.splice(at..end, piece.iter().copied());
            }
        }
    }
    out
}

fn check_head(input: &[u8], rng: &mut Rng) -> Option<head::RequestHead> {
    let parsed = head::parse_request(input, &LIMITS);
    let Ok(Some(h)) = parsed else {
        if let Err(e) = &parsed {
            assert!(matches!(e.status(), 400 | 417 | 431 | 501 | 505), "{e:?}");
        }
        return None;
    };
    assert!(
        h.len <= input.len() && h.len <= LIMITS.max_header_bytes,
        "{h:?}"
    );
    assert!(METHODS.contains(&h.method));
    assert!(h.path.is_ascii() && h.query.is_ascii());
    assert!(h.headers.len() <= LIMITS.max_headers);
    assert!(
        h.headers
            .iter()
            .all(|(n, _)| !n.bytes().any(|b| b.is_ascii_uppercase()))
    );
    let count = |name: &str| h.headers.iter().filter(|(n, _)| n == name).count();
    assert!(count("host") <= 1);
    if h.version == head::Version::Http11 {
        assert_eq!(count("host"), 1);
    }
    match h.framing {
        Framing::Chunked => {
            assert_eq!(count("content-length"), 0);
            assert_eq!(h.version, head::Version::Http11);
        }
        Framing::Length(_) => {
            assert_eq!(count("content-length"), 1);
            assert_eq!(count("transfer-encoding"), 0);
        }
        Framing::Empty => {
            assert_eq!(count("content-length") + count("transfer-encoding"), 0);
        }
        Framing::UntilClose => panic!("a request is never delimited by closing"),
    }
    // Incremental: the head is incomplete at any earlier cut.
    for _ in 0..3 {
        let cut = rng.below(h.len);
        assert_eq!(
            head::parse_request(&input[..cut], &LIMITS),
            Ok(None),
            "cut {cut} of {:?}",
            String::from_utf8_lossy(input)
        );
    }
    Some(h)
}

/// Feed `input` to a reader in pieces split at `cuts`: (body, consumed, done) or the error.
fn read_body(
    framing: Framing,
    input: &[u8],
    cuts: &[usize],
) -> Result<(Vec<u8>, usize, bool), BodyError> {
    let mut reader = BodyReader::new(framing, LIMITS.max_body_bytes)?;
    let mut body = Vec::new();
    let mut consumed = 0;
    let mut from = 0;
    for &to in cuts.iter().chain(std::iter::once(&input.len())) {
        let to = to.max(from).min(input.len());
        let fed = reader.feed(&input[from..to], &mut body)?;
        assert!(fed.consumed <= to - from);
        consumed += fed.consumed;
        if fed.done {
            return Ok((body, consumed, true));
        }
        assert_eq!(fed.consumed, to - from, "stopped early without being done");
        from = to;
    }
    Ok((body, consumed, false))
}

fn check_body(framing: Framing, input: &[u8], rng: &mut Rng) {
    let whole = read_body(framing, input, &[]);
    let mut cuts: Vec<usize> = (0..rng.below(5))
        .map(|_| rng.below(input.len() + 1))
        .collect();
    cuts.sort_unstable();
    let split = read_body(framing, input, &cuts);
    assert_eq!(
        whole,
        split,
        "cuts {cuts:?} of {:?}",
        String::from_utf8_lossy(input)
    );
    if let Ok((body, consumed, _)) = whole {
        assert!(body.len() <= LIMITS.max_body_bytes);
        assert!(consumed <= input.len());
    }
}

#[test]
fn mutated_requests_never_break_the_parsers_invariants() {
    const CASES: usize = 10_000;
    let seeds = seeds();
    let calls = Arc::new(AtomicUsize::new(0));
    let handler: Handler = {
        let calls = Arc::clone(&calls);
        Arc::new(move |r: Request| {
            calls.fetch_add(1, Ordering::SeqCst);
            assert!(r.body.len() <= LIMITS.max_body_bytes);
            match r.body_error {
                Some(e) => Response::error(e.status(), &e.to_string()),
                None => Response::bytes(200, "text/plain", r.body),
            }
        })
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut heads, mut served) = (0, 0);
    for case in 0..CASES {
        let seed = &seeds[case % seeds.len()];
        let input = mutate(&mut rng, seed);
        if let Some(h) = check_head(&input, &mut rng) {
            heads += 1;
            check_body(h.framing, &input[h.len..], &mut rng);
        }
        // The chunked decoder alone, on whatever follows the first blank line.
        let tail = input
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(&input[..], |i| &input[i + 4..]);
        check_body(Framing::Chunked, tail, &mut rng);

        let before = calls.load(Ordering::SeqCst);
        let out = serve_bytes(&handler, &input, &LIMITS);
        let after = calls.load(Ordering::SeqCst);
        assert!(after - before <= 1);
        served += after - before;
        let method = if input.starts_with(b"HEAD ") {
            "HEAD"
        } else {
            "GET"
        };
        let response = parse_response(&out, method)
            .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&out)));
        assert!((200..600).contains(&response.status));
    }
    eprintln!("{heads} heads parsed, {served} requests served of {CASES} mutations");
    // The mutations reach both sides: accepted requests and refused ones.
    assert!(
        heads > 1000 && served > 1000,
        "{heads} heads, {served} served"
    );
    assert!(served < CASES);
}

#[test]
fn random_bytes_never_break_the_chunked_decoder() {
    let mut rng = Rng(42);
    let alphabet = b"0123456789abcdefABCDEF;= \t\r\n:xX\x00\xff";
    for _ in 0..3000 {
        let len = rng.below(64);
        let input: Vec<u8> = (0..len)
            .map(|_| alphabet[rng.below(alphabet.len())])
            .collect();
        let mut decoder = ChunkedDecoder::new(16);
        let mut out = Vec::new();
        if let Ok(d) = decoder.decode(&input, &mut out) {
            assert!(d.consumed <= input.len());
            assert!(out.len() <= 16);
            assert_eq!(d.done, decoder.is_done());
        }
        check_body(Framing::Chunked, &input, &mut rng);
    }
}
