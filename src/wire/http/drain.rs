//! Drain: what a server's handlers need to know when the process is asked to stop.
//!
//! A [`Drain`] is shared by the process (which starts it on SIGTERM or SIGINT, see
//! [`crate::signals`]) and the handlers. Once [`Drain::start`]ed, readiness answers 503 so a
//! load balancer stops sending work; the listener is closed by [`super::server::Server`]. When
//! the drain deadline passes with streams still open, [`Drain::cut`] ends each stream guarded
//! by [`Drain::guard`] with the terminal event its protocol defines, rather than leaving the
//! client with a connection that simply closes, and runs the hooks given to [`Drain::on_cut`]
//! (the A2A endpoint cancels its running tasks, so a blocking call is answered with an error
//! rather than a closed connection).

use super::{Handler, Request, Response};
use crate::text::Unpoison;
use crossbeam_channel::{Receiver, Sender, select};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The drain state of one process. Cheap to clone; clones share it.
#[derive(Clone)]
pub(crate) struct Drain {
    inner: Arc<Inner>,
}

struct Inner {
    started: AtomicBool,
    /// Set by [`Drain::cut`], read without a lock on every blocking call's way out.
    cut: AtomicBool,
    /// Dropped by [`Drain::cut`]: every guard's `select` then sees its channel disconnect.
    cut_tx: Mutex<Option<Sender<()>>>,
    cut_rx: Receiver<()>,
    /// Run once, by the first [`Drain::cut`].
    on_cut: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
}

impl Default for Drain {
    fn default() -> Drain {
        let (cut_tx, cut_rx) = crossbeam_channel::bounded(0);
        Drain {
            inner: Arc::new(Inner {
                started: AtomicBool::new(false),
                cut: AtomicBool::new(false),
                cut_tx: Mutex::new(Some(cut_tx)),
                cut_rx,
                on_cut: Mutex::new(Vec::new()),
            }),
        }
    }
}

impl Drain {
    /// A drain not started.
    pub(crate) fn new() -> Drain {
        Drain::default()
    }

    /// Start draining: readiness answers 503 from now on.
    pub(crate) fn start(&self) {
        self.inner.started.store(true, Ordering::SeqCst);
    }

    /// Whether the drain has started.
    pub(crate) fn is_started(&self) -> bool {
        self.inner.started.load(Ordering::SeqCst)
    }

    /// End every guarded stream now, each with its terminal event, and run the cut hooks.
    pub(crate) fn cut(&self) {
        self.start();
        self.inner.cut_tx.lock().unpoisoned().take();
        // The flag is set under the hooks' lock, so a hook given meanwhile either is taken
        // here or sees the cut and runs at once: never neither.
        let hooks = {
            let mut hooks = self.inner.on_cut.lock().unpoisoned();
            self.inner.cut.store(true, Ordering::SeqCst);
            std::mem::take(&mut *hooks)
        };
        for hook in hooks {
            hook();
        }
    }

    /// Whether the drain has been cut.
    pub(crate) fn is_cut(&self) -> bool {
        self.inner.cut.load(Ordering::SeqCst)
    }

    /// Run `hook` when the drain is cut (at once, if it already is).
    pub(crate) fn on_cut(&self, hook: impl FnOnce() + Send + 'static) {
        {
            let mut hooks = self.inner.on_cut.lock().unpoisoned();
            if !self.is_cut() {
                hooks.push(Box::new(hook));
                return;
            }
        }
        hook();
    }

    /// `handler`, except that `GET /healthz` answers 503 `{"status": "draining"}` once the
    /// drain has started: for a server whose readiness knows nothing else (the agent server).
    pub(crate) fn gate(&self, handler: Handler) -> Handler {
        let drain = self.clone();
        Arc::new(move |request: Request| {
            if drain.is_started() && request.method == "GET" && request.path == "/healthz" {
                return Response::json(
                    503,
                    &serde_json::json!({
                        "status": "draining",
                        "ready": false,
                        "reasons": ["the server is draining: it is shutting down"],
                    }),
                );
            }
            handler(request)
        })
    }

    /// A stream that carries `chunks` until they end, or until the drain is cut; then it
    /// sends `terminal` and ends. One thread forwards for the stream's life.
    ///
    /// The forwarder holds at most one chunk, and the stream it returns at most one more: a
    /// client that stops reading stops the forwarder, which stops taking from `chunks`, so the
    /// producer feels the back-pressure instead of the process buffering the stream without
    /// bound. A cut is still seen while the forwarder waits on a client that does not read.
    pub(crate) fn guard(&self, chunks: Receiver<Vec<u8>>, terminal: Vec<u8>) -> Receiver<Vec<u8>> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let cut = self.inner.cut_rx.clone();
        std::thread::spawn(move || {
            let mut pending: Option<Vec<u8>> = None;
            loop {
                match pending.take() {
                    None => select! {
                        recv(chunks) -> chunk => match chunk {
                            Ok(chunk) => pending = Some(chunk),
                            Err(_) => return,
                        },
                        recv(cut) -> _ => break,
                    },
                    Some(chunk) => select! {
                        send(tx, chunk) -> sent => if sent.is_err() { return },
                        recv(cut) -> _ => break,
                    },
                }
            }
            let _ = tx.send(terminal);
        });
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_guarded_stream_passes_its_chunks_then_ends_with_the_terminal_event_when_cut() {
        let drain = Drain::new();
        let (tx, rx) = crossbeam_channel::unbounded();
        let out = drain.guard(rx, b"terminal".to_vec());
        tx.send(b"one".to_vec()).unwrap();
        let wait = Duration::from_secs(10);
        assert_eq!(out.recv_timeout(wait).unwrap(), b"one");
        assert!(!drain.is_started());
        drain.cut();
        assert!(drain.is_started());
        assert_eq!(out.recv_timeout(wait).unwrap(), b"terminal");
        // The stream has ended although its producer still holds its sender.
        assert!(out.recv_timeout(wait).is_err());
        drop(tx);
    }

    #[test]
    fn a_guarded_stream_whose_reader_stalls_holds_two_chunks_and_pushes_back() {
        let drain = Drain::new();
        let (tx, rx) = crossbeam_channel::bounded(0);
        let out = drain.guard(rx, b"terminal".to_vec());
        // One chunk waits in the stream, one in the forwarder; the third cannot be handed over.
        let wait = Duration::from_millis(500);
        tx.send_timeout(b"1".to_vec(), wait).unwrap();
        tx.send_timeout(b"2".to_vec(), wait).unwrap();
        assert!(tx.send_timeout(b"3".to_vec(), wait).is_err());
        // A cut is seen while the reader still does not read.
        drain.cut();
        let wait = Duration::from_secs(10);
        assert_eq!(out.recv_timeout(wait).unwrap(), b"1");
        let rest: Vec<Vec<u8>> = out.iter().collect();
        assert_eq!(rest.last().unwrap(), b"terminal");
        assert!(rest.len() <= 2, "{rest:?}");
    }

    #[test]
    fn a_guarded_stream_that_ends_by_itself_sends_no_terminal_event() {
        let drain = Drain::new();
        let (tx, rx) = crossbeam_channel::unbounded();
        let out = drain.guard(rx, b"terminal".to_vec());
        tx.send(b"last".to_vec()).unwrap();
        drop(tx);
        let wait = Duration::from_secs(10);
        assert_eq!(out.recv_timeout(wait).unwrap(), b"last");
        assert!(out.recv_timeout(wait).is_err());
    }
}
