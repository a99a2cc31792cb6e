//! aerolink-bench: the benchmarks of `aerolink bench …` (the binary parses
//! [`BenchCmd`] and calls [`bench`]). Each prints figures a person can
//! paste into a note and appends them to `bench-results.jsonl`.
//!
//! [`emulator`]: how fast and how precise the emulator is.
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
//! [`pep`]: the PEPs side by side — page loads (10×100 KB, h1
//! and h2) over the gateway chain with no PEP, split TCP and the QUIC
//! tunnel, as ratios to no PEP and to the physical floor; then forwarding
//! goodput with every hop unlimited and the proxies' CPU per Gbit/s.
//!
//! [`parallel`]: accuracy while other links load the machine — a delay
//! probe's round trips and each saturated link's goodput at N = 0…4 links
//! at once; what it finds safe bounds the experiment runner's parallelism.
//!
//! [`fleet`]: many links on one host — set-up, pump CPU per link and per
//! packet, departure error and fairness at N = 1, 10, 100… terminals.
//!
//! [`orchestration`] times experiment runs at several degrees
//! of parallelism; `aerolink bench web|bulk|…` repeats one workload.
//!
//! Results print as text (or JSON) and are appended to `bench-results.jsonl`.

mod emulator;
mod fleet;
mod flight;
mod orchestration;
mod parallel;
mod pep;
mod queue;
mod sat;

pub use emulator::EmulatorArgs;

/// A mistake in the benchmark's flags or files: exit status 2.
fn user(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(aerolink_experiments::UserError(msg.into()))
}
pub use fleet::FleetArgs;
pub use flight::FlightArgs;
pub use orchestration::OrchestrationArgs;
pub use parallel::ParallelArgs;
pub use pep::PepBenchArgs;
pub use queue::QueueArgs;

use std::io::Write;
use std::process::Stdio;

use aerolink_link::profile::Override;
use aerolink_net::lab::netns_command;
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::Value;

