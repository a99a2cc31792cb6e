//! Every exit path leaves nothing behind: a normal exit, a crashing client,
//! SIGINT, SIGTERM, and SIGKILL followed by `down --all`. Also topologies,
//! `up`/`exec`/`down`, logs and `stats`.

mod common;
use common::*;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn the_client_exit_status_is_aerolinks() {
    let o = aerolink(&["run", "-q", "--client", "exit 7"]);
    assert_eq!(o.status.code(), Some(7));
    let o = aerolink(&["run", "-q", "--client", "kill -SEGV $$"]);
    assert_eq!(o.status.code(), Some(128 + 11));
    assert!(leftover_namespaces().is_empty(), "{:?}", leftover_namespaces());
}

/// `run --json`: one object on standard output with the client's status,
/// its output (parsed when JSON) and what the link did, nothing else there.
#[test]
fn run_json_reports_the_client_and_the_link() {
    let o = aerolink(&["run", "--json", "--rtt", "10ms", "--client", "echo '{\"x\": 1}'; ping -c 3 -i 0.2 -q $AEROLINK_SERVER >&2; exit 3"]);
    assert_eq!(o.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("standard output is one JSON object");
    assert_eq!(v["exit_status"], 3);
    assert_eq!(v["client_stdout"]["x"], 1);
    let dirs = v["link"]["directions"].as_array().unwrap();
    assert_eq!(dirs.len(), 2, "{v}");
    // Three echo requests up, three replies down.
    assert!(dirs.iter().all(|d| d["packets_out"].as_u64().unwrap() >= 3), "{v}");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("aerolink:"), "--json implies --quiet");
}

/// A server that takes a moment to listen, on a host that itself listens
/// (as nearly every host does: sshd). Programs enter their namespace only
/// after they start, and until then their sockets are the host's: the client
/// used to start at once, before the server listened.
#[test]
fn the_client_waits_for_a_slow_server_even_when_the_host_listens() {
    let _host_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = "timeout 20 iperf3 -c $AEROLINK_SERVER -n 100K >/dev/null 2>&1 && echo connected";
    let o = aerolink(&["run", "-q", "--rtt", "2ms", "--server", "sleep 0.3; iperf3 -s -1 >/dev/null", "--client", client]);
    let (out, err) = text(&o);
    assert!(o.status.success() && out.contains("connected"), "{out}{err}");
}

