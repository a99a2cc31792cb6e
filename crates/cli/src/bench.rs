//! `aerolink bench emulator`: how fast and how precise the emulator is.
//!
//! Three measurements, side by side in one run so that a noisy machine
//! shows in the ratios rather than hiding in them:
//! 1. TCP goodput (iperf3, 1500-byte MTU) through a link with no rate limit
//!    and no delay, next to the same transfer over a plain veth pair (the
//!    kernel alone) — the ratio is the emulator's cost — and packet by packet
//!    (a 10 Gbit/s cap turns segmentation offload off);
//! 2. the pump threads' CPU time per Gbit/s forwarded;
//! 3. at 100 Mbit/s with 50 ms one-way delay under a full TCP load, the error
//!    between each packet's intended departure time and the moment it was
//!    handed to the kernel (p50, p99, max).
//!
//! `aerolink bench pep`: the PEPs side by side — page loads (10×100 KB, h1
//! and h2) over the gateway chain with no PEP, split TCP and the QUIC
//! tunnel, as ratios to no PEP and to the physical floor; then forwarding
//! goodput with every hop unlimited and the proxies' CPU per Gbit/s.
//!
//! `aerolink bench orchestration` times experiment runs at several degrees
//! of parallelism; `aerolink bench web|bulk|…` repeats one workload.
//!
//! Results print as text (or JSON) and are appended to `bench-results.jsonl`.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

use aerolink_link::profile::Override;
use aerolink_link::Profile;
use aerolink_net::lab::{netns_command, remove_namespace, NS_PREFIX};
use aerolink_net::sys::ip;
use aerolink_net::{Lab, LabReport, LabSpec};
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::Value;

use crate::error::{from_net, user};
use crate::run::run_id;

#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// Throughput, CPU per Gbit/s and departure-time error of the emulator.
    Emulator(EmulatorArgs),
    /// PEPs: page loads of 10×100 KB over h1 and h2 on the gateway chain
    /// around `mss` with no PEP, split TCP and the QUIC tunnel (median of
    /// --repeat runs, ratio to no PEP and to the physical floor); then TCP
    /// goodput with every hop unlimited and the proxies' CPU per Gbit/s.
    Pep(PepBenchArgs),
    /// Orchestration: set-up and tear-down time per run, and runs per hour
    /// of an experiment at several degrees of parallelism.
    Orchestration(OrchestrationArgs),
    /// Load a synthetic page over h1, h1-close, h2 or h3 across a link.
    Web {
        #[command(flatten)]
        common: RunCommon,
        #[command(flatten)]
        params: crate::workload::WebParams,
    },
    /// One bulk transfer over kernel TCP or QUIC across a link.
    Bulk {
        #[command(flatten)]
        common: RunCommon,
        /// tcp or quic.
        #[arg(long, default_value = "tcp")]
        transport: String,
        /// down (ground → aircraft) or up.
        #[arg(long, default_value = "down")]
        direction: String,
        /// Size, e.g. "1MB", "500KB".
        #[arg(long, default_value = "1MB")]
        size: String,
    },
    /// Seed 003's object sets over h3 or h2 across a link.
    Objects {
        #[command(flatten)]
        common: RunCommon,
        #[command(flatten)]
        params: crate::workload::ObjectsParams,
    },
    /// Seed 001's real-time web (WebSocket, SSE, long polling) across a link.
    Realtime {
        #[command(flatten)]
        common: RunCommon,
        #[command(flatten)]
        params: crate::workload::RealtimeParams,
    },
    /// Seed 004's message generator across a link.
    Messages {
        #[command(flatten)]
        common: RunCommon,
        #[command(flatten)]
        params: crate::workload::MessagesParams,
        /// Offered rate, e.g. "1024bit/s" (`--rate` is the link's).
        #[arg(long, default_value = "1024bit/s")]
        offered: String,
    },
}

#[derive(Args, Debug)]
pub struct OrchestrationArgs {
    /// The experiment whose runs are timed.
    #[arg(long, default_value = "experiments/ifc-web.toml")]
    pub experiment: String,
    /// How many of its runs (the first of its shuffled plan, the same set at
    /// every level).
    #[arg(long, default_value_t = 12)]
    pub runs: usize,
    /// Degrees of parallelism to compare, comma-separated.
    #[arg(long, default_value = "1,2,4")]
    pub parallel: String,
    #[arg(long)]
    pub json: bool,
    /// Append the result as one JSON line to FILE.
    #[arg(long, default_value = "bench-results.jsonl", value_name = "FILE")]
    pub out: PathBuf,
}

