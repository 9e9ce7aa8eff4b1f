//! The conductor end to end, with scripted agents over the in-memory A2A wire (the reference's
//! `test_harness.py`): the policy gate, the input check, the agent contract, grounding modes
//! through the linter, and the run store. Spec invariants 3, 7, 11, 12 and 13.

use super::common;

use common::*;
use ddwire::agent::Agent;
use ddwire::agent::builtin::{Hello, Stub};
use ddwire::contract::validate_envelope;
use ddwire::contract::{AgentResult, GroundingMode, Outcome, OutcomeStatus, input_hash};
use ddwire::harness::HarnessError;
use ddwire::harness::store::{NewRun, RunStore};
use ddwire::harness::testkit::{TestHarness, test_principal};
use ddwire::trace::attr;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// The reference's `test-restrictive` profile, as JSON: stub.abstain is enabled but its class
/// needs approval; fake.mismatch is assigned `deposit`; nothing else is enabled.
const RESTRICTIVE: &str = r#"{
  "profile_id": "test-restrictive",
  "version": 2,
  "description": "Restrictive profile for tests.",
  "agents": {"stub.abstain": "advise", "fake.mismatch": "deposit"},
  "actions_requiring_approval": ["advise"]
}
"#;

fn restrictive(agents: Vec<Arc<dyn Agent>>) -> TestHarness {
    TestHarness::with_profile(agents, RESTRICTIVE, Duration::from_secs(10))
}

fn detail(env: &Value) -> String {
    env["problem"]["detail"].as_str().unwrap_or("").to_string()
}

fn doc(run: &ddwire::harness::conductor::Run) -> Value {
    run.envelope.to_document()
}

// --- Policy ----------------------------------------------------------------------------------

/// An agent the profile does not enable fails with `agent-not-permitted`, and is not called.
#[test]
fn disabled_agent_fails_with_problem_details() {
    let agent = ScriptedAgent::new(GroundingMode::InputOnly, reviews()).arc();
    let th = restrictive(vec![dyn_agent(&agent)]);
    let env = doc(&invoke(&th, request("fake.input-only", record())));
    assert!(failed_with(&env, "agent-not-permitted"), "{env}");
    assert_eq!(env["problem"]["http_status"], 403);
    assert!(env.get("payload").is_none());
    assert!(
        env["outcome"]["statement"]
            .as_str()
            .unwrap()
            .ends_with("The agent was not run."),
        "{env}"
    );
    assert_eq!(agent.calls(), 0);
}

/// An agent declaring another action class than the profile assigns it fails with 403
/// `action-class-mismatch`, and is not called.
#[test]
fn an_agent_declaring_another_class_than_assigned_fails_and_is_not_run() {
    let agent = ScriptedAgent::new(GroundingMode::InputOnly, reviews())
        .id("fake.mismatch")
        .arc();
    let th = restrictive(vec![dyn_agent(&agent)]);
    let env = doc(&invoke(&th, request("fake.mismatch", record())));
    assert!(failed_with(&env, "action-class-mismatch"), "{env}");
    assert_eq!(env["problem"]["http_status"], 403);
    assert!(detail(&env).contains("'deposit'"), "{env}");
    assert_eq!(agent.calls(), 0);
}

/// An action class the profile lists as requiring approval is referred to a data steward.
#[test]
fn action_requiring_approval_is_referred() {
    let th = restrictive(vec![Arc::new(Stub::new())]);
    let env = doc(&invoke(&th, request("stub.abstain", message("hello"))));
    assert_eq!(env["outcome"]["status"], "referred");
    assert_eq!(env["outcome"]["reason_code"], "policy_requires_approval");
    assert_eq!(env["outcome"]["referred_to"], "data_steward");
    assert!(env.get("problem").is_none());
}

