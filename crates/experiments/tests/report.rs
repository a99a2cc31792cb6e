//! The store and the report without root: runs recorded into a real SQLite
//! file from fabricated outcomes (the report's input, not a run), read back,
//! and rendered into one self-contained HTML page whose content is checked.

use aerolink_experiments::metric::Metric;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use aerolink_experiments::experiment::Experiment;
use aerolink_experiments::pool::Finished;
use aerolink_experiments::record::record;
use aerolink_experiments::runner::RunOutcome;
use aerolink_experiments::store::Store;

const SPEC: &str = "name = \"fixture\"\ndescription = \"a report fixture\"\nseed = 5\nrepetitions = 3\nbaseline = \"h1\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\nprotocols = [\"h1\", \"h2\"]\npages = [\"10x100KB\"]\n[[judge]]\nid = \"ifc-h2-worse-than-h1-mss\"\nmetric = \"plt_ms\"\nof = { series = \"h2\" }\nvs = { series = \"h1\" }\n[[judge]]\nid = \"ifc-plt-median-mss\"\nmetric = \"plt_ms\"\nof = { series = \"h1\" }\nstatistic = \"median\"\nscale = 0.001\nsetup = \"a fixture\"\n";

fn outcome(plt_ms: f64, ok: bool) -> RunOutcome {
    RunOutcome {
        ok,
        error: (!ok).then(|| "the client timed out".to_string()),
        result: ok.then(|| {
            let w = aerolink_experiments::workload::Workload::Web(aerolink_experiments::workload::Web { protocol: aerolink_work::web::Protocol::H1, page: "10x100KB".into(), depth: 1, resolver: None });
            w.decode(&serde_json::json!({ "protocol": "h1", "alpn": "http/1.1", "page": "10x100KB", "depth": 1, "plt_ms": plt_ms, "ttfb_ms": 800.0, "connections": 6, "requests": 11, "body_bytes": 1_000_000, "client_retransmits": 3,
            "objects": [{ "path": "/page", "bytes": 2000, "start_ms": 0.0, "first_byte_ms": 700.0, "end_ms": 900.0, "conn": 0 }, { "path": "/obj/0", "bytes": 100000, "start_ms": 950.0, "first_byte_ms": 1500.0, "end_ms": plt_ms, "conn": 1 }] }).to_string())
            .unwrap()
        }),
        wire_bytes_down: 1_100_000,
        wire_bytes_up: 40_000,
        link_drops_loss: 2,
        link_drops_queue: 0,
        link_drops_down: 57,
        link_drops_up: 4,
        link_drops_loss_down: 2,
        link_drops_loss_up: 0,
        allocated_bytes_up: 0,
        allocated_used_bytes_up: 0,
        setup_ms: 70.0,
        teardown_ms: 50.0,
        client_ms: plt_ms,
        lateness_us_p99: 40.0,
        emulator_faults: Vec::new(),
        channel_drops: Vec::new(),
        redials_s: Vec::new(),
        channel_down_spans: Vec::new(),
        link_ended_s: 0.0,
        handover_trigger_s: None,
        handover_l2_start_s: None,
        handover_s: None,
        packets_up: 0,
        packets_down: 0,
    }
}

mod common;

fn db(name: &str) -> common::Scratch {
    common::db("report", name)
}

/// Stores the fixture: h1 loads take 10, 11, 12 s; h2 loads 30, 33 s and
/// one failure.
fn fixture(path: &Path) -> Experiment {
    let e = Experiment::parse(SPEC, "fixture.toml").unwrap();
    let mut store = Store::open(path).unwrap();
    store.record_experiment(&e.name, &e.file, &e.description, e.baseline.as_deref(), &e.source, "2026-11-22T00:00:00Z").unwrap();
    let times: BTreeMap<&str, Vec<Option<f64>>> = BTreeMap::from([("h1", vec![Some(10_000.0), Some(11_000.0), Some(12_000.0)]), ("h2", vec![Some(30_000.0), Some(33_000.0), None])]);
    for p in e.plan() {
        let proto = e.cases[p.case].workload.protocol();
        let t = times[proto.as_str()][p.rep as usize];
        let f = Finished { planned: p, outcome: outcome(t.unwrap_or(0.0), t.is_some()), started: SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000), seconds: 12.5 };
        store.insert_run(&record(&e, &f, "testhost")).unwrap();
    }
    e
}

