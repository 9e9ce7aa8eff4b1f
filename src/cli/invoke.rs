//! `ddwire invoke`: run one invocation, locally or through a harness, and print the envelope.

use super::args::{Flag, Parsed};
use super::{Command, read_input, setup};
use crate::contract::{Input, InvocationRequest};
use crate::wire::a2a::artifact;
use crate::wire::a2a::client::{A2aClient, Target};
use crate::wire::a2a::model::{Message, Part, Role, Task, TaskState};
use serde_json::Value;
use std::time::Duration;

pub(crate) static COMMAND: Command = Command {
    name: "invoke",
    summary: "Run one invocation and print its envelope",
    usage: "invoke --agent ID --input FILE|- [--requirement R]... [--conversation ID] [--harness URL [--token T]] [--wire-log FILE] [--ca-file F]... [--ca-only] [--tls-client-cert F --tls-client-key F]\n       \
            [--agents F] [--profile F] [--runs DIR] [--acting-for-id IRI --acting-for-name NAME]",
    details: "Builds an InvocationRequest for agent ID with the input document FILE, runs it\n\
              through the conductor against the configured agents (or sends it to the harness at\n\
              URL over A2A), prints the envelope on stdout and the outcome, grounding summary and\n\
              run directory on stderr.\n\n\
              The input is a JSON object naming its class and holding that class's fields, e.g.\n\
              {\"schema_class\": \"Message\", \"message_text\": \"hi\"}. examples/messages/ has one\n\
              for each built-in agent; `ddwire agents --json` shows the classes each accepts.\n\n\
              Whom the run acts for: run locally, the operator's principal (--acting-for-id and\n\
              --acting-for-name, or DD_PRINCIPAL_ID and DD_PRINCIPAL_NAME), without which invoke\n\
              refuses to start; with --harness, the harness decides, from --token (its tokens\n\
              file) or its own operator principal, and the local flags are not used.\n\n\
              Exit 0 when an envelope was made (whatever its outcome), 1 when the request was\n\
              refused and no run was made, 2 on bad usage or configuration.",
    flags: &[
        Flag::taking("agent", "ID", "The agent to run"),
        Flag::taking("input", "FILE", "The input document (- for stdin)"),
        Flag::taking(
            "requirement",
            "R",
            "A requirement id the request serves (repeatable)",
        ),
        Flag::taking(
            "conversation",
            "ID",
            "The conversation (a UUIDv7) the request belongs to",
        ),
        Flag::taking(
            "harness",
            "URL",
            "Send to this harness instead of running locally",
        ),
        Flag::taking("token", "T", "Bearer token for --harness"),
        setup::AGENTS,
        setup::PROFILE,
        setup::RUNS,
        setup::ACTING_FOR_ID,
        setup::ACTING_FOR_NAME,
        setup::WIRE_LOG,
        setup::CA_FILE,
        setup::CA_ONLY,
        setup::TLS_CLIENT_CERT,
        setup::TLS_CLIENT_KEY,
    ],
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    let agent = args.value("agent").ok_or("needs --agent ID")?;
    let input_path = args
        .value("input")
        .ok_or("needs --input FILE (or - for stdin)")?;
    let input = match crate::json::parse(&read_input(input_path)?, crate::json::Limits::DEFAULT)
        .map_err(|e| e.to_string())?
    {
        Value::Object(m) => Input(m),
        _ => {
            return Err(format!(
                "{input_path}: the input must be a JSON object naming its schema_class"
            ));
        }
    };
    let mut request = InvocationRequest::new(agent, input);
    request.requirement_ids = args.values("requirement").to_vec();
    request.conversation_id = args.value("conversation").map(str::to_string);
    setup::with_client(args, "invoke", |http| {
        let client = A2aClient::new(http);
        match args.value("harness") {
            Some(url) => remote(
                &client,
                &setup::http_url("--harness", url)?,
                args.value("token"),
                &request,
            ),
            None => local(args, client, request),
        }
    })?
}

