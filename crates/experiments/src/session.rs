//! An experiment session (`aerolink experiment run`): an experiment file's
//! runs — or one shard of them — by a pool of workers into a SQLite store.
//! It resumes (runs the store holds are skipped; failed ones run again
//! unless `keep_failed`), removes what a killed aerolink left, stops
//! starting runs on the process's stop token or when the store cannot take
//! a run (what is stored stays), and tells a [`Progress`] each run's
//! result. The binary only parses [`RunArgs`] and draws the progress.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::experiment::{Experiment, PlannedRun, SpecError};
use crate::pool::Finished;
use crate::store::{Store, StoreError};

/// `aerolink experiment run`'s flags: the one spec of a session, parsed by
/// the binary and given back as a command line by [`RunArgs::to_args`]
/// (what cluster scripts launch).
#[derive(clap::Args, Debug, Clone)]
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
    /// Capture every run into DIR/RUN_KEY/hopN.pcapng (`aerolink run
    /// --pcap`: each packet's fate as its comment; segmentation offload off
    /// during those runs).
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
    /// Keep every run's TLS keys (DIR/RUN_KEY/keys.log, SSLKEYLOGFILE),
    /// QUIC qlogs (DIR/RUN_KEY/qlog/, QLOGDIR) and, for browser runs,
    /// Chromium's net log (DIR/RUN_KEY/netlog.json).
    #[arg(long, value_name = "DIR")]
    pub traces: Option<PathBuf>,
    /// Serve a page on loopback that draws every run under way, each link's
    /// rates, delays, drops and events (`aerolink run --live`; default
    /// 127.0.0.1:8950). Not passed on to cluster jobs.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8950")]
    pub live: Option<std::net::SocketAddr>,
    /// Who drives the runs' links: `thread` (a thread per hop) or `shared`
    /// (the process's event loops, one per core, shared by every run under
    /// way: for many runs at once; `bench fleet` compares them). How the
    /// runs are made, not what they are: their keys do not change.
    #[arg(long, default_value = "thread", value_name = "thread|shared")]
    pub pump: aerolink_net::lab::PumpMode,
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
        if let Some(p) = &self.pcap {
            v.extend(["--pcap".into(), p.display().to_string()]);
        }
        if let Some(p) = &self.traces {
            v.extend(["--traces".into(), p.display().to_string()]);
        }
        if self.pump != aerolink_net::lab::PumpMode::Thread {
            v.extend(["--pump".into(), self.pump.as_str().into()]);
        }
        v
    }
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

