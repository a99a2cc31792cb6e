//! The stage contract every link mechanism implements, and the context a
//! stage is built in.
//!
//! A stage sees packets as [`Meta`] only (the pipeline keeps payloads), in
//! logical time:
//!
//! 1. [`enqueue`](Stage::enqueue)`(at, pkt)`: the packet reaches this stage
//!    at `at` — its arrival for the first stage, the time the previous stage
//!    released it for the others. `at` never decreases for one stage.
//! 2. [`next_wakeup`](Stage::next_wakeup): the earliest time the stage has
//!    something to release or drop.
//! 3. [`dequeue`](Stage::dequeue)`(now)`: a packet released by `now`, with
//!    `meta.due` set to the exact time it left this stage (a stage stamps
//!    the time it computed, never `now`); drops go to `drops` with their
//!    reason and time. Called until it returns `None`.
//!
//! A stage never reads a clock, sleeps, spawns or touches a file; its
//! randomness comes from [`StageContext::rng`], one stream per stage and
//! direction, so the same seed gives the same decisions.

use rand::SeedableRng;

use crate::jitter::LinkRng;
use crate::packet::{Drop, Meta};
use crate::time::{Duration, Instant};

pub trait Stage: Send {
    /// A short name, for logs and tests (`bottleneck`, `loss`, `delay`).
    fn name(&self) -> &'static str;
    /// The packet reaches this stage at `at`.
    fn enqueue(&mut self, at: Instant, pkt: Meta, drops: &mut Vec<Drop>);
    /// When [`dequeue`](Stage::dequeue) next has something to do.
    fn next_wakeup(&self) -> Option<Instant>;
    /// The next packet that has left this stage by `now` (`meta.due` = when).
    fn dequeue(&mut self, now: Instant, drops: &mut Vec<Drop>) -> Option<Meta>;
    /// Whether this stage can never delay (beyond a constant), drop or
    /// split a packet, so a burst of segments may travel through it as one
    /// packet without changing any outcome.
    fn is_aggregate_safe(&self) -> bool;
    /// Bytes waiting for transmission (queues only).
    fn backlog_bytes(&self) -> u64 {
        0
    }
    /// Packets inside this stage.
    fn in_flight(&self) -> usize;
    /// Moves what the stage did since the last call, other than packets'
    /// fates, into `out` (for logs, stats and link monitors). Stages with
    /// nothing to tell keep the default.
    fn take_events(&mut self, _out: &mut Vec<StageEvent>) {}
    /// When the link under the later stages goes away (a handover's layer
    /// 2): the pipeline then runs them to that time and [`cut`](Stage::cut)s
    /// them. `None`: never, or not yet.
    fn cut_at(&self) -> Option<Instant> {
        None
    }
    /// The cut at [`cut_at`](Stage::cut_at) is done.
    fn cut_done(&mut self) {}
    /// The link under this stage went away at `at`: what waits for or is
    /// in transmission is lost (reason `outage`); what already propagates
    /// arrives. Stages that hold nothing of the kind keep the default.
    fn cut(&mut self, _at: Instant, _drops: &mut Vec<Drop>) {}
    /// Whether the cut due at [`cut_at`](Stage::cut_at) waits for
    /// something first (a base station delivering its queue before it
    /// commands the handover). Then the pipeline asks
    /// [`cut_when`](Stage::cut_when) instead of cutting at once.
    fn cut_waits(&self) -> bool {
        false
    }
    /// A waiting cut is due: `emptied` is when the later stages last held
    /// bytes for transmission, if they hold none by `now` (the pipeline
    /// has run them up to `now`). Returns when the cut happens (not before
    /// any `now` asked earlier), or `None` to be asked again (meanwhile
    /// [`cut_at`](Stage::cut_at) gives the last `now` asked, so the
    /// pipeline asks at each of its steps; the stage's own wake-ups poll).
    fn cut_when(&mut self, _now: Instant, _emptied: Option<Instant>) -> Option<Instant> {
        self.cut_at()
    }
    /// The capacity this stage gives now, bit/s, when it changes over time
    /// (bonded channels going down and up); `None` for stages whose
    /// capacity is fixed or absent. For link monitors.
    fn capacity_bps(&self) -> Option<f64> {
        None
    }
}

