//! Routes: a flight plan becomes the link's timeline. Profile key `route`
//! (in `[link]`: both directions follow the same geometry), e.g.
//! `route = { from = "LHR", to = "JFK", tech = "leo", time_scale = 60 }`,
//! or `aerolink route show LHR-JFK --tech leo` to see the timeline.
//!
//! The track ([`track`]) comes from `from`/`to` (airports of the built-in
//! table, [`airports`]; `cruise_kmh`, `altitude_m`, `taxi`) or from
//! `waypoints = [{ lat, lon, alt_m, at }, …]`. The technology ([`tech`]:
//! `geo`, `leo`, `atg`, `ldacs`) computes the one-way delay every `step`
//! of flight time and the outages (handovers, reconfigurations, no
//! service); the profile takes them as its delay trace and outage windows
//! (the rate and queue stay the profile's own keys). Where the technology
//! makes the loss depend on place (`atg` with `edge_loss`, `geo` with
//! `low_loss`) the route sets the loss too, as a trace with one rate per
//! `step` (the profile's own `loss` beside it is refused); with `atg`'s
//! `edge_rate` the rate falls from the profile's `rate` near a tower to it
//! at a cell's edge, one rate per `step`; `delay` beside a route may only add a
//! flight's varying queueing above the path's (`{ steps, min, mean }`,
//! drawn from the run's seed). Over `ldacs`
//! the cell handovers go to the profile's `handover` stage as its times
//! (Mobile IPv6 / NEMO as seed 002 has it), not as outages.
//!
//! Time: run time 0 is flight time `start`; one run second is
//! `time_scale` flight seconds (1 by default). Scaling keeps the order
//! and size of every delay and the length of every outage (those stay in
//! run time); it compresses the time between them: the delay changes
//! `time_scale` times faster (a congestion controller sees a satellite
//! move 60 times faster at 60), and LEO reconfigurations come every
//! `slot / time_scale`. After the flight's end the timeline starts over:
//! the delays and the outages of handovers and of gaps in service repeat
//! with the flight's length (LEO reconfigurations keep their own period,
//! so their phase shifts at each repeat unless the flight is a whole
//! number of slots).
pub mod airports;
pub mod earth;
pub mod leo;
pub mod parse;
pub mod tech;
pub mod track;

use crate::delay::BaseDelay;
use crate::loss::{LossModel, LossTrace};
use crate::outage::{OutageMode, OutageWindow};
use crate::profile::keys::RawKeys;
use crate::profile::{DirectionSpec, Loader, LossSpec, ProfileError, RateSpec};
use crate::rate::RateSeries;
use crate::registry::StageKind;
use crate::stage::{Stage, StageContext};
use crate::{Duration, Instant};
pub use parse::RouteSpec;
pub use tech::{Cause, EventKind, Tech, TechName, Timeline};

impl RouteSpec {
    /// The technology's timeline along the track, in flight time.
    pub fn timeline(&self) -> Timeline {
        match &self.tech {
            Tech::Geo(g) => tech::geo(&self.track, g, self.step_s, self.extra_ms),
            Tech::Leo(l) => tech::leo(&self.track, l, &self.sites, self.step_s, self.extra_ms),
            Tech::Atg(a) => tech::atg(&self.track, a, &self.sites, self.step_s, self.extra_ms),
            Tech::Ldacs(l) => tech::ldacs(&self.track, l, &self.sites, self.step_s, self.extra_ms),
        }
    }

    /// Flight seconds → run time.
    fn run_time(&self, flight_s: f64) -> Duration {
        Duration::from_secs_f64(((flight_s - self.start_s) / self.time_scale).max(0.0))
    }

