//! The proxies' command lines, typed: `aerolink pep split-tcp |
//! quic-tunnel air | quic-tunnel ground | http-prefetch air |
//! http-prefetch ground | vpn | keygen`.
//!
//! One definition serves both ends: the binary parses its flags with it,
//! and the lab builds the same typed value to start a gateway, turning it
//! into arguments with [`PepCmd::to_args`]. [`PepCmd::from_args`] parses
//! them back; a test round-trips every variant.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use aerolink_link::units::Rate;
use aerolink_link::Duration;
use aerolink_work::cli::{duration_arg, duration_text, flag, rate_arg, rate_text, switch};
use aerolink_work::quic::Preset;
use aerolink_work::sock::TcpCc;

use crate::quic_tunnel::{ProbeCap, TunnelCc, DEFAULT_MAX_PROBE, DEFAULT_PORT};

aerolink_work::choice! {
    /// Which proxy runs on the gateway chain: none, transparent split TCP,
    /// TCP over the QUIC tunnel, the HTTP prefetching proxy, or an
    /// end-to-end VPN (with split-TCP proxies that it leaves nothing to act
    /// on).
    pub enum PepMode { None = "none", SplitTcp = "split-tcp", QuicTunnel = "quic-tunnel", HttpPrefetch = "http-prefetch", Vpn = "vpn", OpenVpn = "openvpn" }
}

aerolink_work::choice! {
    /// Where split TCP runs: the aircraft gateway, the ground gateway, or both.
    pub enum PepAt { Air = "air", Ground = "ground", Both = "both" }
}

