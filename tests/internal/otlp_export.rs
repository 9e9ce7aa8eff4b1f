//! OTLP/HTTP export over loopback TCP: the request on the wire, the retry rules, and the
//! background exporter's queue, against receivers scripted with ddwire's own HTTP server.

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use ddwire::trace::otlp::{self, Encoding};
use ddwire::trace::{SpanRecord, Tracer};
use ddwire::wire::http::client::HttpClient;
use ddwire::wire::http::server::{self, Server};
use ddwire::wire::http::{Handler, Limits, Request, Response};
use ddwire::wire::otlp::{
    ErrorHook, Exporter, ExporterOptions, OtlpConfig, OtlpError, RetryPolicy, send,
};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the receiver saw: each request, and when it arrived.
type Seen = Arc<Mutex<Vec<(Instant, Request)>>>;

/// One scripted answer: status, content type, extra headers, body.
#[derive(Clone)]
struct Answer(
    u16,
    &'static str,
    Vec<(&'static str, &'static str)>,
    Vec<u8>,
);

impl Answer {
    fn with_header(mut self, name: &'static str, value: &'static str) -> Answer {
        self.2.push((name, value));
        self
    }

    fn response(&self) -> Response {
        let mut r = Response::bytes(self.0, self.1, self.3.clone());
        for (k, v) in &self.2 {
            r = r.with_header(k, v);
        }
        r
    }
}

/// A receiver on loopback that answers the scripted responses in turn (the last one for
/// every request after them).
fn receiver(script: Vec<Answer>) -> (Server, String, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let script = Arc::new(script);
    let handler: Handler = Arc::new(move |request: Request| {
        let mut log = log.lock().unwrap();
        let n = log.len();
        log.push((Instant::now(), request));
        script[n.min(script.len() - 1)].response()
    });
    let server = server::serve("127.0.0.1:0", handler, Limits::DEFAULT).unwrap();
    let url = format!("http://{}/v1/traces", server.local_addr());
    (server, url, seen)
}

fn ok() -> Answer {
    Answer(200, "application/x-protobuf", vec![], vec![])
}

fn status(code: u16) -> Answer {
    Answer(
        code,
        "text/plain",
        vec![],
        format!("status {code}").into_bytes(),
    )
}

fn quick() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        initial: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        max_retry_after: Duration::from_secs(5),
    }
}

fn spans() -> Vec<SpanRecord> {
    let tracer = Tracer::new("hello.world");
    let root = tracer.invoke_agent("hello.world");
    tracer.chat("a-model").end();
    let trace_id = root.context().trace_id;
    root.end();
    tracer.take(trace_id)
}

#[test]
fn each_encoding_goes_out_with_its_exact_content_type_and_the_configured_headers() {
    for encoding in [Encoding::Json, Encoding::Protobuf] {
        let (_server, url, seen) = receiver(vec![ok()]);
        let mut config = OtlpConfig::new(&url, encoding).unwrap();
        config.headers = vec![("Authorization".into(), "Bearer t0ken".into())];
        let spans = spans();
        let delivery = send(&HttpClient::tcp(), &config, &spans, &quick()).unwrap();
        assert_eq!((delivery.spans, delivery.attempts), (2, 1));
        let seen = seen.lock().unwrap();
        let request = &seen[0].1;
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/v1/traces")
        );
        assert_eq!(
            request.header("content-type"),
            Some(encoding.content_type())
        );
        assert_eq!(request.header("authorization"), Some("Bearer t0ken"));
        assert_eq!(
            request.body,
            encoding.encode(&spans, &config.resource, &config.scope)
        );
    }
}

