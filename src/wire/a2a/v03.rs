//! The A2A v0.3 JSON-RPC binding (A2A specification 0.3.0 §6–7, as a2a-sdk 0.3.26 speaks it):
//! methods `message/send`, `tasks/get`, `tasks/cancel`; every object carries a `kind`
//! discriminator; roles and task states are lower-case.
//!
//! Reading is as lenient as the 0.3.26 server (a missing `kind` is told by shape); writing
//! always sends `kind`, since other peers discriminate on it.

use super::error::{A2aError, DecodeError};
use super::model::{
    Artifact, File, Message, Part, Role, SendOptions, SendParams, SendResult, Task, TaskState,
    TaskStatus, TaskView,
};
use super::stream::{ArtifactUpdate, StatusUpdate, StreamEvent, ends_stream};
use super::{count_param, list, object, strings, to_value};
use crate::json::Obj;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};

pub(crate) const SEND: &str = "message/send";
pub(crate) const STREAM: &str = "message/stream";
pub(crate) const GET_TASK: &str = "tasks/get";
pub(crate) const CANCEL_TASK: &str = "tasks/cancel";
pub(crate) const RESUBSCRIBE: &str = "tasks/resubscribe";
/// Every v0.3 method name, for telling the binding of a request by its method.
pub(crate) const METHODS: &[&str] = &[
    SEND,
    STREAM,
    GET_TASK,
    CANCEL_TASK,
    RESUBSCRIBE,
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
];

fn state_name(s: TaskState) -> &'static str {
    match s {
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::InputRequired => "input-required",
        TaskState::Completed => "completed",
        TaskState::Canceled => "canceled",
        TaskState::Failed => "failed",
        TaskState::Rejected => "rejected",
        TaskState::AuthRequired => "auth-required",
        TaskState::Unknown => "unknown",
    }
}

fn state_from(s: &str) -> Option<TaskState> {
    [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::Completed,
        TaskState::Canceled,
        TaskState::Failed,
        TaskState::Rejected,
        TaskState::AuthRequired,
        TaskState::Unknown,
    ]
    .into_iter()
    .find(|st| state_name(*st) == s)
}

/// A model value written as v0.3 JSON, straight to the output (no intermediate tree).
pub(crate) struct Json<'a, T>(pub &'a T);

impl Serialize for Json<'_, Part> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        let metadata = match self.0 {
            Part::Text { text, metadata } => {
                m.serialize_entry("kind", "text")?;
                m.serialize_entry("text", text)?;
                metadata
            }
            Part::Data { data, metadata } => {
                m.serialize_entry("kind", "data")?;
                m.serialize_entry("data", data)?;
                metadata
            }
            Part::Encoded { json, metadata } => {
                m.serialize_entry("kind", "data")?;
                m.serialize_entry("data", json)?;
                metadata
            }
            Part::File { file, metadata } => {
                m.serialize_entry("kind", "file")?;
                m.serialize_entry("file", &V03File(file))?;
                metadata
            }
        };
        opt(&mut m, "metadata", metadata)?;
        m.end()
    }
}

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
        let msg = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("kind", "message")?;
        m.serialize_entry("messageId", &msg.message_id)?;
        m.serialize_entry(
            "role",
            if msg.role == Role::User {
                "user"
            } else {
                "agent"
            },
        )?;
        m.serialize_entry("parts", &Seq(&msg.parts))?;
        opt(&mut m, "contextId", &msg.context_id)?;
        opt(&mut m, "taskId", &msg.task_id)?;
        list(&mut m, "referenceTaskIds", &msg.reference_task_ids)?;
        list(&mut m, "extensions", &msg.extensions)?;
        opt(&mut m, "metadata", &msg.metadata)?;
        m.end()
    }
}

