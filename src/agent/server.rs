//! The agent server: A2A in, an AgentResult and the spans it recorded out.
//!
//! Per the spec: a request carries exactly one data part, the InvocationRequest (anything else
//! is a failed task `{"error": "expected exactly one data part, got N"}`, unless the agent
//! answers other messages itself, as the echo agent does for the A2A TCK: see
//! [`Agent::converse`]); the `traceparent`
//! in the message metadata (else the HTTP header) parents a fresh tracer, so the agent's spans
//! join the caller's trace; `dd.input_ref` and `dd.input_hash` reach the run context. The reply
//! is a completed task with one artifact `agent-result` holding one data part
//! `{"result": <AgentResult>, "spans": ["<span JSON>", …]}`; an agent error is a failed task
//! `{"error": "<kind>: <message>"}`. Spans travel as JSON strings because a protobuf `Struct`
//! would turn their integers into floats. The server does no governance.
//!
//! The A2A task rules are those of the A2A endpoint both servers share: unknown and
//! finished tasks cannot be continued, `historyLength` is honoured, a non-blocking send
//! (`returnImmediately: true`, `blocking: false`) is answered at once with the task
//! `submitted` while the agent runs, `CancelTask` cancels a task not yet finished (a long run
//! learns it through `RunContext::task`), and `ListTasks` lists the newest
//! 1,024 tasks this server answered: older
//! ones are forgotten, and a restart forgets them all. JSON-RPC is served at `/a2a`, `/a2a/`
//! and `/`; the card carries an `ETag` and `Cache-Control`.
//!
//! Started with a key (`handler_signed`, [`serve_signed`], `ddwire agent NAME --key-file F`),
//! the server refuses every JSON-RPC call that is not signed with it by the harness
//! ([`crate::wire::sign`], direction `to-agent`, key id = the agent's `agent_id`): HTTP 401
//! with a JSON-RPC error (see `signature_refused`). The card stays readable without a
//! signature. The same key signs the agent's delegation callbacks to the harness.

use super::delegate::Delegate;
use super::{Agent, AgentError, Conversation, RunContext};
use crate::contract::InvocationRequest;
use crate::trace::{SpanContext, Tracer};
use crate::wire::WireError;
use crate::wire::a2a::card::ServedCard;
use crate::wire::a2a::client::A2aClient;
use crate::wire::a2a::endpoint::{
    CallContext, Endpoint, Execute, Plan, Progress, Reply, TaskPlan, signature_refused,
};
use crate::wire::a2a::model::{Artifact, Message, Part, Task};
use crate::wire::a2a::{CARD_PATH, JSONRPC_PATH, LEGACY_CARD_PATH, artifact, card, meta};
use crate::wire::http::browser::BrowserPolicy;
use crate::wire::http::drain::Drain;
use crate::wire::http::{self, Handler, Limits, Request, Response};
use crate::wire::sign::{Direction, Key, KeyError, Signer, Verifier};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Why an agent could not be served.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// Its socket could not be bound or served.
    Wire(WireError),
    /// Its `agent_id` cannot be the id of the key it signs and verifies with.
    KeyId {
        /// The agent's id.
        agent_id: String,
        /// Why a key cannot carry it.
        source: KeyError,
    },
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Wire(e) => e.fmt(f),
            ServeError::KeyId { source, .. } => write!(f, "agent {source}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Wire(e) => Some(e),
            ServeError::KeyId { source, .. } => Some(source),
        }
    }
}

impl From<WireError> for ServeError {
    fn from(e: WireError) -> ServeError {
        ServeError::Wire(e)
    }
}

/// The request handler of an agent served at `public_url`: its card and its A2A endpoint.
pub fn handler(agent: Arc<dyn Agent>, public_url: &str) -> Handler {
    handler_with_client(agent, public_url, A2aClient::default(), None)
}

