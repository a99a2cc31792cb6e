//! The web workload's client: loads a synthetic page like a browser.
//!
//! Fetch the HTML, discover its references, fetch them as the protocol
//! allows, follow stylesheets to the objects they reference:
//! - `h1`: HTTP/1.1 over TLS, persistent connections, at most 6 per origin,
//!   opened as requests need them (as browsers do);
//! - `h1-close`: a new connection per object (`Connection: close`), at most
//!   6 at a time;
//! - `http1`, `http1-close`: the same in plain HTTP (no TLS, port 80), as
//!   seed 001 compares HTTP with HTTPS;
//! - `h2`: every request multiplexed on one TLS connection (h2, settings
//!   as hyper's client); objects the server pushes are taken from the
//!   push, not requested;
//! - `h3`: every request on one QUIC connection.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::{Buf, Bytes};
use http_body_util::{BodyExt, Empty};
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::error::Result;
use crate::page::{references, Page};
use crate::quic::QuicKnobs;
use crate::sock::{self, TcpCounters};

crate::choice! {
    /// How the client fetches: HTTP/1.1 (persistent, or a connection per
    /// object) over TLS or plain, HTTP/2, HTTP/3.
    pub enum Protocol { H1 = "h1", H1Close = "h1-close", Http1 = "http1", Http1Close = "http1-close", H2 = "h2", H3 = "h3" }
}

crate::choice! {
    /// Objects one after another (`seq`) or all at once (`par`).
    pub enum ObjectsMode { Seq = "seq", Par = "par" }
}
/// Connections per origin for HTTP/1.1, as browsers allow.
pub const H1_MAX_CONNECTIONS: usize = 6;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ObjectTiming {
    pub path: String,
    pub bytes: u64,
    /// Since the page load began, ms.
    pub start_ms: f64,
    pub first_byte_ms: f64,
    pub end_ms: f64,
    /// Which connection carried it (0-based, in opening order).
    pub conn: usize,
    /// Pushed by the server (HTTP/2): `start_ms` is when its promise came.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pushed: bool,
    /// Proxy and cache headers of the response ([`NOTABLE_HEADERS`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub headers: std::collections::BTreeMap<String, String>,
}

/// Response headers that tell of proxies and caches on the path (seed 000
/// §5.3 found them in flight): kept with each object's timing.
pub const NOTABLE_HEADERS: [&str; 7] = ["via", "x-cache", "x-cache-lookup", "age", "cache-status", "x-served-by", "forwarded"];

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WebResult {
    pub protocol: String,
    /// The ALPN the server really agreed to.
    pub alpn: String,
    pub page: String,
    pub depth: u32,
    /// Page load time: start to the last byte of the last object, ms.
    pub plt_ms: f64,
    /// Time to the first byte of the HTML response, ms.
    pub ttfb_ms: f64,
    pub requests: usize,
    /// Objects the server pushed (HTTP/2), counted in `requests` too.
    #[serde(default)]
    pub pushed: usize,
    pub body_bytes: u64,
    pub connections: usize,
    /// Retransmitted segments (TCP, from TCP_INFO of the client's sockets,
    /// i.e. the upload side) or lost packets the client detected (QUIC).
    pub client_retransmits: u64,
    /// The page's name looked up at a resolver first (`--resolver`), ms;
    /// the load's times count from before it, as a browser's do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_ms: Option<f64>,
    pub objects: Vec<ObjectTiming>,
}

struct Fetched {
    timing: ObjectTiming,
    content_type: String,
    body: Bytes,
}

fn ms(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

struct Fd(RawFd);
impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

type H1Send = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;
type H2Send = h2::client::SendRequest<Bytes>;
/// A pushed response, read as it arrives: its timing, type and body.
type Pushed = tokio::sync::oneshot::Receiver<Result<(ObjectTiming, String, Bytes)>>;
type H3Send = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// A connection's byte stream: TLS, or plain TCP.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

struct Tcp {
    addr: SocketAddr,
    /// `None`: plain HTTP.
    tls: Option<tokio_rustls::TlsConnector>,
    opened: Mutex<Vec<RawFd>>,
    counters: Mutex<TcpCounters>,
    alpn: Mutex<String>,
}

/// The client's settings for a load beyond its protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Client {
    /// Later connections resume earlier ones' TLS sessions (as a
    /// browser's do).
    pub tls_resume: bool,
    /// HTTP/2's receive windows, bytes, for each stream and the
    /// connection; `None`: 2 MB and 5 MB, a browser's order.
    pub h2_window: Option<u32>,
}