impl Serialize for Json<'_, Artifact> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("artifactId", &a.artifact_id)?;
        opt(&mut m, "name", &a.name)?;
        opt(&mut m, "description", &a.description)?;
        m.serialize_entry("parts", &Seq(&a.parts))?;
        opt(&mut m, "metadata", &a.metadata)?;
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
        opt(&mut m, "timestamp", &st.timestamp)?;
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
        m.serialize_entry("kind", "task")?;
        m.serialize_entry("id", &t.id)?;
        m.serialize_entry("contextId", &t.context_id)?;
        m.serialize_entry("status", &Json(&t.status))?;
        if artifacts && !t.artifacts.is_empty() {
            m.serialize_entry("artifacts", &Seq(&t.artifacts))?;
        }
        if !history.is_empty() {
            m.serialize_entry("history", &Seq(history))?;
        }
        opt(&mut m, "metadata", &t.metadata)?;
        m.end()
    }
}

/// `TaskStatusUpdateEvent` (0.3 §7.2.2): `final` is always written, as the 0.3 SDKs do.
impl Serialize for Json<'_, StatusUpdate> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let u = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("kind", "status-update")?;
        m.serialize_entry("taskId", &u.task_id)?;
        m.serialize_entry("contextId", &u.context_id)?;
        m.serialize_entry("status", &Json(&u.status))?;
        m.serialize_entry("final", &u.is_final)?;
        opt(&mut m, "metadata", &u.metadata)?;
        m.end()
    }
}

/// `TaskArtifactUpdateEvent` (0.3 §7.2.3): `append` and `lastChunk` only when true.
impl Serialize for Json<'_, ArtifactUpdate> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let u = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("kind", "artifact-update")?;
        m.serialize_entry("taskId", &u.task_id)?;
        m.serialize_entry("contextId", &u.context_id)?;
        m.serialize_entry("artifact", &Json(&u.artifact))?;
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

/// A slice of model values, each as v0.3 JSON.
struct Seq<'a, T>(&'a [T]);

impl<'a, T> Serialize for Seq<'a, T>
where
    Json<'a, T>: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Json))
    }
}

fn opt<M: SerializeMap, T: Serialize>(m: &mut M, key: &str, v: &Option<T>) -> Result<(), M::Error> {
    match v {
        Some(v) => m.serialize_entry(key, v),
        None => Ok(()),
    }
}

/// A message as v0.3 JSON.
pub(crate) fn encode_message(m: &Message) -> Value {
    to_value(Json(m))
}

/// A task as v0.3 JSON.
pub(crate) fn encode_task(t: &Task) -> Value {
    to_value(Json(t))
}

/// The `result` of `message/send`: the task or message itself.
pub(crate) fn encode_result(r: &SendResult) -> Value {
    match r {
        SendResult::Task(t) => encode_task(t),
        SendResult::Message(m) => encode_message(m),
    }
}

/// A stream event as the `result` of a v0.3 streamed response, as JSON text: the object
/// itself, told apart by `kind`.
#[allow(dead_code)] // see `super::stream`
pub(crate) fn encode_event(e: &StreamEvent) -> String {
    let text = match e {
        StreamEvent::Task(t) => serde_json::to_string(&Json(t)),
        StreamEvent::Message(m) => serde_json::to_string(&Json(m)),
        StreamEvent::Status(u) => serde_json::to_string(&Json(u)),
        StreamEvent::Artifact(u) => serde_json::to_string(&Json(u)),
    };
    text.expect("a model value always serialises")
}

/// `message/send` params as v0.3 JSON, asking for a blocking call.
pub(crate) fn encode_send_params(p: &SendParams) -> Value {
    let mut obj = json!({
        "message": encode_message(&p.message),
        "configuration": p.configuration.clone().unwrap_or_else(|| json!({"blocking": true, "acceptedOutputModes": ["application/json"]})),
    });
    if let Some(m) = &p.metadata {
        obj["metadata"] = Value::Object(m.clone());
    }
    obj
}

fn str_field(obj: &mut Map<String, Value>, key: &str, at: &str) -> Result<String, DecodeError> {
    match obj.remove(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(DecodeError::new(format!("{at}.{key}"), "must be a string")),
        None => Err(DecodeError::new(format!("{at}.{key}"), "is required")),
    }
}

