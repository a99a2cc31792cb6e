//! Loss whose rate changes with time: a level holds for an exponentially
//! distributed time of mean `hold`, then the next level is drawn from
//! `levels` by weight (a semi-Markov chain of i.i.d. levels); within a
//! level each packet is lost with its rate. Flights see this: seed 000
//! measured MSS loss per 100 s window with a median of 7 % and a 90th
//! percentile near 40 %, and DA2GC windows mostly free of loss — loss that
//! comes and goes over minutes, which neither one Bernoulli rate nor a
//! per-packet Gilbert–Elliott chain (whose bursts shrink as traffic grows)
//! gives.
//!
//! The schedule of levels is drawn from the hop's shared RNG
//! ([`crate::stage::StageContext::hop_rng`]): both directions of a hop are
//! in the same level at the same time (a beam edge, weather, a congested
//! cell affect both), each with its own per-packet draws.

use rand::Rng;

use super::LossModel;
use crate::jitter::LinkRng;
use crate::profile::describe::pct;
use crate::time::{Duration, Instant};

/// The parameters: each level's loss rate and weight, and the mean hold.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelsSpec {
    /// `(loss rate, weight)`; weights are relative (need not sum to 1).
    pub levels: Vec<(f64, f64)>,
    /// The mean time a level holds (exponentially distributed).
    pub hold: Duration,
}

impl LevelsSpec {
    /// Checks the levels: at least one, rates in [0, 1], weights ≥ 0 with
    /// a positive sum, a hold above 0.
    pub fn new(levels: Vec<(f64, f64)>, hold: Duration) -> Result<Self, String> {
        if levels.is_empty() {
            return Err("expected at least one level".into());
        }
        if levels.iter().any(|(r, w)| !(0.0..=1.0).contains(r) || !w.is_finite() || *w < 0.0) {
            return Err("expected rates between 0 % and 100 % and weights of 0 or more".into());
        }
        if levels.iter().map(|l| l.1).sum::<f64>() <= 0.0 {
            return Err("expected weights that sum to more than 0".into());
        }
        if hold == Duration::ZERO {
            return Err("hold: expected a time above 0".into());
        }
        Ok(LevelsSpec { levels, hold })
    }

    /// The long-run loss: the levels' rates weighted (every level's hold
    /// has the same mean, so time shares are the weights).
    pub fn mean_loss(&self) -> f64 {
        let total: f64 = self.levels.iter().map(|l| l.1).sum();
        self.levels.iter().map(|(r, w)| r * w).sum::<f64>() / total
    }

    /// What a profile's summary says.
    pub fn describe(&self) -> String {
        let ls: Vec<String> = self.levels.iter().map(|(r, w)| format!("{} ×{w}", pct(*r))).collect();
        format!("levels {} held {} on average (mean {})", ls.join(", "), self.hold, pct(self.mean_loss()))
    }
}

/// The model at run time: the current level and when it ends.
pub struct LossLevels {
    spec: LevelsSpec,
    schedule: LinkRng,
    rate: f64,
    until: Instant,
}

impl LossLevels {
    /// `schedule` must be the hop's shared RNG so both directions agree.
    pub fn new(spec: LevelsSpec, schedule: LinkRng) -> Self {
        let mut l = LossLevels { spec, schedule, rate: 0.0, until: Instant::ZERO };
        l.next_level(Instant::ZERO);
        l
    }

    fn next_level(&mut self, start: Instant) {
        let total: f64 = self.spec.levels.iter().map(|l| l.1).sum();
        let mut x = self.schedule.random::<f64>() * total;
        self.rate = self.spec.levels.last().map(|l| l.0).unwrap_or(0.0);
        for (r, w) in &self.spec.levels {
            if x < *w {
                self.rate = *r;
                break;
            }
            x -= w;
        }
        // Exponential hold: −ln(U) × mean, U in (0, 1]; at least 1 ns.
        let u = 1.0 - self.schedule.random::<f64>();
        let hold = (-u.ln() * self.spec.hold.0 as f64).max(1.0) as u64;
        self.until = Instant(start.0.saturating_add(hold));
    }

    /// The loss rate in force at `now` (time only moves forward).
    pub fn rate_at(&mut self, now: Instant) -> f64 {
        while now >= self.until && self.until.0 < u64::MAX {
            let start = self.until;
            self.next_level(start);
        }
        self.rate
    }
}

impl LossModel for LossLevels {
    fn lose(&mut self, now: Instant, rng: &mut LinkRng) -> bool {
        let p = self.rate_at(now);
        p > 0.0 && rng.random::<f64>() < p
    }
    fn mean_loss(&self) -> f64 {
        self.spec.mean_loss()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::stage_rng;

    fn spec() -> LevelsSpec {
        LevelsSpec::new(vec![(0.0, 3.0), (0.2, 1.0)], Duration::from_secs(100)).unwrap()
    }

    #[test]
    fn levels_hold_for_their_mean_and_take_their_weights_share_of_time() {
        let mut l = LossLevels::new(spec(), stage_rng(7, 1));
        // 10 000 holds of 100 s on average: sample every second.
        let secs = 1_000_000u64;
        let (mut in_bad, mut changes, mut last) = (0u64, 0u64, -1.0);
        for s in 0..secs {
            let r = l.rate_at(Instant(s * 1_000_000_000));
            in_bad += (r > 0.0) as u64;
            changes += (r != last && last >= 0.0) as u64;
            last = r;
        }
        let share = in_bad as f64 / secs as f64;
        // A quarter of the time (weights 3 : 1), within sampling error of
        // ~2 500 bad holds (±3 standard errors ≈ ±0.03).
        assert!((share - 0.25).abs() < 0.03, "share in the lossy level {share}");
        // A level change happens at a hold's end unless the same level is
        // drawn again (P = 0.75² + 0.25² = 0.625): 10 000 × 0.375 ≈ 3 750.
        assert!((3_300..4_200).contains(&changes), "{changes} changes");
        assert!((l.mean_loss() - 0.05).abs() < 1e-12);
    }

    #[test]
    fn two_directions_from_one_shared_rng_see_the_same_levels() {
        let mut a = LossLevels::new(spec(), stage_rng(9, 5));
        let mut b = LossLevels::new(spec(), stage_rng(9, 5));
        for s in (0..100_000u64).step_by(7) {
            let t = Instant(s * 1_000_000_000);
            assert_eq!(a.rate_at(t), b.rate_at(t));
        }
    }

    #[test]
    fn bad_levels_are_refused() {
        assert!(LevelsSpec::new(vec![], Duration::from_secs(1)).is_err());
        assert!(LevelsSpec::new(vec![(1.5, 1.0)], Duration::from_secs(1)).is_err());
        assert!(LevelsSpec::new(vec![(0.1, 0.0)], Duration::from_secs(1)).is_err());
        assert!(LevelsSpec::new(vec![(0.1, 1.0)], Duration::ZERO).is_err());
    }
}
