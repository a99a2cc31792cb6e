//! DVB-RCS2 bandwidth on demand on a GEO return link (seed 001), as one
//! stage. Profile key: `dama = { carrier, cra, rbdc_max, vbdc_max, fca,
//! superframe, scheduler_latency, rbdc_timeout, loop, terminals, load,
//! each_user }`.
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
//!
//! **Many real terminals** (`each_user = true`): each user
//! ([`Meta::user`](crate::packet::Meta::user): each passenger address of
//! `run --passengers`, standing for one aircraft on the beam) is a terminal
//! of its own, with its own queue (`buffer` each), requests and grants;
//! the NCC serves all of them and the `terminals` synthetic ones together
//! (RBDC and VBDC max-min fair among those asking, CRA and FCA to each). A
//! terminal logs on when it first sends and is granted from the next
//! super-frame. Without it, everything queues at one terminal, as before.

use crate::profile::keys::{RawKeys, Table};
use crate::profile::{DirectionSpec, Loader, ProfileError};
use crate::registry::StageKind;
use crate::stage::{Stage, StageContext};
use crate::time::Duration;
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
    /// Bytes a terminal queues before it drops arrivals.
    pub buffer_bytes: u64,
    /// Each user a terminal of its own (else one terminal for all).
    pub each_user: bool,
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

    /// The NCC's allocation to a lone terminal, given its live RBDC rate
    /// and its VBDC volume due this super-frame.
    pub fn allocate(&self, rbdc_request: f64, vbdc_bytes: u64) -> Allocation {
        self.allocate_all(&[(rbdc_request, vbdc_bytes)])[0]
    }

    /// The NCC's allocation to each real terminal, given each one's live
    /// RBDC rate and VBDC volume due this super-frame, with the `terminals`
    /// synthetic ones asking `load` beside them: CRA to every terminal;
    /// RBDC max-min fair among all (capped at `rbdc_max`); VBDC max-min
    /// fair among the real ones from what is left; then FCA, what remains
    /// shared evenly, up to `fca` each.
    pub fn allocate_all(&self, asked: &[(f64, u64)]) -> Vec<Allocation> {
        if asked.is_empty() {
            return Vec::new();
        }
        let n = self.terminals as f64 + asked.len() as f64;
        let cra = self.cra_bps.min(self.carrier_bps / n);
        let mut free = self.carrier_bps - n * cra;
        let others = self.load_bps.min(self.rbdc_max_bps.max(0.0));
        let mut demands: Vec<f64> = asked.iter().map(|a| a.0.min(self.rbdc_max_bps)).collect();
        demands.extend(std::iter::repeat_n(others, self.terminals as usize));
        let rbdc = fair_shares(free, &demands);
        free -= rbdc.iter().sum::<f64>();
        let want: Vec<f64> = asked.iter().map(|a| a.1 as f64 * 8.0 / self.superframe.as_secs_f64()).collect();
        let vbdc = if want.len() == 1 { vec![want[0].min(free.max(0.0))] } else { fair_shares(free.max(0.0), &want) };
        free -= vbdc.iter().sum::<f64>();
        let fca = (free.max(0.0) / n).min(self.fca_bps);
        (0..asked.len()).map(|i| Allocation { cra, rbdc: rbdc[i], vbdc: vbdc[i], fca }).collect()
    }
}

mod terminal;

pub use terminal::Dama;

/// DVB-RCS2 bandwidth on demand in the stage registry: key `dama`.
pub struct Kind;

pub static KIND: Kind = Kind;

const KEYS: &[&str] = &["carrier", "cra", "rbdc_max", "rbdc_timeout", "vbdc_max", "fca", "superframe", "scheduler_latency", "loop", "terminals", "load", "buffer", "each_user"];

impl StageKind for Kind {
    fn name(&self) -> &'static str {
        "dama"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["dama"]
    }
    fn parse(&self, raw: &RawKeys, _load: Loader<'_>, d: &mut DirectionSpec) -> Result<(), ProfileError> {
        let Some(r) = raw.get("dama") else { return Ok(()) };
        let tab =
            Table::of(r, "a table { carrier = \"2 Mbit/s\", cra?, rbdc_max?, vbdc_max?, fca?, superframe?, scheduler_latency?, rbdc_timeout?, loop?, terminals?, load?, buffer?, each_user? }", KEYS)?;
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
            each_user: tab.flag("each_user", false)?,
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
                "carrier {}, super-frame {}, {}; scheduler {} SF; {}{} other terminals at {}",
                units::Rate::from_bps(carrier_bps),
                superframe,
                kinds.join(", "),
                spec.scheduler_latency,
                if spec.each_user { "each user a terminal; " } else { "" },
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
            each_user: false,
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
