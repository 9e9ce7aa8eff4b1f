//! The registry: which agents the harness can call, read from their cards.
//!
//! The harness learns about agents from a configuration file listing each agent's base URL
//! (`{"agents": [{"url": …, "name"?: …, "timeout_s"?: …, "key_file"?: …}]}`). It reads each card and rebuilds
//! the agent's spec from the Data Director extension (a card without it is refused at registration). An agent whose card
//! cannot be read, or does not describe an agent this contract admits, is listed as
//! unavailable with the reason; one built against an incompatible contract version is listed as
//! incompatible; the rest still load. Registration is not permission: the policy gate decides.
//!
//! `key_file` names the file holding the secret the harness shares with that agent (relative
//! paths are read from the configuration file's folder; see `Key::from_file` for its form):
//! the harness then signs every call to the agent and requires the agent's delegation
//! callbacks to be signed with it ([`crate::wire::sign`]). A key file that cannot be read is a
//! configuration error, never a silently unsigned agent.

use crate::contract::ContractError;
use crate::contract::spec::AgentSpec;
use crate::harness::{HarnessError, Result};
use crate::json::python::str_repr;
use crate::text::Unpoison;
use crate::wire::a2a::card;
use crate::wire::a2a::client::{A2aClient, DEFAULT_TIMEOUT, Target};
use crate::wire::a2a::health;
use crate::wire::sign::Key;
use crate::wire::tls::KeyPair;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The configuration used when none is given: the built-in agents at the ports
/// `ddwire agent NAME` serves them on.
pub(crate) const DEFAULT_AGENTS_CONFIG: &str = r#"{
  "agents": [
    {"name": "hello", "url": "http://127.0.0.1:8101"},
    {"name": "stub", "url": "http://127.0.0.1:8104"},
    {"name": "director", "url": "http://127.0.0.1:8106", "timeout_s": 120},
    {"name": "echo", "url": "http://127.0.0.1:8107"},
    {"name": "ungrounded", "url": "http://127.0.0.1:8108"},
    {"name": "failing", "url": "http://127.0.0.1:8109"},
    {"name": "confirm", "url": "http://127.0.0.1:8110"}
  ]
}
"#;

/// One entry of the agents configuration.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AgentEntry {
    /// The agent's base URL (its card is read from there).
    pub(crate) url: String,
    /// Labels the agent in `unavailable` (default: its URL).
    pub(crate) name: Option<String>,
    /// Per-call timeout (default 60 s).
    pub(crate) timeout: Option<Duration>,
    /// The file holding the secret shared with this agent; `None`: calls are not signed.
    pub(crate) key_file: Option<PathBuf>,
    /// The client certificate presented to this agent (`tls_client_cert`, `tls_client_key`),
    /// instead of the harness's own.
    pub(crate) tls_client: Option<KeyPair>,
}

/// Read an agents configuration file; a relative `key_file` is read from the file's folder.
pub(crate) fn load_config(path: &Path) -> Result<Vec<AgentEntry>> {
    let bytes = std::fs::read(path).map_err(|e| {
        let at = path.display();
        let message = match e.kind() {
            std::io::ErrorKind::NotFound => format!("agent configuration {at} not found"),
            _ => format!("agent configuration {at} cannot be read: {e}"),
        };
        HarnessError::config(at.to_string(), message)
    })?;
    let mut entries = parse_config(&bytes, &path.display().to_string())?;
    let folder = path.parent().unwrap_or(Path::new(""));
    for entry in &mut entries {
        let files = entry.key_file.iter_mut().chain(
            entry
                .tls_client
                .iter_mut()
                .flat_map(|p| [&mut p.cert, &mut p.key]),
        );
        for file in files.filter(|f| f.is_relative()) {
            *file = folder.join(&*file);
        }
    }
    Ok(entries)
}

