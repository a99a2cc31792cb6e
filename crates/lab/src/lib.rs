//! aerolink-lab: experiments over the emulated links.
//!
//! It owns what a run is ([`workload`]), how one is executed in its own
//! namespaces ([`runner`]), experiment files and their expansion into runs
//! ([`experiment`]), the gateway chain and its PEP modes ([`gateways`]),
//! the SQLite result store ([`store`]) and the
//! self-contained HTML report ([`report`]).

pub mod experiment;
pub mod gateways;
pub mod pool;
pub mod report;
pub mod runner;
pub mod stats;
pub mod store;
pub mod svg;
pub mod workload;
