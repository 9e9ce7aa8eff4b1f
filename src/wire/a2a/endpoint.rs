//! The server side of A2A over JSON-RPC: both bindings on one endpoint.
//!
//! The binding is told by the method (`message/send` is v0.3, `SendMessage` is 1.0). The
//! `A2A-Version` header (or query parameter) must agree: absent means 0.3, as a2a-sdk 1.x
//! reads it, so a 1.0 method without `A2A-Version: 1.x` gets -32009, as does a 0.3 method
//! under `A2A-Version: 1.x`. Work is done by an [`Execute`] function that turns a message into
//! a finished task; calls are blocking, and `message/stream` is refused because nothing may
//! reach a caller before the harness's checks have run.
//!
//! Signatures ([`crate::wire::sign`]) are checked by the route in front of the endpoint, which
//! passes the key id that signed to [`Endpoint::handle_signed`] (it reaches the executor as
//! [`CallContext::signed_by`]), or answers a refused signature with [`signature_refused`].

use super::model::Task;
use super::{Binding, card::EXTENSION_URI, v03, v10};
use crate::wire::http::{Request, Response};
use crate::wire::jsonrpc::{self, Call, Incoming, RpcError};
use crate::wire::sign::{SCHEME, VerifyError};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a request's caller looks like to the code that executes it.
#[derive(Clone, Debug)]
pub struct CallContext {
    /// The HTTP header fields (lower-case names), for an authenticator or a `traceparent`.
    pub headers: Vec<(String, String)>,
    /// The binding the request came in.
    pub binding: Binding,
    /// Extensions the client asked for (`X-A2A-Extensions` / `A2A-Extensions`).
    pub requested_extensions: Vec<String>,
    /// The key id whose signature the route verified on this request, if it was signed.
    pub signed_by: Option<String>,
}

impl CallContext {
    /// A header value by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Turn one message into a finished task (the message goes into the task's history). Must
/// not panic; a failure is a failed task.
pub type Execute = Arc<dyn Fn(super::model::Message, &CallContext) -> Task + Send + Sync>;
/// Find a task the store no longer holds (the harness answers from its run store).
pub type Lookup = Arc<dyn Fn(&str) -> Option<Task> + Send + Sync>;

/// The most tasks the default store remembers; older ones are forgotten first. A task holds
/// its request and reply, so this bounds the store's memory (about 1,024 × a few KiB).
pub const TASKS_KEPT: usize = 1_024;

/// A bounded in-memory store of the tasks an endpoint has answered.
///
/// A task is kept as the JSON text it was sent as, in its binding: one allocation each, so
/// keeping and forgetting a task costs next to nothing per call, and it is decoded again only
/// when `tasks/get` asks for it.
#[derive(Clone, Default)]
pub struct TaskStore {
    inner: Arc<Mutex<Tasks>>,
    capacity: usize,
}

/// A task's JSON text and the binding that encoded it.
#[derive(Clone)]
struct Kept {
    binding: Binding,
    json: Arc<str>,
}

/// Tasks by id, and their ids oldest first.
type Tasks = (HashMap<String, Kept>, VecDeque<String>);

impl TaskStore {
    /// A store that keeps the newest `capacity` tasks.
    pub fn new(capacity: usize) -> TaskStore {
        TaskStore {
            inner: Arc::default(),
            capacity,
        }
    }

    /// Remember a task, forgetting the oldest beyond capacity.
    pub fn put(&self, task: &Task) {
        if self.capacity > 0 {
            self.keep(&task.id, Binding::V03, json_text(&v03::Json(task)).into());
        }
    }

    /// Remember a task by its JSON text in `binding`.
    fn keep(&self, id: &str, binding: Binding, json: Arc<str>) {
        if self.capacity == 0 {
            return;
        }
        // Every connection thread keeps its tasks here: allocate before taking the lock, so
        // the lock is held for the map operations alone.
        let (key, queued) = (id.to_string(), id.to_string());
        let evicted = {
            let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            let (tasks, order) = &mut *guard;
            if tasks.insert(key, Kept { binding, json }).is_none() {
                order.push_back(queued);
            }
            let mut evicted = Vec::new();
            while order.len() > self.capacity {
                if let Some(old) = order.pop_front() {
                    evicted.extend(tasks.remove(&old));
                }
            }
            evicted
        };
        // Freed outside the lock.
        drop(evicted);
    }

