//! The propagation stage: a one-way delay (constant or from a trace), plus
//! optional jitter. Profile keys: `delay`, `jitter`, `reorder`.
//!
//! A real link is a FIFO: by default a packet never overtakes the one before
//! it, so jitter stretches gaps instead of reordering (`due = max(arrival +
//! delay + jitter, previous due)`). Reordering happens only when asked.

use std::cmp::Reverse;

use std::collections::{BinaryHeap, VecDeque};

use rand::Rng;

use crate::jitter::{Jitter, LinkRng};
use crate::packet::{Drop, Meta};
use crate::profile::describe::describe_jitter;
use crate::profile::keys::{only_keys, parse_jitter, table_str, RawKeys};
use crate::profile::{DirectionSpec, Loader, ProfileError};
use crate::registry::StageKind;
use crate::stage::{Stage, StageContext};
use crate::time::{Duration, Instant};
use crate::units;

/// A one-way delay that may vary with time.
#[derive(Clone, Debug, PartialEq)]
pub enum BaseDelay {
    Constant(Duration),
    /// Points `(time, delay)` linearly interpolated and repeated with the
    /// period of the last point's time (held if there is a single point).
    Trace(Vec<(Duration, Duration)>),
    /// A delay that jumps at reconfigurations — at `from`, then every
    /// `every` — to a value drawn uniformly from `[min, max]` (LEO
    /// constellations re-plan their paths on a global schedule; Starlink's
    /// is 15 s), or, with `mean`, from `min` plus an exponential of mean
    /// `mean − min` capped at `max` (a flight's queueing delay: mostly
    /// near the least, now and then far above it; seed 000's MSS flights
    /// had a least RTT of 536–682 ms and a mean of 730–1100 ms). The
    /// values come from the run's seed when the stage is built, the same
    /// for every direction and hop of a run, since the schedule is global;
    /// until then `values` is empty.
    Steps {
        from: Duration,
        every: Duration,
        min: Duration,
        max: Duration,
        mean: Option<Duration>,
        values: Vec<Duration>,
    },
    /// The sum of delays: a route's path (a trace) and a flight's queueing
    /// above it (steps).
    Sum(Vec<BaseDelay>),
}

/// How many reconfiguration intervals are drawn (a day of 15 s intervals);
/// the sequence repeats after that.
const STEP_VALUES: usize = 5760;

/// The RNG stream of the step values: one for the whole run.
const STEP_STREAM: u64 = u64::MAX - 1;

/// The largest delay a trace may give, ms (a day), and the latest time in
/// one (100 days).
const MAX_DELAY_MS: f64 = 86_400_000.0;
const MAX_TIME_MS: f64 = 100.0 * 86_400_000.0;

impl BaseDelay {
    /// The step delay's values drawn from the run's seed (other delays
    /// unchanged).
    pub fn resolved(&self, seed: u64) -> BaseDelay {
        match self {
            BaseDelay::Steps { from, every, min, max, mean, .. } => {
                let mut rng = crate::stage::stage_rng(seed, STEP_STREAM);
                let span = max.0.saturating_sub(min.0);
                let values = (0..STEP_VALUES)
                    .map(|_| match mean {
                        // −ln(U) × (mean − min), U in (0, 1], capped at max.
                        Some(m) => {
                            let u = 1.0 - rng.random::<f64>();
                            Duration(min.0 + ((-u.ln() * m.0.saturating_sub(min.0) as f64) as u64).min(span))
                        }
                        None => Duration(min.0 + if span == 0 { 0 } else { rng.random_range(0..=span) }),
                    })
                    .collect();
                BaseDelay::Steps { from: *from, every: *every, min: *min, max: *max, mean: *mean, values }
            }
            BaseDelay::Sum(parts) => BaseDelay::Sum(parts.iter().map(|p| p.resolved(seed)).collect()),
            other => other.clone(),
        }
    }

    /// Which reconfiguration interval `t` falls in: 0 before `from`, then
    /// 1, 2, …
    pub fn step_index(from: Duration, every: Duration, t: Instant) -> u64 {
        if t.0 < from.0 || every.0 == 0 {
            0
        } else {
            1 + (t.0 - from.0) / every.0
        }
    }

