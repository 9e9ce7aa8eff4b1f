//! The audit map (`vendor-notes/README.md`) stays true to the tree, and the documentation names
//! only files the repository has.
//!
//! The map lists every file that parses or writes bytes crossing a process boundary, each with
//! its code lines. This test counts them again and fails naming each file whose count differs,
//! each listed file that does not exist, and each file that belongs on the byte path but is
//! neither listed nor named, with its reason, under "Not on the byte path". It checks the
//! stated total too. After a change moves the counts, rewrite them in place with
//!
//! ```sh
//! AUDIT_MAP_UPDATE=1 cargo test --test audit_map
//! ```
//!
//! which changes the numbers only: a new file needs a row, with what it holds, written by hand.
//!
//! A code line is a line with something on it besides whitespace and comments (`//`, `///`,
//! `//!`, `/* */`), outside a `#[cfg(test)]` module. What belongs on the byte path is
//! [`BYTE_PATH_FOLDERS`] and [`BYTE_PATH_FILES`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The map, relative to the repository's root.
const MAP: &str = "vendor-notes/README.md";

/// Every `.rs` file under these folders belongs on the byte path, unless the map says why not.
const BYTE_PATH_FOLDERS: &[&str] = &[
    "src/wire/",
    "src/json/",
    "src/harness/store/",
    "src/trace/otlp/",
];

/// Files outside those folders that belong on the byte path too.
const BYTE_PATH_FILES: &[&str] = &[
    "src/trace/context.rs",
    "src/trace/span_json.rs",
    "src/contract/canonical.rs",
];

/// The size the byte path is meant to stay within, in code lines.
const BYTE_PATH_BUDGET: usize = 10_000;

/// The heading of the map's section of files exempted from the byte path.
const NOT_ON_THE_BYTE_PATH: &str = "## Not on the byte path";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative))
        .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

// --- Counting code lines ------------------------------------------------------------------

/// Each line of `source` with comments removed and the insides of string and character
/// literals blanked (their quotes kept), so that what is left is code whose braces can be
/// matched. Handles nested block comments, raw strings (`r#"…"#`, `br"…"`), escapes, and
/// tells a character literal (`'{'`, `'\''`) from a lifetime (`'a`).
fn strip_comments(source: &str) -> Vec<String> {
    let chars: Vec<char> = source.chars().collect();
    let mut lines = vec![String::new()];
    let mut i = 0;
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    // Whether the character at `at` starts a token (nothing of an identifier just before it).
    let starts_token = |at: usize| at == 0 || !is_ident(chars[at - 1]);
    // Pushes a character of a literal: a line break starts a new line, anything else becomes
    // a placeholder that is not whitespace (a line inside a string holds code).
    let literal = |lines: &mut Vec<String>, c: char| {
        if c == '\n' {
            lines.push(String::new());
        } else if !c.is_whitespace() {
            lines.last_mut().unwrap().push('x');
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let previous = if i > 0 { Some(chars[i - 1]) } else { None };
        if c == '\n' {
            lines.push(String::new());
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        lines.push(String::new());
                    }
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('"' | '#'))
            && (starts_token(i) || (matches!(previous, Some('b' | 'c')) && starts_token(i - 1)))
        {
            // A raw string: r, some hashes, a quote; it ends at a quote and as many hashes.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                // `r#ident`, a raw identifier.
                lines.last_mut().unwrap().push(c);
                i += 1;
                continue;
            }
            lines.last_mut().unwrap().push('"');
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some(&d) => {
                        literal(&mut lines, d);
                        j += 1;
                    }
                }
            }
            lines.last_mut().unwrap().push('"');
            i = j;
        } else if c == '"' {
            lines.last_mut().unwrap().push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    literal(&mut lines, '\\');
                    i += 1;
                    if chars.get(i) == Some(&'\n') {
                        lines.push(String::new());
                        i += 1;
                        continue;
                    }
                }
                if let Some(&d) = chars.get(i) {
                    literal(&mut lines, d);
                }
                i += 1;
            }
            lines.last_mut().unwrap().push('"');
            i += 1;
        } else if c == '\'' {
            // A character literal is '\…' or one character and a quote; else a lifetime.
            if next == Some('\\') {
                // Past the backslash and the character it escapes, to the closing quote.
                let mut j = i + 3;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                lines.last_mut().unwrap().push_str("'x'");
                i = j + 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                lines.last_mut().unwrap().push_str("'x'");
                i += 3;
            } else {
                lines.last_mut().unwrap().push(c);
                i += 1;
            }
        } else {
            lines.last_mut().unwrap().push(c);
            i += 1;
        }
    }
    lines
}

