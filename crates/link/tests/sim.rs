//! The link models driven in simulated time: the clock jumps from one
//! wake-up to the next, so departure times are checked exactly and random
//! processes are checked against their formulas with confidence intervals.

mod common;
use common::binomial_ci;

use aerolink_link::packet::DropReason;
use aerolink_link::profile::{Override, Profile};
use aerolink_link::{Duration, Instant, Pipeline};

fn profile(toml: &str) -> Profile {
    Profile::parse(toml, "test.toml", &[], &mut |p| match p {
        "two.trace" => Ok("1\n2\n".into()),
        "delay.trace" => Ok("0 10\n1000 30\n2000 10\n".into()),
        "loss.trace" => Ok("0%\n50%\n".into()),
        _ => Err("no such file".into()),
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Feeds `(arrival, len)` packets and runs the clock to the end. Returns
/// departures `(id, due)` and drops `(id, reason)`.
type Departures = Vec<(u64, Instant)>;
type Drops = Vec<(u64, DropReason)>;

fn drive(p: &mut Pipeline<()>, arrivals: &[(u64, u32)]) -> (Departures, Drops) {
    let (out, drops) = common::drive(p, arrivals);
    (out.iter().map(|m| (m.id, m.due)).collect(), drops.iter().map(|d| (d.meta.id, d.reason)).collect())
}

const MS: u64 = 1_000_000;

#[test]
fn rate_and_delay_give_exact_departure_times() {
    // 1 Mbit/s: a 1250-byte packet takes exactly 10 ms; plus 25 ms delay.
    let prof = profile("[link]\nrate = \"1 Mbit/s\"\ndelay = \"25 ms\"\nqueue = \"100 packets\"\n");
    let mut p = Pipeline::new(&prof.down, prof.base_rtt(), 1, 0);
    let (out, drops) = drive(&mut p, &[(0, 1250), (0, 1250), (0, 1250), (100 * MS, 125)]);
    assert!(drops.is_empty());
    assert_eq!(out, vec![(0, Instant(35 * MS)), (1, Instant(45 * MS)), (2, Instant(55 * MS)), (3, Instant(126 * MS))]);
}

#[test]
fn overhead_is_charged_per_packet() {
    let prof = profile("[link]\nrate = \"1 Mbit/s\"\noverhead = \"250 B\"\n");
    let mut p = Pipeline::new(&prof.up, prof.base_rtt(), 1, 0);
    let (out, _) = drive(&mut p, &[(0, 1000), (0, 1000)]);
    assert_eq!(out, vec![(0, Instant(10 * MS)), (1, Instant(20 * MS))]);
}

#[test]
fn a_late_wakeup_does_not_slow_the_link() {
    // Logical timestamps: dequeue called late still stamps the computed
    // times, and the next packet starts when the previous one ended.
    let prof = profile("[link]\nrate = \"1 Mbit/s\"\n");
    let mut p: Pipeline<()> = Pipeline::new(&prof.up, prof.base_rtt(), 1, 0);
    p.enqueue(Instant(0), 1250, ());
    p.enqueue(Instant(0), 1250, ());
    let late = Instant(25 * MS);
    let a = p.dequeue(late).unwrap();
    let b = p.dequeue(late).unwrap();
    assert_eq!((a.meta.due, b.meta.due), (Instant(10 * MS), Instant(20 * MS)));
}

#[test]
fn mahimahi_trace_and_delay_trace_drive_departures() {
    let prof = profile("[link]\nrate = { trace = \"two.trace\" }\ndelay = { trace = \"delay.trace\" }\n");
    let mut p = Pipeline::new(&prof.up, prof.base_rtt(), 1, 0);
    // Opportunities every 1 ms; the delay rises linearly from 10 ms at 0 to
    // 30 ms at 1 s, sampled when the last bit is sent.
    let (out, _) = drive(&mut p, &[(0, 1500), (0, 1500), (500 * MS, 1500)]);
    assert_eq!(out[0], (0, Instant(MS + 10_020_000)));
    assert_eq!(out[1], (1, Instant(2 * MS + 10_040_000)));
    assert_eq!(out[2].1, Instant(501 * MS + 20_020_000));
}

#[test]
fn queue_drops_are_counted_apart_from_loss() {
    let prof = profile("[link]\nrate = \"1 Mbit/s\"\nqueue = \"10 packets\"\n");
    let mut p = Pipeline::new(&prof.up, prof.base_rtt(), 1, 0);
    let burst: Vec<(u64, u32)> = (0..100).map(|_| (0, 1000)).collect();
    let (out, drops) = drive(&mut p, &burst);
    assert_eq!(out.len(), 10);
    assert_eq!(drops.len(), 90);
    assert!(drops.iter().all(|d| d.1 == DropReason::Queue));
}

#[test]
fn bdp_queue_defaults_to_rate_times_rtt() {
    let prof = profile("[link]\nrate = \"2 Mbit/s\"\nrtt = \"100 ms\"\n");
    assert_eq!(prof.up.queue_limit(prof.base_rtt()), aerolink_link::queue::QueueLimit::Bytes(25_000));
}

#[test]
fn bdp_queue_on_a_short_path_is_sized_for_20_ms() {
    // `--rtt 0ms` at 100 Mbit/s: 100e6 × 0.020 / 8, not the 15 000 B floor
    // (TCP's initial window of ten packets).
    let prof = profile("[link]\nrate = \"100 Mbit/s\"\nrtt = \"0 ms\"\n");
    assert_eq!(prof.up.queue_limit(prof.base_rtt()), aerolink_link::queue::QueueLimit::Bytes(250_000));
    let slow = profile("[link]\nrate = \"1 Mbit/s\"\nrtt = \"0 ms\"\n");
    assert_eq!(slow.up.queue_limit(slow.base_rtt()), aerolink_link::queue::QueueLimit::Bytes(15_000));
}

#[test]
fn hold_outage_releases_at_the_end_and_drop_outage_drops() {
    let prof = profile(
        "[link]\nrate = \"1 Mbit/s\"\nqueue = \"1000 packets\"\noutages = [{ start = \"100 ms\", duration = \"1 s\", mode = \"hold\" }, { start = \"2 s\", duration = \"1 s\", mode = \"drop\" }]\n",
    );
    let mut p = Pipeline::new(&prof.up, prof.base_rtt(), 1, 0);
    let (out, drops) = drive(&mut p, &[(200 * MS, 1250), (300 * MS, 1250), (2500 * MS, 1250), (3100 * MS, 1250)]);
    assert_eq!(out, vec![(0, Instant(1110 * MS)), (1, Instant(1120 * MS)), (3, Instant(3110 * MS))]);
    assert_eq!(drops, vec![(2, DropReason::Outage)]);
}

#[test]
fn jitter_preserves_order_unless_reordering_is_asked_for() {
    let arrivals: Vec<(u64, u32)> = (0..2000).map(|i| (i * MS / 10, 100)).collect();
    let fifo = profile("[link]\ndelay = \"50 ms\"\njitter = \"normal 5 ms\"\n");
    let mut p = Pipeline::new(&fifo.up, fifo.base_rtt(), 7, 0);
    let (out, _) = drive(&mut p, &arrivals);
    assert!(out.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));

    let re = profile("[link]\ndelay = \"50 ms\"\njitter = \"normal 5 ms\"\nreorder = true\n");
    let mut p = Pipeline::new(&re.up, re.base_rtt(), 7, 0);
    let (out, _) = drive(&mut p, &arrivals);
    let reordered = out.windows(2).filter(|w| w[0].0 > w[1].0).count();
    assert!(reordered > 100, "only {reordered} reorderings");
    // Mean one-way delay stays at the base delay (99.9 % interval of the mean).
    let mean: f64 = out.iter().map(|(id, due)| (due.0 - arrivals[*id as usize].0) as f64).sum::<f64>() / out.len() as f64;
    let half_width = 3.3 * 5e6 / (out.len() as f64).sqrt();
    assert!((mean - 50e6).abs() < half_width, "mean delay {mean} ns");
}

/// Which of `n` 100-byte packets, one a millisecond, the profile's up
/// direction loses.
fn losses(prof: &Profile, seed: u64, n: usize) -> Vec<bool> {
    let mut p = Pipeline::new(&prof.up, prof.base_rtt(), seed, 0);
    let arrivals: Vec<(u64, u32)> = (0..n as u64).map(|i| (i * MS, 100)).collect();
    let (_, drops) = drive(&mut p, &arrivals);
    let mut lost = vec![false; n];
    for (id, r) in drops {
        assert_eq!(r, DropReason::Loss);
        lost[id as usize] = true;
    }
    lost
}

#[test]
fn bernoulli_loss_rate_is_inside_its_binomial_interval() {
    let prof = profile("[link]\nloss = \"3%\"\n");
    let n = 100_000;
    let k = losses(&prof, 42, n).iter().filter(|l| **l).count();
    let (lo, hi) = binomial_ci(k, n, 2.576);
    assert!(lo <= 0.03 && 0.03 <= hi, "{k}/{n} lost: 99% interval [{lo}, {hi}] misses 3%");
}

#[test]
fn gilbert_elliott_matches_steady_state_and_burst_length() {
    // p = 1 %, r = 25 %: P(bad) = 0.01 / 0.26, loss = that (1-h = 1, 1-k = 0),
    // mean burst = 1 / r = 4 packets.
    let prof = profile("[link]\nloss = { model = \"gilbert-elliott\", p = \"1%\", r = \"25%\" }\n");
    let expect_loss = 0.01 / 0.26;
    // Independent replications give an honest interval despite correlation
    // within a run.
    let (mut rates, mut bursts) = (Vec::new(), Vec::new());
    for seed in 0..60 {
        let l = losses(&prof, seed, 20_000);
        rates.push(l.iter().filter(|x| **x).count() as f64 / l.len() as f64);
        let mut runs = Vec::new();
        let mut cur = 0;
        for x in &l {
            if *x {
                cur += 1;
            } else if cur > 0 {
                runs.push(cur as f64);
                cur = 0;
            }
        }
        bursts.push(runs.iter().sum::<f64>() / runs.len() as f64);
    }
    let ci = |xs: &[f64]| {
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        let sd = (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        (m, 3.3 * sd / n.sqrt())
    };
    let (m, h) = ci(&rates);
    assert!((m - expect_loss).abs() < h, "loss {m} ± {h}, expected {expect_loss}");
    let (b, hb) = ci(&bursts);
    assert!((b - 4.0).abs() < hb, "burst {b} ± {hb}, expected 4");
}

#[test]
fn loss_trace_follows_its_windows() {
    let prof = profile("[link]\nloss = { trace = \"loss.trace\", window = \"1 s\" }\n");
    let l = losses(&prof, 3, 4000);
    // Windows alternate 0 % and 50 % every 1000 packets (1 ms apart).
    let lost_in = |w: usize| l[w * 1000..(w + 1) * 1000].iter().filter(|x| **x).count();
    assert_eq!(lost_in(0) + lost_in(2), 0);
    for w in [1, 3] {
        let (lo, hi) = binomial_ci(lost_in(w), 1000, 2.576);
        assert!(lo <= 0.5 && 0.5 <= hi);
    }
}

#[test]
fn the_same_seed_gives_the_same_decisions() {
    let prof = profile("[link]\nloss = \"10%\"\ndelay = \"10 ms\"\njitter = \"uniform 3 ms\"\n");
    let run = |seed| {
        let mut p = Pipeline::new(&prof.up, prof.base_rtt(), seed, 0);
        let arrivals: Vec<(u64, u32)> = (0..5000).map(|i| (i * MS, 100)).collect();
        drive(&mut p, &arrivals)
    };
    assert_eq!(run(9), run(9));
    assert_ne!(run(9), run(10));
    // Directions draw from separate streams.
    let mut a = Pipeline::<()>::new(&prof.up, prof.base_rtt(), 9, 0);
    let mut b = Pipeline::<()>::new(&prof.up, prof.base_rtt(), 9, 1);
    let arrivals: Vec<(u64, u32)> = (0..5000).map(|i| (i * MS, 100)).collect();
    assert_ne!(drive(&mut a, &arrivals), drive(&mut b, &arrivals));
}

#[test]
fn overrides_beat_the_file_and_one_direction_beats_both() {
    let o = |scope: &str, key: &str, value: &str, flag: &str| Override { scope: scope.into(), key: key.into(), value: value.into(), flag: flag.into() };
    let text = "[link]\nrate = \"1 Mbit/s\"\nrtt = \"100 ms\"\n";
    let p = Profile::parse(text, "x.toml", &[o("down", "rate", "5 Mbit/s", "--down-rate"), o("link", "rate", "2 Mbit/s", "--rate"), o("link", "rtt", "300 ms", "--rtt")], &mut |_| Err(String::new()))
        .unwrap();
    assert_eq!(p.up.capacity_bps(), Some(2e6));
    assert_eq!(p.down.capacity_bps(), Some(5e6));
    assert_eq!(p.base_rtt(), Duration::from_millis(300));
}

#[test]
fn bad_values_name_the_origin_key_and_what_is_allowed() {
    let err = |text: &str| Profile::parse(text, "bad.toml", &[], &mut |_| Err("missing".into())).unwrap_err();
    let e = err("[down]\nrate = \"fast\"\n");
    assert_eq!((e.origin.as_str(), e.key.as_str()), ("bad.toml", "down.rate"));
    assert!(e.message.contains("Mbit/s"), "{e}");
    let e = err("[link]\nloss = \"150%\"\n");
    assert_eq!(e.key, "link.loss");
    let e = err("[up]\nspeed = \"1 Mbit/s\"\n");
    assert!(e.message.contains("allowed"), "{e}");
    let e = err("[up]\nrtt = \"100 ms\"\n");
    assert_eq!(e.key, "up.rtt");
    let e = err("[link]\nrate = { trace = \"nope.trace\" }\n");
    assert!(e.message.contains("nope.trace"), "{e}");
    let e = err("rate = ");
    assert_eq!(e.key, "line 1, column 8");
    assert!(e.message.starts_with("TOML syntax error") && !e.message.contains('\n'), "{e}");
    let flag = Profile::from_overrides(&[Override { scope: "up".into(), key: "loss".into(), value: "lots".into(), flag: "--up-loss".into() }], &mut |_| Err(String::new())).unwrap_err();
    assert_eq!((flag.origin.as_str(), flag.key.as_str()), ("command line", "--up-loss"));
}

#[test]
fn a_link_mtu_is_read_per_direction_and_checked() {
    let p = profile("[link]\nrate = \"10 Mbit/s\"\nmtu = 9000\n[up]\nmtu = \"1400 B\"\n");
    assert_eq!((p.up.mtu(), p.down.mtu()), (1400, 9000));
    assert_eq!(p.down.described.get("mtu").map(String::as_str), Some("9000 B"));
    // The default queue's floor is ten full-size packets of the direction:
    // a first flight of ten jumbo segments fits.
    let short = aerolink_link::Duration::from_millis(0);
    assert_eq!(p.down.queue_limit(short), aerolink_link::queue::QueueLimit::Bytes(90_000));
    assert_eq!(p.up.queue_limit(short), aerolink_link::queue::QueueLimit::Bytes(25_000));
    // No key: Ethernet's, and the profile's description (its run keys)
    // has no `mtu` line, as before the key existed.
    let plain = profile("[link]\nrate = \"10 Mbit/s\"\n");
    assert_eq!(plain.up.mtu(), aerolink_link::profile::DEFAULT_MTU);
    assert!(!plain.canonical().contains("mtu"), "{}", plain.canonical());
    let err = |text: &str| Profile::parse(text, "bad.toml", &[], &mut |_| Err("missing".into())).unwrap_err();
    for bad in ["mtu = 576", "mtu = 70000", "mtu = \"10 packets\"", "mtu = -1", "mtu = 1500.5"] {
        let e = err(&format!("[link]\n{bad}\n"));
        assert_eq!(e.key, "link.mtu", "{bad}");
        assert!(e.message.contains("1280") && e.message.contains("65535"), "{bad}: {e}");
    }
}