/// The envelope records the profile the conductor applied: its reference and the SHA-256 of
/// the profile's bytes, in the result and in the store.
#[test]
fn the_envelope_records_the_profile_the_conductor_applied() {
    let th = restrictive(vec![Arc::new(Stub::new())]);
    let run = invoke(&th, request("stub.abstain", message("hello")));
    let digest: String = Sha256::digest(RESTRICTIVE.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        run.envelope.policy_bundle_ref,
        "profile:test-restrictive@v2"
    );
    assert_eq!(run.envelope.policy_digest, digest);
    let stored = stored_envelope(&th.runs, &run.envelope.invocation_id);
    assert_eq!(stored["policy_digest"], digest);
    assert_eq!(stored["policy_bundle_ref"], "profile:test-restrictive@v2");
}

/// Every envelope names whom the invocation acted for, refused runs included.
#[test]
fn the_envelope_records_whom_the_invocation_acted_for() {
    let disabled = ScriptedAgent::new(GroundingMode::None, reviews()).id("fake.disabled");
    let th = TestHarness::with_profile(
        vec![Arc::new(Stub::new()), Arc::new(disabled)],
        r#"{"profile_id": "test-permissive", "agents": {"stub.abstain": "advise"}}"#,
        Duration::from_secs(10),
    );
    let ran = invoke(&th, request("stub.abstain", message("hello")));
    let refused = invoke(&th, request("fake.disabled", record()));
    assert_eq!(ran.envelope.outcome.status, OutcomeStatus::Abstained);
    assert_eq!(refused.envelope.outcome.status, OutcomeStatus::Failed);
    for run in [ran, refused] {
        assert_eq!(run.envelope.acting_for, test_principal());
        let stored = stored_envelope(&th.runs, &run.envelope.invocation_id);
        assert_eq!(stored["acting_for"], principal_doc());
        assert_eq!(stored["acting_for"]["assurance"], "asserted");
    }
}

/// A run the conductor decided before its agent ran (refused by the profile, referred for
/// approval, its input refused) had no output to lint: its report and `grounding.txt` say the
/// linter did not run, never that it passed, and the stored run linted offline says the same.
#[test]
fn a_run_decided_before_its_agent_ran_reports_that_the_linter_did_not_run() {
    let disabled = ScriptedAgent::new(GroundingMode::InputOnly, reviews()).arc();
    let th = restrictive(vec![dyn_agent(&disabled), Arc::new(Stub::new())]);
    let refused = invoke(&th, request("fake.input-only", record()));
    let referred = invoke(&th, request("stub.abstain", message("hi")));
    assert_eq!(referred.envelope.outcome.status, OutcomeStatus::Referred);
    let open = TestHarness::new(vec![Arc::new(Hello::new())]);
    let not_accepted = invoke(&open, request("hello.world", record()));
    assert!(failed_with(&doc(&not_accepted), "input-not-accepted"));
    for (run, runs, why) in [
        (&refused, &th.runs, "the profile does not enable it"),
        (&referred, &th.runs, "referred the run for approval"),
        (
            &not_accepted,
            &open.runs,
            "the input check refused its input",
        ),
    ] {
        let report = &run.report;
        assert!(!report.passed, "{report:?}");
        assert!(
            report.not_run.as_deref().is_some_and(|w| w.contains(why)),
            "{report:?}"
        );
        let id = &run.envelope.invocation_id;
        let summary = grounding_txt(runs, id);
        assert!(summary.starts_with("grounding: not run ["), "{summary}");
        let envelope = stored_envelope(runs, id);
        let offline =
            ddwire::harness::grounding::lint_stored(&stored_spans(runs, id), &envelope, None);
        assert_eq!(&offline, report);
    }
}

// --- Input check -----------------------------------------------------------------------------

