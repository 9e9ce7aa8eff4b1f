//! The harness's own routes: A2A (both bindings) at `/a2a` and `/`, its card, plain JSON
//! routes for runs and agents, and (see [`super::agui`]) AG-UI.
//!
//! Over A2A the harness is called like any agent, with one data part holding an
//! InvocationRequest. A conductor-decided outcome (a refusal, a withheld result) is a
//! completed task whose artifact `envelope` holds the envelope; a caller error (malformed,
//! unknown agent, lineage, unauthenticated) is a failed task with `{"error": …}` and no run
//! (spec invariant 12). A delegated call (metadata `dd.delegation_token`) runs under the
//! grant's principal and gets, beside `envelope`, the stored envelope as text in
//! `envelope-json`, so its hash survives the wire (invariant 5).
//!
//! A request to `/a2a` carrying signature headers ([`crate::wire::sign`], direction
//! `to-harness`) is verified against the keys the registry holds, each under its agent's id,
//! and refused with HTTP 401 if it does not verify; the conductor then requires a delegation
//! callback from a keyed agent to be signed by it. Unsigned callers (outside callers, agents
//! without a key) are handled as before.

use super::conductor::{Callback, Conductor};
use super::identity::Authenticator;
use crate::contract::InvocationRequest;
use crate::contract::ids::{is_sha256_hex, is_uuid7};
use crate::error::{Error, Result};
use crate::wire::a2a::endpoint::{CallContext, Endpoint, Execute, signature_refused};
use crate::wire::a2a::model::{Artifact, Message, Part, Role, Task, TaskState};
use crate::wire::a2a::{CARD_PATH, LEGACY_CARD_PATH, artifact, card, meta};
use crate::wire::http::{Handler, Request, Response};
use crate::wire::sign::{Direction, Verifier};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// A harness: its conductor, how it authenticates callers, and its card.
pub struct Harness {
    pub conductor: Conductor,
    /// `None`: only delegation callbacks under a live grant are accepted.
    pub authenticator: Option<Authenticator>,
    /// The base URL on the card (and, for delegation, the conductor's callback).
    pub public_url: String,
    card_bytes: Vec<u8>,
    /// Verifies signed delegation callbacks, with the keys the registry holds.
    callbacks: Verifier,
}

impl Harness {
    /// A harness at `public_url`; its card lists one skill per registered agent and carries
    /// the manifest.
    pub fn new(
        mut conductor: Conductor,
        authenticator: Option<Authenticator>,
        public_url: &str,
    ) -> Harness {
        let public_url = public_url.trim_end_matches('/').to_string();
        conductor
            .callback_url
            .get_or_insert_with(|| public_url.clone());
        let card_bytes = harness_card(&conductor, &public_url)
            .to_string()
            .into_bytes();
        let keys: Vec<_> = conductor
            .registry
            .agents()
            .filter_map(|a| a.key.clone())
            .collect();
        Harness {
            conductor,
            authenticator,
            public_url,
            card_bytes,
            callbacks: Verifier::new(Direction::ToHarness, keys),
        }
    }

    /// Accept signed callbacks dated up to `window` from this clock, either way (default
    /// 300 s).
    pub fn with_replay_window(mut self, window: Duration) -> Harness {
        self.callbacks = self.callbacks.with_window(window);
        self
    }

    /// The card, as served.
    pub fn card(&self) -> Value {
        serde_json::from_slice(&self.card_bytes).unwrap_or(Value::Null)
    }
}

/// The harness's card: one skill per registered agent, and the manifest extension.
pub fn harness_card(conductor: &Conductor, public_url: &str) -> Value {
    let skills: Vec<Value> = conductor
        .registry
        .agents()
        .map(|a| card::skill(&a.spec))
        .collect();
    let manifest = json!({
        "uri": card::MANIFEST_EXTENSION_URI,
        "description": "Data Director manifest: the description of every agent this harness runs, for a delegation agent to route from.",
        "required": false,
        "params": { "agents": conductor.registry.manifest() },
    });
    card::base_card(
        "ddwire harness",
        "A Data Director harness: runs registered agents under the institutional profile, checks every result's grounding, and returns an envelope.",
        env!("CARGO_PKG_VERSION"),
        public_url,
        vec![manifest],
        skills,
    )
}

