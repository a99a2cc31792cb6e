//! `aerolink workload …`: the workload programs themselves, run inside a
//! lab's namespaces (by `bench`, `experiment` or by hand through `run`).
//! Clients print one JSON result on stdout. The flags are defined once, in
//! [`aerolink_work::cli`], where the lab builds the same commands.

use std::net::SocketAddr;

use aerolink_work::cli::{
    BrowserArgs, BrowserParams, BulkArgs, CabinArgs, ConnsArgs, ObjectsArgs, ObjectsParams, PingArgs, RealtimeArgs, RealtimeParams, ServeArgs, WebArgs, WebClientArgs, WebParams, WorkloadCmd,
};
use aerolink_work::web::ObjectsMode;
use aerolink_work::{browser, bulk, cabin, messages, page, server, web, Transport};

use crate::error::user;

fn addr(s: &str) -> anyhow::Result<SocketAddr> {
    let host = s.trim_start_matches('[').trim_end_matches(']');
    let ip: std::net::IpAddr = host.parse().map_err(|_| user(format!("--server {s}: expected an IP address")))?;
    Ok(SocketAddr::new(ip, 0))
}

/// `--resolver ADDR`: an IP address, port 53.
fn resolver_addr(s: &str) -> anyhow::Result<SocketAddr> {
    let host = s.trim_start_matches('[').trim_end_matches(']');
    let ip: std::net::IpAddr = host.parse().map_err(|_| user(format!("--resolver {s}: expected an IP address")))?;
    Ok(SocketAddr::new(ip, 53))
}

fn with_port(a: SocketAddr, port: u16) -> SocketAddr {
    SocketAddr::new(a.ip(), port)
}

fn print<T: serde::Serialize>(v: &T) -> anyhow::Result<i32> {
    println!("{}", serde_json::to_string(v)?);
    Ok(0)
}

