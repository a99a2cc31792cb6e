//! Bonded channels that drop and redial (seed 004's Iridium multilink), as
//! one stage. Profile key: `bonded = { channels, rate, delay?, jitter?,
//! drop_every?, redial?, marginal?, queue?, start? }` ([`keys`]).
//!
//! A direction is parallel circuit-switched channels, each a serial line
//! with its own queue and rate, and its own delay, jitter (order kept
//! within a channel) and call-drop rate: seed 004 bonded two
//! Iridium-to-Iridium calls (ping 3.1 ± 1.8 s) and one Iridium-to-POTS call
//! (1.2 ± 0.4 s), so `channels` is either a count of identical channels or
//! a list of `{ name?, delay?, jitter?, drop_every? }` whose missing keys
//! come from the outer table. Packets are striped over the channels that
//! are up, round robin, packet by packet — as Linux's teql does — and the
//! far end does not put them back in order: a packet on a faster or
//! emptier channel overtakes one on another.
//!
//! Each channel drops its call at random (exponential times between drops
//! with mean `drop_every`; seed 004 saw 15, 8.7 and 0.3 drops per channel
//! in ≈47 minutes), losing everything it holds (drop reason `outage`), and
//! stays down for a redial time drawn uniformly from `redial` (default
//! 45–50 s: 10 s wait, dial, PPP). A call carries both directions, so a
//! channel's drops and redials (and its marginal spells) are drawn from an
//! RNG of the hop ([`StageContext::hop_rng`]), the same in both
//! directions: the forward and return link of a channel go down and come
//! back together. With every channel down, arrivals are dropped.
//! `start = "stationary"` begins each channel where a long run would find
//! it (down, mid-redial, with the long-run share of the time); the
//! default `"up"` begins with every call connected.
//! `marginal = { every, duration, loss }` puts a channel into a marginal
//! state from time to time: up, but losing `loss` of its packets.
//! Channel changes are reported as [`Note::Channel`] events for logs and monitors.

pub mod keys;

pub use keys::{Kind, KIND, RNG_SLOT};

use std::collections::VecDeque;

use rand::Rng;

use crate::jitter::{Jitter, LinkRng};
use crate::packet::{Drop, DropReason, Meta};
use crate::stage::{Note, Stage, StageContext, StageEvent};
use crate::time::{Duration, Instant};

/// One channel (one call) of a bonded link.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelSpec {
    /// What the call is, for descriptions ("Ir-Ir 1", "Ir-POTS").
    pub name: Option<String>,
    /// One-way delay and jitter of this call.
    pub delay: Duration,
    pub jitter: Option<Jitter>,
    /// Mean time between drops of this call; `None`: never.
    pub drop_every: Option<Duration>,
}

/// Whether the calls are all connected when the run starts, or each where
/// a long run would find it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BondStart {
    #[default]
    Up,
    Stationary,
}

/// The model's parameters for one direction.
#[derive(Clone, Debug, PartialEq)]
pub struct BondedSpec {
    pub channels: Vec<ChannelSpec>,
    /// Each channel's rate, bit/s.
    pub rate_bps: f64,
    /// Redial time, uniform in `[lo, hi]`.
    pub redial: (Duration, Duration),
    /// Marginal spells: mean time between them, how long, loss meanwhile.
    pub marginal: Option<(Duration, Duration, f64)>,
    /// Bytes each channel queues.
    pub queue_bytes: u64,
    pub start: BondStart,
}

impl BondedSpec {
    /// `n` channels alike.
    pub fn identical(n: usize, rate_bps: f64, delay: Duration, jitter: Option<Jitter>, drop_every: Option<Duration>) -> Self {
        let ch = ChannelSpec { name: None, delay, jitter, drop_every };
        BondedSpec { channels: vec![ch; n], rate_bps, redial: (Duration::from_secs(45), Duration::from_secs(50)), marginal: None, queue_bytes: 4_000, start: BondStart::Up }
    }

    /// The channels' mean one-way delay (what a packet meets on average
    /// under round robin).
    pub fn mean_delay(&self) -> Duration {
        let n = self.channels.len().max(1) as u64;
        Duration(self.channels.iter().map(|c| c.delay.0).sum::<u64>() / n)
    }

    /// The long-run share of time channel `i` is connected.
    pub fn availability(&self, i: usize) -> f64 {
        let redial = (self.redial.0.as_secs_f64() + self.redial.1.as_secs_f64()) / 2.0;
        match self.channels[i].drop_every {
            Some(e) => e.as_secs_f64() / (e.as_secs_f64() + redial),
            None => 1.0,
        }
    }
}

struct Channel {
    queue: VecDeque<Meta>,
    queued_bytes: u64,
    /// When the line finishes its current packet.
    free_at: Instant,
    /// Packets in flight to the far end, by due time (FIFO).
    flight: VecDeque<Meta>,
    last_due: Instant,
    /// Up from (inclusive) / down until.
    down_until: Option<Instant>,
    next_drop: Instant,
    marginal_from: Instant,
    marginal_until: Instant,
    /// Draw this call's drops and redials, and its marginal spells: the
    /// same sequences in both directions of the hop (two RNGs, so that
    /// the order traffic makes them drawn in does not matter).
    churn: LinkRng,
    spells: LinkRng,
}

