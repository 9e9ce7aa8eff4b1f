//! What `serve`, `invoke`, `agents` and `runs` share: reading the configuration they name
//! (flags first, then environment variables, then the built-in defaults).

use super::args::{Flag, Parsed};
use crate::contract::Principal;
use crate::harness::conductor::Conductor;
use crate::harness::identity::{self, Authenticator};
use crate::harness::policy::Profile;
use crate::harness::registry::{self, Registry};
use crate::harness::store::StoreError;
use crate::harness::store::{RunReader, RunStore};
use crate::wire::a2a::client::A2aClient;
use crate::wire::http::browser::BrowserPolicy;
use crate::wire::http::client::HttpClient;
use crate::wire::http::server::Bound;
use crate::wire::tls::{ClientTrust, KeyPair, ServerIdentity, ServerTls, TlsError};
use std::path::{Path, PathBuf};

pub(crate) const AGENTS: Flag = Flag::taking(
    "agents",
    "FILE",
    "Agents config, JSON (or DD_AGENTS_CONFIG; default: the built-in agents on their ports)",
);
pub(crate) const PROFILE: Flag = Flag::taking(
    "profile",
    "FILE",
    "Institutional profile, JSON (or DD_PROFILE; default: the shipped profile)",
);
pub(crate) const RUNS: Flag = Flag::taking(
    "runs",
    "DIR",
    "Run store directory (or DD_RUNS_DIR; default ./runs)",
);
pub(crate) const TOKENS: Flag = Flag::taking(
    "tokens",
    "FILE",
    "Bearer tokens: JSON map of token SHA-256 digests to principals",
);
pub(crate) const ALLOWED_HOSTS: Flag = Flag::taking(
    "allowed-hosts",
    "H,...",
    "Host names accepted besides IP addresses, localhost and the public URL's host (* for any)",
);
pub(crate) const CORS_ORIGIN: Flag = Flag::taking(
    "cors-origin",
    "ORIGIN",
    "An origin (scheme://host[:port]) whose pages may call the server; repeatable",
);

/// The browser rules of a server at `public` (`--allowed-hosts`, `--cors-origin`), as `serve`
/// and `relay` apply them.
pub(crate) fn browser_policy(args: &Parsed, public: &str) -> Result<BrowserPolicy, String> {
    BrowserPolicy::new(public)
        .allow_hosts(allowed_hosts(args))
        .allow_origins(args.values("cors-origin"))
        .map_err(|e| e.to_string())
}

/// Every host name `--allowed-hosts` lists, however many times it is given.
pub(crate) fn allowed_hosts(args: &Parsed) -> impl Iterator<Item = &str> {
    args.values("allowed-hosts")
        .iter()
        .flat_map(|v| v.split(','))
}
pub(crate) const ACTING_FOR_ID: Flag = Flag::taking(
    "acting-for-id",
    "IRI",
    "Whom runs act for (or DD_PRINCIPAL_ID)",
);
pub(crate) const ACTING_FOR_NAME: Flag = Flag::taking(
    "acting-for-name",
    "NAME",
    "Their name (or DD_PRINCIPAL_NAME)",
);

pub(crate) const REPLAY_WINDOW: Flag = Flag::taking(
    "replay-window",
    "S",
    "How far a signed call's time may be from this clock, in seconds (default 300)",
);

/// `--replay-window`, in whole seconds (default 300).
pub(crate) fn replay_window(args: &Parsed) -> Result<std::time::Duration, String> {
    Ok(args.at_least_one("replay-window", " second")?.map_or(
        crate::wire::sign::DEFAULT_WINDOW,
        std::time::Duration::from_secs,
    ))
}

/// `--host`, the address every server command binds.
pub(crate) const HOST: Flag = Flag::taking("host", "H", "Address to bind (default 127.0.0.1)");

