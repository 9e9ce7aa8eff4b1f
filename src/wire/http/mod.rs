//! HTTP/1.1 as ddwire uses it: plain request and response structs, one handler type, one
//! sans-IO parser and writer, and three ways to move messages:
//!
//! - [`server`]: ddwire's own server on `std::net`, one thread per connection, bounded
//!   everywhere (head buffer and deadline, body limit and deadline, connection cap);
//! - [`client`]: calls over a shared ureq agent, with the request, response and interrupt
//!   that both client transports share in `call`;
//! - [`memory`]: an in-memory transport that carries real HTTP/1.1 bytes through the very same
//!   parser, handler and writer, without a socket.
//!
//! The wire representation is sans-IO, one module per concept: `head` parses a request or
//! response head and decides its framing (RFC 9112 §2–§6), `chunked` decodes the chunked
//! transfer coding (§7.1), `body` reads a body by its framing within a limit, and `write`
//! writes every response (and the request bytes of the in-memory transport and the load
//! generator). Each takes bytes and gives bytes; the server and the in-memory transport differ
//! only in where the bytes come from. `vendor-notes/http.md` says what is followed, what is
//! refused and why.

pub(crate) mod body;
pub(crate) mod browser;
pub(crate) mod call;
pub(crate) mod chunked;
pub mod client;
pub(crate) mod drain;
pub(crate) mod egress;
pub(crate) mod head;
pub(crate) mod log;
pub mod memory;
pub mod server;
pub(crate) mod write;

pub use egress::EgressError;
pub(crate) use write::write_response;

use crossbeam_channel::Receiver;
use std::any::Any;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// One HTTP request, as a handler sees it.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The method as sent, one of [`head::METHODS`]. A `HEAD` request reaches the handler as
    /// `GET`: the server sends the head of the `GET` response without its body (RFC 9110
    /// §9.3.2), so `HEAD` works wherever `GET` does.
    pub(crate) method: String,
    /// The path, without the query string.
    pub path: String,
    /// The raw query string, without `?`.
    pub(crate) query: String,
    /// Header fields in arrival order, names lower-cased; shared, so that the work a request
    /// plans can keep them without copying each field.
    pub(crate) headers: std::sync::Arc<[(String, String)]>,
    /// The body, read in full within `Limits::max_body_bytes`.
    pub(crate) body: Vec<u8>,
    /// Set when the body could not be read within the limits; `body` is then empty and the
    /// handler answers with the reason (the A2A endpoint as a JSON-RPC error).
    pub(crate) body_error: Option<BodyError>,
    /// The peer, when there is a socket.
    pub(crate) remote_addr: Option<SocketAddr>,
}

/// Every value of the field `name` among `fields`, in the order they came. Field names are
/// case-insensitive (RFC 9110 §5.1): every header lookup in ddwire, of a request or a
/// response, server or client, goes through here.
pub(crate) fn header_values<'a>(
    fields: &'a [(String, String)],
    name: &str,
) -> impl Iterator<Item = &'a str> {
    fields
        .iter()
        .filter(move |(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The first value of the field `name` among `fields` (see [`header_values`]).
pub(crate) fn header<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    header_values(fields, name).next()
}

impl Request {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// Every value of a header, joined with `", "` as RFC 9110 §5.3 combines repeated fields.
    pub(crate) fn header_joined(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = header_values(&self.headers, name).collect();
        (!values.is_empty()).then(|| values.join(", "))
    }
}

/// Why a request body was not read. A handler sees the first two (and answers them, the A2A
/// endpoint as a JSON-RPC error too); the server answers the others itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Larger than the limit (HTTP 413).
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The body did not arrive within [`Limits::body_timeout`] (HTTP 408).
    Timeout {
        /// The deadline it missed.
        after: Duration,
    },
    /// The peer stopped sending before the body was complete.
    Truncated,
    /// The chunked framing was broken (HTTP 400).
    Chunked(chunked::ChunkedError),
    /// Reading on would take the request bodies held by the server past
    /// [`Limits::max_body_memory`], and no room was made within a second (HTTP 503 with
    /// `Retry-After`, RFC 9110 §15.6.4 and §10.2.3). The server answers it itself.
    Busy {
        /// The budget in bytes.
        budget: usize,
    },
}

