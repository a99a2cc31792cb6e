//! The report: one self-contained HTML file (inline CSS and SVG, no
//! scripts, no network) that a person who has never seen aerolink can read.
//!
//! Per experiment and per workload setting (a page, an object set, a
//! transfer size): medians with p5–p95 bars grouped by profile × protocol,
//! the physical floor on page-load charts, each protocol's ratio to the
//! baseline, CDFs, goodput time series for bulk transfers, a table of every
//! figure, and how to reproduce it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use aerolink_link::Profile;
use serde_json::{json, Value};

use crate::metric::{bit_rate, Better, Metric, Unit};
use crate::stats::{summarize, Summary};
use crate::store::{ExperimentRow, RunRow};
use crate::svg::{self, esc, Bar};
use crate::workload::Workload;

/// What the report needs to know about a profile (stored with each run).
pub fn profile_summary(p: &Profile) -> Value {
    json!({
        "name": p.name, "description": p.description, "source": p.source, "split": p.split,
        "rtt_ms": p.base_rtt().as_millis_f64(),
        "down_bps": p.down.capacity_bps(), "up_bps": p.up.capacity_bps(),
        "down_loss": p.down.mean_loss(), "up_loss": p.up.mean_loss(),
        "up": p.up.described, "down": p.down.described,
    })
}

/// The physical floor of a page load (domain.md): setup round trips (2, the
/// fewest any protocol here needs: QUIC; TCP + TLS 1.3 needs 3) + dependency
/// depth × RTT + bytes / (rate × (1 − loss)), in ms.
pub fn page_floor_ms(profile: &Value, page_bytes: u64, depth: u32) -> Option<f64> {
    let rtt = profile["rtt_ms"].as_f64()?;
    let transfer = match profile["down_bps"].as_f64() {
        Some(bps) if bps > 0.0 => page_bytes as f64 * 8.0 / (bps * (1.0 - profile["down_loss"].as_f64().unwrap_or(0.0))) * 1e3,
        _ => 0.0,
    };
    Some((2.0 + depth as f64) * rtt + transfer)
}

/// The baseline that compares each series with itself without a PEP.
pub const PEP_BASELINE: &str = "pep:none";

/// The series `s` is compared with: the experiment's baseline, or with
/// `baseline = "pep:none"`, the same series without its PEP.
fn baseline_of(baseline: &str, s: &str, rs: &[&RunRow]) -> String {
    if baseline == PEP_BASELINE {
        rs.iter().find(|r| r.series.name == s).map_or_else(|| s.to_string(), |r| r.series.without_pep.clone())
    } else {
        baseline.to_string()
    }
}

