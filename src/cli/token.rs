//! `ddwire token`: make bearer tokens and the digests a tokens file keys principals by.

use super::Command;
use super::args::Parsed;
use ddwire::harness::identity::token_digest;

pub static COMMAND: Command = Command {
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
    match args
        .positionals
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["new"] => {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|e| format!("no randomness: {e}"))?;
            let token = base64url(&bytes);
            outln!("{token}");
            eprintln!("digest for the tokens file: {}", token_digest(&token));
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

/// RFC 4648 §5 base64url without padding.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::base64url;

    #[test]
    fn base64url_follows_rfc_4648_test_vectors_without_padding() {
        // RFC 4648 §10, padding dropped.
        for (input, want) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64url(input.as_bytes()), want, "{input:?}");
        }
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    }
}
