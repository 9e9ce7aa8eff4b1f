//! Bearer tokens and the tokens file: who a caller is, from `Authorization: Bearer <token>`
//! (RFC 6750 §2.1), for every ddwire server that authenticates its callers (the harness's
//! `serve --tokens`, the relay's `relay --tokens`). A tokens file holds SHA-256 digests of
//! tokens, never tokens, each mapped to the principal it stands for and a role; a presented
//! token is hashed and compared with every digest in constant time.
//!
//! The roles are the union of what each server grants: `principal` (the default: act, and
//! read one's own runs), `auditor` (the harness: read every run), `steward` (the harness: read
//! every run, and approve or decline a run the profile referred for approval), `admin` (the
//! relay: change its peers). A server treats a role it does not know as `principal`.

use crate::contract::Principal;
use crate::contract::canonical::sha256_hex;
use crate::json::JsonError;
use serde_json::Value;
use std::fmt;
use std::path::Path;

/// One entry of a tokens file: whom a token stands for, and what it may do besides acting.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// SHA-256 of the token, 64 lowercase hex digits ([`token_digest`]).
    pub(crate) digest: String,
    /// The principal a caller presenting the token acts for.
    pub(crate) principal: Principal,
    /// What the token may do besides acting for its principal.
    pub(crate) role: Role,
}

impl Token {
    /// A token with no role beyond its own runs.
    #[cfg(test)]
    pub(crate) fn new(digest: impl Into<String>, principal: Principal) -> Token {
        Token {
            digest: digest.into(),
            principal,
            role: Role::Principal,
        }
    }
}

/// What a token may do besides acting for its principal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Its principal's own runs (and the runs delegated on its behalf).
    Principal,
    /// Read every run of a harness (`"role": "auditor"`).
    Auditor,
    /// Change a relay's peers, `POST` and `DELETE /peers` (`"role": "admin"`).
    Admin,
    /// Read every run of a harness, and approve or decline the runs its profile referred to
    /// a data steward (`"role": "steward"`).
    Steward,
}

