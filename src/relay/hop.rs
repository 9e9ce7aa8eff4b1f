//! One hop: a JSON-RPC call received, its target chosen, the star gate passed, the call
//! forwarded, the answer checked and passed back, and the hop's spans kept.

use super::call::{Inbound, Kind, inject_hops, inject_trace, state_name};
use super::failure::Failure;
use super::owners::OwnedBy;
use super::peers::{Endpoints, Peer};
use super::{Relay, SERVICE_NAME, topology, translate};
use crate::text::{Keep, truncate};
use crate::trace::names::relay as n;
use crate::trace::{ActiveSpan, Attributes, SpanContext, SpanKind, StatusCode, Tracer};
use crate::wire::WireError;
use crate::wire::a2a::Binding;
use crate::wire::a2a::client::Target;
use crate::wire::jsonrpc::{self, RpcError};
use serde_json::{Map, Value};

/// The most characters of a call's input or output kept on a span (`input.value`,
/// `output.value`); longer text is cut and marked.
const MAX_VALUE_CHARS: usize = 8_192;

/// What one call came to: the result to pass back, or why not.
pub(crate) type Outcome = Result<Value, Failure>;

/// Carry `inbound` through: the answer for the caller, as a JSON-RPC result or error.
pub(crate) fn carry(relay: &Relay, inbound: &Inbound) -> Outcome {
    let tracer = Tracer::new(SERVICE_NAME).with_remote_parent(inbound.trace_parent());
    let server = server_span(relay, &tracer, inbound);
    let mut session = inbound.context_id().map(str::to_string);
    let outcome = forward(relay, inbound, &tracer, &server, &mut session);
    finish(
        relay,
        &tracer,
        inbound,
        server,
        session.as_deref(),
        outcome.as_ref().map(Some),
    );
    outcome
}

/// The peer a call is for (its path, its metadata, or the task's owner), checked against the
/// registry and the star gate, and where to call it: everything before a forward, streams or
/// not. Records the target on the server span, and the session the owner knows.
pub(crate) fn route_call(
    relay: &Relay,
    inbound: &Inbound,
    server: &ActiveSpan<'_>,
    session: &mut Option<String>,
) -> Result<(Peer, Target), Failure> {
    check_loop(relay, inbound)?;
    let task = inbound.task_id();
    let owner = task.and_then(|t| relay.owners.get(t));
    let target = match (inbound.named_target(), &owner) {
        (Some(named), _) => named.to_string(),
        (None, Some(owner)) => owner.peer.clone(),
        (None, None) => {
            return Err(match task {
                Some(id) if inbound.kind.names_task() => Failure::UnknownTask { id: id.into() },
                _ => Failure::NoTarget {
                    method: inbound.call.method.clone(),
                },
            });
        }
    };
    if session.is_none() {
        *session = owner.as_ref().and_then(|o| o.context_id.clone());
    }
    server.set(n::GRAPH_NODE_ID, target.as_str());
    server.set(n::PEER_ID, target.as_str());
    let Some(peer) = relay.registry.get(&target) else {
        return Err(Failure::UnknownPeer {
            id: target,
            known: relay.registry.ids(),
        });
    };
    server.set(n::PEER_ROLE, peer.spec.role.as_str());
    topology::check(relay.topology, &relay.registry, inbound.sender(), &target)
        .map_err(Failure::Topology)?;
    let endpoint = endpoint_of(relay, &peer, inbound)?;
    Ok((peer, endpoint))
}