impl BodyError {
    /// The HTTP status that answers this error.
    pub(crate) fn status(&self) -> u16 {
        match self {
            BodyError::TooLarge { .. } => 413,
            BodyError::Timeout { .. } => 408,
            BodyError::Truncated => 400,
            BodyError::Chunked(e) => e.status(),
            BodyError::Busy { .. } => 503,
        }
    }
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge { limit } => {
                write!(f, "request body exceeds the limit of {limit} bytes")
            }
            BodyError::Timeout { after } => write!(
                f,
                "the request body did not arrive within {} s",
                after.as_secs_f64()
            ),
            BodyError::Truncated => {
                f.write_str("the request body ended before the length its framing declared")
            }
            BodyError::Chunked(e) => write!(f, "malformed chunked request body: {e}"),
            BodyError::Busy { budget } => write!(
                f,
                "the server holds its limit of {budget} bytes of request bodies in flight; try \
                 again later"
            ),
        }
    }
}

impl std::error::Error for BodyError {}

/// One HTTP response.
pub struct Response {
    /// The status code.
    pub(crate) status: u16,
    /// Header fields to send; `Content-Length` or `Transfer-Encoding` are added by the writer.
    pub(crate) headers: Vec<(String, String)>,
    /// The body.
    pub(crate) body: Body,
    /// What the handler tells the request log; never sent.
    pub(crate) notes: Notes,
}

/// What a handler knows about the request it answered, for the server's request log
/// ([`log`]): never written on the wire.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Notes {
    /// The run the request made or read.
    pub(crate) invocation_id: Option<String>,
    /// Whom it acted for.
    pub(crate) principal: Option<String>,
}

thread_local! {
    /// Notes taken on the thread handling a request, by code that answers through a layer which
    /// builds the response itself (the A2A endpoint builds it from a task).
    static NOTED: RefCell<Notes> = RefCell::new(Notes::default());
}

/// Note, for the request this thread is handling, the run it makes and whom that acts for
/// (when known). The server adds them to the response's [`Notes`] where the handler set none.
pub(crate) fn note(invocation_id: &str, principal: Option<&str>) {
    NOTED.with(|n| {
        *n.borrow_mut() = Notes {
            invocation_id: Some(invocation_id.to_string()),
            principal: principal.map(str::to_string),
        }
    });
}

/// Take what was noted on this thread, leaving nothing.
pub(crate) fn take_noted() -> Notes {
    NOTED.with(|n| std::mem::take(&mut *n.borrow_mut()))
}

thread_local! {
    /// What the handler of the request this thread answers left to be freed once the response
    /// is written ([`free_after_reply`]); `None` on a thread that is not a server connection's.
    static LEFT: RefCell<Option<Vec<Box<dyn Any>>>> = const { RefCell::new(None) };
}

/// The most values one request leaves to be freed after its response; beyond it (a long
/// stream, say) each is freed at once.
pub(crate) const MOST_LEFT: usize = 64;

/// Free `value` once the response to the request this thread answers has been written, so
/// that freeing a request's trees (its document, the agent's result, a task the store let go)
/// is not part of the caller's wait. On any other thread (a background task, a batch call, the
/// in-memory transport) it is freed at once.
pub(crate) fn free_after_reply<T: 'static>(value: T) {
    if !std::mem::needs_drop::<T>() {
        return;
    }
    let mut value = Some(value);
    // Otherwise it is freed at once, outside the borrow: on a thread with no list (or one
    // ending), with the list full, or from a drop that leaves something of its own.
    let _ = LEFT.try_with(|left| {
        if let Ok(mut left) = left.try_borrow_mut()
            && let Some(list) = left.as_mut()
            && list.len() < MOST_LEFT
            && let Some(value) = value.take()
        {
            list.push(Box::new(value));
        }
    });
    drop(value);
}

/// Make this thread one that answers requests, whose handlers' leftovers wait for
/// [`free_left`]; the server's connection threads are.
pub(crate) fn answers_requests() {
    LEFT.with(|left| left.borrow_mut().get_or_insert_with(Vec::new).clear());
}

/// Free what the request just answered on this thread left (see [`free_after_reply`]).
pub(crate) fn free_left() {
    // Taken out first: a value's drop may leave something of its own.
    drop(LEFT.with(|left| left.borrow_mut().as_mut().map(std::mem::take)));
}

/// A response body: bytes, or a stream of chunks that ends when the sender is dropped.
pub(crate) enum Body {
    /// All of it at once, framed by `Content-Length`.
    Bytes(Vec<u8>),
    /// Chunks as they come, sent chunked and flushed one by one (Server-Sent Events).
    Stream(Receiver<Vec<u8>>),
}

