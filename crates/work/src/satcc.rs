//! `sat`: a congestion controller for long, fat, lossy paths (GEO satellite
//! links: 600–700 ms RTT, 10–250 Mbit/s down, random loss), for quinn.
//!
//! What makes the stock controllers slow there, and what this one does
//! instead:
//!
//! - **Slow start takes seconds.** At 650 ms RTT, doubling from 12 KB to a
//!   10 Mbit/s path's 812 KB takes six round trips, 4 s; a 2 MB download is
//!   over before the window is. When the path's rate is known (configured:
//!   the operator knows the link; draft-kuhn-quic-bdpframe calls it Careful
//!   Resume), the first window is the whole path, `rate × RTT`, and the
//!   pacer spreads it at that rate: the first RTT already fills the link.
//!   Without a rate it starts from the initial window and doubles each round
//!   until the delivery rate stops growing by a quarter for three rounds
//!   (BBR's full-pipe test).
//! - **Random loss is not congestion.** Cubic and NewReno halve the window
//!   for every loss event: at 1 % loss and 20 MB in flight that is every
//!   round trip. Here the window follows the **delivery rate** the ACKs
//!   show (the largest over the last [`ROUNDS`] rounds) times the smallest
//!   RTT, so a loss costs its retransmission and nothing more. Only a round
//!   that loses more than [`CONGESTION_LOSS`] of what it delivered, or
//!   quinn's persistent congestion, is taken as congestion.
//! - **It must not overrun the queue.** In flight is held to
//!   [`GAIN`] × rate × min RTT: a quarter of a BDP queued at most (less than
//!   a BDP-sized buffer), and room for the rate to grow by a quarter per
//!   round when the path has more than it was told or than it has seen.
//!   Rate samples that the application limited never lower the estimate.
//!
//! quinn paces at 1.25 × window / smoothed RTT, so the window also sets the
//! pacing rate.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{Controller, ControllerFactory};
use quinn_proto::RttEstimator;

/// In flight, as a multiple of the estimated bandwidth-delay product.
pub const GAIN: f64 = 1.25;
/// Delivery-rate samples (one per round trip) the estimate is the largest of.
pub const ROUNDS: usize = 8;
/// Loss, as a share of what a round delivered, above which the round counts
/// as congested.
pub const CONGESTION_LOSS: f64 = 0.15;
/// On congestion, the rate estimate is cut to this share of the round's.
const CONGESTION_CUT: f64 = 0.7;
/// Before any RTT sample: quinn's initial RTT estimate.
const INITIAL_RTT: Duration = Duration::from_millis(333);

#[derive(Debug, Clone)]
pub struct SatConfig {
    /// The path's rate in the direction this end sends, bit/s, if known.
    pub rate_bps: Option<u64>,
    /// Initial window without a rate, bytes.
    pub initial_window: u64,
}

