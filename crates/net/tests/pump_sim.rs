//! The packet pump driven in simulated time, on in-memory devices: no root,
//! no namespaces, no wall clock. What a lab relies on from the pump — every
//! packet written once, intact, at its due time; the wake-up choice that
//! keeps departures on time when the timer oversleeps; lateness figures;
//! drops counted by cause and logged; offloaded bursts passed as one
//! packet, or cut into segments that meet their own fates and leave with
//! correct headers — is checked exactly here. The real pump on TUN devices is
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
    log: mpsc::Receiver<aerolink_net::sink::Batch>,
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
        snap: None,
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
    let events: Vec<Event> = h.log.try_iter().flat_map(|b| b.events).collect();
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
    let departs: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Depart { queue_ns, delay_ns } => Some((queue_ns, delay_ns)),
            _ => None,
        })
        .collect();
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
    // A rate limit, loss or jitter makes the pump cut bursts into their
    // segments (the tests below).
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
    // The pump's own report sums the same super-frames (what a run's
    // allocated_used_pct is made of).
    assert_eq!((reps[0].allocated_bytes, reps[0].allocated_used_bytes), (sf.allocated_bytes, sf.used_bytes));
    assert_eq!((reps[1].allocated_bytes, reps[1].allocated_used_bytes), (0, 0));
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

// ---- Offloaded bursts through a shaping link (crates/net/src/gso.rs) ----

/// An independent one's-complement checksum (RFC 1071) over `parts`.
fn rfc1071(parts: &[&[u8]]) -> u16 {
    let bytes: Vec<u8> = parts.concat();
    let mut sum: u64 = bytes.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u64).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

const SRC4: [u8; 4] = [198, 18, 0, 1];
const DST4: [u8; 4] = [198, 18, 1, 1];
const SRC6: [u8; 16] = [0x20, 0x01, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const DST6: [u8; 16] = [0x20, 0x01, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const TCP_HDR: usize = 32; // 20 bytes and a 12-byte timestamp option

/// A TCP header with a timestamp option, checksum zero.
fn tcp_header(seq: u32, flags: u8) -> Vec<u8> {
    let mut t = vec![0u8; TCP_HDR];
    t[0..2].copy_from_slice(&40000u16.to_be_bytes());
    t[2..4].copy_from_slice(&5201u16.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&77u32.to_be_bytes());
    t[12] = ((TCP_HDR / 4) as u8) << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&502u16.to_be_bytes());
    t[20..24].copy_from_slice(&[1, 1, 8, 10]);
    t[24..28].copy_from_slice(&12345u32.to_be_bytes());
    t
}

const TCP: u8 = 6;
const UDP: u8 = 17;

/// An IP header for `l4_bytes` of TCP or UDP (`proto`; IPv4:
/// identification `id`).
fn ip_header(v6: bool, proto: u8, l4_bytes: usize, id: u16) -> Vec<u8> {
    if v6 {
        let mut h = vec![0x60, 0, 0, 0];
        h.extend_from_slice(&(l4_bytes as u16).to_be_bytes());
        h.extend_from_slice(&[proto, 64]);
        h.extend_from_slice(&SRC6);
        h.extend_from_slice(&DST6);
        h
    } else {
        let mut h = vec![0x45, 0];
        h.extend_from_slice(&((20 + l4_bytes) as u16).to_be_bytes());
        h.extend_from_slice(&id.to_be_bytes());
        h.extend_from_slice(&[0x40, 0, 64, proto, 0, 0]);
        h.extend_from_slice(&SRC4);
        h.extend_from_slice(&DST4);
        let c = rfc1071(&[&h]);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }
}

/// The pseudo-header for `l4_bytes` of TCP or UDP (`proto`).
fn pseudo(v6: bool, proto: u8, l4_bytes: usize) -> Vec<u8> {
    if v6 {
        [&SRC6[..], &DST6[..], &(l4_bytes as u32).to_be_bytes(), &[0, 0, 0, proto]].concat()
    } else {
        [&SRC4[..], &DST4[..], &[0, proto], &(l4_bytes as u16).to_be_bytes()].concat()
    }
}

/// What the sender's stack would put on the wire without offload: `n`
/// segments of `mss` bytes (the last `last`), checksums complete; the
/// burst's flags are CWR|ACK|PSH, which segmentation gives the first (CWR)
/// and the last (PSH) only.
fn wire_segments(v6: bool, n: usize, mss: usize, last: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = if i + 1 == n { last } else { mss };
            let payload: Vec<u8> = (0..len).map(|k| ((i * mss + k) % 251) as u8).collect();
            let flags = 0x10 | if i == 0 { 0x80 } else { 0 } | if i + 1 == n { 0x08 } else { 0 };
            let mut tcp = tcp_header(1000 + (i * mss) as u32, flags);
            let c = rfc1071(&[&pseudo(v6, TCP, TCP_HDR + len), &tcp, &payload]);
            tcp[16..18].copy_from_slice(&c.to_be_bytes());
            [ip_header(v6, TCP, TCP_HDR + len, 0x1234 + i as u16), tcp, payload].concat()
        })
        .collect()
}

