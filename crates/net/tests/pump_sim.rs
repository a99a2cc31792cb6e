//! The packet pump driven in simulated time, on in-memory devices: no root,
//! no namespaces, no wall clock. What a lab relies on from the pump — every
//! packet written once, intact, at its due time; the wake-up choice that
//! keeps departures on time when the timer oversleeps; lateness figures;
//! drops counted by cause and logged; offloaded bursts passed as one
//! packet — is checked exactly here. The real pump on TUN devices is
//! checked end to end by the accuracy tests of the `aerolink` crate.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

use aerolink_link::{Pipeline, Profile};
use aerolink_net::log::{Dir, Event, EventKind};
use aerolink_net::pump::sim::{SimClock, SimDevice, SimTimer};
use aerolink_net::pump::{Pump, PumpReport, Side};
use aerolink_net::tun::VNET_HDR_LEN;

const MS: u64 = 1_000_000;

struct Hop {
    pump: Pump<SimDevice, SimTimer>,
    /// The aircraft side (up-link input, down-link output).
    left: Arc<SimDevice>,
    /// The ground side.
    right: Arc<SimDevice>,
    log: mpsc::Receiver<Vec<Event>>,
    /// Rounds of polling the pump did.
    spins: Arc<AtomicU64>,
}

fn hop(profile: &str, oversleep_ns: u64, max_spin_ns: u64, buf_len: usize) -> Hop {
    hop_with_target(profile, oversleep_ns, max_spin_ns, 0, buf_len)
}

/// A hop whose pump may be `lateness_target_ns` late before it polls.
fn hop_with_target(profile: &str, oversleep_ns: u64, max_spin_ns: u64, lateness_target_ns: u64, buf_len: usize) -> Hop {
    let prof = Profile::parse(profile, "test.toml", &[], &mut |_| Err("no files".into())).unwrap_or_else(|e| panic!("{e}"));
    let clock = Arc::new(SimClock::default());
    let left = SimDevice::new("to-server", clock.clone());
    let right = SimDevice::new("to-client", clock.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, log) = mpsc::channel();
    let spins = Arc::new(AtomicU64::new(0));
    let rtt = prof.base_rtt();
    let pump = Pump {
        hop: 0,
        sides: [
            Side { dir: Dir::Up, src: left.clone(), dst: right.clone(), pipeline: Pipeline::new(&prof.up, rtt, 1, 0) },
            Side { dir: Dir::Down, src: right.clone(), dst: left.clone(), pipeline: Pipeline::new(&prof.down, rtt, 1, 1) },
        ],
        timer: SimTimer { clock, inputs: vec![left.clone(), right.clone()], oversleep_ns, spin_ns: 1_000, spins: spins.clone(), stop: stop.clone() },
        stop,
        log: Some(tx),
        buf_len,
        max_spin_ns,
        lateness_target_ns,
        monitor: None,
    };
    Hop { pump, left, right, log, spins }
}

/// A packet whose bytes say which one it is.
fn packet(n: u32, len: usize) -> Vec<u8> {
    let mut p = vec![(n % 251) as u8; len];
    p[..4].copy_from_slice(&n.to_be_bytes());
    p
}

fn run(h: Hop) -> ([PumpReport; 2], Arc<SimDevice>, Arc<SimDevice>, Vec<Event>) {
    let reps = h.pump.run();
    let events: Vec<Event> = h.log.try_iter().flatten().collect();
    (reps, h.left, h.right, events)
}

