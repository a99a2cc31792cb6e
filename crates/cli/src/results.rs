//! `aerolink results export` and `aerolink report`.

pub use aerolink_experiments::commands::{MergeArgs, ReportArgs};
use aerolink_experiments::export;
use std::path::{Path, PathBuf};

use aerolink_experiments::store::Store;
use clap::Args;

use crate::error::user;

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
    /// CSV: one row per run, one column per metric (knobs as JSON text).
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// JSON: every run with its metrics, knobs and workload as objects, and
    /// its series (protocol plus the knobs that differ, as the report
    /// names it).
    #[arg(long)]
    pub json: bool,
    /// Only this experiment.
    #[arg(long)]
    pub experiment: Option<String>,
    /// One row per object of every web or object-set load instead of one
    /// per run: when it was asked for, its first and last byte (ms since
    /// the load began), its size, the connection that carried it and
    /// whether it was pushed — a waterfall per run.
    #[arg(long)]
    pub objects: bool,
    /// Write to FILE instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

fn open(db: &Path) -> anyhow::Result<Store> {
    open_as(db, "--db")
}

fn open_as(db: &std::path::Path, flag: &str) -> anyhow::Result<Store> {
    if !db.exists() {
        return Err(user(format!("{flag} {}: no such file; run an experiment first (aerolink experiment run FILE)", db.display())));
    }
    Store::open(db).map_err(|e| user(e.to_string()))
}

pub fn export(a: ExportArgs) -> anyhow::Result<i32> {
    let store = open(&a.db)?;
    let runs = store.runs(a.experiment.as_deref())?;
    let text = if a.objects {
        export::objects(&runs, a.json)?
    } else if a.csv || !a.json {
        export::runs_csv(&runs)
    } else {
        export::runs_json(&runs)?
    };
    match &a.output {
        Some(p) => std::fs::write(p, text).map_err(|e| user(format!("{}: {e}", p.display())))?,
        None => print!("{text}"),
    }
    Ok(0)
}

pub fn report(a: ReportArgs) -> anyhow::Result<i32> {
    if let [da, db] = a.compare.as_slice() {
        return compare(&a, da, db);
    }
    let store = open(&a.db)?;
    let mut exps = store.experiments()?;
    if let Some(n) = &a.experiment {
        exps.retain(|e| &e.name == n);
        if exps.is_empty() {
            return Err(user(format!("--experiment {n}: not in {}", a.db.display())));
        }
    }
    let runs = store.runs(a.experiment.as_deref())?;
    // A store that holds only a flight (`probe run --db`) reports the flight.
    if exps.is_empty() && runs.is_empty() && !store.probe_logs()?.is_empty() {
        drop(store);
        return crate::probe::analyze(crate::probe::AnalyzeArgs {
            log: None,
            db: Some(a.db.clone()),
            output: a.output.clone(),
            json: false,
            phase: vec![],
            loss_window: 100.0,
            outage_min: 10.0,
            against: None,
        });
    }
    let html = aerolink_experiments::report::render(&exps, &runs, &a.db.display().to_string(), &crate::experiment::now_rfc3339());
    std::fs::write(&a.output, html).map_err(|e| user(format!("{}: {e}", a.output.display())))?;
    println!("{}", std::fs::canonicalize(&a.output).unwrap_or(a.output.clone()).display());
    Ok(0)
}

fn compare(a: &ReportArgs, da: &Path, db: &Path) -> anyhow::Result<i32> {
    let (sa, sb) = (open_as(da, "--compare")?, open_as(db, "--compare")?);
    let exp = a.experiment.as_deref();
    let (ra, rb) = (sa.runs(exp)?, sb.runs(exp)?);
    if let Some(n) = exp {
        if ra.is_empty() || rb.is_empty() {
            return Err(user(format!("--experiment {n}: not in {}", if ra.is_empty() { da.display() } else { db.display() })));
        }
    }
    let exps = sa.experiments()?;
    let out = if a.output.as_os_str() == "report.html" { PathBuf::from("compare.html") } else { a.output.clone() };
    let html = aerolink_experiments::compare::render(&da.display().to_string(), &db.display().to_string(), &ra, &rb, &exps, &crate::experiment::now_rfc3339());
    std::fs::write(&out, html).map_err(|e| user(format!("{}: {e}", out.display())))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&aerolink_experiments::compare::compare(&ra, &rb))?);
    } else {
        println!("{}", std::fs::canonicalize(&out).unwrap_or(out.clone()).display());
    }
    Ok(0)
}

pub fn merge(a: MergeArgs) -> anyhow::Result<i32> {
    for i in &a.inputs {
        if std::fs::canonicalize(i).ok().is_some_and(|c| std::fs::canonicalize(&a.output).ok() == Some(c)) {
            return Err(user(format!("{}: is also the output (-o)", i.display())));
        }
    }
    // Every input is checked before anything is written.
    let stores: Vec<Store> = a.inputs.iter().map(|i| open_as(i, "results merge")).collect::<anyhow::Result<_>>()?;
    let mut out = Store::open(&a.output).map_err(|e| user(e.to_string()))?;
    if !a.force {
        let mut seen: Vec<&Store> = vec![&out];
        for (s, path) in stores.iter().zip(&a.inputs) {
            for other in &seen {
                if let Some(m) = other.mismatches(s)?.first() {
                    return Err(user(format!("{}: {m}; merge anyway with --force", path.display())));
                }
            }
            seen.push(s);
        }
    }
    let mut report = Vec::new();
    for path in &a.inputs {
        let m = out.merge_from(path)?;
        if !a.json {
            eprintln!("{}: {} runs added, {} already there", path.display(), m.added, m.kept);
        }
        report.push(serde_json::json!({"input": path.display().to_string(), "added": m.added, "kept": m.kept}));
    }
    let total = out.runs(None)?.len();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({"output": a.output.display().to_string(), "runs": total, "inputs": report}))?);
    } else {
        println!("{}: {total} runs", a.output.display());
    }
    Ok(0)
}
