//! A run's trace as a waterfall, for people: `ddwire show`, `ddwire trace` and `ddwire demo`
//! draw one.
//!
//! ```text
//!    start   duration  timeline, 0 to 6.931 ms           span
//!    0.000      6.931  ████████████████████████████████  invoke_agent  director.route  delegation → succeeded
//!                                                        │  · agent_call  +6.904 ms  result=answered
//!    0.004      0.003  ▏                                 ├─ policy_gate  director.route
//!    2.260      3.988            ███████████████████     └─ delegate  → hello.world  invocation:01a22d35-…
//!                                                           └─ ↳ run 01a22d35-…  hello.world → succeeded  grounding passed [input_only]
//!    3.248      0.829                █████                     └─ invoke_agent  hello.world  input_only → succeeded
//!                                                                 │  ⇠ linked to the delegate span above (de08936ee1d1fdd8 of trace 9514…)
//!    3.251      0.002                 ▏                           ├─ policy_gate  hello.world
//!    3.595      0.007                  ▏                          └─ chat  model ddwire-template-v1  tokens 4 in / 7 out
//! ```
//!
//! Every span of a run is one line: its start offset and duration (in one unit for the whole
//! view), a bar placed and scaled on one time axis, and its place in the tree with its name,
//! the agent, the owned attributes a reader looks for ([`super::attr`]) and its status. Its
//! events and links follow on lines of their own. A delegated child run (its own trace, read
//! from the run store) is drawn under the `delegate` span that names it (`dd.source_id =
//! invocation:<child id>`), on the same time axis, so a delegation reads as one waterfall.
//!
//! A withheld run (its envelope failed the grounding linter, or otherwise says `failed` while
//! its root recorded the agent's `succeeded`) is marked on its root, and so is every span the
//! agent recorded in it: what those spans produced did not leave the harness.
//!
//! Rendering is a pure function of a [`RunView`] (the envelope, spans, grounding summary and
//! child runs, as the store keeps them) and [`Options`]; loading the view is the caller's.
//! `to_json` gives the same view as data, for scripts.

use super::SpanId;
use super::names::{SpanName, attr};
use super::record::{AttrValue, Attributes, SpanRecord, StatusCode};
use crate::text::{Keep, truncate};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

/// One stored run, with the delegated runs it started.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunView {
    /// The run's envelope, as stored.
    pub(crate) envelope: Value,
    /// Every span of the run (`spans.jsonl`).
    pub(crate) spans: Vec<SpanRecord>,
    /// The grounding summary (`grounding.txt`), if stored.
    pub(crate) grounding: Option<String>,
    /// The delegated runs this run started, each read from the store.
    pub(crate) children: Vec<RunView>,
    /// Delegated runs named by the envelope or a `delegate` span that could not be read:
    /// `(invocation id, why)`.
    pub(crate) missing: Vec<(String, String)>,
    /// Lines of `spans.jsonl` that were not span JSON, and so are not drawn.
    pub(crate) unreadable_spans: usize,
    /// A data steward's decision this run takes part in, as the run store records it: on a
    /// referred run, whether it was approved (and by which run) or declined; on an approved
    /// run, the approval it carried out.
    pub(crate) decision: Option<Value>,
}

impl RunView {
    /// The run's invocation id, from its envelope.
    pub(crate) fn invocation_id(&self) -> &str {
        text(&self.envelope, &["invocation_id"]).unwrap_or("")
    }

    /// The ids of the delegated runs this run names: each `delegate` span's
    /// `invocation:<id>`, then any other in the envelope's `delegations`, without repeats.
    pub(crate) fn child_ids(&self) -> Vec<String> {
        let mut spans: Vec<&SpanRecord> = self.spans.iter().collect();
        in_start_order(&mut spans);
        let listed = self.envelope.get("delegations").and_then(Value::as_array);
        let listed = listed.into_iter().flatten();
        let mut ids: Vec<String> = Vec::new();
        for id in spans
            .into_iter()
            .filter_map(delegated_id)
            .chain(listed.filter_map(|d| text(d, &["delegated_invocation_id"])))
        {
            if !ids.iter().any(|i| i == id) {
                ids.push(id.to_string());
            }
        }
        ids
    }

    /// Whether the run's result was withheld, and why (the problem's title, or what shows it):
    /// its problem is `grounding-violation`, or it says `failed` while the root recorded the
    /// agent's `succeeded` (the contract sets `dd.outcome` before it withholds), or the root
    /// carries the conductor's `withheld` event (which also marks a result withheld by
    /// validation whatever the agent claimed).
    pub(crate) fn withheld(&self) -> Option<String> {
        let title = text(&self.envelope, &["problem", "title"]);
        if problem_kind(&self.envelope) == Some(GROUNDING_VIOLATION) {
            return Some(title.unwrap_or("failed the grounding linter").to_string());
        }
        let status = text(&self.envelope, &["outcome", "status"]);
        let root = self
            .spans
            .iter()
            .find(|s| s.parent_id.is_none() && s.is(SpanName::InvokeAgent));
        let claimed = root.and_then(|r| r.owned_str(attr::OUTCOME));
        let withheld_event =
            root.is_some_and(|r| r.events.iter().any(|e| e.name == super::event::WITHHELD));
        let overruled = claimed == Some("succeeded") && status.is_some_and(|s| s != "succeeded");
        (withheld_event || overruled)
            .then(|| title.unwrap_or("withheld by the harness").to_string())
    }
}

/// How to draw.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    /// The terminal's width in columns; the timeline takes what the other columns leave.
    pub(crate) width: usize,
    /// ANSI colours (only for a terminal, and never with `NO_COLOR`).
    pub(crate) color: bool,
    /// The envelope summarised above the waterfall.
    pub(crate) summary: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            width: DEFAULT_WIDTH,
            color: false,
            summary: true,
        }
    }
}

/// The width assumed when the terminal's is not known (`COLUMNS` unset).
pub(crate) const DEFAULT_WIDTH: usize = 100;
/// The narrowest and widest timeline drawn.
const MIN_BAR: usize = 10;
const MAX_BAR: usize = 60;
/// What the offset and duration columns take: `{:>8}  {:>9}  `.
const TIME_COLUMNS: usize = 21;
/// What is left for the span column, at least, before the timeline may use the rest.
const SPAN_COLUMN: usize = 44;
/// How deep delegated runs are followed.
pub(crate) const MAX_DEPTH: usize = 8;

/// The problem type a withheld result carries (contract §3, step 4).
const GROUNDING_VIOLATION: &str = "grounding-violation";
/// The conductor's own resource (`service.name` of the spans it records).
const HARNESS_SERVICE: &str = "ddwire-harness";

/// The run drawn as text: the envelope summarised (with [`Options::summary`]), then the
/// waterfall, child runs nested under their `delegate` spans.
pub(crate) fn render(run: &RunView, options: &Options) -> String {
    // Every string came from an agent or the store: none reaches the terminal unescaped.
    let mut run = run.clone();
    terminal_safe(&mut run);
    let mut draw = Draw {
        paint: Paint(options.color),
        axis: Axis::of(&run),
        bar: bar_width(options.width),
        seen: HashSet::new(),
        drawn: HashSet::new(),
        out: String::new(),
    };
    if options.summary {
        summary(&run, &draw.paint, &mut draw.out);
        draw.out.push('\n');
    }
    let unit = draw.axis.unit();
    let timeline = format!("timeline, 0 to {}", unit.format_total(draw.axis.total()));
    let bar = draw.bar;
    let head = format!("{:>8}  {:>9}  {timeline:<bar$}  span", "start", "duration");
    let _ = writeln!(draw.out, "{}", draw.paint.sgr(DIM, &head));
    let head_end = draw.out.len();
    draw.run(&run, "", None, 0);
    if draw.out.len() == head_end {
        draw.line("", "(no spans stored)");
    }
    draw.out
}