use aerolink_link::units::Rate;
use aerolink_net::run_id;
use aerolink_pep::cli::PepMode;
use aerolink_work::bulk::Direction as BulkDirection;
use aerolink_work::cli::{duration_arg, rate_arg, MessagesParams, ObjectsParams, RealtimeParams, ServeArgs, WebClientArgs, WebParams};
use aerolink_work::sock::TcpCc;
use aerolink_work::web::ObjectsMode;
use aerolink_work::Transport;
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
    /// The default queue: one TCP flow's goodput with it against an
    /// unlimited queue, on every built-in profile and at several rates with
    /// `--rtt 0ms` (target ≥ 0.95).
    Queue(QueueArgs),
    /// The flight measurement loop: the probe agent over an MSS link with
    /// known bursty loss, jitter and an outage, and over `da2gc`; the
    /// fitted values beside the truth with their 95 % intervals (delays
    /// allowing for the lab's own latency, which a third flight over a link
    /// with no delay measures at the same time); a replay of the fitted
    /// profile tested against the flight (loss per window).
    Flight(FlightArgs),
    /// Accuracy under load: N saturated 100 Mbit/s links (N = 0…4) beside
    /// one delay probe (ping over 300 ms), all at once; the probe's round
    /// trips against the configured RTT and each link's goodput against one
    /// alone; beside them, how late a plain thread's 1 ms sleeps woke (the
    /// machine's own pauses). The largest N that meets the targets is this
    /// machine's safe parallelism.
    Parallel(ParallelArgs),
    /// Many links on one host: N = 1, 10, 100… terminals (each its own
    /// lab and link, all at once) with a TCP download at their link's
    /// rate or a ping a second, and a delay probe beside them: set-up and
    /// tear-down per terminal, pump CPU per link and per packet, departure
    /// error p50/p99/max, the downloads' fairness (Jain's index), the
    /// pings' mean against the configured RTT; e.g. `aerolink bench fleet
    /// --terminals 1,10,100 --load download --rate 2Mbit/s`.
    Fleet(FleetArgs),
    /// Downloads of 2, 10 and 100 MB at 650 ms RTT on the QUIC-over-
    /// satellite targets' links (10/2, 50/10, 250/3 Mbit/s, with 1 % and
    /// burst loss), for kernel TCP cubic and BBR, quinn's defaults, the
    /// `sat` preset and TCP through the QUIC tunnel with it: each time
    /// against its target, side by side (about 25 minutes for all).
    SatTargets(sat::SatTargetsArgs),
    /// Load a synthetic page over h1, h1-close, h2 or h3 across a link.
    Web {
        #[command(flatten)]
        common: RunCommon,
        #[command(flatten)]
        params: WebParams,
        #[command(flatten)]
        client: WebClientArgs,
    },
    /// Load a page in a real browser (headless Chromium) across a link:
    /// paint and load timings, connections per origin, the protocol of
    /// every request; e.g. `aerolink bench browser --profile mss --page
    /// news --protocol h3 --repeat 10 --har news.har`.
    Browser {
        #[command(flatten)]
        common: RunCommon,
        #[command(flatten)]
        params: aerolink_work::cli::BrowserParams,
        /// Write each load's HAR 1.2 here (with --repeat, FILE-seedN.har).
        #[arg(long, value_name = "FILE")]
        har: Option<std::path::PathBuf>,
        /// Write a screenshot after onload here (with --repeat, per seed).
        #[arg(long, value_name = "FILE")]
        screenshot: Option<std::path::PathBuf>,
        /// Chromium writes its net log here (JSON; Chrome's netlog viewer
        /// reads it; with --repeat, per seed).
        #[arg(long, value_name = "FILE")]
        net_log: Option<std::path::PathBuf>,
    },
    /// One bulk transfer over kernel TCP or QUIC across a link.
    Bulk {
        #[command(flatten)]
        common: RunCommon,
        #[arg(long, default_value = "tcp")]
        transport: Transport,
        /// down (ground → aircraft) or up.
        #[arg(long, default_value = "down")]
        direction: BulkDirection,
        /// Size, e.g. "1MB", "500KB".
        #[arg(long, default_value = "1MB")]
        size: String,
        #[command(flatten)]
        tcp: aerolink_work::cli::TcpClientArgs,
    },
    /// Seed 003's object sets over h3 or h2 across a link.
    Objects {
        #[command(flatten)]
        common: RunCommon,
        #[command(flatten)]
        params: ObjectsParams,
    },
    /// Seed 001's real-time web (WebSocket, SSE, long polling) across a link.
    Realtime {
        #[command(flatten)]
        common: RunCommon,
        #[command(flatten)]
        params: RealtimeParams,
    },
    /// Seed 004's message generator across a link.
    Messages {
        #[command(flatten)]
        common: RunCommon,
        #[command(flatten)]
        params: MessagesParams,
        /// Offered rate, e.g. "1024bit/s" (`--rate` is the link's).
        #[arg(long, default_value = "1024bit/s", value_parser = rate_arg)]
        offered: Rate,
    },
}

/// What every workload benchmark takes: the link, repetitions, the knobs.
#[derive(Args, Debug)]
pub struct RunCommon {
    #[command(flatten)]
    pub link: aerolink_experiments::linkargs::LinkArgs,
    #[command(flatten)]
    pub pep: aerolink_experiments::gateways::PepSpec,
    /// Repetitions (seeds SEED, SEED+1, …).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Give up on a run after this long.
    #[arg(long, default_value = "300s", value_parser = duration_arg)]
    pub timeout: aerolink_link::Duration,
    /// Reach the server over IPv6.
    #[arg(long)]
    pub ipv6: bool,
    /// The workload server's settings (the same flags as `workload serve`).
    #[command(flatten)]
    pub server: ServeArgs,
    /// The bulk client's TCP settings (`bench bulk` sets them).
    #[arg(skip)]
    pub tcp: aerolink_work::cli::TcpClientArgs,
    /// The web client's settings (`bench web` sets them).
    #[arg(skip)]
    pub web: WebClientArgs,
    /// Capture each run into DIR (with --repeat, DIR/seedN): a pcapng file
    /// per hop with each packet's fate, as `aerolink run --pcap`.
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<std::path::PathBuf>,
}

