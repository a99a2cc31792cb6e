//! The aircraft half: intercepts the clients' TCP and carries each
//! connection as one stream of the tunnel to the ground half.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;

use super::screening::{endpoint, Health};
use super::wire::encode_dest;
use super::*;
use crate::error::{PepError, Result};
use crate::relay::{self, Counters, Stats};

pub struct AirOptions {
    /// The interface facing the clients.
    pub from: String,
    pub port: u16,
    /// The ground gateway's tunnel address.
    pub ground: SocketAddr,
    pub psk: Psk,
    pub tuning: Tuning,
    /// How long opening the tunnel may take before the air half gives up
    /// (the ground answers nothing to a wrong key, so silence is all a
    /// wrong key gets).
    pub open_timeout: Duration,
}

struct Air {
    ep: quinn::Endpoint,
    ground: SocketAddr,
    psk: Psk,
    conn: tokio::sync::Mutex<Option<quinn::Connection>>,
    counters: Arc<Counters>,
    health: Arc<Health>,
    open_timeout: Duration,
}

/// The default of [`AirOptions::open_timeout`]: the tunnel's handshake
/// (≈ 4 KB with the certificate) takes seconds on a 2.4 kbit/s Iridium
/// channel.
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(60);

/// A ground gateway is taken for gone when its host has answered "port
/// unreachable" this many times, the last within [`GONE_RECENT`], and
/// nothing else came from it for [`GONE_QUIET`]: a link outage sends no
/// such answers, so it never looks like this.
const GONE_REFUSALS: u64 = 2;
const GONE_RECENT: Duration = Duration::from_secs(3);
const GONE_QUIET: Duration = Duration::from_secs(1);

impl Air {
    /// The tunnel, opened (and authenticated) if there is none or the last
    /// one ended.
    async fn tunnel(&self) -> Result<quinn::Connection> {
        let mut g = self.conn.lock().await;
        if let Some(c) = g.as_ref() {
            if c.close_reason().is_none() {
                return Ok(c.clone());
            }
        }
        self.health.reset();
        let c = tokio::time::timeout(self.open_timeout, self.open()).await.map_err(|_| PepError::GroundSilent(self.ground, self.open_timeout))??;
        self.counters.tunnels.fetch_add(1, Ordering::Relaxed);
        log(format!("tunnel to {} up", self.ground));
        // A ground gateway that died (its host answers "port unreachable")
        // ends the tunnel within seconds, not at the idle timeout: clients
        // get their errors, and the next connection opens a new tunnel.
        let (watch, health, ground) = (c.clone(), self.health.clone(), self.ground);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = watch.closed() => return,
                    _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                }
                health.drain_errors();
                if health.ground_gone(GONE_REFUSALS, GONE_RECENT, GONE_QUIET) {
                    log(format!("the ground gateway {ground} is gone (its host answers port unreachable): closing the tunnel"));
                    watch.close(quinn::VarInt::from_u32(CLOSE_SHUTDOWN), b"ground gone");
                    return;
                }
            }
        });
        let (watch, ground) = (c.clone(), self.ground);
        tokio::spawn(async move {
            let why = watch.closed().await;
            log(format!("tunnel to {ground} ended: {why}"));
        });
        *g = Some(c.clone());
        Ok(c)
    }

    async fn open(&self) -> Result<quinn::Connection> {
        open_tunnel(&self.ep, self.ground, &self.psk).await
    }

    async fn carry(&self, client: TcpStream) -> Result<()> {
        let dest = client.local_addr()?;
        let opened = async {
            let conn = self.tunnel().await?;
            let (mut send, recv) = conn.open_bi().await?;
            send.write_all(&encode_dest(dest)).await?;
            Ok::<_, PepError>((send, recv))
        };
        let (mut send, mut recv) = match opened.await {
            Ok(s) => s,
            Err(e) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                relay::reset(&client);
                return Err(e);
            }
        };
        // The client's first bytes go at once, behind the header, without
        // waiting for the ground half to connect: the tunnel adds no round
        // trip to a connection's setup. The answer comes first on the way
        // back.
        let (mut cr, mut cw) = client.into_split();
        let down = async {
            let mut st = [0u8; 1];
            recv.read_exact(&mut st).await.map_err(std::io::Error::other)?;
            if st[0] != 0 {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                return Err(std::io::Error::other(format!("the ground gateway could not reach {dest}")));
            }
            relay::pump(&mut recv, &mut cw, &self.counters.bytes_down).await
        };
        let r = relay::both_ways(super::tcp_to_stream(&mut cr, &mut send, &self.counters.bytes_up), down).await;
        if let Err(e) = &r {
            // The tunnel or the far end broke: the client gets a reset, the
            // stream is abandoned both ways.
            self.counters.broke("quic-tunnel air", dest, e);
            relay::reset(cr.as_ref());
            let _ = send.reset(quinn::VarInt::from_u32(1));
            let _ = recv.stop(quinn::VarInt::from_u32(1));
        }
        Ok(r?)
    }
}

