//! Which stored runs measure a catalogue entry, and the entry's verdict
//! from them by the policy of `findings/README.md` ([`crate::catalogue`]).
//!
//! An experiment file maps entries to its runs and says nothing of the
//! paper's number or the rule — those are the catalogue's:
//!
//! ```toml
//! [[judge]]
//! id = "quic-beats-h1-mss"                 # the catalogue entry
//! metric = "plt_ms"
//! of = { profile = "mss", series = "h3", params = "10x100KB" }
//! vs = { profile = "mss", series = "h1", params = "10x100KB" }
//! setup = "quinn with cubic, not 2016 gQUIC"  # where ours departs from the entry's conditions
//! ```
//!
//! Keys: `metric`; `of` and `vs` (runs by `profile`, `series`, `params`),
//! or `cases = [{ of, vs }, …]` where the paper averages over cases or
//! says "up to" / "in all": `over = "mean"` (rule 3: geometric mean of
//! per-case ratios, arithmetic otherwise), `"most"` (rule 4, "up to": the
//! case most extreme in the paper's direction) or `"least"` ("in all": the
//! case least favourable); a case's `group` averages the cases sharing it
//! before `"most"`/`"least"` chooses among groups ("the least favourable
//! site, averaged over the offered rates"); `statistic` over the repetitions (`mean`, the
//! default, `median`, `p80`, `p95`, `sd`, `max`); `quantity` (`value`,
//! `ratio`, `difference`; by default from the entry's kind and whether
//! `vs` is given); `scale` (ours × scale is in the entry's unit, e.g.
//! 0.001 for ms → s); `per` (a count of round trips: each repetition's
//! value divided by `per` and rounded, rule "count"); `setup`;
//! `explanation` (the hypothesis a mapping tests: judged by `experiment
//! check FILE` only, never the entry's verdict in the catalogue).
//!
//! The interval is a 95 % percentile bootstrap over 10 000 resamples, each
//! side of each case resampled on its own, seeded by the entry's id; with
//! fewer than 10 repetitions a side the verdict is inconclusive.

use crate::metric::{Metric, UnknownMetric};
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::catalogue::{Entry, Kind, Verdict, MIN_REPS, RESAMPLES};
use crate::store::RunRow;

/// Which runs a side of a mapping takes: by `profile` (its name), `series`
/// (the report's series: protocol and knobs, e.g. `"h2"`, `"tcp reno"`,
/// `"tcp quic-tunnel/rate"`) and `params` (the setting as the report names
/// it, e.g. `"20x10KB"`); keys left out match every run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Select {
    pub profile: Option<String>,
    pub series: Option<String>,
    pub params: Option<String>,
}

impl Select {
    /// `{ profile = "mss", series = "h2", params = "20x10KB" }`; keys left
    /// out match every run.
    pub fn parse(v: &toml::Value) -> Result<Select, String> {
        let s = v.as_table().ok_or("expected a table like { profile = \"mss\", series = \"h2\", params = \"20x10KB\" }")?;
        if let Some(bad) = s.keys().find(|x| !["profile", "series", "params"].contains(&x.as_str())) {
            return Err(format!("unknown key {bad:?}; allowed: profile, series, params"));
        }
        let get = |x: &str| -> Result<Option<String>, String> {
            match s.get(x) {
                None => Ok(None),
                Some(v) => v.as_str().map(|s| Some(s.to_string())).ok_or_else(|| format!("{x}: expected text in quotes")),
            }
        };
        Ok(Select { profile: get("profile")?, series: get("series")?, params: get("params")? })
    }
    pub fn matches(&self, r: &RunRow) -> bool {
        self.profile.as_ref().is_none_or(|p| *p == r.profile) && self.series.as_ref().is_none_or(|s| *s == r.series.name) && self.params.as_ref().is_none_or(|p| *p == r.params)
    }
    pub fn text(&self) -> String {
        let parts: Vec<String> = [("profile", &self.profile), ("series", &self.series), ("params", &self.params)].iter().filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}"))).collect();
        if parts.is_empty() {
            "every run".into()
        } else {
            parts.join(", ")
        }
    }
}

/// How a mapping forms its quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    Value,
    Ratio,
    Difference,
}

/// How several cases make one quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Over {
    Mean,
    Most,
    Least,
}

/// The statistic over a side's repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Statistic {
    Mean,
    Median,
    P80,
    P95,
    Sd,
    Max,
}

