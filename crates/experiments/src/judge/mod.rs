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
//! default, `p5`, `median`, `p80`, `p95`, `sd`, `max`, `range`, `iqr`); `quantity`
//! (`value`, `ratio`, `difference`; by default from the entry's kind and
//! whether `vs` is given; or `ratio-of-ratios`: cases two at a time, the
//! first's ratio over the second's, pairs averaged geometrically; or
//! `share-below`: the % of `of`'s repetitions below `vs`'s statistic; or
//! `gap-difference`: cases two at a time, each its gap |of / vs − 1|, the
//! first's less the second's; or
//! `linear-fit`: the R² of a straight line through the cases' statistics
//! against each case's `x`, for a qualitative entry's "grows almost
//! linearly"); `scale` (ours × scale is in the entry's unit, e.g.
//! 0.001 for ms → s); `per` (a count of round trips: each repetition's
//! value divided by `per` and rounded, rule "count"); `setup`;
//! `explanation` (the hypothesis a mapping tests: judged by `experiment
//! check FILE` only, never the entry's verdict in the catalogue);
//! `observe` (a qualitative entry's only: `{ what, below | above | runs }`,
//! [`Observe`]; all of one experiment's mappings of the entry are one
//! observation, [`observe`]).
//!
//! The interval is a 95 % percentile bootstrap over 10 000 resamples, each
//! side of each case resampled on its own, seeded by the entry's id; with
//! fewer than 10 repetitions a side the verdict is inconclusive.

use crate::metric::Metric;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::catalogue::{Entry, Kind, Verdict, MIN_REPS, RESAMPLES};
use crate::store::RunRow;

mod keep;
mod mapping;
pub use keep::Earlier;
pub use mapping::{entries, parse, Case, Form, JudgeError, Mapping, Observe, Over, Select, Statistic, Test};

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
    /// Kept from an earlier check (`experiment check --keep`): which one
    /// judged it from its stores, which are not among this check's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
}

impl Judged {
    pub fn unjudged(entry: &Entry, verdict: Verdict, why: impl Into<String>) -> Judged {
        Judged { entry: entry.clone(), experiment: None, metric: None, form: None, value: None, lo: None, hi: None, reps: 0, verdict, why: Some(why.into()), setup: None, kept: None }
    }
}

