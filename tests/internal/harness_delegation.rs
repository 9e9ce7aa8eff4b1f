//! Delegation through the harness (the reference's `test_delegation.py`): a delegation agent's
//! call back to the harness, over the in-memory A2A wire, runs a governed and stored child
//! that the parent records. Spec invariants 5 and 8.

use super::common;

use common::*;
use ddwire::agent::AgentError;
use ddwire::agent::builtin::{Director, Hello};
use ddwire::agent::delegate::Delegated;
use ddwire::contract::{
    AgentResult, GroundingMode, InvocationRequest, Outcome, OutcomeStatus, envelope_hash,
};
use ddwire::harness::HarnessError;
use ddwire::harness::conductor::Callback;
use ddwire::harness::identity::{Authenticator, token_digest};
use ddwire::harness::testkit::{HARNESS_URL, TestHarness, test_principal};
use ddwire::ids::new_uuid7;
use ddwire::trace::attr;
use ddwire::wire::a2a::artifact;
use ddwire::wire::a2a::model::{Part, TaskState};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

fn child_agent() -> ScriptedAgent {
    ScriptedAgent::new(GroundingMode::None, reviews())
}

/// A delegation agent that delegates `record()` to each target and relays the results.
fn delegating(targets: &[&'static str]) -> ScriptedAgent {
    let targets = targets.to_vec();
    ScriptedAgent::new(
        GroundingMode::Delegation,
        behave(move |_, ctx| {
            let delegate = ctx
                .delegate
                .as_ref()
                .expect("a delegation agent is given a grant");
            let done: Vec<Delegated> = targets
                .iter()
                .map(|t| delegate.call(ctx.tracer, t, input(record())))
                .collect::<Result<_, _>>()?;
            Ok(reply_over(ctx, &done.iter().collect::<Vec<_>>()))
        }),
    )
}

/// An unsigned callback presenting `token`, with nothing else.
fn callback(token: &str) -> Callback<'_> {
    Callback {
        token,
        ..Callback::default()
    }
}

/// A shared list a behaviour writes to and the test reads.
fn shared<T>() -> Arc<Mutex<Vec<T>>> {
    Arc::new(Mutex::new(Vec::new()))
}

/// Spec invariant 8: the child is stored with its lineage and conversation, recorded by the
/// parent (agent, version, status, the hash of the stored child), stored before the parent, in
/// a trace of its own linked to the parent's `delegate` span; both lint clean.
#[test]
fn a_delegated_child_is_stored_with_its_lineage_and_recorded_by_the_parent() {
    let child = child_agent().arc();
    let th = TestHarness::new(vec![
        Arc::new(delegating(&["fake.none"])),
        dyn_agent(&child),
    ]);
    let conversation = new_uuid7();
    let mut doc = request("fake.delegation", message("hello"));
    doc["conversation_id"] = json!(conversation);
    let parent = invoke(&th, doc).envelope;

    assert_eq!(
        parent.outcome.status,
        OutcomeStatus::Succeeded,
        "{}",
        parent.outcome.statement
    );
    assert_eq!(
        parent.conversation_id.as_deref(),
        Some(conversation.as_str())
    );
    let [delegation] = parent.delegations.as_slice() else {
        panic!("one delegation: {:?}", parent.delegations)
    };
    assert_eq!(
        (
            delegation.delegated_agent_id.as_str(),
            delegation.delegated_agent_version.as_str()
        ),
        ("fake.none", "0")
    );
    assert_eq!(delegation.delegated_status, OutcomeStatus::Succeeded);
    assert_eq!(child.calls(), 1);

    let child_id = delegation.delegated_invocation_id.clone();
    let stored_child = stored_envelope(&th.runs, &child_id);
    assert_eq!(stored_child["parent_invocation_id"], parent.invocation_id);
    assert_eq!(stored_child["conversation_id"], conversation);
    assert_eq!(stored_child["acting_for"], principal_doc());
    assert_eq!(envelope_hash(&stored_child), delegation.content_hash);
    // The parent's stored envelope carries the same record.
    let stored_parent = stored_envelope(&th.runs, &parent.invocation_id);
    assert_eq!(
        stored_parent["delegations"][0]["content_hash"],
        delegation.content_hash
    );

    // Stored before the parent, each in a trace of its own.
    assert_eq!(
        index_ids(&th.runs),
        [child_id.clone(), parent.invocation_id.clone()]
    );
    assert_ne!(
        stored_child["telemetry"]["trace_id"],
        stored_parent["telemetry"]["trace_id"]
    );

    // The child's root starts a new trace, linked to (not nested in) the parent's delegate span,
    // which names the child and its hash.
    let parent_spans = stored_spans(&th.runs, &parent.invocation_id);
    let delegate = only(&parent_spans, "delegate");
    assert_eq!(delegate.owned_str(attr::AGENT_ID), Some("fake.none"));
    assert_eq!(
        delegate.owned_str(attr::SOURCE_ID),
        Some(format!("invocation:{child_id}").as_str())
    );
    assert_eq!(
        delegate.owned_str(attr::CONTENT_HASH),
        Some(delegation.content_hash.as_str())
    );
    let child_spans = stored_spans(&th.runs, &child_id);
    let child_root = only(&child_spans, "invoke_agent");
    assert_eq!(child_root.parent_id, None);
    assert_ne!(child_root.trace_id, delegate.trace_id);
    assert_eq!(child_root.links.len(), 1);
    assert_eq!(
        (child_root.links[0].trace_id, child_root.links[0].span_id),
        (delegate.trace_id, delegate.span_id)
    );

    let parent_report = lint_stored(&th.runs, &parent.invocation_id);
    assert!(parent_report.passed, "{:?}", parent_report.violations);
    let child_report = lint_stored(&th.runs, &child_id);
    assert!(child_report.passed, "{:?}", child_report.violations);
    assert_eq!(th.harness.conductor.live_grants(), 0);
}

