//! Serving a [`Handler`] over TCP: ddwire's own HTTP/1.1 server on `std::net`, bounded
//! everywhere.
//!
//! # Design
//!
//! One thread accepts; each connection gets its own thread, which reads a request, runs the
//! handler, writes the response, and loops while the connection is kept alive (pipelined
//! requests are answered in order). The handler runs on the connection's thread, with no
//! hand-off to a pool:
//!
//! - a slow client, a hung agent or a long conductor run holds only the thread of the
//!   connection it came on, so cheap routes (`/healthz`, cards, `tasks/get`) and every other
//!   caller are served by their own threads meanwhile: no shared worker can be taken;
//! - the thread count is bounded by the connection cap (`Limits::max_connections`, 1,024 by
//!   default): one connection more is answered 503 and closed;
//! - handing each request to a pool costs a wake-up and two context switches per request
//!   (about a third of the throughput under tiny_http, which did that).
//!
//! What a handler is done with but has not freed (the request's document, the agent's result,
//! a task the task store let go) it may leave to `free_after_reply`: the connection's thread
//! frees it once the response is written, so the caller does not wait on it (at most
//! `MOST_LEFT` values per request; beyond that, and on any other thread, they are freed at
//! once).
//!
//! # Bounds
//!
//! - The head is read into a fixed buffer of `Limits::max_header_bytes` owned by the
//!   connection; a head that fills it is answered 431 after reading at most that many bytes.
//! - The whole head must arrive within `Limits::head_timeout` (from the accept for the first
//!   request, from its first byte for later ones), not a timeout per read, so a client
//!   dripping one byte at a time (slowloris) is answered 408 and closed when it runs out.
//! - The whole body must arrive within `Limits::body_timeout` (408), and be at most
//!   `Limits::max_body_bytes` (413; refused before reading when its length is declared).
//! - The bodies held at once, across connections, are at most `Limits::max_body_memory`: a
//!   body's buffer is counted as it grows and given back when its handler returns; a body
//!   that finds no room within `BUDGET_WAIT` is answered 503 with `Retry-After` and closed.
//! - One client (one peer IP address) holds at most `Limits::max_connections_per_client`
//!   connections, counted from the accept: one more is answered 503 and closed as the
//!   connection cap's are, so one client dripping heads on many connections cannot take the
//!   cap from every other.
//! - A kept-alive connection idle for `Limits::idle_timeout` is closed; a write that makes
//!   no progress for `Limits::write_timeout` ends the connection.
//! - The accept loop survives running out of file descriptors (EMFILE, ENFILE) or memory for
//!   sockets: it sheds the waiting connection with a 503 (through a reserved descriptor), backs
//!   off, keeps accepting, and logs the event once per burst.
//!
//! Every refusal (`head`'s errors, a broken chunked body, a body limit) closes the connection
//! after its answer; nothing after it is parsed as a request. Before closing, the server reads
//! and discards what the client is still sending (at most `LINGER_BYTES` for at most
//! `LINGER_TIME`), so the answer reaches the client instead of being destroyed by a TCP
//! reset (RFC 9112 §9.6).
//!
//! # Stopping
//!
//! [`Server::shutdown`] (or dropping the server) closes the listening socket first (new
//! connections are refused), lets the requests in flight finish (answered with
//! `Connection: close`), and returns when they have. A request that arrives afterwards on a
//! connection kept alive from before gets 503 and `Connection: close`; such a connection's
//! thread ends when the connection closes or idles out. A drain (SIGTERM, see
//! `vendor-notes/signals.md`) does the same in steps with a deadline:
//! `Server::stop_accepting`, then `Server::close_by`.

