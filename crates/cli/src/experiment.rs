//! `aerolink experiment plan | run | check`: experiment files, run by a
//! pool of workers into the SQLite store, and the studies' results judged
//! (check.rs).

use std::io::IsTerminal;
use std::time::{Duration, Instant, SystemTime};

use aerolink_experiments::experiment::Experiment;
use aerolink_experiments::session;
use clap::Subcommand;

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
    /// an entry does not hold (or a qualitative one is not observed).
    ///
    ///   aerolink experiment check --db results/ifc-web.db --db results/iridium-301.db --markdown docs/reproductions.md
    Check(crate::check::CheckArgs),
}

pub use aerolink_experiments::session::RunArgs;

pub fn now_rfc3339() -> String {
    aerolink_experiments::record::rfc3339(SystemTime::now())
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
    let mut progress = Lines { bar: None, t0: Instant::now() };
    let o = session::run(&a, std::env::current_exe()?, crate::run::run_id(), &mut progress)?;
    eprintln!(
        "{}: {} runs stored ({} failed){} in {:.0} s; {} holds {} of {} runs.",
        o.name,
        o.stored,
        o.failed,
        o.left.map(|n| format!(", interrupted: {n} left for next time")).unwrap_or_default(),
        o.seconds,
        o.db.display(),
        o.held,
        o.total
    );
    eprintln!("report: aerolink report --db {} -o report.html", o.db.display());
    Ok(if o.left.is_some() { 130 } else { 0 })
}

/// A session's progress: a bar on a terminal, a line a run otherwise.
struct Lines {
    bar: Option<indicatif::ProgressBar>,
    t0: Instant,
}

impl session::Progress for Lines {
    fn warn(&mut self, line: &str) {
        eprintln!("{line}");
    }

    fn start(&mut self, s: &session::Start) {
        let e = s.experiment;
        eprintln!(
            "{}: {} runs ({} profiles × {} cases × {} repetitions); {} already in {}, {} to go, {} at a time{}",
            e.name,
            s.total,
            e.profiles.len(),
            e.cases.len(),
            e.repetitions,
            s.skipped,
            s.db.display(),
            s.todo,
            s.parallel,
            if s.default_parallel { " (--parallel default for this machine)" } else { "" }
        );
        if std::io::stderr().is_terminal() {
            let b = indicatif::ProgressBar::new(s.todo as u64);
            b.set_style(indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} runs, ETA {eta} {msg}").expect("a valid template"));
            b.enable_steady_tick(Duration::from_millis(250));
            self.bar = Some(b);
        }
        self.t0 = Instant::now();
    }

    fn done(&mut self, d: &session::Done) {
        let (what, result) = (&d.what, &d.result);
        // Not the link's doing: say it beside the figure it spoils.
        let faults = d.run.outcome.emulator_faults.iter().map(|f| format!("{what}: warning: the emulator lost frames no link model dropped (an aerolink bug: please report it): {f}"));
        match &self.bar {
            Some(b) => {
                faults.for_each(|f| b.println(f));
                b.inc(1);
                // The workers keep `parallel` runs going while any are left.
                let running = d.parallel.min(d.todo - d.done);
                b.set_message(format!("{running} running, {} failed; last: {what}: {result}", d.failed));
                if !d.run.outcome.ok {
                    b.println(format!("{what}: {result}"));
                }
            }
            None => {
                faults.for_each(|f| eprintln!("{f}"));
                let eta = self.t0.elapsed().as_secs_f64() / d.done as f64 * (d.todo - d.done) as f64;
                eprintln!("[{}/{}] {what}: {result} (ETA {eta:.0} s, {} failed)", d.done, d.todo, d.failed);
            }
        }
    }

    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}
