//! The harness: governance of agent runs (the reference's `workbench`).

pub mod grounding;
pub mod store;
