//! The A2A 1.0 JSON-RPC binding, as a2a-sdk 1.x speaks it: methods `SendMessage`, `GetTask`,
//! `CancelTask`; objects in ProtoJSON (camelCase, no `kind`, a part is a oneof of `text`,
//! `raw`, `url`, `data`); enums `ROLE_USER`, `TASK_STATE_COMPLETED`; the send result wrapped
//! as `{"task": …}` or `{"message": …}`; the version in the `A2A-Version` header.
//!
//! Reading follows `ParseDict(…, ignore_unknown_fields=True)`: unknown fields are ignored and
//! both the JSON (camelCase) and proto (snake_case) field names are accepted. Writing follows
//! `MessageToDict`: camelCase, empty fields left out.

use super::error::{A2aError, DecodeError};
use super::model::{
    Artifact, File, Message, Part, Role, SendOptions, SendParams, SendResult, Task, TaskState,
    TaskStatus, TaskView,
};
use super::stream::{ArtifactUpdate, StatusUpdate, StreamEvent, ends_stream};
use super::tasks::{DEFAULT_PAGE_SIZE, ListQuery, MAX_PAGE_SIZE, TaskPage};
use super::{count_param, list, object, strings, to_value};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};

pub(crate) const SEND: &str = "SendMessage";
pub(crate) const STREAM: &str = "SendStreamingMessage";
pub(crate) const GET_TASK: &str = "GetTask";
pub(crate) const CANCEL_TASK: &str = "CancelTask";
pub(crate) const LIST_TASKS: &str = "ListTasks";
pub(crate) const SUBSCRIBE: &str = "SubscribeToTask";
/// Every 1.0 method name, as the a2a-sdk 1.x dispatcher spells them.
pub(crate) const METHODS: &[&str] = &[
    SEND,
    STREAM,
    GET_TASK,
    LIST_TASKS,
    CANCEL_TASK,
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    SUBSCRIBE,
    "GetExtendedAgentCard",
];

/// The protocol version this binding speaks.
pub(crate) const PROTOCOL_VERSION: &str = "1.0";

const STATES: [(TaskState, &str, i64); 9] = [
    (TaskState::Submitted, "TASK_STATE_SUBMITTED", 1),
    (TaskState::Working, "TASK_STATE_WORKING", 2),
    (TaskState::Completed, "TASK_STATE_COMPLETED", 3),
    (TaskState::Failed, "TASK_STATE_FAILED", 4),
    (TaskState::Canceled, "TASK_STATE_CANCELED", 5),
    (TaskState::InputRequired, "TASK_STATE_INPUT_REQUIRED", 6),
    (TaskState::Rejected, "TASK_STATE_REJECTED", 7),
    (TaskState::AuthRequired, "TASK_STATE_AUTH_REQUIRED", 8),
    (TaskState::Unknown, "TASK_STATE_UNSPECIFIED", 0),
];

/// The ProtoJSON name of a task state (`TASK_STATE_COMPLETED`, ...).
pub(crate) fn state_name(s: TaskState) -> &'static str {
    STATES
        .iter()
        .find(|(st, _, _)| *st == s)
        .map(|(_, n, _)| *n)
        .unwrap_or("TASK_STATE_UNSPECIFIED")
}

/// A state by name, or by number (ProtoJSON accepts enum numbers too).
pub(crate) fn state_from(v: &Value) -> Option<TaskState> {
    STATES
        .iter()
        .find(|(_, name, num)| v.as_str() == Some(name) || v.as_i64() == Some(*num))
        .map(|(st, _, _)| *st)
}

/// A model value written as ProtoJSON, straight to the output (no intermediate tree). Empty
/// strings and lists are left out, as `MessageToDict` does.
pub(crate) struct Json<'a, T>(pub &'a T);

