//! The A2A 1.0 codec: decode, encode, decode again: see `ddwire::fuzz::a2a_v10` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::a2a_v10(data));
