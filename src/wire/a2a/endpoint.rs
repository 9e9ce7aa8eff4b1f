//! The server side of A2A over JSON-RPC: both bindings on one endpoint, and the task rules
//! both share.
//!
//! The binding is told by the method (`message/send` is v0.3, `SendMessage` is 1.0). The
//! `A2A-Version` header (or query parameter) must agree: absent means 0.3, as a2a-sdk 1.x
//! reads it, so a 1.0 method without `A2A-Version: 1.x` gets -32009, as does a 0.3 method
//! under `A2A-Version: 1.x`.
//!
//! # Streams
//!
//! An endpoint built with `streaming` (the harness; its card says `streaming: true`) answers
//! `message/stream` (0.3) and `SendStreamingMessage` (1.0) with Server-Sent Events (A2A 1.0
//! §3.1.2, 0.3 §7.2; frames as [`super::stream`] writes them): the task as submitted, then
//! each change its work makes as it happens (the store's watchers, [`TaskStore::subscribe`]),
//! ending with a final status update, after which the response ends. The work runs on a
//! thread of its own (a background slot, as for a non-blocking send), so a caller that goes
//! away never stops it. While nothing happens, a comment line is sent every `keep_alive`
//! (15 s by default) so that proxies keep the stream open. `tasks/resubscribe` (0.3) and
//! `SubscribeToTask` (1.0) follow a task not yet ended the same way, starting with the task as
//! it stands. A refusal (an unknown task, a malformed message) is one SSE frame holding the
//! JSON-RPC error, as a2a-sdk answers, since a streaming client reads only SSE. An endpoint
//! without `streaming` (every agent: agents answer whole replies) refuses these methods with
//! -32004.
//!
//! # A send, whichever binding carried it
//!
//! 1. The message's shape is checked once ([`Message::check_shape`]): a missing or empty
//!    `parts`, a missing `messageId` or `role` is -32602 with the field and the reason. What
//!    the parts must hold (the Data Director contract's one data part) is the executor's own
//!    rule, applied after.
//! 2. `configuration` is read: `returnImmediately: true` (1.0) or `blocking: false` (0.3), and
//!    `historyLength`, which must not be negative (-32602).
//! 3. A message naming a `taskId` must name a task this endpoint knows (else -32001, A2A 1.0
//!    §3.4.2; a client cannot create a task under an id of its choosing), which is not in a
//!    terminal state (else -32004 in both bindings: 1.0 §3.1.1; 0.3 §7.1 gives no code, and
//!    -32004 is what a2a-sdk 1.3.0 answers on its 0.3 path too), and which is waiting for
//!    input (else -32004). A `contextId` beside it must be the task's (else -32602, §3.4.3);
//!    a missing one is the task's. The message then continues that task, whose history
//!    keeps every message.
//! 4. The [`Execute`] function plans the answer: a direct message, a refusal, or a task and
//!    the work to do for it ([`Plan`]).
//! 5. A blocking send runs the work on the caller's thread and answers with the task as it
//!    then stands. A non-blocking one stores the task as `submitted`, answers with it at once,
//!    and runs the work on a thread of its own, at most [`BACKGROUND_TASKS`] at a time
//!    (beyond that it is refused, [`BACKGROUND_FULL`]); `GetTask` shows its progress and
//!    `CancelTask` cancels it (the work is told through its [`Progress`]).
//!
//! `GetTask` honours `historyLength` (0: no history, absent: all of it); `ListTasks` (1.0 only:
//! A2A 0.3 has no JSON-RPC method for it, so `tasks/list` is -32601) lists the store's tasks,
//! or asks the [`List`] function an endpoint is given (the harness lists its run store).
//! Errors in the 1.0 binding carry `error.data` with a `google.rpc.ErrorInfo`
//! ([`super::error`]).
//!
//! Signatures ([`crate::wire::sign`]) are checked by the route in front of the endpoint, which
//! passes the key id that signed to [`Endpoint::handle_signed`] (it reaches the executor as
//! [`CallContext::signed_by`]), or answers a refused signature with [`signature_refused`].

pub(crate) use super::error::A2aError;
use super::error::DecodeError;
pub(crate) use super::tasks::{ListQuery, Progress, Reply, TASKS_KEPT, TaskPage, TaskStore};
use crate::text::Unpoison;

use super::codec::{
    Json, decode_history_length, decode_send_options, decode_send_params, decode_task_id,
};
use super::fast::SendFast;
use super::model::{Message, SendOptions, SendParams, SendResult, Task, TaskState};
use super::stream::StreamEvent;
use super::{Binding, card::EXTENSION_URI, v03, v10};
use crate::wire::http::{Request, Response};
use crate::wire::jsonrpc::{self, Call, Incoming, RpcError};
use crate::wire::sign::{SCHEME, VerifyError};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a request's caller looks like to the code that executes it.
#[derive(Clone, Debug)]
pub(crate) struct CallContext {
    /// The HTTP header fields (lower-case names), for an authenticator or a `traceparent`;
    /// shared, since the context is cloned into the work it plans.
    pub(crate) headers: Arc<[(String, String)]>,
    /// The key id whose signature the route verified on this request, if it was signed.
    pub(crate) signed_by: Option<String>,
    /// The call is a streamed send: the caller sees every change of the task as it happens.
    pub(crate) streaming: bool,
    /// Header fields the executor adds to the HTTP response that carries its answer.
    pub(crate) reply_headers: ReplyHeaders,
}