/// The server opens port 5201 at once and 5202 a moment later; the client
/// needs 5202. With `--ready-port 5201,5202` it must find both listening.
#[test]
fn ready_port_waits_for_every_listed_port() {
    let server = "iperf3 -s -p 5201 >/dev/null & (sleep 0.5; exec iperf3 -s -p 5202 >/dev/null) & wait";
    let client = "timeout 20 iperf3 -c $AEROLINK_SERVER -p 5202 -n 100K >/dev/null 2>&1 && echo connected";
    let o = aerolink(&["run", "-q", "--rtt", "2ms", "--ready-port", "5201,tcp:5202", "--server", server, "--client", client]);
    let (out, err) = text(&o);
    assert!(o.status.success() && out.contains("connected"), "{out}{err}");
    // A port that never opens: the run fails naming it, rather than
    // starting the client against nothing.
    let o = aerolink(&["run", "-q", "--ready-timeout", "1s", "--ready-port", "udp:5300", "--server", "iperf3 -s -p 5201 >/dev/null", "--client", "echo started"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(!out.contains("started") && err.contains("udp:5300"), "{out}{err}");
    assert!(leftover_namespaces().is_empty(), "{:?}", leftover_namespaces());
}

fn interrupted_run_leaves_nothing(signal: i32, marker: &str) {
    require_root();
    let mut child = KillOnDrop(
        Command::new(bin())
            .args(["run", "-q", "--ready-timeout", "0s", "--rtt", "10ms", "--server", &format!("sleep {marker}1"), "--client", &format!("sleep {marker}2")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the client to start", || processes_matching(&format!("{marker}2")) > 0);
    assert!(!aerolink_namespaces().is_empty(), "the run's lab is up");
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.0.id() as i32, signal);
    }
    let st = child.0.wait().unwrap();
    assert_eq!(st.code(), Some(128 + signal));
    assert!(leftover_namespaces().is_empty(), "left: {:?}", leftover_namespaces());
    assert_eq!(processes_matching(marker), 0, "processes left behind");
}

#[test]
fn an_interrupted_benchmark_removes_its_lab_at_once() {
    require_root();
    let d = tempdir("bench-int");
    let mut child = KillOnDrop(
        Command::new(bin())
            .args(["bench", "queue", "--profiles", "satcom-100", "--rates", "1Mbit/s", "--seconds", "60"])
            .arg("--out")
            .arg(d.join("b.jsonl"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let iperf_clients = || String::from_utf8_lossy(&Command::new("pgrep").args(["-f", "^iperf3 -c 198.18"]).output().unwrap().stdout).lines().count();
    wait_until("iperf3 to start in the lab", || iperf_clients() > 0);
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.0.id() as i32, libc::SIGTERM);
    }
    // Stopped in the middle of a 60 s transfer, not after it.
    let t = Instant::now();
    assert_eq!(child.0.wait().unwrap().code(), Some(130));
    assert!(t.elapsed() < Duration::from_secs(30), "took {:?}", t.elapsed());
    assert!(leftover_namespaces().is_empty(), "left: {:?}", leftover_namespaces());
    assert_eq!(iperf_clients(), 0, "iperf3 left behind");
    assert!(!d.join("b.jsonl").exists(), "an interrupted benchmark stores no figure");
}

#[test]
fn sigterm_removes_everything() {
    interrupted_run_leaves_nothing(libc::SIGTERM, "31.4159");
}

#[test]
fn sigint_removes_everything() {
    interrupted_run_leaves_nothing(libc::SIGINT, "27.1828");
}

#[test]
fn after_sigkill_down_all_removes_the_leftovers() {
    require_root();
    let mut child = Command::new(bin()).args(["run", "-q", "--ready-timeout", "0s", "--server", "sleep 41.41", "--client", "sleep 42.42"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    wait_until("the client to start", || processes_matching("42.42") > 0);
    let pid = child.id() as i32;
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!leftover_namespaces().is_empty(), "a SIGKILL cannot clean up; this test expects leftovers");
    // The killed run's lab, told by its owner file (other runs on the host,
    // an experiment under way, are none of this test's business).
    let labs = aerolink_net::lab::stale_labs();
    let run = &labs.iter().find(|l| l.pid == pid).unwrap_or_else(|| panic!("no stale lab of pid {pid}: {labs:?}")).run;
    let tmp = aerolink_net::lab::run_tmp_dir(run);
    assert!(tmp.exists(), "the killed run's TMPDIR is expected to remain");
    let o = aerolink(&["down", "--all"]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(leftover_namespaces().is_empty(), "{:?}", leftover_namespaces());
    assert!(!tmp.exists(), "down --all removes the runs' temporary directories: {tmp:?}");
    wait_until("orphans to die", || processes_matching("4[12]\\.4") == 0);
}

#[test]
fn down_all_leaves_a_run_under_way_alone() {
    require_root();
    // A run in another terminal, its client stopped until released.
    let mut child =
        KillOnDrop(Command::new(bin()).args(["run", "-q", "--rtt", "10ms", "--client", "sleep 43.43; ping -c 1 -W 2 $AEROLINK_SERVER"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    wait_until("the client to start", || processes_matching("43.43") > 0);
    let o = aerolink(&["down", "--all"]);
    assert!(o.status.success(), "{:?}", text(&o));
    // Released, the client crosses the link it still has (had down --all
    // taken the lab, the client would have been killed with it).
    let o = Command::new("pkill").args(["-f", "^sleep 43.43"]).status().unwrap();
    assert!(o.success());
    let st = child.0.wait().unwrap();
    assert!(st.success(), "the run failed after down --all: {st}");
    assert!(leftover_namespaces().is_empty(), "{:?}", leftover_namespaces());
}

#[test]
fn up_exec_down() {
    let _ = aerolink(&["down", "tlab"]);
    let o = aerolink(&["up", "tlab", "--profile", "da2gc", "--loss", "0%"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("198.18.0.2"), "{out}");
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).contains("al-tlab-client"));
    let o = aerolink(&["exec", "tlab", "client", "--", "sh", "-c", "ping -c 2 -i 0.3 $AEROLINK_SERVER"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("2 received"), "{out}");
    let o = aerolink(&["exec", "tlab", "plane", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("hosts are client, server"));
    let o = aerolink(&["up", "tlab", "--profile", "mss"]);
    assert_eq!(o.status.code(), Some(2), "a second lab with the same name must be refused");
    let o = aerolink(&["down", "tlab"]);
    assert!(o.status.success());
    assert!(aerolink_namespaces().iter().all(|n| !n.starts_with("al-tlab-")));
}

#[test]
fn a_chain_topology_routes_end_to_end() {
    let d = tempdir("chain");
    let topo = d.join("chain.toml");
    std::fs::write(&topo, "name = \"chain\"\nhosts = [\"client\", \"gw\", \"server\"]\n[[hop]]\n[hop.link]\nrtt = \"20 ms\"\n[[hop]]\n[hop.link]\nrtt = \"40 ms\"\nrate = \"10 Mbit/s\"\n").unwrap();
    // One unmeasured ping first: the path's first packet wakes four idle
    // pump threads, and on this virtual machine a wake-up is now and then
    // milliseconds late (a bare C sleep loop shows it too; seen here: +2 to
    // +6 ms, once on two packets in a row).
    let o = aerolink(&[
        "run",
        "-q",
        "--topology",
        topo.to_str().unwrap(),
        "--client",
        "ping -c 1 -W 5 $AEROLINK_SERVER >/dev/null && ping -c 5 -i 0.2 $AEROLINK_SERVER && ping -c 5 -i 0.2 $AEROLINK_SERVER_V6 && ping -c 3 -i 0.2 $AEROLINK_GW",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let rtts = ping_samples(&out);
    assert_eq!(rtts.len(), 13);
    // The delays of the two hops add up, and no packet is ever early; the
    // bound above is on the median of ten (late packets are the machine's:
    // in CI, after other tests' namespaces were deleted, two of four were
    // +4 and +10 ms while the kernel cleaned up).
    let mut to_server = rtts[..10].to_vec();
    to_server.sort_by(f64::total_cmp);
    assert!(to_server[0] >= 59.9, "{rtts:?}");
    assert!(to_server[4] < 62.0 && to_server[5] < 62.0, "{rtts:?}");
    // The gateway answers after the first hop alone: none early, the best
    // of three within 3 ms (one ping was 24 ms once in CI, the lanes and
    // the background builds sharing the two cores).
    let to_gw = &rtts[10..];
    assert!(to_gw.iter().all(|r| *r >= 19.9) && to_gw.iter().cloned().fold(f64::INFINITY, f64::min) < 23.0, "{rtts:?}");
}

#[test]
fn the_log_records_every_packet_and_stats_summarise_it() {
    let d = tempdir("log");
    let log = d.join("run.log");
    let o = aerolink(&["run", "-q", "--rtt", "50ms", "--up-loss", "100%", "--log", log.to_str().unwrap(), "--client", "ping -c 3 -i 0.2 -W 1 $AEROLINK_SERVER; true"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let st = aerolink(&["stats", "--json", log.to_str().unwrap()]);
    assert!(st.status.success());
    let s: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    let up = &s["directions"][0];
    assert_eq!(up["dir"], "up");
    assert_eq!(up["arrived_packets"], 3);
    assert_eq!(up["dropped"]["loss"], 3);
    assert_eq!(s["meta"]["seed"], "1");
    let human = aerolink(&["stats", log.to_str().unwrap()]);
    assert!(text(&human).0.contains("3 by loss"), "{}", text(&human).0);
}

#[test]
fn the_servers_output_does_not_mix_into_the_clients() {
    // `aerolink run … --client 'iperf3 -J …' > out.json` must give the
    // client's output alone: the server's goes to standard error. The
    // client starts printing only once the server has printed.
    let d = tempdir("server-out");
    let mark = d.join("printed");
    let server = format!("echo from-the-server; touch {}; sleep 30", mark.display());
    let client = format!("while [ ! -e {} ]; do sleep 0.05; done; echo from-the-client", mark.display());
    let o = aerolink(&["run", "-q", "--ready-timeout", "0s", "--profile", "terrestrial", "--server", &server, "--client", &client]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(out, "from-the-client\n", "stdout: {out:?}, stderr: {err}");
    assert!(err.contains("from-the-server"), "{err}");
}