/// Parse an agents configuration (`where` names it in messages).
pub(crate) fn parse_config(bytes: &[u8], at: &str) -> Result<Vec<AgentEntry>> {
    let doc = crate::json::parse(bytes, crate::json::Limits::DEFAULT)
        .map_err(|e| HarnessError::config(at, format!("{at}: {e}")))?;
    let entries = doc.get("agents").and_then(Value::as_array).ok_or_else(|| {
        HarnessError::config(at, format!("{at}: expected a top-level \"agents\" list"))
    })?;
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let url = e
                .get("url")
                .and_then(Value::as_str)
                .ok_or_else(|| HarnessError::config(at, format!("{at}: agents[{i}] needs a `url`")))?;
            let timeout = match e.get("timeout_s") {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_f64() {
                    Some(s) if s > 0.0 && s.is_finite() => Some(Duration::from_secs_f64(s)),
                    _ => {
                        return Err(HarnessError::config(
                            at,
                            format!(
                                "{at}: agents[{i}].timeout_s must be a positive number of seconds"
                            ),
                        ));
                    }
                },
            };
            let file = |name: &str, what: &str| match e.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(f)) if !f.is_empty() => Ok(Some(PathBuf::from(f))),
                Some(_) => Err(HarnessError::config(
                    at,
                    format!("{at}: agents[{i}].{name} must be the path of {what}"),
                )),
            };
            let key_file = file("key_file", "a key file")?;
            let pem = |name: &str| file(name, "a PEM file");
            let tls_client = match (pem("tls_client_cert")?, pem("tls_client_key")?) {
                (Some(cert), Some(key)) => Some(KeyPair { cert, key }),
                (None, None) => None,
                _ => {
                    return Err(HarnessError::config(
                        at,
                        format!(
                            "{at}: agents[{i}] needs both tls_client_cert and tls_client_key, or neither"
                        ),
                    ));
                }
            };
            Ok(AgentEntry {
                url: url.to_string(),
                name: e.get("name").and_then(Value::as_str).map(str::to_string),
                timeout,
                key_file,
                tls_client,
            })
        })
        .collect()
}

/// An agent the harness reaches over A2A.
#[derive(Clone, Debug)]
pub struct RemoteAgent {
    /// The agent's specification, rebuilt from its card.
    pub(crate) spec: AgentSpec,
    /// The base URL the configuration names.
    pub(crate) url: String,
    /// Where and how to send JSON-RPC, as the card prefers.
    pub(crate) target: Target,
    /// The card as fetched.
    pub(crate) card: Value,
    /// The per-call timeout.
    pub(crate) timeout: Duration,
    /// The secret shared with the agent, under its `agent_id`: calls to it are signed, and its
    /// delegation callbacks must be.
    pub(crate) key: Option<Key>,
    /// The client calls to this agent go through, when it is not the harness's own (the
    /// agent's entry names a client certificate of its own).
    pub(crate) client: Option<A2aClient>,
}

impl RemoteAgent {
    /// Read the card at `url` and rebuild the agent's spec.
    pub fn from_url(client: &A2aClient, url: &str, timeout: Duration) -> Result<RemoteAgent> {
        RemoteAgent::from_card(client.fetch_card(url, timeout)?, url, timeout)
    }

    /// The agent `card`, read from `url`, describes.
    fn from_card(card: Value, url: &str, timeout: Duration) -> Result<RemoteAgent> {
        Ok(RemoteAgent {
            spec: card::spec_from_card(&card)?,
            target: Target::from_card(&card)?,
            url: url.to_string(),
            card,
            timeout,
            key: None,
            client: None,
        })
    }

    /// The same agent, sharing `key` with the harness (under the agent's `agent_id`).
    pub fn with_key(mut self, key: &Key) -> Result<RemoteAgent> {
        let key = key
            .with_id(&self.spec.agent_id)
            .map_err(|e| HarnessError::config(&self.spec.agent_id, format!("agent {e}")))?;
        self.key = Some(key);
        Ok(self)
    }
}

/// The longest a refresh waits for one card: a refresh may run inline with an invocation
/// that names an unknown id, so a silent host must not hold it for a whole call timeout.
pub(crate) const CARD_TIMEOUT: Duration = Duration::from_secs(10);
/// The first wait before an unavailable agent is fetched again; it doubles on each attempt.
pub(crate) const RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between attempts while an agent is unavailable.
pub(crate) const RETRY_MAX: Duration = Duration::from_secs(30);
/// How often every card is read again once all agents are available, so a changed card is
/// checked again.
pub(crate) const RECHECK_EVERY: Duration = Duration::from_secs(60);
/// An invocation naming an unknown id refreshes at once, but not more often than this: a
/// stream of unknown ids cannot turn into a stream of card fetches.
pub(crate) const REFRESH_AT_MOST_EVERY: Duration = Duration::from_secs(1);

