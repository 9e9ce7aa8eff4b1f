//! The peers a relay forwards to: who they are (id, base URL, role), what their cards say, and
//! how healthy they were when last seen.
//!
//! A peer comes from the peers file (`--peers FILE`) or `POST /peers`, and goes with
//! `DELETE /peers/{id}`. Its card is fetched from `<url>/.well-known/agent-card.json` (else the
//! pre-0.3 `agent.json`) when it is registered, at every health check, and when a forward
//! needs it and none is held; the card's JSON-RPC interfaces say where, and in which binding,
//! calls go. A peer that serves no card at all (404 at both paths) is called at its URL in
//! the caller's binding, as the seed calls its peers.
//!
//! The peers file is JSON, `{"peers": [{"id": "A", "url": "http://…", "role": "hub"}, …]}` or
//! the bare list. Roles are `hub` and `leaf` (the default); the seed's `orchestrator` is
//! read as `hub`, and its `planner`, `validator`, `worker` and `deployer` as `leaf`.

use super::RelayError;
use crate::text::Unpoison;
use crate::wire::WireError;
use crate::wire::a2a::Binding;
use crate::wire::a2a::card::jsonrpc_interfaces;
use crate::wire::a2a::health::CardCheck;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The most peers a relay holds; one more is refused (`POST /peers` answers 409).
pub(crate) const MAX_PEERS: usize = 1_024;
/// The longest peer id.
pub(crate) const MAX_ID_LEN: usize = 64;

/// A peer's place in a star topology.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// The center: it may address every peer, and every peer may address it (the seed's
    /// `orchestrator`).
    Hub,
    /// Any other peer: under a star it may address a hub only (the seed's workers).
    #[default]
    Leaf,
}

impl Role {
    /// `hub` or `leaf`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::Hub => "hub",
            Role::Leaf => "leaf",
        }
    }

    /// The role spelled `s`: `hub` or `leaf`, or one of the seed's role names.
    pub(crate) fn parse(s: &str) -> Option<Role> {
        match s {
            "hub" | "orchestrator" => Some(Role::Hub),
            "leaf" | "worker" | "planner" | "validator" | "deployer" => Some(Role::Leaf),
            _ => None,
        }
    }
}

/// One peer as configured: its id, its base URL (where its card is), its role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerSpec {
    /// The id callers name it by (message metadata `agent.target`, `/peers/{id}/a2a`): 1 to 64
    /// characters of `A-Z a-z 0-9 . _ -`.
    pub(crate) id: String,
    /// Its base URL, `http(s)://host:port[/path]`: its card is at
    /// `<url>/.well-known/agent-card.json`.
    pub(crate) url: String,
    /// Its role in a star topology.
    pub(crate) role: Role,
}

