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
    /// When each answered request was sent, ms after the first of them
    /// (its reply's time stamp, ping's -D, less its round-trip time),
    /// beside `rtts_ms`: iputils' ping paces a little slower than its
    /// interval (≈ 4 % at 100 ms on an idle host), so a request's number
    /// alone does not say when it left. (Empty in results stored before it
    /// was kept.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sent_ms: Vec<f64>,
    /// The length of one pass over a route flown again and again (`--passes`),
    /// ms; 0 without passes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pass_ms: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Windows per pass (`--passes`): each pass is cut into this many, and the
/// passes are compared window by window.
pub const PLACE_WINDOWS: usize = 50;

/// One window of one pass: requests sent in it and the round-trip times
/// of those answered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PassWindow {
    pub sent: u32,
    pub rtts_ms: Vec<f64>,
}

impl PassWindow {
    /// The share of its requests lost; none when it sent none.
    pub fn loss(&self) -> Option<f64> {
        (self.sent > 0).then(|| 1.0 - self.rtts_ms.len() as f64 / self.sent as f64)
    }
    /// The mean round-trip time of its replies; none without one.
    pub fn rtt_ms(&self) -> Option<f64> {
        (!self.rtts_ms.is_empty()).then(|| self.rtts_ms.iter().sum::<f64>() / self.rtts_ms.len() as f64)
    }
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

    /// When request `seq` (from 1) was sent, ms after the first request:
    /// an answered one's own time; a lost one's between its answered
    /// neighbours' in proportion to the numbers, or beyond the first or
    /// last at the run's mean pace. None without time stamps.
    fn sent_at(&self) -> Option<impl Fn(u32) -> f64 + '_> {
        let n = self.seqs.len();
        if n < 2 || self.sent_ms.len() != n || self.seqs.windows(2).any(|w| w[1] <= w[0]) {
            return None;
        }
        let (s0, s1) = (self.seqs[0] as f64, self.seqs[n - 1] as f64);
        let pace = (self.sent_ms[n - 1] - self.sent_ms[0]) / (s1 - s0);
        let origin = self.sent_ms[0] - (s0 - 1.0) * pace;
        Some(move |seq: u32| {
            let i = self.seqs.partition_point(|&s| s < seq);
            let at = match (i.checked_sub(1), self.seqs.get(i)) {
                (_, Some(&s)) if s == seq => self.sent_ms[i],
                (Some(a), Some(&b)) => {
                    let f = (seq - self.seqs[a]) as f64 / (b - self.seqs[a]) as f64;
                    self.sent_ms[a] + f * (self.sent_ms[i] - self.sent_ms[a])
                }
                (None, _) => self.sent_ms[0] - (self.seqs[0] - seq) as f64 * pace,
                (Some(a), None) => self.sent_ms[a] + (seq - self.seqs[a]) as f64 * pace,
            };
            at - origin
        })
    }

    /// The run cut into its passes (`pass_ms` each, from the first
    /// request) and each pass into [`PLACE_WINDOWS`] windows, by when each
    /// request was sent; requests past the last whole pass are left out.
    /// Empty without passes, time stamps or two passes' worth of requests.
    pub fn pass_windows(&self) -> Vec<Vec<PassWindow>> {
        let Some(at) = self.sent_at().filter(|_| self.pass_ms > 0.0) else { return Vec::new() };
        // The last request covers its interval too.
        let passes = ((at(self.sent) + self.interval_ms) / self.pass_ms + 1e-9).floor() as usize;
        if passes < 2 {
            return Vec::new();
        }
        let mut out = vec![vec![PassWindow::default(); PLACE_WINDOWS]; passes];
        let slot = |seq: u32| {
            let t = at(seq) / self.pass_ms;
            let p = t.floor().max(0.0) as usize;
            (p < passes).then_some((p, ((t - p as f64) * PLACE_WINDOWS as f64) as usize % PLACE_WINDOWS))
        };
        for seq in 1..=self.sent {
            if let Some((p, w)) = slot(seq) {
                out[p][w].sent += 1;
            }
        }
        for (&seq, &ms) in self.seqs.iter().zip(&self.rtts_ms) {
            if let Some((p, w)) = slot(seq) {
                out[p][w].rtts_ms.push(ms);
            }
        }
        out
    }
}

