//! The grounding linter: bespoke rules over the generic trace (the reference's
//! `workbench/grounding.py`, ADR-0008).
//!
//! [`lint`] reads the span tree of one `invoke_agent` and the envelope document it produced,
//! and applies the rule set of the grounding mode the envelope declares. It never needs the
//! payload class: it walks the payload for `grounded_on` lists, and a payload that has none is
//! a violation. Nothing passes because the linter did not recognise it.
//!
//! It reads only owned attributes ([`SpanRecord::owned`]), from plain records (spec
//! invariant 10), and does no I/O, so the conductor runs it at invocation time and the CLI
//! runs it offline over `spans.jsonl` + `envelope.json`.
//!
//! # Rules
//!
//! Every mode:
//! - **G0**, structure: exactly one `invoke_agent` root; every other span is in the root's
//!   trace and descends from the root (invariant 6); only the root carries the
//!   [`CONDUCTOR_ATTRIBUTES`] (invariant 7); the envelope's `grounding_mode` is valid and
//!   equals the root's `dd.grounding_mode`; a payload has `schema_class` and `grounded_on`;
//!   every grounding reference is well formed.
//! - **E1**, evidence content (ADR-0015): every evidence item that carries `content` hashes to
//!   its `content_hash` under its `canonicalisation`.
//!
//! Per mode (see [`rules_for`]):
//! - `retrieval`: **G1** chat only after a retrieval ended; **G2** everything cited was
//!   retrieved; **G3** every evidence hash is on a retrieval span; **G4** every cited hash is in
//!   the evidence.
//! - `input_only`: **R1** no retrieval; **R2** everything cites the input; **R3** a succeeded
//!   envelope has evidence.
//! - `none`: R1–R3 and **N1** no chat.
//! - `delegation` (ADR-0012): R1; **D1** every `grounded_on` entry cites the input or a
//!   delegation the conductor recorded; **D2** so does every evidence item; G4; **D3** a
//!   succeeded envelope cites its input in evidence.
//!
//! # Faithfulness
//!
//! The checks run in the reference's order and every violation text is the reference's, byte
//! for byte: `{x!r}` is Python's `repr` ([`str_repr`], [`py_repr`]), a missing value reads as
//! `None` as Python's `str(None)` does, hashes are shortened to `content_hash[:12]` and `…`.
//! Where the reference would raise or never return on a malformed document, this linter
//! reports a G0 violation or stops instead; each such place says so.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::contract::canonical::verify;
use crate::contract::{GroundingMode, OutcomeStatus, input_source_id, invocation_source_id};
use crate::json::python::{float_repr, py_repr, py_str, str_repr};
use crate::trace::{AttrValue, CONDUCTOR_ATTRIBUTES, SpanId, SpanName, SpanRecord, attr};

/// What the linter concluded about one invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroundingReport {
    /// No violation was found.
    pub passed: bool,
    /// The grounding mode the envelope declared: the valid mode, or Python's `str()` of
    /// whatever non-empty value it declared when that is not a mode; `None` when absent.
    pub mode: Option<String>,
    /// Every violation, prefixed by its rule id, in the order the checks found them.
    pub violations: Vec<String>,
    /// `retrieval` spans descending from the root.
    pub retrieval_count: usize,
    /// `chat` spans descending from the root.
    pub chat_count: usize,
}

impl GroundingReport {
    /// The report as `grounding.txt` holds it:
    /// `grounding: passed [<mode>] (<n> retrieval, <m> chat spans)`, or
    /// `grounding: FAILED [<mode>]` followed by one `\n  - <violation>` line per violation.
    pub fn summary(&self) -> String {
        let mode = match self.mode.as_deref() {
            Some(m) if !m.is_empty() => m,
            _ => "unknown mode",
        };
        if self.passed {
            format!(
                "grounding: passed [{mode}] ({} retrieval, {} chat spans)",
                self.retrieval_count, self.chat_count
            )
        } else {
            format!(
                "grounding: FAILED [{mode}]\n  - {}",
                self.violations.join("\n  - ")
            )
        }
    }

