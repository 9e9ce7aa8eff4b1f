//! The harness's own routes: A2A (both bindings) at `/a2a` and `/`, its card, plain JSON
//! routes for runs and agents, and (see `super::agui`) AG-UI. A run's routes answer from
//! the store: `GET /runs/{id}` the envelope, `/spans` the span JSON lines as stored,
//! `/grounding` the linter's report, `/approval` a steward's decision, `/agent-result` the
//! agent's reply, and `/waterfall` the run with its delegated runs as
//! `crate::trace::waterfall::to_json` computes it (`ddwire show --json`; the viewer draws it).
//!
//! Over A2A the harness is called like any agent, with one data part holding an
//! InvocationRequest. A conductor-decided outcome (a refusal, a withheld result) is a
//! completed task whose artifact `envelope` holds the envelope; a caller error (malformed,
//! unknown agent, lineage, unauthenticated) is a failed task with `{"error": …}` and no run
//! (a conductor's outcome, even a refusal, is a completed task carrying an envelope). A delegated call (metadata `dd.delegation_token`) runs under the
//! grant's principal and gets, beside `envelope`, the stored envelope as text in
//! `envelope-json`, so its hash survives the wire (invariant 5).
//!
//! The task is the run (see `harness/tasks.rs`): its id is the request's `invocation_id`, its
//! context the request's `conversation_id` (or the run's own id), and a message naming another
//! `contextId` is refused (-32602): the harness cannot put a run in a context its request does
//! not name. The A2A task rules are the shared A2A endpoint's: a
//! `taskId` must name a known task, and only a task waiting for input can be continued: a run
//! its agent suspended (`input-required`), resumed by a message carrying one data part from the
//! principal it was suspended for (see the conductor's "Suspension"). A non-blocking send (`returnImmediately: true`, `blocking: false`) is
//! answered at once with the task `submitted` while the conductor runs in the background;
//! `GetTask` shows it `working`, then `completed` with its envelope; `CancelTask` makes the
//! conductor stop waiting for the agent, and the run is stored as canceled (see
//! [`super::conductor`]). `ListTasks` lists the caller's runs, running and stored.
//!
//! A request to `/a2a` carrying signature headers ([`crate::wire::sign`], direction
//! `to-harness`) is verified against the keys the registry holds, each under its agent's id,
//! and refused with HTTP 401 if it does not verify; the conductor then requires a delegation
//! callback from a keyed agent to be signed by it. Unsigned callers (outside callers, agents
//! without a key) are handled as before.

use super::approval::{ApprovalError, Verdict};
use super::conductor::{Callback, Phase, RunTrace, Stage, Turn};
use super::identity::{Access, Authenticator, Role as TokenRole};
pub use super::served::Harness;
use super::served::{bearer_challenge, resolve_run, unauthorized};
use super::store::{Query, RunReader, StoreError, parse_time};
use crate::contract::formats::is_sha256_hex;
use crate::contract::{InvocationRequest, Principal};
use crate::harness::{HarnessError, Result};
use crate::wire::a2a::endpoint::{
    A2aError, CallContext, Endpoint, Execute, List, Plan, Progress, Reply, ReplyHeaders, TaskPlan,
    Visible, Work, signature_refused,
};
use crate::wire::a2a::model::{Artifact, Message, Part, Role, Task, TaskState};
use crate::wire::a2a::{Binding, CARD_PATH, LEGACY_CARD_PATH, artifact, meta};
use crate::wire::http::{Handler, Request, Response};
use crate::wire::sign::Verifier;
use serde_json::{Value, json};
use std::ops::ControlFlow;
use std::sync::Arc;

/// A caller refused for its credentials, as A2A answers it: the reason once (the error's own
/// text starts "unauthenticated: ", which the A2A error's text already says).
fn refused(e: HarnessError) -> A2aError {
    let reason = e.to_string();
    let reason = reason.strip_prefix("unauthenticated: ").unwrap_or(&reason);
    A2aError::Unauthenticated {
        reason: reason.to_string(),
    }
}

/// The request handler of a harness.
pub fn handler(harness: Arc<Harness>) -> Handler {
    let execute: Execute = {
        let harness = Arc::clone(&harness);
        Arc::new(
            move |message: &Message, continued: Option<&Task>, ctx: &CallContext| {
                plan(&harness, message, continued, ctx)
            },
        )
    };
    // The endpoint remembers the newest tasks it answered, failed ones included, so `tasks/get`
    // returns each as it was sent; an older run is rebuilt from the store.
    let mut endpoint = Endpoint::new(execute);
    restore_tasks(&harness, &endpoint.tasks);
    endpoint.streaming = true;
    endpoint.keep_alive = harness.keep_alive;
    endpoint.drain = Some(harness.drain.clone());
    // Past the drain deadline, runs still waiting on their agent are canceled (and stored as
    // such), so every blocking call gets an answer before the process exits.
    let tasks = endpoint.tasks.clone();
    harness.drain.on_cut(move || {
        tasks.cancel_running();
    });
    endpoint.lookup = {
        let harness = Arc::clone(&harness);
        Some(Arc::new(move |id: &str| {
            super::tasks::stored_task(&harness.conductor.store, id)
        }))
    };
    endpoint.list = {
        let (harness, live) = (Arc::clone(&harness), endpoint.tasks.clone());
        let list: List = Arc::new(move |query, ctx: &CallContext| {
            let principal = match &harness.authenticator {
                None => {
                    return Err(A2aError::Unauthenticated {
                        reason: "this harness accepts only delegation callbacks under a live \
                                 grant, and lists no tasks"
                            .into(),
                    });
                }
                Some(auth) => auth.principal_for(Some(&ctx.headers)).map_err(refused)?,
            };
            // An auditor's token lists every principal's tasks; anyone else lists its own.
            let auditor = harness.authenticator.as_ref().is_some_and(|auth| {
                auth.requires_credentials()
                    && matches!(auth.access_for(Some(&ctx.headers)), Ok(Access::All))
            });
            let scope = (!auditor).then_some(principal.principal_id.as_str());
            super::tasks::list(&live, &harness.conductor.store, scope, query)
        });
        Some(list)
    };
    endpoint.visible = {
        let harness = Arc::clone(&harness);
        let visible: Visible = Arc::new(move |id, held, ctx: &CallContext| {
            let access = match &harness.authenticator {
                None => return Ok(true),
                Some(auth) => auth.access_for(Some(&ctx.headers)).map_err(refused)?,
            };
            Ok(match held {
                // A task the endpoint holds: its owner, or (a delegated child, owned by no
                // caller until stored) the stored run's principal.
                Some(Some(owner)) => access.sees(Some(owner)),
                Some(None) | None => harness.sees_run(&access, id),
            })
        });
        Some(visible)
    };
    Arc::new(move |request: Request| route(&harness, &endpoint, &request))
}

