//! DVB-RCS2 bandwidth on demand on a GEO return link (seed 001), as one
//! stage. Profile key: `dama = { carrier, cra, rbdc_max, vbdc_max, fca,
//! superframe, scheduler_latency, rbdc_timeout, loop, terminals, load }`.
//!
//! The terminal may send only what the network control centre (NCC)
//! allocates it, super-frame by super-frame (26.5 ms by default):
//! - **CRA**, a constant rate, always there;
//! - **RBDC**, a rate it requests: each super-frame it asks for the rate
//!   that arrived over the last `rbdc_timeout` super-frames plus what drains
//!   its backlog over as long (OpenSAND's agent does the same), capped at
//!   `rbdc_max`; a grant lasts `rbdc_timeout` super-frames unless renewed;
//! - **VBDC**, a volume it requests for queued bytes not yet covered by a
//!   grant (capped at `vbdc_max` per request), granted once;
//! - **FCA**, leftover capacity handed out free (up to `fca`).
//!
//! A request travels up in band, waits `scheduler_latency` super-frames
//! at the NCC and its grant comes back one satellite hop later: it takes
//! effect `loop` + `scheduler_latency` super-frames after it was made
//! (`loop` defaults to twice this direction's `delay`). The carrier is
//! shared with `terminals` others that each ask for `load` as RBDC; the NCC
//! serves CRA, then RBDC (max-min fair, capped at each request), then VBDC,
//! then FCA, as OpenSAND's legacy DAMA controller does.
//!
//! The allocation of a super-frame is a rate the terminal sends at during
//! that super-frame (an approximation: the real allocation is a set of
//! time slots). A packet that does not fit goes on in the next one.

use std::collections::VecDeque;

use crate::packet::{Drop, DropReason, Meta};
use crate::profile::keys::{RawKeys, Table};
use crate::profile::{DirectionSpec, Loader, ProfileError};
use crate::registry::StageKind;
use crate::stage::{pop_due, Note, Stage, StageContext, StageEvent};
use crate::time::{Duration, Instant};
use crate::units;

/// The model's parameters (rates in bit/s).
#[derive(Clone, Debug, PartialEq)]
pub struct DamaSpec {
    pub superframe: Duration,
    /// The return carrier shared by all terminals.
    pub carrier_bps: f64,
    pub cra_bps: f64,
    /// 0 turns RBDC off.
    pub rbdc_max_bps: f64,
    /// Super-frames an RBDC grant lasts without a new request.
    pub rbdc_timeout: u64,
    /// Bytes per VBDC request; 0 turns VBDC off.
    pub vbdc_max_bytes: u64,
    /// Free capacity per terminal at most; 0 turns FCA off.
    pub fca_bps: f64,
    /// Super-frames a request waits at the NCC.
    pub scheduler_latency: u64,
    /// Request up + grant down; `None`: twice the direction's delay.
    pub loop_delay: Option<Duration>,
    /// Other terminals on the carrier, and the rate each asks for.
    pub terminals: u32,
    pub load_bps: f64,
    /// Bytes the terminal queues before it drops arrivals.
    pub buffer_bytes: u64,
}

/// What the NCC granted for one super-frame, bit/s, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Allocation {
    pub cra: f64,
    pub rbdc: f64,
    pub vbdc: f64,
    pub fca: f64,
}

impl Allocation {
    pub fn total(&self) -> f64 {
        self.cra + self.rbdc + self.vbdc + self.fca
    }
}

/// Max-min fair shares of `capacity` among `demands`.
fn fair_shares(capacity: f64, demands: &[f64]) -> Vec<f64> {
    let mut share = vec![0.0; demands.len()];
    let mut left = capacity.max(0.0);
    let mut open: Vec<usize> = (0..demands.len()).filter(|&i| demands[i] > 0.0).collect();
    while !open.is_empty() && left > 1e-9 {
        let each = left / open.len() as f64;
        let mut next = Vec::new();
        for &i in &open {
            let want = demands[i] - share[i];
            let give = want.min(each);
            share[i] += give;
            left -= give;
            if demands[i] - share[i] > 1e-9 {
                next.push(i);
            }
        }
        if next.len() == open.len() {
            break;
        }
        open = next;
    }
    share
}

