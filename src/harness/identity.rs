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
//! What a caller may read follows the same credentials ([`Authenticator::access_for`]): with
//! bearer tokens, a principal reads its own runs (delegated children run under the grant's
//! principal, so they are its own too), and a token whose entry says `"role": "auditor"`
//! reads every run. An operator-mode harness answers every reader, as before.

use crate::contract::canonical::sha256_hex;
use crate::contract::{Principal, PrincipalKind};
use crate::error::{Error, Result};
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

/// One entry of a tokens file: whom a token stands for, and what it may read.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// SHA-256 of the token, 64 lowercase hex digits ([`token_digest`]).
    pub digest: String,
    /// The principal a caller presenting the token acts for.
    pub principal: Principal,
    /// What the token may read besides acting.
    pub role: Role,
}

impl Token {
    /// A token with no role beyond its own runs.
    pub fn new(digest: impl Into<String>, principal: Principal) -> Token {
        Token {
            digest: digest.into(),
            principal,
            role: Role::Principal,
        }
    }
}

/// What a token may read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Its principal's own runs (and the runs delegated on its behalf).
    Principal,
    /// Every run (`"role": "auditor"` in the tokens file).
    Auditor,
}

/// Which stored runs a reader may see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Every run: an operator-mode harness's reader, or an auditor.
    All,
    /// Only runs acting for this `principal_id` (compared exactly).
    Own(String),
}

impl Access {
    /// Whether a run acting for `principal_id` (`None`: unknown) is visible.
    pub fn sees(&self, principal_id: Option<&str>) -> bool {
        match self {
            Access::All => true,
            Access::Own(mine) => principal_id == Some(mine.as_str()),
        }
    }