pub fn bench(w: BenchCmd) -> anyhow::Result<i32> {
    use aerolink_experiments::workload::Workload;
    let parse_size = |s: &str| aerolink_work::page::parse_bytes(s).ok_or_else(|| user(format!("--size {s}: expected a size like 1MB or 500KB")));
    let (common, workload) = match w {
        BenchCmd::Emulator(a) => {
            stop_flag();
            return exit_on_interrupt(emulator::run(a));
        }
        BenchCmd::Pep(a) => {
            stop_flag();
            return exit_on_interrupt(pep::run(a));
        }
        BenchCmd::Queue(a) => {
            stop_flag();
            return exit_on_interrupt(queue::run(a));
        }
        BenchCmd::Flight(a) => return flight::run(a),
        BenchCmd::Parallel(a) => {
            stop_flag();
            return exit_on_interrupt(parallel::run(a));
        }
        BenchCmd::Fleet(a) => {
            stop_flag();
            return exit_on_interrupt(fleet::run(a));
        }
        BenchCmd::Orchestration(a) => return orchestration::run(a),
        BenchCmd::SatTargets(a) => return exit_on_interrupt(sat::run(a)),
        BenchCmd::Web { mut common, params: WebParams { protocol, page, depth }, client } => {
            common.web = client;
            (common, Workload::Web(aerolink_experiments::workload::Web { protocol, page, depth, resolver: None }))
        }
        BenchCmd::Browser { common, params, har, screenshot, net_log } => {
            let abs = |p: Option<std::path::PathBuf>| p.map(|p| std::path::absolute(&p).unwrap_or(p));
            (
                common,
                Workload::Browser(aerolink_experiments::workload::Browser {
                    protocol: params.protocol,
                    page: params.page,
                    warm: params.warm,
                    resolver: None,
                    proxy: false,
                    intercepted: false,
                    har: abs(har),
                    screenshot: abs(screenshot),
                    net_log: abs(net_log),
                }),
            )
        }
        BenchCmd::Bulk { mut common, transport, direction, size, tcp } => {
            let bytes = parse_size(&size)?;
            common.tcp = tcp;
            (common, Workload::Bulk(aerolink_experiments::workload::Bulk { transport, direction, bytes }))
        }
        BenchCmd::Objects { common, params: ObjectsParams { protocol, set, mode } } => {
            (common, Workload::Objects(aerolink_experiments::workload::Objects { protocol, set, parallel: mode == ObjectsMode::Par }))
        }
        BenchCmd::Realtime { mut common, params: RealtimeParams { mechanism, scenario, count, interval_ms, size, no_nagle } } => {
            common.server.nagle = !no_nagle;
            (common, Workload::Realtime(aerolink_experiments::workload::Realtime { mechanism, scenario, count, interval_ms, size }))
        }
        BenchCmd::Messages { common, params: MessagesParams { transport, direction, size, duration }, offered } => {
            (common, Workload::Messages(aerolink_experiments::workload::Messages { transport, direction, size, rate_bps: offered.bits_per_sec, duration_s: duration.as_secs_f64(), down: None }))
        }
    };
    workload.validate().map_err(|e| user(format!("command line: {e}")))?;
    workload_bench(common, workload)
}

