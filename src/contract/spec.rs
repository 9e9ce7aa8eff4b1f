//! Agent specifications: what an agent is, as its card's Data Director extension states it.
//!
//! [`AgentSpec::describe`] writes the description (`dd_sdk.agent.describe` in the
//! reference); [`AgentSpec::from_description`] rebuilds a spec from one with every check the
//! reference's `spec_from_description` and `ClassSchema.from_description` make, in their order
//! and with their messages. A harness trusts a card only as far as these checks go.

use super::ContractError;
use super::canonical::schema_digest;
use super::outcome::{Derivation, GroundingMode};
use super::schema::Schema;
use crate::json::python::str_repr;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The key every class schema designates its class with.
pub(crate) const DESIGNATOR: &str = "schema_class";
/// The key every payload class must require (it mixes in `Grounded`).
pub(crate) const GROUNDED_SLOT: &str = "grounded_on";

/// The keys a description must carry.
pub(crate) const DESCRIPTION_KEYS: [&str; 11] = [
    "agent_id",
    "version",
    "description",
    "requirement_ids",
    "action_class",
    "accepts",
    "grounding_mode",
    "payload",
    "derivations",
    "contract_version",
    "schemas",
];

/// One input or payload class: its name, JSON Schema, and that schema's digest.
#[derive(Clone, Debug)]
pub struct ClassSchema {
    /// The class name (`Message`), which its schema's `schema_class` must equal.
    pub name: String,
    /// The class's JSON Schema (draft 7).
    pub(crate) json_schema: Value,
    /// `dd-json-document-v1` hash of `json_schema`.
    pub(crate) digest: String,
    compiled: Arc<Schema>,
}

impl PartialEq for ClassSchema {
    fn eq(&self, other: &Self) -> bool {
        // The digest stands for the schema.
        self.name == other.name && self.digest == other.digest
    }
}

impl ClassSchema {
    /// A class schema from its JSON Schema, checked: a valid schema that requires
    /// `schema_class` to be exactly `name`.
    pub(crate) fn new(name: &str, json_schema: Value) -> Result<ClassSchema, ContractError> {
        // The run store keeps every schema it checked a run against; one it could not write
        // back as JSON would make the agent's every run unstorable.
        if let Some(found) = crate::json::non_finite(&json_schema) {
            return Err(class_error(name, found));
        }
        let compiled = Schema::compile(&json_schema)
            .map_err(|e| class_error(name, format!("not a valid JSON Schema: {e}")))?;
        let designator = json_schema
            .get("properties")
            .and_then(|p| p.get(DESIGNATOR))
            .and_then(|d| d.get("enum"));
        if designator != Some(&json!([name])) || !requires(&json_schema, DESIGNATOR) {
            let why = format!(
                "the schema does not require {DESIGNATOR} = {}",
                str_repr(name)
            );
            return Err(class_error(name, why));
        }
        Ok(ClassSchema {
            name: name.to_string(),
            digest: schema_digest(&json_schema),
            json_schema,
            compiled: Arc::new(compiled),
        })
    }

    /// Rebuild a class schema from a card's `schemas` entry, refusing one that does not match
    /// its digest.
    pub(crate) fn from_description(
        name: &str,
        entry: &Value,
    ) -> Result<ClassSchema, ContractError> {
        let (Some(json_schema @ Value::Object(_)), Some(Value::String(digest))) =
            (entry.get("json_schema"), entry.get("digest"))
        else {
            return Err(class_error(
                name,
                "a schema entry needs json_schema and digest",
            ));
        };
        if schema_digest(json_schema) != *digest {
            return Err(class_error(name, "the schema does not match its digest"));
        }
        ClassSchema::new(name, json_schema.clone())
    }

    /// Whether the class mixes in `Grounded` (requires `grounded_on`), as every payload class
    /// must.
    pub(crate) fn grounded(&self) -> bool {
        requires(&self.json_schema, GROUNDED_SLOT)
    }

    /// Every way `document` fails this class's schema; empty when it conforms.
    pub(crate) fn errors(&self, document: &Value) -> Vec<String> {
        self.compiled.validate(document)
    }

    /// The class's entry in a card's `schemas`.
    pub(crate) fn describe(&self) -> Value {
        json!({ "digest": self.digest, "json_schema": self.json_schema })
    }
}

/// Why the schema of class `name` is refused.
fn class_error(name: &str, why: impl std::fmt::Display) -> ContractError {
    ContractError::spec(None, format!("class {}: {why}", str_repr(name)))
}

