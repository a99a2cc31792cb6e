//! The prefetching proxy's air half: intercepts the cabin's plain HTTP,
//! answers from pushed objects (waiting for promised ones) and forwards
//! the rest across its tunnel to the ground half (see the module above).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use super::wire::{Frame, Head, Request};
use super::{add, Counters, Stats};
use crate::error::{PepError, Result};
use crate::relay;

#[derive(Clone, Debug)]
pub struct AirOptions {
    /// The interface facing the cabin.
    pub from: String,
    /// Local port of the transparent listener.
    pub port: u16,
    /// The ground half.
    pub ground: SocketAddr,
    /// How long to try opening the tunnel.
    pub open_timeout: Duration,
}

/// How long a pushed object waits to be asked for, and a request for a
/// promised one waits for it.
const KEEP: Duration = Duration::from_secs(60);
/// How long a forwarded request waits for its answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(120);

/// A pushed object.
struct Object {
    head: Head,
    body: Bytes,
}

enum Slot {
    /// Promised: the cabin's requests for it wait here.
    Promised { since: Instant, waiters: Vec<oneshot::Sender<Arc<Object>>> },
    /// Pushed, not asked for yet.
    Ready { since: Instant, object: Arc<Object> },
}

/// Forwarded requests awaiting their answers, by id.
type Waiting = Arc<Mutex<HashMap<u32, oneshot::Sender<(Head, Bytes)>>>>;

/// The tunnel to the ground half while it works.
#[derive(Clone)]
struct Link {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    waiting: Waiting,
    alive: Arc<AtomicBool>,
}

struct Air {
    opts: AirOptions,
    counters: Arc<Counters>,
    link: tokio::sync::Mutex<Option<Link>>,
    pushed: Arc<Mutex<HashMap<String, Slot>>>,
    next_id: AtomicU32,
}

/// What the cabin's request for an object finds.
enum Found {
    Ready(Arc<Object>),
    Wait(oneshot::Receiver<Arc<Object>>),
    Forward,
}

/// Opens the tunnel, installs the interception of the cabin's port 80,
/// serves until `stop` resolves, removes it.
pub async fn run(opts: AirOptions, stop: impl std::future::Future<Output = ()>, ready: impl FnOnce()) -> Result<Stats> {
    let counters = Arc::new(Counters::default());
    let air = Arc::new(Air { opts: opts.clone(), counters: counters.clone(), link: tokio::sync::Mutex::new(None), pushed: Arc::default(), next_id: AtomicU32::new(1) });
    air.link(opts.open_timeout).await?;
    let listeners = relay::Listeners::bind(opts.port)?;
    let guard = crate::steering::Interception::install_port(&opts.from, opts.port, super::HTTP_PORT)?;
    ready();
    let handle = move |c: TcpStream| {
        let air = air.clone();
        async move {
            // With TPROXY the accepted socket's local address is where the
            // cabin was going.
            let Ok(dest) = c.local_addr() else { return };
            let svc = hyper::service::service_fn(move |req| air.clone().handle(dest, req));
            let _ = hyper::server::conn::http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(c), svc).await;
        }
    };
    tokio::select! {
        _ = listeners.serve(handle) => {}
        _ = stop => {}
    }
    drop(guard);
    Ok(counters.snapshot())
}

