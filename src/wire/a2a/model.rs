//! One model of A2A's objects, whatever binding carried them.
//!
//! A2A v0.3 and A2A 1.0 name the same things differently (`kind` discriminators and
//! lower-case enums against ProtoJSON oneofs and `ROLE_USER`); one codec (`super::codec`),
//! told the binding, translates between this model and either binding's JSON.

use super::error::A2aError;
use serde_json::{Map, Value};

/// Who sent a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The caller.
    User,
    /// The agent.
    Agent,
}

/// One piece of message or artifact content.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// The part's metadata, if any.
        metadata: Option<Map<String, Value>>,
    },
    /// Structured data. Numbers may arrive as floats (`1.0`) from a protobuf `Struct`.
    Data {
        /// The data.
        data: Value,
        /// The part's metadata, if any.
        metadata: Option<Map<String, Value>>,
    },
    /// A file.
    File {
        /// The file.
        file: File,
        /// The part's metadata, if any.
        metadata: Option<Map<String, Value>>,
    },
    /// Structured data its sender already wrote as JSON text: a data part on the wire, exactly
    /// like [`Part::Data`]. A server builds it for data it made itself (`Part::encoded`), so
    /// the object is written once and copied into each answer, never built as a value tree,
    /// written again and freed. Nothing read from the wire is one: decoders make
    /// [`Part::Data`], and `Message::data_parts` sees only those.
    Encoded {
        /// The data, a JSON object.
        json: EncodedJson,
        /// The part's metadata, if any.
        metadata: Option<Map<String, Value>>,
    },
}

/// JSON text, written once by `EncodedJson::of` and written out again verbatim.
#[derive(Clone, Debug)]
pub struct EncodedJson(Box<serde_json::value::RawValue>);

impl EncodedJson {
    /// `value` written as JSON text.
    pub(crate) fn of<T: serde::Serialize + ?Sized>(value: &T) -> EncodedJson {
        EncodedJson(
            serde_json::value::to_raw_value(value).expect("a model value always serialises"),
        )
    }

    /// The JSON text.
    pub(crate) fn get(&self) -> &str {
        self.0.get()
    }

    /// The JSON read back as a value tree.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.get()).expect("written by serde_json")
    }
}

impl PartialEq for EncodedJson {
    fn eq(&self, other: &EncodedJson) -> bool {
        self.get() == other.get()
    }
}

impl serde::Serialize for EncodedJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// A file, inline (base64 bytes) or by reference (a URI).
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    /// The content, base64, when inline.
    pub(crate) bytes: Option<String>,
    /// Where the content is, when by reference.
    pub(crate) uri: Option<String>,
    /// The file's name, if given.
    pub(crate) name: Option<String>,
    /// The content's media type, if given.
    pub(crate) media_type: Option<String>,
}

impl Part {
    /// A data part without metadata.
    pub fn data(data: Value) -> Part {
        Part::Data {
            data,
            metadata: None,
        }
    }

    /// A data part holding `value` already written as JSON text (see [`Part::Encoded`]).
    pub(crate) fn encoded<T: serde::Serialize + ?Sized>(value: &T) -> Part {
        Part::Encoded {
            json: EncodedJson::of(value),
            metadata: None,
        }
    }

    /// A text part without metadata.
    pub(crate) fn text(text: impl Into<String>) -> Part {
        Part::Text {
            text: text.into(),
            metadata: None,
        }
    }
}

/// A message between a client and an agent.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// The message's id, unique per sender.
    pub(crate) message_id: String,
    /// Who sent it.
    pub(crate) role: Role,
    /// Its content.
    pub(crate) parts: Vec<Part>,
    /// The context (conversation) it belongs to, if named.
    pub(crate) context_id: Option<String>,
    /// The task it continues, if any.
    pub(crate) task_id: Option<String>,
    /// Other tasks it refers to.
    pub(crate) reference_task_ids: Vec<String>,
    /// Extension URIs the message uses.
    pub(crate) extensions: Vec<String>,
    /// Its metadata (the Data Director keys of [`meta`](super::meta) travel here).
    pub(crate) metadata: Option<Map<String, Value>>,
}

impl Message {
    /// A message with a fresh id.
    pub fn new(role: Role, parts: Vec<Part>) -> Message {
        Message {
            message_id: crate::ids::new_uuid7(),
            role,
            parts,
            context_id: None,
            task_id: None,
            reference_task_ids: Vec::new(),
            extensions: Vec::new(),
            metadata: None,
        }
    }

    /// The message's metadata value under `key`, if it is a string.
    pub(crate) fn meta_str(&self, key: &str) -> Option<&str> {
        self.metadata.as_ref()?.get(key)?.as_str()
    }