/// The request handler of a harness.
pub fn handler(harness: Arc<Harness>) -> Handler {
    let execute: Execute = {
        let harness = Arc::clone(&harness);
        Arc::new(move |message: Message, ctx: &CallContext| execute(&harness, message, ctx))
    };
    // The endpoint remembers the newest tasks it answered, failed ones included, so `tasks/get`
    // returns each as it was sent; an older run is rebuilt from the store.
    let mut endpoint = Endpoint::new(execute);
    endpoint.lookup = {
        let harness = Arc::clone(&harness);
        Some(Arc::new(move |id: &str| stored_task(&harness, id)))
    };
    Arc::new(move |request: Request| route(&harness, &endpoint, &request))
}

fn route(harness: &Arc<Harness>, endpoint: &Endpoint, request: &Request) -> Response {
    let path = request.path.trim_end_matches('/');
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    match (request.method.as_str(), segments.as_slice()) {
        ("POST", [""] | ["a2a"]) => {
            if Verifier::is_signed(&request.headers) && request.body_error.is_none() {
                match harness.callbacks.verify_request(request) {
                    Ok(key_id) => endpoint.handle_signed(request, Some(key_id)),
                    Err(refused) => signature_refused(&refused),
                }
            } else {
                endpoint.handle(request)
            }
        }
        ("GET" | "HEAD", _) if request.path == CARD_PATH || request.path == LEGACY_CARD_PATH => {
            Response::bytes(200, "application/json", harness.card_bytes.clone())
        }
        ("POST", ["agui"]) => super::agui::run(harness, request),
        ("GET", ["agui", "runs", id]) => super::agui::replay(harness, id),
        ("GET", ["runs"]) => json_or_500(harness.conductor.store.listing().map(Value::Array)),
        ("GET", ["runs", id]) => match harness.conductor.store.envelope(id) {
            Ok(Some(envelope)) => Response::json(200, &envelope),
            Ok(None) => Response::error(404, &format!("no run {id}")),
            Err(e) => Response::error(500, &e.to_string()),
        },
        ("GET", ["runs", id, "spans"]) => match harness.conductor.store.spans(id) {
            Ok(Some(lines)) => Response::bytes(200, "application/jsonl", lines.into_bytes()),
            Ok(None) => Response::error(404, &format!("no run {id}")),
            Err(e) => Response::error(500, &e.to_string()),
        },
        ("GET", ["conversations"]) => {
            json_or_500(harness.conductor.store.conversations().map(Value::Array))
        }
        ("GET", ["conversations", id]) => match harness.conductor.store.conversation(id) {
            Ok(Some(runs)) => Response::json(200, &json!({ "conversation_id": id, "runs": runs })),
            Ok(None) => Response::error(404, &format!("no conversation {id}")),
            Err(e) => Response::error(500, &e.to_string()),
        },
        ("GET", ["agents"]) => Response::json(200, &harness.conductor.registry.listing()),
        ("GET", ["agents", id]) => match harness.conductor.registry.get(id) {
            Some(agent) => Response::json(
                200,
                &json!({ "spec": agent.spec.describe(), "card": agent.card }),
            ),
            None => Response::error(404, &format!("no agent {id}")),
        },
        ("GET", ["schema", "sha256", digest]) if is_sha256_hex(digest) => {
            match harness.conductor.store.schema(digest) {
                Ok(Some(schema)) => Response::json(200, &schema),
                Ok(None) => Response::error(404, &format!("no class schema {digest}")),
                Err(e) => Response::error(500, &e.to_string()),
            }
        }
        ("GET", ["schema", "sha256", digest]) => {
            Response::error(404, &format!("no class schema {digest}"))
        }
        ("GET", ["healthz"]) => Response::json(
            200,
            &json!({
                "status": "ok",
                "agents": harness.conductor.registry.len(),
                "unavailable": harness.conductor.registry.unavailable.len(),
                "incompatible": harness.conductor.registry.incompatible.len(),
            }),
        ),
        (_, _) => Response::error(
            404,
            &format!("no route {} {}", request.method, request.path),
        ),
    }
}