/// The code lines of a Rust source file: lines with code on them, outside `#[cfg(test)]`
/// modules (the attribute, the `mod` line and everything to its closing brace; a
/// `#[cfg(test)] mod name;` declaration too).
fn code_lines(source: &str) -> usize {
    code_outside_tests(source)
        .iter()
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// The lines of [`strip_comments`] outside `#[cfg(test)]` modules, blank ones kept.
fn code_outside_tests(source: &str) -> Vec<String> {
    let lines = strip_comments(source);
    let mut kept = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.starts_with("#[cfg(test)]") {
            // Skip other attributes and blank lines to the item the attribute is on.
            let mut j = i + 1;
            while j < lines.len() && {
                let t = lines[j].trim();
                t.is_empty() || t.starts_with("#[")
            } {
                j += 1;
            }
            let item = lines.get(j).map_or("", |l| l.trim());
            let is_module = ["mod ", "pub mod ", "pub(crate) mod ", "pub(super) mod "]
                .iter()
                .any(|p| item.starts_with(p));
            if is_module {
                if item.ends_with(';') {
                    i = j + 1;
                    continue;
                }
                // Skip to the brace that closes the module.
                let mut depth: i64 = 0;
                let mut opened = false;
                let mut k = j;
                while k < lines.len() {
                    for ch in lines[k].chars() {
                        match ch {
                            '{' => {
                                depth += 1;
                                opened = true;
                            }
                            '}' => depth -= 1,
                            _ => {}
                        }
                    }
                    k += 1;
                    if opened && depth <= 0 {
                        break;
                    }
                }
                i = k;
                continue;
            }
        }
        kept.push(lines[i].clone());
        i += 1;
    }
    kept
}

#[test]
fn code_lines_are_counted_without_comments_blanks_or_test_modules() {
    let source = r####"//! A module.
use std::fmt; // a trailing comment

/* a block
   comment /* nested */ still comment
*/
/// A doc comment.
fn braces() -> (char, char, &'static str) {
    let url = "http://example.org/{"; // `//` and `{` in a string
    let raw = r#"a "quoted" // } thing"#;
    ('{', '\'')
}

#[cfg(test)]
#[allow(dead_code)]
mod tests {
    fn inner() {
        let _ = "}";
    }
}

#[cfg(test)]
mod more;

#[cfg(test)]
fn only_for_tests() {}
"####;
    // use, fn, let url, let raw, the tuple, `}`, the attribute and fn after the modules.
    assert_eq!(code_lines(source), 8);
}

// --- Reading the map ----------------------------------------------------------------------

/// A file the map lists, with the line of the map that lists it.
#[derive(Debug)]
struct Row {
    line: usize,
    path: String,
    stated: usize,
}

#[derive(Debug, Default)]
struct Map {
    rows: Vec<Row>,
    /// Files named under "Not on the byte path", each with its line.
    exempt: Vec<(usize, String)>,
    /// The stated total: (line, code lines, files).
    total: Option<(usize, usize, usize)>,
}

/// The first backquoted `src/` path in `text`.
fn first_src_path(text: &str) -> Option<&str> {
    let start = text.find("`src/")? + 1;
    let end = start + text[start..].find('`')?;
    Some(&text[start..end])
}

fn number(text: &str) -> Option<usize> {
    let digits: String = text.trim().chars().filter(|c| *c != ',').collect();
    digits.parse().ok()
}

/// The `**Total: N code lines in M files**` line.
fn parse_total(line: &str) -> Option<(usize, usize)> {
    let rest = line.trim().strip_prefix("**Total: ")?;
    let (lines, rest) = rest.split_once(" code lines in ")?;
    let (files, _) = rest.split_once(" files")?;
    Some((number(lines)?, number(files)?))
}

fn parse_map(text: &str) -> Map {
    let mut map = Map::default();
    let mut in_exempt = false;
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        if line.starts_with("## ") {
            in_exempt = line.starts_with(NOT_ON_THE_BYTE_PATH);
        }
        if line.starts_with("| `src/") {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            // ["", file, code lines, ...]
            let path = cells[1].trim_matches('`').to_string();
            let stated = number(cells[2])
                .unwrap_or_else(|| panic!("{MAP}:{n}: the second cell is not a count: {line}"));
            map.rows.push(Row {
                line: n,
                path,
                stated,
            });
        } else if in_exempt && line.starts_with("- `src/") {
            map.exempt
                .push((n, first_src_path(line).unwrap().to_string()));
        } else if let Some((lines, files)) = parse_total(line) {
            map.total = Some((n, lines, files));
        }
    }
    map
}