impl PeerSpec {
    /// A peer, checked: a well-formed id and an `http://` or `https://` URL (`https` only in
    /// a build with TLS) of a scheme, a host, an optional port and an optional path, nothing
    /// else (RFC 3986 §3): no credentials (`user:pass@`, which would be stored, listed and
    /// sent), no query and no fragment (a query would swallow the card path the relay
    /// appends: `…?x=/.well-known/agent-card.json`).
    pub fn new(id: &str, url: &str, role: Role) -> Result<PeerSpec, RelayError> {
        check_id(id)?;
        let url = url.trim().trim_end_matches('/');
        let refuse = |why: String| Err(RelayError::peer(id, format!("url {url:?}{why}")));
        let rest = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
            (Some(rest), _) => rest,
            (None, Some(_)) if !cfg!(feature = "tls") => {
                return refuse(format!(": {}", crate::wire::tls::NOT_BUILT));
            }
            (None, Some(rest)) => rest,
            (None, None) => return refuse(" is not an http:// or https:// URL".into()),
        };
        let bad = |why: &str| {
            refuse(format!(
                " {why}: a peer URL is scheme://host[:port][/path] only"
            ))
        };
        if url
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '\\')
        {
            return bad("holds a space, a control character or a backslash");
        }
        if url.contains('?') || url.contains('#') {
            return bad("has a query or a fragment");
        }
        let authority = rest.split('/').next().unwrap_or_default();
        if authority.contains('@') {
            return bad("carries credentials (user:password@)");
        }
        let Some((host, port)) = split_authority(authority) else {
            return bad("names no host, or a malformed one");
        };
        if host.is_empty() || rest.starts_with('/') {
            return refuse(" names no host".into());
        }
        if port.is_some_and(|p| p.parse::<u16>().map_or(true, |p| p == 0)) {
            return bad("has a port that is not 1 to 65535");
        }
        Ok(PeerSpec {
            id: id.to_string(),
            url: url.to_string(),
            role,
        })
    }

    /// The host of the peer's URL, without brackets, and its port (the scheme's default if
    /// none is given).
    pub(crate) fn host_port(&self) -> (String, u16) {
        let (rest, default) = match self.url.strip_prefix("https://") {
            Some(rest) => (rest, 443),
            None => (self.url.strip_prefix("http://").unwrap_or(&self.url), 80),
        };
        let authority = rest.split('/').next().unwrap_or_default();
        let (host, port) = split_authority(authority).unwrap_or((authority, None));
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = port.and_then(|p| p.parse().ok()).unwrap_or(default);
        (host.to_ascii_lowercase(), port)
    }

    /// Refuse the peer now when its host is an address the `egress` policy refuses (a host
    /// name is checked when it is resolved, at each connection).
    pub(crate) fn check_destination(
        &self,
        egress: &crate::wire::http::egress::Egress,
    ) -> Result<(), RelayError> {
        let (host, _) = self.host_port();
        match host.parse::<std::net::IpAddr>() {
            Ok(ip) => egress
                .check(&host, ip)
                .map_err(|why| RelayError::peer(&self.id, format!("url {:?}: {why}", self.url))),
            Err(_) => Ok(()),
        }
    }

    /// A peer from its JSON (`{"id", "url", "role"?}`), as the peers file and `POST /peers`
    /// give it.
    pub(crate) fn from_json(v: &Value) -> Result<PeerSpec, RelayError> {
        let Some(obj) = v.as_object() else {
            return Err(RelayError::peer(
                "?",
                "a peer must be a JSON object {\"id\", \"url\", \"role\"}",
            ));
        };
        let id = match obj.get("id") {
            Some(Value::String(s)) => s.as_str(),
            _ => return Err(RelayError::peer("?", "\"id\" must be a string")),
        };
        let url = match obj.get("url") {
            Some(Value::String(s)) => s.as_str(),
            _ => return Err(RelayError::peer(id, "\"url\" must be a string")),
        };
        let role = match obj.get("role") {
            None | Some(Value::Null) => Role::Leaf,
            Some(Value::String(s)) => Role::parse(s).ok_or_else(|| {
                RelayError::peer(
                    id,
                    format!("role {s:?} is not one of hub, leaf (or the seed's orchestrator, worker, planner, validator, deployer)"),
                )
            })?,
            Some(_) => return Err(RelayError::peer(id, "\"role\" must be a string")),
        };
        PeerSpec::new(id, url, role)
    }

    /// Read a peers file's bytes: `{"peers": [...]}` or a bare list of peers. `source` names
    /// the file in errors.
    pub(crate) fn parse_file(bytes: &[u8], source: &str) -> Result<Vec<PeerSpec>, RelayError> {
        let bad = |reason: String| RelayError::PeersFile {
            source: source.to_string(),
            reason,
        };
        let doc = crate::json::parse(bytes, crate::json::Limits::DEFAULT)
            .map_err(|e| bad(format!("not JSON: {e}")))?;
        let list = match doc {
            Value::Array(list) => Some(list),
            Value::Object(mut obj) => match obj.remove("peers") {
                Some(Value::Array(list)) => Some(list),
                _ => None,
            },
            _ => None,
        }
        .ok_or_else(|| bad("expected {\"peers\": [...]} or a list of peers".into()))?;
        let mut peers: Vec<PeerSpec> = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let peer = PeerSpec::from_json(item).map_err(|e| bad(format!("peers[{i}]: {e}")))?;
            if peers.iter().any(|p| p.id == peer.id) {
                let id = &peer.id;
                return Err(bad(format!("peers[{i}]: the id {id:?} is listed twice")));
            }
            peers.push(peer);
        }
        if peers.len() > MAX_PEERS {
            let n = peers.len();
            return Err(bad(format!(
                "{n} peers, more than the limit of {MAX_PEERS}"
            )));
        }
        Ok(peers)
    }
}

/// Whether `id` is a peer id: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with a dot (it
/// is a path segment of `/peers/{id}/a2a`).
pub(crate) fn check_id(id: &str) -> Result<(), RelayError> {
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return Err(RelayError::peer(
            id,
            format!("id {id:?} must be 1 to {MAX_ID_LEN} characters"),
        ));
    }
    if id.starts_with('.')
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(RelayError::peer(
            id,
            format!("id {id:?} may hold only A-Z a-z 0-9 . _ - and must not start with a dot"),
        ));
    }
    Ok(())
}