/// The bonded link of one direction.
pub struct Bonded {
    spec: BondedSpec,
    rng: LinkRng,
    ch: Vec<Channel>,
    next_rr: usize,
    /// Channel changes not yet taken.
    events: Vec<StageEvent>,
    out: VecDeque<Meta>,
}

fn exp(rng: &mut LinkRng, mean: Duration) -> Duration {
    let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
    Duration::from_secs_f64(-u.ln() * mean.as_secs_f64())
}

fn redial_time(rng: &mut LinkRng, (lo, hi): (Duration, Duration)) -> Duration {
    Duration(lo.0 + if hi.0 > lo.0 { rng.random_range(0..=hi.0 - lo.0) } else { 0 })
}

impl Bonded {
    /// The stage for one direction; `ctx` gives the direction's RNG (for
    /// jitter and marginal loss) and the hop's (for each call's drops).
    pub fn new(spec: BondedSpec, ctx: &StageContext) -> Self {
        let rng = ctx.rng(RNG_SLOT);
        let ch = spec
            .channels
            .iter()
            .enumerate()
            .map(|(i, cs)| {
                let mut churn = ctx.hop_rng(RNG_SLOT * 256 + i as u64);
                let mut spells = ctx.hop_rng(RNG_SLOT * 256 + 128 + i as u64);
                let mut down_until = None;
                if spec.start == BondStart::Stationary && churn.random::<f64>() >= spec.availability(i) {
                    // Mid-redial: the rest of a redial time.
                    let r = redial_time(&mut churn, spec.redial);
                    down_until = Some(Instant::ZERO + Duration((r.0 as f64 * churn.random::<f64>()) as u64));
                }
                let next_drop = match (down_until, cs.drop_every) {
                    (None, Some(m)) => Instant::ZERO + exp(&mut churn, m),
                    _ => Instant(u64::MAX),
                };
                let (marginal_from, marginal_until) = match spec.marginal {
                    Some((every, dur, _)) => {
                        let from = Instant::ZERO + exp(&mut spells, every);
                        (from, from + dur)
                    }
                    None => (Instant(u64::MAX), Instant(u64::MAX)),
                };
                Channel {
                    queue: VecDeque::new(),
                    queued_bytes: 0,
                    free_at: Instant::ZERO,
                    flight: VecDeque::new(),
                    last_due: Instant::ZERO,
                    down_until,
                    next_drop,
                    marginal_from,
                    marginal_until,
                    churn,
                    spells,
                }
            })
            .collect();
        let mut b = Bonded { spec, rng, ch, next_rr: 0, events: Vec::new(), out: VecDeque::new() };
        for i in 0..b.ch.len() {
            if b.ch[i].down_until.is_some() {
                b.events.push(StageEvent { at: Instant::ZERO, note: Note::Channel { channel: i as u16, up: false } });
            }
        }
        b
    }

    /// How many channels are up at the time the stage has got to.
    pub fn channels_up(&self) -> usize {
        self.ch.iter().filter(|c| c.down_until.is_none()).count()
    }

    fn tx_time(&self, len: u32) -> Duration {
        Duration::from_secs_f64(len as f64 * 8.0 / self.spec.rate_bps)
    }

    /// Applies drops, redials and marginal spells that happen by `t`, in
    /// time order per channel.
    fn churn(&mut self, t: Instant, drops: &mut Vec<Drop>) {
        for i in 0..self.ch.len() {
            loop {
                let c = &self.ch[i];
                if let Some(until) = c.down_until {
                    if until > t {
                        break;
                    }
                    // Redialled.
                    let c = &mut self.ch[i];
                    c.down_until = None;
                    c.free_at = c.free_at.max(until);
                    c.next_drop = match self.spec.channels[i].drop_every {
                        Some(m) => until + exp(&mut c.churn, m),
                        None => Instant(u64::MAX),
                    };
                    self.events.push(StageEvent { at: until, note: Note::Channel { channel: i as u16, up: true } });
                    continue;
                }
                if c.next_drop > t {
                    break;
                }
                // The call drops: what the channel holds is lost.
                let at = c.next_drop;
                let c = &mut self.ch[i];
                let redial = redial_time(&mut c.churn, self.spec.redial);
                // Packets already on their way (sent before the drop) arrive.
                while let Some(m) = c.queue.pop_front() {
                    drops.push(Drop { meta: m, at, reason: DropReason::Outage });
                }
                c.queued_bytes = 0;
                let mut kept = VecDeque::new();
                while let Some(m) = c.flight.pop_front() {
                    if m.tx_end <= at {
                        kept.push_back(m);
                    } else {
                        drops.push(Drop { meta: m, at, reason: DropReason::Outage });
                    }
                }
                c.flight = kept;
                c.free_at = at;
                c.down_until = Some(at + redial);
                self.events.push(StageEvent { at, note: Note::Channel { channel: i as u16, up: false } });
            }
        }
    }

