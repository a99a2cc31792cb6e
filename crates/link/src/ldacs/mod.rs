//! L-DACS 1 medium access and ARQ, as one stage (seed 002). Profile key:
//! `ldacs = { link = "rl" | "fl", rate, fer | budget, coding, arq, max_retx, buffer,
//! each_user }` (`each_user`: many aircraft in one cell, [`cell`]).
//!
//! What a packet goes through, in logical time:
//! - **Frames.** A super-frame of 240 ms is a random-access/broadcast part
//!   of 6.72 ms, then 4 multi-frames of 58.32 ms. Resources are granted per
//!   multi-frame, so transmission starts at multi-frame boundaries.
//! - **Access.** Forward link (ground → aircraft, `fl`): the ground station
//!   schedules its own data, so a packet may start at the next boundary.
//!   Return link (`rl`): the aircraft asks in the next multi-frame's
//!   dedicated-control slot and is granted in the following common-control
//!   slot, so a packet may start one multi-frame after that request.
//! - **Sending.** At the user's share of the cell rate (`rate`, e.g. the
//!   seed's 31.5 or 158 kbit/s), spread evenly over the multi-frames — an
//!   approximation: the real grant fills data tiles of the granted
//!   multi-frame. A packet carries a 7 B L-DACS header and is cut into PHY
//!   blocks of 14 B (return) or 91 B (forward).
//! - **Errors.** Each block is lost independently with `fer` (defaults: the
//!   seed's 6.28e-2 return, 6.31e-5 forward), or with the FER a
//!   [`Budget`] gives (free-space path loss over `distance_km`, thermal
//!   noise, seed 002's Tables 1–2, through an SNR→FER table); one lost
//!   block loses the transmission. With `coding = "joint"` (the updated
//!   specification of SESAR P15.2.4, seed 002 §6: a transmission's blocks
//!   coded and interleaved together) `fer` is a whole transmission's
//!   error rate instead, whatever its blocks: the seed gives only the
//!   result (1e-2 for a six-block binding update), not the code.
//! - **ARQ** (selective repeat over packets): a transmission's
//!   acknowledgement is due at the next multi-frame boundary after it
//!   ends; when it does not come the packet is sent again (on the return
//!   link after a new request cycle), at most `max_retx` times, then dropped
//!   (reason `arq`). Other packets go on meanwhile; the receiver hands
//!   packets on in order, so one that waits for a retransmission holds
//!   back those behind it. With `arq = false` a lost transmission is
//!   dropped (reason `loss`).
//!
//! The wait for a grant, the transmission and the retransmissions are this
//! stage's; the propagation delay is the profile's `delay`.

use std::collections::{BTreeMap, VecDeque};

use rand::Rng;

use crate::jitter::LinkRng;
use crate::packet::{Drop, DropReason, Meta};
use crate::profile::keys::{RawKeys, Table};
use crate::profile::{DirectionSpec, Loader, ProfileError};
use crate::registry::StageKind;
use crate::stage::{pop_due, Note, Stage, StageContext, StageEvent};
use crate::time::{Duration, Instant};
use crate::units;

/// Super-frame length.
pub const SUPER_FRAME: Duration = Duration::from_micros(240_000);
/// The random-access/broadcast part at the start of a super-frame.
pub const RA_PART: Duration = Duration::from_micros(6_720);
/// A multi-frame (4 per super-frame).
pub const MULTI_FRAME: Duration = Duration::from_micros(58_320);
/// The L-DACS header added to every packet, bytes.
pub const HEADER_BYTES: u32 = 7;

/// Which way the link runs: it sets the access scheme, the block size and
/// the default frame error rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkDir {
    /// Forward link, ground → aircraft.
    Forward,
    /// Return link, aircraft → ground.
    Return,
}

impl LinkDir {
    pub fn block_bytes(self) -> u32 {
        match self {
            LinkDir::Forward => 91,
            LinkDir::Return => 14,
        }
    }
    pub fn default_fer(self) -> f64 {
        match self {
            LinkDir::Forward => 6.31e-5,
            LinkDir::Return => 6.28e-2,
        }
    }
    fn as_str(self) -> &'static str {
        match self {
            LinkDir::Forward => "fl",
            LinkDir::Return => "rl",
        }
    }
}

crate::choice_core! {
    /// How a transmission's PHY blocks are coded: each on its own (the first
    /// specification) or all together (SESAR P15.2.4's update, seed 002 §6).
    pub enum Coding { Separate = "separate", Joint = "joint" }
}