fn opt_str(obj: &mut Map<String, Value>, key: &str) -> Option<String> {
    match obj.remove(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

fn opt_meta(
    obj: &mut Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<Map<String, Value>>, DecodeError> {
    match obj.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(DecodeError::new(format!("{at}.{key}"), "must be an object")),
    }
}

fn str_list(obj: &mut Map<String, Value>, key: &str) -> Vec<String> {
    strings(obj.remove(key))
}

fn items(
    obj: &mut Map<String, Value>,
    key: &str,
    at: &str,
    required: bool,
) -> Result<Vec<Value>, DecodeError> {
    match obj.remove(key) {
        Some(Value::Array(a)) => Ok(a),
        None if !required => Ok(Vec::new()),
        Some(_) => Err(DecodeError::new(format!("{at}.{key}"), "must be a list")),
        None => Err(DecodeError::new(format!("{at}.{key}"), "is required")),
    }
}

fn parts(obj: &mut Map<String, Value>, at: &str) -> Result<Vec<Part>, DecodeError> {
    // Absent reads as empty, as in the 1.0 binding: the one shape check
    // ([`Message::check_shape`]) refuses a message without parts, in either binding.
    items(obj, "parts", at, false)?
        .into_iter()
        .enumerate()
        .map(|(i, p)| decode_part(p, &format!("{at}.parts[{i}]")))
        .collect()
}

/// Read a v0.3 part: `kind`, its discriminator in the 0.3 schema, decides, and a part without
/// one is refused (the TCK's optional `test_missing_kind` expects -32602; every SDK writes it).
pub(crate) fn decode_part(v: Value, at: &str) -> Result<Part, DecodeError> {
    let mut obj = object(v, at)?;
    let metadata = opt_meta(&mut obj, "metadata", at)?;
    let kind = match obj.get("kind") {
        Some(Value::String(k)) => k.clone(),
        Some(_) => return Err(DecodeError::new(format!("{at}.kind"), "must be a string")),
        None => {
            return Err(DecodeError::new(
                format!("{at}.kind"),
                "is required: an A2A v0.3 part says what it is (text, data or file)",
            ));
        }
    };
    match kind.as_str() {
        "text" => Ok(Part::Text {
            text: str_field(&mut obj, "text", at)?,
            metadata,
        }),
        "data" => match obj.remove("data") {
            Some(data @ Value::Object(_)) => Ok(Part::Data { data, metadata }),
            Some(_) => Err(DecodeError::new(
                format!("{at}.data"),
                "must be an object in A2A v0.3",
            )),
            None => Err(DecodeError::new(format!("{at}.data"), "is required")),
        },
        "file" => {
            let mut f = match obj.remove("file") {
                Some(Value::Object(f)) => f,
                _ => return Err(DecodeError::new(format!("{at}.file"), "is required")),
            };
            let file = File {
                bytes: opt_str(&mut f, "bytes"),
                uri: opt_str(&mut f, "uri"),
                name: opt_str(&mut f, "name"),
                media_type: opt_str(&mut f, "mimeType"),
            };
            if file.bytes.is_none() == file.uri.is_none() {
                return Err(DecodeError::new(
                    format!("{at}.file"),
                    "needs exactly one of bytes and uri",
                ));
            }
            Ok(Part::File { file, metadata })
        }
        other => Err(DecodeError::new(
            format!("{at}.kind"),
            format!("{other:?} is not text, data or file"),
        )),
    }
}

/// Read a v0.3 message.
pub(crate) fn decode_message(v: Value, at: &str) -> Result<Message, DecodeError> {
    let mut obj = object(v, at)?;
    let role = match str_field(&mut obj, "role", at)?.as_str() {
        "user" => Role::User,
        "agent" => Role::Agent,
        other => {
            return Err(DecodeError::new(
                format!("{at}.role"),
                format!("{other:?} is not user or agent"),
            ));
        }
    };
    Ok(Message {
        message_id: str_field(&mut obj, "messageId", at)?,
        role,
        parts: parts(&mut obj, at)?,
        context_id: opt_str(&mut obj, "contextId"),
        task_id: opt_str(&mut obj, "taskId"),
        reference_task_ids: str_list(&mut obj, "referenceTaskIds"),
        extensions: str_list(&mut obj, "extensions"),
        metadata: opt_meta(&mut obj, "metadata", at)?,
    })
}

/// Read `message/send` params.
pub(crate) fn decode_send_params(v: Value) -> Result<SendParams, DecodeError> {
    let mut obj = object(v, "params")?;
    let message = decode_message(
        obj.remove("message")
            .ok_or_else(|| DecodeError::new("params.message", "is required"))?,
        "params.message",
    )?;
    Ok(SendParams {
        message,
        configuration: obj.remove("configuration"),
        metadata: opt_meta(&mut obj, "metadata", "params")?,
    })
}

/// `message/send` params in their plain shape, read straight from the request's text by
/// [`jsonrpc::parse_typed`](crate::wire::jsonrpc::parse_typed): a message of text and data
/// parts, and optional `configuration` and `metadata`. Every member it does not list (a file
/// part, `referenceTaskIds`, `extensions`, anything unknown), a wrong type, or an escape in a
/// string it only reads makes the typed read fail, and the request then takes the general
/// reader ([`decode_send_params`]), which alone reports errors. It is read as an [`Obj`], and
/// so are its message and parts, so no array stands for an object. What this accepts,
/// [`SendFast::into_params`] turns into exactly what [`decode_send_params`] gives for it.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendFast<'a> {
    #[serde(borrow)]
    message: Obj<MessageFast<'a>>,
    #[serde(default, deserialize_with = "crate::wire::jsonrpc::present")]
    configuration: Option<Value>,
    // `null` and absent are both `None`, as `opt_meta` reads them; a non-object fails.
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageFast<'a> {
    // Read, never kept: the general reader ignores it too.
    #[serde(default)]
    #[serde(rename = "kind")]
    _kind: Option<serde::de::IgnoredAny>,
    #[serde(borrow)]
    role: &'a str,
    #[serde(rename = "messageId")]
    message_id: String,
    #[serde(default, borrow)]
    parts: Vec<Obj<PartFast<'a>>>,
    // `null` is `None` here and in `opt_str`; another non-string fails here (`opt_str` would
    // read it as `None`), which only sends the request the general way.
    #[serde(rename = "contextId", default)]
    context_id: Option<String>,
    #[serde(rename = "taskId", default)]
    task_id: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PartFast<'a> {
    #[serde(borrow)]
    kind: &'a str,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    data: Option<Map<String, Value>>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

impl SendFast<'_> {
    /// The params [`decode_send_params`] reads from the same text, or `None` where the shape
    /// needs its judgement (a role other than user or agent, a part that is not exactly one
    /// text or one data object).
    pub(crate) fn into_params(self) -> Option<SendParams> {
        let Obj(m) = self.message;
        let role = match m.role {
            "user" => Role::User,
            "agent" => Role::Agent,
            _ => return None,
        };
        let parts = m
            .parts
            .into_iter()
            .map(|Obj(p)| match (p.kind, p.text, p.data) {
                ("text", Some(text), None) => Some(Part::Text {
                    text,
                    metadata: p.metadata,
                }),
                ("data", None, Some(data)) => Some(Part::Data {
                    data: Value::Object(data),
                    metadata: p.metadata,
                }),
                _ => None,
            })
            .collect::<Option<Vec<Part>>>()?;
        Some(SendParams {
            message: Message {
                message_id: m.message_id,
                role,
                parts,
                context_id: m.context_id,
                task_id: m.task_id,
                reference_task_ids: Vec::new(),
                extensions: Vec::new(),
                metadata: m.metadata,
            },
            configuration: self.configuration,
            metadata: self.metadata,
        })
    }
}

fn decode_artifact(v: Value, at: &str) -> Result<Artifact, DecodeError> {
    let mut obj = object(v, at)?;
    Ok(Artifact {
        artifact_id: str_field(&mut obj, "artifactId", at)?,
        name: opt_str(&mut obj, "name"),
        description: opt_str(&mut obj, "description"),
        parts: parts(&mut obj, at)?,
        metadata: opt_meta(&mut obj, "metadata", at)?,
    })
}

/// Read a v0.3 task status.
fn decode_status(v: Value, at: &str) -> Result<TaskStatus, DecodeError> {
    let Value::Object(mut status) = v else {
        return Err(DecodeError::new(at, "must be an object"));
    };
    let state = str_field(&mut status, "state", at)?;
    let state = state_from(&state).ok_or_else(|| {
        DecodeError::new(
            format!("{at}.state"),
            format!("{state:?} is not an A2A v0.3 state"),
        )
    })?;
    let message = status
        .remove("message")
        .map(|m| decode_message(m, &format!("{at}.message")))
        .transpose()?;
    Ok(TaskStatus {
        state,
        message,
        timestamp: opt_str(&mut status, "timestamp"),
    })
}

/// Read a v0.3 task.
pub(crate) fn decode_task(v: Value) -> Result<Task, DecodeError> {
    let mut obj = object(v, "task")?;
    let status = match obj.remove("status") {
        Some(s) => decode_status(s, "task.status")?,
        None => return Err(DecodeError::new("task.status", "is required")),
    };
    Ok(Task {
        id: str_field(&mut obj, "id", "task")?,
        context_id: opt_str(&mut obj, "contextId").unwrap_or_default(),
        status,
        artifacts: items(&mut obj, "artifacts", "task", false)?
            .into_iter()
            .enumerate()
            .map(|(i, a)| decode_artifact(a, &format!("task.artifacts[{i}]")))
            .collect::<Result<_, _>>()?,
        history: items(&mut obj, "history", "task", false)?
            .into_iter()
            .enumerate()
            .map(|(i, m)| decode_message(m, &format!("task.history[{i}]")))
            .collect::<Result<_, _>>()?,
        metadata: opt_meta(&mut obj, "metadata", "task")?,
    })
}

/// Read the `result` of `message/send`: a task or a message, by `kind` or by shape.
pub(crate) fn decode_result(v: Value) -> Result<SendResult, DecodeError> {
    let kind = v.get("kind").and_then(Value::as_str);
    if kind == Some("message")
        || (kind.is_none() && v.get("messageId").is_some() && v.get("status").is_none())
    {
        decode_message(v, "result").map(SendResult::Message)
    } else {
        decode_task(v).map(SendResult::Task)
    }
}

/// Read the `result` of one v0.3 streamed response: by `kind`, else by shape (as the 0.3.26
/// client reads it). A status update without `final` is final if its state ends the stream.
#[allow(dead_code)] // see `super::stream`
pub(crate) fn decode_event(v: Value) -> Result<StreamEvent, DecodeError> {
    let kind = match v.get("kind") {
        Some(Value::String(k)) => k.clone(),
        Some(_) => return Err(DecodeError::new("result.kind", "must be a string")),
        None if !v.is_object() => return Err(DecodeError::new("result", "must be an object")),
        None if v.get("artifact").is_some() => "artifact-update".into(),
        None if v.get("taskId").is_some() && v.get("status").is_some() => "status-update".into(),
        None if v.get("messageId").is_some() && v.get("status").is_none() => "message".into(),
        None => "task".into(),
    };
    match kind.as_str() {
        "task" => decode_task(v).map(StreamEvent::Task),
        "message" => decode_message(v, "result").map(StreamEvent::Message),
        "status-update" => {
            let mut obj = object(v, "result")?;
            let status = match obj.remove("status") {
                Some(s) => decode_status(s, "result.status")?,
                None => return Err(DecodeError::new("result.status", "is required")),
            };
            let is_final = match obj.remove("final") {
                Some(Value::Bool(b)) => b,
                None | Some(Value::Null) => ends_stream(status.state),
                Some(_) => return Err(DecodeError::new("result.final", "must be true or false")),
            };
            Ok(StreamEvent::Status(StatusUpdate {
                task_id: str_field(&mut obj, "taskId", "result")?,
                context_id: opt_str(&mut obj, "contextId").unwrap_or_default(),
                status,
                is_final,
                metadata: opt_meta(&mut obj, "metadata", "result")?,
            }))
        }
        "artifact-update" => {
            let mut obj = object(v, "result")?;
            let artifact = match obj.remove("artifact") {
                Some(a) => decode_artifact(a, "result.artifact")?,
                None => return Err(DecodeError::new("result.artifact", "is required")),
            };
            let flag = |v: Option<Value>, at: &str| match v {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(b),
                Some(_) => Err(DecodeError::new(at, "must be true or false")),
            };
            Ok(StreamEvent::Artifact(ArtifactUpdate {
                task_id: str_field(&mut obj, "taskId", "result")?,
                context_id: opt_str(&mut obj, "contextId").unwrap_or_default(),
                artifact,
                append: flag(obj.remove("append"), "result.append")?,
                last_chunk: flag(obj.remove("lastChunk"), "result.lastChunk")?,
                metadata: opt_meta(&mut obj, "metadata", "result")?,
            }))
        }
        other => Err(DecodeError::new(
            "result.kind",
            format!("{other:?} is not task, message, status-update or artifact-update"),
        )),
    }
}

/// The task id of `tasks/get` / `tasks/cancel` params (`{"id": …}`).
pub(crate) fn decode_task_id(v: &Value) -> Result<String, DecodeError> {
    v.get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| DecodeError::new("params.id", "is required"))
}

