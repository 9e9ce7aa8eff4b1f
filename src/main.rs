//! The `ddwire` binary. Everything it does is in the library; `cli` only parses arguments and
//! calls it, and nothing imports `cli`.

#![forbid(unsafe_code)]

mod cli;

fn main() {
    std::process::exit(cli::main(std::env::args().collect()));
}