    /// A remembered task.
    pub fn get(&self, id: &str) -> Option<Task> {
        let kept = {
            let guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            guard.0.get(id).cloned()?
        };
        // The text is this endpoint's own encoding, so it decodes; a failure would be a bug in
        // a codec, answered as an unknown task rather than a panic.
        let value: Value = serde_json::from_str(&kept.json).ok()?;
        match kept.binding {
            Binding::V03 => v03::decode_task(value),
            Binding::V10 => v10::decode_task(value),
        }
        .ok()
    }

    /// How many tasks are held.
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).0.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An A2A JSON-RPC endpoint.
#[derive(Clone)]
pub struct Endpoint {
    pub execute: Execute,
    pub tasks: TaskStore,
    pub lookup: Option<Lookup>,
    /// Deepest JSON nesting accepted in a request.
    pub max_depth: usize,
    /// How long a JSON-RPC batch may take as a whole ([`jsonrpc::run_batch`]).
    pub batch_deadline: Duration,
}

impl Endpoint {
    /// An endpoint that runs `execute`, with the default task store.
    pub fn new(execute: Execute) -> Endpoint {
        Endpoint {
            execute,
            tasks: TaskStore::new(TASKS_KEPT),
            lookup: None,
            max_depth: crate::json::Limits::DEFAULT.max_depth,
            batch_deadline: jsonrpc::BATCH_DEADLINE,
        }
    }

    /// Answer one HTTP request carrying JSON-RPC.
    pub fn handle(&self, request: &Request) -> Response {
        self.handle_signed(request, None)
    }

