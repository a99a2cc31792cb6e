//! `browser`: Chromium loads a corpus page, a synthetic page or a URL:
//! paint and load timings, connections, the protocol of every request.
//! Names map to the server without DNS, unless `resolver` has the load
//! resolve them, each origin a lookup, at a resolver aboard (dnsmasq in
//! the aircraft gateway) or at the ground's name server.

use aerolink_link::Duration;
use aerolink_work::browser::{BrowserProtocol, BrowserResult};
use aerolink_work::cli::{BrowserArgs, BrowserParams, WorkloadCmd};
use serde::{Deserialize, Serialize};

use super::table::{de, fields, Choice, Flag, KeyErr, Many, Text};
use super::ResolverAt;

aerolink_work::choice! {
    /// Whether the load goes through the HTTP cache aboard (squid in the
    /// aircraft gateway; needs the gateway chain).
    pub enum ProxyAt { None = "none", Aboard = "aboard", Transparent = "transparent" }
}
use super::{Kind, Knobs, Measured, Workload, WorkloadError, WorkloadKind};
use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Browser {
    pub protocol: BrowserProtocol,
    pub page: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warm: bool,
    /// Resolve names by DNS at this resolver; `None`: every name maps to
    /// the server (no lookups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<ResolverAt>,
    /// Every request through the HTTP cache aboard (the browser's own
    /// cache off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub proxy: bool,
    /// With `proxy`: the cache intercepts the cabin's port 80 (a
    /// transparent cache, as airlines run them); the browser is not told
    /// of it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub intercepted: bool,
    /// Where to write the HAR and the screenshot (`bench browser`); not
    /// part of what a run is.
    #[serde(skip)]
    pub har: Option<std::path::PathBuf>,
    #[serde(skip)]
    pub screenshot: Option<std::path::PathBuf>,
    /// Where Chromium writes its net log (`bench browser --net-log`).
    #[serde(skip)]
    pub net_log: Option<std::path::PathBuf>,
}

pub const KIND: WorkloadKind = WorkloadKind { name: "browser", keys: fields::<Table>, expand, base_knobs: Knobs::default };

/// A `[[workload]]` table of type browser: protocols and pages one value
/// or a list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[serde(alias = "protocol")]
    protocols: Option<Many<Choice<BrowserProtocol>>>,
    #[serde(alias = "page")]
    pages: Many<Text>,
    warm: Option<Flag>,
    #[serde(alias = "resolver")]
    resolvers: Option<Many<Choice<ResolverAt>>>,
    proxy: Option<Many<Choice<ProxyAt>>>,
}

fn expand(t: toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let t: Table = de(t)?;
    let warm = t.warm.is_some_and(|f| f.0);
    let mut out = Vec::new();
    let resolvers: Vec<Option<ResolverAt>> = t.resolvers.map_or(vec![None], |m| m.0.into_iter().map(|c| Some(c.0)).collect());
    let proxies = Many::or(t.proxy, vec![Choice(ProxyAt::None)]);
    for Choice(protocol) in Many::or(t.protocols, vec![Choice(BrowserProtocol::H2)]) {
        for Text(page) in &t.pages.0 {
            for &resolver in &resolvers {
                for &Choice(p) in &proxies {
                    let (proxy, intercepted) = (p != ProxyAt::None, p == ProxyAt::Transparent);
                    out.push(Workload::Browser(Browser { protocol, page: page.clone(), warm, resolver, proxy, intercepted, har: None, screenshot: None, net_log: None }));
                }
            }
        }
    }
    Ok(out)
}

impl Kind for Browser {
    fn expected_bytes(&self) -> u64 {
        aerolink_work::corpus::shape(&self.page).map(|s| s.kilobytes() as u64 * 1000).unwrap_or(0)
    }
    fn validate(&self) -> Result<(), WorkloadError> {
        if aerolink_work::browser::page_url(&self.page).is_none() {
            return Err(WorkloadError::BrowserPage(self.page.clone(), aerolink_work::corpus::names().join(", ")));
        }
        Ok(())
    }
    fn protocol(&self) -> String {
        format!("browser {}", self.protocol)
    }
    fn params_label(&self) -> String {
        let warm = if self.warm { " warm" } else { "" };
        let dns = self.resolver.map(|r| format!(" dns:{r}")).unwrap_or_default();
        let proxy = match (self.proxy, self.intercepted) {
            (true, true) => " cache:transparent",
            (true, false) => " cache:aboard",
            _ => "",
        };
        format!("{}{warm}{dns}{proxy}", self.page)
    }
    fn resolver_aboard(&self) -> bool {
        self.resolver == Some(ResolverAt::Aboard)
    }
    fn resolves_names(&self) -> bool {
        // The cache aboard resolves at the ground's name server too.
        self.resolver.is_some() || self.proxy
    }
    fn proxy_aboard(&self) -> bool {
        self.proxy
    }
    fn proxy_intercepts(&self) -> bool {
        self.proxy && self.intercepted
    }
    fn client_cmd(&self, server: String, _knobs: &Knobs) -> WorkloadCmd {
        let params = BrowserParams { protocol: self.protocol, page: self.page.clone(), warm: self.warm };
        // `server` is the resolver's address when one is aboard.
        let resolver = self.resolver.map(|_| server.clone());
        WorkloadCmd::Browser(BrowserArgs {
            server,
            resolver,
            proxy: None,
            params,
            har: self.har.clone(),
            screenshot: self.screenshot.clone(),
            net_log: self.net_log.clone(),
            timeout: Duration::from_secs(600),
        })
    }
    fn table_metrics(&self) -> Vec<Metric> {
        vec![FcpMs, LcpMs, Connections, LinkDropsDown, LinkDropsUp]
    }
    fn headline(&self) -> Metric {
        PltMs
    }
}

