//! The benchmarks: figures printed, never asserted (timings belong here, not in tests).
//!
//! ```sh
//! cargo bench --bench load -- agent      # A2A echo agent: requests/s, p50/p99, keep-alive loopback
//! cargo bench --bench load -- harness    # caller -> harness -> agent -> store, overhead and memory
//! cargo bench --bench load -- harness --otlp     # and a harness exporting each run over OTLP
//! cargo bench --bench load -- harness --signed   # every call to the agent signed
//! cargo bench --bench load -- sign       # signing and verifying alone, per call and MB/s
//! cargo bench --bench load -- fsync --runs DIR   # one fsync round on DIR's file system
//! ```
//!
//! A `[[bench]]` target with its own `main` (`harness = false`), built only by `cargo bench`
//! (and `cargo clippy --all-targets`), so the load generator and these drivers are no part of
//! ddwire's library or binary. It uses nothing but ddwire's public API.
//! `benches/agent.sh` and `benches/harness.sh` run it with the comparisons.

mod generator;

use ddwire::agent::builtin::Echo;
use ddwire::harness::conductor::Conductor;
use ddwire::harness::identity::{Authenticator, demo_principal};
use ddwire::harness::policy::Profile;
use ddwire::harness::registry::{Registry, RemoteAgent};
use ddwire::harness::server::{Harness, handler};
use ddwire::harness::store::RunStore;
use ddwire::trace::otlp::Encoding;
use ddwire::wire::a2a::client::{A2aClient, DEFAULT_TIMEOUT};
use ddwire::wire::http;
use ddwire::wire::otlp::{Exporter, ExporterOptions, OtlpConfig};
use ddwire::wire::sign::Key;
use generator::{Load, Report};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

const USAGE: &str = "Usage: cargo bench --bench load -- agent [--url URL] [--get] [--concurrency N] [--seconds S] [--binding 0.3|1.0]\n       \
            cargo bench --bench load -- harness [--concurrency N] [--seconds S] [--count N] [--stages N] [--runs DIR] [--signed] [--otlp [--windows N] [--window-ms M] [--settle-ms M]]\n       \
            cargo bench --bench load -- relay [--concurrency N] [--seconds S] [--binding 0.3|1.0] [--traces DIR]\n       \
            cargo bench --bench load -- sign [--count N]\n       \
            cargo bench --bench load -- fsync --runs DIR [--seconds S]";

const DETAILS: &str = "agent: drives an A2A echo agent with message/send (or SendMessage) over\n\
              keep-alive loopback connections, closed loop, and prints requests/s and p50/p99\n\
              latency. Without --url it serves ddwire's echo agent in this process on a free\n\
              loopback port. With --url it drives any A2A server (the Python a2a-sdk echo\n\
              server, for one) with the same request; with --get it sends plain GETs to URL\n\
              (a static nginx file, for one), so every server is measured by one yardstick.\n\n\
              harness: end-to-end invocations, caller -> harness -> echo agent -> run\n\
              store, against the same echo agent called directly; prints invocations/s, p50/p99,\n\
              the harness's overhead over the direct call, and this process's resident memory\n\
              before and after --count runs (default 100,000; 0 skips it). Runs go to a\n\
              temporary store (removed after) unless --runs names one. With --signed the harness\n\
              shares a key with its echo agent and signs every call (HMAC-SHA256, verified by the\n\
              agent); the direct call stays unsigned, so the overhead includes signing and\n\
              verifying. With --otlp, a second harness that exports each run over OTLP\n\
              (http/protobuf, to a sink in this process) is measured against the first: the\n\
              two take turns over one set of connections, in --windows windows (default 120)\n\
              of --window-ms (default 500), A B B A, each window after a switch counted only\n\
              after --settle-ms (default 150, past the exporter's 50 ms linger). Printed: the\n\
              change in throughput, its spread over the 4-window cycles, and this process's\n\
              CPU time per run (all its threads: generator, harnesses, agent, exporter, sink).\n\
              Then, unless --stages 0, --stages invocations (default 2,000) one at a time\n\
              straight into a conductor of the same kind (its store beside the first), timing\n\
              each stage: where one run's time goes, and (at --concurrency 1) what the wire\n\
              adds around it.\n\n\
              sign: the cost of the request signature alone, in this process: signing and\n\
              verifying (nonce cache included) --count times (default 20,000) for bodies of\n\
              1 KiB, 64 KiB and 1 MiB, in microseconds per call and MB/s.\n\n\
              fsync: one fsync round as the run store's journal pays it on the file system\n\
              of --runs: an 8 KiB append and fdatasync, again and again; prints p50/p99.\n\n\
              relay: caller -> ddwire relay -> echo agent (POST /peers/echo/a2a, so every call is\n\
              a SERVER and a CLIENT span, its trace context injected), against the same echo\n\
              agent called directly; prints both, and the relay's overhead at p50 and p99. With\n\
              --traces DIR the relay also appends each hop's spans to DIR/<contextId>.jsonl.\n\n\
              benches/agent.sh and benches/harness.sh run them with the comparisons.";

