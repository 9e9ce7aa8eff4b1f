//! The layers stay layers: no module reaches up into one above it. The arrows that must never
//! appear (the project's design notes, "Arrows that should never appear") are checked by reading
//! the source: a path through `crate::<layer>` in code (comments are skipped) from a layer
//! that may not know that layer fails the test, naming the file, the line and the arrow.

use std::path::{Path, PathBuf};

/// What no layer may name: the umbrella error (its module `crate::error`, and the
/// `crate::Error` and `crate::Result` the crate root re-exports) sits above every layer, each
/// layer's error converting into it; and nothing in the library reaches the command line.
const TOP: &[&str] = &["error", "Error", "Result", "cli"];

/// Every layer above the bottom (`json`, `ids`, `time`, `text`).
const ABOVE_THE_BOTTOM: &[&str] = &[
    "contract", "trace", "wire", "agent", "harness", "check", "signals", "relay", "fuzz",
];

/// Each layer, and the layers it must never reach besides [`TOP`].
const FORBIDDEN: &[(&str, &[&str])] = &[
    // The bottom: JSON, ids, time, text know nothing above them.
    ("json", ABOVE_THE_BOTTOM),
    ("ids", ABOVE_THE_BOTTOM),
    ("time", ABOVE_THE_BOTTOM),
    ("text", ABOVE_THE_BOTTOM),
    // The signal handler needs nothing of the crate but the bottom.
    ("signals", ABOVE_THE_BOTTOM),
    // The documents know no transport and no trace machinery; the trace knows no contract.
    (
        "contract",
        &[
            "trace", "wire", "agent", "harness", "relay", "check", "fuzz",
        ],
    ),
    (
        "trace",
        &[
            "contract", "wire", "agent", "harness", "relay", "check", "fuzz",
        ],
    ),
    // Bytes on the wire know no conductor, no agent, no peer relay, no smoke test.
    ("wire", &["agent", "harness", "relay", "check", "fuzz"]),
    // An agent never judges itself.
    ("agent", &["harness", "relay", "check", "fuzz"]),
    // The harness, the relay and the smoke test stand side by side, none knowing another.
    ("harness", &["relay", "check", "fuzz"]),
    ("relay", &["harness", "check", "fuzz"]),
    ("check", &["harness", "relay", "fuzz"]),
    // The fuzz entry points may drive any layer.
    ("fuzz", &[]),
];

/// Every layer's error, each of which the umbrella error converts from.
const LAYER_ERRORS: &[&str] = &[
    "JsonError",
    "ContractError",
    "TraceError",
    "WireError",
    "ServeError",
    "HarnessError",
    "CheckError",
    "RelayError",
];

