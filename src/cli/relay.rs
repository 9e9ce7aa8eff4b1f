//! `ddwire relay`: forward A2A calls between peers, a span per hop.

use super::Command;
use super::args::{Flag, Parsed};
use super::{drain, export, setup};
use crate::relay::{self, PeerSpec, Relay, RelayConfig, Topology};
use crate::wire::http;
use crate::wire::http::egress::Egress;
use std::sync::Arc;
use std::time::Duration;

pub(crate) static COMMAND: Command = Command {
    name: "relay",
    summary: "Relay A2A calls between peers, recording every hop as spans",
    usage: "relay [--host H] [--port P] [--public-url URL] [--peers FILE] [--tokens FILE] [--allow-registration] [--peer-allow CIDR|HOST,...]... [--allowed-hosts H,...] [--cors-origin ORIGIN]... [--health-interval SECS] [--star] [--traces DIR] [--timeout SECS] [--id ID] [--otlp-endpoint URL | --otlp-traces-endpoint URL [--otlp-protocol P] [--otlp-header K=V]...] [--max-connections N] [--max-connections-per-client N] [--max-body-memory MIB] [--tls-cert F --tls-key F [--tls-client-ca F]] [--ca-file F]... [--ca-only] [--tls-client-cert F --tls-client-key F] [--drain-timeout S] [--log-format text|json] [--log-level L] [--quiet] [--wire-log FILE]",
    details: "Routes: POST /a2a (and /) JSON-RPC in either A2A binding (v0.3 message/send, tasks/get,\n\
              tasks/cancel; 1.0 SendMessage, GetTask, CancelTask), forwarded to the peer the message\n\
              metadata \"agent.target\" names (\"agent.id\" names the sender), or for a call naming a\n\
              task, to the peer that answered for it; POST /peers/{id}/a2a forwards to peer id.\n\
              A call to a peer offering only the other binding is translated (sends, streams,\n\
              tasks/get, tasks/cancel);\n\
              GET /peers/{id}/.well-known/agent-card.json serves the peer's card pointing at the relay;\n\
              GET /peers (each peer's card and health), POST /peers {\"id\",\"url\",\"role\"},\n\
              DELETE /peers/{id}; GET /healthz (503 when no peer is up), GET /livez.\n\n\
              The peers file is JSON: {\"peers\": [{\"id\": \"A\", \"url\": \"http://127.0.0.1:8101\",\n\
              \"role\": \"hub\"}, ...]} (roles hub, leaf; the default leaf). With --star, every route\n\
              must have a hub at one end, on every method: a refused route is JSON-RPC -32010.\n\n\
              Each call is a SERVER span and its forward a CLIENT span, whose traceparent goes to the\n\
              peer; the A2A contextId is session.id. With --traces DIR each session's spans are\n\
              appended to DIR/<contextId>.jsonl; with --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT)\n\
              they are exported over OTLP/HTTP. A failed forward is a JSON-RPC error whose data names\n\
              its class: peer_404 (-32011), peer_timeout (-32012), peer_disconnect (-32013),\n\
              peer_invalid_reply (-32014), unknown_peer (-32015), or the peer's own error\n\
              (peer_jsonrpc_error). Streams (message/stream, SendStreamingMessage) are passed on event\n\
              by event, each a span event with its sequence number; a stream that breaks ends with\n\
              an error event naming its class, as are loop_detected (-32016: the call passed this\n\
              relay already, per its Via, or 8 relays), destination_refused (-32017) and\n\
              task_conflict (-32018: a peer answered with another peer's task id).\n\n\
              Guard (vendor-notes/relay.md): with --tokens (the harness's tokens file) every route\n\
              but /livez, /healthz and the peers' cards takes Authorization: Bearer (else 401);\n\
              POST and DELETE /peers are off (403) unless --allow-registration, and then take a\n\
              token whose entry says \"role\": \"admin\". Host, Origin and Content-Type follow\n\
              serve's rules. A peer URL is scheme://host[:port][/path] only. Peers at loopback,\n\
              link-local or metadata addresses (127/8, ::1, 169.254/16, fe80::/10, 0.0.0.0,\n\
              100.100.100.200, fd00:ec2::254) are refused unless --peer-allow names them as a\n\
              CIDR; with --peer-allow only what it names is reached (checked after DNS\n\
              resolution). Card fetches follow no redirect; a peer's reply is read up to 4 MiB.\n\
              Peers' health is checked every --health-interval seconds (default 30) in the\n\
              background; GET /peers and /healthz show the last state seen.\n\n\
              SIGTERM or SIGINT drains: /healthz answers 503, new connections are refused, calls\n\
              and streams in flight get --drain-timeout seconds (default 10; a stream still open\n\
              then ends with an error event, -32000), the OTLP queue is flushed, and the process\n\
              exits 0.",
    flags: setup::server_flags!([
        setup::HOST,
        Flag::taking("port", "P", "Port (default 8010)"),
        Flag::taking(
            "public-url",
            "URL",
            "Base URL callers reach the relay at (default the bound address)"
        ),
        Flag::taking("peers", "FILE", "Peers to start with (JSON, see above)"),
        setup::TOKENS,
        Flag::switch(
            "allow-registration",
            "Let POST and DELETE /peers change the peers (with --tokens: for admin tokens)"
        ),
        Flag::taking(
            "peer-allow",
            "CIDR|HOST,...",
            "Destinations peers may be at (CIDRs, addresses, host names, *.domain); repeatable"
        ),
        setup::ALLOWED_HOSTS,
        setup::CORS_ORIGIN,
        Flag::taking(
            "health-interval",
            "SECS",
            "How often peers' health is checked in the background (default 30)"
        ),
        Flag::switch(
            "star",
            "Enforce a star topology: every route has a hub at one end"
        ),
        Flag::taking(
            "traces",
            "DIR",
            "Append each session's spans to DIR/<contextId>.jsonl"
        ),
        Flag::taking(
            "timeout",
            "SECS",
            "How long one forward may take (default 60)"
        ),
        Flag::taking(
            "id",
            "ID",
            "The relay's agent.id on its spans (default ddwire.relay)"
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
    let peers = match args.value("peers") {
        Some(path) => {
            let bytes = super::read_input(path)?;
            PeerSpec::parse_file(&bytes, path).map_err(|e| e.to_string())?
        }
        None => Vec::new(),
    };
    // How long a hop waits for its peer.
    let timeout = args
        .seconds(
            "timeout",
            |s| s > 0.0 && s <= 3600.0,
            |s| format!("--timeout {s}: must be more than 0 and at most 3600 seconds"),
        )?
        .unwrap_or(relay::DEFAULT_TIMEOUT);
    let request_log = setup::request_log(args)?;
    let wire = setup::wire_log(args)?;
    let (bound, tls) = setup::listener(args, "relay", 8010, request_log, wire.as_ref())?;
    let scheme = bound.scheme();
    let http = setup::http_client(args, wire.as_ref())?;
    let public = args
        .value("public-url")
        .map(str::to_string)
        .unwrap_or_else(|| bound.default_public_url());
    let mut config = relay_config(args, peers, &public, http, timeout)?;
    // How often the relay reads its peers' cards again.
    let health_every = args
        .seconds(
            "health-interval",
            |s| (1.0..=86_400.0).contains(&s),
            |s| format!("--health-interval {s}: must be 1 to 86400 seconds"),
        )?
        .unwrap_or(relay::DEFAULT_HEALTH_INTERVAL);
    let authenticated = config.tokens.is_some();
    let registration = config.allow_registration;
    let topology = config.topology;
    let mut draining = drain::Draining::new(args, "relay")?;
    config.drain = Some(draining.drain.clone());
    let relay = Arc::new(Relay::new(config).map_err(|e| e.to_string())?);
    relay.check_peers();
    relay.watch_health(health_every);
    let addr = bound.local_addr();
    draining.install();
    let server = bound
        .serve(draining.drain.gate(relay::handler(relay.clone())))
        .map_err(|e| e.to_string())?;
    stderr_line!(
        "ddwire relay: on {scheme}://{addr} (public {public}); peers {:?}; topology {}",
        relay.peer_ids(),
        topology.as_str()
    );
    if !addr.ip().is_loopback() && !authenticated {
        stderr_line!(
            "ddwire relay: warning: bound beyond loopback ({addr}) without --tokens: anyone who reaches it may relay through it{}",
            if registration {
                " and change its peers (--allow-registration)"
            } else {
                ""
            }
        );
    }
    let otlp = relay.exporter().cloned();
    Ok(draining.serve_until_signal(server, tls, otlp, &|| 0, None))
}

/// The relay's configuration from its flags, for `peers`, answering at `public`, calling
/// peers through `http` within `timeout`; it starts the OTLP exporter when one is asked for.
fn relay_config(
    args: &Parsed,
    peers: Vec<PeerSpec>,
    public: &str,
    http: http::client::HttpClient,
    timeout: Duration,
) -> Result<RelayConfig, String> {
    let mut config = RelayConfig::new(peers, public);
    config.topology = if args.switch("star") {
        Topology::Star
    } else {
        Topology::Open
    };
    config.traces_dir = args.value("traces").map(std::path::PathBuf::from);
    config.exporter = export::start_exporter(args, "relay", http.clone())?;
    config.timeout = timeout;
    if let Some(id) = args.value("id") {
        config.relay_id = id.to_string();
    }
    config.http = http;
    if let Some(path) = args.value("tokens") {
        config.tokens = Some(
            crate::contract::tokens::read_tokens_file(std::path::Path::new(path))
                .map_err(|e| e.to_string())?,
        );
    }
    config.allow_registration = args.switch("allow-registration");
    config.egress = Egress::allowing(args.values("peer-allow")).map_err(|e| e.to_string())?;
    config.browser = setup::browser_policy(args, public)?;
    Ok(config)
}
