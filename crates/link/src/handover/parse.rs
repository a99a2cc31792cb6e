//! The `handover` profile key: parsed into a [`HandoverSpec`], described
//! in words, registered as a link stage.

use super::{Handover, HandoverSpec, Mode, SignalLoss};
use crate::profile::keys::{number, Raw, RawKeys, Table};
use crate::profile::{DirectionSpec, Loader, ProfileError};
use crate::registry::StageKind;
use crate::stage::{stage_rng, Stage, StageContext};
use crate::time::Duration;
use crate::units;

/// Handovers in the stage registry: key `handover` (in `[link]`).
pub struct Kind;

pub static KIND: Kind = Kind;

/// Handover times of a flight past a line of stations (see the module doc).
pub fn flight_times(speed_kmh: f64, cell_km: f64, overlap_km: f64, start_km: f64, count: u32) -> Vec<Duration> {
    let spacing = 2.0 * cell_km - overlap_km;
    (0..).map(|k| (spacing / 2.0 + k as f64 * spacing - start_km) / speed_kmh * 3600.0).filter(|s| *s > 0.0).take(count as usize).map(Duration::from_secs_f64).collect()
}

const MOBILITY_KEYS: &[&str] = &["speed_kmh", "cell_km", "overlap_km", "start_km", "count"];

const KEYS: &[&str] = &[
    "at",
    "mobility",
    "mode",
    "dad",
    "router_adv",
    "bu",
    "ba",
    "ra_collision",
    "backoff",
    "signal_loss",
    "mbu_loss",
    "mba_loss",
    "bu_loss",
    "ba_loss",
    "first_bu_lost",
    "first_ba_lost",
    "tunnel",
    "buffer",
];

impl StageKind for Kind {
    fn name(&self) -> &'static str {
        "handover"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["handover"]
    }
    fn parse(&self, raw: &RawKeys, _load: Loader<'_>, d: &mut DirectionSpec) -> Result<(), ProfileError> {
        let Some(r) = raw.get("handover") else { return Ok(()) };
        if !r.key.starts_with("link.") {
            return Err(r.err("put handover in [link]: both directions share one timeline"));
        }
        let tab = Table::of(
            r,
            "a table { at = [\"20 s\"], mode = \"baseline\" | \"no-dad\" | \"buffer\", dad?, router_adv?, bu?, ba?, ra_collision?, backoff?, signal_loss?, mbu_loss?, mba_loss?, bu_loss?, ba_loss?, first_bu_lost?, first_ba_lost?, tunnel?, buffer? }",
            KEYS,
        )?;
        let t = tab.t;
        let dur = |k: &str, default: Duration| -> Result<Duration, ProfileError> { Ok(tab.duration(k)?.unwrap_or(default)) };
        // A probability below 1, or up to 1 where `every` allows it.
        let prob_upto = |k: &str, default: f64, every: bool| -> Result<f64, ProfileError> {
            match t.get(k) {
                None => Ok(default),
                Some(toml::Value::Float(f)) if (0.0..1.0).contains(f) || (every && *f == 1.0) => Ok(*f),
                Some(toml::Value::Integer(0)) => Ok(0.0),
                Some(toml::Value::Integer(1)) if every => Ok(1.0),
                Some(_) if every => Err(r.err(format!("{k}: expected a probability from 0 to 1, like 0.1 (1: every one lost)"))),
                Some(_) => Err(r.err(format!("{k}: expected a probability below 1, like 0.1 (the update is sent until one is acknowledged)"))),
            }
        };
        let prob = |k: &str, default: f64| prob_upto(k, default, false);
        let flag = |k: &str| tab.flag(k, false);
        let all = prob("signal_loss", 0.0)?;
        let loss = SignalLoss {
            mbu: prob_upto("mbu_loss", all, true)?,
            mba: prob_upto("mba_loss", all, true)?,
            bu: prob("bu_loss", all)?,
            ba: prob("ba_loss", all)?,
            first_bu: flag("first_bu_lost")?,
            first_ba: flag("first_ba_lost")?,
        };
        // With a route over L-DACS the route sets the times (and refuses
        // them here).
        let at = if t.get("at").is_none() && t.get("mobility").is_none() && raw.contains_key("route") { Vec::new() } else { handover_times(r, t)? };
        let def = HandoverSpec::default();
        let mode = match t.get("mode") {
            None => def.mode,
            Some(v) => v.as_str().and_then(|s| s.parse().ok()).ok_or_else(|| r.err("mode: expected one of baseline, no-dad, buffer"))?,
        };
        let backoff = tab.whole("backoff", def.backoff.into(), 1, 64, "a whole number of super-frames")? as u32;
        let tunnel_bytes = tab.whole("tunnel", def.tunnel_bytes.into(), 0, 200, "header bytes per packet (IPv6-in-IPv6: 40)")? as u32;
        let buffer_bytes = tab.bytes("buffer", def.buffer_bytes, 0)?;
        let spec = HandoverSpec {
            at,
            mode,
            dad: dur("dad", def.dad)?,
            router_adv: dur("router_adv", def.router_adv)?,
            bu: dur("bu", def.bu)?,
            ba: dur("ba", def.ba)?,
            ra_collision: prob("ra_collision", def.ra_collision)?,
            backoff,
            loss,
            tunnel_bytes,
            buffer_bytes,
            side: def.side,
        };
        d.described.insert("handover".into(), described(&spec));
        d.handover = Some(spec);
        Ok(())
    }
    fn build(&self, spec: &DirectionSpec, ctx: &StageContext) -> Option<Box<dyn Stage>> {
        // Both directions of a hop (streams 2h and 2h + 1) draw the same
        // timeline.
        let rng = stage_rng(ctx.seed, (1 << 41) + ctx.stream / 2);
        Some(Box::new(Handover::new(spec.handover.clone()?, rng, ctx.hop.clone())))
    }
}

