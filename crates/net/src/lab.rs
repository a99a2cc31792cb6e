//! A lab: a chain of network namespaces joined by emulated links.
//!
//! `client ↔ server` by default, or any chain such as `client ↔ airgw ↔
//! groundgw ↔ server`, one profile per hop. Hop `i` joins `hosts[i]` (the
//! aircraft side, "left") and `hosts[i+1]` (the ground side, "right"): `up`
//! is left → right. Addresses come only from the benchmarking ranges:
//! hop `i` is 198.18.i.0/24 and 2001:2:0:i::/64, `.1` on the left and `.2`
//! on the right. Namespaces hold nothing but `lo` and our TUN devices, and
//! routes cover only 198.18.0.0/15 and 2001:2::/48, so no packet can leave
//! for the host's interfaces; [`Lab::build`] checks this before any
//! program runs.
//!
//! Dropping a [`Lab`] (or calling [`Lab::shutdown`]) stops the pumps, kills
//! every process left in its namespaces and deletes them.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use aerolink_link::{Pipeline, Profile};
use serde::{Deserialize, Serialize};

use crate::log::Dir;
use crate::passengers;
pub use crate::passengers::{passenger_v4, passenger_v6, PassengerHosts, MAX_PASSENGERS};
pub use crate::pump::PumpMode;
use crate::pump::{Clock, PollTimer, Pump, PumpReport, Side};
use crate::stale::OWNER_FILE;
pub use crate::stale::{leftover_files, leftover_namespaces, live_runs, namespace_pids, orphan_namespaces, remove_namespace, remove_stale, run_tmp_dir, stale_labs, Owner, StaleLab};
use crate::sys::{self, in_netns};
use crate::tun::{Tun, VNET_HDR_LEN};
use crate::NetError;

/// Prefix of every namespace aerolink creates: `al-<run>-<host>`.
pub const NS_PREFIX: &str = "al-";

/// What to build.
#[derive(Clone, Debug)]
pub struct LabSpec {
    /// Names the namespaces (`al-<run>-<host>`); letters, digits and `-`.
    pub run: String,
    pub hosts: Vec<String>,
    /// `hops.len() == hosts.len() - 1`.
    pub hops: Vec<Profile>,
    pub seed: u64,
    /// Metadata written at the top of the packet log.
    pub log_meta: Vec<(String, String)>,
    /// How late a departure may be before the pump polls (ns); `None`:
    /// [`crate::pump::default_lateness_target_ns`].
    pub lateness_target_ns: Option<u64>,
    /// Turns TCP segmentation offload off on the TUN devices, so the kernel
    /// segments every burst before the pump sees it (the packet-by-packet
    /// path, for comparison). By default bursts are read whole: passed as
    /// one packet over a link that cannot tell them from their segments,
    /// cut into segments for one that shapes ([`crate::gso`]).
    pub packet_by_packet: bool,
    /// Capture every hop into pcapng files ([`crate::pcap`]; turns
    /// segmentation offload off, as `packet_by_packet`).
    pub pcap: Option<crate::pcap::PcapSpec>,
    /// Feed the live view ([`crate::live`]) from every hop's events.
    pub live: Option<std::sync::Arc<crate::live::Feed>>,
    /// Passengers: extra addresses of the first host (the cabin), one per
    /// passenger, 198.18.0.11 … and 2001:2::b … ([`passenger_v4`]), for
    /// programs that bind one each; links with `per_user` cap each.
    pub passengers: u16,
    /// Where the passengers live: addresses of the first host, or a
    /// namespace each behind it ([`crate::passengers`]).
    pub passenger_hosts: PassengerHosts,
    /// Who drives the hops: a thread each, or the process's shared loops.
    pub pump: PumpMode,
}

/// A running hop's pump: its thread, or its place in a shared loop.
enum PumpHandle {
    Thread(JoinHandle<[PumpReport; 2]>),
    Shared(crate::pump::shared::Handle),
}

