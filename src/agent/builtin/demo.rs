//! Two agents that exist to show the harness's checks at work in `ddwire demo`. Each does
//! something a real agent must not, honestly labelled in its description:
//!
//! - `demo.ungrounded`: replies with a payload that rests on a source it never retrieved, as
//!   an `input_only` agent; the grounding linter withholds it (R2).
//! - `demo.failing`: fails every run with an error; the envelope is `failed` / `agent-error`.
//! - `demo.confirm`: suspends every run until the caller confirms it (A2A `input-required`),
//!   then replies, or abstains if the caller declines.

use super::Decision;
use crate::agent::{Agent, AgentError, RunContext};
use crate::contract::spec::AgentSpec;
use crate::contract::{
    AgentResult, GroundingMode, InvocationRequest, Outcome, ReasonCode, classes,
};
use serde_json::{Value, json};

fn spec(agent_id: &str, description: &str, action_class: &str, payload: bool) -> AgentSpec {
    super::builtin_spec(
        agent_id,
        description,
        action_class,
        GroundingMode::InputOnly,
        vec![classes::message()],
        payload.then(classes::reply),
    )
}

/// An agent whose answer rests on something it never retrieved.
pub(crate) struct Ungrounded {
    spec: AgentSpec,
}

impl Ungrounded {
    /// The agent, with its spec.
    pub(crate) fn new() -> Ungrounded {
        Ungrounded {
            spec: spec(
                "demo.ungrounded",
                "Demonstration only: answers citing a source it never retrieved, so the grounding linter withholds its output.",
                "converse",
                true,
            ),
        }
    }
}

impl Agent for Ungrounded {
    fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn run(&self, _request: &InvocationRequest, ctx: &RunContext<'_>) -> Decision {
        let invented = "0".repeat(64);
        let grounded_on = json!([{"source_id": "src:atlantis-almanac", "content_hash": invented}]);
        let answer = "The capital of Atlantis is Poseidonis.".to_string();
        let statement = "Answered from an almanac.";
        Ok(super::replied(ctx, statement, answer, "model", grounded_on))
    }
}

/// An agent that always fails.
pub(crate) struct Failing {
    spec: AgentSpec,
}

impl Failing {
    /// The agent, with its spec.
    pub(crate) fn new() -> Failing {
        Failing {
            spec: spec(
                "demo.failing",
                "Demonstration only: fails every run, so the envelope shows an agent error.",
                "advise",
                false,
            ),
        }
    }
}

impl Agent for Failing {
    fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn run(&self, _request: &InvocationRequest, _ctx: &RunContext<'_>) -> Decision {
        Err(AgentError::new(
            "DemoFailure",
            "this demonstration agent fails every run",
        ))
    }
}

/// An agent that asks for a confirmation before it answers: its first call is `suspended`
/// (the harness answers `input-required`), and the caller resumes it with a data part
/// `{"confirm": true}` (it then replies, grounded on its input) or `{"confirm": false}` (it
/// abstains).
pub(crate) struct Confirm {
    spec: AgentSpec,
}

/// What `demo.confirm` asks for.
pub(crate) const CONFIRM_CONDITION: &str = "Confirm to proceed: send a data part {\"confirm\": true} on this task, or {\"confirm\": false} to decline.";

impl Confirm {
    /// The agent, with its spec.
    pub(crate) fn new() -> Confirm {
        Confirm {
            spec: spec(
                "demo.confirm",
                "Demonstration only: asks the caller to confirm before it answers, so the run is suspended (input-required) and then resumed.",
                "converse",
                true,
            ),
        }
    }
}

impl Agent for Confirm {
    fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn run(&self, request: &InvocationRequest, ctx: &RunContext<'_>) -> Decision {
        let Some(resumption) = ctx.resumption else {
            return Ok(AgentResult::new(Outcome::suspended(CONFIRM_CONDITION)));
        };
        if resumption.get("confirm").and_then(Value::as_bool) != Some(true) {
            return Ok(AgentResult::new(Outcome::abstained(
                ReasonCode::NotApplicable,
                "The caller declined to confirm.",
            )));
        }
        let text = request
            .input
            .0
            .get("message_text")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let grounded_on = json!([super::input_ref_json(&ctx.input_ref, &ctx.input_hash)]);
        let (statement, reply) = ("Confirmed by the caller.", format!("Confirmed: {text}"));
        Ok(super::replied(
            ctx,
            statement,
            reply,
            "template",
            grounded_on,
        ))
    }
}
