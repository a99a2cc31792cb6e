//! Handover between two L-DACS 1 cells under Mobile IPv6 / NEMO (seed
//! 002), as one stage at the front of each direction. Profile key, in
//! `[link]` only (both directions share the timeline):
//! `handover = { at | mobility, mode, dad, router_adv, bu, ba, ra_collision,
//! backoff, signal_loss, mbu_loss, mba_loss, bu_loss, ba_loss,
//! first_bu_lost, first_ba_lost, tunnel, buffer }`.
//!
//! When: explicit times (`at = ["10 s", "90 s"]`), or a flight past a line
//! of ground stations (`mobility = { speed_kmh = 800, cell_km = 225,
//! overlap_km = 100, start_km = 125, count = 10 }`, seed 002's scenario):
//! stations are `2 × cell − overlap` apart (350 km), the aircraft starts
//! `start_km` past the first (125 km: where the second cell begins) and
//! hands over midway between stations, where the next one's signal becomes
//! the stronger — every 350 km / 800 km/h = 26 min 15 s, the first after
//! 50 km (3 min 45 s).
//!
//! Each handover is a timeline, drawn once per hop from the run's seed
//! (both directions see the same one):
//! 1. **Trigger** at `at` (the old ground station's handover command).
//!    With `mode = "buffer"` the mobile router first sends a modified
//!    binding update (MBU; lost with `mbu_loss`, retried every 1 s while
//!    no acknowledgement comes, up to 3 times); once one reaches the home
//!    agent (`bu` later) the agent buffers the correspondent's packets, and
//!    `ba` later the old station would command layer 2 — but first it
//!    delivers what it holds toward the aircraft (seed 002 §3.2: HO_COM
//!    without the P-bit once its packets are out; §5.6: ≈ 1.9 s later
//!    than without buffering). The ground's side runs its later stages
//!    until they hold nothing for transmission and tells the aircraft's
//!    side ([`HopShare`](crate::stage::HopShare)), which leaves the old
//!    cell then too (within a millisecond's poll; built alone it keeps the
//!    drawn command). Every later phase keeps its drawn distance from the
//!    random access, which waits for the next super-frame as drawn.
//!    The modified acknowledgement (MBA, lost with `mba_loss`) only stops
//!    the router's retries: the station's command does not wait for it
//!    (seed 002 §6.1, second condition). When no MBU gets through the
//!    station forces the handover after the fourth try, 4 s after the
//!    trigger, without buffering (the first condition).
//! 2. **Layer 2**: the aircraft leaves the old cell; what either side's
//!    link still holds for transmission is lost (the later stages are cut,
//!    reason `outage`) — except in `buffer` mode, where the old station
//!    delivers what it holds before the handover (the seed's second
//!    command). It asks the new cell on the random-access channel at the
//!    next super-frame (240 ms clock); a request collides with probability
//!    `ra_collision` and is retried after 1–`backoff` super-frames; the
//!    response comes in the first multi-frame (65.04 ms after the request).
//! 3. **Layer 3**: a router advertisement (`router_adv`, 200 ms, after
//!    layer 2: a solicitation up the return link waits a grant cycle),
//!    duplicate address detection (`dad`, 1 s, only in `mode = "baseline"`),
//!    then a binding update to the home agent (`bu`, 250 ms: a return-link
//!    grant, the transmission and the ground network) and its
//!    acknowledgement (`ba`, 100 ms), lost with `bu_loss` and `ba_loss`
//!    (below 1), or the first of each on purpose (`first_bu_lost`,
//!    `first_ba_lost`: the seed's third and fourth conditions); the update
//!    is sent again after 1.5 s, then 1 s doubling to 32 s. `signal_loss`
//!    sets all four losses at once (default 0: the seed's control messages
//!    are error-free).
//! 4. From the binding on, the home agent tunnels to the new care-of
//!    address: every packet carries `tunnel` bytes more (40, IPv6-in-IPv6;
//!    counted in the packet's size on the link). In `buffer` mode the
//!    agent's buffer (`buffer` bytes; beyond it arrivals are dropped as
//!    `queue`) is flushed then, in order.
//!
//! What packets see: toward the aircraft (the home agent's side), packets
//! sent to the old address between layer 2 and the binding are lost
//! (`outage`), or held in `buffer` mode; so are those the agent sends to
//! the new address before the aircraft has an acknowledgement (it drops
//! them: the fourth condition; here they are dropped at the agent, so they
//! do not take the forward link's capacity as the seed's did); from the
//! aircraft, packets are
//! lost from layer 2 until the binding update leaves (no link, no address,
//! then an agent that does not know the new address yet).
//!
//! Not modelled, stated: the home agent
//! does not drop duplicate TCP segments from its buffer; signalling
//! messages take fixed times (`bu`, `ba`) instead of queueing behind data.

