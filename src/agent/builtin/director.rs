//! `director.route`: a delegation agent. It routes a `Message` to another agent the harness
//! runs, chosen from the manifest on the harness's card (the first agent by id, other than
//! itself, that accepts `Message` and returns a payload; agents whose description begins
//! "Demonstration only" are never chosen), and relays that agent's reply, grounded on its own
//! input and on the child's stored envelope.

use super::Decision;
use crate::agent::{Agent, AgentError, RunContext};
use crate::contract::spec::AgentSpec;
use crate::contract::{
    AgentResult, GroundingMode, Input, InvocationRequest, Outcome, OutcomeStatus, ReasonCode,
};
use crate::wire::a2a::card::{MANIFEST_EXTENSION_URI, extension_params};
use serde_json::{Value, json};

/// The director agent.
pub(crate) struct Director {
    spec: AgentSpec,
}

impl Director {
    /// The agent, with its spec.
    pub(crate) fn new() -> Director {
        Director {
            spec: super::message_to_reply(
                "director.route",
                "Routes a message to the agent best placed to answer it, through the harness, and relays the answer.",
                "DEMO-2",
                GroundingMode::Delegation,
            ),
        }
    }

    /// The agent to route to: from the harness card's manifest, the first (by id) that is not
    /// this agent, accepts `Message`, and returns a payload.
    fn route(&self, ctx: &RunContext<'_>) -> Result<Option<String>, AgentError> {
        let delegate = ctx.delegate.as_ref().expect("checked by the caller");
        let card = delegate
            .client
            .fetch_card(&delegate.url, delegate.timeout)
            .map_err(|e| AgentError::new("ManifestUnavailable", e.to_string()))?;
        let agents = extension_params(&card, MANIFEST_EXTENSION_URI)
            .and_then(|p| p.get("agents"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(agents.iter().find_map(|a| {
            let id = a.get("agent_id")?.as_str()?;
            let accepts_message = a.get("accepts")?.as_array()?.iter().any(|c| c == "Message");
            let returns_payload = a.get("payload").is_some_and(|p| !p.is_null());
            let demonstration = a
                .get("description")
                .and_then(Value::as_str)
                .is_some_and(|d| d.starts_with(DEMONSTRATION));
            (id != self.spec.agent_id && accepts_message && returns_payload && !demonstration)
                .then(|| id.to_string())
        }))
    }
}

impl Agent for Director {
    fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn run(&self, request: &InvocationRequest, ctx: &RunContext<'_>) -> Decision {
        let Some(delegate) = &ctx.delegate else {
            return Ok(AgentResult::new(Outcome::abstained(
                ReasonCode::CapabilityNotImplemented,
                "No delegation grant came with this request, so there is no agent to route to.",
            )));
        };
        let Some(target) = self.route(ctx)? else {
            return Ok(AgentResult::new(Outcome::abstained(
                ReasonCode::NoQualifyingResource,
                "The harness runs no other agent that answers a Message.",
            )));
        };
        let child = delegate.call(ctx.tracer, &target, Input(request.input.0.clone()))?;
        let answer = child
            .envelope
            .payload
            .as_ref()
            .and_then(|p| p.0.get("reply_text"))
            .and_then(Value::as_str);
        let (Some(answer), OutcomeStatus::Succeeded) = (answer, child.envelope.outcome.status)
        else {
            return Ok(AgentResult::new(Outcome::referred(
                ReasonCode::RequiresHumanJudgement,
                DATA_STEWARD,
                format!(
                    "{target} did not answer ({}): {}",
                    child.envelope.outcome.status, child.envelope.outcome.statement
                ),
            )));
        };
        let grounded_on = json!([
            super::input_ref_json(&ctx.input_ref, &ctx.input_hash),
            {"source_id": child.reference.source_id, "content_hash": child.reference.content_hash},
        ]);
        let statement = format!("Routed the message to {target} and relayed its reply.");
        let reply = format!("{target} says: {answer}");
        let mut result = super::replied(ctx, statement, reply, "template", grounded_on);
        result.evidence.push(child.evidence);
        Ok(result)
    }
}

/// How a demonstration agent's description begins.
const DEMONSTRATION: &str = "Demonstration only";

/// Who a referral names.
const DATA_STEWARD: &str = "data_steward";
