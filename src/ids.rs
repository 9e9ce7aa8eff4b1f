//! Identifiers and the randomness behind them: UUIDv7 (RFC 9562 §5.7), random bytes for trace
//! and span ids, secrets, and lower-case hex.
//!
//! This sits at the bottom of the crate, beside [`json`](crate::json) and the clock,
//! so the trace and the wire can mint ids without knowing the contract that names them.

use crate::text::Unpoison;
use std::sync::Mutex;

/// A new UUIDv7, lowercase, time-ordered within this process.
///
/// Layout as CPython 3.14's `uuid.uuid7()` (which the reference uses): 48 bits of Unix
/// milliseconds, then a 42-bit counter seeded at random each new millisecond (top bit clear,
/// so it has room to count) and incremented within one, then 32 random bits. Two ids made in
/// order therefore compare in order as strings, which the run store relies on.
///
/// ```
/// let (a, b) = (ddwire::ids::new_uuid7(), ddwire::ids::new_uuid7());
/// assert!(ddwire::ids::is_uuid7(&a) && a < b);
/// ```
pub fn new_uuid7() -> String {
    static LAST: Mutex<(u64, u64)> = Mutex::new((0, 0));
    let now_ms = crate::time::now_ns() / 1_000_000;
    let (ms, counter) = {
        let mut last = LAST.lock().unpoisoned();
        let (last_ms, last_counter) = *last;
        let next = if now_ms > last_ms {
            (now_ms, random_u64() & ((1 << 41) - 1))
        } else if last_counter + 1 < (1 << 42) {
            (last_ms, last_counter + 1)
        } else {
            // Counter exhausted within one millisecond: borrow the next millisecond.
            (last_ms + 1, random_u64() & ((1 << 41) - 1))
        };
        *last = next;
        next
    };
    let tail = random_u64() & 0xffff_ffff;
    let hi: u64 = (ms << 16) | 0x7000 | (counter >> 30);
    let lo: u64 = (0b10 << 62) | ((counter & ((1 << 30) - 1)) << 32) | tail;
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&hi.to_be_bytes());
    bytes[8..].copy_from_slice(&lo.to_be_bytes());
    // Straight into the one string returned: ids are minted several times per call.
    let mut out = String::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        push_hex(&mut out, *b);
    }
    out
}

/// Whether `s` is a UUIDv7 as the contract spells one: lowercase, hyphenated, version 7,
/// variant `10` (the schemas' pattern
/// `^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).
pub fn is_uuid7(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
        })
        && b[14] == b'7'
        && matches!(b[19], b'8' | b'9' | b'a' | b'b')
}

/// 64 random bits for an identifier (see [`random_bytes`]).
pub(crate) fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    random_bytes(&mut b);
    u64::from_le_bytes(b)
}

/// Fill `buf` with random bytes for identifiers (UUIDs, trace and span ids).
///
/// The bytes come from the operating system's generator, drawn 512 at a time into a
/// per-thread pool, so minting ids does not cost a system call each. Secrets (delegation
/// grants, nonces, keys) use [`secret_bytes`], which is never pooled.
pub(crate) fn random_bytes(buf: &mut [u8]) {
    use std::cell::RefCell;
    const POOL: usize = 512;
    thread_local! {
        static BYTES: RefCell<([u8; POOL], usize)> = const { RefCell::new(([0; POOL], POOL)) };
    }
    BYTES.with(|cell| {
        let (pool, used) = &mut *cell.borrow_mut();
        for chunk in buf.chunks_mut(POOL) {
            if *used + chunk.len() > POOL {
                secret_bytes(pool);
                *used = 0;
            }
            chunk.copy_from_slice(&pool[*used..*used + chunk.len()]);
            *used += chunk.len();
        }
    })
}

/// Fill `buf` straight from the operating system's generator. A machine that cannot supply
/// randomness cannot mint identifiers or grants safely, so this is one of the few places
/// ddwire panics.
pub(crate) fn secret_bytes(buf: &mut [u8]) {
    try_secret_bytes(buf).expect("the operating system's random number generator failed")
}

/// [`secret_bytes`], for a caller that can report the generator's failure instead.
pub(crate) fn try_secret_bytes(buf: &mut [u8]) -> Result<(), getrandom::Error> {
    getrandom::fill(buf)
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths: every byte pair
/// is compared, whatever the first difference, so a forger or a token guesser learns nothing from the timing.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // Kept opaque so the fold is not turned into an early-exit comparison.
    std::hint::black_box(diff) == 0
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        push_hex(&mut out, *b);
    }
    out
}

fn push_hex(out: &mut String, b: u8) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.push(DIGITS[usize::from(b >> 4)] as char);
    out.push(DIGITS[usize::from(b & 0xf)] as char);
}

/// Whether every byte of `s` is a lower-case hex digit.
pub(crate) fn is_lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_every_byte_and_the_length() {
        assert!(constant_time_eq(b"", b""));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"xbc"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }

    #[test]
    fn uuid7_identifier_is_generated_and_matches_pattern() {
        let id = new_uuid7();
        assert!(is_uuid7(&id), "{id}");
        assert_eq!(id.as_bytes()[14], b'7');
    }

    #[test]
    fn uuid7_identifiers_made_in_order_sort_in_order() {
        let ids: Vec<String> = (0..10_000).map(|_| new_uuid7()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn uuid7_pattern_refuses_other_versions_variants_and_case() {
        assert!(!is_uuid7("0190b3c2-6a4e-4c3b-8a1d-6f0e2d3c4b5a")); // version 4
        assert!(!is_uuid7("0190b3c2-6a4e-7c3b-ca1d-6f0e2d3c4b5a")); // variant 110
        assert!(!is_uuid7("0190B3C2-6A4E-7C3B-8A1D-6F0E2D3C4B5A")); // uppercase
        assert!(!is_uuid7("0190b3c2-6a4e-7c3b-8a1d-6f0e2d3c4b5"));
        assert!(is_uuid7("0190b3c2-6a4e-7c3b-8a1d-6f0e2d3c4b5a"));
    }

    #[test]
    fn uuid7_pattern_refuses_a_hyphen_in_place_of_a_digit() {
        // Five hyphens split into groups that are each hex, one of them empty.
        assert!(!is_uuid7("-190b3c2-6a4e-7c3b-8a1d-6f0e2d3c4b5a"));
        assert!(!is_uuid7("0190b3c2-6a4e-7c3b-8a1d-6f0e2d3c4b-a"));
    }

    #[test]
    fn hex_is_two_lower_case_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert!(is_lower_hex("0123456789abcdef") && !is_lower_hex("ABC"));
    }

    #[test]
    fn random_bytes_beyond_the_pool_are_filled() {
        let mut big = [0u8; 2000];
        random_bytes(&mut big);
        assert!(big[1500..].iter().any(|&b| b != 0));
    }
}
