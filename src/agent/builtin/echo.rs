//! `echo.wire`: returns an `Echo` input's value unchanged, grounded on the input. It calls no
//! model (grounding mode `none`), so it measures the wire and nothing else.

use crate::agent::{Agent, AgentError, RunContext};
use crate::contract::spec::AgentSpec;
use crate::contract::{
    AgentResult, CONTRACT_VERSION, EvidenceItem, GroundingMode, InvocationRequest, Outcome,
    Payload, classes,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The echo agent.
pub struct Echo {
    spec: AgentSpec,
}

impl Default for Echo {
    fn default() -> Self {
        Echo::new()
    }
}

impl Echo {
    pub fn new() -> Echo {
        let (echo, reply) = (classes::echo(), classes::echo_reply());
        Echo {
            spec: AgentSpec {
                agent_id: "echo.wire".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                description: "Returns its input's value unchanged; for measuring the wire.".into(),
                requirement_ids: Vec::new(),
                action_class: "advise".into(),
                accepts: vec!["Echo".into()],
                grounding_mode: GroundingMode::None,
                payload: Some("EchoReply".into()),
                derivations: BTreeMap::new(),
                contract_version: CONTRACT_VERSION.into(),
                schemas: BTreeMap::from([(echo.name.clone(), echo), (reply.name.clone(), reply)]),
            },
        }
    }
}

impl Agent for Echo {
    fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn run(
        &self,
        request: &InvocationRequest,
        ctx: &RunContext<'_>,
    ) -> Result<AgentResult, AgentError> {
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
}