/// An input of a class the agent does not accept is a stored `failed` / 422
/// `input-not-accepted`, naming both classes; the agent is not run.
#[test]
fn input_of_an_unaccepted_class_is_a_failed_outcome_and_the_agent_is_not_run() {
    let agent = ScriptedAgent::new(GroundingMode::InputOnly, reviews()).arc();
    let th = TestHarness::new(vec![dyn_agent(&agent)]);
    let run = invoke(&th, request("fake.input-only", claim()));
    let env = doc(&run);
    assert!(failed_with(&env, "input-not-accepted"), "{env}");
    assert_eq!(env["problem"]["http_status"], 422);
    assert!(
        detail(&env).contains("ProbeRecord") && detail(&env).contains("ProbeClaim"),
        "{env}"
    );
    assert!(env.get("input_schema").is_none());
    assert_eq!(agent.calls(), 0);
    assert!(th.harness.conductor.store.has(&run.envelope.invocation_id));
    validate_envelope(&stored_envelope(&th.runs, &run.envelope.invocation_id)).unwrap();
}

/// An input that breaks its class schema is not accepted either, with the schema's errors.
#[test]
fn input_that_breaks_its_class_schema_is_not_accepted_and_the_agent_is_not_run() {
    let agent = ScriptedAgent::new(GroundingMode::Retrieval, checks(vec![source_a()])).arc();
    let th = TestHarness::new(vec![dyn_agent(&agent)]);
    let bad = json!({"schema_class": "ProbeClaim", "subject_uri": "https://example.org/x"});
    let env = doc(&invoke(&th, request("fake.retrieval", bad)));
    assert!(failed_with(&env, "input-not-accepted"), "{env}");
    assert!(detail(&env).contains("'text'"), "{env}");
    assert!(
        env["outcome"]["statement"]
            .as_str()
            .unwrap()
            .starts_with("The input is not a valid ProbeClaim"),
        "{env}"
    );
    assert_eq!(agent.calls(), 0);
}

/// An agent may accept several input classes; each is checked against its own schema and
/// recorded by digest.
#[test]
fn an_agent_may_accept_several_input_classes() {
    let th = TestHarness::new(vec![Arc::new(ScriptedAgent::new(
        GroundingMode::None,
        reviews(),
    ))]);
    for (input, class) in [(record(), probe_record()), (profile(), probe_profile())] {
        let run = invoke(&th, request("fake.none", input));
        assert_eq!(
            run.envelope.outcome.status,
            OutcomeStatus::Succeeded,
            "{}",
            run.envelope.outcome.statement
        );
        assert_eq!(run.envelope.input_schema, Some(class.digest));
    }
    let refused = invoke(&th, request("fake.none", claim()));
    assert_eq!(refused.envelope.outcome.status, OutcomeStatus::Failed);
}

/// A run names the class schemas it was checked against, and the store keeps each by digest.
#[test]
fn a_run_names_the_class_schemas_it_was_checked_against() {
    let th = TestHarness::new(vec![Arc::new(ScriptedAgent::new(
        GroundingMode::None,
        reviews(),
    ))]);
    let run = invoke(&th, request("fake.none", record()));
    let (input, payload) = (probe_record(), probe_review());
    assert_eq!(run.envelope.contract_version, "0.7.0");
    assert_eq!(
        (
            run.envelope.input_schema.clone(),
            run.envelope.payload_schema.clone()
        ),
        (Some(input.digest.clone()), Some(payload.digest.clone()))
    );
    for class in [input, payload] {
        let path = th
            .runs
            .join("schemas")
            .join(format!("{}.json", class.digest));
        let kept: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(kept, class.json_schema);
    }
}

// --- The agent contract ----------------------------------------------------------------------

/// An agent that raises is a failed `agent-error` envelope whose detail carries the error.
#[test]
fn agent_exception_becomes_failed_outcome() {
    let th = TestHarness::new(vec![Arc::new(ScriptedAgent::new(
        GroundingMode::None,
        raises("RuntimeError", "boom"),
    ))]);
    let env = doc(&invoke(&th, request("fake.none", record())));
    assert!(failed_with(&env, "agent-error"), "{env}");
    assert!(detail(&env).contains("RuntimeError: boom"), "{env}");
    assert!(
        env["outcome"]["statement"]
            .as_str()
            .unwrap()
            .starts_with("Agent raised: "),
        "{env}"
    );
}

