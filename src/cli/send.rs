//! `ddwire send`: send one message with one data part to any A2A agent and print the task.

use super::args::{Flag, Parsed};
use super::{Command, read_input, setup};
use crate::wire::a2a::Binding;
use crate::wire::a2a::client::{A2aClient, Target};
use crate::wire::a2a::model::{Message, Part, Role, SendResult, TaskState};
use std::time::Duration;

pub(crate) static COMMAND: Command = Command {
    name: "send",
    summary: "Send one data part to an A2A agent and print the task it returns",
    usage: "send URL [--data FILE|-] [--token T] [--binding 0.3|1.0] [--metadata JSON] [--timeout SECONDS] [--wire-log FILE] [--ca-file F]... [--ca-only] [--tls-client-cert F --tls-client-key F]",
    details: "Fetches the agent card from URL/.well-known/agent-card.json, picks the binding the\n\
              card prefers (A2A 1.0 when offered, else v0.3) unless --binding says otherwise,\n\
              sends message/send or SendMessage with the JSON document as one data part, and\n\
              prints the result as A2A 1.0 JSON on stdout: {\"task\": …} or, when the agent\n\
              answers with a message, {\"message\": …}. Exit 0 if the task completed (or a\n\
              message came back), 1 if the task ended otherwise, 2 on a transport or protocol\n\
              error.\n\n\
              To a ddwire harness, the data part is an InvocationRequest:\n  \
              {\"agent_id\": \"hello.world\", \"input\": {\"schema_class\": \"Message\", \"message_text\": \"hi\"}}\n\
              (examples/request.json); to an agent, the same with the agent's own agent_id.",
    flags: &[
        Flag::taking(
            "data",
            "FILE",
            "The data part, a JSON document (default: -, stdin)",
        ),
        Flag::taking(
            "token",
            "T",
            "Send Authorization: Bearer T (a harness started with --tokens needs one)",
        ),
        Flag::taking(
            "binding",
            "V",
            "Force A2A 0.3 or 1.0 instead of the card's choice",
        ),
        Flag::taking("metadata", "JSON", "Message metadata, a JSON object"),
        Flag::taking("timeout", "SECONDS", "Per-call timeout (default 60)"),
        setup::WIRE_LOG,
        setup::CA_FILE,
        setup::CA_ONLY,
        setup::TLS_CLIENT_CERT,
        setup::TLS_CLIENT_KEY,
    ],
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    let [url] = args.positionals.as_slice() else {
        return Err("expects the agent's base URL (http://host:port)".into());
    };
    let url = &setup::http_url("URL", url)?;
    let timeout = args
        .seconds(
            "timeout",
            |t| t > 0.0 && t <= 86_400.0,
            |t| format!("--timeout must be more than 0 and at most 86400 seconds, got {t}"),
        )?
        .unwrap_or(Duration::from_secs(60));
    let data = crate::json::parse(
        &read_input(args.value("data").unwrap_or("-"))?,
        crate::json::Limits::DEFAULT,
    )
    .map_err(|e| e.to_string())?;
    let metadata = match args.value("metadata") {
        None => None,
        Some(text) => match crate::json::parse_str(text).map_err(|e| e.to_string())? {
            serde_json::Value::Object(m) => Some(m),
            _ => return Err("--metadata must be a JSON object".into()),
        },
    };
    setup::with_client(args, "send", |http| {
        exchange(&A2aClient::new(http), url, args, timeout, data, metadata)
    })?
}

fn exchange(
    client: &A2aClient,
    url: &str,
    args: &Parsed,
    timeout: Duration,
    data: serde_json::Value,
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
) -> Result<i32, String> {
    let card = client.fetch_card(url, timeout).map_err(|e| e.to_string())?;
    let mut target = Target::from_card(&card).map_err(|e| e.to_string())?;
    match args.value("binding") {
        None => {}
        Some("0.3") => target.binding = Binding::V03,
        Some("1.0") => target.binding = Binding::V10,
        Some(other) => return Err(format!("--binding must be 0.3 or 1.0, not {other:?}")),
    }
    let mut message = Message::new(Role::User, vec![Part::data(data)]);
    message.metadata = metadata;
    let auth = args.value("token").map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let result = client
        .send(&target, message, &headers, timeout)
        .map_err(|e| e.to_string())?;
    super::print_pretty(&result.to_json(Binding::V10));
    Ok(match result {
        SendResult::Task(task) if task.status.state != TaskState::Completed => 1,
        _ => 0,
    })
}