fn route(harness: &Arc<Harness>, endpoint: &Endpoint, request: &Request) -> Response {
    if let Err(refused) = harness.browser.admit(request) {
        return harness.browser.decorate(request, refused);
    }
    let path = request.path.trim_end_matches('/');
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let state_changing = request.method == "POST"
        && matches!(
            segments.as_slice(),
            [] | ["a2a"] | ["agui"] | ["runs", _, "approve" | "decline"]
        );
    if state_changing && let Err(refused) = harness.browser.admit_body(request) {
        return harness.browser.decorate(request, refused);
    }
    if state_changing && let Some(refused) = refuse_before_parsing(harness, request) {
        return harness.browser.decorate(request, refused);
    }
    let response = dispatch(harness, endpoint, request);
    harness.browser.decorate(request, response)
}

/// With bearer tokens (`--tokens`), a POST to `/a2a`, `/` or `/agui` from a caller without a
/// valid credential is refused before its body is parsed: HTTP 401 with the RFC 6750 §3
/// challenge, and on A2A the JSON-RPC error the endpoint gives an unauthenticated call
/// (-32600, `Unauthenticated: …`, id `null` since the request was not read: JSON-RPC 2.0 §5).
/// Parsing a 4 MiB body costs tens of megabytes, which no caller may spend without a
/// credential.
///
/// Not refused here, since the credential is elsewhere: a signed request (its signature is
/// verified over the bytes, before parsing too), and, while a delegation grant is live, a body
/// that names a `"dd.delegation_token"` (an agent's callback carries its grant there; the
/// conductor checks it after parsing). A body refused on the way in (413, 408) keeps its own
/// answer.
fn refuse_before_parsing(harness: &Harness, request: &Request) -> Option<Response> {
    let auth = harness.authenticator.as_ref()?;
    if !auth.requires_credentials()
        || request.body_error.is_some()
        || Verifier::is_signed(&request.headers)
    {
        return None;
    }
    let refused = auth.principal_for(Some(&request.headers)).err()?;
    let callback = harness.conductor.live_grants() > 0
        && request
            .body
            .windows(DELEGATION_TOKEN_MEMBER.len())
            .any(|w| w == DELEGATION_TOKEN_MEMBER);
    if callback {
        return None;
    }
    let presented = request.header("authorization").is_some();
    let reason = refused.to_string();
    // Only the A2A endpoint answers in JSON-RPC; AG-UI and a steward's decision in plain JSON.
    if !matches!(request.path.trim_end_matches('/'), "" | "/a2a") {
        return Some(unauthorized(&reason, presented));
    }
    let binding = crate::wire::a2a::endpoint::declared_version(request)
        .and_then(|v| Binding::of_version(&v))
        .unwrap_or(Binding::V03);
    let error = A2aError::Unauthenticated { reason }.to_rpc(binding);
    let body = crate::wire::jsonrpc::error(&Value::Null, &error);
    Some(Response::json(401, &body).with_header("WWW-Authenticate", bearer_challenge(presented)))
}

/// The member an unsigned delegation callback carries its grant in, as its body spells it.
const DELEGATION_TOKEN_MEMBER: &[u8] = b"\"dd.delegation_token\"";

