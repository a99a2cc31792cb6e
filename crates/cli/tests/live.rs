//! The live view end to end: `aerolink run --live` over a real emulated
//! link with a DVB-RCS2 return link, its page opened in Debian's Chromium
//! (headless, installed by `make test`), which must draw the link's
//! figures, see them change while pings cross it, and show the run's end
//! when aerolink stops. The page is served on loopback; Chromium resolves
//! no name and fetches nothing else.

mod common;
use common::*;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use chromiumoxide::browser::{Browser, BrowserConfig};
use futures::StreamExt;

fn chromium() -> std::path::PathBuf {
    let p = std::env::var_os("AEROLINK_CHROMIUM").map(Into::into).unwrap_or_else(|| std::path::PathBuf::from("/usr/bin/chromium"));
    assert!(p.exists(), "this test needs Chromium at {}: apt-get install chromium (make test does)", p.display());
    p
}

/// What the page shows (nothing until it has loaded): its status line, the sample it drew last, and each
/// direction's current figures as drawn.
async fn shown(tab: &chromiumoxide::Page) -> serde_json::Value {
    let js = r#"JSON.stringify({
        status: document.getElementById('status')?.textContent ?? '',
        seq: Number(document.getElementById('status')?.dataset.seq || 0),
        dirs: [...document.querySelectorAll('.dir')].map(d => ({ key: d.dataset.key, now: d.querySelector('.now').textContent,
            out: Number(d.querySelector('.now').dataset.out), lines: d.querySelectorAll('polyline').length }))
    })"#;
    let text: String = tab.evaluate(js).await.expect("the page answers").into_value().expect("a string");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn the_live_page_draws_the_link_while_it_runs_and_closes_with_it() {
    let exe = chromium();
    // Pings every 250 ms for 8 s over a GEO link whose return link asks
    // for capacity (RBDC): rates, delays and allocations all move.
    let mut run = aerolink_cmd()
        .args(["run", "--profile", "geo-rbdc", "--live", "127.0.0.1:0", "--client", "ping -q -c 32 -i 0.25 -s 400 $AEROLINK_SERVER"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("aerolink starts");
    let mut err = BufReader::new(run.stderr.take().expect("stderr"));
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(err.read_line(&mut line).expect("stderr") > 0, "aerolink ended without a live view");
        if let Some(u) = line.trim().strip_prefix("aerolink: live view at ") {
            break u.to_string();
        }
    };
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let profile = tempdir("live-chromium");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let (during, later, end) = rt.block_on(async {
        let cfg = BrowserConfig::builder()
            .chrome_executable(&exe)
            .no_sandbox()
            .user_data_dir(&*profile)
            .args(["disable-gpu", "disable-background-networking", "disable-component-update", "no-first-run", "host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"])
            .launch_timeout(Duration::from_secs(60))
            .build()
            .expect("a browser config");
        let (mut browser, mut handler) = Browser::launch(cfg).await.expect("Chromium starts");
        let pump = tokio::spawn(async move { while handler.next().await.is_some() {} });
        let tab = browser.new_page(url.as_str()).await.expect("the page opens");
        let deadline = Instant::now() + Duration::from_secs(60);
        // Drawn from at least two samples, with traffic in them.
        let during = loop {
            let s = shown(&tab).await;
            if s["seq"].as_u64() >= Some(3) && s["dirs"].as_array().is_some_and(|d| d.iter().any(|x| x["out"].as_f64() > Some(0.0))) {
                break s;
            }
            assert!(Instant::now() < deadline, "the page drew no traffic: {s}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        // Two samples later the figures differ.
        let later = loop {
            let s = shown(&tab).await;
            if s["seq"].as_u64() >= during["seq"].as_u64().map(|n| n + 2) {
                break s;
            }
            assert!(Instant::now() < deadline, "the page stopped updating at {during}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        // And once the pings are done, the run's end.
        let end = loop {
            let s = shown(&tab).await;
            if s["status"].as_str().is_some_and(|t| t.starts_with("run ended")) {
                break s;
            }
            assert!(Instant::now() < deadline, "the page never showed the end: {s}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let _ = browser.close().await;
        let _ = browser.wait().await;
        pump.abort();
        (during, later, end)
    });
    let status = run.wait().expect("aerolink ends");
    let said = rest.join().expect("stderr read");
    assert!(status.success(), "aerolink run failed: {said}");
    // Both directions of the one hop, each with its three charts.
    let dirs = during["dirs"].as_array().expect("dirs");
    let keys: Vec<&str> = dirs.iter().filter_map(|d| d["key"].as_str()).collect();
    assert!(keys.contains(&"hop 0 up") && keys.contains(&"hop 0 down"), "{keys:?}");
    assert!(dirs.iter().all(|d| d["lines"].as_u64() >= Some(6)), "{during}");
    // The return link's allocations are shown (RBDC).
    let up = dirs.iter().find(|d| d["key"] == "hop 0 up").expect("up");
    assert!(up["now"].as_str().is_some_and(|t| t.contains("allocated")), "{up}");
    assert!(up["now"].as_str().is_some_and(|t| t.contains("delay")), "{up}");
    assert_ne!(during["dirs"], later["dirs"], "the figures did not change while pings crossed");
    assert!(end["seq"].as_u64() > later["seq"].as_u64(), "{end}");
    assert!(leftover_namespaces().is_empty(), "namespaces left: {:?}", leftover_namespaces());
}
