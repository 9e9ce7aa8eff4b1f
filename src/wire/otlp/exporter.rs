//! The background exporter: a bounded queue and one thread that encodes and sends (the
//! crate's one background worker, `wire::worker`).
//!
//! [`Exporter::export`] never blocks and never fails: it hands the batch to the queue, or, when
//! the queue is full, drops it and counts the drop. The exporter's own thread takes batches in
//! order, encodes each (with any others already waiting, up to [`MAX_RUNS_PER_REQUEST`]) as one
//! `ExportTraceServiceRequest` and sends it with [`super::send()`]'s retries; a request that still
//! fails is counted and reported through the error hook. So a slow or absent receiver costs a
//! run nothing, and what was lost is visible in [`ExportStats`].

use super::send::{RetryPolicy, send_body};
use super::{OtlpConfig, OtlpError};
use crate::text::Unpoison;
use crate::trace::record::SpanRecord;
use crate::wire::http::client::HttpClient;
use crate::wire::worker::{self, Jobs, Worker};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Called with each batch that could not be delivered (and, sparingly, with queue overflows).
pub type ErrorHook = Arc<dyn Fn(&OtlpError) + Send + Sync>;

/// How the background exporter queues and retries.
#[derive(Clone, Debug)]
pub struct ExporterOptions {
    /// Batches waiting to be sent; one more is dropped (default `DEFAULT_QUEUE`).
    pub(crate) queue: usize,
    /// How each request is retried.
    pub(crate) retry: RetryPolicy,
    /// How long a request gathers runs after its first (default [`LINGER`], 50 ms).
    pub(crate) linger: Duration,
}

/// The default queue: 512 batches (a batch is one run's spans).
pub(crate) const DEFAULT_QUEUE: usize = 512;

impl Default for ExporterOptions {
    fn default() -> Self {
        ExporterOptions {
            queue: DEFAULT_QUEUE,
            retry: RetryPolicy::default(),
            linger: LINGER,
        }
    }
}

/// What the exporter has done since it started: the figures `/healthz` can show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExportStats {
    /// Batches waiting in the queue now.
    pub(crate) queued: u64,
    /// Batches (runs) the receiver accepted, the spans in them, and the requests that carried
    /// them (one request carries every batch waiting when it is sent, up to a limit).
    pub exported_batches: u64,
    /// See `exported_batches`.
    pub(crate) exported_spans: u64,
    /// See `exported_batches`.
    pub requests: u64,
    /// Batches never sent: the queue was full, or the request would exceed the size limit.
    pub dropped_batches: u64,
    /// Batches sent but not accepted after every retry (refused, or the receiver unreachable).
    pub failed_batches: u64,
    /// Requests repeated after a retryable answer or a connection failure.
    pub(crate) retries: u64,
    /// Spans an accepting receiver said it rejected (`partial_success`).
    pub(crate) rejected_spans: u64,
    /// Stored span lines that could not be read, and so were not exported.
    pub(crate) malformed_spans: u64,
}

/// A handle on a running background exporter. Cheap to clone; the thread ends once every
/// handle is dropped and the queue is drained.
#[derive(Clone)]
pub struct Exporter {
    queue: Arc<Worker<Batch>>,
    shared: Arc<Shared>,
}

enum Batch {
    Records(Vec<SpanRecord>),
    /// The tracer's records of a run the store holds, sent as its lines read back (see
    /// `trace::span_json::as_stored`), made so on the exporter's thread.
    Stored(Vec<SpanRecord>),
    /// Span JSON lines as the run store holds them, read on the exporter's thread.
    SpanJson(Vec<String>),
}

struct Shared {
    config: OtlpConfig,
    capacity: usize,
    on_error: Option<ErrorHook>,
    /// The counts so far (`queued` is the queue's, read when asked).
    stats: Mutex<ExportStats>,
}

impl Exporter {
    /// Start the exporter's thread, sending to `config` with `client`. `on_error` hears about
    /// every batch that could not be delivered.
    pub fn start(
        config: OtlpConfig,
        client: HttpClient,
        options: ExporterOptions,
        on_error: Option<ErrorHook>,
    ) -> Result<Exporter, OtlpError> {
        let capacity = options.queue.max(1);
        let (queue, jobs) = worker::queue(capacity, usize::MAX);
        let shared = Arc::new(Shared {
            config,
            capacity,
            on_error,
            stats: Mutex::default(),
        });
        let worker = Arc::clone(&shared);
        queue
            .start("otlp-export", move || {
                run(&worker, &jobs, &client, &options.retry, options.linger)
            })
            .map_err(|error| OtlpError::Start { error })?;
        Ok(Exporter {
            queue: Arc::new(queue),
            shared,
        })
    }

    /// Queue `spans` for export as one request. Never blocks: when the queue is full the batch
    /// is dropped and counted.
    pub(crate) fn export(&self, spans: Vec<SpanRecord>) {
        if !spans.is_empty() {
            self.enqueue(Batch::Records(spans));
        }
    }

    /// Queue the records of spans just stored as JSON lines, to be exported exactly as those
    /// lines read back (their times in the lines' whole microseconds), without writing or
    /// reading a line: that is done on the exporter's thread, so the caller pays only for the
    /// hand-over. What a store reader exports from the same run is the same.
    pub(crate) fn export_stored(&self, spans: Vec<SpanRecord>) {
        if !spans.is_empty() {
            self.enqueue(Batch::Stored(spans));
        }
    }

