//! The seeded generator the mutation tests share (`internal/parser_mutation.rs`,
//! `internal/http_parser_mutation.rs`): the same seed gives the same inputs on every machine, so a
//! failure names a case anyone can run again.

/// xorshift64*: small, fast, and the same sequence for the same seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}
