//! The browser workload: Chromium, headless, driven over the DevTools
//! protocol (chromiumoxide), loading a page over the emulated link.
//!
//! Each load starts a fresh Chromium with an empty profile in a temporary
//! directory (cold caches, no cookies), in the namespace the workload runs
//! in, with every host name mapped to the server (`--host-resolver-rules
//! "MAP * ADDR"`: no DNS, nothing resolvable outside the lab) and the lab
//! key trusted by its SPKI hash (nothing installed system-wide). The
//! protocol is chosen by flags, as a user would: `h1` turns HTTP/2 and QUIC
//! off, `h2` turns QUIC off, `h3` forces QUIC on every origin (and HTTP/3
//! is also advertised by `Alt-Svc`). Background networking (updates, safe
//! browsing, metrics) is off.
//!
//! What a load reports: navigation start → DOMContentLoaded, first paint,
//! first contentful paint, largest contentful paint, onload (from the
//! page's own Performance API), the last byte of the last request (from
//! the network events, for pages that keep fetching after onload), bytes,
//! requests, connections per origin and the protocol of every request, a
//! HAR 1.2 file and a screenshot on request.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::network::{EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent, EventResponseReceived, GetResponseBodyParams};
use chromiumoxide::cdp::browser_protocol::page::{EventLoadEventFired, NavigateParams};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::archive::{Archive, Entry, FORMAT};
use crate::error::{Result, WorkError};
use crate::har::{self, NetEvent};

crate::choice! {
    /// What Chromium may speak: HTTP/1.1 only, HTTP/2 (no QUIC), HTTP/3
    /// forced on every origin, or `auto`: as Chromium does by itself, HTTP/2
    /// first and HTTP/3 once an origin's `Alt-Svc` has advertised it.
    pub enum BrowserProtocol { H1 = "h1", H2 = "h2", H3 = "h3", Auto = "auto" }
}

