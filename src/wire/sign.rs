//! Signed calls between the harness and its agents: HMAC-SHA256 over a canonical string of the
//! request, carried in four header fields. The scheme is specified, with test vectors and a
//! Python implementation, in `vendor-notes/hmac-signing.md`; this module is its reference.
//!
//! Each agent shares one secret with the harness. The harness signs every JSON-RPC call it
//! makes to the agent (`Direction::ToAgent`); a delegation agent signs the calls it makes back
//! to the harness with the same secret (`Direction::ToHarness`). The receiver recomputes the
//! MAC, compares it in constant time, refuses a timestamp outside its replay window, and
//! remembers each nonce it accepted so the same request is never accepted twice.
//!
//! # The headers
//!
//! | header | value |
//! |---|---|
//! | `DD-Key-Id` | whose secret signed: the agent's `agent_id` |
//! | `DD-Timestamp` | when, in decimal Unix seconds (no sign, no leading zero) |
//! | `DD-Nonce` | 16 to 64 characters of `A–Z a–z 0–9 _ -`, new for every request |
//! | `DD-Signature` | `v1=` and the 64 lowercase hex digits of the HMAC-SHA256 tag |
//!
//! # The canonical string
//!
//! Eight lines joined by `\n` (LF), with no line break at the end. No field may contain a line
//! break (each has a grammar that excludes one), so one string names exactly one request:
//!
//! ```text
//! DD-HMAC-SHA256-V1              the scheme
//! to-agent                       the direction: to-agent or to-harness
//! hello.world                    DD-Key-Id
//! POST                           the method, upper case
//! /a2a                           the request target: path, and "?query" when there is one,
//!                                exactly as sent (not percent-decoded)
//! 1767225600                     DD-Timestamp
//! 5f1e0c4d3b2a19087f6e5d4c3b2a1908   DD-Nonce
//! e3b0c442…b855                  SHA-256 of the body bytes, 64 lowercase hex digits
//! ```
//!
//! The direction line keeps a call the harness signed from being replayed to the harness as a
//! callback, or the other way round. The key id line binds the signature to one agent.
//!
//! # Example
//!
//! A key is all a user of the library handles: the agent server verifies with it
//! ([`crate::agent::server::serve_signed`]) and the harness signs with it
//! ([`crate::harness::registry::RemoteAgent::with_key`]); the signer and the verifier are
//! theirs (the unit tests below sign, verify and replay against the published vectors).
//!
//! ```
//! use ddwire::wire::sign::{Key, KeyError};
//!
//! let key = Key::new("hello.world", b"a shared secret of at least 32 bytes!")?;
//! assert_eq!(key.id(), "hello.world");
//! let short = Key::new("hello.world", b"too short").unwrap_err();
//! assert!(matches!(short, KeyError::TooShort { len: 9, .. }));
//! # Ok::<(), KeyError>(())
//! ```

use super::hmac::{self, Hmac, TAG_LEN};
use crate::ids::hex;
use crate::text::Unpoison;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The first line of the canonical string, naming the scheme and its version.
pub(crate) const SCHEME: &str = "DD-HMAC-SHA256-V1";
/// Whose secret signed the request.
pub(crate) const KEY_ID_HEADER: &str = "DD-Key-Id";
/// When the request was signed, in Unix seconds.
pub(crate) const TIMESTAMP_HEADER: &str = "DD-Timestamp";
/// A value used for one request only.
pub(crate) const NONCE_HEADER: &str = "DD-Nonce";
/// `v1=` and the tag in lowercase hex.
pub(crate) const SIGNATURE_HEADER: &str = "DD-Signature";
/// Every header the scheme sends, in the order a signer sends them.
pub(crate) const HEADERS: [&str; 4] = [
    KEY_ID_HEADER,
    TIMESTAMP_HEADER,
    NONCE_HEADER,
    SIGNATURE_HEADER,
];

/// How far a request's timestamp may be from the verifier's clock, either way: 300 s.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(300);
/// How many nonces a verifier remembers by default: 65,536, about 3 MiB at most (each entry is
/// a 16-byte digest and an 8-byte timestamp, held in a hash set and a queue).
pub(crate) const DEFAULT_NONCE_CAPACITY: usize = 65_536;
/// The shortest secret accepted, in bytes: 32, the length of the tag (RFC 2104 §3).
pub(crate) const MIN_SECRET_LEN: usize = 32;
/// The longest secret accepted, in bytes.
pub(crate) const MAX_SECRET_LEN: usize = 1024;

const SIGNATURE_PREFIX: &str = "v1=";
const MAX_KEY_ID_LEN: usize = 256;
const MAX_TARGET_LEN: usize = 8192;
const MAX_METHOD_LEN: usize = 16;
const NONCE_LEN: std::ops::RangeInclusive<usize> = 16..=64;
const MAX_TIMESTAMP_DIGITS: usize = 12;

/// Which way a signed request travels; the canonical string names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// The harness calling an agent (`to-agent`).
    ToAgent,
    /// An agent calling the harness back, for a delegation (`to-harness`).
    ToHarness,
}

impl Direction {
    /// The canonical string's second line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Direction::ToAgent => "to-agent",
            Direction::ToHarness => "to-harness",
        }
    }
}

/// A shared secret and the key id it signs as. `Debug` never shows the secret.
#[derive(Clone)]
pub struct Key {
    id: String,
    secret: Arc<[u8]>,
}

impl Key {
    /// A key from its id and secret bytes: the id 1–256 visible ASCII characters, the secret
    /// 32–1,024 bytes.
    pub fn new(id: &str, secret: &[u8]) -> Result<Key, KeyError> {
        let key = Key {
            id: String::new(),
            secret: Arc::from(secret),
        }
        .with_id(id)?;
        if secret.len() < MIN_SECRET_LEN {
            return Err(KeyError::TooShort {
                path: None,
                len: secret.len(),
            });
        }
        if secret.len() > MAX_SECRET_LEN {
            return Err(KeyError::TooLong {
                path: None,
                len: secret.len(),
            });
        }
        Ok(key)
    }

