//! `ddwire runs`, `ddwire show`, `ddwire replay`: reading the run store, read-only.

use super::args::{Flag, Parsed};
use super::{Command, setup, written};
use crate::harness::agui::replay_events;
use crate::harness::store::StoreError;
use crate::harness::store::{Query, RunReader, parse_time};
use crate::harness::view;
use crate::trace::waterfall;
use std::io::Write;
use std::ops::ControlFlow;

const RUN_FLAG: Flag = Flag::taking(
    "after",
    "RUN",
    "Continue after this run (an id or a unique prefix): the runs older than it",
);

pub(crate) static RUNS: Command = Command {
    name: "runs",
    summary: "List the stored runs, newest first",
    usage: "runs [--limit N] [--after RUN] [--agent ID] [--status S] [--principal P]\n       \
            [--conversation ID] [--since TIME] [--until TIME] [--json] [--runs DIR]",
    details: "Prints one line per run: id, agent, status, completed_at and whom it acted for;\n\
              with --json, one JSON object per line. The index is read a block at a time from\n\
              its end, so a store of any size lists in flat memory. Filters combine; TIME is\n\
              RFC 3339 (2026-01-02T03:04:05Z) or a date (2026-01-02). With --limit, the\n\
              command for the next page is printed on stderr when more runs match.\n\n\
              Read-only: nothing in the store is created or changed, so it works on a\n\
              read-only file system and beside a running harness.",
    flags: &[
        Flag::taking("limit", "N", "At most N runs"),
        RUN_FLAG,
        Flag::taking("agent", "ID", "Only runs of this agent"),
        Flag::taking(
            "status",
            "S",
            "Only runs with this outcome (succeeded, failed, abstained, referred, ...)",
        ),
        Flag::taking(
            "principal",
            "P",
            "Only runs acting for this principal (its id or name)",
        ),
        Flag::taking("conversation", "ID", "Only runs of this conversation"),
        Flag::taking("since", "TIME", "Only runs completed at or after TIME"),
        Flag::taking("until", "TIME", "Only runs completed before TIME"),
        Flag::switch("json", "Print one JSON object per line"),
        setup::RUNS,
    ],
    run: runs,
};

pub(crate) static SHOW: Command = Command {
    name: "show",
    summary: "Show a stored run: its envelope summarised, and its trace as a waterfall",
    usage: "show RUN [--envelope] [--json] [--width N] [--runs DIR]",
    details: "RUN is a run id or a unique prefix of one. Prints the envelope summarised (outcome,\n\
              problem, grounding verdict, a withheld result), then the run's spans as a\n\
              waterfall: each span's start and duration in one unit, a bar on one time axis\n\
              scaled to the terminal (COLUMNS, or --width; default 100), its name, agent, owned\n\
              attributes, status and events. Delegated runs are read from the store and drawn\n\
              under the delegate span that started them. Spans of a withheld result are marked.\n\
              Colour only on a terminal, and never with NO_COLOR set. Read-only.",
    flags: &[ENVELOPE_FLAG, JSON_FLAG, WIDTH_FLAG, setup::RUNS],
    run: |args| draw(args, true),
};

pub(crate) static TRACE: Command = Command {
    name: "trace",
    summary: "Draw a stored run's trace as a waterfall, its delegated runs nested",
    usage: "trace RUN [--json] [--width N] [--runs DIR]",
    details: "The waterfall of `ddwire show` without the envelope's summary: RUN is a run id or a\n\
              unique prefix of one. Read-only.",
    flags: &[JSON_FLAG, WIDTH_FLAG, setup::RUNS],
    run: |args| draw(args, false),
};

const ENVELOPE_FLAG: Flag = Flag::switch(
    "envelope",
    "Print the stored envelope in full instead of its summary",
);
const JSON_FLAG: Flag = Flag::switch("json", "Print the view as one JSON document, for scripts");
const WIDTH_FLAG: Flag = Flag::taking(
    "width",
    "N",
    "Draw for a terminal N columns wide (default: COLUMNS, else 100)",
);

pub(crate) static REPLAY: Command = Command {
    name: "replay",
    summary: "Print a stored run as the AG-UI events GET /agui/runs/{id} sends",
    usage: "replay RUN [--runs DIR]",
    details: "RUN is a run id or a unique prefix of one. Read-only.",
    flags: &[setup::RUNS],
    run: replay,
};

/// The store, and the id of the run its one positional argument names.
fn one_run(args: &Parsed) -> Result<(RunReader, String), String> {
    let store = setup::reader(args)?;
    let [reference] = args.positionals.as_slice() else {
        return Err("expects one RUN (an id or a unique prefix of one)".into());
    };
    let id = setup::resolve(&store, reference)?;
    Ok((store, id))
}

