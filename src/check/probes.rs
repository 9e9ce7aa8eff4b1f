//! The probes, as data: [`PROBES`] is the one table. Each row is an id, a level, the
//! specification section it checks, a one-line title, whether it runs once or once per
//! binding, and a function. Adding a probe is a row and a function here, and a line in
//! `vendor-notes/a2a.md`.
//!
//! A function returns an [`Outcome`]; a violation of a [`Level::Must`] row fails the check,
//! one of a [`Level::Should`] row warns (and fails under `--strict`).

use super::card::{self, Card, Described};
use super::exchange::{Answer, Sent, Wire, fresh_id, quote, rpc_error_of, sse_data};
use crate::contract::spec::AgentSpec;
use crate::wire::WireError;
use crate::wire::a2a::card::{EXTENSION_URI, MANIFEST_EXTENSION_URI};
use crate::wire::a2a::client::Target;
use crate::wire::a2a::codec::{decode_result, decode_task, encode_send_params};
use crate::wire::a2a::model::{Message, Part, SendParams, SendResult, Task, TaskState};
use crate::wire::a2a::{Binding, CARD_PATH, LEGACY_CARD_PATH, Operation, artifact};
use crate::wire::http::client::{ClientRequest, HttpClient};
use crate::wire::jsonrpc;
use crate::wire::tls::{ClientTrust, TlsFailure, is_https};
use serde_json::{Value, json};

/// How much a rule weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    /// An A2A or JSON-RPC MUST (or the Data Director contract): a violation fails.
    Must,
    /// A SHOULD, or JSON-RPC strictness the mainstream SDKs break themselves (a2a-sdk
    /// answers notifications, @a2a-js/sdk answers an invalid request with -32602): a
    /// violation warns, and fails under `--strict`.
    Should,
}

impl Level {
    /// `MUST` or `SHOULD`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        }
    }
}

/// What a probe found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// The rule holds; an optional note says how (a refused batch, the generations a card
    /// parses as).
    Pass(Option<String>),
    /// The rule is broken: what was expected and what came back.
    Violation(String),
    /// The probe does not apply, or depends on one that failed.
    Skip(String),
}

/// What a binding probe found, or the transport error that left it no answer (a violation:
/// "no answer: …").
pub(crate) type Probed = Result<Outcome, WireError>;

/// One row of the table.
pub(crate) struct Probe {
    pub(crate) id: &'static str,
    pub(crate) level: Level,
    pub(crate) spec: &'static str,
    pub(crate) title: &'static str,
    pub(crate) run: Run,
}

/// A probe's function: a card probe runs once, a binding probe once per binding, given
/// that binding's JSON-RPC URL.
#[derive(Clone, Copy)]
pub(crate) enum Run {
    Card(fn(&mut Ctx) -> Outcome),
    Binding(fn(&mut Ctx, &Target) -> Probed),
}

/// What a check knows as it goes: the wire, the card, the message to send, and what each
/// binding's send returned.
pub(crate) struct Ctx {
    pub(crate) wire: Wire,
    /// The card's URL, or the base URL its well-known path is under.
    pub(crate) base: String,
    pub(crate) card: Option<Card>,
    /// Set by `card.fetch` when nothing answered at all: the check stops (exit 2).
    pub(crate) unreachable: Option<WireError>,
    /// Set by `tls.handshake` when the handshake failed: every other probe is skipped (exit 1).
    pub(crate) tls_failed: bool,
    /// The client verifies no certificate (`--insecure`).
    pub(crate) insecure: bool,
    /// The user's message (`--message`), else the built-in one is used.
    pub(crate) message: Option<Message>,
    /// `--dd`: check the Data Director extension and reply.
    pub(crate) dd: bool,
    /// What `a2a.send` got, per binding.
    pub(crate) sent: Vec<(Binding, Option<Task>)>,
}

impl Ctx {
    fn card_value(&self) -> Option<&Value> {
        self.card.as_ref().map(|c| &c.value)
    }

    /// Whether the card declares the boolean capability `capabilities.<name>` (false when
    /// absent).
    fn declares(&self, name: &str) -> bool {
        self.card_value()
            .and_then(|c| c.get("capabilities")?.get(name)?.as_bool())
            .unwrap_or(false)
    }

    fn sent_task(&self, binding: Binding) -> Option<&Task> {
        self.sent
            .iter()
            .find(|(b, _)| *b == binding)
            .and_then(|(_, t)| t.as_ref())
    }
}

