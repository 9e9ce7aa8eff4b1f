//! `ddwire token`: make bearer tokens and the digests a tokens file keys principals by.

use super::Command;
use super::args::Parsed;
use crate::harness::identity::{new_token, token_digest};

pub(crate) static COMMAND: Command = Command {
    name: "token",
    summary: "Make a bearer token, or hash one for a tokens file",
    usage: "token new\n       ddwire token hash [TOKEN|-]",
    details: "`serve --tokens FILE` authenticates callers by bearer token. FILE maps the SHA-256 hex\n\
              digest of each token (never the token itself) to the principal it stands for:\n\n  \
              {\"<digest>\": {\"principal_id\": \"https://orcid.org/…\", \"name\": \"Josiah Carberry\",\n               \
              \"principal_kind\": \"person\"}}\n\n\
              principal_kind is person (the default) or accountable_role; see examples/tokens.json.\n\n\
              `token new` prints a fresh random token (32 bytes, URL-safe base64) on stdout and\n\
              its digest on stderr. `token hash TOKEN` prints TOKEN's digest; with - or no\n\
              TOKEN it reads the token from standard input (so it stays out of shell history),\n\
              ignoring one trailing newline.",
    flags: &[],
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    match args.words().as_slice() {
        ["new"] => {
            let token = new_token().map_err(|e| e.to_string())?;
            outln!("{token}");
            stderr_line!("digest for the tokens file: {}", token_digest(&token));
            Ok(0)
        }
        ["hash"] | ["hash", "-"] => {
            let bytes = super::read_input("-")?;
            let text =
                String::from_utf8(bytes).map_err(|_| "the token is not UTF-8".to_string())?;
            let token = text.strip_suffix('\n').unwrap_or(&text);
            let token = token.strip_suffix('\r').unwrap_or(token);
            hash(token)
        }
        ["hash", token] => hash(token),
        [] => Err("expects `new` or `hash [TOKEN|-]`; see `ddwire token --help`".into()),
        [other, ..] => Err(format!(
            "unknown action {other:?}: expects `new` or `hash [TOKEN|-]`"
        )),
    }
}

fn hash(token: &str) -> Result<i32, String> {
    if token.trim().is_empty() {
        return Err("the token is empty".into());
    }
    outln!("{}", token_digest(token));
    Ok(0)
}