    /// Queue stored span JSON lines (a run's `spans.jsonl`) for export; they are read on the
    /// exporter's thread, so the caller pays only for the hand-over.
    pub fn export_span_json(&self, lines: Vec<String>) {
        if !lines.is_empty() {
            self.enqueue(Batch::SpanJson(lines));
        }
    }

    fn enqueue(&self, batch: Batch) {
        if self.queue.offer(batch, 0).is_err() {
            let dropped = self.shared.count(|s| {
                s.dropped_batches += 1;
                s.dropped_batches
            });
            // Report the 1st, 2nd, 4th, 8th... drop: a flood of them stays a few lines.
            if dropped.is_power_of_two() {
                self.shared.report(&OtlpError::QueueFull {
                    capacity: self.shared.capacity,
                    dropped,
                });
            }
        }
    }

    /// The figures so far.
    pub fn stats(&self) -> ExportStats {
        ExportStats {
            queued: self.queue.len() as u64,
            ..*self.shared.stats.lock().unpoisoned()
        }
    }

    /// Wait until every batch queued so far has been sent or given up on, or `timeout` passes;
    /// `true` if everything settled.
    pub fn flush(&self, timeout: Duration) -> bool {
        self.queue.flush(timeout)
    }

    /// Where and how this exporter sends.
    pub(crate) fn config(&self) -> &OtlpConfig {
        &self.shared.config
    }
}

impl Shared {
    fn count<R>(&self, update: impl FnOnce(&mut ExportStats) -> R) -> R {
        update(&mut self.stats.lock().unpoisoned())
    }

    fn report(&self, error: &OtlpError) {
        if let Some(hook) = &self.on_error {
            hook(error);
        }
    }
}

/// The most runs one request carries, and the most spans: what has queued up while a request
/// was out goes in the next one, up to these (OpenTelemetry's batch processor sends at most 512
/// spans a request by default).
pub(crate) const MAX_RUNS_PER_REQUEST: usize = 64;
/// See [`MAX_RUNS_PER_REQUEST`].
pub(crate) const MAX_SPANS_PER_REQUEST: usize = 512;

/// How long the exporter lets a request gather runs after the first one queued: what queues
/// meanwhile goes in the same request, up to the limits above. OpenTelemetry's batch span
/// processor waits its schedule delay (5 s by default) likewise; this one is short, so that a
/// run reaches the receiver soon after it is stored. A request costs the exporter's thread
/// (and the receiver) about as much as encoding a few runs does, on the cores the runs share.
pub(crate) const LINGER: Duration = Duration::from_millis(50);

/// The exporter's thread, until every handle is gone: take a batch, let more gather for
/// its linger ([`LINGER`] by default; less once a full request's worth is waiting, or someone
/// flushes), and send them
/// as one request, in queue order. Under light load each run goes out alone within `LINGER`;
/// under heavy load requests carry many runs, so the receiver and this thread do less work per
/// run. The thread sleeps while it lingers rather than waiting on the queue, so queuing a run
/// never wakes it.
fn run(
    shared: &Shared,
    jobs: &Jobs<Batch>,
    client: &HttpClient,
    retry: &RetryPolicy,
    linger: Duration,
) {
    while let Some(first) = jobs.next() {
        let until = Instant::now() + linger;
        loop {
            let now = Instant::now();
            if now >= until || jobs.len() + 1 >= MAX_RUNS_PER_REQUEST || jobs.flushing() {
                break;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(5)));
        }
        let mut spans = Vec::new();
        let mut runs = 0;
        let mut next = Some(first);
        while let Some(batch) = next.take() {
            runs += 1;
            match batch {
                Batch::Records(records) => spans.extend(records),
                Batch::Stored(records) => {
                    spans.extend(records.into_iter().map(crate::trace::into_stored));
                }
                Batch::SpanJson(lines) => {
                    for line in lines.iter().filter(|l| !l.trim().is_empty()) {
                        match crate::trace::from_json(line) {
                            Ok(span) => spans.push(span),
                            Err(_) => shared.count(|s| s.malformed_spans += 1),
                        }
                    }
                }
            }
            if runs < MAX_RUNS_PER_REQUEST && spans.len() < MAX_SPANS_PER_REQUEST {
                next = jobs.try_next().ok();
            }
        }
        if !spans.is_empty() {
            deliver(shared, client, retry, &spans, runs as u64);
        }
        jobs.settle(runs as u64);
    }
}

/// Send one request holding `runs` queued batches.
fn deliver(
    shared: &Shared,
    client: &HttpClient,
    retry: &RetryPolicy,
    spans: &[SpanRecord],
    runs: u64,
) {
    let config = &shared.config;
    let body = config
        .encoding
        .encode(spans, &config.resource, &config.scope);
    match send_body(client, config, body, retry) {
        Ok(delivery) => {
            shared.count(|s| {
                s.requests += 1;
                s.exported_batches += runs;
                s.exported_spans += spans.len() as u64;
                s.retries += u64::from(delivery.attempts.saturating_sub(1));
                s.rejected_spans += delivery.rejected_spans;
            });
            if delivery.rejected_spans > 0 || delivery.message.is_some() {
                shared.report(&OtlpError::PartialSuccess {
                    url: config.endpoint.clone(),
                    rejected_spans: delivery.rejected_spans,
                    message: delivery.message.unwrap_or_default(),
                });
            }
        }
        Err(error) => {
            shared.count(|s| {
                match &error {
                    OtlpError::TooLarge { .. } => s.dropped_batches += runs,
                    _ => s.failed_batches += runs,
                }
                s.retries += u64::from(error.attempts().unwrap_or(1).saturating_sub(1));
            });
            shared.report(&error);
        }
    }
}
