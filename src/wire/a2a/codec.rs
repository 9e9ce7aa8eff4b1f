//! The one writer and reader between the A2A model and either binding's JSON.
//!
//! A2A v0.3 (JSON-RPC, as a2a-sdk 0.3.26 speaks it) and A2A 1.0 (ProtoJSON, as a2a-sdk 1.x
//! speaks it) carry the same objects; each function here is told the binding and differs only
//! where the specifications do:
//!
//! - **Names**: methods, task states and roles, spelled by [`Binding`] (`completed` against
//!   `TASK_STATE_COMPLETED`, `user` against `ROLE_USER`; 1.0 also reads an enum's number).
//! - **Discriminators**: v0.3 tells an object's type by a `kind` member inside it, which
//!   writing always sends, since other peers discriminate on it; 1.0 by the oneof member
//!   that holds it (`{"task": …}`, `{"statusUpdate": …}`) and a part by which of `text`,
//!   `raw`, `url`, `data` it has (`super::v03`, `super::v10`).
//! - **Presence**: 1.0 follows `MessageToDict` in writing (an empty string or list is left
//!   out: proto3 strings have no presence) and `ParseDict(…, ignore_unknown_fields=True)` in
//!   reading (a field by its JSON or its proto name, `null` as absent, an empty string as
//!   absent). v0.3 writes what is there and reads as leniently as the 0.3.26 server, but
//!   refuses a required string or a list of the wrong type, `null` included.
//! - **Order**: members are written in the order each SDK writes them (0.3: the pydantic
//!   model's; 1.0: the proto fields'), so ddwire's bytes match the fixtures recorded from them.
//!
//! Writing goes straight to the output ([`Json`] is a `Serialize` view: no intermediate
//! tree); reading takes its JSON by value and moves what it keeps out of it, since a data
//! part can be large and a copy would cost as much as the parse.

use super::Binding;
use super::error::{A2aError, DecodeError};
use super::fields::{Fields, count_param, get};
use super::model::{
    Artifact, File, Message, Part, Role, SendOptions, SendParams, SendResult, Task, TaskStatus,
    TaskView,
};
use super::stream::{ArtifactUpdate, StatusUpdate, StreamEvent, ends_stream};
use super::tasks::TaskPage;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Value, json};

// --- Writing ------------------------------------------------------------------------------------

/// A model value as `binding` writes it.
pub(crate) struct Json<'a, T: ?Sized>(pub Binding, pub &'a T);

/// A slice of model values, each as `binding` writes it.
struct Seq<'a, T>(Binding, &'a [T]);

impl<'a, T> Serialize for Seq<'a, T>
where
    Json<'a, T>: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.1.iter().map(|v| Json(self.0, v)))
    }
}

/// v0.3's `kind` discriminator (1.0 has none).
#[inline]
fn kind<M: SerializeMap>(m: &mut M, binding: Binding, kind: &str) -> Result<(), M::Error> {
    match binding {
        Binding::V03 => m.serialize_entry("kind", kind),
        Binding::V10 => Ok(()),
    }
}

/// A member written when present.
#[inline]
fn opt<M: SerializeMap, T: Serialize>(m: &mut M, key: &str, v: &Option<T>) -> Result<(), M::Error> {
    match v {
        Some(v) => m.serialize_entry(key, v),
        None => Ok(()),
    }
}

/// A string member written when present; 1.0 leaves an empty one out too.
#[inline]
fn text<M: SerializeMap>(
    m: &mut M,
    binding: Binding,
    key: &str,
    v: Option<&str>,
) -> Result<(), M::Error> {
    match v {
        Some(s) if binding == Binding::V03 || !s.is_empty() => m.serialize_entry(key, s),
        _ => Ok(()),
    }
}

/// A list member written only when it has items (in both bindings).
#[inline]
fn list<M: SerializeMap>(m: &mut M, key: &str, v: &[String]) -> Result<(), M::Error> {
    if v.is_empty() {
        Ok(())
    } else {
        m.serialize_entry(key, v)
    }
}

/// A result whose type v0.3 tells by its `kind` and 1.0 by the oneof `member` that holds it.
fn oneof<S: Serializer, T: Serialize>(
    s: S,
    binding: Binding,
    member: &str,
    value: &T,
) -> Result<S::Ok, S::Error> {
    match binding {
        Binding::V03 => value.serialize(s),
        Binding::V10 => {
            let mut m = s.serialize_map(Some(1))?;
            m.serialize_entry(member, value)?;
            m.end()
        }
    }
}

