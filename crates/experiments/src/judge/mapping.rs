//! A `[[judge]]` entry of an experiment file, parsed: which runs each side
//! takes ([`Select`]), how cases combine ([`Over`], groups), the statistic
//! over repetitions, the quantity formed, and the checks that an entry's
//! kind can be judged by it ([`Mapping::fits`]).

use serde::{Deserialize, Serialize};

use crate::catalogue::Kind;
use crate::metric::Metric;
use crate::store::RunRow;
use crate::workload::table::{de, Choice, Text};

/// Which runs a side of a mapping takes: by `profile` (its name), `series`
/// (the report's series: protocol and knobs, e.g. `"h2"`, `"tcp reno"`,
/// `"tcp quic-tunnel/rate"`) and `params` (the setting as the report names
/// it, e.g. `"20x10KB"`); keys left out match every run. `with` keeps
/// only the runs whose figures have these values (`with = {
/// sender_timeouts = 2 }`: the runs whose sender timed out twice).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Select {
    pub profile: Option<String>,
    pub series: Option<String>,
    pub params: Option<String>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub with: std::collections::BTreeMap<Metric, f64>,
}

impl Select {
    pub fn matches(&self, r: &RunRow) -> bool {
        self.matches_but_with(r) && self.with.iter().all(|(m, v)| r.metrics.get(m) == Some(v))
    }
    /// Whether `r` is one of the runs this side takes before `with`
    /// filters them.
    pub fn matches_but_with(&self, r: &RunRow) -> bool {
        self.matches_labels(&r.profile, &r.series.name, &r.params)
    }
    /// Whether a run stored as `profile`, `series` and `params` is one
    /// this side takes before `with` (also asked of a plan, before any run).
    pub fn matches_labels(&self, profile: &str, series: &str, params: &str) -> bool {
        self.profile.as_ref().is_none_or(|p| p == profile) && self.series.as_ref().is_none_or(|s| s == series) && self.params.as_ref().is_none_or(|p| p == params)
    }
    pub fn text(&self) -> String {
        let with: Vec<String> = self.with.iter().map(|(m, v)| format!("{} = {v}", m.name())).collect();
        let with = (!with.is_empty()).then(|| with.join(", "));
        let parts: Vec<String> =
            [("profile", &self.profile), ("series", &self.series), ("params", &self.params), ("with", &with)].iter().filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}"))).collect();
        if parts.is_empty() {
            "every run".into()
        } else {
            parts.join(", ")
        }
    }
}

/// How a mapping forms its quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    Value,
    Ratio,
    Difference,
    /// Cases taken two at a time, each a ratio of its own: the first's
    /// ratio over the second's ("helps SPDY more than HTTP/1.1": (SPDY with
    /// / without) / (HTTP/1.1 with / without)); several pairs, the
    /// geometric mean of their figures.
    #[serde(rename = "ratio-of-ratios")]
    RatioOfRatios,
    /// Cases taken two at a time, each the gap between its sides, |of /
    /// vs − 1| ("the difference between the two protocols"): the first's
    /// gap less the second's ("large differences on bigger pages": the
    /// big page's gap less the small page's); several pairs, their mean.
    #[serde(rename = "gap-difference")]
    GapDifference,
    /// The share (%) of the `of` runs whose value lies below the `vs`
    /// runs' statistic ("in a third of samples MSS falls below DA2GC's
    /// median").
    #[serde(rename = "share-below")]
    ShareBelow,
    /// How straight a line the cases make: each case's statistic against
    /// its `x`, the least-squares line's R² (the share of the variance it
    /// explains; "latency grows almost linearly with the rate"). Three or
    /// more cases, each with `x`, no `vs`.
    #[serde(rename = "linear-fit")]
    LinearFit,
}

/// How several cases make one quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Over {
    Mean,
    Most,
    Least,
}

/// The statistic over a side's repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Statistic {
    Mean,
    /// The 5th percentile ("almost always at least").
    P5,
    Median,
    P80,
    P95,
    Sd,
    Max,
    /// The interval from the smallest repetition to the largest.
    Range,
    /// The interquartile range: the 75th percentile less the 25th ("a
    /// narrower distribution").
    Iqr,
}

