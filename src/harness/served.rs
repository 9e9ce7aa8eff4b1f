//! A harness as its routes share it: the conductor every route runs invocations through, who
//! may call it, its card (rebuilt when the registry changes), what a browser may do, and the
//! drain it answers readiness from. The routes themselves are [`super::server`]'s and
//! [`super::agui`]'s; `GET /healthz` is [`super::health`]'s.

use super::conductor::Conductor;
use super::identity::{Access, Authenticator};
use super::store::StoreError;
use crate::harness::HarnessError;
use crate::text::Unpoison;
use crate::wire::a2a::card::{self, ServedCard};
use crate::wire::http::Response;
use crate::wire::http::browser::BrowserPolicy;
use crate::wire::http::drain::Drain;
use crate::wire::http::server::OpenConnections;
use crate::wire::sign::{Direction, Verifier};
use serde_json::{Value, json};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// A harness: its conductor, how it authenticates callers, and its card.
pub struct Harness {
    /// The conductor every route runs invocations through.
    pub(crate) conductor: Conductor,
    /// `None`: only delegation callbacks under a live grant are accepted.
    pub(crate) authenticator: Option<Authenticator>,
    /// The base URL on the card (and, for delegation, the conductor's callback).
    pub(crate) public_url: String,
    /// The card and the callback verifier, as built from the registry's current contents.
    built: RwLock<Arc<Built>>,
    /// How far a signed callback's time may be from this clock (`None`: the default).
    window: Option<Duration>,
    /// The server's open connections, for `/healthz`.
    pub(super) connections: Option<OpenConnections>,
    /// Started on SIGTERM/SIGINT: `/healthz` answers 503, streams end when it is cut.
    pub(crate) drain: Drain,
    /// What a browser may do: host names, origins, media types ([`crate::wire::http::browser`]).
    pub(super) browser: BrowserPolicy,
    /// How often an idle A2A stream sends a keep-alive comment.
    pub(super) keep_alive: Duration,
    /// Set when the drain is cut: what interrupts an approved run's agent call. Made, and hooked
    /// to the drain, by the first decision.
    cut_interrupt: std::sync::OnceLock<crate::wire::http::client::Interrupt>,
}

/// What the harness builds from its registry, rebuilt when the registry changes.
pub(super) struct Built {
    generation: u64,
    pub(super) card: ServedCard,
    /// Verifies signed delegation callbacks, with the keys the registry holds.
    pub(super) callbacks: Verifier,
}

impl Harness {
    /// A harness at `public_url`; its card lists one skill per registered agent and carries
    /// the manifest, and is rebuilt whenever a refresh changes the registry.
    pub fn new(
        mut conductor: Conductor,
        authenticator: Option<Authenticator>,
        public_url: &str,
    ) -> Harness {
        let public_url = public_url.trim_end_matches('/').to_string();
        conductor
            .callback_url
            .get_or_insert_with(|| public_url.clone());
        let built = build(&conductor, &public_url, None);
        Harness {
            conductor,
            authenticator,
            browser: BrowserPolicy::new(&public_url),
            public_url,
            built: RwLock::new(Arc::new(built)),
            window: None,
            connections: None,
            drain: Drain::new(),
            keep_alive: crate::wire::a2a::endpoint::KEEP_ALIVE,
            cut_interrupt: std::sync::OnceLock::new(),
        }
    }

    /// The interrupt a cut drain sets (one hook on the drain, however many decisions).
    pub(super) fn cut_interrupt(&self) -> crate::wire::http::client::Interrupt {
        self.cut_interrupt
            .get_or_init(|| {
                let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let (keep_open, wake) = crossbeam_channel::bounded::<()>(0);
                self.drain.on_cut({
                    let flag = Arc::clone(&flag);
                    move || {
                        flag.store(true, std::sync::atomic::Ordering::SeqCst);
                        drop(keep_open);
                    }
                });
                crate::wire::http::client::Interrupt { flag, wake }
            })
            .clone()
    }

    /// Send a keep-alive comment on an A2A stream after `every` without an event (default
    /// 15 s).
    #[cfg(test)]
    pub(crate) fn with_keep_alive(mut self, every: Duration) -> Harness {
        self.keep_alive = every;
        self
    }

    /// Accept signed callbacks dated up to `window` from this clock, either way (default
    /// 300 s).
    pub(crate) fn with_replay_window(mut self, window: Duration) -> Harness {
        self.window = Some(window);
        self.built = RwLock::new(Arc::new(build(
            &self.conductor,
            &self.public_url,
            self.window,
        )));
        self
    }

    /// Report the server's open connections on `/healthz`.
    pub(crate) fn with_open_connections(mut self, connections: OpenConnections) -> Harness {
        self.connections = Some(connections);
        self
    }

    /// Share `drain` with the process: once started, `/healthz` answers 503; once cut, every
    /// AG-UI stream still open ends with a `RUN_ERROR`, and every A2A stream with a final
    /// `failed` status update (`dd.error: shutting_down`).
    pub(crate) fn with_drain(mut self, drain: Drain) -> Harness {
        self.drain = drain;
        self
    }

    /// Which stored runs the caller may read, from its `Authorization` header: every run
    /// without bearer tokens (operator mode, or a harness taking only delegation callbacks),
    /// else its own (all, for an auditor). `Err` is the 401 to answer (RFC 6750 §3).
    pub(crate) fn read_access(
        &self,
        headers: &[(String, String)],
    ) -> std::result::Result<Access, Response> {
        let Some(auth) = &self.authenticator else {
            return Ok(Access::All);
        };
        auth.access_for(Some(headers)).map_err(|e| {
            let presented = crate::wire::http::header(headers, "authorization").is_some();
            unauthorized(&e.to_string(), presented)
        })
    }

