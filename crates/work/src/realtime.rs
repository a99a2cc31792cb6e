//! The real-time web workload (seed 001 §8): a server update (the server
//! pushes `count` small messages), a client update (the client sends them),
//! and a chat (`count` messages each way, each answered before the next),
//! over three mechanisms:
//! - `ws`: one WebSocket (port 8081), messages both ways;
//! - `sse`: server-sent events on one long-lived HTTP/1.1 response for
//!   server → client, and an HTTP POST per message for client → server;
//! - `alp`: Ajax long polling — the client keeps one `GET /poll` waiting,
//!   the server answers it when it has something, the client polls again at
//!   once; client → server by POST.
//!
//! Nagle's algorithm is on unless turned off (as in the study, where it
//! delayed SSE). Each message carries its send time (CLOCK_REALTIME, shared
//! by the namespaces), so each latency is one-way: receive − send.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::{Request, Response};
use serde::{Deserialize, Serialize};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};
use tokio_tungstenite::tungstenite::Message;

pub const HTTP_PORT: u16 = 8080;
pub const WS_PORT: u16 = 8081;
crate::choice! {
    /// WebSocket, server-sent events, or HTTP long polling.
    pub enum Mechanism { Ws = "ws", Sse = "sse", Alp = "alp" }
}

crate::choice! {
    /// Seed 001's three uses of a real-time channel.
    pub enum Scenario { ServerUpdate = "server-update", ClientUpdate = "client-update", Chat = "chat" }
}

use crate::clock::now_ns;
use crate::error::{Result, WorkError};

/// A message: `seq sent_ns` and padding to `size` bytes.
fn message(seq: u32, size: usize) -> String {
    let mut m = format!("{seq} {}", now_ns());
    while m.len() < size {
        m.push('.');
    }
    m
}

/// `(seq, latency_ms)` of a received message.
fn parse(m: &str) -> Option<(u32, f64)> {
    let mut it = m.split(' ');
    let seq = it.next()?.parse().ok()?;
    let sent: u64 = it.next()?.trim_end_matches('.').parse().ok()?;
    Some((seq, now_ns().saturating_sub(sent) as f64 / 1e6))
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    pub scenario: Scenario,
    pub count: u32,
    /// Gap between updates (server and client updates), ms.
    pub interval_ms: u64,
    pub size: usize,
}

