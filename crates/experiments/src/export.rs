//! Stored runs as text for other tools: one row per run (CSV, a column
//! per metric; or JSON with knobs and workload as objects), or one row per
//! object of every page load (`aerolink results export`).

use std::collections::BTreeSet;

use crate::metric::Metric;
use crate::store::RunRow;

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One row per run, one column per metric (knobs as JSON text).
pub fn runs_csv(runs: &[RunRow]) -> String {
    let metrics: BTreeSet<Metric> = runs.iter().flat_map(|r| r.metrics.keys().copied()).collect();
    let mut out = String::from("run_key,experiment,profile,profile_hash,workload,protocol,series,params,knobs,seed,rep,aerolink_version,host,machine,started_at,duration_s,ok,error,setup_ms,teardown_ms,wire_bytes_down,wire_bytes_up");
    for m in &metrics {
        out.push(',');
        out.push_str(m.name());
    }
    out.push('\n');
    for r in runs {
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
}

/// Every run with its metrics, knobs and workload as objects, and its
/// series as the report names it.
pub fn runs_json(runs: &[RunRow]) -> serde_json::Result<String> {
    let runs: Vec<serde_json::Value> = runs.iter().map(json_run).collect::<serde_json::Result<_>>()?;
    Ok(serde_json::to_string_pretty(&runs)? + "\n")
}

/// Per-object timings of every successful web or object-set run: CSV, or
/// JSON (one object per row).
pub fn objects(runs: &[RunRow], json: bool) -> serde_json::Result<String> {
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
fn json_run(r: &RunRow) -> serde_json::Result<serde_json::Value> {
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
