//! Bonded channels that drop and redial (seed 004's Iridium multilink), as
//! one stage. Profile key: `bonded = { channels, rate, delay, jitter?,
//! drop_every?, redial?, marginal?, queue? }`.
//!
//! A direction is `channels` parallel circuit-switched channels, each a
//! serial line with its own queue, rate and delay (and jitter, order kept
//! within a channel). Packets are striped over the channels that are up,
//! round robin, packet by packet — as Linux's teql does — and the far end
//! does not put them back in order: a packet on a faster or emptier
//! channel overtakes one on another.
//!
//! Each channel drops its call at random (exponential times between drops
//! with mean `drop_every`; seed 004 saw 15, 8.7 and 0.3 drops per 47
//! minutes), losing everything it holds (drop reason `outage`), and stays
//! down for a redial time drawn uniformly from `redial` (default 45–50 s:
//! 10 s wait, dial, PPP). With every channel down, arrivals are dropped.
//! `marginal = { every, duration, loss }` puts a channel into a marginal
//! state from time to time: up, but losing `loss` of its packets.
//! Channel changes are reported as [`Note::Channel`] events for logs and monitors.

use std::collections::VecDeque;

use rand::Rng;

use crate::jitter::{Jitter, LinkRng};
use crate::packet::{Drop, DropReason, Meta};
use crate::profile::keys::{only_keys, parse_jitter, table_str, Raw, RawKeys};
use crate::profile::{DirectionSpec, Loader, ProfileError};
use crate::registry::StageKind;
use crate::stage::{Note, Stage, StageContext, StageEvent};
use crate::time::{Duration, Instant};
use crate::units;

