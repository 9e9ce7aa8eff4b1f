//! Agent cards as the registry reads them: see `ddwire::fuzz::agent_card` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::agent_card(data));
