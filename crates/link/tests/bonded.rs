//! Bonded channels in simulated time: round-robin striping without
//! resequencing, call drops at the configured rate (confidence interval
//! over many drops), what a drop loses, arrivals with every channel down,
//! channels with delays of their own, both directions of a call dropping
//! together, the stationary start, and what a bad channel is told.

use aerolink_link::bonded::{BondStart, Bonded, BondedSpec};
use aerolink_link::packet::{Drop, DropReason, Packet};
use aerolink_link::stage::{Note, Stage, StageContext, StageEvent};
use aerolink_link::{Duration, Instant, Profile};

const MS: u64 = 1_000_000;

fn spec(channels: usize) -> BondedSpec {
    BondedSpec::identical(channels, 2_400.0, Duration::from_millis(600), None, None)
}

/// The stage for direction `stream` of a run with `seed`.
fn ctx(seed: u64, stream: u64) -> StageContext {
    StageContext { seed, stream, rtt: Duration::ZERO, hop: None }
}

fn with_drops(mut s: BondedSpec, every: Duration) -> BondedSpec {
    for c in &mut s.channels {
        c.drop_every = Some(every);
    }
    s
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
    let mut b = Bonded::new(spec(3), &ctx(1, 0));
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
    let mut b = Bonded::new(spec(2), &ctx(1, 0));
    let (out, _) = drive(&mut b, &[(0, 600), (0, 60)], Instant(60_000 * MS));
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![1, 0]);
}

#[test]
fn calls_drop_at_the_configured_rate() {
    // Mean 60 s between drops per channel, redial 45–50 s: over 100 hours
    // of light traffic, the up spells average 60 s.
    let s = with_drops(spec(3), Duration::from_secs(60));
    let mut b = Bonded::new(s, &ctx(42, 0));
    let arrivals: Vec<(u64, u32)> = (0..360_000u64).map(|k| (k * 1_000 * MS, 40)).collect();
    let _ = drive(&mut b, &arrivals, Instant(360_000_000 * MS));
    let mut all = Vec::new();
    b.take_events(&mut all);
    struct Change {
        at: Instant,
        channel: u16,
        up: bool,
    }
    let events: Vec<Change> = all
        .iter()
        .map(|e| match e.note {
            Note::Channel { channel, up } => Change { at: e.at, channel, up },
            n => panic!("bonded reported {n:?}"),
        })
        .collect();
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
    let s = BondedSpec { redial: (Duration::from_secs(45), Duration::from_secs(45)), ..with_drops(spec(1), Duration(1_000)) };
    let mut b = Bonded::new(s, &ctx(3, 0));
    let (out, drops) = drive(&mut b, &[(0, 600), (0, 600), (10_000 * MS, 60)], Instant(20_000 * MS));
    assert!(out.is_empty());
    assert_eq!(drops.len(), 3);
    assert!(drops.iter().all(|d| d.reason == DropReason::Outage));
    assert!(b.channels_up() == 0);
}

fn channel_changes(b: &mut Bonded) -> Vec<(Instant, u16, bool)> {
    let mut all: Vec<StageEvent> = Vec::new();
    b.take_events(&mut all);
    all.iter()
        .map(|e| match e.note {
            Note::Channel { channel, up } => (e.at, channel, up),
            n => panic!("bonded reported {n:?}"),
        })
        .collect()
}

#[test]
fn both_directions_of_a_call_drop_and_come_back_together() {
    // A call carries both directions: the forward (stream 2) and return
    // (stream 3) link of hop 1 see the same drops and redials, whatever
    // traffic each carries; another hop (stream 0) sees other ones.
    let s = with_drops(spec(3), Duration::from_secs(60));
    let (mut fwd, mut ret, mut other) = (Bonded::new(s.clone(), &ctx(9, 2)), Bonded::new(s.clone(), &ctx(9, 3)), Bonded::new(s, &ctx(9, 0)));
    let until = Instant(36_000_000 * MS);
    let busy: Vec<(u64, u32)> = (0..36_000u64).map(|k| (k * 1_000 * MS, 200)).collect();
    let sparse: Vec<(u64, u32)> = (0..3_600u64).map(|k| (k * 10_000 * MS + 3 * MS, 40)).collect();
    drive(&mut fwd, &busy, until);
    drive(&mut ret, &sparse, until);
    drive(&mut other, &sparse, until);
    let (f, r, o) = (channel_changes(&mut fwd), channel_changes(&mut ret), channel_changes(&mut other));
    assert!(f.len() > 500, "{} changes in 10 hours", f.len());
    // Each side sees the changes up to its last event; compare what both saw.
    let n = f.len().min(r.len());
    assert!(n + 6 >= f.len().max(r.len()));
    let mut fs = f[..n].to_vec();
    let mut rs = r[..n].to_vec();
    fs.sort();
    rs.sort();
    assert_eq!(fs, rs, "the two directions of a call dropped apart");
    assert_ne!(f[..20.min(o.len())], o[..20.min(o.len())], "another hop dropped in step with this one");
}

