//! Experiment files and `aerolink experiment` (filled in below).

use aerolink_lab::workload::Workload;

/// Checks a workload's parameters, naming `origin` in the message.
pub fn validate_workload(w: &Workload, origin: &str) -> Result<(), String> {
    match w {
        Workload::Web { protocol, page, depth } => {
            if !aerolink_work::web::PROTOCOLS.contains(&protocol.as_str()) {
                return Err(format!("{origin}: protocol {protocol:?}: expected one of {}", aerolink_work::web::PROTOCOLS.join(", ")));
            }
            aerolink_work::page::Page::parse(page, *depth).map_err(|m| format!("{origin}: page {page:?}: expected {m}"))?;
        }
        Workload::Bulk { transport, direction, bytes } => {
            if !["tcp", "quic"].contains(&transport.as_str()) {
                return Err(format!("{origin}: transport {transport:?}: expected tcp or quic"));
            }
            if !["down", "up"].contains(&direction.as_str()) {
                return Err(format!("{origin}: direction {direction:?}: expected down or up"));
            }
            if *bytes == 0 {
                return Err(format!("{origin}: size must be more than 0"));
            }
        }
        Workload::Objects { protocol, set, .. } => {
            if !["h1", "h2", "h3"].contains(&protocol.as_str()) {
                return Err(format!("{origin}: protocol {protocol:?}: expected h3, h2 or h1"));
            }
            aerolink_work::page::object_set(set).map_err(|m| format!("{origin}: {m}"))?;
        }
        Workload::Realtime { mechanism, scenario, count, size, .. } => {
            if !aerolink_work::realtime::MECHANISMS.contains(&mechanism.as_str()) {
                return Err(format!("{origin}: mechanism {mechanism:?}: expected one of {}", aerolink_work::realtime::MECHANISMS.join(", ")));
            }
            if !aerolink_work::realtime::SCENARIOS.contains(&scenario.as_str()) {
                return Err(format!("{origin}: scenario {scenario:?}: expected one of {}", aerolink_work::realtime::SCENARIOS.join(", ")));
            }
            if *count == 0 || *size < 24 {
                return Err(format!("{origin}: count must be at least 1 and size at least 24 bytes"));
            }
        }
        Workload::Messages { transport, direction, size, rate_bps, duration_s } => {
            if !["tcp", "quic"].contains(&transport.as_str()) {
                return Err(format!("{origin}: transport {transport:?}: expected tcp or quic"));
            }
            if !["down", "up", "both"].contains(&direction.as_str()) {
                return Err(format!("{origin}: direction {direction:?}: expected down, up or both"));
            }
            if *size < aerolink_work::messages::MIN_SIZE {
                return Err(format!("{origin}: size {size}: messages need at least 12 bytes (timestamp + length)"));
            }
            if *rate_bps <= 0.0 || *duration_s <= 0.0 {
                return Err(format!("{origin}: rate and duration must be positive"));
            }
        }
    }
    Ok(())
}

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use aerolink_lab::experiment::{profile_hash, Experiment, PlannedRun};
use aerolink_lab::runner::{run_once, RunOutcome, RunRequest};
use aerolink_lab::store::{NewRun, Store};
use clap::{Args, Subcommand};

use crate::error::{from_net, user};
use crate::linkargs::load_profile;

