//! The `bonded` profile key: parsed into a [`BondedSpec`] and described.
//!
//! ```toml
//! bonded = { channels = [
//!   { name = "Ir-Ir 1", delay = "1550 ms", jitter = "normal 1270 ms", drop_every = "140 s" },
//!   { name = "Ir-POTS", delay = "600 ms", jitter = "normal 283 ms", drop_every = "156 min" },
//! ], rate = "2.4 kbit/s", redial = ["45 s", "50 s"], queue = "4 KB", start = "stationary" }
//! ```
//!
//! `channels = 3` is three channels alike, each taking `delay`, `jitter`
//! and `drop_every` from the outer table; in a list, a channel's own keys
//! win over the outer ones.

use super::{BondStart, Bonded, BondedSpec, ChannelSpec};
use crate::jitter::Jitter;
use crate::profile::keys::{only_keys, parse_jitter, table_str, Raw, RawKeys};
use crate::profile::{DirectionSpec, Loader, ProfileError};
use crate::registry::StageKind;
use crate::stage::{Stage, StageContext};
use crate::time::Duration;
use crate::units;

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
        let t = r.value.as_table().ok_or_else(|| {
            r.err("expected a table { channels = 3 or [{ name?, delay?, jitter?, drop_every? }, …], rate = \"2.4 kbit/s\", delay?, jitter?, drop_every?, redial?, marginal?, queue?, start? }")
        })?;
        only_keys(r, t, &["channels", "rate", "delay", "jitter", "drop_every", "redial", "marginal", "queue", "start"])?;
        let outer = channel(r, t, load, None)?;
        let channels = match t.get("channels") {
            Some(toml::Value::Integer(n)) if (1..=64).contains(n) => {
                let delay = outer.delay.ok_or_else(|| r.err("delay: expected `delay = \"600 ms\"` (each channel's one-way delay)"))?;
                vec![ChannelSpec { name: None, delay, jitter: outer.jitter.clone(), drop_every: outer.drop_every }; *n as usize]
            }
            Some(toml::Value::Array(a)) if (1..=64).contains(&a.len()) => a
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let ct = v.as_table().ok_or_else(|| r.err(format!("channels[{i}]: expected a table {{ name?, delay?, jitter?, drop_every? }}")))?;
                    let sub = Raw { value: v.clone(), origin: r.origin.clone(), key: format!("{}.channels[{i}]", r.key) };
                    only_keys(&sub, ct, &["name", "delay", "jitter", "drop_every"])?;
                    let own = channel(&sub, ct, load, Some(&outer))?;
                    let delay = own.delay.ok_or_else(|| sub.err("delay: expected `delay = \"600 ms\"` here or in the outer table"))?;
                    let name = match ct.get("name") {
                        None => None,
                        Some(toml::Value::String(s)) => Some(s.clone()),
                        Some(_) => return Err(sub.err("name: expected text in quotes")),
                    };
                    Ok(ChannelSpec { name, delay, jitter: own.jitter, drop_every: own.drop_every })
                })
                .collect::<Result<Vec<_>, ProfileError>>()?,
            _ => return Err(r.err("channels: expected a whole number from 1 to 64, or a list of 1 to 64 tables { name?, delay?, jitter?, drop_every? }")),
        };
        let rate_bps = units::parse_rate(&table_str(r, t, "rate", units::RATE_HELP)?).map_err(|m| r.err(format!("rate: expected {m}")))?.bits_per_sec;
        if rate_bps <= 0.0 {
            return Err(r.err("rate: expected more than 0"));
        }
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
        let start = match t.get("start") {
            None => BondStart::Up,
            Some(toml::Value::String(s)) if s == "up" => BondStart::Up,
            Some(toml::Value::String(s)) if s == "stationary" => BondStart::Stationary,
            Some(_) => return Err(r.err("start: expected \"up\" (every call connected at the start) or \"stationary\" (each call where a long run would find it)")),
        };
        let spec = BondedSpec { channels, rate_bps, redial, marginal, queue_bytes, start };
        d.described.insert("bonded".into(), describe(&spec));
        d.bonded = Some(spec);
        Ok(())
    }
    fn build(&self, spec: &DirectionSpec, ctx: &StageContext) -> Option<Box<dyn Stage>> {
        Some(Box::new(Bonded::new(spec.bonded.clone()?, ctx)))
    }
}

/// A channel's keys as written (in a list entry, or the outer defaults).
struct ChannelKeys {
    delay: Option<Duration>,
    jitter: Option<Jitter>,
    drop_every: Option<Duration>,
}

fn channel(r: &Raw, t: &toml::Table, load: Loader<'_>, outer: Option<&ChannelKeys>) -> Result<ChannelKeys, ProfileError> {
    let delay = if t.contains_key("delay") { Some(dur(r, t, "delay")?) } else { outer.and_then(|o| o.delay) };
    let jitter = match t.get("jitter") {
        None => outer.and_then(|o| o.jitter.clone()),
        Some(v) => parse_jitter(&Raw { value: v.clone(), origin: r.origin.clone(), key: format!("{}.jitter", r.key) }, load)?,
    };
    let drop_every = if t.contains_key("drop_every") { Some(dur(r, t, "drop_every")?).filter(|d| d.0 > 0) } else { outer.and_then(|o| o.drop_every) };
    Ok(ChannelKeys { delay, jitter, drop_every })
}

fn describe_channel(c: &ChannelSpec) -> String {
    format!(
        "{}{}{}, call drops {}",
        c.name.as_ref().map(|n| format!("{n}: ")).unwrap_or_default(),
        c.delay,
        c.jitter.as_ref().map(|j| format!(" ± {}", crate::profile::describe::describe_jitter(j))).unwrap_or_default(),
        c.drop_every.map(|e| format!("every {e} on average")).unwrap_or_else(|| "never".into()),
    )
}

fn describe(spec: &BondedSpec) -> String {
    let n = spec.channels.len();
    let alike = spec.channels.iter().all(|c| c.delay == spec.channels[0].delay && c.jitter == spec.channels[0].jitter && c.drop_every == spec.channels[0].drop_every && c.name.is_none());
    let chans = if alike {
        format!("{n} × {} at {}", units::Rate::from_bps(spec.rate_bps), describe_channel(&spec.channels[0]))
    } else {
        format!("{n} channels at {} each ({})", units::Rate::from_bps(spec.rate_bps), spec.channels.iter().map(describe_channel).collect::<Vec<_>>().join("; "))
    };
    format!(
        "{chans}, redial {}–{}{}; {} B queue each{}",
        spec.redial.0,
        spec.redial.1,
        spec.marginal.map(|(e, du, l)| format!(", marginal {du} every {e} losing {}", crate::profile::describe::pct(l))).unwrap_or_default(),
        spec.queue_bytes,
        if spec.start == BondStart::Stationary { "; calls start where a long run would find them" } else { "" }
    )
}
