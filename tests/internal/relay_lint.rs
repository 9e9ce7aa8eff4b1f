//! The relay session linter over the corpus in `fixtures/relay/`: sessions `ddwire relay`
//! recorded against real peers (`fixtures/relay/record.sh`), each linted clean, and broken
//! variants of them (a dropped chunk, a misparented hop, an illegal transition), derived here
//! from the good files as `fixtures/relay/make_broken.py` derives the committed ones, each
//! failing the check it breaks and no other. Every check also has a test that breaks one real
//! session in the one way that check catches.

use ddwire::trace::relay_lint::{self, Check, RelayReport, Verdict};
use ddwire::trace::{AttrValue, Event, SpanId, SpanKind, SpanRecord, StatusCode, TraceError};
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/relay")
}

/// Every session file of a scenario's folder, with its spans.
fn sessions(scenario: &str) -> Vec<(String, Vec<SpanRecord>)> {
    let dir = corpus().join(scenario);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{scenario} holds no session");
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            let spans = relay_lint::read_session(&bytes)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            (name, spans)
        })
        .collect()
}

/// The one session of a scenario.
fn session(scenario: &str) -> (String, Vec<SpanRecord>) {
    let mut all = sessions(scenario);
    assert_eq!(all.len(), 1, "{scenario} holds more than one session");
    all.remove(0)
}

fn lint(name: &str, spans: &[SpanRecord]) -> RelayReport {
    relay_lint::lint(spans, Some(name))
}

/// Every session of the scenario passes every check; returns the spans of all of them.
fn lints_clean(scenario: &str) -> Vec<SpanRecord> {
    let mut all = Vec::new();
    for (name, spans) in sessions(scenario) {
        let report = lint(&name, &spans);
        assert!(report.passed(), "{scenario}/{name}:\n{}", report.summary());
        assert_eq!(report.checks.len(), Check::ALL.len());
        assert!(name.starts_with(report.session.as_deref().unwrap()));
        all.extend(spans);
    }
    all
}

/// The checks the report failed; each failed check with at least one violation.
fn failed(report: &RelayReport) -> Vec<Check> {
    for (check, verdict) in &report.checks {
        if let Verdict::Failed(v) = verdict {
            assert!(!v.is_empty(), "{check} failed with no violation");
        }
    }
    report.failed()
}

fn kind_count(spans: &[SpanRecord], kind: SpanKind) -> usize {
    spans.iter().filter(|s| s.kind == kind).count()
}

fn str_attr<'s>(span: &'s SpanRecord, key: &str) -> Option<&'s str> {
    match span.attributes.get(key) {
        Some(AttrValue::String(s)) => Some(s),
        _ => None,
    }
}

fn events<'s>(span: &'s SpanRecord, name: &str) -> Vec<&'s Event> {
    span.events.iter().filter(|e| e.name == name).collect()
}

fn event_str<'e>(event: &'e Event, key: &str) -> Option<&'e str> {
    match event.attributes.get(key) {
        Some(AttrValue::String(s)) => Some(s),
        _ => None,
    }
}

/// The SERVER span whose events hold a stream's chunks.
fn stream_span(spans: &mut [SpanRecord]) -> &mut SpanRecord {
    spans
        .iter_mut()
        .find(|s| !events(s, "a2a.message.stream_chunk").is_empty())
        .expect("a span with stream chunks")
}

#[test]
fn a_completed_send_lints_clean() {
    let spans = lints_clean("completed-send");
    assert_eq!(kind_count(&spans, SpanKind::Server), 1);
    assert_eq!(kind_count(&spans, SpanKind::Client), 1);
    let server = spans.iter().find(|s| s.kind == SpanKind::Server).unwrap();
    assert_eq!(str_attr(server, "a2a.task.state"), Some("completed"));
}