    /// [`Endpoint::handle`] for a request whose signature the caller verified: `signed_by` is
    /// the key id that signed it.
    pub fn handle_signed(&self, request: &Request, signed_by: Option<String>) -> Response {
        if let Some(err) = &request.body_error {
            // The limit answers as HTTP (413, 408, 400) and as JSON-RPC, so either kind of
            // client learns why.
            let body = jsonrpc::error(
                &Value::Null,
                &RpcError::new(jsonrpc::INVALID_REQUEST, err.to_string()),
            );
            return Response::json(err.status(), &body);
        }
        let version = request
            .header("a2a-version")
            .map(str::to_string)
            .or_else(|| query_param(&request.query, "A2A-Version"))
            .filter(|v| !v.trim().is_empty());
        let requested: Vec<String> = ["x-a2a-extensions", "a2a-extensions"]
            .iter()
            .filter_map(|h| request.header_joined(h))
            .flat_map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .collect::<Vec<_>>()
            })
            .filter(|s| !s.is_empty())
            .collect();
        // Replies are JSON text, written straight from the model (no intermediate tree).
        let replies: Option<String> = match jsonrpc::parse(&request.body, self.max_depth) {
            Incoming::Single(Err(reply)) => Some(reply.to_string()),
            Incoming::Single(Ok(call)) => self.dispatch(
                call,
                request,
                version.as_deref(),
                &requested,
                signed_by.as_deref(),
            ),
            Incoming::Batch(items) => {
                // The calls run on threads of their own, so they take what they need along:
                // the endpoint (a few shared handles) and the request without its body.
                let endpoint = self.clone();
                let context = Arc::new(Request {
                    method: request.method.clone(),
                    path: request.path.clone(),
                    query: request.query.clone(),
                    headers: request.headers.clone(),
                    body: Vec::new(),
                    body_error: None,
                    remote_addr: request.remote_addr,
                });
                let (version, requested) = (version.clone(), requested.clone());
                let answer: jsonrpc::Answer = Arc::new(move |call| {
                    endpoint.dispatch(
                        call,
                        &context,
                        version.as_deref(),
                        &requested,
                        signed_by.as_deref(),
                    )
                });
                let answers = jsonrpc::run_batch(items, self.batch_deadline, answer);
                (!answers.is_empty()).then(|| format!("[{}]", answers.join(",")))
            }
        };
        let mut response = match replies {
            Some(body) => Response::bytes(200, "application/json", body.into_bytes()),
            None => Response::empty(204),
        };
        if requested.iter().any(|e| e == EXTENSION_URI) {
            // The Data Director extension is active on every call this endpoint answers.
            let header = if version.is_some() {
                "A2A-Extensions"
            } else {
                "X-A2A-Extensions"
            };
            response = response.with_header(header, EXTENSION_URI);
        }
        response
    }

    /// Answer one call; `None` for a notification.
    fn dispatch(
        &self,
        call: Call,
        request: &Request,
        version: Option<&str>,
        requested: &[String],
        signed_by: Option<&str>,
    ) -> Option<String> {
        let id = call.id.clone().unwrap_or(Value::Null);
        let notification = call.id.is_none();
        let reply = match self.answer(call, request, version, requested, signed_by) {
            Ok(result) => jsonrpc::success_text(&id, &result),
            Err(err) => jsonrpc::error(&id, &err).to_string(),
        };
        (!notification).then_some(reply)
    }

    fn answer(
        &self,
        call: Call,
        request: &Request,
        version: Option<&str>,
        requested: &[String],
        signed_by: Option<&str>,
    ) -> Result<String, RpcError> {
        let Some(binding) = Binding::of_method(&call.method) else {
            return Err(RpcError::new(jsonrpc::METHOD_NOT_FOUND, "Method not found"));
        };
        check_version(binding, version, &call.method)?;
        let ctx = CallContext {
            headers: request.headers.clone(),
            binding,
            requested_extensions: requested.to_vec(),
            signed_by: signed_by.map(str::to_string),
        };
        let invalid =
            |m: String| RpcError::new(jsonrpc::INVALID_PARAMS, format!("Invalid parameters: {m}"));
        let method = call.method.as_str();
        match binding {
            Binding::V03 if method == v03::SEND => {
                let params = v03::decode_send_params(call.params).map_err(invalid)?;
                let task = (self.execute)(params.message, &ctx);
                let json = json_text(&v03::Json(&task));
                self.tasks.keep(&task.id, binding, Arc::from(json.as_str()));
                Ok(json)
            }
            Binding::V10 if method == v10::SEND => {
                let params = v10::decode_send_params(call.params).map_err(invalid)?;
                let task = (self.execute)(params.message, &ctx);
                let json = json_text(&v10::Json(&task));
                self.tasks.keep(&task.id, binding, Arc::from(json.as_str()));
                // `{"task": …}`, as v10::TaskResult writes it, around the text already made.
                Ok(format!("{{\"task\":{json}}}"))
            }
            Binding::V03 if method == v03::GET_TASK => {
                let id = v03::decode_task_id(&call.params).map_err(invalid)?;
                self.find(&id).map(|t| json_text(&v03::Json(&t)))
            }
            Binding::V10 if method == v10::GET_TASK => {
                let id = v10::decode_task_id(&call.params).map_err(invalid)?;
                self.find(&id).map(|t| json_text(&v10::Json(&t)))
            }
            _ if method == v03::CANCEL_TASK || method == v10::CANCEL_TASK => {
                let id = match binding {
                    Binding::V03 => v03::decode_task_id(&call.params),
                    Binding::V10 => v10::decode_task_id(&call.params),
                }
                .map_err(invalid)?;
                // Calls are blocking, so every task a caller can name has already finished.
                let task = self.find(&id)?;
                Err(RpcError::new(
                    jsonrpc::TASK_NOT_CANCELABLE,
                    format!(
                        "Task cannot be canceled: task {} has already ended ({:?})",
                        task.id, task.status.state
                    ),
                ))
            }
            _ if method == v03::STREAM
                || method == v10::STREAM
                || method == "tasks/resubscribe"
                || method == "SubscribeToTask" =>
            {
                Err(RpcError::new(
                    jsonrpc::UNSUPPORTED_OPERATION,
                    "Streaming is not supported: the card says streaming: false, because nothing may reach a \
                     caller before the harness's checks have run; use message/send or SendMessage",
                ))
            }
            _ if method.contains("ushNotificationConfig") => Err(RpcError::new(
                jsonrpc::PUSH_NOTIFICATION_NOT_SUPPORTED,
                "Push Notification is not supported",
            )),
            _ if method == "agent/getAuthenticatedExtendedCard" => Err(RpcError::new(
                jsonrpc::EXTENDED_CARD_NOT_CONFIGURED,
                "Authenticated Extended Card is not configured",
            )),
            // A2A 1.0 §3.3.4: a card that does not declare `extendedAgentCard` answers -32004.
            _ if method == "GetExtendedAgentCard" => Err(RpcError::new(
                jsonrpc::UNSUPPORTED_OPERATION,
                "This operation is not supported: the card declares no extended agent card",
            )),
            _ => Err(RpcError::new(
                jsonrpc::UNSUPPORTED_OPERATION,
                format!("This operation is not supported: {method}"),
            )),
        }
    }

    fn find(&self, id: &str) -> Result<Task, RpcError> {
        self.tasks
            .get(id)
            .or_else(|| self.lookup.as_ref().and_then(|l| l(id)))
            .ok_or_else(|| RpcError::new(jsonrpc::TASK_NOT_FOUND, "Task not found"))
    }
}

