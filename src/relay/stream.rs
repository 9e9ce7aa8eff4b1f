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

use super::call::{Inbound, state_name};
use super::failure::Failure;
use super::hop::{answer, end_client, finish, route_call, send_forward, server_span};
use super::{Relay, SERVICE_NAME};
use crate::trace::names::relay as n;
use crate::trace::{ActiveSpan, Attributes, Tracer};
use crate::wire::WireError;
use crate::wire::a2a::Binding;
use crate::wire::a2a::client::read_reply;
use crate::wire::a2a::stream::StreamEvent;
use crate::wire::http::Response;
use crate::wire::http::client::BodyStream;
use crate::wire::jsonrpc;
use crate::wire::sse;
use crossbeam_channel::{Sender, bounded};
use serde_json::Value;
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

/// What the relay reads of a peer's stream after its last event: the chunked end, and room
/// for a few stray comments.
const MAX_TAIL: u64 = 64 << 10;

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

/// The hop of a stream call, from its routing to the end of its spans; the caller's answer
/// (a stream, or a whole reply) goes through `decided` as soon as it is known.
fn pump(relay: &Relay, inbound: &Inbound, decided: Sender<Response>) {
    let tracer = Tracer::new(SERVICE_NAME).with_remote_parent(inbound.trace_parent());
    let server = server_span(relay, &tracer, inbound);
    let mut session = inbound.context_id().map(str::to_string);
    let outcome = match open(relay, &tracer, inbound, &server, &mut session) {
        Ok(Opened::Stream(stream)) => {
            return pass_stream(relay, inbound, &tracer, server, session, stream, decided);
        }
        Ok(Opened::Whole(result)) => Ok(result),
        Err(failure) => Err(failure),
    };
    // A refusal, or the peer's whole reply: the spans are kept, then the caller answered.
    finish(
        relay,
        &tracer,
        inbound,
        server,
        session.as_deref(),
        outcome.as_ref().map(Some),
    );
    let text = answer(inbound, &outcome).unwrap_or_default();
    let _ = decided.send(Response::bytes(200, "application/json", text.into_bytes()));
}

/// What the peer answered a stream call with.
enum Opened<'t> {
    /// An event stream, to pass on.
    Stream(PeerStream<'t>),
    /// A whole JSON-RPC result (the hop's CLIENT span ended).
    Whole(Value),
}

/// A peer's event stream, in the peer's `binding`, and the CLIENT span of the forward it
/// answers.
struct PeerStream<'t> {
    client: ActiveSpan<'t>,
    peer: String,
    binding: Binding,
    body: BodyStream,
}

/// Route the stream call and send it: the peer's event stream, or its whole reply read and
/// classed as a blocking hop's is (an error, most often). A failure has ended the CLIENT span.
fn open<'t>(
    relay: &Relay,
    tracer: &'t Tracer,
    inbound: &Inbound,
    server: &ActiveSpan<'_>,
    session: &mut Option<String>,
) -> Result<Opened<'t>, Failure> {
    let routed = route_call(relay, inbound, server, session)?;
    let (peer, endpoint) = &routed;
    let session = session.as_deref();
    let id = inbound.call.id.clone().unwrap_or(Value::Null);
    let (client, opened) = send_forward(
        relay,
        tracer,
        inbound,
        server,
        "forward-stream",
        &routed,
        |method, params, headers| {
            let accept = sse::CONTENT_TYPE;
            let timeout = relay.timeout;
            relay
                .client
                .request(
                    endpoint, &id, method, params, headers, timeout, false, accept,
                )
                .and_then(|request| relay.client.http.send_streaming(request, timeout))
        },
    );
    let mut response = match opened {
        Ok(response) => response,
        Err(failure) => {
            end_client(client, Err(&failure), None, 0, session);
            return Err(failure);
        }
    };
    let content_type = response.header("content-type").map(str::to_string);
    let is_stream = content_type
        .as_deref()
        .is_some_and(|c| c.to_ascii_lowercase().starts_with(sse::CONTENT_TYPE));
    if response.status == 200 && is_stream {
        return Ok(Opened::Stream(PeerStream {
            client,
            peer: peer.spec.id.clone(),
            binding: endpoint.binding,
            body: response.body,
        }));
    }
    let status = response.status;
    let outcome = read_whole(&mut response.body)
        .and_then(|body| read_reply(&endpoint.url, status, content_type.as_deref(), &body, &id))
        .map_err(|error| Failure::from_peer(&peer.spec.id, error));
    end_client(
        client,
        outcome.as_ref().map(|_| ()),
        Some(status),
        0,
        session,
    );
    outcome.map(Opened::Whole)
}

