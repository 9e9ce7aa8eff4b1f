//! No hand-written parser panics on hostile text: each is fed valid samples with a multi-byte
//! or control character put at (and in place of) every position, and cut at every character
//! boundary. A parser may refuse any of them, but must answer: a panic fails the test and names
//! the parser and the input. (Byte-slicing a string through a character is the panic the
//! issue found in `traceparent`; this sweep keeps every parser honest about it.)
//!
//! A white-box test (see `mod.rs`): most of these parsers are private.

use ddwire::contract::InvocationRequest;
use ddwire::contract::formats::is_sha256_hex;
use ddwire::contract::pattern::Regex;
use ddwire::harness::identity::Authenticator;
use ddwire::ids::is_uuid7;
use ddwire::trace::{SpanContext, TraceState};
use ddwire::wire::sign::{Direction, Key, Signable, Verifier};
use serde_json::Value;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Characters that break byte-indexed code: two-, three- and four-byte UTF-8, a combining
/// mark, NUL, a line break.
const HOSTILE: [&str; 6] = ["é", "€", "\u{10ffff}", "\u{301}", "\0", "\n"];

/// Every variant of `sample`: each hostile character inserted at and substituted for each
/// character, and every prefix.
fn variants(sample: &str) -> Vec<String> {
    let bounds: Vec<usize> = sample
        .char_indices()
        .map(|(i, _)| i)
        .chain([sample.len()])
        .collect();
    let mut out = Vec::new();
    for w in bounds.windows(2) {
        let (at, next) = (w[0], w[1]);
        for h in HOSTILE {
            out.push(format!("{}{h}{}", &sample[..at], &sample[at..]));
            out.push(format!("{}{h}{}", &sample[..at], &sample[next..]));
        }
    }
    for h in HOSTILE {
        out.push(format!("{sample}{h}"));
    }
    out.extend(bounds.iter().map(|&i| sample[..i].to_string()));
    out
}

/// Run `parse` over every variant of every sample; fail naming the first that panics.
fn sweep(parser: &str, samples: &[&str], parse: impl Fn(&str)) {
    for sample in samples {
        for input in variants(sample) {
            if catch_unwind(AssertUnwindSafe(|| parse(&input))).is_err() {
                panic!("{parser} panicked on {input:?}");
            }
        }
    }
}

#[test]
fn trace_context_parsers_never_panic() {
    let traceparents = [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
    ];
    sweep("parse_traceparent", &traceparents, |s| {
        let _ = ddwire::trace::context::parse_traceparent(s);
        let _ = SpanContext::extract(Some(s), Some(s));
    });
    sweep(
        "TraceState::parse",
        &["rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", "t@sys=v, x=y"],
        |s| {
            let _ = TraceState::parse(s);
        },
    );
    sweep(
        "parse_trace_state_repr",
        &["['{key=rojo, value=00f067aa0ba902b7}', \"{key=a, value=\\x27b}\"]"],
        |s| {
            let _ = ddwire::trace::span_json::parse_trace_state_repr(s);
        },
    );
}

#[test]
fn span_json_and_time_parsers_never_panic() {
    let span = r#"{"name": "chat", "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x00f067aa0ba902b7", "trace_state": "[]"}, "kind": "SpanKind.INTERNAL", "parent_id": null, "start_time": "2026-11-29T23:03:22.123456Z", "end_time": "2026-11-29T23:03:22.223456Z", "status": {"status_code": "UNSET"}, "attributes": {"dd.model_id": "m"}, "events": [], "links": [], "resource": {"attributes": {"service.name": "x"}, "schema_url": ""}}"#;
    sweep("span_json::from_json", &[span], |s| {
        let _ = ddwire::trace::from_json(s);
    });
    sweep(
        "parse_rfc3339",
        &[
            "2026-11-29T23:03:22.123456789Z",
            "2026-11-29 23:03:22+05:30",
        ],
        |s| {
            let _ = ddwire::time::parse_rfc3339(s);
        },
    );
}

#[test]
fn json_readers_never_panic() {
    let doc = r#"{"a": [1, 2.5e300, -0.0, 123456789012345678901234567890], "b": "é\u00e9\ud83d\ude00", "c": null}"#;
    sweep("json::parse", &[doc], |s| {
        let _ = ddwire::json::parse(s.as_bytes(), ddwire::json::Limits::DEFAULT);
        let _ = ddwire::json::python::reformat(s, ddwire::json::python::Style::INDENT2);
    });
    sweep(
        "jsonrpc::parse",
        &[r#"{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}"#],
        |s| {
            let _ = ddwire::wire::jsonrpc::parse(s.as_bytes(), 32);
            let _ = ddwire::wire::jsonrpc::read_response(s.as_bytes(), &Value::from(1));
        },
    );
}

#[test]
fn contract_parsers_never_panic() {
    sweep(
        "Regex",
        &[r"^[a-z][a-z0-9+.-]*:\S+$", r"^(0|[1-9][0-9]*)\.(a|b){2,3}$"],
        |s| {
            if let Ok(r) = Regex::new(s) {
                let _ = r.try_match(s);
                let _ = r.try_match("é€\u{10ffff}");
            }
        },
    );
    sweep("ids", &["01a22cc3-4758-702c-8400-aadf959ed378"], |s| {
        let _ = is_uuid7(s);
        let _ = is_sha256_hex(s);
    });
    let request = r#"{"invocation_id": "01a22cc3-4758-702c-8400-aadf959ed378", "agent_id": "hello.world", "issued_at": "2026-11-29T23:03:22Z", "input": {"schema_class": "Message", "message_text": "hi"}}"#;
    sweep("InvocationRequest", &[request], |s| {
        if let Ok(v) = serde_json::from_str::<Value>(s) {
            let _ = InvocationRequest::from_value(&v);
        }
    });
}

#[test]
fn credential_and_signature_readers_never_panic() {
    let auth = Authenticator::Bearer(vec![ddwire::harness::identity::Token::new(
        ddwire::contract::canonical::sha256_hex(b"s3cret"),
        ddwire::harness::testkit::test_principal(),
    )]);
    sweep(
        "Authenticator::principal_for",
        &["Bearer s3cret", "bearer s3cret"],
        |s| {
            let _ = auth.principal_for(Some(&[("authorization".into(), s.into())]));
        },
    );
    let key = Key::new("hello.world", b"ddwire-test-vector-secret-0123456789").unwrap();
    let verifier = Verifier::new(Direction::ToAgent, [key]);
    let request = Signable {
        method: "POST",
        target: "/a2a",
        body: b"{}",
    };
    let samples = [
        "hello.world",
        "1767225600",
        "0123456789abcdef0123456789abcdef",
        "v1=ac6211afdb0627bb2e3b98a1537a7cc956dd44a4ce7ecc6f9a80ca29800ce738",
    ];
    sweep("Verifier::verify_at", &samples, |s| {
        for name in ddwire::wire::sign::HEADERS {
            let mut headers: Vec<(String, String)> = ddwire::wire::sign::HEADERS
                .iter()
                .zip(samples)
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
            for h in &mut headers {
                if h.0 == name {
                    h.1 = s.to_string();
                }
            }
            let _ = verifier.verify_at(&request, &headers, 1_767_225_600);
            let _ = verifier.verify_at(
                &Signable {
                    target: s,
                    method: s,
                    ..request
                },
                &headers,
                1_767_225_600,
            );
        }
    });
    sweep(
        "sign::request_target",
        &["http://127.0.0.1:8101/a2a?x=1#f"],
        |s| {
            let _ = ddwire::wire::sign::request_target(s);
        },
    );
}
