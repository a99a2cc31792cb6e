//! `--pcap DIR`: a pcapng file per hop that Debian's tshark reads whole,
//! each packet on the side it entered the link with its fate as its
//! comment and, if it left, on the side it left; the counts per fate are
//! the packet log's (`aerolink stats`) for the same run.

mod common;
use common::*;

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

/// (interface, fate) → records, the fate being the comment up to its
/// first figure (`departed`, `dropped: loss`, `one-way delay`, …).
fn fates(file: &std::path::Path) -> BTreeMap<(u32, String), u64> {
    let o = Command::new("tshark").arg("-r").arg(file).args(["-T", "fields", "-e", "frame.interface_id", "-e", "frame.comment"]).output().expect("tshark (Debian: apt-get install tshark)");
    let (out, err) = text(&o);
    assert!(o.status.success() && !err.contains("damaged") && !err.contains("cut short"), "tshark: {err}");
    let mut m = BTreeMap::new();
    for l in out.lines() {
        let (iface, comment) = l.split_once('\t').unwrap_or_else(|| panic!("{l:?}"));
        let fate = comment.split(':').next().unwrap().split(" after").next().unwrap();
        let fate = if fate == "dropped" { comment.to_string() } else { fate.split(' ').take(2).collect::<Vec<_>>().join(" ") };
        *m.entry((iface.parse().unwrap(), fate)).or_insert(0) += 1;
    }
    m
}

#[test]
fn every_packet_s_fate_is_in_the_capture_as_the_log_counts_it() {
    let d = tempdir("pcap");
    let cap = d.join("cap");
    let log = d.join("run.log");
    // A TCP download through a small queue with random loss: drops by
    // queue and by loss, in both directions (ACKs are lost too).
    let o = aerolink(&[
        "run",
        "--rate",
        "4Mbit/s",
        "--rtt",
        "40ms",
        "--queue",
        "12 packets",
        "--loss",
        "2%",
        "--seed",
        "3",
        "--pcap",
        cap.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
        "--server",
        "iperf3 -s -1",
        "--ready-port",
        "5201",
        "--client",
        "iperf3 -c $AEROLINK_SERVER -R -n 1M",
    ]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("capture in") && err.contains("hop0.pcapng"), "{err}");
    let got = fates(&cap.join("hop0.pcapng"));
    let stats: Value = serde_json::from_slice(&aerolink(&["stats", log.to_str().unwrap(), "--json"]).stdout).unwrap();
    let mut queue_drops = 0;
    for dir in stats["directions"].as_array().unwrap() {
        let (entering, leaving) = if dir["dir"] == "up" { (0, 1) } else { (2, 3) };
        let n = |k: &str| got.get(&(entering, k.to_string())).copied().unwrap_or(0);
        let departed = dir["departed_packets"].as_u64().unwrap();
        assert_eq!(n("departed"), departed, "{dir}: {got:?}");
        assert_eq!(got.get(&(leaving, "one-way delay".to_string())).copied().unwrap_or(0), departed, "{got:?}");
        for (reason, comment) in [("loss", "dropped: loss"), ("queue", "dropped: queue"), ("outage", "dropped: outage")] {
            assert_eq!(n(comment), dir["dropped"][reason].as_u64().unwrap_or(0), "{reason} {dir}: {got:?}");
        }
        assert_eq!(n("still in"), dir["in_flight_at_end"].as_u64().unwrap(), "{got:?}");
        queue_drops += dir["dropped"]["queue"].as_u64().unwrap_or(0);
    }
    assert!(queue_drops > 0 && got.keys().any(|k| k.1 == "dropped: loss"), "the run should drop by queue and by loss: {got:?}");
    // Headers only: --pcap-snap 128 keeps 128 bytes of a full packet.
    let cap2 = d.join("cap2");
    let o = aerolink(&["run", "--rtt", "10ms", "--pcap", cap2.to_str().unwrap(), "--pcap-snap", "128", "--client", "ping -c 3 -i 0.05 -s 1000 $AEROLINK_SERVER"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let o = Command::new("tshark").arg("-r").arg(cap2.join("hop0.pcapng")).args(["-T", "fields", "-e", "frame.cap_len", "-e", "frame.len"]).output().unwrap();
    let lens: Vec<String> = text(&o).0.lines().map(str::to_string).collect();
    assert_eq!(lens.len(), 12, "{lens:?}");
    assert!(lens.iter().all(|l| l == "128\t1028"), "{lens:?}");
    // A bad size is one line naming the flag.
    let o = aerolink(&["run", "--pcap", "x", "--pcap-max", "lots", "--client", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--pcap-max"), "{:?}", text(&o));
}