impl DamaSpec {
    /// Super-frames from a request to the allocation it brings.
    pub fn request_cycle(&self, one_way: Duration) -> u64 {
        let lp = self.loop_delay.unwrap_or(Duration(one_way.0.saturating_mul(2)));
        lp.0.div_ceil(self.superframe.0.max(1)).saturating_add(self.scheduler_latency)
    }

    /// The NCC's allocation to our terminal, given its live RBDC rate and
    /// its VBDC volume due this super-frame.
    pub fn allocate(&self, rbdc_request: f64, vbdc_bytes: u64) -> Allocation {
        let n = self.terminals as f64 + 1.0;
        let cra = self.cra_bps.min(self.carrier_bps / n);
        let mut free = self.carrier_bps - n * cra;
        let others = self.load_bps.min(self.rbdc_max_bps.max(0.0));
        let mut demands = vec![rbdc_request.min(self.rbdc_max_bps)];
        demands.extend(std::iter::repeat_n(others, self.terminals as usize));
        let shares = fair_shares(free, &demands);
        let rbdc = shares[0];
        free -= shares.iter().sum::<f64>();
        let want_vbdc = vbdc_bytes as f64 * 8.0 / self.superframe.as_secs_f64();
        let vbdc = want_vbdc.min(free.max(0.0));
        free -= vbdc;
        // FCA: what is left, shared evenly, up to `fca` each.
        let fca = (free.max(0.0) / n).min(self.fca_bps);
        Allocation { cra, rbdc, vbdc, fca }
    }
}

struct Queued {
    meta: Meta,
    /// Bytes not yet sent.
    left: f64,
}

/// The DVB-RCS2 terminal of one return link.
pub struct Dama {
    spec: DamaSpec,
    cycle: u64,
    queue: VecDeque<Queued>,
    held_bytes: u64,
    /// The super-frame being served and its rate, bit/s.
    sf: u64,
    rate: f64,
    /// Where in the current super-frame sending has got to.
    pos: Instant,
    /// Requests in flight: (super-frame they take effect in, RBDC rate,
    /// VBDC bytes).
    requests: VecDeque<(u64, f64, u64)>,
    /// The live RBDC grant and the super-frame it lapses at.
    rbdc: (f64, u64),
    /// VBDC bytes asked for and not yet granted or used.
    vbdc_pending: u64,
    /// Bytes that arrived in the current super-frame, and in each of the
    /// last `rbdc_timeout` ones.
    arrived: u64,
    window: VecDeque<u64>,
    out: VecDeque<Meta>,
    /// Bytes sent in the current super-frame.
    used: f64,
    /// Super-frames ended and not yet taken.
    events: Vec<StageEvent>,
}

impl Dama {
    pub fn new(spec: DamaSpec, one_way: Duration) -> Self {
        let cycle = spec.request_cycle(one_way);
        let mut d = Dama {
            spec,
            cycle,
            queue: VecDeque::new(),
            held_bytes: 0,
            sf: 0,
            rate: 0.0,
            pos: Instant::ZERO,
            requests: VecDeque::new(),
            rbdc: (0.0, 0),
            vbdc_pending: 0,
            arrived: 0,
            window: VecDeque::new(),
            out: VecDeque::new(),
            used: 0.0,
            events: Vec::new(),
        };
        d.rate = d.allocation_for(0).total();
        d
    }

    fn sf_start(&self, k: u64) -> Instant {
        Instant(k * self.spec.superframe.0)
    }

    /// The allocation of super-frame `k`, consuming the requests due then.
    fn allocation_for(&mut self, k: u64) -> Allocation {
        let mut vbdc = 0;
        while let Some(&(at, r, v)) = self.requests.front() {
            if at > k {
                break;
            }
            self.requests.pop_front();
            if self.spec.rbdc_max_bps > 0.0 {
                self.rbdc = (r, at + self.spec.rbdc_timeout);
            }
            vbdc += v;
        }
        let live_rbdc = if k < self.rbdc.1 { self.rbdc.0 } else { 0.0 };
        let a = self.spec.allocate(live_rbdc, vbdc);
        // A VBDC grant beyond what the carrier had left is lost; the
        // terminal asks again for what is still queued.
        self.vbdc_pending = self.vbdc_pending.saturating_sub(vbdc);
        a
    }

