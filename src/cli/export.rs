//! `ddwire export`: send stored runs to an OTLP receiver, or write them in the collector's
//! file-exporter format; and the OTLP flags `serve` and `demo` share.

use super::Command;
use super::args::{Flag, Parsed};
use super::setup;
use crate::harness::HarnessError;
use crate::harness::conductor::SERVICE_NAME;
use crate::harness::store::{RunReader, StoreError};
use crate::trace::otlp::{Encoding, ExportResource, Scope};
use crate::wire::http::client::HttpClient;
use crate::wire::otlp::{
    ErrorHook, Exporter, ExporterOptions, Local, OtlpConfig, OtlpFlags, RetryPolicy,
    new_instance_id, resource_from_env, send,
};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

pub(crate) const OTLP_ENDPOINT: Flag = Flag::taking(
    "otlp-endpoint",
    "URL",
    "OTLP/HTTP base URL; /v1/traces is appended (or OTEL_EXPORTER_OTLP_ENDPOINT)",
);
pub(crate) const OTLP_TRACES_ENDPOINT: Flag = Flag::taking(
    "otlp-traces-endpoint",
    "URL",
    "Full OTLP/HTTP traces URL, used as is (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)",
);
pub(crate) const OTLP_PROTOCOL: Flag = Flag::taking(
    "otlp-protocol",
    "P",
    "http/protobuf (default) or http/json (or OTEL_EXPORTER_OTLP_PROTOCOL)",
);
pub(crate) const OTLP_HEADER: Flag = Flag::taking(
    "otlp-header",
    "K=V",
    "Header on every export request, repeatable (or OTEL_EXPORTER_OTLP_HEADERS)",
);

pub(crate) static COMMAND: Command = Command {
    name: "export",
    summary: "Send stored runs' spans to an OTLP receiver, or write them to a file",
    usage: "export (RUN_ID... | --all [--since T]) [--runs DIR] (--otlp-endpoint URL | --otlp-traces-endpoint URL | --otlp-file F) [--otlp-protocol P] [--otlp-header K=V]... [--ca-file F]... [--ca-only] [--tls-client-cert F --tls-client-key F]",
    details: "Reads the run store read-only (never repairing it, so it is safe beside a live\n\
              harness) and exports each run's spans exactly as stored, as one OTLP\n\
              ExportTraceServiceRequest per run: to an OTLP/HTTP receiver (Jaeger, Tempo, an\n\
              OpenTelemetry Collector, Phoenix, rotel...), or with --otlp-file appended to F (- for\n\
              stdout) as one OTLP/JSON request per line, the collector file-exporter format.\n\
              --since T keeps runs completed at or after T: an RFC 3339 time\n\
              (2026-11-30T09:00:00Z) or an age (90s, 15m, 2h, 7d). The endpoint, protocol and\n\
              headers may also come from the standard variables OTEL_EXPORTER_OTLP_ENDPOINT,\n\
              OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL (and _TRACES_PROTOCOL),\n\
              OTEL_EXPORTER_OTLP_HEADERS (and _TRACES_HEADERS), OTEL_EXPORTER_OTLP_TIMEOUT (ms);\n\
              flags beat them. OTEL_SERVICE_NAME renames the harness's own spans,\n\
              OTEL_RESOURCE_ATTRIBUTES adds to every resource what it lacks, and\n\
              OTEL_TRACES_EXPORTER=none turns off export the variables configure. OTLP/HTTP over\n\
              http or https (trusting --ca-file's CAs besides the system's); no gRPC, no gzip. A busy receiver (429, 502, 503, 504) or an\n\
              unreachable one is retried with backoff. Exit 0 when every run was exported, 1 when\n\
              one failed.",
    flags: &[
        Flag::switch("all", "Export every stored run, oldest first"),
        Flag::taking(
            "since",
            "T",
            "With --all: only runs completed at or after T (RFC 3339, or 90s/15m/2h/7d ago)",
        ),
        setup::RUNS,
        OTLP_ENDPOINT,
        OTLP_TRACES_ENDPOINT,
        Flag::taking(
            "otlp-file",
            "F",
            "Append one OTLP/JSON request per run to F instead (- for stdout)",
        ),
        OTLP_PROTOCOL,
        OTLP_HEADER,
        setup::CA_FILE,
        setup::CA_ONLY,
        setup::TLS_CLIENT_CERT,
        setup::TLS_CLIENT_KEY,
    ],
    run,
};

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The OTLP flags as given.
pub(crate) fn otlp_flags(args: &Parsed) -> OtlpFlags {
    OtlpFlags {
        endpoint: args.value("otlp-endpoint").map(str::to_string),
        traces_endpoint: args.value("otlp-traces-endpoint").map(str::to_string),
        protocol: args.value("otlp-protocol").map(str::to_string),
        headers: args.values("otlp-header").to_vec(),
    }
}