fn dispatch(harness: &Arc<Harness>, endpoint: &Endpoint, request: &Request) -> Response {
    let path = request.path.trim_end_matches('/');
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    match (request.method.as_str(), segments.as_slice()) {
        // `/` trims to no segments at all: it is the A2A endpoint too, as `serve --help` says.
        ("POST", [] | ["a2a"]) => {
            if Verifier::is_signed(&request.headers) && request.body_error.is_none() {
                match harness.built().callbacks.verify_request(request) {
                    Ok(key_id) => endpoint.handle_signed(request, Some(key_id)),
                    Err(refused) => signature_refused(&refused),
                }
            } else {
                endpoint.handle(request)
            }
        }
        ("GET" | "HEAD", _) if request.path == CARD_PATH || request.path == LEGACY_CARD_PATH => {
            harness.built().card.respond(request)
        }
        ("POST", ["agui"]) => super::agui::run(harness, request),
        ("GET", ["agui", "runs", _] | ["runs", ..] | ["conversations", ..]) => {
            match harness.read_access(&request.headers) {
                Ok(access) => read_route(harness, request, &segments, &access),
                Err(refused) => refused,
            }
        }
        ("GET", ["viewer"]) => super::viewer::page(),
        ("GET", ["agents"]) => Response::json(200, &harness.conductor.registry.listing()),
        ("GET", ["agents", id]) => match harness.conductor.registry.get(id) {
            Some(agent) => Response::json(
                200,
                &json!({ "spec": agent.spec.describe(), "card": agent.card }),
            ),
            None => Response::error(404, &format!("no agent {id}")),
        },
        ("GET", ["schema", "sha256", digest]) => {
            match is_sha256_hex(digest).then(|| harness.conductor.store.schema(digest)) {
                Some(Ok(Some(schema))) => Response::json(200, &schema),
                Some(Err(e)) => Response::error(500, &e.to_string()),
                _ => Response::error(404, &format!("no class schema {digest}")),
            }
        }
        ("GET" | "HEAD", ["livez"]) => Response::json(200, &json!({ "status": "live" })),
        ("GET" | "HEAD", ["healthz"]) => super::health::readiness(harness, &harness.connections),
        ("POST", ["agents", "refresh"]) => refresh_agents(harness, request),
        ("POST", ["runs", id, "approve"]) => decide(harness, request, id, Verdict::Approved),
        ("POST", ["runs", id, "decline"]) => decide(harness, request, id, Verdict::Declined),
        (_, _) => Response::error(
            404,
            &format!("no route {} {}", request.method, request.path),
        ),
    }
}

/// `POST /agents/refresh`: read every configured card again now. It asks for the credential
/// an invocation needs (with `--tokens`, a bearer token), because it makes the harness call
/// out to every agent.
fn refresh_agents(harness: &Harness, request: &Request) -> Response {
    let Some(auth) = &harness.authenticator else {
        return Response::error(
            401,
            "this harness accepts only delegation callbacks under a live grant",
        );
    };
    if let Err(e) = auth.principal_for(Some(&request.headers)) {
        return Response::error(401, &e.to_string()).with_header("WWW-Authenticate", "Bearer");
    }
    // The agents configuration is read again too, so an agent added to it, or removed, is
    // taken in without a restart.
    let refreshed = match harness.conductor.registry.reload() {
        Ok(r) => r,
        Err(e) => {
            return Response::error(
                409,
                &format!("the agents configuration was not read again, nothing changed: {e}"),
            );
        }
    };
    let mut body = harness.conductor.registry.listing();
    body["refreshed"] = serde_json::to_value(&refreshed).unwrap_or(Value::Null);
    Response::json(200, &body)
}

/// `POST /runs/{id}/approve` and `/decline`: a data steward decides a run the profile referred
/// (see `approval`). Only a bearer token with the role `steward` may: 401 without a valid
/// token, 403 for any other. The body is empty or `{"reason": "…"}`. An approval answers 200
/// with the decision's record and the new run's envelope (`{"decision", "envelope"}`), a decline
/// with the record alone; a refusal is the status [`ApprovalError::status`] names, with the
/// earlier decision when there was one.
fn decide(harness: &Harness, request: &Request, reference: &str, verdict: Verdict) -> Response {
    let token = match &harness.authenticator {
        Some(auth @ Authenticator::Bearer(_)) => auth.token_for(Some(&request.headers)),
        _ => {
            let e = ApprovalError::NotSteward(
                "this harness takes no bearer tokens, so no caller holds the role; start it \
                 with --tokens FILE and give the steward's entry \"role\": \"steward\""
                    .into(),
            );
            return Response::error(e.status(), &e.to_string());
        }
    };
    let steward = match token {
        Ok(token) if token.role == TokenRole::Steward => token.principal.clone(),
        Ok(token) => {
            let e = ApprovalError::NotSteward(format!(
                "the token of {} has no \"role\": \"steward\" in the tokens file",
                token.principal.principal_id
            ));
            return Response::error(e.status(), &e.to_string());
        }
        Err(e) => {
            let presented = request.header("authorization").is_some();
            return unauthorized(&e.to_string(), presented);
        }
    };
    if harness.drain.is_started() {
        return Response::error(
            503,
            "the harness is draining and takes no decision now; decide on the harness that serves next",
        )
        .with_header("Retry-After", "5");
    }
    let reason = match decision_reason(&request.body) {
        Ok(reason) => reason,
        Err(why) => return Response::error(400, &why.to_string()),
    };
    let id = match resolve_run(harness, reference, &Access::All) {
        Ok(id) => id,
        Err(response) => return response,
    };
    // A drain cut short interrupts the approved run's agent call, so it is stored before the
    // process exits.
    match harness.conductor.decide(
        &id,
        verdict,
        &steward,
        reason.as_deref(),
        harness.cut_interrupt(),
    ) {
        Ok((record, Some(run))) => Response::json(
            200,
            &json!({ "decision": record, "envelope": run.document }),
        )
        .noting_invocation(&run.envelope.invocation_id),
        Ok((record, None)) => Response::json(200, &json!({ "decision": record })),
        Err(e) => {
            let mut body = json!({ "error": e.to_string() });
            if let ApprovalError::AlreadyDecided(earlier) = &e {
                body["decision"] = Value::clone(earlier);
            }
            Response::json(e.status(), &body)
        }
    }
}

/// The most characters a steward's reason may hold.
const MAX_REASON_CHARS: usize = 2000;

/// The reason a decision's body gives: none for an empty body; else a JSON object whose only
/// member is an optional string `reason`.
fn decision_reason(body: &[u8]) -> std::result::Result<Option<String>, BadRequest> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let doc = crate::json::parse(body, crate::json::Limits::DEFAULT)
        .map_err(BadRequest::DecisionNotJson)?;
    let Value::Object(mut map) = doc else {
        return Err(BadRequest::DecisionNotObject);
    };
    let reason = match map.remove("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) if r.chars().count() <= MAX_REASON_CHARS => Some(r),
        Some(Value::String(_)) => return Err(BadRequest::ReasonTooLong),
        Some(_) => return Err(BadRequest::ReasonNotString),
    };
    if let Some(key) = map.keys().next() {
        return Err(BadRequest::DecisionMember { key: key.clone() });
    }
    Ok(reason)
}

