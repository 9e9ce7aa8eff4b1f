//! The grounding linter: bespoke rules over the generic trace, as the Python reference
//! implementation applies them.
//!
//! `lint` reads the span tree of one `invoke_agent` and the envelope document it produced,
//! and applies the rule set of the grounding mode the envelope declares. It never needs the
//! payload class: it walks the payload for `grounded_on` lists, and a payload that has none is
//! a violation. Nothing passes because the linter did not recognise it.
//!
//! It reads only owned attributes (`SpanRecord::owned`), from plain records, and
//! does no I/O, so the conductor runs it at invocation time (`lint_run`) and the CLI runs it
//! offline over a stored run (`lint_stored`, which first restores a withheld result from the
//! agent's reply as received, so a stored run gets the verdict it got when it ran).
//!
//! # Rules
//!
//! Every mode:
//! - **G0**, structure: exactly one `invoke_agent` root; every other span is in the root's
//!   trace and descends from the root (invariant 6); only the root carries the
//!   `CONDUCTOR_ATTRIBUTES` (invariant 7); the envelope's `grounding_mode` is valid and
//!   equals the root's `dd.grounding_mode`; a payload has `schema_class` and `grounded_on`;
//!   every grounding reference is well formed.
//! - **E1**, evidence content: every evidence item that carries `content` hashes to
//!   its `content_hash` under its `canonicalisation`.
//!
//! Per mode (see `rules_for`):
//! - `retrieval`: **G1** chat only after a retrieval ended; **G2** everything cited was
//!   retrieved; **G3** every evidence hash is on a retrieval span; **G4** every cited hash is in
//!   the evidence.
//! - `input_only`: **R1** no retrieval; **R2** everything cites the input; **R3** a succeeded
//!   envelope has evidence.
//! - `none`: R1–R3 and **N1** no chat.
//! - `delegation`: R1; **D1** every `grounded_on` entry cites the input or a
//!   delegation the conductor recorded; **D2** so does every evidence item; G4; **D3** a
//!   succeeded envelope cites its input in evidence.
//!
//! # Faithfulness
//!
//! The checks run in the reference's order and every violation text is the reference's, byte
//! for byte: `{x!r}` is Python's `repr` (`str_repr`, `py_repr`), a missing value reads as
//! `None` as Python's `str(None)` does, hashes are shortened to `content_hash[:12]` and `…`.
//! Where the reference would raise or never return on a malformed document, this linter
//! reports a G0 violation or stops instead; each such place says so.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::conductor::Stage;
use crate::contract::canonical::verify;
use crate::contract::problem::ProblemType;
use crate::contract::validate::{py_repr_opt, truthy};
use crate::contract::{GroundingMode, OutcomeStatus, input_source_id, invocation_source_id};
use crate::json::python::{float_repr, py_repr, py_str, str_repr};
use crate::trace::{AttrValue, CONDUCTOR_ATTRIBUTES, SpanId, SpanName, SpanRecord, attr};

/// What the linter concluded about one invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroundingReport {
    /// The linter ran and found no violation.
    pub passed: bool,
    /// Why the linter did not run: the conductor decided the run before its agent ran (a
    /// refusal or a referral), so there was no output to check. `passed` is then `false`.
    pub(crate) not_run: Option<String>,
    /// The grounding mode the envelope declared: the valid mode, or Python's `str()` of
    /// whatever non-empty value it declared when that is not a mode; `None` when absent.
    pub(crate) mode: Option<String>,
    /// Every violation, prefixed by its rule id, in the order the checks found them.
    pub(crate) violations: Vec<String>,
    /// `retrieval` spans descending from the root.
    pub(crate) retrieval_count: usize,
    /// `chat` spans descending from the root.
    pub(crate) chat_count: usize,
}