impl ControllerFactory for SatConfig {
    fn build(self: Arc<Self>, _now: Instant, mtu: u16) -> Box<dyn Controller> {
        Box::new(Sat::new(&self, mtu))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Doubling per round until the delivery rate stops growing.
    Startup,
    /// Window from the rate estimate.
    Cruise,
}

/// What was true when a packet (a batch of packets sent together) left.
#[derive(Debug, Clone, Copy)]
struct Sent {
    time: Instant,
    /// Bytes delivered, and when the last of them was acknowledged.
    delivered: u64,
    delivered_time: Instant,
    /// When the first packet of the flight this one belongs to was sent.
    first_sent_time: Instant,
}

#[derive(Debug, Clone)]
pub struct Sat {
    mtu: u64,
    phase: Phase,
    /// Startup's window, bytes.
    cwnd: u64,
    initial_window: u64,
    /// The configured rate, bytes/s, trusted for the first
    /// [`HINT_ROUNDS`] measured rounds.
    hint: Option<f64>,
    /// The best delivery-rate sample of each recent round, bytes/s, newest
    /// last; the current round's best is `round_best`.
    rounds: VecDeque<f64>,
    round_best: f64,
    /// Rounds measured since the start (or since congestion).
    measured_rounds: u32,
    min_rtt: Option<Duration>,
    srtt: Duration,
    delivered: u64,
    delivered_time: Option<Instant>,
    first_sent_time: Option<Instant>,
    in_flight: u64,
    sent: VecDeque<Sent>,
    /// A round ends when a packet sent after this much was delivered is
    /// acknowledged.
    next_round_delivered: u64,
    round_delivered_start: u64,
    round_lost: u64,
    round_app_limited: bool,
    /// Startup's full-pipe test: the best rate so far and rounds without
    /// growth.
    full_bw: f64,
    full_bw_rounds: u32,
}

/// Rounds of measurement after which the configured rate gives way to the
/// measured one.
pub const HINT_ROUNDS: u32 = 3;

impl Sat {
    fn new(cfg: &SatConfig, mtu: u16) -> Sat {
        let hint = cfg.rate_bps.map(|b| b as f64 / 8.0);
        Sat {
            mtu: mtu as u64,
            phase: if hint.is_some() { Phase::Cruise } else { Phase::Startup },
            cwnd: cfg.initial_window,
            initial_window: cfg.initial_window,
            hint,
            rounds: VecDeque::new(),
            round_best: 0.0,
            measured_rounds: 0,
            min_rtt: None,
            srtt: INITIAL_RTT,
            delivered: 0,
            delivered_time: None,
            first_sent_time: None,
            in_flight: 0,
            sent: VecDeque::new(),
            next_round_delivered: 0,
            round_delivered_start: 0,
            round_lost: 0,
            round_app_limited: false,
            full_bw: 0.0,
            full_bw_rounds: 0,
        }
    }

    /// The rate estimate, bytes/s: the best sample of the recent rounds,
    /// or the configured rate while it is trusted.
    fn rate(&self) -> Option<f64> {
        let best = self.rounds.iter().copied().fold(self.round_best, f64::max);
        let measured = (best > 0.0).then_some(best);
        match (self.hint, measured) {
            (Some(h), Some(m)) => Some(h.max(m)),
            (h, m) => m.or(h),
        }
    }

    fn floor(&self) -> u64 {
        4 * self.mtu
    }

    fn end_round(&mut self) {
        let delivered = self.delivered - self.round_delivered_start;
        let best = std::mem::take(&mut self.round_best);
        let congested = delivered > 0 && self.round_lost as f64 > CONGESTION_LOSS * delivered as f64;
        self.round_lost = 0;
        self.round_delivered_start = self.delivered;
        let app_limited = std::mem::take(&mut self.round_app_limited);
        if congested {
            // Start the estimate again from what this round got, cut.
            self.rounds.clear();
            self.hint = None;
            self.rounds.push_back(best * CONGESTION_CUT);
            self.phase = Phase::Cruise;
            return;
        }
        if best <= 0.0 {
            return;
        }
        self.rounds.push_back(best);
        while self.rounds.len() > ROUNDS {
            self.rounds.pop_front();
        }
        if !app_limited {
            self.measured_rounds += 1;
            if self.measured_rounds >= HINT_ROUNDS {
                self.hint = None;
            }
        }
        if self.phase == Phase::Startup && !app_limited {
            if best >= self.full_bw * 1.25 {
                self.full_bw = best;
                self.full_bw_rounds = 0;
            } else {
                self.full_bw_rounds += 1;
                if self.full_bw_rounds >= 3 {
                    self.phase = Phase::Cruise;
                }
            }
        }
    }