#[test]
fn every_packet_leaves_once_intact_at_its_due_time() {
    // 1 Mbit/s: 1250 B take 10 ms; plus 20 ms of delay.
    let h = hop("[link]\nrate = \"1 Mbit/s\"\ndelay = \"20 ms\"\nqueue = \"100 packets\"\n", 0, 150_000, 1600 + VNET_HDR_LEN);
    for n in 0..20u32 {
        h.left.schedule(aerolink_link::Instant(0), &packet(n, 1250));
    }
    h.right.schedule(aerolink_link::Instant(5 * MS), &packet(99, 1250));
    let (reps, left, right, _) = run(h);
    let up = right.written();
    assert_eq!(up.len(), 20);
    for (k, (t, p)) in up.iter().enumerate() {
        assert_eq!(p, &packet(k as u32, 1250), "packet {k} changed or out of order");
        let due = (k as u64 + 1) * 10 * MS + 20 * MS;
        // Handed over within one round of polling after its due time.
        assert!(t.0 >= due && t.0 <= due + 1_000, "packet {k} left at {} ns, due {due}", t.0);
    }
    let down = left.written();
    assert_eq!(down.len(), 1);
    assert_eq!(down[0].0 .0, 5 * MS + 10 * MS + 20 * MS);
    assert_eq!((reps[0].packets_in, reps[0].packets_out, reps[0].bytes_out), (20, 20, 20 * 1250));
    assert_eq!((reps[1].packets_in, reps[1].packets_out), (1, 1));
    assert!(reps[0].lateness_us_max <= 1.0, "lateness {} µs", reps[0].lateness_us_max);
}

#[test]
fn polling_covers_a_timer_that_oversleeps() {
    // Packets 2 ms apart on an 11 ms link (departures fall between
    // arrivals); the timer wakes 80 µs late.
    let link = "[link]\ndelay = \"11 ms\"\n";
    let lateness = |max_spin_ns: u64| {
        let h = hop(link, 80_000, max_spin_ns, 1600 + VNET_HDR_LEN);
        for n in 0..400u32 {
            h.left.schedule(aerolink_link::Instant(n as u64 * 2 * MS), &packet(n, 100));
        }
        let (reps, ..) = run(h);
        assert_eq!(reps[0].packets_out, 400);
        (reps[0].lateness_us_p50, reps[0].lateness_us_p99)
    };
    // Sleeping only: every departure is as late as the timer.
    let (p50, _) = lateness(0);
    assert!((79.0..=82.0).contains(&p50), "sleep-only p50 {p50} µs");
    // Sleeping, then polling the last stretch learnt from the oversleeps:
    // once the margin is learnt (64 wake-ups), departures are on time.
    let (p50, p99) = lateness(150_000);
    assert!(p50 <= 1.0, "with polling p50 {p50} µs");
    assert!(p99 <= 81.0, "with polling p99 {p99} µs");
}

#[test]
fn the_pump_polls_only_for_lateness_beyond_its_target() {
    // The same packets and link; the pump may be 60 µs late.
    let link = "[link]\ndelay = \"11 ms\"\n";
    let run_with = |oversleep_ns: u64| {
        let h = hop_with_target(link, oversleep_ns, 150_000, 60_000, 1600 + VNET_HDR_LEN);
        for n in 0..400u32 {
            h.left.schedule(aerolink_link::Instant(n as u64 * 2 * MS), &packet(n, 100));
        }
        let spins = h.spins.clone();
        let (reps, ..) = run(h);
        assert_eq!(reps[0].packets_out, 400);
        (reps[0].lateness_us_p50, reps[0].lateness_us_p99, spins.load(Ordering::Relaxed))
    };
    // A timer 30 µs late is within the target: once learnt, no polling at
    // all, and departures are as late as the timer.
    let (p50, p99, spins_30) = run_with(30_000);
    assert!((29.0..=31.0).contains(&p50) && p99 <= 61.0, "30 µs timer: p50 {p50} µs, p99 {p99} µs");
    // A timer 80 µs late: polling covers only what exceeds the target
    // (80 µs + 10 µs headroom - 60 µs = 30 µs), so departures stay within it.
    let (p50, p99, spins_80) = run_with(80_000);
    assert!((45.0..=61.0).contains(&p50) && p99 <= 61.0, "80 µs timer: p50 {p50} µs, p99 {p99} µs");
    // Polling is what the target needs, no more: fewer rounds than with no
    // target, where the pump polls the whole learnt lateness.
    let h = hop(link, 80_000, 150_000, 1600 + VNET_HDR_LEN);
    for n in 0..400u32 {
        h.left.schedule(aerolink_link::Instant(n as u64 * 2 * MS), &packet(n, 100));
    }
    let spins = h.spins.clone();
    run(h);
    let spins_exact = spins.load(Ordering::Relaxed);
    assert!(spins_30 < 64 * 80, "30 µs timer polled {spins_30} rounds (only while learning)");
    assert!(spins_80 * 2 < spins_exact, "80 µs timer polled {spins_80} rounds, exact timing {spins_exact}");
}

