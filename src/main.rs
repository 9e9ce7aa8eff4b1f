//! The `ddwire` binary. Everything it does is in the library; its command line
//! (`ddwire::cli`) only parses arguments and calls it, and nothing in the library imports it.

#![forbid(unsafe_code)]

fn main() {
    std::process::exit(ddwire::cli::main(std::env::args().collect()));
}