/// What every workload benchmark takes: the link, repetitions, the knobs.
#[derive(Args, Debug)]
pub struct RunCommon {
    #[command(flatten)]
    pub link: crate::linkargs::LinkArgs,
    #[command(flatten)]
    pub pep: crate::run::PepArgs,
    /// Repetitions (seeds SEED, SEED+1, …).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Give up on a run after this long.
    #[arg(long, default_value = "300s")]
    pub timeout: String,
    /// Reach the server over IPv6.
    #[arg(long)]
    pub ipv6: bool,
    /// Kernel TCP congestion control: reno, cubic (default, as most of the
    /// Internet), bbr.
    #[arg(long, default_value = "cubic")]
    pub cc: String,
    /// Server routes' initial congestion window, segments (kernel default 10).
    #[arg(long)]
    pub initcwnd: Option<u32>,
    /// Leave Nagle's algorithm on.
    #[arg(long)]
    pub nagle: bool,
    #[command(flatten)]
    pub quic: crate::workload::QuicArgs,
}

#[derive(Args, Debug)]
pub struct EmulatorArgs {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 8)]
    pub seconds: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Append the result as one JSON line to FILE.
    #[arg(long, default_value = "bench-results.jsonl", value_name = "FILE")]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct PepBenchArgs {
    /// Seconds per forwarding measurement.
    #[arg(long, default_value_t = 8)]
    pub seconds: u32,
    /// Page loads per protocol and mode (0 skips the page loads).
    #[arg(long, default_value_t = 3)]
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
    /// Goodput when every 1500-byte packet goes through the models one by
    /// one (a 10 Gbit/s rate limit turns segmentation offload off), Gbit/s.
    pub per_packet_gbps: f64,
    /// Pump CPU per Gbit/s on the per-packet path.
    pub per_packet_cpu_cores_per_gbps: f64,
    /// Pump CPU seconds per second of transfer, per Gbit/s.
    pub cpu_cores_per_gbps: f64,
    /// Departure-time error at 100 Mbit/s, 50 ms one way, µs.
    pub delay_error_us_p50: f64,
    pub delay_error_us_p99: f64,
    pub delay_error_us_max: f64,
    pub delay_test_goodput_mbps: f64,
    /// Pump CPU (cores) during the 100 Mbit/s test, polling included.
    pub delay_test_pump_cores: f64,
}

pub fn bench(w: BenchCmd) -> anyhow::Result<i32> {
    use aerolink_lab::workload::Workload;
    let parse_size = |s: &str| aerolink_work::page::parse_bytes(s).ok_or_else(|| user(format!("--size {s}: expected a size like 1MB or 500KB")));
    let (common, workload) = match w {
        BenchCmd::Emulator(a) => return emulator(a),
        BenchCmd::Pep(a) => return pep_bench(a),
        BenchCmd::Orchestration(a) => return orchestration(a),
        BenchCmd::Web { common, params: crate::workload::WebParams { protocol, page, depth } } => (common, Workload::Web { protocol, page, depth }),
        BenchCmd::Bulk { common, transport, direction, size } => {
            let bytes = parse_size(&size)?;
            (common, Workload::Bulk { transport, direction, bytes })
        }
        BenchCmd::Objects { common, params: crate::workload::ObjectsParams { protocol, set, mode } } => (common, Workload::Objects { protocol, set, parallel: mode == "par" }),
        BenchCmd::Realtime { mut common, params: crate::workload::RealtimeParams { mechanism, scenario, count, interval_ms, size, no_nagle } } => {
            common.nagle = !no_nagle;
            (common, Workload::Realtime { mechanism, scenario, count, interval_ms, size })
        }
        BenchCmd::Messages { common, params: crate::workload::MessagesParams { transport, direction, size, duration }, offered } => {
            let r = aerolink_link::units::parse_rate(&offered).map_err(|m| user(format!("--offered {offered}: expected {m}")))?;
            let d = aerolink_link::units::parse_duration(&duration).map_err(|m| user(format!("--duration {duration}: expected {m}")))?;
            (common, Workload::Messages { transport, direction, size, rate_bps: r.bits_per_sec, duration_s: d.as_secs_f64() })
        }
    };
    workload.validate("command line").map_err(user)?;
    workload_bench(common, workload)
}

