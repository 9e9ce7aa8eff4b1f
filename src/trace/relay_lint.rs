//! Reading a relay session back: the spans `ddwire relay` wrote for one A2A `contextId`
//! (`<traces>/<contextId>.jsonl`, one span JSON document a line), checked against the eight
//! assertions the relay it replaces (otel-a2a-relay, "Span shape") makes of a session's trace.
//!
//! [`read_session`] reads the file (a non-JSON line, a truncated last line, an empty file: a
//! typed [`TraceError`], never a panic); [`lint`] runs every [`Check`] over the spans and gives
//! one [`Verdict`] per check, in [`Check::ALL`]'s order. The linter reads only what the relay
//! writes, through the names `trace::names::relay` spells; it knows no relay code, so a file
//! written by another relay (or edited by hand) is judged by what it holds.
//!
//! Several relays' files of one session may be joined into one (a chain through two relays):
//! a forward's CLIENT span and the SERVER span of the relay it called are then both at hand,
//! and the propagation check sees that the second parents on the first.

use super::names::relay as n;
use super::{AttrValue, SpanId, SpanKind, SpanRecord, StatusCode, TraceError, TraceId};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// The longest context id used as a file name as it is.
const MAX_PLAIN_NAME: usize = 128;

/// The file a relay writes a session's spans to: `<contextId>.jsonl` when the context id is
/// made only of `A-Z a-z 0-9 . _ -` (at most 128, not starting with a dot, and not passing for
/// one of the relay's own names), else `session-<sha256 of the id, hex>.jsonl`;
/// `no-session.jsonl` for the spans of calls that named no context.
pub(crate) fn session_file_name(session: Option<&str>) -> String {
    let Some(session) = session else {
        return "no-session.jsonl".into();
    };
    let plain = !session.is_empty()
        && session.len() <= MAX_PLAIN_NAME
        && !session.starts_with('.')
        && session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && session != "no-session"
        && !session.starts_with("session-");
    if plain {
        format!("{session}.jsonl")
    } else {
        let digest = Sha256::digest(session.as_bytes());
        format!("session-{}.jsonl", crate::ids::hex(&digest))
    }
}

/// Read a relay session file: every non-blank line a span JSON document.
///
/// An empty file (or one of blank lines only) is [`TraceError::EmptySession`]; a line that is
/// not UTF-8 or not a span is [`TraceError::SessionLine`], marked `truncated` when it is the
/// last line and the file does not end with a newline (a write cut short).
pub(crate) fn read_session(bytes: &[u8]) -> Result<Vec<SpanRecord>, TraceError> {
    let mut spans = Vec::new();
    let ends_whole = bytes.ends_with(b"\n");
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let last = lines.iter().rposition(|l| !l.is_empty());
    for (i, line) in lines.iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let truncated = Some(i) == last && !ends_whole;
        let bad = |reason: String| TraceError::SessionLine {
            line: i + 1,
            truncated,
            reason,
        };
        let text = std::str::from_utf8(line).map_err(|_| bad("not UTF-8".into()))?;
        spans.push(super::from_json(text).map_err(|e| bad(e.to_string()))?);
    }
    if spans.is_empty() {
        return Err(TraceError::EmptySession);
    }
    Ok(spans)
}