/// Refuse a call that has come through this relay already (its pseudonym is in the call's
/// `Via`), or through [`Relay::max_hops`] relays or more (the `Via` entries, or the message
/// metadata `relay.hops` when a relay that writes no `Via` carried it): a relay that is its own
/// peer, or two relays that are each other's, stop at the first repeat instead of recursing
/// until the connection cap runs out.
pub(crate) fn check_loop(relay: &Relay, inbound: &Inbound) -> Result<(), Failure> {
    let via = inbound.via();
    if via_names(&via, &relay.via_name) {
        return Err(Failure::Loop {
            reason: format!(
                "the call has passed this relay already (Via: {via}): a peer leads back to it"
            ),
        });
    }
    let hops = inbound.hops();
    if hops >= u64::from(relay.max_hops) {
        return Err(Failure::Loop {
            reason: format!(
                "the call has passed {hops} relays, the most this relay carries on is {}",
                relay.max_hops
            ),
        });
    }
    Ok(())
}

/// Whether a `Via` value (RFC 9110 §7.6.3: comma-separated `protocol received-by` entries)
/// names `received_by`.
pub(crate) fn via_names(via: &str, received_by: &str) -> bool {
    via.split(',').any(|entry| {
        entry
            .split_whitespace()
            .nth(1)
            .is_some_and(|by| by == received_by)
    })
}

/// The header fields a forward carries: the forward's `traceparent` (and `tracestate`), the
/// caller's A2A extensions header as it declared it (the relay declares none of its own),
/// and the `Via` that carries the hop count.
fn forward_headers(
    relay: &Relay,
    inbound: &Inbound,
    peer_binding: Binding,
    context: &SpanContext,
) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("traceparent", context.traceparent()),
        ("Via", relay.via_after(&inbound.via())),
    ];
    if !context.trace_state.is_empty() {
        headers.push(("tracestate", context.trace_state.header()));
    }
    if let Some(ext) = inbound.header(inbound.binding.extensions_header()) {
        headers.push((peer_binding.extensions_header(), ext.to_string()));
    }
    headers
}

/// The server span of a call, started.
pub(crate) fn server_span<'t>(
    relay: &Relay,
    tracer: &'t Tracer,
    inbound: &Inbound,
) -> ActiveSpan<'t> {
    let server = tracer
        .informational_span(server_span_name(inbound.kind))
        .kind(SpanKind::Server)
        .attribute(n::RPC_SYSTEM, "jsonrpc")
        .attribute(n::RPC_METHOD, inbound.call.method.as_str())
        .attribute(n::BINDING, inbound.binding.version())
        .attribute(n::SPAN_KIND, "AGENT")
        .attribute(n::AGENT_ID, relay.relay_id.as_str())
        .attribute(n::AGENT_NAME, SERVICE_NAME)
        .attribute(n::AGENT_ROLE, "relay")
        .attribute(n::INPUT_VALUE, clip(&input_of(inbound).to_string()))
        .attribute(n::INPUT_MIME_TYPE, "application/json")
        .start();
    if let Some(sender) = inbound.sender() {
        server.set(n::USER_ID, sender);
        server.set(n::GRAPH_NODE_PARENT_ID, sender);
        if let Some(role) = relay.registry.role(sender) {
            server.set(n::SENDER_ROLE, role.as_str());
        }
    }
    if let Some(task) = inbound.task_id() {
        server.set(n::TASK_ID, task);
    }
    server
}

/// End the server span with what the call came to, and keep the hop's spans.
pub(crate) fn finish(
    relay: &Relay,
    tracer: &Tracer,
    inbound: &Inbound,
    server: ActiveSpan<'_>,
    session: Option<&str>,
    outcome: Result<Option<&Value>, &Failure>,
) {
    if let Some(s) = session {
        server.set(n::SESSION_ID, s);
    }
    match outcome {
        Ok(result) => {
            if let Some(result) = result {
                server.set(n::OUTPUT_VALUE, clip(&result.to_string()));
                server.set(n::OUTPUT_MIME_TYPE, "application/json");
            }
            server.set_status(StatusCode::Ok, None);
            relay.count(Ok(()));
        }
        Err(failure) => {
            let class = failure.class();
            server.set(n::FAILURE_CLASS, class.as_str());
            server.set(
                n::RPC_JSONRPC_ERROR_CODE,
                failure.to_rpc(inbound.binding).code,
            );
            server.set_status(StatusCode::Error, Some(&failure.to_string()));
            relay.count(Err(class));
        }
    }
    let trace_id = server.context().trace_id;
    server.end();
    relay.sink.record(session, tracer.take(trace_id));
}