/// Only a delegation agent invoked at the top level is given a grant.
#[test]
fn only_a_delegation_agent_is_given_a_grant() {
    let seen = shared::<(String, Option<String>)>();
    let (s1, s2) = (Arc::clone(&seen), Arc::clone(&seen));
    let none = ScriptedAgent::new(
        GroundingMode::None,
        behave(move |_, ctx| {
            s1.lock()
                .unwrap()
                .push(("none".into(), ctx.delegate.as_ref().map(|d| d.url.clone())));
            Ok(review_of_input(ctx))
        }),
    );
    let delegation = ScriptedAgent::new(
        GroundingMode::Delegation,
        behave(move |_, ctx| {
            s2.lock().unwrap().push((
                "delegation".into(),
                ctx.delegate.as_ref().map(|d| d.url.clone()),
            ));
            Ok(abstain("Nothing to delegate."))
        }),
    );
    let th = TestHarness::new(vec![Arc::new(none), Arc::new(delegation)]);
    invoke(&th, request("fake.none", record()));
    invoke(&th, request("fake.delegation", message("hello")));
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [
            ("none".to_string(), None),
            ("delegation".to_string(), Some(HARNESS_URL.to_string()))
        ]
    );
    assert_eq!(th.harness.conductor.live_grants(), 0);
}

/// A caller may not set lineage; a made-up token, or a real one used after its parent finished,
/// is refused (by the conductor, and by the harness over A2A), and nothing runs.
#[test]
fn a_caller_may_not_set_lineage_or_use_an_unknown_or_expired_token() {
    let tokens = shared::<String>();
    let keep = Arc::clone(&tokens);
    let th = TestHarness::new(vec![
        Arc::new(ScriptedAgent::new(
            GroundingMode::Delegation,
            behave(move |_, ctx| {
                keep.lock()
                    .unwrap()
                    .push(ctx.delegate.as_ref().unwrap().token.clone());
                Ok(abstain("Kept the token."))
            }),
        )),
        Arc::new(child_agent()),
    ]);
    let conductor = &th.harness.conductor;
    let mut forged = request("fake.delegation", message("hello"));
    forged["parent_invocation_id"] = json!(new_uuid7());
    let err = th.invoke(&forged).unwrap_err();
    assert!(
        matches!(err, HarnessError::Delegation { .. })
            && err.to_string().contains("set by the conductor"),
        "{err}"
    );
    let child = || InvocationRequest::from_value(&request("fake.none", record())).unwrap();
    let err = conductor
        .invoke_delegated(child(), &callback("not-a-token"))
        .unwrap_err();
    assert!(err.to_string().contains("unknown or expired"), "{err}");

    let parent = invoke(&th, request("fake.delegation", message("hello")));
    let token = tokens.lock().unwrap()[0].clone();
    assert!(token.len() >= 43, "{token}");
    let err = conductor
        .invoke_delegated(child(), &callback(&token))
        .unwrap_err();
    assert!(err.to_string().contains("unknown or expired"), "{err}");

    // Over the wire: a callback with the expired token is a failed task.
    let mut metadata = serde_json::Map::new();
    metadata.insert("dd.delegation_token".into(), json!(token));
    let task = send_to(
        &th,
        &th.target(),
        a2a_message(vec![request("fake.none", record())], Some(metadata)),
        &[],
    );
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(
        task.failure_detail()
            .unwrap()
            .contains("unknown or expired")
    );
    assert_eq!(index_ids(&th.runs), [parent.envelope.invocation_id]);
}

