//! The grounding linter over runs written by the Python stack (`fixtures/runs/generate.py`:
//! the OpenTelemetry Python SDK's span JSON, the workbench's `spans.jsonl` layout): each run's
//! report is the one the reference linter gives for the same two files, `grounding.txt`.

use std::path::{Path, PathBuf};

use ddwire::harness::grounding::{GroundingReport, lint};
use ddwire::trace::{SpanRecord, from_json};

fn runs() -> Vec<PathBuf> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir("fixtures/runs")
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    runs.sort();
    runs
}

/// Lint `spans.jsonl` + `envelope.json` as `workbench lint` does.
fn lint_files(run: &Path) -> GroundingReport {
    let records: Vec<SpanRecord> = std::fs::read_to_string(run.join("spans.jsonl"))
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| from_json(line).unwrap())
        .collect();
    let envelope = std::fs::read_to_string(run.join("envelope.json")).unwrap();
    lint(&records, &ddwire::json::parse_str(&envelope).unwrap())
}

#[test]
fn each_run_gets_the_reference_linters_report() {
    let runs = runs();
    assert_eq!(runs.len(), 3, "{runs:?}");
    for run in runs {
        let expected = std::fs::read_to_string(run.join("grounding.txt")).unwrap();
        let report = lint_files(&run);
        assert_eq!(
            format!("{}\n", report.summary()),
            expected,
            "{}",
            run.display()
        );
        assert_eq!(report.passed, expected.contains(": passed ["));
    }
}

#[test]
fn an_agent_span_outside_the_tree_or_labelling_its_run_is_caught_in_python_written_spans() {
    let report = lint_files(Path::new("fixtures/runs/retrieval-violations"));
    let g0: Vec<&String> = report
        .violations
        .iter()
        .filter(|v| v.starts_with("G0"))
        .collect();
    assert_eq!(g0.len(), 2, "{g0:?}");
    assert!(g0[0].contains("sets dd.outcome"));
    assert!(g0[1].contains("not the invocation's trace 4bf92f3577b34da6a3ce929d0e0e4736"));
    // The detached retrieval is outside the tree, so it counts for nothing.
    assert_eq!(report.retrieval_count, 1);
}