#[test]
fn drops_are_counted_by_cause_and_logged() {
    // Up: a 3-packet queue at 1 Mbit/s takes 3 of a burst of 10. Down: all lost.
    let h = hop("[up]\nrate = \"1 Mbit/s\"\nqueue = \"3 packets\"\n[down]\nloss = \"100%\"\n", 0, 150_000, 1600 + VNET_HDR_LEN);
    for n in 0..10u32 {
        h.left.schedule(aerolink_link::Instant(0), &packet(n, 1000));
    }
    for n in 0..4u32 {
        h.right.schedule(aerolink_link::Instant(n as u64 * MS), &packet(n, 500));
    }
    let (reps, left, right, events) = run(h);
    assert_eq!(right.written().len(), 3);
    assert!(left.written().is_empty());
    assert_eq!((reps[0].packets_in, reps[0].packets_out, reps[0].dropped_queue, reps[0].dropped_loss), (10, 3, 7, 0));
    assert_eq!((reps[1].packets_in, reps[1].packets_out, reps[1].dropped_loss, reps[1].dropped_queue), (4, 0, 4, 0));
    let count = |dir: Dir, f: &dyn Fn(&EventKind) -> bool| events.iter().filter(|e| e.dir == dir && f(&e.kind)).count();
    assert_eq!(count(Dir::Up, &|k| *k == EventKind::Arrive), 10);
    assert_eq!(count(Dir::Up, &|k| matches!(k, EventKind::Depart { .. })), 3);
    assert_eq!(count(Dir::Up, &|k| *k == EventKind::Drop(aerolink_link::DropReason::Queue)), 7);
    assert_eq!(count(Dir::Down, &|k| *k == EventKind::Drop(aerolink_link::DropReason::Loss)), 4);
    // The departures logged carry their queueing and total delay.
    let departs: Vec<(u64, u64)> = events.iter().filter_map(|e| match e.kind {
        EventKind::Depart { queue_ns, delay_ns } => Some((queue_ns, delay_ns)),
        _ => None,
    }).collect();
    assert_eq!(departs, vec![(0, 8 * MS), (8 * MS, 16 * MS), (16 * MS, 24 * MS)]);
}

#[test]
fn an_offloaded_burst_passes_as_one_packet() {
    // An unlimited, loss-free, jitter-free hop may carry 64 KB bursts.
    let h = hop("[link]\ndelay = \"1 ms\"\n", 0, 150_000, 65_536 + VNET_HDR_LEN);
    assert!(h.pump.sides.iter().all(|s| s.pipeline.is_aggregate_safe()));
    let burst = packet(7, 65_536);
    h.left.schedule(aerolink_link::Instant(0), &burst);
    let (reps, _, right, _) = run(h);
    assert_eq!((reps[0].packets_in, reps[0].packets_out, reps[0].bytes_out), (1, 1, 65_536));
    assert_eq!(right.written(), vec![(aerolink_link::Instant(MS), burst)]);
    // A rate limit, loss or jitter makes a hop packet by packet.
    for link in ["[link]\nrate = \"10 Gbit/s\"\n", "[link]\nloss = \"1%\"\n", "[link]\njitter = \"normal 1 ms\"\n"] {
        let h = hop(link, 0, 0, 1600);
        assert!(!h.pump.sides[0].pipeline.is_aggregate_safe(), "{link}");
    }
}