#[test]
fn a_failed_send_lints_clean() {
    let spans = lints_clean("failed-send");
    let server = spans.iter().find(|s| s.kind == SpanKind::Server).unwrap();
    assert_eq!(str_attr(server, "a2a.task.state"), Some("failed"));
    // The peer's task failed; the hop did not: no error span, so no failure class.
    assert!(spans.iter().all(|s| s.status.code != StatusCode::Error));
}

#[test]
fn a_canceled_task_lints_clean() {
    let spans = lints_clean("canceled-task");
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"a2a.task.cancel"), "{names:?}");
    let changes: Vec<_> = spans
        .iter()
        .flat_map(|s| events(s, "a2a.task.state_change"))
        .map(|e| event_str(e, "to").unwrap())
        .collect();
    assert_eq!(changes.last(), Some(&"canceled"), "{changes:?}");
}

#[test]
fn a_long_stream_lints_clean() {
    let mut spans = lints_clean("long-stream");
    let chunks = events(stream_span(&mut spans), "a2a.message.stream_chunk").len();
    assert!(chunks >= 40, "{chunks} chunks");
}

#[test]
fn a_stream_that_breaks_lints_clean_as_a_failed_hop_without_a_final_chunk() {
    let mut spans = lints_clean("broken-stream");
    let server = stream_span(&mut spans);
    assert_eq!(server.status.code, StatusCode::Error);
    assert_eq!(
        str_attr(server, "a2a.relay.failure_class"),
        Some("peer_disconnect")
    );
    let finals = events(server, "a2a.message.stream_chunk")
        .iter()
        .filter(|e| e.attributes.get("final") == Some(&AttrValue::Bool(true)))
        .count();
    assert_eq!(finals, 0);
}

/// The scenario lints clean, and its failed hop carries `class`; returns its spans.
fn lints_clean_with_class(scenario: &str, class: &str) -> Vec<SpanRecord> {
    let spans = lints_clean(scenario);
    let classes: Vec<&str> = spans
        .iter()
        .filter_map(|s| str_attr(s, "a2a.relay.failure_class"))
        .collect();
    assert!(
        !classes.is_empty() && classes.iter().all(|c| *c == class),
        "{classes:?}"
    );
    spans
}

#[test]
fn a_topology_refusal_lints_clean_as_one_server_span_with_its_class() {
    let spans = lints_clean_with_class("topology-refusal", "topology_violation");
    assert_eq!(spans.len(), 1);
}

#[test]
fn a_peer_404_lints_clean() {
    lints_clean_with_class("peer-404", "peer_404");
}

#[test]
fn a_peer_timeout_lints_clean() {
    lints_clean_with_class("peer-timeout", "peer_timeout");
}

#[test]
fn several_sessions_lint_clean_each_in_its_own_file() {
    let all = sessions("several-sessions");
    assert_eq!(all.len(), 3);
    lints_clean("several-sessions");
    let mut ids: Vec<String> = all
        .iter()
        .map(|(name, spans)| lint(name, spans).session.unwrap())
        .collect();
    ids.dedup();
    assert_eq!(ids.len(), 3);
}

#[test]
fn a_session_through_the_hub_lints_clean() {
    let spans = lints_clean("hub");
    let peers: Vec<&str> = spans
        .iter()
        .filter(|s| s.kind == SpanKind::Client)
        .filter_map(|s| str_attr(s, "a2a.peer.id"))
        .collect();
    assert!(peers.contains(&"ddecho"), "{peers:?}");
}

#[test]
fn a_chain_through_two_relays_lints_clean_with_the_second_relay_under_the_first_ones_forward() {
    let spans = lints_clean("chain");
    assert_eq!(kind_count(&spans, SpanKind::Server), 2);
    let forwards: Vec<SpanId> = spans
        .iter()
        .filter(|s| s.kind == SpanKind::Client)
        .map(|s| s.span_id)
        .collect();
    assert!(
        spans
            .iter()
            .any(|s| s.kind == SpanKind::Server
                && s.parent_id.is_some_and(|p| forwards.contains(&p))),
        "no relay's SERVER span parents on the other's forward"
    );
}