fn workload_bench(c: RunCommon, workload: aerolink_experiments::workload::Workload) -> anyhow::Result<i32> {
    let pep = c.pep.checked_flags()?;
    let profile = match c.link.topology.as_deref() {
        Some(aerolink_experiments::topology::IFC_PRESET) => aerolink_experiments::linkargs::load_profile(c.link.space.as_deref().unwrap_or("mss"), &c.link.overrides()?)?,
        Some(other) => return Err(user(format!("--topology {other}: benchmarks run one hop, or the ifc preset (--topology ifc --space PROFILE)"))),
        None if pep.mode != PepMode::None => return Err(user(format!("--pep {}: needs the gateway chain (--topology ifc --space PROFILE)", pep.mode))),
        None => c.link.profile()?,
    };
    let timeout = c.timeout;
    let s = &c.server;
    let knobs = aerolink_experiments::workload::Knobs {
        tcp_cc: s.cc,
        initcwnd: s.initcwnd,
        quic: s.quic.knobs(),
        nagle: s.nagle,
        push: s.push,
        tcp: c.tcp,
        pep: c.link.topology.is_some().then_some(pep),
        ipv6: c.ipv6,
        h2_window: c.web.h2_window,
        ..Default::default()
    };
    knobs.quic.validate().map_err(user)?;
    aerolink_net::sys::check_preconditions()?;
    let stop = stop_flag().clone();
    let exe = std::env::current_exe()?;
    let mut all = Vec::new();
    let headline = workload.headline();
    let mut v: Vec<f64> = Vec::new();
    for rep in 0..c.repeat {
        let seed = c.link.seed + rep as u64;
        let workload = per_seed(&workload, seed, c.repeat);
        let req = aerolink_experiments::runner::RunRequest {
            exe: exe.clone(),
            run_name: run_id(),
            profile: profile.clone(),
            chain: if c.link.topology.is_some() { aerolink_experiments::experiment::Chain::Ifc } else { aerolink_experiments::experiment::Chain::Direct },
            seed,
            workload: workload.clone(),
            knobs: knobs.clone(),
            timeout: std::time::Duration::from_nanos(timeout.0),
            pcap: c.pcap.as_ref().map(|d| aerolink_net::pcap::PcapSpec::whole(if c.repeat > 1 { d.join(format!("seed{seed}")) } else { d.clone() })),
            traces: None,
            live: None,
            pump: aerolink_net::lab::PumpMode::Thread,
        };
        // On a terminal, a spinner with the elapsed time while the run goes.
        let spinner = (!c.json && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_style(indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}").unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()));
            b.set_message(format!("run {}/{} (seed {seed}): {} over {}…", rep + 1, c.repeat, workload.protocol(), profile.name));
            b.enable_steady_tick(std::time::Duration::from_millis(120));
            b
        });
        let o = aerolink_experiments::runner::run_once(&req, &stop);
        if let Some(b) = spinner {
            b.finish_and_clear();
        }
        let mut metrics = o.result.as_ref().filter(|_| o.ok).map(|r| r.metrics()).unwrap_or_default();
        aerolink_experiments::workload::add_rtt_metrics(&mut metrics, profile.base_rtt().as_millis_f64());
        if !c.json {
            if o.ok {
                let m: Vec<String> = metrics.iter().map(|(k, v)| format!("{k} {}", k.fmt(*v))).collect();
                eprintln!("run {}/{} (seed {seed}): {}; link carried {:.1} KB down, {:.1} KB up", rep + 1, c.repeat, m.join(", "), o.wire_bytes_down as f64 / 1e3, o.wire_bytes_up as f64 / 1e3);
            } else {
                eprintln!("run {}/{} (seed {seed}) failed: {}", rep + 1, c.repeat, o.error.clone().unwrap_or_default());
            }
        }
        v.extend(metrics.get(&headline).filter(|x| x.is_finite()));
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
    } else if !v.is_empty() {
        let link = match &knobs.pep {
            Some(p) => format!("ifc around {} via {}", profile.name, p.label()),
            None => profile.name.clone(),
        };
        println!("{}", summary_line(&workload, &link, &mut v));
    }
    let failed = all.iter().filter(|r| r["outcome"]["ok"] != true).count();
    Ok(if failed > 0 { 1 } else { 0 })
}

/// "web h2 on mss: plt_ms median 1.23 s over 5 run(s) (min …, max …)".
fn summary_line(workload: &aerolink_experiments::workload::Workload, link: &str, v: &mut [f64]) -> String {
    v.sort_by(f64::total_cmp);
    let headline = workload.headline();
    // "web h2", "bulk tcp", but "browser h3" (its protocol names it).
    let what = match workload.protocol() {
        p if p.starts_with(workload.name()) => p,
        p => format!("{} {p}", workload.name()),
    };
    let (lo, med, hi) = (headline.fmt(v[0]), headline.fmt(v[v.len() / 2]), headline.fmt(v[v.len() - 1]));
    format!("{what} on {link}: {headline} median {med} over {} run(s) (min {lo}, max {hi})", v.len())
}