impl PumpHandle {
    fn join(self) -> Option<[PumpReport; 2]> {
        match self {
            PumpHandle::Thread(h) => h.join().ok(),
            PumpHandle::Shared(h) => h.join(),
        }
    }
}

impl LabSpec {
    /// A client and a server joined by one link with `profile`, nothing
    /// else asked: no log, capture, live view or passengers.
    pub fn one_link(run: String, profile: Profile, seed: u64) -> Self {
        LabSpec::chain(run, vec!["client".into(), "server".into()], vec![profile], seed)
    }

    /// `hosts` joined by `hops`, nothing else asked.
    pub fn chain(run: String, hosts: Vec<String>, hops: Vec<Profile>, seed: u64) -> Self {
        LabSpec {
            run,
            hosts,
            hops,
            seed,
            log_meta: vec![],
            lateness_target_ns: None,
            packet_by_packet: false,
            pcap: None,
            live: None,
            passengers: 0,
            passenger_hosts: PassengerHosts::Addresses,
            pump: PumpMode::Thread,
        }
    }
}

/// A host's place in the lab.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostInfo {
    pub name: String,
    pub netns: String,
    /// The address other hosts use to reach it.
    pub ipv4: String,
    pub ipv6: String,
}

pub struct Lab {
    pub hosts: Vec<HostInfo>,
    pub seed: u64,
    pub passengers: u16,
    namespaces: Vec<String>,
    /// The passengers' own namespaces (`PassengerHosts::Namespaces`).
    passenger_ns: Vec<String>,
    stop: Arc<AtomicBool>,
    stop_fd: i32,
    pumps: Vec<PumpHandle>,
    logger: Option<JoinHandle<std::io::Result<crate::sink::SinkReport>>>,
    /// Link monitor files by hop (hops whose capacity changes).
    monitors: Vec<(usize, std::path::PathBuf)>,
    /// The run's own temporary directory (`TMPDIR` for its programs),
    /// removed with the namespaces: what a killed program leaves there
    /// (a browser profile, a half-written file) goes with it.
    tmp: std::path::PathBuf,
    torn_down: bool,
}

/// What the pumps did, per hop and direction.
#[derive(Debug, Serialize)]
pub struct LabReport {
    pub directions: Vec<PumpReport>,
    pub log_events: Option<u64>,
    /// What the capture wrote (`--pcap`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcap: Option<crate::pcap::PcapReport>,
}

impl LabReport {
    /// Why the link stopped before it was asked to, one line per direction
    /// that stopped (empty: it ran until shut down).
    pub fn errors(&self) -> Vec<String> {
        self.directions.iter().filter_map(|d| d.error.clone()).collect()
    }

    /// Frames the kernel refused to take from a pump, per direction that
    /// had any (empty: none). Counted as the link's drops, but no link
    /// model chose them: each is a fault of the emulator (or of the devices
    /// it writes to) that a run's figures should say.
    pub fn faults(&self) -> Vec<Fault> {
        self.directions.iter().filter(|d| d.refused > 0).map(|d| Fault { hop: d.hop, dir: d.dir, refused: d.refused, first: d.refused_why.clone().unwrap_or_default() }).collect()
    }
}

/// One direction's frames that the kernel refused ([`LabReport::faults`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fault {
    pub hop: u16,
    pub dir: Option<crate::log::Dir>,
    pub refused: u64,
    /// The first refusal's error.
    pub first: String,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dir = self.dir.map(|x| format!(" {}", x.as_str())).unwrap_or_default();
        write!(f, "hop {}{dir}: {} frames refused by the kernel (the first: {})", self.hop, self.refused, self.first)
    }
}

fn v4(hop: usize, side: u8) -> String {
    std::net::Ipv4Addr::new(198, 18, hop as u8, side).to_string()
}
fn v6(hop: usize, side: u8) -> String {
    std::net::Ipv6Addr::new(0x2001, 2, 0, hop as u16, 0, 0, 0, side as u16).to_string()
}

