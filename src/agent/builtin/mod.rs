//! The agents ddwire ships, each servable with `ddwire agent NAME`:
//!
//! - `hello` (`hello.world`): accepts a `Message`, replies a `Reply` grounded on its input
//!   (`input_only`), recording a `chat` span with a model id and token counts.
//! - `stub` (`stub.abstain`): accepts every shipped input class and abstains.
//! - `echo` (`echo.wire`): returns an `Echo` input's value as its payload (`none`); for
//!   measuring the wire.
//! - `director` (`director.route`): a delegation agent that routes a `Message` to another
//!   agent through the harness and relays its reply.
//! - `ungrounded` (`demo.ungrounded`) and `failing` (`demo.failing`): demonstration agents
//!   that show the linter withholding a result and an agent error.
//! - `confirm` (`demo.confirm`): suspends every run until the caller confirms it (A2A
//!   `input-required`, an AG-UI interrupt), then replies, or abstains if the caller declines.

mod demo;
mod director;
mod echo;
mod hello;
mod stub;

pub(crate) use demo::{Confirm, Failing, Ungrounded};
pub(crate) use director::Director;
pub use echo::Echo;
pub use hello::Hello;
pub use stub::Stub;

use super::{Agent, RunContext};
use crate::contract::spec::{AgentSpec, ClassSchema, Derived};
use crate::contract::{
    AgentResult, CONTRACT_VERSION, Derivation, EvidenceItem, GroundingMode, Outcome, Payload,
    classes,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What [`Agent::run`] returns, named once for the built-in agents' signatures.
type Decision = Result<crate::contract::AgentResult, super::AgentError>;

/// The spec of a built-in agent of this ddwire version and contract: it accepts the classes
/// `accepts`, answers with a `payload` of that class or none, and holds the schemas of both.
fn builtin_spec(
    agent_id: &str,
    description: &str,
    action_class: &str,
    grounding_mode: GroundingMode,
    accepts: Vec<ClassSchema>,
    payload: Option<ClassSchema>,
) -> AgentSpec {
    AgentSpec {
        agent_id: agent_id.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        description: description.into(),
        requirement_ids: Vec::new(),
        action_class: action_class.into(),
        accepts: accepts.iter().map(|c| c.name.clone()).collect(),
        grounding_mode,
        payload: payload.as_ref().map(|c| c.name.clone()),
        derivations: BTreeMap::new(),
        contract_version: CONTRACT_VERSION.into(),
        schemas: accepts
            .into_iter()
            .chain(payload)
            .map(|c| (c.name.clone(), c))
            .collect(),
    }
}

/// The spec of a built-in agent that answers a `Message` with a template `Reply` (its
/// `reply_text` derivation recorded in `reply_derivation`), in `converse` action class.
fn message_to_reply(
    agent_id: &str,
    description: &str,
    requirement_id: &str,
    grounding_mode: GroundingMode,
) -> AgentSpec {
    let mut spec = builtin_spec(
        agent_id,
        description,
        "converse",
        grounding_mode,
        vec![classes::message()],
        Some(classes::reply()),
    );
    spec.requirement_ids = vec![requirement_id.into()];
    spec.derivations = BTreeMap::from([(
        "reply_text".into(),
        Derived {
            how: Derivation::Template,
            recorded_in: Some("reply_derivation".into()),
        },
    )]);
    spec
}

/// The names `ddwire agent` accepts, with the default port each is served on.
pub(crate) const NAMES: [(&str, u16); 7] = [
    ("hello", 8101),
    ("stub", 8104),
    ("director", 8106),
    ("echo", 8107),
    ("ungrounded", 8108),
    ("failing", 8109),
    ("confirm", 8110),
];

/// A built-in agent by its short name.
pub(crate) fn by_name(name: &str) -> Option<Arc<dyn Agent>> {
    match name {
        "hello" => Some(Arc::new(Hello::new())),
        "stub" => Some(Arc::new(Stub::new())),
        "echo" => Some(Arc::new(Echo::new())),
        "director" => Some(Arc::new(Director::new())),
        "ungrounded" => Some(Arc::new(Ungrounded::new())),
        "failing" => Some(Arc::new(Failing::new())),
        "confirm" => Some(Arc::new(Confirm::new())),
        _ => None,
    }
}

/// `{"source_id": input_ref, "content_hash": input_hash}`: the reference a payload grounded
/// on its input carries.
pub(crate) fn input_ref_json(input_ref: &str, input_hash: &str) -> serde_json::Value {
    serde_json::json!({ "source_id": input_ref, "content_hash": input_hash })
}

/// A run that succeeded (`statement`) with a `Reply` payload: `text`, derived as `derivation`,
/// grounded on `grounded_on`, with the run's input as its evidence.
fn replied(
    ctx: &RunContext<'_>,
    statement: impl Into<String>,
    text: String,
    derivation: &str,
    grounded_on: Value,
) -> AgentResult {
    let payload = json!({
        "schema_class": "Reply",
        "reply_text": text,
        "reply_derivation": derivation,
        "grounded_on": grounded_on,
    });
    let Value::Object(payload) = payload else {
        unreachable!("a JSON object literal")
    };
    let mut result = AgentResult::new(Outcome::succeeded(statement));
    result.payload = Some(Payload(payload));
    result.evidence = vec![EvidenceItem::citing_input(&ctx.input_ref, &ctx.input_hash)];
    result
}
