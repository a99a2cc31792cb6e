//! `aerolink bench pep`: page loads through each PEP mode, and forwarding
//! goodput and CPU per Gbit/s with every hop unlimited.

use std::path::PathBuf;

use aerolink_link::Profile;
use aerolink_net::{Lab, LabSpec};
use anyhow::bail;
use clap::Args;
use serde::Serialize;

use super::*;
use aerolink_experiments::workload::WorkloadResult;
use aerolink_net::run_id;
use aerolink_work::web::Protocol;

#[derive(Args, Debug)]
pub struct PepBenchArgs {
    /// Seconds per forwarding measurement.
    #[arg(long, default_value_t = 8, value_parser = step_seconds())]
    pub seconds: u32,
    /// Page loads per protocol and mode (0 skips the page loads).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub repeat: u32,
    /// The space hop for the page loads.
    #[arg(long, default_value = "mss")]
    pub space: String,
    #[arg(long)]
    pub json: bool,
    #[arg(long, default_value = "bench-results.jsonl", value_name = "FILE")]
    pub out: PathBuf,
}

#[derive(Serialize, Debug)]
pub struct PepBenchRow {
    pub mode: PepMode,
    /// The space hop's MTU (the other hops': 1500).
    pub space_mtu: u32,
    pub gbps: f64,
    /// Proxy CPU (all proxy processes) per Gbit/s of goodput.
    pub pep_cores_per_gbps: f64,
    pub pep_cores: f64,
}

#[derive(Serialize, Debug)]
pub struct PltRow {
    pub protocol: Protocol,
    pub mode: PepMode,
    pub plt_ms: Vec<f64>,
    pub median_ms: f64,
    /// Median over the median without a PEP (below 1 = faster).
    pub ratio_to_none: f64,
    /// Median over the physical floor: 3 RTT + bytes / (rate × (1 − loss)).
    pub ratio_to_floor: f64,
    pub failed: u32,
}

/// Page loads through each PEP mode, side by side.
fn pep_plt(a: &PepBenchArgs, stop: &std::sync::atomic::AtomicBool) -> anyhow::Result<(f64, Vec<PltRow>)> {
    use aerolink_experiments::workload::{Knobs, Workload};
    let space = aerolink_experiments::linkargs::load_profile(&a.space, &[])?;
    let page = aerolink_work::page::Page::parse("10x100KB", 1).map_err(anyhow::Error::msg)?;
    let floor_ms = 3.0 * space.base_rtt().as_millis_f64() + page.total_bytes() as f64 * 8.0 / (space.down.capacity_bps().unwrap_or(f64::INFINITY) * (1.0 - space.down.mean_loss())) * 1e3;
    let exe = std::env::current_exe()?;
    let mut rows: Vec<PltRow> = Vec::new();
    for protocol in [Protocol::H1, Protocol::H2] {
        for mode in [PepMode::None, PepMode::SplitTcp, PepMode::QuicTunnel] {
            let mut v = Vec::new();
            let mut failed = 0;
            for rep in 0..a.repeat {
                eprintln!("page load {protocol} via {mode}, {}/{} …", rep + 1, a.repeat);
                let req = aerolink_experiments::runner::RunRequest {
                    exe: exe.clone(),
                    run_name: run_id(),
                    profile: space.clone(),
                    chain: aerolink_experiments::experiment::Chain::Ifc,
                    seed: 1 + rep as u64,
                    workload: Workload::Web(aerolink_experiments::workload::Web { protocol, page: "10x100KB".into(), depth: 1, resolver: None }),
                    knobs: Knobs { pep: Some(aerolink_experiments::gateways::PepSpec { mode, ..Default::default() }), ..Knobs::default() },
                    timeout: std::time::Duration::from_secs(300),
                    pcap: None,
                    traces: None,
                    live: None,
                    pump: aerolink_net::lab::PumpMode::Thread,
                };
                let o = aerolink_experiments::runner::run_once(&req, stop);
                match &o.result {
                    Some(WorkloadResult::Web(r)) if o.ok => v.push(r.plt_ms),
                    _ => {
                        failed += 1;
                        eprintln!("  failed: {}", o.error.unwrap_or_default());
                    }
                }
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    bail!("interrupted");
                }
            }
            v.sort_by(f64::total_cmp);
            let median = if v.is_empty() { f64::NAN } else { v[v.len() / 2] };
            let none = rows.iter().find(|r| r.protocol == protocol && r.mode == PepMode::None).map(|r| r.median_ms).unwrap_or(median);
            rows.push(PltRow { protocol, mode, plt_ms: v, median_ms: median, ratio_to_none: median / none, ratio_to_floor: median / floor_ms, failed });
        }
    }
    Ok((floor_ms, rows))
}

