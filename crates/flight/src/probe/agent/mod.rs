//! The agent's schedule: one task per kind of measurement, each on its own
//! interval, none waiting for another (a page load stuck in an outage never
//! delays the 2-second probes). Every task bounds its own time; heavy
//! tasks (page loads, transfers) take turns so they do not measure each
//! other.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::record::{Measurement, UdpProbe, Writer};
use super::wire::{Reply, Request};
use aerolink_work::clock::now_ns;
use aerolink_work::web::Protocol;

mod args;
pub use args::AgentArgs;

/// The agent's log, shared by its tasks.
type Log = Arc<Mutex<Writer>>;

fn epoch_s() -> f64 {
    now_ns() as f64 / 1e9
}

fn log(w: &Log, t: f64, m: Measurement) {
    let mut w = w.lock().expect("not poisoned");
    if let Err(e) = w.write(t, m) {
        // The schedule goes on; the user sees why records are missing.
        eprintln!("aerolink probe: cannot write the log: {e}");
    }
}

/// A `PREFIX NAME` table for public addresses.
#[derive(Clone, Debug, Default)]
pub struct Networks(Vec<(IpAddr, u8, String)>);

impl Networks {
    pub fn parse(text: &str, origin: &str) -> Result<Networks, String> {
        let mut v = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.split('#').next().unwrap_or("").trim();
            if t.is_empty() {
                continue;
            }
            let bad = || format!("{origin}: line {}: expected `PREFIX/LEN NAME`, like `198.18.0.0/24 provider-a`", i + 1);
            let (prefix, name) = t.split_once(char::is_whitespace).ok_or_else(bad)?;
            let (addr, len) = prefix.split_once('/').ok_or_else(bad)?;
            let addr: IpAddr = addr.parse().map_err(|_| bad())?;
            let len: u8 = len.parse().ok().filter(|l| *l <= if addr.is_ipv4() { 32 } else { 128 }).ok_or_else(bad)?;
            v.push((addr, len, name.trim().to_string()));
        }
        Ok(Networks(v))
    }

    pub fn name(&self, a: IpAddr) -> Option<String> {
        let bits = |a: IpAddr| -> (u128, u8) {
            match a {
                IpAddr::V4(x) => (u32::from(x) as u128, 32),
                IpAddr::V6(x) => (u128::from(x), 128),
            }
        };
        let (ab, aw) = bits(a);
        self.0
            .iter()
            .filter(|(p, len, _)| {
                let (pb, pw) = bits(*p);
                pw == aw && (*len == 0 || (ab ^ pb) >> (aw - len) == 0)
            })
            .max_by_key(|(_, len, _)| *len)
            .map(|(_, _, n)| n.clone())
    }
}