/// [`handler_with_client`] for an agent holding `key`, its secret shared with the harness:
/// every JSON-RPC call must carry the harness's signature with it, dated within `window` of
/// this clock (see [`crate::wire::sign`]), and the agent's delegation callbacks are signed with
/// it. The key signs and verifies as the agent's `agent_id`, whatever id it was made with.
pub(crate) fn handler_signed(
    agent: Arc<dyn Agent>,
    public_url: &str,
    client: A2aClient,
    key: &Key,
    window: Duration,
) -> Result<Handler, ServeError> {
    let key = key
        .with_id(&agent.spec().agent_id)
        .map_err(|source| ServeError::KeyId {
            agent_id: agent.spec().agent_id.clone(),
            source,
        })?;
    let verifier = Some(Verifier::new(Direction::ToAgent, [key.clone()]).with_window(window));
    let client = client.signed(Signer::new(key, Direction::ToHarness));
    Ok(handler_with_client(agent, public_url, client, verifier))
}

/// [`handler`], with the client a delegation agent calls the harness back through, and the
/// `verifier` every JSON-RPC call must satisfy, if any.
pub(crate) fn handler_with_client(
    agent: Arc<dyn Agent>,
    public_url: &str,
    client: A2aClient,
    verifier: Option<Verifier>,
) -> Handler {
    let mut card_json = card::agent_card(agent.spec(), public_url);
    if let Some(skill) = agent.conversation_skill() {
        // An agent that also converses says so: its skill, and text among its modes.
        if let Some(skills) = card_json["skills"].as_array_mut() {
            skills.push(skill);
        }
        for modes in ["defaultInputModes", "defaultOutputModes"] {
            if let Some(list) = card_json[modes].as_array_mut() {
                list.push(Value::String("text/plain".into()));
            }
        }
    }
    let card = ServedCard::new(&card_json);
    let execute: Execute = Arc::new(
        move |message: &Message, continued: Option<&Task>, ctx: &CallContext| {
            plan(&agent, message, continued, ctx, &client)
        },
    );
    let endpoint = Endpoint::new(execute);
    // Any Host (the harness may know the agent by a name of its own configuration), but no
    // page on another origin, and no call a page can send without a preflight.
    let browser = BrowserPolicy::new(public_url).allow_hosts(["*"]);
    Arc::new(move |request: Request| {
        if let Err(refused) = browser.admit(&request) {
            return refused;
        }
        if request.method == "POST"
            && matches!(request.path.as_str(), JSONRPC_PATH | "/a2a/" | "/")
            && let Err(refused) = browser.admit_body(&request)
        {
            return refused;
        }
        let response = route(&request, &endpoint, &card, verifier.as_ref());
        crate::wire::http::free_after_reply(request);
        response
    })
}

/// Route one request: the card at both well-known paths, JSON-RPC at `/a2a` (also `/a2a/`,
/// where httpx-based clients post) and `/`. With a `verifier`, a JSON-RPC request is answered
/// only if its signature verifies.
pub(crate) fn route(
    request: &Request,
    endpoint: &Endpoint,
    card: &ServedCard,
    verifier: Option<&Verifier>,
) -> Response {
    let path = match request.path.as_str() {
        "/a2a/" => JSONRPC_PATH,
        p => p,
    };
    match (request.method.as_str(), path) {
        // HEAD arrives as GET (the server sends the head without the body).
        ("GET", CARD_PATH | LEGACY_CARD_PATH) => card.respond(request),
        // Liveness and readiness: an agent server that answers is ready (a draining one
        // answers 503, see `wire::http::drain::Drain::gate`).
        ("GET", "/livez") => Response::json(200, &json!({ "status": "live" })),
        ("GET", "/healthz") => Response::json(
            200,
            &json!({ "status": "ready", "ready": true, "reasons": [] }),
        ),
        ("POST", JSONRPC_PATH | "/") => match verifier {
            // A body over the limits is refused as such, signed or not.
            Some(verifier) if request.body_error.is_none() => {
                match verifier.verify_request(request) {
                    Ok(key_id) => endpoint.handle_signed(request, Some(key_id)),
                    Err(refused) => signature_refused(&refused),
                }
            }
            _ => endpoint.handle(request),
        },
        (_, JSONRPC_PATH | "/" | CARD_PATH | LEGACY_CARD_PATH) => {
            Response::error(405, "method not allowed")
        }
        _ => Response::error(404, &format!("no route {}", request.path)),
    }
}