/// A delegation agent may not delegate to itself.
#[test]
fn self_delegation_is_refused() {
    let th = TestHarness::new(vec![Arc::new(ScriptedAgent::new(
        GroundingMode::Delegation,
        behave(|_, ctx| {
            match ctx.delegate.as_ref().unwrap().call(
                ctx.tracer,
                "fake.delegation",
                input(message("again")),
            ) {
                Err(e) => Ok(abstain(&e.to_string())),
                Ok(_) => Err(AgentError::new("AssertionError", "self-delegation ran")),
            }
        }),
    ))]);
    let env = invoke(&th, request("fake.delegation", message("hello"))).envelope;
    assert_eq!(env.outcome.status, OutcomeStatus::Abstained);
    assert!(
        env.outcome.statement.contains("may not delegate to itself"),
        "{}",
        env.outcome.statement
    );
    assert!(env.delegations.is_empty());
    assert_eq!(index_ids(&th.runs).len(), 1);
}

/// Delegation is one level deep: a child, even a delegation agent, gets no grant.
#[test]
fn a_child_gets_no_grant_so_delegation_is_one_level_deep() {
    let second_level = || {
        behave(|_, ctx| match &ctx.delegate {
            None => Ok(abstain("No grant at depth 1.")),
            Some(d) => {
                let done = d.call(ctx.tracer, "fake.inner", input(message("inner")))?;
                Ok(reply_over(ctx, &[&done]))
            }
        })
    };
    let th = TestHarness::new(vec![
        Arc::new(ScriptedAgent::new(
            GroundingMode::Delegation,
            second_level(),
        )),
        Arc::new(ScriptedAgent::new(GroundingMode::Delegation, second_level()).id("fake.inner")),
    ]);
    let env = invoke(&th, request("fake.delegation", message("hello"))).envelope;
    assert_eq!(
        env.outcome.status,
        OutcomeStatus::Succeeded,
        "{}",
        env.outcome.statement
    );
    let child = stored_envelope(&th.runs, &env.delegations[0].delegated_invocation_id);
    assert_eq!(child["outcome"]["statement"], "No grant at depth 1.");
    assert!(child.get("delegations").is_none());
    assert_eq!(index_ids(&th.runs).len(), 2);
}

/// A child may not reuse its parent's invocation id: the harness refuses the callback as a
/// duplicate, the parent records no delegation, and only the parent is stored.
#[test]
fn a_child_may_not_reuse_its_parents_invocation_id() {
    let th = TestHarness::new(vec![
        Arc::new(ScriptedAgent::new(
            GroundingMode::Delegation,
            behave(|req, ctx| {
                let delegate = ctx.delegate.as_ref().unwrap();
                let span = ctx.tracer.delegate("fake.none");
                let mut child = request("fake.none", record());
                child["invocation_id"] = json!(req.invocation_id);
                let task = send_delegated(delegate, &span.traceparent(), child)
                    .map_err(|e| AgentError::new("Wire", e.to_string()))?;
                span.end();
                let refused = task.status.state == TaskState::Failed
                    && task
                        .failure_detail()
                        .is_some_and(|d| d.contains("has already been used"));
                Ok(abstain(if refused {
                    "The child was refused."
                } else {
                    "The child ran."
                }))
            }),
        )),
        Arc::new(child_agent()),
    ]);
    let parent = invoke(&th, request("fake.delegation", message("hello"))).envelope;
    assert_eq!(parent.outcome.statement, "The child was refused.");
    assert!(parent.delegations.is_empty());
    assert_eq!(
        stored_envelope(&th.runs, &parent.invocation_id)["agent_id"],
        "fake.delegation"
    );
    assert_eq!(index_ids(&th.runs), [parent.invocation_id]);
}