impl Params {
    fn query(&self) -> String {
        format!("scenario={}&count={}&interval_ms={}&size={}", self.scenario, self.count, self.interval_ms, self.size)
    }
    fn from_query(q: &str) -> Option<Params> {
        let kv = crate::page::query(q);
        let get = |k: &str| kv.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
        Some(Params { scenario: get("scenario")?.parse().ok()?, count: get("count")?.parse().ok()?, interval_ms: get("interval_ms")?.parse().ok()?, size: get("size")?.parse().ok()? })
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RealtimeResult {
    pub mechanism: String,
    pub scenario: String,
    pub nagle: bool,
    pub count: u32,
    /// One-way latencies of server → client messages, ms, in order.
    pub server_to_client_ms: Vec<f64>,
    /// One-way latencies of client → server messages, ms (measured by the
    /// server, reported at the end).
    pub client_to_server_ms: Vec<f64>,
    /// TCP connections the client opened: one for WebSocket, two for SSE
    /// and long polling (the server → client channel, and the one the
    /// client's POSTs go over).
    #[serde(default)]
    pub connections: u32,
    pub total_ms: f64,
}

// ---------------------------------------------------------------- server

#[derive(Default)]
struct Session {
    /// Messages waiting for the next long poll.
    queue: Vec<String>,
    /// The SSE stream of this session, if open.
    sse: Option<mpsc::UnboundedSender<String>>,
    received_ms: Vec<f64>,
    notify: Arc<Notify>,
}

type Sessions = Arc<Mutex<HashMap<String, Session>>>;

fn session_id(q: &str) -> String {
    crate::page::query(q).into_iter().find(|(k, _)| k == "session").map(|(_, v)| v).unwrap_or_default()
}

/// Sends a server → client message on the session's SSE stream or queues
/// it for its long poll.
fn push(sessions: &Sessions, id: &str, msg: String) {
    let mut s = sessions.lock().expect("not poisoned");
    let sess = s.entry(id.to_string()).or_default();
    match &sess.sse {
        Some(tx) => {
            let _ = tx.send(msg);
        }
        None => {
            sess.queue.push(msg);
            sess.notify.notify_one();
        }
    }
}

fn text(status: u16, body: String, ct: &'static str) -> Response<http_body_util::combinators::BoxBody<Bytes, Infallible>> {
    Response::builder().status(status).header("content-type", ct).header("cache-control", "no-store").body(Full::new(Bytes::from(body)).boxed()).expect("valid response")
}

async fn handle(req: Request<hyper::body::Incoming>, sessions: Sessions) -> Result<Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>, Infallible> {
    let path = req.uri().path().to_string();
    let q = req.uri().query().unwrap_or("").to_string();
    let id = session_id(&q);
    match path.as_str() {
        "/sse" => {
            let Some(p) = Params::from_query(&q) else { return Ok(text(400, "bad parameters".into(), "text/plain")) };
            let (tx, rx) = mpsc::unbounded_channel::<String>();
            sessions.lock().expect("not poisoned").entry(id.clone()).or_default().sse = Some(tx);
            if p.scenario == Scenario::ServerUpdate {
                let s = sessions.clone();
                tokio::spawn(async move { server_updates(&s, &id, &p).await });
            }
            let stream = tokio_stream_from(rx);
            let body = StreamBody::new(stream.map(|m| Ok::<_, Infallible>(Frame::data(Bytes::from(format!("data: {m}\n\n"))))));
            Ok(Response::builder().header("content-type", "text/event-stream").header("cache-control", "no-store").body(BodyExt::boxed(body)).expect("valid response"))
        }
        "/start" => {
            // Long polling: start a server update for the session.
            let Some(p) = Params::from_query(&q) else { return Ok(text(400, "bad parameters".into(), "text/plain")) };
            sessions.lock().expect("not poisoned").entry(id.clone()).or_default();
            if p.scenario == Scenario::ServerUpdate {
                let s = sessions.clone();
                tokio::spawn(async move { server_updates(&s, &id, &p).await });
            }
            Ok(text(200, "started".into(), "text/plain"))
        }
        "/poll" => loop {
            let notify = {
                let mut s = sessions.lock().expect("not poisoned");
                let sess = s.entry(id.clone()).or_default();
                if !sess.queue.is_empty() {
                    let msgs = std::mem::take(&mut sess.queue);
                    return Ok(text(200, msgs.join("\n"), "text/plain"));
                }
                sess.notify.clone()
            };
            notify.notified().await;
        },
        "/msg" => {
            let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            let m = String::from_utf8_lossy(&body).to_string();
            if let Some((seq, lat)) = parse(&m) {
                let size = m.len();
                let chat = q.contains("chat=1");
                sessions.lock().expect("not poisoned").entry(id.clone()).or_default().received_ms.push(lat);
                if chat {
                    push(&sessions, &id, message(seq, size));
                }
            }
            Ok(text(200, "ok".into(), "text/plain"))
        }
        "/report" => {
            let r = sessions.lock().expect("not poisoned").remove(&id).map(|s| s.received_ms).unwrap_or_default();
            Ok(text(200, serde_json::to_string(&r).unwrap_or_default(), "application/json"))
        }
        _ => Ok(text(404, "not found".into(), "text/plain")),
    }
}

fn tokio_stream_from(mut rx: mpsc::UnboundedReceiver<String>) -> impl futures_util::Stream<Item = String> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

async fn server_updates(sessions: &Sessions, id: &str, p: &Params) {
    for seq in 0..p.count {
        push(sessions, id, message(seq, p.size));
        tokio::time::sleep(Duration::from_millis(p.interval_ms)).await;
    }
}

async fn serve_ws_conn(tcp: TcpStream) -> Result<()> {
    let mut params = None;
    // The callback's type is tungstenite's (its error is a whole HTTP response).
    #[allow(clippy::result_large_err)]
    let cb = |req: &tokio_tungstenite::tungstenite::handshake::server::Request, resp| {
        params = req.uri().query().and_then(Params::from_query);
        Ok(resp)
    };
    let ws = tokio_tungstenite::accept_hdr_async(tcp, cb).await?;
    let p = params.ok_or(WorkError::BadMessage("real-time parameters"))?;
    let (mut tx, mut rx) = ws.split();
    let mut received = Vec::new();
    match p.scenario {
        Scenario::ServerUpdate => {
            for seq in 0..p.count {
                tx.send(Message::text(message(seq, p.size))).await?;
                tokio::time::sleep(Duration::from_millis(p.interval_ms)).await;
            }
            tx.send(Message::text("end")).await?;
        }
        _ => {
            let chat = p.scenario == Scenario::Chat;
            while let Some(m) = rx.next().await {
                let m = m?;
                let Message::Text(t) = m else { continue };
                if t.as_str() == "end" {
                    break;
                }
                if let Some((seq, lat)) = parse(t.as_str()) {
                    received.push(lat);
                    if chat {
                        tx.send(Message::text(message(seq, p.size))).await?;
                    }
                }
            }
            tx.send(Message::text(format!("report {}", serde_json::to_string(&received)?))).await?;
        }
    }
    // Wait for the client to close.
    while let Some(Ok(_)) = rx.next().await {}
    Ok(())
}

/// Serves all three mechanisms until killed.
pub async fn serve(http: TcpListener, ws: TcpListener, nagle: bool) -> Result<()> {
    let sessions: Sessions = Arc::default();
    let ws_task = async move {
        loop {
            let (tcp, _) = ws.accept().await?;
            let _ = tcp.set_nodelay(!nagle);
            tokio::spawn(async move {
                let _ = serve_ws_conn(tcp).await;
            });
        }
        #[allow(unreachable_code)]
        Ok::<(), WorkError>(())
    };
    let http_task = async move {
        loop {
            let (tcp, _) = http.accept().await?;
            let _ = tcp.set_nodelay(!nagle);
            let s = sessions.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| handle(req, s.clone()));
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(tcp), svc).await;
            });
        }
        #[allow(unreachable_code)]
        Ok::<(), WorkError>(())
    };
    tokio::try_join!(ws_task, http_task)?;
    Ok(())
}

