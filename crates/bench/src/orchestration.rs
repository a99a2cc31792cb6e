//! `aerolink bench orchestration`: set-up and tear-down time per run, and
//! runs per hour of an experiment at several degrees of parallelism — and
//! whether running in parallel costs accuracy: the pumps' departure-time
//! error (99th percentile per run) and each run's client time against the
//! same run at the first level.

use std::path::PathBuf;

use clap::Args;

use super::*;
use crate::user;
use aerolink_net::run_id;

#[derive(Args, Debug)]
pub struct OrchestrationArgs {
    /// The experiment whose runs are timed.
    #[arg(long, default_value = "experiments/ifc-web.toml")]
    pub experiment: String,
    /// How many of its runs (the first of its shuffled plan, the same set at
    /// every level).
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub runs: u32,
    /// Degrees of parallelism to compare, comma-separated.
    #[arg(long, default_value = "1,2,4")]
    pub parallel: String,
    #[arg(long)]
    pub json: bool,
    /// Append the result as one JSON line to FILE.
    #[arg(long, default_value = "bench-results.jsonl", value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run(a: OrchestrationArgs) -> anyhow::Result<i32> {
    use std::sync::Arc;
    let levels: Vec<usize> = a
        .parallel
        .split(',')
        .map(|x| x.trim().parse::<usize>().ok().filter(|n| (1..=64).contains(n)))
        .collect::<Option<_>>()
        .ok_or_else(|| user(format!("--parallel {}: expected numbers like 1,2,4", a.parallel)))?;
    let e = Arc::new(aerolink_experiments::experiment::Experiment::load(&a.experiment)?);
    aerolink_net::sys::check_preconditions()?;
    let plan: Vec<_> = e.plan().into_iter().take(a.runs as usize).collect();
    let stop = aerolink_net::stop::on_signals().flag().clone();
    let exe = std::env::current_exe()?;
    let mut rows = Vec::new();
    // Client time per run (by plan position) at the first level.
    let mut first_client: Option<Vec<Option<f64>>> = None;
    for &p in &levels {
        eprintln!("{} runs of {} at --parallel {p}…", plan.len(), e.name);
        let t0 = std::time::Instant::now();
        let (rx, workers) = aerolink_experiments::pool::start(e.clone(), plan.clone(), p, exe.clone(), run_id(), Default::default(), stop.clone());
        let mut finished: Vec<_> = rx.into_iter().collect();
        finished.sort_by(|a, b| a.planned.key.cmp(&b.planned.key));
        let outs: Vec<aerolink_experiments::runner::RunOutcome> = finished.into_iter().map(|f| f.outcome).collect();
        for w in workers {
            let _ = w.join();
        }
        let wall = t0.elapsed().as_secs_f64();
        let med = |f: &dyn Fn(&aerolink_experiments::runner::RunOutcome) -> f64| {
            let mut v: Vec<f64> = outs.iter().filter(|o| o.ok).map(f).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let client: Vec<Option<f64>> = outs.iter().map(|o| o.ok.then_some(o.client_ms)).collect();
        let first = first_client.get_or_insert_with(|| client.clone());
        // |client time / the same run's at the first level − 1|, median.
        let mut changes: Vec<f64> = client.iter().zip(first.iter()).filter_map(|(a, b)| Some((a.as_ref()? / b.as_ref()? - 1.0).abs())).collect();
        changes.sort_by(f64::total_cmp);
        let lateness_max = outs.iter().filter(|o| o.ok).map(|o| o.lateness_us_p99).fold(0.0, f64::max);
        let row = serde_json::json!({
            "parallel": p, "runs": outs.len(), "failed": outs.iter().filter(|o| !o.ok).count(), "wall_s": wall,
            "runs_per_hour": outs.len() as f64 / wall * 3600.0,
            "setup_ms_median": med(&|o| o.setup_ms), "teardown_ms_median": med(&|o| o.teardown_ms),
            "client_s_median": med(&|o| o.client_ms / 1e3),
            "lateness_us_p99_median": med(&|o| o.lateness_us_p99), "lateness_us_p99_max": lateness_max,
            "client_change_median": changes.get(changes.len() / 2).copied().unwrap_or(f64::NAN),
        });
        eprintln!(
            "  {:.0} s: {:.0} runs/hour, set-up {:.0} ms and tear-down {:.0} ms per run (median)",
            wall,
            row["runs_per_hour"].as_f64().unwrap_or(0.0),
            row["setup_ms_median"].as_f64().unwrap_or(0.0),
            row["teardown_ms_median"].as_f64().unwrap_or(0.0)
        );
        rows.push(row);
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
    }
    let base = rows.first().and_then(|r| r["runs_per_hour"].as_f64()).unwrap_or(1.0);
    let result = serde_json::json!({
        "bench": "orchestration", "version": env!("CARGO_PKG_VERSION"), "experiment": e.name, "runs": plan.len(),
        "unix_time": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        "levels": rows,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        println!("aerolink orchestration benchmark: {} runs of {}", plan.len(), e.name);
        for r in result["levels"].as_array().into_iter().flatten() {
            let rph = r["runs_per_hour"].as_f64().unwrap_or(0.0);
            println!(
                "  --parallel {}: {:.0} runs/hour ({:.2}× the first level), {} failed; per run: set-up {:.0} ms, tear-down {:.0} ms (median)",
                r["parallel"],
                rph,
                rph / base,
                r["failed"],
                r["setup_ms_median"].as_f64().unwrap_or(0.0),
                r["teardown_ms_median"].as_f64().unwrap_or(0.0)
            );
            println!(
                "      accuracy: departures late by {:.0} µs at the 99th percentile (median run; worst run {:.0} µs); client time differs from the first level's by {:.1} % (median run)",
                r["lateness_us_p99_median"].as_f64().unwrap_or(f64::NAN),
                r["lateness_us_p99_max"].as_f64().unwrap_or(f64::NAN),
                r["client_change_median"].as_f64().unwrap_or(f64::NAN) * 100.0
            );
        }
    }
    append_result(&a.out, &result)?;
    Ok(0)
}
