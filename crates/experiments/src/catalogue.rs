//! The catalogue: every result of the five studies as data
//! (`findings/seed-000.toml` … `seed-004.toml`, a copy of
//! `../shared/findings` kept identical by a test), and its judging policy
//! (`findings/README.md`) as code: the band each kind of entry is judged
//! by, and the verdict an interval earns.
//!
//! Entries are written from the studies' texts before any run; nothing
//! here or in an experiment file changes an entry's number or rule. An
//! experiment only says which runs measure an entry ([`crate::judge`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

/// What kind of result an entry is, and so how it is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// ours/ref: direction, and magnitude within half to double the effect.
    Ratio,
    /// treatment − reference: direction, and magnitude within [d/2, 2d].
    Difference,
    /// An absolute figure: within ± 25 %, or within the paper's range.
    Value,
    /// No significant difference: a ratio within [0.9, 1.1].
    Equal,
    AtLeast,
    AtMost,
    /// Connections, round trips: the paper's number or range, exactly.
    Count,
    /// Not judged by number; not scored.
    Qualitative,
}

impl Kind {
    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "ratio" => Kind::Ratio,
            "difference" => Kind::Difference,
            "value" => Kind::Value,
            "equal" => Kind::Equal,
            "at-least" => Kind::AtLeast,
            "at-most" => Kind::AtMost,
            "count" => Kind::Count,
            "qualitative" => Kind::Qualitative,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Ratio => "ratio",
            Kind::Difference => "difference",
            Kind::Value => "value",
            Kind::Equal => "equal",
            Kind::AtLeast => "at-least",
            Kind::AtMost => "at-most",
            Kind::Count => "count",
            Kind::Qualitative => "qualitative",
        }
    }
}

/// The paper's number: one value, or its own `[lo, hi]` range.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Paper {
    One(f64),
    Range(f64, f64),
}

impl Paper {
    /// The value a direction is read from (a range's middle).
    pub fn centre(self) -> f64 {
        match self {
            Paper::One(x) => x,
            Paper::Range(a, b) => (a + b) / 2.0,
        }
    }
    pub fn text(self) -> String {
        match self {
            Paper::One(x) => fmt_num(x),
            Paper::Range(a, b) => format!("{}–{}", fmt_num(a), fmt_num(b)),
        }
    }
}

/// A number as the catalogue writes it: no trailing zeros.
pub fn fmt_num(x: f64) -> String {
    if x != 0.0 && x.abs() < 1e-3 {
        return sci(x, 4);
    }
    if x == x.trunc() && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A small number in scientific notation with `digits` significant
/// digits at most, as the studies write them: 6.31e-5, 1.1e-3.
fn sci(x: f64, digits: usize) -> String {
    let t = format!("{x:.*e}", digits - 1);
    let (m, e) = t.split_once('e').unwrap_or((&t, "0"));
    let m = if m.contains('.') { m.trim_end_matches('0').trim_end_matches('.') } else { m };
    format!("{m}e{e}")
}

/// One result of one study.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    pub id: String,
    pub seed: String,
    #[serde(rename = "where")]
    pub place: String,
    pub claim: String,
    pub kind: Kind,
    pub paper: Option<Paper>,
    pub conditions: String,
    pub note: Option<String>,
}

impl Entry {
    /// Withdrawn entries (not in the seed after all) leave the score.
    pub fn withdrawn(&self) -> bool {
        self.note.as_deref().is_some_and(|n| n.trim_start().starts_with("withdrawn:"))
    }
    /// Repetitions a side the entry needs: rule 1's 10 "unless the entry
    /// says otherwise" — an entry whose note says "the 10-per-side minimum
    /// does not apply" needs the rule's floor of 3 (an event that happens
    /// in a few runs only, such as seed 002's second timeout).
    pub fn min_reps(&self) -> usize {
        if self.note.as_deref().is_some_and(|n| n.contains("the 10-per-side minimum does not apply")) {
            3
        } else {
            MIN_REPS
        }
    }
    /// Counted in its study's agreement score.
    pub fn scored(&self) -> bool {
        self.kind != Kind::Qualitative && !self.withdrawn()
    }
}

