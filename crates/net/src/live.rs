//! The live view (`aerolink run --live`): a page on loopback that draws a
//! link while it runs, fed by server-sent events.
//!
//! The pumps' events reach the lab's sink thread as they do for `--log`;
//! the sink hands each batch to a [`Feed`], which counts per hop and
//! direction what arrived, what left (and how long it stayed), what was
//! dropped and why, what is still inside the link, and what the link's
//! mechanisms did (DAMA allocations, channel drops and redials, handover
//! phases, ARQ retransmissions). Twice a second the [`Live`] server turns
//! the counts of the last interval into a [`Snapshot`] and pushes it as
//! JSON to every open `/events` stream; `/` is the page that draws them,
//! `/snapshot` the latest one for scripts. When the run ends the streams
//! get a last `end` event and the server stops.
//!
//! The server binds loopback addresses only: the view never leaves the
//! host.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use aerolink_link::Note;
use serde::Serialize;

use crate::log::{Event, EventKind};

/// How often a snapshot is pushed.
pub const INTERVAL: Duration = Duration::from_millis(500);
/// Link events kept for the page (the newest).
const EVENTS_KEPT: usize = 50;

/// One hop and direction over the last interval.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct DirSnapshot {
    /// The run it belongs to (`experiment run --live`: each run under way
    /// has its own link); empty for a single run.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub run: String,
    pub hop: u16,
    pub dir: &'static str,
    /// Bits per second entering the link and leaving it.
    pub in_bps: f64,
    pub out_bps: f64,
    /// Mean time the packets that left spent queued, and in the link in
    /// all (queue, serialisation, propagation), ms; `None` if none left.
    pub queue_ms: Option<f64>,
    pub delay_ms: Option<f64>,
    /// Packets and bytes inside the link now (arrived, neither left nor
    /// dropped).
    pub inside_packets: u64,
    pub inside_bytes: u64,
    /// Drops in the interval by cause: queue, loss, outage, arq.
    pub drops: BTreeMap<&'static str, u64>,
    /// Link-layer retransmissions in the interval (L-DACS ARQ).
    pub retransmissions: u64,
    /// DVB-RCS2 capacity allocated in the interval, bit/s (`dama` only).
    pub allocated_bps: Option<f64>,
    /// Bonded channels down now (`bonded` only).
    pub channels_down: Option<u32>,
}

/// A link event as the page lists it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LinkEvent {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub run: String,
    /// Seconds since the link started.
    pub t_s: f64,
    pub hop: u16,
    pub dir: &'static str,
    pub what: String,
}

/// What `/events` pushes and `/snapshot` returns.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Snapshot {
    /// Counts from 1; 0 before the first interval ends.
    pub seq: u64,
    /// Seconds since the view started.
    pub t_s: f64,
    pub title: String,
    pub directions: Vec<DirSnapshot>,
    /// The newest link events, oldest first.
    pub events: Vec<LinkEvent>,
    /// The run has ended: no snapshot follows.
    pub ended: bool,
}

/// Running counts of one hop and direction.
#[derive(Default)]
struct Acc {
    bytes_in: u64,
    bytes_out: u64,
    departed: u64,
    queue_ns: u64,
    delay_ns: u64,
    drops: BTreeMap<&'static str, u64>,
    retransmissions: u64,
    allocated_bytes: Option<u64>,
    /// Since the start: arrivals less departures and drops.
    inside_packets: i64,
    inside_bytes: i64,
    channels_down: Option<BTreeMap<u16, bool>>,
}