/// Serve `agent` on `addr` (e.g. `127.0.0.1:8101`), advertising `public_url` on its card
/// (default: the bound address, never a wildcard), within the default [`Limits`].
pub fn serve(
    agent: Arc<dyn Agent>,
    addr: &str,
    public_url: Option<&str>,
) -> Result<http::server::Server, ServeError> {
    let bound = http::server::bind(addr, Limits::DEFAULT)?;
    serve_on(bound, agent, public_url, A2aClient::default(), None)
}

/// [`serve`] for an agent holding `key` (see `handler_signed`).
pub fn serve_signed(
    agent: Arc<dyn Agent>,
    addr: &str,
    public_url: Option<&str>,
    key: &Key,
    window: Duration,
) -> Result<http::server::Server, ServeError> {
    let bound = http::server::bind(addr, Limits::DEFAULT)?;
    serve_on(
        bound,
        agent,
        public_url,
        A2aClient::default(),
        Some((key, window)),
    )
}

/// Serve `agent` on a socket already bound (with the request log and wire log the bound
/// socket was given: [`http::server::Bound::with_request_log`],
/// [`http::server::Bound::with_wire_log`]), advertising `public_url` (default: the bound
/// address), its delegation callbacks made through `client`. With `signed`, the agent holds
/// that key and replay window, as [`serve_signed`] describes.
pub(crate) fn serve_on(
    bound: http::server::Bound,
    agent: Arc<dyn Agent>,
    public_url: Option<&str>,
    client: A2aClient,
    signed: Option<(&Key, Duration)>,
) -> Result<http::server::Server, ServeError> {
    serve_draining(bound, agent, public_url, client, signed, &Drain::new())
}

/// [`serve_on`], sharing `drain` with the process: once it starts, `/healthz` answers 503.
pub(crate) fn serve_draining(
    bound: http::server::Bound,
    agent: Arc<dyn Agent>,
    public_url: Option<&str>,
    client: A2aClient,
    signed: Option<(&Key, Duration)>,
    drain: &Drain,
) -> Result<http::server::Server, ServeError> {
    let public = public_url
        .map(str::to_string)
        .unwrap_or_else(|| bound.default_public_url());
    let handler = match signed {
        Some((key, window)) => handler_signed(agent, &public, client, key, window)?,
        None => handler_with_client(agent, &public, client, None),
    };
    Ok(bound.serve(drain.gate(handler))?)
}

/// Serve `agent` on the in-memory network at `http://<agent_id>.agents.test` (the test kit:
/// the same handler as on TCP, real HTTP/1.1 bytes, no socket). Returns the base URL.
pub fn serve_in_memory(net: &http::memory::MemoryNet, agent: Arc<dyn Agent>) -> String {
    let host = format!("{}.agents.test", agent.spec().agent_id);
    let base = format!("http://{host}");
    let client = A2aClient::new(http::client::HttpClient::memory(net.clone()));
    net.serve(
        &host,
        handler_with_client(agent, &base, client, None),
        Limits::DEFAULT,
    )
}

/// [`serve_in_memory`] for an agent holding `key` (see `handler_signed`), with the default
/// replay window.
#[cfg(any(test, feature = "testkit"))]
pub(crate) fn serve_in_memory_signed(
    net: &http::memory::MemoryNet,
    agent: Arc<dyn Agent>,
    key: &Key,
) -> Result<String, ServeError> {
    let host = format!("{}.agents.test", agent.spec().agent_id);
    let base = format!("http://{host}");
    let client = A2aClient::new(http::client::HttpClient::memory(net.clone()));
    let handler = handler_signed(agent, &base, client, key, crate::wire::sign::DEFAULT_WINDOW)?;
    Ok(net.serve(&host, handler, Limits::DEFAULT))
}