/// Host names become interface and variable names: keep them short and plain.
pub fn check_host_name(h: &str) -> Result<(), String> {
    let ok = !h.is_empty() && h.len() <= 12 && h.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) && h.starts_with(|c: char| c.is_ascii_lowercase());
    if ok {
        Ok(())
    } else {
        Err(format!("host name {h:?}: use 1–12 lower-case letters and digits, starting with a letter"))
    }
}

/// A hop whose capacity changes (bonded channels) gets a link monitor
/// file, named in the programs' environment: written before any program
/// starts, so a reader always finds it; the pump rewrites it when a channel
/// changes.
fn hop_monitor(run: &str, i: usize, up: &Pipeline<crate::pump::Frame>, down: &Pipeline<crate::pump::Frame>) -> Result<Option<std::path::PathBuf>, NetError> {
    if up.capacity_bps().is_none() && down.capacity_bps().is_none() {
        return Ok(None);
    }
    let m = crate::monitor::path(run, i);
    let cap = |p: &Pipeline<crate::pump::Frame>| p.capacity_bps().unwrap_or(f64::INFINITY);
    crate::monitor::write(&m, cap(up), cap(down)).map_err(|e| NetError::Io(format!("write {}", m.display()), e))?;
    Ok(Some(m))
}

/// A TUN device named `name` in the namespace `ns`.
fn tun_in(ns: &str, name: &str, gso: bool) -> Result<Arc<Tun>, NetError> {
    let name = name.to_string();
    Ok(Arc::new(in_netns(ns, move || Tun::create(&name, gso))?))
}

/// A TUN device of hop `i` in `ns`, facing `side`: its addresses, MTU, no
/// DAD, no multicast, up.
fn configure_device(batch: &mut Vec<String>, dev: &str, i: usize, side: u8, mtu: u32) {
    batch.push(format!("link set dev {dev} addrgenmode none"));
    // No multicast: no MLD reports or other chatter of our own on the
    // link, only the programs' packets.
    batch.push(format!("link set dev {dev} multicast off"));
    batch.push(format!("addr add {}/24 dev {dev}", v4(i, side)));
    batch.push(format!("addr add {}/64 dev {dev} nodad", v6(i, side)));
    if mtu != aerolink_link::profile::DEFAULT_MTU {
        batch.push(format!("link set dev {dev} mtu {mtu}"));
    }
    batch.push(format!("link set dev {dev} up"));
}

/// Routes: each host reaches the subnets beyond its neighbours through the
/// device facing them; hosts between others forward. Only the
/// benchmarking ranges are routed. The routes go into each namespace's
/// batch (`batches`, after its devices' lines).
fn add_routes(namespaces: &[String], hosts: &[String], batches: &mut [Vec<String>]) -> Result<(), NetError> {
    let n = namespaces.len();
    for k in 0..n {
        let ns = &namespaces[k];
        let batch = &mut batches[k];
        if k == 0 || k == n - 1 {
            let dev = if k == 0 { format!("to-{}", hosts[1]) } else { format!("to-{}", hosts[n - 2]) };
            batch.push(format!("route add 198.18.0.0/15 dev {dev}"));
            batch.push(format!("route add 2001:2::/48 dev {dev}"));
            continue;
        }
        let left = format!("to-{}", hosts[k - 1]);
        let right = format!("to-{}", hosts[k + 1]);
        for hop in 0..n - 1 {
            let dev = if hop + 1 < k {
                &left
            } else if hop > k {
                &right
            } else {
                continue;
            };
            batch.push(format!("route add 198.18.{hop}.0/24 dev {dev}"));
            batch.push(format!("route add 2001:2:0:{hop:x}::/64 dev {dev}"));
        }
        in_netns(ns, || {
            sys::write_sysctl("net.ipv4.ip_forward", "1")?;
            sys::write_sysctl("net.ipv6.conf.all.forwarding", "1")
        })?;
    }
    Ok(())
}

