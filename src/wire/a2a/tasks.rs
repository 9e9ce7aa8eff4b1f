//! The tasks an endpoint remembers: a bounded in-memory store with the A2A task rules
//! (A2A 1.0 §3.1, §3.4; 0.3 §7), progress and cancellation of the work on a task, and
//! `ListTasks` over what it holds (1.0 §3.1.4).
//!
//! - A task keeps its whole history: the messages that created and continued it, in order; when
//!   a message continues a task that asked for input, the agent's question (its status message)
//!   moves into the history before the new message.
//! - Only a task waiting for input (`input-required`, `auth-required`) can be continued; the
//!   check and the change are one step under the store's lock, so two messages cannot both
//!   resume it.
//! - The store keeps the newest [`TASKS_KEPT`] tasks by default and forgets the oldest first,
//!   never one whose work is still running. A forgotten task is unknown: `GetTask` answers
//!   -32001 (an agent server cannot tell it from one it never had), and `ListTasks` no longer
//!   lists it.
//! - Each change stamps the task's status with the time, and a sequence number orders tasks
//!   for `ListTasks`, newest change first.
//! - A task not yet ended can be watched ([`TaskStore::subscribe`]): each change after the
//!   subscription is sent to the watcher as the [`StreamEvent`] A2A streams for it (a status
//!   update for `working` and each stage the work reports, an artifact update per artifact, and
//!   a final status update), under the same lock as the change, so a watcher misses none and
//!   sees them in order. The last event closes the watcher's channel.

use super::error::A2aError;
use super::model::{Artifact, Message, Task, TaskState};
use super::stream::{ArtifactUpdate, StatusUpdate, StreamEvent};
use super::v10::{decode_token, encode_token, invalid_token};
use crate::text::Unpoison;
use crossbeam_channel::{Receiver, Sender};
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The most tasks the default store remembers; older ones are forgotten first. A task holds
/// its messages and artifacts, so this bounds the store's memory (about 1,024 × a few KiB for
/// Data Director calls).
pub(crate) const TASKS_KEPT: usize = 1_024;

/// The page size of `ListTasks` when the request names none (A2A 1.0 `ListTasksRequest`).
pub(crate) const DEFAULT_PAGE_SIZE: usize = 50;
/// The largest page size `ListTasks` accepts (A2A 1.0 `ListTasksRequest`).
pub(crate) const MAX_PAGE_SIZE: usize = 100;

/// How the work on a task ended, or paused: its state, the agent's status message, and the
/// artifacts it adds.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The state the work ended (or paused) in.
    pub(crate) state: TaskState,
    /// The agent's status message, if any (a failed task's reason).
    pub(crate) message: Option<Message>,
    /// The artifacts the work adds to the task.
    pub(crate) artifacts: Vec<Artifact>,
    /// Entries the work adds to the task's `metadata` and its final status update, replacing
    /// any of the same key (the harness: the run's `dd.trace_id`, a failed run's problem type).
    pub(crate) metadata: Option<Map<String, Value>>,
}

impl Reply {
    /// Completed, with these artifacts.
    pub(crate) fn completed(artifacts: Vec<Artifact>) -> Reply {
        Reply {
            state: TaskState::Completed,
            message: None,
            artifacts,
            metadata: None,
        }
    }

    /// Failed, with `{"error": error}` as the status message's one data part (what every
    /// Data Director peer reads as the reason).
    pub(crate) fn failed(error: impl Into<String>) -> Reply {
        let reason = Message::new(
            super::model::Role::Agent,
            vec![super::model::Part::data(
                serde_json::json!({ "error": error.into() }),
            )],
        );
        Reply {
            state: TaskState::Failed,
            message: Some(reason),
            artifacts: Vec::new(),
            metadata: None,
        }
    }

    /// This reply, with `key: value` in its metadata.
    pub(crate) fn with_meta(mut self, key: &str, value: impl Into<Value>) -> Reply {
        self.metadata
            .get_or_insert_with(Map::new)
            .insert(key.to_string(), value.into());
        self
    }
}