/// One of the eight assertions over a relay session's trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Check {
    /// Every span has a non-zero trace and span id, unique in the file, and a parent within
    /// the file in its own trace, except the session's roots: SERVER spans, whose parent is
    /// the caller's (outside the file) or none.
    Parents,
    /// A CLIENT span (a forward) is the child of the SERVER span it forwards for, in its trace,
    /// so the `traceparent` its peer received continues the caller's trace; where the peer's
    /// SERVER span is in the file (a relay calling a relay), it parents on the forward.
    Propagation,
    /// `session.id` is on every span and equals the session's A2A `contextId`: the same on
    /// every span, the one the file is named after, and the `contextId` of the call's message
    /// and answer where they name one.
    Session,
    /// Task state changes follow A2A's task life cycle (A2A v0.3 §6.3 `TaskState`): known
    /// states, each change from the state the task was last in, `submitted` only first, and
    /// nothing after a terminal state (`completed`, `canceled`, `failed`, `rejected`).
    TaskStates,
    /// A stream's chunks are numbered 0, 1, 2, … in order and end with exactly one `final`
    /// chunk; a stream that broke (an error span) or whose caller left may end without one.
    StreamChunks,
    /// Every error span carries `a2a.relay.failure_class`, one of the relay's documented
    /// classes, and a span that carries one is an error span.
    FailureClasses,
    /// Times nest: a span ends no earlier than it starts, a child lies within its parent (a
    /// CLIENT span within its SERVER span), and an event within its span.
    TimeNesting,
    /// Span names, attribute keys, event names and event keys are only those the relay
    /// spells (`trace::names::relay`).
    AttributeNames,
}

impl Check {
    /// Every check, in the order [`lint`] runs them.
    pub(crate) const ALL: [Check; 8] = [
        Check::Parents,
        Check::Propagation,
        Check::Session,
        Check::TaskStates,
        Check::StreamChunks,
        Check::FailureClasses,
        Check::TimeNesting,
        Check::AttributeNames,
    ];

    /// The check's name in reports.
    pub(crate) fn id(self) -> &'static str {
        match self {
            Check::Parents => "parents",
            Check::Propagation => "propagation",
            Check::Session => "session",
            Check::TaskStates => "task-states",
            Check::StreamChunks => "stream-chunks",
            Check::FailureClasses => "failure-class",
            Check::TimeNesting => "time-nesting",
            Check::AttributeNames => "attribute-names",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// What one check concluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing in the session breaks the assertion.
    Passed,
    /// Each way the session breaks it, in the order found.
    Failed(Vec<String>),
}

/// What the linter concluded about one relay session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RelayReport {
    /// The session's `session.id` (the first span's), if any span carries one.
    pub(crate) session: Option<String>,
    /// The spans read.
    pub(crate) spans: usize,
    /// Each check and its verdict, in [`Check::ALL`]'s order.
    pub(crate) checks: Vec<(Check, Verdict)>,
}

impl RelayReport {
    /// Whether every check passed.
    pub(crate) fn passed(&self) -> bool {
        self.checks.iter().all(|(_, v)| *v == Verdict::Passed)
    }

    /// The checks that failed, in order.
    pub(crate) fn failed(&self) -> Vec<Check> {
        self.checks
            .iter()
            .filter(|(_, v)| *v != Verdict::Passed)
            .map(|(c, _)| *c)
            .collect()
    }

    /// The report for people: `relay session: passed [<session>] (<n> spans)` or
    /// `relay session: FAILED [<session>] (<n> spans)`, then one line per check,
    /// `  <check>: passed` or `  <check>: FAILED` followed by `    - <violation>` lines. What
    /// the file says (ids, names) is escaped, so a file cannot drive a terminal.
    pub(crate) fn summary(&self) -> String {
        let safe = |t: &str| crate::text::escape_str(t, false).into_owned();
        let session = safe(self.session.as_deref().unwrap_or("no session"));
        let head = if self.passed() { "passed" } else { "FAILED" };
        let mut out = format!("relay session: {head} [{session}] ({} spans)", self.spans);
        for (check, verdict) in &self.checks {
            match verdict {
                Verdict::Passed => out.push_str(&format!("\n  {check}: passed")),
                Verdict::Failed(violations) => {
                    out.push_str(&format!("\n  {check}: FAILED"));
                    for v in violations {
                        out.push_str(&format!("\n    - {}", safe(v)));
                    }
                }
            }
        }
        out
    }