    pub fn at(&self, t: Instant) -> Duration {
        match self {
            BaseDelay::Constant(d) => *d,
            BaseDelay::Steps { from, every, min, values, .. } => {
                if values.is_empty() {
                    return *min;
                }
                values[(Self::step_index(*from, *every, t) % values.len() as u64) as usize]
            }
            BaseDelay::Trace(points) => {
                let period = points.last().map(|p| p.0 .0).unwrap_or(0);
                if points.len() == 1 || period == 0 {
                    return points[0].1;
                }
                let x = t.0 % period;
                let i = points.partition_point(|p| p.0 .0 <= x);
                if i == 0 {
                    return points[0].1;
                }
                let (t0, d0) = points[i - 1];
                let Some(&(t1, d1)) = points.get(i) else { return d0 };
                let f = (x - t0.0) as f64 / (t1.0 - t0.0).max(1) as f64;
                Duration((d0.0 as f64 + f * (d1.0 as f64 - d0.0 as f64)).round() as u64)
            }
            BaseDelay::Sum(parts) => Duration(parts.iter().map(|p| p.at(t).0).sum()),
        }
    }

    pub fn mean_hint(&self) -> Duration {
        match self {
            BaseDelay::Constant(d) => *d,
            BaseDelay::Steps { mean: Some(m), .. } => *m,
            BaseDelay::Steps { min, max, .. } => Duration((min.0 + max.0) / 2),
            BaseDelay::Trace(p) => Duration((p.iter().map(|x| x.1 .0 as u128).sum::<u128>() / p.len().max(1) as u128) as u64),
            BaseDelay::Sum(parts) => Duration(parts.iter().map(|p| p.mean_hint().0).sum()),
        }
    }

    /// Parses a series of one-way delays in ms, one per line, one every
    /// `every` (LeoReplayer's `delay_N.txt`: one per 10 ms).
    pub fn parse_series(text: &str, every: Duration) -> Result<Self, String> {
        let mut points = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let t = raw.split('#').next().unwrap_or("").trim();
            if t.is_empty() {
                continue;
            }
            let v: f64 = t.parse().map_err(|_| format!("line {}: {t:?} is not a number of milliseconds", i + 1))?;
            if !v.is_finite() || !(0.0..=MAX_DELAY_MS).contains(&v) {
                return Err(format!("line {}: milliseconds from 0 to {MAX_DELAY_MS} (a day)", i + 1));
            }
            points.push((Duration((points.len() as u64).saturating_mul(every.0)), Duration::from_secs_f64(v / 1e3)));
        }
        if points.is_empty() {
            return Err("the series has no values".into());
        }
        // One more point, a step after the last, so the series loops with
        // its full length.
        if let Some(&(t, _)) = points.last() {
            let first = points[0].1;
            points.push((t + every, first));
        }
        Ok(BaseDelay::Trace(points))
    }

    /// Parses a delay trace: lines `time_ms delay_ms`, time increasing from 0.
    pub fn parse_trace(text: &str) -> Result<Self, String> {
        let mut points: Vec<(Duration, Duration)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let t = raw.split('#').next().unwrap_or("").trim();
            if t.is_empty() {
                continue;
            }
            let mut cols = t.split(|c: char| c.is_whitespace() || c == ',').filter(|s| !s.is_empty());
            let (Some(a), Some(b), None) = (cols.next(), cols.next(), cols.next()) else {
                return Err(format!("line {}: expected two columns, time_ms delay_ms", i + 1));
            };
            let parse = |s: &str, max: f64| -> Result<Duration, String> {
                let v: f64 = s.parse().map_err(|_| format!("line {}: {s:?} is not a number of milliseconds", i + 1))?;
                if !v.is_finite() || !(0.0..=max).contains(&v) {
                    return Err(format!("line {}: milliseconds from 0 to {max}", i + 1));
                }
                Ok(Duration::from_secs_f64(v / 1e3))
            };
            let (ta, db) = (parse(a, MAX_TIME_MS)?, parse(b, MAX_DELAY_MS)?);
            if let Some(last) = points.last() {
                if ta <= last.0 {
                    return Err(format!("line {}: times must increase", i + 1));
                }
            }
            points.push((ta, db));
        }
        if points.is_empty() {
            return Err("the trace has no points".into());
        }
        Ok(BaseDelay::Trace(points))
    }
}

struct Due(Instant, u64, Meta);
impl PartialEq for Due {
    fn eq(&self, o: &Self) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Due {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.0, self.1).cmp(&(o.0, o.1))
    }
}

