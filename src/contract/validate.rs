//! The envelope's conditional rules (`contract.validate` in the reference).
//!
//! These are the rules the contract states in prose and a JSON Schema cannot express: an
//! envelope's outcome and its supporting fields must agree. They are applied to the JSON
//! document, not the typed model, so they hold for documents produced anywhere, and their
//! messages are the reference's, word for word.

use super::ContractError;
use super::canonical::Canonicalisation;
use super::schema::Schema;
use crate::json::python::str_repr;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::OnceLock;

const REQUEST_SCHEMA: &str = include_str!("schemas/invocation_request.schema.json");
const AGENT_RESULT_SCHEMA: &str = include_str!("schemas/agent_result.schema.json");
const ENVELOPE_SCHEMA: &str = include_str!("schemas/envelope.schema.json");

fn compiled(cell: &'static OnceLock<Schema>, json: fn() -> Value) -> &'static Schema {
    cell.get_or_init(|| Schema::compile(&json()).expect("a shipped contract schema compiles"))
}

fn parse_shipped(text: &str) -> Value {
    serde_json::from_str(text).expect("a shipped contract schema is JSON")
}

/// The InvocationRequest schema (closed; `invocation_id` and `issued_at` may be left out).
pub(crate) fn request_schema() -> Value {
    parse_shipped(REQUEST_SCHEMA)
}

/// The AgentResult wire document's schema.
pub(crate) fn agent_result_schema() -> Value {
    parse_shipped(AGENT_RESULT_SCHEMA)
}

/// The Envelope schema, with the Outcome and EvidenceItem definitions it shares with the
/// AgentResult schema.
pub(crate) fn envelope_schema() -> Value {
    let mut envelope = parse_shipped(ENVELOPE_SCHEMA);
    let result = agent_result_schema();
    for name in ["Outcome", "EvidenceItem"] {
        envelope["$defs"][name] = result["$defs"][name].clone();
    }
    envelope
}

/// Schema errors of a request document, plus its `issued_at` as a date-time (the reference's
/// model parses it; JSON Schema's `format` does not assert it).
pub(crate) fn request_errors(document: &Value) -> Vec<String> {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    let mut errors = compiled(&SCHEMA, request_schema).validate(document);
    date_time_errors(document, &["issued_at"], &mut errors);
    non_finite_errors(document, &mut errors);
    errors
}

/// Schema errors of an AgentResult wire document.
pub(crate) fn agent_result_errors(document: &Value) -> Vec<String> {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    let mut errors = compiled(&SCHEMA, agent_result_schema).validate(document);
    non_finite_errors(document, &mut errors);
    errors
}

/// A number that overflows a double (`1e999`) parses, but would be written back as
/// `Infinity`, which no JSON reader accepts: the run store, the index and every listing would
/// be unreadable from then on. So a document holding one breaks the contract wherever it comes
/// from: a caller's request is refused, an agent's result is its error.
fn non_finite_errors(document: &Value, errors: &mut Vec<String>) {
    if let Some(found) = crate::json::non_finite(document) {
        errors.push(found.to_string());
    }
}

/// Every way an envelope document breaks the contract: its schema, then the conditional
/// rules. `Err` carries them all, as the reference's `validate_envelope` raises.
pub fn validate_envelope(document: &Value) -> Result<(), ContractError> {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    let mut errors = compiled(&SCHEMA, envelope_schema).validate(document);
    date_time_errors(document, &["completed_at"], &mut errors);
    non_finite_errors(document, &mut errors);
    errors.extend(conditional_errors(document));
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ContractError::Violation {
            document: "Envelope",
            violations: errors,
        })
    }
}

fn date_time_errors(document: &Value, keys: &[&str], errors: &mut Vec<String>) {
    for key in keys {
        if let Some(Value::String(s)) = document.get(*key)
            && crate::time::parse_rfc3339(s).is_none()
        {
            errors.push(format!("{key}: {} is not a 'date-time'", str_repr(s)));
        }
    }
}

