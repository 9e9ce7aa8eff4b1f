//! AG-UI over Server-Sent Events: `POST /agui` runs an invocation, `GET /agui/runs/{id}`
//! replays a stored one as the same events.
//!
//! A run streams `RUN_STARTED` (echoing the client's `threadId` and `runId`) once the
//! conductor has admitted it, a
//! `STEP_STARTED`/`STEP_FINISHED` pair for each conductor stage that runs (policy gate, input
//! check, agent call, grounding check), then `RUN_FINISHED` with the envelope as `result`.
//! Nothing of the result is sent before the checks have run. A request that cannot be run
//! (malformed, unknown agent, a principal or profile set by the request, unauthenticated, a
//! `threadId` naming another conversation) gets a single `RUN_ERROR` and no run (spec
//! invariant 12). The HTTP status is always 200; errors travel as events. During a long run
//! a comment line is sent every `KEEP_ALIVE` so proxies keep the stream open.
//!
//! The run's trace: a caller's `traceparent` (and `tracestate`) header becomes a link on the
//! run's root span, which starts a trace of its own; the response's `traceresponse` header
//! (W3C Trace Context Level 2) names that root span as soon as the stream starts, and
//! `RUN_FINISHED` carries the trace id in its result, the envelope's `telemetry.trace_id`. An
//! invalid `traceparent` is ignored. A request refused before the stream starts (one
//! `RUN_ERROR`, a stored run's id among them) gets no `traceresponse`. (Not in the event's
//! `metadata`: ag-ui-protocol 0.1.22 and 1.0.0 encode that field at different places, so no
//! frame holding it could be the bytes both encoders write.)
//!
//! A run its agent suspends (see the conductor's "Suspension") ends with `RUN_FINISHED`
//! without `result`, its `outcome` AG-UI 1.0's interrupt: `{"type": "interrupt", "interrupts":
//! [{"id": <invocation_id>, "reason": "input_required", "message": <resume condition>,
//! "expiresAt": <RFC 3339>}]}`. A later `POST /agui` whose `resume` is `[{"interruptId":
//! <invocation_id>, "status": "resolved", "payload": <data>}]` resumes it (same principal only)
//! and streams as any run; `"status": "cancelled"` abandons it, stored as canceled. ag-ui-protocol
//! 0.1.x has neither field: a 0.1 client reads an interrupted run as finished without a result.
//!
//! The thread is the contract's conversation: a `threadId` naming another conversation than
//! the request's `conversation_id` is refused; a request without one adopts a `threadId`
//! that is a UUIDv7. The history an agent sees travels in the contract, not in AG-UI messages.

use super::conductor::{AGENT_NOT_RUN, Observer, Phase, RunTrace, Stage, Turn};
use super::identity::Access;
use super::served::Harness;
use crate::contract::problem::ProblemType;
use crate::contract::{ContractError, InvocationRequest, OutcomeStatus, Principal, ReasonCode};
use crate::harness::HarnessError;
use crate::ids::is_uuid7;
use crate::wire::a2a::endpoint::Progress;
use crate::wire::agui::{Event, Interrupt, RunAgentInput};
use crate::wire::http::{Request, Response};
use crate::wire::sse;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often a comment line is sent while a run is in progress.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(15);

fn error_stream(message: String, code: &str) -> Response {
    let frame = Event::RunError {
        message,
        code: Some(code.to_string()),
    }
    .to_sse();
    Response::bytes(200, sse::CONTENT_TYPE, frame).with_header("Cache-Control", "no-cache")
}

/// A request refused before any run: one `RUN_ERROR` with the refusal's code.
fn refused(e: &HarnessError) -> Response {
    error_stream(e.to_string(), code_of(e))
}

/// The principal an AG-UI request acts for, from its headers: only an authenticator names one.
fn principal(harness: &Harness, headers: &[(String, String)]) -> crate::harness::Result<Principal> {
    match &harness.authenticator {
        Some(auth) => auth.principal_for(Some(headers)),
        None => Err(HarnessError::unauthenticated(
            "this harness runs no AG-UI requests without an authenticator",
        )),
    }
}

/// The code a refusal carries in `RUN_ERROR` (and a streamed A2A call's failed status, as
/// `dd.error`).
pub(crate) fn code_of(e: &HarnessError) -> &'static str {
    match e {
        HarnessError::Contract(_) | HarnessError::Json(_) => "invalid_request",
        HarnessError::UnknownAgent { .. } => "unknown_agent",
        HarnessError::Unauthenticated { .. } => "unauthenticated",
        HarnessError::DuplicateInvocation { .. } => "duplicate_invocation",
        HarnessError::Delegation { .. } => "lineage_refused",
        HarnessError::Resume { .. } => "resume_refused",
        _ => "internal_error",
    }
}

