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
    pub(crate) issued_at: String,
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

/// Validate `document` against every rule of the request, then read it: the general reader of
/// [`InvocationRequest::from_value`], which alone reports errors.
pub(crate) fn validated(document: &Value) -> Result<InvocationRequest, super::ContractError> {
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

/// The request a document in its plain shape holds, read in one pass over its members
/// without the validator, which it agrees with: only a document every rule of
/// `validate::request_errors` passes is read (the schema's members, types and patterns, a
/// date-time `issued_at`, an input naming its `schema_class`, no number a double cannot hold),
/// and it is read as [`InvocationRequest::deserialize`] would read it. Anything else is `None`,
/// and [`InvocationRequest::from_value`] then validates it, so each error is the validator's.
/// The input is copied once; the other fields are strings.
pub(crate) fn plain(document: &Value) -> Option<InvocationRequest> {
    let Value::Object(members) = document else {
        return None;
    };
    // A string of the UUIDv7 pattern, or `null` where the schema allows it.
    let uuid7 = |v: &Value, null: bool| match v {
        Value::String(s) if crate::ids::is_uuid7(s) => Some(Some(s.clone())),
        Value::Null if null => Some(None),
        _ => None,
    };
    let (mut agent_id, mut input) = (None, None);
    let (mut invocation_id, mut issued_at) = (None, None);
    let (mut conversation_id, mut parent_invocation_id) = (None, None);
    let mut requirement_ids = Vec::new();
    for (name, v) in members {
        match (name.as_str(), v) {
            ("agent_id", Value::String(s)) => agent_id = Some(s),
            ("input", Value::Object(doc))
                if doc.get("schema_class").is_some_and(Value::is_string)
                    && crate::json::non_finite(v).is_none() =>
            {
                input = Some(doc);
            }
            ("invocation_id", _) => invocation_id = uuid7(v, false)?,
            ("issued_at", Value::String(s)) if crate::time::parse_rfc3339(s).is_some() => {
                issued_at = Some(s.clone());
            }
            ("conversation_id", _) => conversation_id = uuid7(v, true)?,
            ("parent_invocation_id", _) => parent_invocation_id = uuid7(v, true)?,
            ("requirement_ids", Value::Null) => {}
            ("requirement_ids", Value::Array(ids)) => {
                requirement_ids = ids
                    .iter()
                    .map(|id| id.as_str().map(str::to_string))
                    .collect::<Option<_>>()?;
            }
            _ => return None,
        }
    }
    Some(InvocationRequest {
        invocation_id: invocation_id.unwrap_or_else(crate::ids::new_uuid7),
        agent_id: agent_id?.clone(),
        requirement_ids,
        issued_at: issued_at.unwrap_or_else(crate::time::now_rfc3339),
        conversation_id,
        parent_invocation_id,
        input: Input(input?.clone()),
    })
}

/// An input document: open, but it must name its class in `schema_class`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Input(pub Map<String, Value>);

impl Input {
    /// The input as a JSON value (what `dd-input-json-v1` hashes).
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }
}

impl InvocationRequest {
    /// Read and check a request document: closed (an unknown key such as `acting_for` is
    /// refused, named), every field of its type and pattern, `issued_at` a date-time. A missing
    /// `invocation_id` or `issued_at` is filled, as the reference's model does.
    pub(crate) fn from_value(document: &Value) -> Result<InvocationRequest, super::ContractError> {
        plain(document).map_or_else(|| validated(document), Ok)
    }