/// Plan the answer to one A2A message for `agent`: exactly one data part, the
/// InvocationRequest, is run by the agent (on the caller's thread, or in the background for a
/// non-blocking send); any other message is the agent's to answer ([`Agent::converse`]) or a
/// failed task.
pub(crate) fn plan(
    agent: &Arc<dyn Agent>,
    message: &Message,
    continued: Option<&Task>,
    ctx: &CallContext,
    client: &A2aClient,
) -> Plan {
    let data = message.data_parts();
    if data.len() != 1 {
        match agent.converse(message, continued) {
            Some(Conversation::Message(reply)) => return Plan::Message(reply),
            Some(Conversation::Task(work)) => return Plan::Task(TaskPlan::run(work)),
            None => {}
        }
        let error = format!("expected exactly one data part, got {}", data.len());
        return Plan::Task(TaskPlan::done(Reply::failed(error)));
    }
    let request = match InvocationRequest::from_value(data[0]) {
        Ok(r) => r,
        Err(e) => {
            return Plan::Task(TaskPlan::done(Reply::failed(format!(
                "ContractViolation: {e}"
            ))));
        }
    };
    // For the request log: the endpoint builds the response from the task.
    crate::wire::http::note(&request.invocation_id, None);
    let (agent, ctx, client) = (Arc::clone(agent), ctx.clone(), client.clone());
    let metadata = message.metadata.clone();
    Plan::Task(TaskPlan::run(move |progress: &Progress| {
        progress.working();
        let reply = run(
            agent.as_ref(),
            &request,
            metadata.as_ref(),
            &ctx,
            &client,
            progress,
        );
        crate::wire::http::free_after_reply((request, metadata));
        reply
    }))
}

/// Run one InvocationRequest through `agent`, with the message metadata it came with.
fn run(
    agent: &dyn Agent,
    request: &InvocationRequest,
    metadata: Option<&serde_json::Map<String, Value>>,
    ctx: &CallContext,
    client: &A2aClient,
    progress: &Progress,
) -> Reply {
    let meta_str = |key: &str| metadata.and_then(|m| m.get(key)).and_then(Value::as_str);
    let traceparent = meta_str(meta::TRACEPARENT).or_else(|| ctx.header("traceparent"));
    let tracestate = meta_str(meta::TRACESTATE).or_else(|| ctx.header("tracestate"));
    let parent = SpanContext::extract(traceparent, tracestate);
    let tracer = Tracer::new(&agent.spec().agent_id).with_remote_parent(parent);
    let run_ctx = RunContext {
        tracer: &tracer,
        input_ref: meta_str(meta::INPUT_REF)
            .map(str::to_string)
            .unwrap_or_else(|| request.input_ref()),
        input_hash: meta_str(meta::INPUT_HASH)
            .map(str::to_string)
            .unwrap_or_else(|| request.input_hash()),
        delegate: Delegate::from_metadata(metadata, client.clone(), &request.invocation_id),
        task: progress,
        resumption: metadata.and_then(|m| m.get(meta::RESUMPTION)),
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        agent.run(request, &run_ctx)
    }))
    .unwrap_or_else(|_| Err(AgentError::new("Panic", "the agent panicked")));
    // Every span the run recorded, whatever trace it names: the harness judges them.
    let spans: Vec<String> = tracer
        .take_all()
        .iter()
        .map(crate::trace::to_json)
        .collect();
    match outcome {
        Ok(result) => {
            // Written once as text: the task keeps it and every answer copies it.
            #[derive(serde::Serialize)]
            struct Body<'a> {
                result: &'a crate::contract::AgentResult,
                spans: &'a [String],
            }
            let reply = Reply::completed(vec![Artifact::new(
                artifact::AGENT_RESULT,
                vec![Part::encoded(&Body {
                    result: &result,
                    spans: &spans,
                })],
            )]);
            crate::wire::http::free_after_reply((result, spans));
            reply
        }
        Err(e) => Reply::failed(e.to_string()),
    }
}
