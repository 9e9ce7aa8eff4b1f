//! `traceparent` and `tracestate` (W3C Trace Context), and a trace state's `repr` in span JSON: see `ddwire::fuzz::trace_context` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::trace_context(data));