/// The model's parameters for one direction.
#[derive(Clone, Debug, PartialEq)]
pub struct LdacsSpec {
    pub link: LinkDir,
    /// The user's share of the cell rate, bit/s.
    pub rate_bps: f64,
    /// Probability that a PHY block is lost (a whole transmission with
    /// `joint` coding).
    pub fer: f64,
    /// How a transmission's blocks are coded: on their own (`fer` per
    /// block) or jointly (`fer` per transmission).
    pub coding: Coding,
    pub arq: bool,
    /// Retransmissions before a packet is dropped.
    pub max_retx: u32,
    /// Bytes the sender holds (queued and awaiting acknowledgement) before
    /// it drops arrivals.
    pub buffer_bytes: u64,
    /// The link budget the FER came from, if one was given.
    pub budget: Option<Budget>,
    /// Each user an aircraft of its own in one cell, `rate` the cell's
    /// ([`cell`]).
    pub each_user: bool,
}

impl LdacsSpec {
    /// PHY blocks a packet of `len` bytes takes.
    pub fn blocks(&self, len: u32) -> u32 {
        (len + HEADER_BYTES).div_ceil(self.link.block_bytes())
    }
    /// Probability that one transmission of a `len`-byte packet is lost.
    pub fn transmission_loss(&self, len: u32) -> f64 {
        if self.coding == Coding::Joint {
            return self.fer;
        }
        1.0 - (1.0 - self.fer).powi(self.blocks(len) as i32)
    }
    #[cfg(test)]
    fn tx_time(&self, len: u32) -> Duration {
        self.tx_time_at(len, self.rate_bps)
    }
    fn tx_time_at(&self, len: u32, rate_bps: f64) -> Duration {
        let bits = (self.blocks(len) * self.link.block_bytes()) as f64 * 8.0;
        Duration::from_secs_f64(bits / rate_bps)
    }
}

/// The first multi-frame boundary at or after `t`.
pub fn next_boundary(t: Instant) -> Instant {
    let sf = t.0 / SUPER_FRAME.0;
    let base = sf * SUPER_FRAME.0 + RA_PART.0;
    if t.0 <= base {
        return Instant(base);
    }
    let k = (t.0 - base).div_ceil(MULTI_FRAME.0);
    if k < 4 {
        Instant(base + k * MULTI_FRAME.0)
    } else {
        Instant((sf + 1) * SUPER_FRAME.0 + RA_PART.0)
    }
}

/// The first boundary strictly after `t`.
fn boundary_after(t: Instant) -> Instant {
    next_boundary(Instant(t.0 + 1))
}

#[derive(Clone, Copy, Debug)]
enum Fate {
    Waiting,
    Received(Instant),
    Dropped(Instant, DropReason),
}

struct Sent {
    meta: Meta,
    /// Transmissions so far.
    attempts: u32,
    fate: Fate,
}

/// The L-DACS 1 stage of one direction.
pub struct Ldacs {
    spec: LdacsSpec,
    /// The rate a transmission starting now gets: the spec's, or in a
    /// shared cell its share ([`cell`]).
    rate_bps: f64,
    rng: LinkRng,
    /// Packets not yet handed on, by arrival order.
    sent: BTreeMap<u64, Sent>,
    /// Transmissions waiting for the link: (ready at, arrival order).
    ready: BTreeMap<(Instant, u64), ()>,
    /// The transmission on the air: (arrival order, start, end, lost).
    busy: Option<(u64, Instant, Instant, bool)>,
    free_at: Instant,
    /// Arrival order of the next packet in, and of the next to hand on.
    next_in: u64,
    next_out: u64,
    held_bytes: u64,
    out: VecDeque<Meta>,
    last_out: Instant,
    /// Retransmissions not yet taken.
    events: Vec<StageEvent>,
}

impl Ldacs {
    pub fn new(spec: LdacsSpec, rng: LinkRng) -> Self {
        Ldacs {
            rate_bps: spec.rate_bps,
            spec,
            rng,
            sent: BTreeMap::new(),
            ready: BTreeMap::new(),
            busy: None,
            free_at: Instant::ZERO,
            next_in: 0,
            next_out: 0,
            held_bytes: 0,
            out: VecDeque::new(),
            last_out: Instant::ZERO,
            events: Vec::new(),
        }
    }

    /// When a packet (or a retransmission) that is ready to go at `t` may
    /// start: the forward link at the next boundary, the return link one
    /// request cycle later.
    fn access(&self, t: Instant) -> Instant {
        match self.spec.link {
            LinkDir::Forward => next_boundary(t),
            LinkDir::Return => boundary_after(next_boundary(t)),
        }
    }