/// A catalogue file that cannot be read: the file, the entry, the key.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct CatalogueError {
    pub file: String,
    pub key: String,
    pub message: String,
}

/// The studies, as a reader cites them (the catalogue's `seed` numbers).
pub const STUDIES: &[(&str, &str)] = &[
    ("000", "Rula, Newman, Bustamante, Kakhki & Choffnes, \"Mile High WiFi: A First Look At In-Flight Internet Connectivity\" (WWW 2018)"),
    ("001", "Caviglione et al., \"A deep analysis on future web technologies and protocols over broadband GEO satellite networks\" (IJSCN 2015)"),
    ("002", "Ayaz, Hoffmann, Epple, German & Dressler, \"Performance Evaluation of Network Mobility Handover over Future Aeronautical Data Link\" (Computer Communications 35(3), 2012)"),
    ("003", "Kuhn et al., \"QUIC for SATCOM\" (slides on tuning quic-go over a GEO satellite link)"),
    ("004", "Torgerson, Hutcherson & McKelvey (JPL), \"TCP Performance Enhancement over Iridium\""),
];

/// How a study is cited in user-facing text.
pub fn study(seed: &str) -> &'static str {
    STUDIES.iter().find(|(s, _)| *s == seed).map(|(_, c)| *c).unwrap_or("an unknown study")
}

/// The catalogue as built into aerolink (the files of `findings/`), for
/// reports read anywhere.
pub fn builtin() -> Vec<Entry> {
    const FILES: &[(&str, &str)] = &[
        ("seed-000.toml", include_str!("../../../findings/seed-000.toml")),
        ("seed-001.toml", include_str!("../../../findings/seed-001.toml")),
        ("seed-002.toml", include_str!("../../../findings/seed-002.toml")),
        ("seed-003.toml", include_str!("../../../findings/seed-003.toml")),
        ("seed-004.toml", include_str!("../../../findings/seed-004.toml")),
    ];
    FILES.iter().flat_map(|(n, t)| parse(t, n).expect("the built-in catalogue parses (crates/experiments/tests/catalogue.rs)")).collect()
}

/// The catalogue shipped with aerolink: `findings/` beside `experiments/`.
pub fn default_dir() -> PathBuf {
    PathBuf::from("findings")
}

/// Every entry of `dir/seed-*.toml`, in file order.
pub fn load(dir: &Path) -> Result<Vec<Entry>, CatalogueError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| CatalogueError { file: dir.display().to_string(), key: "seed-*.toml".into(), message: format!("cannot read the catalogue: {e}") })?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("seed-")) && p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(CatalogueError { file: dir.display().to_string(), key: "seed-*.toml".into(), message: "no seed-*.toml files here (the catalogue is findings/ in the aerolink checkout)".into() });
    }
    let mut out: Vec<Entry> = Vec::new();
    for f in files {
        let name = f.display().to_string();
        let text = std::fs::read_to_string(&f).map_err(|e| CatalogueError { file: name.clone(), key: "findings".into(), message: e.to_string() })?;
        out.extend(parse(&text, &name)?);
    }
    let mut seen = std::collections::BTreeSet::new();
    for e in &out {
        if !seen.insert(e.id.clone()) {
            return Err(CatalogueError { file: dir.display().to_string(), key: format!("finding {}", e.id), message: "id used twice".into() });
        }
    }
    Ok(out)
}