    /// Read the secret for key `id` from a file: its text, with leading and trailing ASCII
    /// whitespace removed, is the secret (its bytes as they are, not decoded). It must be
    /// 32–1,024 visible ASCII characters; `openssl rand -hex 32 > agent.key` makes one.
    ///
    /// On Unix a file that users other than its owner and group may read or write is refused
    /// (as ssh refuses such a private key): a secret anyone on the host can read is no secret.
    /// Make it private with `chmod 600`, or `640` to share it with a service group.
    pub(crate) fn from_file(id: &str, path: &Path) -> Result<Key, KeyError> {
        let shown = || path.to_path_buf();
        let read = |source| KeyError::Read {
            path: shown(),
            source,
        };
        let metadata = std::fs::metadata(path).map_err(read)?;
        if !metadata.is_file() {
            return Err(KeyError::NotAFile { path: shown() });
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = metadata.permissions().mode() & 0o777;
            if mode & 0o006 != 0 {
                return Err(KeyError::OpenToOthers {
                    path: shown(),
                    mode,
                });
            }
        }
        if metadata.len() > (MAX_SECRET_LEN * 2) as u64 {
            return Err(KeyError::TooLong {
                path: Some(shown()),
                len: metadata.len() as usize,
            });
        }
        let bytes = std::fs::read(path).map_err(read)?;
        let secret = bytes.trim_ascii();
        if !secret.iter().all(|b| (0x21..=0x7e).contains(b)) {
            return Err(KeyError::NotText { path: shown() });
        }
        Key::new(id, secret).map_err(|e| e.at(path))
    }

    /// The key id (`DD-Key-Id`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The same secret under another key id.
    pub(crate) fn with_id(&self, id: &str) -> Result<Key, KeyError> {
        check_key_id(id).map_err(|rule| match rule {
            FieldRule::KeyIdLength => KeyError::IdLength { id: id.to_string() },
            _ => KeyError::IdCharacters { id: id.to_string() },
        })?;
        Ok(Key {
            id: id.to_string(),
            secret: Arc::clone(&self.secret),
        })
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// Why a key could not be made or read.
#[derive(Debug)]
#[non_exhaustive]
pub enum KeyError {
    /// The key file could not be read.
    Read {
        /// The key file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The path names a directory or another non-file.
    NotAFile {
        /// The path given.
        path: PathBuf,
    },
    /// Users other than the owner and group may read or write the key file.
    OpenToOthers {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The secret holds a byte that is not visible ASCII (after trimming whitespace).
    NotText {
        /// The key file.
        path: PathBuf,
    },
    /// The secret is shorter than `MIN_SECRET_LEN` bytes.
    TooShort {
        /// The key file, when read from one.
        path: Option<PathBuf>,
        /// The secret's length in bytes.
        len: usize,
    },
    /// The secret is longer than `MAX_SECRET_LEN` bytes.
    TooLong {
        /// The key file, when read from one.
        path: Option<PathBuf>,
        /// The secret's length in bytes.
        len: usize,
    },
    /// The key id is empty or too long.
    IdLength {
        /// The id given.
        id: String,
    },
    /// The key id holds a character that is not visible ASCII.
    IdCharacters {
        /// The id given.
        id: String,
    },
}

impl KeyError {
    fn at(self, path: &Path) -> KeyError {
        match self {
            KeyError::TooShort { len, .. } => KeyError::TooShort {
                path: Some(path.to_path_buf()),
                len,
            },
            KeyError::TooLong { len, .. } => KeyError::TooLong {
                path: Some(path.to_path_buf()),
                len,
            },
            other => other,
        }
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secret = |path: &Option<PathBuf>| match path {
            Some(p) => format!("the secret in key file {}", p.display()),
            None => "the secret".to_string(),
        };
        match self {
            KeyError::Read { path, source } => {
                write!(f, "cannot read key file {}: {source}", path.display())
            }
            KeyError::NotAFile { path } => {
                write!(f, "key file {} is not a regular file", path.display())
            }
            KeyError::OpenToOthers { path, mode } => write!(
                f,
                "key file {} has mode {mode:03o}, so users other than its owner and group can \
                 read or write it; make it private (chmod 600) and use it again",
                path.display()
            ),
            KeyError::NotText { path } => write!(
                f,
                "key file {} must hold the secret as visible ASCII text (for example 64 hex \
                 digits from `openssl rand -hex 32`)",
                path.display()
            ),
            KeyError::TooShort { path, len } => write!(
                f,
                "{} is {len} bytes long; a secret must be at least {MIN_SECRET_LEN} (for \
                 example 64 hex digits from `openssl rand -hex 32`)",
                secret(path)
            ),
            KeyError::TooLong { path, len } => write!(
                f,
                "{} is {len} bytes long; a secret may be at most {MAX_SECRET_LEN}",
                secret(path)
            ),
            KeyError::IdLength { id } => {
                write!(f, "key id {id:?} is invalid: {}", FieldRule::KeyIdLength)
            }
            KeyError::IdCharacters { id } => {
                write!(
                    f,
                    "key id {id:?} is invalid: {}",
                    FieldRule::KeyIdCharacters
                )
            }
        }
    }
}

impl std::error::Error for KeyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            KeyError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What a signature covers besides the headers: the method, the request target and the body.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Signable<'a> {
    /// Upper case (`POST`).
    pub(crate) method: &'a str,
    /// The path and, when there is one, `?` and the query, exactly as sent.
    pub(crate) target: &'a str,
    /// The body bytes as sent.
    pub(crate) body: &'a [u8],
}

/// Which rule of the scheme's grammar (the table of headers above) a field breaks. Its
/// `Display` completes a sentence about the field: `"its nonce" + " it must be 16 to 64
/// characters long"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldRule {
    /// A key id is 1 to 256 characters.
    KeyIdLength,
    /// A key id is visible ASCII, with no spaces.
    KeyIdCharacters,
    /// A method is 1 to 16 upper-case letters.
    Method,
    /// A request target starts with `/`.
    TargetStart,
    /// A request target is at most 8,192 bytes.
    TargetLength,
    /// A request target is visible ASCII (anything else percent-encoded).
    TargetCharacters,
    /// A nonce is 16 to 64 characters.
    NonceLength,
    /// A nonce holds only `A-Z a-z 0-9 _ -`.
    NonceCharacters,
    /// A timestamp is decimal Unix seconds, with no sign or leading zero.
    Timestamp,
    /// A signature is `v1=` and 64 lowercase hex digits.
    Tag,
    /// A signature header is sent once.
    OnlyOnce,
    /// A URL to sign is absolute, `http://` or `https://`.
    AbsoluteUrl,
}

impl fmt::Display for FieldRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FieldRule::KeyIdLength => "it must be 1 to 256 characters long",
            FieldRule::KeyIdCharacters => "it must be visible ASCII, with no spaces",
            FieldRule::Method => "must be 1 to 16 upper-case letters",
            FieldRule::TargetStart => "must start with /",
            FieldRule::TargetLength => "is longer than 8,192 bytes",
            FieldRule::TargetCharacters => "must be visible ASCII (percent-encode anything else)",
            FieldRule::NonceLength => "it must be 16 to 64 characters long",
            FieldRule::NonceCharacters => "it may hold only A-Z, a-z, 0-9, _ and -",
            FieldRule::Timestamp => {
                "it must be Unix seconds in decimal, with no sign or leading zero"
            }
            FieldRule::Tag => "it must be v1= and 64 lowercase hex digits",
            FieldRule::OnlyOnce => "it is sent more than once",
            FieldRule::AbsoluteUrl => "is not an absolute http:// or https:// URL",
        })
    }
}