    /// Whether a stored envelope (or index row) is visible: its `acting_for.principal_id`.
    pub fn sees_envelope(&self, envelope: &Value) -> bool {
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
    pub fn principal_for(&self, headers: Option<&[(String, String)]>) -> Result<Principal> {
        match self {
            Authenticator::Operator(p) => Ok(p.clone()),
            Authenticator::Bearer(_) => self.token_for(headers).map(|t| t.principal.clone()),
        }
    }

    /// Which runs a caller may read: every run in operator mode; with bearer tokens, its own
    /// (or every run, for an auditor), and an error for a caller without a known token.
    pub fn access_for(&self, headers: Option<&[(String, String)]>) -> Result<Access> {
        match self {
            Authenticator::Operator(_) => Ok(Access::All),
            Authenticator::Bearer(_) => {
                let token = self.token_for(headers)?;
                Ok(match token.role {
                    Role::Auditor => Access::All,
                    Role::Principal => Access::Own(token.principal.principal_id.clone()),
                })
            }
        }
    }

    /// The token entry a caller's `Authorization` header presents (bearer mode only).
    fn token_for(&self, headers: Option<&[(String, String)]>) -> Result<&Token> {
        match self {
            Authenticator::Operator(_) => Err(Error::unauthenticated(
                "unauthenticated: this harness takes no bearer tokens",
            )),
            Authenticator::Bearer(tokens) => {
                let presented = headers
                    .and_then(|h| {
                        h.iter()
                            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                    })
                    .and_then(|(_, v)| bearer_token(v))
                    .ok_or_else(|| {
                        Error::unauthenticated(
                            "unauthenticated: send Authorization: Bearer <token>",
                        )
                    })?;
                let digest = sha256_hex(presented.as_bytes());
                // Look at every entry whatever matches, so timing says nothing about the tokens.
                let mut found = None;
                for token in tokens {
                    if constant_time_eq(token.digest.as_bytes(), digest.as_bytes()) {
                        found = Some(token);
                    }
                }
                found.ok_or_else(|| {
                    Error::unauthenticated("unauthenticated: the bearer token is not known")
                })
            }
        }
    }

    /// Whether callers must present credentials.
    pub fn requires_credentials(&self) -> bool {
        matches!(self, Authenticator::Bearer(_))
    }

    /// Read a tokens file: a JSON object mapping each token's SHA-256 hex digest to its entry,
    /// `{"principal_id", "name", "principal_kind"?, "role"?}` (`role`: `"auditor"` to read
    /// every run). A file of another shape is refused with the field that is wrong and the
    /// shape expected.
    pub fn bearer_from_file(path: &Path) -> Result<Authenticator> {
        let source = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| {
            Error::config(&source, format!("cannot read tokens file {source}: {e}"))
        })?;
        let doc = crate::json::parse(&bytes, crate::json::Limits::DEFAULT)
            .map_err(|e| Error::config(&source, format!("tokens file {source}: {e}")))?;
        let Value::Object(map) = doc else {
            return Err(Error::config(
                &source,
                format!(
                    "tokens file {source}: the top level is {}; expected {TOKENS_SHAPE}",
                    kind_of(&doc)
                ),
            ));
        };
        let mut tokens = Vec::new();
        for (digest, entry) in map {
            if !crate::contract::formats::is_sha256_hex(&digest) {
                return Err(Error::config(
                    &source,
                    format!(
                        "tokens file {source}: key {digest:?} is not a SHA-256 hex digest (store digests, never tokens); expected {TOKENS_SHAPE}"
                    ),
                ));
            }
            let wrong = |field: &str, what: String| {
                Error::config(
                    &source,
                    format!(
                        "tokens file {source}: entry {digest}: {field} {what}; expected {TOKENS_SHAPE} (see `ddwire token --help`)"
                    ),
                )
            };
            let Value::Object(mut fields) = entry else {
                return Err(wrong("the entry", format!("is {}", kind_of(&entry))));
            };
            let role = match fields.remove("role") {
                None => Role::Principal,
                Some(Value::String(r)) if r == "auditor" => Role::Auditor,
                Some(Value::String(r)) if r == "principal" => Role::Principal,
                Some(other) => {
                    return Err(wrong(
                        "\"role\"",
                        format!("is {other}, not \"auditor\" or \"principal\""),
                    ));
                }
            };
            for field in ["principal_id", "name"] {
                match fields.get(field) {
                    Some(Value::String(_)) => {}
                    Some(other) => {
                        return Err(wrong(
                            &format!("{field:?}"),
                            format!("is {}, not a string", kind_of(other)),
                        ));
                    }
                    None => return Err(wrong(&format!("{field:?}"), "is missing".into())),
                }
            }
            if let Some(unknown) = fields.keys().find(|k| {
                !["principal_id", "name", "principal_kind", "assurance"].contains(&k.as_str())
            }) {
                return Err(wrong(
                    &format!("{unknown:?}"),
                    "is not a known field".into(),
                ));
            }
            let p: Principal = serde_json::from_value(Value::Object(fields))
                .map_err(|e| wrong("the principal", format!("is malformed: {e}")))?;
            let problems = p.problems();
            if !problems.is_empty() {
                return Err(Error::config(
                    &source,
                    format!(
                        "the configured principal is malformed: {}",
                        problems.join("; ")
                    ),
                ));
            }
            tokens.push(Token {
                digest,
                principal: p,
                role,
            });
        }
        Ok(Authenticator::Bearer(tokens))
    }
}

/// The shape of a tokens file, for its errors.
const TOKENS_SHAPE: &str = "{\"<sha256 hex of a token>\": {\"principal_id\": \"<IRI>\", \"name\": \"<name>\", \"principal_kind\": \"person\"|\"accountable_role\", \"role\": \"auditor\" (optional)}, ...}";

/// What kind of JSON value `v` is, for an error message.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What a tokens file keys a principal by: the SHA-256 of the token, as 64 lowercase hex
/// digits. A tokens file holds digests, never tokens.
pub fn token_digest(token: &str) -> String {
    sha256_hex(token.as_bytes())
}

/// The token of an `Authorization: Bearer <token>` value (RFC 6750 §2.1), or `None`. The
/// scheme name is matched case-insensitively (RFC 9110 §11.1), and the token is read as bytes:
/// whatever precedes the first space is the scheme, whatever follows it (trimmed) the token.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The operator's principal from `DD_PRINCIPAL_ID`, `DD_PRINCIPAL_NAME`, `DD_PRINCIPAL_KIND`,
/// with command-line values taking precedence. Missing values stop start-up with the
/// reference's message: every invocation acts for a named human.
pub fn configured_principal(
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
        return Err(Error::config(
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
        Error::config(
            "DD_PRINCIPAL_KIND",
            format!(
                "the configured principal is malformed: principal_kind {kind:?} is not person or accountable_role"
            ),
        )
    })?;
    Principal::new(&id.unwrap_or_default(), &name.unwrap_or_default(), kind).map_err(|e| {
        Error::config(
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
