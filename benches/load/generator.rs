//! Measuring: a closed-loop HTTP load generator, latency percentiles, resident memory.
//!
//! The generator keeps `concurrency` keep-alive connections, each sending one request and
//! waiting for its response before the next (closed loop), with HTTP/1.1 written and read by
//! ddwire's own sans-IO writer and parser, so the client costs as little as possible. It measures any HTTP server the same
//! way, so ddwire, the Python a2a-sdk and nginx are compared by one yardstick.
//! Figures are printed, never asserted: timings belong in benchmarks, not tests.
//!
//! It reads responses with ddwire's own HTTP parser (the response-head parser and body reader,
//! crate-private, reached through the hidden `ddwire::fuzz::read_response`), so a made-up
//! `Content-Length` is refused by the reader, never allocated or waited for (the reader's own
//! tests prove that).

use std::io::Write;
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
    /// The whole process's CPU time (user + system) over the measured window, when the run
    /// had no request budget (every thread of it: generator, servers, their helpers).
    pub cpu: Option<Duration>,
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

    /// The process's CPU time per measured request, in microseconds.
    pub fn cpu_us_per_request(&self) -> Option<f64> {
        let cpu = self.cpu?;
        (self.requests > 0).then(|| cpu.as_secs_f64() * 1e6 / self.requests as f64)
    }

    /// One line: requests/s, p50, p99, errors, and CPU per request when measured.
    pub fn summary(&self) -> String {
        format!(
            "{:>9.0} req/s  p50 {:>7.3} ms  p99 {:>7.3} ms  ({} requests, {} errors{}){}",
            self.rps(),
            f64::from(self.percentile_us(0.50)) / 1000.0,
            f64::from(self.percentile_us(0.99)) / 1000.0,
            self.requests,
            self.errors,
            if self.other_statuses.is_empty() {
                String::new()
            } else {
                format!(", statuses {:?}", self.other_statuses)
            },
            match (self.cpu_us_per_request(), self.cpu) {
                (Some(per), Some(cpu)) => format!(
                    "  cpu {per:.0} us/req, {:.2} cores busy",
                    cpu.as_secs_f64() / self.elapsed.as_secs_f64().max(1e-9)
                ),
                _ => String::new(),
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
    let mut cpu = None;
    let per_thread: Vec<(u64, u64, Vec<u32>, Vec<u16>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..load.concurrency.max(1))
            .map(|_| s.spawn(|| worker(load, warm_until, stop_at, &budget)))
            .collect();
        // With no budget the window is fixed, so the process's CPU over exactly it can be
        // read from here; with one, the run may end at any moment and this is skipped.
        if load.max_requests.is_none() {
            cpu = cpu_between(warm_until, stop_at);
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut latencies: Vec<u32> = Vec::new();
    let (mut requests, mut errors) = (0, 0);
    let mut statuses = Vec::new();
    for (r, e, l, st) in per_thread {
        requests += r;
        errors += e;
        latencies.extend(l);
        statuses.extend(st);
    }
    let statuses = count_statuses(statuses);
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
        cpu,
    }
}

/// This process's CPU time so far, user and system, from `/proc/self/stat` (fields 14 and
/// 15, in clock ticks; `proc(5)`). The ticks are taken as 100 per second, which is what
/// Linux reports to user space on every architecture it builds for (`USER_HZ`).
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name, field 2, is in parentheses and may hold spaces: count after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// Sleep until `from`, then until `to`: the process's CPU time between the two.
fn cpu_between(from: Instant, to: Instant) -> Option<Duration> {
    std::thread::sleep(from.saturating_duration_since(Instant::now()));
    let before = process_cpu();
    std::thread::sleep(to.saturating_duration_since(Instant::now()));
    before.zip(process_cpu()).map(|(b, a)| a.saturating_sub(b))
}

/// How [`alternate`] shares its time between two servers.
#[derive(Clone, Copy, Debug)]
pub struct Alternation {
    /// The length of one window; each window drives one server.
    pub window: Duration,
    /// How much of a window that follows the other server's is left uncounted, so work the
    /// other server left running (its requests in flight, its queued background work) is not
    /// counted against this one.
    pub settle: Duration,
    /// How many windows after the warm-up, rounded up to a multiple of four (whole A B B A
    /// cycles), so each server gets half.
    pub windows: usize,
    pub warmup: Duration,
}

/// The two servers' shares of an [`alternate`] run, and the change cycle by cycle.
#[derive(Clone, Debug)]
pub struct Alternated {
    pub a: Report,
    pub b: Report,
    /// For each four-window cycle (A B B A), B's throughput over A's, minus one, in percent.
    pub cycles: Vec<f64>,
}

/// The server that window `i` drives: A B B A, again and again, so a steady drift favours
/// neither (each cycle is symmetric in time), and a switch happens every other window.
fn owner(i: usize) -> usize {
    [0, 1, 1, 0][i % 4]
}

/// Drive two servers with one set of connections, in windows that take turns. Each of the
/// `concurrency` closed-loop workers keeps a keep-alive connection to both for the whole run
/// and sends each request to the server that owns the window it is sent in. A response
/// counts for its server if it completes in one of that server's windows, outside the
/// settling time after a switch.
///
/// Two phases run one after the other differ in more than the servers: fresh connections
/// land on fresh server threads, with their own allocator arenas and places on the cores, and
/// each phase draws its own lot (on a 2-core machine, 5-second phases of one server differ by
/// ±10–20%). Here both servers keep the same connections and threads throughout, and their
/// turns are short and many, so what differs between their counts is the servers.
pub fn alternate(a: &Load, b: &Load, plan: Alternation) -> Alternated {
    let windows = plan.windows.div_ceil(4).max(1) * 4;
    let start = Instant::now();
    let measured_from = start + plan.warmup;
    let stop_at = measured_from + plan.window * windows as u32;
    let loads = [a, b];
    // The counted span of window i: its settling time is left out after a switch.
    let counted = |i: usize| {
        let from = measured_from + plan.window * i as u32;
        let switched = i == 0 || owner(i) != owner(i - 1);
        (
            if switched {
                from + plan.settle.min(plan.window)
            } else {
                from
            },
            from + plan.window,
        )
    };
    let window_of = |t: Instant| -> Option<usize> {
        let i = t.checked_duration_since(measured_from)?.as_nanos() / plan.window.as_nanos();
        (i < windows as u128).then_some(i as usize)
    };
    // Per worker, per server: requests, errors, latencies, statuses; and per window, counts.
    type Tally = (u64, u64, Vec<u32>, Vec<u16>);
    let mut cpu: [Option<Duration>; 2] = [Some(Duration::ZERO); 2];
    let results: Vec<([Tally; 2], Vec<u64>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.concurrency.max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut tallies: [Tally; 2] = Default::default();
                    let mut per_window = vec![0u64; windows];
                    let mut streams: [Option<TcpStream>; 2] = [None, None];
                    let mut buf = vec![0u8; 64 * 1024];
                    let methods = [request_method(&a.request), request_method(&b.request)];
                    loop {
                        let now = Instant::now();
                        if now >= stop_at {
                            break;
                        }
                        let turn = window_of(now).map_or(
                            // Warm-up: alternate by window length too, so both are warm.
                            (now.duration_since(start).as_nanos() / plan.window.as_nanos())
                                as usize
                                % 2,
                            owner,
                        );
                        let tally = &mut tallies[turn];
                        let answer =
                            exchange(&mut streams[turn], loads[turn], &mut buf, &methods[turn]);
                        match answer {
                            Exchange::Answered { status, sent, done } => {
                                if let Some(i) = window_of(done)
                                    && owner(i) == turn
                                    && done >= counted(i).0
                                {
                                    tally.0 += 1;
                                    per_window[i] += 1;
                                    tally.2.push(micros(done - sent));
                                    if status != 200 {
                                        tally.3.push(status);
                                    }
                                }
                            }
                            Exchange::Failed => tally.1 += 1,
                        }
                    }
                    (tallies, per_window)
                })
            })
            .collect();
        // The process's CPU over each window's counted span, to the window's server.
        for i in 0..windows {
            let (from, to) = counted(i);
            let spent = cpu_between(from, to);
            cpu[owner(i)] = cpu[owner(i)].zip(spent).map(|(sum, x)| sum + x);
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut per_window = vec![0u64; windows];
    let mut merged: [Tally; 2] = Default::default();
    for (tallies, counts) in results {
        for (w, c) in per_window.iter_mut().zip(counts) {
            *w += c;
        }
        for (m, t) in merged.iter_mut().zip(tallies) {
            m.0 += t.0;
            m.1 += t.1;
            m.2.extend(t.2);
            m.3.extend(t.3);
        }
    }
    let counted_time = |server: usize, range: std::ops::Range<usize>| -> Duration {
        range
            .filter(|&i| owner(i) == server)
            .map(|i| {
                let (from, to) = counted(i);
                to - from
            })
            .sum()
    };
    let cycles = (0..windows / 4)
        .map(|c| {
            let range = c * 4..c * 4 + 4;
            let rate = |server: usize| {
                let n: u64 = range
                    .clone()
                    .filter(|&i| owner(i) == server)
                    .map(|i| per_window[i])
                    .sum();
                n as f64 / counted_time(server, range.clone()).as_secs_f64().max(1e-9)
            };
            (rate(1) / rate(0).max(1e-9) - 1.0) * 100.0
        })
        .collect();
    let [ta, tb] = merged;
    let report = |t: Tally, server: usize| {
        let (requests, errors, mut latencies, statuses) = t;
        latencies.sort_unstable();
        Report {
            requests,
            errors,
            elapsed: counted_time(server, 0..windows),
            latencies_us: latencies,
            other_statuses: count_statuses(statuses),
            cpu: cpu[server],
        }
    };
    Alternated {
        a: report(ta, 0),
        b: report(tb, 1),
        cycles,
    }
}

