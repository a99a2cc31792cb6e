//! Mahimahi delivery-opportunity traces, read exactly as Mahimahi reads them.
//!
//! Each line is a time in milliseconds at which the link may deliver one
//! 1504-byte opportunity; the trace repeats with a period equal to its last
//! timestamp. Bytes of an opportunity can serve several small packets, a
//! packet can span several opportunities, and an opportunity nobody is
//! waiting for is lost. Existing Mahimahi trace files work unchanged.

use super::Server;
use crate::time::{Duration, Instant};

/// Bytes per delivery opportunity, as in Mahimahi.
pub const OPPORTUNITY_BYTES: u32 = 1504;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TraceError {
    /// A line is not a whole number of milliseconds.
    #[error("line {line}: expected a whole number of milliseconds, got {text:?}")]
    BadLine { line: usize, text: String },
    /// Timestamps went backwards.
    #[error("line {line}: timestamps must not decrease")]
    Decreasing { line: usize },
    /// The trace is empty or its period is zero.
    #[error("the trace has no opportunities or its last timestamp is 0")]
    Empty,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MahimahiTrace {
    /// Opportunity times within one period.
    times: Vec<Duration>,
    period: Duration,
    overhead_bytes: u32,
    /// Index of the current opportunity (across periods).
    cursor: u64,
    /// Bytes left in the current opportunity; 0 means it is used up.
    left: u32,
}

/// The latest time a trace may give, ms (100 days: a trace is minutes).
const MAX_MS: u64 = 100 * 24 * 3600 * 1000;

impl MahimahiTrace {
    pub fn parse(text: &str, overhead_bytes: u32) -> Result<Self, TraceError> {
        let mut times = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let t = raw.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let ms: u64 = t.parse().ok().filter(|ms| *ms <= MAX_MS).ok_or_else(|| TraceError::BadLine { line: i + 1, text: t.to_string() })?;
            if let Some(last) = times.last() {
                if Duration::from_millis(ms) < *last {
                    return Err(TraceError::Decreasing { line: i + 1 });
                }
            }
            times.push(Duration::from_millis(ms));
        }
        let period = *times.last().ok_or(TraceError::Empty)?;
        if period == Duration::ZERO {
            return Err(TraceError::Empty);
        }
        Ok(MahimahiTrace { times, period, overhead_bytes, cursor: 0, left: OPPORTUNITY_BYTES })
    }

    fn time_of(&self, idx: u64) -> Instant {
        let n = self.times.len() as u64;
        Instant((idx / n) * self.period.0 + self.times[(idx % n) as usize].0)
    }

    /// Moves the cursor to the first opportunity at or after `t`.
    fn skip_to(&mut self, t: Instant) {
        if self.time_of(self.cursor) >= t {
            return;
        }
        let n = self.times.len() as u64;
        // Jump whole periods first so that a long idle gap costs nothing.
        let periods = t.0 / self.period.0;
        let base = periods * n;
        if base > self.cursor {
            self.cursor = base;
        }
        while self.time_of(self.cursor) < t {
            self.cursor += 1;
        }
        self.left = OPPORTUNITY_BYTES;
    }

    /// Average capacity over one period.
    pub fn mean_bps(&self) -> f64 {
        self.times.len() as f64 * OPPORTUNITY_BYTES as f64 * 8.0 / self.period.as_secs_f64()
    }
}

impl Server for MahimahiTrace {
    fn finish(&mut self, start: Instant, bytes: u32) -> Instant {
        let mut need = bytes + self.overhead_bytes;
        if self.left == 0 {
            self.cursor += 1;
            self.left = OPPORTUNITY_BYTES;
        }
        self.skip_to(start);
        loop {
            let take = need.min(self.left);
            need -= take;
            self.left -= take;
            if need == 0 {
                return self.time_of(self.cursor);
            }
            self.cursor += 1;
            self.left = OPPORTUNITY_BYTES;
        }
    }
    fn capacity_bps(&self) -> Option<f64> {
        Some(self.mean_bps())
    }
}

impl MahimahiTrace {
    /// Charges `bytes` of overhead per packet on top of its own size.
    pub fn set_overhead(&mut self, bytes: u32) {
        self.overhead_bytes = bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzzer (fuzz/regressions/traces/mahimahi-huge-ms): a
    /// timestamp of 2.2e15 ms overflowed nanoseconds and panicked.
    #[test]
    fn a_timestamp_past_100_days_is_an_error_not_a_panic() {
        assert!(matches!(MahimahiTrace::parse("1\n1\n2222222222222424\n", 0), Err(TraceError::BadLine { line: 3, .. })));
        assert!(MahimahiTrace::parse("1\n8640000000\n", 0).is_ok());
    }

    #[test]
    fn one_packet_per_opportunity() {
        let mut t = MahimahiTrace::parse("1\n2\n3\n4\n", 0).unwrap();
        let f1 = t.finish(Instant(0), 1500);
        let f2 = t.finish(Instant(0), 1500);
        assert_eq!(f1, Instant(1_000_000));
        assert_eq!(f2, Instant(2_000_000));
    }

    #[test]
    fn small_packets_share_an_opportunity_and_trace_loops() {
        let mut t = MahimahiTrace::parse("5\n10\n", 0).unwrap();
        // Three 500-byte packets fit in the first 1504-byte opportunity.
        for _ in 0..3 {
            assert_eq!(t.finish(Instant(0), 500), Instant(5_000_000));
        }
        // The fourth needs the next one.
        assert_eq!(t.finish(Instant(0), 500), Instant(10_000_000));
        // A packet at 12 ms waits for the looped opportunity at 15 ms; the
        // unused bytes of the 10 ms opportunity are lost.
        assert_eq!(t.finish(Instant(12_000_000), 1500), Instant(15_000_000));
        // After a long idle gap, the next opportunity at or after 1 s.
        assert_eq!(t.finish(Instant(1_000_000_001), 100), Instant(1_005_000_000));
    }

    #[test]
    fn a_big_packet_spans_opportunities() {
        let mut t = MahimahiTrace::parse("1\n2\n3\n", 0).unwrap();
        assert_eq!(t.finish(Instant(0), 3000), Instant(2_000_000));
        assert_eq!(t.finish(Instant(0), 8), Instant(2_000_000));
    }

    #[test]
    fn bad_traces_are_refused() {
        assert_eq!(MahimahiTrace::parse("", 0).unwrap_err(), TraceError::Empty);
        assert!(matches!(MahimahiTrace::parse("1\nx\n", 0), Err(TraceError::BadLine { line: 2, .. })));
        assert_eq!(MahimahiTrace::parse("5\n3\n", 0).unwrap_err(), TraceError::Decreasing { line: 2 });
    }
}
