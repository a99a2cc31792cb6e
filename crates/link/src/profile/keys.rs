//! Reading one direction's keys: the value with its origin, and the parsers
//! shared by the stage kinds (probabilities, durations, jitter laws, loss
//! models, outage windows). Every error names the origin, the key and what
//! is allowed.

use crate::jitter::Jitter;
use crate::loss::{LevelsSpec, LossTrace};
use crate::outage::{OutageMode, OutageWindow};
use crate::profile::{Loader, LossSpec, ProfileError};
use crate::time::{Duration, Instant};
use crate::units;

/// One direction key's value as written, with where it came from (a file
/// or a flag), for errors that name both.
#[derive(Clone, Debug)]
pub struct Raw {
    pub value: toml::Value,
    pub origin: String,
    /// The key as the user wrote it: `down.rate`, `link.loss`, `--up-loss`.
    pub key: String,
}

/// The keys given for one direction, by key name (`rate`, `loss`, …).
pub type RawKeys = std::collections::BTreeMap<String, Raw>;

impl Raw {
    /// An error about this key.
    pub fn err(&self, message: impl Into<String>) -> ProfileError {
        ProfileError { origin: self.origin.clone(), key: self.key.clone(), message: message.into() }
    }
    /// The value as text in quotes, or an error saying `what` was expected.
    pub fn str(&self, what: &str) -> Result<&str, ProfileError> {
        self.value.as_str().ok_or_else(|| self.err(format!("expected {what} in quotes")))
    }
}

/// A TOML number, integer or float, as `f64` (finite only).
pub fn number(v: &toml::Value) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|n| n as f64)).filter(|x| x.is_finite())
}

/// A stage's table (`dama = { … }`) read key by key: each reader returns
/// the value or its default, and every error names the origin, the key and
/// what is allowed.
#[derive(Debug)]
pub(crate) struct Table<'a> {
    pub r: &'a Raw,
    pub t: &'a toml::Table,
}

impl<'a> Table<'a> {
    /// The table of `r` with only `allowed` keys; `help` says its shape.
    pub fn of(r: &'a Raw, help: &str, allowed: &[&str]) -> Result<Table<'a>, ProfileError> {
        let t = r.value.as_table().ok_or_else(|| r.err(format!("expected {help}")))?;
        only_keys(r, t, allowed)?;
        Ok(Table { r, t })
    }

    /// The text of `k`, `None` when absent; `what` is what it should say.
    fn text(&self, k: &str, what: &str) -> Result<Option<&'a str>, ProfileError> {
        match self.t.get(k) {
            None => Ok(None),
            Some(v) => v.as_str().map(Some).ok_or_else(|| self.r.err(format!("{k}: expected {what} in quotes"))),
        }
    }

    pub fn duration(&self, k: &str) -> Result<Option<Duration>, ProfileError> {
        self.text(k, units::DURATION_HELP)?.map(|s| units::parse_duration(s).map_err(|m| self.r.err(format!("{k}: expected {m}")))).transpose()
    }

    /// A rate, bits per second.
    pub fn rate(&self, k: &str) -> Result<Option<f64>, ProfileError> {
        self.text(k, units::RATE_HELP)?.map(|s| units::parse_rate(s).map(|r| r.bits_per_sec).map_err(|m| self.r.err(format!("{k}: expected {m}")))).transpose()
    }

    /// A size in bytes (not packets), at least `min`.
    pub fn bytes(&self, k: &str, default: u64, min: u64) -> Result<u64, ProfileError> {
        let Some(s) = self.text(k, units::SIZE_HELP)? else { return Ok(default) };
        match units::parse_size(s).map_err(|m| self.r.err(format!("{k}: expected {m}")))? {
            units::Size::Bytes(b) if b >= min => Ok(b),
            units::Size::Bytes(_) => Err(self.r.err(format!("{k}: expected bytes, at least \"{min} B\""))),
            units::Size::Packets(_) => Err(self.r.err(format!("{k}: expected bytes, like \"64 KB\""))),
        }
    }

    /// A whole number from `lo` to `hi`; `what` names it ("a whole number
    /// of super-frames").
    pub fn whole(&self, k: &str, default: u64, lo: i64, hi: i64, what: &str) -> Result<u64, ProfileError> {
        match self.t.get(k) {
            None => Ok(default),
            Some(toml::Value::Integer(n)) if (lo..=hi).contains(n) => Ok(*n as u64),
            Some(_) => Err(self.r.err(format!("{k}: expected {what} from {lo} to {hi}"))),
        }
    }

