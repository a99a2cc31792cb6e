//! Experiments: an interrupted experiment resumed neither repeats nor loses
//! runs; a malformed experiment file is refused with one clear line; the
//! report is one self-contained file; knobs that set the end hosts' TCP
//! (competing traffic, the client's initial receive window) take effect.

mod common;
use common::*;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const SPEC: &str = r#"
name = "resume-test"
description = "a small experiment that is interrupted and resumed"
seed = 3
repetitions = 3
baseline = "h1"
profiles = ["fast"]
[[variant]]
name = "fast"
base = "satcom-100"
rtt = "x2"
[[workload]]
type = "web"
protocols = ["h1", "h2", "h3"]
pages = ["4x10KB"]
"#;

fn stored(db: &std::path::Path) -> Vec<Value> {
    let o = aerolink(&["results", "export", "--json", "--db", db.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    serde_json::from_slice::<Vec<Value>>(&o.stdout).unwrap()
}

#[test]
fn an_interrupted_experiment_resumes_without_repeating_or_losing_runs() {
    require_root();
    let d = tempdir("resume");
    let (spec, db) = (d.join("exp.toml"), d.join("r.db"));
    std::fs::write(&spec, SPEC).unwrap();
    let mut child = KillOnDrop(Command::new(bin()).args(["experiment", "run", spec.to_str().unwrap(), "--db", db.to_str().unwrap()]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    // Interrupt once a few runs are stored (polling the store, not sleeping
    // a fixed time).
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if db.exists() && stored(&db).len() >= 3 {
            break;
        }
        assert!(Instant::now() < deadline, "no runs stored");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.0.id() as i32, libc::SIGINT);
    }
    assert_eq!(child.0.wait().unwrap().code(), Some(130));
    assert!(leftover_namespaces().is_empty(), "{:?}", leftover_namespaces());
    let before: BTreeMap<String, String> = stored(&db).iter().map(|r| (r["run_key"].as_str().unwrap().to_string(), r["started_at"].as_str().unwrap().to_string())).collect();
    assert!(before.len() >= 3 && before.len() < 9, "{} runs before resuming", before.len());

    let o = aerolink(&["experiment", "run", spec.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    let after = stored(&db);
    assert_eq!(after.len(), 9, "3 protocols × 3 repetitions");
    assert!(after.iter().all(|r| r["ok"] == true), "{after:?}");
    let keys: std::collections::BTreeSet<&str> = after.iter().map(|r| r["run_key"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), 9, "a run was stored twice");
    for r in &after {
        if let Some(t) = before.get(r["run_key"].as_str().unwrap()) {
            assert_eq!(r["started_at"].as_str().unwrap(), t, "a stored run was repeated");
        }
    }
    // The seeds are the experiment's: 3, 4, 5 for the three repetitions.
    let seeds: std::collections::BTreeSet<i64> = after.iter().map(|r| r["seed"].as_i64().unwrap()).collect();
    assert_eq!(seeds.into_iter().collect::<Vec<_>>(), vec![3, 4, 5]);
    // Knobs and workload are objects a script can index, and each run
    // names its series as the report does (here: the bare protocol).
    for r in &after {
        assert!(r["knobs"].is_object() && r["workload_spec"].is_object(), "{r}");
        assert_eq!(r["series"], r["protocol"], "{r}");
        assert!(r.get("knobs_json").is_none(), "{r}");
    }

    // A third run has nothing to do.
    let o = aerolink(&["experiment", "run", spec.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert!(text(&o).1.contains("9 already in"), "{}", text(&o).1);

    // Per-object timings: 4 objects plus the page, per run, in load order.
    let o = aerolink(&["results", "export", "--objects", "--db", db.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    let csv = String::from_utf8(o.stdout).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("run_key,experiment,profile,series,seed,rep,path,bytes,start_ms,first_byte_ms,end_ms,conn,pushed"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 9 * 5, "{csv}");
    for r in &rows {
        let (start, first, end): (f64, f64, f64) = (r[8].parse().unwrap(), r[9].parse().unwrap(), r[10].parse().unwrap());
        assert!(start <= first && first <= end, "{r:?}");
    }
    assert_eq!(rows.iter().filter(|r| r[7] == "10000").count(), 9 * 4, "four 10 KB objects a run: {csv}");

    // A store compared with itself: every series the same, ratio 1.
    let o = aerolink(&["report", "--compare", db.to_str().unwrap(), db.to_str().unwrap(), "-o", d.join("cmp.html").to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let rows: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows.len(), 3, "one row per protocol: {rows:?}");
    assert!(rows.iter().all(|r| r["verdict"] == "same" && r["ratio"] == 1.0), "{rows:?}");
    assert!(std::fs::read_to_string(d.join("cmp.html")).unwrap().contains("B / A"));

    // The report: one file, no external references, the experiment in it.
    let html = d.join("report.html");
    let o = aerolink(&["report", "--db", db.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert!(o.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("resume-test") && page.contains("<svg"));
    assert!(!page.contains("src=\"http") && !page.contains("<script"), "the report must open offline");
    // CSV export has one line per run plus the header, with a series column.
    let o = aerolink(&["results", "export", "--csv", "--db", db.to_str().unwrap()]);
    let csv = String::from_utf8_lossy(&o.stdout);
    assert_eq!(csv.lines().count(), 10);
    assert!(csv.lines().next().unwrap().split(',').any(|c| c == "series"), "{csv}");
}

#[test]
fn a_malformed_experiment_is_refused_with_one_line() {
    let d = tempdir("badexp");
    let f = d.join("bad.toml");
    for (spec, must) in [
        ("name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\nprotocols = [\"h4\"]\npages = [\"1x1KB\"]\n", "h4"),
        ("name = \"x\"\nprofiles = [\"nowhere\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\n", "profiles"),
        ("name = \"x\"\nprofiles = [\"mss\"]\nrepetitions = 0\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\n", "repetitions"),
        ("name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"bulk\"\nsizes = [\"1MB\"]\ntcp_cc = \"vegas\"\n", "tcp_cc"),
        ("name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"teleport\"\n", "type"),
        ("name = \"x\"\nprofiles = [\"mss\"]\ncolour = \"blue\"\n", "colour"),
        ("name = ", "syntax"),
    ] {
        std::fs::write(&f, spec).unwrap();
        let o = Command::new(bin()).args(["experiment", "run", f.to_str().unwrap(), "--db", d.join("x.db").to_str().unwrap()]).output().unwrap();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{spec}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("bad.toml") && err.contains(must), "{err}");
    }
    assert!(!d.join("x.db").exists(), "a refused experiment must not create a store");
}

#[test]
fn shards_run_apart_and_merge_into_the_unsharded_set() {
    require_root();
    let d = tempdir("shards");
    let spec = d.join("exp.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let o = aerolink(&["experiment", "plan", spec.to_str().unwrap(), "--shards", "2", "--json"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let plan: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan.len(), 2);
    let mut shard_dbs = Vec::new();
    let (pcap, traces) = (d.join("pcap"), d.join("traces"));
    for i in 1..=2 {
        let db = d.join(format!("shard-{i}.db"));
        let shard = format!("{i}/2");
        let mut args = vec!["experiment", "run", spec.to_str().unwrap(), "--shard", &shard, "--db", db.to_str().unwrap()];
        // The first shard keeps each run's capture and traces.
        if i == 1 {
            args.extend(["--pcap", pcap.to_str().unwrap(), "--traces", traces.to_str().unwrap()]);
        }
        // The second runs two at a time on the shared pump loops: the same
        // runs, under the same keys.
        if i == 2 {
            args.extend(["--pump", "shared", "--parallel", "2"]);
        }
        let o = aerolink(&args);
        assert!(o.status.success(), "{}", text(&o).1);
        if i == 1 {
            for r in stored(&db) {
                let key = r["run_key"].as_str().unwrap();
                assert!(pcap.join(key).join("hop0.pcapng").metadata().is_ok_and(|m| m.len() > 1000), "{key}: no capture");
                // TLS keys for every run (h3's QUIC uses TLS 1.3 too); a
                // qlog per QUIC connection for h3's, none for the others.
                let keys = std::fs::read_to_string(traces.join(key).join("keys.log")).unwrap_or_default();
                assert!(keys.contains("CLIENT_TRAFFIC_SECRET_0 "), "{key}: no TLS keys");
                let qlogs = std::fs::read_dir(traces.join(key).join("qlog")).map(|d| d.count()).unwrap_or(0);
                assert_eq!(qlogs > 0, r["protocol"] == "h3", "{key} ({}): {qlogs} qlog files", r["protocol"]);
            }
        }
        // Each shard ran exactly the runs the plan gave it.
        let keys: std::collections::BTreeSet<String> = stored(&db).iter().map(|r| r["run_key"].as_str().unwrap().to_string()).collect();
        let planned: std::collections::BTreeSet<String> = plan[i - 1]["keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_string()).collect();
        assert_eq!(keys, planned, "shard {i}");
        shard_dbs.push(db);
    }
    let all = d.join("all.db");
    let merge = |extra: &[&str]| {
        let mut a = vec!["results", "merge", "-o", all.to_str().unwrap(), "--json"];
        a.extend(shard_dbs.iter().map(|p| p.to_str().unwrap()));
        a.extend_from_slice(extra);
        aerolink(&a)
    };
    let o = merge(&[]);
    assert!(o.status.success(), "{}", text(&o).1);
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(m["runs"], 9, "{m}");
    // The unsharded plan's runs, each once; merging again adds nothing.
    let o = aerolink(&["experiment", "plan", spec.to_str().unwrap(), "--json"]);
    let unsharded: std::collections::BTreeSet<String> = serde_json::from_slice::<Vec<Value>>(&o.stdout).unwrap().iter().map(|r| r["key"].as_str().unwrap().to_string()).collect();
    let merged: std::collections::BTreeSet<String> = stored(&all).iter().map(|r| r["run_key"].as_str().unwrap().to_string()).collect();
    assert_eq!(merged, unsharded);
    let o = merge(&[]);
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(m["inputs"].as_array().unwrap().iter().all(|i| i["added"] == 0), "{m}");
    assert_eq!(stored(&all).len(), 9);
    // A store of another experiment file under the same name: refused, one line, exit 2.
    let other_spec = d.join("other.toml");
    std::fs::write(&other_spec, SPEC.replace("repetitions = 3", "repetitions = 1")).unwrap();
    let other = d.join("other.db");
    let o = aerolink(&["experiment", "run", other_spec.to_str().unwrap(), "--db", other.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    let o = aerolink(&["results", "merge", "-o", all.to_str().unwrap(), other.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o).1);
    assert!(text(&o).1.contains("different experiment file") && text(&o).1.contains("--force"), "{}", text(&o).1);
    assert!(leftover_namespaces().is_empty());
}

#[test]
fn cross_traffic_competes_for_the_link() {
    require_root();
    let d = tempdir("cross");
    let (spec, db) = (d.join("exp.toml"), d.join("r.db"));
    // A 2 MB download at 10 Mbit/s alone, beside a competing TCP download,
    // and beside three connections that have run for 2 s: sharing the link,
    // it takes clearly longer, and it starts only after the lead.
    std::fs::write(
        &spec,
        "name = \"cross\"\nseed = 3\nrepetitions = 2\nprofiles = [\"ten\"]\n[[variant]]\nname = \"ten\"\nbase = \"satcom-100\"\nrate = \"10Mbit/s\"\nrtt = \"40ms\"\n[[workload]]\ntype = \"bulk\"\nsizes = [\"2MB\"]\ndirection = \"down\"\ncross = [\"none\", \"tcp-down\"]\n[[workload]]\ntype = \"bulk\"\nsizes = [\"2MB\"]\ndirection = \"down\"\ncross = \"tcp-down\"\ncross_flows = 3\ncross_lead = \"2 s\"\n",
    )
    .unwrap();
    let o = aerolink(&["experiment", "run", spec.to_str().unwrap(), "--db", db.to_str().unwrap(), "--parallel", "1"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let runs = stored(&db);
    assert_eq!(runs.len(), 6);
    // The series name the competing traffic: `cross:tcp-down`, and
    // `cross:tcp-down×3 lead2s` for three connections started 2 s early.
    let times = |cross: Option<&str>| -> Vec<f64> {
        let of = |r: &&serde_json::Value| r["series"].as_str().unwrap().split(' ').skip_while(|w| !w.starts_with("cross:")).collect::<Vec<_>>().join(" ");
        runs.iter().filter(|r| of(r) == cross.unwrap_or("")).map(|r| r["metrics"]["completion_ms"].as_f64().unwrap()).collect()
    };
    let (alone, shared, three) = (times(None), times(Some("cross:tcp-down")), times(Some("cross:tcp-down×3 lead2s")));
    assert_eq!((alone.len(), shared.len(), three.len()), (2, 2, 2), "{runs:?}");
    // Alone ≈ 1.7 s; with an equal share ≈ 3.4 s. Every shared run is
    // slower than every run alone by a third at least.
    let (slowest_alone, fastest_shared) = (alone.iter().cloned().fold(0.0, f64::max), shared.iter().cloned().fold(f64::MAX, f64::min));
    assert!(fastest_shared > 1.33 * slowest_alone, "alone {alone:?} ms, with cross traffic {shared:?} ms");
    // Three connections take a share too. (Whether a larger one than a
    // single flow's varies from run to run — a 2 MB transfer meets the
    // flows wherever their cubic cycles are; satcom-congestion.toml's 10
    // repetitions a case show it: +18.4 s beside four, +2.35 s beside one.)
    let fastest_three = three.iter().cloned().fold(f64::MAX, f64::min);
    assert!(fastest_three > 1.33 * slowest_alone, "alone {alone:?} ms, beside three connections {three:?} ms");
    // The lead: the run lasts its setup, 2 s of competing traffic alone,
    // the download, and its teardown.
    for r in runs.iter().filter(|r| r["series"].as_str().unwrap().ends_with("lead2s")) {
        let (run_s, setup_s, download_s) = (r["duration_s"].as_f64().unwrap(), r["setup_ms"].as_f64().unwrap() / 1e3, r["metrics"]["completion_ms"].as_f64().unwrap() / 1e3);
        assert!(run_s >= setup_s + 2.0 + download_s, "a run with a 2 s lead lasted {run_s} s: setup {setup_s} s, download {download_s} s");
    }
    assert!(leftover_namespaces().is_empty());
    assert!(orphan_processes("^iperf3 -c 198.18").is_empty(), "the cross traffic's iperf3 is stopped with its run");
}

/// The client's initial receive window (`initrwnd`, set on its routes by
/// the runner): a 40 KB download from a server whose initial window is 10
/// segments, at 200 ms RTT, waits for the client's window to grow when it
/// starts at 2 segments — a round trip more at least (≈ two here); the
/// series says so (`RW2`), and a run without it names none.
#[test]
fn the_clients_initial_receive_window_holds_a_download_back() {
    require_root();
    let d = tempdir("initrwnd");
    let (spec, db) = (d.join("exp.toml"), d.join("r.db"));
    let bulk = "[[workload]]\ntype = \"bulk\"\nsizes = [\"40KB\"]\ndirection = \"down\"\n";
    let toml = format!(
        "name = \"rwnd\"\nseed = 3\nrepetitions = 2\nprofiles = [\"far\"]\n[[variant]]\nname = \"far\"\nbase = \"satcom-100\"\nrate = \"50Mbit/s\"\nrtt = \"200ms\"\n{bulk}{bulk}initrwnd = 2\n"
    );
    std::fs::write(&spec, toml).unwrap();
    let o = aerolink(&["experiment", "run", spec.to_str().unwrap(), "--db", db.to_str().unwrap(), "--parallel", "1"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let runs = stored(&db);
    let times = |held: bool| -> Vec<f64> { runs.iter().filter(|r| r["series"].as_str().unwrap().contains("RW2") == held).map(|r| r["metrics"]["completion_ms"].as_f64().unwrap()).collect() };
    let (free, held) = (times(false), times(true));
    assert_eq!((free.len(), held.len()), (2, 2), "{runs:?}");
    let (slowest_free, fastest_held) = (free.iter().cloned().fold(0.0, f64::max), held.iter().cloned().fold(f64::MAX, f64::min));
    assert!(fastest_held > slowest_free + 150.0, "initrwnd 2: {held:?} ms; the kernel's window: {free:?} ms (RTT 200 ms)");
    assert!(leftover_namespaces().is_empty());
}

/// A resolver aboard (Debian's dnsmasq in the aircraft gateway) answers a
/// name's second lookup from its cache, faster than any trip across the
/// space link; asked directly, the ground's name server is a trip away
/// every time. The resolver is stopped with its run.
#[test]
fn a_resolver_aboard_answers_second_lookups_from_its_cache() {
    require_root();
    let (_d, runs) = experiment_runs(
        "dns",
        "name = \"dns\"\nseed = 3\nrepetitions = 1\ntopology = \"ifc\"\nprofiles = [\"geo\"]\n[[variant]]\nname = \"geo\"\nbase = \"satcom-100\"\nrtt = \"300ms\"\n[[workload]]\ntype = \"dns\"\nresolvers = [\"aboard\", \"ground\"]\nnames = 8\n",
    );
    let m = |via: &str| runs.iter().find(|r| r["params"].as_str().unwrap().ends_with(via)).map(|r| r["metrics"].clone()).unwrap_or_else(|| panic!("no run via {via}: {runs:?}"));
    let (aboard, ground) = (m("aboard"), m("ground"));
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
    // Aboard: every first lookup crosses the link (a cold cache), every
    // second is a hit a cabin hop away.
    assert_eq!((f(&aboard, "dns_first_cached_pct"), f(&aboard, "dns_second_cached_pct")), (0.0, 100.0), "{aboard}");
    assert!(f(&aboard, "dns_miss_ms") >= 300.0 && f(&aboard, "dns_hit_ms") < 50.0, "{aboard}");
    // Ground: no cache, both lookups a round trip.
    assert_eq!(f(&ground, "dns_both_miss_pct"), 100.0, "{ground}");
    assert!(f(&ground, "dns_first_ms_median") >= 300.0, "{ground}");
    assert!(leftover_namespaces().is_empty());
    assert!(orphan_processes("^dnsmasq .*--server=198.18").is_empty(), "the resolver aboard is stopped with its run");
}

/// Our web client begins a page load with a lookup of the page's name when
/// the experiment asks for a resolver: aboard (dnsmasq in the aircraft
/// gateway, a cold cache: it forwards across the space link) or at the
/// ground's name server. The lookup crosses the 300 ms link either way and
/// is part of the page's load time; without a resolver there is none.
#[test]
fn a_web_load_begins_with_a_lookup_of_its_name() {
    require_root();
    let (_d, runs) = experiment_runs(
        "webdns",
        "name = \"webdns\"\nseed = 3\nrepetitions = 1\ntopology = \"ifc\"\nprofiles = [\"geo\"]\n[[variant]]\nname = \"geo\"\nbase = \"satcom-100\"\nrtt = \"300ms\"\n[[workload]]\ntype = \"web\"\nprotocols = [\"h2\"]\npages = [\"1x1KB\"]\n[[workload]]\ntype = \"web\"\nprotocols = [\"h2\"]\npages = [\"1x1KB\"]\nresolvers = [\"aboard\", \"ground\"]\n",
    );
    let m = |params: &str| runs.iter().find(|r| r["params"] == params).map(|r| r["metrics"].clone()).unwrap_or_else(|| panic!("no run {params}: {runs:?}"));
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
    let plain = m("1x1KB");
    assert!(plain.get("dns_lookup_ms_mean").is_none(), "{plain}");
    for via in ["aboard", "ground"] {
        let r = m(&format!("1x1KB dns:{via}"));
        let dns = f(&r, "dns_lookup_ms_mean");
        assert_eq!(f(&r, "dns_lookups"), 1.0, "{r}");
        assert!(dns >= 300.0, "a lookup {via} crosses the link: {r}");
        assert!(f(&r, "plt_ms") >= dns + f(&plain, "plt_ms") * 0.8, "the lookup counts in the load: {r} against {plain}");
    }
    assert!(leftover_namespaces().is_empty());
    assert!(orphan_processes("^dnsmasq .*--server=198.18").is_empty(), "the resolver aboard is stopped with its run");
}
