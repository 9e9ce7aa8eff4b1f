//! The conductor: policy gate → input check → agent call → grounding check → validation →
//! store.
//!
//! `Conductor::invoke` is a plain function of a request and the principal the caller's
//! credentials name; every transport (A2A, AG-UI, the CLI) is a thin wrapper around it. It
//! fills everything an agent must not decide about itself: identifiers, timestamps, telemetry,
//! the grounding mode and input hash the run is held to, whom it acted for, and whether the
//! output passed the grounding linter. A succeeded result with violations is withheld.
//!
//! Caller errors produce no run and no envelope: a malformed request, an unknown agent, a
//! reused `invocation_id`, lineage set by the caller. Everything else is an envelope, stored:
//! a refusal, a withheld result, an agent that failed, timed out or answered outside the
//! contract.
//!
//! # Stages
//!
//! One invocation is a short sequence of named stages (`Conductor::run`), each a function a
//! reader can test alone, in the order of the reference conductor (Data Director's
//! `Conductor._run`, which produces every outcome in five steps: policy gate, input check,
//! agent call, linter, validation) and with its names:
//!
//! 1. `policy_gate`: the deployment's profile refuses the agent, refers the run to a data
//!    steward, or lets it run;
//! 2. `input_check`: the input against the class schema the agent's card carries;
//! 3. `Conductor::call_agent`: the A2A call, with a delegation grant when the agent may
//!    delegate; a failure, a cancellation or a payload of the wrong class is `agent-error`;
//! 4. `grounding_check`: the linter over every span of the run; a succeeded result with
//!    violations is withheld;
//! 5. `validation`: withhold an agent's result that breaks the contract, or accept the
//!    envelope;
//! 6. `Conductor::store_run`: the run, then its spans to the OTLP exporter.
//!
//! Stages 1 and 2 can decide the outcome themselves; the agent is then not called. Stages 1–4
//! and 6 are reported to an `Observer` as `Stage`s (the AG-UI transport streams 1–4, a
//! streamed A2A run all five).
//!
//! Delegation: a remote agent in grounding mode `delegation`, invoked at the
//! top level, is sent a grant (a bearer capability) with the harness's callback URL. While the
//! parent runs, `Conductor::invoke_delegated` runs the requests it sends back as children
//! in traces of their own, linked to its `delegate` span, and records each in the parent's
//! `delegations`. A callback naming another parent invocation than the grant's is refused,
//! and so is one from an agent the harness shares a key with that is not signed with that key
//! (see `Callback`).
//!
//! # Suspension
//!
//! An agent may answer `suspended`, its statement the condition for resuming. On the A2A task
//! path (`Conductor::invoke_until`, `Conductor::resume`) the conductor then stores no run
//! yet: it keeps the turn (the agent's reply and the turn's spans) with the request, the
//! principal, the condition and an expiry (`Conductor::suspend_for`, one hour by default),
//! in memory and as a record in the store's own folder (`.ddwire/suspended/<id>.json`, written
//! whole and synced), and the task answers `input-required`. A harness started over the store
//! reads the records back, so a restart loses no suspended run. The same principal resumes it with data, which reaches the agent
//! as `dd.resumption` on a second call; the run is stored once, when it is decided, its
//! `turns.json` holding every turn (each resumption, agent reply and the spans of its call),
//! the time it was suspended and the expiry, so it stays one auditable run. A resumption from
//! another principal is refused and leaves the run suspended. A suspension past its expiry is
//! stored as failed (`agent-error`, `<agent_id>: Expired: …`, the contract's vocabulary having
//! nothing closer) when it is next touched: a resumption, or any new invocation. Where no turn
//! can follow (AG-UI, the CLI, a delegated call), a `suspended` result is judged as any other:
//! it breaks the contract (a suspended outcome needs a problem) and is withheld.
//!
//! # Cancellation
//!
//! `Conductor::invoke_until` runs an invocation for an A2A task that may be canceled
//! (`CancelTask`, or a drain cut short): the agent call runs on the run's own thread, under the
//! task's interrupt (`wire::http::client`'s "Interrupting a call"), so once the task is
//! canceled the call gives up its wait for the agent's answer within `INTERRUPT_POLL` (25 ms)
//! and the connection is closed; no second thread waits beside it. The run is stored as any
//! failed agent call is, in the contract's closed vocabulary: outcome `failed`, problem
//! `agent-error` with the detail `<agent_id>: Canceled: …` (`CANCELED`), and the statement
//! `Canceled: …`. A task canceled before the agent was called does not call it. A2A gives the
//! harness no way to cancel the agent's own work: the agent sees its connection closed, and
//! whatever it answers after is not read. Connecting to the agent and sending it the request
//! are not interrupted (each is bounded by the agent's timeout).
//!
//! # Panics
//!
//! No panic inside a run leaves the conductor waiting or an id taken. The running set and each
//! grant's count of children in flight are held by guards whose `Drop` releases them and wakes
//! whoever waits; a grant whose parent unwinds is revoked by its guard. A panic during the
//! agent call (the HTTP client, decoding the reply, importing spans) is that call's failure:
//! an `agent-error` envelope, stored with its trace and delegations, as any failed call is. A
//! panic anywhere else in the run is caught around it, and the run is stored as failed with
//! a trace of its own root span, so the id is used up as for any finished run.

use super::approval::{self, ApprovalError, Verdict};
use super::grounding::{self, GroundingReport};
use super::policy::{self, Decision, Profile};
use super::registry::{Registry, RemoteAgent};
use super::remote;
use super::store::{NewRun, RunStore, StoreError};
use crate::contract::problem::ProblemType;
use crate::contract::validate;
use crate::contract::{
    AgentResult, CONTRACT_VERSION, Delegation, Envelope, GroundingMode, InvocationRequest, Outcome,
    OutcomeStatus, Principal, ProblemDetails, ReasonCode, Telemetry, canonical, envelope_hash,
    input_source_id,
};
use crate::contract::{AgentSpec, ClassSchema, ContractError, Payload};
use crate::harness::{HarnessError, Result};
use crate::text::Unpoison;
use crate::trace::{
    ActiveSpan, AttrValue, Attributes, SpanContext, SpanId, SpanName, SpanRecord, StatusCode,
    TraceId, TraceState, Tracer, attr, event,
};
use crate::wire::a2a::client::A2aClient;
use crate::wire::a2a::endpoint::Progress;
use crate::wire::a2a::meta;
use crate::wire::http::client::{Interrupt, interruptible};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};

/// Who a `referred` outcome names when the profile requires approval.
pub(crate) const DATA_STEWARD: &str = "data_steward";
/// How the statement of every outcome the conductor decides without calling the agent ends.
pub(crate) const AGENT_NOT_RUN: &str = "The agent was not run.";
/// The service name on the conductor's own spans.
pub(crate) const SERVICE_NAME: &str = "ddwire-harness";
/// The name the validation stage gives itself in a `withheld` event.
const VALIDATION: &str = "validation";
/// The kind an `agent-error` problem names (`<agent_id>: Canceled: …`) when the caller canceled
/// the task and the conductor stopped waiting for the agent.
pub(crate) const CANCELED: &str = "Canceled";

/// A stage of one invocation, as an observer (the AG-UI transport) sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The profile decides whether the agent may run.
    PolicyGate,
    /// The input is checked against the agent's class schema.
    InputCheck,
    /// The agent is called over A2A.
    AgentCall,
    /// The grounding linter reads the run's spans.
    GroundingCheck,
    /// The run is stored (after validation). A streamed A2A run reports it; AG-UI shows the
    /// four stages before it, which a stored run's trace can replay.
    Store,
}

impl Stage {
    /// Every stage, in the order they run.
    pub(crate) const ALL: [Stage; 5] = [
        Stage::PolicyGate,
        Stage::InputCheck,
        Stage::AgentCall,
        Stage::GroundingCheck,
        Stage::Store,
    ];

    /// The stage named `name`.
    pub(crate) fn parse(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The step name an AG-UI client shows.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stage::PolicyGate => "policy_gate",
            Stage::InputCheck => "input_check",
            Stage::AgentCall => "agent_call",
            Stage::GroundingCheck => "grounding_check",
            Stage::Store => "store",
        }
    }
}

/// Whether a stage is starting or has finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The stage has begun.
    Started,
    /// The stage has ended.
    Finished,
}

/// Called at the start and end of each stage that runs.
pub(crate) type Observer<'a> = &'a (dyn Fn(Stage, Phase) + Sync);

/// The file of a resumed run that holds every turn (`turns.json`).
pub(crate) const TURNS_FILE: &str = "turns.json";
/// The kind an `agent-error` problem names when a suspended run expired unanswered.
pub(crate) const EXPIRED: &str = "Expired";

/// How one turn of an A2A task ended: the run was stored, or it waits for its caller.
#[derive(Debug)]
pub(crate) enum Turn {
    /// Decided and stored.
    Done(Box<Run>),
    /// The agent suspended the run: what it needs, and until when (RFC 3339).
    Suspended {
        resume_condition: String,
        expires_at: String,
    },
}

/// A run waiting for its caller's input.
struct Suspension {
    request: InvocationRequest,
    request_doc: Value,
    acting_for: Principal,
    suspended_at: String,
    expires_at: String,
    expires_ns: i128,
    /// What the agent needs, in its words.
    resume_condition: String,
    /// Each turn so far: `{"resumption"?, "agent_reply", "spans"}`.
    turns: Vec<Value>,
}

impl Suspension {
    /// The record kept on disk while the run waits.
    fn to_record(&self) -> Value {
        serde_json::json!({
            "request": self.request_doc,
            "acting_for": self.acting_for,
            "suspended_at": self.suspended_at,
            "expires_at": self.expires_at,
            "resume_condition": self.resume_condition,
            "turns": self.turns,
        })
    }

    /// A suspension read back from its record; `None` if the record is not one.
    fn from_record(record: &Value) -> Option<Suspension> {
        let text = |key: &str| record.get(key)?.as_str().map(str::to_string);
        let request_doc = record.get("request")?.clone();
        let expires_at = text("expires_at")?;
        Some(Suspension {
            request: InvocationRequest::from_value(&request_doc).ok()?,
            request_doc,
            acting_for: serde::Deserialize::deserialize(record.get("acting_for")?).ok()?,
            suspended_at: text("suspended_at")?,
            expires_ns: crate::time::parse_rfc3339(&expires_at)?,
            expires_at,
            resume_condition: text("resume_condition")?,
            turns: record.get("turns")?.as_array()?.clone(),
        })
    }
}

/// A suspended run as a restarted harness shows it: its request, principal and condition.
pub(crate) struct Waiting {
    pub(crate) request: InvocationRequest,
    pub(crate) request_doc: Value,
    pub(crate) principal_id: String,
    pub(crate) resume_condition: String,
    pub(crate) expires_at: String,
}

/// Whether a steward's approval (its decision record) still holds for `invocation` of
/// `agent`: it is honoured only for what it was checked against, so were the agent's version
/// or the input to differ now (a card refreshed meanwhile), the profile decides alone.
fn approval_holds(record: &Value, agent: &RemoteAgent, invocation: &Invocation<'_>) -> bool {
    let field = |k: &str| record[k].as_str();
    field("agent_id") == Some(agent.spec.agent_id.as_str())
        && field("agent_version") == Some(agent.spec.version.as_str())
        && field("input_hash") == Some(invocation.input_hash.as_str())
}