/// Runs the schedule until `duration` passes or `stop` fires; writes a
/// `start` record first and a `stop` record last.
/// `target` is the reflector's probe address (`--target` resolved, port
/// [`super::wire::PORT`]).
pub async fn run(args: AgentArgs, target: SocketAddr, writer: Writer, networks: Networks, stop: tokio::sync::watch::Receiver<bool>) {
    let resolver = match args.resolver {
        Some(r) => r,
        None => {
            let text = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
            SocketAddr::new(aerolink_work::dns::system_resolver(&text).unwrap_or(target.ip()), 53)
        }
    };
    let w: Log = Arc::new(Mutex::new(writer));
    let config = serde_json::json!({
        "target": target.to_string(), "resolver": resolver.to_string(),
        "udp_every_s": args.udp_every.as_secs_f64(), "udp_timeout_s": args.udp_timeout.as_secs_f64(),
        "ping_every_s": args.ping_every.as_secs_f64(), "trace_every_s": args.trace_every.as_secs_f64(),
        "dns_every_s": args.dns_every.as_secs_f64(), "dns_names": args.dns_names,
        "web_every_s": args.web_every.as_secs_f64(), "web_protocols": args.web_protocols.iter().map(|p| p.to_string()).collect::<Vec<_>>(), "page": args.page.spec, "web_http": args.web_http, "http_proxy": args.http_proxy.map(|p| p.to_string()),
        "bulk_every_s": args.bulk_every.as_secs_f64(), "bulk_bytes": args.bulk_bytes,
        "rate_every_s": args.rate_every.as_secs_f64(), "train_packets": args.train_packets, "train_size": args.train_size, "same_clock": args.same_clock,
        "daily_bytes": args.daily_bytes(), "note": args.note,
    });
    log(&w, epoch_s(), Measurement::Start { target: args.target.clone(), version: env!("CARGO_PKG_VERSION").into(), config });
    let heavy = Arc::new(tokio::sync::Mutex::new(()));
    let mut tasks = tokio::task::JoinSet::new();
    let a = Arc::new(args);
    let session = now_ns() ^ (std::process::id() as u64) << 32;
    let token: Token = Arc::new(Mutex::new(None));
    if !a.udp_every.is_zero() {
        tasks.spawn(udp_task(a.clone(), target, session, token.clone(), w.clone(), networks));
    }
    if !a.rate_every.is_zero() {
        tasks.spawn(every(a.rate_every, {
            let (w, a, h, token) = (w.clone(), a.clone(), heavy.clone(), token.clone());
            move || rate(target, session, token.clone(), a.clone(), w.clone(), h.clone())
        }));
    }
    if !a.ping_every.is_zero() {
        tasks.spawn(every(a.ping_every, {
            let (w, a) = (w.clone(), a.clone());
            move || ping(target.ip(), a.udp_timeout, w.clone())
        }));
    }
    if !a.trace_every.is_zero() {
        tasks.spawn(every(a.trace_every, {
            let w = w.clone();
            move || traceroute(target.ip(), w.clone())
        }));
    }
    if !a.dns_every.is_zero() && !a.dns_names.is_empty() {
        tasks.spawn(every(a.dns_every, {
            let (w, a) = (w.clone(), a.clone());
            move || dns(resolver, a.clone(), w.clone())
        }));
    }
    if !a.web_every.is_zero() && (!a.web_protocols.is_empty() || a.web_http) {
        tasks.spawn(every(a.web_every, {
            let (w, a, h) = (w.clone(), a.clone(), heavy.clone());
            move || web(target.ip(), a.clone(), w.clone(), h.clone())
        }));
    }
    if !a.bulk_every.is_zero() {
        tasks.spawn(every(a.bulk_every, {
            let (w, a, h) = (w.clone(), a.clone(), heavy.clone());
            move || bulk(target.ip(), a.clone(), w.clone(), h.clone())
        }));
    }
    let mut stop = stop;
    let reason = tokio::select! {
        _ = async { match a.duration { Some(d) => tokio::time::sleep(d).await, None => std::future::pending().await } } => "duration reached".to_string(),
        _ = stop.wait_for(|s| *s) => "stopped by a signal".to_string(),
        r = tasks.join_next() => format!("a task ended: {r:?}"),
    };
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    log(&w, epoch_s(), Measurement::Stop { reason });
}

/// Runs `f` now and then every `period` (a late run delays the next, never
/// piles up).
async fn every<F, Fut>(period: Duration, f: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        f().await;
    }
}

/// The 2-second probe: sends on schedule whatever happens to replies;
/// a probe unanswered after the timeout is logged lost.
/// The reflector's latest address token (for train requests).
type Token = Arc<Mutex<Option<u64>>>;