impl Lab {
    /// Builds the namespaces, TUN devices, addresses and routes, and starts
    /// the pumps. On any failure everything created so far is removed.
    pub fn build(spec: &LabSpec, log_to: Option<Box<dyn Write + Send>>) -> Result<Lab, NetError> {
        sys::check_preconditions()?;
        if spec.hosts.len() < 2 || spec.hops.len() != spec.hosts.len() - 1 {
            return Err(NetError::Spec(format!("{} hosts need {} hops, got {}", spec.hosts.len(), spec.hosts.len().saturating_sub(1), spec.hops.len())));
        }
        if spec.hops.len() > 250 {
            return Err(NetError::Spec("at most 250 hops".into()));
        }
        for h in &spec.hosts {
            check_host_name(h).map_err(NetError::Spec)?;
        }
        // SAFETY: eventfd with valid flags.
        let stop_fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if stop_fd < 0 {
            return Err(NetError::Io("eventfd".into(), std::io::Error::last_os_error()));
        }
        let mut lab = Lab {
            hosts: Vec::new(),
            seed: spec.seed,
            passengers: spec.passengers,
            namespaces: Vec::new(),
            passenger_ns: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            stop_fd,
            pumps: Vec::new(),
            logger: None,
            monitors: Vec::new(),
            tmp: run_tmp_dir(&spec.run),
            torn_down: false,
        };
        std::fs::create_dir_all(&lab.tmp).map_err(|e| NetError::Io(format!("creating {}", lab.tmp.display()), e))?;
        // Who owns the lab, written before any namespace exists: a later
        // aerolink removes what a killed one left ([`remove_stale`]).
        std::fs::write(lab.tmp.join(OWNER_FILE), Owner::me().to_string()).map_err(|e| NetError::Io(format!("writing {}", lab.tmp.join(OWNER_FILE).display()), e))?;
        let mut batches = lab.add_hosts(spec)?;
        let clock = Clock::start();
        let epoch_ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let mut meta = spec.log_meta.clone();
        meta.push(("run".into(), spec.run.clone()));
        meta.push(("seed".into(), spec.seed.to_string()));
        let sink = crate::sink::spawn(log_to, &meta, spec.pcap.as_ref(), spec.live.clone(), spec.hops.len(), epoch_ns)
            .map_err(|e| NetError::Io(spec.pcap.as_ref().map_or("writing the packet log".into(), |p| format!("writing the capture in {}", p.dir.display())), e))?;
        let (log_tx, logger) = match sink {
            Some((tx, h)) => (Some(tx), Some(h)),
            None => (None, None),
        };
        lab.logger = logger;
        for (i, prof) in spec.hops.iter().enumerate() {
            let rtt = prof.base_rtt();
            let (up, down) = Pipeline::<crate::pump::Frame>::pair(&prof.up, &prof.down, rtt, spec.seed, (i * 2) as u64);
            let gso = !spec.packet_by_packet && spec.pcap.is_none() && !crate::gso::packet_by_packet_from_env();
            let monitor = hop_monitor(&spec.run, i, &up, &down)?;
            if let Some(m) = &monitor {
                lab.monitors.push((i, m.clone()));
            }
            let (l, r) = (&lab.namespaces[i], &lab.namespaces[i + 1]);
            let (lname, rname) = (format!("to-{}", spec.hosts[i + 1]), format!("to-{}", spec.hosts[i]));
            let (tl, tr) = (tun_in(l, &lname, gso)?, tun_in(r, &rname, gso)?);
            // Each direction's MTU is its sending device's: the host's
            // stack fragments or discovers the path MTU as over a real link,
            // and a router forwarding onto it answers "too big".
            for (k, dev, side, mtu) in [(i, &lname, 1u8, prof.up.mtu()), (i + 1, &rname, 2u8, prof.down.mtu())] {
                configure_device(&mut batches[k], dev, i, side, mtu);
            }
            if i == 0 {
                passengers::host_lines(&mut batches[0], &lname, spec.passengers, spec.passenger_hosts, &spec.run)?;
            }
            let largest = prof.up.mtu().max(prof.down.mtu()) as usize;
            let buf_len = if gso { 65_536 + VNET_HDR_LEN } else { largest + 100 + VNET_HDR_LEN };
            let pump = Pump {
                hop: i as u16,
                sides: [Side { dir: Dir::Up, src: tl.clone(), dst: tr.clone(), pipeline: up }, Side { dir: Dir::Down, src: tr.clone(), dst: tl.clone(), pipeline: down }],
                timer: PollTimer { clock, fds: [tl.raw(), tr.raw(), stop_fd] },
                stop: lab.stop.clone(),
                log: log_tx.clone(),
                snap: spec.pcap.as_ref().map(|p| p.snap),
                buf_len,
                max_spin_ns: crate::pump::default_spin_ns(),
                lateness_target_ns: spec.lateness_target_ns.unwrap_or_else(crate::pump::default_lateness_target_ns),
                monitor,
            };
            let handle = match spec.pump {
                PumpMode::Thread => PumpHandle::Thread(std::thread::Builder::new().name(format!("pump-hop{i}")).spawn(move || pump.run()).map_err(|e| NetError::Io("spawn pump".into(), e))?),
                PumpMode::Shared => PumpHandle::Shared(crate::pump::shared::add(pump.with_timer(clock))),
            };
            lab.pumps.push(handle);
        }
        drop(log_tx);
        add_routes(&lab.namespaces, &spec.hosts, &mut batches)?;
        for (ns, batch) in lab.namespaces.iter().zip(&batches) {
            sys::ip_batch(ns, batch)?;
        }
        for (k, ns) in (1..).zip(&lab.passenger_ns) {
            sys::ip_batch(ns, &passengers::inside_lines(k, &lab.hosts[0].ipv4))?;
        }
        lab.check_isolated(spec)?;
        Ok(lab)
    }

