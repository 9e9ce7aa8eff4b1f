//! JSON that can always be read back: every writer (the run store's files and index, the A2A
//! answer, the AG-UI stream and replay, span JSON, the listing routes) against a strict reader,
//! with hostile values, and the one value that cannot be written back (a number no double
//! holds, `1e999`) refused where it enters: from a caller, and from an agent.

use super::common;

use common::*;
use ddwire::agent::builtin::Echo;
use ddwire::contract::Canonicalisation;
use ddwire::contract::{AgentResult, GroundingMode, Outcome, Payload};
use ddwire::harness::store::{RunReader, RunStore};
use ddwire::harness::testkit::{HARNESS_URL, TestHarness};
use ddwire::ids::new_uuid7;
use ddwire::trace::{self, AttrValue};
use ddwire::wire::http::client::ClientRequest;
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::Arc;

fn echo_harness() -> TestHarness {
    TestHarness::new(vec![Arc::new(Echo::new())])
}

/// The same document as Python's `json` sees it: equal canonical bytes (so `1e-999` and `0.0`
/// are the same number, as they are to every reader).
fn same(a: &Value, b: &Value) -> bool {
    // Equal as canonical JSON: the bytes a content hash is taken over.
    let canonical = |v: &Value| Canonicalisation::InputDocument.canonical_bytes(v).unwrap();
    canonical(a) == canonical(b)
}

/// Parse as a strict reader does (serde_json, no lossy fallback).
fn strict(text: &str, what: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} does not read back: {e}\n{text}"))
}

/// Every file the store wrote, and the index, read back by a strict reader; the listings and
/// a restart (a writer's recovery) work and find nothing to repair.
fn assert_store_reads_back(th: &TestHarness) {
    let runs = &th.runs;
    let index = std::fs::read_to_string(runs.join("invocations.jsonl")).unwrap();
    for line in index.lines() {
        let envelope = strict(line, "an index line");
        assert!(envelope["invocation_id"].is_string());
    }
    for entry in std::fs::read_dir(runs).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        if !dir.is_dir() || name.starts_with('.') || name == "schemas" {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let shown = path.display().to_string();
            match path.extension().and_then(|e| e.to_str()) {
                Some("json") => {
                    strict(&text, &shown);
                }
                Some("jsonl") => {
                    for line in text.lines() {
                        strict(line, &shown);
                        trace::from_json(line).unwrap();
                    }
                }
                _ => {}
            }
        }
    }
    let (status, listing) = get(th, "/runs");
    assert_eq!(status, 200, "{listing}");
    assert_eq!(listing.as_array().unwrap().len(), index.lines().count());
    assert_eq!(get(th, "/conversations").0, 200);
    let reader = RunReader::open(runs).unwrap();
    assert_eq!(reader.page(&Default::default()).unwrap().skipped, 0);
    let (_, recovery) = RunStore::open_reporting(runs).unwrap();
    assert!(recovery.is_clean(), "a restart repaired {recovery:?}");
}

fn post_raw(th: &TestHarness, body: &str) -> Value {
    let r = th
        .client
        .http
        .send(ClientRequest::post_json(
            format!("{HARNESS_URL}/a2a"),
            body.as_bytes().to_vec(),
            T,
        ))
        .expect("the harness answers");
    assert_eq!(r.status, 200);
    strict(std::str::from_utf8(&r.body).unwrap(), "the JSON-RPC answer")
}

fn message_send(data: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m1","role":"user","parts":[{{"kind":"data","data":{data}}}]}}}}}}"#
    )
}

fn index_is_empty(runs: &Path) -> bool {
    std::fs::read_to_string(runs.join("invocations.jsonl"))
        .unwrap_or_default()
        .trim()
        .is_empty()
}

