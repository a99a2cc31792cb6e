//! LEO reconfiguration in simulated time: the step delay changes only at
//! the reconfiguration instants, the same in both directions, from the
//! run's seed; a per-line delay series (LeoReplayer's format) is read as
//! one value every 10 ms.

use aerolink_link::profile::Profile;
use aerolink_link::{Duration, Instant, Pipeline};

const MS: u64 = 1_000_000;

fn probe(p: &mut Pipeline<()>, times_ms: &[u64]) -> Vec<(u64, f64)> {
    // One small packet at each time; the link is idle in between, so each
    // one's delay is the base delay plus jitter.
    let mut out = Vec::new();
    for &t in times_ms {
        p.enqueue(Instant(t * MS), 64, ());
        while let Some(w) = p.next_wakeup() {
            match p.dequeue(w) {
                Some(pkt) => out.push((t, (pkt.meta.due.0 - pkt.meta.arrived.0) as f64 / 1e6)),
                None => continue,
            }
        }
        let _ = p.take_drops().count();
    }
    out
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn starlink_delay_steps_at_every_reconfiguration() {
    let prof = Profile::parse(aerolink_link::builtin::get("starlink").unwrap(), "starlink", &[], &mut |_| Err("no files".into())).unwrap();
    let mut down: Pipeline<()> = Pipeline::new(&prof.down, prof.base_rtt(), 5, 1);
    // Probes every 100 ms for two minutes, away from the 50 ms outages.
    let times: Vec<u64> = (0..1200u64).map(|i| i * 100 + 60).collect();
    let samples = probe(&mut down, &times);
    assert!(samples.len() > 1150, "{} of 1200 probes through", samples.len());
    // Group by interval: [0, 12 s), [12, 27), [27, 42), …
    let mut groups: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for (t, d) in &samples {
        let k = if *t < 12_000 { 0 } else { 1 + (t - 12_000) / 15_000 };
        groups.entry(k).or_default().push(*d);
    }
    assert!(groups.len() >= 8);
    let mut medians = Vec::new();
    let mut within = Vec::new();
    for v in groups.values_mut() {
        let m = median(v);
        medians.push(m);
        within.extend(v.iter().map(|x| (x - m).abs()));
        // Every sample sits within the jitter of its interval's level.
        assert!(v.iter().all(|x| (x - m).abs() < 10.0), "{v:?}");
        assert!((15.0 - 7.0..=30.0 + 7.0).contains(&m), "interval median {m} ms outside 15–30 ms");
    }
    // Levels differ between intervals far more than samples within one.
    let mut spread: Vec<f64> = medians.windows(2).map(|w| (w[0] - w[1]).abs()).collect();
    let between = median(&mut spread);
    let within = median(&mut within);
    assert!(between > 3.0 * within, "between intervals {between:.2} ms, within {within:.2} ms: {medians:?}");
}

#[test]
fn both_directions_share_the_steps_and_the_seed_picks_them() {
    let prof = Profile::parse(aerolink_link::builtin::get("starlink").unwrap(), "starlink", &[], &mut |_| Err("no files".into())).unwrap();
    let level = |spec, seed, stream| {
        let d: aerolink_link::BaseDelay = match spec {
            0 => prof.up.delay.resolved(seed),
            _ => prof.down.delay.resolved(seed),
        };
        let _ = stream;
        (0..20u64).map(|k| d.at(Instant(12_000 * MS + k * 15_000 * MS + 1))).collect::<Vec<Duration>>()
    };
    assert_eq!(level(0, 9, 0), level(1, 9, 1));
    assert_ne!(level(0, 9, 0), level(0, 10, 0));
    // A step holds for its 15 s, then changes.
    let d = prof.down.delay.resolved(3);
    assert_eq!(d.at(Instant(12_000 * MS)), d.at(Instant(26_999 * MS)));
    assert_eq!(d.at(Instant(0)), d.at(Instant(11_999 * MS)));
}

#[test]
fn a_leoreplayer_delay_series_is_one_value_per_10_ms() {
    let prof = Profile::parse("[link]\ndelay = { trace = \"delay_1.txt\", every = \"10 ms\" }\n", "leo.toml", &[], &mut |p| {
        assert_eq!(p, "delay_1.txt");
        Ok("20\n30\n40\n".into())
    })
    .unwrap();
    let d = &prof.down.delay;
    assert_eq!(d.at(Instant(0)), Duration::from_millis(20));
    assert_eq!(d.at(Instant(10 * MS)), Duration::from_millis(30));
    assert_eq!(d.at(Instant(20 * MS)), Duration::from_millis(40));
    // It loops with its full length (3 values × 10 ms).
    assert_eq!(d.at(Instant(30 * MS)), Duration::from_millis(20));
    let bad = Profile::parse("[link]\ndelay = { trace = \"d.txt\", every = \"0 ms\" }\n", "leo.toml", &[], &mut |_| Ok("1\n".into())).unwrap_err();
    assert_eq!(bad.key, "link.delay");
}

/// A real Starlink downlink recording (LeoReplayer's example, MIT: see
/// `tests/data/leoreplayer-starlink/LICENSE`), read unchanged as a profile.
fn recording() -> Profile {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/leoreplayer-starlink");
    let text = "name = \"starlink-recording\"\n[down]\nrate = { trace = \"bw_example.txt\" }\ndelay = { trace = \"delay_example.txt\", every = \"10 ms\" }\nqueue = \"unlimited\"\n";
    Profile::parse(text, "starlink-recording", &[], &mut |f| std::fs::read_to_string(dir.join(f)).map_err(|e| e.to_string())).unwrap()
}

#[test]
fn the_real_starlink_recording_replays_its_rate_and_its_delays() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/leoreplayer-starlink");
    let opportunities = std::fs::read_to_string(dir.join("bw_example.txt")).unwrap().lines().filter(|l| !l.trim().is_empty()).count();
    let delays: Vec<f64> = std::fs::read_to_string(dir.join("delay_example.txt")).unwrap().lines().filter_map(|l| l.trim().parse().ok()).collect();
    assert_eq!(delays.len(), 11_999);
    let prof = recording();

    // Saturated: a backlog larger than the recording can carry in 120 s.
    // Each line is a delivery opportunity of 1504 bytes (Mahimahi's), so
    // the recording carries 487 652 × 1504 B in its 120.05 s: 48.9 Mbit/s.
    let mut down: Pipeline<()> = Pipeline::new(&prof.down, prof.base_rtt(), 1, 1);
    for _ in 0..opportunities + 50_000 {
        down.enqueue(Instant(0), 1500, ());
    }
    let mut sent = 0usize;
    while let Some(w) = down.next_wakeup() {
        if w.0 >= 120_000 * MS {
            break;
        }
        if let Some(p) = down.dequeue(w) {
            // Its last bit left within the first 120 s.
            sent += (p.meta.tx_end.0 < 120_000 * MS) as usize;
        }
    }
    let ours = sent as f64 * 1500.0 * 8.0 / 120.0;
    let recorded = opportunities as f64 * 1504.0 * 8.0 / 120.052;
    assert!((ours / recorded - 1.0).abs() < 0.005, "{:.2} Mbit/s replayed, {:.2} recorded", ours / 1e6, recorded / 1e6);

    // Idle: a small probe every 370 ms waits for the next delivery
    // opportunity, then sees the recorded one-way delay of the 10 ms
    // interval it left in (interpolated towards the next).
    let mut idle: Pipeline<()> = Pipeline::new(&recording().down, prof.base_rtt(), 1, 1);
    let mut samples = Vec::new();
    for i in 0..320u64 {
        idle.enqueue(Instant((i * 370 + 3) * MS), 64, ());
        while let Some(w) = idle.next_wakeup() {
            if let Some(p) = idle.dequeue(w) {
                samples.push((p.meta.tx_end.0 / MS, (p.meta.due.0 - p.meta.tx_end.0) as f64 / 1e6));
            }
        }
    }
    assert_eq!(samples.len(), 320);
    for (t, d) in &samples {
        let k = (*t / 10) as usize;
        let (a, b) = (delays[k], delays[(k + 1) % delays.len()]);
        assert!(*d >= a.min(b) - 0.01 && *d <= a.max(b) + 0.01, "at {t} ms: {d} ms, recorded {a}–{b}");
    }
    let mut ours: Vec<f64> = samples.iter().map(|s| s.1).collect();
    let mut theirs = delays.clone();
    assert!((median(&mut ours) - median(&mut theirs)).abs() <= 1.0, "median {} vs the recording's {}", median(&mut ours), median(&mut theirs));
}
