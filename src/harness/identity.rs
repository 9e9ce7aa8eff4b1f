//! Who an invocation acts for: always from the caller's credentials (a bearer token) or the
//! operator's configuration, never from the A2A message or the AG-UI body.
//!
//! Whom a run acts for is never read from the A2A message or the AG-UI body (the contract
//! refuses a request carrying `acting_for`); it comes from the caller's credentials. Two
//! authenticators exist:
//!
//! - [`Authenticator::Operator`]: the operator names one principal in configuration and every
//!   invocation acts for them with `assurance: asserted`, whoever calls;
//! - [`Authenticator::Bearer`]: each caller presents `Authorization: Bearer <token>`; the
//!   harness holds only SHA-256 digests of tokens, each mapped to a principal, and compares
//!   digests in constant time. An unauthenticated caller is refused (in the task, not with
//!   HTTP 401, as the spec says).
//!
//! What a caller may read follows the same credentials (`Authenticator::access_for`): with
//! bearer tokens, a principal reads its own runs (delegated children run under the grant's
//! principal, so they are its own too), and a token whose entry says `"role": "auditor"` or
//! `"role": "steward"` reads every run; only a steward may decide a referred run (see
//! `approval`). An operator-mode harness answers every reader, as before.

pub(crate) use crate::contract::tokens::Token;
pub(crate) use crate::contract::tokens::new_token;
pub(crate) use crate::contract::tokens::{Role, token_digest};
use crate::contract::tokens::{find_token, read_tokens_file};
use crate::contract::{Principal, PrincipalKind};
use crate::harness::{HarnessError, Result};
use serde_json::Value;
use std::path::Path;

/// How the harness learns whom a caller acts for.
#[derive(Clone, Debug)]
pub enum Authenticator {
    /// One configured principal for every caller.
    Operator(Principal),
    /// Bearer tokens, each known by its SHA-256 digest.
    Bearer(Vec<Token>),
}

/// Which stored runs a reader may see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Every run: an operator-mode harness's reader, or an auditor.
    All,
    /// Only runs acting for this `principal_id` (compared exactly).
    Own(String),
}

impl Access {
    /// Whether a run acting for `principal_id` (`None`: unknown) is visible.
    pub(crate) fn sees(&self, principal_id: Option<&str>) -> bool {
        match self {
            Access::All => true,
            Access::Own(mine) => principal_id == Some(mine.as_str()),
        }
    }

    /// Whether a stored envelope (or index row) is visible: its `acting_for.principal_id`.
    pub(crate) fn sees_envelope(&self, envelope: &Value) -> bool {
        self.sees(
            envelope
                .pointer("/acting_for/principal_id")
                .and_then(Value::as_str),
        )
    }
}

impl Authenticator {
    /// The principal a caller acts for, from its HTTP header fields (`None`: no HTTP request,
    /// as for the CLI).
    pub(crate) fn principal_for(&self, headers: Option<&[(String, String)]>) -> Result<Principal> {
        match self {
            Authenticator::Operator(p) => Ok(p.clone()),
            Authenticator::Bearer(_) => self.token_for(headers).map(|t| t.principal.clone()),
        }
    }

    /// Which runs a caller may read: every run in operator mode; with bearer tokens, its own
    /// (or every run, for an auditor), and an error for a caller without a known token.
    pub(crate) fn access_for(&self, headers: Option<&[(String, String)]>) -> Result<Access> {
        match self {
            Authenticator::Operator(_) => Ok(Access::All),
            Authenticator::Bearer(_) => {
                let token = self.token_for(headers)?;
                Ok(match token.role {
                    // A steward judges other principals' referred runs, so reads them all.
                    Role::Auditor | Role::Steward => Access::All,
                    Role::Principal | Role::Admin => {
                        Access::Own(token.principal.principal_id.clone())
                    }
                })
            }
        }
    }

    /// The token entry a caller's `Authorization` header presents (bearer mode only).
    pub(crate) fn token_for(&self, headers: Option<&[(String, String)]>) -> Result<&Token> {
        match self {
            Authenticator::Operator(_) => Err(HarnessError::unauthenticated(
                "unauthenticated: this harness takes no bearer tokens",
            )),
            Authenticator::Bearer(tokens) => Ok(find_token(
                tokens,
                headers.and_then(|h| crate::wire::http::header(h, "authorization")),
            )?),
        }
    }

    /// Whether callers must present credentials.
    pub(crate) fn requires_credentials(&self) -> bool {
        matches!(self, Authenticator::Bearer(_))
    }

    /// Read a tokens file (see [`read_tokens_file`]): bearer mode over its entries. An
    /// `admin` entry (a relay's role) reads its own runs here.
    pub(crate) fn bearer_from_file(path: &Path) -> Result<Authenticator> {
        Ok(Authenticator::Bearer(read_tokens_file(path)?))
    }
}

