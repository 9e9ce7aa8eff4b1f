//! Agent cards (A2A 0.3 §5 AgentCard; A2A 1.0 AgentCard with `supportedInterfaces`).
//!
//! One card serves both SDK generations: it carries the 1.0 `supportedInterfaces` (a JSON-RPC
//! interface at version 1.0 and one at 0.3, both on the same endpoint) and the v0.3 fields
//! `url`, `protocolVersion` and `preferredTransport`, as a2a-sdk 1.3.0 itself merges them. A
//! 1.x client then picks 1.0, the first interface listed (A2A 1.0 §8.3.2), and a 0.3 client
//! reads `url`. The Data Director extension carries the agent's description and is marked
//! required.

use super::{Binding, JSONRPC_PATH};
use crate::contract::ContractError;
use crate::contract::spec::AgentSpec;
use crate::json::python::str_repr;
use crate::wire::WireError;
use crate::wire::http::{Request, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The Data Director extension: its `params` are the agent's description.
pub(crate) const EXTENSION_URI: &str = "https://w3id.org/data-director/a2a/agent-spec/v0";
/// The harness card's second extension: its `params` are the manifest (every registered
/// agent's description), which a delegation agent routes from.
pub(crate) const MANIFEST_EXTENSION_URI: &str = "https://w3id.org/data-director/a2a/manifest/v0";

/// The skill tags of an agent: `data-director`, its grounding mode, its input classes, its
/// requirement ids.
pub(crate) fn skill_tags(spec: &AgentSpec) -> Vec<String> {
    let mut tags = vec![
        "data-director".to_string(),
        format!("grounding:{}", spec.grounding_mode),
    ];
    tags.extend(spec.accepts.iter().map(|c| format!("accepts:{c}")));
    tags.extend(spec.requirement_ids.iter().cloned());
    tags
}

/// A skill entry for an agent (`id` = `name` = the agent id).
pub(crate) fn skill(spec: &AgentSpec) -> Value {
    json!({"id": spec.agent_id, "name": spec.agent_id, "description": spec.description, "tags": skill_tags(spec)})
}

/// The card fields every ddwire card shares: interfaces for both bindings at
/// `<public_base>/a2a`, JSON modes, no streaming.
pub(crate) fn base_card(
    name: &str,
    description: &str,
    version: &str,
    public_base: &str,
    extensions: Vec<Value>,
    skills: Vec<Value>,
) -> Value {
    let endpoint = format!("{}{JSONRPC_PATH}", public_base.trim_end_matches('/'));
    json!({
        "name": name,
        "description": description,
        "version": version,
        "url": endpoint,
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
        "supportedInterfaces": [
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json"],
        "capabilities": {"streaming": false, "pushNotifications": false, "extensions": extensions},
        "skills": skills,
    })
}

/// The card of one agent served at `public_base` (never a wildcard bind address).
pub(crate) fn agent_card(spec: &AgentSpec, public_base: &str) -> Value {
    let extension = json!({
        "uri": EXTENSION_URI,
        "description": "Data Director agent specification (the agent's description).",
        "required": true,
        "params": spec.describe(),
    });
    base_card(
        &spec.agent_id,
        &spec.description,
        &spec.version,
        public_base,
        vec![extension],
        vec![skill(spec)],
    )
}

/// Rebuild an agent's spec from its card: the Data Director extension's `params`, with every
/// check of [`AgentSpec::from_description`]. A card without the extension is refused.
pub(crate) fn spec_from_card(card: &Value) -> Result<AgentSpec, ContractError> {
    let name = card.get("name").and_then(Value::as_str).unwrap_or("?");
    let params = extension_params(card, EXTENSION_URI).ok_or_else(|| {
        ContractError::spec(
            None,
            format!(
                "agent card {} is incompatible: add the Data Director extension: it does not \
                 declare {EXTENSION_URI} in capabilities.extensions (see vendor-notes/a2a.md)",
                str_repr(name)
            ),
        )
    })?;
    AgentSpec::from_description(params)
}

/// The `params` of the extension `uri` on a card, if declared.
pub(crate) fn extension_params<'a>(card: &'a Value, uri: &str) -> Option<&'a Value> {
    card.get("capabilities")?
        .get("extensions")?
        .as_array()?
        .iter()
        .find(|e| e.get("uri").and_then(Value::as_str) == Some(uri))?
        .get("params")
}

