//! Executes one run: builds a lab for the profile, starts the workload
//! server in the server namespace, waits until it listens, runs the client
//! in the client namespace, collects its JSON and the link's counters, and
//! tears everything down — on success, failure and interruption alike.
//!
//! Server and client are separate processes of the aerolink binary started
//! with `ip netns exec`, so no thread of this (multi-threaded) process ever
//! changes namespace.

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aerolink_link::Profile;
use aerolink_net::lab::netns_command;
use aerolink_net::procs::{wait_listening, Port, WaitError};
use aerolink_net::{Lab, LabReport, LabSpec};
use serde::{Deserialize, Serialize};

use crate::topology::Chain;
use crate::workload::{Knobs, Workload};

pub struct RunRequest {
    /// The aerolink binary (server and client run as its subcommands).
    pub exe: PathBuf,
    /// Names the lab's namespaces (`al-<run>-…`); unique among parallel runs.
    pub run_name: String,
    /// The link the run is about (the space hop of a chain).
    pub profile: Profile,
    /// What the lab is around that link.
    pub chain: Chain,
    pub seed: u64,
    pub workload: Workload,
    pub knobs: Knobs,
    /// Kill the client after this long.
    pub timeout: Duration,
    /// Capture the run (`experiment run --pcap`).
    pub pcap: Option<aerolink_net::pcap::PcapSpec>,
    /// Keep the run's TLS keys and qlogs here (`experiment run --traces`;
    /// a browser run's net log too: [`Workload::with_net_log`]).
    pub traces: Option<PathBuf>,
    /// Feed the live view with this run's link (`experiment run --live`).
    pub live: Option<std::sync::Arc<aerolink_net::live::Feed>>,
    /// Who drives the lab's links.
    pub pump: aerolink_net::lab::PumpMode,
}

/// The programs' environment, with `SSLKEYLOGFILE` (`DIR/keys.log`) and
/// `QLOGDIR` (`DIR/qlog`) when the run keeps its traces.
fn with_traces(req: &RunRequest, mut env: Vec<(String, String)>) -> Vec<(String, String)> {
    if let Some(d) = &req.traces {
        // Made here, so the programs (whoever they run as) find it.
        let _ = std::fs::create_dir_all(d.join("qlog"));
        env.push(("SSLKEYLOGFILE".into(), d.join("keys.log").display().to_string()));
        env.push(("QLOGDIR".into(), d.join("qlog").display().to_string()));
    }
    env
}

#[derive(Debug, Default, Serialize, Deserialize, Clone)]
pub struct RunOutcome {
    pub ok: bool,
    pub error: Option<String>,
    /// The client's result, as its workload's type (`None` when the run failed).
    pub result: Option<crate::workload::WorkloadResult>,
    /// IP bytes the link carried toward the client (down) and the server (up).
    pub wire_bytes_down: u64,
    pub wire_bytes_up: u64,
    pub link_drops_loss: u64,
    pub link_drops_queue: u64,
    /// Packets the measured hop itself dropped (random loss, ARQ given up,
    /// queue overflow, outages) toward the client and toward the server.
    #[serde(default)]
    pub link_drops_down: u64,
    #[serde(default)]
    pub link_drops_up: u64,
    /// Of those, the ones by random loss or ARQ giving up (`link_drops_loss`
    /// by direction).
    #[serde(default)]
    pub link_drops_loss_down: u64,
    #[serde(default)]
    pub link_drops_loss_up: u64,
    /// Bandwidth on demand on the measured hop's return link (`dama`): the
    /// capacity allocated and the bytes the terminals sent in it.
    #[serde(default)]
    pub allocated_bytes_up: u64,
    #[serde(default)]
    pub allocated_used_bytes_up: u64,
    /// Building the lab and starting the server, ms.
    pub setup_ms: f64,
    /// Stopping the server and removing the lab, ms.
    pub teardown_ms: f64,
    pub client_ms: f64,
    /// The emulator's accuracy in this run: the worst 99th percentile, over
    /// every hop and direction, of how late packets left against their
    /// due time, µs.
    #[serde(default)]
    pub lateness_us_p99: f64,
    /// Frames a pump could not hand on (`LabReport::faults`): none in a
    /// sound run. They are in the drops above; a run that has any is
    /// stored with the metric `emulator_refused` ([`RunOutcome::emulator_refused`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub emulator_faults: Vec<aerolink_net::lab::Fault>,
    /// A bonded link's call drops per channel on the measured hop, and
    /// each completed redial's time, seconds (`PumpReport::channel_drops`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channel_drops: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redials_s: Vec<f64>,
    /// The same link's channels' down spans and its end, seconds since it
    /// started (`PumpReport::channel_down_spans`, `ended_s`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channel_down_spans: Vec<(u16, f64, f64)>,
    #[serde(default)]
    pub link_ended_s: f64,
    /// The first handover on the measured hop: when it was commanded and
    /// when the aircraft left the old cell (since the link started), and
    /// how long from leaving the old cell to the binding's
    /// acknowledgement, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover_trigger_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover_l2_start_s: Option<f64>,
    /// Packets that left the measured hop each way.
    #[serde(default)]
    pub packets_up: u64,
    #[serde(default)]
    pub packets_down: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover_s: Option<f64>,
}