/// Every probe, in the order they run (card probes first, then each binding's).
pub(crate) const PROBES: &[Probe] = &[
    Probe {
        id: TLS_PROBE,
        level: Level::Must,
        spec: "A2A 0.3 §4.1; RFC 8446; RFC 9525",
        title: "an https:// endpoint completes a TLS handshake with a certificate valid for its host",
        run: Run::Card(tls),
    },
    Probe {
        id: "card.fetch",
        level: Level::Must,
        spec: "A2A 0.3 §5.1, §5.3; A2A 1.0 §8.2",
        title: "the agent card is served at the well-known path as a JSON object",
        run: Run::Card(card_fetch),
    },
    Probe {
        id: "card.location",
        level: Level::Should,
        spec: "A2A 0.3 §5.3; A2A 1.0 §8.2",
        title: "the card is at /.well-known/agent-card.json, not only at the pre-0.3 agent.json",
        run: Run::Card(card_location),
    },
    Probe {
        id: "card.fields",
        level: Level::Must,
        spec: "A2A 0.3 §5.5; A2A 1.0 §4.4.1",
        title: "the card has every required field of each generation it claims (0.3: url; 1.0: supportedInterfaces)",
        run: Run::Card(card_fields),
    },
    Probe {
        id: "card.interfaces",
        level: Level::Must,
        spec: "A2A 0.3 §5.6; A2A 1.0 §8.3.1",
        title: "the card declares a JSON-RPC interface, and every interface URL is reachable and not a bind-all address",
        run: Run::Card(card_interfaces),
    },
    Probe {
        id: "card.dd",
        level: Level::Must,
        spec: "Data Director: Transport and tracing, invariant 14",
        title: "with --dd: the Data Director extension is declared (required) and its description passes the contract's checks",
        run: Run::Card(card_dd),
    },
    Probe {
        id: "jsonrpc.parse-error",
        level: Level::Must,
        spec: "JSON-RPC 2.0 §5.1; A2A 0.3 §8.1; A2A 1.0 §9.5",
        title: "a body that is not JSON gets error -32700",
        run: Run::Binding(parse_error),
    },
    Probe {
        id: "jsonrpc.error-id",
        level: Level::Should,
        spec: "JSON-RPC 2.0 §5",
        title: "an error whose request id could not be read carries \"id\": null",
        run: Run::Binding(error_id_null),
    },
    Probe {
        id: "jsonrpc.invalid-request",
        level: Level::Should,
        spec: "JSON-RPC 2.0 §4, §5.1",
        title: "a request whose method is not a string gets error -32600",
        run: Run::Binding(invalid_request),
    },
    Probe {
        id: "jsonrpc.method-not-found",
        level: Level::Must,
        spec: "JSON-RPC 2.0 §5.1; A2A 0.3 §8.1; A2A 1.0 §9.5",
        title: "an unknown method gets error -32601",
        run: Run::Binding(method_not_found),
    },
    Probe {
        id: "jsonrpc.invalid-params",
        level: Level::Should,
        spec: "JSON-RPC 2.0 §5.1; A2A 0.3 §8.1; A2A 1.0 §3.3.2",
        title: "a get-task call without its task id gets error -32602",
        run: Run::Binding(invalid_params),
    },
    Probe {
        id: "jsonrpc.id",
        level: Level::Must,
        spec: "JSON-RPC 2.0 §5",
        title: "the response echoes the request id with its JSON type (7 stays a number, \"7\" a string)",
        run: Run::Binding(id_echo),
    },
    Probe {
        id: "jsonrpc.notification",
        level: Level::Should,
        spec: "JSON-RPC 2.0 §4.1",
        title: "a notification (a request without an id) gets no response body",
        run: Run::Binding(notification),
    },
    Probe {
        id: "jsonrpc.batch",
        level: Level::Must,
        spec: "JSON-RPC 2.0 §6",
        title: "a batch is answered with one response per request, or refused clearly with a JSON-RPC error",
        run: Run::Binding(batch),
    },
    Probe {
        id: "jsonrpc.oversize",
        level: Level::Must,
        spec: "RFC 9110 §15.5.14; JSON-RPC 2.0 §5.1",
        title: "an 8 MiB request is answered (HTTP 413 or an error) within the timeout, not left hanging",
        run: Run::Binding(oversize),
    },
    Probe {
        id: "a2a.send",
        level: Level::Must,
        spec: "A2A 0.3 §7.1, §6.1, §6.4; A2A 1.0 §3.1.1, §9.4.1",
        title: "a send of the message returns a task or a message in the binding's shape",
        run: Run::Binding(send),
    },
    Probe {
        id: "a2a.get-task",
        level: Level::Must,
        spec: "A2A 0.3 §7.3; A2A 1.0 §3.1.3, §9.4.3",
        title: "getting the task the send returned returns that task",
        run: Run::Binding(get_task),
    },
    Probe {
        id: "a2a.task-not-found",
        level: Level::Must,
        spec: "A2A 0.3 §8.2; A2A 1.0 §3.3.2, §5.4",
        title: "getting an unknown task gets error -32001 (TaskNotFoundError)",
        run: Run::Binding(task_not_found),
    },
    Probe {
        id: "a2a.version",
        level: Level::Must,
        spec: "A2A 1.0 §3.6.2",
        title: "a call under an A2A-Version the interface does not support gets error -32009",
        run: Run::Binding(version),
    },
    Probe {
        id: "a2a.streaming",
        level: Level::Must,
        spec: "A2A 0.3 §7.2; A2A 1.0 §3.1.2, §3.3.4",
        title: "capabilities.streaming holds: declared, the stream method streams; not declared, it is refused (1.0: -32004)",
        run: Run::Binding(streaming),
    },
    Probe {
        id: "a2a.push",
        level: Level::Must,
        spec: "A2A 0.3 §7.7, §8.2; A2A 1.0 §3.1.9, §3.3.4",
        title: "capabilities.pushNotifications holds: declared, configs can be listed; not declared, refused (1.0: -32003)",
        run: Run::Binding(push),
    },
    Probe {
        id: "a2a.extended-card",
        level: Level::Must,
        spec: "A2A 1.0 §3.1.11, §3.3.4",
        title: "capabilities.extendedAgentCard holds: declared, the card or -32007; not declared, -32004",
        run: Run::Binding(extended_card),
    },
    Probe {
        id: "dd.reply",
        level: Level::Must,
        spec: "Data Director: Transport and tracing, invariants 3, 4, 5, 12",
        title: "with --dd: the task carries an AgentResult with its spans (agent) or an Envelope (harness)",
        run: Run::Binding(dd_reply),
    },
];