/// What one turn may end in: a stored run only, or also a suspension; and the suspended run
/// it resumes, or the steward's approval it carries out, if any.
enum Turning<'r> {
    /// The caller cannot resume: the turn ends in a stored run.
    Once,
    /// A steward's approval of a referred run (its decision record, see `approval`): the
    /// policy gate lets this run through where it would refer it; it ends in a stored run.
    Approved(&'r Value),
    /// The caller can resume (an A2A task, AG-UI 1.0): the agent may suspend.
    MaySuspend,
    /// This turn resumes a suspended run (and may suspend it again).
    Resuming(Box<Resumed<'r>>),
}

/// What a resumed turn carries into [`Conductor::run`].
struct Resumed<'r> {
    resumption: &'r Value,
    suspension: Suspension,
    resumed_by: String,
}

/// One stored run: its envelope, the linter's report, and where it is stored.
#[derive(Clone, Debug)]
pub struct Run {
    /// The envelope, as stored.
    pub envelope: Envelope,
    /// The envelope's document, the one `envelope.json` holds (what
    /// `envelope.to_document()` would build again).
    pub(crate) document: Value,
    /// What the grounding linter found.
    pub report: GroundingReport,
    /// Where the run is stored (`<runs>/<invocation_id>`).
    pub run_dir: PathBuf,
}

/// A live delegation grant: the bearer capability a delegation agent holds while it runs.
#[derive(Debug)]
struct Grant {
    parent_invocation_id: String,
    parent_agent_id: String,
    conversation_id: Option<String>,
    acting_for: Principal,
    delegations: Vec<Delegation>,
    /// Children admitted and not yet finished; revocation waits for them.
    in_flight: usize,
    /// Set when the parent has returned: no new child is admitted.
    revoked: bool,
}

/// A delegation callback as it reached the harness: the grant it presents, and what else
/// vouches for it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Callback<'a> {
    /// The grant's bearer token (`dd.delegation_token`).
    pub(crate) token: &'a str,
    /// The trace the child's run gets: its root's ids, and the delegating agent's `delegate`
    /// span (the `traceparent` the callback carried) as its link. `None`: a new trace with no
    /// link.
    pub(crate) trace: Option<&'a RunTrace>,
    /// The invocation the agent says the grant was issued for (`dd.parent_invocation_id`);
    /// when given it must be the grant's.
    pub(crate) parent_invocation_id: Option<&'a str>,
    /// The key id whose signature the harness verified on the callback. Required, and equal
    /// to the grant's agent, when the registry holds a key for that agent.
    pub(crate) signed_by: Option<&'a str>,
}

/// The trace a run gets, fixed by its transport before the run starts: the ids of its root
/// `invoke_agent` span, and the span the root links to.
///
/// The ids are chosen up front so a reply can name the run's trace (W3C `traceresponse`, and
/// the envelope's `telemetry.trace_id`) as soon as the reply starts, which for an AG-UI stream
/// or a non-blocking A2A send is before the run has begun. A run always keeps a trace of its
/// own: a caller's `traceparent` becomes a link on the root, never its parent, as a delegated
/// child's root links to the delegating `delegate` span, so each run's tree is linted alone
/// and no caller can place spans in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RunTrace {
    /// The root span as it will be: a new random trace id and span id, sampled.
    pub(crate) root: SpanContext,
    /// The span the root links to: the caller's (its `traceparent` and `tracestate`), or for
    /// a delegated child the delegating agent's `delegate` span.
    pub(crate) link: Option<SpanContext>,
}

impl RunTrace {
    /// A new trace, its root linked to `link` if given.
    pub(crate) fn new(link: Option<SpanContext>) -> RunTrace {
        RunTrace {
            root: SpanContext {
                trace_id: TraceId::random(),
                span_id: SpanId::random(),
                flags: crate::trace::context::FLAG_SAMPLED,
                trace_state: TraceState::default(),
                is_remote: false,
            },
            link,
        }
    }

    /// A new trace linked to the caller's span, read from its `traceparent` and `tracestate`
    /// values ([`SpanContext::extract`]): an invalid `traceparent` is ignored, and the run is
    /// then linked to nothing.
    pub(crate) fn for_caller(traceparent: Option<&str>, tracestate: Option<&str>) -> RunTrace {
        RunTrace::new(SpanContext::extract(traceparent, tracestate))
    }

    /// The W3C `traceresponse` header value naming the run's root span
    /// ([`SpanContext::traceresponse`]): `00-<trace id>-<root span id>-01`.
    pub(crate) fn traceresponse(&self) -> String {
        self.root.traceresponse()
    }
}

/// The conductor of one harness.
pub struct Conductor {
    /// The agents this harness may call.
    pub(crate) registry: Registry,
    /// The deployment's profile; a request cannot name another.
    pub(crate) profile: Profile,
    /// Where every run is kept.
    pub(crate) store: RunStore,
    /// How agents are called.
    pub(crate) client: A2aClient,
    /// The harness's own A2A base URL, sent to delegation agents as their callback. `None`
    /// (the CLI) issues no grant.
    pub(crate) callback_url: Option<String>,
    /// Exports each run's spans over OTLP once the run is stored; `None` exports nothing.
    pub otlp: Option<crate::wire::otlp::Exporter>,
    /// How long a suspended run waits for its caller before it is stored as expired.
    pub(crate) suspend_for: std::time::Duration,
    /// How long after its referral a steward may approve a referred run (see `approval`).
    pub(crate) approve_for: std::time::Duration,
    running: Mutex<HashSet<String>>,
    /// Runs an agent suspended, by invocation id.
    suspended: Mutex<HashMap<String, Suspension>>,
    /// Live grants by the SHA-256 of their token: the tokens themselves are never kept, and a
    /// lookup compares digests, so its timing says nothing usable about a token.
    grants: Mutex<HashMap<String, Grant>>,
    grants_changed: Condvar,
}

impl Conductor {
    /// A conductor over a registry, a profile and a store.
    pub fn new(
        registry: Registry,
        profile: Profile,
        store: RunStore,
        client: A2aClient,
    ) -> Conductor {
        Conductor {
            registry,
            profile,
            store,
            client,
            callback_url: None,
            otlp: None,
            suspend_for: SUSPEND_FOR,
            approve_for: approval::APPROVE_FOR,
            running: Mutex::default(),
            suspended: Mutex::default(),
            grants: Mutex::default(),
            grants_changed: Condvar::new(),
        }
    }

    /// Run one top-level invocation for `acting_for`, in a new trace linked to nothing.
    pub(crate) fn invoke(&self, request: InvocationRequest, acting_for: &Principal) -> Result<Run> {
        self.invoke_observed(request, acting_for, RunTrace::new(None), &|_, _| {})
    }

    /// [`Conductor::invoke`] in the trace `trace` (its root's ids, chosen by the transport,
    /// and the caller's span it links to), reporting each stage to `observer`.
    pub(crate) fn invoke_observed(
        &self,
        request: InvocationRequest,
        acting_for: &Principal,
        trace: RunTrace,
        observer: Observer<'_>,
    ) -> Result<Run> {
        top_level(&request)?;
        done(self.guarded(request, acting_for, trace, observer, None, Turning::Once))
    }

    /// [`Conductor::invoke_observed`] for the A2A task `task`: once it is canceled, the
    /// conductor stops waiting for the agent and stores the run as canceled (see the module's
    /// "Cancellation").
    /// The agent may suspend the run (see the module's "Suspension").
    pub(crate) fn invoke_until(
        &self,
        request: InvocationRequest,
        acting_for: &Principal,
        trace: RunTrace,
        observer: Observer<'_>,
        task: &Progress,
    ) -> Result<Turn> {
        top_level(&request)?;
        let turning = Turning::MaySuspend;
        self.guarded(request, acting_for, trace, observer, Some(task), turning)
    }

    /// Resume the suspended run `invocation_id` with the caller's `resumption` (see the
    /// module's "Suspension"): refused unless it is suspended for `principal`; stored as
    /// expired if its time has passed; else the agent is called again with the resumption.
    pub(crate) fn resume(
        &self,
        invocation_id: &str,
        resumption: &Value,
        principal: &Principal,
        observer: Observer<'_>,
        task: &Progress,
    ) -> Result<Turn> {
        let suspension = self.take_suspension(invocation_id, principal)?;
        let _running = self.admit(invocation_id)?;
        let request = suspension.request.clone();
        let request_doc = Arc::new(suspension.request_doc.clone());
        let acting_for = suspension.acting_for.clone();
        let resumed = Resumed {
            resumption,
            suspension,
            resumed_by: principal.principal_id.clone(),
        };
        // The resumed turn makes the run's trace: the run is stored once, with this trace, and
        // the earlier turns' spans in its turns file.
        let trace = RunTrace::new(None);
        let turning = Turning::Resuming(Box::new(resumed));
        let turn = self.caught(&request, &request_doc, &acting_for, &trace, || {
            let document = Arc::clone(&request_doc);
            self.run(
                &request,
                document,
                &acting_for,
                &trace,
                observer,
                Some(task),
                turning,
            )
        });
        crate::wire::http::free_after_reply((request, request_doc));
        turn
    }

    /// The caller abandons the suspended run `invocation_id` (an AG-UI resume entry
    /// `cancelled`): it is stored as failed, `agent-error` `<agent_id>: Canceled: …`, with its
    /// turns, as a canceled A2A task is. Refused as [`Conductor::resume`] is.
    pub(crate) fn abandon(&self, invocation_id: &str, principal: &Principal) -> Result<Run> {
        let s = self.take_suspension(invocation_id, principal)?;
        let _running = self.admit(invocation_id)?;
        let detail = format!(
            "{} abandoned the run the agent suspended at {}",
            principal.principal_id, s.suspended_at
        );
        self.store_unresumed(&s, (CANCELED, &detail), Some(&principal.principal_id))
    }

