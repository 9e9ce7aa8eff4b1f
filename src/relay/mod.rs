//! `ddwire relay`: forwards A2A calls between registered peers and records every hop as spans
//! (the job of otel-a2a-relay, "the seed" in these modules' comments, in one binary and
//! without an SDK; `vendor-notes/relay.md` compares the two).
//!
//! ```text
//! caller ──POST /a2a (agent.target = B)──▶ relay ──POST <B's JSON-RPC url>──▶ peer B
//!            SERVER span a2a.task             CLIENT span a2a.relay.forward, traceparent
//! ```
//!
//! - **Routes.** `POST /`, `/a2a`: JSON-RPC in either A2A binding (v0.3 `message/send`, 1.0
//!   `SendMessage`, ...), forwarded to the peer the message metadata `agent.target` names, or,
//!   for a call naming a task (`tasks/get`, `tasks/cancel`, a message continuing a task),
//!   to the peer that answered for that task. `POST /peers/{id}/a2a`: the same, to peer `id`
//!   whatever the metadata says. `GET /peers/{id}/.well-known/agent-card.json`: the peer's
//!   card with every interface URL pointing at the relay, so an SDK client resolves a peer
//!   through it. `GET /peers` (each peer's card and health), `POST /peers` (`{"id", "url",
//!   "role"}`), `DELETE /peers/{id}`. `GET /healthz` (readiness: the peers' health),
//!   `GET /livez` (the process answers).
//! - **Binding.** A call is forwarded in the binding it came in, to the peer's interface of
//!   that binding (its card's `supportedInterfaces`, or a v0.3 card's `url`). To a peer that
//!   offers only the other binding, sends, streams, `tasks/get` and `tasks/cancel` are
//!   translated (`translate.rs`); any other method is refused as `binding_unsupported` (-32009,
//!   A2A's VersionNotSupported).
//! - **Spans.** Each call is one SERVER span (`a2a.task`, `a2a.task.get`, ...) and, when it is
//!   forwarded, one CLIENT span (`a2a.relay.forward`) under it whose context goes to the peer
//!   as `traceparent` (HTTP header and message metadata). The A2A `contextId` is `session.id`;
//!   a task's state change is an `a2a.task.state_change` event. Spans are appended as JSON
//!   lines to `<traces>/<contextId>.jsonl` (`traces.rs`) and exported through OTLP.
//! - **Failures** are classed from the client's typed [`WireError`](crate::wire::WireError)
//!   (`failure.rs`); the star gate (`topology.rs`) refuses a route with -32010 before anything
//!   is forwarded, on every method.
//! - **Streams** (`message/stream`, `SendStreamingMessage`, `tasks/resubscribe`,
//!   `SubscribeToTask`) pass the same gate, and the peer's events are passed on one by one,
//!   each an `a2a.message.stream_chunk` span event with its sequence number (`stream.rs`).
//!
//! - **Guard** (`vendor-notes/relay.md` says what it trusts and why). With `tokens`, every
//!   route but `/livez`, `/healthz` and the peers' cards takes `Authorization: Bearer` (401
//!   otherwise), and changing the peers takes a token whose entry says `"role": "admin"`
//!   (403); `POST` and `DELETE /peers` answer 403 unless registration is allowed at all. The
//!   browser rules are `serve`'s (`BrowserPolicy`: `Host`, `Origin`, a JSON media type). A
//!   peer URL is scheme, host, port and path only, and the relay calls peers through a client
//!   that connects only where the `Egress` policy allows (checked after DNS resolution),
//!   follows no redirect and reads at most `MAX_REPLY_BYTES` of a reply. Every forward and
//!   card fetch carries `Via: 1.1 <the relay's pseudonym>` (and a message the metadata
//!   `relay.hops`); a call that already passed this relay, or `DEFAULT_MAX_HOPS` relays, is
//!   refused as `loop_detected`. Peers' health is checked in the background
//!   (`Relay::watch_health`); `GET /peers` and `/healthz` show the last state seen.
//!
//! The relay knows no conductor: it imports `wire/` and `trace/`, never `harness/`.

mod call;
mod failure;
mod hop;
mod owners;
mod peers;
mod routes;
mod stream;
mod topology;
mod traces;
mod translate;

pub use peers::{PeerSpec, Role};
pub use routes::handler;
pub(crate) use topology::Topology;

use crate::contract::tokens::Token;
use crate::text::Unpoison;
use crate::wire::a2a::client::A2aClient;
use crate::wire::a2a::health;
use crate::wire::http::browser::BrowserPolicy;
use crate::wire::http::client::HttpClient;
use crate::wire::http::drain::Drain;
use crate::wire::http::egress::Egress;
use crate::wire::otlp::Exporter;
use failure::FailureClass;
use owners::{TASK_OWNERS_KEPT, TaskOwners};
use peers::Registry;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use traces::TraceSink;