fn workload_bench(c: RunCommon, workload: aerolink_lab::workload::Workload) -> anyhow::Result<i32> {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let pep = c.pep.spec()?;
    let profile = match c.link.topology.as_deref() {
        Some(crate::run::IFC_PRESET) => crate::linkargs::load_profile(c.link.space.as_deref().unwrap_or("mss"), &c.link.overrides())?,
        Some(other) => return Err(user(format!("--topology {other}: benchmarks run one hop, or the ifc preset (--topology ifc --space PROFILE)"))),
        None if pep.mode != "none" => return Err(user(format!("--pep {}: needs the gateway chain (--topology ifc --space PROFILE)", pep.mode))),
        None => c.link.profile()?,
    };
    let timeout = aerolink_link::units::parse_duration(&c.timeout).map_err(|m| user(format!("--timeout: expected {m}")))?;
    if !aerolink_work::sock::TCP_CCS.contains(&c.cc.as_str()) {
        return Err(user(format!("--cc {}: expected one of {}", c.cc, aerolink_work::sock::TCP_CCS.join(", "))));
    }
    let knobs = aerolink_lab::workload::Knobs { tcp_cc: c.cc.clone(), initcwnd: c.initcwnd, quic: c.quic.knobs()?, nagle: c.nagle, pep: c.link.topology.is_some().then_some(pep) };
    aerolink_net::sys::check_preconditions().map_err(from_net)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let exe = std::env::current_exe()?;
    let mut all = Vec::new();
    let (headline, _) = workload.headline();
    for rep in 0..c.repeat {
        let seed = c.link.seed + rep as u64;
        let req = aerolink_lab::runner::RunRequest {
            exe: exe.clone(),
            run_name: run_id(),
            profile: profile.clone(),
            seed,
            workload: workload.clone(),
            knobs: knobs.clone(),
            timeout: std::time::Duration::from_nanos(timeout.0),
            ipv6: c.ipv6,
        };
        let o = aerolink_lab::runner::run_once(&req, &stop);
        let mut metrics = if o.ok { workload.metrics(&o.result) } else { Default::default() };
        aerolink_lab::workload::add_rtt_metrics(&mut metrics, profile.base_rtt().as_millis_f64());
        if !c.json {
            if o.ok {
                let m: Vec<String> = metrics.iter().map(|(k, v)| format!("{k} {}", fmt_metric(k, *v))).collect();
                eprintln!("run {}/{} (seed {seed}): {}; link carried {:.1} KB down, {:.1} KB up", rep + 1, c.repeat, m.join(", "), o.wire_bytes_down as f64 / 1e3, o.wire_bytes_up as f64 / 1e3);
            } else {
                eprintln!("run {}/{} (seed {seed}) failed: {}", rep + 1, c.repeat, o.error.clone().unwrap_or_default());
            }
        }
        all.push(serde_json::json!({
            "workload": workload, "protocol": workload.protocol(), "profile": profile.name, "seed": seed,
            "knobs": knobs, "metrics": metrics, "outcome": o,
        }));
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
    }
    if c.json {
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        let mut v: Vec<f64> = all.iter().filter_map(|r| r["metrics"][headline].as_f64()).collect();
        v.sort_by(f64::total_cmp);
        if !v.is_empty() {
            println!(
                "{} {} on {}: {headline} median {} over {} run(s) (min {}, max {})",
                workload.name(),
                workload.protocol(),
                match &knobs.pep {
                    Some(p) => format!("ifc around {} via {}", profile.name, p.label()),
                    None => profile.name.clone(),
                },
                fmt_metric(headline, v[v.len() / 2]),
                v.len(),
                fmt_metric(headline, v[0]),
                fmt_metric(headline, v[v.len() - 1])
            );
        }
    }
    let failed = all.iter().filter(|r| r["outcome"]["ok"] != true).count();
    Ok(if failed > 0 { 1 } else { 0 })
}

