//! AG-UI `RunAgentInput` and the InvocationRequest it forwards: see `ddwire::fuzz::run_agent_input` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::run_agent_input(data));