/// A peer's text as a terminal may show it (see [`crate::text`]).
fn safe(text: &str) -> std::borrow::Cow<'_, str> {
    crate::text::escape_str(text, false)
}

/// A hint for an agent id the harness does not know: the built-in agent's id when a short name
/// (`hello`) was given for it, or the nearest built-in id.
fn agent_hint(error: &str, agent_id: &str) -> String {
    if !error.contains("no agent registered") && !error.contains("unknown agent") {
        return String::new();
    }
    let builtins: Vec<_> = super::builtin_rows().collect();
    if let Some((name, id, _)) = builtins.iter().find(|(name, ..)| *name == agent_id) {
        return format!(
            "\n`{name}` is the short name `ddwire agent` takes; its agent id is {id}: --agent {id}"
        );
    }
    match super::args::nearest(agent_id, builtins.iter().map(|(_, id, _)| id.as_str())) {
        Some(near) => format!("\ndid you mean --agent {near}?"),
        None => String::new(),
    }
}

/// Say that the request was refused (`shown`: why) and no run made; the exit status.
fn refused(shown: &str, agent_id: &str) -> i32 {
    stderr_line!(
        "ddwire invoke: refused, no run was made: {shown}{}",
        agent_hint(shown, agent_id)
    );
    1
}

/// Print `envelope` on stdout, and its outcome on stderr.
fn print_envelope(envelope: &Value) {
    super::print_pretty(envelope);
    let outcome = &envelope["outcome"];
    stderr_line!(
        "outcome: {} ({})",
        safe(outcome["status"].as_str().unwrap_or("?")),
        safe(outcome["statement"].as_str().unwrap_or(""))
    );
}

fn local(args: &Parsed, client: A2aClient, request: InvocationRequest) -> Result<i32, String> {
    // Whom the run acts for is settled before anything runs or is written.
    let principal = setup::principal(args)?;
    let conductor = setup::conductor(args, client)?;
    setup::report_registry(&conductor.registry);
    let agent_id = request.agent_id.clone();
    let run = match conductor.invoke(request, &principal) {
        Ok(run) => run,
        Err(e) => return Ok(refused(&e.to_string(), &agent_id)),
    };
    let envelope = run.document;
    print_envelope(&envelope);
    if crate::trace::waterfall::no_output(&envelope) {
        stderr_line!(
            "grounding: no output to check: the agent gave no result (grounding.txt: {})",
            run.report.summary().lines().next().unwrap_or("")
        );
    } else {
        stderr_line!("{}", run.report.summary());
    }
    stderr_line!("run directory: {}", run.run_dir.display());
    Ok(0)
}

fn remote(
    client: &A2aClient,
    url: &str,
    token: Option<&str>,
    request: &InvocationRequest,
) -> Result<i32, String> {
    let card = client
        .fetch_card(url, Duration::from_secs(30))
        .map_err(|e| e.to_string())?;
    let target = Target::from_card(&card).map_err(|e| e.to_string())?;
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let message = Message::new(Role::User, vec![Part::data(request.to_document())]);
    let task = client
        .send_for_task(&target, message, &headers, Duration::from_secs(300))
        .map_err(|e| e.to_string())?;
    if task.status.state != TaskState::Completed {
        let detail = task.failure_detail().unwrap_or_default();
        return Ok(refused(&safe(&detail), &request.agent_id));
    }
    let envelope = envelope_of(&task).ok_or("the harness replied without an envelope artifact")?;
    print_envelope(&envelope);
    stderr_line!(
        "run {} stored by the harness at {url}",
        envelope["invocation_id"].as_str().unwrap_or("?")
    );
    Ok(0)
}

/// The envelope a harness's completed task carries: the data of its envelope artifact.
pub(super) fn envelope_of(task: &Task) -> Option<Value> {
    let artifact = task
        .artifacts_named(artifact::ENVELOPE)
        .into_iter()
        .next()?;
    artifact.parts.iter().find_map(|p| match p {
        Part::Data { data, .. } => Some(data.clone()),
        _ => None,
    })
}