/// Opens the tunnel to `ground` over `ep` and proves the key both ways:
/// the air half's proof, then the ground's, bound to this TLS session.
pub(crate) async fn open_tunnel(ep: &quinn::Endpoint, ground: SocketAddr, psk: &Psk) -> Result<quinn::Connection> {
    let conn = ep.connect(ground, aerolink_work::tls::SERVER_NAME)?.await.map_err(|source| PepError::GroundUnreachable { ground, source })?;
    let (mut send, mut recv) = conn.open_bi().await?;
    send.write_all(psk.proof(b"air", &conn)?.as_ref()).await?;
    send.finish()?;
    let mut tag = [0u8; 32];
    recv.read_exact(&mut tag).await.map_err(|source| PepError::GroundRefused { ground, source })?;
    if !psk.verify(b"ground", &conn, &tag) {
        conn.close(quinn::VarInt::from_u32(CLOSE_UNAUTHENTICATED), b"unauthenticated");
        return Err(PepError::GroundUnproven(ground));
    }
    Ok(conn)
}

/// The air half's QUIC client configuration toward `ground`: TLS with the
/// tunnel's ALPN, the tuning's transport, and first Initials whose
/// connection ID is keyed with the PSK (the ground answers nothing else).
pub(crate) fn client_config(psk: &Psk, tuning: &Tuning, ground: SocketAddr) -> Result<quinn::ClientConfig> {
    let tls = aerolink_work::tls::client_config(&[ALPN], false)?;
    let mut client = quinn::ClientConfig::new(Arc::new(quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(aerolink_work::WorkError::from)?));
    client.transport_config(Arc::new(tuning.transports()?.for_route(super::route_mtu(ground))?));
    let psk = psk.clone();
    client.initial_dst_cid_provider(Arc::new(move || psk.initial_dcid(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0))));
    Ok(client)
}

/// Installs the interception, opens the tunnel, serves until `stop`
/// resolves, removes the interception.
pub async fn air(opts: AirOptions, stop: impl std::future::Future<Output = ()>, ready: impl FnOnce()) -> Result<Stats> {
    let client = client_config(&opts.psk, &opts.tuning, opts.ground)?;
    let bind = if opts.ground.is_ipv6() { SocketAddr::from(([0u16; 8], 0)) } else { SocketAddr::from(([0u8; 4], 0)) };
    let sock = std::net::UdpSocket::bind(bind)?;
    let counters = Arc::new(Counters::default());
    let health = Arc::new(Health::new());
    let mut ep = endpoint(&opts.psk, None, sock, counters.clone(), Some(health.clone()))?;
    ep.set_default_client_config(client);
    let air = Arc::new(Air { ep: ep.clone(), ground: opts.ground, psk: opts.psk, conn: tokio::sync::Mutex::new(None), counters: counters.clone(), health, open_timeout: opts.open_timeout });
    // The tunnel is long-lived: open it before taking any client, so no
    // client pays for its handshake.
    air.tunnel().await?;
    let listeners = relay::Listeners::bind(opts.port)?;
    let guard = crate::steering::Interception::install(&opts.from, opts.port, None)?;
    ready();
    let handle = move |c: TcpStream| {
        let air = air.clone();
        async move {
            air.counters.connections.fetch_add(1, Ordering::Relaxed);
            let _active = relay::Active::new(&air.counters);
            let _ = air.carry(c).await;
        }
    };
    tokio::select! {
        _ = listeners.serve(handle) => {}
        _ = stop => {}
    }
    drop(guard);
    relay::drain(&counters, relay::DRAIN).await;
    ep.close(quinn::VarInt::from_u32(CLOSE_SHUTDOWN), b"air gateway stopping");
    Ok(counters.snapshot())
}
