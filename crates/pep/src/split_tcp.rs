//! The transparent split-TCP proxy: accepts the client's intercepted TCP
//! connections (their local address is the server's, thanks to TPROXY),
//! opens its own connection to that server with its own congestion control,
//! and relays both ways. The client needs no configuration.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

#[derive(Clone, Debug)]
pub struct Options {
    /// The interface facing the clients (e.g. `to-client`).
    pub from: String,
    pub port: u16,
    /// Congestion control of the proxy's onward connections.
    pub cc: String,
}

#[derive(Debug, Default, Serialize)]
pub struct Stats {
    pub connections: u64,
    pub failed: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
}

/// A listening socket with IP_TRANSPARENT, so it accepts connections
/// addressed to anyone.
fn transparent_listener(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let sock = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    let (level, opt) = if addr.is_ipv4() { (libc::SOL_IP, libc::IP_TRANSPARENT) } else { (libc::SOL_IPV6, libc::IPV6_TRANSPARENT) };
    let one: libc::c_int = 1;
    let set = |l: libc::c_int, o: libc::c_int| {
        // SAFETY: a valid socket and a c_int option value.
        unsafe { libc::setsockopt(sock.as_raw_fd(), l, o, (&one as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t) }
    };
    anyhow::ensure!(set(level, opt) == 0, "IP_TRANSPARENT: {} (needs root in the gateway namespace)", std::io::Error::last_os_error());
    if addr.is_ipv6() {
        set(libc::IPPROTO_IPV6, libc::IPV6_V6ONLY);
    }
    sock.set_reuseaddr(true)?;
    sock.bind(addr)?;
    Ok(sock.listen(1024)?)
}

async fn relay(client: TcpStream, cc: &str, stats: &Stats2) -> anyhow::Result<()> {
    // With TPROXY the accepted socket's local address is where the client
    // was going.
    let dest = client.local_addr()?;
    let sock = if dest.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    aerolink_work::sock::set_congestion(&sock, cc).map_err(|e| anyhow::anyhow!("congestion control {cc:?}: {e}"))?;
    let mut server = sock.connect(dest).await?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let mut client = client;
    let (up, down) = tokio::io::copy_bidirectional(&mut client, &mut server).await?;
    stats.up.fetch_add(up, Ordering::Relaxed);
    stats.down.fetch_add(down, Ordering::Relaxed);
    Ok(())
}

#[derive(Default)]
struct Stats2 {
    conns: AtomicU64,
    failed: AtomicU64,
    up: AtomicU64,
    down: AtomicU64,
}

/// Installs the interception, serves until `stop` resolves, removes it.
pub async fn run(opts: Options, stop: impl std::future::Future<Output = ()>, ready: impl FnOnce()) -> anyhow::Result<Stats> {
    anyhow::ensure!(aerolink_work::sock::TCP_CCS.contains(&opts.cc.as_str()), "--cc {}: expected one of {}", opts.cc, aerolink_work::sock::TCP_CCS.join(", "));
    let v4 = transparent_listener(SocketAddr::from(([0, 0, 0, 0], opts.port)))?;
    let v6 = transparent_listener(SocketAddr::from(([0u16; 8], opts.port)))?;
    crate::steering::install(&opts.from, opts.port)?;
    ready();
    let stats = Arc::new(Stats2::default());
    let serve = |l: TcpListener| {
        let stats = stats.clone();
        let cc = opts.cc.clone();
        async move {
            loop {
                let Ok((c, _)) = l.accept().await else { continue };
                stats.conns.fetch_add(1, Ordering::Relaxed);
                let (stats, cc) = (stats.clone(), cc.clone());
                tokio::spawn(async move {
                    if relay(c, &cc, &stats).await.is_err() {
                        stats.failed.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        }
    };
    tokio::select! {
        _ = serve(v4) => {}
        _ = serve(v6) => {}
        _ = stop => {}
    }
    crate::steering::remove();
    Ok(Stats {
        connections: stats.conns.load(Ordering::Relaxed),
        failed: stats.failed.load(Ordering::Relaxed),
        bytes_up: stats.up.load(Ordering::Relaxed),
        bytes_down: stats.down.load(Ordering::Relaxed),
    })
}
