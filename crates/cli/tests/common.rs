//! Helpers shared by the end-to-end tests: run the real `aerolink` binary
//! (as root, with real namespaces and TUN devices) and read what it did.
#![allow(dead_code)]

use std::process::{Command, Output};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_aerolink")
}

/// These tests need root, /dev/net/tun, `ip`, `ping` and `iperf3` (all
/// installed by `make test`). Fail loudly rather than skip: a skipped
/// accuracy test would pass without testing anything.
pub fn require_root() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "the end-to-end tests need root: run `make test` as root");
}

/// `AEROLINK_TEST_AS=UID`: the tests run aerolink as that ordinary user
/// (`make test` runs the accuracy tests again as `nobody`, 65534), so
/// aerolink enters a user namespace of its own.
pub fn test_user() -> Option<u32> {
    std::env::var("AEROLINK_TEST_AS").ok().and_then(|u| u.parse().ok())
}

/// The aerolink command, as root or (with `AEROLINK_TEST_AS`) as an
/// ordinary user: setpriv execs aerolink, so the child's PID is aerolink's.
pub fn aerolink_cmd() -> Command {
    aerolink_as(test_user())
}

/// The aerolink command as root (`None`) or as user `uid` (setpriv execs
/// aerolink, so the child's PID is aerolink's).
pub fn aerolink_as(uid: Option<u32>) -> Command {
    require_root();
    match uid {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid", &uid.to_string(), "--regid", &uid.to_string(), "--clear-groups", "--", bin()]);
            c
        }
        None => Command::new(bin()),
    }
}

/// Waits for a condition the test cannot otherwise be told about, with a
/// deadline; polling, not sleeping a fixed time.
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !f() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Processes whose command line starts with `sleep MARKER` — anchored, so
/// aerolink's own command line (`--client 'sleep …'`) never matches.
pub fn processes_matching(marker: &str) -> usize {
    let o = Command::new("pgrep").args(["-f", &format!("^sleep {marker}")]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).lines().count()
}

pub fn aerolink(args: &[&str]) -> Output {
    aerolink_cmd().args(args).output().expect("running aerolink")
}

pub fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).to_string(), String::from_utf8_lossy(&o.stderr).to_string())
}

#[path = "../../experiments/tests/common/scratch.rs"]
mod scratch;
pub use scratch::Scratch;

/// A fresh scratch directory, `aerolink-test-NAME-PID`.
pub fn tempdir(name: &str) -> Scratch {
    // One directory, even for a name with a slash in it (`15Mbit/s`).
    let d = std::env::temp_dir().join(format!("aerolink-test-{}-{}", name.replace('/', "_"), std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    if test_user().is_some() {
        use std::os::unix::fs::PermissionsExt;
        // Where aerolink, as that user, writes its logs and stores.
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    Scratch::new(d)
}

/// Namespaces aerolink created that no running aerolink owns: what a run
/// left behind. A lab of another test still running beside this one
/// (`make test` runs some test binaries side by side, scripts/test.sh) is
/// not a leftover; the tests that kill aerolink itself run alone.
pub fn leftover_namespaces() -> Vec<String> {
    aerolink_net::lab::orphan_namespaces()
}

/// Every namespace aerolink created that exists now, live or left behind.
pub fn aerolink_namespaces() -> Vec<String> {
    aerolink_net::lab::leftover_namespaces(None)
}

/// The parent of process `pid`, from /proc.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].split(' ').nth(1)?.parse().ok()
}

/// `pid`'s parent, its parent's parent, and so on up to (not with) init.
pub fn ancestors(pid: u32) -> impl Iterator<Item = u32> {
    std::iter::successors(parent_of(pid), |&q| parent_of(q)).take_while(|&q| q > 1)
}

/// Whether `ancestor` is `pid`'s parent, or its parent's parent, and so on.
pub fn descends_from(pid: u32, ancestor: u32) -> bool {
    ancestors(pid).any(|q| q == ancestor)
}

/// Processes whose command line matches `pattern` (`pgrep -f`) and that
/// have no running aerolink among their ancestors: left behind by a run
/// that ended, not part of one still running beside this test.
pub fn orphan_processes(pattern: &str) -> Vec<String> {
    let o = std::process::Command::new("pgrep").args(["-f", pattern]).output().unwrap();
    let me = std::process::id();
    let is_aerolink = |pid: u32| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("aerolink")));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .filter(|&pid| pid != me)
        // Gone meanwhile: not a leftover either.
        .filter(|&pid| !ancestors(pid).any(is_aerolink) && std::path::Path::new(&format!("/proc/{pid}")).exists())
        .map(|pid| std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default().replace('\0', " "))
        .collect()
}

