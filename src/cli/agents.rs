//! `ddwire agents`: the registry, as the harness would load it.

use super::Command;
use super::args::{Flag, Parsed};
use super::setup;
use crate::wire::a2a::client::A2aClient;

pub(crate) static COMMAND: Command = Command {
    name: "agents",
    summary: "List the registered agents, and those unavailable or incompatible",
    usage: "agents [--json] [--agents FILE]",
    details: "Reads each agent card the agents config lists and rebuilds its spec from the Data\n\
              Director extension. --json prints {\"agents\", \"unavailable\", \"incompatible\"}.",
    flags: &[Flag::switch("json", "Print JSON"), setup::AGENTS],
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    let registry = setup::registry(args, &A2aClient::default())?;
    if args.switch("json") {
        super::print_pretty(&registry.listing());
        return Ok(0);
    }
    for agent in registry.agents() {
        let s = &agent.spec;
        let payload = s.payload.as_deref().unwrap_or("no payload");
        outln!(
            "{:<18} {:<8} {:<11} accepts {} -> {}  ({})",
            s.agent_id,
            s.version,
            s.grounding_mode.as_str(),
            s.accepts.join(", "),
            payload,
            agent.url
        );
    }
    for (name, reason) in &registry.unavailable() {
        outln!("[{name}] unavailable: {reason}");
    }
    for (name, reason) in &registry.incompatible() {
        outln!("[{name}] incompatible: {reason}");
    }
    if registry.is_empty() {
        if registry.incompatible().is_empty() {
            stderr_line!("no agent could be registered; start some with `ddwire agent NAME`");
        } else {
            stderr_line!(
                "no agent could be registered; an incompatible card needs the Data Director \
                 extension (vendor-notes/a2a.md)"
            );
        }
    }
    Ok(0)
}
