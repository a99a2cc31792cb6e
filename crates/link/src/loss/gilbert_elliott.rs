//! Gilbert–Elliott burst loss with netem's four `gemodel` parameters.
//!
//! Two states, Good and Bad. Per packet: the loss decision uses the current
//! state (`1 - k` in Good, `1 - h` in Bad), then the state moves
//! Good → Bad with probability `p` and Bad → Good with probability `r`.
//! Steady state: P(Bad) = p / (p + r); loss = P(Good)(1-k) + P(Bad)(1-h);
//! the mean time in Bad is 1 / r packets. With `1-h = 1` and `1-k = 0` this
//! is the simple Gilbert model, whose mean loss burst is 1 / r packets.

use rand::Rng;

use super::LossModel;
use crate::jitter::LinkRng;
use crate::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    /// P(Good → Bad) per packet.
    pub p: f64,
    /// P(Bad → Good) per packet.
    pub r: f64,
    /// Loss probability in Bad (netem's `1-h`).
    pub bad_loss: f64,
    /// Loss probability in Good (netem's `1-k`).
    pub good_loss: f64,
    pub in_bad: bool,
}

impl GilbertElliott {
    pub fn new(p: f64, r: f64, bad_loss: f64, good_loss: f64) -> Self {
        GilbertElliott { p, r, bad_loss, good_loss, in_bad: false }
    }
    pub fn p_bad(&self) -> f64 {
        if self.p + self.r == 0.0 {
            0.0
        } else {
            self.p / (self.p + self.r)
        }
    }
}

impl LossModel for GilbertElliott {
    fn lose(&mut self, _now: Instant, rng: &mut LinkRng) -> bool {
        let loss_p = if self.in_bad { self.bad_loss } else { self.good_loss };
        let lost = loss_p > 0.0 && rng.random::<f64>() < loss_p;
        let flip = if self.in_bad { self.r } else { self.p };
        if flip > 0.0 && rng.random::<f64>() < flip {
            self.in_bad = !self.in_bad;
        }
        lost
    }
    fn mean_loss(&self) -> f64 {
        let b = self.p_bad();
        (1.0 - b) * self.good_loss + b * self.bad_loss
    }
}