use std::collections::VecDeque;

use rand::Rng;

use crate::jitter::LinkRng;
use crate::packet::{Drop, DropReason, Meta};
use crate::stage::{pop_due, Note, Stage, StageEvent};
use crate::time::{Duration, Instant};

crate::choice_core! {
    /// How the mobile router and the home agent handle a handover.
    pub enum Mode {
        /// Router advertisement, duplicate address detection, binding update.
        Baseline = "baseline",
        /// As baseline without duplicate address detection (unique addresses
        /// from the aircraft's ICAO address, seed 002 §3.2).
        NoDad = "no-dad",
        /// No DAD, and the home agent buffers during the handover.
        Buffer = "buffer",
    }
}

/// Which end of the aircraft's link this direction starts at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Side {
    /// Aircraft → ground: the mobile router sends.
    #[default]
    Mobile,
    /// Ground → aircraft: the home agent sends.
    Home,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HandoverSpec {
    /// When each handover is triggered.
    pub at: Vec<Duration>,
    pub mode: Mode,
    pub dad: Duration,
    pub router_adv: Duration,
    /// Mobile router → home agent, and back.
    pub bu: Duration,
    pub ba: Duration,
    pub ra_collision: f64,
    /// Back-off after a collision: 1 to this many super-frames.
    pub backoff: u32,
    pub loss: SignalLoss,
    pub tunnel_bytes: u32,
    pub buffer_bytes: u64,
    pub side: Side,
}

/// Seed 002's defaults (the signalling times are our assumptions; see
/// the guide), with no handover times yet.
impl Default for HandoverSpec {
    fn default() -> Self {
        HandoverSpec {
            at: Vec::new(),
            mode: Mode::Baseline,
            dad: Duration::from_secs(1),
            router_adv: Duration::from_millis(200),
            bu: Duration::from_millis(250),
            ba: Duration::from_millis(100),
            ra_collision: 0.1,
            backoff: 4,
            loss: SignalLoss::default(),
            tunnel_bytes: 40,
            buffer_bytes: 256_000,
            side: Side::Mobile,
        }
    }
}

/// Which signalling messages are lost (seed 002 §6): each kind with its
/// own probability, and the first regular update or acknowledgement on
/// purpose.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SignalLoss {
    /// Modified binding update and acknowledgement (`buffer` mode), up to 1
    /// (every one: at most four are sent).
    pub mbu: f64,
    pub mba: f64,
    /// Regular binding update and acknowledgement, below 1 (they are sent
    /// until one is acknowledged).
    pub bu: f64,
    pub ba: f64,
    pub first_bu: bool,
    pub first_ba: bool,
}

impl SignalLoss {
    /// Every message lost with probability `p`.
    pub fn all(p: f64) -> Self {
        SignalLoss { mbu: p, mba: p, bu: p, ba: p, ..Default::default() }
    }
}

