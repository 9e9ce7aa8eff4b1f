//! Conversations, as the harness's `GET /conversations` routes show them: views over the
//! run store's index, kept with the routes rather than in the store, which only reads and
//! writes runs.

use super::identity::Access;
use super::store::RunReader;
use super::store::index::field;
use crate::harness::Result;
use crate::json::python;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::ops::ControlFlow;

/// One row per `conversation_id` that any stored run carries, most recently active first
/// (by `last_completed_at`, ties in index order):
///
/// - `conversation_id`;
/// - `turns`: the runs a caller made (no `parent_invocation_id`), as the reference counts;
/// - `runs`: every run in the conversation, delegated children included;
/// - `agent_id` and `started_at`: the agent and `completed_at` of the first turn;
/// - `last_completed_at` and `last_status`: the `completed_at` and status of the last turn;
/// - `agent_ids`: every agent that ran in it, children's included, in first-seen order.
///
/// The first six are the reference's summary (`workbench.conversations`). A conversation
/// with no turn yet (a delegated child is stored before its parent) is listed too, its
/// first and last fields taken from its runs. The index is streamed; memory grows with the
/// number of conversations, not of runs. Only the runs `access` may see count: a conversation
/// none of whose runs it sees is not listed.
pub(crate) fn list(store: &RunReader, access: &Access) -> Result<Vec<Value>> {
    let mut order: Vec<Conversation> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    store.oldest_first(|e| {
        if !access.sees_envelope(&e) {
            return ControlFlow::Continue(());
        }
        if let Some(id) = e
            .get("conversation_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
        {
            let i = *at.entry(id.to_string()).or_insert_with(|| {
                order.push(Conversation {
                    id: id.to_string(),
                    ..Conversation::default()
                });
                order.len() - 1
            });
            order[i].add(&e);
        }
        ControlFlow::Continue(())
    })?;
    let mut rows: Vec<Value> = order.into_iter().map(Conversation::row).collect();
    sort(&mut rows);
    Ok(rows)
}

/// The envelopes of one conversation, delegated children included, in index order; `None`
/// if no stored run that `access` may see carries `conversation_id`.
pub(crate) fn runs_of(
    store: &RunReader,
    conversation_id: &str,
    access: &Access,
) -> Result<Option<Vec<Value>>> {
    let mut out = Vec::new();
    store.oldest_first(|e| {
        if e.get("conversation_id").and_then(Value::as_str) == Some(conversation_id)
            && access.sees_envelope(&e)
        {
            out.push(e);
        }
        ControlFlow::Continue(())
    })?;
    Ok((!out.is_empty()).then_some(out))
}

/// One conversation's summary, built while streaming the index.
#[derive(Default)]
struct Conversation {
    id: String,
    turns: u64,
    runs: u64,
    agent_ids: Vec<Value>,
    /// `(agent_id, completed_at)` of the first turn, and of the first run.
    first_turn: Option<(Value, Value)>,
    first_run: Option<(Value, Value)>,
    /// `(completed_at, status)` of the last turn, and of the last run.
    last_turn: Option<(Value, Value)>,
    last_run: Option<(Value, Value)>,
}

impl Conversation {
    fn add(&mut self, e: &Value) {
        let agent = field(e, &["agent_id"]);
        let completed = field(e, &["completed_at"]);
        let last = (completed.clone(), field(e, &["outcome", "status"]));
        // As the reference tests it: an envelope with a (non-empty) parent is not a turn.
        let is_turn =
            !matches!(e.get("parent_invocation_id"), Some(Value::String(p)) if !p.is_empty());
        self.runs += 1;
        if !agent.is_null() && !self.agent_ids.contains(&agent) {
            self.agent_ids.push(agent.clone());
        }
        if is_turn {
            self.turns += 1;
            self.first_turn
                .get_or_insert_with(|| (agent.clone(), completed.clone()));
            self.last_turn = Some(last.clone());
        }
        self.first_run.get_or_insert((agent, completed));
        self.last_run = Some(last);
    }

    fn row(self) -> Value {
        let (agent_id, started_at) = self.first_turn.or(self.first_run).unwrap_or_default();
        let (last_completed_at, last_status) = self.last_turn.or(self.last_run).unwrap_or_default();
        json!({
            "conversation_id": self.id,
            "agent_id": agent_id,
            "turns": self.turns,
            "runs": self.runs,
            "started_at": started_at,
            "last_completed_at": last_completed_at,
            "last_status": last_status,
            "agent_ids": self.agent_ids,
        })
    }
}

/// Sort conversation rows newest first, as the reference sorts them (by
/// `str(last_completed_at)`); the sort is stable, so ties keep index order.
fn sort(rows: &mut [Value]) {
    rows.sort_by_cached_key(|row| std::cmp::Reverse(python::py_str(&row["last_completed_at"])));
}
