//! `aerolink bench queue`: does the default queue starve a TCP flow? One
//! iperf3 download (cubic, ground → aircraft) over each case with the
//! default queue, then over the
//! same link with an unlimited queue (nothing ever dropped at the queue: the
//! ideal this queue can reach), side by side; the ratio is the figure.

use std::path::PathBuf;

use aerolink_link::Profile;
use clap::Args;
use serde::Serialize;

use super::emulator::Through;
use super::*;

#[derive(Args, Debug)]
pub struct QueueArgs {
    /// Seconds per measurement (at least 20 round trips of the link).
    #[arg(long, default_value_t = 10, value_parser = step_seconds())]
    pub seconds: u32,
    /// Built-in profiles to measure (default: every one).
    #[arg(long, value_delimiter = ',', value_name = "NAME,…")]
    pub profiles: Vec<String>,
    /// Rates measured with `--rtt 0ms` besides the profiles.
    #[arg(long, value_delimiter = ',', value_name = "RATE,…", default_value = "1Mbit/s,10Mbit/s,100Mbit/s,1.2Gbit/s", value_parser = rate_arg)]
    pub rates: Vec<Rate>,
    /// Runs of each queue per case, alternating default and unlimited; run
    /// r of both draws its loss and jitter from seed r (1, 2, …); the
    /// figure is the median of the runs' ratios, with a 95 % bootstrap
    /// interval from 2 runs on (single short runs over lossy links scatter
    /// by ±10 %).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub repeat: u32,
    /// The goodput ratio a case must reach.
    #[arg(long, default_value_t = 0.95)]
    pub target: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Append the result as one JSON line to FILE.
    #[arg(long, default_value = "bench-results.jsonl", value_name = "FILE")]
    pub out: PathBuf,
}

#[derive(Serialize, Debug)]
pub struct QueueCase {
    pub case: String,
    /// The default queue's limit toward the aircraft (the data
    /// direction), as a profile writes it: `30672 B`, `1000 packets`,
    /// `unlimited`.
    pub queue: String,
    pub seconds: u32,
    /// The lab's seed of each run (the same for both queues of a run).
    pub seeds: Vec<u64>,
    /// Goodput of each run, Mbit/s, in the order run.
    pub default_runs_mbps: Vec<f64>,
    pub unlimited_runs_mbps: Vec<f64>,
    /// Medians of the runs.
    pub default_mbps: f64,
    pub unlimited_mbps: f64,
    /// default / unlimited: the median over the runs of each run's ratio
    /// (both queues of run r drew from seed r).
    pub ratio: f64,
    /// The ratio's 95 % bootstrap interval (runs resampled; with one run
    /// of each, the ratio itself).
    pub ratio_low: f64,
    pub ratio_high: f64,
}

#[derive(Serialize, Debug)]
pub struct QueueResult {
    pub bench: &'static str,
    pub version: &'static str,
    pub unix_time: u64,
    pub target: f64,
    pub cases: Vec<QueueCase>,
    /// The worst case's ratio.
    pub min_ratio: f64,
    /// Cases under the target.
    pub below: Vec<String>,
}

