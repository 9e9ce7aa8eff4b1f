//! Serving a [`Handler`] over TCP with tiny_http.
//!
//! tiny_http accepts connections, keeps them alive and parses request heads; ddwire reads the
//! body within [`Limits`], calls the handler on a fixed pool of worker threads, and writes the
//! response itself with [`write_response`] (so a Server-Sent Events stream is flushed event by
//! event, which tiny_http's own chunked writer would buffer).
//!
//! Read and write timeouts are set on the listening socket, which Linux copies to every
//! accepted connection; tiny_http therefore closes a connection idle longer than
//! [`Limits::read_timeout`], and a body that stalls gets HTTP 408. A request head over
//! [`Limits::max_header_bytes`] gets HTTP 431. tiny_http reads a head before ddwire sees it, so
//! the head-size limit is checked after tiny_http has buffered it; the read timeout bounds how
//! long that can take.
//!
//! The same timeout bounds how long the listener's `accept` may wait, and tiny_http's accept
//! thread stops for good at its first error; a keeper thread therefore connects to the
//! listener every third of the timeout so `accept` never idles that long (see
//! `keep_accepting`). Any other accept error (say, the process runs out of file descriptors)
//! still stops tiny_http from accepting; it is reported on stderr.
//!
//! Stopping closes the listening socket first (new connections are refused), lets the workers
//! finish the requests they hold (answering with `Connection: close`), and then leaves a
//! drainer thread to answer any request that still arrives on a kept-alive connection with
//! HTTP 503 and `Connection: close`, until the connections have been idle for
//! [`Limits::read_timeout`]. A client of a stopped server therefore gets a refused connection
//! or a 503 at once, never a request left unanswered until its own timeout.

use super::{BodyError, Handler, Limits, Request, Response, wants_close, write_response};
use crate::error::{Error, Result};
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running server. Dropping it, or calling [`Server::shutdown`], stops accepting requests,
/// lets the workers finish the requests they hold, and joins them.
pub struct Server {
    addr: SocketAddr,
    inner: Option<Arc<tiny_http::Server>>,
    /// A second handle on the listening socket, to close it while tiny_http still holds it.
    listener: Option<TcpStream>,
    limits: Limits,
    workers: Vec<JoinHandle<()>>,
    stopping: Arc<AtomicBool>,
    keeper: Option<JoinHandle<()>>,
}

/// The worker count that suits this machine: eight per core, at least eight, because a worker
/// blocks for the whole of a call it makes to an agent.
pub fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get() * 8)
        .unwrap_or(8)
        .max(8)
}

/// A bound socket not yet serving: its address is known, so a card can name it before the
/// handler is built.
pub struct Bound {
    listener: TcpListener,
    addr: SocketAddr,
    limits: Limits,
}

/// Bind `addr` (e.g. `127.0.0.1:0` for a free port).
pub fn bind(addr: &str, limits: Limits) -> Result<Bound> {
    let listener = TcpListener::bind(addr).map_err(|e| Error::io(format!("binding {addr}"), e))?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::io("reading the bound address", e))?;
    // Socket timeouts set on the listener are inherited by accepted sockets (Linux copies
    // SO_RCVTIMEO/SO_SNDTIMEO in accept), which is the only place tiny_http lets us set them.
    let as_stream = TcpStream::from(OwnedFd::from(listener));
    as_stream
        .set_read_timeout(Some(limits.read_timeout))
        .map_err(|e| Error::io("setting the read timeout", e))?;
    as_stream
        .set_write_timeout(Some(limits.write_timeout))
        .map_err(|e| Error::io("setting the write timeout", e))?;
    // Small responses go out at once rather than waiting on Nagle's algorithm (Linux copies
    // TCP_NODELAY to accepted sockets too).
    as_stream
        .set_nodelay(true)
        .map_err(|e| Error::io("setting TCP_NODELAY", e))?;
    Ok(Bound {
        listener: TcpListener::from(OwnedFd::from(as_stream)),
        addr: local,
        limits,
    })
}

/// Listen on `addr` and serve `handler` (see [`bind`] and [`Bound::serve`]).
pub fn serve(addr: &str, handler: Handler, limits: Limits, workers: usize) -> Result<Server> {
    bind(addr, limits)?.serve(handler, workers)
}