#[derive(Subcommand, Debug)]
pub enum ExperimentCmd {
    /// Run every combination of an experiment file, in random order, each in
    /// its own namespaces. Resumable: runs already stored are skipped.
    Run(RunArgs),
    /// Check an experiment file and list its runs without running them.
    Plan {
        file: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The experiment file (see experiments/).
    pub file: String,
    /// Runs at the same time (each has its own namespaces and link).
    #[arg(long, default_value_t = 1)]
    pub parallel: usize,
    /// The SQLite result store.
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
    /// Run failed runs again too (default: they are retried; this flag keeps
    /// them and only runs what is missing).
    #[arg(long)]
    pub keep_failed: bool,
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string()
}

/// Parses an experiment file, resolving profiles relative to it.
pub fn load(file: &str) -> anyhow::Result<Experiment> {
    let text = std::fs::read_to_string(file).map_err(|e| user(format!("{file}: cannot read: {e}")))?;
    let dir = Path::new(file).parent().map(Path::to_path_buf).unwrap_or_default();
    let resolve = |name: &str, ov: &[aerolink_link::profile::Override]| -> Result<aerolink_link::Profile, String> {
        let candidate = dir.join(name);
        let target = if name.ends_with(".toml") && candidate.exists() { candidate.to_string_lossy().to_string() } else { name.to_string() };
        load_profile(&target, ov).map_err(|e| e.to_string())
    };
    let check = |w: &Workload| validate_workload(w, "workload");
    Experiment::parse(&text, file, &resolve, &check).map_err(|e| user(e.to_string()))
}

pub fn run(cmd: ExperimentCmd) -> anyhow::Result<i32> {
    match cmd {
        ExperimentCmd::Plan { file, json } => {
            let e = load(&file)?;
            let plan = e.plan();
            if json {
                let v: Vec<_> = plan
                    .iter()
                    .map(|p| serde_json::json!({"key": p.key, "profile": e.profiles[p.profile].name, "workload": e.cases[p.case].workload, "knobs": e.cases[p.case].knobs, "rep": p.rep, "seed": p.seed}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                println!("{}: {} profiles × {} cases × {} repetitions = {} runs", e.name, e.profiles.len(), e.cases.len(), e.repetitions, plan.len());
                for c in &e.cases {
                    let k = aerolink_lab::report::knob_label(&serde_json::to_string(&c.knobs)?);
                    println!("  {} {} {}{}", c.workload.name(), c.workload.protocol(), c.workload.params_label(), if k.is_empty() { String::new() } else { format!(" [{k}]") });
                }
            }
            Ok(0)
        }
        ExperimentCmd::Run(a) => run_experiment(a),
    }
}

struct Done {
    planned: PlannedRun,
    outcome: RunOutcome,
    started_at: String,
    seconds: f64,
}

fn run_experiment(a: RunArgs) -> anyhow::Result<i32> {
    if a.parallel == 0 || a.parallel > 64 {
        return Err(user("--parallel: expected 1 to 64"));
    }
    let e = Arc::new(load(&a.file)?);
    aerolink_net::sys::check_preconditions().map_err(from_net)?;
    let mut store = Store::open(&a.db).map_err(|err| user(err.to_string()))?;
    store.record_experiment(&e.name, &a.file, &e.description, e.baseline.as_deref(), &e.source, &now_rfc3339())?;
    let plan = e.plan();
    let total = plan.len();
    let mut todo = VecDeque::new();
    for p in plan {
        let stored = if a.keep_failed { store.runs(Some(&e.name))?.iter().any(|r| r.run_key == p.key) } else { store.has_ok(&p.key)? };
        if !stored {
            todo.push_back(p);
        }
    }
    let skipped = total - todo.len();
    eprintln!("{}: {total} runs ({} profiles × {} cases × {} repetitions); {skipped} already in {}, {} to go, {} at a time", e.name, e.profiles.len(), e.cases.len(), e.repetitions, a.db.display(), todo.len(), a.parallel);
    let n_todo = todo.len();
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let queue = Arc::new(Mutex::new(todo));
    let (tx, rx) = mpsc::channel::<Done>();
    let exe = std::env::current_exe()?;
    let base_id = crate::run::run_id();
    let mut workers = Vec::new();
    for w in 0..a.parallel {
        let (queue, tx, stop, e, exe, base_id) = (queue.clone(), tx.clone(), stop.clone(), e.clone(), exe.clone(), base_id.clone());
        workers.push(std::thread::spawn(move || {
            let mut k = 0;
            loop {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Some(p) = queue.lock().expect("not poisoned").pop_front() else { return };
                k += 1;
                let req = RunRequest {
                    exe: exe.clone(),
                    run_name: format!("{base_id}w{w}r{k}"),
                    profile: e.profiles[p.profile].clone(),
                    seed: p.seed,
                    workload: e.cases[p.case].workload.clone(),
                    knobs: e.cases[p.case].knobs.clone(),
                    timeout: e.timeout,
                    ipv6: false,
                };
                let started_at = now_rfc3339();
                let t = Instant::now();
                let outcome = run_once(&req, &stop);
                if tx.send(Done { planned: p, outcome, started_at, seconds: t.elapsed().as_secs_f64() }).is_err() {
                    return;
                }
            }
        }));
    }
    drop(tx);
    let tty = std::io::stderr().is_terminal();
    let bar = if tty {
        let b = indicatif::ProgressBar::new(n_todo as u64);
        b.set_style(indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} runs, ETA {eta} {msg}").expect("a valid template"));
        b.enable_steady_tick(Duration::from_millis(250));
        Some(b)
    } else {
        None
    };
    let host = hostname();
    let (mut done, mut failed, mut interrupted) = (0usize, 0usize, 0usize);
    let t0 = Instant::now();
    for d in rx {
        let p = &e.profiles[d.planned.profile];
        let c = &e.cases[d.planned.case];
        if !d.outcome.ok && stop.load(Ordering::SeqCst) {
            // Cut short by Ctrl-C: not a result; the next run resumes it.
            interrupted += 1;
            continue;
        }
        let mut metrics = if d.outcome.ok { c.workload.metrics(&d.outcome.result) } else { Default::default() };
        aerolink_lab::workload::add_rtt_metrics(&mut metrics, p.base_rtt().as_millis_f64());
        let (pj, wj, kj) = (aerolink_lab::report::profile_summary(p).to_string(), serde_json::to_string(&c.workload)?, serde_json::to_string(&c.knobs)?);
        store.insert_run(&NewRun {
            run_key: &d.planned.key,
            experiment: &e.name,
            profile: &p.name,
            profile_hash: &profile_hash(p),
            profile_json: &pj,
            workload: c.workload.name(),
            protocol: &c.workload.protocol(),
            params: &c.workload.params_label(),
            workload_json: &wj,
            knobs_json: &kj,
            seed: d.planned.seed,
            rep: d.planned.rep,
            host: &host,
            started_at: &d.started_at,
            duration_s: d.seconds,
            outcome: &d.outcome,
            metrics: &metrics,
        })?;
        done += 1;
        if !d.outcome.ok {
            failed += 1;
        }
        let (m, _) = c.workload.headline();
        let knobs = aerolink_lab::report::knob_label(&kj);
        let what = format!("{} {}{} {} seed {}", p.name, c.workload.protocol(), if knobs.is_empty() { String::new() } else { format!(" [{knobs}]") }, c.workload.params_label(), d.planned.seed);
        let result = match (d.outcome.ok, metrics.get(m)) {
            (true, Some(v)) => format!("{m} {}", crate::bench::fmt_metric(m, *v)),
            (true, None) => "ok".into(),
            (false, _) => format!("FAILED: {}", d.outcome.error.clone().unwrap_or_default()),
        };
        match &bar {
            Some(b) => {
                b.inc(1);
                b.set_message(format!("{failed} failed"));
                if !d.outcome.ok {
                    b.println(format!("{what}: {result}"));
                }
            }
            None => {
                let eta = if done > 0 { t0.elapsed().as_secs_f64() / done as f64 * (n_todo - done) as f64 } else { 0.0 };
                eprintln!("[{done}/{n_todo}] {what}: {result} (ETA {:.0} s, {failed} failed)", eta);
            }
        }
    }
    for w in workers {
        let _ = w.join();
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let stopped = stop.load(Ordering::SeqCst);
    eprintln!(
        "{}: {done} runs stored ({failed} failed){} in {:.0} s; {} holds {} of {total} runs.",
        e.name,
        if stopped { format!(", interrupted: {} left for next time", n_todo - done + interrupted - interrupted.min(n_todo - done)) } else { String::new() },
        t0.elapsed().as_secs_f64(),
        a.db.display(),
        skipped + done - failed
    );
    eprintln!("report: aerolink report --db {} -o report.html", a.db.display());
    Ok(if stopped { 130 } else { 0 })
}