/// Writes `events` as a log and summarises it, as `aerolink stats` does.
fn stats_of(events: &[Event]) -> aerolink_net::log::Summary {
    let mut buf = Vec::new();
    aerolink_net::log::write_header(&mut buf, &[("seed".into(), "1".into())]).unwrap();
    for e in events {
        aerolink_net::log::write_event(&mut buf, e).unwrap();
    }
    aerolink_net::log::summarize(buf.as_slice()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn dama_super_frames_reach_the_log_and_stats() {
    // A CRA of 80 kbit/s on a 1 Mbit/s carrier: 40 packets of 500 B at
    // once take 2 s; every super-frame allocates 80 kbit/s × 26.5 ms.
    let h = hop("[link]\ndelay = \"10 ms\"\n[up]\ndama = { carrier = \"1 Mbit/s\", cra = \"80 kbit/s\" }\n", 0, 150_000, 1600 + VNET_HDR_LEN);
    for n in 0..40u32 {
        h.left.schedule(aerolink_link::Instant(0), &packet(n, 500));
    }
    // A late packet so the idle stretch after the burst is reported.
    h.left.schedule(aerolink_link::Instant(5_000 * MS), &packet(40, 500));
    h.right.schedule(aerolink_link::Instant(100 * MS), &packet(41, 500));
    let (reps, _, right, events) = run(h);
    assert_eq!(right.written().len(), 41);
    let sfs: Vec<&Event> = events.iter().filter(|e| matches!(e.kind, EventKind::Note(aerolink_link::Note::Superframe { .. }))).collect();
    assert!(sfs.len() >= 75, "{} super-frame events", sfs.len());
    let s = stats_of(&events);
    let up = &s.directions[0];
    let sf = up.superframes.as_ref().expect("the up direction reports super-frames");
    // Every byte sent was sent in an allocation; the super-frames cover
    // the run without gaps or overlaps.
    // (The last packet starts in one super-frame and ends in the next,
    // which is still running when the simulation stops.)
    assert_eq!(reps[0].bytes_out, 41 * 500);
    assert!(sf.used_bytes > 40 * 500 && sf.used_bytes < 41 * 500, "used {} B", sf.used_bytes);
    let covered = sf.count as f64 * 0.0265;
    assert!((5.0..5.06).contains(&covered), "super-frames cover {covered:.3} s");
    let expected = 80_000.0 / 8.0 * covered;
    assert!((sf.allocated_bytes as f64 - expected).abs() <= sf.count as f64, "allocated {} B, expected {expected:.0}", sf.allocated_bytes);
    // Busy for the 2 s of the burst, idle after: per second, used ≤ allocated.
    assert!(sf.used_bps.iter().zip(&sf.allocated_bps).all(|(u, a)| *u <= a + 1.0), "{:?} vs {:?}", sf.used_bps, sf.allocated_bps);
    assert!(sf.used_bps[0] > 75_000.0 && sf.used_bps[3] == 0.0, "{:?}", sf.used_bps);
    assert!(s.directions[1].superframes.is_none(), "the forward link has no DAMA");
}

#[test]
fn arq_retransmissions_reach_the_log_and_stats() {
    // The return link of L-DACS 1 at FER 6.28e-2: most 84 B packets need
    // a retransmission or more.
    let h = hop("[up]\nldacs = { link = \"rl\", rate = \"158 kbit/s\" }\n", 0, 150_000, 1600 + VNET_HDR_LEN);
    for n in 0..200u32 {
        h.left.schedule(aerolink_link::Instant(n as u64 * 300 * MS), &packet(n, 84));
    }
    let (reps, _, _, events) = run(h);
    let retx: Vec<&Event> = events.iter().filter(|e| matches!(e.kind, EventKind::Note(aerolink_link::Note::Retransmit { .. }))).collect();
    // 0.322 of first tries fail: ≈ 64 of 200 plus their own repeats.
    assert!((40..=140).contains(&retx.len()), "{} retransmissions", retx.len());
    assert_eq!(reps[0].retransmissions, retx.len() as u64);
    assert!(retx.iter().all(|e| matches!(e.kind, EventKind::Note(aerolink_link::Note::Retransmit { attempt, bytes: 84, .. }) if attempt >= 2)));
    assert_eq!(stats_of(&events).directions[0].retransmissions, retx.len() as u64);
}