/// The agents the harness knows, and those it could not admit.
///
/// A registry read from a configuration (`Registry::from_config`) can refresh: it reads
/// every configured card again (`Registry::refresh`), at once when an invocation names an
/// unknown id (`Registry::get_or_refresh`), and in the background with bounded backoff
/// (`Registry::refresh_in_background`). A refresh admits agents that have come up, checks a
/// card that changed again (and drops the agent if its new card is no longer admissible),
/// and keeps an admitted agent whose card cannot be read at the moment: a brief outage does
/// not unregister an agent, a call to it fails as any call to a down agent does.
///
/// Clones share one registry: a refresh through one is seen through all.
#[derive(Clone, Default)]
pub struct Registry {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: RwLock<State>,
    /// Where the agents come from: empty for a registry built by hand ([`Registry::add`]).
    sources: RwLock<Arc<Vec<Source>>>,
    /// The agents configuration file the sources were read from, read again by
    /// [`Registry::reload`].
    config_path: Option<PathBuf>,
    client: Option<A2aClient>,
    /// Held while a refresh runs.
    refreshing: Mutex<Clock>,
    /// Bumped whenever what the registry holds changes (see [`Registry::generation`]).
    generation: AtomicU64,
}

/// When refreshes ran, for coalescing those asked for by unknown ids.
#[derive(Default)]
struct Clock {
    /// When the last refresh started.
    started: Option<Instant>,
    /// When the last refresh asked for by an unknown id started.
    on_demand: Option<Instant>,
}

struct Source {
    entry: AgentEntry,
    name: String,
    key: Option<Key>,
    /// A client of the agent's own (its own client certificate), when the entry names one.
    client: Option<A2aClient>,
}

#[derive(Clone, Debug, Default)]
struct State {
    /// Shared with the runs using them: a lookup copies a pointer, not a card.
    agents: BTreeMap<String, Arc<RemoteAgent>>,
    /// Name (or URL) → why the agent is unavailable.
    unavailable: BTreeMap<String, String>,
    /// Name (or URL) → why the agent cannot be governed (contract version, no extension).
    incompatible: BTreeMap<String, String>,
    /// The agent id each source admitted, by source index.
    admitted: BTreeMap<usize, String>,
}

impl State {
    /// The state after a refresh that read `admissions` of `sources`, in order, from this one,
    /// and the ids two sources both claimed (the second source is then unavailable). An agent
    /// admitted before and unreadable now is kept, and so is every agent added by hand.
    fn next(&self, sources: &[Source], admissions: Vec<Admission>) -> (State, Vec<String>) {
        let before = self;
        let mut next = State::default();
        let mut duplicates = Vec::new();
        for (i, (source, admission)) in sources.iter().zip(admissions).enumerate() {
            let kept = before.admitted.get(&i).and_then(|id| before.agents.get(id));
            let agent = match (admission, kept) {
                (Admission::Agent(agent), _) => Arc::new(*agent),
                // Admitted before and unreadable now: keep it (see the type's docs).
                (Admission::Unavailable(_), Some(kept)) => kept.clone(),
                (Admission::Unavailable(reason), None) => {
                    next.unavailable.insert(source.name.clone(), reason);
                    continue;
                }
                (Admission::Incompatible(reason), _) => {
                    next.incompatible.insert(source.name.clone(), reason);
                    continue;
                }
            };
            let id = agent.spec.agent_id.clone();
            if next.agents.contains_key(&id) {
                next.unavailable.insert(
                    source.name.clone(),
                    format!(
                        "another configured agent is registered as {}",
                        str_repr(&id)
                    ),
                );
                duplicates.push(id);
                continue;
            }
            next.admitted.insert(i, id.clone());
            next.agents.insert(id, agent);
        }
        // Agents added by hand stay.
        for (id, agent) in &before.agents {
            if !before.admitted.values().any(|a| a == id) {
                next.agents
                    .entry(id.clone())
                    .or_insert_with(|| agent.clone());
            }
        }
        (next, duplicates)
    }

