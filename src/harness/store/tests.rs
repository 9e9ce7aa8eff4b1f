//! The store's unit tests: the layout, write-once, recovery, listing.

use super::files::dir_names;
use super::*;
use crate::contract::schema_digest;
use crate::harness::HarnessError;
use crate::ids::is_uuid7;
use crate::ids::new_uuid7;
use crate::json::python::{self, Style};
use serde_json::json;
use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// The index's non-empty lines.
fn index_lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// A store root under the temp directory, removed when dropped.
struct TempRoot(PathBuf);

impl TempRoot {
    fn new(tag: &str) -> TempRoot {
        TempRoot(std::env::temp_dir().join(format!("ddwire-store-{tag}-{}", new_uuid7())))
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn envelope(id: &str, agent: &str, completed_at: &str) -> Value {
    json!({
        "invocation_id": id,
        "agent_id": agent,
        "agent_version": "0.1.0",
        "completed_at": completed_at,
        "grounding_mode": "input_only",
        "policy_bundle_ref": "profile:test-permissive@v1",
        "policy_digest": "0".repeat(64),
        "acting_for": {
            "principal_id": "https://orcid.org/0000-0002-1825-0097",
            "name": "Josiah Carberry",
            "principal_kind": "person",
            "assurance": "asserted"
        },
        "contract_version": "0.7.0",
        "outcome": {"status": "succeeded", "statement": "Hello, Wörld."},
        "telemetry": {"trace_id": "a".repeat(32), "input_tokens": 3, "energy_estimate_j": null,
                      "energy_method": "not_measured"},
        "requires_human_review": true
    })
}

fn request(id: &str) -> Value {
    json!({"invocation_id": id, "agent_id": "hello", "input": {"schema_class": "Message", "message_text": "hi"}})
}

/// Store a run with one span and no schema.
fn put(store: &RunStore, envelope: &Value) -> Result<PathBuf> {
    let id = envelope["invocation_id"].as_str().unwrap_or("");
    store.append(&NewRun {
        envelope,
        request: &request(id),
        spans: &[format!("{{\"name\": \"invoke_agent\", \"id\": \"{id}\"}}")],
        grounding: "grounding: passed [input_only] (0 retrieval, 1 chat spans)",
        schemas: &[],
        agent_reply: None,
    })
}

/// Every stored envelope, oldest first.
fn list(store: &RunReader) -> Vec<Value> {
    let mut out = Vec::new();
    store
        .oldest_first(|e| {
            out.push(e);
            ControlFlow::Continue(())
        })
        .unwrap();
    out
}

/// Every listing row, newest first.
fn listing(store: &RunReader) -> Vec<Value> {
    let mut out = Vec::new();
    store
        .newest_first(&Query::default(), |_, e| {
            out.push(index::listing_row(&e));
            ControlFlow::Continue(())
        })
        .unwrap();
    out
}

/// Write a run's files into `dir` as a crashed writer would have left them.
fn write_dir(dir: &Path, files: &[(&str, &str)]) -> Result<()> {
    fs::create_dir_all(dir).unwrap();
    for (name, text) in files {
        fs::write(dir.join(name), text).unwrap();
    }
    Ok(())
}

fn ids(envelopes: &[Value]) -> Vec<String> {
    envelopes
        .iter()
        .map(|e| e["invocation_id"].as_str().unwrap().to_string())
        .collect()
}

fn leftovers(dir: &Path) -> Vec<String> {
    dir_names(dir, dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(TMP_PREFIX))
        .collect()
}

/// Every path under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            if path.is_dir() {
                todo.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_run_is_stored_with_its_files() {
    let root = TempRoot::new("files");
    let store = RunStore::open(&root.0).unwrap();
    let id = new_uuid7();
    let env = envelope(&id, "hello", "2026-01-02T03:04:05.678901Z");
    let req = request(&id);
    let schema = json!({"type": "object", "title": "Réponse", "properties": {"x": {"type": "number", "minimum": 1.0}}});
    let digest = schema_digest(&schema);
    let spans = vec![
        r#"{"name": "invoke_agent", "context": {"span_id": "0x1"}}"#.to_string(),
        r#"{"name": "chat", "attributes": {"dd.model_id": "m"}}"#.to_string(),
    ];
    let summary = "grounding: passed [input_only] (0 retrieval, 1 chat spans)";
    let dir = store
        .append_with_files(
            &NewRun {
                envelope: &env,
                request: &req,
                spans: &spans,
                grounding: summary,
                schemas: &[(&digest, &schema)],
                agent_reply: None,
            },
            &[("sources.txt", "sources: 0 verified, 0 unresolved\n")],
        )
        .unwrap();

    assert_eq!(dir, root.0.join(&id));
    assert!(store.has(&id));
    let read = |name: &str| fs::read_to_string(dir.join(name)).unwrap();
    assert_eq!(read(ENVELOPE_FILE), python::dumps(&env, Style::INDENT2));
    assert!(read(ENVELOPE_FILE).contains("\"statement\": \"Hello, W\\u00f6rld.\""));
    assert_eq!(read(REQUEST_FILE), python::dumps(&req, Style::INDENT2));
    assert_eq!(read(SPANS_FILE), format!("{}\n{}\n", spans[0], spans[1]));
    assert_eq!(read(GROUNDING_FILE), format!("{summary}\n"));
    assert_eq!(read("sources.txt"), "sources: 0 verified, 0 unresolved\n");
    let schema_file = root.0.join(SCHEMAS_DIR).join(format!("{digest}.json"));
    assert_eq!(
        fs::read_to_string(schema_file).unwrap(),
        python::dumps(&schema, Style::INDENT2)
    );

    assert_eq!(store.envelope(&id).unwrap(), Some(env.clone()));
    assert_eq!(store.envelope_text(&id).unwrap(), Some(read(ENVELOPE_FILE)));
    assert_eq!(store.request(&id).unwrap(), Some(req));
    assert_eq!(store.spans(&id).unwrap(), Some(read(SPANS_FILE)));
    assert_eq!(store.grounding(&id).unwrap().as_deref(), Some(summary));
    assert_eq!(store.schema(&digest).unwrap(), Some(schema));
    assert_eq!(
        fs::read_to_string(store.index_path()).unwrap(),
        format!("{}\n", python::dumps(&env, COMPACT))
    );
    assert_eq!(list(&store), vec![env]);
    assert!(leftovers(&root.0).is_empty());
    assert!(leftovers(&root.0.join(SCHEMAS_DIR)).is_empty());
}

#[test]
fn run_ids_sort_chronologically() {
    let root = TempRoot::new("order");
    let store = RunStore::open(&root.0).unwrap();
    let made: Vec<String> = (0..20)
        .map(|i| {
            let id = new_uuid7();
            put(
                &store,
                &envelope(&id, "hello", &format!("2026-01-01T00:00:{i:02}Z")),
            )
            .unwrap();
            id
        })
        .collect();
    let listed = ids(&list(&store));
    assert_eq!(listed, made);
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted, "the index is in id order");
    let mut dirs: Vec<String> = dir_names(&root.0, &root.0)
        .unwrap()
        .into_iter()
        .filter(|n| is_uuid7(n))
        .collect();
    dirs.sort();
    assert_eq!(dirs, made, "directory names sort as the runs were made");
}

#[test]
fn the_store_never_overwrites_a_run() {
    let root = TempRoot::new("once");
    let store = RunStore::open(&root.0).unwrap();
    let id = new_uuid7();
    put(&store, &envelope(&id, "hello", "2026-01-01T00:00:00Z")).unwrap();
    let before = fs::read(root.0.join(&id).join(ENVELOPE_FILE)).unwrap();

    // A second write of the id, by this store or another one on the same root.
    let other = RunStore::open(&root.0).unwrap();
    for s in [&store, &other] {
        let err = put(s, &envelope(&id, "impostor", "2026-01-02T00:00:00Z")).unwrap_err();
        assert!(
            matches!(err, HarnessError::DuplicateInvocation { ref invocation_id } if *invocation_id == id),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!("invocation_id {id} has already been used; send each request with a new one")
        );
    }
    assert_eq!(
        fs::read(root.0.join(&id).join(ENVELOPE_FILE)).unwrap(),
        before
    );
    assert_eq!(index_lines(store.index_path()).len(), 1);

    // Racing writers of one id: exactly one wins, the others are refused.
    let raced = new_uuid7();
    let won: Vec<bool> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (store, raced) = (&store, &raced);
                s.spawn(move || {
                    match put(
                        store,
                        &envelope(raced, &format!("agent{i}"), "2026-01-03T00:00:00Z"),
                    ) {
                        Ok(_) => true,
                        Err(HarnessError::DuplicateInvocation { .. }) => false,
                        Err(e) => panic!("{e}"),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(won.iter().filter(|w| **w).count(), 1);
    assert_eq!(index_lines(store.index_path()).len(), 2);

    // The second guard: a directory that holds something other than a run is never
    // replaced, even though it has no envelope.json for the first check to see.
    let squatted = new_uuid7();
    fs::create_dir(root.0.join(&squatted)).unwrap();
    fs::write(root.0.join(&squatted).join("note.txt"), "mine").unwrap();
    let err = put(
        &store,
        &envelope(&squatted, "hello", "2026-01-04T00:00:00Z"),
    )
    .unwrap_err();
    assert!(matches!(err, HarnessError::Store(_)), "{err}");
    assert!(err.to_string().contains("is not a complete run"), "{err}");
    assert!(!store.has(&squatted));
    assert_eq!(
        fs::read_to_string(root.0.join(&squatted).join("note.txt")).unwrap(),
        "mine"
    );
    assert_eq!(
        tree(&root.0.join(&squatted)),
        vec![PathBuf::from("note.txt")]
    );

    // An empty directory (a run the reference began and never wrote) is no run: replaced.
    let begun = new_uuid7();
    fs::create_dir(root.0.join(&begun)).unwrap();
    put(&store, &envelope(&begun, "hello", "2026-01-05T00:00:00Z")).unwrap();
    assert!(store.has(&begun));

    assert_eq!(index_lines(store.index_path()).len(), 3);
    assert!(leftovers(&root.0).is_empty());
}

#[test]
fn a_crash_before_the_rename_leaves_no_run() {
    let root = TempRoot::new("crash-before");
    let store = RunStore::open(&root.0).unwrap();
    let kept = new_uuid7();
    put(&store, &envelope(&kept, "hello", "2026-01-01T00:00:00Z")).unwrap();
    let index_before = fs::read(store.index_path()).unwrap();

    // What a writer killed mid-write leaves: half a run, and half a schema.
    let id = new_uuid7();
    let crashed = [
        root.0.join(format!(".tmp-{id}-partial")),
        root.0
            .join(format!(".tmp-4294967295-00000000deadbeef-{id}")),
    ];
    for dir in &crashed {
        fs::create_dir(dir).unwrap();
        fs::write(dir.join(ENVELOPE_FILE), "{\"invocation_id\": \"").unwrap();
    }
    fs::create_dir_all(root.0.join(SCHEMAS_DIR)).unwrap();
    let half_schema = root
        .0
        .join(SCHEMAS_DIR)
        .join(format!(".tmp-4294967295-0-{}", "a".repeat(64)));
    fs::write(&half_schema, "{\"type\"").unwrap();
    // The temporary entries of a writer still running (this one) may still be being written.
    let live = root.0.join(format!(
        ".tmp-{}-0000000000000000-{}",
        store.writer_id().unwrap(),
        new_uuid7()
    ));
    fs::create_dir(&live).unwrap();

    let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
    let mut removed = recovery.removed.clone();
    removed.sort();
    let mut expected = vec![crashed[0].clone(), crashed[1].clone(), half_schema];
    expected.sort();
    assert_eq!(removed, expected);
    assert!(!recovery.torn_tail && recovery.indexed.is_empty());
    assert!(!store.has(&id));
    assert_eq!(store.envelope(&id).unwrap(), None);
    assert_eq!(ids(&list(&store)), vec![kept]);
    assert_eq!(fs::read(store.index_path()).unwrap(), index_before);
    assert!(crashed.iter().all(|d| !d.exists()));
    assert!(live.exists(), "a running writer's write was removed");
    // The id is free: the run can be made now.
    put(&store, &envelope(&id, "hello", "2026-01-02T00:00:00Z")).unwrap();
    assert!(store.has(&id));
}

#[test]
fn a_crash_after_the_rename_is_indexed_on_open() {
    let root = TempRoot::new("crash-after");
    let store = RunStore::open(&root.0).unwrap();
    let first = envelope(&new_uuid7(), "hello", "2026-01-01T00:00:00Z");
    put(&store, &first).unwrap();

    // A run renamed into place whose index line was never written, or only half of it.
    let id = new_uuid7();
    let orphan = envelope(&id, "hello", "2026-01-02T00:00:00Z");
    let files = [
        (ENVELOPE_FILE, python::dumps(&orphan, Style::INDENT2)),
        (REQUEST_FILE, python::dumps(&request(&id), Style::INDENT2)),
        (SPANS_FILE, String::new()),
        (
            GROUNDING_FILE,
            "grounding: passed [input_only] (0 retrieval, 0 chat spans)\n".into(),
        ),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    write_dir(&root.0.join(&id), &files).unwrap();
    let line = python::dumps(&orphan, COMPACT);
    let mut index = OpenOptions::new()
        .append(true)
        .open(store.index_path())
        .unwrap();
    index.write_all(&line.as_bytes()[..line.len() / 2]).unwrap();
    drop(index);
    // Until recovery, readers skip the torn line rather than fail.
    assert_eq!(list(&store), vec![first.clone()]);

    let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
    assert!(recovery.torn_tail);
    assert_eq!(recovery.indexed, vec![id.clone()]);
    assert!(recovery.removed.is_empty() && recovery.unreadable.is_empty());
    assert_eq!(list(&store), vec![first.clone(), orphan.clone()]);
    let lines = index_lines(store.index_path());
    assert_eq!(lines, vec![python::dumps(&first, COMPACT), line]);

    // Recovery is idempotent, and the store goes on.
    let (store, again) = RunStore::open_reporting(&root.0).unwrap();
    assert!(again.is_clean(), "{again:?}");
    let third = envelope(&new_uuid7(), "hello", "2026-01-03T00:00:00Z");
    put(&store, &third).unwrap();
    assert_eq!(list(&store), vec![first, orphan, third]);
}

#[test]
fn concurrent_writers_append_the_index_without_interleaving() {
    let root = TempRoot::new("concurrent");
    let store = RunStore::open(&root.0).unwrap();
    std::thread::scope(|s| {
        for w in 0..8 {
            let store = &store;
            s.spawn(move || {
                for i in 0..50 {
                    let mut env =
                        envelope(&new_uuid7(), &format!("agent-{w}"), "2026-01-01T00:00:00Z");
                    env["outcome"]["statement"] = json!(format!("{w}/{i} {}", "x".repeat(2000)));
                    put(store, &env).unwrap();
                }
            });
        }
    });
    let lines = index_lines(store.index_path());
    assert_eq!(lines.len(), 400);
    let mut seen = HashSet::new();
    for line in &lines {
        let env: Value = serde_json::from_str(line).expect("every index line is one envelope");
        let id = env["invocation_id"].as_str().unwrap();
        assert!(seen.insert(id.to_string()), "{id} indexed twice");
        assert_eq!(store.envelope(id).unwrap(), Some(env));
    }
    assert!(leftovers(&root.0).is_empty());
    assert!(RunStore::open_reporting(&root.0).unwrap().1.is_clean());
}

#[test]
fn an_invalid_id_never_touches_the_filesystem() {
    let root = TempRoot::new("invalid");
    let store = RunStore::open(root.0.join("runs")).unwrap();
    let opened = tree(store.root());
    let escape = format!("escaped-{}", new_uuid7());
    let upper = new_uuid7().to_uppercase();
    let bad = [
        format!("../{escape}"),
        "..".into(),
        ".".into(),
        String::new(),
        "/tmp".into(),
        upper,
    ];
    for id in &bad {
        let err = put(&store, &envelope(id, "hello", "2026-01-01T00:00:00Z")).unwrap_err();
        assert!(matches!(err, HarnessError::Store(_)), "{id}: {err}");
        assert!(!store.has(id));
        assert_eq!(store.envelope(id).unwrap(), None);
        assert_eq!(store.envelope_text(id).unwrap(), None);
        assert_eq!(store.request(id).unwrap(), None);
        assert_eq!(store.spans(id).unwrap(), None);
        assert_eq!(store.grounding(id).unwrap(), None);
    }
    let no_id = json!({"agent_id": "hello"});
    assert!(put(&store, &no_id).is_err());
    for digest in ["../../etc/passwd", &"A".repeat(64), &"a".repeat(63), ""] {
        assert_eq!(store.schema(digest).unwrap(), None);
    }

    // A valid id with a bad digest, span line or file name is refused before any write.
    let id = new_uuid7();
    let env = envelope(&id, "hello", "2026-01-01T00:00:00Z");
    let req = request(&id);
    let schema = json!({"type": "object"});
    let good = schema_digest(&schema);
    let lines = ["{}".to_string()];
    let broken = ["{\n}".to_string()];
    let runs = [
        (&[("../evil", &schema)][..], &lines[..]),
        (&[(good.as_str(), &schema), ("A", &schema)][..], &lines[..]),
        (&[(good.as_str(), &schema)][..], &broken[..]),
    ];
    for (schemas, spans) in runs {
        let run = NewRun {
            envelope: &env,
            request: &req,
            spans,
            grounding: "g",
            schemas,
            agent_reply: None,
        };
        assert!(store.append(&run).is_err());
    }
    let run = NewRun {
        envelope: &env,
        request: &req,
        spans: &lines,
        grounding: "g",
        schemas: &[],
        agent_reply: None,
    };
    for name in ["../x", ".hidden", "a/b", ENVELOPE_FILE, ""] {
        assert!(
            store.append_with_files(&run, &[(name, "x")]).is_err(),
            "{name}"
        );
    }
    assert!(!store.has(&id));
    assert_eq!(
        tree(store.root()),
        opened,
        "a refused run left something behind"
    );
    assert!(!std::env::temp_dir().join(&escape).exists());
    assert!(!std::env::temp_dir().join(&escape).exists());
}

#[test]
fn a_schema_is_written_once() {
    let root = TempRoot::new("schema");
    let store = RunStore::open(&root.0).unwrap();
    let schema = json!({"type": "object", "required": ["reply_text"]});
    let digest = schema_digest(&schema);
    let run = |id: &str| {
        let env = envelope(id, "hello", "2026-01-01T00:00:00Z");
        store.append(&NewRun {
            envelope: &env,
            request: &request(id),
            spans: &[],
            grounding: "g",
            schemas: &[(&digest, &schema)],
            agent_reply: None,
        })
    };
    run(&new_uuid7()).unwrap();
    let path = root.0.join(SCHEMAS_DIR).join(format!("{digest}.json"));
    let first = fs::metadata(&path).unwrap();
    run(&new_uuid7()).unwrap();
    let second = fs::metadata(&path).unwrap();
    assert_eq!(first.modified().unwrap(), second.modified().unwrap());
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(first.ino(), second.ino(), "the schema file was replaced");
    }
    assert_eq!(store.schema(&digest).unwrap(), Some(schema.clone()));
    assert_eq!(
        dir_names(&root.0.join(SCHEMAS_DIR), &root.0.join(SCHEMAS_DIR)).unwrap(),
        vec![format!("{digest}.json")]
    );

    // A schema is kept only under its own digest, and a mismatch anywhere keeps none.
    let fresh = json!({"type": "string"});
    let fresh_digest = schema_digest(&fresh);
    let other = "0".repeat(64);
    let env = envelope(&new_uuid7(), "hello", "2026-01-01T00:00:00Z");
    let err = store
        .append(&NewRun {
            envelope: &env,
            request: &json!({}),
            spans: &[],
            grounding: "g",
            schemas: &[(&fresh_digest, &fresh), (&other, &schema)],
            agent_reply: None,
        })
        .unwrap_err();
    assert!(err.to_string().contains(&digest), "{err}");
    assert_eq!(store.schema(&other).unwrap(), None);
    assert_eq!(store.schema(&fresh_digest).unwrap(), None);
    assert_eq!(list(&store).len(), 2);
}

#[test]
fn a_schema_checked_once_vouches_only_for_an_equal_schema() {
    let root = TempRoot::new("schema-memo");
    let store = RunStore::open(&root.0).unwrap();
    let schema = json!({"type": "object", "title": "Réponse"});
    let digest = schema_digest(&schema);
    let run = |given: &Value| {
        let env = envelope(&new_uuid7(), "hello", "2026-01-01T00:00:00Z");
        store.append(&NewRun {
            envelope: &env,
            request: &json!({}),
            spans: &[],
            grounding: "g",
            schemas: &[(&digest, given)],
            agent_reply: None,
        })
    };
    run(&schema).unwrap();
    // Written again from what the first run kept: the same text.
    let path = root.0.join(SCHEMAS_DIR).join(format!("{digest}.json"));
    fs::remove_file(&path).unwrap();
    run(&schema).unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        python::dumps(&schema, Style::INDENT2)
    );
    // Another schema under the same digest is refused as ever.
    let other = json!({"type": "object", "title": "Reply"});
    let err = run(&other).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("has digest {}", schema_digest(&other))),
        "{err}"
    );
    assert_eq!(list(&store).len(), 2);
}

#[test]
fn listing_is_newest_first_and_names_the_principal() {
    let root = TempRoot::new("listing");
    let store = RunStore::open(&root.0).unwrap();
    let (a, b, c) = (new_uuid7(), new_uuid7(), new_uuid7());
    put(&store, &envelope(&a, "hello", "2026-01-01T00:00:00Z")).unwrap();
    let mut before_adr18 = envelope(&b, "quality", "2026-01-02T00:00:00Z");
    before_adr18.as_object_mut().unwrap().remove("acting_for");
    before_adr18["outcome"]["status"] = json!("abstained");
    put(&store, &before_adr18).unwrap();
    let mut role = envelope(&c, "r3", "2026-01-03T00:00:00Z");
    role["acting_for"]["name"] = json!("Data steward");
    role["outcome"]["status"] = json!("referred");
    put(&store, &role).unwrap();

    assert_eq!(
        listing(&store),
        vec![
            json!({"invocation_id": c, "agent_id": "r3", "status": "referred",
                   "completed_at": "2026-01-03T00:00:00Z", "acting_for": "Data steward"}),
            json!({"invocation_id": b, "agent_id": "quality", "status": "abstained",
                   "completed_at": "2026-01-02T00:00:00Z", "acting_for": null}),
            json!({"invocation_id": a, "agent_id": "hello", "status": "succeeded",
                   "completed_at": "2026-01-01T00:00:00Z", "acting_for": "Josiah Carberry"}),
        ]
    );
    assert_eq!(
        listing(&RunStore::open(root.0.join("empty")).unwrap()),
        Vec::<Value>::new()
    );
}

#[test]
fn conversations_group_runs() {
    let root = TempRoot::new("conversations");
    let store = RunStore::open(&root.0).unwrap();
    let (talk, chat) = (new_uuid7(), new_uuid7());
    let run =
        |agent: &str, at: &str, conversation: Option<&str>, parent: Option<&str>, status: &str| {
            let id = new_uuid7();
            let mut env = envelope(&id, agent, at);
            env["outcome"]["status"] = json!(status);
            if let Some(c) = conversation {
                env["conversation_id"] = json!(c);
            }
            if let Some(p) = parent {
                env["parent_invocation_id"] = json!(p);
            }
            put(&store, &env).unwrap();
            (id, env)
        };
    let (turn1, e1) = run(
        "director",
        "2026-01-01T00:00:01Z",
        Some(&talk),
        None,
        "succeeded",
    );
    let (_, e2) = run(
        "quality",
        "2026-01-01T00:00:02Z",
        Some(&talk),
        Some(&turn1),
        "failed",
    );
    // A run outside any conversation is in no row (the rows above are the whole list).
    run("hello", "2026-01-01T00:00:03Z", None, None, "succeeded");
    let (_, e3) = run(
        "hello",
        "2026-01-01T00:00:04Z",
        Some(&chat),
        None,
        "succeeded",
    );
    let (_, e4) = run(
        "director",
        "2026-01-01T00:00:05Z",
        Some(&talk),
        None,
        "abstained",
    );

    assert_eq!(
        crate::harness::conversations::list(&store, &crate::harness::identity::Access::All)
            .unwrap(),
        vec![
            json!({"conversation_id": talk, "agent_id": "director", "turns": 2, "runs": 3,
                   "started_at": "2026-01-01T00:00:01Z",
                   "last_completed_at": "2026-01-01T00:00:05Z", "last_status": "abstained",
                   "agent_ids": ["director", "quality"]}),
            json!({"conversation_id": chat, "agent_id": "hello", "turns": 1, "runs": 1,
                   "started_at": "2026-01-01T00:00:04Z",
                   "last_completed_at": "2026-01-01T00:00:04Z", "last_status": "succeeded",
                   "agent_ids": ["hello"]}),
        ]
    );
    assert_eq!(
        crate::harness::conversations::runs_of(
            &store,
            &talk,
            &crate::harness::identity::Access::All
        )
        .unwrap(),
        Some(vec![e1, e2, e4])
    );
    assert_eq!(
        crate::harness::conversations::runs_of(
            &store,
            &chat,
            &crate::harness::identity::Access::All
        )
        .unwrap(),
        Some(vec![e3])
    );
    assert_eq!(
        crate::harness::conversations::runs_of(
            &store,
            &new_uuid7(),
            &crate::harness::identity::Access::All
        )
        .unwrap(),
        None
    );
    assert_eq!(list(&store).len(), 5);

    // A delegated child is stored before its parent: its conversation is listed already.
    let pending = new_uuid7();
    run(
        "quality",
        "2026-01-01T00:00:06Z",
        Some(&pending),
        Some(&new_uuid7()),
        "succeeded",
    );
    let rows = crate::harness::conversations::list(&store, &crate::harness::identity::Access::All)
        .unwrap();
    assert_eq!(rows[0]["conversation_id"], json!(pending));
    assert_eq!(
        (rows[0]["turns"].clone(), rows[0]["runs"].clone()),
        (json!(0), json!(1))
    );
    assert_eq!(rows[0]["agent_id"], json!("quality"));
}

#[test]
fn a_store_written_by_the_reference_reads() {
    let root = TempRoot::new("reference");
    let id = "019bd5a2-7c1e-7d3a-9f00-0123456789ab";
    let conversation = "019bd5a2-7c00-7000-8000-000000000001";
    let digest = "5f2c".repeat(16);
    // Exactly what Python's json.dumps(env, indent=2) writes: ensure_ascii escapes, ", "
    // never appears at line ends, no newline at the end of the file.
    let envelope_text = format!(
        r#"{{
  "invocation_id": "{id}",
  "agent_id": "hello",
  "agent_version": "0.3.1",
  "completed_at": "2026-01-02T03:04:05.678901Z",
  "grounding_mode": "input_only",
  "policy_bundle_ref": "profile:default@v1",
  "policy_digest": "{zeros}",
  "acting_for": {{
    "principal_id": "https://orcid.org/0000-0002-1825-0097",
    "name": "Jos\u00e9 Carberry \ud83d\ude00",
    "principal_kind": "person",
    "assurance": "asserted"
  }},
  "contract_version": "0.7.0",
  "input_schema": "{digest}",
  "outcome": {{
    "status": "succeeded",
    "statement": "Replied."
  }},
  "payload": {{
    "schema_class": "Reply",
    "reply_text": "Gr\u00fc\u00df dich",
    "reply_derivation": "template",
    "grounded_on": []
  }},
  "evidence": [],
  "telemetry": {{
    "trace_id": "{trace}",
    "model_id": null,
    "input_tokens": 12,
    "output_tokens": 3,
    "energy_estimate_j": null,
    "energy_method": "not_measured"
  }},
  "requires_human_review": true,
  "conversation_id": "{conversation}"
}}"#,
        zeros = "0".repeat(64),
        trace = "ab".repeat(16),
    );
    let index_line = format!(
        concat!(
            r#"{{"invocation_id":"{id}","agent_id":"hello","agent_version":"0.3.1","#,
            r#""completed_at":"2026-01-02T03:04:05.678901Z","grounding_mode":"input_only","#,
            r#""policy_bundle_ref":"profile:default@v1","policy_digest":"{zeros}","#,
            r#""acting_for":{{"principal_id":"https://orcid.org/0000-0002-1825-0097","#,
            r#""name":"Jos\u00e9 Carberry \ud83d\ude00","principal_kind":"person","assurance":"asserted"}},"#,
            r#""contract_version":"0.7.0","input_schema":"{digest}","#,
            r#""outcome":{{"status":"succeeded","statement":"Replied."}},"#,
            r#""payload":{{"schema_class":"Reply","reply_text":"Gr\u00fc\u00df dich","reply_derivation":"template","grounded_on":[]}},"#,
            r#""evidence":[],"telemetry":{{"trace_id":"{trace}","model_id":null,"input_tokens":12,"output_tokens":3,"#,
            r#""energy_estimate_j":null,"energy_method":"not_measured"}},"requires_human_review":true,"#,
            r#""conversation_id":"{conversation}"}}"#
        ),
        id = id,
        zeros = "0".repeat(64),
        digest = digest,
        trace = "ab".repeat(16),
        conversation = conversation,
    );
    let request_text = format!(
        "{{\n  \"invocation_id\": \"{id}\",\n  \"agent_id\": \"hello\",\n  \"input\": {{\n    \"schema_class\": \"Message\",\n    \"message_text\": \"Gr\\u00fc\\u00df\"\n  }},\n  \"conversation_id\": \"{conversation}\"\n}}"
    );
    let spans_text = "{\"name\": \"invoke_agent\", \"attributes\": {\"dd.grounding_mode\": \"input_only\"}}\n{\"name\": \"chat\", \"attributes\": {}}\n";
    let schema_text = "{\n  \"type\": \"object\",\n  \"title\": \"Message \\u2014 text\",\n  \"required\": [\n    \"message_text\"\n  ]\n}";
    let run_dir = root.0.join(id);
    fs::create_dir_all(&run_dir).unwrap();
    fs::create_dir_all(root.0.join(SCHEMAS_DIR)).unwrap();
    fs::write(run_dir.join(ENVELOPE_FILE), &envelope_text).unwrap();
    fs::write(run_dir.join(REQUEST_FILE), &request_text).unwrap();
    fs::write(run_dir.join(SPANS_FILE), spans_text).unwrap();
    fs::write(
        run_dir.join(GROUNDING_FILE),
        "grounding: passed [input_only] (0 retrieval, 1 chat spans)\n",
    )
    .unwrap();
    fs::write(
        run_dir.join("sources.txt"),
        "sources: 0 verified, 0 unresolved\n",
    )
    .unwrap();
    fs::write(
        root.0.join(SCHEMAS_DIR).join(format!("{digest}.json")),
        schema_text,
    )
    .unwrap();
    fs::write(root.0.join(INDEX_NAME), format!("{index_line}\n")).unwrap();

    let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
    assert!(recovery.is_clean(), "{recovery:?}");
    assert!(store.has(id));
    let env = store.envelope(id).unwrap().unwrap();
    assert_eq!(env["acting_for"]["name"], json!("José Carberry 😀"));
    assert_eq!(env["payload"]["reply_text"], json!("Grüß dich"));
    assert_eq!(
        store.envelope_text(id).unwrap().as_deref(),
        Some(envelope_text.as_str())
    );
    // Our writer produces the reference's bytes (in the document's own key order).
    assert_eq!(
        python::reformat(&envelope_text, Style::INDENT2).unwrap(),
        envelope_text
    );
    assert_eq!(python::reformat(&index_line, COMPACT).unwrap(), index_line);
    assert_eq!(list(&store), vec![env.clone()]);
    assert_eq!(
        listing(&store),
        vec![
            json!({"invocation_id": id, "agent_id": "hello", "status": "succeeded",
                    "completed_at": "2026-01-02T03:04:05.678901Z", "acting_for": "José Carberry 😀"})
        ]
    );
    assert_eq!(
        store.request(id).unwrap().unwrap()["input"]["message_text"],
        json!("Grüß")
    );
    assert_eq!(store.spans(id).unwrap().as_deref(), Some(spans_text));
    assert_eq!(
        store.grounding(id).unwrap().as_deref(),
        Some("grounding: passed [input_only] (0 retrieval, 1 chat spans)")
    );
    assert_eq!(
        store.schema(&digest).unwrap().unwrap()["title"],
        json!("Message — text")
    );
    assert_eq!(
        crate::harness::conversations::runs_of(
            &store,
            conversation,
            &crate::harness::identity::Access::All
        )
        .unwrap(),
        Some(vec![env.clone()])
    );
    assert_eq!(
        crate::harness::conversations::list(&store, &crate::harness::identity::Access::All)
            .unwrap()[0]["turns"],
        json!(1)
    );

    // A reference run that crashed before its index line (it writes the index after
    // envelope.json) is indexed on open; one whose envelope.json was cut short is not.
    let late = "019bd5a2-7c1f-7000-8000-000000000002";
    let late_env = envelope_text.replace(id, late);
    fs::create_dir(root.0.join(late)).unwrap();
    fs::write(root.0.join(late).join(ENVELOPE_FILE), &late_env).unwrap();
    let cut = "019bd5a2-7c1f-7000-8000-000000000003";
    fs::create_dir(root.0.join(cut)).unwrap();
    fs::write(root.0.join(cut).join(ENVELOPE_FILE), &envelope_text[..100]).unwrap();
    let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
    assert_eq!(recovery.indexed, vec![late.to_string()]);
    assert_eq!(recovery.unreadable, vec![cut.to_string()]);
    assert_eq!(ids(&list(&store)), vec![id.to_string(), late.to_string()]);
    assert_eq!(store.spans(late).unwrap(), None);
    assert_eq!(
        fs::read_to_string(root.0.join(late).join(ENVELOPE_FILE)).unwrap(),
        late_env
    );
}

