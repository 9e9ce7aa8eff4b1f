//! The A2A v0.3 JSON-RPC binding (A2A specification 0.3.0 §6–7, as a2a-sdk 0.3.26 speaks it):
//! methods `message/send`, `tasks/get`, `tasks/cancel`; every object carries a `kind`
//! discriminator; roles and task states are lower-case.
//!
//! Reading is as lenient as the 0.3.26 server (a missing `kind` is told by shape); writing
//! always sends `kind`, since other peers discriminate on it.

use super::model::{
    Artifact, File, Message, Part, Role, SendParams, SendResult, Task, TaskState, TaskStatus,
};
use serde_json::{Map, Value, json};

pub const SEND: &str = "message/send";
pub const STREAM: &str = "message/stream";
pub const GET_TASK: &str = "tasks/get";
pub const CANCEL_TASK: &str = "tasks/cancel";
/// Every v0.3 method name, for telling the binding of a request by its method.
pub const METHODS: &[&str] = &[
    SEND,
    STREAM,
    GET_TASK,
    CANCEL_TASK,
    "tasks/resubscribe",
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

fn put_opt(obj: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        obj.insert(key.into(), v);
    }
}

fn meta(m: &Option<Map<String, Value>>) -> Option<Value> {
    m.clone().map(Value::Object)
}

/// A part as v0.3 JSON.
pub fn encode_part(p: &Part) -> Value {
    let (mut obj, metadata) = match p {
        Part::Text { text, metadata } => (json!({"kind": "text", "text": text}), metadata),
        Part::Data { data, metadata } => (json!({"kind": "data", "data": data}), metadata),
        Part::File { file, metadata } => {
            let mut f = Map::new();
            put_opt(&mut f, "bytes", file.bytes.clone().map(Value::String));
            put_opt(&mut f, "uri", file.uri.clone().map(Value::String));
            put_opt(
                &mut f,
                "mimeType",
                file.media_type.clone().map(Value::String),
            );
            put_opt(&mut f, "name", file.name.clone().map(Value::String));
            (json!({"kind": "file", "file": f}), metadata)
        }
    };
    if let Some(m) = meta(metadata) {
        obj["metadata"] = m;
    }
    obj
}

/// A message as v0.3 JSON.
pub fn encode_message(m: &Message) -> Value {
    let mut obj = Map::new();
    obj.insert("kind".into(), json!("message"));
    obj.insert("messageId".into(), json!(m.message_id));
    obj.insert(
        "role".into(),
        json!(if m.role == Role::User {
            "user"
        } else {
            "agent"
        }),
    );
    obj.insert(
        "parts".into(),
        Value::Array(m.parts.iter().map(encode_part).collect()),
    );
    put_opt(
        &mut obj,
        "contextId",
        m.context_id.clone().map(Value::String),
    );
    put_opt(&mut obj, "taskId", m.task_id.clone().map(Value::String));
    if !m.reference_task_ids.is_empty() {
        obj.insert("referenceTaskIds".into(), json!(m.reference_task_ids));
    }
    if !m.extensions.is_empty() {
        obj.insert("extensions".into(), json!(m.extensions));
    }
    put_opt(&mut obj, "metadata", meta(&m.metadata));
    Value::Object(obj)
}

fn encode_artifact(a: &Artifact) -> Value {
    let mut obj = Map::new();
    obj.insert("artifactId".into(), json!(a.artifact_id));
    put_opt(&mut obj, "name", a.name.clone().map(Value::String));
    put_opt(
        &mut obj,
        "description",
        a.description.clone().map(Value::String),
    );
    obj.insert(
        "parts".into(),
        Value::Array(a.parts.iter().map(encode_part).collect()),
    );
    put_opt(&mut obj, "metadata", meta(&a.metadata));
    Value::Object(obj)
}

/// A task as v0.3 JSON.
pub fn encode_task(t: &Task) -> Value {
    let mut status = Map::new();
    status.insert("state".into(), json!(state_name(t.status.state)));
    put_opt(
        &mut status,
        "message",
        t.status.message.as_ref().map(encode_message),
    );
    put_opt(
        &mut status,
        "timestamp",
        t.status.timestamp.clone().map(Value::String),
    );
    let mut obj = Map::new();
    obj.insert("kind".into(), json!("task"));
    obj.insert("id".into(), json!(t.id));
    obj.insert("contextId".into(), json!(t.context_id));
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
    put_opt(&mut obj, "metadata", meta(&t.metadata));
    Value::Object(obj)
}

/// The `result` of `message/send`: the task or message itself.
pub fn encode_result(r: &SendResult) -> Value {
    match r {
        SendResult::Task(t) => encode_task(t),
        SendResult::Message(m) => encode_message(m),
    }
}

/// `message/send` params as v0.3 JSON, asking for a blocking call.
pub fn encode_send_params(p: &SendParams) -> Value {
    let mut obj = json!({
        "message": encode_message(&p.message),
        "configuration": p.configuration.clone().unwrap_or_else(|| json!({"blocking": true, "acceptedOutputModes": ["application/json"]})),
    });
    if let Some(m) = &p.metadata {
        obj["metadata"] = Value::Object(m.clone());
    }
    obj
}

fn str_field(obj: &Map<String, Value>, key: &str, at: &str) -> Result<String, String> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("{at}.{key} must be a string")),
        None => Err(format!("{at}.{key} is required")),
    }
}

