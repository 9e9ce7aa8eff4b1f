//! The chunked decoder alone: see `ddwire::fuzz::chunked` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::chunked(data));