/// The files and index line the writer makes of `env`, as a journal record holds them.
fn record_of(env: &Value) -> (Vec<(String, String)>, String) {
    let id = env["invocation_id"].as_str().unwrap();
    let files = vec![
        (
            ENVELOPE_FILE.to_string(),
            python::dumps(env, Style::INDENT2),
        ),
        (
            REQUEST_FILE.to_string(),
            python::dumps(&request(id), Style::INDENT2),
        ),
        (
            SPANS_FILE.to_string(),
            "{\"name\": \"invoke_agent\"}\n".to_string(),
        ),
        (
            GROUNDING_FILE.to_string(),
            "grounding: passed [input_only] (0 retrieval, 0 chat spans)\n".to_string(),
        ),
    ];
    (files, python::dumps(env, COMPACT))
}

fn encoded(env: &Value) -> Vec<u8> {
    let (files, line) = record_of(env);
    let files: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, c)| (n.as_str(), c.as_bytes()))
        .collect();
    let mut record = journal::encode(
        env["invocation_id"].as_str().unwrap(),
        &files,
        &[],
        line.as_bytes(),
    );
    // As segment 0 holds it.
    journal::seal(&mut record, 0);
    record
}

/// What a writer killed at each step leaves is replayed from its journal: a run journaled and
/// never renamed, one renamed whose files a power loss cut short, one renamed and not indexed;
/// a voided record and a torn last record are not published. The journal, the dead writer's
/// lock and its temporary directory go; a running writer's journal stays.
#[test]
fn a_stopped_writers_journal_is_replayed_and_removed() {
    let root = TempRoot::new("replay");
    let first = envelope(&new_uuid7(), "hello", "2026-01-01T00:00:00Z");
    {
        let store = RunStore::open(&root.0).unwrap();
        put(&store, &first).unwrap();
    }
    let control = root.0.join(CONTROL_DIR);
    assert_eq!(
        dir_names(&control, &control).unwrap(),
        vec![writer::STORE_LOCK.to_string()],
        "a writer that stopped cleanly leaves no journal"
    );
    let live = RunStore::open(&root.0).unwrap();

    let run = |at: &str| envelope(&new_uuid7(), "hello", at);
    let (lost, cut, unindexed, voided, torn) = (
        run("2026-01-02T00:00:00Z"),
        run("2026-01-03T00:00:00Z"),
        run("2026-01-04T00:00:00Z"),
        run("2026-01-05T00:00:00Z"),
        run("2026-01-06T00:00:00Z"),
    );
    let id = |e: &Value| e["invocation_id"].as_str().unwrap().to_string();
    let dead = "999999-00000000deadbeef";
    let mut segment = journal::segment_header(0).to_vec();
    for env in [&lost, &cut, &unindexed] {
        segment.extend_from_slice(&encoded(env));
    }
    let void_at = segment.len() as u64;
    segment.extend_from_slice(&encoded(&voided));
    let half = encoded(&torn);
    segment.extend_from_slice(&half[..half.len() / 2]);
    let segment_path = control.join(format!("writer-{dead}.0.wal"));
    fs::write(&segment_path, &segment).unwrap();
    journal::void(
        &OpenOptions::new().write(true).open(&segment_path).unwrap(),
        void_at,
    )
    .unwrap();
    fs::write(control.join(format!("writer-{dead}.lock")), "").unwrap();
    // `lost` was being written to its temporary directory.
    let tmp = root
        .0
        .join(format!(".tmp-{dead}-0000000000000001-{}", id(&lost)));
    fs::create_dir(&tmp).unwrap();
    fs::write(tmp.join(ENVELOPE_FILE), "{").unwrap();
    // `cut` was renamed, and a power loss left its envelope empty and its spans missing.
    fs::create_dir(root.0.join(id(&cut))).unwrap();
    fs::write(root.0.join(id(&cut)).join(ENVELOPE_FILE), "").unwrap();
    // `unindexed` is whole, with no index line.
    let (files, _) = record_of(&unindexed);
    let files_ref: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, c)| (n.as_str(), c.as_str()))
        .collect();
    write_dir(&root.0.join(id(&unindexed)), &files_ref).unwrap();

    let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
    assert_eq!(recovery.writers, vec![dead.to_string()]);
    assert_eq!(recovery.replayed, vec![id(&lost), id(&cut)]);
    assert_eq!(recovery.indexed, vec![id(&lost), id(&cut), id(&unindexed)]);
    assert_eq!(recovery.removed, vec![tmp.clone()]);
    assert!(
        recovery.to_string().contains("restored 2 run(s)"),
        "{recovery}"
    );
    for env in [&lost, &cut, &unindexed] {
        let (files, _) = record_of(env);
        for (name, content) in files {
            assert_eq!(
                fs::read_to_string(root.0.join(id(env)).join(&name)).unwrap(),
                content,
                "{name} of {}",
                id(env)
            );
        }
    }
    assert!(!store.has(&id(&voided)) && !store.has(&id(&torn)));
    assert_eq!(
        ids(&list(&store)),
        vec![id(&first), id(&lost), id(&cut), id(&unindexed)]
    );
    assert!(!segment_path.exists() && !tmp.exists());
    assert!(!control.join(format!("writer-{dead}.lock")).exists());
    let live_files = dir_names(&control, &control).unwrap();
    let live_id = live.writer_id().unwrap();
    assert!(
        live_files.contains(&format!("writer-{live_id}.0.wal")),
        "the running writer's journal was touched: {live_files:?}"
    );
    // Replaying is idempotent.
    assert!(RunStore::open_reporting(&root.0).unwrap().1.is_clean());
}

