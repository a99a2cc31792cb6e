//! A rate-based, loss-tolerant congestion controller for quinn, in the
//! spirit of SCPS-TP's rate control: the sender holds a configured rate and
//! does not back off on loss. On a satellite or air-to-ground link most loss
//! is corruption, not congestion; halving the window on each loss is what
//! makes cubic crawl there.
//!
//! The window is the configured rate times the smoothed RTT (plus a little
//! for ACK delay); quinn paces at 1.25 × window / RTT, so the sender is held
//! to the rate by its window and smoothed by its pacer. Set the rate at or
//! below the link's: above it, the queue grows until the link drops, and
//! this controller will not back off.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{Controller, ControllerFactory};
use quinn_proto::RttEstimator;

#[derive(Debug, Clone)]
pub struct RateConfig {
    /// Bits per second to hold.
    pub rate_bps: u64,
}

impl ControllerFactory for RateConfig {
    fn build(self: Arc<Self>, _now: Instant, mtu: u16) -> Box<dyn Controller> {
        let mut c = Rate { rate_bps: self.rate_bps, mtu: mtu as u64, window: 0 };
        // Before the first RTT sample: quinn's initial RTT estimate, 333 ms.
        c.window = c.window_for(Duration::from_millis(333));
        Box::new(c)
    }
}

#[derive(Debug, Clone)]
struct Rate {
    rate_bps: u64,
    mtu: u64,
    window: u64,
}

impl Rate {
    fn window_for(&self, rtt: Duration) -> u64 {
        // 10 % over the rate × RTT product, for ACK delay and jitter.
        let bdp = (self.rate_bps as f64 / 8.0 * rtt.as_secs_f64() * 1.1) as u64;
        bdp.max(4 * self.mtu)
    }
}

impl Controller for Rate {
    fn on_ack(&mut self, _now: Instant, _sent: Instant, _bytes: u64, _app_limited: bool, rtt: &RttEstimator) {
        self.window = self.window_for(rtt.get());
    }

    fn on_congestion_event(&mut self, _now: Instant, _sent: Instant, _persistent: bool, _lost_bytes: u64) {
        // Loss is not taken as a sign of congestion: the rate holds.
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = new_mtu as u64;
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.window_for(Duration::from_millis(333))
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_follows_rate_times_rtt_and_ignores_loss() {
        let f = Arc::new(RateConfig { rate_bps: 8_000_000 });
        let mut c = f.build(Instant::now(), 1200);
        // 1 MB/s × 333 ms × 1.1
        assert_eq!(c.window(), 366_300);
        let before = c.window();
        c.on_congestion_event(Instant::now(), Instant::now(), false, 50_000);
        c.on_congestion_event(Instant::now(), Instant::now(), true, 50_000);
        assert_eq!(c.window(), before);
        // Never below four packets, however short the RTT.
        let tiny = Arc::new(RateConfig { rate_bps: 1000 }).build(Instant::now(), 1200);
        assert_eq!(tiny.window(), 4800);
    }
}