/// A message lost with probability `p` (no draw when `p` is 0 or 1).
fn lost(rng: &mut LinkRng, p: f64) -> bool {
    p >= 1.0 || (p > 0.0 && rng.random::<f64>() < p)
}

/// Phases of a handover, as the log shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The old station's command.
    Trigger,
    /// The home agent starts buffering (`buffer` mode).
    Buffering,
    /// The aircraft leaves the old cell.
    L2Start,
    /// The new cell's random-access response.
    L2End,
    /// The care-of address is usable (advertisement, DAD).
    Address,
    /// The home agent binds the new address (and flushes its buffer).
    Bound,
    /// The acknowledgement reaches the mobile router.
    Acked,
}

/// As the packet log writes it (`l2-start`).
impl serde::Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Phase {
    pub const ALL: [Phase; 7] = [Phase::Trigger, Phase::Buffering, Phase::L2Start, Phase::L2End, Phase::Address, Phase::Bound, Phase::Acked];
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Trigger => "trigger",
            Phase::Buffering => "buffering",
            Phase::L2Start => "l2-start",
            Phase::L2End => "l2-end",
            Phase::Address => "address",
            Phase::Bound => "bound",
            Phase::Acked => "acked",
        }
    }
    pub fn parse(s: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// One handover's times.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    pub trigger: Instant,
    /// When the home agent starts buffering (`buffer` mode, if a modified
    /// update got through).
    pub buffering: Option<Instant>,
    pub l2_start: Instant,
    pub l2_end: Instant,
    pub address: Instant,
    /// The binding update that reached the home agent left the aircraft.
    pub bu_sent: Instant,
    pub bound: Instant,
    /// The agent sent the acknowledgement that reached the aircraft (after
    /// `bound` when acknowledgements were lost: the aircraft drops what the
    /// agent sends it before).
    pub ba_sent: Instant,
    pub acked: Instant,
    /// Random-access requests and binding updates sent.
    pub ra_attempts: u32,
    pub bu_attempts: u32,
}

const SUPER_FRAME_NS: u64 = 240_000_000;
/// Random-access part plus one multi-frame: request to response.
const RA_RESPONSE: Duration = Duration::from_micros(65_040);

/// Binding update retransmission timeouts: 1.5 s, then 1 s doubling to 32 s.
fn bu_timeout(attempt: u32) -> Duration {
    if attempt == 1 {
        Duration::from_millis(1_500)
    } else {
        Duration::from_secs(1u64 << (attempt - 2).min(5))
    }
}

impl HandoverSpec {
    /// The timelines of every handover, drawn from `rng`.
    pub fn timelines(&self, rng: &mut LinkRng) -> Vec<Timeline> {
        let mut out = Vec::new();
        for at in &self.at {
            let trigger = Instant::ZERO + *at;
            let l = &self.loss;
            // Buffer mode: the modified update, up to 4 sends 1 s apart
            // while no acknowledgement comes back.
            let mut buffering = None;
            let mut l2_start = trigger;
            if self.mode == Mode::Buffer {
                for k in 0..4u64 {
                    if lost(rng, l.mbu) {
                        continue;
                    }
                    buffering.get_or_insert(trigger + Duration::from_secs(k) + self.bu);
                    if !lost(rng, l.mba) {
                        break;
                    }
                }
                l2_start = match buffering {
                    Some(b) => b + self.ba,
                    None => trigger + Duration::from_secs(4),
                };
            }
            // Layer 2: random access at the next super-frame, back-off on collision.
            let mut request = Instant(l2_start.0.div_ceil(SUPER_FRAME_NS) * SUPER_FRAME_NS);
            let mut ra_attempts = 1;
            while self.ra_collision > 0.0 && rng.random::<f64>() < self.ra_collision {
                let wait = rng.random_range(1..=self.backoff.max(1)) as u64;
                request = Instant(request.0 + wait * SUPER_FRAME_NS);
                ra_attempts += 1;
            }
            let l2_end = request + RA_RESPONSE;
            let address = l2_end + self.router_adv + if self.mode == Mode::Baseline { self.dad } else { Duration::ZERO };
            // Layer 3: binding update until one is acknowledged.
            let mut sent = address;
            let mut bound: Option<(Instant, Instant)> = None;
            let mut bu_attempts = 0;
            let (ba_sent, acked) = loop {
                bu_attempts += 1;
                let bu_lost = (l.first_bu && bu_attempts == 1) || lost(rng, l.bu);
                if !bu_lost {
                    let at_ha = sent + self.bu;
                    let first_ba = bound.is_none();
                    bound.get_or_insert((sent, at_ha));
                    let ba_lost = (l.first_ba && first_ba) || lost(rng, l.ba);
                    if !ba_lost {
                        break (at_ha, at_ha + self.ba);
                    }
                }
                sent = sent + bu_timeout(bu_attempts);
            };
            let (bu_sent, bound) = bound.expect("set before the acknowledgement");
            out.push(Timeline { trigger, buffering, l2_start, l2_end, address, bu_sent, bound, ba_sent, acked, ra_attempts, bu_attempts });
        }
        out
    }
}

