//! `ddwire hash`: the content hash of a JSON document, as an auditor checks one by hand.

use super::args::{Flag, Parsed};
use super::{Command, read_input};
use crate::contract::Canonicalisation;
use crate::json::{self, Limits};

pub(crate) static COMMAND: Command = Command {
    name: "hash",
    summary: "Print the content hash of a JSON document",
    usage: "hash [--canonicalisation NAME] [--canonical] FILE|-",
    details: "Hashes FILE (or standard input for -) the way Data Director hashes evidence: the\n\
              projection named by the canonicalisation, written as Python's json.dumps(x,\n\
              sort_keys=True, separators=(\",\", \":\"), ensure_ascii=False) in UTF-8, then SHA-256.\n\
              Canonicalisations: dd-input-json-v1 (default; an invocation's input),\n\
              dd-json-document-v1 (a record; class-schema digests), dd-envelope-json-v1 (a stored\n\
              envelope), json-sorted-utf8-v1 (a FAIRsharing record projection).\n\n\
              Example: check an envelope's input hash by hand:\n  \
              jq .input runs/<id>/request.json | ddwire hash -",
    flags: &[
        Flag::taking(
            "canonicalisation",
            "NAME",
            "Projection to hash (default dd-input-json-v1)",
        ),
        Flag::switch("canonical", "Print the canonical bytes instead of the hash"),
    ],
    run,
};

fn run(args: &Parsed) -> Result<i32, String> {
    let [path] = args.positionals.as_slice() else {
        return Err("expects exactly one FILE (or - for standard input)".into());
    };
    let name = args
        .value("canonicalisation")
        .unwrap_or(Canonicalisation::InputDocument.name());
    let canonicalisation = Canonicalisation::from_name(name).map_err(|e| e.to_string())?;
    let bytes = read_input(path)?;
    // A document to audit may be larger than a request; allow 64 MiB.
    let doc = json::parse(
        &bytes,
        Limits {
            max_bytes: 64 << 20,
            ..Limits::DEFAULT
        },
    )
    .map_err(|e| format!("{path}: {e}"))?;
    if args.switch("canonical") {
        let canonical = canonicalisation
            .canonical_bytes(&doc)
            .map_err(|e| e.to_string())?;
        outln!("{}", String::from_utf8_lossy(&canonical));
    } else {
        outln!(
            "{}",
            canonicalisation
                .content_hash(&doc)
                .map_err(|e| e.to_string())?
        );
    }
    Ok(0)
}