#[test]
fn concurrent_callers_in_one_session_lint_clean() {
    let spans = lints_clean("concurrent-callers");
    assert_eq!(kind_count(&spans, SpanKind::Server), 8);
}

#[test]
fn a_translation_between_bindings_lints_clean() {
    let spans = lints_clean("translation");
    let client_bindings: Vec<&str> = spans
        .iter()
        .filter(|s| s.kind == SpanKind::Client)
        .filter_map(|s| str_attr(s, "a2a.binding"))
        .collect();
    let server_bindings: Vec<&str> = spans
        .iter()
        .filter(|s| s.kind == SpanKind::Server)
        .filter_map(|s| str_attr(s, "a2a.binding"))
        .collect();
    assert!(
        client_bindings.iter().all(|b| *b == "1.0"),
        "{client_bindings:?}"
    );
    assert!(
        server_bindings.iter().all(|b| *b == "0.3"),
        "{server_bindings:?}"
    );
}

/// The broken variants, derived here from the good sessions as `make_broken.py` derives them.
fn derive(variant: &str) -> (String, Vec<SpanRecord>) {
    match variant {
        "dropped-chunk" => {
            let (name, mut spans) = session("long-stream");
            let server = stream_span(&mut spans);
            let sixth = chunk_positions(server)[5];
            server.events.remove(sixth);
            (name, spans)
        }
        "misparented-hop" => {
            let (name, mut spans) = session("chain");
            let servers: Vec<usize> = (0..spans.len())
                .filter(|&i| spans[i].kind == SpanKind::Server)
                .collect();
            let first = spans[servers[0]].span_id;
            spans[servers[1]].parent_id = Some(first);
            (name, spans)
        }
        "illegal-transition" => {
            let (name, mut spans) = session("canceled-task");
            let span = spans
                .iter_mut()
                .rfind(|s| !events(s, "a2a.task.state_change").is_empty())
                .unwrap();
            let mut later = events(span, "a2a.task.state_change")[0].clone();
            let task = event_str(&later, "a2a.task.id").unwrap().to_string();
            later.attributes = Default::default();
            later.attributes.set("from", "canceled");
            later.attributes.set("to", "working");
            later.attributes.set("a2a.task.id", task);
            span.events.push(later);
            (name, spans)
        }
        other => panic!("no variant {other}"),
    }
}

/// A broken variant, derived and as committed, fails exactly `check`.
fn fails_only(variant: &str, check: Check) {
    let (name, derived) = derive(variant);
    assert_eq!(failed(&lint(&name, &derived)), [check], "derived {variant}");
    let (committed_name, committed) = session(&format!("broken/{variant}"));
    assert_eq!(committed_name, name);
    let report = lint(&committed_name, &committed);
    assert_eq!(failed(&report), [check], "{}", report.summary());
    assert!(report.summary().contains(&format!("{check}: FAILED")));
}

#[test]
fn a_dropped_chunk_fails_the_stream_chunks_check() {
    fails_only("dropped-chunk", Check::StreamChunks);
}

#[test]
fn a_misparented_hop_fails_the_propagation_check() {
    fails_only("misparented-hop", Check::Propagation);
}

#[test]
fn an_illegal_transition_fails_the_task_states_check() {
    fails_only("illegal-transition", Check::TaskStates);
}

/// One good session changed by `change`, linted: the checks it fails.
fn break_with(scenario: &str, change: impl FnOnce(&mut Vec<SpanRecord>)) -> Vec<Check> {
    let (name, mut spans) = session(scenario);
    change(&mut spans);
    failed(&lint(&name, &spans))
}

fn client(spans: &mut [SpanRecord]) -> &mut SpanRecord {
    spans
        .iter_mut()
        .find(|s| s.kind == SpanKind::Client)
        .unwrap()
}