/// The routes that read stored runs, for a caller who may see `access`. Another principal's
/// run is answered as no run at all (404), never as forbidden, so a reader learns nothing of
/// runs that are not its own.
fn read_route(
    harness: &Harness,
    request: &Request,
    segments: &[&str],
    access: &Access,
) -> Response {
    match segments {
        ["agui", "runs", id] => super::agui::replay(harness, id, access),
        ["runs"] => list_runs(harness, request, access),
        ["runs", id] => with_run(harness, id, access, |store, id| {
            Ok(store
                .envelope(id)?
                .map(|envelope| Response::json(200, &envelope)))
        }),
        ["runs", id, "spans"] => with_run(harness, id, access, |store, id| {
            Ok(store
                .spans(id)?
                .map(|lines| Response::bytes(200, "application/jsonl", lines.into_bytes())))
        }),
        ["runs", id, "waterfall"] => with_run(harness, id, access, |store, id| {
            super::viewer::waterfall_json(store, id, access)
        }),
        ["runs", id, "grounding"] => run_part(
            harness,
            id,
            access,
            RunReader::grounding,
            // The linter run again over the stored files, as `ddwire lint --json` does: one
            // report shape, with the stored verdict beside it.
            |store, id, text| match super::grounding::relint(store, id) {
                Ok(Some(report)) => Response::json(200, &report.to_json(Some(id), Some(&text))),
                _ => Response::json(200, &super::viewer::grounding_json(id, &text)),
            },
            "keeps no grounding report",
        ),
        ["runs", id, "approval"] => run_part(
            harness,
            id,
            access,
            super::approval::of_run,
            |_, _, record| Response::json(200, &record),
            "has no steward's decision: it was neither decided nor approved",
        ),
        ["runs", id, "agent-result"] => run_part(
            harness,
            id,
            access,
            RunReader::agent_reply,
            |_, _, reply| Response::json(200, &reply),
            "keeps no agent reply: its agent was not called, or did not answer",
        ),
        ["conversations"] => json_or_500(
            super::conversations::list(&harness.conductor.store, access).map(Value::Array),
        ),
        ["conversations", id] => {
            match super::conversations::runs_of(&harness.conductor.store, id, access) {
                Ok(Some(runs)) => {
                    Response::json(200, &json!({ "conversation_id": id, "runs": runs }))
                }
                Ok(None) => Response::error(404, &format!("no conversation {id}")),
                Err(e) => Response::error(500, &e.to_string()),
            }
        }
        _ => Response::error(
            404,
            &format!("no route {} {}", request.method, request.path),
        ),
    }
}

/// Answer from one stored run, named by id or unique prefix.
fn with_run(
    harness: &Harness,
    reference: &str,
    access: &Access,
    read: impl FnOnce(&RunReader, &str) -> Result<Option<Response>>,
) -> Response {
    let id = match resolve_run(harness, reference, access) {
        Ok(id) => id,
        Err(response) => return response,
    };
    match read(harness.conductor.store.reader(), &id) {
        Ok(Some(response)) => response.noting_invocation(&id),
        Ok(None) => Response::error(404, &format!("no run {reference}")),
        Err(e) => Response::error(500, &e.to_string()),
    }
}

/// A part of one stored run: `found` answers it; a run that keeps none is a 404 saying
/// `missing`, and a run not stored the 404 of [`with_run`].
fn run_part<T>(
    harness: &Harness,
    reference: &str,
    access: &Access,
    read: impl FnOnce(&RunReader, &str) -> Result<Option<T>>,
    found: impl FnOnce(&RunReader, &str, T) -> Response,
    missing: &str,
) -> Response {
    with_run(harness, reference, access, |store, id| {
        if !store.has(id) {
            return Ok(None);
        }
        Ok(Some(match read(store, id)? {
            Some(part) => found(store, id, part),
            None => Response::error(404, &format!("run {id} {missing}")),
        }))
    })
}

/// The most rows one page of `GET /runs` may ask for.
pub(crate) const MAX_PAGE: usize = 1000;
/// How many bytes of a streamed listing are sent at a time.
const LISTING_CHUNK: usize = 32 * 1024;