/// The model's parameters for one direction.
#[derive(Clone, Debug, PartialEq)]
pub struct BondedSpec {
    pub channels: u32,
    /// Each channel's rate, bit/s.
    pub rate_bps: f64,
    /// Each channel's one-way delay and jitter.
    pub delay: Duration,
    pub jitter: Option<Jitter>,
    /// Mean time between call drops per channel; `None`: never.
    pub drop_every: Option<Duration>,
    /// Redial time, uniform in `[lo, hi]`.
    pub redial: (Duration, Duration),
    /// Marginal spells: mean time between them, how long, loss meanwhile.
    pub marginal: Option<(Duration, Duration, f64)>,
    /// Bytes each channel queues.
    pub queue_bytes: u64,
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

impl Bonded {
    pub fn new(spec: BondedSpec, mut rng: LinkRng) -> Self {
        let ch = (0..spec.channels)
            .map(|_| {
                let next_drop = match spec.drop_every {
                    Some(m) => Instant::ZERO + exp(&mut rng, m),
                    None => Instant(u64::MAX),
                };
                let (marginal_from, marginal_until) = match spec.marginal {
                    Some((every, dur, _)) => {
                        let from = Instant::ZERO + exp(&mut rng, every);
                        (from, from + dur)
                    }
                    None => (Instant(u64::MAX), Instant(u64::MAX)),
                };
                Channel { queue: VecDeque::new(), queued_bytes: 0, free_at: Instant::ZERO, flight: VecDeque::new(), last_due: Instant::ZERO, down_until: None, next_drop, marginal_from, marginal_until }
            })
            .collect();
        Bonded { spec, rng, ch, next_rr: 0, events: Vec::new(), out: VecDeque::new() }
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
                    c.next_drop = match self.spec.drop_every {
                        Some(m) => until + exp(&mut self.rng, m),
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
                let (lo, hi) = self.spec.redial;
                let redial = Duration(lo.0 + if hi.0 > lo.0 { self.rng.random_range(0..=hi.0 - lo.0) } else { 0 });
                let c = &mut self.ch[i];
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
            loop {
                let tx = match self.ch[i].queue.front() {
                    Some(m) => self.tx_time(m.len),
                    None => break,
                };
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
                        let from = self.ch[i].marginal_until + exp(&mut self.rng, every);
                        self.ch[i].marginal_from = from;
                        self.ch[i].marginal_until = from + dur;
                    }
                }
                let c = &self.ch[i];
                let in_marginal = start >= c.marginal_from && start < c.marginal_until;
                if in_marginal && self.rng.random::<f64>() < marginal_loss {
                    drops.push(Drop { meta: m, at: end, reason: DropReason::Loss });
                    continue;
                }
                let mut d = self.spec.delay.0 as i64;
                if let Some(j) = &self.spec.jitter {
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

/// Bonded channels in the stage registry: key `bonded`.
pub struct Kind;

pub static KIND: Kind = Kind;

/// The bonded stage's RNG slot (see [`StageContext::rng`]).
pub const RNG_SLOT: u64 = 3;

fn dur(r: &Raw, t: &toml::Table, k: &str) -> Result<Duration, ProfileError> {
    let s = table_str(r, t, k, units::DURATION_HELP)?;
    units::parse_duration(&s).map_err(|m| r.err(format!("{k}: expected {m}")))
}

impl StageKind for Kind {
    fn name(&self) -> &'static str {
        "bonded"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["bonded"]
    }
    fn rng_slot(&self) -> Option<u64> {
        Some(RNG_SLOT)
    }
    fn parse(&self, raw: &RawKeys, load: Loader<'_>, d: &mut DirectionSpec) -> Result<(), ProfileError> {
        let Some(r) = raw.get("bonded") else { return Ok(()) };
        let t = r.value.as_table().ok_or_else(|| r.err("expected a table { channels = 3, rate = \"2.4 kbit/s\", delay = \"600 ms\", jitter?, drop_every?, redial?, marginal?, queue? }"))?;
        only_keys(r, t, &["channels", "rate", "delay", "jitter", "drop_every", "redial", "marginal", "queue"])?;
        let channels = match t.get("channels") {
            Some(toml::Value::Integer(n)) if (1..=64).contains(n) => *n as u32,
            _ => return Err(r.err("channels: expected a whole number from 1 to 64")),
        };
        let rate_bps = units::parse_rate(&table_str(r, t, "rate", units::RATE_HELP)?).map_err(|m| r.err(format!("rate: expected {m}")))?.bits_per_sec;
        if rate_bps <= 0.0 {
            return Err(r.err("rate: expected more than 0"));
        }
        let delay = dur(r, t, "delay")?;
        let jitter = match t.get("jitter") {
            None => None,
            Some(v) => parse_jitter(&Raw { value: v.clone(), origin: r.origin.clone(), key: format!("{}.jitter", r.key) }, load)?,
        };
        let drop_every = if t.contains_key("drop_every") { Some(dur(r, t, "drop_every")?).filter(|d| d.0 > 0) } else { None };
        let redial = match t.get("redial") {
            None => (Duration::from_secs(45), Duration::from_secs(50)),
            Some(toml::Value::Array(a)) if a.len() == 2 => {
                let p = |v: &toml::Value| v.as_str().and_then(|s| units::parse_duration(s).ok()).ok_or_else(|| r.err("redial: expected [\"45 s\", \"50 s\"]"));
                let (lo, hi) = (p(&a[0])?, p(&a[1])?);
                if hi < lo {
                    return Err(r.err("redial: the first bound must not exceed the second"));
                }
                (lo, hi)
            }
            Some(_) => return Err(r.err("redial: expected [\"45 s\", \"50 s\"]")),
        };
        let marginal = match t.get("marginal") {
            None => None,
            Some(toml::Value::Table(m)) => {
                let every = dur(r, m, "every")?;
                let duration = dur(r, m, "duration")?;
                let loss = match m.get("loss") {
                    Some(toml::Value::String(s)) => units::parse_probability(s).map_err(|e| r.err(format!("marginal.loss: expected {e}")))?,
                    Some(toml::Value::Float(f)) if (0.0..=1.0).contains(f) => *f,
                    _ => return Err(r.err("marginal.loss: expected a probability like \"30%\"")),
                };
                if every.0 == 0 {
                    return Err(r.err("marginal.every: expected more than 0"));
                }
                Some((every, duration, loss))
            }
            Some(_) => return Err(r.err("marginal: expected { every = \"10 min\", duration = \"30 s\", loss = \"30%\" }")),
        };
        let queue_bytes = match t.get("queue").and_then(|v| v.as_str()) {
            None if !t.contains_key("queue") => 4_000,
            Some(s) => match units::parse_size(s).map_err(|m| r.err(format!("queue: expected {m}")))? {
                units::Size::Bytes(b) if b >= 1 => b,
                _ => return Err(r.err("queue: expected bytes, like \"4 KB\"")),
            },
            None => return Err(r.err(format!("queue: expected {} in quotes", units::SIZE_HELP))),
        };
        let spec = BondedSpec { channels, rate_bps, delay, jitter, drop_every, redial, marginal, queue_bytes };
        d.described.insert(
            "bonded".into(),
            format!(
                "{channels} × {} at {}{}, call drops {}, redial {}–{}{}; {} B queue each",
                units::Rate::from_bps(rate_bps),
                delay,
                spec.jitter.as_ref().map(|j| format!(" ± {}", crate::profile::describe::describe_jitter(j))).unwrap_or_default(),
                drop_every.map(|e| format!("every {e} on average")).unwrap_or_else(|| "never".into()),
                redial.0,
                redial.1,
                marginal.map(|(e, du, l)| format!(", marginal {du} every {e} losing {}", crate::profile::describe::pct(l))).unwrap_or_default(),
                queue_bytes
            ),
        );
        d.bonded = Some(spec);
        Ok(())
    }
    fn build(&self, spec: &DirectionSpec, ctx: &StageContext) -> Option<Box<dyn Stage>> {
        Some(Box::new(Bonded::new(spec.bonded.clone()?, ctx.rng(RNG_SLOT))))
    }
}
