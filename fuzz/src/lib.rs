//! What the fuzz targets share.
use aerolink_link::{Duration, Instant, Pipeline, Profile};

/// Builds both directions of a profile and drives a few packets through
/// them in simulated time (up to 64 wake-ups, at most an hour apart), as
/// the emulator would.
pub fn drive(p: &Profile) {
    let _ = p.canonical();
    for (i, d) in [&p.up, &p.down].into_iter().enumerate() {
        let _ = d.mean_delay();
        let mut pl: Pipeline<()> = Pipeline::new(d, p.base_rtt(), 1, i as u64);
        let mut now = Instant::ZERO;
        for k in 0..16u32 {
            pl.enqueue(now, 64 + 97 * k, ());
        }
        for _ in 0..64 {
            let Some(t) = pl.next_wakeup() else { break };
            if t.saturating_since(now) > Duration::from_secs(3600) {
                break;
            }
            now = now.max(t);
            while pl.dequeue(now).is_some() {}
            pl.take_drops().for_each(drop);
        }
    }
}