    /// What a profile gets, in run time: the delay trace — samples from
    /// `start` on (a change at an event is a step, not a ramp); runs
    /// without service and each interruption as drop windows, LEO
    /// reconfigurations as one repeating window; L-DACS cell handovers as
    /// the handover stage's times.
    pub fn link(&self, tl: &Timeline) -> RouteLink {
        let first_i = ((self.start_s / tl.step_s).floor() as usize).min(tl.delay_ms.len().saturating_sub(1));
        let events: std::collections::HashSet<usize> = tl.events.iter().map(|e| (e.0 / tl.step_s).round() as usize).collect();
        let mut points: Vec<(Duration, Duration)> = Vec::new();
        let mut prev: Option<f64> = None;
        for i in first_i..tl.delay_ms.len() {
            let t = i as f64 * tl.step_s;
            // Without service nothing passes (an outage window); the trace
            // starts from the first known value and skips the gaps.
            let ms = match (tl.delay_ms[i], i == first_i) {
                (Some(ms), _) => ms,
                (None, true) => match tl.delay_ms.iter().flatten().next() {
                    Some(&ms) => ms,
                    None => continue,
                },
                (None, false) => continue,
            };
            let at = if i == first_i { Duration::ZERO } else { self.run_time(t) };
            if let (Some(p), true) = (prev, events.contains(&i)) {
                points.push((Duration(at.0.saturating_sub(1_000)), Duration::from_secs_f64(p / 1e3)));
            }
            points.push((at, Duration::from_secs_f64(ms / 1e3)));
            prev = Some(ms);
        }
        if points.is_empty() {
            points.push((Duration::ZERO, Duration::ZERO));
        }
        // The flight repeats from `start` once it is over: the trace with
        // the period of its last point (BaseDelay::Trace), held to the last
        // sample's time so a flight that ends without service keeps its
        // length, and every outage window with the same period.
        let end = self.run_time(tl.delay_ms.len().saturating_sub(1) as f64 * tl.step_s);
        if let Some(&(t, d)) = points.last() {
            if t < end && points.len() > 1 {
                points.push((end, d));
            }
        }
        let period = points.last().map(|p| p.0).filter(|p| p.0 > 0);
        let mut windows = Vec::new();
        // A drop window from flight time `start`, `secs` long in run time.
        let drop = |start: f64, secs: f64| OutageWindow { start: Instant(self.run_time(start).0), duration: Duration::from_secs_f64(secs), every: period, mode: OutageMode::Drop };
        // No service: from the first sample without it to the next with it.
        let n = tl.delay_ms.len();
        let mut i = 0;
        while i < n {
            if tl.delay_ms[i].is_some() {
                i += 1;
                continue;
            }
            let g = i;
            while i < n && tl.delay_ms[i].is_none() {
                i += 1;
            }
            let (s, e) = ((g as f64 * tl.step_s).max(self.start_s), i as f64 * tl.step_s);
            if e > s {
                windows.push(drop(s, (e - s) / self.time_scale));
            }
        }
        for (s, len, why) in &tl.outages {
            if *why == tech::Cause::Reconfiguration || *s < self.start_s {
                continue;
            }
            windows.push(drop(*s, *len));
        }
        if let Tech::Leo(l) = &self.tech {
            if l.glitch_s > 0.0 {
                let first = l.slot_from_s + ((self.start_s - l.slot_from_s) / l.slot_s).ceil().max(0.0) * l.slot_s;
                windows.push(OutageWindow {
                    start: Instant(self.run_time(first).0),
                    duration: Duration::from_secs_f64(l.glitch_s),
                    every: Some(Duration::from_secs_f64(l.slot_s / self.time_scale)),
                    mode: OutageMode::Drop,
                });
            }
        }
        windows.retain(|w| w.duration.0 > 0);
        // Cell handovers, from `start` on, repeated with the flight for a
        // day of run time at most.
        let once: Vec<Duration> = tl.events.iter().filter(|e| e.1 == EventKind::Interruption(Cause::CellHandover) && e.0 >= self.start_s).map(|e| self.run_time(e.0)).filter(|d| d.0 > 0).collect();
        let mut handovers = once.clone();
        if let (Some(p), false) = (period, once.is_empty()) {
            let day = Duration::from_secs(86_400).0;
            for k in 1..=(day / p.0).min(10_000 / once.len() as u64) {
                handovers.extend(once.iter().map(|d| Duration(d.0 + k * p.0)).filter(|d| d.0 < day));
            }
        }
        RouteLink { delay: BaseDelay::Trace(points), loss: self.loss_trace(tl), rate: self.rate_series(tl), outages: windows, handovers, once: once.len(), period }
    }

    /// The place-bound loss in run time: one rate per `step` of flight
    /// from `start` (the sample at or before it), as many as the delay
    /// trace's period holds, so that both repeat together; none when the
    /// technology gives none.
    fn loss_trace(&self, tl: &Timeline) -> Option<LossTrace> {
        if tl.loss.iter().all(|&p| p == 0.0) {
            return None;
        }
        Some(LossTrace { window: Duration::from_secs_f64(tl.step_s / self.time_scale), rates: self.per_step(tl, &tl.loss) })
    }