/// The handover stage of one direction.
pub struct Handover {
    spec: HandoverSpec,
    plan: Vec<Timeline>,
    /// Events not yet reported: (time, handover, phase), in time order.
    pending_notes: VecDeque<(Instant, u16, Phase)>,
    events: Vec<StageEvent>,
    /// The next handover whose layer-2 cut is not yet applied.
    next_cut: usize,
    /// Packets the home agent buffers, and their bytes.
    held: VecDeque<Meta>,
    held_bytes: u64,
    out: VecDeque<Meta>,
    /// The timelines as drawn, before any layer-2 start waited on the
    /// station's queue (`plan` holds them as they happen: from layer 2 on
    /// [`UNKNOWN`] until the station's queue is out).
    drawn: Vec<Timeline>,
    /// While the next cut waits: the last time it was asked.
    waiting: Option<Instant>,
    /// The other direction of the hop, when built with it.
    hop: Option<std::sync::Arc<crate::stage::HopShare>>,
}

/// A time no run reaches: the phases of a handover whose layer-2 start is
/// not known yet.
const UNKNOWN: Instant = Instant(u64::MAX / 4);

/// The notes of handover `k`'s phases from layer 2 on.
fn layer2_notes(k: usize, t: &Timeline) -> [(Instant, u16, Phase); 5] {
    let k = k as u16;
    [(t.l2_start, k, Phase::L2Start), (t.l2_end, k, Phase::L2End), (t.address, k, Phase::Address), (t.bound, k, Phase::Bound), (t.acked, k, Phase::Acked)]
}

impl Handover {
    pub fn new(spec: HandoverSpec, mut rng: LinkRng, hop: Option<std::sync::Arc<crate::stage::HopShare>>) -> Self {
        let drawn = spec.timelines(&mut rng);
        let mut plan = drawn.clone();
        let mut notes: Vec<(Instant, u16, Phase)> = Vec::new();
        for (k, t) in plan.iter_mut().enumerate() {
            notes.push((t.trigger, k as u16, Phase::Trigger));
            if let Some(b) = t.buffering {
                notes.push((b, k as u16, Phase::Buffering));
            }
            if spec.mode == Mode::Buffer && t.buffering.is_some() {
                // Not known until the station's queue is out: the aircraft
                // stays in the old cell, the agent holds what it buffers.
                for t in [&mut t.l2_start, &mut t.l2_end, &mut t.address, &mut t.bu_sent, &mut t.bound, &mut t.ba_sent, &mut t.acked] {
                    *t = UNKNOWN;
                }
            } else {
                notes.extend(layer2_notes(k, t));
            }
        }
        notes.sort_by_key(|n| (n.0, n.1));
        Handover { spec, plan, pending_notes: notes.into(), events: Vec::new(), next_cut: 0, held: VecDeque::new(), held_bytes: 0, out: VecDeque::new(), drawn, waiting: None, hop }
    }