/// `GET /runs`: the runs `access` may see, newest first, as the reference's rows. With `limit`, one page and a
/// `Link: <…>; rel="next"` header (RFC 8288) when more match; without, every matching run,
/// streamed (chunked) as one JSON array, read from the index a block at a time. Filters:
/// `agent`, `status`, `principal` (id or name), `conversation`, `since`, `until`; `after`
/// (an id or unique prefix) continues after that run.
fn list_runs(harness: &Harness, request: &Request, access: &Access) -> Response {
    let store = harness.conductor.store.reader();
    // A reader who sees only its own runs names `after` by whole id: resolving a prefix would
    // name other principals' runs among the candidates.
    let resolver = matches!(access, Access::All).then_some(store);
    let mut query = match listing_query(resolver, &request.query) {
        Ok(q) => q,
        Err(why) => return Response::error(400, &why.to_string()),
    };
    if let Access::Own(principal_id) = access {
        // Exactly the reader's id: a `principal` filter naming someone else then lists nothing.
        query.principal_id = Some(principal_id.clone());
    }
    // Opened here, so a broken store is a 500 and an unknown `after` a 400 before any row.
    let listing = match store.listing(&query) {
        Ok(listing) => listing,
        Err(HarnessError::Store(StoreError::NoSuchRun { reference, .. })) => {
            return Response::error(
                400,
                &format!("after={reference}: the run index names no such run"),
            );
        }
        Err(e) => return Response::error(500, &e.to_string()),
    };
    if query.limit.is_some() {
        return match listing.page() {
            Ok(page) => {
                let mut response = Response::json(200, &Value::Array(page.rows));
                if let Some(next) = page.next {
                    let mut link = request
                        .query
                        .split('&')
                        .filter(|p| {
                            !p.is_empty() && !p.starts_with("after=") && !p.starts_with("at=")
                        })
                        .map(str::to_string)
                        .collect::<Vec<_>>();
                    link.push(format!("after={}", next.after));
                    link.push(format!("at={}", next.at));
                    response = response
                        .with_header("Link", &format!("</runs?{}>; rel=\"next\"", link.join("&")));
                }
                response
            }
            Err(e) => Response::error(500, &e.to_string()),
        };
    }
    let (tx, rx) = crossbeam_channel::bounded::<Vec<u8>>(4);
    std::thread::spawn(move || {
        let mut buf = Vec::with_capacity(LISTING_CHUNK + 1024);
        buf.push(b'[');
        let mut first = true;
        let scanned = listing.rows(|_, row| {
            if !first {
                buf.push(b',');
            }
            first = false;
            if serde_json::to_writer(&mut buf, &row).is_err() {
                return ControlFlow::Break(());
            }
            if buf.len() >= LISTING_CHUNK && tx.send(std::mem::take(&mut buf)).is_err() {
                return ControlFlow::Break(()); // the client went away
            }
            ControlFlow::Continue(())
        });
        match scanned {
            Ok(_) => {
                buf.push(b']');
                let _ = tx.send(buf);
            }
            // The status is sent: ending the body early leaves it unparseable, as it must.
            Err(e) => stderr_line!("ddwire serve: GET /runs: {e}"),
        }
    });
    Response::stream(200, "application/json", rx)
}

/// The listing's query string as a [`Query`]; `Err` is why it is refused with 400. `after` is
/// resolved as an id prefix through `store`, if given; else it must be a whole id.
fn listing_query(store: Option<&RunReader>, raw: &str) -> std::result::Result<Query, BadRequest> {
    let mut query = Query::default();
    let mut seen: Vec<String> = Vec::new();
    for pair in raw.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = crate::text::percent_decode(key, true).ok_or(BadRequest::QueryNotUtf8)?;
        let value = crate::text::percent_decode(value, true).ok_or(BadRequest::QueryNotUtf8)?;
        if seen.contains(&key) {
            return Err(BadRequest::Repeated { key });
        }
        seen.push(key.clone());
        let time = |v: &str| {
            parse_time(v).ok_or_else(|| BadRequest::NotATime {
                key: key.clone(),
                value: v.to_string(),
            })
        };
        match key.as_str() {
            "limit" => {
                let n: usize = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_PAGE).contains(n))
                    .ok_or_else(|| BadRequest::Limit {
                        value: value.clone(),
                    })?;
                query.limit = Some(n);
            }
            "after" => {
                query.after = Some(match store.map(|s| s.resolve(&value)) {
                    Some(Ok(id)) => id,
                    Some(Err(HarnessError::Store(e @ StoreError::AmbiguousRun { .. }))) => {
                        return Err(BadRequest::Ambiguous(e));
                    }
                    // A run listed but since removed still marks a place in the index.
                    Some(Err(_)) | None => value,
                });
            }
            "at" => query.at = value.parse().ok(),
            "agent" | "agent_id" => query.agent_id = Some(value),
            "status" => {
                crate::contract::OutcomeStatus::parse_or_list(&value)
                    .map_err(BadRequest::Status)?;
                query.status = Some(value);
            }
            "principal" => query.principal = Some(value),
            "conversation" | "conversation_id" => query.conversation_id = Some(value),
            "since" => query.since = Some(time(&value)?),
            "until" => query.until = Some(time(&value)?),
            _ => return Err(BadRequest::Unknown { key }),
        }
    }
    Ok(query)
}

/// Why a decision's body or the listing's query string is refused with 400.
#[derive(Debug)]
enum BadRequest {
    /// The decision's body is not JSON.
    DecisionNotJson(crate::json::JsonError),
    DecisionNotObject,
    /// The decision's `reason` is longer than [`MAX_REASON_CHARS`].
    ReasonTooLong,
    ReasonNotString,
    /// The decision's body has a member besides `reason`.
    DecisionMember {
        key: String,
    },
    /// A query component is not UTF-8 once percent-decoded.
    QueryNotUtf8,
    /// A query parameter given twice.
    Repeated {
        key: String,
    },
    /// A `since` or `until` that is no time.
    NotATime {
        key: String,
        value: String,
    },
    /// A `limit` outside 1 to [`MAX_PAGE`].
    Limit {
        value: String,
    },
    /// An `after` prefix that several stored runs share.
    Ambiguous(StoreError),
    /// A `status` that is no outcome.
    Status(crate::contract::ContractError),
    /// A query parameter the listing does not take.
    Unknown {
        key: String,
    },
}

