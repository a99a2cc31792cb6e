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
use std::fmt::Write;

use crate::probe::record::{Measurement, Record};
use serde::Serialize;

use aerolink_lab::svg::{self, esc};

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
            out.push(Probe { t: r.t, session: u.session, seq: u.seq, rtt_ms: u.rtt_ms, up_ms: u.up_ms, down_ms: u.down_ms, up_arrived: u.rtt_ms.map(|_| true) });
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
    let answered: Vec<&Probe> = ps.iter().filter(|p| p.rtt_ms.is_some()).collect();
    let lost_up = ps.iter().filter(|p| p.rtt_ms.is_none() && p.up_arrived == Some(false)).count();
    let lost_down = ps.iter().filter(|p| p.rtt_ms.is_none() && p.up_arrived == Some(true)).count();
    let lost = ps.len() - answered.len();
    let known_up = ps.iter().filter(|p| p.up_arrived.is_some()).count();
    let reached = ps.iter().filter(|p| p.up_arrived == Some(true)).count();
    let rtts: Vec<f64> = answered.iter().filter_map(|p| p.rtt_ms).collect();
    let udp = UdpStats {
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
    };
    let min_rtt = udp.rtt_ms.as_ref().map(|d| d.min);
    let (technology, technology_why) = technology(min_rtt);

    // Loss per window, windows aligned to the phase start.
    let mut windows: BTreeMap<i64, (usize, usize)> = BTreeMap::new();
    for p in ps {
        let k = ((p.t - t0 - ph.from_s) / opts.loss_window_s).floor() as i64;
        let e = windows.entry(k).or_default();
        e.0 += 1;
        e.1 += p.rtt_ms.is_none() as usize;
    }
    let full = windows.values().map(|(n, _)| *n).max().unwrap_or(0);
    let mut values: Vec<f64> = windows.values().filter(|(n, _)| *n * 2 >= full && *n > 0).map(|(n, l)| *l as f64 / *n as f64).collect();
    let wd = Dist::of(&values);
    values.sort_by(f64::total_cmp);
    let loss_windows = LossWindows { window_s: opts.loss_window_s, median: wd.as_ref().map(|d| d.median), p90: wd.as_ref().map(|d| d.p90), values };

    let mut ping = (0usize, Vec::new());
    let (mut down, mut up, mut peak_down, mut peak_up, mut transfers_failed) = (Vec::new(), Vec::new(), None::<f64>, None::<f64>, 0);
    let (mut train_down, mut train_up) = (Vec::new(), Vec::new());
    let mut plt: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut loads_failed = 0;
    let mut proxies: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let (mut dns1, mut dns2, mut dns_failed, mut lookups) = (Vec::new(), Vec::new(), 0, 0);
    let mut paths: BTreeMap<Vec<Option<String>>, Vec<Vec<Option<f64>>>> = BTreeMap::new();
    let (mut traces, mut traces_reached) = (0, 0);
    let mut addresses: Vec<(String, Option<String>)> = Vec::new();
    for r in rs {
        match &r.m {
            Measurement::Ping { rtt_ms, .. } => {
                ping.0 += 1;
                ping.1.extend(*rtt_ms);
            }
            Measurement::Bulk { direction, goodput_bps, peak_bps, error, .. } => {
                if error.is_some() {
                    transfers_failed += 1;
                }
                let (v, peak) = if direction == "down" { (&mut down, &mut peak_down) } else { (&mut up, &mut peak_up) };
                v.extend(*goodput_bps);
                if let Some(p) = peak_bps {
                    *peak = Some(peak.map_or(*p, |x| x.max(*p)));
                }
            }
            Measurement::Rate { direction, rate_bps, .. } => {
                if direction == "down" {
                    train_down.extend(*rate_bps)
                } else {
                    train_up.extend(*rate_bps)
                }
            }
            Measurement::Web { protocol, plt_ms, headers, error, .. } => {
                if error.is_some() {
                    loads_failed += 1;
                }
                plt.entry(protocol.clone()).or_default().extend(*plt_ms);
                for (k, vs) in headers {
                    let e = proxies.entry(k.clone()).or_default();
                    for v in vs {
                        if !e.contains(v) {
                            e.push(v.clone());
                        }
                    }
                }
            }
            Measurement::Dns { attempt, ms, error, .. } => {
                lookups += 1;
                if error.is_some() {
                    dns_failed += 1;
                }
                if let Some(ms) = ms {
                    if *attempt == 1 {
                        dns1.push(*ms)
                    } else {
                        dns2.push(*ms)
                    }
                }
            }
            Measurement::Trace { hops, reached, .. } => {
                traces += 1;
                traces_reached += *reached as usize;
                paths.entry(hops.iter().map(|h| h.addr.clone()).collect()).or_default().push(hops.iter().map(|h| h.rtt_ms).collect());
            }
            Measurement::Address { public, network } if !addresses.iter().any(|(a, _)| a == public) => {
                addresses.push((public.clone(), network.clone()));
            }
            _ => {}
        }
    }
    // Below 90 % of the minimum RTT: a lookup that crossed the link takes
    // at least about the RTT (give or take a fraction of a millisecond of
    // packet-size and timer noise), so the margin keeps those out.
    let below = |v: &[f64]| min_rtt.and_then(|m| share(v.iter().filter(|x| **x < 0.9 * m).count(), v.len()));
    let second_below = below(&dns2);
    let dns = Dns {
        lookups,
        failed: dns_failed,
        first_ms: Dist::of(&dns1),
        second_ms: Dist::of(&dns2),
        first_below_min_rtt: below(&dns1),
        second_below_min_rtt: second_below,
        cache_aboard: second_below.is_some_and(|s| s > 0.5),
    };
    let path = match paths.iter().max_by_key(|(_, v)| v.len()) {
        None => PathInfo { traces, reached: traces_reached, hops: vec![], exit_ttl: None },
        Some((addrs, rtts)) => {
            let hops: Vec<PathHop> = addrs
                .iter()
                .enumerate()
                .map(|(i, a)| PathHop { ttl: i as u8 + 1, addr: a.clone(), rtt_ms: Dist::of(&rtts.iter().filter_map(|r| r.get(i).copied().flatten()).collect::<Vec<_>>()).map(|d| d.median) })
                .collect();
            let exit_ttl = min_rtt.and_then(|m| hops.iter().find(|h| h.rtt_ms.is_some_and(|r| r >= m / 2.0)).map(|h| h.ttl));
            PathInfo { traces, reached: traces_reached, hops, exit_ttl }
        }
    };
    PhaseAnalysis {
        name: ph.name.clone(),
        from_s: ph.from_s,
        to_s,
        udp,
        technology,
        technology_why,
        loss_windows,
        outages: outages(ps, t0, opts.outage_min_s),
        ping_rtt_ms: Dist::of(&ping.1),
        ping_loss: share(ping.0 - ping.1.len(), ping.0),
        goodput_down_bps: Dist::of(&down),
        goodput_up_bps: Dist::of(&up),
        peak_down_bps: peak_down,
        peak_up_bps: peak_up,
        train_down_bps: Dist::of(&train_down),
        train_up_bps: Dist::of(&train_up),
        transfers_failed,
        plt_ms: plt.into_iter().filter_map(|(k, v)| Some((k, Dist::of(&v)?))).collect(),
        loads_failed,
        dns,
        proxies,
        path,
        public_addresses: addresses,
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.0} ms"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{:.1} %", v * 100.0))
}

