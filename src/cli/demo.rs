//! `ddwire demo`: the whole system on loopback, on an embedded default.
//!
//! Starts the built-in agents and a harness in this process on ports it picks, with the
//! shipped profile and a clearly named demo principal, and runs a handful of invocations
//! through the harness's A2A endpoint, as any caller would: a success, an abstention, a
//! refusal by policy, an input the agent does not accept, a withheld result, an agent error,
//! and a delegation with its two linked traces. For each it prints the outcome and the trace
//! the run store holds, as a waterfall (the delegated run nested under its `delegate` span).
//! The runs stay in the run store (default `./runs`).

use super::Command;
use super::args::{Flag, Parsed};
use super::invoke::envelope_of;
use super::{export, setup};
use crate::agent::builtin;
use crate::agent::server;
use crate::harness::conductor::Conductor;
use crate::harness::identity::{Authenticator, demo_principal};
use crate::harness::policy::Profile;
use crate::harness::registry::{AgentEntry, Registry};
use crate::harness::server::{Harness, handler};
use crate::harness::store::RunStore;
use crate::harness::view;
use crate::trace::waterfall;
use crate::wire::a2a::client::{A2aClient, Target};
use crate::wire::a2a::model::{Message, Part, Role, TaskState};
use crate::wire::http;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

pub(crate) static COMMAND: Command = Command {
    name: "demo",
    summary: "Run the built-in agents and a harness on loopback and show seven invocations",
    usage: "demo [--runs DIR] [--quiet] [--otlp-endpoint URL | --otlp-traces-endpoint URL [--otlp-protocol P] [--otlp-header K=V]...]",
    details: "Needs nothing installed and no network beyond loopback. Acts for the demo principal\n\
              (urn:ddwire:demo:operator), under the shipped default profile. Inspect the runs\n\
              afterwards with `ddwire runs` and `ddwire show RUN_ID`. With --otlp-endpoint (or\n\
              OTEL_EXPORTER_OTLP_ENDPOINT), every run is also exported over OTLP as `serve` does,\n\
              and the demo waits up to 60 s for the exports before it ends.",
    flags: &[
        setup::RUNS,
        Flag::switch(
            "quiet",
            "Print each invocation's outcome, without its waterfall",
        ),
        export::OTLP_ENDPOINT,
        export::OTLP_TRACES_ENDPOINT,
        export::OTLP_PROTOCOL,
        export::OTLP_HEADER,
    ],
    run,
};

const T: Duration = Duration::from_secs(30);
/// How far the waterfall of each run is indented under its summary.
const INDENT: &str = "   ";