impl std::fmt::Display for BadRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHAPE: &str = "send no body, or {\"reason\": \"…\"}";
        const KNOWN: &str = "limit, after, agent, status, principal, conversation, since, until";
        match self {
            BadRequest::DecisionNotJson(e) => write!(f, "the body is not JSON ({e}); {SHAPE}"),
            BadRequest::DecisionNotObject => {
                write!(f, "the body is not a JSON object; {SHAPE}")
            }
            BadRequest::ReasonTooLong => {
                write!(f, "reason is longer than {MAX_REASON_CHARS} characters")
            }
            BadRequest::ReasonNotString => write!(f, "reason must be a string; {SHAPE}"),
            BadRequest::DecisionMember { key } => write!(f, "unknown member {key:?}; {SHAPE}"),
            BadRequest::QueryNotUtf8 => f.write_str("the query string is not valid UTF-8"),
            BadRequest::Repeated { key } => {
                write!(f, "the query parameter {key} is given more than once")
            }
            BadRequest::NotATime { key, value } => write!(
                f,
                "{key}={value} is not a time: give RFC 3339 (2026-01-02T03:04:05Z) or a date (2026-01-02)"
            ),
            BadRequest::Limit { value } => {
                write!(f, "limit={value}: give a number from 1 to {MAX_PAGE}")
            }
            BadRequest::Ambiguous(e) => e.fmt(f),
            BadRequest::Status(e) => write!(f, "status: {e}"),
            BadRequest::Unknown { key } => {
                write!(f, "unknown query parameter {key}; GET /runs takes {KNOWN}")
            }
        }
    }
}

fn json_or_500(v: Result<Value>) -> Response {
    match v {
        Ok(v) => Response::json(200, &v),
        Err(e) => Response::error(500, &e.to_string()),
    }
}

/// Plan the answer to one A2A message: exactly one data part, the InvocationRequest, run by
/// the conductor for the caller's principal (or, for a delegation callback, under its grant),
/// as a task whose id is the request's `invocation_id`. Anything else is a failed task and no
/// run (a conductor's outcome, even a refusal, is a completed task carrying an envelope).
pub(crate) fn plan(
    harness: &Arc<Harness>,
    message: &Message,
    continued: Option<&Task>,
    ctx: &CallContext,
) -> Plan {
    if let Some(task) = continued {
        // The endpoint lets a message continue only a task waiting for input: a run the agent
        // suspended.
        return resume_plan(harness, message, task, ctx);
    }
    // Whom a refusal in the task belongs to, so its caller (and only it) can read it back
    // with GetTask when reads follow identity.
    let caller = match (
        &harness.authenticator,
        message.meta_str(meta::DELEGATION_TOKEN),
    ) {
        (Some(auth), None) => auth
            .principal_for(Some(&ctx.headers))
            .ok()
            .map(|p| p.principal_id),
        _ => None,
    };
    let failed = |error: String| {
        Plan::Task(TaskPlan {
            owner: caller.clone(),
            ..TaskPlan::done(caller_error(error, "invalid_request", ctx.streaming))
        })
    };
    let data = message.data_parts();
    if data.len() != 1 {
        return failed(format!(
            "expected exactly one data part, got {}",
            data.len()
        ));
    }
    let mut request = match InvocationRequest::from_value(data[0]) {
        Ok(r) => r,
        Err(e) => return failed(e.to_string()),
    };
    let id = request.invocation_id.clone();
    // A stored run keeps its task: a request reusing its id gets a task of its own (which the
    // conductor fails, the id being used), never one that hides the stored run.
    let task_id = (!harness.conductor.store.has(&id)).then(|| id.clone());
    let token = message.meta_str(meta::DELEGATION_TOKEN).map(str::to_string);
    let (principal, context_id) = match &token {
        // A child's principal and conversation are its grant's, known once the conductor
        // admits it.
        Some(_) => (None, None),
        None => match principal_and_context(harness, message, &mut request, ctx) {
            Ok((principal, context_id)) => (Some(principal), Some(context_id)),
            Err(plan) => return *plan,
        },
    };
    let owner = principal.as_ref().map(|p| p.principal_id.clone());
    // For the request log: the endpoint builds the response from the task.
    crate::wire::http::note(&id, owner.as_deref());
    // The run's trace is fixed now, so the HTTP response names it (`traceresponse`) even
    // before the run starts, as a non-blocking send is answered; but not for an id already
    // stored, which the conductor refuses without making a run.
    let trace = run_trace(message, ctx);
    if task_id.is_some() {
        ctx.reply_headers
            .set(crate::trace::context::TRACERESPONSE, trace.traceresponse());
    }
    let run = PlannedRun {
        harness: Arc::clone(harness),
        request,
        token,
        principal,
        trace,
        metadata: message.metadata.clone(),
        signed_by: ctx.signed_by.clone(),
        reply_headers: ctx.reply_headers.clone(),
        streaming: ctx.streaming,
    };
    Plan::Task(TaskPlan {
        task_id,
        context_id,
        owner,
        work: Work::Run(Box::new(move |progress: &Progress| run.run(progress))),
    })
}

