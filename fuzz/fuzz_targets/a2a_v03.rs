//! The A2A v0.3 codec: decode, encode, decode again: see `ddwire::fuzz::a2a_v03` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::a2a_v03(data));
