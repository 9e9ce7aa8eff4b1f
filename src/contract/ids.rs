//! Identifiers: UUIDv7 (RFC 9562 §5.7) and the other patterns the contract pins.
//!
//! Each pattern is written twice on purpose: as the JSON Schema `pattern` string the
//! contract's schemas carry (what a Python reader checks), and as a plain function that checks
//! the same language without a regex engine (what ddwire's hot paths call). A test runs both
//! over the same corpus so they cannot drift.

use std::sync::Mutex;

/// `invocation_id`, `conversation_id`, `parent_invocation_id`, `delegated_invocation_id`.
pub const UUID7_PATTERN: &str =
    "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";
/// Content hashes and schema digests: SHA-256 as 64 lowercase hex digits.
pub const SHA256_PATTERN: &str = "^[0-9a-f]{64}$";
/// `policy_bundle_ref`: `profile:<id>@v<version>`.
pub const POLICY_BUNDLE_REF_PATTERN: &str = "^profile:[a-z0-9][a-z0-9.-]*@v[0-9]+$";
/// `Principal.principal_id`: an absolute IRI (scheme, colon, no whitespace).
pub const IRI_PATTERN: &str = r"^[a-z][a-z0-9+.-]*:\S+$";
/// `contract_version`: a strict semantic version `X.Y.Z`.
pub const VERSION_PATTERN: &str = r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$";

/// A new UUIDv7, lowercase, time-ordered within this process.
///
/// Layout as CPython 3.14's `uuid.uuid7()` (which the reference uses): 48 bits of Unix
/// milliseconds, then a 42-bit counter seeded at random each new millisecond (top bit clear,
/// so it has room to count) and incremented within one, then 32 random bits. Two ids made in
/// order therefore compare in order as strings, which the run store relies on.
pub fn new_uuid7() -> String {
    static LAST: Mutex<(u64, u64)> = Mutex::new((0, 0));
    let now_ms = crate::time::now_ns() / 1_000_000;
    let (ms, counter) = {
        let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
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
    // Straight into the one string returned: ids are minted several times per call.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(36);
    for (i, b) in hi.to_be_bytes().iter().chain(&lo.to_be_bytes()).enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// 64 random bits for an identifier (see [`random_bytes`]).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    random_bytes(&mut b);
    u64::from_le_bytes(b)
}

/// Fill `buf` with random bytes for identifiers (UUIDs, trace and span ids).
///
/// The bytes come from the operating system's generator, drawn 512 at a time into a
/// per-thread pool, so minting ids does not cost a system call each. Secrets (delegation
/// grants) use [`secret_bytes`], which is never pooled.
pub fn random_bytes(buf: &mut [u8]) {
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
pub fn secret_bytes(buf: &mut [u8]) {
    getrandom::fill(buf).expect("the operating system's random number generator failed")
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// [`UUID7_PATTERN`].
pub fn is_uuid7(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && s.split('-').all(is_lower_hex)
        && b[14] == b'7'
        && matches!(b[19], b'8' | b'9' | b'a' | b'b')
}

/// [`SHA256_PATTERN`].
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && is_lower_hex(s)
}

/// [`POLICY_BUNDLE_REF_PATTERN`].
pub fn is_policy_bundle_ref(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("profile:") else {
        return false;
    };
    let Some((id, version)) = rest.rsplit_once("@v") else {
        return false;
    };
    let id_ok = id
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
    id_ok && !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit())
}

/// [`IRI_PATTERN`]: `scheme:rest` with a lowercase scheme and no whitespace in the rest.
pub fn is_iri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase())
        && scheme.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'+' | b'.' | b'-')
        })
        && !rest.is_empty()
        && !rest.chars().any(is_py_space)
}

/// [`VERSION_PATTERN`].
pub fn is_semver(s: &str) -> bool {
    parse_semver(s).is_some()
}

/// `X.Y.Z` as numbers, if `s` is a strict semantic version (no leading zeros).
pub fn parse_semver(s: &str) -> Option<(u64, u64, u64)> {
    let mut parts = s.split('.');
    let mut next = || -> Option<u64> {
        let p = parts.next()?;
        let ok = !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_digit())
            && (p == "0" || !p.starts_with('0'));
        if ok { p.parse().ok() } else { None }
    };
    let v = (next()?, next()?, next()?);
    parts.next().is_none().then_some(v)
}

/// Python's `str.isspace()`, which is what `\s` means in the reference's regexes: Unicode
/// White_Space plus the four ASCII separators U+001C..U+001F.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Whether `s` has a non-whitespace character (the pattern `\S` on `Principal.name`).
pub fn has_non_space(s: &str) -> bool {
    s.chars().any(|c| !is_py_space(c))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn semver_is_strict_x_y_z() {
        assert_eq!(parse_semver("0.7.0"), Some((0, 7, 0)));
        assert_eq!(parse_semver("10.20.30"), Some((10, 20, 30)));
        for bad in ["0.6", "01.2.3", "1.2.3.4", "1.2.x", "", "1..2"] {
            assert!(!is_semver(bad), "{bad}");
        }
    }

    #[test]
    fn principal_id_must_be_an_absolute_iri_without_spaces() {
        assert!(is_iri("https://orcid.org/0000-0002-1825-0097"));
        assert!(is_iri("urn:dd:role:data-steward"));
        assert!(!is_iri("0000-0002-1825-0097"));
        assert!(!is_iri("https://orcid.org/0000 0002"));
        assert!(!is_iri("Https://x"));
        assert!(!is_iri("https:"));
    }

    #[test]
    fn policy_bundle_ref_names_a_profile_and_its_version() {
        assert!(is_policy_bundle_ref("profile:test-restrictive@v2"));
        assert!(is_policy_bundle_ref("profile:default@v1"));
        assert!(!is_policy_bundle_ref("profile:Default@v1"));
        assert!(!is_policy_bundle_ref("profile:default@v"));
        assert!(!is_policy_bundle_ref("default@v1"));
    }
}
