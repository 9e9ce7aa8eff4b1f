//! The A2A 1.0 JSON-RPC binding, as a2a-sdk 1.x speaks it: methods `SendMessage`, `GetTask`,
//! `CancelTask`; objects in ProtoJSON (camelCase, no `kind`, a part is a oneof of `text`,
//! `raw`, `url`, `data`); enums `ROLE_USER`, `TASK_STATE_COMPLETED`; the send result wrapped
//! as `{"task": …}` or `{"message": …}`; the version in the `A2A-Version` header.
//!
//! Reading follows `ParseDict(…, ignore_unknown_fields=True)`: unknown fields are ignored and
//! both the JSON (camelCase) and proto (snake_case) field names are accepted. Writing follows
//! `MessageToDict`: camelCase, empty fields left out.

use super::model::{
    Artifact, File, Message, Part, Role, SendParams, SendResult, Task, TaskState, TaskStatus,
};
use serde_json::{Map, Value, json};

pub const SEND: &str = "SendMessage";
pub const STREAM: &str = "SendStreamingMessage";
pub const GET_TASK: &str = "GetTask";
pub const CANCEL_TASK: &str = "CancelTask";
/// Every 1.0 method name, as the a2a-sdk 1.x dispatcher spells them.
pub const METHODS: &[&str] = &[
    SEND,
    STREAM,
    GET_TASK,
    "ListTasks",
    CANCEL_TASK,
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "SubscribeToTask",
    "GetExtendedAgentCard",
];

/// The protocol version this binding speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

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

fn state_name(s: TaskState) -> &'static str {
    STATES
        .iter()
        .find(|(st, _, _)| *st == s)
        .map(|(_, n, _)| *n)
        .unwrap_or("TASK_STATE_UNSPECIFIED")
}

/// A state by name, or by number (ProtoJSON accepts enum numbers too).
fn state_from(v: &Value) -> Option<TaskState> {
    STATES
        .iter()
        .find(|(_, name, num)| v.as_str() == Some(name) || v.as_i64() == Some(*num))
        .map(|(st, _, _)| *st)
}

/// A field by its JSON name or its proto name.
fn field<'a>(obj: &'a Map<String, Value>, camel: &str, snake: &str) -> Option<&'a Value> {
    obj.get(camel)
        .or_else(|| obj.get(snake))
        .filter(|v| !v.is_null())
}

fn put_str(obj: &mut Map<String, Value>, key: &str, v: &Option<String>) {
    if let Some(s) = v.as_ref().filter(|s| !s.is_empty()) {
        obj.insert(key.into(), json!(s));
    }
}

fn put_meta(obj: &mut Map<String, Value>, m: &Option<Map<String, Value>>) {
    if let Some(m) = m {
        obj.insert("metadata".into(), Value::Object(m.clone()));
    }
}

/// A part as ProtoJSON. Data parts say `mediaType: application/json`, as the reference's
/// `new_data_part(…, media_type="application/json")` does.
pub fn encode_part(p: &Part) -> Value {
    let mut obj = Map::new();
    match p {
        Part::Text { text, metadata } => {
            obj.insert("text".into(), json!(text));
            put_meta(&mut obj, metadata);
        }
        Part::Data { data, metadata } => {
            obj.insert("data".into(), data.clone());
            obj.insert("mediaType".into(), json!("application/json"));
            put_meta(&mut obj, metadata);
        }
        Part::File { file, metadata } => {
            if let Some(b) = &file.bytes {
                obj.insert("raw".into(), json!(b));
            } else if let Some(u) = &file.uri {
                obj.insert("url".into(), json!(u));
            }
            put_str(&mut obj, "filename", &file.name);
            put_str(&mut obj, "mediaType", &file.media_type);
            put_meta(&mut obj, metadata);
        }
    }
    Value::Object(obj)
}

/// A message as ProtoJSON.
pub fn encode_message(m: &Message) -> Value {
    let mut obj = Map::new();
    obj.insert("messageId".into(), json!(m.message_id));
    put_str(&mut obj, "contextId", &m.context_id);
    put_str(&mut obj, "taskId", &m.task_id);
    obj.insert(
        "role".into(),
        json!(if m.role == Role::User {
            "ROLE_USER"
        } else {
            "ROLE_AGENT"
        }),
    );
    obj.insert(
        "parts".into(),
        Value::Array(m.parts.iter().map(encode_part).collect()),
    );
    put_meta(&mut obj, &m.metadata);
    if !m.extensions.is_empty() {
        obj.insert("extensions".into(), json!(m.extensions));
    }
    if !m.reference_task_ids.is_empty() {
        obj.insert("referenceTaskIds".into(), json!(m.reference_task_ids));
    }
    Value::Object(obj)
}

