//! Messages through one direction of a link model in simulated time: the
//! same stages a lab's pump runs, driven by a clock that jumps from one
//! event to the next, so a batch of ten million messages takes seconds.
//!
//! For what a real run cannot count: seed 002 §6's loss of a binding
//! acknowledgement over the L-DACS 1 forward link (6.31e-5 a message: ten
//! million messages a repetition to see a few hundred losses) and, from the
//! share of failed tries, the loss after five independent retries
//! ((6.31e-5)^6 ≈ 6e-26, far too small to count). `aerolink workload
//! link-sim` runs one batch; the experiments' `link-sim` workload runs it
//! as a repetition.
//!
//! ```
//! use aerolink_link::{batch, builtin, profile::Profile, Duration};
//! let p = Profile::parse(builtin::get("ldacs1-158k").unwrap(), "ldacs1-158k", &[], &mut |_| Err("".into())).unwrap();
//! let spec = batch::Batch { up: true, count: 1000, size: 68, interval: Duration::from_millis(8) };
//! let r = batch::run(&p, &spec, 1);
//! assert_eq!(r.sent, 1000);
//! assert!(r.retransmissions > 0, "six 14 B blocks at 6.28e-2 each: a third of first tries fail");
//! ```

use serde::{Deserialize, Serialize};

use crate::packet::DropReason;
use crate::profile::Profile;
use crate::stage::{Note, StageEvent};
use crate::{Duration, Instant, Pipeline};

/// One batch: `count` messages of `size` bytes (an IP packet: the link's
/// own header comes on top), one every `interval`, toward the server
/// (`up`) or toward the client.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    pub up: bool,
    pub count: u64,
    pub size: u32,
    pub interval: Duration,
}

/// What happened to a batch's messages.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchResult {
    pub sent: u64,
    pub delivered: u64,
    /// Lost on the link: random loss, or link-layer ARQ gave up.
    pub lost: u64,
    /// Dropped otherwise (a full queue, an outage).
    pub dropped: u64,
    /// Transmissions in all (first tries and link-layer retransmissions).
    pub tries: u64,
    pub retransmissions: u64,
    /// Tries that failed: each retransmission follows one, and each lost
    /// message's last try failed too.
    pub failed_tries: u64,
    /// The retransmissions the link's ARQ allows (0 without ARQ).
    pub max_retx: u32,
    /// Mean time from entering the link to leaving it, ms.
    pub delay_ms_mean: f64,
    /// Simulated time the batch took, s.
    pub simulated_s: f64,
}

impl BatchResult {
    /// The share of messages lost.
    pub fn loss(&self) -> f64 {
        if self.sent == 0 {
            return 0.0;
        }
        self.lost as f64 / self.sent as f64
    }

    /// The share of tries that failed.
    pub fn try_loss(&self) -> f64 {
        if self.tries == 0 {
            return 0.0;
        }
        self.failed_tries as f64 / self.tries as f64
    }

    /// The loss after `max_retx` retransmissions if every try failed
    /// independently with [`try_loss`](Self::try_loss): its power
    /// `max_retx + 1`, as seed 002 §6 computes it.
    pub fn loss_independent_tries(&self) -> f64 {
        self.try_loss().powi(self.max_retx as i32 + 1)
    }
}

