//! `aerolink bench parallel`: is a link still accurate while others run on
//! the same machine? For N = 0, 1, 2… saturated links (each its own lab:
//! an iperf3 cubic download over 100 Mbit/s with 50 ms each way) and one
//! delay probe (ping every 20 ms over a 300 ms link with no rate limit),
//! all at once: the probe's round trips against the configured RTT, and
//! each loaded link's goodput against one such link alone (N = 1 of the
//! same run). The largest N that meets every target is what the experiment
//! runner may safely run at once on this machine.
//!
//! Beside the probe, a plain thread of this process sleeps 1 ms at a time
//! and records how late each wake-up is ([`Watch`]): a probe maximum the
//! machine also shows with nothing of the emulator in the way is the
//! machine's, not the emulator's.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aerolink_link::Profile;
use aerolink_net::lab::netns_command;
use aerolink_net::{Lab, LabSpec};
use clap::Args;
use serde::Serialize;

use super::*;
use aerolink_net::run_id;

#[derive(Args, Debug)]
pub struct ParallelArgs {
    /// Seconds per step (each N).
    #[arg(long, default_value_t = 20, value_parser = step_seconds())]
    pub seconds: u32,
    /// The numbers of saturated links to run beside the probe.
    #[arg(long, value_delimiter = ',', value_name = "N,…", default_value = "0,1,2,3,4")]
    pub links: Vec<usize>,
    /// The N whose result decides the exit status (as the target
    /// states it for a 2-core machine: 3).
    #[arg(long, default_value_t = 3)]
    pub at: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Append the result as one JSON line to FILE.
    #[arg(long, default_value = "bench-results.jsonl", value_name = "FILE")]
    pub out: PathBuf,
}

/// The probe's configured round trip.
pub const PROBE_RTT_MS: f64 = 300.0;
/// How far the probe's mean may be above the configured RTT, ms.
pub const MEAN_TARGET_MS: f64 = 0.3;
/// How far its maximum may be above it, ms.
pub const MAX_TARGET_MS: f64 = 2.0;
/// How much of one link's goodput alone each loaded link must keep.
pub const GOODPUT_TARGET: f64 = 0.98;

#[derive(Serialize, Debug, Clone)]
pub struct ParallelStep {
    /// Saturated links beside the probe.
    pub links: usize,
    pub probe_replies: usize,
    pub probe_lost: usize,
    pub probe_mean_ms: f64,
    pub probe_min_ms: f64,
    pub probe_max_ms: f64,
    /// Goodput of each loaded link, Mbit/s.
    pub goodput_mbps: Vec<f64>,
    /// The worst loaded link's goodput over one link alone (N = 1).
    pub goodput_ratio: Option<f64>,
    /// CPU of every pump in this step (probe included), cores.
    pub pump_cores: f64,
    /// The worst departure-time error p99 of the loaded links' data
    /// direction, µs.
    pub lateness_us_p99: f64,
    /// The probe link's worst departure-time error, µs (what of the
    /// probe's excess the emulator itself caused).
    pub probe_lateness_us_max: f64,
    /// The machine's own worst pause while the probe ran: how late a plain
    /// thread's 1 ms sleep woke, at most, ms ([`Watch`]).
    pub machine_oversleep_ms_max: f64,
    /// How many of that thread's wake-ups were later than the probe's
    /// maximum target ([`MAX_TARGET_MS`]).
    pub machine_pauses_over_target: usize,
    /// Whether the probe and goodput targets hold.
    pub ok: bool,
    /// What missed, in words.
    pub missed: Vec<String>,
}

#[derive(Serialize, Debug)]
pub struct ParallelResult {
    pub bench: &'static str,
    pub version: &'static str,
    pub cpus: usize,
    pub unix_time: u64,
    pub seconds: u32,
    pub probe_rtt_ms: f64,
    pub steps: Vec<ParallelStep>,
    /// The largest N measured at which every target held (and at every
    /// smaller N measured).
    pub safe_links: Option<usize>,
    pub at: usize,
}

/// A client and a server joined by one link with `profile`, its random
/// choices drawn from `seed`.
pub(crate) fn lab(profile: Profile, seed: u64, pump: aerolink_net::lab::PumpMode) -> anyhow::Result<Lab> {
    Ok(Lab::build(&LabSpec { pump, ..LabSpec::one_link(run_id(), profile, seed) }, None)?)
}