/// The same view as data: the run's summary, every span with its offset from the start of the
/// whole view (delegated runs included), its depth in its run's tree, the words the waterfall
/// writes after its name (`keys`), whether it is marked withheld, its attributes, events and
/// links, and the child runs, nested as drawn. `ddwire show --json` prints it, and the harness
/// serves it as `GET /runs/{id}/waterfall` for the viewer page, so the two cannot disagree.
pub(crate) fn to_json(run: &RunView) -> Value {
    run_json(run, &Axis::of(run), 0)
}

fn run_json(run: &RunView, axis: &Axis, depth: usize) -> Value {
    let withheld = run.withheld();
    let marked = withheld_marks(run);
    let depths = depths(&run.spans);
    let mut spans: Vec<&SpanRecord> = run.spans.iter().collect();
    in_start_order(&mut spans);
    let spans: Vec<Value> = spans
        .into_iter()
        .map(|s| {
            let depth = depths.get(&s.span_id).copied().unwrap_or(0);
            span_json(s, axis, depth, marked(s))
        })
        .collect();
    let children: Vec<Value> = run
        .children
        .iter()
        .filter(|_| depth < MAX_DEPTH)
        .map(|c| run_json(c, axis, depth + 1))
        .collect();
    let missing: Vec<Value> = run
        .missing
        .iter()
        .map(|(id, why)| json!({"invocation_id": id, "reason": why}))
        .collect();
    let env = &run.envelope;
    json!({
        "invocation_id": run.invocation_id(),
        "agent_id": text(env, &["agent_id"]),
        "status": text(env, &["outcome", "status"]),
        "statement": text(env, &["outcome", "statement"]),
        "problem": env.get("problem").cloned().unwrap_or(Value::Null),
        "grounding": run.grounding,
        "grounding_passed": run.grounding.as_deref().and_then(grounding_passed),
        "withheld": withheld.is_some(),
        "withheld_reason": withheld,
        "trace_id": text(env, &["telemetry", "trace_id"]),
        "parent_invocation_id": text(env, &["parent_invocation_id"]),
        "delegated_invocation_ids": run.child_ids(),
        "start_ns": axis.start,
        "duration_ns": axis.total(),
        "spans": spans,
        "children": children,
        "missing_children": missing,
        "unreadable_spans": run.unreadable_spans,
        "decision": run.decision,
        "envelope": run.envelope,
    })
}

/// One span as data, on the view's time axis, with its depth in its run's tree and whether
/// it is marked withheld.
fn span_json(s: &SpanRecord, axis: &Axis, depth: usize, withheld: bool) -> Value {
    let events: Vec<Value> = s
        .events
        .iter()
        .map(|e| {
            json!({
                "name": e.name,
                "offset_ns": axis.offset(e.time_ns),
                "time_ns": e.time_ns,
                "attributes": attrs_json(&e.attributes),
            })
        })
        .collect();
    let links: Vec<Value> = s
        .links
        .iter()
        .map(|l| json!({"trace_id": l.trace_id.to_string(), "span_id": l.span_id.to_string()}))
        .collect();
    json!({
        "name": s.name,
        "trace_id": s.trace_id.to_string(),
        "span_id": s.span_id.to_string(),
        "parent_id": s.parent_id.map(|p| p.to_string()),
        "kind": s.kind.name(),
        "service": service(s),
        "start_ns": s.start_ns,
        "end_ns": s.end_ns,
        "offset_ns": axis.offset(s.start_ns),
        "duration_ns": s.end_ns.saturating_sub(s.start_ns),
        "status": {
            "code": s.status.code.name(),
            "description": s.status.description,
        },
        "keys": keys(s),
        "attributes": attrs_json(&s.attributes),
        "events": events,
        "links": links,
        "delegated_invocation_id": delegated_id(s),
        "depth": depth,
        "withheld": withheld,
    })
}

/// Orders spans by start time, then span id. The one place that sorts spans, so the sort is
/// compiled once rather than once per calling closure.
fn in_start_order(spans: &mut [&SpanRecord]) {
    spans.sort_by_key(|s| (s.start_ns, s.span_id));
}

/// A span's parent in the run of `spans`: `None` for a root, and for a span whose parent the
/// run does not hold, or is the span itself (it is drawn as a root).
fn parent_in(spans: &[SpanRecord]) -> impl Fn(&SpanRecord) -> Option<SpanId> {
    let ids: HashSet<SpanId> = spans.iter().map(|s| s.span_id).collect();
    move |s| s.parent_id.filter(|p| ids.contains(p) && *p != s.span_id)
}

/// Each span's depth in its run's tree: how many ancestors the run holds above it ([`parent_in`];
/// a cycle ends the chain too). Each span is measured once, so a long chain costs no more than
/// a short one.
fn depths(spans: &[SpanRecord]) -> HashMap<SpanId, usize> {
    let parent_in = parent_in(spans);
    let parent: HashMap<SpanId, SpanId> = spans
        .iter()
        .filter_map(|s| Some((s.span_id, parent_in(s)?)))
        .collect();
    let mut known: HashMap<SpanId, usize> = HashMap::new();
    for s in spans {
        // Up from the span to a root, a span already measured, or back into the chain.
        let mut chain = vec![s.span_id];
        let mut on_chain = HashSet::from([s.span_id]);
        let mut next = loop {
            let last = chain[chain.len() - 1];
            if let Some(d) = known.get(&last) {
                chain.pop();
                break d + 1;
            }
            match parent.get(&last) {
                Some(p) if on_chain.insert(*p) => chain.push(*p),
                _ => break 0,
            }
        };
        for id in chain.into_iter().rev() {
            known.insert(id, next);
            next += 1;
        }
    }
    known
}

/// Which spans of `run` are marked withheld: none unless the run was withheld; then its root,
/// and every span the agent recorded (another resource than the conductor's).
fn withheld_marks(run: &RunView) -> impl Fn(&SpanRecord) -> bool + '_ {
    let withheld = run.withheld().is_some();
    let top = root(run);
    let own = top.and_then(service).unwrap_or(HARNESS_SERVICE);
    move |span| {
        withheld && (top.is_some_and(|r| r.span_id == span.span_id) || service(span) != Some(own))
    }
}

/// The waterfall being drawn: its columns, its time axis, and the runs drawn so far.
struct Draw<'a> {
    paint: Paint,
    axis: Axis,
    /// The timeline's width.
    bar: usize,
    seen: HashSet<&'a str>,
    /// The spans drawn so far, by address: a span is drawn once, however its run's ids loop.
    drawn: HashSet<*const SpanRecord>,
    out: String,
}

/// One run's span tree, as [`Draw::walk`] reads it.
struct Tree<'a> {
    /// Each span's children in start order, under its parent in the run (`None`: the roots).
    children: HashMap<Option<SpanId>, Vec<&'a SpanRecord>>,
    /// The run's delegated runs, by invocation id.
    runs: HashMap<&'a str, &'a RunView>,
    marked: Box<dyn Fn(&SpanRecord) -> bool + 'a>,
    /// The `delegate` span this run hangs from, when it is a delegated child.
    from: Option<SpanId>,
}

impl<'a> Draw<'a> {
    /// A line with the time columns left empty: `text` after the tree's `prefix`.
    fn line(&mut self, prefix: &str, text: &str) {
        let bar = self.bar;
        let _ = writeln!(self.out, "{:TIME_COLUMNS$}{:bar$}  {prefix}{text}", "", "");
    }

