//! `ddwire runs`, `ddwire show`, `ddwire replay`: reading the run store.

use super::Command;
use super::args::{Flag, Parsed};
use super::setup;
use ddwire::harness::agui::replay_events;
use ddwire::trace;

pub static RUNS: Command = Command {
    name: "runs",
    summary: "List the stored runs, newest first",
    usage: "runs [--json] [--runs DIR]",
    details: "",
    flags: &[
        Flag {
            name: "json",
            value: None,
            help: "Print JSON",
        },
        setup::RUNS,
    ],
    run: runs,
};

pub static SHOW: Command = Command {
    name: "show",
    summary: "Show a stored run: its envelope, grounding report and span tree",
    usage: "show RUN_ID [--runs DIR]",
    details: "",
    flags: &[setup::RUNS],
    run: show,
};

pub static REPLAY: Command = Command {
    name: "replay",
    summary: "Print a stored run as the AG-UI events GET /agui/runs/{id} sends",
    usage: "replay RUN_ID [--runs DIR]",
    details: "",
    flags: &[setup::RUNS],
    run: replay,
};

fn one_id(args: &Parsed) -> Result<&str, String> {
    match args.positionals.as_slice() {
        [id] => Ok(id),
        _ => Err("expects one RUN_ID".into()),
    }
}

fn runs(args: &Parsed) -> Result<i32, String> {
    let rows = setup::store(args)?.listing().map_err(|e| e.to_string())?;
    if args.switch("json") {
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).unwrap_or_default()
        );
        return Ok(0);
    }
    for r in &rows {
        let text = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("-").to_string();
        println!(
            "{}  {:<18} {:<10} {}  {}",
            text("invocation_id"),
            text("agent_id"),
            text("status"),
            text("completed_at"),
            text("acting_for")
        );
    }
    if rows.is_empty() {
        eprintln!("no runs in {}", setup::runs_dir(args).display());
    }
    Ok(0)
}

fn show(args: &Parsed) -> Result<i32, String> {
    let id = one_id(args)?;
    let store = setup::store(args)?;
    let envelope = store
        .envelope(id)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no run {id}"))?;
    println!(
        "{}",
        serde_json::to_string_pretty(&envelope).unwrap_or_default()
    );
    if let Some(report) = store.grounding(id).map_err(|e| e.to_string())? {
        println!("\n{report}");
    }
    if let Some(lines) = store.spans(id).map_err(|e| e.to_string())? {
        let records: Vec<_> = lines
            .lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| trace::from_json(l).ok())
            .collect();
        println!("\n{}", trace::tree::render(&records));
    }
    Ok(0)
}

fn replay(args: &Parsed) -> Result<i32, String> {
    let id = one_id(args)?;
    let store = setup::store(args)?;
    let envelope = store
        .envelope(id)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no run {id}"))?;
    let spans = store.spans(id).map_err(|e| e.to_string())?;
    for event in replay_events(&envelope, spans.as_deref()) {
        print!("{}", String::from_utf8_lossy(&event.to_sse()));
    }
    Ok(0)
}