impl Response {
    /// A response with `body` and no header fields yet.
    fn with_body(status: u16, body: Body) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body,
            notes: Notes::default(),
        }
    }

    /// A response with a byte body and a content type.
    pub fn bytes(status: u16, content_type: &str, body: Vec<u8>) -> Response {
        Response::with_body(status, Body::Bytes(body)).with_header("Content-Type", content_type)
    }

    /// `application/json`.
    pub(crate) fn json(status: u16, body: &serde_json::Value) -> Response {
        Response::bytes(status, "application/json", body.to_string().into_bytes())
    }

    /// `{"error": message}` as JSON, the shape of every plain-route error.
    pub(crate) fn error(status: u16, message: &str) -> Response {
        Response::json(status, &serde_json::json!({ "error": message }))
    }

    /// No body (e.g. 204 for a JSON-RPC notification).
    pub(crate) fn empty(status: u16) -> Response {
        Response::with_body(status, Body::Bytes(Vec::new()))
    }

    /// A streamed body (Server-Sent Events), sent chunk by chunk as they arrive.
    pub(crate) fn stream(status: u16, content_type: &str, chunks: Receiver<Vec<u8>>) -> Response {
        Response::with_body(status, Body::Stream(chunks)).with_header("Content-Type", content_type)
    }

    /// Add a header.
    pub(crate) fn with_header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Note the run this request made or read, for the request log.
    pub(crate) fn noting_invocation(mut self, invocation_id: &str) -> Response {
        self.notes.invocation_id = Some(invocation_id.to_string());
        self
    }

    /// Note whom this request acted for, for the request log.
    pub(crate) fn noting_principal(mut self, principal: &str) -> Response {
        self.notes.principal = Some(principal.to_string());
        self
    }
}

/// Everything that answers requests: a plain function, shared by every transport.
pub type Handler = Arc<dyn Fn(Request) -> Response + Send + Sync>;

/// Explicit limits on what a peer may send and how long it may take. Each breach gets its
/// own clear answer, and closes the connection.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest request body (HTTP 413 beyond it, answered before the body is read when
    /// `Content-Length` declares it). Default 4 MiB.
    pub(crate) max_body_bytes: usize,
    /// The head buffer: request line plus header fields must fit in it (HTTP 431 beyond it,
    /// after reading at most this many bytes). Default 16 KiB.
    pub(crate) max_header_bytes: usize,
    /// Most header fields in one request (HTTP 431 beyond it; never more than
    /// [`head::MAX_FIELDS`]). Default 64.
    pub(crate) max_headers: usize,
    /// The whole head must arrive within this, counted from the connection's accept (first
    /// request) or the request's first byte (later ones), however slowly the bytes drip
    /// (HTTP 408). Default 10 s.
    pub(crate) head_timeout: Duration,
    /// The whole body must arrive within this, counted from the end of the head (HTTP 408).
    /// Default 30 s.
    pub(crate) body_timeout: Duration,
    /// A kept-alive connection with no request for this long is closed. Default 30 s (above
    /// the 15 s that ureq, the client ddwire calls agents with, keeps idle connections).
    pub(crate) idle_timeout: Duration,
    /// A response write that makes no progress for this long ends the connection. Default 30 s.
    pub(crate) write_timeout: Duration,
    /// Most connections served at once; one more is answered 503 and closed. Default 1,024.
    pub(crate) max_connections: usize,
    /// Most connections one client (one peer IP address; an IPv4-mapped IPv6 address counts as
    /// its IPv4 address) holds at once, counted from the accept; one more is answered 503 and
    /// closed, so one client cannot take the whole of [`Limits::max_connections`]. Clients
    /// behind one proxy or NAT share its address: raise this for them. Default 64.
    pub(crate) max_connections_per_client: usize,
    /// Most bytes of request bodies the server holds in memory at once, across every
    /// connection: a body's buffer is counted as it grows (a declared `Content-Length` as its
    /// bytes arrive, so a client that declares much and sends little holds only what it sent)
    /// and given back when the handler returns. A body that would go past it waits up to a
    /// second for room, then is answered 503 with `Retry-After` ([`BodyError::Busy`]). One
    /// body larger than the whole budget is read only while no other is held. It bounds
    /// request bodies, not what a handler builds from them (see [`crate::json::max_elements`]).
    /// Default 64 MiB.
    pub(crate) max_body_memory: usize,
}

impl Limits {
    /// The defaults documented on each field.
    pub const DEFAULT: Limits = Limits {
        max_body_bytes: 4 * 1024 * 1024,
        max_header_bytes: 16 * 1024,
        max_headers: 64,
        head_timeout: Duration::from_secs(10),
        body_timeout: Duration::from_secs(30),
        idle_timeout: Duration::from_secs(30),
        write_timeout: Duration::from_secs(30),
        max_connections: 1024,
        max_connections_per_client: 64,
        max_body_memory: 64 * 1024 * 1024,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}