    /// The rate along the route in run time, as the loss ([`Self::loss_trace`]);
    /// none when it does not depend on place.
    fn rate_series(&self, tl: &Timeline) -> Option<RateSeries> {
        if tl.rate_bps.is_empty() {
            return None;
        }
        RateSeries::new(Duration::from_secs_f64(tl.step_s / self.time_scale), self.per_step(tl, &tl.rate_bps)).ok()
    }

    /// One value of `samples` per step of flight from `start` (the sample
    /// at or before it), as many as the delay trace's period holds.
    fn per_step(&self, tl: &Timeline, samples: &[f64]) -> Vec<f64> {
        let first_i = (self.start_s / tl.step_s).floor() as usize;
        let flown = (samples.len().saturating_sub(1) as f64 * tl.step_s - self.start_s).max(0.0);
        let windows = ((flown / tl.step_s).ceil() as usize).max(1);
        (0..windows).map(|k| samples[(first_i + k).min(samples.len() - 1)]).collect()
    }

    /// The rate at a cell's edge (ATG's `edge_rate`), if the route has one.
    pub fn edge_rate_bps(&self) -> Option<f64> {
        match &self.tech {
            Tech::Atg(a) => a.edge.rate_bps,
            _ => None,
        }
    }

    /// One line for `profiles show` and the profile's hash.
    pub fn describe(&self, tl: &Timeline) -> String {
        let served = tl.delay_ms.iter().flatten().count();
        let loss = match tl.loss.iter().fold((f64::MAX, 0f64), |(a, b), &p| (a.min(p), b.max(p))) {
            (_, 0.0) => String::new(),
            (lo, hi) => format!(", loss {:.1}–{:.1} % each way", 100.0 * lo, 100.0 * hi),
        };
        let (lo, hi) = tl.delay_ms.iter().flatten().fold((f64::MAX, 0f64), |(a, b), &d| (a.min(d), b.max(d)));
        format!(
            "{} over {}: {:.0} km, {} of flight from {} at ×{}; one-way {:.1}–{:.1} ms{loss}, in service {:.0} % of the time; {} events, {} interruptions; {}",
            self.track.label,
            self.tech.name(),
            self.track.length_km(),
            clock(self.track.duration()),
            clock(self.start_s),
            self.time_scale,
            if served > 0 { lo } else { 0.0 },
            hi,
            100.0 * served as f64 / tl.delay_ms.len().max(1) as f64,
            tl.events.len(),
            tl.outages.len(),
            self.params
        )
    }
}

/// What a route gives a profile's direction, in run time.
#[derive(Clone, Debug)]
pub struct RouteLink {
    pub delay: BaseDelay,
    /// Loss that depends on place (ATG's cell edge, GEO's low elevation),
    /// each direction.
    pub loss: Option<LossTrace>,
    /// The rate where it depends on place (ATG's `edge_rate`).
    pub rate: Option<RateSeries>,
    pub outages: Vec<OutageWindow>,
    /// When the `handover` stage hands over (L-DACS cells), increasing.
    pub handovers: Vec<Duration>,
    /// How many of them one flight has (the first ones), and the flight's
    /// length in run time, after which they repeat.
    pub once: usize,
    pub period: Option<Duration>,
}

/// The last few timelines computed, by the route's keys and the files they
/// read: both directions of a `[link]` route, and an experiment's runs of
/// one profile, compute it once (a LEO flight with laser links takes a
/// fraction of a second, an element set of thousands seconds).
static TIMELINES: std::sync::Mutex<Vec<(String, Timeline)>> = std::sync::Mutex::new(Vec::new());
const TIMELINES_KEPT: usize = 8;

fn cached_timeline(key: &str, spec: &RouteSpec) -> Timeline {
    if let Some(tl) = TIMELINES.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(k, _)| k == key).map(|(_, tl)| tl.clone()) {
        return tl;
    }
    let tl = spec.timeline();
    let mut kept = TIMELINES.lock().unwrap_or_else(|e| e.into_inner());
    if kept.len() >= TIMELINES_KEPT {
        kept.remove(0);
    }
    kept.push((key.to_string(), tl.clone()));
    tl
}

