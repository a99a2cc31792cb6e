//! `aerolink experiment check`: the catalogue's entries judged by stored
//! runs (aerolink_experiments::judge), as a table, JSON or the Markdown page
//! docs/reproductions.md.

use std::path::PathBuf;

use aerolink_experiments::catalogue::{self, Verdict};
use aerolink_experiments::judge::{self, Judged, Source};
use aerolink_experiments::store::{RunRow, Store};
use clap::Args;

use crate::error::user;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// An experiment file: judge only the entries it maps. Without it, the
    /// whole catalogue.
    pub file: Option<String>,
    /// A result store; give --db again for each store (default results.db).
    #[arg(long = "db", value_name = "STORE")]
    pub db: Vec<PathBuf>,
    /// The catalogue: a folder of seed-*.toml files and their README.md
    /// (default: ./findings, or the copy built into aerolink where there is
    /// none).
    #[arg(long, value_name = "DIR")]
    pub catalogue: Option<PathBuf>,
    /// The experiment files mapping entries to runs (without FILE).
    #[arg(long, default_value = "experiments", value_name = "DIR")]
    pub experiments: PathBuf,
    /// Print every entry's verdict as JSON (scores and entries).
    #[arg(long)]
    pub json: bool,
    /// Also write the verdicts as a Markdown page (docs/reproductions.md),
    /// headed by the date, the commit and this command.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// An earlier check's JSON (`--json`, e.g. docs/reproductions.json):
    /// each entry that no store given here has runs for keeps that check's
    /// verdict, marked with the date and commit it was judged at — where
    /// the experiment files still map it to the same experiment and
    /// metric. For a campaign whose stores are on other machines or gone.
    #[arg(long, value_name = "FILE")]
    pub keep: Option<PathBuf>,
}

fn experiment_files(dir: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| user(format!("--experiments {}: {e}", dir.display())))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| p.to_string_lossy().to_string())
        .collect();
    v.sort();
    Ok(v)
}

fn commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

pub fn check(a: CheckArgs) -> anyhow::Result<i32> {
    // The user's files first (an experiment file, the catalogue), then the
    // stores, then the experiments folder: each mistake named where it is.
    let entries = match &a.catalogue {
        Some(dir) => catalogue::load(dir).map_err(|e| user(format!("--catalogue {e}")))?,
        None if catalogue::default_dir().is_dir() => catalogue::load(&catalogue::default_dir()).map_err(|e| user(e.to_string()))?,
        None => catalogue::builtin(),
    };
    let cat_name = a.catalogue.clone().unwrap_or_else(catalogue::default_dir);
    let mut exps = Vec::new();
    let mut files = Vec::new();
    if let Some(f) = &a.file {
        exps.push(aerolink_experiments::experiment::Experiment::load(f)?);
        files.push(f.clone());
    }
    let validate = |e: &aerolink_experiments::experiment::Experiment, f: &str| -> anyhow::Result<()> {
        for (i, m) in e.judges.iter().enumerate() {
            let Some(entry) = entries.iter().find(|x| x.id == m.id) else {
                return Err(user(format!("{f}: judge[{}].id: {:?} is not an entry of the catalogue ({})", i + 1, m.id, cat_name.display())));
            };
            m.fits(entry.kind).map_err(|why| user(format!("{f}: judge[{}] ({}): {why}", i + 1, m.id)))?;
        }
        Ok(())
    };
    if let Some(e) = exps.first() {
        validate(e, &files[0])?;
    }
    let dbs = if a.db.is_empty() { vec![PathBuf::from("results.db")] } else { a.db.clone() };
    let mut stores = Vec::new();
    for db in &dbs {
        if !db.exists() {
            let hint = a.file.as_ref().map(|f| format!(" (run the experiment first: aerolink experiment run {f} --db {})", db.display())).unwrap_or_default();
            return Err(user(format!("--db {}: no such store{hint}", db.display())));
        }
        stores.push(Store::open(db).map_err(|err| user(err.to_string()))?);
    }
    if a.file.is_none() {
        for f in experiment_files(&a.experiments)? {
            let e = aerolink_experiments::experiment::Experiment::load(&f)?;
            validate(&e, &f)?;
            exps.push(e);
            files.push(f);
        }
    }
    let mut runs: Vec<Vec<RunRow>> = Vec::new();
    for e in &exps {
        let mut r = Vec::new();
        for s in &stores {
            r.extend(s.runs(Some(&e.name))?);
        }
        runs.push(r);
    }
    let sources: Vec<Source<'_>> = exps.iter().zip(&runs).map(|(e, r)| Source { experiment: &e.name, mappings: &e.judges, runs: r }).collect();
    // A file checked on its own: the entries it gives verdicts for.
    let wanted: Vec<catalogue::Entry> = match &a.file {
        Some(_) => entries.iter().filter(|x| exps[0].judges.iter().any(|m| m.id == x.id && m.explanation.is_none())).cloned().collect(),
        None => entries.clone(),
    };
    let mut judged: Vec<Judged> = judge::judge_catalogue(&wanted, &sources, false);
    // The explanations tested, apart: an entry may have both a verdict and
    // an explanation in one file (seed 001's VPN findings with our tunnel,
    // and with OpenVPN), and neither hides the other.
    let mut explanations = judge::judge_explanations(&entries, &sources);
    if let Some(k) = &a.keep {
        let earlier = judge::Earlier::load(k).map_err(|e| user(format!("--keep {e}")))?;
        let n = earlier.keep(&mut judged, &mut explanations, &sources);
        eprintln!("kept {n} verdicts of {} (no store given here has their runs)", k.display());
    }
    let cmd = format!("aerolink {}", std::env::args().skip(1).collect::<Vec<_>>().join(" "));
    let date = aerolink_experiments::record::rfc3339(std::time::SystemTime::now())[..10].to_string();
    let commit = commit();
    if let Some(md) = &a.markdown {
        std::fs::write(md, aerolink_experiments::reproductions::markdown(&judged, &explanations, &cmd, &date, &commit)).map_err(|e| user(format!("--markdown {}: {e}", md.display())))?;
        eprintln!("wrote {}", md.display());
    }
    if a.json {
        let v = serde_json::json!({ "date": date, "commit": commit, "command": cmd, "scores": judge::scores(&judged), "entries": judged, "explanations": explanations });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        let n: usize = runs.iter().map(|r| r.len()).sum();
        println!("{} catalogue entries judged by {n} runs in {} store(s)", judged.len(), dbs.len());
        print!("{}", aerolink_experiments::reproductions::table_text(&judged));
        if !explanations.is_empty() {
            println!("explanations tested ({}; not verdicts: each tests a hypothesis about why ours and the study's differ):", explanations.len());
            print!("{}", aerolink_experiments::reproductions::table_text(&explanations));
        }
    }
    let broken = judged.iter().any(|j| matches!(j.verdict, Verdict::DoesNotHold | Verdict::NotObserved));
    Ok(if broken { 1 } else { 0 })
}