/// Every `.rs` file under `src/`, relative to the root, with `/` separators.
fn rust_files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root()).unwrap();
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

fn belongs_on_the_byte_path(path: &str) -> bool {
    BYTE_PATH_FOLDERS.iter().any(|f| path.starts_with(f)) || BYTE_PATH_FILES.contains(&path)
}

fn counted(path: &str) -> Option<usize> {
    std::fs::read_to_string(root().join(path))
        .ok()
        .map(|s| code_lines(&s))
}

/// The map with every row's count and the total set to what the tree holds.
fn rewritten(text: &str, map: &Map) -> String {
    let counts: BTreeMap<usize, usize> = map
        .rows
        .iter()
        .filter_map(|r| counted(&r.path).map(|c| (r.line, c)))
        .collect();
    let total: usize = counts.values().sum();
    let mut out = String::new();
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        if let Some(count) = counts.get(&n) {
            let mut cells: Vec<String> = line.split('|').map(str::to_string).collect();
            cells[2] = format!(" {} ", thousands(*count));
            out.push_str(&cells.join("|"));
        } else if map.total.is_some_and(|(at, _, _)| at == n) {
            let indent = &line[..line.len() - line.trim_start().len()];
            let after = line
                .trim()
                .split_once(" files**")
                .map_or("", |(_, after)| after);
            write!(
                out,
                "{indent}**Total: {} code lines in {} files**{after}",
                thousands(total),
                counts.len()
            )
            .unwrap();
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn the_audit_map_lists_every_file_on_the_byte_path_with_its_code_lines() {
    let mut text = read(MAP);
    let mut map = parse_map(&text);
    if std::env::var_os("AUDIT_MAP_UPDATE").is_some() {
        text = rewritten(&text, &map);
        std::fs::write(root().join(MAP), &text).unwrap();
        map = parse_map(&text);
    }
    let mut problems = Vec::new();

    let mut listed = BTreeSet::new();
    let mut total = 0;
    for row in &map.rows {
        if !listed.insert(row.path.as_str()) {
            problems.push(format!("{MAP}:{}: {} is listed twice", row.line, row.path));
        }
        match counted(&row.path) {
            None => problems.push(format!(
                "{MAP}:{}: {} is on the map but not in the tree",
                row.line, row.path
            )),
            Some(count) => {
                total += count;
                if count != row.stated {
                    problems.push(format!(
                        "{MAP}:{}: {} has {count} code lines, the map says {}",
                        row.line, row.path, row.stated
                    ));
                }
            }
        }
    }
    let mut exempt = BTreeSet::new();
    for (line, path) in &map.exempt {
        exempt.insert(path.as_str());
        if !root().join(path).exists() {
            problems.push(format!(
                "{MAP}:{line}: {path} is exempted from the byte path but not in the tree"
            ));
        }
        if listed.contains(path.as_str()) {
            problems.push(format!(
                "{MAP}:{line}: {path} is both listed and exempted from the byte path"
            ));
        }
    }

    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files.sort();
    for file in files.iter().filter(|f| belongs_on_the_byte_path(f)) {
        if !listed.contains(file.as_str()) && !exempt.contains(file.as_str()) {
            problems.push(format!(
                "{file} belongs on the byte path but {MAP} neither lists it (with its code lines \
                 and what it holds) nor says under \"Not on the byte path\" why it is not there"
            ));
        }
    }

    // Every src/ path the map names in prose exists as well (a row's own was checked above).
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("| `src/") {
            continue;
        }
        let mut rest = line;
        while let Some(path) = first_src_path(rest) {
            let clean = path.trim_end_matches('/');
            if !clean.contains(['*', '<', '{']) && !root().join(clean).exists() {
                problems.push(format!(
                    "{MAP}:{}: names {path}, which does not exist",
                    n + 1
                ));
            }
            rest = &rest[rest.find(path).unwrap() + path.len()..];
        }
    }

    match map.total {
        None => problems.push(format!(
            "{MAP} states no total (a line \"**Total: N code lines in M files**\")"
        )),
        Some((line, lines, files)) => {
            if lines != total || files != map.rows.len() {
                problems.push(format!(
                    "{MAP}:{line}: the total is {total} code lines in {} files, the map says \
                     {lines} in {files}",
                    map.rows.len()
                ));
            }
        }
    }
    if total > BYTE_PATH_BUDGET {
        eprintln!(
            "the byte path is {total} code lines, {} over its budget of {BYTE_PATH_BUDGET} \
             (the_byte_path_stays_within_its_budget, ignored until it is met)",
            total - BYTE_PATH_BUDGET
        );
    }
    assert!(
        problems.is_empty(),
        "the audit map is out of date (counts: AUDIT_MAP_UPDATE=1 cargo test --test audit_map):\n{}",
        problems.join("\n")
    );
}

#[test]
#[ignore = "the byte path is over its 10,000-line budget today; run with --ignored to see by how much"]
fn the_byte_path_stays_within_its_budget() {
    let map = parse_map(&read(MAP));
    let total: usize = map.rows.iter().filter_map(|r| counted(&r.path)).sum();
    assert!(
        total <= BYTE_PATH_BUDGET,
        "the byte path is {total} code lines, {} over its budget of {BYTE_PATH_BUDGET}",
        total - BYTE_PATH_BUDGET
    );
}

// --- Functions a reader can hold in mind -------------------------------------------------

/// The longest a function outside tests may be, in code lines (its signature to its closing
/// brace, nested items included).
const LONGEST_FUNCTION: usize = 120;

/// The name of the function a line declares, if it declares one.
fn function_name(line: &str) -> Option<String> {
    let words: Vec<&str> = line
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    let name = words
        .windows(2)
        .find(|w| w[0] == "fn" && !w[1].is_empty())?;
    Some(name[1].to_string())
}

/// `(name, code lines)` of each function with a body in `source`, outside test modules.
fn functions(source: &str) -> Vec<(String, usize)> {
    let code = code_outside_tests(source);
    let mut found = Vec::new();
    for (at, line) in code.iter().enumerate() {
        let Some(name) = function_name(line) else {
            continue;
        };
        // From the signature to the brace that closes the body; none before a `;` (a
        // declaration without a body).
        let mut depth = 0i64;
        let mut opened = false;
        let mut end = None;
        'lines: for (k, l) in code.iter().enumerate().skip(at) {
            for c in l.chars() {
                match c {
                    ';' if !opened => break 'lines,
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
                if opened && depth == 0 {
                    end = Some(k);
                    break 'lines;
                }
            }
        }
        if let Some(end) = end {
            let lines = code[at..=end]
                .iter()
                .filter(|l| !l.trim().is_empty())
                .count();
            found.push((name, lines));
        }
    }
    found
}

#[test]
fn functions_are_measured_from_signature_to_closing_brace_without_comments_or_tests() {
    let source = r#"trait T {
    fn declared(&self);
}
/// Doc.
fn three() {
    let s = "}{ fn not_a_function() {";

    // a comment
    s.len();
}
#[cfg(test)]
mod tests {
    fn in_a_test() {}
}
"#;
    assert_eq!(functions(source), [("three".to_string(), 4)]);
}

