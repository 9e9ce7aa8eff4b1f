//! Calling HTTP: one client over a shared ureq agent (connection reuse), or over the
//! in-memory transport for tests. Both return the same `ClientResponse` and the same typed
//! errors, so code above cannot tell them apart.
//!
//! # The wire log
//!
//! A client made with `HttpClient::tcp_logged` writes each request it sends and each
//! response it reads to a `WireLog`, byte for byte as they crossed the socket: the bytes are
//! taken from ureq's transport (a connector wrapping ureq's own, over TCP or TLS), below every
//! choice ureq makes, and handed to the connection's `wirelog::Tap`, the wire log's one seam. So the
//! log shows what ureq adds to the fields ddwire sets: `Host`, `User-Agent: ddwire/<version>`
//! (ddwire's setting), `Accept: */*` when no `Accept` is given, and `Content-Length` for a
//! body. Where each message ends is read from its own bytes, as the server's parser reads a
//! request: its head, then its body by the framing the head gives (RFC 9112 §6), so a
//! blocking call and a streamed one (an event stream the relay forwards) are logged alike, each
//! message as soon as its last byte has passed. A message the connection ended first (a body
//! over `MAX_RESPONSE_BYTES`, a stream its reader dropped before its end, a timeout) is
//! logged incomplete when ureq lets the connection go. A logged client over the in-memory
//! transport logs the bytes it carries the same way.

use super::Limits;
use super::body::BodyReader;
pub(crate) use super::call::{ClientRequest, ClientResponse};
pub(crate) use super::call::{
    INTERRUPT_POLL, Interrupt, MAX_RESPONSE_BYTES, interrupt_in_force, interruptible,
};
use super::egress::{Egress, EgressError};
use super::head::{self, Framing};
use super::memory::MemoryNet;
use crate::wire::WireError;
use crate::wire::tls::{ClientTls, ClientTrust, KeyPair, TlsError, TlsFailure};
use crate::wire::wirelog::{self, Direction, Side, Tap, WireLog};

type Result<T, E = WireError> = std::result::Result<T, E>;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, NextTimeout, Transport};

/// Takes a literal IP address in a URL as it is, and hands any other host to ureq's own
/// resolver. ureq resolves the host on every request, before it looks for a pooled
/// connection, and with a timeout set it resolves on a new thread: without this, every call
/// to an agent at `http://127.0.0.1:…` would start and end a thread to learn `127.0.0.1`.
/// Measured through the harness at one connection: 0.46 ms p50 with it, 0.53 ms without.
///
/// `ureq::unversioned` is exempt from ureq's semver promises, so `Cargo.toml` pins ureq to
/// the exact version this was written against.
#[derive(Debug)]
struct LiteralIpResolver;

impl Resolver for LiteralIpResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> std::result::Result<ResolvedSocketAddrs, ureq::Error> {
        let literal = uri.authority().and_then(|authority| {
            let host = authority.host();
            let host = host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host);
            let ip: IpAddr = host.parse().ok()?;
            let port = authority.port_u16().or(match uri.scheme_str()? {
                "http" => Some(80),
                "https" => Some(443),
                _ => None,
            })?;
            Some(SocketAddr::new(ip, port))
        });
        let Some(addr) = literal else {
            return DefaultResolver::default().resolve(uri, config, timeout);
        };
        let mut addrs = self.empty();
        addrs.push(addr);
        Ok(addrs)
    }
}

/// [`LiteralIpResolver`], then an [`Egress`] policy over every address it gave: the refused
/// ones are dropped, and when none is left the call fails with [`WireError::Egress`] naming
/// why (the [`EgressError`], carried through ureq's I/O error to [`transport_error`]), before
/// any connection is made. The connector connects only to the addresses returned here, so what
/// was checked is what is reached.
#[derive(Debug)]
struct GuardedResolver(Egress);

impl Resolver for GuardedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> std::result::Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri.host().unwrap_or_default();
        let resolved = LiteralIpResolver.resolve(uri, config, timeout)?;
        let mut kept = self.empty();
        let mut refused = None;
        for addr in resolved.iter().copied() {
            match self.0.check(host, addr.ip()) {
                Ok(()) => kept.push(addr),
                Err(why) => {
                    refused.get_or_insert(why);
                }
            }
        }
        match refused {
            Some(why) if kept.is_empty() => Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                why,
            ))),
            _ => Ok(kept),
        }
    }
}

/// An HTTP client: cheap to clone, safe to share between threads.
#[derive(Clone)]
pub struct HttpClient {
    transport: Via,
    /// Where every message goes, byte for byte, when set.
    wire_log: Option<WireLog>,
    /// The largest response body [`HttpClient::send`] reads.
    max_body: u64,
}

#[derive(Clone)]
enum Via {
    Tcp(ureq::Agent, ClientTls),
    Memory(MemoryNet),
}

impl Default for HttpClient {
    fn default() -> Self {
        HttpClient::tcp()
    }
}