    /// The lines of `run`'s spans, their details and its child runs, each nested under the
    /// `delegate` span naming it; child runs no span names, and those that could not be read,
    /// come last. `prefix` continues the tree of the span (`from`) a child run hangs from; the
    /// view's own run (`depth` 0) has its roots at the left margin.
    fn run(&mut self, run: &'a RunView, prefix: &str, from: Option<SpanId>, depth: usize) {
        self.seen.insert(run.invocation_id());
        let parent_in = parent_in(&run.spans);
        let mut children: HashMap<Option<SpanId>, Vec<&SpanRecord>> = HashMap::new();
        for s in &run.spans {
            children.entry(parent_in(s)).or_default().push(s);
        }
        children.values_mut().for_each(|list| in_start_order(list));
        let tree = Tree {
            children,
            runs: run
                .children
                .iter()
                .map(|c| (c.invocation_id(), c))
                .collect(),
            marked: Box::new(withheld_marks(run)),
            from,
        };
        // The roots, then any span no root leads to (its ids loop): each drawn as a root.
        let mut roots = tree.children.get(&None).cloned().unwrap_or_default();
        let mut reached = HashSet::new();
        reach(&tree.children, roots.clone(), &mut reached);
        for span in &run.spans {
            if !reached.contains(&std::ptr::from_ref(span)) {
                roots.push(span);
                reach(&tree.children, vec![span], &mut reached);
            }
        }
        let main_trace = root(run).map(|r| r.trace_id);
        let named: HashSet<&str> = run.spans.iter().filter_map(delegated_id).collect();
        let unplaced: Vec<&RunView> = run
            .children
            .iter()
            .filter(|c| !named.contains(c.invocation_id()))
            .collect();
        let mut branches = branches(prefix, roots.len() + unplaced.len() + run.missing.len());
        let mut placed = HashSet::new();
        for (&span, (here, deeper)) in roots.iter().zip(&mut branches) {
            let (here, deeper) = if depth == 0 {
                Default::default()
            } else {
                (here, deeper)
            };
            self.walk(span, here, deeper.clone(), &tree, &mut placed, depth);
            if span.parent_id.is_some() || main_trace.is_some_and(|t| t != span.trace_id) {
                let mut note = format!("outside the run's tree: trace {}", span.trace_id);
                if let Some(p) = span.parent_id {
                    let _ = write!(note, ", parent {p}");
                }
                self.line(&format!("{deeper}   "), &self.paint.sgr(DIM, &note));
            }
        }
        for (child, (here, deeper)) in unplaced.into_iter().zip(&mut branches) {
            self.child_run(child, &here, &deeper, None, depth);
        }
        for ((id, why), (here, _)) in run.missing.iter().zip(branches) {
            self.line(
                &here,
                &self.paint.sgr(RED, &format!("↳ run {id} not shown: {why}")),
            );
        }
    }

    /// A span's line and the lines under it, then its children and the delegated run it names,
    /// depth first with a stack of its own: a chain of spans as long as a reply may carry
    /// nests no deeper on the thread's stack than one span.
    fn walk(
        &mut self,
        span: &'a SpanRecord,
        here: String,
        deeper: String,
        tree: &Tree<'a>,
        placed: &mut HashSet<&'a str>,
        depth: usize,
    ) {
        enum Next<'a> {
            Span(&'a SpanRecord, String, String),
            Run(&'a RunView, SpanId, String, String),
        }
        let mut next = vec![Next::Span(span, here, deeper)];
        while let Some(item) = next.pop() {
            let (span, here, deeper) = match item {
                Next::Span(span, here, deeper) => (span, here, deeper),
                Next::Run(child, from, here, deeper) => {
                    if placed.insert(child.invocation_id()) {
                        self.child_run(child, &here, &deeper, Some(from), depth);
                    }
                    continue;
                }
            };
            if !self.drawn.insert(std::ptr::from_ref(span)) {
                continue;
            }
            let withheld = (tree.marked)(span);
            let colour = if withheld {
                YELLOW
            } else if span.status.code == StatusCode::Error {
                RED
            } else {
                CYAN
            };
            let bar = self
                .paint
                .sgr(colour, &self.axis.bar(span.start_ns, span.end_ns, self.bar));
            let unit = self.axis.unit();
            let _ = writeln!(
                self.out,
                "{:>8}  {:>9}  {bar}  {here}{}",
                unit.format(self.axis.offset(span.start_ns)),
                unit.format(span.end_ns.saturating_sub(span.start_ns)),
                label(span, withheld, &self.paint),
            );
            let kids: Vec<&SpanRecord> = (tree.children.get(&Some(span.span_id)).into_iter())
                .flatten()
                .filter(|k| !self.drawn.contains(&std::ptr::from_ref(**k)))
                .copied()
                .collect();
            let child = delegated_id(span).and_then(|id| tree.runs.get(id).copied());
            let below = if kids.is_empty() && child.is_none() {
                "   "
            } else {
                "│  "
            };
            for text in details(span, tree.from) {
                self.line(&format!("{deeper}{below}"), &self.paint.sgr(DIM, &text));
            }
            // Pushed last to first, so that they are drawn first to last.
            let mut branches = branches(&deeper, kids.len() + usize::from(child.is_some()));
            let mut below: Vec<Next<'a>> = (kids.into_iter().zip(&mut branches))
                .map(|(kid, (here, deeper))| Next::Span(kid, here, deeper))
                .collect();
            if let Some(child) = child
                && let Some((here, deeper)) = branches.next()
            {
                below.push(Next::Run(child, span.span_id, here, deeper));
            }
            next.extend(below.into_iter().rev());
        }
    }

    /// A delegated run under the span (or run) it hangs from: a line naming it, then its spans.
    fn child_run(
        &mut self,
        child: &'a RunView,
        here: &str,
        deeper: &str,
        from: Option<SpanId>,
        depth: usize,
    ) {
        self.line(here, &run_line(child, &self.paint));
        if depth + 1 >= MAX_DEPTH || self.seen.contains(child.invocation_id()) {
            let why =
                format!("(not followed further: deeper than {MAX_DEPTH} runs, or already shown)");
            self.line(&format!("{deeper}   "), &self.paint.sgr(DIM, &why));
            return;
        }
        self.run(child, deeper, from, depth + 1);
    }
}

/// Adds to `reached` each span a walk down `children` from `from` reaches, by address.
fn reach<'a>(
    children: &HashMap<Option<SpanId>, Vec<&'a SpanRecord>>,
    mut from: Vec<&'a SpanRecord>,
    reached: &mut HashSet<*const SpanRecord>,
) {
    while let Some(span) = from.pop() {
        if reached.insert(std::ptr::from_ref(span)) {
            from.extend(children.get(&Some(span.span_id)).into_iter().flatten());
        }
    }
}

/// The prefixes of `n` siblings below `prefix`, and of what hangs below each, in a tree drawn
/// with box characters.
fn branches(prefix: &str, n: usize) -> impl Iterator<Item = (String, String)> + '_ {
    (1..=n).map(move |i| {
        let (here, below) = if i == n {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        (format!("{prefix}{here}"), format!("{prefix}{below}"))
    })
}

/// The lines under a span: its events (at their time after the span's start), its links
/// (`from` is the `delegate` span its run hangs from), and the description of an error status.
fn details(span: &SpanRecord, from: Option<SpanId>) -> Vec<String> {
    let events = span.events.iter().map(|e| {
        let since = e.time_ns.saturating_sub(span.start_ns);
        let mut line = format!("· {}  +{} ms", e.name, MILLIS.format(since));
        for (k, v) in e.attributes.iter() {
            let k = k.strip_prefix("dd.stage.").unwrap_or(k);
            let _ = write!(line, "  {k}={}", value(v));
        }
        line
    });
    let links = span.links.iter().map(|l| {
        if from == Some(l.span_id) {
            format!(
                "⇠ linked to the delegate span above ({} of trace {})",
                l.span_id, l.trace_id
            )
        } else {
            format!("⇠ linked to span {} of trace {}", l.span_id, l.trace_id)
        }
    });
    let error = (span.status.description.as_ref())
        .filter(|_| span.status.code == StatusCode::Error)
        .map(|d| format!("error: {d}"));
    events.chain(links).chain(error).collect()
}