    /// Whether nothing is queued, asked for or granted: super-frames can
    /// be skipped.
    fn idle(&self) -> bool {
        self.queue.is_empty() && self.requests.is_empty() && self.arrived == 0 && self.window.iter().all(|b| *b == 0) && !(self.rbdc.0 > 0.0 && self.sf < self.rbdc.1)
    }

    /// Reports the super-frames from the current one up to `k` (excluded)
    /// as ended: the current one with what it carried, the ones skipped
    /// while idle with their standing allocation and nothing sent.
    fn end_superframes(&mut self, k: u64) {
        let sf_secs = self.spec.superframe.as_secs_f64();
        let bytes = |rate: f64, n: u64| (rate * sf_secs * n as f64 / 8.0).round() as u64;
        let note = Note::Superframe { index: self.sf, count: 1, allocated_bytes: bytes(self.rate, 1), used_bytes: self.used.round() as u64 };
        self.events.push(StageEvent { at: self.sf_start(self.sf + 1), note });
        self.used = 0.0;
        if k > self.sf + 1 {
            let count = k - self.sf - 1;
            let standing = self.spec.allocate(0.0, 0).total();
            let note = Note::Superframe { index: self.sf + 1, count, allocated_bytes: bytes(standing, count), used_bytes: 0 };
            self.events.push(StageEvent { at: self.sf_start(k), note });
        }
    }

    /// At the start of super-frame `k`: requests, then the allocation.
    fn start_superframe(&mut self, k: u64) {
        self.end_superframes(k);
        let sf_secs = self.spec.superframe.as_secs_f64();
        let w = self.spec.rbdc_timeout as usize;
        self.window.push_back(self.arrived);
        while self.window.len() > w {
            self.window.pop_front();
        }
        // Requests made now, for `cycle` super-frames ahead.
        let rbdc = if self.spec.rbdc_max_bps > 0.0 {
            let arrivals = self.window.iter().sum::<u64>() as f64 * 8.0 / (w as f64 * sf_secs);
            let backlog = self.held_bytes as f64 * 8.0 / (w as f64 * sf_secs);
            (arrivals + backlog).min(self.spec.rbdc_max_bps)
        } else {
            0.0
        };
        let vbdc = if self.spec.vbdc_max_bytes > 0 {
            let uncovered = self.held_bytes.saturating_sub(self.vbdc_pending);
            uncovered.min(self.spec.vbdc_max_bytes)
        } else {
            0
        };
        self.vbdc_pending += vbdc;
        if rbdc > 0.0 || vbdc > 0 || self.rbdc.0 > 0.0 {
            self.requests.push_back((k + self.cycle, rbdc, vbdc));
        }
        self.arrived = 0;
        let a = self.allocation_for(k);
        self.sf = k;
        self.rate = a.total();
        self.pos = self.sf_start(k);
    }

    /// Sends what the allocation allows up to `until`.
    fn advance(&mut self, until: Instant) {
        loop {
            let end = self.sf_start(self.sf + 1);
            // Serve the queue inside this super-frame.
            while let Some(q) = self.queue.front_mut() {
                let start = self.pos.max(q.meta.due);
                if start >= end || start > until || self.rate <= 0.0 {
                    break;
                }
                let can = (end.0 - start.0) as f64 / 1e9 * self.rate / 8.0;
                if q.left <= can {
                    let done = start + Duration::from_secs_f64(q.left * 8.0 / self.rate);
                    if done > until {
                        break;
                    }
                    self.used += q.left;
                    let mut m = q.meta;
                    m.tx_end = done;
                    m.due = done;
                    self.pos = done;
                    self.held_bytes -= m.len as u64;
                    self.queue.pop_front();
                    self.out.push_back(m);
                } else {
                    // Part of it goes now; the rest in a later super-frame.
                    if end > until {
                        break;
                    }
                    if q.left == q.meta.len as f64 {
                        q.meta.tx_start = start;
                    }
                    q.left -= can;
                    self.used += can;
                    self.pos = end;
                    break;
                }
            }
            if end > until {
                return;
            }
            // An idle terminal skips to the super-frame of `until` (nothing
            // to ask for or send in between).
            let next = if self.idle() { (until.0 / self.spec.superframe.0).max(self.sf + 1) } else { self.sf + 1 };
            if next > self.sf + 1 {
                self.window.clear();
            }
            self.start_superframe(next);
        }
    }