use super::body::BodyReader;
use super::head::{self, HeadError, RequestHead};
use super::log::{Entry, RequestLog};
use super::write::{self, Framing};
use super::{Body, BodyError, Handler, Limits, Notes, Request, Response};
use crate::text::Unpoison;
use crate::wire::WireError;
use crate::wire::tls::ServerIdentity;
use crate::wire::wirelog::{self, Direction, Side, Tap, WireLog};
use std::collections::HashMap;
use std::io::{self, IoSlice, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest a refused connection is drained before it is closed.
pub(crate) const LINGER_TIME: Duration = Duration::from_secs(2);
/// The most bytes drained from a refused connection before it is closed.
pub(crate) const LINGER_BYTES: usize = 8 * 1024 * 1024;
/// The longest the accept loop waits between attempts while out of descriptors.
const MAX_BACKOFF: Duration = Duration::from_millis(100);
/// The longest a body waits for room in [`Limits::max_body_memory`] before it is refused.
pub(crate) const BUDGET_WAIT: Duration = Duration::from_secs(1);

/// A running server. Dropping it, or calling [`Server::shutdown`], stops accepting, lets the
/// requests in flight finish, and returns once they have.
pub struct Server {
    addr: SocketAddr,
    /// `https` with TLS, else `http`.
    scheme: &'static str,
    shared: Arc<Shared>,
    /// A second handle on the listening socket, to shut it while the acceptor blocks on it.
    listener: Option<TcpStream>,
    acceptor: Option<JoinHandle<()>>,
    /// Set by [`Server::close_by`]: dropping no longer waits for requests in flight.
    abandon: bool,
}

/// What every connection thread shares.
struct Shared {
    handler: Handler,
    limits: Limits,
    addr: SocketAddr,
    /// One line per request answered, when set.
    request_log: Option<Arc<RequestLog>>,
    /// Every message in and out, byte for byte, when set.
    wire_log: Option<WireLog>,
    /// Every connection speaks TLS with this identity, when set.
    tls: Option<ServerIdentity>,
    stopping: AtomicBool,
    /// Connections open, counted against the cap.
    connections: Arc<AtomicUsize>,
    /// Connections open per client address, counted against the per-client cap.
    clients: Mutex<HashMap<IpAddr, usize>>,
    /// Request bodies held, counted against [`Limits::max_body_memory`].
    bodies: BodyBudget,
    /// Requests between a complete head and a written response.
    in_flight: Count,
}

/// A bound socket not yet serving: its address is known, so a card can name it before the
/// handler is built.
pub struct Bound {
    listener: TcpListener,
    addr: SocketAddr,
    limits: Limits,
    request_log: Option<Arc<RequestLog>>,
    wire_log: Option<WireLog>,
    tls: Option<ServerIdentity>,
    connections: Arc<AtomicUsize>,
}

/// How many connections a server has open now: a handle a handler can hold (for a health
/// route), taken from [`Bound::open_connections`] before serving.
#[derive(Clone, Debug, Default)]
pub(crate) struct OpenConnections(Arc<AtomicUsize>);

impl OpenConnections {
    /// Connections open now (the one asking included).
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Bind `addr` (e.g. `127.0.0.1:0` for a free port), to serve within `limits`.
pub fn bind(addr: &str, limits: Limits) -> Result<Bound, WireError> {
    let listener =
        TcpListener::bind(addr).map_err(|e| WireError::io(format!("binding {addr}"), e))?;
    let local = listener
        .local_addr()
        .map_err(|e| WireError::io("reading the bound address", e))?;
    Ok(Bound {
        listener,
        addr: local,
        limits,
        request_log: None,
        wire_log: None,
        tls: None,
        connections: Arc::default(),
    })
}

/// Listen on `addr` and serve `handler` within `limits` (see [`bind`] and [`Bound::serve`]).
pub fn serve(addr: &str, handler: Handler, limits: Limits) -> Result<Server, WireError> {
    bind(addr, limits)?.serve(handler)
}

impl Bound {
    /// The address bound.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<host>:<port>` (`https://` with TLS) for this socket, with a wildcard bind
    /// address (`0.0.0.0`, `::`) replaced by loopback: a card must never advertise a wildcard.
    pub fn default_public_url(&self) -> String {
        let mut addr = self.addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        format!("{}://{addr}", self.scheme())
    }

    /// `https` once [`Bound::with_tls`] is set, else `http`.
    pub(crate) fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// Serve every connection over TLS with `identity`: the handshake is bounded by the head
    /// deadline and counted against the connection cap from its first byte.
    pub(crate) fn with_tls(mut self, identity: ServerIdentity) -> Bound {
        self.tls = Some(identity);
        self
    }

    /// A handle on the count of connections this socket will have open once serving.
    pub(crate) fn open_connections(&self) -> OpenConnections {
        OpenConnections(Arc::clone(&self.connections))
    }

    /// Log one line per request answered to `log` (see [`super::log`]).
    pub(crate) fn with_request_log(mut self, log: Arc<RequestLog>) -> Bound {
        self.request_log = Some(log);
        self
    }

    /// Write every message received and sent to `log`, byte for byte (see
    /// [`crate::wire::wirelog`]).
    pub(crate) fn with_wire_log(mut self, log: WireLog) -> Bound {
        self.wire_log = Some(log);
        self
    }

    /// Start serving `handler`: a thread that accepts, and one per connection.
    pub fn serve(self, handler: Handler) -> Result<Server, WireError> {
        let scheme = self.scheme();
        let Bound {
            listener,
            addr,
            limits,
            request_log,
            wire_log,
            tls,
            connections,
        } = self;
        let handle = listener
            .try_clone()
            .map(|l| TcpStream::from(OwnedFd::from(l)))
            .map_err(|e| WireError::io("duplicating the listening socket", e))?;
        let shared = Arc::new(Shared {
            handler,
            limits,
            addr,
            request_log,
            wire_log,
            tls,
            stopping: AtomicBool::new(false),
            connections,
            clients: Mutex::new(HashMap::new()),
            bodies: BodyBudget {
                used: Count::default(),
                limit: limits.max_body_memory,
            },
            in_flight: Count::default(),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("ddwire-http-accept".into())
                .spawn(move || accept_loop(listener, shared))
                .map_err(|e| WireError::io("starting the accept thread", e))?
        };
        Ok(Server {
            addr,
            scheme,
            shared,
            listener: Some(handle),
            acceptor: Some(acceptor),
            abandon: false,
        })
    }
}

impl Server {
    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`, or `https://<addr>` with TLS.
    pub fn base_url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// Connections open now.
    #[cfg(test)]
    pub(crate) fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Stop, finishing the requests in flight.
    pub fn shutdown(mut self) {
        self.stop();
    }

    /// Requests in flight now: between a complete head and a written response (a stream
    /// counts until its last byte is written).
    pub(crate) fn in_flight(&self) -> usize {
        self.shared.in_flight.lock().n
    }

    /// Stop accepting: the listening socket is closed, so new connections are refused, and a
    /// request arriving on a connection kept alive gets 503. Requests in flight go on.
    pub(crate) fn stop_accepting(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Shutting a listening socket makes Linux refuse new connections and fail the pending
        // `accept`, which ends the accept loop.
        if let Some(listener) = self.listener.take() {
            let _ = listener.shutdown(Shutdown::Read);
        }
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }

    /// Stop accepting and wait for the requests in flight until `deadline`; `true` if none
    /// is left. Either way the server is gone: requests still in flight are abandoned (the
    /// process is about to exit).
    pub(crate) fn close_by(mut self, deadline: Instant) -> bool {
        self.stop_accepting();
        self.abandon = true;
        self.wait_idle(Some(deadline))
    }

    /// Wait for the requests in flight to finish, until `deadline` if one is given; `true`
    /// if none is left.
    fn wait_idle(&self, deadline: Option<Instant>) -> bool {
        let mut in_flight = self.shared.in_flight.lock();
        while in_flight.n > 0 {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                break;
            }
            in_flight = self.shared.in_flight.wait(in_flight, left);
        }
        in_flight.n == 0
    }

    /// Block the calling thread for as long as the server runs (until the process exits).
    pub fn wait(mut self) {
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }

    fn stop(&mut self) {
        self.stop_accepting();
        if !self.abandon {
            self.wait_idle(None);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How long accepts must go without running out of descriptors before a burst is over. A
/// flood frees a descriptor with every connection it is refused, so accepts succeed between
/// refusals; without this quiet time each of them would end a burst and start a new one.
const BURST_QUIET: Duration = Duration::from_secs(1);

/// A run of failed accepts: when it began, how many connections were answered 503, and when
/// an accept last failed.
struct Burst {
    since: Instant,
    refused: u64,
    last_failure: Instant,
}

/// Accept until stopped. Out of descriptors or socket memory, shed the waiting connection
/// with a 503 through a reserved descriptor, back off and try again; log once per burst.
///
/// During a burst the listener polls (non-blocking, every 10 ms) rather than blocks, so the
/// burst's end is logged once accepts have gone [`BURST_QUIET`] without failing, whether or not
/// another client connects.
fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    // A descriptor held in reserve: closing it makes room to accept (and refuse) one
    // connection when the process has none left, so clients get an answer rather than wait
    // in the backlog.
    let mut reserve = std::fs::File::open("/dev/null").ok();
    let mut burst: Option<Burst> = None;
    let mut backoff = Duration::from_millis(1);
    let mut threads_failing = false;
    loop {
        let accepted = listener.accept();
        if let Some(b) = burst.take_if(|b| b.last_failure.elapsed() >= BURST_QUIET) {
            stderr_line!(
                "ddwire: {}: accepting again after {:.1} s out of descriptors ({} connections answered 503)",
                shared.addr,
                b.since.elapsed().as_secs_f64(),
                b.refused
            );
            let _ = listener.set_nonblocking(false);
            backoff = Duration::from_millis(1);
        }
        match accepted {
            Ok((stream, peer)) => {
                // Accepted sockets do not inherit the listener's non-blocking mode on Linux,
                // but other systems differ: connection threads expect blocking sockets.
                let _ = stream.set_nonblocking(false);
                if shared.stopping.load(Ordering::SeqCst) {
                    refuse(stream, peer, "the server is shutting down", &shared);
                    break;
                }
                if reserve.is_none() {
                    reserve = std::fs::File::open("/dev/null").ok();
                }
                match (admit(stream, peer, &shared), threads_failing) {
                    (Ok(()), true) => {
                        stderr_line!("ddwire: {}: connection threads start again", shared.addr);
                        threads_failing = false;
                    }
                    (Err(e), false) => {
                        // The connection was dropped (its client sees it close); say so once
                        // per burst.
                        stderr_line!(
                            "ddwire: {}: cannot start a connection thread ({e}); closing connections until one starts",
                            shared.addr
                        );
                        threads_failing = true;
                    }
                    _ => {}
                }
            }
            Err(_) if shared.stopping.load(Ordering::SeqCst) => break,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) if is_transient(&e) => {}
            Err(e) => {
                let exhausted = is_exhaustion(&e);
                match &mut burst {
                    Some(b) => b.last_failure = Instant::now(),
                    None => {
                        stderr_line!(
                            "ddwire: {}: cannot accept ({e}); answering 503 and retrying{}",
                            shared.addr,
                            if exhausted {
                                " as descriptors free up"
                            } else {
                                ""
                            }
                        );
                        let now = Instant::now();
                        burst = Some(Burst {
                            since: now,
                            refused: 0,
                            last_failure: now,
                        });
                        let _ = listener.set_nonblocking(true);
                    }
                }
                if exhausted && reserve.take().is_some() {
                    if let Ok((stream, peer)) = listener.accept() {
                        let _ = stream.set_nonblocking(false);
                        refuse(
                            stream,
                            peer,
                            "the server is out of file descriptors; try again later",
                            &shared,
                        );
                        if let Some(b) = &mut burst {
                            b.refused += 1;
                        }
                    }
                    reserve = std::fs::File::open("/dev/null").ok();
                }
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Errors after which accepting again at once is right: the peer gave up, or a signal (a
/// non-blocking listener's `WouldBlock` is answered before, with a pause).
fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// EMFILE, ENFILE, ENOBUFS, ENOMEM: out of descriptors or socket memory.
fn is_exhaustion(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(24 | 23 | 105 | 12))
}

/// Take a new connection within the caps (the client's, then the server's), on a thread of
/// its own. `Err`: no thread could be started, and the connection was closed.
fn admit(stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>) -> io::Result<()> {
    let client = peer.ip().to_canonical();
    let open = shared.connections.fetch_add(1, Ordering::SeqCst) + 1;
    let held = {
        let mut clients = shared.clients.lock().unpoisoned();
        let n = clients.entry(client).or_insert(0);
        *n += 1;
        *n
    };
    let guard = Counted(Arc::clone(shared), client);
    let (per_client, most) = (
        shared.limits.max_connections_per_client,
        shared.limits.max_connections,
    );
    let refusal = if held > per_client {
        Some(format!(
            "this client ({client}) holds its limit of {per_client} connections; close one or \
             try again later"
        ))
    } else if open > most {
        Some(format!(
            "the server holds its limit of {most} connections; try again later"
        ))
    } else {
        None
    };
    if let Some(message) = refusal {
        drop(guard);
        refuse(stream, peer, &message, shared);
        return Ok(());
    }
    let accepted = Instant::now();
    let spawned = std::thread::Builder::new()
        .name("ddwire-http-conn".into())
        .spawn(move || {
            let shared = Arc::clone(&guard.0);
            serve_connection(stream, peer, accepted, &shared);
            drop(guard);
        });
    // On failure the closure, and with it the connection, is dropped.
    spawned.map(drop)
}

/// A connection counted against the cap and its client's until dropped.
struct Counted(Arc<Shared>, IpAddr);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::SeqCst);
        let mut clients = self.0.clients.lock().unpoisoned();
        if let Some(n) = clients.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                clients.remove(&self.1);
            }
        }
    }
}

/// A count that threads wait on until it changes, behind one lock.
///
/// `Condvar::notify_all` is a futex system call even when no thread waits, and the server's two
/// counts (body bytes held, requests in flight) change twice on every request, where a waiter
/// is rare (a request waiting for body memory, a drain): the change signals the condition
/// variable only when the count says a thread waits. A waiter registers under the lock before
/// it sleeps (`Condvar::wait` releases the lock atomically), so a change made under the lock
/// either sees the waiter or comes before its check of the count.
#[derive(Default)]
struct Count {
    state: Mutex<CountState>,
    changed: Condvar,
}

#[derive(Default)]
struct CountState {
    /// The count.
    n: usize,
    /// Threads asleep in [`Count::wait`].
    waiters: usize,
}

impl Count {
    fn lock(&self) -> std::sync::MutexGuard<'_, CountState> {
        self.state.lock().unpoisoned()
    }

    /// Sleep until the count changes (or a spurious wake-up), at most `timeout` if given.
    fn wait<'a>(
        &'a self,
        mut guard: std::sync::MutexGuard<'a, CountState>,
        timeout: Option<Duration>,
    ) -> std::sync::MutexGuard<'a, CountState> {
        guard.waiters += 1;
        let mut guard = match timeout {
            Some(t) => self.changed.wait_timeout(guard, t).unpoisoned().0,
            None => self.changed.wait(guard).unpoisoned(),
        };
        guard.waiters -= 1;
        guard
    }

    /// Release the lock after a change, waking every waiter if there is one.
    fn changed(&self, guard: std::sync::MutexGuard<'_, CountState>) {
        let waiting = guard.waiters > 0;
        drop(guard);
        if waiting {
            self.changed.notify_all();
        }
    }
}