    fn failed(mode: Option<String>, violation: String, tree: Option<&Tree<'_>>) -> Self {
        GroundingReport {
            passed: false,
            mode,
            violations: vec![violation],
            retrieval_count: tree.map_or(0, |t| t.retrievals.len()),
            chat_count: tree.map_or(0, |t| t.chats.len()),
        }
    }
}

/// Lint one invocation: `records` are the finished spans filed under the conductor's trace
/// (its own and those an agent returned), `envelope` the envelope document.
///
/// Two G0 findings end the lint at once, as in the reference: a root count other than one
/// (nothing else can be read), and an envelope without a valid `grounding_mode` (no rule set
/// applies; the tree's own G0 findings are then not reported).
pub fn lint(records: &[SpanRecord], envelope: &Value) -> GroundingReport {
    // A non-object envelope reads as one with no keys: `Value::get` is `None` for it.
    let declared = envelope.get("grounding_mode");
    let declared_label = declared.filter(|v| is_truthy(v)).map(py_str);

    let roots: Vec<usize> = indices_named(records, SpanName::InvokeAgent);
    let &[root] = roots.as_slice() else {
        return GroundingReport::failed(
            declared_label,
            format!(
                "G0: expected exactly one {} span, found {}",
                SpanName::InvokeAgent,
                roots.len()
            ),
            None,
        );
    };
    let descendants = descendants(records, root);
    let tree = Tree::new(&records[root], descendants.iter().map(|&i| &records[i]));
    let mut violations = tree_violations(records, root, &descendants);

    // G0: the mode. `str(None)` is not a mode either, so only a string can name one.
    let Some(mode) = declared
        .and_then(Value::as_str)
        .and_then(GroundingMode::parse)
    else {
        return GroundingReport::failed(
            declared_label,
            format!(
                "G0: envelope declares no valid grounding_mode ({})",
                repr_or_none(declared)
            ),
            Some(&tree),
        );
    };
    violations.extend(g0_root_carries_the_mode(&tree, mode));
    violations.extend(g0_payload_shape(envelope));

    let (refs, ref_violations) = collect_refs(envelope);
    violations.extend(ref_violations);
    violations.extend(e1_evidence_content_matches_hash(envelope));

    let run = Run {
        tree: &tree,
        envelope,
        refs: &refs,
    };
    for rule in rules_for(mode) {
        violations.extend(rule(&run));
    }

    GroundingReport {
        passed: violations.is_empty(),
        mode: Some(mode.as_str().to_string()),
        violations,
        retrieval_count: tree.retrievals.len(),
        chat_count: tree.chats.len(),
    }
}

// --- The rule table ---------------------------------------------------------------------------

/// Everything a mode rule reads.
struct Run<'a> {
    tree: &'a Tree<'a>,
    envelope: &'a Value,
    refs: &'a Refs,
}

/// A mode rule: the violations it finds, in order.
type Rule = fn(&Run<'_>) -> Vec<String>;

const RETRIEVAL_RULES: &[Rule] = &[
    g1_retrieval_before_chat,
    g2_asserted_was_retrieved,
    g3_evidence_was_retrieved,
    g4_evidence_is_complete,
];
const INPUT_ONLY_RULES: &[Rule] = &[
    r1_no_retrieval,
    r2_everything_cites_the_input,
    r3_succeeded_cites_the_input,
];
const NONE_RULES: &[Rule] = &[
    r1_no_retrieval,
    r2_everything_cites_the_input,
    r3_succeeded_cites_the_input,
    n1_no_chat,
];
const DELEGATION_RULES: &[Rule] = &[
    r1_no_retrieval,
    d1_grounded_on_input_or_delegation,
    d2_evidence_is_input_or_delegation,
    g4_evidence_is_complete,
    d3_succeeded_cites_the_input,
];

/// The rules a grounding mode is held to, in the order they run (after G0 and E1).
fn rules_for(mode: GroundingMode) -> &'static [Rule] {
    match mode {
        GroundingMode::Retrieval => RETRIEVAL_RULES,
        GroundingMode::InputOnly => INPUT_ONLY_RULES,
        GroundingMode::None => NONE_RULES,
        GroundingMode::Delegation => DELEGATION_RULES,
    }
}