impl Client {
    /// HTTP/2's stream and connection receive windows.
    fn h2_windows(&self) -> (u32, u32) {
        self.h2_window.map_or((2 << 20, 5 << 20), |w| (w, w))
    }
}

impl Tcp {
    fn new(addr: SocketAddr, alpn: &[u8], resume: bool) -> Result<Self> {
        let cfg = crate::tls::client_config(&[alpn], resume)?;
        Ok(Tcp { addr, tls: Some(tokio_rustls::TlsConnector::from(Arc::new(cfg))), opened: Mutex::new(Vec::new()), counters: Mutex::default(), alpn: Mutex::default() })
    }

    /// Plain HTTP/1.1 to the server's port 80.
    fn plain(addr: SocketAddr) -> Self {
        let addr = SocketAddr::new(addr.ip(), crate::server::HTTP_PORT);
        Tcp { addr, tls: None, opened: Mutex::new(Vec::new()), counters: Mutex::default(), alpn: Mutex::new("http/1.1".into()) }
    }

    /// The URL scheme of its requests.
    fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// Opens a connection (TLS unless plain); returns its stream, its
    /// socket and its index.
    async fn connect(&self) -> Result<(Box<dyn Io>, RawFd, usize)> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let fd = tcp.as_raw_fd();
        let io: Box<dyn Io> = match &self.tls {
            Some(tls) => {
                let tls = tls.connect(crate::tls::server_name(), tcp).await?;
                let alpn = tls.get_ref().1.alpn_protocol().map(|a| String::from_utf8_lossy(a).to_string()).unwrap_or_default();
                *self.alpn.lock().expect("not poisoned") = alpn;
                Box::new(tls)
            }
            None => Box::new(tcp),
        };
        let mut o = self.opened.lock().expect("not poisoned");
        o.push(fd);
        Ok((io, fd, o.len() - 1))
    }

    /// ALPN, connections opened and retransmissions. (Each lock is taken
    /// and released in its own statement.)
    fn summary(&self, closed_already_counted: bool) -> (String, usize, u64) {
        let alpn = self.alpn.lock().expect("not poisoned").clone();
        let conns = self.opened.lock().expect("not poisoned").len();
        let retrans = self.collect_open(closed_already_counted).retransmits;
        (alpn, conns, retrans)
    }

    /// Adds up TCP_INFO of the connections still open.
    fn collect_open(&self, skip_closed: bool) -> TcpCounters {
        let mut c = *self.counters.lock().expect("not poisoned");
        if !skip_closed {
            for fd in self.opened.lock().expect("not poisoned").iter() {
                c += sock::counters(&Fd(*fd));
            }
        }
        c
    }
}

pub async fn read_hyper_body(mut body: hyper::body::Incoming) -> Result<Bytes> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(d) = frame?.into_data() {
            out.extend_from_slice(&d);
        }
    }
    Ok(Bytes::from(out))
}

/// Reads an HTTP/2 body, giving the window back as it goes.
async fn read_h2_body(mut body: h2::RecvStream) -> Result<Bytes> {
    let mut out = Vec::new();
    while let Some(d) = body.data().await {
        let d = d?;
        out.extend_from_slice(&d);
        let _ = body.flow_control().release_capacity(d.len());
    }
    Ok(Bytes::from(out))
}

fn request(scheme: &str, path: &str, close: bool) -> Result<http::Request<Empty<Bytes>>> {
    let mut b = http::Request::get(format!("{scheme}://{}{path}", crate::tls::SERVER_NAME)).header("user-agent", "aerolink");
    if close {
        b = b.header("connection", "close");
    }
    Ok(b.body(Empty::new())?)
}

enum Transport {
    H1 { tcp: Tcp, idle: Mutex<Vec<(usize, H1Send)>>, slots: Semaphore },
    H1Close { tcp: Tcp, slots: Semaphore },
    H2 { tcp: Tcp, send: H2Send, pushed: Mutex<std::collections::HashMap<String, Pushed>> },
    H3 { send: H3Send, conn: quinn::Connection, alpn: String },
}