// ---------------------------------------------------------------------------------------
// Helpers

fn pass() -> Outcome {
    Outcome::Pass(None)
}

/// A pass (with `note`) when there is no problem, else a violation naming every one.
fn judged(problems: Vec<String>, note: Option<String>) -> Outcome {
    if problems.is_empty() {
        Outcome::Pass(note)
    } else {
        Outcome::Violation(problems.join("; "))
    }
}

/// A violation: `expected <what>; got <the answer>`.
fn expected(what: &str, answer: &Answer) -> Outcome {
    Outcome::Violation(format!("expected {what}; got {}", answer.describe()))
}

/// The JSON-RPC error an answer must carry.
fn expect_error(sent: Sent, code: i64, name: &str) -> Probed {
    let answer = sent?;
    let got = match answer.rpc_error() {
        Some(e) if e.code == code => return Ok(pass()),
        Some(e) => format!("{e}: {}", answer.describe()),
        None => answer.describe(),
    };
    Ok(Outcome::Violation(format!(
        "expected error {code} ({name}); got {got}"
    )))
}

fn unknown_task_id() -> String {
    format!("ddwire-check-no-such-task-{}", crate::ids::new_uuid7())
}

/// A harmless call under `id`: getting a task that does not exist.
fn get_unknown_task(binding: Binding, id: &Value) -> Value {
    let params = json!({ "id": unknown_task_id() });
    jsonrpc::request(id, binding.method(Operation::GetTask), params)
}

/// The describe-the-JSON-type words for an id.
fn id_kind(v: &Value) -> &'static str {
    match v {
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Null => "null",
        _ => "neither a number nor a string",
    }
}

// ---------------------------------------------------------------------------------------
// Transport security

/// The handshake probe. For an `http://` URL it fails only when the port turns out to speak
/// TLS; otherwise `run` leaves it out of the report (its outcome is a skip).
pub(crate) const TLS_PROBE: &str = "tls.handshake";

/// Where the card is looked for, each URL with whether it is the pre-0.3 path: the URL
/// given when it names a card, else the well-known path and then the pre-0.3 one.
fn card_urls(base: &str) -> Vec<(String, bool)> {
    let base = base.trim_end_matches('/');
    if base.ends_with(CARD_PATH) || base.ends_with(LEGACY_CARD_PATH) {
        vec![(base.to_string(), base.ends_with(LEGACY_CARD_PATH))]
    } else {
        vec![
            (format!("{base}{CARD_PATH}"), false),
            (format!("{base}{LEGACY_CARD_PATH}"), true),
        ]
    }
}

fn tls(ctx: &mut Ctx) -> Outcome {
    let base = ctx.base.trim_end_matches('/');
    let (url, _) = card_urls(base).swap_remove(0);
    if !is_https(base) {
        return plain_to_tls(ctx, &url);
    }
    match ctx.wire.get(&url) {
        Err(WireError::Tls { cause, .. }) => {
            ctx.tls_failed = true;
            Outcome::Violation(format!("{} ({})", cause, cause.kind()))
        }
        // Nothing answered at all: `card.fetch` says so and the check stops.
        Err(e @ (WireError::Connect { .. } | WireError::Timeout { .. })) => {
            Outcome::Skip(format!("no handshake was made: {e}"))
        }
        _ if ctx.insecure => Outcome::Pass(Some(
            "handshake completed; the certificate was NOT verified (--insecure)".into(),
        )),
        _ => Outcome::Pass(Some(
            "handshake completed; the certificate chains to a trusted CA and names the host".into(),
        )),
    }
}

/// An `http://` URL: if the plain request is cut off or refused as not TLS, and the same
/// port completes a TLS handshake, the URL should say `https://`.
fn plain_to_tls(ctx: &mut Ctx, url: &str) -> Outcome {
    let no_tls = Outcome::Skip("an http:// URL: nothing is encrypted".into());
    let suspicious = match ctx.wire.get(url) {
        // ddwire's and nginx's answers to plain HTTP on a TLS port.
        Ok(answer) => {
            answer.status == 400 && {
                let body = String::from_utf8_lossy(&answer.body).to_ascii_lowercase();
                body.contains("speaks tls") || body.contains("https port")
            }
        }
        // Most TLS servers close on bytes that are not a hello, or answer with an alert.
        Err(WireError::Disconnected { .. } | WireError::Protocol { .. }) => true,
        Err(_) => false,
    };
    if !suspicious {
        return no_tls;
    }
    let https = format!("https://{}", &url["http://".len()..]);
    let anyone = ClientTrust {
        insecure: true,
        ..Default::default()
    };
    let Ok(client) = HttpClient::tcp_trusting(&anyone) else {
        return no_tls;
    };
    match client.send(ClientRequest::get(&https, ctx.wire.timeout)) {
        Ok(_)
        | Err(WireError::Tls {
            cause: TlsFailure::ClientCertificateRefused { .. },
            ..
        }) => {
            ctx.tls_failed = true;
            Outcome::Violation(format!(
                "plain HTTP spoken to a TLS port: {url} answers a TLS handshake; call it with https://"
            ))
        }
        Err(_) => no_tls,
    }
}

// The card

