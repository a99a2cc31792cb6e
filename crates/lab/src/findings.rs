//! A seed's findings as data, and whether our runs reproduce them.
//!
//! An experiment file carries `[[finding]]` entries:
//!
//! ```toml
//! [[finding]]
//! id = "buffering-is-sooner"
//! claim = "Home-agent buffering finishes the 110 kB download ≈ 4 s sooner than without DAD"
//! seed = "002"
//! where = "§5.6, Fig. 11"
//! metric = "completion_ms"
//! of = { profile = "ldacs1-31k5-ho-buffer" }     # the runs judged
//! vs = { profile = "ldacs1-31k5-ho-no-dad" }     # for a ratio or a difference
//! quantity = "difference"                          # value | ratio | difference
//! paper = -4000                                    # the paper's value, same unit
//! holds = "< 0"                                    # "< x", "> x", "x..y"
//! ```
//!
//! A selection (`of`, `vs`) picks successful runs by `profile` (its name),
//! `series` (the report's series: protocol and knobs, e.g. `"h2"`,
//! `"tcp reno"`, `"tcp quic-tunnel/rate"`) and `params` (the setting as the
//! report names it, e.g. `"20x10KB"`); keys left out match every run.
//! Ours is the median of `metric` over the runs of `of` — or its ratio to,
//! or difference from, the median over `vs` — with a 95 % bootstrap
//! interval (2000 resamples of the runs, seeded by the finding's id). The
//! verdict: **holds** when the whole interval obeys `holds`, **does not
//! hold** when none of it does, **inconclusive** otherwise (too few
//! repetitions for the spread, or fewer than [`MIN_RUNS`] runs a side).

use std::fmt::Write as _;

use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::store::RunRow;

/// What a finding measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Quantity {
    /// The median of `of`.
    Value,
    /// median(of) / median(vs).
    Ratio,
    /// median(of) − median(vs).
    Difference,
}

/// The rule a finding's value must obey.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Rule {
    Below(f64),
    Above(f64),
    Within(f64, f64),
}

impl Rule {
    fn parse(s: &str) -> Option<Rule> {
        let s = s.trim();
        if let Some(x) = s.strip_prefix('<') {
            return x.trim().parse().ok().map(Rule::Below);
        }
        if let Some(x) = s.strip_prefix('>') {
            return x.trim().parse().ok().map(Rule::Above);
        }
        let (a, b) = s.split_once("..")?;
        let (a, b): (f64, f64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        (a <= b).then_some(Rule::Within(a, b))
    }
    fn obeys(&self, v: f64) -> bool {
        match *self {
            Rule::Below(x) => v < x,
            Rule::Above(x) => v > x,
            Rule::Within(a, b) => (a..=b).contains(&v),
        }
    }
    pub fn text(&self) -> String {
        match *self {
            Rule::Below(x) => format!("< {x}"),
            Rule::Above(x) => format!("> {x}"),
            Rule::Within(a, b) => format!("{a}..{b}"),
        }
    }
}

/// Which runs a side of a finding takes.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Select {
    pub profile: Option<String>,
    pub series: Option<String>,
    pub params: Option<String>,
}

