//! The gateway chain and what runs in it: the `ifc` preset (client ↔ airgw
//! ↔ groundgw ↔ server over cabin Wi-Fi, the space hop and a terrestrial
//! hop) and the PEP modes — none, split-tcp, quic-tunnel, http-prefetch, vpn, openvpn — started in
//! the right namespaces and stopped (rules removed) when dropped. Used by
//! `aerolink run --pep` and by experiments alike.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use aerolink_link::units::Rate;
use aerolink_net::lab::netns_command;
use aerolink_net::Lab;
use aerolink_pep::cli::{AirArgs, GroundArgs, Half, Intercept, PepAt, PepCmd, PepMode, PrefetchAirArgs, PrefetchGroundArgs, PrefetchHalf, SplitTcpArgs, TuningArgs, VpnArgs};
use aerolink_pep::quic_tunnel::{ProbeCap, TunnelCc};
use aerolink_work::cli::rate_arg;
use aerolink_work::quic::Preset;
use aerolink_work::sock::TcpCc;
use serde::{Deserialize, Serialize};

/// Which PEP, where, and how it is tuned: the `--pep*` and `--tunnel-*`
/// flags of `run` and `bench`, and the `pep*` and `tunnel_*` keys of
/// experiment files. Its JSON form is part of a run's key, so field names
/// and value spellings stay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct PepSpec {
    /// Performance-enhancing proxy in the gateways: none, split-tcp,
    /// quic-tunnel (TCP over one authenticated QUIC connection between
    /// airgw and groundgw), http-prefetch (an HTTP proxy pair: the ground
    /// half pushes the objects of each plain-HTTP page across the space hop
    /// before the browser asks), or vpn (client↔server IP-in-UDP, with split-TCP
    /// proxies in the gateways that it leaves nothing to act on; programs
    /// reach the server at 198.19.0.2 via $AEROLINK_SERVER).
    #[arg(id = "pep", long = "pep", default_value = "none", value_name = "MODE")]
    pub mode: PepMode,
    /// split-tcp: where it runs — air (airgw), ground (groundgw) or both. A
    /// download crosses the space hop from the ground side, so only a
    /// ground-side proxy sends it with its own congestion control.
    #[arg(id = "pep_at", long = "pep-at", default_value = "both", value_name = "WHERE")]
    pub at: PepAt,
    /// Congestion control of the proxies' onward TCP connections.
    #[arg(id = "pep_cc", long = "pep-cc", default_value = "cubic", value_name = "CC")]
    pub tcp_cc: TcpCc,
    /// Initial window (segments) of the proxies' onward TCP connections.
    #[arg(id = "pep_initcwnd", long = "pep-initcwnd", value_name = "SEGMENTS", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub initcwnd: Option<u32>,
    /// quic-tunnel: congestion control (rate holds --tunnel-rate through
    /// random loss; sat starts the ground half at --tunnel-rate, the space
    /// link's down rate, and follows the delivery rate).
    #[arg(long, default_value = "bbr", value_name = "CC")]
    pub tunnel_cc: TunnelCc,
    /// quic-tunnel: windows preset.
    #[arg(long, default_value = "h-bdp1", value_name = "PRESET")]
    pub tunnel_preset: Preset,
    /// quic-tunnel with --tunnel-cc rate: the rate to hold, e.g. 2Mbit/s,
    /// or `link`: follow the space link's capacity as its link monitor
    /// reports it (bonded channels going down and up). With --tunnel-cc
    /// sat: the space link's down rate (optional).
    #[arg(long, value_name = "RATE|link")]
    pub tunnel_rate: Option<TunnelRate>,
    /// quic-tunnel: longest wait between loss probes during an outage, or
    /// `off` for stock QUIC (probe interval doubles without bound).
    #[serde(default, skip_serializing_if = "is_default_probe")]
    #[arg(long, default_value = aerolink_pep::quic_tunnel::DEFAULT_MAX_PROBE, value_name = "DURATION|off")]
    pub tunnel_max_probe: ProbeCap,
}

