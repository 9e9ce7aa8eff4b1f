//! The InvocationRequest: what a caller asks the harness to run.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One request to run one agent on one input. Closed: a request cannot name whom it acts for
/// (`acting_for`) or which profile applies (`policy_bundle_ref`); those come from the
/// caller's credentials and the deployment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InvocationRequest {
    /// UUIDv7; made fresh when a caller leaves it out (the reference model's default).
    #[serde(default = "crate::ids::new_uuid7")]
    pub(crate) invocation_id: String,
    /// The agent to run, by the id its card declares.
    pub(crate) agent_id: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    /// Requirement ids the caller asks the run to serve (may be empty).
    pub(crate) requirement_ids: Vec<String>,
    /// RFC 3339; now when a caller leaves it out.
    #[serde(default = "crate::time::now_rfc3339")]
    pub issued_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The conversation this request continues, if any.
    pub(crate) conversation_id: Option<String>,
    /// Set only by the conductor, from a delegation grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parent_invocation_id: Option<String>,
    /// The input document, naming its class in `schema_class`.
    pub input: Input,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

/// An input document: open, but it must name its class in `schema_class`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Input(pub Map<String, Value>);

impl Input {
    /// The input's class (`schema_class`); present in every validated input.
    pub fn schema_class(&self) -> &str {
        self.0
            .get("schema_class")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The input as a JSON value (what `dd-input-json-v1` hashes).
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }
}

impl InvocationRequest {
    /// Read and check a request document: closed (an unknown key such as `acting_for` is
    /// refused, named), every field of its type and pattern, `issued_at` a date-time. A missing
    /// `invocation_id` or `issued_at` is filled, as the reference's model does.
    pub fn from_value(document: &Value) -> Result<InvocationRequest, super::ContractError> {
        let errors = super::validate::request_errors(document);
        if !errors.is_empty() {
            return Err(super::ContractError::Violation {
                document: "InvocationRequest",
                violations: errors,
            });
        }
        InvocationRequest::deserialize(document)
            .map_err(|e| super::ContractError::violation("InvocationRequest", e.to_string()))
    }

    /// A request for `agent_id` on `input`, with a fresh id and `issued_at` now.
    pub fn new(agent_id: impl Into<String>, input: Input) -> InvocationRequest {
        InvocationRequest {
            invocation_id: crate::ids::new_uuid7(),
            agent_id: agent_id.into(),
            requirement_ids: Vec::new(),
            issued_at: crate::time::now_rfc3339(),
            conversation_id: None,
            parent_invocation_id: None,
            input,
        }
    }

    /// The document as the wire and the run store carry it (`None` left out, `[]` kept).
    pub(crate) fn to_document(&self) -> Value {
        serde_json::to_value(self).expect("a request always serialises")
    }

    /// `dd-input-json-v1` hash of the input (`dd.input_hash`).
    pub(crate) fn input_hash(&self) -> String {
        super::canonical::input_hash_of_members(&self.input.0)
    }

    /// `input:<invocation_id>`, the source id that cites this request's input.
    pub(crate) fn input_ref(&self) -> String {
        super::input_source_id(&self.invocation_id)
    }
}