    /// A request for `agent_id` on `input`, with a fresh id and `issued_at` now.
    pub(crate) fn new(agent_id: impl Into<String>, input: Input) -> InvocationRequest {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ID: &str = "0190b3c2-6a4e-7c3b-8a1d-6f0e2d3c4b5a";
    const AT: &str = "2026-12-01T10:00:00Z";

    #[test]
    fn a_request_in_its_plain_shape_is_read_as_the_validator_and_deserializer_read_it() {
        let input = json!({"schema_class": "Echo", "value": {"n": 1, "x": [1.5, null, "s"]}});
        let documents = [
            json!({"invocation_id": ID, "agent_id": "echo.wire", "issued_at": AT, "input": input}),
            json!({"invocation_id": ID, "agent_id": "", "issued_at": "2026-12-01T10:00:00.5+02:00",
                   "requirement_ids": ["REQ-1", ""], "conversation_id": ID,
                   "parent_invocation_id": null, "input": {"schema_class": ""}}),
            json!({"invocation_id": ID, "agent_id": "a", "issued_at": AT, "requirement_ids": null,
                   "conversation_id": null, "parent_invocation_id": ID, "input": input}),
        ];
        for document in &documents {
            let fast = plain(document).unwrap_or_else(|| panic!("declined: {document}"));
            assert_eq!(Ok(fast), validated(document).map_err(|e| e.to_string()));
        }
        // Left out, the id and the time are made fresh, as the deserializer makes them.
        let fresh = plain(&json!({"agent_id": "a", "input": input})).unwrap();
        assert!(crate::ids::is_uuid7(&fresh.invocation_id));
        assert!(crate::time::parse_rfc3339(&fresh.issued_at).is_some());
        assert_eq!(fresh.input.0, *input.as_object().unwrap());
    }

    #[test]
    fn a_request_the_validator_refuses_is_declined_so_its_errors_are_the_validators() {
        let input = json!({"schema_class": "Echo"});
        let with = |key: &str, v: Value| {
            let mut d = json!({"invocation_id": ID, "agent_id": "a", "issued_at": AT,
                               "input": input});
            d[key] = v;
            d
        };
        let without = |key: &str| {
            let mut d = with("agent_id", json!("a"));
            d.as_object_mut().unwrap().remove(key);
            d
        };
        let refused = [
            json!(null),
            json!([{"agent_id": "a", "input": input}]),
            json!("request"),
            without("agent_id"),
            without("input"),
            with("agent_id", json!(5)),
            with("agent_id", json!(null)),
            with("acting_for", json!("someone")),
            with("policy_bundle_ref", json!(null)),
            with("invocation_id", json!(null)),
            with(
                "invocation_id",
                json!("0190b3c2-6a4e-4c3b-8a1d-6f0e2d3c4b5a"),
            ),
            with(
                "invocation_id",
                json!("0190B3C2-6A4E-7C3B-8A1D-6F0E2D3C4B5A"),
            ),
            with(
                "invocation_id",
                json!("-190b3c2-6a4e-7c3b-8a1d-6f0e2d3c4b5a"),
            ),
            with("invocation_id", json!(format!("{ID}\n"))),
            with("invocation_id", json!(7)),
            with("issued_at", json!(null)),
            with("issued_at", json!("yesterday")),
            with("issued_at", json!("2026-12-01T10:00:00")),
            with("issued_at", json!("2026-02-30T10:00:00Z")),
            with("conversation_id", json!("c")),
            with("conversation_id", json!(1)),
            with("parent_invocation_id", json!("p")),
            with("parent_invocation_id", json!([])),
            with("requirement_ids", json!("REQ-1")),
            with("requirement_ids", json!([1])),
            with("requirement_ids", json!(["REQ-1", null])),
            with("requirement_ids", json!({})),
            with("input", json!(null)),
            with("input", json!([])),
            with("input", json!({})),
            with("input", json!({"schema_class": 5})),
            with("input", json!({"schema_class": null})),
            with(
                "input",
                crate::json::parse_str(r#"{"schema_class":"E","n":[1e999]}"#).unwrap(),
            ),
        ];
        for document in &refused {
            assert!(plain(document).is_none(), "taken: {document}");
            let general = validated(document);
            assert!(general.is_err(), "{document}: {general:?}");
            assert_eq!(
                InvocationRequest::from_value(document).map_err(|e| e.to_string()),
                general.map_err(|e| e.to_string()),
            );
        }
    }
}
