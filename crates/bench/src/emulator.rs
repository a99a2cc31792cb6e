//! `aerolink bench emulator`: goodput, pump CPU per Gbit/s and
//! departure-time error, side by side with a plain veth pair.

use std::path::PathBuf;

use aerolink_link::Profile;
use aerolink_net::lab::{remove_namespace, NS_PREFIX};
use aerolink_net::sys::ip;
use aerolink_net::{Lab, LabReport, LabSpec};
use anyhow::Context;
use clap::Args;
use serde::Serialize;

use super::*;
use aerolink_net::run_id;

#[derive(Args, Debug)]
pub struct EmulatorArgs {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 8, value_parser = step_seconds())]
    pub seconds: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Append the result as one JSON line to FILE.
    #[arg(long, default_value = "bench-results.jsonl", value_name = "FILE")]
    pub out: PathBuf,
}

#[derive(Serialize, Debug)]
pub struct EmulatorResult {
    pub bench: &'static str,
    pub version: &'static str,
    pub host: String,
    pub cpus: usize,
    pub unix_time: u64,
    pub seconds: u32,
    /// Goodput through aerolink with no rate limit and no delay, Gbit/s.
    pub passthrough_gbps: f64,
    /// The same over a plain veth pair, Gbit/s.
    pub veth_gbps: f64,
    /// passthrough / veth.
    pub ratio_to_veth: f64,
    /// Goodput at a 10 Gbit/s cap with segmentation offload off on the TUN
    /// devices (the kernel cuts every burst; the pump reads, shapes and
    /// writes 1500-byte packets one by one), Gbit/s.
    pub per_packet_gbps: f64,
    /// Pump CPU per Gbit/s on the per-packet path.
    pub per_packet_cpu_cores_per_gbps: f64,
    /// The same cap with offloaded bursts read whole, shaped segment by
    /// segment and written back as runs of segments, Gbit/s.
    pub shaped_gbps: f64,
    pub shaped_cpu_cores_per_gbps: f64,
    /// A 10 Gbit/s cap with 1 % random loss, packet by packet, Gbit/s.
    pub lossy_per_packet_gbps: f64,
    /// The same with bursts cut into segments, Gbit/s.
    pub lossy_shaped_gbps: f64,
    /// lossy_shaped / lossy_per_packet (target ≥ 2).
    pub lossy_ratio: f64,
    /// The share of packets the loss stage dropped on each path.
    pub lossy_per_packet_loss: f64,
    pub lossy_shaped_loss: f64,
    /// Pump CPU seconds per second of transfer, per Gbit/s.
    pub cpu_cores_per_gbps: f64,
    /// Departure-time error at 100 Mbit/s, 50 ms one way, µs.
    pub delay_error_us_p50: f64,
    pub delay_error_us_p99: f64,
    pub delay_error_us_max: f64,
    pub delay_test_goodput_mbps: f64,
    /// Pump CPU (cores) during the 100 Mbit/s test, polling included.
    pub delay_test_pump_cores: f64,
    /// The pump's lateness target in that test, µs.
    pub lateness_target_us: f64,
    /// The same test with the pump polling for all of its timer's learnt
    /// lateness (target 0, the most precise): error and CPU side by side.
    pub exact_error_us_p50: f64,
    pub exact_error_us_p99: f64,
    pub exact_pump_cores: f64,
    /// What one timed sleep and wake-up costs this thread in CPU, µs (the
    /// floor under a pump that wakes for every departure).
    pub wakeup_cpu_us: f64,
}

/// CPU time one 100 µs `ppoll` sleep and its wake-up cost the calling
/// thread, µs (median of 2000).
fn wakeup_cpu_us() -> f64 {
    let ts = libc::timespec { tv_sec: 0, tv_nsec: 100_000 };
    aerolink_net::sys::tight_timer_slack();
    let before = aerolink_net::pump::thread_cpu_seconds();
    let n = 2000;
    for _ in 0..n {
        // SAFETY: no descriptors, a valid timeout.
        unsafe {
            libc::ppoll(std::ptr::null_mut(), 0, &ts, std::ptr::null());
        }
    }
    (aerolink_net::pump::thread_cpu_seconds() - before) / n as f64 * 1e6
}

/// How a benchmark's lab runs, beyond its profile.
#[derive(Clone, Copy)]
pub(super) struct Through {
    /// The pump's lateness target (None: the default).
    pub lateness_target_ns: Option<u64>,
    /// Segmentation offload off: the pump reads every packet alone.
    pub packet_by_packet: bool,
    /// The iperf3 flow's TCP congestion control.
    pub cc: TcpCc,
    /// The lab's random choices (loss, jitter) are drawn from it.
    pub seed: u64,
}

impl Default for Through {
    fn default() -> Self {
        Through { lateness_target_ns: None, packet_by_packet: false, cc: TcpCc::Cubic, seed: 1 }
    }
}

/// One iperf3 flow over a lab with `profile`: up (client to server), or
/// down when `down`.
pub(super) fn through_lab(profile: Profile, seconds: u32, down: bool) -> anyhow::Result<(f64, LabReport)> {
    through_lab_with(profile, seconds, down, Through::default())
}

