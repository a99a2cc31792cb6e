//! A flight's probe log (`aerolink probe run`) analysed the way seed 000
//! analysed its flights, and a link profile fitted from it.
//!
//! [`analyze`]: RTT distribution and CDF, a technology guess from the
//! minimum RTT, loss per 100 s window, loss per direction, outages,
//! throughput, page loads, DNS answers faster than the minimum RTT (a cache
//! aboard), proxy and cache headers, and where the path leaves the aircraft
//! (traceroute). [`render`] draws it as one HTML page in the report's style.
//! [`fit`] writes a profile TOML that `aerolink run --profile` replays.

use std::collections::{BTreeMap, HashMap};

use crate::probe::record::{Measurement, Record};
use serde::Serialize;

/// A stretch of the flight analysed on its own, seconds from its start.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phase {
    pub name: String,
    pub from_s: f64,
    pub to_s: Option<f64>,
}

impl Phase {
    /// `NAME=FROM..TO` with durations (`climb=0s..20min`, `cruise=20min..`).
    pub fn parse(s: &str) -> Result<Phase, String> {
        let help = || format!("{s:?}: expected NAME=FROM..TO like climb=0s..20min or cruise=20min..");
        let (name, range) = s.split_once('=').ok_or_else(help)?;
        let (from, to) = range.split_once("..").ok_or_else(help)?;
        let d = |x: &str| aerolink_link::units::parse_duration(x.trim()).map(|d| d.as_secs_f64()).map_err(|m| format!("{s:?}: {m}"));
        let from_s = if from.trim().is_empty() { 0.0 } else { d(from)? };
        let to_s = if to.trim().is_empty() { None } else { Some(d(to)?) };
        if name.trim().is_empty() || to_s.is_some_and(|t| t <= from_s) {
            return Err(help());
        }
        Ok(Phase { name: name.trim().to_string(), from_s, to_s })
    }

    fn contains(&self, rel_s: f64) -> bool {
        rel_s >= self.from_s && self.to_s.is_none_or(|t| rel_s < t)
    }
}

/// How the log is cut up.
#[derive(Clone, Debug)]
pub struct Options {
    /// Loss is reported per window of this length (seed 000: 100 s).
    pub loss_window_s: f64,
    /// Lost probes spanning at least this long are an outage.
    pub outage_min_s: f64,
    /// Phases; none means the whole flight.
    pub phases: Vec<Phase>,
}

impl Default for Options {
    fn default() -> Self {
        Options { loss_window_s: 100.0, outage_min_s: 10.0, phases: Vec::new() }
    }
}

/// A distribution in brief.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Dist {
    pub n: usize,
    pub min: f64,
    pub p5: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub max: f64,
    pub mean: f64,
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

impl Dist {
    pub fn of(values: &[f64]) -> Option<Dist> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let q = |p| quantile(&v, p);
        Some(Dist { n: v.len(), min: v[0], p5: q(0.05), p25: q(0.25), median: q(0.5), p75: q(0.75), p90: q(0.9), p95: q(0.95), max: v[v.len() - 1], mean: v.iter().sum::<f64>() / v.len() as f64 })
    }
}

/// One UDP probe with what became of it.
#[derive(Clone, Debug)]
pub struct Probe {
    pub t: f64,
    pub session: u64,
    pub seq: u64,
    pub rtt_ms: Option<f64>,
    pub up_ms: Option<f64>,
    pub down_ms: Option<f64>,
    /// Whether the request reached the reflector: known for every answered
    /// probe, and for a lost one when a later reply's bitmap covers it.
    pub up_arrived: Option<bool>,
}