impl Transport {
    async fn open(protocol: Protocol, addr: SocketAddr, quic: &QuicKnobs, client: Client) -> Result<Transport> {
        Ok(match protocol {
            Protocol::H1 => Transport::H1 { tcp: Tcp::new(addr, b"http/1.1", client.tls_resume)?, idle: Mutex::new(Vec::new()), slots: Semaphore::new(H1_MAX_CONNECTIONS) },
            Protocol::H1Close => Transport::H1Close { tcp: Tcp::new(addr, b"http/1.1", client.tls_resume)?, slots: Semaphore::new(H1_MAX_CONNECTIONS) },
            Protocol::Http1 => Transport::H1 { tcp: Tcp::plain(addr), idle: Mutex::new(Vec::new()), slots: Semaphore::new(H1_MAX_CONNECTIONS) },
            Protocol::Http1Close => Transport::H1Close { tcp: Tcp::plain(addr), slots: Semaphore::new(H1_MAX_CONNECTIONS) },
            Protocol::H2 => {
                let tcp = Tcp::new(addr, b"h2", client.tls_resume)?;
                let (tls, _, _) = tcp.connect().await?;
                let (stream_window, conn_window) = client.h2_windows();
                let (send, conn) = h2::client::Builder::new()
                    .initial_window_size(stream_window)
                    .initial_connection_window_size(conn_window)
                    .max_send_buffer_size(1 << 20)
                    .max_header_list_size(16 << 10)
                    .enable_push(true)
                    .handshake(tls)
                    .await?;
                tokio::spawn(conn);
                Transport::H2 { tcp, send, pushed: Mutex::default() }
            }
            Protocol::H3 => {
                let ep = crate::quic::client_endpoint(addr, quic, &[b"h3"])?;
                let conn = ep.connect(addr, crate::tls::SERVER_NAME)?.await?;
                let alpn = conn
                    .handshake_data()
                    .and_then(|h| h.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
                    .and_then(|h| h.protocol)
                    .map(|p| String::from_utf8_lossy(&p).to_string())
                    .unwrap_or_default();
                let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn.clone())).await?;
                tokio::spawn(async move {
                    let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
                });
                Transport::H3 { send, conn, alpn }
            }
        })
    }

    /// ALPN, connections opened and retransmissions (TCP) or lost packets
    /// (QUIC); closes a QUIC connection.
    fn finish(&self) -> (String, usize, u64) {
        match self {
            Transport::H1 { tcp, .. } | Transport::H2 { tcp, .. } => tcp.summary(false),
            Transport::H1Close { tcp, .. } => tcp.summary(true),
            Transport::H3 { conn, alpn, .. } => {
                let s = conn.stats();
                conn.close(0u32.into(), b"done");
                (alpn.clone(), 1, s.path.lost_packets)
            }
        }
    }

    async fn fetch(&self, path: String, t0: Instant) -> Result<Fetched> {
        let start_ms = ms(t0);
        let (conn, resp_ms, ct, body) = match self {
            Transport::H1 { tcp, idle, slots } => {
                let _slot = slots.acquire().await?;
                let reuse = idle.lock().expect("not poisoned").pop();
                let (idx, mut send) = match reuse {
                    Some(x) => x,
                    None => {
                        let (io, _, idx) = tcp.connect().await?;
                        let (send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io)).await?;
                        tokio::spawn(conn);
                        (idx, send)
                    }
                };
                send.ready().await?;
                let resp = send.send_request(request(tcp.scheme(), &path, false)?).await?;
                let resp_ms = ms(t0);
                let ct = content_type(resp.headers());
                let body = read_hyper_body(resp.into_body()).await?;
                idle.lock().expect("not poisoned").push((idx, send));
                (idx, resp_ms, ct, body)
            }
            Transport::H1Close { tcp, slots } => {
                let _slot = slots.acquire().await?;
                let (io, fd, idx) = tcp.connect().await?;
                let (mut send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io)).await?;
                let driver = tokio::spawn(conn);
                send.ready().await?;
                let resp = send.send_request(request(tcp.scheme(), &path, true)?).await?;
                let resp_ms = ms(t0);
                let ct = content_type(resp.headers());
                let body = read_hyper_body(resp.into_body()).await?;
                *tcp.counters.lock().expect("not poisoned") += sock::counters(&Fd(fd));
                drop(send);
                let _ = driver.await;
                (idx, resp_ms, ct, body)
            }
            Transport::H2 { send, pushed, .. } => match fetch_h2(send, pushed, &path, t0).await? {
                H2Fetch::Pushed(f) => return Ok(f),
                H2Fetch::Asked(resp_ms, ct, body) => (0, resp_ms, ct, body),
            },
            Transport::H3 { send, .. } => {
                let mut send = send.clone();
                let req = http::Request::get(format!("https://{}{path}", crate::tls::SERVER_NAME)).body(())?;
                let mut stream = send.send_request(req).await?;
                stream.finish().await?;
                let resp = stream.recv_response().await?;
                let resp_ms = ms(t0);
                let ct = content_type(resp.headers());
                let mut out = Vec::new();
                while let Some(mut chunk) = stream.recv_data().await? {
                    while chunk.has_remaining() {
                        let c = chunk.chunk();
                        out.extend_from_slice(c);
                        let n = c.len();
                        chunk.advance(n);
                    }
                }
                (0, resp_ms, ct, Bytes::from(out))
            }
        };
        Ok(Fetched { timing: ObjectTiming { path, bytes: body.len() as u64, start_ms, first_byte_ms: resp_ms, end_ms: ms(t0), conn, pushed: false, headers: ct.1 }, content_type: ct.0, body })
    }
}