/// The bytes of request bodies held now, against [`Limits::max_body_memory`].
struct BodyBudget {
    used: Count,
    limit: usize,
}

impl BodyBudget {
    /// Take `n` bytes more, waiting for room until `until`; `false` if none was made. With
    /// nothing held, any size is taken (a body larger than the budget is read alone).
    fn take(&self, n: usize, until: Instant) -> bool {
        let mut used = self.used.lock();
        loop {
            if used.n == 0 || used.n.saturating_add(n) <= self.limit {
                used.n += n;
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            used = self.used.wait(used, Some(left));
        }
    }

    fn give(&self, n: usize) {
        if n > 0 {
            let mut used = self.used.lock();
            used.n -= n;
            self.used.changed(used);
        }
    }
}

/// The part of the budget one request's body holds, given back when dropped.
struct Held<'a> {
    budget: &'a BodyBudget,
    bytes: usize,
    /// When waiting for room ends: [`BUDGET_WAIT`] after the first wait began.
    until: Option<Instant>,
}

impl Held<'_> {
    /// Make `body` able to hold `more` bytes beyond its length without growing on its own:
    /// its capacity at least doubles (up to `most`, the most it will ever need), and the
    /// budget is taken for what it grows by, first.
    fn make_room(
        &mut self,
        body: &mut Vec<u8>,
        more: usize,
        most: usize,
    ) -> std::result::Result<(), BodyError> {
        // Bytes past `most` (a pipelined request after the body) are never body.
        let need = body.len().saturating_add(more).min(most.max(body.len()));
        if need <= body.capacity() {
            return Ok(());
        }
        let cap = (body.capacity() * 2)
            .max(64 * 1024)
            .clamp(need, most.max(need));
        let grow = cap - self.bytes.min(cap);
        let until = *self
            .until
            .get_or_insert_with(|| Instant::now() + BUDGET_WAIT);
        if !self.budget.take(grow, until) {
            return Err(BodyError::Busy {
                budget: self.budget.limit,
            });
        }
        self.bytes += grow;
        body.reserve_exact(cap - body.len());
        Ok(())
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.budget.give(self.bytes);
    }
}

