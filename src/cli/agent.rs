//! `ddwire agent NAME`: serve one of the built-in agents over A2A.

use super::Command;
use super::args::{self, Flag, Parsed};
use super::{drain, setup};
use crate::agent::{builtin, server};
use crate::wire::a2a::client::A2aClient;
use crate::wire::sign::Key;
use std::path::Path;

pub(crate) static COMMAND: Command = Command {
    name: "agent",
    summary: "Serve a built-in agent over A2A",
    usage: "agent NAME [--host H] [--port P] [--public-url URL] [--key-file F [--replay-window S]] [--max-connections N] [--max-connections-per-client N] [--max-body-memory MIB] [--delay D]\n       \
            [--tls-cert F --tls-key F [--tls-client-ca F]] [--ca-file F]... [--ca-only] [--tls-client-cert F --tls-client-key F]\n       \
            [--drain-timeout S] [--log-format text|json] [--log-level L] [--quiet] [--wire-log FILE]",
    details: "Serves the agent's card at /.well-known/agent-card.json and JSON-RPC (A2A v0.3\n\
              message/send and A2A 1.0 SendMessage) at /a2a. NAME is one of the built-in agents,\n\
              each on its own default port:{builtin_agents}\n\n\
              With --key-file, every JSON-RPC call must be signed by the harness with the secret in\n\
              F (HMAC-SHA256, see vendor-notes/hmac-signing.md; name the same file as the agent's\n\
              key_file in the harness's agents config); anything else gets HTTP 401. The card\n\
              stays readable. F holds 32 to 1,024 visible ASCII characters (openssl rand -hex 32),\n\
              and must not be readable by others (chmod 600). Without a key the agent server\n\
              authenticates no one: keep agent ports on loopback or a private network.\n\n\
              Tasks: GetTask, CancelTask and ListTasks (A2A 1.0) answer from the newest 1,024\n\
              tasks this server answered, kept in memory (older ones are forgotten, and so is\n\
              every task at a restart). A send with returnImmediately: true (1.0) or\n\
              blocking: false (0.3) is answered at once with the task submitted.\n\n\
              echo is also the A2A conformance subject (the A2A TCK's system under test): a\n\
              message without data parts is echoed back as text, or follows the TCK scenario its\n\
              messageId names (tck-complete-task, tck-input-required, tck-artifact-*, ...).\n\
              With --delay D it keeps every task working for D seconds before it answers, so a\n\
              client can watch it and cancel it.\n\n\
              GET /livez and /healthz answer 200 while it serves. SIGTERM or SIGINT drains:\n\
              /healthz answers 503, new connections are refused, calls in flight get\n\
              --drain-timeout seconds (default 10) to be answered, then the process exits 0.\n\n\
              Requests are logged on stderr as `ddwire serve --help` describes (--log-format,\n\
              --log-level or DD_LOG, --quiet); --wire-log FILE appends every HTTP message in and\n\
              out, the agent's delegation callbacks included (vendor-notes/wire-log.md).",
    flags: setup::server_flags!(
        [
            setup::HOST,
            Flag::taking("port", "P", "Port to bind (default: the agent's own)"),
            Flag::taking(
                "public-url",
                "URL",
                "Base URL advertised on the card (default http://H:P)"
            ),
            Flag::taking(
                "key-file",
                "F",
                "Require calls signed with the secret shared with the harness, read from F"
            ),
            Flag::taking(
                "replay-window",
                "S",
                "How far a signed call's time may be from this clock, in seconds (default 300)"
            ),
        ],
        [Flag::taking(
            "delay",
            "D",
            "echo only: work on each task for D seconds (up to 3600, decimals allowed) before answering"
        )]
    ),
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    let [name] = args.positionals.as_slice() else {
        return Err(format!(
            "expects one agent NAME, one of: {}",
            super::builtin_agents()
        ));
    };
    let (agent, default_port) = built_in(args, name)?;
    let window = setup::replay_window(args)?;
    let request_log = setup::request_log(args)?;
    let wire = setup::wire_log(args)?;
    // The client a delegation agent calls the harness back through.
    let client = A2aClient::new(setup::http_client(args, wire.as_ref())?);
    let (bound, tls) = setup::listener(args, "agent", default_port, request_log, wire.as_ref())?;
    let scheme = bound.scheme();
    let key = match args.value("key-file") {
        Some(path) => Some(
            Key::from_file(&agent.spec().agent_id, Path::new(path)).map_err(|e| e.to_string())?,
        ),
        None if args.value("replay-window").is_some() => {
            return Err("--replay-window applies only with --key-file".into());
        }
        None => None,
    };
    let mut draining = drain::Draining::new(args, "agent")?;
    draining.install();
    let server = server::serve_draining(
        bound,
        agent.clone(),
        args.value("public-url"),
        client,
        key.as_ref().map(|k| (k, window)),
        &draining.drain,
    )
    .map_err(|e| e.to_string())?;
    let addr = server.local_addr();
    let signed = args.value("key-file").is_some();
    stderr_line!(
        "ddwire agent {name} ({}) listening on {scheme}://{addr} (A2A at /a2a){}",
        agent.spec().agent_id,
        if signed {
            "; calls must be signed with its key"
        } else {
            ""
        }
    );
    if !addr.ip().is_loopback() && !signed {
        stderr_line!(
            "ddwire agent: warning: bound beyond loopback ({addr}) without --key-file; the agent authenticates no caller"
        );
    }
    Ok(draining.serve_until_signal(server, tls, None, &|| 0, None))
}

/// The built-in agent `name` (an echo delayed by `--delay`, if asked) and its default port;
/// for a name no agent has, the nearest that does.
fn built_in(
    args: &Parsed,
    name: &str,
) -> Result<(std::sync::Arc<dyn crate::agent::Agent>, u16), String> {
    let (_, default_port) = builtin::NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| {
            // An agent id (`hello.world`) is a natural guess for the short name (`hello`).
            let by_id = super::builtin_rows().find(|(_, id, _)| id == name);
            let hint = match by_id {
                Some((near, ..)) => format!("did you mean {near}? "),
                None => args::did_you_mean(name, builtin::NAMES.iter().map(|(n, _)| *n), "", ""),
            };
            format!(
                "no built-in agent {name:?}; {hint}choose one of: {}",
                super::builtin_agents()
            )
        })?;
    let agent: std::sync::Arc<dyn crate::agent::Agent> = match args.number::<f64>("delay")? {
        None => builtin::by_name(name).expect("listed in NAMES"),
        Some(d) if name != "echo" => {
            return Err(format!(
                "--delay applies only to echo, not {name} ({d} s was given)"
            ));
        }
        Some(d) if d.is_finite() && (0.0..=3600.0).contains(&d) => std::sync::Arc::new(
            builtin::Echo::with_delay(std::time::Duration::from_secs_f64(d)),
        ),
        Some(d) => return Err(format!("--delay must be from 0 to 3600 seconds, got {d}")),
    };
    Ok((agent, *default_port))
}
