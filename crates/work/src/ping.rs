//! The ping workload: Debian's `ping` (iputils) from the client to the
//! server, COUNT echo requests of SIZE bytes every INTERVAL, each reply's
//! round-trip time as the kernel's ICMP stack saw it. Seed 004 measured
//! its Iridium channels this way (Ir-Ir 3.1 ± 1.8 s, Ir-POTS 1.2 ± 0.4 s),
//! seed 002 its L-DACS RTT per segment size (Table 6), seed 000 its
//! flights (one ping every 2 s).
//!
//! A request that gets no reply before ping gives up (`--wait` after the
//! last request) counts as lost; replies are matched by sequence number,
//! so a duplicate is counted once.

use crate::error::{Result, WorkError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

/// The largest ICMP echo payload over IPv4 (65535 − 20 − 8).
pub const MAX_SIZE: u32 = 65_507;

/// What a ping run saw.
#[derive(Debug, Clone, Serialize, PartialEq)]
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
}

/// The round-trip time of one reply line of iputils' ping
/// (`64 bytes from 198.18.0.2: icmp_seq=3 ttl=64 time=612 ms`), with its
/// sequence number.
pub fn reply(line: &str) -> Option<(u32, f64)> {
    let seq = line.split("icmp_seq=").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    let ms = line.split("time=").nth(1)?.split_whitespace().next()?.parse::<f64>().ok()?;
    Some((seq, ms))
}

/// The replies in ping's output, once per sequence number, in order.
pub fn replies(text: &str) -> Vec<f64> {
    let by_seq: BTreeMap<u32, f64> = text.lines().filter_map(reply).fold(BTreeMap::new(), |mut m, (seq, ms)| {
        m.entry(seq).or_insert(ms);
        m
    });
    by_seq.into_values().collect()
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
    // replies); ping stops early once every request is answered.
    let deadline = interval.as_secs_f64() * count as f64 + wait.as_secs_f64();
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
    let rtts_ms = replies(&text);
    Ok(PingResult { sent: count, received: rtts_ms.len() as u32, size_bytes: size, interval_ms: interval.as_secs_f64() * 1e3, rtts_ms })
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
        assert_eq!(replies(text), vec![612.0, 3105.5]);
        assert_eq!(reply("64 bytes from 2001:2::2: icmp_seq=12 ttl=64 time=0.043 ms"), Some((12, 0.043)));
        assert_eq!(reply("From 198.18.0.1 icmp_seq=2 Destination Host Unreachable"), None);
    }
}