impl Serialize for Json<'_, Part> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let binding = self.0;
        let mut m = s.serialize_map(None)?;
        let metadata = match self.1 {
            Part::Text { text, metadata } => {
                kind(&mut m, binding, "text")?;
                m.serialize_entry("text", text)?;
                metadata
            }
            Part::Data { data, metadata } => {
                data_members(&mut m, binding, data)?;
                metadata
            }
            Part::Encoded { json, metadata } => {
                data_members(&mut m, binding, json)?;
                metadata
            }
            Part::File { file, metadata } => {
                file_members(&mut m, binding, file)?;
                metadata
            }
        };
        opt(&mut m, "metadata", metadata)?;
        m.end()
    }
}

/// A data part's members. 1.0 says `mediaType: application/json`, as the reference's
/// `new_data_part(…, media_type="application/json")` does.
fn data_members<M: SerializeMap, T: Serialize + ?Sized>(
    m: &mut M,
    binding: Binding,
    data: &T,
) -> Result<(), M::Error> {
    kind(m, binding, "data")?;
    m.serialize_entry("data", data)?;
    match binding {
        Binding::V03 => Ok(()),
        Binding::V10 => m.serialize_entry("mediaType", "application/json"),
    }
}

/// A file part's members: v0.3 nests the file (`FileWithBytes` or `FileWithUri`, 0.3 §6.6);
/// 1.0 puts `raw` or `url`, `filename` and `mediaType` in the part itself (1.0 §4.1.6).
fn file_members<M: SerializeMap>(m: &mut M, binding: Binding, f: &File) -> Result<(), M::Error> {
    match binding {
        Binding::V03 => {
            kind(m, binding, "file")?;
            m.serialize_entry("file", &V03File(f))
        }
        Binding::V10 => {
            if let Some(b) = &f.bytes {
                m.serialize_entry("raw", b)?;
            } else if let Some(u) = &f.uri {
                m.serialize_entry("url", u)?;
            }
            text(m, binding, "filename", f.name.as_deref())?;
            text(m, binding, "mediaType", f.media_type.as_deref())
        }
    }
}

/// A v0.3 part's `file` object.
struct V03File<'a>(&'a File);

impl Serialize for V03File<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let mut m = s.serialize_map(None)?;
        opt(&mut m, "bytes", &f.bytes)?;
        opt(&mut m, "uri", &f.uri)?;
        opt(&mut m, "mimeType", &f.media_type)?;
        opt(&mut m, "name", &f.name)?;
        m.end()
    }
}

impl Serialize for Json<'_, Message> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (binding, msg) = (self.0, self.1);
        let (context_id, task_id) = (msg.context_id.as_deref(), msg.task_id.as_deref());
        let mut m = s.serialize_map(None)?;
        kind(&mut m, binding, "message")?;
        m.serialize_entry("messageId", &msg.message_id)?;
        if binding == Binding::V10 {
            text(&mut m, binding, "contextId", context_id)?;
            text(&mut m, binding, "taskId", task_id)?;
        }
        m.serialize_entry("role", binding.role_name(msg.role))?;
        m.serialize_entry("parts", &Seq(binding, &msg.parts))?;
        match binding {
            Binding::V03 => {
                text(&mut m, binding, "contextId", context_id)?;
                text(&mut m, binding, "taskId", task_id)?;
                list(&mut m, "referenceTaskIds", &msg.reference_task_ids)?;
                list(&mut m, "extensions", &msg.extensions)?;
                opt(&mut m, "metadata", &msg.metadata)?;
            }
            Binding::V10 => {
                opt(&mut m, "metadata", &msg.metadata)?;
                list(&mut m, "extensions", &msg.extensions)?;
                list(&mut m, "referenceTaskIds", &msg.reference_task_ids)?;
            }
        }
        m.end()
    }
}

impl Serialize for Json<'_, Artifact> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (binding, a) = (self.0, self.1);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("artifactId", &a.artifact_id)?;
        text(&mut m, binding, "name", a.name.as_deref())?;
        text(&mut m, binding, "description", a.description.as_deref())?;
        m.serialize_entry("parts", &Seq(binding, &a.parts))?;
        opt(&mut m, "metadata", &a.metadata)?;
        m.end()
    }
}

