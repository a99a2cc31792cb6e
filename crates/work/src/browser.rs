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

use serde::{Deserialize, Serialize};

// Driving Chromium (chromiumoxide and its generated protocol types: the
// largest crates of the build) only where a program loads pages: the
// `aerolink` binary. Crates that only name the browser's settings (the
// experiment runner, the fuzz targets) build without it.
#[cfg(feature = "chromium")]
mod cdp;
#[cfg(feature = "chromium")]
pub use cdp::{load, record, Loaded};

crate::choice! {
    /// What Chromium may speak: HTTP/1.1 only (`h1` over TLS; `http1` the
    /// page over plain HTTP, port 80), HTTP/2 (no QUIC), HTTP/3 forced on
    /// every origin, or `auto`: as Chromium does by itself, HTTP/2 first and
    /// HTTP/3 once an origin's `Alt-Svc` has advertised it.
    pub enum BrowserProtocol { H1 = "h1", Http1 = "http1", H2 = "h2", H3 = "h3", Auto = "auto" }
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

/// The URL a load over `protocol` asks for: `http1` asks for an https://
/// page over plain HTTP (the server's plain HTTP names a corpus page's
/// origins by http://, so the whole load stays on it).
pub fn url_for(protocol: BrowserProtocol, url: &str) -> String {
    match (protocol, url.strip_prefix("https://")) {
        (BrowserProtocol::Http1, Some(rest)) => format!("http://{rest}"),
        _ => url.to_string(),
    }
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
    /// Chromium's net log (`--log-net-log`), written as the browser runs
    /// and closed when it exits.
    pub net_log: Option<PathBuf>,
    /// An HTTP proxy (`ADDR:PORT`) every request goes through. With
    /// `warm`, the first load is another device's (a browser of its own),
    /// so the measured load finds the proxy's cache warm and its own cold.
    pub proxy: Option<String>,
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
    /// Each answered request's time from being sent to its last byte, ms,
    /// in the order sent (a HAR entry's `time`; seed 000's Figure 9).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_ms: Vec<f64>,
    /// Each of those requests' bytes received, headers included, in the
    /// same order (seed 000's Figure 9 plots time against size).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub object_bytes: Vec<u64>,
    /// Each object the proxy answered from its cache (`X-Cache: HIT`):
    /// its fetch time, ms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_hit_ms: Vec<f64>,
    /// Each object the proxy fetched (`X-Cache: MISS`): its fetch time, ms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_miss_ms: Vec<f64>,
    /// The page's objects loaded through the proxy that count as neither:
    /// no answer seen, no `X-Cache` on it, or no end (their URLs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_unmarked: Vec<String>,
    /// Each DNS lookup a request waited for (its timing's dnsStart to
    /// dnsEnd), ms; none when names map to the server without DNS.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns_ms: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub har: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<String>,
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
        BrowserProtocol::H1 | BrowserProtocol::Http1 => a.extend(["--disable-http2".into(), "--disable-quic".into()]),
        BrowserProtocol::H2 => a.push("--disable-quic".into()),
        BrowserProtocol::H3 => a.extend(["--enable-quic".into(), "--origin-to-force-quic-on=*".into()]),
        BrowserProtocol::Auto => a.push("--enable-quic".into()),
    }
    if let Some(p) = &o.net_log {
        a.push(format!("--log-net-log={}", p.display()));
    }
    if let Some(p) = &o.proxy {
        a.push(format!("--proxy-server=http://{p}"));
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_choose_the_protocol_and_keep_the_browser_inside_the_lab() {
        let o = LoadOpts {
            protocol: BrowserProtocol::H3,
            resolve_to: Some("2001:2::2".parse().unwrap()),
            timeout: Duration::from_secs(1),
            har: None,
            screenshot: None,
            warm: false,
            bodies: false,
            net_log: None,
            proxy: None,
        };
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
        // Plain HTTP/1.1 asks for the same page over http://.
        assert_eq!(url_for(BrowserProtocol::Http1, "https://aerolink.test/page.html?spec=1x1KB&depth=1"), "http://aerolink.test/page.html?spec=1x1KB&depth=1");
        assert_eq!(url_for(BrowserProtocol::H1, "https://aerolink.test/"), "https://aerolink.test/");
    }
}