/// What a span's line says between its name and its status: the agent (`→ agent` on a
/// `delegate` span), then the owned attributes a reader looks for.
fn keys(span: &SpanRecord) -> Vec<String> {
    let own = |k: &str| span.owned(k).map(value);
    let mut parts = Vec::new();
    if let Some(agent) = own(attr::AGENT_ID) {
        parts.push(match SpanName::parse(&span.name) {
            Some(SpanName::Delegate) => format!("→ {agent}"),
            _ => agent,
        });
    }
    match (own(attr::GROUNDING_MODE), own(attr::OUTCOME)) {
        (Some(mode), Some(outcome)) => parts.push(format!("{mode} → {outcome}")),
        (Some(mode), None) => parts.push(mode),
        (None, Some(outcome)) => parts.push(format!("→ {outcome}")),
        (None, None) => {}
    }
    parts.extend(own(attr::SOURCE_ID));
    if let Some(hash) = own(attr::CONTENT_HASH) {
        parts.push(format!("#{}", truncate(&hash, Keep::Chars(12), "…")));
    }
    if let Some(model) = own(attr::MODEL_ID) {
        parts.push(format!("model {model}"));
    }
    match (own(attr::INPUT_TOKENS), own(attr::OUTPUT_TOKENS)) {
        (Some(i), Some(o)) => parts.push(format!("tokens {i} in / {o} out")),
        (Some(i), None) => parts.push(format!("tokens {i} in")),
        (None, Some(o)) => parts.push(format!("tokens {o} out")),
        (None, None) => {}
    }
    if let Some(tool) = span.attributes.get_str(attr::TOOL_NAME) {
        parts.push(format!("tool {tool}"));
    }
    parts
}

/// A span's line: name, agent, the owned attributes a reader looks for, status and marks.
fn label(span: &SpanRecord, withheld: bool, paint: &Paint) -> String {
    let mut parts = vec![paint.sgr(BOLD, &span.name)];
    parts.extend(keys(span));
    let is_root = span.parent_id.is_none() && span.is(SpanName::InvokeAgent);
    match span.status.code {
        StatusCode::Error => parts.push(paint.sgr(RED, "ERROR")),
        StatusCode::Ok => parts.push(paint.sgr(GREEN, "OK")),
        StatusCode::Unset if is_root => parts.push(paint.sgr(DIM, "status unset")),
        StatusCode::Unset => {}
    }
    if withheld {
        parts.push(paint.sgr(
            YELLOW,
            if is_root {
                "⊘ WITHHELD"
            } else {
                "⊘ withheld"
            },
        ));
    }
    parts.join("  ")
}

/// The line naming a delegated run where it hangs.
fn run_line(child: &RunView, paint: &Paint) -> String {
    let env = &child.envelope;
    let status = text(env, &["outcome", "status"]).unwrap_or("?");
    let mut line = format!(
        "↳ run {}  {} → {}",
        child.invocation_id(),
        text(env, &["agent_id"]).unwrap_or("?"),
        status_paint(status, paint)
    );
    if child.withheld().is_some() {
        line.push_str(&format!("  {}", paint.sgr(YELLOW, "⊘ WITHHELD")));
    }
    if let Some(verdict) = child.grounding.as_deref().and_then(verdict) {
        // `passed [mode] (counts)`: the verdict and mode are what matter here.
        let verdict = verdict.split(" (").next().unwrap_or(verdict);
        line.push_str(&format!(
            "  {}",
            paint.sgr(DIM, &format!("grounding {verdict}"))
        ));
    }
    if let Some(trace) = text(env, &["telemetry", "trace_id"]) {
        line.push_str(&paint.sgr(DIM, &format!("  own trace {trace}")));
    }
    line
}

/// Makes every string of `run` show control characters as escapes (see `crate::text`), so an
/// agent's statement or span name cannot drive the terminal; the waterfall's own colours are
/// added afterwards.
fn terminal_safe(run: &mut RunView) {
    fn s(text: &mut String, lines: bool) {
        if let std::borrow::Cow::Owned(safe) = crate::text::escape_str(text, lines) {
            *text = safe;
        }
    }
    fn json(v: &mut Value) {
        match v {
            Value::String(text) => s(text, false),
            Value::Array(items) => items.iter_mut().for_each(json),
            Value::Object(map) => map.values_mut().for_each(json),
            _ => {}
        }
    }
    fn attributes(a: &mut Attributes) {
        for (k, v) in &mut a.0 {
            s(k, false);
            match v {
                AttrValue::String(text) => s(text, false),
                AttrValue::StringArray(items) => items.iter_mut().for_each(|t| s(t, false)),
                _ => {}
            }
        }
    }
    json(&mut run.envelope);
    if let Some(d) = &mut run.decision {
        json(d);
    }
    if let Some(g) = &mut run.grounding {
        s(g, true);
    }
    for span in &mut run.spans {
        s(&mut span.name, false);
        attributes(&mut span.attributes);
        attributes(&mut Arc::make_mut(&mut span.resource).attributes);
        if let Some(d) = &mut span.status.description {
            s(d, false);
        }
        for event in &mut span.events {
            s(&mut event.name, false);
            attributes(&mut event.attributes);
        }
    }
    for (id, why) in &mut run.missing {
        s(id, false);
        s(why, false);
    }
    run.children.iter_mut().for_each(terminal_safe);
}

/// Whether the run ended with the agent giving no result (it raised, could not be reached,
/// or refused the call): not succeeded, with an `agent-error` problem. Its grounding verdict
/// checked nothing.
pub(crate) fn no_output(envelope: &Value) -> bool {
    text(envelope, &["outcome", "status"]) != Some("succeeded")
        && problem_kind(envelope) == Some("agent-error")
}

/// The last segment of the envelope's problem type (`agent-error`, `grounding-violation`...).
fn problem_kind(envelope: &Value) -> Option<&str> {
    text(envelope, &["problem", "type"]).and_then(|t| t.rsplit('/').next())
}

/// A steward's decision as `show` states it, from the side of the run `id`.
fn decision_line(d: &Value, id: &str) -> String {
    let s = |k: &[&str]| text(d, k).unwrap_or("?");
    let by = format!(
        "{} by {} at {}",
        s(&["decision"]),
        s(&["decided_by", "principal_id"]),
        s(&["decided_at"])
    );
    let mut line = match text(d, &["invocation_id"]) {
        Some(run) if run == id => {
            format!("carries out run {}, {by}", s(&["referred_invocation_id"]))
        }
        Some(run) => format!("{by}: run {run} carried it out"),
        None => format!("{by}: the agent was not run"),
    };
    if let Some(reason) = text(d, &["reason"]) {
        line.push_str(&format!(" (reason: {reason})"));
    }
    line
}

