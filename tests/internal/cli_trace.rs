//! `ddwire show` and `ddwire trace`: a stored run as a waterfall, over runs `ddwire demo`
//! made through a real harness on loopback.

use super::common::{TempDir, shared_dir};
use super::{ddwire, text};
use serde_json::Value;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, Weak};

fn ok(out: Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// The demo store the running tests share (a demo takes a fraction of a second).
fn demo_store() -> Arc<TempDir> {
    static STORE: Mutex<Weak<TempDir>> = Mutex::new(Weak::new());
    shared_dir(&STORE, "cli-trace", |dir| {
        ok(ddwire()
            .args(["demo", "--quiet", "--runs", dir.to_str().unwrap()])
            .output()
            .unwrap());
    })
}

/// The newest run of `agent` in the demo store.
fn run_of(agent: &str) -> String {
    let out = ddwire()
        .args(["runs", "--json", "--agent", agent, "--runs"])
        .arg(demo_store().path())
        .output()
        .unwrap();
    let line = ok(out);
    let row: Value = serde_json::from_str(line.lines().next().expect("a run")).unwrap();
    row["invocation_id"].as_str().unwrap().to_string()
}

fn show(args: &[&str]) -> String {
    ok(ddwire()
        .args(args)
        .arg("--runs")
        .arg(demo_store().path())
        .output()
        .unwrap())
}

#[test]
fn show_summarises_the_envelope_and_marks_the_withheld_run() {
    let _store = demo_store();
    let id = run_of("demo.ungrounded");
    let out = show(&["show", &id[..13]]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("run        {id}"));
    assert!(
        lines[2].starts_with("outcome    failed: Output withheld"),
        "{out}"
    );
    assert_eq!(
        lines[3],
        "problem    Output failed the grounding linter (grounding-violation)"
    );
    assert!(
        lines[4].starts_with("withheld   ⊘ Output failed the grounding linter"),
        "{out}"
    );
    assert_eq!(lines[5], "grounding  FAILED [input_only]");
    assert!(
        lines[6].contains("R2: payload cites 'src:atlantis-almanac'"),
        "{out}"
    );
    let root = out
        .lines()
        .find(|l| l.contains("invoke_agent  demo.ungrounded"))
        .expect(&out);
    assert!(root.ends_with("⊘ WITHHELD"), "{out}");
    assert!(!out.contains('\x1b'), "no colour into a pipe");
}

#[test]
fn trace_nests_the_delegated_run_under_its_delegate_span() {
    let _store = demo_store();
    let id = run_of("director.route");
    let child = run_of("hello.world");
    let out = show(&["trace", &id, "--width", "90"]);
    assert!(
        !out.contains("outcome "),
        "trace has no envelope summary: {out}"
    );
    let lines: Vec<&str> = out.lines().collect();
    let delegate = lines
        .iter()
        .position(|l| l.contains("└─ delegate  → hello.world"))
        .expect(&out);
    assert!(
        lines[delegate].contains(&format!("invocation:{child}")),
        "{out}"
    );
    assert!(
        lines[delegate + 1].contains(&format!("└─ ↳ run {child}  hello.world → succeeded")),
        "{out}"
    );
    assert!(
        lines[delegate + 2].contains("└─ invoke_agent  hello.world"),
        "{out}"
    );
    assert!(out.contains("⇠ linked to the delegate span above"), "{out}");
    // 90 columns leave the timeline 25: the root ran for all of it.
    let root = lines
        .iter()
        .find(|l| l.contains("invoke_agent  director.route"))
        .expect(&out);
    assert_eq!(root.chars().filter(|c| *c == '█').count(), 25, "{out}");
}

#[test]
fn json_gives_scripts_the_view_with_children_and_envelope_the_stored_document() {
    let _store = demo_store();
    let id = run_of("director.route");
    let doc: Value = serde_json::from_str(&show(&["show", &id, "--json"])).unwrap();
    assert_eq!(doc["invocation_id"], id.as_str());
    assert_eq!(doc["grounding_passed"], true);
    assert_eq!(doc["children"][0]["agent_id"], "hello.world");
    let delegate = doc["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "delegate")
        .unwrap();
    assert_eq!(
        delegate["delegated_invocation_id"],
        doc["children"][0]["invocation_id"]
    );
    let out = show(&["show", &id, "--envelope"]);
    let stored =
        std::fs::read_to_string(demo_store().path().join(&id).join("envelope.json")).unwrap();
    assert!(out.starts_with(stored.trim_end()), "{out}");
    assert!(out.contains("invoke_agent  director.route"), "{out}");
}

/// Colour reaches a terminal (a pseudo-terminal made by `script`), never a pipe, and never a
/// terminal when NO_COLOR is set.
#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let _store = demo_store();
    let id = run_of("hello.world");
    let command = format!(
        "{} show {id} --runs {}",
        super::ddwire_exe(),
        demo_store().path().display()
    );
    let on_tty = |no_color: Option<&str>| {
        let mut c = Command::new("script");
        c.args(["-qec", &command, "/dev/null"])
            .env_remove("NO_COLOR")
            .stdin(Stdio::null());
        if let Some(v) = no_color {
            c.env("NO_COLOR", v);
        }
        ok(c.output().expect("script(1), from util-linux, runs"))
    };
    assert!(on_tty(None).contains("\x1b[1minvoke_agent\x1b[0m"));
    assert!(!on_tty(Some("1")).contains('\x1b'));
    assert!(!show(&["show", &id]).contains('\x1b'));
}

#[test]
fn demo_draws_each_run_as_a_waterfall_with_the_delegated_run_nested() {
    let dir = TempDir::new("cli-trace-demo");
    let out = ok(ddwire()
        .args(["demo", "--runs", dir.to_str().unwrap()])
        .env("COLUMNS", "100")
        .output()
        .unwrap());
    let withheld = out
        .lines()
        .find(|l| l.contains("invoke_agent  demo.ungrounded"))
        .expect(&out);
    assert!(withheld.ends_with("⊘ WITHHELD"), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let delegate = lines
        .iter()
        .position(|l| l.contains("└─ delegate  → hello.world"))
        .expect(&out);
    assert!(lines[delegate + 1].contains("└─ ↳ run "), "{out}");
    assert!(
        lines[delegate + 2].contains("└─ invoke_agent  hello.world"),
        "{out}"
    );
    // 100 columns, 3 of them the demo's indent: the timeline takes 32.
    let root = lines
        .iter()
        .find(|l| l.contains("invoke_agent  director.route"))
        .unwrap();
    assert_eq!(root.chars().filter(|c| *c == '█').count(), 32, "{out}");
    assert!(!out.contains('\x1b'), "no colour into a pipe");
}

/// An agent's statement, span names, attributes and events go to a terminal: an escape
/// sequence in any of them (a window title, a cleared screen) is shown, never acted on, with
/// colours on or off; the waterfall's own colours stay.
#[test]
fn a_peers_escape_sequences_are_shown_escaped_never_sent_to_the_terminal() {
    let _store = demo_store();
    use ddwire::trace::AttrValue;
    use ddwire::trace::waterfall::{Options, render};
    let attack = "\u{1b}]0;PWNED\u{7}\u{1b}[2J";
    let reader = ddwire::harness::store::RunReader::open(demo_store().path()).unwrap();
    let mut view = ddwire::harness::view::load(&reader, &run_of("hello.world"))
        .unwrap()
        .unwrap();
    view.envelope["outcome"]["statement"] = Value::String(format!("hi{attack}"));
    view.grounding = Some(format!("grounding: passed\n{attack}"));
    let span = &mut view.spans[0];
    span.name = format!("invoke_agent{attack}");
    span.attributes
        .set("dd.agent_id", AttrValue::String(format!("a{attack}")));
    for color in [false, true] {
        let out = render(
            &view,
            &Options {
                color,
                ..Options::default()
            },
        );
        assert!(!out.contains("\u{7}") && !out.contains("\u{1b}]"), "{out}");
        assert!(!out.contains("\u{1b}[2J"), "{out}");
        assert!(out.contains("\\u{1b}]0;PWNED\\u{7}"), "{out}");
        assert_eq!(
            out.contains('\u{1b}'),
            color,
            "only the waterfall's own colours"
        );
    }
}

/// A run whose agent raised is linted over its spans (grounding.txt keeps the reference's
/// words), but `show` tells a reader there was no output to check, never "passed".
#[test]
fn show_says_no_output_to_check_where_the_agent_gave_no_result() {
    let _store = demo_store();
    let failing = run_of("demo.failing");
    let text = show(&["show", &failing]);
    let line = text
        .lines()
        .find(|l| l.starts_with("grounding"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("no output to check"), "{line}");
    let stored = demo_store().path().join(&failing).join("grounding.txt");
    if let Ok(stored) = std::fs::read_to_string(stored) {
        assert!(stored.starts_with("grounding: "), "unchanged: {stored}");
    }
}
