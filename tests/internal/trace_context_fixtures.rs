//! W3C `traceparent` and `tracestate` against OpenTelemetry Python's
//! `TraceContextTextMapPropagator` (`fixtures/trace-context/generate.py`): every row of the
//! oracle table, valid or not, must be judged the same way and re-written the same way.

use ddwire::trace::SpanContext;
use serde_json::Value;

#[test]
fn every_traceparent_and_tracestate_is_judged_as_opentelemetry_python_judges_it() {
    let text = std::fs::read_to_string("fixtures/trace-context/cases.jsonl").unwrap();
    let mut count = 0;
    for line in text.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let name = case["case"].as_str().unwrap();
        let ctx = SpanContext::extract(case["traceparent"].as_str(), case["tracestate"].as_str());
        assert_eq!(
            ctx.is_some(),
            case["valid"].as_bool().unwrap(),
            "{name}: validity"
        );
        if let Some(ctx) = ctx {
            assert_eq!(
                ctx.trace_id.to_string(),
                case["trace_id"].as_str().unwrap(),
                "{name}"
            );
            assert_eq!(
                ctx.span_id.to_string(),
                case["span_id"].as_str().unwrap(),
                "{name}"
            );
            assert_eq!(
                u64::from(ctx.flags),
                case["trace_flags"].as_u64().unwrap(),
                "{name}"
            );
            // Propagation re-writes the header at version 00 with the flags as received.
            assert_eq!(
                ctx.traceparent(),
                case["traceparent_out"].as_str().unwrap(),
                "{name}"
            );
            match case["tracestate_out"].as_str() {
                Some(out) => assert_eq!(ctx.trace_state.header(), out, "{name}: tracestate"),
                None => assert!(
                    ctx.trace_state.is_empty(),
                    "{name}: tracestate should be dropped"
                ),
            }
        }
        count += 1;
    }
    assert!(count >= 100, "only {count} cases");
}
