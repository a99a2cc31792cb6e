//! `aerolink report --compare A.db B.db`: the same experiments from two
//! stores (two versions of aerolink, two machines, before and after a
//! change) side by side. For every setting, link and series both stores
//! hold, the medians of the headline metric, their ratio B / A with a 95 %
//! bootstrap interval, and whether the difference is more than noise; up
//! front, what differs between the stores (hosts, versions).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::metric::{Better, Metric};
use crate::store::{ExperimentRow, RunRow};
use crate::svg::esc;
use crate::workload::Workload;

/// One setting × link × series in both stores.
#[derive(Clone, Debug, Serialize)]
pub struct CompareRow {
    pub experiment: String,
    /// The workload and its parameters, as the report names them.
    pub setting: String,
    pub profile: String,
    pub series: String,
    pub metric: Metric,
    pub lower_is_better: bool,
    pub a_median: f64,
    pub a_runs: usize,
    pub b_median: f64,
    pub b_runs: usize,
    /// B's median over A's.
    pub ratio: f64,
    pub ratio_lo: f64,
    pub ratio_hi: f64,
    pub verdict: Change,
}

/// B against A: better or worse when the ratio's interval excludes 1, the
/// same when it does not (the difference is within the noise, or too few
/// runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Better,
    Worse,
    Same,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Better => "better",
            Change::Worse => "worse",
            Change::Same => "same",
        }
    }
}

/// So a verdict reads against its name, as in the JSON.
impl PartialEq<&str> for Change {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What a store was made on.
#[derive(Clone, Debug, Serialize, Default)]
pub struct Provenance {
    pub hosts: BTreeSet<String>,
    /// Cores and kernel of the machines (empty for old stores).
    pub machines: BTreeSet<String>,
    pub versions: BTreeSet<String>,
    pub runs: usize,
}

fn provenance(runs: &[RunRow]) -> Provenance {
    Provenance {
        hosts: runs.iter().map(|r| r.host.clone()).collect(),
        machines: runs.iter().map(|r| r.machine.clone()).filter(|m| !m.is_empty()).collect(),
        versions: runs.iter().map(|r| r.aerolink_version.clone()).collect(),
        runs: runs.len(),
    }
}

type Key = (String, String, String, String);

fn grouped(runs: &[RunRow]) -> BTreeMap<Key, (Metric, Vec<f64>)> {
    let mut out: BTreeMap<Key, (Metric, Vec<f64>)> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.ok) {
        let Ok(w) = serde_json::from_str::<Workload>(&r.workload_json) else { continue };
        let metric = w.headline();
        let Some(v) = r.metrics.get(&metric).copied().filter(|v| v.is_finite()) else { continue };
        let key = (r.experiment.clone(), format!("{} {}", r.workload, r.params), r.profile.clone(), r.series.name.clone());
        out.entry(key).or_insert_with(|| (metric, Vec::new())).1.push(v);
    }
    out
}

/// Every setting × link × series both stores hold, compared.
pub fn compare(a: &[RunRow], b: &[RunRow]) -> Vec<CompareRow> {
    let (ga, gb) = (grouped(a), grouped(b));
    let mut rows = Vec::new();
    for (key, (metric, va)) in &ga {
        let Some((_, vb)) = gb.get(key) else { continue };
        let lower = metric.better() == Better::Lower;
        let seed = key.0.bytes().chain(key.1.bytes()).chain(key.2.bytes()).chain(key.3.bytes()).fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        let (ratio, lo, hi) = crate::stats::bootstrap(vb, va, |x, y| x / y, seed);
        let enough = va.len() >= crate::stats::MIN_RUNS && vb.len() >= crate::stats::MIN_RUNS;
        let verdict = if !enough || (lo <= 1.0 && hi >= 1.0) {
            Change::Same
        } else if (hi < 1.0) == lower {
            Change::Better
        } else {
            Change::Worse
        };
        let med = |v: &[f64]| crate::stats::summarize(v).map(|s| s.median).unwrap_or(f64::NAN);
        rows.push(CompareRow {
            experiment: key.0.clone(),
            setting: key.1.clone(),
            profile: key.2.clone(),
            series: key.3.clone(),
            metric: *metric,
            lower_is_better: lower,
            a_median: med(va),
            a_runs: va.len(),
            b_median: med(vb),
            b_runs: vb.len(),
            ratio,
            ratio_lo: lo,
            ratio_hi: hi,
            verdict,
        });
    }
    rows
}