#[derive(Subcommand, Debug, Clone, PartialEq)]
pub enum PepCmd {
    /// Intercept the clients' TCP (nftables TPROXY, no client
    /// configuration) and carry it onward on the proxy's own connections.
    /// Rules are removed when it stops (Ctrl-C, SIGTERM).
    SplitTcp(SplitTcpArgs),
    /// TCP over one long-lived QUIC connection between the gateways: `air`
    /// intercepts the clients' TCP and carries each connection as a QUIC
    /// stream to `ground`, which connects onward. The halves prove a
    /// pre-shared key to each other (make one with `aerolink pep keygen`).
    ///
    /// Example, in a lab from `aerolink up lab --topology ifc --space mss`:
    ///   aerolink pep keygen > /tmp/psk
    ///   aerolink exec lab groundgw -- aerolink pep quic-tunnel ground --psk /tmp/psk &
    ///   aerolink exec lab airgw -- aerolink pep quic-tunnel air --ground 198.18.1.2 --psk /tmp/psk
    #[command(verbatim_doc_comment)]
    QuicTunnel {
        #[command(subcommand)]
        half: Half,
    },
    /// An application-layer PEP: the air half intercepts the cabin's plain
    /// HTTP (TCP port 80, no client configuration) and answers from objects
    /// the ground half pushed; the ground half fetches what the air half
    /// forwards, reads the pages and style sheets for the objects they
    /// reference and pushes those down the one tunnel connection before the
    /// browser asks. HTTPS and QUIC pass untouched.
    ///
    /// Example, in a lab from `aerolink up lab --topology ifc --space mss`:
    ///   aerolink exec lab groundgw -- aerolink pep http-prefetch ground &
    ///   aerolink exec lab airgw -- aerolink pep http-prefetch air --ground 198.18.1.2
    #[command(verbatim_doc_comment)]
    HttpPrefetch {
        #[command(subcommand)]
        half: PrefetchHalf,
    },
    /// One end of an IP-in-UDP tunnel between client and server (what a VPN
    /// does to a PEP: the gateways see only UDP). Creates `vpn0` with
    /// 198.19.0.END/24 and 2001:2:0:ff::END/64.
    Vpn(VpnArgs),
    /// Print a new pre-shared key (32 random bytes, hex) for the tunnel.
    Keygen,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct Intercept {
    /// The interface facing the clients.
    #[arg(long, default_value = "to-client")]
    pub from: String,
    /// Local port of the transparent listener.
    #[arg(long, default_value_t = 7001)]
    pub port: u16,
}

impl Default for Intercept {
    fn default() -> Self {
        Intercept { from: "to-client".into(), port: 7001 }
    }
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct SplitTcpArgs {
    #[command(flatten)]
    pub intercept: Intercept,
    /// Congestion control of the onward connections.
    #[arg(long, default_value = "cubic")]
    pub cc: TcpCc,
    /// Initial congestion window (segments) of the onward connections.
    #[arg(long, value_name = "SEGMENTS")]
    pub initcwnd: Option<u32>,
    /// Print the statistics as JSON when stopping.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug, Clone, PartialEq)]
pub enum Half {
    /// The aircraft half: intercepts TCP and opens the tunnel to the ground.
    Air(AirArgs),
    /// The ground half: accepts authenticated air gateways and connects
    /// onward.
    Ground(GroundArgs),
}

#[derive(Subcommand, Debug, Clone, PartialEq)]
pub enum PrefetchHalf {
    /// The aircraft half: intercepts the cabin's port 80 and opens the
    /// tunnel to the ground half.
    Air(PrefetchAirArgs),
    /// The ground half: accepts air halves, fetches and pushes.
    Ground(PrefetchGroundArgs),
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct PrefetchAirArgs {
    /// The cabin's interface, and the transparent listener its port 80 is
    /// handed to.
    #[command(flatten)]
    pub intercept: Intercept,
    /// The ground half's address (port 4480 unless given).
    #[arg(long, value_name = "ADDR[:PORT]", value_parser = prefetch_addr)]
    pub ground: SocketAddr,
    /// Give up opening the tunnel after this long.
    #[arg(long, default_value = "60s", value_parser = positive_duration)]
    pub open_timeout: Duration,
    /// Print the counts as JSON when stopping.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct PrefetchGroundArgs {
    /// Address and port to listen on.
    #[arg(long, default_value = "[::]:4480", value_parser = prefetch_addr)]
    pub listen: SocketAddr,
    /// Congestion control of the tunnel (it carries the pushes down) and of
    /// the fetches from origins.
    #[arg(long, default_value = "cubic")]
    pub cc: TcpCc,
    /// Initial congestion window (segments) of the tunnel's pushes and the
    /// fetches (set on every route of the ground gateway; the kernel's 10
    /// unless given).
    #[arg(long, value_name = "SEGMENTS", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub initcwnd: Option<u32>,
    /// Print the counts as JSON when stopping.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct AirArgs {
    #[command(flatten)]
    pub intercept: Intercept,
    /// The ground half's address (port 4433 unless given).
    #[arg(long, value_name = "ADDR[:PORT]", value_parser = tunnel_addr)]
    pub ground: SocketAddr,
    /// Give up opening the tunnel after this long. The ground answers
    /// nothing to a tunnel keyed with another key, so a wrong --psk shows
    /// as silence.
    #[arg(long, default_value = "60s", value_parser = positive_duration)]
    pub open_timeout: Duration,
    #[command(flatten)]
    pub tuning: TuningArgs,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct GroundArgs {
    /// Address and port to listen on.
    #[arg(long, default_value = "[::]:4433", value_parser = tunnel_addr)]
    pub listen: SocketAddr,
    /// Congestion control of the onward TCP connections.
    #[arg(long, default_value = "cubic")]
    pub tcp_cc: TcpCc,
    /// Initial congestion window (segments) of the onward TCP connections.
    #[arg(long, value_name = "SEGMENTS")]
    pub initcwnd: Option<u32>,
    #[command(flatten)]
    pub tuning: TuningArgs,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct TuningArgs {
    /// File holding the pre-shared key (hex, ≥ 16 bytes; `aerolink pep
    /// keygen`). Both halves need the same.
    #[arg(long, value_name = "FILE")]
    pub psk: PathBuf,
    /// Congestion control of the tunnel (`rate` holds --rate through random
    /// loss, like SCPS-TP).
    #[arg(long, default_value = "bbr")]
    pub cc: TunnelCc,
    /// The rate the `rate` controller holds, e.g. 2Mbit/s; with `--cc sat`
    /// the space link's down rate, the ground half's first window (rate ×
    /// RTT; the air half measures its own).
    #[arg(long, value_parser = rate_arg)]
    pub rate: Option<Rate>,
    /// With `--cc rate`: follow the capacity a link monitor file reports
    /// (`$AEROLINK_LINK<hop>_MONITOR`; bonded channels going down and up)
    /// for the direction this half sends in; --rate is where it starts.
    #[arg(long, value_name = "FILE")]
    pub rate_follow: Option<PathBuf>,
    /// Windows and initial window (see docs/guide.md).
    #[arg(long, default_value = "h-bdp1")]
    pub preset: Preset,
    /// The tunnel survives this long without hearing from its peer: a
    /// space-link outage shorter than this resets nothing.
    #[arg(long, default_value = "120s", value_parser = positive_duration)]
    pub idle_timeout: Duration,
    /// Longest wait between loss probes while nothing gets through (an
    /// outage), so the tunnel finds the link back within this; `off` for
    /// stock QUIC, whose probe interval doubles without bound (after an
    /// outage of T it may resume up to T later).
    #[arg(long, default_value = DEFAULT_MAX_PROBE, value_name = "DURATION|off")]
    pub max_probe_timeout: ProbeCap,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct VpnArgs {
    /// 1 at the client, 2 at the server.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub end: u8,
    /// The other end's address (its address on the lab, not inside the
    /// tunnel), e.g. 198.18.2.2.
    #[arg(long, value_name = "ADDR[:PORT]", value_parser = vpn_addr)]
    pub peer: SocketAddr,
    #[arg(long, default_value_t = crate::vpn::DEFAULT_PORT)]
    pub port: u16,
    /// Run Debian's OpenVPN (static-key mode, AES-256-CBC + HMAC-SHA256)
    /// with this key file (`openvpn --genkey secret FILE`) instead of our
    /// unencrypted tunnel.
    #[arg(long, value_name = "FILE")]
    pub openvpn_key: Option<std::path::PathBuf>,
}

fn addr_with_default(s: &str, default_port: u16) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    match s.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        Ok(ip) => Ok(SocketAddr::new(ip, default_port)),
        Err(_) => Err(format!("expected an address, e.g. 198.18.1.2 or 198.18.1.2:{default_port} or [2001:2:0:1::2]:{default_port}")),
    }
}

/// A tunnel address; port 4433 unless given.
pub fn tunnel_addr(s: &str) -> Result<SocketAddr, String> {
    addr_with_default(s, DEFAULT_PORT)
}

/// The prefetching proxy's ground address; port 4480 unless given.
pub fn prefetch_addr(s: &str) -> Result<SocketAddr, String> {
    addr_with_default(s, crate::prefetch::DEFAULT_PORT)
}

/// A VPN peer's address; the VPN's port unless given.
pub fn vpn_addr(s: &str) -> Result<SocketAddr, String> {
    addr_with_default(s, crate::vpn::DEFAULT_PORT)
}

fn positive_duration(s: &str) -> Result<Duration, String> {
    match duration_arg(s)? {
        d if d.0 == 0 => Err("expected more than 0".into()),
        d => Ok(d),
    }
}

/// For parsing a pep command line on its own.
#[derive(Parser, Debug)]
#[command(name = "pep", no_binary_name = true)]
struct Line {
    #[command(subcommand)]
    cmd: PepCmd,
}

impl Intercept {
    fn push(&self, a: &mut Vec<String>) {
        flag(a, "from", &self.from);
        flag(a, "port", self.port);
    }
}

impl TuningArgs {
    fn push(&self, a: &mut Vec<String>) {
        flag(a, "psk", self.psk.display());
        flag(a, "cc", self.cc);
        if let Some(r) = self.rate {
            flag(a, "rate", rate_text(r));
        }
        if let Some(f) = &self.rate_follow {
            flag(a, "rate-follow", f.display());
        }
        flag(a, "preset", self.preset);
        flag(a, "idle-timeout", duration_text(self.idle_timeout));
        flag(a, "max-probe-timeout", self.max_probe_timeout);
    }
}

impl PepCmd {
    /// The arguments after `aerolink pep`, which
    /// [`from_args`](Self::from_args) parses back to `self`.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        match self {
            PepCmd::SplitTcp(s) => {
                a.push("split-tcp".into());
                s.intercept.push(&mut a);
                flag(&mut a, "cc", s.cc);
                if let Some(n) = s.initcwnd {
                    flag(&mut a, "initcwnd", n);
                }
                switch(&mut a, "json", s.json);
            }
            PepCmd::QuicTunnel { half: Half::Air(x) } => {
                a.extend(["quic-tunnel".into(), "air".into()]);
                x.intercept.push(&mut a);
                flag(&mut a, "ground", x.ground);
                flag(&mut a, "open-timeout", duration_text(x.open_timeout));
                x.tuning.push(&mut a);
                switch(&mut a, "json", x.json);
            }
            PepCmd::QuicTunnel { half: Half::Ground(g) } => {
                a.extend(["quic-tunnel".into(), "ground".into()]);
                flag(&mut a, "listen", g.listen);
                flag(&mut a, "tcp-cc", g.tcp_cc);
                if let Some(n) = g.initcwnd {
                    flag(&mut a, "initcwnd", n);
                }
                g.tuning.push(&mut a);
                switch(&mut a, "json", g.json);
            }
            PepCmd::HttpPrefetch { half: PrefetchHalf::Air(x) } => {
                a.extend(["http-prefetch".into(), "air".into()]);
                x.intercept.push(&mut a);
                flag(&mut a, "ground", x.ground);
                flag(&mut a, "open-timeout", duration_text(x.open_timeout));
                switch(&mut a, "json", x.json);
            }
            PepCmd::HttpPrefetch { half: PrefetchHalf::Ground(g) } => {
                a.extend(["http-prefetch".into(), "ground".into()]);
                flag(&mut a, "listen", g.listen);
                flag(&mut a, "cc", g.cc);
                if let Some(n) = g.initcwnd {
                    flag(&mut a, "initcwnd", n);
                }
                switch(&mut a, "json", g.json);
            }
            PepCmd::Vpn(v) => {
                a.push("vpn".into());
                flag(&mut a, "end", v.end);
                flag(&mut a, "peer", v.peer);
                flag(&mut a, "port", v.port);
                if let Some(k) = &v.openvpn_key {
                    flag(&mut a, "openvpn-key", k.display());
                }
            }
            PepCmd::Keygen => a.push("keygen".into()),
        }
        a
    }

    /// Parses the arguments after `aerolink pep`.
    pub fn from_args<I: IntoIterator<Item = T>, T: Into<std::ffi::OsString> + Clone>(args: I) -> Result<PepCmd, clap::Error> {
        Line::try_parse_from(args).map(|l| l.cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tunings() -> Vec<TuningArgs> {
        let mut v = Vec::new();
        for (i, cc) in TunnelCc::ALL.iter().enumerate() {
            for preset in Preset::ALL {
                v.push(TuningArgs {
                    psk: "/tmp/lab/tunnel.psk".into(),
                    cc: *cc,
                    rate: (*cc == TunnelCc::Rate || i == 0).then_some(Rate { bits_per_sec: 1_890_000.0 }),
                    preset: *preset,
                    idle_timeout: Duration::from_secs(120),
                    max_probe_timeout: [ProbeCap::DEFAULT, ProbeCap(None), ProbeCap(Some(std::time::Duration::from_millis(1500)))][i % 3],
                    rate_follow: (*cc == TunnelCc::Rate && i % 2 == 0).then(|| "/tmp/aerolink-x-link1.monitor".into()),
                });
            }
        }
        v
    }

    fn every_variant() -> Vec<PepCmd> {
        let mut v = vec![PepCmd::Keygen];
        for (i, cc) in TcpCc::ALL.iter().enumerate() {
            v.push(PepCmd::SplitTcp(SplitTcpArgs { intercept: Intercept { from: format!("to-host{i}"), port: 7001 + i as u16 }, cc: *cc, initcwnd: (i % 2 == 0).then_some(40), json: i % 2 == 1 }));
        }
        for (i, t) in tunings().into_iter().enumerate() {
            let ground: SocketAddr = if i % 2 == 0 { "198.18.1.2:4433".parse().unwrap() } else { "[2001:2:0:1::2]:4444".parse().unwrap() };
            v.push(PepCmd::QuicTunnel {
                half: Half::Air(AirArgs { intercept: Intercept::default(), ground, open_timeout: Duration::from_secs(if i % 2 == 0 { 60 } else { 5 }), tuning: t.clone(), json: i % 2 == 0 }),
            });
            let tcp_cc = TcpCc::ALL[i % TcpCc::ALL.len()];
            v.push(PepCmd::QuicTunnel { half: Half::Ground(GroundArgs { listen: "[::]:4433".parse().unwrap(), tcp_cc, initcwnd: (i % 2 == 1).then_some(10), tuning: t, json: false }) });
        }
        for (i, cc) in TcpCc::ALL.iter().enumerate() {
            let ground: SocketAddr = if i % 2 == 0 { "198.18.1.2:4480".parse().unwrap() } else { "[2001:2:0:1::2]:4481".parse().unwrap() };
            v.push(PepCmd::HttpPrefetch {
                half: PrefetchHalf::Air(PrefetchAirArgs {
                    intercept: Intercept { from: format!("to-host{i}"), port: 7002 + i as u16 },
                    ground,
                    open_timeout: Duration::from_secs(5 + i as u64),
                    json: i % 2 == 0,
                }),
            });
            v.push(PepCmd::HttpPrefetch { half: PrefetchHalf::Ground(PrefetchGroundArgs { listen: ground, cc: *cc, initcwnd: (i % 2 == 0).then_some(40), json: i % 2 == 1 }) });
        }
        for end in [1u8, 2] {
            v.push(PepCmd::Vpn(VpnArgs { end, peer: "198.18.2.2:4789".parse().unwrap(), port: 4789, openvpn_key: (end == 2).then(|| "/tmp/k".into()) }));
        }
        v
    }

    #[test]
    fn every_pep_command_round_trips_through_its_command_line() {
        for cmd in every_variant() {
            let args = cmd.to_args();
            let back = PepCmd::from_args(&args).unwrap_or_else(|e| panic!("{args:?} does not parse: {e}"));
            assert_eq!(back, cmd, "{args:?}");
        }
    }

    #[test]
    fn bad_values_name_the_flag_and_what_is_allowed() {
        let e = PepCmd::from_args(["quic-tunnel", "ground", "--psk", "k", "--cc", "vegas"]).unwrap_err().to_string();
        assert!(e.contains("--cc") && e.contains("rate"), "{e}");
        let e = PepCmd::from_args(["quic-tunnel", "ground", "--psk", "k", "--max-probe-timeout", "0s"]).unwrap_err().to_string();
        assert!(e.contains("--max-probe-timeout") && e.contains("or off"), "{e}");
        let e = PepCmd::from_args(["quic-tunnel", "air", "--psk", "k", "--ground", "somewhere"]).unwrap_err().to_string();
        assert!(e.contains("--ground") && e.contains("expected an address"), "{e}");
    }
}
