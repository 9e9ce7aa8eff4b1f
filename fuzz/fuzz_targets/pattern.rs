//! The contract's pattern engine: a pattern, NUL, a subject: see `ddwire::fuzz::pattern` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::pattern(data));