/// For a message that is not a delegation callback: the principal the caller's credentials
/// name, and the task's context, written into `request` as its conversation. The plan
/// refusing the message when either cannot be had.
fn principal_and_context(
    harness: &Harness,
    message: &Message,
    request: &mut InvocationRequest,
    ctx: &CallContext,
) -> std::result::Result<(Principal, String), Box<Plan>> {
    let refuse = |e: HarnessError| {
        let reply = caller_error(e.to_string(), super::agui::code_of(&e), ctx.streaming);
        Box::new(Plan::Task(TaskPlan::done(reply)))
    };
    let principal = match &harness.authenticator {
        None => {
            return Err(refuse(HarnessError::unauthenticated(
                "this harness accepts only delegation callbacks under a live grant",
            )));
        }
        Some(auth) => auth.principal_for(Some(&ctx.headers)).map_err(refuse)?,
    };
    // A2A's context is the contract's conversation (as AG-UI's thread is): a task
    // outside one starts one of its own, and a message naming a context without a task
    // starts a new task in it (A2A 1.0 §3.4.3), as an explicit conversation_id would.
    let context_id = match (&message.context_id, request.conversation_id.as_deref()) {
        (Some(asked), Some(conversation)) if asked != conversation => {
            return Err(Box::new(Plan::Refuse(A2aError::invalid(
                "params.message.contextId",
                format!(
                    "{asked:?} contradicts the request's conversation_id \
                     {conversation:?}: a harness task's context is its conversation"
                ),
            ))));
        }
        (Some(asked), None) => asked.clone(),
        (_, Some(conversation)) => conversation.to_string(),
        (None, None) => request.invocation_id.clone(),
    };
    let named = message.context_id.is_some() || request.conversation_id.is_some();
    if named && context_of_another(harness, &context_id, ctx) {
        return Err(Box::new(Plan::Refuse(A2aError::invalid(
            "params.message.contextId",
            format!("no context {context_id:?} is known to this caller"),
        ))));
    }
    request.conversation_id = Some(context_id.clone());
    Ok((principal, context_id))
}

/// A run [`plan`] admitted, with what it needs from the call that asked for it: the work of
/// its task.
struct PlannedRun {
    harness: Arc<Harness>,
    request: InvocationRequest,
    /// The delegation token of a callback, which then runs under its grant.
    token: Option<String>,
    /// The caller's principal; `None` for a callback.
    principal: Option<Principal>,
    trace: RunTrace,
    /// The message's metadata, where a callback names its parent run.
    metadata: Option<serde_json::Map<String, Value>>,
    signed_by: Option<String>,
    reply_headers: ReplyHeaders,
    streaming: bool,
}

impl PlannedRun {
    fn run(self, progress: &Progress) -> Reply {
        progress.working();
        let meta_str = |key: &str| {
            self.metadata
                .as_ref()
                .and_then(|m| m.get(key))
                .and_then(serde_json::Value::as_str)
        };
        let outcome = match (&self.token, &self.principal) {
            (Some(token), _) => {
                let callback = Callback {
                    token,
                    trace: Some(&self.trace),
                    parent_invocation_id: meta_str(meta::PARENT_INVOCATION_ID),
                    signed_by: self.signed_by.as_deref(),
                };
                self.harness
                    .conductor
                    .invoke_delegated(self.request, &callback)
                    .map(|run| Turn::Done(Box::new(run)))
            }
            (None, Some(principal)) => self.harness.conductor.invoke_until(
                self.request,
                principal,
                self.trace,
                &stage_updates(progress),
                progress,
            ),
            (None, None) => Err(HarnessError::unauthenticated("no principal")),
        };
        if outcome.is_err() {
            // No run was made: a blocking send's reply names no trace.
            self.reply_headers
                .remove(crate::trace::context::TRACERESPONSE);
        }
        turn_reply(&self.harness, outcome, self.streaming, self.token.is_some())
    }
}

/// The conductor's observer for a task: each stage as it starts is a `working` status update
/// on a stream.
fn stage_updates(progress: &Progress) -> impl Fn(Stage, Phase) + '_ {
    move |stage, phase| {
        if phase == Phase::Started {
            progress.stage(meta::STAGE, stage.name());
        }
    }
}

/// The trace a run asked for by `message` gets: new ids for its root, linked to the caller's
/// span. The caller's span is read as an agent server reads it: the message's `traceparent`
/// (and `tracestate`) metadata, else the HTTP `traceparent` (and `tracestate`) header; on a
/// delegation callback it is the delegating agent's `delegate` span. An invalid `traceparent`
/// is ignored (the run is linked to nothing).
fn run_trace(message: &Message, ctx: &CallContext) -> RunTrace {
    let from_message = message.meta_str(meta::TRACEPARENT);
    match from_message {
        Some(traceparent) => {
            RunTrace::for_caller(Some(traceparent), message.meta_str(meta::TRACESTATE))
        }
        None => RunTrace::for_caller(ctx.header("traceparent"), ctx.header("tracestate")),
    }
}

/// Whether `context` is a conversation whose stored runs the caller may not see, while
/// someone's are stored: another principal's context answers as unknown, like their task. A
/// context nothing is stored under yet (a first turn still running) is the caller's to use.
fn context_of_another(harness: &Harness, context: &str, ctx: &CallContext) -> bool {
    let Some(auth) = &harness.authenticator else {
        return false;
    };
    let Ok(access) = auth.access_for(Some(&ctx.headers)) else {
        return true;
    };
    if access == Access::All {
        return false;
    }
    let store = &harness.conductor.store;
    // A conversation a task started on its own is named by that task's run: one read.
    if let Ok(Some(first)) = store.envelope(context) {
        return !access.sees_envelope(&first);
    }
    // A conversation named by its callers: the index is read (one pass per such message).
    let seen = |access: &Access| {
        super::conversations::runs_of(store, context, access)
            .ok()
            .flatten()
            .is_some()
    };
    !seen(&access) && seen(&Access::All)
}