/// The log's probes in order, each lost one classified by direction from
/// later replies (lost going up, or its reply lost coming down).
pub fn probes(records: &[Record]) -> Vec<Probe> {
    let mut out: Vec<Probe> = Vec::new();
    // Per session: (rx_max, bitmap) of every reply, by rx_max.
    let mut windows: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
    for r in records {
        if let Measurement::Udp(u) = &r.m {
            if let (Some(max), Some(bits)) = (u.rx_max, u.rx_bitmap) {
                windows.entry(u.session).or_default().push((max, bits));
            }
            out.push(Probe { t: r.t, session: u.session, seq: u.seq, rtt_ms: u.rtt_ms, up_ms: u.up_ms, down_ms: u.down_ms, up_arrived: u.rtt_ms.map(|_| true).or(u.up_arrived) });
        }
    }
    for w in windows.values_mut() {
        w.sort();
    }
    for p in out.iter_mut().filter(|p| p.up_arrived.is_none()) {
        let Some(w) = windows.get(&p.session) else { continue };
        // The first reply whose window reaches this probe.
        let i = w.partition_point(|(max, _)| *max < p.seq);
        if let Some((max, bits)) = w.get(i) {
            let back = max - p.seq;
            if back < 64 {
                p.up_arrived = Some(bits >> back & 1 == 1);
            }
        }
    }
    out.sort_by(|a, b| a.t.total_cmp(&b.t).then(a.seq.cmp(&b.seq)));
    out
}

#[derive(Clone, Debug, Serialize)]
pub struct Outage {
    pub start_s: f64,
    pub duration_s: f64,
}

/// Runs of lost probes at least `min_s` long (first loss to the next
/// answered probe).
pub fn outages(probes: &[Probe], t0: f64, min_s: f64) -> Vec<Outage> {
    let mut out = Vec::new();
    let mut run: Option<f64> = None;
    for p in probes {
        match (p.rtt_ms.is_none(), run) {
            (true, None) => run = Some(p.t),
            (false, Some(start)) => {
                if p.t - start >= min_s {
                    out.push(Outage { start_s: start - t0, duration_s: p.t - start });
                }
                run = None;
            }
            _ => {}
        }
    }
    if let (Some(start), Some(last)) = (run, probes.last()) {
        if last.t - start >= min_s {
            out.push(Outage { start_s: start - t0, duration_s: last.t - start });
        }
    }
    out
}

