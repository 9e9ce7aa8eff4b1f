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
use super::error::{A2aError, DecodeError};
use super::fields::{Fields, count_param, get};
use super::model::{File, Part, TaskState};
use super::tasks::{DEFAULT_PAGE_SIZE, ListQuery, MAX_PAGE_SIZE};
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

/// Read a ProtoJSON part: exactly one of `text`, `raw`, `url`, `data` (1.0 §4.1.6).
pub(crate) fn decode_part(v: Value, at: &str) -> Result<Part, DecodeError> {
    let mut p = Fields::of(Binding::V10, v, at)?;
    let metadata = p.metadata()?;
    let media_type = p.opt_str("mediaType", "media_type");
    let mut present = ["text", "raw", "url", "data"]
        .into_iter()
        .filter(|k| p.obj.contains_key(*k));
    match (present.next(), present.next()) {
        (Some("text"), None) => match p.obj.remove("text") {
            Some(Value::String(text)) => Ok(Part::Text { text, metadata }),
            _ => Err(p.error("text", "must be a string")),
        },
        (Some("data"), None) => Ok(Part::Data {
            data: p.obj.remove("data").unwrap_or(Value::Null),
            metadata,
        }),
        (Some(k @ ("raw" | "url")), None) => {
            let Some(Value::String(s)) = p.obj.remove(k) else {
                return Err(p.error(k, "must be a string"));
            };
            let (bytes, uri) = if k == "raw" {
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
        (None, _) => Err(DecodeError::new(at, "has none of text, raw, url, data")),
        _ => Err(DecodeError::new(
            at,
            "has more than one of text, raw, url, data",
        )),
    }
}

/// The one member of the `result` of a 1.0 streamed response (`StreamResponse`): the kind of
/// event it holds (`task`, `message`, `status-update`, `artifact-update`), its value, and the
/// paths its errors name (the value's, and that of the status or artifact in an update).
pub(crate) fn event_member(v: Value) -> Result<EventMember, DecodeError> {
    let mut obj = Fields::of(Binding::V10, v, "result")?.obj;
    let members = [
        ("task", "task"),
        ("message", "message"),
        ("statusUpdate", "status-update"),
        ("status_update", "status-update"),
        ("artifactUpdate", "artifact-update"),
        ("artifact_update", "artifact-update"),
    ];
    let present: Vec<_> = members
        .into_iter()
        .filter(|(member, _)| obj.get(*member).is_some_and(|v| !v.is_null()))
        .collect();
    let (member, kind) = match present.as_slice() {
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
    let (at, member_at) = match kind {
        "task" => ("task", ""),
        "message" => ("result.message", ""),
        "status-update" => ("result.statusUpdate", "result.statusUpdate.status"),
        _ => ("result.artifactUpdate", "result.artifactUpdate.artifact"),
    };
    Ok((
        kind,
        obj.remove(member).unwrap_or(Value::Null),
        at,
        member_at,
    ))
}

/// A streamed event's kind, its object, and the two paths its errors name.
pub(crate) type EventMember = (&'static str, Value, &'static str, &'static str);

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

/// A page token: opaque to the client (lowercase hex of what it marks).
pub(crate) fn encode_token(marker: &str) -> String {
    marker.bytes().map(|b| format!("{b:02x}")).collect()
}

/// What a page token marks, if it is one this server could have issued.
pub(crate) fn decode_token(token: &str) -> Option<String> {
    let bytes = token.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(2) || bytes.len() > 512 {
        return None;
    }
    let decoded: Option<Vec<u8>> = bytes
        .chunks(2)
        .map(|pair| {
            let hex = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(hex, 16).ok()
        })
        .collect();
    String::from_utf8(decoded?).ok()
}

/// The refusal of a page token this server did not issue.
pub(crate) fn invalid_token(token: &str) -> A2aError {
    let shown = crate::text::truncate(token, crate::text::Keep::Chars(64), "");
    A2aError::invalid(
        "params.pageToken",
        format!("{shown:?} is not a page token this server issued"),
    )
}

#[cfg(test)]
mod tests {
    use super::super::fast::SendFast;
    use super::super::model::SendParams;
    use super::*;
    use crate::wire::jsonrpc::{self, Incoming};

    /// SendMessage read by the typed reader: `None` when it declines.
    fn typed(body: &str) -> Option<(Option<Value>, SendParams)> {
        let (id, _, fast) = jsonrpc::parse_typed::<SendFast>(body.as_bytes(), 64, &[SEND])?;
        Some((id, fast.into_params(Binding::V10)?))
    }

    /// The same body read by the general reader: the id and the params, or the error.
    fn general(body: &str) -> Result<(Option<Value>, SendParams), DecodeError> {
        match jsonrpc::parse(body.as_bytes(), 64) {
            Incoming::Single(Ok(call)) => {
                super::super::codec::decode_send_params(Binding::V10, call.params)
                    .map(|p| (call.id, p))
            }
            other => Err(DecodeError::new(
                "the body",
                format!("is not one call: {other:?}"),
            )),
        }
    }

    const MESSAGE: &str = r#"{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"agent_id":"echo.wire","input":{"schema_class":"Echo","value":{"n":1,"text":"ping"}}},"mediaType":"application/json"}]}"#;

    fn wrap(params: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{params}}}"#)
    }

    #[test]
    fn send_message_in_its_plain_shape_is_read_by_the_typed_reader_as_the_general_reader_reads_it()
    {
        let bodies = [
            wrap(&format!(r#"{{"message":{MESSAGE}}}"#)),
            format!(
                r#"{{"method":"SendMessage","params":{{"message":{MESSAGE}}},"jsonrpc":"2.0","id":"a\u00e9"}}"#
            ),
            // `null` configuration and metadata are absent in 1.0.
            format!(
                r#"{{"jsonrpc":"2.0","id":null,"method":"SendMessage","params":{{"message":{MESSAGE},"configuration":null,"metadata":null}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","method":"SendMessage","params":{{"configuration":{{"returnImmediately":true,"historyLength":"2"}},"metadata":{{"k":[1,2.5e3]}},"message":{MESSAGE}}}}}"#
            ),
            // Empty ids are absent; `kind`, which 1.0 does not know, is ignored; a text part
            // may carry a media type, which only a file part keeps.
            wrap(
                r#"{"message":{"kind":"message","messageId":"m\n2","role":"ROLE_AGENT","contextId":"","taskId":"t","metadata":{},"parts":[{"text":"hi \u00e9","metadata":null,"mediaType":"text/plain"},{"kind":"data","data":{"a":1,"a":2}}]}}"#,
            ),
            wrap(r#"{"message":{"messageId":"m","role":"ROLE_USER","contextId":null}}"#),
            // A number no double holds reads alike here; the contract refuses it later.
            wrap(
                r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"n":1e999}}]}}"#,
            ),
            format!(
                " {} ",
                wrap(r#"{"message":{"messageId":"m","role":"ROLE_USER"}}"#)
            ),
        ];
        for body in &bodies {
            let typed = typed(body).unwrap_or_else(|| panic!("declined: {body}"));
            assert_eq!(Ok(typed), general(body), "{body}");
        }
    }

    #[test]
    fn the_typed_reader_declines_every_send_message_it_cannot_read_exactly_as_the_general_reader() {
        let message = |m: &str| wrap(&format!(r#"{{"message":{m}}}"#));
        let part = |p: &str| {
            message(&format!(
                r#"{{"messageId":"m","role":"ROLE_USER","parts":[{p}]}}"#
            ))
        };
        let declined = [
            // Not one plain SendMessage call.
            format!("[{}]", message(MESSAGE)),
            format!(r#"["2.0",1,"SendMessage",{{"message":{MESSAGE}}}]"#),
            message(MESSAGE).replace("SendMessage", "SendStreamingMessage"),
            message(MESSAGE).replace("SendMessage", "message/send"),
            message(MESSAGE).replace("\"2.0\"", "\"1.0\""),
            message(MESSAGE).replace("\"id\":1", "\"id\":1.5"),
            message(MESSAGE).replace("\"id\":1", "\"id\":1,\"id\":2"),
            message(MESSAGE).replace("SendMessage", "Send\\u004dessage"),
            format!("{} x", message(MESSAGE)),
            // Params and message in shapes the general reader judges.
            wrap("null"),
            wrap(&format!("[{MESSAGE}]")),
            wrap(r#"{"message":null}"#),
            wrap("{}"),
            wrap(&format!(r#"{{"message":{MESSAGE},"metadata":[]}}"#)),
            wrap(&format!(r#"{{"message":{MESSAGE},"tenant":"t"}}"#)),
            message(r#"["m","ROLE_USER",[]]"#),
            message(r#"{"messageId":"m","role":"user"}"#),
            message(r#"{"messageId":"m","role":1}"#),
            message(r#"{"messageId":"m","role":"ROLE_UNSPECIFIED"}"#),
            message(r#"{"messageId":"m"}"#),
            message(r#"{"role":"ROLE_USER"}"#),
            message(r#"{"messageId":"","role":"ROLE_USER"}"#),
            message(r#"{"messageId":null,"role":"ROLE_USER"}"#),
            message(r#"{"message_id":"m","role":"ROLE_USER"}"#),
            message(r#"{"messageId":"m","role":"ROLE_USER","parts":null}"#),
            message(r#"{"messageId":"m","role":"ROLE_USER","parts":{}}"#),
            message(r#"{"messageId":"m","role":"ROLE_USER","contextId":5}"#),
            message(r#"{"messageId":"m","role":"ROLE_USER","metadata":"x"}"#),
            message(r#"{"messageId":"m","role":"ROLE_USER","referenceTaskIds":["t"]}"#),
            message(r#"{"messageId":"m","role":"ROLE_USER","extensions":["x"]}"#),
            // Parts the general reader refuses, or reads as more than text or data.
            part("{}"),
            part(r#"{"metadata":{}}"#),
            part(r#"["hi"]"#),
            part(r#"{"text":null}"#),
            part(r#"{"text":5}"#),
            part(r#"{"data":null}"#),
            part(r#"{"data":[1]}"#),
            part(r#"{"data":"x"}"#),
            part(r#"{"text":"hi","data":{}}"#),
            part(r#"{"text":"hi","data":null}"#),
            part(r#"{"text":null,"data":{}}"#),
            part(r#"{"text":"hi","metadata":[]}"#),
            part(r#"{"raw":"aGk="}"#),
            part(r#"{"url":"https://x"}"#),
            part(r#"{"text":"hi","url":"https://x"}"#),
            part(r#"{"text":"hi","filename":"f"}"#),
            part(r#"{"text":"hi","media_type":"text/plain"}"#),
        ];
        for body in &declined {
            assert!(typed(body).is_none(), "taken: {body}");
        }
    }

    #[test]
    fn the_typed_reader_declines_a_send_message_over_the_general_readers_limits() {
        let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
        let body = wrap(&format!(
            r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"data":{{"d":{deep}}}}}]}}}}"#
        ));
        assert!(typed(&body).is_none());
        assert!(general(&body).is_err());
        let long = "1".repeat(crate::json::MAX_INTEGER_DIGITS + 1);
        let body = wrap(&format!(
            r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"data":{{"n":{long}}}}}]}}}}"#
        ));
        assert!(typed(&body).is_none());
        assert!(general(&body).is_err());
    }
}
