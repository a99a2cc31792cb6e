//! Each workload end to end over a real emulated link (short runs on
//! low-RTT links): the protocol really negotiated, object and byte counts,
//! connection counts, and message latencies no shorter than the link's
//! one-way delay.

mod common;
use common::*;

use serde_json::Value;

/// Runs `aerolink bench …` once and returns the client's result.
fn bench(args: &[&str]) -> Value {
    let mut a = vec!["bench"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--json", "--timeout", "60s"]);
    let o = aerolink(&a);
    let (out, err) = text(&o);
    assert!(o.status.success(), "aerolink {a:?} failed: {err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let run = &v[0];
    assert_eq!(run["outcome"]["ok"], true, "{run}");
    assert!(run["outcome"]["wire_bytes_down"].as_u64().unwrap() > 0);
    run["outcome"]["result"].clone()
}

fn web(protocol: &str, page: &str, depth: &str) -> Value {
    bench(&["web", "--rtt", "20ms", "--rate", "50Mbit/s", "--protocol", protocol, "--page", page, "--depth", depth])
}

#[test]
fn h1_uses_at_most_six_persistent_connections() {
    let r = web("h1", "20x20KB", "1");
    assert_eq!(r["alpn"], "http/1.1");
    assert_eq!(r["requests"], 21);
    assert_eq!(r["connections"], 6, "{r}");
    let objects = r["objects"].as_array().unwrap();
    let images: u64 = objects.iter().filter(|o| o["path"].as_str().unwrap().starts_with("/obj/")).map(|o| o["bytes"].as_u64().unwrap()).sum();
    assert_eq!(images, 20 * 20_000);
    // No object starts before the HTML that references it has arrived.
    let html_end = objects.iter().find(|o| o["path"].as_str().unwrap().starts_with("/page.html")).unwrap()["end_ms"].as_f64().unwrap();
    assert!(objects.iter().filter(|o| o["path"].as_str().unwrap().starts_with("/obj/")).all(|o| o["start_ms"].as_f64().unwrap() >= html_end));
}

#[test]
fn h1_close_opens_a_connection_per_object() {
    let r = web("h1-close", "5x10KB", "1");
    assert_eq!(r["alpn"], "http/1.1");
    assert_eq!(r["requests"], 6);
    assert_eq!(r["connections"], 6);
}

/// Plain HTTP (seed 001 compares it with HTTPS): the same page and bytes,
/// a round trip less per connection — no TLS handshake — so with a
/// connection per object two round trips less (the page's, then the
/// objects' in parallel).
#[test]
fn http1_close_loads_the_same_page_without_tls_handshakes() {
    let load = |p: &str| bench(&["web", "--rtt", "200ms", "--rate", "50Mbit/s", "--protocol", p, "--page", "5x10KB", "--depth", "1"]);
    let (plain, tls) = (load("http1-close"), load("h1-close"));
    assert_eq!((plain["protocol"].as_str(), plain["requests"].as_u64(), plain["connections"].as_u64()), (Some("http1-close"), Some(6), Some(6)), "{plain}");
    assert_eq!(plain["body_bytes"], tls["body_bytes"]);
    let plt = |r: &Value| r["plt_ms"].as_f64().unwrap();
    // Four round trips against six.
    assert!(plt(&plain) >= 800.0 && plt(&tls) - plt(&plain) > 300.0, "plain {} ms, TLS {} ms", plt(&plain), plt(&tls));
}

#[test]
fn h2_multiplexes_on_one_connection() {
    let r = web("h2", "20x20KB", "1");
    assert_eq!(r["alpn"], "h2");
    assert_eq!(r["connections"], 1);
    assert_eq!(r["requests"], 21);
}

/// HTTP/2's receive window bounds what the server sends a round trip: 400
/// KB in 65 535-byte windows (the protocol's initial one, never raised)
/// takes at least six round trips of data at 200 ms, where the default
/// windows (2 MB a stream) let it go in slow start's four.
#[test]
fn h2_window_bounds_what_arrives_each_round_trip() {
    let load = |extra: &[&str]| {
        let mut a = vec!["web", "--rtt", "200ms", "--rate", "50Mbit/s", "--protocol", "h2", "--page", "1x400KB", "--depth", "1"];
        a.extend_from_slice(extra);
        bench(&a)["plt_ms"].as_f64().unwrap()
    };
    let (small, default) = (load(&["--h2-window", "65535"]), load(&[]));
    // Handshakes and the page: three round trips either way; then the
    // object in ⌈400 KB / 64 KB⌉ = 7 windows against about four flights.
    assert!(small >= 9.0 * 200.0, "64 KB windows: {small} ms, fewer than nine round trips");
    assert!(small - default >= 2.0 * 200.0, "64 KB windows {small} ms against the default's {default} ms");
}

#[test]
fn h2_server_push_delivers_the_page_without_the_round_trips_it_needs() {
    // HTML → stylesheet → stylesheet → ten images: without push each
    // level costs a round trip; with push everything comes with the HTML.
    let load = |push: &str| bench(&["web", "--rtt", "200ms", "--rate", "50Mbit/s", "--protocol", "h2", "--page", "10x10KB", "--depth", "3", "--push", push]);
    let (none, all, half) = (load("0"), load("100"), load("50"));
    assert_eq!(none["pushed"], 0);
    assert_eq!((all["requests"].as_u64(), all["pushed"].as_u64()), (Some(13), Some(12)), "{all}");
    assert!(all["objects"].as_array().unwrap().iter().all(|o| o["pushed"] == true || o["path"].as_str().unwrap().starts_with("/page.html")), "{all}");
    assert_eq!(half["pushed"], 6, "{half}");
    let plt = |r: &Value| r["plt_ms"].as_f64().unwrap();
    // Push saves the three dependency round trips but delivers the 130 KB
    // in slow start from the HTML's request on (one round trip more than
    // the requests' cwnd had grown to): about two round trips in all, 413
    // ms here alone (1205 vs 1618 ms). 400 left 13 ms for a loaded machine
    // and failed beside the other lanes (1222 ms); 1.5 round trips is the
    // claim with room, and still fails if push saved only one.
    assert!(plt(&all) + 300.0 < plt(&none), "push saves more than one and a half of the three dependency round trips: {} vs {} ms", plt(&all), plt(&none));
    assert!(plt(&half) < plt(&none) && plt(&all) <= plt(&half) + 50.0, "{} {} {}", plt(&none), plt(&half), plt(&all));
}

#[test]
fn h3_runs_over_one_quic_connection_and_follows_stylesheets() {
    let r = web("h3", "10x10KB", "3");
    assert_eq!(r["alpn"], "h3");
    assert_eq!(r["connections"], 1);
    // HTML, two chained stylesheets, ten images.
    assert_eq!(r["requests"], 13);
    // Each dependency level costs at least one round trip (20 ms): the
    // images cannot start before 3 RTT + the QUIC handshake.
    let first_image = r["objects"].as_array().unwrap().iter().filter(|o| o["path"].as_str().unwrap().starts_with("/obj/")).map(|o| o["start_ms"].as_f64().unwrap()).fold(f64::MAX, f64::min);
    assert!(first_image >= 80.0, "first image at {first_image} ms");
}

#[test]
fn web_works_over_ipv6() {
    let r = bench(&["web", "--rtt", "10ms", "--protocol", "h2", "--page", "2x5KB", "--ipv6"]);
    assert_eq!(r["alpn"], "h2");
    assert_eq!(r["requests"], 3);
}

#[test]
fn bulk_tcp_uses_the_asked_congestion_control_and_quic_delivers() {
    let r = bench(&["bulk", "--rtt", "20ms", "--rate", "20Mbit/s", "--transport", "tcp", "--size", "1MB", "--cc", "bbr"]);
    assert_eq!(r["sender_cc"], "bbr");
    assert_eq!(r["bytes"], 1_000_000);
    assert_eq!(r["bins_bytes"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).sum::<u64>(), 1_000_000);
    // 1 MB at 20 Mbit/s takes at least 0.4 s.
    assert!(r["completion_ms"].as_f64().unwrap() >= 400.0, "{r}");
    let r = bench(&["bulk", "--rtt", "20ms", "--rate", "20Mbit/s", "--transport", "quic", "--size", "1MB", "--direction", "up"]);
    assert_eq!(r["transport"], "quic");
    assert_eq!(r["bins_bytes"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).sum::<u64>(), 1_000_000);
}

/// The `sat` preset against quinn's defaults on one lossy GEO link, in the
/// same test (a ratio, not a time): its first window is the path, and the
/// 1 % loss does not halve it. Its knobs are recorded with the result.
#[test]
fn the_sat_preset_fills_a_lossy_geo_link_from_the_first_round_trip() {
    let link = ["bulk", "--rtt", "600ms", "--rate", "4Mbit/s", "--loss", "1%", "--transport", "quic", "--size", "1MB"];
    let run = |extra: &[&str]| -> Value {
        let mut a = vec!["bench"];
        a.extend_from_slice(&link);
        a.extend_from_slice(extra);
        a.extend_from_slice(&["--json", "--timeout", "60s"]);
        let o = aerolink(&a);
        assert!(o.status.success(), "aerolink {a:?} failed: {}", text(&o).1);
        let v: Value = serde_json::from_str(&text(&o).0).unwrap();
        assert_eq!(v[0]["outcome"]["ok"], true, "{v}");
        assert_eq!(v[0]["outcome"]["result"]["bins_bytes"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).sum::<u64>(), 1_000_000);
        v[0].clone()
    };
    let sat = run(&["--quic-preset", "sat", "--quic-rate", "4Mbit/s"]);
    let quinn = run(&[]);
    let q = &sat["knobs"]["quic"];
    assert_eq!(
        (q["preset"].as_str(), q["cc"].as_str(), q["rate_bps"].as_u64(), q["ack_every"].as_u64(), q["initial_mtu"].as_u64()),
        (Some("sat"), Some("sat"), Some(4_000_000), Some(10), Some(1452)),
        "{q}"
    );
    let (ts, tq) = (sat["outcome"]["result"]["completion_ms"].as_f64().unwrap(), quinn["outcome"]["result"]["completion_ms"].as_f64().unwrap());
    // Ideal: 1.5 RTT before data, 1.04 MB of packets at 4 Mbit/s, 0.5 RTT:
    // 3.3 s. Slow start from quinn's 12 KB needs 6 round trips to the
    // 300 KB the path holds, and cubic halves its window on loss.
    assert!(ts < 0.8 * tq, "sat {ts} ms, quinn's defaults {tq} ms");
}

#[test]
fn objects_fetch_the_seed_003_set() {
    let r = bench(&["objects", "--rtt", "20ms", "--rate", "50Mbit/s", "--protocol", "h3", "--set", "short", "--mode", "par", "--quic-preset", "h-bdp1"]);
    assert_eq!(r["alpn"], "h3");
    let o = r["objects"].as_array().unwrap();
    assert_eq!(o.len(), 10);
    assert!(o.iter().all(|x| x["bytes"] == 40_000));
}

#[test]
fn message_latency_is_never_below_the_one_way_delay() {
    for transport in ["tcp", "quic"] {
        let r = bench(&["messages", "--delay", "25ms", "--rate", "1Mbit/s", "--transport", transport, "--direction", "both", "--size", "100", "--offered", "40kbit/s", "--duration", "3s"]);
        assert_eq!(r["transport"], transport);
        for dir in ["up", "down"] {
            let lat: Vec<f64> = r[dir]["latencies_ms"].as_array().unwrap_or_else(|| panic!("no {dir}: {r}")).iter().map(|x| x.as_f64().unwrap()).collect();
            // 3 s at 50 messages/s, minus those still in flight at the end.
            assert!(lat.len() > 100, "{dir}: only {} messages", lat.len());
            let min = lat.iter().cloned().fold(f64::MAX, f64::min);
            assert!(min >= 25.0, "{transport} {dir}: a message took {min} ms over a 25 ms link");
        }
    }
}

#[test]
fn bad_workload_flags_are_refused() {
    for args in [
        vec!["bench", "web", "--protocol", "spdy"],
        vec!["bench", "web", "--page", "lots"],
        vec!["bench", "bulk", "--transport", "sctp"],
        vec!["bench", "objects", "--set", "huge"],
        vec!["bench", "messages", "--size", "4"],
        vec!["bench", "web", "--quic-preset", "turbo"],
        vec!["bench", "bulk", "--cc", "vegas"],
        vec!["bench", "bulk", "--transport", "quic", "--quic-rate", "10Mbit/s"],
        vec!["bench", "bulk", "--transport", "quic", "--quic-preset", "sat", "--quic-rate", "fast"],
        vec!["bench", "bulk", "--transport", "quic", "--quic-ack-every", "0"],
        vec!["bench", "bulk", "--transport", "quic", "--quic-mtu", "1000"],
    ] {
        let o = std::process::Command::new(bin()).args(&args).output().unwrap();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn realtime_mechanisms_deliver_every_update_no_faster_than_the_link() {
    for (mechanism, scenario) in [("ws", "chat"), ("sse", "server-update"), ("alp", "client-update")] {
        let r = bench(&["realtime", "--delay", "30ms", "--mechanism", mechanism, "--scenario", scenario, "--count", "8", "--interval-ms", "50"]);
        assert_eq!(r["nagle"], true, "Nagle is on by default, as in the study");
        let key = if scenario == "client-update" { "client_to_server_ms" } else { "server_to_client_ms" };
        let lat: Vec<f64> = r[key].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(lat.len(), 8, "{mechanism} {scenario}: {r}");
        assert!(lat.iter().all(|l| *l >= 30.0), "{mechanism} {scenario}: {lat:?}");
        if scenario == "chat" {
            assert_eq!(r["client_to_server_ms"].as_array().unwrap().len(), 8);
        }
    }
}

#[test]
fn the_bulk_clients_receive_buffer_bounds_the_window_and_the_sender_reports_its_rtt() {
    // 2 Mbit/s, 200 ms: without a limit TCP fills the link; a 6 kB receive
    // buffer (about a 6 kB window) allows about 6 kB per 200 ms = 240 kbit/s.
    let link = ["bulk", "--rtt", "200ms", "--rate", "2Mbit/s", "--size", "300KB", "--quickack", "--mss", "1024"];
    let free = bench(&link);
    let mut small = link.to_vec();
    small.extend(["--rcvbuf", "6000"]);
    let small = bench(&small);
    let (g_free, g_small) = (free["goodput_bps"].as_f64().unwrap(), small["goodput_bps"].as_f64().unwrap());
    assert!(g_free > 1.0e6, "unlimited window: {g_free} bit/s");
    assert!(g_small < 0.5e6, "6 kB window: {g_small} bit/s");
    // The sender's smoothed RTT is at least the path's.
    for r in [&free, &small] {
        let srtt = r["sender_srtt_ms_max"].as_f64().unwrap();
        assert!((199.0..5_000.0).contains(&srtt), "max SRTT {srtt} ms");
    }
}

/// The server's initial window is set on the route its peer is reached
/// by (a direct lab's connected /24, not only the lab's /15): 40 KB at
/// 400 ms takes one round trip of data with IW40 and four with IW2.
#[test]
fn the_servers_initial_window_sets_how_many_round_trips_a_download_takes() {
    let took = |iw: &str| bench(&["bulk", "--rtt", "400ms", "--rate", "50Mbit/s", "--size", "40KB", "--initcwnd", iw])["completion_ms"].as_f64().unwrap();
    let (small, large) = (took("2"), took("40"));
    assert!(small - large > 2.0 * 400.0, "IW2 {small} ms, IW40 {large} ms: three round trips apart");
}

#[test]
fn a_tcp_download_survives_call_drops_on_a_bonded_link() {
    // Three 24 kbit/s channels that drop every 3 s on average and redial
    // in 2 s (Iridium's numbers sped up tenfold, so the test is short).
    let d = tempdir("bonded");
    let prof = d.join("bond.toml");
    std::fs::write(&prof, "[link]\nbonded = { channels = 3, rate = \"24 kbit/s\", delay = \"100 ms\", drop_every = \"3 s\", redial = [\"2 s\", \"2 s\"], queue = \"8 KB\" }\n").unwrap();
    let log = d.join("bond.log");
    let (serve, client) = (format!("{} workload serve", bin()), format!("{} workload bulk --server $AEROLINK_SERVER --bytes 60000", bin()));
    let o = aerolink(&["run", "-q", "--profile", prof.to_str().unwrap(), "--seed", "5", "--log", log.to_str().unwrap(), "--ready-port", "5201", "--server", &serve, "--client", &client]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let r: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(r["bytes"], 60_000);
    // The calls did drop under it: the log counts what they took.
    let st = aerolink(&["stats", "--json", log.to_str().unwrap()]);
    let s: Value = serde_json::from_slice(&st.stdout).unwrap();
    let outage: u64 = s["directions"].as_array().unwrap().iter().map(|dir| dir["dropped"]["outage"].as_u64().unwrap_or(0)).sum();
    assert!(outage > 0, "no call drop took a packet: {s}");
    // The channel monitor's events: every direction saw calls drop and
    // come back (20 s of 3 channels dropping every 3 s on average).
    for dir in s["directions"].as_array().unwrap() {
        let c = &dir["channels"];
        assert!(c["drops"].as_u64().unwrap() >= 2 && c["redials"].as_u64().unwrap() >= 1, "{c}");
    }
}

#[test]
fn a_tcp_download_survives_a_handover_in_each_mode() {
    // 200 kB over 200 kbit/s (8 s) across a handover at 3 s. Without
    // buffering the home agent's packets to the old address are lost and
    // TCP recovers by its retransmission timeout; with it none of them is.
    let d = tempdir("handover");
    for mode in ["baseline", "no-dad", "buffer"] {
        let prof = d.join(format!("{mode}.toml"));
        std::fs::write(&prof, format!("[link]\nrate = \"200 kbit/s\"\ndelay = \"20 ms\"\nqueue = \"32 KB\"\nhandover = {{ at = \"3 s\", mode = \"{mode}\" }}\n")).unwrap();
        let log = d.join(format!("{mode}.log"));
        let (serve, client) = (format!("{} workload serve", bin()), format!("{} workload bulk --server $AEROLINK_SERVER --bytes 200000", bin()));
        let o = aerolink(&["run", "-q", "--profile", prof.to_str().unwrap(), "--log", log.to_str().unwrap(), "--ready-port", "5201", "--server", &serve, "--client", &client]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{mode}: {out}{err}");
        let r: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{mode}: {e}: {out}"));
        assert_eq!(r["bytes"], 200_000, "{mode}");
        let st = aerolink(&["stats", "--json", log.to_str().unwrap()]);
        let s: Value = serde_json::from_slice(&st.stdout).unwrap();
        let down = s["directions"].as_array().unwrap().iter().find(|d| d["dir"] == "down").unwrap().clone();
        let phases: Vec<&str> = down["handovers"].as_array().unwrap().iter().map(|p| p[0].as_str().unwrap()).collect();
        assert!(phases.contains(&"l2-start") && phases.contains(&"bound"), "{mode}: {phases:?}");
        let lost = down["dropped"]["outage"].as_u64().unwrap_or(0);
        if mode == "buffer" {
            assert_eq!(lost, 0, "buffering loses nothing toward the aircraft");
            assert!(phases.contains(&"buffering"));
        } else {
            assert!(lost > 0, "{mode}: nothing lost toward the aircraft");
        }
    }
}

#[test]
fn a_bonded_link_has_a_link_monitor_for_the_programs() {
    // Programs find the monitor file in the environment; it says the
    // capacity each way (3 × 2.4 kbit/s, every call connected at the
    // start) and is gone after the run.
    let dir = tempdir("monitor");
    let prof = dir.join("three.toml");
    std::fs::write(&prof, "name = \"three\"\n[link]\nbonded = { channels = 3, rate = \"2.4 kbit/s\", delay = \"600 ms\", drop_every = \"16 min\", start = \"up\" }\n").unwrap();
    let o = aerolink(&["run", "-q", "--profile", prof.to_str().unwrap(), "--client", "echo $AEROLINK_LINK0_MONITOR; cat $AEROLINK_LINK0_MONITOR"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let mut lines = out.lines();
    let path = lines.next().unwrap_or_default().to_string();
    assert!(path.ends_with(".monitor"), "{out}");
    assert_eq!(lines.collect::<Vec<_>>(), ["up_bps 7200", "down_bps 7200"], "{out}");
    assert!(!std::path::Path::new(&path).exists(), "{path} left behind");
    // A link whose capacity never changes has none.
    let o = aerolink(&["run", "-q", "--profile", "mss", "--client", "echo \"[${AEROLINK_LINK0_MONITOR:-none}]\""]);
    assert_eq!(text(&o).0.trim(), "[none]");
}

/// `bench fleet`: three terminals, each its own lab pinging once a
/// second, and the probe beside them, once with a pump thread per link and
/// once on the shared loops — every ping answered near the configured
/// round trip either way (not judged to the sub-millisecond here: other
/// tests run beside this one; `bench fleet` itself states the targets),
/// the figures a user reads, and no namespace left.
#[test]
fn a_fleet_of_terminals_runs_at_once_and_leaves_nothing() {
    require_root();
    let d = tempdir("fleet");
    let out = d.join("fleet.jsonl");
    let o = aerolink(&["bench", "fleet", "--terminals", "3", "--load", "ping", "--rtt", "40ms", "--seconds", "5", "--json", "--out", out.to_str().unwrap()]);
    let (stdout, err) = text(&o);
    // Exit 1 is a missed target (this machine's), not a failure to run.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{err}");
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let cpus = v["cpus"].as_u64().unwrap();
    // Both pumps by default, the thread first: a thread per link and the
    // probe's, or one loop per core.
    for (s, pump, threads) in [(&v["steps"][0], "thread", 4), (&v["steps"][1], "shared", cpus)] {
        assert_eq!((s["terminals"].as_u64(), s["pump"].as_str(), s["pump_threads"].as_u64(), s["ping_lost"].as_u64()), (Some(3), Some(pump), Some(threads), Some(0)), "{s}");
        let mean = s["ping_mean_ms"].as_f64().unwrap();
        // What the link gives a ping: 40 ms and its 84 bytes serialised at
        // 2 Mbit/s each way (0.336 ms). Never under it (a departure is
        // never early); over it by what a machine busy with other tests
        // adds (5 ms seen beside eight other lanes).
        let link = s["ping_link_rtt_ms"].as_f64().unwrap();
        assert!((link - 40.672).abs() < 1e-6, "{s}");
        assert!(mean >= link - 0.01 && mean < 80.0, "{pump}: ping mean {mean} ms over a link that gives a ping {link} ms: {s}");
        // 3 terminals × 5 pings, each way, at least: the reports of every
        // link came back.
        assert!(s["packets"].as_u64().unwrap() >= 30, "{s}");
        assert!(s["setup_ms_per_terminal"].as_f64().unwrap() > 0.0 && s["pump_cores_per_link"].as_f64().unwrap() > 0.0, "{s}");
        assert_eq!(s["ok"].as_bool(), Some(s["missed"].as_array().unwrap().is_empty()), "{s}");
    }
    assert_eq!(v["steps"].as_array().unwrap().len(), 2);
    assert!(std::fs::read_to_string(&out).unwrap().contains("\"bench\":\"fleet\""));
    let left = leftover_namespaces();
    assert!(left.is_empty(), "namespaces left: {left:?}");
}

/// What `iperf3 -J` wrote to `path`.
fn iperf3_json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn each_passenger_is_held_to_the_per_user_cap() {
    // Three passengers behind a 10 Mbit/s aircraft link that caps each at
    // 1 Mbit/s down (seed 000's Row 44 held each to 100 kbit/s): each
    // download gets the cap, not a third of the link.
    let d = tempdir("cabin");
    let prof = d.join("cabin.toml");
    std::fs::write(&prof, "[link]\nrate = \"10 Mbit/s\"\ndelay = \"20 ms\"\n[down]\nper_user = \"1 Mbit/s\"\n").unwrap();
    let serve = "for p in 5201 5202 5203; do iperf3 -s -1 -p $p & done; wait";
    let out = d.join("p");
    let client = format!("i=0; for a in $AEROLINK_PASSENGERS; do i=$((i+1)); iperf3 -c $AEROLINK_SERVER -p 520$i -B $a -R -t 4 -J > {}$i.json & done; wait", out.display());
    let o = aerolink(&["run", "-q", "--profile", prof.to_str().unwrap(), "--passengers", "3", "--ready-port", "5201,5202,5203", "--server", serve, "--client", &client]);
    let (stdout, err) = text(&o);
    assert!(o.status.success(), "{stdout}{err}");
    for i in 1..=3 {
        let r = iperf3_json(&format!("{}{i}.json", out.display()));
        let bound = r["start"]["connected"][0]["local_host"].as_str().unwrap_or_default().to_string();
        assert_eq!(bound, format!("198.18.0.{}", 10 + i), "passenger {i}'s own address");
        // The cap counts IP bytes: 1 Mbit/s is 0.965 Mbit/s of TCP payload.
        let mbps = r["end"]["sum_received"]["bits_per_second"].as_f64().unwrap() / 1e6;
        assert!((0.8..=1.0).contains(&mbps), "passenger {i}: {mbps:.3} Mbit/s");
    }
    let bad = aerolink(&["run", "-q", "--passengers", "241", "--client", "true"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad).1);
}

#[test]
fn fair_sharing_gives_a_passenger_with_one_connection_as_much_as_one_with_four() {
    // Two passengers download over 4 Mbit/s down, one with four parallel
    // connections: first come, first served gave it 1.6 times the other's
    // rate (2.45 and 1.53 Mbit/s, 2026-11-28); `share = "fair"` gives each
    // half (1.93 and 1.97).
    let d = tempdir("fair");
    let prof = d.join("fair.toml");
    std::fs::write(&prof, "[link]\ndelay = \"20 ms\"\n[down]\nrate = \"4 Mbit/s\"\nqueue = \"100 packets\"\nshare = \"fair\"\n").unwrap();
    let serve = "iperf3 -s -1 -p 5201 & iperf3 -s -1 -p 5202 & wait";
    let out = d.join("p");
    let o = out.display();
    let client = format!("set -- $AEROLINK_PASSENGERS; iperf3 -c $AEROLINK_SERVER -p 5201 -B $1 -R -t 5 -P 4 -J > {o}1.json & iperf3 -c $AEROLINK_SERVER -p 5202 -B $2 -R -t 5 -J > {o}2.json & wait");
    let run = aerolink(&["run", "-q", "--profile", prof.to_str().unwrap(), "--passengers", "2", "--ready-port", "5201,5202", "--server", serve, "--client", &client]);
    let (stdout, err) = text(&run);
    assert!(run.status.success(), "{stdout}{err}");
    let mbps = |i: u32| iperf3_json(&format!("{o}{i}.json"))["end"]["sum_received"]["bits_per_second"].as_f64().unwrap() / 1e6;
    let (four, one) = (mbps(1), mbps(2));
    assert!(four + one > 3.2, "the link is used: {four:.2} + {one:.2} Mbit/s");
    assert!((0.8..=1.25).contains(&(four / one)), "four connections {four:.2} Mbit/s, one {one:.2}");
}

#[test]
fn the_cabin_workload_downloads_once_per_passenger() {
    let serve = format!("{} workload serve", bin());
    let client = format!("{} workload cabin --server $AEROLINK_SERVER --passengers 2 --bytes 200KB", bin());
    // First come, first served lets one short download take most of the
    // link (a CI run saw 2.57 and 1.12 Mbit/s); the fair share is what
    // promises each passenger half, so the run asks for it.
    let d = tempdir("cabin");
    let prof = d.join("fair.toml");
    std::fs::write(&prof, "[link]\ndelay = \"20 ms\"\n[down]\nrate = \"4 Mbit/s\"\nshare = \"fair\"\n").unwrap();
    let o = aerolink(&["run", "-q", "--profile", prof.to_str().unwrap(), "--passengers", "2", "--ready-port", "5201", "--server", &serve, "--client", &client]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let r: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let passengers = r["passengers"].as_array().unwrap();
    let addrs: Vec<&str> = passengers.iter().map(|p| p["address"].as_str().unwrap()).collect();
    assert_eq!(addrs, ["198.18.0.11", "198.18.0.12"]);
    // 400 KB over 4 Mbit/s: at least 0.8 s for the slower one.
    let max = r["completion_ms_max"].as_f64().unwrap();
    assert!(max >= 800.0 && r["completion_ms_median"].as_f64().unwrap() <= max, "{r}");
    // Jain's index is that of the passengers' own goodputs, and near 1
    // when the link shares fairly.
    let g: Vec<f64> = passengers.iter().map(|p| p["goodput_bps"].as_f64().unwrap()).collect();
    let want = (g[0] + g[1]).powi(2) / (2.0 * (g[0] * g[0] + g[1] * g[1]));
    let jain = r["jain"].as_f64().unwrap();
    assert!((jain - want).abs() < 1e-9 && jain > 0.9, "{r}");
    // Sending up instead: the return link, 2 Mbit/s here, carries the
    // 400 KB: at least 1.6 s.
    let up = d.join("up.toml");
    std::fs::write(&up, "[link]\ndelay = \"20 ms\"\n[up]\nrate = \"2 Mbit/s\"\nshare = \"fair\"\n").unwrap();
    let o = aerolink(&["run", "-q", "--profile", up.to_str().unwrap(), "--passengers", "2", "--ready-port", "5201", "--server", &serve, "--client", &format!("{client} --direction up")]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let r: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(r["completion_ms_max"].as_f64().unwrap() >= 1600.0 && r["jain"].as_f64().unwrap() > 0.9, "{r}");
    // Without passengers in the lab: the user's mistake, one line.
    let o = aerolink(&["run", "-q", "--rtt", "10ms", "--ready-port", "5201", "--server", &serve, "--client", &client]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--passengers 2: $AEROLINK_PASSENGERS is not set"), "{err}");
}

#[test]
fn passengers_as_namespaces_are_hosts_of_their_own_that_the_link_still_tells_apart() {
    // Two passengers, each a namespace of its own behind the client (two
    // aircraft on one beam): each its own stack (a sysctl set in one
    // stays that namespace's), the client no longer holds their addresses, and
    // the link's per-user cap still holds each download to 1 Mbit/s of
    // the 10.
    let d = tempdir("paxns");
    let prof = d.join("cap.toml");
    std::fs::write(&prof, "[link]\nrate = \"10 Mbit/s\"\ndelay = \"20 ms\"\n[down]\nper_user = \"1 Mbit/s\"\n").unwrap();
    let serve = format!("{} workload serve", bin());
    let client = format!(
        "set -- $AEROLINK_PASSENGER_NETNS; echo \"netns $*\"; ip netns exec $1 sysctl -qw net.ipv4.ip_default_ttl=33; \
         ip netns exec $2 sysctl -qw net.ipv4.ip_default_ttl=44; \
         echo \"ttl $(ip netns exec $1 sysctl -n net.ipv4.ip_default_ttl) $(ip netns exec $2 sysctl -n net.ipv4.ip_default_ttl) $(sysctl -n net.ipv4.ip_default_ttl)\"; \
         echo \"client holds $(ip -o addr show | grep -c '198[.]18[.]0[.]1[12]/')\"; \
         {} workload cabin --server $AEROLINK_SERVER --passengers 2 --bytes 300KB",
        bin()
    );
    let o = aerolink(&["run", "-q", "--profile", prof.to_str().unwrap(), "--passengers", "2", "--passengers-as", "namespaces", "--ready-port", "5201", "--server", &serve, "--client", &client]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    let names: Vec<&str> = lines[0].strip_prefix("netns ").unwrap().split(' ').collect();
    assert!(names.len() == 2 && names[0].ends_with("-pax-1") && names[1].ends_with("-pax-2"), "{out}");
    assert_eq!(lines[1], "ttl 33 44 64", "{out}");
    assert_eq!(lines[2], "client holds 0", "{out}");
    let r: Value = serde_json::from_str(lines[3..].join("\n").trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let passengers = r["passengers"].as_array().unwrap();
    assert_eq!(passengers.iter().map(|p| p["address"].as_str().unwrap()).collect::<Vec<_>>(), ["198.18.0.11", "198.18.0.12"]);
    for p in passengers {
        // The cap counts IP bytes; 300 KB at under 1 Mbit/s, slow start
        // included.
        let mbps = p["goodput_bps"].as_f64().unwrap() / 1e6;
        assert!((0.6..=1.0).contains(&mbps), "{p}");
    }
    let left: Vec<String> = leftover_namespaces().into_iter().filter(|n| names.contains(&n.as_str())).collect();
    assert!(left.is_empty(), "passenger namespaces left: {left:?}");
    // Where passengers live is a closed set, named at the edge.
    let bad = aerolink(&["run", "-q", "--passengers", "2", "--passengers-as", "netns", "--client", "true"]);
    let (_, err) = text(&bad);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(err.contains("addresses, namespaces"), "{err}");
}