/// A request in flight until dropped.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> InFlight<'a> {
        shared.in_flight.lock().n += 1;
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut in_flight = self.0.in_flight.lock();
        in_flight.n -= 1;
        if in_flight.n == 0 {
            self.0.in_flight.changed(in_flight);
        }
    }
}

/// Answer a connection that is not served with 503 and close it, without a thread: the
/// response is small enough for the socket buffer, and what the client already sent is read
/// so that closing does not reset the connection under the answer. Both logs record it.
fn refuse(mut stream: TcpStream, peer: SocketAddr, message: &str, shared: &Shared) {
    let obs = Observer::new(shared, &stream, Some(peer));
    let line = RequestLine::unread(&obs);
    let _ = stream.set_nonblocking(true);
    if shared.tls.is_some() {
        // No thread, so no handshake: a fatal `internal_error` alert (RFC 8446 §6.2) tells a
        // TLS client the server would not go on, where HTTP bytes would read as garbage.
        let _ = stream.write_all(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 80]);
        let _ = stream.shutdown(Shutdown::Both);
        line.refused(&obs, 503, 0, message.to_string());
        return;
    }
    let mut tap = obs.tap();
    let response = Response::error(503, message).with_header("Retry-After", "1");
    let mut sent = 0;
    let mut tee = Tee {
        inner: &mut stream,
        tap: &mut tap,
    };
    let written = write::write_counted(&mut tee, response, Framing::CLOSE, &mut sent);
    tap.end(Direction::Out, written.is_ok());
    let mut scratch = [0u8; 4096];
    for _ in 0..16 {
        match stream.read(&mut scratch) {
            Ok(n) if n > 0 => tap.received(&scratch[..n]),
            _ => break,
        }
    }
    tap.end(Direction::In, false);
    let _ = stream.shutdown(Shutdown::Write);
    line.refused(&obs, 503, sent, message.to_string());
}