/// What the work on a running task can see and say: move it to `working`, learn that it was
/// canceled.
pub struct Progress {
    id: String,
    context_id: String,
    store: TaskStore,
    canceled: Arc<AtomicBool>,
    wake: Receiver<()>,
    /// Keeps a detached handle's channel open, so it never reads as canceled.
    keep_open: Option<Sender<()>>,
}

impl Progress {
    /// The task's id.
    pub(crate) fn task_id(&self) -> &str {
        &self.id
    }

    /// The task's context.
    pub fn context_id(&self) -> &str {
        &self.context_id
    }

    /// Mark the task `working` (unless it was canceled meanwhile).
    pub(crate) fn working(&self) {
        self.store.update(&self.id, None, |task| {
            if task.status.state == TaskState::Submitted {
                task.status.state = TaskState::Working;
                true
            } else {
                false
            }
        });
    }

    /// Report that the work entered a named stage: the task stays (or becomes) `working`, and
    /// its watchers get a `working` status update whose metadata carries `key: stage` (the
    /// harness streams its conductor's stages this way, `dd.stage`).
    pub(crate) fn stage(&self, key: &str, stage: &str) {
        let mut metadata = Map::new();
        metadata.insert(key.to_string(), Value::String(stage.to_string()));
        self.store
            .update(&self.id, Some(metadata), |task| match task.status.state {
                TaskState::Submitted | TaskState::Working => {
                    task.status.state = TaskState::Working;
                    true
                }
                _ => false,
            });
    }

    /// Whether the task has been canceled (`CancelTask`).
    pub(crate) fn is_canceled(&self) -> bool {
        self.canceled.load(Ordering::SeqCst)
    }

    /// Ready (disconnected) once the task is canceled, or forgotten: wait on it beside the work,
    /// then ask [`Progress::is_canceled`].
    pub(crate) fn cancellation(&self) -> &Receiver<()> {
        &self.wake
    }

    /// What interrupts an HTTP call made for the task once it is canceled (see
    /// [`crate::wire::http::client`]'s "Interrupting a call").
    pub(crate) fn interrupt(&self) -> crate::wire::http::client::Interrupt {
        crate::wire::http::client::Interrupt {
            flag: Arc::clone(&self.canceled),
            wake: self.wake.clone(),
        }
    }

    /// Whether anything can cancel the task: `false` for a [`Progress::detached`] handle, whose
    /// work need not be watched.
    pub(crate) fn can_be_canceled(&self) -> bool {
        self.keep_open.is_none()
    }

    /// A progress handle for work outside any store (it is never canceled).
    pub(crate) fn detached(task_id: &str, context_id: &str) -> Progress {
        let (open, wake) = crossbeam_channel::bounded(0);
        Progress {
            id: task_id.to_string(),
            context_id: context_id.to_string(),
            store: TaskStore::new(0),
            canceled: Arc::default(),
            wake,
            keep_open: Some(open),
        }
    }
}

/// The work running on a task: how to tell it the task was canceled.
struct Running {
    canceled: Arc<AtomicBool>,
    /// Dropped to wake whoever waits on the work's [`Progress::cancellation`].
    wake: Option<Sender<()>>,
}

struct Entry {
    task: Arc<Task>,
    /// Who may list the task (a principal id); `None`: any caller.
    owner: Option<String>,
    /// The order of the last change, for `ListTasks`.
    seq: u64,
    /// Whoever follows the task's changes as stream events.
    watchers: Vec<Sender<StreamEvent>>,
    /// The last change's time, nanoseconds since the epoch.
    changed_ns: i128,
    running: Option<Running>,
}

#[derive(Default)]
struct Tasks {
    by_id: HashMap<String, Entry>,
    /// Ids, oldest first: the order of forgetting.
    order: VecDeque<String>,
    seq: u64,
}