/// The gate and the forward of a whole-reply call, between the server span's start and end.
fn forward(
    relay: &Relay,
    inbound: &Inbound,
    tracer: &Tracer,
    server: &ActiveSpan<'_>,
    session: &mut Option<String>,
) -> Outcome {
    let routed = route_call(relay, inbound, server, session)?;
    if inbound.kind.streams() {
        // Reached only by a stream the caller sent as a notification (no id to answer).
        return Err(Failure::StreamWithoutId {
            method: inbound.call.method.clone(),
        });
    }
    let (peer, endpoint) = &routed;
    let (client, answered) = send_forward(
        relay,
        tracer,
        inbound,
        server,
        "forward",
        &routed,
        |method, params, headers| {
            let timeout = relay.timeout;
            relay
                .client
                .call_announcing(endpoint, method, params, headers, timeout, false)
        },
    );
    let result = answered.and_then(|result| {
        let invalid = |reason| Failure::invalid_reply(&peer.spec.id, reason);
        let result = if endpoint.binding == inbound.binding {
            result
        } else {
            translate::result(inbound.kind, endpoint.binding, inbound.binding, result).map_err(
                |reason| {
                    let version = endpoint.binding.version();
                    invalid(format!("its A2A {version} answer cannot be read: {reason}"))
                },
            )?
        };
        check_reply(inbound.kind, &result).map_err(|e| invalid(e.to_string()))?;
        note_task(relay, &peer.spec.id, &result, server, session)?;
        Ok(result)
    });
    let status = result.is_ok().then_some(200);
    let outcome = result.as_ref().map(|_| ());
    end_client(client, outcome, status, 0, session.as_deref());
    result
}

/// What a blocking and a streamed hop do alike once the call is `routed` to a peer: set the
/// server span's `mode`, open the CLIENT span (`a2a.relay.forward`), put its trace context and the hop count in the
/// params, translate them into the peer's binding, and `send` them with the header fields a
/// forward carries; then record the peer's health by how the sending went. The CLIENT span
/// is left open, for the caller to end with what the answer comes to.
pub(crate) fn send_forward<'t, R>(
    relay: &Relay,
    tracer: &'t Tracer,
    inbound: &Inbound,
    server: &ActiveSpan<'_>,
    mode: &str,
    (peer, endpoint): &(Peer, Target),
    send: impl FnOnce(&str, Value, &[(&str, &str)]) -> Result<R, WireError>,
) -> (ActiveSpan<'t>, Result<R, Failure>) {
    server.set(n::MODE, mode);
    let client = tracer
        .informational_span(n::SPAN_FORWARD)
        .kind(SpanKind::Client)
        .attribute(n::RPC_SYSTEM, "jsonrpc")
        .attribute(n::RPC_METHOD, inbound.call.method.as_str())
        .attribute(n::BINDING, endpoint.binding.version())
        .attribute(n::PEER_ID, peer.spec.id.as_str())
        .attribute(n::PEER_ROLE, peer.spec.role.as_str())
        .attribute(n::URL_FULL, endpoint.url.as_str())
        .attribute(n::SPAN_KIND, "AGENT")
        .attribute(n::GRAPH_NODE_ID, peer.spec.id.as_str())
        .attribute(n::GRAPH_NODE_PARENT_ID, relay.relay_id.as_str())
        .start();
    let context = client.context();
    let mut params = inbound.call.params.clone();
    if inbound.kind.carries_message() {
        inject_trace(&mut params, &context);
        inject_hops(&mut params, inbound.hops() + 1);
    }
    let (method, params) = match outgoing(inbound, endpoint, params) {
        Ok(out) => out,
        Err(failure) => return (client, Err(failure)),
    };
    client.set(n::RPC_METHOD, method);
    let owned = forward_headers(relay, inbound, endpoint.binding, &context);
    let headers: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let sent = send(method, params, &headers);
    relay
        .registry
        .record_forward(&peer.spec.id, sent.as_ref().map(|_| ()));
    let sent = sent.map_err(|error| Failure::from_peer(&peer.spec.id, error));
    (client, sent)
}

