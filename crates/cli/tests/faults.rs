//! Faults injected into real experiment runs: a workload killed mid-run, a
//! server that stops answering, a TUN device removed under the pump, the
//! store's disk full, the store locked by another process, and
//! `aerolink experiment run` killed with SIGKILL again and again, then
//! resumed. Each must end in a clear reason for that run (or for the
//! experiment), the run stored as failed with it, nothing left behind, and
//! no stored run lost or duplicated.

mod common;
use common::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

/// A bulk download long enough to be hit mid-run (2 MB at 2 Mbit/s: about
/// 9 s), `reps` times, one at a time.
fn spec(name: &str, reps: u32, timeout: &str) -> String {
    spec_sized(name, reps, timeout, "2MB")
}

fn spec_sized(name: &str, reps: u32, timeout: &str, size: &str) -> String {
    format!(
        r#"
name = "{name}"
seed = 5
repetitions = {reps}
timeout = "{timeout}"
profiles = ["slow"]
[[variant]]
name = "slow"
base = "satcom-100"
rate = "2Mbit/s"
rtt = "40ms"
[[workload]]
type = "bulk"
sizes = ["{size}"]
direction = "down"
"#
    )
}

/// `experiment run` in the background, its standard error kept in a file.
fn start(spec: &Path, db: &Path, err: &Path) -> KillOnDrop {
    KillOnDrop(
        Command::new(bin())
            .args(["experiment", "run", spec.to_str().unwrap(), "--db", db.to_str().unwrap(), "--parallel", "1"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(err).unwrap())
            .spawn()
            .unwrap(),
    )
}

fn wait_exit(child: &mut KillOnDrop, within: Duration) -> i32 {
    let deadline = Instant::now() + within;
    loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            return st.code().unwrap_or(-1);
        }
        assert!(Instant::now() < deadline, "experiment run did not end within {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls until `f` gives a value (not a fixed sleep: the condition itself).
fn wait_for<T>(what: &str, within: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The namespace of `host` in a lab of the aerolink process `of` (other
/// tests' labs may run beside this one: `make test` runs lanes side by
/// side) and its workload processes (`aerolink workload …`), once there
/// are any. Only those: while a lab is set up, short-lived `ip` and
/// `sysctl` processes pass through its namespaces too, and a fault aimed
/// at one of them would hit nothing.
fn host_pids(of: u32, host: &str) -> Option<(String, Vec<i32>)> {
    let is_workload = |p: &i32| std::fs::read(format!("/proc/{p}/cmdline")).map(|c| c.split(|b| *b == 0).any(|a| a == b"workload")).unwrap_or(false);
    aerolink_namespaces().into_iter().filter(|n| n.ends_with(&format!("-{host}"))).find_map(|ns| {
        let pids: Vec<i32> = aerolink_net::lab::namespace_pids(&ns).into_iter().filter(|&p| descends_from(p as u32, of)).filter(is_workload).collect();
        (!pids.is_empty()).then_some((ns, pids))
    })
}

fn signal(pids: &[i32], sig: i32) {
    for &p in pids {
        // SAFETY: signalling a process by PID.
        unsafe {
            libc::kill(p, sig);
        }
    }
}

/// What the store holds, read directly: key → (ok, error), and how many
/// rows each key has.
fn runs(db: &Path) -> (BTreeMap<String, (bool, Option<String>)>, usize) {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c.prepare("SELECT run_key, ok, error FROM runs").unwrap();
    let rows: Vec<(String, bool, Option<String>)> = st.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? == 1, r.get(2)?))).unwrap().map(Result::unwrap).collect();
    let n = rows.len();
    (rows.into_iter().map(|(k, ok, e)| (k, (ok, e))).collect(), n)
}

fn integrity(db: &Path) -> String {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap()
}

/// Nothing of aerolink's left: namespaces and labs' directories that no
/// running aerolink owns (tests beside this one have their own).
fn assert_nothing_left() {
    assert!(leftover_namespaces().is_empty(), "namespaces left: {:?}", leftover_namespaces());
    let files = aerolink_net::lab::leftover_files();
    assert!(files.is_empty(), "lab directories or monitor files left: {files:?}");
}

/// Runs one experiment of two repetitions, doing `fault` to the first run
/// once its client runs (given the client's namespace and processes);
/// returns the stored runs (failed first) and the experiment's standard
/// error.
fn with_fault(name: &str, timeout: &str, size: &str, fault: impl FnOnce(u32, &str, &[i32])) -> (Vec<(bool, Option<String>)>, String) {
    let d = tempdir(name);
    let (s, db, err) = (d.join("exp.toml"), d.join("r.db"), d.join("err"));
    std::fs::write(&s, spec_sized(name, 2, timeout, size)).unwrap();
    let mut child = start(&s, &db, &err);
    let of = child.0.id();
    let (ns, pids) = wait_for("the first client", Duration::from_secs(60), || host_pids(of, "client"));
    fault(of, &ns, &pids);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(180)), 0, "{}", std::fs::read_to_string(&err).unwrap());
    let (held, rows) = runs(&db);
    assert_eq!(rows, 2, "each run stored once: {held:?}");
    let mut v: Vec<(bool, Option<String>)> = held.into_values().collect();
    v.sort_by_key(|(ok, _)| *ok);
    assert_nothing_left();
    (v, std::fs::read_to_string(&err).unwrap())
}

