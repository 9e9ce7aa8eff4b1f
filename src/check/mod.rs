//! A smoke test of any A2A JSON-RPC endpoint: a ddwire agent, the harness, or an a2a-sdk,
//! a2a-js or a2a-rs server. `ddwire check URL` runs it from one static binary, for CI
//! containers that cannot install a conformance suite.
//!
//! [`run`] reads the card, then runs a fixed list of probes (one table, in `probes.rs`;
//! `vendor-notes/a2a.md` lists them): the card (where it is served, its fields in both
//! generations, its interfaces, with `dd` the Data Director extension), JSON-RPC 2.0
//! strictness (error codes, ids, notifications, batches, an oversized body) and A2A
//! behaviour (a send, getting the task back, unknown tasks, versions, declared
//! capabilities), in the binding the card prefers or in both. Each probe has a level: a
//! violation of a MUST fails, one of a SHOULD (or of JSON-RPC strictness the mainstream
//! SDKs break themselves, like answering a notification) warns, and fails when
//! [`Options::strict`] is set. The [`Report`] prints as text, JSON or JUnit XML.
//!
//! ```
//! use ddwire::agent::builtin::Hello;
//! use ddwire::agent::server::serve_in_memory;
//! use ddwire::check::{self, Options, Status};
//! use ddwire::wire::http::{client::HttpClient, memory::MemoryNet};
//! use std::sync::Arc;
//!
//! let net = MemoryNet::new();
//! let base = serve_in_memory(&net, Arc::new(Hello::new()));
//! let mut options = Options::new(&base);
//! options.http = HttpClient::memory(net);
//! options.dd = true;
//! options.strict = true;
//! let report = check::run(&options)?;
//! assert_eq!(report.exit_code(), 0, "{}", report.text());
//! assert!(report.results.iter().all(|r| r.status != Status::Fail));
//! # Ok::<(), ddwire::check::CheckError>(())
//! ```

mod card;
mod exchange;
mod probes;
mod report;

pub(crate) use probes::Level;
pub use report::ProbeResult;
pub use report::{Report, Status, Tally};

use crate::wire::WireError;
use crate::wire::a2a::Binding;
use crate::wire::a2a::client::Target;
use crate::wire::http::client::HttpClient;
use probes::{Ctx, Outcome, PROBES, Scope};
use serde_json::Value;
use std::fmt;
use std::time::{Duration, Instant};

/// Which bindings the binding probes run in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bindings {
    /// The one the card prefers (the first JSON-RPC entry of `supportedInterfaces`, else
    /// v0.3 at `url`).
    Auto,
    /// A2A 0.3, at the card's 0.3 interface (or its preferred URL when it declares none).
    V03,
    /// A2A 1.0, likewise.
    V10,
    /// Every binding the card declares; one it does not declare is noted, not probed.
    Both,
}

/// What to check, and how.
#[derive(Clone)]
pub struct Options {
    /// The agent's base URL (its card is at `<url>/.well-known/agent-card.json`), or the
    /// card's own URL.
    pub(crate) url: String,
    /// Which bindings to probe (default: the card's preferred one).
    pub(crate) bindings: Bindings,
    /// The message to send: an A2A Message in either binding's JSON (an object with
    /// `parts`), or any other JSON document, sent as one data part. `None`: a built-in one
    /// (for a Data Director agent or harness, an InvocationRequest for the agent its card
    /// describes).
    pub(crate) message: Option<Value>,
    /// Sent as `Authorization: Bearer <token>` on every request.
    pub(crate) token: Option<String>,
    /// Check the Data Director extension and reply.
    pub dd: bool,
    /// The most any one request may take (the oversized body's included).
    pub(crate) timeout: Duration,
    /// Warnings fail.
    pub strict: bool,
    /// The HTTP client (TCP by default; the in-memory transport in tests).
    pub http: HttpClient,
    /// `http` verifies no TLS certificate: the report says so in every format.
    pub(crate) insecure: bool,
}

/// The default per-request timeout.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl Options {
    /// Check `url` in the binding its card prefers, with the built-in message.
    pub fn new(url: &str) -> Options {
        Options {
            url: url.to_string(),
            bindings: Bindings::Auto,
            message: None,
            token: None,
            dd: false,
            timeout: DEFAULT_TIMEOUT,
            strict: false,
            http: HttpClient::tcp(),
            insecure: false,
        }
    }
}

/// Why a check could not run at all (the CLI exits 2).
#[derive(Debug)]
pub enum CheckError {
    /// The URL is not an absolute http(s) URL.
    BadUrl {
        /// The URL as given.
        url: String,
    },
    /// The message given is not one to send.
    BadMessage {
        /// Why it cannot be sent.
        reason: String,
    },
    /// Nothing answered at the URL (refused, unresolvable, or silent past the timeout): the
    /// URL given, and the transport error of the card request.
    Unreachable {
        /// The URL as given.
        url: String,
        /// The card request's transport error.
        cause: WireError,
    },
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::BadUrl { url } => {
                write!(f, "{url:?} is not an http:// or https:// URL")
            }
            CheckError::BadMessage { reason } => write!(f, "the message cannot be sent: {reason}"),
            CheckError::Unreachable { url, cause } => {
                write!(f, "nothing answered at {url}: {cause}")
            }
        }
    }
}

impl std::error::Error for CheckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckError::Unreachable { cause, .. } => Some(cause),
            _ => None,
        }
    }
}

