//! A link profile fitted from a probe log: what `aerolink fit` writes.
//!
//! Per direction: the base delay (median one-way delay when the clocks are
//! trusted, else half the RTT, less the probe's own serialisation), jitter
//! as the empirical distribution around it, loss as a Gilbert model
//! (bad state loses all, good state none) fitted from the loss run lengths —
//! or Bernoulli when the runs show no memory — and the rate from the
//! throughput tests' best second. Outages come from the long gaps. Probes
//! sent while a page load or transfer was running, or inside an outage, are
//! left out of delay and loss: they measure the agent's own traffic.

use crate::probe::record::{Measurement, Record};

use crate::analysis::{self as flight, Dist, Probe};

/// Bytes on the wire of a probe request and reply (IPv4 + UDP + payload).
const PROBE_WIRE_UP: f64 = 28.0 + 80.0;
const PROBE_WIRE_DOWN: f64 = 28.0 + 72.0;

#[derive(Clone, Debug)]
pub struct Options {
    /// The profile's name.
    pub name: String,
    /// File name stem for the jitter sample files (next to the profile).
    pub stem: String,
    /// Lost probes spanning at least this long are an outage.
    pub outage_min_s: f64,
    /// What the log is (for the profile's `source`).
    pub source: String,
    /// How loss is written: a Gilbert chain, or the measured loss rate of
    /// each window of this many seconds (a trace; outages are then in it).
    pub loss_trace_window_s: Option<f64>,
}

/// Each direction's loss rate per window of `window_s` from the log's
/// start. A lost probe whose direction no reply tells (in an outage longer
/// than the reflector's 64-probe memory) counts as lost both ways; a
/// window with no probe counts as no loss.
fn loss_trace(ps: &[Probe], t0: f64, window_s: f64, up: bool) -> Vec<f64> {
    let mut w: Vec<(usize, usize)> = Vec::new();
    for p in ps {
        let lost = match (p.up_arrived, p.rtt_ms.is_some()) {
            (_, true) => Some(false),
            (None, false) => Some(true),
            (Some(arrived), false) if up => Some(!arrived),
            (Some(true), false) => Some(true),
            (Some(false), false) => None,
        };
        let Some(lost) = lost else { continue };
        let k = ((p.t - t0) / window_s).floor().max(0.0) as usize;
        if w.len() <= k {
            w.resize(k + 1, (0, 0));
        }
        w[k].0 += 1;
        w[k].1 += lost as usize;
    }
    w.iter().map(|(n, l)| if *n > 0 { *l as f64 / *n as f64 } else { 0.0 }).collect()
}

/// Loss run statistics of one direction and the model they give.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LossFit {
    pub packets: usize,
    pub lost: usize,
    pub mean: f64,
    /// P(good → bad) and P(bad → good) per packet, each with a 95 %
    /// confidence half-width.
    pub p: f64,
    pub p_ci: f64,
    pub r: f64,
    pub r_ci: f64,
    /// "none", "bernoulli" or "gilbert-elliott".
    pub model: String,
}