/// Runs a batch over `profile`'s direction with the link's RNGs seeded by
/// `seed` (the same seed, the same losses).
pub fn run(profile: &Profile, b: &Batch, seed: u64) -> BatchResult {
    let spec = if b.up { &profile.up } else { &profile.down };
    let mut p: Pipeline<Instant> = Pipeline::new(spec, profile.base_rtt(), seed, u64::from(b.up));
    let mut r = BatchResult { max_retx: spec.ldacs.as_ref().map_or(0, |l| if l.arq { l.max_retx } else { 0 }), ..Default::default() };
    let mut events: Vec<StageEvent> = Vec::new();
    let (mut delay_ns, mut last) = (0u128, Instant(0));
    let mut next_arrival = Some(Instant(0));
    loop {
        let now = match (next_arrival, p.next_wakeup()) {
            (Some(a), Some(w)) => a.min(w),
            (a, w) => match a.or(w) {
                Some(t) => t,
                None => break,
            },
        };
        if next_arrival == Some(now) {
            p.enqueue(now, b.size, now);
            r.sent += 1;
            next_arrival = (r.sent < b.count).then(|| Instant(now.0 + b.interval.0));
        }
        while let Some(pkt) = p.dequeue(now) {
            r.delivered += 1;
            delay_ns += u128::from(pkt.meta.due.0 - pkt.payload.0);
            last = last.max(pkt.meta.due);
        }
        for d in p.take_drops() {
            match d.reason {
                DropReason::Loss | DropReason::Arq => r.lost += 1,
                DropReason::Queue | DropReason::Outage => r.dropped += 1,
            }
            last = last.max(d.at);
        }
        p.take_events(&mut events);
        r.retransmissions += events.iter().filter(|e| matches!(e.note, Note::Retransmit { .. })).count() as u64;
        events.clear();
    }
    r.tries = r.sent - r.dropped + r.retransmissions;
    r.failed_tries = r.retransmissions + r.lost;
    r.delay_ms_mean = if r.delivered == 0 { 0.0 } else { delay_ns as f64 / r.delivered as f64 / 1e6 };
    r.simulated_s = last.0 as f64 / 1e9;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(name: &str) -> Profile {
        Profile::parse(crate::builtin::get(name).expect("builtin"), name, &[], &mut |_| Err("no files".into())).expect("parses")
    }

    /// A normal-approximation 99.9 % interval of a binomial share.
    fn around(p: f64, n: u64) -> (f64, f64) {
        let h = 3.3 * (p * (1.0 - p) / n as f64).sqrt();
        (p - h, p + h)
    }

    #[test]
    fn a_six_block_message_without_arq_is_lost_as_one_minus_the_blocks_surviving() {
        let mut p = profile("ldacs1-158k");
        p.up.ldacs.as_mut().expect("ldacs").arq = false;
        // 68 B + the 7 B header: six 14 B blocks, each lost with 6.28e-2.
        let r = run(&p, &Batch { up: true, count: 20_000, size: 68, interval: Duration::from_millis(8) }, 7);
        let want = 1.0 - (1.0 - 0.0628f64).powi(6);
        let (lo, hi) = around(want, r.sent);
        assert!((lo..=hi).contains(&r.loss()), "loss {} outside {lo}–{hi} (seed 002: 0.322)", r.loss());
        assert_eq!((r.retransmissions, r.max_retx, r.dropped), (0, 0, 0));
        assert_eq!(r.sent, r.delivered + r.lost);
    }

    #[test]
    fn with_arq_the_failed_tries_give_the_per_try_loss_and_its_sixth_power() {
        let p = profile("ldacs1-158k");
        let r = run(&p, &Batch { up: true, count: 20_000, size: 68, interval: Duration::from_millis(8) }, 3);
        let want = 1.0 - (1.0 - 0.0628f64).powi(6);
        let (lo, hi) = around(want, r.tries);
        assert!((lo..=hi).contains(&r.try_loss()), "per-try loss {} outside {lo}–{hi}", r.try_loss());
        assert_eq!(r.max_retx, 5);
        assert!((r.loss_independent_tries() - r.try_loss().powi(6)).abs() < 1e-15);
        assert_eq!(r.sent, r.delivered + r.lost + r.dropped);
        assert!(r.delay_ms_mean > 58.0, "a return-link message waits for its grant: {} ms", r.delay_ms_mean);
    }

    #[test]
    fn jointly_coded_blocks_lose_a_transmission_with_its_own_rate() {
        let text =
            "[link]\ndelay = \"1 ms\"\n[up]\nldacs = { link = \"rl\", rate = \"158 kbit/s\", coding = \"joint\", fer = 0.01, arq = false }\n[down]\nldacs = { link = \"fl\", rate = \"158 kbit/s\" }\n";
        let p = Profile::parse(text, "joint.toml", &[], &mut |_| Err("no files".into())).expect("parses");
        let r = run(&p, &Batch { up: true, count: 50_000, size: 68, interval: Duration::from_millis(8) }, 5);
        let (lo, hi) = around(0.01, r.sent);
        assert!((lo..=hi).contains(&r.loss()), "loss {} outside {lo}–{hi}", r.loss());
        let e = Profile::parse(&text.replace(", fer = 0.01", ""), "joint.toml", &[], &mut |_| Err("no files".into())).expect_err("refused").to_string();
        assert!(e.contains("coding") && e.contains("fer"), "{e}");
    }

    #[test]
    fn the_same_seed_gives_the_same_batch() {
        let p = profile("ldacs1-158k");
        let b = Batch { up: false, count: 5_000, size: 60, interval: Duration::from_millis(8) };
        assert_eq!(run(&p, &b, 11), run(&p, &b, 11));
    }
}