/// Pearson's correlation of `pairs`; none with fewer than 3 or without
/// variation on a side.
fn pearson(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < 3 {
        return None;
    }
    let n = pairs.len() as f64;
    let (mx, my) = (pairs.iter().map(|p| p.0).sum::<f64>() / n, pairs.iter().map(|p| p.1).sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for &(x, y) in pairs {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx).powi(2);
        syy += (y - my).powi(2);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// How much a figure depends on place over a route flown again and again:
/// the mean over consecutive passes of the correlation of their windows'
/// `value`s (windows where either pass has none left out). Near 1: each
/// place gives the same figure every pass; near 0: the figure varies with
/// time, not with place (seed 000 §4.4: "greater correlations between
/// geographic location and performance characteristics for DA2GC than
/// … for MSS"). None when no two passes vary.
pub fn place_corr(passes: &[Vec<PassWindow>], value: impl Fn(&PassWindow) -> Option<f64>) -> Option<f64> {
    let corrs: Vec<f64> = passes
        .windows(2)
        .filter_map(|w| {
            let pairs: Vec<(f64, f64)> = w[0].iter().zip(&w[1]).filter_map(|(a, b)| Some((value(a)?, value(b)?))).collect();
            pearson(&pairs)
        })
        .collect();
    (!corrs.is_empty()).then(|| corrs.iter().sum::<f64>() / corrs.len() as f64)
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
    stamped_replies(text).into_iter().map(|(seq, ms, _)| (seq, ms)).collect()
}

/// [`replies`] with each one's time stamp (ping's -D), s, if it has one.
fn stamped_replies(text: &str) -> Vec<(u32, f64, Option<f64>)> {
    let mut last: u64 = 0;
    let by_seq: BTreeMap<u32, (f64, Option<f64>)> = text.lines().filter_map(|l| reply(l).map(|r| (r, stamp(l)))).fold(BTreeMap::new(), |mut m, ((seq, ms), at)| {
        let wraps = ((last as f64 - seq as f64) / 65_536.0).round().max(0.0) as u64;
        let seq = seq as u64 + wraps * 65_536;
        last = seq;
        m.entry(seq.min(u32::MAX as u64) as u32).or_insert((ms, at));
        m
    });
    by_seq.into_iter().map(|(seq, (ms, at))| (seq, ms, at)).collect()
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
        .args(["-n", "-D", "-c", &count.to_string(), "-i", &format!("{:.3}", interval.as_secs_f64()), "-s", &size.to_string(), "-w", &format!("{}", deadline.ceil() as u64)])
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
    let sent_ms = sent_times(&text, &seqs);
    Ok(PingResult { sent, received: rtts_ms.len() as u32, size_bytes: size, interval_ms: interval.as_secs_f64() * 1e3, rtts_ms, seqs, sent_ms, pass_ms: 0.0 })
}

/// When each of `seqs` (answered requests, in order) was sent, ms after the
/// first of them: the reply line's time stamp (`[1732871234.123456] 64
/// bytes from …`, ping's -D) less its round-trip time. Empty when a reply
/// has no stamp.
pub fn sent_times(text: &str, seqs: &[u32]) -> Vec<f64> {
    let by_seq: BTreeMap<u32, Option<f64>> = stamped_replies(text).into_iter().map(|(seq, ms, at)| (seq, at.map(|s| s * 1e3 - ms))).collect();
    let at: Option<Vec<f64>> = seqs.iter().map(|s| by_seq.get(s).copied().flatten()).collect();
    match at {
        Some(at) if !at.is_empty() => {
            let first = at.iter().copied().fold(f64::MAX, f64::min);
            at.iter().map(|a| a - first).collect()
        }
        _ => Vec::new(),
    }
}

/// The time stamp ping's -D puts before a line (`[1732871234.123456]`), s.
fn stamp(line: &str) -> Option<f64> {
    line.strip_prefix('[')?.split_once(']')?.0.parse().ok()
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
        let r = PingResult { sent: 125, received: seqs.len() as u32, size_bytes: 56, interval_ms: 2000.0, rtts_ms: vec![600.0; seqs.len()], seqs, sent_ms: vec![], pass_ms: 0.0 };
        assert_eq!(r.loss_windows(100_000.0), vec![2.0 / 50.0, 1.0 / 50.0]);
        // Shorter than a window: none.
        assert!(r.loss_windows(1_000_000.0).is_empty());
        // A result stored before the sequence numbers were kept: none.
        let old = PingResult { seqs: vec![], ..r };
        assert!(old.loss_windows(100_000.0).is_empty());
    }

    /// A route flown twice: requests lost in the same places of each pass
    /// (by when they left, ping's -D stamps, not by their numbers: this
    /// ping paces 4 % slower than its interval) make the passes' loss
    /// windows correlate; the RTTs, which change with time, not place, do
    /// not.
    #[test]
    fn passes_are_cut_by_when_requests_left_and_compared_window_by_window() {
        let (count, interval, pace) = (2000u32, 100.0, 104.0);
        let pass_ms = count as f64 * interval / 2.0;
        // Lost: requests sent in windows 10–12 and 30 of either pass.
        let window = |seq: u32| {
            let t = (seq - 1) as f64 * pace;
            (((t % pass_ms) / pass_ms) * 50.0) as usize
        };
        let mut text = String::from("PING 198.18.0.2 (198.18.0.2) 56(84) bytes of data.\n");
        for seq in (1..=count).filter(|&s| !matches!(window(s), 10..=12 | 30)) {
            // The RTT rises over the run, whatever the place.
            let rtt = 600.0 + seq as f64 * 0.1;
            let at = 1_700_000_000.0 + ((seq - 1) as f64 * pace + rtt) / 1e3;
            text.push_str(&format!("[{at:.6}] 64 bytes from 198.18.0.2: icmp_seq={seq} ttl=64 time={rtt:.1} ms\n"));
        }
        let (seqs, rtts_ms): (Vec<u32>, Vec<f64>) = replies(&text).into_iter().unzip();
        let sent_ms = sent_times(&text, &seqs);
        assert_eq!(sent_ms.len(), seqs.len());
        assert!((sent_ms[1] - pace).abs() < 0.01, "{:?}", &sent_ms[..3]);
        let r = PingResult { sent: count, received: seqs.len() as u32, size_bytes: 56, interval_ms: interval, rtts_ms, seqs, sent_ms, pass_ms };
        let passes = r.pass_windows();
        assert_eq!(passes.len(), 2, "the last 4 % of requests fall past the second pass");
        let lossy = |p: &[PassWindow]| p.iter().enumerate().filter(|(_, w)| w.loss().unwrap() > 0.0).map(|(i, _)| i).collect::<Vec<_>>();
        assert_eq!(lossy(&passes[0]), vec![10, 11, 12, 30]);
        assert_eq!(lossy(&passes[1]), vec![10, 11, 12, 30]);
        let loss = place_corr(&passes, PassWindow::loss).unwrap();
        assert!(loss > 0.95, "loss bound to place: {loss}");
        // Each pass's RTT rises the same way with time: the windows
        // correlate too (a trend is a place's figure as much as a spike).
        let rtt = place_corr(&passes, PassWindow::rtt_ms).unwrap();
        assert!(rtt > 0.9, "{rtt}");
        // Numbered at the nominal interval instead, the second pass's
        // windows would sit two windows early: no longer the same places.
        let nominal = PingResult { sent_ms: (0..r.seqs.len()).map(|i| (r.seqs[i] - 1) as f64 * interval).collect(), ..r.clone() };
        let shifted = lossy(&nominal.pass_windows()[1]);
        assert_ne!(shifted, vec![10, 11, 12, 30], "{shifted:?}");
        // Without time stamps or passes: none.
        assert!(PingResult { sent_ms: vec![], ..r.clone() }.pass_windows().is_empty());
        assert!(PingResult { pass_ms: 0.0, ..r }.pass_windows().is_empty());
    }

    #[test]
    fn loss_that_varies_with_time_not_place_does_not_correlate() {
        // Pass 1 loses in windows 5–9, pass 2 in 40–44.
        let pass = 1000u32;
        let lost = |seq: u32| {
            let (p, k) = ((seq - 1) / pass, (seq - 1) % pass);
            let w = k as usize * 50 / pass as usize;
            if p == 0 {
                (5..10).contains(&w)
            } else {
                (40..45).contains(&w)
            }
        };
        let seqs: Vec<u32> = (1..=2 * pass).filter(|&s| !lost(s)).collect();
        let r = PingResult {
            sent: 2 * pass,
            received: seqs.len() as u32,
            size_bytes: 56,
            interval_ms: 100.0,
            rtts_ms: vec![600.0; seqs.len()],
            sent_ms: seqs.iter().map(|&s| (s - 1) as f64 * 100.0).collect(),
            seqs,
            pass_ms: pass as f64 * 100.0,
        };
        let c = place_corr(&r.pass_windows(), PassWindow::loss).unwrap();
        assert!(c < 0.0, "{c}");
        assert_eq!(place_corr(&r.pass_windows(), PassWindow::rtt_ms), None, "constant RTT: no correlation to take");
    }
}
