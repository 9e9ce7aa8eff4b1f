//! Measuring: a closed-loop HTTP load generator, latency percentiles, resident memory.
//!
//! The generator keeps `concurrency` keep-alive connections, each sending one request and
//! waiting for its response before the next (closed loop), with HTTP/1.1 written and read by
//! ddwire's own sans-IO writer and parser, so the client costs as little as possible. It measures any HTTP server the same
//! way, so ddwire, the Python a2a-sdk and nginx are compared by one yardstick.
//! Figures are printed, never asserted: timings belong in benchmarks, not tests.
//!
//! It reads responses with ddwire's public HTTP parser (`wire::http::head::parse_response`
//! and `wire::http::body::BodyReader`), so a made-up `Content-Length` is refused by the
//! reader, never allocated or waited for (the reader's own tests prove that).

use ddwire::wire::http::body::BodyReader;
use ddwire::wire::http::head;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One load run's settings.
#[derive(Clone, Debug)]
pub struct Load {
    pub addr: SocketAddr,
    /// The complete HTTP/1.1 request, sent as is on every iteration.
    pub request: Vec<u8>,
    pub concurrency: usize,
    /// How long to measure, after `warmup`.
    pub duration: Duration,
    pub warmup: Duration,
    /// Stop after this many measured requests, if sooner than `duration`.
    pub max_requests: Option<u64>,
}

/// What a load run measured.
#[derive(Clone, Debug)]
pub struct Report {
    pub requests: u64,
    pub errors: u64,
    pub elapsed: Duration,
    /// Latencies in microseconds, sorted.
    pub latencies_us: Vec<u32>,
    /// Status codes other than 200 seen, with counts.
    pub other_statuses: Vec<(u16, u64)>,
}