fn json_or_500(v: Result<Value>) -> Response {
    match v {
        Ok(v) => Response::json(200, &v),
        Err(e) => Response::error(500, &e.to_string()),
    }
}

fn failed(message: Message, error: String) -> Task {
    let reason = Message::new(Role::Agent, vec![Part::data(json!({ "error": error }))]);
    Task::finished(message, TaskState::Failed, Some(reason), Vec::new())
}

/// Run one A2A message through the conductor.
pub fn execute(harness: &Harness, message: Message, ctx: &CallContext) -> Task {
    let data = message.data_parts();
    if data.len() != 1 {
        let error = format!("expected exactly one data part, got {}", data.len());
        return failed(message, error);
    }
    let request = match InvocationRequest::from_value(data[0]) {
        Ok(r) => r,
        Err(e) => return failed(message, e.to_string()),
    };
    let token = message.meta_str(meta::DELEGATION_TOKEN).map(str::to_string);
    let outcome = match &token {
        Some(token) => {
            let callback = Callback {
                token,
                traceparent: message.meta_str(meta::TRACEPARENT),
                parent_invocation_id: message.meta_str(meta::PARENT_INVOCATION_ID),
                signed_by: ctx.signed_by.as_deref(),
            };
            harness.conductor.invoke_delegated(request, &callback)
        }
        None => match &harness.authenticator {
            None => Err(Error::Identity(
                "this harness accepts only delegation callbacks under a live grant".into(),
            )),
            Some(auth) => auth
                .principal_for(Some(&ctx.headers))
                .and_then(|principal| harness.conductor.invoke(request, &principal)),
        },
    };
    match outcome {
        Err(e) => failed(message, e.to_string()),
        Ok(run) => {
            let doc = run.envelope.to_document();
            let mut artifacts = vec![Artifact::new(artifact::ENVELOPE, vec![Part::data(doc)])];
            if token.is_some() {
                // The stored bytes themselves, so the delegating agent hashes what was stored.
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
            // The task is the run: `tasks/get` answers it from the store by this id.
            let mut message = message;
            message.task_id = Some(run.envelope.invocation_id.clone());
            Task::finished(message, TaskState::Completed, None, artifacts)
        }
    }
}

/// A stored run as a completed task, for `tasks/get` on a run the endpoint no longer remembers
/// (older than the newest [`TASKS_KEPT`](crate::wire::a2a::endpoint::TASKS_KEPT), or answered
/// before a restart). It has the run's id, envelope and completion time; the message that
/// asked for it is not stored, so its history holds the stored request. Every id in it is
/// derived from the run's, so two calls return the same task.
fn stored_task(harness: &Harness, id: &str) -> Option<Task> {
    if !is_uuid7(id) {
        return None;
    }
    let envelope = harness.conductor.store.envelope(id).ok().flatten()?;
    let request = harness
        .conductor
        .store
        .request(id)
        .ok()
        .flatten()
        .unwrap_or(Value::Null);
    let context_id = envelope
        .get("conversation_id")
        .and_then(Value::as_str)
        .unwrap_or(id)
        .to_string();
    let completed_at = envelope
        .get("completed_at")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut history = Message::new(Role::User, vec![Part::data(request)]);
    history.message_id = format!("{id}-request");
    history.task_id = Some(id.to_string());
    history.context_id = Some(context_id);
    let mut envelope_artifact = Artifact::new(artifact::ENVELOPE, vec![Part::data(envelope)]);
    envelope_artifact.artifact_id = format!("{id}-envelope");
    let mut task = Task::finished(history, TaskState::Completed, None, vec![envelope_artifact]);
    if completed_at.is_some() {
        task.status.timestamp = completed_at;
    }
    Some(task)
}
