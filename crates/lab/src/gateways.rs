//! The gateway chain and what runs in it: the `ifc` preset (client ↔ airgw
//! ↔ groundgw ↔ server over cabin Wi-Fi, the space hop and a terrestrial
//! hop) and the PEP modes — none, split-tcp, quic-tunnel, vpn — started in
//! the right namespaces and stopped (rules removed) when dropped. Used by
//! `aerolink run --pep` and by experiments alike.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use aerolink_link::Profile;
use aerolink_net::lab::netns_command;
use aerolink_net::Lab;
use serde::{Deserialize, Serialize};

pub const HOSTS: [&str; 4] = ["client", "airgw", "groundgw", "server"];

/// The `ifc` chain around a space-hop profile.
pub fn ifc(space: Profile) -> (Vec<String>, Vec<Profile>) {
    let builtin = |name: &str| {
        let text = aerolink_link::builtin::get(name).expect("a built-in profile");
        Profile::parse(text, name, &[], &mut |_| Err("built-ins have no trace files".into())).expect("built-in profiles parse")
    };
    (HOSTS.iter().map(|s| s.to_string()).collect(), vec![builtin("cabin-wifi"), space, builtin("terrestrial")])
}

pub const MODES: &[&str] = &["none", "split-tcp", "quic-tunnel", "vpn"];

/// Which PEP, where, and how it is tuned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PepSpec {
    /// `none`, `split-tcp`, `quic-tunnel` or `vpn` (end-to-end
    /// encapsulation, with split-TCP proxies in both gateways that it
    /// leaves nothing to act on).
    pub mode: String,
    /// split-tcp: `air`, `ground` or `both`.
    pub at: String,
    /// TCP congestion control of the proxies' onward connections.
    pub tcp_cc: String,
    /// Initial window (segments) of the proxies' onward TCP connections.
    pub initcwnd: Option<u32>,
    /// The tunnel's QUIC congestion control (cubic, newreno, bbr, rate).
    pub tunnel_cc: String,
    /// The tunnel's windows preset.
    pub tunnel_preset: String,
    /// The rate the `rate` controller holds (e.g. "2Mbit/s").
    pub tunnel_rate: Option<String>,
    /// Longest wait between the tunnel's loss probes ("2s"), or "off" for
    /// stock QUIC (see `aerolink pep quic-tunnel --max-probe-timeout`).
    #[serde(default = "default_probe", skip_serializing_if = "is_default_probe")]
    pub tunnel_max_probe: String,
}

pub use aerolink_pep::quic_tunnel::DEFAULT_MAX_PROBE;

fn default_probe() -> String {
    DEFAULT_MAX_PROBE.into()
}

fn is_default_probe(s: &str) -> bool {
    s == DEFAULT_MAX_PROBE
}

impl Default for PepSpec {
    fn default() -> Self {
        PepSpec { mode: "none".into(), at: "both".into(), tcp_cc: "cubic".into(), initcwnd: None, tunnel_cc: "bbr".into(), tunnel_preset: "h-bdp1".into(), tunnel_rate: None, tunnel_max_probe: default_probe() }
    }
}

impl PepSpec {
    /// Checks the values, naming the offending key.
    pub fn validate(&self) -> Result<(), String> {
        if !MODES.contains(&self.mode.as_str()) {
            return Err(format!("pep {:?}: expected one of {}", self.mode, MODES.join(", ")));
        }
        if !["air", "ground", "both"].contains(&self.at.as_str()) {
            return Err(format!("pep_at {:?}: expected air, ground or both", self.at));
        }
        if !aerolink_work::sock::TCP_CCS.contains(&self.tcp_cc.as_str()) {
            return Err(format!("pep_cc {:?}: expected one of {}", self.tcp_cc, aerolink_work::sock::TCP_CCS.join(", ")));
        }
        if !aerolink_pep::quic_tunnel::TUNNEL_CCS.contains(&self.tunnel_cc.as_str()) {
            return Err(format!("tunnel_cc {:?}: expected one of {}", self.tunnel_cc, aerolink_pep::quic_tunnel::TUNNEL_CCS.join(", ")));
        }
        aerolink_work::quic::QuicKnobs::preset(&self.tunnel_preset).map_err(|m| format!("tunnel_preset: {m}"))?;
        match &self.tunnel_rate {
            Some(r) => {
                aerolink_link::units::parse_rate(r).map_err(|m| format!("tunnel_rate {r:?}: expected {m}"))?;
            }
            None if self.tunnel_cc == "rate" => return Err("tunnel_cc \"rate\": needs tunnel_rate (e.g. \"2Mbit/s\", at or below the space link's rate)".into()),
            None => {}
        }
        aerolink_pep::quic_tunnel::parse_max_probe(&self.tunnel_max_probe).map_err(|m| format!("tunnel_max_probe {:?}: {m}", self.tunnel_max_probe))?;
        Ok(())
    }