/// The comparison as one self-contained HTML page, in the report's style.
pub fn render(a_label: &str, b_label: &str, a_runs: &[RunRow], b_runs: &[RunRow], experiments: &[ExperimentRow], generated_at: &str) -> String {
    let rows = compare(a_runs, b_runs);
    let (pa, pb) = (provenance(a_runs), provenance(b_runs));
    let mut h = String::new();
    let _ = write!(h, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>aerolink comparison</title><style>{}</style></head><body>", crate::report::CSS);
    let _ = write!(h, "<h1>aerolink comparison</h1><p class=\"meta\">A = <code>{}</code>, B = <code>{}</code>; generated {}.</p>", esc(a_label), esc(b_label), esc(generated_at));
    h.push_str("<table><tr><th></th><th>runs</th><th>hosts</th><th>machines</th><th>aerolink versions</th></tr>");
    for (name, p) in [("A", &pa), ("B", &pb)] {
        let join = |s: &BTreeSet<String>| esc(&s.iter().cloned().collect::<Vec<_>>().join(", "));
        let _ = write!(h, "<tr><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", p.runs, join(&p.hosts), join(&p.machines), join(&p.versions));
    }
    h.push_str("</table>");
    if pa.hosts != pb.hosts || pa.machines != pb.machines {
        h.push_str("<p class=\"worse\">The stores come from different machines: a difference may be the machine's, not aerolink's.</p>");
    }
    if pa.versions != pb.versions {
        h.push_str("<p class=\"note\">The stores come from different aerolink versions.</p>");
    }
    let better = rows.iter().filter(|r| r.verdict == Change::Better).count();
    let worse = rows.iter().filter(|r| r.verdict == Change::Worse).count();
    let _ = write!(h, "<p class=\"note\">{} comparisons: B is better in {better}, worse in {worse}, the same within the noise in {}. Each row compares the medians of the setting's headline metric; the ratio is B / A with a 95 % bootstrap interval, and B differs from A only when that interval excludes 1 (at least {} runs a side).</p>", rows.len(), rows.len() - better - worse, crate::stats::MIN_RUNS);
    if rows.is_empty() {
        h.push_str("<p>The two stores share no experiment, setting, link and series with successful runs.</p>");
    }
    let mut current = String::new();
    for r in &rows {
        if r.experiment != current {
            if !current.is_empty() {
                h.push_str("</table>");
            }
            current = r.experiment.clone();
            let desc = experiments.iter().find(|e| e.name == r.experiment).map(|e| e.description.clone()).unwrap_or_default();
            let _ = write!(
                h,
                "<h2>{}</h2><p>{}</p><table><tr><th>setting</th><th>link</th><th>series</th><th>A median</th><th>B median</th><th>B / A (95 % interval)</th><th>runs A + B</th><th>B is</th></tr>",
                esc(&r.experiment),
                esc(&desc)
            );
        }
        let cls = match r.verdict {
            Change::Same => "",
            v => v.as_str(),
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{cls}\">{:.2}× ({:.2}–{:.2})</td><td>{} + {}</td><td class=\"{cls}\">{}</td></tr>",
            esc(&r.setting),
            esc(&r.profile),
            esc(&r.series),
            r.metric.fmt(r.a_median),
            r.metric.fmt(r.b_median),
            r.ratio,
            r.ratio_lo,
            r.ratio_hi,
            r.a_runs,
            r.b_runs,
            r.verdict.as_str()
        );
    }
    if !current.is_empty() {
        h.push_str("</table>");
    }
    h.push_str("</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(experiment: &str, profile: &str, protocol: &str, plt: f64, host: &str) -> RunRow {
        let w = Workload::Web(crate::workload::Web { protocol: protocol.parse::<aerolink_work::web::Protocol>().unwrap(), page: "4x10KB".into(), depth: 1, resolver: None });
        RunRow {
            experiment: experiment.into(),
            profile: profile.into(),
            workload: "web".into(),
            protocol: protocol.into(),
            params: "4x10KB".into(),
            knobs_json: "{}".into(),
            workload_json: serde_json::to_string(&w).unwrap(),
            host: host.into(),
            aerolink_version: "0.1.0".into(),
            ok: true,
            metrics: [(Metric::PltMs, plt)].into_iter().collect(),
            ..Default::default()
        }
        .with_series()
    }

    #[test]
    fn a_real_difference_is_told_from_noise() {
        let a: Vec<RunRow> = [1000.0, 1010.0, 990.0, 1005.0, 995.0].iter().flat_map(|&t| [run("e", "mss", "h2", t, "m1"), run("e", "mss", "h3", t, "m1")]).collect();
        // B: h2 twice as slow, h3 the same within noise; a series only B has.
        let mut b: Vec<RunRow> = [2000.0, 2020.0, 1980.0, 2010.0, 1990.0].iter().map(|&t| run("e", "mss", "h2", t, "m2")).collect();
        b.extend([1002.0, 1008.0, 992.0, 1001.0, 997.0].iter().map(|&t| run("e", "mss", "h3", t, "m2")));
        b.push(run("e", "mss", "h1", 500.0, "m2"));
        let rows = compare(&a, &b);
        assert_eq!(rows.len(), 2, "{rows:?}");
        let h2 = rows.iter().find(|r| r.series == "h2").unwrap();
        assert!((h2.ratio - 2.0).abs() < 0.05 && h2.ratio_lo > 1.9, "{h2:?}");
        assert_eq!(h2.verdict, "worse");
        let h3 = rows.iter().find(|r| r.series == "h3").unwrap();
        assert_eq!(h3.verdict, "same", "{h3:?}");
        // And the other way round, B faster.
        let back = compare(&b, &a);
        assert_eq!(back.iter().find(|r| r.series == "h2").unwrap().verdict, "better");
        // The page says the machines differ.
        let html = render("a.db", "b.db", &a, &b, &[], "now");
        assert!(html.contains("different machines") && html.contains("2.00×"), "{html}");
        // Too few runs: never a verdict.
        let few = compare(&a[..2], &b[..2]);
        assert!(few.iter().all(|r| r.verdict == "same"), "{few:?}");
    }
}