fn runs(args: &Parsed) -> Result<i32, String> {
    args.no_arguments()?;
    let store = setup::reader(args)?;
    let query = runs_query(args, &store)?;
    let json = args.switch("json");
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut printed = 0usize;
    let mut more = false;
    let mut last_id: Option<String> = None;
    let mut wrote = Ok(true);
    let scan = store
        .rows_newest_first(&query, |_, row| {
            if query.limit.is_some_and(|l| printed == l) {
                more = true;
                return ControlFlow::Break(());
            }
            wrote = written(writeln!(out, "{}", row_line(&row, json)));
            if wrote != Ok(true) {
                return ControlFlow::Break(());
            }
            printed += 1;
            last_id = row["invocation_id"].as_str().map(str::to_string);
            ControlFlow::Continue(())
        })
        .map_err(|e| match e {
            crate::harness::HarnessError::Store(StoreError::NoSuchRun { reference, store }) => format!(
                "--after {reference}: the index of {} does not list that run (a harness opening the store indexes every stored run)",
                store.display()
            ),
            other => other.to_string(),
        })?;
    wrote?;
    written(out.flush())?;
    if scan.skipped > 0 {
        stderr_line!(
            "ddwire runs: skipped {} index line(s) that are not JSON ({}); a harness opening the store repairs them",
            scan.skipped,
            scan.first_problem.unwrap_or_default()
        );
    }
    if let (true, Some(last)) = (more, &last_id) {
        stderr_line!(
            "more runs match; the next page: {} --after {last}",
            this_page_command()
        );
    }
    if printed == 0 && scan.skipped == 0 && query == Query::default() {
        stderr_line!("no runs in {}", store.shown_root().display());
    }
    Ok(0)
}

/// The index query the flags of `runs` ask for.
fn runs_query(args: &Parsed, store: &RunReader) -> Result<Query, String> {
    let time = |flag: &str| -> Result<Option<i128>, String> {
        args.value(flag)
            .map(|v| {
                parse_time(v).ok_or_else(|| {
                    format!("--{flag} {v:?} is not a time: give RFC 3339 (2026-01-02T03:04:05Z) or a date (2026-01-02)")
                })
            })
            .transpose()
    };
    Ok(Query {
        limit: args.at_least_one("limit", "")?,
        after: args
            .value("after")
            .map(|r| {
                // A whole id marks its place in the index even if its directory is gone.
                let id = r.trim().to_ascii_lowercase();
                if crate::ids::is_uuid7(&id) {
                    Ok(id)
                } else {
                    setup::resolve(store, r)
                }
            })
            .transpose()?,
        agent_id: args.value("agent").map(str::to_string),
        status: args
            .value("status")
            .map(|s| {
                crate::contract::OutcomeStatus::parse_or_list(s)
                    .map(|o| o.as_str().to_string())
                    .map_err(|e| format!("--status {e}"))
            })
            .transpose()?,
        principal: args.value("principal").map(str::to_string),
        conversation_id: args.value("conversation").map(str::to_string),
        since: time("since")?,
        until: time("until")?,
        ..Query::default()
    })
}

/// One index row as `runs` prints it: the row's JSON, or its id, agent, status, time and
/// principal in columns.
fn row_line(row: &serde_json::Value, json: bool) -> String {
    if json {
        return row.to_string();
    }
    let text = |k: &str| row.get(k).and_then(|v| v.as_str()).unwrap_or("-");
    format!(
        "{}  {:<18} {:<10} {}  {}",
        text("invocation_id"),
        text("agent_id"),
        text("status"),
        text("completed_at"),
        text("acting_for")
    )
}

/// This `ddwire runs` command as it was typed, without its `--after`.
fn this_page_command() -> String {
    let mut command = String::from("ddwire runs");
    let mut args = std::env::args().skip(2);
    while let Some(arg) = args.next() {
        if arg == "--after" {
            args.next();
        } else if !arg.starts_with("--after=") {
            command.push(' ');
            command.push_str(&arg);
        }
    }
    command
}

/// `show` (with the envelope) and `trace` (without).
fn draw(args: &Parsed, with_envelope: bool) -> Result<i32, String> {
    let (store, id) = one_run(args)?;
    let id = id.as_str();
    let view = view::load(&store, id)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no run {id} in {}", store.shown_root().display()))?;
    let mut out = std::io::stdout().lock();
    if args.switch("json") {
        written(writeln!(out, "{}", waterfall::to_json(&view)))?;
        return Ok(0);
    }
    let mut options = setup::terminal(args, &std::io::stdout())?;
    options.summary = with_envelope;
    let mut text = String::new();
    if with_envelope && args.switch("envelope") {
        let envelope = store
            .envelope_text(id)
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        text.push_str(envelope.trim_end());
        text.push_str("\n\n");
        options.summary = false;
    }
    text.push_str(&waterfall::render(&view, &options));
    if with_envelope && store.agent_reply(id).map_err(|e| e.to_string())?.is_some() {
        text.push_str(&format!(
            "\nThe agent's reply as received is kept in {}",
            store
                .shown_root()
                .join(id)
                .join(crate::harness::store::AGENT_REPLY_FILE)
                .display()
        ));
    }
    written(writeln!(out, "{}", text.trim_end()))?;
    Ok(0)
}

fn replay(args: &Parsed) -> Result<i32, String> {
    let (store, id) = one_run(args)?;
    let envelope = store
        .envelope(&id)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no run {id} in {}", store.shown_root().display()))?;
    let spans = store.spans(&id).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    for event in replay_events(&envelope, spans.as_deref()) {
        let frame = String::from_utf8_lossy(&event.to_sse()).into_owned();
        if !written(out.write_all(frame.as_bytes()))? {
            break;
        }
    }
    Ok(0)
}