/// The envelope, summarised.
fn summary(run: &RunView, paint: &Paint, out: &mut String) {
    let env = &run.envelope;
    let field = |name: &str, value: &str, out: &mut String| write_field(paint, name, value, out);
    let status = text(env, &["outcome", "status"]).unwrap_or("?");
    field("run", run.invocation_id(), out);
    let mut agent = text(env, &["agent_id"]).unwrap_or("?").to_string();
    if let Some(v) = text(env, &["agent_version"]) {
        agent.push_str(&format!(" {v}"));
    }
    if let Some(mode) = text(env, &["grounding_mode"]) {
        agent.push_str(&format!(", {mode}"));
    }
    field("agent", &agent, out);
    let statement = text(env, &["outcome", "statement"]).unwrap_or("");
    field(
        "outcome",
        &format!(
            "{}: {statement}",
            paint.sgr(BOLD, &status_paint(status, paint))
        ),
        out,
    );
    if env.get("problem").is_some_and(Value::is_object) {
        let title = text(env, &["problem", "title"]).unwrap_or("?");
        let kind = problem_kind(env).unwrap_or("?");
        field("problem", &format!("{title} ({kind})"), out);
    }
    if let Some(reason) = run.withheld() {
        field(
            "withheld",
            &paint.sgr(YELLOW, &format!(
                "⊘ {reason}: the result did not leave the harness; the spans behind it are marked below"
            )),
            out,
        );
    }
    grounding_fields(run, paint, out);
    if let Some(delegations) = env.get("delegations").and_then(Value::as_array)
        && !delegations.is_empty()
    {
        let list: Vec<String> = delegations
            .iter()
            .map(|d| {
                format!(
                    "{} ({} → {})",
                    text(d, &["delegated_invocation_id"]).unwrap_or("?"),
                    text(d, &["delegated_agent_id"]).unwrap_or("?"),
                    text(d, &["delegated_status"]).unwrap_or("?"),
                )
            })
            .collect();
        field("delegated", &list.join(", "), out);
    }
    if let Some(parent) = text(env, &["parent_invocation_id"]) {
        field("parent", &format!("run {parent} delegated this run"), out);
    }
    if let Some(d) = &run.decision {
        field("steward", &decision_line(d, run.invocation_id()), out);
    }
    field("trace", &trace_line(run, paint), out);
    let mut who = text(env, &["acting_for", "principal_id"])
        .unwrap_or("?")
        .to_string();
    if let Some(at) = text(env, &["completed_at"]) {
        who.push_str(&format!("; completed {at}"));
    }
    field("acting for", &who, out);
}

/// One line of the summary: `name`, dimmed and padded to a column, then `value`.
fn write_field(paint: &Paint, name: &str, value: &str, out: &mut String) {
    // Padded before it is painted: escape codes take no columns.
    let _ = writeln!(out, "{}{value}", paint.sgr(DIM, &format!("{name:<11}")));
}

/// The summary's grounding verdict, as the stored report gives it, with the report's further
/// lines under it.
fn grounding_fields(run: &RunView, paint: &Paint, out: &mut String) {
    let Some(g) = &run.grounding else {
        return write_field(paint, "grounding", "(no report stored)", out);
    };
    let first = verdict(g).unwrap_or("");
    if no_output(&run.envelope) {
        // The linter ran over the spans (grounding.txt says so, as the reference writes it),
        // but the agent gave no result to check: a reader is told that, not "passed".
        let why = format!("no output to check: the agent gave no result (grounding.txt: {first})");
        return write_field(paint, "grounding", &paint.sgr(DIM, &why), out);
    }
    let first = match grounding_passed(g) {
        Some(true) => paint.sgr(GREEN, first),
        Some(false) => paint.sgr(RED, first),
        None => first.to_string(),
    };
    write_field(paint, "grounding", &first, out);
    for line in g.lines().skip(1) {
        let _ = writeln!(out, "{:<11}{line}", "");
    }
}

/// The summary's trace line: the trace id, how many spans in how many runs, the time they
/// took, and any lines of spans that could not be drawn.
fn trace_line(run: &RunView, paint: &Paint) -> String {
    let (spans, runs) = count(run);
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let axis = Axis::of(run);
    let mut trace = format!(
        "{}  {spans} span{} in {runs} run{}, {}",
        text(&run.envelope, &["telemetry", "trace_id"]).unwrap_or("?"),
        plural(spans),
        plural(runs),
        axis.unit().format_total(axis.total())
    );
    if run.unreadable_spans > 0 {
        trace.push_str(&paint.sgr(
            RED,
            &format!(
                "; {} line(s) of spans.jsonl are not span JSON and are not drawn",
                run.unreadable_spans
            ),
        ));
    }
    trace
}

/// (spans, runs) in the view.
fn count(run: &RunView) -> (usize, usize) {
    run.children.iter().fold((run.spans.len(), 1), |(s, r), c| {
        let (cs, cr) = count(c);
        (s + cs, r + cr)
    })
}

fn service(span: &SpanRecord) -> Option<&str> {
    span.resource.attributes.get_str("service.name")
}

/// The run's root: its `invoke_agent` span without a parent (else the earliest span without).
fn root(run: &RunView) -> Option<&SpanRecord> {
    run.spans
        .iter()
        .filter(|s| s.parent_id.is_none())
        .min_by_key(|s| (!s.is(SpanName::InvokeAgent), s.start_ns))
}

/// The child run a `delegate` span names (`dd.source_id = invocation:<id>`).
fn delegated_id(span: &SpanRecord) -> Option<&str> {
    if !span.is(SpanName::Delegate) {
        return None;
    }
    span.owned_str(attr::SOURCE_ID)?
        .strip_prefix("invocation:")
        .filter(|id| !id.is_empty())
}

/// A grounding summary's verdict: its first line, without `grounding: `.
fn verdict(summary: &str) -> Option<&str> {
    let first = summary.lines().next()?;
    Some(first.strip_prefix("grounding: ").unwrap_or(first))
}

/// `Some(true)` for a summary that passed, `Some(false)` for one that failed.
fn grounding_passed(summary: &str) -> Option<bool> {
    let verdict = verdict(summary)?;
    if verdict.starts_with("passed") {
        Some(true)
    } else if verdict.starts_with("FAILED") || verdict.starts_with("failed") {
        Some(false)
    } else {
        None
    }
}

fn text<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_str)
}

fn value(v: &AttrValue) -> String {
    match v {
        AttrValue::String(s) | AttrValue::Json(s) => s.clone(),
        AttrValue::Double(d) => d.to_string(),
        other => attr_json(other).to_string(),
    }
}

fn attr_json(v: &AttrValue) -> Value {
    match v {
        AttrValue::String(s) => json!(s),
        AttrValue::Bool(b) => json!(b),
        AttrValue::Int(i) => json!(i),
        AttrValue::Double(d) => json!(d),
        AttrValue::StringArray(a) => json!(a),
        AttrValue::BoolArray(a) => json!(a),
        AttrValue::IntArray(a) => json!(a),
        AttrValue::DoubleArray(a) => json!(a),
        AttrValue::Json(j) => serde_json::from_str(j).unwrap_or_else(|_| json!(j)),
    }
}

fn attrs_json(attrs: &Attributes) -> Value {
    Value::Object(
        attrs
            .iter()
            .map(|(k, v)| (k.to_string(), attr_json(v)))
            .collect(),
    )
}

fn status_paint(status: &str, paint: &Paint) -> String {
    match status {
        "succeeded" => paint.sgr(GREEN, status),
        "failed" => paint.sgr(RED, status),
        _ => paint.sgr(YELLOW, status),
    }
}

/// How wide the timeline is for a terminal `width` columns wide.
fn bar_width(width: usize) -> usize {
    width
        .saturating_sub(TIME_COLUMNS + SPAN_COLUMN)
        .clamp(MIN_BAR, MAX_BAR)
}

/// The view's time axis: from the first span's start to the last one's end, over every run.
struct Axis {
    start: u64,
    end: u64,
}