pub fn run(cmd: WorkloadCmd) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        match cmd {
            WorkloadCmd::Serve(ServeArgs { cc, initcwnd, nagle, push, quic, dns_answer, tls_resume }) => {
                server::serve(server::ServerOpts { tcp_cc: cc, initcwnd, quic: quic.knobs(), nagle, push, dns_answer: Some(dns_answer.unwrap_or(aerolink_work::dns::WORKLOAD_ANSWER)), tls_resume })
                    .await?;
                Ok(0)
            }
            WorkloadCmd::Web(WebArgs { server, resolver, params: WebParams { protocol, page, depth }, quic, tls_resume, client: WebClientArgs { h2_window } }) => {
                let p = page::Page::parse(&page, depth).map_err(|m| user(format!("--page {page}: expected {m}")))?;
                let tls = web::Client { tls_resume, h2_window };
                match resolver {
                    Some(r) => print(&web::load_resolving(protocol, resolver_addr(&r)?, server::HTTPS_PORT, &p, &quic.knobs(), tls).await?),
                    None => print(&web::load_with(protocol, with_port(addr(&server)?, server::HTTPS_PORT), &p, &quic.knobs(), tls).await?),
                }
            }
            WorkloadCmd::Conns(ConnsArgs { server, count, bytes, timeout }) => {
                if count == 0 {
                    return Err(user("--count: expected at least 1"));
                }
                aerolink_pep::relay::raise_fd_limit();
                let r = bulk::concurrent(with_port(addr(&server)?, server::BULK_PORT), count, bytes, std::time::Duration::from_nanos(timeout.0)).await?;
                print(&r)?;
                Ok(if r.failed == 0 { 0 } else { 1 })
            }
            WorkloadCmd::Cabin(CabinArgs { server, passengers, bytes, direction, cc }) => {
                let a = with_port(addr(&server)?, server::BULK_PORT);
                let var = if a.is_ipv6() { cabin::ENV_V6 } else { cabin::ENV };
                let from = cabin::addresses(std::env::var(var).ok().as_deref(), passengers, var).map_err(|m| user(format!("--passengers {passengers}: {m}")))?;
                let netns = cabin::namespaces(std::env::var(cabin::NETNS_ENV).ok().as_deref(), passengers).map_err(|m| user(format!("--passengers {passengers}: {m}")))?;
                print(&cabin::run(a, &from, &netns, direction, bytes, bulk::TcpClient { cc, ..Default::default() }).await?)
            }
            WorkloadCmd::Bulk(BulkArgs { server, transport, direction, bytes, cc, tcp, quic }) => {
                let a = with_port(addr(&server)?, server::BULK_PORT);
                match transport {
                    Transport::Tcp => print(&bulk::tcp(a, direction, bytes, bulk::TcpClient { cc, mss: tcp.mss, rcvbuf: tcp.rcvbuf, quickack: tcp.quickack, bind: None, netns: None }).await?),
                    Transport::Quic => print(&bulk::quic(a, direction, bytes, &quic.knobs()).await?),
                }
            }
            WorkloadCmd::Objects(ObjectsArgs { server, params: ObjectsParams { protocol, set, mode }, quic }) => {
                let sizes = page::object_set(&set).map_err(|m| user(format!("--set: {m}")))?;
                print(&web::objects(protocol, with_port(addr(&server)?, server::HTTPS_PORT), &set, &sizes, mode == ObjectsMode::Par, &quic.knobs()).await?)
            }
            WorkloadCmd::Realtime(RealtimeArgs { server, params: RealtimeParams { mechanism, scenario, count, interval_ms, size, no_nagle } }) => {
                let ip = addr(&server)?.ip();
                let p = aerolink_work::realtime::Params { scenario, count, interval_ms, size: size as usize };
                print(&aerolink_work::realtime::run(ip, mechanism, &p, !no_nagle).await?)
            }
            WorkloadCmd::Browser(BrowserArgs { server, resolver, proxy, params: BrowserParams { protocol, page, warm }, har, screenshot, net_log, timeout }) => {
                let url = browser::page_url(&page).ok_or_else(|| {
                    user(format!("--page {page}: expected a corpus page ({}), a synthetic page like 10x100KB, or an http:// or https:// URL", aerolink_work::corpus::names().join(", ")))
                })?;
                let url = browser::url_for(protocol, &url);
                // By DNS at the resolver, by the proxy, or every name mapped
                // to the server.
                let resolve_to = match resolver {
                    _ if proxy.is_some() => None,
                    Some(r) => {
                        aerolink_work::dns::use_resolver(addr(&r)?.ip()).map_err(|e| user(format!("--resolver {r}: {e}")))?;
                        None
                    }
                    None => Some(addr(&server)?.ip()),
                };
                let o = browser::LoadOpts { protocol, resolve_to, timeout: std::time::Duration::from_nanos(timeout.0), har, screenshot, warm, bodies: false, net_log, proxy };
                print(&browser::load(&page, &url, &o).await?.result)
            }
            WorkloadCmd::Ping(PingArgs { server, count, interval, size, wait, passes }) => {
                let ip = addr(&server)?.ip();
                let mut r = aerolink_work::ping::run(ip, count, std::time::Duration::from_nanos(interval.0), size, std::time::Duration::from_nanos(wait.0)).await?;
                if passes > 1 {
                    r.pass_ms = count as f64 * interval.as_millis_f64() / passes as f64;
                }
                print(&r)
            }
            WorkloadCmd::Dns(d) => {
                let r = resolver_addr(&d.resolver)?;
                let ns = |x: aerolink_link::Duration| std::time::Duration::from_nanos(x.0);
                print(&aerolink_work::dns::run(r, d.count, d.rounds, ns(d.interval), ns(d.timeout)).await)
            }
            WorkloadCmd::LinkSim(l) => {
                let profile = aerolink_experiments::profiles::load_profile(&l.profile, &[])?;
                let b = aerolink_link::batch::Batch { up: l.direction == aerolink_work::bulk::Direction::Up, count: l.count, size: l.size, interval: l.interval };
                print(&aerolink_link::batch::run(&profile, &b, l.seed))
            }
            WorkloadCmd::Messages(m) => {
                let a = with_port(addr(&m.server)?, server::MESSAGES_PORT);
                print(&messages::run(a, &m.spec(), &m.quic.knobs()).await?)
            }
        }
    })
}