#[test]
fn no_spans_send_no_request() {
    let (_server, url, seen) = receiver(vec![ok()]);
    let config = OtlpConfig::new(&url, Encoding::Json).unwrap();
    let delivery = send(&HttpClient::tcp(), &config, &[], &quick()).unwrap();
    assert_eq!(delivery.attempts, 0);
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn the_retryable_statuses_are_retried_until_accepted() {
    for code in [429, 502, 503, 504] {
        let (_server, url, seen) = receiver(vec![status(code), status(code), ok()]);
        let config = OtlpConfig::new(&url, Encoding::Protobuf).unwrap();
        let delivery = send(&HttpClient::tcp(), &config, &spans(), &quick()).unwrap();
        assert_eq!(delivery.attempts, 3, "{code}");
        assert_eq!(seen.lock().unwrap().len(), 3);
    }
}

#[test]
fn any_other_refusal_is_final_and_says_why() {
    for code in [400, 401, 404, 413, 415, 500] {
        let (_server, url, seen) = receiver(vec![status(code), ok()]);
        let config = OtlpConfig::new(&url, Encoding::Json).unwrap();
        let err = send(&HttpClient::tcp(), &config, &spans(), &quick()).unwrap_err();
        assert!(
            matches!(err, OtlpError::Refused { status, attempts: 1, .. } if status == code),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains(&format!("HTTP {code}")) && text.contains(&format!("status {code}")),
            "{text}"
        );
        assert_eq!(seen.lock().unwrap().len(), 1, "{code} was retried");
    }
}

#[test]
fn a_retryable_status_to_the_last_attempt_fails_after_max_attempts() {
    let (_server, url, seen) = receiver(vec![status(503)]);
    let config = OtlpConfig::new(&url, Encoding::Json).unwrap();
    let err = send(&HttpClient::tcp(), &config, &spans(), &quick()).unwrap_err();
    assert!(
        matches!(
            err,
            OtlpError::Refused {
                status: 503,
                attempts: 4,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(seen.lock().unwrap().len(), 4);
}

#[test]
fn retry_after_is_waited_for_and_one_beyond_the_limit_gives_up() {
    let (_server, url, seen) = receiver(vec![status(429).with_header("Retry-After", "1"), ok()]);
    let config = OtlpConfig::new(&url, Encoding::Protobuf).unwrap();
    let delivery = send(&HttpClient::tcp(), &config, &spans(), &quick()).unwrap();
    assert_eq!(delivery.attempts, 2);
    let seen = seen.lock().unwrap();
    let waited = seen[1].0 - seen[0].0;
    // The backoff alone would wait at most 10 ms; Retry-After asked for a whole second.
    assert!(waited >= Duration::from_millis(950), "waited {waited:?}");

    let (_server, url, seen) = receiver(vec![status(503).with_header("Retry-After", "3600"), ok()]);
    let config = OtlpConfig::new(&url, Encoding::Protobuf).unwrap();
    let err = send(&HttpClient::tcp(), &config, &spans(), &quick()).unwrap_err();
    assert!(
        matches!(err, OtlpError::RetryAfterTooLong { status: 503, .. }),
        "{err}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn an_unreachable_receiver_is_retried_then_reported() {
    // A port that was just free: nothing listens on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = OtlpConfig::new(
        &format!("http://127.0.0.1:{port}/v1/traces"),
        Encoding::Json,
    )
    .unwrap();
    let err = send(&HttpClient::tcp(), &config, &spans(), &quick()).unwrap_err();
    assert!(
        matches!(err, OtlpError::Unreachable { attempts: 4, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("after 4 attempts"), "{err}");
}

#[test]
fn a_partial_success_is_accepted_not_retried_and_its_rejections_reported() {
    let answer = Answer(
        200,
        "application/json",
        vec![],
        br#"{"partialSuccess":{"rejectedSpans":"1","errorMessage":"span too old"}}"#.to_vec(),
    );
    let (_server, url, seen) = receiver(vec![answer]);
    let config = OtlpConfig::new(&url, Encoding::Json).unwrap();
    let delivery = send(&HttpClient::tcp(), &config, &spans(), &quick()).unwrap();
    assert_eq!((delivery.attempts, delivery.rejected_spans), (1, 1));
    assert_eq!(delivery.message.as_deref(), Some("span too old"));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

/// A receiver that holds every request until told to answer.
fn held_receiver() -> (Server, String, Sender<()>, Receiver<Request>) {
    let (release_tx, release_rx) = unbounded::<()>();
    let (got_tx, got_rx) = unbounded::<Request>();
    let handler: Handler = Arc::new(move |request: Request| {
        let _ = got_tx.send(request);
        let _ = release_rx.recv_timeout(Duration::from_secs(30));
        ok().response()
    });
    let server = server::serve("127.0.0.1:0", handler, Limits::DEFAULT).unwrap();
    let url = format!("http://{}/v1/traces", server.local_addr());
    (server, url, release_tx, got_rx)
}

#[test]
fn export_never_blocks_a_full_queue_drops_and_counts_and_the_rest_is_delivered() {
    let (_server, url, release, got) = held_receiver();
    let config = OtlpConfig::new(&url, Encoding::Protobuf).unwrap();
    let reports: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = reports.clone();
    let hook: ErrorHook = Arc::new(move |e: &OtlpError| log.lock().unwrap().push(e.to_string()));
    let exporter = Exporter::start(
        config,
        HttpClient::tcp(),
        ExporterOptions {
            queue: 2,
            retry: quick(),
            ..ExporterOptions::default()
        },
        Some(hook),
    )
    .unwrap();

    // The first batch is taken off the queue and held at the receiver...
    exporter.export(spans());
    got.recv_timeout(Duration::from_secs(10))
        .expect("the first request");
    // ...two more fill the queue, and the next three are dropped, each at once.
    let start = Instant::now();
    for _ in 0..5 {
        exporter.export(spans());
    }
    assert!(start.elapsed() < Duration::from_secs(5), "export blocked");
    let stats = exporter.stats();
    assert_eq!((stats.queued, stats.dropped_batches), (2, 3), "{stats:?}");
    // The 1st and 2nd drops are reported; the 3rd is not (1, 2, 4, 8...).
    assert_eq!(
        reports.lock().unwrap().len(),
        2,
        "{:?}",
        reports.lock().unwrap()
    );
    assert!(reports.lock().unwrap()[0].contains("queue is full"));

    for _ in 0..3 {
        release.send(()).unwrap();
    }
    assert!(
        exporter.flush(Duration::from_secs(20)),
        "{:?}",
        exporter.stats()
    );
    let stats = exporter.stats();
    assert_eq!(
        (
            stats.exported_batches,
            stats.exported_spans,
            stats.failed_batches,
            stats.queued
        ),
        (3, 6, 0, 0),
        "{stats:?}"
    );
    // The two batches that waited in the queue went out together, in one request.
    assert_eq!(stats.requests, 2, "{stats:?}");
}

#[test]
fn the_exporter_reads_stored_span_json_on_its_own_thread_and_counts_what_it_cannot_read() {
    let (_server, url, seen) = receiver(vec![ok()]);
    let config = OtlpConfig::new(&url, Encoding::Json).unwrap();
    let exporter = Exporter::start(
        config.clone(),
        HttpClient::tcp(),
        ExporterOptions::default(),
        None,
    )
    .unwrap();
    let spans = spans();
    let mut lines: Vec<String> = spans.iter().map(ddwire::trace::to_json).collect();
    lines.push("not span JSON".into());
    lines.push(String::new());
    exporter.export_span_json(lines);
    assert!(exporter.flush(Duration::from_secs(20)));
    let stats = exporter.stats();
    assert_eq!(
        (
            stats.exported_batches,
            stats.exported_spans,
            stats.malformed_spans
        ),
        (1, 2, 1)
    );
    // Exactly as stored: the span JSON's microseconds, not the tracer's nanoseconds.
    let stored: Vec<SpanRecord> = spans
        .iter()
        .map(|s| ddwire::trace::from_json(&ddwire::trace::to_json(s)).unwrap())
        .collect();
    let seen = seen.lock().unwrap();
    assert_eq!(
        String::from_utf8(seen[0].1.body.clone()).unwrap(),
        otlp::json::encode(&stored, &config.resource, &config.scope)
    );
}

#[test]
fn a_failed_batch_is_counted_reported_and_does_not_stop_the_next() {
    let (_server, url, _seen) = receiver(vec![status(400), ok()]);
    let config = OtlpConfig::new(&url, Encoding::Json).unwrap();
    let (tx, rx) = bounded::<String>(8);
    let hook: ErrorHook = Arc::new(move |e: &OtlpError| {
        let _ = tx.try_send(e.to_string());
    });
    let exporter = Exporter::start(
        config,
        HttpClient::tcp(),
        ExporterOptions::default(),
        Some(hook),
    )
    .unwrap();
    // One at a time, so that they are not sent together in one request.
    exporter.export(spans());
    assert!(exporter.flush(Duration::from_secs(20)));
    exporter.export(spans());
    assert!(exporter.flush(Duration::from_secs(20)));
    let stats = exporter.stats();
    assert_eq!(
        (stats.failed_batches, stats.exported_batches, stats.retries),
        (1, 1, 0),
        "{stats:?}"
    );
    assert!(rx.try_recv().unwrap().contains("HTTP 400"));
}

#[test]
fn runs_queued_while_a_request_lingers_share_it_and_a_flush_cuts_the_linger_short() {
    let (_server, url, seen) = receiver(vec![ok()]);
    let config = OtlpConfig::new(&url, Encoding::Protobuf).unwrap();
    let exporter = Exporter::start(
        config.clone(),
        HttpClient::tcp(),
        ExporterOptions {
            retry: quick(),
            linger: Duration::from_secs(10),
            ..ExporterOptions::default()
        },
        None,
    )
    .unwrap();
    let runs: Vec<Vec<SpanRecord>> = (0..4).map(|_| spans()).collect();
    for run in &runs {
        exporter.export(run.clone());
        std::thread::sleep(Duration::from_millis(20));
    }
    // Well within the linger: nothing has been sent yet.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        seen.lock().unwrap().is_empty(),
        "sent before the linger ended"
    );
    // A flush does not wait out the 10 s linger: it settles within its own 5 s.
    assert!(
        exporter.flush(Duration::from_secs(5)),
        "{:?}",
        exporter.stats()
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "one request for the four runs");
    let all: Vec<SpanRecord> = runs.into_iter().flatten().collect();
    assert_eq!(
        seen[0].1.body,
        Encoding::Protobuf.encode(&all, &config.resource, &config.scope)
    );
    let stats = exporter.stats();
    assert_eq!((stats.requests, stats.exported_batches), (1, 4));
}
