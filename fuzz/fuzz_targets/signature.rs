//! The request signature's header parsers, and sign then verify: see `ddwire::fuzz::signature` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::signature(data));
