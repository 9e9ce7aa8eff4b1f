//! AG-UI run events (ag-ui-protocol 1.0, `@ag-ui/client` 1.0): the events ddwire emits and
//! the RunAgentInput it reads.
//!
//! Events are written as ag-ui-protocol's `EventEncoder` writes them: camelCase keys, `type`
//! first, optional fields left out (never `null`), one line. The input is read leniently, as
//! the Python models are (camelCase or snake_case, optional fields may be missing), because
//! the `@ag-ui/client` always sends them all and other clients may not.

use crate::json::python::{self, Style};
use serde_json::Value;

/// The events a run emits.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Event {
    /// First event of every run.
    RunStarted {
        /// The conversation (`threadId`).
        thread_id: String,
        /// The run (`runId`): the invocation id.
        run_id: String,
    },
    /// A stage of the run began (`stepName`).
    StepStarted {
        /// The stage (`stepName`): `policy_gate`, `input_check`...
        step_name: String,
    },
    /// A stage of the run ended.
    StepFinished {
        /// The stage (`stepName`).
        step_name: String,
    },
    /// The run ended; `result` is the envelope.
    RunFinished {
        /// The conversation (`threadId`).
        thread_id: String,
        /// The run (`runId`).
        run_id: String,
        /// The envelope, when the run stored one.
        result: Option<Value>,
        /// What the run waits for, when its agent suspended it: written as AG-UI 1.0's
        /// `outcome` `{"type": "interrupt", "interrupts": [<it>]}`. `None` leaves `outcome` out,
        /// which a 1.0 consumer reads as success.
        interrupt: Option<Interrupt>,
    },
    /// The run could not be made; nothing follows.
    RunError {
        /// What went wrong, a sentence.
        message: String,
        /// A short machine-readable code (`unknown_agent`), when there is one.
        code: Option<String>,
    },
}

impl Event {
    /// The event's `type`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Event::RunStarted { .. } => "RUN_STARTED",
            Event::StepStarted { .. } => "STEP_STARTED",
            Event::StepFinished { .. } => "STEP_FINISHED",
            Event::RunFinished { .. } => "RUN_FINISHED",
            Event::RunError { .. } => "RUN_ERROR",
        }
    }

    /// The event as one line of JSON, fields in ag-ui-protocol's model order.
    pub(crate) fn to_json(&self) -> String {
        let fields = match self {
            Event::RunStarted { thread_id, run_id } => {
                vec![("threadId", text(thread_id)), ("runId", text(run_id))]
            }
            Event::StepStarted { step_name } | Event::StepFinished { step_name } => {
                vec![("stepName", text(step_name))]
            }
            Event::RunFinished {
                thread_id,
                run_id,
                result,
                interrupt,
            } => {
                let mut fields = vec![("threadId", text(thread_id)), ("runId", text(run_id))];
                let result = result.as_ref().map(|r| python::dumps(r, Style::PYDANTIC));
                fields.extend(result.map(|r| ("result", r)));
                fields.extend(interrupt.as_ref().map(|i| ("outcome", i.outcome())));
                fields
            }
            Event::RunError { message, code } => {
                let mut fields = vec![("message", text(message))];
                fields.extend(code.as_deref().map(|c| ("code", text(c))));
                fields
            }
        };
        object(std::iter::once(("type", text(self.kind()))).chain(fields))
    }

    /// The event as one SSE frame.
    pub(crate) fn to_sse(&self) -> Vec<u8> {
        super::sse::event(&self.to_json())
    }
}

/// Something a run needs from outside before it can continue (AG-UI 1.0 `Interrupt`): a
/// suspended run's resume condition.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Interrupt {
    /// Names the interrupt; a resume entry answers it by this id (the run's invocation id).
    pub(crate) id: String,
    /// Why the run stopped (`input_required`).
    pub(crate) reason: String,
    /// A prompt for whoever answers (the agent's resume condition).
    pub(crate) message: Option<String>,
    /// When it stops being answerable (RFC 3339).
    pub(crate) expires_at: Option<String>,
}

impl Interrupt {
    /// AG-UI 1.0's `outcome` for this interrupt: `{"type": "interrupt", "interrupts": [<it>]}`.
    fn outcome(&self) -> String {
        let mut it = vec![("id", text(&self.id)), ("reason", text(&self.reason))];
        it.extend(self.message.as_deref().map(|m| ("message", text(m))));
        it.extend(self.expires_at.as_deref().map(|e| ("expiresAt", text(e))));
        let interrupts = format!("[{}]", object(it));
        object([("type", text("interrupt")), ("interrupts", interrupts)])
    }
}