/// Run every probe against `options.url` and report what each found.
pub fn run(options: &Options) -> Result<Report, CheckError> {
    let start = Instant::now();
    if !(options.url.starts_with("http://") || options.url.starts_with("https://")) {
        return Err(CheckError::BadUrl {
            url: options.url.clone(),
        });
    }
    let message = options
        .message
        .clone()
        .map(card::user_message)
        .transpose()?;
    let mut ctx = Ctx {
        wire: exchange::Wire {
            http: options.http.clone(),
            token: options.token.clone(),
            timeout: options.timeout,
            extensions: Vec::new(),
        },
        base: options.url.clone(),
        card: None,
        unreachable: None,
        tls_failed: false,
        insecure: options.insecure,
        message,
        dd: options.dd,
        sent: Vec::new(),
    };
    let mut results = Vec::new();
    let https = crate::wire::tls::is_https(&options.url);
    for probe in PROBES.iter().filter(|p| p.scope() == Scope::Card) {
        if ctx.tls_failed {
            let why = Outcome::Skip("the TLS handshake failed".into());
            results.push(result_of(probe, None, why, Duration::ZERO, options.strict));
            continue;
        }
        let result = run_probe(probe, &mut ctx, None, options.strict);
        // The handshake probe is listed for an http:// URL only when it found TLS there.
        if https || probe.id != probes::TLS_PROBE || result.status != Status::Skip {
            results.push(result);
        }
        if let Some(cause) = ctx.unreachable.take() {
            return Err(CheckError::Unreachable {
                url: options.url.clone(),
                cause,
            });
        }
    }
    let (targets, notes) = targets(ctx.card.as_ref().map(|c| &c.value), options.bindings);
    if let Some(card) = &ctx.card {
        // A client must ask for the extensions a card marks required (A2A 1.0 §3.3.4).
        ctx.wire.extensions = required_extensions(&card.value);
    }
    for target in &targets {
        for probe in PROBES.iter().filter(|p| p.scope() == Scope::Binding) {
            results.push(run_probe(probe, &mut ctx, Some(target), options.strict));
        }
    }
    if targets.is_empty() {
        let why = notes
            .first()
            .cloned()
            .unwrap_or_else(|| "no binding to probe".into());
        for probe in PROBES.iter().filter(|p| p.scope() == Scope::Binding) {
            results.push(result_of(
                probe,
                None,
                Outcome::Skip(why.clone()),
                Duration::ZERO,
                options.strict,
            ));
        }
    }
    Ok(Report {
        url: options.url.clone(),
        card_url: ctx.card.as_ref().map(|c| c.url.clone()),
        bindings: targets.iter().map(|t| t.binding).collect(),
        notes,
        strict: options.strict,
        insecure: options.insecure,
        results,
        elapsed: start.elapsed(),
    })
}

fn run_probe(
    probe: &probes::Probe,
    ctx: &mut Ctx,
    target: Option<&Target>,
    strict: bool,
) -> ProbeResult {
    let (outcome, latency) = exchange::timed(|| probe.run(ctx, target));
    result_of(probe, target.map(|t| t.binding), outcome, latency, strict)
}

fn result_of(
    probe: &probes::Probe,
    binding: Option<Binding>,
    outcome: Outcome,
    latency: Duration,
    strict: bool,
) -> ProbeResult {
    let (status, detail) = match outcome {
        Outcome::Pass(note) => (Status::Pass, note),
        Outcome::Skip(why) => (Status::Skip, Some(why)),
        Outcome::Violation(what) if probe.level == Level::Must || strict => {
            (Status::Fail, Some(what))
        }
        Outcome::Violation(what) => (Status::Warn, Some(what)),
    };
    ProbeResult {
        id: probe.id,
        binding,
        level: probe.level,
        spec: probe.spec,
        title: probe.title,
        status,
        detail,
        latency,
    }
}

/// Where each binding probe runs, and notes on bindings left out.
fn targets(card: Option<&Value>, choice: Bindings) -> (Vec<Target>, Vec<String>) {
    let Some(card) = card else {
        return (Vec::new(), vec!["no card was read".into()]);
    };
    let at = |binding| card::jsonrpc_url(card, binding).map(|url| Target { binding, url });
    let preferred = card::preferred(card);
    let preferred_url = preferred.and_then(|b| card::jsonrpc_url(card, b));
    let mut notes = Vec::new();
    let mut forced = |binding: Binding| match (at(binding), &preferred_url) {
        (Some(t), _) => vec![t],
        (None, Some(url)) => {
            notes.push(format!(
                "the card declares no A2A {} JSON-RPC interface; probed at its preferred URL {url}, as asked",
                binding.version()
            ));
            vec![Target {
                binding,
                url: url.clone(),
            }]
        }
        (None, None) => Vec::new(),
    };
    let targets = match choice {
        Bindings::Auto => preferred.and_then(at).into_iter().collect(),
        Bindings::V03 => forced(Binding::V03),
        Bindings::V10 => forced(Binding::V10),
        Bindings::Both => {
            let mut list = Vec::new();
            for binding in [Binding::V03, Binding::V10] {
                match at(binding) {
                    Some(t) => list.push(t),
                    None => notes.push(format!(
                        "the card declares no A2A {} JSON-RPC interface; not probed in it",
                        binding.version()
                    )),
                }
            }
            list
        }
    };
    if targets.is_empty() && notes.is_empty() {
        notes.push("the card declares no JSON-RPC interface".into());
    }
    (targets, notes)
}

/// The URIs of the extensions a card marks `required: true`.
fn required_extensions(card: &Value) -> Vec<String> {
    card.get("capabilities")
        .and_then(|c| c.get("extensions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e.get("required").and_then(Value::as_bool) == Some(true))
        .filter_map(|e| e.get("uri").and_then(Value::as_str).map(str::to_string))
        .collect()
}