/// What ping reported: its summary (µs precision; the per-reply lines
/// round to whole ms past 100 ms).
pub(crate) struct Probed {
    pub sent: usize,
    pub received: usize,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
}

/// Ping every 20 ms for `seconds` from the probe lab's client.
fn ping(lab: &Lab, seconds: u32) -> anyhow::Result<Probed> {
    let count = (seconds as f64 / 0.02) as usize;
    let (c, ip) = (lab.hosts[0].netns.clone(), lab.hosts[1].ipv4.clone());
    // The link is up once one ping gets through; the probe counts from then.
    let warm = netns_command(&c, &["ping", "-n", "-q", "-c", "1", "-w", "5", &ip], &lab.env()).stdout(Stdio::null()).stderr(Stdio::null()).status()?;
    if !warm.success() {
        bail!("ping over the probe link got no reply in 5 s");
    }
    let n = count.to_string();
    let child = netns_command(&c, &["ping", "-n", "-i", "0.02", "-c", &n, &ip], &lab.env()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
    let out = wait_interruptibly(child)?;
    parse_ping(&String::from_utf8_lossy(&out.stdout)).ok_or_else(|| anyhow::anyhow!("ping over the probe link printed no summary (no reply?)"))
}

/// `N packets transmitted, M received, …` and `rtt min/avg/max/mdev = a/b/c/d ms`.
pub(crate) fn parse_ping(text: &str) -> Option<Probed> {
    let counts = text.lines().find(|l| l.contains("packets transmitted"))?;
    let mut words = counts.split(", ");
    let sent = words.next()?.split_whitespace().next()?.parse().ok()?;
    let received = words.next()?.split_whitespace().next()?.parse().ok()?;
    let rtt = text.lines().find(|l| l.contains("min/avg/max"))?;
    let v: Vec<f64> = rtt.split(" = ").nth(1)?.split_whitespace().next()?.split('/').filter_map(|x| x.parse().ok()).collect();
    (v.len() >= 3).then(|| Probed { sent, received, min_ms: v[0], mean_ms: v[1], max_ms: v[2] })
}

/// How long the watching thread sleeps at a time.
const WATCH_SLEEP: Duration = Duration::from_millis(1);

/// What the watching thread saw: its worst oversleep and how many were
/// over the probe's maximum target.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Pauses {
    max_ms: f64,
    over_target: usize,
}

impl Pauses {
    /// One wake-up `over` later than asked.
    fn record(&mut self, over: Duration) {
        let ms = over.as_secs_f64() * 1e3;
        self.max_ms = self.max_ms.max(ms);
        if ms > MAX_TARGET_MS {
            self.over_target += 1;
        }
    }
}

/// A thread that sleeps [`WATCH_SLEEP`] at a time until stopped and
/// records how late each wake-up was: the pauses any thread of this
/// machine sees, emulator or not (about a thousand wake-ups a second, a
/// few hundredths of a core). It sends nothing anywhere.
struct Watch {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Pauses>,
}