/// Per hop and direction its counts, and the newest link events.
type Counts = (BTreeMap<(u16, &'static str), Acc>, VecDeque<LinkEvent>);

/// Where the sink puts the pumps' events for the live view.
#[derive(Default)]
pub struct Feed {
    acc: Mutex<Counts>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("live::Feed")
    }
}

impl Feed {
    /// Counts one batch of a pump's events.
    pub fn take(&self, events: &[Event]) {
        let mut g = self.acc.lock().unwrap_or_else(|p| p.into_inner());
        let (accs, log) = &mut *g;
        for e in events {
            let dir = e.dir.as_str();
            let a = accs.entry((e.hop, dir)).or_default();
            match e.kind {
                EventKind::Arrive => {
                    a.bytes_in += e.bytes as u64;
                    a.inside_packets += 1;
                    a.inside_bytes += e.bytes as i64;
                }
                EventKind::Depart { queue_ns, delay_ns } => {
                    a.bytes_out += e.bytes as u64;
                    a.departed += 1;
                    a.queue_ns += queue_ns;
                    a.delay_ns += delay_ns;
                    a.inside_packets -= 1;
                    a.inside_bytes -= e.bytes as i64;
                }
                EventKind::Drop(reason) => {
                    *a.drops.entry(reason.as_str()).or_default() += 1;
                    a.inside_packets -= 1;
                    a.inside_bytes -= e.bytes as i64;
                }
                EventKind::Note(n) => {
                    let what = match n {
                        Note::Superframe { allocated_bytes, .. } => {
                            *a.allocated_bytes.get_or_insert(0) += allocated_bytes;
                            None
                        }
                        Note::Retransmit { .. } => {
                            a.retransmissions += 1;
                            None
                        }
                        Note::Channel { channel, up } => {
                            a.channels_down.get_or_insert_with(BTreeMap::new).insert(channel, !up);
                            Some(format!("channel {channel} {}", if up { "back up (redialled)" } else { "dropped its call" }))
                        }
                        Note::Handover { index, phase } => Some(format!("handover {index}: {}", phase.as_str())),
                    };
                    if let Some(what) = what {
                        if log.len() == EVENTS_KEPT {
                            log.pop_front();
                        }
                        log.push_back(LinkEvent { run: String::new(), t_s: e.t.0 as f64 / 1e9, hop: e.hop, dir, what });
                    }
                }
            }
        }
    }

    /// The interval's figures over `secs`, and the counts reset for the next.
    fn snapshot(&self, secs: f64) -> (Vec<DirSnapshot>, Vec<LinkEvent>) {
        let mut g = self.acc.lock().unwrap_or_else(|p| p.into_inner());
        let (accs, log) = &mut *g;
        let secs = secs.max(1e-3);
        let dirs = accs
            .iter_mut()
            .map(|(&(hop, dir), a)| {
                let mean = |ns: u64| (a.departed > 0).then(|| ns as f64 / a.departed as f64 / 1e6);
                let s = DirSnapshot {
                    run: String::new(),
                    hop,
                    dir,
                    in_bps: a.bytes_in as f64 * 8.0 / secs,
                    out_bps: a.bytes_out as f64 * 8.0 / secs,
                    queue_ms: mean(a.queue_ns),
                    delay_ms: mean(a.delay_ns),
                    inside_packets: a.inside_packets.max(0) as u64,
                    inside_bytes: a.inside_bytes.max(0) as u64,
                    drops: std::mem::take(&mut a.drops),
                    retransmissions: a.retransmissions,
                    allocated_bps: a.allocated_bytes.map(|b| b as f64 * 8.0 / secs),
                    channels_down: a.channels_down.as_ref().map(|c| c.values().filter(|d| **d).count() as u32),
                };
                *a = Acc { inside_packets: a.inside_packets, inside_bytes: a.inside_bytes, channels_down: a.channels_down.take(), allocated_bytes: a.allocated_bytes.map(|_| 0), ..Acc::default() };
                s
            })
            .collect();
        (dirs, log.iter().cloned().collect())
    }
}

/// What the server threads share.
struct Shared {
    /// Each link's feed by run name (`""`: the one of `aerolink run`).
    feeds: Mutex<BTreeMap<String, Arc<Feed>>>,
    latest: Mutex<Snapshot>,
    fresh: Condvar,
    stop: AtomicBool,
}

/// The live view's server: bound at [`Live::start`], stopped (streams
/// told the run ended) at [`Live::finish`] or when dropped.
pub struct Live {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// Why the view could not start.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("--live {0}: the live view listens on loopback only (127.0.0.1, ::1)")]
    NotLoopback(SocketAddr),
    #[error("--live {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
}

impl Live {
    /// Binds `addr` (loopback only; port 0 picks one) and starts serving;
    /// `title` heads the page.
    pub fn start(addr: SocketAddr, title: &str) -> Result<Live, LiveError> {
        if !addr.ip().is_loopback() {
            return Err(LiveError::NotLoopback(addr));
        }
        let listener = TcpListener::bind(addr).map_err(|e| LiveError::Bind(addr, e))?;
        let addr = listener.local_addr().map_err(|e| LiveError::Bind(addr, e))?;
        let shared = Arc::new(Shared {
            feeds: Mutex::new(BTreeMap::new()),
            latest: Mutex::new(Snapshot { title: title.to_string(), ..Snapshot::default() }),
            fresh: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let ticker = {
            let shared = shared.clone();
            std::thread::Builder::new().name("live-tick".into()).spawn(move || tick(&shared)).map_err(|e| LiveError::Bind(addr, e))?
        };
        let acceptor = {
            let shared = shared.clone();
            std::thread::Builder::new().name("live-http".into()).spawn(move || accept(listener, &shared)).map_err(|e| LiveError::Bind(addr, e))?
        };
        Ok(Live { addr, shared, threads: vec![ticker, acceptor] })
    }

    /// The page's address.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// What the lab's sink feeds (one run).
    pub fn feed(&self) -> Arc<Feed> {
        self.feed_for("")
    }

    /// The feed of run `name`, one of several under way (`experiment run
    /// --live`); its figures carry the name until [`Live::retire`].
    pub fn feed_for(&self, name: &str) -> Arc<Feed> {
        self.shared.feeds.lock().unwrap_or_else(|p| p.into_inner()).entry(name.to_string()).or_default().clone()
    }

    /// Run `name` has ended: the page stops showing it.
    pub fn retire(&self, name: &str) {
        self.shared.feeds.lock().unwrap_or_else(|p| p.into_inner()).remove(name);
    }

    /// Sends a last snapshot marked ended and stops the server.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if self.shared.stop.swap(true, Ordering::SeqCst) {
            return;
        }
        self.shared.fresh.notify_all();
        // Wake the acceptor, blocked in accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Every INTERVAL, the next snapshot; at the stop, a last one marked ended.
fn tick(shared: &Shared) {
    let t0 = Instant::now();
    let mut last = t0;
    loop {
        let stopping = {
            let g = shared.latest.lock().unwrap_or_else(|p| p.into_inner());
            let (g, _) = shared.fresh.wait_timeout_while(g, INTERVAL.saturating_sub(last.elapsed()), |_| !shared.stop.load(Ordering::SeqCst)).unwrap_or_else(|p| p.into_inner());
            drop(g);
            shared.stop.load(Ordering::SeqCst)
        };
        let now = Instant::now();
        let secs = (now - last).as_secs_f64();
        let feeds: Vec<(String, Arc<Feed>)> = shared.feeds.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(k, f)| (k.clone(), f.clone())).collect();
        let (mut directions, mut events) = (Vec::new(), Vec::new());
        for (run, f) in feeds {
            let (d, e) = f.snapshot(secs);
            directions.extend(d.into_iter().map(|d| DirSnapshot { run: run.clone(), ..d }));
            events.extend(e.into_iter().map(|e| LinkEvent { run: run.clone(), ..e }));
        }
        // The newest across runs, oldest first.
        events.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        let drop_n = events.len().saturating_sub(EVENTS_KEPT);
        events.drain(..drop_n);
        last = now;
        {
            let mut g = shared.latest.lock().unwrap_or_else(|p| p.into_inner());
            g.seq += 1;
            g.t_s = (now - t0).as_secs_f64();
            g.directions = directions;
            g.events = events;
            g.ended = stopping;
        }
        shared.fresh.notify_all();
        if stopping {
            return;
        }
    }
}

fn accept(listener: TcpListener, shared: &Arc<Shared>) {
    let mut conns: Vec<JoinHandle<()>> = Vec::new();
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let shared = shared.clone();
        if let Ok(h) = std::thread::Builder::new().name("live-conn".into()).spawn(move || {
            let _ = serve(stream, &shared);
        }) {
            conns.push(h);
        }
        conns.retain(|h| !h.is_finished());
    }
    for h in conns {
        let _ = h.join();
    }
}

/// One HTTP/1.1 request: the page, the snapshot, or the event stream.
fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    // The headers: read and ignored.
    let mut h = String::new();
    while reader.read_line(&mut h)? > 2 {
        h.clear();
    }
    let mut w = stream;
    let path = line.split_whitespace().nth(1).unwrap_or("/");
    if !line.starts_with("GET ") {
        return respond(&mut w, "405 Method Not Allowed", "text/plain", b"GET only\n");
    }
    match path {
        "/" | "/index.html" => respond(&mut w, "200 OK", "text/html; charset=utf-8", PAGE.as_bytes()),
        "/snapshot" => {
            let s = shared.latest.lock().unwrap_or_else(|p| p.into_inner()).clone();
            respond(&mut w, "200 OK", "application/json", serde_json::to_string(&s).unwrap_or_default().as_bytes())
        }
        "/events" => stream_events(&mut w, shared),
        _ => respond(&mut w, "404 Not Found", "text/plain", b"not found: try / or /events or /snapshot\n"),
    }
}

