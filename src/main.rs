//! The `ddwire` binary. Everything it does is in the library; `cli` only parses arguments and
//! calls it, and nothing imports `cli`.

#![forbid(unsafe_code)]

/// `eprintln!` that never panics: a server whose stderr reader went away (a supervisor
/// restarted, a test stopped reading) keeps serving, and a command still exits with its own
/// status. The library's diagnostics use the same rule (`ddwire::text`).
macro_rules! stderr_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

mod cli;

fn main() {
    std::process::exit(cli::main(std::env::args().collect()));
}
