//! White-box tests: tests that need ddwire's internals (its private parsers and codecs, the
//! Python-identical JSON writer, the conductor's and the harness's parts, the HTTP server's
//! knobs), compiled into the library's own unit tests rather than as
//! integration tests, so nothing is made public for them. `lib.rs` includes this module under
//! `cfg(test)`, with `extern crate self as ddwire`, so these files read like the integration
//! tests beside them while seeing `pub(crate)` items.

mod a2a_batch;
mod a2a_fixtures;
mod a2a_tasks;
mod a2a_wire;
mod harness_approval;
mod harness_conductor;
mod harness_delegation;
mod harness_identity;
mod harness_otlp;
mod harness_panics;
mod harness_refresh;
mod harness_registry;
mod harness_remote;
mod harness_stream;
mod harness_suspend;
mod harness_tasks;
mod harness_transport;
mod harness_trust;
mod hostile_input;
mod http_server;
mod observe_logs;
mod relay_contexts;
mod relay_guard;
mod span_json_fixtures;
mod store_errors;
mod store_hostile_json;
mod trace_truth;

// Shared helpers, the same files the integration tests include.
#[path = "../common/mod.rs"]
mod common;
#[path = "../raw_http/mod.rs"]
mod raw_http;
#[path = "../rpc/mod.rs"]
mod rpc;