/// Header fields an executor adds to the HTTP response (the harness's `traceresponse`). They
/// reach the response only when the request was a single call, not a batch: one response
/// answers every call of a batch, and a field naming one of them would be wrong for the rest.
/// Work that runs before a blocking send is answered may still change them.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReplyHeaders(Arc<Mutex<Vec<(String, String)>>>);

impl ReplyHeaders {
    /// Set `name` (replacing an earlier value) to `value`.
    pub(crate) fn set(&self, name: &str, value: String) {
        let mut fields = self.0.lock().unpoisoned();
        fields.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        fields.push((name.to_string(), value));
    }

    /// Remove `name`, if it was set.
    pub(crate) fn remove(&self, name: &str) {
        let mut fields = self.0.lock().unpoisoned();
        fields.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }

    fn take(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *self.0.lock().unpoisoned())
    }
}

impl CallContext {
    /// A header value by case-insensitive name.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        crate::wire::http::header(&self.headers, name)
    }
}

/// What an executor makes of a well-formed message, decided at once on the caller's thread.
pub(crate) enum Plan {
    /// Answer with this message; no task is made (A2A's message response).
    Message(Message),
    /// Refuse the call with this error; no task is made.
    Refuse(A2aError),
    /// Make (or, for a message continuing a task, resume) a task, and do this work for it.
    Task(TaskPlan),
}

/// A task to make, and the work to do for it.
pub(crate) struct TaskPlan {
    /// The new task's id when the executor names it (the harness: the run's invocation id);
    /// else the endpoint makes one. Ignored when a message continues a task.
    pub(crate) task_id: Option<String>,
    /// The new task's context when the executor names it; else the message's, else a new one.
    pub(crate) context_id: Option<String>,
    /// Who may list the task (`ListTasks` with a [`List`] function that scopes by principal);
    /// `None` for an endpoint that lists every task to every caller.
    pub(crate) owner: Option<String>,
    /// What to do for the task.
    pub(crate) work: Work,
}

/// The work on a task.
pub(crate) enum Work {
    /// Already decided (a refusal in the task, say): the task ends at once with this reply.
    Done(Box<Reply>),
    /// To be run: a blocking send waits for it, a non-blocking one answers first. It marks the
    /// task `working` through its [`Progress`] when it starts, and should stop early if told
    /// the task was canceled. It must not panic (a panic is a failed task).
    Run(Box<dyn FnOnce(&Progress) -> Reply + Send>),
}

impl TaskPlan {
    /// A task the endpoint names, ended at once with `reply`.
    pub(crate) fn done(reply: Reply) -> TaskPlan {
        TaskPlan::named_here(Work::Done(Box::new(reply)))
    }

    /// A task the endpoint names, for `work` to run.
    pub(crate) fn run(work: impl FnOnce(&Progress) -> Reply + Send + 'static) -> TaskPlan {
        TaskPlan::named_here(Work::Run(Box::new(work)))
    }

    fn named_here(work: Work) -> TaskPlan {
        TaskPlan {
            task_id: None,
            context_id: None,
            owner: None,
            work,
        }
    }
}

/// Plan the answer to one well-formed message: the message (its `taskId` and `contextId`, when
/// it continues a task, already checked and filled), the task it continues, if any, and who
/// sent it. Must not panic.
pub(crate) type Execute = Arc<dyn Fn(&Message, Option<&Task>, &CallContext) -> Plan + Send + Sync>;
/// Find a task the store no longer holds (the harness answers from its run store). Such a task
/// is finished: it can be read, not continued or canceled.
pub(crate) type Lookup = Arc<dyn Fn(&str) -> Option<Task> + Send + Sync>;
/// Answer `ListTasks` in place of the endpoint's own store (the harness lists its run store,
/// scoped to the caller's principal).
pub(crate) type List =
    Arc<dyn Fn(&ListQuery, &CallContext) -> Result<TaskPage, A2aError> + Send + Sync>;

/// Whether the caller may see a task (`GetTask`, `CancelTask`): given the task's id, whether
/// the endpoint holds it and with what owner (`Some(None)`: held, no owner; `None`: not held,
/// so the lookup's), and the call. `Ok(false)` answers as if the task did not exist (another
/// principal's task is not found, never forbidden); `Err` refuses the call (no credentials).
pub(crate) type Visible =
    Arc<dyn Fn(&str, Option<Option<&str>>, &CallContext) -> Result<bool, A2aError> + Send + Sync>;

/// The most tasks an endpoint runs in the background (non-blocking sends) at once. Each holds a
/// thread of its own while it runs, outside the HTTP server's connection bound, so this bounds
/// those threads.
pub(crate) const BACKGROUND_TASKS: usize = 64;

/// The most of those one principal (a task's owner) may hold at once, so that one caller
/// holding streams open cannot take every slot from the others.
pub(crate) const BACKGROUND_PER_OWNER: usize = 16;