    /// Starts what each line can start by `t`.
    fn serve(&mut self, t: Instant, drops: &mut Vec<Drop>) {
        let marginal_loss = self.spec.marginal.map(|m| m.2).unwrap_or(0.0);
        let marginal = self.spec.marginal;
        for i in 0..self.ch.len() {
            while let Some(len) = self.ch[i].queue.front().map(|m| m.len) {
                let tx = self.tx_time(len);
                let c = &self.ch[i];
                let start = c.free_at.max(c.queue.front().map(|m| m.due).unwrap_or(Instant::ZERO));
                if start > t || c.down_until.is_some() {
                    break;
                }
                let end = start + tx;
                let mut m = self.ch[i].queue.pop_front().expect("a front packet");
                self.ch[i].queued_bytes -= m.len as u64;
                m.tx_start = start;
                m.tx_end = end;
                self.ch[i].free_at = end;
                // Marginal spells: up, but lossy.
                if let Some((every, dur, _)) = marginal {
                    while self.ch[i].marginal_until <= start {
                        let c = &mut self.ch[i];
                        let from = c.marginal_until + exp(&mut c.spells, every);
                        c.marginal_from = from;
                        c.marginal_until = from + dur;
                    }
                }
                let c = &self.ch[i];
                let in_marginal = start >= c.marginal_from && start < c.marginal_until;
                if in_marginal && self.rng.random::<f64>() < marginal_loss {
                    drops.push(Drop { meta: m, at: end, reason: DropReason::Loss });
                    continue;
                }
                let mut d = self.spec.channels[i].delay.0 as i64;
                if let Some(j) = &self.spec.channels[i].jitter {
                    d = d.saturating_add(j.sample(&mut self.rng)).max(0);
                }
                let c = &mut self.ch[i];
                let due = (end + Duration(d as u64)).max(c.last_due);
                c.last_due = due;
                m.due = due;
                c.flight.push_back(m);
            }
        }
    }

    fn advance(&mut self, t: Instant, drops: &mut Vec<Drop>) {
        // Step through line completions and churn in time order closely
        // enough: churn first (it may free or block lines), then serve.
        self.churn(t, drops);
        self.serve(t, drops);
        for c in &mut self.ch {
            while c.flight.front().is_some_and(|m| m.due <= t) {
                let m = c.flight.pop_front().expect("a front packet");
                self.out.push_back(m);
            }
        }
    }
}

impl Stage for Bonded {
    fn name(&self) -> &'static str {
        "bonded"
    }

    fn enqueue(&mut self, at: Instant, mut pkt: Meta, drops: &mut Vec<Drop>) {
        self.advance(at, drops);
        // `due` is when it reached this stage, until it leaves.
        pkt.due = at;
        let n = self.ch.len();
        // Round robin over the channels that are up.
        for k in 0..n {
            let i = (self.next_rr + k) % n;
            if self.ch[i].down_until.is_some() {
                continue;
            }
            self.next_rr = (i + 1) % n;
            let c = &mut self.ch[i];
            if c.queued_bytes + pkt.len as u64 > self.spec.queue_bytes {
                drops.push(Drop { meta: pkt, at, reason: DropReason::Queue });
            } else {
                c.queued_bytes += pkt.len as u64;
                c.queue.push_back(pkt);
                self.serve(at, drops);
            }
            return;
        }
        drops.push(Drop { meta: pkt, at, reason: DropReason::Outage });
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let mut w: Option<Instant> = self.out.front().map(|m| m.due);
        let mut consider = |t: Instant| w = Some(w.map_or(t, |x| x.min(t)));
        for c in &self.ch {
            if let Some(m) = c.flight.front() {
                consider(m.due);
            }
            if let Some(m) = c.queue.front() {
                if c.down_until.is_none() {
                    consider(c.free_at.max(m.due));
                }
            }
            // Churn matters only while something is held.
            if !c.queue.is_empty() || !c.flight.is_empty() {
                match c.down_until {
                    Some(u) => consider(u),
                    None => consider(c.next_drop),
                }
            }
        }
        w
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Vec<Drop>) -> Option<Meta> {
        self.advance(now, drops);
        // Channels are merged without resequencing: earliest due first.
        let i = self.out.iter().enumerate().min_by_key(|(_, m)| m.due).map(|(i, _)| i)?;
        if self.out[i].due <= now {
            self.out.remove(i)
        } else {
            None
        }
    }

    fn is_aggregate_safe(&self) -> bool {
        false
    }

    fn backlog_bytes(&self) -> u64 {
        self.ch.iter().map(|c| c.queued_bytes).sum()
    }

    fn in_flight(&self) -> usize {
        self.ch.iter().map(|c| c.queue.len() + c.flight.len()).sum::<usize>() + self.out.len()
    }

    fn take_events(&mut self, out: &mut Vec<StageEvent>) {
        out.append(&mut self.events);
    }

    fn capacity_bps(&self) -> Option<f64> {
        Some(self.spec.rate_bps * self.channels_up() as f64)
    }
}