/// End a hop's CLIENT span, blocking or streamed alike: the peer's HTTP status when one came
/// (with its answer, or in the error it failed with), the JSON-RPC error code of a peer's
/// error, the events a stream passed, the outcome (a failure's class), and the session.
pub(crate) fn end_client(
    client: ActiveSpan<'_>,
    outcome: Result<(), &Failure>,
    status: Option<u16>,
    events: u64,
    session: Option<&str>,
) {
    let peer_error = match outcome {
        Err(Failure::Peer { error, .. }) => Some(error),
        _ => None,
    };
    let status = match peer_error {
        Some(WireError::HttpStatus { status, .. }) => Some(*status),
        _ => status,
    };
    if let Some(status) = status {
        client.set(n::HTTP_STATUS, i64::from(status));
    }
    if let Some(WireError::JsonRpc { code, .. }) = peer_error {
        client.set(n::RPC_JSONRPC_ERROR_CODE, *code);
    }
    if events > 0 {
        client.set(n::STREAM_EVENTS, events as i64);
    }
    match outcome {
        Ok(()) => client.set_status(StatusCode::Ok, None),
        Err(failure) => {
            client.set(n::FAILURE_CLASS, failure.class().as_str());
            client.set_status(StatusCode::Error, Some(&failure.to_string()));
        }
    }
    if let Some(s) = session {
        client.set(n::SESSION_ID, s);
    }
    client.end();
}

/// The method and params to send to `endpoint`: the caller's, or translated into the peer's
/// binding.
fn outgoing<'a>(
    inbound: &'a Inbound,
    endpoint: &Target,
    params: Value,
) -> Result<(&'a str, Value), Failure> {
    if endpoint.binding == inbound.binding {
        return Ok((inbound.call.method.as_str(), params));
    }
    let method =
        translate::method(inbound.kind, endpoint.binding).unwrap_or(inbound.call.method.as_str());
    let params = translate::params(inbound.kind, inbound.binding, endpoint.binding, params)?;
    Ok((method, params))
}

/// Where to call `peer` for a call of `kind` in `binding`: its card's interface of that binding,
/// else its preferred one when the relay translates `kind` (the card fetched now if none is
/// held). A card that cannot be had fails the call as its fetch failed.
fn endpoint_of(relay: &Relay, peer: &Peer, inbound: &Inbound) -> Result<Target, Failure> {
    let (binding, kind) = (inbound.binding, inbound.kind);
    let mut endpoints = peer.endpoints.clone();
    if endpoints == Endpoints::Unknown {
        match relay.fetch_card(&peer.spec.id, &peer.spec.url, &inbound.via()) {
            Err(WireError::HttpStatus { status: 404, .. }) | Ok(_) => {}
            // 508 Loop Detected (RFC 5842 §7.2): the card request came back to a relay it
            // had passed, this one or another.
            Err(WireError::HttpStatus {
                status: 508, url, ..
            }) => {
                return Err(Failure::Loop {
                    reason: format!(
                        "peer {:?}'s card ({url}) leads back to a relay the call has passed",
                        peer.spec.id
                    ),
                });
            }
            Err(error) => {
                return Err(Failure::from_peer(&peer.spec.id, error));
            }
        }
        endpoints = relay
            .registry
            .get(&peer.spec.id)
            .map(|p| p.endpoints)
            .unwrap_or(Endpoints::Unknown);
    }
    let offered: Vec<&'static str> = match &endpoints {
        Endpoints::Card(list) => list.iter().map(|(b, _)| b.version()).collect(),
        _ => Vec::new(),
    };
    match endpoints.pick(binding, &peer.spec.url) {
        Some((b, url)) if b == binding || translate::method(kind, b).is_some() => {
            Ok(Target { binding: b, url })
        }
        Some(_) => Err(Failure::BindingUnsupported {
            peer: peer.spec.id.clone(),
            binding,
            offered,
        }),
        None => Err(Failure::invalid_reply(
            &peer.spec.id,
            "its agent card offers no JSON-RPC interface".into(),
        )),
    }
}