    /// Creates each host's namespace; the first lines of each one's
    /// configuration, run at once when every device exists
    /// ([`sys::ip_batch`]).
    fn add_hosts(&mut self, spec: &LabSpec) -> Result<Vec<Vec<String>>, NetError> {
        let mut batches = Vec::new();
        for (i, h) in spec.hosts.iter().enumerate() {
            let ns = format!("{NS_PREFIX}{}-{h}", spec.run);
            sys::add_netns(&ns)?;
            self.namespaces.push(ns.clone());
            batches.push(vec!["link set lo up".to_string()]);
            // The address others use: the one facing the client, except for
            // the client itself.
            let (hop, side) = if i == 0 { (0, 1) } else { (i - 1, 2) };
            self.hosts.push(HostInfo { name: h.clone(), netns: ns, ipv4: v4(hop, side), ipv6: v6(hop, side) });
        }
        if spec.passengers > MAX_PASSENGERS {
            return Err(NetError::Spec(format!("at most {MAX_PASSENGERS} passengers, got {}", spec.passengers)));
        }
        if spec.passenger_hosts == PassengerHosts::Namespaces {
            for k in 1..=spec.passengers {
                let ns = passengers::netns(&spec.run, k);
                sys::add_netns(&ns)?;
                self.passenger_ns.push(ns);
            }
            // The first host forwards between its passengers and the link.
            in_netns(&self.namespaces[0], || {
                sys::write_sysctl("net.ipv4.ip_forward", "1")?;
                sys::write_sysctl("net.ipv6.conf.all.forwarding", "1")
            })?;
        }
        Ok(batches)
    }