impl Report {
    /// Requests per second.
    pub fn rps(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    /// The latency at quantile `q` (0..=1), in microseconds.
    pub fn percentile_us(&self, q: f64) -> u32 {
        if self.latencies_us.is_empty() {
            return 0;
        }
        let i = ((self.latencies_us.len() - 1) as f64 * q).round() as usize;
        self.latencies_us[i]
    }

    /// One line: requests/s, p50, p99, errors.
    pub fn summary(&self) -> String {
        format!(
            "{:>9.0} req/s  p50 {:>7.3} ms  p99 {:>7.3} ms  ({} requests, {} errors{})",
            self.rps(),
            f64::from(self.percentile_us(0.50)) / 1000.0,
            f64::from(self.percentile_us(0.99)) / 1000.0,
            self.requests,
            self.errors,
            if self.other_statuses.is_empty() {
                String::new()
            } else {
                format!(", statuses {:?}", self.other_statuses)
            }
        )
    }
}

/// Resolve `host:port` from a URL like `http://127.0.0.1:8107/a2a`: (address, host, path).
pub fn parse_url(url: &str) -> Result<(SocketAddr, String, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: only http:// URLs"))?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let with_port = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    let addr = with_port
        .to_socket_addrs()
        .map_err(|e| format!("resolving {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} resolves to nothing"))?;
    Ok((addr, host.to_string(), path.to_string()))
}

/// The HTTP/1.1 bytes of a request: request line, `Host`, the given fields, and
/// `Content-Length` when there is a body or the method carries one.
pub fn http_request(
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut out = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if !matches!(method, "GET" | "HEAD") || !body.is_empty() {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// Run a closed-loop load and report.
pub fn run(load: &Load) -> Report {
    let start = Instant::now();
    let warm_until = start + load.warmup;
    let stop_at = warm_until + load.duration;
    let budget = AtomicU64::new(load.max_requests.unwrap_or(u64::MAX));
    let per_thread: Vec<(u64, u64, Vec<u32>, Vec<u16>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..load.concurrency.max(1))
            .map(|_| s.spawn(|| worker(load, warm_until, stop_at, &budget)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut latencies: Vec<u32> = Vec::new();
    let (mut requests, mut errors) = (0, 0);
    let mut statuses: Vec<(u16, u64)> = Vec::new();
    for (r, e, l, st) in per_thread {
        requests += r;
        errors += e;
        latencies.extend(l);
        for s in st {
            match statuses.iter_mut().find(|(code, _)| *code == s) {
                Some(slot) => slot.1 += 1,
                None => statuses.push((s, 1)),
            }
        }
    }
    latencies.sort_unstable();
    // With a request budget the run may end before its duration.
    let elapsed = Instant::now()
        .min(stop_at)
        .saturating_duration_since(warm_until);
    Report {
        requests,
        errors,
        elapsed,
        latencies_us: latencies,
        other_statuses: statuses,
    }
}

/// The method of a request's bytes (`HEAD` changes how its response is framed).
fn request_method(request: &[u8]) -> String {
    let end = request.iter().position(|&b| b == b' ').unwrap_or(0);
    String::from_utf8_lossy(&request[..end]).into_owned()
}

fn connect(addr: SocketAddr) -> Option<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_nodelay(true).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    Some(s)
}

fn worker(
    load: &Load,
    warm_until: Instant,
    stop_at: Instant,
    budget: &AtomicU64,
) -> (u64, u64, Vec<u32>, Vec<u16>) {
    let mut latencies = Vec::with_capacity(100_000);
    let (mut requests, mut errors) = (0u64, 0u64);
    let mut statuses = Vec::new();
    let mut stream: Option<TcpStream> = None;
    let mut buf = vec![0u8; 64 * 1024];
    let method = request_method(&load.request);
    loop {
        let now = Instant::now();
        if now >= stop_at || (now >= warm_until && budget.load(Ordering::Relaxed) == 0) {
            break;
        }
        if stream.is_none() {
            stream = connect(load.addr);
            if stream.is_none() {
                errors += 1;
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        }
        let s = stream.as_mut().expect("connected above");
        let sent = Instant::now();
        let outcome = s
            .write_all(&load.request)
            .ok()
            .and_then(|_| read_response(s, &mut buf, &method));
        let took = sent.elapsed();
        match outcome {
            Some((status, keep_alive)) => {
                if sent >= warm_until {
                    let _ = budget
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1));
                    requests += 1;
                    latencies.push(took.as_micros().min(u128::from(u32::MAX)) as u32);
                    if status != 200 {
                        statuses.push(status);
                    }
                }
                if !keep_alive {
                    stream = None;
                }
            }
            None => {
                errors += 1;
                stream = None;
            }
        }
    }
    (requests, errors, latencies, statuses)
}

/// Read one response with the client half of the server's own parser; `(status,
/// keep-alive)`. Bytes after the response (none, in a closed loop) are dropped.
fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>, method: &str) -> Option<(u16, bool)> {
    let mut filled = 0;
    let head = loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = s.read(&mut buf[filled..]).ok()?;
        if n == 0 {
            return None;
        }
        filled += n;
        if let Some(head) = head::parse_response(&buf[..filled], method, MAX_HEAD).ok()? {
            break head;
        }
    };
    // The body is read and dropped: only its framing matters here. A length the peer made up
    // is refused by the reader, never allocated or waited for.
    let mut reader = BodyReader::new(head.framing, MAX_RESPONSE_BYTES).ok()?;
    let mut sink = Vec::new();
    let mut fed = reader.feed(&buf[head.len..filled], &mut sink).ok()?;
    while !fed.done {
        sink.clear();
        let n = s.read(buf).ok()?;
        if n == 0 {
            reader.end_of_input().ok()?;
            break;
        }
        fed = reader.feed(&buf[..n], &mut sink).ok()?;
    }
    Some((head.status, head.keep_alive))
}

/// The largest response head the generator reads.
const MAX_HEAD: usize = 64 * 1024;
/// The largest response body the load generator reads; a bigger one counts as an error.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// This process's resident set size in KiB (Linux `/proc/self/status` `VmRSS`).
pub fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
