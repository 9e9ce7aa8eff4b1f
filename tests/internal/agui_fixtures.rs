//! AG-UI events against ag-ui-protocol's `EventEncoder().encode(event)` (0.1.22 and 1.0.0,
//! `fixtures/agui/generate.py`): for every event type ddwire emits, ddwire's `Event::to_sse()`
//! of the same content is the SDK's SSE frame, byte for byte.
//!
//! Both versions write every frame identically (checked below), so ddwire follows both.

use super::common::sse_data;
use ddwire::wire::agui::Event;
use serde_json::Value;

const V0_1_22: &str = "fixtures/agui/ag-ui-protocol-0.1.22.jsonl";
const V1_0_0: &str = "fixtures/agui/ag-ui-protocol-1.0.0.jsonl";

struct Case {
    case: String,
    sdk: String,
    /// The constructor arguments, `type` included; numbers keep the text `json.dumps` gave them.
    event: Value,
    sse: String,
}

fn cases(file: &str) -> Vec<Case> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            Case {
                case: v["case"].as_str().unwrap().to_string(),
                sdk: v["sdk"].as_str().unwrap().to_string(),
                event: v["event"].clone(),
                sse: v["sse"].as_str().unwrap().to_string(),
            }
        })
        .collect()
}

fn text(args: &Value, key: &str) -> String {
    args[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} missing in {args}"))
        .to_string()
}

/// ddwire's event for the content the SDK's constructor was given.
fn event_of(args: &Value) -> Event {
    match args["type"].as_str().unwrap() {
        "RUN_STARTED" => Event::RunStarted {
            thread_id: text(args, "thread_id"),
            run_id: text(args, "run_id"),
        },
        "STEP_STARTED" => Event::StepStarted {
            step_name: text(args, "step_name"),
        },
        "STEP_FINISHED" => Event::StepFinished {
            step_name: text(args, "step_name"),
        },
        "RUN_FINISHED" => Event::RunFinished {
            thread_id: text(args, "thread_id"),
            run_id: text(args, "run_id"),
            result: args.get("result").cloned(),
            interrupt: None,
        },
        "RUN_ERROR" => Event::RunError {
            message: text(args, "message"),
            code: args.get("code").map(|c| c.as_str().unwrap().to_string()),
        },
        other => panic!("an event type ddwire does not emit: {other}"),
    }
}

fn sse_text(event: &Event) -> String {
    String::from_utf8(event.to_sse()).unwrap()
}

/// Cases ddwire does not write byte for byte; each has its own test below.
const NOT_BYTE_IDENTICAL: [(&str, &str); 1] = [(
    "run_finished_result_keys_in_insertion_order",
    "a serde_json Map holds its keys sorted, so ddwire cannot hold this content in this order \
         (see a_result_object_is_written_with_its_keys_sorted_where_pydantic_keeps_insertion_order)",
)];

fn assert_every_frame_is_byte_identical(file: &str, sdk: &str) {
    let cases = cases(file);
    assert!(cases.len() >= 15, "{file}: {} cases", cases.len());
    let mut checked = 0;
    for case in &cases {
        assert_eq!(case.sdk, sdk, "{}", case.case);
        if NOT_BYTE_IDENTICAL.iter().any(|(n, _)| *n == case.case) {
            continue;
        }
        assert_eq!(
            sse_text(&event_of(&case.event)),
            case.sse,
            "{sdk} {}",
            case.case
        );
        checked += 1;
    }
    assert_eq!(checked, cases.len() - NOT_BYTE_IDENTICAL.len(), "{file}");
}

#[test]
fn every_event_ddwire_emits_is_framed_byte_for_byte_as_ag_ui_protocol_0_1_22_frames_it() {
    assert_every_frame_is_byte_identical(V0_1_22, "ag-ui-protocol 0.1.22");
}

#[test]
fn every_event_ddwire_emits_is_framed_byte_for_byte_as_ag_ui_protocol_1_0_0_frames_it() {
    assert_every_frame_is_byte_identical(V1_0_0, "ag-ui-protocol 1.0.0");
}

#[test]
fn both_ag_ui_protocol_versions_frame_every_event_identically() {
    // If a future pin makes them differ, ddwire follows 1.0.0 (the protocol version it speaks,
    // 1.0, and the version `@ag-ui/client` 1.0.0 pairs with); the tests
    // above would then name the 0.1.x cases that differ.
    let (old, new) = (cases(V0_1_22), cases(V1_0_0));
    assert_eq!(old.len(), new.len());
    for (a, b) in old.iter().zip(&new) {
        assert_eq!((&a.case, &a.event), (&b.case, &b.event));
        assert_eq!(a.sse, b.sse, "{}", a.case);
    }
}

