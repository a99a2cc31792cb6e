//! Sharding an experiment and merging the shards' stores, without root:
//! the plan split deterministically and by expected time, runs recorded
//! into real SQLite files from fabricated outcomes (the store's input, not
//! a run), merged, merged again, and checked against the unsharded plan.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::SystemTime;

use aerolink_experiments::experiment::Experiment;
use aerolink_experiments::pool::Finished;
use aerolink_experiments::record::record;
use aerolink_experiments::store::{Merged, Mismatch, Store};

const SPEC: &str = "name = \"shardfix\"\nrepetitions = 3\nprofiles = [\"mss\", \"geo-600\", \"satcom-100\"]\n[[workload]]\ntype = \"web\"\nprotocols = [\"h1\", \"h2\", \"h3\"]\npages = [\"4x10KB\", \"10x100KB\"]\n[[workload]]\ntype = \"bulk\"\nsizes = [\"1MB\"]\n";

mod common;

fn db(name: &str) -> common::Scratch {
    common::db("shards", name)
}

fn store_of(e: &Experiment, path: &Path, runs: &[aerolink_experiments::experiment::PlannedRun], host: &str, ok: bool) {
    let mut s = Store::open(path).unwrap();
    s.record_experiment(&e.name, &e.file, &e.description, e.baseline.as_deref(), &e.source, "2026-11-22T00:00:00Z").unwrap();
    for p in runs {
        let f = Finished { planned: p.clone(), outcome: common::outcome(&e.cases[p.case].workload, ok), started: SystemTime::UNIX_EPOCH, seconds: 1.0 };
        s.insert_run(&record(e, &f, host)).unwrap();
    }
}

fn keys(path: &Path) -> BTreeSet<String> {
    Store::open(path).unwrap().runs(None).unwrap().into_iter().map(|r| r.run_key).collect()
}

#[test]
fn shards_cover_the_plan_once_balanced_and_the_same_everywhere() {
    let e = Experiment::parse(SPEC, "shardfix.toml").unwrap();
    let plan: BTreeSet<String> = e.plan().into_iter().map(|r| r.key).collect();
    assert_eq!(plan.len(), 3 * 7 * 3);
    for n in [1, 2, 3, 4, 7, 100] {
        let shards = e.shards(n);
        assert_eq!(shards.len(), n);
        let all: Vec<String> = shards.iter().flatten().map(|r| r.key.clone()).collect();
        assert_eq!(all.len(), plan.len(), "n = {n}: a run in two shards");
        assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), plan, "n = {n}");
        // Balanced: no shard is longer than the lightest by more than the
        // longest single run.
        let load: Vec<f64> = shards.iter().map(|s| s.iter().map(|r| e.expected_seconds(r)).sum()).collect();
        let longest = e.plan().iter().map(|r| e.expected_seconds(r)).fold(0.0, f64::max);
        let (lo, hi) = (load.iter().copied().fold(f64::INFINITY, f64::min), load.iter().copied().fold(0.0, f64::max));
        assert!(hi - lo <= longest + 1e-9, "n = {n}: loads {load:?}");
        // Deterministic: parsing the file again gives the same shards.
        let again = Experiment::parse(SPEC, "elsewhere/shardfix.toml").unwrap().shards(n);
        assert_eq!(
            shards.iter().map(|s| s.iter().map(|r| r.key.clone()).collect::<Vec<_>>()).collect::<Vec<_>>(),
            again.iter().map(|s| s.iter().map(|r| r.key.clone()).collect::<Vec<_>>()).collect::<Vec<_>>()
        );
    }
    // The big page over GEO is expected to take longer than the small one
    // over the 100 ms link.
    let t = |profile: &str, page: &str| {
        let r = e.plan().into_iter().find(|r| e.profiles[r.profile].name == profile && e.cases[r.case].workload.params_label() == page).unwrap();
        e.expected_seconds(&r)
    };
    assert!(t("geo-600", "10x100KB") > t("satcom-100", "4x10KB"));
}