/// For `serve` and `demo`: the background exporter the flags and variables configure, if
/// any, reporting on stderr under `who`. This process made the harness's spans, so its
/// instance id names them.
pub(crate) fn start_exporter(
    args: &Parsed,
    who: &'static str,
    client: HttpClient,
) -> Result<Option<Exporter>, String> {
    let instance_id = new_instance_id();
    let Some(config) = otlp_config(args, who, Some(&instance_id))? else {
        return Ok(None);
    };
    let hook: ErrorHook = Arc::new(move |e| stderr_line!("ddwire {who}: {e}"));
    let exporter = Exporter::start(config, client, ExporterOptions::default(), Some(hook))
        .map_err(|e| e.to_string())?;
    Ok(Some(exporter))
}

/// The OTLP export the flags and the environment configure, if any, for spans of this
/// harness instance (`None`: read from stored runs), saying on stderr under `who` what it noted.
fn otlp_config(
    args: &Parsed,
    who: &str,
    instance_id: Option<&str>,
) -> Result<Option<OtlpConfig>, String> {
    let local = Local {
        service: Some(SERVICE_NAME),
        instance_id,
    };
    let config = OtlpConfig::resolve(&otlp_flags(args), &env, local).map_err(|e| e.to_string())?;
    for note in config.iter().flat_map(|c| &c.notes) {
        stderr_line!("ddwire {who}: {note}");
    }
    Ok(config)
}

