//! The messages workload (seed 004's generator): messages of M bytes —
//! timestamp, length, random payload — offered at R bit/s for T seconds,
//! one way or both ways at once, over kernel TCP or one QUIC stream.
//!
//! Each message carries the time it was offered (CLOCK_REALTIME, which both
//! namespaces share), so latency = receive time − offer time includes the
//! time it waited in the sender's buffers, as in the seed. Which time is the
//! offer's is [`Stamp`]: the schedule's (the default: a sender that falls
//! behind its rate counts the lag as latency, which then grows all run
//! long above capacity) or the moment its write starts (`send`: only the
//! wait for room in the socket's buffer counts, as a program that stamps a
//! message when it sends it would measure). Throughput =
//! bytes delivered within the test time / test time.
//!
//! Both ways at once, the ground may offer its own size and rate (seed
//! 004's third two-way test: 96 B at 4608 bit/s one way, 32 B at 1024 bit/s
//! the other): [`Offer`] `down`.
//!
//! Wire: the client sends `dir: u8` (0 down, 1 up, 2 both; the top bit set
//! when messages are stamped as sent, the next when the ground's own offer
//! follows), `size: u32`, `rate_bps: f64`, `duration_ms: u32`, then that
//! offer (`size: u32`, `rate_bps: f64`) if flagged, then messages. After the test each
//! side's sender writes an end mark; the server follows its mark with what
//! it received (count, bytes, each latency in µs). A reader task owns each
//! receiving stream and forwards frames with their arrival times, so the
//! test's deadline never cuts a frame in half.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::error::{Result, WorkError};
use crate::quic::QuicKnobs;
use crate::Transport;

pub const MIN_SIZE: u32 = 12;
pub const ALPN: &[u8] = b"aerolink-messages";
/// Marks the end of the messages: what follows is the receiver's report.
const END_MARK: u32 = u32::MAX;

use crate::clock::now_ns;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Received {
    pub messages: u64,
    pub bytes: u64,
    /// Each delivered message's latency, ms, in arrival order.
    pub latencies_ms: Vec<f64>,
}

/// What one side offers: messages of `size` bytes at `rate_bps`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Offer {
    pub size: u32,
    pub rate_bps: f64,
}

impl Offer {
    /// The ground's own offer when either of its size or rate is given
    /// (the other as the aircraft's `up`); `None` when neither is.
    pub fn ground(up: Offer, size: Option<u32>, rate_bps: Option<f64>) -> Option<Offer> {
        (size.is_some() || rate_bps.is_some()).then(|| Offer { size: size.unwrap_or(up.size), rate_bps: rate_bps.unwrap_or(up.rate_bps) })
    }

    fn check(self) -> Result<Offer> {
        if self.size < MIN_SIZE {
            return Err(WorkError::Param("messages must be at least 12 bytes (timestamp + length)"));
        }
        if !(self.rate_bps > 0.0 && self.rate_bps.is_finite()) {
            return Err(WorkError::Param("the offered rate must be positive"));
        }
        Ok(self)
    }
}

/// A messages test: which way, what each side offers, for how long.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub transport: Transport,
    pub direction: Direction,
    /// The client's offer (and the server's, unless `down` is given).
    pub offer: Offer,
    /// The server's own offer, both ways at once only.
    pub down: Option<Offer>,
    pub duration: Duration,
    /// Leave Nagle's algorithm on.
    pub nagle: bool,
    pub stamp: Stamp,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MessagesResult {
    pub transport: String,
    pub size_bytes: u32,
    pub offered_bps: f64,
    /// The server's own offer when it differs (both ways at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_offer: Option<Offer>,
    pub duration_s: f64,
    pub direction: String,
    pub offered_messages: u64,
    /// Received by the client (down) during the test.
    pub down: Option<Received>,
    /// Received by the server (up) during the test.
    pub up: Option<Received>,
}

impl Received {
    pub fn delivered_bps(&self, duration_s: f64) -> f64 {
        self.bytes as f64 * 8.0 / duration_s
    }
}