/// The JSON-RPC error code of a refused signature: a server error (JSON-RPC 2.0 §5.1) outside
/// the -32001 to -32009 that A2A assigns. HTTP 401 is the primary signal.
pub const SIGNATURE_REFUSED: i64 = -32040;

/// The answer to a request whose signature was refused, before its JSON-RPC was read: HTTP
/// 401 (as A2A answers failed authentication, RFC 9110 §15.5.2) with `WWW-Authenticate:
/// DD-HMAC-SHA256-V1`, and a JSON-RPC error body with a `null` id (the request was not
/// parsed), code [`SIGNATURE_REFUSED`], the reason as its message and
/// `{"reason": "missing" | "malformed" | "unknown-key" | "stale" | "replayed" |
/// "bad-signature"}` as its data.
pub fn signature_refused(err: &VerifyError) -> Response {
    let mut error = RpcError::new(SIGNATURE_REFUSED, err.to_string());
    error.data = Some(serde_json::json!({ "reason": err.reason() }));
    Response::json(401, &jsonrpc::error(&Value::Null, &error))
        .with_header("WWW-Authenticate", SCHEME)
}

/// A model value as JSON text. The buffer starts at the size of a typical task, so writing
/// one does not grow it four times over (each a reallocation and a copy, per call).
fn json_text<T: serde::Serialize>(value: &T) -> String {
    let mut out = Vec::with_capacity(2048);
    serde_json::to_writer(&mut out, value).expect("a model value always serialises");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// The version a request declares must be one the method's binding speaks (major version
/// match, as a2a-sdk's `validate_version` does).
fn check_version(binding: Binding, declared: Option<&str>, method: &str) -> Result<(), RpcError> {
    let declared = declared.unwrap_or("0.3").trim();
    let major = declared.split('.').next().unwrap_or("");
    let expected = binding.version();
    let ok = match binding {
        Binding::V03 => major == "0",
        Binding::V10 => major == "1",
    };
    if ok {
        return Ok(());
    }
    Err(RpcError::new(
        jsonrpc::VERSION_NOT_SUPPORTED,
        format!(
            "A2A version '{declared}' is not supported by this handler for {method}. Expected version '{expected}'."
        ),
    ))
}

/// A query parameter's value (no percent-decoding beyond `+`; versions need none).
pub fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.eq_ignore_ascii_case(name).then(|| v.replace('+', " "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::a2a::model::{Artifact, Message, Part, Role, TaskState};
    use serde_json::json;

    fn task(n: u64) -> Task {
        let asked = Message::new(
            Role::User,
            vec![Part::data(
                json!({"n": n, "ratio": 0.5, "nested": {"list": [1, "two", null]}}),
            )],
        );
        let artifact = Artifact::new("agent-result", vec![Part::text(format!("answer {n}"))]);
        Task::finished(asked, TaskState::Completed, None, vec![artifact])
    }

    #[test]
    fn a_kept_task_comes_back_as_it_was_in_either_binding() {
        let store = TaskStore::new(4);
        let (a, b) = (task(1), task(2));
        store.put(&a);
        store.keep(&b.id, Binding::V10, json_text(&v10::Json(&b)).into());
        assert_eq!(store.get(&a.id), Some(a));
        assert_eq!(store.get(&b.id), Some(b));
        assert_eq!(store.get("no-such-task"), None);
    }

    #[test]
    fn the_task_store_forgets_the_oldest_beyond_its_capacity() {
        let store = TaskStore::new(2);
        let tasks: Vec<Task> = (0..3).map(task).collect();
        for t in &tasks {
            store.put(t);
        }
        assert_eq!(store.len(), 2);
        assert_eq!(store.get(&tasks[0].id), None);
        assert!(store.get(&tasks[1].id).is_some() && store.get(&tasks[2].id).is_some());
        let none = TaskStore::new(0);
        none.put(&tasks[0]);
        assert!(none.is_empty());
    }
}
