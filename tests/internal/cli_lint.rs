//! `ddwire lint`: every verdict the harness stored can be reproduced offline from the store.

use super::common::TempDir;
use super::{run, text};
use std::path::{Path, PathBuf};

fn temp_dir(tag: &str) -> TempDir {
    TempDir::new(&format!("lint-{tag}"))
}

/// Run the demo into a fresh store and return it with its run ids.
fn demo_store(tag: &str) -> (TempDir, Vec<String>) {
    let runs = temp_dir(tag);
    let out = run(&["demo", "--quiet", "--runs", runs.to_str().unwrap()]);
    assert!(out.status.success(), "demo: {}", text(&out.stderr));
    let mut ids: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("envelope.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    (runs, ids)
}

fn stored_verdict(runs: &Path, id: &str) -> String {
    std::fs::read_to_string(runs.join(id).join("grounding.txt")).unwrap()
}

/// The exit status a verdict must give: 0 passed, 1 FAILED, 3 the linter did not run.
fn expected_code(verdict: &str) -> i32 {
    if verdict.starts_with("grounding: passed") {
        0
    } else if verdict.starts_with("grounding: FAILED") {
        1
    } else if verdict.starts_with("grounding: not run") {
        3
    } else {
        panic!("an unknown verdict: {verdict}")
    }
}

#[test]
fn lint_run_agrees_with_grounding_txt_for_every_run_the_demo_makes() {
    let (runs, ids) = demo_store("demo");
    assert!(ids.len() >= 7, "the demo stores its runs: {ids:?}");
    let mut codes = Vec::new();
    for id in &ids {
        let verdict = stored_verdict(&runs, id);
        // By id, with --runs.
        let out = run(&["lint", id, "--runs", runs.to_str().unwrap()]);
        assert_eq!(
            text(&out.stdout),
            verdict,
            "lint {id}: {}",
            text(&out.stderr)
        );
        assert_eq!(
            out.status.code(),
            Some(expected_code(&verdict)),
            "lint {id}"
        );
        // By run directory, with no store named.
        let out = run(&["lint", runs.join(id).to_str().unwrap()]);
        assert_eq!(
            text(&out.stdout),
            verdict,
            "lint DIR: {}",
            text(&out.stderr)
        );
        codes.push(expected_code(&verdict));
    }
    // --json says the same, as data, for every run.
    let out = run(&["lint", "--all", "--json", "--runs", runs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for line in text(&out.stdout).lines() {
        let report: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = report["invocation_id"].as_str().unwrap();
        assert_eq!(report["agrees"], true, "{line}");
        assert_eq!(
            report["summary"].as_str().unwrap(),
            stored_verdict(&runs, id).trim_end()
        );
        let not_run = !report["not_run"].is_null();
        assert_eq!(
            not_run,
            stored_verdict(&runs, id).starts_with("grounding: not run"),
            "{line}"
        );
    }
    // The demo makes a run of each kind: passed, withheld (FAILED) and refused (not run).
    for code in [0, 1, 3] {
        assert!(codes.contains(&code), "no run exits {code}: {codes:?}");
    }
}

#[test]
fn a_withheld_run_fails_the_linter_offline_as_it_did_in_the_harness() {
    let (runs, ids) = demo_store("withheld");
    let withheld = ids
        .iter()
        .find(|id| {
            std::fs::read_to_string(runs.join(id).join("envelope.json"))
                .unwrap()
                .contains("grounding-violation")
        })
        .expect("the demo withholds one result");
    let dir = runs.join(withheld);
    // The file form finds the agent's reply beside the envelope.
    let out = run(&[
        "lint",
        dir.join("spans.jsonl").to_str().unwrap(),
        dir.join("envelope.json").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).starts_with("grounding: FAILED [input_only]\n  - R2: "));
    assert!(text(&out.stderr).contains("agent-result.json"));
    // Without the reply, it says the report is on what was stored, not what the agent sent.
    let bare = runs.parent().unwrap().join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    for f in ["spans.jsonl", "envelope.json"] {
        std::fs::copy(dir.join(f), bare.join(f)).unwrap();
    }
    let out = run(&[
        "lint",
        bare.join("spans.jsonl").to_str().unwrap(),
        bare.join("envelope.json").to_str().unwrap(),
    ]);
    assert!(
        text(&out.stderr).contains("is a withheld result and no agent reply"),
        "{}",
        text(&out.stderr)
    );
    // Named as a third file, the reply gives the harness's verdict again.
    let out = run(&[
        "lint",
        bare.join("spans.jsonl").to_str().unwrap(),
        bare.join("envelope.json").to_str().unwrap(),
        dir.join("agent-result.json").to_str().unwrap(),
    ]);
    assert_eq!(text(&out.stdout), stored_verdict(&runs, withheld));
}

#[test]
fn lint_reports_a_verdict_that_differs_from_the_stored_one() {
    let (runs, ids) = demo_store("differs");
    // Every run agrees with its stored verdict: one line each, status 0.
    let out = run(&["lint", "--all", "--runs", runs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), ids.len());
    assert!(!text(&out.stdout).contains("DIFFERS"));
    let id = &ids[0];
    std::fs::write(
        runs.join(id).join("grounding.txt"),
        "grounding: FAILED [input_only]\n  - R2: forged\n",
    )
    .unwrap();
    let out = run(&["lint", id, "--runs", runs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("differs from the verdict the harness stored"),
        "{}",
        text(&out.stderr)
    );
    // --all names the one that differs, and fails.
    let out = run(&["lint", "--all", "--runs", runs.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let listing = text(&out.stdout);
    let differing: Vec<&str> = listing.lines().filter(|l| l.contains("DIFFERS")).collect();
    assert_eq!(differing.len(), 1, "{listing}");
    assert!(differing[0].starts_with(id.as_str()), "{listing}");
}

#[test]
fn lint_with_a_run_the_store_does_not_hold_says_where_it_looked() {
    let dir = temp_dir("missing");
    let out = run(&["lint", "01a2", "--runs", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(&std::path::absolute(&dir).unwrap().display().to_string())
            && err.contains("--runs DIR or DD_RUNS_DIR"),
        "{err}"
    );
}

#[test]
fn lint_of_a_run_folder_outside_any_store_agrees_with_the_python_references_verdict() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runs");
    let mut seen = 0;
    for entry in std::fs::read_dir(&fixtures).unwrap().flatten() {
        let dir = entry.path();
        if !dir.join("grounding.txt").is_file() {
            continue;
        }
        let verdict = std::fs::read_to_string(dir.join("grounding.txt")).unwrap();
        let out = run(&["lint", dir.to_str().unwrap()]);
        assert_eq!(text(&out.stdout), verdict, "{}", text(&out.stderr));
        assert_eq!(out.status.code(), Some(expected_code(&verdict)));
        seen += 1;
    }
    assert!(seen >= 3, "the fixtures hold the reference's runs");
}

/// The recorded relay sessions (`fixtures/relay/`).
fn relay_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/relay")
}

/// The one session file of a corpus folder.
fn relay_file(scenario: &str) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(relay_corpus().join(scenario))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{scenario}");
    files.remove(0)
}

#[test]
fn lint_recognises_a_relay_session_file_and_names_every_check_with_its_verdict() {
    let file = relay_file("chain");
    let out = run(&["lint", file.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.starts_with("relay session: passed ["), "{stdout}");
    for check in [
        "parents",
        "propagation",
        "session",
        "task-states",
        "stream-chunks",
        "failure-class",
        "time-nesting",
        "attribute-names",
    ] {
        assert!(
            stdout.contains(&format!("  {check}: passed")),
            "{check}: {stdout}"
        );
    }
}

#[test]
fn lint_fails_a_broken_relay_session_with_status_1_naming_the_check() {
    let file = relay_file("broken/dropped-chunk");
    let out = run(&["lint", "--relay", file.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.starts_with("relay session: FAILED ["), "{stdout}");
    assert!(
        stdout.contains("  stream-chunks: FAILED\n    - "),
        "{stdout}"
    );
    assert!(stdout.contains("  parents: passed"), "{stdout}");
}

#[test]
fn lint_json_of_a_relay_session_gives_each_check_its_verdict() {
    let file = relay_file("broken/misparented-hop");
    let out = run(&["lint", "--json", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["passed"], false);
    let checks = report["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 8);
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["propagation"]);
    assert!(
        report["session"]
            .as_str()
            .is_some_and(|s| file.to_str().unwrap().contains(s))
    );
}

#[test]
fn lint_all_of_a_traces_folder_checks_every_session_in_it() {
    let dir = relay_corpus().join("several-sessions");
    let out = run(&["lint", "--all", dir.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    assert!(stdout.lines().all(|l| l.contains("  passed (")), "{stdout}");
    assert!(text(&out.stderr).contains("3 relay sessions"));

    // A folder with one broken session among good ones fails, naming the file and the check.
    let mixed = temp_dir("relay-all");
    for scenario in ["completed-send", "broken/illegal-transition"] {
        let file = relay_file(scenario);
        std::fs::copy(&file, mixed.join(file.file_name().unwrap())).unwrap();
    }
    let out = run(&["lint", "--all", mixed.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAILED: task-states"), "{stdout}");
    assert!(stdout.contains("  passed ("), "{stdout}");
    // The folder alone (not a run directory) is read as --all would read it.
    let alone = run(&["lint", mixed.to_str().unwrap()]);
    assert_eq!(alone.status.code(), Some(1));
    assert_eq!(text(&alone.stdout), stdout);
}

#[test]
fn lint_of_an_empty_or_truncated_relay_session_is_an_error_with_status_2() {
    let dir = temp_dir("relay-bad");
    let good = std::fs::read(relay_file("completed-send")).unwrap();
    for (name, bytes, says) in [
        ("empty.jsonl", &b""[..], "holds no span"),
        ("cut.jsonl", &good[..good.len() - 30], "truncated"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = run(&["lint", "--relay", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(
            text(&out.stderr).contains(says),
            "{name}: {}",
            text(&out.stderr)
        );
    }

    // In a folder, an unreadable session is one line, and fails the walk.
    let out = run(&["lint", "--all", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout).matches("UNREADABLE").count(),
        2,
        "{}",
        text(&out.stdout)
    );
}
