//! `aerolink pep …`: the proxies, run in a gateway namespace (by `run
//! --pep MODE`, or by hand with `aerolink exec LAB airgw -- aerolink pep
//! …`), and the VPN ends run in the client and server namespaces.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::error::user;

#[derive(Subcommand, Debug)]
pub enum PepCmd {
    /// Intercept the clients' TCP (nftables TPROXY, no client
    /// configuration) and carry it onward on the proxy's own connections.
    /// Rules are removed when it stops (Ctrl-C, SIGTERM).
    SplitTcp {
        #[command(flatten)]
        intercept: Intercept,
        /// Congestion control of the onward connections: reno, cubic, bbr.
        #[arg(long, default_value = "cubic")]
        cc: String,
        /// Initial congestion window (segments) of the onward connections.
        #[arg(long, value_name = "SEGMENTS")]
        initcwnd: Option<u32>,
        /// Print the statistics as JSON when stopping.
        #[arg(long)]
        json: bool,
    },
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
    /// One end of an IP-in-UDP tunnel between client and server (what a VPN
    /// does to a PEP: the gateways see only UDP). Creates `vpn0` with
    /// 198.19.0.END/24 and 2001:2:0:ff::END/64.
    Vpn {
        /// 1 at the client, 2 at the server.
        #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2))]
        end: u8,
        /// The other end's address (its address on the lab, not inside the
        /// tunnel), e.g. 198.18.2.2.
        #[arg(long)]
        peer: String,
        #[arg(long, default_value_t = aerolink_pep::vpn::DEFAULT_PORT)]
        port: u16,
    },
    /// Print a new pre-shared key (32 random bytes, hex) for the tunnel.
    Keygen,
}

#[derive(Args, Debug)]
pub struct Intercept {
    /// The interface facing the clients.
    #[arg(long, default_value = "to-client")]
    from: String,
    /// Local port of the transparent listener.
    #[arg(long, default_value_t = 7001)]
    port: u16,
}

#[derive(Subcommand, Debug)]
pub enum Half {
    /// The aircraft half: intercepts TCP and opens the tunnel to the ground.
    Air {
        #[command(flatten)]
        intercept: Intercept,
        /// The ground half's address (port 4433 unless given).
        #[arg(long, value_name = "ADDR[:PORT]")]
        ground: String,
        #[command(flatten)]
        tuning: TuningArgs,
        #[arg(long)]
        json: bool,
    },
    /// The ground half: accepts authenticated air gateways and connects
    /// onward.
    Ground {
        /// Address and port to listen on.
        #[arg(long, default_value = "[::]:4433")]
        listen: String,
        /// Congestion control of the onward TCP connections.
        #[arg(long, default_value = "cubic")]
        tcp_cc: String,
        /// Initial congestion window (segments) of the onward TCP connections.
        #[arg(long, value_name = "SEGMENTS")]
        initcwnd: Option<u32>,
        #[command(flatten)]
        tuning: TuningArgs,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug)]
pub struct TuningArgs {
    /// File holding the pre-shared key (hex, ≥ 16 bytes; `aerolink pep
    /// keygen`). Both halves need the same.
    #[arg(long, value_name = "FILE")]
    psk: PathBuf,
    /// Congestion control of the tunnel: cubic, newreno, bbr, or rate (hold
    /// --rate through random loss, like SCPS-TP).
    #[arg(long, default_value = "bbr")]
    cc: String,
    /// The rate the `rate` controller holds, e.g. 2Mbit/s.
    #[arg(long)]
    rate: Option<String>,
    /// Windows and initial window: quinn, default, h-bdp1, h-bdp2 (see
    /// docs/guide.md).
    #[arg(long, default_value = "h-bdp1")]
    preset: String,
    /// The tunnel survives this long without hearing from its peer: a
    /// space-link outage shorter than this resets nothing.
    #[arg(long, default_value = "120s")]
    idle_timeout: String,
    /// Longest wait between loss probes while nothing gets through (an
    /// outage), so the tunnel finds the link back within this; `off` for
    /// stock QUIC, whose probe interval doubles without bound (after an
    /// outage of T it may resume up to T later).
    #[arg(long, default_value = aerolink_pep::quic_tunnel::DEFAULT_MAX_PROBE, value_name = "DURATION|off")]
    max_probe_timeout: String,
}

impl TuningArgs {
    fn parse(&self) -> anyhow::Result<(aerolink_pep::quic_tunnel::Psk, aerolink_pep::quic_tunnel::Tuning)> {
        use aerolink_pep::quic_tunnel::{Psk, Tuning, TUNNEL_CCS};
        let text = std::fs::read_to_string(&self.psk).map_err(|e| user(format!("--psk {}: {e}", self.psk.display())))?;
        let psk = Psk::parse(&text).map_err(|m| user(format!("--psk {}: {m}", self.psk.display())))?;
        if !TUNNEL_CCS.contains(&self.cc.as_str()) {
            return Err(user(format!("--cc {}: expected one of {}", self.cc, TUNNEL_CCS.join(", "))));
        }
        let mut knobs = aerolink_work::quic::QuicKnobs::preset(&self.preset).map_err(|m| user(format!("--preset: {m}")))?;
        knobs.cc = self.cc.clone();
        let rate_bps = match &self.rate {
            Some(r) => Some(aerolink_link::units::parse_rate(r).map_err(|m| user(format!("--rate {r}: expected {m}")))?.bits_per_sec as u64),
            None => None,
        };
        if self.cc == "rate" && rate_bps.is_none() {
            return Err(user("--cc rate: needs --rate (e.g. --rate 2Mbit/s, at or below the space link's rate)"));
        }
        let idle = aerolink_link::units::parse_duration(&self.idle_timeout).map_err(|m| user(format!("--idle-timeout {}: expected {m}", self.idle_timeout)))?;
        if idle.0 == 0 {
            return Err(user(format!("--idle-timeout {}: expected more than 0", self.idle_timeout)));
        }
        let m = &self.max_probe_timeout;
        let max_probe_timeout = aerolink_pep::quic_tunnel::parse_max_probe(m).map_err(|e| user(format!("--max-probe-timeout {m}: {e}")))?;
        Ok((psk, Tuning { knobs, rate_bps, idle_timeout: Duration::from_nanos(idle.0), max_probe_timeout }))
    }
}