/// What a reader task saw.
/// How long the end of a run waits with nothing arriving (no message, no
/// part of the report) before it gives up on the server's report.
const DRAIN_IDLE: Duration = Duration::from_secs(300);

enum Seen {
    Message {
        at: Instant,
        latency_ms: f64,
        len: usize,
    },
    /// Part of the report arrived: it is long (a latency per message) and
    /// takes minutes over a slow link; the wait for it is not idle.
    Reporting,
    Report(Received),
}

/// Latencies read between two [`Seen::Reporting`].
const REPORT_PROGRESS_EVERY: usize = 512;

/// Reads frames until the end mark (and the report after it, if
/// `with_report`), then keeps reading to EOF so the peer can close cleanly.
fn spawn_reader<R: AsyncRead + Unpin + Send + 'static>(mut r: R, with_report: bool) -> mpsc::UnboundedReceiver<Seen> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let res: std::io::Result<()> = async {
            let mut hdr = [0u8; 12];
            loop {
                r.read_exact(&mut hdr).await?;
                let len = u32::from_le_bytes(hdr[8..12].try_into().expect("4 bytes"));
                if len == END_MARK {
                    break;
                }
                let mut rest = vec![0u8; (len as usize).saturating_sub(12)];
                r.read_exact(&mut rest).await?;
                let sent = u64::from_le_bytes(hdr[..8].try_into().expect("8 bytes"));
                let _ = tx.send(Seen::Message { at: Instant::now(), latency_ms: now_ns().saturating_sub(sent) as f64 / 1e6, len: len as usize });
            }
            if with_report {
                let messages = r.read_u64_le().await?;
                let bytes = r.read_u64_le().await?;
                let n = r.read_u64_le().await?.min(100_000_000) as usize;
                let mut latencies_ms = Vec::with_capacity(n);
                for i in 0..n {
                    latencies_ms.push(r.read_u64_le().await? as f64 / 1e3);
                    if i % REPORT_PROGRESS_EVERY == REPORT_PROGRESS_EVERY - 1 {
                        let _ = tx.send(Seen::Reporting);
                    }
                }
                let _ = tx.send(Seen::Report(Received { messages, bytes, latencies_ms }));
            }
            let mut sink = vec![0u8; 16 * 1024];
            while r.read(&mut sink).await? > 0 {}
            Ok(())
        }
        .await;
        let _ = res;
    });
    rx
}

/// Counts the messages that arrived before `until`.
async fn collect(rx: &mut mpsc::UnboundedReceiver<Seen>, until: Instant) -> Received {
    let mut rec = Received::default();
    loop {
        match tokio::time::timeout_at(until.into(), rx.recv()).await {
            Ok(Some(Seen::Message { at, latency_ms, len })) if at < until => {
                rec.messages += 1;
                rec.bytes += len as u64;
                rec.latencies_ms.push(latency_ms);
            }
            Ok(Some(Seen::Message { .. })) | Ok(Some(Seen::Reporting)) => {}
            Ok(Some(Seen::Report(_))) | Ok(None) | Err(_) => return rec,
        }
    }
}

