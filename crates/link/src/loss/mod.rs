//! Random loss models: one decision per packet, on the wire.
//!
//! Loss is applied after the rate stage, as corruption on a real channel
//! is: a lost packet has still used its transmission time. Every model draws
//! from the RNG the pipeline hands it, so the same seed gives the same drops.

mod bernoulli;
mod gilbert_elliott;
mod levels;
pub mod stage;
mod trace;

pub use bernoulli::Bernoulli;
pub use gilbert_elliott::GilbertElliott;
pub use levels::{LevelsSpec, LossLevels};
pub use stage::{LossStage, KIND};
pub use trace::LossTrace;

use crate::jitter::LinkRng;
use crate::time::Instant;

pub trait LossModel: Send {
    /// Whether the packet passing at `now` is lost.
    fn lose(&mut self, now: Instant, rng: &mut LinkRng) -> bool;
    /// The long-run loss probability, for summaries.
    fn mean_loss(&self) -> f64;
}