fn encode_artifact(a: &Artifact) -> Value {
    let mut obj = Map::new();
    obj.insert("artifactId".into(), json!(a.artifact_id));
    put_str(&mut obj, "name", &a.name);
    put_str(&mut obj, "description", &a.description);
    obj.insert(
        "parts".into(),
        Value::Array(a.parts.iter().map(encode_part).collect()),
    );
    put_meta(&mut obj, &a.metadata);
    Value::Object(obj)
}

/// A task as ProtoJSON.
pub fn encode_task(t: &Task) -> Value {
    let mut status = Map::new();
    status.insert("state".into(), json!(state_name(t.status.state)));
    if let Some(m) = &t.status.message {
        status.insert("message".into(), encode_message(m));
    }
    put_str(&mut status, "timestamp", &t.status.timestamp);
    let mut obj = Map::new();
    obj.insert("id".into(), json!(t.id));
    put_str(&mut obj, "contextId", &Some(t.context_id.clone()));
    obj.insert("status".into(), Value::Object(status));
    if !t.artifacts.is_empty() {
        obj.insert(
            "artifacts".into(),
            Value::Array(t.artifacts.iter().map(encode_artifact).collect()),
        );
    }
    if !t.history.is_empty() {
        obj.insert(
            "history".into(),
            Value::Array(t.history.iter().map(encode_message).collect()),
        );
    }
    put_meta(&mut obj, &t.metadata);
    Value::Object(obj)
}

/// The `result` of `SendMessage`: `{"task": …}` or `{"message": …}`.
pub fn encode_result(r: &SendResult) -> Value {
    match r {
        SendResult::Task(t) => json!({ "task": encode_task(t) }),
        SendResult::Message(m) => json!({ "message": encode_message(m) }),
    }
}

/// `SendMessage` params as ProtoJSON (a blocking call: `returnImmediately` left false).
pub fn encode_send_params(p: &SendParams) -> Value {
    let mut obj = json!({ "message": encode_message(&p.message) });
    if let Some(c) = &p.configuration {
        obj["configuration"] = c.clone();
    }
    if let Some(m) = &p.metadata {
        obj["metadata"] = Value::Object(m.clone());
    }
    obj
}

fn str_of(obj: &Map<String, Value>, camel: &str, snake: &str) -> Option<String> {
    field(obj, camel, snake)
        .and_then(Value::as_str)
        .map(str::to_string)
        .filter(|s| !s.is_empty())
}

fn meta_of(obj: &Map<String, Value>, at: &str) -> Result<Option<Map<String, Value>>, String> {
    match field(obj, "metadata", "metadata") {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(_) => Err(format!("{at}.metadata must be an object")),
    }
}

fn list_of(obj: &Map<String, Value>, camel: &str, snake: &str) -> Vec<String> {
    field(obj, camel, snake)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Read a ProtoJSON part: exactly one of `text`, `raw`, `url`, `data`.
pub fn decode_part(v: &Value, at: &str) -> Result<Part, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{at} must be an object"))?;
    let metadata = meta_of(obj, at)?;
    let media_type = str_of(obj, "mediaType", "media_type");
    let present: Vec<&str> = ["text", "raw", "url", "data"]
        .into_iter()
        .filter(|k| obj.contains_key(*k))
        .collect();
    match present.as_slice() {
        ["text"] => Ok(Part::Text {
            text: obj["text"]
                .as_str()
                .ok_or_else(|| format!("{at}.text must be a string"))?
                .to_string(),
            metadata,
        }),
        ["data"] => Ok(Part::Data {
            data: obj["data"].clone(),
            metadata,
        }),
        [k @ ("raw" | "url")] => {
            let s = obj[*k]
                .as_str()
                .ok_or_else(|| format!("{at}.{k} must be a string"))?
                .to_string();
            let (bytes, uri) = if *k == "raw" {
                (Some(s), None)
            } else {
                (None, Some(s))
            };
            Ok(Part::File {
                file: File {
                    bytes,
                    uri,
                    name: str_of(obj, "filename", "filename"),
                    media_type,
                },
                metadata,
            })
        }
        [] => Err(format!("{at} has none of text, raw, url, data")),
        _ => Err(format!("{at} has more than one of text, raw, url, data")),
    }
}

