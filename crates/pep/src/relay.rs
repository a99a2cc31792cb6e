//! What both proxies share: the transparent listeners TPROXY hands the
//! client's connections to, onward TCP connections with their own
//! congestion control, byte pumps that count as they go, and live counters.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::error::{PepError, Result};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// Counters a proxy updates while it runs (bytes as they pass, not when a
/// connection ends).
#[derive(Debug, Default)]
pub struct Counters {
    pub connections: AtomicU64,
    /// Connections that could not be set up (destination or tunnel
    /// unreachable); the client got a reset.
    pub failed: AtomicU64,
    /// Relays that ended with an error on one side (a reset, the tunnel
    /// gone); the other side got a reset.
    pub broken: AtomicU64,
    pub bytes_up: AtomicU64,
    pub bytes_down: AtomicU64,
    /// Tunnel peers refused (bad key, wrong protocol, no proof in time).
    pub refused: AtomicU64,
    /// Tunnel connections (re-)established.
    pub tunnels: AtomicU64,
    /// Datagrams on the tunnel port that could not be QUIC.
    pub garbage: AtomicU64,
    /// Relays under way.
    pub active: AtomicU64,
}

#[derive(Debug, Default, Serialize, Clone, PartialEq)]
pub struct Stats {
    pub connections: u64,
    pub failed: u64,
    pub broken: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub refused: u64,
    pub tunnels: u64,
    pub garbage: u64,
}

impl Counters {
    pub fn snapshot(&self) -> Stats {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            connections: g(&self.connections),
            failed: g(&self.failed),
            broken: g(&self.broken),
            bytes_up: g(&self.bytes_up),
            bytes_down: g(&self.bytes_down),
            refused: g(&self.refused),
            tunnels: g(&self.tunnels),
            garbage: g(&self.garbage),
        }
    }

    /// Counts a broken relay and says why (the first 20; then only counts).
    pub fn broke(&self, who: &str, dest: SocketAddr, e: &std::io::Error) {
        let k = self.broken.fetch_add(1, Ordering::Relaxed);
        if k < 20 {
            eprintln!("{who}: the relay to {dest} broke: {e}{}", if k == 19 { " (no more of these will be logged)" } else { "" });
        }
    }
}

/// A listening socket with IP_TRANSPARENT, so it accepts connections
/// addressed to anyone (what TPROXY delivers).
pub fn transparent_listener(addr: SocketAddr) -> Result<TcpListener> {
    let sock = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    let (level, opt) = if addr.is_ipv4() { (libc::SOL_IP, libc::IP_TRANSPARENT) } else { (libc::SOL_IPV6, libc::IPV6_TRANSPARENT) };
    let one: libc::c_int = 1;
    let set = |l: libc::c_int, o: libc::c_int| {
        // SAFETY: a valid socket and a c_int option value.
        unsafe { libc::setsockopt(sock.as_raw_fd(), l, o, (&one as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t) }
    };
    if set(level, opt) != 0 {
        return Err(PepError::Precondition(format!("IP_TRANSPARENT: {} (needs root in the gateway namespace)", std::io::Error::last_os_error())));
    }
    if addr.is_ipv6() {
        set(libc::IPPROTO_IPV6, libc::IPV6_V6ONLY);
    }
    sock.set_reuseaddr(true)?;
    sock.bind(addr)?;
    Ok(sock.listen(4096)?)
}

/// The IPv4 and IPv6 transparent listeners of a proxy, bound before any
/// rule sends them traffic.
pub struct Listeners(TcpListener, TcpListener);

impl Listeners {
    pub fn bind(port: u16) -> Result<Listeners> {
        Ok(Listeners(transparent_listener(SocketAddr::from(([0, 0, 0, 0], port)))?, transparent_listener(SocketAddr::from(([0u16; 8], port)))?))
    }

    /// Hands each accepted connection to `handle` (in its own task); runs
    /// until dropped.
    pub async fn serve<F, Fut>(self, handle: F)
    where
        F: Fn(TcpStream) -> Fut + Clone + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let accept = |l: TcpListener, handle: F| async move {
            loop {
                match l.accept().await {
                    Ok((c, _)) => {
                        let _ = c.set_nodelay(true);
                        tokio::spawn(handle(c));
                    }
                    // Out of file descriptors and the like: back off, go on.
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
        };
        tokio::join!(accept(self.0, handle.clone()), accept(self.1, handle));
    }
}

/// Opens the proxy's own TCP connection to `dest` with congestion control
/// `cc`.
pub async fn connect(dest: SocketAddr, cc: aerolink_work::sock::TcpCc, timeout: Duration) -> Result<TcpStream> {
    let sock = if dest.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    aerolink_work::sock::set_congestion(&sock, cc).map_err(|source| PepError::Sys { what: format!("congestion control {cc}"), source })?;
    let s = tokio::time::timeout(timeout, sock.connect(dest)).await.map_err(|_| PepError::ConnectTimeout { dest, after: timeout })??;
    s.set_nodelay(true)?;
    Ok(s)
}

/// Copies `from` to `to` until end of stream, counting into `counter` as it
/// goes, then shuts `to` down for writing (passing the half-close on).
/// An error reading or writing the data is returned.
pub async fn pump<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(mut from: R, mut to: W, counter: &AtomicU64) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        to.write_all(&buf[..n]).await?;
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }
    // Passing the half-close on can only fail when the other side is gone
    // already (reset or stopped); then there is nothing left to tell it.
    let _ = to.shutdown().await;
    Ok(())
}

/// Closes a client connection with a reset, so the client sees an error
/// at once instead of a clean end of stream (or a hang).
pub fn reset(s: &TcpStream) {
    // A zero linger never blocks: close() sends the reset at once (the
    // deprecation is about positive lingers).
    #[allow(deprecated)]
    let _ = s.set_linger(Some(Duration::ZERO));
}

/// Raises the soft limit on open files to the hard limit: a proxy holds two
/// sockets per connection, and the usual soft limit (1024) would cap it near
/// 500 connections.
pub fn raise_fd_limit() {
    let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

/// Runs both directions of a relay. Each may end cleanly on its own (a
/// half-close) while the other goes on; the first error ends both at once,
/// so a broken side is never left waiting on a silent one.
pub async fn both_ways(up: impl std::future::Future<Output = std::io::Result<()>>, down: impl std::future::Future<Output = std::io::Result<()>>) -> std::io::Result<()> {
    tokio::pin!(up, down);
    let (mut up_done, mut down_done) = (false, false);
    while !(up_done && down_done) {
        tokio::select! {
            r = &mut up, if !up_done => { r?; up_done = true; }
            r = &mut down, if !down_done => { r?; down_done = true; }
        }
    }
    Ok(())
}

/// Counts a relay as under way while it lives.
pub struct Active<'a>(&'a Counters);

impl<'a> Active<'a> {
    pub fn new(c: &'a Counters) -> Active<'a> {
        c.active.fetch_add(1, Ordering::Relaxed);
        Active(c)
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// On the way out: gives the relays under way up to `grace` to finish (a
/// connection whose client just closed needs a round trip to close on the
/// far side too), so stopping right after the last client does not break
/// them.
pub async fn drain(c: &Counters, grace: Duration) {
    let deadline = tokio::time::Instant::now() + grace;
    while c.active.load(Ordering::Relaxed) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// How long a stopping proxy waits for its relays.
pub const DRAIN: Duration = Duration::from_secs(2);