// --- The span tree ----------------------------------------------------------------------------

/// The span tree of one invocation, indexed the way the rules read it. Only descendants of
/// the root count as retrievals or chats.
struct Tree<'a> {
    root: &'a SpanRecord,
    retrievals: Vec<&'a SpanRecord>,
    chats: Vec<&'a SpanRecord>,
}

impl<'a> Tree<'a> {
    fn new(root: &'a SpanRecord, descendants: impl Iterator<Item = &'a SpanRecord>) -> Self {
        let (mut retrievals, mut chats) = (Vec::new(), Vec::new());
        for span in descendants {
            if span.is(SpanName::Retrieval) {
                retrievals.push(span);
            } else if span.is(SpanName::Chat) {
                chats.push(span);
            }
        }
        Tree {
            root,
            retrievals,
            chats,
        }
    }

    /// The `(dd.source_id, dd.content_hash)` of every retrieval, each read as Python's
    /// `str()` (so a missing one is `"None"`, as in the reference).
    fn retrieved(&self) -> HashSet<Citation> {
        self.retrievals
            .iter()
            .map(|r| Citation {
                source_id: attr_str(r.owned(attr::SOURCE_ID)),
                content_hash: attr_str(r.owned(attr::CONTENT_HASH)),
            })
            .collect()
    }

    fn retrieved_hashes(&self) -> HashSet<String> {
        self.retrieved()
            .into_iter()
            .map(|c| c.content_hash)
            .collect()
    }

    /// The root's `dd.input_hash`, as `str()` reads it.
    fn input_hash(&self) -> String {
        attr_str(self.root.owned(attr::INPUT_HASH))
    }
}

fn indices_named(records: &[SpanRecord], name: SpanName) -> Vec<usize> {
    (0..records.len())
        .filter(|&i| records[i].is(name))
        .collect()
}

/// The records below `root` by `parent_id`, in the reference's walk order (depth first from a
/// stack; each node's children in record order). Trace ids play no part here; G0 reports them.
///
/// Each record is visited once. The reference has no such guard: with duplicate span ids it
/// can list a span twice, and a `parent_id` cycle through the root never ends there.
fn descendants(records: &[SpanRecord], root: usize) -> Vec<usize> {
    let mut by_parent: HashMap<SpanId, Vec<usize>> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        if let Some(parent) = r.parent_id {
            by_parent.entry(parent).or_default().push(i);
        }
    }
    let mut seen = vec![false; records.len()];
    seen[root] = true;
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        for &child in by_parent.get(&records[node].span_id).into_iter().flatten() {
            if !std::mem::replace(&mut seen[child], true) {
                out.push(child);
                stack.push(child);
            }
        }
    }
    out
}

// --- G0 ---------------------------------------------------------------------------------------

/// G0 over the spans, in record order: a span in another trace, or (if in the trace) not
/// below the root; and, either way, a span other than the root carrying a conductor attribute.
fn tree_violations(records: &[SpanRecord], root: usize, descendants: &[usize]) -> Vec<String> {
    let root_span = &records[root];
    let in_tree: HashSet<SpanId> = descendants.iter().map(|&i| records[i].span_id).collect();
    let mut out = Vec::new();
    for (i, span) in records.iter().enumerate() {
        if i == root {
            continue;
        }
        let who = format!("G0: span {} ({})", str_repr(&span.name), span.span_id);
        if span.trace_id != root_span.trace_id {
            out.push(format!(
                "{who} is in trace {}, not the invocation's trace {}",
                span.trace_id, root_span.trace_id
            ));
        } else if !in_tree.contains(&span.span_id) {
            out.push(format!(
                "{who} does not descend from {}",
                SpanName::InvokeAgent
            ));
        }
        let carried: Vec<&str> = CONDUCTOR_ATTRIBUTES
            .into_iter()
            .filter(|key| span.owned(key).is_some())
            .collect();
        if !carried.is_empty() {
            out.push(format!(
                "{who} sets {}, which only the conductor's {} span may carry",
                carried.join(", "),
                SpanName::InvokeAgent
            ));
        }
    }
    out
}

