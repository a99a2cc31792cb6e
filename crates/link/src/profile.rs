//! Link profiles: TOML with human units, per direction, turned into typed
//! specs once, at the edge.
//!
//! ```toml
//! name = "mss"
//! description = "In-flight Wi-Fi over a GEO satellite"
//! source = "seed 000 §6"
//! split = "how round-trip figures were split per direction"
//!
//! [link]                 # both directions (symmetric shorthand)
//! rate = "1.89 Mbit/s"
//! rtt = "761 ms"         # split evenly: delay = rtt / 2 each way
//! loss = "3.05%"
//!
//! [down]                 # ground → aircraft; overrides [link]
//! rate = "1.89 Mbit/s"
//! ```
//!
//! Every error names the origin (file or flag), the key and what is
//! allowed. Trace files are read through a loader the caller provides, so
//! this module never touches the file system itself.

use std::collections::BTreeMap;
use std::fmt;

use crate::delay::BaseDelay;
use crate::jitter::Jitter;
use crate::loss::{Bernoulli, GilbertElliott, LossModel, LossTrace};
use crate::outage::{OutageMode, OutageSchedule, OutageWindow};
use crate::queue::{DropTail, QueueLimit};
use crate::rate::{ConstantRate, MahimahiTrace, Server, Unlimited};
use crate::time::{Duration, Instant};
use crate::units::{self, Rate, Size};

/// A profile or flag value that cannot be used, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {key}: {message}")]
pub struct ProfileError {
    /// The file (or `command line`) the value came from.
    pub origin: String,
    /// The key, e.g. `down.rate` or `--up-loss`.
    pub key: String,
    /// What was wrong and what is allowed.
    pub message: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RateSpec {
    Unlimited,
    Constant(Rate),
    Trace { path: String, trace: MahimahiTrace },
}

#[derive(Clone, Debug, PartialEq)]
pub enum LossSpec {
    None,
    Bernoulli(f64),
    GilbertElliott { p: f64, r: f64, bad_loss: f64, good_loss: f64 },
    Trace { path: String, trace: LossTrace },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueSpec {
    /// Bandwidth × round-trip time, at least [`MIN_BDP_QUEUE_BYTES`].
    Bdp,
    Limit(QueueLimit),
}

/// The smallest queue a `bdp` default gives: four full-size packets, so a
/// very slow link (Iridium: 360 B of BDP) can still hold a packet or two.
pub const MIN_BDP_QUEUE_BYTES: u64 = 4 * 1500;

/// One direction, fully typed.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectionSpec {
    pub rate: RateSpec,
    pub overhead_bytes: u32,
    pub delay: BaseDelay,
    pub jitter: Option<Jitter>,
    pub reorder: bool,
    pub loss: LossSpec,
    pub queue: QueueSpec,
    pub outages: Vec<OutageWindow>,
    /// Each key as a person would write it, for `profiles show` and hashing.
    pub described: BTreeMap<String, String>,
}

impl Default for DirectionSpec {
    fn default() -> Self {
        DirectionSpec {
            rate: RateSpec::Unlimited,
            overhead_bytes: 0,
            delay: BaseDelay::Constant(Duration::ZERO),
            jitter: None,
            reorder: false,
            loss: LossSpec::None,
            queue: QueueSpec::Bdp,
            outages: Vec::new(),
            described: BTreeMap::new(),
        }
    }
}

impl DirectionSpec {
    pub fn capacity_bps(&self) -> Option<f64> {
        match &self.rate {
            RateSpec::Unlimited => None,
            RateSpec::Constant(r) => Some(r.bits_per_sec),
            RateSpec::Trace { trace, .. } => Some(trace.mean_bps()),
        }
    }
    pub fn build_server(&self) -> Box<dyn Server> {
        match &self.rate {
            RateSpec::Unlimited => Box::new(Unlimited),
            RateSpec::Constant(r) => Box::new(ConstantRate::new(r.bits_per_sec, self.overhead_bytes)),
            RateSpec::Trace { trace, .. } => {
                let mut t = trace.clone();
                t.set_overhead(self.overhead_bytes);
                Box::new(t)
            }
        }
    }
    /// The queue limit in force for a round-trip time of `rtt`.
    pub fn queue_limit(&self, rtt: Duration) -> QueueLimit {
        match self.queue {
            QueueSpec::Limit(l) => l,
            QueueSpec::Bdp => match self.capacity_bps() {
                None => QueueLimit::Unlimited,
                Some(bps) => {
                    let bdp = (bps * rtt.as_secs_f64() / 8.0).ceil() as u64;
                    QueueLimit::Bytes(bdp.max(MIN_BDP_QUEUE_BYTES))
                }
            },
        }
    }
    pub fn build_queue(&self, rtt: Duration) -> DropTail {
        DropTail::new(self.queue_limit(rtt))
    }
    pub fn build_loss(&self) -> Option<Box<dyn LossModel>> {
        match &self.loss {
            LossSpec::None | LossSpec::Bernoulli(0.0) => None,
            LossSpec::Bernoulli(p) => Some(Box::new(Bernoulli { p: *p })),
            LossSpec::GilbertElliott { p, r, bad_loss, good_loss } => {
                Some(Box::new(GilbertElliott::new(*p, *r, *bad_loss, *good_loss)))
            }
            LossSpec::Trace { trace, .. } => Some(Box::new(trace.clone())),
        }
    }
    pub fn build_outages(&self) -> OutageSchedule {
        OutageSchedule::new(self.outages.clone())
    }
    /// Mean loss probability of the configured model.
    pub fn mean_loss(&self) -> f64 {
        self.build_loss().map(|l| l.mean_loss()).unwrap_or(0.0)
    }
    pub fn mean_delay(&self) -> Duration {
        self.delay.mean_hint()
    }
}

/// A whole link: both directions plus what the numbers are based on.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// Which seed section (or public measurement) the numbers come from.
    pub source: String,
    /// How round-trip figures were split per direction.
    pub split: String,
    /// Aircraft → ground.
    pub up: DirectionSpec,
    /// Ground → aircraft.
    pub down: DirectionSpec,
}