impl Statistic {
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
            Statistic::P5 => pct(0.05),
            Statistic::Median => pct(0.5),
            Statistic::P80 => pct(0.8),
            Statistic::P95 => pct(0.95),
            Statistic::Max => v.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            Statistic::Range => v.iter().cloned().fold(f64::NEG_INFINITY, f64::max) - v.iter().cloned().fold(f64::INFINITY, f64::min),
            Statistic::Iqr => pct(0.75) - pct(0.25),
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
    /// Where the case lies on the axis of a `linear-fit` (the offered
    /// rate, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x: Option<f64>,
}

/// What a mapping of a qualitative entry observes (`observe = { what =
/// "…", below = x }`; or `above = x`; or `runs = "some"` / `"none"`): the
/// quantity's 95 % interval entirely below or above x, or whether any run
/// of `of` (after its `with`) exists. Several mappings of one entry in one
/// experiment: observed when every one is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Observe {
    /// What is observed, in a few words, shown beside the figure.
    pub what: String,
    pub test: Test,
}

/// The test of an [`Observe`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    Below(f64),
    Above(f64),
    /// Some run of `of` exists ("in a few runs the sender times out twice").
    SomeRuns,
    /// No run of `of` exists ("the proposals have none").
    NoRuns,
}

/// `runs = "some" | "none"` of an `observe` table.
#[derive(Clone, Copy, Deserialize)]
enum Runs {
    #[serde(rename = "some")]
    Any,
    #[serde(rename = "none")]
    No,
}

/// An `observe = { … }` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObserveTable {
    what: Text,
    below: Option<f64>,
    above: Option<f64>,
    runs: Option<Runs>,
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
    /// A qualitative entry's observation; `None` for a scored entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observe: Option<Observe>,
}

/// Why a `[[judge]]` entry is not usable.
#[derive(Debug, thiserror::Error)]
#[error("judge[{index}].{key}: {message}")]
pub struct JudgeError {
    pub index: usize,
    pub key: String,
    pub message: String,
}

/// A `[[judge]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: Text,
    metric: Choice<Metric>,
    of: Option<Select>,
    vs: Option<Select>,
    cases: Option<Vec<CaseTable>>,
    over: Option<Over>,
    statistic: Option<Statistic>,
    quantity: Option<Form>,
    scale: Option<Above0>,
    per: Option<Above0>,
    setup: Option<Text>,
    explanation: Option<Text>,
    observe: Option<ObserveTable>,
}

/// One of `cases = [{ of, vs, group }, …]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseTable {
    of: Option<Select>,
    vs: Option<Select>,
    group: Option<Text>,
    x: Option<f64>,
}

/// A number above 0 (`scale`, `per`).
#[derive(Clone, Copy)]
struct Above0(f64);

impl<'de> Deserialize<'de> for Above0 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = toml::Value::deserialize(d)?;
        match aerolink_link::profile::keys::number(&v) {
            Some(x) if x > 0.0 => Ok(Above0(x)),
            _ => Err(serde::de::Error::custom("expected a number above 0")),
        }
    }
}

/// The `[[judge]]` entries of an experiment file (none if it has none).
pub fn parse(doc: &toml::Table) -> Result<Vec<Mapping>, JudgeError> {
    let Some(v) = doc.get("judge") else { return Ok(Vec::new()) };
    let arr = v.as_array().ok_or_else(|| JudgeError { index: 1, key: "judge".into(), message: "expected [[judge]] tables".into() })?;
    let tables = arr.iter().enumerate().map(|(i, v)| v.as_table().cloned().ok_or_else(|| JudgeError { index: i + 1, key: "judge".into(), message: "expected a table".into() }));
    tables.collect::<Result<Vec<_>, _>>().and_then(entries)
}

/// The `[[judge]]` tables, each an entry.
pub fn entries(tables: Vec<toml::Table>) -> Result<Vec<Mapping>, JudgeError> {
    tables.into_iter().enumerate().map(|(i, t)| parse_one(i + 1, t)).collect()
}

