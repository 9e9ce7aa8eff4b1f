//! Streamed A2A: the events of `message/stream` and `tasks/resubscribe` (v0.3) and of
//! `SendStreamingMessage` and `SubscribeToTask` (1.0), one model for both bindings.
//!
//! A stream is Server-Sent Events ([`crate::wire::sse`]); each event is one `data:` line
//! holding a whole JSON-RPC response whose `result` is one [`StreamEvent`] (A2A 1.0 §9.4.2,
//! 0.3 §3.3.1). The bindings write the events differently:
//!
//! | event | A2A v0.3 `result` | A2A 1.0 `result` (`StreamResponse`) |
//! |---|---|---|
//! | the task | `{"kind": "task", …}` | `{"task": {…}}` |
//! | a message | `{"kind": "message", …}` | `{"message": {…}}` |
//! | a status change | `{"kind": "status-update", "taskId", "contextId", "status", "final", "metadata"?}` | `{"statusUpdate": {"taskId", "contextId", "status", "metadata"?}}` |
//! | an artifact | `{"kind": "artifact-update", "taskId", "contextId", "artifact", "append"?, "lastChunk"?, "metadata"?}` | `{"artifactUpdate": {…, "append"?, "lastChunk"?}}` |
//!
//! v0.3's `TaskStatusUpdateEvent` carries `final` (true on the last event of the stream); 1.0's
//! has no such field: a 1.0 stream ends when the task reaches a terminal or interrupted state
//! (1.0 §3.1.2), and reading a 1.0 event takes `final` from the state. The one codec
//! (`super::codec`) writes and reads them, beside the rest of each binding; the stream events
//! of a2a-sdk 0.3.26 and 1.3.0, as this module's tests write them out, are its test vectors.

use super::Binding;
use super::model::{Artifact, Message, Task, TaskState, TaskStatus};
#[cfg(test)]
use crate::wire::WireError;
use serde_json::{Map, Value};

/// A task's status changed (`TaskStatusUpdateEvent`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StatusUpdate {
    pub(crate) task_id: String,
    pub(crate) context_id: String,
    pub(crate) status: TaskStatus,
    /// The last event of the stream (v0.3 `final`). A 1.0 event has no such field; decoded, it
    /// is whether the state is terminal or interrupted, and it is not written.
    pub(crate) is_final: bool,
    pub(crate) metadata: Option<Map<String, Value>>,
}

impl StatusUpdate {
    /// An update of `task` to `state` now, final if the state ends the stream.
    pub(crate) fn now(task_id: &str, context_id: &str, state: TaskState) -> StatusUpdate {
        StatusUpdate {
            task_id: task_id.to_string(),
            context_id: context_id.to_string(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: Some(crate::time::now_rfc3339()),
            },
            is_final: ends_stream(state),
            metadata: None,
        }
    }
}

/// A task produced or extended an artifact (`TaskArtifactUpdateEvent`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ArtifactUpdate {
    pub(crate) task_id: String,
    pub(crate) context_id: String,
    pub(crate) artifact: Artifact,
    /// Append to the artifact with the same id sent before.
    pub(crate) append: bool,
    /// The last chunk of the artifact.
    pub(crate) last_chunk: bool,
    pub(crate) metadata: Option<Map<String, Value>>,
}

/// One event of a stream (the `result` of one SSE frame).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StreamEvent {
    /// The task as it stands (the first event of a task's stream, and of a subscription).
    Task(Task),
    /// The agent answered with a message alone (the only event of such a stream).
    Message(Message),
    /// The task's status changed.
    Status(StatusUpdate),
    /// The task produced an artifact.
    Artifact(ArtifactUpdate),
}