    /// The report as data: `{"file", "session", "spans", "passed", "checks": [{"check",
    /// "passed", "violations"}]}`.
    pub(crate) fn to_json(&self, file: Option<&str>) -> Value {
        let checks: Vec<Value> = self
            .checks
            .iter()
            .map(|(check, verdict)| {
                let violations = match verdict {
                    Verdict::Passed => Vec::new(),
                    Verdict::Failed(v) => v.clone(),
                };
                serde_json::json!({
                    "check": check.id(),
                    "passed": violations.is_empty(),
                    "violations": violations,
                })
            })
            .collect();
        serde_json::json!({
            "file": file,
            "session": self.session,
            "spans": self.spans,
            "passed": self.passed(),
            "checks": checks,
        })
    }
}

/// Whether `spans` look like a relay session: the first span's name is one the relay spells.
pub(crate) fn is_relay_session(spans: &[SpanRecord]) -> bool {
    spans
        .first()
        .is_some_and(|s| n::SPAN_NAMES.contains(&s.name.as_str()))
}

/// Run every check over one session's spans. `file_name` is the name of the file they were
/// read from (its last path component), when the session check should hold the file to the
/// name the relay gives a session's file.
pub(crate) fn lint(spans: &[SpanRecord], file_name: Option<&str>) -> RelayReport {
    let session = spans
        .iter()
        .find_map(|s| s.attributes.get_str(n::SESSION_ID))
        .map(str::to_string);
    let index = Index::new(spans);
    let checks = Check::ALL
        .into_iter()
        .map(|check| {
            let violations = match check {
                Check::Parents => parents(spans, &index),
                Check::Propagation => propagation(spans, &index),
                Check::Session => session_ids(spans, file_name),
                Check::TaskStates => task_states(spans, &index),
                Check::StreamChunks => stream_chunks(spans),
                Check::FailureClasses => failure_classes(spans),
                Check::TimeNesting => time_nesting(spans, &index),
                Check::AttributeNames => attribute_names(spans),
            };
            let verdict = if violations.is_empty() {
                Verdict::Passed
            } else {
                Verdict::Failed(violations)
            };
            (check, verdict)
        })
        .collect();
    RelayReport {
        session,
        spans: spans.len(),
        checks,
    }
}

/// How many parents a span's ancestry is followed through: far more than any relay chain has
/// (each hop is a SERVER and a CLIENT span, and a relay refuses a call that has crossed 8
/// relays already).
const MAX_ANCESTORS: usize = 256;

/// The spans by id (the first of a repeated id).
struct Index<'a> {
    by_id: HashMap<SpanId, &'a SpanRecord>,
}

impl<'a> Index<'a> {
    fn new(spans: &'a [SpanRecord]) -> Index<'a> {
        let mut by_id = HashMap::new();
        for s in spans {
            by_id.entry(s.span_id).or_insert(s);
        }
        Index { by_id }
    }

    /// How many SERVER spans of the file `span` descends from, counted up to
    /// [`MAX_ANCESTORS`] parents (a cycle of parents, or a hostile file's chain of a million,
    /// ends the walk there, so linting stays linear in the file).
    fn servers_above(&self, span: &SpanRecord) -> usize {
        let (mut count, mut at, mut steps) = (0, self.parent(span), 0);
        while let Some(p) = at {
            steps += 1;
            if steps > MAX_ANCESTORS.min(self.by_id.len()) {
                break;
            }
            if p.kind == SpanKind::Server {
                count += 1;
            }
            at = self.parent(p);
        }
        count
    }

    /// The span's parent, when it is in the file.
    fn parent(&self, span: &SpanRecord) -> Option<&'a SpanRecord> {
        span.parent_id.and_then(|p| self.by_id.get(&p).copied())
    }
}

/// How a span is named in a violation: `<name> <span id> (<kind>)`.
fn who(span: &SpanRecord) -> String {
    format!("{} 0x{} ({})", span.name, span.span_id, span.kind.name())
}