/// Every conditional-rule violation of an envelope document, including
/// [`grounding_errors`].
pub(crate) fn conditional_errors(envelope: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let outcome = envelope.get("outcome");
    let status = outcome
        .and_then(|o| o.get("status"))
        .map(py_text)
        .unwrap_or_else(|| "None".into());
    let present = |v: Option<&Value>| v.is_some_and(|v| !v.is_null());
    let has_problem = present(envelope.get("problem"));
    let has_payload = present(envelope.get("payload"));
    let has_reason = present(outcome.and_then(|o| o.get("reason_code")));
    let referred_to = outcome
        .and_then(|o| o.get("referred_to"))
        .is_some_and(truthy);
    let failed_or_suspended = status == "failed" || status == "suspended";

    if failed_or_suspended && !has_problem {
        errors.push(format!(
            "outcome.status={status} requires problem (RFC 9457)"
        ));
    }
    if (status == "abstained" || status == "referred") && !has_reason {
        errors.push(format!(
            "outcome.status={status} requires outcome.reason_code"
        ));
    }
    if status == "referred" && !referred_to {
        errors.push("outcome.status=referred requires outcome.referred_to".to_string());
    }
    if status == "succeeded" && !has_payload {
        errors.push("outcome.status=succeeded requires payload".to_string());
    }
    if status != "succeeded" && has_payload {
        errors.push(format!("outcome.status={status} must not carry a payload"));
    }
    if !failed_or_suspended && has_problem {
        errors.push(format!("outcome.status={status} must not carry a problem"));
    }
    if has_payload != envelope.get("payload_schema").is_some() {
        errors.push("a payload requires payload_schema, and payload_schema a payload".to_string());
    }
    errors.extend(grounding_errors(envelope));
    errors
}

/// Self-consistency between `grounding_mode`, payload and evidence. Agreement with the trace
/// is the linter's job; these rules hold on the document alone.
pub(crate) fn grounding_errors(envelope: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let mode = envelope
        .get("grounding_mode")
        .and_then(Value::as_str)
        .unwrap_or("");
    let status = envelope
        .get("outcome")
        .and_then(|o| o.get("status"))
        .and_then(Value::as_str);
    let payload = envelope.get("payload").filter(|p| !p.is_null());
    let empty = Vec::new();
    let evidence = envelope
        .get("evidence")
        .and_then(Value::as_array)
        .unwrap_or(&empty);

    if let Some(payload) = payload {
        if payload.get("schema_class").is_none() {
            errors.push("payload lacks schema_class".to_string());
        }
        if payload.get("grounded_on").is_none() {
            errors.push(
                "payload lacks grounded_on: every payload class mixes in Grounded".to_string(),
            );
        }
    }
    for ev in evidence {
        let name = ev.get("canonicalisation");
        if Canonicalisation::from_name(name.and_then(Value::as_str).unwrap_or("\0")).is_err() {
            errors.push(format!(
                "evidence {}: unknown canonicalisation {}",
                py_repr_opt(ev.get("source_id")),
                py_repr_opt(name)
            ));
        }
    }

    if status != Some("succeeded") {
        return errors;
    }
    let input_name = Canonicalisation::InputDocument.name();
    match mode {
        "retrieval" => {
            let grounded = payload.and_then(|p| p.get("grounded_on"));
            if payload.is_some() && !grounded.is_some_and(truthy) {
                errors.push(
                    "grounding_mode=retrieval and succeeded requires non-empty grounded_on".into(),
                );
            }
        }
        "input_only" | "none" | "delegation" => {
            let cites_input = |ev: &Value| {
                ev.get("canonicalisation").and_then(Value::as_str) == Some(input_name)
                    && ev
                        .get("source_id")
                        .map(py_text)
                        .unwrap_or_default()
                        .starts_with("input:")
            };
            let citing = evidence.iter().filter(|ev| cites_input(ev)).count();
            if citing == 0 {
                errors.push(format!(
                    "grounding_mode={mode} and succeeded requires evidence citing the input \
                     ({input_name}, source_id input:<invocation_id>)"
                ));
            }
            if mode == "delegation" {
                let other = evidence.iter().filter(|ev| !cites_input(ev));
                delegation_evidence_errors(envelope, other, &mut errors);
            } else if citing != evidence.len() {
                errors.push(format!(
                    "grounding_mode={mode} permits no evidence other than the input"
                ));
            }
        }
        _ => {}
    }
    errors
}