/// The same segments as the kernel hands them to a TUN device with TSO:
/// one frame, virtio-net header first, the checksum field holding the
/// pseudo-header sum of the whole burst.
fn offloaded_burst(v6: bool, n: usize, mss: usize, last: usize) -> Vec<u8> {
    let total = (n - 1) * mss + last;
    let payload: Vec<u8> = (0..total).map(|k| (k % 251) as u8).collect();
    let mut tcp = tcp_header(1000, 0x80 | 0x10 | 0x08);
    let partial = !rfc1071(&[&pseudo(v6, TCP, TCP_HDR + total)]);
    tcp[16..18].copy_from_slice(&partial.to_be_bytes());
    let ip = ip_header(v6, TCP, TCP_HDR + total, 0x1234);
    let ip_len = ip.len();
    let mut vnet = vec![1u8, if v6 { 4 } else { 1 }];
    vnet.extend_from_slice(&((ip_len + TCP_HDR) as u16).to_le_bytes());
    vnet.extend_from_slice(&(mss as u16).to_le_bytes());
    vnet.extend_from_slice(&(ip_len as u16).to_le_bytes());
    vnet.extend_from_slice(&16u16.to_le_bytes());
    [vnet, ip, tcp, payload].concat()
}

/// A UDP header for `payload`, checksum zero.
fn udp_header(payload: usize) -> Vec<u8> {
    [&4433u16.to_be_bytes()[..], &50000u16.to_be_bytes(), &((8 + payload) as u16).to_be_bytes(), &[0, 0]].concat()
}

/// What a UDP socket sends without offload: `n` datagrams of `size` bytes
/// of payload (the last `last`), checksums complete (0 sent as all ones).
fn wire_datagrams(v6: bool, n: usize, size: usize, last: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = if i + 1 == n { last } else { size };
            let payload: Vec<u8> = (0..len).map(|k| ((i * size + k) % 251) as u8).collect();
            let mut udp = udp_header(len);
            let c = match rfc1071(&[&pseudo(v6, UDP, 8 + len), &udp, &payload]) {
                0 => 0xffff,
                c => c,
            };
            udp[6..8].copy_from_slice(&c.to_be_bytes());
            [ip_header(v6, UDP, 8 + len, 0x1234 + i as u16), udp, payload].concat()
        })
        .collect()
}

/// The same datagrams as the kernel hands a TUN device with USO one
/// `UDP_SEGMENT` send (what quinn does): one frame, the UDP length and
/// checksum those of the whole payload, `gso_size` the datagrams' size.
fn offloaded_datagrams(v6: bool, n: usize, size: usize, last: usize) -> Vec<u8> {
    let total = (n - 1) * size + last;
    let payload: Vec<u8> = (0..total).map(|k| (k % 251) as u8).collect();
    let mut udp = udp_header(total);
    let partial = !rfc1071(&[&pseudo(v6, UDP, 8 + total)]);
    udp[6..8].copy_from_slice(&partial.to_be_bytes());
    let ip = ip_header(v6, UDP, 8 + total, 0x1234);
    let ip_len = ip.len();
    let mut vnet = vec![1u8, aerolink_net::gso::GSO_UDP_L4];
    vnet.extend_from_slice(&((ip_len + 8) as u16).to_le_bytes());
    vnet.extend_from_slice(&(size as u16).to_le_bytes());
    vnet.extend_from_slice(&(ip_len as u16).to_le_bytes());
    vnet.extend_from_slice(&6u16.to_le_bytes());
    [vnet, ip, udp, payload].concat()
}

/// Every packet the far stack receives from what the pump wrote, in order.
fn received(frames: &[(aerolink_link::Instant, Vec<u8>)]) -> Vec<Vec<u8>> {
    frames.iter().flat_map(|(_, f)| aerolink_net::gso::segment(f)).collect()
}