impl GroundingReport {
    /// The report as `grounding.txt` holds it:
    /// `grounding: passed [<mode>] (<n> retrieval, <m> chat spans)`, or
    /// `grounding: FAILED [<mode>]` followed by one `\n  - <violation>` line per violation.
    /// A run whose agent never ran reads `grounding: not run [<mode>] (<why>)`.
    pub(crate) fn summary(&self) -> String {
        let mode = match self.mode.as_deref() {
            Some(m) if !m.is_empty() => m,
            _ => "unknown mode",
        };
        if let Some(why) = &self.not_run {
            format!("grounding: not run [{mode}] ({why})")
        } else if self.passed {
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

    /// The report as data, one shape for `ddwire lint --json` and `GET /runs/{id}/grounding`:
    /// `{"invocation_id", "summary", "passed", "not_run", "mode", "violations",
    /// "retrieval_count", "chat_count", "stored", "agrees"}`, where `stored` is the run's
    /// `grounding.txt` (if given) and `agrees` whether this report reads the same.
    pub(crate) fn to_json(&self, invocation_id: Option<&str>, stored: Option<&str>) -> Value {
        let summary = self.summary();
        serde_json::json!({
            "invocation_id": invocation_id,
            "summary": summary,
            "passed": self.passed,
            "not_run": self.not_run,
            "mode": self.mode,
            "violations": self.violations,
            "retrieval_count": self.retrieval_count,
            "chat_count": self.chat_count,
            "stored": stored.map(str::trim_end),
            "agrees": stored.map(|s| s.trim_end() == summary),
        })
    }

    /// The ids of the rules that failed (`G0`, `R2`...), each once, in the order the checks
    /// found them: each violation's text up to its first `:`.
    pub(crate) fn rules(&self) -> Vec<String> {
        let mut rules: Vec<String> = Vec::new();
        for violation in &self.violations {
            let id = violation.split(':').next().unwrap_or_default().trim();
            if !id.is_empty() && !rules.iter().any(|r| r == id) {
                rules.push(id.to_string());
            }
        }
        rules
    }

    /// The report of `violations` (passed if none) over `tree`, or of a run the linter did not
    /// run on (`not_run`).
    fn new(
        mode: Option<String>,
        not_run: Option<String>,
        violations: Vec<String>,
        tree: Option<&Tree<'_>>,
    ) -> Self {
        GroundingReport {
            passed: not_run.is_none() && violations.is_empty(),
            not_run,
            mode,
            violations,
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
pub(crate) fn lint(records: &[SpanRecord], envelope: &Value) -> GroundingReport {
    let roots = indices_named(records, SpanName::InvokeAgent);
    let &[root] = roots.as_slice() else {
        let found = format!(
            "G0: expected exactly one {} span, found {}",
            SpanName::InvokeAgent,
            roots.len()
        );
        return GroundingReport::new(declared_label(envelope), None, vec![found], None);
    };
    let descendants = descendants(records, root);
    let tree = Tree::new(&records[root], descendants.iter().map(|&i| &records[i]));

    // G0: the mode. `str(None)` is not a mode either, so only a string can name one. A
    // non-object envelope reads as one with no keys: `Value::get` is `None` for it.
    let declared = envelope.get("grounding_mode");
    let Some(mode) = declared
        .and_then(Value::as_str)
        .and_then(GroundingMode::parse)
    else {
        let invalid = format!(
            "G0: envelope declares no valid grounding_mode ({})",
            py_repr_opt(declared)
        );
        return GroundingReport::new(declared_label(envelope), None, vec![invalid], Some(&tree));
    };
    let mut violations = Vec::new();
    tree_violations(records, root, &descendants, &mut violations);
    g0_root_carries_the_mode(&tree, mode, &mut violations);
    g0_payload_shape(envelope, &mut violations);
    let refs = collect_refs(envelope, &mut violations);
    e1_evidence_content_matches_hash(envelope, &mut violations);

    let run = Run {
        tree: &tree,
        envelope,
        refs: &refs,
    };
    for rule in rules_for(mode) {
        rule(&run, &mut violations);
    }
    let mode = Some(mode.as_str().to_string());
    GroundingReport::new(mode, None, violations, Some(&tree))
}

/// The grounding mode the envelope declares, as a report names it: Python's `str()` of any
/// truthy value, valid or not.
fn declared_label(envelope: &Value) -> Option<String> {
    envelope
        .get("grounding_mode")
        .filter(|v| truthy(v))
        .map(py_str)
}

/// Lint one run as the conductor does: [`lint`], unless the conductor decided the run before
/// its agent ran (the policy gate refused or referred it, or the input check refused its
/// input, as the root span's stage events record), when there is no output to check and the
/// report says the linter did not run.
pub(crate) fn lint_run(records: &[SpanRecord], envelope: &Value) -> GroundingReport {
    match not_run_reason(records) {
        Some(why) => GroundingReport::new(declared_label(envelope), Some(why), Vec::new(), None),
        None => lint(records, envelope),
    }
}

/// Lint a stored run offline and reach the conductor's verdict: `envelope` is the stored
/// envelope, `records` its stored spans, `agent_reply` the agent's reply as received
/// (`{"result": <AgentResult>, "spans": [...]}`, the run store's `agent-result.json`).
///
/// A withheld envelope has lost the payload and evidence the conductor linted, so they are
/// put back from the agent's result first: a run is withheld when its problem is a
/// `grounding-violation`, or when the root span's `dd.outcome` (what the agent claimed, set
/// before the linter ran) is `succeeded` and the stored outcome is not. Without the reply a
/// withheld run is linted as stored; [`is_withheld`] tells a caller to say so.
pub(crate) fn lint_stored(
    records: &[SpanRecord],
    envelope: &Value,
    agent_reply: Option<&Value>,
) -> GroundingReport {
    let linted = match (is_withheld(records, envelope), agent_reply) {
        (true, Some(reply)) => as_linted(envelope, &reply["result"]),
        _ => envelope.clone(),
    };
    lint_run(records, &linted)
}

/// Lint stored run `id` again from its files (envelope, spans, the agent's reply): what
/// `ddwire lint RUN` and `GET /runs/{id}/grounding` report. `None` if the store holds no such
/// run.
pub(crate) fn relint(
    reader: &super::store::RunReader,
    id: &str,
) -> crate::harness::Result<Option<GroundingReport>> {
    let Some(envelope) = reader.envelope(id)? else {
        return Ok(None);
    };
    let records = reader.span_records(id)?.unwrap_or_default();
    let reply = reader.agent_reply(id)?;
    Ok(Some(lint_stored(&records, &envelope, reply.as_ref())))
}

/// Whether the stored `envelope` is a withheld result (see [`lint_stored`]).
pub(crate) fn is_withheld(records: &[SpanRecord], envelope: &Value) -> bool {
    let problem = envelope["problem"]["type"].as_str().unwrap_or("");
    if problem.rsplit('/').next() == Some(ProblemType::GroundingViolation.slug()) {
        return true;
    }
    let claimed = records
        .iter()
        .find(|s| s.parent_id.is_none() && s.is(SpanName::InvokeAgent))
        .and_then(|r| r.owned_str(attr::OUTCOME));
    claimed == Some(OutcomeStatus::Succeeded.as_str())
        && envelope["outcome"]["status"].as_str() != Some(OutcomeStatus::Succeeded.as_str())
}

/// The envelope the conductor linted: the stored one with the agent's outcome, payload and
/// evidence put back.
fn as_linted(envelope: &Value, result: &Value) -> Value {
    let mut linted = envelope.clone();
    if let (Some(doc), Some(result)) = (linted.as_object_mut(), result.as_object()) {
        for key in ["outcome", "payload", "evidence"] {
            match result.get(key) {
                Some(v) if !v.is_null() => {
                    doc.insert(key.to_string(), v.clone());
                }
                _ if key == "evidence" => {
                    doc.insert(key.to_string(), Value::Array(Vec::new()));
                }
                _ => {
                    doc.remove(key);
                }
            }
        }
    }
    linted
}

/// Why the agent of this run never ran, from the conductor's stage events on the root span:
/// `None` when nothing says it was stopped before the agent call. Only a tree with exactly one
/// root, which records no agent call, can say so: a span an agent sent can never make the
/// linter stand down (a second root is left to G0).
fn not_run_reason(records: &[SpanRecord]) -> Option<String> {
    // Every invoke_agent span counts, as in the linter's own G0 check.
    let &[root] = indices_named(records, SpanName::InvokeAgent).as_slice() else {
        return None;
    };
    let events = &records[root].events;
    if events.iter().any(|e| e.name == Stage::AgentCall.name()) {
        return None;
    }
    events.iter().find_map(|e| {
        let Some(AttrValue::String(decision)) = e.attributes.get(attr::STAGE_DECISION) else {
            return None;
        };
        let why = match (Stage::parse(&e.name)?, decision.as_str()) {
            (Stage::PolicyGate, "permitted") | (Stage::InputCheck, "accepted") => return None,
            (Stage::PolicyGate, "requires_approval") => {
                "the policy gate referred the run for approval".to_string()
            }
            (Stage::PolicyGate, "not_enabled") => "the profile does not enable it".to_string(),
            (Stage::PolicyGate, d) => format!("the policy gate refused it, {d}"),
            (Stage::InputCheck, _) => "the input check refused its input".to_string(),
            _ => return None,
        };
        Some(format!("the agent was not run: {why}"))
    })
}

// --- The rule table ---------------------------------------------------------------------------

/// Everything a mode rule reads.
struct Run<'a> {
    tree: &'a Tree<'a>,
    envelope: &'a Value,
    refs: &'a Refs,
}

/// A mode rule: adds the violations it finds, in order.
type Rule = fn(&Run<'_>, &mut Vec<String>);

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
    d1_d2_everything_cites_the_input_or_a_delegation,
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
fn tree_violations(
    records: &[SpanRecord],
    root: usize,
    descendants: &[usize],
    out: &mut Vec<String>,
) {
    let root_span = &records[root];
    let in_tree: HashSet<SpanId> = descendants.iter().map(|&i| records[i].span_id).collect();
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
}

/// G0: the envelope's mode is the one the conductor wrote on the root span.
fn g0_root_carries_the_mode(tree: &Tree<'_>, mode: GroundingMode, out: &mut Vec<String>) {
    if tree.root.owned_str(attr::GROUNDING_MODE) != Some(mode.as_str()) {
        out.push(format!(
            "G0: envelope declares grounding_mode {} but the root span carries {}",
            str_repr(mode.as_str()),
            attr_repr(tree.root.owned(attr::GROUNDING_MODE))
        ));
    }
}

/// G0: a payload is an object with `schema_class` and a top-level `grounded_on`. A payload
/// without `grounded_on` is a violation, never a pass: nothing passes because the linter did not recognise it.
fn g0_payload_shape(envelope: &Value, out: &mut Vec<String>) {
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
                    py_repr_opt(payload.get("schema_class"))
                ));
            }
        }
        Some(_) => out.push("G0: payload is not an object".to_string()),
    }
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
    /// The input citation: `input:<invocation_id>` with the root's `dd.input_hash` (each as
    /// `str()` reads it).
    fn input(envelope: &Value, tree: &Tree<'_>) -> Citation {
        Citation {
            source_id: input_source_id(&str_or_none(envelope.get("invocation_id"))),
            content_hash: attr_str(tree.root.owned(attr::INPUT_HASH)),
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
fn collect_refs(envelope: &Value, violations: &mut Vec<String>) -> Refs {
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
    Refs {
        grounded_on,
        evidence,
    }
}

// --- E1 ---------------------------------------------------------------------------------------

/// E1: every evidence item carrying `content` hashes to its `content_hash` under
/// its `canonicalisation`; what a reader is shown about a cited record is what the hash
/// covers. Content that is not an object, and an unregistered canonicalisation, are violations
/// too. Items without content, or with `null`, are not checked.
fn e1_evidence_content_matches_hash(envelope: &Value, out: &mut Vec<String>) {
    let items = envelope.get("evidence").and_then(Value::as_array);
    for item in items.into_iter().flatten() {
        let content = match item.get("content") {
            None | Some(Value::Null) => continue,
            Some(content) => content,
        };
        let source_id = py_repr_opt(item.get("source_id"));
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
                py_repr_opt(canonicalisation)
            )),
        }
    }
}