crate::choice! {
    /// What a message's offer time is: its place in the rate's schedule,
    /// or the moment its write starts.
    #[derive(Default)]
    pub enum Stamp { #[default] Schedule = "schedule", Send = "send" }
}

/// The request's first byte: the direction, with the top bit set when
/// messages are stamped as they are sent.
const SEND_STAMP_BIT: u8 = 0x80;
/// … and this one when the server's own offer follows the duration.
const DOWN_OFFER_BIT: u8 = 0x40;

/// Offers messages at `rate_bps` until `until`, then writes the end mark.
/// Returns how many were offered and the writer.
async fn generate<W: AsyncWrite + Unpin>(mut w: W, size: u32, rate_bps: f64, until: Instant, stamp: Stamp) -> Result<(u64, W)> {
    let interval = Duration::from_secs_f64(size as f64 * 8.0 / rate_bps);
    let payload = crate::page::filler(size as usize);
    let start = Instant::now();
    let wall0 = now_ns();
    let mut k: u64 = 0;
    loop {
        let offset = interval.mul_f64(k as f64);
        let due = start + offset;
        if due >= until {
            break;
        }
        tokio::time::sleep_until(due.into()).await;
        // The offer time is the schedule's, so time spent blocked in write
        // counts as latency, or the write's start. A message once started
        // is written whole.
        let offered = match stamp {
            Stamp::Schedule => wall0 + offset.as_nanos() as u64,
            Stamp::Send => now_ns(),
        };
        let mut m = payload.clone();
        m[..8].copy_from_slice(&offered.to_le_bytes());
        m[8..12].copy_from_slice(&size.to_le_bytes());
        w.write_all(&m).await?;
        k += 1;
    }
    end_mark(&mut w).await?;
    Ok((k, w))
}

async fn end_mark<W: AsyncWrite + Unpin>(w: &mut W) -> std::io::Result<()> {
    let mut hdr = [0u8; 12];
    hdr[8..12].copy_from_slice(&END_MARK.to_le_bytes());
    w.write_all(&hdr).await?;
    w.flush().await
}

async fn write_report<W: AsyncWrite + Unpin>(w: &mut W, rec: &Received) -> std::io::Result<()> {
    w.write_u64_le(rec.messages).await?;
    w.write_u64_le(rec.bytes).await?;
    w.write_u64_le(rec.latencies_ms.len() as u64).await?;
    for l in &rec.latencies_ms {
        w.write_u64_le((l * 1e3).round() as u64).await?;
    }
    w.flush().await
}

/// The server side of one session, on any byte stream.
async fn session<R, W>(mut r: R, w: W) -> Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let first = r.read_u8().await?;
    let (dir, stamp) = (first & !(SEND_STAMP_BIT | DOWN_OFFER_BIT), if first & SEND_STAMP_BIT != 0 { Stamp::Send } else { Stamp::Schedule });
    let mut size = r.read_u32_le().await?;
    let mut rate = r.read_f64_le().await?;
    let dur = Duration::from_millis(r.read_u32_le().await? as u64);
    if first & DOWN_OFFER_BIT != 0 {
        size = r.read_u32_le().await?;
        rate = r.read_f64_le().await?;
    }
    if size < MIN_SIZE || !(rate > 0.0 && rate.is_finite()) {
        return Err(WorkError::BadMessage("messages request"));
    }
    let until = Instant::now() + dur;
    let mut rx = spawn_reader(r, false);
    let sender = tokio::spawn(async move {
        if dir != 1 {
            generate(w, size, rate, until, stamp).await.map(|x| x.1)
        } else {
            tokio::time::sleep_until(until.into()).await;
            let mut w = w;
            end_mark(&mut w).await?;
            Ok(w)
        }
    });
    let rec = if dir != 0 { collect(&mut rx, until).await } else { Received::default() };
    let mut w = sender.await??;
    write_report(&mut w, &rec).await?;
    w.shutdown().await?;
    // Let the reader drain the client's end until it closes.
    let _ = tokio::time::timeout(Duration::from_secs(300), async { while rx.recv().await.is_some() {} }).await;
    Ok(())
}

pub async fn serve(listener: TcpListener, nagle: bool) -> Result<()> {
    loop {
        let (s, _) = listener.accept().await?;
        let _ = s.set_nodelay(!nagle);
        let (r, w) = s.into_split();
        tokio::spawn(async move {
            let _ = session(r, w).await;
        });
    }
}

pub async fn serve_quic(ep: quinn::Endpoint) -> Result<()> {
    while let Some(incoming) = ep.accept().await {
        tokio::spawn(async move {
            let r: Result<()> = async {
                let conn = incoming.await?;
                let (w, r) = conn.accept_bi().await?;
                session(r, w).await?;
                let _ = tokio::time::timeout(Duration::from_secs(30), conn.closed()).await;
                Ok(())
            }
            .await;
            let _ = r;
        });
    }
    Ok(())
}