/// Wilson score interval for k successes in n trials.
pub fn wilson(k: f64, n: f64, z: f64) -> (f64, f64) {
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    (centre - half, centre + half)
}

pub const Z99: f64 = 2.576;

/// A child process stopped (SIGTERM) if the test fails half-way, so one
/// failure cannot leave a run going for the next test.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            // SAFETY: signalling our own child.
            unsafe {
                libc::kill(self.0.id() as i32, libc::SIGTERM);
            }
            let _ = self.0.wait();
        }
    }
}

/// Writes `spec` as an experiment file in a scratch directory `name`, runs
/// it one run at a time and returns every stored run as `results export
/// --json` gives it (the scratch directory goes when the result is dropped).
pub fn experiment_runs(name: &str, spec: &str) -> (Scratch, Vec<serde_json::Value>) {
    let d = tempdir(name);
    let (file, db) = (d.join("exp.toml"), d.join("r.db"));
    std::fs::write(&file, spec).unwrap();
    let o = aerolink(&["experiment", "run", file.to_str().unwrap(), "--db", db.to_str().unwrap(), "--parallel", "1"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let o = aerolink(&["results", "export", "--json", "--db", db.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    let runs = serde_json::from_slice(&o.stdout).unwrap();
    (d, runs)
}

/// The longest run of zeros in `bins` (bytes per time bin): its length and
/// its first bin; `(0, 0)` when there is none.
pub fn longest_silence(bins: &[u64]) -> (usize, usize) {
    let (mut best, mut run) = ((0, 0), 0);
    for (i, b) in bins.iter().enumerate() {
        run = if *b == 0 { run + 1 } else { 0 };
        if run > best.0 {
            best = (run, i + 1 - run);
        }
    }
    best
}

/// The round-trip times (ms) in `ping`'s output.
pub fn ping_samples(out: &str) -> Vec<f64> {
    out.lines().filter_map(|l| l.split("time=").nth(1)).filter_map(|t| t.split_whitespace().next()?.parse().ok()).collect()
}

/// A link's delay as a user relies on it: no packet early, the median within
/// 1 ms of the configured round trip and nine samples in ten within 2 ms. A
/// mean would let one late sample (the host descheduling the pump or ping
/// for tens of ms on a busy 2-core CI machine: a 40-sample mean of 101.65 ms
/// once) fail a link that is right, and a systematic error of 1 ms fails
/// either way.
pub fn assert_delay(samples: &[f64], rtt_ms: f64) {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    assert!(s[0] >= rtt_ms - 0.1, "a sample of {} ms is below the configured {rtt_ms} ms: {samples:?}", s[0]);
    let median = s[s.len() / 2];
    assert!(median <= rtt_ms + 1.0, "median RTT {median} ms, expected {rtt_ms} ms + at most 1 ms: {samples:?}");
    let within = s.iter().filter(|&&x| x <= rtt_ms + 2.0).count();
    assert!(within * 10 >= s.len() * 9, "{within} of {} samples within {rtt_ms} ms + 2 ms: {samples:?}", s.len());
}