/// Why a request could not be signed: one of its fields breaks the scheme's grammar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignError {
    /// `method`, `target`, `nonce` or the URL.
    pub(crate) field: &'static str,
    /// Why it breaks it.
    pub(crate) reason: FieldRule,
}

impl fmt::Display for SignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot sign the request: its {} {}",
            self.field, self.reason
        )
    }
}

impl std::error::Error for SignError {}

/// A signature: the header values a signed request carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Signature {
    /// The signing key's id (`DD-Key-Id`).
    pub(crate) key_id: String,
    /// Unix seconds when it was signed (`DD-Timestamp`).
    pub(crate) timestamp: u64,
    /// The request's nonce, 32 lowercase hex digits (`DD-Nonce`).
    pub(crate) nonce: String,
    /// The tag, 64 lowercase hex digits.
    pub(crate) tag: String,
}

impl Signature {
    /// The four header fields, in `HEADERS` order.
    pub(crate) fn headers(&self) -> [(&'static str, String); 4] {
        [
            (KEY_ID_HEADER, self.key_id.clone()),
            (TIMESTAMP_HEADER, self.timestamp.to_string()),
            (NONCE_HEADER, self.nonce.clone()),
            (SIGNATURE_HEADER, format!("{SIGNATURE_PREFIX}{}", self.tag)),
        ]
    }
}

/// The canonical string of a request (see the module documentation). Refuses a field that
/// breaks its grammar, so no two requests share a string.
pub(crate) fn canonical_string(
    direction: Direction,
    key_id: &str,
    request: &Signable<'_>,
    timestamp: u64,
    nonce: &str,
) -> Result<String, SignError> {
    let bad = |field, reason| SignError { field, reason };
    check_key_id(key_id).map_err(|r| bad("key id", r))?;
    check_method(request.method).map_err(|r| bad("method", r))?;
    check_target(request.target).map_err(|r| bad("target", r))?;
    check_nonce(nonce).map_err(|r| bad("nonce", r))?;
    let body_digest = hex(&Sha256::digest(request.body));
    Ok([
        SCHEME,
        direction.name(),
        key_id,
        request.method,
        request.target,
        &timestamp.to_string(),
        nonce,
        &body_digest,
    ]
    .join("\n"))
}

/// Sign `request` with `key` at `timestamp` (Unix seconds) with `nonce`. [`Signer::sign`] picks
/// both for you; this form exists for test vectors and other implementations.
pub(crate) fn sign_at(
    key: &Key,
    direction: Direction,
    request: &Signable<'_>,
    timestamp: u64,
    nonce: &str,
) -> Result<Signature, SignError> {
    let text = canonical_string(direction, &key.id, request, timestamp, nonce)?;
    Ok(Signature {
        key_id: key.id.clone(),
        timestamp,
        nonce: nonce.to_string(),
        tag: hex(&hmac::hmac_sha256(&key.secret, text.as_bytes())),
    })
}

/// A key and the direction it signs in: what a client attaches to sign every call.
#[derive(Clone, Debug)]
pub(crate) struct Signer {
    /// The shared key.
    pub(crate) key: Key,
    /// Which way the calls go: to the agent, or back to the harness.
    pub(crate) direction: Direction,
}

impl Signer {
    /// A signer for `direction`.
    pub(crate) fn new(key: Key, direction: Direction) -> Signer {
        Signer { key, direction }
    }

    /// Sign `request` now, with a fresh random nonce (16 bytes from the operating system, as
    /// 32 hex digits).
    pub(crate) fn sign(&self, request: &Signable<'_>) -> Result<Signature, SignError> {
        let mut nonce = [0u8; 16];
        crate::ids::secret_bytes(&mut nonce);
        sign_at(&self.key, self.direction, request, unix_now(), &hex(&nonce))
    }

    /// Sign a call to `url` (`http://host[:port]/path?query`): its request target is taken
    /// from the URL.
    pub(crate) fn sign_url(
        &self,
        method: &str,
        url: &str,
        body: &[u8],
    ) -> Result<Signature, SignError> {
        let target = request_target(url).ok_or(SignError {
            field: "URL",
            reason: FieldRule::AbsoluteUrl,
        })?;
        self.sign(&Signable {
            method,
            target: &target,
            body,
        })
    }
}

/// The request target (origin form, RFC 9112 §3.2.1) an HTTP client sends for `url`: the path
/// (`/` when empty) and the query when it is not empty, without the fragment. `None` for
/// anything but an absolute `http`/`https` URL.
pub(crate) fn request_target(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let rest = rest.split_once('#').map_or(rest, |(before, _)| before);
    let (path, query) = match rest.find(['/', '?']) {
        None => ("", ""),
        Some(i) => {
            let target = rest.get(i..)?;
            target.split_once('?').unwrap_or((target, ""))
        }
    };
    let path = if path.is_empty() { "/" } else { path };
    Some(received_target(path, query))
}

/// The request target of a received request: `path`, and `?query` when the query is not
/// empty (the inverse of [`request_target`]).
pub(crate) fn received_target(path: &str, query: &str) -> String {
    if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{query}")
    }
}

/// Why a signed request was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum VerifyError {
    /// A signature header is absent (`DD-Signature` when the request carries none of them).
    Missing {
        /// The header missing.
        header: &'static str,
    },
    /// A signature header breaks its grammar, or is sent twice.
    Malformed {
        /// The header.
        header: &'static str,
        /// What is wrong with it.
        reason: FieldRule,
    },
    /// No key is known under the key id.
    UnknownKey {
        /// The key id sent.
        key_id: String,
    },
    /// The timestamp is outside the replay window.
    Stale {
        /// The request's timestamp (Unix seconds).
        timestamp: u64,
        /// This side's clock.
        now: u64,
        /// The replay window, in seconds either side.
        window_secs: u64,
    },
    /// The timestamp is no later than the newest one the full nonce cache had to forget, so
    /// a replay of that request could not be told apart.
    Forgotten {
        /// The request's timestamp.
        timestamp: u64,
        /// The newest timestamp the cache forgot.
        floor: u64,
    },
    /// The request was signed before this verifier started: a verifier keeps its nonces in
    /// memory, so one a restart forgot is refused by its time instead.
    BeforeStart {
        /// The request's timestamp.
        timestamp: u64,
        /// When the verifier started.
        started: u64,
    },
    /// The nonce was already accepted.
    Replayed {
        /// The nonce sent again.
        nonce: String,
    },
    /// The tag does not match: the request, or the key, is not what was signed.
    BadSignature {
        /// The key the signature was checked with.
        key_id: String,
    },
}