#[test]
fn a_burst_cut_by_loss_arrives_as_the_segments_that_survived_with_correct_headers() {
    // 1 Gbit/s (12 µs per segment) with 10 % loss; the timer oversleeps
    // 40 µs and never polls, so several segments are due at each wake-up
    // and leave together — as a shorter burst, or one packet. TCP (TSO)
    // and UDP (USO: 40 QUIC-sized datagrams of one UDP_SEGMENT send).
    for (v6, udp) in [(false, false), (true, false), (false, true), (true, true)] {
        let (n, mss, last) = if udp { (40, 1232, 700) } else { (40, 1448, 700) };
        let link = "[link]\nrate = \"1 Gbit/s\"\nloss = \"10%\"\nqueue = \"unlimited\"\n";
        let h = hop(link, 40_000, 0, 65_536 + VNET_HDR_LEN);
        assert!(!h.pump.sides[0].pipeline.is_aggregate_safe());
        let burst = if udp { offloaded_datagrams(v6, n, mss, last) } else { offloaded_burst(v6, n, mss, last) };
        h.left.schedule_frame(aerolink_link::Instant(0), &burst);
        let (reps, _, right, events) = run(h);
        let lost: Vec<u64> = events.iter().filter(|e| e.kind == EventKind::Drop(aerolink_link::DropReason::Loss)).map(|e| e.id).collect();
        assert!(!lost.is_empty() && lost.len() < 15, "v6 {v6} udp {udp}: {} of {n} lost", lost.len());
        // The stages saw each segment at its size on the wire.
        assert_eq!(reps[0].packets_in, n as u64);
        let wire = if udp { wire_datagrams(v6, n, mss, last) } else { wire_segments(v6, n, mss, last) };
        let expected: Vec<Vec<u8>> = wire.iter().enumerate().filter(|(i, _)| !lost.contains(&(*i as u64))).map(|(_, p)| p.clone()).collect();
        let frames = right.written_frames();
        let got = received(&frames);
        assert_eq!(got.len(), expected.len(), "v6 {v6} udp {udp}");
        for (k, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(g, e, "v6 {v6} udp {udp}: packet {k} differs from what the sender's stack would have sent");
        }
        assert_eq!(reps[0].bytes_out, expected.iter().map(|p| p.len() as u64).sum::<u64>());
        // Segments due together left together, and a loss split the burst.
        assert!(frames.len() < expected.len() && frames.len() > 1, "v6 {v6} udp {udp}: {} frames for {} packets", frames.len(), expected.len());
        assert!(frames.iter().any(|(_, f)| aerolink_net::gso::Burst::parse(f).is_some()), "v6 {v6} udp {udp}: no shorter burst written");
    }
}

#[test]
fn a_cut_burst_meets_the_same_fates_at_the_same_times_as_its_segments_one_by_one() {
    // Same seed, same link: the burst cut by the pump and the kernel's own
    // segments read one by one lose the same segments and stamp the same
    // departure times — the loss statistics do not depend on offload. TCP
    // bursts, and UDP ones (44 datagrams of 1452 B, QUIC's largest here).
    let link = "[link]\nrate = \"200 Mbit/s\"\nloss = \"5%\"\ndelay = \"3 ms\"\nqueue = \"60 packets\"\n";
    for udp in [false, true] {
        let (n, mss, last) = if udp { (44, 1452, 1000) } else { (44, 1448, 1448) };
        let fates = |cut: bool| {
            let h = hop(link, 0, 150_000, 65_536 + VNET_HDR_LEN);
            for b in 0..30u64 {
                let at = aerolink_link::Instant(b * 2 * MS);
                if cut {
                    h.left.schedule_frame(at, &if udp { offloaded_datagrams(false, n, mss, last) } else { offloaded_burst(false, n, mss, last) });
                } else {
                    for p in if udp { wire_datagrams(false, n, mss, last) } else { wire_segments(false, n, mss, last) } {
                        h.left.schedule(at, &p);
                    }
                }
            }
            let (reps, _, right, events) = run(h);
            let fates: Vec<(u64, String, u64)> = events.iter().filter(|e| e.dir == Dir::Up && e.kind != EventKind::Arrive).map(|e| (e.id, format!("{:?}", e.kind), e.t.0)).collect();
            (reps[0].clone(), fates, right.written().len())
        };
        let (cut_rep, cut_fates, cut_writes) = fates(true);
        let (one_rep, one_fates, one_writes) = fates(false);
        assert_eq!(cut_fates, one_fates, "udp {udp}");
        assert_eq!((cut_rep.packets_in, cut_rep.packets_out, cut_rep.dropped_loss, cut_rep.dropped_queue), (one_rep.packets_in, one_rep.packets_out, one_rep.dropped_loss, one_rep.dropped_queue));
        assert!(cut_rep.dropped_loss > 20 && cut_rep.dropped_queue > 0, "{cut_rep:?}");
        // With an exact timer each segment leaves at its own departure time,
        // so the pump writes one frame per segment on both paths.
        assert_eq!(cut_writes, one_writes);
        assert_eq!(cut_writes as u64, cut_rep.packets_out);
    }
}