/// The flags of a command that serves (`serve`, `relay`, `agent`), in the order `--help` lists
/// them: its own, then the listener's (TLS, limits, drain timeout), then any listed before the
/// log flags (`agent`'s `--delay`), then the log flags.
macro_rules! server_flags {
    ([$($own:expr),* $(,)?] $(, [$($late:expr),* $(,)?])?) => {
        &[
            $($own,)*
            $crate::cli::setup::TLS_CERT,
            $crate::cli::setup::TLS_KEY,
            $crate::cli::setup::TLS_CLIENT_CA,
            $crate::cli::setup::CA_FILE,
            $crate::cli::setup::CA_ONLY,
            $crate::cli::setup::TLS_CLIENT_CERT,
            $crate::cli::setup::TLS_CLIENT_KEY,
            $crate::cli::setup::MAX_CONNECTIONS,
            $crate::cli::setup::MAX_CONNECTIONS_PER_CLIENT,
            $crate::cli::setup::MAX_BODY_MEMORY,
            $crate::cli::drain::DRAIN_TIMEOUT,
            $($($late,)*)?
            $crate::cli::setup::LOG_FORMAT,
            $crate::cli::setup::LOG_LEVEL,
            $crate::cli::setup::QUIET,
            $crate::cli::setup::WIRE_LOG,
        ]
    };
}
pub(crate) use server_flags;

pub(crate) const MAX_CONNECTIONS: Flag = Flag::taking(
    "max-connections",
    "N",
    "Connections served at once; one more gets 503 (default 1024)",
);

pub(crate) const MAX_CONNECTIONS_PER_CLIENT: Flag = Flag::taking(
    "max-connections-per-client",
    "N",
    "Connections one client address holds at once; one more gets 503 (default 64)",
);
pub(crate) const MAX_BODY_MEMORY: Flag = Flag::taking(
    "max-body-memory",
    "MIB",
    "MiB of request bodies held at once; past it a body waits 1 s, then gets 503 (default 64)",
);

/// The HTTP server's limits: the defaults, with `--max-connections`,
/// `--max-connections-per-client` and `--max-body-memory` if given.
pub(crate) fn server_limits(args: &Parsed) -> Result<crate::wire::http::Limits, String> {
    let mut limits = crate::wire::http::Limits::DEFAULT;
    if let Some(n) = args.at_least_one("max-connections", "")? {
        limits.max_connections = n;
    }
    if let Some(n) = args.at_least_one("max-connections-per-client", "")? {
        limits.max_connections_per_client = n;
    }
    if let Some(mib) = args.number::<usize>("max-body-memory")? {
        let bytes = mib.saturating_mul(1024 * 1024);
        if bytes < limits.max_body_bytes {
            return Err(format!(
                "--max-body-memory must be at least {} (MiB): one whole request body",
                limits.max_body_bytes / (1024 * 1024)
            ));
        }
        limits.max_body_memory = bytes;
    }
    Ok(limits)
}

/// A server command's listener: bound to `--host` (default 127.0.0.1) and `--port` (default
/// `default_port`) within the limits the flags give, logging requests to `request_log` and
/// every message to `wire`, over TLS when `--tls-cert` is given. The TLS identity is returned
/// too, for the drain to reload on SIGHUP; `who` names the command in what its watcher prints.
pub(crate) fn listener(
    args: &Parsed,
    who: &'static str,
    default_port: u16,
    request_log: Option<std::sync::Arc<crate::wire::http::log::RequestLog>>,
    wire: Option<&crate::wire::wirelog::WireLog>,
) -> Result<(Bound, Option<ServerIdentity>), String> {
    let host = args.value("host").unwrap_or("127.0.0.1");
    let port: u16 = args.number("port")?.unwrap_or(default_port);
    let limits = server_limits(args)?;
    let mut bound = crate::wire::http::server::bind(&format!("{host}:{port}"), limits)
        .map_err(|e| e.to_string())?;
    if let Some(log) = request_log {
        bound = bound.with_request_log(log);
    }
    if let Some(log) = wire {
        bound = bound.with_wire_log(log.clone());
    }
    let tls = server_tls(args, who)?;
    if let Some(identity) = &tls {
        bound = bound.with_tls(identity.clone());
    }
    Ok((bound, tls))
}

/// `value` if it is an http:// or https:// URL; else a message naming `what` and the fix.
pub(crate) fn http_url(what: &str, value: &str) -> Result<String, String> {
    let v = value.trim();
    let lower = v.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Ok(v.trim_end_matches('/').to_string());
    }
    if lower.contains("://") {
        return Err(format!(
            "{what} {value:?} must be an http:// or https:// URL"
        ));
    }
    Err(format!(
        "{what} {value:?} needs its scheme: write http://{v} (or https://)"
    ))
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `--flag`'s value, else the environment variable `var` unless it is empty.
pub(crate) fn flag_or_env(args: &Parsed, flag: &str, var: &str) -> Option<String> {
    args.value(flag).map(str::to_string).or_else(|| env(var))
}