/// Close after a refusal: stop sending, drain what the client still sends (bounded in bytes
/// and time) so the refusal is not destroyed by a reset, then close.
fn linger(stream: Stream) {
    let mut stream = stream.into_tcp();
    let until = Instant::now() + LINGER_TIME;
    let mut scratch = [0u8; 8192];
    let mut drained = 0;
    while drained < LINGER_BYTES {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut scratch) {
            Ok(0) => break,
            Ok(n) => drained += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// A connection's byte stream: the socket itself, or TLS over it.
enum Stream {
    Plain(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<crate::wire::tls::server::TlsStream>),
}

/// What a connection's byte stream is, whichever it is.
trait ReadWrite: Read + Write {}

impl<T: Read + Write> ReadWrite for T {}

impl Stream {
    fn io(&mut self) -> &mut dyn ReadWrite {
        match self {
            Stream::Plain(s) => s,
            #[cfg(feature = "tls")]
            Stream::Tls(t) => &mut **t,
        }
    }

    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            #[cfg(feature = "tls")]
            Stream::Tls(t) => &t.sock,
        }
    }

    /// Bound the next read by `wait`: for TLS, across every socket read one record takes.
    fn set_read_timeout(&mut self, wait: Duration) {
        match self {
            Stream::Plain(s) => {
                let _ = s.set_read_timeout(Some(wait));
            }
            #[cfg(feature = "tls")]
            Stream::Tls(t) => t.set_read_deadline(Some(Instant::now() + wait)),
        }
    }

    /// Stop sending (after `close_notify`, for TLS); reads may go on.
    fn shutdown_write(&mut self) {
        #[cfg(feature = "tls")]
        if let Stream::Tls(t) = self {
            t.close();
        }
        let _ = self.tcp().shutdown(Shutdown::Write);
    }

    /// The socket, for what needs no more TLS (draining what the client still sends).
    fn into_tcp(mut self) -> TcpStream {
        self.shutdown_write();
        match self {
            Stream::Plain(s) => s,
            #[cfg(feature = "tls")]
            Stream::Tls(t) => t.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.io().read(buf)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.io().write(buf)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.io().write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.io().flush()
    }
}

/// How a head read ended, other than with a head.
enum NoHead {
    /// The peer closed, or idled out, with no request started: close quietly.
    Closed,
    /// Part of a head arrived, but not all of it within the deadline.
    TimedOut,
    /// The head was refused.
    Refused(HeadError),
}

/// One connection's socket, head buffer, and wire log tap.
struct Conn {
    stream: Stream,
    /// What the wire log is handed: each request's head and body as consumed from the
    /// buffer (so a pipelined request is a message of its own), each response as written.
    tap: Tap,
    /// The head buffer, [`Limits::max_header_bytes`] long; body bytes pass through it too.
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// The read timeout set on the socket, to set it only when it changes.
    timeout: Option<Duration>,
}

impl Conn {
    fn new(stream: Stream, limits: &Limits, tap: Tap) -> Conn {
        Conn {
            stream,
            tap,
            buf: vec![0; limits.max_header_bytes.max(1)],
            start: 0,
            end: 0,
            timeout: None,
        }
    }

    fn set_timeout(&mut self, wait: Duration) {
        let wait = wait.max(Duration::from_millis(1));
        if self.timeout != Some(wait) {
            self.stream.set_read_timeout(wait);
            self.timeout = Some(wait);
        }
    }

    /// Read one request head. `deadline` bounds the head when it is known (the first request:
    /// from the accept); otherwise the wait is `idle_timeout` until a first byte arrives, and
    /// `head_timeout` from then.
    fn read_head(
        &mut self,
        mut deadline: Option<Instant>,
        limits: &Limits,
    ) -> std::result::Result<RequestHead, NoHead> {
        // Pipelined bytes move to the front, so the head can use the whole buffer.
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end > 0 && deadline.is_none() {
            deadline = Some(Instant::now() + limits.head_timeout);
        }
        let mut parse = self.end > 0;
        loop {
            if parse {
                match head::parse_request(&self.buf[..self.end], limits) {
                    Ok(Some(head)) => {
                        self.start = head.len;
                        return Ok(head);
                    }
                    Ok(None) => {}
                    Err(e) => return Err(NoHead::Refused(e)),
                }
            }
            let wait = match deadline {
                None => limits.idle_timeout,
                Some(at) => {
                    let left = at.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(if self.end == 0 {
                            NoHead::Closed
                        } else {
                            NoHead::TimedOut
                        });
                    }
                    left
                }
            };
            self.set_timeout(wait);
            let end = self.end;
            match self.stream.read(&mut self.buf[end..]) {
                Ok(0) => return Err(NoHead::Closed),
                Ok(n) => {
                    self.end += n;
                    // A head can only end, or fail, at a line end; the full buffer is 431.
                    parse = self.buf[end..self.end].contains(&b'\n') || self.end == self.buf.len();
                    if deadline.is_none() {
                        deadline = Some(Instant::now() + limits.head_timeout);
                    }
                }
                Err(e) if is_timeout(&e) => {
                    if deadline.is_none() {
                        return Err(NoHead::Closed);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(NoHead::Closed),
            }
        }
    }

    /// Read the body the head announces, within the limit and the body deadline. Sends
    /// `100 Continue` when the client waits for it. The body's bytes as framed on the wire go
    /// to the tap as they are consumed.
    fn read_body(
        &mut self,
        head: &RequestHead,
        limits: &Limits,
        held: &mut Held<'_>,
    ) -> std::result::Result<Vec<u8>, BodyError> {
        let mut reader = BodyReader::new(head.framing, limits.max_body_bytes)?;
        if reader.is_done() {
            return Ok(Vec::new());
        }
        // The most the body can need: its declared length, else the limit (a chunked body
        // decodes to no more than it takes on the wire).
        let most = reader
            .remaining()
            .unwrap_or(u64::MAX)
            .min(limits.max_body_bytes as u64) as usize;
        let mut body = Vec::new();
        held.make_room(&mut body, self.end - self.start, most)?;
        let fed = reader.feed(&self.buf[self.start..self.end], &mut body)?;
        self.tap
            .received(&self.buf[self.start..self.start + fed.consumed]);
        self.start += fed.consumed;
        if fed.done {
            return Ok(body);
        }
        // Every buffered byte is body: the buffer is free for reading.
        let nothing_yet = fed.consumed == 0;
        self.start = 0;
        self.end = 0;
        if head.expect_continue && nothing_yet {
            const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
            let written = self.stream.write_all(CONTINUE);
            self.tap.message(Direction::Out, CONTINUE, written.is_ok());
            written.map_err(|_| BodyError::Truncated)?;
        }
        let deadline = Instant::now() + limits.body_timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(BodyError::Timeout {
                    after: limits.body_timeout,
                });
            }
            self.set_timeout(left);
            match self.stream.read(&mut self.buf) {
                Ok(0) => {
                    reader.end_of_input()?;
                    return Ok(body);
                }
                Ok(n) => {
                    held.make_room(&mut body, n, most)?;
                    let fed = reader.feed(&self.buf[..n], &mut body);
                    if let Ok(fed) = &fed {
                        self.tap.received(&self.buf[..fed.consumed]);
                    }
                    let fed = fed?;
                    if fed.done {
                        self.start = fed.consumed;
                        self.end = n;
                        return Ok(body);
                    }
                }
                Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(BodyError::Truncated),
            }
        }
    }

    /// Write a response; a response the writer refuses (a bad header from the handler) is
    /// replaced by a 500 that closes the connection. The wire log gets what was written.
    fn respond(&mut self, response: Response, framing: Framing) -> Sent {
        let mut status = response.status;
        let mut bytes = 0;
        let mut tee = Tee {
            inner: &mut self.stream,
            tap: &mut self.tap,
        };
        let (open, complete) = match write::write_counted(&mut tee, response, framing, &mut bytes) {
            Ok(()) => (framing.keep_alive, true),
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                // Refused before a byte was written.
                stderr_line!("ddwire: a handler's response was refused: {e}");
                let response = Response::error(500, &format!("internal error: {e}"));
                let framing = Framing {
                    keep_alive: false,
                    ..framing
                };
                status = 500;
                bytes = 0;
                let written = write::write_counted(&mut tee, response, framing, &mut bytes);
                (false, written.is_ok())
            }
            Err(_) => (false, false),
        };
        self.tap.end(Direction::Out, complete);
        Sent {
            open,
            status,
            bytes,
            complete,
        }
    }

    /// What a refusal before a head leaves for the wire log: the bytes read, incomplete.
    fn unparsed(&mut self) {
        self.tap
            .message(Direction::In, &self.buf[..self.end], false);
    }
}

