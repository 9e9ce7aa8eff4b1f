//! `ddwire agent NAME`: serve one of the built-in agents over A2A.

use super::Command;
use super::args::{Flag, Parsed};
use ddwire::agent::builtin;

pub static COMMAND: Command = Command {
    name: "agent",
    summary: "Serve a built-in agent (hello, stub, echo, director, ungrounded, failing) over A2A",
    usage: "agent NAME [--host H] [--port P] [--public-url URL]",
    details: "Serves the agent's card at /.well-known/agent-card.json and JSON-RPC (A2A v0.3\n\
              message/send and A2A 1.0 SendMessage) at /a2a. Agents: hello (hello.world, port\n\
              8101), stub (stub.abstain, 8104), echo (echo.wire, 8107).\n\n\
              The agent server does no governance and authenticates no one: keep agent ports on\n\
              loopback or a private network, behind a harness.",
    flags: &[
        Flag {
            name: "host",
            value: Some("H"),
            help: "Address to bind (default 127.0.0.1)",
        },
        Flag {
            name: "port",
            value: Some("P"),
            help: "Port to bind (default: the agent's own)",
        },
        Flag {
            name: "public-url",
            value: Some("URL"),
            help: "Base URL advertised on the card (default http://H:P)",
        },
    ],
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    let [name] = args.positionals.as_slice() else {
        return Err("expects one agent NAME: hello, stub or echo".into());
    };
    let (_, default_port) = builtin::NAMES
        .iter()
        .find(|(n, _)| n == name)
        .ok_or_else(|| format!("no built-in agent {name:?}; choose hello, stub or echo"))?;
    let agent = builtin::by_name(name).expect("listed in NAMES");
    let host = args.value("host").unwrap_or("127.0.0.1");
    let port: u16 = args.number("port")?.unwrap_or(*default_port);
    let server = ddwire::agent::server::serve(
        agent.clone(),
        &format!("{host}:{port}"),
        args.value("public-url"),
    )
    .map_err(|e| e.to_string())?;
    let addr = server.local_addr();
    eprintln!(
        "ddwire agent {name} ({}) listening on http://{addr} (A2A at /a2a)",
        agent.spec().agent_id
    );
    if !addr.ip().is_loopback() {
        eprintln!(
            "ddwire agent: warning: bound beyond loopback ({addr}); an agent authenticates no caller"
        );
    }
    server.wait();
    Ok(0)
}
