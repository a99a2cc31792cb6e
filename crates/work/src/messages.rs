//! The messages workload (seed 004's generator): messages of M bytes —
//! timestamp, length, random payload — offered at R bit/s for T seconds,
//! one way or both ways at once, over kernel TCP.
//!
//! Each message carries the time it was offered (CLOCK_REALTIME, which both
//! namespaces share), so latency = receive time − offer time includes the
//! time it waited in the sender's buffers, as in the seed. Throughput =
//! bytes delivered within the test time / test time.
//!
//! Wire: the client sends `dir: u8` (0 down, 1 up, 2 both), `size: u32`,
//! `rate_bps: f64`, `duration_ms: u32`. At the end the server sends what it
//! received (count, bytes, then each latency in µs as u64).

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

pub const MIN_SIZE: u32 = 12;

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Received {
    pub messages: u64,
    pub bytes: u64,
    /// Each delivered message's latency, ms, in arrival order.
    pub latencies_ms: Vec<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MessagesResult {
    pub size_bytes: u32,
    pub offered_bps: f64,
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

/// Marks the end of the messages: what follows is the receiver's report.
const END_MARK: u32 = u32::MAX;

/// Offers messages at `rate_bps` until `until`; returns how many, and the
/// writer back.
async fn generate(mut w: OwnedWriteHalf, size: u32, rate_bps: f64, until: Instant) -> anyhow::Result<(u64, OwnedWriteHalf)> {
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
        // counts as latency.
        let offered = wall0 + offset.as_nanos() as u64;
        let mut m = payload.clone();
        m[..8].copy_from_slice(&offered.to_le_bytes());
        m[8..12].copy_from_slice(&size.to_le_bytes());
        // A message once started is written whole (cutting it would break
        // the framing); if it ends after the test, the receiver, which
        // stops counting at the end, will not count it.
        w.write_all(&m).await?;
        k += 1;
    }
    Ok((k, w))
}

/// Reads one frame: `Some((offer time, length))` for a message, `None` for
/// the end mark.
async fn read_frame(r: &mut OwnedReadHalf) -> std::io::Result<Option<(u64, usize)>> {
    let mut hdr = [0u8; 12];
    r.read_exact(&mut hdr).await?;
    let len = u32::from_le_bytes(hdr[8..12].try_into().expect("4 bytes"));
    if len == END_MARK {
        return Ok(None);
    }
    let mut rest = vec![0u8; (len as usize).saturating_sub(12)];
    r.read_exact(&mut rest).await?;
    Ok(Some((u64::from_le_bytes(hdr[..8].try_into().expect("8 bytes")), len as usize)))
}

/// Receives messages until `until`. Only the wait for a frame's first
/// byte obeys the deadline: a frame once begun is read whole (cancelling it
/// halfway would lose the framing), and counted only if it completed in
/// time.
async fn absorb(mut r: OwnedReadHalf, until: Instant) -> (Received, OwnedReadHalf, bool) {
    let mut rec = Received::default();
    loop {
        match tokio::time::timeout_at(until.into(), r.readable()).await {
            Ok(Ok(())) => {}
            _ => return (rec, r, false),
        }
        match read_frame(&mut r).await {
            Ok(Some((sent, len))) => {
                if Instant::now() >= until {
                    return (rec, r, false);
                }
                rec.messages += 1;
                rec.bytes += len as u64;
                rec.latencies_ms.push(now_ns().saturating_sub(sent) as f64 / 1e6);
            }
            Ok(None) => return (rec, r, true),
            Err(_) => return (rec, r, false),
        }
    }
}

async fn write_report(w: &mut OwnedWriteHalf, rec: &Received) -> anyhow::Result<()> {
    let mut hdr = [0u8; 12];
    hdr[8..12].copy_from_slice(&END_MARK.to_le_bytes());
    w.write_all(&hdr).await?;
    w.write_u64_le(rec.messages).await?;
    w.write_u64_le(rec.bytes).await?;
    w.write_u64_le(rec.latencies_ms.len() as u64).await?;
    for l in &rec.latencies_ms {
        w.write_u64_le((l * 1e3).round() as u64).await?;
    }
    w.flush().await?;
    Ok(())
}

/// Skips messages still in flight after the test, then reads the report.
async fn read_report(r: &mut OwnedReadHalf, mark_seen: bool) -> anyhow::Result<Received> {
    if !mark_seen {
        while read_frame(r).await?.is_some() {}
    }
    let messages = r.read_u64_le().await?;
    let bytes = r.read_u64_le().await?;
    let n = r.read_u64_le().await? as usize;
    anyhow::ensure!(n < 100_000_000, "bad report");
    let mut latencies_ms = Vec::with_capacity(n);
    for _ in 0..n {
        latencies_ms.push(r.read_u64_le().await? as f64 / 1e3);
    }
    Ok(Received { messages, bytes, latencies_ms })
}

pub async fn serve(listener: TcpListener, nagle: bool) -> anyhow::Result<()> {
    loop {
        let (mut s, _) = listener.accept().await?;
        let _ = s.set_nodelay(!nagle);
        tokio::spawn(async move {
            let r: anyhow::Result<()> = async {
                let dir = s.read_u8().await?;
                let size = s.read_u32_le().await?;
                let rate = s.read_f64_le().await?;
                let dur = Duration::from_millis(s.read_u32_le().await? as u64);
                anyhow::ensure!(size >= MIN_SIZE && rate > 0.0, "bad request");
                let until = Instant::now() + dur;
                let (r, w) = s.into_split();
                let (rec, mut r, mut w) = if dir == 1 {
                    let (rec, r, _) = absorb(r, until).await;
                    (Some(rec), r, w)
                } else {
                    let sender = tokio::spawn(generate(w, size, rate, until));
                    let (rec, r) = if dir == 2 {
                        let (rec, r, _) = absorb(r, until).await;
                        (Some(rec), r)
                    } else {
                        (None, r)
                    };
                    (rec, r, sender.await??.1)
                };
                // The report also ends the down stream for the client.
                write_report(&mut w, &rec.unwrap_or_default()).await?;
                // Read what the client still sends until it closes: closing
                // with unread data would reset the connection and lose the
                // report on its way.
                let mut sink = vec![0u8; 16 * 1024];
                let _ = tokio::time::timeout(Duration::from_secs(300), async {
                    while r.read(&mut sink).await.map(|n| n > 0).unwrap_or(false) {}
                })
                .await;
                Ok(())
            }
            .await;
            let _ = r;
        });
    }
}
/// Runs the generator against `server`.
pub async fn run(server: SocketAddr, direction: &str, size: u32, rate_bps: f64, duration: Duration, nagle: bool) -> anyhow::Result<MessagesResult> {
    anyhow::ensure!(size >= MIN_SIZE, "messages must be at least {MIN_SIZE} bytes (timestamp + length)");
    anyhow::ensure!(rate_bps > 0.0, "the offered rate must be positive");
    let dir: u8 = match direction {
        "down" => 0,
        "up" => 1,
        "both" => 2,
        other => anyhow::bail!("direction {other:?}: expected down, up or both"),
    };
    let mut s = TcpStream::connect(server).await?;
    s.set_nodelay(!nagle)?;
    s.write_u8(dir).await?;
    s.write_u32_le(size).await?;
    s.write_f64_le(rate_bps).await?;
    s.write_u32_le(duration.as_millis() as u32).await?;
    let until = Instant::now() + duration;
    let (r, w) = s.into_split();
    let sender = if dir != 0 { Some(tokio::spawn(generate(w, size, rate_bps, until))) } else { None };
    let (down, mut r, mark_seen) = if dir != 1 {
        let (rec, r, m) = absorb(r, until).await;
        (Some(rec), r, m)
    } else {
        (None, r, false)
    };
    let offered = match sender {
        Some(h) => {
            let (k, mut w) = h.await??;
            // Half-close: the server reads to our end before closing.
            let _ = w.shutdown().await;
            k
        }
        None => (duration.as_secs_f64() * rate_bps / (size as f64 * 8.0)).ceil() as u64,
    };
    // Queues drain in bounded time once the senders stop.
    let report = tokio::time::timeout(Duration::from_secs(300), read_report(&mut r, mark_seen)).await.map_err(|_| anyhow::anyhow!("no report from the server within 300 s"))??;
    Ok(MessagesResult {
        size_bytes: size,
        offered_bps: rate_bps,
        duration_s: duration.as_secs_f64(),
        direction: direction.into(),
        offered_messages: offered,
        down,
        up: (dir != 0).then_some(report),
    })
}