/// `--shard`'s parser: `I/N` or `auto/N`.
pub fn shard_arg(s: &str) -> Result<Shard, String> {
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

/// Why a session could not run, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A flag the user must change.
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Net(#[from] aerolink_net::NetError),
    /// The store could not be opened (a path, permissions, not a store).
    #[error("{0}")]
    Open(StoreError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store refused a run mid-session; the runs under way finished.
    #[error("storing a run: {err}; {stored} runs of this session stored before it, {held} runs in the store are unharmed")]
    StoreFailed { err: StoreError, stored: usize, held: usize },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl SessionError {
    /// Whether the user must fix it (exit 2) rather than a failure of ours.
    pub fn is_user(&self) -> bool {
        match self {
            SessionError::Usage(_) | SessionError::Spec(_) | SessionError::Open(_) => true,
            SessionError::Net(e) => e.is_user(),
            _ => false,
        }
    }
}

/// What a session is about to do.
pub struct Start<'a> {
    pub experiment: &'a Experiment,
    pub db: &'a std::path::Path,
    pub total: usize,
    pub skipped: usize,
    pub todo: usize,
    pub parallel: usize,
    /// Whether `parallel` is the machine's default (no --parallel).
    pub default_parallel: bool,
}

/// One finished and stored run, as a progress line says it.
pub struct Done<'a> {
    pub run: &'a Finished,
    /// `mss h2 [bbr] 10x100KB seed 3`.
    pub what: String,
    /// `plt_ms 1.23 s`, `ok`, or `FAILED: why`.
    pub result: String,
    /// Runs stored and failed so far this session, and how many it runs.
    pub done: usize,
    pub failed: usize,
    pub todo: usize,
    pub parallel: usize,
}

/// How a session tells its user what happens (a bar on a terminal, lines
/// otherwise: the binary's choice).
pub trait Progress {
    fn warn(&mut self, line: &str);
    fn start(&mut self, s: &Start);
    fn done(&mut self, d: &Done);
    fn finish(&mut self);
}

/// What a session did.
pub struct Outcome {
    pub name: String,
    pub db: PathBuf,
    pub total: usize,
    /// Runs stored this session, failed among them, and the runs the store
    /// holds of the plan (successful ones).
    pub stored: usize,
    pub failed: usize,
    pub held: usize,
    /// Interrupted: the runs left for next time.
    pub left: Option<usize>,
    pub seconds: f64,
}

/// Runs the session `a` asks for; `exe` is the aerolink each run executes,
/// `base` names the labs (unique per session).
pub fn run(a: &RunArgs, exe: PathBuf, base: String, progress: &mut dyn Progress) -> Result<Outcome, SessionError> {
    if a.parallel.is_some_and(|n| n == 0 || n > 64) {
        return Err(SessionError::Usage("--parallel: expected 1 to 64".into()));
    }
    let shard_index = match &a.shard {
        Some(sh) => sh.resolve(|v| std::env::var(v).ok()).map_err(SessionError::Usage)?,
        None => 1,
    };
    let mut db = a.db.clone();
    if db.to_string_lossy().contains("{shard}") {
        if a.shard.is_none() {
            return Err(SessionError::Usage("--db: {shard} is replaced by the shard's number: give --shard too".into()));
        }
        db = PathBuf::from(db.to_string_lossy().replace("{shard}", &shard_index.to_string()));
    }
    let e = Arc::new(Experiment::load(&a.file)?);
    let parallel = parallelism(&e, a.parallel, progress);
    aerolink_net::sys::check_preconditions()?;
    // What a killed aerolink left (its runs were never stored; they run
    // again below): its namespaces, their processes, its files.
    for stale in aerolink_net::lab::stale_labs() {
        progress.warn(&format!("removing lab {} left by a killed aerolink (pid {}): {} namespaces", stale.run, stale.pid, stale.namespaces.len()));
        aerolink_net::lab::remove_stale(&stale);
    }
    let mut store = Store::open(&db).map_err(SessionError::Open)?;
    store.record_experiment(&e.name, &a.file, &e.description, e.baseline.as_deref(), &e.source, &crate::record::rfc3339(std::time::SystemTime::now()))?;
    let plan = match a.shard {
        Some(sh) => e.shards(sh.of).swap_remove(shard_index - 1),
        None => e.plan(),
    };
    let total = plan.len();
    // What the store already holds: every run with keep_failed, else the
    // successful ones (failed runs are tried again).
    let held: HashSet<String> = store.runs(Some(&e.name))?.into_iter().filter(|r| a.keep_failed || r.ok).map(|r| r.run_key).collect();
    let todo: Vec<PlannedRun> = plan.into_iter().filter(|p| !held.contains(&p.key)).collect();
    let skipped = total - todo.len();
    let n_todo = todo.len();
    progress.start(&Start { experiment: &e, db: &db, total, skipped, todo: n_todo, parallel, default_parallel: a.parallel.is_none() });
    let stop = aerolink_net::stop::on_signals().flag().clone();
    let live = match a.live {
        Some(addr) => {
            let l = aerolink_net::live::Live::start(addr, &format!("experiment {}", e.name)).map_err(|err| SessionError::Usage(err.to_string()))?;
            progress.warn(&format!("aerolink: live view at {}", l.url()));
            Some(Arc::new(l))
        }
        None => None,
    };
    let keep = crate::pool::Keep { pcap: a.pcap.clone(), traces: a.traces.clone(), live, pump: a.pump };
    let (rx, workers) = crate::pool::start(e.clone(), todo, parallel, exe, base, keep, stop.clone());
    let host = hostname();
    let (mut done, mut failed) = (0usize, 0usize);
    let t0 = Instant::now();
    // A store that cannot take a run (disk full, locked too long): stop
    // starting runs, let those under way finish and remove their labs,
    // then say why. What is stored stays; the next run resumes.
    let mut store_failed: Option<StoreError> = None;
    for d in rx {
        if store_failed.is_some() || (!d.outcome.ok && stop.load(Ordering::SeqCst)) {
            // Cut short by Ctrl-C: not a result; the next run resumes it.
            continue;
        }
        let rec = crate::record::record(&e, &d, &host);
        if let Err(err) = store.insert_run(&rec) {
            stop.store(true, Ordering::SeqCst);
            store_failed = Some(err);
            continue;
        }
        done += 1;
        failed += usize::from(!d.outcome.ok);
        let (what, result) = describe(&e, &d, &rec);
        progress.done(&Done { run: &d, what, result, done, failed, todo: n_todo, parallel });
    }
    for w in workers {
        let _ = w.join();
    }
    progress.finish();
    if let Some(err) = store_failed {
        return Err(SessionError::StoreFailed { err, stored: done, held: skipped + done - failed });
    }
    let stopped = stop.load(Ordering::SeqCst);
    Ok(Outcome { name: e.name.clone(), db, total, stored: done, failed, held: skipped + done - failed, left: stopped.then_some(n_todo - done), seconds: t0.elapsed().as_secs_f64() })
}

/// The runs at once: `asked`, or what this machine's cores allow for the
/// experiment's links; warns when `asked` is more than that.
fn parallelism(e: &Experiment, asked: Option<usize>, progress: &mut dyn Progress) -> usize {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let safe = e.safe_parallelism(cores);
    let parallel = asked.unwrap_or(safe);
    if parallel > safe {
        let pump = e.pump_cores_per_run();
        if pump * parallel as f64 <= cores as f64 * crate::experiment::PUMP_SHARE_OF_CORES {
            // The ceiling of two runs per core binds, not the pump: say so
            // rather than blame a pump time of nothing.
            progress.warn(&format!(
                "warning: --parallel {parallel}: more than {safe} runs at once on {cores} cores (the default ceiling, two per core: each run's programs and lab setup share the CPU); their pump time is small ({pump:.3} cores each), which slow, paced links take well"
            ));
        } else {
            progress.warn(&format!(
                "warning: --parallel {parallel}: this experiment's runs may each take up to {pump:.2} cores of pump time ({:.1} per 100 Mbit/s a hop carries); more than {safe} at once on {cores} cores can make departures late (see `aerolink bench parallel`)",
                crate::experiment::PUMP_CORES_PER_100_MBIT
            ));
        }
    }
    parallel
}

/// A finished run as a progress line names it, and its headline figure.
fn describe(e: &Experiment, d: &Finished, rec: &crate::store::RunRecord) -> (String, String) {
    let p = &e.profiles[d.planned.profile];
    let c = &e.cases[d.planned.case];
    let m = c.workload.headline();
    let knobs = c.knobs.label();
    let what = format!("{} {}{} {} seed {}", p.name, c.workload.protocol(), if knobs.is_empty() { String::new() } else { format!(" [{knobs}]") }, c.workload.params_label(), d.planned.seed);
    let result = match (d.outcome.ok, rec.metrics.get(&m)) {
        (true, Some(v)) => format!("{m} {}", m.fmt(*v)),
        (true, None) => "ok".into(),
        (false, _) => format!("FAILED: {}", d.outcome.error.clone().unwrap_or_default()),
    };
    (what, result)
}

/// This machine's name, as stored with each run.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string()
}
