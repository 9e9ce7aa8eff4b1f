//! A panic anywhere in a run becomes a failed envelope and a stored run, never a hang: no
//! grant is left waiting for a child, no invocation id stays taken. Panics are injected where
//! a bug would raise them: in the HTTP call to an agent (the test kit's
//! `panic_in_calls_to`), and in the conductor's own stages (a panicking stage observer). The
//! issue's probe, a non-ASCII `traceparent` on a delegation callback, is repeated too.

use super::common;

use common::*;
use ddwire::agent::builtin::{Director, Hello};
use ddwire::contract::{GroundingMode, InvocationRequest, OutcomeStatus, ProblemType};
use ddwire::harness::HarnessError;
use ddwire::harness::conductor::{Phase, Run, RunTrace, Stage};
use ddwire::harness::testkit::{TestHarness, test_principal};
use ddwire::wire::a2a::model::TaskState;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Run `f` with the harness on a thread of its own; fail (rather than hang) if it has not
/// returned within a generous bound.
fn within<T: Send + 'static>(
    th: &Arc<TestHarness>,
    f: impl FnOnce(&TestHarness) -> T + Send + 'static,
) -> T {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let th = Arc::clone(th);
    std::thread::spawn(move || {
        let _ = tx.send(f(&th));
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the run returned (a panic must never leave it waiting)")
}

/// Nothing held: no grant, no running id.
fn assert_nothing_held(th: &TestHarness) {
    assert_eq!(th.conductor().live_grants(), 0, "a grant outlived its run");
    assert_eq!(th.conductor().running(), 0, "an invocation id stayed taken");
}

fn problem_detail(run: &Run) -> String {
    let problem = run.envelope.problem.clone().expect("a problem");
    assert_eq!(
        ProblemType::from_uri(&problem.type_),
        Some(ProblemType::AgentError)
    );
    problem.detail.unwrap_or_default()
}

#[test]
fn a_panic_in_an_agent_call_is_a_failed_stored_run_and_frees_its_id() {
    let th = Arc::new(TestHarness::new(vec![Arc::new(Hello::new())]));
    th.panic_in_calls_to(Some("hello.world"));
    let doc = request("hello.world", message("hi"));
    let id = doc["invocation_id"].as_str().unwrap().to_string();
    let run = within(&th, move |th| th.invoke(&doc)).expect("a run, not an error");
    assert_eq!(run.envelope.outcome.status, OutcomeStatus::Failed);
    let detail = problem_detail(&run);
    assert!(
        detail.contains("the call panicked in the harness: injected panic"),
        "{detail}"
    );
    // Stored, with the conductor's trace, and linted like any run.
    assert_eq!(index_ids(&th.runs), std::slice::from_ref(&id));
    assert_eq!(
        stored_envelope(&th.runs, &id)["outcome"]["status"],
        "failed"
    );
    assert!(!span_lines(&th.runs, &id).is_empty());
    assert_nothing_held(&th);
    // The id is used up as a finished run's is, not stuck as a running one's.
    let again = request("hello.world", message("hi"));
    let mut same = again.clone();
    same["invocation_id"] = json!(id);
    assert!(matches!(
        th.invoke(&same),
        Err(HarnessError::DuplicateInvocation { .. })
    ));
    th.panic_in_calls_to(None);
    assert_eq!(
        th.invoke(&again).unwrap().envelope.outcome.status,
        OutcomeStatus::Succeeded
    );
}

#[test]
fn over_a2a_a_panic_in_an_agent_call_is_a_completed_task_with_a_failed_envelope() {
    let th = TestHarness::new(vec![Arc::new(Hello::new())]);
    th.panic_in_calls_to(Some("hello.world"));
    let task = send(&th, request("hello.world", message("hi")));
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let envelope = envelope_of(&task);
    assert_eq!(envelope["outcome"]["status"], "failed");
    assert_nothing_held(&th);
}

/// A delegation agent that delegates `record()` to `fake.none` and relays what came back,
/// whatever its status.
fn relaying() -> ScriptedAgent {
    ScriptedAgent::new(
        GroundingMode::Delegation,
        behave(|_, ctx| {
            let delegate = ctx.delegate.as_ref().expect("a grant");
            let child = delegate.call(ctx.tracer, "fake.none", input(record()))?;
            Ok(reply_over(ctx, &[&child]))
        }),
    )
}

#[test]
fn a_panic_in_a_delegated_childs_agent_call_leaves_no_grant_waiting() {
    let th = Arc::new(TestHarness::new(vec![
        Arc::new(relaying()),
        Arc::new(ScriptedAgent::new(GroundingMode::None, reviews())),
    ]));
    th.panic_in_calls_to(Some("fake.none"));
    let doc = request("fake.delegation", message("hello"));
    let parent = within(&th, move |th| th.invoke(&doc)).expect("the parent's run");
    assert_eq!(
        parent.envelope.outcome.status,
        OutcomeStatus::Succeeded,
        "{:?}",
        parent.envelope.outcome
    );
    let [delegation] = parent.envelope.delegations.as_slice() else {
        panic!("one delegation: {:?}", parent.envelope.delegations)
    };
    assert_eq!(delegation.delegated_status, OutcomeStatus::Failed);
    let child = stored_envelope(&th.runs, &delegation.delegated_invocation_id);
    assert_eq!(child["parent_invocation_id"], parent.envelope.invocation_id);
    assert!(
        child["problem"]["detail"]
            .as_str()
            .unwrap()
            .contains("the call panicked in the harness"),
        "{child}"
    );
    assert_nothing_held(&th);
}

#[test]
fn a_panic_in_a_delegation_agents_own_call_revokes_its_grant() {
    let th = Arc::new(TestHarness::new(vec![
        Arc::new(relaying()),
        Arc::new(ScriptedAgent::new(GroundingMode::None, reviews())),
    ]));
    th.panic_in_calls_to(Some("fake.delegation"));
    let doc = request("fake.delegation", message("hello"));
    let parent = within(&th, move |th| th.invoke(&doc)).expect("the parent's run");
    assert_eq!(parent.envelope.outcome.status, OutcomeStatus::Failed);
    assert_nothing_held(&th);
}

/// Spec invariant 12's promise for a stage the conductor runs itself: an observer that panics
/// mid-run (a bug in a transport) still leaves a stored, failed run and nothing held.
#[test]
fn a_panic_outside_the_agent_call_is_stored_as_a_failed_run() {
    for stage in [Stage::PolicyGate, Stage::AgentCall, Stage::GroundingCheck] {
        let th = TestHarness::new(vec![Arc::new(Hello::new())]);
        let request_doc = request("hello.world", message("hi"));
        let id = request_doc["invocation_id"].as_str().unwrap().to_string();
        let observer = move |s: Stage, phase: Phase| {
            if s == stage && phase == Phase::Finished {
                panic!("observer of {} failed", s.name());
            }
        };
        let run = th
            .conductor()
            .invoke_observed(
                InvocationRequest::from_value(&request_doc).unwrap(),
                &test_principal(),
                RunTrace::new(None),
                &observer,
            )
            .expect("a stored run, not an error");
        assert_eq!(run.envelope.outcome.status, OutcomeStatus::Failed);
        let detail = problem_detail(&run);
        assert!(
            detail.contains(&format!(
                "HarnessPanic: the harness panicked while running the agent: observer of {} failed",
                stage.name()
            )),
            "{detail}"
        );
        let stored = stored_envelope(&th.runs, &id);
        assert_eq!(stored["outcome"]["status"], "failed");
        assert_eq!(
            stored["telemetry"]["trace_id"],
            run.envelope.telemetry.trace_id.clone().unwrap()
        );
        let spans = span_lines(&th.runs, &id);
        assert_eq!(spans.len(), 1, "the run's own root span: {spans:?}");
        assert!(
            spans[0].starts_with(r#"{"name": "invoke_agent""#),
            "{spans:?}"
        );
        assert_nothing_held(&th);
    }
}

/// A parent that delegated and then panicked (after its agent call) still records the child
/// it delegated, rebuilt from the stored child.
#[test]
fn a_parent_that_panics_after_delegating_still_records_its_child() {
    let th = TestHarness::new(vec![
        Arc::new(relaying()),
        Arc::new(ScriptedAgent::new(GroundingMode::None, reviews())),
    ]);
    let observer = |s: Stage, phase: Phase| {
        if s == Stage::GroundingCheck && phase == Phase::Started {
            panic!("the linter's observer failed");
        }
    };
    let run = th
        .conductor()
        .invoke_observed(
            InvocationRequest::from_value(&request("fake.delegation", message("hello"))).unwrap(),
            &test_principal(),
            RunTrace::new(None),
            &observer,
        )
        .unwrap();
    assert_eq!(run.envelope.outcome.status, OutcomeStatus::Failed);
    let [delegation] = run.envelope.delegations.as_slice() else {
        panic!("one delegation: {:?}", run.envelope.delegations)
    };
    let child = stored_envelope(&th.runs, &delegation.delegated_invocation_id);
    assert_eq!(
        ddwire::contract::envelope_hash(&child),
        delegation.content_hash
    );
    assert_nothing_held(&th);
}

/// A callback's task state and failure detail.
type Answer = (TaskState, Option<String>);

/// The issue's probe: a non-ASCII `traceparent` on a delegation callback. The child runs in a
/// trace of its own (the link is dropped, as for any invalid traceparent); nothing panics,
/// nothing hangs, the grant is revoked when the parent returns.
#[test]
fn a_non_ascii_traceparent_on_the_delegation_path_neither_panics_nor_hangs() {
    let hostile = [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0é",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-€1",
        "é0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    ];
    let answers: Arc<Mutex<Vec<Answer>>> = Arc::default();
    let keep = Arc::clone(&answers);
    let sender = ScriptedAgent::new(
        GroundingMode::Delegation,
        behave(move |_, ctx| {
            let delegate = ctx.delegate.clone().expect("a grant");
            for traceparent in hostile {
                let task = send_delegated(&delegate, traceparent, request("fake.none", record()))
                    .map_err(|e| ddwire::agent::AgentError::new("Probe", e.to_string()))?;
                keep.lock()
                    .unwrap()
                    .push((task.status.state, task.failure_detail()));
            }
            Ok(abstain("Sent hostile traceparents."))
        }),
    );
    let th = Arc::new(TestHarness::new(vec![
        Arc::new(sender),
        Arc::new(ScriptedAgent::new(GroundingMode::None, reviews())),
    ]));
    let doc = request("fake.delegation", message("hello"));
    let parent = within(&th, move |th| th.invoke(&doc)).expect("the parent's run");
    assert_eq!(parent.envelope.outcome.status, OutcomeStatus::Abstained);
    let answers = answers.lock().unwrap().clone();
    assert_eq!(answers.len(), 3);
    for (state, detail) in &answers {
        assert_eq!(*state, TaskState::Completed, "{detail:?}");
    }
    assert_eq!(parent.envelope.delegations.len(), 3);
    for d in &parent.envelope.delegations {
        let child = stored_envelope(&th.runs, &d.delegated_invocation_id);
        assert_eq!(child["outcome"]["status"], "succeeded");
        // An invalid traceparent restarts the trace: the child's root has no link.
        let root: Value = serde_json::from_str(
            span_lines(&th.runs, &d.delegated_invocation_id)
                .iter()
                .find(|l| l.starts_with(r#"{"name": "invoke_agent""#))
                .expect("the child's root span"),
        )
        .unwrap();
        assert_eq!(root["links"], json!([]));
    }
    assert_nothing_held(&th);
}

/// The director, a built-in delegation agent, delegates through the harness to an agent whose
/// calls panic: its run completes, relaying the child's failure, and nothing is held.
#[test]
fn the_director_survives_a_child_whose_call_panics() {
    let th = Arc::new(TestHarness::new(vec![
        Arc::new(Director::new()),
        Arc::new(Hello::new()),
    ]));
    th.panic_in_calls_to(Some("hello.world"));
    let doc = request("director.route", message("hello there"));
    let run = within(&th, move |th| th.invoke(&doc)).expect("the director's run");
    assert_eq!(run.envelope.delegations.len(), 1, "{:?}", run.envelope);
    assert_eq!(
        run.envelope.delegations[0].delegated_status,
        OutcomeStatus::Failed
    );
    assert_nothing_held(&th);
}