impl HttpClient {
    /// A client over TCP that keeps connections alive between calls, and trusts the system's
    /// CAs for `https://` (see `ClientTrust`).
    pub fn tcp() -> HttpClient {
        let tls = ClientTls::new(&ClientTrust::default())
            .expect("the default trust reads no file and always builds");
        HttpClient::over(tls, None)
    }

    /// [`HttpClient::tcp`], writing every request and response to `log` as they crossed the
    /// socket (see the module's docs).
    #[cfg(test)]
    pub(crate) fn tcp_logged(log: WireLog) -> HttpClient {
        HttpClient::tcp().logged(log)
    }

    /// A client over TCP that trusts, and presents, what `trust` names. Every file it names
    /// is read now; without the `tls` feature any trust but the default is refused.
    pub(crate) fn tcp_trusting(trust: &ClientTrust) -> Result<HttpClient, TlsError> {
        Ok(HttpClient::over(ClientTls::new(trust)?, None))
    }

    /// The same client, writing every request and response to `log`.
    pub(crate) fn logged(&self, log: WireLog) -> HttpClient {
        match &self.transport {
            Via::Tcp(_, tls) => HttpClient::over(tls.clone(), Some(log)),
            Via::Memory(_) => HttpClient {
                wire_log: Some(log),
                ..self.clone()
            },
        }
    }

    /// The same client (trust, wire log), presenting `pair` as its client certificate: for
    /// an agent that asks for its own.
    pub(crate) fn with_client_cert(&self, pair: KeyPair) -> Result<HttpClient, TlsError> {
        match &self.transport {
            Via::Tcp(_, tls) => {
                let trust = ClientTrust {
                    client_cert: Some(pair),
                    ..(*tls.trust).clone()
                };
                Ok(HttpClient::over(
                    ClientTls::new(&trust)?,
                    self.wire_log.clone(),
                ))
            }
            Via::Memory(_) => Ok(self.clone()),
        }
    }

    fn over(tls: ClientTls, log: Option<WireLog>) -> HttpClient {
        let agent = build_agent(&tls, log.as_ref(), false, LiteralIpResolver);
        HttpClient {
            transport: Via::Tcp(agent, tls),
            wire_log: log,
            max_body: MAX_RESPONSE_BYTES,
        }
    }

    /// A client that reaches handlers registered on `net`, with no socket.
    pub fn memory(net: MemoryNet) -> HttpClient {
        HttpClient {
            transport: Via::Memory(net),
            wire_log: None,
            max_body: MAX_RESPONSE_BYTES,
        }
    }

    /// The same client (trust, client certificate, wire log) for calls to destinations an
    /// untrusted party chose (a relay's peers): it connects only to addresses `egress`
    /// allows, checked after DNS resolution (see [`super::egress`]); it follows no redirect
    /// (a 3xx is the answer) and uses no proxy from the environment (a proxy would be what
    /// is resolved and checked, not the destination); and it reads a response body of at
    /// most `max_body` bytes. The in-memory transport resolves nothing: only the body limit
    /// applies to it.
    pub(crate) fn guarded(&self, egress: Egress, max_body: u64) -> HttpClient {
        let transport = match &self.transport {
            Via::Tcp(_, tls) => {
                let log = self.wire_log.as_ref();
                let agent = build_agent(tls, log, true, GuardedResolver(egress));
                Via::Tcp(agent, tls.clone())
            }
            Via::Memory(net) => Via::Memory(net.clone()),
        };
        HttpClient {
            transport,
            wire_log: self.wire_log.clone(),
            max_body,
        }
    }

    /// Send one request and read the whole response.
    pub(crate) fn send(&self, request: ClientRequest) -> Result<ClientResponse> {
        let agent = match &self.transport {
            Via::Memory(net) => return net.exchange(request, self.wire_log.as_ref()),
            Via::Tcp(agent, _) => agent,
        };
        let (status, headers, body) = call_ureq(agent, &request, None)?;
        // `read_to_vec`, into a buffer of the declared length (up to 64 KiB: a length only
        // declared reserves nothing more), so that it does not grow.
        let declared = body
            .content_length()
            .unwrap_or(0)
            .min(self.max_body)
            .min(64 * 1024);
        let mut read = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
        let mut reader = body.into_with_config().limit(self.max_body).reader();
        std::io::Read::read_to_end(&mut reader, &mut read)
            .map_err(|e| transport_error(&request.url, request.timeout, ureq::Error::from(e)))?;
        Ok(ClientResponse {
            status,
            headers,
            body: read,
        })
    }