impl VerifyError {
    /// A short, stable name for the failure, sent as the JSON-RPC error's `data.reason`.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            VerifyError::Missing { .. } => "missing",
            VerifyError::Malformed { .. } => "malformed",
            VerifyError::UnknownKey { .. } => "unknown-key",
            VerifyError::Stale { .. }
            | VerifyError::Forgotten { .. }
            | VerifyError::BeforeStart { .. } => "stale",
            VerifyError::Replayed { .. } => "replayed",
            VerifyError::BadSignature { .. } => "bad-signature",
        }
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Missing { header } => write!(
                f,
                "the request is not signed: the {header} header is missing (this server \
                 requires {SCHEME} signatures)"
            ),
            VerifyError::Malformed { header, reason } => {
                write!(f, "the {header} header is malformed: {reason}")
            }
            VerifyError::UnknownKey { key_id } => {
                write!(f, "no key is known under {KEY_ID_HEADER} {key_id:?}")
            }
            VerifyError::Stale {
                timestamp,
                now,
                window_secs,
            } => write!(
                f,
                "the request was signed at {timestamp}, {} s from this server's clock ({now}); \
                 the replay window is ±{window_secs} s",
                timestamp.abs_diff(*now)
            ),
            VerifyError::Forgotten { timestamp, floor } => write!(
                f,
                "the request was signed at {timestamp}, no later than {floor}, the newest \
                 request the full replay cache has forgotten; sign it again"
            ),
            VerifyError::BeforeStart { timestamp, started } => write!(
                f,
                "the request was signed at {timestamp}, before this server started ({started}); \
                 a request from before a restart could be a replay: sign it again"
            ),
            VerifyError::Replayed { nonce } => write!(
                f,
                "the nonce {nonce} was already used: a replayed request is refused"
            ),
            VerifyError::BadSignature { key_id } => write!(
                f,
                "the signature does not match the request: its method, target, body, timestamp \
                 or nonce differs from what was signed, or it was not signed with the key of \
                 {key_id:?}"
            ),
        }
    }
}

impl std::error::Error for VerifyError {}

/// The receiving side: the keys it accepts, the direction it expects, its replay window and
/// its nonce cache. Share one verifier between threads; its cache is behind a lock.
pub(crate) struct Verifier {
    direction: Direction,
    keys: HashMap<String, Key>,
    window_secs: u64,
    nonces: Mutex<NonceCache>,
    /// When this verifier was made (Unix seconds): it never saw the nonces of requests signed
    /// before, so it refuses them rather than let a restart reopen the replay window.
    started: u64,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ids: Vec<&String> = self.keys.keys().collect();
        ids.sort();
        f.debug_struct("Verifier")
            .field("direction", &self.direction)
            .field("key_ids", &ids)
            .field("window_secs", &self.window_secs)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// A verifier of requests travelling in `direction`, signed by any of `keys`, with the
    /// default window ([`DEFAULT_WINDOW`]) and nonce capacity (`DEFAULT_NONCE_CAPACITY`).
    pub(crate) fn new(direction: Direction, keys: impl IntoIterator<Item = Key>) -> Verifier {
        Verifier {
            direction,
            keys: keys.into_iter().map(|k| (k.id.clone(), k)).collect(),
            window_secs: DEFAULT_WINDOW.as_secs(),
            nonces: Mutex::new(NonceCache::new(DEFAULT_NONCE_CAPACITY)),
            started: unix_now(),
        }
    }

    /// Accept timestamps up to `window` from this clock, either way (whole seconds).
    pub(crate) fn with_window(mut self, window: Duration) -> Verifier {
        self.window_secs = window.as_secs();
        self
    }

    /// Remember at most `capacity` nonces (at least 1).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn with_nonce_capacity(mut self, capacity: usize) -> Verifier {
        self.nonces = Mutex::new(NonceCache::new(capacity.max(1)));
        self
    }

    /// Whether `headers` carry any of the scheme's headers (a request that does is verified,
    /// even where signing is optional).
    pub(crate) fn is_signed(headers: &[(String, String)]) -> bool {
        HEADERS
            .iter()
            .any(|name| super::http::header(headers, name).is_some())
    }

    /// Verify a request now: the key id that signed it, or why it is refused.
    pub(crate) fn verify(
        &self,
        request: &Signable<'_>,
        headers: &[(String, String)],
    ) -> Result<String, VerifyError> {
        self.verify_at(request, headers, unix_now())
    }

    /// Verify a received HTTP request now (its method, `path?query` and body).
    pub(crate) fn verify_request(
        &self,
        request: &super::http::Request,
    ) -> Result<String, VerifyError> {
        let target = received_target(&request.path, &request.query);
        let signable = Signable {
            method: &request.method,
            target: &target,
            body: &request.body,
        };
        self.verify(&signable, &request.headers)
    }

    /// [`Verifier::verify`] against a clock reading `now` (Unix seconds).
    ///
    /// In order: every header present once and well formed; the key known; the timestamp
    /// within the window; the tag equal, compared in constant time; the nonce not seen before.
    /// Only a request that passes all of these is remembered, so unsigned junk cannot fill
    /// the nonce cache.
    pub(crate) fn verify_at(
        &self,
        request: &Signable<'_>,
        headers: &[(String, String)],
        now: u64,
    ) -> Result<String, VerifyError> {
        if !Verifier::is_signed(headers) {
            return Err(VerifyError::Missing {
                header: SIGNATURE_HEADER,
            });
        }
        let key_id = one_header(headers, KEY_ID_HEADER)?;
        let timestamp = one_header(headers, TIMESTAMP_HEADER)?;
        let nonce = one_header(headers, NONCE_HEADER)?;
        let signature = one_header(headers, SIGNATURE_HEADER)?;
        let malformed = |header| move |reason| VerifyError::Malformed { header, reason };
        check_key_id(key_id).map_err(malformed(KEY_ID_HEADER))?;
        let timestamp = parse_timestamp(timestamp).map_err(malformed(TIMESTAMP_HEADER))?;
        check_nonce(nonce).map_err(malformed(NONCE_HEADER))?;
        let tag = parse_tag(signature).map_err(malformed(SIGNATURE_HEADER))?;
        let key = self
            .keys
            .get(key_id)
            .ok_or_else(|| VerifyError::UnknownKey {
                key_id: key_id.to_string(),
            })?;
        if timestamp.abs_diff(now) > self.window_secs {
            return Err(VerifyError::Stale {
                timestamp,
                now,
                window_secs: self.window_secs,
            });
        }
        // Signed before this verifier started (judged on a clock that has reached the start):
        // its nonce may have been spent with the process that came before.
        if timestamp < self.started && now >= self.started {
            return Err(VerifyError::BeforeStart {
                timestamp,
                started: self.started,
            });
        }
        // A method or target outside the grammar was never signed by a conforming signer.
        let text =
            canonical_string(self.direction, key_id, request, timestamp, nonce).map_err(|_| {
                VerifyError::BadSignature {
                    key_id: key_id.to_string(),
                }
            })?;
        let mut mac = Hmac::new(&key.secret);
        mac.update(text.as_bytes());
        if !crate::ids::constant_time_eq(&mac.finalize(), &tag) {
            return Err(VerifyError::BadSignature {
                key_id: key_id.to_string(),
            });
        }
        self.nonces
            .lock()
            .unpoisoned()
            .admit(key_id, nonce, timestamp, now, self.window_secs)?;
        Ok(key_id.to_string())
    }
}