/// A peer's `result` that does not answer the call: what was wanted, and the start of what
/// came.
#[derive(Debug)]
pub(crate) struct NotAnAnswer {
    wanted: &'static str,
    got: String,
}

impl std::fmt::Display for NotAnAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, got {}", self.wanted, self.got)
    }
}

/// Whether a peer's `result` is an answer to a call of `kind`: a send answers a Task or a
/// Message (1.0 wraps either as `{"task": …}` / `{"message": …}`), `tasks/get` and
/// `tasks/cancel` answer a Task. Anything else is not passed on as if it were one.
pub(crate) fn check_reply(kind: Kind, result: &Value) -> Result<(), NotAnAnswer> {
    let wanted = match kind {
        Kind::Send if task_of(result).is_none() && message_of(result).is_none() => {
            "a send must be answered with a Task or a Message"
        }
        Kind::Get | Kind::Cancel if task_of(result).is_none() => {
            "a task call must be answered with a Task"
        }
        _ => return Ok(()),
    };
    let got = result.to_string();
    Err(NotAnAnswer {
        wanted,
        got: truncate(&got, Keep::Chars(120), "…").into_owned(),
    })
}

/// The Task a result is, or wraps (1.0 `{"task": …}`): an object with a string `id` and a
/// `status` object.
fn task_of(result: &Value) -> Option<&Map<String, Value>> {
    let task = result.get("task").unwrap_or(result).as_object()?;
    (task.get("id")?.is_string() && task.get("status")?.is_object()).then_some(task)
}

/// The Message a result is, or wraps: an object with a string `messageId`.
fn message_of(result: &Value) -> Option<&Map<String, Value>> {
    let message = result.get("message").unwrap_or(result).as_object()?;
    message.get("messageId")?.is_string().then_some(message)
}

/// Remember who owns the task an answer names, and record its state change on the span;
/// `Err` when the task is another peer's (the answer is then not passed on).
pub(crate) fn note_task(
    relay: &Relay,
    peer: &str,
    result: &Value,
    server: &ActiveSpan<'_>,
    session: &mut Option<String>,
) -> Result<(), Failure> {
    let (task_id, context_id, state) = if let Some(task) = task_of(result) {
        (
            task.get("id").and_then(Value::as_str),
            task.get("contextId").and_then(Value::as_str),
            task.get("status")
                .and_then(|s| s.get("state"))
                .and_then(state_name),
        )
    } else if let Some(message) = message_of(result) {
        (
            message.get("taskId").and_then(Value::as_str),
            message.get("contextId").and_then(Value::as_str),
            None,
        )
    } else {
        return Ok(());
    };
    record_task(
        relay, peer, task_id, context_id, state, server, session, None,
    )
}

