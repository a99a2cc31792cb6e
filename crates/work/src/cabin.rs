//! `cabin`: passengers behind one aircraft link, each downloading (or
//! sending, `up`) the same number of bytes over kernel TCP at once, each
//! from its own address (the lab's `$AEROLINK_PASSENGERS`, `run
//! --passengers`) — and, where each passenger is a namespace of its own
//! (`run --passengers-as namespaces`, `$AEROLINK_PASSENGER_NETNS`), from a
//! socket made in that namespace. What a capacity
//! question needs: how long the median and the slowest passenger wait,
//! the link's total goodput, and how evenly it was shared (Jain's index).

use std::net::{IpAddr, SocketAddr};

use serde::{Deserialize, Serialize};

use crate::bulk::{self, Direction, TcpClient};
use crate::error::{Result, WorkError};

/// The lab's passenger addresses (`run --passengers`), IPv4 or IPv6.
pub const ENV: &str = "AEROLINK_PASSENGERS";
pub const ENV_V6: &str = "AEROLINK_PASSENGERS_V6";
/// The passengers' own namespaces, in the same order, where they have one.
pub const NETNS_ENV: &str = "AEROLINK_PASSENGER_NETNS";

/// One passenger's download.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Passenger {
    pub address: String,
    pub completion_ms: f64,
    pub goodput_bps: f64,
}

/// What the cabin saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CabinResult {
    pub passengers: Vec<Passenger>,
    pub bytes_each: u64,
    /// The median passenger's completion time, ms.
    pub completion_ms_median: f64,
    /// The slowest passenger's, ms.
    pub completion_ms_max: f64,
    /// Every passenger's bytes over the slowest one's time.
    pub goodput_bps: f64,
    /// Jain's fairness index over the passengers' goodputs (1: equal).
    pub jain: f64,
}

/// The first `n` passenger addresses of the lab (from `$AEROLINK_PASSENGERS`
/// or its `_V6`, as the server's family asks), or an error saying why not.
pub fn addresses(text: Option<&str>, n: u16, var: &str) -> std::result::Result<Vec<IpAddr>, String> {
    let text = text.ok_or_else(|| format!("${var} is not set: run inside a lab with passengers (`aerolink run --passengers N`)"))?;
    let all: Vec<IpAddr> = text.split_whitespace().map(|a| a.parse().map_err(|_| format!("${var}: {a:?} is not an address"))).collect::<std::result::Result<_, _>>()?;
    if all.len() < n as usize {
        return Err(format!("${var} has {} passengers, {n} asked", all.len()));
    }
    Ok(all[..n as usize].to_vec())
}

/// The first `n` passengers' namespaces, open (`/run/netns/NAME`), from
/// `$AEROLINK_PASSENGER_NETNS`; none where it is not set (passengers are
/// addresses of this host).
pub fn namespaces(text: Option<&str>, n: u16) -> std::result::Result<Vec<std::fs::File>, String> {
    let Some(text) = text else { return Ok(Vec::new()) };
    let names: Vec<&str> = text.split_whitespace().collect();
    if names.len() < n as usize {
        return Err(format!("${NETNS_ENV} has {} namespaces, {n} asked", names.len()));
    }
    names[..n as usize].iter().map(|name| std::fs::File::open(format!("/run/netns/{name}")).map_err(|e| format!("${NETNS_ENV}: /run/netns/{name}: {e}"))).collect()
}

/// Jain's fairness index of `x`: (Σx)² / (n Σx²); 1 when all are equal.
pub fn jain(x: &[f64]) -> f64 {
    let (s, s2) = x.iter().fold((0.0, 0.0), |(a, b), v| (a + v, b + v * v));
    if s2 > 0.0 {
        s * s / (x.len() as f64 * s2)
    } else {
        1.0
    }
}

/// Each address in `from` moves `bytes` to or from the bulk server at once;
/// from a socket in its namespace where `netns` (open namespace files, in
/// the same order) has one.
pub async fn run(server: SocketAddr, from: &[IpAddr], netns: &[std::fs::File], direction: Direction, bytes: u64, client: TcpClient) -> Result<CabinResult> {
    use std::os::fd::AsRawFd;
    let tasks: Vec<_> = from
        .iter()
        .enumerate()
        .map(|(k, &ip)| {
            let netns = netns.get(k).map(|f| f.as_raw_fd());
            tokio::spawn(bulk::tcp(server, direction, bytes, TcpClient { bind: Some(ip), netns, ..client }))
        })
        .collect();
    let mut passengers = Vec::new();
    for (t, ip) in tasks.into_iter().zip(from) {
        let r = t.await.map_err(|e| WorkError::Io(std::io::Error::other(format!("passenger {ip}: {e}"))))??;
        passengers.push(Passenger { address: ip.to_string(), completion_ms: r.completion_ms, goodput_bps: r.goodput_bps });
    }
    let mut times: Vec<f64> = passengers.iter().map(|p| p.completion_ms).collect();
    times.sort_by(f64::total_cmp);
    let median = if times.is_empty() { 0.0 } else { (times[(times.len() - 1) / 2] + times[times.len() / 2]) / 2.0 };
    let max = times.last().copied().unwrap_or(0.0);
    let goodputs: Vec<f64> = passengers.iter().map(|p| p.goodput_bps).collect();
    let total = bytes as f64 * passengers.len() as f64 * 8.0;
    Ok(CabinResult { bytes_each: bytes, completion_ms_median: median, completion_ms_max: max, goodput_bps: if max > 0.0 { total / (max / 1e3) } else { 0.0 }, jain: jain(&goodputs), passengers })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_fairness() {
        assert_eq!(addresses(Some("198.18.0.11 198.18.0.12"), 1, ENV).unwrap(), vec!["198.18.0.11".parse::<IpAddr>().unwrap()]);
        assert!(addresses(None, 1, ENV).unwrap_err().contains("--passengers"));
        assert!(addresses(Some("198.18.0.11"), 2, ENV).unwrap_err().contains("1 passengers, 2 asked"));
        assert!(addresses(Some("x"), 1, ENV).unwrap_err().contains("not an address"));
        assert_eq!(jain(&[2.0, 2.0, 2.0]), 1.0);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
    }
}