/// For a succeeded run in mode `delegation`: each item of `evidence` (other than the input)
/// must cite, by envelope hash, a delegation the envelope records.
fn delegation_evidence_errors<'e>(
    envelope: &Value,
    evidence: impl Iterator<Item = &'e Value>,
    errors: &mut Vec<String>,
) {
    let recorded: HashSet<(String, String)> = envelope
        .get("delegations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|d| {
            (
                format!(
                    "invocation:{}",
                    d.get("delegated_invocation_id")
                        .map(py_text)
                        .unwrap_or_default()
                ),
                d.get("content_hash").map(py_text).unwrap_or_default(),
            )
        })
        .collect();
    let envelope_name = Canonicalisation::EnvelopeDocument.name();
    for ev in evidence {
        let pair = (
            ev.get("source_id").map(py_text).unwrap_or_default(),
            ev.get("content_hash").map(py_text).unwrap_or_default(),
        );
        if ev.get("canonicalisation").and_then(Value::as_str) != Some(envelope_name)
            || !recorded.contains(&pair)
        {
            errors.push(format!(
                "grounding_mode=delegation: evidence {} is neither the input nor a \
                 recorded delegation ({envelope_name})",
                py_repr_opt(ev.get("source_id"))
            ));
        }
    }
}

/// Python truthiness of a JSON value (`not x` is false).
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
    }
}

/// `str(x)` / f-string interpolation of a JSON value as Python would print it.
fn py_text(v: &Value) -> String {
    crate::json::python::py_str(v)
}

