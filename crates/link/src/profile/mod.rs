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

pub mod describe;
pub mod foreign;
pub mod keys;

use std::collections::BTreeMap;

use crate::delay::BaseDelay;
use crate::jitter::{Jitter, LinkRng};
use crate::loss::{Bernoulli, GilbertElliott, LevelsSpec, LossLevels, LossModel, LossTrace};
use crate::outage::{OutageSchedule, OutageWindow};
use crate::queue::{DropTail, QueueLimit};
use crate::rate::{ConstantRate, MahimahiTrace, Server, Unlimited};
use crate::registry;
use crate::time::Duration;
use crate::units::{self, Rate};
use keys::{Raw, RawKeys};

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
    Trace {
        path: String,
        trace: MahimahiTrace,
    },
    /// One rate per window (a route's, along the flight).
    Series {
        what: String,
        series: crate::rate::RateSeries,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum LossSpec {
    None,
    Bernoulli(f64),
    GilbertElliott {
        p: f64,
        r: f64,
        bad_loss: f64,
        good_loss: f64,
    },
    Trace {
        path: String,
        trace: LossTrace,
    },
    /// A loss rate that changes with time, shared by the hop's directions.
    Levels(LevelsSpec),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueSpec {
    /// Bandwidth × round-trip time (at least [`MIN_BDP_QUEUE_RTT`]), at
    /// least [`MIN_BDP_QUEUE_PACKETS`] full-size packets.
    Bdp,
    Limit(QueueLimit),
}

/// The smallest queue a `bdp` default gives: ten full-size packets (of the
/// direction's `mtu`; 15 000 B at 1500), TCP's
/// initial window (RFC 6928), so a connection's first flight fits on a very
/// slow link. With four packets Iridium (2.4 kbit/s, 360 B of BDP) dropped
/// most of every first flight, and a flow waited for retransmission
/// time-outs at 1.2 s RTT: 0.75 of an unlimited queue's goodput
/// (`aerolink bench queue`). At 2.4 kbit/s this is 50 s of queue, which is
/// what seed 004 measured over Iridium: TCP messages 6.9 s late at 1 kbit/s
/// offered, 60 s at 8 kbit/s.
pub const MIN_BDP_QUEUE_PACKETS: u64 = 10;

/// A link's MTU when its profile gives none: Ethernet's.
pub const DEFAULT_MTU: u32 = 1500;
/// The smallest `mtu`: IPv6's minimum (RFC 8200), as every link of a lab
/// carries IPv6 (Linux takes IPv6 off a device with a smaller MTU).
pub const MIN_MTU: u32 = 1280;
/// The largest `mtu`: an IP packet's limit.
pub const MAX_MTU: u32 = 65_535;

/// The shortest round trip a `bdp` default is sized for. On a short path
/// (`--rtt 0ms`) the real round trip is the hosts' and the pump's, and
/// their bursts (offloaded 64 KB segments, a timer's worth of packets)
/// overflow a queue of one configured BDP: at 1.2 Gbit/s a 6000 B queue
/// gave TCP 0.31 of what an unlimited one gives (`aerolink bench queue`).
/// Links with RTT above this floor are unchanged.
pub const MIN_BDP_QUEUE_RTT: Duration = Duration::from_millis(20);

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
    /// L-DACS 1 medium access and ARQ (key `ldacs`), if the link is one.
    pub ldacs: Option<crate::ldacs::LdacsSpec>,
    /// DVB-RCS2 bandwidth on demand (key `dama`), on a GEO return link.
    pub dama: Option<crate::dama::DamaSpec>,
    /// Bonded channels that drop and redial (key `bonded`).
    pub bonded: Option<crate::bonded::BondedSpec>,
    /// Handovers under Mobile IPv6 / NEMO (key `handover`, in `[link]`).
    pub handover: Option<crate::handover::HandoverSpec>,
    /// A cap per passenger (key `per_user`).
    pub per_user: Option<crate::cabin::PerUserSpec>,
    /// How passengers share the link's queue (key `share`).
    pub share: crate::bottleneck::Share,
    /// The largest IP packet this direction carries (key `mtu`): the MTU
    /// of the sending host's device. `None`: [`DEFAULT_MTU`].
    pub mtu: Option<u32>,
    /// Each key as a person would write it, for `profiles show` and hashing.
    pub described: BTreeMap<String, String>,
    /// Shorter words for `profiles show` where a key's hashed text is long
    /// (a route's handover times: every one of a day), by key.
    pub shown: BTreeMap<String, String>,
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
            ldacs: None,
            dama: None,
            bonded: None,
            handover: None,
            per_user: None,
            share: crate::bottleneck::Share::Fifo,
            mtu: None,
            described: BTreeMap::new(),
            shown: BTreeMap::new(),
        }
    }
}

impl DirectionSpec {
    /// The largest IP packet this direction carries.
    pub fn mtu(&self) -> u32 {
        self.mtu.unwrap_or(DEFAULT_MTU)
    }

