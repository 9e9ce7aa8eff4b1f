//! The layers stay layers: no module reaches up into one above it. The arrows that must never
//! appear (the project's design notes, "Arrows that should never appear") are checked by reading
//! the source: a path through `crate::<layer>` in code (comments are skipped) from a layer
//! that may not know that layer fails the test, naming the file, the line and the arrow.

use std::path::{Path, PathBuf};

/// Each layer, and the layers it must never reach.
const FORBIDDEN: &[(&str, &[&str])] = &[
    // The bottom: JSON, ids, time, text know nothing above them.
    (
        "json",
        &[
            "contract", "trace", "wire", "agent", "harness", "relay", "check",
        ],
    ),
    (
        "ids",
        &[
            "contract", "trace", "wire", "agent", "harness", "relay", "check",
        ],
    ),
    (
        "time",
        &[
            "contract", "trace", "wire", "agent", "harness", "relay", "check",
        ],
    ),
    (
        "text",
        &[
            "contract", "trace", "wire", "agent", "harness", "relay", "check",
        ],
    ),
    // The documents know no transport and no trace machinery; the trace knows no contract.
    (
        "contract",
        &["trace", "wire", "agent", "harness", "relay", "check"],
    ),
    (
        "trace",
        &["contract", "wire", "agent", "harness", "relay", "check"],
    ),
    // Bytes on the wire know no conductor, no agent, no peer relay, no smoke test.
    ("wire", &["agent", "harness", "relay", "check"]),
    // An agent never judges itself.
    ("agent", &["harness", "relay", "check"]),
    // The relay and the smoke test need no conductor.
    ("relay", &["harness", "check"]),
    ("check", &["harness", "relay"]),
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

/// `(line number, arrow)` for every path in `source`'s code that reaches one of `forbidden`
/// through `crate::`, including each item of a `crate::{...}` group. Comments (`//` to the
/// end of the line) are not code.
fn arrows(source: &str, forbidden: &[&str]) -> Vec<(usize, String)> {
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
    while let Some(at) = code[from..].find("crate::") {
        let start = from + at + "crate::".len();
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
        from = start;
    }
    found
}

#[test]
fn no_layer_imports_a_layer_it_must_not_know() {
    let mut violations = Vec::new();
    let mut read = 0;
    for (layer, forbidden) in FORBIDDEN {
        for file in files_of(layer) {
            let source = std::fs::read_to_string(&file).unwrap();
            read += 1;
            for (line, arrow) in arrows(&source, forbidden) {
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
fn nothing_in_the_library_imports_the_cli() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    assert_eq!(arrows(&lib, &["cli"]), Vec::new());
    assert!(!lib.lines().any(|l| l.trim_start().starts_with("mod cli")));
    for layer in [
        "json", "ids", "time", "error", "contract", "trace", "wire", "agent", "harness", "check",
    ] {
        for file in files_of(layer) {
            let source = std::fs::read_to_string(&file).unwrap();
            assert_eq!(arrows(&source, &["cli"]), Vec::new(), "{}", file.display());
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