/// What an HTTP/2 fetch got: the server's push, or the response asked for
/// (its first byte's time, content type and headers, body).
enum H2Fetch {
    Pushed(Fetched),
    Asked(f64, (String, std::collections::BTreeMap<String, String>), Bytes),
}

/// `path` over HTTP/2: taken from a push the server promised, or asked
/// for, reading the promises that come with the response.
async fn fetch_h2(send: &H2Send, pushed: &Mutex<std::collections::HashMap<String, Pushed>>, path: &str, t0: Instant) -> Result<H2Fetch> {
    let promised = pushed.lock().expect("not poisoned").remove(path);
    if let Some(rx) = promised {
        let (timing, content_type, body) = rx.await.map_err(|_| crate::error::WorkError::Browser(format!("{path}: pushed response lost")))??;
        return Ok(H2Fetch::Pushed(Fetched { timing, content_type, body }));
    }
    let mut send = send.clone().ready().await?;
    let (mut resp, _) = send.send_request(http::Request::get(format!("https://{}{path}", crate::tls::SERVER_NAME)).header("user-agent", "aerolink").body(())?, true)?;
    let mut promises = resp.push_promises();
    let read = async {
        let resp = resp.await?;
        let resp_ms = ms(t0);
        Ok::<_, crate::error::WorkError>((resp_ms, content_type(resp.headers()), read_h2_body(resp.into_body()).await?))
    };
    // Promises come before the HTML's first byte, so all of
    // them are known once its body has ended. h2 does not wake
    // a promise reader when the stream ends, so promises are read
    // while the body is, then drained without waiting.
    let accept = |p: h2::client::PushPromise| {
        let (req, response) = p.into_parts();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let path = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
        pushed.lock().expect("not poisoned").insert(path.clone(), rx);
        let start_ms = ms(t0);
        tokio::spawn(async move {
            let got = async {
                let resp = response.await?;
                let first_byte_ms = ms(t0);
                let ct = content_type(resp.headers());
                let body = read_h2_body(resp.into_body()).await?;
                Ok((ObjectTiming { path, bytes: body.len() as u64, start_ms, first_byte_ms, end_ms: ms(t0), conn: 0, pushed: true, headers: ct.1 }, ct.0, body))
            };
            let _ = tx.send(got.await);
        });
    };
    let mut read = std::pin::pin!(read);
    let mut open = true;
    let read = loop {
        tokio::select! {
            r = &mut read => break r,
            p = promises.push_promise(), if open => match p {
                Some(Ok(p)) => accept(p),
                _ => open = false,
            },
        }
    };
    while let Some(Ok(p)) = promises.push_promise().await {
        accept(p);
    }
    let (resp_ms, ct, body) = read?;
    Ok(H2Fetch::Asked(resp_ms, ct, body))
}

/// The content type and the [`NOTABLE_HEADERS`] of a response.
pub fn content_type(h: &http::HeaderMap) -> (String, std::collections::BTreeMap<String, String>) {
    let ct = h.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let notable = NOTABLE_HEADERS.iter().map(|n| (n.to_string(), h.get_all(*n).iter().filter_map(|v| v.to_str().ok()).collect::<Vec<_>>().join(", "))).filter(|(_, v)| !v.is_empty()).collect();
    (ct, notable)
}

/// Loads `page` from `server` over `protocol`.
pub async fn load(protocol: Protocol, server: SocketAddr, page: &Page, quic: &QuicKnobs) -> Result<WebResult> {
    load_with(protocol, server, page, quic, Client::default()).await
}

/// [`load`] with the client's settings.
pub async fn load_with(protocol: Protocol, server: SocketAddr, page: &Page, quic: &QuicKnobs, client: Client) -> Result<WebResult> {
    load_from(protocol, server, page, quic, client, Instant::now(), None).await
}