/// Where Chromium is: `$AEROLINK_CHROMIUM`, Debian's binary (skipping its
/// wrapper script), or `chromium` on the PATH.
pub fn chromium_path() -> PathBuf {
    if let Some(p) = std::env::var_os("AEROLINK_CHROMIUM") {
        return PathBuf::from(p);
    }
    for p in ["/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    PathBuf::from("chromium")
}

/// The URL of a page argument: a corpus page's name, a synthetic page
/// spec (`10x100KB`, served by the workload server, so the browser and our
/// own client can load the same page), or a URL.
pub fn page_url(page: &str) -> Option<String> {
    if page.starts_with("http://") || page.starts_with("https://") {
        return Some(page.to_string());
    }
    if let Some(s) = crate::corpus::shape(page) {
        return Some(crate::corpus::url(s.name));
    }
    crate::page::Page::parse(page, 1).ok().map(|p| format!("https://{}{}", crate::tls::SERVER_NAME, p.url()))
}

/// What a load needs besides the page.
#[derive(Clone, Debug)]
pub struct LoadOpts {
    pub protocol: BrowserProtocol,
    /// Every host name resolves to this address (`None`: the system's
    /// resolver, for recording real sites).
    pub resolve_to: Option<std::net::IpAddr>,
    pub timeout: Duration,
    pub har: Option<PathBuf>,
    pub screenshot: Option<PathBuf>,
    /// Load twice in one profile and measure the second (warm caches and
    /// known `Alt-Svc`).
    pub warm: bool,
    /// Keep every response body (for recording).
    pub bodies: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BrowserResult {
    pub page: String,
    pub url: String,
    /// What was asked for.
    pub protocol: String,
    pub browser: String,
    /// Navigation start to DOMContentLoaded (end of its handlers), ms.
    pub dcl_ms: f64,
    pub fp_ms: Option<f64>,
    pub fcp_ms: Option<f64>,
    pub lcp_ms: Option<f64>,
    /// Navigation start to the end of the load event, ms.
    pub onload_ms: f64,
    /// Page load time as the reports call it: onload.
    pub plt_ms: f64,
    /// Navigation start to the last byte of the last request, ms.
    pub last_byte_ms: f64,
    /// Requests that got a response.
    pub requests: usize,
    pub failed_requests: usize,
    /// Bytes received, headers included (the protocol's encoded lengths).
    pub bytes: u64,
    pub origins: usize,
    pub connections: usize,
    pub connections_per_origin: BTreeMap<String, usize>,
    /// Connections per origin, on average.
    pub conns_per_origin: f64,
    /// Requests by the protocol they went over (`http/1.1`, `h2`, `h3`).
    pub protocols: BTreeMap<String, usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub har: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<String>,
}

fn chrome_err(what: &str, e: impl std::fmt::Display) -> WorkError {
    WorkError::Browser(format!("{what}: {e}"))
}

/// Chromium's flags for a load (besides the ones chromiumoxide adds:
/// headless, no sandbox, the profile directory and the debugging port).
pub fn flags(o: &LoadOpts) -> Vec<String> {
    let mut a: Vec<String> = [
        "--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
        "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--disable-breakpad", "--disable-crash-reporter", "--metrics-recording-only", "--no-pings",
        "--disable-dev-shm-usage", "--password-store=basic", "--use-mock-keychain", "--disable-gpu", "--window-size=1366,768", "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows", "--enable-automation", "--lang=en-US",
        "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,CertificateTransparencyComponentUpdater,HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,PrivacySandboxSettings4,InterestFeedContentSuggestions",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(format!("--ignore-certificate-errors-spki-list={}", crate::tls::spki_sha256_base64()));
    if let Some(ip) = o.resolve_to {
        let to = if ip.is_ipv6() { format!("[{ip}]") } else { ip.to_string() };
        a.push(format!("--host-resolver-rules=MAP * {to}, EXCLUDE localhost"));
    }
    match o.protocol {
        BrowserProtocol::H1 => a.extend(["--disable-http2".into(), "--disable-quic".into()]),
        BrowserProtocol::H2 => a.push("--disable-quic".into()),
        BrowserProtocol::H3 => a.extend(["--enable-quic".into(), "--origin-to-force-quic-on=*".into()]),
        BrowserProtocol::Auto => a.push("--enable-quic".into()),
    }
    a
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
    let mut r = BrowserResult { page: page_name.into(), url: url.into(), protocol: o.protocol.to_string(), browser: version.clone(), dcl_ms: times.dcl, fp_ms: times.fp, fcp_ms: times.fcp, lcp_ms: times.lcp, onload_ms: times.load, plt_ms: times.load, screenshot: shot, ..BrowserResult::default() };
    let mut conns: BTreeMap<String, std::collections::BTreeSet<u64>> = BTreeMap::new();
    for x in &xs {
        if x.failed.is_some() && x.response.is_none() {
            r.failed_requests += 1;
            continue;
        }
        if x.response.is_none() {
            continue;
        }
        r.requests += 1;
        r.bytes += x.encoded_bytes.max(0.0) as u64;
        if let Some(f) = x.finished {
            r.last_byte_ms = r.last_byte_ms.max((f - t0) * 1000.0);
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
    let mut loaded = false;
    let mut quiet_since = tokio::time::Instant::now();
    loop {
        let idle_wait = if loaded && in_flight.is_empty() { quiet_since + Duration::from_millis(1500) } else { deadline };
        tokio::select! {
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
            Some(_) = load_fired.next() => { loaded = true; quiet_since = tokio::time::Instant::now(); }
            Some(e) = sent.next() => {
                if e.request.url.starts_with("http") {
                    in_flight.insert(e.request_id.inner().clone(), e.request.url.clone());
                }
                events.push(NetEvent { method: har::WILL_BE_SENT, params: to_json(&*e) });
            }
            Some(e) = resp.next() => { events.push(NetEvent { method: har::RESPONSE, params: to_json(&*e) }); }
            Some(e) = fin.next() => {
                in_flight.remove(e.request_id.inner());
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
                quiet_since = tokio::time::Instant::now();
                events.push(NetEvent { method: har::FAILED, params: to_json(&*e) });
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
        let headers: Vec<(String, String)> = r.get("headers").and_then(|h| h.as_object()).map(|o| o.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.as_str().unwrap_or_default().to_string())).collect()).unwrap_or_default();
        let status = r.get("status").and_then(|s| s.as_i64()).unwrap_or(200) as u16;
        entries.push(Entry { method: x.method.clone(), url: x.url.clone(), status, headers, body: body.clone() });
    }
    let when = crate::har::iso8601(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0));
    let a = Archive { format: FORMAT.into(), url: url.into(), source: format!("recorded from {url} at {when} by {} (aerolink {})", l.result.browser, env!("CARGO_PKG_VERSION")), entries };
    Ok((a, l.result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_choose_the_protocol_and_keep_the_browser_inside_the_lab() {
        let o = LoadOpts { protocol: BrowserProtocol::H3, resolve_to: Some("2001:2::2".parse().unwrap()), timeout: Duration::from_secs(1), har: None, screenshot: None, warm: false, bodies: false };
        let f = flags(&o);
        assert!(f.contains(&"--origin-to-force-quic-on=*".to_string()));
        assert!(f.contains(&"--host-resolver-rules=MAP * [2001:2::2], EXCLUDE localhost".to_string()));
        assert!(f.contains(&"--disable-background-networking".to_string()));
        assert_eq!(f.iter().filter(|a| a.starts_with("--disable-features")).count(), 1, "Chromium reads only the last --disable-features");
        let h1 = flags(&LoadOpts { protocol: BrowserProtocol::H1, ..o.clone() });
        assert!(h1.contains(&"--disable-http2".to_string()) && h1.contains(&"--disable-quic".to_string()));
        assert!(flags(&LoadOpts { protocol: BrowserProtocol::H2, ..o.clone() }).contains(&"--disable-quic".to_string()));
        let auto = flags(&LoadOpts { protocol: BrowserProtocol::Auto, ..o });
        assert!(auto.contains(&"--enable-quic".to_string()) && !auto.iter().any(|f| f.starts_with("--origin-to-force-quic-on") || f == "--disable-http2"));
    }

    #[test]
    fn pages_are_corpus_names_or_urls() {
        assert_eq!(page_url("news").as_deref(), Some("https://www.news.test/"));
        assert_eq!(page_url("http://x.test/a").as_deref(), Some("http://x.test/a"));
        assert_eq!(page_url("nosuch"), None);
        assert_eq!(page_url("10x100KB").as_deref(), Some("https://aerolink.test/page.html?spec=10x100KB&depth=1"));
    }
}
