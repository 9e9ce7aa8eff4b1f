//! `ddwire serve`: the harness over HTTP (A2A, AG-UI, JSON routes).

use super::Command;
use super::args::{Flag, Parsed};
use super::{drain, export, setup};
use crate::harness::conductor::Conductor;
use crate::harness::identity::{self, Authenticator};
use crate::harness::registry::{self, Registry};
use crate::harness::server::{self, Harness};
use crate::wire::a2a::client::A2aClient;
use std::net::SocketAddr;
use std::sync::Arc;

/// The longest `--approval-for` taken: ten years.
const MAX_APPROVAL_FOR_S: u64 = 10 * 365 * 86_400;

pub(crate) static COMMAND: Command = Command {
    name: "serve",
    summary: "Serve the harness: A2A, AG-UI and JSON routes",
    usage: "serve [--host H] [--port P] [--public-url URL] [--agents F] [--profile F] [--runs DIR] [--read-only] [--tokens F] [--allowed-hosts H,...] [--cors-origin ORIGIN]... [--acting-for-id IRI --acting-for-name NAME] [--replay-window S] [--suspend-for S] [--approval-for S] [--otlp-endpoint URL | --otlp-traces-endpoint URL [--otlp-protocol P] [--otlp-header K=V]...] [--max-connections N] [--max-connections-per-client N] [--max-body-memory MIB]\n       \
            [--tls-cert F --tls-key F [--tls-client-ca F]] [--ca-file F]... [--ca-only] [--tls-client-cert F --tls-client-key F]\n       \
            [--drain-timeout S] [--log-format text|json] [--log-level L] [--quiet] [--wire-log FILE]",
    details: "Routes: POST /a2a (and /) JSON-RPC, A2A v0.3 message/send and A2A 1.0 SendMessage,\n\
              GetTask/tasks/get, CancelTask/tasks/cancel and ListTasks (1.0; the caller's runs);\n\
              GET /.well-known/agent-card.json; POST /agui (AG-UI over SSE); GET /agui/runs/{id}\n\
              (replay); GET /runs (?limit=&after=&agent=&status=&principal=&conversation=\n\
              &since=&until=; with limit, a Link: rel=\"next\" header), /runs/{id},\n\
              /runs/{id}/spans (JSON lines), /runs/{id}/grounding (the grounding report as JSON),\n\
              /runs/{id}/waterfall (the run and its delegated runs as ddwire show --json gives\n\
              them, which the viewer draws),\n\
              /runs/{id}/agent-result, /runs/{id}/approval, /conversations, /conversations/{id},\n\
              /agents, /agents/{id}; POST /runs/{id}/approve and /runs/{id}/decline (a data\n\
              steward's decision on a referred run, below);\n\
              POST /agents/refresh (read the --agents file and every agent card again now, as\n\
              SIGHUP does; with --tokens it needs a bearer token, as an invocation does); GET /livez (200 while the process runs) and\n\
              /healthz (readiness as JSON: store writable, agents available of configured, runs\n\
              in flight, open connections, export queue; 503 when not ready); GET /viewer, the\n\
              runs, their traces and a form that starts an invocation, in one self-contained page\n\
              (no external assets). A run id may be a unique prefix.\n\n\
              Each run is a trace of its own: a caller's traceparent (the A2A message's metadata\n\
              or the HTTP header, or the AG-UI request's header) becomes a link on its root span,\n\
              and the reply's traceresponse header (W3C Trace Context Level 2) names that root.\n\n\
              One line per request goes to stderr once it is answered (time, method, target,\n\
              status, bytes, duration, peer, connection, run and principal when known): text or\n\
              --log-format json; --log-level or DD_LOG picks error (5xx), warn (and 4xx), info\n\
              (every request, the default) or debug (with user agent and request size); --quiet\n\
              logs none. --wire-log FILE appends every HTTP message in and out, byte for byte,\n\
              with credentials masked (vendor-notes/wire-log.md; read it with ddwire wirelog).\n\n\
              Agents may start before or after the harness: one that is unavailable is fetched\n\
              again in the background (after 1 s, doubling to 30 s; every card again each 60 s,\n\
              so a changed card is checked again), and at once when an invocation names an agent\n\
              the harness does not know. A card without the Data Director extension is listed as\n\
              incompatible, with what to add (vendor-notes/a2a.md).\n\n\
              SIGTERM or SIGINT drains: /healthz answers 503, new connections are refused, runs\n\
              in flight get --drain-timeout seconds to finish and be stored, AG-UI streams still\n\
              open then end with RUN_ERROR shutting_down, runs still waiting on an agent are\n\
              canceled and stored (a blocking A2A call gets -32042 shutting_down), the run\n\
              store is closed, the OTLP queue is flushed, and the\n\
              process exits 0. A second signal exits at once, with status 1.\n\n\
              Several harnesses may share one --runs store. With --read-only the store is\n\
              never written (it may be on a read-only file system): stored runs are served,\n\
              and every invocation is refused.\n\n\
              Whom runs act for comes from credentials, never from a request: with --tokens,\n\
              each caller presents Authorization: Bearer <token>; without, every run acts for\n\
              the operator's principal (DD_PRINCIPAL_ID / DD_PRINCIPAL_NAME or the flags), and\n\
              serve refuses to start without one (but with --read-only, which runs nothing).\n\
              Bound beyond loopback without --tokens, it warns.\n\
              With --tokens, reading runs needs a token too (401 without): /runs, /runs/{id}/...,\n\
              /agui/runs/{id}, /conversations and GetTask/CancelTask show a caller its own runs\n\
              (and runs delegated on its behalf); another principal's run is not found. A token\n\
              whose entry has \"role\": \"auditor\" reads every run.\n\n\
              A run the profile refers to a data steward (actions_requiring_approval) waits for\n\
              one: a token whose entry has \"role\": \"steward\" reads every run and may approve\n\
              or decline it, once, within --approval-for seconds of the referral (default 86400),\n\
              with POST /runs/{id}/approve or /decline (body empty or {\"reason\": \"...\"}),\n\
              `ddwire approve`/`ddwire decline`, or the viewer. An approval runs the agent on the\n\
              same input, for the same principal, as a new run linked to the referred one; it is\n\
              refused if the profile, the agent's version or the input changed since. Only a\n\
              steward may decide (403), and a decision is never taken twice (409).\n\n\
              Browsers: a POST must be application/json (or application/*+json), else 415; the\n\
              Host must be an IP address, localhost, the public URL's host or an --allowed-hosts\n\
              name, else 421; a request with an Origin other than the harness's own is refused\n\
              (403) unless given with --cors-origin, which also answers CORS preflight for it.\n\n\
              A task is a run, named by its invocation_id. A send with returnImmediately: true\n\
              (1.0) or blocking: false (0.3) is answered at once with the task submitted, and the\n\
              run goes on in the background (at most 64 at once); CancelTask stops waiting for\n\
              the agent and stores the run as failed, agent-error \"<agent>: Canceled: ...\".\n\
              message/stream (0.3) and SendStreamingMessage (1.0) stream a run as SSE: the task,\n\
              a working update per conductor stage, the envelope after every check, a final\n\
              update; tasks/resubscribe and SubscribeToTask follow a running task. A run its\n\
              agent suspends answers input-required; the same principal resumes it with a\n\
              message on that task carrying one data part, within --suspend-for seconds.\n\n\
              An agent entry with \"key_file\" in the agents config shares that secret with the\n\
              agent (serve it with ddwire agent NAME --key-file F): every call to it is signed\n\
              (HMAC-SHA256, vendor-notes/hmac-signing.md), and its delegation callbacks must be.\n\n\
              With --otlp-endpoint or --otlp-traces-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT), each run\n\
              is exported over OTLP/HTTP once stored, from a bounded queue on a thread of its own:\n\
              export never slows or fails a run; a busy or unreachable receiver is retried with\n\
              backoff, and what is dropped or fails is reported on stderr. `ddwire export --help`\n\
              lists the OTEL_* variables read.",
    flags: setup::server_flags!([
        setup::HOST,
        Flag::taking("port", "P", "Port (default 8000)"),
        Flag::taking(
            "public-url",
            "URL",
            "Base URL on the card and for delegation callbacks (or DD_HARNESS_URL)"
        ),
        setup::AGENTS,
        setup::PROFILE,
        setup::RUNS,
        Flag::switch(
            "read-only",
            "Open the run store read-only: serve stored runs, make none"
        ),
        setup::TOKENS,
        setup::ALLOWED_HOSTS,
        setup::CORS_ORIGIN,
        setup::ACTING_FOR_ID,
        setup::ACTING_FOR_NAME,
        setup::REPLAY_WINDOW,
        Flag::taking(
            "suspend-for",
            "S",
            "Seconds a suspended run (input-required) waits to be resumed (default 3600)"
        ),
        Flag::taking(
            "approval-for",
            "S",
            "Seconds after its referral a steward may approve a referred run (default 86400)"
        ),
        export::OTLP_ENDPOINT,
        export::OTLP_TRACES_ENDPOINT,
        export::OTLP_PROTOCOL,
        export::OTLP_HEADER,
    ]),
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    args.no_arguments()?;
    // A read-only harness makes no run, so whom runs act for need not be configured: without
    // --tokens it reads as an operator would (every stored run).
    let authenticator = match setup::authenticator(args) {
        Err(_) if args.switch("read-only") && args.value("tokens").is_none() => {
            Authenticator::Operator(
                identity::configured_principal(
                    Some("urn:ddwire:read-only"),
                    Some("read-only viewer"),
                    Some("accountable_role"),
                )
                .map_err(|e| e.to_string())?,
            )
        }
        other => other?,
    };
    let request_log = setup::request_log(args)?;
    let wire = setup::wire_log(args)?;
    let http = setup::http_client(args, wire.as_ref())?;
    let client = A2aClient::new(http.clone());
    let mut conductor = conductor(args, client)?;
    conductor.otlp = export::start_exporter(args, "serve", http)?;
    let exporting = conductor
        .otlp
        .as_ref()
        .map(|x| {
            format!(
                "; each run exported to {} ({})",
                x.config().endpoint,
                x.config().encoding.protocol()
            )
        })
        .unwrap_or_default();
    let (bound, tls) = setup::listener(args, "serve", 8000, request_log, wire.as_ref())?;
    let scheme = bound.scheme();
    let public = setup::flag_or_env(args, "public-url", "DD_HARNESS_URL")
        .unwrap_or_else(|| bound.default_public_url());
    let addr = bound.local_addr();
    let registry = conductor.registry.clone();
    setup::report_registry(&registry);
    let bearer = authenticator.requires_credentials();
    let window = setup::replay_window(args)?;
    let mut draining = drain::Draining::new(args, "serve")?;
    let otlp = conductor.otlp.clone();
    let browser = setup::browser_policy(args, &public)?;
    let harness = Arc::new(
        Harness::new(conductor, Some(authenticator), &public)
            .with_replay_window(window)
            .with_open_connections(bound.open_connections())
            .with_drain(draining.drain.clone())
            .with_browser_policy(browser),
    );
    draining.install();
    let server = bound
        .serve(server::handler(Arc::clone(&harness)))
        .map_err(|e| e.to_string())?;
    registry.refresh_in_background();
    stderr_line!(
        "ddwire serve: harness on {scheme}://{addr} (public {public}); agents {:?}; {} unavailable, {} incompatible{exporting}",
        registry.ids(),
        registry.unavailable().len(),
        registry.incompatible().len()
    );
    announce(args, &public, &registry, addr, bearer);
    let busy = || harness.conductor.running();
    let reload_agents = || match harness.conductor.registry.reload() {
        Ok(r) => stderr_line!(
            "ddwire serve: SIGHUP: agents configuration read again: {} added, {} changed, {} removed; {} unavailable, {} incompatible",
            r.added.len(),
            r.changed.len(),
            r.removed.len(),
            r.unavailable,
            r.incompatible
        ),
        Err(e) => stderr_line!(
            "ddwire serve: SIGHUP: agents configuration not read again, nothing changed: {e}"
        ),
    };
    let code = draining.serve_until_signal(server, tls, otlp, &busy, Some(&reload_agents));
    // Idle kept-alive connections (a delegation agent's above all) still hold the harness, so
    // the store would never be dropped: close it here, leaving no writer for the next start.
    harness.conductor.store.close();
    Ok(code)
}

