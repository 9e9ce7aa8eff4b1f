//! # ddwire
//!
//! Data Director's wire and trace, with minimal dependencies: the documents an invocation is
//! made of, the OpenTelemetry-shaped trace that records it, A2A over JSON-RPC between a caller,
//! the harness and its agents, AG-UI over Server-Sent Events to a browser, and the harness that
//! governs every run (policy gate, input check, grounding linter, crash-safe run store).
//!
//! The layers, each a module, each knowing only those listed before it (JSON, time, ids and
//! text sit at the bottom; [`Error`], which every layer's error converts into, sits at the top,
//! and no layer names it; `tests/layers.rs` checks every arrow):
//!
//! | module | holds |
//! |---|---|
//! | [`json`], [`ids`], `text` (crate-private) | bounded parsing of untrusted JSON; UUIDv7; a peer's text escaped for a terminal or a log |
//! | [`contract`] | InvocationRequest, AgentResult, Envelope, content hashes, the conditional rules, agent specs |
//! | [`trace`] | span names, [`trace::SpanRecord`], span JSON, the per-invocation [`trace::Tracer`], W3C trace context, the OTLP encodings ([`trace::otlp`]), the waterfall view (`trace::waterfall`), the relay session linter (`trace::relay_lint`) |
//! | [`wire`] | HTTP (a sans-IO parser, a bounded server with a request log, a ureq client, in-memory), A2A (v0.3 and 1.0), AG-UI, signed calls ([`wire::sign`]), OTLP/HTTP export ([`wire::otlp`]), the byte-exact wire log (`wire::wirelog`, crate-private) |
//! | [`agent`] | the [`agent::Agent`] trait, the agent server every agent runs, delegation, the built-in agents |
//! | [`harness`] | registry, policy, identity, the [`harness::conductor::Conductor`], linter, run store, routes |
//! | [`check`] | `ddwire check`: probes any A2A JSON-RPC endpoint against the specifications |
//! | `signals` (crate-private) | SIGTERM, SIGINT and SIGHUP as messages, for the drain (`wire::http::drain`); the crate's only `unsafe` |
//! | [`relay`] | `ddwire relay`: forwards A2A calls between peers, a SERVER and a CLIENT span per hop |
//!
//! ## The stated API
//!
//! Everything public is listed here; everything else is crate-private, and `#![deny(missing_docs)]`
//! holds on what is public. An item is public when a user of the library needs it (an agent
//! author, or an embedder of the harness, the relay or the checker), when a public signature
//! carries it, or when the examples, the doc tests or the benches use it; every test of
//! ddwire is a unit test (`tests/internal/`, with `tests/layers.rs` and `tests/audit_map.rs`
//! reading only the sources), so none needs anything public. The `ddwire` binary's command
//! line lives in the library as a hidden `cli` module, no part of this API, so that it can
//! use crate-private items; the binary only calls `cli::main`.
//!
//! - **The contract** ([`contract`]): the documents ([`contract::InvocationRequest`],
//!   [`contract::AgentResult`], [`contract::Envelope`] and their parts: outcome, evidence,
//!   payload, [`contract::Principal`]), content hashes ([`contract::Canonicalisation`],
//!   [`contract::input_hash`], [`contract::envelope_hash`], [`contract::content_hash`]),
//!   [`contract::validate_envelope`], agent specifications ([`contract::AgentSpec`]), the
//!   shipped classes ([`contract::classes`]) and bearer tokens ([`contract::tokens`]);
//!   [`ids::new_uuid7`] and [`ids::is_uuid7`] for the ids documents carry;
//!   [`json::parse_str`] for untrusted text.
//! - **The trace** ([`trace`]): [`trace::SpanRecord`], [`trace::Tracer`] and its spans, the
//!   attribute names an agent reads ([`trace::attr`]), span JSON ([`trace::to_json`],
//!   [`trace::from_json`]), trace context ([`trace::SpanContext`]) and the OTLP encoders
//!   ([`trace::otlp`]). The waterfall view and the relay session linter are crate-private
//!   (the command line, the harness and the relay use them).
//! - **The wire** ([`wire`]): [`wire::a2a::client::A2aClient`] with the A2A model
//!   ([`wire::a2a::model`]) and what an agent's conversations hold ([`wire::a2a::Progress`],
//!   [`wire::a2a::Reply`]); the request signature's key ([`wire::sign::Key`]; the signer and the
//!   verifier are the agent server's and the harness's); the OTLP exporter and one-shot send
//!   ([`wire::otlp`]); why a TLS handshake failed ([`wire::tls::TlsFailure`], which a call's error carries); and of the HTTP/1.1 layer every server
//!   here runs on ([`wire::http`]) what serving and calling need: the request, response,
//!   handler and limits types, the server ([`wire::http::server`]), the client
//!   ([`wire::http::client`]) and the in-memory transport ([`wire::http::memory`]). The
//!   sans-IO parser under them, the agent card's builder and the TLS configuration are
//!   crate-private; the fuzz targets reach the parsers through the hidden `fuzz` module.
//! - **Agents** ([`agent`]): the [`agent::Agent`] trait and its [`agent::Conversation`], the
//!   agent server ([`agent::server`]) and the built-in agents ([`agent::builtin`]).
//! - **The harness** ([`harness`]): the [`harness::conductor::Conductor`] and what it is built
//!   from ([`harness::registry`], [`harness::policy`], [`harness::identity`]), the harness's
//!   routes ([`harness::server`]), the grounding linter's verdict
//!   ([`harness::grounding::GroundingReport`]), the run store's writer and reader
//!   ([`harness::store::RunStore`], [`harness::store::RunReader`]), and the test kit
//!   (`harness::testkit`, with the `testkit` feature).
//! - **`ddwire check`** ([`check::run`], its [`check::Options`] and [`check::Report`]).
//! - **`ddwire relay`** ([`relay::Relay`], [`relay::RelayConfig`], [`relay::handler`]).
//! - **Errors**: [`Error`] and each layer's own ([`json::JsonError`],
//!   [`contract::ContractError`], [`trace::TraceError`], [`wire::WireError`],
//!   [`agent::server::ServeError`], [`harness::HarnessError`] (with the run store's
//!   [`harness::store::StoreError`]), [`check::CheckError`], [`relay::RelayError`]).
//!
//! With the `testkit` feature (which `cargo test` turns on for this crate's own tests),
//! `harness::testkit` serves a whole harness and its agents in memory, for the tests of
//! agents built on ddwire. With the `fuzzing` feature (which `fuzz/` and `cargo test` turn
//! on), a hidden `fuzz` module gives the cargo-fuzz targets, `tests/internal/parser_mutation.rs`
//! and the load generator (`benches/load`) one entry point per hand-written parser, each
//! taking and returning plain data; it is no part of the stated API.
//!
//! ## Adding to the public API
//!
//! A new item is `pub(crate)` or private unless a user of the stated API needs it; the
//! `unreachable_pub` lint (denied in this crate) makes every `pub` item one that is reachable
//! from here. To make something public:
//!
//! 1. export it from the layer that owns it (never re-export another layer's internals), at
//!    the shallowest path a user would look for it;
//! 2. give it a doc comment that says what it is for, with the RFC or spec section it
//!    implements, and list it above;
//! 3. return typed errors (the layer's own error type, convertible into [`Error`]), never a
//!    `Result<_, String>`; make a new error enum `#[non_exhaustive]`;
//! 4. prefer a function or a plain struct over a trait, and keep transport types
//!    (endpoints, codecs, task stores) out of signatures meant for agents and callers;
//! 5. a test needs no public item: tests that need internals live in `tests/internal/` and
//!    build as unit tests.
//!
//! ## Hash a document as Data Director does
//!
//! Content hashes are SHA-256 over the bytes CPython's `json.dumps(x, sort_keys=True,
//! separators=(",", ":"), ensure_ascii=False)` writes, so a hash ddwire computes equals the
//! reference's.
//!
//! ```
//! use ddwire::contract::{input_hash, Canonicalisation};
//!
//! let input = ddwire::json::parse_str(r#"{"schema_class": "Message", "message_text": "hi", "n": 1.0}"#)?;
//! let bytes = Canonicalisation::InputDocument.canonical_bytes(&input)?;
//! assert_eq!(bytes, br#"{"message_text":"hi","n":1.0,"schema_class":"Message"}"#);
//! assert_eq!(input_hash(&input).len(), 64);
//! # Ok::<(), ddwire::Error>(())
//! ```
//!
//! ## Trace an invocation and write its spans as the OpenTelemetry Python SDK would
//!
//! ```
//! use ddwire::trace::{attr, SpanContext, Tracer};
//!
//! // A caller's traceparent parents this tracer's spans, so they join the caller's trace.
//! let caller = SpanContext::extract(Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), None);
//! let tracer = Tracer::new("hello.world").with_remote_parent(caller);
//! let chat = tracer.chat("a-model");
//! chat.record_tokens(Some(12), Some(30));
//! chat.end();
//! let spans = tracer.take_all();
//! let line = ddwire::trace::to_json(&spans[0]);
//! assert!(line.starts_with(r#"{"name": "chat", "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736""#));
//! assert_eq!(ddwire::trace::from_json(&line)?.owned_str(attr::MODEL_ID), Some("a-model"));
//! # Ok::<(), ddwire::Error>(())
//! ```
//!
//! ## Serve an agent and call it over A2A
//!
//! Every agent runs the same agent server. Here it is served on the in-memory transport, which
//! carries real HTTP/1.1 bytes through the same handler with no socket;
//! [`agent::server::serve`] serves it on TCP instead.
//!
//! ```
//! use ddwire::agent::builtin::Hello;
//! use ddwire::agent::server::serve_in_memory;
//! use ddwire::wire::a2a::client::{A2aClient, Target};
//! use ddwire::wire::a2a::model::{Message, Part, Role, TaskState};
//! use ddwire::wire::http::{client::HttpClient, memory::MemoryNet};
//! use std::{sync::Arc, time::Duration};
//!
//! let net = MemoryNet::new();
//! let base = serve_in_memory(&net, Arc::new(Hello::new()));
//! let client = A2aClient::new(HttpClient::memory(net));
//! let card = client.fetch_card(&base, Duration::from_secs(5))?;
//! let target = Target::from_card(&card)?; // A2A 1.0, as the card prefers
//! let request = serde_json::json!({"agent_id": "hello.world",
//!     "input": {"schema_class": "Message", "message_text": "hi"}});
//! let task = client.send_for_task(&target, Message::new(Role::User, vec![Part::data(request)]), &[], Duration::from_secs(5))?;
//! assert_eq!(task.status.state, TaskState::Completed);
//! assert_eq!(task.artifacts[0].name.as_deref(), Some("agent-result"));
//! # Ok::<(), ddwire::Error>(())
//! ```
//!
//! ## Run an invocation through the harness
//!
//! The conductor is one function of a request and the principal the caller's credentials name;
//! the A2A endpoint, the AG-UI stream and the CLI wrap it. The test kit builds a harness and
//! its agents in memory.
//!
//! ```
//! use ddwire::agent::builtin::{Hello, Stub};
//! use ddwire::contract::OutcomeStatus;
//! use ddwire::harness::testkit::TestHarness;
//! use std::sync::Arc;
//!
//! let harness = TestHarness::new(vec![Arc::new(Hello::new()), Arc::new(Stub::new())]);
//! let run = harness.invoke(&serde_json::json!({"agent_id": "hello.world",
//!     "input": {"schema_class": "Message", "message_text": "hi"}}))?;
//! assert_eq!(run.envelope.outcome.status, OutcomeStatus::Succeeded);
//! assert!(run.report.passed); // the grounding linter read the agent's spans
//! assert!(run.run_dir.join("spans.jsonl").exists());
//! # Ok::<(), ddwire::Error>(())
//! ```
//!
//! ## Errors
//!
//! Each layer returns its own typed error, whose variants hold what went wrong in fields, and
//! each converts into [`Error`] with `?`; a lower layer's failure passed up through a higher
//! one keeps its own variant ([`Error::Wire`], whichever layer saw it). [`Error`] is
//! `#[non_exhaustive]`; every `Display` is a sentence fit for a log line, a JSON-RPC error or
//! a failed envelope's detail, and keeps the reference implementation's words where it has
//! them. The command line alone speaks in messages.