/// Fits the Gilbert model to loss sequences (each a contiguous stretch,
/// `true` = lost).
pub fn fit_loss(seqs: &[Vec<bool>]) -> LossFit {
    let (mut n0, mut n01, mut n1, mut n10, mut packets, mut lost) = (0usize, 0usize, 0usize, 0usize, 0usize, 0usize);
    for s in seqs {
        packets += s.len();
        lost += s.iter().filter(|x| **x).count();
        for w in s.windows(2) {
            match (w[0], w[1]) {
                (false, b) => {
                    n0 += 1;
                    n01 += b as usize;
                }
                (true, b) => {
                    n1 += 1;
                    n10 += !b as usize;
                }
            }
        }
    }
    let mean = if packets > 0 { lost as f64 / packets as f64 } else { 0.0 };
    // Wilson's score interval, as the half-width to its farther end: unlike
    // the normal approximation it does not shrink to nothing when a count
    // is 0 (no losses in 90 probes still allows p up to 4 %), and with no
    // transitions at all it spans the whole range.
    let ci = |x: f64, n: usize| {
        if n == 0 {
            return 1.0;
        }
        let (n, z2) = (n as f64, 1.96f64 * 1.96);
        let centre = (x + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half = 1.96 * (x * (1.0 - x) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
        ((centre - half - x).abs()).max((centre + half - x).abs())
    };
    let p = if n0 > 0 { n01 as f64 / n0 as f64 } else { 0.0 };
    let r = if n1 > 0 { n10 as f64 / n1 as f64 } else { 1.0 };
    let (p_ci, r_ci) = (ci(p, n0), ci(r, n1));
    let model = if lost == 0 {
        "none"
    } else if n1 == 0 || (p + r - 1.0).abs() <= (p_ci * p_ci + r_ci * r_ci).sqrt() {
        // No memory: the chance of a loss does not depend on the last one.
        "bernoulli"
    } else {
        "gilbert-elliott"
    };
    LossFit { packets, lost, mean, p, p_ci, r, r_ci, model: model.into() }
}

/// A fitted profile: its TOML, the files it names, and what was fitted
/// (with confidence intervals) as JSON.
#[derive(Clone, Debug)]
pub struct Fitted {
    /// The profile's text.
    pub toml: String,
    /// Files it names (jitter samples, loss traces): name beside it, text.
    pub files: Vec<(String, String)>,
    pub summary: FitSummary,
}

/// What was fitted, and from how much (`aerolink fit --json`; its fields
/// in name order, as the JSON lists them).
#[derive(Clone, Debug, serde::Serialize)]
pub struct FitSummary {
    pub down: DirectionFit,
    /// The trace window when loss is written as a trace.
    pub loss_trace_window_s: Option<f64>,
    /// Whether delays are one-way (the clocks trusted) or half the RTT.
    pub one_way_delays: bool,
    pub outages: Vec<flight::Outage>,
    pub probes: ProbeCounts,
    pub up: DirectionFit,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ProbeCounts {
    pub total: usize,
    pub used_for_delay: usize,
}

/// One direction's fit.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DirectionFit {
    /// The base delay's 95 % half-width (of the median).
    pub delay_ci_ms: f64,
    pub delay_median_ms: f64,
    /// The base delay: the median less the probe's serialisation.
    pub delay_ms: f64,
    pub delay_p5_ms: f64,
    pub delay_p95_ms: f64,
    pub delay_samples: usize,
    /// The empirical jitter's sample file, when the spread is worth one.
    pub jitter_file: Option<String>,
    pub loss: LossFit,
    pub rate_bps: Option<f64>,
    /// "packet trains" or "best second of TCP transfers".
    pub rate_from: Option<&'static str>,
    pub rate_samples: Option<usize>,
}

/// Why a log gives no profile.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    #[error("fewer than 10 answered UDP probes: nothing to fit (was the reflector running?)")]
    TooFewProbes,
    #[error("the records' times span {0:.0} days: a flight log spans hours (two logs in one directory, or a corrupt time?)")]
    Span(f64),
    #[error("no delays")]
    NoDelays,
}

fn busy_windows(records: &[Record]) -> Vec<(f64, f64)> {
    records
        .iter()
        .filter_map(|r| match &r.m {
            Measurement::Web { plt_ms, .. } => Some((r.t - 1.0, r.t + plt_ms.unwrap_or(60_000.0) / 1e3 + 1.0)),
            Measurement::Bulk { ms, .. } => Some((r.t - 1.0, r.t + ms.unwrap_or(60_000.0) / 1e3 + 1.0)),
            Measurement::Rate { ms, .. } => Some((r.t - 1.0, r.t + ms.unwrap_or(5_000.0) / 1e3 + 2.0)),
            _ => None,
        })
        .collect()
}

/// Splits probes into stretches of consecutive ones that `keep` admits
/// (a probe it refuses ends a stretch), mapped through `f`.
fn stretches(ps: &[Probe], keep: impl Fn(&Probe) -> bool, f: impl Fn(&Probe) -> Option<bool>) -> Vec<Vec<bool>> {
    let mut out = vec![Vec::new()];
    let mut last_session = None;
    for p in ps {
        let v = if keep(p) { f(p) } else { None };
        match v {
            Some(b) if last_session == Some(p.session) || last_session.is_none() => out.last_mut().expect("one").push(b),
            Some(b) => out.push(vec![b]),
            None => out.push(Vec::new()),
        }
        last_session = Some(p.session);
    }
    out.retain(|s| s.len() > 1);
    out
}

fn fmt_rate(bps: f64) -> String {
    format!("{:.4} Mbit/s", bps / 1e6)
}

/// Fits a profile to `records`.
/// The longest a log to fit may span (its loss trace has a window per
/// `--trace-window` of it).
const MAX_SPAN_S: f64 = 31.0 * 86_400.0;

pub fn fit(records: &[Record], o: &Options) -> Result<Fitted, FitError> {
    let ps = flight::probes(records);
    if ps.iter().filter(|p| p.rtt_ms.is_some()).count() < 10 {
        return Err(FitError::TooFewProbes);
    }
    let t0 = records.iter().map(|r| r.t).fold(f64::INFINITY, f64::min);
    let t1 = records.iter().map(|r| r.t).fold(f64::NEG_INFINITY, f64::max);
    if !(t1 - t0 <= MAX_SPAN_S) {
        return Err(FitError::Span((t1 - t0) / 86_400.0));
    }
    let outages = flight::outages(&ps, t0, o.outage_min_s);
    let busy = busy_windows(records);
    let clean = |p: &Probe| {
        let rel = p.t - t0;
        !busy.iter().any(|(a, b)| p.t >= *a && p.t <= *b) && !outages.iter().any(|w| rel >= w.start_s - 1e-6 && rel <= w.start_s + w.duration_s + 1e-6)
    };
    let answered: Vec<&Probe> = ps.iter().filter(|p| p.rtt_ms.is_some() && clean(p)).collect();
    let one_way = answered.iter().filter(|p| p.up_ms.is_some() && p.down_ms.is_some()).count() * 2 >= answered.len().max(1);
    let mut toml = toml::Table::new();
    toml.insert("name".into(), o.name.clone().into());
    toml.insert("description".into(), format!("Fitted from a probe log by aerolink fit ({} probes over {:.1} min)", ps.len(), (ps.last().map_or(t0, |p| p.t) - t0) / 60.0).into());
    toml.insert("source".into(), o.source.clone().into());
    toml.insert("split".into(), split_text(one_way, o.loss_trace_window_s).into());
    let mut files = Vec::new();
    let mut fits = Vec::new();
    for (dir, wire) in [("up", PROBE_WIRE_UP), ("down", PROBE_WIRE_DOWN)] {
        let delays: Vec<f64> = answered
            .iter()
            .filter_map(|p| {
                if !one_way {
                    p.rtt_ms.map(|r| r / 2.0)
                } else if dir == "up" {
                    p.up_ms
                } else {
                    p.down_ms
                }
            })
            .collect();
        let d = Dist::of(&delays).ok_or(FitError::NoDelays)?;
        let rate_fit = peak_rate(records, dir);
        let rate = rate_fit.map(|r| r.0);
        let serialisation_ms = rate.map_or(0.0, |r| wire * 8.0 / r * 1e3);
        let base = (d.median - serialisation_ms).max(0.0);
        let mut t = toml::Table::new();
        if let Some(r) = rate {
            t.insert("rate".into(), fmt_rate(r).into());
        }
        t.insert("delay".into(), format!("{base:.3} ms").into());
        let jitter_file = jitter(&mut t, &mut files, &delays, &d, dir, &o.stem);
        // Up: every probe whose fate is known. Down: the replies to the
        // probes that reached the reflector.
        let seqs = if dir == "up" { stretches(&ps, clean, |p| p.up_arrived.map(|a| !a)) } else { stretches(&ps, clean, |p| (p.up_arrived == Some(true)).then_some(p.rtt_ms.is_none())) };
        let loss = fit_loss(&seqs);
        match o.loss_trace_window_s {
            Some(window_s) => {
                let file = format!("{}.loss-{dir}.txt", o.stem);
                files.push((file.clone(), loss_trace_text(&loss_trace(&ps, t0, window_s, dir == "up"), dir, window_s)));
                t.insert("loss".into(), toml::Value::Table(toml::Table::from_iter([("trace".to_string(), file.into()), ("window".to_string(), format!("{window_s} s").into())])));
            }
            None => {
                if let Some(l) = loss_value(&loss) {
                    t.insert("loss".into(), l);
                }
            }
        }
        let delay_ci_ms = 1.96 * ((d.p75 - d.p25) / 1.349) / (d.n as f64).sqrt() * 1.2533;
        fits.push(DirectionFit {
            delay_ci_ms,
            delay_median_ms: d.median,
            delay_ms: base,
            delay_p5_ms: d.p5,
            delay_p95_ms: d.p95,
            delay_samples: d.n,
            jitter_file,
            loss,
            rate_bps: rate,
            rate_from: rate_fit.map(|r| r.1),
            rate_samples: rate_fit.map(|r| r.2),
        });
        toml.insert(dir.into(), toml::Value::Table(t));
    }
    // A loss trace holds the outages already (windows of 100 %).
    if !outages.is_empty() && o.loss_trace_window_s.is_none() {
        toml.insert("link".into(), outages_table(&outages));
    }
    let (down, up) = (fits.pop().expect("down"), fits.pop().expect("up"));
    let summary = FitSummary { down, loss_trace_window_s: o.loss_trace_window_s, one_way_delays: one_way, outages, probes: ProbeCounts { total: ps.len(), used_for_delay: answered.len() }, up };
    // Plain tables of text and numbers always serialise.
    let text = format!("# Fitted by `aerolink fit` from {}.\n# Replay: aerolink run --profile THIS_FILE …\n{}", o.source, toml::to_string(&toml).expect("a table of text serialises"));
    Ok(Fitted { toml: text, files, summary })
}

/// The profile's `split`: how each figure was derived.
fn split_text(one_way: bool, trace_window_s: Option<f64>) -> String {
    format!(
        "{}; loss per direction from the reflector's record of which probes reached it, {}; rate from the packet trains' dispersion (median), else from the best second of the TCP transfers; probes during page loads, transfers and outages left out of delay{}",
        if one_way { "one-way delays from the agent's and reflector's clocks (trusted)" } else { "RTT split evenly (clocks not trusted)" },
        match trace_window_s {
            Some(w) => format!("written as the measured loss rate of each {w} s window (a trace, outages included)"),
            None => "fitted as a Gilbert chain per probe packet (a replay advances the loss state with every packet)".to_string(),
        },
        if trace_window_s.is_some() { "" } else { " and loss" }
    )
}

/// The rate one way: the median of the packet trains, else the best second
/// of the TCP transfers (which loss and a long RTT keep below the link's);
/// with where it came from and how many samples.
fn peak_rate(records: &[Record], dir: &str) -> Option<(f64, &'static str, usize)> {
    let trains: Vec<f64> = records
        .iter()
        .filter_map(|r| match &r.m {
            Measurement::Rate { direction, rate_bps, .. } if direction == dir => *rate_bps,
            _ => None,
        })
        .collect();
    if let Some(d) = Dist::of(&trains) {
        return Some((d.median, "packet trains", d.n));
    }
    records
        .iter()
        .filter_map(|r| match &r.m {
            Measurement::Bulk { direction, peak_bps, .. } if direction == dir => *peak_bps,
            _ => None,
        })
        .reduce(f64::max)
        .map(|b| (b, "best second of TCP transfers", 1))
}

/// An empirical jitter around the median, when its spread is worth one:
/// its sample file (in `files`) and key (in `t`); returns the file's name.
fn jitter(t: &mut toml::Table, files: &mut Vec<(String, String)>, delays: &[f64], d: &Dist, dir: &str, stem: &str) -> Option<String> {
    if d.p95 - d.p5 < 0.2 {
        return None;
    }
    let jitter_file = format!("{stem}.jitter-{dir}.txt");
    let step = (delays.len() / 5000).max(1);
    let mut text = format!("# extra one-way delay ({dir}) in ms around {:.3} ms, from aerolink fit\n", d.median);
    for x in delays.iter().step_by(step) {
        let _ = std::fmt::Write::write_fmt(&mut text, format_args!("{:.3}\n", x - d.median));
    }
    files.push((jitter_file.clone(), text));
    let j = toml::Table::from_iter([("dist".to_string(), "empirical".into()), ("file".to_string(), jitter_file.clone().into())]);
    t.insert("jitter".into(), toml::Value::Table(j));
    Some(jitter_file)
}

fn loss_trace_text(rates: &[f64], dir: &str, window_s: f64) -> String {
    let mut text = format!("# loss rate ({dir}) per {window_s} s window from the log's start, from aerolink fit\n");
    for r in rates {
        let _ = std::fmt::Write::write_fmt(&mut text, format_args!("{:.4}%\n", r * 100.0));
    }
    text
}

/// The profile's `loss` for a fitted model (none for no loss).
fn loss_value(loss: &LossFit) -> Option<toml::Value> {
    match loss.model.as_str() {
        "none" => None,
        "bernoulli" => Some(format!("{:.4}%", loss.mean * 100.0).into()),
        _ => {
            let l = toml::Table::from_iter([
                ("model".to_string(), "gilbert-elliott".into()),
                ("p".to_string(), format!("{:.4}%", loss.p * 100.0).into()),
                ("r".to_string(), format!("{:.4}%", loss.r * 100.0).into()),
                ("bad_loss".to_string(), "100%".into()),
                ("good_loss".to_string(), "0%".into()),
            ]);
            Some(toml::Value::Table(l))
        }
    }
}

/// `[link] outages = [...]`, each dropping everything.
fn outages_table(outages: &[flight::Outage]) -> toml::Value {
    let list: Vec<toml::Value> = outages
        .iter()
        .map(|w| {
            toml::Value::Table(toml::Table::from_iter([
                ("start".to_string(), format!("{:.1} s", w.start_s).into()),
                ("duration".to_string(), format!("{:.1} s", w.duration_s).into()),
                ("mode".to_string(), "drop".into()),
            ]))
        })
        .collect();
    toml::Value::Table(toml::Table::from_iter([("outages".to_string(), toml::Value::Array(list))]))
}

/// Two-sample Kolmogorov–Smirnov test: the statistic D and its asymptotic
/// p-value (are `a` and `b` drawn from one distribution?).
pub fn ks_two_sample(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut a: Vec<f64> = a.to_vec();
    let mut b: Vec<f64> = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (n, m) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return (1.0, 0.0);
    }
    let (mut i, mut j, mut d) = (0usize, 0usize, 0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / n - j as f64 / m).abs());
    }
    let en = (n * m / (n + m)).sqrt();
    let lambda = (en + 0.12 + 0.11 / en) * d;
    let mut p = 0.0;
    for k in 1..=100 {
        let k = k as f64;
        p += 2.0 * (-1f64).powf(k - 1.0) * (-2.0 * k * k * lambda * lambda).exp();
    }
    (d, p.clamp(0.0, 1.0))
}