    /// An acknowledged packet, sent at `sent`; `srtt` is quinn's smoothed
    /// RTT.
    fn acked(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool, srtt: Duration) {
        self.srtt = srtt;
        // Our own samples: quinn's `RttEstimator::min` starts at its 333 ms
        // initial guess and so never exceeds it, which on a 650 ms path
        // would hold the window to half the path.
        let sample = now.saturating_duration_since(sent);
        self.min_rtt = Some(self.min_rtt.map_or(sample, |m| m.min(sample)));
        self.delivered += bytes;
        self.delivered_time = Some(now);
        self.round_app_limited |= app_limited;
        if self.phase == Phase::Startup {
            self.cwnd += bytes;
        }
        // Acknowledgements come nearly in send order: what was sent before
        // this packet is acknowledged or lost by now.
        while self.sent.front().is_some_and(|s| s.time < sent) {
            self.sent.pop_front();
        }
        let Some(p) = self.sent.front().copied().filter(|s| s.time == sent) else { return };
        self.first_sent_time = Some(p.time);
        // BBR's delivery rate: what was delivered while this packet was in
        // flight, over the longer of its flight's send and ACK intervals
        // (the longer one, so neither a burst sent nor ACKs compressed on
        // the way back reads as more rate than the path has).
        let send_elapsed = p.time.saturating_duration_since(p.first_sent_time);
        let ack_elapsed = now.saturating_duration_since(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed).as_secs_f64();
        if interval > 0.0 {
            let rate = (self.delivered - p.delivered) as f64 / interval;
            if !app_limited || rate > self.round_best {
                self.round_best = self.round_best.max(rate);
            }
        }
        if p.delivered >= self.next_round_delivered {
            self.next_round_delivered = self.delivered;
            self.end_round();
        }
    }
}

impl Controller for Sat {
    fn on_sent(&mut self, now: Instant, bytes: u64, _last_packet_number: u64) {
        if self.in_flight == 0 {
            // A flight starts after idle: measure from now, not from the
            // last ACK before the pause.
            self.first_sent_time = Some(now);
            self.delivered_time = Some(now);
        }
        self.in_flight += bytes;
        self.sent.push_back(Sent { time: now, delivered: self.delivered, delivered_time: self.delivered_time.unwrap_or(now), first_sent_time: self.first_sent_time.unwrap_or(now) });
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool, rtt: &RttEstimator) {
        self.acked(now, sent, bytes, app_limited, rtt.get());
    }

    fn on_end_acks(&mut self, _now: Instant, in_flight: u64, _app_limited: bool, _largest: Option<u64>) {
        self.in_flight = in_flight;
    }

    fn on_congestion_event(&mut self, _now: Instant, _sent: Instant, persistent: bool, lost_bytes: u64) {
        if persistent {
            // RFC 9002 §7.6: nothing got through for a long time; start over.
            self.rounds.clear();
            self.round_best = 0.0;
            self.hint = None;
            self.phase = Phase::Startup;
            self.cwnd = self.initial_window;
            self.full_bw = 0.0;
            self.full_bw_rounds = 0;
            return;
        }
        self.round_lost += lost_bytes;
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = new_mtu as u64;
    }

