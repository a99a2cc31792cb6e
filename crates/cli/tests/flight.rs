//! The flight measurement loop, end to end on real namespaces: the agent
//! (`probe run`) measures emulated links whose parameters we know, the
//! analysis classifies them, `fit` recovers the parameters within its
//! confidence intervals, and a replay of the fitted profile loses packets
//! the way the original did (two-sample test).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;
use serde_json::Value;

/// Intervals the fit reports are 95 %; the assertions use 99.9 % (z 3.29)
/// so that the several checks of one run together fail by chance about
/// once in a few hundred runs.
const WIDEN: f64 = 3.29 / 1.96;

/// The agent's schedule for these tests: the 2-second probe every 20 ms
/// (to have thousands of probes in 90 s) and one of everything else.
fn agent_flags(out: &Path, secs: u32) -> String {
    format!(
        "{} probe run --target $AEROLINK_SERVER --out {} --duration {secs}s --udp-every 20ms --same-clock --resolver $AEROLINK_SERVER:53 --dns-names a.test,b.test --dns-every 45s --trace-every 45s --ping-every 10s --web-every 120s --web-protocols h2 --page 2x10KB --bulk-every 120s --bulk-bytes 100KB --rate-every 30s",
        bin(),
        out.display()
    )
}

fn start_flight(profile: &str, out: &Path, secs: u32, seed: u32) -> KillOnDrop {
    require_root();
    let server = format!("{} probe serve", bin());
    let child = Command::new(bin())
        .args(["run", "--profile", profile, "--seed", &seed.to_string(), "--server", &server, "--client", &agent_flags(out, secs)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("aerolink run");
    KillOnDrop(child)
}

/// Waits for a flight to end; it must have succeeded. (Its output is a few
/// lines, so reading one pipe after the other cannot block.)
fn finish(mut k: KillOnDrop) {
    use std::io::Read;
    let (mut so, mut se) = (String::new(), String::new());
    k.0.stdout.take().unwrap().read_to_string(&mut so).unwrap();
    k.0.stderr.take().unwrap().read_to_string(&mut se).unwrap();
    let status = k.0.wait().unwrap();
    assert!(status.success(), "{so}{se}");
}

fn json(args: &[&str]) -> Value {
    let o = aerolink(args);
    assert!(o.status.success(), "{args:?}: {:?}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&o).0))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn kinds(log: &Path) -> std::collections::BTreeSet<String> {
    std::fs::read_to_string(log.join("probe.jsonl")).unwrap().lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter_map(|v| v["kind"].as_str().map(String::from)).collect()
}

/// Asserts the fitted loss of one direction holds the true Gilbert chain.
fn assert_gilbert(dir: &str, loss: &Value, p: f64, r: f64) {
    assert_eq!(loss["model"], "gilbert-elliott", "{dir}: {loss}");
    assert!((f(&loss["p"]) - p).abs() <= f(&loss["p_ci"]) * WIDEN, "{dir}: p {loss}");
    assert!((f(&loss["r"]) - r).abs() <= f(&loss["r_ci"]) * WIDEN, "{dir}: r {loss}");
}

#[test]
fn the_flight_loop_closes_measure_analyse_fit_replay() {
    let dir = tempdir("flight");
    let truth = dir.join("truth-mss.toml");
    // seed 000's MSS link with bursty loss (Gilbert: 1 % to enter a burst,
    // 30 % to leave it: 3.2 % of packets, bursts of 3.3), jitter, and one
    // 12 s outage.
    std::fs::write(
        &truth,
        "name = \"truth-mss\"\n[link]\nrate = \"1.89 Mbit/s\"\ndelay = \"380.5 ms\"\njitter = \"normal 5 ms\"\nloss = { model = \"gilbert-elliott\", p = \"1%\", r = \"30%\" }\noutages = [{ start = \"30 s\", duration = \"12 s\", mode = \"drop\" }]\n",
    )
    .unwrap();
    let (mss_log, da2gc_log) = (dir.join("mss-log"), dir.join("da2gc-log"));
    let a = start_flight(truth.to_str().unwrap(), &mss_log, 90, 1);
    let b = start_flight("da2gc", &da2gc_log, 90, 1);
    finish(a);
    finish(b);

    // Every kind of measurement was made and logged.
    for log in [&mss_log, &da2gc_log] {
        let k = kinds(log);
        for want in ["start", "udp", "ping", "trace", "dns", "web", "bulk", "rate", "address", "stop"] {
            assert!(k.contains(want), "{}: no {want} record in {k:?}", log.display());
        }
        let har = std::fs::read_dir(log.join("har")).unwrap().next().expect("a HAR file").unwrap().path();
        let har: Value = serde_json::from_slice(&std::fs::read(har).unwrap()).unwrap();
        assert_eq!(har["log"]["version"], "1.2");
        assert_eq!(har["log"]["entries"].as_array().unwrap().len(), 3, "the page and its two objects");
    }

    // The analysis names the technology and finds the outage.
    let html = dir.join("mss.html");
    let am = json(&["analyze", mss_log.to_str().unwrap(), "-o", html.to_str().unwrap(), "--json"]);
    let ad = json(&["analyze", da2gc_log.to_str().unwrap(), "-o", dir.join("da2gc.html").to_str().unwrap(), "--json"]);
    let (pm, pd) = (&am["phases"][0], &ad["phases"][0]);
    assert_eq!(pm["technology"], "GEO satellite", "{pm}");
    assert_eq!(pd["technology"], "air-to-ground", "{pd}");
    let outages = pm["outages"].as_array().unwrap();
    assert_eq!(outages.len(), 1, "{outages:?}");
    // The outage began 30 s after the link came up; the agent started a
    // moment after that.
    assert!((28.0..31.0).contains(&f(&outages[0]["start_s"])) && (11.5..13.0).contains(&f(&outages[0]["duration_s"])), "{outages:?}");
    assert!(pd["outages"].as_array().unwrap().is_empty(), "{pd}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("GEO satellite"));

    // The fit recovers each direction's delay, loss chain and rate.
    let fitted = dir.join("fitted-mss.toml");
    let fm = json(&["fit", mss_log.to_str().unwrap(), "-o", fitted.to_str().unwrap(), "--json"]);
    let fd = json(&["fit", da2gc_log.to_str().unwrap(), "-o", dir.join("fitted-da2gc.toml").to_str().unwrap(), "--json"]);
    assert_eq!(fm["one_way_delays"], true);
    for d in ["up", "down"] {
        let (m, g) = (&fm[d], &fd[d]);
        // Delay: the median's interval, plus 0.3 ms for the emulator's own
        // departure-time error.
        assert!((f(&m["delay_ms"]) - 380.5).abs() <= f(&m["delay_ci_ms"]) * WIDEN + 0.3, "{d}: {m}");
        assert!((f(&g["delay_ms"]) - 131.0).abs() <= f(&g["delay_ci_ms"]) * WIDEN + 0.3, "{d}: {g}");
        assert!(m["jitter_file"].is_string(), "5 ms of jitter is fitted: {m}");
        assert_gilbert(d, &m["loss"], 0.01, 0.30);
        // da2gc's loss is random (1.664 % each way): its mean is in the
        // interval, whichever model the runs suggested.
        let (n, mean) = (f(&g["loss"]["packets"]), f(&g["loss"]["mean"]));
        assert!((mean - 0.01664).abs() <= 3.29 * (0.01664 * (1.0 - 0.01664) / n).sqrt(), "{d}: {g}");
        // Rate from packet trains (three per direction): within 10 %.
        assert_eq!(m["rate_from"], "packet trains", "{m}");
        assert!((f(&m["rate_bps"]) / 1.89e6 - 1.0).abs() < 0.10, "{d}: {m}");
        assert!((f(&g["rate_bps"]) / 0.468e6 - 1.0).abs() < 0.10, "{d}: {g}");
    }
    assert_eq!(fm["outages"].as_array().unwrap().len(), 1);

    // Replay the fitted profile with the same schedule: the loss per 2 s
    // window (45 windows) is distributed as in the original.
    let replay_log = dir.join("replay-log");
    finish(start_flight(fitted.to_str().unwrap(), &replay_log, 90, 2));
    let cmp = json(&["analyze", mss_log.to_str().unwrap(), "-o", dir.join("cmp.html").to_str().unwrap(), "--json", "--loss-window", "2s", "--against", replay_log.to_str().unwrap()]);
    let ks = &cmp["against"]["loss_windows"];
    assert!(f(&ks["ours"]) >= 40.0 && f(&ks["theirs"]) >= 40.0, "{ks}");
    assert!(f(&ks["p"]) > 0.001, "the replay's loss per window differs from the flight's: {ks}");
    assert!(leftover_namespaces().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A caching resolver aboard (Debian's dnsmasq in the aircraft gateway of
/// the `ifc` chain, forwarding to the reflector's DNS server on the
/// ground) is found: second lookups come back faster than any round trip
/// over the space link could. A forward proxy aboard (Debian's tinyproxy)
/// is found by the `Via` it adds. Asking the ground directly, neither is
/// found. Traceroute shows the path leave the aircraft after the gateway.
#[test]
fn a_dns_cache_a_proxy_aboard_and_where_the_path_leaves_the_aircraft_are_found() {
    require_root();
    let dir = tempdir("flight-dns");
    let lab = "fldns";
    let up = aerolink(&["up", lab, "--topology", "ifc", "--space", "mss"]);
    assert!(up.status.success(), "{:?}", text(&up));
    struct Down(&'static str);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = Command::new(bin()).args(["down", self.0]).output();
        }
    }
    let _down = Down(lab);
    let spawn = |host: &str, cmd: &[&str]| KillOnDrop(Command::new(bin()).args(["exec", lab, host, "--"]).args(cmd).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    let _server = spawn("server", &[bin(), "probe", "serve", "--dns-answer", "198.18.2.2"]);
    let _cache = spawn("airgw", &["dnsmasq", "-k", "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--server=198.18.2.2", "--listen-address=198.18.0.2", "--bind-interfaces", "--cache-size=1000", "--user=root", "--pid-file"]);
    let conf = dir.join("tinyproxy.conf");
    std::fs::write(&conf, "Port 8888\nListen 198.18.0.2\nTimeout 60\nAllow 198.18.0.0/15\nViaProxyName \"aircraft-proxy\"\nLogLevel Critical\n").unwrap();
    let _proxy = spawn("airgw", &["tinyproxy", "-d", "-c", conf.to_str().unwrap()]);
    let agent = |resolver: &str, out: &Path, proxy: bool| {
        let mut args = vec!["exec", lab, "client", "--", bin(), "probe", "run", "--target", "198.18.2.2", "--resolver", resolver, "--out", out.to_str().unwrap()];
        args.extend(["--duration", "25s", "--udp-every", "200ms", "--dns-every", "10s", "--dns-names", "a.test,b.test,c.test", "--trace-every", "10s", "--ping-every", "0", "--bulk-every", "0", "--rate-every", "0"]);
        args.extend(["--web-every", "12s", "--web-protocols", "h2", "--page", "1x1KB"]);
        if proxy {
            args.extend(["--http-proxy", "198.18.0.2:8888"]);
        }
        KillOnDrop(Command::new(bin()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap())
    };
    let (cached, direct) = (dir.join("cached"), dir.join("direct"));
    // Both agents at once, one asking the gateway's cache, one the ground.
    let a = agent("198.18.0.2:53", &cached, true);
    let b = agent("198.18.2.2:53", &direct, false);
    finish(a);
    finish(b);
    let analyze = |log: &Path| json(&["analyze", log.to_str().unwrap(), "-o", dir.join("a.html").to_str().unwrap(), "--json"]);
    let (c, d) = (analyze(&cached), analyze(&direct));
    let (c, d) = (&c["phases"][0], &d["phases"][0]);
    assert_eq!(c["dns"]["cache_aboard"], true, "{}", c["dns"]);
    // Most second lookups hit the cache (one whose first lookup was lost
    // on the 3 % lossy link is a miss).
    assert!(f(&c["dns"]["second_below_min_rtt"]) >= 0.75, "{}", c["dns"]);
    assert!(f(&c["dns"]["lookups"]) >= 12.0, "{}", c["dns"]);
    assert_eq!(d["dns"]["cache_aboard"], false, "{}", d["dns"]);
    assert_eq!(f(&d["dns"]["second_below_min_rtt"]), 0.0, "{}", d["dns"]);
    // The proxy's Via on the plain-HTTP loads through it; none direct.
    let via = c["proxies"]["via"].as_array().unwrap_or_else(|| panic!("no Via seen: {}", c["proxies"]));
    assert!(via.iter().any(|v| v.as_str().unwrap().contains("aircraft-proxy")), "{via:?}");
    assert!(d["proxies"].as_object().unwrap().is_empty(), "{}", d["proxies"]);
    assert!(f(&c["plt_ms"]["http"]["n"]) >= 2.0 && f(&d["plt_ms"]["h2"]["n"]) >= 2.0, "{c} {d}");
    // The first hop is the aircraft gateway; the second is across space.
    let path = &c["path"];
    assert_eq!(path["hops"][0]["addr"], "198.18.0.2", "{path}");
    assert_eq!(path["exit_ttl"], 2, "{path}");
    assert_eq!(path["hops"].as_array().unwrap().last().unwrap()["addr"], "198.18.2.2", "{path}");
    drop(_down);
    assert!(leftover_namespaces().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
