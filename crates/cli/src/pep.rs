//! `aerolink pep …`: the proxies, run in a gateway namespace (by `run
//! --pep MODE`, or by hand with `aerolink exec LAB airgw -- aerolink pep
//! …`), and the VPN ends run in the client and server namespaces. The flags
//! are defined once, in [`aerolink_pep::cli`], where the lab builds the
//! same commands.

use std::time::Duration;

use aerolink_pep::cli::{AirArgs, GroundArgs, Half, Intercept, PepCmd, PrefetchAirArgs, PrefetchGroundArgs, PrefetchHalf, SplitTcpArgs, TuningArgs, VpnArgs};
use aerolink_pep::quic_tunnel::{Psk, Tuning, TunnelCc};

use crate::error::user;

/// A key file others can read is refused, as ssh refuses such a private
/// key: whoever reads it can join the tunnel.
fn check_private(path: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).map_err(|e| user(format!("--psk {}: {e}", path.display())))?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(user(format!("--psk {}: readable by group or others (mode {:o}); allowed: owner only (`chmod 600 {}`)", path.display(), mode & 0o777, path.display())));
    }
    Ok(())
}

/// The key from its file, and the tunnel's tuning for the half that sends
/// up (air) or down (ground).
fn tuning(t: TuningArgs, up: bool) -> anyhow::Result<(Psk, Tuning)> {
    check_private(&t.psk)?;
    let text = std::fs::read_to_string(&t.psk).map_err(|e| user(format!("--psk {}: {e}", t.psk.display())))?;
    let psk = Psk::parse(&text).map_err(|m| user(format!("--psk {}: {m}", t.psk.display())))?;
    if t.cc == TunnelCc::Rate && t.rate.is_none() {
        return Err(user("--cc rate: needs --rate (e.g. --rate 2Mbit/s, at or below the space link's rate)"));
    }
    if t.rate_follow.is_some() && t.cc != TunnelCc::Rate {
        return Err(user(format!("--rate-follow: only with --cc rate (not {})", t.cc)));
    }
    let tuning = Tuning {
        preset: t.preset,
        cc: t.cc,
        // sat: the rate is the down link's, the ground half's first window;
        // the air half measures its own (a 3 Mbit/s return link must not
        // get a 250 Mbit/s first window).
        rate_bps: t.rate.filter(|_| !(t.cc == TunnelCc::Sat && up)).map(|r| r.bits_per_sec as u64),
        idle_timeout: Duration::from_nanos(t.idle_timeout.0),
        max_probe_timeout: t.max_probe_timeout,
        rate_follow: t.rate_follow.map(|p| (p, up)),
    };
    Ok((psk, tuning))
}

fn check_iface(i: &Intercept) -> anyhow::Result<()> {
    if !std::path::Path::new("/sys/class/net").join(&i.from).exists() {
        return Err(user(format!("--from {}: no such interface in this namespace (run it in a gateway: aerolink exec LAB airgw -- aerolink pep …)", i.from)));
    }
    Ok(())
}

/// Resolves on SIGTERM, SIGINT or SIGHUP. Made before any rule goes in: a
/// signal between the two would otherwise kill the proxy and leave its
/// rules behind.
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
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
        if stats.tunnels + stats.refused + stats.garbage > 0 {
            format!(", {} tunnels, {} peers refused, {} garbage datagrams dropped", stats.tunnels, stats.refused, stats.garbage)
        } else {
            String::new()
        }
    );
    Ok(0)
}

