//! Serving until SIGTERM or SIGINT, then draining: what `serve` and `agent` share.
//!
//! On the first signal: readiness turns 503, the listener closes (new connections are
//! refused), requests and runs in flight get up to `--drain-timeout` to finish, streams still
//! open at the deadline end with their terminal event, the OTLP queue is flushed, and the
//! process exits 0. A second signal exits at once (status 1).

use super::args::{Flag, Parsed};
use crate::signals;
use crate::wire::http::drain::Drain;
use crate::wire::http::server::Server;
use crate::wire::otlp::Exporter;
use crate::wire::tls::ServerIdentity;
use std::time::{Duration, Instant};

/// The default `--drain-timeout`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest `--drain-timeout` accepted.
const MAX_TIMEOUT_S: f64 = 3600.0;
/// How long streams cut at the deadline get to write their terminal event.
const CUT_GRACE: Duration = Duration::from_secs(2);
/// How long the OTLP queue gets to flush after the drain.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

pub(crate) const DRAIN_TIMEOUT: Flag = Flag::taking(
    "drain-timeout",
    "S",
    "On SIGTERM/SIGINT, how long runs in flight get to finish, in seconds (default 10)",
);

/// A server command's drain, set up before it serves: its `--drain-timeout`, and the drain
/// state its handler shares.
pub(crate) struct Draining {
    who: &'static str,
    timeout: Duration,
    pub(crate) drain: Drain,
    signals: Option<signals::Signals>,
}

impl Draining {
    /// The drain of the command `who`, with `--drain-timeout` checked.
    pub(crate) fn new(args: &Parsed, who: &'static str) -> Result<Draining, String> {
        let timeout = args
            .seconds(
                "drain-timeout",
                |s| (0.0..=MAX_TIMEOUT_S).contains(&s),
                |s| format!("--drain-timeout must be from 0 to {MAX_TIMEOUT_S} seconds, got {s}"),
            )?
            .unwrap_or(DEFAULT_TIMEOUT);
        Ok(Draining {
            who,
            timeout,
            drain: Drain::new(),
            signals: None,
        })
    }

    /// Install the signal handler. Call before serving, so that a signal arriving during
    /// start-up drains rather than kills.
    pub(crate) fn install(&mut self) {
        self.signals = signals::install()
            .inspect_err(|e| {
                stderr_line!(
                    "ddwire {}: warning: no drain on SIGTERM/SIGINT ({e}); the process stops at once",
                    self.who
                )
            })
            .ok();
    }

    /// Serve `server` until a signal, then drain it: wait for its requests and for `busy` work
    /// (running off the request threads: the harness's background runs), then flush `otlp`.
    /// SIGHUP reloads `tls`, the listener's certificate, and calls `on_hangup` (`serve`: the
    /// agents configuration is read again). The exit status.
    pub(crate) fn serve_until_signal(
        self,
        mut server: Server,
        tls: Option<ServerIdentity>,
        otlp: Option<Exporter>,
        busy: &dyn Fn() -> usize,
        on_hangup: Option<&dyn Fn()>,
    ) -> i32 {
        let Some(mut signals) = self.signals else {
            server.wait();
            return 0;
        };
        let who = self.who;
        let signal = loop {
            match signals.wait() {
                signals::Signal::Hangup => {
                    reload(who, tls.as_ref());
                    if let Some(more) = on_hangup {
                        more();
                    }
                }
                stop => break stop,
            }
        };
        std::thread::spawn(move || {
            let again = loop {
                match signals.wait() {
                    signals::Signal::Hangup => {}
                    stop => break stop,
                }
            };
            stderr_line!(
                "ddwire {who}: {} during the drain: exiting now",
                again.name()
            );
            std::process::exit(1);
        });
        let started = Instant::now();
        let deadline = started + self.timeout;
        self.drain.start();
        server.stop_accepting();
        // Said once it is true: a supervisor that reads this line and connects must be refused.
        stderr_line!(
            "ddwire {who}: {}: draining: no new connections; work in flight gets up to {:.1} s",
            signal.name(),
            self.timeout.as_secs_f64()
        );
        while (server.in_flight() > 0 || busy() > 0) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let (requests, runs) = (server.in_flight(), busy());
        if requests > 0 || runs > 0 {
            stderr_line!(
                "ddwire {who}: drain timeout: {requests} request(s) and {runs} run(s) still in flight \
                 are abandoned; open streams end with a terminal event"
            );
            self.drain.cut();
        }
        server.close_by(Instant::now() + CUT_GRACE);
        if let Some(otlp) = &otlp
            && !otlp.flush(FLUSH_TIMEOUT)
        {
            stderr_line!(
                "ddwire {who}: the OTLP queue did not empty within {} s; {} batch(es) unsent",
                FLUSH_TIMEOUT.as_secs(),
                otlp.stats().queued
            );
        }
        stderr_line!(
            "ddwire {who}: drained in {:.2} s; exiting",
            started.elapsed().as_secs_f64()
        );
        0
    }
}

/// SIGHUP: read the listener's certificate and key again, keeping the old pair if the new
/// one is refused.
fn reload(who: &str, tls: Option<&ServerIdentity>) {
    match tls {
        None => stderr_line!("ddwire {who}: SIGHUP: no TLS certificate to reload; going on"),
        Some(identity) => match identity.reload() {
            Ok(true) => stderr_line!("ddwire {who}: SIGHUP: TLS certificate reloaded"),
            Ok(false) => {
                stderr_line!("ddwire {who}: SIGHUP: TLS certificate read again; unchanged")
            }
            Err(e) => stderr_line!(
                "ddwire {who}: SIGHUP: TLS certificate not reloaded, the old one stays: {e}"
            ),
        },
    }
}