#[test]
fn no_function_outside_tests_is_longer_than_the_limit() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut long = Vec::new();
    for path in files.iter().filter(|p| !p.ends_with("tests.rs")) {
        for (name, lines) in functions(&read(path)) {
            if lines > LONGEST_FUNCTION {
                long.push(format!("{path}: fn {name}: {lines} code lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {LONGEST_FUNCTION} code lines; split them into named steps:\n{}",
        long.join("\n")
    );
}

// --- One error style --------------------------------------------------------------------

/// `(function name, the `Result` in its signature)` for each function outside tests whose
/// signature (parameters or return type) holds a `Result` whose error is a message: `String`
/// or a `&str` of any lifetime. A library error is a typed enum carrying fields; only the
/// command line speaks in messages.
fn message_errors(source: &str) -> Vec<(String, String)> {
    let code = code_outside_tests(source);
    let mut found = Vec::new();
    for (at, line) in code.iter().enumerate() {
        let Some(name) = function_name(line) else {
            continue;
        };
        // The signature: from `fn` to the body's brace or the declaration's `;`, outside
        // brackets (`[u8; 4]`); then without white space, and `->` as `=` so that every `>`
        // left closes a `<`.
        let mut signature = String::new();
        let mut depth = 0i32;
        'signature: for l in &code[at..] {
            for c in l.chars() {
                match c {
                    '(' | '[' => depth += 1,
                    ')' | ']' => depth -= 1,
                    '{' | ';' if depth == 0 => break 'signature,
                    _ => {}
                }
                signature.push(c);
            }
        }
        let signature: String = signature.split_whitespace().collect();
        let signature = signature.replace("->", "=");
        let mut rest = signature.as_str();
        while let Some(start) = rest.find("Result<") {
            let inner = &rest[start + "Result<".len()..];
            // The arguments up to the `>` that closes this `Result`, split at top-level commas.
            let (mut depth, mut close) = (0i32, inner.len());
            for (i, c) in inner.char_indices() {
                match c {
                    '<' | '(' | '[' => depth += 1,
                    '>' if depth == 0 => {
                        close = i;
                        break;
                    }
                    '>' | ')' | ']' => depth -= 1,
                    _ => {}
                }
            }
            let arguments = inner[..close].trim_end_matches(',');
            let mut depth = 0i32;
            let last_comma = arguments.char_indices().rev().find(|&(_, c)| {
                match c {
                    '>' | ')' | ']' => depth += 1,
                    '<' | '(' | '[' => depth -= 1,
                    _ => {}
                }
                c == ',' && depth == 0
            });
            if let Some((comma, _)) = last_comma {
                let error = &arguments[comma + 1..];
                let message = error == "String"
                    || error.strip_prefix('&').is_some_and(|e| {
                        e.strip_suffix("str").is_some_and(|lifetime| {
                            lifetime.is_empty() || lifetime.starts_with('\'')
                        })
                    });
                if message {
                    found.push((name.clone(), format!("Result<{}>", &inner[..close])));
                }
            }
            rest = inner;
        }
    }
    found
}

#[test]
fn message_errors_are_found_in_parameters_and_return_types_outside_tests() {
    let source = r#"fn typed(x: &str) -> Result<Option<String>, ParseError> {
    Ok(None)
}
fn owned() -> std::result::Result<
    (),
    String,
> {
    Ok(())
}
pub(crate) fn borrowed<'a>(url: &'a str) -> Result<&'a str, &'static str> {
    Ok(url)
}
fn taken(run: Result<impl FnOnce() -> u8, String>) {}
fn nested() -> Result<Vec<Result<u8, String>>, Error> {
    todo!()
}
#[cfg(test)]
mod tests {
    fn in_a_test() -> Result<(), String> { Ok(()) }
}
"#;
    let names: Vec<String> = message_errors(source).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["owned", "borrowed", "taken", "nested"]);
}