    /// Send one request and return as soon as the response head has arrived, with a body to
    /// read as it comes (an event stream). The connection and the head must come within the
    /// request's timeout; after that, each read of the body may wait `idle` at most, and the
    /// body as a whole has no deadline. The body is not limited in size: the reader bounds
    /// what it keeps.
    pub(crate) fn send_streaming(
        &self,
        request: ClientRequest,
        idle: Duration,
    ) -> Result<StreamingResponse> {
        let url = request.url.clone();
        let (status, headers, reader): (_, _, Box<dyn std::io::Read + Send>) = match &self.transport
        {
            // The in-memory transport holds whole responses: its body is read from memory.
            Via::Memory(net) => {
                let r = net.exchange(request, self.wire_log.as_ref())?;
                (r.status, r.headers, Box::new(std::io::Cursor::new(r.body)))
            }
            Via::Tcp(agent, _) => {
                let (status, headers, body) = call_ureq(agent, &request, Some(idle))?;
                (status, headers, Box::new(body.into_reader()))
            }
        };
        Ok(StreamingResponse {
            status,
            headers,
            body: BodyStream { url, idle, reader },
        })
    }
}

/// A ureq agent over TCP (and TLS), its connections wrapped by [`Wrap`] (tapped for `log`
/// when there is one). A `guarded` one follows no redirect and takes no proxy from the
/// environment.
fn build_agent(
    tls: &ClientTls,
    log: Option<&WireLog>,
    guarded: bool,
    resolver: impl Resolver,
) -> ureq::Agent {
    use ureq::unversioned::transport::{ConnectProxyConnector, TcpConnector};
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_idle_connections_per_host(64)
        .max_idle_connections(256)
        .user_agent(concat!("ddwire/", env!("CARGO_PKG_VERSION")));
    let config = if guarded {
        config.max_redirects(0).proxy(None)
    } else {
        config
    };
    let connector = ().chain(ConnectProxyConnector::default()).chain(TcpConnector::default());
    #[cfg(feature = "tls")]
    let connector = connector.chain(crate::wire::tls::client::TlsConnector(
        std::sync::Arc::clone(&tls.config.rustls),
    ));
    #[cfg(not(feature = "tls"))]
    let _ = tls;
    let connector = connector.chain(Wrap(log.cloned()));
    ureq::Agent::with_parts(config.build(), connector, resolver)
}

/// What an interrupted wait fails with, inside an I/O error of kind `Other`: not
/// `Interrupted`, which `std::io::Read::read_to_end` retries (a body read would then spin until
/// the call's timeout), and not a disconnection, which ends a close-delimited body as if whole.
/// [`transport_error`] turns it into [`WireError::Interrupted`].
#[derive(Debug)]
struct InterruptedCall;

impl std::fmt::Display for InterruptedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the call was interrupted: its caller stopped waiting for it")
    }
}

impl std::error::Error for InterruptedCall {}

/// A connector wrapping ureq's transport on every connection: a call made under
/// [`interruptible`] gives up its wait for a response once interrupted, and what a logged
/// client sends and reads is handed to the connection's tap (see the module's docs).
#[derive(Debug)]
struct Wrap(Option<WireLog>);

impl<In: Transport> Connector<In> for Wrap {
    type Out = Wrapped;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> std::result::Result<Option<Wrapped>, ureq::Error> {
        Ok(chained.map(|inner| Wrapped {
            inner: inner.boxed(),
            held: Vec::new(),
            logged: self.0.as_ref().map(|log| {
                let peer = details
                    .uri
                    .authority()
                    .map_or_else(|| "-".to_string(), |a| a.as_str().to_string());
                Logged {
                    tap: Tap::new(log, Side::Client, wirelog::connection_id(), peer, None),
                    request: Delimiter::default(),
                    response: Delimiter::default(),
                    method: "GET",
                    scratch: Vec::new(),
                }
            }),
        }))
    }
}

/// A client's connection: ureq's transport, and what is logged of it when the client is.
struct Wrapped {
    inner: Box<dyn Transport>,
    logged: Option<Logged>,
    /// Bytes ureq handed over that end a request's head, held back so that the head and the
    /// start of its body leave in one write: one segment, and one wake-up of the peer, instead
    /// of two. ureq sends a head and then its body in separate calls; what is held goes out
    /// with the next bytes, or alone before any wait for input, so nothing waits on it.
    held: Vec<u8>,
}

/// A logged connection: the tap its bytes go to, and where the request going out and the
/// response coming in end.
struct Logged {
    tap: Tap,
    request: Delimiter,
    response: Delimiter,
    /// `HEAD` after a `HEAD` request, whose response has no body whatever its head says
    /// (RFC 9112 §6.3), else `GET`, standing for every method whose response is framed by
    /// its head (`CONNECT`, the other exception, is spoken below this transport, by ureq's
    /// proxy connector).
    method: &'static str,
    /// Where a body is decoded to find its end (and dropped).
    scratch: Vec<u8>,
}

impl std::fmt::Debug for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wrapped")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// The most bytes of a message's head looked at to find where it ends: the server's default
/// head limit. A head not parsed within it leaves the message to end with the connection.
const MAX_HEAD: usize = Limits::DEFAULT.max_header_bytes;
/// What a request head sent is read within: [`MAX_HEAD`], and as many fields as the parser
/// takes.
const REQUEST_HEAD: Limits = Limits {
    max_header_bytes: MAX_HEAD,
    max_headers: head::MAX_FIELDS,
    ..Limits::DEFAULT
};