impl Select {
    fn matches(&self, r: &RunRow) -> bool {
        self.profile.as_ref().is_none_or(|p| *p == r.profile) && self.series.as_ref().is_none_or(|s| *s == crate::report::series_name(r)) && self.params.as_ref().is_none_or(|p| *p == r.params)
    }
    fn text(&self) -> String {
        let parts: Vec<String> = [("profile", &self.profile), ("series", &self.series), ("params", &self.params)].iter().filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}"))).collect();
        if parts.is_empty() {
            "every run".into()
        } else {
            parts.join(", ")
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub id: String,
    pub claim: String,
    pub seed: String,
    #[serde(rename = "where")]
    pub place: String,
    pub metric: String,
    pub of: Select,
    pub vs: Option<Select>,
    pub quantity: Quantity,
    pub paper: Option<f64>,
    pub holds: Rule,
}

/// Why a `[[finding]]` entry is not usable: its index, key and what is allowed.
#[derive(Debug, thiserror::Error)]
#[error("finding[{index}].{key}: {message}")]
pub struct FindingError {
    pub index: usize,
    pub key: String,
    pub message: String,
}

const KEYS: &[&str] = &["id", "claim", "seed", "where", "metric", "of", "vs", "quantity", "paper", "holds"];

/// The `[[finding]]` entries of an experiment file's text (none if it has
/// none).
pub fn parse(doc: &toml::Table) -> Result<Vec<Finding>, FindingError> {
    let Some(v) = doc.get("finding") else { return Ok(Vec::new()) };
    let arr = v.as_array().ok_or_else(|| FindingError { index: 1, key: "finding".into(), message: "expected [[finding]] tables".into() })?;
    arr.iter().enumerate().map(|(i, v)| parse_one(i + 1, v)).collect()
}

fn parse_one(index: usize, v: &toml::Value) -> Result<Finding, FindingError> {
    let err = |key: &str, message: String| FindingError { index, key: key.into(), message };
    let t = v.as_table().ok_or_else(|| err("finding", "expected a table".into()))?;
    if let Some(k) = t.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(err(k, format!("unknown key; allowed: {}", KEYS.join(", "))));
    }
    let text = |k: &str| -> Result<String, FindingError> { t.get(k).and_then(|v| v.as_str()).map(str::to_string).ok_or_else(|| err(k, "expected text in quotes".into())) };
    let select = |k: &str| -> Result<Option<Select>, FindingError> {
        let Some(v) = t.get(k) else { return Ok(None) };
        let s = v.as_table().ok_or_else(|| err(k, "expected a table like { profile = \"mss\", series = \"h2\", params = \"20x10KB\" }".into()))?;
        if let Some(bad) = s.keys().find(|x| !["profile", "series", "params"].contains(&x.as_str())) {
            return Err(err(k, format!("unknown key {bad:?}; allowed: profile, series, params")));
        }
        let get = |x: &str| -> Result<Option<String>, FindingError> {
            match s.get(x) {
                None => Ok(None),
                Some(v) => v.as_str().map(|s| Some(s.to_string())).ok_or_else(|| err(k, format!("{x}: expected text in quotes"))),
            }
        };
        Ok(Some(Select { profile: get("profile")?, series: get("series")?, params: get("params")? }))
    };
    let quantity = match t.get("quantity").map(|v| v.as_str()) {
        None => Quantity::Value,
        Some(Some("value")) => Quantity::Value,
        Some(Some("ratio")) => Quantity::Ratio,
        Some(Some("difference")) => Quantity::Difference,
        Some(_) => return Err(err("quantity", "expected \"value\", \"ratio\" or \"difference\"".into())),
    };
    let vs = select("vs")?;
    if quantity != Quantity::Value && vs.is_none() {
        return Err(err("vs", format!("a {} needs the runs it compares with: vs = {{ profile = …, series = … }}", if quantity == Quantity::Ratio { "ratio" } else { "difference" })));
    }
    let paper = match t.get("paper") {
        None => None,
        Some(v) => Some(aerolink_link::profile::keys::number(v).ok_or_else(|| err("paper", "expected a number (the paper's value, in the metric's unit)".into()))?),
    };
    let holds_text = text("holds")?;
    let holds = Rule::parse(&holds_text).ok_or_else(|| err("holds", format!("{holds_text:?}: expected \"< x\", \"> x\" or \"x..y\"")))?;
    Ok(Finding { id: text("id")?, claim: text("claim")?, seed: text("seed")?, place: text("where")?, metric: text("metric")?, of: select("of")?.unwrap_or_default(), vs, quantity, paper, holds })
}

/// A finding's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Holds,
    #[serde(rename = "does not hold")]
    DoesNotHold,
    Inconclusive,
    /// No runs to judge it by (not run yet, or every run failed).
    #[serde(rename = "not run")]
    NotRun,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::DoesNotHold => "does not hold",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotRun => "not run",
        }
    }
}

/// What our runs say about a finding.
#[derive(Clone, Debug, Serialize)]
pub struct Judged {
    pub finding: Finding,
    /// Ours, and its 95 % bootstrap interval.
    pub value: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Runs behind each side.
    pub n_of: usize,
    pub n_vs: usize,
    pub verdict: Verdict,
    /// One sentence, when it does not hold or cannot be judged.
    pub why: Option<String>,
}

