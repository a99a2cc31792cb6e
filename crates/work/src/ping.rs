//! The ping workload: Debian's `ping` (iputils) from the client to the
//! server, COUNT echo requests of SIZE bytes every INTERVAL, each reply's
//! round-trip time as the kernel's ICMP stack saw it. Seed 004 measured
//! its Iridium channels this way (Ir-Ir 3.1 ± 1.8 s, Ir-POTS 1.2 ± 0.4 s),
//! seed 002 its L-DACS RTT per segment size (Table 6), seed 000 its
//! flights (one ping every 2 s).
//!
//! A request that gets no reply before ping gives up (`--wait` after the
//! last request) counts as lost; replies are matched by sequence number,
//! so a duplicate is counted once. With a deadline (`-w`) iputils' ping
//! keeps sending past COUNT until COUNT replies have come (its manual:
//! "ping does not stop after count packets are sent"), so only the
//! replies to the first COUNT requests are kept: lost ones are not made
//! up by later requests. (Before 2026-11-27 they were, and a run's loss
//! was understated; RTTs were not affected.) Requests ping never sent
//! (its deadline came first, on a host too busy to pace at INTERVAL) are
//! not counted as sent: `sent` is what ping reports it transmitted, at
//! most COUNT. (Before 2026-11-27 they counted as lost; the deadline now
//! allows half as long again for sending.)

use crate::error::{Result, WorkError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

/// The largest ICMP echo payload over IPv4 (65535 − 20 − 8).
pub const MAX_SIZE: u32 = 65_507;

/// What a ping run saw.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PingResult {
    /// Echo requests sent.
    pub sent: u32,
    /// Requests answered (each once, duplicates dropped).
    pub received: u32,
    /// ICMP payload, bytes.
    pub size_bytes: u32,
    pub interval_ms: f64,
    /// The round-trip time of every answered request, in the order sent.
    pub rtts_ms: Vec<f64>,
    /// The sequence number of each answered request (`icmp_seq`, from 1),
    /// beside `rtts_ms`: which requests were lost, and when. (Empty in
    /// results stored before it was kept.)
    #[serde(default)]
    pub seqs: Vec<u32>,
}

impl PingResult {
    /// The share of requests lost in each whole window of `window_ms`
    /// from the first request (request `n` is sent at `(n − 1) ×
    /// interval`); a last, partial window is left out. Seed 000 §4.2 gives
    /// its flights' loss per 100 s window. Empty when the run is shorter
    /// than one window or the sequence numbers were not kept.
    pub fn loss_windows(&self, window_ms: f64) -> Vec<f64> {
        if self.seqs.len() != self.rtts_ms.len() || (self.seqs.is_empty() && self.received > 0) || self.interval_ms <= 0.0 {
            return Vec::new();
        }
        let whole = (self.sent as f64 * self.interval_ms / window_ms).floor() as usize;
        let mut sent = vec![0u32; whole];
        let mut answered = vec![0u32; whole];
        let window = |seq: u32| ((seq - 1) as f64 * self.interval_ms / window_ms).floor() as usize;
        for seq in 1..=self.sent {
            if let Some(n) = sent.get_mut(window(seq)) {
                *n += 1;
            }
        }
        for &seq in self.seqs.iter().filter(|s| (1..=self.sent).contains(*s)) {
            if let Some(n) = answered.get_mut(window(seq)) {
                *n += 1;
            }
        }
        sent.iter().zip(&answered).map(|(s, a)| (s - a) as f64 / *s as f64).collect()
    }
}

/// The round-trip time of one reply line of iputils' ping
/// (`64 bytes from 198.18.0.2: icmp_seq=3 ttl=64 time=612 ms`), with its
/// sequence number.
pub fn reply(line: &str) -> Option<(u32, f64)> {
    let seq = line.split("icmp_seq=").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    let ms = line.split("time=").nth(1)?.split_whitespace().next()?.parse::<f64>().ok()?;
    Some((seq, ms))
}

/// The replies in ping's output, once per sequence number, in order:
/// `(icmp_seq, ms)`. ICMP's sequence number has 16 bits: ping prints
/// 65535, then 0, 1, …; each printed number is taken as the request
/// nearest the last one read (replies come back in about the order sent),
/// so past 65535 requests they count on as 65536, 65537, ….
pub fn replies(text: &str) -> Vec<(u32, f64)> {
    let mut last: u64 = 0;
    let by_seq: BTreeMap<u32, f64> = text.lines().filter_map(reply).fold(BTreeMap::new(), |mut m, (seq, ms)| {
        let wraps = ((last as f64 - seq as f64) / 65_536.0).round().max(0.0) as u64;
        let seq = seq as u64 + wraps * 65_536;
        last = seq;
        m.entry(seq.min(u32::MAX as u64) as u32).or_insert(ms);
        m
    });
    by_seq.into_iter().collect()
}

