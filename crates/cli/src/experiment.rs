//! `aerolink experiment plan | run | check`: experiment files, run by a
//! pool of workers into the SQLite store, and the studies' results judged
//! (check.rs).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use aerolink_lab::experiment::{Experiment, PlannedRun};
use aerolink_lab::store::Store;
use clap::{Args, Subcommand};

use crate::error::user;

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
        /// Split the runs into N shards balanced by expected run time (the
        /// same file and N give the same shards on any machine); run one
        /// with `experiment run FILE --shard I/N`.
        #[arg(long, value_name = "N")]
        shards: Option<usize>,
    },
    /// Shard the experiment over a Slurm cluster: writes a job array (one
    /// task per shard, `experiment run --shard auto/N`), a merge-and-report
    /// job that runs after it, and submit.sh; `--submit` submits them.
    Slurm(crate::cluster::SlurmArgs),
    /// Shard the experiment over a Kubernetes cluster: writes an Indexed
    /// Job (one completion index per shard, the experiment in a ConfigMap,
    /// the shard stores on a ReadWriteMany volume; the pods need NET_ADMIN,
    /// SYS_ADMIN and /dev/net/tun) and a merge Job, built from Kubernetes'
    /// API types.
    K8s(crate::cluster::K8sArgs),
    /// Judge the studies' results by stored runs. With FILE: the catalogue
    /// entries FILE maps (`[[judge]]`), by the
    /// runs in --db. Without: every entry of the catalogue (findings/), each
    /// by the experiment (experiments/*.toml) that maps it, with the runs of
    /// whichever --db store holds that experiment; each study's agreement
    /// score first. Bands and verdicts are findings/README.md's. Exits 1 if
    /// an entry does not hold.
    ///
    ///   aerolink experiment check --db results/ifc-web.db --db results/iridium-301.db --markdown docs/reproductions.md
    Check(crate::check::CheckArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The experiment file (see experiments/).
    pub file: String,
    /// Runs at the same time (each has its own namespaces and link).
    /// Default: as many as this machine's cores allow for this
    /// experiment's links (their pumps may take half the cores; 0.5 core per
    /// 100 Mbit/s a hop carries, as `aerolink bench parallel` measured;
    /// at most 2 per core). More than that is allowed, with a warning.
    #[arg(long)]
    pub parallel: Option<usize>,
    /// The SQLite result store.
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
    /// Keep the failed runs already in the store and run only what is
    /// missing (by default a run that failed is run again).
    #[arg(long)]
    pub keep_failed: bool,
    /// Run only shard I of N (1-based; see `experiment plan --shards N`),
    /// e.g. `--shard 2/4 --db shard-2.db`; merge the stores with `aerolink
    /// results merge`. `--shard auto/N` takes I from the cluster scheduler:
    /// SLURM_ARRAY_TASK_ID (a Slurm job array, 1-based) or
    /// JOB_COMPLETION_INDEX (a Kubernetes Indexed Job, 0-based, so plus 1);
    /// `{shard}` in --db is replaced by I.
    #[arg(long, value_name = "I/N", value_parser = shard_arg)]
    pub shard: Option<Shard>,
}

/// Which shard of how many (`--shard I/N` or `auto/N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: ShardIndex,
    pub of: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardIndex {
    /// 1-based.
    At(usize),
    /// From the scheduler's environment when the run starts.
    Auto,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            ShardIndex::At(i) => write!(f, "{i}/{}", self.of),
            ShardIndex::Auto => write!(f, "auto/{}", self.of),
        }
    }
}

/// The scheduler's variables `--shard auto/N` reads, and whether each is
/// 0-based.
pub const SHARD_ENV: [(&str, bool); 2] = [("SLURM_ARRAY_TASK_ID", false), ("JOB_COMPLETION_INDEX", true)];

impl Shard {
    /// The 1-based index, read from the environment for `auto`.
    pub fn resolve(&self, env: impl Fn(&str) -> Option<String>) -> Result<usize, String> {
        let i = match self.index {
            ShardIndex::At(i) => i,
            ShardIndex::Auto => {
                let (var, value, zero_based) = SHARD_ENV.iter().find_map(|(v, z)| env(v).map(|x| (*v, x, *z))).ok_or_else(|| {
                    format!("--shard {self}: neither SLURM_ARRAY_TASK_ID (a Slurm job array) nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set; give the shard as I/{}", self.of)
                })?;
                let k: usize = value.trim().parse().map_err(|_| format!("--shard {self}: {var}={value:?} is not a shard number"))?;
                if zero_based {
                    k + 1
                } else {
                    k
                }
            }
        };
        if i == 0 || i > self.of {
            return Err(format!("--shard {self}: shard {i} is not one of 1 to {}", self.of));
        }
        Ok(i)
    }
}