// The one exception is `signals`, which installs the SIGTERM/SIGINT handler through libc
// (vendor-notes/signals.md); `forbid` would not let that one module opt out.
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![deny(unreachable_pub)]
#![deny(unnameable_types)]

/// `eprintln!` for a process that outlives its reader: one line to stderr, dropped when
/// stderr is closed. `eprintln!` panics on a failed write, so a server whose log
/// pipe's reader went away (a supervisor restarted, a test stopped reading) would die on its
/// next diagnostic instead of serving on.
macro_rules! stderr_line {
    ($($arg:tt)*) => {
        $crate::text::write_stderr_line(format_args!($($arg)*))
    };
}

pub mod agent;
pub mod check;
pub mod contract;
mod error;
pub mod harness;
pub mod ids;
pub mod json;
pub mod relay;
#[allow(unsafe_code)]
pub(crate) mod signals;
pub(crate) mod text;
pub(crate) mod time;
pub mod trace;
pub mod wire;

pub use error::{Error, Result};

// Not part of the stated API: the command line, in the library so that it is built on the
// crate's own items rather than on a public surface of its own; the binary calls `cli::main`.
#[doc(hidden)]
pub mod cli;

// Not part of the stated API, and test code: the entry points the fuzz targets, the mutation
// test and the load generator drive, with the `fuzzing` feature. They live beside the targets
// in `fuzz/`, built into the library (as `tests/internal/` is) so that they reach the parsers.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
#[path = "../fuzz/entries.rs"]
pub mod fuzz;

// White-box tests that need internals live in tests/internal/ and build as unit tests.
#[cfg(test)]
extern crate self as ddwire;
#[cfg(test)]
#[path = "../tests/internal/mod.rs"]
#[allow(unreachable_pub)]
mod internal_tests;
