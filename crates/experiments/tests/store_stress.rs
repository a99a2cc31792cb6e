//! The store under stress, without root: four writer processes store the
//! runs of one experiment into one SQLite file (each run first as failed,
//! then its successful retry replacing it, as a resumed experiment does)
//! while a reader takes snapshots, and the writers are killed with SIGKILL
//! at random (seeded) moments and restarted. The file must never be
//! corrupt, a run a writer saw committed is never lost, no run is stored
//! twice, and every snapshot is consistent: each run with exactly the
//! metrics stored with it, and no successful run disappearing.
//!
//! The outcomes are fabricated (the store's input, not real runs): what is
//! under test is SQLite with our schema, transactions and journal mode.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use aerolink_experiments::experiment::Experiment;
use aerolink_experiments::pool::Finished;
use aerolink_experiments::record::record;
use aerolink_experiments::store::{RunRecord, Store};
use rand::{Rng, SeedableRng};

const SPEC: &str = "name = \"stress\"\nrepetitions = 150\nprofiles = [\"mss\", \"geo-600\", \"satcom-100\"]\n[[workload]]\ntype = \"web\"\nprotocols = [\"h1\", \"h2\", \"h3\"]\npages = [\"4x10KB\", \"10x100KB\"]\n[[workload]]\ntype = \"bulk\"\nsizes = [\"1MB\"]\n";
const WRITERS: usize = 4;

fn experiment() -> Experiment {
    Experiment::parse(SPEC, "stress.toml").unwrap()
}

/// Writer `w`'s share of the plan, as records: (failed attempt, success).
fn share(e: &Experiment, w: usize) -> Vec<(RunRecord, RunRecord)> {
    let rec = |p: &aerolink_experiments::experiment::PlannedRun, ok| {
        record(e, &Finished { planned: p.clone(), outcome: common::outcome(&e.cases[p.case].workload, ok), started: SystemTime::UNIX_EPOCH, seconds: 1.0 }, "stress-host")
    };
    e.plan().iter().enumerate().filter(|(i, _)| i % WRITERS == w).map(|(_, p)| (rec(p, false), rec(p, true))).collect()
}

/// Not a test on its own: one writer process of the stress test.
#[test]
#[ignore]
fn writer() {
    let (Some(db), Some(w)) = (std::env::var_os("AEROLINK_STRESS_DB"), std::env::var("AEROLINK_STRESS_WRITER").ok()) else { return };
    let w: usize = w.parse().unwrap();
    let e = experiment();
    let mut store = Store::open(Path::new(&db)).unwrap();
    let mut out = std::io::stdout().lock();
    for (failed, ok) in share(&e, w) {
        // Resumed as `experiment run` resumes: what is stored is skipped.
        if store.has_ok(&ok.run_key).unwrap() {
            continue;
        }
        store.insert_run(&failed).unwrap();
        store.insert_run(&ok).unwrap();
        writeln!(out, "stored {}", ok.run_key).unwrap();
        out.flush().unwrap();
    }
    writeln!(out, "done").unwrap();
}

struct Writer {
    child: Child,
    done: Arc<AtomicBool>,
}

fn spawn_writer(db: &Path, w: usize, committed: Arc<Mutex<BTreeSet<String>>>) -> Writer {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "writer", "--nocapture", "--include-ignored", "--test-threads=1"])
        .env("AEROLINK_STRESS_DB", db)
        .env("AEROLINK_STRESS_WRITER", w.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(k) = line.strip_prefix("stored ") {
                committed.lock().unwrap().insert(k.to_string());
            } else if line == "done" {
                d.store(true, Ordering::SeqCst);
            }
        }
    });
    Writer { child, done }
}

mod common;

fn db_path() -> common::Scratch {
    common::db("stress", "writers")
}