    /// Whether two states hold the same agents (by card) and the same refusals.
    fn same_as(&self, other: &State) -> bool {
        self.unavailable == other.unavailable
            && self.incompatible == other.incompatible
            && self.agents.len() == other.agents.len()
            && self
                .agents
                .iter()
                .all(|(id, a)| other.agents.get(id).is_some_and(|b| b.card == a.card))
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.read();
        f.debug_struct("Registry")
            .field("agents", &state.agents.keys().collect::<Vec<_>>())
            .field("unavailable", &state.unavailable)
            .field("incompatible", &state.incompatible)
            .finish()
    }
}

/// What a refresh found: the ids it admitted or whose card changed, and what is still not
/// admitted.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub(crate) struct Refreshed {
    /// Agents admitted by this refresh.
    pub(crate) added: Vec<String>,
    /// Agents whose card changed and was checked again.
    pub(crate) changed: Vec<String>,
    /// Agents no longer admitted (their new card was refused).
    pub(crate) removed: Vec<String>,
    /// Configured agents still unavailable.
    pub(crate) unavailable: usize,
    /// Configured agents still incompatible.
    pub(crate) incompatible: usize,
}

impl Refreshed {
    /// What changed from `before` to `next`.
    fn between(before: &State, next: &State) -> Refreshed {
        let only_in = |a: &State, b: &State| {
            let ids = a.agents.keys().filter(|id| !b.agents.contains_key(*id));
            ids.cloned().collect()
        };
        Refreshed {
            added: only_in(next, before),
            changed: next
                .agents
                .iter()
                .filter(|(id, a)| before.agents.get(*id).is_some_and(|b| b.card != a.card))
                .map(|(id, _)| id.clone())
                .collect(),
            removed: only_in(before, next),
            unavailable: next.unavailable.len(),
            incompatible: next.incompatible.len(),
        }
    }
}

/// How one configured agent reads now.
enum Admission {
    Agent(Box<RemoteAgent>),
    Unavailable(String),
    Incompatible(String),
}

/// The wait before background attempt `attempt` (from 0) while an agent is unavailable:
/// [`RETRY_FIRST`] doubling, never more than [`RETRY_MAX`].
fn retry_wait(attempt: u32) -> Duration {
    RETRY_FIRST
        .saturating_mul(1u32 << attempt.min(16))
        .min(RETRY_MAX)
}

/// What to add to a card that lacks the Data Director extension (such a card is refused at
/// registration).
fn missing_extension_reason(url: &str) -> String {
    format!(
        "add the Data Director extension: the card at {url} does not declare {}. Add it to the \
         card's capabilities.extensions as {{\"uri\": \"{}\", \"required\": true, \"params\": \
         <the agent's description: agent_id, version, contract_version, action_class, \
         input_schema, output_class, grounding_mode, ...>}} (a Python a2a-sdk example is in \
         vendor-notes/a2a.md, \"Making an a2a-sdk agent Data Director compatible\")",
        card::EXTENSION_URI,
        card::EXTENSION_URI
    )
}

/// Read the card at `source`'s URL (within `card_timeout`) and judge it.
fn admit(client: &A2aClient, source: &Source, card_timeout: Duration) -> Admission {
    let url = &source.entry.url;
    let client = source.client.as_ref().unwrap_or(client);
    let card = match client.fetch_card(url, card_timeout) {
        Ok(card) => card,
        // The reference's words for an agent whose card cannot be fetched.
        Err(e) => {
            return Admission::Unavailable(format!("cannot read the agent card at {url}: {e}"));
        }
    };
    if card::extension_params(&card, card::EXTENSION_URI).is_none() {
        return Admission::Incompatible(missing_extension_reason(url));
    }
    let timeout = source.entry.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let agent = RemoteAgent::from_card(card, url, timeout).and_then(|mut agent| {
        agent.client = source.client.clone();
        match &source.key {
            Some(key) => agent.with_key(key),
            None => Ok(agent),
        }
    });
    match agent {
        Ok(agent) => Admission::Agent(Box::new(agent)),
        Err(e @ HarnessError::Contract(ContractError::Version { .. })) => {
            Admission::Incompatible(e.to_string())
        }
        Err(e) => Admission::Unavailable(e.to_string()),
    }
}

