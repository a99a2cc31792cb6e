//! The prefetching proxy's ground half: accepts air halves' tunnels,
//! fetches what they forward from the origin, and pushes the objects a
//! page or style sheet references ahead of the browser's requests (see
//! the module above).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, Semaphore};

use aerolink_work::sock::TcpCc;

use super::wire::{Frame, Head, Headers, Pushed, Request};
use super::{add, Counters, Stats};
use crate::error::{PepError, Result};
use crate::relay;

#[derive(Clone, Debug)]
pub struct GroundOptions {
    pub listen: SocketAddr,
    /// Congestion control of the tunnel (it sends the pushes down) and of
    /// the fetches from origins.
    pub cc: TcpCc,
    /// Initial congestion window (segments) on every route of the
    /// namespace: the tunnel's pushes start with it.
    pub initcwnd: Option<u32>,
}

/// Origin fetches under way at once per tunnel (a page's objects over the
/// short terrestrial hop).
const FETCHES: usize = 16;
/// How deep references are followed: page → style sheet → its imports …
const DEPTH: u32 = 4;
/// How long one fetch from an origin may take, whole.
const FETCH_WITHIN: Duration = Duration::from_secs(60);
/// Request headers a prefetch copies from the page's request.
const CARRIED: [&str; 4] = ["user-agent", "accept-language", "accept-encoding", "cookie"];