/// `{x!r}` of an optional JSON value (`None` when absent).
pub(crate) fn py_repr_opt(v: Option<&Value>) -> String {
    match v {
        None => "None".into(),
        Some(Value::String(s)) => str_repr(s),
        Some(other) => crate::json::python::py_repr(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(status: &str) -> Value {
        json!({"grounding_mode": "input_only", "outcome": {"status": status, "statement": "x"}, "evidence": []})
    }

    #[test]
    fn failed_requires_problem_details() {
        let errors = conditional_errors(&envelope("failed"));
        assert_eq!(
            errors,
            ["outcome.status=failed requires problem (RFC 9457)"]
        );
    }

    #[test]
    fn abstained_without_reason_code_is_rejected() {
        assert_eq!(
            conditional_errors(&envelope("abstained")),
            ["outcome.status=abstained requires outcome.reason_code"]
        );
    }

    #[test]
    fn referred_requires_referred_to() {
        let mut e = envelope("referred");
        e["outcome"]["reason_code"] = json!("requires_human_judgement");
        assert_eq!(
            conditional_errors(&e),
            ["outcome.status=referred requires outcome.referred_to"]
        );
    }

    #[test]
    fn succeeded_without_payload_is_rejected() {
        let errors = conditional_errors(&envelope("succeeded"));
        assert!(errors.contains(&"outcome.status=succeeded requires payload".to_string()));
    }

    #[test]
    fn a_payload_and_its_schema_digest_come_together() {
        let mut e = envelope("abstained");
        e["outcome"]["reason_code"] = json!("not_applicable");
        e["payload_schema"] = json!("0".repeat(64));
        assert_eq!(
            conditional_errors(&e),
            ["a payload requires payload_schema, and payload_schema a payload"]
        );
    }

    #[test]
    fn a_non_failed_status_must_not_carry_a_problem_or_a_payload() {
        let mut e = envelope("abstained");
        e["outcome"]["reason_code"] = json!("not_applicable");
        e["problem"] = json!({"type": "about:blank"});
        e["payload"] = json!({"schema_class": "Reply", "grounded_on": []});
        e["payload_schema"] = json!("0".repeat(64));
        assert_eq!(
            conditional_errors(&e),
            [
                "outcome.status=abstained must not carry a payload",
                "outcome.status=abstained must not carry a problem"
            ]
        );
    }

    #[test]
    fn unknown_canonicalisation_is_rejected() {
        let mut e = envelope("failed");
        e["problem"] = json!({"type": "about:blank"});
        e["evidence"] =
            json!([{"source_id": "src:a", "canonicalisation": "nope", "content_hash": "0"}]);
        assert_eq!(
            conditional_errors(&e),
            ["evidence 'src:a': unknown canonicalisation 'nope'"]
        );
    }

    #[test]
    fn input_grounded_success_must_cite_only_the_input() {
        let mut e = envelope("succeeded");
        e["payload"] = json!({"schema_class": "Reply", "grounded_on": []});
        e["payload_schema"] = json!("0".repeat(64));
        let errors = conditional_errors(&e);
        assert!(errors[0].contains("citing the input"), "{errors:?}");
        e["evidence"] = json!([
            {"source_id": "input:x", "canonicalisation": "dd-input-json-v1", "content_hash": "0"},
            {"source_id": "src:a", "canonicalisation": "dd-json-document-v1", "content_hash": "0"},
        ]);
        assert_eq!(
            conditional_errors(&e),
            ["grounding_mode=input_only permits no evidence other than the input"]
        );
    }

    #[test]
    fn retrieval_success_requires_non_empty_grounded_on() {
        let mut e = envelope("succeeded");
        e["grounding_mode"] = json!("retrieval");
        e["payload"] = json!({"schema_class": "Reply", "grounded_on": []});
        e["payload_schema"] = json!("0".repeat(64));
        assert_eq!(
            conditional_errors(&e),
            ["grounding_mode=retrieval and succeeded requires non-empty grounded_on"]
        );
    }

    #[test]
    fn delegation_evidence_must_be_the_input_or_a_recorded_delegation() {
        let child = "0190b3c2-6a4e-7c3b-8a1d-6f0e2d3c4b5a";
        let mut e = envelope("succeeded");
        e["grounding_mode"] = json!("delegation");
        e["payload"] = json!({"schema_class": "Reply", "grounded_on": []});
        e["payload_schema"] = json!("0".repeat(64));
        e["delegations"] = json!([{"delegated_invocation_id": child, "content_hash": "h1"}]);
        e["evidence"] = json!([
            {"source_id": "input:x", "canonicalisation": "dd-input-json-v1", "content_hash": "0"},
            {"source_id": format!("invocation:{child}"), "canonicalisation": "dd-envelope-json-v1", "content_hash": "h1"},
        ]);
        assert!(conditional_errors(&e).is_empty());
        e["evidence"][1]["content_hash"] = json!("h2");
        assert_eq!(
            conditional_errors(&e),
            [format!(
                "grounding_mode=delegation: evidence 'invocation:{child}' is neither the input nor a recorded \
                 delegation (dd-envelope-json-v1)"
            )]
        );
    }

    #[test]
    fn payload_without_grounded_on_or_schema_class_is_rejected() {
        let mut e = envelope("succeeded");
        e["payload"] = json!({});
        e["payload_schema"] = json!("0".repeat(64));
        let errors = conditional_errors(&e);
        assert!(errors.contains(&"payload lacks schema_class".to_string()));
        assert!(errors.contains(
            &"payload lacks grounded_on: every payload class mixes in Grounded".to_string()
        ));
    }
}