impl Judged {
    /// Ours as people read it, `0.92× (0.91× to 0.93×)`, if judged.
    pub fn ours_text(&self) -> Option<String> {
        let f = &self.finding;
        let fmt = |x: f64| crate::report::fmt_quantity(&f.metric, f.quantity, x);
        Some(format!("{} ({} to {})", fmt(self.value?), fmt(self.lo?), fmt(self.hi?)))
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

const RESAMPLES: usize = 2000;

/// Runs a side needs before an interval means anything.
pub const MIN_RUNS: usize = 3;

/// Judges `f` by the runs of its experiment.
pub fn judge(f: &Finding, runs: &[RunRow]) -> Judged {
    let take = |s: &Select| -> Vec<f64> { runs.iter().filter(|r| r.ok && s.matches(r)).filter_map(|r| r.metrics.get(&f.metric).copied()).filter(|x| x.is_finite()).collect() };
    let of = take(&f.of);
    let vs = f.vs.as_ref().map(take).unwrap_or_default();
    let mut out = Judged { finding: f.clone(), value: None, lo: None, hi: None, n_of: of.len(), n_vs: vs.len(), verdict: Verdict::NotRun, why: None };
    if of.is_empty() || (f.quantity != Quantity::Value && vs.is_empty()) {
        let side = if of.is_empty() { f.of.text() } else { f.vs.as_ref().map(|s| s.text()).unwrap_or_default() };
        out.why = Some(format!("no successful run with {} has {}", side, f.metric));
        return out;
    }
    let combine = |a: f64, b: f64| match f.quantity {
        Quantity::Value => a,
        Quantity::Ratio => a / b,
        Quantity::Difference => a - b,
    };
    let seed = f.id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let (value, lo, hi) = bootstrap(&of, &vs, combine, seed);
    out.value = Some(value);
    out.lo = Some(lo);
    out.hi = Some(hi);
    if of.len() < MIN_RUNS || (f.quantity != Quantity::Value && vs.len() < MIN_RUNS) {
        out.verdict = Verdict::Inconclusive;
        out.why = Some(format!("{} + {} runs: at least {MIN_RUNS} a side are needed for an interval", of.len(), vs.len()));
        return out;
    }
    let (lo_ok, hi_ok) = (f.holds.obeys(lo), f.holds.obeys(hi));
    // For a range, an interval that straddles it is inconclusive too.
    out.verdict = if lo_ok && hi_ok && f.holds.obeys(value) {
        Verdict::Holds
    } else if !f.holds.obeys(value) && !lo_ok && !hi_ok && !matches!(f.holds, Rule::Within(a, b) if lo < a && hi > b) {
        Verdict::DoesNotHold
    } else {
        Verdict::Inconclusive
    };
    let fmt = |x: f64| crate::report::fmt_quantity(&f.metric, f.quantity, x);
    out.why = match out.verdict {
        Verdict::DoesNotHold => Some(format!("ours, {} ({} to {}), is not {}", fmt(value), fmt(lo), fmt(hi), rule_text(f))),
        Verdict::Inconclusive => Some(format!("the 95 % interval, {} to {}, straddles {} ({} + {} runs): more repetitions would tell", fmt(lo), fmt(hi), rule_text(f), out.n_of, out.n_vs)),
        _ => None,
    };
    out
}

/// The median of `of` combined with the median of `vs` (a ratio, a
/// difference…), and its 95 % bootstrap interval: each side's runs
/// resampled with replacement, [`RESAMPLES`] times, from `seed`.
pub fn bootstrap(of: &[f64], vs: &[f64], combine: impl Fn(f64, f64) -> f64, seed: u64) -> (f64, f64, f64) {
    let value = combine(median(&mut of.to_vec()), if vs.is_empty() { 0.0 } else { median(&mut vs.to_vec()) });
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let draw = |v: &[f64], rng: &mut rand_chacha::ChaCha8Rng| -> f64 {
        if v.is_empty() {
            return 0.0;
        }
        let mut s: Vec<f64> = (0..v.len()).map(|_| v[rng.random_range(0..v.len())]).collect();
        median(&mut s)
    };
    let mut boot: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let a = draw(of, &mut rng);
            let b = draw(vs, &mut rng);
            combine(a, b)
        })
        .collect();
    boot.retain(|x| x.is_finite());
    if boot.is_empty() {
        return (value, value, value);
    }
    boot.sort_by(f64::total_cmp);
    (value, boot[(boot.len() as f64 * 0.025) as usize], boot[((boot.len() as f64 * 0.975) as usize).min(boot.len() - 1)])
}

fn rule_text(f: &Finding) -> String {
    let fmt = |x: f64| crate::report::fmt_quantity(&f.metric, f.quantity, x);
    match f.holds {
        Rule::Below(x) => format!("below {}", fmt(x)),
        Rule::Above(x) => format!("above {}", fmt(x)),
        Rule::Within(a, b) => format!("within {} to {}", fmt(a), fmt(b)),
    }
}

/// Every finding of `findings` judged by `runs`.
pub fn judge_all(findings: &[Finding], runs: &[RunRow]) -> Vec<Judged> {
    findings.iter().map(|f| judge(f, runs)).collect()
}

