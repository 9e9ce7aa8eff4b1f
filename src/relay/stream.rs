//! A streamed hop: `message/stream`, `SendStreamingMessage`, `tasks/resubscribe` and
//! `SubscribeToTask`, forwarded to the peer and its Server-Sent Events passed on one by one.
//!
//! The forward carries the caller's JSON-RPC id, so each event the peer writes already
//! answers the caller's call, and its `data` is passed on unchanged (keep-alive comments too);
//! from a peer in the other binding, each event is rewritten in the caller's
//! ([`super::translate`]).
//! Each event is read before it is passed on (A2A 1.0 §9.4.2, 0.3 §3.3.1: a JSON-RPC response
//! whose `result` is one stream event): it becomes an `a2a.message.stream_chunk` span event
//! (`seq` from 0, `final`, `kind`), and a status it carries an `a2a.task.state_change`.
//!
//! A stream never ends silently. An event that is not a JSON-RPC response holding an A2A
//! event (`peer_invalid_reply`), a peer gone quiet for the relay's timeout (`peer_timeout`),
//! or a stream closed before its last event (`peer_disconnect`) ends it with one error event,
//! `{"jsonrpc": "2.0", "id": <the caller's>, "error": {…, "data": {"class": …}}}`, as a2a-sdk
//! servers end a stream that fails. A peer that answers a stream with a whole JSON reply (an
//! error, say) has it passed on as the relay's whole reply.

use super::call::{Inbound, inject_hops, inject_trace, state_name};
use super::failure::Failure;
use super::hop::{
    client_span, end_client, finish, forward_headers, outgoing, route_call, server_span,
};
use super::translate;
use super::{Relay, SERVICE_NAME};
use crate::trace::names::relay as n;
use crate::trace::{ActiveSpan, Attributes, Tracer};
use crate::wire::WireError;
use crate::wire::a2a::Binding;
use crate::wire::a2a::stream::StreamEvent;
use crate::wire::http::Response;
use crate::wire::http::client::BodyStream;
use crate::wire::jsonrpc;
use crate::wire::sse;
use crossbeam_channel::{Sender, bounded};
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// The most bytes of a peer's whole (non-stream) answer to a stream call the relay reads.
const MAX_WHOLE_REPLY: usize = 4 << 20;
/// Events buffered between the peer's stream and the caller's. With the drain guard's one
/// and the connection's one being written, a caller that stops reading holds at most this
/// many plus two events in the relay; then the relay stops reading the peer (back-pressure
/// through TCP) until the server's no-progress write limit ends the caller's connection.
const EVENTS_BUFFERED: usize = 4;
/// The longest line or event the relay reads from a peer's stream (a longer one ends the
/// stream as `peer_invalid_reply`): with [`EVENTS_BUFFERED`], what bounds a stalled stream's
/// memory.
const MAX_EVENT_BYTES: usize = 1 << 20;

/// Forward the stream call `inbound` (which has an id): the relay's answer, a stream or a whole
/// reply. The hop runs on a thread of its own, which holds its spans until the stream ends.
pub(crate) fn carry_stream(relay: Arc<Relay>, inbound: Inbound) -> Response {
    let (decided, decision) = bounded::<Response>(1);
    let wait = relay.timeout + Duration::from_secs(5);
    let id = inbound.call.id.clone().unwrap_or(Value::Null);
    std::thread::spawn(move || pump(&relay, &inbound, decided));
    decision.recv_timeout(wait).unwrap_or_else(|_| {
        let error = jsonrpc::RpcError::new(
            jsonrpc::INTERNAL_ERROR,
            "relay: the stream's forward did not start in time",
        );
        Response::json(200, &jsonrpc::error(&id, &error))
    })
}

