//! What only the A2A v0.3 JSON-RPC binding has (A2A specification 0.3.0 §6–7, as a2a-sdk
//! 0.3.26 speaks it): its method names, its parts told apart by `kind`, the `kind` of a
//! streamed event. The rest of the binding is the one codec (`super::codec`) told
//! [`Binding::V03`]: every object carries a `kind` discriminator; roles and task states are
//! lower-case. Its typed reader of `message/send` is the one both bindings share
//! (`super::fast`).
//!
//! Reading is as lenient as the 0.3.26 server (a missing `kind` is told by shape, except on a
//! part); writing always sends `kind`, since other peers discriminate on it.

use super::Binding;
use super::error::DecodeError;
use super::fields::Fields;
use super::model::{File, Part};
use serde_json::Value;

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

/// Read a v0.3 part: `kind`, its discriminator in the 0.3 schema, decides, and a part without
/// one is refused (the TCK's optional `test_missing_kind` expects -32602; every SDK writes it).
pub(crate) fn decode_part(v: Value, at: &str) -> Result<Part, DecodeError> {
    let mut p = Fields::of(Binding::V03, v, at)?;
    let metadata = p.metadata()?;
    let kind = match p.obj.remove("kind") {
        Some(Value::String(k)) => k,
        Some(_) => return Err(p.error("kind", "must be a string")),
        None => {
            return Err(p.error(
                "kind",
                "is required: an A2A v0.3 part says what it is (text, data or file)",
            ));
        }
    };
    match kind.as_str() {
        "text" => Ok(Part::Text {
            text: p.req_str("text", "text")?,
            metadata,
        }),
        "data" => match p.take("data", "data") {
            Some(data @ Value::Object(_)) => Ok(Part::Data { data, metadata }),
            Some(_) => Err(p.error("data", "must be an object in A2A v0.3")),
            None => Err(p.error("data", "is required")),
        },
        "file" => {
            let Some(Value::Object(obj)) = p.take("file", "file") else {
                return Err(p.error("file", "is required"));
            };
            let mut f = Fields { obj, ..p };
            let file = File {
                bytes: f.opt_str("bytes", "bytes"),
                uri: f.opt_str("uri", "uri"),
                name: f.opt_str("name", "name"),
                media_type: f.opt_str("mimeType", "mimeType"),
            };
            if file.bytes.is_none() == file.uri.is_none() {
                return Err(f.error("file", "needs exactly one of bytes and uri"));
            }
            Ok(Part::File { file, metadata })
        }
        other => Err(p.error("kind", format!("{other:?} is not text, data or file"))),
    }
}

/// The `kind` of the `result` of one v0.3 streamed response, else what its shape says (as the
/// 0.3.26 client reads it).
pub(crate) fn event_kind(v: &Value) -> Result<&'static str, DecodeError> {
    let kind = match v.get("kind") {
        Some(Value::String(k)) => k.as_str(),
        Some(_) => return Err(DecodeError::new("result.kind", "must be a string")),
        None if !v.is_object() => return Err(DecodeError::new("result", "must be an object")),
        None if v.get("artifact").is_some() => "artifact-update",
        None if v.get("taskId").is_some() && v.get("status").is_some() => "status-update",
        None if v.get("messageId").is_some() && v.get("status").is_none() => "message",
        None => "task",
    };
    ["task", "message", "status-update", "artifact-update"]
        .into_iter()
        .find(|k| *k == kind)
        .ok_or_else(|| {
            DecodeError::new(
                "result.kind",
                format!("{kind:?} is not task, message, status-update or artifact-update"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::super::model::SendParams;
    use super::*;
    use serde_json::json;

    /// The general reader of message/send params, in this binding.
    fn decode_send_params(params: Value) -> Result<SendParams, DecodeError> {
        super::super::codec::decode_send_params(Binding::V03, params)
    }

    /// message/send read by the typed reader: `None` when it declines.
    fn typed(body: &str) -> Option<(Option<Value>, SendParams)> {
        let (id, _, fast) = crate::wire::jsonrpc::parse_typed::<super::super::fast::SendFast>(
            body.as_bytes(),
            64,
            &[SEND],
        )?;
        Some((id, fast.into_params(Binding::V03)?))
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
