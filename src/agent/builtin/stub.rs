//! `stub.abstain`: accepts every shipped input class and abstains.

use super::Decision;
use crate::agent::{Agent, RunContext};
use crate::contract::spec::AgentSpec;
use crate::contract::{
    AgentResult, CONTRACT_VERSION, GroundingMode, InvocationRequest, Outcome, ReasonCode, classes,
};
use std::collections::BTreeMap;

/// The stub agent.
pub struct Stub {
    spec: AgentSpec,
}

impl Default for Stub {
    fn default() -> Self {
        Stub::new()
    }
}

impl Stub {
    /// The agent, with its spec.
    pub fn new() -> Stub {
        let classes = [classes::echo(), classes::message()];
        Stub {
            spec: AgentSpec {
                agent_id: "stub.abstain".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                description: "Decides nothing: abstains on every input, for wiring checks.".into(),
                requirement_ids: Vec::new(),
                action_class: "advise".into(),
                accepts: classes.iter().map(|c| c.name.clone()).collect(),
                grounding_mode: GroundingMode::None,
                payload: None,
                derivations: BTreeMap::new(),
                contract_version: CONTRACT_VERSION.into(),
                schemas: classes.into_iter().map(|c| (c.name.clone(), c)).collect(),
            },
        }
    }
}

impl Agent for Stub {
    fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    fn run(&self, _request: &InvocationRequest, _ctx: &RunContext<'_>) -> Decision {
        Ok(AgentResult::new(Outcome::abstained(
            ReasonCode::CapabilityNotImplemented,
            "The stub agent decides nothing; it abstains on every input.",
        )))
    }
}
