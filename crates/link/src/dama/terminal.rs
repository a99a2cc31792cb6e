//! The terminals of one DVB-RCS2 return link and the stage that drives
//! them: each terminal queues what it has to send, makes its RBDC and VBDC
//! requests at every super-frame's start and sends at what the NCC granted
//! it; the NCC ([`DamaSpec::allocate_all`]) shares the carrier among all of
//! them at once. Without `each_user` there is one terminal, whoever sends.

use std::collections::{HashMap, VecDeque};

use super::{Allocation, DamaSpec};
use crate::packet::{Drop, DropReason, Meta};
use crate::stage::{pop_due, Note, Stage, StageEvent};
use crate::time::{Duration, Instant};

struct Queued {
    meta: Meta,
    /// Bytes not yet sent.
    left: f64,
}

/// One terminal: its queue, its requests and its grant.
struct Terminal {
    queue: VecDeque<Queued>,
    held_bytes: u64,
    /// The rate granted for the current super-frame, bit/s.
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
    /// Bytes sent in the current super-frame.
    used: f64,
}

impl Terminal {
    fn new(pos: Instant) -> Self {
        Terminal { queue: VecDeque::new(), held_bytes: 0, rate: 0.0, pos, requests: VecDeque::new(), rbdc: (0.0, 0), vbdc_pending: 0, arrived: 0, window: VecDeque::new(), used: 0.0 }
    }

    /// Whether nothing is queued, asked for or granted at super-frame `sf`.
    fn idle(&self, sf: u64) -> bool {
        self.queue.is_empty() && self.requests.is_empty() && self.arrived == 0 && self.window.iter().all(|b| *b == 0) && !(self.rbdc.0 > 0.0 && sf < self.rbdc.1)
    }

    /// Whether the super-frame clock must tick for it.
    fn busy(&self, sf: u64) -> bool {
        !self.queue.is_empty() || !self.requests.is_empty() || self.rbdc.0 > 0.0 && sf < self.rbdc.1
    }

    /// The requests made at the start of super-frame `k`, for `cycle`
    /// super-frames ahead.
    fn request(&mut self, spec: &DamaSpec, k: u64, cycle: u64) {
        let sf_secs = spec.superframe.as_secs_f64();
        let w = spec.rbdc_timeout as usize;
        self.window.push_back(self.arrived);
        while self.window.len() > w {
            self.window.pop_front();
        }
        let rbdc = if spec.rbdc_max_bps > 0.0 {
            let arrivals = self.window.iter().sum::<u64>() as f64 * 8.0 / (w as f64 * sf_secs);
            let backlog = self.held_bytes as f64 * 8.0 / (w as f64 * sf_secs);
            (arrivals + backlog).min(spec.rbdc_max_bps)
        } else {
            0.0
        };
        let vbdc = if spec.vbdc_max_bytes > 0 { self.held_bytes.saturating_sub(self.vbdc_pending).min(spec.vbdc_max_bytes) } else { 0 };
        self.vbdc_pending += vbdc;
        if rbdc > 0.0 || vbdc > 0 || self.rbdc.0 > 0.0 {
            self.requests.push_back((k + cycle, rbdc, vbdc));
        }
        self.arrived = 0;
    }

    /// Takes the requests due by super-frame `k`: the live RBDC rate and
    /// the VBDC bytes to grant.
    fn due_requests(&mut self, spec: &DamaSpec, k: u64) -> (f64, u64) {
        let mut vbdc = 0;
        while let Some(&(at, r, v)) = self.requests.front() {
            if at > k {
                break;
            }
            self.requests.pop_front();
            if spec.rbdc_max_bps > 0.0 {
                self.rbdc = (r, at + spec.rbdc_timeout);
            }
            vbdc += v;
        }
        (if k < self.rbdc.1 { self.rbdc.0 } else { 0.0 }, vbdc)
    }

    /// The NCC's answer for the super-frame starting at `start`. A VBDC
    /// grant beyond what the carrier had left is lost; the terminal asks
    /// again for what is still queued.
    fn granted(&mut self, vbdc_asked: u64, a: Allocation, start: Instant) {
        self.vbdc_pending = self.vbdc_pending.saturating_sub(vbdc_asked);
        self.rate = a.total();
        self.pos = start;
    }

    /// Sends what the grant allows in the super-frame ending at `end`, up
    /// to `until`, into `out`.
    fn serve(&mut self, end: Instant, until: Instant, out: &mut Vec<Meta>) {
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
                out.push(m);
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
    }

    /// When the head of the queue will be done, if the current grant gets
    /// it there before `end`.
    fn head_done(&self, end: Instant) -> Option<Instant> {
        let q = self.queue.front()?;
        if self.rate <= 0.0 {
            return None;
        }
        let done = self.pos.max(q.meta.due) + Duration::from_secs_f64(q.left * 8.0 / self.rate);
        (done <= end).then_some(done)
    }
}

/// The DVB-RCS2 return link: its terminals and their super-frame clock.
pub struct Dama {
    spec: DamaSpec,
    cycle: u64,
    terminals: Vec<Terminal>,
    /// With `each_user`: the terminal of each user ([`Meta::user`]), in
    /// the order they first sent.
    by_user: HashMap<u32, usize>,
    /// The super-frame being served.
    sf: u64,
    out: VecDeque<Meta>,
    /// What the terminals sent in the current call, before it is ordered.
    fresh: Vec<Meta>,
    /// Super-frames ended and not yet taken.
    events: Vec<StageEvent>,
}

