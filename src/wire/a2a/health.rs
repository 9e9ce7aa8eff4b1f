//! Reading the cards of the peers a registry keeps, for both registries: the harness's agents
//! and the relay's peers. One reading of a card, timed and stamped
//! ([`A2aClient::check_card`]); the cards of many peers read a few at a time
//! ([`check_all`]); and a thread that reads them again while its owner lives ([`watch`]).
//! What a card says, and what its registry makes of it (admitted, unavailable, up, down), stay
//! with each registry, in its own words.

use super::client::A2aClient;
use crate::wire::WireError;
use serde_json::Value;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// How many peers' cards are read at once.
pub(crate) const AT_ONCE: usize = 16;

/// One reading of a peer's card.
#[derive(Debug)]
pub(crate) struct CardCheck {
    /// The card, or why it could not be had (a 404 at both well-known paths is
    /// [`WireError::HttpStatus`]).
    pub(crate) card: Result<Value, WireError>,
    /// When the reading ended (RFC 3339).
    pub(crate) checked_at: String,
    /// How long it took, in milliseconds.
    pub(crate) latency_ms: u64,
}

impl A2aClient {
    /// Read the card at `base_url` ([`A2aClient::fetch_card`]) within `timeout`, sending
    /// `headers` too (a relay's `Via`), and time it.
    pub(crate) fn check_card(
        &self,
        base_url: &str,
        timeout: Duration,
        headers: &[(&str, &str)],
    ) -> CardCheck {
        let started = Instant::now();
        let card = self.fetch_card_with(base_url, timeout, headers);
        CardCheck {
            card,
            checked_at: crate::time::now_rfc3339(),
            latency_ms: started.elapsed().as_millis() as u64,
        }
    }
}

/// `check` of every item, [`AT_ONCE`] at a time on threads of their own, so that one silent
/// peer holds the others for one timeout at most; the results in the items' order.
pub(crate) fn check_all<T: Sync, R: Send>(items: &[T], check: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let check = &check;
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(AT_ONCE) {
        std::thread::scope(|scope| {
            let running: Vec<_> = chunk
                .iter()
                .map(|item| scope.spawn(move || check(item)))
                .collect();
            for handle in running {
                match handle.join() {
                    Ok(result) => out.push(result),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        });
    }
    out
}

/// On a thread named `name`, for as long as `owner` lives: wait as long as `wait` says, then
/// run `round`. The thread holds the owner only while it asks or runs, and ends at the first
/// wake-up after the owner's last handle is dropped. `Err` when the thread cannot start.
pub(crate) fn watch<T: Send + Sync + 'static>(
    owner: Weak<T>,
    name: &str,
    mut wait: impl FnMut(&T) -> Duration + Send + 'static,
    mut round: impl FnMut(&Arc<T>) + Send + 'static,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            loop {
                let Some(pause) = owner.upgrade().map(|o| wait(&o)) else {
                    return;
                };
                std::thread::sleep(pause);
                match owner.upgrade() {
                    Some(o) => round(&o),
                    None => return,
                }
            }
        })
        .map(|_| ())
}