impl RunOutcome {
    /// Frames the kernel refused from this run's pumps, in all.
    pub fn emulator_refused(&self) -> u64 {
        self.emulator_faults.iter().map(|f| f.refused).sum()
    }
}

fn failed(e: impl std::fmt::Display) -> RunOutcome {
    RunOutcome { ok: false, error: Some(e.to_string()), ..Default::default() }
}

fn kill_group(child: &mut std::process::Child) {
    aerolink_net::procs::kill_process_group(child, Duration::ZERO);
}

fn last_line(path: &Path) -> String {
    std::fs::read_to_string(path).ok().and_then(|t| t.lines().rev().find(|l| !l.trim().is_empty()).map(str::to_string)).unwrap_or_default()
}

/// The competing flow of `cross`: an iperf3 server and client beside the
/// workload's, stopped when it is dropped.
struct Cross {
    server: std::process::Child,
    client: std::process::Child,
}

/// iperf3's port for the cross traffic (the workloads use others).
const CROSS_PORT: u16 = 5299;

impl Cross {
    /// Starts the flow (`knobs.cross_flows` connections) and returns once
    /// it carries data (its first half-second report is out) and, with
    /// `knobs.cross_lead_ms`, once it has run that long.
    fn start(
        lab: &aerolink_net::Lab,
        knobs: &crate::workload::Knobs,
        kind: crate::workload::Cross,
        server_addr: &str,
        env: &[(String, String)],
        tmp: &Path,
        stop: &AtomicBool,
    ) -> Result<Cross, String> {
        let server_ns = &lab.hosts.last().expect("hosts").netns;
        let port = CROSS_PORT.to_string();
        let mut server = netns_command(server_ns, &["iperf3", "-s", "-p", &port], env).stdout(Stdio::null()).stderr(Stdio::null()).spawn().map_err(|e| format!("iperf3: {e}"))?;
        if let Err(e) = wait_listening(&mut server, &[Port::Tcp(CROSS_PORT)], Duration::from_secs(15), || stop.load(Ordering::SeqCst)) {
            kill_group(&mut server);
            return Err(format!("the iperf3 server did not listen ({e:?})"));
        }
        let out = tmp.join("cross.out");
        let file = std::fs::File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
        let flows = knobs.cross_flows.to_string();
        let mut argv = vec!["iperf3", "-c", server_addr, "-p", &port, "-t", "86400", "-i", "0.5", "--forceflush", "-C", "cubic", "-P", &flows];
        if kind == crate::workload::Cross::TcpDown {
            argv.push("-R");
        }
        let client = netns_command(&lab.hosts[0].netns, &argv, env).stdout(file).stderr(Stdio::null()).spawn();
        let mut cross = match client {
            Ok(client) => Cross { server, client },
            Err(e) => {
                kill_group(&mut server);
                return Err(format!("iperf3: {e}"));
            }
        };
        // Carrying data: a first interval report (a condition, not a delay);
        // then the lead the experiment asks for (a condition it sets).
        let t0 = Instant::now();
        let lead = Duration::from_millis(knobs.cross_lead_ms.unwrap_or(0));
        loop {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            if text.lines().any(|l| l.contains("bits/sec")) && t0.elapsed() >= lead {
                return Ok(cross);
            }
            if let Ok(Some(st)) = cross.client.try_wait() {
                return Err(format!("the iperf3 client exited ({st}): {}", text.lines().last().unwrap_or("")));
            }
            if t0.elapsed() > lead + Duration::from_secs(15) || stop.load(Ordering::SeqCst) {
                return Err("no data moved within 15 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Cross {
    fn drop(&mut self) {
        kill_group(&mut self.client);
        kill_group(&mut self.server);
    }
}

/// Sets the end hosts' TCP (client and server namespaces) as the run's
/// knobs ask, before any program starts; the lab is removed if it cannot.
fn end_host_tcp(lab: Lab, knobs: &crate::workload::Knobs) -> Result<Lab, String> {
    // The client and the passengers' own namespaces receive a download (the
    // initial receive window is theirs); the server is the other end.
    let clients: Vec<String> = std::iter::once(lab.hosts[0].netns.clone()).chain(lab.passenger_netns().iter().cloned()).collect();
    let server = lab.hosts.last().expect("hosts").netns.clone();
    let sysctls = knobs.end_host_sysctls();
    for ns in clients.iter().chain(std::iter::once(&server)) {
        let (these, rwnd) = (sysctls.clone(), knobs.initrwnd.filter(|_| *ns != server));
        let set = aerolink_net::sys::in_netns(ns, move || {
            these.iter().try_for_each(|(k, v)| aerolink_net::sys::write_sysctl(k, v))?;
            rwnd.map_or(Ok(()), |n| aerolink_work::sock::set_route_initrwnd(n).map_err(|e| aerolink_net::NetError::Command { cmd: format!("ip route change … initrwnd {n}"), msg: e.to_string() }))
        });
        if let Err(e) = set {
            lab.shutdown();
            return Err(format!("setting the end hosts' TCP ({}) in {ns}: {e}", knobs.label()));
        }
    }
    Ok(lab)
}

/// What the link did in a run: its accuracy, faults, and the measured
/// hop's bytes, drops and call drops (for each of its `channels`, those
/// that never dropped too).
fn link_figures(rep: &LabReport, measured_hop: usize, channels: usize, outcome: &mut RunOutcome) {
    outcome.lateness_us_p99 = rep.directions.iter().map(|d| d.lateness_us_p99).fold(0.0, f64::max);
    outcome.emulator_faults = rep.faults();
    for d in rep.directions.iter().filter(|d| d.hop as usize == measured_hop) {
        let dropped = d.dropped_loss + d.dropped_arq + d.dropped_queue + d.dropped_outage + d.refused;
        match d.dir {
            Some(aerolink_net::log::Dir::Up) => {
                outcome.wire_bytes_up += d.bytes_out;
                outcome.packets_up += d.packets_out;
                outcome.link_drops_up += dropped;
                outcome.link_drops_loss_up += d.dropped_loss + d.dropped_arq;
                outcome.allocated_bytes_up += d.allocated_bytes;
                outcome.allocated_used_bytes_up += d.allocated_used_bytes;
            }
            _ => {
                outcome.wire_bytes_down += d.bytes_out;
                outcome.packets_down += d.packets_out;
                outcome.link_drops_down += dropped;
                outcome.link_drops_loss_down += d.dropped_loss + d.dropped_arq;
            }
        }
        outcome.link_drops_loss += d.dropped_loss + d.dropped_arq;
        outcome.link_drops_queue += d.dropped_queue;
        // A call carries both directions: its drops are counted once.
        if d.dir == Some(aerolink_net::log::Dir::Up) {
            outcome.channel_drops.clone_from(&d.channel_drops);
            outcome.channel_drops.resize(channels.max(d.channel_drops.len()), 0);
            outcome.redials_s.clone_from(&d.redials_s);
            outcome.channel_down_spans.clone_from(&d.channel_down_spans);
            outcome.link_ended_s = d.ended_s;
            use aerolink_link::handover::Phase;
            let at = |phase: Phase| d.handovers.iter().find(|h| h.0 == 0 && h.1 == phase).map(|h| h.2);
            outcome.handover_trigger_s = at(Phase::Trigger);
            outcome.handover_l2_start_s = at(Phase::L2Start);
            outcome.handover_s = at(Phase::L2Start).zip(at(Phase::Acked)).map(|(a, b)| b - a);
        }
    }
}

/// Runs one request. `stop` aborts it (Ctrl-C): the lab is still removed.
pub fn run_once(req: &RunRequest, stop: &AtomicBool) -> RunOutcome {
    let t0 = Instant::now();
    if let Some(text) = req.workload.simulate(&req.profile, req.seed) {
        return simulated(&req.workload, &text, t0);
    }
    let topo = req.chain.build(&req.profile);
    // The hop whose bytes and drops are reported: the profile's.
    let measured_hop = topo.measured_hop();
    let spec = LabSpec {
        run: req.run_name.clone(),
        hosts: topo.hosts,
        hops: topo.hops,
        seed: req.seed,
        log_meta: vec![],
        lateness_target_ns: None,
        packet_by_packet: false,
        pcap: req.pcap.clone(),
        live: req.live.clone(),
        passengers: req.workload.passengers(),
        passenger_hosts: req.workload.passenger_hosts(),
        pump: req.pump,
    };
    let lab = match Lab::build(&spec, None).map_err(|e| e.to_string()).and_then(|l| end_host_tcp(l, &req.knobs)) {
        Ok(l) => l,
        Err(e) => return failed(format!("building the lab: {e}")),
    };
    // Inside the lab's own directory: removed with the lab, and by the next
    // aerolink if this one is killed.
    let tmp = lab.tmp_dir().join("run");
    let _ = std::fs::create_dir_all(&tmp);
    let server_err = tmp.join("server.err");
    let gateways = match &req.knobs.pep {
        Some(p) => match crate::gateways::Gateways::start(&lab, &req.exe, p, &tmp, true) {
            Ok(g) => Some(g),
            Err(e) => {
                lab.shutdown();
                return failed(format!("starting the gateways: {e}"));
            }
        },
        None => None,
    };
    let env = with_traces(req, gateways.as_ref().map_or_else(|| lab.env(), |g| g.env(&lab)));
    let server_ns = lab.hosts.last().expect("hosts").netns.clone();
    let argv = server_argv(req, &lab, gateways.as_ref());
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let mut server = match netns_command(&server_ns, &refs, &env).stdout(Stdio::null()).stderr(std::fs::File::create(&server_err).map(Stdio::from).unwrap_or(Stdio::null())).spawn() {
        Ok(s) => s,
        Err(e) => return failed(format!("starting the server: {e}")),
    };
    let mut outcome = (|| {
        let mut ports = vec![Port::Tcp(aerolink_work::server::HTTPS_PORT), Port::Tcp(aerolink_work::realtime::WS_PORT)];
        if req.workload.resolves_names() {
            ports.push(Port::Udp(53));
        }
        match wait_listening(&mut server, &ports, Duration::from_secs(15), || stop.load(Ordering::SeqCst) || lab.broken()) {
            Ok(()) => {}
            Err(WaitError::Exited(st)) => {
                let said = last_line(&server_err);
                return failed(if said.is_empty() { format!("the workload server exited ({st})") } else { format!("the workload server exited ({st}): {said}") });
            }
            Err(_) if lab.broken() => return failed("the link stopped"),
            Err(_) => return failed("the workload server did not start listening within 15 s"),
        }
        let setup_ms = t0.elapsed().as_secs_f64() * 1e3;
        let (v4, v6) = match gateways.as_ref().and_then(|g| g.server_override.clone()) {
            Some(inner) => inner,
            None => (lab.hosts.last().expect("hosts").ipv4.clone(), lab.hosts.last().expect("hosts").ipv6.clone()),
        };
        let addr = if req.knobs.ipv6 { format!("[{v6}]") } else { v4.clone() };
        let mut o = client_beside(req, &lab, &env, (&v4, &addr), &tmp, stop);
        o.setup_ms = setup_ms;
        o
    })();
    kill_group(&mut server);
    let td = Instant::now();
    drop(gateways);
    let rep: LabReport = lab.shutdown();
    outcome.teardown_ms = td.elapsed().as_secs_f64() * 1e3;
    // A link that stopped on its own is the run's failure, whatever the
    // client then said (it lost its path).
    let link_errors = rep.errors();
    if !link_errors.is_empty() {
        outcome.ok = false;
        outcome.error = Some(format!("the link stopped: {}", link_errors.join("; ")));
    }
    link_figures(&rep, measured_hop, req.profile.up.bonded.as_ref().map_or(0, |b| b.channels.len()), &mut outcome);
    outcome
}

/// A simulated-time run's outcome: its result, no link figures (no lab).
fn simulated(w: &crate::workload::Workload, text: &str, t0: Instant) -> RunOutcome {
    match w.decode(text) {
        Ok(r) => RunOutcome { ok: true, error: None, result: Some(r), client_ms: t0.elapsed().as_secs_f64() * 1e3, ..Default::default() },
        Err(e) => failed(format!("the simulation's result did not decode: {e}")),
    }
}

/// The workload server's command line: the knobs' server, answering every
/// name with its own address (the one the client reaches it at) when the
/// client resolves names.
fn server_argv(req: &RunRequest, lab: &Lab, gateways: Option<&crate::gateways::Gateways>) -> Vec<String> {
    let mut argv: Vec<String> = vec![req.exe.to_string_lossy().to_string()];
    argv.extend(req.knobs.server_args());
    if req.workload.resolves_names() {
        let v4 = gateways.and_then(|g| g.server_override.clone()).map_or_else(|| lab.hosts.last().expect("hosts").ipv4.clone(), |o| o.0);
        argv.extend(["--dns-answer".to_string(), v4]);
    }
    argv
}

/// The client, beside what the run asks for: competing traffic first (so
/// the workload meets a link in use), a resolver aboard that the client
/// asks in the server's stead. `server`: its IPv4 address and the address
/// the client uses.
fn client_beside(req: &RunRequest, lab: &Lab, env: &[(String, String)], server: (&str, &str), tmp: &Path, stop: &AtomicBool) -> RunOutcome {
    let (v4, addr) = server;
    let _cross = match req.knobs.cross.filter(|c| *c != crate::workload::Cross::None) {
        Some(c) => match Cross::start(lab, &req.knobs, c, v4, env, tmp, stop) {
            Ok(x) => Some(x),
            Err(e) => return failed(format!("starting the cross traffic: {e}")),
        },
        None => None,
    };
    let mut aboard = crate::aboard::Addrs::default();
    let mut services = Vec::new();
    if req.workload.resolver_aboard() {
        match crate::aboard::resolver(lab, v4, env, stop) {
            Ok((s, a)) => {
                services.push(s);
                aboard.resolver = Some(a);
            }
            Err(e) => return failed(format!("starting the resolver aboard: {e}")),
        };
    }
    if req.workload.proxy_aboard() {
        let intercept = req.workload.proxy_intercepts();
        match crate::aboard::proxy(lab, v4, intercept, env, tmp, stop) {
            Ok((s, a)) => {
                services.push(s);
                // A transparent cache is not named to the client.
                aboard.proxy = (!intercept).then_some(a);
            }
            Err(e) => return failed(format!("starting the HTTP cache aboard: {e}")),
        };
    }
    run_client(req, lab, env, addr, &aboard, tmp, stop)
}

/// The workload's client in the lab's first host, against `addr`: its
/// result decoded as the workload's own, or why there is none.
fn run_client(req: &RunRequest, lab: &Lab, env: &[(String, String)], addr: &str, aboard: &crate::aboard::Addrs, tmp: &Path, stop: &AtomicBool) -> RunOutcome {
    let client_err = tmp.join("client.err");
    let mut argv: Vec<String> = vec![req.exe.to_string_lossy().to_string()];
    argv.extend(req.workload.client_args(addr, &req.knobs, aboard));
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out_path = tmp.join("client.json");
    let stdout = match std::fs::File::create(&out_path) {
        Ok(f) => f,
        Err(e) => return failed(format!("{}: {e}", out_path.display())),
    };
    let tc = Instant::now();
    let mut client = match netns_command(&lab.hosts[0].netns, &refs, env).stdout(stdout).stderr(std::fs::File::create(&client_err).map(Stdio::from).unwrap_or(Stdio::null())).spawn() {
        Ok(c) => c,
        Err(e) => return failed(format!("starting the client: {e}")),
    };
    let status = wait_client(&mut client, tc, req.timeout, lab, stop);
    let mut o = failed("");
    o.client_ms = tc.elapsed().as_secs_f64() * 1e3;
    match status {
        Err(e) => o.error = Some(e),
        Ok(st) if !st.success() => {
            let said = last_line(&client_err);
            o.error = Some(if said.is_empty() { format!("the client failed ({st})") } else { format!("the client failed ({st}): {said}") });
        }
        Ok(_) => match std::fs::read_to_string(&out_path).map(|t| req.workload.decode(&t)) {
            Ok(Ok(r)) => {
                o.ok = true;
                o.error = None;
                o.result = Some(r);
            }
            Ok(Err(e)) => o.error = Some(format!("the client's result is not a {} result: {e}", req.workload.name())),
            Err(_) => o.error = Some("the client printed no JSON result".into()),
        },
    }
    o
}

/// The client's exit, or why it was stopped: interrupted, the link
/// stopped, or the run's timeout since `tc`.
fn wait_client(client: &mut Child, tc: Instant, timeout: Duration, lab: &Lab, stop: &AtomicBool) -> Result<ExitStatus, String> {
    loop {
        match client.try_wait() {
            Ok(Some(st)) => return Ok(st),
            Ok(None) => {}
            Err(e) => return Err(e.to_string()),
        }
        let why = if stop.load(Ordering::SeqCst) {
            "interrupted".to_string()
        } else if lab.broken() {
            "the link stopped".to_string()
        } else if tc.elapsed() > timeout {
            format!("the client did not finish within the run's timeout ({} s)", timeout.as_secs_f64())
        } else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        kill_group(client);
        return Err(why);
    }
}