/// The run store the flags or `DD_RUNS_DIR` name, default `./runs`.
pub(crate) fn runs_dir(args: &Parsed) -> PathBuf {
    PathBuf::from(flag_or_env(args, "runs", "DD_RUNS_DIR").unwrap_or_else(|| "runs".into()))
}

/// What every "which store" message ends with.
pub(crate) const RUNS_HINT: &str =
    "name the run store with --runs DIR or DD_RUNS_DIR (default ./runs)";

/// Open the run store for writing (creating it if need be), logging what recovery repaired.
pub(crate) fn store(args: &Parsed) -> Result<RunStore, String> {
    let dir = runs_dir(args);
    let (store, recovery) =
        RunStore::open_reporting(&dir).map_err(|e| format!("run store {}: {e}", dir.display()))?;
    if !recovery.is_clean() {
        stderr_line!(
            "ddwire: recovered the run store {}: {recovery}",
            store.shown_root().display()
        );
    }
    Ok(store)
}

/// Open the run store for reading only: nothing is created or changed, and a directory that
/// does not exist is an error naming it.
pub(crate) fn reader(args: &Parsed) -> Result<RunReader, String> {
    RunReader::open(runs_dir(args)).map_err(|e| format!("{e}; {RUNS_HINT}"))
}

/// The id of the stored run `reference` names (a whole id or a unique prefix).
pub(crate) fn resolve(store: &RunReader, reference: &str) -> Result<String, String> {
    store.resolve(reference).map_err(|e| match e {
        crate::harness::HarnessError::Store(StoreError::NoSuchRun { .. }) => {
            format!("{e}; {RUNS_HINT}")
        }
        other => other.to_string(),
    })
}

/// The deployment's profile.
pub(crate) fn profile(args: &Parsed) -> Result<Profile, String> {
    match flag_or_env(args, "profile", "DD_PROFILE") {
        Some(path) => Profile::load(Path::new(&path)).map_err(|e| {
            format!("{e} (--profile FILE or DD_PROFILE; `ddwire profile --explain` gives the keys)")
        }),
        None => Ok(Profile::default_profile()),
    }
}

/// The registry, from the agents config (reading every card).
pub(crate) fn registry(args: &Parsed, client: &A2aClient) -> Result<Registry, String> {
    if let Some(path) = flag_or_env(args, "agents", "DD_AGENTS_CONFIG") {
        return Registry::from_config_file(client, Path::new(&path)).map_err(|e| {
            format!("{e} (--agents FILE or DD_AGENTS_CONFIG; examples/agents.json shows the shape)")
        });
    }
    let built_in = registry::DEFAULT_AGENTS_CONFIG.as_bytes();
    let entries =
        registry::parse_config(built_in, "<built-in agents config>").map_err(|e| e.to_string())?;
    Registry::from_config(client, &entries).map_err(|e| e.to_string())
}

/// The configured operator principal; refuses to go on without one.
pub(crate) fn principal(args: &Parsed) -> Result<Principal, String> {
    identity::configured_principal(
        args.value("acting-for-id"),
        args.value("acting-for-name"),
        None,
    )
    .map_err(|e| e.to_string())
}

/// The authenticator: bearer tokens when `--tokens` is given, else the operator assertion.
pub(crate) fn authenticator(args: &Parsed) -> Result<Authenticator, String> {
    match args.value("tokens") {
        Some(path) => Authenticator::bearer_from_file(Path::new(path)).map_err(|e| e.to_string()),
        None => principal(args).map(Authenticator::Operator),
    }
}

/// A conductor from the flags, calling agents through `client`. With `--read-only` its run
/// store is opened read-only: it serves stored runs and makes none.
pub(crate) fn conductor(args: &Parsed, client: A2aClient) -> Result<Conductor, String> {
    let registry = registry(args, &client)?;
    let read_only = args
        .switch("read-only")
        .then(|| RunStore::open_read_only(runs_dir(args)));
    let read_only = read_only
        .transpose()
        .map_err(|e| format!("{e}; {RUNS_HINT}"))?;
    let profile = profile(args)?;
    let store = match read_only {
        Some(store) => store,
        None => store(args)?,
    };
    Ok(Conductor::new(registry, profile, store, client))
}

/// Report agents that could not be admitted, on stderr.
pub(crate) fn report_registry(registry: &Registry) {
    for (name, reason) in &registry.unavailable() {
        stderr_line!("  [{name}] unavailable: {reason}");
    }
    for (name, reason) in &registry.incompatible() {
        stderr_line!("  [{name}] incompatible: {reason}");
    }
}

