//! aerolink-pep: performance-enhancing proxies for the gateways.
//!
//! This crate owns the proxies that run inside a gateway namespace and the
//! packet-steering rules they need:
//! - [`split_tcp`]: a transparent split-TCP proxy (PEPsal's idea) — the
//!   client's TCP connections are intercepted with nftables TPROXY,
//!   terminated in the gateway, and carried onward on the proxy's own
//!   connections with their own congestion control and initial window.
//! - [`quic_tunnel`]: TCP carried over one long-lived, mutually
//!   authenticated QUIC connection between an air and a ground half (QPEP's
//!   idea), tuned for the space hop, with [`rate_cc`], a rate-based
//!   loss-tolerant controller in the spirit of SCPS-TP.
//! - [`prefetch`]: an application-layer PEP, as satellite terminals
//!   accelerate HTTP: the ground half reads each plain-HTTP page the cabin
//!   asks for and pushes the objects it references across the space hop
//!   before the browser asks; the air half answers from them.
//! - [`vpn`]: end-to-end IP-in-UDP encapsulation between client and server,
//!   for comparison — what a VPN does to a PEP (it can no longer act).
//!
//! [`relay`] holds what the proxies share; [`steering`] the rules; [`cli`]
//! the typed command lines the lab starts them with.

pub mod cli;
pub mod error;
pub mod openvpn;
pub mod prefetch;
pub mod quic_tunnel;
pub mod rate_cc;
pub mod relay;
pub mod split_tcp;
pub mod steering;
pub mod vpn;

pub use error::PepError;