/// A rate as the experiment file wrote it (`"2Mbit/s"`), parsed; `None`
/// for `"link"` (follow the link monitor).
#[derive(Clone, Debug, PartialEq)]
pub struct TunnelRate {
    pub text: String,
    pub rate: Option<Rate>,
}

impl std::str::FromStr for TunnelRate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "link" {
            return Ok(TunnelRate { text: s.to_string(), rate: None });
        }
        let rate = rate_arg(s).map_err(|m| format!("{m}, or \"link\" to follow the space link's monitor"))?;
        Ok(TunnelRate { text: s.to_string(), rate: Some(rate) })
    }
}

impl Serialize for TunnelRate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for TunnelRate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

fn is_default_probe(p: &ProbeCap) -> bool {
    *p == ProbeCap::DEFAULT
}

impl Default for PepSpec {
    fn default() -> Self {
        PepSpec {
            mode: PepMode::None,
            at: PepAt::Both,
            tcp_cc: TcpCc::Cubic,
            initcwnd: None,
            tunnel_cc: TunnelCc::Bbr,
            tunnel_preset: Preset::HBdp1,
            tunnel_rate: None,
            tunnel_max_probe: ProbeCap::DEFAULT,
        }
    }
}

/// Why the gateways of a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The lab lacks a host the PEP mode runs on (the user's topology).
    #[error("the PEP modes need a host named {0} (use the ifc topology: --topology ifc)")]
    NeedsHost(String),
    /// The `rate` controller was chosen without a rate (the user's).
    #[error("tunnel_cc \"rate\": needs tunnel_rate (e.g. \"2Mbit/s\", at or below the space link's rate, or \"link\")")]
    RateWithoutRate,
    /// The same, as the command line's flags name it.
    #[error("--tunnel-cc rate: needs --tunnel-rate (e.g. 2Mbit/s, at or below the space link's rate)")]
    FlagRateWithoutRate,
    #[error("tunnel_rate \"link\": only tunnel_cc \"rate\" follows the link monitor, not \"{0}\"; give a rate (e.g. \"10Mbit/s\")")]
    FollowWithoutRate(TunnelCc),
    /// `tunnel_rate = "link"` on a space link without a monitor (the user's).
    #[error("tunnel_rate \"link\": the space link's capacity never changes (only bonded links have a link monitor); give a rate instead")]
    NoMonitor,
    /// A file of the run (key, log) could not be written.
    #[error("{path}: {source}")]
    File { path: String, source: std::io::Error },
    /// A proxy could not be started.
    #[error("starting the proxy in {host}: {source}")]
    Spawn { host: String, source: std::io::Error },
    /// A proxy started but did not report ready.
    #[error("the proxy in {host} did not start: {why}")]
    NotReady { host: String, why: String },
    /// OpenVPN's key could not be made (no openvpn installed: the user's).
    #[error("{0}")]
    OpenVpn(aerolink_pep::PepError),
}

impl GatewayError {
    /// Whether the user must change the topology or the settings.
    pub fn is_user(&self) -> bool {
        matches!(self, GatewayError::NeedsHost(_) | GatewayError::RateWithoutRate | GatewayError::FlagRateWithoutRate | GatewayError::FollowWithoutRate(_) | GatewayError::NoMonitor)
            || matches!(self, GatewayError::OpenVpn(e) if e.is_user())
    }
}

impl PepSpec {
    /// Checks what the types do not: the `rate` controller needs a rate.
    pub fn validate(&self) -> Result<(), GatewayError> {
        if self.tunnel_cc == TunnelCc::Rate && self.tunnel_rate.is_none() {
            return Err(GatewayError::RateWithoutRate);
        }
        if self.tunnel_cc != TunnelCc::Rate && self.tunnel_rate.as_ref().is_some_and(|r| r.rate.is_none()) {
            return Err(GatewayError::FollowWithoutRate(self.tunnel_cc));
        }
        Ok(())
    }

    /// Checked as the `--pep*` and `--tunnel-*` flags give it (the error
    /// names the flags).
    pub fn checked_flags(&self) -> Result<PepSpec, GatewayError> {
        match self.validate() {
            Err(GatewayError::RateWithoutRate) => Err(GatewayError::FlagRateWithoutRate),
            Err(e) => Err(e),
            Ok(()) => Ok(self.clone()),
        }
    }