    /// A data steward's `verdict` on the referred run `referred_id` (see `approval`): the
    /// decision is recorded once; an approval then runs the agent on the referred run's input,
    /// for its principal, as a new run carrying the record (`Some` run). A decline runs
    /// nothing. The caller has checked that `steward` holds the role. The approved run's HTTP
    /// calls answer to `interrupt` (a drain cut short sets it), so it ends, and is stored,
    /// rather than outlive the process.
    pub(crate) fn decide(
        &self,
        referred_id: &str,
        verdict: Verdict,
        steward: &Principal,
        reason: Option<&str>,
        interrupt: Interrupt,
    ) -> std::result::Result<(Value, Option<Run>), ApprovalError> {
        if !self.store.is_writable() {
            return Err(ApprovalError::NotApprovable(format!(
                "{}: a decision is written to the store, so a read-only harness takes none",
                StoreError::ReadOnly
            )));
        }
        let referral = approval::referral(self.store.reader(), referred_id, self.approve_for)?;
        let root = self.store.root();
        if verdict == Verdict::Declined {
            let record = approval::record(&referral, verdict, steward, reason, None);
            approval::claim(root, &record)?;
            return Ok((record, None));
        }
        if referral.policy_digest != self.profile.digest {
            return Err(ApprovalError::Changed(format!(
                "the harness's profile is not the one that referred run {referred_id} (policy digest {} then, {} now)",
                referral.policy_digest, self.profile.digest
            )));
        }
        let agent = self
            .registry
            .get_or_refresh(&referral.agent_id)
            .ok_or_else(|| {
                ApprovalError::Changed(format!(
                    "agent {} is no longer registered",
                    referral.agent_id
                ))
            })?;
        if agent.spec.version != referral.agent_version {
            return Err(ApprovalError::Changed(format!(
                "agent {} is at version {} now, and was at {} when run {referred_id} was referred",
                referral.agent_id, agent.spec.version, referral.agent_version
            )));
        }
        let mut request = InvocationRequest::from_value(&referral.request)
            .map_err(|e| ApprovalError::Failed(format!("run {referred_id}'s request: {e}")))?;
        if let Some(parent) = &request.parent_invocation_id {
            return Err(ApprovalError::NotApprovable(format!(
                "run {referred_id} was delegated by run {parent}, which has had its answer: a \
                 delegated run is decided with its parent, so approve the parent's own run"
            )));
        }
        request.invocation_id = crate::ids::new_uuid7();
        request.issued_at = crate::time::now_rfc3339();
        let record = approval::record(
            &referral,
            verdict,
            steward,
            reason,
            Some(&request.invocation_id),
        );
        approval::claim(root, &record)?;
        // Whether the agent was called: only then is the approval spent, whatever followed.
        let called = std::sync::atomic::AtomicBool::new(false);
        let outcome = interruptible(interrupt, || {
            self.guarded(
                request,
                &referral.acting_for,
                // Its root links to the referred run's root, so a trace backend shows the two as
                // one story.
                RunTrace::new(Some(referral.root.clone())),
                &|stage, _| {
                    if stage == Stage::AgentCall {
                        called.store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                },
                None,
                Turning::Approved(&record),
            )
        });
        match done(outcome) {
            Ok(run) => Ok((record, Some(run))),
            Err(e) if !called.load(std::sync::atomic::Ordering::SeqCst) => {
                approval::release(root, referred_id);
                Err(ApprovalError::Failed(format!(
                    "the approved run of {referred_id} could not start, so the approval is not \
                     spent: {e}"
                )))
            }
            Err(e) => Err(ApprovalError::Failed(format!(
                "the agent ran for the approval of {referred_id}, but its run could not be \
                 stored: {e}; the approval is spent"
            ))),
        }
    }

    /// Take the suspension of `invocation_id` for `principal`, after storing every expired
    /// one; refused (and left in place) for another principal.
    fn take_suspension(&self, invocation_id: &str, principal: &Principal) -> Result<Suspension> {
        self.expire_due();
        let refused = |reason: &str| HarnessError::Resume {
            invocation_id: invocation_id.to_string(),
            reason: reason.to_string(),
        };
        let suspension = {
            let mut suspended = self.suspended.lock().unpoisoned();
            match suspended.get(invocation_id) {
                None if self.store.has(invocation_id) => {
                    return Err(refused("it is decided and stored (it may have expired)"));
                }
                None => return Err(refused("no run is suspended under that id")),
                Some(s) if s.acting_for.principal_id != principal.principal_id => {
                    return Err(refused(
                        "it was suspended for another principal, and only that principal may resume it",
                    ));
                }
                Some(_) => suspended.remove(invocation_id),
            }
        };
        suspension.ok_or_else(|| refused("no run is suspended under that id"))
    }

    /// The principal a suspended run waits for, if `invocation_id` is suspended.
    pub(crate) fn suspended_for(&self, invocation_id: &str) -> Option<String> {
        self.suspended
            .lock()
            .unpoisoned()
            .get(invocation_id)
            .map(|s| s.acting_for.principal_id.clone())
    }

    /// Where suspended runs wait on disk: `<runs>/.ddwire/suspended/<invocation_id>.json`.
    fn records_dir(&self) -> PathBuf {
        self.store
            .root()
            .join(super::store::CONTROL_DIR)
            .join("suspended")
    }

    /// Write a suspended run's record, whole (written aside, synced, renamed into place).
    fn keep_record(&self, id: &str, record: &Value) -> std::io::Result<()> {
        use std::io::Write;
        let dir = self.records_dir();
        std::fs::create_dir_all(&dir)?;
        let aside = dir.join(format!("{id}.json.new"));
        let mut file = std::fs::File::create(&aside)?;
        file.write_all(record.to_string().as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&aside, dir.join(format!("{id}.json")))
    }

    /// Forget a suspended run's record once the run is stored.
    fn drop_record(&self, id: &str) {
        let _ = std::fs::remove_file(self.records_dir().join(format!("{id}.json")));
    }

    /// Read back the runs left suspended by an earlier process over this store, so they can
    /// still be resumed (or expire); returns them, for the A2A endpoint to show their tasks as
    /// `input-required` again. A record that cannot be read is left where it is and named.
    pub(crate) fn restore_suspended(&self) -> Vec<Waiting> {
        let Ok(entries) = std::fs::read_dir(self.records_dir()) else {
            return Vec::new();
        };
        let mut waiting = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(id) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
                .filter(|id| crate::ids::is_uuid7(id))
                .map(str::to_string)
            else {
                continue;
            };
            let record = std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
            let Some(suspension) = record.as_ref().and_then(Suspension::from_record) else {
                stderr_line!(
                    "ddwire: {} is not a suspended run's record; left as it is",
                    path.display()
                );
                continue;
            };
            if self.store.has(&id) {
                // Stored already: only the record's removal was lost.
                self.drop_record(&id);
                continue;
            }
            waiting.push(Waiting {
                request: suspension.request.clone(),
                request_doc: suspension.request_doc.clone(),
                principal_id: suspension.acting_for.principal_id.clone(),
                resume_condition: suspension.resume_condition.clone(),
                expires_at: suspension.expires_at.clone(),
            });
            self.suspended.lock().unpoisoned().insert(id, suspension);
        }
        waiting
    }

