//! The agents ddwire ships, each servable with `ddwire agent NAME`:
//!
//! - `hello` (`hello.world`): accepts a `Message`, replies a `Reply` grounded on its input
//!   (`input_only`), recording a `chat` span with a model id and token counts.
//! - `stub` (`stub.abstain`): accepts every shipped input class and abstains.
//! - `echo` (`echo.wire`): returns an `Echo` input's value as its payload (`none`); for
//!   measuring the wire.

mod echo;
mod hello;
mod stub;

pub use echo::Echo;
pub use hello::Hello;
pub use stub::Stub;

use super::Agent;
use std::sync::Arc;

/// The names `ddwire agent` accepts, with the default port each is served on.
pub const NAMES: [(&str, u16); 3] = [("hello", 8101), ("stub", 8104), ("echo", 8107)];

/// A built-in agent by its short name.
pub fn by_name(name: &str) -> Option<Arc<dyn Agent>> {
    match name {
        "hello" => Some(Arc::new(Hello::new())),
        "stub" => Some(Arc::new(Stub::new())),
        "echo" => Some(Arc::new(Echo::new())),
        _ => None,
    }
}

/// `{"source_id": input_ref, "content_hash": input_hash}`: the reference a payload grounded
/// on its input carries.
pub(crate) fn input_ref_json(input_ref: &str, input_hash: &str) -> serde_json::Value {
    serde_json::json!({ "source_id": input_ref, "content_hash": input_hash })
}
