//! Many aircraft in one L-DACS 1 cell (`ldacs = { …, each_user = true }`):
//! each user ([`Meta::user`]: each passenger address of `run
//! --passengers`, standing for one aircraft) is an aircraft of its own, with
//! its own queue, access requests, ARQ and in-order delivery, as in
//! [`Ldacs`]; `rate` is the cell's, and the ground station splits it evenly
//! among the aircraft with a transmission waiting or on the air when one
//! starts (an approximation of its tile scheduling: the share is fixed for
//! the transmission's length). One aircraft alone sends at the whole rate,
//! as the single-user stage does.

use std::collections::HashMap;

use rand::SeedableRng;

use super::{Ldacs, LdacsSpec};
use crate::jitter::LinkRng;
use crate::packet::{Drop, Meta};
use crate::stage::{Stage, StageEvent};
use crate::time::Instant;

/// One cell's aircraft, in the order they first sent.
pub struct Cell {
    spec: LdacsSpec,
    /// The stage's generator: the first aircraft's, and the seed the
    /// others' are derived from (so one aircraft alone draws what the
    /// single-user stage draws).
    rng: LinkRng,
    aircraft: Vec<Ldacs>,
    by_user: HashMap<u32, usize>,
}

impl Cell {
    pub fn new(spec: LdacsSpec, rng: LinkRng) -> Self {
        Cell { spec, rng, aircraft: Vec::new(), by_user: HashMap::new() }
    }

    fn active(a: &Ldacs) -> bool {
        a.busy.is_some() || !a.ready.is_empty()
    }

    /// Each aircraft's share for what starts next: the cell's rate over
    /// the aircraft sending.
    fn share(&mut self) {
        let n = self.aircraft.iter().filter(|a| Self::active(a)).count().max(1);
        let rate = self.spec.rate_bps / n as f64;
        for a in &mut self.aircraft {
            a.rate_bps = rate;
        }
    }

    /// Runs every aircraft up to `until`.
    fn advance(&mut self, until: Instant, drops: &mut Vec<Drop>) {
        self.share();
        for a in &mut self.aircraft {
            a.advance(until, drops);
        }
    }

    fn aircraft_of(&mut self, user: u32) -> usize {
        if let Some(&i) = self.by_user.get(&user) {
            return i;
        }
        let k = self.aircraft.len() as u64;
        let rng = if k == 0 {
            self.rng.clone()
        } else {
            let mut seed = self.rng.get_seed();
            for (b, x) in seed[24..].iter_mut().zip(k.to_le_bytes()) {
                *b ^= x;
            }
            LinkRng::from_seed(seed)
        };
        self.aircraft.push(Ldacs::new(self.spec.clone(), rng));
        self.by_user.insert(user, self.aircraft.len() - 1);
        self.aircraft.len() - 1
    }
}

impl Stage for Cell {
    fn name(&self) -> &'static str {
        "ldacs"
    }

    fn enqueue(&mut self, at: Instant, pkt: Meta, drops: &mut Vec<Drop>) {
        self.advance(at, drops);
        let i = self.aircraft_of(pkt.user);
        self.aircraft[i].enqueue(at, pkt, drops);
        // It may have joined the aircraft sending: the others' next
        // transmissions get a smaller share.
        self.share();
    }

    fn next_wakeup(&self) -> Option<Instant> {
        self.aircraft.iter().filter_map(|a| a.next_wakeup()).min()
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Vec<Drop>) -> Option<Meta> {
        self.advance(now, drops);
        // The earliest due of the aircraft's heads (each hands on in order).
        let i = (0..self.aircraft.len()).filter(|&i| self.aircraft[i].out.front().is_some_and(|m| m.due <= now)).min_by_key(|&i| self.aircraft[i].out.front().map(|m| m.due))?;
        self.aircraft[i].out.pop_front()
    }

    fn is_aggregate_safe(&self) -> bool {
        false
    }

    fn backlog_bytes(&self) -> u64 {
        self.aircraft.iter().map(|a| a.held_bytes).sum()
    }

    fn in_flight(&self) -> usize {
        self.aircraft.iter().map(|a| a.in_flight()).sum()
    }

    fn take_events(&mut self, out: &mut Vec<StageEvent>) {
        for a in &mut self.aircraft {
            a.take_events(out);
        }
    }

    fn cut(&mut self, at: Instant, drops: &mut Vec<Drop>) {
        for a in &mut self.aircraft {
            a.cut(at, drops);
        }
    }
}