// --- retrieval: G1-G4 -------------------------------------------------------------------------

/// G1: the agent retrieves before it reasons. Every `chat` span starts after the first
/// retrieval span to end has ended; a chat with no retrieval at all is one violation.
fn g1_retrieval_before_chat(run: &Run<'_>, out: &mut Vec<String>) {
    let first_retrieval_end = run.tree.retrievals.iter().map(|r| r.end_ns).min();
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
}

/// G2: nothing is asserted that was not retrieved. Every `grounded_on` entry, at any depth,
/// matches a retrieval span on both `dd.source_id` and `dd.content_hash`; a succeeded payload
/// with no reference at all rests on nothing.
fn g2_asserted_was_retrieved(run: &Run<'_>, out: &mut Vec<String>) {
    let retrieved = run.tree.retrieved();
    for c in run
        .refs
        .grounded_on
        .iter()
        .filter(|c| !retrieved.contains(c))
    {
        out.push(format!(
            "G2: payload rests on {} which was not retrieved in this invocation",
            c.described()
        ));
    }
    let has_payload = !matches!(run.envelope.get("payload"), None | Some(Value::Null));
    if succeeded(run.envelope) && has_payload && run.refs.grounded_on.is_empty() {
        out.push("G2: a succeeded retrieval-mode payload rests on nothing".to_string());
    }
}

/// G3: every `content_hash` in the evidence appears on a retrieval span.
fn g3_evidence_was_retrieved(run: &Run<'_>, out: &mut Vec<String>) {
    let hashes: HashSet<String> = run
        .tree
        .retrievals
        .iter()
        .map(|r| attr_str(r.owned(attr::CONTENT_HASH)))
        .collect();
    for c in &run.refs.evidence {
        if !hashes.contains(&c.content_hash) {
            out.push(format!(
                "G3: evidence {} hash {}… not in trace",
                str_repr(&c.source_id),
                short(&c.content_hash)
            ));
        }
    }
}

/// G4: the envelope is complete about what it rests on; every `grounded_on` hash appears in
/// the evidence.
fn g4_evidence_is_complete(run: &Run<'_>, out: &mut Vec<String>) {
    let cited: HashSet<&str> = run
        .refs
        .evidence
        .iter()
        .map(|c| c.content_hash.as_str())
        .collect();
    for c in &run.refs.grounded_on {
        if !cited.contains(c.content_hash.as_str()) {
            let c = c.described();
            out.push(format!("G4: payload rests on {c} absent from evidence"));
        }
    }
}

// --- input_only and none: R1-R3, N1 -----------------------------------------------------------

/// R1: an agent that declared no retrieval made none.
fn r1_no_retrieval(run: &Run<'_>, out: &mut Vec<String>) {
    let n = run.tree.retrievals.len();
    if n > 0 {
        out.push(format!(
            "R1: {n} retrieval span(s) in an agent that declared none"
        ));
    }
}

/// R2: every `grounded_on` entry, then every evidence item, cites the input:
/// `input:<invocation_id>` with the root's `dd.input_hash`.
fn r2_everything_cites_the_input(run: &Run<'_>, out: &mut Vec<String>) {
    let expected = Citation::input(run.envelope, run.tree);
    for (label, citations) in [
        ("payload", &run.refs.grounded_on),
        ("evidence", &run.refs.evidence),
    ] {
        for c in citations.iter().filter(|c| **c != expected) {
            out.push(format!(
                "R2: {label} cites {}; an input-grounded agent may cite only {}",
                c.described(),
                expected.described()
            ));
        }
    }
}

/// R3: a succeeded envelope cites the input at least once (with R2, any evidence does).
fn r3_succeeded_cites_the_input(run: &Run<'_>, out: &mut Vec<String>) {
    if succeeded(run.envelope) && run.refs.evidence.is_empty() {
        out.push("R3: a succeeded input-grounded envelope cites no evidence".to_string());
    }
}

/// N1: an agent that declared no model call made none.
fn n1_no_chat(run: &Run<'_>, out: &mut Vec<String>) {
    let n = run.tree.chats.len();
    if n > 0 {
        out.push(format!(
            "N1: {n} chat span(s) in an agent that declared no model call"
        ));
    }
}

// --- delegation: D1-D3 ------------------------------------------------------------------------

/// D1: every `grounded_on` entry, then D2: every evidence item, cites what a delegation agent
/// may cite: its input, and each child run the conductor recorded in `delegations`
/// (`invocation:<child id>` with the child envelope's hash). The agent's own account of what
/// it delegated is not what is trusted. Entries that are not objects are skipped, as in the
/// reference.
fn d1_d2_everything_cites_the_input_or_a_delegation(run: &Run<'_>, out: &mut Vec<String>) {
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
    let citable: HashSet<Citation> = std::iter::once(Citation::input(run.envelope, run.tree))
        .chain(recorded)
        .collect();
    for c in run.refs.grounded_on.iter().filter(|c| !citable.contains(c)) {
        out.push(format!(
            "D1: payload rests on {}, which is neither the input nor a delegation recorded by \
             the conductor",
            c.described()
        ));
    }
    for c in run.refs.evidence.iter().filter(|c| !citable.contains(c)) {
        out.push(format!(
            "D2: evidence {} is neither the input nor a delegation recorded by the conductor",
            c.described()
        ));
    }
}