#[test]
fn merging_shards_gives_the_unsharded_set_once_and_is_idempotent() {
    let e = Experiment::parse(SPEC, "shardfix.toml").unwrap();
    let shards = e.shards(3);
    let paths: Vec<common::Scratch> = (0..3).map(|i| db(&format!("shard{i}"))).collect();
    for (i, (sh, p)) in shards.iter().zip(&paths).enumerate() {
        store_of(&e, p, sh, &format!("node{i}"), true);
    }
    let all = db("all");
    let mut out = Store::open(&all).unwrap();
    for p in &paths {
        assert!(out.mismatches(&Store::open(p).unwrap()).unwrap().is_empty());
        out.merge_from(p).unwrap();
    }
    let plan: BTreeSet<String> = e.plan().into_iter().map(|r| r.key).collect();
    assert_eq!(keys(&all), plan);
    // Each run keeps the host it ran on, and its metrics.
    let runs = out.runs(None).unwrap();
    assert_eq!(runs.iter().map(|r| r.host.as_str()).collect::<BTreeSet<_>>(), ["node0", "node1", "node2"].into_iter().collect());
    assert!(runs.iter().all(|r| !r.metrics.is_empty()));
    // Each run says what machine it ran on; the report warns that the
    // merged runs come from several.
    assert!(runs.iter().all(|r| r.machine.contains(" cores, Linux ")), "{:?}", runs[0].machine);
    let html = aerolink_experiments::report::render(&out.experiments().unwrap(), &runs, "all.db", "now");
    assert!(html.contains("These runs come from 3 different machines"), "the report flags merged machines");
    // Again: nothing added, nothing duplicated.
    for p in &paths {
        let m = out.merge_from(p).unwrap();
        assert_eq!(m.added, 0);
    }
    assert_eq!(out.runs(None).unwrap().len(), plan.len());

    // A run that failed here and succeeded there is replaced; a failure
    // never replaces a success.
    let retry = db("retry");
    store_of(&e, &retry, &shards[0][..2], "node9", true);
    let failed = db("failed");
    store_of(&e, &failed, &shards[0][..2], "node8", false);
    let partial = db("partial");
    let mut p = Store::open(&partial).unwrap();
    assert_eq!(p.merge_from(&failed).unwrap(), Merged { added: 2, kept: 0 });
    assert_eq!(p.merge_from(&retry).unwrap(), Merged { added: 2, kept: 0 });
    assert_eq!(p.merge_from(&failed).unwrap(), Merged { added: 0, kept: 2 });
    assert!(p.runs(None).unwrap().iter().all(|r| r.ok && r.host == "node9"));

    // Another experiment file under the same name is refused.
    let other = db("other");
    let e2 = Experiment::parse(&SPEC.replace("repetitions = 3", "repetitions = 2"), "shardfix.toml").unwrap();
    store_of(&e2, &other, &e2.plan()[..1], "node0", true);
    let m = out.mismatches(&Store::open(&other).unwrap()).unwrap();
    assert!(matches!(m.first(), Some(Mismatch::Spec { experiment }) if experiment == "shardfix"), "{m:?}");
}

#[test]
fn a_store_from_before_machines_were_recorded_opens_and_merges() {
    // The runs table as it was: no `machine` column.
    let old = db("oldschema");
    {
        let c = rusqlite::Connection::open(&old).unwrap();
        c.execute_batch("CREATE TABLE runs (id INTEGER PRIMARY KEY, run_key TEXT NOT NULL UNIQUE, experiment TEXT NOT NULL, profile TEXT NOT NULL, profile_hash TEXT NOT NULL, profile_json TEXT NOT NULL, workload TEXT NOT NULL, protocol TEXT NOT NULL, params TEXT NOT NULL, workload_json TEXT NOT NULL, knobs_json TEXT NOT NULL, seed INTEGER NOT NULL, rep INTEGER NOT NULL, aerolink_version TEXT NOT NULL, host TEXT NOT NULL, started_at TEXT NOT NULL, duration_s REAL NOT NULL, ok INTEGER NOT NULL, error TEXT, setup_ms REAL, teardown_ms REAL, wire_bytes_down INTEGER, wire_bytes_up INTEGER, link_drops_loss INTEGER, link_drops_queue INTEGER, result_json TEXT);
            INSERT INTO runs VALUES (1, 'k1', 'x', 'mss', 'h', '{}', 'web', 'h2', '4x10KB', '{}', '{}', 1, 0, '0.1.0', 'oldhost', '2026-01-01T00:00:00Z', 1.0, 1, NULL, 1, 1, 1, 1, 0, 0, '{}');").unwrap();
    }
    let s = Store::open(&old).unwrap();
    let runs = s.runs(None).unwrap();
    assert_eq!((runs.len(), runs[0].host.as_str(), runs[0].machine.as_str()), (1, "oldhost", ""));
    let new = db("newschema");
    let mut n = Store::open(&new).unwrap();
    assert_eq!(n.merge_from(&old).unwrap().added, 1);
    assert_eq!(n.runs(None).unwrap()[0].host, "oldhost");
    let _ = std::fs::remove_file(&old);
    let _ = std::fs::remove_file(&new);
}