fn card_fetch(ctx: &mut Ctx) -> Outcome {
    let mut tried = Vec::new();
    for (url, legacy_path) in card_urls(&ctx.base) {
        let answer = match ctx.wire.get(&url) {
            Ok(a) => a,
            Err(
                e @ (WireError::Connect { .. }
                | WireError::Disconnected { .. }
                | WireError::Timeout { .. }),
            ) if tried.is_empty() => {
                ctx.unreachable = Some(e);
                return Outcome::Violation("nothing answered".into());
            }
            Err(e) => {
                tried.push(format!("GET {url}: {e}"));
                continue;
            }
        };
        return match (answer.status, answer.json()) {
            (404, _) => {
                tried.push(format!("GET {url}: {}", answer.describe()));
                continue;
            }
            (200, Some(value @ Value::Object(_))) => {
                ctx.card = Some(Card {
                    value,
                    url,
                    legacy_path,
                });
                pass()
            }
            (200, _) => Outcome::Violation(format!(
                "GET {url}: the body is not a JSON object: {}",
                answer.describe()
            )),
            _ => Outcome::Violation(format!("GET {url}: {}", answer.describe())),
        };
    }
    Outcome::Violation(tried.join("; "))
}

fn no_card() -> Outcome {
    Outcome::Skip("no card was read".into())
}

fn card_location(ctx: &mut Ctx) -> Outcome {
    match &ctx.card {
        None => no_card(),
        Some(c) if c.legacy_path => Outcome::Violation(format!(
            "the card was read from {} (the pre-0.3 path); clients of A2A 0.3 and 1.0 look for {CARD_PATH}",
            c.url
        )),
        Some(_) => pass(),
    }
}

fn card_fields(ctx: &mut Ctx) -> Outcome {
    let Some(card) = ctx.card_value() else {
        return no_card();
    };
    let mut claimed = Vec::new();
    let mut problems = Vec::new();
    for binding in [Binding::V03, Binding::V10] {
        if let Some(list) = card::generation_problems(card, binding) {
            claimed.push(binding.version());
            problems.extend(
                list.into_iter()
                    .map(|p| format!("as A2A {}: {p}", binding.version())),
            );
        }
    }
    if claimed.is_empty() {
        return Outcome::Violation(
            "the card is neither an A2A 0.3 card (it has no url) nor an A2A 1.0 card (it has no supportedInterfaces)"
                .into(),
        );
    }
    let note = format!("parses as A2A {}", claimed.join(" and "));
    judged(problems, Some(note))
}

fn card_interfaces(ctx: &mut Ctx) -> Outcome {
    let Some(card) = ctx.card_value() else {
        return no_card();
    };
    let mut problems = Vec::new();
    let jsonrpc: Vec<String> = [Binding::V03, Binding::V10]
        .into_iter()
        .filter_map(|b| card::jsonrpc_url(card, b))
        .collect();
    if jsonrpc.is_empty() {
        problems.push(
            "the card declares no JSON-RPC interface (ddwire check speaks JSON-RPC only)".into(),
        );
    }
    let mut reached: Vec<String> = Vec::new();
    for (at, url) in card::interface_urls(card) {
        match card::host_of(&url) {
            Ok(host) if card::is_bind_all(host) => problems.push(format!(
                "{at} {url} advertises the bind-all address {host}, which no client can reach"
            )),
            Ok(_) => {}
            Err(why) if jsonrpc.contains(&url) => problems.push(format!("{at} {url}: {why}")),
            Err(_) => {}
        }
        if !jsonrpc.contains(&url) || reached.contains(&url) {
            continue;
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            problems.push(format!("{at} {url} is not an http(s) URL"));
            continue;
        }
        // Any HTTP answer proves the address is served (a JSON-RPC endpoint answers GET
        // with 405 or the like).
        match ctx.wire.get(&url) {
            Ok(_) => reached.push(url),
            Err(e) => problems.push(format!("{at} {url} is not reachable: {e}")),
        }
    }
    judged(problems, None)
}

fn card_dd(ctx: &mut Ctx) -> Outcome {
    if !ctx.dd {
        return Outcome::Skip("--dd not given".into());
    }
    let Some(card) = ctx.card_value() else {
        return no_card();
    };
    match card::described(card) {
        Described::Agent(description) => match AgentSpec::from_description(&description) {
            Err(e) => Outcome::Violation(format!("the agent's description is refused: {e}")),
            Ok(_) if !card::requires(card, EXTENSION_URI) => Outcome::Violation(format!(
                "the extension {EXTENSION_URI} is not marked \"required\": true"
            )),
            Ok(spec) => Outcome::Pass(Some(format!(
                "agent {} {} (contract {})",
                spec.agent_id, spec.version, spec.contract_version
            ))),
        },
        Described::Harness(list) => {
            let mut ids = Vec::new();
            let mut problems = Vec::new();
            for (i, description) in list.iter().enumerate() {
                match AgentSpec::from_description(description) {
                    Ok(spec) => ids.push(spec.agent_id),
                    Err(e) => problems.push(format!("manifest agents[{i}]: {e}")),
                }
            }
            let note = format!("a harness serving [{}]", ids.join(", "));
            judged(problems, Some(note))
        }
        Described::Neither => Outcome::Violation(format!(
            "the card declares neither the agent-spec extension {EXTENSION_URI} nor the manifest extension {MANIFEST_EXTENSION_URI}"
        )),
    }
}

// ---------------------------------------------------------------------------------------
// JSON-RPC strictness

/// Not JSON: the spec's own example of a parse error (JSON-RPC 2.0 §7).
const NOT_JSON: &[u8] = br#"{"jsonrpc": "2.0", "method": "foobar", "params": "bar", "baz]"#;

fn parse_error(ctx: &mut Ctx, t: &Target) -> Probed {
    let sent = ctx.wire.post(t, NOT_JSON.to_vec(), &[]);
    expect_error(sent, jsonrpc::PARSE_ERROR, "Parse error")
}