/// How often a stream with nothing to say sends a comment line, so that proxies and clients
/// with idle timeouts keep it open (the AG-UI routes use the same period).
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// An A2A JSON-RPC endpoint.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(crate) execute: Execute,
    pub(crate) tasks: TaskStore,
    pub(crate) lookup: Option<Lookup>,
    pub(crate) list: Option<List>,
    /// Who may read or cancel which task; `None`: every caller every task.
    pub(crate) visible: Option<Visible>,
    /// Deepest JSON nesting accepted in a request.
    pub(crate) max_depth: usize,
    /// How long a JSON-RPC batch may take as a whole ([`jsonrpc::run_batch`]).
    pub(crate) batch_deadline: Duration,
    /// The most tasks run in the background at once ([`BACKGROUND_TASKS`] by default).
    pub(crate) max_background: usize,
    /// The most of those one owner may hold ([`BACKGROUND_PER_OWNER`] by default).
    pub(crate) max_background_per_owner: usize,
    /// Answer the streaming methods (the card must then say `streaming: true`); off by
    /// default, when they are refused with -32004.
    pub(crate) streaming: bool,
    /// How often an idle stream sends a keep-alive comment ([`KEEP_ALIVE`] by default).
    pub(crate) keep_alive: Duration,
    /// The process's drain: once cut, a stream still open ends with a final `failed` status
    /// update (`dd.error: shutting_down`) rather than a bare close.
    pub(crate) drain: Option<crate::wire::http::drain::Drain>,
    background: Arc<AtomicUsize>,
    /// Background slots held, by owner.
    background_owners: Shares,
}

/// What a call answers, before it is written in its binding.
enum Answer {
    /// A task, shown with at most this many history messages.
    Task(Arc<Task>, Option<usize>),
    Message(Message),
    /// JSON text already written.
    Json(String),
    /// A streamed send: the task as submitted, and its changes as they come.
    Stream(Arc<Task>, Events),
}

/// The changes of a task, as a stream sends them.
type Events = crossbeam_channel::Receiver<StreamEvent>;

/// How a send is answered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// With the task (or message) once, as `configuration` asks: blocking or not.
    Once,
    /// As a stream of the task's changes.
    Stream,
}

/// Whether `method` is one of the streaming methods, in either binding.
fn is_stream_method(method: &str) -> bool {
    [v03::STREAM, v03::RESUBSCRIBE, v10::STREAM, v10::SUBSCRIBE].contains(&method)
}

impl Endpoint {
    /// An endpoint that runs `execute`, with the default task store.
    pub(crate) fn new(execute: Execute) -> Endpoint {
        Endpoint {
            execute,
            tasks: TaskStore::new(TASKS_KEPT),
            lookup: None,
            list: None,
            visible: None,
            max_depth: crate::json::Limits::DEFAULT.max_depth,
            batch_deadline: jsonrpc::BATCH_DEADLINE,
            max_background: BACKGROUND_TASKS,
            max_background_per_owner: BACKGROUND_PER_OWNER,
            streaming: false,
            keep_alive: KEEP_ALIVE,
            drain: None,
            background: Arc::default(),
            background_owners: Arc::default(),
        }
    }

    /// Answer one HTTP request carrying JSON-RPC.
    pub(crate) fn handle(&self, request: &Request) -> Response {
        self.handle_signed(request, None)
    }