/// Whether a task in `state` has nothing more to stream: terminal, or waiting for input.
pub(crate) fn ends_stream(state: TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

impl StreamEvent {
    /// Whether the stream ends with this event: a message, a final status update, or a task
    /// that is already terminal or waiting for input.
    pub(crate) fn is_last(&self) -> bool {
        match self {
            StreamEvent::Message(_) => true,
            StreamEvent::Status(s) => s.is_final,
            StreamEvent::Task(t) => ends_stream(t.status.state),
            StreamEvent::Artifact(_) => false,
        }
    }

    /// The id of the task the event belongs to (none for a message without one).
    pub(crate) fn task_id(&self) -> Option<&str> {
        match self {
            StreamEvent::Task(t) => Some(&t.id),
            StreamEvent::Message(m) => m.task_id.as_deref(),
            StreamEvent::Status(s) => Some(&s.task_id),
            StreamEvent::Artifact(a) => Some(&a.task_id),
        }
    }

    /// One SSE frame's `data` as a client reads it: a JSON-RPC response answering
    /// `expected_id`, whose `result` is an event in `binding`, or whose `error` is
    /// [`WireError::JsonRpc`] (a server may refuse a stream with one error frame). The relay
    /// reads frames with its own reader; the tests read ours with this.
    #[cfg(test)]
    pub(crate) fn from_frame(
        data: &[u8],
        expected_id: &Value,
        binding: Binding,
    ) -> Result<StreamEvent, WireError> {
        let result = crate::wire::jsonrpc::read_response(data, expected_id)?;
        StreamEvent::from_json(result, binding)
            .map_err(|e| WireError::protocol(None, format!("the stream event is outside A2A: {e}")))
    }

    /// The whole SSE frame for this event, answering the call `id`: `data: <response>\n\n`.
    pub(crate) fn to_frame(&self, id: &Value, binding: Binding) -> Vec<u8> {
        let response = crate::wire::jsonrpc::success_text(id, &self.to_json_text(binding));
        crate::wire::sse::event(&response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::a2a::model::{Part, Role};
    use serde_json::json;

    fn decode(binding: Binding, text: &str) -> StreamEvent {
        StreamEvent::from_json(serde_json::from_str(text).unwrap(), binding)
            .unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// Write, read back, and compare: each binding's codec is lossless for its own output.
    fn round_trip(event: &StreamEvent) {
        for binding in [Binding::V03, Binding::V10] {
            let back = StreamEvent::from_json(event.to_json(binding), binding).unwrap();
            assert_eq!(&back, event, "{binding:?}");
        }
    }

    // Verbatim `result`s from an a2a-sdk 0.3.26 server's `message/stream`, recorded as the A2A
    // TCK's `tck-stream-001` ran against it (`vendor-notes/a2a.md`, "Conformance: the A2A TCK").
    const V03_TASK: &str = r#"{"contextId":"27d9bb78-087b-406d-9039-9e9e07dca1d8","history":[{"contextId":"27d9bb78-087b-406d-9039-9e9e07dca1d8","kind":"message","messageId":"tck-stream-001-2cf1dd93","parts":[{"kind":"text","text":"hello"}],"role":"user","taskId":"9faa3388-c798-4f17-b713-6e9f3c6a3fdd"}],"id":"9faa3388-c798-4f17-b713-6e9f3c6a3fdd","kind":"task","status":{"state":"submitted"}}"#;
    const V03_WORKING: &str = r#"{"contextId":"27d9bb78-087b-406d-9039-9e9e07dca1d8","final":false,"kind":"status-update","status":{"state":"working","timestamp":"2026-11-30T14:08:21.973244+00:00"},"taskId":"9faa3388-c798-4f17-b713-6e9f3c6a3fdd"}"#;
    const V03_ARTIFACT: &str = r#"{"artifact":{"artifactId":"1532a9d8-37c3-432a-ad8b-5945b2e325d1","parts":[{"kind":"text","text":"Stream hello from TCK"}]},"contextId":"27d9bb78-087b-406d-9039-9e9e07dca1d8","kind":"artifact-update","taskId":"9faa3388-c798-4f17-b713-6e9f3c6a3fdd"}"#;
    const V03_COMPLETED: &str = r#"{"contextId":"27d9bb78-087b-406d-9039-9e9e07dca1d8","final":true,"kind":"status-update","status":{"state":"completed","timestamp":"2026-11-30T14:08:21.973319+00:00"},"taskId":"9faa3388-c798-4f17-b713-6e9f3c6a3fdd"}"#;
    // a2a-sdk 1.3.0 on its 0.3 compat path spells out `append` and `lastChunk`.
    const V03_COMPAT_ARTIFACT: &str = r#"{"append":false,"artifact":{"artifactId":"061156ff-8092-4cd1-81b3-acc32f775ab2","parts":[{"kind":"text","text":"Stream hello from TCK"}]},"contextId":"cebea7a3-138c-4fcf-ba38-9c76c8747f06","kind":"artifact-update","lastChunk":false,"taskId":"b38a4d65-42ee-4e54-b4dc-af96d0191ebf"}"#;

    // Verbatim `result`s from an a2a-sdk 1.3.0 server's `SendStreamingMessage`, recorded the
    // same way.
    const V10_TASK: &str = r#"{"task": {"id": "a8477293-7d04-4304-a724-561891a1b14f", "contextId": "ea6e8c00-9ffd-409c-81f6-97ad055704d3", "status": {"state": "TASK_STATE_SUBMITTED"}, "history": [{"messageId": "tck-stream-001-79084e05", "contextId": "ea6e8c00-9ffd-409c-81f6-97ad055704d3", "taskId": "a8477293-7d04-4304-a724-561891a1b14f", "role": "ROLE_USER", "parts": [{"text": "hello"}]}]}}"#;
    const V10_WORKING: &str = r#"{"statusUpdate": {"taskId": "a8477293-7d04-4304-a724-561891a1b14f", "contextId": "ea6e8c00-9ffd-409c-81f6-97ad055704d3", "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-11-30T14:07:50.338768Z"}}}"#;
    const V10_ARTIFACT: &str = r#"{"artifactUpdate": {"taskId": "a8477293-7d04-4304-a724-561891a1b14f", "contextId": "ea6e8c00-9ffd-409c-81f6-97ad055704d3", "artifact": {"artifactId": "93b6a43c-33f7-4cf9-930a-36e495703002", "parts": [{"text": "Stream hello from TCK"}]}}}"#;
    const V10_COMPLETED: &str = r#"{"statusUpdate": {"taskId": "a8477293-7d04-4304-a724-561891a1b14f", "contextId": "ea6e8c00-9ffd-409c-81f6-97ad055704d3", "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-30T14:07:50.338835Z"}}}"#;
    const V10_MESSAGE: &str = r#"{"message": {"messageId": "1b2e", "contextId": "961e", "taskId": "58ed", "role": "ROLE_AGENT", "parts": [{"text": "Direct message response"}]}}"#;

    #[test]
    fn an_a2a_sdk_0_3_stream_reads_as_task_working_artifact_and_final_completed() {
        let events: Vec<StreamEvent> = [V03_TASK, V03_WORKING, V03_ARTIFACT, V03_COMPLETED]
            .iter()
            .map(|t| decode(Binding::V03, t))
            .collect();
        let StreamEvent::Task(task) = &events[0] else {
            panic!("{:?}", events[0])
        };
        assert_eq!(task.status.state, TaskState::Submitted);
        assert_eq!(task.history[0].parts, vec![Part::text("hello")]);
        let StreamEvent::Status(working) = &events[1] else {
            panic!("{:?}", events[1])
        };
        assert_eq!(working.status.state, TaskState::Working);
        assert!(!working.is_final && !events[1].is_last());
        assert_eq!(working.task_id, task.id);
        let StreamEvent::Artifact(artifact) = &events[2] else {
            panic!("{:?}", events[2])
        };
        assert_eq!(
            artifact.artifact.parts,
            vec![Part::text("Stream hello from TCK")]
        );
        assert!(!artifact.append && !artifact.last_chunk);
        assert!(events[3].is_last());
        assert_eq!(events.iter().filter(|e| e.is_last()).count(), 1);
        let compat = decode(Binding::V03, V03_COMPAT_ARTIFACT);
        assert!(matches!(compat, StreamEvent::Artifact(ref a) if !a.append && !a.last_chunk));
    }

    #[test]
    fn an_a2a_sdk_1_0_stream_reads_as_task_working_artifact_and_completed_which_is_last() {
        let events: Vec<StreamEvent> = [V10_TASK, V10_WORKING, V10_ARTIFACT, V10_COMPLETED]
            .iter()
            .map(|t| decode(Binding::V10, t))
            .collect();
        assert!(
            matches!(&events[0], StreamEvent::Task(t) if t.status.state == TaskState::Submitted)
        );
        assert!(
            matches!(&events[1], StreamEvent::Status(s) if s.status.state == TaskState::Working && !s.is_final)
        );
        assert!(matches!(&events[2], StreamEvent::Artifact(_)));
        // 1.0 has no `final`: a terminal state ends the stream.
        assert!(matches!(&events[3], StreamEvent::Status(s) if s.is_final));
        assert_eq!(events.iter().filter(|e| e.is_last()).count(), 1);
        let message = decode(Binding::V10, V10_MESSAGE);
        assert!(message.is_last());
        assert_eq!(message.task_id(), Some("58ed"));
    }

    #[test]
    fn each_binding_writes_status_and_artifact_updates_as_its_sdk_does() {
        let mut update = StatusUpdate::now("t-1", "c-1", TaskState::Working);
        update.metadata = Some(
            json!({"dd.stage": "policy_gate"})
                .as_object()
                .unwrap()
                .clone(),
        );
        let status = StreamEvent::Status(update);
        let v03 = status.to_json(Binding::V03);
        assert_eq!(v03["kind"], "status-update");
        assert_eq!(v03["final"], false, "v0.3 always writes final: {v03}");
        assert_eq!(v03["status"]["state"], "working");
        assert_eq!(v03["metadata"]["dd.stage"], "policy_gate");
        let v10 = status.to_json(Binding::V10);
        let inner = &v10["statusUpdate"];
        assert_eq!(inner["status"]["state"], "TASK_STATE_WORKING");
        assert_eq!(inner["taskId"], "t-1");
        assert!(inner.get("final").is_none(), "1.0 has no final: {v10}");
        assert!(inner.get("kind").is_none());

        let artifact = StreamEvent::Artifact(ArtifactUpdate {
            task_id: "t-1".into(),
            context_id: "c-1".into(),
            artifact: Artifact::new("envelope", vec![Part::data(json!({"a": 1}))]),
            append: false,
            last_chunk: true,
            metadata: None,
        });
        let v03 = artifact.to_json(Binding::V03);
        assert_eq!(v03["kind"], "artifact-update");
        assert_eq!(v03["lastChunk"], true);
        assert!(v03.get("append").is_none(), "false is left out: {v03}");
        assert_eq!(v03["artifact"]["parts"][0]["kind"], "data");
        let v10 = artifact.to_json(Binding::V10);
        assert_eq!(v10["artifactUpdate"]["artifact"]["name"], "envelope");
        assert_eq!(v10["artifactUpdate"]["lastChunk"], true);
        round_trip(&status);
        round_trip(&artifact);
    }

    #[test]
    fn a_final_status_update_ends_the_stream_in_both_bindings() {
        for state in [
            TaskState::Completed,
            TaskState::Failed,
            TaskState::Canceled,
            TaskState::Rejected,
            TaskState::InputRequired,
        ] {
            let event = StreamEvent::Status(StatusUpdate::now("t", "c", state));
            assert!(event.is_last(), "{state:?}");
            assert_eq!(event.to_json(Binding::V03)["final"], true);
            round_trip(&event);
        }
        let working = StreamEvent::Status(StatusUpdate::now("t", "c", TaskState::Working));
        assert!(!working.is_last());
    }

    #[test]
    fn a_task_and_a_message_round_trip_through_both_bindings() {
        let mut asked = Message::new(Role::User, vec![Part::data(json!({"x": 1}))]);
        asked.task_id = Some("t".into());
        asked.context_id = Some("c".into());
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some("2026-01-02T03:04:05Z".into()),
            },
            artifacts: Vec::new(),
            history: vec![asked.clone()],
            metadata: None,
        };
        round_trip(&StreamEvent::Task(task));
        let mut reply = Message::new(Role::Agent, vec![Part::text("hi")]);
        reply.task_id = Some("t".into());
        round_trip(&StreamEvent::Message(reply));
    }

    #[test]
    fn an_event_outside_a2a_is_refused_naming_where() {
        let cases = [
            (
                Binding::V03,
                r#"{"kind":"status-update","taskId":"t","contextId":"c"}"#,
                "status",
            ),
            (
                Binding::V03,
                r#"{"kind":"artifact-update","taskId":"t","contextId":"c"}"#,
                "artifact",
            ),
            (Binding::V03, r#"{"kind":"telegram"}"#, "kind"),
            (Binding::V03, r#"[1]"#, "result"),
            (
                Binding::V10,
                r#"{"statusUpdate": {"taskId": "t", "status": {"state": "NOPE"}}}"#,
                "state",
            ),
            (
                Binding::V10,
                r#"{"task": {}, "message": {}}"#,
                "more than one",
            ),
            (Binding::V10, r#"{}"#, "none of"),
            (
                Binding::V10,
                r#"{"artifactUpdate": {"taskId": "t"}}"#,
                "artifact",
            ),
        ];
        for (binding, text, named) in cases {
            let err = StreamEvent::from_json(serde_json::from_str(text).unwrap(), binding)
                .expect_err(text);
            assert!(err.to_string().contains(named), "{text}: {err}");
        }
    }

    #[test]
    fn a_frame_is_one_data_line_holding_a_json_rpc_response_and_reads_back() {
        let event = StreamEvent::Status(StatusUpdate::now("t", "c", TaskState::Completed));
        for (binding, id) in [(Binding::V03, json!(44)), (Binding::V10, json!("a-b"))] {
            let frame = event.to_frame(&id, binding);
            let text = std::str::from_utf8(&frame).unwrap();
            assert!(
                text.starts_with("data: {") && text.ends_with("}\n\n"),
                "{text}"
            );
            assert_eq!(text.matches('\n').count(), 2);
            let data = text.strip_prefix("data: ").unwrap().trim_end();
            assert_eq!(
                StreamEvent::from_frame(data.as_bytes(), &id, binding).unwrap(),
                event
            );
        }
        // A stream refused with one error frame (a2a-sdk 0.3.26 does this).
        let refused = br#"{"error":{"code":-32602,"message":"Task t is in terminal state: completed"},"id":48,"jsonrpc":"2.0"}"#;
        assert!(matches!(
            StreamEvent::from_frame(refused, &json!(48), Binding::V03),
            Err(WireError::JsonRpc { code: -32602, .. })
        ));
    }
}