    /// A short label: `none`, `split-tcp`, `quic-tunnel/bbr`, …
    pub fn label(&self) -> String {
        match self.mode {
            PepMode::QuicTunnel if self.tunnel_max_probe.0.is_none() => format!("quic-tunnel/{}/stock-probes", self.tunnel_cc),
            PepMode::QuicTunnel if !is_default_probe(&self.tunnel_max_probe) => format!("quic-tunnel/{}/probes≤{}", self.tunnel_cc, self.tunnel_max_probe),
            PepMode::QuicTunnel => format!("quic-tunnel/{}", self.tunnel_cc),
            PepMode::SplitTcp if self.at != PepAt::Both => format!("split-tcp@{}", self.at),
            PepMode::HttpPrefetch if self.tcp_cc != TcpCc::Cubic => format!("http-prefetch/{}", self.tcp_cc),
            m => m.to_string(),
        }
    }

    /// The tunnel half's tuning; `follow`: the space link's monitor file
    /// and its capacity in the direction this half sends in, for
    /// `tunnel_rate = "link"`.
    fn tuning(&self, psk: &Path, follow: Option<(PathBuf, f64)>) -> TuningArgs {
        let fixed = self.tunnel_rate.as_ref().and_then(|r| r.rate);
        TuningArgs {
            psk: psk.to_path_buf(),
            cc: self.tunnel_cc,
            rate: fixed.or(follow.as_ref().map(|f| Rate { bits_per_sec: f.1 })),
            rate_follow: follow.map(|f| f.0),
            preset: self.tunnel_preset,
            idle_timeout: aerolink_link::Duration::from_secs(120),
            max_probe_timeout: self.tunnel_max_probe,
        }
    }

    /// The split-TCP proxy of the gateway whose clients come from `from`.
    fn split_tcp(&self, from: &str) -> PepCmd {
        PepCmd::SplitTcp(SplitTcpArgs { intercept: Intercept { from: format!("to-{from}"), ..Intercept::default() }, cc: self.tcp_cc, initcwnd: self.initcwnd, json: false })
    }