/// The entries of one catalogue file's text.
pub fn parse(text: &str, file: &str) -> Result<Vec<Entry>, CatalogueError> {
    let err = |key: String, message: String| CatalogueError { file: file.to_string(), key, message };
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| err("toml".into(), e.message().to_string()))?;
    let arr = doc.get("finding").and_then(|v| v.as_array()).ok_or_else(|| err("finding".into(), "expected [[finding]] entries".into()))?;
    arr.iter()
        .enumerate()
        .map(|(i, v)| {
            let t = v.as_table().ok_or_else(|| err(format!("finding[{i}]"), "expected a table".into()))?;
            let id = t.get("id").and_then(|v| v.as_str()).ok_or_else(|| err(format!("finding[{i}].id"), "expected text".into()))?.to_string();
            let text = |k: &str| -> Result<String, CatalogueError> { t.get(k).and_then(|v| v.as_str()).map(str::to_string).ok_or_else(|| err(format!("{id}.{k}"), "expected text in quotes".into())) };
            let kind_s = text("kind")?;
            let kind = Kind::parse(&kind_s).ok_or_else(|| err(format!("{id}.kind"), format!("{kind_s:?}: expected ratio, difference, value, equal, at-least, at-most, count or qualitative")))?;
            let num = |v: &toml::Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
            let paper = match t.get("paper") {
                None => None,
                Some(toml::Value::Array(a)) if a.len() == 2 => match (num(&a[0]), num(&a[1])) {
                    (Some(lo), Some(hi)) if lo <= hi => Some(Paper::Range(lo, hi)),
                    _ => return Err(err(format!("{id}.paper"), "expected [lo, hi] with lo ≤ hi".into())),
                },
                Some(v) => Some(Paper::One(num(v).ok_or_else(|| err(format!("{id}.paper"), "expected a number or [lo, hi]".into()))?)),
            };
            if paper.is_none() && kind != Kind::Qualitative {
                return Err(err(format!("{id}.paper"), format!("a {} entry needs the paper's number", kind.as_str())));
            }
            Ok(Entry {
                id: id.clone(),
                seed: text("seed")?,
                place: text("where")?,
                claim: text("claim")?,
                kind,
                paper,
                conditions: text("conditions")?,
                note: t.get("note").and_then(|v| v.as_str()).map(str::to_string),
            })
        })
        .collect()
}

/// A verdict under the policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
pub enum Verdict {
    #[serde(rename = "holds")]
    Holds,
    #[serde(rename = "direction only")]
    DirectionOnly,
    #[serde(rename = "does not hold")]
    DoesNotHold,
    #[serde(rename = "inconclusive")]
    Inconclusive,
    #[serde(rename = "not run")]
    NotRun,
    /// A qualitative entry (not scored) whose observation our runs show.
    #[serde(rename = "observed")]
    Observed,
    /// A qualitative entry whose observation our runs contradict.
    #[serde(rename = "not observed")]
    NotObserved,
}

