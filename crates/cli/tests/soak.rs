//! The soak test (`make soak`, an hour by default; `SOAK_SECONDS` to
//! change): one long experiment over the gateway chain — links with
//! outages and call drops, every PEP mode — with faults injected all along
//! (a client killed, a server stopped, a TUN device removed, a gateway
//! killed) and, half-way, `aerolink experiment run` itself killed with
//! SIGKILL and resumed. Every 10 s it samples the experiment process's
//! memory and file descriptors and what aerolink has on the machine
//! (namespaces, labs' directories). At the end: memory and descriptors
//! flat, every run stored once, the store intact, nothing left behind.
//! Figures go to standard error and to `SOAK_OUT` (default
//! `results/soak.json`).
//!
//! Ignored by `cargo test`: it is long by design, run on purpose.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde_json::json;

fn experiment(dir: &Path) -> PathBuf {
    let profiles = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/profiles/handover-30s.toml");
    let f = dir.join("soak.toml");
    std::fs::write(
        &f,
        format!(
            r#"
name = "soak"
description = "make soak: links with outages and call drops, every PEP mode, for as long as it runs"
seed = 1
repetitions = 200
timeout = "90s"
topology = "ifc"
profiles = ["starlink", "mss", "iridium-3ch", "{}"]
[[workload]]
type = "web"
protocols = ["h1", "h3"]
pages = ["2x5KB"]
pep = ["none", "split-tcp", "quic-tunnel", "vpn"]
"#,
            profiles.display()
        ),
    )
    .unwrap();
    f
}

fn start(spec: &Path, db: &Path, log: &Path) -> Child {
    Command::new(bin())
        .args(["experiment", "run", spec.to_str().unwrap(), "--db", db.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::options().create(true).append(true).open(log).unwrap())
        .spawn()
        .unwrap()
}

fn status_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status")).ok().and_then(|s| s.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())).unwrap_or(0)
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

fn lab_dirs() -> usize {
    std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    n.starts_with("aerolink-") && n.ends_with("-tmp")
                })
                .count()
        })
        .unwrap_or(0)
}

use aerolink_net::lab::namespace_pids as ns_pids;