    pub fn flag(&self, k: &str, default: bool) -> Result<bool, ProfileError> {
        match self.t.get(k) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| self.r.err(format!("{k}: expected true or false"))),
        }
    }
}

pub(crate) fn table_str(r: &Raw, t: &toml::Table, key: &str, what: &str) -> Result<String, ProfileError> {
    match t.get(key) {
        Some(toml::Value::String(s)) => Ok(s.clone()),
        _ => Err(r.err(format!("expected `{key} = \"…\"`: {what}"))),
    }
}

pub(crate) fn only_keys(r: &Raw, t: &toml::Table, allowed: &[&str]) -> Result<(), ProfileError> {
    for k in t.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(r.err(format!("unknown key `{k}`; allowed here: {}", allowed.join(", "))));
        }
    }
    Ok(())
}

pub(crate) fn dur_in(r: &Raw, t: &toml::Table, key: &str) -> Result<Duration, ProfileError> {
    let s = table_str(r, t, key, units::DURATION_HELP)?;
    units::parse_duration(&s).map_err(|m| r.err(format!("{key}: expected {m}")))
}

pub(crate) fn prob_in(r: &Raw, t: &toml::Table, key: &str, default: Option<f64>) -> Result<f64, ProfileError> {
    match (t.get(key), default) {
        (None, Some(d)) => Ok(d),
        (Some(toml::Value::String(s)), _) => units::parse_probability(s).map_err(|m| r.err(format!("{key}: expected {m}"))),
        (Some(toml::Value::Float(f)), _) if (0.0..=1.0).contains(f) => Ok(*f),
        _ => Err(r.err(format!("{key}: expected {}", units::PROBABILITY_HELP))),
    }
}

pub(crate) const JITTER_HELP: &str = "\"none\", \"normal 5 ms\", \"uniform 5 ms\", or a table { dist = \"normal\" | \"uniform\" | \"pareto\" | \"empirical\", sigma | spread | scale + shape | file }";

pub(crate) fn parse_jitter(r: &Raw, load: Loader<'_>) -> Result<Option<Jitter>, ProfileError> {
    match &r.value {
        toml::Value::String(s) => {
            let s = s.trim();
            if s == "none" || s == "0" {
                return Ok(None);
            }
            let (dist, rest) = s.split_once(' ').ok_or_else(|| r.err(format!("expected {JITTER_HELP}")))?;
            let d = units::parse_duration(rest).map_err(|m| r.err(format!("expected {m} after {dist:?}")))?;
            match dist {
                "normal" => Ok(Some(Jitter::Normal { sigma: d })),
                "uniform" => Ok(Some(Jitter::Uniform { spread: d })),
                _ => Err(r.err(format!("expected {JITTER_HELP}"))),
            }
        }
        toml::Value::Table(t) => {
            let dist = table_str(r, t, "dist", "normal, uniform, pareto or empirical")?;
            match dist.as_str() {
                "normal" => {
                    only_keys(r, t, &["dist", "sigma"])?;
                    Ok(Some(Jitter::Normal { sigma: dur_in(r, t, "sigma")? }))
                }
                "uniform" => {
                    only_keys(r, t, &["dist", "spread"])?;
                    Ok(Some(Jitter::Uniform { spread: dur_in(r, t, "spread")? }))
                }
                "pareto" => {
                    only_keys(r, t, &["dist", "scale", "shape"])?;
                    let shape = match t.get("shape") {
                        Some(toml::Value::Float(f)) if *f > 0.0 => *f,
                        Some(toml::Value::Integer(i)) if *i > 0 => *i as f64,
                        _ => return Err(r.err("shape: expected a positive number, like 1.5")),
                    };
                    Ok(Some(Jitter::Pareto { scale: dur_in(r, t, "scale")?, shape }))
                }
                "empirical" => {
                    only_keys(r, t, &["dist", "file"])?;
                    let path = table_str(r, t, "file", "a file of extra delays in ms, one per line")?;
                    let text = load(&path).map_err(|m| r.err(format!("cannot read {path:?}: {m}")))?;
                    Jitter::parse_empirical(&text).map(Some).map_err(|m| r.err(format!("{path:?}: {m}")))
                }
                _ => Err(r.err(format!("dist: expected normal, uniform, pareto or empirical, got {dist:?}"))),
            }
        }
        _ => Err(r.err(format!("expected {JITTER_HELP}"))),
    }
}

