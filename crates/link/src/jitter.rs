//! Jitter distributions: a random extra one-way delay per packet.
//!
//! Symmetric distributions (normal, uniform) are centred on zero so the mean
//! delay stays at the configured value; the delay line clamps the total at
//! zero. Pareto is one-sided (a heavy tail of late packets). Empirical draws
//! from measured samples.

use rand::Rng;
use rand_distr::{Distribution, Normal, Pareto as ParetoDist};

use crate::time::Duration;

pub type LinkRng = rand_chacha::ChaCha8Rng;

#[derive(Clone, Debug, PartialEq)]
pub enum Jitter {
    /// Normal with mean 0 and standard deviation `sigma`.
    Normal { sigma: Duration },
    /// Uniform in `[-spread, +spread]`.
    Uniform { spread: Duration },
    /// Pareto with minimum `scale` and tail index `shape`, shifted so the
    /// smallest extra delay is 0.
    Pareto { scale: Duration, shape: f64 },
    /// Uniform choice among measured extra delays in nanoseconds (may be
    /// negative: samples relative to the base delay).
    Empirical { samples_ns: Vec<i64> },
}

impl Jitter {
    /// One extra delay in nanoseconds (may be negative).
    pub fn sample(&self, rng: &mut LinkRng) -> i64 {
        match self {
            Jitter::Normal { sigma } => {
                // sigma >= 0 is guaranteed by Duration being unsigned.
                let n = Normal::new(0.0, sigma.0 as f64).expect("finite, non-negative sigma");
                n.sample(rng).round() as i64
            }
            Jitter::Uniform { spread } => {
                let s = spread.0 as i64;
                if s == 0 {
                    0
                } else {
                    rng.random_range(-s..=s)
                }
            }
            Jitter::Pareto { scale, shape } => {
                if scale.0 == 0 {
                    return 0;
                }
                let p = ParetoDist::new(scale.0 as f64, *shape).expect("positive scale and shape");
                let x: f64 = p.sample(rng);
                (x - scale.0 as f64).min(i64::MAX as f64 / 2.0).round() as i64
            }
            Jitter::Empirical { samples_ns } => {
                if samples_ns.is_empty() {
                    0
                } else {
                    samples_ns[rng.random_range(0..samples_ns.len())]
                }
            }
        }
    }

    /// Parses an empirical sample file: one extra delay in milliseconds per
    /// line; `#` starts a comment.
    pub fn parse_empirical(text: &str) -> Result<Self, String> {
        let mut samples_ns = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let t = raw.split('#').next().unwrap_or("").trim();
            if t.is_empty() {
                continue;
            }
            let ms: f64 = t.parse().map_err(|_| format!("line {}: expected milliseconds, got {t:?}", i + 1))?;
            if !ms.is_finite() {
                return Err(format!("line {}: expected a finite number", i + 1));
            }
            samples_ns.push((ms * 1e6).round() as i64);
        }
        if samples_ns.is_empty() {
            return Err("no samples".into());
        }
        Ok(Jitter::Empirical { samples_ns })
    }
}