/// Flags that take a value, and switches.
const VALUED: &[&str] = &[
    "url",
    "concurrency",
    "seconds",
    "binding",
    "count",
    "runs",
    "traces",
    "windows",
    "window-ms",
    "settle-ms",
    "stages",
];
const SWITCHES: &[&str] = &["get", "signed", "otlp"];

/// The command line after the benchmark's name: `--flag value`, `--flag=value`, switches.
#[derive(Default)]
struct Args {
    values: HashMap<String, String>,
    switches: Vec<String>,
}

impl Args {
    fn parse(args: &[String]) -> Result<Args, String> {
        let mut parsed = Args::default();
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            let flag = arg
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {arg:?}\n{USAGE}"))?;
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (flag, None),
            };
            if SWITCHES.contains(&name) && inline.is_none() {
                parsed.switches.push(name.to_string());
            } else if VALUED.contains(&name) {
                let value = match inline {
                    Some(v) => v,
                    None => iter
                        .next()
                        .cloned()
                        .ok_or_else(|| format!("--{name} needs a value"))?,
                };
                parsed.values.insert(name.to_string(), value);
            } else {
                return Err(format!("unknown option --{name}\n{USAGE}"));
            }
        }
        Ok(parsed)
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    fn number<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        match self.value(name) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| format!("--{name} expects a number, got {v:?}")),
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench` to a benchmark that has no test harness; it means nothing
    // here.
    let argv: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if argv.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}\n\n{DETAILS}");
        return;
    }
    let code = match argv.split_first() {
        None => {
            eprintln!("{USAGE}");
            2
        }
        Some((name, rest)) => match Args::parse(rest).and_then(|args| bench(name, &args)) {
            Ok(code) => code,
            Err(message) => {
                eprintln!("bench {name}: {message}");
                2
            }
        },
    };
    std::process::exit(code);
}

fn bench(name: &str, args: &Args) -> Result<i32, String> {
    match name {
        "agent" => agent(args),
        "harness" => harness(args),
        "sign" => sign(args),
        "fsync" => fsync(args),
        "relay" => relay(args),
        other => Err(format!(
            "unknown benchmark {other:?}; try `agent`, `harness`, `relay`, `sign` or `fsync`"
        )),
    }
}

/// A key with a fresh random secret, as `ddwire agent --key-file` would read one.
fn random_key(id: &str) -> Key {
    let secret = format!("{}{}", ddwire::ids::new_uuid7(), ddwire::ids::new_uuid7());
    Key::new(id, secret.as_bytes()).expect("a 72-character secret is a valid key")
}

/// The echo invocation every benchmark sends. Without an `invocation_id`, each run gets a
/// fresh one, so one request can be sent again and again.
fn echo_request() -> Value {
    json!({"agent_id": "echo.wire", "input": {"schema_class": "Echo", "value": {"n": 1, "text": "ping"}}})
}

/// An A2A call carrying `data` as HTTP/1.1 bytes, in the chosen binding.
fn a2a_request(host: &str, path: &str, binding: &str, data: Value) -> Result<Vec<u8>, String> {
    let (body, headers): (Value, Vec<(&str, &str)>) = match binding {
        "0.3" => (
            json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
                "kind": "message", "messageId": "bench", "role": "user", "parts": [{"kind": "data", "data": data}]}}}),
            vec![("Content-Type", "application/json")],
        ),
        "1.0" => (
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
                "messageId": "bench", "role": "ROLE_USER", "parts": [{"data": data}]}}}),
            vec![("Content-Type", "application/json"), ("A2A-Version", "1.0")],
        ),
        other => return Err(format!("--binding must be 0.3 or 1.0, not {other:?}")),
    };
    Ok(generator::http_request(
        "POST",
        host,
        path,
        &headers,
        body.to_string().as_bytes(),
    ))
}

fn load(addr: SocketAddr, request: Vec<u8>, args: &Args) -> Result<Load, String> {
    Ok(Load {
        addr,
        request,
        concurrency: args.number::<usize>("concurrency")?.unwrap_or(8),
        duration: Duration::from_secs_f64(args.number::<f64>("seconds")?.unwrap_or(5.0)),
        warmup: Duration::from_secs(1),
        max_requests: None,
    })
}

fn agent(args: &Args) -> Result<i32, String> {
    let mut server = None;
    let url = match args.value("url") {
        Some(u) => u.to_string(),
        None => {
            let s = ddwire::agent::server::serve(Arc::new(Echo::new()), "127.0.0.1:0", None)
                .map_err(|e| e.to_string())?;
            let url = format!("{}/a2a", s.base_url());
            server = Some(s);
            url
        }
    };
    let (addr, host, path) = generator::parse_url(&url).map_err(|e| e.to_string())?;
    let request = if args.switch("get") {
        generator::http_request("GET", &host, &path, &[], b"")
    } else {
        a2a_request(
            &host,
            &path,
            args.value("binding").unwrap_or("0.3"),
            echo_request(),
        )?
    };
    let load = load(addr, request, args)?;
    eprintln!(
        "bench agent: {url}, {} connections, {:?}",
        load.concurrency, load.duration
    );
    let report = generator::run(&load);
    println!("{url}  {}", report.summary());
    if let Some(s) = server {
        s.shutdown();
    }
    Ok(if report.requests > 0 { 0 } else { 1 })
}

fn relay(args: &Args) -> Result<i32, String> {
    use ddwire::relay::{PeerSpec, Relay, RelayConfig, Role};
    let agent = ddwire::agent::server::serve(Arc::new(Echo::new()), "127.0.0.1:0", None)
        .map_err(|e| e.to_string())?;
    let peer = PeerSpec::new("echo", &agent.base_url(), Role::Leaf).map_err(|e| e.to_string())?;
    let mut config = RelayConfig::new(vec![peer], "http://127.0.0.1");
    config.traces_dir = args.value("traces").map(std::path::PathBuf::from);
    let relay = Arc::new(Relay::new(config).map_err(|e| e.to_string())?);
    let server = http::server::serve(
        "127.0.0.1:0",
        ddwire::relay::handler(relay.clone()),
        http::Limits::DEFAULT,
    )
    .map_err(|e| e.to_string())?;
    relay.set_public_url(&server.base_url());
    let binding = args.value("binding").unwrap_or("0.3");
    let mut reports = Vec::new();
    for (label, url) in [
        ("direct ", format!("{}/a2a", agent.base_url())),
        ("relayed", format!("{}/peers/echo/a2a", server.base_url())),
    ] {
        let (addr, host, path) = generator::parse_url(&url).map_err(|e| e.to_string())?;
        let load = load(
            addr,
            a2a_request(&host, &path, binding, echo_request())?,
            args,
        )?;
        let report = generator::run(&load);
        println!("{label} {url}  {}", report.summary());
        reports.push(report);
    }
    let ms = |r: &Report, q: f64| f64::from(r.percentile_us(q)) / 1000.0;
    println!(
        "relay overhead: p50 {:+.3} ms, p99 {:+.3} ms, throughput {:.0}% of direct",
        ms(&reports[1], 0.5) - ms(&reports[0], 0.5),
        ms(&reports[1], 0.99) - ms(&reports[0], 0.99),
        100.0 * reports[1].rps() / reports[0].rps().max(1.0)
    );
    server.shutdown();
    agent.shutdown();
    let ok = reports.iter().all(|r| r.requests > 0 && r.errors == 0);
    Ok(if ok { 0 } else { 1 })
}

fn harness(args: &Args) -> Result<i32, String> {
    let count = args.number::<u64>("count")?.unwrap_or(100_000);
    let binding = args.value("binding").unwrap_or("0.3");
    let (runs, temporary) = match args.value("runs") {
        Some(dir) => (std::path::PathBuf::from(dir), false),
        None => (
            std::env::temp_dir().join(format!("ddwire-bench-runs-{}", ddwire::ids::new_uuid7())),
            true,
        ),
    };
    let agent = ddwire::agent::server::serve(Arc::new(Echo::new()), "127.0.0.1:0", None)
        .map_err(|e| e.to_string())?;
    let client = A2aClient::default();
    // With --signed the harness calls a second echo agent that holds a key; the direct call
    // below stays on the unsigned one.
    let key = args.switch("signed").then(|| random_key("echo.wire"));
    let keyed = match &key {
        Some(key) => Some(
            ddwire::agent::server::serve_signed(
                Arc::new(Echo::new()),
                "127.0.0.1:0",
                None,
                key,
                ddwire::wire::sign::DEFAULT_WINDOW,
            )
            .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    let called = keyed.as_ref().unwrap_or(&agent).base_url();
    let registry = || -> Result<Registry, String> {
        let mut registry = Registry::default();
        let mut remote =
            RemoteAgent::from_url(&client, &called, DEFAULT_TIMEOUT).map_err(|e| e.to_string())?;
        if let Some(key) = &key {
            remote = remote.with_key(key).map_err(|e| e.to_string())?;
        }
        registry.add(remote).map_err(|e| e.to_string())?;
        Ok(registry)
    };
    let profile = Profile::from_bytes(
        br#"{"profile_id": "ddwire-bench", "version": 1, "agents": {"echo.wire": "advise"}}"#,
        "<bench profile>",
    )
    .map_err(|e| e.to_string())?;
    let store = RunStore::open(&runs).map_err(|e| e.to_string())?;
    let conductor = Conductor::new(registry()?, profile.clone(), store, client.clone());
    let profile_for_stages = profile.clone();
    let (harness_server, public) = serve_harness(conductor)?;

    // With --otlp: the same harness on its own store, exporting each run to an OTLP sink.
    let otlp = if args.switch("otlp") {
        let sink: http::Handler =
            Arc::new(|_request| http::Response::bytes(200, "application/x-protobuf", Vec::new()));
        let sink = http::server::serve("127.0.0.1:0", sink, http::Limits::DEFAULT)
            .map_err(|e| e.to_string())?;
        let config = OtlpConfig::new(
            &format!("http://{}/v1/traces", sink.local_addr()),
            Encoding::Protobuf,
        )
        .map_err(|e| e.to_string())?;
        let hook: ddwire::wire::otlp::ErrorHook = Arc::new(|e| eprintln!("bench harness: {e}"));
        let exporter = Exporter::start(
            config,
            ddwire::wire::http::client::HttpClient::tcp(),
            ExporterOptions::default(),
            Some(hook),
        )
        .map_err(|e| e.to_string())?;
        let otlp_runs = runs.with_file_name(format!(
            "{}-otlp",
            runs.file_name().and_then(|n| n.to_str()).unwrap_or("runs")
        ));
        let store = RunStore::open(&otlp_runs).map_err(|e| e.to_string())?;
        let mut conductor = Conductor::new(registry()?, profile, store, client.clone());
        conductor.otlp = Some(exporter.clone());
        let (server, url) = serve_harness(conductor)?;
        Some((server, url, sink, exporter, otlp_runs))
    } else {
        None
    };

    let direct = {
        let (addr, host, _) = generator::parse_url(&agent.base_url()).map_err(|e| e.to_string())?;
        load(
            addr,
            a2a_request(&host, "/a2a", binding, echo_request())?,
            args,
        )?
    };
    let through = {
        let (addr, host, _) = generator::parse_url(&public).map_err(|e| e.to_string())?;
        load(
            addr,
            a2a_request(&host, "/a2a", binding, echo_request())?,
            args,
        )?
    };
    eprintln!(
        "bench harness: {} connections, {:?} per phase; runs in {}{}",
        direct.concurrency,
        direct.duration,
        runs.display(),
        if key.is_some() {
            "; calls to the agent signed"
        } else {
            ""
        }
    );
    let d = generator::run(&direct);
    println!("direct agent call   {}", d.summary());
    let h = generator::run(&through);
    println!("through the harness {}", h.summary());
    let overhead =
        |q: f64| (f64::from(h.percentile_us(q)) - f64::from(d.percentile_us(q))) / 1000.0;
    println!(
        "harness overhead    p50 {:.3} ms  p99 {:.3} ms  (harness latency minus direct call)",
        overhead(0.5),
        overhead(0.99)
    );
    sample_runs(&runs, SAMPLED_RUNS, h.requests)?;
    if let Some((_, url, _, exporter, _)) = &otlp {
        let (addr, host, _) = generator::parse_url(url).map_err(|e| e.to_string())?;
        let exporting = load(
            addr,
            a2a_request(&host, "/a2a", binding, echo_request())?,
            args,
        )?;
        // The two harnesses take turns in short windows over one set of connections (see
        // generator::alternate): phases run one after the other differ by more than the
        // export costs, since each set of fresh connections draws its own server threads.
        let window = Duration::from_millis(args.number::<u64>("window-ms")?.unwrap_or(500));
        let settle = Duration::from_millis(args.number::<u64>("settle-ms")?.unwrap_or(150));
        let plan = generator::Alternation {
            window,
            // Past the exporter's linger, so a window after an exporting one starts counting
            // only once the runs it left have been sent.
            settle,
            windows: args.number::<usize>("windows")?.unwrap_or(120),
            warmup: Duration::from_secs(1),
        };
        let turns = generator::alternate(&through, &exporting, plan);
        let settled = exporter.flush(Duration::from_secs(60));
        let stats = exporter.stats();
        println!("taking turns: without {}", turns.a.summary());
        println!("taking turns: exporting {}", turns.b.summary());
        let mut sorted = turns.cycles.clone();
        sorted.sort_by(f64::total_cmp);
        let quantile = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        println!(
            "OTLP export cost    throughput {:+.1}% against the harness without export ({} windows of {} ms taking turns, {} ms of each after a switch not counted; per 4-window cycle: median {:+.1}%, middle half {:+.1}% to {:+.1}%){}; {} runs exported in {} requests, {} dropped, {} failed{}",
            (turns.b.rps() / turns.a.rps().max(1e-9) - 1.0) * 100.0,
            sorted.len() * 4,
            window.as_millis(),
            settle.as_millis(),
            quantile(0.5),
            quantile(0.25),
            quantile(0.75),
            match (turns.a.cpu_us_per_request(), turns.b.cpu_us_per_request()) {
                (Some(without), Some(with)) => format!(
                    "; process CPU per run {without:.0} us without, {with:.0} us exporting ({:+.1}%)",
                    (with / without - 1.0) * 100.0
                ),
                _ => String::new(),
            },
            stats.exported_batches,
            stats.requests,
            stats.dropped_batches,
            stats.failed_batches,
            if settled {
                ""
            } else {
                " (some still queued after 60 s)"
            }
        );
    }

    let stage_runs = args.number::<usize>("stages")?.unwrap_or(2000);
    if stage_runs > 0 {
        let dir = runs.with_file_name(format!(
            "{}-stages",
            runs.file_name().and_then(|n| n.to_str()).unwrap_or("runs")
        ));
        let store = RunStore::open(&dir).map_err(|e| e.to_string())?;
        let conductor = Conductor::new(registry()?, profile_for_stages, store, client.clone());
        let wire_p50 = (through.concurrency == 1).then(|| h.percentile_us(0.5));
        let measured = stages(&conductor, stage_runs, wire_p50);
        drop(conductor);
        if temporary {
            let _ = std::fs::remove_dir_all(&dir);
        }
        measured?;
    }

    if count > 0 {
        memory(count, through);
    }
    harness_server.shutdown();
    if let Some((server, _, sink, _, otlp_runs)) = otlp {
        server.shutdown();
        sink.shutdown();
        if temporary {
            let _ = std::fs::remove_dir_all(&otlp_runs);
        }
    }
    agent.shutdown();
    if let Some(keyed) = keyed {
        keyed.shutdown();
    }
    if temporary {
        let _ = std::fs::remove_dir_all(&runs);
    }
    Ok(0)
}

/// Where one run's time goes: `runs` invocations one after another, straight into
/// `conductor` (no HTTP, no JSON-RPC, no A2A task), each stage timed through the conductor's
/// observer (the hidden `ddwire::fuzz::stage_instants`), and the gaps between stages named for what the
/// conductor does there. Prints the median of each and, given the p50 of the same invocation
/// through the harness over HTTP at one connection (`wire_p50_us`), what the wire adds: reading
/// and decoding the request, the A2A task, the hand-over of the agent call, the reply written.
fn stages(conductor: &Conductor, runs: usize, wire_p50_us: Option<u32>) -> Result<(), String> {
    use std::time::Instant;
    let principal = demo_principal();
    let document = echo_request();
    // Columns: before the gate, each stage, the gaps between them, after the store, total.
    const NAMES: [&str; 9] = [
        "before the gate: registry, request document and input hash, tracer and root span",
        "policy gate",
        "input check (the input against its class schema)",
        "agent call (A2A over loopback to the echo agent, reply decoded)",
        "between: envelope, spans taken from the tracer",
        "grounding check",
        "between: validation of the envelope, root span ended",
        "store (the run's files, journal commit with its fsync round)",
        "after the store",
    ];
    let mut columns: Vec<Vec<u32>> = vec![Vec::with_capacity(runs); NAMES.len() + 1];
    let us =
        |a: Instant, b: Instant| b.duration_since(a).as_micros().min(u128::from(u32::MAX)) as u32;
    eprintln!("bench harness: {runs} invocations one at a time, each stage timed...");
    for _ in 0..runs {
        let points = ddwire::fuzz::stage_instants(conductor, &document, &principal)
            .map_err(|e| format!("an invocation failed: {e}"))?;
        let (start, end) = (points[0], points[11]);
        // before gate | gate | (gate..input) + input | agent | agent..grounding | grounding |
        // grounding..store | store | after
        let spans = [
            us(points[0], points[1]),
            us(points[1], points[2]),
            us(points[2], points[4]),
            us(points[5], points[6]) + us(points[4], points[5]),
            us(points[6], points[7]),
            us(points[7], points[8]),
            us(points[8], points[9]),
            us(points[9], points[10]),
            us(points[10], points[11]),
        ];
        for (column, value) in columns.iter_mut().zip(spans) {
            column.push(value);
        }
        columns[NAMES.len()].push(us(start, end));
    }
    let median = |column: &mut Vec<u32>| {
        column.sort_unstable();
        f64::from(column[column.len() / 2]) / 1000.0
    };
    let p99 = |column: &Vec<u32>| f64::from(column[(column.len() - 1) * 99 / 100]) / 1000.0;
    println!(
        "stages of one run   ({runs} invocations one at a time, in process; median and p99, ms)"
    );
    for (name, column) in NAMES.iter().zip(columns.iter_mut()) {
        let m = median(column);
        println!("  {m:>8.3} {:>8.3}  {name}", p99(column));
    }
    let total = median(&mut columns[NAMES.len()]);
    println!(
        "  {total:>8.3} {:>8.3}  the invocation, in process (median of the totals)",
        p99(&columns[NAMES.len()])
    );
    if let Some(wire) = wire_p50_us {
        let wire = f64::from(wire) / 1000.0;
        println!(
            "  {:>8.3} {:>8}  the wire around it: p50 through the harness at one connection ({wire:.3}) minus the in-process median (HTTP and JSON-RPC in and out, the A2A task, the agent call's hand-over)",
            wire - total,
            "-"
        );
    }
    Ok(())
}

/// How many stored runs the harness benchmark reads back after its measured phase.
const SAMPLED_RUNS: usize = 200;

/// Read back `want` runs spread evenly over the store at `runs` (oldest first) and check each
/// was stored whole and succeeded: throughput counts only answers, so this shows the answers
/// were runs. Prints the tally; an error if any sampled run is missing, unreadable or not
/// succeeded, or if the store holds fewer runs than requests were answered.
fn sample_runs(runs: &std::path::Path, want: usize, answered: u64) -> Result<(), String> {
    let reader = ddwire::harness::store::RunReader::open(runs).map_err(|e| e.to_string())?;
    let ids = reader.run_ids(None).map_err(|e| e.to_string())?;
    let take = want.min(ids.len());
    let mut bad = Vec::new();
    for i in 0..take {
        let id = &ids[i * ids.len() / take.max(1)];
        let status = match reader.envelope(id) {
            Ok(Some(envelope)) => envelope
                .pointer("/outcome/status")
                .and_then(Value::as_str)
                .unwrap_or("<no outcome.status>")
                .to_string(),
            Ok(None) => "<no envelope>".to_string(),
            Err(e) => format!("<unreadable: {e}>"),
        };
        if status != "succeeded" {
            bad.push(format!("{id}: {status}"));
        }
    }
    println!(
        "sampled runs        {}/{} stored and succeeded ({} runs on disk; {} answered in the measured phase)",
        take - bad.len(),
        take,
        ids.len(),
        answered
    );
    if !bad.is_empty() || (ids.len() as u64) < answered || take < want.min(answered as usize) {
        return Err(format!(
            "the harness answered runs it did not store whole and succeeded: {}",
            bad.join("; ")
        ));
    }
    Ok(())
}

/// `count` more runs through the harness, and the process's resident memory before and after.
fn memory(count: u64, through: Load) {
    let rss_before = generator::rss_kib();
    let memory = Load {
        max_requests: Some(count),
        duration: Duration::from_secs(24 * 3600),
        warmup: Duration::ZERO,
        ..through
    };
    eprintln!("bench harness: {count} runs for the memory measurement...");
    let m: Report = generator::run(&memory);
    let rss_after = generator::rss_kib();
    println!(
        "memory              {} runs ({} errors) at {:.0} runs/s",
        m.requests,
        m.errors,
        m.rps()
    );
    match (rss_before, rss_after) {
        (Some(b), Some(a)) => println!(
            "resident memory     before {:.1} MiB, after {:.1} MiB, change {:+.1} MiB",
            b as f64 / 1024.0,
            a as f64 / 1024.0,
            (a as f64 - b as f64) / 1024.0
        ),
        _ => println!("resident memory     not available on this system"),
    }
}

/// Sign and verify requests of several body sizes in a loop, and print the cost of each.
fn sign(args: &Args) -> Result<i32, String> {
    let count = args.number::<u32>("count")?.unwrap_or(20_000).max(1);
    let key = random_key("echo.wire");
    for size in [1024usize, 64 * 1024, 1024 * 1024] {
        let (signing, verifying) = ddwire::fuzz::sign_then_verify(&key, size, count);
        let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(count);
        let rate = |d: Duration| size as f64 * f64::from(count) / d.as_secs_f64() / 1e6;
        println!(
            "body {:>7} B   sign {:>8.2} µs ({:>6.0} MB/s)   verify {:>8.2} µs ({:>6.0} MB/s)",
            size,
            per(signing),
            rate(signing),
            per(verifying),
            rate(verifying)
        );
    }
    Ok(0)
}

/// A harness over `conductor` on a free loopback port, acting for the demo principal.
fn serve_harness(conductor: Conductor) -> Result<(http::server::Server, String), String> {
    let bound =
        http::server::bind("127.0.0.1:0", http::Limits::DEFAULT).map_err(|e| e.to_string())?;
    let public = bound.default_public_url();
    let harness = Arc::new(Harness::new(
        conductor,
        Some(Authenticator::Operator(demo_principal())),
        &public,
    ));
    let server = bound.serve(handler(harness)).map_err(|e| e.to_string())?;
    Ok((server, public))
}

/// One fsync round as the journal pays it: append 8 KiB (about one echo run's record) to a
/// file in `--runs` and `fdatasync` it, for `--seconds`; print the latencies.
fn fsync(args: &Args) -> Result<i32, String> {
    use std::io::Write;
    let dir = std::path::PathBuf::from(
        args.value("runs")
            .ok_or("bench fsync needs --runs DIR: the file system to measure")?,
    );
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let path = dir.join(format!(".ddwire-bench-fsync-{}", ddwire::ids::new_uuid7()));
    let seconds = args.number::<f64>("seconds")?.unwrap_or(3.0);
    let mut file = std::fs::OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("creating {}: {e}", path.display()))?;
    let record = vec![0x5au8; 8192];
    let mut latencies: Vec<u32> = Vec::new();
    let started = std::time::Instant::now();
    let measured = (|| {
        while started.elapsed().as_secs_f64() < seconds {
            let t = std::time::Instant::now();
            file.write_all(&record)?;
            file.sync_data()?;
            latencies.push(t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
        }
        Ok::<(), std::io::Error>(())
    })();
    let _ = std::fs::remove_file(&path);
    measured.map_err(|e| format!("fsync on {}: {e}", dir.display()))?;
    latencies.sort_unstable();
    let at =
        |q: f64| f64::from(latencies[((latencies.len() - 1) as f64 * q).round() as usize]) / 1000.0;
    println!(
        "fsync round         p50 {:.3} ms  p99 {:.3} ms  ({} appends of 8 KiB + fdatasync on {})",
        at(0.5),
        at(0.99),
        latencies.len(),
        dir.display()
    );
    Ok(0)
}