/// The issue's exact input: an echo invocation with `"value": 1e999` returned `completed` and
/// wrote `Infinity` into the index. Now it is a failed task, no run is made, and the store
/// stays readable.
#[test]
fn a_caller_sending_1e999_gets_a_failed_task_and_no_run() {
    let th = echo_harness();
    for value in ["1e999", "-1e400", "[1.5, 1E+999]"] {
        let data = format!(
            r#"{{"agent_id":"echo.wire","input":{{"schema_class":"Echo","value":{value}}}}}"#
        );
        let answer = post_raw(&th, &message_send(&data));
        let task = &answer["result"];
        assert_eq!(task["status"]["state"], "failed", "{value}: {answer}");
        let error = task["status"]["message"]["parts"][0]["data"]["error"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(error.contains("is not finite"), "{value}: {error}");
        assert!(error.contains("input/value"), "{value}: {error}");
        assert!(index_is_empty(&th.runs), "{value}: a run was stored");

        // The same over AG-UI: one RUN_ERROR.
        let request: Value = serde_json::from_str(&data).unwrap();
        let (_, _, stream) = post_agui(&th, &agui_body(&request, "t1"), &[]);
        assert!(
            run_error_message(&stream).contains("is not finite"),
            "{stream}"
        );
        assert!(index_is_empty(&th.runs));
    }
    // A fine number goes through, and everything reads back.
    let answer = post_raw(
        &th,
        &message_send(r#"{"agent_id":"echo.wire","input":{"schema_class":"Echo","value":1e308}}"#),
    );
    assert_eq!(answer["result"]["status"]["state"], "completed", "{answer}");
    assert_store_reads_back(&th);
}

/// An agent that puts 1e999 in its payload is an `agent-error`, stored as such, and the store
/// stays readable; its reply is not kept, since it could not be written back.
#[test]
fn an_agent_replying_1e999_is_an_agent_error_and_the_store_stays_readable() {
    let overflow: Value = serde_json::from_str("1e999").unwrap();
    let mut payload = Map::new();
    payload.insert("schema_class".into(), json!("ProbeReview"));
    payload.insert("score".into(), overflow);
    let mut result = AgentResult::new(Outcome::succeeded("Scored."));
    result.payload = Some(Payload(payload));
    let agent = ScriptedAgent::new(GroundingMode::None, returns(result)).arc();
    let th = TestHarness::new(vec![dyn_agent(&agent)]);
    let run = invoke(&th, request("fake.none", record()));
    let env = run.envelope.to_document();
    assert!(failed_with(&env, "agent-error"), "{env}");
    let detail = env["problem"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("payload/score: the number 1e+999 is not finite"),
        "{detail}"
    );
    let id = run.envelope.invocation_id.clone();
    assert!(!th.runs.join(&id).join("agent-result.json").exists());
    assert_eq!(stored_envelope(&th.runs, &id), env);
    assert_store_reads_back(&th);
}

/// A span carrying 1e999 is outside the contract too; the reply is kept (the number is text
/// inside a span string there), and everything reads back.
#[test]
fn an_agent_span_carrying_1e999_is_an_agent_error() {
    let net = ddwire::wire::http::memory::MemoryNet::new();
    let base = "http://peer.test";
    let card = card_of(&scripted_spec(GroundingMode::None), base);
    raw_peer(&net, "peer.test", card, |call| {
        let span = r#"{"name": "chat", "context": {"trace_id": "0x0000000000000000000000000000000a", "span_id": "0x000000000000000b"}, "attributes": {"dd.temperature": 1e999}}"#;
        let result = json!({"outcome": {"status": "abstained", "reason_code": "not_applicable", "statement": "x"}, "evidence": []});
        completed_with(call, json!({"result": result, "spans": [span]}))
    });
    let th = harness_on(
        net,
        &[base.to_string()],
        r#"{"profile_id": "test-permissive", "agents": {"fake.none": "advise"}}"#,
        None,
        T,
    );
    let run = invoke(&th, request("fake.none", record()));
    let env = run.envelope.to_document();
    assert!(failed_with(&env, "agent-error"), "{env}");
    assert!(
        env["problem"]["detail"]
            .as_str()
            .unwrap()
            .contains("\"dd.temperature\" holds the number"),
        "{env}"
    );
    let kept = std::fs::read_to_string(
        th.runs
            .join(&run.envelope.invocation_id)
            .join("agent-result.json"),
    )
    .unwrap();
    assert!(
        strict(&kept, "the kept reply")["spans"][0]
            .as_str()
            .unwrap()
            .contains("1e999")
    );
    assert_store_reads_back(&th);
}

const HOSTILE: &str = r#"{
    "nul": "a\u0000b", "separators": "\u2028\u2029", "astral": "\ud83d\ude00",
    "quotes": "\"\\/", "delete": "\u007f", "crlf": "\r\n", "bidi": "\u202e",
    "tiny": 1e-999, "huge": 1.7976931348623157e308, "subnormal": 5e-324,
    "negative_zero": -0.0, "integer_negative_zero": -0,
    "big_integer": 123456789012345678901234567890123456789, "exponent": 1E22,
    "keys": {"\u0000": 1, "\u2028": 2, "": 3}
}"#;

/// Hostile values in, through the harness to an agent and back: the A2A answer, every stored
/// file, the index, `GET /runs/{id}`, the listing and the AG-UI replay all read back, holding
/// the same document.
#[test]
fn hostile_values_survive_every_writer_and_read_back() {
    let th = echo_harness();
    let value: Value = serde_json::from_str(HOSTILE).unwrap();
    let request =
        json!({"agent_id": "echo.wire", "input": {"schema_class": "Echo", "value": value}});
    let task = send(&th, request);
    let envelope = envelope_of(&task);
    assert_eq!(envelope["outcome"]["status"], "succeeded", "{envelope}");
    assert!(same(&envelope["payload"]["value"], &value));
    let id = envelope["invocation_id"].as_str().unwrap().to_string();

    let dir = th.runs.join(&id);
    let read = |name: &str| strict(&std::fs::read_to_string(dir.join(name)).unwrap(), name);
    assert!(same(&read("envelope.json")["payload"]["value"], &value));
    assert!(same(&read("request.json")["input"]["value"], &value));
    let reply = read("agent-result.json");
    assert!(same(&reply["result"]["payload"]["value"], &value));
    let index = std::fs::read_to_string(th.runs.join("invocations.jsonl")).unwrap();
    assert!(same(
        &strict(index.trim(), "the index line")["payload"]["value"],
        &value
    ));
    // The index line never holds a raw U+2028 or NUL: json.dumps escapes them (ensure_ascii).
    assert!(index.is_ascii());

    let (status, stored) = get(&th, &format!("/runs/{id}"));
    assert_eq!(status, 200);
    assert!(same(&stored["payload"]["value"], &value));
    let (status, spans) = get(&th, &format!("/runs/{}/agent-result", &id[..13]));
    assert_eq!(status, 200, "{spans}");

    // The AG-UI replay, as @ag-ui/client reads it.
    let r = th
        .client
        .http
        .send(ClientRequest::get(
            format!("{HARNESS_URL}/agui/runs/{id}"),
            T,
        ))
        .unwrap();
    let stream = String::from_utf8(r.body).unwrap();
    let events: Vec<Value> = sse_data(&stream)
        .iter()
        .map(|d| strict(d, "an AG-UI event"))
        .collect();
    let finished = events.last().unwrap();
    assert_eq!(finished["type"], "RUN_FINISHED");
    assert!(same(&finished["result"]["payload"]["value"], &value));
    assert_store_reads_back(&th);
}

/// Span JSON: hostile text and every double, infinities included, written and read back.
#[test]
fn span_json_with_hostile_attributes_reads_back() {
    let tracer = trace::Tracer::new("hostile");
    let span = tracer.chat("m");
    let texts = [
        "a\u{0}b",
        "\u{2028}\u{2029}",
        "😀",
        "\"\\/",
        "\u{7f}",
        "\r\n",
    ];
    for (i, t) in texts.iter().enumerate() {
        span.set(&format!("text.{i}"), *t);
    }
    let doubles = [
        5e-324,
        -0.0,
        1.7976931348623157e308,
        f64::INFINITY,
        f64::NAN,
        1e-7,
    ];
    span.set("doubles", AttrValue::DoubleArray(doubles.to_vec()));
    span.set("inf", f64::NEG_INFINITY);
    span.end();
    for record in tracer.take_all() {
        let text = trace::to_json(&record);
        strict(&text, "a span line");
        let back = trace::from_json(&text).unwrap();
        for (i, t) in texts.iter().enumerate() {
            if let Some(v) = record.attributes.get(&format!("text.{i}")) {
                assert_eq!(v, &AttrValue::String(t.to_string()));
                assert_eq!(back.attributes.get(&format!("text.{i}")), Some(v));
            }
        }
        if record.attributes.get("inf").is_some() {
            assert_eq!(
                back.attributes.get("inf"),
                Some(&AttrValue::String("-Infinity".into()))
            );
        }
    }
}

/// A lone surrogate escape from a caller is refused as JSON with a clear reason; one that
/// another writer (Python) put in the store reads as U+FFFD instead of making the store
/// unreadable.
#[test]
fn a_lone_surrogate_is_refused_from_a_caller_and_read_from_a_store() {
    let th = echo_harness();
    let answer = post_raw(
        &th,
        &message_send(
            r#"{"agent_id":"echo.wire","input":{"schema_class":"Echo","value":"\ud800"}}"#,
        ),
    );
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("surrogate"),
        "{answer}"
    );
    assert!(index_is_empty(&th.runs));

    // What Python's json.dumps writes for a str holding a lone surrogate.
    let runs = TempDir::new("surrogate");
    let id = new_uuid7();
    let line = format!(
        r#"{{"invocation_id":"{id}","agent_id":"hello","completed_at":"2026-01-01T00:00:00Z","outcome":{{"status":"succeeded","statement":"a\ud800b"}}}}"#
    );
    std::fs::create_dir(runs.path().join(&id)).unwrap();
    std::fs::write(runs.path().join(&id).join("envelope.json"), &line).unwrap();
    std::fs::write(runs.path().join("invocations.jsonl"), format!("{line}\n")).unwrap();
    let reader = RunReader::open(runs.path()).unwrap();
    let page = reader.page(&Default::default()).unwrap();
    assert_eq!(page.rows.len(), 1);
    assert_eq!(page.skipped, 0);
    assert_eq!(
        reader.envelope(&id).unwrap().unwrap()["outcome"]["statement"],
        "a\u{fffd}b"
    );
    let (_, recovery) = RunStore::open_reporting(runs.path()).unwrap();
    assert!(recovery.is_clean(), "{recovery:?}");
}
