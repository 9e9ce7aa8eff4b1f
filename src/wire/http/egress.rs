//! Where an outbound client may connect: the destination policy a relay puts on its peers,
//! so that it cannot be turned into a way to reach what only it can reach (server-side
//! request forgery).
//!
//! The policy is applied to addresses, after DNS resolution, by the client's resolver
//! ([`super::client::HttpClient::guarded`]): every address a host name resolves to is
//! checked, the refused ones are dropped, and the connection is made only to an address that
//! passed. A name that resolves elsewhere between a check and a connect (DNS rebinding)
//! gains nothing, since no second lookup happens.
//!
//! - **Internal ranges** are refused unless a CIDR rule covers them: the unspecified
//!   addresses (`0.0.0.0/8`, `::`), loopback (`127.0.0.0/8`, `::1`), link-local
//!   (`169.254.0.0/16`, which holds the cloud metadata service `169.254.169.254`, and
//!   `fe80::/10`), the metadata addresses `100.100.100.200` (Alibaba) and `fd00:ec2::254`
//!   (AWS over IPv6), multicast and the reserved `240.0.0.0/4` (with the broadcast address).
//!   An IPv4-mapped (`::ffff:a.b.c.d`, RFC 4291 §2.5.5.2) or NAT64 (`64:ff9b::/96`, RFC 6052
//!   §2.1) IPv6 address is judged as the IPv4 address it carries.
//! - **Without rules** (the default), every other address is allowed.
//! - **With rules** (`--peer-allow`, a list of CIDRs, addresses and host names), only what a
//!   rule names is allowed: an address inside a CIDR, or any address of a named host (a
//!   `*.example.org` rule names every host under `example.org`) except one in the internal
//!   ranges, which only a CIDR admits.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A destination policy: the rules, empty for "any address outside the internal ranges".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Egress {
    rules: Vec<Rule>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Rule {
    /// An address block: its first address (masked) and prefix length.
    Net(IpAddr, u8),
    /// A host name, lower case; `*.x` names every host under `x`.
    Host(String),
}

impl Egress {
    /// A policy allowing only what `items` name: each a CIDR (`10.0.0.0/8`, `::1/128`), an
    /// address (a `/32` or `/128`), or a host name (`agents.example.org`, `*.example.org`);
    /// a comma-separated item is read as several. An item of none of these shapes is an
    /// error naming it.
    pub(crate) fn allowing<S: AsRef<str>>(
        items: impl IntoIterator<Item = S>,
    ) -> Result<Egress, EgressError> {
        let mut rules = Vec::new();
        for item in items {
            for one in item.as_ref().split(',').map(str::trim) {
                if !one.is_empty() {
                    rules.push(Rule::parse(one)?);
                }
            }
        }
        Ok(Egress { rules })
    }

    /// Whether the policy has no rules (any address outside the internal ranges).
    #[cfg(test)]
    pub(crate) fn is_open(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether `ip`, which `host` resolved to (or which `host` is), may be connected to;
    /// `Err` says why not.
    pub(crate) fn check(&self, host: &str, ip: IpAddr) -> Result<(), EgressError> {
        let ip = canonical(ip);
        if self
            .rules
            .iter()
            .any(|r| matches!(r, Rule::Net(net, prefix) if contains(*net, *prefix, ip)))
        {
            return Ok(());
        }
        if let Some(range) = internal_range(ip) {
            return Err(EgressError::Internal { ip, range });
        }
        if self.rules.is_empty() {
            return Ok(());
        }
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let named = self.rules.iter().any(|r| match r {
            Rule::Host(name) => match name.strip_prefix("*.") {
                Some(parent) => host
                    .strip_suffix(parent)
                    .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
                None => *name == host,
            },
            Rule::Net(..) => false,
        });
        if named {
            Ok(())
        } else {
            Err(EgressError::NotNamed { host, ip })
        }
    }
}

/// Why an allow-list item is not a rule, or why the policy refuses an address.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EgressError {
    /// A CIDR item whose part before `/` is not an IP address.
    NotAnAddress {
        /// The item as given.
        item: String,
    },
    /// A CIDR item whose prefix length is longer than its address.
    Prefix {
        /// The item as given.
        item: String,
        /// The longest prefix its address takes: 32 or 128.
        max: u8,
    },
    /// An item that is not a CIDR, an address or a host name.
    NotARule {
        /// The item as given.
        item: String,
    },
    /// The address lies in an internal range, which only a CIDR rule admits.
    Internal {
        /// The address (an IPv4 address an IPv6 one carries, as judged).
        ip: IpAddr,
        /// The range, by name (`loopback`).
        range: &'static str,
    },
    /// The policy has rules, and none names the host or the address.
    NotNamed {
        /// The host, lower case.
        host: String,
        /// The address it resolved to.
        ip: IpAddr,
    },
}