/// How a response went out.
struct Sent {
    /// The connection stays open.
    open: bool,
    /// The status written (500 if the handler's response was refused).
    status: u16,
    /// Body bytes written.
    bytes: u64,
    /// Written in full.
    complete: bool,
}

/// A writer that hands what it wrote to the wire log's tap as it goes.
struct Tee<'a, W: Write> {
    inner: &'a mut W,
    tap: &'a mut Tap,
}

impl<W: Write> Write for Tee<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.tap.sent(&buf[..n]);
        Ok(n)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let n = self.inner.write_vectored(bufs)?;
        let mut left = n;
        for b in bufs {
            if left == 0 {
                break;
            }
            let take = left.min(b.len());
            self.tap.sent(&b[..take]);
            left -= take;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// What one connection tells the request log and the wire log.
struct Observer<'a> {
    shared: &'a Shared,
    connection: u64,
    peer: Option<SocketAddr>,
    local: Option<SocketAddr>,
}

impl<'a> Observer<'a> {
    fn new(shared: &'a Shared, stream: &TcpStream, peer: Option<SocketAddr>) -> Observer<'a> {
        let logging = shared.wire_log.is_some() || shared.request_log.is_some();
        Observer {
            shared,
            connection: if logging { wirelog::connection_id() } else { 0 },
            peer,
            local: shared
                .wire_log
                .as_ref()
                .and_then(|_| stream.local_addr().ok()),
        }
    }

    fn debug(&self) -> bool {
        self.shared
            .request_log
            .as_ref()
            .is_some_and(|l| l.enabled(super::log::Level::Debug))
    }

    /// This connection's tap on the wire log (one that does nothing without a log).
    fn tap(&self) -> Tap {
        match &self.shared.wire_log {
            None => Tap::off(),
            Some(log) => Tap::new(
                log,
                Side::Server,
                self.connection,
                self.peer.map_or_else(|| "-".into(), |p| p.to_string()),
                self.local.map(|l| l.to_string()),
            ),
        }
    }

    /// Log a request line, built only when there is a request log.
    fn request(&self, entry: impl FnOnce() -> Entry) {
        if let Some(log) = &self.shared.request_log {
            log.record(&entry());
        }
    }
}

/// Whether a read or write ran out of time (a socket's timeout, by the kind each system gives).
pub(super) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// What becomes of a connection after a request, or after a head that did not come.
enum Then {
    /// Read the next request.
    Next,
    /// Stop sending, and drain what the client still sends before closing ([`linger`]).
    Linger,
    /// Stop sending, and close.
    Close,
    /// Stop sending and receiving at once (a client that did not send its head in time).
    Reset,
    /// Close without another word: the peer is gone.
    Drop,
}

/// Serve one connection until it closes: its TLS handshake if the server speaks TLS, then its
/// requests in turn while it is kept alive.
fn serve_connection(stream: TcpStream, peer: SocketAddr, accepted: Instant, shared: &Shared) {
    let limits = &shared.limits;
    // Small responses go out at once rather than waiting on Nagle's algorithm.
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(limits.write_timeout));
    let obs = Observer::new(shared, &stream, Some(peer));
    let Some(stream) = open_stream(stream, accepted + limits.head_timeout, &obs) else {
        return;
    };
    let mut conn = Conn::new(stream, limits, obs.tap());
    super::answers_requests();
    let mut deadline = Some(accepted + limits.head_timeout);
    loop {
        let then = match next_head(&mut conn, &obs, deadline.take()) {
            Ok(head) => serve_request(&mut conn, head, &obs),
            Err(then) => then,
        };
        match then {
            Then::Next => continue,
            Then::Linger => linger(conn.stream),
            Then::Close => conn.stream.shutdown_write(),
            Then::Reset => {
                conn.stream.shutdown_write();
                let _ = conn.stream.tcp().shutdown(Shutdown::Both);
            }
            Then::Drop => {}
        }
        return;
    }
}

/// The connection's byte stream: the socket itself, or TLS over it once the handshake is done
/// by `deadline`. `None` when the connection is done with (see [`start_tls`]).
fn open_stream(stream: TcpStream, deadline: Instant, obs: &Observer<'_>) -> Option<Stream> {
    match &obs.shared.tls {
        None => Some(Stream::Plain(stream)),
        #[cfg(feature = "tls")]
        Some(identity) => start_tls(stream, identity, deadline, obs, &obs.shared.limits),
        #[cfg(not(feature = "tls"))]
        Some(_) => {
            let _ = deadline;
            None
        }
    }
}

/// The next request's head; or, when none comes, what becomes of the connection: closed
/// quietly (the client left or idled out), or refused and logged (408 for a head too slow,
/// the parser's status for one malformed or too large).
fn next_head(
    conn: &mut Conn,
    obs: &Observer<'_>,
    deadline: Option<Instant>,
) -> std::result::Result<RequestHead, Then> {
    let limits = &obs.shared.limits;
    match conn.read_head(deadline, limits) {
        Ok(head) => Ok(head),
        Err(NoHead::Closed) => {
            conn.unparsed();
            Err(Then::Drop)
        }
        Err(NoHead::TimedOut) => {
            let message = format!(
                "the request head did not arrive within {} s",
                limits.head_timeout.as_secs_f64()
            );
            refused_before_head(conn, obs, 408, &message);
            Err(Then::Reset)
        }
        Err(NoHead::Refused(e)) => {
            refused_before_head(conn, obs, e.status(), &e.to_string());
            Err(Then::Linger)
        }
    }
}

