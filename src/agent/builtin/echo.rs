//! `echo.wire`: returns an `Echo` input's value unchanged, grounded on the input. It calls no
//! model (grounding mode `none`), so it measures the wire and nothing else.
//!
//! It is also ddwire's A2A conformance subject, the agent the A2A TCK runs against: a message
//! without data parts (text, files) is answered as a conversation rather than refused, which
//! no other built-in agent does (one data part, the InvocationRequest, holds for every agent that speaks the Data
//! Director contract, and for echo's contract calls):
//!
//! - by default it echoes the message's parts back as the completed task's status message;
//! - a `messageId` starting with one of the TCK 1.0 scenario prefixes
//!   (`a2a-tck/scenarios/core_operations.feature`) does what the scenario says:
//!   `tck-complete-task` completes with "Hello from TCK", `tck-artifact-text|-file|-file-url|
//!   -data` completes with that artifact, `tck-message-response` answers with a message and no
//!   task, `tck-input-required` asks for input (a later message to the task continues it),
//!   `tck-reject-task` rejects the task.
//!
//! With a delay ([`Echo::with_delay`], `ddwire agent echo --delay D`) every task it works on,
//! contract call or conversation, stays `working` for that long before it answers, so that a
//! client can watch it go submitted → working → completed and cancel it meanwhile.

use super::Decision;
use crate::agent::Conversation;
use crate::agent::{Agent, AgentError, RunContext};
use crate::contract::spec::AgentSpec;
use crate::contract::{
    AgentResult, EvidenceItem, GroundingMode, InvocationRequest, Outcome, Payload, classes,
};
use crate::wire::a2a::model::{Artifact, File, Message, Part, Role, Task, TaskState};
use crate::wire::a2a::{Progress, Reply};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// The echo agent.
pub struct Echo {
    spec: AgentSpec,
    delay: Duration,
}

impl Default for Echo {
    fn default() -> Self {
        Echo::new()
    }
}

impl Echo {
    /// The agent, answering at once.
    pub fn new() -> Echo {
        Echo {
            spec: super::builtin_spec(
                "echo.wire",
                "Returns its input's value unchanged; for measuring the wire. Also ddwire's A2A \
                 conformance subject: a message without data parts is echoed back as text, or \
                 follows the A2A TCK scenario its messageId names (tck-complete-task, \
                 tck-input-required, tck-artifact-*, tck-message-response, tck-reject-task).",
                "advise",
                GroundingMode::None,
                vec![classes::echo()],
                Some(classes::echo_reply()),
            ),
            delay: Duration::ZERO,
        }
    }

    /// An echo agent that works on each task for `delay` before it answers.
    pub(crate) fn with_delay(delay: Duration) -> Echo {
        Echo {
            delay,
            ..Echo::new()
        }
    }
}

/// Wait `delay`, or until the task is canceled; `true` if it was.
fn wait_or_cancel(delay: Duration, task: &Progress) -> bool {
    if delay.is_zero() {
        return task.is_canceled();
    }
    let until = std::time::Instant::now() + delay;
    match task.cancellation().recv_deadline(until) {
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => task.is_canceled(),
        // Woken: canceled, or the task was forgotten (then there is no one to tell).
        _ if task.is_canceled() => true,
        _ => {
            std::thread::sleep(until.saturating_duration_since(std::time::Instant::now()));
            task.is_canceled()
        }
    }
}

impl Agent for Echo {
    fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn run(&self, request: &InvocationRequest, ctx: &RunContext<'_>) -> Decision {
        if wait_or_cancel(self.delay, ctx.task) {
            return Err(AgentError::new("Canceled", "the task was canceled"));
        }
        let mut payload = Map::new();
        payload.insert("schema_class".into(), Value::String("EchoReply".into()));
        if let Some(v) = request.input.0.get("value") {
            payload.insert("value".into(), v.clone());
        }
        payload.insert(
            "grounded_on".into(),
            Value::Array(vec![super::input_ref_json(&ctx.input_ref, &ctx.input_hash)]),
        );
        let mut result =
            AgentResult::new(Outcome::succeeded("Returned the input's value unchanged."));
        result.payload = Some(Payload(payload));
        result.evidence = vec![EvidenceItem::citing_input(&ctx.input_ref, &ctx.input_hash)];
        Ok(result)
    }

