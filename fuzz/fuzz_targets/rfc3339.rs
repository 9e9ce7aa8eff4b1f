//! RFC 3339 date-times, read and written back: see `ddwire::fuzz::rfc3339` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::rfc3339(data));
