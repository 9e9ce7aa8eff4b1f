//! The Server-Sent Events writer and AG-UI events, read back as a browser reads them: see `ddwire::fuzz::sse` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::sse(data));
