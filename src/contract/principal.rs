//! Principals: the human (or accountable role) an invocation acts for.

use super::formats::{has_non_space, is_iri};
use serde::{Deserialize, Serialize};

/// Whom an invocation acted for. Named by the caller's credentials, never by a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Principal {
    /// An absolute IRI, e.g. an ORCID.
    pub(crate) principal_id: String,
    /// The principal's name as a person reads it; not blank.
    pub(crate) name: String,
    #[serde(default)]
    /// A person or an accountable role.
    pub(crate) principal_kind: PrincipalKind,
    #[serde(default)]
    /// How the principal was established.
    pub(crate) assurance: Assurance,
}

/// A person, or a role that is accountable as one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PrincipalKind {
    #[default]
    /// A natural person.
    Person,
    /// A role accountable as a person would be (a data steward).
    AccountableRole,
}

/// How the principal was established. Only operator assertion exists today.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Assurance {
    #[default]
    /// The operator asserted it (configuration or a bearer token).
    Asserted,
}

impl PrincipalKind {
    /// The kind the contract spells `s`.
    pub(crate) fn parse(s: &str) -> Option<PrincipalKind> {
        match s {
            "person" => Some(PrincipalKind::Person),
            "accountable_role" => Some(PrincipalKind::AccountableRole),
            _ => None,
        }
    }
}

impl Principal {
    /// A principal with the default kind (`person`) and assurance (`asserted`), checked.
    pub(crate) fn new(
        principal_id: &str,
        name: &str,
        kind: PrincipalKind,
    ) -> Result<Principal, super::ContractError> {
        let p = Principal {
            principal_id: principal_id.to_string(),
            name: name.to_string(),
            principal_kind: kind,
            assurance: Assurance::Asserted,
        };
        let problems = p.problems();
        if problems.is_empty() {
            Ok(p)
        } else {
            Err(super::ContractError::Principal { problems })
        }
    }

    /// What is wrong with this principal, if anything (the model's field patterns).
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !is_iri(&self.principal_id) {
            out.push(format!(
                "principal_id {} is not an absolute IRI (scheme:rest, no spaces)",
                crate::json::python::str_repr(&self.principal_id)
            ));
        }
        if !has_non_space(&self.name) {
            out.push("name must not be empty".to_string());
        }
        out
    }
}
