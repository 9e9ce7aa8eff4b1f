//! ddwire's tests, those that need its internals (its private parsers and codecs, the
//! Python-identical JSON writer, the conductor's and the harness's parts, the HTTP server's
//! knobs) and those that use its API or run its binary alike, compiled into the library's own
//! unit tests rather than as integration tests, so nothing is public for a test's sake and a
//! test of a private item needs no move. `lib.rs` includes this module under
//! `cfg(test)`, with `extern crate self as ddwire`, so these files read like integration
//! tests while seeing `pub(crate)` items. Only `tests/layers.rs` and `tests/audit_map.rs`,
//! which read the sources and use no item, stay integration tests.

mod a2a_batch;
mod a2a_client_reply;
mod a2a_fixtures;
mod a2a_tasks;
mod a2a_wire;
mod agui_fixtures;
mod canonical_fixtures;
mod check;
mod cli;
mod cli_export;
mod cli_lint;
mod cli_logs;
mod cli_manners;
mod cli_trace;
mod drain;
mod examples;
mod guard_memory;
mod harness_approval;
mod harness_conductor;
mod harness_delegation;
mod harness_identity;
mod harness_otlp;
mod harness_panics;
mod harness_refresh;
mod harness_registry;
mod harness_remote;
mod harness_stream;
mod harness_suspend;
mod harness_tasks;
mod harness_transport;
mod harness_trust;
mod hostile_input;
mod http_parser_mutation;
mod http_server;
mod lint_python_files;
// The build without TLS only: its refusals are what it checks.
#[cfg(not(feature = "tls"))]
mod no_tls;
mod observe_logs;
mod otlp_export;
mod otlp_fixtures;
mod parser_mutation;
mod relay;
mod relay_contexts;
mod relay_guard;
mod relay_lint;
mod signed_calls;
mod span_json_fixtures;
mod store_errors;
mod store_hostile_json;
mod store_listing;
mod store_memory;
mod store_processes;
mod store_recovery;
mod tls;
mod trace_context_fixtures;
mod trace_truth;
mod viewer_routes;

// Shared helpers: scripted agents and harnesses, synthetic run stores, the seeded generator,
// raw HTTP and JSON-RPC exchanges.
#[path = "../common/mod.rs"]
mod common;
#[path = "../raw_http/mod.rs"]
mod raw_http;
#[path = "../common/rng.rs"]
mod rng;
#[path = "../rpc/mod.rs"]
mod rpc;
#[path = "../common/synthetic.rs"]
mod synthetic;

/// The `ddwire` binary, for the tests here that run it. Integration tests have its path in
/// `CARGO_BIN_EXE_ddwire`; unit tests do not, so it is found where cargo builds it, beside
/// this test binary (`target/<profile>/deps/ddwire-<hash>` → `target/<profile>/ddwire`).
/// Plain `cargo test` builds it (cargo builds the binary whenever integration tests are
/// selected); after `cargo test --lib` alone, build it first with `cargo build`.
pub(crate) fn ddwire_exe() -> &'static str {
    static EXE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        let test_binary = std::env::current_exe().expect("the test binary's path");
        let profile = test_binary
            .parent()
            .and_then(std::path::Path::parent)
            .expect("the test binary sits in target/<profile>/deps");
        let exe = profile.join(format!("ddwire{}", std::env::consts::EXE_SUFFIX));
        assert!(
            exe.is_file(),
            "{} is not built: run `cargo build` (plain `cargo test` builds it)",
            exe.display()
        );
        // `cargo test --lib` builds this test binary but not the program: a source newer than
        // the program means the tests would run yesterday's code.
        let built = modified(&exe).expect("the binary's modification time");
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        if let Some(newer) = newest_source(&src).filter(|(t, _)| *t > built) {
            panic!(
                "{} is older than {}: run `cargo build` (plain `cargo test` builds it)",
                exe.display(),
                newer.1.display()
            );
        }
        // Both builds put the program at the same path, so it may be the other build's: an
        // `https://` URL tells them apart (the build without TLS refuses it before connecting).
        let probe = std::process::Command::new(&exe)
            .args(["check", "https://127.0.0.1:1", "--timeout", "2"])
            .output()
            .expect("the program runs");
        let has_tls = !String::from_utf8_lossy(&probe.stderr).contains(crate::wire::tls::NOT_BUILT);
        let (built, wanted, build) = match cfg!(feature = "tls") {
            true => ("without", "with", "cargo build"),
            false => ("with", "without", "cargo build --no-default-features"),
        };
        assert_eq!(
            has_tls,
            cfg!(feature = "tls"),
            "{} was built {built} TLS and these tests {wanted}: run `{build}` (plain `cargo test` \
             with the same features builds it)",
            exe.display()
        );
        exe.to_str().expect("a UTF-8 target path").to_string()
    })
}

/// The `ddwire` program as the tests that run it start it: none of the developer's own settings
/// (`DD_*`, `OTEL_*`, `COLUMNS`, `NO_COLOR`) reach it, and it reads no standard input unless the
/// test gives it some.
pub(crate) fn ddwire() -> std::process::Command {
    let mut c = std::process::Command::new(ddwire_exe());
    for (name, _) in std::env::vars_os() {
        let own = name.to_str().is_some_and(|n| {
            n.starts_with("DD_") || n.starts_with("OTEL_") || n == "COLUMNS" || n == "NO_COLOR"
        });
        if own {
            c.env_remove(name);
        }
    }
    c.stdin(std::process::Stdio::null());
    c
}

/// Run `ddwire` with `args` and wait for it.
pub(crate) fn run(args: &[&str]) -> std::process::Output {
    ddwire().args(args).output().expect("the binary runs")
}

/// A program's output as text.
pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn modified(path: &std::path::Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The most recently modified file under `dir`, with its time.
fn newest_source(dir: &std::path::Path) -> Option<(std::time::SystemTime, std::path::PathBuf)> {
    let mut newest: Option<(std::time::SystemTime, std::path::PathBuf)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let found = if path.is_dir() {
            newest_source(&path)
        } else {
            modified(&path).map(|t| (t, path))
        };
        if let Some(found) = found
            && newest.as_ref().is_none_or(|n| found.0 > n.0)
        {
            newest = Some(found);
        }
    }
    newest
}