    /// [`Endpoint::handle`] for a request whose signature the caller verified: `signed_by` is
    /// the key id that signed it.
    pub(crate) fn handle_signed(&self, request: &Request, signed_by: Option<String>) -> Response {
        if let Some(err) = &request.body_error {
            // The limit answers as HTTP (413, 408, 400) and as JSON-RPC, so either kind of
            // client learns why.
            let body = jsonrpc::error(
                &Value::Null,
                &RpcError::new(jsonrpc::INVALID_REQUEST, err.to_string()),
            );
            return Response::json(err.status(), &body);
        }
        let version = declared_version(request);
        let requested = ["x-a2a-extensions", "a2a-extensions"]
            .iter()
            .filter_map(|h| request.header_joined(h))
            .any(|v| v.split(',').any(|s| s.trim() == EXTENSION_URI));
        // Replies are JSON text, written straight from the model (no intermediate tree).
        let reply_headers = ReplyHeaders::default();
        // message/send or SendMessage in its plain shape is read straight from the body into
        // its params (fast::SendFast); any other body, or one it does not take, is read the
        // general way, which gives every error.
        let sends = [v03::SEND, v10::SEND];
        let fast = jsonrpc::parse_typed::<SendFast>(&request.body, self.max_depth, &sends)
            .and_then(|(id, method, fast)| {
                let params = fast.into_params(Binding::of_method(method)?)?;
                let call = Call {
                    id,
                    method: method.to_string(),
                    params: Value::Null,
                };
                Some((call, params))
            });
        let (parsed, read) = match fast {
            Some((call, params)) => (Incoming::Single(Ok(call)), Some(params)),
            None => (jsonrpc::parse(&request.body, self.max_depth), None),
        };
        let replies: Option<String> = match parsed {
            Incoming::Single(Ok(call)) if self.streaming && is_stream_method(&call.method) => {
                let response = self.stream(call, request, version.as_deref(), signed_by);
                return with_extension(response, requested, version.is_some());
            }
            Incoming::Single(Err(reply)) => Some(reply.to_string()),
            Incoming::Single(Ok(call)) => self.dispatch(
                call,
                read,
                request,
                version.as_deref(),
                signed_by.as_deref(),
                &reply_headers,
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
                let version = version.clone();
                let answer: jsonrpc::Answer = Arc::new(move |call| {
                    // Each call's header fields are dropped: see `ReplyHeaders`.
                    let dropped = ReplyHeaders::default();
                    endpoint.dispatch(
                        call,
                        None,
                        &context,
                        version.as_deref(),
                        signed_by.as_deref(),
                        &dropped,
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
        for (name, value) in reply_headers.take() {
            response = response.with_header(&name, &value);
        }
        with_extension(response, requested, version.is_some())
    }

    /// Answer one streaming call (see the module's "Streams") with an SSE response.
    fn stream(
        &self,
        call: Call,
        request: &Request,
        version: Option<&str>,
        signed_by: Option<String>,
    ) -> Response {
        let id = call.id.clone().unwrap_or(Value::Null);
        let binding = Binding::of_method(&call.method).unwrap_or(Binding::V03);
        let (tx, rx) = crossbeam_channel::unbounded::<Vec<u8>>();
        let mut body = rx;
        match self.open_stream(call, request, version, signed_by) {
            Err(err) => {
                let text = jsonrpc::error(&id, &err.to_rpc(binding)).to_string();
                let _ = tx.send(crate::wire::sse::event(&text));
            }
            Ok((first, events)) => {
                if let (Some(drain), StreamEvent::Task(task)) = (&self.drain, &first) {
                    // Guarded before any frame is sent, so a cut always finds it: a cut ends
                    // the stream with a final `failed` status update naming why.
                    let why =
                        "the server shut down before the task ended; ask GetTask once it is back";
                    let why = [("dd.error", "shutting_down"), ("error", why)];
                    let frame = failed_frame(&task.id, &task.context_id, &why, &id, binding);
                    body = drain.guard(body, frame);
                }
                let keep_alive = self.keep_alive;
                let pump = tx.clone();
                let spawned = std::thread::Builder::new()
                    .name("ddwire-a2a-stream".into())
                    .spawn(move || pump_events(first, events, &id, binding, keep_alive, &pump));
                if let Err(e) = spawned {
                    let err = A2aError::Internal {
                        what: format!("the stream could not be started: {e}"),
                    };
                    let text = jsonrpc::error(&Value::Null, &err.to_rpc(binding)).to_string();
                    let _ = tx.send(crate::wire::sse::event(&text));
                }
            }
        }
        drop(tx);
        Response::stream(200, crate::wire::sse::CONTENT_TYPE, body)
            .with_header("Cache-Control", "no-cache")
    }

    /// The first event of a stream and the channel of the rest (none: the first is the only
    /// one), or why the call is refused.
    fn open_stream(
        &self,
        call: Call,
        request: &Request,
        version: Option<&str>,
        signed_by: Option<String>,
    ) -> Result<(StreamEvent, Option<Events>), A2aError> {
        let method = call.method.as_str();
        let binding = Binding::of_method(method).unwrap_or(Binding::V03);
        check_version(binding, version, method)?;
        let invalid = |e: DecodeError| A2aError::invalid("", e.to_string());
        let ctx = CallContext {
            headers: Arc::clone(&request.headers),
            signed_by,
            // A stream's head is sent before its run is made: no field can name the run.
            reply_headers: ReplyHeaders::default(),
            streaming: true,
        };
        if method == v03::RESUBSCRIBE || method == v10::SUBSCRIBE {
            let id = decode_task_id(binding, &call.params).map_err(invalid)?;
            // The same rule as GetTask: another principal's task, running or ended, is not
            // found (so "terminal" can never tell that it exists).
            self.check_visible(&id, &ctx)?;
            let (task, events) = match self.tasks.subscribe(&id) {
                Err(A2aError::TaskNotFound { .. }) => {
                    return Err(self.not_held(id, |id, state| A2aError::TaskTerminal { id, state }));
                }
                other => other?,
            };
            return Ok((StreamEvent::Task(Arc::unwrap_or_clone(task)), Some(events)));
        }
        let params = decode_send_params(binding, call.params.clone()).map_err(invalid)?;
        let options = decode_send_options(binding, call.params.get("configuration"))?;
        match self.send(params, options, ctx, Mode::Stream)? {
            Answer::Stream(task, events) => {
                Ok((StreamEvent::Task(Arc::unwrap_or_clone(task)), Some(events)))
            }
            Answer::Message(message) => Ok((StreamEvent::Message(message), None)),
            Answer::Task(task, _) => Ok((StreamEvent::Task(Arc::unwrap_or_clone(task)), None)),
            Answer::Json(_) => Err(A2aError::Internal {
                what: "a send answered with neither a task nor a message".into(),
            }),
        }
    }

    /// Answer one call; `None` for a notification. `read`: message/send's params when they were
    /// read straight from the body (then `call.params` is null).
    fn dispatch(
        &self,
        call: Call,
        read: Option<SendParams>,
        request: &Request,
        version: Option<&str>,
        signed_by: Option<&str>,
        reply_headers: &ReplyHeaders,
    ) -> Option<String> {
        let id = call.id.clone().unwrap_or(Value::Null);
        let notification = call.id.is_none();
        // The binding errors are written in: the method's, else the one the version names.
        let binding = Binding::of_method(&call.method).unwrap_or(
            if version.is_some_and(|v| v.trim().starts_with('1')) {
                Binding::V10
            } else {
                Binding::V03
            },
        );
        // A 1.0 send's result wraps its task (`SendMessageResponse`), as the codec writes a
        // send's result; a task call answers the task itself, in either binding.
        let wrap_task = call.method == v10::SEND;
        let reply = match self.answer(call, read, request, version, signed_by, reply_headers) {
            // Sized for a typical task, so that writing one does not grow the buffer.
            Ok(answer) => jsonrpc::success_with(&id, 2048, |out| {
                write_answer(out, answer, binding, wrap_task);
            }),
            Err(err) => jsonrpc::error(&id, &err.to_rpc(binding)).to_string(),
        };
        (!notification).then_some(reply)
    }

    fn answer(
        &self,
        call: Call,
        read: Option<SendParams>,
        request: &Request,
        version: Option<&str>,
        signed_by: Option<&str>,
        reply_headers: &ReplyHeaders,
    ) -> Result<Answer, A2aError> {
        let Some(binding) = Binding::of_method(&call.method) else {
            return Err(A2aError::MethodNotFound {
                method: call.method,
            });
        };
        check_version(binding, version, &call.method)?;
        let ctx = CallContext {
            headers: Arc::clone(&request.headers),
            signed_by: signed_by.map(str::to_string),
            reply_headers: reply_headers.clone(),
            streaming: false,
        };
        let invalid = |e: DecodeError| A2aError::invalid("", e.to_string());
        let method = call.method.as_str();
        Ok(match binding {
            _ if method == v03::SEND || method == v10::SEND => {
                let (options, params) = match read {
                    // The same configuration the general reader would find in the params.
                    Some(params) => (
                        decode_send_options(binding, params.configuration.as_ref())?,
                        params,
                    ),
                    None => (
                        decode_send_options(binding, call.params.get("configuration"))?,
                        decode_send_params(binding, call.params).map_err(invalid)?,
                    ),
                };
                self.send(params, options, ctx, Mode::Once)?
            }
            _ if method == v03::GET_TASK || method == v10::GET_TASK => {
                let id = decode_task_id(binding, &call.params).map_err(invalid)?;
                let history = decode_history_length(binding, &call.params)?;
                self.check_visible(&id, &ctx)?;
                Answer::Task(self.find(&id)?, history)
            }
            _ if method == v03::CANCEL_TASK || method == v10::CANCEL_TASK => {
                let id = decode_task_id(binding, &call.params).map_err(invalid)?;
                self.check_visible(&id, &ctx)?;
                Answer::Task(self.cancel(&id)?, None)
            }
            Binding::V10 if method == v10::LIST_TASKS => {
                let query = v10::decode_list_params(&call.params)?;
                let page = match &self.list {
                    Some(list) => list(&query, &ctx)?,
                    None => self.tasks.list(&query, None)?,
                };
                Answer::Json(json_text(&Json(binding, &page)))
            }
            _ => return Err(self.not_answered(method)),
        })
    }

    /// Why `method`, none of the calls this endpoint answers one by one, is refused.
    fn not_answered(&self, method: &str) -> A2aError {
        match method {
            _ if is_stream_method(method) => {
                let what = if self.streaming {
                    format!("{method} cannot be sent in a batch: a stream is a response of its own")
                } else {
                    format!(
                        "{method}: this endpoint does not stream (its card says streaming: \
                         false: it answers whole replies); use message/send or SendMessage"
                    )
                };
                A2aError::Unsupported { what }
            }
            _ if method.contains("ushNotificationConfig") => A2aError::PushNotificationNotSupported,
            "agent/getAuthenticatedExtendedCard" => A2aError::ExtendedCardNotConfigured,
            // A2A 1.0 §3.3.4: a card that does not declare `extendedAgentCard` answers -32004.
            "GetExtendedAgentCard" => A2aError::Unsupported {
                what: "the card declares no extended agent card".into(),
            },
            _ => A2aError::Unsupported {
                what: method.to_string(),
            },
        }
    }

    /// Refuse a call on task `id` the caller may not see: as not found, or unauthenticated.
    fn check_visible(&self, id: &str, ctx: &CallContext) -> Result<(), A2aError> {
        let Some(visible) = &self.visible else {
            return Ok(());
        };
        let held = self.tasks.get_owned(id).map(|(_, owner)| owner);
        if visible(id, held.as_ref().map(Option::as_deref), ctx)? {
            Ok(())
        } else {
            Err(A2aError::TaskNotFound { id: id.to_string() })
        }
    }

    /// A task by id: the store's, else the lookup's.
    fn find(&self, id: &str) -> Result<Arc<Task>, A2aError> {
        self.tasks
            .get(id)
            .or_else(|| self.lookup.as_ref().and_then(|l| l(id)).map(Arc::new))
            .ok_or_else(|| A2aError::TaskNotFound { id: id.to_string() })
    }

    /// `CancelTask`: a task of the store not yet terminal is canceled; a stored run (the
    /// lookup's) has finished, and cannot be.
    fn cancel(&self, id: &str) -> Result<Arc<Task>, A2aError> {
        match self.tasks.cancel(id) {
            Err(A2aError::TaskNotFound { .. }) => Err(self.not_held(
                id.to_string(),
                |id, state| A2aError::TaskNotCancelable { id, state },
            )),
            other => other,
        }
    }

    /// The refusal of a call on task `id` that the store does not hold: what `ended` makes of
    /// it if the lookup knows it (a stored run, which has ended), else not found.
    fn not_held(&self, id: String, ended: impl FnOnce(String, TaskState) -> A2aError) -> A2aError {
        match self.lookup.as_ref().and_then(|l| l(&id)) {
            Some(task) => ended(id, task.status.state),
            None => A2aError::TaskNotFound { id },
        }
    }

    /// One send, as the module documentation describes.
    fn send(
        &self,
        params: SendParams,
        options: SendOptions,
        ctx: CallContext,
        mode: Mode,
    ) -> Result<Answer, A2aError> {
        let mut message = params.message;
        message.check_shape()?;
        let continued = match message.task_id.clone() {
            None => None,
            Some(id) => Some(self.continued_task(id, &mut message, &ctx)?),
        };
        let plan = (self.execute)(&message, continued.as_deref(), &ctx);
        let plan = match plan {
            Plan::Refuse(e) => return Err(e),
            Plan::Message(mut reply) => {
                reply.context_id = reply.context_id.or(message.context_id);
                reply.task_id = reply.task_id.or(message.task_id);
                return Ok(Answer::Message(reply));
            }
            Plan::Task(plan) => plan,
        };
        let history = options.history_length;
        let streamed = mode == Mode::Stream;
        let run = matches!(plan.work, Work::Run(_));
        let background = (streamed || options.return_immediately) && run;
        // A slot for the background thread is taken before anything is stored.
        let slot = background.then(|| {
            let owner = plan.owner.clone().or_else(|| {
                let id = continued.as_ref()?.id.as_str();
                self.tasks.get_owned(id).and_then(|(_, owner)| owner)
            });
            self.take_background_slot(owner)
        });
        let slot = slot.transpose()?;
        let (snapshot, progress, work) = match continued {
            Some(task) => {
                let (snapshot, progress) = self.tasks.resume(&task.id, message, run)?;
                (snapshot, progress, plan.work)
            }
            None => self.create(message, plan),
        };
        // A stream watches the task from before its work starts, so it misses no change.
        let events = if streamed {
            Some(self.tasks.subscribe(&snapshot.id)?.1)
        } else {
            None
        };
        let work = match work {
            Work::Run(work) => work,
            Work::Done(reply) => return Ok(self.finished(snapshot, *reply, events, history)),
        };
        let progress =
            progress.unwrap_or_else(|| Progress::detached(&snapshot.id, &snapshot.context_id));
        if let Some(slot) = slot {
            return Ok(self.run_in_background(slot, work, progress, snapshot, events, history));
        }
        // Let go of the snapshot before the work runs, so that marking the task working
        // changes it in place rather than copying it.
        let held = Held::release(snapshot, &self.tasks);
        let reply = run_work(work, &progress);
        let task = self.finish_held(held, reply);
        // Canceled by the drain's cut: the caller is told why, not shown a cancel it never
        // asked for. (Asked only once the drain is cut: a blocking call's path pays nothing for
        // it otherwise.)
        if self.drain.as_ref().is_some_and(|d| d.is_cut())
            && self
                .tasks
                .get(&task.id)
                .is_some_and(|t| t.status.state == TaskState::Canceled)
        {
            return Err(A2aError::ShuttingDown {
                id: task.id.clone(),
            });
        }
        Ok(Answer::Task(task, history))
    }

    /// The task `id` a message continues, which must be visible to the caller, not finished,
    /// in the message's context (which becomes the task's if it names none), and waiting for
    /// input.
    fn continued_task(
        &self,
        id: String,
        message: &mut Message,
        ctx: &CallContext,
    ) -> Result<Arc<Task>, A2aError> {
        // Continuing a task reveals its state: the same rule as GetTask first.
        self.check_visible(&id, ctx)?;
        let task = self.find(&id)?;
        let state = task.status.state;
        if state.is_terminal() {
            return Err(A2aError::TaskTerminal { id, state });
        }
        if let Some(context_id) = &message.context_id
            && *context_id != task.context_id
        {
            return Err(A2aError::ContextMismatch {
                context_id: context_id.clone(),
                task_id: id,
                task_context_id: task.context_id.clone(),
            });
        }
        if !matches!(state, TaskState::InputRequired | TaskState::AuthRequired) {
            return Err(A2aError::TaskBusy { id, state });
        }
        message.context_id = Some(task.context_id.clone());
        Ok(task)
    }

    /// Run `work` on a thread of its own, holding `slot`, and answer at once with the task as
    /// submitted (`snapshot`): on the stream `events` when there is one, else for the caller
    /// to poll. A thread that cannot be started fails the task.
    fn run_in_background(
        &self,
        slot: Slot,
        work: Box<dyn FnOnce(&Progress) -> Reply + Send>,
        progress: Progress,
        snapshot: Arc<Task>,
        events: Option<Events>,
        history: Option<usize>,
    ) -> Answer {
        let tasks = self.tasks.clone();
        let spawned = std::thread::Builder::new()
            .name("ddwire-a2a-task".into())
            .spawn(move || {
                let _slot = slot;
                let reply = run_work(work, &progress);
                let _ = tasks.finish(progress.task_id(), reply);
            });
        if let Err(e) = spawned {
            let reply = Reply::failed(format!(
                "the task could not be started in the background: {e}"
            ));
            return self.finished(snapshot, reply, events, history);
        }
        match events {
            // The task as submitted; its changes follow on the stream.
            Some(events) => Answer::Stream(snapshot, events),
            // The task as submitted: the caller polls GetTask for its progress.
            None => Answer::Task(snapshot, history),
        }
    }

    /// Record `reply` on the task `snapshot` shows, and answer: on the stream `events`, which
    /// starts with the task as `snapshot` shows it, or with the task as it then stands.
    fn finished(
        &self,
        snapshot: Arc<Task>,
        reply: Reply,
        events: Option<Events>,
        history: Option<usize>,
    ) -> Answer {
        match events {
            Some(events) => {
                self.finish(Arc::clone(&snapshot), reply);
                Answer::Stream(snapshot, events)
            }
            None => Answer::Task(self.finish(snapshot, reply), history),
        }
    }

    /// Record `reply` on the task `snapshot` shows, and return the task as it then stands.
    fn finish(&self, snapshot: Arc<Task>, reply: Reply) -> Arc<Task> {
        self.finish_held(Held::release(snapshot, &self.tasks), reply)
    }

    fn finish_held(&self, held: Held, reply: Reply) -> Arc<Task> {
        match self.tasks.finish(&held.id, reply) {
            Ok(task) => task,
            Err(reply) => {
                let now = Some(crate::time::now_rfc3339());
                let submitted = Task::submitted(held.id, held.context_id, Vec::new(), now);
                let mut task = held.snapshot.map(Arc::unwrap_or_clone).unwrap_or(submitted);
                super::tasks::apply(&mut task, *reply);
                Arc::new(task)
            }
        }
    }

    /// Store the new task a plan asks for, `submitted`, with its work running if it has any. An id
    /// the executor named that is already taken is not reused: the task gets a new one (the
    /// work decides, as for any task, whether what it was asked can be done).
    fn create(&self, mut message: Message, plan: TaskPlan) -> (Arc<Task>, Option<Progress>, Work) {
        let TaskPlan {
            task_id,
            context_id,
            owner,
            work,
        } = plan;
        let context_id = context_id
            .or_else(|| message.context_id.clone())
            .unwrap_or_else(crate::ids::new_uuid7);
        let id = task_id.unwrap_or_else(crate::ids::new_uuid7);
        message.task_id = Some(id.clone());
        message.context_id = Some(context_id.clone());
        let mut task = Task::submitted(id, context_id, vec![message], None);
        let running = matches!(work, Work::Run(_));
        loop {
            match self.tasks.insert(task, owner.clone(), running, false) {
                Ok((snapshot, progress)) => return (snapshot, progress, work),
                Err(taken) => {
                    task = Arc::unwrap_or_clone(taken);
                    let id = crate::ids::new_uuid7();
                    for m in &mut task.history {
                        m.task_id = Some(id.clone());
                    }
                    task.id = id;
                }
            }
        }
    }

    fn take_background_slot(&self, owner: Option<String>) -> Result<Slot, A2aError> {
        let limit = self.max_background;
        self.background
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < limit).then_some(n + 1)
            })
            .map_err(|_| A2aError::BackgroundFull { limit })?;
        let mut slot = Slot {
            count: Arc::clone(&self.background),
            owner: None,
        };
        let Some(owner) = owner else {
            return Ok(slot);
        };
        let share = self.max_background_per_owner;
        let mut owners = self.background_owners.lock().unpoisoned();
        let held = owners.entry(owner.clone()).or_insert(0);
        if *held >= share {
            return Err(A2aError::BackgroundShareFull { share, limit });
        }
        *held += 1;
        slot.owner = Some((Arc::clone(&self.background_owners), owner));
        Ok(slot)
    }
}

/// What is kept of a task's snapshot while its work runs: its ids, and the snapshot itself
/// only if the store keeps no task (the store never forgets a task whose work runs, and a
/// snapshot held would make every change to the stored task copy it).
struct Held {
    id: String,
    context_id: String,
    snapshot: Option<Arc<Task>>,
}

impl Held {
    fn release(snapshot: Arc<Task>, store: &TaskStore) -> Held {
        Held {
            id: snapshot.id.clone(),
            context_id: snapshot.context_id.clone(),
            snapshot: (!store.keeps_tasks()).then_some(snapshot),
        }
    }
}

/// Background slots held, by owner.
type Shares = Arc<Mutex<HashMap<String, usize>>>;

/// One of the endpoint's background slots, given back (to the endpoint and its owner's share)
/// when dropped.
struct Slot {
    count: Arc<AtomicUsize>,
    owner: Option<(Shares, String)>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
        if let Some((owners, owner)) = &self.owner {
            let mut owners = owners.lock().unpoisoned();
            if let Some(held) = owners.get_mut(owner) {
                *held -= 1;
                if *held == 0 {
                    owners.remove(owner);
                }
            }
        }
    }
}

/// Write a stream's events as SSE frames answering the call `id` until its last event, with a
/// keep-alive comment each `keep_alive` without one. A channel that closes before a final event
/// (the work's store lost the task) ends the stream with a failed status update saying so,
/// never silently. Returns once the stream ends or the caller has gone.
fn pump_events(
    first: StreamEvent,
    events: Option<Events>,
    id: &Value,
    binding: Binding,
    keep_alive: Duration,
    out: &crossbeam_channel::Sender<Vec<u8>>,
) {
    let (task_id, context_id) = match &first {
        StreamEvent::Task(t) => (t.id.clone(), t.context_id.clone()),
        _ => (String::new(), String::new()),
    };
    if out.send(first.to_frame(id, binding)).is_err() || first.is_last() {
        return;
    }
    let Some(events) = events else {
        return;
    };
    loop {
        let (frame, last) = match events.recv_timeout(keep_alive) {
            Ok(event) => (event.to_frame(id, binding), event.is_last()),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                (crate::wire::sse::comment("keep-alive"), false)
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                let why = "the task's changes stopped before it ended; ask GetTask for its state";
                let frame = failed_frame(&task_id, &context_id, &[("error", why)], id, binding);
                (frame, true)
            }
        };
        if out.send(frame).is_err() || last {
            return;
        }
    }
}

