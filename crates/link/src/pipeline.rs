//! One direction of a link: the stages the profile asks for, chained in the
//! registry's order (today bottleneck → loss → delay; see
//! [`registry`](crate::registry)).
//!
//! Call order: [`enqueue`](Pipeline::enqueue) each packet as it arrives; ask
//! [`next_wakeup`](Pipeline::next_wakeup); at or after that time call
//! [`dequeue`](Pipeline::dequeue) until it returns `None`; collect drops with
//! [`take_drops`](Pipeline::take_drops). `now` never decreases. Stages see
//! only packet metadata; the pipeline keeps the payloads and hands each back
//! with its packet. Each stage and direction draws from its own seeded
//! stream, so one direction's decisions depend only on its own packets and
//! the seed — not on thread timing or the other direction.

use std::collections::VecDeque;

use crate::packet::{Drop, Packet};
use crate::profile::DirectionSpec;
use crate::stage::{HopShare, Stage, StageContext};
use crate::time::{Duration, Instant};

pub struct Pipeline<P> {
    stages: Vec<Box<dyn Stage>>,
    /// Payloads of the packets inside, by `id - first_id`.
    payloads: VecDeque<Option<P>>,
    first_id: u64,
    next_id: u64,
    drops: Vec<Drop>,
    /// Drops whose payloads are already released.
    released: usize,
    /// Packets that left the last stage while the pipeline ran up to a cut.
    settled: VecDeque<crate::packet::Meta>,
    /// Whether any stage ever cuts (a handover); if not, no cut is looked
    /// for on the per-packet path.
    cutting: bool,
}

impl<P> Pipeline<P> {
    /// Builds the pipeline for `spec` from the stage registry. `rtt` sizes
    /// a BDP queue; `stream` must differ between the directions and hops of
    /// one run.
    pub fn new(spec: &DirectionSpec, rtt: Duration, seed: u64, stream: u64) -> Self {
        let ctx = StageContext { seed, stream, rtt, hop: None };
        Self::from_stages(crate::registry::build(spec, &ctx))
    }

    /// The two directions of one hop, built together so that what one
    /// learns at run time reaches the other ([`HopShare`]): `stream` is
    /// the up direction's (even), the down direction's is the next.
    pub fn pair(up: &DirectionSpec, down: &DirectionSpec, rtt: Duration, seed: u64, stream: u64) -> (Self, Self) {
        let hop = Some(std::sync::Arc::new(HopShare::default()));
        let ctx = StageContext { seed, stream, rtt, hop };
        let up = Self::from_stages(crate::registry::build(up, &ctx));
        let ctx = StageContext { stream: stream + 1, ..ctx };
        (up, Self::from_stages(crate::registry::build(down, &ctx)))
    }

    /// A pipeline of the given stages, in order (at least one).
    pub fn from_stages(stages: Vec<Box<dyn Stage>>) -> Self {
        assert!(!stages.is_empty(), "a pipeline needs at least one stage");
        let cutting = stages.iter().any(|s| s.cut_at().is_some());
        Pipeline { stages, payloads: VecDeque::new(), first_id: 0, next_id: 0, drops: Vec::new(), released: 0, settled: VecDeque::new(), cutting }
    }

    /// Whether the pipeline may treat a burst of segments as one packet
    /// without changing any outcome: no rate limit, loss, jitter or outage.
    pub fn is_aggregate_safe(&self) -> bool {
        self.stages.iter().all(|s| s.is_aggregate_safe())
    }

    /// A packet of `len` bytes enters the link at `now`. Returns its id.
    pub fn enqueue(&mut self, now: Instant, len: u32, payload: P) -> u64 {
        self.enqueue_for(now, len, 0, payload)
    }