impl Statistic {
    fn parse(s: &str) -> Option<Statistic> {
        Some(match s {
            "mean" => Statistic::Mean,
            "median" => Statistic::Median,
            "p80" => Statistic::P80,
            "p95" => Statistic::P95,
            "sd" => Statistic::Sd,
            "max" => Statistic::Max,
            _ => return None,
        })
    }
    pub fn of(self, v: &[f64]) -> f64 {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let pct = |p: f64| {
            let mut s = v.to_vec();
            s.sort_by(f64::total_cmp);
            // Linear interpolation between order statistics.
            let x = p * (s.len() - 1) as f64;
            let (i, f) = (x.floor() as usize, x - x.floor());
            if i + 1 < s.len() {
                s[i] + f * (s[i + 1] - s[i])
            } else {
                s[i]
            }
        };
        match self {
            Statistic::Mean => mean,
            Statistic::Median => pct(0.5),
            Statistic::P80 => pct(0.8),
            Statistic::P95 => pct(0.95),
            Statistic::Max => v.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            Statistic::Sd if v.len() > 1 => (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt(),
            Statistic::Sd => 0.0,
        }
    }
}

/// One case: the runs measured and, for a ratio or difference, the runs
/// they are compared with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Case {
    pub of: Select,
    pub vs: Option<Select>,
    /// Cases with the same group are averaged first, and `over` chooses
    /// among the groups ("in the least favourable site, averaged over the
    /// offered rates"); `None`: every case its own group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// A `[[judge]]` entry of an experiment file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mapping {
    pub id: String,
    pub metric: Metric,
    pub cases: Vec<Case>,
    pub over: Over,
    pub statistic: Statistic,
    pub quantity: Option<Form>,
    pub scale: f64,
    pub per: Option<f64>,
    pub setup: Option<String>,
    /// The hypothesis this mapping tests (`explanation`): it judges its
    /// entry in `experiment check FILE` only, never as the entry's verdict
    /// in the catalogue, where the experiment that measures the entry as
    /// the study did speaks.
    pub explanation: Option<String>,
}

/// Why a `[[judge]]` entry is not usable.
#[derive(Debug, thiserror::Error)]
#[error("judge[{index}].{key}: {message}")]
pub struct JudgeError {
    pub index: usize,
    pub key: String,
    pub message: String,
}

const KEYS: &[&str] = &["id", "metric", "of", "vs", "cases", "over", "statistic", "quantity", "scale", "per", "setup", "explanation"];

/// The `[[judge]]` entries of an experiment file (none if it has none).
pub fn parse(doc: &toml::Table) -> Result<Vec<Mapping>, JudgeError> {
    let Some(v) = doc.get("judge") else { return Ok(Vec::new()) };
    let arr = v.as_array().ok_or_else(|| JudgeError { index: 1, key: "judge".into(), message: "expected [[judge]] tables".into() })?;
    arr.iter().enumerate().map(|(i, v)| parse_one(i + 1, v)).collect()
}

