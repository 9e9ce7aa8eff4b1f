//! The conductor's OTLP hook: a stored run is exported exactly as stored, from the exporter's
//! own thread, and export never slows, fails or loses a run. Agents and the receiver are on the
//! in-memory transport (real HTTP/1.1 bytes through the same handlers).

use super::common;

use common::*;
use crossbeam_channel::unbounded;
use ddwire::agent::builtin::Hello;
use ddwire::contract::{InvocationRequest, OutcomeStatus};
use ddwire::harness::identity::Authenticator;
use ddwire::harness::server::Harness;
use ddwire::harness::testkit::test_principal;
use ddwire::trace::otlp::{self, Encoding};
use ddwire::wire::http::client::HttpClient;
use ddwire::wire::http::{Handler, Limits, Request, Response};
use ddwire::wire::otlp::{Exporter, ExporterOptions, OtlpConfig, RetryPolicy};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn no_retry() -> ExporterOptions {
    ExporterOptions {
        queue: 8,
        retry: RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        },
        ..ExporterOptions::default()
    }
}

/// Each request's content type and body, as the receiver got them.
type Bodies = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

#[test]
fn a_stored_run_is_exported_once_exactly_as_stored() {
    let runs = TempDir::new("otlp-hook");
    let (mut conductor, net) = bare_conductor(vec![Arc::new(Hello::new())], runs.path());
    let bodies: Bodies = Arc::default();
    let log = bodies.clone();
    let receiver: Handler = Arc::new(move |r: Request| {
        let content_type = r.header("content-type").unwrap_or("").to_string();
        log.lock().unwrap().push((content_type, r.body));
        Response::bytes(200, "application/json", b"{}".to_vec())
    });
    net.serve("collector.test", receiver, Limits::DEFAULT);
    let config = OtlpConfig::new("http://collector.test/v1/traces", Encoding::Json).unwrap();
    let exporter = Exporter::start(
        config.clone(),
        HttpClient::memory(net.clone()),
        no_retry(),
        None,
    )
    .unwrap();
    conductor.otlp = Some(exporter.clone());

    let request = InvocationRequest::from_value(&request("hello.world", message("hi"))).unwrap();
    let run = conductor.invoke(request, &test_principal()).unwrap();
    assert_eq!(run.envelope.outcome.status, OutcomeStatus::Succeeded);
    assert!(
        exporter.flush(Duration::from_secs(20)),
        "{:?}",
        exporter.stats()
    );

    let id = run.envelope.invocation_id.clone();
    let stored = stored_spans(runs.path(), &id);
    let bodies = bodies.lock().unwrap();
    assert_eq!(bodies.len(), 1);
    assert_eq!(bodies[0].0, "application/json");
    // Byte for byte what the stored span JSON encodes to: its microseconds, its order.
    assert_eq!(
        String::from_utf8(bodies[0].1.clone()).unwrap(),
        otlp::json::encode(&stored, &config.resource, &config.scope)
    );
    let stats = exporter.stats();
    assert_eq!(
        (stats.exported_batches, stats.exported_spans),
        (1, stored.len() as u64)
    );

    // A request refused before it is stored (a reused id) exports nothing.
    let again = InvocationRequest::from_value(&serde_json::json!({
        "invocation_id": id, "agent_id": "hello.world", "input": message("hi")
    }))
    .unwrap();
    assert!(conductor.invoke(again, &test_principal()).is_err());
    assert!(exporter.flush(Duration::from_secs(20)));
    assert_eq!(exporter.stats().exported_batches, 1);
}

#[test]
fn a_run_finishes_and_is_stored_while_the_receiver_holds_its_export() {
    let runs = TempDir::new("otlp-held");
    let (mut conductor, net) = bare_conductor(vec![Arc::new(Hello::new())], runs.path());
    let (release, held) = unbounded::<()>();
    let (arrived_tx, arrived) = unbounded::<()>();
    let receiver: Handler = Arc::new(move |_r: Request| {
        let _ = arrived_tx.send(());
        let _ = held.recv_timeout(Duration::from_secs(30));
        Response::bytes(200, "application/x-protobuf", Vec::new())
    });
    net.serve("collector.test", receiver, Limits::DEFAULT);
    let config = OtlpConfig::new("http://collector.test/v1/traces", Encoding::Protobuf).unwrap();
    let exporter =
        Exporter::start(config, HttpClient::memory(net.clone()), no_retry(), None).unwrap();
    conductor.otlp = Some(exporter.clone());

    let first = InvocationRequest::from_value(&request("hello.world", message("one"))).unwrap();
    conductor.invoke(first, &test_principal()).unwrap();
    arrived
        .recv_timeout(Duration::from_secs(20))
        .expect("the first export reached the receiver");
    // The receiver now holds that export: the next runs still finish and are stored.
    for text in ["two", "three"] {
        let r = InvocationRequest::from_value(&request("hello.world", message(text))).unwrap();
        let run = conductor.invoke(r, &test_principal()).unwrap();
        assert_eq!(run.envelope.outcome.status, OutcomeStatus::Succeeded);
        assert!(run.run_dir.join("spans.jsonl").exists());
    }
    assert!(
        arrived.is_empty(),
        "a second export went out while the first was held"
    );
    for _ in 0..3 {
        release.send(()).unwrap();
    }
    assert!(
        exporter.flush(Duration::from_secs(20)),
        "{:?}",
        exporter.stats()
    );
    assert_eq!(exporter.stats().exported_batches, 3);
}

