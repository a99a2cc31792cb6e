//! The bottleneck stage: a drop-tail queue feeding a rate server, gated by
//! an outage schedule. Profile keys: `rate`, `overhead`, `queue`, `outages`,
//! `share` (`"fifo"`, the default, or `"fair"`: passengers share the rate
//! equally, [`crate::fair`]).
//!
//! Times are logical: a packet's `tx_start` is `max(arrival, previous
//! tx_end)` (moved past hold windows), whatever time the driver happened to
//! call at, so a late wake-up never slows the link. A packet leaves this
//! stage at its `tx_end`.

use std::collections::VecDeque;

use crate::fair::FairQueue;
use crate::outage::{Gate, OutageMode, OutageSchedule};
use crate::packet::{Drop, DropReason, Meta};
use crate::profile::keys::{only_keys, parse_outages, table_str, RawKeys};
use crate::profile::{DirectionSpec, Loader, ProfileError, QueueSpec, RateSpec, MAX_MTU, MIN_MTU};
use crate::queue::{DropTail, QueueLimit};
use crate::rate::{MahimahiTrace, Server};
use crate::registry::StageKind;
use crate::stage::{Stage, StageContext};
use crate::time::{Duration, Instant};
use crate::units::{self, Rate, Size};

/// What waits for the link: first come, first served, or a queue per
/// passenger served in turn.
enum Waiting {
    Fifo(VecDeque<Meta>),
    Fair(FairQueue),
}

impl Waiting {
    fn front(&mut self) -> Option<&Meta> {
        match self {
            Waiting::Fifo(q) => q.front(),
            Waiting::Fair(q) => q.peek(),
        }
    }
    fn pop_front(&mut self) -> Option<Meta> {
        match self {
            Waiting::Fifo(q) => q.pop_front(),
            Waiting::Fair(q) => q.pop(),
        }
    }
    fn push_back(&mut self, m: Meta) {
        match self {
            Waiting::Fifo(q) => q.push_back(m),
            Waiting::Fair(q) => q.push(m),
        }
    }
    fn len(&self) -> usize {
        match self {
            Waiting::Fifo(q) => q.len(),
            Waiting::Fair(q) => q.len(),
        }
    }
    fn drain(&mut self) -> Vec<Meta> {
        match self {
            Waiting::Fifo(q) => q.drain(..).collect(),
            Waiting::Fair(q) => q.drain(),
        }
    }
}

/// How passengers share the link (key `share`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Share {
    #[default]
    Fifo,
    Fair,
}

pub struct Bottleneck {
    queue: Waiting,
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

impl Bottleneck {
    pub fn new(server: Box<dyn Server>, queue: DropTail, outages: OutageSchedule) -> Self {
        Bottleneck { queue: Waiting::Fifo(VecDeque::new()), accounting: queue, server, outages, free_at: Instant::ZERO, head: None }
    }

    /// Passengers share it as `share` says.
    pub fn shared(mut self, share: Share) -> Self {
        if share == Share::Fair {
            self.queue = Waiting::Fair(FairQueue::default());
        }
        self
    }

    fn plan_head(&mut self) {
        self.head = self.queue.front().map(|p| {
            // `due` is when the packet reached this stage, until it leaves.
            let may_start = p.due.max(self.free_at);
            match self.outages.gate(may_start) {
                Gate::Open(start) => {
                    let end = self.server.finish(start, p.len);
                    HeadFate::Sent { start, end }
                }
                Gate::Dropped(at) => HeadFate::Dropped { at },
            }
        });
    }

    pub fn backlog_packets(&self) -> u64 {
        self.accounting.packets()
    }
}

impl Stage for Bottleneck {
    fn name(&self) -> &'static str {
        "bottleneck"
    }

