//! `ddwire lint`: the grounding linter, offline, over a stored run or over its files; and the
//! relay session linter over the files `ddwire relay --traces` writes.

use super::args::{Flag, Parsed};
use super::{Command, read_input, setup};
use crate::harness::grounding::{self, GroundingReport};
use crate::harness::store::{
    AGENT_REPLY_FILE, ENVELOPE_FILE, GROUNDING_FILE, RunReader, SPANS_FILE,
};
use crate::trace::relay_lint::{self, RelayReport};
use crate::trace::{self, SpanRecord};
use serde_json::Value;
use std::path::Path;

pub(crate) static COMMAND: Command = Command {
    name: "lint",
    summary: "Reproduce a run's grounding verdict offline, from the run store or from files",
    usage: "lint RUN [--runs DIR] [--json]\n       ddwire lint --all [--runs DIR] [--json]\n       ddwire lint SPANS.jsonl ENVELOPE.json [AGENT_RESULT.json]\n       ddwire lint [--relay] SESSION.jsonl [--json]\n       ddwire lint --all TRACES_DIR [--relay] [--json]",
    details: "RUN is a run id, a unique prefix of one, or a run directory (runs/<id>, or any\n\
              folder holding a run's files, like fixtures/runs/retrieval-passed). The linter\n\
              reads the run's spans.jsonl, envelope.json and agent-result.json (the agent's reply\n\
              as the harness received it) and gives the report the harness gave when it ran:\n\
              a withheld result is linted with the payload and evidence the agent sent, so it\n\
              FAILS as it did then. A run refused or referred before its agent ran (by the\n\
              profile, or because the agent does not accept the input) had no output to check:\n\
              the report says the linter did not run. With RUN, the report is compared with the\n\
              run's grounding.txt, and a difference is an error. --all does this for every run\n\
              in the store, one line each (id, verdict, and DIFFERS where the two disagree),\n\
              and exits 1 if any run's verdict differs from its grounding.txt, else 0.\n\n\
              The file form reads span JSON lines (as ddwire or the Python reference writes them)\n\
              and an envelope; for a withheld envelope, name the agent's reply too (or keep\n\
              agent-result.json beside the envelope, where the run store puts it).\n\n\
              A relay session (a file `ddwire relay --traces DIR` wrote, DIR/<contextId>.jsonl,\n\
              recognised by its span names, or any span file with --relay) is checked against\n\
              the eight assertions of a relay session's trace, each named with its verdict:\n\
              parents, propagation, session, task-states, stream-chunks, failure-class,\n\
              time-nesting, attribute-names. --all TRACES_DIR (or TRACES_DIR alone, a folder\n\
              of *.jsonl that is not a run directory) checks every *.jsonl in the folder, one\n\
              line each, and exits 1 if any fails or cannot be read.\n\n\
              Exit status: 0 passed, 1 FAILED (or the verdict differs from grounding.txt),\n\
              2 bad usage or unreadable files, 3 the linter did not run (the agent never ran).\n\n\
              --json prints {\"invocation_id\", \"summary\", \"passed\", \"not_run\", \"mode\",\n\
              \"violations\", \"retrieval_count\", \"chat_count\", \"stored\", \"agrees\"}: stored is\n\
              the run's grounding.txt (null when there is none, or with files), agrees whether\n\
              the two are the same. For a relay session: {\"file\", \"session\", \"spans\",\n\
              \"passed\", \"checks\": [{\"check\", \"passed\", \"violations\"}]}.",
    flags: &[
        Flag::switch(
            "all",
            "Check every run in the store against its stored verdict (with TRACES_DIR: every relay session in it)",
        ),
        Flag::switch(
            "relay",
            "Read the file (or every *.jsonl of the folder) as relay sessions",
        ),
        Flag::switch(
            "json",
            "Print the report as JSON (one object per run with --all), for scripts",
        ),
        setup::RUNS,
    ],
    run,
};

/// The exit status of a report that says the linter did not run.
const NOT_RUN: i32 = 3;