/// Per-window loss values of a log, for comparing a replay with a flight.
pub fn loss_windows(records: &[Record], window_s: f64) -> Vec<f64> {
    let f = flight::analyze(records, 0, "", &flight::Options { loss_window_s: window_s, ..Default::default() });
    f.phases.into_iter().next().map(|p| p.loss_windows.values).unwrap_or_default()
}

/// The fitted values of `summary` in a few lines for a terminal.
pub fn describe(summary: &FitSummary) -> String {
    let mut out = String::new();
    for (dir, s) in [("down", &summary.down), ("up", &summary.up)] {
        let l = &s.loss;
        let loss_text = match l.model.as_str() {
            "gilbert-elliott" => format!("Gilbert p = {:.3} ± {:.3} %, r = {:.1} ± {:.1} % (mean {:.2} %)", l.p * 100.0, l.p_ci * 100.0, l.r * 100.0, l.r_ci * 100.0, l.mean * 100.0),
            "bernoulli" => format!("random {:.2} %", l.mean * 100.0),
            _ => "none".into(),
        };
        let rate = s.rate_bps.map_or("not measured (no rate or throughput test)".into(), |r| format!("{} (from {})", fmt_rate(r), s.rate_from.unwrap_or("?")));
        out.push_str(&format!("{dir:>4}: delay {:.1} ms (p5–p95 {:.1}–{:.1}), rate {rate}, loss {loss_text}\n", s.delay_ms, s.delay_p5_ms, s.delay_p95_ms));
    }
    let outages = summary.outages.len();
    match summary.loss_trace_window_s {
        Some(w) => out.push_str(&format!("loss written as a trace per {w} s window (the chain above is for reference); outages: {outages}, in the trace\n")),
        None => out.push_str(&format!("outages: {outages}\n")),
    }
    out
}

