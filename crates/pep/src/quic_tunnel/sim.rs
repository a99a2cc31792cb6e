//! The tunnel in simulated time, without root (like quinn's own `Pair`):
//! both halves' endpoints — their configurations, the ground's key gate,
//! the proofs both ways — over an in-memory link whose each direction is
//! `aerolink_link`'s pipeline for a profile (rate, delay, loss, outages),
//! on tokio's paused clock: a minute of outage passes in milliseconds, and
//! nothing touches the host's network.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use aerolink_link::{Instant as LinkInstant, Pipeline, Profile};
use tokio::sync::mpsc;

use super::*;
use crate::relay::Counters;

/// A datagram and where it came from.
type Datagram = (SocketAddr, Vec<u8>);

/// One end of the simulated link: what it sends goes into its direction's
/// pipeline; what the other direction delivers waits in `inbox`.
#[derive(Debug)]
struct SimSocket {
    addr: SocketAddr,
    out: mpsc::UnboundedSender<Datagram>,
    inbox: Mutex<(VecDeque<Datagram>, Option<Waker>)>,
}

#[derive(Debug)]
struct Writable;

impl quinn::UdpPoller for Writable {
    fn poll_writable(self: std::pin::Pin<&mut Self>, _: &mut Context) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl quinn::AsyncUdpSocket for SimSocket {
    fn create_io_poller(self: Arc<Self>) -> std::pin::Pin<Box<dyn quinn::UdpPoller>> {
        Box::pin(Writable)
    }
    fn try_send(&self, t: &quinn::udp::Transmit) -> std::io::Result<()> {
        // One datagram per transmit (no segmentation offload here).
        let _ = self.out.send((self.addr, t.contents.to_vec()));
        Ok(())
    }
    fn poll_recv(&self, cx: &mut Context, bufs: &mut [std::io::IoSliceMut<'_>], meta: &mut [quinn::udp::RecvMeta]) -> Poll<std::io::Result<usize>> {
        let mut g = self.inbox.lock().expect("not poisoned");
        let mut n = 0;
        while n < bufs.len().min(meta.len()) {
            let Some((from, d)) = g.0.pop_front() else { break };
            bufs[n][..d.len()].copy_from_slice(&d);
            meta[n] = quinn::udp::RecvMeta { addr: from, len: d.len(), stride: d.len(), ecn: None, dst_ip: Some(self.addr.ip()) };
            n += 1;
        }
        if n > 0 {
            return Poll::Ready(Ok(n));
        }
        g.1 = Some(cx.waker().clone());
        Poll::Pending
    }
    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

impl SimSocket {
    fn deliver(&self, from: SocketAddr, d: Vec<u8>) {
        let mut g = self.inbox.lock().expect("not poisoned");
        g.0.push_back((from, d));
        if let Some(w) = g.1.take() {
            w.wake();
        }
    }
}

/// Datagrams that crossed each way, and those the link dropped.
#[derive(Default)]
struct Tally {
    delivered: u64,
    dropped: u64,
}

/// Drives one direction: each datagram enters the pipeline when sent and
/// reaches `to` when the pipeline lets it out, in the paused clock's time.
fn drive(pipe: Pipeline<Datagram>, mut rx: mpsc::UnboundedReceiver<Datagram>, to: Arc<SimSocket>, t0: tokio::time::Instant, tally: Arc<Mutex<Tally>>) {
    tokio::spawn(async move {
        let mut pipe = pipe;
        let now = || LinkInstant(t0.elapsed().as_nanos() as u64);
        loop {
            while let Some(p) = pipe.dequeue(now()) {
                let (from, d) = p.payload;
                to.deliver(from, d);
                tally.lock().expect("not poisoned").delivered += 1;
            }
            tally.lock().expect("not poisoned").dropped += pipe.take_drops().count() as u64;
            let wake = pipe.next_wakeup().map(|w| t0 + std::time::Duration::from_nanos(w.0));
            tokio::select! {
                got = rx.recv() => match got {
                    Some((from, d)) => {
                        pipe.enqueue(now(), d.len() as u32 + 28, (from, d));
                    }
                    None => return,
                },
                _ = async { tokio::time::sleep_until(wake.expect("guarded")).await }, if wake.is_some() => {}
            }
        }
    });
}

/// The two ends of a link built from `profile` (its `up` from the air
/// half, `down` toward it), and what crossed each way.
fn link(profile: &str) -> (Arc<SimSocket>, Arc<SimSocket>, Arc<Mutex<Tally>>) {
    let p = Profile::parse(profile, "sim.toml", &[], &mut |_| Err("no files".into())).expect("a valid profile");
    let (air_addr, ground_addr): (SocketAddr, SocketAddr) = ("198.18.0.1:40000".parse().unwrap(), "198.18.1.1:4433".parse().unwrap());
    let (up_tx, up_rx) = mpsc::unbounded_channel();
    let (down_tx, down_rx) = mpsc::unbounded_channel();
    let air = Arc::new(SimSocket { addr: air_addr, out: up_tx, inbox: Mutex::default() });
    let ground = Arc::new(SimSocket { addr: ground_addr, out: down_tx, inbox: Mutex::default() });
    let t0 = tokio::time::Instant::now();
    let tally = Arc::new(Mutex::new(Tally::default()));
    drive(Pipeline::new(&p.up, p.base_rtt(), 1, 0), up_rx, ground.clone(), t0, tally.clone());
    drive(Pipeline::new(&p.down, p.base_rtt(), 1, 1), down_rx, air.clone(), t0, tally.clone());
    (air, ground, tally)
}

fn tuning(cc: TunnelCc, rate_bps: Option<u64>) -> Tuning {
    Tuning { preset: Preset::HBdp1, cc, rate_bps, idle_timeout: Duration::from_secs(120), max_probe_timeout: ProbeCap::default(), rate_follow: None }
}

/// The ground half on `sock` with `psk`: each authenticated tunnel's
/// streams are read to their end and answered with the byte count.
fn ground(sock: Arc<SimSocket>, psk: &Psk, t: &Tuning) -> Arc<Counters> {
    let (server, _) = ground::server_config(t).unwrap();
    let counters = Arc::new(Counters::default());
    let ep = screening::endpoint_over(psk, Some(server), sock, counters.clone(), None).unwrap();
    let (psk, c) = (psk.clone(), counters.clone());
    tokio::spawn(async move {
        while let Some(inc) = ep.accept().await {
            let Ok(conn) = inc.await else { continue };
            if !ground::authenticate(&conn, &psk, &c).await {
                continue;
            }
            while let Ok((mut send, mut recv)) = conn.accept_bi().await {
                tokio::spawn(async move {
                    let n = tokio::io::copy(&mut recv, &mut tokio::io::sink()).await.unwrap_or(0);
                    let _ = send.write_all(&n.to_be_bytes()).await;
                    let _ = send.finish();
                });
            }
        }
    });
    counters
}

/// The air half's endpoint on `sock`, with `psk`.
fn air(sock: Arc<SimSocket>, psk: &Psk, t: &Tuning, ground: SocketAddr) -> quinn::Endpoint {
    let mut ep = screening::endpoint_over(psk, None, sock, Arc::new(Counters::default()), None).unwrap();
    ep.set_default_client_config(air::client_config(psk, t, ground).unwrap());
    ep
}

/// Sends `bytes` on a new stream and waits for the ground's count.
async fn send(conn: &quinn::Connection, bytes: usize) -> u64 {
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let chunk = vec![7u8; 16 * 1024];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        send.write_all(&chunk[..n]).await.unwrap();
        left -= n;
    }
    send.finish().unwrap();
    let mut b = [0u8; 8];
    recv.read_exact(&mut b).await.unwrap();
    u64::from_be_bytes(b)
}

fn key(hex_byte: &str) -> Psk {
    Psk::parse(&hex_byte.repeat(32)).unwrap()
}

const GEO: &str = "[link]\nrate = \"2 Mbit/s\"\ndelay = \"300 ms\"\nqueue = \"256 KB\"\n";

/// With the ground's key the tunnel opens and both proofs pass; with
/// another key the ground's gate answers nothing (the air half gives up
/// and the ground counts the refusal).
#[tokio::test(start_paused = true)]
async fn the_right_key_opens_the_tunnel_and_a_wrong_one_gets_silence() {
    let t = tuning(TunnelCc::Bbr, None);
    let (a, g, _) = link(GEO);
    let ground_counters = ground(g.clone(), &key("ab"), &t);
    let ep = air(a.clone(), &key("ab"), &t, g.addr);
    let t0 = tokio::time::Instant::now();
    let conn = air::open_tunnel(&ep, g.addr, &key("ab")).await.unwrap();
    // Handshake and proofs: two round trips of 600 ms and a little more.
    let took = t0.elapsed().as_secs_f64();
    assert!((1.2..2.5).contains(&took), "{took} s");
    assert_eq!(send(&conn, 1000).await, 1000);
    assert_eq!(ground_counters.refused.load(std::sync::atomic::Ordering::Relaxed), 0);

    let (a2, g2, _) = link(GEO);
    let ground_counters = ground(g2.clone(), &key("ab"), &t);
    let ep = air(a2, &key("cd"), &t, g2.addr);
    let r = tokio::time::timeout(Duration::from_secs(30), air::open_tunnel(&ep, g2.addr, &key("cd"))).await;
    assert!(r.is_err(), "a wrong key got an answer: {:?}", r.map(|x| x.map(|_| ())));
    assert!(ground_counters.refused.load(std::sync::atomic::Ordering::Relaxed) >= 1);
}

/// A transfer under way when the link goes dark for a minute (shorter than
/// the idle timeout) resumes when it comes back, on the same tunnel, within
/// the probe cap of the outage's end.
#[tokio::test(start_paused = true)]
async fn a_minute_long_outage_pauses_the_tunnel_and_it_resumes() {
    let t = tuning(TunnelCc::Bbr, None);
    let profile = format!("{GEO}outages = [{{ start = \"6 s\", duration = \"60 s\", mode = \"drop\" }}]\n");
    let (a, g, tally) = link(&profile);
    ground(g.clone(), &key("ab"), &t);
    let ep = air(a, &key("ab"), &t, g.addr);
    let conn = air::open_tunnel(&ep, g.addr, &key("ab")).await.unwrap();
    let t0 = tokio::time::Instant::now();
    // 2 MB at 2 Mbit/s is 8 s of sending: it straddles the outage.
    assert_eq!(send(&conn, 2_000_000).await, 2_000_000);
    let took = t0.elapsed().as_secs_f64();
    assert!(conn.close_reason().is_none(), "the tunnel closed: {:?}", conn.close_reason());
    // At least the sending time and the outage; resumed within the 2 s
    // probe cap (and a few round trips) of the link's return.
    assert!((66.0..80.0).contains(&took), "{took} s");
    assert!(tally.lock().unwrap().dropped > 0, "the outage dropped nothing");
}

/// The `rate` controller holds its rate through 3 % random loss where a
/// loss-based controller (cubic) backs off.
#[tokio::test(start_paused = true)]
async fn the_rate_controller_holds_its_rate_through_random_loss() {
    let profile = "[link]\nrate = \"2 Mbit/s\"\ndelay = \"300 ms\"\nqueue = \"256 KB\"\nloss = \"3%\"\n";
    let mut goodput = Vec::new();
    for t in [tuning(TunnelCc::Rate, Some(1_800_000)), tuning(TunnelCc::Cubic, None)] {
        let (a, g, _) = link(profile);
        ground(g.clone(), &key("ab"), &t);
        let ep = air(a, &key("ab"), &t, g.addr);
        let conn = air::open_tunnel(&ep, g.addr, &key("ab")).await.unwrap();
        let t0 = tokio::time::Instant::now();
        assert_eq!(send(&conn, 3_000_000).await, 3_000_000);
        goodput.push(3_000_000.0 * 8.0 / t0.elapsed().as_secs_f64());
    }
    let (rate, cubic) = (goodput[0], goodput[1]);
    assert!(rate > 0.75 * 1.8e6, "rate controller: {rate:.0} bit/s");
    assert!(rate > 1.5 * cubic, "rate {rate:.0} bit/s against cubic's {cubic:.0}");
}