fn error_id_null(ctx: &mut Ctx, t: &Target) -> Probed {
    let answer = ctx.wire.post(t, NOT_JSON.to_vec(), &[])?;
    Ok(match answer.json() {
        Some(doc) if doc.get("error").is_some() => match doc.get("id") {
            Some(Value::Null) => pass(),
            Some(other) => Outcome::Violation(format!(
                "the parse error carries \"id\": {other}, not null: {}",
                answer.describe()
            )),
            None => Outcome::Violation(format!(
                "the parse error has no \"id\" member (it must be null): {}",
                answer.describe()
            )),
        },
        _ => expected("a JSON-RPC error object", &answer),
    })
}

fn invalid_request(ctx: &mut Ctx, t: &Target) -> Probed {
    let body = json!({"jsonrpc": "2.0", "id": fresh_id(), "method": 1, "params": {}});
    let sent = ctx.wire.post_json(t, &body);
    expect_error(sent, jsonrpc::INVALID_REQUEST, "Invalid Request")
}

fn method_not_found(ctx: &mut Ctx, t: &Target) -> Probed {
    let sent = ctx
        .wire
        .call(t, &fresh_id(), "ddwire.check/no-such-method", json!({}));
    expect_error(sent, jsonrpc::METHOD_NOT_FOUND, "Method not found")
}

fn invalid_params(ctx: &mut Ctx, t: &Target) -> Probed {
    let method = t.binding.method(Operation::GetTask);
    let sent = ctx.wire.call(t, &fresh_id(), method, json!({}));
    expect_error(sent, jsonrpc::INVALID_PARAMS, "Invalid params")
}

fn id_echo(ctx: &mut Ctx, t: &Target) -> Probed {
    let mut problems = Vec::new();
    for id in [json!(7), json!("7")] {
        let answer = ctx.wire.post_json(t, &get_unknown_task(t.binding, &id))?;
        match answer.json().as_ref().and_then(|d| d.get("id")) {
            Some(got) if *got == id => {}
            Some(got) => problems.push(format!(
                "sent id {id} ({}), got id {got} ({}): {}",
                id_kind(&id),
                id_kind(got),
                answer.describe()
            )),
            None => problems.push(format!("sent id {id}, got no id: {}", answer.describe())),
        }
    }
    Ok(judged(problems, None))
}

fn notification(ctx: &mut Ctx, t: &Target) -> Probed {
    // A harmless call: getting a task that does not exist.
    let body = json!({"jsonrpc": "2.0", "method": t.binding.method(Operation::GetTask), "params": {"id": unknown_task_id()}});
    let a = ctx.wire.post_json(t, &body)?;
    Ok(
        if a.body.iter().all(u8::is_ascii_whitespace) && a.status < 300 {
            pass()
        } else {
            Outcome::Violation(format!("the notification was answered: {}", a.describe()))
        },
    )
}

fn batch(ctx: &mut Ctx, t: &Target) -> Probed {
    let ids = [fresh_id(), fresh_id()];
    let body = ids.iter().map(|id| get_unknown_task(t.binding, id));
    let answer = ctx.wire.post_json(t, &Value::Array(body.collect()))?;
    let doc = answer.json();
    if let Some(Value::Array(items)) = &doc {
        let mut answered: Vec<&Value> = items.iter().filter_map(|i| i.get("id")).collect();
        let complete = items.len() == ids.len()
            && items.iter().all(|i| {
                i.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
                    && (i.get("result").is_some() || i.get("error").is_some())
            })
            && ids.iter().all(|id| {
                answered
                    .iter()
                    .position(|a| *a == id)
                    .map(|p| answered.remove(p))
                    .is_some()
            });
        return Ok(if complete {
            pass()
        } else {
            let what = format!(
                "an array of {} responses answering ids {} and {}",
                ids.len(),
                ids[0],
                ids[1]
            );
            expected(&what, &answer)
        });
    }
    Ok(match doc.as_ref().and_then(rpc_error_of) {
        Some(e) => Outcome::Pass(Some(format!("refused: {e}"))),
        None => expected("an array of responses or a JSON-RPC error", &answer),
    })
}

/// The body size of `jsonrpc.oversize`: twice ddwire's limit, under common proxy limits.
pub(crate) const OVERSIZE_BYTES: usize = 8 * 1024 * 1024;

/// A JSON-RPC request of `size` bytes for an unknown method, so that a server without a
/// limit answers -32601 and runs nothing.
pub(crate) fn oversize_body(size: usize) -> Vec<u8> {
    let head = format!(
        r#"{{"jsonrpc":"2.0","id":{},"method":"ddwire.check/oversize","params":{{"padding":""#,
        fresh_id()
    );
    let tail = br#""}}"#;
    let mut body = Vec::with_capacity(size);
    body.extend_from_slice(head.as_bytes());
    body.resize(size.saturating_sub(tail.len()).max(body.len()), b'x');
    body.extend_from_slice(tail);
    body
}

fn oversize(ctx: &mut Ctx, t: &Target) -> Probed {
    Ok(match ctx.wire.post(t, oversize_body(OVERSIZE_BYTES), &[]) {
        Err(WireError::Timeout { after, .. }) => Outcome::Violation(format!(
            "no answer to an 8 MiB request within {:.1} s: the server hangs on it",
            after.as_secs_f64()
        )),
        Err(e) => Outcome::Violation(format!(
            "the connection ended without an answer to an 8 MiB request: {e}"
        )),
        Ok(a) if a.status == 413 => pass(),
        Ok(a) if a.status >= 400 => Outcome::Pass(Some(format!("refused with {}", a.describe()))),
        Ok(a) => match a.rpc_error() {
            Some(e) => Outcome::Pass(Some(format!("answered with {e}"))),
            None => expected("HTTP 413 or a JSON-RPC error", &a),
        },
    })
}

