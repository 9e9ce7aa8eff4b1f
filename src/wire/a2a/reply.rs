//! The typed reader of a send's reply, the client's fast path: a JSON-RPC response (2.0 §5)
//! whose `result` is a task (v0.3 `message/send`: the task itself, `kind: "task"`; 1.0
//! `SendMessage`: `{"task": …}`), read straight from the body's text into the model, with no
//! value tree for the envelope, the task, its status, artifacts or messages (only a data
//! part's object, which the model holds as a value, is built as one).
//!
//! It takes only a reply in its plain shape: text and data parts, the members both bindings
//! write, no duplicate member, no escape in a string it only compares (`jsonrpc`, `id`, a
//! state, a role, a `kind`), within the general reader's limits. It declines anything else (an
//! error, a message, a file part, a proto field name, a member it does not list, a `null` where
//! the general reader would judge one, a wrong type), and the general reader
//! (`jsonrpc::read_response`, then `codec::decode_result`) then reads the reply and alone
//! reports what is wrong with it. What it takes, it reads exactly as the general reader does
//! (`tests` and the `fuzz` target `a2a_decode` hold the two to it).

use super::Binding;
use super::fast::MessageFast;
use super::model::{Artifact, Part, Task, TaskStatus};
use crate::json::Obj;
use crate::wire::jsonrpc::present;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

/// The task the reply `body` to the call `expected_id` holds, when the body is a plain reply
/// in `binding` (see the module doc); `None` to leave it to the general reader.
pub(crate) fn read_task(binding: Binding, body: &[u8], expected_id: &str) -> Option<Task> {
    let text = crate::json::within_limits(body, crate::wire::jsonrpc::RESPONSE_LIMITS)?;
    let (jsonrpc, id, task) = match binding {
        Binding::V03 => {
            let Obj(r) = serde_json::from_str::<Obj<Response<TaskFast>>>(text).ok()?;
            (r.jsonrpc, r.id, r.result.0)
        }
        Binding::V10 => {
            let Obj(r) = serde_json::from_str::<Obj<Response<TaskMember>>>(text).ok()?;
            (r.jsonrpc, r.id, r.result.0.task.0)
        }
    };
    (jsonrpc == "2.0" && id == expected_id).then_some(())?;
    task.into_task(binding)
}

/// A response holding a result and nothing else (an `error` member is unknown here).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Response<'a, R> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: &'a str,
    result: Obj<R>,
}

/// 1.0's `SendMessageResponse` holding a task.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskMember<'a> {
    #[serde(borrow)]
    task: Obj<TaskFast<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFast<'a> {
    // v0.3's discriminator: a result is read as a task only if it says so.
    #[serde(default, borrow)]
    kind: Option<&'a str>,
    id: String,
    #[serde(rename = "contextId", default)]
    context_id: Option<String>,
    #[serde(borrow)]
    status: Obj<StatusFast<'a>>,
    // `null` is refused here (v0.3's reader refuses it as no list).
    #[serde(default, borrow)]
    artifacts: Vec<Obj<ArtifactFast<'a>>>,
    #[serde(default, borrow)]
    history: Vec<Obj<MessageFast<'a, PartFast<'a>>>>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusFast<'a> {
    #[serde(borrow)]
    state: &'a str,
    // `present`: a `null` fails here (and on a part's `text` and `data`), where the general
    // reader refuses one or reads it differently from absent.
    #[serde(default, deserialize_with = "present", borrow)]
    message: Option<Obj<MessageFast<'a, PartFast<'a>>>>,
    #[serde(default)]
    timestamp: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArtifactFast<'a> {
    #[serde(rename = "artifactId", default)]
    artifact_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, borrow)]
    parts: Vec<Obj<PartFast<'a>>>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// A text or data part of either binding: v0.3 says which by `kind`, 1.0 by which member it
/// has (and a `mediaType` the general reader reads only for a file).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PartFast<'a> {
    #[serde(default, borrow)]
    kind: Option<&'a str>,
    #[serde(default, deserialize_with = "present")]
    text: Option<String>,
    #[serde(default, deserialize_with = "present")]
    data: Option<Map<String, Value>>,
    #[serde(rename = "mediaType", default)]
    _media_type: Option<IgnoredAny>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// An optional string as the general reader's `opt_str` reads it: 1.0 reads an empty one as
