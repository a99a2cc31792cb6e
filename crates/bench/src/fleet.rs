//! `aerolink bench fleet`: what one host's emulator does with many links
//! at once. For each N in `--terminals`, N terminals, each its own lab (a
//! client and a server namespace joined by one link: `--rate`, `--rtt`),
//! all carrying a light real load at the same time — a TCP download
//! (iperf3, cubic) through its own link, or a ping a second — and one
//! delay probe beside them (ping every 100 ms over a link of the same RTT
//! and no rate limit). It reports, per N:
//! - set-up and tear-down per terminal (labs built and removed one after
//!   another, as the experiment runner does);
//! - the pumps' CPU per link (cores) and per packet forwarded (µs);
//! - the departure-time error of the loaded direction (ground → aircraft
//!   for downloads, both for pings): the median link's p50, the worst
//!   link's p99 and the maximum (each link's pump keeps its own histogram);
//! - the download goodputs' fairness (Jain's index) and their mean against
//!   the link's rate; the terminals' ping means against the round trip
//!   their link gives a ping (the RTT and the ping's serialisation at the
//!   rate, both ways: [`ping_link_rtt_ms`]); the probe's mean and maximum.
//!
//! Each N runs once per `--pump`: a thread per link (each sleeping for its
//! own departures), and the shared loops (one per core, each driving many
//! links: [`aerolink_net::pump::shared`]), side by side in one run. The
//! targets on a 2-core machine: 100 terminals downloading at 2 Mbit/s with
//! departure p99 ≤ 1 ms and Jain ≥ 0.95; 1000 terminals pinging with the
//! mean within 0.5 ms of its link's round trip; set-up ≤ 50 ms per
//! terminal.

use std::process::Stdio;
use std::time::Instant;

use super::parallel::lab;
use aerolink_link::units::Rate;
use aerolink_link::Profile;
use aerolink_net::lab::{netns_command, PumpMode};
use aerolink_net::log::Dir;
use aerolink_net::{Lab, LabReport};
use clap::{Args, ValueEnum};
use serde::Serialize;

use super::*;

/// What each terminal of the fleet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Load {
    /// A TCP download (iperf3, cubic) through the terminal's own link, for
    /// the whole step.
    Download,
    /// One ping a second.
    Ping,
}

#[derive(Args, Debug)]
pub struct FleetArgs {
    /// The numbers of terminals to run, one step each (1 to 1000).
    #[arg(long, value_delimiter = ',', value_name = "N,…", default_value = "1,10,100")]
    pub terminals: Vec<usize>,
    /// What each terminal carries.
    #[arg(long, value_enum, default_value_t = Load::Download)]
    pub load: Load,
    /// Who drives the links, one step each per N: `thread` (a thread per
    /// link), `shared` (one loop per core for all of them).
    #[arg(long, value_delimiter = ',', value_name = "PUMP,…", default_value = "thread,shared")]
    pub pump: Vec<PumpMode>,
    /// Each terminal's link rate, both ways (a download's share).
    #[arg(long, default_value = "2Mbit/s", value_parser = rate_arg)]
    pub rate: Rate,
    /// Each terminal's round trip (half of it each way), e.g. "50ms".
    #[arg(long, default_value = "50ms", value_parser = duration_arg)]
    pub rtt: aerolink_link::Duration,
    /// Seconds of load per step.
    #[arg(long, default_value_t = 20, value_parser = step_seconds())]
    pub seconds: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Append the result as one JSON line to FILE.
    #[arg(long, default_value = "bench-results.jsonl", value_name = "FILE")]
    pub out: std::path::PathBuf,
}

/// The targets on a 2-core machine.
pub const SETUP_TARGET_MS: f64 = 50.0;
pub const LATENESS_P99_TARGET_US: f64 = 1000.0;
pub const JAIN_TARGET: f64 = 0.95;
pub const PING_MEAN_TARGET_MS: f64 = 0.5;
/// The ping's IPv4 packet: header, ICMP header and `-s 56` bytes of data
/// (ping's default, given explicitly).
pub const PING_PACKET_BYTES: u32 = 20 + 8 + PING_DATA_BYTES;
const PING_DATA_BYTES: u32 = 56;
/// The most terminals a step may ask for.
pub const MAX_TERMINALS: usize = 1000;