/// Answer one request whose head has been read: read its body within the limits, call the
/// handler, write the response, log both ways; then what becomes of the connection. A server
/// that is stopping answers 503; a body refused by its framing or the memory budget is
/// answered by the server itself; one over its limit or too slow reaches the handler as
/// [`Request::body_error`].
fn serve_request(conn: &mut Conn, head: RequestHead, obs: &Observer<'_>) -> Then {
    let shared = obs.shared;
    let line = RequestLine::begin(obs, &head);
    conn.tap.received(&conn.buf[..head.len]);
    let in_flight = InFlight::enter(shared);
    let closing = Framing::closing(&head);
    let refuse = |conn: &mut Conn, answer: Response, message: &str| {
        let sent = conn.respond(answer, closing);
        line.refused(obs, sent.status, sent.bytes, message.to_string());
        Then::Linger
    };
    if shared.stopping.load(Ordering::SeqCst) {
        conn.tap.end(Direction::In, false);
        let message = "the server is shutting down";
        return refuse(conn, Response::error(503, message), message);
    }
    let mut held = Held {
        budget: &shared.bodies,
        bytes: 0,
        until: None,
    };
    let read = conn.read_body(&head, &shared.limits, &mut held);
    conn.tap.end(Direction::In, read.is_ok());
    match &read {
        // The peer is gone: there is no one to answer.
        Err(BodyError::Truncated) => {
            line.refused(obs, 0, 0, BodyError::Truncated.to_string());
            return Then::Drop;
        }
        Err(e @ (BodyError::Chunked(_) | BodyError::Busy { .. })) => {
            drop(held);
            let mut answer = Response::error(e.status(), &e.to_string());
            if e.status() == 503 {
                answer = answer.with_header("Retry-After", "1");
            }
            return refuse(conn, answer, &e.to_string());
        }
        _ => {}
    }
    let request_bytes = Some(read.as_ref().map_or(0, Vec::len) as u64);
    // What is left of a body that was not read cannot be skipped safely.
    let refused_body = read.is_err();
    let (mut response, mut framing) = answer(&shared.handler, head, read, obs.peer);
    // The body was the handler's to keep or drop: its bytes leave the budget now.
    drop(held);
    let notes = std::mem::take(&mut response.notes);
    // A stopping server closes after what it holds.
    framing.keep_alive &= !shared.stopping.load(Ordering::SeqCst);
    let sent = conn.respond(response, framing);
    super::free_left();
    line.answered(obs, &sent, notes, request_bytes);
    drop(in_flight);
    if sent.open {
        Then::Next
    } else if refused_body || conn.start < conn.end {
        // Bytes the client sent after this request (pipelined, or the unread rest of a
        // refused body) would turn the close into a reset that can destroy the answer.
        Then::Linger
    } else {
        Then::Close
    }
}

/// One request as the request log records it: its line (method, target, peer, and at debug
/// the user agent), taken from the head before the head is given to the handler, and when
/// the head was read.
struct RequestLine {
    started: Instant,
    line: Option<Entry>,
}

impl RequestLine {
    fn begin(obs: &Observer<'_>, head: &RequestHead) -> RequestLine {
        let mut line = RequestLine::unread(obs);
        if let Some(entry) = &mut line.line {
            entry.method = head.method.to_string();
            entry.target = if head.query.is_empty() {
                head.path.clone()
            } else {
                format!("{}?{}", head.path, head.query)
            };
            if obs.debug() {
                entry.user_agent = super::header(&head.headers, "user-agent").map(str::to_string);
            }
        }
        line
    }

    /// A request whose line was never read (method and target `-`), from now.
    fn unread(obs: &Observer<'_>) -> RequestLine {
        let started = Instant::now();
        let time_ns = crate::time::now_ns();
        let line = obs.shared.request_log.is_some().then(|| Entry {
            time_ns,
            method: "-".into(),
            target: "-".into(),
            peer: obs.peer,
            connection: obs.connection,
            ..Entry::default()
        });
        RequestLine { started, line }
    }

    /// Log the answer `sent`, with what the handler noted and the request body's size (and
    /// that the response was cut short if it was).
    fn answered(&self, obs: &Observer<'_>, sent: &Sent, notes: Notes, request_bytes: Option<u64>) {
        obs.request(|| Entry {
            status: sent.status,
            bytes: sent.bytes,
            duration: self.started.elapsed(),
            invocation_id: notes.invocation_id,
            principal: notes.principal,
            note: (!sent.complete)
                .then(|| "the response was cut short: the connection ended".into()),
            request_bytes,
            ..self.line.clone().unwrap_or_default()
        });
    }

    /// Log a request the server answered itself with `status` and `bytes` of body, or never
    /// answered (status 0), saying why.
    fn refused(&self, obs: &Observer<'_>, status: u16, bytes: u64, note: String) {
        obs.request(|| Entry {
            status,
            bytes,
            duration: self.started.elapsed(),
            note: Some(note),
            ..self.line.clone().unwrap_or_default()
        });
    }
}

/// Finish the TLS handshake on a new connection by `deadline`. `None` when the connection
/// is done with: a plain HTTP request answered 400 in plain HTTP, or a handshake that failed
/// or timed out; each is logged.
#[cfg(feature = "tls")]
fn start_tls(
    sock: TcpStream,
    identity: &ServerIdentity,
    deadline: Instant,
    obs: &Observer<'_>,
    limits: &Limits,
) -> Option<Stream> {
    use crate::wire::tls::server::{Refusal, TlsStream};
    let line = RequestLine::unread(obs);
    let (sock, refusal) = match TlsStream::accept(&identity.inner, sock, deadline) {
        Ok(tls) => return Some(Stream::Tls(Box::new(tls))),
        Err(refused) => refused,
    };
    let (status, note) = match refusal {
        Refusal::PlainHttp(bytes) => {
            let mut conn = Conn::new(Stream::Plain(sock), limits, obs.tap());
            let n = bytes.len().min(conn.buf.len());
            conn.buf[..n].copy_from_slice(&bytes[..n]);
            conn.end = n;
            let message = "this port speaks TLS: call it with https://, not http://";
            refused_before_head(&mut conn, obs, 400, message);
            linger(conn.stream);
            return None;
        }
        Refusal::TimedOut => (408, "the TLS handshake did not finish in time".to_string()),
        Refusal::Failed(why) => (400, format!("TLS handshake failed: {why}")),
    };
    let _ = sock.shutdown(Shutdown::Both);
    line.refused(obs, status, 0, note);
    None
}

/// Answer a request refused before its head was read (too slow, too large, malformed), and
/// log it: the bytes that did arrive, the answer, and a request line without a method.
fn refused_before_head(conn: &mut Conn, obs: &Observer<'_>, status: u16, message: &str) {
    let line = RequestLine::unread(obs);
    conn.unparsed();
    let sent = conn.respond(Response::error(status, message), Framing::CLOSE);
    line.refused(obs, sent.status, sent.bytes, message.to_string());
}