/// The frame of a final `failed` status update that ends the stream of a task early, its
/// metadata saying why.
fn failed_frame(
    task_id: &str,
    context_id: &str,
    why: &[(&str, &str)],
    id: &Value,
    binding: Binding,
) -> Vec<u8> {
    let mut update = super::stream::StatusUpdate::now(task_id, context_id, TaskState::Failed);
    update.metadata = Some(
        why.iter()
            .map(|(k, v)| (k.to_string(), Value::from(*v)))
            .collect(),
    );
    StreamEvent::Status(update).to_frame(id, binding)
}

/// Name the Data Director extension as active on a response, when the caller asked for it.
fn with_extension(response: Response, requested: bool, versioned: bool) -> Response {
    if !requested {
        return response;
    }
    // The Data Director extension is active on every call this endpoint answers.
    let header = if versioned {
        "A2A-Extensions"
    } else {
        "X-A2A-Extensions"
    };
    response.with_header(header, EXTENSION_URI)
}

/// Run a task's work; a panic is a failed task, never a task left running.
fn run_work(work: Box<dyn FnOnce(&Progress) -> Reply + Send>, progress: &Progress) -> Reply {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(progress)))
        .unwrap_or_else(|_| Reply::failed("the work on this task panicked"))
}

/// Append the `result` of a call answered with `answer`, as `binding` writes it; with
/// `wrap_task`, a task inside `{"task": …}`.
fn write_answer(out: &mut Vec<u8>, answer: Answer, binding: Binding, wrap_task: bool) {
    match answer {
        Answer::Json(text) => out.extend_from_slice(text.as_bytes()),
        // Only a streaming call asks for a stream; shown as the task, should one not.
        Answer::Stream(task, _) => append(out, &Json(binding, &*task)),
        Answer::Task(task, history) => {
            if wrap_task {
                out.extend_from_slice(b"{\"task\":");
            }
            append(out, &Json(binding, &task.view(history, true)));
            if wrap_task {
                out.push(b'}');
            }
        }
        Answer::Message(m) => append(out, &Json(binding, &SendResult::Message(m))),
    }
}