#[cfg(test)]
mod tests {
    /// Found by the fuzzer (flight_log, out of memory): the loss trace has
    /// a window per 100 s of the log, so a record dated 10^12 s on asked
    /// for 10^10 windows.
    #[test]
    fn a_log_spanning_months_is_refused_not_allocated() {
        let line = |n: u64, t: f64| {
            format!(
                r#"{{"n":{n},"t":{t},"clock":{{"synced":false,"maxerror_us":16000000}},"kind":"udp","seq":{n},"session":1,"rtt_ms":770.0,"up_ms":384.0,"down_ms":386.0,"rx_max":{n},"rx_bitmap":1}}"#
            )
        };
        let mut rs: Vec<Record> = (0..20).map(|n| serde_json::from_str(&line(n, 1.8e9 + 2.0 * n as f64)).unwrap()).collect();
        let o = Options { name: "x".into(), stem: "x".into(), outage_min_s: 10.0, source: "x".into(), loss_trace_window_s: Some(100.0) };
        assert!(fit(&rs, &o).is_ok());
        rs.push(serde_json::from_str(&line(20, 1.8e12)).unwrap());
        let e = fit(&rs, &o).err().unwrap().to_string();
        assert!(e.contains("days"), "{e}");
    }

    use super::*;
    use rand::{Rng, SeedableRng};