    fn window(&self) -> u64 {
        let rtt = self.min_rtt.unwrap_or(self.srtt);
        let from_rate = self.rate().map(|r| (GAIN * r * rtt.as_secs_f64()) as u64);
        let w = match self.phase {
            Phase::Startup => self.cwnd.max(from_rate.unwrap_or(0)),
            Phase::Cruise => from_rate.unwrap_or(self.cwnd),
        };
        w.max(self.floor())
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.initial_window
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    //! The controller in simulated time: a packet-level model of one
    //! bottleneck (rate, delay, a drop-tail queue, random loss) and of
    //! quinn's sender (held to the window, paced at 1.25 × window /
    //! smoothed RTT, loss declared three packets behind an ACK). Not quinn
    //! itself — `aerolink bench sat-targets` measures that, over the
    //! emulator — but exact and fast, so the window and pacing the docs
    //! promise are checked to the byte.
    use super::*;
    use std::cmp::Reverse;
    use std::collections::{BTreeMap, BinaryHeap};

    const MSS: u64 = 1400;

    struct Link {
        /// bytes/s
        rate: f64,
        one_way: Duration,
        queue: u64,
        loss: f64,
    }

    fn link(mbps: f64, rtt_ms: u64, loss: f64) -> Link {
        let rate = mbps * 1e6 / 8.0;
        let one_way = Duration::from_millis(rtt_ms / 2);
        Link { rate, one_way, queue: (rate * 2.0 * one_way.as_secs_f64()) as u64, loss }
    }

    struct Trace {
        /// Send times of data packets, s from the start of data.
        sent: Vec<f64>,
        /// (time the receiver got it, s from the start of data, new bytes).
        got: Vec<(f64, u64)>,
        /// The window after each round trip of data (by time), bytes.
        windows: Vec<u64>,
        /// When the last byte arrived, s from the start of data.
        done: f64,
    }

    /// Runs a download of `bytes` after a one-packet handshake; returns
    /// the trace and the controller.
    fn download(cfg: SatConfig, l: &Link, bytes: u64, seed: u64) -> (Trace, Sat) {
        let t0 = Instant::now();
        let mut cc = Sat::new(&cfg, 1452);
        let rtt = 2 * l.one_way;
        // The handshake: one packet each way gives the first RTT sample.
        cc.on_sent(t0, 1200, 0);
        cc.acked(t0 + rtt, t0, 1200, true, rtt);
        cc.on_end_acks(t0 + rtt, 0, true, None);
        let start = t0 + rtt;
        let mut srtt = rtt;
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut lost_draw = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut now, mut pace_next, mut link_free) = (start, start, start);
        let mut in_flight_pkts: BTreeMap<u64, Instant> = BTreeMap::new();
        let mut acks: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
        let (mut pn, mut in_flight, mut unsent, mut retx) = (0u64, 0u64, bytes, 0u64);
        let mut tr = Trace { sent: vec![], got: vec![], windows: vec![], done: 0.0 };
        let mut delivered = 0u64;
        let mut next_round = start + rtt;
        let secs = |t: Instant| t.duration_since(start).as_secs_f64();
        while delivered < bytes {
            let can_send = (unsent > 0 || retx > 0) && in_flight + MSS <= cc.window();
            let next_ack = acks.peek().map(|Reverse((t, _))| *t);
            let send_at = can_send.then_some(pace_next.max(now));
            now = match (next_ack, send_at) {
                (Some(a), Some(s)) => a.min(s),
                (Some(a), None) => a,
                (None, Some(s)) => s,
                (None, None) => panic!("stalled: window {} in flight {in_flight}", cc.window()),
            };
            while now >= next_round {
                tr.windows.push(cc.window());
                next_round += rtt;
            }
            if next_ack == Some(now) {
                let Reverse((_, n)) = acks.pop().unwrap();
                let Some(sent) = in_flight_pkts.remove(&n) else { continue };
                in_flight -= MSS;
                let sample = now.duration_since(sent);
                srtt = (srtt * 7 + sample) / 8;
                cc.acked(now, sent, MSS, false, srtt);
                let lost: Vec<u64> = in_flight_pkts.range(..n.saturating_sub(2)).map(|(k, _)| *k).collect();
                for k in lost {
                    let s = in_flight_pkts.remove(&k).unwrap();
                    in_flight -= MSS;
                    retx += 1;
                    cc.on_congestion_event(now, s, false, MSS);
                }
                cc.on_end_acks(now, in_flight, false, Some(n));
                continue;
            }
            // Send one packet (a retransmission first).
            if retx > 0 {
                retx -= 1;
            } else {
                unsent = unsent.saturating_sub(MSS);
            }
            pn += 1;
            cc.on_sent(now, MSS, pn);
            in_flight += MSS;
            in_flight_pkts.insert(pn, now);
            tr.sent.push(secs(now));
            let window = cc.window() as f64;
            pace_next = now + Duration::from_secs_f64(MSS as f64 / (1.25 * window / srtt.as_secs_f64()));
            let queued = (link_free.saturating_duration_since(now).as_secs_f64() * l.rate) as u64;
            if lost_draw() < l.loss || queued + MSS > l.queue {
                continue;
            }
            let departs = link_free.max(now) + Duration::from_secs_f64(MSS as f64 / l.rate);
            link_free = departs;
            let arrives = departs + l.one_way;
            delivered += MSS;
            tr.got.push((secs(arrives), MSS));
            tr.done = tr.done.max(secs(arrives));
            acks.push(Reverse((arrives + l.one_way, pn)));
        }
        (tr, cc)
    }

    /// Bytes the receiver got between `from` and `to` s, as bit/s.
    fn rate_between(tr: &Trace, from: f64, to: f64) -> f64 {
        tr.got.iter().filter(|(t, _)| *t >= from && *t < to).map(|(_, b)| *b).sum::<u64>() as f64 * 8.0 / (to - from)
    }