pub const CSS: &str = "body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;color:#222}
h1{font-size:26px;margin-bottom:4px}h2{margin-top:36px;border-bottom:2px solid #ddd;padding-bottom:4px}h3{margin-top:28px}
.meta{color:#555}.note{color:#555;font-size:13px}table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}th{background:#f4f4f4}td:first-child,td:nth-child(2),th:first-child,th:nth-child(2){text-align:left}
.better{color:#1a7f37;font-weight:600}.worse{color:#b42318}.fail{color:#b42318}
svg{max-width:100%;height:auto;background:#fff}svg .t{font-size:14px;font-weight:600}svg .ax{font-size:11px;fill:#333}
svg .grid{stroke:#e6e6e6}svg .err{stroke:#222;stroke-width:1.3}svg .floor{stroke:#000;stroke-dasharray:5 3;stroke-width:1.6}
.charts{display:flex;flex-wrap:wrap;gap:8px}code{background:#f4f4f4;padding:1px 4px}";

/// Rows of one waterfall at most (a bigger page shows every k-th object).
const WATERFALL_ROWS: usize = 80;

/// Below this many runs a series' CDF is drawn as points, not a staircase.
const CDF_MIN_RUNS: usize = 10;

/// Writes the report for `experiments` (all runs of each).
pub fn render(experiments: &[ExperimentRow], runs: &[RunRow], db: &str, generated_at: &str) -> String {
    let mut h = String::new();
    let total = runs.len();
    let failed = runs.iter().filter(|r| !r.ok).count();
    let _ = write!(h, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>aerolink report</title><style>{CSS}</style></head><body>");
    let _ = write!(h, "<h1>aerolink report</h1><p class=\"meta\">{} experiment(s), {total} runs ({failed} failed), from <code>{}</code>; generated {}. aerolink {} emulates aircraft and satellite links in user space and measures real protocol stacks over them: every figure below comes from real kernel TCP, rustls, hyper and quinn traffic through an emulated link.</p>",
        experiments.len(), esc(db), esc(generated_at), env!("CARGO_PKG_VERSION"));
    let _ = write!(h, "<p class=\"note\">How to read it: bars are medians over the repetitions; the whiskers span the 5th to the 95th percentile. On page-load charts the dashed line is the physical floor: 2 setup round trips + dependency depth × RTT + page bytes / (rate × (1 − loss)) — no protocol can load the page faster. Ratios compare each series' median with the baseline's on the same link (below 1 = faster for times, above 1 = better for rates). A series is a protocol plus the knobs that differ from the defaults (cubic, the kernel's initial window, quinn's defaults, Nagle off).</p>");
    if experiments.is_empty() {
        h.push_str("<p>No experiments in this store yet: run <code>aerolink experiment run FILE.toml</code>.</p>");
    }
    findings_section(&mut h, experiments, runs);
    for e in experiments {
        let er: Vec<&RunRow> = runs.iter().filter(|r| r.experiment == e.name).collect();
        experiment_section(&mut h, e, &er);
    }
    h.push_str("</body></html>\n");
    h
}

/// The studies' results these runs measure, judged by the catalogue's
/// policy (crate::judge): each study's agreement score first, then every
/// entry an experiment of this store maps — the claim, the paper's number,
/// ours with its 95 % interval, the verdict and where our setup departs.
fn findings_section(h: &mut String, experiments: &[ExperimentRow], runs: &[RunRow]) {
    let mut maps = Vec::new();
    for e in experiments {
        let Ok(doc) = e.spec_toml.parse::<toml::Table>() else { continue };
        let Ok(m) = crate::judge::parse(&doc) else { continue };
        let er: Vec<RunRow> = runs.iter().filter(|r| r.experiment == e.name).cloned().collect();
        maps.push((e.name.clone(), m, er));
    }
    if maps.iter().all(|(_, m, _)| m.is_empty()) {
        return;
    }
    let sources: Vec<crate::judge::Source<'_>> = maps.iter().map(|(n, m, r)| crate::judge::Source { experiment: n, mappings: m, runs: r }).collect();
    let entries = crate::catalogue::builtin();
    let judged = crate::judge::judge_catalogue(&entries, &sources, false);
    let _ = write!(h, "<h2>The studies' results</h2><p class=\"note\">Each study's agreement: the entries of its catalogue (findings/, written from its text before any run) that hold, over all its scored entries — those no experiment of this store measures count as not run. Ours is the statistic the entry names (the mean unless it says otherwise) over at least 10 repetitions a side, with a 95 % percentile bootstrap interval over 10 000 resamples; bands and verdicts are findings/README.md's.</p><table><tr><th>study</th><th>agreement</th></tr>");
    for sc in crate::judge::scores(&judged) {
        let _ = write!(h, "<tr><td style=\"text-align:left;white-space:normal\">{}</td><td style=\"text-align:left;white-space:normal\">{}</td></tr>", esc(&sc.study), esc(&sc.text()));
    }
    h.push_str("</table><table><tr><th>entry</th><th>claim</th><th>where</th><th>paper</th><th>band</th><th>ours (95 % interval, reps)</th><th>verdict</th></tr>");
    for j in judged.iter().filter(|j| j.experiment.is_some()) {
        let e = &j.entry;
        let f3 = crate::reproductions::fmt3;
        let ours = match (j.value, j.lo, j.hi) {
            (Some(v), Some(lo), Some(hi)) => format!("{} ({}–{}, n = {})", f3(v), f3(lo), f3(hi), j.reps),
            _ => "–".into(),
        };
        let cls = match j.verdict {
            crate::catalogue::Verdict::Holds | crate::catalogue::Verdict::Observed => "better",
            crate::catalogue::Verdict::DoesNotHold | crate::catalogue::Verdict::NotObserved => "worse",
            _ => "",
        };
        let mut notes = j.why.clone().unwrap_or_default();
        if let Some(s) = &j.setup {
            notes = format!("{notes}{}setup: {s}", if notes.is_empty() { "" } else { "; " });
        }
        let _ = write!(h, "<tr><td>{}</td><td style=\"text-align:left;white-space:normal\">{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{ours}</td><td class=\"{cls}\" style=\"white-space:normal\">{}<br><span class=\"note\">{}</span></td></tr>",
            esc(&e.id), esc(&e.claim), esc(&e.seed), esc(&e.place), e.paper.map(|p| p.text()).unwrap_or_else(|| "–".into()), esc(&e.paper.map(|p| crate::catalogue::band_text(e.kind, p)).unwrap_or_default()), j.verdict.as_str(), esc(&notes));
    }
    h.push_str("</table>");
}

fn experiment_section(h: &mut String, e: &ExperimentRow, runs: &[&RunRow]) {
    let ok = runs.iter().filter(|r| r.ok).count();
    let _ = write!(h, "<h2>{}</h2><p>{}</p>", esc(&e.name), esc(&e.description));
    let seeds: BTreeSet<i64> = runs.iter().map(|r| r.seed).collect();
    let hosts: BTreeSet<&str> = runs.iter().map(|r| r.host.as_str()).collect();
    let machines: BTreeSet<&str> = runs.iter().map(|r| r.machine.as_str()).filter(|m| !m.is_empty()).collect();
    let _ = write!(
        h,
        "<p class=\"meta\">{} runs, {ok} succeeded; link seeds {}; host {}{}; reproduce with <code>aerolink experiment run {}</code>.</p>",
        runs.len(),
        seeds.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
        esc(&hosts.iter().copied().collect::<Vec<_>>().join(", ")),
        if machines.is_empty() { String::new() } else { format!(" ({})", esc(&machines.iter().copied().collect::<Vec<_>>().join("; "))) },
        esc(&e.file)
    );
    if hosts.len() > 1 || machines.len() > 1 {
        let _ = write!(h, "<p class=\"worse\">These runs come from {} different machines ({}): timing figures may differ by machine as well as by link (merged shards?). Compare one machine's runs with <code>aerolink report --compare</code>.</p>",
            hosts.len().max(machines.len()), esc(&machines.iter().copied().collect::<Vec<_>>().join("; ")));
    }
    // The links.
    let mut profiles: BTreeMap<String, Value> = BTreeMap::new();
    for r in runs {
        profiles.entry(r.profile.clone()).or_insert_with(|| serde_json::from_str(&r.profile_json).unwrap_or(Value::Null));
    }
    h.push_str("<table><tr><th>profile</th><th>what</th><th>down</th><th>up</th><th>RTT</th><th>loss per direction</th><th>source</th></tr>");
    for (name, p) in &profiles {
        let rate = |k: &str| p[k].as_f64().map(bit_rate).unwrap_or_else(|| "unlimited".into());
        let _ = write!(h, "<tr><td>{}</td><td style=\"text-align:left;white-space:normal\">{}</td><td>{}</td><td>{}</td><td>{:.0} ms</td><td>{:.2}% / {:.2}%</td><td style=\"text-align:left;white-space:normal\" class=\"note\">{}</td></tr>",
            esc(name), esc(p["description"].as_str().unwrap_or("")), rate("down_bps"), rate("up_bps"), p["rtt_ms"].as_f64().unwrap_or(0.0),
            p["down_loss"].as_f64().unwrap_or(0.0) * 100.0, p["up_loss"].as_f64().unwrap_or(0.0) * 100.0, esc(p["source"].as_str().unwrap_or("")));
    }
    h.push_str("</table>");
    // One section per workload setting, smallest first.
    let mut settings: BTreeMap<(String, u64, String), Vec<&RunRow>> = BTreeMap::new();
    for r in runs {
        settings.entry((r.workload.clone(), setting_size(r), r.params.clone())).or_default().push(r);
    }
    at_a_glance(h, e, &settings);
    cabin_curves(h, runs);
    for ((workload, _, params), rs) in &settings {
        setting_section(h, e, workload, params, rs, &profiles);
    }
    let fails: Vec<&&RunRow> = runs.iter().filter(|r| !r.ok).collect();
    if !fails.is_empty() {
        let _ = write!(h, "<h3>Failed runs ({})</h3><table><tr><th>profile</th><th>protocol</th><th>setting</th><th>seed</th><th>reason</th></tr>", fails.len());
        for r in fails.iter().take(50) {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"fail\" style=\"text-align:left;white-space:normal\">{}</td></tr>",
                esc(&r.profile),
                esc(&r.protocol),
                esc(&r.params),
                r.seed,
                esc(r.error.as_deref().unwrap_or(""))
            );
        }
        h.push_str("</table>");
    }
    // Frames the emulator itself lost are in the link's drops: their runs'
    // figures are not the link model's, and the reader must see which.
    let spoiled: Vec<(&&RunRow, f64)> = runs.iter().filter(|r| r.ok).filter_map(|r| r.metrics.get(&Metric::EmulatorRefused).map(|n| (r, *n))).collect();
    if !spoiled.is_empty() {
        let _ = write!(h, "<h3>Runs with frames the emulator lost ({})</h3><p class=\"note\">The kernel refused frames a pump handed on: they are counted in the link's drops, but no link model dropped them, so these runs' figures are not the link's. This is an aerolink bug: please report it with the run's seed.</p><table><tr><th>profile</th><th>protocol</th><th>setting</th><th>seed</th><th>frames refused</th></tr>", spoiled.len());
        for (r, n) in spoiled.iter().take(50) {
            let _ = write!(h, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"fail\">{n}</td></tr>", esc(&r.profile), esc(&r.protocol), esc(&r.params), r.seed);
        }
        h.push_str("</table>");
    }
}

/// A cabin filling up: the median and the slowest passenger's completion
/// time (each the median over the runs) against the passengers, one line
/// per link and size; drawn when the runs sweep two passenger counts or
/// more.
fn cabin_curves(h: &mut String, runs: &[&RunRow]) {
    // (profile, size and direction) → passengers → the runs' values of
    // each metric.
    type ByPassengers = BTreeMap<u16, [Vec<f64>; 2]>;
    let mut by: BTreeMap<(String, String), ByPassengers> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.ok) {
        let Ok(Workload::Cabin(c)) = serde_json::from_str::<Workload>(&r.workload_json) else { continue };
        let v = by.entry((r.profile.clone(), c.what())).or_default().entry(c.passengers).or_default();
        for (i, m) in [Metric::CompletionMs, Metric::CompletionMsMax].into_iter().enumerate() {
            v[i].extend(r.metrics.get(&m).copied());
        }
    }
    if by.values().all(|x| x.len() < 2) {
        return;
    }
    let sizes: BTreeSet<&str> = by.keys().map(|k| k.1.as_str()).collect();
    // The links' names less what they share, so the legend fits.
    let names: Vec<&str> = by.keys().map(|k| k.0.as_str()).collect();
    let common = names.iter().skip(1).fold(names[0].len(), |n, x| names[0].bytes().zip(x.bytes()).take(n).take_while(|(a, b)| a == b).count());
    let common = if names.len() > 1 { names[0][..common].rfind('-').map_or(0, |i| i + 1) } else { 0 };
    let _ = write!(
        h,
        "<h3>As the cabin fills</h3><p class=\"note\">Each point: the median over the runs with that many passengers moving their bytes at once (\"up\": sending){}.</p>",
        if common > 0 { format!("; links {}…", esc(&names[0][..common])) } else { String::new() }
    );
    for (i, who) in ["median passenger", "slowest passenger"].into_iter().enumerate() {
        let lines: Vec<(String, Vec<(f64, f64)>)> = by
            .iter()
            .map(|((p, b), xs)| {
                let p = &p[common..];
                let name = if sizes.len() > 1 { format!("{p}, {b}") } else { p.to_string() };
                (name, xs.iter().filter_map(|(n, v)| summarize(&v[i]).map(|s| (*n as f64, s.median / 1e3))).collect())
            })
            .collect();
        h.push_str(&svg::lines_with(who, "passengers", "completion time (s)", &lines, false, None, false));
    }
    // The capacity question: how many share the link before the median
    // passenger takes twice as long as the fewest did.
    let _ = write!(h, "<p class=\"note\">");
    for ((p, b), xs) in &by {
        let medians: Vec<(u16, f64)> = xs.iter().filter_map(|(n, v)| summarize(&v[0]).map(|s| (*n, s.median))).collect();
        let _ = write!(h, "{}, {}: {}. ", esc(p), esc(b), doubling_text(&medians));
    }
    h.push_str("</p>");
}

/// Where the median passenger's time first reaches twice its value at the
/// smallest cabin swept, from `(passengers, median ms)` in order.
fn doubling_text(medians: &[(u16, f64)]) -> String {
    let Some(&(n0, t0)) = medians.first() else { return String::new() };
    match medians.iter().position(|&(_, t)| t >= 2.0 * t0) {
        Some(i) => format!("the median passenger's time doubles ({:.2} s with {n0}, {:.2} s) at {} passengers; {} still under twice", t0 / 1e3, medians[i].1 / 1e3, medians[i].0, medians[i - 1].0),
        None => format!("the median passenger's time stays under twice its {:.2} s with {n0} up to {} passengers", t0 / 1e3, medians.last().map_or(n0, |m| m.0)),
    }
}

/// Bytes a setting moves, to order settings from small to large.
fn setting_size(r: &RunRow) -> u64 {
    match serde_json::from_str::<Workload>(&r.workload_json) {
        Ok(Workload::Messages(crate::workload::Messages { rate_bps, .. })) => rate_bps as u64,
        Ok(Workload::Realtime(crate::workload::Realtime { count, .. })) => count as u64,
        Ok(w) => w.expected_bytes(),
        Err(_) => 0,
    }
}

/// One table up front: each setting × link, every series' median and its
/// ratio to the baseline.
fn at_a_glance(h: &mut String, e: &ExperimentRow, settings: &BTreeMap<(String, u64, String), Vec<&RunRow>>) {
    let mut series: Vec<String> = settings.values().flatten().map(|r| r.series.name.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    if let Some(b) = &e.baseline {
        if let Some(i) = series.iter().position(|s| s == b) {
            let s = series.remove(i);
            series.insert(0, s);
        }
    }
    if series.is_empty() {
        return;
    }
    let baseline = e.baseline.clone().filter(|b| series.contains(b) || b == PEP_BASELINE).unwrap_or_else(|| series[0].clone());
    let against = if baseline == PEP_BASELINE { "the same series without a PEP".to_string() } else { esc(&baseline) };
    let _ = write!(h, "<h3>At a glance</h3><p class=\"note\">Median of each series; in brackets its ratio to {against} on the same link and setting (below 1 = faster, for times).</p><table><tr><th>setting</th><th>link</th>");
    for s in &series {
        let _ = write!(h, "<th>{}</th>", esc(s));
    }
    h.push_str("</tr>");
    for ((workload, _, params), rs) in settings {
        let Some(w) = rs.first().and_then(|r| serde_json::from_str::<Workload>(&r.workload_json).ok()) else { continue };
        let metric = w.headline();
        let lower_better = metric.better() == Better::Lower;
        let profiles: BTreeSet<&str> = rs.iter().map(|r| r.profile.as_str()).collect();
        for p in profiles {
            let med = |s: &str| summarize(&rs.iter().filter(|r| r.ok && r.profile == p && r.series.name == s).filter_map(|r| r.metrics.get(&metric).copied()).collect::<Vec<_>>()).map(|x| x.median);
            let _ = write!(h, "<tr><td>{workload} {}</td><td>{}</td>", esc(params), esc(p));
            for s in &series {
                let base_s = baseline_of(&baseline, s, rs);
                let base = med(&base_s);
                let baseline = &base_s;
                match med(s) {
                    Some(v) => {
                        let ratio = base.map(|b| v / b);
                        let cls = match ratio {
                            Some(r) if s != baseline && (r - 1.0).abs() > 0.05 && ((r < 1.0) == lower_better) => "better",
                            Some(r) if s != baseline && (r - 1.0).abs() > 0.05 => "worse",
                            _ => "",
                        };
                        let _ = write!(h, "<td class=\"{cls}\">{}{}</td>", metric.fmt(v), ratio.filter(|_| s != baseline).map(|r| format!(" ({r:.2}×)")).unwrap_or_default());
                    }
                    None => h.push_str("<td>–</td>"),
                }
            }
            h.push_str("</tr>");
        }
    }
    h.push_str("</table>");
}

/// One setting's runs as its section shows them: the headline metric, the
/// links and series in order, and how the charts scale the metric.
struct Setting<'a> {
    rs: &'a [&'a RunRow],
    w: Workload,
    metric: Metric,
    profile_names: Vec<String>,
    series: Vec<String>,
    /// From the metric's unit to the charts' (ms to s, bit/s to kbit/s).
    scale: f64,
    y_label: String,
}

impl<'a> Setting<'a> {
    fn runs<'b>(&'b self, p: &'b str, s: &'b str) -> impl Iterator<Item = &'a RunRow> + 'b {
        self.rs.iter().copied().filter(move |r| r.ok && r.profile == p && r.series.name == s)
    }

    fn values(&self, p: &str, s: &str, m: Metric) -> Vec<f64> {
        self.runs(p, s).filter_map(|r| r.metrics.get(&m).copied()).collect()
    }

    /// The run of `p` and `s` with the median value of the metric.
    fn median_run(&self, p: &str, s: &str) -> Option<&'a RunRow> {
        let mut runs: Vec<&'a RunRow> = self.runs(p, s).filter(|r| r.metrics.contains_key(&self.metric)).collect();
        runs.sort_by(|a, b| a.metrics[&self.metric].total_cmp(&b.metrics[&self.metric]));
        runs.get(runs.len() / 2).copied()
    }
}

fn setting_section(h: &mut String, e: &ExperimentRow, workload: &str, params: &str, rs: &[&RunRow], profiles: &BTreeMap<String, Value>) {
    let w: Option<Workload> = rs.first().and_then(|r| serde_json::from_str(&r.workload_json).ok());
    let Some(w) = w else { return };
    let metric = w.headline();
    let _ = write!(h, "<h3>{workload} — {}</h3>", esc(params));
    let profile_names: Vec<String> = profiles.keys().filter(|p| rs.iter().any(|r| &&r.profile == p)).cloned().collect();
    let mut series: Vec<String> = rs.iter().map(|r| r.series.name.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    // Baseline first, then the rest in name order.
    if let Some(b) = &e.baseline {
        if let Some(i) = series.iter().position(|s| s == b) {
            let s = series.remove(i);
            series.insert(0, s);
        }
    }
    // Times of a second or more charted in s, rates in kbit/s.
    let largest = rs.iter().filter(|r| r.ok).filter_map(|r| r.metrics.get(&metric)).fold(0.0, |a: f64, b| a.max(*b));
    let (scale, unit) = match metric.unit() {
        Unit::Ms if largest >= 1000.0 => (1e-3, " (s)"),
        Unit::Ms => (1.0, " (ms)"),
        Unit::BitRate => (1e-3, " (kbit/s)"),
        _ => (1.0, ""),
    };
    let st = Setting { rs, w, metric, profile_names, series, scale, y_label: format!("{}{unit}", metric.title()) };
    let sums = bar_chart(h, &st, params, profiles);
    setting_table(h, &st, e, &sums);
    h.push_str("<div class=\"charts\">");
    cdfs(h, &st);
    if let Workload::Bulk(_) = st.w {
        bulk_charts(h, &st);
    }
    h.push_str("</div>");
    if matches!(st.w, Workload::Web(_) | Workload::Objects(_)) {
        waterfalls(h, &st);
    }
}

/// Medians with p5–p95 bars by link and series, the physical floor on page
/// loads; returns the summaries by (link, series).
fn bar_chart(h: &mut String, st: &Setting, params: &str, profiles: &BTreeMap<String, Value>) -> BTreeMap<(String, String), Summary> {
    let mut bars = Vec::new();
    let mut marks = Vec::new();
    let mut sums: BTreeMap<(String, String), Summary> = BTreeMap::new();
    let scale = st.scale;
    for p in &st.profile_names {
        let mut row = Vec::new();
        for s in &st.series {
            let sm = summarize(&st.values(p, s, st.metric));
            row.push(sm.as_ref().map(|x| Bar { value: x.median * scale, lo: x.p5 * scale, hi: x.p95 * scale }));
            if let Some(x) = sm {
                sums.insert((p.clone(), s.clone()), x);
            }
        }
        bars.push(row);
        marks.push(match &st.w {
            Workload::Web(crate::workload::Web { page, depth, .. }) => {
                aerolink_work::page::Page::parse(page, *depth).ok().and_then(|pg| page_floor_ms(&profiles[p], pg.total_bytes(), *depth)).map(|f| f * scale)
            }
            _ => None,
        });
    }
    h.push_str(&svg::bars(&format!("{} — {}", st.metric.title(), params), &st.y_label, &st.profile_names, &st.series, &bars, &marks, "physical floor"));
    sums
}

/// Every figure of the setting: per link and series the headline's median,
/// p5, p95 and ratio to the baseline, the workload's other metrics.
fn setting_table(h: &mut String, st: &Setting, e: &ExperimentRow, sums: &BTreeMap<(String, String), Summary>) {
    let metric = st.metric;
    let lower_better = metric.better() == Better::Lower;
    let baseline = e.baseline.clone().filter(|b| st.series.contains(b) || b == PEP_BASELINE).unwrap_or_else(|| st.series[0].clone());
    let against = if baseline == PEP_BASELINE { "no PEP".to_string() } else { esc(&baseline) };
    let _ = write!(h, "<table><tr><th>profile</th><th>protocol</th><th>runs</th><th>median</th><th>p5</th><th>p95</th><th>× {against}</th>");
    let extra = st.w.table_metrics();
    for x in &extra {
        let _ = write!(h, "<th>{} (median)</th>", x.title());
    }
    h.push_str("<th>failed</th></tr>");
    for p in &st.profile_names {
        for s in &st.series {
            let base_s = baseline_of(&baseline, s, st.rs);
            let base = sums.get(&(p.clone(), base_s.clone())).map(|s| s.median);
            let baseline = &base_s;
            let failed = st.rs.iter().filter(|r| !r.ok && &r.profile == p && &r.series.name == s).count();
            let Some(sm) = sums.get(&(p.clone(), s.clone())) else {
                let _ = write!(h, "<tr><td>{}</td><td>{}</td><td>0</td><td colspan=\"{}\">no successful run</td><td class=\"fail\">{failed}</td></tr>", esc(p), esc(s), 4 + extra.len());
                continue;
            };
            let ratio = base.map(|b| sm.median / b);
            let cls = match ratio {
                Some(r) if s != baseline && ((r < 0.95) == lower_better) && (r - 1.0).abs() > 0.05 => "better",
                Some(r) if s != baseline && (r - 1.0).abs() > 0.05 => "worse",
                _ => "",
            };
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{cls}\">{}</td>",
                esc(p),
                esc(s),
                sm.n,
                metric.fmt(sm.median),
                metric.fmt(sm.p5),
                metric.fmt(sm.p95),
                ratio.map(|r| format!("{r:.2}")).unwrap_or("–".into())
            );
            for x in &extra {
                let v = summarize(&st.values(p, s, *x)).map(|q| q.median).unwrap_or(f64::NAN);
                let _ = write!(h, "<td>{}</td>", x.fmt(v));
            }
            let _ = write!(h, "<td class=\"{}\">{failed}</td></tr>", if failed > 0 { "fail" } else { "" });
        }
    }
    h.push_str("</table>");
}

/// CDFs, one chart per link, all on one x scale so links compare; with
/// fewer than CDF_MIN_RUNS runs a series shows its runs as points.
fn cdfs(h: &mut String, st: &Setting) {
    let x_max = st.profile_names.iter().flat_map(|p| st.series.iter().flat_map(move |s| st.values(p, s, st.metric))).fold(0.0, f64::max) * st.scale;
    for p in &st.profile_names {
        let mut lines = Vec::new();
        let mut fewest = usize::MAX;
        for s in &st.series {
            let mut v: Vec<f64> = st.values(p, s, st.metric).into_iter().map(|x| x * st.scale).collect();
            v.sort_by(f64::total_cmp);
            let n = v.len() as f64;
            fewest = fewest.min(v.len());
            lines.push((s.clone(), v.iter().enumerate().map(|(i, x)| (*x, (i + 1) as f64 / n)).collect::<Vec<_>>()));
        }
        let few = fewest < CDF_MIN_RUNS;
        let title = if few { format!("runs on {p} (CDF points)") } else { format!("CDF on {p}") };
        h.push_str(&svg::lines_with(&title, &st.y_label, "fraction of runs", &lines, true, Some(x_max), few));
    }
}

/// Bulk transfers: goodput over time of each series' median run, and
/// throughput against delay, one point per run, as Pantheon draws it (the
/// sender's largest smoothed RTT, the queue it built, and its goodput).
fn bulk_charts(h: &mut String, st: &Setting) {
    for p in &st.profile_names {
        let mut lines = Vec::new();
        for s in &st.series {
            if let Some(r) = st.median_run(p, s) {
                let bins: Vec<f64> = match r.result() {
                    Some(crate::workload::WorkloadResult::Bulk(b)) => b.bins_bytes.iter().map(|x| *x as f64).collect(),
                    _ => Vec::new(),
                };
                let step = aerolink_work::bulk::BIN_MS as f64 / 1e3;
                lines.push((s.clone(), bins.iter().enumerate().map(|(i, b)| (i as f64 * step, b * 8.0 / step / 1e6)).collect()));
            }
        }
        h.push_str(&svg::lines(&format!("goodput on {p}, median run"), "time (s)", "Mbit/s per 100 ms", &lines, true));
    }
    for p in &st.profile_names {
        let pts: Vec<(String, Vec<(f64, f64)>)> = st
            .series
            .iter()
            .map(|s| (s.clone(), st.runs(p, s).filter_map(|r| Some((*r.metrics.get(&Metric::SenderSrttMsMax).filter(|x| **x > 0.0)?, r.metrics.get(&Metric::GoodputBps)? / 1e6))).collect()))
            .collect();
        if pts.iter().any(|(_, v)| !v.is_empty()) {
            h.push_str(&svg::lines_with(&format!("goodput against delay on {p}"), "largest smoothed RTT of the sender (ms)", "goodput (Mbit/s)", &pts, false, None, true));
        }
    }
}

/// Page loads: the median run of each series per link, on one time scale.
fn waterfalls(h: &mut String, st: &Setting) {
    let mut charts = Vec::new();
    for p in &st.profile_names {
        for s in &st.series {
            let Some(r) = st.median_run(p, s) else { continue };
            let Some(result) = r.result() else { continue };
            let objects = result.objects();
            if objects.is_empty() {
                continue;
            }
            // A page of more objects than rows shows every k-th, so the
            // chart still spans the whole load.
            let every = objects.len().div_ceil(WATERFALL_ROWS).max(1);
            let spans: Vec<svg::Span> = objects
                .iter()
                .step_by(every)
                .map(|o| svg::Span { label: o.path.clone(), start: o.start_ms / 1e3, first_byte: o.first_byte_ms / 1e3, end: o.end_ms / 1e3, conn: o.conn, pushed: o.pushed })
                .collect();
            let sub = format!("median run (seed {}), {}", r.seed, if every > 1 { format!("every {every}th of {} objects", objects.len()) } else { format!("{} objects", objects.len()) });
            charts.push((format!("{s} on {p}"), sub, spans));
        }
    }
    let x_max = charts.iter().flat_map(|(_, _, sp)| sp.iter().map(|x| x.end)).fold(0.0, f64::max);
    if !charts.is_empty() {
        h.push_str("<h4>Waterfalls</h4><div class=\"charts\">");
        for (title, sub, spans) in &charts {
            h.push_str(&svg::waterfall(title, sub, spans, x_max));
        }
        h.push_str("</div>");
    }
}