fn shard_arg(s: &str) -> Result<Shard, String> {
    let bad = || format!("{s:?}: expected I/N, like 2/4, or auto/N");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let of: usize = n.trim().parse().map_err(|_| bad())?;
    if of == 0 {
        return Err(format!("{s:?}: N must be at least 1"));
    }
    let index = match i.trim() {
        "auto" => ShardIndex::Auto,
        i => {
            let i: usize = i.parse().map_err(|_| bad())?;
            if i == 0 || i > of {
                return Err(format!("{s:?}: I must be 1 to N"));
            }
            ShardIndex::At(i)
        }
    };
    Ok(Shard { index, of })
}

impl RunArgs {
    /// The command line that gives these arguments back (after
    /// `aerolink`): what the cluster scripts launch.
    pub fn to_args(&self) -> Vec<String> {
        let mut v: Vec<String> = vec!["experiment".into(), "run".into(), self.file.clone(), "--db".into(), self.db.display().to_string()];
        if let Some(p) = self.parallel {
            v.extend(["--parallel".into(), p.to_string()]);
        }
        if self.keep_failed {
            v.push("--keep-failed".into());
        }
        if let Some(sh) = self.shard {
            v.extend(["--shard".into(), sh.to_string()]);
        }
        v
    }
}

pub fn now_rfc3339() -> String {
    aerolink_lab::record::rfc3339(SystemTime::now())
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string()
}

/// Parses an experiment file (profiles and topologies relative to it).
pub fn load(file: &str) -> anyhow::Result<Experiment> {
    Ok(Experiment::load(file)?)
}

pub fn run(cmd: ExperimentCmd) -> anyhow::Result<i32> {
    match cmd {
        ExperimentCmd::Plan { file, json, shards: Some(n) } => {
            if n == 0 || n > 10_000 {
                return Err(user("--shards: expected 1 to 10000"));
            }
            let e = load(&file)?;
            let shards = e.shards(n);
            if json {
                let v: Vec<_> = shards
                    .iter()
                    .enumerate()
                    .map(|(i, sh)| serde_json::json!({"shard": format!("{}/{n}", i + 1), "runs": sh.len(), "expected_s": sh.iter().map(|r| e.expected_seconds(r)).sum::<f64>(), "keys": sh.iter().map(|r| &r.key).collect::<Vec<_>>()}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                println!("{}: {} runs in {n} shards (balanced by expected run time; `aerolink experiment run {file} --shard I/{n}`)", e.name, shards.iter().map(|s| s.len()).sum::<usize>());
                for (i, sh) in shards.iter().enumerate() {
                    println!("  shard {}/{n}: {} runs, about {:.0} s of runs", i + 1, sh.len(), sh.iter().map(|r| e.expected_seconds(r)).sum::<f64>());
                }
            }
            Ok(0)
        }
        ExperimentCmd::Plan { file, json, shards: None } => {
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
                    let k = c.knobs.label();
                    println!("  {} {} {}{}", c.workload.name(), c.workload.protocol(), c.workload.params_label(), if k.is_empty() { String::new() } else { format!(" [{k}]") });
                }
            }
            Ok(0)
        }
        ExperimentCmd::Run(a) => run_experiment(a),
        ExperimentCmd::Slurm(a) => crate::cluster::slurm(a),
        ExperimentCmd::K8s(a) => crate::cluster::k8s(a),
        ExperimentCmd::Check(a) => crate::check::check(a),
    }
}