    /// Accepts a packet at `at`, or drops it if the queue is full.
    fn enqueue(&mut self, at: Instant, mut pkt: Meta, drops: &mut Vec<Drop>) {
        pkt.due = at;
        while !self.accounting.admit(pkt.len) {
            // Fair sharing makes room from the longest queue; first come,
            // first served drops the arrival.
            let victim = match &mut self.queue {
                Waiting::Fair(q) => q.evict_for(pkt.user),
                Waiting::Fifo(_) => None,
            };
            let Some(v) = victim else {
                drops.push(Drop { meta: pkt, at, reason: DropReason::Queue });
                return;
            };
            self.accounting.release(v.len);
            drops.push(Drop { meta: v, at, reason: DropReason::Queue });
        }
        self.queue.push_back(pkt);
        if self.head.is_none() {
            self.plan_head();
        }
    }

    fn next_wakeup(&self) -> Option<Instant> {
        match self.head? {
            HeadFate::Sent { end, .. } => Some(end),
            HeadFate::Dropped { at } => Some(at),
        }
    }

    /// The next packet whose transmission has ended by `now`, with its
    /// `tx_start`, `tx_end` and `due` (= `tx_end`) stamped.
    fn dequeue(&mut self, now: Instant, drops: &mut Vec<Drop>) -> Option<Meta> {
        loop {
            match self.head? {
                HeadFate::Dropped { at } if at <= now => {
                    // The queue cannot be empty while `head` is Some.
                    let p = self.queue.pop_front().expect("head planned for a queued packet");
                    self.accounting.release(p.len);
                    self.free_at = self.free_at.max(at);
                    drops.push(Drop { meta: p, at, reason: DropReason::Outage });
                    self.plan_head();
                }
                HeadFate::Sent { start, end } if end <= now => {
                    let mut p = self.queue.pop_front().expect("head planned for a queued packet");
                    self.accounting.release(p.len);
                    p.tx_start = start;
                    p.tx_end = end;
                    p.due = end;
                    self.free_at = end;
                    self.plan_head();
                    return Some(p);
                }
                _ => return None,
            }
        }
    }

    fn is_aggregate_safe(&self) -> bool {
        self.server.is_unlimited() && self.outages.is_empty()
    }

    fn backlog_bytes(&self) -> u64 {
        self.accounting.bytes()
    }

    fn in_flight(&self) -> usize {
        self.queue.len()
    }

    fn cut(&mut self, at: Instant, drops: &mut Vec<Drop>) {
        // Everything still here has not finished its transmission by `at`.
        for p in self.queue.drain() {
            self.accounting.release(p.len);
            drops.push(Drop { meta: p, at, reason: DropReason::Outage });
        }
        self.head = None;
        self.free_at = self.free_at.max(at);
    }
}

/// The bottleneck in the stage registry: keys `overhead`, `rate`, `queue`,
/// `outages`, and the link's `mtu` (not a stage: the lab gives the sending
/// device that MTU).
pub struct Kind;

pub static KIND: Kind = Kind;