/// A child the profile refuses is a stored failed run, recorded by the parent, which relays it.
#[test]
fn a_child_refused_by_policy_is_recorded_and_relayed() {
    let disabled = child_agent().id("fake.disabled").arc();
    let th = TestHarness::with_profile(
        vec![
            Arc::new(delegating(&["fake.disabled"])),
            dyn_agent(&disabled),
        ],
        r#"{"profile_id": "test-permissive", "agents": {"fake.delegation": "advise"}}"#,
        T,
    );
    let env = invoke(&th, request("fake.delegation", message("hello"))).envelope;
    assert_eq!(
        env.outcome.status,
        OutcomeStatus::Succeeded,
        "{}",
        env.outcome.statement
    );
    assert_eq!(env.delegations[0].delegated_status, OutcomeStatus::Failed);
    let child = stored_envelope(&th.runs, &env.delegations[0].delegated_invocation_id);
    assert!(failed_with(&child, "agent-not-permitted"), "{child}");
    assert!(
        child["outcome"]["statement"]
            .as_str()
            .unwrap()
            .contains("not enabled")
    );
    assert_eq!(disabled.calls(), 0);
    assert!(lint_stored(&th.runs, &env.invocation_id).passed);
}

/// The delegations a parent made are kept when the parent then fails: it raises, its result is
/// mis-grounded, or its result breaks the contract. Parent and child are both stored.
#[test]
fn delegations_are_kept_when_the_parent_fails_after_delegating() {
    let then_raise = behave(|_, ctx| {
        ctx.delegate
            .as_ref()
            .unwrap()
            .call(ctx.tracer, "fake.none", input(record()))?;
        Err(AgentError::new("RuntimeError", "after delegating"))
    });
    let then_misground = behave(|_, ctx| {
        let done = ctx
            .delegate
            .as_ref()
            .unwrap()
            .call(ctx.tracer, "fake.none", input(record()))?;
        let mut result = reply_over(ctx, &[&done]);
        if let Some(p) = &mut result.payload {
            p.0.insert(
                "grounded_on".into(),
                json!([{"source_id": done.reference.source_id, "content_hash": "0".repeat(64)}]),
            );
        }
        Ok(result)
    });
    let then_break_the_contract = behave(|_, ctx| {
        ctx.delegate
            .as_ref()
            .unwrap()
            .call(ctx.tracer, "fake.none", input(record()))?;
        Ok(AgentResult::new(Outcome {
            status: OutcomeStatus::Abstained,
            reason_code: None,
            referred_to: None,
            statement: "No reason.".into(),
        }))
    });
    for (name, behaviour, problem) in [
        ("then_raise", then_raise, "agent-error"),
        ("then_misground", then_misground, "grounding-violation"),
        (
            "then_break_the_contract",
            then_break_the_contract,
            "agent-error",
        ),
    ] {
        let th = TestHarness::new(vec![
            Arc::new(ScriptedAgent::new(GroundingMode::Delegation, behaviour)),
            Arc::new(child_agent()),
        ]);
        let env = invoke(&th, request("fake.delegation", message("hello"))).envelope;
        let doc = env.to_document();
        assert!(failed_with(&doc, problem), "{name}: {doc}");
        assert_eq!(env.delegations.len(), 1, "{name}");
        let child_id = &env.delegations[0].delegated_invocation_id;
        assert_eq!(
            index_ids(&th.runs),
            [child_id.clone(), env.invocation_id.clone()],
            "{name}"
        );
        assert_eq!(
            stored_envelope(&th.runs, &env.invocation_id)["delegations"],
            doc["delegations"],
            "{name}"
        );
        assert_eq!(
            envelope_hash(&stored_envelope(&th.runs, child_id)),
            env.delegations[0].content_hash,
            "{name}"
        );
        assert_eq!(th.harness.conductor.live_grants(), 0, "{name}");
    }
}

/// A delegation agent run without a callback URL (as under the CLI) gets no grant, so no
/// delegate.
#[test]
fn a_delegation_agent_run_without_a_callback_gets_no_delegate() {
    let seen = shared::<bool>();
    let record_seen = Arc::clone(&seen);
    let agent = ScriptedAgent::new(
        GroundingMode::Delegation,
        behave(move |_, ctx| {
            record_seen.lock().unwrap().push(ctx.delegate.is_none());
            Ok(abstain("No callback."))
        }),
    );
    let runs = TempDir::new("delegation-no-callback");
    let (conductor, _net) = bare_conductor(vec![Arc::new(agent)], runs.path());
    assert!(conductor.callback_url.is_none());
    let request =
        InvocationRequest::from_value(&request("fake.delegation", message("hello"))).unwrap();
    let run = conductor.invoke(request, &test_principal()).unwrap();
    assert_eq!(run.envelope.outcome.statement, "No callback.");
    assert_eq!(seen.lock().unwrap().as_slice(), [true]);
    assert_eq!(conductor.live_grants(), 0);
}