    /// A short label: `none`, `split-tcp`, `quic-tunnel/bbr`, …
    pub fn label(&self) -> String {
        match self.mode.as_str() {
            "quic-tunnel" if self.tunnel_max_probe == "off" => format!("quic-tunnel/{}/stock-probes", self.tunnel_cc),
            "quic-tunnel" if !is_default_probe(&self.tunnel_max_probe) => format!("quic-tunnel/{}/probes≤{}", self.tunnel_cc, self.tunnel_max_probe),
            "quic-tunnel" => format!("quic-tunnel/{}", self.tunnel_cc),
            "split-tcp" if self.at != "both" => format!("split-tcp@{}", self.at),
            m => m.to_string(),
        }
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

fn host<'a>(lab: &'a Lab, name: &str) -> Result<(usize, &'a aerolink_net::lab::HostInfo), String> {
    lab.hosts.iter().enumerate().find(|(_, h)| h.name == name).ok_or_else(|| format!("the PEP modes need a host named {name} (use the ifc topology: --topology ifc)"))
}

impl Gateways {
    /// Starts what `spec` asks for in `lab` and waits until each part is
    /// ready (its rules in, its tunnel up). `dir` holds the tunnel's key
    /// and, with `quiet`, the proxies' messages (`gateways.log`).
    pub fn start(lab: &Lab, exe: &Path, spec: &PepSpec, dir: &Path, quiet: bool) -> Result<Gateways, String> {
        spec.validate()?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let log = dir.join("gateways.log");
        let mut g = Gateways { children: Vec::new(), dir: None, server_override: None };
        let exe = exe.to_string_lossy().to_string();
        let env = lab.env();
        let mut start = |name: &str, args: Vec<String>| -> Result<(), String> {
            let (_, h) = host(lab, name)?;
            let mut argv = vec![exe.clone(), "pep".to_string()];
            argv.extend(args);
            let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
            let mut cmd = netns_command(&h.netns, &refs, &env);
            cmd.stdout(Stdio::piped());
            if quiet {
                let f = std::fs::OpenOptions::new().create(true).append(true).open(&log).map_err(|e| format!("{}: {e}", log.display()))?;
                cmd.stderr(f);
            }
            let mut child = cmd.spawn().map_err(|e| format!("starting the proxy in {name}: {e}"))?;
            let mut line = String::new();
            let out = child.stdout.take().expect("piped stdout");
            let _ = std::io::BufReader::new(out).read_line(&mut line);
            let ok = line.trim() == "ready";
            g.children.push((name.to_string(), child));
            if ok {
                Ok(())
            } else {
                let why = if quiet { std::fs::read_to_string(&log).ok().and_then(|t| t.lines().last().map(str::to_string)).unwrap_or_default() } else { "see its message above".into() };
                Err(format!("the proxy in {name} did not start: {why}"))
            }
        };
        let split = |from: &str| {
            let mut a = vec!["split-tcp".into(), "--from".into(), format!("to-{from}"), "--cc".into(), spec.tcp_cc.clone()];
            if let Some(n) = spec.initcwnd {
                a.extend(["--initcwnd".into(), n.to_string()]);
            }
            a
        };
        let r = (|| -> Result<(), String> {
            match spec.mode.as_str() {
                "none" => {}
                "split-tcp" | "vpn" => {
                    for (gw, from) in [("airgw", "client"), ("groundgw", "airgw")] {
                        if spec.mode == "vpn" || spec.at == "both" || (spec.at == "air") == (gw == "airgw") {
                            start(gw, split(from))?;
                        }
                    }
                    if spec.mode == "vpn" {
                        let (_, c) = host(lab, "client")?;
                        let s = lab.hosts.last().expect("hosts");
                        start(&s.name.clone(), vec!["vpn".into(), "--end".into(), "2".into(), "--peer".into(), c.ipv4.clone()])?;
                        start("client", vec!["vpn".into(), "--end".into(), "1".into(), "--peer".into(), s.ipv4.clone()])?;
                    }
                }
                "quic-tunnel" => {
                    let psk = dir.join("tunnel.psk");
                    write_private(&psk, &aerolink_pep::quic_tunnel::Psk::generate()).map_err(|e| format!("{}: {e}", psk.display()))?;
                    let mut tuning = vec!["--psk".into(), psk.to_string_lossy().to_string(), "--cc".into(), spec.tunnel_cc.clone(), "--preset".into(), spec.tunnel_preset.clone(), "--max-probe-timeout".into(), spec.tunnel_max_probe.clone()];
                    if let Some(r) = &spec.tunnel_rate {
                        tuning.extend(["--rate".into(), r.clone()]);
                    }
                    let mut ground = vec!["quic-tunnel".into(), "ground".into(), "--tcp-cc".into(), spec.tcp_cc.clone()];
                    if let Some(n) = spec.initcwnd {
                        ground.extend(["--initcwnd".into(), n.to_string()]);
                    }
                    ground.extend(tuning.clone());
                    start("groundgw", ground)?;
                    let (_, gw) = host(lab, "groundgw")?;
                    let mut air = vec!["quic-tunnel".into(), "air".into(), "--from".into(), "to-client".into(), "--ground".into(), gw.ipv4.clone()];
                    air.extend(tuning);
                    start("airgw", air)?;
                }
                other => return Err(format!("pep {other:?}: expected one of {}", MODES.join(", "))),
            }
            Ok(())
        })();
        g.dir = Some(dir.to_path_buf());
        if spec.mode == "vpn" {
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