fn parse_one(index: usize, v: &toml::Value) -> Result<Mapping, JudgeError> {
    let err = |key: &str, message: String| JudgeError { index, key: key.into(), message };
    let t = v.as_table().ok_or_else(|| err("judge", "expected a table".into()))?;
    if let Some(k) = t.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(err(k, format!("unknown key; allowed: {} (the paper's number and the rule are the catalogue's)", KEYS.join(", "))));
    }
    let text = |k: &str| -> Result<String, JudgeError> { t.get(k).and_then(|v| v.as_str()).map(str::to_string).ok_or_else(|| err(k, "expected text in quotes".into())) };
    let select = |k: &str, v: Option<&toml::Value>| -> Result<Option<Select>, JudgeError> { v.map(|v| Select::parse(v).map_err(|m| err(k, m))).transpose() };
    let cases = match (t.get("cases"), t.get("of")) {
        (Some(_), Some(_)) => return Err(err("cases", "give either of/vs or cases = [{ of, vs }, …], not both".into())),
        (Some(toml::Value::Array(a)), None) if !a.is_empty() => a
            .iter()
            .map(|c| {
                let ct = c.as_table().ok_or_else(|| err("cases", "expected tables { of = {…}, vs = {…} }".into()))?;
                if let Some(k) = ct.keys().find(|k| !["of", "vs", "group"].contains(&k.as_str())) {
                    return Err(err("cases", format!("unknown key {k:?}; allowed: of, vs, group")));
                }
                let group = ct.get("group").map(|g| g.as_str().map(str::to_string).ok_or_else(|| err("cases.group", "expected text in quotes".into()))).transpose()?;
                Ok(Case { of: select("cases.of", ct.get("of"))?.ok_or_else(|| err("cases", "each case needs of = {…}".into()))?, vs: select("cases.vs", ct.get("vs"))?, group })
            })
            .collect::<Result<Vec<_>, _>>()?,
        (Some(_), None) => return Err(err("cases", "expected a list of one or more { of, vs }".into())),
        (None, Some(of)) => vec![Case { of: select("of", Some(of))?.unwrap_or_default(), vs: select("vs", t.get("vs"))?, group: None }],
        (None, None) => return Err(err("of", "expected the runs measured: of = { profile = …, series = …, params = … }".into())),
    };
    if cases.iter().any(|c| c.vs.is_some()) != cases.iter().all(|c| c.vs.is_some()) {
        return Err(err("cases", "either every case has vs or none has".into()));
    }
    let over = match t.get("over").map(|v| v.as_str()) {
        None => Over::Mean,
        Some(Some("mean")) => Over::Mean,
        Some(Some("most")) => Over::Most,
        Some(Some("least")) => Over::Least,
        Some(_) => return Err(err("over", "expected \"mean\" (averaged over cases), \"most\" (\"up to\") or \"least\" (\"in all\")".into())),
    };
    let statistic = match t.get("statistic") {
        None => Statistic::Mean,
        Some(v) => v.as_str().and_then(Statistic::parse).ok_or_else(|| err("statistic", "expected mean, median, p80, p95, sd or max".into()))?,
    };
    let quantity = match t.get("quantity").map(|v| v.as_str()) {
        None => None,
        Some(Some("value")) => Some(Form::Value),
        Some(Some("ratio")) => Some(Form::Ratio),
        Some(Some("difference")) => Some(Form::Difference),
        Some(_) => return Err(err("quantity", "expected \"value\", \"ratio\" or \"difference\"".into())),
    };
    let has_vs = cases[0].vs.is_some();
    if quantity.is_some_and(|q| (q == Form::Value) == has_vs) {
        return Err(err("quantity", if has_vs { "a value takes no vs".into() } else { "a ratio or difference needs vs = {…}".into() }));
    }
    let num = |k: &str| -> Result<Option<f64>, JudgeError> {
        match t.get(k) {
            None => Ok(None),
            Some(v) => match aerolink_link::profile::keys::number(v) {
                Some(x) if x > 0.0 && x.is_finite() => Ok(Some(x)),
                _ => Err(err(k, "expected a number above 0".into())),
            },
        }
    };
    Ok(Mapping {
        id: text("id")?,
        metric: text("metric")?.parse().map_err(|e: UnknownMetric| err("metric", e.to_string()))?,
        cases,
        over,
        statistic,
        quantity,
        scale: num("scale")?.unwrap_or(1.0),
        per: num("per")?,
        setup: t.get("setup").map(|_| text("setup")).transpose()?,
        explanation: t.get("explanation").map(|_| text("explanation")).transpose()?,
    })
}

impl Mapping {
    /// The quantity this mapping forms for an entry of `kind`.
    pub fn form(&self, kind: Kind) -> Form {
        if let Some(q) = self.quantity {
            return q;
        }
        match (self.cases[0].vs.is_some(), kind) {
            (false, _) => Form::Value,
            (true, Kind::Difference) => Form::Difference,
            (true, _) => Form::Ratio,
        }
    }
    /// Whether this mapping can judge an entry of `kind`: one sentence if not.
    pub fn fits(&self, kind: Kind) -> Result<(), String> {
        match (kind, self.form(kind)) {
            (Kind::Ratio | Kind::Equal, Form::Ratio) | (Kind::Difference, Form::Difference) | (Kind::Value | Kind::Count, Form::Value) | (Kind::AtLeast | Kind::AtMost, _) => Ok(()),
            // A metric that is itself a ratio (delivered over offered).
            (Kind::Ratio | Kind::Equal, Form::Value) if self.metric.is_ratio() => Ok(()),
            (Kind::Qualitative, _) => Err("a qualitative entry is not judged by number".into()),
            (k, f) => Err(format!("a {} entry cannot be judged by a {f:?} (quantity)", k.as_str())),
        }
    }
}

