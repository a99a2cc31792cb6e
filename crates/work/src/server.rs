//! One server for every workload, run in the server namespace:
//!
//! | port       | what |
//! |------------|------|
//! | 443/tcp    | HTTPS, HTTP/1.1 (hyper) and HTTP/2 (h2, with server push on request) by ALPN, over rustls |
//! | 443/udp    | HTTP/3 (quinn + h3) |
//! | 80/tcp     | plain HTTP/1.1 (the corpus pages) |
//! | 5201/tcp   | bulk over kernel TCP |
//! | 5201/udp   | bulk over QUIC (raw streams) |
//! | 5301/tcp   | messages over kernel TCP |
//! | 5301/udp   | messages over QUIC |
//! | 8080/tcp   | real-time web: server-sent events and long polling (HTTP/1.1) |
//! | 8081/tcp   | real-time web: WebSocket |
//!
//! HTTPS, HTTP/3 and plain HTTP also serve the page corpus for its
//! origins (by SNI and host; [`crate::replay`]), so a real browser can load
//! multi-origin pages from the same server.
//!
//! Kernel TCP sockets use the configured congestion control (cubic by
//! default, as most of the Internet) and the route's initial window; QUIC
//! uses the configured knobs.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};
use serde::{Deserialize, Serialize};
use tokio::net::{TcpListener, TcpSocket};

use crate::error::{Result, WorkError};
use crate::quic::QuicKnobs;
use crate::replay::{Catalog, Found};
use crate::sock::{self, TcpCc};

pub const HTTPS_PORT: u16 = 443;
pub const HTTP_PORT: u16 = 80;
pub const BULK_PORT: u16 = 5201;
pub const MESSAGES_PORT: u16 = 5301;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServerOpts {
    /// Kernel TCP congestion control of the server's sockets.
    pub tcp_cc: TcpCc,
    /// Initial congestion window of the server's routes, segments (None:
    /// the kernel's default of 10).
    pub initcwnd: Option<u32>,
    pub quic: QuicKnobs,
    /// Nagle's algorithm on server sockets (off = TCP_NODELAY).
    pub nagle: bool,
    /// HTTP/2 server push: the share (%) of a page's objects pushed with
    /// its HTML ([`push_list`]); 0 = none.
    #[serde(default)]
    pub push: u8,
    /// Answer every name on 53/udp with this address (`None`: no name
    /// server, e.g. beside the flight reflector's own).
    #[serde(default)]
    pub dns_answer: Option<std::net::Ipv4Addr>,
    /// TLS sessions resumed within the server's life (one run).
    #[serde(default)]
    pub tls_resume: bool,
}

pub fn tcp_listener(port: u16, cc: TcpCc) -> Result<TcpListener> {
    let s = TcpSocket::new_v6()?;
    s.set_reuseaddr(true)?;
    sock::set_congestion(&s, cc).map_err(|source| WorkError::Sys { what: format!("TCP congestion control {cc}"), source })?;
    s.bind(SocketAddr::from(([0u16; 8], port)))?;
    Ok(s.listen(1024)?)
}

/// A response from the catalog (replayed and corpus pages, by host), or
/// else a synthetic page (by path).
fn respond(cat: &Catalog, host: &str, pq: &str) -> Found {
    if let Some(f) = cat.find(host, pq) {
        return f;
    }
    match crate::page::render(pq) {
        Some((ct, body)) => Found { status: 200, headers: vec![("content-type".into(), ct.into())], body: Bytes::from(body) },
        None => Found { status: 404, headers: vec![("content-type".into(), "text/plain".into())], body: Bytes::from_static(b"not found") },
    }
}

async fn handle(cat: Arc<Catalog>, req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let pq = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    Ok(crate::replay::hyper_response(respond(&cat, &crate::replay::request_host(&req), &pq)))
}

pub(crate) async fn serve_https(listener: tokio::net::TcpListener, tls: tokio_rustls::TlsAcceptor, opts: Arc<ServerOpts>, cat: Arc<Catalog>) -> Result<()> {
    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(!opts.nagle);
        let (tls, cat, push) = (tls.clone(), cat.clone(), opts.push);
        tokio::spawn(async move {
            let Ok(stream) = tls.accept(tcp).await else { return };
            if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                return serve_h2(stream, cat, push).await;
            }
            let io = hyper_util::rt::TokioIo::new(stream);
            let svc = hyper::service::service_fn(move |r| handle(cat.clone(), r));
            let _ = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new()).serve_connection(io, svc).await;
        });
    }
}

/// One HTTP/2 connection, with h2 directly (hyper offers no server push);
/// flow-control windows and limits as hyper's server sets them.
async fn serve_h2<IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(io: IO, cat: Arc<Catalog>, push: u8) {
    let mut b = h2::server::Builder::new();
    b.initial_window_size(1 << 20).initial_connection_window_size(1 << 20).max_concurrent_streams(200).max_send_buffer_size(400 * 1024).max_header_list_size(16 * 1024);
    let Ok(mut conn) = b.handshake::<_, Bytes>(io).await else { return };
    while let Some(Ok((req, send))) = conn.accept().await {
        let cat = cat.clone();
        tokio::spawn(async move {
            let _ = h2_respond(&cat, req, send, push);
        });
    }
}

