//! The registry: which agents the harness can call, read from their cards.
//!
//! The harness learns about agents from a configuration file listing each agent's base URL
//! (`{"agents": [{"url": …, "name"?: …, "timeout_s"?: …, "key_file"?: …}]}`). It reads each card and rebuilds
//! the agent's spec from the Data Director extension (spec invariant 14). An agent whose card
//! cannot be read, or does not describe an agent this contract admits, is listed as
//! unavailable with the reason; one built against an incompatible contract version is listed as
//! incompatible; the rest still load. Registration is not permission: the policy gate decides.
//!
//! `key_file` names the file holding the secret the harness shares with that agent (relative
//! paths are read from the configuration file's folder; see [`Key::from_file`] for its form):
//! the harness then signs every call to the agent and requires the agent's delegation
//! callbacks to be signed with it ([`crate::wire::sign`]). A key file that cannot be read is a
//! configuration error, never a silently unsigned agent.

use crate::contract::ContractError;
use crate::contract::spec::AgentSpec;
use crate::error::{Error, Result};
use crate::json::python::str_repr;
use crate::wire::a2a::card;
use crate::wire::a2a::client::{A2aClient, DEFAULT_TIMEOUT, Target};
use crate::wire::sign::Key;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The configuration used when none is given: the built-in agents at the ports
/// `ddwire agent NAME` serves them on.
pub const DEFAULT_AGENTS_CONFIG: &str = r#"{
  "agents": [
    {"name": "hello", "url": "http://127.0.0.1:8101"},
    {"name": "stub", "url": "http://127.0.0.1:8104"},
    {"name": "director", "url": "http://127.0.0.1:8106", "timeout_s": 120},
    {"name": "echo", "url": "http://127.0.0.1:8107"},
    {"name": "ungrounded", "url": "http://127.0.0.1:8108"},
    {"name": "failing", "url": "http://127.0.0.1:8109"}
  ]
}
"#;

/// One entry of the agents configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentEntry {
    /// The agent's base URL (its card is read from there).
    pub url: String,
    /// Labels the agent in `unavailable` (default: its URL).
    pub name: Option<String>,
    /// Per-call timeout (default 60 s).
    pub timeout: Option<Duration>,
    /// The file holding the secret shared with this agent; `None`: calls are not signed.
    pub key_file: Option<PathBuf>,
}

/// Read an agents configuration file; a relative `key_file` is read from the file's folder.
pub fn load_config(path: &Path) -> Result<Vec<AgentEntry>> {
    let bytes = std::fs::read(path).map_err(|e| {
        let at = path.display();
        let message = match e.kind() {
            std::io::ErrorKind::NotFound => format!("agent configuration {at} not found"),
            _ => format!("agent configuration {at} cannot be read: {e}"),
        };
        Error::config(at.to_string(), message)
    })?;
    let mut entries = parse_config(&bytes, &path.display().to_string())?;
    let folder = path.parent().unwrap_or(Path::new(""));
    for entry in &mut entries {
        if let Some(key_file) = &mut entry.key_file
            && key_file.is_relative()
        {
            *key_file = folder.join(&*key_file);
        }
    }
    Ok(entries)
}

/// Parse an agents configuration (`where` names it in messages).
pub fn parse_config(bytes: &[u8], at: &str) -> Result<Vec<AgentEntry>> {
    let doc = crate::json::parse(bytes, crate::json::Limits::DEFAULT)
        .map_err(|e| Error::config(at, format!("{at}: {e}")))?;
    let entries = doc
        .get("agents")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::config(at, format!("{at}: expected a top-level \"agents\" list")))?;
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let url = e
                .get("url")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::config(at, format!("{at}: agents[{i}] needs a `url`")))?;
            let timeout = match e.get("timeout_s") {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_f64() {
                    Some(s) if s > 0.0 && s.is_finite() => Some(Duration::from_secs_f64(s)),
                    _ => {
                        return Err(Error::config(
                            at,
                            format!(
                                "{at}: agents[{i}].timeout_s must be a positive number of seconds"
                            ),
                        ));
                    }
                },
            };
            let key_file = match e.get("key_file") {
                None | Some(Value::Null) => None,
                Some(Value::String(f)) if !f.is_empty() => Some(PathBuf::from(f)),
                Some(_) => {
                    return Err(Error::config(
                        at,
                        format!("{at}: agents[{i}].key_file must be the path of a key file"),
                    ));
                }
            };
            Ok(AgentEntry {
                url: url.to_string(),
                name: e.get("name").and_then(Value::as_str).map(str::to_string),
                timeout,
                key_file,
            })
        })
        .collect()
}

/// An agent the harness reaches over A2A.
#[derive(Clone, Debug)]
pub struct RemoteAgent {
    /// The agent's specification, rebuilt from its card.
    pub spec: AgentSpec,
    /// The base URL the configuration names.
    pub url: String,
    /// Where and how to send JSON-RPC, as the card prefers.
    pub target: Target,
    /// The card as fetched.
    pub card: Value,
    /// The per-call timeout.
    pub timeout: Duration,
    /// The secret shared with the agent, under its `agent_id`: calls to it are signed, and its
    /// delegation callbacks must be.
    pub key: Option<Key>,
}

