//! The star-topology gate (the seed's `OTEL_A2A_RELAY_STAR_ENFORCE`): under a star, every
//! route has a hub at one end. A hub may address any peer; any other sender (a leaf, or a
//! caller that is no registered peer) may address a hub only. The gate runs on every method,
//! streams included, before anything is forwarded, and a refused route is -32010.
//!
//! The sender is who the call says it comes from (message metadata `agent.id`, as the seed's
//! clients set it, else the params' metadata, else the `X-Agent-Id` header): the gate is a
//! routing policy between cooperating agents, not authentication.

use super::peers::{Registry, Role};
use std::fmt;

/// Which routes the relay allows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Topology {
    /// Any sender may address any peer.
    #[default]
    Open,
    /// Every route goes through a hub: see the module documentation.
    Star,
}

impl Topology {
    /// `open` or `star`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Topology::Open => "open",
            Topology::Star => "star",
        }
    }
}

/// A route the star refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Violation {
    /// Who the call says it comes from, if it says.
    pub(crate) sender: Option<String>,
    pub(crate) sender_role: Option<Role>,
    pub(crate) target: String,
    pub(crate) hubs: Vec<String>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sender = match (&self.sender, self.sender_role) {
            (Some(id), Some(role)) => format!("{id:?} ({})", role.as_str()),
            (Some(id), None) => format!("{id:?} (not a registered peer)"),
            (None, _) => "a caller that names no agent.id".to_string(),
        };
        write!(
            f,
            "star-topology violation: {sender} may not address {:?} (leaf); every route must go through a hub [{}]",
            self.target,
            self.hubs.join(", ")
        )
    }
}

/// Whether `sender` may address `target` under `topology`.
pub(crate) fn check(
    topology: Topology,
    registry: &Registry,
    sender: Option<&str>,
    target: &str,
) -> Result<(), Violation> {
    if topology == Topology::Open {
        return Ok(());
    }
    let sender_role = sender.and_then(|s| registry.role(s));
    if registry.role(target) == Some(Role::Hub) || sender_role == Some(Role::Hub) {
        return Ok(());
    }
    Err(Violation {
        sender: sender.map(str::to_string),
        sender_role,
        target: target.to_string(),
        hubs: registry.hubs(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay::peers::PeerSpec;

    fn star() -> Registry {
        Registry::new(vec![
            PeerSpec::new("hub", "http://hub.test", Role::Hub).unwrap(),
            PeerSpec::new("w1", "http://w1.test", Role::Leaf).unwrap(),
            PeerSpec::new("w2", "http://w2.test", Role::Leaf).unwrap(),
        ])
    }

    #[test]
    fn under_a_star_a_leaf_may_address_the_hub_only_and_the_hub_anyone() {
        let r = star();
        let star = Topology::Star;
        assert!(check(star, &r, Some("w1"), "hub").is_ok());
        assert!(check(star, &r, Some("hub"), "w2").is_ok());
        assert!(check(star, &r, None, "hub").is_ok());
        let v = check(star, &r, Some("w1"), "w2").unwrap_err();
        assert!(
            v.to_string()
                .contains("\"w1\" (leaf) may not address \"w2\""),
            "{v}"
        );
        let v = check(star, &r, None, "w2").unwrap_err();
        assert!(v.to_string().contains("names no agent.id"), "{v}");
        assert!(check(star, &r, Some("stranger"), "w1").is_err());
    }

    #[test]
    fn an_open_topology_allows_every_route() {
        assert!(check(Topology::Open, &star(), Some("w1"), "w2").is_ok());
    }
}