#[test]
fn a_forward_whose_parent_is_not_in_the_file_fails_the_parents_check() {
    let checks = break_with("completed-send", |spans| {
        client(spans).parent_id = Some(SpanId(0x1234));
    });
    assert!(checks.contains(&Check::Parents), "{checks:?}");
}

#[test]
fn a_span_with_a_zero_id_fails_the_parents_check() {
    let checks = break_with("peer-timeout", |spans| spans[0].span_id = SpanId(0));
    assert_eq!(checks, [Check::Parents]);
}

#[test]
fn a_forward_in_another_trace_fails_the_propagation_check() {
    let checks = break_with("completed-send", |spans| {
        let c = client(spans);
        c.trace_id = ddwire::trace::TraceId(c.trace_id.0 ^ 1);
    });
    assert!(checks.contains(&Check::Propagation), "{checks:?}");
}

#[test]
fn a_span_of_another_session_fails_the_session_check() {
    let checks = break_with("hub", |spans| {
        spans[1]
            .attributes
            .set("session.id", "another-context-altogether");
    });
    assert_eq!(checks, [Check::Session]);
}

#[test]
fn a_span_without_a_session_id_fails_the_session_check() {
    let checks = break_with("completed-send", |spans| {
        let kept: Vec<_> = spans[0]
            .attributes
            .iter()
            .filter(|(k, _)| *k != "session.id")
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        spans[0].attributes = ddwire::trace::Attributes(kept);
    });
    assert_eq!(checks, [Check::Session]);
}

#[test]
fn a_session_file_under_another_name_fails_the_session_check() {
    let (_, spans) = session("completed-send");
    let report = relay_lint::lint(&spans, Some("renamed.jsonl"));
    assert_eq!(failed(&report), [Check::Session]);
    // Read from nowhere in particular (stdin), the name is not held against it.
    assert!(relay_lint::lint(&spans, None).passed());
}

#[test]
fn a_transition_to_an_unknown_state_fails_the_task_states_check() {
    let checks = break_with("completed-send", |spans| {
        let span = spans
            .iter_mut()
            .find(|s| !events(s, "a2a.task.state_change").is_empty())
            .unwrap();
        let e = span
            .events
            .iter_mut()
            .find(|e| e.name == "a2a.task.state_change")
            .unwrap();
        e.attributes.set("to", "finished");
    });
    assert_eq!(checks, [Check::TaskStates]);
}

/// The positions of a stream's chunk events among its span's events.
fn chunk_positions(server: &SpanRecord) -> Vec<usize> {
    (0..server.events.len())
        .filter(|&i| server.events[i].name == "a2a.message.stream_chunk")
        .collect()
}

#[test]
fn a_stream_with_two_final_chunks_fails_the_stream_chunks_check() {
    let checks = break_with("long-stream", |spans| {
        let server = stream_span(spans);
        let first = chunk_positions(server)[0];
        server.events[first].attributes.set("final", true);
    });
    assert_eq!(checks, [Check::StreamChunks]);
}

#[test]
fn a_stream_that_ended_well_without_a_final_chunk_fails_the_stream_chunks_check() {
    let checks = break_with("long-stream", |spans| {
        let server = stream_span(spans);
        let last = *chunk_positions(server).last().unwrap();
        server.events.remove(last);
    });
    assert_eq!(checks, [Check::StreamChunks]);
}

#[test]
fn an_error_span_without_a_documented_failure_class_fails_the_failure_class_check() {
    let checks = break_with("peer-404", |spans| {
        spans[0]
            .attributes
            .set("a2a.relay.failure_class", "peer_on_fire");
    });
    assert_eq!(checks, [Check::FailureClasses]);
    let checks = break_with("completed-send", |spans| {
        spans[0].status.code = StatusCode::Error;
    });
    assert_eq!(checks, [Check::FailureClasses]);
}

#[test]
fn a_forward_that_outlives_its_server_span_fails_the_time_nesting_check() {
    let checks = break_with("completed-send", |spans| {
        let server_end = spans
            .iter()
            .find(|s| s.kind == SpanKind::Server)
            .unwrap()
            .end_ns;
        client(spans).end_ns = server_end + 5_000_000;
    });
    assert_eq!(checks, [Check::TimeNesting]);
}

