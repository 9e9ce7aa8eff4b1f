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
use probes::{Ctx, Outcome, PROBES, Probe, Run};
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
    let strict = options.strict;
    let mut results = Vec::new();
    let https = crate::wire::tls::is_https(&options.url);
    for probe in PROBES {
        let Run::Card(f) = probe.run else { continue };
        let run = if ctx.tls_failed {
            Planned::Skip("the TLS handshake failed".to_string())
        } else {
            Planned::Run(|| f(&mut ctx))
        };
        let result = record(probe, None, strict, run);
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
        ctx.wire.extensions = card::required_extensions(&card.value);
    }
    // With no binding to probe, each binding probe is listed once, skipped.
    let runs: Vec<Option<&Target>> = if targets.is_empty() {
        vec![None]
    } else {
        targets.iter().map(Some).collect()
    };
    for target in runs {
        for probe in PROBES {
            let Run::Binding(f) = probe.run else { continue };
            let run = match target {
                Some(t) => Planned::Run(|| {
                    f(&mut ctx, t).unwrap_or_else(|e| Outcome::Violation(format!("no answer: {e}")))
                }),
                None => Planned::Skip(notes.first().cloned().unwrap_or_default()),
            };
            results.push(record(probe, target.map(|t| t.binding), strict, run));
        }
    }
    Ok(Report {
        url: options.url.clone(),
        card_url: ctx.card.as_ref().map(|c| c.url.clone()),
        bindings: targets.iter().map(|t| t.binding).collect(),
        notes,
        strict,
        insecure: options.insecure,
        results,
        elapsed: start.elapsed(),
    })
}

/// A probe to run, or the reason it is skipped unrun.
enum Planned<F> {
    Run(F),
    Skip(String),
}

/// A probe's result: its function run and timed, or a skip for the reason given, which
/// took no time.
fn record(
    probe: &Probe,
    binding: Option<Binding>,
    strict: bool,
    run: Planned<impl FnOnce() -> Outcome>,
) -> ProbeResult {
    let start = Instant::now();
    let (outcome, latency) = match run {
        Planned::Run(f) => (f(), start.elapsed()),
        Planned::Skip(why) => (Outcome::Skip(why), Duration::ZERO),
    };
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
    let preferred = Target::from_card(card).ok();
    let mut notes = Vec::new();
    let mut forced = |binding: Binding| match (at(binding), &preferred) {
        (Some(t), _) => vec![t],
        (None, Some(p)) => {
            notes.push(format!(
                "the card declares no A2A {} JSON-RPC interface; probed at its preferred URL {}, as asked",
                binding.version(),
                p.url
            ));
            vec![Target {
                binding,
                url: p.url.clone(),
            }]
        }
        (None, None) => Vec::new(),
    };
    let targets = match choice {
        Bindings::Auto => preferred.clone().into_iter().collect(),
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
