//! The `ddwire` command line: argument parsing, configuration from flags and the environment
//! (`setup`), and one module per command that builds what the library offers and prints what
//! it returns. The wire, the trace, the store and their rules live in the library; what the
//! commands add is presentation and selection, some of it substantial: `runs` turns flags into
//! a store query and prints pages as a table or JSON; `lint` tells a run, its files, a relay
//! session and a traces folder apart and compares each fresh verdict with the stored one;
//! `export` picks stored runs by id or time and sends them to an OTLP receiver or writes the
//! collector's file format; `demo` scripts its seven invocations.
//!
//! Exit codes (`EXIT_CODES`, printed by `ddwire --help`): 0 success, 1 the command ran and
//! reports failure (a lint that failed, a refused invocation; an envelope that did not succeed
//! is still 0), 2 bad usage or configuration, 3 `lint`: the linter did not run.
//!
//! Commands print to stdout with `outln!` and `out!`, never `println!`: a closed pipe then
//! ends the command quietly (clippy's `print_stdout` keeps it so).

#![deny(clippy::print_stdout)]

/// `println!` for commands: once stdout's reader has gone (`ddwire runs | head -1`), the
/// command ends quietly with status 0, as Unix tools do, instead of panicking.
macro_rules! outln {
    () => {
        $crate::cli::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for commands, ending quietly on a closed stdout as [`outln!`] does.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))
    };
}

mod agent;
mod agents;
mod approve;
mod args;
mod check;
mod completions;
mod demo;
mod drain;
mod export;
mod hash;
mod invoke;
mod lint;
mod profile;
mod relay;
mod runs;
mod send;
mod serve;
mod setup;
mod token;
mod wirelog;

use args::{Flag, Parsed};

/// One command: its name, help, flags and entry point.
pub(crate) struct Command {
    pub(crate) name: &'static str,
    pub(crate) summary: &'static str,
    pub(crate) usage: &'static str,
    pub(crate) details: &'static str,
    pub(crate) flags: &'static [Flag],
    pub(crate) run: fn(&Parsed) -> Result<i32, String>,
}

fn commands() -> Vec<&'static Command> {
    vec![
        &demo::COMMAND,
        &serve::COMMAND,
        &relay::COMMAND,
        &invoke::COMMAND,
        &agent::COMMAND,
        &agents::COMMAND,
        &runs::RUNS,
        &runs::SHOW,
        &runs::TRACE,
        &runs::REPLAY,
        &approve::APPROVE,
        &approve::DECLINE,
        &export::COMMAND,
        &lint::COMMAND,
        &profile::COMMAND,
        &token::COMMAND,
        &hash::COMMAND,
        &send::COMMAND,
        &wirelog::COMMAND,
        &check::COMMAND,
        &completions::COMMAND,
    ]
}

/// What each exit status means, for `ddwire --help` and `docs/commands.md`.
pub(crate) const EXIT_CODES: &str = "\
Exit status:
  0  the command did what was asked (an invocation that made an envelope, whatever its
     outcome; a lint that passed; a task that completed)
  1  the command ran and reports a failure: a lint that FAILED (or disagrees with the stored
     verdict), an invocation refused before any run was made, a send whose task did not
     complete, a check that failed
  2  bad usage or configuration: nothing was done (the message says what to change)
  3  lint only: the linter did not run, because the agent never ran (refused or referred)
A closed stdout (`ddwire runs | head -1`) ends any command quietly with status 0.
";