/// Answers one HTTP/2 request; an HTML page goes with its pushed objects
/// (promised before the HTML's first byte, as the protocol requires). A
/// client that refused push (SETTINGS_ENABLE_PUSH = 0, as Chromium since
/// version 106) gets no promises.
fn h2_respond(cat: &Catalog, req: http::Request<h2::RecvStream>, mut send: h2::server::SendResponse<Bytes>, push: u8) -> std::result::Result<(), h2::Error> {
    let host = crate::replay::request_host(&req);
    let pq = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    let found = respond(cat, &host, &pq);
    let mut stream = send.send_response(crate::replay::response_head(&found), found.body.is_empty())?;
    let mut pushed = Vec::new();
    for path in push_list(cat, &host, &found, push) {
        let Ok(promised) = send.push_request(http::Request::get(format!("https://{host}{path}")).body(()).expect("a path from a page")) else { break };
        pushed.push((promised, respond(cat, &host, &path)));
    }
    if !found.body.is_empty() {
        stream.send_data(found.body, true)?;
    }
    for (mut promised, f) in pushed {
        let mut s = promised.send_response(crate::replay::response_head(&f), f.body.is_empty())?;
        if !f.body.is_empty() {
            s.send_data(f.body, true)?;
        }
    }
    Ok(())
}

/// What the server pushes with an HTML page: the first `share` % (rounded
/// up) of the same-origin objects it references, stylesheets' references
/// included, in the order a browser would find them.
pub fn push_list(cat: &Catalog, host: &str, page: &Found, share: u8) -> Vec<String> {
    let is = |f: &Found, ct: &str| f.headers.iter().any(|(k, v)| k == "content-type" && v.starts_with(ct));
    if share == 0 || page.status != 200 || !is(page, "text/html") {
        return Vec::new();
    }
    let own = |r: &str| -> Option<String> {
        if r.starts_with('/') {
            return Some(r.to_string());
        }
        let (_, h, path) = crate::archive::split_url(r)?;
        (h == host).then(|| path.to_string())
    };
    let mut all: Vec<String> = Vec::new();
    let add = |all: &mut Vec<String>, body: &[u8]| {
        for r in crate::page::references(body).iter().filter_map(|r| own(r)) {
            if !all.contains(&r) {
                all.push(r);
            }
        }
    };
    add(&mut all, &page.body);
    let mut i = 0;
    while i < all.len() {
        let f = respond(cat, host, &all[i]);
        if is(&f, "text/css") {
            add(&mut all, &f.body);
        }
        i += 1;
    }
    let n = (all.len() * share as usize).div_ceil(100);
    all.truncate(n);
    all
}

pub(crate) async fn serve_h3(ep: quinn::Endpoint, cat: Arc<Catalog>) -> Result<()> {
    while let Some(incoming) = ep.accept().await {
        let cat = cat.clone();
        tokio::spawn(async move {
            let Ok(conn) = incoming.await else { return };
            let Ok(mut h3c) = h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(conn)).await else { return };
            while let Ok(Some(resolver)) = h3c.accept().await {
                let cat = cat.clone();
                tokio::spawn(async move {
                    let Ok((req, mut stream)) = resolver.resolve_request().await else { return };
                    let pq = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
                    let found = respond(&cat, &crate::replay::request_host(&req), &pq);
                    if stream.send_response(crate::replay::response_head(&found)).await.is_err() {
                        return;
                    }
                    let body = found.body;
                    for chunk in body.chunks(256 * 1024) {
                        if stream.send_data(body.slice_ref(chunk)).await.is_err() {
                            return;
                        }
                    }
                    let _ = stream.finish().await;
                });
            }
        });
    }
    Ok(())
}

