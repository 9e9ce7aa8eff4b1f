//! HMAC-SHA256, written by hand over `sha2` (RFC 2104, with SHA-256 as RFC 4231 specifies).
//!
//! `HMAC(K, m) = H((K' ⊕ opad) ‖ H((K' ⊕ ipad) ‖ m))` (RFC 2104 §2), where `H` is SHA-256
//! (block size B = 64 bytes, output L = 32 bytes), `K'` is the key padded with zeros to B bytes
//! or, for a key longer than B, `H(K)` padded likewise, `ipad` is B bytes of `0x36` and `opad`
//! B bytes of `0x5c`. Tested against every HMAC-SHA-256 vector of RFC 4231 §4 (cases 1–7; case
//! 5 compares the leftmost 128 bits, as §4.6 says).
//!
//! Only what the request signature ([`super::sign`]) needs: one-shot and incremental MACs. A
//! MAC is compared with `ids::constant_time_eq`, never with `==`.

use sha2::{Digest, Sha256};

/// SHA-256's block size in bytes (B in RFC 2104).
const BLOCK: usize = 64;

/// The length of an HMAC-SHA256 tag in bytes (L in RFC 2104).
pub(crate) const TAG_LEN: usize = 32;

/// An HMAC-SHA256 computation in progress: feed it the message with [`Hmac::update`].
#[derive(Clone)]
pub(crate) struct Hmac {
    inner: Sha256,
    /// `K' ⊕ opad`, kept for the outer hash.
    outer_key: [u8; BLOCK],
}

impl Hmac {
    /// Start a MAC under `key` (any length; RFC 2104 §3 recommends at least L bytes).
    pub(crate) fn new(key: &[u8]) -> Hmac {
        let mut padded = [0u8; BLOCK];
        if key.len() > BLOCK {
            // RFC 2104 §2: a key longer than B is first hashed.
            padded[..TAG_LEN].copy_from_slice(&Sha256::digest(key));
        } else {
            padded[..key.len()].copy_from_slice(key);
        }
        let mut inner_key = [0u8; BLOCK];
        let mut outer_key = [0u8; BLOCK];
        for ((i, o), k) in inner_key.iter_mut().zip(&mut outer_key).zip(&padded) {
            *i = k ^ 0x36;
            *o = k ^ 0x5c;
        }
        let mut inner = Sha256::new();
        inner.update(inner_key);
        Hmac { inner, outer_key }
    }

    /// Add message bytes.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.inner.update(bytes);
    }

    /// The tag.
    pub(crate) fn finalize(self) -> [u8; TAG_LEN] {
        let inner = self.inner.finalize();
        let mut outer = Sha256::new();
        outer.update(self.outer_key);
        outer.update(inner);
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&outer.finalize());
        tag
    }
}

/// HMAC-SHA256 of `message` under `key`.
pub(crate) fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; TAG_LEN] {
    let mut mac = Hmac::new(key);
    mac.update(message);
    mac.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{constant_time_eq, hex};

    /// RFC 4231 §4: (key, data, HMAC-SHA-256) for test cases 1–7. Case 5's tag is the
    /// leftmost 128 bits, which is all the RFC gives for it.
    fn rfc4231() -> Vec<(&'static str, Vec<u8>, Vec<u8>, &'static str)> {
        vec![
            (
                "4.2 test case 1",
                vec![0x0b; 20],
                b"Hi There".to_vec(),
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            ),
            (
                "4.3 test case 2: a key shorter than the output",
                b"Jefe".to_vec(),
                b"what do ya want for nothing?".to_vec(),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                "4.4 test case 3: key and data of repeated bytes",
                vec![0xaa; 20],
                vec![0xdd; 50],
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
            ),
            (
                "4.5 test case 4: a counting key",
                (1..=25).collect(),
                vec![0xcd; 50],
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
            ),
            (
                "4.6 test case 5: truncation to 128 bits",
                vec![0x0c; 20],
                b"Test With Truncation".to_vec(),
                "a3b6167473100ee06e0c796c2955552b",
            ),
            (
                "4.7 test case 6: a key larger than the block is hashed first",
                vec![0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First".to_vec(),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
            (
                "4.8 test case 7: key and data larger than the block",
                vec![0xaa; 131],
                b"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".to_vec(),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
            ),
        ]
    }

    #[test]
    fn every_rfc_4231_hmac_sha256_vector_passes() {
        for (case, key, data, expected) in rfc4231() {
            let tag = hex(&hmac_sha256(&key, &data));
            // Case 5 gives only the leftmost 128 bits (32 hex digits); the others all 256.
            assert_eq!(&tag[..expected.len()], expected, "RFC 4231 §{case}");
        }
    }

    #[test]
    fn the_truncated_vector_is_the_prefix_of_the_full_tag_and_nothing_shorter_passes() {
        let full = hmac_sha256(&[0x0c; 20], b"Test With Truncation");
        assert_eq!(hex(&full[..16]), "a3b6167473100ee06e0c796c2955552b");
        // A truncated tag is never accepted where a full one is expected.
        assert!(!constant_time_eq(&full[..16], &full));
    }

    #[test]
    fn feeding_the_message_in_pieces_gives_the_one_shot_tag() {
        for (case, key, data, _) in rfc4231() {
            let mut mac = Hmac::new(&key);
            for piece in data.chunks(7) {
                mac.update(piece);
            }
            assert_eq!(mac.finalize(), hmac_sha256(&key, &data), "{case}");
        }
    }

    #[test]
    fn a_key_of_exactly_one_block_is_used_as_it_is_not_hashed() {
        // At B bytes the key is padded with nothing; at B + 1 it is hashed. Python's hmac
        // module agrees on both (values computed with it).
        let at_block = hex(&hmac_sha256(&[0x01; 64], b"message"));
        let over_block = hex(&hmac_sha256(&[0x01; 65], b"message"));
        assert_eq!(
            at_block,
            "91b45ced29723d120a86c68842d8eee39f59758da63fc925988f15eaf3db808a"
        );
        assert_eq!(
            over_block,
            "49ad2eb04dabf5404e8a1915fa7b757c8cac5be083407d6f7e7ef08536792461"
        );
    }
}