#[test]
fn four_writers_a_reader_and_random_kills_lose_and_corrupt_nothing() {
    let db = db_path();
    let e = experiment();
    let planned: BTreeSet<String> = e.plan().into_iter().map(|p| p.key).collect();
    // The metrics a stored run keeps: a failed one's, and a successful
    // one's by its workload (a page load and a transfer differ).
    let records = share(&e, 0);
    let n_failed = records[0].0.metrics.len();
    let n_ok: BTreeMap<String, usize> = records.iter().map(|(_, o)| (o.workload.clone(), o.metrics.len())).collect();
    assert!(n_ok.len() == 2 && n_ok.values().all(|n| *n > 0));
    // The schema first, so that the writers do not race to create it.
    drop(Store::open(&db).unwrap());
    let committed: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let mut writers: Vec<Writer> = (0..WRITERS).map(|w| spawn_writer(&db, w, committed.clone())).collect();

    // The reader: snapshots while the writers write and die.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (db, stop, committed, n_ok) = (db.clone(), stop.clone(), committed.clone(), n_ok.clone());
        std::thread::spawn(move || -> usize {
            let store = Store::open(&db).unwrap();
            let (mut snapshots, mut last_ok) = (0usize, 0usize);
            while !stop.load(Ordering::SeqCst) {
                // What writers had committed before this snapshot began
                // must all be in it.
                let before: BTreeSet<String> = committed.lock().unwrap().clone();
                let runs = store.runs(Some("stress")).unwrap();
                let keys: BTreeMap<&str, bool> = runs.iter().map(|r| (r.run_key.as_str(), r.ok)).collect();
                assert_eq!(keys.len(), runs.len(), "a run stored twice");
                for r in &runs {
                    let want = if r.ok { n_ok[&r.workload] } else { n_failed };
                    assert_eq!(r.metrics.len(), want, "run {} seen with {} of its {want} metrics", r.run_key, r.metrics.len());
                }
                for k in &before {
                    assert_eq!(keys.get(k.as_str()), Some(&true), "a committed run is missing from a later snapshot: {k}");
                }
                let ok = runs.iter().filter(|r| r.ok).count();
                assert!(ok >= last_ok, "successful runs went from {last_ok} to {ok}");
                last_ok = ok;
                snapshots += 1;
            }
            snapshots
        })
    };

    // Kill a random writer at random moments, and start it again.
    let mut rng = rand::rngs::StdRng::seed_from_u64(4);
    let mut kills = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !writers.iter().all(|w| w.done.load(Ordering::SeqCst)) {
        assert!(Instant::now() < deadline, "the writers did not finish");
        // The fault is the wait: a kill 5–80 ms after the last.
        std::thread::sleep(Duration::from_millis(rng.random_range(5..80)));
        if kills < 30 {
            let w = rng.random_range(0..WRITERS);
            if !writers[w].done.load(Ordering::SeqCst) {
                let _ = writers[w].child.kill();
                let _ = writers[w].child.wait();
                kills += 1;
                writers[w] = spawn_writer(&db, w, committed.clone());
            }
        }
    }
    for w in &mut writers {
        let _ = w.child.wait();
    }
    stop.store(true, Ordering::SeqCst);
    let snapshots = reader.join().expect("every snapshot consistent");
    assert!(snapshots > 0 && kills > 0, "{snapshots} snapshots, {kills} kills");

    let c = rusqlite::Connection::open(&db).unwrap();
    let check: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
    let mode: String = c.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let store = Store::open(&db).unwrap();
    let runs = store.runs(Some("stress")).unwrap();
    let keys: BTreeSet<String> = runs.iter().map(|r| r.run_key.clone()).collect();
    assert_eq!(runs.len(), planned.len(), "each planned run stored once");
    assert_eq!(keys, planned);
    assert!(runs.iter().all(|r| r.ok && r.metrics.len() == n_ok[&r.workload]));
    eprintln!("{} runs by {WRITERS} writers, {kills} writers killed, {snapshots} consistent snapshots", runs.len());
}