    /// When the head of the queue will be done, if the current allocation
    /// gets it there.
    fn head_done(&self) -> Option<Instant> {
        let q = self.queue.front()?;
        if self.rate <= 0.0 {
            return None;
        }
        let start = self.pos.max(q.meta.due);
        let done = start + Duration::from_secs_f64(q.left * 8.0 / self.rate);
        (done <= self.sf_start(self.sf + 1)).then_some(done)
    }
}

impl Stage for Dama {
    fn name(&self) -> &'static str {
        "dama"
    }

    fn enqueue(&mut self, at: Instant, mut pkt: Meta, drops: &mut Vec<Drop>) {
        self.advance(at);
        if self.held_bytes + pkt.len as u64 > self.spec.buffer_bytes {
            drops.push(Drop { meta: pkt, at, reason: DropReason::Queue });
            return;
        }
        // `due` is when it reached this stage, until it leaves.
        pkt.due = at;
        pkt.tx_start = at;
        self.held_bytes += pkt.len as u64;
        self.arrived += pkt.len as u64;
        self.queue.push_back(Queued { meta: pkt, left: pkt.len as f64 });
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let out = self.out.front().map(|m| m.due);
        // While anything is queued or requested, the super-frame clock
        // ticks (requests and allocations happen at its boundaries).
        let busy = !self.queue.is_empty() || !self.requests.is_empty() || self.rbdc.0 > 0.0 && self.sf < self.rbdc.1;
        let tick = busy.then(|| self.head_done().unwrap_or_else(|| self.sf_start(self.sf + 1)));
        match (out, tick) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn dequeue(&mut self, now: Instant, _drops: &mut Vec<Drop>) -> Option<Meta> {
        self.advance(now);
        pop_due(&mut self.out, now)
    }

    fn is_aggregate_safe(&self) -> bool {
        false
    }

    fn backlog_bytes(&self) -> u64 {
        self.held_bytes
    }

    fn in_flight(&self) -> usize {
        self.queue.len() + self.out.len()
    }

    fn take_events(&mut self, out: &mut Vec<StageEvent>) {
        out.append(&mut self.events);
    }
}

/// DVB-RCS2 bandwidth on demand in the stage registry: key `dama`.
pub struct Kind;

pub static KIND: Kind = Kind;

const KEYS: &[&str] = &["carrier", "cra", "rbdc_max", "rbdc_timeout", "vbdc_max", "fca", "superframe", "scheduler_latency", "loop", "terminals", "load", "buffer"];

