//! `aerolink bench queue`: does the default queue starve a TCP flow? One
//! iperf3 download (cubic, ground → aircraft) over each case with the
//! default queue, then over the
//! same link with an unlimited queue (nothing ever dropped at the queue: the
//! ideal this queue can reach), side by side; the ratio is the figure.

use std::path::PathBuf;

use aerolink_link::Profile;
use clap::Args;
use serde::Serialize;

use super::*;

#[derive(Args, Debug)]
pub struct QueueArgs {
    /// Seconds per measurement (at least 20 round trips of the link).
    #[arg(long, default_value_t = 10)]
    pub seconds: u32,
    /// Built-in profiles to measure (default: every one).
    #[arg(long, value_delimiter = ',', value_name = "NAME,…")]
    pub profiles: Vec<String>,
    /// Rates measured with `--rtt 0ms` besides the profiles.
    #[arg(long, value_delimiter = ',', value_name = "RATE,…", default_value = "1Mbit/s,10Mbit/s,100Mbit/s,1.2Gbit/s")]
    pub rates: Vec<String>,
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
    /// direction), bytes (None: unlimited).
    pub queue_bytes: Option<u64>,
    pub seconds: u32,
    pub default_mbps: f64,
    pub unlimited_mbps: f64,
    /// default / unlimited.
    pub ratio: f64,
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
    let unlimited = [Override { scope: "link".into(), key: "queue".into(), value: "unlimited".into(), flag: "--queue".into() }];
    let mut cases: Vec<(String, Profile, Profile)> = Vec::new();
    let names: Vec<String> = if a.profiles.is_empty() { aerolink_link::builtin::names().map(str::to_string).collect() } else { a.profiles.clone() };
    for n in &names {
        cases.push((n.clone(), crate::linkargs::load_profile(n, &[])?, crate::linkargs::load_profile(n, &unlimited)?));
    }
    let load = &mut |_: &str| Err::<String, String>("no files".into());
    for r in &a.rates {
        let base = flags(&[("rate", r), ("rtt", "0ms")]);
        let mut open = base.clone();
        open.extend(unlimited.iter().cloned());
        cases.push((format!("--rate {r} --rtt 0ms"), Profile::from_overrides(&base, load)?, Profile::from_overrides(&open, load)?));
    }
    let mut out = Vec::new();
    for (i, (case, default, open)) in cases.into_iter().enumerate() {
        let rtt = default.base_rtt();
        let seconds = a.seconds.max((20.0 * rtt.as_secs_f64()).ceil() as u32);
        let queue_bytes = match default.down.queue_limit(rtt) {
            aerolink_link::queue::QueueLimit::Bytes(b) => Some(b),
            _ => None,
        };
        eprintln!("[{}/{}] {case}: default queue ({}), then unlimited, {seconds} s each…", i + 1, names.len() + a.rates.len(), queue_bytes.map(|b| format!("{b} B")).unwrap_or("unlimited".into()));
        let (d, _) = super::emulator::through_lab(default, seconds, true)?;
        let (u, _) = super::emulator::through_lab(open, seconds, true)?;
        let c = QueueCase { case, queue_bytes, seconds, default_mbps: d / 1e6, unlimited_mbps: u / 1e6, ratio: if u > 0.0 { d / u } else { 0.0 } };
        if !a.json {
            println!("  {:<28} {:>10.3} Mbit/s vs {:>10.3} unlimited: {:.3}{}", c.case, c.default_mbps, c.unlimited_mbps, c.ratio, if c.ratio < a.target { "  BELOW TARGET" } else { "" });
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
        println!("default queue: worst goodput ratio to an unlimited queue {:.3} (target ≥ {}); below: {}", r.min_ratio, r.target, if r.below.is_empty() { "none".to_string() } else { r.below.join(", ") });
    }
    append_result(&a.out, &r)?;
    Ok(if r.below.is_empty() { 0 } else { 1 })
}
