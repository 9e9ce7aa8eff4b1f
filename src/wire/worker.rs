//! The one pattern for work done off the caller's thread: a queue bounded in items (and,
//! optionally, in bytes) and one named thread that takes from it. The wire log's writer and
//! the OTLP exporter are both built on it.
//!
//! - [`Worker::offer`] never blocks: an item that does not fit (the queue holds its limit of
//!   items, or of bytes with something already queued) is handed back, for the caller to count
//!   as dropped and report as it does. A single item larger than the byte limit is taken when
//!   the queue is empty, so nothing is too large to ever get through.
//! - The thread takes items in order ([`Jobs::next`], [`Jobs::try_next`]) and says when it is
//!   done with them ([`Jobs::settle`]); [`Worker::flush`] waits for everything offered so far
//!   to be settled.
//! - The thread ends when its queue is closed and empty: when the [`Worker`] is dropped, or at
//!   [`Worker::close`], which waits for it up to a deadline.

use crate::text::Unpoison;
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The handing-over end: what callers offer items to. Dropping it closes the queue.
pub(crate) struct Worker<T> {
    shared: Arc<Shared<T>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// The taking end, owned by the worker's thread.
pub(crate) struct Jobs<T> {
    rx: Receiver<(T, usize)>,
    shared: Arc<Shared<T>>,
}

/// What both ends share.
struct Shared<T> {
    max_bytes: usize,
    /// Bytes of the items queued now.
    bytes: AtomicUsize,
    /// One lock per offer: the sender and the counts `flush` waits on.
    state: Mutex<State<T>>,
    settled: Condvar,
}

struct State<T> {
    /// `None` once closed.
    tx: Option<Sender<(T, usize)>>,
    /// Items taken into the queue.
    offered: u64,
    /// Items the thread is done with.
    settled: u64,
    /// Callers waiting in [`Worker::flush`].
    flushing: usize,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unpoisoned()
    }
}

/// A queue of at most `max_items` items (at least one) and `max_bytes` bytes of them: its two
/// ends, the thread not yet started ([`Worker::start`]).
pub(crate) fn queue<T>(max_items: usize, max_bytes: usize) -> (Worker<T>, Jobs<T>) {
    let (tx, rx) = crossbeam_channel::bounded(max_items.max(1));
    let shared = Arc::new(Shared {
        max_bytes,
        bytes: AtomicUsize::new(0),
        state: Mutex::new(State {
            tx: Some(tx),
            offered: 0,
            settled: 0,
            flushing: 0,
        }),
        settled: Condvar::new(),
    });
    let worker = Worker {
        shared: Arc::clone(&shared),
        thread: Mutex::new(None),
    };
    (worker, Jobs { rx, shared })
}

impl<T> Worker<T> {
    /// Start the thread, named `name`, running `work` (which takes from this queue's
    /// [`Jobs`]).
    pub(crate) fn start(
        &self,
        name: &str,
        work: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<()> {
        let handle = std::thread::Builder::new().name(name.into()).spawn(work)?;
        *self.thread.lock().unpoisoned() = Some(handle);
        Ok(())
    }

    /// Queue `item`, of `bytes` bytes, without waiting: `Err(item)` when it does not fit, or
    /// the queue is closed.
    pub(crate) fn offer(&self, item: T, bytes: usize) -> Result<(), T> {
        let shared = &*self.shared;
        let queued = shared.bytes.fetch_add(bytes, Ordering::SeqCst);
        if queued.saturating_add(bytes) > shared.max_bytes && queued > 0 {
            shared.bytes.fetch_sub(bytes, Ordering::SeqCst);
            return Err(item);
        }
        // Counted under the lock `flush` reads it by, so an item is never settled uncounted.
        let mut state = shared.lock();
        let sent = match state.tx.as_ref() {
            Some(tx) => tx.try_send((item, bytes)).map_err(|e| e.into_inner().0),
            None => Err(item),
        };
        match sent {
            Ok(()) => state.offered += 1,
            Err(_) => {
                shared.bytes.fetch_sub(bytes, Ordering::SeqCst);
            }
        }
        sent
    }

    /// Items waiting now.
    pub(crate) fn len(&self) -> usize {
        self.shared.lock().tx.as_ref().map_or(0, Sender::len)
    }

    /// Wait until every item offered so far has been settled, or `timeout` passes; `true` if
    /// everything settled. While anyone waits here, [`Jobs::flushing`] says so.
    pub(crate) fn flush(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.lock();
        state.flushing += 1;
        while state.settled < state.offered {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = self
                .shared
                .settled
                .wait_timeout(state, deadline - now)
                .unpoisoned()
                .0;
        }
        state.flushing -= 1;
        state.settled >= state.offered
    }

    /// Close the queue (later offers are refused) and wait up to `timeout` for the thread to
    /// finish what is queued and end; `true` if it did.
    pub(crate) fn close(&self, timeout: Duration) -> bool {
        self.shared.lock().tx.take();
        let Some(thread) = self.thread.lock().unpoisoned().take() else {
            return true;
        };
        let deadline = Instant::now() + timeout;
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let finished = thread.is_finished();
        if finished {
            let _ = thread.join();
        }
        finished
    }
}

impl<T> Drop for Worker<T> {
    /// The queue closes: the thread finishes what is queued and ends on its own.
    fn drop(&mut self) {
        self.shared.lock().tx.take();
    }
}

impl<T> Jobs<T> {
    /// The next item, waiting for one; `None` once the queue is closed and empty.
    pub(crate) fn next(&self) -> Option<T> {
        self.rx.recv().ok().map(|item| self.taken(item))
    }