    /// What runs where for this spec: `(host, command)`, in start order.
    /// `psk` is the tunnel's key file; `ground` and the VPN ends' addresses
    /// come from the lab.
    pub fn commands(&self, lab: &Lab, psk: &Path) -> Result<Vec<(String, PepCmd)>, GatewayError> {
        let mut out = Vec::new();
        match self.mode {
            PepMode::None => {}
            PepMode::SplitTcp | PepMode::Vpn | PepMode::OpenVpn => {
                let vpn = self.mode != PepMode::SplitTcp;
                for (gw, from, at) in [("airgw", "client", PepAt::Air), ("groundgw", "airgw", PepAt::Ground)] {
                    if vpn || self.at == PepAt::Both || self.at == at {
                        out.push((gw.to_string(), self.split_tcp(from)));
                    }
                }
                if vpn {
                    let (_, c) = host(lab, "client")?;
                    let s = lab.hosts.last().ok_or_else(|| GatewayError::NeedsHost("server".into()))?;
                    let port = aerolink_pep::vpn::DEFAULT_PORT;
                    // OpenVPN's static key sits beside the tunnel's key.
                    let key = (self.mode == PepMode::OpenVpn).then(|| psk.with_file_name("openvpn.key"));
                    out.push((s.name.clone(), PepCmd::Vpn(VpnArgs { end: 2, peer: lab_addr(&c.ipv4, port), port, openvpn_key: key.clone() })));
                    out.push(("client".to_string(), PepCmd::Vpn(VpnArgs { end: 1, peer: lab_addr(&s.ipv4, port), port, openvpn_key: key })));
                }
            }
            PepMode::HttpPrefetch => {
                let listen = std::net::SocketAddr::from(([0u16; 8], aerolink_pep::prefetch::DEFAULT_PORT));
                out.push(("groundgw".to_string(), PepCmd::HttpPrefetch { half: PrefetchHalf::Ground(PrefetchGroundArgs { listen, cc: self.tcp_cc, initcwnd: self.initcwnd, json: false }) }));
                let (_, gw) = host(lab, "groundgw")?;
                let air = PrefetchAirArgs {
                    intercept: Intercept::default(),
                    ground: lab_addr(&gw.ipv4, aerolink_pep::prefetch::DEFAULT_PORT),
                    open_timeout: aerolink_link::Duration::from_secs(60),
                    json: false,
                };
                out.push(("airgw".to_string(), PepCmd::HttpPrefetch { half: PrefetchHalf::Air(air) }));
            }
            PepMode::QuicTunnel => {
                // `tunnel_rate = "link"`: each half follows the space hop's
                // monitor (airgw → groundgw is hop `airgw`'s index).
                let follows = self.tunnel_rate.as_ref().is_some_and(|r| r.rate.is_none());
                let (air_follow, ground_follow) = if follows {
                    let (hop, _) = host(lab, "airgw")?;
                    let path = lab.monitor(hop).ok_or(GatewayError::NoMonitor)?.to_path_buf();
                    let (up, down) = aerolink_net::monitor::read(&path).ok_or(GatewayError::NoMonitor)?;
                    (Some((path.clone(), up)), Some((path, down)))
                } else {
                    (None, None)
                };
                let ground = GroundArgs {
                    listen: std::net::SocketAddr::from(([0u16; 8], aerolink_pep::quic_tunnel::DEFAULT_PORT)),
                    tcp_cc: self.tcp_cc,
                    initcwnd: self.initcwnd,
                    tuning: self.tuning(psk, ground_follow),
                    json: false,
                };
                out.push(("groundgw".to_string(), PepCmd::QuicTunnel { half: Half::Ground(ground) }));
                let (_, gw) = host(lab, "groundgw")?;
                let air = AirArgs {
                    intercept: Intercept::default(),
                    ground: lab_addr(&gw.ipv4, aerolink_pep::quic_tunnel::DEFAULT_PORT),
                    open_timeout: aerolink_link::Duration::from_secs(60),
                    tuning: self.tuning(psk, air_follow),
                    json: false,
                };
                out.push(("airgw".to_string(), PepCmd::QuicTunnel { half: Half::Air(air) }));
            }
        }
        Ok(out)
    }
}

/// The proxies (and VPN ends) of one lab, stopped when dropped.
pub struct Gateways {
    children: Vec<(String, Child)>,
    dir: Option<PathBuf>,
    /// For `vpn`: the server's address inside the tunnel, which clients
    /// must use instead of its lab address.
    pub server_override: Option<(String, String)>,
}

fn host<'a>(lab: &'a Lab, name: &str) -> Result<(usize, &'a aerolink_net::lab::HostInfo), GatewayError> {
    lab.hosts.iter().enumerate().find(|(_, h)| h.name == name).ok_or_else(|| GatewayError::NeedsHost(name.into()))
}

/// A lab host's address (the lab gives every host a valid one) and a port.
fn lab_addr(ip: &str, port: u16) -> std::net::SocketAddr {
    // The lab assigns addresses from 198.18.0.0/15 it formats itself.
    std::net::SocketAddr::new(ip.parse().expect("a lab address"), port)
}

/// How long a proxy may take to say it is ready: above the QUIC tunnel's
/// own 60 s to open its connection across the space link (its air half is
/// ready once the ground half answered), so only a hung proxy meets it.
const READY_WITHIN: Duration = Duration::from_secs(120);

