//! aerolink-work: the workloads — real protocol stacks as servers and
//! clients that aerolink runs at the two ends of an emulated link.
//!
//! Kernel TCP (with its congestion controls and the route's initial
//! window), rustls, hyper (HTTP/1.1, HTTP/2), quinn + h3 (HTTP/3 and raw
//! QUIC, with configurable initial window, windows and congestion
//! controller). One [`server`] serves every workload; each client returns a
//! serialisable result. Nothing here is simulated.
//!
//! Feature `chromium` (default): the [`browser`] workload's driver
//! (`browser::load`, `browser::record`, over chromiumoxide). Crates that only
//! name browser settings — the experiment runner, the PEPs, the fuzz
//! targets — build without it.

pub mod archive;
pub mod browser;
pub mod bulk;
pub mod cabin;
pub mod choice;
pub mod cli;
pub mod clock;
pub mod corpus;
pub mod dns;
pub mod error;
pub mod har;
pub mod messages;
pub mod page;
pub mod ping;
pub mod quic;
pub mod realtime;
pub mod replay;
pub mod satcc;
pub mod server;
pub mod sock;
pub mod tls;
pub mod web;

pub use choice::{Transport, UnknownChoice};
pub use error::WorkError;
