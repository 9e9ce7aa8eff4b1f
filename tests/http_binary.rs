//! The built binary's HTTP server under the probes that need a process of its own: its
//! resident memory under a gigabyte of header bytes (read from /proc), its accept loop when
//! the process runs out of file descriptors (`ulimit -n 64`), and the `--max-connections`
//! flag. Every child is killed when its test ends, pass or fail.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(10);

/// `ddwire agent echo` on a free port, its stderr collected; killed on drop.
struct Agent {
    child: Child,
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Agent {
    /// Start `ddwire agent echo --port 0 EXTRA...`, under `sh -c 'ulimit -n N; exec ...'`
    /// when `fd_limit` is given.
    fn start(extra: &[&str], fd_limit: Option<u32>) -> Agent {
        let bin = env!("CARGO_BIN_EXE_ddwire");
        let mut command = match fd_limit {
            Some(n) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(bin);
                c
            }
            None => Command::new(bin),
        };
        command
            .args(["agent", "echo", "--port", "0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("the binary starts");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if let Some(rest) = line.split("listening on http://").nth(1) {
                        let addr = rest.split_whitespace().next().unwrap_or("").to_string();
                        let _ = tx.send(addr);
                    }
                    log.lock().unwrap().push(line);
                }
            });
        }
        let addr = rx
            .recv_timeout(T)
            .expect("the agent prints its address")
            .parse()
            .unwrap();
        Agent { child, addr, log }
    }

    /// Resident memory, KiB (`VmRSS` in /proc/PID/status).
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmRSS in /proc")
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET the card on a fresh connection: the status, or `None` if the connection failed.
fn get_card(addr: SocketAddr) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(
        b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .ok()?;
    let mut text = Vec::new();
    s.read_to_end(&mut text).ok()?;
    let text = String::from_utf8_lossy(&text);
    text.get(9..12)?.parse().ok()
}

#[test]
fn memory_stays_flat_under_a_gigabyte_of_header_bytes() {
    let agent = Agent::start(&[], None);
    for _ in 0..20 {
        assert_eq!(get_card(agent.addr), Some(200));
    }
    let before = agent.rss_kib();
    const TOTAL: u64 = 1 << 30;
    let sent = Arc::new(AtomicU64::new(0));
    let refused_431 = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(before));
    let sampler = {
        let (done, peak, pid) = (Arc::clone(&done), Arc::clone(&peak), agent.child.id());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
                    && let Some(kib) = status
                        .lines()
                        .find_map(|l| l.strip_prefix("VmRSS:"))
                        .and_then(|v| v.split_whitespace().next())
                        .and_then(|v| v.parse::<u64>().ok())
                {
                    peak.fetch_max(kib, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    // Four streams of header bytes with no line end, as the attack that drove tiny_http to
    // 1.5 GiB; each reconnects when the server closes on it, until 1 GiB has gone out.
    let started = Instant::now();
    let streams: Vec<_> = (0..4)
        .map(|_| {
            let (sent, refused_431, addr) =
                (Arc::clone(&sent), Arc::clone(&refused_431), agent.addr);
            std::thread::spawn(move || {
                let chunk = vec![b'a'; 64 * 1024];
                while sent.load(Ordering::SeqCst) < TOTAL
                    && started.elapsed() < Duration::from_secs(120)
                {
                    let mut s = TcpStream::connect(addr).unwrap();
                    s.set_write_timeout(Some(T)).unwrap();
                    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                    let mut reader = s.try_clone().unwrap();
                    let seen = std::thread::spawn(move || {
                        let mut head = [0u8; 12];
                        reader.read_exact(&mut head).is_ok() && &head == b"HTTP/1.1 431"
                    });
                    let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Flood: ");
                    while sent.load(Ordering::SeqCst) < TOTAL {
                        match s.write(&chunk) {
                            Ok(n) if n > 0 => {
                                sent.fetch_add(n as u64, Ordering::SeqCst);
                            }
                            _ => break,
                        }
                    }
                    if seen.join().unwrap_or(false) {
                        refused_431.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    for s in streams {
        s.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    sampler.join().unwrap();
    let (peak, after) = (peak.load(Ordering::SeqCst), agent.rss_kib());
    eprintln!(
        "1 GiB of header bytes in {:.1} s: RSS {before} KiB before, peak {peak} KiB, {after} KiB after; {} connections answered 431",
        started.elapsed().as_secs_f64(),
        refused_431.load(Ordering::SeqCst)
    );
    assert!(
        sent.load(Ordering::SeqCst) >= TOTAL,
        "only {} bytes went out",
        sent.load(Ordering::SeqCst)
    );
    // Four connection threads, each with its 16 KiB head buffer and a stack: a few MiB at
    // most. tiny_http grew by the gigabyte.
    assert!(
        peak < before + 24 * 1024,
        "RSS grew from {before} KiB to {peak} KiB"
    );
    assert!(refused_431.load(Ordering::SeqCst) >= 1);
    assert_eq!(get_card(agent.addr), Some(200));
}

#[test]
fn the_server_accepts_again_after_a_file_descriptor_flood_ends() {
    let agent = Agent::start(&[], Some(64));
    assert_eq!(get_card(agent.addr), Some(200));
    // More connections than the process has descriptors for, held open.
    let mut flood = Vec::new();
    for _ in 0..120 {
        if let Ok(s) = TcpStream::connect_timeout(&agent.addr, Duration::from_secs(2)) {
            flood.push(s);
        }
    }
    // Past the limit, a connection is answered at once with 503, not left in the backlog.
    let deadline = Instant::now() + T;
    let during = loop {
        let status = get_card(agent.addr);
        if status == Some(503) || Instant::now() > deadline {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(during, Some(503), "log: {:?}", agent.log());
    drop(flood);
    // The flood is over: served again, promptly.
    let ended = Instant::now();
    let deadline = ended + T;
    loop {
        if get_card(agent.addr) == Some(200) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never served again; log: {:?}",
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let recovered = ended.elapsed();
    eprintln!("fd flood under ulimit -n 64: served again {recovered:?} after it ended");
    assert!(recovered < Duration::from_secs(5), "{recovered:?}");
    // The process is up, and logged the burst once, then its end.
    assert!(agent.child.id() > 0);
    let log = agent.log();
    let out_of_fds = log.iter().filter(|l| l.contains("cannot accept")).count();
    assert_eq!(out_of_fds, 1, "{log:?}");
    let deadline = Instant::now() + T;
    while !agent.log().iter().any(|l| l.contains("accepting again")) {
        assert!(Instant::now() < deadline, "{:?}", agent.log());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn max_connections_caps_the_agent_server() {
    let agent = Agent::start(&["--max-connections", "2"], None);
    let held: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(agent.addr).unwrap())
        .collect();
    // The two are accepted first (the accept loop takes connections in order).
    std::thread::sleep(Duration::from_millis(300));
    let mut s = TcpStream::connect(agent.addr).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    s.write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("limit of 2 connections"), "{text}");
    drop(held);
    let deadline = Instant::now() + T;
    while get_card(agent.addr) != Some(200) {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
}