impl fmt::Display for EgressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (item, why) = match self {
            EgressError::Internal { ip, range } => {
                let prefix = if ip.is_ipv4() { 32 } else { 128 };
                return write!(
                    f,
                    "{ip} is a {range} address: refused unless the relay is started with --peer-allow naming it (as a CIDR, e.g. {ip}/{prefix})"
                );
            }
            EgressError::NotNamed { host, ip } => {
                return write!(f, "{host} ({ip}) is not a destination --peer-allow names");
            }
            EgressError::NotAnAddress { item } => {
                (item, "the part before / is not an IP address".to_string())
            }
            EgressError::Prefix { item, max } => {
                (item, format!("the prefix length must be 0 to {max}"))
            }
            EgressError::NotARule { item } => {
                (item, "not a CIDR, an address or a host name".to_string())
            }
        };
        write!(
            f,
            "--peer-allow {item:?}: {why}; give a CIDR (10.0.0.0/8, 127.0.0.1/32, fd00::/8), an address, or a host name (agents.example.org, *.example.org)"
        )
    }
}

impl std::error::Error for EgressError {}

impl Rule {
    fn parse(item: &str) -> Result<Rule, EgressError> {
        let given = || item.to_string();
        if let Some((addr, prefix)) = item.split_once('/') {
            let Ok(addr) = addr.trim_matches(['[', ']']).parse::<IpAddr>() else {
                return Err(EgressError::NotAnAddress { item: given() });
            };
            let max = if addr.is_ipv4() { 32 } else { 128 };
            return match prefix.parse::<u8>() {
                Ok(p) if p <= max => Ok(Rule::Net(mask(addr, p), p)),
                _ => Err(EgressError::Prefix { item: given(), max }),
            };
        }
        if let Ok(addr) = item.trim_matches(['[', ']']).parse::<IpAddr>() {
            let max = if addr.is_ipv4() { 32 } else { 128 };
            return Ok(Rule::Net(addr, max));
        }
        let name = item.to_ascii_lowercase();
        let labels = name.strip_prefix("*.").unwrap_or(&name);
        let valid = !labels.is_empty()
            && labels.split('.').all(|l| {
                !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if valid {
            Ok(Rule::Host(name))
        } else {
            Err(EgressError::NotARule { item: given() })
        }
    }
}

/// The IPv4 address an IPv4-mapped or NAT64 IPv6 address carries, else the address itself.
fn canonical(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else {
        return ip;
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    if v6.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // The IPv4 address is the last 32 bits.
        return IpAddr::V4(Ipv4Addr::from(u128::from(v6) as u32));
    }
    ip
}

/// The internal range `ip` lies in, by name, if any.
pub(crate) fn internal_range(ip: IpAddr) -> Option<&'static str> {
    match canonical(ip) {
        IpAddr::V4(v4) => match v4.octets() {
            [0, ..] => Some("unspecified"),
            [127, ..] => Some("loopback"),
            [169, 254, ..] => Some("link-local (cloud metadata)"),
            [100, 100, 100, 200] => Some("cloud metadata"),
            [224..=255, ..] => Some("multicast or reserved"),
            _ => None,
        },
        IpAddr::V6(v6) => match v6.segments() {
            [0, 0, 0, 0, 0, 0, 0, 0] => Some("unspecified"),
            [0, 0, 0, 0, 0, 0, 0, 1] => Some("loopback"),
            [first, ..] if first & 0xffc0 == 0xfe80 => Some("link-local"),
            [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254] => Some("cloud metadata"),
            [first, ..] if first & 0xff00 == 0xff00 => Some("multicast"),
            _ => None,
        },
    }
}

/// `ip` with every bit past the first `prefix` cleared.
fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
        }
        IpAddr::V6(v6) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
    }
}

fn contains(net: IpAddr, prefix: u8, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => mask(ip, prefix) == net,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_refused_in_every_spelling_unless_a_cidr_names_them() {
        let open = Egress::default();
        for bad in [
            "127.0.0.1",
            "127.9.9.9",
            "0.0.0.0",
            "169.254.169.254",
            "100.100.100.200",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "224.0.0.1",
            "255.255.255.255",
        ] {
            assert!(open.check("h", ip(bad)).is_err(), "{bad}");
        }
        for ok in ["93.184.216.34", "10.1.2.3", "2606:4700::1111"] {
            assert!(open.check("h", ip(ok)).is_ok(), "{ok}");
        }
        let loopback = Egress::allowing(["127.0.0.1/32"]).unwrap();
        assert!(loopback.check("127.0.0.1", ip("127.0.0.1")).is_ok());
        assert!(loopback.check("localhost", ip("::1")).is_err());
        assert!(loopback.check("127.0.0.2", ip("127.0.0.2")).is_err());
    }

    #[test]
    fn with_rules_only_named_destinations_pass_and_a_name_never_admits_an_internal_address() {
        let egress = Egress::allowing(["10.0.0.0/8, agents.example.org", "*.peers.test"]).unwrap();
        assert!(egress.check("x", ip("10.200.0.1")).is_ok());
        assert!(egress.check("x", ip("11.0.0.1")).is_err());
        assert!(
            egress
                .check("agents.example.org", ip("93.184.216.34"))
                .is_ok()
        );
        assert!(egress.check("a.peers.test", ip("93.184.216.34")).is_ok());
        assert!(egress.check("peers.test", ip("93.184.216.34")).is_err());
        assert!(egress.check("evilpeers.test", ip("93.184.216.34")).is_err());
        assert!(
            egress
                .check("agents.example.org", ip("169.254.169.254"))
                .is_err()
        );
        for bad in ["10.0.0.0/33", "x/8", "a..b", "http://a", ""] {
            assert!(
                Egress::allowing([bad]).map(|e| e.is_open()) != Ok(false),
                "{bad}"
            );
        }
    }
}