    /// Store every suspension past its expiry as an expired run.
    fn expire_due(&self) {
        let now = crate::time::now_ns() as i128;
        let due: Vec<Suspension> = {
            let mut suspended = self.suspended.lock().unpoisoned();
            let ids: Vec<String> = suspended
                .iter()
                .filter(|(_, s)| s.expires_ns <= now)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| suspended.remove(id)).collect()
        };
        for s in due {
            let detail = format!(
                "the run was suspended at {} and not resumed before {}",
                s.suspended_at, s.expires_at
            );
            if let Err(e) = self.store_unresumed(&s, (EXPIRED, &detail), None) {
                stderr_line!(
                    "ddwire: the expired run {} could not be stored: {e}",
                    s.request.invocation_id
                );
            }
        }
    }

    /// Store a suspended run its caller will not resume (abandoned, or expired) as failed,
    /// with its turns, and forget its record.
    fn store_unresumed(
        &self,
        s: &Suspension,
        failure: (&str, &str),
        resumed_by: Option<&str>,
    ) -> Result<Run> {
        let turns = turns_json(s, resumed_by);
        let trace = RunTrace::new(None);
        let files = [(TURNS_FILE, turns.as_str())];
        let run = self.store_failure(
            &s.request,
            &s.request_doc,
            &s.acting_for,
            &trace,
            failure,
            &files,
        )?;
        self.drop_record(&s.request.invocation_id);
        Ok(run)
    }

    /// Run a request a delegation agent sent back under its grant, and record it against the
    /// parent. The child's lineage, conversation and principal come from the grant, whatever
    /// the request or its caller says; its policy is the conductor's, as every run's is.
    pub(crate) fn invoke_delegated(
        &self,
        request: InvocationRequest,
        callback: &Callback,
    ) -> Result<Run> {
        let token = callback.token;
        let (parent_id, conversation_id, acting_for) = {
            let mut grants = self.grants.lock().unpoisoned();
            let grant = grants
                .get_mut(&grant_key(token))
                .filter(|g| !g.revoked)
                .ok_or_else(|| HarnessError::delegation("unknown or expired delegation token"))?;
            self.check_callback(grant, callback)?;
            if request.agent_id == grant.parent_agent_id {
                return Err(HarnessError::delegation(format!(
                    "{} may not delegate to itself",
                    request.agent_id
                )));
            }
            grant.in_flight += 1;
            (
                grant.parent_invocation_id.clone(),
                grant.conversation_id.clone(),
                grant.acting_for.clone(),
            )
        };
        // From here the child counts as in flight; the guard uncounts it however this ends.
        let in_flight = InFlight {
            conductor: self,
            key: grant_key(token),
        };
        let mut child = request;
        child.parent_invocation_id = Some(parent_id);
        child.conversation_id = conversation_id;
        let trace = callback
            .trace
            .cloned()
            .unwrap_or_else(|| RunTrace::new(None));
        let outcome =
            done(self.guarded(child, &acting_for, trace, &|_, _| {}, None, Turning::Once));
        if let Ok(run) = &outcome {
            in_flight.record(delegation_record(&run.envelope));
        }
        outcome
    }

    /// Whether a callback may use `grant`: it names the grant's parent (if it names one), and
    /// it is signed by the grant's agent when the harness shares a key with that agent.
    fn check_callback(&self, grant: &Grant, callback: &Callback) -> Result<()> {
        let parent = &grant.parent_agent_id;
        if let Some(claimed) = callback.parent_invocation_id
            && claimed != grant.parent_invocation_id
        {
            return Err(HarnessError::delegation(format!(
                "the delegation token was not issued for invocation {claimed}; a grant is bound \
                 to the invocation it was issued for"
            )));
        }
        let keyed = self.registry.get(parent).is_some_and(|a| a.key.is_some());
        match callback.signed_by {
            Some(signer) if signer != parent => Err(HarnessError::delegation(format!(
                "the callback is signed with the key of {signer}, but the grant was issued to {parent}"
            ))),
            None if keyed => Err(HarnessError::delegation(format!(
                "{parent} shares a key with the harness, so its delegation callbacks must be \
                 signed with it (DD-Signature); this one is not"
            ))),
            _ => Ok(()),
        }
    }

    /// Refuse reused ids (running or stored), then run. The id is held in the running set by a
    /// guard, so it is released however the run ends; a panic in the run is stored as a failed
    /// run ([`Conductor::caught`]).
    fn guarded(
        &self,
        request: InvocationRequest,
        acting_for: &Principal,
        trace: RunTrace,
        observer: Observer<'_>,
        task: Option<&Progress>,
        turning: Turning<'_>,
    ) -> Result<Turn> {
        self.expire_due();
        // Built once: the check, the run and the run store read the same document.
        let request_doc = Arc::new(request.to_document());
        let errors = validate::request_errors(&request_doc);
        if !errors.is_empty() {
            return Err(ContractError::Violation {
                document: "InvocationRequest",
                violations: errors,
            }
            .into());
        }
        if !self.store.is_writable() {
            // Refused before the agent runs: a run that cannot be stored is not made.
            return Err(StoreError::ReadOnly.into());
        }
        let _running = self.admit(&request.invocation_id)?;
        let turn = self.caught(&request, &request_doc, acting_for, &trace, || {
            let document = Arc::clone(&request_doc);
            self.run(
                &request, document, acting_for, &trace, observer, task, turning,
            )
        });
        // The request and its document are freed once the caller has the answer, not before.
        crate::wire::http::free_after_reply((request, request_doc));
        turn
    }

    /// Put `id` in the running set, unless it is running, suspended or stored (a resumed run's
    /// id, taken from the suspended runs first, is none of these).
    fn admit(&self, id: &str) -> Result<Running<'_>> {
        let suspended = self.suspended.lock().unpoisoned().contains_key(id);
        let mut running = self.running.lock().unpoisoned();
        if suspended || running.contains(id) || self.store.has(id) {
            return Err(HarnessError::DuplicateInvocation {
                invocation_id: id.to_string(),
            });
        }
        running.insert(id.to_string());
        Ok(Running {
            set: &self.running,
            id: id.to_string(),
        })
    }

    /// The turn `run` makes of `request`; after a panic outside the agent call, the run stored
    /// as failed: an `agent-error` envelope naming the panic, recording the children it
    /// delegated, and a trace of one `invoke_agent` span. The conductor's other spans of the
    /// run are lost with the stack that held them.
    fn caught(
        &self,
        request: &InvocationRequest,
        request_doc: &Value,
        acting_for: &Principal,
        trace: &RunTrace,
        run: impl FnOnce() -> Result<Turn>,
    ) -> Result<Turn> {
        std::panic::catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|panic| {
            let detail = format!(
                "the harness panicked while running the agent: {}",
                panic_message(&*panic)
            );
            let failure = ("HarnessPanic", detail.as_str());
            self.store_failure(request, request_doc, acting_for, trace, failure, &[])
                .map(|run| Turn::Done(Box::new(run)))
        })
    }

    /// Store the run of `request` as failed by the conductor (`agent-error`,
    /// `<agent_id>: <kind>: <detail>`), with a trace of its own root span and `files` beside it.
    fn store_failure(
        &self,
        request: &InvocationRequest,
        request_doc: &Value,
        acting_for: &Principal,
        trace: &RunTrace,
        (kind, detail): (&str, &str),
        files: &[(&str, &str)],
    ) -> Result<Run> {
        // Its children are stored runs naming it (the grant's guard waited for them as it
        // unwound), so the record of them is rebuilt from the store.
        let mut delegations = Vec::new();
        self.store.oldest_first(|e| {
            if e.get("parent_invocation_id").and_then(Value::as_str)
                == Some(request.invocation_id.as_str())
                && let Ok(child) = <Envelope as serde::Deserialize>::deserialize(&e)
            {
                delegations.push(delegation_record(&child));
            }
            std::ops::ControlFlow::Continue(())
        })?;
        let agent = self
            .registry
            .get(&request.agent_id)
            .ok_or_else(|| self.registry.unknown(&request.agent_id))?;
        let mut invocation =
            Invocation::new(request, Arc::new(request_doc.clone()), &agent, acting_for);
        // The input was never judged: the run names no schema.
        invocation.accepted = None;
        let tracer = Tracer::new(SERVICE_NAME);
        let root = invocation.root_span(&tracer, trace);
        let decided = Decided {
            delegations,
            ..Decided::by_conductor(
                Outcome::failed(format!("The run failed: {detail}.")),
                Some(agent_error(&agent.spec.agent_id, kind, detail)),
            )
        };
        let (envelope, document, records, report) =
            self.conclude(&invocation, &tracer, root, decided, &|_, _| {})?;
        let beside = Beside {
            agent_reply: None,
            files,
        };
        self.store_run(&invocation, envelope, document, records, report, beside)
    }

    /// One invocation, admitted: the conductor's stages in the order the reference conductor
    /// runs them (see the module documentation, "Stages"), each a function below.
    /// A stage that decides the outcome itself (a refusal, a referral) skips the agent call.
    /// `request_doc` is `request`'s document, which the caller already built to check it.
    #[allow(clippy::too_many_arguments)] // Both callers pass each one straight through.
    fn run(
        &self,
        request: &InvocationRequest,
        request_doc: Arc<Value>,
        acting_for: &Principal,
        trace: &RunTrace,
        observer: Observer<'_>,
        task: Option<&Progress>,
        turning: Turning<'_>,
    ) -> Result<Turn> {
        let can_suspend = matches!(turning, Turning::MaySuspend | Turning::Resuming(_));
        let (approval, resumed) = match turning {
            Turning::Approved(record) => (Some(record), None),
            Turning::Resuming(r) => (None, Some(*r)),
            Turning::Once | Turning::MaySuspend => (None, None),
        };
        // An agent that came up after the harness is admitted here, before refusing.
        let agent = self
            .registry
            .get_or_refresh(&request.agent_id)
            .ok_or_else(|| self.registry.unknown(&request.agent_id))?;
        let agent = &agent;
        let invocation = Invocation::new(request, request_doc, agent, acting_for);
        let resumption = resumed.as_ref().map(|r| r.resumption);
        // One tracer per invocation, dropped at the end: the conductor keeps no spans.
        let tracer = Tracer::new(SERVICE_NAME);
        let root = invocation.root_span(&tracer, trace);
        let trace_id = root.context().trace_id;

        let approval = approval.filter(|record| approval_holds(record, agent, &invocation));
        let mut decided = stage(observer, Stage::PolicyGate, || {
            policy_gate(&self.profile, &agent.spec, &tracer, &root, approval)
        })
        .or_else(|| {
            stage(observer, Stage::InputCheck, || {
                input_check(&invocation, &root)
            })
        })
        .unwrap_or_else(|| {
            stage(observer, Stage::AgentCall, || {
                self.call_agent(&invocation, &root, task, resumption)
            })
        });
        if can_suspend
            && decided.from_agent
            && decided.result.outcome.status == OutcomeStatus::Suspended
        {
            root.set(attr::OUTCOME, OutcomeStatus::Suspended.as_str());
            root.end();
            let mut records = tracer.take(trace_id);
            records.extend(decided.spans);
            let turn = turn_json(resumption, decided.agent_reply.as_ref(), &records);
            return Ok(self.suspend(&invocation, resumed, turn, decided.result.outcome.statement));
        }
        let agent_reply = decided.agent_reply.take();
        let (envelope, document, records, report) =
            self.conclude(&invocation, &tracer, root, decided, observer)?;
        let turns = resumed.map(|r| resumed_turns(r, agent_reply.as_ref(), &records));
        let approval_text = approval.map(Value::to_string);
        let mut files: Vec<(&str, &str)> = Vec::new();
        if let Some(t) = turns.as_deref() {
            files.push((TURNS_FILE, t));
        }
        if let Some(a) = approval_text.as_deref() {
            files.push((approval::APPROVAL_FILE, a));
        }
        let stored = stage(observer, Stage::Store, || {
            let beside = Beside {
                agent_reply: agent_reply.as_ref(),
                files: &files,
            };
            self.store_run(&invocation, envelope, document, records, report, beside)
        });
        // The agent's reply is freed once the caller has the answer, not before.
        crate::wire::http::free_after_reply(agent_reply);
        stored.map(|run| {
            if turns.is_some() {
                self.drop_record(&request.invocation_id);
            }
            Turn::Done(Box::new(run))
        })
    }

    /// Stages 4 and 5 over what the stages before decided: the envelope, with everything the
    /// conductor fills, through the grounding check and validation, and the root ended with
    /// its verdict. Returns what the store keeps: the envelope, its document, every span of
    /// the run and the linter's report.
    fn conclude(
        &self,
        invocation: &Invocation<'_>,
        tracer: &Tracer,
        root: ActiveSpan<'_>,
        decided: Decided,
        observer: Observer<'_>,
    ) -> Result<(Envelope, Value, Vec<SpanRecord>, GroundingReport)> {
        let trace_id = root.context().trace_id;
        let mut envelope = self.envelope(invocation, decided.result, decided.problem, trace_id);
        envelope.delegations = decided.delegations;
        // Set before linting, as the reference does: a withheld run's root still says what
        // the agent claimed; its status and `withheld` event say what became
        // of it.
        root.set(attr::OUTCOME, envelope.outcome.status.as_str());

        // The root stays open through the checks, so it can record their verdict; the linter
        // reads it as it stands (it reads no status, event or end time).
        let mut records = tracer.take(trace_id);
        let root_at = records.len();
        records.extend(root.snapshot());
        records.extend(decided.spans);
        let (report, unchanged) = stage(observer, Stage::GroundingCheck, || {
            grounding_check(&records, &mut envelope, &root)
        });
        let document = validation(&mut envelope, unchanged, decided.from_agent, &root)?;
        record_outcome(&root, &envelope);
        root.end();
        if let (Some(slot), Some(ended)) = (records.get_mut(root_at), tracer.take(trace_id).pop())
            && slot.span_id == ended.span_id
        {
            *slot = ended;
        }
        Ok((envelope, document, records, report))
    }

    /// Keep a turn the agent suspended (the first, or one more after a resumption) until its
    /// caller resumes it or it expires.
    fn suspend(
        &self,
        invocation: &Invocation<'_>,
        resumed: Option<Resumed<'_>>,
        turn: Value,
        resume_condition: String,
    ) -> Turn {
        let now = crate::time::now_ns() as i128;
        let expires_ns = now.saturating_add(self.suspend_for.as_nanos() as i128);
        let expires_at = crate::time::rfc3339(expires_ns);
        let mut suspension = match resumed {
            Some(r) => r.suspension,
            None => Suspension {
                request: invocation.request.clone(),
                request_doc: Value::clone(&invocation.document),
                acting_for: invocation.acting_for.clone(),
                suspended_at: crate::time::rfc3339(now),
                expires_at: String::new(),
                expires_ns: 0,
                resume_condition: String::new(),
                turns: Vec::new(),
            },
        };
        suspension.turns.push(turn);
        suspension.expires_at = expires_at.clone();
        suspension.expires_ns = expires_ns;
        suspension.resume_condition = resume_condition.clone();
        let id = &invocation.request.invocation_id;
        if let Err(e) = self.keep_record(id, &suspension.to_record()) {
            // Still resumable while this process runs; only a restart would lose it.
            stderr_line!("ddwire: the suspended run {id} is kept in memory only: {e}");
        }
        self.suspended
            .lock()
            .unpoisoned()
            .insert(invocation.request.invocation_id.clone(), suspension);
        Turn::Suspended {
            resume_condition,
            expires_at,
        }
    }

    /// Stage 3, the agent call: call the agent over A2A under the root span, with a grant if
    /// it may delegate, and read its reply. A failed call, a cancellation and a payload that
    /// contradicts the agent's declared class are each an `agent-error` outcome; an answer is
    /// the agent's result, with its spans and its reply as received.
    fn call_agent(
        &self,
        invocation: &Invocation<'_>,
        root: &ActiveSpan<'_>,
        task: Option<&Progress>,
        resumption: Option<&Value>,
    ) -> Decided {
        let (request, agent) = (invocation.request, invocation.agent);
        let agent_id = &agent.spec.agent_id;
        let mut metadata = Map::new();
        let input_ref = input_source_id(&request.invocation_id);
        metadata.insert(meta::INPUT_REF.into(), input_ref.into());
        metadata.insert(
            meta::INPUT_HASH.into(),
            invocation.input_hash.clone().into(),
        );
        metadata.insert(meta::TRACEPARENT.into(), root.traceparent().into());
        if let Some(resumption) = resumption {
            metadata.insert(meta::RESUMPTION.into(), resumption.clone());
        }
        let grant = self.issue_grant(request, agent, invocation.acting_for);
        if let (Some(grant), Some(url)) = (&grant, &self.callback_url) {
            metadata.insert(meta::DELEGATE_URL.into(), url.clone().into());
            metadata.insert(meta::DELEGATION_TOKEN.into(), grant.token.clone().into());
        }
        let document = &invocation.document;
        let (received, canceled) = match task {
            // Work nothing can cancel (an AG-UI run) is called here, with no thread to wake.
            Some(task) if task.can_be_canceled() => {
                call_until(&self.client, agent, document, metadata, task)
            }
            _ => (call_caught(&self.client, agent, document, metadata), false),
        };
        // Recorded whatever the agent did: the children ran and are stored.
        let delegations = grant.map(GrantGuard::revoke).unwrap_or_default();
        let answered = if received.is_ok() {
            "answered"
        } else {
            "failed"
        };
        stage_event(root, Stage::AgentCall, attr::STAGE_RESULT, answered);
        let mut decided = match received {
            Err(failure) => {
                let detail = &failure.detail;
                // An unreachable agent is still `agent-error`, but not "raised": nothing
                // reached the agent.
                let unreachable = failure.unreachable && !canceled;
                let (kind, statement) = if canceled {
                    (CANCELED, format!("{CANCELED}: {detail}"))
                } else if unreachable {
                    let statement = format!(
                        "Agent unreachable: {detail}. Is the agent running at that address?"
                    );
                    ("AgentUnreachable", statement)
                } else {
                    ("RemoteAgentError", format!("Agent raised: {detail}"))
                };
                let mut problem = agent_error(agent_id, kind, detail);
                if unreachable {
                    problem.title = Some(UNREACHABLE_TITLE.to_string());
                }
                Decided {
                    agent_reply: failure.reply,
                    ..Decided::by_conductor(Outcome::failed(statement), Some(problem))
                }
            }
            Ok(mut received) => {
                let mismatch = received
                    .result
                    .payload
                    .as_mut()
                    .and_then(|p| payload_mismatch(agent, p));
                let (result, problem) = match mismatch {
                    Some(mismatch) => (
                        AgentResult::new(Outcome::failed(format!(
                            "Agent contradicted its specification: {mismatch}"
                        ))),
                        Some(agent_error(agent_id, "TypeError", &mismatch)),
                    ),
                    None => (received.result, None),
                };
                Decided {
                    result,
                    problem,
                    from_agent: true,
                    agent_reply: Some(received.reply),
                    spans: received.spans,
                    delegations: Vec::new(),
                }
            }
        };
        decided.delegations = delegations;
        decided
    }

    /// The envelope of an invocation: what the stages decided, and everything the conductor
    /// fills itself (identifiers, time, policy, principal, contract version, telemetry).
    fn envelope(
        &self,
        invocation: &Invocation<'_>,
        result: AgentResult,
        problem: Option<ProblemDetails>,
        trace_id: TraceId,
    ) -> Envelope {
        let (request, spec) = (invocation.request, &invocation.agent.spec);
        let payload_schema = result.payload.as_ref().and(spec.payload_schema());
        Envelope {
            invocation_id: request.invocation_id.clone(),
            agent_id: spec.agent_id.clone(),
            agent_version: spec.version.clone(),
            completed_at: crate::time::now_rfc3339(),
            grounding_mode: spec.grounding_mode,
            policy_bundle_ref: self.profile.bundle_ref(),
            policy_digest: self.profile.digest.clone(),
            acting_for: invocation.acting_for.clone(),
            contract_version: CONTRACT_VERSION.to_string(),
            input_schema: invocation.accepted.map(|c| c.digest.clone()),
            outcome: result.outcome,
            payload: result.payload,
            payload_schema: payload_schema.map(|c| c.digest.clone()),
            evidence: result.evidence,
            telemetry: Telemetry {
                model_id: result.model_id,
                input_tokens: result.input_tokens,
                output_tokens: result.output_tokens,
                ..Telemetry::for_trace(trace_id.to_string())
            },
            requires_human_review: true,
            problem,
            conversation_id: request.conversation_id.clone(),
            parent_invocation_id: request.parent_invocation_id.clone(),
            delegations: Vec::new(),
        }
    }

    /// Stage 6, the store: the envelope, the request, every span, the linter's report, the
    /// class schemas the run was checked against and the agent's reply as received, as one
    /// run; then, once stored, its spans to the OTLP exporter exactly as stored (the
    /// exporter's queue never blocks).
    fn store_run(
        &self,
        invocation: &Invocation<'_>,
        envelope: Envelope,
        document: Value,
        records: Vec<SpanRecord>,
        report: GroundingReport,
        beside: Beside<'_>,
    ) -> Result<Run> {
        let Beside { agent_reply, files } = beside;
        let spans: Vec<String> = records.iter().map(crate::trace::to_json).collect();
        let payload = envelope.payload.as_ref();
        let payload_schema = payload.and(invocation.agent.spec.payload_schema());
        let schemas: Vec<(&str, &Value)> = invocation
            .accepted
            .into_iter()
            .chain(payload_schema)
            .map(|c| (c.digest.as_str(), &c.json_schema))
            .collect();
        let summary = report.summary();
        let run_dir = self.store.append_with_files(
            &NewRun {
                envelope: &document,
                request: &invocation.document,
                spans: &spans,
                grounding: &summary,
                schemas: &schemas,
                agent_reply,
            },
            files,
        )?;
        if let Some(exporter) = &self.otlp {
            // The records, not the lines: reading the lines back cost the exporter's thread
            // about a fifteenth of a run's instructions, on the cores the runs share. Handed
            // over, not copied: the run is done with them.
            exporter.export_stored(records);
        } else {
            crate::wire::http::free_after_reply(records);
        }
        crate::wire::http::free_after_reply(spans);
        Ok(Run {
            envelope,
            document,
            report,
            run_dir,
        })
    }

    /// Issue a grant if this invocation may delegate: a remote agent in mode `delegation`, at
    /// the top level, with a known callback URL. The token is 32 random bytes, URL-safe base64.
    /// The grant lives until its guard is revoked or dropped.
    fn issue_grant(
        &self,
        request: &InvocationRequest,
        agent: &RemoteAgent,
        acting_for: &Principal,
    ) -> Option<GrantGuard<'_>> {
        if agent.spec.grounding_mode != GroundingMode::Delegation
            || request.parent_invocation_id.is_some()
            || self.callback_url.is_none()
        {
            return None;
        }
        // Without randomness there is no grant: the delegation is refused, not the harness.
        let token = crate::contract::tokens::new_token().ok()?;
        let grant = Grant {
            parent_invocation_id: request.invocation_id.clone(),
            parent_agent_id: request.agent_id.clone(),
            conversation_id: request.conversation_id.clone(),
            acting_for: acting_for.clone(),
            delegations: Vec::new(),
            in_flight: 0,
            revoked: false,
        };
        self.grants
            .lock()
            .unpoisoned()
            .insert(grant_key(&token), grant);
        Some(GrantGuard {
            conductor: self,
            token,
            revoked: false,
        })
    }

    /// Refuse further children under the grant filed as `key`, wait for those already
    /// admitted, remove it and return its records. The wait needs no timeout of its own: each
    /// child is bounded by its agent's call timeout, and its [`InFlight`] guard uncounts it
    /// even if it panics.
    fn revoke_grant(&self, key: &str) -> Option<Grant> {
        let mut grants = self.grants.lock().unpoisoned();
        if let Some(grant) = grants.get_mut(key) {
            grant.revoked = true;
        }
        while grants.get(key).is_some_and(|g| g.in_flight > 0) {
            grants = self.grants_changed.wait(grants).unpoisoned();
        }
        grants.remove(key)
    }

    /// How many grants are live (for tests: none outlives its invocation).
    pub(crate) fn live_grants(&self) -> usize {
        self.grants.lock().unpoisoned().len()
    }

    /// How many invocations are running (a drain waits for them; none stays after it returns).
    pub(crate) fn running(&self) -> usize {
        self.running.lock().unpoisoned().len()
    }
}