    /// The next item if one is waiting: `Err(Empty)` if none is, `Err(Disconnected)` once
    /// the queue is closed and empty.
    pub(crate) fn try_next(&self) -> Result<T, TryRecvError> {
        self.rx.try_recv().map(|item| self.taken(item))
    }

    fn taken(&self, (item, bytes): (T, usize)) -> T {
        self.shared.bytes.fetch_sub(bytes, Ordering::SeqCst);
        item
    }

    /// Items waiting now.
    pub(crate) fn len(&self) -> usize {
        self.rx.len()
    }

    /// Whether someone waits in [`Worker::flush`] (so nothing should linger).
    pub(crate) fn flushing(&self) -> bool {
        self.shared.lock().flushing > 0
    }

    /// The thread is done with `items` more items (sent, written, or given up on).
    pub(crate) fn settle(&self, items: u64) {
        let mut state = self.shared.lock();
        state.settled += items;
        if state.flushing > 0 {
            self.shared.settled.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offer_past_either_limit_is_handed_back_and_one_large_item_still_gets_through() {
        let (worker, jobs) = queue::<u8>(2, 10);
        assert_eq!(worker.offer(1, 20), Ok(()), "alone, any size is taken");
        assert_eq!(worker.offer(2, 1), Err(2), "past the bytes");
        assert_eq!(jobs.next(), Some(1));
        assert_eq!(worker.offer(3, 4), Ok(()));
        assert_eq!(worker.offer(4, 4), Ok(()));
        assert_eq!(worker.offer(5, 0), Err(5), "past the items");
        assert_eq!(worker.len(), 2);
        jobs.settle(3);
        assert!(worker.flush(Duration::from_millis(1)));
        assert!(worker.close(Duration::from_secs(1)));
        assert_eq!(worker.offer(6, 0), Err(6), "closed");
        assert_eq!((jobs.try_next(), jobs.try_next()), (Ok(3), Ok(4)));
        assert_eq!(jobs.try_next(), Err(TryRecvError::Disconnected));
    }

    #[test]
    fn flush_waits_for_the_thread_to_settle_what_was_offered() {
        let (worker, jobs) = queue::<u32>(8, usize::MAX);
        let done = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&done);
        worker
            .start("ddwire-test-worker", move || {
                while let Some(n) = jobs.next() {
                    std::thread::sleep(Duration::from_millis(20));
                    seen.fetch_add(n as usize, Ordering::SeqCst);
                    jobs.settle(1);
                }
            })
            .unwrap();
        for n in [1, 2, 3] {
            worker.offer(n, 0).unwrap();
        }
        assert!(worker.flush(Duration::from_secs(10)));
        assert_eq!(done.load(Ordering::SeqCst), 6);
        assert!(worker.close(Duration::from_secs(10)));
    }
}
