//! One span JSON line, read and written back: see `ddwire::fuzz::span_json` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::span_json(data));