/// How to draw for `out`: `--width`, else `COLUMNS`, else the default width; colour only when
/// `out` is a terminal and `NO_COLOR` is not set to something (no-color.org).
pub(crate) fn terminal(
    args: &Parsed,
    out: &impl std::io::IsTerminal,
) -> Result<crate::trace::waterfall::Options, String> {
    Ok(crate::trace::waterfall::Options {
        width: args.at_least_one("width", "")?.unwrap_or_else(columns),
        color: color(out),
        summary: true,
    })
}

/// The terminal's width as `COLUMNS` gives it, else the waterfall's default.
pub(crate) fn columns() -> usize {
    env("COLUMNS")
        .and_then(|c| c.trim().parse().ok())
        .filter(|&c: &usize| c > 0)
        .unwrap_or(crate::trace::waterfall::DEFAULT_WIDTH)
}

/// Whether to colour what goes to `out`: only a terminal, and not when `NO_COLOR` is set to
/// something (no-color.org).
pub(crate) fn color(out: &impl std::io::IsTerminal) -> bool {
    out.is_terminal() && env("NO_COLOR").is_none()
}

pub(crate) const LOG_FORMAT: Flag = Flag::taking(
    "log-format",
    "F",
    "Request log lines as text or json (default text)",
);
pub(crate) const LOG_LEVEL: Flag = Flag::taking(
    "log-level",
    "L",
    "Log requests at error, warn, info or debug (or DD_LOG; default info)",
);
pub(crate) const QUIET: Flag = Flag::switch("quiet", "Log no requests");
pub(crate) const WIRE_LOG: Flag = Flag::taking(
    "wire-log",
    "FILE",
    "Append every HTTP message in and out to FILE, byte for byte (see `ddwire wirelog`)",
);

/// The request log the flags ask for: none with `--quiet`, else stderr at `--log-level` (or
/// `DD_LOG`, else info) in `--log-format` (default text).
pub(crate) fn request_log(
    args: &Parsed,
) -> Result<Option<std::sync::Arc<crate::wire::http::log::RequestLog>>, String> {
    use crate::wire::http::log::{Format, Level, RequestLog};
    let format = args
        .value("log-format")
        .map_or(Ok(Format::Text), str::parse);
    let format = format.map_err(|e| format!("--log-format: {e}"))?;
    let level: Level = match (args.value("log-level"), env("DD_LOG")) {
        (Some(l), _) => l.parse().map_err(|e| format!("--log-level: {e}"))?,
        (None, Some(l)) => l.parse().map_err(|e| format!("DD_LOG: {e}"))?,
        (None, None) => Level::Info,
    };
    if args.switch("quiet") {
        return Ok(None);
    }
    Ok(Some(std::sync::Arc::new(RequestLog::stderr(format, level))))
}

/// The wire log `--wire-log FILE` names, opened for appending.
pub(crate) fn wire_log(args: &Parsed) -> Result<Option<crate::wire::wirelog::WireLog>, String> {
    args.value("wire-log")
        .map(|path| crate::wire::wirelog::WireLog::create(path).map_err(|e| e.to_string()))
        .transpose()
}

pub(crate) const CA_FILE: Flag = Flag::taking(
    "ca-file",
    "FILE",
    "Trust this CA (PEM) for https:// calls besides the system's (or DD_CA_FILE); repeatable",
);
pub(crate) const CA_ONLY: Flag = Flag::switch(
    "ca-only",
    "Trust only the --ca-file CAs, not the system's (air-gapped installs)",
);
pub(crate) const TLS_CLIENT_CERT: Flag = Flag::taking(
    "tls-client-cert",
    "FILE",
    "Present this certificate chain (PEM) to servers that ask for one (mTLS)",
);
pub(crate) const TLS_CLIENT_KEY: Flag = Flag::taking(
    "tls-client-key",
    "FILE",
    "The client certificate's private key (PEM, chmod 600)",
);
pub(crate) const TLS_CERT: Flag = Flag::taking(
    "tls-cert",
    "FILE",
    "Serve over TLS with this certificate chain (PEM); reloaded on SIGHUP or change",
);
pub(crate) const TLS_KEY: Flag = Flag::taking(
    "tls-key",
    "FILE",
    "The certificate's private key (PEM, chmod 600)",
);
pub(crate) const TLS_CLIENT_CA: Flag = Flag::taking(
    "tls-client-ca",
    "FILE",
    "Require client certificates signed by this CA (PEM): mTLS",
);