impl Serialize for Json<'_, TaskStatus> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (binding, st) = (self.0, self.1);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("state", binding.state_name(st.state))?;
        if let Some(message) = &st.message {
            m.serialize_entry("message", &Json(binding, message))?;
        }
        text(&mut m, binding, "timestamp", st.timestamp.as_deref())?;
        m.end()
    }
}

impl Serialize for Json<'_, Task> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Json(self.0, &self.1.view(None, true)).serialize(s)
    }
}

impl Serialize for Json<'_, TaskView<'_>> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let binding = self.0;
        let TaskView {
            task: t,
            history,
            artifacts,
        } = *self.1;
        let mut m = s.serialize_map(None)?;
        kind(&mut m, binding, "task")?;
        m.serialize_entry("id", &t.id)?;
        text(&mut m, binding, "contextId", Some(&t.context_id))?;
        m.serialize_entry("status", &Json(binding, &t.status))?;
        if artifacts && !t.artifacts.is_empty() {
            m.serialize_entry("artifacts", &Seq(binding, &t.artifacts))?;
        }
        // `historyLength: 0` leaves the field out, as 1.0 §3.2.4 says it SHOULD.
        if !history.is_empty() {
            m.serialize_entry("history", &Seq(binding, history))?;
        }
        opt(&mut m, "metadata", &t.metadata)?;
        m.end()
    }
}

/// `TaskStatusUpdateEvent` (0.3 §7.2.2, 1.0 §4.2.1): v0.3 always writes `final`, as the 0.3
/// SDKs do; 1.0 has no such field (a 1.0 stream ends on a terminal or interrupted state).
impl Serialize for Json<'_, StatusUpdate> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (binding, u) = (self.0, self.1);
        let mut m = s.serialize_map(None)?;
        kind(&mut m, binding, "status-update")?;
        m.serialize_entry("taskId", &u.task_id)?;
        text(&mut m, binding, "contextId", Some(&u.context_id))?;
        m.serialize_entry("status", &Json(binding, &u.status))?;
        if binding == Binding::V03 {
            m.serialize_entry("final", &u.is_final)?;
        }
        opt(&mut m, "metadata", &u.metadata)?;
        m.end()
    }
}

/// `TaskArtifactUpdateEvent` (0.3 §7.2.3, 1.0 §4.2.2): `append` and `lastChunk` only when
/// true, as ProtoJSON leaves default values out.
impl Serialize for Json<'_, ArtifactUpdate> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (binding, u) = (self.0, self.1);
        let mut m = s.serialize_map(None)?;
        kind(&mut m, binding, "artifact-update")?;
        m.serialize_entry("taskId", &u.task_id)?;
        text(&mut m, binding, "contextId", Some(&u.context_id))?;
        m.serialize_entry("artifact", &Json(binding, &u.artifact))?;
        if u.append {
            m.serialize_entry("append", &true)?;
        }
        if u.last_chunk {
            m.serialize_entry("lastChunk", &true)?;
        }
        opt(&mut m, "metadata", &u.metadata)?;
        m.end()
    }
}

/// The `result` of a send: the task or message itself (v0.3), or `{"task": …}` /
/// `{"message": …}` (1.0 `SendMessageResponse`).
impl Serialize for Json<'_, SendResult> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let binding = self.0;
        match self.1 {
            SendResult::Task(t) => oneof(s, binding, "task", &Json(binding, t)),
            SendResult::Message(msg) => oneof(s, binding, "message", &Json(binding, msg)),
        }
    }
}

/// The `result` of one streamed response: the object itself, told apart by `kind` (v0.3), or
/// 1.0's `StreamResponse` (§3.2.3), a oneof of `task`, `message`, `statusUpdate`,
/// `artifactUpdate`.
impl Serialize for Json<'_, StreamEvent> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let binding = self.0;
        match self.1 {
            StreamEvent::Task(t) => oneof(s, binding, "task", &Json(binding, t)),
            StreamEvent::Message(msg) => oneof(s, binding, "message", &Json(binding, msg)),
            StreamEvent::Status(u) => oneof(s, binding, "statusUpdate", &Json(binding, u)),
            StreamEvent::Artifact(u) => oneof(s, binding, "artifactUpdate", &Json(binding, u)),
        }
    }
}

/// `ListTasksResponse` (A2A 1.0 §3.1.4, which alone has `ListTasks`): every field present,
/// `nextPageToken` empty on the last page.
impl Serialize for Json<'_, TaskPage> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.1;
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("tasks", &Seq(self.0, &p.tasks))?;
        m.serialize_entry("nextPageToken", &p.next_page_token)?;
        m.serialize_entry("pageSize", &p.page_size)?;
        m.serialize_entry("totalSize", &p.total_size)?;
        m.end()
    }
}