/// Where one HTTP message ends, read from its bytes as they pass (RFC 9112 §6): its head, then
/// its body by the framing the head gives.
enum Delimiter {
    /// The head so far.
    Head(Vec<u8>),
    /// The body.
    Body(BodyReader),
    /// Bytes that do not read as HTTP: the message ends with the connection.
    Unframed,
}

impl Default for Delimiter {
    fn default() -> Self {
        Delimiter::Head(Vec::new())
    }
}

/// Which message a [`Delimiter`] reads: a request, or the response to a request made with a
/// method (`HEAD`'s response has no body, whatever its head says: RFC 9112 §6.3).
#[derive(Clone, Copy)]
enum Message {
    Request,
    Response { method: &'static str },
}

impl Message {
    /// The length of the complete head at the start of `window` and the framing of the body
    /// after it; `Ok(None)` if the head is not complete yet, `Err` if it is not a head.
    fn head(self, window: &[u8]) -> Result<Option<(usize, Framing)>, ()> {
        Ok(match self {
            Message::Request => head::parse_request(window, &REQUEST_HEAD)
                .map_err(drop)?
                .map(|h| (h.len, h.framing)),
            Message::Response { method } => head::parse_response(window, method, MAX_HEAD)
                .map_err(drop)?
                .map(|h| (h.len, h.framing)),
        })
    }
}

impl Delimiter {
    /// How many of `bytes` belong to the `message` being read, and whether it ends with them.
    fn take(&mut self, bytes: &[u8], scratch: &mut Vec<u8>, message: Message) -> (usize, bool) {
        match self {
            Delimiter::Head(head) => {
                let before = head.len();
                head.extend_from_slice(&bytes[..bytes.len().min(MAX_HEAD - before)]);
                match message.head(head) {
                    Ok(Some((len, framing))) => {
                        let in_head = len - before;
                        match BodyReader::new(framing, usize::MAX) {
                            Ok(body) if body.is_done() => return (in_head, true),
                            Ok(body) => *self = Delimiter::Body(body),
                            Err(_) => *self = Delimiter::Unframed,
                        }
                        let (in_body, done) = self.take(&bytes[in_head..], scratch, message);
                        (in_head + in_body, done)
                    }
                    Ok(None) if head.len() < MAX_HEAD => (bytes.len(), false),
                    _ => {
                        *self = Delimiter::Unframed;
                        (bytes.len(), false)
                    }
                }
            }
            Delimiter::Body(body) => {
                let fed = body.feed(bytes, scratch);
                scratch.clear();
                match fed {
                    Ok(fed) => (fed.consumed, fed.done),
                    Err(_) => {
                        *self = Delimiter::Unframed;
                        (bytes.len(), false)
                    }
                }
            }
            Delimiter::Unframed => (bytes.len(), false),
        }
    }

    /// The connection ended: whether the message being read ended whole (a body delimited by
    /// the close; or no message at all).
    fn closed(&mut self) -> bool {
        match std::mem::take(self) {
            Delimiter::Head(head) => head.is_empty(),
            Delimiter::Body(mut body) => body.end_of_input().is_ok(),
            Delimiter::Unframed => false,
        }
    }
}

impl Logged {
    /// Hand `bytes`, going `direction`, to the tap, ending each message where its framing
    /// says.
    fn pass(&mut self, direction: Direction, mut bytes: &[u8]) {
        if direction == Direction::Out
            && matches!(&self.request, Delimiter::Head(h) if h.is_empty())
        {
            self.method = if bytes.starts_with(b"HEAD ") {
                "HEAD"
            } else {
                "GET"
            };
        }
        while !bytes.is_empty() {
            let (delimiter, message) = match direction {
                Direction::Out => (&mut self.request, Message::Request),
                Direction::In => (
                    &mut self.response,
                    Message::Response {
                        method: self.method,
                    },
                ),
            };
            let (n, ended) = delimiter.take(bytes, &mut self.scratch, message);
            let n = if n == 0 && !ended { bytes.len() } else { n };
            match direction {
                Direction::Out => self.tap.sent(&bytes[..n]),
                Direction::In => self.tap.received(&bytes[..n]),
            }
            if ended {
                *delimiter = Delimiter::default();
                self.tap.end(direction, true);
            }
            bytes = &bytes[n..];
        }
    }
}

/// The most a transmission may hold to be held back: a request head, not a body.
const MOST_HELD: usize = 8 * 1024;

impl Wrapped {
    /// Send `amount` bytes of the output buffer, handed to the tap once sent.
    fn send(
        &mut self,
        amount: usize,
        timeout: NextTimeout,
    ) -> std::result::Result<(), ureq::Error> {
        let Some(logged) = &mut self.logged else {
            return self.inner.transmit_output(amount, timeout);
        };
        let output = self.inner.buffers().output();
        let sent = output.get(..amount).unwrap_or(output).to_vec();
        let result = self.inner.transmit_output(amount, timeout);
        if result.is_ok() {
            logged.pass(Direction::Out, &sent);
        }
        result
    }