pub(crate) const LOSS_HELP: &str = "a probability like \"3.3%\", netem's \"gemodel p r 1-h 1-k\", or a table { model = \"bernoulli\", p } | { model = \"gilbert-elliott\", p, r, bad_loss, good_loss } | { model = \"levels\", rates = [\"0%\", \"20%\"], weights = [3, 1], hold = \"100 s\" } | { trace = \"file\", window = \"100 s\" }";

pub(crate) fn parse_loss(r: &Raw, load: Loader<'_>) -> Result<LossSpec, ProfileError> {
    match &r.value {
        toml::Value::String(s) => {
            let mut words = s.split_whitespace();
            match words.next() {
                // netem's words: `gemodel p [r [1-h [1-k]]]`, `random p`.
                Some("gemodel" | "gilbert-elliott") => {
                    let ps = words.map(units::parse_probability).collect::<Result<Vec<f64>, String>>().map_err(|m| r.err(format!("gemodel: expected {m}")))?;
                    if ps.is_empty() || ps.len() > 4 {
                        return Err(r.err("gemodel: expected p [r [1-h [1-k]]], like \"gemodel 1% 10% 70% 0.1%\""));
                    }
                    let p = ps[0];
                    let rr = ps.get(1).copied().unwrap_or(1.0 - p);
                    if p + rr == 0.0 {
                        return Err(r.err("p and r cannot both be 0"));
                    }
                    Ok(LossSpec::GilbertElliott { p, r: rr, bad_loss: ps.get(2).copied().unwrap_or(1.0), good_loss: ps.get(3).copied().unwrap_or(0.0) })
                }
                first => {
                    let text = if first == Some("random") { s.trim_start().trim_start_matches("random").trim() } else { s.as_str() };
                    let p = units::parse_probability(text).map_err(|_| r.err(format!("expected {LOSS_HELP}")))?;
                    Ok(if p == 0.0 { LossSpec::None } else { LossSpec::Bernoulli(p) })
                }
            }
        }
        toml::Value::Table(t) if t.contains_key("trace") => {
            only_keys(r, t, &["trace", "window"])?;
            let path = table_str(r, t, "trace", "a loss-rate file, one rate per line")?;
            let window = dur_in(r, t, "window")?;
            let text = load(&path).map_err(|m| r.err(format!("cannot read {path:?}: {m}")))?;
            let trace = LossTrace::parse(&text, window).map_err(|m| r.err(format!("trace {path:?}: {m}")))?;
            Ok(LossSpec::Trace { path, trace })
        }
        toml::Value::Table(t) if t.get("model").and_then(|m| m.as_str()) == Some("levels") => parse_levels(r, t),
        toml::Value::Table(t) => {
            let model = table_str(r, t, "model", "bernoulli, gilbert-elliott or levels")?;
            match model.as_str() {
                "bernoulli" => {
                    only_keys(r, t, &["model", "p"])?;
                    Ok(LossSpec::Bernoulli(prob_in(r, t, "p", None)?))
                }
                "gilbert-elliott" | "gemodel" => {
                    only_keys(r, t, &["model", "p", "r", "bad_loss", "good_loss"])?;
                    let p = prob_in(r, t, "p", None)?;
                    let rr = prob_in(r, t, "r", Some(1.0 - p))?;
                    let bad_loss = prob_in(r, t, "bad_loss", Some(1.0))?;
                    let good_loss = prob_in(r, t, "good_loss", Some(0.0))?;
                    if p + rr == 0.0 {
                        return Err(r.err("p and r cannot both be 0"));
                    }
                    Ok(LossSpec::GilbertElliott { p, r: rr, bad_loss, good_loss })
                }
                _ => Err(r.err(format!("model: expected bernoulli, gilbert-elliott or levels, got {model:?}"))),
            }
        }
        _ => Err(r.err(format!("expected {LOSS_HELP}"))),
    }
}