/// One admitted invocation: what every stage reads.
struct Invocation<'a> {
    request: &'a InvocationRequest,
    /// The request as the wire and the run store carry it; shared with the thread a task's
    /// agent call runs on, not copied for it.
    document: Arc<Value>,
    /// Shared with the thread a task's agent call runs on, not copied for it (a copy is the
    /// whole card and every class schema).
    agent: &'a Arc<RemoteAgent>,
    acting_for: &'a Principal,
    /// The `dd-input-json-v1` hash of the input, computed once.
    input_hash: String,
    /// The input's `schema_class` (empty when it names none).
    class: String,
    /// The class schema the input is checked against: the agent's, if it accepts the class.
    accepted: Option<&'a ClassSchema>,
}

impl<'a> Invocation<'a> {
    fn new(
        request: &'a InvocationRequest,
        document: Arc<Value>,
        agent: &'a Arc<RemoteAgent>,
        acting_for: &'a Principal,
    ) -> Invocation<'a> {
        let input = &document["input"];
        let input_hash = canonical::input_hash(input);
        let class = input
            .get("schema_class")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let spec = &agent.spec;
        let accepted = spec
            .accepts
            .contains(&class)
            .then(|| spec.schema(&class))
            .flatten();
        Invocation {
            request,
            document,
            agent,
            acting_for,
            input_hash,
            class,
            accepted,
        }
    }

    /// The `invoke_agent` span every other span of the run descends from: a new trace under
    /// the ids `trace` chose, linked to its caller's span or, for a delegated child, to the
    /// delegating `delegate` span.
    fn root_span<'t>(&self, tracer: &'t Tracer, trace: &RunTrace) -> ActiveSpan<'t> {
        let spec = &self.agent.spec;
        let mut root = tracer
            .span(SpanName::InvokeAgent)
            .new_trace_with(trace.root.trace_id, trace.root.span_id)
            .attribute(attr::AGENT_ID, spec.agent_id.as_str())
            .attribute(attr::GROUNDING_MODE, spec.grounding_mode.as_str())
            .attribute(attr::INPUT_HASH, self.input_hash.as_str());
        if let Some(link) = &trace.link {
            root = root.link(link);
        }
        root.start()
    }
}

/// What the stages before the envelope decided.
struct Decided {
    result: AgentResult,
    problem: Option<ProblemDetails>,
    /// The result is the agent's own answer: if it breaks the contract, that is the agent's
    /// error (stage 5).
    from_agent: bool,
    /// The agent's reply as received, kept beside the run so a withheld result can be
    /// audited and linted again.
    agent_reply: Option<Value>,
    /// The spans the agent returned, linted with the conductor's.
    spans: Vec<SpanRecord>,
    /// The children the agent delegated.
    delegations: Vec<Delegation>,
}

impl Decided {
    /// An outcome the conductor decided without an answer from the agent.
    fn by_conductor(outcome: Outcome, problem: Option<ProblemDetails>) -> Decided {
        Decided {
            result: AgentResult::new(outcome),
            problem,
            from_agent: false,
            agent_reply: None,
            spans: Vec::new(),
            delegations: Vec::new(),
        }
    }
}

/// What a run keeps beside its envelope, request, spans and report.
struct Beside<'a> {
    /// The agent's reply as received, when it answered.
    agent_reply: Option<&'a Value>,
    /// More files in the run's directory (`turns.json`).
    files: &'a [(&'a str, &'a str)],
}