impl Verdict {
    pub const ALL: [Verdict; 7] = [Verdict::Holds, Verdict::DirectionOnly, Verdict::DoesNotHold, Verdict::Inconclusive, Verdict::NotRun, Verdict::Observed, Verdict::NotObserved];
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::DirectionOnly => "direction only",
            Verdict::DoesNotHold => "does not hold",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotRun => "not run",
            Verdict::Observed => "observed",
            Verdict::NotObserved => "not observed",
        }
    }
    pub fn parse(s: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// Repetitions a side the policy asks for (rule 1).
pub const MIN_REPS: usize = 10;
/// Bootstrap resamples (rule 1).
pub const RESAMPLES: usize = 10_000;

/// The interval an entry's magnitude must lie in: half to double the
/// effect for a ratio (in log terms) or a difference, ± 25 % for a value
/// (or the paper's range), 0.9–1.1 for equal, the number itself for a
/// count or a bound.
pub fn band(kind: Kind, paper: Paper) -> (f64, f64) {
    let (a, b) = match paper {
        Paper::One(x) => (x, x),
        Paper::Range(a, b) => (a, b),
    };
    let (p, q) = match (kind, paper) {
        (Kind::Ratio, _) => (a.powf(0.5).min(a.powi(2)), b.powf(0.5).max(b.powi(2))),
        (Kind::Difference, _) => ((a / 2.0).min(a * 2.0), (b / 2.0).max(b * 2.0)),
        (Kind::Value, Paper::One(x)) => (x * 0.75, x * 1.25),
        (Kind::Equal, _) => (0.9, 1.1),
        _ => (a, b),
    };
    (p.min(q), p.max(q))
}

/// The verdict an interval `[lo, hi]` earns for an entry of `kind` with
/// the paper's number `paper` (the bands of findings/README.md).
pub fn verdict(kind: Kind, paper: Paper, lo: f64, hi: f64) -> Verdict {
    let inside = |a: f64, b: f64| lo >= a && hi <= b;
    let outside = |a: f64, b: f64| hi < a || lo > b;
    let (a, b) = match paper {
        Paper::One(x) => (x, x),
        Paper::Range(a, b) => (a, b),
    };
    match kind {
        // Observed or not by its mappings' `observe`, never by a band.
        Kind::Qualitative => Verdict::Inconclusive,
        Kind::Ratio | Kind::Difference => {
            let (pivot, v) = (if kind == Kind::Ratio { 1.0 } else { 0.0 }, paper.centre());
            let up = v > pivot;
            let direction = if up { lo > pivot } else { hi < pivot };
            let wrong = if up { hi < pivot } else { lo > pivot };
            let (blo, bhi) = band(kind, paper);
            if direction && inside(blo, bhi) {
                Verdict::Holds
            } else if direction {
                Verdict::DirectionOnly
            } else if wrong {
                Verdict::DoesNotHold
            } else {
                Verdict::Inconclusive
            }
        }
        Kind::Value | Kind::Equal | Kind::Count => {
            let (blo, bhi) = band(kind, paper);
            if inside(blo, bhi) {
                Verdict::Holds
            } else if outside(blo, bhi) {
                Verdict::DoesNotHold
            } else {
                Verdict::Inconclusive
            }
        }
        Kind::AtLeast => {
            if lo > b {
                Verdict::Holds
            } else if hi <= a {
                Verdict::DoesNotHold
            } else {
                Verdict::Inconclusive
            }
        }
        Kind::AtMost => {
            if hi < a {
                Verdict::Holds
            } else if lo >= b {
                Verdict::DoesNotHold
            } else {
                Verdict::Inconclusive
            }
        }
    }
}

/// Three significant figures.
pub fn sig3(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return fmt_num(x);
    }
    if x.abs() < 1e-3 {
        return sci(x, 3);
    }
    let digits = (2 - x.abs().log10().floor() as i32).max(0) as usize;
    fmt_num(format!("{x:.digits$}").parse().unwrap_or(x))
}