/// A model view as a JSON value.
fn to_value<T: Serialize>(v: T) -> Value {
    serde_json::to_value(v).expect("a model value always serialises")
}

/// A message as `binding`'s JSON.
pub(crate) fn encode_message(binding: Binding, m: &Message) -> Value {
    to_value(Json(binding, m))
}

/// A task as `binding`'s JSON (the `result` of `tasks/get`, `GetTask`).
pub(crate) fn encode_task(binding: Binding, t: &Task) -> Value {
    to_value(Json(binding, t))
}

/// The `result` of a send, as `binding` writes it.
pub(crate) fn encode_result(binding: Binding, r: &SendResult) -> Value {
    to_value(Json(binding, r))
}

/// A send's params as `binding`'s JSON, for a blocking call: a v0.3 send without a
/// configuration asks for `blocking: true` and JSON output; a 1.0 send leaves
/// `returnImmediately` false.
pub(crate) fn encode_send_params(binding: Binding, p: &SendParams) -> Value {
    let mut obj = json!({ "message": encode_message(binding, &p.message) });
    let configuration = match (&p.configuration, binding) {
        (Some(c), _) => Some(c.clone()),
        (None, Binding::V03) => {
            Some(json!({"blocking": true, "acceptedOutputModes": ["application/json"]}))
        }
        (None, Binding::V10) => None,
    };
    if let Some(c) = configuration {
        obj["configuration"] = c;
    }
    if let Some(m) = &p.metadata {
        obj["metadata"] = Value::Object(m.clone());
    }
    obj
}

// --- Reading ------------------------------------------------------------------------------------

/// A part, told apart as `binding` tells parts.
fn decode_part(binding: Binding, v: Value, at: &str) -> Result<Part, DecodeError> {
    match binding {
        Binding::V03 => super::v03::decode_part(v, at),
        Binding::V10 => super::v10::decode_part(v, at),
    }
}

/// Read a message.
pub(crate) fn decode_message(binding: Binding, v: Value, at: &str) -> Result<Message, DecodeError> {
    let mut m = Fields::of(binding, v, at)?;
    let role = m.enumerated(
        "role",
        |v| binding.role_from(v),
        || {
            let name = |r| binding.role_name(r);
            format!("{} or {}", name(Role::User), name(Role::Agent))
        },
    )?;
    Ok(Message {
        message_id: m.req_str("messageId", "message_id")?,
        role,
        parts: m.items(("parts", "parts"), decode_part)?,
        context_id: m.opt_str("contextId", "context_id"),
        task_id: m.opt_str("taskId", "task_id"),
        reference_task_ids: m.strings("referenceTaskIds", "reference_task_ids"),
        extensions: m.strings("extensions", "extensions"),
        metadata: m.metadata()?,
    })
}

/// Read a send's params (`message/send`, `SendMessage`, and their streaming twins).
pub(crate) fn decode_send_params(binding: Binding, v: Value) -> Result<SendParams, DecodeError> {
    let mut p = Fields::of(binding, v, "params")?;
    Ok(SendParams {
        message: p.required("message", "params.message", decode_message)?,
        configuration: p.take("configuration", "configuration"),
        metadata: p.metadata()?,
    })
}

fn decode_artifact(binding: Binding, v: Value, at: &str) -> Result<Artifact, DecodeError> {
    let mut a = Fields::of(binding, v, at)?;
    Ok(Artifact {
        // ProtoJSON has no required fields: a 1.0 artifact without an id has the empty one.
        artifact_id: match binding {
            Binding::V03 => a.req_str("artifactId", "artifactId")?,
            Binding::V10 => a.opt_str("artifactId", "artifact_id").unwrap_or_default(),
        },
        name: a.opt_str("name", "name"),
        description: a.opt_str("description", "description"),
        parts: a.items(("parts", "parts"), decode_part)?,
        metadata: a.metadata()?,
    })
}

fn decode_status(binding: Binding, v: Value, at: &str) -> Result<TaskStatus, DecodeError> {
    let mut s = Fields::of(binding, v, at)?;
    let state = s.enumerated(
        "state",
        |v| binding.state_from(v),
        || binding.pick("an A2A v0.3 state", "an A2A 1.0 state").into(),
    )?;
    let message = s.take("message", "message");
    Ok(TaskStatus {
        state,
        message: message
            .map(|m| decode_message(binding, m, &format!("{at}.message")))
            .transpose()?,
        timestamp: s.opt_str("timestamp", "timestamp"),
    })
}