impl Registry {
    /// Read every card a configuration lists. An agent that cannot be reached or admitted is
    /// recorded, not fatal (a later [`refresh`](Registry::refresh) may admit it); two agents
    /// with one id, or a key file that cannot be read, is a configuration error.
    pub(crate) fn from_config(client: &A2aClient, entries: &[AgentEntry]) -> Result<Registry> {
        Registry::configured_by(client, entries, None)
    }

    /// [`Registry::from_config`] of the agents configuration file at `path`, kept so that
    /// [`Registry::reload`] (`POST /agents/refresh`, SIGHUP) reads it again.
    pub(crate) fn from_config_file(client: &A2aClient, path: &Path) -> Result<Registry> {
        Registry::configured_by(client, &load_config(path)?, Some(path.to_path_buf()))
    }

    fn configured_by(
        client: &A2aClient,
        entries: &[AgentEntry],
        config_path: Option<PathBuf>,
    ) -> Result<Registry> {
        let sources = sources_of(client, entries)?;
        let registry = Registry {
            shared: Arc::new(Shared {
                sources: RwLock::new(Arc::new(sources)),
                config_path,
                client: Some(client.clone()),
                ..Shared::default()
            }),
        };
        let (_, duplicates) = registry.refresh_now(false);
        if let Some(id) = duplicates.first() {
            return Err(registered_twice(id));
        }
        Ok(registry)
    }

    /// Read the agents configuration file again (where the registry came from one), then
    /// every card: an agent added to the file is admitted, one removed from it is dropped, and
    /// one whose entry changed is read under its new entry. A file that cannot be read or
    /// holds a bad entry changes nothing and is the error. Without a file, a plain refresh.
    pub(crate) fn reload(&self) -> Result<Refreshed> {
        let (Some(path), Some(client)) = (&self.shared.config_path, &self.shared.client) else {
            return Ok(self.refresh());
        };
        let sources = sources_of(client, &load_config(path)?)?;
        let dropped = {
            // Under the refresh lock: no refresh runs over half-swapped sources.
            let _clock = self.shared.refreshing.lock().unpoisoned();
            let old = self.sources();
            let mut state = self.write();
            // What each source admitted, carried over by URL to its place in the new list;
            // an agent whose source is gone leaves with it.
            let carried = sources.iter().enumerate().filter_map(|(j, source)| {
                let i = old.iter().position(|o| o.entry.url == source.entry.url)?;
                Some((j, state.admitted.get(&i)?.clone()))
            });
            let admitted: BTreeMap<usize, String> = carried.collect();
            let dropped: Vec<String> = state
                .admitted
                .values()
                .filter(|id| !admitted.values().any(|kept| kept == *id))
                .cloned()
                .collect();
            for id in &dropped {
                state.agents.remove(id);
            }
            state.admitted = admitted;
            state.unavailable.clear();
            state.incompatible.clear();
            *self.shared.sources.write().unpoisoned() = Arc::new(sources);
            self.shared.generation.fetch_add(1, Ordering::SeqCst);
            dropped
        };
        let mut refreshed = self.refresh_now(false).0;
        refreshed.removed.extend(dropped);
        refreshed.removed.sort();
        refreshed.removed.dedup();
        Ok(refreshed)
    }

    fn sources(&self) -> Arc<Vec<Source>> {
        Arc::clone(&self.shared.sources.read().unpoisoned())
    }
}

fn registered_twice(id: &str) -> HarnessError {
    HarnessError::config(
        "the agent registry",
        format!("two agents registered as {}", str_repr(id)),
    )
}

/// Each agent's description, sorted by id.
fn manifest(state: &State) -> Vec<Value> {
    state.agents.values().map(|a| a.spec.describe()).collect()
}

