//! The ground half: accepts authenticated air gateways and opens each
//! tunnelled TCP connection onward.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::relay::{self, Counters, Stats};
use aerolink_work::sock::TcpCc;

use super::screening::endpoint;
use super::wire::read_dest;
use crate::error::{PepError, Result};

pub struct GroundOptions {
    pub listen: SocketAddr,
    pub psk: Psk,
    pub tuning: Tuning,
    /// Congestion control and initial window of the onward TCP connections.
    pub tcp_cc: TcpCc,
    pub initcwnd: Option<u32>,
}

/// Serves air gateways until `stop` resolves.
/// The ground half's QUIC server configuration (TLS with the tunnel's ALPN,
/// the tuning's transport) and the transports it derives per path.
pub(crate) fn server_config(tuning: &Tuning) -> Result<(quinn::ServerConfig, Transports)> {
    let tls = aerolink_work::tls::server_config(&[ALPN], false)?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(quinn::crypto::rustls::QuicServerConfig::try_from(tls).map_err(aerolink_work::WorkError::from)?));
    let transports = tuning.transports()?;
    server.transport_config(Arc::new(transports.for_route(None)?));
    Ok((server, transports))
}

pub async fn ground(opts: GroundOptions, stop: impl std::future::Future<Output = ()>, ready: impl FnOnce()) -> Result<Stats> {
    let (server, transports) = server_config(&opts.tuning)?;
    let transports = Arc::new(transports);
    let base = Arc::new(server.clone());
    let sock = std::net::UdpSocket::bind(opts.listen).map_err(|source| PepError::Sys { what: format!("binding {}", opts.listen), source })?;
    let counters = Arc::new(Counters::default());
    let ep = endpoint(&opts.psk, Some(server), sock, counters.clone(), None)?;
    let routes = match opts.initcwnd {
        Some(n) => Some(crate::steering::InitialWindow::set("", n)?),
        None => None,
    };
    let psk = Arc::new(opts.psk);
    ready();
    let accept = async {
        while let Some(inc) = ep.accept().await {
            let (counters, psk, cc) = (counters.clone(), psk.clone(), opts.tcp_cc);
            let (transports, base) = (transports.clone(), base.clone());
            tokio::spawn(async move {
                let remote = inc.remote_address();
                // The path back to this air gateway may carry jumbo frames:
                // its own configuration then lets path MTU discovery use them.
                let conn = match transports.for_route(super::route_mtu(remote)) {
                    Ok(t) => {
                        let mut config = (*base).clone();
                        config.transport_config(Arc::new(t));
                        match inc.accept_with(Arc::new(config)) {
                            Ok(connecting) => connecting.await.map_err(|e| e.to_string()),
                            Err(e) => Err(e.to_string()),
                        }
                    }
                    Err(e) => Err(e.to_string()),
                };
                match conn {
                    Ok(conn) => serve_air(conn, &psk, cc, &counters).await,
                    Err(e) => {
                        counters.refused.fetch_add(1, Ordering::Relaxed);
                        log(format!("refused {remote}: handshake failed: {e}"));
                    }
                }
            });
        }
    };
    tokio::select! {
        _ = accept => {}
        _ = stop => {}
    }
    relay::drain(&counters, relay::DRAIN).await;
    ep.close(quinn::VarInt::from_u32(CLOSE_SHUTDOWN), b"ground gateway stopping");
    drop(routes);
    Ok(counters.snapshot())
}

/// One air gateway's connection: prove the key, then a TCP connection per
/// stream.
async fn serve_air(conn: quinn::Connection, psk: &Psk, cc: TcpCc, counters: &Arc<Counters>) {
    let remote = conn.remote_address();
    if !authenticate(&conn, psk, counters).await {
        return;
    }
    counters.tunnels.fetch_add(1, Ordering::Relaxed);
    log(format!("air gateway {remote} authenticated"));
    loop {
        let (send, recv) = match conn.accept_bi().await {
            Ok(s) => s,
            Err(e) => {
                log(format!("tunnel from {remote} ended: {e}"));
                return;
            }
        };
        let counters = counters.clone();
        tokio::spawn(async move {
            counters.connections.fetch_add(1, Ordering::Relaxed);
            let _active = relay::Active::new(&counters);
            let _ = ground_stream(send, recv, cc, &counters).await;
        });
    }
}

/// Waits for the air half's key proof and answers with the ground's;
/// without it (wrong, or none within [`AUTH_TIMEOUT`]) the connection is
/// closed with [`CLOSE_UNAUTHENTICATED`], and `false`.
pub(crate) async fn authenticate(conn: &quinn::Connection, psk: &Psk, counters: &Counters) -> bool {
    let remote = conn.remote_address();
    let auth = async {
        let (mut send, mut recv) = conn.accept_bi().await?;
        let mut tag = [0u8; 32];
        recv.read_exact(&mut tag).await?;
        if !psk.verify(b"air", conn, &tag) {
            return Err(PepError::WrongKey);
        }
        send.write_all(psk.proof(b"ground", conn)?.as_ref()).await?;
        send.finish()?;
        Ok(())
    };
    match tokio::time::timeout(AUTH_TIMEOUT, auth).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            refuse(conn, counters, format!("refused {remote}: {e}"));
            false
        }
        Err(_) => {
            refuse(conn, counters, format!("refused {remote}: no key proof within {AUTH_TIMEOUT:?}"));
            false
        }
    }
}

fn refuse(conn: &quinn::Connection, counters: &Counters, msg: String) {
    counters.refused.fetch_add(1, Ordering::Relaxed);
    log(msg);
    conn.close(quinn::VarInt::from_u32(CLOSE_UNAUTHENTICATED), b"unauthenticated");
}

async fn ground_stream(mut send: quinn::SendStream, mut recv: quinn::RecvStream, cc: TcpCc, counters: &Counters) -> Result<()> {
    let dest = read_dest(&mut recv).await?;
    let tcp = match relay::connect(dest, cc, Duration::from_secs(10)).await {
        Ok(t) => t,
        Err(e) => {
            counters.failed.fetch_add(1, Ordering::Relaxed);
            send.write_all(&[1]).await?;
            send.finish()?;
            let _ = recv.stop(quinn::VarInt::from_u32(1));
            return Err(e);
        }
    };
    send.write_all(&[0]).await?;
    let (mut tr, mut tw) = tcp.into_split();
    let r = relay::both_ways(relay::pump(&mut recv, &mut tw, &counters.bytes_up), super::tcp_to_stream(&mut tr, &mut send, &counters.bytes_down)).await;
    if let Err(e) = &r {
        // One side broke: break the other too, so neither end hangs.
        counters.broke("quic-tunnel ground", dest, e);
        relay::reset(tr.as_ref());
        let _ = send.reset(quinn::VarInt::from_u32(1));
        let _ = recv.stop(quinn::VarInt::from_u32(1));
    }
    Ok(r?)
}