impl Serialize for Json<'_, Part> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        let metadata = match self.0 {
            Part::Text { text, metadata } => {
                m.serialize_entry("text", text)?;
                metadata
            }
            // Data parts say `mediaType: application/json`, as the reference's
            // `new_data_part(…, media_type="application/json")` does.
            Part::Data { data, metadata } => {
                m.serialize_entry("data", data)?;
                m.serialize_entry("mediaType", "application/json")?;
                metadata
            }
            Part::Encoded { json, metadata } => {
                m.serialize_entry("data", json)?;
                m.serialize_entry("mediaType", "application/json")?;
                metadata
            }
            Part::File { file, metadata } => {
                if let Some(b) = &file.bytes {
                    m.serialize_entry("raw", b)?;
                } else if let Some(u) = &file.uri {
                    m.serialize_entry("url", u)?;
                }
                text(&mut m, "filename", &file.name)?;
                text(&mut m, "mediaType", &file.media_type)?;
                metadata
            }
        };
        if let Some(meta) = metadata {
            m.serialize_entry("metadata", meta)?;
        }
        m.end()
    }
}

impl Serialize for Json<'_, Message> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let msg = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("messageId", &msg.message_id)?;
        text(&mut m, "contextId", &msg.context_id)?;
        text(&mut m, "taskId", &msg.task_id)?;
        m.serialize_entry(
            "role",
            if msg.role == Role::User {
                "ROLE_USER"
            } else {
                "ROLE_AGENT"
            },
        )?;
        m.serialize_entry("parts", &Seq(&msg.parts))?;
        if let Some(meta) = &msg.metadata {
            m.serialize_entry("metadata", meta)?;
        }
        list(&mut m, "extensions", &msg.extensions)?;
        list(&mut m, "referenceTaskIds", &msg.reference_task_ids)?;
        m.end()
    }
}

impl Serialize for Json<'_, Artifact> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("artifactId", &a.artifact_id)?;
        text(&mut m, "name", &a.name)?;
        text(&mut m, "description", &a.description)?;
        m.serialize_entry("parts", &Seq(&a.parts))?;
        if let Some(meta) = &a.metadata {
            m.serialize_entry("metadata", meta)?;
        }
        m.end()
    }
}

impl Serialize for Json<'_, TaskStatus> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let st = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("state", state_name(st.state))?;
        if let Some(message) = &st.message {
            m.serialize_entry("message", &Json(message))?;
        }
        text(&mut m, "timestamp", &st.timestamp)?;
        m.end()
    }
}

impl Serialize for Json<'_, Task> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Json(&self.0.view(None, true)).serialize(s)
    }
}

impl Serialize for Json<'_, TaskView<'_>> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let TaskView {
            task: t,
            history,
            artifacts,
        } = *self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &t.id)?;
        if !t.context_id.is_empty() {
            m.serialize_entry("contextId", &t.context_id)?;
        }
        m.serialize_entry("status", &Json(&t.status))?;
        if artifacts && !t.artifacts.is_empty() {
            m.serialize_entry("artifacts", &Seq(&t.artifacts))?;
        }
        // `historyLength: 0` leaves the field out, as 1.0 §3.2.4 says it SHOULD.
        if !history.is_empty() {
            m.serialize_entry("history", &Seq(history))?;
        }
        if let Some(meta) = &t.metadata {
            m.serialize_entry("metadata", meta)?;
        }
        m.end()
    }
}

/// `ListTasksResponse` (A2A 1.0 §3.1.4): every field present, `nextPageToken` empty on the
/// last page.
impl Serialize for Json<'_, TaskPage> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("tasks", &Seq(&p.tasks))?;
        m.serialize_entry("nextPageToken", &p.next_page_token)?;
        m.serialize_entry("pageSize", &p.page_size)?;
        m.serialize_entry("totalSize", &p.total_size)?;
        m.end()
    }
}

/// `{"task": …}`, the `SendMessage` result wrapper.
pub(crate) struct TaskResult<'a>(pub &'a Task);

impl Serialize for TaskResult<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("task", &Json(self.0))?;
        m.end()
    }
}