#[derive(Serialize, Debug)]
pub struct FleetStep {
    pub terminals: usize,
    pub pump: PumpMode,
    /// Building the N labs, one after another, per terminal (ms).
    pub setup_ms_per_terminal: f64,
    /// Removing them, per terminal (ms).
    pub teardown_ms_per_terminal: f64,
    /// Pump threads running: one per link (the probe's included), or the
    /// shared loops.
    pub pump_threads: usize,
    /// Every terminal pump's CPU over the step, per link (cores).
    pub pump_cores_per_link: f64,
    /// The same per packet forwarded, both directions (µs).
    pub pump_us_per_packet: f64,
    pub packets: u64,
    /// Departure-time error of the loaded direction(s): the median link's
    /// p50, the worst link's p99, the maximum (µs).
    pub lateness_us_p50: f64,
    pub lateness_us_p99: f64,
    pub lateness_us_max: f64,
    /// Downloads: each terminal's goodput (Mbit/s), their Jain index and
    /// their mean over the link's rate.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub goodput_mbps: Vec<f64>,
    pub jain: Option<f64>,
    pub goodput_of_rate: Option<f64>,
    /// Pings: the terminals' mean round trip over all of them, the worst
    /// terminal's mean, and replies lost (ms); the round trip their link
    /// gives a ping (the RTT and its serialisation both ways), which the
    /// mean is judged against.
    pub ping_mean_ms: Option<f64>,
    pub ping_link_rtt_ms: Option<f64>,
    pub ping_worst_mean_ms: Option<f64>,
    pub ping_lost: Option<usize>,
    /// The probe beside the fleet (ms).
    pub probe_mean_ms: f64,
    pub probe_max_ms: f64,
    pub ok: bool,
    pub missed: Vec<String>,
}

#[derive(Serialize, Debug)]
pub struct FleetResult {
    pub bench: &'static str,
    pub version: &'static str,
    pub cpus: usize,
    pub unix_time: u64,
    pub load: Load,
    pub rate_bps: u64,
    pub rtt_ms: f64,
    pub seconds: u32,
    pub steps: Vec<FleetStep>,
}

/// Jain's fairness index of `x`: (Σx)² / (n Σx²); 1 when all are equal,
/// 1/n when one takes everything.
pub fn jain(x: &[f64]) -> Option<f64> {
    let sq: f64 = x.iter().map(|v| v * v).sum();
    (!x.is_empty() && sq > 0.0).then(|| x.iter().sum::<f64>().powi(2) / (x.len() as f64 * sq))
}

fn profile(pairs: &[(&str, &str)]) -> anyhow::Result<Profile> {
    let load = &mut |_: &str| Err::<String, String>("no files".into());
    Ok(Profile::from_overrides(&flags(pairs), load)?)
}