/// Read a task (the `result` of `tasks/get`, `GetTask`, or inside a send's).
pub(crate) fn decode_task(binding: Binding, v: Value) -> Result<Task, DecodeError> {
    let mut t = Fields::of(binding, v, "task")?;
    let status = t.required("status", "task.status", decode_status)?;
    Ok(Task {
        id: t.req_str("id", "id")?,
        context_id: t.opt_str("contextId", "context_id").unwrap_or_default(),
        status,
        artifacts: t.items(("artifacts", "artifacts"), decode_artifact)?,
        history: t.items(("history", "history"), decode_message)?,
        metadata: t.metadata()?,
    })
}

/// Read the `result` of a send: v0.3's task or message, told by `kind` or by shape; 1.0's
/// `{"task": …}` or `{"message": …}`.
pub(crate) fn decode_result(binding: Binding, v: Value) -> Result<SendResult, DecodeError> {
    match binding {
        Binding::V03 => {
            let kind = v.get("kind").and_then(Value::as_str);
            if kind == Some("message")
                || (kind.is_none() && v.get("messageId").is_some() && v.get("status").is_none())
            {
                decode_message(binding, v, "result").map(SendResult::Message)
            } else {
                decode_task(binding, v).map(SendResult::Task)
            }
        }
        Binding::V10 => {
            let mut obj = Fields::of(binding, v, "result")?.obj;
            if let Some(t) = obj.remove("task") {
                decode_task(binding, t).map(SendResult::Task)
            } else if let Some(m) = obj.remove("message") {
                decode_message(binding, m, "result.message").map(SendResult::Message)
            } else {
                Err(DecodeError::new(
                    "the result",
                    "holds neither a task nor a message",
                ))
            }
        }
    }
}

/// Read the `result` of one streamed response: v0.3's object, by `kind`, else by shape (as
/// the 0.3.26 client reads it); 1.0's `StreamResponse`, exactly one of `task`, `message`,
/// `statusUpdate`, `artifactUpdate` (or their proto names).
pub(crate) fn decode_event(binding: Binding, v: Value) -> Result<StreamEvent, DecodeError> {
    // The event's kind and object, and the paths its errors name: the object's, and that of
    // the status or artifact in an update.
    let (kind, inner, at, member_at) = match binding {
        Binding::V03 => {
            let kind = super::v03::event_kind(&v)?;
            let member_at = match kind {
                "status-update" => "result.status",
                _ => "result.artifact",
            };
            (kind, v, "result", member_at)
        }
        Binding::V10 => super::v10::event_member(v)?,
    };
    match kind {
        "task" => decode_task(binding, inner).map(StreamEvent::Task),
        "message" => decode_message(binding, inner, at).map(StreamEvent::Message),
        "status-update" => {
            decode_status_update(binding, inner, (at, member_at)).map(StreamEvent::Status)
        }
        _ => decode_artifact_update(binding, inner, (at, member_at)).map(StreamEvent::Artifact),
    }
}

/// A status update. One without `final` is final if its state ends the stream (1.0 has no
/// `final`; an earlier draft's is read when it is true or false).
fn decode_status_update(
    binding: Binding,
    v: Value,
    (at, status_at): (&str, &str),
) -> Result<StatusUpdate, DecodeError> {
    let mut u = Fields::of(binding, v, at)?;
    let status = u.required("status", status_at, decode_status)?;
    let is_final = match (u.take("final", "final"), binding) {
        (Some(Value::Bool(b)), _) => b,
        (Some(v), Binding::V03) if !v.is_null() => {
            return Err(u.error("final", "must be true or false"));
        }
        _ => ends_stream(status.state),
    };
    Ok(StatusUpdate {
        task_id: u.req_str("taskId", "task_id")?,
        context_id: u.opt_str("contextId", "context_id").unwrap_or_default(),
        status,
        is_final,
        metadata: u.metadata()?,
    })
}