    /// Send what is held (it came from the output buffer, so it fits there).
    fn flush_held(&mut self, timeout: NextTimeout) -> std::result::Result<(), ureq::Error> {
        let held = self.held.len();
        self.inner.buffers().output()[..held].copy_from_slice(&self.held);
        self.held.clear();
        self.send(held, timeout)
    }

    /// The inner transport's wait, the bytes it brings handed to the tap.
    fn wait(&mut self, timeout: NextTimeout) -> std::result::Result<bool, ureq::Error> {
        let Some(logged) = &mut self.logged else {
            return self.inner.await_input(timeout);
        };
        // What is unconsumed stays in the buffer: the new bytes are what lies beyond it.
        let before = self.inner.buffers().input().len();
        let result = self.inner.await_input(timeout);
        let input = self.inner.buffers().input();
        if input.len() > before {
            logged.pass(Direction::In, &input[before..]);
        } else if matches!(result, Ok(false)) {
            // The peer closed the connection: a body delimited by the close ends whole.
            let whole = logged.response.closed();
            logged.tap.end(Direction::In, whole);
        }
        result
    }
}

impl Transport for Wrapped {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(
        &mut self,
        amount: usize,
        timeout: NextTimeout,
    ) -> std::result::Result<(), ureq::Error> {
        let output = self.inner.buffers().output();
        let amount = amount.min(output.len());
        if self.held.is_empty() {
            if amount <= MOST_HELD && output[..amount].ends_with(b"\r\n\r\n") {
                self.held.extend_from_slice(&output[..amount]);
                return Ok(());
            }
            return self.send(amount, timeout);
        }
        let held = self.held.len();
        if held + amount > output.len() {
            // Too much to join: the held bytes first, then these, each from the buffer.
            let these = output[..amount].to_vec();
            self.flush_held(timeout)?;
            self.inner.buffers().output()[..amount].copy_from_slice(&these);
            return self.send(amount, timeout);
        }
        output.copy_within(..amount, held);
        output[..held].copy_from_slice(&self.held);
        self.held.clear();
        self.send(held + amount, timeout)
    }

