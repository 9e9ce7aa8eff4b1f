//! Errors from the run store name its files relative to its root, never by absolute path: a
//! message can reach a remote caller (a failed task, a RUN_ERROR, an HTTP 500), and where the
//! server keeps its files is none of the caller's business.

use super::common;

use common::*;
use ddwire::agent::builtin::Hello;
use ddwire::harness::store::{NewRun, RunStore};
use ddwire::harness::testkit::TestHarness;
use ddwire::wire::a2a::model::TaskState;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// Every spelling of `root` a message could carry: as given, and resolved.
fn spellings(root: &Path) -> Vec<String> {
    let mut out = vec![root.display().to_string()];
    if let Ok(real) = std::fs::canonicalize(root) {
        out.push(real.display().to_string());
    }
    out
}

/// Turn the store's root into a plain file, so that every write under it fails.
fn break_root(root: &Path) {
    std::fs::remove_dir_all(root).unwrap();
    std::fs::write(root, b"not a directory").unwrap();
}

fn assert_relative(message: &str, absolute: &[String]) {
    for path in absolute {
        assert!(
            !message.contains(path.as_str()),
            "the message names the store by absolute path {path}: {message}"
        );
    }
    assert!(message.contains("run store"), "{message}");
}

#[test]
fn a_failed_write_names_the_run_relative_to_the_store() {
    let dir = TempDir::new("store-errors");
    let root = dir.path().join("runs");
    let store = RunStore::open(&root).unwrap();
    let absolute = spellings(&root);
    break_root(&root);
    let id = ddwire::ids::new_uuid7();
    let err = store
        .append(&NewRun {
            envelope: &json!({"invocation_id": id}),
            request: &json!({}),
            spans: &[],
            grounding: "",
            schemas: &[],
            agent_reply: None,
        })
        .unwrap_err()
        .to_string();
    assert_relative(&err, &absolute);
    assert!(err.contains(&id), "the message still says which run: {err}");
    assert!(err.starts_with("creating .tmp-"), "{err}");
}

#[test]
fn a_caller_never_learns_where_the_store_is() {
    let th = TestHarness::new(vec![Arc::new(Hello::new())]);
    let absolute = spellings(&th.runs);
    break_root(&th.runs);
    // The conductor's own error.
    let err = th
        .invoke(&request("hello.world", message("hi")))
        .unwrap_err()
        .to_string();
    assert_relative(&err, &absolute);
    // Over A2A: the failed task's error.
    let task = send(&th, request("hello.world", message("hi")));
    assert_eq!(task.status.state, TaskState::Failed);
    assert_relative(&task.failure_detail().unwrap(), &absolute);
    // Over the JSON routes: the 500's body.
    let (status, body) = get(&th, "/runs");
    assert_eq!(status, 500, "{body}");
    assert_relative(&body.to_string(), &absolute);
    // Tidy up: the kit removes a directory, not a file.
    std::fs::remove_file(&th.runs).unwrap();
}