fn run(args: &Parsed) -> Result<i32, String> {
    if args.switch("all") {
        return match args.positionals.as_slice() {
            [] if !args.switch("relay") => all(args),
            [dir] => relay_all(args, dir),
            _ => Err(
                "--all checks every run of the store, or with TRACES_DIR every relay session \
                 in it; give no other argument"
                    .into(),
            ),
        };
    }
    match args.positionals.as_slice() {
        [file] if args.switch("relay") => relay_file(args, file),
        [file] if looks_like_relay_session(file) => relay_file(args, file),
        // A folder of relay sessions (not a run directory): every session in it, as --all.
        [dir] if looks_like_traces_folder(dir) => relay_all(args, dir),
        [] if args.switch("relay") => Err("--relay expects a SESSION.jsonl file".into()),
        [reference] => stored(args, reference),
        [spans, envelope] => files(args, spans, envelope, None),
        [spans, envelope, reply] => files(args, spans, envelope, Some(reply)),
        [] => Err(
            "expects a RUN (an id, a unique prefix of one, or a run directory), or \
                   SPANS.jsonl ENVELOPE.json [AGENT_RESULT.json]; see `ddwire lint --help`"
                .into(),
        ),
        more => Err(format!(
            "expects one RUN or two or three files, got {} arguments; see `ddwire lint --help`",
            more.len()
        )),
    }
}

/// Whether `path` is a folder of session files (`*.jsonl`) rather than a run directory.
fn looks_like_traces_folder(path: &str) -> bool {
    let given = Path::new(path);
    given.is_dir()
        && !given.join(ENVELOPE_FILE).exists()
        && std::fs::read_dir(given).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        })
}

/// How much of a file is read to find its first span.
const FIRST_SPAN_MAX: u64 = 1 << 20;

/// Whether `path` is a file whose first span is one a relay writes (read no further).
fn looks_like_relay_session(path: &str) -> bool {
    let given = Path::new(path);
    if !given.is_file() || given.join(ENVELOPE_FILE).exists() {
        return false;
    }
    // The first span only, read within a bound, however large the file.
    use std::io::{BufRead, Read};
    let Ok(file) = std::fs::File::open(given) else {
        return false;
    };
    let lines = std::io::BufReader::new(file.take(FIRST_SPAN_MAX)).lines();
    let first = lines.map_while(Result::ok).find(|l| !l.trim().is_empty());
    first.is_some_and(|line| {
        trace::from_json(line.trim_end())
            .is_ok_and(|span| relay_lint::is_relay_session(std::slice::from_ref(&span)))
    })
}

/// One relay session file's report.
fn relay_report(path: &str) -> Result<RelayReport, String> {
    let bytes = read_input(path)?;
    let spans = relay_lint::read_session(&bytes).map_err(|e| format!("{path}: {e}"))?;
    let name = Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|_| path != "-");
    Ok(relay_lint::lint(&spans, name))
}

/// `lint [--relay] SESSION.jsonl`.
fn relay_file(args: &Parsed, path: &str) -> Result<i32, String> {
    let report = relay_report(path)?;
    if args.switch("json") {
        outln!("{}", report.to_json(Some(path)));
    } else {
        outln!("{}", report.summary());
    }
    Ok(if report.passed() { 0 } else { 1 })
}

/// `lint --all TRACES_DIR`: every `*.jsonl` of the folder, one line each.
fn relay_all(args: &Parsed, dir: &str) -> Result<i32, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {dir}: {e}"))?;
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{dir} holds no *.jsonl relay session"));
    }
    let (mut passed, mut failed, mut unreadable) = (0usize, 0usize, 0usize);
    for file in &files {
        let shown = file.display().to_string();
        match relay_report(&shown) {
            Err(e) => {
                unreadable += 1;
                print_unreadable(args, "file", &shown, &e);
            }
            Ok(report) => {
                passed += usize::from(report.passed());
                failed += usize::from(!report.passed());
                // A file's name is the peer's contextId: escaped before a terminal sees it.
                let escaped = crate::text::escape_str(&shown, false);
                let names: Vec<&str> = report.failed().iter().map(|c| c.id()).collect();
                if args.switch("json") {
                    outln!("{}", report.to_json(Some(&shown)));
                } else if report.passed() {
                    outln!("{escaped}  passed ({} spans)", report.spans);
                } else {
                    outln!("{escaped}  FAILED: {}", names.join(", "));
                }
            }
        }
    }
    stderr_line!(
        "ddwire lint: {} relay sessions in {dir}: {passed} passed, {failed} failed, {unreadable} unreadable",
        files.len()
    );
    Ok(if failed + unreadable > 0 { 1 } else { 0 })
}