    /// Without an interrupt in force, the inner transport's wait. With one, waits of at most
    /// [`INTERRUPT_POLL`] until input arrives, the wait's own time is up (the sooner of the
    /// call's remaining time and its per-read limit; the last wait is the inner transport's,
    /// with its timeout error and reason), or the interrupt is set.
    fn await_input(&mut self, timeout: NextTimeout) -> std::result::Result<bool, ureq::Error> {
        if !self.held.is_empty() {
            self.flush_held(timeout)?;
        }
        let Some(interrupt) = interrupt_in_force() else {
            return self.wait(timeout);
        };
        let timeout = timeout.for_read();
        let started = std::time::Instant::now();
        loop {
            if interrupt.is_set() {
                return Err(ureq::Error::Io(std::io::Error::other(InterruptedCall)));
            }
            let left = match timeout.after {
                ureq::unversioned::transport::time::Duration::Exact(d) => {
                    Some(d.saturating_sub(started.elapsed()))
                }
                _ => None,
            };
            let last = left.filter(|l| *l <= INTERRUPT_POLL);
            let slice = NextTimeout {
                after: last.unwrap_or(INTERRUPT_POLL).into(),
                per_read: None,
                ..timeout
            };
            match self.wait(slice) {
                Err(e) if last.is_none() && is_timeout(&e) => continue,
                other => return other,
            }
        }
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

/// Whether `e` says a wait ran out of time: ureq's own timeout, a socket's, or ureq's timeout
/// carried through an I/O error (as the TLS transport reads through ureq's adapter).
fn is_timeout(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => {
            super::server::is_timeout(io)
                || io
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<ureq::Error>())
                    .is_some_and(is_timeout)
        }
        _ => false,
    }
}

/// Without the `tls` feature, an `https://` URL is refused before any connection is made.
fn no_tls_refusal(url: &str) -> Result<()> {
    if cfg!(feature = "tls") || !crate::wire::tls::is_https(url) {
        return Ok(());
    }
    Err(WireError::Tls {
        url: url.to_string(),
        cause: TlsFailure::NotBuilt,
    })
}

/// Send `request` over `agent` and read the response head: the status, the header fields
/// (names lower-cased, values read as UTF-8, lossily) and the body still to read. The whole
/// call must finish within the request's timeout; for a stream (`idle` given), everything up
/// to the head must, and each read of the body may wait `idle` at most.
fn call_ureq(
    agent: &ureq::Agent,
    request: &ClientRequest,
    idle: Option<Duration>,
) -> Result<(u16, Fields, ureq::Body)> {
    no_tls_refusal(&request.url)?;
    let sent = if request.method == "GET" {
        prepared(agent.get(&request.url), request, idle).call()
    } else {
        prepared(agent.post(&request.url), request, idle).send(&request.body[..])
    };
    let (head, body) = sent
        .map_err(|e| transport_error(&request.url, request.timeout, e))?
        .into_parts();
    let headers = head.headers.iter().map(|(k, v)| {
        let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
        (k.as_str().to_ascii_lowercase(), value)
    });
    Ok((head.status.as_u16(), headers.collect(), body))
}

/// Header fields, names lower-cased.
type Fields = Vec<(String, String)>;

/// `builder` with `request`'s header fields and the timeouts [`call_ureq`] describes.
fn prepared<B>(
    builder: ureq::RequestBuilder<B>,
    request: &ClientRequest,
    idle: Option<Duration>,
) -> ureq::RequestBuilder<B> {
    let config = request
        .headers
        .iter()
        .fold(builder, |b, (k, v)| b.header(k.as_str(), v.as_str()))
        .config();
    let timeout = Some(request.timeout);
    match idle {
        None => config.timeout_global(timeout),
        Some(idle) => config
            .timeout_connect(timeout)
            .timeout_send_request(timeout)
            .timeout_send_body(timeout)
            .timeout_recv_response(timeout)
            .timeout_per_read(Some(idle)),
    }
    .build()
}

/// Map ureq's error to ddwire's typed ones, with the words the reference's details use:
/// nothing listening is [`WireError::Connect`] ("connection refused"); a connection the peer
/// closed or reset before its answer was complete is [`WireError::Disconnected`]; bytes that
/// are not an HTTP/1.1 response are [`WireError::Protocol`].
fn transport_error(url: &str, after: Duration, e: ureq::Error) -> WireError {
    use std::io::ErrorKind;
    let url = url.to_string();
    if let ureq::Error::Io(io) = &e
        && let Some(inner) = io.get_ref()
    {
        #[cfg(feature = "tls")]
        if let Some(failed) = inner.downcast_ref::<crate::wire::tls::client::Failed>() {
            let cause = failed.0.clone();
            return WireError::Tls { url, cause };
        }
        if inner.is::<InterruptedCall>() {
            return WireError::Interrupted { url };
        }
        if let Some(refused) = inner.downcast_ref::<EgressError>() {
            let reason = refused.clone();
            return WireError::Egress { url, reason };
        }
    }
    let refused = |reason: String| WireError::Connect {
        url: url.clone(),
        reason,
    };
    match e {
        ureq::Error::TlsRequired => WireError::Tls {
            url,
            cause: TlsFailure::NotBuilt,
        },
        ureq::Error::Timeout(_) => WireError::Timeout { url, after },
        ureq::Error::Io(io) if super::server::is_timeout(&io) => WireError::Timeout { url, after },
        ureq::Error::Io(io) if io.kind() == ErrorKind::ConnectionRefused => {
            refused("connection refused".into())
        }
        ureq::Error::Io(io)
            if matches!(
                io.kind(),
                ErrorKind::UnexpectedEof
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
            ) =>
        {
            let reason = match io.kind() {
                ErrorKind::UnexpectedEof => "closed mid-answer".to_string(),
                ErrorKind::ConnectionReset => "connection reset".to_string(),
                _ => io.to_string(),
            };
            WireError::Disconnected { url, reason }
        }
        ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => {
            refused(format!("connection refused ({e})"))
        }
        ureq::Error::BodyExceedsLimit(n) => WireError::protocol(
            Some(&url),
            format!("response body exceeds the limit of {n} bytes"),
        ),
        ureq::Error::Protocol(p) => {
            WireError::protocol(Some(&url), format!("the answer is not HTTP/1.1: {p}"))
        }
        other => refused(other.to_string()),
    }
}

/// A response whose body is read as it arrives (an event stream).
pub(crate) struct StreamingResponse {
    /// The status code.
    pub(crate) status: u16,
    /// Names lower-cased.
    pub(crate) headers: Vec<(String, String)>,
    /// The body, read as it arrives.
    pub(crate) body: BodyStream,
}

impl StreamingResponse {
    /// The first value of a header.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        super::header(&self.headers, name)
    }
}

/// A response body read as it arrives. Each read waits at most the idle timeout it was opened
/// with; every failure is a typed [`WireError`] (the peer going quiet is
/// [`WireError::Timeout`], a stream cut short is [`WireError::Disconnected`]).
pub(crate) struct BodyStream {
    url: String,
    idle: Duration,
    reader: Box<dyn std::io::Read + Send>,
}