/// absent.
fn optional(binding: Binding, s: Option<String>) -> Option<String> {
    s.filter(|s| binding == Binding::V03 || !s.is_empty())
}

/// A required string as `req_str` reads it: 1.0 refuses an empty one (declined here).
fn required(binding: Binding, s: String) -> Option<String> {
    (binding == Binding::V03 || !s.is_empty()).then_some(s)
}

impl TaskFast<'_> {
    /// The task the general reader (`codec::decode_result`) reads from the same text, or
    /// `None` where it would judge (a v0.3 result that does not say it is a task, a state or
    /// role it does not know, a part that is not one text or one data object, an empty id in
    /// 1.0).
    fn into_task(self, binding: Binding) -> Option<Task> {
        if binding == Binding::V03 && self.kind != Some("task") {
            return None;
        }
        let Obj(status) = self.status;
        let state = binding.state_from(&Value::from(status.state))?;
        let message = match status.message {
            Some(Obj(m)) => Some(m.into_message(binding, |p| part(binding, p))?),
            None => None,
        };
        let artifacts = self
            .artifacts
            .into_iter()
            .map(|Obj(a)| a.into_artifact(binding))
            .collect::<Option<Vec<_>>>()?;
        let history = self
            .history
            .into_iter()
            .map(|Obj(m)| m.into_message(binding, |p| part(binding, p)))
            .collect::<Option<Vec<_>>>()?;
        Some(Task {
            id: required(binding, self.id)?,
            context_id: optional(binding, self.context_id).unwrap_or_default(),
            status: TaskStatus {
                state,
                message,
                timestamp: optional(binding, status.timestamp),
            },
            artifacts,
            history,
            metadata: self.metadata,
        })
    }
}

impl ArtifactFast<'_> {
    fn into_artifact(self, binding: Binding) -> Option<Artifact> {
        let artifact_id = match binding {
            Binding::V03 => self.artifact_id?,
            Binding::V10 => optional(binding, self.artifact_id).unwrap_or_default(),
        };
        Some(Artifact {
            artifact_id,
            name: optional(binding, self.name),
            description: optional(binding, self.description),
            parts: (self.parts.into_iter())
                .map(|Obj(p)| part(binding, p))
                .collect::<Option<_>>()?,
            metadata: self.metadata,
        })
    }
}