#[test]
fn a_killed_client_fails_its_run_and_the_experiment_goes_on() {
    require_root();
    let (v, _) = with_fault("fault-kill", "120s", "2MB", |_, _, client| signal(client, libc::SIGKILL));
    let (ok, e) = &v[0];
    assert!(!ok);
    let e = e.as_deref().unwrap_or("");
    assert!(e.contains("the client failed") && e.contains("SIGKILL"), "reason: {e}");
    assert!(v[1].0, "the next run runs as usual: {:?}", v[1]);
}

#[test]
fn a_silent_server_times_the_run_out_with_the_reason() {
    require_root();
    // The server stops (SIGSTOP) with the client connected: the kernel
    // keeps its sockets, nothing answers.
    let (v, _) = with_fault("fault-silent", "10s", "1MB", |of, _, _| {
        // The server listens before the client starts.
        let (_, pids) = host_pids(of, "server").expect("the server runs while its client does");
        signal(&pids, libc::SIGSTOP);
    });
    let e = v[0].1.as_deref().unwrap_or("");
    assert!(!v[0].0 && e.contains("did not finish within the run's timeout (10 s)"), "reason: {e}");
    assert!(v[1].0, "the next run has a server that answers: {:?}", v[1]);
}

#[test]
fn a_tun_device_removed_under_the_pump_fails_the_run_with_the_reason() {
    require_root();
    let (v, _) = with_fault("fault-tun", "120s", "2MB", |_, ns, _| {
        let st = Command::new("ip").args(["-n", ns, "link", "del", "to-server"]).status().unwrap();
        assert!(st.success());
    });
    let e = v[0].1.as_deref().unwrap_or("");
    assert!(!v[0].0 && e.contains("the link stopped: the TUN device to-server was removed under the link"), "reason: {e}");
    assert!(v[1].0, "the next run gets a new lab: {:?}", v[1]);
}

/// A tmpfs mounted for one test, unmounted however the test ends.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_stops_the_experiment_and_keeps_what_was_stored() {
    require_root();
    let d = tempdir("fault-full");
    let mnt = d.join("disk");
    std::fs::create_dir_all(&mnt).unwrap();
    let st = Command::new("mount").args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"]).arg(&mnt).status().unwrap();
    assert!(st.success(), "mounting a tmpfs");
    let _guard = Tmpfs(mnt.clone());
    let (s, db, err) = (d.join("exp.toml"), mnt.join("r.db"), d.join("err"));
    std::fs::write(&s, spec("fault-full", 3, "120s")).unwrap();
    let mut child = start(&s, &db, &err);
    // Once the first run is stored, fill the disk.
    // The file appears before its schema does: a store without its table
    // has stored nothing yet.
    let stored = |db: &Path| rusqlite::Connection::open(db).and_then(|c| c.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0))).unwrap_or(0);
    wait_for("the first run stored", Duration::from_secs(120), || (db.exists() && stored(&db) >= 1).then_some(()));
    let filler = mnt.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 64 << 10];
        let mut small = vec![0u8; 512];
        while f.write_all(&block).is_ok() {}
        while f.write_all(&small).is_ok() {}
        small.truncate(1);
        while f.write_all(&small).is_ok() {}
    }
    let code = wait_exit(&mut child, Duration::from_secs(180));
    let text = std::fs::read_to_string(&err).unwrap();
    assert_eq!(code, 1, "{text}");
    let last = text.lines().last().unwrap_or("");
    assert!(last.contains("r.db") && last.contains("the disk is full"), "one line naming the store and why: {last}");
    assert_nothing_left();
    assert_eq!(integrity(&db), "ok");
    let (held, rows) = runs(&db);
    assert_eq!((held.len(), rows), (1, 1), "the run stored before the disk filled is kept, once");
    // Space again: the experiment resumes and ends with every run once.
    std::fs::remove_file(&filler).unwrap();
    let mut child = start(&s, &db, &err);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(180)), 0, "{}", std::fs::read_to_string(&err).unwrap());
    let (held, rows) = runs(&db);
    assert_eq!((held.len(), rows), (3, 3));
    assert!(held.values().all(|(ok, _)| *ok), "{held:?}");
    assert_nothing_left();
}