/// One `--all` line for something that could not be read: `{<key>: name, "error"}` with
/// `--json`, else `<name>  UNREADABLE: <error>`.
fn print_unreadable(args: &Parsed, key: &str, name: &str, error: &str) {
    if args.switch("json") {
        outln!("{}", serde_json::json!({key: name, "error": error}));
    } else {
        outln!(
            "{}  UNREADABLE: {}",
            crate::text::escape_str(name, false),
            crate::text::escape_str(error, false)
        );
    }
}

/// A stored run's report, from its files.
fn relint(reader: &RunReader, id: &str) -> Result<GroundingReport, String> {
    grounding::relint(reader, id)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{id} holds no {ENVELOPE_FILE}"))
}

/// `lint --all`: every run of the store, each against its `grounding.txt`.
fn all(args: &Parsed) -> Result<i32, String> {
    let reader = setup::reader(args)?;
    let ids = reader.run_ids(None).map_err(|e| e.to_string())?;
    let (mut agree, mut differ, mut unreadable) = (0usize, 0usize, 0usize);
    for id in &ids {
        let report = match relint(&reader, id) {
            Ok(r) => r,
            Err(e) => {
                unreadable += 1;
                print_unreadable(args, "invocation_id", id, &e);
                continue;
            }
        };
        let summary = report.summary();
        let first = summary.lines().next().unwrap_or("");
        let stored = reader.grounding(id).map_err(|e| e.to_string())?;
        let agrees = stored.as_deref().is_some_and(|s| s.trim_end() == summary);
        agree += usize::from(agrees);
        differ += usize::from(!agrees);
        match stored {
            _ if args.switch("json") => outln!("{}", report.to_json(Some(id), stored.as_deref())),
            _ if agrees => outln!("{id}  {first}"),
            Some(stored) => outln!(
                "{id}  {first}  DIFFERS from grounding.txt: {}",
                stored.lines().next().unwrap_or("")
            ),
            None => outln!("{id}  {first}  DIFFERS: no grounding.txt stored"),
        }
    }
    stderr_line!(
        "ddwire lint: {} runs in {}: {agree} agree with their stored verdict, {differ} differ, {unreadable} unreadable",
        ids.len(),
        reader.shown_root().display()
    );
    Ok(if differ + unreadable > 0 { 1 } else { 0 })
}

/// `lint RUN`: a run of the store, or any run directory (a store's `runs/<id>`, or a copy of
/// one such as `fixtures/runs/*`), checked against its `grounding.txt`.
fn stored(args: &Parsed, reference: &str) -> Result<i32, String> {
    let given = Path::new(reference);
    let dir = if given.join(ENVELOPE_FILE).is_file() {
        given.to_path_buf()
    } else {
        let reader = setup::reader(args)?;
        let id = setup::resolve(&reader, reference)?;
        reader.shown_root().join(id)
    };
    let read = |name: &str| -> Result<Option<Vec<u8>>, String> {
        match std::fs::read(dir.join(name)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("reading {}: {e}", dir.join(name).display())),
        }
    };
    let json = |name: &str| -> Result<Option<Value>, String> {
        read(name)?
            .map(|bytes| {
                crate::json::parse(&bytes, crate::json::Limits::DEFAULT)
                    .map_err(|e| format!("{}: {e}", dir.join(name).display()))
            })
            .transpose()
    };
    let envelope = json(ENVELOPE_FILE)?
        .ok_or_else(|| format!("{} holds no {ENVELOPE_FILE}", dir.display()))?;
    let spans_path = dir.join(SPANS_FILE).display().to_string();
    let records = span_lines(&spans_path, read(SPANS_FILE)?.unwrap_or_default())?;
    let reply = json(AGENT_REPLY_FILE)?;
    let report = lint(&records, &envelope, reply.as_ref(), &dir);
    let code = exit_code(&report);
    let stored = read(GROUNDING_FILE)?.map(|b| String::from_utf8_lossy(&b).into_owned());
    print(args, &envelope, &report, stored.as_deref());
    match stored {
        Some(stored) if stored.trim_end() != report.summary() => {
            stderr_line!(
                "ddwire lint: this differs from the verdict the harness stored in {}:\n{}",
                dir.join(GROUNDING_FILE).display(),
                stored.trim_end()
            );
            Ok(1)
        }
        Some(_) => Ok(code),
        None => {
            stderr_line!(
                "ddwire lint: {} has no {GROUNDING_FILE} to compare with",
                dir.display()
            );
            Ok(code)
        }
    }
}