/// The nonces accepted recently, bounded in memory.
///
/// Each entry is the first 16 bytes of SHA-256(key id, LF, nonce) and its timestamp, kept in
/// arrival order. An entry whose timestamp has left the window is dropped (the window refuses
/// its replay anyway). When the cache is full the oldest arrival is dropped, and its timestamp
/// raises a floor: from then on a request signed at or before the floor is refused as
/// [`VerifyError::Forgotten`], since its nonce might be one that was dropped. So a replay is
/// never accepted, memory stays within the capacity, and under a flood of signed requests the
/// effective window shrinks instead of the process growing. Dropping expired entries raises
/// the floor too, so a wall clock stepped backwards cannot readmit one.
#[derive(Debug)]
struct NonceCache {
    capacity: usize,
    seen: HashSet<[u8; 16]>,
    order: VecDeque<(u64, [u8; 16])>,
    floor: Option<u64>,
}

impl NonceCache {
    fn new(capacity: usize) -> NonceCache {
        NonceCache {
            capacity,
            seen: HashSet::new(),
            order: VecDeque::new(),
            floor: None,
        }
    }

    fn admit(
        &mut self,
        key_id: &str,
        nonce: &str,
        timestamp: u64,
        now: u64,
        window_secs: u64,
    ) -> Result<(), VerifyError> {
        while let Some(&(ts, id)) = self.order.front() {
            if ts.saturating_add(window_secs) >= now {
                break;
            }
            self.forget_front(ts, id);
        }
        if let Some(floor) = self.floor
            && timestamp <= floor
        {
            return Err(VerifyError::Forgotten { timestamp, floor });
        }
        let id = nonce_id(key_id, nonce);
        if self.seen.contains(&id) {
            return Err(VerifyError::Replayed {
                nonce: nonce.to_string(),
            });
        }
        while self.order.len() >= self.capacity {
            let Some(&(ts, old)) = self.order.front() else {
                break;
            };
            self.forget_front(ts, old);
        }
        self.seen.insert(id);
        self.order.push_back((timestamp, id));
        Ok(())
    }

    fn forget_front(&mut self, timestamp: u64, id: [u8; 16]) {
        self.order.pop_front();
        self.seen.remove(&id);
        self.floor = Some(self.floor.map_or(timestamp, |f| f.max(timestamp)));
    }
}

fn nonce_id(key_id: &str, nonce: &str) -> [u8; 16] {
    let mut hash = Sha256::new();
    hash.update(key_id.as_bytes());
    hash.update(b"\n");
    hash.update(nonce.as_bytes());
    let mut id = [0u8; 16];
    id.copy_from_slice(&hash.finalize()[..16]);
    id
}

/// The value of `name`, present exactly once (a repeated field could be read two ways).
fn one_header<'h>(
    headers: &'h [(String, String)],
    name: &'static str,
) -> Result<&'h str, VerifyError> {
    let mut values = super::http::header_values(headers, name);
    let first = values.next().ok_or(VerifyError::Missing { header: name })?;
    if values.next().is_some() {
        return Err(VerifyError::Malformed {
            header: name,
            reason: FieldRule::OnlyOnce,
        });
    }
    Ok(first)
}