impl RemoteAgent {
    /// Read the card at `url` and rebuild the agent's spec.
    pub fn from_url(client: &A2aClient, url: &str, timeout: Duration) -> Result<RemoteAgent> {
        let card = client.fetch_card(url, timeout)?;
        let spec = card::spec_from_card(&card)?;
        let target = Target::from_card(&card)?;
        Ok(RemoteAgent {
            spec,
            url: url.to_string(),
            target,
            card,
            timeout,
            key: None,
        })
    }

    /// The same agent, sharing `key` with the harness (under the agent's `agent_id`).
    pub fn with_key(mut self, key: &Key) -> Result<RemoteAgent> {
        let key = key
            .with_id(&self.spec.agent_id)
            .map_err(|e| Error::config(&self.spec.agent_id, format!("agent {e}")))?;
        self.key = Some(key);
        Ok(self)
    }
}

/// The agents the harness knows, and those it could not admit.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    agents: BTreeMap<String, RemoteAgent>,
    /// Name (or URL) → why the agent is unavailable.
    pub unavailable: BTreeMap<String, String>,
    /// Name (or URL) → why the agent's contract version cannot be governed.
    pub incompatible: BTreeMap<String, String>,
}

impl Registry {
    /// Read every card a configuration lists. An agent that cannot be reached or admitted is
    /// recorded, not fatal; two agents with one id is a configuration error.
    pub fn from_config(client: &A2aClient, entries: &[AgentEntry]) -> Result<Registry> {
        let mut registry = Registry::default();
        for entry in entries {
            let name = entry.name.clone().unwrap_or_else(|| entry.url.clone());
            // Read before the card, so a bad key stops start-up even if the agent is down.
            let key = match &entry.key_file {
                None => None,
                Some(path) => Some(Key::from_file("agent", path).map_err(|e| {
                    Error::config(
                        path.display().to_string(),
                        format!("the key of agent {name}: {e}"),
                    )
                })?),
            };
            match RemoteAgent::from_url(
                client,
                &entry.url,
                entry.timeout.unwrap_or(DEFAULT_TIMEOUT),
            ) {
                Ok(agent) => match &key {
                    Some(key) => registry.add(agent.with_key(key)?)?,
                    None => registry.add(agent)?,
                },
                Err(e @ Error::Contract(ContractError::Version { .. })) => {
                    registry.incompatible.insert(name, e.to_string());
                }
                // The reference's words for an agent whose card cannot be fetched.
                Err(Error::Wire(e)) => {
                    let reason = format!("cannot read the agent card at {}: {e}", entry.url);
                    registry.unavailable.insert(name, reason);
                }
                Err(e) => {
                    registry.unavailable.insert(name, e.to_string());
                }
            }
        }
        Ok(registry)
    }

    /// Register an agent; an id registered twice is refused.
    pub fn add(&mut self, agent: RemoteAgent) -> Result<()> {
        let id = agent.spec.agent_id.clone();
        if self.agents.contains_key(&id) {
            return Err(Error::config(
                "the agent registry",
                format!("two agents registered as {}", str_repr(&id)),
            ));
        }
        self.agents.insert(id, agent);
        Ok(())
    }

    /// The agent registered as `agent_id`.
    pub fn get(&self, agent_id: &str) -> Option<&RemoteAgent> {
        self.agents.get(agent_id)
    }

    /// Every registered agent, by id.
    pub fn agents(&self) -> impl Iterator<Item = &RemoteAgent> {
        self.agents.values()
    }

    /// Registered ids, sorted.
    pub fn ids(&self) -> Vec<String> {
        self.agents.keys().cloned().collect()
    }

    /// Each agent's description, sorted by id: the manifest.
    pub fn manifest(&self) -> Vec<Value> {
        self.agents.values().map(|a| a.spec.describe()).collect()
    }

    /// `{"agents": manifest, "unavailable": {…}, "incompatible": {…}}`.
    pub fn listing(&self) -> Value {
        json!({ "agents": self.manifest(), "unavailable": self.unavailable, "incompatible": self.incompatible })
    }

    /// The error for an unknown agent: the known ids, then each agent that could not be
    /// admitted and why.
    pub(crate) fn unknown(&self, agent_id: &str) -> Error {
        let pairs = |m: &BTreeMap<String, String>| -> Vec<(String, String)> {
            m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        Error::UnknownAgent {
            agent_id: agent_id.to_string(),
            known: self.ids(),
            unavailable: pairs(&self.unavailable),
            incompatible: pairs(&self.incompatible),
        }
    }

    /// How many agents are registered.
    pub fn len(&self) -> usize {
        self.agents.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_malformed_config_is_a_registry_error() {
        let err = load_config(Path::new("/nonexistent/agents.json")).unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
        let err = parse_config(br#"{"agents": [{"name": "x"}]}"#, "agents.json").unwrap_err();
        assert!(err.to_string().contains("agents[0] needs a `url`"), "{err}");
        let err = parse_config(br#"{"agent": []}"#, "agents.json").unwrap_err();
        assert!(err.to_string().contains("\"agents\" list"), "{err}");
    }

    #[test]
    fn a_config_entry_reads_name_and_timeout() {
        let entries = parse_config(
            br#"{"agents": [{"url": "http://a", "name": "a", "timeout_s": 120}]}"#,
            "x",
        )
        .unwrap();
        assert_eq!(
            entries,
            [AgentEntry {
                url: "http://a".into(),
                name: Some("a".into()),
                timeout: Some(Duration::from_secs(120)),
                key_file: None,
            }]
        );
    }
}