/// Starts `ping` from a lab's client to its server: every `interval`
/// seconds, `count` times, summary only.
fn start_ping(lab: &Lab, interval: &str, count: usize) -> anyhow::Result<std::process::Child> {
    let n = count.to_string();
    let size = PING_DATA_BYTES.to_string();
    let argv = ["ping", "-n", "-q", "-s", &size, "-i", interval, "-c", &n, &lab.hosts[1].ipv4];
    Ok(netns_command(&lab.hosts[0].netns, &argv, &lab.env()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?)
}

/// Waits for every `ping` started (in order; they end together), then
/// parses each summary.
fn finish_pings(children: Vec<std::process::Child>) -> anyhow::Result<Vec<parallel::Probed>> {
    let mut out = Vec::new();
    for c in children {
        let o = wait_interruptibly(c)?;
        out.push(parallel::parse_ping(&String::from_utf8_lossy(&o.stdout)).ok_or_else(|| anyhow::anyhow!("a terminal's ping printed no summary (no reply?)"))?);
    }
    Ok(out)
}

fn step(a: &FleetArgs, n: usize, pump: PumpMode) -> anyhow::Result<FleetStep> {
    let half = format!("{} us", a.rtt.0 / 2_000);
    let rate = format!("{} bit/s", a.rate.bits_per_sec.round());
    let rtt_ms = a.rtt.as_secs_f64() * 1e3;
    let terminal = profile(&[("rate", &rate), ("delay", &half)])?;
    let probe = lab(profile(&[("delay", &half)])?, 0, pump)?;
    let mut labs = Vec::with_capacity(n);
    let t0 = Instant::now();
    for i in 0..n {
        if interrupted() {
            return Err(Interrupted.into());
        }
        labs.push(lab(terminal.clone(), i as u64 + 1, pump)?);
    }
    let setup = t0.elapsed().as_secs_f64();
    // Every terminal's first packet (ARP is not needed on TUN; this waits
    // for the namespaces' routes and the pumps).
    let warm = netns_command(&probe.hosts[0].netns, &["ping", "-n", "-q", "-c", "1", "-w", "5", &probe.hosts[1].ipv4], &probe.env()).stdout(Stdio::null()).stderr(Stdio::null()).status()?;
    if !warm.success() {
        bail!("ping over the probe link got no reply in 5 s");
    }
    let probe_ping = start_ping(&probe, "0.1", (a.seconds * 10) as usize)?;
    let (mut goodput, mut pings) = (Vec::new(), Vec::new());
    match a.load {
        Load::Download => {
            let threads: Vec<_> = labs
                .iter()
                .map(|l| {
                    let (s, c, ip, env) = (l.hosts[1].netns.clone(), l.hosts[0].netns.clone(), l.hosts[1].ipv4.clone(), l.env());
                    let secs = a.seconds;
                    std::thread::spawn(move || iperf(&s, &c, &ip, &env, secs, true))
                })
                .collect();
            for t in threads {
                goodput.push(t.join().map_err(|_| anyhow::anyhow!("iperf3 thread panicked"))?? / 1e6);
            }
        }
        Load::Ping => {
            let children = labs.iter().map(|l| start_ping(l, "1", a.seconds as usize)).collect::<anyhow::Result<Vec<_>>>()?;
            pings = finish_pings(children)?;
        }
    }
    let probed = finish_pings(vec![probe_ping])?.remove(0);
    let _ = probe.shutdown();
    let t1 = Instant::now();
    let reports: Vec<LabReport> = labs.into_iter().map(Lab::shutdown).collect();
    let teardown = t1.elapsed().as_secs_f64();
    Ok(summarise(a, (n, pump), setup, teardown, &reports, goodput, &pings, &probed, rtt_ms))
}

#[allow(clippy::too_many_arguments)]
fn summarise(
    a: &FleetArgs,
    (n, pump): (usize, PumpMode),
    setup: f64,
    teardown: f64,
    reports: &[LabReport],
    goodput: Vec<f64>,
    pings: &[parallel::Probed],
    probe: &parallel::Probed,
    rtt_ms: f64,
) -> FleetStep {
    let dirs: Vec<_> = reports.iter().flat_map(|r| r.directions.iter()).collect();
    let loaded: Vec<_> = dirs.iter().filter(|d| a.load == Load::Ping || d.dir == Some(Dir::Down)).filter(|d| d.packets_out > 0).collect();
    let mut p50: Vec<f64> = loaded.iter().map(|d| d.lateness_us_p50).collect();
    p50.sort_by(f64::total_cmp);
    let cpu: f64 = dirs.iter().map(|d| d.cpu_s).sum();
    let packets: u64 = dirs.iter().map(|d| d.packets_out).sum();
    let jain = jain(&goodput);
    let goodput_of_rate = (!goodput.is_empty()).then(|| goodput.iter().sum::<f64>() / goodput.len() as f64 * 1e6 / a.rate.bits_per_sec);
    let means: Vec<f64> = pings.iter().map(|p| p.mean_ms).collect();
    let ping_mean_ms = (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64);
    let s = FleetStep {
        terminals: n,
        pump,
        setup_ms_per_terminal: if n > 0 { setup * 1e3 / n as f64 } else { 0.0 },
        teardown_ms_per_terminal: if n > 0 { teardown * 1e3 / n as f64 } else { 0.0 },
        pump_threads: match pump {
            PumpMode::Thread => n + 1,
            PumpMode::Shared => aerolink_net::pump::shared::loops_running(),
        },
        pump_cores_per_link: if n > 0 { cpu / n as f64 / a.seconds as f64 } else { 0.0 },
        pump_us_per_packet: if packets > 0 { cpu * 1e6 / packets as f64 } else { 0.0 },
        packets,
        lateness_us_p50: p50.get(p50.len() / 2).copied().unwrap_or(0.0),
        lateness_us_p99: loaded.iter().map(|d| d.lateness_us_p99).fold(0.0, f64::max),
        lateness_us_max: loaded.iter().map(|d| d.lateness_us_max).fold(0.0, f64::max),
        goodput_mbps: goodput,
        jain,
        goodput_of_rate,
        ping_mean_ms,
        ping_link_rtt_ms: ping_mean_ms.map(|_| ping_link_rtt_ms(rtt_ms, a.rate.bits_per_sec)),
        ping_worst_mean_ms: means.iter().copied().reduce(f64::max),
        ping_lost: (!pings.is_empty()).then(|| pings.iter().map(|p| p.sent.saturating_sub(p.received)).sum()),
        probe_mean_ms: probe.mean_ms,
        probe_max_ms: probe.max_ms,
        ok: true,
        missed: vec![],
    };
    judge(s)
}

/// The round trip a link of `rtt_ms` and `rate_bps` both ways gives a
/// ping: the RTT and the ping's packet serialised once each way (at
/// 2 Mbit/s, 0.336 ms each: 50.672 ms over a 50-ms link).
pub fn ping_link_rtt_ms(rtt_ms: f64, rate_bps: f64) -> f64 {
    rtt_ms + 2.0 * f64::from(PING_PACKET_BYTES) * 8.0 / rate_bps * 1e3
}

/// The targets, those that apply to this step's load.
fn judge(mut s: FleetStep) -> FleetStep {
    let mut missed = Vec::new();
    if s.setup_ms_per_terminal > SETUP_TARGET_MS {
        missed.push(format!("set-up {:.1} ms per terminal (target ≤ {SETUP_TARGET_MS} ms)", s.setup_ms_per_terminal));
    }
    if let Some(j) = s.jain {
        if j < JAIN_TARGET {
            missed.push(format!("Jain's index {j:.3} (target ≥ {JAIN_TARGET})"));
        }
        if s.lateness_us_p99 > LATENESS_P99_TARGET_US {
            missed.push(format!("departure error p99 {:.0} µs (target ≤ {LATENESS_P99_TARGET_US} µs)", s.lateness_us_p99));
        }
    }
    if let (Some(m), Some(link)) = (s.ping_mean_ms, s.ping_link_rtt_ms) {
        if (m - link).abs() > PING_MEAN_TARGET_MS {
            missed.push(format!("ping mean {m:.3} ms is {:+.3} ms off the {link:.3} ms its link gives a ping (target within {PING_MEAN_TARGET_MS} ms)", m - link));
        }
    }
    s.ok = missed.is_empty();
    s.missed = missed;
    s
}

pub fn run(a: FleetArgs) -> anyhow::Result<i32> {
    if let Some(n) = a.terminals.iter().find(|n| **n == 0 || **n > MAX_TERMINALS) {
        return Err(user(format!("--terminals: {n} is out of range: expected numbers from 1 to {MAX_TERMINALS}")));
    }
    if a.seconds < 5 {
        return Err(user("--seconds: expected at least 5 (a ping a second needs a few replies)"));
    }
    if a.rtt.0 < 2_000 {
        return Err(user("--rtt: expected at least 2us"));
    }
    need("ping")?;
    if a.load == Load::Download {
        need("iperf3")?;
    }
    aerolink_net::sys::check_preconditions()?;
    let mut order = a.terminals.clone();
    order.sort_unstable();
    order.dedup();
    let what = match a.load {
        Load::Download => format!("a TCP download at {}", a.rate),
        Load::Ping => "a ping a second".into(),
    };
    // Each pump asked for once, the thread first.
    let pumps: Vec<PumpMode> = PumpMode::ALL.iter().copied().filter(|p| a.pump.contains(p)).collect();
    let runs: Vec<(usize, PumpMode)> = order.iter().flat_map(|n| pumps.iter().map(move |p| (*n, *p))).collect();
    let mut steps = Vec::new();
    for (i, (n, pump)) in runs.iter().enumerate() {
        eprintln!(
            "[{}/{}] {n} terminal{}, each {what} over {} ms RTT, and the probe, {} pump ({} s)…",
            i + 1,
            runs.len(),
            if *n == 1 { "" } else { "s" },
            a.rtt.as_secs_f64() * 1e3,
            pump.as_str(),
            a.seconds
        );
        let s = step(&a, *n, *pump)?;
        if !a.json {
            println!("{}", line(&s));
        }
        steps.push(s);
    }
    let r = FleetResult {
        bench: "fleet",
        version: env!("CARGO_PKG_VERSION"),
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        unix_time: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        load: a.load,
        rate_bps: a.rate.bits_per_sec as u64,
        rtt_ms: a.rtt.as_secs_f64() * 1e3,
        seconds: a.seconds,
        steps,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    }
    append_result(&a.out, &r)?;
    Ok(if r.steps.iter().all(|s| s.ok) { 0 } else { 1 })
}

/// One step as a line of text.
fn line(s: &FleetStep) -> String {
    let load = match (s.jain, s.ping_mean_ms) {
        (Some(j), _) => format!("goodput mean {:.1} % of the rate, Jain {j:.3}", s.goodput_of_rate.unwrap_or(0.0) * 100.0),
        (_, Some(m)) => {
            format!("ping mean {m:.3} ms against the link's {:.3} (worst terminal {:.3}), {} lost", s.ping_link_rtt_ms.unwrap_or(0.0), s.ping_worst_mean_ms.unwrap_or(0.0), s.ping_lost.unwrap_or(0))
        }
        _ => String::new(),
    };
    format!(
        "  N={} ({}): set-up {:.1} ms and tear-down {:.1} ms per terminal; pumps {:.4} cores per link, {:.1} µs per packet ({} packets); departure error p50 {:.0} µs, p99 {:.0}, max {:.0}; {load}; probe mean {:.3} ms, max {:.3}{}",
        s.terminals,
        s.pump.as_str(),
        s.setup_ms_per_terminal,
        s.teardown_ms_per_terminal,
        s.pump_cores_per_link,
        s.pump_us_per_packet,
        s.packets,
        s.lateness_us_p50,
        s.lateness_us_p99,
        s.lateness_us_max,
        s.probe_mean_ms,
        s.probe_max_ms,
        if s.ok { String::new() } else { format!("  MISSED: {}", s.missed.join("; ")) }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_for_equal_shares_and_one_over_n_for_a_monopoly() {
        assert_eq!(jain(&[]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
        assert!((jain(&[2.0, 2.0, 2.0, 2.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((jain(&[8.0, 0.0, 0.0, 0.0]).unwrap() - 0.25).abs() < 1e-12);
        // (1+2+3)² / (3 · 14) = 36/42.
        assert!((jain(&[1.0, 2.0, 3.0]).unwrap() - 36.0 / 42.0).abs() < 1e-12);
    }

    #[test]
    fn a_pings_round_trip_includes_its_serialisation_both_ways() {
        // 84 bytes at 2 Mbit/s: 0.336 ms each way.
        assert!((ping_link_rtt_ms(50.0, 2e6) - 50.672).abs() < 1e-9);
        // 1 Gbit/s: under a µs each way.
        assert!((ping_link_rtt_ms(50.0, 1e9) - 50.0).abs() < 2e-3);
    }
}
