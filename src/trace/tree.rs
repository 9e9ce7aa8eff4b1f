//! A span tree as text, for people: `ddwire show` and `ddwire demo` print one.
//!
//! ```text
//! invoke_agent  hello.world  input_only → succeeded  (1.204 ms)
//! ├─ policy_gate  (0.004 ms)
//! └─ chat  model ddwire-template-v1  tokens 2 in / 5 out  (0.011 ms)
//! ```
//!
//! Spans whose parent is not in the set are printed as roots, each with the trace it names,
//! so a span outside the invocation's tree stands out rather than disappearing.

use super::names::attr;
use super::record::{AttrValue, SpanRecord};
use std::collections::HashMap;

/// Render `records` as an indented tree, children in start order.
pub fn render_tree(records: &[SpanRecord]) -> String {
    let ids: std::collections::HashSet<_> = records.iter().map(|r| r.span_id).collect();
    let mut children: HashMap<Option<super::SpanId>, Vec<&SpanRecord>> = HashMap::new();
    for r in records {
        let parent = r.parent_id.filter(|p| ids.contains(p));
        children.entry(parent).or_default().push(r);
    }
    for list in children.values_mut() {
        list.sort_by_key(|r| (r.start_ns, r.span_id));
    }
    let mut out = String::new();
    let roots = children.get(&None).cloned().unwrap_or_default();
    let many_traces = roots.iter().any(|r| r.trace_id != roots[0].trace_id);
    for root in &roots {
        out.push_str(&label(root));
        if many_traces || root.parent_id.is_some() {
            out.push_str(&format!("  [trace {}]", root.trace_id));
        }
        out.push('\n');
        walk(root, &children, "", &mut out);
    }
    out
}

fn walk(
    node: &SpanRecord,
    children: &HashMap<Option<super::SpanId>, Vec<&SpanRecord>>,
    prefix: &str,
    out: &mut String,
) {
    let kids = children
        .get(&Some(node.span_id))
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for (i, child) in kids.iter().enumerate() {
        let last = i + 1 == kids.len();
        out.push_str(prefix);
        out.push_str(if last { "└─ " } else { "├─ " });
        out.push_str(&label(child));
        out.push('\n');
        let deeper = format!("{prefix}{}", if last { "   " } else { "│  " });
        walk(child, children, &deeper, out);
    }
}

fn text(r: &SpanRecord, key: &str) -> Option<String> {
    match r.owned(key)? {
        AttrValue::String(s) => Some(s.clone()),
        AttrValue::Int(i) => Some(i.to_string()),
        other => Some(format!("{other:?}")),
    }
}

/// One line for a span: its name and the owned attributes a reader looks for.
fn label(r: &SpanRecord) -> String {
    let mut parts = vec![r.name.clone()];
    if let Some(agent) = text(r, attr::AGENT_ID) {
        parts.push(agent);
    }
    if let Some(mode) = text(r, attr::GROUNDING_MODE) {
        match text(r, attr::OUTCOME) {
            Some(outcome) => parts.push(format!("{mode} → {outcome}")),
            None => parts.push(mode),
        }
    }
    if let Some(source) = text(r, attr::SOURCE_ID) {
        parts.push(source);
    }
    if let Some(model) = text(r, attr::MODEL_ID) {
        parts.push(format!("model {model}"));
    }
    if let (Some(i), Some(o)) = (text(r, attr::INPUT_TOKENS), text(r, attr::OUTPUT_TOKENS)) {
        parts.push(format!("tokens {i} in / {o} out"));
    }
    if !r.links.is_empty() {
        let links: Vec<String> = r
            .links
            .iter()
            .map(|l| format!("{}/{}", l.trace_id, l.span_id))
            .collect();
        parts.push(format!("linked to {}", links.join(", ")));
    }
    let ms = r.end_ns.saturating_sub(r.start_ns) as f64 / 1e6;
    format!("{}  ({ms:.3} ms)", parts.join("  "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Tracer;

    #[test]
    fn a_tree_nests_children_under_their_parent() {
        let tracer = Tracer::new("t");
        let root = tracer.invoke_agent("hello.world");
        tracer.policy_gate("hello.world").end();
        tracer.chat("m").end();
        let trace_id = root.context().trace_id;
        root.end();
        let text = render_tree(&tracer.take(trace_id));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("invoke_agent  hello.world"), "{text}");
        assert!(lines[1].starts_with("├─ policy_gate"), "{text}");
        assert!(lines[2].starts_with("└─ chat  model m"), "{text}");
    }
}
