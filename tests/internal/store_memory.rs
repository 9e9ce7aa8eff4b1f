//! Memory that stays flat whatever the store's size: listings of 100,000 runs, run in a test
//! process of their own, so that its resident memory measures them alone.

use super::synthetic;

use ddwire::harness::server as harness_server;
use ddwire::harness::store::{Query, RunReader};
use ddwire::wire::http::{self, Limits};
use std::io::{Read, Write};
use std::ops::ControlFlow;
use std::sync::Arc;
use synthetic::{Dir, T, harness, store_of};

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// With 20,000 runs, five listings took the harness from 17 to 136 MiB. Over 100,000
/// runs (an index of about 70 MB), a full listing, a walk through every page and a streamed
/// `GET /runs` over TCP leave resident memory within a few MiB of where the first listing left
/// it: nothing grows with the store. (Measured in this test's own process; the figure printed
/// is for the closing note, the bound asserted is generous.)
///
/// The test binary runs hundreds of other tests on parallel threads, whose allocations would
/// count in this process's resident memory; so the test runs this binary again as a child with
/// only itself selected (`--exact`, one thread) and [`CHILD`] set, the child measures, and
/// the parent checks the child's exit status and passes its output through.
#[test]
fn listing_100000_runs_keeps_memory_flat() {
    if std::env::var_os(CHILD).is_some() {
        measure_listings();
    } else {
        run_alone_in_a_child("listing_100000_runs_keeps_memory_flat");
    }
}

/// Set in the child process that measures.
const CHILD: &str = "DDWIRE_MEMORY_CHILD";

/// Run the test `name` of this module in a child process of this test binary, alone; its
/// output passed through, its failure this test's failure.
fn run_alone_in_a_child(name: &str) {
    let module = module_path!()
        .split_once("::")
        .map_or(module_path!(), |(_crate, path)| path);
    let test = format!("{module}::{name}");
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", &test, "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{test} failed in its own process");
    assert!(
        stdout.contains("1 passed"),
        "the child process did not run {test}"
    );
}

/// The measurement, in a process of its own.
fn measure_listings() {
    let dir = Dir::new("large");
    let n = 100_000;
    store_of(&dir.0, n, false);
    let index_mib = std::fs::metadata(dir.0.join("invocations.jsonl"))
        .unwrap()
        .len() as f64
        / 1048576.0;
    let reader = RunReader::open(&dir.0).unwrap();
    let count_all = |reader: &RunReader| {
        let mut count = 0usize;
        reader
            .rows_newest_first(&Query::default(), |_, _| {
                count += 1;
                ControlFlow::Continue(())
            })
            .unwrap();
        count
    };
    let (harness, _net, _client) = harness(&dir.0);
    let bound = http::server::bind("127.0.0.1:0", Limits::DEFAULT).unwrap();
    let addr = bound.local_addr();
    let server = bound
        .serve(harness_server::handler(Arc::clone(&harness)))
        .unwrap();
    let stream_all = || {
        let mut socket = std::net::TcpStream::connect(addr).unwrap();
        socket.set_read_timeout(Some(T)).unwrap();
        socket
            .write_all(
                b"GET /runs?agent=hello HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            )
            .unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let (mut total, mut tail) = (0usize, Vec::new());
        loop {
            let k = socket.read(&mut buf).unwrap();
            if k == 0 {
                break;
            }
            total += k;
            tail.extend_from_slice(&buf[..k]);
            let keep = tail.len().saturating_sub(64);
            tail.drain(..keep);
        }
        let tail = String::from_utf8_lossy(&tail);
        assert!(
            tail.ends_with("]\r\n0\r\n\r\n"),
            "the stream did not end the array: {tail:?}"
        );
        total
    };

    // The first listing and stream set the allocator's working size.
    assert_eq!(count_all(&reader), n);
    assert!(stream_all() > n / 3 * 100);
    let settled = rss_kib();
    assert_eq!(count_all(&reader), n);
    let mut query = Query {
        limit: Some(1000),
        ..Query::default()
    };
    let mut pages = 0;
    loop {
        let page = reader.page(&query).unwrap();
        pages += 1;
        let Some(next) = page.next else { break };
        query.after = Some(next.after);
        query.at = Some(next.at);
    }
    assert_eq!(pages, n / 1000);
    stream_all();
    let after = rss_kib();
    server.shutdown();
    let growth = (after as f64 - settled as f64) / 1024.0;
    eprintln!(
        "100,000 runs (index {index_mib:.0} MiB): resident {:.1} MiB after the first listing, {:.1} MiB after another, {pages} pages and a streamed GET /runs: {growth:+.1} MiB",
        settled as f64 / 1024.0,
        after as f64 / 1024.0
    );
    if settled > 0 {
        assert!(
            growth < 16.0,
            "resident memory grew by {growth:.1} MiB over listings of a {index_mib:.0} MiB index"
        );
    }
}
