//! `ddwire wirelog FILE`: a wire log, for people.

use super::args::{Flag, Parsed};
use super::{Command, written};
use crate::wire::wirelog;
use std::io::{BufRead, Write};

pub(crate) static COMMAND: Command = Command {
    name: "wirelog",
    summary: "Print a wire log (--wire-log FILE) readably, message by message",
    usage: "wirelog FILE|- [--connection N] [--heads]",
    details: "Each message: a rule with its time, connection, side (server or client), direction\n\
              and peer, what was masked, then its head and body as text. Control characters and\n\
              bytes that are not UTF-8 are shown escaped, never passed to the terminal. Lines\n\
              that record lost messages, and the closing totals, are shown where they fall.\n\
              The format is vendor-notes/wire-log.md. Exit 1 if a line is not a wire log line.",
    flags: &[
        Flag::taking("connection", "N", "Only the messages of connection N"),
        Flag::switch("heads", "Heads only, no bodies"),
    ],
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    let [path] = args.positionals.as_slice() else {
        return Err("expects one FILE (a wire log), or - for stdin".into());
    };
    let connection = args.number::<u64>("connection")?;
    let heads = args.switch("heads");
    let input: Box<dyn BufRead> = if path == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let file = std::fs::File::open(path).map_err(|e| format!("reading {path}: {e}"))?;
        Box::new(std::io::BufReader::new(file))
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut bad = 0usize;
    for (n, line) in input.split(b'\n').enumerate() {
        let line = line.map_err(|e| format!("reading {path}: {e}"))?;
        let line = String::from_utf8_lossy(&line);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(want) = connection {
            let doc: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            if doc.get("connection").and_then(serde_json::Value::as_u64) != Some(want) {
                continue;
            }
        }
        let shown = match wirelog::readable(&line) {
            Some(text) if heads => {
                let head_end = text.find("\n\n").map_or(text.len(), |i| i + 1);
                text[..head_end].to_string()
            }
            Some(text) => text,
            None => {
                bad += 1;
                stderr_line!("ddwire wirelog: line {} is not a wire log line", n + 1);
                continue;
            }
        };
        if !written(writeln!(out, "{shown}"))? {
            return Ok(0);
        }
    }
    written(out.flush())?;
    Ok(if bad > 0 { 1 } else { 0 })
}
