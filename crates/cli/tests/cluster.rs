//! An experiment sharded over a real one-node Slurm (Debian's slurmctld
//! and slurmd on this machine, set up by scripts/slurm-local.sh, which
//! `make test` runs): `aerolink experiment slurm --submit` submits the job
//! array and the merge job; the merged store must hold exactly the
//! unsharded plan's runs, each once, and the report must be written.
//!
//! Kubernetes has no cluster here: its manifests are tested by round trip
//! through the Kubernetes API types (src/cluster.rs), not on a cluster.

mod common;
use common::*;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

const SPEC: &str = r#"
name = "slurm-test"
seed = 2
repetitions = 2
timeout = "60s"
profiles = ["satcom-100"]
[[workload]]
type = "web"
protocols = ["h1", "h3"]
pages = ["4x10KB"]
"#;

fn job_state(id: &str) -> String {
    let o = Command::new("scontrol").args(["show", "job", id]).output().unwrap();
    let t = String::from_utf8_lossy(&o.stdout).to_string();
    t.split_whitespace().find_map(|w| w.strip_prefix("JobState=")).unwrap_or("UNKNOWN").to_string()
}

/// The one-node Slurm as the test found it: the daemons that
/// scripts/slurm-local.sh started for it are stopped when the test ends
/// (passed or not), after its jobs are cancelled; a Slurm that was running
/// before is left as it was.
struct LocalSlurm {
    script: std::path::PathBuf,
    started: Vec<String>,
    jobs: Vec<String>,
}

impl LocalSlurm {
    fn start() -> LocalSlurm {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-local.sh");
        let o = Command::new(&script).arg("start").output().expect("scripts/slurm-local.sh");
        let started = String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect();
        let slurm = LocalSlurm { script, started, jobs: Vec::new() };
        assert!(o.status.success(), "a one-node Slurm (make test installs slurmctld and slurmd): {}", String::from_utf8_lossy(&o.stderr));
        slurm
    }
}

impl Drop for LocalSlurm {
    fn drop(&mut self) {
        if !self.jobs.is_empty() {
            let _ = Command::new("scancel").args(&self.jobs).status();
        }
        if !self.started.is_empty() {
            let o = Command::new(&self.script).arg("stop").args(&self.started).output();
            match o {
                Ok(o) if o.status.success() => {}
                _ => eprintln!("could not stop the Slurm daemons this test started ({}): {o:?}", self.started.join(", ")),
            }
        }
    }
}

#[test]
fn a_slurm_job_array_merges_into_the_unsharded_set_of_runs() {
    require_root();
    let mut slurm = LocalSlurm::start();
    let d = tempdir("slurm");
    let spec = d.join("exp.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let out = d.join("slurm");
    let o = aerolink(&["experiment", "slurm", spec.to_str().unwrap(), "--shards", "2", "--dir", out.to_str().unwrap(), "--submit", "--json"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let sub: Value = serde_json::from_slice(&o.stdout).unwrap();
    let merge = sub["merge_job"].as_str().unwrap().to_string();
    slurm.jobs = vec![sub["array_job"].as_str().unwrap().to_string(), merge.clone()];
    // The merge job runs after the array; wait for it to end (polling its
    // state, as a user would with squeue).
    let deadline = Instant::now() + Duration::from_secs(600);
    let state = loop {
        let s = job_state(&merge);
        if ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"].contains(&s.as_str()) {
            break s;
        }
        assert!(Instant::now() < deadline, "the merge job is still {s}");
        std::thread::sleep(Duration::from_millis(500));
    };
    let logs = |f: &str| std::fs::read_to_string(out.join(f)).unwrap_or_default();
    assert_eq!(state, "COMPLETED", "merge: {}\nshard 1: {}\nshard 2: {}", logs("merge.log"), logs("shard-1.log"), logs("shard-2.log"));
    // Each task ran its own shard into its own store.
    assert!(out.join("shard-1.db").exists() && out.join("shard-2.db").exists());
    let o = aerolink(&["experiment", "plan", spec.to_str().unwrap(), "--json"]);
    let unsharded: BTreeSet<String> = serde_json::from_slice::<Vec<Value>>(&o.stdout).unwrap().iter().map(|r| r["key"].as_str().unwrap().to_string()).collect();
    let merged_db = sub["merged_db"].as_str().unwrap();
    let c = rusqlite::Connection::open(merged_db).unwrap();
    let mut st = c.prepare("SELECT run_key, ok FROM runs").unwrap();
    let rows: Vec<(String, bool)> = st.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? == 1))).unwrap().map(Result::unwrap).collect();
    let merged: BTreeSet<String> = rows.iter().map(|r| r.0.clone()).collect();
    assert_eq!(rows.len(), merged.len(), "a run stored twice");
    assert_eq!(merged, unsharded, "the array's merged store holds the unsharded plan's runs");
    assert!(rows.iter().all(|r| r.1), "{rows:?}");
    assert!(Path::new(sub["report"].as_str().unwrap()).exists(), "the merge job writes the report");
    assert!(leftover_namespaces().is_empty());
    // A Slurm this test started goes with it.
    let started = slurm.started.clone();
    drop(slurm);
    for d in &started {
        let alive = Command::new("pgrep").args(["-x", d]).output().unwrap().status.success();
        assert!(!alive, "{d} was started for this test and is still running");
    }
}