/// How long `--since` reaches back: `90s`, `15m`, `2h`, `7d`, or an RFC 3339 time.
fn since(value: &str) -> Result<i128, String> {
    // An RFC 3339 time (or a date), as the run listings' --since reads one.
    if let Some(t) = crate::harness::store::parse_time(value) {
        return Ok(t);
    }
    let age = [("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        .into_iter()
        .find_map(|(unit, seconds)| {
            Some((value.strip_suffix(unit)?.parse::<i128>().ok()?, seconds))
        })
        .filter(|&(n, _)| n >= 0);
    let (n, seconds) = age.ok_or_else(|| {
        format!(
            "--since expects an RFC 3339 time or an age such as 90s, 15m, 2h or 7d, got {value:?}"
        )
    })?;
    Ok(i128::from(crate::time::now_ns()) - n * seconds * 1_000_000_000)
}

fn run(args: &Parsed) -> Result<i32, String> {
    let runs = setup::runs_dir(args);
    // Read only: export may run beside a live harness, or on a store it may not write.
    let store = RunReader::open(&runs);
    let ids: Vec<String> = match (args.switch("all"), args.positionals.is_empty()) {
        (true, true) => {
            let since = args.value("since").map(since).transpose()?;
            let store = store.as_ref().map_err(|e| e.to_string())?;
            store.run_ids(since).map_err(|e| e.to_string())?
        }
        // A run may be named by a unique prefix of its id; one that names none is reported
        // below, with the others.
        (false, false) if args.value("since").is_none() => args
            .positionals
            .iter()
            .map(|r| match store.as_ref().map(|s| s.resolve(r)) {
                Ok(Ok(id)) => id,
                Ok(Err(e @ HarnessError::Store(StoreError::AmbiguousRun { .. }))) => {
                    stderr_line!("ddwire export: {e}");
                    r.clone()
                }
                _ => r.clone(),
            })
            .collect(),
        (false, false) => return Err("--since goes with --all".into()),
        (true, false) => return Err("give RUN_IDs or --all, not both".into()),
        (false, true) => return Err("expects RUN_IDs, or --all".into()),
    };
    let mut out = Output::of(args)?;
    if ids.is_empty() {
        stderr_line!("ddwire export: no runs to export in {}", runs.display());
        return Ok(0);
    }
    let (mut exported, mut spans_total, mut failed) = (0usize, 0usize, 0usize);
    for id in &ids {
        let sent = match store.as_ref().map_or(Ok(None), |s| s.span_records(id)) {
            Ok(None) => Err(format!("no run {id} in {}", runs.display())),
            Ok(Some(spans)) if spans.is_empty() => {
                stderr_line!("ddwire export: run {id} has no spans; nothing to send");
                continue;
            }
            Ok(Some(spans)) => out
                .write(&spans)
                .map(|()| spans.len())
                .map_err(|e| format!("run {id}: {e}")),
            Err(e) => Err(format!("run {id}: {e}")),
        };
        match sent {
            Ok(n) => {
                exported += 1;
                spans_total += n;
            }
            Err(e) => {
                stderr_line!("ddwire export: {e}");
                failed += 1;
            }
        }
    }
    stderr_line!(
        "ddwire export: {exported} run(s), {spans_total} span(s) exported to {}{}",
        out.describe(),
        if failed > 0 {
            format!("; {failed} run(s) failed")
        } else {
            String::new()
        }
    );
    Ok(if failed > 0 { 1 } else { 0 })
}

enum Output {
    Endpoint(OtlpConfig, HttpClient),
    /// `--otlp-file`: its path, the file opened for appending (`None` for `-`, stdout), and
    /// the resource each line's spans are of.
    File(String, Option<std::fs::File>, ExportResource),
}

impl Output {
    /// Where the flags send the runs: the `--otlp-file` (OTLP/JSON lines), else the OTLP
    /// endpoint the flags or the environment name.
    fn of(args: &Parsed) -> Result<Output, String> {
        Ok(match args.value("otlp-file") {
            Some(path) => {
                let flags = otlp_flags(args);
                if flags.endpoint.is_some() || flags.traces_endpoint.is_some() {
                    return Err(
                        "--otlp-file writes to a file; give it or an endpoint, not both".into(),
                    );
                }
                if flags.protocol.is_some() || !flags.headers.is_empty() {
                    return Err(
                        "--otlp-file always writes OTLP/JSON; --otlp-protocol and --otlp-header are for endpoints".into(),
                    );
                }
                let local = Local {
                    service: Some(SERVICE_NAME),
                    instance_id: None,
                };
                let resource = resource_from_env(&env, local).map_err(|e| e.to_string())?;
                let file = (path != "-")
                    .then(|| {
                        std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(path)
                    })
                    .transpose()
                    .map_err(|e| format!("opening {path}: {e}"))?;
                Output::File(path.to_string(), file, resource)
            }
            None => match otlp_config(args, "export", None)? {
                Some(config) => Output::Endpoint(config, setup::http_client(args, None)?),
                None => {
                    return Err(
                        "nowhere to export: give --otlp-endpoint URL, --otlp-traces-endpoint URL or --otlp-file F (or set OTEL_EXPORTER_OTLP_ENDPOINT)".into(),
                    );
                }
            },
        })
    }

    fn write(&mut self, spans: &[crate::trace::SpanRecord]) -> Result<(), String> {
        match self {
            Output::Endpoint(config, client) => {
                let delivery = send(client, config, spans, &RetryPolicy::default())
                    .map_err(|e| e.to_string())?;
                if delivery.rejected_spans > 0 || delivery.message.is_some() {
                    stderr_line!(
                        "ddwire export: the receiver rejected {} span(s): {}",
                        delivery.rejected_spans,
                        delivery.message.unwrap_or_default()
                    );
                }
                Ok(())
            }
            Output::File(_, file, resource) => {
                // One request per line, as the collector's file exporter and the Python
                // FileSpanExporter write it; one write per line, so lines never interleave.
                let mut line = Encoding::Json.encode(spans, resource, &Scope::ddwire());
                line.push(b'\n');
                let Some(f) = file else {
                    // A reader that stopped (`| head -1`) has all it wanted: end quietly, as
                    // every command does on a closed pipe.
                    super::write_stdout(format_args!("{}", String::from_utf8_lossy(&line)));
                    return Ok(());
                };
                f.write_all(&line)
                    .map_err(|e| format!("writing {}: {e}", self.describe()))
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Output::Endpoint(config, _) => {
                format!("{} ({})", config.endpoint, config.encoding.protocol())
            }
            Output::File(_, None, _) => "stdout".into(),
            Output::File(path, Some(_), _) => path.clone(),
        }
    }
}

/// Wait for `exporter` to send what it holds, at most `timeout`, and say how it went.
pub(crate) fn finish_exporter(exporter: &Exporter, who: &str, timeout: Duration) {
    let settled = exporter.flush(timeout);
    let s = exporter.stats();
    stderr_line!(
        "ddwire {who}: OTLP export to {}: {} run(s), {} span(s) exported; {} dropped, {} failed{}",
        exporter.config().endpoint,
        s.exported_batches,
        s.exported_spans,
        s.dropped_batches,
        s.failed_batches,
        if settled {
            String::new()
        } else {
            format!("; {} still queued after {} s", s.queued, timeout.as_secs())
        }
    );
}