/// With several repetitions, each browser load writes its own files.
fn per_seed(w: &aerolink_experiments::workload::Workload, seed: u64, repeat: u32) -> aerolink_experiments::workload::Workload {
    use aerolink_experiments::workload::Workload;
    let tag = |p: &Option<std::path::PathBuf>| {
        p.as_ref().map(|p| {
            let stem = p.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
            let ext = p.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
            p.with_file_name(format!("{stem}-seed{seed}{ext}"))
        })
    };
    match w {
        Workload::Browser(b) if repeat > 1 => Workload::Browser(aerolink_experiments::workload::Browser { har: tag(&b.har), screenshot: tag(&b.screenshot), net_log: tag(&b.net_log), ..b.clone() }),
        other => other.clone(),
    }
}

/// `--seconds` of a measurement step: 1 s to an hour (0 would measure
/// nothing, and iperf3 reads `-t 0` as "forever").
fn step_seconds() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=3600)
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

/// Runs iperf3 between two namespaces and returns received goodput (bit/s):
/// client to server, or server to client when `down`.
fn iperf(server_ns: &str, client_ns: &str, server_ip: &str, env: &[(String, String)], seconds: u32, down: bool) -> anyhow::Result<f64> {
    iperf_cc(server_ns, client_ns, server_ip, env, seconds, down, TcpCc::Cubic)
}

/// The same with the TCP congestion control `cc`.
#[allow(clippy::too_many_arguments)]
fn iperf_cc(server_ns: &str, client_ns: &str, server_ip: &str, env: &[(String, String)], seconds: u32, down: bool, cc: TcpCc) -> anyhow::Result<f64> {
    let mut server = netns_command(server_ns, &["iperf3", "-s", "-1", "-B", server_ip], env).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    // If it never listens, the client's error says so.
    let _ = aerolink_net::procs::wait_listening(&mut server, &[], std::time::Duration::from_secs(5), || false);
    let secs = seconds.to_string();
    let mut argv = vec!["iperf3", "-c", server_ip, "-t", &secs, "-J", "-C", cc.as_str()];
    if down {
        argv.push("-R");
    }
    let client = netns_command(client_ns, &argv, env).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
    let out = wait_interruptibly(client);
    aerolink_net::procs::kill_process_group(&mut server, std::time::Duration::from_millis(500));
    let out = out?;
    let v: Value = serde_json::from_slice(&out.stdout).context("iperf3 printed no JSON")?;
    if let Some(e) = v.get("error") {
        bail!("iperf3: {e}");
    }
    v["end"]["sum_received"]["bits_per_second"].as_f64().context("iperf3 JSON has no sum_received")
}

/// Waits for a benchmark's program (the leader of its own process group,
/// as `netns_command` starts it) and its output; SIGINT/SIGTERM kills the
/// group at once, so the caller still removes its lab, and returns
/// [`Interrupted`].
fn wait_interruptibly(child: std::process::Child) -> anyhow::Result<std::process::Output> {
    let pgid = child.id() as i32;
    let waiter = std::thread::spawn(move || child.wait_with_output());
    while !waiter.is_finished() {
        if interrupted() {
            // SAFETY: signalling the child's own process group.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = waiter.join().map_err(|_| anyhow::anyhow!("waiter thread panicked"))??;
    if interrupted() {
        bail!(Interrupted);
    }
    Ok(out)
}

/// Set by SIGINT, SIGTERM or SIGHUP once [`stop_flag`] has been called: a
/// benchmark finishes the step it is in (stopping its iperf3 at once),
/// removes its lab and exits 130.
pub(crate) fn stop_flag() -> &'static std::sync::Arc<std::sync::atomic::AtomicBool> {
    aerolink_net::stop::on_signals().flag()
}

fn interrupted() -> bool {
    stop_flag().load(std::sync::atomic::Ordering::Relaxed)
}

/// The error a benchmark step returns when a signal stopped it.
#[derive(Debug)]
pub(crate) struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// Exit status 130 for a benchmark a signal stopped (its lab already
/// removed), the error otherwise.
pub(crate) fn exit_on_interrupt(r: anyhow::Result<i32>) -> anyhow::Result<i32> {
    match r {
        Err(e) if e.is::<Interrupted>() || interrupted() => {
            eprintln!("interrupted; the lab is removed");
            Ok(130)
        }
        r => r,
    }
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
    if f.len() > 12 {
        (f[11] + f[12]) / hz
    } else {
        0.0
    }
}
