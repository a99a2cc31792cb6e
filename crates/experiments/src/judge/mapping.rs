//! A `[[judge]]` entry of an experiment file, parsed: which runs each side
//! takes ([`Select`]), how cases combine ([`Over`], groups), the statistic
//! over repetitions, the quantity formed, and the checks that an entry's
//! kind can be judged by it ([`Mapping::fits`]).

use serde::Serialize;

use crate::catalogue::Kind;
use crate::metric::{Metric, UnknownMetric};
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
    /// Cases taken two at a time, each a ratio of its own: the first's
    /// ratio over the second's ("helps SPDY more than HTTP/1.1": (SPDY with
    /// / without) / (HTTP/1.1 with / without)); several pairs, the
    /// geometric mean of their figures.
    #[serde(rename = "ratio-of-ratios")]
    RatioOfRatios,
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
    /// The 5th percentile ("almost always at least").
    P5,
    Median,
    P80,
    P95,
    Sd,
    Max,
    /// The interval from the smallest repetition to the largest.
    Range,
}

impl Statistic {
    fn parse(s: &str) -> Option<Statistic> {
        Some(match s {
            "mean" => Statistic::Mean,
            "p5" => Statistic::P5,
            "median" => Statistic::Median,
            "p80" => Statistic::P80,
            "p95" => Statistic::P95,
            "sd" => Statistic::Sd,
            "max" => Statistic::Max,
            "range" => Statistic::Range,
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
            Statistic::P5 => pct(0.05),
            Statistic::Median => pct(0.5),
            Statistic::P80 => pct(0.8),
            Statistic::P95 => pct(0.95),
            Statistic::Max => v.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            Statistic::Range => v.iter().cloned().fold(f64::NEG_INFINITY, f64::max) - v.iter().cloned().fold(f64::INFINITY, f64::min),
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
        Some(v) => v.as_str().and_then(Statistic::parse).ok_or_else(|| err("statistic", "expected mean, p5, median, p80, p95, sd, max or range".into()))?,
    };
    let quantity = match t.get("quantity").map(|v| v.as_str()) {
        None => None,
        Some(Some("value")) => Some(Form::Value),
        Some(Some("ratio")) => Some(Form::Ratio),
        Some(Some("difference")) => Some(Form::Difference),
        Some(Some("ratio-of-ratios")) => Some(Form::RatioOfRatios),
        Some(_) => return Err(err("quantity", "expected \"value\", \"ratio\", \"difference\" or \"ratio-of-ratios\"".into())),
    };
    if quantity == Some(Form::RatioOfRatios) && (cases.len() % 2 != 0 || over != Over::Mean || cases.iter().any(|c| c.group.is_some())) {
        return Err(err("quantity", "a ratio of ratios takes its cases two at a time (an even number, each with vs; no group, over = \"mean\")".into()));
    }
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
            (Kind::Ratio | Kind::Equal, Form::Ratio | Form::RatioOfRatios) | (Kind::Difference, Form::Difference) | (Kind::Value | Kind::Count, Form::Value) | (Kind::AtLeast | Kind::AtMost, _) => {
                Ok(())
            }
            // A metric that is itself a ratio (delivered over offered).
            (Kind::Ratio | Kind::Equal, Form::Value) if self.metric.is_ratio() => Ok(()),
            (Kind::Qualitative, _) => Err("a qualitative entry is not judged by number".into()),
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
    }

    #[test]
    fn a_mapping_carries_no_rule_of_its_own() {
        let doc: toml::Table = "[[judge]]\nid = \"x\"\nmetric = \"plt_ms\"\nof = { profile = \"mss\" }\npaper = 0.4\n".parse().unwrap();
        let e = parse(&doc).unwrap_err().to_string();
        assert!(e.starts_with("judge[1].paper: unknown key") && e.contains("catalogue"), "{e}");
    }
}