/// The propagation stage. A packet leaves it at its `due` time.
pub struct DelayLine {
    base: BaseDelay,
    jitter: Option<Jitter>,
    reorder: bool,
    rng: LinkRng,
    fifo: VecDeque<Meta>,
    heap: BinaryHeap<Reverse<Due>>,
    last_due: Instant,
}

impl DelayLine {
    pub fn new(base: BaseDelay, jitter: Option<Jitter>, reorder: bool, rng: LinkRng) -> Self {
        DelayLine { base, jitter, reorder, rng, fifo: VecDeque::new(), heap: BinaryHeap::new(), last_due: Instant::ZERO }
    }
}

impl Stage for DelayLine {
    fn name(&self) -> &'static str {
        "delay"
    }

    /// Starts propagating a packet whose transmission ended at `at`.
    fn enqueue(&mut self, at: Instant, mut pkt: Meta, _drops: &mut Vec<Drop>) {
        let mut d = self.base.at(at).0 as i64;
        if let Some(j) = &self.jitter {
            d = d.saturating_add(j.sample(&mut self.rng)).max(0);
        }
        let mut due = at + Duration(d as u64);
        if self.reorder {
            pkt.due = due;
            self.heap.push(Reverse(Due(due, pkt.id, pkt)));
        } else {
            due = due.max(self.last_due);
            self.last_due = due;
            pkt.due = due;
            self.fifo.push_back(pkt);
        }
    }

    fn next_wakeup(&self) -> Option<Instant> {
        if self.reorder {
            self.heap.peek().map(|r| r.0 .0)
        } else {
            self.fifo.front().map(|p| p.due)
        }
    }

    fn dequeue(&mut self, now: Instant, _drops: &mut Vec<Drop>) -> Option<Meta> {
        if self.next_wakeup()? > now {
            return None;
        }
        if self.reorder {
            self.heap.pop().map(|r| r.0 .2)
        } else {
            self.fifo.pop_front()
        }
    }

    /// Every packet gets exactly the base delay (no jitter), so a burst of
    /// segments can travel as one.
    fn is_aggregate_safe(&self) -> bool {
        self.jitter.is_none()
    }

    fn in_flight(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }
}

/// Propagation in the stage registry: keys `delay`, `jitter`, `reorder`.
/// Always present (a zero delay by default), so every pipeline ends here.
pub struct Kind;

pub static KIND: Kind = Kind;

/// The delay stage's RNG slot (jitter draws; see [`StageContext::rng`]).
pub const RNG_SLOT: u64 = 1;