impl Air {
    /// The tunnel, opened (again) if it is not up.
    async fn link(&self, within: Duration) -> Result<Link> {
        let mut l = self.link.lock().await;
        if let Some(link) = l.as_ref().filter(|k| k.alive.load(Ordering::SeqCst)) {
            return Ok(link.clone());
        }
        let deadline = Instant::now() + within;
        let conn = loop {
            match relay::connect(self.opts.ground, aerolink_work::sock::TcpCc::Cubic, Duration::from_secs(10)).await {
                Ok(c) => break c,
                Err(e) if Instant::now() >= deadline => return Err(PepError::Precondition(format!("the ground half at {} did not answer: {e}", self.opts.ground))),
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        };
        add(&self.counters.tunnels, 1);
        let (mut rd, wr) = conn.into_split();
        let (tx, rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let link = Link { tx, waiting: Arc::default(), alive: Arc::new(AtomicBool::new(true)) };
        let alive = link.alive.clone();
        tokio::spawn(async move {
            let _ = super::wire::write_queued(wr, rx).await;
            alive.store(false, Ordering::SeqCst);
        });
        let (reader, pushed, counters) = (link.clone(), self.pushed.clone(), self.counters.clone());
        tokio::spawn(async move {
            loop {
                match Frame::read(&mut rd).await {
                    Ok(Some(f)) => take(f, &reader, &pushed, &counters),
                    Ok(None) => break,
                    Err(e) => {
                        eprintln!("prefetch air: the tunnel broke: {e}");
                        break;
                    }
                }
            }
            // Gone: forwarded requests fail (their senders drop), requests
            // waiting for promises are forwarded again.
            reader.alive.store(false, Ordering::SeqCst);
            reader.waiting.lock().expect("waiting").clear();
            pushed.lock().expect("pushed").retain(|_, s| matches!(s, Slot::Ready { .. }));
        });
        *l = Some(link.clone());
        Ok(link)
    }

    async fn handle(self: Arc<Self>, dest: SocketAddr, req: hyper::Request<Incoming>) -> std::result::Result<hyper::Response<Full<Bytes>>, Infallible> {
        add(&self.counters.requests, 1);
        let host = req.headers().get(http::header::HOST).and_then(|h| h.to_str().ok()).map_or_else(|| dest.ip().to_string(), str::to_string);
        let target = req.uri().path_and_query().map_or("/", |p| p.as_str()).to_string();
        if req.method() == http::Method::GET {
            let found = find(&self.pushed, &super::key(&host, &target), &self.counters);
            let waited = matches!(found, Found::Wait(_));
            let object = match found {
                Found::Ready(o) => Some(o),
                Found::Wait(rx) => tokio::time::timeout(KEEP, rx).await.ok().and_then(|r| r.ok()),
                Found::Forward => None,
            };
            if let Some(o) = object {
                add(if waited { &self.counters.pushed_awaited } else { &self.counters.pushed_ready }, 1);
                return Ok(respond(&o.head, o.body.clone(), "pushed"));
            }
        }
        add(&self.counters.forwarded, 1);
        let (parts, body) = req.into_parts();
        let body = body.collect().await.map(|b| b.to_bytes().to_vec()).unwrap_or_default();
        let wire = Request { dest, method: parts.method.to_string(), target, headers: super::end_to_end(&parts.headers) };
        match self.forward(wire, body).await {
            Ok((head, body)) => Ok(respond(&head, body, "forwarded")),
            Err(e) => {
                add(&self.counters.failed, 1);
                let head = Head { status: 502, headers: vec![("content-type".into(), "text/plain".into())] };
                Ok(respond(&head, Bytes::from(format!("aerolink prefetch: {e}\n")), "failed"))
            }
        }
    }

    /// A request across the tunnel, and its answer.
    async fn forward(&self, req: Request, body: Vec<u8>) -> std::result::Result<(Head, Bytes), String> {
        let link = self.link(Duration::from_secs(10)).await.map_err(|e| e.to_string())?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        link.waiting.lock().expect("waiting").insert(id, tx);
        if link.tx.send(Frame::Request(id, req, body).encode()).is_err() {
            return Err("the tunnel to the ground half is down".into());
        }
        match tokio::time::timeout(ANSWER_WITHIN, rx).await {
            Ok(Ok(x)) => Ok(x),
            Ok(Err(_)) => Err("the tunnel to the ground half broke".into()),
            Err(_) => {
                link.waiting.lock().expect("waiting").remove(&id);
                Err(format!("no answer across the tunnel in {} s", ANSWER_WITHIN.as_secs()))
            }
        }
    }
}

/// What there is for `key`: a push, a promise to wait on, or nothing
/// (a push older than [`KEEP`] is stale: it goes, and the request
/// crosses the tunnel).
fn find(pushed: &Mutex<HashMap<String, Slot>>, key: &str, counters: &Counters) -> Found {
    let mut p = pushed.lock().expect("pushed");
    match p.remove(key) {
        Some(Slot::Ready { since, .. }) if since.elapsed() >= KEEP => {
            add(&counters.unclaimed, 1);
            Found::Forward
        }
        Some(Slot::Ready { object, .. }) => Found::Ready(object),
        Some(Slot::Promised { since, mut waiters }) => {
            let (tx, rx) = oneshot::channel();
            waiters.push(tx);
            p.insert(key.to_string(), Slot::Promised { since, waiters });
            Found::Wait(rx)
        }
        None => Found::Forward,
    }
}

/// A frame from the ground half.
fn take(f: Frame, link: &Link, pushed: &Mutex<HashMap<String, Slot>>, counters: &Counters) {
    match f {
        Frame::Response(id, head, body) => {
            add(&counters.bytes_down, body.len() as u64);
            if let Some(tx) = link.waiting.lock().expect("waiting").remove(&id) {
                let _ = tx.send((head, Bytes::from(body)));
            }
        }
        Frame::Promise(key) => {
            let mut p = pushed.lock().expect("pushed");
            add(&counters.promised, 1);
            p.entry(key).or_insert(Slot::Promised { since: Instant::now(), waiters: Vec::new() });
        }
        Frame::Push(head, body) => {
            add(&counters.bytes_down, body.len() as u64);
            add(&counters.pushed, 1);
            let object = Arc::new(Object { head: head.head, body: Bytes::from(body) });
            let mut p = pushed.lock().expect("pushed");
            match p.remove(&head.key) {
                Some(Slot::Promised { waiters, .. }) if !waiters.is_empty() => {
                    for w in waiters {
                        let _ = w.send(object.clone());
                    }
                }
                _ => {
                    p.insert(head.key, Slot::Ready { since: Instant::now(), object });
                }
            }
            // What nobody asked for within KEEP goes.
            let before = p.len();
            p.retain(|_, s| match s {
                Slot::Ready { since, .. } | Slot::Promised { since, .. } => since.elapsed() < KEEP,
            });
            add(&counters.unclaimed, (before - p.len()) as u64);
        }
        Frame::Cancel(key) => {
            add(&counters.cancelled, 1);
            // Its waiters' senders drop: they forward their requests.
            pushed.lock().expect("pushed").remove(&key);
        }
        Frame::Request(..) => eprintln!("prefetch air: the ground half sent a request; ignored"),
    }
}

/// The answer to the cabin: the origin's status and headers, `Via` added,
/// and `X-Prefetch` saying how it was served (pushed, forwarded, failed).
fn respond(head: &Head, body: Bytes, how: &str) -> hyper::Response<Full<Bytes>> {
    let mut b = hyper::Response::builder().status(head.status);
    for (k, v) in &head.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    b = b.header(http::header::VIA, "1.1 aerolink-prefetch").header("x-prefetch", how);
    b.body(Full::new(body)).unwrap_or_else(|e| {
        let mut r = hyper::Response::new(Full::new(Bytes::from(format!("aerolink prefetch: the origin's answer cannot be passed on: {e}\n"))));
        *r.status_mut() = http::StatusCode::BAD_GATEWAY;
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefetch::wire::Pushed;

    fn push(key: &str, body: &str) -> Frame {
        Frame::Push(Pushed { key: key.into(), head: Head { status: 200, headers: vec![] } }, body.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn promised_objects_are_waited_for_pushed_ones_served_once_withdrawn_ones_forwarded() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let link = Link { tx, waiting: Arc::default(), alive: Arc::new(AtomicBool::new(true)) };
        let (pushed, counters) = (Mutex::new(HashMap::new()), Counters::default());
        // Promised, asked for, then pushed: the request gets the push.
        take(Frame::Promise("h/a".into()), &link, &pushed, &counters);
        let Found::Wait(rx) = find(&pushed, "h/a", &counters) else { panic!("a promised object is waited for") };
        take(push("h/a", "A"), &link, &pushed, &counters);
        assert_eq!(&rx.await.unwrap().body[..], b"A");
        assert!(matches!(find(&pushed, "h/a", &counters), Found::Forward), "a push answers once");
        // Pushed before it is asked for: ready, then gone.
        take(push("h/b", "B"), &link, &pushed, &counters);
        assert!(matches!(find(&pushed, "h/b", &counters), Found::Ready(o) if &o.body[..] == b"B"));
        assert!(matches!(find(&pushed, "h/b", &counters), Found::Forward));
        // Withdrawn: the waiting request is told to cross the tunnel.
        take(Frame::Promise("h/c".into()), &link, &pushed, &counters);
        let Found::Wait(rx) = find(&pushed, "h/c", &counters) else { panic!("waited for") };
        take(Frame::Cancel("h/c".into()), &link, &pushed, &counters);
        assert!(rx.await.is_err());
        assert!(matches!(find(&pushed, "h/c", &counters), Found::Forward));
        let s = counters.snapshot();
        assert_eq!((s.promised, s.pushed, s.cancelled), (2, 2, 1));
    }
}