/// How a peer looked when last checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum HealthState {
    /// Not checked yet.
    #[default]
    Unknown,
    /// Its card answered (or a forward to it did).
    Up,
    /// It could not be reached, or its card is broken; the detail says why.
    Down,
}

impl HealthState {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            HealthState::Unknown => "unknown",
            HealthState::Up => "up",
            HealthState::Down => "down",
        }
    }
}

/// A peer's last health.
#[derive(Clone, Debug, Default)]
pub(crate) struct Health {
    pub(crate) state: HealthState,
    /// When it was last checked (RFC 3339), if ever.
    pub(crate) checked_at: Option<String>,
    /// Why it is down.
    pub(crate) detail: Option<String>,
    /// How long the last check took, in milliseconds.
    pub(crate) latency_ms: Option<u64>,
}

/// Where a peer takes JSON-RPC, as its card says (or its URL, when it has no card).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Endpoints {
    /// No card fetched yet.
    Unknown,
    /// The card's JSON-RPC interfaces, in its order of preference.
    Card(Vec<(Binding, String)>),
    /// The peer serves no card: its URL takes JSON-RPC in whatever binding it is called.
    NoCard,
}

impl Endpoints {
    /// The URL to call in `binding`, and the binding to call it in: `binding` itself when the
    /// peer offers it, else the peer's preferred one (the relay translates). `None` while
    /// unknown.
    pub(crate) fn pick(&self, binding: Binding, base_url: &str) -> Option<(Binding, String)> {
        match self {
            Endpoints::Unknown => None,
            Endpoints::NoCard => Some((binding, base_url.to_string())),
            Endpoints::Card(list) => list
                .iter()
                .find(|(b, _)| *b == binding)
                .or_else(|| list.first())
                .cloned(),
        }
    }
}

/// One registered peer.
#[derive(Clone, Debug)]
pub(crate) struct Peer {
    pub(crate) spec: PeerSpec,
    pub(crate) card: Option<Arc<Value>>,
    /// Why the card could not be had, when it could not.
    pub(crate) card_error: Option<String>,
    pub(crate) endpoints: Endpoints,
    pub(crate) health: Health,
}

impl Peer {
    fn new(spec: PeerSpec) -> Peer {
        Peer {
            spec,
            card: None,
            card_error: None,
            endpoints: Endpoints::Unknown,
            health: Health::default(),
        }
    }

    /// This peer as `GET /peers` shows it.
    pub(crate) fn view(&self, relay_url: &str) -> Value {
        let interfaces: Vec<Value> = match &self.endpoints {
            Endpoints::Card(list) => list
                .iter()
                .map(|(b, url)| json!({"binding": b.version(), "url": url}))
                .collect(),
            _ => Vec::new(),
        };
        json!({
            "id": self.spec.id,
            "url": self.spec.url,
            "role": self.spec.role.as_str(),
            "relay_url": format!("{}/peers/{}", relay_url.trim_end_matches('/'), self.spec.id),
            "health": {
                "state": self.health.state.as_str(),
                "checked_at": self.health.checked_at,
                "detail": self.health.detail,
                "latency_ms": self.health.latency_ms,
            },
            "interfaces": interfaces,
            "card": self.card.as_deref(),
            "card_error": self.card_error,
        })
    }
}

/// An authority's host (IPv6 in brackets) and port, or `None` when it is malformed.
fn split_authority(authority: &str) -> Option<(&str, Option<&str>)> {
    if authority.starts_with('[') {
        let end = authority.find(']')?;
        let host = &authority[..=end];
        host[1..end].parse::<std::net::Ipv6Addr>().ok()?;
        return match &authority[end + 1..] {
            "" => Some((host, None)),
            tail => Some((host, Some(tail.strip_prefix(':')?))),
        };
    }
    let (host, port) = match authority.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    };
    let valid = host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b));
    valid.then_some((host, port))
}

/// The registry of peers: a map under a lock, each entry a cheap clone.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    peers: RwLock<BTreeMap<String, Peer>>,
}

/// Whether a registration added a peer or replaced one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Registered {
    Added,
    Replaced,
}

