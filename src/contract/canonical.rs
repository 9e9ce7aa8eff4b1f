//! Canonical JSON and content hashes (the reference's `dd_sdk.evidence`).
//!
//! A content hash is `sha256(canonical bytes)` as 64 lowercase hex digits, where the canonical
//! bytes are the *projection* of a document written as Python writes
//! `json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` in UTF-8.
//! That is Python's `json`, not RFC 8785: floats print as `float.__repr__` (`1.0`, `1e+16`),
//! integers keep every digit, non-ASCII stays raw. See [`crate::json::python`].
//!
//! Which projection applies is named by a registered [`Canonicalisation`]; an unknown name is
//! an error, never a silent default.

use super::ContractError;
use crate::json::python::{self, Style};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::fmt;

/// The hash algorithm every evidence item names.
pub(crate) const HASH_ALGORITHM: &str = "sha256";

/// A registered canonicalisation: a name and the projection it hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Canonicalisation {
    /// `json-sorted-utf8-v1`: a FAIRsharing record projected to `FAIRSHARING_FIELDS`, each
    /// list turned into a sorted list of strings, a missing key written as `null`.
    FairsharingRecord,
    /// `dd-input-json-v1`: an invocation's whole input document; lists in document order.
    InputDocument,
    /// `dd-json-document-v1`: a whole retrieved record, unprojected. Also the digest of a
    /// class schema.
    JsonDocument,
    /// `dd-envelope-json-v1`: a whole envelope document as stored (what a delegation agent
    /// cites for a child it relays).
    EnvelopeDocument,
}

/// The fields `json-sorted-utf8-v1` keeps, in the reference's order.
pub(crate) const FAIRSHARING_FIELDS: [&str; 9] = [
    "fairsharing_id",
    "doi",
    "name",
    "abbreviation",
    "record_type",
    "status",
    "description",
    "subjects",
    "domains",
];

impl Canonicalisation {
    /// Every registered canonicalisation, sorted by name.
    pub(crate) const ALL: [Canonicalisation; 4] = [
        Canonicalisation::EnvelopeDocument,
        Canonicalisation::InputDocument,
        Canonicalisation::JsonDocument,
        Canonicalisation::FairsharingRecord,
    ];

    /// The registered name.
    pub fn name(self) -> &'static str {
        match self {
            Canonicalisation::FairsharingRecord => "json-sorted-utf8-v1",
            Canonicalisation::InputDocument => "dd-input-json-v1",
            Canonicalisation::JsonDocument => "dd-json-document-v1",
            Canonicalisation::EnvelopeDocument => "dd-envelope-json-v1",
        }
    }

    /// Look a name up; an unknown one is [`ContractError::UnknownCanonicalisation`] with the
    /// reference's message.
    pub(crate) fn from_name(name: &str) -> Result<Canonicalisation, ContractError> {
        Canonicalisation::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| ContractError::UnknownCanonicalisation {
                name: name.to_owned(),
                registered: Canonicalisation::ALL.iter().map(|c| c.name()).collect(),
            })
    }

    /// What this canonicalisation hashes of `document`: the value evidence `content` carries.
    /// Projecting a projection changes nothing.
    pub(crate) fn project(self, document: &Value) -> Result<Value, ContractError> {
        match self {
            Canonicalisation::FairsharingRecord => {
                let record = document.as_object().ok_or_else(|| {
                    ContractError::violation(
                        "EvidenceItem",
                        "json-sorted-utf8-v1 projects an object",
                    )
                })?;
                Ok(Value::Object(fairsharing_projection(record)))
            }
            _ => Ok(document.clone()),
        }
    }

    /// The canonical bytes of `document` under this canonicalisation.
    pub fn canonical_bytes(self, document: &Value) -> Result<Vec<u8>, ContractError> {
        let text = match self {
            Canonicalisation::FairsharingRecord => {
                python::dumps(&self.project(document)?, Style::CANONICAL)
            }
            // The whole document is the projection: written as it stands, not copied first
            // (every invocation hashes its input on the hot path).
            _ => python::dumps(document, Style::CANONICAL),
        };
        Ok(text.into_bytes())
    }

    /// `sha256(canonical bytes)` as 64 lowercase hex digits.
    pub fn content_hash(self, document: &Value) -> Result<String, ContractError> {
        Ok(sha256_hex(&self.canonical_bytes(document)?))
    }
}

impl fmt::Display for Canonicalisation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn fairsharing_projection(record: &Map<String, Value>) -> Map<String, Value> {
    FAIRSHARING_FIELDS
        .iter()
        .map(|&key| {
            let value = match record.get(key) {
                // sorted(str(v) for v in value): Python's str() of each member, then sort.
                Some(Value::Array(items)) => {
                    let mut labels: Vec<String> = items.iter().map(python::py_str).collect();
                    labels.sort();
                    Value::Array(labels.into_iter().map(Value::String).collect())
                }
                Some(v) => v.clone(),
                None => Value::Null,
            };
            (key.to_string(), value)
        })
        .collect()
}