impl Bound {
    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<host>:<port>` for this socket, with a wildcard bind address (`0.0.0.0`, `::`)
    /// replaced by loopback: a card must never advertise a wildcard.
    pub fn default_public_url(&self) -> String {
        let ip = self.addr.ip();
        if ip.is_unspecified() {
            format!("http://127.0.0.1:{}", self.addr.port())
        } else {
            format!("http://{}", self.addr)
        }
    }

    /// Start serving `handler` on `workers` threads.
    pub fn serve(self, handler: Handler, workers: usize) -> Result<Server> {
        let (local, limits) = (self.addr, self.limits);
        let listener = self
            .listener
            .try_clone()
            .map(|l| TcpStream::from(OwnedFd::from(l)))
            .map_err(|e| Error::io("duplicating the listening socket", e))?;
        let inner = tiny_http::Server::from_listener(self.listener, None).map_err(|e| {
            Error::io(
                format!("serving {local}"),
                std::io::Error::other(e.to_string()),
            )
        })?;
        let inner = Arc::new(inner);
        let stopping = Arc::new(AtomicBool::new(false));
        let workers = (0..workers.max(1))
            .map(|i| {
                let (inner, handler, stopping) = (
                    Arc::clone(&inner),
                    Arc::clone(&handler),
                    Arc::clone(&stopping),
                );
                std::thread::Builder::new()
                    .name(format!("ddwire-http-{i}"))
                    .spawn(move || {
                        loop {
                            match inner.recv() {
                                Ok(request) => handle(request, &handler, &limits, &stopping),
                                Err(_) if stopping.load(Ordering::SeqCst) => break,
                                // tiny_http stops accepting after any accept error and hands the
                                // error to one worker; connections already open are still served.
                                Err(e) => eprintln!(
                                    "ddwire: the listener on {local} stopped accepting: {e}"
                                ),
                            }
                        }
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        let keeper = Some(keep_accepting(
            local,
            limits.read_timeout / 3,
            Arc::clone(&stopping),
        ));
        Ok(Server {
            addr: local,
            inner: Some(inner),
            listener: Some(listener),
            limits,
            workers,
            stopping,
            keeper,
        })
    }
}

/// The listener's receive timeout (set so accepted sockets inherit it) also bounds how long
/// `accept` may wait, and tiny_http's accept thread stops for good at the first accept error.
/// So a keeper connects to the listener every `every`, well within the timeout, and closes
/// at once: `accept` never idles long enough to time out. tiny_http reads the empty
/// connection to its end and drops it.
fn keep_accepting(addr: SocketAddr, every: Duration, stopping: Arc<AtomicBool>) -> JoinHandle<()> {
    let target = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), addr.port())
        }
        _ => addr,
    };
    let tick = Duration::from_millis(50).min(every);
    std::thread::Builder::new()
        .name("ddwire-http-keeper".into())
        .spawn(move || {
            let mut waited = Duration::ZERO;
            while !stopping.load(Ordering::SeqCst) {
                std::thread::sleep(tick);
                waited += tick;
                if waited >= every {
                    waited = Duration::ZERO;
                    let _ = TcpStream::connect_timeout(&target, every);
                }
            }
        })
        .expect("spawning the keeper thread")
}

impl Server {
    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stop, finishing requests in hand.
    pub fn shutdown(mut self) {
        self.stop();
    }

    /// Block the calling thread until the server stops (it stops only when shut down from
    /// another thread or when the process exits).
    pub fn wait(mut self) {
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }

    fn stop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(keeper) = self.keeper.take() {
            let _ = keeper.join();
        }
        // Shutting a listening socket down makes Linux refuse new connections and fail the
        // pending `accept`, which ends tiny_http's accept thread.
        if let Some(listener) = self.listener.take() {
            let _ = listener.shutdown(std::net::Shutdown::Read);
        }
        if let Some(inner) = self.inner.take() {
            for _ in 0..self.workers.len() {
                inner.unblock();
            }
            for w in self.workers.drain(..) {
                let _ = w.join();
            }
            drain(inner, self.limits.read_timeout);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Answer, on a detached thread, every request that reaches a stopped server over a connection
/// kept alive from before, with 503 and `Connection: close`; end once no request has come for
/// `idle` (by then tiny_http has closed every idle connection).
fn drain(inner: Arc<tiny_http::Server>, idle: Duration) {
    let spawned = std::thread::Builder::new()
        .name("ddwire-http-drain".into())
        .spawn(move || {
            let mut last = Instant::now();
            loop {
                match inner.recv_timeout(idle) {
                    Ok(Some(rq)) => {
                        let http10 = *rq.http_version() == (1, 0);
                        let head = *rq.method() == tiny_http::Method::Head;
                        let response = Response::error(503, "the server is shutting down");
                        let _ =
                            write_response(&mut rq.into_writer(), response, http10, false, head);
                        last = Instant::now();
                    }
                    Ok(None) if last.elapsed() >= idle => break,
                    // A wake-up left over from stopping the workers, or the accept error.
                    _ => {}
                }
            }
        });
    // Without a thread to drain them, those requests are dropped and tiny_http answers 500.
    drop(spawned);
}

fn handle(mut rq: tiny_http::Request, handler: &Handler, limits: &Limits, stopping: &AtomicBool) {
    let http10 = *rq.http_version() == (1, 0);
    let method = rq.method().as_str().to_ascii_uppercase();
    let (path, query) = super::split_target(rq.url());
    let mut head_bytes = method.len() + rq.url().len() + 12;
    let headers: Vec<(String, String)> = rq
        .headers()
        .iter()
        .map(|h| {
            head_bytes += h.field.as_str().len() + h.value.as_str().len() + 4;
            (
                h.field.as_str().as_str().to_ascii_lowercase(),
                h.value.as_str().to_string(),
            )
        })
        .collect();
    let remote_addr = rq.remote_addr().copied();
    let connection = headers
        .iter()
        .find(|(k, _)| k == "connection")
        .map(|(_, v)| v.clone());
    // A server that is stopping answers what it holds and closes the connection.
    let mut keep_alive =
        !wants_close(http10, connection.as_deref()) && !stopping.load(Ordering::SeqCst);

    let response = if head_bytes > limits.max_header_bytes || headers.len() > limits.max_headers {
        keep_alive = false;
        Response::error(
            431,
            &format!(
                "request head of {head_bytes} bytes and {} fields exceeds the limit of {} bytes or {} fields",
                headers.len(),
                limits.max_header_bytes,
                limits.max_headers
            ),
        )
    } else {
        let (body, body_error) = read_body(&mut rq, limits.max_body_bytes);
        if body_error.is_some() {
            // What is left of the body cannot be skipped safely: close after answering.
            keep_alive = false;
        }
        let request = Request {
            method: method.clone(),
            path,
            query,
            headers,
            body,
            body_error,
            remote_addr,
        };
        call(handler, request)
    };
    let mut writer = rq.into_writer();
    // A peer that went away mid-response is not an error worth more than dropping the line.
    let _ = write_response(&mut writer, response, http10, keep_alive, method == "HEAD");
}

/// Call the handler; a panic inside it becomes a 500 instead of a dead worker.
pub(crate) fn call(handler: &Handler, request: Request) -> Response {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(request))) {
        Ok(response) => response,
        Err(_) => Response::error(500, "internal error: the request handler panicked"),
    }
}

fn read_body(rq: &mut tiny_http::Request, limit: usize) -> (Vec<u8>, Option<BodyError>) {
    if rq.body_length().is_some_and(|n| n > limit) {
        return (Vec::new(), Some(BodyError::TooLarge { limit }));
    }
    let mut body = Vec::with_capacity(rq.body_length().unwrap_or(0).min(limit));
    match rq.as_reader().take(limit as u64 + 1).read_to_end(&mut body) {
        Ok(_) if body.len() > limit => (Vec::new(), Some(BodyError::TooLarge { limit })),
        Ok(_) => (body, None),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ) =>
        {
            (Vec::new(), Some(BodyError::Timeout))
        }
        Err(e) => (Vec::new(), Some(BodyError::Malformed(e.to_string()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::http::client::{ClientRequest, HttpClient};

    #[test]
    fn the_listener_keeps_accepting_after_idling_past_the_read_timeout() {
        let limits = Limits {
            read_timeout: Duration::from_millis(300),
            ..Limits::DEFAULT
        };
        let ok: Handler = Arc::new(|_| Response::empty(204));
        let server = serve("127.0.0.1:0", ok, limits, 2).unwrap();
        std::thread::sleep(Duration::from_millis(1200));
        let r = HttpClient::tcp()
            .send(ClientRequest::get(
                server.base_url(),
                Duration::from_secs(5),
            ))
            .unwrap();
        assert_eq!(r.status, 204);
        server.shutdown();
    }

    #[test]
    fn a_stopped_server_answers_a_kept_alive_connection_with_503_and_refuses_new_ones() {
        use std::io::{BufRead, BufReader, Write};
        let ok: Handler = Arc::new(|_| Response::empty(204));
        let server = serve("127.0.0.1:0", ok, Limits::DEFAULT, 2).unwrap();
        let addr = server.local_addr();
        let mut kept = TcpStream::connect(addr).unwrap();
        kept.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        kept.write_all(get).unwrap();
        let mut reader = BufReader::new(kept.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.starts_with("HTTP/1.1 204"), "{line}");
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
        }
        server.shutdown();
        assert!(TcpStream::connect(addr).is_err());
        kept.write_all(get).unwrap();
        // The answer is complete once its JSON body is (tiny_http, not ddwire, owns the socket,
        // so the connection closes when the client closes it or after the read timeout).
        let mut rest = String::new();
        while !rest.ends_with('}') {
            let mut chunk = [0u8; 512];
            let n = std::io::Read::read(&mut reader, &mut chunk).unwrap();
            assert!(n > 0, "{rest}");
            rest.push_str(std::str::from_utf8(&chunk[..n]).unwrap());
        }
        assert!(rest.starts_with("HTTP/1.1 503"), "{rest}");
        assert!(
            rest.to_ascii_lowercase().contains("connection: close"),
            "{rest}"
        );
        assert!(rest.contains("shutting down"), "{rest}");
    }
}
