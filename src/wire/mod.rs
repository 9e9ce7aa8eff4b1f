//! Bytes on the wire: HTTP, JSON-RPC 2.0, A2A, AG-UI and Server-Sent Events.
//!
//! Knows the contract and the trace format, never the harness or an agent.

pub mod a2a;
pub mod agui;
pub mod http;
pub mod jsonrpc;
pub mod sse;