/// G0: the envelope's mode is the one the conductor wrote on the root span.
fn g0_root_carries_the_mode(tree: &Tree<'_>, mode: GroundingMode) -> Option<String> {
    let on_root = tree.root.owned(attr::GROUNDING_MODE);
    (tree.root.owned_str(attr::GROUNDING_MODE) != Some(mode.as_str())).then(|| {
        format!(
            "G0: envelope declares grounding_mode {} but the root span carries {}",
            str_repr(mode.as_str()),
            attr_repr(on_root)
        )
    })
}

/// G0: a payload is an object with `schema_class` and a top-level `grounded_on`. A payload
/// without `grounded_on` is a violation, never a pass (the regression behind ADR-0008).
fn g0_payload_shape(envelope: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match envelope.get("payload") {
        None | Some(Value::Null) => {}
        Some(Value::Object(payload)) => {
            if !payload.contains_key("schema_class") {
                out.push("G0: payload lacks schema_class".to_string());
            }
            if !payload.contains_key("grounded_on") {
                out.push(format!(
                    "G0: payload {} lacks grounded_on; an ungroundable payload is a violation, \
                     not a pass",
                    repr_or_none(payload.get("schema_class"))
                ));
            }
        }
        Some(_) => out.push("G0: payload is not an object".to_string()),
    }
    out
}

// --- What the envelope cites ------------------------------------------------------------------

/// A `(source_id, content_hash)` pair: a grounding reference, an evidence item's citation, a
/// retrieval, the input, or a recorded delegation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Citation {
    source_id: String,
    content_hash: String,
}

impl Citation {
    /// The input citation: `input:<invocation_id>` with the root's `dd.input_hash`.
    fn input(envelope: &Value, tree: &Tree<'_>) -> Citation {
        Citation {
            source_id: input_source_id(&str_or_none(envelope.get("invocation_id"))),
            content_hash: tree.input_hash(),
        }
    }

    /// `'<source_id>' (<hash[:12]>…)`, as the violation texts name a citation.
    fn described(&self) -> String {
        format!(
            "{} ({}…)",
            str_repr(&self.source_id),
            short(&self.content_hash)
        )
    }
}

/// Every grounding reference the payload makes, and the envelope's evidence, as pairs.
struct Refs {
    grounded_on: Vec<Citation>,
    evidence: Vec<Citation>,
}

/// Every value under a `grounded_on` key at any depth of `node`, in document order. The
/// value itself is not searched further.
///
/// serde_json's `Map` keeps keys sorted (the crate is built without `preserve_order`), so
/// "document order" here is key order. That only changes the order of violations, never
/// whether there are any.
fn grounded_on_values<'v>(node: &'v Value, out: &mut Vec<&'v Value>) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "grounded_on" {
                    out.push(value);
                } else {
                    grounded_on_values(value, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| grounded_on_values(item, out)),
        _ => {}
    }
}