fn socket_addr(flag: &str, s: &str, default_port: u16) -> anyhow::Result<SocketAddr> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    match s.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>() {
        Ok(ip) => Ok(SocketAddr::new(ip, default_port)),
        Err(_) => Err(user(format!("--{flag} {s}: expected an address, e.g. 198.18.1.2 or 198.18.1.2:4433 or [2001:2:0:1::2]:4433"))),
    }
}

fn check_iface(i: &Intercept) -> anyhow::Result<()> {
    if !std::path::Path::new("/sys/class/net").join(&i.from).exists() {
        return Err(user(format!("--from {}: no such interface in this namespace (run it in a gateway: aerolink exec LAB airgw -- aerolink pep …)", i.from)));
    }
    Ok(())
}

fn check_tcp_cc(flag: &str, cc: &str) -> anyhow::Result<()> {
    if !aerolink_work::sock::TCP_CCS.contains(&cc) {
        return Err(user(format!("--{flag} {cc}: expected one of {}", aerolink_work::sock::TCP_CCS.join(", "))));
    }
    Ok(())
}

/// Resolves on SIGTERM, SIGINT or SIGHUP. Made before any rule goes in: a
/// signal between the two would otherwise kill the proxy and leave its
/// rules behind.
fn stop_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
    })
}

/// The runner waits for this line before starting programs.
fn ready() {
    use std::io::Write;
    println!("ready");
    let _ = std::io::stdout().flush();
}

fn finish(name: &str, stats: &aerolink_pep::relay::Stats, json: bool) -> anyhow::Result<i32> {
    if json {
        println!("{}", serde_json::to_string(stats)?);
    }
    eprintln!(
        "{name}: {} connections ({} failed to open, {} broken), {} bytes up, {} bytes down{}; stopped, rules removed",
        stats.connections,
        stats.failed,
        stats.broken,
        stats.bytes_up,
        stats.bytes_down,
        if stats.tunnels + stats.refused + stats.garbage > 0 { format!(", {} tunnels, {} peers refused, {} garbage datagrams dropped", stats.tunnels, stats.refused, stats.garbage) } else { String::new() }
    );
    Ok(0)
}

pub fn run(cmd: PepCmd) -> anyhow::Result<i32> {
    aerolink_pep::relay::raise_fd_limit();
    let rt = || tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    match cmd {
        PepCmd::Keygen => {
            println!("{}", aerolink_pep::quic_tunnel::Psk::generate());
            Ok(0)
        }
        PepCmd::SplitTcp { intercept, cc, initcwnd, json } => {
            check_tcp_cc("cc", &cc)?;
            check_iface(&intercept)?;
            let stats = rt()?.block_on(async move {
                let stop = stop_signal()?;
                aerolink_pep::split_tcp::run(aerolink_pep::split_tcp::Options { from: intercept.from, port: intercept.port, cc, initcwnd }, stop, ready).await
            })?;
            finish("split-tcp", &stats, json)
        }
        PepCmd::QuicTunnel { half: Half::Air { intercept, ground, tuning, json } } => {
            check_iface(&intercept)?;
            let ground = socket_addr("ground", &ground, aerolink_pep::quic_tunnel::DEFAULT_PORT)?;
            let (psk, tuning) = tuning.parse()?;
            let stats = rt()?.block_on(async move {
                let stop = stop_signal()?;
                aerolink_pep::quic_tunnel::air(aerolink_pep::quic_tunnel::AirOptions { from: intercept.from, port: intercept.port, ground, psk, tuning }, stop, ready).await
            })?;
            finish("quic-tunnel air", &stats, json)
        }
        PepCmd::QuicTunnel { half: Half::Ground { listen, tcp_cc, initcwnd, tuning, json } } => {
            check_tcp_cc("tcp-cc", &tcp_cc)?;
            let listen = socket_addr("listen", &listen, aerolink_pep::quic_tunnel::DEFAULT_PORT)?;
            let (psk, tuning) = tuning.parse()?;
            let stats = rt()?.block_on(async move {
                let stop = stop_signal()?;
                aerolink_pep::quic_tunnel::ground(aerolink_pep::quic_tunnel::GroundOptions { listen, psk, tuning, tcp_cc, initcwnd }, stop, ready).await
            })?;
            finish("quic-tunnel ground", &stats, json)
        }
        PepCmd::Vpn { end, peer, port } => {
            let peer = socket_addr("peer", &peer, aerolink_pep::vpn::DEFAULT_PORT)?;
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
                signal_hook::flag::register(sig, stop.clone())?;
            }
            let st = aerolink_pep::vpn::run(aerolink_pep::vpn::Options { end, peer, port }, &stop, ready)?;
            eprintln!("vpn: {} packets out, {} in, {} foreign datagrams dropped", st.packets_out, st.packets_in, st.foreign_dropped);
            Ok(0)
        }
    }
}