/// The stages a run recorded on its root span, then the grounding check (which runs on every
/// run and records no stage event of its own). `None` if the spans record none.
fn recorded_stages(spans_jsonl: &str) -> Option<Vec<Stage>> {
    let root = spans_jsonl
        .lines()
        .filter_map(|l| crate::trace::from_json(l).ok())
        .find(|s| s.is(crate::trace::SpanName::InvokeAgent))?;
    let mut stages: Vec<Stage> = root
        .events
        .iter()
        .filter_map(|e| Stage::parse(&e.name))
        .collect();
    if stages.is_empty() {
        return None;
    }
    stages.push(Stage::GroundingCheck);
    Some(stages)
}

/// The stages a run went through, as its envelope shows them (for runs without stage events).
fn inferred_stages(envelope: &Value) -> Vec<Stage> {
    let text = |at: &str| envelope.pointer(at).and_then(Value::as_str);
    let problem = text("/problem/type").and_then(ProblemType::from_uri);
    let status = text("/outcome/status").and_then(OutcomeStatus::parse);
    let reason = text("/outcome/reason_code").and_then(ReasonCode::parse);
    // An agent may refer a decision for approval itself, after every stage has run; only the
    // gate's referral says the agent was not run.
    let agent_not_run = text("/outcome/statement").is_some_and(|s| s.ends_with(AGENT_NOT_RUN));
    let refused_by_policy = matches!(
        problem,
        Some(ProblemType::AgentNotPermitted | ProblemType::ActionClassMismatch)
    ) || (status == Some(OutcomeStatus::Referred)
        && reason == Some(ReasonCode::PolicyRequiresApproval)
        && agent_not_run);
    let input_refused = problem == Some(ProblemType::InputNotAccepted);
    let mut stages = vec![Stage::PolicyGate];
    if !refused_by_policy {
        stages.push(Stage::InputCheck);
        if !input_refused {
            stages.push(Stage::AgentCall);
        }
    }
    stages.push(Stage::GroundingCheck);
    stages
}

/// `POST /agui`.
pub(crate) fn run(harness: &Arc<Harness>, request: &Request) -> Response {
    if let Some(e) = &request.body_error {
        return error_stream(e.to_string(), "invalid_request");
    }
    let body = match crate::json::parse(&request.body, crate::json::Limits::DEFAULT) {
        Ok(body) => body,
        Err(e) => return refused(&e.into()),
    };
    if let Some(input) = RunAgentInput::from_value(&body).filter(|i| !i.resume.is_empty()) {
        return resume(harness, input, &request.headers);
    }
    let (input, invocation, principal) = match prepare(harness, &body, &request.headers) {
        Ok(p) => p,
        Err(e) => return refused(&e),
    };
    let noted_id = invocation.invocation_id.clone();
    let thread_id = invocation
        .conversation_id
        .clone()
        .or(input.thread_id)
        .unwrap_or_else(|| "thread".into());
    let run_id = input.run_id.unwrap_or_else(|| "run".into());
    let trace = RunTrace::for_caller(
        request.header("traceparent"),
        request.header_joined("tracestate").as_deref(),
    );
    // Named before the run starts, as the stream's head goes out first. (A stored run's id
    // was refused above: one RUN_ERROR, no trace.)
    let traceresponse = trace.traceresponse();
    let task = Progress::detached(&noted_id, &thread_id);
    stream_turn(
        harness,
        (thread_id, run_id),
        (noted_id, principal.principal_id.clone()),
        Some(traceresponse),
        Box::new(move |harness: &Harness, observer: Observer<'_>| {
            harness
                .conductor
                .invoke_until(invocation, &principal, trace, observer, &task)
        }),
    )
}

/// `POST /agui` answering an interrupt (AG-UI 1.0 `RunAgentInput.resume`): one entry, whose
/// `interruptId` is the suspended run's invocation id; `resolved` resumes it with `payload`,
/// `cancelled` abandons it (stored as canceled). Refused, as one `RUN_ERROR`, for more than
/// one entry, or as the conductor refuses it (another principal, nothing suspended).
fn resume(harness: &Arc<Harness>, input: RunAgentInput, headers: &[(String, String)]) -> Response {
    let [entry] = input.resume.as_slice() else {
        return error_stream(
            format!(
                "resume holds {} entries; a run suspended by its agent has one interrupt, named by its invocation id",
                input.resume.len()
            ),
            "invalid_request",
        );
    };
    let principal = match principal(harness, headers) {
        Ok(p) => p,
        Err(e) => return refused(&e),
    };
    let id = entry.interrupt_id.clone();
    let thread_id = input.thread_id.unwrap_or_else(|| "thread".into());
    let run_id = input.run_id.unwrap_or_else(|| "run".into());
    let (resolved, payload) = (entry.resolved, entry.payload.clone().unwrap_or(Value::Null));
    let task = Progress::detached(&id, &thread_id);
    let noted = (id.clone(), principal.principal_id.clone());
    // The resumed turn's trace is the conductor's own: the head goes out before it is made.
    stream_turn(
        harness,
        (thread_id, run_id),
        noted,
        None,
        Box::new(move |harness: &Harness, observer: Observer<'_>| {
            if resolved {
                harness
                    .conductor
                    .resume(&id, &payload, &principal, observer, &task)
            } else {
                harness
                    .conductor
                    .abandon(&id, &principal)
                    .map(|run| Turn::Done(Box::new(run)))
            }
        }),
    )
}