fn respond(w: &mut TcpStream, status: &str, kind: &str, body: &[u8]) -> std::io::Result<()> {
    write!(w, "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n", body.len())?;
    w.write_all(body)?;
    w.flush()
}

/// Server-sent events: each snapshot as `data:`, the last as `event: end`.
fn stream_events(w: &mut TcpStream, shared: &Shared) -> std::io::Result<()> {
    write!(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")?;
    w.flush()?;
    let mut seen = 0;
    loop {
        let s = {
            let g = shared.latest.lock().unwrap_or_else(|p| p.into_inner());
            let g = shared.fresh.wait_while(g, |s| s.seq == seen && !s.ended).unwrap_or_else(|p| p.into_inner());
            g.clone()
        };
        seen = s.seq;
        let json = serde_json::to_string(&s).unwrap_or_default();
        if s.ended {
            write!(w, "event: end\ndata: {json}\n\n")?;
            return w.flush();
        }
        write!(w, "data: {json}\n\n")?;
        w.flush()?;
    }
}

/// The page: draws each direction's rates, delay, what is inside the link
/// and its drops against time, and lists the link's events.
const PAGE: &str = include_str!("live.html");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::Dir;
    use aerolink_link::{DropReason, Instant as LinkInstant};

    fn ev(t_ms: u64, dir: Dir, bytes: u32, kind: EventKind) -> Event {
        Event { t: LinkInstant(t_ms * 1_000_000), hop: 0, dir, id: 0, bytes, kind }
    }

    #[test]
    fn an_interval_counts_rates_delays_drops_and_what_is_inside() {
        let f = Feed::default();
        let mut evs = Vec::new();
        for _ in 0..10 {
            evs.push(ev(1, Dir::Up, 1000, EventKind::Arrive));
        }
        for _ in 0..6 {
            evs.push(ev(50, Dir::Up, 1000, EventKind::Depart { queue_ns: 2_000_000, delay_ns: 40_000_000 }));
        }
        evs.push(ev(60, Dir::Up, 1000, EventKind::Drop(DropReason::Loss)));
        evs.push(ev(70, Dir::Up, 0, EventKind::Note(Note::Channel { channel: 1, up: false })));
        f.take(&evs);
        let (dirs, events) = f.snapshot(0.5);
        assert_eq!(dirs.len(), 1);
        let d = &dirs[0];
        assert_eq!((d.in_bps, d.out_bps), (10.0 * 8000.0 / 0.5, 6.0 * 8000.0 / 0.5));
        assert_eq!((d.queue_ms, d.delay_ms), (Some(2.0), Some(40.0)));
        assert_eq!((d.inside_packets, d.inside_bytes), (3, 3000));
        assert_eq!(d.drops.get("loss"), Some(&1));
        assert_eq!(d.channels_down, Some(1));
        assert_eq!(events.len(), 1);
        assert!(events[0].what.contains("channel 1 dropped"), "{:?}", events[0]);
        // The next interval starts from nothing but what is still inside.
        let (dirs, _) = f.snapshot(0.5);
        let d = &dirs[0];
        assert_eq!((d.in_bps, d.out_bps, d.delay_ms), (0.0, 0.0, None));
        assert_eq!((d.inside_packets, d.channels_down), (3, Some(1)));
        assert!(d.drops.is_empty());
    }

    #[test]
    fn only_loopback_is_served() {
        let e = Live::start("198.18.0.1:0".parse().expect("an address"), "t").err().expect("refused");
        assert!(e.to_string().contains("loopback only"), "{e}");
    }

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).expect("connects");
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").expect("request");
        let mut out = String::new();
        std::io::Read::read_to_string(&mut s, &mut out).expect("response");
        out
    }

    #[test]
    fn the_stream_carries_each_snapshot_and_ends_with_the_run() {
        let live = Live::start("127.0.0.1:0".parse().expect("an address"), "a test link").expect("starts");
        let addr = live.addr;
        assert!(get(addr, "/").contains("<title>aerolink live</title>"));
        let feed = live.feed();
        let reader = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).expect("connects");
            write!(s, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n").expect("request");
            let mut out = String::new();
            std::io::Read::read_to_string(&mut s, &mut out).expect("the stream");
            out
        });
        // Traffic until two snapshots have carried it.
        let t0 = Instant::now();
        while live.shared.latest.lock().expect("lock").seq < 3 {
            feed.take(&[ev(1, Dir::Down, 1500, EventKind::Arrive), ev(2, Dir::Down, 1500, EventKind::Depart { queue_ns: 0, delay_ns: 1_000_000 })]);
            std::thread::yield_now();
            assert!(t0.elapsed() < Duration::from_secs(10), "no snapshot in 10 s");
        }
        let snap: serde_json::Value = serde_json::from_str(get(addr, "/snapshot").split("\r\n\r\n").nth(1).expect("a body")).expect("JSON");
        assert_eq!(snap["title"], "a test link");
        let dirs = snap["directions"].as_array().expect("directions");
        assert!(dirs.iter().any(|d| d["dir"] == "down" && d["out_bps"].as_f64() > Some(0.0)), "{snap}");
        live.finish();
        let stream = reader.join().expect("joined");
        assert!(stream.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream"));
        assert!(stream.matches("\ndata: ").count() >= 2, "{stream}");
        assert!(stream.contains("event: end\ndata: {"), "{stream}");
        assert!(stream.trim_end().ends_with("\"ended\":true}"), "{stream}");
    }

    #[test]
    fn runs_under_way_each_have_their_own_figures_until_retired() {
        let live = Live::start("127.0.0.1:0".parse().expect("an address"), "an experiment").expect("starts");
        let (a, b) = (live.feed_for("run a"), live.feed_for("run b"));
        a.take(&[ev(1, Dir::Up, 100, EventKind::Arrive)]);
        b.take(&[ev(1, Dir::Up, 300, EventKind::Arrive), ev(2, Dir::Up, 0, EventKind::Note(Note::Channel { channel: 0, up: false }))]);
        let seq = |l: &Live| l.shared.latest.lock().expect("lock").seq;
        let s0 = seq(&live);
        let t0 = Instant::now();
        while seq(&live) < s0 + 2 {
            std::thread::yield_now();
            assert!(t0.elapsed() < Duration::from_secs(10), "no snapshot in 10 s");
        }
        let snap = live.shared.latest.lock().expect("lock").clone();
        let runs: Vec<&str> = snap.directions.iter().map(|d| d.run.as_str()).collect();
        assert_eq!(runs, ["run a", "run b"]);
        assert_eq!(snap.directions[1].inside_bytes, 300);
        assert_eq!(snap.events.iter().map(|e| e.run.as_str()).collect::<Vec<_>>(), ["run b"]);
        live.retire("run a");
        let s1 = seq(&live);
        while seq(&live) < s1 + 2 {
            std::thread::yield_now();
            assert!(t0.elapsed() < Duration::from_secs(10), "no snapshot in 10 s");
        }
        let snap = live.shared.latest.lock().expect("lock").clone();
        assert_eq!(snap.directions.iter().map(|d| d.run.as_str()).collect::<Vec<_>>(), ["run b"]);
    }
}