impl Axis {
    fn of(run: &RunView) -> Axis {
        let mut axis = Axis {
            start: u64::MAX,
            end: 0,
        };
        axis.extend(run, 0);
        axis.start = axis.start.min(axis.end);
        axis
    }

    fn extend(&mut self, run: &RunView, depth: usize) {
        // 0 means unknown: it would stretch the axis back to 1970.
        for s in run.spans.iter().filter(|s| s.start_ns > 0) {
            self.start = self.start.min(s.start_ns);
            self.end = self.end.max(s.end_ns.max(s.start_ns));
        }
        for c in run.children.iter().filter(|_| depth < MAX_DEPTH) {
            self.extend(c, depth + 1);
        }
    }

    fn total(&self) -> u64 {
        self.end - self.start
    }

    fn offset(&self, ns: u64) -> u64 {
        ns.saturating_sub(self.start)
    }

    /// Milliseconds for a view under 10 s, seconds beyond.
    fn unit(&self) -> Unit {
        if self.total() < 10_000_000_000 {
            MILLIS
        } else {
            SECONDS
        }
    }

    /// `width` cells, filled where the span ran; at least one cell, so a span too short to see
    /// still shows where it starts.
    fn bar(&self, start: u64, end: u64, width: usize) -> String {
        let total = self.total().max(1) as f64;
        let cell = |ns: u64| self.offset(ns) as f64 / total * width as f64;
        let from = (cell(start) as usize).min(width.saturating_sub(1));
        let to = (cell(end.max(start)).ceil() as usize).clamp(from + 1, width);
        let thin = to - from == 1 && end.saturating_sub(start) * (width as u64) < self.total();
        (0..width)
            .map(|i| match i {
                _ if i < from || i >= to => ' ',
                _ if thin => '▏',
                _ => '█',
            })
            .collect()
    }
}