/// `{ model = "levels", rates = ["0%", "20%"], weights = [3, 1], hold =
/// "100 s" }`: a loss rate that holds for an exponential time of mean
/// `hold`, then the next is drawn by weight (weights default to equal).
fn parse_levels(r: &Raw, t: &toml::Table) -> Result<LossSpec, ProfileError> {
    only_keys(r, t, &["model", "rates", "weights", "hold"])?;
    let rates: Vec<f64> = match t.get("rates") {
        Some(toml::Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                toml::Value::String(s) => units::parse_probability(s).map_err(|m| r.err(format!("rates: expected {m}"))),
                _ => Err(r.err("rates: expected loss rates in quotes, like [\"0%\", \"7%\", \"40%\"]")),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(r.err("rates: expected a list of loss rates, like [\"0%\", \"7%\", \"40%\"]")),
    };
    let weights: Vec<f64> = match t.get("weights") {
        None => vec![1.0; rates.len()],
        Some(toml::Value::Array(a)) => {
            a.iter().map(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)).ok_or_else(|| r.err("weights: expected numbers, like [3, 1]"))).collect::<Result<_, _>>()?
        }
        Some(_) => return Err(r.err("weights: expected a list of numbers, one per rate, like [3, 1]")),
    };
    if weights.len() != rates.len() {
        return Err(r.err(format!("weights: expected one per rate ({}), got {}", rates.len(), weights.len())));
    }
    let hold = dur_in(r, t, "hold")?;
    let spec = LevelsSpec::new(rates.into_iter().zip(weights).collect(), hold).map_err(|m| r.err(format!("levels: {m}")))?;
    Ok(LossSpec::Levels(spec))
}

pub(crate) fn parse_outages(r: &Raw) -> Result<Vec<OutageWindow>, ProfileError> {
    let arr = r.value.as_array().ok_or_else(|| r.err("expected a list like [{ start = \"10 s\", duration = \"30 s\", mode = \"hold\" }]"))?;
    let mut out = Vec::new();
    for (i, v) in arr.iter().enumerate() {
        let t = v.as_table().ok_or_else(|| r.err(format!("entry {}: expected {{ start, duration, mode, every? }}", i + 1)))?;
        only_keys(r, t, &["start", "duration", "every", "mode"])?;
        let mode = match t.get("mode").and_then(|m| m.as_str()).unwrap_or("drop") {
            "drop" => OutageMode::Drop,
            "hold" => OutageMode::Hold,
            other => return Err(r.err(format!("entry {}: mode: expected \"drop\" or \"hold\", got {other:?}", i + 1))),
        };
        let start = dur_in(r, t, "start")?;
        let duration = dur_in(r, t, "duration")?;
        let every = if t.contains_key("every") { Some(dur_in(r, t, "every")?) } else { None };
        if let Some(e) = every {
            if e <= duration {
                return Err(r.err(format!("entry {}: every must be longer than duration", i + 1)));
            }
        }
        out.push(OutageWindow { start: Instant(start.0), duration, every, mode });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each reader gives the value, its default when the key is absent, or
    /// an error naming the key and what it allows.
    #[test]
    fn a_stage_table_is_read_key_by_key_with_defaults_and_named_errors() {
        let raw = |text: &str| Raw { value: toml::Value::Table(text.parse().unwrap()), origin: "p.toml".into(), key: "up.x".into() };
        let r = raw("buffer = \"2 KB\"\nloop = \"5 ms\"\nrate = \"1 Mbit/s\"\nn = 7\non = true");
        let t = Table::of(&r, "a table", &["buffer", "loop", "rate", "n", "on"]).unwrap();
        assert_eq!((t.bytes("buffer", 1, 0).unwrap(), t.bytes("none", 9, 0).unwrap()), (2000, 9));
        assert_eq!(t.duration("loop").unwrap(), Some(Duration::from_millis(5)));
        assert_eq!((t.rate("rate").unwrap(), t.rate("none").unwrap()), (Some(1e6), None));
        assert_eq!((t.whole("n", 1, 0, 10, "a count").unwrap(), t.flag("on", false).unwrap(), t.flag("off", true).unwrap()), (7, true, true));
        let e = |x: Result<u64, ProfileError>| x.unwrap_err().to_string();
        assert!(e(t.whole("n", 1, 0, 5, "a count")).contains("n: expected a count from 0 to 5"));
        assert!(e(t.bytes("buffer", 1, 4000)).contains("buffer: expected bytes, at least \"4000 B\""));
        let bad = raw("n = \"7\"\nzz = 1");
        assert!(Table::of(&bad, "a table", &["n"]).unwrap_err().to_string().contains("unknown key `zz`; allowed here: n"));
        let t = Table::of(&bad, "a table", &["n", "zz"]).unwrap();
        assert!(t.duration("n").unwrap_err().to_string().contains("n: expected"));
        assert!(e(t.bytes("zz", 0, 0)).contains("zz: expected"));
    }
}
