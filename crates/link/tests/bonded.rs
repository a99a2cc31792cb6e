//! Bonded channels in simulated time: round-robin striping without
//! resequencing, call drops at the configured rate (confidence interval
//! over many drops), what a drop loses, and arrivals with every channel
//! down.

use aerolink_link::bonded::{Bonded, BondedSpec};
use aerolink_link::packet::{Drop, DropReason, Packet};
use aerolink_link::stage::{stage_rng, Note, Stage};
use aerolink_link::{Duration, Instant};

const MS: u64 = 1_000_000;

fn spec(channels: u32) -> BondedSpec {
    BondedSpec { channels, rate_bps: 2_400.0, delay: Duration::from_millis(600), jitter: None, drop_every: None, redial: (Duration::from_secs(45), Duration::from_secs(50)), marginal: None, queue_bytes: 4_000 }
}

/// Feeds packets `(at ns, len)` and runs the stage to the end. Returns
/// departures `(id, due)`, drops and channel events.
fn drive(b: &mut Bonded, arrivals: &[(u64, u32)], until: Instant) -> (Vec<(u64, Instant)>, Vec<Drop>) {
    let (mut out, mut drops) = (Vec::new(), Vec::new());
    let mut i = 0;
    loop {
        let now = match (arrivals.get(i).map(|a| Instant(a.0)), b.next_wakeup()) {
            (Some(a), Some(w)) => a.min(w),
            (a, w) => match a.or(w) {
                Some(t) if t <= until => t,
                _ => break,
            },
        };
        while i < arrivals.len() && Instant(arrivals[i].0) <= now {
            let m = Packet::new(i as u64, arrivals[i].1, now, ()).meta;
            b.enqueue(now, m, &mut drops);
            i += 1;
        }
        while let Some(m) = b.dequeue(now, &mut drops) {
            assert!(m.due <= now);
            out.push((m.id, m.due));
        }
    }
    (out, drops)
}

#[test]
fn packets_are_striped_round_robin_and_not_resequenced() {
    let mut b = Bonded::new(spec(3), stage_rng(1, 0));
    // Six 60 B packets at once: 200 ms each on a 2.4 kbit/s line.
    let (out, drops) = drive(&mut b, &[(0, 60), (0, 60), (0, 60), (0, 60), (0, 60), (0, 60)], Instant(60_000 * MS));
    assert!(drops.is_empty());
    let due: std::collections::BTreeMap<u64, Instant> = out.iter().cloned().collect();
    // Channels 0, 1, 2 take packets 0–2 at once, then 3–5.
    for id in 0..3 {
        assert_eq!(due[&id], Instant(800 * MS));
        assert_eq!(due[&(id + 3)], Instant(1_000 * MS));
    }
    // A bigger packet on one channel is overtaken by small ones behind it
    // on the others: no resequencing.
    let mut b = Bonded::new(spec(2), stage_rng(1, 0));
    let (out, _) = drive(&mut b, &[(0, 600), (0, 60)], Instant(60_000 * MS));
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![1, 0]);
}

#[test]
fn calls_drop_at_the_configured_rate() {
    // Mean 60 s between drops per channel, redial 45–50 s: over 100 hours
    // of light traffic, the up spells average 60 s.
    let s = BondedSpec { drop_every: Some(Duration::from_secs(60)), ..spec(3) };
    let mut b = Bonded::new(s, stage_rng(42, 0));
    let arrivals: Vec<(u64, u32)> = (0..360_000u64).map(|k| (k * 1_000 * MS, 40)).collect();
    let _ = drive(&mut b, &arrivals, Instant(360_000_000 * MS));
    let mut all = Vec::new();
    b.take_events(&mut all);
    struct Change {
        at: Instant,
        channel: u16,
        up: bool,
    }
    let events: Vec<Change> = all.iter().map(|e| match e.note { Note::Channel { channel, up } => Change { at: e.at, channel, up }, n => panic!("bonded reported {n:?}") }).collect();
    let mut ups = Vec::new();
    let mut redials = Vec::new();
    for ch in 0..3u16 {
        let ev: Vec<_> = events.iter().filter(|e| e.channel == ch).collect();
        // Alternating down/up, starting with a drop.
        assert!(ev.windows(2).all(|w| w[0].up != w[1].up && w[0].at <= w[1].at));
        let mut last_up = Instant::ZERO;
        for e in ev {
            if e.up {
                redials.push((e.at.0 - last_up.0) as f64 / 1e9);
                last_up = e.at;
            } else {
                ups.push((e.at.0 - last_up.0) as f64 / 1e9);
                last_up = e.at;
            }
        }
    }
    let n = ups.len() as f64;
    let mean = ups.iter().sum::<f64>() / n;
    // Exponential: the mean of n samples has standard error 60 / √n.
    let half = 2.576 * 60.0 / n.sqrt();
    assert!(n > 5_000.0, "{n} drops");
    assert!((mean - 60.0).abs() < half + 1.0, "mean up spell {mean:.2} s over {n} drops (±{half:.2})");
    // Redials sit in 45–50 s (drops are seen at the next event, 1 s apart).
    assert!(redials.iter().all(|r| (45.0..=51.0).contains(r)), "redial outside 45–50 s");
}

#[test]
fn a_drop_loses_what_the_channel_holds_and_no_channel_means_no_service() {
    // One channel that drops at once (mean 1 µs): the queued packets are
    // lost with reason outage, and while it redials arrivals are dropped.
    let s = BondedSpec { drop_every: Some(Duration(1_000)), redial: (Duration::from_secs(45), Duration::from_secs(45)), ..spec(1) };
    let mut b = Bonded::new(s, stage_rng(3, 0));
    let (out, drops) = drive(&mut b, &[(0, 600), (0, 600), (10_000 * MS, 60)], Instant(20_000 * MS));
    assert!(out.is_empty());
    assert_eq!(drops.len(), 3);
    assert!(drops.iter().all(|d| d.reason == DropReason::Outage));
    assert!(b.channels_up() == 0);
}