/// A lone caller's run is journaled and synced before or while its directory is written (as
/// the last fsync's time decides): when the directory then cannot be written, the run is refused, its record is voided in the journal,
/// and no recovery ever publishes it; the same id may be sent again.
#[test]
fn a_run_whose_directory_fails_after_its_record_is_synced_is_voided_and_never_recovered() {
    let root = TempRoot::new("dir-after-sync");
    let store = RunStore::open(&root.0).unwrap();
    let first = envelope(&new_uuid7(), "hello", "2026-01-01T00:00:00Z");
    put(&store, &first).unwrap();
    let refused = envelope(&new_uuid7(), "hello", "2026-01-02T00:00:00Z");
    let id = |e: &Value| e["invocation_id"].as_str().unwrap().to_string();

    // The store's directory moves away under the writer: the journal it holds open still takes
    // the record and its fsync, but the run's temporary directory cannot be created.
    let moved = root.0.with_extension("moved");
    fs::rename(&root.0, &moved).unwrap();
    let err = put(&store, &refused).unwrap_err().to_string();
    let journal = fs::read_dir(moved.join(CONTROL_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "wal"))
        .unwrap();
    let segment = fs::read(&journal).unwrap();
    fs::rename(&moved, &root.0).unwrap();
    assert!(err.starts_with("creating .tmp-"), "{err}");
    assert!(err.contains(&id(&refused)), "{err}");
    assert!(!store.has(&id(&refused)));
    drop(store);

    // The journal as it stood, left by a writer that stopped: its first run is published
    // already, and its refused one is void.
    let control = root.0.join(CONTROL_DIR);
    let dead = "999999-00000000deadbeef";
    fs::write(control.join(format!("writer-{dead}.0.wal")), &segment).unwrap();
    fs::write(control.join(format!("writer-{dead}.lock")), "").unwrap();
    let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
    assert_eq!(recovery.writers, vec![dead.to_string()]);
    assert!(recovery.replayed.is_empty(), "{recovery:?}");
    assert!(!store.has(&id(&refused)));
    assert_eq!(ids(&list(&store)), vec![id(&first)]);
    assert!(leftovers(&root.0).is_empty(), "{:?}", leftovers(&root.0));

    put(&store, &refused).unwrap();
    assert_eq!(ids(&list(&store)), vec![id(&first), id(&refused)]);
}

