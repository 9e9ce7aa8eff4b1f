//! Calling an agent over A2A, as the conductor does: every call is an A2A send over HTTP (the
//! test kit's in-memory transport included), the agent's spans come back inline beside its
//! result, and every failure becomes an `agent-error` envelope, never a crash.
//!
//! [`call`] sends the InvocationRequest as one data part with the conductor's `dd.input_ref`,
//! `dd.input_hash` and `traceparent` (and, for a delegation agent, its grant) in the message
//! metadata, waits for the task, and returns the agent's result with the spans it recorded.
//! Every way this can fail is a [`Failure`] whose detail the conductor puts in an
//! `agent-error` envelope; nothing here decides whether the result is acceptable. The reply as
//! received (the `agent-result` artifact's data: the AgentResult document and the span
//! strings) is kept beside either, for the run store to keep, so a withheld or refused result
//! can be audited and linted again later. A call to an agent the harness shares a key with is
//! signed with it ([`crate::wire::sign`], direction `to-agent`).

use super::registry::RemoteAgent;
use crate::contract::AgentResult;
use crate::trace::{self, SpanRecord};
use crate::wire::a2a::artifact;
use crate::wire::a2a::client::A2aClient;
use crate::wire::a2a::model::{Artifact, Message, Part, Role, Task, TaskState};
use crate::wire::sign::{Direction, Signer};
use serde_json::{Map, Value};

/// What came back from an agent: its result, and its spans as records.
#[derive(Clone, Debug)]
pub(crate) struct Received {
    pub(crate) result: AgentResult,
    /// Every span the agent returned, whatever trace it names.
    pub(crate) spans: Vec<SpanRecord>,
    /// The reply as received: `{"result": <AgentResult document>, "spans": [<span JSON>…]}`.
    pub(crate) reply: Value,
}

/// Why an agent's answer is not a result: the detail for the `agent-error` problem, and the
/// reply as received when one was read (an answer outside the contract), to be kept.
#[derive(Clone, Debug)]
pub(crate) struct Failure {
    pub(crate) detail: String,
    pub(crate) reply: Option<Value>,
    /// The agent could not be reached at all (nothing was delivered): its own problem title,
    /// so an operator looks at the network and the agent's process, not at the agent's code.
    pub(crate) unreachable: bool,
}

impl From<String> for Failure {
    fn from(detail: String) -> Failure {
        Failure {
            detail,
            reply: None,
            unreachable: false,
        }
    }
}

/// The most spans one reply may carry; more is outside the contract. An invocation's tree is
/// a handful of spans; a few thousand leaves room for a long tool loop.
pub(crate) const MAX_SPANS: usize = 10_000;

/// Send `request_doc` to `agent` and read its reply.
pub(crate) fn call(
    client: &A2aClient,
    agent: &RemoteAgent,
    request_doc: &Value,
    metadata: Map<String, Value>,
) -> Result<Received, Failure> {
    let id = &agent.spec.agent_id;
    let client = agent.client.as_ref().unwrap_or(client);
    let signed;
    let client = match &agent.key {
        Some(key) => {
            signed = client.signed(Signer::new(key.clone(), Direction::ToAgent));
            &signed
        }
        None => client,
    };
    // Written once, as the text the request carries: no copy of the document as a tree.
    let mut message = Message::new(Role::User, vec![Part::encoded(request_doc)]);
    message.metadata = Some(metadata);
    let task = client
        .send_for_task(&agent.target, message, &[], agent.timeout)
        .map_err(|e| Failure {
            unreachable: matches!(
                e,
                crate::wire::WireError::Connect { .. } | crate::wire::WireError::Tls { .. }
            ),
            ..Failure::from(format!("{id} at {}: {e}", agent.url))
        })?;
    if task.status.state != TaskState::Completed {
        return Err(task
            .failure_detail()
            .unwrap_or_else(|| {
                format!(
                    "{id} task ended in {}, not completed",
                    crate::wire::a2a::Binding::V10.state_name(task.status.state)
                )
            })
            .into());
    }
    received(id, reply_body(id, task)?)
}

/// The reply in a completed task: the one data part, a JSON object, of its one
/// `agent-result` artifact, taken out of the task (which is done with).
fn reply_body(id: &str, task: Task) -> Result<Value, Failure> {
    let mut artifacts: Vec<Artifact> = task
        .artifacts
        .into_iter()
        .filter(|a| a.name.as_deref() == Some(artifact::AGENT_RESULT))
        .collect();
    if artifacts.len() != 1 {
        return Err(format!(
            "{id} returned {} {} artifacts",
            artifacts.len(),
            artifact::AGENT_RESULT
        )
        .into());
    }
    let artifact = artifacts.swap_remove(0);
    let mut data: Vec<Value> = artifact
        .parts
        .into_iter()
        .filter_map(|p| match p {
            Part::Data { data, .. } => Some(data),
            _ => None,
        })
        .collect();
    match (data.pop(), data.is_empty()) {
        (Some(body @ Value::Object(_)), true) => Ok(body),
        _ => Err(format!(
            "{id} returned a malformed {} artifact",
            artifact::AGENT_RESULT
        )
        .into()),
    }
}

/// The agent's result and spans, read from its reply `body`, within the contract and
/// [`MAX_SPANS`]. A reply that fails here is kept in the failure, for audit, unless it
/// cannot be written back as JSON or is too large to keep.
fn received(id: &str, body: Value) -> Result<Received, Failure> {
    // A number no double holds (`1e999`) could not be written back as JSON, so such a reply is
    // not kept either; the detail says where it was.
    if let Some(found) = crate::json::non_finite(&body) {
        return Err(format!("{id}: the reply is outside the contract: {found}").into());
    }
    let kept = |detail: String| Failure {
        detail,
        reply: Some(body.clone()),
        unreachable: false,
    };
    let result_doc = body
        .get("result")
        .ok_or_else(|| kept(format!("{id}: the reply has no result")))?;
    let result = AgentResult::from_document(result_doc).map_err(|e| {
        kept(format!(
            "{id}: agent result does not conform to the contract: {e}"
        ))
    })?;
    let raw = match body.get("spans") {
        None => &Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(kept(format!("{id}: spans are not JSON strings"))),
    };
    if raw.len() > MAX_SPANS {
        // Not kept: a reply this large is what the limit is there to refuse.
        return Err(format!(
            "{id}: the reply carries {} spans, more than the limit of {MAX_SPANS}",
            raw.len()
        )
        .into());
    }
    let spans = raw
        .iter()
        .map(|s| {
            let text = s
                .as_str()
                .ok_or_else(|| kept(format!("{id}: spans are not JSON strings")))?;
            trace::from_json(text).map_err(|e| kept(format!("{id}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Received {
        result,
        spans,
        reply: body,
    })
}