    /// Refuses to run if a namespace has any interface but `lo` and ours.
    fn check_isolated(&self, spec: &LabSpec) -> Result<(), NetError> {
        let pax = |k: usize, name: &str| k == 0 && (1..=self.passenger_ns.len() as u16).any(|j| name == passengers::device(j));
        let hosts = self.namespaces.iter().enumerate().map(|(k, ns)| (Some(k), ns));
        for (k, ns) in hosts.chain(self.passenger_ns.iter().map(|ns| (None, ns))) {
            let out = Command::new("ip").args(["-n", ns, "-o", "link", "show"]).output().map_err(|e| NetError::Io("ip link show".into(), e))?;
            let text = String::from_utf8_lossy(&out.stdout);
            for line in text.lines() {
                let name = line.split(':').nth(1).unwrap_or("").trim().split('@').next().unwrap_or("");
                let ours = name == "lo"
                    || match k {
                        Some(k) => (k > 0 && name == format!("to-{}", spec.hosts[k - 1])) || (k + 1 < spec.hosts.len() && name == format!("to-{}", spec.hosts[k + 1])) || pax(k, name),
                        None => name == passengers::INSIDE,
                    };
                if !ours {
                    return Err(NetError::Unsafe(format!("namespace {ns} has an interface aerolink did not create: {name}")));
                }
            }
        }
        Ok(())
    }

    /// Hop `hop`'s link monitor file, if its capacity changes over time.
    pub fn monitor(&self, hop: usize) -> Option<&std::path::Path> {
        self.monitors.iter().find(|(h, _)| *h == hop).map(|(_, p)| p.as_path())
    }

    pub fn host(&self, name: &str) -> Option<&HostInfo> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// The passengers' own namespaces, in order (none unless they live in
    /// namespaces).
    pub fn passenger_netns(&self) -> &[String] {
        &self.passenger_ns
    }

    /// Environment for programs in the lab: `AEROLINK_<HOST>` (IPv4),
    /// `AEROLINK_<HOST>_V6`, plus `AEROLINK_CLIENT` / `AEROLINK_SERVER` for
    /// the two ends whatever they are called, and `TMPDIR` (the run's own
    /// directory, removed at teardown).
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = lab_env(&self.hosts, self.seed);
        if self.passengers > 0 {
            let list = |f: fn(u16) -> String| (1..=self.passengers).map(f).collect::<Vec<_>>().join(" ");
            env.push(("AEROLINK_PASSENGERS".into(), list(passenger_v4)));
            env.push(("AEROLINK_PASSENGERS_V6".into(), list(passenger_v6)));
            if !self.passenger_ns.is_empty() {
                env.push(("AEROLINK_PASSENGER_NETNS".into(), self.passenger_ns.join(" ")));
            }
        }
        for (hop, path) in &self.monitors {
            env.push((format!("AEROLINK_LINK{hop}_MONITOR"), path.display().to_string()));
        }
        env.push(("TMPDIR".into(), self.tmp.display().to_string()));
        env
    }

    /// A command that runs `sh -c cmd` in `host`'s namespace, in its own
    /// process group, killed if aerolink dies.
    pub fn command(&self, host: &str, cmd: &str) -> Result<Command, NetError> {
        let h = self.host(host).ok_or_else(|| NetError::Spec(format!("no host {host:?}; hosts are {}", self.hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>().join(", "))))?;
        Ok(netns_command(&h.netns, &["sh", "-c", cmd], &self.env()))
    }

    /// The run's own temporary directory (its programs' `TMPDIR`), removed
    /// with the lab.
    pub fn tmp_dir(&self) -> &std::path::Path {
        &self.tmp
    }

    /// Whether a pump stopped on its own, the link with it: a TUN device
    /// removed under it, or a device error. [`Lab::shutdown`]'s report says
    /// which ([`LabReport::errors`]).
    pub fn broken(&self) -> bool {
        !self.torn_down && self.stop.load(Ordering::SeqCst)
    }

    /// Stops the pumps, kills what runs in the namespaces and deletes them.
    pub fn shutdown(mut self) -> LabReport {
        self.teardown()
    }

    fn teardown(&mut self) -> LabReport {
        self.stop.store(true, Ordering::SeqCst);
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe {
            libc::write(self.stop_fd, (&one as *const u64).cast(), 8);
        }
        crate::pump::shared::poke();
        let directions: Vec<PumpReport> = self.pumps.drain(..).filter_map(|h| h.join()).flatten().collect();
        let sink = self.logger.take().and_then(|h| h.join().ok()).and_then(|r| r.ok()).unwrap_or_default();
        if !self.torn_down {
            for ns in self.namespaces.iter().chain(&self.passenger_ns) {
                remove_namespace(ns);
            }
            for (_, path) in &self.monitors {
                let _ = std::fs::remove_file(path);
                let _ = std::fs::remove_file(path.with_extension("tmp"));
            }
            let _ = std::fs::remove_dir_all(&self.tmp);
            // SAFETY: closing our own fd once.
            unsafe {
                libc::close(self.stop_fd);
            }
            self.torn_down = true;
        }
        LabReport { directions, log_events: sink.log_events, pcap: sink.pcap }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if !self.torn_down {
            self.teardown();
        }
    }
}

