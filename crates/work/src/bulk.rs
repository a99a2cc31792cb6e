//! The bulk workload: one transfer of N bytes, down (server → client) or up,
//! over kernel TCP or over QUIC (one quinn stream).
//!
//! Wire protocol (TCP port 5201, or one QUIC bidirectional stream with ALPN
//! `aerolink-bulk`): the client sends `dir: u8` (0 down, 1 up) and
//! `size: u64` (LE). Down: the server sends `size` bytes; the client answers
//! one byte; the server sends its sender-side counters (retransmits, bytes
//! sent: 2 × u64). Up: the client sends `size` bytes; the receiving server
//! answers with its goodput bins (`n: u32`, then n × u64 bytes per 100 ms).

use std::net::SocketAddr;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::error::{Result, WorkError};
use crate::quic::QuicKnobs;
use crate::sock::{self, TcpCc};

pub const ALPN: &[u8] = b"aerolink-bulk";
pub const BIN_MS: u64 = 100;
const CHUNK: usize = 64 * 1024;

crate::choice! {
    /// Server → client (`down`) or client → server (`up`).
    pub enum Direction { Down = "down", Up = "up" }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BulkResult {
    pub transport: String,
    pub direction: Direction,
    pub bytes: u64,
    /// From before the handshake to the last byte at the receiver, ms.
    pub completion_ms: f64,
    pub goodput_bps: f64,
    /// Bytes received in each 100 ms since the transfer began.
    pub bins_bytes: Vec<u64>,
    /// Retransmitted segments (TCP) or lost packets (QUIC) of the sender.
    pub sender_retransmits: u64,
    /// Congestion control of the sender (kernel TCP: read from its socket).
    pub sender_cc: String,
    /// The largest smoothed RTT the sender's kernel estimated during the
    /// transfer (TCP, sampled every 100 ms), ms.
    #[serde(default)]
    pub sender_srtt_ms_max: f64,
    /// The sender's retransmission timeout while no timeout was backing it
    /// off (its Jacobson estimate), sampled every 100 ms: the median, ms
    /// (TCP downloads; 0 where not sampled).
    #[serde(default)]
    pub sender_rto_ms_median: f64,
    /// Retransmission timeouts that expired while the sender sent (TCP
    /// downloads: its network namespace's TCPTimeouts over the transfer;
    /// a lab's server holds one transfer at a time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_timeouts: Option<u64>,
}

/// The client socket's TCP settings (seed 002's TCP: MSS 1024, a 6 or 16 kB
/// receive window, no delayed ACKs).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TcpClient {
    /// Congestion control (matters for uploads).
    pub cc: TcpCc,
    /// Largest segment announced and sent (TCP_MAXSEG), bytes.
    pub mss: Option<u32>,
    /// Receive buffer (SO_RCVBUF; Linux doubles it and advertises about
    /// half of that as the window), bytes.
    pub rcvbuf: Option<u32>,
    /// Acknowledge every segment at once (TCP_QUICKACK after every read).
    pub quickack: bool,
    /// The local address to send from (a passenger's, [`crate::cabin`]);
    /// `None`: the kernel's choice.
    pub bind: Option<std::net::IpAddr>,
    /// The network namespace to make the socket in: an open
    /// `/run/netns/NAME` (a passenger's own, [`crate::cabin`]), kept open
    /// by the caller until the socket exists; `None`: this process's.
    pub netns: Option<std::os::fd::RawFd>,
}

/// Receives `size` bytes, counting them into 100 ms bins from `t0`; with
/// `quickack`, re-arms TCP_QUICKACK on that socket after every read.
async fn receive<R: AsyncRead + Unpin>(r: &mut R, size: u64, t0: Instant, quickack: Option<std::os::fd::RawFd>) -> Result<Vec<u64>> {
    let mut buf = vec![0u8; CHUNK];
    let mut bins: Vec<u64> = Vec::new();
    let mut got = 0u64;
    while got < size {
        let n = r.read(&mut buf).await?;
        if let Some(fd) = quickack {
            // SAFETY: the fd belongs to the socket `r` reads, alive here.
            let _ = sock::quick_ack(&unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) });
        }
        if n == 0 {
            return Err(WorkError::ClosedEarly { got, expected: size });
        }
        got += n as u64;
        let bin = (t0.elapsed().as_millis() as u64 / BIN_MS) as usize;
        if bins.len() <= bin {
            bins.resize(bin + 1, 0);
        }
        bins[bin] += n as u64;
    }
    Ok(bins)
}