/// `TaskStatusUpdateEvent` (1.0 §4.2.1): no `final` (1.0 ends a stream on a terminal or
/// interrupted state).
impl Serialize for Json<'_, StatusUpdate> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let u = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("taskId", &u.task_id)?;
        if !u.context_id.is_empty() {
            m.serialize_entry("contextId", &u.context_id)?;
        }
        m.serialize_entry("status", &Json(&u.status))?;
        if let Some(meta) = &u.metadata {
            m.serialize_entry("metadata", meta)?;
        }
        m.end()
    }
}

/// `TaskArtifactUpdateEvent` (1.0 §4.2.2): `append` and `lastChunk` only when true, as
/// ProtoJSON leaves default values out.
impl Serialize for Json<'_, ArtifactUpdate> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let u = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("taskId", &u.task_id)?;
        if !u.context_id.is_empty() {
            m.serialize_entry("contextId", &u.context_id)?;
        }
        m.serialize_entry("artifact", &Json(&u.artifact))?;
        if u.append {
            m.serialize_entry("append", &true)?;
        }
        if u.last_chunk {
            m.serialize_entry("lastChunk", &true)?;
        }
        if let Some(meta) = &u.metadata {
            m.serialize_entry("metadata", meta)?;
        }
        m.end()
    }
}

/// `StreamResponse` (1.0 §3.2.3): a oneof of `task`, `message`, `statusUpdate`,
/// `artifactUpdate`.
#[allow(dead_code)] // see `super::stream`
struct EventResult<'a>(&'a StreamEvent);

impl Serialize for EventResult<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        match self.0 {
            StreamEvent::Task(t) => m.serialize_entry("task", &Json(t))?,
            StreamEvent::Message(msg) => m.serialize_entry("message", &Json(msg))?,
            StreamEvent::Status(u) => m.serialize_entry("statusUpdate", &Json(u))?,
            StreamEvent::Artifact(u) => m.serialize_entry("artifactUpdate", &Json(u))?,
        }
        m.end()
    }
}

/// A slice of model values, each as ProtoJSON.
struct Seq<'a, T>(&'a [T]);

impl<'a, T> Serialize for Seq<'a, T>
where
    Json<'a, T>: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Json))
    }
}

/// A string field, left out when absent or empty (proto3 has no presence for strings).
fn text<M: SerializeMap>(m: &mut M, key: &str, v: &Option<String>) -> Result<(), M::Error> {
    match v.as_deref() {
        Some(s) if !s.is_empty() => m.serialize_entry(key, s),
        _ => Ok(()),
    }
}

/// A message as ProtoJSON.
pub(crate) fn encode_message(m: &Message) -> Value {
    to_value(Json(m))
}

/// The `result` of `SendMessage`: `{"task": …}` or `{"message": …}`.
pub(crate) fn encode_result(r: &SendResult) -> Value {
    match r {
        SendResult::Task(t) => to_value(TaskResult(t)),
        SendResult::Message(m) => json!({ "message": encode_message(m) }),
    }
}

/// A stream event as the `result` of a 1.0 streamed response (`StreamResponse`), as JSON
/// text.
#[allow(dead_code)] // see `super::stream`
pub(crate) fn encode_event(e: &StreamEvent) -> String {
    serde_json::to_string(&EventResult(e)).expect("a model value always serialises")
}

/// `SendMessage` params as ProtoJSON (a blocking call: `returnImmediately` left false).
pub(crate) fn encode_send_params(p: &SendParams) -> Value {
    let mut obj = json!({ "message": encode_message(&p.message) });
    if let Some(c) = &p.configuration {
        obj["configuration"] = c.clone();
    }
    if let Some(m) = &p.metadata {
        obj["metadata"] = Value::Object(m.clone());
    }
    obj
}

/// Take a field by its JSON name or its proto name (`null` counts as absent).
fn take(obj: &mut Map<String, Value>, camel: &str, snake: &str) -> Option<Value> {
    obj.remove(camel)
        .or_else(|| obj.remove(snake))
        .filter(|v| !v.is_null())
}