/// G0 over the references: collect every well-formed `grounded_on` entry and every evidence
/// citation, reporting the malformed ones.
///
/// Evidence ids and hashes are read with Python's `str()`, as the reference reads them. Two
/// checks are ddwire's own, where the reference would raise instead: evidence that is neither
/// absent, `null` nor a list, and an evidence item that is not an object.
fn collect_refs(envelope: &Value) -> (Refs, Vec<String>) {
    let mut violations = Vec::new();
    let mut lists = Vec::new();
    if let Some(payload) = envelope.get("payload") {
        grounded_on_values(payload, &mut lists);
    }
    let mut grounded_on = Vec::new();
    for list in lists {
        let Some(entries) = list.as_array() else {
            violations.push("G0: grounded_on is not a list".to_string());
            continue;
        };
        for entry in entries {
            let source_id = entry.get("source_id").and_then(Value::as_str);
            let content_hash = entry.get("content_hash").and_then(Value::as_str);
            match (entry.is_object(), source_id, content_hash) {
                (true, Some(source_id), Some(content_hash)) => grounded_on.push(Citation {
                    source_id: source_id.to_string(),
                    content_hash: content_hash.to_string(),
                }),
                _ => violations.push(format!(
                    "G0: malformed grounding reference {}",
                    py_repr(entry)
                )),
            }
        }
    }

    let mut evidence = Vec::new();
    match envelope.get("evidence") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                if item.is_object() {
                    evidence.push(Citation {
                        source_id: str_or_none(item.get("source_id")),
                        content_hash: str_or_none(item.get("content_hash")),
                    });
                } else {
                    violations.push(format!("G0: malformed evidence item {}", py_repr(item)));
                }
            }
        }
        Some(_) => violations.push("G0: evidence is not a list".to_string()),
    }
    (
        Refs {
            grounded_on,
            evidence,
        },
        violations,
    )
}

// --- E1 ---------------------------------------------------------------------------------------

/// E1 (ADR-0015): every evidence item carrying `content` hashes to its `content_hash` under
/// its `canonicalisation`; what a reader is shown about a cited record is what the hash
/// covers. Content that is not an object, and an unregistered canonicalisation, are violations
/// too. Items without content, or with `null`, are not checked.
fn e1_evidence_content_matches_hash(envelope: &Value) -> Vec<String> {
    let Some(items) = envelope.get("evidence").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        let content = match item.get("content") {
            None | Some(Value::Null) => continue,
            Some(content) => content,
        };
        let source_id = repr_or_none(item.get("source_id"));
        if !content.is_object() {
            out.push(format!("E1: evidence {source_id} content is not an object"));
            continue;
        }
        let canonicalisation = item.get("canonicalisation");
        let content_hash = str_or_none(item.get("content_hash"));
        match verify(content, &str_or_none(canonicalisation), &content_hash) {
            Err(e) => out.push(format!("E1: evidence {source_id}: {e}")),
            Ok(true) => {}
            Ok(false) => out.push(format!(
                "E1: evidence {source_id} content does not hash to its content_hash ({}…) \
                 under {}",
                short(&content_hash),
                repr_or_none(canonicalisation)
            )),
        }
    }
    out
}

// --- retrieval: G1-G4 -------------------------------------------------------------------------

/// G1: the agent retrieves before it reasons. Every `chat` span starts after the first
/// retrieval span to end has ended; a chat with no retrieval at all is one violation.
fn g1_retrieval_before_chat(run: &Run<'_>) -> Vec<String> {
    let first_retrieval_end = run.tree.retrievals.iter().map(|r| r.end_ns).min();
    let mut out = Vec::new();
    for chat in &run.tree.chats {
        let Some(end) = first_retrieval_end else {
            out.push("G1: a chat span exists but no retrieval span does".to_string());
            break;
        };
        if chat.start_ns < end {
            out.push(format!(
                "G1: chat span {} started before the first retrieval span ended",
                chat.span_id
            ));
        }
    }
    out
}

/// G2: nothing is asserted that was not retrieved. Every `grounded_on` entry, at any depth,
/// matches a retrieval span on both `dd.source_id` and `dd.content_hash`; a succeeded payload
/// with no reference at all rests on nothing.
fn g2_asserted_was_retrieved(run: &Run<'_>) -> Vec<String> {
    let retrieved = run.tree.retrieved();
    let mut out: Vec<String> = run
        .refs
        .grounded_on
        .iter()
        .filter(|c| !retrieved.contains(c))
        .map(|c| {
            format!(
                "G2: payload rests on {} which was not retrieved in this invocation",
                c.described()
            )
        })
        .collect();
    if succeeded(run.envelope) && has_payload(run.envelope) && run.refs.grounded_on.is_empty() {
        out.push("G2: a succeeded retrieval-mode payload rests on nothing".to_string());
    }
    out
}