fn pump(relay: &Relay, inbound: &Inbound, decided: Sender<Response>) {
    let tracer = Tracer::new(SERVICE_NAME).with_remote_parent(inbound.trace_parent());
    let server = server_span(relay, &tracer, inbound);
    let mut session = inbound.context_id().map(str::to_string);
    let id = inbound.call.id.clone().unwrap_or(Value::Null);
    let whole = |outcome: Result<&Value, &Failure>| {
        let text = match outcome {
            Ok(result) => jsonrpc::success_text(&id, &result.to_string()),
            Err(failure) => jsonrpc::error(&id, &failure.to_rpc(inbound.binding)).to_string(),
        };
        Response::bytes(200, "application/json", text.into_bytes())
    };
    // A refusal before any forward: the spans are kept, then the caller answered.
    let refuse = |server: ActiveSpan<'_>, session: Option<&str>, failure: Failure| {
        finish(relay, &tracer, inbound, server, session, Err(&failure));
        let _ = decided.send(whole(Err(&failure)));
    };
    let (peer, endpoint) = match route_call(relay, inbound, &server, &mut session) {
        Ok(routed) => routed,
        Err(failure) => return refuse(server, session.as_deref(), failure),
    };
    server.set(n::MODE, "forward-stream");
    let client = client_span(relay, &tracer, inbound, &peer, &endpoint);
    let context = client.context();
    let mut params = inbound.call.params.clone();
    if inbound.kind.carries_message() {
        inject_trace(&mut params, &context);
        inject_hops(&mut params, inbound.hops() + 1);
    }
    let (method, params) = match outgoing(inbound, &endpoint, params) {
        Ok(out) => {
            client.set(n::RPC_METHOD, out.0);
            out
        }
        Err(failure) => {
            end_client(client, Err(&failure), None, 0, session.as_deref());
            return refuse(server, session.as_deref(), failure);
        }
    };
    let owned = forward_headers(relay, inbound, endpoint.binding, &context);
    let headers: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let opened = relay
        .client
        .request(
            &endpoint,
            &id,
            method,
            params,
            &headers,
            relay.timeout,
            false,
            "text/event-stream",
        )
        .and_then(|request| relay.client.http.send_streaming(request, relay.timeout));
    let peer_failure = |error: WireError| Failure::Peer {
        peer: peer.spec.id.clone(),
        error,
    };
    let mut response = match opened {
        Ok(response) => response,
        Err(error) => {
            relay.registry.record_forward(&peer.spec.id, Err(&error));
            let failure = peer_failure(error);
            end_client(client, Err(&failure), None, 0, session.as_deref());
            return refuse(server, session.as_deref(), failure);
        }
    };
    relay.registry.record_forward(&peer.spec.id, Ok(()));
    let is_stream = response.status == 200
        && response
            .header("content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
    if !is_stream {
        // A whole reply: an error, most often. Read it, and class it as a whole reply is.
        let status = response.status;
        let content_type = response.header("content-type").map(str::to_string);
        let outcome = read_whole(&mut response.body)
            .and_then(|body| {
                crate::wire::a2a::client::read_reply(
                    &endpoint.url,
                    status,
                    content_type.as_deref(),
                    &body,
                    &id,
                )
            })
            .map_err(peer_failure);
        let answered = outcome.as_ref().map(|_| ());
        end_client(client, answered, Some(status), 0, session.as_deref());
        match outcome {
            Ok(result) => {
                finish(
                    relay,
                    &tracer,
                    inbound,
                    server,
                    session.as_deref(),
                    Ok(Some(&result)),
                );
                let _ = decided.send(whole(Ok(&result)));
            }
            Err(failure) => refuse(server, session.as_deref(), failure),
        }
        return;
    }
    let (events, caller) = bounded::<Vec<u8>>(EVENTS_BUFFERED);
    let caller = match &relay.drain {
        // Cut at the drain's deadline, the caller's stream ends with an error event.
        Some(drain) => {
            let error = jsonrpc::RpcError::new(
                jsonrpc::DEADLINE_EXCEEDED,
                "relay: shutting down: the stream was cut at the drain deadline",
            );
            drain.guard(caller, sse::event(&jsonrpc::error(&id, &error).to_string()))
        }
        None => caller,
    };
    let _ = decided.send(
        Response::stream(200, "text/event-stream", caller).with_header("Cache-Control", "no-cache"),
    );
    let hop = Hop {
        relay,
        inbound,
        peer: &peer.spec.id,
        peer_binding: endpoint.binding,
        server: &server,
        caller: &events,
    };
    let (count, ended) = hop.pass_events(response.body, &mut session);
    server.set(n::STREAM_EVENTS, count as i64);
    if let Err(failure) = &ended {
        // The caller learns why its stream ended.
        let error = jsonrpc::error(&id, &failure.to_rpc(inbound.binding)).to_string();
        let _ = events.send(sse::event(&error));
    }
    drop(events);
    let ended_ok = ended.as_ref().map(|_| ());
    end_client(client, ended_ok, Some(200), count, session.as_deref());
    finish(
        relay,
        &tracer,
        inbound,
        server,
        session.as_deref(),
        ended.as_ref().map(|()| None),
    );
}

/// One stream's hop while its events pass.
struct Hop<'a, 't> {
    relay: &'a Relay,
    inbound: &'a Inbound,
    peer: &'a str,
    /// The binding the peer writes its events in (translated when it is not the caller's).
    peer_binding: Binding,
    server: &'a ActiveSpan<'t>,
    caller: &'a Sender<Vec<u8>>,
}