/// How long a suspended run waits for its caller by default.
pub(crate) const SUSPEND_FOR: std::time::Duration = std::time::Duration::from_secs(3600);

/// Refuse a caller's request that sets its own lineage: only a delegation grant sets it.
pub(crate) fn top_level(request: &InvocationRequest) -> Result<()> {
    match request.parent_invocation_id {
        Some(_) => Err(HarnessError::delegation(
            "parent_invocation_id is set by the conductor from a delegation grant; a caller may not set it",
        )),
        None => Ok(()),
    }
}

/// The stored run of a turn that could not be suspended.
fn done(turn: Result<Turn>) -> Result<Run> {
    match turn? {
        Turn::Done(run) => Ok(*run),
        // Only a caller that can resume lets the agent suspend.
        Turn::Suspended { .. } => Err(HarnessError::Resume {
            invocation_id: String::new(),
            reason: "the agent suspended a run on a path that cannot resume it".into(),
        }),
    }
}

/// One turn of a suspended run, as `turns.json` keeps it.
fn turn_json(
    resumption: Option<&Value>,
    agent_reply: Option<&Value>,
    spans: &[SpanRecord],
) -> Value {
    let mut turn = Map::new();
    if let Some(r) = resumption {
        turn.insert("resumption".into(), r.clone());
    }
    turn.insert("agent_reply".into(), agent_reply.cloned().into());
    let spans = spans.iter().map(crate::trace::to_json).collect();
    turn.insert("spans".into(), spans);
    Value::Object(turn)
}

/// `turns.json` of a resumed run decided now: the turns it was suspended with, then this one
/// (the resumption, the agent's reply and the spans of its call).
fn resumed_turns(r: Resumed<'_>, agent_reply: Option<&Value>, spans: &[SpanRecord]) -> String {
    let mut s = r.suspension;
    s.turns
        .push(turn_json(Some(r.resumption), agent_reply, spans));
    turns_json(&s, Some(&r.resumed_by))
}

/// `turns.json`: when the run was suspended, until when, who resumed it, and every turn.
fn turns_json(s: &Suspension, resumed_by: Option<&str>) -> String {
    let mut doc = Map::new();
    doc.insert("suspended_at".into(), s.suspended_at.clone().into());
    doc.insert("expires_at".into(), s.expires_at.clone().into());
    if let Some(p) = resumed_by {
        doc.insert("resumed_by".into(), p.into());
    }
    doc.insert("turns".into(), s.turns.clone().into());
    crate::json::python::dumps(&Value::Object(doc), crate::json::python::Style::INDENT2)
}

/// Run `step` as `stage`, between the observer's `Started` and `Finished`.
fn stage<T>(observer: Observer<'_>, stage: Stage, step: impl FnOnce() -> T) -> T {
    observer(stage, Phase::Started);
    let out = step();
    observer(stage, Phase::Finished);
    out
}

/// Stage 1, the policy gate, against the deployment's profile, in its own `policy_gate`
/// span: `None` when the agent may run; else the conductor's outcome. A refusal is `failed`
/// with the profile's problem; a profile that requires approval refers the run to the data
/// steward. Either statement ends "The agent was not run." A run carrying a steward's
/// `approval` (its decision record) is let through where the profile would refer it, and its
/// root records an `approved` event.
fn policy_gate(
    profile: &Profile,
    spec: &AgentSpec,
    tracer: &Tracer,
    root: &ActiveSpan<'_>,
    approval: Option<&Value>,
) -> Option<Decided> {
    let span = tracer.policy_gate(&spec.agent_id);
    let decision = policy::gate(profile, &spec.agent_id, &spec.action_class);
    span.end();
    let approved = approval.filter(|_| matches!(decision, Decision::RequiresApproval { .. }));
    stage_event(
        root,
        Stage::PolicyGate,
        attr::STAGE_DECISION,
        if approved.is_some() {
            approval::Verdict::Approved.as_str()
        } else {
            decision.name()
        },
    );
    if let Some(record) = approved {
        let mut attributes = Attributes::default();
        for (key, at) in [
            (attr::APPROVAL_REFERRED, "/referred_invocation_id"),
            (attr::APPROVAL_BY, "/decided_by/principal_id"),
            (attr::APPROVAL_AT, "/decided_at"),
        ] {
            attributes.set(
                key,
                record.pointer(at).and_then(Value::as_str).unwrap_or(""),
            );
        }
        root.add_event(event::APPROVED, attributes);
        return None;
    }
    match &decision {
        Decision::Permitted => None,
        Decision::NotEnabled { reason } | Decision::ClassMismatch { reason, .. } => {
            Some(Decided::by_conductor(
                Outcome::failed(format!("{reason}. {AGENT_NOT_RUN}")),
                policy::refusal_problem(profile, &spec.agent_id, &spec.action_class, &decision),
            ))
        }
        Decision::RequiresApproval { reason } => Some(Decided::by_conductor(
            Outcome::referred(
                ReasonCode::PolicyRequiresApproval,
                DATA_STEWARD,
                format!("{reason}. {AGENT_NOT_RUN}"),
            ),
            None,
        )),
    }
}

/// Stage 2, the input check, against the class schema the agent's card carries: `None` when
/// the agent will read the input; else `failed` with `input-not-accepted`, naming the classes
/// it accepts or every way the input breaks the schema.
fn input_check(invocation: &Invocation<'_>, root: &ActiveSpan<'_>) -> Option<Decided> {
    let spec = &invocation.agent.spec;
    let (id, got) = (&spec.agent_id, &invocation.class);
    let errors = invocation
        .accepted
        .map(|c| c.errors(&invocation.document["input"]));
    let refusal = match errors {
        None => {
            let accepts = spec.accepts.join(", ");
            Some((
                format!("{id} accepts {accepts}, not {got}. {AGENT_NOT_RUN}"),
                format!("Agent '{id}' accepts {accepts}; the request carried '{got}'."),
            ))
        }
        Some(errors) if errors.is_empty() => None,
        Some(errors) => {
            let joined = errors.join("; ");
            Some((
                format!("The input is not a valid {got}: {joined}. {AGENT_NOT_RUN}"),
                format!(
                    "Agent '{id}' accepts '{got}', but the input does not conform to its schema: {joined}"
                ),
            ))
        }
    };
    let verdict = if refusal.is_some() {
        "refused"
    } else {
        "accepted"
    };
    stage_event(root, Stage::InputCheck, attr::STAGE_DECISION, verdict);
    refusal.map(|(statement, detail)| {
        Decided::by_conductor(
            Outcome::failed(statement),
            Some(ProblemType::InputNotAccepted.with_detail(detail)),
        )
    })
}

/// Stage 4, the grounding check: the linter over the conductor's spans and the agent's,
/// whatever trace the agent's name, so a span placed outside the tree is reported, never
/// dropped. A succeeded result with violations is withheld (`failed`, `grounding-violation`,
/// payload and evidence cleared) and the root records a `withheld` event naming the rules that
/// failed; any other is stored unchanged, its violations only in the report. Also returns the
/// envelope's document the linter read, if the envelope is still the one it was built from.
fn grounding_check(
    records: &[SpanRecord],
    envelope: &mut Envelope,
    root: &ActiveSpan<'_>,
) -> (GroundingReport, Option<Value>) {
    // A run refused or referred before its agent ran has no output: the report says the
    // linter did not run, rather than that nothing failed it.
    let document = envelope.to_document();
    let report = grounding::lint_run(records, &document);
    if report.violations.is_empty() || envelope.outcome.status != OutcomeStatus::Succeeded {
        return (report, Some(document));
    }
    let violations = report.violations.join("; ");
    withhold(
        envelope,
        root,
        Stage::GroundingCheck.name(),
        Some(report.rules()),
        report.violations.clone(),
        format!("Output withheld: it failed the grounding linter. {violations}"),
        ProblemType::GroundingViolation.with_detail(format!(
            "Nothing ungrounded leaves the system. Violations: {violations}"
        )),
    );
    (report, None)
}

/// Stage 5, validation: withhold or accept. A result from the agent that still breaks the
/// contract is the agent's error, withheld as `agent-error`, and the root records a `withheld`
/// event naming the violations; the envelope is then checked again, and one the conductor
/// built that breaks the contract is an error (a conductor bug), never stored. Returns the
/// envelope's document, as it will be stored. `unchanged` is the envelope's document if the
/// caller has it (built since the envelope last changed): it is not built again. An envelope
/// that passes is checked once: both checks read the same document, and validation is a
/// function of it alone, so the second could only repeat the first's answer.
fn validation(
    envelope: &mut Envelope,
    unchanged: Option<Value>,
    from_agent: bool,
    root: &ActiveSpan<'_>,
) -> std::result::Result<Value, ContractError> {
    let document = unchanged.unwrap_or_else(|| envelope.to_document());
    let e = match validate::validate_envelope(&document) {
        Ok(()) => return Ok(document),
        Err(e) if !from_agent => return Err(e),
        Err(e) => e,
    };
    let listed = match &e {
        ContractError::Violation { violations, .. } => violations.clone(),
        other => vec![other.to_string()],
    };
    let violations = listed.join("; ");
    let problem = agent_error(&envelope.agent_id, "ContractViolation", &e.to_string());
    let statement = format!("Agent result violates the contract: {violations}");
    withhold(envelope, root, VALIDATION, None, listed, statement, problem);
    let document = envelope.to_document();
    validate::validate_envelope(&document)?;
    Ok(document)
}

/// An invocation id held in the running set; dropping the guard (a return or an unwinding
/// panic) releases the id.
struct Running<'a> {
    set: &'a Mutex<HashSet<String>>,
    id: String,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.set.lock().unpoisoned().remove(&self.id);
    }
}

/// A live grant. [`GrantGuard::revoke`] ends it and returns its records; dropping it unrevoked
/// (the parent unwinding from a panic) revokes it too, waiting for the children in flight.
struct GrantGuard<'a> {
    conductor: &'a Conductor,
    /// The bearer token sent to the agent.
    token: String,
    revoked: bool,
}

impl GrantGuard<'_> {
    /// Refuse further children, wait for those in flight, and return what they recorded.
    fn revoke(mut self) -> Vec<Delegation> {
        self.revoked = true;
        self.conductor
            .revoke_grant(&grant_key(&self.token))
            .map(|g| g.delegations)
            .unwrap_or_default()
    }
}

impl Drop for GrantGuard<'_> {
    fn drop(&mut self) {
        if !self.revoked {
            self.conductor.revoke_grant(&grant_key(&self.token));
        }
    }
}

/// One child admitted under a grant. Dropping the guard (however the child ended) uncounts it
/// and wakes a revocation waiting for it.
struct InFlight<'a> {
    conductor: &'a Conductor,
    key: String,
}

impl InFlight<'_> {
    /// Record the child in its grant, then uncount it (by dropping the guard), so revocation
    /// sees the record once the count reaches zero.
    fn record(self, delegation: Delegation) {
        let mut grants = self.conductor.grants.lock().unpoisoned();
        // Revocation waits for in-flight children, so the grant is still here.
        if let Some(grant) = grants.get_mut(&self.key) {
            grant.delegations.push(delegation);
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut grants = self.conductor.grants.lock().unpoisoned();
        if let Some(grant) = grants.get_mut(&self.key) {
            grant.in_flight = grant.in_flight.saturating_sub(1);
        }
        drop(grants);
        self.conductor.grants_changed.notify_all();
    }
}