/// D3: a succeeded delegation envelope cites its input in evidence.
fn d3_succeeded_cites_the_input(run: &Run<'_>, out: &mut Vec<String>) {
    let input = Citation::input(run.envelope, run.tree);
    if succeeded(run.envelope) && !run.refs.evidence.contains(&input) {
        out.push("D3: a succeeded delegation envelope does not cite its input in evidence".into());
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

/// Python's `str(v)` of a looked-up value: `"None"` when absent or `null`.
fn str_or_none(v: Option<&Value>) -> String {
    v.map_or_else(|| "None".to_string(), py_str)
}

/// `hash[:12]`: the first twelve characters (code points, as Python slices).
fn short(hash: &str) -> std::borrow::Cow<'_, str> {
    crate::text::truncate(hash, crate::text::Keep::Chars(12), "")
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
    match value {
        None => "None".to_string(),
        Some(AttrValue::String(s)) => str_repr(s),
        Some(AttrValue::Bool(b)) => py_repr(&Value::Bool(*b)),
        Some(AttrValue::Int(i)) => i.to_string(),
        Some(AttrValue::Double(x)) => float(*x),
        Some(AttrValue::StringArray(a)) => list(a, |s| str_repr(s)),
        Some(AttrValue::BoolArray(a)) => list(a, |b| py_repr(&Value::Bool(*b))),
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

#[cfg(test)]
mod tests {
    //! The linter over hand-built span trees and envelope documents, one mode at a time (the
    //! Python reference's linter tests, plus G0's span checks). No conductor, no agent: these
    //! pin the rules themselves, including that a payload the linter does not recognise must
    //! fail, never pass.

    use super::*;
    use crate::contract::canonical::Canonicalisation;
    use crate::trace::{Attributes, SpanKind, Status, TraceId, TraceState};
    use serde_json::json;

    const INV: &str = "01a06cdb-985f-7375-9aa2-37be29f0f2a8";
    const CHILD: &str = "01a06cdb-985f-7375-9aa2-37be29f0f2a9";
    const TRACE: TraceId = TraceId(0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736);
    const ROOT: u64 = 0x1;
    const R1: u64 = 0x11;
    const R2: u64 = 0x12;
    const CHAT: u64 = 0x20;

    fn hash(c: char) -> String {
        c.to_string().repeat(64)
    }
    fn input_hash() -> String {
        hash('1')
    }
    fn h_a() -> String {
        hash('a')
    }
    fn h_b() -> String {
        hash('b')
    }
    fn h_child() -> String {
        hash('c')
    }
    fn input_pair() -> (String, String) {
        (input_source_id(INV), input_hash())
    }
    fn child_pair() -> (String, String) {
        (invocation_source_id(CHILD), h_child())
    }

    /// A span in the invocation's trace, parented to the root.
    fn span(name: SpanName, id: u64, start_ns: u64, end_ns: u64) -> SpanRecord {
        SpanRecord {
            name: name.as_str().to_string(),
            trace_id: TRACE,
            span_id: SpanId(id),
            parent_id: Some(SpanId(ROOT)),
            trace_state: TraceState::default(),
            kind: SpanKind::Internal,
            start_ns,
            end_ns,
            status: Status::default(),
            attributes: Attributes::default(),
            events: Vec::new(),
            links: Vec::new(),
            resource: Default::default(),
        }
    }

    /// The builder's modifiers.
    trait Build {
        fn with(self, key: &str, value: &str) -> Self;
        fn under(self, parent: Option<u64>) -> Self;
        fn in_trace(self, trace: u128) -> Self;
    }

    impl Build for SpanRecord {
        fn with(mut self, key: &str, value: &str) -> Self {
            self.attributes.set(key, value);
            self
        }
        fn under(mut self, parent: Option<u64>) -> Self {
            self.parent_id = parent.map(SpanId);
            self
        }
        fn in_trace(mut self, trace: u128) -> Self {
            self.trace_id = TraceId(trace);
            self
        }
    }

    /// The conductor's root, carrying the mode and the input hash.
    fn root(mode: &str) -> SpanRecord {
        span(SpanName::InvokeAgent, ROOT, 0, 100)
            .under(None)
            .with(attr::GROUNDING_MODE, mode)
            .with(attr::INPUT_HASH, &input_hash())
    }

    fn retrieval(id: u64, source_id: &str, content_hash: &str) -> SpanRecord {
        retrieval_at(id, source_id, content_hash, 10)
    }

    fn retrieval_at(id: u64, source_id: &str, content_hash: &str, start: u64) -> SpanRecord {
        span(SpanName::Retrieval, id, start, start + 5)
            .with(attr::SOURCE_ID, source_id)
            .with(attr::CONTENT_HASH, content_hash)
    }

    fn chat() -> SpanRecord {
        chat_at(50)
    }

    fn chat_at(start: u64) -> SpanRecord {
        span(SpanName::Chat, CHAT, start, start + 5)
    }

    fn envelope(mode: &str, payload: Option<Value>, evidence: &[(String, String)]) -> Value {
        let status = if payload.is_some() {
            "succeeded"
        } else {
            "abstained"
        };
        let evidence: Vec<Value> = evidence
            .iter()
            .map(|(s, h)| json!({"source_id": s, "content_hash": h}))
            .collect();
        json!({
            "invocation_id": INV,
            "grounding_mode": mode,
            "outcome": {"status": status},
            "payload": payload,
            "evidence": evidence,
        })
    }

    fn pair(source_id: &str, content_hash: &str) -> (String, String) {
        (source_id.to_string(), content_hash.to_string())
    }

    fn reference((source_id, content_hash): &(String, String)) -> Value {
        json!({"source_id": source_id, "content_hash": content_hash})
    }

    fn payload(grounded_on: &[(String, String)]) -> Value {
        let refs: Vec<Value> = grounded_on.iter().map(reference).collect();
        json!({"schema_class": "P", "grounded_on": refs})
    }

    fn violations<'r>(report: &'r GroundingReport, prefix: &str) -> Vec<&'r str> {
        report
            .violations
            .iter()
            .map(String::as_str)
            .filter(|v| v.starts_with(prefix))
            .collect()
    }

    // --- G0: structure ----------------------------------------------------------------------

    #[test]
    fn payload_without_grounded_on_is_a_violation_not_a_pass() {
        // The regression: an unrecognised payload shape used to make G2/G3 silently no-op.
        let records = [root("retrieval"), retrieval(R1, "S", &h_a())];
        let mystery = json!({"schema_class": "Mystery", "items": [{"id": "X"}]});
        let env = envelope("retrieval", Some(mystery), &[pair("S", &h_a())]);
        let report = lint(&records, &env);
        assert!(!report.passed);
        assert!(violations(&report, "G0").contains(
            &"G0: payload 'Mystery' lacks grounded_on; an ungroundable payload is a \
              violation, not a pass"
        ));
    }

    #[test]
    fn payload_without_schema_class_is_a_violation() {
        let records = [root("retrieval"), retrieval(R1, "S", &h_a())];
        let unclassed = json!({"grounded_on": [reference(&pair("S", &h_a()))]});
        let report = lint(
            &records,
            &envelope("retrieval", Some(unclassed), &[pair("S", &h_a())]),
        );
        assert_eq!(
            violations(&report, "G0"),
            ["G0: payload lacks schema_class"]
        );
    }

    #[test]
    fn payload_that_is_not_an_object_is_a_violation() {
        let records = [root("retrieval"), retrieval(R1, "S", &h_a())];
        let report = lint(&records, &envelope("retrieval", Some(json!([])), &[]));
        assert!(violations(&report, "G0").contains(&"G0: payload is not an object"));
    }

    #[test]
    fn envelope_mode_must_match_the_root_span() {
        let report = lint(&[root("none")], &envelope("input_only", None, &[]));
        assert_eq!(
            violations(&report, "G0"),
            ["G0: envelope declares grounding_mode 'input_only' but the root span carries 'none'"]
        );
        let mut bare = root("none");
        bare.attributes = Attributes::default();
        let report = lint(&[bare], &envelope("none", None, &[]));
        assert_eq!(
            report.violations,
            ["G0: envelope declares grounding_mode 'none' but the root span carries None"]
        );
    }

    #[test]
    fn missing_or_unknown_mode_fails() {
        let records = [root("retrieval")];
        let report = lint(&records, &envelope("telepathy", None, &[]));
        assert!(!report.passed);
        assert_eq!(report.mode.as_deref(), Some("telepathy"));
        assert_eq!(
            report.violations,
            ["G0: envelope declares no valid grounding_mode ('telepathy')"]
        );

        let mut env = envelope("retrieval", None, &[]);
        env.as_object_mut().unwrap().remove("grounding_mode");
        let report = lint(&records, &env);
        assert!(!report.passed && report.mode.is_none());
        assert_eq!(
            report.violations,
            ["G0: envelope declares no valid grounding_mode (None)"]
        );
    }

    #[test]
    fn an_invalid_mode_ends_the_lint_before_the_tree_is_reported() {
        // As in the reference: with no rule set to apply, only the mode is reported.
        let stray = chat().in_trace(7);
        let report = lint(&[root("retrieval"), stray], &envelope("", None, &[]));
        assert_eq!(report.mode, None);
        assert_eq!(
            report.violations,
            ["G0: envelope declares no valid grounding_mode ('')"]
        );
        assert_eq!(
            report.summary(),
            "grounding: FAILED [unknown mode]\n  - G0: envelope declares no valid grounding_mode ('')"
        );
    }

    #[test]
    fn exactly_one_root_span() {
        let report = lint(&[], &envelope("none", None, &[]));
        assert!(!report.passed);
        assert_eq!(
            report.violations,
            ["G0: expected exactly one invoke_agent span, found 0"]
        );
        let report = lint(&[root("none"), root("none")], &envelope("none", None, &[]));
        assert_eq!(
            report.violations,
            ["G0: expected exactly one invoke_agent span, found 2"]
        );
        assert_eq!(report.mode.as_deref(), Some("none"));
    }

    #[test]
    fn malformed_grounding_reference_is_a_violation() {
        let records = [root("retrieval"), retrieval(R1, "S", &h_a())];
        let half = json!({"schema_class": "P", "grounded_on": [{"source_id": "S"}]});
        let report = lint(
            &records,
            &envelope("retrieval", Some(half), &[pair("S", &h_a())]),
        );
        assert!(
            violations(&report, "G0")
                .contains(&"G0: malformed grounding reference {'source_id': 'S'}")
        );
        let not_a_list = json!({"schema_class": "P", "grounded_on": {"source_id": "S"}});
        let report = lint(&records, &envelope("retrieval", Some(not_a_list), &[]));
        assert!(violations(&report, "G0").contains(&"G0: grounded_on is not a list"));
    }

    #[test]
    fn evidence_that_is_not_a_list_of_objects_is_a_violation() {
        // ddwire's own check: the reference raises on such an envelope.
        let records = [root("input_only")];
        let mut env = envelope("input_only", None, &[]);
        env["evidence"] = json!("input");
        let report = lint(&records, &env);
        assert_eq!(report.violations, ["G0: evidence is not a list"]);
        env["evidence"] = json!(["input", null]);
        let report = lint(&records, &env);
        assert_eq!(
            report.violations,
            [
                "G0: malformed evidence item 'input'",
                "G0: malformed evidence item None"
            ]
        );
    }

    #[test]
    fn g0_a_span_in_another_trace_is_reported() {
        let foreign = retrieval(R1, "S", &h_a()).in_trace(0xdead);
        let report = lint(
            &[root("input_only"), foreign],
            &envelope("input_only", None, &[]),
        );
        assert!(!report.passed);
        assert_eq!(
            violations(&report, "G0"),
            [format!(
                "G0: span 'retrieval' (0000000000000011) is in trace \
                 0000000000000000000000000000dead, not the invocation's trace {TRACE}"
            )]
        );
    }

    #[test]
    fn g0_a_span_not_descending_from_the_root_is_reported() {
        let orphan = retrieval(R1, "S", &h_a()).under(None);
        let dangling = chat().under(Some(0x99));
        let report = lint(
            &[root("none"), orphan, dangling],
            &envelope("none", None, &[]),
        );
        assert_eq!(
            report.violations,
            [
                "G0: span 'retrieval' (0000000000000011) does not descend from invoke_agent",
                "G0: span 'chat' (0000000000000020) does not descend from invoke_agent",
            ]
        );
        // Outside the tree, they escape the mode rules (R1, N1) but not G0.
        assert_eq!((report.retrieval_count, report.chat_count), (0, 0));
    }

    #[test]
    fn g0_a_span_below_a_descendant_descends_from_the_root() {
        let tool = span(SpanName::ExecuteTool, 0x30, 20, 40);
        let nested = chat().under(Some(0x30));
        let report = lint(
            &[root("input_only"), tool, nested],
            &envelope("input_only", None, &[]),
        );
        assert!(report.passed, "{:?}", report.violations);
        assert_eq!(report.chat_count, 1);
    }

    #[test]
    fn g0_a_non_root_span_carrying_a_conductor_attribute_is_reported() {
        let env = envelope("input_only", None, &[]);
        for key in CONDUCTOR_ATTRIBUTES {
            let labelled = chat().with(key, "succeeded");
            let report = lint(&[root("input_only"), labelled], &env);
            assert_eq!(
                report.violations,
                [format!(
                    "G0: span 'chat' (0000000000000020) sets {key}, which only the \
                     conductor's invoke_agent span may carry"
                )]
            );
        }
        // All three, named in CONDUCTOR_ATTRIBUTES order whatever order they were set in; and a
        // span outside the trace is reported for both.
        let all = chat()
            .with(attr::OUTCOME, "succeeded")
            .with(attr::INPUT_HASH, &input_hash())
            .with(attr::GROUNDING_MODE, "input_only")
            .in_trace(2);
        let report = lint(&[root("input_only"), all], &env);
        assert_eq!(
            report.violations,
            [
                format!(
                    "G0: span 'chat' (0000000000000020) is in trace \
                     00000000000000000000000000000002, not the invocation's trace {TRACE}"
                ),
                "G0: span 'chat' (0000000000000020) sets dd.grounding_mode, dd.input_hash, \
                 dd.outcome, which only the conductor's invoke_agent span may carry"
                    .to_string(),
            ]
        );
    }

    #[test]
    fn g0_an_unowned_attribute_is_not_a_violation() {
        // Spec invariant 10: dd.tool_name is informational; nothing depends on it.
        let tool = span(SpanName::ExecuteTool, 0x30, 20, 40)
            .with(attr::TOOL_NAME, "search")
            .with("gen_ai.operation.name", "execute_tool");
        let report = lint(&[root("none"), tool], &envelope("none", None, &[]));
        assert!(report.passed, "{:?}", report.violations);
    }

    #[test]
    fn a_parent_id_cycle_through_the_root_terminates() {
        // The reference would walk this forever.
        let looped = root("none").under(Some(0x30));
        let tool = span(SpanName::ExecuteTool, 0x30, 20, 40);
        let report = lint(&[looped, tool], &envelope("none", None, &[]));
        assert!(report.passed, "{:?}", report.violations);
    }

    // --- retrieval --------------------------------------------------------------------------

    #[test]
    fn retrieval_mode_passes_when_everything_was_retrieved_and_cited() {
        let records = [
            root("retrieval"),
            retrieval(R1, "S", &h_a()),
            retrieval(R2, "T", &h_b()),
            chat(),
        ];
        let payload = json!({
            "schema_class": "P",
            "grounded_on": [reference(&pair("S", &h_a()))],
            // Nested: walked at any depth.
            "parts": [{"grounded_on": [reference(&pair("T", &h_b()))]}],
        });
        let env = envelope(
            "retrieval",
            Some(payload),
            &[pair("S", &h_a()), pair("T", &h_b())],
        );
        let report = lint(&records, &env);
        assert!(report.passed, "{:?}", report.violations);
        assert_eq!((report.retrieval_count, report.chat_count), (2, 1));
    }

    #[test]
    fn g1_chat_before_or_without_retrieval() {
        let env = envelope("retrieval", None, &[]);
        let early = [
            root("retrieval"),
            chat_at(5),
            retrieval_at(R1, "S", &h_a(), 10),
        ];
        assert_eq!(
            violations(&lint(&early, &env), "G1"),
            ["G1: chat span 0000000000000020 started before the first retrieval span ended"]
        );
        let alone = [root("retrieval"), chat()];
        assert_eq!(
            lint(&alone, &env).violations,
            ["G1: a chat span exists but no retrieval span does"]
        );
    }

    #[test]
    fn g1_compares_with_the_first_retrieval_to_end() {
        // A chat may start once any retrieval has ended, even while another is still open.
        let env = envelope("retrieval", None, &[]);
        let records = [
            root("retrieval"),
            retrieval_at(R1, "S", &h_a(), 10),
            span(SpanName::Retrieval, R2, 12, 90)
                .with(attr::SOURCE_ID, "T")
                .with(attr::CONTENT_HASH, &h_b()),
            chat_at(15),
        ];
        assert!(lint(&records, &env).passed);
        let records = [
            root("retrieval"),
            retrieval_at(R1, "S", &h_a(), 10),
            chat_at(14),
        ];
        assert!(!lint(&records, &env).passed);
    }

    #[test]
    fn g1_reports_chats_in_the_reference_walk_order() {
        // Depth first from a stack: the root's last child is expanded before its first.
        let env = envelope("retrieval", None, &[]);
        let records = [
            root("retrieval"),
            span(SpanName::ExecuteTool, 0x30, 1, 9),
            span(SpanName::Chat, 0x21, 2, 3).under(Some(0x30)),
            span(SpanName::Chat, 0x22, 4, 5),
            retrieval_at(R1, "S", &h_a(), 10),
        ];
        assert_eq!(
            violations(&lint(&records, &env), "G1"),
            [
                "G1: chat span 0000000000000022 started before the first retrieval span ended",
                "G1: chat span 0000000000000021 started before the first retrieval span ended",
            ]
        );
    }

    #[test]
    fn g2_asserted_identity_must_match_a_retrieval_on_id_and_hash() {
        let records = [root("retrieval"), retrieval(R1, "S", &h_a())];
        let smuggled = payload(&[pair("S", &h_a()), pair("X", &h_a())]);
        let report = lint(
            &records,
            &envelope("retrieval", Some(smuggled), &[pair("S", &h_a())]),
        );
        assert_eq!(
            violations(&report, "G2"),
            ["G2: payload rests on 'X' (aaaaaaaaaaaa…) which was not retrieved in this invocation"]
        );
        let wrong_hash = payload(&[pair("S", &h_b())]);
        let report = lint(
            &records,
            &envelope("retrieval", Some(wrong_hash), &[pair("S", &h_a())]),
        );
        assert_eq!(
            violations(&report, "G2"),
            ["G2: payload rests on 'S' (bbbbbbbbbbbb…) which was not retrieved in this invocation"]
        );
    }

    #[test]
    fn g2_succeeded_payload_resting_on_nothing() {
        let records = [root("retrieval"), retrieval(R1, "S", &h_a())];
        let report = lint(
            &records,
            &envelope("retrieval", Some(payload(&[])), &[pair("S", &h_a())]),
        );
        assert_eq!(
            violations(&report, "G2"),
            ["G2: a succeeded retrieval-mode payload rests on nothing"]
        );
    }

    #[test]
    fn g3_and_g4_evidence_agrees_with_trace_and_payload() {
        let records = [root("retrieval"), retrieval(R1, "S", &h_a())];
        let cited = payload(&[pair("S", &h_a())]);
        // Evidence cites something never retrieved.
        let report = lint(
            &records,
            &envelope(
                "retrieval",
                Some(cited.clone()),
                &[pair("S", &h_a()), pair("Z", &h_b())],
            ),
        );
        assert_eq!(
            report.violations,
            ["G3: evidence 'Z' hash bbbbbbbbbbbb… not in trace"]
        );
        // Evidence omits something the payload rests on.
        let report = lint(&records, &envelope("retrieval", Some(cited), &[]));
        assert_eq!(
            report.violations,
            ["G4: payload rests on 'S' (aaaaaaaaaaaa…) absent from evidence"]
        );
    }

    #[test]
    fn only_owned_attributes_identify_a_retrieval() {
        // A retrieval that names its record under unowned keys retrieved nothing the
        // linter can see.
        let mut unlabelled = span(SpanName::Retrieval, R1, 10, 15);
        unlabelled.attributes.set("source_id", "S");
        unlabelled.attributes.set("content_hash", h_a());
        let report = lint(
            &[root("retrieval"), unlabelled],
            &envelope(
                "retrieval",
                Some(payload(&[pair("S", &h_a())])),
                &[pair("S", &h_a())],
            ),
        );
        assert_eq!(
            report.violations,
            [
                "G2: payload rests on 'S' (aaaaaaaaaaaa…) which was not retrieved in this \
                 invocation",
                "G3: evidence 'S' hash aaaaaaaaaaaa… not in trace",
            ]
        );
    }

    // --- E1: evidence content ---------------------------------------------------------------

    /// What a reader is shown about a cited record is what the hash covers.
    fn e1_evidence_content_must_hash_to_its_content_hash(mode: &str) {
        let fairsharing = Canonicalisation::FairsharingRecord;
        let record = json!({"fairsharing_id": "S", "name": "ISO 8601", "status": "ready"});
        let digest = fairsharing.content_hash(&record).unwrap();
        let item = json!({
            "source_id": "S",
            "canonicalisation": fairsharing.name(),
            "content_hash": digest,
            "content": fairsharing.project(&record).unwrap(),
        });
        let env = json!({
            "invocation_id": INV, "grounding_mode": mode, "outcome": {}, "evidence": [item],
        });
        let records = [root(mode)];
        assert!(violations(&lint(&records, &env), "E1").is_empty());

        let with_item = |item: Value| {
            let mut env = env.clone();
            env["evidence"] = json!([item]);
            lint(&records, &env)
        };
        let mut renamed = item.clone();
        renamed["content"]["name"] = json!("ISO 8602");
        let report = with_item(renamed);
        assert!(!report.passed);
        assert_eq!(
            violations(&report, "E1"),
            [format!(
                "E1: evidence 'S' content does not hash to its content_hash ({}…) under \
                 'json-sorted-utf8-v1'",
                &digest[..12]
            )]
        );

        let mut listed = item.clone();
        listed["content"] = json!(["S"]);
        assert_eq!(
            violations(&with_item(listed), "E1"),
            ["E1: evidence 'S' content is not an object"]
        );
        let mut vibes = item.clone();
        vibes["canonicalisation"] = json!("md5-of-vibes");
        assert_eq!(
            violations(&with_item(vibes), "E1"),
            [
                "E1: evidence 'S': unknown canonicalisation 'md5-of-vibes'; registered: \
                 ['dd-envelope-json-v1', 'dd-input-json-v1', 'dd-json-document-v1', \
                 'json-sorted-utf8-v1']"
            ]
        );
    }

    #[test]
    fn e1_evidence_content_must_hash_to_its_content_hash_retrieval() {
        e1_evidence_content_must_hash_to_its_content_hash("retrieval");
    }

    #[test]
    fn e1_evidence_content_must_hash_to_its_content_hash_input_only() {
        e1_evidence_content_must_hash_to_its_content_hash("input_only");
    }

    #[test]
    fn e1_evidence_content_must_hash_to_its_content_hash_none() {
        e1_evidence_content_must_hash_to_its_content_hash("none");
    }

    #[test]
    fn e1_evidence_content_must_hash_to_its_content_hash_delegation() {
        e1_evidence_content_must_hash_to_its_content_hash("delegation");
    }

    #[test]
    fn e1_does_not_apply_to_evidence_without_content() {
        let records = [root("retrieval"), retrieval(R1, "S", &h_a())];
        let env = envelope(
            "retrieval",
            Some(payload(&[pair("S", &h_a())])),
            &[pair("S", &h_a())],
        );
        assert!(lint(&records, &env).passed);
        let mut null_content = env.clone();
        null_content["evidence"][0]["content"] = Value::Null;
        assert!(lint(&records, &null_content).passed);
    }

    // --- input_only and none ----------------------------------------------------------------

    fn input_grounded_payload() -> Value {
        payload(&[input_pair()])
    }

    #[test]
    fn input_only_permits_chat_without_retrieval() {
        let env = envelope(
            "input_only",
            Some(input_grounded_payload()),
            &[input_pair()],
        );
        let report = lint(&[root("input_only"), chat()], &env);
        assert!(report.passed, "{:?}", report.violations);
    }

    #[test]
    fn input_only_forbids_retrieval_and_foreign_citations() {
        let env = envelope(
            "input_only",
            Some(input_grounded_payload()),
            &[input_pair()],
        );
        let report = lint(&[root("input_only"), retrieval(R1, "S", &h_a())], &env);
        assert_eq!(
            violations(&report, "R1"),
            ["R1: 1 retrieval span(s) in an agent that declared none"]
        );

        let foreign = payload(&[pair("S", &h_a())]);
        let report = lint(
            &[root("input_only")],
            &envelope("input_only", Some(foreign), &[pair("S", &h_a())]),
        );
        let only = format!("'input:{INV}' (111111111111…)");
        assert_eq!(
            violations(&report, "R2"),
            [
                format!(
                    "R2: payload cites 'S' (aaaaaaaaaaaa…); an input-grounded agent may cite \
                     only {only}"
                ),
                format!(
                    "R2: evidence cites 'S' (aaaaaaaaaaaa…); an input-grounded agent may cite \
                     only {only}"
                ),
            ]
        );

        let wrong_hash = payload(&[pair(&input_source_id(INV), &h_b())]);
        let report = lint(
            &[root("input_only")],
            &envelope("input_only", Some(wrong_hash), &[]),
        );
        assert_eq!(violations(&report, "R2").len(), 1);
        assert_eq!(
            violations(&report, "R3"),
            ["R3: a succeeded input-grounded envelope cites no evidence"]
        );
    }

    #[test]
    fn none_mode_forbids_chat() {
        let env = envelope("none", Some(input_grounded_payload()), &[input_pair()]);
        assert!(lint(&[root("none")], &env).passed);
        assert_eq!(
            lint(&[root("none"), chat()], &env).violations,
            ["N1: 1 chat span(s) in an agent that declared no model call"]
        );
    }

    // --- delegation -------------------------------------------------------------------------

    fn delegation_envelope(
        grounded_on: &[(String, String)],
        evidence: &[(String, String)],
    ) -> Value {
        let reply = json!({
            "schema_class": "Reply",
            "grounded_on": grounded_on.iter().map(reference).collect::<Vec<_>>(),
        });
        let mut env = envelope("delegation", Some(reply), evidence);
        env["delegations"] = json!([{
            "delegated_invocation_id": CHILD,
            "delegated_agent_id": "hello.world",
            "delegated_agent_version": "0.1.0",
            "delegated_status": "succeeded",
            "content_hash": h_child(),
        }]);
        env
    }

    #[test]
    fn delegation_mode_passes_citing_input_and_a_recorded_child() {
        let env = delegation_envelope(&[input_pair(), child_pair()], &[input_pair(), child_pair()]);
        // A model call is allowed.
        let report = lint(&[root("delegation"), chat()], &env);
        assert!(report.passed, "{:?}", report.violations);
    }

    #[test]
    fn delegation_mode_rejects_an_unrecorded_or_altered_child() {
        let other = (format!("invocation:{}0", &INV[..INV.len() - 1]), h_child());
        let report = lint(
            &[root("delegation")],
            &delegation_envelope(&[input_pair(), other.clone()], &[input_pair(), other]),
        );
        assert_eq!(
            violations(&report, "D1"),
            [
                "D1: payload rests on 'invocation:01a06cdb-985f-7375-9aa2-37be29f0f2a0' \
                 (cccccccccccc…), which is neither the input nor a delegation recorded by the \
                 conductor"
            ]
        );
        assert_eq!(
            violations(&report, "D2"),
            [
                "D2: evidence 'invocation:01a06cdb-985f-7375-9aa2-37be29f0f2a0' \
                 (cccccccccccc…) is neither the input nor a delegation recorded by the conductor"
            ]
        );

        let altered = (child_pair().0, h_a());
        let report = lint(
            &[root("delegation")],
            &delegation_envelope(&[input_pair(), altered.clone()], &[input_pair(), altered]),
        );
        assert_eq!(violations(&report, "D1").len(), 1);
        assert_eq!(violations(&report, "D2").len(), 1);
    }

    #[test]
    fn delegation_mode_forbids_retrieval_and_requires_the_input() {
        let env = delegation_envelope(&[input_pair()], &[input_pair()]);
        let report = lint(&[root("delegation"), retrieval(R1, "S", &h_a())], &env);
        assert_eq!(
            violations(&report, "R1"),
            ["R1: 1 retrieval span(s) in an agent that declared none"]
        );
        let report = lint(
            &[root("delegation")],
            &delegation_envelope(&[child_pair()], &[child_pair()]),
        );
        assert_eq!(
            report.violations,
            ["D3: a succeeded delegation envelope does not cite its input in evidence"]
        );
        let report = lint(
            &[root("delegation")],
            &delegation_envelope(&[child_pair()], &[input_pair()]),
        );
        assert_eq!(
            violations(&report, "G4"),
            [format!(
                "G4: payload rests on 'invocation:{CHILD}' (cccccccccccc…) absent from evidence"
            )]
        );
    }

    // --- The report -------------------------------------------------------------------------

    #[test]
    fn summary_names_the_mode() {
        let report = lint(&[root("none")], &envelope("none", None, &[]));
        assert!(report.summary().starts_with("grounding: passed [none]"));
        assert_eq!(
            report.summary(),
            "grounding: passed [none] (0 retrieval, 0 chat spans)"
        );
        let records = [root("retrieval"), retrieval(R1, "S", &h_a()), chat()];
        let report = lint(&records, &envelope("retrieval", None, &[pair("Z", &h_b())]));
        assert_eq!(
            report.summary(),
            "grounding: FAILED [retrieval]\n  - G3: evidence 'Z' hash bbbbbbbbbbbb… not in trace"
        );
        let report = lint(
            &[root("none"), retrieval(R1, "S", &h_a()), chat()],
            &envelope("none", None, &[pair("Z", &h_b())]),
        );
        assert_eq!(
            report.summary(),
            format!(
                "grounding: FAILED [none]\n  - R1: 1 retrieval span(s) in an agent that \
                 declared none\n  - R2: evidence cites 'Z' (bbbbbbbbbbbb…); an input-grounded \
                 agent may cite only 'input:{INV}' (111111111111…)\n  - N1: 1 chat span(s) in \
                 an agent that declared no model call"
            )
        );
    }

    // --- lint_run and lint_stored -----------------------------------------------------------

    /// The root with one stage event `name` whose decision is `decision`.
    fn root_with_stage(mode: &str, name: &str, decision: &str) -> SpanRecord {
        let mut root = root(mode);
        let mut attributes = Attributes::default();
        attributes.set("dd.stage.decision", decision);
        root.events.push(crate::trace::Event {
            name: name.into(),
            time_ns: 1,
            attributes,
        });
        root
    }

    #[test]
    fn a_run_refused_before_its_agent_ran_is_not_linted_and_says_so() {
        let env = envelope("none", None, &[]);
        for (stage, decision, why) in [
            (
                "policy_gate",
                "not_enabled",
                "the profile does not enable it",
            ),
            (
                "policy_gate",
                "class_mismatch",
                "refused it, class_mismatch",
            ),
            (
                "policy_gate",
                "requires_approval",
                "referred the run for approval",
            ),
            (
                "input_check",
                "refused",
                "the input check refused its input",
            ),
        ] {
            let report = lint_run(&[root_with_stage("none", stage, decision)], &env);
            assert!(!report.passed, "{stage}");
            assert!(
                report.not_run.as_deref().is_some_and(|w| w.contains(why)),
                "{report:?}"
            );
            assert!(report.summary().starts_with("grounding: not run [none] ("));
        }
        // A permitted, accepted run is linted.
        let report = lint_run(&[root_with_stage("none", "policy_gate", "permitted")], &env);
        assert_eq!(report.not_run, None);
    }

    #[test]
    fn no_span_an_agent_sends_can_make_the_linter_stand_down() {
        let env = envelope("none", None, &[]);
        // A second root claiming a refusal: the tree has two roots, and G0 says so.
        let mut forged = root_with_stage("none", "policy_gate", "not_enabled");
        forged.span_id = SpanId(ROOT + 1000);
        let report = lint_run(&[root("none"), forged], &env);
        assert_eq!(report.not_run, None);
        assert!(
            report.violations.iter().any(|v| v.starts_with("G0")),
            "{report:?}"
        );
        // A root that records an agent call was not refused, whatever else it says.
        let mut called = root_with_stage("none", "policy_gate", "not_enabled");
        called.events.push(crate::trace::Event {
            name: "agent_call".into(),
            time_ns: 2,
            attributes: Attributes::default(),
        });
        assert_eq!(lint_run(&[called], &env).not_run, None);
    }

    #[test]
    fn a_withheld_result_is_linted_offline_with_the_agents_reply_put_back() {
        // The agent claimed success and cited what it never retrieved; the harness withheld it.
        let claimed = root("input_only").with(attr::OUTCOME, "succeeded");
        let cited = json!({"source_id": "src:elsewhere", "content_hash": "0".repeat(64)});
        let reply = json!({"result": {
            "outcome": {"status": "succeeded", "statement": "Answered."},
            "payload": {"schema_class": "Reply", "grounded_on": [cited]},
            "evidence": [],
        }, "spans": []});
        let mut stored = envelope("input_only", None, &[]);
        stored["outcome"] = json!({"status": "failed", "statement": "Output withheld."});
        stored["problem"] =
            json!({"type": "https://w3id.org/data-director/problems/grounding-violation"});
        assert!(is_withheld(std::slice::from_ref(&claimed), &stored));
        let offline = lint_stored(std::slice::from_ref(&claimed), &stored, Some(&reply));
        assert!(!offline.passed);
        assert!(
            offline.violations.iter().any(|v| v.starts_with("R2")),
            "{offline:?}"
        );
        // Without the reply, only what was stored can be linted.
        let bare = lint_stored(std::slice::from_ref(&claimed), &stored, None);
        assert!(
            !bare.violations.iter().any(|v| v.starts_with("R2")),
            "{bare:?}"
        );
        // A result the contract withheld (no grounding problem) is recognised by the root's
        // claim of success.
        stored["problem"] = json!({"type": "https://w3id.org/data-director/problems/agent-error"});
        assert!(is_withheld(std::slice::from_ref(&claimed), &stored));
        assert!(!is_withheld(&[root("input_only")], &stored));
    }
}
