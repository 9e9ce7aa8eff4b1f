//! `ddwire approve` and `ddwire decline`: a data steward's decision on a referred run, sent
//! to the harness that holds it (`POST /runs/{id}/approve` or `/decline`).

use super::args::{Flag, Parsed};
use super::{Command, setup};
use crate::wire::http::client::ClientRequest;
use serde_json::{Value, json};
use std::time::Duration;

/// What `approve` and `decline` both say of who may decide, and of exit codes.
macro_rules! decision_rules {
    () => {
        "Only a token whose entry in the harness's tokens file has \"role\": \"steward\" may\n\
              decide (the harness answers 403 to any other), and only a run the profile referred\n\
              (outcome referred, policy_requires_approval), once, within the harness's\n\
              --approval-for of its referral. RUN is an invocation id or a unique prefix of one.\n\n\
              Exit 0 when the decision was recorded, 1 when the harness refused it (the message\n\
              says why: not a steward, no such run, not referred, decided already, expired, or the\n\
              profile, agent or input changed since), 2 on bad usage."
    };
}

const FLAGS: &[Flag] = &[
    Flag::taking(
        "harness",
        "URL",
        "The harness that holds the run (or DD_HARNESS_URL)",
    ),
    Flag::taking("token", "T", "The steward's bearer token (or DD_TOKEN)"),
    Flag::taking("reason", "TEXT", "Why, recorded with the decision"),
    setup::WIRE_LOG,
    setup::CA_FILE,
    setup::CA_ONLY,
    setup::TLS_CLIENT_CERT,
    setup::TLS_CLIENT_KEY,
];

pub(crate) static APPROVE: Command = Command {
    name: "approve",
    summary: "Approve a referred run: the agent runs, as a new linked run",
    usage: "approve RUN --harness URL [--token T] [--reason TEXT] [--wire-log FILE] [--ca-file F]... [--ca-only] [--tls-client-cert F --tls-client-key F]",
    details: concat!(
        "Approves the run RUN the harness's profile referred to a data steward: the harness\n\
              runs its agent on the same input, for the same principal, as a new run that records\n\
              the approval (approval.json beside it, an `approved` event on its root span). Prints\n\
              the new run's envelope on stdout, and its outcome and id on stderr.\n\n",
        decision_rules!()
    ),
    flags: FLAGS,
    run: |args| decide(args, "approve"),
};

pub(crate) static DECLINE: Command = Command {
    name: "decline",
    summary: "Decline a referred run: nothing runs, the decision is recorded",
    usage: "decline RUN --harness URL [--token T] [--reason TEXT] [--wire-log FILE] [--ca-file F]... [--ca-only] [--tls-client-cert F --tls-client-key F]",
    details: concat!(
        "Declines the run RUN the harness's profile referred to a data steward: its agent is\n\
              not run, and the decision (who, when, why) is recorded with the run, for\n\
              GET /runs/RUN/approval, `ddwire show` and the viewer. Prints the record on stdout.\n\n",
        decision_rules!()
    ),
    flags: FLAGS,
    run: |args| decide(args, "decline"),
};

fn decide(args: &Parsed, action: &str) -> Result<i32, String> {
    let run = match args.positionals.as_slice() {
        [run] => run,
        [] => {
            return Err(format!(
                "needs the referred run: {action} RUN --harness URL"
            ));
        }
        [_, extra, ..] => return Err(format!("takes one run, not also {extra:?}")),
    };
    if run.is_empty() || !run.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        return Err(format!(
            "{run:?} is not a run id: give an invocation id (a UUIDv7) or a unique prefix of one"
        ));
    }
    let harness = setup::flag_or_env(args, "harness", "DD_HARNESS_URL").ok_or(
            "needs --harness URL (or DD_HARNESS_URL): a decision is made by the harness that holds the run, which knows its steward's token",
        )?;
    let harness = setup::http_url("--harness", &harness)?;
    let token = setup::flag_or_env(args, "token", "DD_TOKEN")
        .ok_or("needs the steward's bearer token: --token T (or DD_TOKEN)")?;
    let body = match args.value("reason") {
        Some(reason) => json!({ "reason": reason }),
        None => json!({}),
    };
    let url = format!("{harness}/runs/{run}/{action}");
    let request = ClientRequest::post_json(url, body.to_string().into_bytes(), TIMEOUT)
        .header("Authorization", &format!("Bearer {token}"));
    let answered = setup::with_client(args, action, |client| client.send(request))?;
    let response = answered.map_err(|e| e.to_string())?;
    let doc: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    if response.status != 200 {
        let why = doc["error"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| String::from_utf8_lossy(&response.body).into_owned());
        stderr_line!(
            "ddwire {action}: refused ({}): {}",
            response.status,
            crate::text::escape_str(&why, false)
        );
        return Ok(if response.status == 400 { 2 } else { 1 });
    }
    let decision = &doc["decision"];
    let printed = doc.get("envelope").unwrap_or(decision);
    super::print_pretty(printed);
    match doc.get("envelope") {
        Some(envelope) => {
            let outcome = &envelope["outcome"];
            stderr_line!(
                "approved run {}; the approved run {} is {}: {}",
                decision["referred_invocation_id"].as_str().unwrap_or("?"),
                envelope["invocation_id"].as_str().unwrap_or("?"),
                outcome["status"].as_str().unwrap_or("?"),
                crate::text::escape_str(outcome["statement"].as_str().unwrap_or(""), false),
            );
        }
        None => stderr_line!(
            "declined run {}; its agent will not run",
            decision["referred_invocation_id"].as_str().unwrap_or("?")
        ),
    }
    Ok(0)
}

/// How long the harness may take: an approval runs the agent before it answers.
const TIMEOUT: Duration = Duration::from_secs(300);