/// A JSON string as `EventEncoder` writes it.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    python::write_str(&mut out, s, false);
    out
}

/// `{"key":value,…}` from members already written as JSON, in the order given: as
/// `EventEncoder` writes pydantic's models (whose float spelling differs from Python's below
/// 1e-4), where a JSON object would sort them.
fn object<'a>(members: impl IntoIterator<Item = (&'a str, String)>) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        python::write_str(&mut out, key, false);
        out.push(':');
        out.push_str(&value);
    }
    out.push('}');
    out
}

/// What ddwire reads of a RunAgentInput.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RunAgentInput {
    pub(crate) thread_id: Option<String>,
    pub(crate) run_id: Option<String>,
    /// `forwardedProps` (or `forwarded_props`): where the InvocationRequest travels.
    pub(crate) forwarded_props: Option<Value>,
    /// `resume` (AG-UI 1.0): answers to the interrupts that ended an earlier run.
    pub(crate) resume: Vec<ResumeEntry>,
}

/// One answer to an interrupt (AG-UI 1.0 `ResumeEntry`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ResumeEntry {
    /// The interrupt answered (`interruptId`).
    pub(crate) interrupt_id: String,
    /// `resolved` (answered) or `cancelled` (abandoned).
    pub(crate) resolved: bool,
    /// The answer (`payload`), any JSON value.
    pub(crate) payload: Option<Value>,
}

impl RunAgentInput {
    /// Read a RunAgentInput document; `None` when it is not an object.
    pub(crate) fn from_value(v: &Value) -> Option<RunAgentInput> {
        let obj = v.as_object()?;
        let field = |camel: &str, snake: &str| {
            obj.get(camel)
                .or_else(|| obj.get(snake))
                .filter(|v| !v.is_null())
        };
        let text = |camel: &str, snake: &str| {
            field(camel, snake)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Some(RunAgentInput {
            thread_id: text("threadId", "thread_id"),
            run_id: text("runId", "run_id"),
            forwarded_props: field("forwardedProps", "forwarded_props").cloned(),
            resume: field("resume", "resume")
                .and_then(Value::as_array)
                .map(|entries| {
                    entries
                        .iter()
                        .filter_map(|e| {
                            let id = e
                                .get("interruptId")
                                .or_else(|| e.get("interrupt_id"))?
                                .as_str()?;
                            Some(ResumeEntry {
                                interrupt_id: id.to_string(),
                                resolved: e.get("status").and_then(Value::as_str)
                                    != Some("cancelled"),
                                payload: e.get("payload").filter(|p| !p.is_null()).cloned(),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_interrupt_is_written_as_the_1_0_outcome_in_the_models_field_order() {
        let finished = Event::RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            interrupt: Some(Interrupt {
                id: "i-1".into(),
                reason: "input_required".into(),
                message: Some("Confirm \"x\"".into()),
                expires_at: Some("2026-01-02T03:04:05Z".into()),
            }),
        };
        assert_eq!(
            finished.to_json(),
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i-1","reason":"input_required","message":"Confirm \"x\"","expiresAt":"2026-01-02T03:04:05Z"}]}}"#
        );
    }

    #[test]
    fn events_are_camel_case_with_type_first_and_no_nulls() {
        let started = Event::RunStarted {
            thread_id: "t1".into(),
            run_id: "r1".into(),
        };
        assert_eq!(
            started.to_json(),
            r#"{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}"#
        );
        let error = Event::RunError {
            message: "boom".into(),
            code: None,
        };
        assert_eq!(error.to_json(), r#"{"type":"RUN_ERROR","message":"boom"}"#);
        let finished = Event::RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            interrupt: None,
        };
        assert!(!finished.to_json().contains("null"));
    }

    #[test]
    fn run_agent_input_accepts_snake_case_and_missing_fields() {
        let input = RunAgentInput::from_value(
            &json!({"thread_id": "t", "forwarded_props": {"request": {}}}),
        )
        .expect("an object is a RunAgentInput");
        assert_eq!(input.thread_id.as_deref(), Some("t"));
        assert_eq!(input.run_id, None);
        assert!(input.forwarded_props.is_some());
        assert!(RunAgentInput::from_value(&json!([])).is_none());
    }
}