async fn send<W: AsyncWrite + Unpin>(w: &mut W, size: u64) -> Result<()> {
    let buf = crate::page::filler(CHUNK);
    let mut left = size;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        w.write_all(&buf[..n]).await?;
        left -= n as u64;
    }
    Ok(())
}

async fn write_bins<W: AsyncWrite + Unpin>(w: &mut W, bins: &[u64]) -> Result<()> {
    w.write_u32_le(bins.len() as u32).await?;
    for b in bins {
        w.write_u64_le(*b).await?;
    }
    Ok(())
}

async fn read_bins<R: AsyncRead + Unpin>(r: &mut R) -> Result<Vec<u64>> {
    let n = r.read_u32_le().await? as usize;
    if n >= 10_000_000 {
        return Err(WorkError::BadMessage("bin count"));
    }
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(r.read_u64_le().await?);
    }
    Ok(v)
}

pub async fn serve_tcp(listener: TcpListener, nagle: bool) -> Result<()> {
    loop {
        let (mut s, _) = listener.accept().await?;
        let _ = s.set_nodelay(!nagle);
        tokio::spawn(async move {
            let r: Result<()> = async {
                let dir = s.read_u8().await?;
                let size = s.read_u64_le().await?;
                if dir == 0 {
                    // Sample the kernel's RTT estimate while sending.
                    let fd = std::os::fd::AsRawFd::as_raw_fd(&s);
                    // SAFETY: `s` outlives every use of the borrowed fd below.
                    let now = || sock::counters(&unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) });
                    let mut max_srtt = 0u64;
                    let mut rtos: Vec<u64> = Vec::new();
                    let timeouts0 = sock::namespace_timeouts();
                    {
                        let sending = send(&mut s, size);
                        tokio::pin!(sending);
                        let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
                        loop {
                            tokio::select! {
                                r = &mut sending => { r?; break; }
                                _ = tick.tick() => {
                                    let c = now();
                                    max_srtt = max_srtt.max(c.srtt_us);
                                    if c.backoff == 0 && c.rto_us > 0 {
                                        rtos.push(c.rto_us);
                                    }
                                }
                            }
                        }
                    }
                    s.read_u8().await?;
                    let c = sock::counters(&s);
                    s.write_u64_le(c.retransmits).await?;
                    s.write_u64_le(c.bytes_sent).await?;
                    let cc = sock::congestion(&s);
                    s.write_u8(cc.len() as u8).await?;
                    s.write_all(cc.as_bytes()).await?;
                    s.write_u64_le(max_srtt.max(c.srtt_us)).await?;
                    rtos.sort_unstable();
                    s.write_u64_le(rtos.get(rtos.len() / 2).copied().unwrap_or(0)).await?;
                    s.write_u64_le(sock::namespace_timeouts().saturating_sub(timeouts0)).await?;
                } else {
                    let bins = receive(&mut s, size, Instant::now(), None).await?;
                    write_bins(&mut s, &bins).await?;
                }
                s.flush().await?;
                Ok(())
            }
            .await;
            let _ = r;
        });
    }
}

