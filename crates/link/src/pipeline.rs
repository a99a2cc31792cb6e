//! One direction of a link: bottleneck (queue + rate + outages) → random
//! loss → propagation delay and jitter.
//!
//! Call order: [`enqueue`](Pipeline::enqueue) each packet as it arrives; ask
//! [`next_wakeup`](Pipeline::next_wakeup); at or after that time call
//! [`dequeue`](Pipeline::dequeue) until it returns `None`; collect drops with
//! [`take_drops`](Pipeline::take_drops). `now` never decreases. The pipeline
//! owns its RNGs (one stream per stage, from the run's seed and the
//! direction's stream number), so one direction's decisions depend only on
//! its own packets and the seed — not on thread timing or the other
//! direction.

use rand::SeedableRng;

use crate::bottleneck::Bottleneck;
use crate::delay::DelayLine;
use crate::jitter::LinkRng;
use crate::loss::LossModel;
use crate::packet::{Drop, DropReason, Packet};
use crate::profile::DirectionSpec;
use crate::time::{Duration, Instant};

pub struct Pipeline<P> {
    bottleneck: Bottleneck<P>,
    loss: Option<Box<dyn LossModel>>,
    delay: DelayLine<P>,
    loss_rng: LinkRng,
    jitter_rng: LinkRng,
    next_id: u64,
    drops: Vec<Drop>,
}

/// An RNG for one stage of one direction: the seed picks the key, the
/// stream separates stages and directions.
pub fn stage_rng(seed: u64, stream: u64) -> LinkRng {
    let mut r = LinkRng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

impl<P> Pipeline<P> {
    /// Builds the pipeline for `spec`. `rtt` sizes a BDP queue; `stream`
    /// must differ between the directions and hops of one run.
    pub fn new(spec: &DirectionSpec, rtt: Duration, seed: u64, stream: u64) -> Self {
        Pipeline {
            bottleneck: Bottleneck::new(spec.build_server(), spec.build_queue(rtt), spec.build_outages()),
            loss: spec.build_loss(),
            delay: DelayLine::new(spec.delay.clone(), spec.jitter.clone(), spec.reorder),
            loss_rng: stage_rng(seed, stream * 4),
            jitter_rng: stage_rng(seed, stream * 4 + 1),
            next_id: 0,
            drops: Vec::new(),
        }
    }

    /// Whether the pipeline may treat a burst of segments as one packet
    /// without changing any outcome: no rate limit, loss, jitter or outage.
    pub fn is_aggregate_safe(&self) -> bool {
        self.bottleneck.is_transparent() && self.loss.is_none() && self.delay.is_jitter_free()
    }

    /// A packet of `len` bytes enters the link at `now`. Returns its id.
    pub fn enqueue(&mut self, now: Instant, len: u32, payload: P) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.bottleneck.enqueue(now, Packet::new(id, len, now, payload), &mut self.drops);
        id
    }

    pub fn next_wakeup(&self) -> Option<Instant> {
        match (self.bottleneck.next_wakeup(), self.delay.next_wakeup()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next packet due at the far end by `now`, with `meta.due` set to
    /// the exact time it should leave.
    pub fn dequeue(&mut self, now: Instant) -> Option<Packet<P>> {
        while let Some(p) = self.bottleneck.dequeue(now, &mut self.drops) {
            let lost = match &mut self.loss {
                Some(l) => l.lose(p.meta.tx_end, &mut self.loss_rng),
                None => false,
            };
            if lost {
                self.drops.push(Drop { meta: p.meta, at: p.meta.tx_end, reason: DropReason::Loss });
            } else {
                self.delay.enqueue(p, &mut self.jitter_rng);
            }
        }
        self.delay.dequeue(now)
    }

    /// Drops since the last call, in the order they happened per stage.
    pub fn take_drops(&mut self) -> std::vec::Drain<'_, Drop> {
        self.drops.drain(..)
    }

    pub fn backlog_bytes(&self) -> u64 {
        self.bottleneck.backlog_bytes()
    }
    pub fn in_flight(&self) -> usize {
        self.delay.in_flight()
    }
}