impl Gateways {
    /// Starts what `spec` asks for in `lab` and waits until each part is
    /// ready (its rules in, its tunnel up). `dir` holds the tunnel's key
    /// and, with `quiet`, the proxies' messages (`gateways.log`).
    pub fn start(lab: &Lab, exe: &Path, spec: &PepSpec, dir: &Path, quiet: bool) -> Result<Gateways, GatewayError> {
        spec.validate()?;
        std::fs::create_dir_all(dir).map_err(|source| GatewayError::File { path: dir.display().to_string(), source })?;
        let log = dir.join("gateways.log");
        let mut g = Gateways { children: Vec::new(), dir: None, server_override: None };
        let exe = exe.to_string_lossy().to_string();
        let env = lab.env();
        let mut start = |name: &str, cmd: PepCmd| -> Result<(), GatewayError> {
            let (_, h) = host(lab, name)?;
            let mut argv = vec![exe.clone(), "pep".to_string()];
            argv.extend(cmd.to_args());
            let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
            let mut cmd = netns_command(&h.netns, &refs, &env);
            cmd.stdout(Stdio::piped());
            if quiet {
                let f = std::fs::OpenOptions::new().create(true).append(true).open(&log).map_err(|source| GatewayError::File { path: log.display().to_string(), source })?;
                cmd.stderr(f);
            }
            let mut child = cmd.spawn().map_err(|source| GatewayError::Spawn { host: name.into(), source })?;
            // Its first line, "ready", within READY_WITHIN: a proxy that
            // hangs before it is ready must not hang the run.
            let out = child.stdout.take().expect("piped stdout");
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = std::io::BufReader::new(out).read_line(&mut line);
                let _ = tx.send(line);
            });
            let line = rx.recv_timeout(READY_WITHIN);
            let ok = line.as_deref().is_ok_and(|l| l.trim() == "ready");
            g.children.push((name.to_string(), child));
            if ok {
                Ok(())
            } else {
                let said = if quiet { std::fs::read_to_string(&log).ok().and_then(|t| t.lines().last().map(str::to_string)).unwrap_or_default() } else { "see its message above".into() };
                let why = if line.is_err() { format!("not ready within {} s; {said}", READY_WITHIN.as_secs()) } else { said };
                Err(GatewayError::NotReady { host: name.into(), why })
            }
        };
        let r = (|| -> Result<(), GatewayError> {
            let psk = dir.join("tunnel.psk");
            if spec.mode == PepMode::QuicTunnel {
                write_private(&psk, &aerolink_pep::quic_tunnel::Psk::generate()).map_err(|source| GatewayError::File { path: psk.display().to_string(), source })?;
            }
            if spec.mode == PepMode::OpenVpn {
                aerolink_pep::openvpn::genkey(&psk.with_file_name("openvpn.key")).map_err(GatewayError::OpenVpn)?;
            }
            for (name, cmd) in spec.commands(lab, &psk)? {
                start(&name, cmd)?;
            }
            Ok(())
        })();
        g.dir = Some(dir.to_path_buf());
        if matches!(spec.mode, PepMode::Vpn | PepMode::OpenVpn) {
            g.server_override = Some((aerolink_pep::vpn::inner_v4(2), aerolink_pep::vpn::inner_v6(2)));
        }
        r.map(|_| g)
    }

    /// The lab's environment for programs, with the server's address inside
    /// the VPN when there is one.
    pub fn env(&self, lab: &Lab) -> Vec<(String, String)> {
        let mut env = lab.env();
        if let Some((v4, v6)) = &self.server_override {
            for (k, v) in env.iter_mut() {
                if k == "AEROLINK_SERVER" {
                    *v = v4.clone();
                } else if k == "AEROLINK_SERVER_V6" {
                    *v = v6.clone();
                }
            }
        }
        env
    }

    /// The processes running (proxies and VPN ends), by host.
    pub fn processes(&self) -> Vec<(String, u32)> {
        self.children.iter().map(|(h, c)| (h.clone(), c.id())).collect()
    }

    /// Stops everything (SIGTERM first, so the proxies remove their rules).
    pub fn stop(&mut self) {
        // All at once: each drains its relays (≤ 2 s) while the others
        // still serve theirs.
        for (_, c) in &self.children {
            // SAFETY: signalling a process group we created.
            unsafe {
                libc::kill(-(c.id() as i32), libc::SIGTERM);
            }
        }
        for (_, c) in self.children.iter_mut().rev() {
            aerolink_net::procs::kill_process_group(c, Duration::from_secs(4));
        }
        self.children.clear();
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_file(d.join("tunnel.psk"));
            let _ = std::fs::remove_file(d.join("openvpn.key"));
        }
    }
}

impl Drop for Gateways {
    fn drop(&mut self) {
        self.stop();
    }
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    f.write_all(text.as_bytes())
}