#[test]
fn an_unreachable_receiver_fails_no_run_and_is_counted() {
    let runs = TempDir::new("otlp-down");
    let (mut conductor, net) = bare_conductor(vec![Arc::new(Hello::new())], runs.path());
    let config = OtlpConfig::new("http://nobody.test/v1/traces", Encoding::Protobuf).unwrap();
    let reports: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = reports.clone();
    let exporter = Exporter::start(
        config,
        HttpClient::memory(net),
        no_retry(),
        Some(Arc::new(move |e| log.lock().unwrap().push(e.to_string()))),
    )
    .unwrap();
    conductor.otlp = Some(exporter.clone());
    let request = InvocationRequest::from_value(&request("hello.world", message("hi"))).unwrap();
    let run = conductor.invoke(request, &test_principal()).unwrap();
    assert_eq!(run.envelope.outcome.status, OutcomeStatus::Succeeded);
    assert!(exporter.flush(Duration::from_secs(20)));
    assert_eq!(exporter.stats().failed_batches, 1);
    let reports = reports.lock().unwrap();
    assert!(
        reports[0].contains("nobody.test") && reports[0].contains("refused"),
        "{reports:?}"
    );
}

/// `GET /healthz` over the wire: its JSON.
fn health(net: &ddwire::wire::http::memory::MemoryNet) -> serde_json::Value {
    let response = HttpClient::memory(net.clone())
        .send(ddwire::wire::http::client::ClientRequest::get(
            "http://harness.test/healthz",
            T,
        ))
        .expect("the harness answers");
    assert_eq!(response.status, 200);
    serde_json::from_slice(&response.body).expect("JSON")
}

/// Serve `conductor` as a harness at `http://harness.test` on `net`.
fn serve_harness(
    conductor: ddwire::harness::conductor::Conductor,
    net: &ddwire::wire::http::memory::MemoryNet,
) -> Arc<Harness> {
    let harness = Arc::new(Harness::new(
        conductor,
        Some(Authenticator::Operator(test_principal())),
        "http://harness.test",
    ));
    net.serve(
        "harness.test",
        ddwire::harness::server::handler(Arc::clone(&harness)),
        Limits::DEFAULT,
    );
    harness
}

#[test]
fn healthz_shows_the_exporters_queue_and_its_exported_and_dropped_batches() {
    let runs = TempDir::new("otlp-health");
    let (mut conductor, net) = bare_conductor(vec![Arc::new(Hello::new())], runs.path());
    let (release, held) = unbounded::<()>();
    let (arrived_tx, arrived) = unbounded::<()>();
    let receiver: Handler = Arc::new(move |_r: Request| {
        let _ = arrived_tx.send(());
        let _ = held.recv_timeout(Duration::from_secs(30));
        Response::bytes(200, "application/json", b"{}".to_vec())
    });
    net.serve("collector.test", receiver, Limits::DEFAULT);
    let config = OtlpConfig::new("http://collector.test/v1/traces", Encoding::Json).unwrap();
    let options = ExporterOptions {
        queue: 1,
        ..no_retry()
    };
    let exporter = Exporter::start(config, HttpClient::memory(net.clone()), options, None).unwrap();
    conductor.otlp = Some(exporter.clone());
    let harness = serve_harness(conductor, &net);

    let invoke = |text: &str| {
        let r = InvocationRequest::from_value(&request("hello.world", message(text))).unwrap();
        let run = harness.conductor.invoke(r, &test_principal()).unwrap();
        assert_eq!(run.envelope.outcome.status, OutcomeStatus::Succeeded);
    };
    invoke("one");
    arrived
        .recv_timeout(Duration::from_secs(20))
        .expect("the first export reached the receiver");
    // The receiver holds the first export: the second waits in the queue of one, and the
    // third finds it full and is dropped. Every run is still stored.
    invoke("two");
    invoke("three");
    let otlp = &health(&net)["export"];
    assert_eq!(otlp["queued"], 1, "{otlp}");
    assert_eq!(otlp["dropped_batches"], 1, "{otlp}");
    assert_eq!(otlp["exported_batches"], 0, "{otlp}");

    for _ in 0..2 {
        release.send(()).unwrap();
    }
    assert!(
        exporter.flush(Duration::from_secs(20)),
        "{:?}",
        exporter.stats()
    );
    let otlp = &health(&net)["export"];
    assert_eq!(otlp["queued"], 0, "{otlp}");
    assert_eq!(otlp["exported_batches"], 2, "{otlp}");
    assert_eq!(otlp["dropped_batches"], 1, "{otlp}");
    assert_eq!(otlp["failed_batches"], 0, "{otlp}");
}

#[test]
fn healthz_says_nothing_of_export_when_it_is_off() {
    let runs = TempDir::new("otlp-off");
    let (conductor, net) = bare_conductor(vec![Arc::new(Hello::new())], runs.path());
    let _harness = serve_harness(conductor, &net);
    let health = health(&net);
    assert_eq!(health["status"], "ready", "{health}");
    assert_eq!(health["agents"]["available"], 1);
    assert!(health["export"].is_null(), "{health}");
}