/// Each status code seen, with how often.
fn count_statuses(seen: Vec<u16>) -> Vec<(u16, u64)> {
    let mut counts: Vec<(u16, u64)> = Vec::new();
    for s in seen {
        match counts.iter_mut().find(|(code, _)| *code == s) {
            Some(slot) => slot.1 += 1,
            None => counts.push((s, 1)),
        }
    }
    counts
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
        match exchange(&mut stream, load, &mut buf, &method) {
            Exchange::Answered { status, sent, done } => {
                if sent >= warm_until {
                    let _ = budget
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1));
                    requests += 1;
                    latencies.push(micros(done - sent));
                    if status != 200 {
                        statuses.push(status);
                    }
                }
            }
            Exchange::Failed => errors += 1,
        }
    }
    (requests, errors, latencies, statuses)
}

/// How one request went.
enum Exchange {
    /// A response came back: its status, and when the request was sent and answered.
    Answered {
        status: u16,
        sent: Instant,
        done: Instant,
    },
    /// No connection could be made (after a 10 ms pause, so a refusing server is not
    /// hammered), or the request or its response failed on it.
    Failed,
}

/// Send `load`'s request on `stream` (connecting first if it is closed) and read the response;
/// the stream is closed after a failure or a response that does not keep it alive.
fn exchange(
    stream: &mut Option<TcpStream>,
    load: &Load,
    buf: &mut Vec<u8>,
    method: &str,
) -> Exchange {
    if stream.is_none() {
        *stream = connect(load.addr);
        if stream.is_none() {
            std::thread::sleep(Duration::from_millis(10));
            return Exchange::Failed;
        }
    }
    let s = stream.as_mut().expect("connected above");
    let sent = Instant::now();
    let outcome = s
        .write_all(&load.request)
        .ok()
        .and_then(|_| read_response(s, buf, method));
    let done = Instant::now();
    match outcome {
        Some((status, keep_alive)) => {
            if !keep_alive {
                *stream = None;
            }
            Exchange::Answered { status, sent, done }
        }
        None => {
            *stream = None;
            Exchange::Failed
        }
    }
}

/// A latency in whole microseconds, as the reports keep it.
fn micros(took: Duration) -> u32 {
    took.as_micros().min(u128::from(u32::MAX)) as u32
}

/// Read one response with the client half of the server's own parser; `(status,
/// keep-alive)`. Bytes after the response (none, in a closed loop) are dropped.
fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>, method: &str) -> Option<(u16, bool)> {
    ddwire::fuzz::read_response(s, buf, method, MAX_HEAD, MAX_RESPONSE_BYTES)
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
