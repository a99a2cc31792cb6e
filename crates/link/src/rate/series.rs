//! A rate that changes with time: one rate per window of fixed length,
//! repeating after the last (a route's rate along the flight, which
//! changes with the distance to the serving tower). A packet is sent
//! whole at the rate of the window it starts in.

use super::Server;
use crate::time::{Duration, Instant};

#[derive(Clone, Debug, PartialEq)]
pub struct RateSeries {
    pub window: Duration,
    /// Bit/s in each window, all above 0.
    pub bps: Vec<f64>,
    overhead_bytes: u32,
}

impl RateSeries {
    /// `window` above 0 and at least one rate, every one above 0.
    pub fn new(window: Duration, bps: Vec<f64>) -> Result<Self, String> {
        if window == Duration::ZERO || bps.is_empty() || bps.iter().any(|r| !(*r > 0.0 && r.is_finite())) {
            return Err("a rate series needs a window above 0 and rates above 0".into());
        }
        Ok(RateSeries { window, bps, overhead_bytes: 0 })
    }

    /// The per-packet overhead charged on top of each packet's bytes.
    pub fn set_overhead(&mut self, bytes: u32) {
        self.overhead_bytes = bytes;
    }

    pub fn rate_at(&self, t: Instant) -> f64 {
        self.bps[(t.0 / self.window.0) as usize % self.bps.len()]
    }

    pub fn mean_bps(&self) -> f64 {
        self.bps.iter().sum::<f64>() / self.bps.len() as f64
    }
}

impl Server for RateSeries {
    fn finish(&mut self, start: Instant, bytes: u32) -> Instant {
        let bits = (bytes as u64 + self.overhead_bytes as u64) * 8;
        start + Duration((bits as f64 * 1e9 / self.rate_at(start)).ceil() as u64)
    }
    fn capacity_bps(&self) -> Option<f64> {
        Some(self.mean_bps())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_takes_the_rate_of_the_window_it_starts_in_and_the_series_repeats() {
        let mut s = RateSeries::new(Duration::from_secs(1), vec![8_000.0, 800.0]).unwrap();
        // 100 B = 800 bits: 0.1 s at 8 kbit/s, 1 s at 800 bit/s.
        assert_eq!(s.finish(Instant(Duration::from_millis(500).0), 100), Instant(Duration::from_millis(600).0));
        assert_eq!(s.finish(Instant(Duration::from_millis(1_500).0), 100), Instant(Duration::from_millis(2_500).0));
        assert_eq!(s.rate_at(Instant(Duration::from_millis(2_100).0)), 8_000.0, "after the last window, the first again");
        s.set_overhead(100);
        assert_eq!(s.finish(Instant::ZERO, 100), Instant(Duration::from_millis(200).0));
        assert_eq!(s.mean_bps(), 4_400.0);
        assert!(RateSeries::new(Duration::ZERO, vec![1.0]).is_err() && RateSeries::new(Duration::from_secs(1), vec![0.0]).is_err());
    }
}