fn decode_artifact_update(
    binding: Binding,
    v: Value,
    (at, artifact_at): (&str, &str),
) -> Result<ArtifactUpdate, DecodeError> {
    let mut u = Fields::of(binding, v, at)?;
    let artifact = u.required("artifact", artifact_at, decode_artifact)?;
    Ok(ArtifactUpdate {
        task_id: u.req_str("taskId", "task_id")?,
        context_id: u.opt_str("contextId", "context_id").unwrap_or_default(),
        artifact,
        append: u.flag("append", "append")?,
        last_chunk: u.flag("lastChunk", "last_chunk")?,
        metadata: u.metadata()?,
    })
}

/// The task id of `tasks/get`, `tasks/cancel`, `tasks/resubscribe` params (`{"id": …}`) and of
/// their 1.0 twins, where older drafts named the task `tasks/<id>` in a `name` field.
pub(crate) fn decode_task_id(binding: Binding, v: &Value) -> Result<String, DecodeError> {
    let text = |k: &str| v.get(k).and_then(Value::as_str);
    let id = match binding {
        Binding::V03 => text("id"),
        Binding::V10 => {
            let given = |k: &str| text(k).filter(|s| !s.is_empty());
            given("id").or_else(|| given("name").map(|n| n.strip_prefix("tasks/").unwrap_or(n)))
        }
    };
    id.map(str::to_string)
        .ok_or_else(|| DecodeError::new("params.id", "is required"))
}

/// The `historyLength` of `tasks/get` / `GetTask` params (`None`: absent), checked.
pub(crate) fn decode_history_length(
    binding: Binding,
    v: &Value,
) -> Result<Option<usize>, A2aError> {
    let Value::Object(obj) = v else {
        return Ok(None);
    };
    count_param(
        get(binding, obj, "historyLength", "history_length"),
        "params.historyLength",
    )
}

/// What a send's `configuration` asks: to be answered at once (v0.3 `blocking: false`, as
/// a2a-sdk reads it: only a literal `false` is non-blocking; 1.0 `returnImmediately: true`,
/// or an earlier draft's `blocking: false`), and `historyLength`.
pub(crate) fn decode_send_options(
    binding: Binding,
    configuration: Option<&Value>,
) -> Result<SendOptions, A2aError> {
    let Some(config) = configuration.filter(|c| !c.is_null()) else {
        return Ok(SendOptions::default());
    };
    let Value::Object(obj) = config else {
        return Err(A2aError::invalid(
            "params.configuration",
            "must be an object",
        ));
    };
    let flag = |name: &str, proto: &str| match get(binding, obj, name, proto) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(A2aError::invalid(
            format!("params.configuration.{name}"),
            "must be true or false",
        )),
    };
    let immediately = match binding {
        Binding::V03 => None,
        Binding::V10 => flag("returnImmediately", "return_immediately")?,
    };
    let blocking = flag("blocking", "blocking")?;
    Ok(SendOptions {
        return_immediately: immediately.unwrap_or(blocking == Some(false)),
        history_length: count_param(
            get(binding, obj, "historyLength", "history_length"),
            "params.configuration.historyLength",
        )?,
    })
}

// --- The model's own ways in and out ----------------------------------------------------------
// Written here, beside the codec they call, so that the model and the stream events know
// nothing of their encodings.

impl Task {
    /// A task from its JSON as `binding` writes it (the `result` of a send that made one, or
    /// of `tasks/get` / `GetTask`).
    #[cfg(test)]
    pub(crate) fn from_json(json: Value, binding: Binding) -> Result<Task, crate::wire::WireError> {
        decode_task(binding, json).map_err(|reason| {
            crate::wire::WireError::protocol(None, format!("the task is outside A2A: {reason}"))
        })
    }
}

impl SendResult {
    /// The `result` member of a send's JSON-RPC response, as `binding` writes it.
    pub(crate) fn to_json(&self, binding: Binding) -> Value {
        encode_result(binding, self)
    }
}

impl StreamEvent {
    /// The event as the `result` of a JSON-RPC response in `binding`, as JSON text.
    pub(crate) fn to_json_text(&self, binding: Binding) -> String {
        serde_json::to_string(&Json(binding, self)).expect("a model value always serialises")
    }

    /// The event as a JSON value (see [`StreamEvent::to_json_text`]).
    #[cfg(test)]
    pub(crate) fn to_json(&self, binding: Binding) -> Value {
        serde_json::from_str(&self.to_json_text(binding)).expect("an event is written as JSON")
    }

    /// Read the `result` of one streamed response as `binding` writes it.
    pub(crate) fn from_json(v: Value, binding: Binding) -> Result<StreamEvent, DecodeError> {
        decode_event(binding, v)
    }
}