/// Read a ProtoJSON message.
pub fn decode_message(v: &Value, at: &str) -> Result<Message, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{at} must be an object"))?;
    let role = match field(obj, "role", "role") {
        Some(r) if r.as_str() == Some("ROLE_USER") || r.as_i64() == Some(1) => Role::User,
        Some(r) if r.as_str() == Some("ROLE_AGENT") || r.as_i64() == Some(2) => Role::Agent,
        Some(r) => return Err(format!("{at}.role {r} is not ROLE_USER or ROLE_AGENT")),
        None => return Err(format!("{at}.role is required")),
    };
    let parts = field(obj, "parts", "parts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let parts = parts
        .iter()
        .enumerate()
        .map(|(i, p)| decode_part(p, &format!("{at}.parts[{i}]")))
        .collect::<Result<_, _>>()?;
    Ok(Message {
        message_id: str_of(obj, "messageId", "message_id")
            .ok_or_else(|| format!("{at}.messageId is required"))?,
        role,
        parts,
        context_id: str_of(obj, "contextId", "context_id"),
        task_id: str_of(obj, "taskId", "task_id"),
        reference_task_ids: list_of(obj, "referenceTaskIds", "reference_task_ids"),
        extensions: list_of(obj, "extensions", "extensions"),
        metadata: meta_of(obj, at)?,
    })
}

/// Read `SendMessage` params.
pub fn decode_send_params(v: &Value) -> Result<SendParams, String> {
    let obj = v.as_object().ok_or("params must be an object")?;
    let message = decode_message(
        field(obj, "message", "message").ok_or("params.message is required")?,
        "params.message",
    )?;
    Ok(SendParams {
        message,
        configuration: field(obj, "configuration", "configuration").cloned(),
        metadata: meta_of(obj, "params")?,
    })
}

fn decode_artifact(v: &Value, at: &str) -> Result<Artifact, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{at} must be an object"))?;
    let parts = field(obj, "parts", "parts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(Artifact {
        artifact_id: str_of(obj, "artifactId", "artifact_id").unwrap_or_default(),
        name: str_of(obj, "name", "name"),
        description: str_of(obj, "description", "description"),
        parts: parts
            .iter()
            .enumerate()
            .map(|(i, p)| decode_part(p, &format!("{at}.parts[{i}]")))
            .collect::<Result<_, _>>()?,
        metadata: meta_of(obj, at)?,
    })
}

/// Read a ProtoJSON task.
pub fn decode_task(v: &Value) -> Result<Task, String> {
    let obj = v.as_object().ok_or("the task must be an object")?;
    let status = field(obj, "status", "status")
        .and_then(Value::as_object)
        .ok_or("task.status is required")?;
    let state_value = field(status, "state", "state").ok_or("task.status.state is required")?;
    let state = state_from(state_value)
        .ok_or_else(|| format!("task.status.state {state_value} is not an A2A 1.0 state"))?;
    let list = |camel: &str| {
        field(obj, camel, camel)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    Ok(Task {
        id: str_of(obj, "id", "id").ok_or("task.id is required")?,
        context_id: str_of(obj, "contextId", "context_id").unwrap_or_default(),
        status: TaskStatus {
            state,
            message: field(status, "message", "message")
                .map(|m| decode_message(m, "task.status.message"))
                .transpose()?,
            timestamp: str_of(status, "timestamp", "timestamp"),
        },
        artifacts: list("artifacts")
            .iter()
            .enumerate()
            .map(|(i, a)| decode_artifact(a, &format!("task.artifacts[{i}]")))
            .collect::<Result<_, _>>()?,
        history: list("history")
            .iter()
            .enumerate()
            .map(|(i, m)| decode_message(m, &format!("task.history[{i}]")))
            .collect::<Result<_, _>>()?,
        metadata: meta_of(obj, "task")?,
    })
}

/// Read the `result` of `SendMessage`.
pub fn decode_result(v: &Value) -> Result<SendResult, String> {
    if let Some(t) = v.get("task") {
        decode_task(t).map(SendResult::Task)
    } else if let Some(m) = v.get("message") {
        decode_message(m, "result.message").map(SendResult::Message)
    } else {
        Err("the result holds neither a task nor a message".into())
    }
}

/// The task id of `GetTask` / `CancelTask` params.
pub fn decode_task_id(v: &Value) -> Result<String, String> {
    let obj = v.as_object().ok_or("params must be an object")?;
    // Older drafts named the task `tasks/<id>` in a `name` field.
    str_of(obj, "id", "id")
        .or_else(|| {
            str_of(obj, "name", "name").map(|n| n.strip_prefix("tasks/").unwrap_or(&n).to_string())
        })
        .ok_or_else(|| "params.id is required".to_string())
}