/// Looks the page's name ([`crate::tls::SERVER_NAME`]) up at `resolver`
/// (A, at most 30 s), then loads `page` from the address it gives on
/// `port`: a page load that begins with its lookup, as a browser's does.
pub async fn load_resolving(protocol: Protocol, resolver: SocketAddr, port: u16, page: &Page, quic: &QuicKnobs, client: Client) -> Result<WebResult> {
    let t0 = Instant::now();
    let l = crate::dns::lookup(resolver, crate::tls::SERVER_NAME, std::time::Duration::from_secs(30)).await;
    let ip = l.answers.iter().find_map(|a| a.parse::<std::net::IpAddr>().ok());
    let (Some(ms), Some(ip)) = (l.ms, ip) else {
        let why = l.error.or(l.rcode.map(|r| format!("answer {r}"))).unwrap_or_else(|| "no address in the answer".into());
        return Err(crate::error::WorkError::Dns(format!("{} at {resolver}: {why}", crate::tls::SERVER_NAME)));
    };
    load_from(protocol, SocketAddr::new(ip, port), page, quic, client, t0, Some(ms)).await
}

async fn load_from(protocol: Protocol, server: SocketAddr, page: &Page, quic: &QuicKnobs, client: Client, t0: Instant, dns_ms: Option<f64>) -> Result<WebResult> {
    let transport = Arc::new(Transport::open(protocol, server, quic, client).await?);
    let mut set = JoinSet::new();
    {
        let t = transport.clone();
        let url = page.url();
        set.spawn(async move { t.fetch(url, t0).await });
    }
    let mut objects = Vec::new();
    let mut ttfb_ms = 0.0;
    while let Some(joined) = set.join_next().await {
        let f = joined??;
        if f.timing.path.starts_with("/page.html") {
            ttfb_ms = f.timing.first_byte_ms;
        }
        if f.content_type.starts_with("text/html") || f.content_type.starts_with("text/css") {
            for r in references(&f.body) {
                let t = transport.clone();
                set.spawn(async move { t.fetch(r, t0).await });
            }
        }
        objects.push(f.timing);
    }
    let plt_ms = objects.iter().map(|o| o.end_ms).fold(0.0, f64::max);
    let (alpn, connections, client_retransmits) = transport.finish();
    objects.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    Ok(WebResult {
        protocol: protocol.to_string(),
        alpn,
        page: page.spec.clone(),
        depth: page.depth,
        plt_ms,
        ttfb_ms,
        requests: objects.len(),
        pushed: objects.iter().filter(|o| o.pushed).count(),
        body_bytes: objects.iter().map(|o| o.bytes).sum(),
        connections,
        client_retransmits,
        dns_ms,
        objects,
    })
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ObjectsResult {
    pub protocol: String,
    pub alpn: String,
    pub set: String,
    pub parallel: bool,
    /// From the start (handshake included) to the last byte of the last
    /// object, ms.
    pub total_ms: f64,
    pub connections: usize,
    pub client_retransmits: u64,
    pub objects: Vec<ObjectTiming>,
}

/// Seed 003's object sets: fetches `sizes` one after another or all at once
/// over one connection (`h2` or `h3`; `h1` for comparison).
pub async fn objects(protocol: Protocol, server: SocketAddr, set: &str, sizes: &[u64], parallel: bool, quic: &QuicKnobs) -> Result<ObjectsResult> {
    let t0 = Instant::now();
    let transport = Arc::new(Transport::open(protocol, server, quic, Client::default()).await?);
    let paths: Vec<String> = sizes.iter().enumerate().map(|(i, s)| format!("/obj/{i}.bin?size={s}")).collect();
    let mut objects = Vec::new();
    if parallel {
        let mut set_ = JoinSet::new();
        for p in paths {
            let t = transport.clone();
            set_.spawn(async move { t.fetch(p, t0).await });
        }
        while let Some(j) = set_.join_next().await {
            objects.push(j??.timing);
        }
    } else {
        for p in paths {
            objects.push(transport.fetch(p, t0).await?.timing);
        }
    }
    let total_ms = objects.iter().map(|o| o.end_ms).fold(0.0, f64::max);
    let (alpn, connections, client_retransmits) = transport.finish();
    objects.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    Ok(ObjectsResult { protocol: protocol.to_string(), alpn, set: set.into(), parallel, total_ms, connections, client_retransmits, objects })
}