impl StageKind for Kind {
    fn name(&self) -> &'static str {
        "dama"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["dama"]
    }
    fn parse(&self, raw: &RawKeys, _load: Loader<'_>, d: &mut DirectionSpec) -> Result<(), ProfileError> {
        let Some(r) = raw.get("dama") else { return Ok(()) };
        let tab = Table::of(r, "a table { carrier = \"2 Mbit/s\", cra?, rbdc_max?, vbdc_max?, fca?, superframe?, scheduler_latency?, rbdc_timeout?, loop?, terminals?, load?, buffer? }", KEYS)?;
        let rate = |k: &str| -> Result<f64, ProfileError> { Ok(tab.rate(k)?.unwrap_or(0.0)) };
        let whole = |k: &str, default: u64, lo: i64, hi: i64| tab.whole(k, default, lo, hi, "a whole number");
        let carrier_bps = tab.rate("carrier")?.ok_or_else(|| r.err(format!("carrier: expected {} in quotes", units::RATE_HELP)))?;
        let superframe = tab.duration("superframe")?.unwrap_or(Duration::from_micros(26_500));
        if carrier_bps <= 0.0 || superframe.0 == 0 {
            return Err(r.err("carrier and superframe must be more than 0"));
        }
        let spec = DamaSpec {
            superframe,
            carrier_bps,
            cra_bps: rate("cra")?,
            rbdc_max_bps: rate("rbdc_max")?,
            rbdc_timeout: whole("rbdc_timeout", 12, 1, 100_000)?,
            vbdc_max_bytes: tab.bytes("vbdc_max", 0, 0)?,
            fca_bps: rate("fca")?,
            scheduler_latency: whole("scheduler_latency", 2, 0, 1000)?,
            loop_delay: tab.duration("loop")?,
            terminals: whole("terminals", 0, 0, 10_000)? as u32,
            load_bps: rate("load")?,
            buffer_bytes: tab.bytes("buffer", 1_000_000, 0)?,
        };
        if spec.cra_bps <= 0.0 && spec.rbdc_max_bps <= 0.0 && spec.vbdc_max_bytes == 0 && spec.fca_bps <= 0.0 {
            return Err(r.err("no capacity: give at least one of cra, rbdc_max, vbdc_max, fca"));
        }
        let mut kinds = Vec::new();
        if spec.cra_bps > 0.0 {
            kinds.push(format!("CRA {}", units::Rate::from_bps(spec.cra_bps)));
        }
        if spec.rbdc_max_bps > 0.0 {
            kinds.push(format!("RBDC ≤ {} (lasts {} SF)", units::Rate::from_bps(spec.rbdc_max_bps), spec.rbdc_timeout));
        }
        if spec.vbdc_max_bytes > 0 {
            kinds.push(format!("VBDC ≤ {} B per request", spec.vbdc_max_bytes));
        }
        if spec.fca_bps > 0.0 {
            kinds.push(format!("FCA ≤ {}", units::Rate::from_bps(spec.fca_bps)));
        }
        d.described.insert(
            "dama".into(),
            format!(
                "carrier {}, super-frame {}, {}; scheduler {} SF; {} other terminals at {}",
                units::Rate::from_bps(carrier_bps),
                superframe,
                kinds.join(", "),
                spec.scheduler_latency,
                spec.terminals,
                units::Rate::from_bps(spec.load_bps)
            ),
        );
        d.dama = Some(spec);
        Ok(())
    }
    fn build(&self, spec: &DirectionSpec, _ctx: &StageContext) -> Option<Box<dyn Stage>> {
        Some(Box::new(Dama::new(spec.dama.clone()?, spec.delay.mean_hint())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fair_shares_fill_small_demands_first() {
        let s = fair_shares(10.0, &[1.0, 8.0, 8.0]);
        assert!((s[0] - 1.0).abs() < 1e-9 && (s[1] - 4.5).abs() < 1e-9 && (s[2] - 4.5).abs() < 1e-9, "{s:?}");
        assert_eq!(fair_shares(10.0, &[0.0, 2.0]), vec![0.0, 2.0]);
    }

    #[test]
    fn the_ncc_serves_cra_then_rbdc_then_vbdc_then_fca() {
        let spec = DamaSpec {
            superframe: Duration::from_micros(26_500),
            carrier_bps: 2e6,
            cra_bps: 100e3,
            rbdc_max_bps: 1e6,
            rbdc_timeout: 16,
            vbdc_max_bytes: 100_000,
            fca_bps: 50e3,
            scheduler_latency: 2,
            loop_delay: None,
            terminals: 3,
            load_bps: 600e3,
            buffer_bytes: 1_000_000,
        };
        // 4 × 100k CRA leaves 1.6M; RBDC fair: us 1M vs others 600k each →
        // 1.6M / 4 = 400k each.
        let a = spec.allocate(1e6, 0);
        assert!((a.cra - 100e3).abs() < 1.0 && (a.rbdc - 400e3).abs() < 1.0 && a.vbdc == 0.0 && a.fca == 0.0, "{a:?}");
        // With nobody else: RBDC as asked, then VBDC, then FCA.
        let quiet = DamaSpec { terminals: 0, ..spec.clone() };
        let a = quiet.allocate(200e3, 2_650);
        assert!((a.rbdc - 200e3).abs() < 1.0, "{a:?}");
        assert!((a.vbdc - 2_650.0 * 8.0 / 0.0265).abs() < 1.0, "{a:?}");
        assert!((a.fca - 50e3).abs() < 1.0, "{a:?}");
        // A request made now takes effect 2 × 270 ms / 26.5 ms → 21 SF, +2.
        assert_eq!(spec.request_cycle(Duration::from_millis(270)), 23);
    }
}
