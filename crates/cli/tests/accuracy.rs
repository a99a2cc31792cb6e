//! Accuracy of the emulator with real traffic through real namespaces:
//! ping for delay, iperf3 TCP for rate, iperf3 UDP for queueing and loss.
//! Tolerances are chosen to hold on a busy 2-core machine; random processes
//! are judged with confidence intervals, never exact counts.

mod common;
use common::*;

use serde_json::Value;

/// `aerolink stats --json` of a packet log.
fn log_stats(log: &std::path::Path) -> Value {
    let o = aerolink(&["stats", "--json", log.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn ping_round_trip_matches_300ms_rtt() {
    let o = aerolink(&["run", "-q", "--rate", "100Mbit/s", "--rtt", "300ms", "--client", "ping -c 40 -i 0.05 $AEROLINK_SERVER"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let s = ping_samples(&out);
    assert_eq!(s.len(), 40, "{out}");
    assert_delay(&s, 300.0);
}

/// The same over the shared loops ([`aerolink_net::pump::shared`]) and
/// the three hops of the gateway chain, each hop a loop's: every hop's
/// delay kept.
#[test]
fn the_shared_pump_keeps_every_hops_delay() {
    let o = aerolink(&["run", "-q", "--pump", "shared", "--rate", "100Mbit/s", "--rtt", "300ms", "--client", "ping -c 40 -i 0.05 $AEROLINK_SERVER"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let s = ping_samples(&out);
    assert_eq!(s.len(), 40, "{out}");
    assert_delay(&s, 300.0);
    // The chain: cabin Wi-Fi, a 60 ms space hop (ping's replies under
    // 100 ms have a decimal), the terrestrial hop.
    let o = aerolink(&["run", "-q", "--pump", "shared", "--topology", "ifc", "--space", "geo-600", "--rtt", "60ms", "--loss", "0", "--client", "ping -c 20 -i 0.05 $AEROLINK_SERVER"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let chain = ping_samples(&out);
    let thread = aerolink(&["run", "-q", "--topology", "ifc", "--space", "geo-600", "--rtt", "60ms", "--loss", "0", "--client", "ping -c 20 -i 0.05 $AEROLINK_SERVER"]);
    let by_thread = ping_samples(&text(&thread).0);
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    assert_eq!((chain.len(), by_thread.len()), (20, 20), "{out}");
    // The same chain by threads: never earlier (0.2 ms for ping's
    // rounding), later by no more than six departures (three hops, both
    // ways) each at most the loop's 250 µs window late.
    let late = median(&chain) - median(&by_thread);
    assert!((-0.2..=1.5).contains(&late), "shared {chain:?}, threads {by_thread:?}");
}

#[test]
fn ipv6_works_end_to_end() {
    let o = aerolink(&["run", "-q", "--rtt", "20ms", "--client", "ping -c 3 -i 0.2 $AEROLINK_SERVER_V6"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let s = ping_samples(&out);
    assert_eq!(s.len(), 3);
    assert!(s.iter().all(|x| *x >= 19.9), "{s:?}");
}

fn iperf_json(path: &std::path::Path) -> Value {
    let t = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value = serde_json::from_str(&t).unwrap_or_else(|e| panic!("{}: {e}: {t}", path.display()));
    assert!(v.get("error").is_none(), "iperf3: {}", v["error"]);
    v
}

#[test]
fn tcp_goodput_fills_a_2mbit_link() {
    let d = tempdir("tcp");
    let j = d.join("tcp.json");
    let client = format!("iperf3 -c $AEROLINK_SERVER -t 12 -C cubic -J > {}", j.display());
    let o = aerolink(&["run", "-q", "--rate", "2Mbit/s", "--rtt", "100ms", "--server", "iperf3 -s -1", "--client", &client]);
    assert!(o.status.success(), "{}", text(&o).1);
    let v = iperf_json(&j);
    let goodput = v["end"]["sum_received"]["bits_per_second"].as_f64().unwrap();
    // 1500-byte packets carry 1448 bytes of TCP payload (timestamps on).
    let available = 2e6 * 1448.0 / 1500.0;
    let ratio = goodput / available;
    assert!((0.92..=1.01).contains(&ratio), "goodput {goodput:.0} bit/s is {:.1}% of the {available:.0} bit/s left after headers", ratio * 100.0);
}

#[test]
fn udp_below_the_rate_sees_no_queue_loss() {
    let d = tempdir("udp");
    let (j, log) = (d.join("udp.json"), d.join("udp.log"));
    let client = format!("iperf3 -c $AEROLINK_SERVER -u -b 1.5M -t 6 -J > {}", j.display());
    let o = aerolink(&["run", "-q", "--rate", "2Mbit/s", "--rtt", "100ms", "--log", log.to_str().unwrap(), "--server", "iperf3 -s -1", "--client", &client]);
    assert!(o.status.success(), "{}", text(&o).1);
    let v = iperf_json(&j);
    let sum = &v["end"]["sum"];
    assert_eq!(sum["lost_packets"].as_u64(), Some(0), "{sum}");
    assert!(sum["packets"].as_u64().unwrap() > 500);
    let st = aerolink(&["stats", "--json", log.to_str().unwrap()]);
    let s: Value = serde_json::from_slice(&st.stdout).unwrap();
    for d in s["directions"].as_array().unwrap() {
        assert!(d["dropped"].get("queue").is_none(), "queue drops: {d}");
    }
}

/// Lost / sent UDP datagrams per direction, from iperf3's receiver report.
fn udp_loss(j: &Value) -> (f64, f64) {
    let sum = &j["end"]["sum"];
    (sum["lost_packets"].as_f64().unwrap(), sum["packets"].as_f64().unwrap())
}

#[test]
fn loss_per_direction_is_inside_its_interval() {
    let d = tempdir("loss");
    // Up: Gilbert–Elliott, p = 2 %, r = 40 % (mean loss 0.02 / 0.42 = 4.76 %,
    // bursts of 2.5 packets); down: Bernoulli 3 %.
    let prof = d.join("lossy.toml");
    std::fs::write(&prof, "name = \"lossy\"\n[up]\nloss = { model = \"gilbert-elliott\", p = \"2%\", r = \"40%\" }\n[down]\nloss = \"3%\"\n").unwrap();
    let (up, down) = (d.join("up.json"), d.join("down.json"));
    // ~1250 datagrams/s for 4 s each way: ≥ 2000 per direction.
    // One iperf3 server per direction: a single server can still be busy
    // closing the first test when the second one starts.
    let client = format!("iperf3 -c $AEROLINK_SERVER -p 5201 -u -b 1M -l 100 -t 4 -J > {} && iperf3 -c $AEROLINK_SERVER -p 5202 -u -b 1M -l 100 -t 4 -R -J > {}", up.display(), down.display());
    // The client starts once both servers listen (it used to start at the
    // first socket, and the second server could still be starting).
    let server = "iperf3 -s -1 -p 5201 & iperf3 -s -1 -p 5202 & wait";
    let o = aerolink(&["run", "-q", "--profile", prof.to_str().unwrap(), "--seed", "5", "--ready-port", "5201,5202", "--server", server, "--client", &client]);
    assert!(o.status.success(), "{}", text(&o).1);
    let (k, n) = udp_loss(&iperf_json(&down));
    assert!(n >= 2000.0, "only {n} datagrams");
    let (lo, hi) = wilson(k, n, Z99);
    assert!(lo <= 0.03 && 0.03 <= hi, "down: {k}/{n} lost, 99% interval [{lo:.4}, {hi:.4}] misses 3%");

    let (k, n) = udp_loss(&iperf_json(&up));
    assert!(n >= 2000.0, "only {n} datagrams");
    // Gilbert–Elliott losses are correlated: the variance of the loss rate
    // grows by (1 + ρ) / (1 − ρ), ρ = 1 − p − r, so the binomial interval is
    // taken over the effective number of independent samples.
    let rho = 1.0 - 0.02 - 0.40;
    let n_eff = n * (1.0 - rho) / (1.0 + rho);
    let (lo, hi) = wilson(k / n * n_eff, n_eff, Z99);
    let expect = 0.02 / 0.42;
    assert!(lo <= expect && expect <= hi, "up: {k}/{n} lost, 99% interval [{lo:.4}, {hi:.4}] misses {expect:.4}");
}

#[test]
fn ldacs_pings_wait_for_grants_and_arq_hides_block_errors() {
    // Real ICMP over the L-DACS 1 model (158 kbit/s): a 84 B echo request
    // is 7 return-link blocks (lost 37 % of the time at FER 6.28e-2, so ARQ
    // resends it), the reply one forward block. The floor is a multi-frame
    // (58.32 ms) for the return-link grant plus both transmissions (≈ 9.6
    // ms) and 2 ms of flight; ARQ leaves ≈ 0.24 % of requests lost.
    let d = tempdir("ldacs-ping");
    let log = d.join("ping.log");
    let o = aerolink(&["run", "-q", "--profile", "ldacs1-158k", "--log", log.to_str().unwrap(), "--client", "ping -c 20 -i 0.3 -W 5 $AEROLINK_SERVER; true"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    // The retransmissions are in the log and its statistics (20 requests
    // all going through on the first try has probability 0.63^20 ≈ 1e-4).
    let up = &log_stats(&log)["directions"][0];
    assert_eq!(up["dir"], "up");
    assert!(up["retransmissions"].as_u64().unwrap() >= 1, "{up}");
    let mut s = ping_samples(&out);
    assert!(s.len() >= 18, "{} of 20 replies: {out}", s.len());
    s.sort_by(f64::total_cmp);
    assert!(s[0] >= 69.0, "fastest reply {} ms, below the grant cycle's floor", s[0]);
    let median = s[s.len() / 2];
    assert!((100.0..1500.0).contains(&median), "median {median} ms: {s:?}");
}

#[test]
fn starlink_pings_show_the_15_second_steps() {
    // 32 s of pings cover the intervals [0, 12), [12, 27) and [27, 42) s.
    let o = aerolink(&["run", "-q", "--profile", "starlink", "--seed", "4", "--client", "ping -c 155 -i 0.2 -D $AEROLINK_SERVER; true"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    // `-D` stamps each reply with the wall clock; seconds since the first.
    let rows: Vec<(f64, f64)> = out
        .lines()
        .filter_map(|l| {
            let ts: f64 = l.strip_prefix('[')?.split(']').next()?.parse().ok()?;
            let rtt: f64 = l.split("time=").nth(1)?.split_whitespace().next()?.parse().ok()?;
            Some((ts, rtt))
        })
        .collect();
    assert!(rows.len() > 140, "{} replies", rows.len());
    let t0 = rows[0].0;
    let median = |lo: f64, hi: f64| {
        let mut v: Vec<f64> = rows.iter().filter(|(t, _)| (lo..hi).contains(&(t - t0))).map(|r| r.1).collect();
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[v.len() / 4], v[3 * v.len() / 4])
    };
    // Away from the boundaries (the first ping comes ~0.1 s after the start).
    let parts = [median(1.0, 11.0), median(13.0, 26.0), median(28.0, 30.5)];
    for (m, q1, q3) in parts {
        assert!((29.0..=62.0).contains(&m), "median RTT {m} ms: {parts:?}");
        assert!(q3 - q1 < 6.0, "spread inside an interval {q1}–{q3} ms: {parts:?}");
    }
    // Seed 4 draws levels that differ by more than the noise.
    let steps = [(parts[0].0 - parts[1].0).abs(), (parts[1].0 - parts[2].0).abs()];
    assert!(steps.iter().any(|s| *s > 4.0), "no step between intervals: {parts:?}");
}

#[test]
fn on_demand_return_links_make_an_idle_terminal_wait() {
    // Seed 001: a request/response after idle costs one satellite round
    // trip with CRA, and a request cycle more with VBDC.
    let dir = tempdir("dama-ping");
    let rtts = |profile: &str| {
        let log = dir.join(format!("{profile}.log"));
        let o = aerolink(&["run", "-q", "--profile", profile, "--log", log.to_str().unwrap(), "--client", "ping -c 5 -i 1.5 -W 5 $AEROLINK_SERVER"]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{profile}: {out}{err}");
        // The log has the return link's super-frames: what the terminal
        // sent fits in what it was allocated.
        let up = log_stats(&log)["directions"][0].clone();
        let sf = &up["superframes"];
        let (alloc, used) = (sf["allocated_bytes"].as_u64().unwrap(), sf["used_bytes"].as_u64().unwrap());
        assert!(used >= 4 * 84 && used <= alloc, "{profile}: {sf}");
        ping_samples(&out)
    };
    let cra = rtts("geo-cra");
    let vbdc = rtts("geo-vbdc");
    assert!(cra.len() >= 4 && vbdc.len() >= 4, "{cra:?} {vbdc:?}");
    // 600 ms of flight plus 84 B at 256 kbit/s.
    assert!(cra.iter().all(|r| (602.0..615.0).contains(r)), "CRA {cra:?}");
    // Up to a super-frame until the request goes, 2 × 300 ms → 23 + 2
    // super-frames of request cycle (662.5 ms), and one to send: 26.5 ms.
    // Lateness only adds: the least CRA ping bounds VBDC's from below, the
    // largest from above (a CRA ping 9 ms late once raised the lower bar).
    let cra_min = cra.iter().cloned().fold(f64::INFINITY, f64::min);
    let cra_max = cra.iter().cloned().fold(0.0, f64::max);
    assert!(vbdc.iter().all(|r| *r > cra_min + 680.0 && *r < cra_max + 725.0), "VBDC {vbdc:?} vs CRA {cra:?}");
}

#[test]
fn offloaded_bursts_cross_the_gateway_chain_without_a_refused_frame() {
    // The gateways are routers: a burst they forward comes with the kernel's
    // linear part as its header length, and a run the pump cuts from it must
    // still be a frame the next TUN device takes. Every refused frame is a
    // packet lost that no link stage chose to lose.
    let o = aerolink(&[
        "run",
        "--json",
        "--topology",
        "ifc",
        "--space",
        "mss",
        "--rate",
        "1Gbit/s",
        "--rtt",
        "20ms",
        "--loss",
        "0",
        "--server",
        "iperf3 -s -1",
        "--client",
        "iperf3 -c $AEROLINK_SERVER -t 2 --bidir -J",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let dirs = v["link"]["directions"].as_array().unwrap();
    assert_eq!(dirs.len(), 6, "three hops, two directions each: {out}");
    for d in dirs {
        assert_eq!(d["refused"], 0, "hop {} {}: {}", d["hop"], d["dir"], d["refused_why"]);
        assert!(d["packets_out"].as_u64().unwrap() > 1000, "hop {} {} carried the flows: {d}", d["hop"], d["dir"]);
    }
    let end = &v["client_stdout"]["end"];
    for k in ["sum_received", "sum_received_bidir_reverse"] {
        assert!(end[k]["bits_per_second"].as_f64().unwrap() > 1e6, "{k}: {}", end[k]);
    }
}

#[test]
fn a_link_mtu_is_the_largest_packet_that_crosses_it() {
    // 1400 B: a 1372-byte ping (+ 8 ICMP + 20 IP) fits, one byte more is
    // refused at the sender with "message too long", as on a real link.
    let client = "ping -c 1 -W 5 -M do -s 1372 $AEROLINK_SERVER && ! ping -c 1 -W 2 -M do -s 1373 $AEROLINK_SERVER";
    let o = aerolink(&["run", "--rtt", "10ms", "--mtu", "1400", "--client", client]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("1 received"), "{out}");
    assert!(format!("{out}{err}").contains("mtu=1400"), "the second ping is refused for the MTU: {out}{err}");
}