/// SHA-256 of `bytes` as 64 lowercase hex digits.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    crate::ids::hex(&Sha256::digest(bytes))
}

/// The content hash of `document` under the canonicalisation named `name`.
pub fn content_hash(document: &Value, name: &str) -> Result<String, ContractError> {
    Canonicalisation::from_name(name)?.content_hash(document)
}

/// Whether evidence `content` hashes to `expected` under `name` (linter rule E1). An unknown
/// canonicalisation is an error, not a mismatch.
pub(crate) fn verify(content: &Value, name: &str, expected: &str) -> Result<bool, ContractError> {
    Ok(content_hash(content, name)? == expected)
}

/// The `dd-input-json-v1` hash of an invocation's input document (`dd.input_hash`).
pub fn input_hash(input: &Value) -> String {
    Canonicalisation::InputDocument
        .content_hash(input)
        .expect("the whole-document projection cannot fail")
}

/// [`input_hash`] of an input held as its object's members, without building a copy of it.
pub(crate) fn input_hash_of_members(members: &serde_json::Map<String, Value>) -> String {
    // Sized for a typical input, so that writing it does not grow the buffer.
    let mut text = String::with_capacity(256);
    python::write_object(&mut text, members, Style::CANONICAL, 0);
    sha256_hex(text.as_bytes())
}

/// The `dd-envelope-json-v1` hash of an envelope document (a delegation's `content_hash`).
pub fn envelope_hash(envelope: &Value) -> String {
    Canonicalisation::EnvelopeDocument
        .content_hash(envelope)
        .expect("the whole-document projection cannot fail")
}

/// The digest of a class schema (`dd-json-document-v1`), which cards and envelopes carry.
pub(crate) fn schema_digest(schema: &Value) -> String {
    Canonicalisation::JsonDocument
        .content_hash(schema)
        .expect("the whole-document projection cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn input_hash_is_stable_across_key_order_and_sensitive_to_list_order() {
        let a = crate::json::parse_str(
            r#"{"schema_class":"Message","message_text":"hi","history":[1,2]}"#,
        )
        .unwrap();
        let b = crate::json::parse_str(
            r#"{"history":[1,2],"message_text":"hi","schema_class":"Message"}"#,
        )
        .unwrap();
        let c = crate::json::parse_str(
            r#"{"history":[2,1],"message_text":"hi","schema_class":"Message"}"#,
        )
        .unwrap();
        assert_eq!(input_hash(&a), input_hash(&b));
        assert_ne!(input_hash(&a), input_hash(&c));
        assert_eq!(input_hash(&a).len(), 64);
    }

    #[test]
    fn an_input_hashed_from_its_members_hashes_as_the_whole_document() {
        let doc = crate::json::parse_str(
            r#"{"schema_class":"Echo","value":{"n":1.5,"text":"Grüße \u0001","list":[3,{"b":1,"a":2}]}}"#,
        )
        .unwrap();
        let members = doc.as_object().unwrap();
        assert_eq!(input_hash_of_members(members), input_hash(&doc));
        assert_eq!(
            Canonicalisation::JsonDocument.content_hash(&doc).unwrap(),
            input_hash(&doc)
        );
    }

    #[test]
    fn fairsharing_canonicalisation_is_order_independent_and_projected() {
        let a = json!({"name": "X", "subjects": ["b", "a"], "extra": 1});
        let b = json!({"subjects": ["a", "b"], "name": "X"});
        let c = Canonicalisation::FairsharingRecord;
        assert_eq!(c.content_hash(&a).unwrap(), c.content_hash(&b).unwrap());
        let projected = c.project(&a).unwrap();
        assert_eq!(projected["doi"], Value::Null);
        assert!(projected.get("extra").is_none());
        // Projecting a projection changes nothing.
        assert_eq!(c.project(&projected).unwrap(), projected);
    }

    #[test]
    fn unknown_canonicalisation_is_a_programmer_error() {
        let err = content_hash(&json!({}), "nope").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown canonicalisation 'nope'; registered: ['dd-envelope-json-v1', \
             'dd-input-json-v1', 'dd-json-document-v1', 'json-sorted-utf8-v1']"
        );
    }

    #[test]
    fn evidence_content_reproduces_its_hash_for_each_canonicalisation() {
        let record = json!({"fairsharing_id": "FAIRsharing.x", "name": "X", "subjects": ["z", 1]});
        for c in Canonicalisation::ALL {
            let content = c.project(&record).unwrap();
            let hash = c.content_hash(&record).unwrap();
            // What an envelope carries survives a JSON round trip and re-hashes the same.
            let round_trip: Value = serde_json::from_str(&content.to_string()).unwrap();
            assert!(verify(&round_trip, c.name(), &hash).unwrap(), "{c}");
        }
    }
}
