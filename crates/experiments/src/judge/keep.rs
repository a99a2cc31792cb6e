//! `experiment check --keep FILE`: an earlier check's verdicts (its
//! `--json`) kept for the entries no store given now has runs for — a
//! campaign spread over machines or sessions, whose older stores are
//! elsewhere or gone. A verdict is kept only where the experiment files
//! still map the entry to the same experiment and metric; it says where it
//! came from (`kept`: the date and commit of the check that judged it from
//! its stores), and a verdict judged now always wins.

use serde::Deserialize;

use super::{Form, Judged, Source};
use crate::catalogue::{Entry, Verdict};
use crate::metric::Metric;

/// What an earlier check's JSON holds of each judged entry.
#[derive(Debug, Deserialize)]
struct EarlierJudged {
    entry: EarlierEntry,
    experiment: Option<String>,
    metric: Option<String>,
    form: Option<Form>,
    value: Option<f64>,
    lo: Option<f64>,
    hi: Option<f64>,
    reps: usize,
    /// As written: a check of before observations read "qualitative",
    /// which is never kept.
    verdict: String,
    why: Option<String>,
    setup: Option<String>,
    #[serde(default)]
    kept: Option<String>,
}

impl EarlierJudged {
    fn verdict(&self) -> Option<Verdict> {
        Verdict::parse(&self.verdict)
    }
    /// A verdict worth keeping: judged (not *not run*) and one of today's.
    fn kept_verdict(&self) -> bool {
        self.verdict().is_some_and(|v| v != Verdict::NotRun)
    }
}

#[derive(Debug, Deserialize)]
struct EarlierEntry {
    id: String,
}

/// An earlier check (`experiment check --json`'s output).
#[derive(Debug, Deserialize)]
pub struct Earlier {
    #[serde(default)]
    date: Option<String>,
    #[serde(default)]
    commit: Option<String>,
    entries: Vec<EarlierJudged>,
    #[serde(default)]
    explanations: Vec<EarlierJudged>,
}

impl Earlier {
    /// Reads `path`; the error names the file and what did not fit.
    pub fn load(path: &std::path::Path) -> Result<Earlier, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: not the JSON of `aerolink experiment check --json`: {e}", path.display()))
    }

    fn provenance(&self, e: &EarlierJudged) -> String {
        e.kept.clone().unwrap_or_else(|| match (&self.date, &self.commit) {
            (Some(d), Some(c)) => format!("the check of {d} at commit {c}"),
            _ => "an earlier check".into(),
        })
    }

    fn revive(&self, e: &EarlierJudged, entry: &Entry) -> Judged {
        Judged {
            entry: entry.clone(),
            experiment: e.experiment.clone(),
            metric: e.metric.as_deref().and_then(|m| m.parse::<Metric>().ok()),
            form: e.form,
            value: e.value,
            lo: e.lo,
            hi: e.hi,
            reps: e.reps,
            verdict: e.verdict().expect("only a known verdict is kept"),
            why: e.why.clone(),
            setup: e.setup.clone(),
            kept: Some(self.provenance(e)),
        }
    }

    /// Replaces each entry judged *not run* now by its earlier verdict
    /// where the experiment files still map it to that experiment and
    /// metric; the same for the explanations (matched by entry,
    /// experiment, metric and setup). Returns how many were kept.
    pub fn keep(&self, judged: &mut [Judged], explanations: &mut [Judged], sources: &[Source<'_>]) -> usize {
        let still_mapped = |e: &EarlierJudged, explanation: bool| {
            let (Some(x), Some(m)) = (&e.experiment, &e.metric) else { return false };
            sources.iter().filter(|s| s.experiment == x).any(|s| s.mappings.iter().any(|p| p.id == e.entry.id && p.metric.name() == m && p.explanation.is_some() == explanation))
        };
        let mut n = 0;
        for j in judged.iter_mut().filter(|j| j.verdict == Verdict::NotRun) {
            if let Some(e) = self.entries.iter().find(|e| e.entry.id == j.entry.id && e.kept_verdict() && still_mapped(e, false)) {
                *j = self.revive(e, &j.entry);
                n += 1;
            }
        }
        for j in explanations.iter_mut().filter(|j| j.verdict == Verdict::NotRun) {
            let same = |e: &&EarlierJudged| e.entry.id == j.entry.id && e.experiment == j.experiment && e.metric.as_deref() == j.metric.map(|m| m.name()) && e.setup == j.setup && e.kept_verdict();
            if let Some(e) = self.explanations.iter().find(same) {
                *j = self.revive(e, &j.entry);
                n += 1;
            }
        }
        n
    }
}
