//! Helpers shared by the link's simulated-time tests.

/// Wilson score interval for `k` successes in `n` trials at `z` standard
/// deviations (2.576 for 99 %).
#[allow(dead_code)]
pub fn binomial_ci(k: usize, n: usize, z: f64) -> (f64, f64) {
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    (centre - half, centre + half)
}

use aerolink_link::{Drop, Instant, Meta, Pipeline};

/// Feeds `(arrival ns, len)` packets to `p`, waking exactly at each event
/// (an arrival or the pipeline's next wake-up) until nothing is left.
/// Returns what left, in order, and what was dropped.
#[allow(dead_code)]
pub fn drive(p: &mut Pipeline<()>, arrivals: &[(u64, u32)]) -> (Vec<Meta>, Vec<Drop>) {
    let users: Vec<(u64, u32, u32)> = arrivals.iter().map(|&(t, len)| (t, len, 0)).collect();
    drive_users(p, &users)
}

/// [`drive`] with each packet's user ([`Meta::user`]): `(arrival ns, len,
/// user)`.
#[allow(dead_code)]
pub fn drive_users(p: &mut Pipeline<()>, arrivals: &[(u64, u32, u32)]) -> (Vec<Meta>, Vec<Drop>) {
    let (mut out, mut drops) = (Vec::new(), Vec::new());
    let mut i = 0;
    loop {
        let now = match (arrivals.get(i).map(|a| Instant(a.0)), p.next_wakeup()) {
            (Some(a), Some(w)) => a.min(w),
            (a, w) => match a.or(w) {
                Some(t) => t,
                None => break,
            },
        };
        while i < arrivals.len() && Instant(arrivals[i].0) <= now {
            p.enqueue_for(now, arrivals[i].1, arrivals[i].2, ());
            i += 1;
        }
        while let Some(pkt) = p.dequeue(now) {
            assert!(pkt.meta.due <= now, "a packet left before it was due");
            out.push(pkt.meta);
        }
        drops.extend(p.take_drops());
    }
    (out, drops)
}

/// Departures as `(user, arrived ns, due ns)`.
#[allow(dead_code)]
pub fn user_departures(out: &[Meta]) -> Vec<(u32, u64, u64)> {
    out.iter().map(|m| (m.user, m.arrived.0, m.due.0)).collect()
}