/// Read a tokens file: a JSON object mapping each token's SHA-256 hex digest to its entry,
/// `{"principal_id", "name", "principal_kind"?, "role"?}` (`role`: `"auditor"`, `"steward"`,
/// `"admin"` or `"principal"`). A file of another shape is refused with the field that is wrong and the
/// shape expected.
pub(crate) fn read_tokens_file(file: &Path) -> Result<Vec<Token>, TokenError> {
    let path = file.display().to_string();
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(source) => return Err(TokenError::Unreadable { path, source }),
    };
    let doc = match crate::json::parse(&bytes, crate::json::Limits::DEFAULT) {
        Ok(doc) => doc,
        Err(source) => return Err(TokenError::Json { path, source }),
    };
    let shape = |reason: String| TokenError::Shape {
        path: path.clone(),
        reason,
    };
    let Value::Object(map) = doc else {
        return Err(shape(format!(
            "the top level is {}; expected {TOKENS_SHAPE}",
            kind_of(&doc)
        )));
    };
    let mut tokens = Vec::new();
    for (digest, entry) in map {
        if !crate::contract::formats::is_sha256_hex(&digest) {
            return Err(shape(format!(
                "key {digest:?} is not a SHA-256 hex digest (store digests, never tokens); expected {TOKENS_SHAPE}"
            )));
        }
        let wrong = |field: &str, what: String| {
            shape(format!(
                "entry {digest}: {field} {what}; expected {TOKENS_SHAPE} (see `ddwire token --help`)"
            ))
        };
        let Value::Object(mut fields) = entry else {
            return Err(wrong("the entry", format!("is {}", kind_of(&entry))));
        };
        let role = match fields.remove("role") {
            None => Role::Principal,
            Some(Value::String(r)) if r == "auditor" => Role::Auditor,
            Some(Value::String(r)) if r == "admin" => Role::Admin,
            Some(Value::String(r)) if r == "steward" => Role::Steward,
            Some(Value::String(r)) if r == "principal" => Role::Principal,
            Some(other) => {
                return Err(wrong(
                    "\"role\"",
                    format!("is {other}, not \"auditor\", \"steward\", \"admin\" or \"principal\""),
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
        let p = <Principal as serde::Deserialize>::deserialize(&Value::Object(fields))
            .map_err(|e| wrong("the principal", format!("is malformed: {e}")))?;
        let problems = p.problems();
        if !problems.is_empty() {
            return Err(TokenError::Principal { path, problems });
        }
        tokens.push(Token {
            digest,
            principal: p,
            role,
        });
    }
    Ok(tokens)
}

/// The entry of `tokens` whose token an `Authorization` field's value presents, or why the
/// caller is unauthenticated. Every entry is compared, whatever matches, so timing says
/// nothing about the tokens.
pub(crate) fn find_token<'t>(
    tokens: &'t [Token],
    authorization: Option<&str>,
) -> Result<&'t Token, TokenError> {
    let presented = authorization
        .and_then(bearer_token)
        .ok_or(TokenError::MissingBearer)?;
    let digest = sha256_hex(presented.as_bytes());
    let mut found = None;
    for token in tokens {
        if crate::ids::constant_time_eq(token.digest.as_bytes(), digest.as_bytes()) {
            found = Some(token);
        }
    }
    found.ok_or(TokenError::UnknownToken)
}

/// Why a tokens file cannot be used, or why a caller's credentials name no token in it.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum TokenError {
    /// The tokens file could not be read.
    Unreadable {
        /// The file, as given.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The tokens file is not JSON.
    Json {
        /// The file, as given.
        path: String,
        /// What the JSON parser refused.
        source: JsonError,
    },
    /// The tokens file is JSON of another shape.
    Shape {
        /// The file, as given.
        path: String,
        /// Which part is wrong (the top level, a key, an entry's field) and the shape expected.
        reason: String,
    },
    /// An entry's principal breaks the contract's rules.
    Principal {
        /// The file, as given.
        path: String,
        /// Each problem found.
        problems: Vec<String>,
    },
    /// The request carries no `Authorization: Bearer` field (RFC 6750 §2.1).
    MissingBearer,
    /// The bearer token presented is not one the tokens file holds.
    UnknownToken,
    /// The operating system's random number generator failed, so no token could be minted.
    NoRandomness {
        /// The generator's error.
        reason: String,
    },
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::Unreadable { path, source } => {
                write!(f, "cannot read tokens file {path}: {source}")
            }
            TokenError::Json { path, source } => write!(f, "tokens file {path}: {source}"),
            TokenError::Shape { path, reason } => write!(f, "tokens file {path}: {reason}"),
            TokenError::Principal { problems, .. } => write!(
                f,
                "the configured principal is malformed: {}",
                problems.join("; ")
            ),
            TokenError::MissingBearer => {
                f.write_str("unauthenticated: send Authorization: Bearer <token>")
            }
            TokenError::UnknownToken => {
                f.write_str("unauthenticated: the bearer token is not known")
            }
            TokenError::NoRandomness { reason } => write!(f, "no randomness: {reason}"),
        }
    }
}

impl std::error::Error for TokenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TokenError::Unreadable { source, .. } => Some(source),
            TokenError::Json { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The shape of a tokens file, for its errors.
const TOKENS_SHAPE: &str = "{\"<sha256 hex of a token>\": {\"principal_id\": \"<IRI>\", \"name\": \"<name>\", \"principal_kind\": \"person\"|\"accountable_role\", \"role\": \"auditor\"|\"steward\"|\"admin\" (optional)}, ...}";

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

/// A fresh bearer token: 32 bytes from the operating system's generator in URL-safe base64
/// without padding (RFC 4648 §5; 43 characters), as Python's `secrets.token_urlsafe(32)`.
/// `ddwire token new` prints one for a tokens file; a delegation grant is one.
pub(crate) fn new_token() -> Result<String, TokenError> {
    let mut bytes = [0u8; 32];
    crate::ids::try_secret_bytes(&mut bytes).map_err(|e| TokenError::NoRandomness {
        reason: e.to_string(),
    })?;
    Ok(crate::text::base64(&bytes, crate::text::Base64::UrlSafe))
}

/// What a tokens file keys a principal by: the SHA-256 of the token, as 64 lowercase hex
/// digits. A tokens file holds digests, never tokens.
pub(crate) fn token_digest(token: &str) -> String {
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