fn parse_one(index: usize, t: toml::Table) -> Result<Mapping, JudgeError> {
    let err = |key: &str, message: String| JudgeError { index, key: key.into(), message };
    let e: Entry = de(t).map_err(|(k, m)| {
        let hint = if m.starts_with("unknown key") && !k.contains('.') { " (the paper's number and the rule are the catalogue's)" } else { "" };
        err(&k, format!("{m}{hint}"))
    })?;
    let cases = match (e.cases, e.of) {
        (Some(_), Some(_)) => return Err(err("cases", "give either of/vs or cases = [{ of, vs }, …], not both".into())),
        (Some(cs), None) if !cs.is_empty() => cs
            .into_iter()
            .map(|c| Ok(Case { of: c.of.ok_or_else(|| err("cases", "each case needs of = {…}".into()))?, vs: c.vs, group: c.group.map(|g| g.0), x: c.x }))
            .collect::<Result<Vec<_>, _>>()?,
        (Some(_), None) => return Err(err("cases", "expected a list of one or more { of, vs }".into())),
        (None, Some(of)) => vec![Case { of, vs: e.vs, group: None, x: None }],
        (None, None) => return Err(err("of", "expected the runs measured: of = { profile = …, series = …, params = … }".into())),
    };
    if cases.iter().any(|c| c.vs.is_some()) != cases.iter().all(|c| c.vs.is_some()) {
        return Err(err("cases", "either every case has vs or none has".into()));
    }
    let (over, quantity) = (e.over.unwrap_or(Over::Mean), e.quantity);
    if let Some(q @ (Form::RatioOfRatios | Form::GapDifference)) = quantity {
        if cases.len() % 2 != 0 || over != Over::Mean || cases.iter().any(|c| c.group.is_some() || c.vs.is_none()) {
            let what = if q == Form::RatioOfRatios { "a ratio of ratios" } else { "a gap difference" };
            return Err(err("quantity", format!("{what} takes its cases two at a time (an even number, each with vs; no group, over = \"mean\")")));
        }
    }
    let linear = quantity == Some(Form::LinearFit);
    if linear && (cases.len() < 3 || over != Over::Mean || cases.iter().any(|c| c.vs.is_some() || c.group.is_some() || c.x.is_none())) {
        return Err(err("quantity", "a linear fit takes three or more cases, each with x = its place on the axis (no vs, no group; over = \"mean\")".into()));
    }
    if !linear && cases.iter().any(|c| c.x.is_some()) {
        return Err(err("cases", "x is a case's place on a linear fit's axis: give quantity = \"linear-fit\"".into()));
    }
    let has_vs = cases[0].vs.is_some();
    if !linear && quantity.is_some_and(|q| (q == Form::Value) == has_vs) {
        return Err(err("quantity", if has_vs { "a value takes no vs".into() } else { "a ratio or difference needs vs = {…}".into() }));
    }
    let observe = match e.observe {
        None => None,
        Some(o) => {
            let test = match (o.below, o.above, o.runs) {
                (Some(x), None, None) => Test::Below(x),
                (None, Some(x), None) => Test::Above(x),
                (None, None, Some(Runs::Any)) => Test::SomeRuns,
                (None, None, Some(Runs::No)) => Test::NoRuns,
                _ => return Err(err("observe", "expected one of below = x, above = x, runs = \"some\" or runs = \"none\"".into())),
            };
            Some(Observe { what: o.what.0, test })
        }
    };
    Ok(Mapping {
        id: e.id.0,
        metric: e.metric.0,
        cases,
        over,
        statistic: e.statistic.unwrap_or(Statistic::Mean),
        quantity,
        scale: e.scale.map_or(1.0, |x| x.0),
        per: e.per.map(|x| x.0),
        setup: e.setup.map(|x| x.0),
        explanation: e.explanation.map(|x| x.0),
        observe,
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
        match (kind, &self.observe) {
            (Kind::Qualitative, None) => {
                return Err("a qualitative entry is observed, not judged by number: give observe = { what = …, below = x } (or above = x, or runs = \"some\" / \"none\")".into())
            }
            (Kind::Qualitative, Some(_)) => return Ok(()),
            (_, Some(_)) => return Err(format!("observe is for qualitative entries; a {} entry is judged by its band", kind.as_str())),
            (_, None) => {}
        }
        match (kind, self.form(kind)) {
            (Kind::Ratio | Kind::Equal, Form::Ratio | Form::RatioOfRatios)
            | (Kind::Difference, Form::Difference | Form::GapDifference)
            | (Kind::Value | Kind::Count, Form::Value | Form::ShareBelow)
            | (Kind::AtLeast | Kind::AtMost, _) => Ok(()),
            // A metric that is itself a ratio (delivered over offered).
            (Kind::Ratio | Kind::Equal, Form::Value) if self.metric.is_ratio() => Ok(()),
            (k, f) => Err(format!("a {} entry cannot be judged by a {f:?} (quantity)", k.as_str())),
        }
    }
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
        assert_eq!(Statistic::Range.of(&[3.0, 1.0, 7.5]), 6.5);
        assert_eq!(Statistic::Iqr.of(&v), 2.0);
        assert!((Statistic::P5.of(&v) - 1.2).abs() < 1e-9);
    }

    #[test]
    fn a_ratio_of_ratios_takes_its_cases_in_pairs() {
        let one = |cases: &str| -> Result<Vec<Mapping>, JudgeError> {
            let doc: toml::Table = format!("[[judge]]\nid = \"x\"\nmetric = \"plt_ms\"\nquantity = \"ratio-of-ratios\"\ncases = [{cases}]\n").parse().unwrap();
            parse(&doc)
        };
        let pair = "{ of = { series = \"a\" }, vs = { series = \"b\" } }";
        assert_eq!(one(&format!("{pair}, {pair}")).unwrap()[0].quantity, Some(Form::RatioOfRatios));
        let e = one(pair).unwrap_err().to_string();
        assert!(e.starts_with("judge[1].quantity: a ratio of ratios takes its cases two at a time"), "{e}");
        let gaps = |cases: &str| {
            let doc: toml::Table = format!("[[judge]]\nid = \"x\"\nmetric = \"plt_ms\"\nquantity = \"gap-difference\"\ncases = [{cases}]\n").parse().unwrap();
            parse(&doc)
        };
        assert_eq!(gaps(&format!("{pair}, {pair}")).unwrap()[0].quantity, Some(Form::GapDifference));
        let e = gaps(&format!("{pair}, {{ of = {{ series = \"a\" }} }}")).unwrap_err().to_string();
        assert!(e.starts_with("judge[1].") && e.contains("vs"), "{e}");
    }

    #[test]
    fn a_linear_fit_places_three_or_more_cases_on_its_axis() {
        let one = |q: &str, cases: &str| -> Result<Vec<Mapping>, JudgeError> {
            let doc: toml::Table = format!("[[judge]]\nid = \"x\"\nmetric = \"plt_ms\"\n{q}cases = [{cases}]\n").parse().unwrap();
            parse(&doc)
        };
        let at = |x: u32| format!("{{ of = {{ params = \"{x}\" }}, x = {x} }}");
        let three = format!("{}, {}, {}", at(1), at(2), at(4));
        let fit = "quantity = \"linear-fit\"\n";
        assert_eq!(one(fit, &three).unwrap()[0].cases[2].x, Some(4.0));
        let e = one(fit, &format!("{}, {}", at(1), at(2))).unwrap_err().to_string();
        assert!(e.starts_with("judge[1].quantity: a linear fit takes three or more cases"), "{e}");
        let e = one(fit, &format!("{three}, {{ of = {{ params = \"8\" }} }}")).unwrap_err().to_string();
        assert!(e.starts_with("judge[1].quantity: a linear fit"), "{e}");
        let e = one("", &three).unwrap_err().to_string();
        assert!(e.starts_with("judge[1].cases: x is a case's place on a linear fit's axis"), "{e}");
    }

    #[test]
    fn a_mapping_carries_no_rule_of_its_own() {
        let doc: toml::Table = "[[judge]]\nid = \"x\"\nmetric = \"plt_ms\"\nof = { profile = \"mss\" }\npaper = 0.4\n".parse().unwrap();
        let e = parse(&doc).unwrap_err().to_string();
        assert!(e.starts_with("judge[1].paper: unknown key") && e.contains("catalogue"), "{e}");
    }
}
