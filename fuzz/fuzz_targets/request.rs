//! The request parser, end to end: see `ddwire::fuzz::request` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::request(data));