/// The entry of a task that has not ended: `TaskNotFound` for an unknown id, and the error
/// `ended` makes (from the id and the state) for a terminal task.
fn open_entry<'t>(
    by_id: &'t mut HashMap<String, Entry>,
    id: &str,
    ended: impl FnOnce(String, TaskState) -> A2aError,
) -> Result<&'t mut Entry, A2aError> {
    let entry = by_id
        .get_mut(id)
        .ok_or_else(|| A2aError::TaskNotFound { id: id.to_string() })?;
    let state = entry.task.status.state;
    if state.is_terminal() {
        return Err(ended(id.to_string(), state));
    }
    Ok(entry)
}

/// A bounded in-memory store of the tasks an endpoint has answered.
///
/// Tasks are kept decoded, behind an `Arc`: an answer encodes from the shared task outside the
/// lock, and the lock is held for map operations and in-place status changes alone.
#[derive(Clone, Default)]
pub(crate) struct TaskStore {
    inner: Arc<Mutex<Tasks>>,
    capacity: usize,
}

impl TaskStore {
    /// A store that keeps the newest `capacity` tasks (`0`: none).
    pub(crate) fn new(capacity: usize) -> TaskStore {
        TaskStore {
            inner: Arc::default(),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tasks> {
        self.inner.lock().unpoisoned()
    }

    /// Remember a finished task (replacing one with the same id).
    #[cfg(test)]
    pub(crate) fn put(&self, task: &Task) {
        let _ = self.insert(task.clone(), None, false, true);
    }

    /// Store a new task; with `run`, mark its work running and hand back its progress. If the
    /// id is held (and not `replace`), the task is handed back, not stored.
    pub(crate) fn insert(
        &self,
        mut task: Task,
        owner: Option<String>,
        run: bool,
        replace: bool,
    ) -> Result<(Arc<Task>, Option<Progress>), Arc<Task>> {
        let now = crate::time::now_ns() as i128;
        if task.status.timestamp.is_none() {
            task.status.timestamp = Some(crate::time::rfc3339(now));
        }
        let (running, progress) = run.then(|| self.running(&task)).unzip();
        let task = Arc::new(task);
        if self.capacity == 0 {
            return Ok((task, progress));
        }
        let (key, queued) = (task.id.clone(), task.id.clone());
        let evicted = {
            let mut guard = self.lock();
            let tasks = &mut *guard;
            if !replace && tasks.by_id.contains_key(&key) {
                return Err(task);
            }
            tasks.seq += 1;
            let entry = Entry {
                task: Arc::clone(&task),
                owner,
                seq: tasks.seq,
                watchers: Vec::new(),
                changed_ns: now,
                running,
            };
            if tasks.by_id.insert(key, entry).is_none() {
                tasks.order.push_back(queued);
            }
            forget_beyond(tasks, self.capacity)
        };
        // Freed outside the lock, and after the reply.
        if !evicted.is_empty() {
            crate::wire::http::free_after_reply(evicted);
        }
        Ok((task, progress))
    }

    fn running(&self, task: &Task) -> (Running, Progress) {
        let canceled = Arc::new(AtomicBool::new(false));
        let (tx, rx) = crossbeam_channel::bounded(0);
        (
            Running {
                canceled: Arc::clone(&canceled),
                wake: Some(tx),
            },
            Progress {
                id: task.id.clone(),
                context_id: task.context_id.clone(),
                store: self.clone(),
                canceled,
                wake: rx,
                keep_open: None,
            },
        )
    }

    /// A remembered task.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Task>> {
        self.lock().by_id.get(id).map(|e| Arc::clone(&e.task))
    }

    /// A held task and its owner (`None` inside: a task any caller may see).
    pub(crate) fn get_owned(&self, id: &str) -> Option<(Arc<Task>, Option<String>)> {
        self.lock()
            .by_id
            .get(id)
            .map(|e| (Arc::clone(&e.task), e.owner.clone()))
    }

    /// Change a task's status in place under the lock; `change` says whether it changed
    /// anything (then its status time and order are renewed, and its watchers told, with
    /// `metadata` on the status update).
    fn update(
        &self,
        id: &str,
        metadata: Option<Map<String, Value>>,
        change: impl FnOnce(&mut Task) -> bool,
    ) -> Option<Arc<Task>> {
        let mut guard = self.lock();
        let tasks = &mut *guard;
        let entry = tasks.by_id.get_mut(id)?;
        if change(Arc::make_mut(&mut entry.task)) {
            touch(entry, &mut tasks.seq);
            // Built only for a watcher: a blocking call's task has none.
            if !entry.watchers.is_empty() {
                let mut update = status_update(&entry.task);
                update.metadata = metadata;
                tell(entry, StreamEvent::Status(update));
            }
        }
        Some(Arc::clone(&entry.task))
    }

    /// Follow a task not yet ended: the task as it stands, and a channel that receives each
    /// later change as a stream event, the last of which ends the stream (a final status
    /// update), after which the channel closes. Refused for an unknown task (-32001), and for
    /// an ended one, which has nothing more to stream (A2A 1.0 §3.1.6: -32004).
    pub(crate) fn subscribe(
        &self,
        id: &str,
    ) -> Result<(Arc<Task>, Receiver<StreamEvent>), A2aError> {
        let mut guard = self.lock();
        let entry = open_entry(&mut guard.by_id, id, |id, state| A2aError::TaskTerminal {
            id,
            state,
        })?;
        let (tx, rx) = crossbeam_channel::unbounded();
        entry.watchers.push(tx);
        Ok((Arc::clone(&entry.task), rx))
    }

    /// Continue a task waiting for input with `message` (its ids already the task's): the
    /// agent's question moves into the history, the message follows, and the task is
    /// `submitted` again, its work running if `run`. Refused if the task is unknown, terminal
    /// or not waiting for input.
    pub(crate) fn resume(
        &self,
        id: &str,
        message: Message,
        run: bool,
    ) -> Result<(Arc<Task>, Option<Progress>), A2aError> {
        let mut guard = self.lock();
        let tasks = &mut *guard;
        let entry = open_entry(&mut tasks.by_id, id, |id, state| A2aError::TaskTerminal {
            id,
            state,
        })?;
        let state = entry.task.status.state;
        if !matches!(state, TaskState::InputRequired | TaskState::AuthRequired) {
            return Err(A2aError::TaskBusy {
                id: id.to_string(),
                state,
            });
        }
        let task = Arc::make_mut(&mut entry.task);
        if let Some(question) = task.status.message.take() {
            task.history.push(question);
        }
        task.history.push(message);
        task.status.state = TaskState::Submitted;
        touch(entry, &mut tasks.seq);
        // Whoever watched the task's earlier turn saw it end; a new turn has new watchers.
        entry.watchers.clear();
        let progress = run.then(|| {
            let (running, progress) = self.running(&entry.task);
            entry.running = Some(running);
            progress
        });
        Ok((Arc::clone(&entry.task), progress))
    }

    /// Record how a task's work ended: its state, status message and new artifacts. A task
    /// canceled meanwhile stays canceled and only gains the artifacts. The reply comes back if
    /// the task was forgotten.
    pub(crate) fn finish(&self, id: &str, reply: Reply) -> Result<Arc<Task>, Box<Reply>> {
        let mut guard = self.lock();
        let tasks = &mut *guard;
        let Some(entry) = tasks.by_id.get_mut(id) else {
            return Err(Box::new(reply));
        };
        entry.running = None;
        let was_canceled = entry.task.status.state == TaskState::Canceled;
        // What a watching stream is told; copied only when one watches, since a task's
        // artifacts are whole value trees.
        let told = (!entry.watchers.is_empty() && !was_canceled)
            .then(|| (reply.artifacts.clone(), reply.metadata.clone()));
        apply(Arc::make_mut(&mut entry.task), reply);
        touch(entry, &mut tasks.seq);
        if let Some((added, metadata)) = told {
            let task = Arc::clone(&entry.task);
            for artifact in added {
                tell(
                    entry,
                    StreamEvent::Artifact(ArtifactUpdate {
                        task_id: task.id.clone(),
                        context_id: task.context_id.clone(),
                        artifact,
                        append: false,
                        last_chunk: true,
                        metadata: None,
                    }),
                );
            }
            let mut update = status_update(&task);
            update.metadata = metadata;
            // Whatever state the work ended in, this is the stream's last event.
            update.is_final = true;
            tell(entry, StreamEvent::Status(update));
        }
        entry.watchers.clear();
        Ok(Arc::clone(&entry.task))
    }

    /// Cancel a task (A2A 1.0 §3.1.5): a task not yet terminal becomes `canceled`, and its
    /// running work is told. Refused for an unknown or terminal task.
    pub(crate) fn cancel(&self, id: &str) -> Result<Arc<Task>, A2aError> {
        let (task, wake) = {
            let mut guard = self.lock();
            let tasks = &mut *guard;
            let entry = open_entry(&mut tasks.by_id, id, |id, state| {
                A2aError::TaskNotCancelable { id, state }
            })?;
            Arc::make_mut(&mut entry.task).status.state = TaskState::Canceled;
            touch(entry, &mut tasks.seq);
            let update = status_update(&entry.task);
            tell(entry, StreamEvent::Status(update));
            entry.watchers.clear();
            let wake = entry.running.as_mut().and_then(|r| {
                r.canceled.store(true, Ordering::SeqCst);
                r.wake.take()
            });
            (Arc::clone(&entry.task), wake)
        };
        // Dropping the sender wakes the work waiting on its cancellation.
        drop(wake);
        Ok(task)
    }

    /// Cancel every task whose work is running (a drain past its deadline): each is told, as
    /// [`TaskStore::cancel`] tells it. The ids canceled.
    pub(crate) fn cancel_running(&self) -> Vec<String> {
        let ids: Vec<String> = {
            let guard = self.lock();
            guard
                .by_id
                .iter()
                .filter(|(_, e)| e.running.is_some() && !e.task.status.state.is_terminal())
                .map(|(id, _)| id.clone())
                .collect()
        };
        ids.into_iter()
            .filter(|id| self.cancel(id).is_ok())
            .collect()
    }

    /// One page of the tasks `query` selects among those `owner` may see (every task when
    /// `owner` is `None`, else those stored for that owner), newest change first.
    pub(crate) fn list(
        &self,
        query: &ListQuery,
        owner: Option<&str>,
    ) -> Result<TaskPage, A2aError> {
        let after = match &query.page_token {
            None => None,
            Some(token) => Some(
                decode_token(token)
                    .and_then(|t| t.strip_prefix("m:").and_then(|s| s.parse::<u64>().ok()))
                    .ok_or_else(|| invalid_token(token))?,
            ),
        };
        let mut selected: Vec<(u64, Arc<Task>)> = {
            let guard = self.lock();
            guard
                .by_id
                .values()
                .filter(|e| owner.is_none() || e.owner.as_deref() == owner)
                .filter(|e| query.matches(&e.task, e.changed_ns))
                .map(|e| (e.seq, Arc::clone(&e.task)))
                .collect()
        };
        selected.sort_by_key(|e| std::cmp::Reverse(e.0));
        let total_size = selected.len();
        let start = after.map_or(0, |seq| selected.partition_point(|(s, _)| *s >= seq));
        let page: Vec<&(u64, Arc<Task>)> =
            selected.iter().skip(start).take(query.page_size).collect();
        let more = start + page.len() < total_size;
        let next_page_token = match page.last() {
            Some((seq, _)) if more => encode_token(&format!("m:{seq}")),
            _ => String::new(),
        };
        Ok(TaskPage {
            tasks: page
                .iter()
                .map(|(_, t)| t.limited(query.history_length, query.include_artifacts))
                .collect(),
            next_page_token,
            page_size: query.page_size,
            total_size,
        })
    }

    /// The tasks not yet terminal that `owner` may see (`None`: every owner's, for an
    /// auditor), newest change first (a harness lists them before its stored runs).
    pub(crate) fn unfinished(&self, owner: Option<&str>) -> Vec<(i128, Arc<Task>)> {
        let guard = self.lock();
        let mut tasks: Vec<(u64, i128, Arc<Task>)> = guard
            .by_id
            .values()
            .filter(|e| {
                owner.is_none_or(|o| e.owner.as_deref() == Some(o))
                    && !e.task.status.state.is_terminal()
            })
            .map(|e| (e.seq, e.changed_ns, Arc::clone(&e.task)))
            .collect();
        drop(guard);
        tasks.sort_by_key(|e| std::cmp::Reverse(e.0));
        tasks.into_iter().map(|(_, ns, t)| (ns, t)).collect()
    }

    /// Whether the store keeps any task (a store of capacity 0 keeps none).
    pub(crate) fn keeps_tasks(&self) -> bool {
        self.capacity > 0
    }

    /// How many tasks are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Whether none are.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Renew an entry's status time and order (the store's next, `seq`) after a change.
fn touch(entry: &mut Entry, seq: &mut u64) {
    let now = crate::time::now_ns() as i128;
    *seq += 1;
    entry.seq = *seq;
    entry.changed_ns = now;
    Arc::make_mut(&mut entry.task).status.timestamp = Some(crate::time::rfc3339(now));
}

/// The status update that shows a task's current status.
fn status_update(task: &Task) -> StatusUpdate {
    StatusUpdate {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: task.status.clone(),
        is_final: super::stream::ends_stream(task.status.state),
        metadata: None,
    }
}

/// Send `event` to an entry's watchers, dropping those that went away.
fn tell(entry: &mut Entry, event: StreamEvent) {
    entry.watchers.retain(|w| w.send(event.clone()).is_ok());
}

/// Record a reply on a task (see [`TaskStore::finish`]).
pub(crate) fn apply(task: &mut Task, reply: Reply) {
    let Reply {
        state,
        message,
        artifacts,
        metadata,
    } = reply;
    task.artifacts.extend(artifacts);
    if let Some(entries) = metadata {
        task.metadata.get_or_insert_with(Map::new).extend(entries);
    }
    if task.status.state == TaskState::Canceled {
        return;
    }
    task.status.state = state;
    task.status.message = message.map(|mut m| {
        m.task_id = Some(task.id.clone());
        m.context_id = Some(task.context_id.clone());
        m
    });
}

/// Forget the oldest tasks beyond `capacity`, skipping any whose work still runs; returns them
/// to be freed outside the lock.
fn forget_beyond(tasks: &mut Tasks, capacity: usize) -> Vec<Entry> {
    let mut forgotten = Vec::new();
    let mut kept_running = Vec::new();
    while tasks.by_id.len() > capacity {
        let Some(old) = tasks.order.pop_front() else {
            break;
        };
        match tasks.by_id.get(&old) {
            Some(e) if e.running.is_some() => kept_running.push(old),
            Some(_) => forgotten.extend(tasks.by_id.remove(&old)),
            None => {}
        }
    }
    for id in kept_running.into_iter().rev() {
        tasks.order.push_front(id);
    }
    forgotten
}

/// Which tasks `ListTasks` asks for (A2A 1.0 `ListTasksRequest`), checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ListQuery {
    /// Tasks of this context only.
    pub(crate) context_id: Option<String>,
    /// Tasks in this state only.
    pub(crate) status: Option<TaskState>,
    /// At most this many tasks (1 to [`MAX_PAGE_SIZE`], default [`DEFAULT_PAGE_SIZE`]).
    pub(crate) page_size: usize,
    /// Continue after the page that gave this token.
    pub(crate) page_token: Option<String>,
    /// Show at most this many of each task's latest history messages.
    pub(crate) history_length: Option<usize>,
    /// Tasks whose status changed at or after this time (nanoseconds since the epoch) only.
    pub(crate) status_timestamp_after: Option<i128>,
    /// Show each task's artifacts (default: leave them out).
    pub(crate) include_artifacts: bool,
}

impl Default for ListQuery {
    fn default() -> Self {
        ListQuery {
            context_id: None,
            status: None,
            page_size: DEFAULT_PAGE_SIZE,
            page_token: None,
            history_length: None,
            status_timestamp_after: None,
            include_artifacts: false,
        }
    }
}

impl ListQuery {
    /// Whether a task whose status changed at `changed_ns` passes every filter.
    pub(crate) fn matches(&self, task: &Task, changed_ns: i128) -> bool {
        self.context_id
            .as_deref()
            .is_none_or(|c| c == task.context_id)
            && self.status.is_none_or(|s| s == task.status.state)
            && self.status_timestamp_after.is_none_or(|t| changed_ns >= t)
    }
}

/// One page of `ListTasks` (A2A 1.0 `ListTasksResponse`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TaskPage {
    /// The tasks, newest change first, limited as the query asked.
    pub(crate) tasks: Vec<Task>,
    /// Where the next page starts; empty on the last page.
    pub(crate) next_page_token: String,
    /// The page size used (the query's, or the default).
    pub(crate) page_size: usize,
    /// How many tasks the filters select, over all pages.
    pub(crate) total_size: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::a2a::model::{Part, Role};