/// An entry with what our runs say about it.
#[derive(Clone, Debug, Serialize)]
pub struct Judged {
    pub entry: Entry,
    /// The experiment whose runs judged it.
    pub experiment: Option<String>,
    pub metric: Option<Metric>,
    pub form: Option<Form>,
    /// Ours (the point estimate) and its 95 % interval, in the entry's unit.
    pub value: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Repetitions behind the fewest-run side.
    pub reps: usize,
    pub verdict: Verdict,
    /// Why it is not run, inconclusive or does not hold, in one sentence.
    pub why: Option<String>,
    /// Where our setup departs from the entry's conditions.
    pub setup: Option<String>,
}

impl Judged {
    pub fn unjudged(entry: &Entry, verdict: Verdict, why: impl Into<String>) -> Judged {
        Judged { entry: entry.clone(), experiment: None, metric: None, form: None, value: None, lo: None, hi: None, reps: 0, verdict, why: Some(why.into()), setup: None }
    }
}

fn seed_of(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// Judges `entry` by `map` over the runs of `experiment`.
pub fn judge(entry: &Entry, map: &Mapping, experiment: &str, runs: &[RunRow]) -> Judged {
    let mut out = Judged::unjudged(entry, Verdict::NotRun, "");
    out.experiment = Some(experiment.to_string());
    out.metric = Some(map.metric);
    out.setup = match (&map.explanation, &map.setup) {
        (Some(x), Some(s)) => Some(format!("tests an explanation: {x}; {s}")),
        (Some(x), None) => Some(format!("tests an explanation: {x}")),
        (None, s) => s.clone(),
    };
    if entry.kind == Kind::Qualitative {
        out.verdict = Verdict::Qualitative;
        out.why = Some("qualitative: not judged by number".into());
        return out;
    }
    if let Err(why) = map.fits(entry.kind) {
        out.why = Some(why);
        return out;
    }
    let form = map.form(entry.kind);
    out.form = Some(form);
    let take = |s: &Select| -> Vec<f64> {
        runs.iter()
            .filter(|r| r.ok && s.matches(r))
            .filter_map(|r| r.metrics.get(&map.metric).copied())
            .filter(|x| x.is_finite())
            .map(|x| x * map.scale)
            .map(|x| map.per.map_or(x, |p| (x / p).round()))
            .collect()
    };
    let sides: Vec<(Vec<f64>, Vec<f64>)> = map.cases.iter().map(|c| (take(&c.of), c.vs.as_ref().map(take).unwrap_or_default())).collect();
    let need_vs = form != Form::Value;
    if let Some((i, _)) = sides.iter().enumerate().find(|(_, (a, b))| a.is_empty() || (need_vs && b.is_empty())) {
        let c = &map.cases[i];
        let side = if sides[i].0.is_empty() { c.of.text() } else { c.vs.as_ref().map(|s| s.text()).unwrap_or_default() };
        out.why = Some(format!("no successful run of {experiment} with {side} has {}", map.metric));
        return out;
    }
    let point = |s: &(Vec<f64>, Vec<f64>)| combine(form, map.statistic.of(&s.0), if need_vs { map.statistic.of(&s.1) } else { 0.0 });
    let paper = entry.paper.expect("a scored entry has the paper's number").centre();
    let points: Vec<f64> = sides.iter().map(point).collect();
    let chosen = chosen_groups(map, form, paper, &points);
    let value = across(form, &chosen.iter().map(|&i| points[i]).collect::<Vec<_>>());
    let reps = chosen.iter().map(|&i| if need_vs { sides[i].0.len().min(sides[i].1.len()) } else { sides[i].0.len() }).min().unwrap_or(0);
    out.value = Some(value);
    out.reps = reps;
    if reps < 3 {
        out.verdict = Verdict::Inconclusive;
        out.why = Some(format!("{reps} repetitions on the smallest side: no interval under 3 (the policy asks {MIN_REPS})"));
        return out;
    }
    let Some((lo, hi)) = interval(&entry.id, map, form, need_vs, &sides, &chosen) else {
        out.verdict = Verdict::Inconclusive;
        out.why = Some("no finite resample (a side of zeros?)".into());
        return out;
    };
    out.lo = Some(lo);
    out.hi = Some(hi);
    if reps < MIN_REPS {
        out.verdict = Verdict::Inconclusive;
        out.why = Some(format!("{reps} repetitions on the smallest side; the policy asks at least {MIN_REPS}"));
        return out;
    }
    out.verdict = crate::catalogue::verdict(entry.kind, entry.paper.expect("scored"), lo, hi);
    out.why = match out.verdict {
        Verdict::DoesNotHold => Some(format!("the interval lies outside {}", crate::catalogue::band_text(entry.kind, entry.paper.expect("scored")))),
        Verdict::DirectionOnly => Some(format!("on the paper's side of {}, but outside its band ({})", fmt_pivot(form), crate::catalogue::band_text(entry.kind, entry.paper.expect("scored")))),
        Verdict::Inconclusive => Some(format!("the interval straddles the band ({}): more repetitions would tell", crate::catalogue::band_text(entry.kind, entry.paper.expect("scored")))),
        _ => None,
    };
    out
}

/// One case's figure: ours alone, or ours against the other side.
fn combine(form: Form, a: f64, b: f64) -> f64 {
    match form {
        Form::Value => a,
        Form::Ratio => a / b,
        Form::Difference => a - b,
    }
}

/// The figure over several cases: the geometric mean of ratios, the mean
/// otherwise.
fn across(form: Form, v: &[f64]) -> f64 {
    if v.len() == 1 {
        v[0]
    } else if form == Form::Ratio {
        (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The cases a mapping judges by, where its cases are grouped: each
/// group's figure over its cases, the group `over` chooses, and its cases.
fn chosen_groups(map: &Mapping, form: Form, paper: f64, points: &[f64]) -> Vec<usize> {
    if map.cases.iter().all(|c| c.group.is_none()) || map.over == Over::Mean {
        return chosen_cases(map.over, form, paper, points);
    }
    let mut groups: Vec<(Option<&str>, Vec<usize>)> = Vec::new();
    for (i, c) in map.cases.iter().enumerate() {
        match groups.iter_mut().find(|g| c.group.is_some() && g.0 == c.group.as_deref()) {
            Some(g) => g.1.push(i),
            None => groups.push((c.group.as_deref(), vec![i])),
        }
    }
    let per_group: Vec<f64> = groups.iter().map(|g| across(form, &g.1.iter().map(|&i| points[i]).collect::<Vec<_>>())).collect();
    let g = chosen_cases(map.over, form, paper, &per_group)[0];
    groups.swap_remove(g).1
}

/// The cases a mapping judges by: all of them (one, or `over = "mean"`),
/// or for "up to" / "in all" the one case chosen by its point estimate on
/// the paper's side of the pivot (for a value, "up to" means the largest).
fn chosen_cases(over: Over, form: Form, paper: f64, points: &[f64]) -> Vec<usize> {
    if points.len() == 1 || over == Over::Mean {
        return (0..points.len()).collect();
    }
    let up = match form {
        Form::Ratio => paper > 1.0,
        Form::Difference => paper > 0.0,
        Form::Value => true,
    };
    let best = (0..points.len()).max_by(|a, b| points[*a].total_cmp(&points[*b]).then(std::cmp::Ordering::Equal));
    let worst = (0..points.len()).min_by(|a, b| points[*a].total_cmp(&points[*b]));
    let pick = match (over, up) {
        (Over::Most, true) | (Over::Least, false) => best,
        _ => worst,
    };
    vec![pick.expect("at least one case")]
}

/// The 95 % percentile bootstrap interval of the figure over the chosen
/// cases ([`RESAMPLES`] resamples, each side resampled on its own, seeded
/// by the entry's id); `None` when no resample is finite.
fn interval(id: &str, map: &Mapping, form: Form, need_vs: bool, sides: &[(Vec<f64>, Vec<f64>)], chosen: &[usize]) -> Option<(f64, f64)> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed_of(id));
    let draw = |v: &[f64], rng: &mut rand_chacha::ChaCha8Rng| -> f64 {
        let s: Vec<f64> = (0..v.len()).map(|_| v[rng.random_range(0..v.len())]).collect();
        map.statistic.of(&s)
    };
    let mut boot: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let per_case: Vec<f64> = chosen
                .iter()
                .map(|&i| {
                    let a = draw(&sides[i].0, &mut rng);
                    let b = if need_vs { draw(&sides[i].1, &mut rng) } else { 0.0 };
                    combine(form, a, b)
                })
                .collect();
            across(form, &per_case)
        })
        .filter(|x| x.is_finite())
        .collect();
    if boot.is_empty() {
        return None;
    }
    boot.sort_by(f64::total_cmp);
    let lo = boot[(boot.len() as f64 * 0.025) as usize];
    let hi = boot[((boot.len() as f64 * 0.975) as usize).min(boot.len() - 1)];
    Some((lo, hi))
}