/// The handover times: `at` (a list of times) or `mobility` (an aircraft
/// flying through cells of a size, at a speed).
fn handover_times(r: &Raw, t: &toml::Table) -> Result<Vec<Duration>, ProfileError> {
    let at_help = || r.err("at: expected a list of times like [\"20 s\", \"90 s\"], increasing (or mobility = { speed_kmh, cell_km, overlap_km, start_km })");
    let at: Vec<Duration> = match (t.get("at"), t.get("mobility")) {
        (Some(_), Some(_)) => return Err(r.err("give at or mobility, not both")),
        (Some(toml::Value::Array(a)), None) => a.iter().map(|v| v.as_str().ok_or_else(at_help).and_then(|s| units::parse_duration(s).map_err(|_| at_help()))).collect::<Result<_, _>>()?,
        (Some(toml::Value::String(s)), None) => vec![units::parse_duration(s).map_err(|_| at_help())?],
        (None, Some(m)) => {
            let m = m.as_table().ok_or_else(|| r.err("mobility: expected a table { speed_kmh = 800, cell_km = 225, overlap_km = 100, start_km = 125, count = 10 }"))?;
            if let Some(k) = m.keys().find(|k| !MOBILITY_KEYS.contains(&k.as_str())) {
                return Err(r.err(format!("mobility: unknown key {k:?}; allowed: {}", MOBILITY_KEYS.join(", "))));
            }
            let num = |k: &str, default: f64| -> Result<f64, ProfileError> {
                match m.get(k) {
                    None => Ok(default),
                    Some(v) => number(v).filter(|x| *x >= 0.0).ok_or_else(|| r.err(format!("mobility.{k}: expected a number, 0 or more"))),
                }
            };
            let (speed, cell, overlap, start, count) = (num("speed_kmh", 800.0)?, num("cell_km", 225.0)?, num("overlap_km", 100.0)?, num("start_km", 125.0)?, num("count", 10.0)?);
            if speed <= 0.0 || overlap >= 2.0 * cell || count < 1.0 {
                return Err(r.err("mobility: needs speed_kmh above 0, overlap_km below twice cell_km, count 1 or more"));
            }
            flight_times(speed, cell, overlap, start, count as u32)
        }
        _ => return Err(at_help()),
    };
    if at.is_empty() || at.windows(2).any(|w| w[0] >= w[1]) {
        return Err(at_help());
    }
    Ok(at)
}

/// The handover stage in words (`aerolink profiles show`).
pub(crate) fn described(spec: &HandoverSpec) -> String {
    let at_text: Vec<String> = spec.at.iter().map(|d| d.to_string()).collect();
    described_at(spec, &at_text.join(", "))
}

/// The same with the times as `at_text` says them.
pub(crate) fn described_at(spec: &HandoverSpec, at_text: &str) -> String {
    format!(
        "{} at {}; L2 random access (collision {}, back-off ≤ {} SF), router advertisement {}, {}binding update {} up / {} down (loss {}), tunnel {} B{}",
        spec.mode,
        at_text,
        spec.ra_collision,
        spec.backoff,
        spec.router_adv,
        if spec.mode == Mode::Baseline { format!("DAD {}, ", spec.dad) } else { String::new() },
        spec.bu,
        spec.ba,
        loss_text(spec),
        spec.tunnel_bytes,
        if spec.mode == Mode::Buffer { format!(", home-agent buffer {} B", spec.buffer_bytes) } else { String::new() }
    )
}

/// The signalling losses in words: one figure when all four are alike.
fn loss_text(spec: &HandoverSpec) -> String {
    let l = &spec.loss;
    let alike = l.mbu == l.bu && l.mba == l.bu && l.ba == l.bu;
    let mut out = if alike { format!("{}", l.bu) } else { format!("update {}, acknowledgement {}", l.bu, l.ba) };
    if spec.mode == Mode::Buffer && !alike {
        out += &format!(", modified update {}, its acknowledgement {}", l.mbu, l.mba);
    }
    for (on, what) in [(l.first_bu, "first update"), (l.first_ba, "first acknowledgement")] {
        if on {
            out += &format!(", {what} lost");
        }
    }
    out
}