/// G3: every `content_hash` in the evidence appears on a retrieval span.
fn g3_evidence_was_retrieved(run: &Run<'_>) -> Vec<String> {
    let hashes = run.tree.retrieved_hashes();
    run.refs
        .evidence
        .iter()
        .filter(|c| !hashes.contains(&c.content_hash))
        .map(|c| {
            format!(
                "G3: evidence {} hash {}… not in trace",
                str_repr(&c.source_id),
                short(&c.content_hash)
            )
        })
        .collect()
}

/// G4: the envelope is complete about what it rests on; every `grounded_on` hash appears in
/// the evidence.
fn g4_evidence_is_complete(run: &Run<'_>) -> Vec<String> {
    let cited: HashSet<&str> = run
        .refs
        .evidence
        .iter()
        .map(|c| c.content_hash.as_str())
        .collect();
    run.refs
        .grounded_on
        .iter()
        .filter(|c| !cited.contains(c.content_hash.as_str()))
        .map(|c| {
            format!(
                "G4: payload rests on {} absent from evidence",
                c.described()
            )
        })
        .collect()
}

// --- input_only and none: R1-R3, N1 -----------------------------------------------------------

/// R1: an agent that declared no retrieval made none.
fn r1_no_retrieval(run: &Run<'_>) -> Vec<String> {
    match run.tree.retrievals.len() {
        0 => Vec::new(),
        n => vec![format!(
            "R1: {n} retrieval span(s) in an agent that declared none"
        )],
    }
}

/// R2: every `grounded_on` entry, then every evidence item, cites the input:
/// `input:<invocation_id>` with the root's `dd.input_hash`.
fn r2_everything_cites_the_input(run: &Run<'_>) -> Vec<String> {
    let expected = Citation::input(run.envelope, run.tree);
    let labelled = [
        ("payload", &run.refs.grounded_on),
        ("evidence", &run.refs.evidence),
    ];
    labelled
        .into_iter()
        .flat_map(|(label, citations)| citations.iter().map(move |c| (label, c)))
        .filter(|(_, c)| **c != expected)
        .map(|(label, c)| {
            format!(
                "R2: {label} cites {}; an input-grounded agent may cite only {}",
                c.described(),
                expected.described()
            )
        })
        .collect()
}

/// R3: a succeeded envelope cites the input at least once (with R2, any evidence does).
fn r3_succeeded_cites_the_input(run: &Run<'_>) -> Vec<String> {
    if succeeded(run.envelope) && run.refs.evidence.is_empty() {
        vec!["R3: a succeeded input-grounded envelope cites no evidence".to_string()]
    } else {
        Vec::new()
    }
}

/// N1: an agent that declared no model call made none.
fn n1_no_chat(run: &Run<'_>) -> Vec<String> {
    match run.tree.chats.len() {
        0 => Vec::new(),
        n => vec![format!(
            "N1: {n} chat span(s) in an agent that declared no model call"
        )],
    }
}

// --- delegation: D1-D3 ------------------------------------------------------------------------