// ---------------------------------------------------------------- client

type H1 = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn h1(addr: SocketAddr, nagle: bool) -> Result<H1> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(!nagle)?;
    let (send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await?;
    tokio::spawn(conn);
    Ok(send)
}

async fn request(c: &mut H1, method: &str, path: String, body: String) -> Result<String> {
    c.ready().await?;
    let req = Request::builder().method(method).uri(path).header("host", "aerolink.test").body(Full::new(Bytes::from(body)))?;
    let resp = c.send_request(req).await?;
    if !resp.status().is_success() {
        return Err(WorkError::Status(resp.status()));
    }
    Ok(String::from_utf8_lossy(&resp.into_body().collect().await?.to_bytes()).to_string())
}

/// Runs one scenario over one mechanism against `server` (an IP address).
pub async fn run(server: std::net::IpAddr, mechanism: Mechanism, p: &Params, nagle: bool) -> Result<RealtimeResult> {
    if p.size < 24 {
        return Err(WorkError::Param("messages need at least 24 bytes (sequence and timestamp)"));
    }
    let t0 = std::time::Instant::now();
    let (s2c, c2s, connections) = match mechanism {
        Mechanism::Ws => ws_client(SocketAddr::new(server, WS_PORT), p, nagle).await?,
        _ => http_client(SocketAddr::new(server, HTTP_PORT), mechanism, p, nagle).await?,
    };
    Ok(RealtimeResult {
        mechanism: mechanism.to_string(),
        scenario: p.scenario.to_string(),
        nagle,
        count: p.count,
        server_to_client_ms: s2c,
        client_to_server_ms: c2s,
        connections,
        total_ms: t0.elapsed().as_secs_f64() * 1e3,
    })
}

/// Latencies each way, and the connections opened.
type Measured = (Vec<f64>, Vec<f64>, u32);

