//! White-box tests: tests that need ddwire's internals (its private parsers and codecs, the
//! Python-identical JSON writer), compiled into the library's own unit tests rather than as
//! integration tests, so nothing is made public for them. `lib.rs` includes this module under
//! `cfg(test)`, with `extern crate self as ddwire`, so these files read like the integration
//! tests beside them while seeing `pub(crate)` items.

mod a2a_batch;
mod a2a_client_reply;
mod a2a_fixtures;
mod a2a_tasks;
mod hostile_input;
#[path = "../rpc/mod.rs"]
mod rpc;
mod span_json_fixtures;