impl Registry {
    pub(crate) fn new(specs: Vec<PeerSpec>) -> Registry {
        let peers = specs.into_iter().map(|s| (s.id.clone(), Peer::new(s)));
        Registry {
            peers: RwLock::new(peers.collect()),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Peer>> {
        self.peers.read().unpoisoned()
    }

    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<String, Peer>> {
        self.peers.write().unpoisoned()
    }

    /// Add `spec`, or replace the peer of the same id (forgetting its card and health when its
    /// URL changed). Refused beyond [`MAX_PEERS`].
    pub(crate) fn register(&self, spec: PeerSpec) -> Result<Registered, RelayError> {
        let mut peers = self.write();
        let full = peers.len() >= MAX_PEERS;
        match peers.get_mut(&spec.id) {
            Some(peer) if peer.spec.url == spec.url => {
                peer.spec = spec;
                Ok(Registered::Replaced)
            }
            Some(peer) => {
                *peer = Peer::new(spec);
                Ok(Registered::Replaced)
            }
            None if full => Err(RelayError::peer(
                &spec.id,
                format!("the relay holds its limit of {MAX_PEERS} peers"),
            )),
            None => {
                peers.insert(spec.id.clone(), Peer::new(spec));
                Ok(Registered::Added)
            }
        }
    }

    /// Remove a peer; whether it was there.
    pub(crate) fn remove(&self, id: &str) -> bool {
        self.write().remove(id).is_some()
    }

    /// A copy of one peer.
    pub(crate) fn get(&self, id: &str) -> Option<Peer> {
        self.read().get(id).cloned()
    }

    /// A copy of every peer, by id.
    pub(crate) fn all(&self) -> Vec<Peer> {
        self.read().values().cloned().collect()
    }

    /// Every peer id.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// The ids of the hubs.
    pub(crate) fn hubs(&self) -> Vec<String> {
        self.read()
            .values()
            .filter(|p| p.spec.role == Role::Hub)
            .map(|p| p.spec.id.clone())
            .collect()
    }

    /// The role of a registered peer.
    pub(crate) fn role(&self, id: &str) -> Option<Role> {
        self.read().get(id).map(|p| p.spec.role)
    }

    /// Record what reading `url`'s card gave (for the peer still registered at that URL):
    /// the card and its interfaces, no card at all (404s), or why it failed.
    pub(crate) fn record_card(&self, id: &str, url: &str, check: &CardCheck) {
        let mut peers = self.write();
        let Some(peer) = peers.get_mut(id).filter(|p| p.spec.url == url) else {
            return;
        };
        peer.health.checked_at = Some(check.checked_at.clone());
        peer.health.latency_ms = Some(check.latency_ms);
        match &check.card {
            Ok(card) => {
                let interfaces = jsonrpc_interfaces(card);
                if interfaces.is_empty() {
                    peer.health.state = HealthState::Down;
                    let reason = "its card offers no JSON-RPC interface".to_string();
                    peer.health.detail = Some(reason.clone());
                    peer.card_error = Some(reason);
                    peer.endpoints = Endpoints::Unknown;
                } else {
                    peer.health.state = HealthState::Up;
                    peer.health.detail = None;
                    peer.card_error = None;
                    peer.endpoints = Endpoints::Card(interfaces);
                }
                peer.card = Some(Arc::new(card.clone()));
            }
            Err(WireError::HttpStatus { status: 404, .. }) => {
                // Reachable, but no card: called at its URL, as the seed calls its peers.
                peer.health.state = HealthState::Up;
                peer.health.detail = Some("serves no agent card".into());
                peer.card = None;
                peer.card_error = Some("no agent card at either well-known path (404)".into());
                peer.endpoints = Endpoints::NoCard;
            }
            Err(e) => {
                peer.health.state = HealthState::Down;
                peer.health.detail = Some(e.to_string());
                peer.card_error = Some(e.to_string());
            }
        }
    }

    /// Record how a forward to `id` went, when it says something about the peer's health: an
    /// answer means up, nothing listening means down.
    pub(crate) fn record_forward(&self, id: &str, reached: Result<(), &WireError>) {
        let mut peers = self.write();
        let Some(peer) = peers.get_mut(id) else {
            return;
        };
        match reached {
            Ok(()) => {
                peer.health.state = HealthState::Up;
                peer.health.detail = None;
            }
            Err(e @ (WireError::Connect { .. } | WireError::Tls { .. })) => {
                peer.health.state = HealthState::Down;
                peer.health.detail = Some(e.to_string());
            }
            Err(_) => return,
        }
        peer.health.checked_at = Some(crate::time::now_rfc3339());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peers_file_takes_an_object_or_a_list_and_reads_the_seeds_roles() {
        let object =
            br#"{"peers": [{"id": "hub", "url": "http://127.0.0.1:1/", "role": "orchestrator"},
                                     {"id": "w1", "url": "http://127.0.0.1:2", "role": "worker"},
                                     {"id": "w2", "url": "http://127.0.0.1:3"}]}"#;
        let peers = PeerSpec::parse_file(object, "peers.json").unwrap();
        assert_eq!(
            peers
                .iter()
                .map(|p| (p.id.as_str(), p.url.as_str(), p.role))
                .collect::<Vec<_>>(),
            [
                ("hub", "http://127.0.0.1:1", Role::Hub),
                ("w1", "http://127.0.0.1:2", Role::Leaf),
                ("w2", "http://127.0.0.1:3", Role::Leaf)
            ]
        );
        let list = br#"[{"id": "a", "url": "http://a.test", "role": "hub"}]"#;
        assert_eq!(PeerSpec::parse_file(list, "p").unwrap()[0].role, Role::Hub);
    }

    #[test]
    fn a_bad_peer_entry_is_refused_naming_the_entry_and_why() {
        let cases: [(&[u8], &str); 7] = [
            (b"{", "not JSON"),
            (br#"{"agents": []}"#, "expected {\"peers\""),
            (
                br#"[{"url": "http://a"}]"#,
                "peers[0]: peer \"?\": \"id\" must be a string",
            ),
            (br#"[{"id": "a/b", "url": "http://a"}]"#, "may hold only"),
            (
                br#"[{"id": "a", "url": "ftp://a"}]"#,
                "not an http:// or https:// URL",
            ),
            (
                br#"[{"id": "a", "url": "http://a", "role": "boss"}]"#,
                "role \"boss\"",
            ),
            (
                br#"[{"id": "a", "url": "http://a"}, {"id": "a", "url": "http://b"}]"#,
                "listed twice",
            ),
        ];
        for (bytes, expected) in cases {
            let err = PeerSpec::parse_file(bytes, "peers.json")
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{err}");
            assert!(err.contains("peers.json"), "{err}");
        }
    }

    #[test]
    fn a_peer_url_is_scheme_host_port_and_path_only() {
        for ok in [
            "http://127.0.0.1:8101",
            "http://agent.example/base/",
            "https://[::1]:8443/x",
        ] {
            if ok.starts_with("https") && !cfg!(feature = "tls") {
                continue;
            }
            assert!(PeerSpec::new("a", ok, Role::Leaf).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("http://127.0.0.1:1/m/secret?x=", "query"),
            ("http://a.test/#frag", "fragment"),
            ("http://user:pass@a.test", "credentials"),
            ("http://a.test:0", "port"),
            ("http://a.test:99999", "port"),
            ("http://a.test:x", "port"),
            ("http://a b", "space"),
            ("http://[::1", "malformed"),
            ("http://", "URL"),
        ] {
            let err = PeerSpec::new("a", bad, Role::Leaf).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn a_peer_with_no_card_is_called_at_its_url_in_the_callers_binding() {
        let registry = Registry::new(vec![
            PeerSpec::new("a", "http://a.test", Role::Leaf).unwrap(),
        ]);
        assert_eq!(
            registry
                .get("a")
                .unwrap()
                .endpoints
                .pick(Binding::V10, "http://a.test"),
            None
        );
        let missing = CardCheck {
            card: Err(WireError::HttpStatus {
                url: "http://a.test/.well-known/agent.json".into(),
                status: 404,
                body: String::new(),
            }),
            checked_at: crate::time::now_rfc3339(),
            latency_ms: 1,
        };
        registry.record_card("a", "http://a.test", &missing);
        let peer = registry.get("a").unwrap();
        assert_eq!(peer.health.state, HealthState::Up);
        assert_eq!(
            peer.endpoints.pick(Binding::V03, &peer.spec.url),
            Some((Binding::V03, "http://a.test".to_string()))
        );
    }

    #[test]
    fn a_peer_in_the_callers_binding_is_called_in_it_else_in_its_preferred_one() {
        let endpoints = Endpoints::Card(vec![
            (Binding::V10, "http://a/v1".into()),
            (Binding::V03, "http://a/v03".into()),
        ]);
        assert_eq!(
            endpoints.pick(Binding::V03, "http://a").unwrap().1,
            "http://a/v03"
        );
        let only03 = Endpoints::Card(vec![(Binding::V03, "http://a/v03".into())]);
        assert_eq!(
            only03.pick(Binding::V10, "http://a"),
            Some((Binding::V03, "http://a/v03".into()))
        );
    }
}
