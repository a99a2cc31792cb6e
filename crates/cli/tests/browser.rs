//! The browser workload end to end: Debian's Chromium (installed by `make
//! test`), headless, loading multi-origin corpus pages over a real emulated
//! link with h1, h2 and h3, through every PEP mode, and a page recorded by
//! the browser replayed from its archive alone. Nothing is mocked: without
//! Chromium these tests fail and say so.

mod common;
use common::*;

use serde_json::Value;

fn chromium_installed() {
    assert!(
        ["/usr/lib/chromium/chromium", "/usr/bin/chromium"].iter().any(|p| std::path::Path::new(p).exists()) || std::env::var_os("AEROLINK_CHROMIUM").is_some(),
        "these tests need Chromium: apt-get install chromium (make test does)"
    );
}

/// `aerolink bench browser …` once; the client's result.
fn browser(args: &[&str]) -> Value {
    chromium_installed();
    let mut a = vec!["bench", "browser"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--json", "--timeout", "120s"]);
    let o = aerolink(&a);
    let (out, err) = text(&o);
    assert!(o.status.success(), "aerolink {a:?} failed: {err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v[0]["outcome"]["ok"], true, "{}", v[0]);
    v[0]["outcome"]["result"].clone()
}

fn har_validator() -> aerolink_harcheck::Schema {
    aerolink_harcheck::Schema::new(include_str!("data/har-1.2.schema.json")).expect("the HAR 1.2 schema compiles")
}

/// Distinct colours in a PNG (a blank page has one).
fn colours(png_file: &std::path::Path) -> usize {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png_file).unwrap()));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let mut set = std::collections::BTreeSet::new();
    for p in buf[..info.buffer_size()].chunks(px) {
        set.insert(p[..3.min(px)].to_vec());
    }
    set.len()
}

