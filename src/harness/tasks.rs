//! The harness's A2A tasks: what a stored run looks like as a task, and `ListTasks` (A2A 1.0
//! §3.1.4) over the run store, scoped to the caller's principal.
//!
//! A harness task is a run: its id is the run's `invocation_id`, its context the request's
//! `conversation_id` (or, outside a conversation, the run's own id), and its status time the
//! envelope's `completed_at`. A stored run is `completed`, whatever its outcome (the envelope
//! says that), except a run whose task the caller canceled (problem `agent-error`, detail
//! `<agent_id>: Canceled: …`, see [`super::conductor::CANCELED`]), which is `canceled`. Its
//! history is the stored request as one data part; its artifact the envelope.
//!
//! `ListTasks` lists the caller's runs, newest first: first the tasks still running in this
//! harness (from the endpoint's memory), then the stored runs whose `acting_for.principal_id`
//! is the caller's, read from the store's index newest first a block at a time. A page token
//! marks either a place among the running tasks (an offset: that part of the list changes as
//! tasks finish) or the last stored run shown.

use super::conductor::CANCELED;
use super::store::{Query, RunReader, StoreError};
use crate::contract::problem::ProblemType;
use crate::harness::{HarnessError, Result};
use crate::ids::is_uuid7;
use crate::wire::a2a::endpoint::{A2aError, ListQuery, TaskPage, TaskStore};
use crate::wire::a2a::model::{Artifact, Message, Part, Role, Task, TaskState};
use crate::wire::a2a::v10::{decode_token, encode_token, invalid_token};
use crate::wire::a2a::{artifact, meta};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::ops::ControlFlow;

/// The context of a run's task: its conversation, else its own id.
pub(crate) fn context_of(invocation_id: &str, conversation_id: Option<&str>) -> String {
    conversation_id
        .filter(|c| !c.is_empty())
        .unwrap_or(invocation_id)
        .to_string()
}

/// Whether a stored envelope records a run whose task the caller canceled.
pub(crate) fn is_canceled_run(envelope: &Value) -> bool {
    let text = |at: &str| envelope.pointer(at).and_then(Value::as_str);
    let marker = format!("{}: {CANCELED}: ", text("/agent_id").unwrap_or(""));
    text("/problem/type") == Some(ProblemType::AgentError.uri().as_str())
        && text("/problem/detail").is_some_and(|d| d.starts_with(&marker))
}

/// The metadata a run's task carries: the run's trace id (the envelope's
/// `telemetry.trace_id`) as `dd.trace_id`, so a caller finds the run's trace without reading
/// the envelope. Set once the run is stored, so it never names a trace that was not.
pub(crate) fn run_metadata(envelope: &Value) -> Option<Map<String, Value>> {
    let trace_id = envelope.pointer("/telemetry/trace_id")?.as_str()?;
    let mut metadata = Map::new();
    metadata.insert(meta::TRACE_ID.into(), Value::String(trace_id.to_string()));
    Some(metadata)
}