/// Runs `ping` to `server`: `count` requests of `size` bytes, one every
/// `interval`, then waits up to `wait` for the last replies.
pub async fn run(server: IpAddr, count: u32, interval: Duration, size: u32, wait: Duration) -> Result<PingResult> {
    if count == 0 {
        return Err(WorkError::Param("ping: at least one request"));
    }
    if size > MAX_SIZE {
        return Err(WorkError::Param("ping: an ICMP payload is at most 65507 bytes"));
    }
    // -w: the whole run's deadline (sending, then waiting for the last
    // replies); ping stops early once COUNT replies have come. Half as long
    // again for sending: on a busy host ping paces slower than INTERVAL
    // (8 ms became ≈ 9 ms on the 2-core machine), and a deadline that
    // comes before the last requests are out would count them as lost.
    let deadline = interval.as_secs_f64() * count as f64 * 1.5 + wait.as_secs_f64();
    let out = tokio::process::Command::new("ping")
        .args(["-n", "-c", &count.to_string(), "-i", &format!("{:.3}", interval.as_secs_f64()), "-s", &size.to_string(), "-w", &format!("{}", deadline.ceil() as u64)])
        .arg(server.to_string())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| WorkError::Program { program: "ping", why: format!("cannot start it (Debian: apt-get install iputils-ping): {e}") })?;
    let text = String::from_utf8_lossy(&out.stdout);
    // Exit status 1 is "some requests unanswered": a result, not an error.
    if !out.status.success() && out.status.code() != Some(1) {
        return Err(WorkError::Program { program: "ping", why: format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()) });
    }
    // Requests never sent (the deadline came first) are not lost ones.
    let sent = transmitted(&text).map_or(count, |n| n.min(count));
    let (seqs, rtts_ms): (Vec<u32>, Vec<f64>) = replies(&text).into_iter().filter(|(seq, _)| (1..=sent).contains(seq)).unzip();
    Ok(PingResult { sent, received: rtts_ms.len() as u32, size_bytes: size, interval_ms: interval.as_secs_f64() * 1e3, rtts_ms, seqs })
}

/// The requests ping says it sent (`5000 packets transmitted, …`).
pub fn transmitted(text: &str) -> Option<u32> {
    text.lines().find_map(|l| l.split_once(" packets transmitted").and_then(|(n, _)| n.trim().parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_once_per_sequence_number() {
        let text = "PING 198.18.0.2 (198.18.0.2) 56(84) bytes of data.\n\
64 bytes from 198.18.0.2: icmp_seq=1 ttl=64 time=612 ms\n\
64 bytes from 198.18.0.2: icmp_seq=3 ttl=64 time=3105.5 ms\n\
64 bytes from 198.18.0.2: icmp_seq=3 ttl=64 time=3106 ms (DUP!)\n\
\n--- 198.18.0.2 ping statistics ---\n4 packets transmitted, 2 received, +1 duplicates, 50% packet loss, time 3004ms\n";
        assert_eq!(replies(text), vec![(1, 612.0), (3, 3105.5)]);
        assert_eq!(transmitted(text), Some(4));
        // Past 65535 the printed number starts again at 0; a late reply
        // from before the wrap still counts as its own request.
        let lines = |seqs: &[u32]| seqs.iter().map(|s| format!("48 bytes from 198.18.0.2: icmp_seq={s} ttl=64 time=1 ms\n")).collect::<String>();
        let got: Vec<u32> = replies(&lines(&[65_534, 65_535, 0, 65_533, 1, 2])).into_iter().map(|r| r.0).collect();
        assert_eq!(got, vec![65_533, 65_534, 65_535, 65_536, 65_537, 65_538]);
        let got: Vec<u32> = replies(&lines(&[1, 2, 5, 3, 30_000, 4])).into_iter().map(|r| r.0).collect();
        assert_eq!(got, vec![1, 2, 3, 4, 5, 30_000], "late replies below 65536 are not wrapped");
        assert_eq!(transmitted("PING 198.18.0.2 (198.18.0.2) 56(84) bytes of data.\n"), None);
        assert_eq!(reply("64 bytes from 2001:2::2: icmp_seq=12 ttl=64 time=0.043 ms"), Some((12, 0.043)));
        assert_eq!(reply("From 198.18.0.1 icmp_seq=2 Destination Host Unreachable"), None);
    }

    #[test]
    fn loss_is_counted_per_whole_window_from_the_first_request() {
        // 125 requests every 2 s: windows of 100 s hold 50 each, two whole
        // windows; the last 25 requests (a partial window) are left out.
        let lost = [3u32, 4, 60, 120];
        let seqs: Vec<u32> = (1..=125).filter(|s| !lost.contains(s)).collect();
        let r = PingResult { sent: 125, received: seqs.len() as u32, size_bytes: 56, interval_ms: 2000.0, rtts_ms: vec![600.0; seqs.len()], seqs };
        assert_eq!(r.loss_windows(100_000.0), vec![2.0 / 50.0, 1.0 / 50.0]);
        // Shorter than a window: none.
        assert!(r.loss_windows(1_000_000.0).is_empty());
        // A result stored before the sequence numbers were kept: none.
        let old = PingResult { seqs: vec![], ..r };
        assert!(old.loss_windows(100_000.0).is_empty());
    }
}