impl Profile {
    /// Round-trip propagation delay (mean, without queueing or jitter).
    pub fn base_rtt(&self) -> Duration {
        self.up.mean_delay() + self.down.mean_delay()
    }
    /// A stable text that changes whenever the link would behave
    /// differently; hash it to identify a profile in stored results.
    pub fn canonical(&self) -> String {
        let mut s = String::new();
        for (dir, spec) in [("up", &self.up), ("down", &self.down)] {
            for (k, v) in &spec.described {
                s.push_str(&format!("{dir}.{k}={v}\n"));
            }
        }
        s
    }
}

/// A value that overrides one key, from a flag.
#[derive(Clone, Debug)]
pub struct Override {
    /// `link`, `up` or `down`.
    pub scope: String,
    /// `rate`, `rtt`, `delay`, `loss`, `jitter`, `queue`, `overhead`, `reorder`.
    pub key: String,
    pub value: String,
    /// The flag, for error messages (`--down-rate`).
    pub flag: String,
}

/// Reads a trace file named in a profile; relative paths are the caller's
/// business (usually relative to the profile's directory).
pub type Loader<'a> = &'a mut dyn FnMut(&str) -> Result<String, String>;

const DIRECTION_KEYS: &[&str] = &["rate", "overhead", "delay", "jitter", "reorder", "loss", "queue", "outages"];
const TOP_KEYS: &[&str] = &["name", "description", "source", "split", "link", "up", "down"];

struct Raw {
    value: toml::Value,
    origin: String,
    key: String,
}

impl Raw {
    fn err(&self, message: impl Into<String>) -> ProfileError {
        ProfileError { origin: self.origin.clone(), key: self.key.clone(), message: message.into() }
    }
    fn str(&self, what: &str) -> Result<&str, ProfileError> {
        self.value.as_str().ok_or_else(|| self.err(format!("expected {what} in quotes")))
    }
}