    #[test]
    fn with_a_rate_the_first_window_is_the_path_and_fills_it_at_once() {
        let l = link(10.0, 650, 0.0);
        let (tr, _) = download(SatConfig { rate_bps: Some(10_000_000), initial_window: 40_000 }, &l, 2_000_000, 1);
        // After the handshake's RTT sample: GAIN × rate × RTT.
        let mut cc = Sat::new(&SatConfig { rate_bps: Some(10_000_000), initial_window: 40_000 }, 1452);
        let t0 = Instant::now();
        cc.on_sent(t0, 1200, 0);
        cc.acked(t0 + Duration::from_millis(650), t0, 1200, true, Duration::from_millis(650));
        assert_eq!(cc.window(), (1.25 * 1_250_000.0 * 0.65) as u64);
        // Paced at 1.25 × window / RTT from the first packet: the first
        // window's packets leave at 1.5625 × the path's rate.
        let n = 200;
        let pace = MSS as f64 * 8.0 * (n - 1) as f64 / (tr.sent[n - 1] - tr.sent[0]);
        assert!((pace / 15.625e6 - 1.0).abs() < 0.01, "paced at {pace} bit/s");
        // The link is full from the first packet to the last: the download
        // takes one-way delay + bytes at the path's rate, to 1 %.
        let ideal = 0.325 + 2_000_000.0 * 8.0 / 10e6;
        assert!((tr.done / ideal - 1.0).abs() < 0.01, "done in {} s, ideal {ideal}", tr.done);
        assert!(rate_between(&tr, 0.4, 1.9) > 0.99 * 10e6);
    }

    #[test]
    fn random_loss_is_not_congestion() {
        let l = link(50.0, 650, 0.01);
        let (tr, cc) = download(SatConfig { rate_bps: Some(50_000_000), initial_window: 40_000 }, &l, 100_000_000, 7);
        let bdp = 50e6 / 8.0 * 0.65;
        // The window never falls below a BDP (it would halve each round
        // trip under cubic at this loss).
        let low = tr.windows.iter().skip(1).map(|w| *w as f64 / bdp).fold(f64::INFINITY, f64::min);
        assert!(low >= 1.0, "window fell to {low:.2} BDP: {:?}", tr.windows);
        // And the path stays full: ≥ 95 % of the rate between the first
        // and the last round trip (1 % is lost and resent).
        let g = rate_between(&tr, 0.65, tr.done - 0.65);
        assert!(g > 0.95 * 50e6, "goodput {g}");
        assert!(cc.window() as f64 <= 1.3 * bdp, "window {} over 1.3 BDP", cc.window());
    }

    #[test]
    fn a_configured_rate_above_the_path_gives_way_to_the_measured_one() {
        // Told 20 Mbit/s, the path has 10: the first rounds overfill the
        // queue (a BDP), then the window follows what the ACKs show.
        let l = link(10.0, 650, 0.0);
        let (tr, cc) = download(SatConfig { rate_bps: Some(20_000_000), initial_window: 40_000 }, &l, 20_000_000, 3);
        let bdp = 10e6 / 8.0 * 0.65;
        let w = cc.window() as f64 / bdp;
        assert!((1.1..=1.4).contains(&w), "window {w:.2} BDP at the end: {:?}", tr.windows);
        assert!(rate_between(&tr, 0.65, tr.done - 0.65) > 0.95 * 10e6);
    }

    #[test]
    fn without_a_rate_it_starts_from_the_initial_window_and_finds_the_path() {
        let l = link(10.0, 650, 0.0);
        let cfg = SatConfig { rate_bps: None, initial_window: 32 * 1252 };
        assert_eq!(Sat::new(&cfg, 1452).window(), 32 * 1252);
        let (tr, cc) = download(cfg, &l, 20_000_000, 5);
        let bdp = 10e6 / 8.0 * 0.65;
        assert!(cc.window() as f64 >= bdp, "window {} below a BDP: {:?}", cc.window(), tr.windows);
        assert_eq!(cc.phase, Phase::Cruise);
        // Slow to start (that is what the rate is for), full once found.
        assert!(rate_between(&tr, tr.done - 5.0, tr.done - 0.65) > 0.95 * 10e6);
    }

    #[test]
    fn persistent_congestion_starts_over_from_the_initial_window() {
        let l = link(10.0, 650, 0.0);
        let (_, mut cc) = download(SatConfig { rate_bps: Some(10_000_000), initial_window: 40_000 }, &l, 5_000_000, 1);
        assert!(cc.window() > 1_000_000);
        let t = Instant::now();
        cc.on_congestion_event(t, t, true, 10 * MSS);
        assert_eq!(cc.window(), 40_000);
    }
}
