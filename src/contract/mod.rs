//! The contract: the documents that cross the wire, and their rules.
//!
//! Field names, values and messages follow the reference implementation's contract 0.7.0
//! (`sdk/src/dd_sdk/contract` in `data-director-agent/data-director`). This layer knows no
//! transport and no trace machinery: it is plain data, the hashes over it, and the checks.
//!
//! - [`InvocationRequest`] goes in; an agent answers with an [`AgentResult`]; the harness
//!   answers with an [`Envelope`].
//! - `canonical` computes content hashes byte-identical to the reference's Python.
//! - `validate` holds the envelope's conditional rules with the reference's messages.

pub(crate) mod canonical;
pub mod classes;
mod envelope;
mod error;
mod evidence;
pub(crate) mod formats;
mod outcome;
pub(crate) mod pattern;
mod principal;
pub(crate) mod problem;
pub(crate) mod request;
mod result;
pub(crate) mod schema;
pub(crate) mod spec;
pub mod tokens;
pub(crate) mod validate;

pub(crate) use canonical::schema_digest;
pub use canonical::{Canonicalisation, content_hash, envelope_hash, input_hash};
pub use envelope::Envelope;
pub(crate) use envelope::{Delegation, Telemetry};
pub use error::ContractError;
pub(crate) use evidence::GroundingRef;
pub use evidence::{EvidenceItem, Payload};
pub use outcome::{Derivation, GroundingMode, Outcome, OutcomeStatus, ReasonCode};
pub use pattern::PatternError;
#[cfg(test)]
pub(crate) use principal::Assurance;
pub use principal::Principal;
pub(crate) use principal::PrincipalKind;
pub(crate) use problem::ProblemDetails;
#[cfg(test)]
pub(crate) use problem::ProblemType;
pub use request::Input;
pub use request::InvocationRequest;
pub use result::AgentResult;
pub use schema::SchemaError;
pub use spec::ClassSchema;
pub use spec::{AgentSpec, Derived};
pub use validate::validate_envelope;

/// The contract version this crate implements (the `version` of the reference's
/// generated envelope schema).
pub const CONTRACT_VERSION: &str = "0.7.0";

/// The `source_id` that cites an invocation's input: `input:<invocation_id>`.
pub(crate) fn input_source_id(invocation_id: &str) -> String {
    format!("input:{invocation_id}")
}

/// The `source_id` that cites a delegated child's envelope: `invocation:<invocation_id>`.
pub(crate) fn invocation_source_id(invocation_id: &str) -> String {
    format!("invocation:{invocation_id}")
}

/// The caret rule: an agent built against contract `declared` can be governed under
/// `current` when both are strict `X.Y.Z` with the same major version and, while the major
/// version is 0, the same minor version (the reference's `contract.version.compatible`).
pub(crate) fn contract_compatible(declared: &str, current: &str) -> bool {
    let (Some(theirs), Some(ours)) = (
        formats::parse_semver(declared),
        formats::parse_semver(current),
    ) else {
        return false;
    };
    theirs.0 == ours.0 && (ours.0 != 0 || theirs.1 == ours.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caret_rule_decides_which_contract_versions_are_compatible() {
        assert!(contract_compatible("0.6.0", "0.6.0"));
        assert!(contract_compatible("0.6.3", "0.6.0"));
        assert!(!contract_compatible("0.5.9", "0.6.0"));
        assert!(!contract_compatible("0.7.0", "0.6.0"));
        assert!(contract_compatible("1.4.0", "1.2.0"));
        assert!(!contract_compatible("2.0.0", "1.2.0"));
        assert!(!contract_compatible("0.6", "0.6.0"));
    }
}
