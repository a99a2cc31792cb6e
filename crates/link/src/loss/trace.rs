//! Loss that follows a measured loss-rate series: one rate per window of
//! fixed length (the flight studies report loss per 100 s window), Bernoulli
//! within a window, repeating after the last window.

use rand::Rng;

use super::LossModel;
use crate::jitter::LinkRng;
use crate::time::{Duration, Instant};
use crate::units::parse_probability;

#[derive(Clone, Debug, PartialEq)]
pub struct LossTrace {
    pub window: Duration,
    pub rates: Vec<f64>,
}

impl LossTrace {
    /// One loss rate per line (`7%` or `0.07`); `#` starts a comment.
    pub fn parse(text: &str, window: Duration) -> Result<Self, String> {
        if window == Duration::ZERO {
            return Err("the window must be longer than 0".into());
        }
        let mut rates = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let t = raw.split('#').next().unwrap_or("").trim();
            if t.is_empty() {
                continue;
            }
            rates.push(parse_probability(t).map_err(|e| format!("line {}: expected {e}", i + 1))?);
        }
        if rates.is_empty() {
            return Err("the trace has no windows".into());
        }
        Ok(LossTrace { window, rates })
    }

    pub fn rate_at(&self, now: Instant) -> f64 {
        let i = (now.0 / self.window.0) as usize % self.rates.len();
        self.rates[i]
    }
}

impl LossModel for LossTrace {
    fn lose(&mut self, now: Instant, rng: &mut LinkRng) -> bool {
        let p = self.rate_at(now);
        p > 0.0 && rng.random::<f64>() < p
    }
    fn mean_loss(&self) -> f64 {
        self.rates.iter().sum::<f64>() / self.rates.len() as f64
    }
}