/// Spec invariant 5: the harness answers a delegated call with the stored envelope as text
/// (`envelope-json`), so the delegating agent hashes exactly what was stored, and the hash it
/// computes is the one the parent's record holds.
#[test]
fn the_envelope_json_artifact_rehashes_to_the_recorded_hash() {
    let seen = shared::<(String, Value)>();
    let keep = Arc::clone(&seen);
    let th = TestHarness::new(vec![
        Arc::new(ScriptedAgent::new(
            GroundingMode::Delegation,
            behave(move |_, ctx| {
                let span = ctx.tracer.delegate("fake.none");
                let task = send_delegated(
                    ctx.delegate.as_ref().unwrap(),
                    &span.traceparent(),
                    request("fake.none", record()),
                )
                .map_err(|e| AgentError::new("Wire", e.to_string()))?;
                span.end();
                let texts: Vec<String> = task
                    .artifacts_named(artifact::ENVELOPE_JSON)
                    .iter()
                    .flat_map(|a| a.parts.iter())
                    .filter_map(|p| match p {
                        Part::Text { text, .. } => Some(text.clone()),
                        _ => None,
                    })
                    .collect();
                let [text] = texts.as_slice() else {
                    return Err(AgentError::new("Wire", format!("{texts:?}")));
                };
                keep.lock()
                    .unwrap()
                    .push((text.clone(), envelope_of(&task)));
                Ok(abstain("Looked at the child."))
            }),
        )),
        Arc::new(child_agent()),
    ]);
    let parent = invoke(&th, request("fake.delegation", message("hello"))).envelope;
    let (text, data) = seen.lock().unwrap()[0].clone();
    let [delegation] = parent.delegations.as_slice() else {
        panic!("one delegation: {:?}", parent.delegations)
    };
    let stored_text = std::fs::read_to_string(
        th.runs
            .join(&delegation.delegated_invocation_id)
            .join("envelope.json"),
    )
    .unwrap();
    assert_eq!(text, stored_text);
    let parsed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(envelope_hash(&parsed), delegation.content_hash);
    assert_eq!(parsed, data);
}

/// Spec invariant 15 for children: a child acts for the grant's principal, whoever sends the
/// callback (the callback carries no credentials of its own).
#[test]
fn a_child_acts_for_the_principal_of_its_parents_grant() {
    let steward = ddwire::contract::Principal::new(
        "urn:example:role:data-steward",
        "Data steward",
        ddwire::contract::PrincipalKind::AccountableRole,
    )
    .unwrap();
    let agents: Vec<Arc<dyn ddwire::agent::Agent>> = vec![
        Arc::new(delegating(&["fake.none"])),
        Arc::new(child_agent()),
    ];
    let profile = permissive_profile(&agents);
    let th = harness_with(
        agents,
        &profile,
        Some(Authenticator::Bearer(vec![
            ddwire::harness::identity::Token::new(token_digest("s3cret"), steward.clone()),
        ])),
    );
    let task = send_to(
        &th,
        &th.target(),
        a2a_message(vec![request("fake.delegation", message("hello"))], None),
        &[("Authorization", "Bearer s3cret")],
    );
    let parent = envelope_of(&task);
    assert_eq!(parent["outcome"]["status"], "succeeded", "{parent}");
    let steward_doc = serde_json::to_value(&steward).unwrap();
    assert_eq!(parent["acting_for"], steward_doc);
    let child_id = parent["delegations"][0]["delegated_invocation_id"]
        .as_str()
        .unwrap();
    assert_eq!(
        stored_envelope(&th.runs, child_id)["acting_for"],
        steward_doc
    );
}