#[test]
fn no_library_signature_has_a_message_for_an_error() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut found = Vec::new();
    for path in files
        .iter()
        .filter(|p| !p.starts_with("src/cli/") && !p.ends_with("tests.rs"))
    {
        for (name, result) in message_errors(&read(path)) {
            found.push(format!("{path}: fn {name}: {result}"));
        }
    }
    assert!(
        found.is_empty(),
        "library signatures whose error is a message; give each a typed error (the command \
         line alone speaks in messages):\n{}",
        found.join("\n")
    );
}

// --- The documentation names only what the repository has ----------------------------------

/// Folders at the repository's root that a document may name a path under.
const TOP_LEVEL: &[&str] = &[
    "src/",
    "tests/",
    "docs/",
    "vendor-notes/",
    "examples/",
    "fixtures/",
    "benches/",
    "fuzz/",
    ".ci/",
];

/// Every Markdown file in the repository outside `target/` and `node_modules/`.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The paths `text` names: in backquotes when they start with a top-level folder, and as the
/// target of a relative Markdown link.
fn named_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for (i, piece) in line.split('`').enumerate() {
            if i % 2 == 1 && TOP_LEVEL.iter().any(|t| piece.starts_with(t)) && !piece.contains(' ')
            {
                out.push((n + 1, piece.to_string()));
            }
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let target = &rest[..rest.find(')').unwrap_or(rest.len())];
            if !target.contains("://") && !target.starts_with('#') && !target.is_empty() {
                out.push((n + 1, target.to_string()));
            }
        }
    }
    out
}

#[test]
fn the_documentation_names_only_files_the_repository_has() {
    let mut files = Vec::new();
    markdown_files(root(), &mut files);
    let mut missing = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let dir = file.parent().unwrap();
        for (line, named) in named_paths(&text) {
            if named.contains(['*', '<', '>', '{', '}', '$', '…']) {
                continue; // a pattern or a placeholder, not a path
            }
            let path = named
                .split(['#', ':'])
                .next()
                .unwrap()
                .trim_end_matches('/');
            if !root().join(path).exists() && !dir.join(path).exists() {
                let shown = file.strip_prefix(root()).unwrap().display();
                missing.push(format!("{shown}:{line}: {named}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the documentation names files the repository lacks:\n{}",
        missing.join("\n")
    );
}