    fn task(n: u64) -> Task {
        let asked = Message::new(Role::User, vec![Part::text(format!("n={n}"))]);
        Task::finished(asked, TaskState::Completed, None, Vec::new())
    }

    #[test]
    fn the_task_store_forgets_the_oldest_beyond_its_capacity_but_never_a_running_one() {
        let store = TaskStore::new(2);
        let tasks: Vec<Task> = (0..3).map(task).collect();
        let mut running = tasks[0].clone();
        running.status.state = TaskState::Submitted;
        let (_, progress) = store.insert(running, None, true, false).unwrap();
        store.put(&tasks[1]);
        store.put(&tasks[2]);
        assert_eq!(store.len(), 2);
        assert!(store.get(&tasks[0].id).is_some(), "the running task stays");
        assert!(store.get(&tasks[1].id).is_none());
        drop(progress);
        let none = TaskStore::new(0);
        none.put(&tasks[0]);
        assert!(none.is_empty());
    }

    #[test]
    fn page_tokens_round_trip_and_foreign_ones_are_refused() {
        assert_eq!(decode_token(&encode_token("m:42")).as_deref(), Some("m:42"));
        assert_eq!(decode_token("zz"), None);
        assert_eq!(decode_token("abc"), None);
        assert_eq!(decode_token(""), None);
    }

    #[test]
    fn a_canceled_task_stays_canceled_when_its_work_ends() {
        let store = TaskStore::new(4);
        let mut t = task(1);
        t.status.state = TaskState::Submitted;
        let (_, progress) = store.insert(t.clone(), None, true, false).unwrap();
        let progress = progress.unwrap();
        progress.working();
        assert_eq!(store.get(&t.id).unwrap().status.state, TaskState::Working);
        store.cancel(&t.id).unwrap();
        assert!(progress.is_canceled());
        assert!(progress.cancellation().try_recv().is_err());
        let done = store.finish(&t.id, Reply::completed(Vec::new())).unwrap();
        assert!(
            store
                .finish("forgotten", Reply::completed(Vec::new()))
                .is_err()
        );
        assert_eq!(done.status.state, TaskState::Canceled);
        assert!(matches!(
            store.cancel(&t.id),
            Err(A2aError::TaskNotCancelable { .. })
        ));
    }
}
