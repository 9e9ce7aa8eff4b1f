//! A seeded, bounded mutation test of every hand-written parser, run by `cargo test` so CI
//! keeps what the cargo-fuzz targets (`fuzz/`) guarantee between fuzzing runs. Each target's
//! seeds are real inputs from `fixtures/` (the a2a-sdk captures, AG-UI frames, span JSON,
//! trace-context cases, canonical-JSON inputs, stored runs) plus a few hand-written edges,
//! laid out as the target reads them (`fuzz/seed_corpus.py` builds the same corpus); each is
//! mutated with a small xorshift generator (the same cases every run) and fed to the same
//! entry point the fuzz target calls (`ddwire::fuzz`, behind the `fuzzing` feature), which
//! asserts that target's invariants: no panic, and round trips where the parser has a writer.
//!
//! The HTTP parser's own mutation test is `tests/internal/http_parser_mutation.rs`.

use serde_json::{Value, json};
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::rng::Rng;

/// Pieces that reach the grammars' edges: JSON structure, escapes, big and odd numbers,
/// multi-byte characters (a byte slice must never cut one), NUL (the two-input separator).
const PIECES: &[&[u8]] = &[
    b"\"",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"\\udc00",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\0",
    b"null",
    b"true",
    b"-",
    b"0",
    b"1e999",
    b"-0.0",
    b"123456789012345678901234567890",
    b"1.7976931348623157e308",
    b"5e-324",
    b"NaN",
    b"Infinity",
    "é".as_bytes(),
    "€".as_bytes(),
    "𝄞".as_bytes(),
    b"\xff",
    b"\xc3",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"data: ",
    b": ",
    b"-",
    b"00-",
    b"T",
    b"Z",
    b"+23:59",
    b".",
    b"(",
    b")",
    b"*",
    b"+?",
    b"{2,}",
    b"\\d",
    b"[^",
    b"|",
    b"\"$ref\"",
    b"\"#/definitions/a\"",
    b"\"type\"",
    b"\"pattern\"",
    b"\"kind\"",
    b"\"parts\"",
    b"'",
    b"[('k', 'v')]",
    b"0x",
];

fn mutate(rng: &mut Rng, input: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(7) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = rng.next() as u8;
            }
            1 if !out.is_empty() => {
                let from = rng.below(out.len());
                let to = (from + 1 + rng.below(16)).min(out.len());
                out.drain(from..to);
            }
            2 => {
                let piece = PIECES[rng.below(PIECES.len())];
                out.splice(at..at, piece.iter().copied());
            }
            3 => out.truncate(at),
            4 if !out.is_empty() => {
                let from = rng.below(out.len());
                let to = (from + rng.below(64)).min(out.len());
                let copy = out[from..to].to_vec();
                out.splice(at..at, copy);
            }
            5 if !others.is_empty() => {
                // A piece of another seed: structure from elsewhere in the corpus.
                let other = &others[rng.below(others.len())];
                let from = rng.below(other.len());
                let to = (from + rng.below(128)).min(other.len());
                out.splice(at..at, other[from..to].iter().copied());
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

fn fixture_lines(dir: &str) -> Vec<Value> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/");
    let mut files: Vec<_> = std::fs::read_dir(format!("{root}{dir}"))
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<Value>>()
        })
        .collect()
}

fn stored_runs() -> Vec<(String, String)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/runs");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(root).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for name in ["envelope.json", "spans.jsonl"] {
            out.push((
                name.to_string(),
                std::fs::read_to_string(dir.join(name)).unwrap(),
            ));
        }
    }
    out.sort();
    out
}

/// Every object inside a JSON value, outermost first.
fn objects(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) => {
            out.push(v.clone());
            m.values().for_each(|x| objects(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| objects(x, out)),
        _ => {}
    }
}

fn with(selector: u8, data: &[u8]) -> Vec<u8> {
    let mut v = vec![selector];
    v.extend_from_slice(data);
    v
}

fn pair(a: &str, b: &str) -> Vec<u8> {
    [a.as_bytes(), b"\0", b.as_bytes()].concat()
}