/// The band an entry is judged by, as a reader reads it.
pub fn band_text(kind: Kind, paper: Paper) -> String {
    let (a, b) = match paper {
        Paper::One(x) => (x, x),
        Paper::Range(a, b) => (a, b),
    };
    match kind {
        Kind::Ratio | Kind::Difference => {
            let (p, q) = band(kind, paper);
            let pivot = if kind == Kind::Ratio { 1.0 } else { 0.0 };
            format!("{} {}, within {}–{}", if paper.centre() > pivot { "above" } else { "below" }, fmt_num(pivot), sig3(p), sig3(q))
        }
        Kind::Value => {
            let (p, q) = band(kind, paper);
            format!("{}–{}", sig3(p), sig3(q))
        }
        Kind::Equal => "0.9–1.1".into(),
        Kind::Count => paper.text(),
        Kind::AtLeast => format!("> {}", fmt_num(b)),
        Kind::AtMost => format!("< {}", fmt_num(a)),
        Kind::Qualitative => "observed or not".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_numbers_read_as_the_studies_write_them() {
        assert_eq!((fmt_num(6.31e-5), fmt_num(6.25e-26), fmt_num(1.1e-3), fmt_num(0.322)), ("6.31e-5".into(), "6.25e-26".into(), "0.0011".into(), "0.322".into()));
        assert_eq!((sig3(6.3347e-26), sig3(4.6875e-26), sig3(0.00987), sig3(0.0)), ("6.33e-26".into(), "4.69e-26".into(), "0.0099".into(), "0".into()));
    }

    #[test]
    fn the_bands_of_the_policy() {
        use Verdict::*;
        // A ratio of 0.4: below 1 and within [0.16, 0.63].
        assert_eq!(verdict(Kind::Ratio, Paper::One(0.4), 0.3, 0.5), Holds);
        assert_eq!(verdict(Kind::Ratio, Paper::One(0.4), 0.7, 0.9), DirectionOnly);
        assert_eq!(verdict(Kind::Ratio, Paper::One(0.4), 1.1, 1.3), DoesNotHold);
        assert_eq!(verdict(Kind::Ratio, Paper::One(0.4), 0.9, 1.1), Inconclusive);
        // A ratio of 4.8: within [2.19, 23.04].
        assert_eq!(verdict(Kind::Ratio, Paper::One(4.8), 2.2, 3.0), Holds);
        assert_eq!(verdict(Kind::Ratio, Paper::One(4.8), 1.5, 3.0), DirectionOnly);
        // A difference of −4 s: [−8, −2].
        assert_eq!(verdict(Kind::Difference, Paper::One(-4.0), -5.0, -3.0), Holds);
        assert_eq!(verdict(Kind::Difference, Paper::One(-4.0), -1.5, -0.5), DirectionOnly);
        assert_eq!(verdict(Kind::Difference, Paper::One(-4.0), 0.5, 1.0), DoesNotHold);
        // A value: ± 25 %, or the paper's own range.
        assert_eq!(verdict(Kind::Value, Paper::One(3.1), 2.4, 3.8), Holds);
        assert_eq!(verdict(Kind::Value, Paper::One(3.1), 2.2, 3.0), Inconclusive);
        assert_eq!(verdict(Kind::Value, Paper::One(3.1), 4.0, 4.5), DoesNotHold);
        assert_eq!(verdict(Kind::Value, Paper::Range(536.0, 682.0), 540.0, 600.0), Holds);
        assert_eq!(verdict(Kind::Equal, Paper::One(1.0), 0.95, 1.08), Holds);
        assert_eq!(verdict(Kind::Equal, Paper::One(1.0), 1.2, 1.3), DoesNotHold);
        // At least / at most: strictly beyond.
        assert_eq!(verdict(Kind::AtLeast, Paper::One(2.0), 2.1, 3.0), Holds);
        assert_eq!(verdict(Kind::AtLeast, Paper::One(2.0), 2.0, 3.0), Inconclusive);
        assert_eq!(verdict(Kind::AtLeast, Paper::One(2.0), 1.5, 2.0), DoesNotHold);
        assert_eq!(verdict(Kind::AtMost, Paper::One(1.0), 0.5, 0.99), Holds);
        assert_eq!(verdict(Kind::AtMost, Paper::One(1.0), 1.0, 1.2), DoesNotHold);
        // A count, exactly.
        assert_eq!(verdict(Kind::Count, Paper::One(2.0), 2.0, 2.0), Holds);
        assert_eq!(verdict(Kind::Count, Paper::One(2.0), 2.0, 3.0), Inconclusive);
        assert_eq!(verdict(Kind::Count, Paper::Range(1.0, 2.0), 1.0, 2.0), Holds);
    }

    #[test]
    fn a_bad_entry_names_its_file_and_key() {
        let e = parse("[[finding]]\nid = \"x\"\nseed = \"004\"\nwhere = \"w\"\nclaim = \"c\"\nkind = \"bigger\"\nconditions = \"c\"\npaper = 1\n", "seed-004.toml").unwrap_err().to_string();
        assert!(e.starts_with("seed-004.toml: x.kind:") && e.contains("at-least"), "{e}");
        let e = parse("[[finding]]\nid = \"x\"\nseed = \"004\"\nwhere = \"w\"\nclaim = \"c\"\nkind = \"ratio\"\nconditions = \"c\"\n", "seed-004.toml").unwrap_err().to_string();
        assert!(e.contains("x.paper"), "{e}");
    }
}
