//! The contract: the documents that cross the wire, and their rules.

pub mod pattern;
pub mod schema;