// ---------------------------------------------------------------------------------------
// A2A behaviour

/// The params of a send in `binding`: the user's message, or the built-in one for this card
/// (with a note saying which); a fresh message id each time.
fn send_params(ctx: &Ctx, binding: Binding) -> (Value, Option<String>) {
    let (mut message, note) = match &ctx.message {
        Some(m) => (m.clone(), None),
        None => card::builtin_message(ctx.card_value().unwrap_or(&Value::Null)),
    };
    message.message_id = crate::ids::new_uuid7();
    let params = SendParams {
        message,
        configuration: None,
        metadata: None,
    };
    (encode_send_params(binding, &params), note)
}

fn send(ctx: &mut Ctx, t: &Target) -> Probed {
    ctx.sent.retain(|(b, _)| *b != t.binding);
    ctx.sent.push((t.binding, None));
    let (params, note) = send_params(ctx, t.binding);
    let id = fresh_id();
    let answer = ctx
        .wire
        .call(t, &id, t.binding.method(Operation::Send), params)?;
    let with_note = |text: String| match &note {
        Some(n) => format!("{text} ({n})"),
        None => text,
    };
    let Some(doc) = answer.json() else {
        return Ok(Outcome::Violation(with_note(format!(
            "expected a JSON-RPC response; got {}",
            answer.describe()
        ))));
    };
    if let Some(e) = rpc_error_of(&doc) {
        return Ok(Outcome::Violation(with_note(format!(
            "the send was refused with {e}: {}",
            answer.describe()
        ))));
    }
    let decoded = doc
        .get("result")
        .cloned()
        .map(|r| decode_result(t.binding, r));
    let problem = match decoded {
        _ if doc.get("id") != Some(&id) => format!("the response does not answer id {id}"),
        None => "the response has neither result nor error".into(),
        Some(Err(e)) => format!(
            "the result is not an A2A {} task or message: {e}",
            t.binding.version()
        ),
        Some(Ok(SendResult::Message(m))) if m.parts.is_empty() => {
            "the message result has no parts".into()
        }
        Some(Ok(SendResult::Message(_))) => {
            return Ok(Outcome::Pass(Some(with_note("a message".into()))));
        }
        Some(Ok(SendResult::Task(task))) if task.id.is_empty() || task.context_id.is_empty() => {
            let missing = [("id", &task.id), ("contextId", &task.context_id)];
            let missing = missing.iter().filter(|(_, value)| value.is_empty());
            let problems: Vec<String> = missing
                .map(|(name, _)| format!("the task has no {name}"))
                .collect();
            problems.join("; ")
        }
        Some(Ok(SendResult::Task(task))) => {
            let state = format!("a task, {:?}", task.status.state).to_lowercase();
            let detail = match (task.status.state, task.failure_detail()) {
                (TaskState::Failed | TaskState::Rejected, Some(why)) => {
                    format!("{state}: {}", quote(why.as_bytes()))
                }
                _ => state,
            };
            if let Some(slot) = ctx.sent.iter_mut().find(|(b, _)| *b == t.binding) {
                slot.1 = Some(task);
            }
            return Ok(Outcome::Pass(Some(with_note(detail))));
        }
    };
    Ok(Outcome::Violation(format!(
        "{problem}: {}",
        answer.describe()
    )))
}

fn no_task(ctx: &Ctx, binding: Binding) -> Outcome {
    let sent = ctx.sent.iter().any(|(b, _)| *b == binding);
    Outcome::Skip(if sent {
        "a2a.send returned no task".into()
    } else {
        "a2a.send did not run".into()
    })
}

fn get_task(ctx: &mut Ctx, t: &Target) -> Probed {
    let Some(task) = ctx.sent_task(t.binding).cloned() else {
        return Ok(no_task(ctx, t.binding));
    };
    let method = t.binding.method(Operation::GetTask);
    let answer = ctx
        .wire
        .call(t, &fresh_id(), method, json!({ "id": task.id }))?;
    let doc = answer.json().unwrap_or(Value::Null);
    if let Some(e) = rpc_error_of(&doc) {
        return Ok(Outcome::Violation(format!(
            "getting task {} was refused with {e}: {}",
            task.id,
            answer.describe()
        )));
    }
    let Some(result) = doc.get("result").cloned() else {
        return Ok(expected("a task", &answer));
    };
    Ok(match decode_task(t.binding, result) {
        Err(e) => Outcome::Violation(format!(
            "the result is not an A2A {} task: {e}: {}",
            t.binding.version(),
            answer.describe()
        )),
        Ok(got) if got.id != task.id || got.context_id != task.context_id => {
            Outcome::Violation(format!(
                "asked for task {} (context {}); got task {} (context {})",
                task.id, task.context_id, got.id, got.context_id
            ))
        }
        Ok(got) if got.status.state != task.status.state && task.status.state.is_terminal() => {
            Outcome::Violation(format!(
                "the send returned the task {:?}; getting it says {:?}",
                task.status.state, got.status.state
            ))
        }
        Ok(_) => pass(),
    })
}

fn task_not_found(ctx: &mut Ctx, t: &Target) -> Probed {
    let sent = ctx
        .wire
        .post_json(t, &get_unknown_task(t.binding, &fresh_id()));
    expect_error(sent, jsonrpc::TASK_NOT_FOUND, "TaskNotFoundError")
}