pub fn run(a: PepBenchArgs) -> anyhow::Result<i32> {
    need("iperf3")?;
    aerolink_net::sys::check_preconditions()?;
    let stop = aerolink_net::stop::on_signals().flag().clone();
    let (floor_ms, plt) = if a.repeat > 0 { pep_plt(&a, &stop)? } else { (0.0, Vec::new()) };
    let load = &mut |_: &str| Err::<String, String>("no files".into());
    let open = Profile::from_overrides(&flags(&[("rate", "unlimited")]), load)?;
    // The tunnel again with jumbo frames on the space hop: its path MTU
    // discovery finds them and each datagram carries six times the bytes.
    let jumbo = Profile::from_overrides(&flags(&[("rate", "unlimited"), ("mtu", "9000")]), load)?;
    let exe = std::env::current_exe()?;
    let mut rows = Vec::new();
    let cases = [(PepMode::None, &open), (PepMode::SplitTcp, &open), (PepMode::QuicTunnel, &open), (PepMode::QuicTunnel, &jumbo)];
    for (i, (mode, space)) in cases.into_iter().enumerate() {
        let space_mtu = space.up.mtu();
        eprintln!("bench {}/{}: TCP download through the gateway chain, every hop unlimited, space hop MTU {space_mtu}, pep {mode} ({} s)…", i + 1, cases.len(), a.seconds);
        let hosts = aerolink_experiments::topology::IFC_HOSTS.iter().map(|s| s.to_string()).collect();
        let spec = LabSpec::chain(run_id(), hosts, vec![open.clone(), space.clone(), open.clone()], 1);
        let lab = Lab::build(&spec, None)?;
        let pep = aerolink_experiments::gateways::PepSpec { mode, ..Default::default() };
        let dir = lab.tmp_dir().join("pep");
        let r = (|| -> anyhow::Result<PepBenchRow> {
            let gw = aerolink_experiments::gateways::Gateways::start(&lab, &exe, &pep, &dir, true)?;
            let pids: Vec<u32> = gw.processes().into_iter().map(|(_, p)| p).collect();
            let before: f64 = pids.iter().map(|p| cpu_seconds(*p)).sum();
            let (c, s) = (lab.hosts[0].netns.clone(), lab.hosts[3].netns.clone());
            let bps = iperf(&s, &c, &lab.hosts[3].ipv4.clone(), &lab.env(), a.seconds, false)?;
            let cores = (pids.iter().map(|p| cpu_seconds(*p)).sum::<f64>() - before) / a.seconds as f64;
            let gbps = bps / 1e9;
            Ok(PepBenchRow { mode, space_mtu, gbps, pep_cores: cores, pep_cores_per_gbps: if gbps > 0.0 && mode != PepMode::None { cores / gbps } else { 0.0 } })
        })();
        lab.shutdown();
        rows.push(r?);
    }
    let v = serde_json::json!({
        "bench": "pep", "version": env!("CARGO_PKG_VERSION"),
        "host": std::fs::read_to_string("/etc/hostname").unwrap_or_default().trim(),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "unix_time": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        "seconds": a.seconds, "rows": rows,
        "space": a.space, "floor_ms": floor_ms, "page_loads": plt,
    });
    if a.json {
        println!("{v}");
    } else {
        if !plt.is_empty() {
            println!("aerolink PEP benchmark: 10×100 KB page over the gateway chain around {} (median of {}; physical floor {:.2} s)", a.space, a.repeat, floor_ms / 1e3);
            for r in &plt {
                println!(
                    "  {} {:<12} {:6.2} s   {:.2}× none   {:.2}× floor{}",
                    r.protocol,
                    r.mode,
                    r.median_ms / 1e3,
                    r.ratio_to_none,
                    r.ratio_to_floor,
                    if r.failed > 0 { format!("   ({} failed)", r.failed) } else { String::new() }
                );
            }
            println!("  targets: quic-tunnel ≤ 1/3 of none and ≤ 1.5× floor");
        }
        println!("aerolink PEP forwarding benchmark (every hop unlimited; iperf3 download, {} s each)", a.seconds);
        for r in &rows {
            let mode = if r.space_mtu == aerolink_link::profile::DEFAULT_MTU { r.mode.to_string() } else { format!("{} (space hop MTU {})", r.mode, r.space_mtu) };
            if r.mode == PepMode::None {
                println!("  {mode:<12} {:6.2} Gbit/s", r.gbps);
            } else {
                println!("  {mode:<12} {:6.2} Gbit/s  ({:.2}× none), proxies {:.2} cores = {:.2} cores per Gbit/s", r.gbps, r.gbps / rows[0].gbps.max(1e-9), r.pep_cores, r.pep_cores_per_gbps);
            }
        }
        println!("  target: quic-tunnel ≥ 3 Gbit/s at ≤ 0.3 cores per Gbit/s");
    }
    append_result(&a.out, &v)?;
    Ok(0)
}