/// Answer the caller with a stream and pass the peer's events on to it, then end the hop's
/// spans. A stream that fails ends with one error event saying why.
fn pass_stream(
    relay: &Relay,
    inbound: &Inbound,
    tracer: &Tracer,
    server: ActiveSpan<'_>,
    mut session: Option<String>,
    stream: PeerStream<'_>,
    decided: Sender<Response>,
) {
    let id = inbound.call.id.clone().unwrap_or(Value::Null);
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
        Response::stream(200, sse::CONTENT_TYPE, caller).with_header("Cache-Control", "no-cache"),
    );
    let hop = Hop {
        relay,
        inbound,
        peer: &stream.peer,
        peer_binding: stream.binding,
        server: &server,
        caller: &events,
    };
    let mut count = 0;
    let mut reader = sse::Reader::with_limit(PeerBody(stream.body), MAX_EVENT_BYTES);
    let ended = hop.pass_events(&mut reader, &mut session, &mut count);
    server.set(n::STREAM_EVENTS, count as i64);
    if let Err(failure) = &ended {
        // The caller learns why its stream ended.
        let error = jsonrpc::error(&id, &failure.to_rpc(inbound.binding)).to_string();
        let _ = events.send(sse::event(&error));
    }
    drop(events);
    let ended_ok = ended.as_ref().map(|_| ());
    end_client(
        stream.client,
        ended_ok,
        Some(200),
        count,
        session.as_deref(),
    );
    finish(
        relay,
        tracer,
        inbound,
        server,
        session.as_deref(),
        ended.as_ref().map(|_| None),
    );
    if matches!(ended, Ok(Ended::Last)) {
        read_tail(reader.into_inner());
    }
}

/// How a peer's stream that did not fail ended.
#[derive(Debug, PartialEq)]
enum Ended {
    /// Its last event was passed on.
    Last,
    /// The caller went away first; the peer is not read further.
    CallerGone,
}

/// After a peer's last event, read what is left of its body (the chunked end, no more than
/// [`MAX_TAIL`] bytes, each read bounded by the stream's idle timeout) and drop it: a body
/// read to its end lets the connection be kept for the next call, and the wire log holds the
/// stream whole. The caller's stream has already ended, so a peer slow to end its own costs the
/// caller nothing.
fn read_tail(body: PeerBody) {
    use std::io::Read;
    let _ = std::io::copy(&mut body.take(MAX_TAIL), &mut std::io::sink());
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

/// The peer's body as a reader for the SSE parser; a read fails with the typed error inside,
/// for the hop to take out.
struct PeerBody(BodyStream);

impl std::io::Read for PeerBody {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf).map_err(std::io::Error::other)
    }
}

impl Hop<'_, '_> {
    /// Pass the peer's events on until its last one, counting in `seq` those passed on; why
    /// the stream failed, if it did.
    fn pass_events(
        &self,
        reader: &mut sse::Reader<PeerBody>,
        session: &mut Option<String>,
        seq: &mut u64,
    ) -> Result<Ended, Failure> {
        let peer = self.peer;
        let failed = |error| Failure::from_peer(peer, error);
        let invalid = |reason| Failure::invalid_reply(peer, reason);
        let disconnected = |reason: &str| {
            failed(WireError::Disconnected {
                url: peer.to_string(),
                reason: reason.into(),
            })
        };
        let id = self.inbound.call.id.clone().unwrap_or(Value::Null);
        loop {
            let event = match reader.next_item() {
                Ok(Some(sse::Item::Event(event))) => event,
                Ok(Some(sse::Item::Comment(text))) => {
                    if self.caller.send(sse::comment(&text)).is_err() {
                        return Ok(Ended::CallerGone);
                    }
                    continue;
                }
                Ok(None) => {
                    return Err(disconnected(
                        "the peer ended the stream before its last event",
                    ));
                }
                Err(sse::SseError::Io(e)) => {
                    return Err(match e.into_inner().map(|e| e.downcast::<WireError>()) {
                        Some(Ok(error)) => failed(*error),
                        _ => disconnected("the stream could not be read"),
                    });
                }
                Err(e) => return Err(invalid(e.to_string())),
            };
            let result =
                jsonrpc::read_response(event.data.as_bytes(), &id).map_err(|e| match e {
                    // The peer ended its stream with an error: the caller gets it from
                    // `pass_stream`, as the relay writes errors, after this returns.
                    error @ WireError::JsonRpc { .. } => failed(error),
                    e => invalid(format!("event {seq}: {e}")),
                })?;
            let decoded = StreamEvent::from_json(result.clone(), self.peer_binding)
                .map_err(|e| invalid(format!("event {seq} is no A2A stream event: {e}")))?;
            self.note_event(&result, &decoded, *seq, session)?;
            let frame = if self.peer_binding == self.inbound.binding {
                sse::event(&event.data)
            } else {
                decoded.to_frame(&id, self.inbound.binding)
            };
            let sent = self.caller.send(frame);
            *seq += 1;
            if sent.is_err() {
                // The caller went away: stop reading the peer.
                self.server.set(n::CALLER_GONE, true);
                return Ok(Ended::CallerGone);
            }
            if decoded.is_last() {
                return Ok(Ended::Last);
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
            Binding::V03 => (result.get("kind").and_then(Value::as_str), result),
            Binding::V10 => match result.as_object().and_then(|o| o.iter().next()) {
                Some((k, v)) => (Some(k.as_str()), v),
                None => (None, result),
            },
        };
        let mut chunk = Attributes::default();
        chunk.set(n::SEQ, seq as i64);
        chunk.set(n::FINAL, decoded.is_last());
        chunk.set(n::KIND, kind.unwrap_or("?"));
        server.add_event(n::EVENT_STREAM_CHUNK, chunk);
        let context_id = inner.get("contextId").and_then(Value::as_str);
        let state = inner
            .get("status")
            .and_then(|s| s.get("state"))
            .and_then(state_name);
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
