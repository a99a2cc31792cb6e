//! Chromium driven over the DevTools protocol (chromiumoxide): a load from
//! a fresh profile to the settled page, its timings, network events, HAR
//! and screenshot (see the parent module for what a load reports).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::network::{EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, EventResponseReceived, GetResponseBodyParams};
use chromiumoxide::cdp::browser_protocol::page::{EventLoadEventFired, NavigateParams};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use super::{chromium_path, flags, BrowserResult, LoadOpts};
use crate::archive::{Archive, Entry, FORMAT};
use crate::error::{Result, WorkError};
use crate::har::{self, NetEvent};

fn chrome_err(what: &str, e: impl std::fmt::Display) -> WorkError {
    WorkError::Browser(format!("{what}: {e}"))
}

/// The page's own timings, once onload has run: navigation timing, paint
/// timing, and the last largest-contentful-paint candidate.
const TIMINGS_JS: &str = r#"new Promise(function (resolve) {
  var lcp = null;
  try { new PerformanceObserver(function (l) { var e = l.getEntries(); if (e.length) lcp = e[e.length - 1].startTime; }).observe({type: 'largest-contentful-paint', buffered: true}); } catch (e) {}
  function done() {
    var n = performance.getEntriesByType('navigation')[0] || {};
    var p = {}; performance.getEntriesByType('paint').forEach(function (e) { p[e.name] = e.startTime; });
    resolve(JSON.stringify({dcl: n.domContentLoadedEventEnd || 0, load: n.loadEventEnd || 0, fp: p['first-paint'], fcp: p['first-contentful-paint'], lcp: lcp}));
  }
  function after() { setTimeout(done, 200); }
  var n = performance.getEntriesByType('navigation')[0];
  if (document.readyState === 'complete' && n && n.loadEventEnd > 0) after(); else addEventListener('load', function () { setTimeout(after, 0); });
})"#;

#[derive(Deserialize)]
struct PageTimes {
    dcl: f64,
    load: f64,
    fp: Option<f64>,
    fcp: Option<f64>,
    lcp: Option<f64>,
}

/// A load's raw material: the result, the exchanges and, when asked, the
/// response bodies.
pub struct Loaded {
    pub result: BrowserResult,
    pub exchanges: Vec<har::Exchange>,
    pub bodies: BTreeMap<String, Vec<u8>>,
}

/// Loads `url` in a fresh Chromium.
///
/// Interrupted (SIGTERM, SIGINT: what the lab sends a run's processes when
/// it ends one), it stops Chromium and removes the profile before it ends.
pub async fn load(page: &str, url: &str, o: &LoadOpts) -> Result<Loaded> {
    if o.proxy.is_some() && o.warm {
        // Another device loads it first (a browser and profile of its
        // own): the proxy's cache is warm, this browser's cold.
        let other = LoadOpts { warm: false, har: None, screenshot: None, net_log: None, ..o.clone() };
        load_once(page, url, &other).await?;
        return load_once(page, url, &LoadOpts { warm: false, ..o.clone() }).await;
    }
    load_once(page, url, o).await
}

