//! `ddwire check`: probe an A2A JSON-RPC endpoint and report what it got right.

use super::args::{Flag, Parsed};
use super::{Command, read_input, setup};
use crate::check::{self, Bindings, CheckError, Options, Report};

pub(crate) static COMMAND: Command = Command {
    name: "check",
    summary: "Probe an A2A endpoint (card, JSON-RPC strictness, A2A behaviour) and report",
    usage: "check URL [--binding auto|0.3|1.0|both] [--message FILE] [--token T] [--dd] [--format text|json|junit] [--out FILE] [--timeout S] [--strict] [--ca-file F]... [--ca-only] [--tls-client-cert F --tls-client-key F] [--insecure]",
    details: "Reads the agent card at URL/.well-known/agent-card.json (falling back to agent.json;\n\
              URL may also be the card's own URL), then runs a fixed list of probes: the card\n\
              (fields of both generations, interfaces reachable and not bind-all, with --dd the\n\
              Data Director extension), JSON-RPC 2.0 strictness (-32700, -32600, -32601, -32602,\n\
              ids echoed with their type, notifications, batches, an 8 MiB body) and A2A\n\
              behaviour (a send, getting the task back, -32001, -32009, declared capabilities).\n\
              vendor-notes/a2a.md lists every probe with its specification section.\n\n\
              A probe of a MUST fails; one of a SHOULD, or of strictness the mainstream SDKs\n\
              break themselves (a2a-sdk answers notifications), warns; --strict makes warnings\n\
              fail. Without --message, a ddwire agent or harness gets an InvocationRequest for\n\
              the agent its card describes, any other agent a short text (or data) part. The\n\
              message is sent once per binding, and again to the stream method (which a card\n\
              without streaming must refuse).\n\n\
              Exit 0: every probe passed (warnings allowed unless --strict); 1: a probe failed;\n\
              2: bad usage, or nothing answered at URL.",
    flags: &[
        Flag::taking(
            "binding",
            "B",
            "auto (the card's preferred, default), 0.3, 1.0 or both",
        ),
        Flag::taking(
            "message",
            "FILE",
            "The message to send: an A2A Message (either binding) or a JSON document for one data part; - for stdin",
        ),
        Flag::taking(
            "token",
            "T",
            "Send Authorization: Bearer T on every request",
        ),
        Flag::switch(
            "dd",
            "Also check the Data Director extension and the AgentResult/Envelope reply",
        ),
        Flag::taking("format", "F", "text (default), json or junit"),
        Flag::taking(
            "out",
            "FILE",
            "Write the report to FILE (a one-line summary goes to stderr)",
        ),
        Flag::taking(
            "timeout",
            "S",
            "Seconds any one request may take (default 10)",
        ),
        Flag::switch("strict", "Warnings fail too"),
        setup::CA_FILE,
        setup::CA_ONLY,
        setup::TLS_CLIENT_CERT,
        setup::TLS_CLIENT_KEY,
        Flag::switch(
            "insecure",
            "Verify no TLS certificate (any CA, any host): a smoke test's shortcut; every report says so",
        ),
    ],
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    let [url] = args.positionals.as_slice() else {
        return Err("expects one URL: the agent's base URL or its card's URL".into());
    };
    if !cfg!(feature = "tls") && crate::wire::tls::is_https(url) {
        return Err(format!("{url}: {}", crate::wire::tls::NOT_BUILT));
    }
    let bindings = match args.value("binding").unwrap_or("auto") {
        "auto" => Bindings::Auto,
        "0.3" => Bindings::V03,
        "1.0" => Bindings::V10,
        "both" => Bindings::Both,
        other => {
            return Err(format!(
                "--binding must be auto, 0.3, 1.0 or both, not {other:?}"
            ));
        }
    };
    let render: fn(&Report) -> String = match args.value("format").unwrap_or("text") {
        "text" => Report::text,
        "json" => |r| format!("{:#}\n", r.json()),
        "junit" => Report::junit,
        other => {
            return Err(format!(
                "--format must be text, json or junit, not {other:?}"
            ));
        }
    };
    let timeout = args
        .seconds(
            "timeout",
            |s| s > 0.0 && s <= 3600.0,
            |s| format!("--timeout must be between 0 and 3600 seconds, not {s}"),
        )?
        .unwrap_or(check::DEFAULT_TIMEOUT);
    let message = match args.value("message") {
        None => None,
        Some(path) => Some(
            crate::json::parse(&read_input(path)?, crate::json::Limits::DEFAULT)
                .map_err(|e| format!("--message {path}: {e}"))?,
        ),
    };
    let mut options = Options::new(url);
    options.bindings = bindings;
    options.message = message;
    options.token = args.value("token").map(str::to_string);
    options.dd = args.switch("dd");
    options.strict = args.switch("strict");
    options.timeout = timeout;
    let mut trust = setup::client_trust(args)?;
    trust.insecure = args.switch("insecure");
    options.insecure = trust.insecure;
    options.http = setup::http_client_trusting(&trust, None)?;
    let report = check::run(&options).map_err(|e| match e {
        CheckError::BadMessage { .. } => format!("--message: {e}"),
        e => e.to_string(),
    })?;
    let text = render(&report);
    match args.value("out") {
        None => out!("{text}"),
        Some(path) => {
            std::fs::write(path, text).map_err(|e| format!("writing {path}: {e}"))?;
            stderr_line!("ddwire check {url}: {} (report: {path})", report.summary());
        }
    }
    Ok(report.exit_code())
}