    /// Runs the link up to `until`: ends transmissions, decides
    /// retransmissions, starts what may start.
    fn advance(&mut self, until: Instant, drops: &mut Vec<Drop>) {
        loop {
            if let Some((seq, _start, end, lost)) = self.busy {
                if end > until {
                    return;
                }
                self.busy = None;
                self.free_at = end;
                self.finish(seq, end, lost);
                self.hand_on(end, drops);
                continue;
            }
            let Some((&(ready, seq), _)) = self.ready.iter().next() else { return };
            let start = ready.max(self.free_at);
            if start > until {
                return;
            }
            self.ready.remove(&(ready, seq));
            let s = self.sent.get_mut(&seq).expect("a ready packet is held");
            s.attempts += 1;
            let len = s.meta.len;
            if s.attempts == 1 {
                s.meta.tx_start = start;
            } else {
                let note = Note::Retransmit { id: s.meta.id, bytes: len, attempt: s.attempts };
                self.events.push(StageEvent { at: start, note });
            }
            let lost = self.spec.fer > 0.0 && self.rng.random::<f64>() < self.spec.transmission_loss(len);
            self.busy = Some((seq, start, start + self.spec.tx_time_at(len, self.rate_bps), lost));
        }
    }

    fn finish(&mut self, seq: u64, end: Instant, lost: bool) {
        // Sent again once the acknowledgement due at the next boundary
        // has not come: from then on, access as for a new packet.
        let again = self.access(boundary_after(end));
        let spec = &self.spec;
        let s = self.sent.get_mut(&seq).expect("a packet on the air is held");
        if !lost {
            s.fate = Fate::Received(end);
            s.meta.tx_end = end;
        } else if !spec.arq {
            s.fate = Fate::Dropped(end, DropReason::Loss);
        } else if s.attempts > spec.max_retx {
            s.fate = Fate::Dropped(end, DropReason::Arq);
        } else {
            self.ready.insert((again, seq), ());
        }
    }

    /// Hands on, in arrival order, every packet whose fate is known by
    /// `event` (the end of the transmission that settled one): a packet
    /// held behind another leaves when that one is settled.
    fn hand_on(&mut self, event: Instant, drops: &mut Vec<Drop>) {
        while let Some(s) = self.sent.get(&self.next_out) {
            match s.fate {
                Fate::Waiting => return,
                Fate::Received(at) => {
                    let mut m = s.meta;
                    m.due = at.max(event).max(self.last_out);
                    self.last_out = m.due;
                    self.out.push_back(m);
                }
                Fate::Dropped(at, reason) => drops.push(Drop { meta: s.meta, at, reason }),
            }
            let s = self.sent.remove(&self.next_out).expect("just looked at");
            self.held_bytes -= s.meta.len as u64;
            self.next_out += 1;
        }
    }
}

impl Stage for Ldacs {
    fn name(&self) -> &'static str {
        "ldacs"
    }

    fn enqueue(&mut self, at: Instant, pkt: Meta, drops: &mut Vec<Drop>) {
        self.advance(at, drops);
        if self.held_bytes + pkt.len as u64 > self.spec.buffer_bytes {
            drops.push(Drop { meta: pkt, at, reason: DropReason::Queue });
            return;
        }
        let seq = self.next_in;
        self.next_in += 1;
        self.held_bytes += pkt.len as u64;
        self.sent.insert(seq, Sent { meta: pkt, attempts: 0, fate: Fate::Waiting });
        self.ready.insert((self.access(at), seq), ());
        self.advance(at, drops);
    }

    fn next_wakeup(&self) -> Option<Instant> {
        let out = self.out.front().map(|m| m.due);
        let air = match self.busy {
            Some((_, _, end, _)) => Some(end),
            None => self.ready.keys().next().map(|(ready, _)| (*ready).max(self.free_at)),
        };
        match (out, air) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn dequeue(&mut self, now: Instant, drops: &mut Vec<Drop>) -> Option<Meta> {
        self.advance(now, drops);
        pop_due(&mut self.out, now)
    }

    fn is_aggregate_safe(&self) -> bool {
        false
    }

    fn backlog_bytes(&self) -> u64 {
        self.held_bytes
    }

    fn in_flight(&self) -> usize {
        self.sent.len() + self.out.len()
    }

    fn take_events(&mut self, out: &mut Vec<StageEvent>) {
        out.append(&mut self.events);
    }

    fn cut(&mut self, at: Instant, drops: &mut Vec<Drop>) {
        // What the receiver has (waiting only for an earlier packet) is
        // handed on; what waits for a grant, a retransmission or is on
        // the air is lost with the cell.
        self.ready.clear();
        self.busy = None;
        self.free_at = self.free_at.max(at);
        for s in self.sent.values_mut() {
            if matches!(s.fate, Fate::Waiting) {
                s.fate = Fate::Dropped(at, DropReason::Outage);
            }
        }
        self.hand_on(at, drops);
    }
}

