//! Evidence and grounding: what a payload rests on, and how to check it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One thing an envelope rests on, with the hash of its canonical projection. Closed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceItem {
    /// What is cited: `input:<id>`, `invocation:<id>`, or a source's own id.
    pub source_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Where the source can be read, if it has an address.
    pub source_uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// When it was retrieved, RFC 3339.
    pub retrieved_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A reference to the snapshot that was read, if one was kept.
    pub snapshot_ref: Option<String>,
    #[serde(default = "default_hash_algorithm")]
    /// Always `sha256`.
    pub hash_algorithm: String,
    /// A registered canonicalisation name. Kept as text: an unknown name is a contract
    /// violation the validator reports, not a parse failure that hides the rest.
    pub canonicalisation: String,
    /// SHA-256, as 64 lowercase hex digits, of the canonical bytes.
    pub content_hash: String,
    /// The projection that was hashed, so a reader can re-hash it (linter rule E1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

fn default_hash_algorithm() -> String {
    super::canonical::HASH_ALGORITHM.to_string()
}

impl EvidenceItem {
    /// Evidence citing the invocation's own input (`input:<id>`, `dd-input-json-v1`): what an
    /// `input_only`, `none` or `delegation` agent cites.
    pub fn input(invocation_id: &str, input_hash: &str) -> EvidenceItem {
        EvidenceItem::citing_input(&super::input_source_id(invocation_id), input_hash)
    }

    /// Evidence citing an input by its source id (`input:<id>`) and hash, as a run context
    /// gives them.
    pub(crate) fn citing_input(input_ref: &str, input_hash: &str) -> EvidenceItem {
        EvidenceItem {
            source_id: input_ref.to_string(),
            source_uri: None,
            retrieved_at: None,
            snapshot_ref: None,
            hash_algorithm: default_hash_algorithm(),
            canonicalisation: super::Canonicalisation::InputDocument.name().to_string(),
            content_hash: input_hash.to_string(),
            content: None,
        }
    }
}

/// The identity and content hash of one thing a payload rests on. Closed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GroundingRef {
    /// The cited evidence's `source_id`.
    pub(crate) source_id: String,
    /// Its `content_hash`: the reference holds only if the two agree.
    pub(crate) content_hash: String,
}

/// A payload: an open document that names its class and what it rests on.
///
/// Held as the document it is (the harness knows an agent's classes only by the schemas on
/// its card); `schema_class` and `grounded_on` are read from it on demand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Payload(pub Map<String, Value>);