    /// Whether handover `k`'s layer-2 start is known.
    fn known(&self, k: usize) -> bool {
        self.plan[k].l2_start != UNKNOWN
    }

    /// Handover `k` leaves the old cell at `at` (not before its drawn
    /// command): the random access at the next super-frame with the
    /// drawn back-off, the rest of the drawn timeline after it.
    fn fix(&mut self, k: usize, at: Instant) {
        let d = &self.drawn[k];
        let at = at.max(d.l2_start);
        let p = if at == d.l2_start {
            d.clone()
        } else {
            let frame = |t: Instant| Instant(t.0.div_ceil(SUPER_FRAME_NS) * SUPER_FRAME_NS);
            let l2_end = frame(at) + (d.l2_end - frame(d.l2_start));
            let later = l2_end - d.l2_end;
            Timeline { l2_start: at, l2_end, address: d.address + later, bu_sent: d.bu_sent + later, bound: d.bound + later, ba_sent: d.ba_sent + later, acked: d.acked + later, ..d.clone() }
        };
        let mut notes: Vec<_> = self.pending_notes.drain(..).collect();
        notes.extend(layer2_notes(k, &p));
        notes.sort_by_key(|n| (n.0, n.1));
        self.pending_notes = notes.into();
        self.plan[k] = p;
    }

    /// Reports phases reached by `t`, and flushes the agent's buffer once
    /// the binding is in place (to be dropped by an aircraft that has no
    /// acknowledgement yet).
    fn advance(&mut self, t: Instant, drops: &mut Vec<Drop>) {
        while let Some(&(at, k, phase)) = self.pending_notes.front() {
            if at > t {
                break;
            }
            self.pending_notes.pop_front();
            self.events.push(StageEvent { at, note: Note::Handover { index: k, phase } });
        }
        if let Some((bound, unheard)) = self.held_until() {
            if bound <= t {
                while let Some(mut m) = self.held.pop_front() {
                    if unheard {
                        drops.push(Drop { meta: m, at: bound, reason: DropReason::Outage });
                    } else {
                        m.due = bound;
                        self.out.push_back(m);
                    }
                }
                self.held_bytes = 0;
            }
        }
    }

    /// When the buffered packets are released, and whether the aircraft
    /// has no acknowledgement then.
    fn held_until(&self) -> Option<(Instant, bool)> {
        let first = self.held.front()?;
        self.plan.iter().find(|p| p.buffering.is_some_and(|b| b <= first.arrived) && first.arrived < p.bound).map(|p| (p.bound, p.ba_sent > p.bound))
    }

    /// Whether a packet entering at `t` is in the foreign network (tunnelled).
    fn tunnelled(&self, t: Instant) -> bool {
        let edge = match self.spec.side {
            // The agent tunnels once bound; the router once it sends the update.
            Side::Home => self.plan.first().map(|p| p.bound),
            Side::Mobile => self.plan.first().map(|p| p.bu_sent),
        };
        edge.is_some_and(|e| t >= e)
    }
}

