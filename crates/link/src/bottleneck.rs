//! The bottleneck stage: a drop-tail queue feeding a rate server, gated by
//! an outage schedule.
//!
//! Call order, as for every stage: [`enqueue`](Bottleneck::enqueue) packets
//! as they arrive, ask [`next_wakeup`](Bottleneck::next_wakeup), and call
//! [`dequeue`](Bottleneck::dequeue) until it returns `None`. `now` must never
//! decrease. Times are logical: a packet's `tx_start` is
//! `max(arrival, previous tx_end)` (moved past hold windows), whatever time
//! the driver happened to call at, so a late wake-up never slows the link.

use std::collections::VecDeque;

use crate::outage::{Gate, OutageSchedule};
use crate::packet::{Drop, DropReason, Packet};
use crate::queue::DropTail;
use crate::rate::Server;
use crate::time::Instant;

pub struct Bottleneck<P> {
    queue: VecDeque<Packet<P>>,
    accounting: DropTail,
    server: Box<dyn Server>,
    outages: OutageSchedule,
    /// When the previous packet finished (the link is free from then on).
    free_at: Instant,
    /// The head's fate, computed once when it reaches the head.
    head: Option<HeadFate>,
}

#[derive(Clone, Copy, Debug)]
enum HeadFate {
    Sent { start: Instant, end: Instant },
    Dropped { at: Instant },
}

impl<P> Bottleneck<P> {
    pub fn new(server: Box<dyn Server>, queue: DropTail, outages: OutageSchedule) -> Self {
        Bottleneck { queue: VecDeque::new(), accounting: queue, server, outages, free_at: Instant::ZERO, head: None }
    }

    /// Whether this stage can never delay or drop a packet.
    pub fn is_transparent(&self) -> bool {
        self.server.is_unlimited() && self.outages.is_empty()
    }

    /// Accepts a packet at `now`, or drops it if the queue is full.
    pub fn enqueue(&mut self, now: Instant, mut pkt: Packet<P>, drops: &mut Vec<Drop>) {
        pkt.meta.arrived = now;
        if !self.accounting.admit(pkt.meta.len) {
            drops.push(Drop { meta: pkt.meta, at: now, reason: DropReason::Queue });
            return;
        }
        self.queue.push_back(pkt);
        if self.head.is_none() {
            self.plan_head();
        }
    }

    fn plan_head(&mut self) {
        self.head = self.queue.front().map(|p| {
            let may_start = p.meta.arrived.max(self.free_at);
            match self.outages.gate(may_start) {
                Gate::Open(start) => {
                    let end = self.server.finish(start, p.meta.len);
                    HeadFate::Sent { start, end }
                }
                Gate::Dropped(at) => HeadFate::Dropped { at },
            }
        });
    }

    /// The time at which [`dequeue`](Self::dequeue) has something to do.
    pub fn next_wakeup(&self) -> Option<Instant> {
        match self.head? {
            HeadFate::Sent { end, .. } => Some(end),
            HeadFate::Dropped { at } => Some(at),
        }
    }

    /// The next packet whose transmission has ended by `now`, with its
    /// `tx_start` and `tx_end` stamped. Outage drops are pushed to `drops`.
    pub fn dequeue(&mut self, now: Instant, drops: &mut Vec<Drop>) -> Option<Packet<P>> {
        loop {
            match self.head? {
                HeadFate::Dropped { at } if at <= now => {
                    // The queue cannot be empty while `head` is Some.
                    let p = self.queue.pop_front().expect("head planned for a queued packet");
                    self.accounting.release(p.meta.len);
                    self.free_at = self.free_at.max(at);
                    drops.push(Drop { meta: p.meta, at, reason: DropReason::Outage });
                    self.plan_head();
                }
                HeadFate::Sent { start, end } if end <= now => {
                    let mut p = self.queue.pop_front().expect("head planned for a queued packet");
                    self.accounting.release(p.meta.len);
                    p.meta.tx_start = start;
                    p.meta.tx_end = end;
                    self.free_at = end;
                    self.plan_head();
                    return Some(p);
                }
                _ => return None,
            }
        }
    }

    pub fn backlog_bytes(&self) -> u64 {
        self.accounting.bytes()
    }
    pub fn backlog_packets(&self) -> u64 {
        self.accounting.packets()
    }
}