/// Listens for air halves until `stop` resolves.
pub async fn run(opts: GroundOptions, stop: impl std::future::Future<Output = ()>, ready: impl FnOnce()) -> Result<Stats> {
    let counters = Arc::new(Counters::default());
    let sock = if opts.listen.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    aerolink_work::sock::set_congestion(&sock, opts.cc).map_err(|source| PepError::Sys { what: format!("congestion control {}", opts.cc), source })?;
    sock.set_reuseaddr(true)?;
    sock.bind(opts.listen).map_err(|source| PepError::Sys { what: format!("listening on {}", opts.listen), source })?;
    let listener: TcpListener = sock.listen(64)?;
    // Restored when this returns.
    let _routes = opts.initcwnd.map(|n| crate::steering::InitialWindow::set("", n)).transpose()?;
    ready();
    let serve = async {
        loop {
            match listener.accept().await {
                Ok((c, _)) => {
                    let _ = c.set_nodelay(true);
                    add(&counters.tunnels, 1);
                    tokio::spawn(tunnel(c, opts.cc, counters.clone()));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    };
    tokio::select! {
        _ = serve => {}
        _ = stop => {}
    }
    Ok(counters.snapshot())
}

/// One air half's tunnel: what it forwards, and the pushes it gets.
struct Tunnel {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    /// Where each host name was going, as the air half's requests said.
    hosts: Mutex<HashMap<String, SocketAddr>>,
    /// Objects promised and not yet pushed or withdrawn.
    outstanding: Mutex<HashSet<String>>,
    fetches: Semaphore,
    cc: TcpCc,
    counters: Arc<Counters>,
}

async fn tunnel(conn: TcpStream, cc: TcpCc, counters: Arc<Counters>) {
    let (mut rd, wr) = conn.into_split();
    let (tx, rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(super::wire::write_queued(wr, rx));
    let t = Arc::new(Tunnel { tx, hosts: Mutex::default(), outstanding: Mutex::default(), fetches: Semaphore::new(FETCHES), cc, counters });
    loop {
        match Frame::read(&mut rd).await {
            Ok(Some(Frame::Request(id, req, body))) => {
                tokio::spawn(t.clone().answer(id, req, body));
            }
            Ok(Some(other)) => {
                eprintln!("prefetch ground: the air half sent a frame only the ground sends ({other:?}); closing its tunnel");
                break;
            }
            Ok(None) => break,
            Err(e) => {
                eprintln!("prefetch ground: the tunnel broke: {e}");
                break;
            }
        }
    }
    writer.abort();
}

fn header<'a>(h: &'a Headers, name: &str) -> Option<&'a str> {
    h.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

impl Tunnel {
    /// Queues frames for the air half in one piece (see
    /// [`super::wire::write_queued`]).
    fn send(&self, frames: Vec<Frame>) {
        let mut buf = Vec::new();
        for f in frames {
            match &f {
                Frame::Response(_, _, b) | Frame::Push(_, b) => add(&self.counters.bytes_down, b.len() as u64),
                Frame::Promise(_) => add(&self.counters.promised, 1),
                _ => {}
            }
            buf.extend(f.encode());
        }
        let _ = self.tx.send(buf);
    }

    /// A forwarded request: fetched, and when it is a page, its objects
    /// promised before it goes up and pushed after.
    async fn answer(self: Arc<Self>, id: u32, req: Request, body: Vec<u8>) {
        add(&self.counters.requests, 1);
        let host = header(&req.headers, "host").map_or_else(|| req.dest.ip().to_string(), str::to_string);
        let host = super::key(&host, "/").trim_end_matches('/').to_string();
        self.hosts.lock().expect("hosts").insert(host.clone(), req.dest);
        let got = {
            let _permit = self.fetches.acquire().await;
            fetch(req.dest, &req.method, &req.target, req.headers.clone(), body, self.cc).await
        };
        let (head, body) = match got {
            Ok(x) => x,
            Err(e) => {
                add(&self.counters.failed, 1);
                let text = format!("aerolink prefetch: {e}\n");
                self.send(vec![Frame::Response(id, Head { status: 502, headers: vec![("content-type".into(), "text/plain".into())] }, text.into_bytes())]);
                return;
            }
        };
        let carried: Headers = req.headers.iter().filter(|(k, _)| CARRIED.iter().any(|c| k.eq_ignore_ascii_case(c))).cloned().collect();
        let next = if req.method == "GET" { self.promise(&host, &req.target, req.dest, &head, &body) } else { Vec::new() };
        let mut frames: Vec<Frame> = next.iter().map(|o| Frame::Promise(o.0.clone())).collect();
        frames.push(Frame::Response(id, head, body));
        self.send(frames);
        self.prefetch_all(next, carried, 1);
    }

    /// The objects `body` (from `host` + `target`) references that are not
    /// promised already, now counted as promised: `(key, host, target,
    /// address)`; the caller sends their promises ahead of `body`.
    fn promise(&self, host: &str, target: &str, dest: SocketAddr, head: &Head, body: &[u8]) -> Vec<(String, String, String, SocketAddr)> {
        if head.status != 200 || !super::names_objects(header(&head.headers, "content-type")) {
            return Vec::new();
        }
        let mut out = Vec::new();
        let hosts = self.hosts.lock().expect("hosts").clone();
        let mut outstanding = self.outstanding.lock().expect("outstanding");
        for r in aerolink_work::page::references(body) {
            let Some((h, t)) = super::resolve(host, target, &r) else { continue };
            let k = super::key(&h, &t);
            if k == super::key(host, target) || !outstanding.insert(k.clone()) {
                continue;
            }
            let addr = hosts.get(&h).copied().unwrap_or(dest);
            out.push((k, h, t, addr));
        }
        out
    }

    fn prefetch_all(self: &Arc<Self>, objects: Vec<(String, String, String, SocketAddr)>, carried: Headers, depth: u32) {
        for o in objects {
            tokio::spawn(self.clone().prefetch(o, carried.clone(), depth));
        }
    }

    /// Fetches one promised object and pushes it (or withdraws the
    /// promise); a style sheet's own references are promised before it
    /// goes up.
    async fn prefetch(self: Arc<Self>, (key, host, target, dest): (String, String, String, SocketAddr), carried: Headers, depth: u32) {
        let mut headers = vec![("host".to_string(), host.clone()), ("accept".to_string(), "*/*".to_string())];
        headers.extend(carried.iter().cloned());
        let got = {
            let _permit = self.fetches.acquire().await;
            fetch(dest, "GET", &target, headers, Vec::new(), self.cc).await
        };
        match got {
            Ok((head, body)) => {
                let next = if depth < DEPTH { self.promise(&host, &target, dest, &head, &body) } else { Vec::new() };
                add(&self.counters.pushed, 1);
                let mut frames: Vec<Frame> = next.iter().map(|o| Frame::Promise(o.0.clone())).collect();
                frames.push(Frame::Push(Pushed { key: key.clone(), head }, body));
                self.send(frames);
                self.outstanding.lock().expect("outstanding").remove(&key);
                self.prefetch_all(next, carried, depth + 1);
            }
            Err(e) => {
                add(&self.counters.cancelled, 1);
                eprintln!("prefetch ground: {key}: {e}; the cabin's request for it goes to the origin");
                self.send(vec![Frame::Cancel(key.clone())]);
                self.outstanding.lock().expect("outstanding").remove(&key);
            }
        }
    }
}

/// One request to the origin at `dest` over a connection of its own, the
/// response read whole.
async fn fetch(dest: SocketAddr, method: &str, target: &str, headers: Headers, body: Vec<u8>, cc: TcpCc) -> std::result::Result<(Head, Vec<u8>), String> {
    let work = async {
        let tcp = relay::connect(dest, cc, Duration::from_secs(10)).await.map_err(|e| e.to_string())?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.map_err(|e| format!("{dest}: {e}"))?;
        tokio::spawn(conn);
        let mut b = http::Request::builder().method(method).uri(target);
        for (k, v) in &headers {
            b = b.header(k.as_str(), v.as_str());
        }
        let req = b.body(Full::new(Bytes::from(body))).map_err(|e| format!("the request {method} {target}: {e}"))?;
        let resp = sender.send_request(req).await.map_err(|e| format!("{dest}: {e}"))?;
        let (parts, body) = resp.into_parts();
        let bytes = body.collect().await.map_err(|e| format!("{dest}: {e}"))?.to_bytes();
        Ok((Head { status: parts.status.as_u16(), headers: super::end_to_end(&parts.headers) }, bytes.to_vec()))
    };
    tokio::time::timeout(FETCH_WITHIN, work).await.map_err(|_| format!("{dest}: no whole answer in {} s", FETCH_WITHIN.as_secs()))?
}