/// The service name on the relay's spans, and its default `agent.id`.
pub(crate) const SERVICE_NAME: &str = "ddwire.relay";
/// How long a forward may take by default.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long fetching a peer's card may take (registration, health, first forward).
pub(crate) const CARD_TIMEOUT: Duration = Duration::from_secs(5);
/// The most bytes of a peer's whole reply (or card) the relay reads: a larger one fails the
/// call as `peer_invalid_reply`. The relay must read a reply whole to check it is an A2A
/// answer, learn which task it names and translate it, so it cannot pipe it through; this
/// bounds what one forward holds (the body, and the JSON read from it) to a few times
/// 4 MiB, where the client's general limit, 32 MiB, let 16 forwards take 716 MB.
pub(crate) const MAX_REPLY_BYTES: u64 = 4 << 20;
/// How many relays a call may have passed before this one refuses it (`loop_detected`).
pub(crate) const DEFAULT_MAX_HOPS: u32 = 8;
/// How often the background health check runs by default.
pub(crate) const DEFAULT_HEALTH_INTERVAL: Duration = Duration::from_secs(30);

/// How a relay is set up.
pub struct RelayConfig {
    /// The peers it starts with.
    pub(crate) peers: Vec<PeerSpec>,
    /// Which routes it allows.
    pub(crate) topology: Topology,
    /// Where each session's spans are appended as JSON lines; `None` writes none.
    pub traces_dir: Option<PathBuf>,
    /// Where spans are exported over OTLP; `None` exports none.
    pub(crate) exporter: Option<Exporter>,
    /// The relay's base URL as callers reach it (for the cards it serves for its peers).
    pub(crate) public_url: String,
    /// How long one forward may take.
    pub(crate) timeout: Duration,
    /// The relay's own `agent.id` on its spans.
    pub(crate) relay_id: String,
    /// The HTTP client it calls peers with (a logged one for `--wire-log`).
    pub(crate) http: HttpClient,
    /// The process's drain: once it is cut, each open stream ends with an error event rather
    /// than a closed connection.
    pub(crate) drain: Option<Drain>,
    /// The callers' bearer tokens (the harness's tokens file); `None` authenticates no one.
    pub(crate) tokens: Option<Vec<Token>>,
    /// Whether `POST` and `DELETE /peers` may change the peers (with `tokens`, for an admin).
    pub(crate) allow_registration: bool,
    /// The `Host`, `Origin` and media type rules, as `serve`'s.
    pub(crate) browser: BrowserPolicy,
    /// Where peers may be: the default refuses loopback, link-local and metadata addresses.
    pub(crate) egress: Egress,
    /// How many relays a call may have passed.
    pub(crate) max_hops: u32,
}

impl RelayConfig {
    /// A relay over `peers`, open topology, no traces, the default timeout.
    pub fn new(peers: Vec<PeerSpec>, public_url: &str) -> RelayConfig {
        RelayConfig {
            peers,
            topology: Topology::Open,
            traces_dir: None,
            exporter: None,
            public_url: public_url.trim_end_matches('/').to_string(),
            timeout: DEFAULT_TIMEOUT,
            relay_id: SERVICE_NAME.to_string(),
            http: HttpClient::tcp(),
            drain: None,
            tokens: None,
            allow_registration: false,
            browser: BrowserPolicy::new(public_url),
            egress: Egress::default(),
            max_hops: DEFAULT_MAX_HOPS,
        }
    }
}

/// A running relay's state: its peers, the tasks they own, where spans go, its counts.
pub struct Relay {
    registry: Registry,
    owners: TaskOwners,
    sink: TraceSink,
    topology: Topology,
    client: A2aClient,
    timeout: Duration,
    public_url: Mutex<String>,
    relay_id: String,
    counts: Mutex<Counts>,
    drain: Option<Drain>,
    tokens: Option<Vec<Token>>,
    allow_registration: bool,
    browser: BrowserPolicy,
    egress: Egress,
    max_hops: u32,
    /// This relay's `received-by` in `Via` (RFC 9110 §7.6.3): `ddwire-` and 64 random bits,
    /// new each start, so two relays with the same `--id` do not take each other for itself.
    via_name: String,
}

/// What the relay has done since it started (`GET /healthz` shows it).
#[derive(Debug, Default)]
struct Counts {
    forwarded: u64,
    failed: std::collections::BTreeMap<FailureClass, u64>,
}

impl Relay {
    /// A relay as `config` sets it up (the traces directory is created if missing).
    pub fn new(config: RelayConfig) -> Result<Relay, RelayError> {
        let sink = TraceSink::new(config.traces_dir, config.exporter)?;
        for spec in &config.peers {
            spec.check_destination(&config.egress)?;
        }
        let mut client =
            A2aClient::new(config.http.guarded(config.egress.clone(), MAX_REPLY_BYTES));
        client.timeout = config.timeout;
        let via_name = format!("ddwire-{:016x}", crate::ids::random_u64());
        Ok(Relay {
            registry: Registry::new(config.peers),
            owners: TaskOwners::new(TASK_OWNERS_KEPT),
            sink,
            topology: config.topology,
            client,
            timeout: config.timeout,
            public_url: Mutex::new(config.public_url),
            relay_id: config.relay_id,
            counts: Mutex::default(),
            drain: config.drain,
            tokens: config.tokens,
            allow_registration: config.allow_registration,
            browser: config.browser,
            egress: config.egress,
            max_hops: config.max_hops,
            via_name,
        })
    }