/// Every `.rs` file of a layer: `src/<layer>/**` or `src/<layer>.rs`.
fn files_of(layer: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let single = root.join(format!("{layer}.rs"));
    if single.is_file() {
        out.push(single);
    }
    let mut dirs = vec![root.join(layer)];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// How many modules deep the file at `path` (under `src/`) is: `src/json/mod.rs` and
/// `src/ids.rs` are 1, `src/wire/http/server.rs` is 3. That many `super::` reach the crate root.
fn depth_of(path: &Path) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let parts = path.strip_prefix(root).unwrap().components().count();
    if path.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// `(line number, arrow)` for every path in `source`'s code that reaches one of `forbidden`
/// through `crate::`, including each item of a `crate::{...}` group. Comments (`//` to the
/// end of the line) are not code.
fn arrows(source: &str, forbidden: &[&str]) -> Vec<(usize, String)> {
    arrows_at(source, usize::MAX, forbidden)
}

/// [`arrows`] in a file `depth` modules deep, where `depth` times `super::` is `crate::` too.
fn arrows_at(source: &str, depth: usize, forbidden: &[&str]) -> Vec<(usize, String)> {
    // The code alone, with the line each byte came from.
    let mut code = String::new();
    let mut line_of = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let kept = line.find("//").map_or(line, |at| &line[..at]);
        code.push_str(kept);
        code.push('\n');
        line_of.extend(std::iter::repeat_n(n + 1, kept.len() + 1));
    }
    let mut found = Vec::new();
    let mut check = |name: &str, at: usize| {
        if forbidden.contains(&name) {
            found.push((line_of[at], format!("crate::{name}")));
        }
    };
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut from = 0;
    while let Some((start, from_the_root)) = next_path(&code, from, depth) {
        from = start;
        if !from_the_root {
            continue;
        }
        if let Some(group) = code[start..].strip_prefix('{') {
            // `crate::{a::x, b::{y, z}}`: the first name of each top-level item.
            let (mut depth, mut item_start) = (0usize, true);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && !c.is_whitespace() => {
                        check(&ident(&group[i..]), start + 1 + i);
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            check(&ident(&code[start..]), start);
        }
    }
    found
}

/// The next `crate::` or run of `super::` in `code` after `from`: where the name after it
/// starts, and whether the path starts at the crate root (a run of `super::` does when it is
/// `depth` long or longer).
fn next_path(code: &str, from: usize, depth: usize) -> Option<(usize, bool)> {
    let rest = &code[from..];
    let at = [rest.find("crate::"), rest.find("super::")]
        .into_iter()
        .flatten()
        .min()?;
    let mut start = from + at;
    if code[start..].starts_with("crate::") {
        return Some((start + "crate::".len(), true));
    }
    let mut supers = 0;
    while code[start..].starts_with("super::") {
        start += "super::".len();
        supers += 1;
    }
    Some((start, supers >= depth))
}

#[test]
fn no_layer_imports_a_layer_it_must_not_know() {
    let mut violations = Vec::new();
    let mut read = 0;
    for (layer, listed) in FORBIDDEN {
        let forbidden: Vec<&str> = listed.iter().chain(TOP).copied().collect();
        for file in files_of(layer) {
            let source = std::fs::read_to_string(&file).unwrap();
            read += 1;
            for (line, arrow) in arrows_at(&source, depth_of(&file), &forbidden) {
                violations.push(format!(
                    "{}:{line}: {layer} reaches {arrow}",
                    file.display()
                ));
            }
        }
    }
    assert!(read > 50, "only {read} files were read: the layout moved?");
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn every_file_of_the_library_belongs_to_a_layer_the_arrows_are_checked_for() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut unchecked = Vec::new();
    for entry in std::fs::read_dir(&root).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let layer = name.strip_suffix(".rs").unwrap_or(&name);
        let known = FORBIDDEN.iter().any(|(l, _)| *l == layer)
            || ["lib", "main", "error", "cli"].contains(&layer);
        if !known {
            unchecked.push(name);
        }
    }
    assert!(unchecked.is_empty(), "layers without arrows: {unchecked:?}");
}

#[test]
fn the_umbrella_error_sits_at_the_top_and_every_layers_error_converts_into_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    assert!(lib.contains("pub use error::{Error, Result};"));
    let umbrella = std::fs::read_to_string(root.join("error.rs")).unwrap();
    assert_eq!(arrows(&umbrella, &["cli"]), Vec::new());
    for error in LAYER_ERRORS {
        assert!(
            umbrella.contains(&format!("impl From<{error}> for Error")),
            "{error} does not convert into the umbrella error"
        );
    }
}

#[test]
fn nothing_in_the_library_imports_the_cli() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    assert_eq!(arrows(&lib, &["cli"]), Vec::new());
    assert!(!lib.lines().any(|l| l.trim_start().starts_with("mod cli")));
    // The library holds the command line only so the binary can call it: hidden, and no part
    // of the stated API.
    assert!(lib.contains("#[doc(hidden)]\npub mod cli;"));
    for layer in [
        "json", "ids", "time", "error", "contract", "trace", "wire", "agent", "harness", "check",
        "text", "signals", "relay", "fuzz",
    ] {
        for file in files_of(layer) {
            let source = std::fs::read_to_string(&file).unwrap();
            assert_eq!(
                arrows_at(&source, depth_of(&file), &["cli"]),
                Vec::new(),
                "{}",
                file.display()
            );
        }
    }
}

#[test]
fn the_checker_sees_an_arrow_in_code_and_not_in_a_comment() {
    let source = "use crate::contract::Envelope;\n\
                  // use crate::harness::Conductor;\n\
                  let x = crate::trace::to_json(&s); /// crate::wire in a doc\n";
    assert_eq!(
        arrows(source, &["contract", "harness", "trace", "wire"]),
        [
            (1, "crate::contract".to_string()),
            (3, "crate::trace".to_string())
        ]
    );
}