/// Something a stage did that is not a packet's fate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageEvent {
    pub at: Instant,
    pub note: Note,
}

/// What a [`StageEvent`] tells.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Note {
    /// DVB-RCS2: `count` super-frames from `index` on (more than one only
    /// for an idle stretch) ended; the capacity they allocated and the bytes
    /// the terminal sent in them. Stamped with the end of the last one.
    Superframe { index: u64, count: u64, allocated_bytes: u64, used_bytes: u64 },
    /// Bonded channels: `channel` dropped its call (`up = false`) or came
    /// back after redialling.
    Channel { channel: u16, up: bool },
    /// Link-layer ARQ sends packet `id` (`bytes` long) again: its
    /// `attempt`-th transmission (2 is the first retransmission).
    Retransmit { id: u64, bytes: u32, attempt: u32 },
    /// Handover number `index` reached `phase`.
    Handover { index: u16, phase: crate::handover::Phase },
}

/// The front of a stage's output queue if it is due by `now` (the queue
/// is in due order).
pub fn pop_due(out: &mut std::collections::VecDeque<Meta>, now: Instant) -> Option<Meta> {
    if out.front()?.due <= now {
        out.pop_front()
    } else {
        None
    }
}

/// What a stage is built with: the run's seed, the direction's stream and
/// the link's round-trip time (for BDP-sized queues).
#[derive(Clone, Debug)]
pub struct StageContext {
    pub seed: u64,
    /// Differs between the directions and hops of one run.
    pub stream: u64,
    pub rtt: Duration,
    /// What the two directions of this hop tell each other while the run
    /// goes on, when both are built together (a lab's hop); `None` for a
    /// direction built alone.
    pub hop: Option<std::sync::Arc<HopShare>>,
}

/// What one direction of a hop learns from the other at run time, beyond
/// the seed they share: so far a handover's layer-2 start, which the
/// ground's side fixes once its base station has delivered its queue
/// (seed 002's HO_COM without the P-bit) and the aircraft's side follows.
/// Unlike every draw from the seed, this depends on the other direction's
/// packets, and the aircraft's side reads it at its next step (within
/// [`POLL`] of the ground's).
#[derive(Debug, Default)]
pub struct HopShare {
    l2_start: std::sync::Mutex<std::collections::BTreeMap<u16, Instant>>,
}

/// How often a stage waiting on the other direction looks again.
pub const POLL: Duration = Duration::from_millis(1);

impl HopShare {
    /// Handover `index` leaves the old cell at `at`.
    pub fn set_l2_start(&self, index: u16, at: Instant) {
        self.l2_start.lock().unwrap_or_else(|e| e.into_inner()).entry(index).or_insert(at);
    }
    /// When handover `index` leaves the old cell, once known.
    pub fn l2_start(&self, index: u16) -> Option<Instant> {
        self.l2_start.lock().unwrap_or_else(|e| e.into_inner()).get(&index).copied()
    }
}

impl StageContext {
    /// The RNG of one stage of this direction. `slot` separates the stages
    /// of a direction (each kind in the registry has its own); slots 0–3
    /// keep the streams every earlier version used, so seeds reproduce.
    pub fn rng(&self, slot: u64) -> LinkRng {
        if slot < 4 {
            stage_rng(self.seed, self.stream * 4 + slot)
        } else {
            stage_rng(self.seed, (1 << 40) + self.stream * 64 + slot)
        }
    }

    /// An RNG the two directions of this hop share (streams `2h` and
    /// `2h + 1` are hop `h`'s): what happens to the hop as a whole, such
    /// as a call carrying both directions dropping, drawn alike on both
    /// sides. `key` (below 4096) separates such draws.
    pub fn hop_rng(&self, key: u64) -> LinkRng {
        debug_assert!(key < 4096);
        stage_rng(self.seed, (1 << 48) + (self.stream / 2) * 4096 + key)
    }
}

/// An RNG for one stage of one direction: the seed picks the key, the
/// stream separates stages and directions.
pub fn stage_rng(seed: u64, stream: u64) -> LinkRng {
    let mut r = LinkRng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}