pub fn run(a: QueueArgs) -> anyhow::Result<i32> {
    need("iperf3")?;
    aerolink_net::sys::check_preconditions()?;
    let cases = cases(&a)?;
    let mut out = Vec::new();
    let of = cases.len();
    for (i, (case, default, open)) in cases.into_iter().enumerate() {
        let rtt = default.base_rtt();
        let seconds = a.seconds.max((20.0 * rtt.as_secs_f64()).ceil() as u32);
        let queue = default.down.queue_limit(rtt).to_string();
        let (mut d, mut u) = (Vec::new(), Vec::new());
        let unlimited_already = [&default.down, &default.up].iter().all(|d| d.queue_limit(rtt) == aerolink_link::queue::QueueLimit::Unlimited);
        if unlimited_already {
            // No rate stage (a `bonded`, `ldacs` or `dama` stage queues in
            // its own buffer, which the profile sets): the default is
            // already no limit in front of the link; nothing to compare.
            eprintln!("[{}/{}] {case}: no queue in front of the link by default (its own stage's buffer is the profile's): the same link as unlimited, not run", i + 1, of);
            if !a.json {
                println!("  {case:<28} no limit by default: the same link as unlimited");
            }
            out.push(QueueCase {
                case,
                queue,
                seconds,
                seeds: vec![],
                default_runs_mbps: vec![],
                unlimited_runs_mbps: vec![],
                default_mbps: f64::NAN,
                unlimited_mbps: f64::NAN,
                ratio: 1.0,
                ratio_low: 1.0,
                ratio_high: 1.0,
            });
            continue;
        }
        for r in 0..a.repeat {
            eprintln!(
                "[{}/{}] {case}: default queue ({queue}), then unlimited, {seconds} s each{}…",
                i + 1,
                of,
                if a.repeat > 1 { format!(" (run {} of {})", r + 1, a.repeat) } else { String::new() }
            );
            let seed = r as u64 + 1;
            d.push(super::emulator::through_lab_with(default.clone(), seconds, true, Through { seed, ..Through::default() })?.0 / 1e6);
            u.push(super::emulator::through_lab_with(open.clone(), seconds, true, Through { seed, ..Through::default() })?.0 / 1e6);
        }
        // Run r of both queues met the same losses (seed r): the ratio is
        // taken run by run, and its median and interval over the runs.
        let ratios: Vec<f64> = d.iter().zip(&u).map(|(d, u)| if *u > 0.0 { d / u } else { 0.0 }).collect();
        let (value, low, high) = aerolink_experiments::stats::bootstrap(&ratios, &[], |r, _| r, i as u64);
        let median = |v: &[f64]| aerolink_experiments::stats::summarize(v).map_or(f64::NAN, |s| s.median);
        let c = QueueCase {
            case,
            queue,
            seconds,
            seeds: (1..=a.repeat as u64).collect(),
            default_mbps: median(&d),
            unlimited_mbps: median(&u),
            default_runs_mbps: d,
            unlimited_runs_mbps: u,
            ratio: value,
            ratio_low: low,
            ratio_high: high,
        };
        if !a.json {
            print_case(&c, &a);
        }
        out.push(c);
    }
    let min_ratio = out.iter().map(|c| c.ratio).fold(f64::INFINITY, f64::min);
    let below = out.iter().filter(|c| c.ratio < a.target).map(|c| c.case.clone()).collect::<Vec<_>>();
    let r = QueueResult {
        bench: "queue",
        version: env!("CARGO_PKG_VERSION"),
        unix_time: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        target: a.target,
        cases: out,
        min_ratio,
        below,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "default queue: worst goodput ratio to an unlimited queue {:.3} (target ≥ {}); below: {}",
            r.min_ratio,
            r.target,
            if r.below.is_empty() { "none".to_string() } else { r.below.join(", ") }
        );
    }
    append_result(&a.out, &r)?;
    Ok(if r.below.is_empty() { 0 } else { 1 })
}

/// Every case: each profile named (or built in) with its default queue and
/// unlimited, then `--rate R --rtt 0ms` for each rate.
fn cases(a: &QueueArgs) -> anyhow::Result<Vec<(String, Profile, Profile)>> {
    let unlimited = [Override { scope: "link".into(), key: "queue".into(), value: "unlimited".into(), flag: "--queue".into() }];
    let mut cases: Vec<(String, Profile, Profile)> = Vec::new();
    let names: Vec<String> = if a.profiles.is_empty() { aerolink_link::builtin::names().map(str::to_string).collect() } else { a.profiles.clone() };
    for n in &names {
        cases.push((n.clone(), aerolink_experiments::linkargs::load_profile(n, &[])?, aerolink_experiments::linkargs::load_profile(n, &unlimited)?));
    }
    let load = &mut |_: &str| Err::<String, String>("no files".into());
    for r in &a.rates {
        let base = flags(&[("rate", &aerolink_work::cli::rate_text(*r)), ("rtt", "0ms")]);
        let mut open = base.clone();
        open.extend(unlimited.iter().cloned());
        // Named as a command line would give it: `--rate 1.2Gbit/s --rtt 0ms`.
        let name = format!("--rate {} --rtt 0ms", r.to_string().replace(' ', ""));
        cases.push((name, Profile::from_overrides(&base, load)?, Profile::from_overrides(&open, load)?));
    }
    Ok(cases)
}

/// One case's line: both goodputs, their ratio, against the target.
fn print_case(c: &QueueCase, a: &QueueArgs) {
    let interval = if a.repeat > 1 { format!(" (95 % {:.3}–{:.3})", c.ratio_low, c.ratio_high) } else { String::new() };
    let verdict = match (c.ratio < a.target, c.ratio_high < a.target) {
        (false, _) => "",
        (true, true) => "  BELOW TARGET",
        (true, false) => "  below target (the interval reaches it)",
    };
    // In the rate's own unit (Iridium's kbit/s would print as 0.001
    // Mbit/s), to four significant digits; the JSON has them all.
    let rate = |mbps: f64| {
        let bps = mbps * 1e6;
        let step = if bps > 0.0 { 10f64.powi(bps.log10().floor() as i32 - 3) } else { 1.0 };
        aerolink_link::units::Rate::from_bps((bps / step).round() * step).to_string()
    };
    println!("  {:<28} {:>15} vs {:>15} unlimited: {:.3}{interval}{verdict}", c.case, rate(c.default_mbps), rate(c.unlimited_mbps), c.ratio);
}
