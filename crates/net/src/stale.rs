//! What labs leave behind and who owns them: each lab's temporary
//! directory names its owner (PID and start time), so a later aerolink
//! removes what a killed one left ([`stale_labs`], [`remove_stale`]); the
//! leftover checks the tests and `aerolink down --all` use.

use std::os::unix::fs::MetadataExt;
use std::process::Command;

use crate::lab::NS_PREFIX;
use crate::sys::ip;
use serde::Serialize;

/// The file in a lab's temporary directory naming the process that owns it.
pub(crate) const OWNER_FILE: &str = ".aerolink-owner";

/// A process, by PID and start time (so a reused PID is not taken for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub pid: i32,
    pub start: u64,
}

impl Owner {
    pub fn me() -> Owner {
        let pid = std::process::id() as i32;
        Owner { pid, start: process_start(pid).unwrap_or(0) }
    }

    fn parse(s: &str) -> Option<Owner> {
        let (pid, start) = s.trim().split_once(' ')?;
        Some(Owner { pid: pid.parse().ok()?, start: start.parse().ok()? })
    }

    /// Whether the process still runs (the same one, not a reused PID).
    pub fn alive(&self) -> bool {
        process_start(self.pid).is_some_and(|s| s == self.start)
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.pid, self.start)
    }
}

/// A process's start time in clock ticks since boot (`/proc/PID/stat`,
/// field 22), or `None` if there is no such process.
fn process_start(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// A lab whose owner is gone: killed with SIGKILL (or the machine lost
/// power) before it could remove what it built.
#[derive(Clone, Debug, Serialize)]
pub struct StaleLab {
    pub run: String,
    pub pid: i32,
    pub namespaces: Vec<String>,
}

/// Every lab whose owning aerolink no longer runs. Labs of live processes
/// (another experiment, a lab from `aerolink up`) and labs without an
/// owner file (from an older aerolink: `aerolink down --all` removes them)
/// are not touched.
pub fn stale_labs() -> Vec<StaleLab> {
    let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) else { return Vec::new() };
    let namespaces = leftover_namespaces(None);
    let mut out: Vec<StaleLab> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let run = name.strip_prefix("aerolink-")?.strip_suffix("-tmp")?.to_string();
            // An ordinary user (in a user namespace of its own or not)
            // removes only its own labs' leftovers; root removes anyone's.
            // SAFETY: geteuid has no preconditions.
            let euid = unsafe { libc::geteuid() };
            if (euid != 0 || crate::sys::rootless()) && e.metadata().ok()?.uid() != euid {
                return None;
            }
            let owner = Owner::parse(&std::fs::read_to_string(e.path().join(OWNER_FILE)).ok()?)?;
            if owner.alive() {
                return None;
            }
            let ns = namespaces.iter().filter(|n| n.starts_with(&format!("{NS_PREFIX}{run}-"))).cloned().collect();
            Some(StaleLab { run, pid: owner.pid, namespaces: ns })
        })
        .collect();
    out.sort_by(|a, b| a.run.cmp(&b.run));
    out
}

/// Runs whose lab belongs to a process that still runs: an experiment
/// under way, an `aerolink run` in another terminal. Nothing of theirs is
/// a leftover, whatever `down --all` is asked.
pub fn live_runs() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) else { return Vec::new() };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let run = e.file_name().to_string_lossy().strip_prefix("aerolink-")?.strip_suffix("-tmp")?.to_string();
            let owner = Owner::parse(&std::fs::read_to_string(e.path().join(OWNER_FILE)).ok()?)?;
            owner.alive().then_some(run)
        })
        .collect()
}

/// Namespaces aerolink created that no running aerolink owns.
pub fn orphan_namespaces() -> Vec<String> {
    let live = live_runs();
    leftover_namespaces(None).into_iter().filter(|n| !live.iter().any(|r| n.starts_with(&format!("{NS_PREFIX}{r}-")))).collect()
}

/// Removes a stale lab: kills what still runs in its namespaces, deletes
/// them, its monitor files and its temporary directory.
pub fn remove_stale(lab: &StaleLab) {
    for ns in &lab.namespaces {
        remove_namespace(ns);
    }
    if let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) {
        let prefix = format!("aerolink-{}-link", lab.run);
        for e in dir.filter_map(|e| e.ok()) {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let _ = std::fs::remove_dir_all(run_tmp_dir(&lab.run));
}

/// PIDs of every process in a namespace.
pub fn namespace_pids(ns: &str) -> Vec<i32> {
    Command::new("ip").args(["netns", "pids", ns]).output().map(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().filter_map(|p| p.parse().ok()).collect()).unwrap_or_default()
}

/// Kills everything in `ns` and deletes it. Best effort: used on every exit
/// path, including after a crash.
pub fn remove_namespace(ns: &str) {
    for _ in 0..50 {
        let pids = namespace_pids(ns);
        if pids.is_empty() {
            break;
        }
        for p in pids {
            // SAFETY: kill with a pid and a signal.
            unsafe {
                libc::kill(p, libc::SIGKILL);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = ip(&["netns", "del", ns]);
}

/// The temporary directory of run `run` (its programs' `TMPDIR`).
pub fn run_tmp_dir(run: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("aerolink-{run}-tmp"))
}

/// Temporary directories and link monitor files of runs that have no
/// namespace any more (left by an aerolink killed with SIGKILL).
pub fn leftover_files() -> Vec<std::path::PathBuf> {
    let live: Vec<String> = leftover_namespaces(None);
    let owned = live_runs();
    let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) else { return Vec::new() };
    let mut out: Vec<std::path::PathBuf> = dir
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let run = name.strip_prefix("aerolink-").and_then(|r| r.strip_suffix("-tmp").or_else(|| r.strip_suffix(".monitor").and_then(|m| m.rsplit_once("-link").map(|(run, _)| run))));
            run.is_some_and(|run| !owned.iter().any(|r| r == run) && !live.iter().any(|ns| ns.starts_with(&format!("{NS_PREFIX}{run}-"))))
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Every namespace aerolink created that still exists (optionally for one
/// run name only).
pub fn leftover_namespaces(run: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir("/run/netns").map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().to_string()).collect()).unwrap_or_default();
    out.retain(|n| match run {
        Some(r) => n.starts_with(&format!("{NS_PREFIX}{r}-")),
        None => n.starts_with(NS_PREFIX),
    });
    out.sort();
    out
}
