//! The bounded JSON reader and the Python writers (canonical, `json.dumps`, pydantic, `reformat`, `float.__repr__`): see `ddwire::fuzz::json` for what is asserted.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ddwire::fuzz::json(data));
