//! Runs a list of planned runs with N workers, each run in its own lab, and
//! hands each result back as it finishes. Used by `experiment run` and by
//! the orchestration benchmark.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use crate::experiment::{Experiment, PlannedRun};
use crate::runner::{run_once, RunOutcome, RunRequest};

pub struct Finished {
    pub planned: PlannedRun,
    pub outcome: RunOutcome,
    pub started: SystemTime,
    pub seconds: f64,
}

/// What runs keep beside their results, each in `DIR/RUN_KEY/`, and who
/// drives their links.
#[derive(Clone, Default)]
pub struct Keep {
    /// Captures (`experiment run --pcap`).
    pub pcap: Option<PathBuf>,
    /// TLS keys and qlogs (`experiment run --traces`).
    pub traces: Option<PathBuf>,
    /// The live view, drawing every run under way (`experiment run --live`).
    pub live: Option<Arc<aerolink_net::live::Live>>,
    /// A thread per hop, or the shared loops (`experiment run --pump`).
    pub pump: aerolink_net::lab::PumpMode,
}

/// Starts `parallel` workers on `plan`. Lab names are `{base}w{worker}r{k}`,
/// unique among the workers. Once `stop` is set no new run starts (the ones
/// under way are cut short by `run_once`). The channel closes when every
/// worker is done; join the handles to wait for their labs to be removed.
/// With `keep`, each run keeps its captures or traces in `DIR/RUN_KEY/`.
pub fn start(
    e: Arc<Experiment>,
    plan: impl IntoIterator<Item = PlannedRun>,
    parallel: usize,
    exe: PathBuf,
    base: String,
    keep: Keep,
    stop: Arc<AtomicBool>,
) -> (mpsc::Receiver<Finished>, Vec<JoinHandle<()>>) {
    let queue: Arc<Mutex<VecDeque<PlannedRun>>> = Arc::new(Mutex::new(plan.into_iter().collect()));
    let (tx, rx) = mpsc::channel();
    let workers = (0..parallel)
        .map(|w| {
            let (queue, tx, stop, e, exe, base, keep) = (queue.clone(), tx.clone(), stop.clone(), e.clone(), exe.clone(), base.clone(), keep.clone());
            std::thread::spawn(move || {
                let mut k = 0;
                while !stop.load(Ordering::SeqCst) {
                    let Some(p) = queue.lock().expect("not poisoned").pop_front() else { return };
                    k += 1;
                    let c = &e.cases[p.case];
                    let what = [c.workload.name().to_string(), c.workload.params_label(), c.knobs.label()].into_iter().filter(|x| !x.is_empty()).collect::<Vec<_>>().join(" ");
                    let name = format!("{} · {what} · rep {}", e.profiles[p.profile].name, p.rep);
                    let req = RunRequest {
                        exe: exe.clone(),
                        run_name: format!("{base}w{w}r{k}"),
                        profile: e.profiles[p.profile].clone(),
                        chain: e.chain.clone(),
                        seed: p.seed,
                        workload: keep.traces.as_ref().map_or_else(|| c.workload.clone(), |d| c.workload.with_net_log(d.join(&p.key).join("netlog.json"))),
                        knobs: e.cases[p.case].knobs.clone(),
                        timeout: e.timeout,
                        pcap: keep.pcap.as_ref().map(|d| aerolink_net::pcap::PcapSpec::whole(d.join(&p.key))),
                        traces: keep.traces.as_ref().map(|d| d.join(&p.key)),
                        live: keep.live.as_ref().map(|l| l.feed_for(&name)),
                        pump: keep.pump,
                    };
                    let started = SystemTime::now();
                    let t = Instant::now();
                    let outcome = run_once(&req, &stop);
                    if let Some(l) = &keep.live {
                        l.retire(&name);
                    }
                    if tx.send(Finished { planned: p, outcome, started, seconds: t.elapsed().as_secs_f64() }).is_err() {
                        return;
                    }
                }
            })
        })
        .collect();
    (rx, workers)
}