impl Watch {
    fn start() -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || watch(&flag, Instant::now, std::thread::sleep));
        Watch { stop, thread }
    }
    fn finish(self) -> Pauses {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// The watching loop, over any clock and sleep (a test gives it a clock
/// that pauses).
fn watch(stop: &AtomicBool, now: impl Fn() -> Instant, sleep: impl Fn(Duration)) -> Pauses {
    let mut pauses = Pauses::default();
    while !stop.load(Ordering::Relaxed) {
        let t0 = now();
        sleep(WATCH_SLEEP);
        pauses.record(now().saturating_duration_since(t0).saturating_sub(WATCH_SLEEP));
    }
    pauses
}

fn step(n: usize, seconds: u32, alone: Option<f64>) -> anyhow::Result<ParallelStep> {
    let load = &mut |_: &str| Err::<String, String>("no files".into());
    let probe = lab(Profile::from_overrides(&flags(&[("delay", "150 ms")]), load)?, 1, Default::default())?;
    let mut loaded = Vec::new();
    for _ in 0..n {
        loaded.push(lab(Profile::from_overrides(&flags(&[("rate", "100 Mbit/s"), ("delay", "50 ms")]), load)?, 1, Default::default())?);
    }
    // Every transfer and the probe at once; the transfers run a little
    // longer than the probe so it sees only the loaded part.
    let transfers: Vec<_> = loaded
        .iter()
        .map(|l| {
            let (s, c, ip, env) = (l.hosts[1].netns.clone(), l.hosts[0].netns.clone(), l.hosts[1].ipv4.clone(), l.env());
            std::thread::spawn(move || iperf(&s, &c, &ip, &env, seconds + 3, true))
        })
        .collect();
    if n > 0 {
        // Let the transfers leave slow start before the probe counts.
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    let watching = Watch::start();
    let probed = ping(&probe, seconds);
    let machine = watching.finish();
    let mut goodput = Vec::new();
    let mut failed = None;
    for t in transfers {
        match t.join().map_err(|_| anyhow::anyhow!("iperf3 thread panicked")).and_then(|r| r) {
            Ok(bps) => goodput.push(bps / 1e6),
            Err(e) => failed = Some(e),
        }
    }
    let probe_rep = probe.shutdown();
    let probe_lateness_us_max = probe_rep.directions.iter().map(|d| d.lateness_us_max).fold(0.0, f64::max);
    let mut reports = vec![probe_rep];
    let mut lateness: f64 = 0.0;
    for l in loaded {
        let r = l.shutdown();
        lateness = r.directions.iter().filter(|d| d.dir == Some(aerolink_net::log::Dir::Down)).map(|d| d.lateness_us_p99).fold(lateness, f64::max);
        reports.push(r);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let p = probed?;
    let (mean, min, max, lost) = (p.mean_ms, p.min_ms, p.max_ms, p.sent.saturating_sub(p.received));
    let pump_cpu: f64 = reports.iter().flat_map(|r| r.directions.iter()).map(|d| d.cpu_s).sum();
    let worst = goodput.iter().copied().fold(f64::INFINITY, f64::min);
    let goodput_ratio = alone.filter(|_| n > 0).map(|a| worst / a);
    let mut missed = Vec::new();
    if mean - PROBE_RTT_MS > MEAN_TARGET_MS {
        missed.push(format!("probe mean {:.3} ms is {:.3} ms over {PROBE_RTT_MS} ms (target ≤ {MEAN_TARGET_MS})", mean, mean - PROBE_RTT_MS));
    }
    if max - PROBE_RTT_MS > MAX_TARGET_MS {
        missed.push(format!("probe max {:.3} ms is {:.3} ms over (target ≤ {MAX_TARGET_MS})", max, max - PROBE_RTT_MS));
    }
    if min < PROBE_RTT_MS {
        missed.push(format!("probe min {min:.3} ms is below the configured {PROBE_RTT_MS} ms"));
    }
    if lost > 0 {
        missed.push(format!("probe lost {lost} of {} requests", p.sent));
    }
    if let Some(r) = goodput_ratio.filter(|r| *r < GOODPUT_TARGET) {
        missed.push(format!("a loaded link kept {:.1} % of one link's goodput alone (target ≥ {:.0} %)", r * 100.0, GOODPUT_TARGET * 100.0));
    }
    Ok(ParallelStep {
        links: n,
        probe_replies: p.received,
        probe_lost: lost,
        probe_mean_ms: mean,
        probe_min_ms: min,
        probe_max_ms: max,
        goodput_mbps: goodput,
        goodput_ratio,
        pump_cores: pump_cpu / (seconds + 3) as f64,
        lateness_us_p99: lateness,
        probe_lateness_us_max,
        machine_oversleep_ms_max: machine.max_ms,
        machine_pauses_over_target: machine.over_target,
        ok: missed.is_empty(),
        missed,
    })
}

pub fn run(a: ParallelArgs) -> anyhow::Result<i32> {
    need("iperf3")?;
    need("ping")?;
    aerolink_net::sys::check_preconditions()?;
    if a.seconds < 5 {
        return Err(user("--seconds: expected at least 5 (the probe needs a few hundred round trips)"));
    }
    if a.links.iter().any(|n| *n > 16) {
        return Err(user("--links: expected numbers from 0 to 16"));
    }
    let mut order = a.links.clone();
    order.sort_unstable();
    order.dedup();
    // One link alone is the goodput reference: measure it first.
    let alone = if order.iter().any(|n| *n > 0) {
        eprintln!("[ref] one saturated link alone ({} s)…", a.seconds + 3);
        let s = step(1, a.seconds, None)?;
        Some(s.goodput_mbps[0])
    } else {
        None
    };
    let mut steps = Vec::new();
    for (i, n) in order.iter().enumerate() {
        eprintln!("[{}/{}] {n} saturated link{} and the probe ({} s)…", i + 1, order.len(), if *n == 1 { "" } else { "s" }, a.seconds + 3);
        let s = step(*n, a.seconds, alone)?;
        if !a.json {
            println!(
                "  N={n}: probe mean {:.3} ms (+{:.3}), min {:.3}, max {:.3} (+{:.3}; its link's own worst lateness {:.0} µs; the machine: a 1 ms sleep woke up to {:.1} ms late, {} times over {MAX_TARGET_MS} ms); goodput {} Mbit/s{}; pumps {:.2} cores; p99 error {:.0} µs{}",
                s.probe_mean_ms,
                s.probe_mean_ms - PROBE_RTT_MS,
                s.probe_min_ms,
                s.probe_max_ms,
                s.probe_max_ms - PROBE_RTT_MS,
                s.probe_lateness_us_max,
                s.machine_oversleep_ms_max,
                s.machine_pauses_over_target,
                if s.goodput_mbps.is_empty() { "-".to_string() } else { s.goodput_mbps.iter().map(|g| format!("{g:.1}")).collect::<Vec<_>>().join("/") },
                s.goodput_ratio.map(|r| format!(" ({:.1} % of alone)", r * 100.0)).unwrap_or_default(),
                s.pump_cores,
                s.lateness_us_p99,
                if s.ok { String::new() } else { format!("  MISSED: {}", s.missed.join("; ")) }
            );
        }
        steps.push(s);
    }
    let safe_links = steps.iter().take_while(|s| s.ok).last().map(|s| s.links);
    let r = ParallelResult {
        bench: "parallel",
        version: env!("CARGO_PKG_VERSION"),
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        unix_time: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        seconds: a.seconds,
        probe_rtt_ms: PROBE_RTT_MS,
        steps,
        safe_links,
        at: a.at,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "targets: probe mean ≤ +{MEAN_TARGET_MS} ms, max ≤ +{MAX_TARGET_MS} ms, never below {PROBE_RTT_MS} ms; each loaded link ≥ {:.0} % of one alone. Safe here: {}",
            GOODPUT_TARGET * 100.0,
            r.safe_links.map(|n| format!("{n} saturated links beside the probe")).unwrap_or("none".into())
        );
    }
    append_result(&a.out, &r)?;
    let at_ok = r.steps.iter().find(|s| s.links == a.at).map(|s| s.ok).unwrap_or(true);
    Ok(if at_ok { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_summaries_parse() {
        let text = "PING 198.18.0.2 (198.18.0.2) 56(84) bytes of data.\n\n--- 198.18.0.2 ping statistics ---\n750 packets transmitted, 748 received, 0.266667% packet loss, time 16921ms\nrtt min/avg/max/mdev = 300.021/300.158/301.877/0.119 ms, pipe 14\n";
        let p = parse_ping(text).expect("parses");
        assert_eq!((p.sent, p.received), (750, 748));
        assert_eq!((p.min_ms, p.mean_ms, p.max_ms), (300.021, 300.158, 301.877));
        assert!(parse_ping("ping: connect: Network is unreachable\n").is_none());
    }

    /// The watcher's accounting, on a clock that pauses: the machine's
    /// pauses are measured against the sleep asked for, never counting the
    /// sleep itself. A simulated clock (a real pause cannot be ordered).
    #[test]
    fn the_watcher_reports_the_longest_pause_and_counts_those_over_the_target() {
        let start = Instant::now();
        let t = std::cell::Cell::new(start);
        let sleeps = std::cell::Cell::new(0u32);
        let stop = AtomicBool::new(false);
        // Four sleeps: on time, 0.5 ms late, 5 ms late, 2.5 ms late; then stop.
        let late_us = [0u64, 500, 5_000, 2_500];
        let p = watch(
            &stop,
            || t.get(),
            |d| {
                let i = sleeps.get() as usize;
                t.set(t.get() + d + Duration::from_micros(late_us[i]));
                sleeps.set(sleeps.get() + 1);
                if i + 1 == late_us.len() {
                    stop.store(true, Ordering::Relaxed);
                }
            },
        );
        assert_eq!(sleeps.get(), 4);
        assert!((p.max_ms - 5.0).abs() < 1e-9, "{p:?}");
        assert_eq!(p.over_target, 2, "5 ms and 2.5 ms are over the 2 ms target: {p:?}");
    }
}
