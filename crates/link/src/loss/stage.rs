//! The random-loss stage: one decision per packet as its last bit leaves
//! the sender (a lost packet has still used its transmission time).

use std::collections::VecDeque;

use super::LossModel;
use crate::jitter::LinkRng;
use crate::packet::{Drop, DropReason, Meta};
use crate::profile::describe::pct;
use crate::profile::keys::{parse_loss, RawKeys};
use crate::profile::{DirectionSpec, Loader, LossSpec, ProfileError};
use crate::registry::StageKind;
use crate::stage::{pop_due, Stage, StageContext};
use crate::time::Instant;

pub struct LossStage {
    model: Box<dyn LossModel>,
    rng: LinkRng,
    passed: VecDeque<Meta>,
}

impl LossStage {
    pub fn new(model: Box<dyn LossModel>, rng: LinkRng) -> Self {
        LossStage { model, rng, passed: VecDeque::new() }
    }
}

impl Stage for LossStage {
    fn name(&self) -> &'static str {
        "loss"
    }
    fn enqueue(&mut self, at: Instant, mut pkt: Meta, drops: &mut Vec<Drop>) {
        if self.model.lose(at, &mut self.rng) {
            drops.push(Drop { meta: pkt, at, reason: DropReason::Loss });
        } else {
            pkt.due = at;
            self.passed.push_back(pkt);
        }
    }
    fn next_wakeup(&self) -> Option<Instant> {
        self.passed.front().map(|p| p.due)
    }
    fn dequeue(&mut self, now: Instant, _drops: &mut Vec<Drop>) -> Option<Meta> {
        pop_due(&mut self.passed, now)
    }
    fn is_aggregate_safe(&self) -> bool {
        false
    }
    fn in_flight(&self) -> usize {
        self.passed.len()
    }
}

/// Random loss in the stage registry: key `loss`.
pub struct Kind;

pub static KIND: Kind = Kind;

/// The loss stage's RNG slot (see [`StageContext::rng`]).
pub const RNG_SLOT: u64 = 0;

/// The hop-shared RNG key of the `levels` model's schedule (keys
/// `slot × 256 + i`, as the bonded stage's).
const LEVELS_HOP_KEY: u64 = RNG_SLOT * 256;

impl StageKind for Kind {
    fn name(&self) -> &'static str {
        "loss"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["loss"]
    }
    fn rng_slot(&self) -> Option<u64> {
        Some(RNG_SLOT)
    }
    fn parse(&self, raw: &RawKeys, load: Loader<'_>, d: &mut DirectionSpec) -> Result<(), ProfileError> {
        if let Some(r) = raw.get("loss") {
            d.loss = parse_loss(r, load)?;
        }
        let text = match &d.loss {
            LossSpec::None => return Ok(()),
            LossSpec::Bernoulli(p) => pct(*p),
            LossSpec::GilbertElliott { p, r, bad_loss, good_loss } => format!("gilbert-elliott p={} r={} bad_loss={} good_loss={}", pct(*p), pct(*r), pct(*bad_loss), pct(*good_loss)),
            LossSpec::Trace { path, trace } => format!("trace {path} per {} (mean {})", trace.window, pct(trace.mean_loss())),
            LossSpec::Levels(spec) => spec.describe(),
        };
        d.described.insert("loss".into(), text);
        Ok(())
    }
    fn build(&self, spec: &DirectionSpec, ctx: &StageContext) -> Option<Box<dyn Stage>> {
        Some(Box::new(LossStage::new(spec.build_loss(|| ctx.hop_rng(LEVELS_HOP_KEY))?, ctx.rng(RNG_SLOT))))
    }
}