#[test]
fn a_stationary_start_finds_calls_down_as_often_as_a_long_run_does() {
    // Drops every 277 s on average, redial 45–50 s: a call is down
    // 47.5 / (277 + 47.5) = 14.6 % of the time. Over 12 000 hops, the
    // share of calls down at the start lies in its 99 % interval.
    let s = BondedSpec { start: BondStart::Stationary, ..with_drops(spec(1), Duration::from_secs(277)) };
    let expect = 1.0 - s.availability(0);
    let n = 12_000u64;
    let down = (0..n).filter(|&h| Bonded::new(s.clone(), &ctx(5, 2 * h)).channels_up() == 0).count() as f64;
    let p = down / n as f64;
    let half = 2.576 * (expect * (1.0 - expect) / n as f64).sqrt();
    assert!((p - expect).abs() < half, "down at start {p:.4}, expected {expect:.4} ± {half:.4}");
    // "up" starts every call connected.
    let up = BondedSpec { start: BondStart::Up, ..s };
    assert!((0..200).all(|h| Bonded::new(up.clone(), &ctx(5, 2 * h)).channels_up() == 1));
}

#[test]
fn each_channel_keeps_its_own_delay() {
    // Seed 004's set: Iridium-to-Iridium calls (two satellite legs) beside
    // an Iridium-to-POTS call. Packets striped over them arrive after
    // their own channel's delay.
    let p = Profile::parse(
        r#"name = "t"
[link]
bonded = { rate = "2.4 kbit/s", delay = "600 ms", channels = [{ name = "Ir-Ir", delay = "1550 ms" }, { name = "Ir-POTS" }] }
"#,
        "t.toml",
        &[],
        &mut |_| Err("no files".into()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let s = p.up.bonded.clone().expect("a bonded stage");
    assert_eq!(s.channels.iter().map(|c| c.delay.0 / MS).collect::<Vec<_>>(), vec![1550, 600]);
    let said = &p.up.described["bonded"];
    assert!(said.contains("Ir-Ir: 1.55 s") || said.contains("Ir-Ir: 1550 ms"), "{said}");
    let mut b = Bonded::new(s, &ctx(1, 0));
    let (out, _) = drive(&mut b, &[(0, 60), (0, 60)], Instant(60_000 * MS));
    let due: std::collections::BTreeMap<u64, Instant> = out.iter().cloned().collect();
    // 200 ms on the line, then the channel's delay.
    assert_eq!(due[&0], Instant(1_750 * MS));
    assert_eq!(due[&1], Instant(800 * MS));
}

#[test]
fn a_bad_channel_is_named_with_what_is_allowed() {
    for (bad, says) in [
        (r#"channels = [{ delay = "1 s", drops = "2 min" }]"#, "channels[0]"),
        (r#"channels = [{ name = "a" }]"#, "delay"),
        (r#"channels = 0, delay = "1 s""#, "channels"),
        (r#"channels = 2, delay = "1 s", start = "down""#, "stationary"),
    ] {
        let text = format!("name = \"t\"\n[link]\nbonded = {{ rate = \"2.4 kbit/s\", {bad} }}\n");
        let e = Profile::parse(&text, "t.toml", &[], &mut |_| Err("no files".into())).err().unwrap_or_else(|| panic!("accepted {bad}")).to_string();
        assert!(e.contains("t.toml") && e.contains(says), "{bad}: {e}");
    }
}