/// A flag pair given whole or not at all: both values, or neither.
fn pair(args: &Parsed, a: &str, b: &str) -> Result<Option<KeyPair>, String> {
    match (args.value(a), args.value(b)) {
        (Some(cert), Some(key)) => Ok(Some(KeyPair {
            cert: PathBuf::from(cert),
            key: PathBuf::from(key),
        })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(format!("--{a} needs --{b}")),
        (None, Some(_)) => Err(format!("--{b} needs --{a}")),
    }
}

/// Whom outbound calls trust: `--ca-file` (repeatable) or `DD_CA_FILE`, `--ca-only`, and the
/// client certificate `--tls-client-cert`/`--tls-client-key` present.
pub(crate) fn client_trust(args: &Parsed) -> Result<ClientTrust, String> {
    let mut ca_files: Vec<PathBuf> = args.values("ca-file").iter().map(PathBuf::from).collect();
    if ca_files.is_empty()
        && let Some(file) = env("DD_CA_FILE")
    {
        ca_files.push(PathBuf::from(file));
    }
    let ca_only = args.switch("ca-only");
    if ca_only && ca_files.is_empty() {
        return Err("--ca-only trusts only the --ca-file CAs: give --ca-file FILE".into());
    }
    Ok(ClientTrust {
        ca_files,
        ca_only,
        insecure: false,
        client_cert: pair(args, "tls-client-cert", "tls-client-key")?,
    })
}

/// An HTTP client over TCP trusting what `trust` names, writing to `wire` when given.
pub(crate) fn http_client_trusting(
    trust: &ClientTrust,
    wire: Option<&crate::wire::wirelog::WireLog>,
) -> Result<HttpClient, String> {
    let client = HttpClient::tcp_trusting(trust).map_err(|e| tls_message(trust, e))?;
    Ok(match wire {
        Some(log) => client.logged(log.clone()),
        None => client,
    })
}

/// An HTTP client over TCP with the trust the flags give, writing to `wire` when given.
pub(crate) fn http_client(
    args: &Parsed,
    wire: Option<&crate::wire::wirelog::WireLog>,
) -> Result<HttpClient, String> {
    http_client_trusting(&client_trust(args)?, wire)
}

/// A TLS error, naming the flag whose file it is about.
fn tls_message(trust: &ClientTrust, e: TlsError) -> String {
    match e {
        TlsError::NotBuilt => {
            let flag = if trust.insecure {
                "--insecure"
            } else if trust.client_cert.is_some() {
                "--tls-client-cert"
            } else {
                "--ca-file"
            };
            format!("{flag}: {e}")
        }
        other => other.to_string(),
    }
}

/// The listener's TLS identity `--tls-cert`/`--tls-key` (and `--tls-client-ca`) name, read
/// now and watched for changes; `None` without them.
pub(crate) fn server_tls(
    args: &Parsed,
    who: &'static str,
) -> Result<Option<ServerIdentity>, String> {
    let Some(identity) = pair(args, "tls-cert", "tls-key")? else {
        return match args.value("tls-client-ca") {
            Some(_) => Err("--tls-client-ca needs --tls-cert and --tls-key".into()),
            None => Ok(None),
        };
    };
    let tls = ServerTls {
        identity,
        client_ca: args.value("tls-client-ca").map(PathBuf::from),
    };
    let loaded = ServerIdentity::load(&tls).map_err(|e| match e {
        TlsError::NotBuilt => format!("--tls-cert: {e}"),
        other => other.to_string(),
    })?;
    loaded.watch(who, CERT_WATCH_EVERY);
    Ok(Some(loaded))
}

/// How often a listener's certificate files are checked for a change.
pub(crate) const CERT_WATCH_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// `call` given an HTTP client with the trust the flags give, writing to `--wire-log` when
/// given. The log is closed once `call` returns: what is queued and the closing line are
/// written, and stderr says (under `who`) if anything was not logged.
pub(crate) fn with_client<T>(
    args: &Parsed,
    who: &str,
    call: impl FnOnce(HttpClient) -> T,
) -> Result<T, String> {
    let wire = wire_log(args)?;
    let answered = call(http_client(args, wire.as_ref())?);
    if let Some(log) = &wire {
        let stats = log.close(std::time::Duration::from_secs(10));
        if stats.dropped > 0 || stats.failed > 0 {
            stderr_line!("ddwire {who}: wire log {}: {stats}", log.path().display());
        }
    }
    Ok(answered)
}