impl Profile {
    /// Parses a profile file. `origin` names it in errors; `overrides` are
    /// applied on top (flags beat the file; one-direction flags beat
    /// both-direction ones).
    pub fn parse(text: &str, origin: &str, overrides: &[Override], load: Loader<'_>) -> Result<Profile, ProfileError> {
        let perr = |key: &str, m: String| ProfileError { origin: origin.to_string(), key: key.to_string(), message: m };
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let msg = e.message().to_string();
            perr("(syntax)", format!("not valid TOML: {msg}"))
        })?;
        for k in table.keys() {
            if !TOP_KEYS.contains(&k.as_str()) {
                return Err(perr(k, format!("unknown key; allowed: {}", TOP_KEYS.join(", "))));
            }
        }
        let text_key = |k: &str| -> Result<String, ProfileError> {
            match table.get(k) {
                None => Ok(String::new()),
                Some(toml::Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(perr(k, "expected text in quotes".into())),
            }
        };
        let name = text_key("name")?;
        let mut p = Profile {
            name: if name.is_empty() { origin.to_string() } else { name },
            description: text_key("description")?,
            source: text_key("source")?,
            split: text_key("split")?,
            up: DirectionSpec::default(),
            down: DirectionSpec::default(),
        };
        let mut per_dir: [BTreeMap<String, Raw>; 2] = [BTreeMap::new(), BTreeMap::new()];
        for scope in ["link", "up", "down"] {
            let Some(v) = table.get(scope) else { continue };
            let t = v.as_table().ok_or_else(|| perr(scope, "expected a table like [link] with keys rate, delay, loss, …".into()))?;
            for (k, v) in t {
                add_raw(&mut per_dir, scope, k, v.clone(), origin, &format!("{scope}.{k}"))?;
            }
        }
        // Both-direction flags first, then one-direction flags on top.
        let mut ordered: Vec<&Override> = overrides.iter().filter(|o| o.scope == "link").collect();
        ordered.extend(overrides.iter().filter(|o| o.scope != "link"));
        for o in ordered {
            let value = if o.key == "reorder" {
                match o.value.as_str() {
                    "true" | "yes" | "on" => toml::Value::Boolean(true),
                    "false" | "no" | "off" => toml::Value::Boolean(false),
                    _ => return Err(ProfileError { origin: "command line".into(), key: o.flag.clone(), message: "expected true or false".into() }),
                }
            } else {
                toml::Value::String(o.value.clone())
            };
            add_raw(&mut per_dir, &o.scope, &o.key, value, "command line", &o.flag)?;
        }
        let [up_raw, down_raw] = per_dir;
        p.up = resolve_direction(up_raw, load)?;
        p.down = resolve_direction(down_raw, load)?;
        Ok(p)
    }

    /// A profile made from flags alone (no file).
    pub fn from_overrides(overrides: &[Override], load: Loader<'_>) -> Result<Profile, ProfileError> {
        let mut p = Profile::parse("name = \"custom\"\ndescription = \"link defined by command-line flags\"\n", "command line", overrides, load)?;
        p.source = "command-line flags".into();
        p.split = "--rtt splits evenly into one-way delays; both-direction flags apply to each direction".into();
        Ok(p)
    }
}

fn add_raw(per_dir: &mut [BTreeMap<String, Raw>; 2], scope: &str, key: &str, value: toml::Value, origin: &str, shown: &str) -> Result<(), ProfileError> {
    let err = |m: String| ProfileError { origin: origin.to_string(), key: shown.to_string(), message: m };
    let dirs: &[usize] = match scope {
        "link" => &[0, 1],
        "up" => &[0],
        "down" => &[1],
        _ => return Err(err("scope must be link, up or down".into())),
    };
    if key == "rtt" {
        if scope != "link" {
            return Err(err("rtt applies to both directions; in [up] or [down] give a one-way delay instead".into()));
        }
        let s = value.as_str().ok_or_else(|| err(format!("expected {} in quotes", units::DURATION_HELP)))?;
        let rtt = units::parse_duration(s).map_err(|m| err(format!("expected {m}")))?;
        let half = Duration(rtt.0 / 2);
        for &d in dirs {
            per_dir[d].insert("delay".into(), Raw { value: toml::Value::String(format!("{} ns", half.0)), origin: origin.into(), key: shown.into() });
        }
        return Ok(());
    }
    if !DIRECTION_KEYS.contains(&key) {
        let mut allowed = DIRECTION_KEYS.to_vec();
        if scope == "link" {
            allowed.push("rtt");
        }
        return Err(err(format!("unknown key; allowed: {}", allowed.join(", "))));
    }
    for &d in dirs {
        per_dir[d].insert(key.into(), Raw { value: value.clone(), origin: origin.into(), key: shown.into() });
    }
    Ok(())
}