/// A stored envelope's `invocation_id`, empty if it has none.
pub(crate) fn invocation_id(envelope: &Value) -> String {
    envelope
        .get("invocation_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// A stored run as a task. `request` is the stored request (`None`: history left out);
/// `artifacts`: whether to show the envelope. Every id in it is derived from the run's, so two
/// calls give the same task.
pub(crate) fn run_task(envelope: Value, request: Option<Value>, artifacts: bool) -> Task {
    let id = invocation_id(&envelope);
    let context_id = context_of(&id, envelope.get("conversation_id").and_then(Value::as_str));
    let timestamp = envelope
        .get("completed_at")
        .and_then(Value::as_str)
        .map(str::to_string);
    let state = if is_canceled_run(&envelope) {
        TaskState::Canceled
    } else {
        TaskState::Completed
    };
    let history = request
        .map(|request| {
            let mut asked = Message::new(Role::User, vec![Part::data(request)]);
            asked.message_id = format!("{id}-request");
            asked.task_id = Some(id.clone());
            asked.context_id = Some(context_id.clone());
            vec![asked]
        })
        .unwrap_or_default();
    let metadata = run_metadata(&envelope);
    let artifacts = if artifacts {
        let mut envelope_artifact = Artifact::new(artifact::ENVELOPE, vec![Part::data(envelope)]);
        envelope_artifact.artifact_id = format!("{id}-envelope");
        vec![envelope_artifact]
    } else {
        Vec::new()
    };
    Task {
        id,
        context_id,
        status: crate::wire::a2a::model::TaskStatus {
            state,
            message: None,
            timestamp,
        },
        artifacts,
        history,
        metadata,
    }
}

/// A stored run as a task, for `GetTask` on a run the endpoint no longer remembers (older than
/// its newest [`TASKS_KEPT`](crate::wire::a2a::endpoint::TASKS_KEPT), or answered before a
/// restart). The message that asked for it is not stored, so its history holds the stored
/// request.
pub(crate) fn stored_task(store: &RunReader, id: &str) -> Option<Task> {
    if !is_uuid7(id) {
        return None;
    }
    let envelope = store.envelope(id).ok().flatten()?;
    let request = store.request(id).ok().flatten().unwrap_or(Value::Null);
    Some(run_task(envelope, Some(request), true))
}

/// The caller's stored runs a listing selects, newest first, read through the run store's
/// index reader a block at a time ([`RunReader::newest_first`]), its principal filter
/// narrowing the scan: every one that passes `query`'s filters is counted, and those of the
/// page (from just after the run `after`, at most `room`) are kept, not the rest, so memory
/// stays flat whatever the store's size. The scan reads each envelope of the principal's runs,
/// since the status and context of a task are not in the index's head fields.
fn stored_runs(
    store: &RunReader,
    principal_id: Option<&str>,
    query: &ListQuery,
    after: Option<&str>,
    skip: &HashSet<String>,
    room: usize,
) -> Result<(Vec<Value>, usize, bool)> {
    let narrowed = Query {
        principal_id: principal_id.map(str::to_string),
        since: query.status_timestamp_after,
        ..Query::default()
    };
    let (mut page, mut total, mut more) = (Vec::new(), 0usize, false);
    let mut started = after.is_none();
    store.newest_first(&narrowed, |_, envelope| {
        let id = invocation_id(&envelope);
        // The store matches a principal by id or name; a task belongs to its principal id.
        let mine = principal_id.is_none_or(|p| {
            envelope
                .pointer("/acting_for/principal_id")
                .and_then(Value::as_str)
                == Some(p)
        });
        if !mine
            || skip.contains(&id)
            || !query.matches(
                &run_task(header(&envelope), None, false),
                completed_ns(&envelope),
            )
        {
            return ControlFlow::Continue(());
        }
        total += 1;
        if !started {
            started = after == Some(id.as_str());
        } else if page.len() < room {
            page.push(envelope);
        } else {
            more = true;
        }
        ControlFlow::Continue(())
    })?;
    if !started {
        // The run the token names is no longer listed: the token is stale.
        return Err(StoreError::NoSuchRun {
            reference: after.unwrap_or_default().to_string(),
            store: store.shown_root(),
        }
        .into());
    }
    Ok((page, total, more))
}

/// The fields of an envelope a task's filters read, without its payload.
fn header(envelope: &Value) -> Value {
    let mut h = serde_json::Map::new();
    for key in [
        "invocation_id",
        "agent_id",
        "conversation_id",
        "completed_at",
        "problem",
    ] {
        if let Some(v) = envelope.get(key) {
            h.insert(key.into(), v.clone());
        }
    }
    Value::Object(h)
}

fn completed_ns(envelope: &Value) -> i128 {
    envelope
        .get("completed_at")
        .and_then(Value::as_str)
        .and_then(crate::time::parse_rfc3339)
        .unwrap_or(0)
}

/// Where a page starts.
enum Start {
    /// At this offset among the running tasks.
    Running(usize),
    /// After this stored run.
    AfterRun(String),
}

/// `ListTasks` for `principal_id` (`None`: every principal, for an auditor): its tasks still running in `live` (the endpoint's store),
/// then its stored runs, filtered and paged as `query` asks.
pub(crate) fn list(
    live: &TaskStore,
    store: &RunReader,
    principal_id: Option<&str>,
    query: &ListQuery,
) -> std::result::Result<TaskPage, A2aError> {
    let token = query.page_token.as_deref().unwrap_or_default();
    let start = match &query.page_token {
        None => Start::Running(0),
        Some(token) => {
            let marked = decode_token(token).ok_or_else(|| invalid_token(token))?;
            if let Some(n) = marked.strip_prefix("l:") {
                Start::Running(n.parse().map_err(|_| invalid_token(token))?)
            } else if let Some(id) = marked.strip_prefix("r:") {
                Start::AfterRun(id.to_string())
            } else {
                return Err(invalid_token(token));
            }
        }
    };
    let running: Vec<Task> = live
        .unfinished(principal_id)
        .into_iter()
        .filter(|(ns, t)| query.matches(t, *ns))
        .map(|(_, t)| t.limited(query.history_length, query.include_artifacts))
        .collect();
    let running_ids: HashSet<String> = running.iter().map(|t| t.id.clone()).collect();

    // The page's running tasks, the stored run it starts after, and where it leaves the
    // running tasks.
    let (mut tasks, after, running_end) = match &start {
        Start::Running(offset) => {
            let page: Vec<Task> = running
                .iter()
                .skip(*offset)
                .take(query.page_size)
                .cloned()
                .collect();
            let end = offset.saturating_add(page.len());
            (page, None, end)
        }
        Start::AfterRun(id) => (Vec::new(), Some(id.as_str()), running.len()),
    };
    let room = query.page_size - tasks.len();
    let (stored, stored_total, more_stored) =
        stored_runs(store, principal_id, query, after, &running_ids, room).map_err(
            |e| match e {
                HarnessError::Store(StoreError::NoSuchRun { .. }) => invalid_token(token),
                e => A2aError::Internal {
                    what: format!("the run store could not be read: {e}"),
                },
            },
        )?;
    let total_size = running.len() + stored_total;
    for envelope in stored {
        let id = invocation_id(&envelope);
        let request = (query.history_length != Some(0))
            .then(|| store.request(&id).ok().flatten().unwrap_or(Value::Null));
        let task = run_task(envelope, request, query.include_artifacts);
        tasks.push(task.limited(query.history_length, query.include_artifacts));
    }
    let next = if room == 0 {
        // The page ends among the running tasks; past the last of them, the offset starts
        // the stored runs.
        let more = running_end < running.len() || stored_total > 0;
        more.then(|| encode_token(&format!("l:{running_end}")))
    } else {
        tasks
            .last()
            .filter(|_| more_stored)
            .map(|last| encode_token(&format!("r:{}", last.id)))
    }
    .unwrap_or_default();
    Ok(TaskPage {
        tasks,
        next_page_token: next,
        page_size: query.page_size,
        total_size,
    })
}