#[test]
fn a_store_locked_by_another_process_is_named_and_nothing_runs() {
    require_root();
    let d = tempdir("fault-lock");
    let (s, db, err) = (d.join("exp.toml"), d.join("r.db"), d.join("err"));
    std::fs::write(&s, spec("fault-lock", 1, "120s")).unwrap();
    // Another process's write transaction, held for longer than aerolink
    // waits (a separate process: SQLite's locks are per process).
    let mut holder = KillOnDrop(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "hold_the_store_locked", "--nocapture", "--include-ignored"])
            .env("AEROLINK_TEST_LOCK_DB", &db)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    {
        use std::io::BufRead;
        let out = holder.0.stdout.take().unwrap();
        let mut lines = std::io::BufReader::new(out).lines();
        wait_for("the lock", Duration::from_secs(30), || lines.next().and_then(Result::ok).filter(|l| l.contains("locked")));
    }
    let mut child = start(&s, &db, &err);
    let code = wait_exit(&mut child, Duration::from_secs(60));
    let text = std::fs::read_to_string(&err).unwrap();
    assert_ne!(code, 0);
    let last = text.lines().last().unwrap_or("");
    assert!(last.contains("r.db") && last.contains("another process holds the store locked"), "{last}");
    assert_nothing_left();
    drop(holder);
    // The lock gone, the same command works.
    let mut child = start(&s, &db, &err);
    assert_eq!(wait_exit(&mut child, Duration::from_secs(120)), 0, "{}", std::fs::read_to_string(&err).unwrap());
    assert_eq!(runs(&db).1, 1);
}

/// Not a test on its own: the other process of the locked-store test. Holds
/// an immediate (write) transaction on the store until killed.
#[test]
#[ignore]
fn hold_the_store_locked() {
    let Some(db) = std::env::var_os("AEROLINK_TEST_LOCK_DB") else { return };
    let c = rusqlite::Connection::open(&db).unwrap();
    let _: String = c.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).unwrap();
    c.execute_batch("BEGIN IMMEDIATE").unwrap();
    println!("locked");
    loop {
        std::thread::park();
    }
}

#[test]
fn sigkill_at_random_moments_then_resume_loses_and_repeats_nothing() {
    require_root();
    let d = tempdir("fault-sigkill");
    let (s, db, err) = (d.join("exp.toml"), d.join("r.db"), d.join("err"));
    // Eight page loads of about 4 s each, two at a time: a kill 1–6 s in
    // lands mid-run, sometimes after a run was stored.
    std::fs::write(
        &s,
        r#"
name = "fault-sigkill"
seed = 9
repetitions = 4
timeout = "60s"
profiles = ["geo-720"]
[[workload]]
type = "web"
protocols = ["h1", "h3"]
pages = ["4x20KB"]
"#,
    )
    .unwrap();
    let run = |kill_after: Option<Duration>| -> i32 {
        let mut c = KillOnDrop(
            Command::new(bin())
                .args(["experiment", "run", s.to_str().unwrap(), "--db", db.to_str().unwrap(), "--parallel", "2"])
                .stdout(Stdio::null())
                .stderr(std::fs::File::options().create(true).append(true).open(&err).unwrap())
                .spawn()
                .unwrap(),
        );
        match kill_after {
            Some(t) => {
                // The fault itself is the wait: SIGKILL at a (seeded)
                // random moment of the run.
                std::thread::sleep(t);
                signal(&[c.0.id() as i32], libc::SIGKILL);
                c.0.wait().unwrap().code().unwrap_or(-9)
            }
            None => wait_exit(&mut c, Duration::from_secs(300)),
        }
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(18);
    for _ in 0..5 {
        run(Some(Duration::from_millis(rng.random_range(1000..6000))));
        if db.exists() {
            assert_eq!(integrity(&db), "ok");
            // A reader at any moment: the report of what is there.
            let o = aerolink(&["report", "--db", db.to_str().unwrap(), "-o", d.join("r.html").to_str().unwrap()]);
            assert!(o.status.success() || runs(&db).1 == 0, "{}", text(&o).1);
        }
    }
    assert_eq!(run(None), 0, "{}", std::fs::read_to_string(&err).unwrap());
    let (held, rows) = runs(&db);
    assert_eq!((held.len(), rows), (8, 8), "every planned run once: {held:?}");
    assert!(held.values().all(|(ok, _)| *ok), "{held:?}");
    assert_eq!(integrity(&db), "ok");
    // Each start removed what the killed one before it left.
    let said = std::fs::read_to_string(&err).unwrap();
    assert!(said.contains("left by a killed aerolink"), "no kill left a lab to remove: {said}");
    assert_nothing_left();
}
