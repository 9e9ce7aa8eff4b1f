//! One outbound call as both transports (ureq over TCP or TLS, and the in-memory one) see it:
//! the request, the response and its size cap, and the interrupt in force on the calling
//! thread. `client.rs` sends calls over either transport; `memory.rs` carries them in memory;
//! both read this, so neither needs the other's internals.
//!
//! # Interrupting a call
//!
//! `interruptible` runs calls on the calling thread so that another thread can make them
//! give up: once the `Interrupt`'s flag is set, a call waiting for its response fails within
//! `INTERRUPT_POLL` with [`WireError::Interrupted`](crate::wire::WireError::Interrupted), over
//! TCP, TLS and the in-memory transport alike, and its connection is closed (never pooled).
//! The wait for a response, head or body, is cut into slices of that length while an interrupt
//! is in force, and the flag is read between them: a call waiting on a slow agent makes one
//! timed `read` (and, over TCP, a `setsockopt`) 40 times a second. Nothing else changes, and a
//! call made outside `interruptible` waits as it always did. Connecting and sending are not
//! sliced: they are bounded by the call's own timeout.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

/// A request to send.
#[derive(Clone, Debug)]
pub(crate) struct ClientRequest {
    /// `GET` or `POST`.
    pub(crate) method: &'static str,
    /// The absolute `http://` URL.
    pub(crate) url: String,
    /// Extra header fields (`Host` and framing are added by the transport).
    pub(crate) headers: Vec<(String, String)>,
    /// The body (empty for `GET`).
    pub(crate) body: Vec<u8>,
    /// The whole call must finish within this (connect, send, receive).
    pub(crate) timeout: Duration,
}

impl ClientRequest {
    /// A `GET`.
    pub(crate) fn get(url: impl Into<String>, timeout: Duration) -> ClientRequest {
        ClientRequest {
            method: "GET",
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout,
        }
    }

    /// A `POST` of a JSON body.
    pub(crate) fn post_json(
        url: impl Into<String>,
        body: Vec<u8>,
        timeout: Duration,
    ) -> ClientRequest {
        ClientRequest {
            method: "POST",
            url: url.into(),
            headers: vec![("Content-Type".into(), "application/json".into())],
            body,
            timeout,
        }
    }

    /// Add a header.
    pub(crate) fn header(mut self, name: &str, value: &str) -> ClientRequest {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A response received.
#[derive(Clone, Debug)]
pub(crate) struct ClientResponse {
    /// The status code.
    pub(crate) status: u16,
    /// Names lower-cased.
    pub(crate) headers: Vec<(String, String)>,
    /// The whole body, read within `MAX_RESPONSE_BYTES`.
    pub(crate) body: Vec<u8>,
}

impl ClientResponse {
    /// The first value of a header.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        super::header(&self.headers, name)
    }
}

/// The largest response body a client accepts (a reply carrying an agent's spans can be
/// large, but not unbounded).
pub(crate) const MAX_RESPONSE_BYTES: u64 = 32 * 1024 * 1024;

/// How soon an interrupted call notices, at most, while it waits for a response.
pub(crate) const INTERRUPT_POLL: Duration = Duration::from_millis(25);

/// What makes a call in flight give up: a flag another thread sets, and a channel that is
/// disconnected when it does (the in-memory transport waits on it).
#[derive(Clone)]
pub(crate) struct Interrupt {
    pub(crate) flag: Arc<std::sync::atomic::AtomicBool>,
    pub(crate) wake: crossbeam_channel::Receiver<()>,
}

impl Interrupt {
    pub(crate) fn is_set(&self) -> bool {
        self.flag.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Run `calls` with `interrupt` in force for every HTTP call they make on this thread (see
/// the module's "Interrupting a call"). When `calls` returns or unwinds, whatever was in force
/// before is again.
pub(crate) fn interruptible<T>(interrupt: Interrupt, calls: impl FnOnce() -> T) -> T {
    struct Restore(Option<Interrupt>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            INTERRUPT.with(|i| *i.borrow_mut() = before);
        }
    }
    let _restore = Restore(INTERRUPT.with(|i| i.borrow_mut().replace(interrupt)));
    calls()
}

/// The interrupt in force on this thread, if any.
pub(crate) fn interrupt_in_force() -> Option<Interrupt> {
    INTERRUPT.with(|i| i.borrow().clone())
}

thread_local! {
    /// The interrupt the calls on this thread answer to ([`interruptible`]).
    static INTERRUPT: RefCell<Option<Interrupt>> = const { RefCell::new(None) };
}