    fn converse(&self, message: &Message, _continued: Option<&Task>) -> Option<Conversation> {
        if !message.data_parts().is_empty() {
            // Data parts are the contract's: one is an invocation, more are refused.
            return None;
        }
        let scenario = Scenario::of(&message.message_id);
        if scenario == Scenario::MessageResponse {
            return Some(Conversation::Message(agent_says(vec![Part::text(
                "Direct message response",
            )])));
        }
        let (delay, parts) = (self.delay, message.parts.clone());
        Some(Conversation::Task(Box::new(move |task: &Progress| {
            task.working();
            if wait_or_cancel(delay, task) {
                return Reply {
                    state: TaskState::Canceled,
                    ..Reply::completed(Vec::new())
                };
            }
            scenario.reply(parts)
        })))
    }

    fn conversation_skill(&self) -> Option<Value> {
        Some(json!({
            "id": "echo.text",
            "name": "echo (conversation)",
            "description": "Echoes a message without data parts back as the completed task's \
                            status message, or follows the A2A TCK scenario its messageId \
                            names: tck-complete-task, tck-input-required (continue the task \
                            with another message), tck-artifact-text, tck-artifact-file, \
                            tck-artifact-file-url, tck-artifact-data, tck-message-response, \
                            tck-reject-task.",
            "tags": ["a2a-conformance", "echo"],
            "inputModes": ["text/plain"],
            "outputModes": ["text/plain", "application/json"],
        }))
    }
}

/// What a conversation message asks of the echo agent, by its `messageId` prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    CompleteTask,
    ArtifactText,
    ArtifactFileUrl,
    ArtifactFile,
    ArtifactData,
    MessageResponse,
    InputRequired,
    RejectTask,
    Echo,
}

impl Scenario {
    /// The scenario a `messageId` names (the TCK appends `-<uuid8>-<transport>`). Longer
    /// prefixes first: `tck-artifact-file-url` also starts with `tck-artifact-file`.
    fn of(message_id: &str) -> Scenario {
        const PREFIXES: [(&str, Scenario); 8] = [
            ("tck-complete-task", Scenario::CompleteTask),
            ("tck-artifact-text", Scenario::ArtifactText),
            ("tck-artifact-file-url", Scenario::ArtifactFileUrl),
            ("tck-artifact-file", Scenario::ArtifactFile),
            ("tck-artifact-data", Scenario::ArtifactData),
            ("tck-message-response", Scenario::MessageResponse),
            ("tck-input-required", Scenario::InputRequired),
            ("tck-reject-task", Scenario::RejectTask),
        ];
        PREFIXES
            .iter()
            .find(|(p, _)| message_id.starts_with(p))
            .map_or(Scenario::Echo, |(_, s)| *s)
    }

    /// The reply to a message with these parts.
    fn reply(self, parts: Vec<Part>) -> Reply {
        let file = |bytes: Option<&str>, uri: Option<&str>| Part::File {
            file: File {
                bytes: bytes.map(str::to_string),
                uri: uri.map(str::to_string),
                name: Some("output.txt".into()),
                media_type: Some("text/plain".into()),
            },
            metadata: None,
        };
        let with_artifact =
            |part: Part| Reply::completed(vec![Artifact::new("output", vec![part])]);
        match self {
            Scenario::CompleteTask => Reply {
                message: Some(agent_says(vec![Part::text("Hello from TCK")])),
                ..Reply::completed(Vec::new())
            },
            Scenario::ArtifactText => with_artifact(Part::text("Generated text content")),
            // "tck", base64.
            Scenario::ArtifactFile => with_artifact(file(Some("dGNr"), None)),
            Scenario::ArtifactFileUrl => {
                with_artifact(file(None, Some("https://example.com/output.txt")))
            }
            Scenario::ArtifactData => {
                with_artifact(Part::data(json!({"key": "value", "count": 42})))
            }
            Scenario::InputRequired => Reply {
                state: TaskState::InputRequired,
                message: Some(agent_says(vec![Part::text(
                    "Input required: send another message to this task to continue it.",
                )])),
                ..Reply::completed(Vec::new())
            },
            Scenario::RejectTask => Reply {
                state: TaskState::Rejected,
                message: Some(agent_says(vec![Part::text("rejected")])),
                ..Reply::completed(Vec::new())
            },
            Scenario::Echo | Scenario::MessageResponse => Reply {
                message: Some(agent_says(parts)),
                ..Reply::completed(Vec::new())
            },
        }
    }
}

/// A message from the agent.
fn agent_says(parts: Vec<Part>) -> Message {
    Message::new(Role::Agent, parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longer_tck_prefix_wins() {
        assert_eq!(
            Scenario::of("tck-artifact-file-url-1a2b3c4d-jsonrpc"),
            Scenario::ArtifactFileUrl
        );
        assert_eq!(
            Scenario::of("tck-artifact-file-1a2b3c4d-jsonrpc"),
            Scenario::ArtifactFile
        );
        assert_eq!(Scenario::of("msg-1"), Scenario::Echo);
    }
}
