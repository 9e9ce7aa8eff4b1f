//! `stub.abstain`: accepts every shipped input class and abstains.

use super::Decision;
use crate::agent::{Agent, RunContext};
use crate::contract::spec::AgentSpec;
use crate::contract::{
    AgentResult, GroundingMode, InvocationRequest, Outcome, ReasonCode, classes,
};

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
        let classes = vec![classes::echo(), classes::message()];
        Stub {
            spec: super::builtin_spec(
                "stub.abstain",
                "Decides nothing: abstains on every input, for wiring checks.",
                "advise",
                GroundingMode::None,
                classes,
                None,
            ),
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