/// The JSON-RPC error code of a refused signature: a server error (JSON-RPC 2.0 §5.1) outside
/// the -32001 to -32009 that A2A assigns. HTTP 401 is the primary signal.
pub(crate) const SIGNATURE_REFUSED: i64 = -32040;

/// The answer to a request whose signature was refused, before its JSON-RPC was read: HTTP
/// 401 (as A2A answers failed authentication, RFC 9110 §15.5.2) with `WWW-Authenticate:
/// DD-HMAC-SHA256-V1`, and a JSON-RPC error body with a `null` id (the request was not
/// parsed), code [`SIGNATURE_REFUSED`], the reason as its message and
/// `{"reason": "missing" | "malformed" | "unknown-key" | "stale" | "replayed" |
/// "bad-signature"}` as its data.
pub(crate) fn signature_refused(err: &VerifyError) -> Response {
    let mut error = RpcError::new(SIGNATURE_REFUSED, err.to_string());
    error.data = Some(serde_json::json!({ "reason": err.reason() }));
    Response::json(401, &jsonrpc::error(&Value::Null, &error))
        .with_header("WWW-Authenticate", SCHEME)
}

/// A model value as JSON text. The buffer starts at the size of a typical task, so writing
/// one does not grow it four times over (each a reallocation and a copy, per call).
fn json_text<T: serde::Serialize>(value: &T) -> String {
    let mut out = Vec::with_capacity(2048);
    append(&mut out, value);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Append a model value as JSON.
fn append<T: serde::Serialize>(out: &mut Vec<u8>, value: &T) {
    serde_json::to_writer(out, value).expect("a model value always serialises");
}

/// The version a request declares must be one the method's binding speaks (major version
/// match, as a2a-sdk's `validate_version` does).
pub(crate) fn check_version(
    binding: Binding,
    declared: Option<&str>,
    method: &str,
) -> Result<(), A2aError> {
    let declared = declared.unwrap_or("0.3").trim();
    if Binding::of_version(declared) == Some(binding) {
        return Ok(());
    }
    Err(A2aError::VersionNotSupported {
        declared: declared.to_string(),
        method: method.to_string(),
        expected: binding.version(),
    })
}

/// The A2A version a request declares: its `A2A-Version` header, else that query parameter.
pub(crate) fn declared_version(request: &Request) -> Option<String> {
    request
        .header("a2a-version")
        .map(str::to_string)
        .or_else(|| query_param(&request.query, "A2A-Version"))
        .filter(|v| !v.trim().is_empty())
}

/// A query parameter's value (no percent-decoding beyond `+`; versions need none).
pub(crate) fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.eq_ignore_ascii_case(name).then(|| v.replace('+', " "))
    })
}