/// The sources a configuration lists: each entry with its key and its own client, read now.
fn sources_of(client: &A2aClient, entries: &[AgentEntry]) -> Result<Vec<Source>> {
    let mut sources = Vec::with_capacity(entries.len());
    for entry in entries {
        let name = entry.name.clone().unwrap_or_else(|| entry.url.clone());
        // Read before the card, so a bad key stops start-up even if the agent is down.
        let key = match &entry.key_file {
            None => None,
            Some(path) => Some(Key::from_file("agent", path).map_err(|e| {
                HarnessError::config(
                    path.display().to_string(),
                    format!("the key of agent {name}: {e}"),
                )
            })?),
        };
        let own = match &entry.tls_client {
            None => None,
            Some(pair) => Some(A2aClient {
                http: client.http.with_client_cert(pair.clone()).map_err(|e| {
                    HarnessError::config(
                        pair.cert.display().to_string(),
                        format!("the client certificate of agent {name}: {e}"),
                    )
                })?,
                ..client.clone()
            }),
        };
        sources.push(Source {
            entry: entry.clone(),
            name,
            key,
            client: own,
        });
    }
    Ok(sources)
}

impl Registry {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.shared.state.read().unpoisoned()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.shared.state.write().unpoisoned()
    }

    /// Read every configured card again, now (waiting for a refresh already running, then
    /// running its own), several at once, so that one silent agent holds the refresh for one
    /// card timeout, not one per agent. A registry built by hand has nothing to refresh.
    pub(crate) fn refresh(&self) -> Refreshed {
        self.refresh_now(false).0
    }

    /// Run a refresh. `on_demand` (an unknown id asked for it) skips it if a refresh started
    /// after the caller arrived (it waited for that one), or if another on-demand refresh
    /// started within [`REFRESH_AT_MOST_EVERY`]. Returns what changed and the ids two
    /// sources both claimed.
    fn refresh_now(&self, on_demand: bool) -> (Refreshed, Vec<String>) {
        let Some(client) = &self.shared.client else {
            return (Refreshed::default(), Vec::new());
        };
        let arrived = Instant::now();
        let mut clock = self.shared.refreshing.lock().unpoisoned();
        if on_demand {
            let fresh = clock.started.is_some_and(|t| t > arrived);
            let recent = clock
                .on_demand
                .is_some_and(|t| t.elapsed() < REFRESH_AT_MOST_EVERY);
            if fresh || recent {
                return (Refreshed::default(), Vec::new());
            }
            clock.on_demand = Some(Instant::now());
        }
        clock.started = Some(Instant::now());
        let before = self.read().clone();
        // Cards are read without holding the state: calls go on meanwhile.
        let sources = self.sources();
        let admissions: Vec<Admission> = health::check_all(&sources, |source| {
            let timeout = source
                .entry
                .timeout
                .unwrap_or(DEFAULT_TIMEOUT)
                .min(CARD_TIMEOUT);
            admit(client, source, timeout)
        });
        let (next, duplicates) = before.next(&sources, admissions);
        let summary = Refreshed::between(&before, &next);
        if !next.same_as(&before) {
            *self.write() = next;
            self.shared.generation.fetch_add(1, Ordering::SeqCst);
        }
        drop(clock);
        (summary, duplicates)
    }

    /// Refresh in a background thread for as long as this registry lives: while an agent is
    /// unavailable, after [`RETRY_FIRST`], doubling up to [`RETRY_MAX`]; once all are admitted,
    /// every [`RECHECK_EVERY`]. Returns at once; a registry without configuration starts
    /// nothing. The thread ends at the first wake-up after the last handle is dropped.
    pub(crate) fn refresh_in_background(&self) {
        if self.sources().is_empty() {
            return;
        }
        let mut attempt = 0u32;
        let wait = move |shared: &Shared| {
            let pending = !shared.state.read().unpoisoned().unavailable.is_empty();
            if pending {
                let wait = retry_wait(attempt);
                attempt = attempt.saturating_add(1);
                wait
            } else {
                attempt = 0;
                RECHECK_EVERY
            }
        };
        let round = |shared: &Arc<Shared>| {
            let refreshed = Registry {
                shared: Arc::clone(shared),
            }
            .refresh_now(false)
            .0;
            let news = [
                (&refreshed.added, " admitted"),
                (&refreshed.changed, "'s card changed; checked again"),
                (&refreshed.removed, " no longer admitted"),
            ];
            for (ids, what) in news {
                for id in ids {
                    stderr_line!("ddwire: registry: agent {id}{what}");
                }
            }
        };
        let watched = health::watch(Arc::downgrade(&self.shared), "ddwire-registry", wait, round);
        if let Err(e) = watched {
            stderr_line!(
                "ddwire: registry: cannot start the refresh thread ({e}); use POST /agents/refresh"
            );
        }
    }

    /// A number that changes whenever the registry's contents do: a holder of something built
    /// from it (the harness card) rebuilds when it differs.
    pub(crate) fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    /// Register an agent; an id registered twice is refused.
    pub fn add(&mut self, agent: RemoteAgent) -> Result<()> {
        let id = agent.spec.agent_id.clone();
        let mut state = self.write();
        if state.agents.contains_key(&id) {
            return Err(registered_twice(&id));
        }
        state.agents.insert(id, Arc::new(agent));
        drop(state);
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// The agent registered as `agent_id` (shared: a refresh may replace it meanwhile, and a
    /// run keeps the one it started with).
    pub(crate) fn get(&self, agent_id: &str) -> Option<Arc<RemoteAgent>> {
        self.read().agents.get(agent_id).cloned()
    }

    /// The agent registered as `agent_id`; if there is none, refresh at once (unknown ids
    /// start at most one refresh every [`REFRESH_AT_MOST_EVERY`]) and look again: an agent that came up after the
    /// harness is found on the first call that names it.
    pub(crate) fn get_or_refresh(&self, agent_id: &str) -> Option<Arc<RemoteAgent>> {
        if let Some(agent) = self.get(agent_id) {
            return Some(agent);
        }
        self.refresh_now(true);
        self.get(agent_id)
    }

    /// Every registered agent, by id.
    pub(crate) fn agents(&self) -> Vec<Arc<RemoteAgent>> {
        self.read().agents.values().cloned().collect()
    }

    /// Registered ids, sorted.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.read().agents.keys().cloned().collect()
    }

    /// Configured agents that could not be read or admitted: name (or URL) → why.
    pub(crate) fn unavailable(&self) -> BTreeMap<String, String> {
        self.read().unavailable.clone()
    }

    /// Configured agents whose card this harness cannot govern: name (or URL) → why.
    pub(crate) fn incompatible(&self) -> BTreeMap<String, String> {
        self.read().incompatible.clone()
    }

    /// How many agents the configuration lists (0 for a registry built by hand).
    pub(crate) fn configured(&self) -> usize {
        self.sources().len()
    }

    /// Each agent's description, sorted by id: the manifest.
    pub(crate) fn manifest(&self) -> Vec<Value> {
        manifest(&self.read())
    }

    /// `{"agents": manifest, "unavailable": {…}, "incompatible": {…}}`.
    pub(crate) fn listing(&self) -> Value {
        let state = self.read();
        json!({ "agents": manifest(&state), "unavailable": state.unavailable, "incompatible": state.incompatible })
    }

    /// The error for an unknown agent: the known ids, then each agent that could not be
    /// admitted and why.
    pub(crate) fn unknown(&self, agent_id: &str) -> HarnessError {
        let state = self.read();
        HarnessError::UnknownAgent {
            agent_id: agent_id.to_string(),
            known: state.agents.keys().cloned().collect(),
            unavailable: state.unavailable.clone().into_iter().collect(),
            incompatible: state.incompatible.clone().into_iter().collect(),
        }
    }

    /// How many agents are registered.
    pub(crate) fn len(&self) -> usize {
        self.read().agents.len()
    }

    /// Whether none are.
    pub(crate) fn is_empty(&self) -> bool {
        self.read().agents.is_empty()
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
    fn background_retries_double_from_one_second_and_stay_within_thirty() {
        let waits: Vec<u64> = (0..8).map(|n| retry_wait(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(retry_wait(u32::MAX), RETRY_MAX);
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
                tls_client: None,
            }]
        );
    }
}
