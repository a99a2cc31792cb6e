//! The propagation stage: a one-way delay (constant or from a trace), plus
//! optional jitter. Profile keys: `delay`, `jitter`, `reorder`.
//!
//! A real link is a FIFO: by default a packet never overtakes the one before
//! it, so jitter stretches gaps instead of reordering (`due = max(arrival +
//! delay + jitter, previous due)`). Reordering happens only when asked.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

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
}

impl BaseDelay {
    pub fn at(&self, t: Instant) -> Duration {
        match self {
            BaseDelay::Constant(d) => *d,
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
        }
    }

    pub fn mean_hint(&self) -> Duration {
        match self {
            BaseDelay::Constant(d) => *d,
            BaseDelay::Trace(p) => Duration(p.iter().map(|x| x.1 .0).sum::<u64>() / p.len().max(1) as u64),
        }
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
            let parse = |s: &str| -> Result<Duration, String> {
                let v: f64 = s.parse().map_err(|_| format!("line {}: {s:?} is not a number of milliseconds", i + 1))?;
                if !v.is_finite() || v < 0.0 {
                    return Err(format!("line {}: milliseconds must be finite and not negative", i + 1));
                }
                Ok(Duration::from_secs_f64(v / 1e3))
            };
            let (ta, db) = (parse(a)?, parse(b)?);
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
                toml::Value::Table(t) => {
                    let path = table_str(r, t, "trace", "a delay trace file path")?;
                    only_keys(r, t, &["trace"])?;
                    let text = load(&path).map_err(|m| r.err(format!("cannot read trace {path:?}: {m}")))?;
                    let b = BaseDelay::parse_trace(&text).map_err(|m| r.err(format!("trace {path:?}: {m}")))?;
                    d.described.insert("delay_trace".into(), path);
                    b
                }
                _ => return Err(r.err(format!("expected {} in quotes, or {{ trace = \"file\" }}", units::DURATION_HELP))),
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
        Some(Box::new(DelayLine::new(spec.delay.clone(), spec.jitter.clone(), spec.reorder, ctx.rng(RNG_SLOT))))
    }
}

#[cfg(test)]
mod tests {
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