fn opt_str(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_string)
}

fn opt_meta(
    obj: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<Map<String, Value>>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(_) => Err(format!("{at}.{key} must be an object")),
    }
}

fn str_list(obj: &Map<String, Value>, key: &str) -> Vec<String> {
    obj.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Read a v0.3 part; `kind` decides, else the shape does (as the 0.3.26 server reads it).
pub fn decode_part(v: &Value, at: &str) -> Result<Part, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{at} must be an object"))?;
    let metadata = opt_meta(obj, "metadata", at)?;
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_else(|| {
        if obj.contains_key("text") {
            "text"
        } else if obj.contains_key("data") {
            "data"
        } else {
            "file"
        }
    });
    match kind {
        "text" => Ok(Part::Text {
            text: str_field(obj, "text", at)?,
            metadata,
        }),
        "data" => match obj.get("data") {
            Some(data @ Value::Object(_)) => Ok(Part::Data {
                data: data.clone(),
                metadata,
            }),
            Some(_) => Err(format!("{at}.data must be an object in A2A v0.3")),
            None => Err(format!("{at}.data is required")),
        },
        "file" => {
            let f = obj
                .get("file")
                .and_then(Value::as_object)
                .ok_or_else(|| format!("{at}.file is required"))?;
            let file = File {
                bytes: opt_str(f, "bytes"),
                uri: opt_str(f, "uri"),
                name: opt_str(f, "name"),
                media_type: opt_str(f, "mimeType"),
            };
            if file.bytes.is_none() == file.uri.is_none() {
                return Err(format!("{at}.file needs exactly one of bytes and uri"));
            }
            Ok(Part::File { file, metadata })
        }
        other => Err(format!("{at}.kind {other:?} is not text, data or file")),
    }
}

/// Read a v0.3 message.
pub fn decode_message(v: &Value, at: &str) -> Result<Message, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{at} must be an object"))?;
    let role = match str_field(obj, "role", at)?.as_str() {
        "user" => Role::User,
        "agent" => Role::Agent,
        other => return Err(format!("{at}.role {other:?} is not user or agent")),
    };
    let parts = obj
        .get("parts")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{at}.parts is required"))?;
    let parts = parts
        .iter()
        .enumerate()
        .map(|(i, p)| decode_part(p, &format!("{at}.parts[{i}]")))
        .collect::<Result<_, _>>()?;
    Ok(Message {
        message_id: str_field(obj, "messageId", at)?,
        role,
        parts,
        context_id: opt_str(obj, "contextId"),
        task_id: opt_str(obj, "taskId"),
        reference_task_ids: str_list(obj, "referenceTaskIds"),
        extensions: str_list(obj, "extensions"),
        metadata: opt_meta(obj, "metadata", at)?,
    })
}

/// Read `message/send` params.
pub fn decode_send_params(v: &Value) -> Result<SendParams, String> {
    let obj = v.as_object().ok_or("params must be an object")?;
    let message = decode_message(
        obj.get("message").ok_or("params.message is required")?,
        "params.message",
    )?;
    Ok(SendParams {
        message,
        configuration: obj.get("configuration").cloned(),
        metadata: opt_meta(obj, "metadata", "params")?,
    })
}

fn decode_artifact(v: &Value, at: &str) -> Result<Artifact, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{at} must be an object"))?;
    let parts = obj
        .get("parts")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{at}.parts is required"))?;
    Ok(Artifact {
        artifact_id: str_field(obj, "artifactId", at)?,
        name: opt_str(obj, "name"),
        description: opt_str(obj, "description"),
        parts: parts
            .iter()
            .enumerate()
            .map(|(i, p)| decode_part(p, &format!("{at}.parts[{i}]")))
            .collect::<Result<_, _>>()?,
        metadata: opt_meta(obj, "metadata", at)?,
    })
}

/// Read a v0.3 task.
pub fn decode_task(v: &Value) -> Result<Task, String> {
    let obj = v.as_object().ok_or("the task must be an object")?;
    let status = obj
        .get("status")
        .and_then(Value::as_object)
        .ok_or("task.status is required")?;
    let state = str_field(status, "state", "task.status")?;
    let state = state_from(&state)
        .ok_or_else(|| format!("task.status.state {state:?} is not an A2A v0.3 state"))?;
    let list = |key: &str| {
        obj.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    Ok(Task {
        id: str_field(obj, "id", "task")?,
        context_id: opt_str(obj, "contextId").unwrap_or_default(),
        status: TaskStatus {
            state,
            message: status
                .get("message")
                .map(|m| decode_message(m, "task.status.message"))
                .transpose()?,
            timestamp: opt_str(status, "timestamp"),
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
        metadata: opt_meta(obj, "metadata", "task")?,
    })
}

/// Read the `result` of `message/send`: a task or a message, by `kind` or by shape.
pub fn decode_result(v: &Value) -> Result<SendResult, String> {
    let kind = v.get("kind").and_then(Value::as_str);
    if kind == Some("message")
        || (kind.is_none() && v.get("messageId").is_some() && v.get("status").is_none())
    {
        decode_message(v, "result").map(SendResult::Message)
    } else {
        decode_task(v).map(SendResult::Task)
    }
}

/// The task id of `tasks/get` / `tasks/cancel` params (`{"id": …}`).
pub fn decode_task_id(v: &Value) -> Result<String, String> {
    v.get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| "params.id is required".to_string())
}