impl Dama {
    pub fn new(spec: DamaSpec, one_way: Duration) -> Self {
        let cycle = spec.request_cycle(one_way);
        // One terminal from the start; with `each_user`, one per user as
        // each first sends (logging on at the next super-frame).
        let terminals = if spec.each_user { Vec::new() } else { vec![Terminal::new(Instant::ZERO)] };
        let mut d = Dama { spec, cycle, terminals, by_user: HashMap::new(), sf: 0, out: VecDeque::new(), fresh: Vec::new(), events: Vec::new() };
        d.grant(0);
        d
    }

    fn sf_start(&self, k: u64) -> Instant {
        Instant(k * self.spec.superframe.0)
    }

    /// The NCC allocates super-frame `k` among all terminals at once.
    fn grant(&mut self, k: u64) {
        let spec = &self.spec;
        let asked: Vec<(f64, u64)> = self.terminals.iter_mut().map(|t| t.due_requests(spec, k)).collect();
        let start = Instant(k * spec.superframe.0);
        for ((t, a), (_, vbdc)) in self.terminals.iter_mut().zip(spec.allocate_all(&asked)).zip(asked) {
            t.granted(vbdc, a, start);
        }
    }

    /// Reports the super-frames from the current one up to `k` (excluded)
    /// as ended: the current one with what its terminals carried, the ones
    /// skipped while all were idle with their standing allocation.
    fn end_superframes(&mut self, k: u64) {
        let sf_secs = self.spec.superframe.as_secs_f64();
        let bytes = |rate: f64, n: u64| (rate * sf_secs * n as f64 / 8.0).round() as u64;
        let rate: f64 = self.terminals.iter().map(|t| t.rate).sum();
        let used: f64 = self.terminals.iter_mut().map(|t| std::mem::take(&mut t.used)).sum();
        let note = Note::Superframe { index: self.sf, count: 1, allocated_bytes: bytes(rate, 1), used_bytes: used.round() as u64 };
        self.events.push(StageEvent { at: self.sf_start(self.sf + 1), note });
        if k > self.sf + 1 {
            let count = k - self.sf - 1;
            let standing: f64 = self.spec.allocate_all(&vec![(0.0, 0); self.terminals.len()]).iter().map(Allocation::total).sum();
            let note = Note::Superframe { index: self.sf + 1, count, allocated_bytes: bytes(standing, count), used_bytes: 0 };
            self.events.push(StageEvent { at: self.sf_start(k), note });
        }
    }

    /// At the start of super-frame `k`: every terminal's requests, then the
    /// allocation.
    fn start_superframe(&mut self, k: u64) {
        self.end_superframes(k);
        for t in &mut self.terminals {
            t.request(&self.spec, k, self.cycle);
        }
        self.grant(k);
        self.sf = k;
    }

    /// Sends what the allocations allow up to `until`.
    fn advance(&mut self, until: Instant) {
        loop {
            let end = self.sf_start(self.sf + 1);
            for t in &mut self.terminals {
                t.serve(end, until, &mut self.fresh);
            }
            if end > until {
                break;
            }
            // When every terminal is idle, skip to the super-frame of
            // `until` (nothing to ask for or send in between).
            let idle = self.terminals.iter().all(|t| t.idle(self.sf));
            let next = if idle { (until.0 / self.spec.superframe.0).max(self.sf + 1) } else { self.sf + 1 };
            if next > self.sf + 1 {
                self.terminals.iter_mut().for_each(|t| t.window.clear());
            }
            self.start_superframe(next);
        }
        // Terminals send side by side: what they sent leaves in the order
        // it was done (all after anything sent before `until`).
        self.fresh.sort_by_key(|m| m.due);
        self.out.extend(self.fresh.drain(..));
    }

    /// The terminal a packet of `user` queues at.
    fn terminal(&mut self, user: u32) -> usize {
        if !self.spec.each_user {
            return 0;
        }
        let pos = self.pos_now();
        *self.by_user.entry(user).or_insert_with(|| {
            self.terminals.push(Terminal::new(pos));
            self.terminals.len() - 1
        })
    }

    fn pos_now(&self) -> Instant {
        self.sf_start(self.sf)
    }
}

impl Stage for Dama {
    fn name(&self) -> &'static str {
        "dama"
    }

    fn enqueue(&mut self, at: Instant, mut pkt: Meta, drops: &mut Vec<Drop>) {
        self.advance(at);
        let i = self.terminal(pkt.user);
        let t = &mut self.terminals[i];
        if t.held_bytes + pkt.len as u64 > self.spec.buffer_bytes {
            drops.push(Drop { meta: pkt, at, reason: DropReason::Queue });
            return;
        }
        // `due` is when it reached this stage, until it leaves.
        pkt.due = at;
        pkt.tx_start = at;
        t.held_bytes += pkt.len as u64;
        t.arrived += pkt.len as u64;
        t.queue.push_back(Queued { meta: pkt, left: pkt.len as f64 });
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let out = self.out.front().map(|m| m.due);
        // While anything is queued or requested, the super-frame clock
        // ticks (requests and allocations happen at its boundaries).
        let end = self.sf_start(self.sf + 1);
        let busy = self.terminals.iter().any(|t| t.busy(self.sf));
        let tick = busy.then(|| self.terminals.iter().filter_map(|t| t.head_done(end)).min().unwrap_or(end));
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
        self.terminals.iter().map(|t| t.held_bytes).sum()
    }

    fn in_flight(&self) -> usize {
        self.terminals.iter().map(|t| t.queue.len()).sum::<usize>() + self.out.len()
    }

    fn take_events(&mut self, out: &mut Vec<StageEvent>) {
        out.append(&mut self.events);
    }
}