fn visible_ascii(s: &str) -> bool {
    s.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

fn check_key_id(id: &str) -> Result<(), FieldRule> {
    if id.is_empty() || id.len() > MAX_KEY_ID_LEN {
        Err(FieldRule::KeyIdLength)
    } else if !visible_ascii(id) {
        Err(FieldRule::KeyIdCharacters)
    } else {
        Ok(())
    }
}

fn check_method(method: &str) -> Result<(), FieldRule> {
    if !method.is_empty()
        && method.len() <= MAX_METHOD_LEN
        && method.bytes().all(|b| b.is_ascii_uppercase())
    {
        Ok(())
    } else {
        Err(FieldRule::Method)
    }
}

fn check_target(target: &str) -> Result<(), FieldRule> {
    if !target.starts_with('/') {
        Err(FieldRule::TargetStart)
    } else if target.len() > MAX_TARGET_LEN {
        Err(FieldRule::TargetLength)
    } else if !visible_ascii(target) {
        Err(FieldRule::TargetCharacters)
    } else {
        Ok(())
    }
}

fn check_nonce(nonce: &str) -> Result<(), FieldRule> {
    let charset = nonce
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !NONCE_LEN.contains(&nonce.len()) {
        Err(FieldRule::NonceLength)
    } else if !charset {
        Err(FieldRule::NonceCharacters)
    } else {
        Ok(())
    }
}

fn parse_timestamp(value: &str) -> Result<u64, FieldRule> {
    let b = value.as_bytes();
    let digits =
        !b.is_empty() && b.len() <= MAX_TIMESTAMP_DIGITS && b.iter().all(u8::is_ascii_digit);
    if !digits || (b.len() > 1 && b[0] == b'0') {
        return Err(FieldRule::Timestamp);
    }
    value.parse().map_err(|_| FieldRule::Timestamp)
}

fn parse_tag(value: &str) -> Result<[u8; TAG_LEN], FieldRule> {
    let hex_digits = value
        .strip_prefix(SIGNATURE_PREFIX)
        .ok_or(FieldRule::Tag)?
        .as_bytes();
    if hex_digits.len() != TAG_LEN * 2 {
        return Err(FieldRule::Tag);
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut tag = [0u8; TAG_LEN];
    for (out, pair) in tag.iter_mut().zip(hex_digits.chunks_exact(2)) {
        *out = (nibble(pair[0]).ok_or(FieldRule::Tag)? << 4)
            | nibble(pair[1]).ok_or(FieldRule::Tag)?;
    }
    Ok(tag)
}

/// Unix seconds now.
fn unix_now() -> u64 {
    crate::time::now_ns() / 1_000_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"ddwire-test-vector-secret-0123456789";
    const NOW: u64 = 1_767_225_600;
    const BODY: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}"#;

    fn key(id: &str) -> Key {
        Key::new(id, SECRET).unwrap()
    }

    fn call() -> Signable<'static> {
        Signable {
            method: "POST",
            target: "/a2a",
            body: BODY,
        }
    }

    fn header_list(signature: &Signature) -> Vec<(String, String)> {
        signature
            .headers()
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect()
    }

    fn signed(nonce: &str, timestamp: u64) -> Vec<(String, String)> {
        header_list(
            &sign_at(
                &key("hello.world"),
                Direction::ToAgent,
                &call(),
                timestamp,
                nonce,
            )
            .unwrap(),
        )
    }

    fn verifier() -> Verifier {
        Verifier::new(Direction::ToAgent, [key("hello.world")])
    }

    /// The vectors of `vendor-notes/hmac-signing.md`, computed there with Python's `hmac`.
    #[test]
    fn the_canonical_string_and_tag_match_the_published_vectors() {
        let text = canonical_string(
            Direction::ToAgent,
            "hello.world",
            &call(),
            NOW,
            "0123456789abcdef0123456789abcdef",
        )
        .unwrap();
        assert_eq!(
            text,
            "DD-HMAC-SHA256-V1\nto-agent\nhello.world\nPOST\n/a2a\n1767225600\n\
             0123456789abcdef0123456789abcdef\n\
             806888603fef840f2ad4a94cf4a3263cd650c76a988ca90aed9f0001580285ee"
        );
        let signature = sign_at(
            &key("hello.world"),
            Direction::ToAgent,
            &call(),
            NOW,
            "0123456789abcdef0123456789abcdef",
        )
        .unwrap();
        assert_eq!(
            signature.tag,
            "ac6211afdb0627bb2e3b98a1537a7cc956dd44a4ce7ecc6f9a80ca29800ce738"
        );
        assert_eq!(
            signature.headers()[3].1,
            "v1=ac6211afdb0627bb2e3b98a1537a7cc956dd44a4ce7ecc6f9a80ca29800ce738"
        );

        let callback = Signable {
            method: "POST",
            target: "/a2a?A2A-Version=1.0",
            body: b"",
        };
        let signature = sign_at(
            &key("director.route"),
            Direction::ToHarness,
            &callback,
            NOW + 1,
            "n-_0123456789ABCDEF",
        )
        .unwrap();
        assert_eq!(
            signature.tag,
            "c12797638cbdec118ceaac26c6451f1c7849ad14d37c5000b841edd777de0f98"
        );
    }

    #[test]
    fn a_signed_request_is_accepted_once_and_its_replay_is_refused() {
        let v = verifier();
        let headers = signed("0123456789abcdef0123456789abcdef", NOW);
        assert_eq!(v.verify_at(&call(), &headers, NOW).unwrap(), "hello.world");
        let err = v.verify_at(&call(), &headers, NOW + 1).unwrap_err();
        assert_eq!(err.reason(), "replayed", "{err}");
        assert!(
            err.to_string().contains("replayed request is refused"),
            "{err}"
        );
    }

    #[test]
    fn a_call_signed_now_verifies_once_and_not_when_altered() {
        let key = Key::new("hello.world", b"a shared secret of at least 32 bytes!").unwrap();
        let call = Signable {
            method: "POST",
            target: "/a2a",
            body: br#"{"jsonrpc":"2.0"}"#,
        };
        let signature = Signer::new(key.clone(), Direction::ToAgent)
            .sign(&call)
            .unwrap();
        let headers = header_list(&signature);
        let verifier = Verifier::new(Direction::ToAgent, [key]);
        assert_eq!(verifier.verify(&call, &headers).unwrap(), "hello.world");
        let replayed = verifier.verify(&call, &headers).unwrap_err();
        assert_eq!(replayed.reason(), "replayed");
        let altered = Signable {
            body: br#"{"jsonrpc":"2.0","x":1}"#,
            ..call
        };
        assert_eq!(
            verifier.verify(&altered, &headers).unwrap_err().reason(),
            "bad-signature"
        );
    }

    #[test]
    fn an_altered_method_target_body_or_header_is_a_bad_signature() {
        let v = verifier();
        let headers = signed("0123456789abcdef0123456789abcdef", NOW);
        let altered = [
            Signable {
                method: "PUT",
                ..call()
            },
            Signable {
                target: "/a2a?x=1",
                ..call()
            },
            Signable {
                target: "/",
                ..call()
            },
            Signable {
                body: br#"{"jsonrpc":"2.0","id":2,"method":"message/send","params":{}}"#,
                ..call()
            },
            Signable {
                body: b"",
                ..call()
            },
        ];
        for request in altered {
            let err = v.verify_at(&request, &headers, NOW).unwrap_err();
            assert_eq!(err.reason(), "bad-signature", "{request:?}: {err}");
        }
        // A changed timestamp or nonce is a different canonical string too.
        let mut moved = headers.clone();
        moved[1].1 = (NOW + 1).to_string();
        assert_eq!(
            v.verify_at(&call(), &moved, NOW).unwrap_err().reason(),
            "bad-signature"
        );
        let mut renonced = headers.clone();
        renonced[2].1 = "ffffffffffffffffffffffffffffffff".into();
        assert_eq!(
            v.verify_at(&call(), &renonced, NOW).unwrap_err().reason(),
            "bad-signature"
        );
        // None of the refusals used the nonce up: the genuine request still passes.
        assert!(v.verify_at(&call(), &headers, NOW).is_ok());
    }

    #[test]
    fn a_signature_for_the_other_direction_or_another_key_is_refused() {
        let to_harness = Verifier::new(Direction::ToHarness, [key("hello.world")]);
        let headers = signed("0123456789abcdef0123456789abcdef", NOW);
        assert_eq!(
            to_harness
                .verify_at(&call(), &headers, NOW)
                .unwrap_err()
                .reason(),
            "bad-signature"
        );

        let other_secret = Key::new("hello.world", &[b'x'; 32]).unwrap();
        let wrong_key = Verifier::new(Direction::ToAgent, [other_secret]);
        let err = wrong_key.verify_at(&call(), &headers, NOW).unwrap_err();
        assert_eq!(
            err,
            VerifyError::BadSignature {
                key_id: "hello.world".into()
            }
        );

        let unknown = Verifier::new(Direction::ToAgent, [key("someone.else")]);
        let err = unknown.verify_at(&call(), &headers, NOW).unwrap_err();
        assert_eq!(
            err,
            VerifyError::UnknownKey {
                key_id: "hello.world".into()
            }
        );
    }

    #[test]
    fn a_timestamp_outside_the_window_either_way_is_stale() {
        let v = verifier().with_window(Duration::from_secs(300));
        assert!(
            v.verify_at(&call(), &signed("aaaaaaaaaaaaaaaa", NOW - 300), NOW)
                .is_ok()
        );
        assert!(
            v.verify_at(&call(), &signed("bbbbbbbbbbbbbbbb", NOW + 300), NOW)
                .is_ok()
        );
        for (nonce, ts) in [
            ("cccccccccccccccc", NOW - 301),
            ("dddddddddddddddd", NOW + 301),
        ] {
            let err = v.verify_at(&call(), &signed(nonce, ts), NOW).unwrap_err();
            assert_eq!(err.reason(), "stale", "{err}");
            assert!(
                err.to_string().contains("301 s from this server's clock"),
                "{err}"
            );
        }
    }

    #[test]
    fn each_missing_malformed_or_repeated_header_is_named() {
        let v = verifier();
        let good = signed("0123456789abcdef0123456789abcdef", NOW);
        for (i, name) in HEADERS.iter().enumerate() {
            let mut missing = good.clone();
            missing.remove(i);
            let err = v.verify_at(&call(), &missing, NOW).unwrap_err();
            assert_eq!(err, VerifyError::Missing { header: name }, "{err}");
            assert!(
                err.to_string().starts_with("the request is not signed"),
                "{err}"
            );

            let mut twice = good.clone();
            twice.push(good[i].clone());
            let err = v.verify_at(&call(), &twice, NOW).unwrap_err();
            assert!(
                matches!(err, VerifyError::Malformed { header, .. } if header == *name),
                "{err}"
            );
        }
        let malformed: [(usize, &str); 12] = [
            (0, ""),
            (0, "hello world"),
            (0, "héllo"),
            (1, ""),
            (1, "-1767225600"),
            (1, "01767225600"),
            (1, "1767225600.5"),
            (1, "9999999999999"),
            (2, "short"),
            (2, "0123456789abcdef0123456789abcdef+"),
            (
                3,
                "ac6211afdb0627bb2e3b98a1537a7cc956dd44a4ce7ecc6f9a80ca29800ce738",
            ),
            (
                3,
                "v1=AC6211AFDB0627BB2E3B98A1537A7CC956DD44A4CE7ECC6F9A80CA29800CE738",
            ),
        ];
        for (i, value) in malformed {
            let mut bad = good.clone();
            bad[i].1 = value.to_string();
            let err = v.verify_at(&call(), &bad, NOW).unwrap_err();
            assert!(
                matches!(err, VerifyError::Malformed { header, .. } if header == HEADERS[i]),
                "{} = {value:?}: {err}",
                HEADERS[i]
            );
        }
        // A truncated tag (RFC 4231 §4.6-style, 128 bits) is malformed, never a prefix match.
        let mut truncated = good.clone();
        truncated[3].1.truncate(3 + 32);
        assert_eq!(
            v.verify_at(&call(), &truncated, NOW).unwrap_err().reason(),
            "malformed"
        );
    }

    #[test]
    fn an_unsigned_request_is_told_it_carries_no_signature() {
        let err = verifier().verify_at(&call(), &[], NOW).unwrap_err();
        assert_eq!(
            err,
            VerifyError::Missing {
                header: SIGNATURE_HEADER
            }
        );
        assert_eq!(
            err.to_string(),
            "the request is not signed: the DD-Signature header is missing (this server \
             requires DD-HMAC-SHA256-V1 signatures)"
        );
    }

    #[test]
    fn header_names_are_matched_case_insensitively() {
        let v = verifier();
        let headers: Vec<(String, String)> = signed("0123456789abcdef0123456789abcdef", NOW)
            .into_iter()
            .map(|(k, v)| (k.to_ascii_uppercase(), v))
            .collect();
        assert!(Verifier::is_signed(&headers));
        assert!(v.verify_at(&call(), &headers, NOW).is_ok());
        assert!(!Verifier::is_signed(&[(
            "authorization".into(),
            "Bearer x".into()
        )]));
    }

    #[test]
    fn the_nonce_cache_never_holds_more_than_its_capacity_and_never_admits_a_replay() {
        let v = verifier().with_nonce_capacity(4);
        let mut accepted = Vec::new();
        for i in 0..20u64 {
            let headers = signed(&format!("nonce-{i:016}"), NOW + i / 4);
            v.verify_at(&call(), &headers, NOW + i / 4).unwrap();
            accepted.push((headers, NOW + i / 4));
            assert!(v.nonces.lock().unwrap().order.len() <= 4);
            assert!(v.nonces.lock().unwrap().seen.len() <= 4);
        }
        // Every accepted request, replayed, is refused: still remembered, or older than the
        // floor the forgotten ones raised.
        for (headers, ts) in &accepted {
            let err = v.verify_at(&call(), headers, *ts).unwrap_err();
            assert!(matches!(err.reason(), "replayed" | "stale"), "{err}");
        }
        // A fresh request signed after the floor is still accepted.
        let fresh = signed("fresh-nonce-0000000", NOW + 10);
        assert!(v.verify_at(&call(), &fresh, NOW + 10).is_ok());
    }

    #[test]
    fn a_full_cache_refuses_a_request_no_newer_than_what_it_forgot() {
        let v = verifier().with_nonce_capacity(2);
        v.verify_at(&call(), &signed("aaaaaaaaaaaaaaaa", NOW + 5), NOW)
            .unwrap();
        v.verify_at(&call(), &signed("bbbbbbbbbbbbbbbb", NOW + 1), NOW)
            .unwrap();
        // Full: admitting a third forgets the first arrival (signed at NOW + 5).
        v.verify_at(&call(), &signed("cccccccccccccccc", NOW + 6), NOW)
            .unwrap();
        let err = v
            .verify_at(&call(), &signed("aaaaaaaaaaaaaaaa", NOW + 5), NOW)
            .unwrap_err();
        assert_eq!(
            err,
            VerifyError::Forgotten {
                timestamp: NOW + 5,
                floor: NOW + 5
            }
        );
        assert!(err.to_string().contains("sign it again"), "{err}");
        // Still remembered, but refused by the floor before the cache is asked.
        let err = v
            .verify_at(&call(), &signed("bbbbbbbbbbbbbbbb", NOW + 1), NOW)
            .unwrap_err();
        assert_eq!(err.reason(), "stale", "{err}");
    }

    #[test]
    fn expired_nonces_are_dropped_and_the_floor_keeps_them_refused() {
        let v = verifier().with_window(Duration::from_secs(10));
        let early = signed("aaaaaaaaaaaaaaaa", NOW);
        v.verify_at(&call(), &early, NOW).unwrap();
        // Much later, the entry has left the window and is dropped when the next one arrives.
        v.verify_at(&call(), &signed("bbbbbbbbbbbbbbbb", NOW + 100), NOW + 100)
            .unwrap();
        assert_eq!(v.nonces.lock().unwrap().order.len(), 1);
        // A clock stepped back to NOW does not readmit the forgotten nonce.
        let err = v.verify_at(&call(), &early, NOW).unwrap_err();
        assert_eq!(err.reason(), "stale", "{err}");
    }

    #[test]
    fn a_request_outside_the_grammar_cannot_be_signed() {
        let k = key("hello.world");
        let nonce = "0123456789abcdef";
        for (request, field) in [
            (
                Signable {
                    method: "post",
                    ..call()
                },
                "method",
            ),
            (
                Signable {
                    target: "a2a",
                    ..call()
                },
                "target",
            ),
            (
                Signable {
                    target: "/a2a\nX: 1",
                    ..call()
                },
                "target",
            ),
            (
                Signable {
                    target: "/é",
                    ..call()
                },
                "target",
            ),
        ] {
            let err = sign_at(&k, Direction::ToAgent, &request, NOW, nonce).unwrap_err();
            assert_eq!(err.field, field, "{err}");
        }
        let err = sign_at(
            &k,
            Direction::ToAgent,
            &call(),
            NOW,
            "a\nb-0123456789abcdef",
        )
        .unwrap_err();
        assert_eq!(err.field, "nonce");
        assert!(Key::new("has space", SECRET).is_err());
        assert!(Key::new("", SECRET).is_err());
        assert!(matches!(
            Key::new("a", b"short"),
            Err(KeyError::TooShort { len: 5, .. })
        ));
    }

    #[test]
    fn the_signer_signs_what_the_client_sends_for_a_url() {
        for (url, target) in [
            ("http://127.0.0.1:8101/a2a", "/a2a"),
            ("http://127.0.0.1:8101", "/"),
            ("http://h/a2a?A2A-Version=1.0", "/a2a?A2A-Version=1.0"),
            ("http://h/a2a?", "/a2a"),
            ("https://[::1]:9/x#frag", "/x"),
            ("http://h?q=1", "/?q=1"),
        ] {
            assert_eq!(request_target(url).as_deref(), Some(target), "{url}");
        }
        assert_eq!(request_target("ftp://h/x"), None);
        let signer = Signer::new(key("hello.world"), Direction::ToAgent);
        let signature = signer
            .sign_url("POST", "http://127.0.0.1:8101/a2a", BODY)
            .unwrap();
        assert_eq!(signature.nonce.len(), 32);
        let v = verifier();
        assert!(v.verify(&call(), &header_list(&signature)).is_ok());
        assert_eq!(received_target("/a2a", ""), "/a2a");
        assert_eq!(received_target("/a2a", "a=1"), "/a2a?a=1");
    }

    #[test]
    fn a_keys_debug_form_never_shows_its_secret() {
        let shown = format!("{:?} {:?}", key("hello.world"), verifier());
        assert!(
            shown.contains("hello.world") && shown.contains("<redacted>"),
            "{shown}"
        );
        assert!(!shown.contains("ddwire-test-vector-secret"), "{shown}");
    }

    fn temp_file(name: &str, contents: &[u8], mode: u32) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ddwire-key-{}", crate::ids::new_uuid7()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, contents).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        #[cfg(not(unix))]
        let _ = mode;
        path
    }

    fn remove(path: &Path) {
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_key_file_holds_the_secret_as_text_trimmed_of_whitespace() {
        let path = temp_file(
            "agent.key",
            b"  ddwire-test-vector-secret-0123456789\n",
            0o600,
        );
        let from_file = Key::from_file("hello.world", &path).unwrap();
        remove(&path);
        let headers = signed("0123456789abcdef0123456789abcdef", NOW);
        let v = Verifier::new(Direction::ToAgent, [from_file]);
        assert!(v.verify_at(&call(), &headers, NOW).is_ok());
    }

    #[test]
    fn a_bad_key_file_is_refused_with_the_reason() {
        let cases: [(&[u8], u32, &str); 4] = [
            (b"ddwire-test-vector-secret-0123456789", 0o604, "chmod 600"),
            (b"too-short", 0o600, "at least 32"),
            (
                b"ddwire-test-vector secret-0123456789",
                0o600,
                "visible ASCII",
            ),
            (
                b"ddwire-test-vector-secret-\xc3\xa9-0123456789",
                0o600,
                "visible ASCII",
            ),
        ];
        for (contents, mode, expected) in cases {
            let path = temp_file("agent.key", contents, mode);
            let err = Key::from_file("hello.world", &path).unwrap_err();
            remove(&path);
            if cfg!(unix) || mode == 0o600 {
                assert!(err.to_string().contains(expected), "{err}");
            }
        }
        // Group access is allowed: a service group may share the secret.
        let path = temp_file("agent.key", SECRET, 0o640);
        assert!(Key::from_file("hello.world", &path).is_ok());
        remove(&path);
        let err = Key::from_file("hello.world", Path::new("/nonexistent/agent.key")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot read key file /nonexistent/agent.key"),
            "{err}"
        );
    }
}
