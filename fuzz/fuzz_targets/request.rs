//! The request parser, end to end: head, framing, body, and the in-memory server around
//! them. The first byte picks the limits and where the input is split; the rest is the
//! request. Every invariant of `tests/http_parser_mutation.rs` is asserted here too.
#![no_main]

use ddwire::wire::http::body::BodyReader;
use ddwire::wire::http::head::{self, Framing, METHODS};
use ddwire::wire::http::memory::{parse_response, serve_bytes};
use ddwire::wire::http::{Handler, Limits, Request, Response};
use libfuzzer_sys::fuzz_target;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

static CALLS: AtomicUsize = AtomicUsize::new(0);
static HANDLER: LazyLock<Handler> = LazyLock::new(|| {
    Arc::new(|r: Request| {
        CALLS.fetch_add(1, Ordering::SeqCst);
        match r.body_error {
            Some(e) => Response::error(e.status(), &e.to_string()),
            None => Response::bytes(200, "application/octet-stream", r.body),
        }
    })
});

fn limits(selector: u8) -> Limits {
    Limits {
        max_body_bytes: [0, 1, 16, 4096][usize::from(selector & 3)],
        max_header_bytes: [64, 512, 16 * 1024][usize::from((selector >> 2) % 3)],
        max_headers: [1, 8, 64][usize::from((selector >> 4) % 3)],
        ..Limits::DEFAULT
    }
}

/// Feed a body reader `input` split at `cut`; (body, consumed, done) or the error.
fn read(
    framing: Framing,
    limit: usize,
    input: &[u8],
    cut: usize,
) -> Option<(Vec<u8>, usize, bool)> {
    let mut reader = BodyReader::new(framing, limit).ok()?;
    let mut body = Vec::new();
    let cut = cut.min(input.len());
    let first = reader.feed(&input[..cut], &mut body).ok()?;
    assert!(first.consumed <= cut);
    if first.done {
        return Some((body, first.consumed, true));
    }
    assert_eq!(first.consumed, cut);
    let second = reader.feed(&input[cut..], &mut body).ok()?;
    assert!(second.consumed <= input.len() - cut);
    Some((body, cut + second.consumed, second.done))
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let limits = limits(selector);
    if let Ok(Some(h)) = head::parse_request(input, &limits) {
        assert!(h.len <= input.len() && h.len <= limits.max_header_bytes);
        assert!(METHODS.contains(&h.method));
        assert!(h.path.is_ascii() && h.query.is_ascii());
        let count = |name: &str| h.headers.iter().filter(|(n, _)| n == name).count();
        assert!(count("host") <= 1);
        match h.framing {
            Framing::Chunked => assert_eq!(count("content-length"), 0),
            Framing::Length(_) => assert_eq!(count("content-length"), 1),
            Framing::Empty => assert_eq!(count("content-length") + count("transfer-encoding"), 0),
            Framing::UntilClose => panic!("a request delimited by closing"),
        }
        let cut = usize::from(selector) * 7 % h.len.max(1);
        assert_eq!(head::parse_request(&input[..cut], &limits), Ok(None));
        let rest = &input[h.len..];
        let whole = read(h.framing, limits.max_body_bytes, rest, rest.len());
        let split = read(
            h.framing,
            limits.max_body_bytes,
            rest,
            usize::from(selector) % (rest.len() + 1),
        );
        assert_eq!(whole, split);
        if let Some((body, consumed, _)) = whole {
            assert!(body.len() <= limits.max_body_bytes && consumed <= rest.len());
        }
    }
    let before = CALLS.load(Ordering::SeqCst);
    let out = serve_bytes(&HANDLER, input, &limits);
    assert!(CALLS.load(Ordering::SeqCst) - before <= 1);
    let method = if input.starts_with(b"HEAD ") {
        "HEAD"
    } else {
        "GET"
    };
    let response = parse_response(&out, method).expect("the server's answer parses");
    assert!((200..600).contains(&response.status));
});