#[test]
fn every_request_goes_over_the_protocol_asked_and_the_har_is_har_1_2() {
    let dir = tempdir("browser");
    let validator = har_validator();
    // The news page: 44 responses from 15 origins (the browser may add its
    // favicon request).
    for (proto, wire, per_origin) in [("h1", "http/1.1", 6), ("h2", "h2", 2), ("h3", "h3", 2)] {
        let (har, shot, netlog) = (dir.join(format!("{proto}.har")), dir.join(format!("{proto}.png")), dir.join(format!("{proto}.netlog.json")));
        // The h2 server offers push; Chromium refuses it (since 106) and
        // loads every object by request.
        let push = if proto == "h2" { "100" } else { "0" };
        let r = browser(&[
            "--rtt",
            "40ms",
            "--rate",
            "20Mbit/s",
            "--page",
            "news",
            "--protocol",
            proto,
            "--push",
            push,
            "--har",
            har.to_str().unwrap(),
            "--screenshot",
            shot.to_str().unwrap(),
            "--net-log",
            netlog.to_str().unwrap(),
        ]);
        let requests = r["requests"].as_u64().unwrap();
        assert!((44..=46).contains(&requests), "{proto}: {r}");
        assert_eq!(r["failed_requests"], 0, "{proto}: {r}");
        let protocols = r["protocols"].as_object().unwrap();
        assert_eq!(protocols.len(), 1, "{proto}: every request over one protocol: {r}");
        assert_eq!(protocols[wire].as_u64(), Some(requests), "{proto}: {r}");
        assert_eq!(r["origins"], 15, "{proto}: {r}");
        for (origin, n) in r["connections_per_origin"].as_object().unwrap() {
            let n = n.as_u64().unwrap();
            assert!((1..=per_origin).contains(&n), "{proto}: {origin} over {n} connections: {r}");
        }
        // Timings in the order a page load has them; nothing before a round trip.
        let f = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{proto}: no {k}: {r}"));
        assert!(f("fcp_ms") >= 80.0 && f("fcp_ms") <= f("onload_ms") && f("dcl_ms") <= f("onload_ms") && f("onload_ms") <= f("last_byte_ms") + 50.0, "{proto}: {r}");
        assert!(f("lcp_ms") >= f("fcp_ms"), "{proto}: {r}");
        let h: Value = serde_json::from_slice(&std::fs::read(&har).unwrap()).unwrap();
        // Every object of the page was asked for (named if not, with the
        // load's timings, so a miss says which object and when).
        let asked: std::collections::BTreeSet<&str> = h["log"]["entries"].as_array().unwrap().iter().filter_map(|e| e["request"]["url"].as_str()).collect();
        let page = aerolink_work::corpus::page("news").unwrap();
        let missing: Vec<&str> = page.entries.iter().map(|e| e.url.as_str()).filter(|u| !asked.contains(u)).collect();
        assert!(missing.is_empty(), "{proto}: never requested: {missing:?}; {r}");
        assert!(r["bytes"].as_u64().unwrap() > 950_000, "{proto}: {r}");

        let errors = validator.errors(&h, 5);
        assert!(errors.is_empty(), "{proto}: the HAR is not HAR 1.2: {errors:?}");
        let entries = h["log"]["entries"].as_array().unwrap();
        assert_eq!(entries.len() as u64, requests, "{proto}: one entry per request");
        let version = if proto == "h1" { "HTTP/1.1" } else { proto };
        assert!(entries.iter().all(|e| e["response"]["httpVersion"] == version), "{proto}: every entry over {version}");
        assert!(colours(&shot) > 10, "{proto}: the screenshot is blank");
        // Chromium's net log, complete (it closes the JSON when it exits):
        // QUIC sessions over h3 only (the session pool is asked either way).
        let nl: Value = serde_json::from_slice(&std::fs::read(&netlog).unwrap()).unwrap_or_else(|e| panic!("{proto}: net log: {e}"));
        let types: std::collections::HashMap<u64, String> = nl["constants"]["logEventTypes"].as_object().unwrap().iter().map(|(k, v)| (v.as_u64().unwrap(), k.clone())).collect();
        let quic =
            nl["events"].as_array().unwrap().iter().filter(|e| types.get(&e["type"].as_u64().unwrap()).is_some_and(|t| t.starts_with("QUIC_SESSION_") && !t.starts_with("QUIC_SESSION_POOL"))).count();
        assert!(nl["events"].as_array().unwrap().len() > 100, "{proto}: a short net log");
        assert_eq!(quic > 0, proto == "h3", "{proto}: {quic} QUIC session events");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(leftover_namespaces().is_empty());
}

/// `http1`: the page over plain HTTP (port 80), every request HTTP/1.1,
/// without the TLS handshake's round trip that `h1` spends on each
/// connection. The handshakes are read from the HAR; the page times only
/// have to keep their order, since Chromium's own pace on a loaded machine
/// moves a single load by more than a round trip.
#[test]
fn plain_http1_loads_the_page_without_tls() {
    let dir = tempdir("plain-http1");
    let load = |p: &str| {
        let har = dir.join(format!("{p}.har"));
        let r = browser(&["--rtt", "200ms", "--rate", "50Mbit/s", "--page", "20x10KB", "--protocol", p, "--har", har.to_str().unwrap()]);
        let h: Value = serde_json::from_slice(&std::fs::read(&har).unwrap()).unwrap();
        (r, h["log"]["entries"].as_array().unwrap().clone())
    };
    let ((plain, plain_har), (tls, tls_har)) = (load("http1"), load("h1"));
    assert!(plain["url"].as_str().unwrap().starts_with("http://aerolink.test/"), "{plain}");
    assert_eq!(plain["failed_requests"], 0, "{plain}");
    assert_eq!(plain["protocols"].as_object().unwrap().keys().collect::<Vec<_>>(), vec!["http/1.1"], "{plain}");
    let timing = |e: &Value, k: &str| e["timings"][k].as_f64().unwrap();
    // The document's connection (opened when the load starts; Chromium
    // opens later ones before it names their request, so their spans are
    // shorter): a TCP handshake (a round trip), over TLS a TLS 1.3
    // handshake on top (one more). Plain HTTP has no handshake anywhere.
    let (pd, td) = (&plain_har[0]["timings"], &tls_har[0]["timings"]);
    assert!(pd["ssl"].as_f64().unwrap() < 0.0 && pd["connect"].as_f64().unwrap() >= 180.0, "plain HTTP's document: {pd}");
    assert!(td["ssl"].as_f64().unwrap() >= 180.0 && td["connect"].as_f64().unwrap() >= 360.0, "TLS's document: {td}");
    assert!(plain_har.iter().all(|e| timing(e, "ssl") < 0.0), "a TLS handshake over plain HTTP: {plain_har:?}");
    assert!(tls_har.iter().filter(|e| timing(e, "connect") >= 0.0).all(|e| timing(e, "ssl") > 0.0), "a connection without TLS over h1: {tls_har:?}");
    let plt = |r: &Value| r["plt_ms"].as_f64().unwrap();
    assert!(plt(&tls) > plt(&plain), "plain {} ms, TLS {} ms", plt(&plain), plt(&tls));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_recorded_page_replays_from_its_archive_alone_over_h3() {
    chromium_installed();
    let dir = tempdir("record");
    let archive = dir.join("blog.json");
    // Record the corpus blog page from the workload server, in a lab.
    let record = format!("{} record https://www.blog.test/ -o {} --resolve $AEROLINK_SERVER", bin(), archive.display());
    let serve = format!("{} workload serve", bin());
    let o = aerolink(&["run", "--rtt", "10ms", "--server", &serve, "--client", &record]);
    assert!(o.status.success(), "record: {}", text(&o).1);
    let a: Value = serde_json::from_slice(&std::fs::read(&archive).unwrap()).unwrap();
    let recorded = a["entries"].as_array().unwrap().iter().filter(|e| e["status"] == 200).count();
    assert!(recorded >= 16, "{recorded} responses recorded");
    assert!(a["source"].as_str().unwrap().contains("Chrome/"), "the archive says which browser recorded it");

    // Replay it alone (no corpus) and load it over HTTP/3.
    let replay = format!("{} replay serve --no-corpus {}", bin(), archive.display());
    let load = format!("{} workload browser --server $AEROLINK_SERVER --page https://www.blog.test/ --protocol h3 --timeout 60s", bin());
    let o = aerolink(&["run", "--rtt", "10ms", "--server", &replay, "--client", &load]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "replay: {err}");
    let r: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(r["failed_requests"], 0, "{r}");
    assert!(r["requests"].as_u64().unwrap() as usize >= recorded, "{r}");
    assert_eq!(r["protocols"].as_object().unwrap().keys().collect::<Vec<_>>(), vec!["h3"], "{r}");
    assert_eq!(r["origins"], 4, "{r}");

    // The same archive over plain HTTP (port 80).
    let load = format!("{} workload browser --server $AEROLINK_SERVER --page http://www.blog.test/ --protocol h1 --timeout 60s", bin());
    let o = aerolink(&["run", "--rtt", "10ms", "--server", &replay, "--client", &load]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "replay over plain HTTP: {err}");
    let r: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(r["protocols"].as_object().unwrap().keys().collect::<Vec<_>>(), vec!["http/1.1"], "{r}");
    assert!(r["requests"].as_u64().unwrap() as usize >= recorded, "{r}");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(leftover_namespaces().is_empty());
}

#[test]
fn the_browser_loads_through_every_pep_mode() {
    for pep in ["split-tcp", "quic-tunnel", "vpn"] {
        let r = browser(&["--topology", "ifc", "--space", "starlink", "--pep", pep, "--page", "blog", "--protocol", "h2"]);
        assert_eq!(r["failed_requests"], 0, "{pep}: {r}");
        assert!(r["requests"].as_u64().unwrap() >= 16, "{pep}: {r}");
        assert_eq!(r["protocols"].as_object().unwrap().keys().collect::<Vec<_>>(), vec!["h2"], "{pep}: {r}");
    }
    assert!(leftover_namespaces().is_empty());
}

#[test]
fn a_page_that_is_not_there_is_the_users_mistake() {
    let o = aerolink(&["bench", "browser", "--page", "nosuch", "--rtt", "10ms"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("nosuch") && err.contains("median") && err.contains("10x100KB"), "{err}");
    let o = aerolink(&["replay", "serve", "/nonexistent/archive.json"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/archive.json"), "{err}");
}

/// Chromium processes (their profile directory names them), and profile
/// directories or runs' temporary directories in the temporary directory.
fn browser_leftovers() -> (usize, Vec<String>) {
    let o = std::process::Command::new("pgrep").args(["-f", "user-data-dir=.*aerolink-chromium-"]).output().unwrap();
    let procs = String::from_utf8_lossy(&o.stdout).lines().count();
    let dirs = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("aerolink-chromium-") || (n.starts_with("aerolink-") && n.ends_with("-tmp")))
        .collect();
    (procs, dirs)
}

#[test]
fn interrupting_a_load_leaves_no_browser_behind() {
    chromium_installed();
    require_root();
    // A load that takes minutes: the median page at 128 kbit/s.
    let client = format!("{} workload browser --server $AEROLINK_SERVER --page median", bin());
    let serve = format!("{} workload serve", bin());
    let mut child = std::process::Command::new(bin())
        .args(["run", "-q", "--rtt", "520ms", "--rate", "128kbit/s", "--server", &serve, "--client", &client])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    // Wait until Chromium has written its profile (it is loading the page).
    let profile_written = || {
        let runs = std::fs::read_dir(std::env::temp_dir()).unwrap().filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with("-tmp"));
        runs.filter_map(|r| std::fs::read_dir(r.path()).ok()).flatten().filter_map(|e| e.ok()).any(|e| e.path().join("Default").exists())
    };
    while browser_leftovers().0 == 0 || !profile_written() {
        assert!(std::time::Instant::now() < deadline, "Chromium never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(128 + libc::SIGTERM));
    // The profile lives in the run's TMPDIR, which the lab removes with the
    // namespaces, whoever wins the race between Chromium's exit and SIGKILL.
    assert_eq!(browser_leftovers(), (0, vec![]), "Chromium processes or profiles left behind");
    assert!(leftover_namespaces().is_empty(), "left: {:?}", leftover_namespaces());
}

/// With `resolver = "aboard"` a page load resolves its names by DNS, each
/// origin a lookup through dnsmasq in the aircraft gateway to the ground's
/// name server (which answers with the server's address): the lookups
/// cross the space link (1 s here), and the load is slower than one whose
/// names map to the server without DNS.
#[test]
fn a_page_load_resolves_its_names_through_the_resolver_aboard() {
    chromium_installed();
    let (_d, runs) = experiment_runs(
        "browser-dns",
        "name = \"bdns\"\nseed = 2\nrepetitions = 1\ntopology = \"ifc\"\nprofiles = [\"geo\"]\n[[variant]]\nname = \"geo\"\nbase = \"satcom-100\"\nrtt = \"1000ms\"\n[[workload]]\ntype = \"browser\"\nprotocols = [\"h2\"]\npages = [\"blog\"]\nresolvers = [\"aboard\"]\n[[workload]]\ntype = \"browser\"\nprotocols = [\"h2\"]\npages = [\"blog\"]\n",
    );
    let m = |dns: bool| runs.iter().find(|r| r["params"].as_str().unwrap().contains("dns:") == dns).map(|r| r["metrics"].clone()).unwrap_or_else(|| panic!("{runs:?}"));
    let (resolved, mapped) = (m(true), m(false));
    // blog: four origins, each looked up once at least; a miss crosses
    // the 1 s link.
    assert!(resolved["dns_lookups"].as_f64().unwrap() >= 4.0, "{resolved}");
    assert!(resolved["dns_lookup_ms_mean"].as_f64().unwrap() >= 500.0, "{resolved}");
    assert!(mapped.get("dns_lookups").is_none(), "{mapped}");
    // Slower: the first origin's lookup (a miss, ≥ 1 s) precedes its
    // connection. One load a side differs by ±150 ms beside the other
    // lanes: over a 300 ms link the lookup's cost hid in that twice (CI of
    // 2026-11-29: 144 ms slower, then 56 ms faster, with lookups of
    // 250 ms), so the link is 1 s and the test asks "slower"; the
    // lookups' own time is checked above.
    assert!(resolved["plt_ms"].as_f64().unwrap() > mapped["plt_ms"].as_f64().unwrap(), "{resolved} vs {mapped}");
    assert!(leftover_namespaces().is_empty());
    assert!(orphan_processes("^dnsmasq .*--server=198.18").is_empty());
}

/// With `proxy = "aboard"` every request goes through squid in the
/// aircraft gateway: a cold load's objects are MISSes fetched across the
/// space link; after another device loaded the page (`warm`: a browser of
/// its own first) they are HITs answered across the cabin, far faster.
/// With `proxy = "transparent"` the browser is told of no proxy: its
/// objects are HITs only because the gateway redirects the cabin's port
/// 80 to the cache. The cache is stopped with its run.
#[test]
fn the_cache_aboard_answers_a_second_devices_load() {
    chromium_installed();
    let (_d, runs) = experiment_runs(
        "browser-cache",
        "name = \"bcache\"\nseed = 2\nrepetitions = 1\ntopology = \"ifc\"\nprofiles = [\"geo\"]\n[[variant]]\nname = \"geo\"\nbase = \"satcom-100\"\nrtt = \"300ms\"\n[[workload]]\ntype = \"browser\"\nprotocols = [\"http1\"]\npages = [\"8x20KB\"]\nproxy = \"aboard\"\n[[workload]]\ntype = \"browser\"\nprotocols = [\"http1\"]\npages = [\"8x20KB\"]\nproxy = \"aboard\"\nwarm = true\n[[workload]]\ntype = \"browser\"\nprotocols = [\"http1\"]\npages = [\"8x20KB\"]\nproxy = \"transparent\"\nwarm = true\n",
    );
    let of = |label: &str| runs.iter().find(|r| r["params"].as_str().unwrap().ends_with(label)).map(|r| r["metrics"].clone()).unwrap_or_else(|| panic!("{label}: {runs:?}"));
    let m = |warm: bool| of(if warm { "warm cache:aboard" } else { "8x20KB cache:aboard" });
    let (cold, warm) = (m(false), m(true));
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
    // The page and its eight objects: every one a MISS cold, a HIT warm.
    assert!(cold.get("cache_hits").is_none() && f(&cold, "cache_miss_ms_mean") >= 300.0, "{cold}");
    assert!(warm.get("cache_unmarked").is_none() && cold.get("cache_unmarked").is_none(), "every object a HIT or a MISS: {warm} {cold}");
    assert_eq!(f(&warm, "cache_hits"), 9.0, "{warm}");
    assert!(warm.get("cache_miss_ms_mean").is_none(), "{warm}");
    assert!(f(&warm, "cache_object_ms_mean") * 3.0 < f(&cold, "cache_object_ms_mean"), "HITs {warm} MISSes {cold}");
    let inpath = of("warm cache:transparent");
    assert_eq!(f(&inpath, "cache_hits"), 9.0, "in the path, unnamed: {inpath}");
    assert!(f(&inpath, "cache_object_ms_mean") * 3.0 < f(&cold, "cache_object_ms_mean"), "HITs {inpath} MISSes {cold}");
    assert!(leftover_namespaces().is_empty());
    assert!(orphan_processes("^squid -N").is_empty(), "the cache aboard is stopped with its run");
}
