//! A newcomer's dead ends: each wrong turn gets a message that names the fix, and the command
//! line behaves as Unix tools do (a closed pipe ends quietly, exit codes a script can act on).

use super::synthetic;
use super::{ddwire, run, text};

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ddwire-manners-{tag}-{}", ddwire::ids::new_uuid7()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `args`, read stdout up to its first newline, close the pipe, and return the exit code
/// and stderr. Waits at most 60 s for the process to end.
fn read_one_line_and_hang_up(args: &[&str]) -> (Option<i32>, String) {
    let mut child = ddwire()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    loop {
        match stdout.read(&mut byte) {
            Ok(1) if byte[0] != b'\n' => continue,
            _ => break,
        }
    }
    drop(stdout);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("ddwire {args:?} did not end after its reader hung up");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.code(), stderr)
}

/// Far more than a pipe holds (64 KiB on Linux), so the writer meets the closed pipe.
fn long_store(dir: &Path) {
    synthetic::store_of(dir, 3_000, false);
}

#[test]
fn runs_json_piped_into_head_ends_quietly_with_status_0() {
    let dir = temp_dir("pipe-runs");
    long_store(&dir);
    let (code, stderr) =
        read_one_line_and_hang_up(&["runs", "--json", "--runs", dir.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The literal pipeline, with pipefail so ddwire's own status counts.
    if Path::new("/bin/bash").exists() {
        let out = Command::new("/bin/bash")
            .args(["-o", "pipefail", "-c"])
            .arg(format!(
                "{} runs --json --runs {} | head -1",
                super::ddwire_exe(),
                dir.display()
            ))
            .env_remove("DD_RUNS_DIR")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout).lines().count(), 1);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn any_command_printing_into_a_closed_pipe_ends_quietly_with_status_0() {
    // `hash --canonical` prints one line as long as its input: a megabyte here.
    let dir = temp_dir("pipe-hash");
    let big = dir.join("big.json");
    let items: Vec<String> = (0..40_000).map(|i| format!("\"item {i:08}\"")).collect();
    std::fs::write(&big, format!("[{}]", items.join(","))).unwrap();
    let mut child = ddwire()
        .args(["hash", "--canonical", big.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 400];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    // The pipe is closed as the reader drops; the command is still writing.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("panicked"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Assert `out` failed with usage status 2 and that stderr contains every `needle`.
fn refused_naming(out: &Output, needles: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} missing from: {err}");
    }
}

#[test]
fn help_documents_the_exit_codes_and_completions() {
    let help = text(&run(&["--help"]).stdout);
    for needle in [
        "Exit status:",
        "  0  ",
        "  1  ",
        "  2  bad usage",
        "  3  lint only",
        "ddwire completions bash",
    ] {
        assert!(help.contains(needle), "{needle:?} missing from --help");
    }
}

#[test]
fn every_built_in_agent_is_listed_with_its_port_by_help_and_by_errors() {
    let help = text(&run(&["agent", "--help"]).stdout);
    let bogus = run(&["agent", "bogus"]);
    let typo = run(&["agent", "helo"]);
    assert!(text(&typo.stderr).contains("did you mean hello?"));
    let by_id = run(&["agent", "hello.world"]);
    assert!(text(&by_id.stderr).contains("did you mean hello?"));
    for (name, port) in ddwire::agent::builtin::NAMES {
        let id = ddwire::agent::builtin::by_name(name)
            .unwrap()
            .spec()
            .agent_id
            .clone();
        assert!(
            help.lines()
                .any(|l| l.contains(name) && l.contains(&id) && l.contains(&port.to_string())),
            "{name} missing from agent --help"
        );
        refused_naming(&bogus, &[&format!("{name} ({id}, port {port})")]);
    }
}

#[test]
fn a_mistyped_flag_or_command_gets_did_you_mean() {
    refused_naming(
        &run(&["invoke", "--inptu", "x.json"]),
        &["unknown option --inptu", "did you mean --input?"],
    );
    refused_naming(&run(&["dmeo"]), &["did you mean `ddwire demo`?"]);
    refused_naming(
        &run(&["completions", "bsh"]),
        &["did you mean bash?", "choose bash, zsh or fish"],
    );
}

#[test]
fn a_number_out_of_range_names_the_range() {
    refused_naming(
        &run(&["agent", "hello", "--port", "99999"]),
        &["--port must be from 0 to 65535, got 99999"],
    );
    refused_naming(
        &run(&["send", "http://127.0.0.1:9", "--timeout", "-1"]),
        &["--timeout must be more than 0"],
    );
}

#[test]
fn a_repeated_flag_is_refused_rather_than_the_last_one_winning() {
    refused_naming(
        &run(&["runs", "--limit", "2", "--limit", "3"]),
        &["--limit is given twice", "give it once"],
    );
}

#[test]
fn a_harness_address_without_a_scheme_says_to_write_http() {
    let input = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/messages/hello.json");
    refused_naming(
        &run(&[
            "invoke",
            "--harness",
            "127.0.0.1:8000",
            "--agent",
            "hello.world",
            "--input",
            input,
        ]),
        &["write http://127.0.0.1:8000"],
    );
    refused_naming(
        &run(&["send", "127.0.0.1:8000", "--data", input]),
        &["write http://127.0.0.1:8000"],
    );
}

#[test]
fn demo_usage_lists_quiet() {
    let help = text(&run(&["demo", "--help"]).stdout);
    let usage = help.lines().find(|l| l.starts_with("Usage:")).unwrap();
    assert!(usage.contains("[--quiet]"), "{usage}");
}

#[test]
fn show_and_lint_from_another_directory_say_where_they_looked_and_how_to_point_elsewhere() {
    let dir = temp_dir("elsewhere");
    for command in ["show", "trace", "replay", "lint"] {
        let out = ddwire()
            .args([command, "01a2"])
            .current_dir(&dir)
            .output()
            .unwrap();
        refused_naming(
            &out,
            &[
                &dir.join("runs").display().to_string(),
                "--runs DIR or DD_RUNS_DIR",
            ],
        );
    }
    // A store that exists but does not hold the run: it says which store it read.
    let store = dir.join("store");
    std::fs::create_dir_all(&store).unwrap();
    let out = ddwire()
        .args(["show", "01a2"])
        .env("DD_RUNS_DIR", &store)
        .output()
        .unwrap();
    refused_naming(
        &out,
        &[
            &std::path::absolute(&store).unwrap().display().to_string(),
            "--runs DIR or DD_RUNS_DIR",
        ],
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_tokens_file_with_a_name_where_a_principal_belongs_names_the_fields() {
    let dir = temp_dir("tokens");
    let tokens = dir.join("tokens.json");
    let digest = ddwire::harness::identity::token_digest("t");
    std::fs::write(&tokens, format!(r#"{{"{digest}": "Josiah"}}"#)).unwrap();
    refused_naming(
        &run(&["serve", "--port", "0", "--tokens", tokens.to_str().unwrap()]),
        &[
            "principal_id",
            "\"name\"",
            "principal_kind",
            "ddwire token --help",
        ],
    );
    // `token hash` makes the digest the file is keyed by.
    let out = run(&["token", "hash", "t"]);
    assert_eq!(text(&out.stdout).trim(), digest);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn invoke_and_send_help_show_the_input_shape_and_who_decides_the_principal() {
    let invoke = text(&run(&["invoke", "--help"]).stdout);
    for needle in [
        r#"{"schema_class": "Message", "message_text": "hi"}"#,
        "examples/messages/",
        "with --harness, the harness decides",
    ] {
        assert!(
            invoke.contains(needle),
            "{needle:?} missing from invoke --help"
        );
    }
    let send = text(&run(&["send", "--help"]).stdout);
    assert!(
        send.contains(r#"{"agent_id": "hello.world", "input":"#),
        "{send}"
    );
    assert!(send.contains("examples/request.json"), "{send}");
}

#[test]
fn profile_explain_names_every_key_a_profile_may_hold() {
    let out = run(&["profile", "--explain"]);
    assert_eq!(out.status.code(), Some(0));
    let text = text(&out.stdout);
    for key in [
        "profile_id",
        "version",
        "description",
        "agents",
        "actions_requiring_approval",
    ] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(key)),
            "{key} not explained"
        );
    }
    let dir = temp_dir("profile");
    let bad = dir.join("p.json");
    std::fs::write(&bad, r#"{"profile_id": "p", "agent": {}}"#).unwrap();
    refused_naming(
        &run(&["profile", bad.to_str().unwrap()]),
        &["keys nothing enforces: agent", "actions_requiring_approval"],
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn completions_cover_every_command_and_bash_parses_its_script() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = text(&out.stdout);
        for command in [
            "demo",
            "serve",
            "invoke",
            "lint",
            "show",
            "completions",
            "token",
        ] {
            assert!(script.contains(command), "{shell}: {command} missing");
        }
        assert!(script.contains("acting-for-id"), "{shell}: flags missing");
    }
    if Path::new("/bin/bash").exists() {
        let dir = temp_dir("completions");
        let script = dir.join("ddwire.bash");
        std::fs::write(&script, run(&["completions", "bash"]).stdout).unwrap();
        let out = Command::new("/bin/bash")
            .arg("-c")
            .arg(format!(
                "source {}; COMP_WORDS=(ddwire agent hel); COMP_CWORD=2; _ddwire; echo ${{COMPREPLY[@]}}; \
                 COMP_WORDS=(ddwire demo --qu); COMP_CWORD=2; _ddwire; echo ${{COMPREPLY[@]}}",
                script.display()
            ))
            .output()
            .unwrap();
        assert_eq!(
            text(&out.stdout),
            "hello\n--quiet\n",
            "{}",
            text(&out.stderr)
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// Every text file under `dir`, recursively, with its path.
fn texts(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            texts(&path, out);
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            out.push((path, text));
        }
    }
}

#[test]
fn docs_and_messages_cite_nothing_the_repository_lacks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "vendor-notes", "examples"] {
        texts(&root.join(dir), &mut files);
    }
    files.push((
        root.join("README.md"),
        std::fs::read_to_string(root.join("README.md")).unwrap(),
    ));
    let mut found = Vec::new();
    for (path, text) in &files {
        for (n, line) in text.lines().enumerate() {
            // A class schema's $id is a URI on the wire, not a citation.
            let line = line.replace("schema/workbench/", "");
            for cited in ["Blueprint", "ADR-0", "workbench/", "spec invariant"] {
                if line.contains(cited) {
                    found.push(format!("{}:{}: {cited}", path.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "say it in the repository's own words or point to vendor-notes/: {found:#?}"
    );
}

#[test]
fn the_readme_says_how_to_install_and_where_the_binary_is() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for needle in [
        "cargo install --path .",
        "~/.cargo/bin",
        "target/release/ddwire",
        "cargo run --release -- demo",
        "cargo test",
    ] {
        assert!(readme.contains(needle), "{needle:?} missing from README.md");
    }
    for word in [
        "invocation",
        "envelope",
        "outcome",
        "grounding mode",
        "lint",
        "withheld",
        "profile",
        "principal",
        "delegation",
        "run store",
    ] {
        assert!(
            readme.contains(&format!("| **{word}** |")),
            "the glossary lacks {word}"
        );
    }
}

#[test]
fn invoking_a_built_in_agent_by_its_short_name_names_its_agent_id() {
    let dir = temp_dir("short-name");
    let agents = dir.join("agents.json");
    std::fs::write(&agents, r#"{"agents": []}"#).unwrap();
    let input = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/messages/hello.json");
    let out = run(&[
        "invoke",
        "--agent",
        "hello",
        "--input",
        input,
        "--acting-for-id",
        "https://orcid.org/0000-0002-1825-0097",
        "--acting-for-name",
        "Josiah Carberry",
        "--agents",
        agents.to_str().unwrap(),
        "--runs",
        dir.join("runs").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--agent hello.world"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(dir).unwrap();
}
