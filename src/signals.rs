//! SIGTERM and SIGINT, received as messages: what `serve` and `agent` drain on; SIGHUP, on
//! which they reload their TLS certificate.
//!
//! Standard Rust has no signal API (see `vendor-notes/signals.md` for the choice). This module
//! is the crate's only `unsafe` code: it calls `sigaction` (POSIX.1-2017, `signal.h`) and
//! `write` as the `libc` crate declares them, and installs one handler for the three signals.
//! The handler does only what POSIX lists as async-signal-safe: it stores the signal number in
//! an atomic and writes one byte to a self-pipe (a non-blocking Unix socket pair made by std).
//! Everything else (logging, the drain itself) happens on an ordinary thread that reads the
//! other end ([`Signals::wait`]).
//!
//! The handler is installed with `SA_RESTART`, so a system call in progress elsewhere in the
//! process is restarted rather than failed with `EINTR`. `struct sigaction`, the signal numbers
//! and `SA_RESTART` are libc's own declarations for the target, so their layout and values are
//! right on every Unix target libc supports (glibc's layout differs on MIPS, for one). Elsewhere
//! [`install`] reports that signals are not supported, and the caller serves without a drain.

use std::io::{self, Read};
use std::sync::atomic::{AtomicI32, Ordering};

/// A signal that asks the process to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Signal {
    /// SIGTERM: what a service manager or `kill` sends.
    Terminate,
    /// SIGINT: Ctrl-C at a terminal.
    Interrupt,
    /// SIGHUP: reload (a listener's TLS certificate); never a stop.
    Hangup,
}

impl Signal {
    /// `SIGTERM` or `SIGINT`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Signal::Terminate => "SIGTERM",
            Signal::Interrupt => "SIGINT",
            Signal::Hangup => "SIGHUP",
        }
    }

    fn from_number(n: i32) -> Signal {
        match n {
            SIGINT => Signal::Interrupt,
            SIGHUP => Signal::Hangup,
            _ => Signal::Terminate,
        }
    }
}

#[cfg(unix)]
use libc::{SIGHUP, SIGINT, SIGTERM};
#[cfg(not(unix))]
const SIGHUP: i32 = 1;
#[cfg(not(unix))]
const SIGINT: i32 = 2;
#[cfg(not(unix))]
const SIGTERM: i32 = 15;

/// The write end of the self-pipe, for the handler; -1 until installed.
static PIPE: AtomicI32 = AtomicI32::new(-1);
/// The last signal received.
static LAST: AtomicI32 = AtomicI32::new(0);

/// The read end of the self-pipe: one byte per signal received.
#[derive(Debug)]
pub(crate) struct Signals {
    #[cfg(unix)]
    pipe: std::os::unix::net::UnixStream,
}

impl Signals {
    /// Block until SIGTERM or SIGINT arrives (at once if one already has).
    pub(crate) fn wait(&mut self) -> Signal {
        #[cfg(unix)]
        {
            let mut byte = [0u8; 1];
            loop {
                match self.pipe.read(&mut byte) {
                    Ok(1) => return Signal::from_number(i32::from(byte[0])),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // The write end is never closed; should the read fail, say the process
                    // was asked to stop rather than spin.
                    _ => return Signal::from_number(LAST.load(Ordering::SeqCst)),
                }
            }
        }
        #[cfg(not(unix))]
        loop {
            std::thread::park();
        }
    }
}

/// Install the handler for SIGTERM, SIGINT and SIGHUP. Call it once per process, before the threads
/// that should not see the default action (termination) start serving.
pub(crate) fn install() -> io::Result<Signals> {
    #[cfg(unix)]
    {
        use std::os::fd::IntoRawFd;
        let (read, write) = std::os::unix::net::UnixStream::pair()?;
        // The handler must never block: a full pipe already holds a wake-up.
        write.set_nonblocking(true)?;
        let fd = write.into_raw_fd();
        if PIPE
            .compare_exchange(-1, fd, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "the signal handler is already installed",
            ));
        }
        for signal in [SIGTERM, SIGINT, SIGHUP] {
            sys::install(signal)?;
        }
        Ok(Signals { pipe: read })
    }
    #[cfg(not(unix))]
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "signal handling is implemented for Unix only",
    ))
}

/// The handler: async-signal-safe operations only (an atomic store, `write(2)`).
#[cfg(unix)]
extern "C" fn on_signal(signal: std::ffi::c_int) {
    LAST.store(signal, Ordering::SeqCst);
    let fd = PIPE.load(Ordering::SeqCst);
    if fd >= 0 {
        // Signal numbers fit a byte; the result is ignored: a full pipe already wakes.
        let byte = signal as u8;
        // SAFETY: `fd` is the write end of the self-pipe, open for the life of the process
        // (its ownership was given up in `install`), and `byte` outlives the call.
        unsafe {
            sys::write(fd, (&raw const byte).cast(), 1);
        }
    }
}

#[cfg(unix)]
mod sys {
    use std::ffi::c_int;
    use std::io;

    pub(super) use libc::write;

    pub(super) fn install(signal: c_int) -> io::Result<()> {
        // SAFETY: `struct sigaction` is plain data (a handler address, a signal set, flags and,
        // on some targets, a restorer the C library fills in), for which all zeroes is a valid
        // value; the mask is then emptied by `sigemptyset` as POSIX asks, a null `oldact` is
        // allowed, and the handler is async-signal-safe.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = super::on_signal as extern "C" fn(c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}