async fn udp_task(a: Arc<AgentArgs>, target: SocketAddr, session: u64, token: Token, w: Log, networks: Networks) {
    let bind = super::local_any(target);
    let sock = match tokio::net::UdpSocket::bind(bind).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("aerolink probe: UDP probes off: {e}");
            return std::future::pending().await;
        }
    };
    // Replies are stamped by the kernel on arrival (a one-way delay without
    // this task's wake-up in it); without it, by the clock when read.
    if let Err(e) = super::stamp::enable(&sock) {
        eprintln!("aerolink probe: receive times from the clock when read (the kernel's stamps are off: {e})");
    }
    let mut pending: HashMap<u64, (f64, Instant)> = HashMap::new();
    let mut tick = tokio::time::interval(a.udp_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut seq = 0u64;
    let mut buf = [0u8; 512];
    let mut last_from: Option<IpAddr> = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let sent_ns = now_ns();
                let req = Request { session, seq, sent_ns }.encode();
                // A send that fails (no route during an outage) is a lost probe.
                let _ = sock.send_to(&req, target).await;
                pending.insert(seq, (sent_ns as f64 / 1e9, Instant::now()));
                seq += 1;
                // Anything past its timeout is lost.
                let mut lost: Vec<(u64, f64)> = pending.iter().filter(|(_, (_, at))| at.elapsed() >= a.udp_timeout).map(|(s, (t, _))| (*s, *t)).collect();
                lost.sort_by_key(|(s, _)| *s);
                for (s, t) in lost {
                    pending.remove(&s);
                    log(&w, t, Measurement::Udp(UdpProbe { seq: s, session, rtt_ms: None, up_ms: None, down_ms: None, rx_max: None, rx_bitmap: None, up_arrived: None }));
                }
            }
            got = super::stamp::recv_from(&sock, &mut buf) => {
                let Ok((n, from, now)) = got else { continue };
                let Some(rep) = Reply::decode(&buf[..n]).filter(|r| r.session == session && from == target) else { continue };
                *token.lock().expect("not poisoned") = Some(rep.token);
                let Some((t, at)) = pending.remove(&rep.seq) else { continue };
                let rtt_ms = at.elapsed().as_secs_f64() * 1e3;
                let one_way = a.same_clock || (rep.synced && super::record::clock_state().synced);
                let (up_ms, down_ms) = if one_way {
                    (Some((rep.recv_ns as f64 - rep.sent_ns as f64) / 1e6), Some((now as f64 - rep.recv_ns as f64 - rep.turnaround_us as f64 * 1e3) / 1e6))
                } else {
                    (None, None)
                };
                log(&w, t, Measurement::Udp(UdpProbe { seq: rep.seq, session, rtt_ms: Some(rtt_ms), up_ms, down_ms, rx_max: Some(rep.rx_max), rx_bitmap: Some(rep.rx_bitmap), up_arrived: None }));
                if last_from != Some(rep.from.ip()) {
                    last_from = Some(rep.from.ip());
                    log(&w, epoch_s(), Measurement::Address { public: rep.from.ip().to_string(), network: networks.name(rep.from.ip()) });
                }
            }
        }
    }
}

async fn ping(target: IpAddr, timeout: Duration, w: Log) {
    let t = epoch_s();
    let out = tokio::process::Command::new("ping").args(["-n", "-c", "1", "-W", &timeout.as_secs().max(1).to_string(), &target.to_string()]).kill_on_drop(true).output().await;
    let m = match out {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            match text.lines().find_map(aerolink_work::ping::reply).map(|(_, ms)| ms) {
                Some(ms) => Measurement::Ping { rtt_ms: Some(ms), error: None },
                None => Measurement::Ping { rtt_ms: None, error: Some("no reply".into()) },
            }
        }
        Err(e) => Measurement::Ping { rtt_ms: None, error: Some(format!("cannot run ping: {e}")) },
    };
    log(&w, t, m);
}

async fn traceroute(target: IpAddr, w: Log) {
    let t = epoch_s();
    let got = tokio::task::spawn_blocking(move || super::trace::trace(target, 30, Duration::from_secs(5))).await;
    let m = match got {
        Ok(Ok((hops, reached))) => Measurement::Trace { target: target.to_string(), hops, reached, error: None },
        Ok(Err(e)) => Measurement::Trace { target: target.to_string(), hops: vec![], reached: false, error: Some(e.to_string()) },
        Err(e) => Measurement::Trace { target: target.to_string(), hops: vec![], reached: false, error: Some(e.to_string()) },
    };
    log(&w, t, m);
}

async fn dns(resolver: SocketAddr, a: Arc<AgentArgs>, w: Log) {
    for name in &a.dns_names {
        for attempt in 1..=2u8 {
            let t = epoch_s();
            let l = aerolink_work::dns::lookup(resolver, name, a.udp_timeout).await;
            log(&w, t, Measurement::Dns { name: name.clone(), server: resolver.to_string(), attempt, ms: l.ms, answers: l.answers, rcode: l.rcode, error: l.error });
        }
    }
}

/// A measurement under way: if the agent stops before it ends, the log
/// still says it was running (an interrupted record), so that the
/// analysis knows the link was busy then.
struct Underway {
    w: Log,
    t: f64,
    m: Option<Measurement>,
}