impl StageKind for Kind {
    fn name(&self) -> &'static str {
        "delay"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["delay", "jitter", "reorder"]
    }
    fn rng_slot(&self) -> Option<u64> {
        Some(RNG_SLOT)
    }
    fn parse(&self, raw: &RawKeys, load: Loader<'_>, d: &mut DirectionSpec) -> Result<(), ProfileError> {
        if let Some(r) = raw.get("delay") {
            d.delay = match &r.value {
                toml::Value::String(s) => BaseDelay::Constant(units::parse_duration(s).map_err(|m| r.err(format!("expected {m}")))?),
                toml::Value::Table(t) if t.contains_key("steps") => {
                    only_keys(r, t, &["steps", "from", "min", "max", "mean"])?;
                    let dur = |k: &str| -> Result<Duration, ProfileError> {
                        let s = table_str(r, t, k, units::DURATION_HELP)?;
                        units::parse_duration(&s).map_err(|m| r.err(format!("{k}: expected {m}")))
                    };
                    let (every, min) = (dur("steps")?, dur("min")?);
                    let mean = if t.contains_key("mean") { Some(dur("mean")?) } else { None };
                    let max = match (t.contains_key("max"), mean) {
                        (true, _) => dur("max")?,
                        // Uncapped in effect: P(exponential > 10 means) = e⁻¹⁰.
                        (false, Some(m)) => Duration(min.0 + 10 * m.0.saturating_sub(min.0)),
                        (false, None) => return Err(r.err("steps: expected max (uniform from min to max) or mean (exponential above min)")),
                    };
                    let from = if t.contains_key("from") { dur("from")? } else { Duration::ZERO };
                    if every.0 == 0 || max < min || mean.is_some_and(|m| m < min || m > max) {
                        return Err(r.err("steps: expected an interval above 0 and min ≤ mean ≤ max"));
                    }
                    let dist = match mean {
                        Some(m) => format!("{min} + exponential of mean {} (capped at {max})", Duration(m.0 - min.0)),
                        None => format!("uniform {min}–{max}"),
                    };
                    let steps = BaseDelay::Steps { from, every, min, max, mean, values: Vec::new() };
                    if raw.contains_key("route") {
                        // Above the route's path (the route stage, earlier
                        // in the registry, set it).
                        d.described.insert("delay_steps".into(), format!("above the route's: {dist}, new every {every} from {from}"));
                        BaseDelay::Sum(vec![std::mem::replace(&mut d.delay, BaseDelay::Constant(Duration::ZERO)), steps])
                    } else {
                        d.described.insert("delay_steps".into(), format!("{dist}, new every {every} from {from}"));
                        steps
                    }
                }
                toml::Value::Table(t) => {
                    let path = table_str(r, t, "trace", "a delay trace file path")?;
                    only_keys(r, t, &["trace", "every"])?;
                    let text = load(&path).map_err(|m| r.err(format!("cannot read trace {path:?}: {m}")))?;
                    let b = match t.get("every") {
                        None => BaseDelay::parse_trace(&text),
                        Some(toml::Value::String(e)) => {
                            let every = units::parse_duration(e).map_err(|m| r.err(format!("every: expected {m}")))?;
                            if every.0 == 0 {
                                return Err(r.err("every: expected more than 0"));
                            }
                            BaseDelay::parse_series(&text, every)
                        }
                        Some(_) => return Err(r.err(format!("every: expected {} in quotes", units::DURATION_HELP))),
                    }
                    .map_err(|m| r.err(format!("trace {path:?}: {m}")))?;
                    d.described.insert("delay_trace".into(), path);
                    b
                }
                _ => return Err(r.err(format!("expected {} in quotes, {{ trace = \"file\", every? = \"10 ms\" }} or {{ steps = \"15 s\", from = \"12 s\", min, max | mean }}", units::DURATION_HELP))),
            };
        }
        d.described.insert("delay".into(), d.delay.mean_hint().to_string());
        if let Some(r) = raw.get("jitter") {
            d.jitter = parse_jitter(r, load)?;
            if let Some(j) = &d.jitter {
                d.described.insert("jitter".into(), describe_jitter(j));
            }
        }
        if let Some(r) = raw.get("reorder") {
            d.reorder = r.value.as_bool().ok_or_else(|| r.err("expected true or false"))?;
        }
        if d.reorder {
            d.described.insert("reorder".into(), "true".into());
        }
        Ok(())
    }
    fn build(&self, spec: &DirectionSpec, ctx: &StageContext) -> Option<Box<dyn Stage>> {
        Some(Box::new(DelayLine::new(spec.delay.resolved(ctx.seed), spec.jitter.clone(), spec.reorder, ctx.rng(RNG_SLOT))))
    }
}

#[cfg(test)]
mod tests {
    /// Found by the fuzzer (fuzz/regressions/traces/delay-series-huge-ms):
    /// a delay of 2.2e15 ms overflowed the mean delay and panicked.
    #[test]
    fn a_delay_past_a_day_is_an_error_not_a_panic() {
        let e = BaseDelay::parse_series("1\n1\n2222222222222424\n", Duration::from_millis(10)).unwrap_err();
        assert!(e.starts_with("line 3: "), "{e}");
        assert!(BaseDelay::parse_trace("0 10\n1e300 10\n").unwrap_err().starts_with("line 2: "));
        assert!(BaseDelay::parse_series("86400000\n", Duration::from_millis(10)).is_ok());
    }

    use super::*;

    #[test]
    fn trace_interpolates_and_loops() {
        let b = BaseDelay::parse_trace("0 100\n1000 200\n2000 100\n").unwrap();
        assert_eq!(b.at(Instant(0)), Duration::from_millis(100));
        assert_eq!(b.at(Instant(500_000_000)), Duration::from_millis(150));
        assert_eq!(b.at(Instant(1_000_000_000)), Duration::from_millis(200));
        assert_eq!(b.at(Instant(2_500_000_000)), Duration::from_millis(150));
        assert!(BaseDelay::parse_trace("0 1\n0 2\n").is_err());
        assert!(BaseDelay::parse_trace("0 x\n").is_err());
    }
}