/// An agent returning a payload of another class than it declared contradicts its
/// specification: `agent-error`, payload withheld.
#[test]
fn payload_of_the_wrong_class_is_a_failed_outcome() {
    let agent = ScriptedAgent::new(GroundingMode::Retrieval, checks(vec![source_a()]))
        .steps(vec![Step::Retrieve(source_a())])
        .payload_class(probe_review());
    let th = TestHarness::new(vec![Arc::new(agent)]);
    let env = doc(&invoke(&th, request("fake.retrieval", claim())));
    assert!(failed_with(&env, "agent-error"), "{env}");
    assert!(detail(&env).contains("declared ProbeReview"), "{env}");
    assert!(
        env["outcome"]["statement"]
            .as_str()
            .unwrap()
            .starts_with("Agent contradicted its specification"),
        "{env}"
    );
    assert!(env.get("payload").is_none());
}

/// A payload its own class schema does not admit is the agent's error too.
#[test]
fn payload_its_class_schema_does_not_admit_is_a_failed_outcome() {
    let hollow = behave(|_, _| {
        let mut good = fact_check_over(&[source_a()]);
        if let Some(p) = &mut good.payload {
            p.0.remove("rationale");
        }
        Ok(good)
    });
    let agent = ScriptedAgent::new(GroundingMode::Retrieval, hollow)
        .steps(vec![Step::Retrieve(source_a())]);
    let th = TestHarness::new(vec![Arc::new(agent)]);
    let env = doc(&invoke(&th, request("fake.retrieval", claim())));
    assert!(failed_with(&env, "agent-error"), "{env}");
    assert!(env.get("payload").is_none());
    assert!(detail(&env).contains("'rationale'"), "{env}");
}

/// A result that breaks the contract is stored as a failed envelope, never raised past the
/// store, and the stored envelope validates.
#[test]
fn a_result_that_breaks_the_contract_is_a_stored_failed_outcome() {
    let cases: Vec<(&str, Behaviour, &str)> = vec![
        (
            "without_reason",
            returns(AgentResult::new(Outcome {
                status: OutcomeStatus::Abstained,
                reason_code: None,
                referred_to: None,
                statement: "No reason.".into(),
            })),
            "agent-error",
        ),
        (
            "succeeded_without_payload",
            returns(AgentResult::new(Outcome::succeeded("Nothing."))),
            // The linter withholds it first.
            "grounding-violation",
        ),
        (
            "failed_without_problem",
            returns(AgentResult::new(Outcome::failed("Gave up."))),
            "agent-error",
        ),
        (
            "unregistered_canonicalisation",
            behave(|_, ctx| {
                let mut result = review_of_input(ctx);
                for e in &mut result.evidence {
                    e.canonicalisation = "unregistered".into();
                }
                Ok(result)
            }),
            "agent-error",
        ),
    ];
    for (name, behaviour, problem) in cases {
        let th = TestHarness::new(vec![Arc::new(ScriptedAgent::new(
            GroundingMode::None,
            behaviour,
        ))]);
        let run = invoke(&th, request("fake.none", record()));
        let env = doc(&run);
        assert!(failed_with(&env, problem), "{name}: {env}");
        assert!(env.get("payload").is_none(), "{name}: {env}");
        let stored = stored_envelope(&th.runs, &run.envelope.invocation_id);
        validate_envelope(&stored).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(stored, env, "{name}");
        // The verdict is reproduced offline from the store: the withheld result is put back
        // from the agent's reply as received.
        let id = &run.envelope.invocation_id;
        let reply = std::fs::read(th.runs.join(id).join("agent-result.json"))
            .ok()
            .map(|b| serde_json::from_slice::<Value>(&b).unwrap());
        let offline = ddwire::harness::grounding::lint_stored(
            &stored_spans(&th.runs, id),
            &stored,
            reply.as_ref(),
        );
        assert_eq!(offline, run.report, "{name}");
    }
}