fn resolve_direction(raw: BTreeMap<String, Raw>, load: Loader<'_>) -> Result<DirectionSpec, ProfileError> {
    let mut d = DirectionSpec::default();
    let mut described = BTreeMap::new();
    if let Some(r) = raw.get("overhead") {
        let s = r.str(units::SIZE_HELP)?;
        match units::parse_size(s).map_err(|m| r.err(format!("expected {m}")))? {
            Size::Bytes(b) if b <= 65_535 => d.overhead_bytes = b as u32,
            _ => return Err(r.err("expected a per-packet overhead in bytes, like \"8 B\" (at most 65535 B)")),
        }
        described.insert("overhead".into(), format!("{} B", d.overhead_bytes));
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
    described.insert(
        "rate".into(),
        match &d.rate {
            RateSpec::Unlimited => "unlimited".into(),
            RateSpec::Constant(rate) => rate.to_string(),
            RateSpec::Trace { path, trace } => format!("trace {path} (mean {})", Rate::from_bps(trace.mean_bps())),
        },
    );
    if let Some(r) = raw.get("delay") {
        d.delay = match &r.value {
            toml::Value::String(s) => BaseDelay::Constant(units::parse_duration(s).map_err(|m| r.err(format!("expected {m}")))?),
            toml::Value::Table(t) => {
                let path = table_str(r, t, "trace", "a delay trace file path")?;
                only_keys(r, t, &["trace"])?;
                let text = load(&path).map_err(|m| r.err(format!("cannot read trace {path:?}: {m}")))?;
                let b = BaseDelay::parse_trace(&text).map_err(|m| r.err(format!("trace {path:?}: {m}")))?;
                described.insert("delay_trace".into(), path);
                b
            }
            _ => return Err(r.err(format!("expected {} in quotes, or {{ trace = \"file\" }}", units::DURATION_HELP))),
        };
    }
    described.insert("delay".into(), d.delay.mean_hint().to_string());
    if let Some(r) = raw.get("jitter") {
        d.jitter = parse_jitter(r, load)?;
        if let Some(j) = &d.jitter {
            described.insert("jitter".into(), describe_jitter(j));
        }
    }
    if let Some(r) = raw.get("reorder") {
        d.reorder = r.value.as_bool().ok_or_else(|| r.err("expected true or false"))?;
    }
    if d.reorder {
        described.insert("reorder".into(), "true".into());
    }
    if let Some(r) = raw.get("loss") {
        d.loss = parse_loss(r, load)?;
    }
    match &d.loss {
        LossSpec::None => {}
        LossSpec::Bernoulli(p) => {
            described.insert("loss".into(), pct(*p));
        }
        LossSpec::GilbertElliott { p, r, bad_loss, good_loss } => {
            described.insert("loss".into(), format!("gilbert-elliott p={} r={} bad_loss={} good_loss={}", pct(*p), pct(*r), pct(*bad_loss), pct(*good_loss)));
        }
        LossSpec::Trace { path, trace } => {
            described.insert("loss".into(), format!("trace {path} per {} (mean {})", trace.window, pct(trace.mean_loss())));
        }
    }
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
    described.insert(
        "queue".into(),
        match d.queue {
            QueueSpec::Bdp => "bdp".into(),
            QueueSpec::Limit(QueueLimit::Bytes(b)) => format!("{b} B"),
            QueueSpec::Limit(QueueLimit::Packets(p)) => format!("{p} packets"),
            QueueSpec::Limit(QueueLimit::Unlimited) => "unlimited".into(),
        },
    );
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
        described.insert("outages".into(), txt.join("; "));
    }
    d.described = described;
    Ok(d)
}

fn pct(p: f64) -> String {
    format!("{}%", units::fmt_num(p * 100.0))
}

fn describe_jitter(j: &Jitter) -> String {
    match j {
        Jitter::Normal { sigma } => format!("normal sigma {sigma}"),
        Jitter::Uniform { spread } => format!("uniform ±{spread}"),
        Jitter::Pareto { scale, shape } => format!("pareto scale {scale} shape {shape}"),
        Jitter::Empirical { samples_ns } => format!("empirical ({} samples)", samples_ns.len()),
    }
}