    /// Whether `access` may see the stored run `id` (an unreadable run is not seen).
    pub(crate) fn sees_run(&self, access: &Access, id: &str) -> bool {
        match access {
            Access::All => true,
            Access::Own(_) => matches!(
                self.conductor.store.envelope(id),
                Ok(Some(envelope)) if access.sees_envelope(&envelope)
            ),
        }
    }

    /// Answer browsers as `policy` says (by default: the public URL's host and IP literals,
    /// no other origin; see [`crate::wire::http::browser`]).
    pub(crate) fn with_browser_policy(mut self, policy: BrowserPolicy) -> Harness {
        self.browser = policy;
        self
    }

    /// The card, as served.
    #[cfg(test)]
    pub(crate) fn card(&self) -> Value {
        serde_json::from_slice(self.built().card.bytes()).unwrap_or(Value::Null)
    }

    /// The card and verifier for the registry as it is now.
    pub(super) fn built(&self) -> Arc<Built> {
        let generation = self.conductor.registry.generation();
        let current = Arc::clone(&self.built.read().unpoisoned());
        if current.generation == generation {
            return current;
        }
        let fresh = Arc::new(build(&self.conductor, &self.public_url, self.window));
        *self.built.write().unpoisoned() = Arc::clone(&fresh);
        fresh
    }
}

fn build(conductor: &Conductor, public_url: &str, window: Option<Duration>) -> Built {
    // Read first: a refresh landing meanwhile bumps it again, and the next request rebuilds.
    let generation = conductor.registry.generation();
    let keys: Vec<_> = conductor
        .registry
        .agents()
        .into_iter()
        .filter_map(|a| a.key.clone())
        .collect();
    let mut callbacks = Verifier::new(Direction::ToHarness, keys);
    if let Some(window) = window {
        callbacks = callbacks.with_window(window);
    }
    Built {
        generation,
        card: ServedCard::new(&harness_card(conductor, public_url)),
        callbacks,
    }
}

/// HTTP 401 with the [`bearer_challenge`], `reason` as its plain JSON error.
pub(crate) fn unauthorized(reason: &str, presented: bool) -> Response {
    Response::error(401, reason).with_header("WWW-Authenticate", bearer_challenge(presented))
}

/// The `WWW-Authenticate` challenge RFC 6750 §3 asks for: `error="invalid_token"` when a
/// credential was presented and refused, a bare challenge when none was.
pub(crate) fn bearer_challenge(presented: bool) -> &'static str {
    if presented {
        "Bearer realm=\"ddwire\", error=\"invalid_token\""
    } else {
        "Bearer realm=\"ddwire\""
    }
}

/// The harness's card: one skill per registered agent, and the manifest extension.
pub(crate) fn harness_card(conductor: &Conductor, public_url: &str) -> Value {
    let skills: Vec<Value> = conductor
        .registry
        .agents()
        .iter()
        .map(|a| card::skill(&a.spec))
        .collect();
    let manifest = json!({
        "uri": card::MANIFEST_EXTENSION_URI,
        "description": "Data Director manifest: the description of every agent this harness runs, for a delegation agent to route from.",
        "required": false,
        "params": { "agents": conductor.registry.manifest() },
    });
    let mut card = card::base_card(
        "ddwire harness",
        "A Data Director harness: runs registered agents under the institutional profile, checks every result's grounding, and returns an envelope.",
        env!("CARGO_PKG_VERSION"),
        public_url,
        vec![manifest],
        skills,
    );
    // The harness streams a run's stages and, after every check, its result (see
    // `wire::a2a::endpoint`, "Streams"); agents answer whole replies and say `false`.
    card["capabilities"]["streaming"] = Value::Bool(true);
    card
}

/// The stored run `reference` names (a whole id or a unique prefix of one), or the answer to
/// give instead: 404 if none, 409 with the candidates if several runs share the prefix.
pub(crate) fn resolve_run(
    harness: &Harness,
    reference: &str,
    access: &Access,
) -> std::result::Result<String, Response> {
    let not_found = || Response::error(404, &format!("no run {reference}"));
    match harness.conductor.store.resolve(reference) {
        Ok(id) if harness.sees_run(access, &id) => Ok(id),
        Ok(_) => Err(not_found()),
        Err(HarnessError::Store(StoreError::AmbiguousRun {
            candidates, total, ..
        })) if *access != Access::All => {
            // Only the reader's own runs count: a prefix shared with another principal's run
            // resolves to the reader's, and candidates name no one else's.
            let mine: Vec<String> = candidates
                .into_iter()
                .filter(|id| harness.sees_run(access, id))
                .collect();
            match mine.as_slice() {
                [] => Err(not_found()),
                [one] if total <= super::store::CANDIDATES_SHOWN => Ok(one.clone()),
                _ => Err(Response::json(
                    409,
                    &json!({
                        "error": format!("{reference} is the start of several of your runs: give more of the id"),
                        "candidates": mine,
                    }),
                )),
            }
        }
        Err(HarnessError::Store(StoreError::NoSuchRun { .. })) => Err(not_found()),
        Err(HarnessError::Store(ref e @ StoreError::AmbiguousRun { ref candidates, .. })) => {
            Err(Response::json(
                409,
                &json!({ "error": e.to_string(), "candidates": candidates }),
            ))
        }
        Err(e) => Err(Response::error(500, &e.to_string())),
    }
}