/// What a peer's answer, or one event of its stream (`seq`), says of a task: its owner (a
/// task another peer owns is refused), the session it belongs to, and a state change as a
/// span event. Blocking and streamed hops both record through this.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_task(
    relay: &Relay,
    peer: &str,
    task_id: Option<&str>,
    context_id: Option<&str>,
    state: Option<String>,
    server: &ActiveSpan<'_>,
    session: &mut Option<String>,
    seq: Option<u64>,
) -> Result<(), Failure> {
    let Some(task_id) = task_id else {
        if session.is_none() {
            *session = context_id.map(str::to_string);
        }
        return Ok(());
    };
    let seen = relay
        .owners
        .record(task_id, peer, context_id, state.as_deref())
        .map_err(|OwnedBy { owner }| Failure::TaskConflict {
            peer: peer.to_string(),
            task: task_id.to_string(),
            owner,
        })?;
    if session.is_none() {
        *session = context_id.map(str::to_string);
    }
    server.set(n::TASK_ID, task_id);
    if let Some(to) = state {
        server.set(n::TASK_STATE, to.as_str());
        // A task the relay does not remember has no known state to change from: its states
        // are on the span, and no change event would be true.
        if seen.tracked && seen.before.as_deref() != Some(to.as_str()) {
            let mut change = Attributes::default();
            if let Some(from) = seen.before {
                change.set(n::FROM, from);
            }
            change.set(n::TO, to);
            change.set(n::TASK_ID, task_id);
            if let Some(seq) = seq {
                change.set(n::SEQ, seq as i64);
            }
            server.add_event_at(n::EVENT_STATE_CHANGE, change, seen.at_ns);
        }
    }
    Ok(())
}

/// The JSON-RPC answer for `inbound`, from what carrying it came to.
pub(crate) fn answer(inbound: &Inbound, outcome: &Outcome) -> Option<String> {
    let id = inbound.call.id.as_ref()?;
    Some(match outcome {
        Ok(result) => jsonrpc::success_text(id, &result.to_string()),
        Err(failure) => {
            let error: RpcError = failure.to_rpc(inbound.binding);
            jsonrpc::error(id, &error).to_string()
        }
    })
}

fn server_span_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Send | Kind::Stream => n::SPAN_TASK,
        Kind::Get => n::SPAN_TASK_GET,
        Kind::Cancel => n::SPAN_TASK_CANCEL,
        Kind::Subscribe => n::SPAN_TASK_SUBSCRIBE,
        Kind::List => n::SPAN_TASKS_LIST,
        Kind::PushConfig | Kind::Other => n::SPAN_CALL,
    }
}

/// What a span shows as the call's input: the message, else the params.
fn input_of(inbound: &Inbound) -> Value {
    match inbound.message() {
        Some(message) => Value::Object(message.clone()),
        None => inbound.call.params.clone(),
    }
}

/// `text` cut to [`MAX_VALUE_CHARS`] characters (on a character boundary), marked when cut.
fn clip(text: &str) -> String {
    truncate(text, Keep::Chars(MAX_VALUE_CHARS), "…[cut]").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reply_that_is_no_task_or_message_is_not_passed_on() {
        assert!(
            check_reply(
                Kind::Send,
                &json!({"id": "t", "status": {"state": "completed"}})
            )
            .is_ok()
        );
        assert!(check_reply(Kind::Send, &json!({"task": {"id": "t", "status": {}}})).is_ok());
        assert!(check_reply(Kind::Send, &json!({"message": {"messageId": "m"}})).is_ok());
        assert!(check_reply(Kind::Send, &json!({})).is_err());
        assert!(check_reply(Kind::Send, &json!("ok")).is_err());
        assert!(check_reply(Kind::Get, &json!({"messageId": "m"})).is_err());
        assert!(
            check_reply(
                Kind::Cancel,
                &json!({"id": "t", "status": {"state": "canceled"}})
            )
            .is_ok()
        );
    }

    #[test]
    fn a_long_value_is_cut_on_a_character_boundary() {
        let text = "é".repeat(MAX_VALUE_CHARS + 5);
        let cut = clip(&text);
        assert!(cut.ends_with("…[cut]"));
        assert_eq!(
            cut.chars().count(),
            MAX_VALUE_CHARS + "…[cut]".chars().count()
        );
    }
}
