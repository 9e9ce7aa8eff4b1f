//! Bytes on the wire: HTTP, JSON-RPC 2.0, A2A, AG-UI, Server-Sent Events, the HMAC
//! signature on calls between the harness and its agents, and OTLP/HTTP export.
//!
//! Knows the contract and the trace format, never the harness or an agent.

pub mod a2a;
pub mod agui;
pub(crate) mod hmac;
pub mod http;
pub mod jsonrpc;
pub mod otlp;
pub mod sign;
pub mod sse;
