//! A stored run with the runs it delegated to, read for [`crate::trace::waterfall`].
//!
//! A delegated child keeps its own trace and its own run directory; the parent names it twice:
//! its `delegate` span's `dd.source_id` is `invocation:<child id>`, and its envelope's
//! `delegations` lists it. Both are followed, children of children too (at most
//! `MAX_DEPTH` runs deep; a run is read once). A child that cannot be read is listed with
//! the reason, never dropped in silence. Read-only: nothing in the store changes.

use super::store::RunReader;
use crate::harness::Result;
use crate::trace::waterfall::{MAX_DEPTH, RunView};
use std::collections::HashSet;

/// Why a delegated run is missing when the store holds no such run.
pub(crate) const NO_SUCH_RUN: &str = "the run store holds no such run";

/// The run `invocation_id` with its delegated runs, or `None` if the store holds no such run.
/// Span lines that are not span JSON are skipped and counted in
/// `RunView::unreadable_spans`.
pub(crate) fn load(reader: &RunReader, invocation_id: &str) -> Result<Option<RunView>> {
    let mut seen = HashSet::new();
    load_at(reader, invocation_id, 0, &mut seen)
}

fn load_at(
    reader: &RunReader,
    id: &str,
    depth: usize,
    seen: &mut HashSet<String>,
) -> Result<Option<RunView>> {
    let Some(envelope) = reader.envelope(id)? else {
        return Ok(None);
    };
    seen.insert(id.to_string());
    let mut view = RunView {
        envelope,
        grounding: reader.grounding(id)?,
        decision: super::approval::of_run(reader, id)?,
        ..RunView::default()
    };
    if let Some(lines) = reader.spans(id)? {
        for line in lines.lines().filter(|l| !l.trim().is_empty()) {
            match crate::trace::from_json(line) {
                Ok(span) => view.spans.push(span),
                Err(_) => view.unreadable_spans += 1,
            }
        }
    }
    if depth + 1 >= MAX_DEPTH {
        return Ok(Some(view));
    }
    for child in view.child_ids() {
        if seen.contains(&child) {
            continue;
        }
        match load_at(reader, &child, depth + 1, seen) {
            Ok(Some(c)) => view.children.push(c),
            Ok(None) => view.missing.push((child, NO_SUCH_RUN.into())),
            Err(e) => view.missing.push((child, e.to_string())),
        }
    }
    Ok(Some(view))
}