/// Answer the request `head` announced with `handler`, given its body or why that was not
/// read: the response, and how to frame it. `HEAD` reaches the handler as `GET`
/// ([`Request::method`]). A panic inside the handler becomes a 500 instead of a dead
/// connection, and a refused body is never answered as a success (a handler that ignores
/// `body_error` gets the refusal's own status). The connection stays open only when the head
/// asked for it, the body was read, the handler did not ask to close, and the answer is no
/// HTTP/1.0 stream (which ends by closing).
pub(crate) fn answer(
    handler: &Handler,
    head: RequestHead,
    body: Result<Vec<u8>, BodyError>,
    remote_addr: Option<SocketAddr>,
) -> (Response, Framing) {
    let framing = Framing::closing(&head);
    let (body, refused) = match body {
        Ok(body) => (body, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let method = if framing.head_only {
        "GET"
    } else {
        head.method
    };
    let request = Request {
        method: method.to_string(),
        path: head.path,
        query: head.query,
        headers: head.headers.into(),
        body,
        body_error: refused.clone(),
        remote_addr,
    };
    super::take_noted();
    let mut response =
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(request))) {
            Ok(response) => response,
            Err(_) => Response::error(500, "internal error: the request handler panicked"),
        };
    let noted = super::take_noted();
    let notes = &mut response.notes;
    if notes.invocation_id.is_none() {
        notes.invocation_id = noted.invocation_id;
        notes.principal = notes.principal.take().or(noted.principal);
    }
    if let Some(e) = &refused
        && response.status < 400
    {
        response = Response::error(e.status(), &e.to_string());
    }
    let keep_alive = head.keep_alive
        && refused.is_none()
        && !(framing.http10 && matches!(response.body, Body::Stream(_)))
        && !write::asks_to_close(&response);
    (
        response,
        Framing {
            keep_alive,
            ..framing
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::http::client::{ClientRequest, HttpClient};
    use std::io::{BufRead, BufReader};

    const T: Duration = Duration::from_secs(10);

    /// Read one response with a `Content-Length` body from `reader`: (head, body).
    fn read_one(reader: &mut BufReader<TcpStream>) -> (String, String) {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            let n = reader.read_line(&mut line).unwrap();
            assert!(n > 0, "EOF inside a head: {head}");
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .map(|v| v.trim().parse().unwrap())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        (head, String::from_utf8(body).unwrap())
    }

    #[test]
    fn the_listener_keeps_accepting_after_idling_past_every_timeout() {
        let limits = Limits {
            head_timeout: Duration::from_millis(100),
            idle_timeout: Duration::from_millis(100),
            ..Limits::DEFAULT
        };
        let ok: Handler = Arc::new(|_| Response::empty(204));
        let server = serve("127.0.0.1:0", ok, limits).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let r = HttpClient::tcp()
            .send(ClientRequest::get(server.base_url(), T))
            .unwrap();
        assert_eq!(r.status, 204);
        server.shutdown();
    }

    #[test]
    fn a_stopped_server_answers_a_kept_alive_connection_with_503_and_refuses_new_ones() {
        let ok: Handler = Arc::new(|_| Response::empty(204));
        let server = serve("127.0.0.1:0", ok, Limits::DEFAULT).unwrap();
        let addr = server.local_addr();
        let mut kept = TcpStream::connect(addr).unwrap();
        kept.set_read_timeout(Some(T)).unwrap();
        let get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        kept.write_all(get).unwrap();
        let mut reader = BufReader::new(kept.try_clone().unwrap());
        let (head, _) = read_one(&mut reader);
        assert!(head.starts_with("HTTP/1.1 204"), "{head}");
        server.shutdown();
        assert!(TcpStream::connect(addr).is_err());
        kept.write_all(get).unwrap();
        let (head, body) = read_one(&mut reader);
        assert!(head.starts_with("HTTP/1.1 503"), "{head}");
        assert!(head.contains("Connection: close\r\n"), "{head}");
        assert!(body.contains("shutting down"), "{body}");
        // And the server closes the connection after it.
        let mut rest = Vec::new();
        assert_eq!(reader.read_to_end(&mut rest).unwrap(), 0);
    }

    #[test]
    fn shutdown_waits_for_the_request_in_flight_and_it_is_answered_with_close() {
        let slow: Handler = Arc::new(|_| {
            std::thread::sleep(Duration::from_millis(300));
            Response::bytes(200, "text/plain", b"done".to_vec())
        });
        let server = serve("127.0.0.1:0", slow, Limits::DEFAULT).unwrap();
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        s.set_read_timeout(Some(T)).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        server.shutdown();
        assert!(started.elapsed() >= Duration::from_millis(100));
        let mut reader = BufReader::new(s);
        let (head, body) = read_one(&mut reader);
        assert!(head.starts_with("HTTP/1.1 200") && head.contains("Connection: close"));
        assert_eq!(body, "done");
    }

    /// Dropped, it waits for the client to have read the response, and says whether it had.
    struct FreedAfterRead {
        read: crossbeam_channel::Receiver<()>,
        freed: crossbeam_channel::Sender<bool>,
    }

    impl Drop for FreedAfterRead {
        fn drop(&mut self) {
            let after = self.read.recv_timeout(Duration::from_secs(2)).is_ok();
            let _ = self.freed.send(after);
        }
    }

    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn what_a_handler_leaves_is_freed_after_its_response_is_written_and_none_is_lost() {
        let (read_tx, read_rx) = crossbeam_channel::unbounded();
        let (freed_tx, freed_rx) = crossbeam_channel::unbounded();
        let counted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&counted);
        let handler: Handler = Arc::new(move |_| {
            super::super::free_after_reply(FreedAfterRead {
                read: read_rx.clone(),
                freed: freed_tx.clone(),
            });
            // Beyond the bound, each is freed at once.
            for _ in 0..super::super::MOST_LEFT + 35 {
                super::super::free_after_reply(Counted(Arc::clone(&count)));
            }
            let at_once = count.load(Ordering::SeqCst);
            Response::bytes(200, "text/plain", at_once.to_string().into_bytes())
        });
        let server = serve("127.0.0.1:0", handler, Limits::DEFAULT).unwrap();
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        s.set_read_timeout(Some(T)).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut reader = BufReader::new(s.try_clone().unwrap());
        let (head, body) = read_one(&mut reader);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(body, "36", "the bound holds 64 and frees the rest at once");
        read_tx.send(()).unwrap();
        assert_eq!(freed_rx.recv_timeout(T), Ok(true), "freed after the read");
        let until = Instant::now() + T;
        while counted.load(Ordering::SeqCst) < super::super::MOST_LEFT + 35
            && Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(counted.load(Ordering::SeqCst), super::super::MOST_LEFT + 35);
    }

    #[test]
    fn what_a_thread_answering_no_request_leaves_is_freed_at_once() {
        let counted = Arc::new(AtomicUsize::new(0));
        super::super::free_after_reply(Counted(Arc::clone(&counted)));
        assert_eq!(counted.load(Ordering::SeqCst), 1);
    }
}