pub fn fmt_metric(k: &str, v: f64) -> String {
    if k.ends_with("_ms") || k.contains("_ms_") {
        if v >= 1000.0 { format!("{:.2} s", v / 1e3) } else { format!("{v:.1} ms") }
    } else if k.contains("bps") {
        if v >= 1e6 { format!("{:.2} Mbit/s", v / 1e6) } else { format!("{:.1} kbit/s", v / 1e3) }
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

fn need(tool: &str) -> anyhow::Result<()> {
    if std::process::Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
        return Err(user(format!("{tool} is needed for this benchmark: apt-get install {tool}")));
    }
    Ok(())
}

fn flags(pairs: &[(&str, &str)]) -> Vec<Override> {
    pairs.iter().map(|(k, v)| Override { scope: "link".into(), key: k.to_string(), value: v.to_string(), flag: format!("--{k}") }).collect()
}

/// Runs iperf3 between two namespaces and returns received goodput (bit/s).
fn iperf(server_ns: &str, client_ns: &str, server_ip: &str, env: &[(String, String)], seconds: u32) -> anyhow::Result<f64> {
    let mut server = netns_command(server_ns, &["iperf3", "-s", "-1", "-B", server_ip], env).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    // Wait until it listens, without sleeping blindly.
    let pid = server.id();
    for _ in 0..500 {
        if !aerolink_net::procs::sockets(pid).tcp_listening.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let secs = seconds.to_string();
    let out = netns_command(client_ns, &["iperf3", "-c", server_ip, "-t", &secs, "-J", "-C", "cubic"], env).output()?;
    crate::run::kill_group(&mut server);
    let v: Value = serde_json::from_slice(&out.stdout).context("iperf3 printed no JSON")?;
    if let Some(e) = v.get("error") {
        bail!("iperf3: {e}");
    }
    v["end"]["sum_received"]["bits_per_second"].as_f64().context("iperf3 JSON has no sum_received")
}

fn through_lab(profile: Profile, seconds: u32) -> anyhow::Result<(f64, LabReport)> {
    let spec = LabSpec { run: run_id(), hosts: vec!["client".into(), "server".into()], hops: vec![profile], seed: 1, log_meta: vec![] };
    let lab = Lab::build(&spec, None).map_err(from_net)?;
    let (c, s) = (lab.hosts[0].netns.clone(), lab.hosts[1].netns.clone());
    let bps = iperf(&s, &c, &lab.hosts[1].ipv4.clone(), &lab.env(), seconds);
    let rep = lab.shutdown();
    Ok((bps?, rep))
}

fn through_veth(seconds: u32) -> anyhow::Result<f64> {
    let id = run_id();
    let (a, b) = (format!("{NS_PREFIX}{id}-vetha"), format!("{NS_PREFIX}{id}-vethb"));
    let result = (|| -> anyhow::Result<f64> {
        ip(&["netns", "add", &a]).map_err(from_net)?;
        ip(&["netns", "add", &b]).map_err(from_net)?;
        ip(&["-n", &a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", &b]).map_err(from_net)?;
        ip(&["-n", &a, "addr", "add", "198.19.0.1/24", "dev", "va"]).map_err(from_net)?;
        ip(&["-n", &b, "addr", "add", "198.19.0.2/24", "dev", "vb"]).map_err(from_net)?;
        for (ns, d) in [(&a, "va"), (&b, "vb")] {
            ip(&["-n", ns, "link", "set", d, "up"]).map_err(from_net)?;
            ip(&["-n", ns, "link", "set", "lo", "up"]).map_err(from_net)?;
        }
        iperf(&b, &a, "198.19.0.2", &[], seconds)
    })();
    remove_namespace(&a);
    remove_namespace(&b);
    result
}

/// Appends a result as one JSON line to `out`.
fn append_result(out: &std::path::Path, r: &impl Serialize) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(out).with_context(|| format!("opening {}", out.display()))?;
    writeln!(f, "{}", serde_json::to_string(r)?)?;
    eprintln!("stored in {}", out.display());
    Ok(())
}

/// CPU seconds (user + system, all threads) a process has used.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime is the
    // 12th, stime the 13th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0.0)).collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    if f.len() > 12 { (f[11] + f[12]) / hz } else { 0.0 }
}

#[derive(Serialize, Debug)]
pub struct PepBenchRow {
    pub mode: String,
    pub gbps: f64,
    /// Proxy CPU (all proxy processes) per Gbit/s of goodput.
    pub pep_cores_per_gbps: f64,
    pub pep_cores: f64,
}

#[derive(Serialize, Debug)]
pub struct PltRow {
    pub protocol: String,
    pub mode: String,
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
    use aerolink_lab::workload::{Knobs, Workload};
    let space = crate::linkargs::load_profile(&a.space, &[])?;
    let page = aerolink_work::page::Page::parse("10x100KB", 1).map_err(anyhow::Error::msg)?;
    let floor_ms = 3.0 * space.base_rtt().as_millis_f64() + page.total_bytes() as f64 * 8.0 / (space.down.capacity_bps().unwrap_or(f64::INFINITY) * (1.0 - space.down.mean_loss())) * 1e3;
    let exe = std::env::current_exe()?;
    let mut rows: Vec<PltRow> = Vec::new();
    for protocol in ["h1", "h2"] {
        for mode in ["none", "split-tcp", "quic-tunnel"] {
            let mut v = Vec::new();
            let mut failed = 0;
            for rep in 0..a.repeat {
                eprintln!("page load {protocol} via {mode}, {}/{} …", rep + 1, a.repeat);
                let req = aerolink_lab::runner::RunRequest {
                    exe: exe.clone(),
                    run_name: run_id(),
                    profile: space.clone(),
                    seed: 1 + rep as u64,
                    workload: Workload::Web { protocol: protocol.into(), page: "10x100KB".into(), depth: 1 },
                    knobs: Knobs { pep: Some(aerolink_lab::gateways::PepSpec { mode: mode.into(), ..Default::default() }), ..Knobs::default() },
                    timeout: std::time::Duration::from_secs(300),
                    ipv6: false,
                };
                let o = aerolink_lab::runner::run_once(&req, stop);
                match o.result["plt_ms"].as_f64() {
                    Some(t) if o.ok => v.push(t),
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
            let none = rows.iter().find(|r| r.protocol == protocol && r.mode == "none").map(|r| r.median_ms).unwrap_or(median);
            rows.push(PltRow { protocol: protocol.into(), mode: mode.into(), plt_ms: v, median_ms: median, ratio_to_none: median / none, ratio_to_floor: median / floor_ms, failed });
        }
    }
    Ok((floor_ms, rows))
}

fn pep_bench(a: PepBenchArgs) -> anyhow::Result<i32> {
    need("iperf3")?;
    aerolink_net::sys::check_preconditions().map_err(from_net)?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let (floor_ms, plt) = if a.repeat > 0 { pep_plt(&a, &stop)? } else { (0.0, Vec::new()) };
    let load = &mut |_: &str| Err::<String, String>("no files".into());
    let open = Profile::from_overrides(&flags(&[("rate", "unlimited")]), load).map_err(|e| user(e.to_string()))?;
    let exe = std::env::current_exe()?;
    let mut rows = Vec::new();
    for (i, mode) in ["none", "split-tcp", "quic-tunnel"].iter().enumerate() {
        eprintln!("bench {}/3: TCP download through the gateway chain, every hop unlimited, pep {mode} ({} s)…", i + 1, a.seconds);
        let hosts = aerolink_lab::gateways::HOSTS.iter().map(|s| s.to_string()).collect();
        let spec = LabSpec { run: run_id(), hosts, hops: vec![open.clone(); 3], seed: 1, log_meta: vec![] };
        let lab = Lab::build(&spec, None).map_err(from_net)?;
        let pep = aerolink_lab::gateways::PepSpec { mode: mode.to_string(), ..Default::default() };
        let dir = std::env::temp_dir().join(format!("aerolink-{}", spec.run));
        let r = (|| -> anyhow::Result<PepBenchRow> {
            let gw = aerolink_lab::gateways::Gateways::start(&lab, &exe, &pep, &dir, true).map_err(anyhow::Error::msg)?;
            let pids: Vec<u32> = gw.processes().into_iter().map(|(_, p)| p).collect();
            let before: f64 = pids.iter().map(|p| cpu_seconds(*p)).sum();
            let (c, s) = (lab.hosts[0].netns.clone(), lab.hosts[3].netns.clone());
            let bps = iperf(&s, &c, &lab.hosts[3].ipv4.clone(), &lab.env(), a.seconds)?;
            let cores = (pids.iter().map(|p| cpu_seconds(*p)).sum::<f64>() - before) / a.seconds as f64;
            let gbps = bps / 1e9;
            Ok(PepBenchRow { mode: mode.to_string(), gbps, pep_cores: cores, pep_cores_per_gbps: if gbps > 0.0 && *mode != "none" { cores / gbps } else { 0.0 } })
        })();
        lab.shutdown();
        let _ = std::fs::remove_dir_all(&dir);
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
                println!("  {} {:<12} {:6.2} s   {:.2}× none   {:.2}× floor{}", r.protocol, r.mode, r.median_ms / 1e3, r.ratio_to_none, r.ratio_to_floor, if r.failed > 0 { format!("   ({} failed)", r.failed) } else { String::new() });
            }
            println!("  targets: quic-tunnel ≤ 1/3 of none and ≤ 1.5× floor");
        }
        println!("aerolink PEP forwarding benchmark (every hop unlimited; iperf3 download, {} s each)", a.seconds);
        for r in &rows {
            if r.mode == "none" {
                println!("  {:<12} {:6.2} Gbit/s", r.mode, r.gbps);
            } else {
                println!("  {:<12} {:6.2} Gbit/s  ({:.2}× none), proxies {:.2} cores = {:.2} cores per Gbit/s", r.mode, r.gbps, r.gbps / rows[0].gbps.max(1e-9), r.pep_cores, r.pep_cores_per_gbps);
            }
        }
    }
    append_result(&a.out, &v)?;
    Ok(0)
}

fn emulator(a: EmulatorArgs) -> anyhow::Result<i32> {
    need("iperf3")?;
    aerolink_net::sys::check_preconditions().map_err(from_net)?;
    let load = &mut |_: &str| Err::<String, String>("no files".into());
    eprintln!("bench 1/4: TCP through aerolink, no rate limit, no delay ({} s)…", a.seconds);
    let open = Profile::from_overrides(&flags(&[("rate", "unlimited")]), load).map_err(|e| user(e.to_string()))?;
    let (pass_bps, pass_rep) = through_lab(open, a.seconds)?;
    eprintln!("bench 2/4: TCP over a plain veth pair ({} s)…", a.seconds);
    let veth_bps = through_veth(a.seconds)?;
    eprintln!("bench 3/4: TCP through aerolink packet by packet, 10 Gbit/s cap ({} s)…", a.seconds);
    let capped = Profile::from_overrides(&flags(&[("rate", "10 Gbit/s")]), load).map_err(|e| user(e.to_string()))?;
    let (pp_bps, pp_rep) = through_lab(capped, a.seconds)?;
    eprintln!("bench 4/4: TCP at 100 Mbit/s, 50 ms one way ({} s)…", a.seconds);
    let slow = Profile::from_overrides(&flags(&[("rate", "100 Mbit/s"), ("delay", "50 ms")]), load).map_err(|e| user(e.to_string()))?;
    let (slow_bps, slow_rep) = through_lab(slow, a.seconds)?;
    let cpu: f64 = pass_rep.directions.iter().map(|d| d.cpu_s).sum();
    let gbps = pass_bps / 1e9;
    let pp_cpu: f64 = pp_rep.directions.iter().map(|d| d.cpu_s).sum();
    let slow_cpu: f64 = slow_rep.directions.iter().map(|d| d.cpu_s).sum();
    // Worst direction for the error figures (the data direction, in practice).
    let worst = slow_rep
        .directions
        .iter()
        .max_by(|x, y| x.lateness_us_p99.total_cmp(&y.lateness_us_p99))
        .context("no pump report")?;
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default().trim().to_string();
    let r = EmulatorResult {
        bench: "emulator",
        version: env!("CARGO_PKG_VERSION"),
        host,
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        unix_time: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        seconds: a.seconds,
        passthrough_gbps: gbps,
        veth_gbps: veth_bps / 1e9,
        ratio_to_veth: pass_bps / veth_bps,
        per_packet_gbps: pp_bps / 1e9,
        per_packet_cpu_cores_per_gbps: if pp_bps > 0.0 { pp_cpu / a.seconds as f64 / (pp_bps / 1e9) } else { 0.0 },
        cpu_cores_per_gbps: if gbps > 0.0 { cpu / a.seconds as f64 / gbps } else { 0.0 },
        delay_error_us_p50: worst.lateness_us_p50,
        delay_error_us_p99: worst.lateness_us_p99,
        delay_error_us_max: worst.lateness_us_max,
        delay_test_goodput_mbps: slow_bps / 1e6,
        delay_test_pump_cores: slow_cpu / a.seconds as f64,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!("aerolink emulator benchmark ({} cores, {} s per measurement)", r.cpus, r.seconds);
        println!("  TCP goodput, no rate limit, no delay: {:.2} Gbit/s   (plain veth: {:.2} Gbit/s, ratio {:.2})", r.passthrough_gbps, r.veth_gbps, r.ratio_to_veth);
        println!("  pump CPU: {:.3} cores per Gbit/s (segmentation offload: TCP bursts of up to 64 KB pass as one)", r.cpu_cores_per_gbps);
        println!("  packet by packet (1500 B, 10 Gbit/s cap): {:.2} Gbit/s, {:.2} cores per Gbit/s", r.per_packet_gbps, r.per_packet_cpu_cores_per_gbps);
        println!(
            "  departure-time error at 100 Mbit/s, 50 ms: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs   (TCP goodput {:.1} Mbit/s)",
            r.delay_error_us_p50, r.delay_error_us_p99, r.delay_error_us_max, r.delay_test_goodput_mbps
        );
        println!("  pump CPU during that test: {:.2} cores (it polls instead of sleeping just before departures, for as long as this machine's timer wake-ups are late)", r.delay_test_pump_cores);
        println!("  targets: ≥ 2 Gbit/s; p99 ≤ 100 µs");
    }
    append_result(&a.out, &r)?;
    Ok(0)
}

fn orchestration(a: OrchestrationArgs) -> anyhow::Result<i32> {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let levels: Vec<usize> = a.parallel.split(',').map(|x| x.trim().parse::<usize>().ok().filter(|n| (1..=64).contains(n))).collect::<Option<_>>().ok_or_else(|| user(format!("--parallel {}: expected numbers like 1,2,4", a.parallel)))?;
    let e = Arc::new(crate::experiment::load(&a.experiment)?);
    aerolink_net::sys::check_preconditions().map_err(from_net)?;
    let plan: Vec<_> = e.plan().into_iter().take(a.runs).collect();
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let exe = std::env::current_exe()?;
    let mut rows = Vec::new();
    for &p in &levels {
        eprintln!("{} runs of {} at --parallel {p}…", plan.len(), e.name);
        let t0 = std::time::Instant::now();
        let (rx, workers) = aerolink_lab::pool::start(e.clone(), plan.clone(), p, exe.clone(), run_id(), stop.clone());
        let outs: Vec<aerolink_lab::runner::RunOutcome> = rx.into_iter().map(|f| f.outcome).collect();
        for w in workers {
            let _ = w.join();
        }
        let wall = t0.elapsed().as_secs_f64();
        let med = |f: &dyn Fn(&aerolink_lab::runner::RunOutcome) -> f64| {
            let mut v: Vec<f64> = outs.iter().filter(|o| o.ok).map(f).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let row = serde_json::json!({
            "parallel": p, "runs": outs.len(), "failed": outs.iter().filter(|o| !o.ok).count(), "wall_s": wall,
            "runs_per_hour": outs.len() as f64 / wall * 3600.0,
            "setup_ms_median": med(&|o| o.setup_ms), "teardown_ms_median": med(&|o| o.teardown_ms),
            "client_s_median": med(&|o| o.client_ms / 1e3),
        });
        eprintln!("  {:.0} s: {:.0} runs/hour, set-up {:.0} ms and tear-down {:.0} ms per run (median)", wall, row["runs_per_hour"].as_f64().unwrap_or(0.0), row["setup_ms_median"].as_f64().unwrap_or(0.0), row["teardown_ms_median"].as_f64().unwrap_or(0.0));
        rows.push(row);
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
    }
    let base = rows.first().and_then(|r| r["runs_per_hour"].as_f64()).unwrap_or(1.0);
    let result = serde_json::json!({
        "bench": "orchestration", "version": env!("CARGO_PKG_VERSION"), "experiment": e.name, "runs": plan.len(),
        "unix_time": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        "levels": rows,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        println!("aerolink orchestration benchmark: {} runs of {}", plan.len(), e.name);
        for r in result["levels"].as_array().into_iter().flatten() {
            let rph = r["runs_per_hour"].as_f64().unwrap_or(0.0);
            println!(
                "  --parallel {}: {:.0} runs/hour ({:.2}× --parallel 1), {} failed; per run: set-up {:.0} ms, tear-down {:.0} ms (median)",
                r["parallel"], rph, rph / base, r["failed"], r["setup_ms_median"].as_f64().unwrap_or(0.0), r["teardown_ms_median"].as_f64().unwrap_or(0.0)
            );
        }
    }
    append_result(&a.out, &result)?;
    Ok(0)
}