fn run_experiment(a: RunArgs) -> anyhow::Result<i32> {
    if a.parallel.is_some_and(|n| n == 0 || n > 64) {
        return Err(user("--parallel: expected 1 to 64"));
    }
    let shard_index = match &a.shard {
        Some(sh) => sh.resolve(|v| std::env::var(v).ok()).map_err(user)?,
        None => 1,
    };
    let mut a = a;
    if a.db.to_string_lossy().contains("{shard}") {
        if a.shard.is_none() {
            return Err(user("--db: {shard} is replaced by the shard's number: give --shard too"));
        }
        a.db = PathBuf::from(a.db.to_string_lossy().replace("{shard}", &shard_index.to_string()));
    }
    let e = Arc::new(load(&a.file)?);
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let safe = e.safe_parallelism(cores);
    let parallel = a.parallel.unwrap_or(safe);
    if parallel > safe {
        let pump = e.pump_cores_per_run();
        if pump * parallel as f64 <= cores as f64 * aerolink_lab::experiment::PUMP_SHARE_OF_CORES {
            // The ceiling of two runs per core binds, not the pump: say so
            // rather than blame a pump time of nothing.
            eprintln!(
                "warning: --parallel {parallel}: more than {safe} runs at once on {cores} cores (the default ceiling, two per core: each run's programs and lab setup share the CPU); their pump time is small ({pump:.3} cores each), which slow, paced links take well"
            );
        } else {
            eprintln!(
                "warning: --parallel {parallel}: this experiment's runs may each take up to {pump:.2} cores of pump time ({:.1} per 100 Mbit/s a hop carries); more than {safe} at once on {cores} cores can make departures late (see `aerolink bench parallel`)",
                aerolink_lab::experiment::PUMP_CORES_PER_100_MBIT
            );
        }
    }
    aerolink_net::sys::check_preconditions()?;
    // What a killed aerolink left (its runs were never stored; they run
    // again below): its namespaces, their processes, its files.
    for stale in aerolink_net::lab::stale_labs() {
        eprintln!("removing lab {} left by a killed aerolink (pid {}): {} namespaces", stale.run, stale.pid, stale.namespaces.len());
        aerolink_net::lab::remove_stale(&stale);
    }
    let mut store = Store::open(&a.db).map_err(|err| user(err.to_string()))?;
    store.record_experiment(&e.name, &a.file, &e.description, e.baseline.as_deref(), &e.source, &now_rfc3339())?;
    let plan = match a.shard {
        Some(sh) => e.shards(sh.of).swap_remove(shard_index - 1),
        None => e.plan(),
    };
    let total = plan.len();
    // What the store already holds: every run with --keep-failed, else the
    // successful ones (failed runs are tried again).
    let held: std::collections::HashSet<String> = store.runs(Some(&e.name))?.into_iter().filter(|r| a.keep_failed || r.ok).map(|r| r.run_key).collect();
    let todo: Vec<PlannedRun> = plan.into_iter().filter(|p| !held.contains(&p.key)).collect();
    let skipped = total - todo.len();
    eprintln!(
        "{}: {total} runs ({} profiles × {} cases × {} repetitions); {skipped} already in {}, {} to go, {} at a time{}",
        e.name,
        e.profiles.len(),
        e.cases.len(),
        e.repetitions,
        a.db.display(),
        todo.len(),
        parallel,
        if a.parallel.is_none() { " (--parallel default for this machine)" } else { "" }
    );
    let n_todo = todo.len();
    let stop = aerolink_net::stop::on_signals().flag().clone();
    let (rx, workers) = aerolink_lab::pool::start(e.clone(), todo, parallel, std::env::current_exe()?, crate::run::run_id(), stop.clone());
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
    let (mut done, mut failed) = (0usize, 0usize);
    let t0 = Instant::now();
    // A store that cannot take a run (disk full, locked too long): stop
    // starting runs, let those under way finish and remove their labs,
    // then say why. What is stored stays; the next run resumes.
    let mut store_failed: Option<aerolink_lab::store::StoreError> = None;
    for d in rx {
        if store_failed.is_some() {
            continue;
        }
        let p = &e.profiles[d.planned.profile];
        let c = &e.cases[d.planned.case];
        if !d.outcome.ok && stop.load(Ordering::SeqCst) {
            // Cut short by Ctrl-C: not a result; the next run resumes it.
            continue;
        }
        let rec = aerolink_lab::record::record(&e, &d, &host);
        if let Err(err) = store.insert_run(&rec) {
            stop.store(true, Ordering::SeqCst);
            store_failed = Some(err);
            continue;
        }
        done += 1;
        if !d.outcome.ok {
            failed += 1;
        }
        let m = c.workload.headline();
        let knobs = c.knobs.label();
        let what = format!("{} {}{} {} seed {}", p.name, c.workload.protocol(), if knobs.is_empty() { String::new() } else { format!(" [{knobs}]") }, c.workload.params_label(), d.planned.seed);
        let result = match (d.outcome.ok, rec.metrics.get(&m)) {
            (true, Some(v)) => format!("{m} {}", m.fmt(*v)),
            (true, None) => "ok".into(),
            (false, _) => format!("FAILED: {}", d.outcome.error.clone().unwrap_or_default()),
        };
        // Not the link's doing: say it beside the figure it spoils.
        let faults = d.outcome.emulator_faults.iter().map(|f| format!("{what}: warning: the emulator lost frames no link model dropped (an aerolink bug: please report it): {f}"));
        match &bar {
            Some(b) => {
                faults.for_each(|f| b.println(f));
                b.inc(1);
                // The workers keep `parallel` runs going while any are left.
                let running = parallel.min(n_todo - done);
                b.set_message(format!("{running} running, {failed} failed; last: {what}: {result}"));
                if !d.outcome.ok {
                    b.println(format!("{what}: {result}"));
                }
            }
            None => {
                faults.for_each(|f| eprintln!("{f}"));
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
    if let Some(err) = store_failed {
        return Err(anyhow::anyhow!("storing a run: {err}; {done} runs of this session stored before it, {} runs in the store are unharmed", skipped + done - failed));
    }
    let stopped = stop.load(Ordering::SeqCst);
    eprintln!(
        "{}: {done} runs stored ({failed} failed){} in {:.0} s; {} holds {} of {total} runs.",
        e.name,
        if stopped { format!(", interrupted: {} left for next time", n_todo - done) } else { String::new() },
        t0.elapsed().as_secs_f64(),
        a.db.display(),
        skipped + done - failed
    );
    eprintln!("report: aerolink report --db {} -o report.html", a.db.display());
    Ok(if stopped { 130 } else { 0 })
}