/// The shipped director routes a message to another agent through the harness and relays its
/// reply, grounded on its input and the child's stored envelope.
#[test]
fn the_director_routes_through_the_harness_and_its_run_lints_clean() {
    let th = TestHarness::new(vec![Arc::new(Director::new()), Arc::new(Hello::new())]);
    let run = invoke(&th, request("director.route", message("hi")));
    let env = run.envelope.to_document();
    assert_eq!(env["outcome"]["status"], "succeeded", "{env}");
    assert_eq!(
        env["payload"]["reply_text"],
        "hello.world says: Hello! You said: hi"
    );
    assert_eq!(env["delegations"][0]["delegated_agent_id"], "hello.world");
    assert!(run.report.passed, "{:?}", run.report.violations);
    let child_id = env["delegations"][0]["delegated_invocation_id"]
        .as_str()
        .unwrap();
    assert!(lint_stored(&th.runs, child_id).passed);
    // Run without a harness around it, the director has no one to route to.
    let runs = TempDir::new("director-no-callback");
    let (conductor, _net) = bare_conductor(vec![Arc::new(Director::new())], runs.path());
    let request = InvocationRequest::from_value(&request("director.route", message("hi"))).unwrap();
    let alone = conductor.invoke(request, &test_principal()).unwrap();
    assert_eq!(alone.envelope.outcome.status, OutcomeStatus::Abstained);
}

/// The child's conversation is the parent's, from the grant, whatever the child request says.
#[test]
fn a_child_joins_its_parents_conversation_whatever_its_request_says() {
    let th = TestHarness::new(vec![
        Arc::new(ScriptedAgent::new(
            GroundingMode::Delegation,
            behave(|_, ctx| {
                let span = ctx.tracer.delegate("fake.none");
                let mut child = request("fake.none", record());
                child["conversation_id"] = json!(new_uuid7());
                let task =
                    send_delegated(ctx.delegate.as_ref().unwrap(), &span.traceparent(), child)
                        .map_err(|e| AgentError::new("Wire", e.to_string()))?;
                span.end();
                Ok(abstain(&format!("{:?}", task.status.state)))
            }),
        )),
        Arc::new(child_agent()),
    ]);
    for conversation in [Some(new_uuid7()), None] {
        let mut doc = request("fake.delegation", message("hello"));
        if let Some(c) = &conversation {
            doc["conversation_id"] = json!(c);
        }
        let parent = invoke(&th, doc).envelope;
        let child = stored_envelope(&th.runs, &parent.delegations[0].delegated_invocation_id);
        assert_eq!(child["parent_invocation_id"], parent.invocation_id);
        assert_eq!(
            child.get("conversation_id").and_then(Value::as_str),
            conversation.as_deref()
        );
    }
}

/// A delegation to an agent the harness does not know is refused to the delegating agent,
/// and nothing is stored for it.
#[test]
fn a_delegation_to_an_unknown_agent_is_refused_to_the_delegating_agent() {
    let th = TestHarness::new(vec![Arc::new(ScriptedAgent::new(
        GroundingMode::Delegation,
        behave(|_, ctx| {
            match ctx
                .delegate
                .as_ref()
                .unwrap()
                .call(ctx.tracer, "no.such.agent", input(record()))
            {
                Err(e) => Ok(abstain(&e.to_string())),
                Ok(_) => Err(AgentError::new("AssertionError", "an unknown agent ran")),
            }
        }),
    ))]);
    let env = invoke(&th, request("fake.delegation", message("hello"))).envelope;
    assert!(
        env.outcome.statement.contains("refused the delegation")
            && env.outcome.statement.contains("no.such.agent"),
        "{}",
        env.outcome.statement
    );
    assert!(env.delegations.is_empty());
    assert_eq!(index_ids(&th.runs), [env.invocation_id]);
}

/// A harness served without an authenticator refuses ordinary callers but still takes a
/// delegation agent's callback under a live grant.
#[test]
fn a_harness_without_an_authenticator_still_takes_a_delegation_callback() {
    let agents: Vec<Arc<dyn ddwire::agent::Agent>> = vec![
        Arc::new(delegating(&["fake.none"])),
        Arc::new(child_agent()),
    ];
    let profile = permissive_profile(&agents);
    let th = harness_with(agents, &profile, None);
    let parent = invoke(&th, request("fake.delegation", message("hello"))).envelope;
    assert_eq!(
        parent.outcome.status,
        OutcomeStatus::Succeeded,
        "{}",
        parent.outcome.statement
    );
    assert_eq!(parent.delegations.len(), 1);
    let refused = send(&th, request("fake.none", record()));
    assert_eq!(refused.status.state, TaskState::Failed);
    assert_eq!(index_ids(&th.runs).len(), 2);
}