fn version(ctx: &mut Ctx, t: &Target) -> Probed {
    if t.binding == Binding::V03 {
        return Ok(Outcome::Skip("A2A 0.3 has no version negotiation".into()));
    }
    let body = get_unknown_task(t.binding, &fresh_id()).to_string();
    let sent = ctx
        .wire
        .post(t, body.into_bytes(), &[("A2A-Version", "99.0")]);
    expect_error(
        sent,
        jsonrpc::VERSION_NOT_SUPPORTED,
        "VersionNotSupportedError",
    )
}

/// The JSON-RPC responses an answer holds: the events of a stream, or the one body; `None`
/// for one that is not JSON.
fn responses(answer: &Answer) -> Vec<Option<Value>> {
    if answer.is_event_stream() {
        sse_data(&answer.body)
            .into_iter()
            .map(|d| crate::json::parse(d.as_bytes(), crate::json::Limits::DEFAULT).ok())
            .collect()
    } else {
        vec![answer.json()]
    }
}

fn streaming(ctx: &mut Ctx, t: &Target) -> Probed {
    let declared = ctx.declares("streaming");
    let (params, _) = send_params(ctx, t.binding);
    let method = t.binding.method(Operation::Stream);
    let id = fresh_id();
    let answer = ctx.wire.call(t, &id, method, params)?;
    let events = responses(&answer);
    let refusal = events.iter().flatten().find_map(rpc_error_of);
    if declared {
        if let Some(e) = refusal {
            return Ok(Outcome::Violation(format!(
                "the card declares capabilities.streaming: true, but {method} was refused with {e}: {}",
                answer.describe()
            )));
        }
        if !answer.is_event_stream() {
            return Ok(Outcome::Violation(format!(
                "the card declares capabilities.streaming: true, but {method} did not answer with text/event-stream: {}",
                answer.describe()
            )));
        }
        let good = events.iter().all(|e| {
            e.as_ref()
                .is_some_and(|v| v.get("id") == Some(&id) && v.get("result").is_some())
        });
        return Ok(if !events.is_empty() && good {
            Outcome::Pass(Some(format!("{} events", events.len())))
        } else {
            expected(
                &format!("a stream of JSON-RPC responses to id {id}"),
                &answer,
            )
        });
    }
    Ok(match (t.binding, refusal) {
        (Binding::V10, Some(e)) if e.code == jsonrpc::UNSUPPORTED_OPERATION => pass(),
        (Binding::V10, refusal) => Outcome::Violation(format!(
            "streaming is not declared, so {method} must get -32004 (UnsupportedOperationError); got {}",
            refusal.map_or_else(|| answer.describe(), |e| e.to_string())
        )),
        (Binding::V03, Some(e)) => Outcome::Pass(Some(format!("refused with {e}"))),
        (Binding::V03, None) => Outcome::Pass(Some(format!(
            "not declared, but {method} answered: {}",
            answer.describe()
        ))),
    })
}

fn push(ctx: &mut Ctx, t: &Target) -> Probed {
    let declared = ctx.declares("pushNotifications");
    let task_id = ctx
        .sent_task(t.binding)
        .map(|task| task.id.clone())
        .unwrap_or_else(unknown_task_id);
    let (method, params) = match t.binding {
        Binding::V03 => (
            "tasks/pushNotificationConfig/list",
            json!({ "id": task_id }),
        ),
        Binding::V10 => (
            "ListTaskPushNotificationConfigs",
            json!({ "taskId": task_id }),
        ),
    };
    let answer = ctx.wire.call(t, &fresh_id(), method, params)?;
    let error = answer.rpc_error();
    let refusals = [
        jsonrpc::PUSH_NOTIFICATION_NOT_SUPPORTED,
        jsonrpc::UNSUPPORTED_OPERATION,
        jsonrpc::METHOD_NOT_FOUND,
    ];
    Ok(match (declared, t.binding, error) {
        (true, _, Some(e)) if refusals.contains(&e.code) => Outcome::Violation(format!(
            "the card declares capabilities.pushNotifications: true, but {method} was refused with {e}"
        )),
        (true, _, _) if answer.json().is_none() => expected("a JSON-RPC response", &answer),
        (true, _, _) => pass(),
        (false, _, Some(e)) if e.code == jsonrpc::PUSH_NOTIFICATION_NOT_SUPPORTED => pass(),
        (false, Binding::V03, Some(e)) => {
            Outcome::Pass(Some(format!("refused with {e}; A2A 0.3 §8.2 names -32003")))
        }
        (false, Binding::V10, _) => Outcome::Violation(format!(
            "push notifications are not declared, so {method} must get -32003 (PushNotificationNotSupportedError); got {}",
            answer.describe()
        )),
        (false, Binding::V03, None) => Outcome::Violation(format!(
            "push notifications are not declared, but {method} was not refused: {}",
            answer.describe()
        )),
    })
}