/// Runs every workload server until killed.
pub async fn serve(opts: ServerOpts) -> Result<()> {
    if let Some(n) = opts.initcwnd {
        sock::set_route_initcwnd(n)?;
    }
    let opts = Arc::new(opts);
    // Everything that can fail or take time (certificates) first, then every
    // socket at once: `aerolink run` starts the client when the first one
    // opens.
    let tls = tokio_rustls::TlsAcceptor::from(Arc::new(crate::tls::server_config(&[b"h2", b"http/1.1"], opts.tls_resume)?));
    let quic = |alpn: &[u8]| crate::quic::server_config(&opts.quic, &[alpn]);
    let (h3_cfg, bulk_cfg, msg_cfg) = (quic(b"h3")?, quic(crate::bulk::ALPN)?, quic(crate::messages::ALPN)?);
    let any = |port| SocketAddr::from(([0u16; 8], port));
    // The ground's name server for the `dns` workload, bound before anyone
    // is told the server is up; a host whose port 53 is taken (a resolver
    // of its own) serves everything else.
    let dns_sock = opts.dns_answer.map(|a| (a, std::net::UdpSocket::bind(any(53)).and_then(|s| s.set_nonblocking(true).and_then(|()| tokio::net::UdpSocket::from_std(s)))));
    let https = tcp_listener(HTTPS_PORT, opts.tcp_cc)?;
    let h3 = quinn::Endpoint::server(h3_cfg, any(HTTPS_PORT))?;
    let bulk_tcp = tcp_listener(BULK_PORT, opts.tcp_cc)?;
    let bulk_quic = quinn::Endpoint::server(bulk_cfg, any(BULK_PORT))?;
    let msg_tcp = tcp_listener(MESSAGES_PORT, opts.tcp_cc)?;
    let msg_quic = quinn::Endpoint::server(msg_cfg, any(MESSAGES_PORT))?;
    let rt_http = tcp_listener(crate::realtime::HTTP_PORT, opts.tcp_cc)?;
    let rt_ws = tcp_listener(crate::realtime::WS_PORT, opts.tcp_cc)?;
    let plain = tcp_listener(HTTP_PORT, opts.tcp_cc)?;
    let dns = async {
        match dns_sock {
            Some((answer, Ok(sock))) => crate::dns::serve(sock, Some(answer), None).await.map_err(Into::into),
            Some((_, Err(e))) => {
                eprintln!("workload serve: no DNS on port 53 ({e}); the other workloads are served");
                Ok(())
            }
            None => Ok(()),
        }
    };
    let cat = Arc::new(Catalog::default());
    tokio::try_join!(
        dns,
        serve_https(https, tls, opts.clone(), cat.clone()),
        serve_h3(h3, cat.clone()),
        crate::replay::serve_plain(plain, cat),
        crate::bulk::serve_tcp(bulk_tcp, opts.nagle),
        crate::bulk::serve_quic(bulk_quic),
        crate::messages::serve(msg_tcp, opts.nagle),
        crate::messages::serve_quic(msg_quic),
        crate::realtime::serve(rt_http, rt_ws, opts.nagle),
    )?;
    Ok(())
}

/// `aerolink replay serve`: every origin of `archives` and of the corpus,
/// until killed.
pub async fn serve_replay(args: &crate::replay::ReplayArgs, archives: Vec<crate::archive::Archive>) -> Result<()> {
    let cat = Arc::new(Catalog::new(archives, !args.no_corpus));
    let knobs = ServerOpts { tcp_cc: crate::sock::TcpCc::Cubic, initcwnd: None, quic: QuicKnobs::default(), nagle: false, push: args.push, dns_answer: None, tls_resume: false };
    let tls = tokio_rustls::TlsAcceptor::from(Arc::new(crate::tls::server_config(&[b"h2", b"http/1.1"], false)?));
    let h3 = quinn::Endpoint::server(crate::quic::server_config(&knobs.quic, &[b"h3"])?, SocketAddr::new(args.listen, args.https_port))?;
    let https = bind_any(args.listen, args.https_port)?;
    let plain = if args.http_port > 0 { Some(bind_any(args.listen, args.http_port)?) } else { None };
    let opts = Arc::new(knobs);
    let plain = async {
        match plain {
            Some(l) => crate::replay::serve_plain(l, cat.clone()).await,
            None => Ok(()),
        }
    };
    tokio::try_join!(serve_https(https, tls, opts, cat.clone()), serve_h3(h3, cat.clone()), plain)?;
    Ok(())
}

fn bind_any(ip: std::net::IpAddr, port: u16) -> Result<tokio::net::TcpListener> {
    let s = if ip.is_ipv6() { tokio::net::TcpSocket::new_v6()? } else { tokio::net::TcpSocket::new_v4()? };
    s.set_reuseaddr(true)?;
    s.bind(SocketAddr::new(ip, port))?;
    Ok(s.listen(1024)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(body: &str) -> Found {
        Found { status: 200, headers: vec![("content-type".into(), "text/html; charset=utf-8".into())], body: Bytes::from(body.to_string()) }
    }

    #[test]
    fn push_lists_a_pages_objects_and_its_stylesheets_objects_once_same_origin_only() {
        let cat = Catalog::default();
        let page = crate::page::Page::parse("4x1KB", 3).unwrap();
        let found = respond(&cat, "h", &page.url());
        let all = push_list(&cat, "h", &found, 100);
        // Two chained stylesheets and four images, each once.
        assert_eq!(all.len(), 6, "{all:?}");
        assert_eq!(all.iter().filter(|p| p.contains(".css")).count(), 2, "{all:?}");
        assert!(all.iter().all(|p| all.iter().filter(|q| *q == p).count() == 1));
        // A share is rounded up; none is none.
        assert_eq!(push_list(&cat, "h", &found, 50), all[..3]);
        assert_eq!(push_list(&cat, "h", &found, 1), all[..1]);
        assert!(push_list(&cat, "h", &found, 0).is_empty());
        // Only an HTML page pushes; only its own origin's objects.
        let image = respond(&cat, "h", all.iter().find(|p| p.starts_with("/obj/")).unwrap());
        assert!(push_list(&cat, "h", &image, 100).is_empty());
        let mixed = html(r#"<img src="https://other.test/x.png"><img src="https://h/y.png"><img src="/z.png"><img src="/z.png">"#);
        assert_eq!(push_list(&cat, "h", &mixed, 100), ["/y.png", "/z.png"]);
    }
}