pub fn lab_env(hosts: &[HostInfo], seed: u64) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for h in hosts {
        let key = h.name.to_ascii_uppercase();
        env.push((format!("AEROLINK_{key}"), h.ipv4.clone()));
        env.push((format!("AEROLINK_{key}_V6"), h.ipv6.clone()));
    }
    if let (Some(c), Some(s)) = (hosts.first(), hosts.last()) {
        env.push(("AEROLINK_CLIENT".into(), c.ipv4.clone()));
        env.push(("AEROLINK_CLIENT_V6".into(), c.ipv6.clone()));
        env.push(("AEROLINK_SERVER".into(), s.ipv4.clone()));
        env.push(("AEROLINK_SERVER_V6".into(), s.ipv6.clone()));
    }
    env.push(("AEROLINK_SEED".into(), seed.to_string()));
    env.push(("AEROLINK_HOSTS".into(), hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>().join(" ")));
    env
}

/// `ip netns exec NS ARGV…` in a new process group, with the lab's
/// environment, killed (SIGKILL) if the thread that started it dies first
/// (util-linux's `setpriv --pdeathsig`, which keeps across the execs).
///
/// Nothing runs in the child before exec, so the standard library starts
/// it with `posix_spawn` (a vfork) rather than `fork`: a fork copies the
/// page tables of this process — pumps, loops, buffers — and makes every
/// page copy-on-write, which stalled the shared pump loops for tens of ms
/// each time a fleet's programs started (measured: 100 terminals' iperf3
/// starts).
pub fn netns_command(netns: &str, argv: &[&str], env: &[(String, String)]) -> Command {
    let mut c = Command::new("/usr/bin/setpriv");
    c.args(["--pdeathsig", "KILL", "ip", "netns", "exec", netns]).args(argv);
    for (k, v) in env {
        c.env(k, v);
    }
    c.process_group(0);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pump::PumpReport;

    #[test]
    fn a_refused_frame_is_a_fault_named_by_hop_and_direction() {
        let sound = PumpReport { hop: 0, dir: Some(crate::log::Dir::Up), dropped_loss: 40, ..Default::default() };
        let refusing =
            PumpReport { hop: 1, dir: Some(crate::log::Dir::Down), refused: 3, refused_why: Some("write to-client (1200 bytes): Invalid argument (os error 22)".into()), ..Default::default() };
        let rep = LabReport { directions: vec![sound.clone()], log_events: None, pcap: None };
        assert!(rep.faults().is_empty(), "a link model's losses are not faults");
        let rep = LabReport { directions: vec![sound, refusing], log_events: None, pcap: None };
        assert_eq!(
            rep.faults().iter().map(Fault::to_string).collect::<Vec<_>>(),
            vec!["hop 1 down: 3 frames refused by the kernel (the first: write to-client (1200 bytes): Invalid argument (os error 22))".to_string()]
        );
    }
}
