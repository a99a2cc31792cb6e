//! aerolink-pep: performance-enhancing proxies for the gateways.
//!
//! This crate owns the proxies that run inside a gateway namespace and the
//! packet-steering rules they need. Today: [`split_tcp`], a transparent
//! split-TCP proxy (PEPsal's idea) — the client's TCP connections are
//! intercepted with nftables TPROXY, terminated in the gateway, and carried
//! onward on the proxy's own connections with their own congestion control.

pub mod split_tcp;
pub mod steering;