fn seed_of(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// The setup a mapping states, with the explanation it tests.
fn setup_of(map: &Mapping) -> Option<String> {
    match (&map.explanation, &map.setup) {
        (Some(x), Some(s)) => Some(format!("tests an explanation: {x}; {s}")),
        (Some(x), None) => Some(format!("tests an explanation: {x}")),
        (None, s) => s.clone(),
    }
}

/// Judges `entry` by `map` over the runs of `experiment` (a qualitative
/// entry: observed or not, [`observe`]).
pub fn judge(entry: &Entry, map: &Mapping, experiment: &str, runs: &[RunRow]) -> Judged {
    if entry.kind == Kind::Qualitative {
        return observe(entry, &[map], experiment, runs);
    }
    let mut out = Judged::unjudged(entry, Verdict::NotRun, "");
    out.experiment = Some(experiment.to_string());
    out.metric = Some(map.metric);
    out.setup = setup_of(map);
    if let Err(why) = map.fits(entry.kind) {
        out.why = Some(why);
        return out;
    }
    let form = map.form(entry.kind);
    out.form = Some(form);
    let paper = entry.paper.expect("a scored entry has the paper's number").centre();
    let up = match form {
        Form::Ratio | Form::RatioOfRatios => paper > 1.0,
        Form::Difference | Form::GapDifference => paper > 0.0,
        Form::Value | Form::ShareBelow | Form::LinearFit => true,
    };
    if !measure(&mut out, map, experiment, runs, form, up) {
        return out;
    }
    let (lo, hi) = (out.lo.expect("measured"), out.hi.expect("measured"));
    if out.reps < entry.min_reps() {
        out.verdict = Verdict::Inconclusive;
        out.why = Some(format!("{} repetitions on the smallest side; the policy asks at least {}", out.reps, entry.min_reps()));
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

/// The mapping's quantity over the runs into `out` (its point, 95 %
/// interval and the repetitions behind its fewest-run side); where there
/// is none, `out`'s verdict and why say so and it returns false. `up`:
/// whether the claim's direction is upward, for `over` to choose by.
fn measure(out: &mut Judged, map: &Mapping, experiment: &str, runs: &[RunRow], form: Form, up: bool) -> bool {
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
    let need_vs = !matches!(form, Form::Value | Form::LinearFit);
    // Failed runs of the selection are not in the figure: say how many and
    // why, beside the setup (a time-out leaves out the slowest moments).
    let failed: Vec<&RunRow> = runs.iter().filter(|r| !r.ok && map.cases.iter().any(|c| c.of.matches_but_with(r) || c.vs.as_ref().is_some_and(|v| v.matches_but_with(r)))).collect();
    if let Some(first) = failed.first() {
        let why = first.error.as_deref().unwrap_or("no error recorded");
        let n = failed.len();
        let note = format!("{n} failed run{} of these left out (the first: {why})", if n == 1 { "" } else { "s" });
        out.setup = Some(out.setup.take().map_or(note.clone(), |s| format!("{s}; {note}")));
    }
    if let Some((i, _)) = sides.iter().enumerate().find(|(_, (a, b))| a.is_empty() || (need_vs && b.is_empty())) {
        let c = &map.cases[i];
        let side = if sides[i].0.is_empty() { &c.of } else { c.vs.as_ref().expect("an empty vs side is given") };
        // Rule 5: runs there are, but the event a side asks for (`with`)
        // never happened in them.
        let before = runs.iter().filter(|r| r.ok && side.matches_but_with(r) && r.metrics.contains_key(&map.metric) && side.with.keys().all(|m| r.metrics.contains_key(m))).count();
        if !side.with.is_empty() && before > 0 {
            out.verdict = Verdict::Inconclusive;
            let base = Select { with: Default::default(), ..side.clone() };
            let event: Vec<String> = side.with.iter().map(|(m, v)| format!("{} = {v}", m.name())).collect();
            out.why = Some(format!("none of the {before} successful runs of {experiment} with {} has {}: the event never happened", base.text(), event.join(" and ")));
        } else {
            out.verdict = Verdict::NotRun;
            out.why = Some(format!("no successful run of {experiment} with {} has {}", side.text(), map.metric));
        }
        return false;
    }
    let point = |s: &(Vec<f64>, Vec<f64>)| figure(form, map.statistic, &s.0, &s.1);
    let points: Vec<f64> = sides.iter().map(point).collect();
    let chosen = chosen_groups(map, form, up, &points);
    let value = across(form, &chosen.iter().map(|&i| points[i]).collect::<Vec<_>>(), &xs(map, &chosen));
    let reps = chosen.iter().map(|&i| if need_vs { sides[i].0.len().min(sides[i].1.len()) } else { sides[i].0.len() }).min().unwrap_or(0);
    out.value = Some(value);
    out.reps = reps;
    if reps < 3 {
        out.verdict = Verdict::Inconclusive;
        out.why = Some(format!("{reps} repetitions on the smallest side: no interval under 3 (the policy asks {MIN_REPS})"));
        return false;
    }
    let Some((lo, hi)) = interval(&out.entry.id, map, form, need_vs, &sides, &chosen) else {
        out.verdict = Verdict::Inconclusive;
        out.why = Some("no finite resample (a side of zeros?)".into());
        return false;
    };
    out.lo = Some(lo);
    out.hi = Some(hi);
    true
}

/// A qualitative entry observed by `maps` (all of one experiment's
/// mappings of it) over `experiment`'s runs: **observed** when every
/// mapping's observation is; **not observed** when one is contradicted
/// (its interval entirely on the other side, or the runs it asks for
/// there or absent against `runs = …`); otherwise *not run* where a
/// mapping has no runs, else inconclusive. `why` gives each observation's
/// figure.
pub fn observe(entry: &Entry, maps: &[&Mapping], experiment: &str, runs: &[RunRow]) -> Judged {
    let mut checks: Vec<Judged> = maps.iter().map(|m| observe_one(entry, m, experiment, runs)).collect();
    if checks.len() == 1 {
        return checks.remove(0);
    }
    let has = |v: Verdict| checks.iter().any(|c| c.verdict == v);
    let verdict = if has(Verdict::NotObserved) {
        Verdict::NotObserved
    } else if has(Verdict::NotRun) {
        Verdict::NotRun
    } else if checks.iter().all(|c| c.verdict == Verdict::Observed) {
        Verdict::Observed
    } else {
        Verdict::Inconclusive
    };
    let why: Vec<String> = checks.iter().map(|c| format!("{} ({})", c.why.clone().unwrap_or_default(), c.verdict.as_str())).collect();
    let mut setups: Vec<String> = checks.iter().filter_map(|c| c.setup.clone()).collect();
    setups.dedup();
    let mut out = Judged::unjudged(entry, verdict, why.join("; "));
    out.experiment = Some(experiment.to_string());
    out.metric = checks[0].metric;
    out.reps = checks.iter().map(|c| c.reps).min().unwrap_or(0);
    out.setup = (!setups.is_empty()).then(|| setups.join("; "));
    out
}

/// One mapping's observation ([`observe`]).
fn observe_one(entry: &Entry, map: &Mapping, experiment: &str, runs: &[RunRow]) -> Judged {
    let mut out = Judged::unjudged(entry, Verdict::NotRun, "");
    out.experiment = Some(experiment.to_string());
    out.metric = Some(map.metric);
    out.setup = setup_of(map);
    let Some(o) = map.observe.as_ref().filter(|_| map.fits(entry.kind).is_ok()) else {
        out.why = map.fits(entry.kind).err();
        return out;
    };
    let f3 = crate::catalogue::sig3;
    match o.test {
        Test::SomeRuns | Test::NoRuns => {
            let base = runs.iter().filter(|r| r.ok && map.cases.iter().any(|c| c.of.matches_but_with(r))).count();
            let hits = runs.iter().filter(|r| r.ok && map.cases.iter().any(|c| c.of.matches(r))).count();
            let sides: Vec<String> = map.cases.iter().map(|c| c.of.text()).collect();
            out.reps = base;
            if base == 0 {
                out.why = Some(format!("{}: no successful run of {experiment} with {}", o.what, sides.join(" or ")));
                return out;
            }
            out.value = Some(hits as f64);
            let want_some = o.test == Test::SomeRuns;
            out.verdict = if (hits > 0) == want_some { Verdict::Observed } else { Verdict::NotObserved };
            if !want_some && hits == 0 && base < entry.min_reps() {
                out.verdict = Verdict::Inconclusive;
            }
            out.why = Some(format!("{}: {hits} of {base} runs with {}", o.what, sides.join(" or ")));
        }
        Test::Below(x) | Test::Above(x) => {
            let form = map.form(Kind::Qualitative);
            out.form = Some(form);
            let up = matches!(o.test, Test::Above(_));
            if !measure(&mut out, map, experiment, runs, form, up) {
                out.why = out.why.map(|w| format!("{}: {w}", o.what));
                return out;
            }
            let (v, lo, hi) = (out.value.expect("measured"), out.lo.expect("measured"), out.hi.expect("measured"));
            let test = format!("{} {}", if up { "above" } else { "below" }, f3(x));
            let beyond = if up { lo > x } else { hi < x };
            let against = if up { hi <= x } else { lo >= x };
            out.verdict = match (beyond, against) {
                _ if out.reps < entry.min_reps() => Verdict::Inconclusive,
                (true, _) => Verdict::Observed,
                (_, true) => Verdict::NotObserved,
                _ => Verdict::Inconclusive,
            };
            let tail = match out.verdict {
                _ if out.reps < entry.min_reps() => format!(" — {} repetitions; the policy asks at least {}", out.reps, entry.min_reps()),
                Verdict::Inconclusive => " — the interval straddles it".to_string(),
                Verdict::NotObserved => " — the interval lies on the other side".to_string(),
                _ => String::new(),
            };
            out.why = Some(format!("{}: {} ({}–{}, n = {}), {test}{tail}", o.what, f3(v), f3(lo), f3(hi), out.reps));
        }
    }
    out
}

/// One case's figure from its two sides' repetitions (`vs` empty for a
/// value): the statistic of ours alone, or against the other side's (a
/// ratio of ratios: each case its own ratio), or the share of ours below
/// the other side's statistic.
fn figure(form: Form, stat: Statistic, of: &[f64], vs: &[f64]) -> f64 {
    let theirs = || stat.of(vs);
    match form {
        Form::Value | Form::LinearFit => stat.of(of),
        Form::Ratio | Form::RatioOfRatios => stat.of(of) / theirs(),
        Form::GapDifference => (stat.of(of) / theirs() - 1.0).abs(),
        Form::Difference => stat.of(of) - theirs(),
        Form::ShareBelow => {
            let t = theirs();
            100.0 * of.iter().filter(|x| **x < t).count() as f64 / of.len() as f64
        }
    }
}

/// The cases' places on a linear fit's axis (`x`; 0 where a case has
/// none, which only a linear fit reads and requires).
fn xs(map: &Mapping, chosen: &[usize]) -> Vec<f64> {
    chosen.iter().map(|&i| map.cases[i].x.unwrap_or(0.0)).collect()
}

/// The figure over several cases: the geometric mean of ratios (for a
/// ratio of ratios, of each pair's first case over its second), the R²
/// of a linear fit against the cases' `x`, the mean otherwise.
fn across(form: Form, v: &[f64], x: &[f64]) -> f64 {
    let geometric = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    match form {
        Form::RatioOfRatios => geometric(&v.chunks(2).map(|p| p[0] / p[1]).collect::<Vec<_>>()),
        Form::GapDifference => v.chunks(2).map(|p| p[0] - p[1]).sum::<f64>() / (v.len() / 2) as f64,
        Form::LinearFit => r_squared(x, v),
        _ if v.len() == 1 => v[0],
        Form::Ratio => geometric(v),
        _ => v.iter().sum::<f64>() / v.len() as f64,
    }
}

/// The cases a mapping judges by, where its cases are grouped: each
/// group's figure over its cases, the group `over` chooses, and its cases.
/// The R² of the least-squares line through `(x, y)`: 1 less the share of
/// `y`'s variance the line leaves; NaN where `x` or `y` does not vary.
fn r_squared(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let (sxx, syy): (f64, f64) = (x.iter().map(|a| (a - mx).powi(2)).sum(), y.iter().map(|b| (b - my).powi(2)).sum());
    if sxx == 0.0 || syy == 0.0 {
        return f64::NAN;
    }
    sxy * sxy / (sxx * syy)
}

fn chosen_groups(map: &Mapping, form: Form, up: bool, points: &[f64]) -> Vec<usize> {
    if map.cases.iter().all(|c| c.group.is_none()) || map.over == Over::Mean {
        return chosen_cases(map.over, up, points);
    }
    let mut groups: Vec<(Option<&str>, Vec<usize>)> = Vec::new();
    for (i, c) in map.cases.iter().enumerate() {
        match groups.iter_mut().find(|g| c.group.is_some() && g.0 == c.group.as_deref()) {
            Some(g) => g.1.push(i),
            None => groups.push((c.group.as_deref(), vec![i])),
        }
    }
    let per_group: Vec<f64> = groups.iter().map(|g| across(form, &g.1.iter().map(|&i| points[i]).collect::<Vec<_>>(), &xs(map, &g.1))).collect();
    let g = chosen_cases(map.over, up, &per_group)[0];
    groups.swap_remove(g).1
}

/// The cases a mapping judges by: all of them (one, or `over = "mean"`),
/// or for "up to" / "in all" the one case chosen by its point estimate on
/// the claim's side (`up`: upward; for a value, "up to" means the largest).
fn chosen_cases(over: Over, up: bool, points: &[f64]) -> Vec<usize> {
    if points.len() == 1 || over == Over::Mean {
        return (0..points.len()).collect();
    }
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
    let x = xs(map, chosen);
    let draw = |v: &[f64], rng: &mut rand_chacha::ChaCha8Rng| -> Vec<f64> { (0..v.len()).map(|_| v[rng.random_range(0..v.len())]).collect() };
    let mut boot: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let per_case: Vec<f64> = chosen
                .iter()
                .map(|&i| {
                    let a = draw(&sides[i].0, &mut rng);
                    let b = if need_vs { draw(&sides[i].1, &mut rng) } else { Vec::new() };
                    figure(form, map.statistic, &a, &b)
                })
                .collect();
            across(form, &per_case, &x)
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
    if matches!(f, Form::Difference | Form::GapDifference) {
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
                let mine: Vec<&Mapping> = s.mappings.iter().filter(|m| m.id == e.id && (explanations || m.explanation.is_none())).collect();
                // A qualitative entry: all of an experiment's mappings of it
                // are one observation.
                let each: Vec<Vec<&Mapping>> = match e.kind {
                    Kind::Qualitative if !mine.is_empty() => vec![mine],
                    _ => mine.into_iter().map(|m| vec![m]).collect(),
                };
                for maps in each {
                    let j = if maps.len() == 1 { judge(e, maps[0], s.experiment, s.runs) } else { observe(e, &maps, s.experiment, s.runs) };
                    let better = match &best {
                        None => true,
                        Some(b) => j.verdict != Verdict::NotRun && (b.verdict == Verdict::NotRun || j.reps > b.reps),
                    };
                    if better {
                        best = Some(j);
                    }
                }
            }
            best.unwrap_or_else(|| Judged::unjudged(e, Verdict::NotRun, if e.kind == Kind::Qualitative { "no experiment observes it yet" } else { "no experiment measures it yet" }))
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
    /// The scored entries' verdicts, counted.
    pub counts: std::collections::BTreeMap<String, usize>,
    /// The qualitative entries' (not scored): observed, not observed,
    /// inconclusive, not run.
    pub qualitative: std::collections::BTreeMap<String, usize>,
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
        let list = |m: &std::collections::BTreeMap<String, usize>| -> Vec<String> { Verdict::ALL.iter().filter_map(|v| m.get(v.as_str()).map(|n| format!("{n} {}", v.as_str()))).collect() };
        let q = list(&self.qualitative);
        let q = if q.is_empty() { String::new() } else { format!("; qualitative entries, not scored: {}", q.join(", ")) };
        format!("{:.0} % ({} of {} scored entries hold; {}{q})", 100.0 * self.agreement(), self.holds, self.scored, list(&self.counts).join(", "))
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
            let (mut counts, mut qualitative) = (std::collections::BTreeMap::new(), std::collections::BTreeMap::new());
            for j in &mine {
                let m = if j.entry.scored() { &mut counts } else { &mut qualitative };
                *m.entry(j.verdict.as_str().to_string()).or_insert(0) += 1;
            }
            Score {
                study: crate::catalogue::study(&seed).to_string(),
                scored: mine.iter().filter(|j| j.entry.scored()).count(),
                holds: mine.iter().filter(|j| j.verdict == Verdict::Holds).count(),
                counts,
                qualitative,
                seed,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linear_fit_tells_a_line_from_a_hockey_stick() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        // On a line (any slope): R² = 1.
        assert!((r_squared(&x, &x.map(|v| 3.0 * v + 7.0)) - 1.0).abs() < 1e-12);
        // Flat below capacity, steep above it: a line explains less.
        let stick = x.map(|v| if v <= 5.0 { 1.0 } else { 1.0 + 10.0 * (v - 5.0) });
        let r2 = r_squared(&x, &stick);
        assert!(r2 > 0.5 && r2 < 0.8, "{r2}");
        // Nothing varies: no fit.
        assert!(r_squared(&x, &[2.0; 8]).is_nan());
    }
}