/// Read a whole body of at most [`MAX_WHOLE_REPLY`] bytes.
fn read_whole(body: &mut BodyStream) -> Result<Vec<u8>, WireError> {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = body.read(&mut buf)?;
        if n == 0 || out.len() + n > MAX_WHOLE_REPLY {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// The peer's body as a reader for the SSE parser, keeping the typed error a read failed with
/// where the hop can take it.
struct PeerBody {
    body: BodyStream,
    error: Rc<RefCell<Option<WireError>>>,
}

impl std::io::Read for PeerBody {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.body.read(buf) {
            Ok(n) => Ok(n),
            Err(e) => {
                let text = e.to_string();
                *self.error.borrow_mut() = Some(e);
                Err(std::io::Error::other(text))
            }
        }
    }
}

impl Hop<'_, '_> {
    /// Pass the peer's events on until its last one; how many were passed on, and why the
    /// stream failed, if it did.
    fn pass_events(
        &self,
        body: BodyStream,
        session: &mut Option<String>,
    ) -> (u64, Result<(), Failure>) {
        let peer = self.peer;
        let failed = |error: WireError| Failure::Peer {
            peer: peer.to_string(),
            error,
        };
        let invalid = |reason: String| Failure::InvalidReply {
            peer: peer.to_string(),
            reason,
        };
        let id = self.inbound.call.id.clone().unwrap_or(Value::Null);
        let read_error = Rc::new(RefCell::new(None));
        let mut reader = sse::Reader::with_limit(
            PeerBody {
                body,
                error: read_error.clone(),
            },
            MAX_EVENT_BYTES,
        );
        let mut seq: u64 = 0;
        loop {
            let item =
                match reader.next_item() {
                    Ok(Some(item)) => item,
                    Ok(None) => {
                        return (
                            seq,
                            Err(failed(WireError::Disconnected {
                                url: peer.to_string(),
                                reason: "the peer ended the stream before its last event".into(),
                            })),
                        );
                    }
                    Err(sse::SseError::Io(_)) => {
                        let error = read_error.borrow_mut().take().unwrap_or_else(|| {
                            WireError::Disconnected {
                                url: peer.to_string(),
                                reason: "the stream could not be read".into(),
                            }
                        });
                        return (seq, Err(failed(error)));
                    }
                    Err(e) => return (seq, Err(invalid(e.to_string()))),
                };
            let event = match item {
                sse::Item::Comment(text) => {
                    if self.caller.send(sse::comment(&text)).is_err() {
                        return (seq, Ok(()));
                    }
                    continue;
                }
                sse::Item::Event(event) => event,
            };
            let result = match jsonrpc::read_response(event.data.as_bytes(), &id) {
                Ok(result) => result,
                Err(error @ WireError::JsonRpc { .. }) => {
                    // The peer ended its stream with an error: the caller gets it from
                    // `pump`, as the relay writes errors, after this returns.
                    return (seq, Err(failed(error)));
                }
                Err(e) => return (seq, Err(invalid(format!("event {seq}: {e}")))),
            };
            let decoded = match StreamEvent::from_json(result.clone(), self.peer_binding) {
                Ok(decoded) => decoded,
                Err(e) => {
                    return (
                        seq,
                        Err(invalid(format!("event {seq} is no A2A stream event: {e}"))),
                    );
                }
            };
            let last = decoded.is_last();
            if let Err(failure) = self.note_event(&result, &decoded, seq, session) {
                return (seq, Err(failure));
            }
            let frame = if self.peer_binding == self.inbound.binding {
                sse::event(&event.data)
            } else {
                let text = translate::event(&decoded, self.inbound.binding);
                sse::event(&jsonrpc::success_text(&id, &text))
            };
            if self.caller.send(frame).is_err() {
                // The caller went away: stop reading the peer.
                self.server.set(n::CALLER_GONE, true);
                return (seq + 1, Ok(()));
            }
            seq += 1;
            if last {
                return (seq, Ok(()));
            }
        }
    }

    /// Record one event on the server span: a stream chunk, and the task's state change if any;
    /// `Err` when the event names a task another peer owns.
    fn note_event(
        &self,
        result: &Value,
        decoded: &StreamEvent,
        seq: u64,
        session: &mut Option<String>,
    ) -> Result<(), Failure> {
        let (relay, peer, server) = (self.relay, self.peer, self.server);
        // The event's object: v0.3 writes it as the result, 1.0 under its one member's name.
        let (kind, inner) = match self.peer_binding {
            Binding::V03 => (
                result
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string(),
                result,
            ),
            Binding::V10 => match result.as_object().and_then(|o| o.iter().next()) {
                Some((k, v)) => (k.clone(), v),
                None => ("?".into(), result),
            },
        };
        let mut chunk = Attributes::default();
        chunk.set(n::SEQ, seq as i64);
        chunk.set(n::FINAL, decoded.is_last());
        chunk.set(n::KIND, kind);
        server.add_event(n::EVENT_STREAM_CHUNK, chunk);
        let context_id = inner.get("contextId").and_then(Value::as_str);
        let state = inner
            .get("status")
            .and_then(|s| s.get("state"))
            .and_then(Value::as_str)
            .map(state_name);
        super::hop::record_task(
            relay,
            peer,
            decoded.task_id(),
            context_id,
            state,
            server,
            session,
            Some(seq),
        )
    }
}