/// A turn of the conductor, to run on its own thread while its stages stream.
type TurnCall = Box<dyn FnOnce(&Harness, Observer<'_>) -> crate::harness::Result<Turn> + Send>;

/// Stream one turn as AG-UI events: `RUN_STARTED` once the conductor admits it, a step pair
/// per stage, then `RUN_FINISHED` (the envelope as `result`, or, for a run its agent suspended,
/// the interrupt `outcome`) or `RUN_ERROR`; a keep-alive comment every [`KEEP_ALIVE`].
fn stream_turn(
    harness: &Arc<Harness>,
    (thread_id, run_id): (String, String),
    (noted_id, noted_principal): (String, String),
    traceresponse: Option<String>,
    call: TurnCall,
) -> Response {
    let interrupt_id = noted_id.clone();
    let (tx, rx) = crossbeam_channel::unbounded::<Vec<u8>>();
    let started = Event::RunStarted {
        thread_id: thread_id.clone(),
        run_id: run_id.clone(),
    }
    .to_sse();
    let conductor_tx = tx.clone();
    // The conductor runs on its own thread; the HTTP worker streams what it sends.
    let drain = harness.drain.clone();
    let harness = Arc::clone(harness);
    std::thread::spawn(move || {
        let (done_tx, pulse) = keep_alive(conductor_tx.clone());
        // RUN_STARTED goes out when the conductor admits the run (its first stage), so a
        // request it refuses outright (an id already running) is one RUN_ERROR, as the spec says.
        let announced = AtomicBool::new(false);
        let announce = |tx: &crossbeam_channel::Sender<Vec<u8>>| {
            if !announced.swap(true, Ordering::SeqCst) {
                let _ = tx.send(started.clone());
            }
        };
        let step_tx = conductor_tx.clone();
        let observer = |stage: Stage, phase: Phase| {
            if stage == Stage::Store {
                // A replay rebuilds the steps from the stored trace, which ends before the
                // store: live and replayed runs show the same four steps.
                return;
            }
            announce(&step_tx);
            let step_name = stage.name().to_string();
            let event = match phase {
                Phase::Started => Event::StepStarted { step_name },
                Phase::Finished => Event::StepFinished { step_name },
            };
            let _ = step_tx.send(event.to_sse());
        };
        let outcome = call(&harness, &observer);
        drop(done_tx);
        let _ = pulse.join();
        if outcome.is_ok() {
            announce(&conductor_tx);
        }
        let last = last_event(outcome, thread_id, run_id, interrupt_id);
        let _ = conductor_tx.send(last.to_sse());
    });
    drop(tx);
    // A drain that runs out of time ends the stream with a terminal event, not a bare close.
    let cut = Event::RunError {
        message: "the harness shut down before the run finished; the run was not stored".into(),
        code: Some("shutting_down".into()),
    }
    .to_sse();
    let rx = drain.guard(rx, cut);
    let response = Response::stream(200, sse::CONTENT_TYPE, rx)
        .with_header("Cache-Control", "no-cache")
        .noting_invocation(&noted_id)
        .noting_principal(&noted_principal);
    match traceresponse {
        Some(value) => response.with_header(crate::trace::context::TRACERESPONSE, &value),
        None => response,
    }
}

/// Send a keep-alive comment on `tx` every [`KEEP_ALIVE`], on a thread of its own, until the
/// returned sender is dropped or the stream's reader has gone.
fn keep_alive(
    tx: crossbeam_channel::Sender<Vec<u8>>,
) -> (crossbeam_channel::Sender<()>, std::thread::JoinHandle<()>) {
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
    let pulse = std::thread::spawn(move || {
        while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
            done_rx.recv_timeout(KEEP_ALIVE)
        {
            if tx.send(sse::comment("keep-alive")).is_err() {
                break;
            }
        }
    });
    (done_tx, pulse)
}

/// The event that ends a turn's stream: `RUN_FINISHED` with the envelope, or with the
/// interrupt (`interrupt_id`) of a run its agent suspended; `RUN_ERROR` for a turn refused.
fn last_event(
    outcome: crate::harness::Result<Turn>,
    thread_id: String,
    run_id: String,
    interrupt_id: String,
) -> Event {
    match outcome {
        Ok(Turn::Done(run)) => Event::RunFinished {
            thread_id,
            run_id,
            result: Some(run.document),
            interrupt: None,
        },
        Ok(Turn::Suspended {
            resume_condition,
            expires_at,
        }) => Event::RunFinished {
            thread_id,
            run_id,
            result: None,
            interrupt: Some(Interrupt {
                id: interrupt_id,
                reason: "input_required".into(),
                message: Some(resume_condition),
                expires_at: Some(expires_at),
            }),
        },
        Err(e) => Event::RunError {
            message: e.to_string(),
            code: Some(code_of(&e).to_string()),
        },
    }
}

/// Everything that can refuse a run before it starts: the body, the request, the thread, the
/// principal, the agent.
fn prepare(
    harness: &Harness,
    body: &Value,
    headers: &[(String, String)],
) -> crate::harness::Result<(RunAgentInput, InvocationRequest, Principal)> {
    let input = RunAgentInput::from_value(body).ok_or_else(|| {
        ContractError::violation("RunAgentInput", "the body must be a RunAgentInput object")
    })?;
    let request_doc = input
        .forwarded_props
        .as_ref()
        .and_then(|p| p.get("request"))
        .filter(|r| r.is_object())
        .ok_or_else(|| {
            ContractError::violation(
                "RunAgentInput",
                "forwardedProps.request must be an InvocationRequest",
            )
        })?;
    let mut invocation = InvocationRequest::from_value(request_doc)?;
    match (&invocation.conversation_id, &input.thread_id) {
        (Some(cid), Some(tid)) if cid != tid => {
            return Err(ContractError::violation(
                "InvocationRequest",
                format!("threadId '{tid}' is not the request's conversation_id '{cid}'"),
            )
            .into());
        }
        (None, Some(tid)) if is_uuid7(tid) => invocation.conversation_id = Some(tid.clone()),
        _ => {}
    }
    super::conductor::top_level(&invocation)?;
    let principal = principal(harness, headers)?;
    if harness
        .conductor
        .registry
        .get_or_refresh(&invocation.agent_id)
        .is_none()
    {
        return Err(harness.conductor.registry.unknown(&invocation.agent_id));
    }
    if harness.conductor.store.has(&invocation.invocation_id) {
        return Err(HarnessError::DuplicateInvocation {
            invocation_id: invocation.invocation_id.clone(),
        });
    }
    Ok((input, invocation, principal))
}

/// `GET /agui/runs/{id}`: a stored run as the same events a live run sent.
pub(crate) fn replay(harness: &Harness, reference: &str, access: &Access) -> Response {
    let id = match super::served::resolve_run(harness, reference, access) {
        Ok(id) => id,
        Err(response) => return response,
    };
    let id = id.as_str();
    let store = &harness.conductor.store;
    match store.envelope(id) {
        Ok(Some(envelope)) => {
            let spans = store.spans(id).ok().flatten();
            let frames: Vec<u8> = replay_events(&envelope, spans.as_deref())
                .iter()
                .flat_map(Event::to_sse)
                .collect();
            Response::bytes(200, sse::CONTENT_TYPE, frames)
                .with_header("Cache-Control", "no-cache")
                .noting_invocation(id)
        }
        Ok(None) => Response::error(404, &format!("no run {id}")),
        Err(e) => Response::error(500, &e.to_string()),
    }
}

/// The events of a stored run: `RUN_STARTED` (thread = its conversation, or `replay`; run =
/// its id), a step pair for each stage that ran, and `RUN_FINISHED` with the envelope.
///
/// Which stages ran is read from the events the conductor recorded on the root span
/// (`spans_jsonl`, the run's `spans.jsonl`); for a run stored without them (written by the
/// reference), it is inferred from the envelope.
pub(crate) fn replay_events(envelope: &Value, spans_jsonl: Option<&str>) -> Vec<Event> {
    let thread_id = envelope
        .get("conversation_id")
        .and_then(Value::as_str)
        .unwrap_or("replay")
        .to_string();
    let run_id = super::tasks::invocation_id(envelope);
    let stages = spans_jsonl
        .and_then(recorded_stages)
        .unwrap_or_else(|| inferred_stages(envelope));
    let mut events = vec![Event::RunStarted {
        thread_id: thread_id.clone(),
        run_id: run_id.clone(),
    }];
    for stage in stages {
        events.push(Event::StepStarted {
            step_name: stage.name().into(),
        });
        events.push(Event::StepFinished {
            step_name: stage.name().into(),
        });
    }
    events.push(Event::RunFinished {
        thread_id,
        run_id,
        result: Some(envelope.clone()),
        interrupt: None,
    });
    events
}