/// What a delegation agent may cite: its input, and each child run the conductor recorded in
/// `delegations` (`invocation:<child id>` with the child envelope's hash). The agent's own
/// account of what it delegated is not what is trusted. Entries that are not objects are
/// skipped, as in the reference.
fn delegation_citable(run: &Run<'_>) -> HashSet<Citation> {
    let recorded = run
        .envelope
        .get("delegations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|d| d.is_object())
        .map(|d| Citation {
            source_id: invocation_source_id(&str_or_none(d.get("delegated_invocation_id"))),
            content_hash: str_or_none(d.get("content_hash")),
        });
    std::iter::once(Citation::input(run.envelope, run.tree))
        .chain(recorded)
        .collect()
}

/// D1: every `grounded_on` entry cites the input or a recorded delegation.
fn d1_grounded_on_input_or_delegation(run: &Run<'_>) -> Vec<String> {
    let citable = delegation_citable(run);
    run.refs
        .grounded_on
        .iter()
        .filter(|c| !citable.contains(c))
        .map(|c| {
            format!(
                "D1: payload rests on {}, which is neither the input nor a delegation recorded \
                 by the conductor",
                c.described()
            )
        })
        .collect()
}

/// D2: every evidence item cites the input or a recorded delegation.
fn d2_evidence_is_input_or_delegation(run: &Run<'_>) -> Vec<String> {
    let citable = delegation_citable(run);
    run.refs
        .evidence
        .iter()
        .filter(|c| !citable.contains(c))
        .map(|c| {
            format!(
                "D2: evidence {} is neither the input nor a delegation recorded by the conductor",
                c.described()
            )
        })
        .collect()
}

/// D3: a succeeded delegation envelope cites its input in evidence.
fn d3_succeeded_cites_the_input(run: &Run<'_>) -> Vec<String> {
    let input = Citation::input(run.envelope, run.tree);
    if succeeded(run.envelope) && !run.refs.evidence.contains(&input) {
        vec!["D3: a succeeded delegation envelope does not cite its input in evidence".to_string()]
    } else {
        Vec::new()
    }
}

// --- Reading the envelope as Python does ------------------------------------------------------

/// `outcome.status == "succeeded"`. An outcome that is not an object is not succeeded (the
/// reference would raise on a non-empty one).
fn succeeded(envelope: &Value) -> bool {
    envelope
        .get("outcome")
        .and_then(|o| o.get("status"))
        .and_then(Value::as_str)
        == Some(OutcomeStatus::Succeeded.as_str())
}

fn has_payload(envelope: &Value) -> bool {
    !matches!(envelope.get("payload"), None | Some(Value::Null))
}

/// Python's `str(v)` of a looked-up value: `"None"` when absent or `null`.
fn str_or_none(v: Option<&Value>) -> String {
    v.map_or_else(|| "None".to_string(), py_str)
}

/// Python's `repr(v)` of a looked-up value: `None` when absent or `null`.
fn repr_or_none(v: Option<&Value>) -> String {
    v.map_or_else(|| "None".to_string(), py_repr)
}

/// Python's truthiness of a JSON value.
fn is_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_none_or(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

/// `hash[:12]`: the first twelve characters (code points, as Python slices).
fn short(hash: &str) -> &str {
    hash.char_indices()
        .nth(12)
        .map_or(hash, |(i, _)| &hash[..i])
}

/// Python's `repr()` of an attribute as the reference's records hold it (span JSON read by
/// `json.loads`, so arrays are lists): `None` when absent.
fn attr_repr(value: Option<&AttrValue>) -> String {
    fn float(x: f64) -> String {
        match float_repr(x).as_str() {
            "Infinity" => "inf".to_string(),
            "-Infinity" => "-inf".to_string(),
            "NaN" => "nan".to_string(),
            other => other.to_string(),
        }
    }
    fn list<T>(items: &[T], each: impl Fn(&T) -> String) -> String {
        let inner: Vec<String> = items.iter().map(each).collect();
        format!("[{}]", inner.join(", "))
    }
    fn boolean(b: bool) -> String {
        if b { "True" } else { "False" }.to_string()
    }
    match value {
        None => "None".to_string(),
        Some(AttrValue::String(s)) => str_repr(s),
        Some(AttrValue::Bool(b)) => boolean(*b),
        Some(AttrValue::Int(i)) => i.to_string(),
        Some(AttrValue::Double(x)) => float(*x),
        Some(AttrValue::StringArray(a)) => list(a, |s| str_repr(s)),
        Some(AttrValue::BoolArray(a)) => list(a, |b| boolean(*b)),
        Some(AttrValue::IntArray(a)) => list(a, i64::to_string),
        Some(AttrValue::DoubleArray(a)) => list(a, |x| float(*x)),
        Some(AttrValue::Json(text)) => {
            serde_json::from_str::<Value>(text).map_or_else(|_| text.clone(), |v| py_repr(&v))
        }
    }
}

/// Python's `str()` of an attribute: the text itself for a string, else its `repr()`.
fn attr_str(value: Option<&AttrValue>) -> String {
    match value {
        Some(AttrValue::String(s)) => s.clone(),
        other => attr_repr(other),
    }
}
