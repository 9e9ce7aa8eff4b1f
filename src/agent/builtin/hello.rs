//! `hello.world`: a template reply to a message, grounded on the message.

use crate::agent::{Agent, AgentError, RunContext};
use crate::contract::spec::{AgentSpec, Derived};
use crate::contract::{
    AgentResult, CONTRACT_VERSION, Derivation, EvidenceItem, GroundingMode, InvocationRequest,
    Outcome, Payload, classes,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The model id its `chat` span names: a template, honestly labelled.
pub const MODEL_ID: &str = "ddwire-template-v1";

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
    pub fn new() -> Hello {
        let (message, reply) = (classes::message(), classes::reply());
        Hello {
            spec: AgentSpec {
                agent_id: "hello.world".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                description: "Greets the user and repeats what they said: a template reply grounded on the message alone."
                    .into(),
                requirement_ids: vec!["DEMO-1".into()],
                action_class: "converse".into(),
                accepts: vec!["Message".into()],
                grounding_mode: GroundingMode::InputOnly,
                payload: Some("Reply".into()),
                derivations: BTreeMap::from([(
                    "reply_text".into(),
                    Derived { how: Derivation::Template, recorded_in: Some("reply_derivation".into()) },
                )]),
                contract_version: CONTRACT_VERSION.into(),
                schemas: BTreeMap::from([(message.name.clone(), message), (reply.name.clone(), reply)]),
            },
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

    fn run(
        &self,
        request: &InvocationRequest,
        ctx: &RunContext<'_>,
    ) -> Result<AgentResult, AgentError> {
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
        let payload = json!({
            "schema_class": "Reply",
            "reply_text": reply,
            "reply_derivation": "template",
            "grounded_on": [super::input_ref_json(&ctx.input_ref, &ctx.input_hash)],
        });
        let Value::Object(payload) = payload else {
            unreachable!("a JSON object literal")
        };
        Ok(AgentResult {
            outcome: Outcome::succeeded("Greeted the user and repeated their message."),
            evidence: vec![EvidenceItem::citing_input(&ctx.input_ref, &ctx.input_hash)],
            payload: Some(Payload(payload)),
            model_id: Some(MODEL_ID.into()),
            input_tokens: Some(input_tokens),
            output_tokens: Some(output_tokens),
        })
    }
}
