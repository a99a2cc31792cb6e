//! Passengers: the users behind a lab's first link (a cabin behind one
//! aircraft link, or aircraft behind one beam), each with an address of its
//! own — 198.18.0.11 … and 2001:2::b … — so that the link can tell them
//! apart (`per_user` caps, fair sharing, a DVB-RCS2 terminal each).
//!
//! Two ways to hold them ([`PassengerHosts`]):
//! - `addresses` (the default): extra addresses of the first host, on its
//!   link device; programs bind one each (the `cabin` workload does);
//! - `namespaces`: each passenger a network namespace of its own
//!   (`al-<run>-pax-<k>`), with its own stack, sysctls and programs, joined
//!   to the first host by a veth pair (`pax<k>` there, `cabin` inside) — no
//!   emulation on it: the first host forwards their packets onto the link,
//!   whose stages see the same addresses either way. Programs run in them
//!   with `ip netns exec` (the names are in `$AEROLINK_PASSENGER_NETNS`).
//!
//! Only 198.18.0.0/15 and 2001:2::/48 are routed inside a passenger's
//! namespace, as in every other of a lab's namespaces.

use crate::NetError;

/// The most passengers a lab holds (198.18.0.11 to .250).
pub const MAX_PASSENGERS: u16 = 240;

/// Passenger `k`'s (from 1) IPv4 address: 198.18.0.(10 + k).
pub fn passenger_v4(k: u16) -> String {
    std::net::Ipv4Addr::new(198, 18, 0, (10 + k) as u8).to_string()
}

/// Passenger `k`'s IPv6 address: 2001:2::(10 + k), the same low 16 bits.
pub fn passenger_v6(k: u16) -> String {
    std::net::Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 10 + k).to_string()
}

aerolink_link::choice_core! {
    /// Where a lab's passengers live.
    #[derive(Default)]
    pub enum PassengerHosts {
        /// Addresses of the first host; programs bind one each.
        #[default]
        Addresses = "addresses",
        /// A namespace each, behind the first host.
        Namespaces = "namespaces",
    }
}

/// Passenger `k`'s namespace in run `run`.
pub fn netns(run: &str, k: u16) -> String {
    format!("{}{run}-pax-{k}", crate::lab::NS_PREFIX)
}

/// The first host's device towards passenger `k` (namespaces only).
pub fn device(k: u16) -> String {
    format!("pax{k}")
}

/// The device's name inside each passenger's namespace.
pub const INSIDE: &str = "cabin";

/// The first host's `ip -batch` lines for `n` passengers: their addresses
/// on `dev` (its link device), or a veth pair to each one's namespace (its
/// end moved there), a link-local address for their IPv6 routes and a
/// route to each.
pub fn host_lines(batch: &mut Vec<String>, dev: &str, n: u16, hosts: PassengerHosts, run: &str) -> Result<(), NetError> {
    if n > MAX_PASSENGERS {
        return Err(NetError::Spec(format!("at most {MAX_PASSENGERS} passengers, got {n}")));
    }
    for k in 1..=n {
        match hosts {
            PassengerHosts::Addresses => {
                batch.push(format!("addr add {}/32 dev {dev}", passenger_v4(k)));
                batch.push(format!("addr add {}/128 dev {dev} nodad", passenger_v6(k)));
            }
            PassengerHosts::Namespaces => {
                let pax = device(k);
                batch.push(format!("link add {pax} type veth peer name {INSIDE} netns {}", netns(run, k)));
                batch.push(format!("link set dev {pax} addrgenmode none"));
                batch.push(format!("addr add fe80::1/64 dev {pax} nodad"));
                batch.push(format!("link set dev {pax} up"));
                batch.push(format!("route add {}/32 dev {pax}", passenger_v4(k)));
                batch.push(format!("route add {}/128 dev {pax}", passenger_v6(k)));
            }
        }
    }
    Ok(())
}

/// Passenger `k`'s own namespace's lines: its addresses, and the
/// benchmarking ranges through the first host (`host_v4`, the first
/// host's address; IPv6 through its link-local `fe80::1`). Run after the
/// first host's ([`host_lines`]), which moved the device in.
pub fn inside_lines(k: u16, host_v4: &str) -> Vec<String> {
    vec![
        "link set lo up".into(),
        format!("link set dev {INSIDE} addrgenmode none"),
        format!("addr add {}/32 dev {INSIDE}", passenger_v4(k)),
        format!("addr add {}/128 dev {INSIDE} nodad", passenger_v6(k)),
        format!("addr add fe80::2/64 dev {INSIDE} nodad"),
        format!("link set dev {INSIDE} up"),
        format!("route add 198.18.0.0/15 via {host_v4} dev {INSIDE} onlink"),
        format!("route add 2001:2::/48 via fe80::1 dev {INSIDE}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passengers_are_parsed_by_name_and_the_error_lists_the_set() {
        assert_eq!("namespaces".parse::<PassengerHosts>(), Ok(PassengerHosts::Namespaces));
        assert_eq!("addresses".parse::<PassengerHosts>(), Ok(PassengerHosts::Addresses));
        let e = "netns".parse::<PassengerHosts>().unwrap_err().to_string();
        assert!(e.contains("addresses, namespaces"), "{e}");
    }

    #[test]
    fn too_many_passengers_are_refused_before_anything_is_made() {
        let mut b = Vec::new();
        assert!(host_lines(&mut b, "to-server", MAX_PASSENGERS + 1, PassengerHosts::Namespaces, "r").is_err());
        assert!(b.is_empty());
        host_lines(&mut b, "to-server", 2, PassengerHosts::Namespaces, "r").unwrap();
        assert!(b[0].ends_with("peer name cabin netns al-r-pax-1"), "{b:?}");
        assert!(b.contains(&"route add 198.18.0.12/32 dev pax2".to_string()), "{b:?}");
    }
}