/// The built-in agents as help and errors list them: `hello (hello.world, port 8101), ...`.
pub(crate) fn builtin_agents() -> String {
    builtin_rows()
        .map(|(name, id, port)| format!("{name} ({id}, port {port})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each built-in agent's short name, agent id and default port.
fn builtin_rows() -> impl Iterator<Item = (&'static str, String, u16)> {
    crate::agent::builtin::NAMES.iter().map(|&(name, port)| {
        let id = crate::agent::builtin::by_name(name)
            .map(|a| a.spec().agent_id.clone())
            .unwrap_or_default();
        (name, id, port)
    })
}

/// Help text with `{builtin_agents}` filled in (a table, one agent a line), so help and errors
/// give one list.
fn fill(text: &str) -> String {
    if !text.contains("{builtin_agents}") {
        return text.to_string();
    }
    let table: String = builtin_rows()
        .map(|(name, id, port)| format!("\n  {name:<11} {id:<16} port {port}"))
        .collect();
    text.replace("{builtin_agents}", &table)
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn top_help() -> String {
    let mut out = format!(
        "ddwire {VERSION}: Data Director's wire and trace, with minimal dependencies\n\n\
         Usage: ddwire <command> [options]\n\nCommands:\n"
    );
    for c in commands() {
        out.push_str(&format!("  {:<10} {}\n", c.name, c.summary));
    }
    out.push_str(
        "\nOptions:\n  -h, --help     Print help\n  -V, --version  Print the version\n\n\
         Run `ddwire <command> --help` for a command's options; `ddwire completions bash` for\n\
         shell completion.\n\n",
    );
    out.push_str(EXIT_CODES);
    out
}

fn command_help(c: &Command) -> String {
    let mut out = format!("{}\n\nUsage: ddwire {}\n", fill(c.summary), c.usage);
    if !c.details.is_empty() {
        out.push('\n');
        out.push_str(&fill(c.details));
        out.push('\n');
    }
    out.push_str("\nOptions:\n");
    for f in c.flags {
        let left = match f.value {
            Some(v) => format!("--{} {v}", f.name),
            None => format!("--{}", f.name),
        };
        out.push_str(&format!("  {left:<26} {}\n", f.help));
    }
    out.push_str(&format!("  {:<26} Print help\n", "-h, --help"));
    out
}

/// Run the command line `argv` (program name first); returns the exit code.
pub fn main(argv: Vec<String>) -> i32 {
    let args = &argv[1.min(argv.len())..];
    let Some(first) = args.first() else {
        eprint!("{}", top_help());
        return 2;
    };
    match first.as_str() {
        "-h" | "--help" | "help" => {
            out!("{}", top_help());
            return 0;
        }
        "-V" | "--version" => {
            outln!("ddwire {VERSION}");
            return 0;
        }
        _ => {}
    }
    let Some(command) = commands().into_iter().find(|c| c.name == first) else {
        let hint = args::did_you_mean(first, commands().iter().map(|c| c.name), "`ddwire ", "`");
        stderr_line!("ddwire: unknown command {first:?}; {hint}run `ddwire --help` for the list");
        return 2;
    };
    let rest = &args[1..];
    if rest.iter().any(|a| a == "-h" || a == "--help") {
        out!("{}", command_help(command));
        return 0;
    }
    let parsed = match args::parse(command.name, command.flags, rest) {
        Ok(p) => p,
        Err(usage) => {
            stderr_line!("ddwire: {usage}");
            return 2;
        }
    };
    match (command.run)(&parsed) {
        Ok(code) => code,
        Err(message) => {
            stderr_line!("ddwire {}: {message}", command.name);
            2
        }
    }
}

/// Write to stdout and flush. A closed pipe ends the process with status 0 (the reader has all
/// it wanted); any other failure to write ends it with status 1, saying why.
pub(crate) fn write_stdout(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_fmt(text).and_then(|()| stdout.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            stderr_line!("ddwire: writing to stdout: {e}");
            std::process::exit(1);
        }
    }
}

/// Print `value` on stdout as indented JSON.
pub(crate) fn print_pretty(value: &impl serde::Serialize) {
    outln!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

/// What a write to a command's own (buffered) stdout came to: `Ok(false)` once the reader has
/// gone (a closed pipe, as `| head` makes), which ends the command quietly.
pub(crate) fn written(result: std::io::Result<()>) -> Result<bool, String> {
    match result {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(format!("writing to stdout: {e}")),
    }
}

/// Read a file, or standard input for `-`.
pub(crate) fn read_input(path: &str) -> Result<Vec<u8>, String> {
    if path == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .map_err(|e| format!("reading stdin: {e}"))?;
        Ok(buf)
    } else {
        std::fs::read(path).map_err(|e| format!("reading {path}: {e}"))
    }
}