/// Plan a message that continues a suspended run's task (`input-required`): one data part,
/// the resumption, from the principal the run was suspended for; the conductor then calls the
/// agent again. Anything else is refused and leaves the run waiting.
fn resume_plan(harness: &Arc<Harness>, message: &Message, task: &Task, ctx: &CallContext) -> Plan {
    let data = message.data_parts();
    if data.len() != 1 {
        return Plan::Refuse(A2aError::invalid(
            "params.message.parts",
            format!(
                "a message resuming run {} carries exactly one data part, the resumption; got {}",
                task.id,
                data.len()
            ),
        ));
    }
    let resumption = data[0].clone();
    let principal = match &harness.authenticator {
        Some(auth) => match auth.principal_for(Some(&ctx.headers)) {
            Ok(p) => p,
            Err(e) => return Plan::Refuse(refused(e)),
        },
        None => {
            return Plan::Refuse(A2aError::Unauthenticated {
                reason: "this harness resumes no runs without an authenticator".into(),
            });
        }
    };
    // Checked before the task moves on, so a refused resumption leaves it waiting.
    match harness.conductor.suspended_for(&task.id) {
        Some(owner) if owner != principal.principal_id => {
            return Plan::Refuse(A2aError::Unauthenticated {
                reason: format!(
                    "run {} was suspended for another principal, and only that principal may \
                     resume it",
                    task.id
                ),
            });
        }
        _ => {}
    }
    crate::wire::http::note(&task.id, Some(&principal.principal_id));
    let (harness, id, streaming) = (Arc::clone(harness), task.id.clone(), ctx.streaming);
    let work = move |progress: &Progress| {
        progress.working();
        let observer = stage_updates(progress);
        let outcome = harness
            .conductor
            .resume(&id, &resumption, &principal, &observer, progress);
        turn_reply(&harness, outcome, streaming, false)
    };
    Plan::Task(TaskPlan::run(work))
}

/// What an `input-required` harness task says it waits for: the condition as text, and as
/// data with the expiry.
fn question(resume_condition: &str, expires_at: &str) -> Message {
    Message::new(
        Role::Agent,
        vec![
            Part::text(resume_condition),
            Part::data(json!({
                "resume_condition": resume_condition,
                "expires_at": expires_at,
            })),
        ],
    )
}

/// Show the runs an earlier process left suspended over this store as `input-required`
/// tasks again, so their callers can resume them (see the conductor's "Suspension").
fn restore_tasks(harness: &Harness, tasks: &crate::wire::a2a::endpoint::TaskStore) {
    for waiting in harness.conductor.restore_suspended() {
        let id = waiting.request.invocation_id.clone();
        let context_id = super::tasks::context_of(&id, waiting.request.conversation_id.as_deref());
        let mut asked = Message::new(Role::User, vec![Part::data(waiting.request_doc)]);
        asked.message_id = format!("{id}-request");
        asked.task_id = Some(id.clone());
        asked.context_id = Some(context_id.clone());
        let mut metadata = serde_json::Map::new();
        metadata.insert(meta::EXPIRES_AT.into(), json!(waiting.expires_at));
        let mut said = question(&waiting.resume_condition, &waiting.expires_at);
        said.task_id = Some(id.clone());
        said.context_id = Some(context_id.clone());
        let mut task = Task::submitted(id, context_id, vec![asked], None);
        task.status.state = TaskState::InputRequired;
        task.status.message = Some(said);
        task.metadata = Some(metadata);
        let _ = tasks.insert(task, Some(waiting.principal_id), false, false);
    }
}

/// A task failed for the caller's request, no run made. On a stream the failure names its
/// cause (`code`, as AG-UI's `RUN_ERROR` does) in metadata, so a client can tell a refused
/// request from a failed run without reading the text.
fn caller_error(error: String, code: &str, streaming: bool) -> Reply {
    let reply = Reply::failed(error);
    if streaming {
        reply.with_meta(meta::ERROR, code)
    } else {
        reply
    }
}

/// The reply that ends (or pauses) a harness task: the envelope of a stored run, the resume
/// condition of a suspended one, or the caller's error when no run was made.
fn turn_reply(
    harness: &Harness,
    outcome: crate::harness::Result<Turn>,
    streaming: bool,
    delegated: bool,
) -> Reply {
    match outcome {
        Err(e) => caller_error(e.to_string(), super::agui::code_of(&e), streaming),
        Ok(Turn::Suspended {
            resume_condition,
            expires_at,
        }) => Reply {
            state: TaskState::InputRequired,
            message: Some(question(&resume_condition, &expires_at)),
            artifacts: Vec::new(),
            metadata: None,
        }
        .with_meta(meta::EXPIRES_AT, expires_at),
        Ok(Turn::Done(mut run)) => {
            crate::wire::http::note(
                &run.envelope.invocation_id,
                Some(&run.envelope.acting_for.principal_id),
            );
            let doc = std::mem::take(&mut run.document);
            // The run's trace id, so a caller that reads no envelope can still find its trace.
            let metadata = super::tasks::run_metadata(&doc);
            let mut artifacts = vec![Artifact::new(artifact::ENVELOPE, vec![Part::data(doc)])];
            if delegated {
                // The stored bytes themselves, so the delegating agent hashes what was
                // stored.
                let text = harness
                    .conductor
                    .store
                    .envelope_text(&run.envelope.invocation_id)
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| run.envelope.to_document().to_string());
                artifacts.push(Artifact::new(
                    artifact::ENVELOPE_JSON,
                    vec![Part::text(text)],
                ));
            }
            let reply = match &run.envelope.problem {
                // On a stream, a run that carries a problem ends `failed`, naming it; the
                // envelope is still its artifact, sent after every check.
                Some(problem) if streaming => {
                    let said = problem
                        .detail
                        .clone()
                        .or_else(|| problem.title.clone())
                        .unwrap_or_else(|| problem.type_.clone());
                    Reply {
                        artifacts,
                        metadata,
                        ..Reply::failed(said)
                    }
                    .with_meta(meta::PROBLEM_TYPE, problem.type_.clone())
                }
                _ => Reply {
                    metadata,
                    ..Reply::completed(artifacts)
                },
            };
            crate::wire::http::free_after_reply(run);
            reply
        }
    }
}