/// `lint SPANS ENVELOPE [AGENT_RESULT]`.
fn files(
    args: &Parsed,
    spans: &str,
    envelope_path: &str,
    reply: Option<&String>,
) -> Result<i32, String> {
    let records = span_lines(spans, read_input(spans)?)?;
    let envelope = json_file(envelope_path)?;
    let beside = Path::new(envelope_path)
        .parent()
        .map(|d| d.join(AGENT_REPLY_FILE))
        .filter(|p| envelope_path != "-" && p.is_file());
    let reply = match (reply, beside) {
        (Some(path), _) => Some(json_file(path)?),
        (None, Some(path)) if grounding::is_withheld(&records, &envelope) => {
            stderr_line!(
                "ddwire lint: the envelope was withheld; linting the agent's reply from {}",
                path.display()
            );
            Some(json_file(&path.to_string_lossy())?)
        }
        (None, _) => None,
    };
    let report = lint(
        &records,
        &envelope,
        reply.as_ref(),
        Path::new(envelope_path),
    );
    print(args, &envelope, &report, None);
    Ok(exit_code(&report))
}

/// The report on a run's `records` and `envelope`, the agent's `reply` put back into a withheld
/// envelope; a withheld one without it is linted as stored, saying so and naming `whence`.
fn lint(
    records: &[SpanRecord],
    envelope: &Value,
    reply: Option<&Value>,
    whence: &Path,
) -> GroundingReport {
    if reply.is_none() && grounding::is_withheld(records, envelope) {
        stderr_line!(
            "ddwire lint: {} is a withheld result and no agent reply ({AGENT_REPLY_FILE}) was \
             found: its payload is gone, so this report is on what was stored, not on what the \
             agent sent",
            whence.display()
        );
    }
    grounding::lint_stored(records, envelope, reply)
}

/// A report as `--json` prints it (the shape `GET /runs/{id}/grounding` answers too), else
/// its summary.
fn print(args: &Parsed, envelope: &Value, report: &GroundingReport, stored: Option<&str>) {
    if args.switch("json") {
        let id = envelope.get("invocation_id").and_then(Value::as_str);
        outln!("{}", report.to_json(id, stored));
    } else {
        outln!("{}", report.summary());
    }
}

fn exit_code(report: &GroundingReport) -> i32 {
    if report.not_run.is_some() {
        NOT_RUN
    } else if report.passed {
        0
    } else {
        1
    }
}

/// The spans of the span JSON lines `bytes` read from `path`.
fn span_lines(path: &str, bytes: Vec<u8>) -> Result<Vec<SpanRecord>, String> {
    let text = String::from_utf8(bytes).map_err(|_| format!("{path} is not UTF-8"))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| trace::from_json(line).map_err(|e| format!("{path}:{}: {e}", i + 1)))
        .collect()
}

fn json_file(path: &str) -> Result<Value, String> {
    crate::json::parse(&read_input(path)?, crate::json::Limits::DEFAULT)
        .map_err(|e| format!("{path}: {e}"))
}