/// Whether the schema's top-level `required` names `slot`.
fn requires(schema: &Value, slot: &str) -> bool {
    let required = schema.get("required").and_then(Value::as_array);
    required.is_some_and(|list| list.iter().any(|r| r.as_str() == Some(slot)))
}

/// How an agent produces one payload field it does not copy from input or evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derived {
    /// How the field is produced.
    pub how: Derivation,
    /// A sibling field recording, per value, how it actually came about.
    pub recorded_in: Option<String>,
}

/// What an agent is: what it accepts, what it returns, how it grounds it.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSpec {
    /// The agent's id, unique in a registry (`hello.world`).
    pub agent_id: String,
    /// The agent's version.
    pub version: String,
    /// What the agent does, in a sentence or two.
    pub description: String,
    /// The requirement ids the agent serves.
    pub requirement_ids: Vec<String>,
    /// What the policy gate matches against the profile.
    pub action_class: String,
    /// Input class names; anything else is `input-not-accepted`. Never empty.
    pub accepts: Vec<String>,
    /// How the agent grounds its payloads; decides the linter's rules.
    pub grounding_mode: GroundingMode,
    /// The payload class, or `None` for an agent that never succeeds with a payload.
    pub payload: Option<String>,
    /// Payload field path → how the agent produces it.
    pub derivations: BTreeMap<String, Derived>,
    /// The contract version the agent was built against.
    pub contract_version: String,
    /// Every accepted class and the payload class.
    pub schemas: BTreeMap<String, ClassSchema>,
}

impl AgentSpec {
    /// The schema of class `name`, if the spec carries it.
    pub(crate) fn schema(&self, name: &str) -> Option<&ClassSchema> {
        self.schemas.get(name)
    }

    /// The payload class's schema, if the agent returns a payload.
    pub(crate) fn payload_schema(&self) -> Option<&ClassSchema> {
        self.payload.as_deref().and_then(|p| self.schemas.get(p))
    }

    /// The description: the card extension's `params`, the manifest entry.
    pub(crate) fn describe(&self) -> Value {
        let derivations: Map<String, Value> = self
            .derivations
            .iter()
            .map(|(path, d)| {
                (
                    path.clone(),
                    json!({ "how": d.how.as_str(), "recorded_in": d.recorded_in }),
                )
            })
            .collect();
        let schemas: Map<String, Value> = self
            .schemas
            .iter()
            .map(|(n, s)| (n.clone(), s.describe()))
            .collect();
        json!({
            "agent_id": self.agent_id,
            "version": self.version,
            "description": self.description,
            "requirement_ids": self.requirement_ids,
            "action_class": self.action_class,
            "accepts": self.accepts,
            "grounding_mode": self.grounding_mode.as_str(),
            "payload": self.payload,
            "derivations": derivations,
            "contract_version": self.contract_version,
            "schemas": schemas,
        })
    }