    /// A Gilbert chain with known p and r: the fit's intervals hold them.
    #[test]
    fn the_gilbert_fit_finds_the_chain_that_made_the_losses() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (p, r) = (0.02, 0.3);
        let mut bad = false;
        let s: Vec<bool> = (0..50_000)
            .map(|_| {
                bad = if bad { !rng.random_bool(r) } else { rng.random_bool(p) };
                bad
            })
            .collect();
        let f = fit_loss(&[s]);
        assert_eq!(f.model, "gilbert-elliott");
        assert!((f.p - p).abs() <= f.p_ci && (f.r - r).abs() <= f.r_ci, "{f:?}");
        // Independent losses are Bernoulli.
        let s: Vec<bool> = (0..50_000).map(|_| rng.random_bool(0.05)).collect();
        let f = fit_loss(&[s]);
        assert_eq!(f.model, "bernoulli", "{f:?}");
        assert!((f.mean - 0.05).abs() < 0.005);
        assert_eq!(fit_loss(&[vec![false; 100]]).model, "none");
        // Few probes and no loss among them: p is not known to be 0 (the
        // Wilson interval reaches 1.96² / (n + 1.96²), 3.7 % for 99
        // transitions), and r, never observed, may be anything.
        let f = fit_loss(&[vec![false; 100]]);
        assert!((f.p_ci - 3.8416 / (99.0 + 3.8416)).abs() < 1e-9 && f.r_ci == 1.0, "{f:?}");
    }

    #[test]
    fn a_loss_trace_has_each_windows_rate_per_direction() {
        let probe = |t: f64, up_arrived: Option<bool>, answered: bool| Probe { t, session: 1, seq: t as u64, rtt_ms: answered.then_some(700.0), up_ms: None, down_ms: None, up_arrived };
        // Window 0: 4 probes, one lost going up, one coming down. Window 1:
        // one lost, direction unknown (both ways). Window 2: all lost going
        // up.
        let ps = vec![
            probe(0.0, Some(true), true),
            probe(1.0, Some(false), false),
            probe(2.0, Some(true), false),
            probe(3.0, Some(true), true),
            probe(25.0, None, false),
            probe(40.0, Some(false), false),
            probe(41.0, Some(false), false),
        ];
        assert_eq!(loss_trace(&ps, 0.0, 20.0, true), vec![0.25, 1.0, 1.0]);
        // Down counts probes that reached the reflector, and unknown ones.
        assert_eq!(loss_trace(&ps, 0.0, 20.0, false), vec![1.0 / 3.0, 1.0]);
    }

    #[test]
    fn ks_tells_one_distribution_from_another() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let a: Vec<f64> = (0..500).map(|_| rng.random::<f64>()).collect();
        let b: Vec<f64> = (0..500).map(|_| rng.random::<f64>()).collect();
        let c: Vec<f64> = (0..500).map(|_| rng.random::<f64>() * 1.3).collect();
        assert!(ks_two_sample(&a, &b).1 > 0.01);
        assert!(ks_two_sample(&a, &c).1 < 0.001);
    }
}