/// A unit of the time columns: nanoseconds in one, and its symbol.
#[derive(Clone, Copy)]
struct Unit(f64, &'static str);

const MILLIS: Unit = Unit(1e6, "ms");
const SECONDS: Unit = Unit(1e9, "s");

impl Unit {
    fn format(self, ns: u64) -> String {
        format!("{:.3}", ns as f64 / self.0)
    }

    fn format_total(self, ns: u64) -> String {
        format!("{} {}", self.format(ns), self.1)
    }
}

/// ANSI SGR colours, or none.
struct Paint(bool);

/// The SGR codes the waterfall paints with.
const BOLD: &str = "1";
const DIM: &str = "2";
const RED: &str = "31";
const GREEN: &str = "32";
const YELLOW: &str = "33";
const CYAN: &str = "36";

impl Paint {
    fn sgr(&self, code: &str, s: &str) -> String {
        if self.0 && !s.is_empty() {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Attributes, Event, Link, Resource, SpanKind, Status, TraceId, TraceState};

    #[test]
    fn a_stewards_decision_is_stated_from_the_side_of_each_run_it_links() {
        let approved = json!({
            "decision": "approved", "referred_invocation_id": "r1", "invocation_id": "n1",
            "decided_by": {"principal_id": "urn:x:steward"}, "decided_at": "2026-12-01T00:00:00Z",
        });
        assert_eq!(
            decision_line(&approved, "r1"),
            "approved by urn:x:steward at 2026-12-01T00:00:00Z: run n1 carried it out"
        );
        assert_eq!(
            decision_line(&approved, "n1"),
            "carries out run r1, approved by urn:x:steward at 2026-12-01T00:00:00Z"
        );
        let declined = json!({
            "decision": "declined", "referred_invocation_id": "r1", "reason": "no",
            "decided_by": {"principal_id": "urn:x:steward"}, "decided_at": "2026-12-01T00:00:00Z",
        });
        assert_eq!(
            decision_line(&declined, "r1"),
            "declined by urn:x:steward at 2026-12-01T00:00:00Z: the agent was not run (reason: no)"
        );
    }

    const MS: u64 = 1_000_000;
    /// An arbitrary epoch for the fixed spans: 2026-01-01T00:00:00Z.
    const T0: u64 = 1_767_225_600_000_000_000;

    fn span(name: &str, id: u64, parent: Option<u64>, from_ms: u64, to_ms: u64) -> SpanRecord {
        let mut attributes = Attributes::default();
        attributes.set(attr::OPERATION, name);
        SpanRecord {
            name: name.into(),
            trace_id: TraceId(0xaa),
            span_id: SpanId(id),
            parent_id: parent.map(SpanId),
            trace_state: TraceState::default(),
            kind: SpanKind::Internal,
            start_ns: T0 + from_ms * MS,
            end_ns: T0 + to_ms * MS,
            status: Status::default(),
            attributes,
            events: Vec::new(),
            links: Vec::new(),
            resource: Arc::new(Resource::for_service(HARNESS_SERVICE)),
        }
    }

    fn with(mut s: SpanRecord, key: &str, value: impl Into<AttrValue>) -> SpanRecord {
        s.attributes.set(key, value);
        s
    }

    fn by_agent(mut s: SpanRecord, agent: &str) -> SpanRecord {
        s.resource = Arc::new(Resource::for_service(agent));
        s
    }

    fn envelope(id: &str, agent: &str, status: &str) -> Value {
        json!({
            "invocation_id": id, "agent_id": agent, "agent_version": "0.1.0",
            "grounding_mode": "input_only",
            "outcome": {"status": status, "statement": format!("{agent} {status}.")},
            "telemetry": {"trace_id": "000000000000000000000000000000aa"},
            "acting_for": {"principal_id": "urn:test:p"},
            "completed_at": "2026-01-01T00:00:00.010Z",
        })
    }

    /// A run of `hello.world`: root 0–10 ms, its gate 1–2 ms, its chat 5–9 ms.
    fn hello() -> RunView {
        let root = with(
            with(
                with(
                    span("invoke_agent", 1, None, 0, 10),
                    attr::AGENT_ID,
                    "hello.world",
                ),
                attr::GROUNDING_MODE,
                "input_only",
            ),
            attr::OUTCOME,
            "succeeded",
        );
        let gate = with(
            span("policy_gate", 2, Some(1), 1, 2),
            attr::AGENT_ID,
            "hello.world",
        );
        let chat = by_agent(
            with(
                with(
                    with(span("chat", 3, Some(1), 5, 9), attr::MODEL_ID, "m1"),
                    attr::INPUT_TOKENS,
                    4i64,
                ),
                attr::OUTPUT_TOKENS,
                7i64,
            ),
            "hello.world",
        );
        RunView {
            envelope: envelope(
                "01000000-0000-7000-8000-000000000001",
                "hello.world",
                "succeeded",
            ),
            // Stored out of order: the view orders by start.
            spans: vec![chat, gate, root],
            grounding: Some("grounding: passed [input_only] (0 retrieval, 1 chat spans)".into()),
            ..RunView::default()
        }
    }

    fn plain(width: usize) -> Options {
        Options {
            width,
            color: false,
            summary: false,
        }
    }

    #[test]
    fn a_waterfall_draws_each_span_at_its_offset_with_a_bar_on_one_time_axis() {
        // 85 columns leave a 20-cell timeline: one cell per half millisecond.
        let text = render(&hello(), &plain(85));
        let expected = "   \
start   duration  timeline, 0 to 10.000 ms  span
   0.000     10.000  ████████████████████  invoke_agent  hello.world  input_only → succeeded  status unset
   1.000      1.000    ██                  ├─ policy_gate  hello.world
   5.000      4.000            ████████    └─ chat  model m1  tokens 4 in / 7 out
";
        assert_eq!(text, expected);
    }

    #[test]
    fn the_timeline_takes_what_the_terminal_width_leaves_within_bounds() {
        let bar_of = |width: usize| {
            let text = render(&hello(), &plain(width));
            let root = text.lines().nth(1).unwrap().to_string();
            root.chars().filter(|c| *c == '█').count()
        };
        assert_eq!(bar_of(85), 20);
        assert_eq!(bar_of(105), 40);
        assert_eq!(
            bar_of(40),
            MIN_BAR,
            "a narrow terminal still gets a timeline"
        );
        assert_eq!(
            bar_of(500),
            MAX_BAR,
            "a wide one does not get an endless one"
        );
    }

    #[test]
    fn events_links_and_error_descriptions_follow_their_span() {
        let mut run = hello();
        let root = run
            .spans
            .iter_mut()
            .find(|s| s.span_id == SpanId(1))
            .unwrap();
        let mut decision = Attributes::default();
        decision.set("dd.stage.decision", "permitted");
        root.events.push(Event {
            name: "policy_gate".into(),
            time_ns: T0 + 2 * MS,
            attributes: decision,
        });
        root.links.push(Link {
            trace_id: TraceId(0xbb),
            span_id: SpanId(0xcc),
            trace_state: TraceState::default(),
            attributes: Attributes::default(),
        });
        let chat = run
            .spans
            .iter_mut()
            .find(|s| s.span_id == SpanId(3))
            .unwrap();
        chat.status = Status::new(StatusCode::Error, Some("the model timed out"));
        let text = render(&run, &plain(85));
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[2].ends_with("│  · policy_gate  +2.000 ms  decision=permitted"),
            "{text}"
        );
        assert!(
            lines[3].ends_with(
                "│  ⇠ linked to span 00000000000000cc of trace 000000000000000000000000000000bb"
            ),
            "{text}"
        );
        assert!(
            lines[5].ends_with("└─ chat  model m1  tokens 4 in / 7 out  ERROR"),
            "{text}"
        );
        assert!(
            lines[6].ends_with("   error: the model timed out"),
            "{text}"
        );
    }

    #[test]
    fn a_withheld_run_is_marked_on_its_root_and_on_the_spans_the_agent_recorded() {
        let mut run = hello();
        run.envelope["outcome"] = json!({"status": "failed", "statement": "Output withheld: it failed the grounding linter. R2: …"});
        run.envelope["problem"] = json!({
            "type": "https://w3id.org/data-director/problems/grounding-violation",
            "title": "Output failed the grounding linter",
        });
        run.grounding =
            Some("grounding: FAILED [input_only]\n  - R2: payload cites 'src:x'".into());
        assert_eq!(
            run.withheld().as_deref(),
            Some("Output failed the grounding linter")
        );
        let text = render(&run, &plain(85));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].ends_with("status unset  ⊘ WITHHELD"), "{text}");
        assert!(
            lines[2].ends_with("├─ policy_gate  hello.world"),
            "the conductor's own gate is not the agent's: {text}"
        );
        assert!(
            lines[3].ends_with("tokens 4 in / 7 out  ⊘ withheld"),
            "{text}"
        );
        let json = to_json(&run);
        assert_eq!(json["withheld"], true);
        let marked: Vec<&str> = json["spans"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["withheld"] == true)
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(marked, ["invoke_agent", "chat"]);
    }

    #[test]
    fn a_failed_envelope_under_a_root_that_recorded_success_reads_as_withheld() {
        // The contract's other withholding (an agent result that breaks the contract) carries
        // agent-error; the root still says what the agent claimed.
        let mut run = hello();
        run.envelope["outcome"]["status"] = json!("failed");
        run.envelope["problem"] = json!({"type": "https://w3id.org/data-director/problems/agent-error", "title": "Agent raised an exception"});
        assert_eq!(run.withheld().as_deref(), Some("Agent raised an exception"));
        // A run that failed before the agent answered is not withheld.
        let root = run
            .spans
            .iter_mut()
            .find(|s| s.span_id == SpanId(1))
            .unwrap();
        root.attributes.set(attr::OUTCOME, "failed");
        assert_eq!(run.withheld(), None);
    }

    fn director_with_child() -> RunView {
        let child_id = "01000000-0000-7000-8000-000000000002";
        let mut child = hello();
        child.envelope = envelope(child_id, "hello.world", "succeeded");
        for s in &mut child.spans {
            s.trace_id = TraceId(0xdd);
            // The child ran from 20 ms to 30 ms of the parent's 0–40 ms.
            s.start_ns += 20 * MS;
            s.end_ns += 20 * MS;
        }
        let root = child
            .spans
            .iter_mut()
            .find(|s| s.span_id == SpanId(1))
            .unwrap();
        root.links.push(Link {
            trace_id: TraceId(0xaa),
            span_id: SpanId(12),
            trace_state: TraceState::default(),
            attributes: Attributes::default(),
        });
        let root = with(
            with(
                span("invoke_agent", 10, None, 0, 40),
                attr::AGENT_ID,
                "director.route",
            ),
            attr::GROUNDING_MODE,
            "delegation",
        );
        let gate = with(
            span("policy_gate", 11, Some(10), 1, 2),
            attr::AGENT_ID,
            "director.route",
        );
        let delegate = by_agent(
            with(
                with(
                    span("delegate", 12, Some(10), 18, 32),
                    attr::AGENT_ID,
                    "hello.world",
                ),
                attr::SOURCE_ID,
                format!("invocation:{child_id}"),
            ),
            "director.route",
        );
        let mut envelope = envelope(
            "01000000-0000-7000-8000-000000000001",
            "director.route",
            "succeeded",
        );
        envelope["delegations"] = json!([{"delegated_invocation_id": child_id, "delegated_agent_id": "hello.world", "delegated_status": "succeeded"}]);
        RunView {
            envelope,
            spans: vec![root, gate, delegate],
            grounding: Some("grounding: passed [delegation] (0 retrieval, 0 chat spans)".into()),
            children: vec![child],
            ..RunView::default()
        }
    }

    #[test]
    fn a_delegated_run_is_nested_under_the_delegate_span_that_names_it_on_the_same_axis() {
        let run = director_with_child();
        assert_eq!(run.child_ids(), ["01000000-0000-7000-8000-000000000002"]);
        let text = render(&run, &plain(85));
        let expected = "   \
start   duration  timeline, 0 to 40.000 ms  span
   0.000     40.000  ████████████████████  invoke_agent  director.route  delegation  status unset
   1.000      1.000  ▏                     ├─ policy_gate  director.route
  18.000     14.000           ███████      └─ delegate  → hello.world  invocation:01000000-0000-7000-8000-000000000002
                                              └─ ↳ run 01000000-0000-7000-8000-000000000002  hello.world → succeeded  grounding passed [input_only]  own trace 000000000000000000000000000000aa
  20.000     10.000            █████             └─ invoke_agent  hello.world  input_only → succeeded  status unset
                                                    │  ⇠ linked to the delegate span above (000000000000000c of trace 000000000000000000000000000000aa)
  21.000      1.000            ▏                    ├─ policy_gate  hello.world
  25.000      4.000              ███                └─ chat  model m1  tokens 4 in / 7 out
";
        assert_eq!(text, expected);
    }

    #[test]
    fn spans_whose_ids_loop_are_each_drawn_once_and_the_drawing_ends() {
        // An agent's spans are untrusted: two spans may share an id, and parents may loop.
        let mut run = hello();
        let kept = run.spans.len();
        run.spans.push(span("retrieval", 40, None, 2, 3));
        run.spans.push(span("retrieval", 41, Some(40), 2, 3));
        // A second span 40, under 41: walking down from the first 40 would come back to 41.
        run.spans.push(span("tool", 40, Some(41), 2, 3));
        // A loop no root leads to.
        run.spans.push(span("retrieval", 50, Some(51), 3, 4));
        run.spans.push(span("retrieval", 51, Some(50), 3, 4));
        // A chain as long as a reply may carry (harness::remote::MAX_SPANS is 10,000).
        run.spans.extend(
            (60..2_060u64).map(|i| span("retrieval", i, Some(i - 1).filter(|p| *p >= 60), 4, 5)),
        );
        let text = render(&run, &plain(85));
        let span_lines = text
            .lines()
            .filter(|l| l.contains("retrieval") || l.contains("tool"))
            .count();
        assert_eq!(span_lines, 2_000 + 5, "{text:.3000}");
        assert_eq!(
            text.lines()
                .filter(|l| l.contains("outside the run's tree"))
                .count(),
            1
        );
        assert!(run.spans.len() == kept + 2_005);
    }

    #[test]
    fn a_child_no_span_names_is_drawn_last_and_one_that_cannot_be_read_is_named() {
        let mut run = director_with_child();
        // The delegate span lost its source id (the child failed before answering).
        let delegate = run
            .spans
            .iter_mut()
            .find(|s| s.span_id == SpanId(12))
            .unwrap();
        delegate.attributes.0.retain(|(k, _)| k != attr::SOURCE_ID);
        run.missing.push((
            "01000000-0000-7000-8000-000000000009".into(),
            "the run store holds no such run".into(),
        ));
        let text = render(&run, &plain(85));
        let lines: Vec<&str> = text.lines().collect();
        let child = lines
            .iter()
            .position(|l| l.contains("↳ run 01000000-0000-7000-8000-000000000002"))
            .expect(&text);
        assert!(lines[child].contains("├─ ↳ run"), "{text}");
        assert!(
            lines[child + 1].contains("│  └─ invoke_agent  hello.world"),
            "{text}"
        );
        assert!(
            lines.last().unwrap().ends_with("└─ ↳ run 01000000-0000-7000-8000-000000000009 not shown: the run store holds no such run"),
            "{text}"
        );
    }

    #[test]
    fn a_span_outside_the_runs_tree_is_drawn_as_a_root_and_says_so() {
        let mut run = hello();
        let mut stray = span("retrieval", 9, Some(0x77), 3, 4);
        stray.trace_id = TraceId(0xee);
        run.spans.push(stray);
        let text = render(&run, &plain(85));
        assert!(
            text.contains("\n   3.000      1.000        ██              retrieval\n"),
            "{text}"
        );
        assert!(
            text.contains("outside the run's tree: trace 000000000000000000000000000000ee, parent 0000000000000077"),
            "{text}"
        );
    }

    #[test]
    fn the_summary_gives_outcome_problem_grounding_verdict_and_delegations() {
        let mut run = director_with_child();
        run.envelope["problem"] = json!({"type": "https://w3id.org/data-director/problems/agent-error", "title": "Agent raised an exception"});
        let text = render(
            &run,
            &Options {
                summary: true,
                ..plain(85)
            },
        );
        let head: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
        assert_eq!(head[0], "run        01000000-0000-7000-8000-000000000001");
        assert_eq!(head[1], "agent      director.route 0.1.0, input_only");
        assert_eq!(head[2], "outcome    succeeded: director.route succeeded.");
        assert_eq!(
            head[3],
            "problem    Agent raised an exception (agent-error)"
        );
        assert_eq!(
            head[4],
            "grounding  passed [delegation] (0 retrieval, 0 chat spans)"
        );
        assert_eq!(
            head[5],
            "delegated  01000000-0000-7000-8000-000000000002 (hello.world → succeeded)"
        );
        assert_eq!(
            head[6],
            "trace      000000000000000000000000000000aa  6 spans in 2 runs, 40.000 ms"
        );
        assert!(
            head[7].starts_with("acting for urn:test:p; completed 2026-01-01"),
            "{text}"
        );
    }

    #[test]
    fn colour_is_added_only_when_asked_for() {
        let run = hello();
        assert!(!render(&run, &plain(85)).contains('\x1b'));
        let coloured = render(
            &run,
            &Options {
                color: true,
                summary: true,
                width: 85,
            },
        );
        assert!(coloured.contains("\x1b[36m█"), "bars are coloured");
        assert!(
            coloured.contains("\x1b[1minvoke_agent\x1b[0m"),
            "names are bold"
        );
        assert!(coloured.contains("\x1b[32msucceeded\x1b[0m"), "{coloured}");
    }

    #[test]
    fn the_json_view_gives_offsets_from_the_first_span_and_nests_children() {
        let json = to_json(&director_with_child());
        assert_eq!(
            json["invocation_id"],
            "01000000-0000-7000-8000-000000000001"
        );
        assert_eq!(json["duration_ns"], 40 * MS);
        assert_eq!(json["grounding_passed"], true);
        let spans = json["spans"].as_array().unwrap();
        let names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["invoke_agent", "policy_gate", "delegate"],
            "in start order"
        );
        assert_eq!(spans[2]["offset_ns"], 18 * MS);
        assert_eq!(
            spans[2]["delegated_invocation_id"],
            "01000000-0000-7000-8000-000000000002"
        );
        let child = &json["children"][0];
        assert_eq!(
            child["spans"][0]["offset_ns"],
            20 * MS,
            "one axis for the whole view"
        );
        assert_eq!(child["spans"][0]["links"][0]["span_id"], "000000000000000c");
    }

    #[test]
    fn the_json_view_gives_each_span_its_depth_its_keys_and_every_attribute() {
        let mut run = hello();
        // A span whose parent the run does not hold is a root; so is a span in a cycle's
        // first place, and a chain as long as the run is measured in one pass.
        run.spans.push(span("retrieval", 20, Some(0x77), 3, 4));
        run.spans.push(span("retrieval", 21, Some(22), 3, 4));
        run.spans.push(span("retrieval", 22, Some(21), 3, 4));
        let chat = run
            .spans
            .iter_mut()
            .find(|s| s.span_id == SpanId(3))
            .unwrap();
        chat.attributes.set("gen_ai.system", "none");
        let json = to_json(&run);
        let by_id = |id: &str| {
            json["spans"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["span_id"] == id)
                .unwrap()
                .clone()
        };
        assert_eq!(by_id("0000000000000001")["depth"], 0);
        assert_eq!(by_id("0000000000000003")["depth"], 1);
        assert_eq!(by_id("0000000000000014")["depth"], 0);
        let cycle = [by_id("0000000000000015"), by_id("0000000000000016")];
        let mut in_cycle: Vec<u64> = cycle.iter().map(|s| s["depth"].as_u64().unwrap()).collect();
        in_cycle.sort();
        assert_eq!(in_cycle, [0, 1]);
        let chat = by_id("0000000000000003");
        assert_eq!(chat["keys"], json!(["model m1", "tokens 4 in / 7 out"]));
        assert_eq!(chat["attributes"]["gen_ai.system"], "none", "{chat}");
        assert_eq!(chat["service"], "hello.world");
        assert_eq!(
            by_id("0000000000000001")["keys"],
            json!(["hello.world", "input_only → succeeded"])
        );
        let long: Vec<SpanRecord> = (1..=5000u64)
            .map(|i| span("chat", i, (i > 1).then(|| i - 1), 1, 2))
            .collect();
        let measured = depths(&long);
        assert_eq!(measured[&SpanId(5000)], 4999);
        assert_eq!(measured.len(), 5000);
    }

    #[test]
    fn a_run_without_spans_says_so() {
        let run = RunView {
            envelope: envelope("01000000-0000-7000-8000-000000000003", "x", "failed"),
            ..RunView::default()
        };
        let text = render(&run, &plain(85));
        assert!(text.contains("(no spans stored)"), "{text}");
    }
}
