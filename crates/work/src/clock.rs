//! Wall-clock time stamped into messages. Client and server run in
//! different network namespaces of the same host and share CLOCK_REALTIME,
//! so receive time − send time is a one-way latency.

use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}
