//! `ddwire bench`: benchmarks that print figures (never asserted in tests).

use super::Command;
use super::args::{Flag, Parsed};
use ddwire::agent::builtin::Echo;
use ddwire::bench::{self, Load};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

pub static COMMAND: Command = Command {
    name: "bench",
    summary: "Measure requests/s and latency: bench agent",
    usage: "bench agent [--url URL] [--get] [--concurrency N] [--seconds S] [--binding 0.3|1.0]",
    details: "bench agent: drives an A2A echo agent with message/send (or SendMessage) over\n\
              keep-alive loopback connections, closed loop, and prints requests/s and p50/p99\n\
              latency. Without --url it serves ddwire's echo agent in this process on a free\n\
              loopback port. With --url it drives any A2A server (the Python a2a-sdk echo\n\
              server, for one) with the same request; with --get it sends plain GETs to URL\n\
              (a static nginx file, for one), so every server is measured by one yardstick.\n\
              benches/agent.sh runs all three side by side.",
    flags: &[
        Flag {
            name: "url",
            value: Some("URL"),
            help: "Server to drive (default: an in-process echo agent)",
        },
        Flag {
            name: "get",
            value: None,
            help: "Send GET URL instead of A2A calls",
        },
        Flag {
            name: "concurrency",
            value: Some("N"),
            help: "Connections, each closed loop (default 8)",
        },
        Flag {
            name: "seconds",
            value: Some("S"),
            help: "Measuring time after 1 s of warm-up (default 5)",
        },
        Flag {
            name: "binding",
            value: Some("V"),
            help: "0.3 (message/send, default) or 1.0 (SendMessage)",
        },
    ],
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    match args.positionals.first().map(String::as_str) {
        Some("agent") => agent(args),
        Some(other) => Err(format!("unknown benchmark {other:?}; try `bench agent`")),
        None => Err("name a benchmark: `bench agent`".into()),
    }
}

fn agent(args: &Parsed) -> Result<i32, String> {
    let concurrency = args.number::<usize>("concurrency")?.unwrap_or(8);
    let seconds = args.number::<f64>("seconds")?.unwrap_or(5.0);
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
    let (addr, host, path) = bench::parse_url(&url).map_err(|e| e.to_string())?;
    let request = if args.switch("get") {
        bench::http_request("GET", &host, &path, &[], b"")
    } else {
        let data = json!({"agent_id": "echo.wire", "input": {"schema_class": "Echo", "value": {"n": 1, "text": "ping"}}});
        let (body, headers): (serde_json::Value, Vec<(&str, &str)>) = match args
            .value("binding")
            .unwrap_or("0.3")
        {
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
        bench::http_request("POST", &host, &path, &headers, body.to_string().as_bytes())
    };
    let load = Load {
        addr,
        request,
        concurrency,
        duration: Duration::from_secs_f64(seconds),
        warmup: Duration::from_secs(1),
    };
    eprintln!("bench agent: {url}, {concurrency} connections, {seconds} s");
    let report = bench::run(&load);
    println!("{url}  {}", report.summary());
    if let Some(s) = server {
        s.shutdown();
    }
    Ok(if report.requests > 0 { 0 } else { 1 })
}