    /// [`enqueue`](Self::enqueue) for a packet of `user` ([`Meta::user`]).
    pub fn enqueue_for(&mut self, now: Instant, len: u32, user: u32, payload: P) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.payloads.push_back(Some(payload));
        let mut meta = Packet::new(id, len, now, ()).meta;
        meta.user = user;
        // `from_stages` refuses an empty list.
        self.stages[0].enqueue(now, meta, &mut self.drops);
        self.release_dropped();
        id
    }

    pub fn next_wakeup(&self) -> Option<Instant> {
        let settled = self.settled.front().map(|m| m.due);
        self.stages.iter().filter_map(|s| s.next_wakeup()).chain(settled).min()
    }

    /// Moves everything each stage has released by `now` into the next
    /// one, front to back.
    fn shift(&mut self, now: Instant) {
        for i in 0..self.stages.len().saturating_sub(1) {
            let (head, tail) = self.stages.split_at_mut(i + 1);
            while let Some(m) = head[i].dequeue(now, &mut self.drops) {
                tail[0].enqueue(m.due, m, &mut self.drops);
            }
        }
    }

    /// Applies the cuts due by `now`, each at its own time: the stages run
    /// up to it, then the ones after the cutting stage lose what they hold.
    /// A cut that waits ([`Stage::cut_waits`]) is asked when it happens,
    /// with when the later stages emptied, once they have.
    fn apply_cuts(&mut self, now: Instant) {
        while let Some((at, i)) = self.stages.iter().enumerate().filter_map(|(i, s)| s.cut_at().map(|t| (t, i))).min() {
            if at > now {
                return;
            }
            self.shift(at);
            self.settle(at);
            let at = if self.stages[i].cut_waits() {
                let emptied = self.run_until_empty(i, at, now);
                match self.stages[i].cut_when(now, emptied) {
                    Some(t) if t <= now => {
                        self.shift(t);
                        self.settle(t);
                        t
                    }
                    // Later: cut at its time.
                    Some(_) => continue,
                    // Not known yet: asked again at the next step.
                    None => return,
                }
            } else {
                at
            };
            for s in &mut self.stages[i + 1..] {
                s.cut(at, &mut self.drops);
            }
            self.stages[i].cut_done();
        }
    }

    /// Moves what the last stage released by `at` out of the chain.
    fn settle(&mut self, at: Instant) {
        let last = self.stages.len() - 1;
        while let Some(m) = self.stages[last].dequeue(at, &mut self.drops) {
            self.settled.push_back(m);
        }
    }

    /// Runs the stages after `i` from `from`, event by event, up to `now`:
    /// the time they last held bytes for transmission if they hold none
    /// by then.
    fn run_until_empty(&mut self, i: usize, from: Instant, now: Instant) -> Option<Instant> {
        let mut t = from;
        loop {
            if self.stages[i + 1..].iter().all(|s| s.backlog_bytes() == 0) {
                return Some(t);
            }
            // Nothing more by `now` (or a stage stuck at its time, not
            // expected): asked again at the cut's next time.
            let next = self.stages[i + 1..].iter().filter_map(|s| s.next_wakeup()).min()?;
            if next > now || next <= t {
                return None;
            }
            t = next;
            self.shift(t);
            self.settle(t);
        }
    }

    /// The next packet due at the far end by `now`, with `meta.due` set to
    /// the exact time it should leave.
    pub fn dequeue(&mut self, now: Instant) -> Option<Packet<P>> {
        // Cuts first, then move everything released by `now` down the
        // chain and take from the last stage.
        if self.cutting {
            self.apply_cuts(now);
        }
        let meta = match self.settled.pop_front() {
            Some(m) => Some(m),
            None => {
                self.shift(now);
                self.stages.last_mut()?.dequeue(now, &mut self.drops)
            }
        };
        self.release_dropped();
        let meta = meta?;
        let payload = self.take_payload(meta.id).expect("every packet inside has its payload");
        Some(Packet { meta, payload })
    }

    /// Drops since the last call, in the order the stages reported them.
    pub fn take_drops(&mut self) -> std::vec::Drain<'_, Drop> {
        self.released = 0;
        self.drops.drain(..)
    }

    /// What the stages did since the last call, other than packets' fates
    /// (see [`Note`](crate::stage::Note)), appended to `out` stage by stage.
    pub fn take_events(&mut self, out: &mut Vec<crate::stage::StageEvent>) {
        for s in &mut self.stages {
            s.take_events(out);
        }
    }

    /// The direction's capacity now, bit/s, if a stage's changes over time
    /// (the lowest such stage's).
    pub fn capacity_bps(&self) -> Option<f64> {
        self.stages.iter().filter_map(|s| s.capacity_bps()).reduce(f64::min)
    }

    pub fn backlog_bytes(&self) -> u64 {
        self.stages.iter().map(|s| s.backlog_bytes()).sum()
    }

    /// Packets inside the link (queued, on the wire or propagating).
    pub fn in_flight(&self) -> usize {
        self.stages.iter().map(|s| s.in_flight()).sum::<usize>() + self.settled.len()
    }

    fn release_dropped(&mut self) {
        for i in self.released..self.drops.len() {
            let id = self.drops[i].meta.id;
            self.take_payload(id);
        }
        self.released = self.drops.len();
    }

    fn take_payload(&mut self, id: u64) -> Option<P> {
        let slot = self.payloads.get_mut(id.checked_sub(self.first_id)? as usize)?;
        let p = slot.take();
        while let Some(None) = self.payloads.front() {
            self.payloads.pop_front();
            self.first_id += 1;
        }
        p
    }
}
