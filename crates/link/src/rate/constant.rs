//! A constant bit rate with a fixed per-packet overhead (framing, FEC,
//! encapsulation) charged on top of each packet's own bytes.

use super::Server;
use crate::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
pub struct ConstantRate {
    bits_per_sec: f64,
    overhead_bytes: u32,
}

impl ConstantRate {
    /// `bits_per_sec` must be positive (profiles reject anything else).
    pub fn new(bits_per_sec: f64, overhead_bytes: u32) -> Self {
        assert!(bits_per_sec > 0.0, "rate must be positive");
        ConstantRate { bits_per_sec, overhead_bytes }
    }

    /// Time to send `bytes` (plus overhead), rounded up to the nanosecond so
    /// that the link never runs faster than configured.
    pub fn tx_time(&self, bytes: u32) -> Duration {
        let bits = (bytes as u64 + self.overhead_bytes as u64) * 8;
        Duration((bits as f64 * 1e9 / self.bits_per_sec).ceil() as u64)
    }
}

impl Server for ConstantRate {
    fn finish(&mut self, start: Instant, bytes: u32) -> Instant {
        start + self.tx_time(bytes)
    }
    fn capacity_bps(&self) -> Option<f64> {
        Some(self.bits_per_sec)
    }
}
