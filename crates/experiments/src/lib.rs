//! aerolink-experiments: experiments over the emulated links.
//!
//! It owns what a run is ([`workload`]) and the figures it yields, a closed
//! set with units ([`metric`]), how one is executed in its own
//! namespaces ([`runner`]), experiment files and their expansion into runs
//! ([`experiment`]), profiles and topology files found by name or path
//! ([`profiles`], [`topology`]), the gateway chain's PEP modes
//! ([`gateways`]), the SQLite result store and the rows it keeps
//! ([`store`]), the studies' results as data and their verdicts ([`catalogue`], [`judge`], [`reproductions`]), and
//! the self-contained HTML report ([`report`]).

pub mod aboard;
pub mod catalogue;

/// A mistake in what the user asked for (a flag, a file), found by our own
/// checks: the binary exits 2 with its one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UserError(pub String);

pub mod cluster;
pub mod commands;
pub mod compare;
pub mod experiment;
pub mod export;
pub mod gateways;
pub mod judge;
pub mod linkargs;
pub mod metric;
pub mod pool;
pub mod profiles;
pub mod record;
pub mod report;
pub mod reproductions;
pub mod runner;
pub mod series;
pub mod session;
pub mod stats;
pub mod store;
pub mod svg;
pub mod topology;
pub mod workload;