impl StageKind for Kind {
    fn name(&self) -> &'static str {
        "bottleneck"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["rate", "overhead", "queue", "outages", "mtu", "share"]
    }
    fn parse(&self, raw: &RawKeys, load: Loader<'_>, d: &mut DirectionSpec) -> Result<(), ProfileError> {
        if let Some(r) = raw.get("mtu") {
            let bytes = match &r.value {
                toml::Value::Integer(n) => u64::try_from(*n).ok(),
                toml::Value::String(s) => match units::parse_size(s) {
                    Ok(Size::Bytes(b)) => Some(b),
                    _ => None,
                },
                _ => None,
            };
            match bytes {
                Some(b) if (MIN_MTU as u64..=MAX_MTU as u64).contains(&b) => d.mtu = Some(b as u32),
                _ => return Err(r.err(format!("expected an MTU in bytes from {MIN_MTU} (IPv6's minimum: every link carries IPv6) to {MAX_MTU}, like 9000 or \"1400 B\""))),
            }
            // Described only when given: a profile without it keeps its
            // run keys.
            d.described.insert("mtu".into(), format!("{} B", d.mtu()));
        }
        if let Some(r) = raw.get("overhead") {
            let s = r.str(units::SIZE_HELP)?;
            match units::parse_size(s).map_err(|m| r.err(format!("expected {m}")))? {
                Size::Bytes(b) if b <= 65_535 => d.overhead_bytes = b as u32,
                _ => return Err(r.err("expected a per-packet overhead in bytes, like \"8 B\" (at most 65535 B)")),
            }
            d.described.insert("overhead".into(), format!("{} B", d.overhead_bytes));
        }
        if let Some(r) = raw.get("rate") {
            d.rate = match &r.value {
                toml::Value::String(s) if s.trim() == "unlimited" => RateSpec::Unlimited,
                toml::Value::String(s) => RateSpec::Constant(units::parse_rate(s).map_err(|m| r.err(format!("expected {m} or \"unlimited\"")))?),
                toml::Value::Table(t) => {
                    let path = table_str(r, t, "trace", "a Mahimahi trace file path")?;
                    only_keys(r, t, &["trace"])?;
                    let text = load(&path).map_err(|m| r.err(format!("cannot read trace {path:?}: {m}")))?;
                    let trace = MahimahiTrace::parse(&text, 0).map_err(|e| r.err(format!("trace {path:?}: {e}")))?;
                    RateSpec::Trace { path, trace }
                }
                _ => return Err(r.err(format!("expected {} in quotes, \"unlimited\", or {{ trace = \"file\" }}", units::RATE_HELP))),
            };
        }
        let rate = match &d.rate {
            RateSpec::Unlimited => "unlimited".into(),
            RateSpec::Constant(rate) => rate.to_string(),
            RateSpec::Trace { path, trace } => format!("trace {path} (mean {})", Rate::from_bps(trace.mean_bps())),
            RateSpec::Series { what, series } => format!("{what} (mean {})", Rate::from_bps(series.mean_bps())),
        };
        d.described.insert("rate".into(), rate);
        if let Some(r) = raw.get("queue") {
            let s = r.str(units::SIZE_HELP)?;
            d.queue = match s.trim() {
                "bdp" => QueueSpec::Bdp,
                "unlimited" => QueueSpec::Limit(QueueLimit::Unlimited),
                other => {
                    let size = units::parse_size(other).map_err(|m| r.err(format!("expected {m}, \"bdp\" or \"unlimited\"")))?;
                    if matches!(size, Size::Bytes(0) | Size::Packets(0)) {
                        return Err(r.err("a queue must hold at least one packet"));
                    }
                    QueueSpec::Limit(size.into())
                }
            };
        }
        let queue = match d.queue {
            QueueSpec::Bdp => "bdp".into(),
            QueueSpec::Limit(QueueLimit::Bytes(b)) => format!("{b} B"),
            QueueSpec::Limit(QueueLimit::Packets(p)) => format!("{p} packets"),
            QueueSpec::Limit(QueueLimit::Unlimited) => "unlimited".into(),
        };
        d.described.insert("queue".into(), queue);
        if let Some(r) = raw.get("share") {
            d.share = match r.str("\"fifo\" or \"fair\"")? {
                "fifo" => Share::Fifo,
                "fair" => Share::Fair,
                other => return Err(r.err(format!("expected \"fifo\" (first come, first served) or \"fair\" (each passenger an equal share), got {other:?}"))),
            };
            // Described only when given: profiles without it keep their
            // run keys.
            d.described.insert("share".into(), if d.share == Share::Fair { "fair".into() } else { "fifo".into() });
        }
        if let Some(r) = raw.get("outages") {
            d.outages = parse_outages(r)?;
            let txt: Vec<String> = d
                .outages
                .iter()
                .map(|w| {
                    let mode = if w.mode == OutageMode::Hold { "hold" } else { "drop" };
                    match w.every {
                        Some(e) => format!("{mode} {} every {} from {}", w.duration, e, Duration(w.start.0)),
                        None => format!("{mode} {} at {}", w.duration, Duration(w.start.0)),
                    }
                })
                .collect();
            d.described.insert("outages".into(), txt.join("; "));
        }
        Ok(())
    }
    fn build(&self, spec: &DirectionSpec, ctx: &StageContext) -> Option<Box<dyn Stage>> {
        Some(Box::new(Bottleneck::new(spec.build_server(), spec.build_queue(ctx.rtt), spec.build_outages()).shared(spec.share)))
    }
}
