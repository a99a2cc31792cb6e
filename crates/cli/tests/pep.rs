//! The split-TCP proxy: the client's TCP is terminated in the gateways (the
//! server sees a gateway, not the client), UDP passes untouched, and no
//! nftables rule outlives the proxy.

mod common;
use common::*;

use std::process::Command;
use std::time::{Duration, Instant};

/// Who the iperf3 server saw connecting, for a TCP or UDP test through the
/// `ifc` gateway chain.
fn remote_seen(pep: Option<&str>, udp: bool) -> String {
    let d = tempdir(&format!("pep-{}-{udp}", pep.unwrap_or("none")));
    let j = d.join("server.json");
    let server = format!("iperf3 -s -1 -J > {}", j.display());
    let client = if udp { "iperf3 -c $AEROLINK_SERVER -u -b 1M -t 1 > /dev/null" } else { "iperf3 -c $AEROLINK_SERVER -n 200K > /dev/null" };
    let mut args = vec!["run", "-q", "--topology", "ifc", "--space", "satcom-100", "--rate", "20Mbit/s", "--server", &server, "--client", client];
    if let Some(at) = pep {
        args.extend(["--pep", "split-tcp", "--pep-at", at]);
    }
    let o = aerolink(&args);
    assert!(o.status.success(), "{}", text(&o).1);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    v["start"]["connected"][0]["remote_host"].as_str().unwrap().to_string()
}

#[test]
fn split_tcp_terminates_tcp_in_the_gateways_and_leaves_udp_alone() {
    // Without a proxy the server sees the client; with one, the last proxy
    // on the way: the aircraft gateway (its address on the space hop) or the
    // ground gateway (its address on the terrestrial hop).
    assert_eq!(remote_seen(None, false), "198.18.0.1");
    assert_eq!(remote_seen(Some("air"), false), "198.18.1.1");
    assert_eq!(remote_seen(Some("both"), false), "198.18.2.1");
    // UDP is not intercepted: iperf3 reports the UDP stream's peer, the
    // client itself.
    assert_eq!(remote_seen(Some("both"), true), "198.18.0.1");
    assert!(leftover_namespaces().is_empty());
}

#[test]
fn the_proxy_removes_its_rules_when_stopped() {
    let _ = aerolink(&["down", "tpep"]);
    let o = aerolink(&["up", "tpep", "--topology", "ifc", "--space", "satcom-100"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let ns = "al-tpep-airgw";
    let has_table = || Command::new("ip").args(["netns", "exec", ns, "nft", "list", "table", "inet", "aerolink_pep"]).output().map(|o| o.status.success()).unwrap_or(false);
    let mut child = Command::new(bin()).args(["exec", "tpep", "airgw", "--", bin(), "pep", "split-tcp"]).stdout(std::process::Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !has_table() {
        assert!(Instant::now() < deadline, "the proxy never installed its rules");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Stop the proxy itself (the process running in the gateway namespace).
    let pids = Command::new("ip").args(["netns", "pids", ns]).output().unwrap();
    for p in String::from_utf8_lossy(&pids.stdout).split_whitespace() {
        // SAFETY: signalling a process in our own lab.
        unsafe {
            libc::kill(p.parse().unwrap(), libc::SIGTERM);
        }
    }
    let _ = child.wait();
    assert!(!has_table(), "nftables rules left behind");
    let rules = Command::new("ip").args(["netns", "exec", ns, "ip", "rule", "show"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&rules.stdout).contains("0x1a"), "policy routing left behind");
    let o = aerolink(&["down", "tpep"]);
    assert!(o.status.success());
}