crate::choice! {
    /// Which way messages flow: server → client, client → server, or both.
    pub enum Direction { Down = "down", Up = "up", Both = "both" }
}

/// Runs the test `spec` against `server`.
pub async fn run(server: SocketAddr, spec: &Spec, quic: &QuicKnobs) -> Result<MessagesResult> {
    let offer = spec.offer.check()?;
    let down = spec.down.map(Offer::check).transpose()?;
    if down.is_some() && spec.direction != Direction::Both {
        return Err(WorkError::Param("the ground's own offer (down size and rate) is for messages both ways at once"));
    }
    let dir: u8 = match spec.direction {
        Direction::Down => 0,
        Direction::Up => 1,
        Direction::Both => 2,
    };
    let flags = if spec.stamp == Stamp::Send { SEND_STAMP_BIT } else { 0 } | if down.is_some() { DOWN_OFFER_BIT } else { 0 };
    let mut hello = vec![dir | flags];
    hello.extend_from_slice(&offer.size.to_le_bytes());
    hello.extend_from_slice(&offer.rate_bps.to_le_bytes());
    hello.extend_from_slice(&(spec.duration.as_millis() as u32).to_le_bytes());
    if let Some(d) = down {
        hello.extend_from_slice(&d.size.to_le_bytes());
        hello.extend_from_slice(&d.rate_bps.to_le_bytes());
    }
    let (offered, rx_down, up) = match spec.transport {
        Transport::Tcp => {
            let mut s = TcpStream::connect(server).await?;
            s.set_nodelay(!spec.nagle)?;
            s.write_all(&hello).await?;
            let (r, w) = s.into_split();
            client(r, w, dir, spec).await?
        }
        Transport::Quic => {
            let ep = crate::quic::client_endpoint(server, quic, &[ALPN])?;
            let conn = ep.connect(server, crate::tls::SERVER_NAME)?.await?;
            let (mut w, r) = conn.open_bi().await?;
            w.write_all(&hello).await?;
            let out = client(r, w, dir, spec).await?;
            conn.close(0u32.into(), b"done");
            ep.wait_idle().await;
            out
        }
    };
    Ok(MessagesResult {
        transport: spec.transport.to_string(),
        size_bytes: offer.size,
        offered_bps: offer.rate_bps,
        down_offer: down,
        duration_s: spec.duration.as_secs_f64(),
        direction: spec.direction.to_string(),
        offered_messages: offered,
        down: rx_down,
        up,
    })
}

