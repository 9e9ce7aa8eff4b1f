//! JSON-RPC 2.0 as server and client read it, through the A2A endpoint in both bindings: see `ddwire::fuzz::jsonrpc` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::jsonrpc(data));
