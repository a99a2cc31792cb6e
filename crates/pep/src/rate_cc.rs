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
//!
//! The rate may follow the link: [`follow`] reads a link monitor file
//! (`aerolink_net::monitor`) and sets the rate to the capacity it reports
//! for the direction this half sends in, so the sender slows down when a
//! bonded channel drops its call and speeds up when it comes back.

use std::any::Any;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{Controller, ControllerFactory};
use quinn_proto::RttEstimator;

#[derive(Debug, Clone)]
pub struct RateConfig {
    /// Bits per second to hold; [`follow`] may change it while it runs.
    pub rate_bps: Arc<AtomicU64>,
}

impl RateConfig {
    pub fn fixed(rate_bps: u64) -> Self {
        RateConfig { rate_bps: Arc::new(AtomicU64::new(rate_bps)) }
    }
}

impl ControllerFactory for RateConfig {
    fn build(self: Arc<Self>, _now: Instant, mtu: u16) -> Box<dyn Controller> {
        // Before the first RTT sample: quinn's initial RTT estimate, 333 ms.
        Box::new(Rate { rate_bps: self.rate_bps.clone(), mtu: mtu as u64, rtt: Duration::from_millis(333) })
    }
}

#[derive(Debug, Clone)]
struct Rate {
    rate_bps: Arc<AtomicU64>,
    mtu: u64,
    /// The smoothed RTT at the last ACK.
    rtt: Duration,
}

impl Rate {
    fn window_for(&self, rtt: Duration) -> u64 {
        // 10 % over the rate × RTT product, for ACK delay and jitter.
        let bdp = (self.rate_bps.load(Ordering::Relaxed) as f64 / 8.0 * rtt.as_secs_f64() * 1.1) as u64;
        bdp.max(4 * self.mtu)
    }
}

/// Keeps `rate` at [`FOLLOW_SHARE`] of the capacity the link monitor file
/// at `path` reports for `up` (or down), checking every 200 ms, until the
/// process ends; a missing or unreadable file leaves the rate as it is.
/// The share of the link's capacity a following rate holds: the rest is
/// for IP and UDP headers (the capacity counts IP bytes, the controller
/// QUIC's) and for the channels' jitter.
pub const FOLLOW_SHARE: f64 = 0.9;

pub fn follow(path: PathBuf, up: bool, rate: Arc<AtomicU64>) {
    std::thread::Builder::new()
        .name("rate-follow".into())
        .spawn(move || loop {
            if let Some((u, d)) = aerolink_net::monitor::read(&path) {
                let bps = if up { u } else { d };
                let want = (bps * FOLLOW_SHARE) as u64;
                if bps.is_finite() && want >= 1 && rate.swap(want, Ordering::Relaxed) != want {
                    eprintln!("quic-tunnel: rate {want} bit/s ({FOLLOW_SHARE} × the link's {bps:.0} bit/s {}, link monitor)", if up { "up" } else { "down" });
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        })
        .expect("spawn the rate follower");
}

impl Controller for Rate {
    fn on_ack(&mut self, _now: Instant, _sent: Instant, _bytes: u64, _app_limited: bool, rtt: &RttEstimator) {
        self.rtt = rtt.get();
    }

    fn on_congestion_event(&mut self, _now: Instant, _sent: Instant, _persistent: bool, _lost_bytes: u64) {
        // Loss is not taken as a sign of congestion: the rate holds.
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = new_mtu as u64;
    }

    fn window(&self) -> u64 {
        self.window_for(self.rtt)
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
        let f = Arc::new(RateConfig::fixed(8_000_000));
        let mut c = f.clone().build(Instant::now(), 1200);
        // 1 MB/s × 333 ms × 1.1
        assert_eq!(c.window(), 366_300);
        let before = c.window();
        c.on_congestion_event(Instant::now(), Instant::now(), false, 50_000);
        c.on_congestion_event(Instant::now(), Instant::now(), true, 50_000);
        assert_eq!(c.window(), before);
        // Never below four packets, however short the RTT.
        let tiny = Arc::new(RateConfig::fixed(1000)).build(Instant::now(), 1200);
        assert_eq!(tiny.window(), 4800);
        // A rate changed under it (the link monitor) changes the window.
        f.rate_bps.store(4_000_000, Ordering::Relaxed);
        assert_eq!(c.window(), 183_150);
    }

    #[test]
    fn the_rate_follows_the_link_monitor() {
        let p = std::env::temp_dir().join(format!("aerolink-follow-test-{}", std::process::id()));
        let rate = Arc::new(AtomicU64::new(1000));
        aerolink_net::monitor::write(&p, 4800.0, 7200.0).unwrap();
        follow(p.clone(), true, rate.clone());
        // The follower reads every 200 ms; wait for it, bounded.
        let seen = |want: u64| {
            (0..50).any(|_| {
                rate.load(Ordering::Relaxed) == want || {
                    std::thread::sleep(Duration::from_millis(50));
                    false
                }
            })
        };
        assert!(seen(4320), "rate {}", rate.load(Ordering::Relaxed));
        aerolink_net::monitor::write(&p, 2400.0, 7200.0).unwrap();
        assert!(seen(2160), "rate {}", rate.load(Ordering::Relaxed));
        std::fs::remove_file(&p).unwrap();
    }
}