/// A conversation holding a delegated run lists it among its runs but not its turns, and the
/// conversation route serves both envelopes.
#[test]
fn a_delegated_child_is_a_run_of_the_conversation_but_not_a_turn() {
    let th = TestHarness::new(vec![
        Arc::new(delegating(&["fake.none"])),
        Arc::new(child_agent()),
    ]);
    let conversation = new_uuid7();
    let mut doc = request("fake.delegation", message("hello"));
    doc["conversation_id"] = json!(conversation);
    let parent = invoke(&th, doc).envelope;
    let (status, index) = get(&th, "/conversations");
    assert_eq!(status, 200);
    let row = &index[0];
    assert_eq!(row["conversation_id"], conversation);
    assert_eq!((&row["turns"], &row["runs"]), (&json!(1), &json!(2)));
    assert_eq!(row["agent_id"], "fake.delegation");
    assert_eq!(row["last_status"], "succeeded");
    let (status, found) = get(&th, &format!("/conversations/{conversation}"));
    assert_eq!(status, 200);
    let ids: Vec<&str> = found["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["invocation_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            parent.delegations[0].delegated_invocation_id.as_str(),
            parent.invocation_id.as_str()
        ]
    );
}

/// A child admitted while its parent ran but finishing after the parent returned is still
/// recorded: revocation refuses new children at once and waits for those in flight. (The
/// child is released only once a probe shows the grant refusing new children, so the order
/// is forced without a sleep.)
#[test]
fn a_child_that_finishes_after_its_parent_is_still_recorded() {
    let (entered_tx, entered_rx) = crossbeam_channel::bounded::<()>(1);
    let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(1);
    let (token_tx, token_rx) = crossbeam_channel::bounded::<String>(1);
    let slow_child = ScriptedAgent::new(
        GroundingMode::None,
        behave(move |_, ctx| {
            let _ = entered_tx.send(());
            release_rx.recv_timeout(T).expect("released");
            Ok(review_of_input(ctx))
        }),
    );
    let fire_and_forget = ScriptedAgent::new(
        GroundingMode::Delegation,
        behave(move |_, ctx| {
            let delegate = ctx.delegate.clone().unwrap();
            let traceparent = ctx.tracer.delegate("fake.none").traceparent();
            token_tx.send(delegate.token.clone()).unwrap();
            std::thread::spawn(move || {
                let _ = send_delegated(&delegate, &traceparent, request("fake.none", record()));
            });
            entered_rx.recv_timeout(T).expect("the child was admitted");
            Ok(abstain("Did not wait for the child."))
        }),
    );
    let th = Arc::new(TestHarness::new(vec![
        Arc::new(fire_and_forget),
        Arc::new(slow_child),
    ]));
    let releaser = {
        let th = Arc::clone(&th);
        std::thread::spawn(move || {
            let token = token_rx.recv_timeout(T).unwrap();
            // A probe naming no agent is refused as unknown while the grant is live, and as
            // expired once the parent has returned and revocation has begun.
            loop {
                let probe =
                    InvocationRequest::from_value(&request("no.such.agent", record())).unwrap();
                match th
                    .harness
                    .conductor
                    .invoke_delegated(probe, &callback(&token))
                {
                    Err(HarnessError::UnknownAgent { .. }) => std::thread::yield_now(),
                    Err(HarnessError::Delegation { reason })
                        if reason.contains("unknown or expired") =>
                    {
                        break;
                    }
                    other => panic!("unexpected probe result: {other:?}"),
                }
            }
            release_tx.send(()).unwrap();
        })
    };
    let parent = invoke(&th, request("fake.delegation", message("hello"))).envelope;
    releaser.join().unwrap();
    assert_eq!(parent.outcome.statement, "Did not wait for the child.");
    let [delegation] = parent.delegations.as_slice() else {
        panic!("one delegation: {:?}", parent.delegations)
    };
    let child = stored_envelope(&th.runs, &delegation.delegated_invocation_id);
    assert_eq!(child["parent_invocation_id"], parent.invocation_id);
    assert_eq!(envelope_hash(&child), delegation.content_hash);
    assert_eq!(
        index_ids(&th.runs),
        [
            delegation.delegated_invocation_id.clone(),
            parent.invocation_id.clone()
        ]
    );
    assert_eq!(th.harness.conductor.live_grants(), 0);
}