#[test]
fn a_burst_through_an_exact_timer_leaves_segment_by_segment_at_each_due_time() {
    // 100 Mbit/s: a 1500 B segment every 120 µs. Each is written at its own
    // departure time, never batched ahead of it.
    let h = hop("[link]\nrate = \"100 Mbit/s\"\ndelay = \"1 ms\"\n", 0, 150_000, 65_536 + VNET_HDR_LEN);
    h.left.schedule_frame(aerolink_link::Instant(0), &offloaded_burst(false, 10, 1448, 1448));
    let (reps, _, right, events) = run(h);
    let dues: Vec<u64> = events.iter().filter(|e| matches!(e.kind, EventKind::Depart { .. })).map(|e| e.t.0).collect();
    let writes = right.written_frames();
    assert_eq!(writes.len(), 10);
    for (k, ((t, f), due)) in writes.iter().zip(&dues).enumerate() {
        let tx = (k as u64 + 1) * 1500 * 8 * 10; // ns at 100 Mbit/s
        assert_eq!(*due, tx + MS, "segment {k}");
        assert!(t.0 >= *due && t.0 <= due + 1_000, "segment {k} written at {} ns, due {due}", t.0);
        assert_eq!(aerolink_net::gso::segment(f), vec![wire_segments(false, 10, 1448, 1448)[k].clone()]);
    }
    assert!(reps[0].lateness_us_max <= 1.0);
}

#[test]
fn call_drops_and_redials_are_counted_per_channel_as_logged() {
    // Two calls dropping every 5 s on average, back after 1–2 s; a packet
    // every 100 ms each way for 60 s keeps the link busy.
    let link = "[link]\nbonded = { rate = \"1 Mbit/s\", redial = [\"1 s\", \"2 s\"], channels = [{ delay = \"10 ms\", drop_every = \"5 s\" }, { delay = \"10 ms\", drop_every = \"5 s\" }] }\n";
    let h = hop(link, 0, 150_000, 1600 + VNET_HDR_LEN);
    for n in 0..600u32 {
        h.left.schedule(aerolink_link::Instant(n as u64 * 100 * MS), &packet(n, 100));
        h.right.schedule(aerolink_link::Instant(n as u64 * 100 * MS), &packet(n, 100));
    }
    let (reps, _, _, events) = run(h);
    let logged =
        |ch: u16| events.iter().filter(|e| e.dir == Dir::Up && e.t.0 > 0 && matches!(e.kind, EventKind::Note(aerolink_link::Note::Channel { channel, up: false }) if channel == ch)).count() as u64;
    assert_eq!(reps[0].channel_drops, vec![logged(0), logged(1)]);
    // About 60 s / (5 s up + 1.5 s down) ≈ 9 per call; a call carries both
    // directions, so both reports count the same drops.
    assert!(reps[0].channel_drops.iter().all(|n| (3..=20).contains(n)), "{:?}", reps[0].channel_drops);
    assert_eq!(reps[0].channel_drops, reps[1].channel_drops);
    assert!(!reps[0].redials_s.is_empty());
    for r in &reps[0].redials_s {
        assert!((1.0..=2.0).contains(r), "a redial of {r} s, outside 1–2 s");
    }
    // Every drop is a down span, closed by its redial or by the link's end;
    // the spans of one channel follow each other and stay within the run.
    let spans = &reps[0].channel_down_spans;
    let end = reps[0].ended_s;
    assert!(end >= 59.9, "the link ended at {end} s");
    for ch in 0..2u16 {
        let mine: Vec<_> = spans.iter().filter(|s| s.0 == ch).collect();
        assert_eq!(mine.len() as u64, reps[0].channel_drops[ch as usize], "channel {ch}: {spans:?}");
        assert!(mine.windows(2).all(|w| w[0].2 <= w[1].1) && mine.iter().all(|s| s.1 < s.2 && s.2 <= end), "channel {ch}: {spans:?}, end {end}");
    }
}
