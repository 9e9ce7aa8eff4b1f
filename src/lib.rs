//! ddwire: Data Director's wire and trace, with minimal dependencies.
#![forbid(unsafe_code)]

pub mod agent;
pub mod bench;
pub mod contract;
pub mod error;
pub mod harness;
pub mod json;
pub mod time;
pub mod trace;
pub mod wire;

pub use error::{Error, Result};