impl BodyStream {
    /// Read what has arrived into `buf`: `Ok(0)` at the body's end.
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        loop {
            match self.reader.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(transport_error(&self.url, self.idle, ureq::Error::from(e))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::http::{Handler, Limits, Response, server};
    use std::sync::Arc;

    #[test]
    fn literal_addresses_and_host_names_both_reach_the_server() {
        let ok: Handler = Arc::new(|_| Response::empty(204));
        let v4 = server::serve("127.0.0.1:0", ok.clone(), Limits::DEFAULT).unwrap();
        let port = v4.local_addr().port();
        let client = HttpClient::tcp();
        let get = |url: String| {
            client
                .send(ClientRequest::get(url, Duration::from_secs(5)))
                .map(|r| r.status)
        };
        assert_eq!(get(format!("http://127.0.0.1:{port}/")).unwrap(), 204);
        assert_eq!(get(format!("http://localhost:{port}/")).unwrap(), 204);
        // IPv6 loopback, where the machine has it.
        if let Ok(v6) = server::serve("[::1]:0", ok, Limits::DEFAULT) {
            let url = format!("http://[::1]:{}/", v6.local_addr().port());
            assert_eq!(get(url).unwrap(), 204);
        }
    }

    #[test]
    fn a_requests_head_and_body_leave_in_one_write() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let body = vec![b'x'; 1000];
        let server = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            socket
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            // The first read, made as soon as anything arrives: one write is one segment here.
            let mut buf = vec![0u8; 64 * 1024];
            let n = socket.read(&mut buf).unwrap();
            buf.truncate(n);
            socket
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
            buf
        });
        let url = format!("http://127.0.0.1:{port}/a2a");
        let response = HttpClient::tcp()
            .send(ClientRequest::post_json(
                url,
                body.clone(),
                Duration::from_secs(10),
            ))
            .unwrap();
        assert_eq!((response.status, &response.body[..]), (200, &b"ok"[..]));
        let first_read = server.join().unwrap();
        let head_end = first_read
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("the head in the first read")
            + 4;
        assert!(first_read.starts_with(b"POST /a2a HTTP/1.1\r\n"));
        assert_eq!(
            &first_read[head_end..],
            &body[..],
            "the body came with its head"
        );
    }

    #[test]
    fn requests_of_every_size_and_method_arrive_whole_on_one_connection() {
        // Echo the method and the body: what arrived, exactly.
        let echo: Handler = Arc::new(|request| {
            let mut said = format!("{}\n", request.method).into_bytes();
            said.extend_from_slice(&request.body);
            Response::bytes(200, "text/plain", said)
        });
        let served = server::serve("127.0.0.1:0", echo, Limits::DEFAULT).unwrap();
        let url = format!("http://127.0.0.1:{}/", served.local_addr().port());
        let client = HttpClient::tcp();
        let timeout = Duration::from_secs(10);
        // Beyond ureq's 128 KiB output buffer too, where the held head cannot join the body.
        for size in [0usize, 1, 1000, 8 * 1024, 127 * 1024, 300 * 1024] {
            let body: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
            let response = client
                .send(ClientRequest::post_json(&url, body.clone(), timeout))
                .unwrap();
            let mut expected = b"POST\n".to_vec();
            expected.extend_from_slice(&body);
            assert!(
                response.body == expected,
                "a body of {size} bytes arrived altered"
            );
            let got = client.send(ClientRequest::get(&url, timeout)).unwrap();
            assert_eq!(got.body, b"GET\n");
        }
    }

    /// An interrupt whose flag `set` sets (and whose channel it disconnects), as a canceled
    /// task's does.
    fn interrupt() -> (Interrupt, impl FnOnce()) {
        let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (keep, wake) = crossbeam_channel::bounded::<()>(0);
        let set = {
            let flag = Arc::clone(&flag);
            move || {
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
                drop(keep);
            }
        };
        (Interrupt { flag, wake }, set)
    }

    /// A loopback listener that reads a request and never answers; sends what it read after the
    /// client left (its read's end) down the channel.
    fn silent_server() -> (u16, crossbeam_channel::Receiver<usize>) {
        use std::io::Read;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            socket
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            let mut total = 0;
            let mut buf = [0u8; 4096];
            while let Ok(n) = socket.read(&mut buf) {
                if n == 0 {
                    break;
                }
                total += n;
            }
            let _ = tx.send(total);
        });
        (port, rx)
    }

    #[test]
    fn an_interrupted_call_over_tcp_gives_up_its_wait_and_closes_the_connection() {
        let (port, closed) = silent_server();
        let (interrupt, set) = interrupt();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            set();
        });
        let started = std::time::Instant::now();
        let answer = interruptible(interrupt, || {
            HttpClient::tcp().send(ClientRequest::post_json(
                format!("http://127.0.0.1:{port}/"),
                b"{}".to_vec(),
                Duration::from_secs(30),
            ))
        });
        setter.join().unwrap();
        let error = answer
            .expect_err("an interrupted call has no answer")
            .to_string();
        assert!(error.contains("interrupted"), "{error}");
        // Long before the call's own 30 s.
        assert!(started.elapsed() < Duration::from_secs(10));
        // The server read the request, then saw the client leave.
        let read = closed.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(read > 0);
    }

    #[cfg(feature = "tls")]
    #[test]
    fn an_interrupted_call_over_tls_gives_up_its_wait_as_over_tcp() {
        use crate::wire::tls::{ServerIdentity, ServerTls};
        use std::os::unix::fs::PermissionsExt;
        // The test PKI, its key copied at mode 0600 (git keeps no modes; ddwire refuses a key
        // others can read).
        let pki = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tls");
        let dir =
            std::env::temp_dir().join(format!("ddwire-interrupt-tls-{}", crate::ids::new_uuid7()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = dir.join("server.key");
        std::fs::copy(pki.join("server.key"), &key).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let identity = ServerIdentity::load(&ServerTls {
            identity: KeyPair {
                cert: pki.join("server.pem"),
                key,
            },
            client_ca: None,
        })
        .unwrap();
        let slow: Handler = Arc::new(|_| {
            std::thread::sleep(Duration::from_secs(3));
            Response::empty(204)
        });
        let served = server::bind("127.0.0.1:0", Limits::DEFAULT)
            .unwrap()
            .with_tls(identity)
            .serve(slow)
            .unwrap();
        let client = HttpClient::tcp_trusting(&ClientTrust {
            ca_files: vec![pki.join("ca.pem")],
            ca_only: true,
            ..ClientTrust::default()
        })
        .unwrap();
        let url = format!("https://localhost:{}/", served.local_addr().port());
        let (interrupt, set) = interrupt();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            set();
        });
        let started = std::time::Instant::now();
        let answer = interruptible(interrupt, || {
            client.send(ClientRequest::get(url, Duration::from_secs(30)))
        });
        setter.join().unwrap();
        let error = answer
            .expect_err("an interrupted call has no answer")
            .to_string();
        assert!(error.contains("interrupted"), "{error}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_call_interrupted_while_it_reads_the_body_ends_at_once_not_at_its_timeout() {
        use std::io::{Read, Write};
        // Headers and 5 of 100 body bytes, then nothing: the wait is in the body's read, which
        // std retries on an `Interrupted` error (so the interrupt must not be one).
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf);
            let _ = socket.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello");
            std::thread::sleep(Duration::from_secs(10));
        });
        let (interrupt, set) = interrupt();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            set();
        });
        let started = std::time::Instant::now();
        let answer = interruptible(interrupt, || {
            HttpClient::tcp().send(ClientRequest::get(
                format!("http://127.0.0.1:{port}/"),
                Duration::from_secs(8),
            ))
        });
        setter.join().unwrap();
        assert!(
            matches!(answer, Err(WireError::Interrupted { .. })),
            "{:?}",
            answer.map(|r| r.status)
        );
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn an_interrupt_in_force_is_restored_when_an_inner_one_is_lifted() {
        let (outer, _keep_outer) = interrupt();
        let (inner, _keep_inner) = interrupt();
        let outer_flag = Arc::clone(&outer.flag);
        interruptible(outer, || {
            interruptible(inner, || {});
            let now = interrupt_in_force().expect("the outer interrupt is in force again");
            assert!(Arc::ptr_eq(&now.flag, &outer_flag));
        });
        assert!(interrupt_in_force().is_none());
    }

    #[test]
    fn a_call_under_an_interrupt_never_set_waits_for_its_answer_as_any_call_does() {
        let slow: Handler = Arc::new(|_| {
            std::thread::sleep(Duration::from_millis(150));
            Response::empty(204)
        });
        let served = server::serve("127.0.0.1:0", slow, Limits::DEFAULT).unwrap();
        let url = format!("http://127.0.0.1:{}/", served.local_addr().port());
        let (interrupt, _never) = interrupt();
        let status = interruptible(interrupt, || {
            HttpClient::tcp().send(ClientRequest::get(url, Duration::from_secs(10)))
        })
        .map(|r| r.status);
        assert_eq!(status.unwrap(), 204);
        // Lifted once the calls return: none is in force on this thread now.
        assert!(interrupt_in_force().is_none());
    }

    #[test]
    fn an_interrupted_call_in_memory_gives_up_as_over_tcp_and_a_forgotten_one_does_not() {
        let net = MemoryNet::new();
        let slow: Handler = Arc::new(|_| {
            std::thread::sleep(Duration::from_millis(400));
            Response::empty(204)
        });
        net.serve("slow.test", slow, Limits::DEFAULT);
        let client = HttpClient::memory(net);
        let call = || {
            client.send(ClientRequest::get(
                "http://slow.test/",
                Duration::from_secs(10),
            ))
        };

        let (interrupt, set) = interrupt();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            set();
        });
        let error = interruptible(interrupt, call).expect_err("interrupted");
        setter.join().unwrap();
        assert!(error.to_string().contains("interrupted"), "{error}");

        // Its channel closed without the flag (a task forgotten): the answer is still waited for.
        let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (keep, wake) = crossbeam_channel::bounded::<()>(0);
        drop(keep);
        let status = interruptible(Interrupt { flag, wake }, call).map(|r| r.status);
        assert_eq!(status.unwrap(), 204);
    }
}