/// The same, run as `how` says.
pub(super) fn through_lab_with(profile: Profile, seconds: u32, down: bool, how: Through) -> anyhow::Result<(f64, LabReport)> {
    let Through { lateness_target_ns, packet_by_packet, cc, seed } = how;
    let spec = LabSpec { lateness_target_ns, packet_by_packet, ..LabSpec::one_link(run_id(), profile, seed) };
    let lab = Lab::build(&spec, None)?;
    let (c, s) = (lab.hosts[0].netns.clone(), lab.hosts[1].netns.clone());
    let bps = iperf_cc(&s, &c, &lab.hosts[1].ipv4.clone(), &lab.env(), seconds, down, cc);
    let rep = lab.shutdown();
    Ok((bps?, rep))
}

fn through_veth(seconds: u32) -> anyhow::Result<f64> {
    let id = run_id();
    let (a, b) = (format!("{NS_PREFIX}{id}-vetha"), format!("{NS_PREFIX}{id}-vethb"));
    let result = (|| -> anyhow::Result<f64> {
        aerolink_net::sys::add_netns(&a)?;
        aerolink_net::sys::add_netns(&b)?;
        ip(&["-n", &a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", &b])?;
        ip(&["-n", &a, "addr", "add", "198.19.0.1/24", "dev", "va"])?;
        ip(&["-n", &b, "addr", "add", "198.19.0.2/24", "dev", "vb"])?;
        for (ns, d) in [(&a, "va"), (&b, "vb")] {
            ip(&["-n", ns, "link", "set", d, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        iperf(&b, &a, "198.19.0.2", &[], seconds, false)
    })();
    remove_namespace(&a);
    remove_namespace(&b);
    result
}

pub fn run(a: EmulatorArgs) -> anyhow::Result<i32> {
    need("iperf3")?;
    aerolink_net::sys::check_preconditions()?;
    let load = &mut |_: &str| Err::<String, String>("no files".into());
    let steps = 8;
    let step = |i: u32, what: &str| eprintln!("bench {i}/{steps}: {what} ({} s)…", a.seconds);
    step(1, "TCP through aerolink, no rate limit, no delay");
    let open = Profile::from_overrides(&flags(&[("rate", "unlimited")]), load)?;
    let (pass_bps, pass_rep) = through_lab(open, a.seconds, false)?;
    step(2, "TCP over a plain veth pair");
    let veth_bps = through_veth(a.seconds)?;
    step(3, "TCP through aerolink packet by packet, 10 Gbit/s cap");
    let capped = Profile::from_overrides(&flags(&[("rate", "10 Gbit/s")]), load)?;
    let (pp_bps, pp_rep) = through_lab_with(capped.clone(), a.seconds, false, Through { packet_by_packet: true, ..Through::default() })?;
    step(4, "the same with offloaded bursts shaped segment by segment");
    let (shaped_bps, shaped_rep) = through_lab(capped, a.seconds, false)?;
    step(5, "10 Gbit/s cap, 1 % loss, packet by packet (TCP BBR, which random loss does not slow)");
    let lossy = Profile::from_overrides(&flags(&[("rate", "10 Gbit/s"), ("loss", "1%")]), load)?;
    let (lpp_bps, lpp_rep) = through_lab_with(lossy.clone(), a.seconds, false, Through { packet_by_packet: true, cc: TcpCc::Bbr, ..Through::default() })?;
    step(6, "10 Gbit/s cap, 1 % loss, bursts shaped segment by segment (TCP BBR)");
    let (ls_bps, ls_rep) = through_lab_with(lossy, a.seconds, false, Through { cc: TcpCc::Bbr, ..Through::default() })?;
    step(7, "TCP at 100 Mbit/s, 50 ms one way");
    let slow = Profile::from_overrides(&flags(&[("rate", "100 Mbit/s"), ("delay", "50 ms")]), load)?;
    let (slow_bps, slow_rep) = through_lab(slow.clone(), a.seconds, false)?;
    step(8, "the same, polling for every µs of timer lateness (target 0)");
    let (_, exact_rep) = through_lab_with(slow, a.seconds, false, Through { lateness_target_ns: Some(0), ..Through::default() })?;
    let wakeup = wakeup_cpu_us();
    let cores_per_gbps = |rep: &LabReport, bps: f64| {
        let cpu: f64 = rep.directions.iter().map(|d| d.cpu_s).sum();
        if bps > 0.0 {
            cpu / a.seconds as f64 / (bps / 1e9)
        } else {
            0.0
        }
    };
    // The data direction's share of packets lost to the loss stage.
    let loss_share = |rep: &LabReport| {
        let (lost, seen) = rep.directions.iter().fold((0, 0), |(l, s), d| (l + d.dropped_loss, s + d.packets_in));
        if seen > 0 {
            lost as f64 / seen as f64
        } else {
            0.0
        }
    };
    let slow_cpu: f64 = slow_rep.directions.iter().map(|d| d.cpu_s).sum();
    // Worst direction for the error figures (the data direction, in practice).
    let worst = slow_rep.directions.iter().max_by(|x, y| x.lateness_us_p99.total_cmp(&y.lateness_us_p99)).context("no pump report")?;
    let exact_cpu: f64 = exact_rep.directions.iter().map(|d| d.cpu_s).sum();
    let exact = exact_rep.directions.iter().max_by(|x, y| x.lateness_us_p99.total_cmp(&y.lateness_us_p99)).context("no pump report")?;
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default().trim().to_string();
    let r = EmulatorResult {
        bench: "emulator",
        version: env!("CARGO_PKG_VERSION"),
        host,
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        unix_time: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        seconds: a.seconds,
        passthrough_gbps: pass_bps / 1e9,
        veth_gbps: veth_bps / 1e9,
        ratio_to_veth: pass_bps / veth_bps,
        per_packet_gbps: pp_bps / 1e9,
        per_packet_cpu_cores_per_gbps: cores_per_gbps(&pp_rep, pp_bps),
        shaped_gbps: shaped_bps / 1e9,
        shaped_cpu_cores_per_gbps: cores_per_gbps(&shaped_rep, shaped_bps),
        lossy_per_packet_gbps: lpp_bps / 1e9,
        lossy_shaped_gbps: ls_bps / 1e9,
        lossy_ratio: if lpp_bps > 0.0 { ls_bps / lpp_bps } else { 0.0 },
        lossy_per_packet_loss: loss_share(&lpp_rep),
        lossy_shaped_loss: loss_share(&ls_rep),
        cpu_cores_per_gbps: cores_per_gbps(&pass_rep, pass_bps),
        delay_error_us_p50: worst.lateness_us_p50,
        delay_error_us_p99: worst.lateness_us_p99,
        delay_error_us_max: worst.lateness_us_max,
        delay_test_goodput_mbps: slow_bps / 1e6,
        delay_test_pump_cores: slow_cpu / a.seconds as f64,
        lateness_target_us: aerolink_net::pump::default_lateness_target_ns() as f64 / 1e3,
        exact_error_us_p50: exact.lateness_us_p50,
        exact_error_us_p99: exact.lateness_us_p99,
        exact_pump_cores: exact_cpu / a.seconds as f64,
        wakeup_cpu_us: wakeup,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print_result(&r);
    }
    append_result(&a.out, &r)?;
    Ok(0)
}

/// The figures as a person reads them.
fn print_result(r: &EmulatorResult) {
    println!("aerolink emulator benchmark ({} cores, {} s per measurement)", r.cpus, r.seconds);
    println!("  TCP goodput, no rate limit, no delay: {:.2} Gbit/s   (plain veth: {:.2} Gbit/s, ratio {:.2})", r.passthrough_gbps, r.veth_gbps, r.ratio_to_veth);
    println!("  pump CPU: {:.3} cores per Gbit/s (segmentation offload: TCP bursts of up to 64 KB pass as one)", r.cpu_cores_per_gbps);
    println!("  10 Gbit/s cap, packet by packet (offload off): {:.2} Gbit/s, {:.2} cores per Gbit/s", r.per_packet_gbps, r.per_packet_cpu_cores_per_gbps);
    println!(
        "  10 Gbit/s cap, bursts shaped segment by segment: {:.2} Gbit/s, {:.2} cores per Gbit/s  ({:.2}× packet by packet)",
        r.shaped_gbps,
        r.shaped_cpu_cores_per_gbps,
        if r.per_packet_gbps > 0.0 { r.shaped_gbps / r.per_packet_gbps } else { 0.0 }
    );
    println!(
        "  10 Gbit/s cap, 1 % loss: bursts {:.2} Gbit/s vs packet by packet {:.2} Gbit/s: {:.2}× (target ≥ 2×); lost {:.2} % vs {:.2} % of packets",
        r.lossy_shaped_gbps,
        r.lossy_per_packet_gbps,
        r.lossy_ratio,
        r.lossy_shaped_loss * 100.0,
        r.lossy_per_packet_loss * 100.0
    );
    println!(
        "  departure-time error at 100 Mbit/s, 50 ms: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs   (TCP goodput {:.1} Mbit/s)",
        r.delay_error_us_p50, r.delay_error_us_p99, r.delay_error_us_max, r.delay_test_goodput_mbps
    );
    println!("  pump CPU during that test: {:.2} cores (lateness target {:.0} µs: it polls only for the part of its timer's lateness beyond that)", r.delay_test_pump_cores, r.lateness_target_us);
    println!(
        "  the same polling for all of it (target 0): p50 {:.1} µs, p99 {:.1} µs, {:.2} cores  (ratio {:.2}× the CPU)",
        r.exact_error_us_p50,
        r.exact_error_us_p99,
        r.exact_pump_cores,
        if r.delay_test_pump_cores > 0.0 { r.exact_pump_cores / r.delay_test_pump_cores } else { 0.0 }
    );
    println!("  one timed sleep and wake-up costs {:.1} µs of CPU here; 100 Mbit/s of 1500-byte packets is 8300 departures/s", r.wakeup_cpu_us);
    println!("  targets: ≥ 2 Gbit/s; p99 ≤ 100 µs");
}