/// A journal record whose id another complete run holds (a writer that lost the race for the
/// id) is never replayed over it.
#[test]
fn replay_never_replaces_another_run_with_the_same_id() {
    let root = TempRoot::new("replay-race");
    let store = RunStore::open(&root.0).unwrap();
    let id = new_uuid7();
    let winner = envelope(&id, "winner", "2026-01-01T00:00:00Z");
    put(&store, &winner).unwrap();
    drop(store);
    let loser = envelope(&id, "loser", "2026-01-02T00:00:00Z");
    let dead = "999998-00000000deadbeef";
    let control = root.0.join(CONTROL_DIR);
    let mut segment = journal::segment_header(0).to_vec();
    segment.extend_from_slice(&encoded(&loser));
    fs::write(control.join(format!("writer-{dead}.0.wal")), &segment).unwrap();
    let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
    assert!(
        recovery.replayed.is_empty() && recovery.indexed.is_empty(),
        "{recovery:?}"
    );
    assert_eq!(store.envelope(&id).unwrap().unwrap()["agent_id"], "winner");
    assert_eq!(list(&store).len(), 1);
}

/// Index lines that are not JSON (a torn append another append was glued onto) and lines that
/// name a run twice are removed on open, the bad ones kept aside, and every run directory ends
/// up indexed once. Until then, readers skip the bad line and count it.
#[test]
fn a_broken_index_is_mended_on_open() {
    let root = TempRoot::new("mend");
    let store = RunStore::open(&root.0).unwrap();
    let envs: Vec<Value> = (1..=4)
        .map(|i| envelope(&new_uuid7(), "hello", &format!("2026-01-0{i}T00:00:00Z")))
        .collect();
    for e in &envs {
        put(&store, e).unwrap();
    }
    drop(store);
    let lines: Vec<String> = envs.iter().map(|e| python::dumps(e, COMPACT)).collect();
    // Line 2 torn, with line 3 glued onto it (the issue's ENOSPC); line 1 twice; NULs.
    let broken = format!(
        "{}\n{}{}\n{}\n\0\0\0\0\n{}\n",
        lines[0],
        &lines[1][..40],
        lines[2],
        lines[0],
        lines[3]
    );
    fs::write(root.0.join(INDEX_NAME), &broken).unwrap();
    let reader = RunReader::open(&root.0).unwrap();
    let page = reader.page(&Query::default()).unwrap();
    assert_eq!(page.skipped, 2);
    assert_eq!(page.rows.len(), 3, "line 1 twice and line 4");
    assert_eq!(
        fs::read_to_string(root.0.join(INDEX_NAME)).unwrap(),
        broken,
        "a reader wrote"
    );

    let (store, recovery) = RunStore::open_reporting(&root.0).unwrap();
    assert_eq!(recovery.dropped_lines, vec![2, 4]);
    assert_eq!(recovery.duplicates.len(), 1);
    let mut indexed = recovery.indexed.clone();
    indexed.sort();
    let mut missing = vec![
        envs[1]["invocation_id"].as_str().unwrap().to_string(),
        envs[2]["invocation_id"].as_str().unwrap().to_string(),
    ];
    missing.sort();
    assert_eq!(indexed, missing);
    let listed = ids(&list(&store));
    assert_eq!(listed.len(), 4);
    assert_eq!(listed.iter().collect::<HashSet<_>>().len(), 4);
    let kept = fs::read_to_string(root.0.join(CONTROL_DIR).join(recovery::DROPPED_LINES)).unwrap();
    assert!(kept.contains(&lines[2]), "{kept}");
    assert!(RunStore::open_reporting(&root.0).unwrap().1.is_clean());
}