/// An unknown agent is a caller error that lists the agents the harness knows; no run.
#[test]
fn unknown_agent_is_a_caller_error() {
    let th = TestHarness::new(vec![Arc::new(Stub::new())]);
    let err = th.invoke(&request("nope", message("hello"))).unwrap_err();
    assert!(matches!(err, HarnessError::UnknownAgent { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("'nope'") && text.contains("'stub.abstain'"),
        "{text}"
    );
    assert!(index_ids(&th.runs).is_empty());
}

/// A request outside the contract is a caller error, not a run.
#[test]
fn a_malformed_request_is_a_caller_error() {
    let th = TestHarness::new(vec![Arc::new(Stub::new())]);
    let mut bad = request("stub.abstain", message("hello"));
    bad["invocation_id"] = json!("not-a-uuid");
    assert!(matches!(th.invoke(&bad), Err(HarnessError::Contract(_))));
    let mut no_class = request("stub.abstain", json!({"message_text": "hi"}));
    no_class["agent_id"] = json!("stub.abstain");
    assert!(matches!(
        th.invoke(&no_class),
        Err(HarnessError::Contract(_))
    ));
    assert!(index_ids(&th.runs).is_empty());
}

// --- Grounding through the conductor ---------------------------------------------------------

/// The conductor records the declared mode on the envelope and on the root span, with the
/// input hash of the stored request's input (the conductor alone fills them, on the root span only).
#[test]
fn conductor_records_the_declared_mode_on_envelope_and_root_span() {
    for (mode, behaviour, input, steps) in [
        (GroundingMode::InputOnly, reviews(), record(), vec![]),
        (GroundingMode::None, reviews(), record(), vec![]),
        (
            GroundingMode::Retrieval,
            checks(vec![source_a()]),
            claim(),
            vec![Step::Retrieve(source_a())],
        ),
    ] {
        let agent = ScriptedAgent::new(mode, behaviour).steps(steps);
        let id = agent.spec().agent_id.clone();
        let th = TestHarness::new(vec![Arc::new(agent)]);
        let run = invoke(&th, request(&id, input));
        assert_eq!(
            run.envelope.outcome.status,
            OutcomeStatus::Succeeded,
            "{}",
            run.envelope.outcome.statement
        );
        assert_eq!(run.envelope.grounding_mode, mode);
        assert!(run.report.passed && run.report.mode.as_deref() == Some(mode.as_str()));
        let spans = stored_spans(&th.runs, &run.envelope.invocation_id);
        let root = only(&spans, "invoke_agent");
        assert_eq!(root.owned_str(attr::GROUNDING_MODE), Some(mode.as_str()));
        let stored_input = &stored_request(&th.runs, &run.envelope.invocation_id)["input"];
        assert_eq!(
            root.owned_str(attr::INPUT_HASH),
            Some(input_hash(stored_input).as_str())
        );
        assert_eq!(root.owned_str(attr::OUTCOME), Some("succeeded"));
        assert_eq!(root.owned_str(attr::AGENT_ID), Some(id.as_str()));
        // Only the root carries the conductor's attributes.
        for s in spans.iter().filter(|s| s.name != "invoke_agent") {
            assert!(s.owned(attr::GROUNDING_MODE).is_none() && s.owned(attr::INPUT_HASH).is_none());
        }
    }
}

/// An input_only agent may call a model without retrieving.
#[test]
fn input_only_agent_may_call_a_model_without_retrieving() {
    let th = TestHarness::new(vec![Arc::new(
        ScriptedAgent::new(GroundingMode::InputOnly, reviews()).steps(vec![Step::Chat("m")]),
    )]);
    let run = invoke(&th, request("fake.input-only", record()));
    assert_eq!(run.envelope.outcome.status, OutcomeStatus::Succeeded);
    assert_eq!((run.report.chat_count, run.report.retrieval_count), (1, 0));
}

/// A `none` agent that calls a model is withheld (N1): failed, payload and evidence cleared.
#[test]
fn none_agent_that_calls_a_model_is_withheld() {
    let th = TestHarness::new(vec![Arc::new(
        ScriptedAgent::new(GroundingMode::None, reviews()).steps(vec![Step::Chat("m")]),
    )]);
    let run = invoke(&th, request("fake.none", record()));
    let env = doc(&run);
    assert!(failed_with(&env, "grounding-violation"), "{env}");
    assert!(env.get("payload").is_none() && env.get("payload_schema").is_none());
    assert_eq!(env["evidence"], json!([]));
    assert!(
        run.report.violations.iter().any(|v| v.starts_with("N1")),
        "{:?}",
        run.report.violations
    );
    assert!(
        env["outcome"]["statement"]
            .as_str()
            .unwrap()
            .starts_with("Output withheld: it failed the grounding linter."),
        "{env}"
    );
    // The root still says what the agent claimed, as the reference's does.
    let spans = stored_spans(&th.runs, &run.envelope.invocation_id);
    assert_eq!(
        only(&spans, "invoke_agent").owned_str(attr::OUTCOME),
        Some("succeeded")
    );
}

/// An input_only agent that retrieves is withheld (R1).
#[test]
fn input_only_agent_that_retrieves_is_withheld() {
    let th = TestHarness::new(vec![Arc::new(
        ScriptedAgent::new(GroundingMode::InputOnly, reviews())
            .steps(vec![Step::Retrieve(source_a())]),
    )]);
    let run = invoke(&th, request("fake.input-only", record()));
    assert_eq!(run.envelope.outcome.status, OutcomeStatus::Failed);
    assert!(
        run.report.violations.iter().any(|v| v.starts_with("R1")),
        "{:?}",
        run.report.violations
    );
}

/// A retrieval agent that rests only on what it retrieved passes, with a 32-hex trace id.
#[test]
fn retrieval_agent_passes_when_it_rests_only_on_what_it_retrieved() {
    let th = TestHarness::new(vec![Arc::new(
        ScriptedAgent::new(
            GroundingMode::Retrieval,
            checks(vec![source_a(), source_b()]),
        )
        .steps(vec![
            Step::Retrieve(source_a()),
            Step::Retrieve(source_b()),
            Step::Chat("m"),
        ]),
    )]);
    let run = invoke(&th, request("fake.retrieval", claim()));
    assert_eq!(
        run.envelope.outcome.status,
        OutcomeStatus::Succeeded,
        "{}",
        run.envelope.outcome.statement
    );
    assert!(run.report.passed);
    assert_eq!((run.report.retrieval_count, run.report.chat_count), (2, 1));
    let trace_id = run.envelope.telemetry.trace_id.clone().unwrap();
    assert_eq!(trace_id.len(), 32);
    assert!(
        trace_id
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
}

/// A payload resting on something never retrieved is withheld (G2).
#[test]
fn identity_not_retrieved_is_withheld() {
    let th = TestHarness::new(vec![Arc::new(
        ScriptedAgent::new(
            GroundingMode::Retrieval,
            checks(vec![source_a(), source_b()]),
        )
        .steps(vec![Step::Retrieve(source_a())]),
    )]);
    let run = invoke(&th, request("fake.retrieval", claim()));
    let env = doc(&run);
    assert!(failed_with(&env, "grounding-violation"), "{env}");
    assert!(env.get("payload").is_none());
    assert!(
        run.report
            .violations
            .iter()
            .any(|v| v.starts_with("G2") && v.contains("'src:b'")),
        "{:?}",
        run.report.violations
    );
}

/// A model call before the first retrieval fails G1.
#[test]
fn chat_before_retrieval_fails_g1() {
    let th = TestHarness::new(vec![Arc::new(
        ScriptedAgent::new(GroundingMode::Retrieval, checks(vec![source_a()]))
            .steps(vec![Step::Chat("m"), Step::Retrieve(source_a())]),
    )]);
    let run = invoke(&th, request("fake.retrieval", claim()));
    assert_eq!(run.envelope.outcome.status, OutcomeStatus::Failed);
    assert!(
        run.report.violations.iter().any(|v| v.starts_with("G1")),
        "{:?}",
        run.report.violations
    );
}

/// The linter reaches the same verdict offline, over the written spans and envelope, and the
/// stored summary names the mode.
#[test]
fn linter_runs_offline_over_written_spans() {
    let th = TestHarness::new(vec![Arc::new(
        ScriptedAgent::new(GroundingMode::InputOnly, reviews()).steps(vec![Step::Chat("m")]),
    )]);
    let run = invoke(&th, request("fake.input-only", record()));
    let id = &run.envelope.invocation_id;
    let report = lint_stored(&th.runs, id);
    assert!(report.passed && report.mode.as_deref() == Some("input_only"));
    assert_eq!(report, run.report);
    let summary = grounding_txt(&th.runs, id);
    assert!(
        summary.starts_with("grounding: passed [input_only]"),
        "{summary}"
    );
    assert_eq!(summary, format!("{}\n", run.report.summary()));
}

// --- The run store ---------------------------------------------------------------------------

/// Every invocation is stored with its files, in an index whose ids sort chronologically; the
/// span file holds the conductor's spans then the agent's, one JSON span per line (spec
/// invariant 11).
#[test]
fn every_invocation_is_stored_with_its_trace() {
    let th = TestHarness::new(vec![
        Arc::new(Stub::new()),
        Arc::new(
            ScriptedAgent::new(GroundingMode::InputOnly, reviews()).steps(vec![Step::Chat("m")]),
        ),
    ]);
    let a = invoke(&th, request("stub.abstain", message("hello")));
    let b = invoke(&th, request("fake.input-only", record()));
    let ids = index_ids(&th.runs);
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(
        ids,
        [
            a.envelope.invocation_id.clone(),
            b.envelope.invocation_id.clone()
        ]
    );
    assert_eq!(ids, sorted);
    for run in [&a, &b] {
        let dir = th.runs.join(&run.envelope.invocation_id);
        assert_eq!(run.run_dir, dir);
        for file in [
            "envelope.json",
            "request.json",
            "spans.jsonl",
            "grounding.txt",
        ] {
            assert!(dir.join(file).is_file(), "{file}");
        }
        assert_eq!(
            stored_envelope(&th.runs, &run.envelope.invocation_id),
            run.envelope.to_document()
        );
    }
    // The index line is the envelope, compact.
    let index = std::fs::read_to_string(th.runs.join("invocations.jsonl")).unwrap();
    let first: Value = serde_json::from_str(index.lines().next().unwrap()).unwrap();
    assert_eq!(first, a.envelope.to_document());

    let lines = span_lines(&th.runs, &b.envelope.invocation_id);
    let services: Vec<String> = lines
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("one JSON span per line");
            v["resource"]["attributes"]["service.name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let names: Vec<String> = stored_spans(&th.runs, &b.envelope.invocation_id)
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(names, ["policy_gate", "invoke_agent", "chat"]);
    assert_eq!(
        services,
        ["ddwire-harness", "ddwire-harness", "fake.input-only"]
    );
}

/// A reused invocation id is refused before anything runs, and the stored run is kept as it was.
#[test]
fn a_reused_invocation_id_is_refused_and_the_stored_run_kept() {
    let agent = ScriptedAgent::new(GroundingMode::None, reviews()).arc();
    let th = TestHarness::new(vec![dyn_agent(&agent)]);
    let req = request("fake.none", record());
    let first = invoke(&th, req.clone());
    let id = first.envelope.invocation_id.clone();
    let path = th.runs.join(&id).join("envelope.json");
    let stored = std::fs::read(&path).unwrap();

    let err = th.invoke(&req).unwrap_err();
    assert!(
        matches!(err, HarnessError::DuplicateInvocation { .. }),
        "{err}"
    );
    assert!(err.to_string().contains(&id), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), stored);
    assert_eq!(index_ids(&th.runs), [id]);
    assert_eq!(agent.calls(), 1);
}

/// The store never overwrites a run, whoever asks.
#[test]
fn the_store_never_overwrites_a_run() {
    let th = TestHarness::new(vec![Arc::new(Stub::new())]);
    let run = invoke(&th, request("stub.abstain", message("hello")));
    let id = run.envelope.invocation_id.clone();
    let before = std::fs::read(th.runs.join(&id).join("envelope.json")).unwrap();
    let mut altered = run.envelope.to_document();
    altered["outcome"]["statement"] = json!("Rewritten.");
    let err = RunStore::open(&th.runs)
        .unwrap()
        .append(&NewRun {
            envelope: &altered,
            request: &json!({}),
            spans: &[],
            grounding: "grounding: passed [none] (0 retrieval, 0 chat spans)",
            schemas: &[],
            agent_reply: None,
        })
        .unwrap_err();
    assert!(
        matches!(err, HarnessError::DuplicateInvocation { .. }),
        "{err}"
    );
    assert_eq!(
        std::fs::read(th.runs.join(&id).join("envelope.json")).unwrap(),
        before
    );
    assert_eq!(index_ids(&th.runs), [id]);
}

/// The energy slots exist and say, honestly, that nothing was measured; every envelope is for
/// a person to review.
#[test]
fn energy_footprint_slots_are_present_but_honestly_not_measured() {
    let th = TestHarness::new(vec![Arc::new(Stub::new())]);
    let run = invoke(&th, request("stub.abstain", message("hello")));
    let stored = stored_envelope(&th.runs, &run.envelope.invocation_id);
    for env in [run.envelope.to_document(), stored] {
        assert_eq!(env["telemetry"]["energy_method"], "not_measured");
        assert!(
            env["telemetry"]
                .as_object()
                .unwrap()
                .get("energy_estimate_j")
                .is_some_and(Value::is_null)
        );
        assert_eq!(env["requires_human_review"], true);
    }
}

/// The stub accepts every shipped input class and abstains, in mode `none`.
#[test]
fn stub_abstains_on_a_message() {
    let th = TestHarness::new(vec![Arc::new(Stub::new())]);
    let run = invoke(&th, request("stub.abstain", message("hello")));
    assert_eq!(run.envelope.outcome.status, OutcomeStatus::Abstained);
    assert_eq!(
        run.envelope.outcome.reason_code.map(|r| r.as_str()),
        Some("capability_not_implemented")
    );
    assert_eq!(run.envelope.grounding_mode, GroundingMode::None);
    assert!(run.envelope.requires_human_review);
}

/// After a run, the conductor holds no grant and the next run starts clean: every run's spans
/// are its own (a long-running harness does not grow with every invocation).
#[test]
fn the_conductor_keeps_no_spans_after_a_run() {
    let th = TestHarness::new(vec![Arc::new(
        ScriptedAgent::new(GroundingMode::InputOnly, reviews()).steps(vec![Step::Chat("m")]),
    )]);
    let first = invoke(&th, request("fake.input-only", record()));
    let second = invoke(&th, request("fake.input-only", record()));
    assert_eq!(th.harness.conductor.live_grants(), 0);
    for run in [&first, &second] {
        let spans = stored_spans(&th.runs, &run.envelope.invocation_id);
        assert_eq!(spans.len(), 3, "{spans:?}");
        let trace = run.envelope.telemetry.trace_id.clone().unwrap();
        assert!(spans.iter().all(|s| s.trace_id.to_string() == trace));
    }
    assert_ne!(
        first.envelope.telemetry.trace_id,
        second.envelope.telemetry.trace_id
    );
}