    /// The direction's capacity in bit/s: the lowest of the rate stage's,
    /// the L-DACS user rate and the DVB-RCS2 carrier; `None` when nothing
    /// limits it.
    pub fn capacity_bps(&self) -> Option<f64> {
        let rate = match &self.rate {
            RateSpec::Unlimited => None,
            RateSpec::Constant(r) => Some(r.bits_per_sec),
            RateSpec::Trace { trace, .. } => Some(trace.mean_bps()),
            RateSpec::Series { series, .. } => Some(series.mean_bps()),
        };
        let bond = self.bonded.as_ref().map(|b| b.rate_bps * b.channels.len() as f64);
        [rate, self.ldacs.as_ref().map(|l| l.rate_bps), self.dama.as_ref().map(|d| d.carrier_bps), bond].into_iter().flatten().reduce(f64::min)
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
            RateSpec::Series { series, .. } => {
                let mut s = series.clone();
                s.set_overhead(self.overhead_bytes);
                Box::new(s)
            }
        }
    }
    /// The queue limit in force for a round-trip time of `rtt`. Without a
    /// rate and without `hold` outages nothing waits in front of the
    /// link (a `dama`, `ldacs` or `bonded` stage queues in its own buffer),
    /// so no limit: a burst read in one round must not be cut there.
    pub fn queue_limit(&self, rtt: Duration) -> QueueLimit {
        if matches!(self.rate, RateSpec::Unlimited) && !self.outages.iter().any(|w| w.mode == crate::outage::OutageMode::Hold) {
            return QueueLimit::Unlimited;
        }
        match self.queue {
            QueueSpec::Limit(l) => l,
            QueueSpec::Bdp => match self.capacity_bps() {
                None => QueueLimit::Unlimited,
                Some(bps) => {
                    let bdp = (bps * rtt.max(MIN_BDP_QUEUE_RTT).as_secs_f64() / 8.0).ceil() as u64;
                    QueueLimit::Bytes(bdp.max(MIN_BDP_QUEUE_PACKETS * self.mtu() as u64))
                }
            },
        }
    }
    pub fn build_queue(&self, rtt: Duration) -> DropTail {
        DropTail::new(self.queue_limit(rtt))
    }
    /// The direction's loss model; `schedule` gives the hop's shared RNG
    /// (drawn only by models whose state both directions share).
    pub fn build_loss(&self, schedule: impl FnOnce() -> LinkRng) -> Option<Box<dyn LossModel>> {
        match &self.loss {
            LossSpec::None | LossSpec::Bernoulli(0.0) => None,
            LossSpec::Bernoulli(p) => Some(Box::new(Bernoulli { p: *p })),
            LossSpec::GilbertElliott { p, r, bad_loss, good_loss } => Some(Box::new(GilbertElliott::new(*p, *r, *bad_loss, *good_loss))),
            LossSpec::Trace { trace, .. } => Some(Box::new(trace.clone())),
            LossSpec::Levels(spec) => Some(Box::new(LossLevels::new(spec.clone(), schedule()))),
        }
    }
    pub fn build_outages(&self) -> OutageSchedule {
        OutageSchedule::new(self.outages.clone())
    }
    /// Mean loss probability of the configured model.
    pub fn mean_loss(&self) -> f64 {
        match &self.loss {
            LossSpec::None => 0.0,
            LossSpec::Bernoulli(p) => *p,
            LossSpec::GilbertElliott { p, r, bad_loss, good_loss } => GilbertElliott::new(*p, *r, *bad_loss, *good_loss).mean_loss(),
            LossSpec::Trace { trace, .. } => trace.mean_loss(),
            LossSpec::Levels(spec) => spec.mean_loss(),
        }
    }
    pub fn mean_delay(&self) -> Duration {
        self.delay.mean_hint() + self.bonded.as_ref().map(|b| b.mean_delay()).unwrap_or(Duration::ZERO)
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

const TOP_KEYS: &[&str] = &["name", "description", "source", "split", "link", "up", "down"];

impl Profile {
    /// Parses a profile file. `origin` names it in errors; `overrides` are
    /// applied on top (flags beat the file; one-direction flags beat
    /// both-direction ones).
    pub fn parse(text: &str, origin: &str, overrides: &[Override], load: Loader<'_>) -> Result<Profile, ProfileError> {
        let perr = |key: &str, m: String| ProfileError { origin: origin.to_string(), key: key.to_string(), message: m };
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let (at, msg) = crate::units::toml_syntax(text, &e);
            perr(&at, msg)
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
        let mut per_dir: [RawKeys; 2] = [RawKeys::new(), RawKeys::new()];
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
            } else if o.value.trim_start().starts_with('{') {
                // An inline table, as in a profile: `--down-rate '{ trace = "d.trace" }'`.
                let doc: toml::Table = format!("v = {}", o.value).parse().map_err(|e: toml::de::Error| ProfileError {
                    origin: "command line".into(),
                    key: o.flag.clone(),
                    message: format!("not an inline TOML table: {}", e.message()),
                })?;
                doc.get("v").cloned().unwrap_or(toml::Value::String(o.value.clone()))
            } else {
                toml::Value::String(o.value.clone())
            };
            // A route's keys change the profile's route, key by key (a
            // variant at another flight point or over another technology).
            let value = match (o.key.as_str(), value, per_dir[0].get("route").map(|r| &r.value)) {
                ("route", toml::Value::Table(new), Some(toml::Value::Table(old))) => {
                    let mut merged = old.clone();
                    merged.extend(new);
                    toml::Value::Table(merged)
                }
                (_, v, _) => v,
            };
            add_raw(&mut per_dir, &o.scope, &o.key, value, "command line", &o.flag)?;
        }
        let [up_raw, down_raw] = per_dir;
        p.up = registry::parse_direction(&up_raw, load)?;
        p.down = registry::parse_direction(&down_raw, load)?;
        // The ground → aircraft direction starts at the home agent.
        if let Some(h) = p.down.handover.as_mut() {
            h.side = crate::handover::Side::Home;
        }
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

fn add_raw(per_dir: &mut [RawKeys; 2], scope: &str, key: &str, value: toml::Value, origin: &str, shown: &str) -> Result<(), ProfileError> {
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
    let mut allowed = registry::direction_keys();
    if !allowed.contains(&key) {
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