/// A writer in another process that stopped mid-append leaves a torn last line; the next
/// append (under the store's lock) cuts it off and indexes its run again from the run's own
/// envelope, so nothing is glued onto it and the run is indexed once.
#[test]
fn a_torn_line_left_by_a_stopped_writer_is_mended_before_the_next_append() {
    let root = TempRoot::new("torn-live");
    let store = RunStore::open(&root.0).unwrap();
    let first = envelope(&new_uuid7(), "hello", "2026-01-01T00:00:00Z");
    put(&store, &first).unwrap();
    // Another writer renamed its run into place and was killed mid-way through its line.
    let other = envelope(&new_uuid7(), "hello", "2026-01-02T00:00:00Z");
    let (files, line) = record_of(&other);
    let files_ref: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, c)| (n.as_str(), c.as_str()))
        .collect();
    write_dir(
        &root.0.join(other["invocation_id"].as_str().unwrap()),
        &files_ref,
    )
    .unwrap();
    OpenOptions::new()
        .append(true)
        .open(store.index_path())
        .unwrap()
        .write_all(&line.as_bytes()[..line.len() / 3])
        .unwrap();
    let third = envelope(&new_uuid7(), "hello", "2026-01-03T00:00:00Z");
    put(&store, &third).unwrap();
    let lines = index_lines(store.index_path());
    assert_eq!(
        lines,
        vec![
            python::dumps(&first, COMPACT),
            line,
            python::dumps(&third, COMPACT)
        ]
    );
    drop(store);
    assert!(RunStore::open_reporting(&root.0).unwrap().1.is_clean());
}

