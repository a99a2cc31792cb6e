//! The catalogue's verdicts as text: the terminal table of `experiment
//! check` and the page `docs/reproductions.md` it writes (`--markdown`),
//! so that page is made from the stores and cannot disagree with them.

use std::fmt::Write as _;

use crate::catalogue::{band_text, Verdict};
use crate::judge::{scores, Judged};

fn ours(j: &Judged) -> String {
    match (j.value, j.lo, j.hi) {
        (Some(v), Some(lo), Some(hi)) => format!("{} ({}–{}, n = {})", fmt3(v), fmt3(lo), fmt3(hi), j.reps),
        (Some(v), _, _) => format!("{} (n = {})", fmt3(v), j.reps),
        _ => "—".into(),
    }
}

/// Three significant figures, as the catalogue's numbers read.
pub fn fmt3(x: f64) -> String {
    crate::catalogue::sig3(x)
}

/// One line per entry, grouped by study, each study headed by its score.
pub fn table_text(judged: &[Judged]) -> String {
    let mut s = String::new();
    for sc in scores(judged) {
        let _ = writeln!(s, "{} — {}\n  agreement {}", sc.seed, sc.study, sc.text());
        for j in judged.iter().filter(|j| j.entry.seed == sc.seed && j.verdict != Verdict::NotRun) {
            let paper = j.entry.paper.map(|p| p.text()).unwrap_or_else(|| "—".into());
            let _ = writeln!(
                s,
                "  {:<14} {}  paper {} ({}), ours {}{}",
                j.verdict.as_str(),
                j.entry.id,
                paper,
                j.entry.kind.as_str(),
                ours(j),
                j.why.as_ref().map(|w| format!(" — {w}")).unwrap_or_default()
            );
            if let Some(setup) = &j.setup {
                let _ = writeln!(s, "  {:<14} setup: {setup}", "");
            }
        }
        let not_run = judged.iter().filter(|j| j.entry.seed == sc.seed && j.verdict == Verdict::NotRun).count();
        if not_run > 0 {
            let _ = writeln!(s, "  ({not_run} entries not run: --json or --markdown lists them)");
        }
    }
    s
}

fn cell(t: &str) -> String {
    t.replace('|', "\\|").replace('\n', " ")
}

/// `docs/reproductions.md`: when and how it was made, each study's score
/// and every entry's verdict beside the paper's number.
pub fn markdown(judged: &[Judged], explanations: &[Judged], made_by: &str, date: &str, commit: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Reproductions: the studies' results, judged on our runs\n");
    let _ = writeln!(s, "Written by `{made_by}` on {date} at commit `{commit}`, from the result stores named in the command — not by hand. The entries are the catalogue in `findings/` (a copy of `../shared/findings`, written from the studies' texts before any run); the bands and verdicts are its `README.md`'s: ours is the statistic the entry names (the mean unless it says otherwise) over at least 10 repetitions a side, with a 95 % percentile bootstrap interval over 10 000 resamples, each side resampled on its own. An experiment file only maps an entry to its runs (`[[judge]]`); it carries no number and no rule. `setup` says where our runs depart from the entry's conditions. A qualitative entry has no number: its mappings say what they observe (`observe`, with the threshold they read the entry's words by), and it is *observed* or *not observed* apart from the score.\n");
    let kept = judged.iter().chain(explanations).filter(|j| j.kept.is_some()).count();
    if kept > 0 {
        let _ = writeln!(s, "{kept} verdict{} (marked *kept*) come{} from an earlier check whose stores are not among these (`--keep`): each names the check, by date and commit, that judged it from its stores; the experiment files still map the entry to the same experiment and metric.\n", if kept == 1 { "" } else { "s" }, if kept == 1 { "s" } else { "" });
    }
    let _ = writeln!(s, "## Agreement\n");
    let _ = writeln!(s, "| Study | Agreement | holds | direction only | does not hold | inconclusive | not run | qualitative (not scored): observed / not observed / inconclusive / not run |");
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    let all = scores(judged);
    for sc in &all {
        let n = |v: Verdict| sc.counts.get(v.as_str()).copied().unwrap_or(0);
        let q = |v: Verdict| sc.qualitative.get(v.as_str()).copied().unwrap_or(0);
        let _ = writeln!(
            s,
            "| {} | {:.0} % ({} / {}) | {} | {} | {} | {} | {} | {} / {} / {} / {} |",
            cell(&sc.study),
            100.0 * sc.agreement(),
            sc.holds,
            sc.scored,
            n(Verdict::Holds),
            n(Verdict::DirectionOnly),
            n(Verdict::DoesNotHold),
            n(Verdict::Inconclusive),
            n(Verdict::NotRun),
            q(Verdict::Observed),
            q(Verdict::NotObserved),
            q(Verdict::Inconclusive),
            q(Verdict::NotRun)
        );
    }
    for sc in &all {
        let _ = writeln!(s, "\n## {}\n\nAgreement {}.\n", sc.study, sc.text());
        let _ = writeln!(s, "| Entry | Where | Claim | Paper | Band | Ours (95 % interval, reps) | Verdict | Why / setup |");
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
        for j in judged.iter().filter(|j| j.entry.seed == sc.seed) {
            s.push_str(&row(j));
        }
    }
    if !explanations.is_empty() {
        let _ = writeln!(s, "\n## Explanations tested\n\nA result that does not hold is a finding to explain with an experiment. These mappings (`explanation = …` in an experiment file) run the entry under a hypothesis about the study's setup; their verdicts are not the entries' above, which stay those of the runs made as the study describes.\n");
        let _ = writeln!(s, "| Entry | Where | Claim | Paper | Band | Ours (95 % interval, reps) | Verdict | Hypothesis, runs, setup |");
        let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
        for j in explanations {
            s.push_str(&row(j));
        }
    }
    s
}

/// One judged entry as a row of the page's tables.
fn row(j: &Judged) -> String {
    let e = &j.entry;
    let band = e.paper.map(|p| band_text(e.kind, p)).unwrap_or_else(|| "—".into());
    let mut why = j.why.clone().unwrap_or_default();
    if let Some(x) = &j.experiment {
        why = format!("{why}{}runs of `{x}`{}", if why.is_empty() { "" } else { "; " }, j.metric.as_ref().map(|m| format!(", `{m}`")).unwrap_or_default());
    }
    if let Some(setup) = &j.setup {
        why = format!("{why}; setup: {setup}");
    }
    if let Some(k) = &j.kept {
        why = format!("{why}; *kept* from {k}");
    }
    format!(
        "| `{}` | {} | {} | {} | {} | {} | **{}** | {} |\n",
        e.id,
        cell(&e.place),
        cell(&e.claim),
        e.paper.map(|p| p.text()).unwrap_or_else(|| "—".into()),
        cell(&band),
        ours(j),
        j.verdict.as_str(),
        cell(&why)
    )
}