pub async fn serve_quic(ep: quinn::Endpoint) -> Result<()> {
    while let Some(incoming) = ep.accept().await {
        tokio::spawn(async move {
            let r: Result<()> = async {
                let conn = incoming.await?;
                let (mut tx, mut rx) = conn.accept_bi().await?;
                let dir = rx.read_u8().await?;
                let size = rx.read_u64_le().await?;
                if dir == 0 {
                    send(&mut tx, size).await?;
                    tx.finish()?;
                    rx.read_u8().await?;
                    let mut uni = conn.open_uni().await?;
                    uni.write_u64_le(conn.stats().path.lost_packets).await?;
                    uni.finish()?;
                } else {
                    let bins = receive(&mut rx, size, Instant::now(), None).await?;
                    write_bins(&mut tx, &bins).await?;
                    tx.finish()?;
                }
                // Let the peer read everything before the connection goes.
                let _ = tokio::time::timeout(std::time::Duration::from_secs(30), conn.closed()).await;
                Ok(())
            }
            .await;
            let _ = r;
        });
    }
    Ok(())
}

fn result(transport: &str, direction: Direction, bytes: u64, t0: Instant, bins: Vec<u64>, retrans: u64, cc: String) -> BulkResult {
    let completion_ms = t0.elapsed().as_secs_f64() * 1e3;
    BulkResult {
        transport: transport.into(),
        direction,
        bytes,
        completion_ms,
        goodput_bps: bytes as f64 * 8.0 / (completion_ms / 1e3),
        bins_bytes: bins,
        sender_retransmits: retrans,
        sender_cc: cc,
        sender_srtt_ms_max: 0.0,
        sender_rto_ms_median: 0.0,
        sender_timeouts: None,
    }
}

/// Transfers `bytes` over kernel TCP with the client socket set up as
/// `client` says.
pub async fn tcp(server: SocketAddr, direction: Direction, bytes: u64, client: TcpClient) -> Result<BulkResult> {
    let t0 = Instant::now();
    let sock = match client.netns {
        Some(ns) => sock::tcp_socket_in(ns, server.is_ipv6()).map_err(|source| WorkError::Sys { what: "a socket in the passenger's namespace".into(), source })?,
        None if server.is_ipv6() => tokio::net::TcpSocket::new_v6()?,
        None => tokio::net::TcpSocket::new_v4()?,
    };
    let cc = client.cc;
    sock::set_congestion(&sock, cc).map_err(|source| WorkError::Sys { what: format!("TCP congestion control {cc}"), source })?;
    if let Some(m) = client.mss {
        sock::set_mss(&sock, m).map_err(|source| WorkError::Sys { what: format!("TCP_MAXSEG {m}"), source })?;
    }
    if let Some(b) = client.rcvbuf {
        sock.set_recv_buffer_size(b).map_err(|source| WorkError::Sys { what: format!("SO_RCVBUF {b}"), source })?;
    }
    if let Some(ip) = client.bind {
        sock.bind(SocketAddr::new(ip, 0)).map_err(|source| WorkError::Sys { what: format!("binding to {ip}"), source })?;
    }
    let mut s: TcpStream = sock.connect(server).await?;
    let quickack = client.quickack.then(|| std::os::fd::AsRawFd::as_raw_fd(&s));
    s.write_u8(if direction == Direction::Down { 0 } else { 1 }).await?;
    s.write_u64_le(bytes).await?;
    match direction {
        Direction::Down => {
            let bins = receive(&mut s, bytes, t0, quickack).await?;
            let r = result("tcp", direction, bytes, t0, bins, 0, String::new());
            s.write_u8(1).await?;
            let retrans = s.read_u64_le().await?;
            let _sent = s.read_u64_le().await?;
            let n = s.read_u8().await? as usize;
            let mut cc = vec![0u8; n];
            s.read_exact(&mut cc).await?;
            let srtt_us = s.read_u64_le().await?;
            let rto_us = s.read_u64_le().await?;
            let timeouts = s.read_u64_le().await?;
            Ok(BulkResult {
                sender_timeouts: Some(timeouts),
                sender_retransmits: retrans,
                sender_cc: String::from_utf8_lossy(&cc).to_string(),
                sender_srtt_ms_max: srtt_us as f64 / 1e3,
                sender_rto_ms_median: rto_us as f64 / 1e3,
                ..r
            })
        }
        Direction::Up => {
            send(&mut s, bytes).await?;
            let bins = read_bins(&mut s).await?;
            let c = sock::counters(&s);
            Ok(BulkResult { sender_srtt_ms_max: c.srtt_us as f64 / 1e3, ..result("tcp", direction, bytes, t0, bins, c.retransmits, sock::congestion(&s)) })
        }
    }
}