    /// Check every peer's health every `every`, on a thread of its own, for as long as the
    /// relay lives: requests never wait on a peer's card, they show the last state seen.
    pub(crate) fn watch_health(self: &Arc<Self>, every: Duration) {
        let watched = health::watch(
            Arc::downgrade(self),
            "ddwire-relay-health",
            move |_| every,
            |relay| relay.check_peers(),
        );
        if let Err(e) = watched {
            stderr_line!("ddwire relay: cannot start the health check thread ({e})");
        }
    }

    /// Set the base URL callers reach the relay at, once its port is known.
    pub fn set_public_url(&self, url: &str) {
        *self.public_url.lock().unpoisoned() = url.trim_end_matches('/').to_string();
    }

    pub(crate) fn public_url(&self) -> String {
        self.public_url.lock().unpoisoned().clone()
    }

    /// Fetch every peer's card now ([`health::AT_ONCE`] at a time, each within
    /// [`CARD_TIMEOUT`]), recording its health. Called at start-up and by
    /// [`Relay::watch_health`], never by a request.
    pub(crate) fn check_peers(&self) {
        // Each reading is recorded as the peer's health; nothing else is wanted of it here.
        health::check_all(&self.registry.all(), |peer| {
            let _ = self.fetch_card(&peer.spec.id, &peer.spec.url, "");
        });
    }

    /// Fetch one peer's card and record what it gave (`via_in`: the `Via` of the request
    /// that asked for it, empty if none), carrying that `Via` with the relay's own appended,
    /// so that a peer URL leading back to the relay, directly or through other relays, is
    /// refused at the first repeat. The card, or why there is none, is returned.
    pub(crate) fn fetch_card(
        &self,
        id: &str,
        url: &str,
        via_in: &str,
    ) -> Result<serde_json::Value, crate::wire::WireError> {
        let via = self.via_after(via_in);
        let check = self
            .client
            .check_card(url, CARD_TIMEOUT.min(self.timeout), &[("Via", &via)]);
        self.registry.record_card(id, url, &check);
        check.card
    }

    /// `via` (the `Via` a request came with, empty if none) with this relay appended (RFC
    /// 9110 §7.6.3): what a forward or a card fetch carries.
    fn via_after(&self, via: &str) -> String {
        match via.trim() {
            "" => format!("1.1 {}", self.via_name),
            _ => format!("{via}, 1.1 {}", self.via_name),
        }
    }

    /// Refuse `spec` when its URL is the relay's own public URL's host and port: the relay
    /// is not its own peer. (A name or address of the relay that differs is caught by `Via`
    /// at the first forward or card fetch.)
    pub(crate) fn refuse_itself(&self, spec: &PeerSpec) -> Result<(), RelayError> {
        let own = PeerSpec::new("self", &self.public_url(), Role::Leaf).map(|s| s.host_port());
        if own.is_ok_and(|own| own == spec.host_port()) {
            return Err(RelayError::peer(
                &spec.id,
                format!(
                    "url {:?} is this relay's own address: a relay is not its own peer",
                    spec.url
                ),
            ));
        }
        Ok(())
    }

    /// The peer ids registered.
    pub(crate) fn peer_ids(&self) -> Vec<String> {
        self.registry.ids()
    }

    /// The OTLP exporter, to flush before the process exits.
    pub(crate) fn exporter(&self) -> Option<&Exporter> {
        self.sink.exporter.as_ref()
    }

    fn count(&self, outcome: Result<(), FailureClass>) {
        let mut counts = self.counts.lock().unpoisoned();
        match outcome {
            Ok(()) => counts.forwarded += 1,
            Err(class) => *counts.failed.entry(class).or_default() += 1,
        }
    }
}

/// Why a relay could not be set up, or a peer registered.
#[derive(Debug)]
#[non_exhaustive]
pub enum RelayError {
    /// A peer's entry is unusable.
    Peer {
        /// The peer's id, `?` when it has none.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The peers file is unusable.
    PeersFile {
        /// The file.
        source: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The traces directory could not be made.
    Traces {
        /// The directory.
        dir: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl RelayError {
    pub(crate) fn peer(id: &str, reason: impl Into<String>) -> RelayError {
        RelayError::Peer {
            id: id.to_string(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for RelayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RelayError::Peer { id, reason } => write!(f, "peer {id:?}: {reason}"),
            RelayError::PeersFile { source, reason } => {
                write!(f, "peers file {source}: {reason}")
            }
            RelayError::Traces { dir, source } => {
                write!(
                    f,
                    "cannot create the traces directory {}: {source}",
                    dir.display()
                )
            }
        }
    }
}

impl std::error::Error for RelayError {}
