//! aerolink as an ordinary user (`nobody`, uid 65534): where the kernel
//! allows unprivileged user namespaces and /dev/net/tun is open to all (as
//! here), aerolink enters a user namespace of its own and builds its labs
//! there — links, every PEP mode with its nftables rules, experiments into
//! the user's own store — and what it made goes when it ends, however it
//! ends. (`make test` also runs the accuracy tests as that user.) The test
//! harness itself runs as root only to drop to that user.

mod common;
use common::*;

use std::os::unix::fs::MetadataExt;
use std::process::{Command, Output, Stdio};

const NOBODY: u32 = 65534;

fn as_nobody(args: &[&str]) -> Command {
    let mut c = aerolink_as(Some(NOBODY));
    c.args(args);
    c
}

fn run(args: &[&str]) -> Output {
    as_nobody(args).output().unwrap()
}

fn userdir(name: &str) -> Scratch {
    use std::os::unix::fs::PermissionsExt;
    let d = tempdir(name);
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    d
}

/// The network namespaces a process's mount namespace holds in /run/netns
/// (an ordinary user's aerolink has its own, unseen by the host).
fn namespaces_of(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/root/run/netns")).map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().to_string()).collect()).unwrap_or_default()
}

#[test]
fn an_ordinary_user_gets_a_link_with_the_configured_delay() {
    let o = run(&["run", "-q", "--rate", "10Mbit/s", "--rtt", "100ms", "--client", "id -u; ping -c 40 -i 0.05 $AEROLINK_SERVER"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    // Root inside its own user namespace.
    assert_eq!(out.lines().next(), Some("0"));
    let s = ping_samples(&out);
    assert_eq!(s.len(), 40, "{out}");
    assert_delay(&s, 100.0);
    // Nothing of it on the host.
    assert!(leftover_namespaces().is_empty());
}

#[test]
fn an_ordinary_user_runs_an_experiment_through_every_pep_mode() {
    let d = userdir("rootless-exp");
    let (spec, db) = (d.join("exp.toml"), d.join("r.db"));
    std::fs::write(
        &spec,
        r#"
name = "rootless"
seed = 1
repetitions = 1
timeout = "60s"
topology = "ifc"
profiles = ["satcom-100"]
[[workload]]
type = "web"
protocols = ["h1", "h3"]
pages = ["4x20KB"]
pep = ["none", "split-tcp", "quic-tunnel", "vpn"]
"#,
    )
    .unwrap();
    let o = run(&["experiment", "run", spec.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("8 runs stored (0 failed)"), "{err}");
    // The user's own store.
    assert_eq!(std::fs::metadata(&db).unwrap().uid(), NOBODY);
    let c = rusqlite::Connection::open(&db).unwrap();
    let ok: i64 = c.query_row("SELECT count(*) FROM runs WHERE ok", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, 8);
    assert!(leftover_namespaces().is_empty());
}

#[test]
fn an_ordinary_users_interrupted_run_leaves_nothing() {
    for (signal, marker) in [(libc::SIGTERM, "13.1313"), (libc::SIGKILL, "14.1414")] {
        let mut child = KillOnDrop(
            as_nobody(&["run", "-q", "--ready-timeout", "0s", "--rtt", "10ms", "--server", &format!("sleep {marker}1"), "--client", &format!("sleep {marker}2")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_until("the client to start", || processes_matching(&format!("{marker}2")) > 0);
        let pid = child.0.id();
        assert_eq!(namespaces_of(pid).len(), 2, "the lab's namespaces, in aerolink's own mount namespace");
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(pid as i32, signal);
        }
        let st = child.0.wait().unwrap();
        if signal == libc::SIGTERM {
            assert_eq!(st.code(), Some(128 + signal));
        }
        // Even after SIGKILL: the programs die with aerolink, and its
        // namespaces with the last of them.
        wait_until("the lab's programs to end", || processes_matching(marker) == 0);
        assert!(leftover_namespaces().is_empty());
    }
    // What a SIGKILL leaves is the lab's directory; the next experiment
    // removes it.
    let d = userdir("rootless-sweep");
    let spec = d.join("e.toml");
    std::fs::write(&spec, "name = \"sweep\"\nrepetitions = 1\nprofiles = [\"satcom-100\"]\n[[workload]]\ntype = \"web\"\nprotocols = [\"h1\"]\npages = [\"1x1KB\"]\n").unwrap();
    let o = run(&["experiment", "run", spec.to_str().unwrap(), "--db", d.join("r.db").to_str().unwrap()]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("left by a killed aerolink"), "{err}");
    let dirs: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == NOBODY))
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("aerolink-") && n.ends_with("-tmp"))
        .collect();
    assert!(dirs.is_empty(), "{dirs:?}");
}

#[test]
fn up_needs_root_and_says_what_to_use_instead() {
    let o = run(&["up", "x", "--rtt", "10ms"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("needs root") && err.contains("aerolink shell"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
