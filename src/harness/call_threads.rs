//! Threads for agent calls the conductor may stop waiting for, kept for the next call.
//!
//! A call made for an A2A task runs on a thread of its own, so the conductor can stop waiting
//! when the task is canceled (the call finishes on its thread, unwaited for). Starting a thread
//! per call cost the harness about a third of its throughput on a 2-core machine (a 2 MiB
//! stack mapped and unmapped, a fresh allocator arena, the kernel's locks on the process's
//! memory map, on every run). Here a thread that finishes a call waits for the next one, and
//! one left idle for [`KEEP_IDLE`] ends, so a burst leaves no crowd of threads behind.
//!
//! There is no cap: a call always gets a thread at once, as it did with a thread per call (a
//! queue would make one hung agent's calls hold up another's). The server's connection limit
//! bounds how many calls wait at once.

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long a thread with no call waits for one before it ends.
pub(crate) const KEEP_IDLE: Duration = Duration::from_secs(30);

type Job = Box<dyn FnOnce() + Send>;

/// Threads that run jobs at once, started when none is free and kept while they are used.
pub(crate) struct CallThreads {
    name: &'static str,
    keep_idle: Duration,
    jobs: Sender<Job>,
    waiting: Receiver<Job>,
    /// Threads waiting for a job and not yet promised one. Each job sent was promised to one
    /// (this count was taken down first), so every job in the channel has a thread for it.
    idle: Arc<AtomicUsize>,
}

impl CallThreads {
    /// Threads named `name`, each ending after `keep_idle` without a job.
    pub(crate) fn new(name: &'static str, keep_idle: Duration) -> CallThreads {
        let (jobs, waiting) = crossbeam_channel::unbounded();
        CallThreads {
            name,
            keep_idle,
            jobs,
            waiting,
            idle: Arc::default(),
        }
    }

    /// Run `job` on a waiting thread, or on a new one if none waits; an error only when no
    /// thread could be started (the job is then dropped, unrun).
    pub(crate) fn run(&self, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let promised = self
            .idle
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if promised {
            // A thread counted idle is in (or on its way to) recv: the job is taken at once.
            // The channel cannot be disconnected while `self` holds a receiver.
            let _ = self.jobs.send(Box::new(job));
            return Ok(());
        }
        let (waiting, idle, keep_idle) =
            (self.waiting.clone(), Arc::clone(&self.idle), self.keep_idle);
        std::thread::Builder::new()
            .name(self.name.into())
            .spawn(move || serve(Box::new(job), &waiting, &idle, keep_idle))
            .map(drop)
    }

    /// Threads waiting for a job now.
    #[cfg(test)]
    fn idle(&self) -> usize {
        self.idle.load(Ordering::Acquire)
    }
}

/// A thread's life: its first job, then each job it is sent, until it waits `keep_idle` for
/// none and no job has been promised to it.
fn serve(first: Job, waiting: &Receiver<Job>, idle: &AtomicUsize, keep_idle: Duration) {
    let mut job = first;
    loop {
        // The job catches its own panics (the conductor's call does); this keeps the thread
        // and the count right if one does not.
        let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
        idle.fetch_add(1, Ordering::AcqRel);
        job = loop {
            match waiting.recv_timeout(keep_idle) {
                Ok(next) => break next,
                Err(RecvTimeoutError::Timeout) => {
                    // End only by taking back this thread's own idle count; if every idle
                    // thread has been promised a job, one is on its way to this channel.
                    if idle
                        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                        .is_ok()
                    {
                        return;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Barrier, Mutex};
    use std::time::Instant;

    /// Wait up to 10 s for the idle count to satisfy `ready`; the count as it then stands.
    fn idle_once(threads: &CallThreads, ready: impl Fn(usize) -> bool) -> usize {
        let until = Instant::now() + Duration::from_secs(10);
        while !ready(threads.idle()) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        threads.idle()
    }

    /// `calls` calls one after another, each awaited until its thread is idle again: the
    /// thread each ran on.
    fn thread_ids(threads: &CallThreads, calls: usize) -> Vec<std::thread::ThreadId> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        for _ in 0..calls {
            let (tx, rx) = crossbeam_channel::bounded(1);
            let seen = Arc::clone(&seen);
            threads
                .run(move || {
                    seen.lock().unwrap().push(std::thread::current().id());
                    let _ = tx.send(());
                })
                .unwrap();
            rx.recv_timeout(Duration::from_secs(10)).unwrap();
            // The thread counts itself idle just after the job; let it.
            idle_once(threads, |n| n > 0);
        }
        Arc::try_unwrap(seen).unwrap().into_inner().unwrap()
    }

    /// Start `calls` calls that each wait at the barrier returned, which lets them go once the
    /// caller waits at it too: they can finish only if every one has a thread at once.
    fn calls_held_together(threads: &CallThreads, calls: usize) -> Arc<Barrier> {
        let barrier = Arc::new(Barrier::new(calls + 1));
        for _ in 0..calls {
            let barrier = Arc::clone(&barrier);
            threads
                .run(move || {
                    barrier.wait();
                })
                .unwrap();
        }
        barrier
    }

    #[test]
    fn calls_one_after_another_reuse_one_thread() {
        let threads = CallThreads::new("test-call", Duration::from_secs(30));
        let seen = thread_ids(&threads, 20);
        assert_eq!(seen.len(), 20);
        assert!(seen.iter().all(|id| *id == seen[0]), "{seen:?}");
        assert_eq!(threads.idle(), 1);
    }

    #[test]
    fn calls_at_once_each_get_a_thread_without_waiting_for_another() {
        let threads = CallThreads::new("test-call", Duration::from_secs(30));
        // With fewer threads than calls, this wait would never end.
        calls_held_together(&threads, 8).wait();
        assert_eq!(idle_once(&threads, |n| n >= 8), 8);
        // All eight are reused: eight more at once take every idle thread, and start none.
        let barrier = calls_held_together(&threads, 8);
        assert_eq!(threads.idle(), 0);
        barrier.wait();
    }

    #[test]
    fn an_idle_thread_ends_and_the_next_call_starts_another() {
        let threads = CallThreads::new("test-call", Duration::from_millis(20));
        let first = thread_ids(&threads, 1);
        assert_eq!(
            idle_once(&threads, |n| n == 0),
            0,
            "the idle thread did not end"
        );
        let second = thread_ids(&threads, 1);
        assert_ne!(first, second);
    }

    #[test]
    fn a_job_that_panics_leaves_its_thread_for_the_next() {
        let threads = CallThreads::new("test-call", Duration::from_secs(30));
        threads.run(|| panic!("the job's own panic")).unwrap();
        assert_eq!(idle_once(&threads, |n| n > 0), 1);
        assert_eq!(thread_ids(&threads, 3).len(), 3);
        assert_eq!(threads.idle(), 1);
    }
}
