//! The agents ddwire ships, each servable with `ddwire agent NAME`:
//!
//! - `hello` (`hello.world`): accepts a `Message`, replies a `Reply` grounded on its input
//!   (`input_only`), recording a `chat` span with a model id and token counts.
//! - `stub` (`stub.abstain`): accepts every shipped input class and abstains.
//! - `echo` (`echo.wire`): returns an `Echo` input's value as its payload (`none`); for
//!   measuring the wire.
//! - `director` (`director.route`): a delegation agent that routes a `Message` to another
//!   agent through the harness and relays its reply.
//! - `ungrounded` (`demo.ungrounded`) and `failing` (`demo.failing`): demonstration agents
//!   that show the linter withholding a result and an agent error.

mod demo;
mod director;
mod echo;
mod hello;
mod stub;

pub use demo::{Failing, Ungrounded};
pub use director::Director;
pub use echo::Echo;
pub use hello::Hello;
pub use stub::Stub;

use super::Agent;
use std::sync::Arc;

/// The names `ddwire agent` accepts, with the default port each is served on.
pub const NAMES: [(&str, u16); 6] = [
    ("hello", 8101),
    ("stub", 8104),
    ("director", 8106),
    ("echo", 8107),
    ("ungrounded", 8108),
    ("failing", 8109),
];

/// A built-in agent by its short name.
pub fn by_name(name: &str) -> Option<Arc<dyn Agent>> {
    match name {
        "hello" => Some(Arc::new(Hello::new())),
        "stub" => Some(Arc::new(Stub::new())),
        "echo" => Some(Arc::new(Echo::new())),
        "director" => Some(Arc::new(Director::new())),
        "ungrounded" => Some(Arc::new(Ungrounded::new())),
        "failing" => Some(Arc::new(Failing::new())),
        _ => None,
    }
}

/// `{"source_id": input_ref, "content_hash": input_hash}`: the reference a payload grounded
/// on its input carries.
pub(crate) fn input_ref_json(input_ref: &str, input_hash: &str) -> serde_json::Value {
    serde_json::json!({ "source_id": input_ref, "content_hash": input_hash })
}
