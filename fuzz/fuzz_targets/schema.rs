//! The class-schema validator: a schema, NUL, an instance: see `ddwire::fuzz::schema` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::schema(data));