fn fmt_pivot(f: Form) -> &'static str {
    if f == Form::Difference {
        "0"
    } else {
        "1"
    }
}

/// An experiment's mappings with the runs it stored.
pub struct Source<'a> {
    pub experiment: &'a str,
    pub mappings: &'a [Mapping],
    pub runs: &'a [RunRow],
}

/// Every catalogue entry judged: by the mapping with the most runs behind
/// it where several experiments measure it, else not run (or qualitative).
/// Mappings that test an explanation count only with `explanations`
/// (`experiment check FILE`, FILE's own mappings).
pub fn judge_catalogue(entries: &[Entry], sources: &[Source<'_>], explanations: bool) -> Vec<Judged> {
    entries
        .iter()
        .filter(|e| !e.withdrawn())
        .map(|e| {
            let mut best: Option<Judged> = None;
            for s in sources {
                for m in s.mappings.iter().filter(|m| m.id == e.id && (explanations || m.explanation.is_none())) {
                    let j = judge(e, m, s.experiment, s.runs);
                    let better = match &best {
                        None => true,
                        Some(b) => j.verdict != Verdict::NotRun && (b.verdict == Verdict::NotRun || j.reps > b.reps),
                    };
                    if better {
                        best = Some(j);
                    }
                }
            }
            best.unwrap_or_else(|| {
                if e.kind == Kind::Qualitative {
                    Judged::unjudged(e, Verdict::Qualitative, "qualitative: not judged by number")
                } else {
                    Judged::unjudged(e, Verdict::NotRun, "no experiment measures it yet")
                }
            })
        })
        .collect()
}

/// Every mapping that tests an explanation (`explanation = …`), judged by
/// its own experiment's runs, in the order of the sources.
pub fn judge_explanations(entries: &[Entry], sources: &[Source<'_>]) -> Vec<Judged> {
    let mut out = Vec::new();
    for s in sources {
        for m in s.mappings.iter().filter(|m| m.explanation.is_some()) {
            if let Some(e) = entries.iter().find(|e| e.id == m.id && !e.withdrawn()) {
                out.push(judge(e, m, s.experiment, s.runs));
            }
        }
    }
    out
}

/// A study's agreement: holds over scored entries, and each verdict's count.
#[derive(Clone, Debug, Serialize)]
pub struct Score {
    pub seed: String,
    pub study: String,
    pub scored: usize,
    pub holds: usize,
    pub counts: std::collections::BTreeMap<String, usize>,
}

impl Score {
    pub fn agreement(&self) -> f64 {
        if self.scored == 0 {
            0.0
        } else {
            self.holds as f64 / self.scored as f64
        }
    }
    pub fn text(&self) -> String {
        let counts: Vec<String> = crate::catalogue::Verdict::ALL.iter().filter_map(|v| self.counts.get(v.as_str()).map(|n| format!("{n} {}", v.as_str()))).collect();
        format!("{:.0} % ({} of {} scored entries hold; {})", 100.0 * self.agreement(), self.holds, self.scored, counts.join(", "))
    }
}

/// Each study's score over `judged`.
pub fn scores(judged: &[Judged]) -> Vec<Score> {
    let mut seeds: Vec<String> = judged.iter().map(|j| j.entry.seed.clone()).collect();
    seeds.sort();
    seeds.dedup();
    seeds
        .into_iter()
        .map(|seed| {
            let mine: Vec<&Judged> = judged.iter().filter(|j| j.entry.seed == seed).collect();
            let mut counts = std::collections::BTreeMap::new();
            for j in &mine {
                *counts.entry(j.verdict.as_str().to_string()).or_insert(0) += 1;
            }
            Score {
                study: crate::catalogue::study(&seed).to_string(),
                scored: mine.iter().filter(|j| j.entry.scored()).count(),
                holds: mine.iter().filter(|j| j.verdict == Verdict::Holds).count(),
                counts,
                seed,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_over_repetitions() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(Statistic::Mean.of(&v), 3.0);
        assert_eq!(Statistic::Median.of(&v), 3.0);
        assert!((Statistic::P80.of(&v) - 4.2).abs() < 1e-9);
        assert!((Statistic::Sd.of(&v) - 2.5f64.sqrt()).abs() < 1e-9);
        assert_eq!(Statistic::Max.of(&v), 5.0);
    }

    #[test]
    fn a_mapping_carries_no_rule_of_its_own() {
        let doc: toml::Table = "[[judge]]\nid = \"x\"\nmetric = \"plt_ms\"\nof = { profile = \"mss\" }\npaper = 0.4\n".parse().unwrap();
        let e = parse(&doc).unwrap_err().to_string();
        assert!(e.starts_with("judge[1].paper: unknown key") && e.contains("catalogue"), "{e}");
    }
}