/// The conductor `setup` configures, with how long a run may stay suspended or referred.
fn conductor(args: &Parsed, client: A2aClient) -> Result<Conductor, String> {
    let mut conductor = setup::conductor(args, client)?;
    if let Some(s) = args.at_least_one("suspend-for", " second")? {
        conductor.suspend_for = std::time::Duration::from_secs(s);
    }
    match args.at_least_one("approval-for", " second")? {
        None => {}
        Some(s) if s > MAX_APPROVAL_FOR_S => {
            return Err(format!(
                "--approval-for {s} is more than ten years ({MAX_APPROVAL_FOR_S} s); a referral \
                 should not wait that long"
            ));
        }
        Some(s) => conductor.approve_for = std::time::Duration::from_secs(s),
    }
    Ok(conductor)
}

/// What a newcomer needs to know once the harness serves: when unavailable agents are fetched
/// again, where the viewer is, what a browser may do, and whether reads need a token.
fn announce(args: &Parsed, public: &str, registry: &Registry, addr: SocketAddr, bearer: bool) {
    if !registry.unavailable().is_empty() {
        stderr_line!(
            "ddwire serve: unavailable agents are fetched again in the background (after {} s, \
             doubling to {} s), and at once when an invocation names an unknown agent or on \
             POST /agents/refresh: start them in any order",
            registry::RETRY_FIRST.as_secs(),
            registry::RETRY_MAX.as_secs()
        );
    }
    stderr_line!("ddwire serve: viewer at {public}/viewer");
    let hosts: Vec<&str> = setup::allowed_hosts(args)
        .filter(|h| !h.trim().is_empty())
        .collect();
    let origins = args.values("cors-origin");
    stderr_line!(
        "ddwire serve: browsers: Host must be an IP address, localhost, the public URL's host{}; cross-origin calls from {}",
        if hosts.is_empty() {
            String::new()
        } else {
            format!(" or {}", hosts.join(", "))
        },
        if origins.is_empty() {
            "no other origin (--cors-origin)".to_string()
        } else {
            origins.join(", ")
        }
    );
    if bearer {
        stderr_line!(
            "ddwire serve: reads need a bearer token: each principal sees its own runs, an auditor or a steward all"
        );
    }
    if !addr.ip().is_loopback() && !bearer {
        stderr_line!(
            "ddwire serve: warning: bound beyond loopback ({addr}) without --tokens: every caller acts for the operator's principal"
        );
    }
}