fn prefetch_finish(name: &str, s: &aerolink_pep::prefetch::Stats, json: bool) -> anyhow::Result<i32> {
    if json {
        println!("{}", serde_json::to_string(s)?);
    }
    eprintln!(
        "{name}: {} requests ({} from pushes ready, {} waited for a push, {} forwarded, {} failed); {} promised, {} pushed, {} withdrawn, {} unclaimed; {} bytes down, {} tunnels; stopped{}",
        s.requests,
        s.pushed_ready,
        s.pushed_awaited,
        s.forwarded,
        s.failed,
        s.promised,
        s.pushed,
        s.cancelled,
        s.unclaimed,
        s.bytes_down,
        s.tunnels,
        if name.ends_with("air") { ", rules removed" } else { "" }
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
        PepCmd::SplitTcp(SplitTcpArgs { intercept, cc, initcwnd, json }) => {
            check_iface(&intercept)?;
            let stats = rt()?.block_on(async move {
                let stop = stop_signal()?;
                aerolink_pep::split_tcp::run(aerolink_pep::split_tcp::Options { from: intercept.from, port: intercept.port, cc, initcwnd }, stop, ready).await
            })?;
            finish("split-tcp", &stats, json)
        }
        PepCmd::QuicTunnel { half: Half::Air(AirArgs { intercept, ground, open_timeout, tuning: t, json }) } => {
            check_iface(&intercept)?;
            let (psk, tuning) = tuning(t, true)?;
            let stats = rt()?.block_on(async move {
                let stop = stop_signal()?;
                aerolink_pep::quic_tunnel::air(
                    aerolink_pep::quic_tunnel::AirOptions { from: intercept.from, port: intercept.port, ground, psk, tuning, open_timeout: Duration::from_nanos(open_timeout.0) },
                    stop,
                    ready,
                )
                .await
            })?;
            finish("quic-tunnel air", &stats, json)
        }
        PepCmd::QuicTunnel { half: Half::Ground(GroundArgs { listen, tcp_cc, initcwnd, tuning: t, json }) } => {
            let (psk, tuning) = tuning(t, false)?;
            let stats = rt()?.block_on(async move {
                let stop = stop_signal()?;
                aerolink_pep::quic_tunnel::ground(aerolink_pep::quic_tunnel::GroundOptions { listen, psk, tuning, tcp_cc, initcwnd }, stop, ready).await
            })?;
            finish("quic-tunnel ground", &stats, json)
        }
        PepCmd::HttpPrefetch { half: PrefetchHalf::Air(PrefetchAirArgs { intercept, ground, open_timeout, json }) } => {
            check_iface(&intercept)?;
            let stats = rt()?.block_on(async move {
                let stop = stop_signal()?;
                aerolink_pep::prefetch::air::run(
                    aerolink_pep::prefetch::air::AirOptions { from: intercept.from, port: intercept.port, ground, open_timeout: Duration::from_nanos(open_timeout.0) },
                    stop,
                    ready,
                )
                .await
            })?;
            prefetch_finish("http-prefetch air", &stats, json)
        }
        PepCmd::HttpPrefetch { half: PrefetchHalf::Ground(PrefetchGroundArgs { listen, cc, initcwnd, json }) } => {
            let stats = rt()?.block_on(async move {
                let stop = stop_signal()?;
                aerolink_pep::prefetch::ground::run(aerolink_pep::prefetch::ground::GroundOptions { listen, cc, initcwnd }, stop, ready).await
            })?;
            prefetch_finish("http-prefetch ground", &stats, json)
        }
        PepCmd::Vpn(VpnArgs { end, peer, port, openvpn_key: Some(key) }) => {
            let stop = aerolink_net::stop::on_signals().flag().clone();
            aerolink_pep::openvpn::run(end, peer, port, &key, &stop, ready)?;
            Ok(0)
        }
        PepCmd::Vpn(VpnArgs { end, peer, port, openvpn_key: None }) => {
            let stop = aerolink_net::stop::on_signals().flag().clone();
            let st = aerolink_pep::vpn::run(aerolink_pep::vpn::Options { end, peer, port }, &stop, ready)?;
            eprintln!("vpn: {} packets out, {} in, {} foreign datagrams dropped", st.packets_out, st.packets_in, st.foreign_dropped);
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_key_file_others_can_read_is_refused() {
        let p = std::env::temp_dir().join(format!("aerolink-psk-mode-{}", std::process::id()));
        std::fs::write(&p, aerolink_pep::quic_tunnel::Psk::generate()).unwrap();
        for (mode, ok) in [(0o600, true), (0o400, true), (0o640, false), (0o604, false), (0o644, false)] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            let r = super::check_private(&p);
            assert_eq!(r.is_ok(), ok, "mode {mode:o}: {r:?}");
            if let Err(e) = r {
                assert!(crate::error::is_user(&e) && e.to_string().contains("chmod 600"), "{e}");
            }
        }
        let _ = std::fs::remove_file(&p);
    }
}
