//! Which peer owns which task: every task id a forwarded answer names is remembered with the
//! peer that answered, its context and its last state, so `tasks/get`, `tasks/cancel`, a
//! resubscription and a message continuing the task go back to that peer. Bounded: the
//! newest [`TASK_OWNERS_KEPT`] tasks are kept, and the oldest forgotten first.
//!
//! A task is owned by the first peer that answered for it, and only that peer's answers
//! update it: a peer answering with the id of a task another peer owns is refused
//! ([`TaskOwners::record`] says who owns it), so it cannot take over the task's later calls
//! (`tasks/get`, `tasks/cancel`, a follow-up message), which would go to it otherwise.

use crate::text::Unpoison;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// The most task owners remembered.
pub(crate) const TASK_OWNERS_KEPT: usize = 10_000;

/// The longest task id remembered (a longer one is not: it is no id a peer would mint).
const MAX_TASK_ID_LEN: usize = 256;

/// What the relay knows of a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    /// The peer that answered for it.
    pub(crate) peer: String,
    /// Its context, when an answer named it.
    pub(crate) context_id: Option<String>,
    /// Its last state seen (v0.3 names: `working`, `completed`...).
    pub(crate) state: Option<String>,
}

/// The bounded map of task ids to owners.
#[derive(Debug)]
pub(crate) struct TaskOwners {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    owners: HashMap<String, Owner>,
    /// Task ids in the order they were first seen: the oldest is forgotten first.
    order: VecDeque<String>,
}

/// What [`TaskOwners::record`] saw of a task.
#[derive(Debug, PartialEq)]
pub(crate) struct Seen {
    /// Whether the task is remembered: an empty id, or one longer than `MAX_TASK_ID_LEN`, is
    /// not, so nothing of its states is known.
    pub(crate) tracked: bool,
    /// Its state before this record, if it was known.
    pub(crate) before: Option<String>,
    /// When the record was made, taken while no other record of it could be made.
    pub(crate) at_ns: u64,
}

/// A task another peer owns, which a peer answered for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OwnedBy {
    /// The peer that owns the task.
    pub(crate) owner: String,
}

impl TaskOwners {
    pub(crate) fn new(capacity: usize) -> TaskOwners {
        TaskOwners {
            capacity: capacity.max(1),
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unpoisoned()
    }

    /// Remember that `peer` owns `task_id`, and what it said of it: what was known of the task
    /// before (to record the change), or the owner when another peer owns the task (nothing is
    /// recorded then).
    pub(crate) fn record(
        &self,
        task_id: &str,
        peer: &str,
        context_id: Option<&str>,
        state: Option<&str>,
    ) -> Result<Seen, OwnedBy> {
        if task_id.is_empty() || task_id.len() > MAX_TASK_ID_LEN {
            return Ok(Seen {
                tracked: false,
                before: None,
                at_ns: crate::time::now_ns(),
            });
        }
        let mut inner = self.lock();
        // Taken under the lock: two records of one task are in the order of their times.
        let at_ns = crate::time::now_ns();
        let before = match inner.owners.get_mut(task_id) {
            Some(owner) if owner.peer != peer => {
                return Err(OwnedBy {
                    owner: owner.peer.clone(),
                });
            }
            Some(owner) => {
                let before = owner.state.clone();
                if let Some(c) = context_id {
                    owner.context_id = Some(c.to_string());
                }
                if let Some(s) = state {
                    owner.state = Some(s.to_string());
                }
                before
            }
            None => {
                let owner = Owner {
                    peer: peer.to_string(),
                    context_id: context_id.map(str::to_string),
                    state: state.map(str::to_string),
                };
                inner.owners.insert(task_id.to_string(), owner);
                inner.order.push_back(task_id.to_string());
                while inner.order.len() > self.capacity {
                    if let Some(old) = inner.order.pop_front() {
                        inner.owners.remove(&old);
                    }
                }
                None
            }
        };
        Ok(Seen {
            tracked: true,
            before,
            at_ns,
        })
    }

    /// The owner of `task_id`, if remembered.
    pub(crate) fn get(&self, task_id: &str) -> Option<Owner> {
        self.lock().owners.get(task_id).cloned()
    }

    /// How many tasks are remembered.
    pub(crate) fn len(&self) -> usize {
        self.lock().owners.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_task_is_forgotten_first_beyond_the_bound() {
        let owners = TaskOwners::new(2);
        owners
            .record("t1", "A", Some("c1"), Some("working"))
            .unwrap();
        owners.record("t2", "B", None, None).unwrap();
        // Seeing t1 again updates it, and does not make it younger.
        assert_eq!(
            owners
                .record("t1", "A", None, Some("completed"))
                .map(|seen| seen.before),
            Ok(Some("working".into()))
        );
        owners.record("t3", "C", None, None).unwrap();
        assert_eq!(owners.get("t1"), None);
        assert_eq!(owners.get("t2").unwrap().peer, "B");
        assert_eq!(owners.get("t3").unwrap().peer, "C");
        assert_eq!(owners.len(), 2);
    }

    #[test]
    fn an_update_keeps_what_it_does_not_say() {
        let owners = TaskOwners::new(10);
        owners.record("t", "A", Some("c"), Some("working")).unwrap();
        owners.record("t", "A", None, Some("completed")).unwrap();
        assert_eq!(
            owners.get("t").unwrap(),
            Owner {
                peer: "A".into(),
                context_id: Some("c".into()),
                state: Some("completed".into())
            }
        );
        assert!(!owners.record("", "A", None, None).unwrap().tracked);
        assert_eq!(owners.len(), 1);
    }

    #[test]
    fn a_task_id_too_long_to_remember_is_seen_untracked_so_no_change_is_claimed_for_it() {
        let owners = TaskOwners::new(10);
        let long = "t".repeat(MAX_TASK_ID_LEN + 1);
        for state in ["working", "completed"] {
            let seen = owners.record(&long, "A", None, Some(state)).unwrap();
            assert!(!seen.tracked);
            assert_eq!(seen.before, None);
        }
        assert_eq!(owners.len(), 0);
    }

    #[test]
    fn records_of_one_task_are_timed_in_the_order_they_were_made() {
        let owners = TaskOwners::new(10);
        let first = owners.record("t", "A", None, Some("working")).unwrap();
        let second = owners.record("t", "A", None, Some("completed")).unwrap();
        assert!(first.at_ns <= second.at_ns);
        assert_eq!(second.before.as_deref(), Some("working"));
    }

    #[test]
    fn a_task_stays_with_the_peer_that_first_answered_for_it() {
        let owners = TaskOwners::new(10);
        owners.record("t", "B", Some("c"), Some("working")).unwrap();
        assert_eq!(
            owners
                .record("t", "A", Some("evil"), Some("completed"))
                .map(|seen| seen.before)
                .map_err(|owned| owned.owner),
            Err("B".into())
        );
        assert_eq!(owners.get("t").unwrap().peer, "B");
        assert_eq!(owners.get("t").unwrap().state.as_deref(), Some("working"));
    }
}