/// Call the agent; a panic in the call (the client, the reply's decoding) is its failure.
fn call_caught(
    client: &A2aClient,
    agent: &RemoteAgent,
    request_doc: &Value,
    metadata: Map<String, Value>,
) -> std::result::Result<remote::Received, remote::Failure> {
    std::panic::catch_unwind(AssertUnwindSafe(|| {
        remote::call(client, agent, request_doc, metadata)
    }))
    .unwrap_or_else(|panic| {
        Err(format!(
            "{}: the call panicked in the harness: {}",
            agent.spec.agent_id,
            panic_message(&*panic)
        )
        .into())
    })
}

/// Call the agent for `task`, on this thread, and give up once `task` is canceled: the call
/// is made under the task's interrupt (see `wire::http::client`'s "Interrupting a call"), so
/// its wait for the agent's answer ends within `INTERRUPT_POLL` of the cancellation. `true`
/// beside the failure when the task was canceled, whatever the call came to.
fn call_until(
    client: &A2aClient,
    agent: &RemoteAgent,
    request_doc: &Value,
    metadata: Map<String, Value>,
    task: &Progress,
) -> (std::result::Result<remote::Received, remote::Failure>, bool) {
    if task.is_canceled() {
        let before = format!(
            "the caller canceled task {} before {} was called; the agent was not run",
            task.task_id(),
            agent.spec.agent_id
        );
        return (Err(before.into()), true);
    }
    let started = std::time::Instant::now();
    let received = interruptible(task.interrupt(), || {
        call_caught(client, agent, request_doc, metadata)
    });
    if task.is_canceled() {
        let canceled = format!(
            "the caller canceled task {}; the harness stopped waiting for {} after {:.1} s",
            task.task_id(),
            agent.spec.agent_id,
            started.elapsed().as_secs_f64()
        );
        return (Err(canceled.into()), true);
    }
    (received, false)
}

/// The text of a panic's payload (`panic!` with a literal or a format string), or a note that
/// it had none.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// How a returned payload contradicts the agent's declared payload class, if it does. The
/// payload is checked as a value in place (moved out and back, not copied).
fn payload_mismatch(agent: &RemoteAgent, payload: &mut Payload) -> Option<String> {
    let value = Value::Object(std::mem::take(&mut payload.0));
    let got = value
        .get("schema_class")
        .map(crate::json::python::py_str)
        .unwrap_or_else(|| "None".into());
    let mismatch = match agent.spec.payload_schema() {
        Some(class) if class.name == got => {
            let errors = class.errors(&value);
            (!errors.is_empty()).then(|| {
                format!(
                    "returned a {got} its class schema does not admit: {}",
                    errors.join("; ")
                )
            })
        }
        _ => Some(format!(
            "returned {got}, declared {}",
            agent.spec.payload.as_deref().unwrap_or("none")
        )),
    };
    if let Value::Object(map) = value {
        payload.0 = map;
    }
    mismatch
}

/// `agent-error` problem details: `<agent_id>: <kind>: <detail>`.
/// The title of an `agent-error` whose agent could not be reached: the connection was refused
/// or failed before anything was sent, so the agent did not raise anything.
pub(crate) const UNREACHABLE_TITLE: &str = "Agent could not be reached";

fn agent_error(agent_id: &str, kind: &str, detail: &str) -> ProblemDetails {
    ProblemType::AgentError.with_detail(format!("{agent_id}: {kind}: {detail}"))
}

/// Turn an envelope into `failed` with `problem`, clearing what must not leave, and record on
/// the root a `withheld` event naming the stage that withheld it, the rules that failed (when
/// the stage names them) and the violations.
fn withhold(
    envelope: &mut Envelope,
    root: &ActiveSpan<'_>,
    stage: &str,
    rules: Option<Vec<String>>,
    violations: Vec<String>,
    statement: String,
    problem: ProblemDetails,
) {
    let mut attributes = Attributes::default();
    attributes.set(attr::WITHHELD_STAGE, stage);
    if let Some(rules) = rules {
        attributes.set(attr::WITHHELD_RULES, AttrValue::StringArray(rules));
    }
    attributes.set(
        attr::WITHHELD_VIOLATIONS,
        AttrValue::StringArray(violations),
    );
    root.add_event(event::WITHHELD, attributes);
    envelope.outcome = Outcome::failed(statement);
    envelope.payload = None;
    envelope.payload_schema = None;
    envelope.evidence.clear();
    envelope.problem = Some(problem);
}

/// The parent's record of a child run.
fn delegation_record(child: &Envelope) -> Delegation {
    Delegation {
        delegated_invocation_id: child.invocation_id.clone(),
        delegated_agent_id: child.agent_id.clone(),
        delegated_agent_version: child.agent_version.clone(),
        delegated_status: child.outcome.status,
        content_hash: envelope_hash(&child.to_document()),
    }
}

/// Record on the root span that a stage ran, and how it came out: the trace keeps the
/// invocation's decision points, and a replay reads which stages ran from them. The event's
/// attribute is informational (not owned): no check depends on it.
fn stage_event(root: &ActiveSpan<'_>, stage: Stage, key: &str, value: &str) {
    let mut attributes = Attributes::default();
    attributes.set(key, value);
    root.add_event(stage.name(), attributes);
}

/// Record the run's final outcome on its root, so the trace and the envelope never disagree:
/// a `failed` envelope (refused, withheld, an agent error, canceled) makes the root's status
/// `ERROR`, described by the problem's title (else its type, else the statement), as
/// OpenTelemetry marks a failed operation. Any other outcome leaves it `UNSET`: abstaining,
/// referring and succeeding are the agent doing its job, and `OK` is for an application to
/// assert, not an instrumentation (OpenTelemetry's "Set Status").
fn record_outcome(root: &ActiveSpan<'_>, envelope: &Envelope) {
    if envelope.outcome.status != OutcomeStatus::Failed {
        return;
    }
    let description = envelope
        .problem
        .as_ref()
        .and_then(|p| p.title.as_deref().or(Some(p.type_.as_str())))
        .filter(|d| !d.is_empty())
        .unwrap_or(envelope.outcome.statement.as_str());
    root.set_status(StatusCode::Error, Some(description));
}