/// Flight time as h:mm:ss.
pub fn clock(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Routes in the stage registry: key `route`. Not a stage of its own: it
/// writes the delay (a trace), the loss and the rate where they depend on
/// place (a trace, a series) and outage windows the delay, loss and
/// bottleneck stages carry out; `delay` beside it may only add steps (the delay stage adds them),
/// `loss` beside a route that sets the loss is refused, `outages` beside
/// it add to its own.
pub struct Kind;

pub static KIND: Kind = Kind;

impl StageKind for Kind {
    fn name(&self) -> &'static str {
        "route"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["route"]
    }
    fn parse(&self, raw: &RawKeys, load: Loader<'_>, d: &mut DirectionSpec) -> Result<(), ProfileError> {
        let Some(r) = raw.get("route") else { return Ok(()) };
        if let Some(d) = raw.get("delay").filter(|d| !d.value.as_table().is_some_and(|t| t.contains_key("steps"))) {
            return Err(d.err(
                "route sets the delay along the route; beside it `delay` may only add a flight's varying queueing, { steps = \"10 s\", min = \"0 ms\", mean = \"200 ms\" }: remove it or write it so",
            ));
        }
        let t = r.value.as_table().ok_or_else(|| r.err("expected a table like { from = \"LHR\", to = \"JFK\", tech = \"geo\" }"))?;
        // What the route read (a TLE file) is part of what it computes.
        let mut read = String::new();
        let spec = RouteSpec::parse(t, &mut |p: &str| load(p).inspect(|text| read.push_str(text))).map_err(|m| r.err(m))?;
        let mut tl = cached_timeline(&format!("{t}\n{read}"), &spec);
        // The rate near a tower is the profile's; at the edge, the route's.
        if let Some(edge) = spec.edge_rate_bps() {
            let RateSpec::Constant(near) = &d.rate else {
                return Err(r.err("edge_rate needs `rate` beside the route, a constant rate: the rate near a tower"));
            };
            tl = tl.with_rates(near.bits_per_sec, Some(edge));
        }
        let link = spec.link(&tl);
        d.delay = link.delay;
        if let Some(trace) = link.loss {
            if let Some(l) = raw.get("loss") {
                return Err(l.err("route sets the loss along the route (edge_loss, low_loss): remove `loss` (or those)"));
            }
            d.described.insert("loss".into(), format!("along the route, per {} (mean {})", trace.window, crate::profile::describe::pct(trace.mean_loss())));
            d.loss = LossSpec::Trace { path: "route".into(), trace };
        }
        if let Some(series) = link.rate {
            let (lo, hi) = series.bps.iter().fold((f64::MAX, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
            let r = |b: f64| crate::units::Rate::from_bps(b).to_string();
            d.described.insert("rate".into(), format!("along the route, {}–{} per {} (mean {})", r(lo), r(hi), series.window, r(series.mean_bps())));
            d.rate = RateSpec::Series { what: "route".into(), series };
        }
        d.outages.extend(link.outages);
        d.described.insert("route".into(), spec.describe(&tl));
        // Over L-DACS the handover stage hands over where the route says
        // (its own keys, or seed 002's defaults); elsewhere it needs times
        // of its own.
        match (&spec.tech, d.handover.as_mut()) {
            (Tech::Ldacs(_), Some(h)) if !h.at.is_empty() => {
                return Err(r.err("tech = \"ldacs\" sets the handover times along the route: remove `at` or `mobility` from `handover` (keep its other keys)"));
            }
            (Tech::Ldacs(_), h) => {
                let h = h.map(std::mem::take).unwrap_or_default();
                let spec = crate::handover::HandoverSpec { at: link.handovers, ..h };
                d.described.insert("handover".into(), crate::handover::described(&spec));
                // To a person: one flight's handovers and how they repeat
                // (the hashed text lists a day's).
                if let (Some(p), true) = (link.period, spec.at.len() > link.once) {
                    let first: Vec<String> = spec.at[..link.once].iter().map(|d| d.to_string()).collect();
                    let at = format!("{}, then again every {} with the flight ({} in a day)", first.join(", "), clock(p.as_secs_f64()), spec.at.len());
                    d.shown.insert("handover".into(), crate::handover::described_at(&spec, &at));
                }
                d.handover = Some(spec);
            }
            (_, Some(h)) if h.at.is_empty() => {
                return Err(r.err(format!("handover needs `at` or `mobility`: a route sets its times only with tech = \"ldacs\", not {:?}", spec.tech.name())));
            }
            _ => {}
        }
        Ok(())
    }
    fn build(&self, _spec: &DirectionSpec, _ctx: &StageContext) -> Option<Box<dyn Stage>> {
        None
    }
}
