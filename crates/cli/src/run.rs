//! `aerolink run` and `aerolink shell`: build a lab, run programs in it,
//! tear it all down on every exit path (normal, client crash, Ctrl-C,
//! SIGTERM, SIGHUP).

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::time::Duration;

use aerolink_experiments::gateways::PepSpec;
use aerolink_link::Profile;
use aerolink_net::{Lab, LabReport, LabSpec};
use aerolink_pep::cli::PepMode;
use anyhow::Context;
use clap::Args;

use crate::error::user;
use aerolink_experiments::linkargs::LinkArgs;
use aerolink_experiments::topology::Topology;

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub link: LinkArgs,
    /// Command run with `sh -c` in the server namespace (started first).
    /// Its standard output goes to aerolink's standard error, so that the
    /// client's output (e.g. `iperf3 -J`) stays clean on standard output.
    #[arg(long, value_name = "CMD")]
    pub server: Option<String>,
    /// Command run with `sh -c` in the client namespace; aerolink exits with
    /// its status.
    #[arg(long, value_name = "CMD")]
    pub client: String,
    /// Record every packet event to FILE (see `aerolink stats`).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// Write what the link did (packets, drops, timing) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// How long to wait for the server to open a socket before starting
    /// the client anyway (with --ready-port: before giving up).
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = aerolink_work::cli::duration_arg)]
    pub ready_timeout: aerolink_link::Duration,
    /// Start the client only once the server listens on all of these ports
    /// (comma-separated or repeated; `5201` or `tcp:5201`, `udp:443`).
    /// Without it the client starts when the server opens its first socket.
    #[arg(long, value_name = "PORT", value_delimiter = ',')]
    pub ready_port: Vec<aerolink_net::procs::Port>,
    /// Print nothing of aerolink's own (the programs' output still shows).
    #[arg(long, short)]
    pub quiet: bool,
    /// Print one JSON object on standard output at the end: the client's
    /// exit status, its standard output (captured; parsed when it is JSON,
    /// e.g. `iperf3 -J`) and what the link did (as `--report` writes it).
    /// Implies --quiet.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub pep: PepSpec,
    /// Passengers in the cabin (the client's namespace): N extra addresses,
    /// 198.18.0.11 … and 2001:2::b …, in $AEROLINK_PASSENGERS and
    /// $AEROLINK_PASSENGERS_V6, for programs that bind one each (`iperf3
    /// -B`, `curl --interface`). A link with `per_user` caps each address.
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=aerolink_net::lab::MAX_PASSENGERS as i64))]
    pub passengers: u16,
    /// Where the passengers live: `addresses` of the client's namespace
    /// (above), or `namespaces` — each passenger a namespace of its own
    /// behind the client, with its own stack and programs (their names in
    /// $AEROLINK_PASSENGER_NETNS, in order; run a program in one with `ip
    /// netns exec`), at the same addresses: N aircraft on one beam, each
    /// its own host. The `cabin` workload runs each passenger's transfer in
    /// its namespace.
    #[arg(long, default_value = "addresses", value_name = "addresses|namespaces", requires = "passengers")]
    pub passengers_as: aerolink_net::lab::PassengerHosts,
}

/// The PEP flags (`--pep`, `--pep-at`, `--tunnel-cc`, …; they need the
/// gateway chain, e.g. `--topology ifc`), checked.
#[derive(Args, Debug)]
pub struct ShellArgs {
    #[command(flatten)]
    pub link: LinkArgs,
    /// Command run with `sh -c` in the server namespace while the shell runs.
    #[arg(long, value_name = "CMD")]
    pub server: Option<String>,
    /// Record every packet event to FILE.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// The command to run in the client namespace (default: $SHELL).
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

/// The capture flags of `run`, `shell` and `up`.
#[derive(Args, Debug, Clone)]
pub struct CaptureArgs {
    /// Capture every hop into DIR/hopN.pcapng for Wireshark or tshark:
    /// each packet as it entered the link, its fate as the packet's comment
    /// (departed with its delay, or dropped: loss, queue, outage, ARQ), and
    /// as it left. Turns segmentation offload off (docs/guide.md §4).
    #[arg(long, value_name = "DIR", help_heading = "Capture")]
    pub pcap: Option<PathBuf>,
    /// Bytes kept of each captured packet, headers first (128 keeps the IP
    /// and TCP or UDP headers and leaves payloads out).
    #[arg(long, value_name = "BYTES", default_value_t = aerolink_net::pcap::DEFAULT_SNAP, value_parser = clap::value_parser!(u32).range(40..=262_144), help_heading = "Capture")]
    pub pcap_snap: u32,
    /// A capture file stops taking packets at this size; what it leaves
    /// out is counted.
    #[arg(long, value_name = "SIZE", default_value = "1 GB", value_parser = pcap_max_arg, help_heading = "Capture")]
    pub pcap_max: u64,
    /// Serve a page that draws the link while it runs — each direction's
    /// rate in and out, delay, queueing, what is inside the link, drops by
    /// cause, and link events (DAMA allocations, channel drops, handovers)
    /// — at ADDR (loopback only; default 127.0.0.1:8950, port 0 picks a
    /// free one). Open the printed address in a browser; `/snapshot` gives
    /// the latest figures as JSON.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8950", help_heading = "Live view")]
    pub live: Option<std::net::SocketAddr>,
}

fn pcap_max_arg(s: &str) -> Result<u64, String> {
    match aerolink_link::units::parse_size(s)? {
        aerolink_link::units::Size::Bytes(b) if b > 0 => Ok(b),
        _ => Err("expected a size in bytes above 0, like \"100 MB\" or \"2 GB\"".into()),
    }
}

impl CaptureArgs {
    pub fn spec(&self) -> Option<aerolink_net::pcap::PcapSpec> {
        self.pcap.as_ref().map(|dir| aerolink_net::pcap::PcapSpec { dir: dir.clone(), snap: self.pcap_snap, max_bytes: self.pcap_max })
    }