fn parents(spans: &[SpanRecord], index: &Index<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for s in spans {
        if s.trace_id == TraceId(0) {
            out.push(format!("{} has no trace id (all zeros)", who(s)));
        }
        if s.span_id == SpanId(0) {
            out.push(format!("{} has no span id (all zeros)", who(s)));
        }
        if !seen.insert(s.span_id) {
            out.push(format!("{} repeats a span id already in the file", who(s)));
        }
        match (s.parent_id, index.parent(s)) {
            (_, Some(parent)) if parent.trace_id != s.trace_id => out.push(format!(
                "{}'s parent {} is in trace {}, not in its own {}",
                who(s),
                who(parent),
                parent.trace_id,
                s.trace_id
            )),
            (_, Some(_)) => {}
            _ if s.kind == SpanKind::Server => {} // a root: the call came from outside
            (Some(p), None) => out.push(format!(
                "{}'s parent 0x{p} is not in the file, and only a SERVER span may be a root",
                who(s)
            )),
            (None, None) => out.push(format!(
                "{} has no parent, and only a SERVER span may be a root",
                who(s)
            )),
        }
    }
    out
}

fn propagation(spans: &[SpanRecord], index: &Index<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for c in spans.iter().filter(|s| s.kind == SpanKind::Client) {
        match index.parent(c) {
            Some(p) if p.kind == SpanKind::Server && p.trace_id == c.trace_id => {}
            Some(p) => out.push(format!(
                "{} forwards under {}, not under the SERVER span of its call in its trace",
                who(c),
                who(p)
            )),
            None => out.push(format!(
                "{} forwards for no SERVER span in the file: the traceparent its peer got \
                 continues no call of this session",
                who(c)
            )),
        }
    }
    // The peer's side, where it is at hand (a relay's file joined in): a SERVER span whose
    // parent is in the file received its traceparent from there, so that parent must be a
    // forward (a CLIENT span) of its trace that was under way when it began. A SERVER span whose
    // parent is elsewhere came from outside: a caller, which may make any number of calls.
    for s in spans.iter().filter(|s| s.kind == SpanKind::Server) {
        let Some(p) = index.parent(s) else {
            continue;
        };
        let under_way = p.start_ns <= s.start_ns && s.start_ns <= p.end_ns;
        if p.kind != SpanKind::Client || p.trace_id != s.trace_id || !under_way {
            out.push(format!(
                "{} received its call from {}, which is not a forward of its trace under way \
                 then: the traceparent the peer received is not a forward's",
                who(s),
                who(p)
            ));
        }
    }
    out
}

fn session_ids(spans: &[SpanRecord], file_name: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let first = spans
        .iter()
        .find_map(|s| s.attributes.get_str(n::SESSION_ID));
    let no_session = file_name == Some(session_file_name(None).as_str());
    for s in spans {
        match (s.attributes.get_str(n::SESSION_ID), first) {
            (Some(id), _) if no_session => out.push(format!(
                "{} carries session.id {id:?} in the file of calls that named no session",
                who(s)
            )),
            (Some(id), Some(first)) if id != first => out.push(format!(
                "{} carries session.id {id:?}, not the session's {first:?}",
                who(s)
            )),
            (Some(id), _) => {
                for (what, context) in context_ids(s) {
                    if context != id {
                        out.push(format!(
                            "{}'s {what} names contextId {context:?}, not its session.id {id:?}",
                            who(s)
                        ));
                    }
                }
            }
            (None, _) if no_session => {}
            (None, _) => out.push(format!("{} carries no session.id", who(s))),
        }
    }
    if let (Some(name), Some(first)) = (file_name, first)
        && !no_session
    {
        let expected = session_file_name(Some(first));
        if name != expected {
            out.push(format!(
                "the file is named {name:?}, but the relay writes session {first:?} to {expected:?}"
            ));
        }
    }
    out
}

/// The `contextId`s a span's `input.value` (the message) and `output.value` (the answer: a
/// Task or Message, 1.0-wrapped or not) name.
fn context_ids(span: &SpanRecord) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (what, key) in [
        ("input.value", n::INPUT_VALUE),
        ("output.value", n::OUTPUT_VALUE),
    ] {
        let Some(text) = span.attributes.get_str(key) else {
            continue;
        };
        let Ok(doc) = serde_json::from_str::<Value>(text) else {
            continue; // cut (…[cut]) or not JSON: nothing to compare
        };
        let inner = ["task", "message"]
            .iter()
            .find_map(|k| doc.get(*k))
            .unwrap_or(&doc);
        if let Some(id) = inner.get("contextId").and_then(Value::as_str) {
            out.push((what, id.to_string()));
        }
    }
    out
}