    /// Rebuild a spec from a description, checking, in this order: the contract version
    /// ([`ContractError::Version`]), the keys, `accepts`, each class schema against its digest
    /// and designator, the payload class's `grounded_on`, and the derivations.
    pub(crate) fn from_description(entry: &Value) -> Result<AgentSpec, ContractError> {
        let id_repr = entry
            .get("agent_id")
            .map(crate::json::python::py_repr)
            .unwrap_or_else(|| "None".into());
        let agent = entry.get("agent_id").and_then(Value::as_str);
        let declared = compatible_version(entry, &id_repr)?;
        let Some(obj) = entry.as_object() else {
            return Err(ContractError::spec(
                agent,
                "agent description is not an object",
            ));
        };
        check_keys(obj, agent)?;
        let refuse = |why: String| ContractError::spec(agent, format!("agent {id_repr}: {why}"));
        let text = |key: &str| -> Result<String, ContractError> {
            let text = obj[key].as_str().map(str::to_string);
            text.ok_or_else(|| refuse(format!("{key} must be a string")))
        };
        let list = |key: &str| -> Result<Vec<String>, ContractError> {
            obj[key]
                .as_array()
                .and_then(|a| {
                    a.iter()
                        .map(|v| v.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()
                })
                .ok_or_else(|| refuse(format!("{key} must be a list of strings")))
        };
        let agent_id = text("agent_id")?;
        let accepts = list("accepts")?;
        if accepts.is_empty() {
            return Err(ContractError::spec(
                agent,
                format!(
                    "agent {id_repr} accepts nothing; an agent must accept at least one input class"
                ),
            ));
        }
        let grounding_mode = obj["grounding_mode"]
            .as_str()
            .and_then(GroundingMode::parse)
            .ok_or_else(|| {
                refuse(format!(
                    "{} is not a valid GroundingMode",
                    obj["grounding_mode"]
                ))
            })?;
        let payload = match &obj["payload"] {
            Value::Null => None,
            Value::String(p) => Some(p.clone()),
            other => {
                return Err(refuse(format!(
                    "payload must be a class name or null, got {other}"
                )));
            }
        };
        let schemas = class_schemas(obj, &accepts, payload.as_deref(), agent, &id_repr)?;
        let derivations = parse_derivations(&obj["derivations"], agent, &id_repr)?;
        Ok(AgentSpec {
            agent_id,
            version: text("version")?,
            description: text("description")?,
            requirement_ids: list("requirement_ids")?,
            action_class: text("action_class")?,
            accepts,
            grounding_mode,
            payload,
            derivations,
            contract_version: declared,
            schemas,
        })
    }
}

/// The contract version a description declares, if this contract governs it
/// ([`ContractError::Version`] otherwise). `id_repr` is the agent id as Python writes it.
fn compatible_version(entry: &Value, id_repr: &str) -> Result<String, ContractError> {
    let current = super::CONTRACT_VERSION;
    let incompatible = |declared: Option<&str>| ContractError::Version {
        agent: id_repr.to_owned(),
        declared: declared.map(str::to_owned),
        governed: current,
    };
    let declared = match entry.get("contract_version") {
        Some(Value::String(v)) => v.clone(),
        _ => return Err(incompatible(None)),
    };
    if !super::contract_compatible(&declared, current) {
        return Err(incompatible(Some(&declared)));
    }
    Ok(declared)
}

/// That a description has every key of [`DESCRIPTION_KEYS`]; the missing ones, sorted, if not.
fn check_keys(obj: &Map<String, Value>, agent: Option<&str>) -> Result<(), ContractError> {
    let mut missing: Vec<&str> = DESCRIPTION_KEYS
        .iter()
        .copied()
        .filter(|k| !obj.contains_key(*k))
        .collect();
    missing.sort();
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|k| str_repr(k)).collect();
        return Err(ContractError::spec(
            agent,
            format!("agent description lacks [{}]", list.join(", ")),
        ));
    }
    Ok(())
}

/// The schema of each class an agent accepts and of its payload class, checked against their
/// digests and designators, from the description's `schemas`; the payload class must mix in
/// Grounded.
fn class_schemas(
    obj: &Map<String, Value>,
    accepts: &[String],
    payload: Option<&str>,
    agent: Option<&str>,
    id_repr: &str,
) -> Result<BTreeMap<String, ClassSchema>, ContractError> {
    let entries = obj["schemas"].as_object().ok_or_else(|| {
        ContractError::spec(agent, format!("agent {id_repr}: schemas must be an object"))
    })?;
    let mut schemas = BTreeMap::new();
    for name in accepts.iter().map(String::as_str).chain(payload) {
        let entry = entries.get(name).ok_or_else(|| {
            ContractError::spec(
                agent,
                format!(
                    "agent {id_repr} names class {} but carries no schema for it",
                    str_repr(name)
                ),
            )
        })?;
        schemas.insert(name.to_owned(), ClassSchema::from_description(name, entry)?);
    }
    if let Some(p) = payload
        && !schemas[p].grounded()
    {
        return Err(ContractError::spec(
            agent,
            format!(
                "agent {id_repr}: payload class {} does not mix in Grounded (its schema does not require {GROUNDED_SLOT})",
                str_repr(p)
            ),
        ));
    }
    Ok(schemas)
}

/// The `derivations` of the description of `agent` (`id_repr` as the reference quotes it).
fn parse_derivations(
    v: &Value,
    agent: Option<&str>,
    id_repr: &str,
) -> Result<BTreeMap<String, Derived>, ContractError> {
    let malformed = |what: String| {
        ContractError::spec(
            agent,
            format!("agent {id_repr}: malformed derivations: {what}"),
        )
    };
    let obj = v
        .as_object()
        .ok_or_else(|| malformed("not an object".into()))?;
    obj.iter()
        .map(|(path, d)| {
            let how = d
                .get("how")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed(format!("{path}: no how")))?;
            let how = Derivation::parse(how)
                .ok_or_else(|| malformed(format!("{path}: {how:?} is not a Derivation")))?;
            let recorded_in = match d.get("recorded_in") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => {
                    return Err(malformed(format!(
                        "{path}: recorded_in {other} is not a field name"
                    )));
                }
            };
            Ok((path.clone(), Derived { how, recorded_in }))
        })
        .collect()
}
