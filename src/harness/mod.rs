//! The harness: the governance around every invocation, and where its runs are kept.
pub mod store;
