//! Rate stages: how long a packet occupies the link.
//!
//! A [`Server`] answers one question, in packet order: a packet of `bytes`
//! that may start at `start` — when has its last bit been sent? Constant
//! rates compute it; Mahimahi traces walk their delivery opportunities; a
//! series (a route's rate along the flight) takes its window's rate.

mod constant;
mod mahimahi;
mod series;

pub use constant::ConstantRate;
pub use mahimahi::{MahimahiTrace, TraceError};
pub use series::RateSeries;

use crate::time::Instant;

/// Serialises packets onto the link, one at a time, in order.
pub trait Server: Send {
    /// Finish time of a packet of `bytes` bytes whose transmission may start
    /// at `start`. Called exactly once per packet, in queue order, with
    /// non-decreasing `start`.
    fn finish(&mut self, start: Instant, bytes: u32) -> Instant;
    /// Whether the server adds no time at all (no rate limit).
    fn is_unlimited(&self) -> bool {
        false
    }
    /// Long-run capacity in bit/s, if it has one (used to size queues).
    fn capacity_bps(&self) -> Option<f64>;
}

/// No rate limit: a packet is sent the instant it may start.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unlimited;

impl Server for Unlimited {
    fn finish(&mut self, start: Instant, _bytes: u32) -> Instant {
        start
    }
    fn is_unlimited(&self) -> bool {
        true
    }
    fn capacity_bps(&self) -> Option<f64> {
        None
    }
}