impl Underway {
    fn new(w: &Log, t: f64, interrupted: Measurement) -> Underway {
        Underway { w: w.clone(), t, m: Some(interrupted) }
    }

    fn done(mut self, m: Measurement) {
        self.m = None;
        log(&self.w, self.t, m);
    }
}

impl Drop for Underway {
    fn drop(&mut self) {
        if let Some(m) = self.m.take() {
            log(&self.w, self.t, m);
        }
    }
}

const INTERRUPTED: &str = "interrupted: the agent stopped";

fn wire_rate(span_packets: u32, size: u32, span_ns: f64) -> Option<f64> {
    (span_packets > 0 && span_ns > 0.0 && span_ns.is_finite()).then(|| span_packets as f64 * (size as f64 + 28.0) * 8.0 / (span_ns / 1e9))
}

/// A down train, then an up train; the rate from the arrival spread of the
/// first and last packets that arrived (index span, so packets lost after
/// the bottleneck still count for the time they took).
async fn rate(target: SocketAddr, session: u64, token: Token, a: Arc<AgentArgs>, w: Log, heavy: Arc<tokio::sync::Mutex<()>>) {
    let _turn = heavy.lock().await;
    let (count, size) = (a.train_packets, a.train_size);
    let failed = |dir: &str, e: String| Measurement::Rate { direction: dir.into(), packets: count, size, received: 0, ms: None, rate_bps: None, error: Some(e) };
    let bind = super::local_any(target);
    let sock = match tokio::net::UdpSocket::bind(bind).await {
        Ok(s) => s,
        Err(e) => return log(&w, epoch_s(), failed("down", e.to_string())),
    };
    // A train's spacing on arrival, as the kernel stamped it.
    let _ = super::stamp::enable(&sock);
    let mut buf = [0u8; 2048];
    // Down.
    let t = epoch_s();
    let guard = Underway::new(&w, t, failed("down", INTERRUPTED.into()));
    let tok = *token.lock().expect("not poisoned");
    let m = match tok {
        None => failed("down", "no probe answered yet (no token)".into()),
        Some(tok) => {
            let train = now_ns();
            let _ = sock.send_to(&super::wire::TrainRequest { session, train, count, size, token: tok }.encode(), target).await;
            let mut got: Vec<(u32, u64)> = Vec::new();
            let deadline = tokio::time::Instant::now() + a.udp_timeout;
            while got.len() < count as usize {
                match tokio::time::timeout_at(deadline, super::stamp::recv_from(&sock, &mut buf)).await {
                    Ok(Ok((n, from, at))) if from == target => {
                        if let Some(p) = super::wire::TrainPacket::decode(&buf[..n], false).filter(|p| p.session == session && p.train == train) {
                            got.push((p.idx, at));
                        }
                    }
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            train_result("down", count, size, got.iter().map(|(i, at)| (*i, at.saturating_sub(got[0].1) as f64)).collect())
        }
    };
    guard.done(m);
    // Up.
    let t = epoch_s();
    let guard = Underway::new(&w, t, failed("up", INTERRUPTED.into()));
    let train = now_ns();
    for idx in 0..count {
        let _ = sock.send_to(&super::wire::TrainPacket { session, train, idx }.encode(size, true), target).await;
    }
    let mut got: Vec<(u32, f64)> = Vec::new();
    let deadline = tokio::time::Instant::now() + a.udp_timeout;
    while got.len() < count as usize {
        match tokio::time::timeout_at(deadline, sock.recv_from(&mut buf)).await {
            Ok(Ok((n, from))) if from == target => {
                if let Some(ack) = super::wire::TrainAck::decode(&buf[..n]).filter(|k| k.session == session && k.train == train) {
                    got.push((ack.idx, ack.recv_ns as f64));
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    guard.done(train_result("up", count, size, got));
}

/// A train's record from (index, arrival time in ns) of what arrived: the
/// rate from the least-squares slope of arrival time over index (jitter on
/// single packets averages out; a packet lost after the bottleneck still
/// took its time).
fn train_result(dir: &str, count: u32, size: u32, mut got: Vec<(u32, f64)>) -> Measurement {
    got.sort_by_key(|(i, _)| *i);
    got.dedup_by_key(|(i, _)| *i);
    let received = got.len() as u32;
    let n = got.len() as f64;
    let (rate_bps, ms) = if got.len() >= 2 {
        let mx = got.iter().map(|(i, _)| *i as f64).sum::<f64>() / n;
        let my = got.iter().map(|(_, t)| *t).sum::<f64>() / n;
        let sxy: f64 = got.iter().map(|(i, t)| (*i as f64 - mx) * (t - my)).sum();
        let sxx: f64 = got.iter().map(|(i, _)| (*i as f64 - mx).powi(2)).sum();
        let ns_per_packet = sxy / sxx;
        let span = got[got.len() - 1].1 - got[0].1;
        (wire_rate(1, size, ns_per_packet), Some(span / 1e6))
    } else {
        (None, None)
    };
    let error = rate_bps.is_none().then(|| format!("{received} of {count} packets arrived: no rate"));
    Measurement::Rate { direction: dir.into(), packets: count, size, received, ms, rate_bps, error }
}

async fn web(target: IpAddr, a: Arc<AgentArgs>, w: Log, heavy: Arc<tokio::sync::Mutex<()>>) {
    let _turn = heavy.lock().await;
    let plain = a.web_http.then_some("http".to_string());
    for protocol in a.web_protocols.iter().map(|p| p.to_string()).chain(plain) {
        let t = epoch_s();
        let guard = Underway::new(
            &w,
            t,
            Measurement::Web {
                protocol: protocol.clone(),
                page: a.page.spec.clone(),
                plt_ms: None,
                ttfb_ms: None,
                requests: 0,
                bytes: 0,
                headers: BTreeMap::new(),
                har: None,
                error: Some(INTERRUPTED.into()),
            },
        );
        let load = async {
            match protocol.parse::<Protocol>() {
                Ok(p) => aerolink_work::web::load(p, SocketAddr::new(target, aerolink_work::server::HTTPS_PORT), &a.page, &aerolink_work::quic::QuicKnobs::default()).await,
                Err(_) => super::plain::load(SocketAddr::new(target, aerolink_work::server::HTTP_PORT), a.http_proxy, &a.page).await,
            }
        };
        let got = tokio::time::timeout(a.task_timeout, load).await;
        let m = match got {
            Ok(Ok(r)) => {
                let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for o in &r.objects {
                    for (k, v) in &o.headers {
                        let vs = headers.entry(k.clone()).or_default();
                        if !vs.contains(v) {
                            vs.push(v.clone());
                        }
                    }
                }
                let host = if protocol == "http" { target.to_string() } else { aerolink_work::tls::SERVER_NAME.to_string() };
                let har = aerolink_work::har::from_web(&r, &host, t);
                let name = format!("har/{}-{protocol}.har", (t * 1e3) as u64);
                let path = a.out.join(&name);
                let saved = std::fs::create_dir_all(a.out.join("har")).and_then(|_| std::fs::write(&path, serde_json::to_vec(&har).unwrap_or_default()));
                Measurement::Web {
                    protocol: protocol.clone(),
                    page: a.page.spec.clone(),
                    plt_ms: Some(r.plt_ms),
                    ttfb_ms: Some(r.ttfb_ms),
                    requests: r.requests,
                    bytes: r.body_bytes,
                    headers,
                    har: saved.is_ok().then_some(name),
                    error: None,
                }
            }
            Ok(Err(e)) => Measurement::Web {
                protocol: protocol.clone(),
                page: a.page.spec.clone(),
                plt_ms: None,
                ttfb_ms: None,
                requests: 0,
                bytes: 0,
                headers: BTreeMap::new(),
                har: None,
                error: Some(e.to_string()),
            },
            Err(_) => Measurement::Web {
                protocol: protocol.clone(),
                page: a.page.spec.clone(),
                plt_ms: None,
                ttfb_ms: None,
                requests: 0,
                bytes: 0,
                headers: BTreeMap::new(),
                har: None,
                error: Some(format!("timed out after {} s", a.task_timeout.as_secs())),
            },
        };
        guard.done(m);
    }
}

async fn bulk(target: IpAddr, a: Arc<AgentArgs>, w: Log, heavy: Arc<tokio::sync::Mutex<()>>) {
    let _turn = heavy.lock().await;
    for direction in [aerolink_work::bulk::Direction::Down, aerolink_work::bulk::Direction::Up] {
        let t = epoch_s();
        let guard = Underway::new(&w, t, Measurement::Bulk { direction: direction.to_string(), bytes: a.bulk_bytes, ms: None, goodput_bps: None, peak_bps: None, error: Some(INTERRUPTED.into()) });
        let server = SocketAddr::new(target, aerolink_work::server::BULK_PORT);
        let got = tokio::time::timeout(a.task_timeout, aerolink_work::bulk::tcp(server, direction, a.bulk_bytes, aerolink_work::bulk::TcpClient::default())).await;
        let m = match got {
            Ok(Ok(r)) => {
                Measurement::Bulk { direction: direction.to_string(), bytes: r.bytes, ms: Some(r.completion_ms), goodput_bps: Some(r.goodput_bps), peak_bps: peak_bps(&r.bins_bytes), error: None }
            }
            Ok(Err(e)) => Measurement::Bulk { direction: direction.to_string(), bytes: a.bulk_bytes, ms: None, goodput_bps: None, peak_bps: None, error: Some(e.to_string()) },
            Err(_) => Measurement::Bulk {
                direction: direction.to_string(),
                bytes: a.bulk_bytes,
                ms: None,
                goodput_bps: None,
                peak_bps: None,
                error: Some(format!("timed out after {} s", a.task_timeout.as_secs())),
            },
        };
        guard.done(m);
    }
}

/// The highest rate over 10 consecutive 100 ms bins (1 s), bit/s; none
/// for a transfer shorter than 1 s.
fn peak_bps(bins: &[u64]) -> Option<f64> {
    bins.windows(10).map(|w| w.iter().sum::<u64>() as f64 * 8.0).reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_name_the_longest_matching_prefix() {
        let n = Networks::parse("# provider table\n198.18.0.0/15 lab\n198.18.0.0/24 provider-a\n2001:2::/48 v6lab\n", "nets.txt").unwrap();
        assert_eq!(n.name("198.18.0.7".parse().unwrap()).as_deref(), Some("provider-a"));
        assert_eq!(n.name("198.19.1.1".parse().unwrap()).as_deref(), Some("lab"));
        assert_eq!(n.name("2001:2::9".parse().unwrap()).as_deref(), Some("v6lab"));
        assert_eq!(n.name("192.0.2.1".parse().unwrap()), None);
        let e = Networks::parse("198.18.0.0/40 x\n", "nets.txt").unwrap_err();
        assert!(e.contains("nets.txt: line 1"), "{e}");
    }

    #[test]
    fn a_train_gives_the_rate_of_its_index_span() {
        // 1228 wire bytes every 5.2 ms is 1.89 Mbit/s; packet 2 lost after
        // the bottleneck still took its time.
        let gap = 1228.0 * 8.0 / 1.89e6 * 1e9;
        let Measurement::Rate { rate_bps, received, .. } = train_result("down", 4, 1200, vec![(3, 3.0 * gap), (0, 0.0), (1, gap)]) else { panic!() };
        assert_eq!(received, 3);
        assert!((rate_bps.unwrap() - 1.89e6).abs() < 1.0, "{rate_bps:?}");
        let Measurement::Rate { rate_bps, error, .. } = train_result("up", 4, 1200, vec![(1, 0.0)]) else { panic!() };
        assert!(rate_bps.is_none() && error.unwrap().contains("1 of 4"));
    }

    #[test]
    fn a_day_of_the_default_schedule_costs_what_the_help_says() {
        #[derive(clap::Parser)]
        struct P {
            #[command(flatten)]
            a: AgentArgs,
        }
        let a = <P as clap::Parser>::parse_from(["x", "--target", "198.18.0.2"]).a;
        let total: f64 = a.daily_bytes().values().sum();
        // Two 1 MB transfers every 5 minutes (605 MB), four page loads
        // (131 MB), the trains (113 MB), the rest under 15 MB: 0.86 GB.
        assert!((0.8e9..0.92e9).contains(&total), "{total}");
    }
}