fn extended_card(ctx: &mut Ctx, t: &Target) -> Probed {
    if t.binding == Binding::V03 {
        return Ok(Outcome::Skip(
            "A2A 0.3 names no code for an undeclared extended card".into(),
        ));
    }
    let declared = ctx.declares("extendedAgentCard");
    let answer = ctx
        .wire
        .call(t, &fresh_id(), "GetExtendedAgentCard", json!({}))?;
    let doc = answer.json().unwrap_or(Value::Null);
    Ok(match (declared, rpc_error_of(&doc).map(|e| e.code)) {
        (false, Some(jsonrpc::UNSUPPORTED_OPERATION)) => pass(),
        (false, _) => Outcome::Violation(format!(
            "capabilities.extendedAgentCard is not declared, so GetExtendedAgentCard must get -32004 (UnsupportedOperationError); got {}",
            answer.describe()
        )),
        (true, Some(jsonrpc::EXTENDED_CARD_NOT_CONFIGURED)) => {
            Outcome::Pass(Some("declared but not configured (-32007)".into()))
        }
        (true, Some(jsonrpc::UNSUPPORTED_OPERATION)) => Outcome::Violation(format!(
            "the card declares capabilities.extendedAgentCard: true, but GetExtendedAgentCard was refused: {}",
            answer.describe()
        )),
        (true, Some(_)) => pass(), // e.g. an authentication error: the card is behind it
        (true, None) if doc.get("result").is_some_and(Value::is_object) => pass(),
        (true, None) => expected("an agent card", &answer),
    })
}

// ---------------------------------------------------------------------------------------
// The Data Director reply

fn dd_reply(ctx: &mut Ctx, t: &Target) -> Probed {
    if !ctx.dd {
        return Ok(Outcome::Skip("--dd not given".into()));
    }
    let harness = match ctx.card_value().map(card::described) {
        Some(Described::Agent(_)) => false,
        Some(Described::Harness(_)) => true,
        _ => {
            return Ok(Outcome::Skip(
                "the card declares no Data Director extension".into(),
            ));
        }
    };
    let Some(task) = ctx.sent_task(t.binding) else {
        return Ok(no_task(ctx, t.binding));
    };
    Ok(reply(task, harness))
}

/// Whether a completed task carries the reply: one artifact with one data part, an
/// AgentResult with its spans (agent) or an Envelope (harness).
fn reply(task: &Task, harness: bool) -> Outcome {
    if task.status.state != TaskState::Completed {
        return Outcome::Violation(format!(
            "the task ended {:?}{}",
            task.status.state,
            task.failure_detail()
                .map(|d| format!(": {}", quote(d.as_bytes())))
                .unwrap_or_default()
        ));
    }
    let name = if harness {
        artifact::ENVELOPE
    } else {
        artifact::AGENT_RESULT
    };
    let named = task.artifacts_named(name);
    let [one] = named.as_slice() else {
        return Outcome::Violation(format!(
            "expected exactly one {name:?} artifact; the task has {}",
            named.len()
        ));
    };
    let data: Vec<&Value> = one
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Data { data, .. } => Some(data),
            _ => None,
        })
        .collect();
    let [data] = data.as_slice() else {
        return Outcome::Violation(format!(
            "the {name:?} artifact must hold exactly one data part; it holds {}",
            data.len()
        ));
    };
    if harness {
        return match crate::contract::validate::validate_envelope(data) {
            Ok(()) => Outcome::Pass(Some(format!(
                "an envelope, {}",
                data.get("outcome")
                    .and_then(|o| o.get("status"))
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            ))),
            Err(e) => Outcome::Violation(e.to_string()),
        };
    }
    let result = match data.get("result") {
        Some(r) => crate::contract::AgentResult::from_document(r),
        None => return Outcome::Violation("the agent-result data part has no \"result\"".into()),
    };
    if let Err(e) = result {
        return Outcome::Violation(e.to_string());
    }
    let Some(spans) = data.get("spans").and_then(Value::as_array) else {
        return Outcome::Violation(
            "the agent-result data part has no \"spans\" list (spans travel inline, as JSON strings)"
                .into(),
        );
    };
    for (i, span) in spans.iter().enumerate() {
        let Some(text) = span.as_str() else {
            return Outcome::Violation(format!(
                "spans[{i}] is not a string (a span crosses the wire as the JSON text the SDK wrote)"
            ));
        };
        if let Err(e) = crate::trace::from_json(text) {
            return Outcome::Violation(format!("spans[{i}] is not span JSON: {e}"));
        }
    }
    Outcome::Pass(Some(format!("an AgentResult with {} spans", spans.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_probe_has_a_unique_dotted_id_a_spec_and_a_title() {
        let mut ids: Vec<&str> = PROBES.iter().map(|p| p.id).collect();
        for p in PROBES {
            assert!(
                p.id.contains('.') && !p.spec.is_empty() && !p.title.is_empty(),
                "{}",
                p.id
            );
        }
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), PROBES.len());
        // Card probes run before any binding's, so the card is read first.
        let first_binding = PROBES
            .iter()
            .position(|p| matches!(p.run, Run::Binding(_)))
            .unwrap();
        assert!(
            PROBES[first_binding..]
                .iter()
                .all(|p| matches!(p.run, Run::Binding(_)))
        );
        // The handshake first: no byte of the card can be read without it.
        assert_eq!(PROBES[0].id, TLS_PROBE);
        assert_eq!(PROBES[1].id, "card.fetch");
    }

    #[test]
    fn every_probe_is_listed_in_the_vendor_note() {
        let note = include_str!("../../vendor-notes/a2a.md");
        for p in PROBES {
            let row = format!("| `{}` | {} | {} |", p.id, p.level.label(), p.spec);
            assert!(note.contains(&row), "vendor-notes/a2a.md lacks {row}");
        }
    }

    #[test]
    fn the_oversize_body_is_json_of_the_stated_size() {
        for size in [1024, OVERSIZE_BYTES] {
            let body = oversize_body(size);
            assert_eq!(body.len(), size);
            let doc: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(doc["method"], "ddwire.check/oversize");
        }
    }
}