/// Transfers `bytes` over one QUIC stream with `knobs` on both ends.
pub async fn quic(server: SocketAddr, direction: Direction, bytes: u64, knobs: &QuicKnobs) -> Result<BulkResult> {
    let t0 = Instant::now();
    let ep = crate::quic::client_endpoint(server, knobs, &[ALPN])?;
    let conn = ep.connect(server, crate::tls::SERVER_NAME)?.await?;
    let (mut tx, mut rx) = conn.open_bi().await?;
    tx.write_u8(if direction == Direction::Down { 0 } else { 1 }).await?;
    tx.write_u64_le(bytes).await?;
    let r = match direction {
        Direction::Down => {
            let bins = receive(&mut rx, bytes, t0, None).await?;
            let r = result("quic", direction, bytes, t0, bins, 0, knobs.cc.to_string());
            tx.write_u8(1).await?;
            tx.finish()?;
            let mut uni = conn.accept_uni().await?;
            let lost = uni.read_u64_le().await?;
            BulkResult { sender_retransmits: lost, ..r }
        }
        Direction::Up => {
            send(&mut tx, bytes).await?;
            tx.finish()?;
            let bins = read_bins(&mut rx).await?;
            result("quic", direction, bytes, t0, bins, conn.stats().path.lost_packets, knobs.cc.to_string())
        }
    };
    conn.close(0u32.into(), b"done");
    ep.wait_idle().await;
    Ok(r)
}

/// What [`concurrent`] saw.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConcurrentResult {
    pub connections: u32,
    pub bytes_each: u64,
    /// Connections that got all their bytes.
    pub ok: u32,
    pub failed: u32,
    /// The first few distinct errors.
    pub errors: Vec<String>,
    /// Until every connection was open, ms.
    pub open_ms: f64,
    pub total_ms: f64,
}

/// Opens `count` TCP connections to the bulk server and holds them all open
/// at once, then has each download `bytes` — a test of whatever sits on
/// the path (a proxy must carry them all). The downloads start together
/// once every connection is open; each must finish within `timeout`.
pub async fn concurrent(server: SocketAddr, count: u32, bytes: u64, timeout: std::time::Duration) -> Result<ConcurrentResult> {
    let t0 = Instant::now();
    let go = std::sync::Arc::new(tokio::sync::Barrier::new(count as usize + 1));
    let mut tasks = Vec::new();
    for _ in 0..count {
        let go = go.clone();
        tasks.push(tokio::spawn(async move {
            let conn = TcpStream::connect(server).await;
            // Everyone waits here, connected or not, so all are open at once.
            go.wait().await;
            let mut s = conn?;
            // A connection whose reset was lost would wait for ever.
            tokio::time::timeout(timeout, async {
                s.write_u8(0).await?;
                s.write_u64_le(bytes).await?;
                receive(&mut s, bytes, Instant::now(), None).await?;
                Ok::<(), WorkError>(())
            })
            .await
            .map_err(|_| WorkError::Timeout { what: "complete answer", after: timeout })?
        }));
    }
    go.wait().await;
    let open_ms = t0.elapsed().as_secs_f64() * 1e3;
    let (mut ok, mut failed, mut errors) = (0, 0, Vec::<String>::new());
    for t in tasks {
        match t.await {
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) => {
                failed += 1;
                let e = e.to_string();
                if errors.len() < 5 && !errors.contains(&e) {
                    errors.push(e);
                }
            }
            Err(e) => {
                failed += 1;
                errors.push(e.to_string());
            }
        }
    }
    Ok(ConcurrentResult { connections: count, bytes_each: bytes, ok, failed, errors, open_ms, total_ms: t0.elapsed().as_secs_f64() * 1e3 })
}