fn str_of(obj: &mut Map<String, Value>, camel: &str, snake: &str) -> Option<String> {
    match take(obj, camel, snake) {
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

fn meta_of(
    obj: &mut Map<String, Value>,
    at: &str,
) -> Result<Option<Map<String, Value>>, DecodeError> {
    match take(obj, "metadata", "metadata") {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(DecodeError::new(
            format!("{at}.metadata"),
            "must be an object",
        )),
    }
}

fn list_of(obj: &mut Map<String, Value>, camel: &str, snake: &str) -> Vec<String> {
    strings(take(obj, camel, snake))
}

fn values_of(obj: &mut Map<String, Value>, camel: &str, snake: &str) -> Vec<Value> {
    match take(obj, camel, snake) {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    }
}

fn parts(obj: &mut Map<String, Value>, at: &str) -> Result<Vec<Part>, DecodeError> {
    values_of(obj, "parts", "parts")
        .into_iter()
        .enumerate()
        .map(|(i, p)| decode_part(p, &format!("{at}.parts[{i}]")))
        .collect()
}

/// Read a ProtoJSON part: exactly one of `text`, `raw`, `url`, `data`.
pub(crate) fn decode_part(v: Value, at: &str) -> Result<Part, DecodeError> {
    let mut obj = object(v, at)?;
    let metadata = meta_of(&mut obj, at)?;
    let media_type = str_of(&mut obj, "mediaType", "media_type");
    let present: Vec<&str> = ["text", "raw", "url", "data"]
        .into_iter()
        .filter(|k| obj.contains_key(*k))
        .collect();
    match present.as_slice() {
        ["text"] => match obj.remove("text") {
            Some(Value::String(text)) => Ok(Part::Text { text, metadata }),
            _ => Err(DecodeError::new(format!("{at}.text"), "must be a string")),
        },
        ["data"] => Ok(Part::Data {
            data: obj.remove("data").unwrap_or(Value::Null),
            metadata,
        }),
        [k @ ("raw" | "url")] => {
            let Some(Value::String(s)) = obj.remove(*k) else {
                return Err(DecodeError::new(format!("{at}.{k}"), "must be a string"));
            };
            let (bytes, uri) = if *k == "raw" {
                (Some(s), None)
            } else {
                (None, Some(s))
            };
            let name = str_of(&mut obj, "filename", "filename");
            Ok(Part::File {
                file: File {
                    bytes,
                    uri,
                    name,
                    media_type,
                },
                metadata,
            })
        }
        [] => Err(DecodeError::new(at, "has none of text, raw, url, data")),
        _ => Err(DecodeError::new(
            at,
            "has more than one of text, raw, url, data",
        )),
    }
}

/// Read a ProtoJSON message.
pub(crate) fn decode_message(v: Value, at: &str) -> Result<Message, DecodeError> {
    let mut obj = object(v, at)?;
    let role = match take(&mut obj, "role", "role") {
        Some(r) if r.as_str() == Some("ROLE_USER") || r.as_i64() == Some(1) => Role::User,
        Some(r) if r.as_str() == Some("ROLE_AGENT") || r.as_i64() == Some(2) => Role::Agent,
        Some(r) => {
            return Err(DecodeError::new(
                format!("{at}.role"),
                format!("{r} is not ROLE_USER or ROLE_AGENT"),
            ));
        }
        None => return Err(DecodeError::new(format!("{at}.role"), "is required")),
    };
    Ok(Message {
        message_id: str_of(&mut obj, "messageId", "message_id")
            .ok_or_else(|| DecodeError::new(format!("{at}.messageId"), "is required"))?,
        role,
        parts: parts(&mut obj, at)?,
        context_id: str_of(&mut obj, "contextId", "context_id"),
        task_id: str_of(&mut obj, "taskId", "task_id"),
        reference_task_ids: list_of(&mut obj, "referenceTaskIds", "reference_task_ids"),
        extensions: list_of(&mut obj, "extensions", "extensions"),
        metadata: meta_of(&mut obj, at)?,
    })
}

/// Read `SendMessage` params.
pub(crate) fn decode_send_params(v: Value) -> Result<SendParams, DecodeError> {
    let mut obj = object(v, "params")?;
    let message = decode_message(
        take(&mut obj, "message", "message")
            .ok_or_else(|| DecodeError::new("params.message", "is required"))?,
        "params.message",
    )?;
    Ok(SendParams {
        message,
        configuration: take(&mut obj, "configuration", "configuration"),
        metadata: meta_of(&mut obj, "params")?,
    })
}

fn decode_artifact(v: Value, at: &str) -> Result<Artifact, DecodeError> {
    let mut obj = object(v, at)?;
    Ok(Artifact {
        artifact_id: str_of(&mut obj, "artifactId", "artifact_id").unwrap_or_default(),
        name: str_of(&mut obj, "name", "name"),
        description: str_of(&mut obj, "description", "description"),
        parts: parts(&mut obj, at)?,
        metadata: meta_of(&mut obj, at)?,
    })
}

/// Read a ProtoJSON task status.
fn decode_status(v: Value, at: &str) -> Result<TaskStatus, DecodeError> {
    let Value::Object(mut status) = v else {
        return Err(DecodeError::new(at, "must be an object"));
    };
    let state_value = take(&mut status, "state", "state")
        .ok_or_else(|| DecodeError::new(format!("{at}.state"), "is required"))?;
    let state = state_from(&state_value).ok_or_else(|| {
        DecodeError::new(
            format!("{at}.state"),
            format!("{state_value} is not an A2A 1.0 state"),
        )
    })?;
    let message = take(&mut status, "message", "message")
        .map(|m| decode_message(m, &format!("{at}.message")))
        .transpose()?;
    Ok(TaskStatus {
        state,
        message,
        timestamp: str_of(&mut status, "timestamp", "timestamp"),
    })
}

/// Read a ProtoJSON task.
pub(crate) fn decode_task(v: Value) -> Result<Task, DecodeError> {
    let mut obj = object(v, "task")?;
    let status = match take(&mut obj, "status", "status") {
        Some(s) => decode_status(s, "task.status")?,
        None => return Err(DecodeError::new("task.status", "is required")),
    };
    Ok(Task {
        id: str_of(&mut obj, "id", "id")
            .ok_or_else(|| DecodeError::new("task.id", "is required"))?,
        context_id: str_of(&mut obj, "contextId", "context_id").unwrap_or_default(),
        status,
        artifacts: values_of(&mut obj, "artifacts", "artifacts")
            .into_iter()
            .enumerate()
            .map(|(i, a)| decode_artifact(a, &format!("task.artifacts[{i}]")))
            .collect::<Result<_, _>>()?,
        history: values_of(&mut obj, "history", "history")
            .into_iter()
            .enumerate()
            .map(|(i, m)| decode_message(m, &format!("task.history[{i}]")))
            .collect::<Result<_, _>>()?,
        metadata: meta_of(&mut obj, "task")?,
    })
}

/// Read the `result` of `SendMessage`.
pub(crate) fn decode_result(v: Value) -> Result<SendResult, DecodeError> {
    let mut obj = object(v, "result")?;
    if let Some(t) = obj.remove("task") {
        decode_task(t).map(SendResult::Task)
    } else if let Some(m) = obj.remove("message") {
        decode_message(m, "result.message").map(SendResult::Message)
    } else {
        Err(DecodeError::new(
            "the result",
            "holds neither a task nor a message",
        ))
    }
}

/// Read the `result` of one 1.0 streamed response (`StreamResponse`): exactly one of `task`,
/// `message`, `statusUpdate`, `artifactUpdate` (or their proto names). A status update is final
/// when its state ends the stream (an earlier draft's `final` field is read when present).
#[allow(dead_code)] // see `super::stream`
pub(crate) fn decode_event(v: Value) -> Result<StreamEvent, DecodeError> {
    let mut obj = object(v, "result")?;
    let present: Vec<&str> = [
        "task",
        "message",
        "statusUpdate",
        "status_update",
        "artifactUpdate",
        "artifact_update",
    ]
    .into_iter()
    .filter(|k| obj.get(*k).is_some_and(|v| !v.is_null()))
    .collect();
    let key = match present.as_slice() {
        [one] => *one,
        [] => {
            return Err(DecodeError::new(
                "result",
                "holds none of task, message, statusUpdate, artifactUpdate",
            ));
        }
        _ => {
            return Err(DecodeError::new(
                "result",
                "holds more than one of task, message, statusUpdate, artifactUpdate",
            ));
        }
    };
    let inner = obj.remove(key).unwrap_or(Value::Null);
    match key {
        "task" => decode_task(inner).map(StreamEvent::Task),
        "message" => decode_message(inner, "result.message").map(StreamEvent::Message),
        "statusUpdate" | "status_update" => {
            let at = "result.statusUpdate";
            let mut u = object(inner, at)?;
            let status = match take(&mut u, "status", "status") {
                Some(s) => decode_status(s, &format!("{at}.status"))?,
                None => return Err(DecodeError::new(format!("{at}.status"), "is required")),
            };
            let is_final = match take(&mut u, "final", "final") {
                Some(Value::Bool(b)) => b,
                _ => ends_stream(status.state),
            };
            Ok(StreamEvent::Status(StatusUpdate {
                task_id: str_of(&mut u, "taskId", "task_id")
                    .ok_or_else(|| DecodeError::new(format!("{at}.taskId"), "is required"))?,
                context_id: str_of(&mut u, "contextId", "context_id").unwrap_or_default(),
                status,
                is_final,
                metadata: meta_of(&mut u, at)?,
            }))
        }
        _ => {
            let at = "result.artifactUpdate";
            let mut u = object(inner, at)?;
            let artifact = match take(&mut u, "artifact", "artifact") {
                Some(a) => decode_artifact(a, &format!("{at}.artifact"))?,
                None => return Err(DecodeError::new(format!("{at}.artifact"), "is required")),
            };
            let flag = |v: Option<Value>, field: &str| match v {
                None => Ok(false),
                Some(Value::Bool(b)) => Ok(b),
                Some(_) => Err(DecodeError::new(
                    format!("{at}.{field}"),
                    "must be true or false",
                )),
            };
            Ok(StreamEvent::Artifact(ArtifactUpdate {
                task_id: str_of(&mut u, "taskId", "task_id")
                    .ok_or_else(|| DecodeError::new(format!("{at}.taskId"), "is required"))?,
                context_id: str_of(&mut u, "contextId", "context_id").unwrap_or_default(),
                artifact,
                append: flag(take(&mut u, "append", "append"), "append")?,
                last_chunk: flag(take(&mut u, "lastChunk", "last_chunk"), "lastChunk")?,
                metadata: meta_of(&mut u, at)?,
            }))
        }
    }
}

/// The task id of `GetTask` / `CancelTask` params.
pub(crate) fn decode_task_id(v: &Value) -> Result<String, DecodeError> {
    // Older drafts named the task `tasks/<id>` in a `name` field.
    let text = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    text("id")
        .or_else(|| text("name").map(|n| n.strip_prefix("tasks/").unwrap_or(&n).to_string()))
        .ok_or_else(|| DecodeError::new("params.id", "is required"))
}

/// The `historyLength` of `GetTask` params (`None`: absent), checked.
pub(crate) fn decode_history_length(v: &Value) -> Result<Option<usize>, A2aError> {
    let Value::Object(obj) = v else {
        return Ok(None);
    };
    let found = obj
        .get("historyLength")
        .or_else(|| obj.get("history_length"));
    count_param(found, "params.historyLength")
}

/// What a `SendMessage`'s `configuration` asks (`returnImmediately`, `historyLength`; an
/// earlier draft's `blocking: false` is read as `returnImmediately: true`).
pub(crate) fn decode_send_options(configuration: Option<&Value>) -> Result<SendOptions, A2aError> {
    let Some(config) = configuration.filter(|c| !c.is_null()) else {
        return Ok(SendOptions::default());
    };
    let Value::Object(obj) = config else {
        return Err(A2aError::invalid(
            "params.configuration",
            "must be an object",
        ));
    };
    let field = |camel: &str, snake: &str| {
        obj.get(camel)
            .or_else(|| obj.get(snake))
            .filter(|v| !v.is_null())
    };
    let flag = |v: Option<&Value>, at: &str| match v {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(A2aError::invalid(at, "must be true or false")),
    };
    let immediately = flag(
        field("returnImmediately", "return_immediately"),
        "params.configuration.returnImmediately",
    )?;
    let blocking = flag(
        field("blocking", "blocking"),
        "params.configuration.blocking",
    )?;
    Ok(SendOptions {
        return_immediately: immediately.unwrap_or(blocking == Some(false)),
        history_length: count_param(
            field("historyLength", "history_length"),
            "params.configuration.historyLength",
        )?,
    })
}

/// Read and check `ListTasks` params (A2A 1.0 §3.1.4, `ListTasksRequest`): `contextId`,
/// `status` (a state name or number; an unknown one is refused rather than ignored),
/// `pageSize` (1 to 100, default 50), `pageToken`, `historyLength` (not negative),
/// `statusTimestampAfter` (RFC 3339 with a zone), `includeArtifacts`. Both the JSON and the
/// proto field names are read; `tenant` and unknown fields are ignored.
pub(crate) fn decode_list_params(v: &Value) -> Result<ListQuery, A2aError> {
    let obj = match v {
        Value::Null => return Ok(ListQuery::default()),
        Value::Object(obj) => obj,
        _ => return Err(A2aError::invalid("params", "must be an object")),
    };
    let field = |camel: &str, snake: &str| {
        obj.get(camel)
            .or_else(|| obj.get(snake))
            .filter(|v| !v.is_null())
    };
    let text = |camel: &str, snake: &str| -> Result<Option<String>, A2aError> {
        match field(camel, snake) {
            None => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(A2aError::invalid(
                format!("params.{camel}"),
                "must be a string",
            )),
        }
    };
    let status = match field("status", "status") {
        None => None,
        Some(v) => match state_from(v) {
            // The proto default means "no filter".
            Some(TaskState::Unknown) => None,
            Some(state) => Some(state),
            None => {
                return Err(A2aError::invalid(
                    "params.status",
                    format!(
                        "{v} is not a task state (TASK_STATE_SUBMITTED, TASK_STATE_WORKING, …)"
                    ),
                ));
            }
        },
    };
    let page_size = match count_param(field("pageSize", "page_size"), "params.pageSize")? {
        None => DEFAULT_PAGE_SIZE,
        Some(n) if (1..=MAX_PAGE_SIZE).contains(&n) => n,
        Some(n) => {
            return Err(A2aError::invalid(
                "params.pageSize",
                format!("must be from 1 to {MAX_PAGE_SIZE}, got {n}"),
            ));
        }
    };
    let status_timestamp_after = match text("statusTimestampAfter", "status_timestamp_after")? {
        None => None,
        Some(t) => Some(crate::time::parse_rfc3339(&t).ok_or_else(|| {
            A2aError::invalid(
                "params.statusTimestampAfter",
                format!("{t:?} is not an RFC 3339 time with a zone (2026-01-02T03:04:05Z)"),
            )
        })?),
    };
    let include_artifacts = match field("includeArtifacts", "include_artifacts") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(A2aError::invalid(
                "params.includeArtifacts",
                "must be true or false",
            ));
        }
    };
    Ok(ListQuery {
        context_id: text("contextId", "context_id")?,
        status,
        page_size,
        page_token: text("pageToken", "page_token")?,
        history_length: count_param(
            field("historyLength", "history_length"),
            "params.historyLength",
        )?,
        status_timestamp_after,
        include_artifacts,
    })
}