impl Stage for Handover {
    fn name(&self) -> &'static str {
        "handover"
    }

    fn enqueue(&mut self, at: Instant, mut pkt: Meta, drops: &mut Vec<Drop>) {
        self.advance(at, drops);
        pkt.arrived = at;
        for p in &self.plan {
            match self.spec.side {
                Side::Home => {
                    if p.buffering.is_some_and(|b| b <= at && at < p.bound) {
                        if self.held_bytes + pkt.len as u64 > self.spec.buffer_bytes {
                            drops.push(Drop { meta: pkt, at, reason: DropReason::Queue });
                        } else {
                            self.held_bytes += pkt.len as u64;
                            if self.tunnelled(p.bound) {
                                pkt.len += self.spec.tunnel_bytes;
                            }
                            self.held.push_back(pkt);
                        }
                        return;
                    }
                    // Sent to the old address while the aircraft is away,
                    // or to the new one before it has an acknowledgement.
                    if p.l2_start <= at && at < p.ba_sent {
                        drops.push(Drop { meta: pkt, at, reason: DropReason::Outage });
                        return;
                    }
                }
                Side::Mobile => {
                    if p.l2_start <= at && at < p.bu_sent {
                        drops.push(Drop { meta: pkt, at, reason: DropReason::Outage });
                        return;
                    }
                }
            }
        }
        if self.tunnelled(at) {
            pkt.len += self.spec.tunnel_bytes;
        }
        pkt.due = at;
        pkt.tx_start = at;
        pkt.tx_end = at;
        // Behind what the agent flushed at the same moment, if anything.
        self.out.push_back(pkt);
    }

    fn next_wakeup(&self) -> Option<Instant> {
        [self.out.front().map(|m| m.due), self.held_until().map(|h| h.0), self.pending_notes.front().map(|n| n.0), self.waiting.map(|a| a + crate::stage::POLL).or(self.cut_at())]
            .into_iter()
            .flatten()
            .min()
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Vec<Drop>) -> Option<Meta> {
        self.advance(now, drops);
        pop_due(&mut self.out, now)
    }

    fn is_aggregate_safe(&self) -> bool {
        false
    }

    fn in_flight(&self) -> usize {
        self.held.len() + self.out.len()
    }

    fn take_events(&mut self, out: &mut Vec<StageEvent>) {
        out.append(&mut self.events);
    }

    fn cut_at(&self) -> Option<Instant> {
        match self.waiting {
            // Asked again at every step of the pipeline (the wake-ups
            // are its later stages' and a poll's, `next_wakeup`).
            Some(asked) => Some(asked),
            None => self.next_cut_index().map(|k| if self.known(k) { self.plan[k].l2_start } else { self.drawn[k].l2_start }),
        }
    }

    fn cut_done(&mut self) {
        if let Some(k) = self.next_cut_index() {
            self.next_cut = k + 1;
        }
    }

    fn cut_waits(&self) -> bool {
        self.next_cut_index().is_some_and(|k| !self.known(k))
    }

    /// Buffer mode, the modified update through: the ground's side leaves
    /// the old cell once its station has delivered what it holds toward the
    /// aircraft (`emptied`), and tells the aircraft's side, which follows.
    fn cut_when(&mut self, now: Instant, emptied: Option<Instant>) -> Option<Instant> {
        let k = self.next_cut_index()?;
        let at = match (self.spec.side, &self.hop) {
            (Side::Home, hop) => emptied.map(|e| {
                let at = e.max(self.drawn[k].l2_start);
                if let Some(hop) = hop {
                    hop.set_l2_start(k as u16, at);
                }
                at
            }),
            (Side::Mobile, Some(hop)) => hop.l2_start(k as u16),
            // Built alone: the drawn command.
            (Side::Mobile, None) => Some(self.drawn[k].l2_start),
        };
        let Some(at) = at else {
            self.waiting = Some(now);
            return None;
        };
        // Not before what this side already ran (it may hear up to a poll late).
        let at = self.waiting.map_or(at, |asked| at.max(asked));
        self.waiting = None;
        self.fix(k, at);
        Some(self.plan[k].l2_start)
    }
}

impl Handover {
    /// The next handover that cuts this side's link (in buffer mode, with
    /// the modified update through, once the station's queue is out).
    fn next_cut_index(&self) -> Option<usize> {
        (self.next_cut < self.plan.len()).then_some(self.next_cut)
    }
}

mod parse;
pub(crate) use parse::{described, described_at};
pub use parse::{flight_times, Kind, KIND};