/// The part, if it is exactly one text or one data object as the binding tells them apart.
fn part(binding: Binding, p: PartFast<'_>) -> Option<Part> {
    let metadata = p.metadata;
    match (binding, p.kind, p.text, p.data) {
        (Binding::V03, Some("text"), Some(text), None) | (Binding::V10, None, Some(text), None) => {
            Some(Part::Text { text, metadata })
        }
        (Binding::V03, Some("data"), None, Some(data)) | (Binding::V10, None, None, Some(data)) => {
            Some(Part::Data {
                data: Value::Object(data),
                metadata,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::a2a::codec::{Json, decode_result};
    use crate::wire::a2a::model::{Message, Role, SendResult, TaskState};
    use crate::wire::jsonrpc;
    use serde_json::json;

    const ID: &str = "01a229c2-bbf5-7000-8000-000000000001";
    const BOTH: [Binding; 2] = [Binding::V03, Binding::V10];

    /// The reply read the general way: the result, or the error as its `Debug` text.
    fn general(binding: Binding, body: &str) -> Result<SendResult, String> {
        let result =
            jsonrpc::read_response(body.as_bytes(), &json!(ID)).map_err(|e| format!("{e:?}"))?;
        decode_result(binding, result).map_err(|e| format!("{e:?}"))
    }

    fn fast(binding: Binding, body: &str) -> Option<Task> {
        read_task(binding, body.as_bytes(), ID)
    }

    /// A reply around `result` JSON text.
    fn reply(result: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":"{ID}","result":{result}}}"#)
    }

    /// A task with every member the fast reader reads, as ddwire's agent server writes it.
    fn full_task() -> Task {
        let mut metadata = Map::new();
        metadata.insert("dd.trace_id".into(), json!("4bf9"));
        let mut request = Message::new(
            Role::User,
            vec![
                Part::data(
                    json!({"agent_id": "echo.wire", "input": {"n": 1.0, "s": "é\u{1F600}"}}),
                ),
                Part::text("hi"),
            ],
        );
        request.context_id = Some("c".into());
        request.task_id = Some("t".into());
        request.metadata = Some(metadata.clone());
        let mut status_message = Message::new(Role::Agent, vec![Part::text("done")]);
        status_message.context_id = Some("c".into());
        let mut artifact = Artifact::new(
            "agent-result",
            vec![Part::Data {
                data: json!({"result": {"outcome": {"status": "succeeded", "detail": null}},
                             "spans": ["{\"name\": \"chat\"}"]}),
                metadata: Some(metadata.clone()),
            }],
        );
        artifact.description = Some("the reply".into());
        Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: Some(status_message),
                timestamp: Some("2025-06-01T12:00:00Z".into()),
            },
            artifacts: vec![artifact, Artifact::new("other", vec![Part::text("x")])],
            history: vec![request],
            metadata: Some(metadata),
        }
    }

    fn written(binding: Binding, task: &Task) -> String {
        let result = serde_json::to_string(&Json(binding, &SendResult::Task(task.clone())));
        jsonrpc::success_text(&json!(ID), &result.unwrap())
    }

    /// The `send-*` server responses the SDKs wrote, in `binding`.
    fn sdk_replies(binding: Binding) -> Vec<String> {
        let files = [
            include_str!("../../../fixtures/a2a/a2a-sdk-0.3.26.jsonl"),
            include_str!("../../../fixtures/a2a/a2a-sdk-1.3.0.jsonl"),
        ];
        files
            .iter()
            .flat_map(|f| f.lines())
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|l| {
                l["direction"] == "server-response"
                    && l["binding"] == binding.version()
                    && l["case"].as_str().unwrap().contains("send-")
            })
            .map(|l| {
                let body = l["body"].as_str().unwrap();
                let id = serde_json::from_str::<Value>(body).unwrap()["id"].clone();
                body.replace(id.as_str().unwrap(), ID)
            })
            .collect()
    }

    #[test]
    fn a_plain_task_reply_is_read_by_the_fast_reader_as_the_general_reader_reads_it() {
        for binding in BOTH {
            let mut bodies = sdk_replies(binding);
            assert!(bodies.len() >= 2, "{binding:?}");
            bodies.push(written(binding, &full_task()));
            let mut bare = full_task();
            bare.status.message = None;
            bare.status.timestamp = None;
            bare.artifacts.clear();
            bare.history.clear();
            bare.metadata = None;
            bodies.push(written(binding, &bare));
            // Spacing, member order, escapes in strings kept, numbers as written, a non-finite
            // number and a duplicate key inside data, `null` where both readers read absent.
            let (open, close) = match binding {
                Binding::V03 => (r#"{"kind":"task","#, "}"),
                Binding::V10 => (r#"{"task":{"#, "}}"),
            };
            let (state, role, data_part) = match binding {
                Binding::V03 => ("completed", "agent", r#"{"kind":"data","#),
                Binding::V10 => ("TASK_STATE_COMPLETED", "ROLE_AGENT", r#"{"mediaType":"x","#),
            };
            bodies.push(format!(
                " {{ \"result\" : {open} \"status\":{{\"timestamp\":null,\"state\":\"{state}\"}},\"id\":\"t\\u00e9\",\"metadata\":null,\
                 \"history\":[{{\"role\":\"{role}\",\"messageId\":\"m\\n\",\"contextId\":null,\"parts\":[{data_part}\"data\":{{\"a\":1,\"a\":[2.50,1e999,-0,12345678901234567890123],\"\\u00e9\":{{}}}},\"metadata\":null}}]}}]\
                 {close}, \"id\" : \"{ID}\", \"jsonrpc\" : \"2.0\" }}\n"
            ));
            for body in &bodies {
                let fast = fast(binding, body).unwrap_or_else(|| panic!("declined: {body}"));
                assert_eq!(Ok(SendResult::Task(fast)), general(binding, body), "{body}");
            }
        }
    }

    /// Replies the fast reader leaves to the general reader, each in both bindings' shape.
    fn odd_results(binding: Binding) -> Vec<String> {
        let (task, state, role, kind_data) = match binding {
            Binding::V03 => (
                r#""kind":"task","#,
                "completed",
                "user",
                r#""kind":"data","#,
            ),
            Binding::V10 => ("", "TASK_STATE_COMPLETED", "ROLE_USER", ""),
        };
        let status = format!(r#""status":{{"state":"{state}"}}"#);
        let wrap = |members: &str| match binding {
            Binding::V03 => format!("{{{task}{members}}}"),
            Binding::V10 => format!(r#"{{"task":{{{members}}}}}"#),
        };
        let with_part = |part: &str| {
            wrap(&format!(
                r#""id":"t",{status},"history":[{{"role":"{role}","messageId":"m","parts":[{part}]}}]"#
            ))
        };
        let mut odd = vec![
            // The result is no plain task.
            "null".into(),
            "[]".into(),
            r#""task""#.into(),
            r#"{"kind":"message","messageId":"m","role":"agent","parts":[]}"#.into(),
            r#"{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[]}}"#.into(),
            format!(r#"{{"id":"t",{status}}}"#),
            format!(r#"{{"kind":"status-update","id":"t",{status}}}"#),
            r#"{"task":null}"#.into(),
            format!(r#"{{"task":{{"id":"t",{status}}},"message":{{}}}}"#),
            format!(r#"[{{"id":"t",{status}}}]"#),
            // The task's members.
            wrap(&status),
            wrap(r#""id":"t""#),
            wrap(&format!(r#""id":7,{status}"#)),
            wrap(&format!(r#""id":"t","id":"u",{status}"#)),
            wrap(&format!(r#""id":"t",{status},{status}"#)),
            wrap(r#""id":"t","status":null"#),
            wrap(r#""id":"t","status":[]"#),
            wrap(r#""id":"t","status":{}"#),
            wrap(r#""id":"t","status":{"state":"done"}"#),
            wrap(r#""id":"t","status":{"state":3}"#),
            wrap(r#""id":"t","status":{"state":"completed","extra":1}"#),
            wrap(r#""id":"t","status":{"state":"TASK_STATE_COMPLETED","message":null}"#),
            wrap(r#""id":"t","status":{"state":"completed","timestamp":5}"#),
            wrap(&format!(r#""id":"t",{status},"contextId":5"#)),
            wrap(&format!(r#""id":"t",{status},"context_id":"c""#)),
            wrap(&format!(r#""id":"t",{status},"artifacts":null"#)),
            wrap(&format!(r#""id":"t",{status},"artifacts":{{}}"#)),
            wrap(&format!(r#""id":"t",{status},"artifacts":[null]"#)),
            wrap(&format!(
                r#""id":"t",{status},"artifacts":[{{"artifactId":5,"parts":[]}}]"#
            )),
            wrap(&format!(
                r#""id":"t",{status},"artifacts":[{{"artifactId":"a","parts":null}}]"#
            )),
            wrap(&format!(r#""id":"t",{status},"history":null"#)),
            wrap(&format!(r#""id":"t",{status},"history":[[]]"#)),
            wrap(&format!(r#""id":"t",{status},"metadata":[]"#)),
            wrap(&format!(r#""id":"t",{status},"extra":true"#)),
            wrap(&format!(
                r#""id":"t",{status},"history":[{{"role":"robot","messageId":"m","parts":[]}}]"#
            )),
            wrap(&format!(
                r#""id":"t",{status},"history":[{{"role":1,"messageId":"m","parts":[]}}]"#
            )),
            wrap(&format!(
                r#""id":"t",{status},"history":[{{"role":"{role}","parts":[]}}]"#
            )),
            wrap(&format!(
                r#""id":"t",{status},"history":[{{"role":"{role}","messageId":"m","referenceTaskIds":["x"]}}]"#
            )),
            wrap(&format!(
                r#""id":"t",{status},"history":[{{"role":"{role}","messageId":"m","metadata":5}}]"#
            )),
            // Parts.
            with_part("null"),
            with_part(r#"{"kind":"text","text":5}"#),
            with_part(r#"{"kind":"text","text":null}"#),
            with_part(r#"{"kind":"data","data":[1]}"#),
            with_part(r#"{"kind":"data","data":null}"#),
            with_part(r#"{"kind":"data"}"#),
            with_part(r#"{"kind":"file","file":{"uri":"u"}}"#),
            with_part(r#"{"kind":"robot","text":"hi"}"#),
            with_part(r#"{"kind":7,"text":"hi"}"#),
            with_part(r#"{"data":{},"text":"hi"}"#),
            with_part(r#"{"data":{},"text":null}"#),
            with_part(r#"{"data":null}"#),
            with_part(r#"{"data":5}"#),
            with_part(r#"{"raw":"aGk=","mediaType":"text/plain"}"#),
            with_part(r#"{"url":"https://x"}"#),
            with_part("{}"),
            with_part(&format!(r#"{{{kind_data}"data":{{}},"metadata":"m"}}"#)),
            with_part(&format!(r#"{{{kind_data}"data":{{}},"extra":1}}"#)),
            with_part(&format!(r#"{{{kind_data}"data":{{}},"data":{{}}}}"#)),
            // Over the limits, or not JSON.
            with_part(&format!(
                r#"{{{kind_data}"data":{{"d":{}{}}}}}"#,
                "[".repeat(130),
                "]".repeat(130)
            )),
            with_part(&format!(
                r#"{{{kind_data}"data":{{"n":{}}}}}"#,
                "1".repeat(crate::json::MAX_INTEGER_DIGITS + 1)
            )),
            with_part(&format!(r#"{{{kind_data}"data":{{"s":"\ud800"}}}}"#)),
            with_part(&format!(r#"{{{kind_data}"data":{{"n":NaN}}}}"#)),
            with_part(&format!(r#"{{{kind_data}"data":{{"n":01}}}}"#)),
        ];
        if binding == Binding::V03 {
            // v0.3 requires an artifact's id and a part's kind.
            odd.push(wrap(&format!(
                r#""id":"t",{status},"artifacts":[{{"name":"a","parts":[]}}]"#
            )));
            odd.push(with_part(r#"{"text":"hi"}"#));
        }
        odd
    }

    #[test]
    fn the_fast_reader_declines_every_reply_it_cannot_read_exactly_as_the_general_reader() {
        for binding in BOTH {
            let good = match binding {
                Binding::V03 => r#"{"kind":"task","id":"t","status":{"state":"completed"}}"#,
                Binding::V10 => r#"{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}}"#,
            };
            assert!(fast(binding, &reply(good)).is_some(), "{binding:?}");
            let mut declined: Vec<String> = odd_results(binding).iter().map(|r| reply(r)).collect();
            declined.extend([
                // Not one JSON-RPC response holding a result for this call.
                String::new(),
                "{".into(),
                format!("{} x", reply(good)),
                format!("[{}]", reply(good)),
                format!(r#"["2.0","{ID}",{good}]"#),
                format!(r#"{{"id":"{ID}","result":{good}}}"#),
                format!(r#"{{"jsonrpc":"1.0","id":"{ID}","result":{good}}}"#),
                format!(r#"{{"jsonrpc":2.0,"id":"{ID}","result":{good}}}"#),
                format!(r#"{{"jsonrpc":"2\u002e0","id":"{ID}","result":{good}}}"#),
                format!(r#"{{"jsonrpc":"2.0","jsonrpc":"2.0","id":"{ID}","result":{good}}}"#),
                format!(r#"{{"jsonrpc":"2.0","result":{good}}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":"other","result":{good}}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":1,"result":{good}}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":null,"result":{good}}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":"{}","result":{good}}}"#, ID.replace('0', "\\u0030")),
                format!(r#"{{"jsonrpc":"2.0","id":"{ID}"}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":"{ID}","result":{good},"result":{good}}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":"{ID}","result":{good},"extra":1}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":"{ID}","error":{{"code":-32001,"message":"Task not found"}}}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":"{ID}","result":{good},"error":{{"code":-32603,"message":"x"}}}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":"{ID}","error":{{"code":"x"}}}}"#),
                r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"bad"}}"#.into(),
            ]);
            if binding == Binding::V10 {
                // 1.0 reads an empty string as absent, and the id is required.
                declined.push(reply(
                    r#"{"task":{"id":"","status":{"state":"TASK_STATE_COMPLETED"}}}"#,
                ));
                declined.push(reply(
                    r#"{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"},"history":[{"role":"ROLE_USER","messageId":"","parts":[]}]}}"#,
                ));
            }
            let taken: Vec<&String> = declined
                .iter()
                .filter(|b| fast(binding, b).is_some())
                .collect();
            assert!(taken.is_empty(), "{binding:?} taken: {taken:#?}");
            // Most of them are errors of the general reader, each of which it reports alone.
            let refused = declined.iter().filter(|b| general(binding, b).is_err());
            let refused = refused.count();
            assert!(refused > 50, "{binding:?}: {refused} of {}", declined.len());
            // Bytes that are no UTF-8.
            let mut bytes = reply(good).into_bytes();
            bytes.insert(bytes.len() - 20, 0xff);
            assert!(read_task(binding, &bytes, ID).is_none());
        }
    }
}