    /// The data parts' values, in order.
    pub(crate) fn data_parts(&self) -> Vec<&Value> {
        self.parts
            .iter()
            .filter_map(|p| {
                if let Part::Data { data, .. } = p {
                    Some(data)
                } else {
                    None
                }
            })
            .collect()
    }
}

/// Where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Received, not yet started.
    Submitted,
    /// Being worked on.
    Working,
    /// Waiting for the caller's next message.
    InputRequired,
    /// Finished with a result (terminal).
    Completed,
    /// Canceled by the caller (terminal).
    Canceled,
    /// Finished without a result (terminal).
    Failed,
    /// Refused by the agent (terminal).
    Rejected,
    /// Waiting for the caller to authenticate.
    AuthRequired,
    /// A state this side does not know (A2A 1.0's `TASK_STATE_UNSPECIFIED`).
    Unknown,
}

impl TaskState {
    /// Whether the task can change no more.
    pub(crate) fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Canceled | TaskState::Failed | TaskState::Rejected
        )
    }
}

/// A task's state, with an optional message and time.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskStatus {
    /// Where the task stands.
    pub state: TaskState,
    /// The agent's latest message about it (a failed task's reason, say).
    pub(crate) message: Option<Message>,
    /// RFC 3339.
    pub(crate) timestamp: Option<String>,
}

/// An output of a task.
#[derive(Clone, Debug, PartialEq)]
pub struct Artifact {
    /// The artifact's id, unique within its task.
    pub(crate) artifact_id: String,
    /// Its name (`agent-result`, `envelope`: see `artifact`).
    pub name: Option<String>,
    /// A description, if any.
    pub(crate) description: Option<String>,
    /// Its content.
    pub(crate) parts: Vec<Part>,
    /// Its metadata, if any.
    pub(crate) metadata: Option<Map<String, Value>>,
}

impl Artifact {
    /// A named artifact with a fresh id.
    pub(crate) fn new(name: &str, parts: Vec<Part>) -> Artifact {
        Artifact {
            artifact_id: crate::ids::new_uuid7(),
            name: Some(name.to_string()),
            description: None,
            parts,
            metadata: None,
        }
    }
}

/// A unit of work and what came of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// The task's id.
    pub(crate) id: String,
    /// The context (conversation) it belongs to.
    pub(crate) context_id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// What it produced.
    pub artifacts: Vec<Artifact>,
    /// The messages exchanged for it, oldest first.
    pub(crate) history: Vec<Message>,
    /// Its metadata, if any.
    pub(crate) metadata: Option<Map<String, Value>>,
}

impl Task {
    /// A finished task for `request`: its status, artifacts, and the request in its history.
    #[cfg(test)]
    pub(crate) fn finished(
        request: Message,
        state: TaskState,
        status_message: Option<Message>,
        artifacts: Vec<Artifact>,
    ) -> Task {
        let id = request
            .task_id
            .clone()
            .unwrap_or_else(crate::ids::new_uuid7);
        let context_id = request
            .context_id
            .clone()
            .unwrap_or_else(crate::ids::new_uuid7);
        let mut history_entry = request;
        history_entry.task_id = Some(id.clone());
        history_entry.context_id = Some(context_id.clone());
        let status_message = status_message.map(|mut m| {
            m.task_id = Some(id.clone());
            m.context_id = Some(context_id.clone());
            m
        });
        let now = Some(crate::time::now_rfc3339());
        let mut task = Task::submitted(id, context_id, vec![history_entry], now);
        task.status.state = state;
        task.status.message = status_message;
        task.artifacts = artifacts;
        task
    }

    /// A task just made: `submitted`, its status stamped at `timestamp` (`None`: by the store
    /// that takes it), with `history` and nothing else.
    pub(crate) fn submitted(
        id: String,
        context_id: String,
        history: Vec<Message>,
        timestamp: Option<String>,
    ) -> Task {
        Task {
            id,
            context_id,
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp,
            },
            artifacts: Vec::new(),
            history,
            metadata: None,
        }
    }

    /// The artifacts named `name`.
    pub(crate) fn artifacts_named(&self, name: &str) -> Vec<&Artifact> {
        self.artifacts
            .iter()
            .filter(|a| a.name.as_deref() == Some(name))
            .collect()
    }

    /// Why a task failed: the first `error` in a data part of its status message, else its
    /// text parts joined.
    pub(crate) fn failure_detail(&self) -> Option<String> {
        let message = self.status.message.as_ref()?;
        for part in &message.parts {
            if let Part::Data { data, .. } = part
                && let Some(e) = data.get("error").and_then(Value::as_str)
            {
                return Some(e.to_string());
            }
        }
        let texts: Vec<&str> = message
            .parts
            .iter()
            .filter_map(|p| {
                if let Part::Text { text, .. } = p {
                    Some(text.as_str())
                } else {
                    None
                }
            })
            .collect();
        (!texts.is_empty()).then(|| texts.join(" "))
    }
}

