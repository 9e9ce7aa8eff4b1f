//! Delegation from inside an agent: `ctx.delegate(agent_id, input)` (the child is a run of its own, in a trace of its own linked to the
//! delegating `delegate` span).
//!
//! A delegation agent invoked at the top level is sent a grant in its message metadata: the
//! harness's URL (`dd.delegate_url`) and a bearer token (`dd.delegation_token`). [`Delegate`]
//! uses it to ask the harness to run another agent: it opens a `delegate` span naming the
//! target, sends one data part to the harness with the token and that span's `traceparent`,
//! reads the `envelope-json` artifact (the stored envelope as text, so its hash survives the
//! wire), records `dd.source_id = invocation:<child>` and `dd.content_hash` on the span, and
//! returns the child envelope with the grounding reference and evidence item that cite it.
//!
//! The callback also names the invocation the grant was issued for
//! (`dd.parent_invocation_id`), and when the agent server holds a key its client signs the
//! callback (direction `to-harness`): the harness refuses a token presented for another parent,
//! or, from an agent it shares a key with, a callback that is not signed with that key.

use super::AgentError;
use crate::contract::{
    Canonicalisation, Envelope, EvidenceItem, GroundingRef, Input, InvocationRequest,
    envelope_hash, invocation_source_id,
};
use crate::trace::{Tracer, attr};
use crate::wire::a2a::client::{A2aClient, Target};
use crate::wire::a2a::model::{Message, Part, Role, TaskState};
use crate::wire::a2a::{artifact, meta};
use serde_json::{Map, Value};
use std::time::Duration;

/// The default time a delegated call may take.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A grant to delegate, as it arrived, and the client to use it.
#[derive(Clone)]
pub(crate) struct Delegate {
    /// The harness's base URL.
    pub(crate) url: String,
    /// The grant's bearer token (`dd.delegation_token`).
    pub(crate) token: String,
    /// The invocation the grant was issued for, sent as `dd.parent_invocation_id`.
    pub(crate) parent_invocation_id: Option<String>,
    /// Signs the callback when the agent server holds a key.
    pub(crate) client: A2aClient,
    /// How long a delegated call may take.
    pub(crate) timeout: Duration,
}

/// What a delegation returned: the child's envelope, and how to cite it.
#[derive(Clone, Debug)]
pub(crate) struct Delegated {
    /// The child's envelope, as the harness returned it.
    pub(crate) envelope: Envelope,
    /// `invocation:<child id>` and the `dd-envelope-json-v1` hash of the stored envelope.
    pub(crate) reference: GroundingRef,
    /// The same, as an evidence item.
    pub(crate) evidence: EvidenceItem,
}

impl Delegate {
    /// The grant a message carries, if it carries one (both keys non-empty), for the
    /// invocation `parent_invocation_id` it was issued for.
    pub(crate) fn from_metadata(
        metadata: Option<&Map<String, Value>>,
        client: A2aClient,
        parent_invocation_id: &str,
    ) -> Option<Delegate> {
        let m = metadata?;
        let url = m
            .get(meta::DELEGATE_URL)?
            .as_str()
            .filter(|s| !s.is_empty())?;
        let token = m
            .get(meta::DELEGATION_TOKEN)?
            .as_str()
            .filter(|s| !s.is_empty())?;
        Some(Delegate {
            url: url.trim_end_matches('/').to_string(),
            token: token.to_string(),
            parent_invocation_id: Some(parent_invocation_id.to_string()),
            client,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// Ask the harness to run `agent_id` on `input`, under a `delegate` span of `tracer`.
    pub(crate) fn call(
        &self,
        tracer: &Tracer,
        agent_id: &str,
        input: Input,
    ) -> Result<Delegated, AgentError> {
        let refused = |m: String| {
            AgentError::new(
                "DelegationRefused",
                format!("the harness refused the delegation: {m}"),
            )
        };
        let span = tracer.delegate(agent_id);
        let request = InvocationRequest::new(agent_id, input);
        let mut metadata = Map::new();
        metadata.insert(
            meta::DELEGATION_TOKEN.into(),
            Value::String(self.token.clone()),
        );
        metadata.insert(meta::TRACEPARENT.into(), Value::String(span.traceparent()));
        if let Some(parent) = &self.parent_invocation_id {
            metadata.insert(
                meta::PARENT_INVOCATION_ID.into(),
                Value::String(parent.clone()),
            );
        }
        let mut message = Message::new(Role::User, vec![Part::data(request.to_document())]);
        message.metadata = Some(metadata);
        let card = self
            .client
            .fetch_card(&self.url, self.timeout)
            .map_err(|e| refused(e.to_string()))?;
        let target = Target::from_card(&card).map_err(|e| refused(e.to_string()))?;
        let task = self
            .client
            .send_for_task(&target, message, &[], self.timeout)
            .map_err(|e| refused(e.to_string()))?;
        if task.status.state != TaskState::Completed {
            return Err(refused(task.failure_detail().unwrap_or_else(|| {
                format!("the task ended {:?}", task.status.state)
            })));
        }
        let text = task
            .artifacts_named(artifact::ENVELOPE_JSON)
            .into_iter()
            .find_map(|a| match a.parts.as_slice() {
                [Part::Text { text, .. }] => Some(text.clone()),
                _ => None,
            })
            .ok_or_else(|| {
                refused(format!(
                    "the reply has no {} artifact with one text part",
                    artifact::ENVELOPE_JSON
                ))
            })?;
        let doc = crate::json::parse_str(&text).map_err(|e| refused(e.to_string()))?;
        let content_hash = envelope_hash(&doc);
        // Read from `&Value`, as AgentResult is: one deserializer for the fields they share.
        let envelope = <Envelope as serde::Deserialize>::deserialize(&doc)
            .map_err(|e| refused(format!("the child envelope: {e}")))?;
        let source_id = invocation_source_id(&envelope.invocation_id);
        span.set(attr::SOURCE_ID, source_id.as_str());
        span.set(attr::CONTENT_HASH, content_hash.as_str());
        span.end();
        let mut evidence = EvidenceItem::citing_input(&source_id, &content_hash);
        evidence.canonicalisation = Canonicalisation::EnvelopeDocument.name().to_string();
        evidence.retrieved_at = Some(crate::time::now_rfc3339());
        Ok(Delegated {
            envelope,
            reference: GroundingRef {
                source_id,
                content_hash,
            },
            evidence,
        })
    }
}
