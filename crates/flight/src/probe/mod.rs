//! The flight measurement agent and its ground reflector (seed 000's test
//! bench, made repeatable).
//!
//! `aerolink probe serve` runs on the ground: it answers the agent's UDP
//! probes ([`wire`]), serves pages over HTTP/1.1, HTTP/2 and HTTP/3 and bulk
//! transfers (the workload server), and answers DNS questions for any name
//! ([`aerolink_work::dns`]). `aerolink probe run` runs aboard (a laptop, an aircraft
//! server): on a schedule it probes, pings, traces, looks up, loads pages
//! and transfers, and writes each measurement as one JSON line the moment
//! it has it ([`record`]). Nothing here needs aerolink's namespaces or
//! privileges beyond binding the reflector's ports.

pub mod agent;
pub mod irtt;
pub mod plain;
pub mod record;
pub mod stamp;
pub mod trace;
pub mod wire;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The any-address of `peer`'s family, port 0: where a client socket to
/// `peer` binds.
pub(crate) fn local_any(peer: SocketAddr) -> SocketAddr {
    let ip = if peer.is_ipv6() { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) };
    SocketAddr::new(ip, 0)
}

use clap::Args;

/// The ground reflector's settings.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct ReflectorArgs {
    /// UDP port of the probe reflector.
    #[arg(long, default_value_t = wire::PORT)]
    pub udp_port: u16,
    /// UDP port of the DNS server (0: none).
    #[arg(long, default_value_t = 53)]
    pub dns_port: u16,
    /// The address every A question is answered with.
    #[arg(long, default_value = "198.18.0.2")]
    pub dns_answer: Ipv4Addr,
    /// Serve only the reflector and DNS, not pages and transfers (for a
    /// host that already runs `aerolink workload serve`).
    #[arg(long)]
    pub no_workloads: bool,
}

/// Runs the reflector, the DNS server and (unless told not to) the
/// workload server, until one fails.
pub async fn serve(a: ReflectorArgs) -> aerolink_work::error::Result<()> {
    let any = |port| SocketAddr::from(([0u16; 8], port));
    let udp = tokio::net::UdpSocket::bind(any(a.udp_port)).await.map_err(|e| aerolink_work::error::WorkError::Sys { what: format!("UDP port {}", a.udp_port), source: e })?;
    let dns_sock = match a.dns_port {
        0 => None,
        p => Some(tokio::net::UdpSocket::bind(any(p)).await.map_err(|e| aerolink_work::error::WorkError::Sys { what: format!("DNS port {p}"), source: e })?),
    };
    let dns_task = async {
        match dns_sock {
            Some(s) => aerolink_work::dns::serve(s, Some(a.dns_answer), None).await,
            None => std::future::pending().await,
        }
    };
    let workloads = async {
        if a.no_workloads {
            std::future::pending().await
        } else {
            aerolink_work::server::serve(aerolink_work::server::ServerOpts {
                tcp_cc: Default::default(),
                initcwnd: None,
                quic: Default::default(),
                nagle: false,
                push: 0,
                dns_answer: None,
                tls_resume: false,
            })
            .await
        }
    };
    tokio::try_join!(async { wire::serve(udp).await.map_err(aerolink_work::error::WorkError::from) }, async { dns_task.await.map_err(aerolink_work::error::WorkError::from) }, workloads)?;
    Ok(())
}