fn table_str(r: &Raw, t: &toml::Table, key: &str, what: &str) -> Result<String, ProfileError> {
    match t.get(key) {
        Some(toml::Value::String(s)) => Ok(s.clone()),
        _ => Err(r.err(format!("expected `{key} = \"…\"`: {what}"))),
    }
}

fn only_keys(r: &Raw, t: &toml::Table, allowed: &[&str]) -> Result<(), ProfileError> {
    for k in t.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(r.err(format!("unknown key `{k}`; allowed here: {}", allowed.join(", "))));
        }
    }
    Ok(())
}

fn dur_in(r: &Raw, t: &toml::Table, key: &str) -> Result<Duration, ProfileError> {
    let s = table_str(r, t, key, units::DURATION_HELP)?;
    units::parse_duration(&s).map_err(|m| r.err(format!("{key}: expected {m}")))
}

fn prob_in(r: &Raw, t: &toml::Table, key: &str, default: Option<f64>) -> Result<f64, ProfileError> {
    match (t.get(key), default) {
        (None, Some(d)) => Ok(d),
        (Some(toml::Value::String(s)), _) => units::parse_probability(s).map_err(|m| r.err(format!("{key}: expected {m}"))),
        (Some(toml::Value::Float(f)), _) if (0.0..=1.0).contains(f) => Ok(*f),
        _ => Err(r.err(format!("{key}: expected {}", units::PROBABILITY_HELP))),
    }
}

const JITTER_HELP: &str = "\"none\", \"normal 5 ms\", \"uniform 5 ms\", or a table { dist = \"normal\" | \"uniform\" | \"pareto\" | \"empirical\", sigma | spread | scale + shape | file }";

fn parse_jitter(r: &Raw, load: Loader<'_>) -> Result<Option<Jitter>, ProfileError> {
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

const LOSS_HELP: &str = "a probability like \"3.3%\", or a table { model = \"bernoulli\", p } | { model = \"gilbert-elliott\", p, r, bad_loss, good_loss } | { trace = \"file\", window = \"100 s\" }";

fn parse_loss(r: &Raw, load: Loader<'_>) -> Result<LossSpec, ProfileError> {
    match &r.value {
        toml::Value::String(s) => {
            let p = units::parse_probability(s).map_err(|_| r.err(format!("expected {LOSS_HELP}")))?;
            Ok(if p == 0.0 { LossSpec::None } else { LossSpec::Bernoulli(p) })
        }
        toml::Value::Table(t) if t.contains_key("trace") => {
            only_keys(r, t, &["trace", "window"])?;
            let path = table_str(r, t, "trace", "a loss-rate file, one rate per line")?;
            let window = dur_in(r, t, "window")?;
            let text = load(&path).map_err(|m| r.err(format!("cannot read {path:?}: {m}")))?;
            let trace = LossTrace::parse(&text, window).map_err(|m| r.err(format!("trace {path:?}: {m}")))?;
            Ok(LossSpec::Trace { path, trace })
        }
        toml::Value::Table(t) => {
            let model = table_str(r, t, "model", "bernoulli or gilbert-elliott")?;
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
                _ => Err(r.err(format!("model: expected bernoulli or gilbert-elliott, got {model:?}"))),
            }
        }
        _ => Err(r.err(format!("expected {LOSS_HELP}"))),
    }
}

fn parse_outages(r: &Raw) -> Result<Vec<OutageWindow>, ProfileError> {
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

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} — {}", self.name, self.description)?;
        if !self.source.is_empty() {
            writeln!(f, "  source: {}", self.source)?;
        }
        if !self.split.is_empty() {
            writeln!(f, "  split:  {}", self.split)?;
        }
        let rtt = self.base_rtt();
        for (dir, label, spec) in [("up", "aircraft → ground", &self.up), ("down", "ground → aircraft", &self.down)] {
            writeln!(f, "  {dir} ({label}):")?;
            for (k, v) in &spec.described {
                writeln!(f, "    {k:<8} {v}")?;
            }
            if spec.queue == QueueSpec::Bdp {
                if let QueueLimit::Bytes(b) = spec.queue_limit(rtt) {
                    writeln!(f, "    (bdp queue at RTT {rtt}: {b} B)")?;
                }
            }
        }
        Ok(())
    }
}