/// A2A v0.3 §6.3 `TaskState` (the relay writes 1.0's `TASK_STATE_*` in these names).
const STATES: [&str; 9] = [
    "submitted",
    "working",
    "input-required",
    "auth-required",
    "completed",
    "canceled",
    "failed",
    "rejected",
    "unknown",
];

/// The states a task never leaves (A2A v0.3 §6.3: terminal states).
const TERMINAL: [&str; 4] = ["completed", "canceled", "failed", "rejected"];

fn task_states(spans: &[SpanRecord], index: &Index<'_>) -> Vec<String> {
    let mut out = Vec::new();
    // Each relay's view of each task, in time order: (relay, task) → [(time, from, to, span)].
    // Relays of a chain may share an `agent.id`; each is told apart by how many SERVER spans
    // (hops of relays before it) its span descends from.
    type Change<'s> = (u64, Option<&'s str>, &'s str, &'s SpanRecord);
    let mut by_task: HashMap<(usize, &str), Vec<Change<'_>>> = HashMap::new();
    let mut order = Vec::new();
    for s in spans {
        let relay = index.servers_above(s);
        for e in s.events.iter().filter(|e| e.name == n::EVENT_STATE_CHANGE) {
            let Some(task) = e
                .attributes
                .get_str(n::TASK_ID)
                .or_else(|| s.attributes.get_str(n::TASK_ID))
            else {
                out.push(format!("{}: a state change names no task", who(s)));
                continue;
            };
            let Some(to) = e.attributes.get_str(n::TO) else {
                out.push(format!(
                    "{}: task {task}'s state change has no `to`",
                    who(s)
                ));
                continue;
            };
            let key = (relay, task);
            if !by_task.contains_key(&key) {
                order.push(key);
            }
            by_task
                .entry(key)
                .or_default()
                .push((e.time_ns, e.attributes.get_str(n::FROM), to, s));
        }
    }
    for key in order {
        let mut changes = by_task.remove(&key).unwrap_or_default();
        changes.sort_by_key(|c| c.0);
        let mut last: Option<&str> = None;
        for (_, from, to, s) in changes {
            let task = key.1;
            for state in from.iter().chain([&to]) {
                if !STATES.contains(state) {
                    out.push(format!(
                        "{}: task {task}: {state:?} is no A2A task state",
                        who(s)
                    ));
                }
            }
            if let Some(before) = last {
                if TERMINAL.contains(&before) {
                    out.push(format!(
                        "{}: task {task} moves to {to:?} after the terminal state {before:?}",
                        who(s)
                    ));
                } else if let Some(from) = from
                    && from != before
                {
                    out.push(format!(
                        "{}: task {task} changes from {from:?}, but its last state was {before:?}",
                        who(s)
                    ));
                }
            }
            if let Some(from) = from {
                if TERMINAL.contains(&from) && last.is_none() {
                    out.push(format!(
                        "{}: task {task} moves out of the terminal state {from:?} to {to:?}",
                        who(s)
                    ));
                }
                if from == to {
                    out.push(format!(
                        "{}: task {task} changes from {to:?} to itself",
                        who(s)
                    ));
                }
            }
            if to == "submitted" && (from.is_some() || last.is_some()) {
                out.push(format!(
                    "{}: task {task} returns to \"submitted\", which only begins a task",
                    who(s)
                ));
            }
            last = Some(to);
        }
    }
    out
}