#[test]
fn records_round_trip_through_the_store() {
    let path = db("store");
    let e = fixture(&path);
    let store = Store::open(&path).unwrap();
    let runs = store.runs(Some(&e.name)).unwrap();
    assert_eq!(runs.len(), 6);
    assert_eq!(runs.iter().filter(|r| !r.ok).count(), 1);
    let h1: Vec<f64> = runs.iter().filter(|r| r.protocol == "h1").map(|r| r.metrics[&Metric::PltMs]).collect();
    assert_eq!(h1.len(), 3);
    let r = runs.iter().find(|r| r.ok).unwrap();
    assert_eq!((r.profile.as_str(), r.workload.as_str(), r.params.as_str(), r.host.as_str()), ("mss", "web", "10x100KB", "testhost"));
    assert_eq!(r.started_at, "2026-11-18T11:06:40Z");
    // Latencies in round trips are added from the profile's RTT.
    assert!(r.metrics.contains_key(&Metric::Requests));
    // The link's own drops per direction are stored with the run.
    assert_eq!((r.metrics[&Metric::LinkDropsDown], r.metrics[&Metric::LinkDropsUp]), (57.0, 4.0));
    let failed = runs.iter().find(|r| !r.ok).unwrap();
    assert_eq!(failed.error.as_deref(), Some("the client timed out"));
    assert!(failed.metrics.is_empty());
    // Storing a run again replaces it (resume after a failure).
    let mut store = Store::open(&path).unwrap();
    let p = e.plan().into_iter().find(|p| p.key == failed.run_key).unwrap();
    let f = Finished { planned: p, outcome: outcome(31_000.0, true), started: SystemTime::UNIX_EPOCH, seconds: 1.0 };
    store.insert_run(&record(&e, &f, "testhost")).unwrap();
    let runs = store.runs(Some(&e.name)).unwrap();
    assert_eq!(runs.len(), 6);
    assert!(runs.iter().all(|r| r.ok));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn the_report_is_one_self_contained_page_with_the_figures() {
    let path = db("report");
    fixture(&path);
    let store = Store::open(&path).unwrap();
    let html = aerolink_experiments::report::render(&store.experiments().unwrap(), &store.runs(None).unwrap(), "fixture.db", "2026-11-22T00:00:00Z");
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.contains("fixture") && html.contains("a report fixture"));
    assert!(html.contains("6 runs (1 failed)"), "summary line");
    // Medians: h1 11 s, h2 31.5 s, and h2's ratio to the h1 baseline.
    assert!(html.contains("11.00 s"), "h1 median");
    assert!(html.contains("31.50 s"), "h2 median");
    assert!(html.contains("2.86"), "h2 / h1 ratio");
    // The link's drops per direction stand beside the protocols' own
    // retransmission counts, named for what they are.
    assert!(html.contains("link drops ↓") && html.contains("link drops ↑") && html.contains("lost packets (QUIC)"), "drop columns");
    assert!(html.contains("<td>57</td><td>4</td>"), "drop medians");
    // Three runs a series: the CDF shows the runs as points, not a
    // staircase.
    assert!(html.contains("runs on mss (CDF points)") && html.contains("<circle"), "CDF points");
    // A waterfall of the median run per series and link.
    assert!(html.contains("<h4>Waterfalls</h4>") && html.contains("h2 on mss") && html.contains("median run (seed") && html.contains("/obj/0: asked 0.950 s"), "waterfalls");
    // Failures are listed with their reason.
    assert!(html.contains("the client timed out"));
    // The studies' results open the report: each study's agreement over
    // its whole catalogue, then the entries this store maps — here with
    // three and two repetitions, fewer than the policy's ten.
    assert!(html.contains("<h2>The studies' results</h2>") && html.contains("Mile High WiFi") && html.contains("0 of 60 scored entries hold"), "agreement");
    assert!(html.contains("ifc-h2-worse-than-h1-mss") && html.contains("ifc-plt-median-mss") && html.contains("setup: a fixture"), "entries");
    assert!(html.contains("inconclusive") && html.contains("at least 10") && html.contains("no interval under 3"), "too few runs");
    // Self-contained: inline SVG, no scripts, nothing fetched.
    assert!(html.contains("<svg"));
    for banned in ["<script", "src=\"http", "href=\"http", "@import", "url("] {
        assert!(!html.contains(banned), "the report references {banned}");
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn runs_whose_frames_the_emulator_lost_are_named_in_the_report() {
    let path = db("faults");
    let e = fixture(&path);
    let html = |store: &Store| aerolink_experiments::report::render(&store.experiments().unwrap(), &store.runs(None).unwrap(), "fixture.db", "2026-11-22T00:00:00Z");
    let mut store = Store::open(&path).unwrap();
    assert!(!html(&store).contains("frames the emulator lost"), "no run lost any");
    let p = e.plan().into_iter().find(|p| e.cases[p.case].workload.protocol() == "h1").unwrap();
    let mut o = outcome(10_500.0, true);
    o.emulator_faults = vec![aerolink_net::lab::Fault { hop: 1, dir: Some(aerolink_net::log::Dir::Down), refused: 7, first: "EINVAL".into() }];
    let seed = p.seed;
    store.insert_run(&record(&e, &Finished { planned: p, outcome: o, started: SystemTime::UNIX_EPOCH, seconds: 1.0 }, "testhost")).unwrap();
    let runs = store.runs(None).unwrap();
    assert_eq!(runs.iter().filter(|r| r.metrics.contains_key(&Metric::EmulatorRefused)).map(|r| (r.seed, r.metrics[&Metric::EmulatorRefused])).collect::<Vec<_>>(), vec![(seed as i64, 7.0)]);
    let h = html(&store);
    assert!(h.contains("Runs with frames the emulator lost (1)") && h.contains(&format!("<td>{seed}</td><td class=\"fail\">7</td>")), "the spoiled run is listed with its seed and count");
}

#[test]
fn one_formatter_for_every_metric() {
    // By the stored name, as the report, benches and progress lines read it.
    let fmt_metric = |name: &str, v: f64| name.parse::<Metric>().unwrap().fmt(v);
    assert_eq!(fmt_metric("plt_ms", 12_345.0), "12.35 s");
    assert_eq!(fmt_metric("ttfb_ms", 250.4), "250 ms");
    assert_eq!(fmt_metric("latency_ms_mean_up", 7.25), "7.2 ms");
    assert_eq!(fmt_metric("latency_rtt_mean", 1.234), "1.23 RTT");
    assert_eq!(fmt_metric("latency_passes_mean_s2c", 2.0), "2.00 passes");
    assert_eq!(fmt_metric("goodput_bps", 1_890_000.0), "1.89 Mbit/s");
    assert_eq!(fmt_metric("goodput_bps", 34e9), "34.00 Gbit/s");
    assert_eq!(fmt_metric("connections", 6.0), "6");
    assert_eq!(fmt_metric("plt_ms", f64::NAN), "–");
}

#[test]
fn bulk_runs_get_a_throughput_against_delay_chart() {
    let path = db("bulk");
    let spec = "name = \"bulkfix\"\nrepetitions = 3\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"bulk\"\nsizes = [\"1MB\"]\ntcp_cc = [\"cubic\", \"bbr\"]\n";
    let e = Experiment::parse(spec, "bulkfix.toml").unwrap();
    let mut store = Store::open(&path).unwrap();
    store.record_experiment(&e.name, &e.file, &e.description, e.baseline.as_deref(), &e.source, "2026-11-22T00:00:00Z").unwrap();
    for (i, p) in e.plan().into_iter().enumerate() {
        let result = serde_json::json!({ "transport": "tcp", "direction": "down", "bytes": 1_000_000, "sender_cc": "cubic",
            "completion_ms": 5000.0 + i as f64, "goodput_bps": 1.6e6 + i as f64 * 1e4, "sender_retransmits": 2, "sender_srtt_ms_max": 900.0 + i as f64 * 10.0, "bins_bytes": [1000, 2000] });
        let mut o = outcome(0.0, true);
        o.result = Some(e.cases[p.case].workload.decode(&result.to_string()).unwrap());
        let f = Finished { planned: p, outcome: o, started: SystemTime::UNIX_EPOCH, seconds: 5.0 };
        store.insert_run(&record(&e, &f, "testhost")).unwrap();
    }
    let html = aerolink_experiments::report::render(&store.experiments().unwrap(), &store.runs(None).unwrap(), "bulk.db", "now");
    assert!(html.contains("goodput against delay on mss"), "the scatter");
    // One point per run, as dots.
    let chart = &html[html.find("goodput against delay on mss").unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    assert_eq!(chart.matches("<circle").count(), 6, "{chart}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_cabin_sweep_gets_its_curve() {
    let path = db("cabin");
    let spec = "name = \"cabinfix\"\nrepetitions = 2\nprofiles = [\"mss\", \"da2gc\"]\n[[workload]]\ntype = \"cabin\"\npassengers = [1, 4, 16]\nsize = \"500KB\"\n";
    let e = Experiment::parse(spec, "cabinfix.toml").unwrap();
    assert_eq!(e.plan().len(), 12);
    let mut store = Store::open(&path).unwrap();
    store.record_experiment(&e.name, &e.file, &e.description, e.baseline.as_deref(), &e.source, "2026-11-22T00:00:00Z").unwrap();
    for p in e.plan() {
        let aerolink_experiments::workload::Workload::Cabin(c) = &e.cases[p.case].workload else { panic!("a cabin") };
        let n = c.passengers as f64;
        // mss: the median passenger's time grows with the cabin; da2gc:
        // barely.
        let median = if p.profile == 0 { 1000.0 * n } else { 1000.0 + 50.0 * n };
        let result = serde_json::json!({ "passengers": [], "bytes_each": 500_000, "completion_ms_median": median, "completion_ms_max": 1500.0 * n, "goodput_bps": 4e6, "jain": 0.99 });
        let mut o = outcome(0.0, true);
        o.result = Some(e.cases[p.case].workload.decode(&result.to_string()).unwrap());
        let f = Finished { planned: p, outcome: o, started: SystemTime::UNIX_EPOCH, seconds: 5.0 };
        store.insert_run(&record(&e, &f, "testhost")).unwrap();
    }
    let html = aerolink_experiments::report::render(&store.experiments().unwrap(), &store.runs(None).unwrap(), "cabin.db", "now");
    let at = html.find("As the cabin fills").expect("the curves");
    let charts = &html[at..];
    // Two charts (median, slowest), a line per link, through three points.
    for who in ["median passenger", "slowest passenger"] {
        let c = &charts[charts.find(who).unwrap_or_else(|| panic!("{who}"))..];
        let c = &c[..c.find("</svg>").unwrap()];
        assert_eq!(c.matches("<path d=\"M").count(), 2, "{c}");
        assert!(c.matches(" L").count() >= 4, "{c}");
    }
    // The capacity answer under the curves, per link.
    assert!(charts.contains("mss, 500KB: the median passenger's time doubles (1.00 s with 1, 4.00 s) at 4 passengers; 1 still under twice"), "{charts}");
    assert!(charts.contains("da2gc, 500KB: the median passenger's time stays under twice its 1.05 s with 1 up to 16 passengers"), "{charts}");
    let _ = std::fs::remove_file(&path);
}