impl Measured for Browser {
    type Result = BrowserResult;
    fn metrics(r: &BrowserResult) -> Metrics {
        let each = [
            (PltMs, Some(r.plt_ms)),
            (OnloadMs, Some(r.onload_ms)),
            (DclMs, Some(r.dcl_ms)),
            (FpMs, r.fp_ms),
            (FcpMs, r.fcp_ms),
            (LcpMs, r.lcp_ms),
            (LastByteMs, Some(r.last_byte_ms)),
            (Requests, Some(r.requests as f64)),
            (FailedRequests, Some(r.failed_requests as f64)),
            (Bytes, Some(r.bytes as f64)),
            (Origins, Some(r.origins as f64)),
            (Connections, Some(r.connections as f64)),
            (ConnsPerOrigin, Some(r.conns_per_origin)),
        ];
        let mut m: Metrics = each.into_iter().filter_map(|(k, x)| Some((k, x?))).collect();
        if !r.dns_ms.is_empty() {
            m.insert(DnsLookups, r.dns_ms.len() as f64);
            m.insert(DnsLookupMsMean, super::mean(&r.dns_ms));
        }
        if !r.cache_hit_ms.is_empty() {
            m.insert(CacheHits, r.cache_hit_ms.len() as f64);
            m.insert(CacheHitMsMean, super::mean(&r.cache_hit_ms));
            m.insert(CacheHitsOver100MsPct, 100.0 * r.cache_hit_ms.iter().filter(|t| **t > 100.0).count() as f64 / r.cache_hit_ms.len() as f64);
        }
        if !r.cache_unmarked.is_empty() {
            m.insert(CacheUnmarked, r.cache_unmarked.len() as f64);
        }
        if !r.cache_miss_ms.is_empty() {
            m.insert(CacheMissMsMean, super::mean(&r.cache_miss_ms));
        }
        let handled: Vec<f64> = r.cache_hit_ms.iter().chain(&r.cache_miss_ms).copied().collect();
        if !handled.is_empty() {
            m.insert(CacheObjectMsMean, super::mean(&handled));
        }
        if !r.object_ms.is_empty() {
            m.insert(ObjectMsMean, super::mean(&r.object_ms));
            m.insert(ObjectMsMedian, crate::stats::quantile(&super::sorted(&r.object_ms), 0.5));
        }
        // Time against size (seed 000's Figure 9): objects under 1 KB and
        // of 50–100 KB, as received (headers included).
        let sized = |lo: u64, hi: u64| -> Option<f64> {
            let ms: Vec<f64> = r.object_ms.iter().zip(&r.object_bytes).filter(|(_, b)| (lo..hi).contains(*b)).map(|(t, _)| *t).collect();
            (!ms.is_empty()).then(|| crate::stats::quantile(&super::sorted(&ms), 0.5))
        };
        let (small, large) = (sized(0, 1024), sized(50 * 1024, 100 * 1024 + 1));
        if let Some(s) = small {
            m.insert(ObjectMsMedianSmall, s);
        }
        if let Some(l) = large {
            m.insert(ObjectMsMedianLarge, l);
        }
        if let (Some(s), Some(l)) = (small, large) {
            m.insert(ObjectMsSizeGap, l - s);
        }
        // Which protocol the requests really went over.
        for (name, n) in &r.protocols {
            let key = match name.as_str() {
                "http/1.1" => RequestsH1,
                "h2" => RequestsH2,
                "h3" => RequestsH3,
                _ => RequestsOther,
            };
            *m.entry(key).or_default() += *n as f64;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 000's Figure 9 as metrics: the median time of the objects
    /// under 1 KB and of those of 50–100 KB as received, and their gap;
    /// none where a load has no object of a class.
    #[test]
    fn object_times_by_size_give_each_class_and_the_gap() {
        let r = BrowserResult { object_ms: vec![900.0, 1000.0, 1100.0, 5000.0, 2500.0, 3000.0, 40.0], object_bytes: vec![300, 700, 1023, 300_000, 60_000, 102_400, 900], ..BrowserResult::default() };
        let m = <Browser as Measured>::metrics(&r);
        assert_eq!(m[&ObjectMsMedianSmall], 950.0, "{m:?}");
        assert_eq!(m[&ObjectMsMedianLarge], 2750.0, "{m:?}");
        assert_eq!(m[&ObjectMsSizeGap], 1800.0, "{m:?}");
        let only_small = BrowserResult { object_ms: vec![5.0], object_bytes: vec![10], ..BrowserResult::default() };
        let m = <Browser as Measured>::metrics(&only_small);
        assert!(m.contains_key(&ObjectMsMedianSmall) && !m.contains_key(&ObjectMsMedianLarge) && !m.contains_key(&ObjectMsSizeGap), "{m:?}");
    }
}