async fn ws_client(addr: SocketAddr, p: &Params, nagle: bool) -> Result<Measured> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(!nagle)?;
    let url = format!("ws://{addr}/rt?{}", p.query());
    let (ws, _) = tokio_tungstenite::client_async(url, tcp).await?;
    let (mut tx, mut rx) = ws.split();
    let (mut s2c, mut c2s) = (Vec::new(), Vec::new());
    match p.scenario {
        Scenario::ServerUpdate => {
            while let Some(m) = rx.next().await {
                let Message::Text(t) = m? else { continue };
                if t.as_str() == "end" {
                    break;
                }
                if let Some((_, lat)) = parse(t.as_str()) {
                    s2c.push(lat);
                }
            }
        }
        scenario => {
            for seq in 0..p.count {
                tx.send(Message::text(message(seq, p.size))).await?;
                if scenario == Scenario::Chat {
                    // Wait for the answer before the next message.
                    loop {
                        let Some(m) = rx.next().await else { return Err(WorkError::Closed("the WebSocket")) };
                        if let Message::Text(t) = m? {
                            if let Some((_, lat)) = parse(t.as_str()) {
                                s2c.push(lat);
                                break;
                            }
                        }
                    }
                } else {
                    tokio::time::sleep(Duration::from_millis(p.interval_ms)).await;
                }
            }
            tx.send(Message::text("end")).await?;
            while let Some(m) = rx.next().await {
                if let Message::Text(t) = m? {
                    if let Some(r) = t.as_str().strip_prefix("report ") {
                        c2s = serde_json::from_str(r)?;
                        break;
                    }
                }
            }
        }
    }
    let _ = tx.send(Message::Close(None)).await;
    Ok((s2c, c2s, 1))
}

async fn http_client(addr: SocketAddr, mechanism: Mechanism, p: &Params, nagle: bool) -> Result<Measured> {
    let session = format!("{:x}", now_ns());
    let q = format!("{}&session={session}", p.query());
    let (msg_tx, mut msg_rx) = mpsc::unbounded_channel::<String>();
    let mut opened = 1; // the server → client channel's
                        // The server → client channel: an SSE stream or a long-polling loop.
    let down = if mechanism == Mechanism::Sse {
        let mut c = h1(addr, nagle).await?;
        let req = Request::builder().uri(format!("/sse?{q}")).header("host", "aerolink.test").body(Full::new(Bytes::new()))?;
        c.ready().await?;
        let resp = c.send_request(req).await?;
        let mut body = resp.into_body();
        tokio::spawn(async move {
            let mut buf = String::new();
            while let Some(Ok(f)) = body.frame().await {
                if let Ok(d) = f.into_data() {
                    buf.push_str(&String::from_utf8_lossy(&d));
                    while let Some(i) = buf.find("\n\n") {
                        let ev: String = buf.drain(..i + 2).collect();
                        if let Some(m) = ev.trim().strip_prefix("data: ") {
                            if msg_tx.send(m.to_string()).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        })
    } else {
        let mut c = h1(addr, nagle).await?;
        request(&mut c, "GET", format!("/start?{q}"), String::new()).await?;
        tokio::spawn(async move {
            loop {
                match request(&mut c, "GET", format!("/poll?session={session}"), String::new()).await {
                    Ok(body) => {
                        for m in body.lines() {
                            if msg_tx.send(m.to_string()).is_err() {
                                return;
                            }
                        }
                    }
                    Err(_) => return,
                }
            }
        })
    };
    let session = crate::page::query(&q).into_iter().find(|(k, _)| k == "session").map(|(_, v)| v).unwrap_or_default();
    let mut up = h1(addr, nagle).await?;
    opened += 1;
    let (mut s2c, mut c2s) = (Vec::new(), Vec::new());
    let recv = |s2c: &mut Vec<f64>, m: Option<String>| -> Result<()> {
        let m = m.ok_or(WorkError::Closed("the server → client channel"))?;
        if let Some((_, lat)) = parse(&m) {
            s2c.push(lat);
        }
        Ok(())
    };
    match p.scenario {
        Scenario::ServerUpdate => {
            for _ in 0..p.count {
                recv(&mut s2c, msg_rx.recv().await)?;
            }
        }
        scenario => {
            let chat = scenario == Scenario::Chat;
            for seq in 0..p.count {
                let path = format!("/msg?session={session}{}", if chat { "&chat=1" } else { "" });
                request(&mut up, "POST", path, message(seq, p.size)).await?;
                if chat {
                    recv(&mut s2c, msg_rx.recv().await)?;
                } else {
                    tokio::time::sleep(Duration::from_millis(p.interval_ms)).await;
                }
            }
            let r = request(&mut up, "GET", format!("/report?session={session}"), String::new()).await?;
            c2s = serde_json::from_str(&r)?;
        }
    }
    down.abort();
    Ok((s2c, c2s, opened))
}