fn rate(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(b) if b >= 1e6 => format!("{:.2} Mbit/s", b / 1e6),
        Some(b) => format!("{:.0} kbit/s", b / 1e3),
    }
}

fn cdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let step = (v.len() / 400).max(1);
    let n = v.len() as f64;
    let mut out: Vec<(f64, f64)> = v.iter().enumerate().step_by(step).map(|(i, x)| (*x, (i + 1) as f64 / n)).collect();
    if let Some(last) = v.last() {
        out.push((*last, 1.0));
    }
    out
}

/// The flight as one self-contained HTML page.
pub fn render(f: &Flight, records: &[Record]) -> String {
    let mut h = String::new();
    let _ = write!(h, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>aerolink flight analysis</title><style>{}</style></head><body>", aerolink_lab::report::CSS);
    let _ = write!(
        h,
        "<h1>Flight analysis</h1><p class=\"note\">{} · started {} · {:.1} min · {} records{} · agent started {}×</p>",
        esc(&f.source),
        esc(&f.started),
        f.duration_s / 60.0,
        f.records,
        if f.unreadable_lines > 0 { format!(" ({} unreadable lines skipped)", f.unreadable_lines) } else { String::new() },
        f.agent_starts
    );
    // One row per quantity, one column per phase (a flight has few phases
    // and many quantities).
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |name: String, cell: &dyn Fn(&PhaseAnalysis) -> String| rows.push((name, f.phases.iter().map(cell).collect()));
    add("technology".into(), &|p| format!("{}<br><span class=\"note\">{}</span>", esc(&p.technology), esc(&p.technology_why)));
    add("RTT min / median / p95".into(), &|p| {
        let r = p.udp.rtt_ms.as_ref();
        format!("{} / {} / {}", ms(r.map(|d| d.min)), ms(r.map(|d| d.median)), ms(r.map(|d| d.p95)))
    });
    add("probes sent / answered".into(), &|p| format!("{} / {}", p.udp.sent, p.udp.answered));
    add("probe loss (up / down)".into(), &|p| format!("{} ({} / {})", pct(Some(p.udp.loss)), pct(p.udp.up_loss), pct(p.udp.down_loss)));
    add(format!("loss per {:.0} s window: median / p90", f.loss_window_s), &|p| format!("{} / {} ({} windows)", pct(p.loss_windows.median), pct(p.loss_windows.p90), p.loss_windows.values.len()));
    add("outages (start, length)".into(), &|p| {
        if p.outages.is_empty() {
            "none".into()
        } else {
            p.outages.iter().map(|o| format!("{:.0} s, {:.1} s", o.start_s, o.duration_s)).collect::<Vec<_>>().join("; ")
        }
    });
    add("link rate down / up (packet trains)".into(), &|p| format!("{} / {}", rate(p.train_down_bps.as_ref().map(|d| d.median)), rate(p.train_up_bps.as_ref().map(|d| d.median))));
    add("TCP goodput down / up (best second)".into(), &|p| {
        format!("{} / {} ({} / {})", rate(p.goodput_down_bps.as_ref().map(|d| d.median)), rate(p.goodput_up_bps.as_ref().map(|d| d.median)), rate(p.peak_down_bps), rate(p.peak_up_bps))
    });
    add("page load, median".into(), &|p| if p.plt_ms.is_empty() { "–".into() } else { p.plt_ms.iter().map(|(k, d)| format!("{} {}", esc(k), ms(Some(d.median)))).collect::<Vec<_>>().join(", ") });
    add("DNS 1st / 2nd lookup, median".into(), &|p| format!("{} / {}", ms(p.dns.first_ms.as_ref().map(|d| d.median)), ms(p.dns.second_ms.as_ref().map(|d| d.median))));
    add("DNS cache aboard".into(), &|p| if p.dns.cache_aboard { format!("yes ({} of 2nd lookups under 90 % of the minimum RTT)", pct(p.dns.second_below_min_rtt)) } else { "no".into() });
    add("proxy and cache headers".into(), &|p| {
        if p.proxies.is_empty() {
            "none seen".into()
        } else {
            esc(&p.proxies.iter().map(|(k, v)| format!("{k}: {}", v.join(" | "))).collect::<Vec<_>>().join("; "))
        }
    });
    add("path leaves the aircraft".into(), &|p| match p.path.exit_ttl {
        Some(t) => format!("after hop {} ({})", t.saturating_sub(1), esc(&p.path.hops.get((t as usize).saturating_sub(2)).and_then(|h| h.addr.clone()).unwrap_or("the agent".into()))),
        None => "–".into(),
    });
    add("public address".into(), &|p| {
        if p.public_addresses.is_empty() {
            "–".into()
        } else {
            p.public_addresses.iter().map(|(a, n)| format!("{}{}", esc(a), n.as_ref().map(|n| format!(" ({})", esc(n))).unwrap_or_default())).collect::<Vec<_>>().join(", ")
        }
    });
    h.push_str("<h2>Summary</h2><table><tr><th></th>");
    for p in &f.phases {
        let _ = write!(h, "<th>{} ({:.0}–{:.0} s)</th>", esc(&p.name), p.from_s, p.to_s);
    }
    h.push_str("</tr>");
    for (name, cells) in &rows {
        let _ = write!(h, "<tr><td style=\"text-align:left\">{}</td>", esc(name));
        for c in cells {
            let _ = write!(h, "<td style=\"text-align:left;white-space:normal\">{c}</td>");
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    h.push_str("<h2>Round-trip time</h2><div class=\"charts\">");
    let series: Vec<(String, Vec<(f64, f64)>)> = vec![
        ("answered probes".into(), f.rtt_series.iter().filter_map(|(t, r)| Some((*t / 60.0, (*r)?))).collect()),
        ("lost (drawn at 0)".into(), f.rtt_series.iter().filter(|(_, r)| r.is_none()).map(|(t, _)| (*t / 60.0, 0.0)).collect()),
    ];
    h.push_str(&svg::lines_with("RTT over the flight", "minutes", "RTT (ms)", &series, false, None, true));
    let rtts: Vec<(String, Vec<(f64, f64)>)> = f.phases.iter().map(|p| (p.name.clone(), cdf(&probes_rtt(records, f, p)))).collect();
    h.push_str(&svg::lines("RTT CDF", "RTT (ms)", "fraction of probes", &rtts, true));
    let loss: Vec<(String, Vec<(f64, f64)>)> = f.phases.iter().map(|p| (p.name.clone(), cdf(&p.loss_windows.values.iter().map(|v| v * 100.0).collect::<Vec<_>>()))).collect();
    let few = f.phases.iter().all(|p| p.loss_windows.values.len() < 10);
    h.push_str(&svg::lines_with(&format!("Loss per {:.0} s window (seed 000 Fig. 4)", f.loss_window_s), "loss (%)", "fraction of windows", &loss, !few, None, few));
    let mut dns_series = Vec::new();
    for p in &f.phases {
        for (attempt, label) in [(1u8, "1st"), (2, "2nd")] {
            let v: Vec<f64> = records
                .iter()
                .filter(|r| p_contains(f, p, r.t))
                .filter_map(|r| match &r.m {
                    Measurement::Dns { attempt: a, ms, .. } if *a == attempt => *ms,
                    _ => None,
                })
                .collect();
            if !v.is_empty() {
                dns_series.push((format!("{} {label} lookup", p.name), cdf(&v)));
            }
        }
    }
    if !dns_series.is_empty() {
        h.push_str(&svg::lines("DNS resolution time (seed 000 Fig. 7)", "ms", "fraction of lookups", &dns_series, true));
    }
    h.push_str("</div>");
    for p in &f.phases {
        let _ = write!(h, "<h2>{}: details</h2>", esc(&p.name));
        if !p.outages.is_empty() {
            h.push_str("<h3>Outages</h3><table><tr><th>start</th><th>duration</th></tr>");
            for o in &p.outages {
                let _ = write!(h, "<tr><td>{:.0} s</td><td>{:.1} s</td></tr>", o.start_s, o.duration_s);
            }
            h.push_str("</table>");
        }
        if !p.path.hops.is_empty() {
            let _ = write!(h, "<h3>Path (most common of {} traceroutes, {} reached the reflector)</h3><table><tr><th>hop</th><th>address</th><th>median RTT</th></tr>", p.path.traces, p.path.reached);
            for hop in &p.path.hops {
                let _ = write!(h, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", hop.ttl, esc(hop.addr.as_deref().unwrap_or("*")), ms(hop.rtt_ms));
            }
            h.push_str("</table>");
        }
        if !p.plt_ms.is_empty() {
            h.push_str("<h3>Page loads</h3><table><tr><th>protocol</th><th>loads</th><th>median</th><th>p90</th></tr>");
            for (proto, d) in &p.plt_ms {
                let _ = write!(h, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", esc(proto), d.n, ms(Some(d.median)), ms(Some(d.p90)));
            }
            let _ = write!(h, "</table><p class=\"note\">{} loads failed.</p>", p.loads_failed);
        }
    }
    h.push_str("<p class=\"note\">Made by <code>aerolink analyze</code>. Technology from the minimum RTT (under 400 ms: air-to-ground; above: GEO). A DNS answer in under 90 % of the minimum RTT cannot have crossed the link: a resolver aboard cached it (seed 000 §5.3). Loss per direction comes from the reflector's record of which probes reached it.</p></body></html>");
    h
}

fn p_contains(f: &Flight, p: &PhaseAnalysis, t: f64) -> bool {
    let rel = t - f.start_epoch_s;
    rel >= p.from_s && rel <= p.to_s
}

fn probes_rtt(records: &[Record], f: &Flight, p: &PhaseAnalysis) -> Vec<f64> {
    records
        .iter()
        .filter(|r| p_contains(f, p, r.t))
        .filter_map(|r| match &r.m {
            Measurement::Udp(u) => u.rtt_ms,
            _ => None,
        })
        .collect()
}