/// Where to send JSON-RPC and in which binding, as the card prefers: the first of its
/// [`jsonrpc_interfaces`].
pub(crate) fn pick_binding(card: &Value) -> Result<(Binding, String), WireError> {
    jsonrpc_interfaces(card)
        .into_iter()
        .next()
        .ok_or_else(|| WireError::protocol(None, "the agent card offers no JSON-RPC interface"))
}

/// Every JSON-RPC interface a card offers, in its order of preference: the one rule by which
/// the client, the harness, the relay and `ddwire check` choose where to call.
///
/// A2A 1.0 §8.3.1 lists `supportedInterfaces` "in preference order" ("the first entry …
/// represents the preferred interface"), and §8.3.2 has a client "select the first supported
/// transport", preferring earlier entries: so the entries whose `protocolBinding` is JSONRPC,
/// in the card's order (major version 1 is A2A 1.0, 0 is v0.3; an entry without a version is
/// 1.0). A card without such entries is a v0.3 card (0.3 §5.6.3): its main `url` first, when
/// `preferredTransport` is JSONRPC or absent, then its JSONRPC `additionalInterfaces`. A 1.x
/// card's merged legacy `url` is not read, since a2a-sdk 1.3.0 writes it without serving v0.3
/// there.
pub(crate) fn jsonrpc_interfaces(card: &Value) -> Vec<(Binding, String)> {
    fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
        v.get(key).and_then(Value::as_str)
    }
    let list = |key: &str| {
        card.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    };
    let jsonrpc =
        |protocol: Option<&str>| protocol.is_some_and(|p| p.eq_ignore_ascii_case("JSONRPC"));
    let mut offered: Vec<(Binding, &str)> = list("supportedInterfaces")
        .filter(|i| jsonrpc(text(i, "protocolBinding")))
        .filter_map(|i| {
            let version = text(i, "protocolVersion").unwrap_or("1.0");
            Some((Binding::of_version(version)?, text(i, "url")?))
        })
        .collect();
    if offered.is_empty() {
        let transport = text(card, "preferredTransport").unwrap_or("JSONRPC");
        let main = text(card, "url").filter(|_| jsonrpc(Some(transport)));
        let additional = list("additionalInterfaces")
            .filter(|i| jsonrpc(text(i, "transport")))
            .filter_map(|i| text(i, "url"));
        offered = main
            .into_iter()
            .chain(additional)
            .map(|url| (Binding::V03, url))
            .collect();
    }
    let mut out: Vec<(Binding, String)> = Vec::new();
    for (binding, url) in offered {
        if !out.iter().any(|(b, u)| *b == binding && u == url) {
            out.push((binding, url.to_string()));
        }
    }
    out
}

/// How long a client may cache a card, in seconds (`Cache-Control: max-age`). A card changes
/// only when its server restarts with another configuration.
pub(crate) const CARD_MAX_AGE: u32 = 300;

/// A card as served (A2A 1.0 §8.6.1): its bytes, with `Cache-Control: max-age`, a weak `ETag`
/// over them (as a2a-sdk 1.3.0 sends, `W/"<sha256 hex>"`) and `Last-Modified` (when the card
/// was made: the server's start), answering a matching `If-None-Match` with 304 Not Modified
/// (RFC 9110 §13.1.2).
#[derive(Clone, Debug)]
pub(crate) struct ServedCard {
    bytes: Arc<[u8]>,
    etag: String,
    last_modified: String,
}

impl ServedCard {
    /// Serve `card`.
    pub(crate) fn new(card: &Value) -> ServedCard {
        let bytes = card.to_string().into_bytes();
        let digest = Sha256::digest(&bytes);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let now = (crate::time::now_ns() / 1_000_000_000) as i64;
        ServedCard {
            bytes: bytes.into(),
            etag: format!("W/\"{hex}\""),
            last_modified: crate::time::http_date(now),
        }
    }

    /// The card's JSON bytes.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The answer to a `GET` of the card.
    pub(crate) fn respond(&self, request: &Request) -> Response {
        let matches = request.header_joined("if-none-match").is_some_and(|tags| {
            tags.split(',').any(|t| {
                let t = t.trim();
                // Weak comparison (RFC 9110 §8.8.3.2): the W/ prefix does not matter.
                t == "*" || t.trim_start_matches("W/") == self.etag.trim_start_matches("W/")
            })
        });
        let response = if matches {
            Response::empty(304)
        } else {
            Response::bytes(200, "application/json", self.bytes.to_vec())
        };
        response
            .with_header("ETag", &self.etag)
            .with_header("Last-Modified", &self.last_modified)
            .with_header("Cache-Control", &format!("public, max-age={CARD_MAX_AGE}"))
    }
}