/// A task as an answer shows it: at most its latest `history` messages, and its artifacts or
/// not (A2A 1.0 §3.2.4 `historyLength`, §3.1.4 `includeArtifacts`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskView<'a> {
    pub(crate) task: &'a Task,
    /// The messages of the task's history shown: its latest ones.
    pub(crate) history: &'a [Message],
    pub(crate) artifacts: bool,
}

impl Task {
    /// This task as shown with at most `history_length` of its latest history messages
    /// (`None`: all of them; `Some(0)`: none) and its artifacts if `artifacts`.
    pub(crate) fn view(&self, history_length: Option<usize>, artifacts: bool) -> TaskView<'_> {
        let keep = history_length.map_or(self.history.len(), |n| n.min(self.history.len()));
        TaskView {
            task: self,
            history: &self.history[self.history.len() - keep..],
            artifacts,
        }
    }

    /// This task as a copy limited as [`Task::view`] would show it.
    pub(crate) fn limited(&self, history_length: Option<usize>, artifacts: bool) -> Task {
        let view = self.view(history_length, artifacts);
        Task {
            history: view.history.to_vec(),
            artifacts: if artifacts {
                self.artifacts.clone()
            } else {
                Vec::new()
            },
            ..self.clone()
        }
    }
}

impl Message {
    /// The one check of a sent message's shape, whichever binding carried it (A2A 1.0 §5.7:
    /// REQUIRED fields present, required arrays not empty; 0.3 `Message`): a non-empty
    /// `messageId` and at least one part (the codec has already required `role`, and a
    /// `messageId` and `parts` of the right types). What the parts must hold is the
    /// receiver's own rule, checked after this one.
    pub(crate) fn check_shape(&self) -> Result<(), A2aError> {
        if self.message_id.is_empty() {
            return Err(A2aError::invalid(
                "params.message.messageId",
                "must not be empty",
            ));
        }
        if self.parts.is_empty() {
            return Err(A2aError::invalid(
                "params.message.parts",
                "must hold at least one part",
            ));
        }
        Ok(())
    }
}

/// How a send asks to be answered: A2A 1.0 `SendMessageConfiguration` (`returnImmediately`,
/// `historyLength`), v0.3 `MessageSendConfiguration` (`blocking`, `historyLength`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SendOptions {
    /// Answer with the task as soon as it exists, and work on it in the background (1.0
    /// `returnImmediately: true`, 0.3 `blocking: false`). Sends block by default.
    pub(crate) return_immediately: bool,
    /// Show at most this many of the task's latest history messages in the answer.
    pub(crate) history_length: Option<usize>,
}

/// What `message/send` / `SendMessage` returns.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SendResult {
    /// The agent made a task.
    Task(Task),
    /// The agent answered with a message alone.
    Message(Message),
}

/// `message/send` / `SendMessage` parameters.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SendParams {
    pub(crate) message: Message,
    /// Kept as sent; ddwire's calls are always blocking and non-streaming.
    pub(crate) configuration: Option<Value>,
    pub(crate) metadata: Option<Map<String, Value>>,
}

#[cfg(test)]
mod tests {
    use super::super::{Binding, codec::Json};
    use super::*;
    use serde_json::json;

    #[test]
    fn an_encoded_data_part_is_written_as_the_data_part_it_encodes_in_both_bindings() {
        #[derive(serde::Serialize)]
        struct Body<'a> {
            result: &'a Value,
            spans: &'a [&'a str],
        }
        let result =
            json!({"outcome": {"status": "succeeded"}, "n": 1.5e300, "text": "\"quoted\" \u{e9}"});
        let spans = ["{\"name\": \"chat\"}"];
        let tree = Part::data(json!({"result": result, "spans": spans}));
        let encoded = Part::encoded(&Body {
            result: &result,
            spans: &spans,
        });
        let artifact = |part: Part| Artifact::new("agent-result", vec![part]);
        let (tree, encoded) = (artifact(tree), artifact(encoded));
        let write = |binding, a: &Artifact| serde_json::to_string(&Json(binding, a)).unwrap();
        let v03 = |a: &Artifact| write(Binding::V03, a);
        let v10 = |a: &Artifact| write(Binding::V10, a);
        let id = |text: String| text.replace(&tree.artifact_id, "ID");
        let encoded_id = |text: String| text.replace(&encoded.artifact_id, "ID");
        assert_eq!(encoded_id(v03(&encoded)), id(v03(&tree)));
        assert_eq!(encoded_id(v10(&encoded)), id(v10(&tree)));
        // What a client reads back is the same data part.
        let Part::Encoded { json, .. } = &encoded.parts[0] else {
            panic!("an encoded part")
        };
        let Part::Data { data, .. } = &tree.parts[0] else {
            panic!("a data part")
        };
        assert_eq!(&json.to_value(), data);
    }
}
