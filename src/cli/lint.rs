//! `ddwire lint`: the grounding linter over a span file and an envelope, offline.

use super::args::Parsed;
use super::{Command, read_input};
use ddwire::harness::grounding;
use ddwire::trace;

pub static COMMAND: Command = Command {
    name: "lint",
    summary: "Run the grounding linter over SPANS.jsonl and ENVELOPE.json",
    usage: "lint SPANS.jsonl ENVELOPE.json",
    details: "Reads span JSON lines (as ddwire or the Python reference writes them) and an\n\
              envelope, prints the grounding report, and exits 0 if it passed, 1 if not.",
    flags: &[],
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    let [spans, envelope] = args.positionals.as_slice() else {
        return Err("expects SPANS.jsonl and ENVELOPE.json".into());
    };
    let text =
        String::from_utf8(read_input(spans)?).map_err(|_| format!("{spans} is not UTF-8"))?;
    let mut records = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        records.push(trace::from_json(line).map_err(|e| format!("{spans}:{}: {e}", i + 1))?);
    }
    let envelope = ddwire::json::parse(&read_input(envelope)?, ddwire::json::Limits::DEFAULT)
        .map_err(|e| format!("{envelope}: {e}"))?;
    let report = grounding::lint(&records, &envelope);
    println!("{}", report.summary());
    Ok(if report.passed { 0 } else { 1 })
}