/// The findings table as text, for the terminal.
pub fn table_text(judged: &[Judged]) -> String {
    let mut s = String::new();
    for j in judged {
        let f = &j.finding;
        let fmt = |x: f64| crate::report::fmt_quantity(&f.metric, f.quantity, x);
        let runs = format!("{} runs{}", j.n_of, if f.vs.is_some() { format!(" vs {}", j.n_vs) } else { String::new() });
        // "0.92× (0.91× to 0.93×, 20 runs vs 20)"
        let ours = j.ours_text().map(|o| format!("{}, {runs})", o.strip_suffix(')').unwrap_or(&o))).unwrap_or_else(|| "–".into());
        let _ = writeln!(s, "[{}] {} — seed {} {}", j.verdict.as_str(), f.claim, f.seed, f.place);
        let _ = writeln!(s, "    paper {}; ours {}{}", f.paper.map(fmt).unwrap_or_else(|| "–".into()), ours, j.why.as_ref().map(|w| format!("; {w}")).unwrap_or_default());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn run(profile: &str, v: f64) -> RunRow {
        RunRow {
            id: 0,
            run_key: String::new(),
            experiment: "x".into(),
            profile: profile.into(),
            profile_hash: String::new(),
            workload: "bulk".into(),
            protocol: "tcp".into(),
            params: "110KB".into(),
            knobs_json: "{}".into(),
            workload_json: String::new(),
            seed: 1,
            rep: 0,
            aerolink_version: String::new(),
            host: String::new(),
            machine: String::new(),
            started_at: String::new(),
            duration_s: 0.0,
            ok: true,
            error: None,
            setup_ms: 0.0,
            teardown_ms: 0.0,
            wire_bytes_down: 0,
            wire_bytes_up: 0,
            metrics: BTreeMap::from([("completion_ms".to_string(), v)]),
            result_json: String::new(),
            profile_json: String::new(),
        }
    }

    fn finding(extra: &str) -> Finding {
        let text = format!("[[finding]]\nid = \"t\"\nclaim = \"a is faster\"\nseed = \"002\"\nwhere = \"Fig. 11\"\nmetric = \"completion_ms\"\nof = {{ profile = \"a\" }}\n{extra}\n");
        parse(&toml::from_str(&text).unwrap()).unwrap_or_else(|e| panic!("{e}")).remove(0)
    }

    #[test]
    fn a_clear_difference_holds_and_a_clear_contrary_one_does_not() {
        let runs: Vec<RunRow> = (0..20).map(|k| run("a", 32_000.0 + k as f64 * 50.0)).chain((0..20).map(|k| run("b", 36_000.0 + k as f64 * 50.0))).collect();
        let j = judge(&finding("vs = { profile = \"b\" }\nquantity = \"difference\"\npaper = -4000\nholds = \"< 0\""), &runs);
        assert_eq!(j.verdict, Verdict::Holds, "{j:?}");
        assert!((j.value.unwrap() + 4000.0).abs() < 1.0 && j.lo.unwrap() < j.value.unwrap() && j.hi.unwrap() > j.value.unwrap());
        let j = judge(&finding("vs = { profile = \"b\" }\nquantity = \"ratio\"\nholds = \"> 1\""), &runs);
        assert_eq!(j.verdict, Verdict::DoesNotHold);
        assert!(j.why.as_ref().unwrap().contains("is not above"), "{:?}", j.why);
    }

    #[test]
    fn overlapping_samples_are_inconclusive_and_missing_ones_not_run() {
        // Too few runs to tell.
        let two = vec![run("a", 30_000.0), run("a", 31_000.0), run("b", 60_000.0), run("b", 61_000.0)];
        let j = judge(&finding("vs = { profile = \"b\" }\nquantity = \"ratio\"\nholds = \"< 1\""), &two);
        assert_eq!(j.verdict, Verdict::Inconclusive);
        assert!(j.why.unwrap().contains("at least 3"));
        // Three noisy runs each, medians 2 % apart: the interval straddles 1.
        let runs = vec![run("a", 30_000.0), run("a", 36_000.0), run("a", 33_000.0), run("b", 31_000.0), run("b", 37_000.0), run("b", 33_700.0)];
        let j = judge(&finding("vs = { profile = \"b\" }\nquantity = \"ratio\"\nholds = \"< 1\""), &runs);
        assert_eq!(j.verdict, Verdict::Inconclusive, "{j:?}");
        let j = judge(&finding("vs = { profile = \"c\" }\nquantity = \"ratio\"\nholds = \"< 1\""), &runs);
        assert_eq!(j.verdict, Verdict::NotRun);
        // A value inside a range.
        let j = judge(&finding("holds = \"25000..40000\""), &runs);
        assert_eq!(j.verdict, Verdict::Holds);
    }

    #[test]
    fn bad_findings_name_the_key() {
        for (extra, key) in [("holds = \"about 3\"", "holds"), ("quantity = \"ratio\"\nholds = \"< 1\"", "vs"), ("holds = \"< 1\"\ncolour = 3", "colour"), ("holds = \"< 1\"\nquantity = \"mean\"", "quantity")] {
            let text = format!("[[finding]]\nid = \"t\"\nclaim = \"c\"\nseed = \"1\"\nwhere = \"w\"\nmetric = \"m\"\n{extra}\n");
            let e = parse(&toml::from_str(&text).unwrap()).unwrap_err().to_string();
            assert!(e.starts_with("finding[1].") && e.contains(key), "{e}");
        }
    }
}