    /// Sets `spec`'s capture and starts the live view if asked (its address
    /// on standard error); the view stops when dropped, after the lab.
    pub fn apply(&self, spec: &mut LabSpec, title: &str) -> anyhow::Result<Option<aerolink_net::live::Live>> {
        spec.pcap = self.spec();
        let Some(addr) = self.live else { return Ok(None) };
        let live = aerolink_net::live::Live::start(addr, title).map_err(|e| match e {
            aerolink_net::live::LiveError::Bind(a, err) if err.kind() == std::io::ErrorKind::AddrInUse => {
                user(format!("--live {a}: the address is in use (another aerolink's live view?); give another port, or 127.0.0.1:0 for any free one"))
            }
            e => user(e.to_string()),
        })?;
        spec.live = Some(live.feed());
        eprintln!("aerolink: live view at {}", live.url());
        Ok(Some(live))
    }
}

/// What a capture wrote, for people.
pub fn print_capture(rep: &Option<aerolink_net::pcap::PcapReport>) {
    if let Some(p) = rep {
        let files: Vec<String> = p.files.iter().map(|f| f.display().to_string()).collect();
        let left = if p.not_captured > 0 { format!("; {} left out past --pcap-max", p.not_captured) } else { String::new() };
        eprintln!("aerolink: capture in {} ({} packet records{left}); read it with `tshark -r FILE -T fields -e frame.comment`", files.join(", "), p.records);
    }
}

/// The stop token (`aerolink_net::stop`): signals that ask us to stop.
pub type Signals = aerolink_net::stop::Stop;

pub use aerolink_net::run_id;

pub use aerolink_experiments::topology::IFC_PRESET;

/// The lab a set of link flags asks for.
pub fn lab_spec(link: &LinkArgs, run: String) -> anyhow::Result<(LabSpec, String)> {
    if link.space.is_some() && link.topology.as_deref() != Some(IFC_PRESET) {
        return Err(user("--space: only with --topology ifc (the space hop of the gateway chain)"));
    }
    let (hosts, hops, label) = match &link.topology {
        Some(preset) if preset == IFC_PRESET && !std::path::Path::new(preset).exists() => {
            let space = aerolink_experiments::linkargs::load_profile(link.space.as_deref().unwrap_or("mss"), &link.overrides()?)?;
            let t = Topology::ifc(space);
            (t.hosts.clone(), t.hops.clone(), t.label())
        }
        Some(file) => {
            if !link.overrides()?.is_empty() {
                return Err(user("--topology: link flags (--rate, --loss, …) apply to single-hop runs; put per-hop values in the topology file"));
            }
            let t = Topology::load(file)?;
            (t.hosts.clone(), t.hops.clone(), t.label())
        }
        None => {
            let p: Profile = link.profile()?;
            let label = p.name.clone();
            (vec!["client".into(), "server".into()], vec![p], label)
        }
    };
    let mut meta = vec![("topology".to_string(), label.clone())];
    for (i, h) in hops.iter().enumerate() {
        meta.push((format!("hop{i}"), h.name.clone()));
    }
    Ok((LabSpec { log_meta: meta, pump: link.pump, ..LabSpec::chain(run, hosts, hops, link.seed) }, label))
}

fn open_log(path: &Option<PathBuf>) -> anyhow::Result<Option<Box<dyn Write + Send>>> {
    match path {
        None => Ok(None),
        Some(p) => {
            let f = File::create(p).map_err(|e| user(format!("--log {}: cannot create: {e}", p.display())))?;
            Ok(Some(Box::new(f)))
        }
    }
}

/// Kills a child's whole process group, politely then firmly.
pub fn kill_group(child: &mut Child) {
    aerolink_net::procs::kill_process_group(child, Duration::from_millis(500));
}

/// Waits for the server to open a socket (all of `ports` when given), or to
/// exit, or for the timeout.
fn wait_ready(server: &mut Child, ports: &[aerolink_net::procs::Port], timeout: Duration, signals: &Signals, quiet: bool) -> anyhow::Result<()> {
    use aerolink_net::procs::WaitError;
    match aerolink_net::procs::wait_listening(server, ports, timeout, || signals.received().is_some()) {
        Ok(()) | Err(WaitError::Stopped) => Ok(()),
        Err(WaitError::Exited(st)) => Err(user(format!("the server command exited ({st}) before the client started"))),
        Err(e @ WaitError::NotOpen { .. }) if !ports.is_empty() => Err(anyhow::anyhow!("{e} (--ready-port)")),
        Err(WaitError::NotOpen { .. }) => {
            if !quiet {
                eprintln!("aerolink: the server opened no socket within {timeout:?}; starting the client anyway");
            }
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Waits for a child, or a stop signal. `Ok(Err(sig))` when interrupted.
fn wait_child(child: &mut Child, signals: &Signals, interruptible: bool) -> anyhow::Result<Result<ExitStatus, i32>> {
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(Ok(st));
        }
        if let Some(sig) = signals.received() {
            // An interactive shell handles its own Ctrl-C; SIGTERM and
            // SIGHUP always stop the run.
            if interruptible || sig != libc::SIGINT {
                return Ok(Err(sig));
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn exit_code(st: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0))
}

/// Our standard error, for a child's standard output: the server's lines
/// must not mix with the client's on standard output.
fn stderr_stdio() -> anyhow::Result<std::process::Stdio> {
    use std::os::fd::AsFd;
    Ok(std::process::Stdio::from(std::io::stderr().as_fd().try_clone_to_owned().context("duplicating standard error")?))
}

pub fn print_report(rep: &LabReport, hosts: &[String]) {
    for d in &rep.directions {
        let (from, to) = match d.dir {
            Some(aerolink_net::log::Dir::Up) => (&hosts[d.hop as usize], &hosts[d.hop as usize + 1]),
            _ => (&hosts[d.hop as usize + 1], &hosts[d.hop as usize]),
        };
        eprintln!(
            "aerolink:   {from} → {to}: {} packets in, {} out ({:.1} KB); dropped {} by loss, {} by queue, {} by outage{}{}{}",
            d.packets_in,
            d.packets_out,
            d.bytes_out as f64 / 1e3,
            d.dropped_loss,
            d.dropped_queue,
            d.dropped_outage,
            if d.dropped_arq > 0 || d.retransmissions > 0 { format!(", {} by ARQ giving up ({} retransmissions)", d.dropped_arq, d.retransmissions) } else { String::new() },
            d.refused_why.as_ref().map(|e| format!("; {} refused by the kernel, the first: {e}", d.refused)).unwrap_or_default(),
            d.error.as_ref().map(|e| format!("; error: {e}")).unwrap_or_default()
        );
    }
}

pub fn run(mut args: RunArgs) -> anyhow::Result<i32> {
    args.quiet |= args.json;
    let timeout = args.ready_timeout;
    let pep = args.pep.checked_flags()?;
    let (mut spec, label) = lab_spec(&args.link, run_id())?;
    spec.passengers = args.passengers;
    spec.passenger_hosts = args.passengers_as;
    let live = args.capture.apply(&mut spec, &label)?;
    if pep.mode != PepMode::None && !spec.hosts.iter().any(|h| h == "airgw") {
        return Err(user(format!("--pep {}: needs the gateway chain (--topology ifc, or a topology with hosts airgw and groundgw)", pep.mode)));
    }
    let log = open_log(&args.log)?;
    let signals = aerolink_net::stop::on_signals();
    let lab = Lab::build(&spec, log)?;
    if !args.quiet {
        let c = &lab.hosts[0];
        let s = lab.hosts.last().expect("at least two hosts");
        eprintln!("aerolink: {label}, seed {}: client {} / {} ↔ server {} / {}", spec.seed, c.ipv4, c.ipv6, s.ipv4, s.ipv6);
    }
    // Inside the lab's own directory, which goes with the lab — also when
    // a later aerolink removes the leftovers of one killed with SIGKILL.
    let pep_dir = lab.tmp_dir().join("pep");
    let mut gateways = aerolink_experiments::gateways::Gateways::start(&lab, &std::env::current_exe()?, &pep, &pep_dir, false)?;
    let env = gateways.env(&lab);
    let server_host = spec.hosts.last().expect("two hosts").clone();
    let mut server = match &args.server {
        Some(cmd) => {
            let h = lab.host(&server_host).expect("the server host");
            Some(aerolink_net::lab::netns_command(&h.netns, &["sh", "-c", cmd], &env).stdout(stderr_stdio()?).spawn().context("starting the server command")?)
        }
        None => None,
    };
    let mut captured: Option<std::thread::JoinHandle<Vec<u8>>> = None;
    let outcome = (|| -> anyhow::Result<Result<ExitStatus, i32>> {
        if let Some(s) = server.as_mut() {
            wait_ready(s, &args.ready_port, std::time::Duration::from_nanos(timeout.0), signals, args.quiet)?;
        }
        if let Some(sig) = signals.received() {
            return Ok(Err(sig));
        }
        let mut cmd = aerolink_net::lab::netns_command(&lab.hosts[0].netns, &["sh", "-c", &args.client], &env);
        if args.json {
            cmd.stdout(std::process::Stdio::piped());
        }
        let mut client = cmd.spawn().context("starting the client command")?;
        if let Some(mut out) = client.stdout.take() {
            captured = Some(std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = std::io::Read::read_to_end(&mut out, &mut v);
                v
            }));
        }
        let r = wait_child(&mut client, signals, true)?;
        if r.is_err() {
            kill_group(&mut client);
        }
        Ok(r)
    })();
    if let Some(s) = server.as_mut() {
        kill_group(s);
    }
    gateways.stop();
    let rep = lab.shutdown();
    drop(live);
    if let Some(path) = &args.report {
        let text = serde_json::to_string_pretty(&rep)?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        let out = captured.and_then(|h| h.join().ok()).unwrap_or_default();
        let text = String::from_utf8_lossy(&out);
        let client_stdout = serde_json::from_str::<serde_json::Value>(&text).unwrap_or_else(|_| serde_json::Value::String(text.into_owned()));
        let (exit_status, signal) = match &outcome {
            Ok(Ok(st)) => (Some(exit_code(*st)), None),
            Ok(Err(sig)) => (None, Some(*sig)),
            Err(_) => (None, None),
        };
        let v = serde_json::json!({ "link_label": label, "seed": spec.seed, "hosts": spec.hosts, "exit_status": exit_status, "interrupted_by_signal": signal, "client_stdout": client_stdout, "link": rep });
        println!("{}", serde_json::to_string_pretty(&v)?);
    }
    if !args.quiet {
        print_report(&rep, &spec.hosts);
        if let Some(p) = &args.log {
            eprintln!("aerolink: packet log in {} ({} events); summarise it with `aerolink stats {}`", p.display(), rep.log_events.unwrap_or(0), p.display());
        }
        print_capture(&rep.pcap);
    }
    match outcome? {
        Ok(st) => Ok(exit_code(st)),
        Err(sig) => {
            if !args.quiet {
                eprintln!("aerolink: interrupted by signal {sig}; everything was removed");
            }
            Ok(128 + sig)
        }
    }
}

pub fn shell(args: ShellArgs) -> anyhow::Result<i32> {
    let (mut spec, label) = lab_spec(&args.link, run_id())?;
    let live = args.capture.apply(&mut spec, &label)?;
    let log = open_log(&args.log)?;
    let signals = aerolink_net::stop::on_signals();
    let lab = Lab::build(&spec, log)?;
    let server_host = spec.hosts.last().expect("two hosts").clone();
    let mut server = match &args.server {
        Some(cmd) => Some(lab.command(&server_host, cmd)?.stdout(stderr_stdio()?).spawn().context("starting the server command")?),
        None => None,
    };
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
    let argv: Vec<String> = if args.cmd.is_empty() { vec![shell] } else { args.cmd.clone() };
    let argv_ref: Vec<&str> = argv.iter().map(String::as_str).collect();
    eprintln!("aerolink: {label}; in the client namespace {} — the server is $AEROLINK_SERVER ({}) / $AEROLINK_SERVER_V6", lab.hosts[0].netns, lab.hosts.last().map(|h| h.ipv4.as_str()).unwrap_or(""));
    // Interactive: stay in our process group so the terminal's Ctrl-C
    // reaches the command.
    let mut cmd = std::process::Command::new("ip");
    cmd.args(["netns", "exec", &lab.hosts[0].netns]).args(&argv_ref).envs(lab.env());
    let mut child = cmd.spawn().context("starting the command")?;
    let r = wait_child(&mut child, signals, false)?;
    if r.is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
    if let Some(s) = server.as_mut() {
        kill_group(s);
    }
    let rep = lab.shutdown();
    drop(live);
    print_report(&rep, &spec.hosts);
    print_capture(&rep.pcap);
    Ok(match r {
        Ok(st) => exit_code(st),
        Err(sig) => 128 + sig,
    })
}
