//! `hello.world`: a template reply to a message, grounded on the message.

use super::Decision;
use crate::agent::{Agent, AgentError, RunContext};
use crate::contract::spec::AgentSpec;
use crate::contract::{GroundingMode, InvocationRequest};
use serde_json::{Value, json};

/// The model id its `chat` span names: a template, honestly labelled.
pub(super) const MODEL_ID: &str = "ddwire-template-v1";

/// The hello agent.
pub struct Hello {
    spec: AgentSpec,
}

impl Default for Hello {
    fn default() -> Self {
        Hello::new()
    }
}

impl Hello {
    /// The agent, with its spec.
    pub fn new() -> Hello {
        Hello {
            spec: super::message_to_reply(
                "hello.world",
                "Greets the user and repeats what they said: a template reply grounded on the message alone.",
                "DEMO-1",
                GroundingMode::InputOnly,
            ),
        }
    }
}

fn words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

impl Agent for Hello {
    fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn run(&self, request: &InvocationRequest, ctx: &RunContext<'_>) -> Decision {
        let text = request
            .input
            .0
            .get("message_text")
            .and_then(Value::as_str)
            .ok_or_else(|| AgentError::new("InvalidInput", "a Message needs message_text"))?;
        let chat = ctx.tracer.chat(MODEL_ID);
        let reply = format!("Hello! You said: {text}");
        let (input_tokens, output_tokens) = (words(text), words(&reply));
        chat.record_tokens(Some(input_tokens), Some(output_tokens));
        chat.end();
        let grounded_on = json!([super::input_ref_json(&ctx.input_ref, &ctx.input_hash)]);
        let statement = "Greeted the user and repeated their message.";
        let mut result = super::replied(ctx, statement, reply, "template", grounded_on);
        result.model_id = Some(MODEL_ID.into());
        result.input_tokens = Some(input_tokens);
        result.output_tokens = Some(output_tokens);
        Ok(result)
    }
}