#[derive(Clone, Debug, Serialize)]
pub struct UdpStats {
    pub sent: usize,
    pub answered: usize,
    pub loss: f64,
    /// Lost going up (the reflector never saw it), coming down (it
    /// answered), and lost where no later reply tells.
    pub lost_up: usize,
    pub lost_down: usize,
    pub lost_unknown: usize,
    /// Loss per direction: up of all probes whose fate is known, down of
    /// those that reached the reflector.
    pub up_loss: Option<f64>,
    pub down_loss: Option<f64>,
    pub rtt_ms: Option<Dist>,
    pub up_ms: Option<Dist>,
    pub down_ms: Option<Dist>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LossWindows {
    pub window_s: f64,
    /// Loss (0–1) of each window with at least half its probes sent.
    pub values: Vec<f64>,
    pub median: Option<f64>,
    pub p90: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Dns {
    pub lookups: usize,
    pub failed: usize,
    pub first_ms: Option<Dist>,
    pub second_ms: Option<Dist>,
    /// Share of first / second lookups answered in under 90 % of the
    /// minimum RTT: they cannot have crossed the link.
    pub first_below_min_rtt: Option<f64>,
    pub second_below_min_rtt: Option<f64>,
    /// A cache aboard answers (most second lookups below the minimum RTT).
    pub cache_aboard: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct PathHop {
    pub ttl: u8,
    pub addr: Option<String>,
    pub rtt_ms: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PathInfo {
    pub traces: usize,
    pub reached: usize,
    /// The most common path, with each hop's median RTT.
    pub hops: Vec<PathHop>,
    /// The first hop at least half the minimum RTT away: the path has left
    /// the aircraft there (the hops before it are aboard).
    pub exit_ttl: Option<u8>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PhaseAnalysis {
    pub name: String,
    pub from_s: f64,
    pub to_s: f64,
    pub udp: UdpStats,
    pub technology: String,
    pub technology_why: String,
    pub loss_windows: LossWindows,
    pub outages: Vec<Outage>,
    pub ping_rtt_ms: Option<Dist>,
    pub ping_loss: Option<f64>,
    pub goodput_down_bps: Option<Dist>,
    pub goodput_up_bps: Option<Dist>,
    pub peak_down_bps: Option<f64>,
    pub peak_up_bps: Option<f64>,
    /// The bottleneck's rate by packet trains, per direction.
    pub train_down_bps: Option<Dist>,
    pub train_up_bps: Option<Dist>,
    pub transfers_failed: usize,
    /// Page-load time per protocol.
    pub plt_ms: BTreeMap<String, Dist>,
    pub loads_failed: usize,
    pub dns: Dns,
    /// Proxy and cache headers seen, each value once.
    pub proxies: BTreeMap<String, Vec<String>>,
    pub path: PathInfo,
    pub public_addresses: Vec<(String, Option<String>)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Flight {
    pub source: String,
    pub started: String,
    pub start_epoch_s: f64,
    pub duration_s: f64,
    pub records: usize,
    pub unreadable_lines: usize,
    pub agent_starts: usize,
    pub loss_window_s: f64,
    pub phases: Vec<PhaseAnalysis>,
    /// RTT over time (s from the start, ms; lost probes as none), thinned
    /// to at most 2000 points, for the page's chart.
    #[serde(skip)]
    pub rtt_series: Vec<(f64, Option<f64>)>,
}

/// The technology a minimum RTT points to (seed 000: air-to-ground links
/// stay under 400 ms, a geostationary hop alone is about 480 ms).
pub fn technology(min_rtt_ms: Option<f64>) -> (String, String) {
    match min_rtt_ms {
        None => ("unknown".into(), "no probe was answered".into()),
        Some(m) if m < 400.0 => ("air-to-ground".into(), format!("minimum RTT {m:.0} ms < 400 ms")),
        Some(m) => ("GEO satellite".into(), format!("minimum RTT {m:.0} ms ≥ 400 ms")),
    }
}

fn share(n: usize, of: usize) -> Option<f64> {
    (of > 0).then(|| n as f64 / of as f64)
}

/// Analyses `records` (one flight's log).
pub fn analyze(records: &[Record], unreadable: usize, source: &str, opts: &Options) -> Flight {
    let t0 = records.iter().map(|r| r.t).fold(f64::INFINITY, f64::min);
    let t0 = if t0.is_finite() { t0 } else { 0.0 };
    let t_end = records.iter().map(|r| r.t).fold(t0, f64::max);
    let all_probes = probes(records);
    let phases = if opts.phases.is_empty() { vec![Phase { name: "flight".into(), from_s: 0.0, to_s: None }] } else { opts.phases.clone() };
    let step = (all_probes.len() / 2000).max(1);
    let rtt_series = all_probes.iter().step_by(step).map(|p| (p.t - t0, p.rtt_ms)).collect();
    let phases = phases
        .iter()
        .map(|ph| {
            let rs: Vec<&Record> = records.iter().filter(|r| ph.contains(r.t - t0)).collect();
            let ps: Vec<Probe> = all_probes.iter().filter(|p| ph.contains(p.t - t0)).cloned().collect();
            phase(ph, &rs, &ps, t0, (t_end - t0).min(ph.to_s.unwrap_or(f64::INFINITY)), opts)
        })
        .collect();
    Flight {
        source: source.to_string(),
        started: aerolink_work::har::iso8601(t0),
        start_epoch_s: t0,
        duration_s: t_end - t0,
        records: records.len(),
        unreadable_lines: unreadable,
        agent_starts: records.iter().filter(|r| matches!(r.m, Measurement::Start { .. })).count(),
        loss_window_s: opts.loss_window_s,
        phases,
        rtt_series,
    }
}

fn phase(ph: &Phase, rs: &[&Record], ps: &[Probe], t0: f64, to_s: f64, opts: &Options) -> PhaseAnalysis {
    let udp = udp_stats(ps);
    let min_rtt = udp.rtt_ms.as_ref().map(|d| d.min);
    let (technology, technology_why) = technology(min_rtt);
    let loss_windows = loss_windows_of(ps, t0, ph.from_s, opts.loss_window_s);
    let t = Tally::of(rs);
    PhaseAnalysis {
        name: ph.name.clone(),
        from_s: ph.from_s,
        to_s,
        udp,
        technology,
        technology_why,
        loss_windows,
        outages: outages(ps, t0, opts.outage_min_s),
        ping_rtt_ms: Dist::of(&t.ping.1),
        ping_loss: share(t.ping.0 - t.ping.1.len(), t.ping.0),
        goodput_down_bps: Dist::of(&t.down),
        goodput_up_bps: Dist::of(&t.up),
        peak_down_bps: t.peak_down,
        peak_up_bps: t.peak_up,
        train_down_bps: Dist::of(&t.train_down),
        train_up_bps: Dist::of(&t.train_up),
        transfers_failed: t.transfers_failed,
        plt_ms: t.plt.iter().filter_map(|(k, v)| Some((k.clone(), Dist::of(v)?))).collect(),
        loads_failed: t.loads_failed,
        dns: t.dns(min_rtt),
        path: t.path(min_rtt),
        proxies: t.proxies,
        public_addresses: t.addresses,
    }
}

/// The UDP probes' fates and delays.
fn udp_stats(ps: &[Probe]) -> UdpStats {
    let answered: Vec<&Probe> = ps.iter().filter(|p| p.rtt_ms.is_some()).collect();
    let lost_up = ps.iter().filter(|p| p.rtt_ms.is_none() && p.up_arrived == Some(false)).count();
    let lost_down = ps.iter().filter(|p| p.rtt_ms.is_none() && p.up_arrived == Some(true)).count();
    let lost = ps.len() - answered.len();
    let known_up = ps.iter().filter(|p| p.up_arrived.is_some()).count();
    let reached = ps.iter().filter(|p| p.up_arrived == Some(true)).count();
    let rtts: Vec<f64> = answered.iter().filter_map(|p| p.rtt_ms).collect();
    UdpStats {
        sent: ps.len(),
        answered: answered.len(),
        loss: share(lost, ps.len()).unwrap_or(0.0),
        lost_up,
        lost_down,
        lost_unknown: lost - lost_up - lost_down,
        up_loss: share(lost_up, known_up),
        down_loss: share(lost_down, reached),
        rtt_ms: Dist::of(&rtts),
        up_ms: Dist::of(&answered.iter().filter_map(|p| p.up_ms).collect::<Vec<_>>()),
        down_ms: Dist::of(&answered.iter().filter_map(|p| p.down_ms).collect::<Vec<_>>()),
    }
}

/// Loss per window of `window_s`, windows aligned to the phase's start
/// (`from_s` after the log's `t0`); windows with fewer than half the
/// fullest one's probes left out.
fn loss_windows_of(ps: &[Probe], t0: f64, from_s: f64, window_s: f64) -> LossWindows {
    let mut windows: BTreeMap<i64, (usize, usize)> = BTreeMap::new();
    for p in ps {
        let k = ((p.t - t0 - from_s) / window_s).floor() as i64;
        let e = windows.entry(k).or_default();
        e.0 += 1;
        e.1 += p.rtt_ms.is_none() as usize;
    }
    let full = windows.values().map(|(n, _)| *n).max().unwrap_or(0);
    let mut values: Vec<f64> = windows.values().filter(|(n, _)| *n * 2 >= full && *n > 0).map(|(n, l)| *l as f64 / *n as f64).collect();
    let wd = Dist::of(&values);
    values.sort_by(f64::total_cmp);
    LossWindows { window_s, median: wd.as_ref().map(|d| d.median), p90: wd.as_ref().map(|d| d.p90), values }
}

/// Everything but the UDP probes, gathered from a phase's records.
#[derive(Default)]
struct Tally {
    /// Pings sent, and the round trips of those answered.
    ping: (usize, Vec<f64>),
    down: Vec<f64>,
    up: Vec<f64>,
    peak_down: Option<f64>,
    peak_up: Option<f64>,
    transfers_failed: usize,
    train_down: Vec<f64>,
    train_up: Vec<f64>,
    plt: BTreeMap<String, Vec<f64>>,
    loads_failed: usize,
    proxies: BTreeMap<String, Vec<String>>,
    dns1: Vec<f64>,
    dns2: Vec<f64>,
    dns_failed: usize,
    lookups: usize,
    /// Each path seen (the hops' addresses) with every trace's hop RTTs.
    paths: BTreeMap<Vec<Option<String>>, Vec<Vec<Option<f64>>>>,
    traces: usize,
    traces_reached: usize,
    addresses: Vec<(String, Option<String>)>,
}

impl Tally {
    fn of(rs: &[&Record]) -> Tally {
        let mut t = Tally::default();
        for r in rs {
            t.add(&r.m);
        }
        t
    }

    fn add(&mut self, m: &Measurement) {
        match m {
            Measurement::Ping { rtt_ms, .. } => {
                self.ping.0 += 1;
                self.ping.1.extend(*rtt_ms);
            }
            Measurement::Bulk { direction, goodput_bps, peak_bps, error, .. } => {
                self.transfers_failed += error.is_some() as usize;
                let (v, peak) = if direction == "down" { (&mut self.down, &mut self.peak_down) } else { (&mut self.up, &mut self.peak_up) };
                v.extend(*goodput_bps);
                if let Some(p) = peak_bps {
                    *peak = Some(peak.map_or(*p, |x| x.max(*p)));
                }
            }
            Measurement::Rate { direction, rate_bps, .. } => {
                if direction == "down" {
                    self.train_down.extend(*rate_bps)
                } else {
                    self.train_up.extend(*rate_bps)
                }
            }
            Measurement::Web { protocol, plt_ms, headers, error, .. } => {
                self.loads_failed += error.is_some() as usize;
                self.plt.entry(protocol.clone()).or_default().extend(*plt_ms);
                for (k, vs) in headers {
                    let e = self.proxies.entry(k.clone()).or_default();
                    for v in vs {
                        if !e.contains(v) {
                            e.push(v.clone());
                        }
                    }
                }
            }
            Measurement::Dns { attempt, ms, error, .. } => {
                self.lookups += 1;
                self.dns_failed += error.is_some() as usize;
                if let Some(ms) = ms {
                    if *attempt == 1 {
                        self.dns1.push(*ms)
                    } else {
                        self.dns2.push(*ms)
                    }
                }
            }
            Measurement::Trace { hops, reached, .. } => {
                self.traces += 1;
                self.traces_reached += *reached as usize;
                self.paths.entry(hops.iter().map(|h| h.addr.clone()).collect()).or_default().push(hops.iter().map(|h| h.rtt_ms).collect());
            }
            Measurement::Address { public, network } if !self.addresses.iter().any(|(a, _)| a == public) => {
                self.addresses.push((public.clone(), network.clone()));
            }
            _ => {}
        }
    }

    /// The lookups, and whether a second lookup of a name came back faster
    /// than the link allows (a cache aboard).
    fn dns(&self, min_rtt: Option<f64>) -> Dns {
        // Below 90 % of the minimum RTT: a lookup that crossed the link takes
        // at least about the RTT (give or take a fraction of a millisecond of
        // packet-size and timer noise), so the margin keeps those out.
        let below = |v: &[f64]| min_rtt.and_then(|m| share(v.iter().filter(|x| **x < 0.9 * m).count(), v.len()));
        let second_below = below(&self.dns2);
        Dns {
            lookups: self.lookups,
            failed: self.dns_failed,
            first_ms: Dist::of(&self.dns1),
            second_ms: Dist::of(&self.dns2),
            first_below_min_rtt: below(&self.dns1),
            second_below_min_rtt: second_below,
            cache_aboard: second_below.is_some_and(|s| s > 0.5),
        }
    }

    /// The most traced path, and the first hop at half the minimum RTT or
    /// more: where the path leaves the aircraft.
    fn path(&self, min_rtt: Option<f64>) -> PathInfo {
        let (traces, reached) = (self.traces, self.traces_reached);
        let Some((addrs, rtts)) = self.paths.iter().max_by_key(|(_, v)| v.len()) else {
            return PathInfo { traces, reached, hops: vec![], exit_ttl: None };
        };
        let hops: Vec<PathHop> = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| PathHop { ttl: i as u8 + 1, addr: a.clone(), rtt_ms: Dist::of(&rtts.iter().filter_map(|r| r.get(i).copied().flatten()).collect::<Vec<_>>()).map(|d| d.median) })
            .collect();
        let exit_ttl = min_rtt.and_then(|m| hops.iter().find(|h| h.rtt_ms.is_some_and(|r| r >= m / 2.0)).map(|h| h.ttl));
        PathInfo { traces, reached, hops, exit_ttl }
    }
}

mod page;
pub use page::render;