fn stream_chunks(spans: &[SpanRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for s in spans {
        let chunks: Vec<_> = s
            .events
            .iter()
            .filter(|e| e.name == n::EVENT_STREAM_CHUNK)
            .collect();
        if chunks.is_empty() {
            continue;
        }
        let (mut finals, mut expected) = (0, 0i64);
        for (i, e) in chunks.iter().enumerate() {
            match e.attributes.get(n::SEQ) {
                Some(AttrValue::Int(seq)) if *seq == expected => expected += 1,
                Some(AttrValue::Int(seq)) => {
                    out.push(format!(
                        "{}: chunk {i} is numbered {seq} where {expected} was due (the \
                         sequence runs 0, 1, 2, … with none missing or repeated)",
                        who(s)
                    ));
                    expected = seq.saturating_add(1);
                }
                _ => {
                    out.push(format!("{}: chunk {i} has no integer seq", who(s)));
                    expected += 1;
                }
            }
            match e.attributes.get(n::FINAL) {
                Some(AttrValue::Bool(true)) => {
                    finals += 1;
                    if i + 1 != chunks.len() {
                        out.push(format!(
                            "{}: chunk {i} is final, but {} more follow",
                            who(s),
                            chunks.len() - i - 1
                        ));
                    }
                }
                Some(AttrValue::Bool(false)) => {}
                _ => out.push(format!("{}: chunk {i} has no boolean final", who(s))),
            }
        }
        let broke = s.status.code == StatusCode::Error
            || s.attributes.get(n::CALLER_GONE) == Some(&AttrValue::Bool(true));
        if finals > 1 {
            out.push(format!("{}: {finals} chunks are final, not one", who(s)));
        } else if finals == 0 && !broke {
            out.push(format!(
                "{}: the stream ended well after {} chunks, none of them final",
                who(s),
                chunks.len()
            ));
        }
    }
    out
}

fn failure_classes(spans: &[SpanRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for s in spans {
        let error = s.status.code == StatusCode::Error;
        match (error, s.attributes.get(n::FAILURE_CLASS)) {
            (_, Some(AttrValue::String(class)))
                if !n::FAILURE_CLASSES.contains(&class.as_str()) =>
            {
                out.push(format!(
                    "{}: {class:?} is none of the relay's failure classes",
                    who(s)
                ))
            }
            (true, Some(AttrValue::String(_))) => {}
            (true, Some(_)) => out.push(format!("{}: its failure class is not a string", who(s))),
            (true, None) => out.push(format!("{} failed with no failure class", who(s))),
            (false, Some(_)) => out.push(format!(
                "{} carries a failure class, but its status is not ERROR",
                who(s)
            )),
            (false, None) => {}
        }
    }
    out
}

fn time_nesting(spans: &[SpanRecord], index: &Index<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for s in spans {
        if s.end_ns < s.start_ns {
            out.push(format!("{} ends before it starts", who(s)));
        }
        if let Some(p) = index.parent(s)
            && (s.start_ns < p.start_ns || s.end_ns > p.end_ns)
        {
            out.push(format!(
                "{} [{}, {}] does not lie within its parent {} [{}, {}]",
                who(s),
                s.start_ns,
                s.end_ns,
                who(p),
                p.start_ns,
                p.end_ns
            ));
        }
        for e in &s.events {
            if e.time_ns < s.start_ns || e.time_ns > s.end_ns {
                out.push(format!(
                    "{}: event {} at {} lies outside the span",
                    who(s),
                    e.name,
                    e.time_ns
                ));
            }
        }
    }
    out
}

fn attribute_names(spans: &[SpanRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for s in spans {
        if !n::SPAN_NAMES.contains(&s.name.as_str()) {
            out.push(format!("{}: {:?} is no relay span name", who(s), s.name));
        }
        for (key, _) in s.attributes.iter() {
            if !n::SPAN_KEYS.contains(&key) {
                out.push(format!("{}: {key:?} is no relay attribute", who(s)));
            }
        }
        for e in &s.events {
            if !n::EVENT_NAMES.contains(&e.name.as_str()) {
                out.push(format!("{}: {:?} is no relay event name", who(s), e.name));
            }
            for (key, _) in e.attributes.iter() {
                if !n::EVENT_KEYS.contains(&key) {
                    out.push(format!(
                        "{}: event {}'s {key:?} is no relay event attribute",
                        who(s),
                        e.name
                    ));
                }
            }
        }
    }
    out
}
