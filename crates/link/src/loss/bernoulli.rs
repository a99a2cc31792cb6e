//! Independent loss with a fixed probability.

use rand::Rng;

use super::LossModel;
use crate::jitter::LinkRng;
use crate::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bernoulli {
    pub p: f64,
}

impl LossModel for Bernoulli {
    fn lose(&mut self, _now: Instant, rng: &mut LinkRng) -> bool {
        self.p > 0.0 && rng.random::<f64>() < self.p
    }
    fn mean_loss(&self) -> f64 {
        self.p
    }
}