/// The operator's principal from `DD_PRINCIPAL_ID`, `DD_PRINCIPAL_NAME`, `DD_PRINCIPAL_KIND`,
/// with command-line values taking precedence. Missing values stop start-up with the
/// reference's message: every invocation acts for a named human.
pub(crate) fn configured_principal(
    id_flag: Option<&str>,
    name_flag: Option<&str>,
    kind_flag: Option<&str>,
) -> Result<Principal> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let id = id_flag
        .map(str::to_string)
        .or_else(|| env("DD_PRINCIPAL_ID"));
    let name = name_flag
        .map(str::to_string)
        .or_else(|| env("DD_PRINCIPAL_NAME"));
    let kind = kind_flag
        .map(str::to_string)
        .or_else(|| env("DD_PRINCIPAL_KIND"))
        .unwrap_or_else(|| "person".into());
    let unset: Vec<&str> = [("DD_PRINCIPAL_ID", &id), ("DD_PRINCIPAL_NAME", &name)]
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(k, _)| *k)
        .collect();
    if !unset.is_empty() {
        return Err(HarnessError::config(
            unset.join(" and "),
            format!(
                "{} unset: every invocation acts for a named human, and nothing runs without one; set \
                 them, or pass --acting-for-id and --acting-for-name (serve also takes --tokens FILE, \
                 which names each caller by bearer token)",
                unset.join(" and ")
            ),
        ));
    }
    let kind = PrincipalKind::parse(&kind).ok_or_else(|| {
        HarnessError::config(
            "DD_PRINCIPAL_KIND",
            format!(
                "the configured principal is malformed: principal_kind {kind:?} is not person or accountable_role"
            ),
        )
    })?;
    Principal::new(&id.unwrap_or_default(), &name.unwrap_or_default(), kind).map_err(|e| {
        HarnessError::config(
            "the configured principal",
            format!("the configured principal is malformed: {e}"),
        )
    })
}

/// The principal `ddwire demo` acts for, named so no record mistakes it for a person.
pub fn demo_principal() -> Principal {
    Principal::new(
        "urn:ddwire:demo:operator",
        "ddwire demo operator (not a person)",
        PrincipalKind::AccountableRole,
    )
    .expect("the demo principal is valid")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::canonical::sha256_hex;

    fn carberry() -> Principal {
        Principal::new(
            "https://orcid.org/0000-0002-1825-0097",
            "Josiah Carberry",
            PrincipalKind::Person,
        )
        .unwrap()
    }

    #[test]
    fn the_operator_assertion_names_the_configured_principal_whoever_calls() {
        let auth = Authenticator::Operator(carberry());
        let headers = vec![(
            "authorization".to_string(),
            "Bearer someone-else".to_string(),
        )];
        assert_eq!(auth.principal_for(Some(&headers)).unwrap(), carberry());
        assert_eq!(auth.principal_for(None).unwrap(), carberry());
    }

    #[test]
    fn a_bearer_token_names_its_principal_and_anything_else_is_unauthenticated() {
        let auth = Authenticator::Bearer(vec![Token::new(sha256_hex(b"s3cret"), carberry())]);
        let with = |v: &str| vec![("Authorization".to_string(), v.to_string())];
        assert_eq!(
            auth.principal_for(Some(&with("Bearer s3cret"))).unwrap(),
            carberry()
        );
        for bad in ["Bearer nope", "Basic s3cret", "Bearer "] {
            let err = auth.principal_for(Some(&with(bad))).unwrap_err();
            assert!(
                err.to_string().starts_with("unauthenticated"),
                "{bad}: {err}"
            );
        }
        assert!(auth.principal_for(None).is_err());
    }

    #[test]
    fn the_bearer_scheme_name_is_case_insensitive() {
        let auth = Authenticator::Bearer(vec![Token::new(sha256_hex(b"s3cret"), carberry())]);
        let with = |v: &str| vec![("authorization".to_string(), v.to_string())];
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            let header = format!("{scheme} s3cret");
            assert_eq!(
                auth.principal_for(Some(&with(&header))).unwrap(),
                carberry(),
                "{header}"
            );
        }
        // The token itself is compared exactly.
        assert!(auth.principal_for(Some(&with("Bearer S3CRET"))).is_err());
        for bad in [
            "Bearers s3cret",
            "Bear s3cret",
            "s3cret",
            "Bearer",
            "Bearer  ",
            "Bearé s3cret",
        ] {
            assert!(auth.principal_for(Some(&with(bad))).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_malformed_principal_is_a_configuration_error() {
        let err = configured_principal(Some("0000-0002-1825-0097"), Some("J"), None).unwrap_err();
        assert!(
            err.to_string()
                .contains("the configured principal is malformed"),
            "{err}"
        );
        let err = configured_principal(Some("https://orcid.org/x"), Some("   "), None).unwrap_err();
        assert!(err.to_string().contains("malformed"), "{err}");
    }

    #[test]
    fn the_cli_flags_replace_the_environment() {
        let p = configured_principal(
            Some("https://orcid.org/0000-0002-1825-0097"),
            Some("Josiah Carberry"),
            Some("person"),
        )
        .unwrap();
        assert_eq!(p, carberry());
    }
}