/// The `historyLength` of `tasks/get` params (`None`: absent), checked.
pub(crate) fn decode_history_length(v: &Value) -> Result<Option<usize>, A2aError> {
    count_param(v.get("historyLength"), "params.historyLength")
}

/// What a `message/send`'s `configuration` asks: `blocking: false` answers at once (the
/// default is blocking, as a2a-sdk reads it: only a literal `false` is non-blocking), and
/// `historyLength`.
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
    let blocking = match obj.get("blocking") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(A2aError::invalid(
                "params.configuration.blocking",
                "must be true or false",
            ));
        }
    };
    Ok(SendOptions {
        return_immediately: !blocking,
        history_length: count_param(
            obj.get("historyLength"),
            "params.configuration.historyLength",
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// message/send read by the typed reader: `None` when it declines.
    fn typed(body: &str) -> Option<(Option<Value>, SendParams)> {
        let (id, fast) = crate::wire::jsonrpc::parse_typed::<SendFast>(body.as_bytes(), 64, SEND)?;
        Some((id, fast.into_params()?))
    }

    /// The same body read by the general reader: the id and the params, or the error.
    fn general(body: &str) -> Result<(Option<Value>, SendParams), DecodeError> {
        match crate::wire::jsonrpc::parse(body.as_bytes(), 64) {
            crate::wire::jsonrpc::Incoming::Single(Ok(call)) => {
                decode_send_params(call.params).map(|p| (call.id, p))
            }
            other => Err(DecodeError::new(
                "the body",
                format!("is not one call: {other:?}"),
            )),
        }
    }

    const MESSAGE: &str = r#"{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"data","data":{"agent_id":"echo.wire","input":{"schema_class":"Echo","value":{"n":1,"text":"ping"}}}}]}"#;

    #[test]
    fn message_send_in_its_plain_shape_is_read_by_the_typed_reader_as_the_general_reader_reads_it()
    {
        let bodies = [
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{MESSAGE}}}}}"#),
            format!(r#"{{"method":"message/send","params":{{"message":{MESSAGE}}},"jsonrpc":"2.0","id":"a\u00e9"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":null,"method":"message/send","params":{{"message":{MESSAGE},"configuration":null,"metadata":null}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"message/send","params":{{"configuration":{{"blocking":true,"historyLength":2}},"metadata":{{"k":[1,2.5e3]}},"message":{MESSAGE}}}}}"#),
            r#"{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"messageId":"m\n2","role":"agent","contextId":"c","taskId":null,"metadata":{},"parts":[{"kind":"text","text":"hi \u00e9","metadata":null},{"kind":"data","data":{"a":1,"a":2},"text":null}]}}}"#.to_string(),
            r#" {"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"messageId":"m","role":"user"}}} "#.to_string(),
        ];
        for body in &bodies {
            let typed = typed(body).unwrap_or_else(|| panic!("declined: {body}"));
            assert_eq!(Ok(typed), general(body), "{body}");
        }
    }

    #[test]
    fn the_typed_reader_declines_every_body_it_cannot_read_exactly_as_the_general_reader() {
        let wrap = |params: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{params}}}"#)
        };
        let declined = [
            // Not one plain message/send call.
            format!("[{}]", wrap(&format!(r#"{{"message":{MESSAGE}}}"#))),
            format!(r#"["2.0",1,"message/send",{{"message":{MESSAGE}}}]"#),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{{"message":{MESSAGE}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"1.0","id":1,"method":"message/send","params":{{"message":{MESSAGE}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1.5,"method":"message/send","params":{{"message":{MESSAGE}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"id":2,"method":"message/send","params":{{"message":{MESSAGE}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{MESSAGE}}},"extra":0}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"message\/send","params":{{"message":{MESSAGE}}}}}"#
            ),
            // Params and message in shapes the general reader judges.
            wrap("null"),
            wrap(&format!("[{MESSAGE}]")),
            wrap(&format!(r#"{{"message":{MESSAGE},"metadata":[]}}"#)),
            wrap(r#"{"message":["m","user",[]]}"#),
            wrap(r#"{"message":{"messageId":"m","role":"robot","parts":[]}}"#),
            wrap(
                r#"{"message":{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"uri":"u"}}]}}"#,
            ),
            wrap(
                r#"{"message":{"messageId":"m","role":"user","parts":[{"kind":"data","data":[1]}]}}"#,
            ),
            wrap(r#"{"message":{"messageId":"m","role":"user","parts":[{"kind":"data"}]}}"#),
            wrap(r#"{"message":{"messageId":"m","role":"user","parts":[["text","hi"]]}}"#),
            wrap(r#"{"message":{"messageId":"m","role":"user","parts":[],"contextId":5}}"#),
            wrap(r#"{"message":{"messageId":"m","role":"user","parts":[],"extensions":["x"]}}"#),
            wrap(r#"{"message":{"messageId":"m","role":"user","parts":null}}"#),
            wrap(
                r#"{"message":{"messageId":"m","role":"user","parts":[{"kind":"data","data":{"n":1e999}}]}} x"#,
            ),
        ];
        for body in &declined {
            assert!(typed(body).is_none(), "taken: {body}");
        }
    }

    #[test]
    fn the_typed_reader_declines_a_body_over_the_general_readers_limits() {
        let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{{"messageId":"m","role":"user","parts":[{{"kind":"data","data":{{"d":{deep}}}}}]}}}}}}"#
        );
        assert!(typed(&body).is_none());
        let long = "1".repeat(crate::json::MAX_INTEGER_DIGITS + 1);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{{"message":{{"messageId":"m","role":"user","parts":[{{"kind":"data","data":{{"n":{long}}}}}]}}}}}}"#
        );
        assert!(typed(&body).is_none());
        assert!(general(&body).is_err());
    }

    #[test]
    fn a_part_without_its_kind_is_refused_naming_the_field() {
        for part in [
            json!({"type": "x", "text": "hello"}),
            json!({"text": "hello"}),
            json!({"data": {"a": 1}}),
            json!({"kind": 7, "text": "hello"}),
        ] {
            let message = json!({"kind": "message", "messageId": "m", "role": "user",
                                 "parts": [part]});
            let e = decode_send_params(json!({"message": message})).unwrap_err();
            assert_eq!(e.at, "params.message.parts[0].kind", "{e:?}");
        }
        let fine = json!({"kind": "message", "messageId": "m", "role": "user",
                          "parts": [{"kind": "text", "text": "hello"}]});
        assert!(decode_send_params(json!({"message": fine})).is_ok());
    }
}