fn runs(db: &Path) -> (i64, i64, i64) {
    let Ok(c) = rusqlite::Connection::open(db) else { return (0, 0, 0) };
    c.query_row("SELECT count(*), count(DISTINCT run_key), coalesce(sum(ok = 0), 0) FROM runs", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap_or((0, 0, 0))
}

/// One fault, on a random lab that is running: which kind, and whether a
/// target was found.
fn inject(kind: usize, rng: &mut impl Rng) -> Option<String> {
    let hosts = ["client", "server", "client", "airgw"];
    let host = hosts[kind % hosts.len()];
    let mut labs: Vec<String> = aerolink_namespaces().into_iter().filter(|n| n.ends_with(&format!("-{host}"))).collect();
    labs.sort();
    if labs.is_empty() {
        return None;
    }
    let ns = labs[rng.random_range(0..labs.len())].clone();
    let kill = |sig| {
        let pids = ns_pids(&ns);
        for &p in &pids {
            // SAFETY: signalling a process by PID.
            unsafe {
                libc::kill(p, sig);
            }
        }
        !pids.is_empty()
    };
    let what = match kind % 4 {
        0 => kill(libc::SIGKILL).then(|| format!("client killed in {ns}")),
        1 => kill(libc::SIGSTOP).then(|| format!("server stopped in {ns}")),
        2 => Command::new("ip").args(["-n", &ns, "link", "del", "to-airgw"]).status().ok().filter(|s| s.success()).map(|_| format!("TUN removed in {ns}")),
        _ => kill(libc::SIGKILL).then(|| format!("gateway killed in {ns}")),
    };
    what
}

/// Flat: per process lifetime, the last quarter of the samples against the
/// second (the first is warm-up): memory, descriptors and threads.
fn flat(samples: &[serde_json::Value], lifetime: i32) -> Vec<serde_json::Value> {
    let mut verdicts = Vec::new();
    for p in 0..=lifetime {
        let v: Vec<&serde_json::Value> = samples.iter().filter(|s| s["process"] == p).collect();
        if v.len() < 8 {
            continue;
        }
        let q = v.len() / 4;
        let med = |xs: &[&serde_json::Value], k: &str| {
            let mut a: Vec<u64> = xs.iter().map(|s| s[k].as_u64().unwrap()).collect();
            a.sort();
            a[a.len() / 2]
        };
        let max = |xs: &[&serde_json::Value], k: &str| xs.iter().map(|s| s[k].as_u64().unwrap()).max().unwrap();
        let (early, late) = (&v[q..2 * q], &v[v.len() - q..]);
        verdicts.push(json!({
            "process": p, "samples": v.len(),
            "rss_kb_early_median": med(early, "rss_kb"), "rss_kb_late_median": med(late, "rss_kb"),
            "fds_early_max": max(early, "fds"), "fds_late_max": max(late, "fds"),
            "threads_early_max": max(early, "threads"), "threads_late_max": max(late, "threads"),
        }));
    }
    verdicts
}

#[test]
#[ignore]
fn soak() {
    require_root();
    let seconds: u64 = std::env::var("SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3600);
    let out = std::env::var_os("SOAK_OUT").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/soak.json"));
    let d = tempdir("soak");
    let (spec, db, log) = (experiment(&d), d.join("soak.db"), d.join("soak.log"));
    let t0 = Instant::now();
    let total = Duration::from_secs(seconds);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut child = start(&spec, &db, &log);
    let mut lifetime = 0;
    let mut killed_midway = false;
    let mut samples = Vec::new();
    let mut faults = Vec::new();
    let (mut next_sample, mut next_fault) = (Duration::ZERO, Duration::from_secs(20));
    eprintln!("soak: {seconds} s of {} (log {})", spec.display(), log.display());
    while t0.elapsed() < total {
        let now = t0.elapsed();
        if let Some(st) = child.try_wait().unwrap() {
            panic!("experiment run ended early ({st}): {}", std::fs::read_to_string(&log).unwrap_or_default().lines().last().unwrap_or(""));
        }
        if !killed_midway && now >= total / 2 {
            // SIGKILL the experiment itself, then resume it.
            let _ = child.kill();
            let _ = child.wait();
            faults.push(json!({ "t_s": now.as_secs_f64(), "fault": "experiment run killed (SIGKILL), resumed" }));
            killed_midway = true;
            lifetime += 1;
            child = start(&spec, &db, &log);
        }
        if now >= next_sample {
            let pid = child.id();
            let (n, distinct, failed) = runs(&db);
            let s = json!({
                "t_s": now.as_secs_f64(), "process": lifetime, "rss_kb": status_kb(pid, "VmRSS:"), "threads": status_kb(pid, "Threads:"), "fds": fds(pid),
                "namespaces": aerolink_namespaces().len(), "lab_dirs": lab_dirs(), "runs": n, "distinct_runs": distinct, "failed_runs": failed,
            });
            eprintln!("soak: {s}");
            samples.push(s);
            next_sample = now + Duration::from_secs(10);
        }
        if now >= next_fault {
            let kind = faults.len();
            if let Some(what) = inject(kind, &mut rng) {
                faults.push(json!({ "t_s": now.as_secs_f64(), "fault": what }));
            }
            next_fault = now + Duration::from_secs(rng.random_range(20..60));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // The end: Ctrl-C, as a user stops a campaign.
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let st = child.wait().unwrap();
    let (n, distinct, failed) = runs(&db);
    let integrity: String = rusqlite::Connection::open(&db).unwrap().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    let (ns_left, dirs_left) = (aerolink_namespaces(), lab_dirs());

    let verdicts = flat(&samples, lifetime);
    let summary = json!({
        "seconds": seconds, "runs": n, "distinct_runs": distinct, "failed_runs": failed, "faults": faults, "integrity": integrity,
        "exit_code": st.code(), "namespaces_left": ns_left, "lab_dirs_left": dirs_left, "flat": verdicts, "samples": samples,
    });
    if let Some(parent) = out.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    std::fs::write(&out, serde_json::to_string_pretty(&summary).unwrap()).unwrap();
    eprintln!(
        "soak: {seconds} s, {n} runs ({failed} failed), {} faults injected, store {integrity}; memory and descriptors per process: {}; figures in {}",
        faults.len(),
        verdicts
            .iter()
            .map(|v| format!("RSS {}→{} MB, fds {}→{}", v["rss_kb_early_median"].as_u64().unwrap() / 1024, v["rss_kb_late_median"].as_u64().unwrap() / 1024, v["fds_early_max"], v["fds_late_max"]))
            .collect::<Vec<_>>()
            .join("; "),
        out.display()
    );
    assert_eq!(integrity, "ok");
    assert_eq!(n, distinct, "a run stored twice");
    assert_eq!(st.code(), Some(130), "Ctrl-C ends an experiment with status 130");
    assert!(ns_left.is_empty() && dirs_left == 0, "left behind: {ns_left:?}, {dirs_left} lab directories");
    for v in &verdicts {
        let (e, l) = (v["rss_kb_early_median"].as_u64().unwrap(), v["rss_kb_late_median"].as_u64().unwrap());
        assert!(l <= e + e / 4 + 8 * 1024, "memory grew: {v}");
        assert!(v["fds_late_max"].as_u64().unwrap() <= v["fds_early_max"].as_u64().unwrap() + 4, "descriptors grew: {v}");
    }
}
