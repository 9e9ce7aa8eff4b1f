//! What an agent process is: the [`Agent`] trait, the context a run gets, the agent server
//! every agent runs ([`server`]), and the built-in agents ([`builtin`]).
//!
//! An agent decides an outcome, a payload and the evidence it rests on; it records spans with
//! the tracer it is given. It never fills identifiers, timestamps or telemetry, and the agent
//! server does no governance: the harness judges what comes back.

pub mod builtin;
pub(crate) mod delegate;
pub mod server;

use crate::contract::spec::AgentSpec;
use crate::contract::{AgentResult, InvocationRequest};
use crate::trace::Tracer;
use crate::wire::a2a::model::{Message, Task};
use crate::wire::a2a::{Progress, Reply};
use std::fmt;

/// An agent: a specification and one method.
pub trait Agent: Send + Sync {
    /// What the agent is (its card is built from this).
    fn spec(&self) -> &AgentSpec;

    /// Decide one invocation. Spans go through `ctx.tracer`; their trace is the caller's.
    fn run(
        &self,
        request: &InvocationRequest,
        ctx: &RunContext<'_>,
    ) -> Result<AgentResult, AgentError>;

    /// Answer a message that is not a Data Director invocation (it does not carry exactly one
    /// data part), continuing `continued` if it names a task waiting for input. The default,
    /// `None`, refuses it as the contract requires (a message carries exactly one data part): a failed task
    /// `{"error": "expected exactly one data part, got N"}`. Only a conformance subject
    /// answers ([`builtin::Echo`], for the A2A TCK).
    fn converse(&self, message: &Message, continued: Option<&Task>) -> Option<Conversation> {
        let _ = (message, continued);
        None
    }

    /// The card skill describing the conversations [`Agent::converse`] answers, if it answers
    /// any: the card then lists it, and `text/plain` among its input and output modes.
    fn conversation_skill(&self) -> Option<serde_json::Value> {
        None
    }
}

/// How an agent answers a message that is not a Data Director invocation
/// ([`Agent::converse`]).
pub enum Conversation {
    /// Answer with this message; no task is made (A2A's message response).
    Message(Message),
    /// Make a task (or resume the one the message continues) and run this work for it. A
    /// blocking send waits for it; a non-blocking one answers first. The work marks the task
    /// `working` through its [`Progress`], should stop early once the task is canceled, and
    /// must not panic (a panic is a failed task).
    Task(Box<dyn FnOnce(&Progress) -> Reply + Send>),
}

/// What the agent server gives a run besides the request.
pub struct RunContext<'a> {
    /// This run's own tracer, parented to the caller's span.
    pub tracer: &'a Tracer,
    /// `input:<invocation_id>`: the source id that cites the input.
    pub(crate) input_ref: String,
    /// The `dd-input-json-v1` hash of the input, as the conductor computed it.
    pub(crate) input_hash: String,
    /// How a delegation agent invokes another agent through the harness; `None` for every
    /// other agent, and for a delegation agent called without a grant (the CLI).
    pub(crate) delegate: Option<delegate::Delegate>,
    /// The A2A task this run works on: a long run can learn that it was canceled
    /// ([`Progress::is_canceled`], [`Progress::cancellation`]) and stop early.
    pub(crate) task: &'a Progress,
    /// What the caller sent to resume this run after the agent suspended it (the data part of
    /// the message that continued the A2A task, `dd.resumption`); `None` on a first call.
    pub(crate) resumption: Option<&'a serde_json::Value>,
}

/// Why an agent could not decide: a kind and a message, sent as `"<kind>: <message>"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentError {
    /// The error's kind, like an exception's type (`RegistryUnavailable`).
    pub(crate) kind: String,
    /// What went wrong.
    pub(crate) message: String,
}

impl AgentError {
    /// An error of `kind` (e.g. `RegistryUnavailable`) with a message.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> AgentError {
        AgentError {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}