/// L-DACS 1 in the stage registry: key `ldacs`.
pub struct Kind;

pub static KIND: Kind = Kind;

/// The L-DACS stage's RNG slot (see [`StageContext::rng`]).
pub const RNG_SLOT: u64 = 2;

mod budget;
pub mod cell;
pub use budget::{fer_at, Budget, FL_SNR_FER, RL_SNR_FER};
use budget::{parse_budget, HELP};

impl StageKind for Kind {
    fn name(&self) -> &'static str {
        "ldacs"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["ldacs"]
    }
    fn rng_slot(&self) -> Option<u64> {
        Some(RNG_SLOT)
    }
    fn parse(&self, raw: &RawKeys, _load: Loader<'_>, d: &mut DirectionSpec) -> Result<(), ProfileError> {
        let Some(r) = raw.get("ldacs") else { return Ok(()) };
        let tab = Table::of(r, HELP, &["link", "rate", "fer", "budget", "coding", "arq", "max_retx", "buffer", "each_user"])?;
        let t = tab.t;
        let link = match t.get("link").and_then(|v| v.as_str()) {
            Some("rl") => LinkDir::Return,
            Some("fl") => LinkDir::Forward,
            _ => return Err(r.err("link: expected \"rl\" (return, aircraft → ground) or \"fl\" (forward)")),
        };
        let rate_bps = match t.get("rate").and_then(|v| v.as_str()) {
            Some(s) => units::parse_rate(s).map_err(|m| r.err(format!("rate: expected {m}")))?.bits_per_sec,
            None => return Err(r.err("rate: expected the user's share of the cell rate, like \"31.5 kbit/s\"")),
        };
        if rate_bps <= 0.0 {
            return Err(r.err("rate: expected more than 0"));
        }
        let budget = t.get("budget").map(|v| parse_budget(r, v, link)).transpose()?;
        if budget.is_some() && t.contains_key("fer") {
            return Err(r.err("give fer or budget, not both"));
        }
        let fer = match t.get("fer") {
            None => budget.as_ref().map(|b| b.fer()).unwrap_or(link.default_fer()),
            Some(toml::Value::Float(f)) if (0.0..1.0).contains(f) => *f,
            Some(toml::Value::Integer(0)) => 0.0,
            Some(toml::Value::String(s)) => units::parse_probability(s).ok().filter(|p| *p < 1.0).ok_or_else(|| r.err("fer: expected a probability below 1, like 0.0628 or \"6.28%\""))?,
            Some(_) => return Err(r.err("fer: expected a probability below 1, like 0.0628 or \"6.28%\"")),
        };
        let coding = match t.get("coding") {
            None => Coding::Separate,
            Some(v) => v
                .as_str()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| r.err(format!("coding: expected one of {} (each PHY block coded on its own, fer per block; or all together, fer per transmission)", Coding::allowed())))?,
        };
        if coding == Coding::Joint && !t.contains_key("fer") {
            return Err(r.err("coding = \"joint\" needs fer: the error rate of a whole transmission (seed 002 §6 quotes 1e-2 for a six-block message)"));
        }
        let arq = tab.flag("arq", true)?;
        let max_retx = tab.whole("max_retx", 5, 0, 100, "a whole number")? as u32;
        let buffer_bytes = tab.bytes("buffer", 64_000, 1500)?;
        let fer_text = match &budget {
            Some(b) => format!(
                "FER {fer:.3e} (SNR {:.1} dB at {} km: received {:.1} dBm, noise {:.1} dBm, safety margin {} dB; {:.2} dB above the {} dB working point)",
                b.snr_db(),
                b.distance_km,
                b.rx_power_dbm(),
                b.noise_dbm(),
                b.margin_db,
                b.operating_margin_db(),
                budget::WORKING_POINT_SNR_DB
            ),
            None if coding == Coding::Joint => format!("error rate {fer} per transmission (blocks coded jointly)"),
            None => format!("FER {fer}"),
        };
        let each_user = tab.flag("each_user", false)?;
        let spec = LdacsSpec { link, rate_bps, fer, coding, arq, max_retx, buffer_bytes, budget, each_user };
        d.described.insert(
            "ldacs".into(),
            format!(
                "{} at {}{}, {} B blocks, {}, {}, buffer {} B",
                link.as_str(),
                units::Rate::from_bps(rate_bps),
                if each_user { " (the cell's, shared by the aircraft sending: each user one)" } else { "" },
                link.block_bytes(),
                fer_text,
                if arq { format!("ARQ up to {max_retx} retransmissions") } else { "no ARQ".into() },
                buffer_bytes
            ),
        );
        d.ldacs = Some(spec);
        Ok(())
    }
    fn build(&self, spec: &DirectionSpec, ctx: &StageContext) -> Option<Box<dyn Stage>> {
        let s = spec.ldacs.clone()?;
        if s.each_user {
            return Some(Box::new(cell::Cell::new(s, ctx.rng(RNG_SLOT))));
        }
        Some(Box::new(Ldacs::new(s, ctx.rng(RNG_SLOT))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: f64) -> Instant {
        Instant((x * 1e6).round() as u64)
    }

    #[test]
    fn the_link_budget_reproduces_the_seeds_tables() {
        // Seed 002, Table 2: noise −111.03 dBm (FL) and −112.03 dBm (RL).
        let (fl, rl) = (Budget::seed(LinkDir::Forward, 225.0), Budget::seed(LinkDir::Return, 225.0));
        assert!((fl.noise_dbm() + 111.03).abs() < 0.01 && (rl.noise_dbm() + 112.03).abs() < 0.01);
        // Received power −95.26 / −95.80 dBm in the seed; free-space loss
        // gives 0.66 dB less on both (the seed's Eqn. 1 is not printed).
        assert!((fl.rx_power_dbm() + 95.26).abs() < 0.7 && (rl.rx_power_dbm() + 95.80).abs() < 0.7, "{} {}", fl.rx_power_dbm(), rl.rx_power_dbm());
        // At the cell edge with the 6 dB margin the SNR is near the seed's
        // 8.7 dB working point, so the FER is near the seed's fixed values.
        assert!((fl.snr_db() - 9.1).abs() < 0.1 && (rl.snr_db() - 9.6).abs() < 0.1, "{} {}", fl.snr_db(), rl.snr_db());
        assert!((1e-5..6.31e-5).contains(&fl.fer()) && (1.5e-2..6.28e-2).contains(&rl.fer()), "{} {}", fl.fer(), rl.fer());
        // Table 2's operating margins are 1.07 / 1.53 dB; from Table 1 by
        // free-space loss they are 0.40 / 0.87 dB (the catalogue's note).
        assert!((fl.operating_margin_db() - 0.40).abs() < 0.05 && (rl.operating_margin_db() - 0.87).abs() < 0.05, "{} {}", fl.operating_margin_db(), rl.operating_margin_db());
        // Farther is worse; the tables hold the seed's points exactly.
        assert!(Budget::seed(LinkDir::Return, 400.0).fer() > rl.fer() * 3.0);
        assert_eq!(fer_at(FL_SNR_FER, 8.7), 6.31e-5);
        assert_eq!(fer_at(RL_SNR_FER, 8.7), 6.28e-2);
        assert_eq!(fer_at(RL_SNR_FER, -3.0), 0.9);
        for t in [FL_SNR_FER, RL_SNR_FER] {
            assert!(t.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 > w[1].1));
        }
    }

    #[test]
    fn boundaries_follow_the_super_frame() {
        assert_eq!(next_boundary(Instant(0)), ms(6.72));
        assert_eq!(next_boundary(ms(6.72)), ms(6.72));
        assert_eq!(next_boundary(ms(7.0)), ms(65.04));
        assert_eq!(next_boundary(ms(180.0)), ms(181.68));
        // After the fourth multi-frame: the next super-frame's first.
        assert_eq!(next_boundary(ms(181.7)), ms(246.72));
        assert_eq!(boundary_after(ms(65.04)), ms(123.36));
    }

    #[test]
    fn blocks_and_transmission_loss() {
        let rl = LdacsSpec { link: LinkDir::Return, rate_bps: 31_500.0, fer: 0.0628, coding: Coding::Separate, arq: true, max_retx: 5, buffer_bytes: 64_000, budget: None, each_user: false };
        // 77 B of IP + 7 B header = 84 B = six 14 B blocks.
        assert_eq!(rl.blocks(77), 6);
        assert!((rl.transmission_loss(77) - 0.3222).abs() < 1e-3);
        assert_eq!(rl.tx_time(77), Duration::from_secs_f64(84.0 * 8.0 / 31_500.0));
    }
}