fn run(args: &Parsed) -> Result<i32, String> {
    let runs = setup::runs_dir(args);
    let store = RunStore::open(&runs).map_err(|e| format!("run store {}: {e}", runs.display()))?;
    let (servers, entries) = serve_agents()?;
    let client = A2aClient::default();
    let registry = Registry::from_config(&client, &entries).map_err(|e| e.to_string())?;

    // The harness, its own delegation callback, acting for the demo principal.
    let mut conductor = Conductor::new(registry, Profile::default_profile(), store, client.clone());
    conductor.otlp =
        export::start_exporter(args, "demo", crate::wire::http::client::HttpClient::tcp())?;
    let exporter = conductor.otlp.clone();
    let bound =
        http::server::bind("127.0.0.1:0", http::Limits::DEFAULT).map_err(|e| e.to_string())?;
    let public = bound.default_public_url();
    let harness = Arc::new(Harness::new(
        conductor,
        Some(Authenticator::Operator(demo_principal())),
        &public,
    ));
    let harness_server = bound
        .serve(handler(Arc::clone(&harness)))
        .map_err(|e| e.to_string())?;
    outln!(
        "ddwire demo: {} agents and a harness at {public}; runs go to {}\n",
        servers.len(),
        runs.display()
    );

    let target = Target::from_card(&client.fetch_card(&public, T).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let quiet = args.switch("quiet");
    let mut first_id: Option<String> = None;
    for (i, (what, agent, input)) in cases().iter().enumerate() {
        let request = json!({"agent_id": agent, "input": input});
        let task = client
            .send_for_task(
                &target,
                Message::new(Role::User, vec![Part::data(request)]),
                &[],
                T,
            )
            .map_err(|e| e.to_string())?;
        if task.status.state != TaskState::Completed {
            outln!(
                "{}. {what}: refused: {}",
                i + 1,
                task.failure_detail().unwrap_or_default()
            );
            continue;
        }
        let envelope = envelope_of(&task).unwrap_or(Value::Null);
        if first_id.is_none() {
            first_id = envelope["invocation_id"].as_str().map(str::to_string);
        }
        print_run(&harness, i + 1, what, &envelope, quiet);
    }
    print_next_steps(args, &runs, first_id.as_deref());
    harness_server.shutdown();
    for s in servers {
        s.shutdown();
    }
    if let Some(exporter) = &exporter {
        export::finish_exporter(exporter, "demo", Duration::from_secs(60));
    }
    Ok(0)
}

/// The built-in agents, each on its own loopback port, with the same server `ddwire agent`
/// runs, and the registry's entry for each.
fn serve_agents() -> Result<(Vec<http::server::Server>, Vec<AgentEntry>), String> {
    let mut servers = Vec::new();
    let mut entries = Vec::new();
    for (name, _) in builtin::NAMES {
        let agent = builtin::by_name(name).expect("a built-in agent");
        let s = server::serve(agent, "127.0.0.1:0", None).map_err(|e| e.to_string())?;
        let timeout = if name == "director" { 120 } else { 30 };
        entries.push(AgentEntry {
            url: s.base_url(),
            name: Some(name.to_string()),
            timeout: Some(Duration::from_secs(timeout)),
            key_file: None,
            tls_client: None,
        });
        servers.push(s);
    }
    Ok((servers, entries))
}

/// The invocations the demo shows: what each shows, the agent, and its input.
fn cases() -> [(&'static str, &'static str, Value); 7] {
    let message = |text: &str| json!({"schema_class": "Message", "message_text": text});
    [
        (
            "a success",
            "hello.world",
            message("Hello from the ddwire demo"),
        ),
        (
            "an abstention",
            "stub.abstain",
            message("Can you decide this?"),
        ),
        (
            "a refusal by policy (the profile does not enable echo.wire)",
            "echo.wire",
            json!({"schema_class": "Echo", "value": 1}),
        ),
        (
            "an input the agent does not accept",
            "hello.world",
            json!({"schema_class": "Echo", "value": 1}),
        ),
        (
            "a withheld result (it cites a source it never retrieved)",
            "demo.ungrounded",
            message("What is the capital of Atlantis?"),
        ),
        ("an agent error", "demo.failing", message("Please try")),
        (
            "a delegation: director.route asks hello.world through the harness",
            "director.route",
            message("Say hello for me"),
        ),
    ]
}

/// The commands that inspect the runs just made, `first_id` being the first run's id.
fn print_next_steps(args: &Parsed, runs: &std::path::Path, first_id: Option<&str>) {
    let program = program_name();
    let store = if args.value("runs").is_some() {
        format!(" --runs {}", runs.display())
    } else {
        String::new()
    };
    outln!(
        "Inspect them (RUN: an id above, or a unique prefix of one, like {}):\n  \
         {program} runs{store}\n  {program} show RUN{store}\n  {program} lint RUN{store}\n  \
         {program} replay RUN{store}",
        first_id.map_or("01a2…", |id| id.get(..18).unwrap_or(id))
    );
    if program != "ddwire" {
        outln!("(`cargo install --path .` puts ddwire on your PATH, in ~/.cargo/bin.)");
    }
}

/// How to name this program in a hint: `ddwire` when that is what PATH finds, else the path it
/// was started by (`target/release/ddwire` under `cargo run`).
fn program_name() -> String {
    let me = std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok());
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            dir.join("ddwire")
                .canonicalize()
                .ok()
                .is_some_and(|p| Some(&p) == me.as_ref())
        })
    });
    if on_path {
        return "ddwire".into();
    }
    match (std::env::current_exe(), std::env::current_dir()) {
        (Ok(exe), Ok(cwd)) => exe
            .strip_prefix(&cwd)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| exe.display().to_string()),
        _ => "ddwire".into(),
    }
}

fn print_run(harness: &Harness, n: usize, what: &str, envelope: &Value, quiet: bool) {
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    let id = text(&envelope["invocation_id"]);
    outln!("{n}. {what}");
    outln!(
        "   {} → {}: {}",
        text(&envelope["agent_id"]),
        text(&envelope["outcome"]["status"]),
        text(&envelope["outcome"]["statement"])
    );
    if let Some(title) = envelope["problem"]["title"].as_str() {
        outln!(
            "   problem: {title} ({})",
            text(&envelope["problem"]["type"])
                .rsplit('/')
                .next()
                .unwrap_or("")
        );
    }
    outln!("   run {id}");
    if quiet {
        outln!();
        return;
    }
    // The run and its delegated children, read back from the store, as one waterfall.
    let store = harness.conductor.store.reader();
    match view::load(store, &id) {
        Ok(Some(run)) => {
            let options = waterfall::Options {
                width: setup::columns().saturating_sub(INDENT.len()),
                color: setup::color(&std::io::stdout()),
                summary: false,
            };
            for line in waterfall::render(&run, &options).lines() {
                outln!("{INDENT}{line}");
            }
            if let Some(report) = &run.grounding {
                outln!("{INDENT}{}", report.lines().next().unwrap_or(""));
            }
        }
        Ok(None) => outln!("{INDENT}(the run store holds no run {id})"),
        Err(e) => outln!("{INDENT}(cannot read run {id} back: {e})"),
    }
    outln!();
}