/// Each target's seeds, laid out as its entry point reads them.
fn seeds(target: &str) -> Vec<Vec<u8>> {
    let a2a = fixture_lines("a2a");
    let bodies: Vec<String> = a2a
        .iter()
        .map(|r| r["body"].as_str().unwrap().to_string())
        .collect();
    let mut out = Vec::new();
    match target {
        "trace_context" => {
            for case in fixture_lines("trace-context") {
                let state = match &case["tracestate"] {
                    Value::String(s) => s.clone(),
                    Value::Array(a) => a
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(","),
                    _ => String::new(),
                };
                out.push(pair(case["traceparent"].as_str().unwrap_or(""), &state));
            }
            out.push(pair(
                "",
                "[('congo', 't61rcWkgMzE'), ('rojo', '00f067aa0ba902b7')]",
            ));
        }
        "span_json" => {
            for case in fixture_lines("spans") {
                if let Some(line) = case["json"].as_str() {
                    out.push(line.as_bytes().to_vec());
                }
            }
            for (name, text) in stored_runs() {
                if name == "spans.jsonl" {
                    out.extend(text.lines().map(|l| l.as_bytes().to_vec()));
                }
            }
        }
        "rfc3339" => {
            for t in [
                "2025-06-01T11:59:59.5Z",
                "2026-01-01T00:00:00.000000Z",
                "1999-12-31T23:59:60+01:00",
                "0001-01-01T00:00:00Z",
                "9999-12-31T23:59:59.999999999-23:59",
                "2024-02-29t12:00:00z",
            ] {
                out.push(t.as_bytes().to_vec());
            }
        }
        "json" => {
            for case in fixture_lines("canonical") {
                if let Some(input) = case["input"].as_str() {
                    out.push(with(0x3e, input.as_bytes()));
                    out.push(with(0x0a, input.as_bytes()));
                }
            }
            for (name, text) in stored_runs() {
                if name == "envelope.json" {
                    out.push(with(0x3e, text.as_bytes()));
                }
            }
        }
        "pattern" => {
            for (p, s) in [
                (r"\S", "x"),
                (r"^[A-Z]{2,3}-\d+$", "REQ-7"),
                (r"(a|b)*c", "ababc"),
                (r"^\w+@\w+\.\w+$", "a@b.c"),
                (r"[^\s]+(?:x|y)?", "é  y"),
                (r"^(\d{4})-(\d\d)$", "2026-01"),
                (r"a{0,3}?b", "aaab"),
                (r"(a+)+$", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"),
            ] {
                out.push(pair(p, s));
            }
        }
        "schema" => {
            for (schema, instance) in [
                (
                    json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer", "minimum": 0}}}),
                    json!({"a": 3}),
                ),
                (
                    json!({"type": "array", "items": {"type": "string", "pattern": "^\\S+$", "maxLength": 4}}),
                    json!(["ab", "c d"]),
                ),
                (
                    json!({"anyOf": [{"type": "null"}, {"enum": [1, "x"]}], "definitions": {"d": {"const": 2}}}),
                    json!(2),
                ),
                (
                    json!({"$ref": "#/definitions/d", "definitions": {"d": {"type": "number", "multipleOf": 0.5}}}),
                    json!(1.5),
                ),
                (
                    json!({"type": "object", "additionalProperties": false, "properties": {"b": {"format": "date-time"}}}),
                    json!({"b": "2026-01-01T00:00:00Z"}),
                ),
            ] {
                out.push(pair(&schema.to_string(), &instance.to_string()));
            }
        }
        "jsonrpc" => {
            for body in &bodies {
                out.push(with(0, body.as_bytes()));
                out.push(with(1, body.as_bytes()));
            }
            out.push(with(0, br#"[{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}},{"jsonrpc":"2.0","method":"x"}]"#));
        }
        "a2a_v03" | "a2a_v10" => {
            for body in &bodies {
                let mut found = Vec::new();
                objects(&serde_json::from_str(body).unwrap(), &mut found);
                for (i, object) in found.iter().enumerate() {
                    out.push(with(i as u8 & 3, object.to_string().as_bytes()));
                }
            }
        }
        "sse" => {
            for case in fixture_lines("agui") {
                let frame = case["sse"].as_str().unwrap();
                let data = frame.trim_start_matches("data: ").trim_end();
                out.push(pair(data, case["case"].as_str().unwrap()));
            }
        }
        "run_agent_input" => {
            for body in &bodies {
                let mut found = Vec::new();
                objects(&serde_json::from_str(body).unwrap(), &mut found);
                for request in found
                    .iter()
                    .filter(|o| o.get("invocation_id").is_some() && o.get("input").is_some())
                {
                    let input = json!({"threadId": "t", "runId": "r", "messages": [], "tools": [],
                                       "context": [], "state": {}, "forwardedProps": {"request": request}});
                    out.push(input.to_string().into_bytes());
                }
            }
        }
        "agent_card" => {
            for case in fixture_lines("canonical").iter().take(40) {
                if let Some(input) = case["input"].as_str() {
                    for selector in [1u8, 3, 5, 7, 9, 11, 13, 15] {
                        out.push(with(selector, input.as_bytes()));
                    }
                }
            }
        }
        "signature" => {
            for fields in [
                [
                    "agent.one",
                    "1750000000",
                    "0123456789abcdef",
                    "v1=0000000000000000000000000000000000000000000000000000000000000000",
                    "POST",
                    "/a2a",
                    "{}",
                ],
                ["", "", "", "", "GET", "/a2a?x=1", ""],
            ] {
                out.push(fields.join("\0").into_bytes());
            }
            for body in bodies.iter().take(4) {
                out.push(
                    [
                        "agent.one",
                        "1750000000",
                        "nonce-0123456789",
                        "v1=",
                        "POST",
                        "/a2a",
                        body,
                    ]
                    .join("\0")
                    .into_bytes(),
                );
            }
        }
        other => panic!("no seeds for {other}"),
    }
    assert!(!out.is_empty(), "{target} has no seeds");
    out
}

/// A fuzz target's entry point: it takes any bytes and panics on a finding.
type Entry = fn(&[u8]);

/// The entry point of each target, as `fuzz/fuzz_targets/<name>.rs` calls it.
const TARGETS: &[(&str, Entry)] = &[
    ("trace_context", ddwire::fuzz::trace_context),
    ("span_json", ddwire::fuzz::span_json),
    ("rfc3339", ddwire::fuzz::rfc3339),
    ("json", ddwire::fuzz::json),
    ("pattern", ddwire::fuzz::pattern),
    ("schema", ddwire::fuzz::schema),
    ("jsonrpc", ddwire::fuzz::jsonrpc),
    ("a2a_v03", ddwire::fuzz::a2a_v03),
    ("a2a_v10", ddwire::fuzz::a2a_v10),
    ("sse", ddwire::fuzz::sse),
    ("run_agent_input", ddwire::fuzz::run_agent_input),
    ("agent_card", ddwire::fuzz::agent_card),
    ("signature", ddwire::fuzz::signature),
];

/// Mutations per target: enough to cross every grammar's edges from real inputs, few enough
/// for a debug build of `cargo test` on a busy machine.
const CASES: usize = 1500;

/// Run `entry` on `input`; a panic fails the test naming the target and the input, which is
/// what a regression test needs.
fn run(target: &str, entry: Entry, input: &[u8]) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| entry(input))) {
        let why = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        panic!(
            "{target} broke on {:?}: {why}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn every_parser_keeps_its_invariants_on_the_fixtures_as_they_are() {
    for (target, entry) in TARGETS {
        for seed in seeds(target) {
            run(target, *entry, &seed);
        }
    }
}

#[test]
fn every_parser_keeps_its_invariants_on_mutated_fixtures() {
    let mut rng = Rng(0x0dd0_1e5e_ed5e_ed01);
    for (target, entry) in TARGETS {
        let seeds = seeds(target);
        for _ in 0..CASES {
            let seed = &seeds[rng.below(seeds.len())];
            let input = mutate(&mut rng, seed, &seeds);
            run(target, *entry, &input);
        }
    }
}

/// Regression (found by the `span_json` fuzz target, a stored span's event moved to 2423):
/// past 2^32 s OpenTelemetry Python's time writer works in a double (`ns / 1e9`) whose step
/// exceeds half a microsecond, so a far time drifts as it is written, read and written again:
/// CPython prints 2423-11-14T22:13:20.123571 as .123569, and that, read back, as .123568.
/// ddwire writes the same bytes (checked against `datetime.fromtimestamp` by hand), so the
/// target's round trip is exact only before `ddwire::fuzz::EXACT_TIMES_BELOW_NS` and within
/// the double's step after it.
#[test]
fn a_far_future_span_time_drifts_as_python_writes_it_and_the_round_trip_allows_it() {
    let line = fixture_lines("spans")[0]["json"]
        .as_str()
        .unwrap()
        .to_string();
    let span = ddwire::trace::to_json(&ddwire::trace::from_json(&line).unwrap());
    let key = "\"start_time\": \"";
    let at = span.find(key).unwrap() + key.len();
    let time = |t: &str| span.replacen(&span[at..at + 27], t, 1);
    let mut text = time("2423-11-14T22:13:20.123571Z");
    for expected in ["2423-11-14T22:13:20.123569Z", "2423-11-14T22:13:20.123568Z"] {
        ddwire::fuzz::span_json(text.as_bytes());
        text = ddwire::trace::to_json(&ddwire::trace::from_json(&text).unwrap());
        assert!(text.contains(expected), "{expected}: {text}");
    }
    // Before 2106 every microsecond survives.
    for t in ["2023-11-14T22:13:20.123571Z", "2105-12-31T23:59:59.999999Z"] {
        let text = time(t);
        let again = ddwire::trace::to_json(&ddwire::trace::from_json(&text).unwrap());
        assert!(again.contains(t), "{t}: {again}");
        ddwire::fuzz::span_json(text.as_bytes());
    }
}

/// Regression (found by the `sse` fuzz target): a comment whose text holds a bare CR was two
/// lines to a browser; through the target's entry point, which reads the stream back as
/// WHATWG HTML §9.2.6 does and requires exactly one comment line and no event.
#[test]
fn a_comment_with_a_bare_cr_stays_one_comment() {
    for text in [
        "ligne 1\nligne 2 \u{1}\r✓?",
        "x\rdata: {\"type\":\"RUN_FINISHED\"}",
        "\r",
    ] {
        ddwire::fuzz::sse(format!("{text}\0code").as_bytes());
    }
}