/// Full segments are checkpointed and reused in turn: with small segments, a few hundred runs
/// rotate many times, at most one spare is kept, every run is stored and indexed once, and a
/// writer that stops cleanly leaves nothing in `.ddwire/` but the store's lock.
#[test]
fn full_segments_are_checkpointed_and_reused() {
    let root = TempRoot::new("rotate");
    let (store, _) = RunStore::open_with(root.0.clone(), writer::MIN_SEGMENT_BYTES).unwrap();
    let control = root.0.join(CONTROL_DIR);
    let mut made = Vec::new();
    let mut seen_spare = false;
    for i in 0..300 {
        let mut env = envelope(&new_uuid7(), "hello", "2026-01-01T00:00:00Z");
        env["outcome"]["statement"] = json!(format!("{i} {}", "y".repeat(600)));
        put(&store, &env).unwrap();
        made.push(env["invocation_id"].as_str().unwrap().to_string());
        let names = dir_names(&control, &control).unwrap();
        assert!(names.iter().filter(|n| n.ends_with(".spare.wal")).count() <= 1);
        seen_spare |= names.iter().any(|n| n.ends_with(".spare.wal"));
    }
    assert!(seen_spare, "no segment was ever kept for reuse");
    let names = dir_names(&control, &control).unwrap();
    let highest = names
        .iter()
        .filter_map(|n| {
            n.strip_suffix(".wal")?
                .rsplit_once('.')?
                .1
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap();
    assert!(highest >= 5, "only {highest} rotations: {names:?}");
    assert_eq!(ids(&list(&store)), made);
    drop(store);
    assert_eq!(
        dir_names(&control, &control).unwrap(),
        vec![writer::STORE_LOCK.to_string()]
    );
    assert!(RunStore::open_reporting(&root.0).unwrap().1.is_clean());
}

// --- Reading runs off the disk, as `ddwire export` does ---------------------------------------

/// A run directory as a store (or the reference) publishes it: `envelope.json` and spans.
/// A segment made on the commit path is written as zeros ahead of its records, so a commit
/// overwrites allocated blocks and never changes the file's length (on ext4, an append would
/// make each group's fsync a journal commit); it is full at that length, and it is never kept
/// as the spare, which is always a full-size segment.
#[test]
fn a_segment_made_on_the_commit_path_is_zeroed_ahead_and_never_kept_as_the_spare() {
    let root = TempRoot::new("zeroed");
    let segment_bytes = 4 * writer::MADE_SEGMENT_BYTES;
    let (store, _) = RunStore::open_with(root.0.clone(), segment_bytes).unwrap();
    let control = root.0.join(CONTROL_DIR);
    let segment_lengths = || {
        dir_names(&control, &control)
            .unwrap()
            .into_iter()
            .filter(|n| n.ends_with(".0.wal"))
            .map(|n| fs::metadata(control.join(n)).unwrap().len())
            .collect::<Vec<_>>()
    };
    assert_eq!(segment_lengths(), vec![writer::MADE_SEGMENT_BYTES]);
    let mut made = Vec::new();
    let mut spares = Vec::new();
    for i in 0..120 {
        let mut env = envelope(&new_uuid7(), "hello", "2026-01-01T00:00:00Z");
        env["outcome"]["statement"] = json!(format!("{i} {}", "z".repeat(20_000)));
        put(&store, &env).unwrap();
        made.push(env["invocation_id"].as_str().unwrap().to_string());
        if i < 10 {
            assert_eq!(segment_lengths(), vec![writer::MADE_SEGMENT_BYTES]);
        }
        for name in dir_names(&control, &control).unwrap() {
            if name.ends_with(".spare.wal") {
                spares.push(fs::metadata(control.join(&name)).map_or(0, |m| m.len()));
            }
        }
    }
    let names = dir_names(&control, &control).unwrap();
    assert!(
        names.iter().any(|n| n.ends_with(".1.wal")),
        "120 runs of 20 KB did not fill the first segment: {names:?}"
    );
    assert!(spares.iter().all(|len| *len >= segment_bytes), "{spares:?}");
    assert_eq!(ids(&list(&store)), made);
    drop(store);
    assert!(RunStore::open_reporting(&root.0).unwrap().1.is_clean());
}

fn put_run_files(runs: &Path, id: &str, completed_at: &str, spans: &str) {
    let dir = runs.join(id);
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join(ENVELOPE_FILE),
        format!("{{\"completed_at\": \"{completed_at}\"}}"),
    )
    .unwrap();
    fs::write(dir.join(SPANS_FILE), spans).unwrap();
}

#[test]
fn whole_runs_are_listed_oldest_first_and_since_filters_by_completion_time() {
    let root = TempRoot::new("run-ids");
    fs::create_dir_all(&root.0).unwrap();
    let (a, b) = (new_uuid7(), new_uuid7());
    put_run_files(&root.0, &b, "2026-01-02T00:00:00Z", "");
    put_run_files(&root.0, &a, "2026-01-01T00:00:00Z", "");
    // Not runs: an unfinished write, a directory without an envelope, a stray file.
    fs::create_dir_all(root.0.join(format!(".tmp-1-2-{}", new_uuid7()))).unwrap();
    fs::create_dir_all(root.0.join(new_uuid7())).unwrap();
    fs::write(root.0.join(INDEX_NAME), "").unwrap();
    let reader = RunReader::open(&root.0).unwrap();
    assert_eq!(reader.run_ids(None).unwrap(), [a.clone(), b.clone()]);
    let since = crate::time::parse_rfc3339("2026-01-01T12:00:00Z");
    assert_eq!(reader.run_ids(since).unwrap(), [b]);
}

#[test]
fn span_records_are_read_in_order_and_a_bad_line_or_a_foreign_id_is_refused() {
    let root = TempRoot::new("span-records");
    fs::create_dir_all(&root.0).unwrap();
    let id = new_uuid7();
    let tracer = crate::trace::Tracer::new("t");
    let span = tracer.invoke_agent("a");
    let trace_id = span.context().trace_id;
    span.end();
    let line = crate::trace::to_json(&tracer.take(trace_id)[0]);
    let reader = RunReader::open(&root.0).unwrap();
    put_run_files(
        &root.0,
        &id,
        "2026-01-01T00:00:00Z",
        &format!("{line}\n\n{line}\n"),
    );
    assert_eq!(reader.span_records(&id).unwrap().unwrap().len(), 2);
    assert!(reader.span_records("../etc").unwrap().is_none());
    assert!(reader.span_records(&new_uuid7()).unwrap().is_none());
    put_run_files(
        &root.0,
        &id,
        "2026-01-01T00:00:00Z",
        &format!("{line}\nnot json\n"),
    );
    let err = reader.span_records(&id).unwrap_err().to_string();
    assert!(err.contains("line 2"), "{err}");
}
