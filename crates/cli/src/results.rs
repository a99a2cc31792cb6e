//! `aerolink results export` and `aerolink report`.

pub use aerolink_lab::commands::{MergeArgs, ReportArgs};
use aerolink_lab::metric::Metric;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use aerolink_lab::store::Store;
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

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn export(a: ExportArgs) -> anyhow::Result<i32> {
    let store = open(&a.db)?;
    let runs = store.runs(a.experiment.as_deref())?;
    let text = if a.objects {
        objects_text(&runs, a.json)?
    } else if a.csv || !a.json {
        let metrics: BTreeSet<Metric> = runs.iter().flat_map(|r| r.metrics.keys().copied()).collect();
        let mut out = String::from("run_key,experiment,profile,profile_hash,workload,protocol,series,params,knobs,seed,rep,aerolink_version,host,machine,started_at,duration_s,ok,error,setup_ms,teardown_ms,wire_bytes_down,wire_bytes_up");
        for m in &metrics {
            out.push(',');
            out.push_str(m.name());
        }
        out.push('\n');
        for r in &runs {
            let fields = [
                r.run_key.clone(),
                r.experiment.clone(),
                r.profile.clone(),
                r.profile_hash.clone(),
                r.workload.clone(),
                r.protocol.clone(),
                r.series.name.clone(),
                r.params.clone(),
                r.knobs_json.clone(),
                r.seed.to_string(),
                r.rep.to_string(),
                r.aerolink_version.clone(),
                r.host.clone(),
                r.machine.clone(),
                r.started_at.clone(),
                format!("{:.3}", r.duration_s),
                (r.ok as u8).to_string(),
                r.error.clone().unwrap_or_default(),
                format!("{:.1}", r.setup_ms),
                format!("{:.1}", r.teardown_ms),
                r.wire_bytes_down.to_string(),
                r.wire_bytes_up.to_string(),
            ];
            out.push_str(&fields.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","));
            for m in &metrics {
                out.push(',');
                if let Some(v) = r.metrics.get(m) {
                    out.push_str(&v.to_string());
                }
            }
            out.push('\n');
        }
        out
    } else {
        let runs: Vec<serde_json::Value> = runs.iter().map(json_run).collect::<anyhow::Result<_>>()?;
        serde_json::to_string_pretty(&runs)? + "\n"
    };
    match &a.output {
        Some(p) => std::fs::write(p, text).map_err(|e| user(format!("{}: {e}", p.display())))?,
        None => print!("{text}"),
    }
    Ok(0)
}

/// Per-object timings of every successful web or object-set run: CSV, or
/// JSON (one object per row).
fn objects_text(runs: &[aerolink_lab::store::RunRow], json: bool) -> anyhow::Result<String> {
    const COLUMNS: [&str; 13] = ["run_key", "experiment", "profile", "series", "seed", "rep", "path", "bytes", "start_ms", "first_byte_ms", "end_ms", "conn", "pushed"];
    let mut rows: Vec<serde_json::Value> = Vec::new();
    for r in runs.iter().filter(|r| r.ok) {
        let Some(result) = r.result() else { continue };
        for o in result.objects() {
            rows.push(serde_json::json!({
                "run_key": r.run_key, "experiment": r.experiment, "profile": r.profile, "series": r.series.name.clone(), "seed": r.seed, "rep": r.rep,
                "path": o.path, "bytes": o.bytes, "start_ms": o.start_ms, "first_byte_ms": o.first_byte_ms, "end_ms": o.end_ms,
                "conn": o.conn, "pushed": o.pushed,
            }));
        }
    }
    if json {
        return Ok(serde_json::to_string_pretty(&rows)? + "\n");
    }
    let mut out = COLUMNS.join(",") + "\n";
    for row in &rows {
        let fields: Vec<String> = COLUMNS
            .iter()
            .map(|c| match &row[*c] {
                serde_json::Value::String(s) => csv_field(s),
                serde_json::Value::Null => String::new(),
                v => v.to_string(),
            })
            .collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    Ok(out)
}

/// One run for `export --json`: its knobs and workload as objects (the
/// store keeps them as JSON text), and its series as the report names it.
fn json_run(r: &aerolink_lab::store::RunRow) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(r)?;
    let o = v.as_object_mut().expect("a run serializes to an object");
    o.remove("knobs_json");
    o.remove("workload_json");
    let parse = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap_or_else(|_| serde_json::Value::String(t.to_string()));
    o.insert("series".into(), r.series.name.clone().into());
    o.insert("knobs".into(), parse(&r.knobs_json));
    o.insert("workload_spec".into(), parse(&r.workload_json));
    Ok(v)
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
    let html = aerolink_lab::report::render(&exps, &runs, &a.db.display().to_string(), &crate::experiment::now_rfc3339());
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
    let html = aerolink_lab::compare::render(&da.display().to_string(), &db.display().to_string(), &ra, &rb, &exps, &crate::experiment::now_rfc3339());
    std::fs::write(&out, html).map_err(|e| user(format!("{}: {e}", out.display())))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&aerolink_lab::compare::compare(&ra, &rb))?);
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