#[test]
fn the_fixtures_cover_every_event_shape_ddwire_emits() {
    let cases = cases(V1_0_0);
    let has = |pred: &dyn Fn(&Value) -> bool| cases.iter().any(|c| pred(&c.event));
    for kind in [
        "RUN_STARTED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "RUN_FINISHED",
        "RUN_ERROR",
    ] {
        assert!(has(&|e| e["type"] == kind), "{kind}");
    }
    assert!(has(
        &|e| e["type"] == "RUN_FINISHED" && e.get("result").is_none()
    ));
    assert!(has(
        &|e| e["type"] == "RUN_FINISHED" && e.get("result").is_some()
    ));
    assert!(has(&|e| e["type"] == "RUN_ERROR" && e.get("code").is_none()));
    assert!(has(&|e| e["type"] == "RUN_ERROR" && e.get("code").is_some()));
    for step in [
        "policy_gate",
        "input_check",
        "agent_call",
        "grounding_check",
    ] {
        assert!(has(&|e| e["step_name"] == step), "{step}");
    }
    // The envelope case holds a null, non-ASCII text and a float.
    let envelope = cases
        .iter()
        .find(|c| c.case == "run_finished_envelope")
        .unwrap();
    assert!(envelope.sse.contains(r#""parent_invocation_id":null"#));
    assert!(envelope.sse.contains("héllo — hi ✓ 😀 中文"));
    assert!(envelope.sse.contains(r#""cost_usd":0.00042"#));
}

#[test]
fn ddwire_reads_every_frame_the_sdk_wrote_as_one_event_of_the_same_json() {
    for file in [V0_1_22, V1_0_0] {
        for case in cases(file) {
            let data = sse_data(&case.sse);
            assert_eq!(data.len(), 1, "{}", case.case);
            assert!(case.sse.starts_with("data: ") && case.sse.ends_with("\n\n"));
            assert!(!case.sse.contains('\r'), "{}", case.case);
            let sdk: Value = serde_json::from_str(&data[0]).unwrap();
            let ours: Value = serde_json::from_str(&event_of(&case.event).to_json()).unwrap();
            // Value equality compares numbers by their text (arbitrary precision), so this
            // also holds ddwire to pydantic's float spellings.
            assert_eq!(sdk, ours, "{}", case.case);
        }
    }
}

#[test]
fn small_floats_in_a_result_are_spelled_as_pydantic_spells_them() {
    // Input `result` {"small": [1e-05, 2.5e-05, 1e-06, 1e-07, 2.5e-07]} (json.dumps spelling,
    // as a Python agent or the run store writes them). pydantic-core writes a float in decimal
    // down to 1e-5 and below that with an exponent that is not zero-padded.
    for file in [V0_1_22, V1_0_0] {
        let case = cases(file)
            .into_iter()
            .find(|c| c.case == "run_finished_result_small_float_spellings")
            .unwrap();
        assert!(
            case.sse
                .contains(r#""result":{"small":[0.00001,0.000025,1e-6,1e-7,2.5e-7]}"#)
        );
        assert_eq!(sse_text(&event_of(&case.event)), case.sse, "{file}");
    }
}

#[test]
fn a_result_object_is_written_with_its_keys_sorted_where_pydantic_keeps_insertion_order() {
    // A JSON object's member order carries no meaning (RFC 8259 §4) and `@ag-ui/client` reads
    // the frame with JSON.parse; ddwire holds every object as a serde_json Map, which iterates
    // in key order, so the harness's envelopes are always written sorted (every other case's
    // `result` is passed to the SDK sorted, and those frames match byte for byte). This case
    // pins the one difference: the same members, in code-point order.
    for file in [V0_1_22, V1_0_0] {
        let case = cases(file)
            .into_iter()
            .find(|c| c.case == "run_finished_result_keys_in_insertion_order")
            .unwrap();
        let head = r#"data: {"type":"RUN_FINISHED","threadId":"01a229c2-bb00-7000-8000-00000000c0de","runId":"01a229c2-bbec-7437-b015-759b4215571f","result":"#;
        let sdk_result =
            r#"{"outcome":{"status":"succeeded"},"agent_id":"hello.world","Zeta":1,"é":2,"a":3}"#;
        let sorted_result =
            r#"{"Zeta":1,"a":3,"agent_id":"hello.world","outcome":{"status":"succeeded"},"é":2}"#;
        assert_eq!(case.sse, format!("{head}{sdk_result}}}\n\n"), "{file}");
        assert_eq!(
            sse_text(&event_of(&case.event)),
            format!("{head}{sorted_result}}}\n\n"),
            "{file}"
        );
    }
}