#[test]
fn an_event_outside_its_span_fails_the_time_nesting_check() {
    let checks = break_with("long-stream", |spans| {
        let server = stream_span(spans);
        let end = server.end_ns;
        server.events[0].time_ns = end + 1_000_000;
    });
    assert!(checks.contains(&Check::TimeNesting), "{checks:?}");
}

#[test]
fn a_misspelled_relay_attribute_fails_the_attribute_names_check() {
    let checks = break_with("completed-send", |spans| {
        spans[0].attributes.set("sessionId", "x");
    });
    assert_eq!(checks, [Check::AttributeNames]);
    let checks = break_with("long-stream", |spans| {
        stream_span(spans).events[0].name = "a2a.message.chunk".into();
    });
    assert!(checks.contains(&Check::AttributeNames), "{checks:?}");
}

#[test]
fn an_empty_session_file_is_a_typed_error() {
    assert!(matches!(
        relay_lint::read_session(b""),
        Err(TraceError::EmptySession)
    ));
    assert!(matches!(
        relay_lint::read_session(b"\n  \n"),
        Err(TraceError::EmptySession)
    ));
}

#[test]
fn a_non_json_line_is_a_typed_error_naming_its_line() {
    let good = std::fs::read(
        corpus()
            .join("peer-timeout")
            .read_dir()
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path(),
    )
    .unwrap();
    let mut text = good.clone();
    text.extend_from_slice(b"this is not JSON\n");
    match relay_lint::read_session(&text) {
        Err(TraceError::SessionLine {
            line: 2,
            truncated: false,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    let mut binary = good;
    binary.extend_from_slice(b"\xff\xfe\n");
    assert!(matches!(
        relay_lint::read_session(&binary),
        Err(TraceError::SessionLine { line: 2, .. })
    ));
}

#[test]
fn a_truncated_session_file_is_a_typed_error_that_says_so() {
    let path = corpus()
        .join("completed-send")
        .read_dir()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let good = std::fs::read(path).unwrap();
    let cut = &good[..good.len() - 40];
    let error = relay_lint::read_session(cut).unwrap_err();
    assert!(
        matches!(
            error,
            TraceError::SessionLine {
                line: 2,
                truncated: true,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("truncated"), "{error}");
}

#[test]
fn one_caller_trace_making_two_calls_at_once_through_the_relay_lints_clean() {
    // The same call twice, at the same time, from two spans of one caller trace: each SERVER
    // span lies within the other's forward, and neither is that forward's peer.
    let (name, mut spans) = session("completed-send");
    let mut second = spans.clone();
    let fresh = |id: ddwire::trace::SpanId| ddwire::trace::SpanId(id.0 ^ 0x5a5a_5a5a);
    for s in &mut second {
        s.span_id = fresh(s.span_id);
        s.parent_id = match (s.kind, s.parent_id) {
            // Another span of the caller, outside the file.
            (SpanKind::Server, Some(p)) => Some(fresh(fresh(p))),
            (_, p) => p.map(fresh),
        };
    }
    spans.extend(second);
    // (The copy repeats the first call's task ids, which task-states rightly refuses.)
    let failed = failed(&lint(&name, &spans));
    assert!(!failed.contains(&Check::Propagation), "{failed:?}");
    assert!(!failed.contains(&Check::Parents), "{failed:?}");
}

#[test]
fn a_session_file_cannot_drive_the_terminal_that_reads_its_report() {
    let (name, mut spans) = session("completed-send");
    for s in &mut spans {
        s.attributes.set("session.id", "ctx\u{1b}[2J\nforged line");
    }
    let summary = lint(&name, &spans).summary();
    assert!(!summary.contains('\u{1b}'), "{summary:?}");
    assert!(!summary.contains("\nforged line"), "{summary:?}");
}