/// How a grant is filed: the SHA-256 of its token.
fn grant_key(token: &str) -> String {
    canonical::sha256_hex(token.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_names_are_the_step_names_an_agui_client_shows() {
        assert_eq!(Stage::GroundingCheck.name(), "grounding_check");
    }

    use crate::agent::builtin::{Director, Hello};
    use crate::harness::testkit::{TestHarness, test_principal};
    use std::sync::Arc;
    use std::time::Duration;

    fn director_harness() -> TestHarness {
        TestHarness::new(vec![Arc::new(Director::new()), Arc::new(Hello::new())])
    }

    fn director_request() -> InvocationRequest {
        InvocationRequest::from_value(&serde_json::json!({
            "agent_id": "director.route",
            "input": {"schema_class": "Message", "message_text": "hi"}
        }))
        .unwrap()
    }

    /// Run `f` on a thread of its own over the harness, and return whether it ended within
    /// `limit`: a hang fails the test instead of hanging it.
    fn ends_within(
        th: &Arc<TestHarness>,
        limit: Duration,
        f: impl FnOnce(&Conductor) + Send + 'static,
    ) -> bool {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let th = Arc::clone(th);
        std::thread::spawn(move || {
            f(th.conductor());
            let _ = tx.send(());
        });
        rx.recv_timeout(limit).is_ok()
    }

    #[test]
    fn a_child_that_panics_in_flight_still_lets_its_grant_be_revoked() {
        let th = Arc::new(director_harness());
        let revoked = ends_within(&th, Duration::from_secs(10), |conductor| {
            let agent = &conductor.registry.get("director.route").unwrap();
            let grant = conductor
                .issue_grant(&director_request(), agent, &test_principal())
                .expect("a delegation agent gets a grant");
            let key = grant_key(&grant.token);
            conductor
                .grants
                .lock()
                .unwrap()
                .get_mut(&key)
                .unwrap()
                .in_flight += 1;
            let child = std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        let _in_flight = InFlight { conductor, key };
                        panic!("the child's run panicked");
                    })
                    .join()
            });
            assert!(child.is_err(), "the child thread panicked");
            grant.revoke();
        });
        assert!(revoked, "revocation waited for a child that had gone");
        assert_eq!(th.conductor().live_grants(), 0);
    }

    #[test]
    fn a_grant_whose_parent_panics_is_revoked_by_its_guard() {
        let th = director_harness();
        let conductor = th.conductor();
        let agent = &conductor.registry.get("director.route").unwrap();
        let parent = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let _grant =
                        conductor.issue_grant(&director_request(), agent, &test_principal());
                    assert_eq!(conductor.live_grants(), 1);
                    panic!("the parent's run panicked");
                })
                .join()
        });
        assert!(parent.is_err());
        assert_eq!(conductor.live_grants(), 0);
    }

    #[test]
    fn an_id_held_by_a_run_that_panics_is_released() {
        let th = director_harness();
        let conductor = th.conductor();
        let id = crate::ids::new_uuid7();
        let run = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let _running = conductor.admit(&id).unwrap();
                    assert!(matches!(
                        conductor.admit(&id),
                        Err(HarnessError::DuplicateInvocation { .. })
                    ));
                    panic!("the run panicked");
                })
                .join()
        });
        assert!(run.is_err());
        assert_eq!(conductor.running(), 0);
        assert!(conductor.admit(&id).is_ok());
    }

    #[test]
    fn a_panics_message_is_read_from_either_payload_type() {
        let literal = std::panic::catch_unwind(|| panic!("literal")).unwrap_err();
        let formatted = std::panic::catch_unwind(|| panic!("{}", 42)).unwrap_err();
        let other = std::panic::catch_unwind(|| std::panic::panic_any(7u8)).unwrap_err();
        assert_eq!(panic_message(&*literal), "literal");
        assert_eq!(panic_message(&*formatted), "42");
        assert_eq!(panic_message(&*other), "a panic without a message");
    }

    // --- Each stage alone ---------------------------------------------------------------------

    use crate::agent::builtin::{Failing, Ungrounded};
    use crate::contract::{ContractError as CE, Input};

    /// A harness over Hello, Ungrounded and Failing, and a request for `agent_id` on `input`.
    fn stage_harness() -> TestHarness {
        TestHarness::new(vec![
            Arc::new(Hello::new()),
            Arc::new(Ungrounded::new()),
            Arc::new(Failing::new()),
        ])
    }

    fn request_for(agent_id: &str, input: serde_json::Value) -> InvocationRequest {
        let serde_json::Value::Object(input) = input else {
            panic!("an input is an object")
        };
        InvocationRequest::new(agent_id, Input(input))
    }

    fn hi() -> serde_json::Value {
        serde_json::json!({"schema_class": "Message", "message_text": "hi"})
    }

    /// The events a finished root span recorded: `(stage, value)`.
    fn stage_events(tracer: &Tracer, trace_id: TraceId) -> Vec<(String, String)> {
        let spans = tracer.take(trace_id);
        let root = spans.iter().find(|s| s.is(SpanName::InvokeAgent)).unwrap();
        root.events
            .iter()
            .map(|e| {
                let value = e.attributes.iter().next().map(|(_, v)| format!("{v:?}"));
                (e.name.clone(), value.unwrap_or_default())
            })
            .collect()
    }

    #[test]
    fn the_policy_gate_refuses_an_agent_the_profile_does_not_enable() {
        let spec = crate::agent::Agent::spec(&Hello::new()).clone();
        let profile = Profile::from_bytes(br#"{"profile_id": "none", "agents": {}}"#, "t").unwrap();
        let tracer = Tracer::new(SERVICE_NAME);
        let root = tracer.span(SpanName::InvokeAgent).start();
        let trace_id = root.context().trace_id;
        let refused = policy_gate(&profile, &spec, &tracer, &root, None).expect("refused");
        root.end();
        assert_eq!(refused.result.outcome.status, OutcomeStatus::Failed);
        assert!(refused.result.outcome.statement.ends_with(AGENT_NOT_RUN));
        assert_eq!(
            refused.problem.unwrap().type_,
            ProblemType::AgentNotPermitted.uri()
        );
        assert!(!refused.from_agent);
        let events = stage_events(&tracer, trace_id);
        assert_eq!(events[0].0, "policy_gate");
        assert!(events[0].1.contains("not_enabled"), "{events:?}");
    }

    #[test]
    fn the_policy_gate_refers_a_class_that_requires_approval_and_lets_the_rest_run() {
        let spec = crate::agent::Agent::spec(&Hello::new()).clone();
        let class = &spec.action_class;
        let approval = format!(
            r#"{{"profile_id": "careful", "agents": {{"hello.world": "{class}"}}, "actions_requiring_approval": ["{class}"]}}"#
        );
        let profile = Profile::from_bytes(approval.as_bytes(), "t").unwrap();
        let tracer = Tracer::new(SERVICE_NAME);
        let root = tracer.span(SpanName::InvokeAgent).start();
        let referred = policy_gate(&profile, &spec, &tracer, &root, None).expect("referred");
        assert_eq!(referred.result.outcome.status, OutcomeStatus::Referred);
        assert_eq!(
            referred.result.outcome.referred_to.as_deref(),
            Some(DATA_STEWARD)
        );
        assert!(referred.problem.is_none());
        let open = format!(r#"{{"profile_id": "open", "agents": {{"hello.world": "{class}"}}}}"#);
        let profile = Profile::from_bytes(open.as_bytes(), "t").unwrap();
        assert!(policy_gate(&profile, &spec, &tracer, &root, None).is_none());
        root.end();
    }

    #[test]
    fn the_input_check_names_the_accepted_classes_or_every_schema_violation() {
        let th = stage_harness();
        let agent = &th.conductor().registry.get("hello.world").unwrap();
        let principal = test_principal();
        let tracer = Tracer::new(SERVICE_NAME);
        let root = tracer.span(SpanName::InvokeAgent).start();

        let wrong = request_for(
            "hello.world",
            serde_json::json!({"schema_class": "Echo", "value": 1}),
        );
        let invocation = Invocation::new(&wrong, Arc::new(wrong.to_document()), agent, &principal);
        let refused = input_check(&invocation, &root).expect("another class is refused");
        assert_eq!(
            refused.result.outcome.statement,
            format!("hello.world accepts Message, not Echo. {AGENT_NOT_RUN}")
        );
        assert_eq!(
            refused.problem.unwrap().type_,
            ProblemType::InputNotAccepted.uri()
        );

        let bad = request_for(
            "hello.world",
            serde_json::json!({"schema_class": "Message"}),
        );
        let invocation = Invocation::new(&bad, Arc::new(bad.to_document()), agent, &principal);
        let refused = input_check(&invocation, &root).expect("a schema violation is refused");
        assert!(
            refused
                .result
                .outcome
                .statement
                .starts_with("The input is not a valid Message: "),
            "{}",
            refused.result.outcome.statement
        );

        let good = request_for("hello.world", hi());
        let invocation = Invocation::new(&good, Arc::new(good.to_document()), agent, &principal);
        assert!(input_check(&invocation, &root).is_none());
        root.end();
    }

    #[test]
    fn the_agent_call_keeps_an_answer_and_turns_a_failure_into_an_agent_error() {
        let th = stage_harness();
        let conductor = th.conductor();
        let principal = test_principal();
        let tracer = Tracer::new(SERVICE_NAME);
        let root = tracer.span(SpanName::InvokeAgent).start();

        let hello = &conductor.registry.get("hello.world").unwrap();
        let request = request_for("hello.world", hi());
        let invocation =
            Invocation::new(&request, Arc::new(request.to_document()), hello, &principal);
        let answered = conductor.call_agent(&invocation, &root, None, None);
        assert!(answered.from_agent && answered.problem.is_none());
        assert_eq!(answered.result.outcome.status, OutcomeStatus::Succeeded);
        assert!(!answered.spans.is_empty(), "the agent's spans come back");
        assert!(answered.agent_reply.is_some());

        let failing = &conductor.registry.get("demo.failing").unwrap();
        let request = request_for("demo.failing", hi());
        let invocation = Invocation::new(
            &request,
            Arc::new(request.to_document()),
            failing,
            &principal,
        );
        let failed = conductor.call_agent(&invocation, &root, None, None);
        assert!(!failed.from_agent);
        assert!(
            failed
                .result
                .outcome
                .statement
                .starts_with("Agent raised: "),
            "{}",
            failed.result.outcome.statement
        );
        let problem = failed.problem.unwrap();
        assert_eq!(problem.type_, ProblemType::AgentError.uri());
        assert!(
            problem
                .detail
                .as_deref()
                .unwrap_or_default()
                .starts_with("demo.failing: RemoteAgentError: "),
            "{:?}",
            problem.detail
        );
        root.end();
    }

    /// An envelope for `agent_id` with `outcome`, as stage 3 would leave it.
    fn envelope_of(th: &TestHarness, agent_id: &str, result: AgentResult) -> (Envelope, TraceId) {
        let conductor = th.conductor();
        let agent = &conductor.registry.get(agent_id).unwrap();
        let request = request_for(agent_id, hi());
        let principal = test_principal();
        let invocation =
            Invocation::new(&request, Arc::new(request.to_document()), agent, &principal);
        let trace_id = crate::trace::TraceId::random();
        (
            conductor.envelope(&invocation, result, None, trace_id),
            trace_id,
        )
    }

    #[test]
    fn the_grounding_check_withholds_a_succeeded_result_with_violations_and_nothing_else() {
        let th = stage_harness();
        // Succeeded, with a trace that lacks the root span: a violation.
        let (mut envelope, _) = envelope_of(
            &th,
            "hello.world",
            AgentResult::new(Outcome::succeeded("Said hi.")),
        );
        let tracer = Tracer::new(SERVICE_NAME);
        let root = tracer.invoke_agent("hello.world");
        let (report, _) = grounding_check(&[], &mut envelope, &root);
        assert!(!report.violations.is_empty());
        assert_eq!(envelope.outcome.status, OutcomeStatus::Failed);
        let seen = root.snapshot().unwrap();
        let [withheld] = seen.events.as_slice() else {
            panic!("one withheld event: {:?}", seen.events)
        };
        assert_eq!(withheld.name, event::WITHHELD);
        assert_eq!(
            withheld.attributes.get(attr::WITHHELD_RULES),
            Some(&AttrValue::StringArray(report.rules()))
        );
        assert!(
            envelope
                .outcome
                .statement
                .starts_with("Output withheld: it failed the grounding linter. "),
            "{}",
            envelope.outcome.statement
        );
        assert_eq!(
            envelope.problem.unwrap().type_,
            ProblemType::GroundingViolation.uri()
        );
        // Failed already: stored as it is, the violations only in the report.
        let (mut envelope, _) =
            envelope_of(&th, "hello.world", AgentResult::new(Outcome::failed("No.")));
        let before = envelope.clone();
        let quiet = tracer.invoke_agent("hello.world");
        let (report, _) = grounding_check(&[], &mut envelope, &quiet);
        assert!(!report.violations.is_empty());
        assert_eq!(envelope, before);
        assert!(
            quiet.snapshot().unwrap().events.is_empty(),
            "nothing withheld"
        );
    }

    #[test]
    fn validation_withholds_an_agents_result_outside_the_contract_and_refuses_the_conductors() {
        let th = stage_harness();
        // A succeeded envelope must carry a payload: this one is outside the contract.
        let (envelope, _) = envelope_of(
            &th,
            "hello.world",
            AgentResult::new(Outcome::succeeded("Said hi.")),
        );
        assert!(crate::contract::validate_envelope(&envelope.to_document()).is_err());
        // From the agent: its error, withheld and stored.
        let mut withheld = envelope.clone();
        let tracer = Tracer::new(SERVICE_NAME);
        let root = tracer.invoke_agent("hello.world");
        let document =
            validation(&mut withheld, None, true, &root).expect("the agent's error is stored");
        let events = root.snapshot().unwrap().events;
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].name, event::WITHHELD);
        assert_eq!(
            events[0].attributes.get(attr::WITHHELD_STAGE),
            Some(&AttrValue::from(VALIDATION))
        );
        assert_eq!(document, withheld.to_document());
        assert_eq!(withheld.outcome.status, OutcomeStatus::Failed);
        assert!(
            withheld
                .outcome
                .statement
                .starts_with("Agent result violates the contract: "),
            "{}",
            withheld.outcome.statement
        );
        let detail = withheld.problem.unwrap().detail.unwrap_or_default();
        assert!(
            detail.starts_with("hello.world: ContractViolation: "),
            "{detail}"
        );
        // Built by the conductor itself: a bug, refused and never stored.
        let mut own = envelope;
        assert!(matches!(
            validation(&mut own, None, false, &root),
            Err(CE::Violation { .. })
        ));
    }

    #[test]
    fn the_store_stage_keeps_the_run_with_its_trace_report_and_reply() {
        let th = stage_harness();
        let conductor = th.conductor();
        let agent = &conductor.registry.get("hello.world").unwrap();
        let request = request_for("hello.world", hi());
        let principal = test_principal();
        let invocation =
            Invocation::new(&request, Arc::new(request.to_document()), agent, &principal);
        let tracer = Tracer::new(SERVICE_NAME);
        let root = invocation.root_span(&tracer, &RunTrace::new(None));
        let trace_id = root.context().trace_id;
        root.end();
        let records = tracer.take(trace_id);
        let result = AgentResult::new(Outcome::failed("No."));
        let envelope = conductor.envelope(&invocation, result, None, trace_id);
        let document = envelope.to_document();
        let report = grounding::lint(&records, &document);
        let reply = serde_json::json!({"result": {}, "spans": []});
        let run = conductor
            .store_run(
                &invocation,
                envelope.clone(),
                document.clone(),
                records,
                report,
                Beside {
                    agent_reply: Some(&reply),
                    files: &[],
                },
            )
            .unwrap();
        assert_eq!(run.envelope, envelope);
        assert_eq!(run.document, document);
        let store = &conductor.store;
        let id = &request.invocation_id;
        assert_eq!(store.envelope(id).unwrap(), Some(document));
        assert_eq!(store.agent_reply(id).unwrap(), Some(reply));
        assert_eq!(store.spans(id).unwrap().unwrap().lines().count(), 1);
        // The input's class schema is kept beside the run.
        let digest = agent.spec.schema("Message").unwrap().digest.clone();
        assert!(store.schema(&digest).unwrap().is_some());
    }
}
