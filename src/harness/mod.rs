//! The harness: governance of agent runs (the reference's `workbench`). The registry of
//! agents, the policy gate, the conductor and its grounding linter, the run store, identity,
//! the harness's own routes (A2A, AG-UI, JSON).

pub(crate) mod agui;
pub(crate) mod approval;
pub mod conductor;
mod conversations;
mod error;
pub mod grounding;
pub(crate) mod health;
pub mod identity;
pub mod policy;
pub mod registry;
pub(crate) mod remote;
mod served;
pub mod server;
pub mod store;
pub(crate) mod tasks;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub(crate) mod view;
mod viewer;

pub use error::HarnessError;
pub(crate) use error::Result;
