//! What only the A2A 1.0 JSON-RPC binding has, as a2a-sdk 1.x speaks it: its method names
//! (`SendMessage`, `GetTask`, `CancelTask`, `ListTasks`, …), its parts as a oneof of `text`,
//! `raw`, `url`, `data`, its streamed events as a oneof `StreamResponse`, and `ListTasks`. The
//! rest of the binding is the one codec (`super::codec`) told [`Binding::V10`]: objects in
//! ProtoJSON (camelCase, no `kind`), enums `ROLE_USER`, `TASK_STATE_COMPLETED`, the send result
//! wrapped as `{"task": …}` or `{"message": …}`, the version in the `A2A-Version` header.
//!
//! Reading follows `ParseDict(…, ignore_unknown_fields=True)`: unknown fields are ignored and
//! both the JSON (camelCase) and proto (snake_case) field names are accepted. Writing follows
//! `MessageToDict`: camelCase, empty fields left out.

use super::Binding;
use super::codec::{self, Fields, count_param, get};
use super::error::{A2aError, DecodeError};
use super::model::{File, Part, TaskState};
use super::tasks::{DEFAULT_PAGE_SIZE, ListQuery, MAX_PAGE_SIZE};
use serde::ser::{Serialize, Serializer};
use serde_json::Value;

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

/// A model value written as ProtoJSON: the one writer, [`codec::Json`], told this binding.
pub(crate) struct Json<'a, T: ?Sized>(pub &'a T);

impl<T: ?Sized> Serialize for Json<'_, T>
where
    for<'b> codec::Json<'b, T>: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        codec::Json(Binding::V10, self.0).serialize(s)
    }
}

/// Read a ProtoJSON part: exactly one of `text`, `raw`, `url`, `data` (1.0 §4.1.6).
pub(crate) fn decode_part(v: Value, at: &str) -> Result<Part, DecodeError> {
    let mut p = Fields::of(Binding::V10, v, at)?;
    let metadata = p.metadata()?;
    let media_type = p.opt_str("mediaType", "media_type");
    let present: Vec<&str> = ["text", "raw", "url", "data"]
        .into_iter()
        .filter(|k| p.obj.contains_key(*k))
        .collect();
    match present.as_slice() {
        ["text"] => match p.obj.remove("text") {
            Some(Value::String(text)) => Ok(Part::Text { text, metadata }),
            _ => Err(p.error("text", "must be a string")),
        },
        ["data"] => Ok(Part::Data {
            data: p.obj.remove("data").unwrap_or(Value::Null),
            metadata,
        }),
        [k @ ("raw" | "url")] => {
            let Some(Value::String(s)) = p.obj.remove(*k) else {
                return Err(p.error(k, "must be a string"));
            };
            let (bytes, uri) = if *k == "raw" {
                (Some(s), None)
            } else {
                (None, Some(s))
            };
            let file = File {
                bytes,
                uri,
                name: p.opt_str("filename", "filename"),
                media_type,
            };
            Ok(Part::File { file, metadata })
        }
        [] => Err(DecodeError::new(at, "has none of text, raw, url, data")),
        _ => Err(DecodeError::new(
            at,
            "has more than one of text, raw, url, data",
        )),
    }
}

/// The one member of the `result` of a 1.0 streamed response (`StreamResponse`): the kind of
/// event it holds (`task`, `message`, `status-update`, `artifact-update`), its value, and the
/// path its errors name.
pub(crate) fn event_member(v: Value) -> Result<(&'static str, Value, &'static str), DecodeError> {
    let mut obj = Fields::of(Binding::V10, v, "result")?.obj;
    let members = [
        ("task", "task", "task"),
        ("message", "message", "result.message"),
        ("statusUpdate", "status-update", "result.statusUpdate"),
        ("status_update", "status-update", "result.statusUpdate"),
        ("artifactUpdate", "artifact-update", "result.artifactUpdate"),
        (
            "artifact_update",
            "artifact-update",
            "result.artifactUpdate",
        ),
    ];
    let present: Vec<_> = members
        .into_iter()
        .filter(|(member, _, _)| obj.get(*member).is_some_and(|v| !v.is_null()))
        .collect();
    match present.as_slice() {
        [(member, kind, at)] => Ok((kind, obj.remove(*member).unwrap_or(Value::Null), at)),
        [] => Err(DecodeError::new(
            "result",
            "holds none of task, message, statusUpdate, artifactUpdate",
        )),
        _ => Err(DecodeError::new(
            "result",
            "holds more than one of task, message, statusUpdate, artifactUpdate",
        )),
    }
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
    let field = |name: &str, proto: &str| get(Binding::V10, obj, name, proto);
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
        Some(v) => match Binding::V10.state_from(v) {
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