async fn client<R, W>(r: R, w: W, dir: u8, spec: &Spec) -> Result<(u64, Option<Received>, Option<Received>)>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (offer, stamp, duration) = (spec.offer, spec.stamp, spec.duration);
    let until = Instant::now() + duration;
    let mut rx = spawn_reader(r, true);
    let sender = tokio::spawn(async move {
        if dir != 0 {
            generate(w, offer.size, offer.rate_bps, until, stamp).await
        } else {
            tokio::time::sleep_until(until.into()).await;
            let mut w = w;
            end_mark(&mut w).await?;
            Ok((0, w))
        }
    });
    let down = if dir != 1 { Some(collect(&mut rx, until).await) } else { None };
    let (mut offered, mut w) = sender.await??;
    // Half-close: the server reads to our end before closing.
    let _ = w.shutdown().await;
    if dir == 0 {
        offered = (duration.as_secs_f64() * offer.rate_bps / (offer.size as f64 * 8.0)).ceil() as u64;
    }
    // Queues drain once the senders stop; on a slow link that takes as
    // long as it takes (120 s of 8 kbit/s through 2.4 kbit/s is minutes),
    // so give up only when nothing has come for DRAIN_IDLE.
    let report = loop {
        match tokio::time::timeout(DRAIN_IDLE, rx.recv()).await {
            Ok(Some(Seen::Report(r))) => break r,
            Ok(Some(Seen::Message { .. })) | Ok(Some(Seen::Reporting)) => continue,
            Ok(None) => return Err(WorkError::Closed("the connection without a report")),
            Err(_) => return Err(WorkError::Timeout { what: "report from the server, nor any message,", after: DRAIN_IDLE }),
        }
    };
    Ok((offered, down, (dir != 0).then_some(report)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offer times `generate` writes when its reader takes one message
    /// every `read_every` while the rate offers one every 10 ms.
    async fn stamps(stamp: Stamp, read_every: Duration) -> Vec<u64> {
        // Room for one 64-byte message: the writer blocks until it is read.
        let (w, mut r) = tokio::io::duplex(64);
        let until = Instant::now() + Duration::from_millis(300);
        let gen = tokio::spawn(async move { generate(w, 64, 64.0 * 8.0 * 100.0, until, stamp).await.map(|_| ()) });
        let mut out = Vec::new();
        let mut m = [0u8; 64];
        loop {
            tokio::time::sleep(read_every).await;
            r.read_exact(&mut m[..12]).await.expect("a header");
            if u32::from_le_bytes(m[8..12].try_into().expect("4 bytes")) == END_MARK {
                break;
            }
            r.read_exact(&mut m[12..]).await.expect("a payload");
            out.push(u64::from_le_bytes(m[..8].try_into().expect("8 bytes")));
        }
        gen.await.expect("joined").expect("generated");
        out
    }

    #[tokio::test]
    async fn schedule_stamps_keep_the_rate_and_send_stamps_wait_for_room() {
        // Read every 40 ms, four times slower than offered: the writer is
        // blocked most of the time.
        let slow = Duration::from_millis(40);
        let sched = stamps(Stamp::Schedule, slow).await;
        assert!(sched.len() >= 5, "{} messages", sched.len());
        for (k, t) in sched.iter().enumerate() {
            // Exactly k intervals after the first, however long the writes took.
            assert_eq!(t - sched[0], k as u64 * 10_000_000, "message {k}");
        }
        let sent = stamps(Stamp::Send, slow).await;
        assert!(sent.len() >= 5, "{} messages", sent.len());
        // Each stamp is taken once the previous message found room, so
        // stamps follow the reader's 40 ms pace, not the 10 ms offer. A busy
        // machine can hold the writer's thread back now and then and bring
        // one stamp closer to the next, so judge the median gap (the
        // schedule's are all 10 ms).
        let mut gaps: Vec<u64> = sent.windows(2).skip(1).map(|w| w[1] - w[0]).collect();
        gaps.sort_unstable();
        let median = gaps[gaps.len() / 2];
        assert!(median >= 30_000_000, "median gap {} ms between send stamps: {gaps:?}", median as f64 / 1e6);
    }

    /// Both ways at once with the ground's own offer: each side sends its
    /// own size at its own rate (loopback: everything offered arrives).
    #[tokio::test]
    async fn the_ground_offers_its_own_size_and_rate() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("an address");
        tokio::spawn(serve(listener, false));
        let spec = Spec {
            transport: Transport::Tcp,
            direction: Direction::Both,
            offer: Offer { size: 96, rate_bps: 96.0 * 8.0 * 50.0 },
            down: Some(Offer { size: 32, rate_bps: 32.0 * 8.0 * 20.0 }),
            duration: Duration::from_millis(1000),
            nagle: false,
            stamp: Stamp::Schedule,
        };
        let r = run(addr, &spec, &QuicKnobs::default()).await.expect("a result");
        let (up, down) = (r.up.expect("up"), r.down.expect("down"));
        assert_eq!(up.bytes, up.messages * 96);
        assert_eq!(down.bytes, down.messages * 32);
        // 50 and 20 a second for 1 s, less any still in flight at the end
        // (or written late by a busy machine).
        assert!((40..=50).contains(&up.messages), "{} up", up.messages);
        assert!((15..=20).contains(&down.messages), "{} down", down.messages);
        assert_eq!(r.down_offer, spec.down);
        // One way only, a ground offer is refused before anything is sent.
        let one_way = Spec { direction: Direction::Up, ..spec };
        assert!(run(addr, &one_way, &QuicKnobs::default()).await.is_err());
    }
}