/// One load in a browser with a profile of its own.
async fn load_once(page: &str, url: &str, o: &LoadOpts) -> Result<Loaded> {
    use tokio::signal::unix::{signal, SignalKind};
    let profile = tempdir()?;
    let (mut term, mut int) = (signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?);
    let out = tokio::select! {
        r = load_in(page, url, o, &profile) => r,
        _ = term.recv() => Err(WorkError::Browser(format!("{url}: interrupted (SIGTERM)"))),
        _ = int.recv() => Err(WorkError::Browser(format!("{url}: interrupted (SIGINT)"))),
    };
    // Dropping an unfinished load kills Chromium (chromiumoxide starts it
    // with kill-on-drop); give it a moment to let go of its files.
    for _ in 0..20 {
        if std::fs::remove_dir_all(&profile).is_ok() || !profile.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    out
}

fn tempdir() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    for i in 0..1000u32 {
        let p = base.join(format!("aerolink-chromium-{}-{i}", std::process::id()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(WorkError::Browser("no temporary directory for the browser profile".into()))
}

async fn load_in(page: &str, url: &str, o: &LoadOpts, profile: &Path) -> Result<Loaded> {
    let exe = chromium_path();
    let cfg = BrowserConfig::builder()
        .chrome_executable(&exe)
        .disable_default_args()
        .no_sandbox()
        .user_data_dir(profile)
        .launch_timeout(Duration::from_secs(60))
        .request_timeout(o.timeout)
        .respect_https_errors()
        .viewport(None)
        // chromiumoxide adds the leading dashes itself.
        .args(flags(o).iter().map(|f| f.trim_start_matches("--").to_string()))
        .build()
        .map_err(|e| chrome_err(&format!("Chromium at {}", exe.display()), e))?;
    let (mut browser, mut handler) = Browser::launch(cfg).await.map_err(|e| chrome_err(&format!("starting Chromium ({}; install Debian's chromium or set AEROLINK_CHROMIUM)", exe.display()), e))?;
    let pump = tokio::spawn(async move { while handler.next().await.is_some() {} });
    let result = drive(&browser, page, url, o).await;
    let _ = browser.close().await;
    let _ = tokio::time::timeout(Duration::from_secs(10), browser.wait()).await;
    let _ = browser.kill().await;
    pump.abort();
    result
}

async fn drive(browser: &Browser, page_name: &str, url: &str, o: &LoadOpts) -> Result<Loaded> {
    let version = browser.version().await.map(|v| v.product).unwrap_or_default();
    let tab = browser.new_page("about:blank").await.map_err(|e| chrome_err("opening a tab", e))?;
    if o.warm {
        watch(&tab, url, o).await?;
        let _ = tab.goto("about:blank").await;
    }
    let (events, bodies) = watch(&tab, url, o).await?;
    let times: String = tab.evaluate(TIMINGS_JS).await.map_err(|e| chrome_err("reading the page's timings", e))?.into_value().map_err(|e| chrome_err("the page's timings", e))?;
    let times: PageTimes = serde_json::from_str(&times).map_err(|e| chrome_err("the page's timings", e))?;
    let shot = match &o.screenshot {
        Some(p) => {
            let png = tab.screenshot(chromiumoxide::page::ScreenshotParams::builder().build()).await.map_err(|e| chrome_err("screenshot", e))?;
            std::fs::write(p, png)?;
            Some(p.display().to_string())
        }
        None => None,
    };
    let xs = har::exchanges(&events);
    let t0 = xs.first().map(|x| x.sent).unwrap_or(0.0);
    let mut r = BrowserResult {
        page: page_name.into(),
        url: url.into(),
        protocol: o.protocol.to_string(),
        browser: version.clone(),
        dcl_ms: times.dcl,
        fp_ms: times.fp,
        fcp_ms: times.fcp,
        lcp_ms: times.lcp,
        onload_ms: times.load,
        plt_ms: times.load,
        screenshot: shot,
        ..BrowserResult::default()
    };
    let mut conns: BTreeMap<String, std::collections::BTreeSet<u64>> = BTreeMap::new();
    for x in &xs {
        if x.failed.is_some() && x.response.is_none() {
            r.failed_requests += 1;
            continue;
        }
        // The page's objects (not the browser's own favicon request).
        let page_object = !x.url.ends_with("/favicon.ico");
        if o.proxy.is_some() && page_object && !(x.cache_hit().is_some() && x.finished.is_some()) {
            r.cache_unmarked.push(x.url.clone());
        }
        if x.response.is_none() {
            continue;
        }
        r.requests += 1;
        r.bytes += x.encoded_bytes.max(0.0) as u64;
        if let Some(f) = x.finished {
            r.last_byte_ms = r.last_byte_ms.max((f - t0) * 1000.0);
            r.object_ms.push((f - x.sent) * 1000.0);
            r.object_bytes.push(x.encoded_bytes.max(0.0) as u64);
        }
        // Lookups only where names are resolved (a host-resolver rule
        // "looks up" in no time).
        if let Some(ms) = x.dns_ms().filter(|_| o.resolve_to.is_none()) {
            r.dns_ms.push(ms);
        }
        if let (Some(hit), Some(f), true) = (x.cache_hit(), x.finished, page_object) {
            let ms = (f - x.sent) * 1000.0;
            if hit {
                r.cache_hit_ms.push(ms);
            } else {
                r.cache_miss_ms.push(ms);
            }
        }
        *r.protocols.entry(x.protocol().unwrap_or_else(|| "unknown".into())).or_default() += 1;
        let set = conns.entry(x.host()).or_default();
        if let Some(c) = x.connection() {
            set.insert(c);
        }
    }
    r.origins = conns.len();
    r.connections_per_origin = conns.iter().map(|(h, s)| (h.clone(), s.len())).collect();
    // Connection ids are per socket, so one shared by two origins (HTTP/2
    // coalescing) counts once.
    r.connections = conns.values().flatten().collect::<std::collections::BTreeSet<_>>().len();
    r.conns_per_origin = if r.origins > 0 { conns.values().map(|s| s.len()).sum::<usize>() as f64 / r.origins as f64 } else { 0.0 };
    if let Some(p) = &o.har {
        let h = har::build(&xs, url, &version, times.dcl, times.load);
        std::fs::write(p, serde_json::to_vec_pretty(&h).map_err(std::io::Error::other)?)?;
        r.har = Some(p.display().to_string());
    }
    Ok(Loaded { result: r, exchanges: xs, bodies })
}

/// Navigates `tab` to `url` and collects the network events (and bodies,
/// when asked) until the load is over.
async fn watch(tab: &chromiumoxide::Page, url: &str, o: &LoadOpts) -> Result<(Vec<NetEvent>, BTreeMap<String, Vec<u8>>)> {
    let mut sent = tab.event_listener::<EventRequestWillBeSent>().await.map_err(|e| chrome_err("events", e))?;
    let mut resp = tab.event_listener::<EventResponseReceived>().await.map_err(|e| chrome_err("events", e))?;
    let mut fin = tab.event_listener::<EventLoadingFinished>().await.map_err(|e| chrome_err("events", e))?;
    let mut fail = tab.event_listener::<EventLoadingFailed>().await.map_err(|e| chrome_err("events", e))?;
    let mut load_fired = tab.event_listener::<EventLoadEventFired>().await.map_err(|e| chrome_err("events", e))?;

    // The load is over when onload has fired and no request has been in
    // flight for 1.5 s (a page's scripts keep fetching after onload).
    // chromiumoxide gives each DevTools command 30 s, less than a page
    // takes over some links, so the navigation command's own time-out is
    // not an error: the load event and `--timeout` decide.
    let deadline = tokio::time::Instant::now() + o.timeout;
    let nav = tab.execute(NavigateParams::new(url));
    tokio::pin!(nav);
    let mut navigating = true;
    let mut events: Vec<NetEvent> = Vec::new();
    let mut bodies = BTreeMap::new();
    // Request id → URL, so a load that never settles names what it waits for.
    let mut in_flight: BTreeMap<String, String> = BTreeMap::new();
    // Requests already over, so that a finish handled before its own
    // request (another listener's channel) cannot leave it "in flight".
    let mut over: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut loaded = false;
    let mut quiet_since = tokio::time::Instant::now();
    loop {
        let idle_wait = if loaded && in_flight.is_empty() { quiet_since + Duration::from_millis(1500) } else { deadline };
        // Each event kind comes on its own channel. Polling them in the
        // order Chromium sends a request's events (biased) keeps most in
        // order, but chromiumoxide drains its per-kind queues into the
        // channels in hash-map order, so a finish can still come before
        // its request: `over` keeps it from waiting "in flight" until
        // --timeout, and har::exchanges folds events in any order.
        tokio::select! {
            biased;
            Some(e) = sent.next() => {
                if e.request.url.starts_with("http") && !over.contains(e.request_id.inner()) {
                    in_flight.insert(e.request_id.inner().clone(), e.request.url.clone());
                }
                events.push(NetEvent { method: har::WILL_BE_SENT, params: to_json(&*e) });
            }
            Some(e) = resp.next() => { events.push(NetEvent { method: har::RESPONSE, params: to_json(&*e) }); }
            Some(e) = fin.next() => {
                in_flight.remove(e.request_id.inner());
                over.insert(e.request_id.inner().clone());
                quiet_since = tokio::time::Instant::now();
                if o.bodies {
                    if let Ok(b) = tab.execute(GetResponseBodyParams::new(e.request_id.clone())).await {
                        let body = if b.base64_encoded { base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b.body.as_bytes()).unwrap_or_default() } else { b.body.clone().into_bytes() };
                        bodies.insert(e.request_id.inner().clone(), body);
                    }
                }
                events.push(NetEvent { method: har::FINISHED, params: to_json(&*e) });
            }
            Some(e) = fail.next() => {
                in_flight.remove(e.request_id.inner());
                over.insert(e.request_id.inner().clone());
                quiet_since = tokio::time::Instant::now();
                events.push(NetEvent { method: har::FAILED, params: to_json(&*e) });
            }
            Some(_) = load_fired.next() => { loaded = true; quiet_since = tokio::time::Instant::now(); }
            r = &mut nav, if navigating => {
                navigating = false;
                match r {
                    Ok(r) => if let Some(e) = &r.result.error_text {
                        return Err(WorkError::Browser(format!("{url}: {e}")));
                    },
                    Err(chromiumoxide::error::CdpError::Timeout) => {}
                    Err(e) => return Err(chrome_err(url, e)),
                }
            }
            _ = tokio::time::sleep_until(idle_wait) => {
                if !loaded || tokio::time::Instant::now() >= deadline {
                    let waiting: Vec<&str> = in_flight.values().take(3).map(String::as_str).collect();
                    let more = if in_flight.len() > 3 { format!(" and {} more", in_flight.len() - 3) } else { String::new() };
                    let what = if in_flight.is_empty() { if loaded { String::new() } else { ", the load event never fired".into() } } else { format!(": still waiting for {}{more}", waiting.join(", ")) };
                    return Err(WorkError::Browser(format!("{url}: not loaded within {:?} ({} requests in flight{what})", o.timeout, in_flight.len())));
                }
                break;
            }
        }
    }
    Ok((events, bodies))
}

fn to_json<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or_default()
}

/// Records the page at `url`: every response a fresh Chromium received,
/// with its body, as an archive.
pub async fn record(url: &str, o: &LoadOpts) -> Result<(Archive, BrowserResult)> {
    let o = LoadOpts { bodies: true, warm: false, ..o.clone() };
    let l = load(url, url, &o).await?;
    let mut entries = Vec::new();
    for x in &l.exchanges {
        let (Some(r), Some(body)) = (&x.response, l.bodies.get(&x.id)) else { continue };
        let headers: Vec<(String, String)> =
            r.get("headers").and_then(|h| h.as_object()).map(|o| o.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.as_str().unwrap_or_default().to_string())).collect()).unwrap_or_default();
        let status = r.get("status").and_then(|s| s.as_i64()).unwrap_or(200) as u16;
        entries.push(Entry { method: x.method.clone(), url: x.url.clone(), status, headers, body: body.clone() });
    }
    let when = crate::har::iso8601(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0));
    let a = Archive { format: FORMAT.into(), url: url.into(), source: format!("recorded from {url} at {when} by {} (aerolink {})", l.result.browser, env!("CARGO_PKG_VERSION")), entries };
    Ok((a, l.result))
}
