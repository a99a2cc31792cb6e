//! HAR 1.2 from the DevTools protocol's network events (CDP has no HAR
//! export; this is what chrome-har does, in Rust): one entry per request
//! that got a response, with its timings split as HAR wants them, and the
//! page's timings.
//!
//! Events are kept as the protocol's JSON (`Network.requestWillBeSent`,
//! `Network.responseReceived`, `Network.loadingFinished`,
//! `Network.loadingFailed`), so this module is tested without a browser.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

/// One network event: its CDP method and parameters.
#[derive(Clone, Debug)]
pub struct NetEvent {
    pub method: &'static str,
    pub params: Value,
}

pub const WILL_BE_SENT: &str = "Network.requestWillBeSent";
pub const RESPONSE: &str = "Network.responseReceived";
pub const FINISHED: &str = "Network.loadingFinished";
pub const FAILED: &str = "Network.loadingFailed";

/// A request as the events tell it.
#[derive(Clone, Debug, Default)]
pub struct Exchange {
    pub id: String,
    pub url: String,
    pub method: String,
    pub request_headers: Value,
    /// Monotonic seconds.
    pub sent: f64,
    pub wall_time: f64,
    pub response: Option<Value>,
    pub finished: Option<f64>,
    pub failed: Option<String>,
    pub encoded_bytes: f64,
}

impl Exchange {
    pub fn protocol(&self) -> Option<String> {
        let p = self.response.as_ref()?.get("protocol")?.as_str()?.to_ascii_lowercase();
        Some(if p.starts_with("h3") || p == "quic" { "h3".into() } else { p })
    }
    pub fn connection(&self) -> Option<u64> {
        self.response.as_ref()?.get("connectionId")?.as_f64().map(|c| c as u64).filter(|&c| c != 0)
    }
    pub fn host(&self) -> String {
        crate::archive::split_url(&self.url).map(|(_, h, _)| h.to_string()).unwrap_or_default()
    }
    /// Whether a cache on the path answered it (`X-Cache: HIT …`) or
    /// fetched it (`MISS …`); `None` without the header.
    pub fn cache_hit(&self) -> Option<bool> {
        let headers = self.response.as_ref()?.get("headers")?.as_object()?;
        let v = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("x-cache"))?.1.as_str()?;
        Some(v.trim_start().starts_with("HIT"))
    }
    /// The DNS lookup this request waited for, ms (its timing's dnsStart
    /// to dnsEnd); `None` when it made none (a reused connection, or a
    /// name mapped without DNS).
    pub fn dns_ms(&self) -> Option<f64> {
        let t = self.response.as_ref()?.get("timing")?;
        let (a, b) = (t.get("dnsStart")?.as_f64()?, t.get("dnsEnd")?.as_f64()?);
        (a >= 0.0 && b >= a).then_some(b - a)
    }
}

/// Folds events into exchanges, in the order requests were sent. A
/// redirect's hop is its own exchange.
///
/// The fold does not depend on the order of a request's other events: a
/// response, finish or failure belongs to the last hop of its request id,
/// whenever it comes. The browser's events arrive on one channel per kind,
/// filled by chromiumoxide in its own (hash-map) order, so a load's
/// finish is now and then handled before its request.
pub fn exchanges(events: &[NetEvent]) -> Vec<Exchange> {
    let mut out: Vec<Exchange> = Vec::new();
    let mut last: BTreeMap<String, usize> = BTreeMap::new();
    let f = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let id = |p: &Value| p.get("requestId").and_then(Value::as_str).unwrap_or_default().to_string();
    for e in events.iter().filter(|e| e.method == WILL_BE_SENT) {
        let (p, id) = (&e.params, id(&e.params));
        let req = &p["request"];
        let url = req.get("url").and_then(Value::as_str).unwrap_or_default();
        if !url.starts_with("http") {
            continue;
        }
        if let (Some(&i), Some(redirect)) = (last.get(&id), p.get("redirectResponse")) {
            out[i].response = Some(redirect.clone());
            out[i].finished = Some(f(p, "timestamp"));
        }
        last.insert(id.clone(), out.len());
        out.push(Exchange {
            id,
            url: url.into(),
            method: req.get("method").and_then(Value::as_str).unwrap_or("GET").into(),
            request_headers: req.get("headers").cloned().unwrap_or(json!({})),
            sent: f(p, "timestamp"),
            wall_time: f(p, "wallTime"),
            ..Exchange::default()
        });
    }
    for e in events.iter().filter(|e| e.method != WILL_BE_SENT) {
        let p = &e.params;
        let Some(x) = last.get(&id(p)).map(|&i| &mut out[i]) else { continue };
        match e.method {
            RESPONSE => x.response = p.get("response").cloned(),
            FINISHED => {
                x.finished = Some(f(p, "timestamp"));
                x.encoded_bytes = f(p, "encodedDataLength");
            }
            FAILED => {
                x.finished = Some(f(p, "timestamp"));
                x.failed = Some(p.get("errorText").and_then(Value::as_str).unwrap_or("failed").to_string());
            }
            _ => {}
        }
    }
    out
}

#[derive(Serialize)]
pub struct Har {
    pub log: Log,
}

#[derive(Serialize)]
pub struct Log {
    pub version: String,
    pub creator: Creator,
    pub browser: Creator,
    pub pages: Vec<HarPage>,
    pub entries: Vec<Value>,
}

#[derive(Serialize)]
pub struct Creator {
    pub name: String,
    pub version: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HarPage {
    pub started_date_time: String,
    pub id: String,
    pub title: String,
    pub page_timings: PageTimings,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageTimings {
    pub on_content_load: f64,
    pub on_load: f64,
}

/// RFC 3339 with milliseconds, from seconds since the epoch.
pub fn iso8601(epoch_s: f64) -> String {
    let ms = (epoch_s * 1000.0).round() as i64;
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z", sod / 3600, sod % 3600 / 60, sod % 60)
}

fn headers(h: &Value) -> Vec<Value> {
    h.as_object().map(|o| o.iter().flat_map(|(k, v)| v.as_str().unwrap_or_default().split('\n').map(move |v| json!({"name": k, "value": v}))).collect()).unwrap_or_default()
}

fn http_version(p: Option<&str>) -> String {
    match p.unwrap_or("") {
        "http/1.1" => "HTTP/1.1".into(),
        "http/1.0" => "HTTP/1.0".into(),
        "h2" => "h2".into(),
        p if p.starts_with("h3") => "h3".into(),
        p => p.to_string(),
    }
}

/// The entry of one exchange (HAR 1.2 §entries), or `None` without a
/// response.
pub fn entry(x: &Exchange, page_id: &str) -> Option<Value> {
    let r = x.response.as_ref()?;
    let t = r.get("timing");
    let g = |k: &str| t.and_then(|t| t.get(k)).and_then(Value::as_f64).unwrap_or(-1.0);
    let span = |a: f64, b: f64| if a >= 0.0 && b >= a { b - a } else { -1.0 };
    let (dns, connect, ssl) = (span(g("dnsStart"), g("dnsEnd")), span(g("connectStart"), g("connectEnd")), span(g("sslStart"), g("sslEnd")));
    let blocked = [g("dnsStart"), g("connectStart"), g("sendStart")].into_iter().find(|v| *v >= 0.0).unwrap_or(0.0);
    let send = span(g("sendStart"), g("sendEnd")).max(0.0);
    let wait = span(g("sendEnd"), g("receiveHeadersEnd")).max(0.0);
    let request_time = t.and_then(|t| t.get("requestTime")).and_then(Value::as_f64).unwrap_or(x.sent);
    let end_ms = x.finished.map(|f| (f - request_time) * 1000.0).unwrap_or(0.0);
    let receive = (end_ms - g("receiveHeadersEnd").max(0.0)).max(0.0);
    let time = blocked + dns.max(0.0) + connect.max(0.0) + send + wait + receive;
    let proto = r.get("protocol").and_then(Value::as_str);
    let mime = r.get("mimeType").and_then(Value::as_str).unwrap_or("");
    let query: Vec<Value> = x
        .url
        .split_once('?')
        .map(|(_, q)| {
            q.split('#')
                .next()
                .unwrap_or(q)
                .split('&')
                .filter(|s| !s.is_empty())
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    json!({"name": k, "value": v})
                })
                .collect()
        })
        .unwrap_or_default();
    let mut e = json!({
        "pageref": page_id,
        "startedDateTime": iso8601(x.wall_time),
        "time": time,
        "request": {"method": x.method, "url": x.url, "httpVersion": http_version(proto), "cookies": [], "headers": headers(&x.request_headers), "queryString": query, "headersSize": -1, "bodySize": 0},
        "response": {
            "status": r.get("status").and_then(Value::as_i64).unwrap_or(0),
            "statusText": r.get("statusText").and_then(Value::as_str).unwrap_or(""),
            "httpVersion": http_version(proto),
            "cookies": [], "headers": headers(r.get("headers").unwrap_or(&json!({}))),
            "content": {"size": x.encoded_bytes.max(0.0) as i64, "mimeType": mime},
            "redirectURL": r.get("headers").and_then(|h| h.get("location").or_else(|| h.get("Location"))).and_then(Value::as_str).unwrap_or(""),
            "headersSize": -1, "bodySize": x.encoded_bytes.max(0.0) as i64,
        },
        "cache": {},
        "timings": {"blocked": blocked, "dns": dns, "connect": connect, "ssl": ssl, "send": send, "wait": wait, "receive": receive},
        "_protocol": proto,
    });
    if let Some(ip) = r.get("remoteIPAddress").and_then(Value::as_str) {
        e["serverIPAddress"] = json!(ip.trim_start_matches('[').trim_end_matches(']'));
    }
    if let Some(c) = x.connection() {
        e["connection"] = json!(c.to_string());
    }
    if let Some(f) = &x.failed {
        e["_error"] = json!(f);
    }
    Some(e)
}

/// The HAR of one page load.
pub fn build(xs: &[Exchange], title: &str, browser_version: &str, on_content_load_ms: f64, on_load_ms: f64) -> Har {
    let started = xs.first().map(|x| x.wall_time).unwrap_or(0.0);
    let entries = xs.iter().filter_map(|x| entry(x, "page_1")).collect();
    Har {
        log: Log {
            version: "1.2".into(),
            creator: Creator { name: "aerolink".into(), version: env!("CARGO_PKG_VERSION").into() },
            browser: Creator { name: "Chromium".into(), version: browser_version.into() },
            pages: vec![HarPage {
                started_date_time: iso8601(started),
                id: "page_1".into(),
                title: title.into(),
                page_timings: PageTimings { on_content_load: on_content_load_ms, on_load: on_load_ms },
            }],
            entries,
        },
    }
}

/// The HAR of a page load by our own web client (`web::load`): one entry per
/// object with its request, first-byte and end times and the proxy and
/// cache headers the response carried.
pub fn from_web(r: &crate::web::WebResult, host: &str, started_epoch_s: f64) -> Har {
    let version = match r.alpn.as_str() {
        "h3" => "HTTP/3",
        "h2" => "HTTP/2.0",
        _ => "HTTP/1.1",
    };
    let scheme = if r.protocol == "http" { "http" } else { "https" };
    let entries = r
        .objects
        .iter()
        .map(|o| {
            let wait = (o.first_byte_ms - o.start_ms).max(0.0);
            let receive = (o.end_ms - o.first_byte_ms).max(0.0);
            let headers: Vec<Value> = o.headers.iter().map(|(k, v)| json!({"name": k, "value": v})).collect();
            json!({
                "pageref": "page_1",
                "startedDateTime": iso8601(started_epoch_s + o.start_ms / 1e3),
                "time": wait + receive,
                "request": {"method": "GET", "url": format!("{scheme}://{host}{}", o.path), "httpVersion": version, "cookies": [], "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
                "response": {"status": 200, "statusText": "", "httpVersion": version, "cookies": [], "headers": headers, "content": {"size": o.bytes, "mimeType": ""}, "redirectURL": "", "headersSize": -1, "bodySize": o.bytes},
                "cache": {},
                "timings": {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": wait, "receive": receive},
                "connection": o.conn.to_string(),
                "_pushed": o.pushed,
            })
        })
        .collect();
    Har {
        log: Log {
            version: "1.2".into(),
            creator: Creator { name: "aerolink".into(), version: env!("CARGO_PKG_VERSION").into() },
            browser: Creator { name: "aerolink web client".into(), version: env!("CARGO_PKG_VERSION").into() },
            pages: vec![HarPage {
                started_date_time: iso8601(started_epoch_s),
                id: "page_1".into(),
                title: r.page.clone(),
                page_timings: PageTimings { on_content_load: r.ttfb_ms, on_load: r.plt_ms },
            }],
            entries,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn sample() -> Vec<NetEvent> {
        let ev = |method, params| NetEvent { method, params };
        vec![
            ev(
                WILL_BE_SENT,
                json!({"requestId": "1", "timestamp": 100.0, "wallTime": 1_700_000_000.5, "request": {"url": "https://www.a.test/?x=1", "method": "GET", "headers": {"accept": "text/html"}}}),
            ),
            ev(
                RESPONSE,
                json!({"requestId": "1", "response": {"url": "https://www.a.test/", "status": 200, "statusText": "", "headers": {"content-type": "text/html"}, "mimeType": "text/html", "protocol": "h3", "connectionId": 7, "remoteIPAddress": "198.18.0.2", "timing": {"requestTime": 100.0, "dnsStart": -1, "dnsEnd": -1, "connectStart": 1.0, "connectEnd": 301.0, "sslStart": 1.0, "sslEnd": 301.0, "sendStart": 301.5, "sendEnd": 302.0, "receiveHeadersEnd": 602.0}}}),
            ),
            ev(FINISHED, json!({"requestId": "1", "timestamp": 100.9, "encodedDataLength": 18000.0})),
            ev(WILL_BE_SENT, json!({"requestId": "2", "timestamp": 100.95, "wallTime": 1_700_000_001.45, "request": {"url": "https://img.a.test/i.png", "method": "GET", "headers": {}}})),
            ev(FAILED, json!({"requestId": "2", "timestamp": 101.0, "errorText": "net::ERR_CONNECTION_RESET"})),
            ev(WILL_BE_SENT, json!({"requestId": "3", "timestamp": 101.0, "wallTime": 1.0, "request": {"url": "data:image/png;base64,AAAA", "method": "GET", "headers": {}}})),
        ]
    }

    #[test]
    fn events_fold_into_exchanges_and_a_har_entry_with_split_timings() {
        let xs = exchanges(&sample());
        assert_eq!(xs.len(), 2, "data: URLs are not requests");
        assert_eq!((xs[0].protocol().as_deref(), xs[0].connection(), xs[0].host().as_str()), (Some("h3"), Some(7), "www.a.test"));
        assert_eq!(xs[1].failed.as_deref(), Some("net::ERR_CONNECTION_RESET"));
        let e = entry(&xs[0], "page_1").unwrap();
        let t = &e["timings"];
        assert_eq!((t["blocked"].as_f64(), t["dns"].as_f64(), t["connect"].as_f64(), t["wait"].as_f64()), (Some(1.0), Some(-1.0), Some(300.0), Some(300.0)));
        assert!((t["receive"].as_f64().unwrap() - 298.0).abs() < 1e-6, "{t}");
        assert!((e["time"].as_f64().unwrap() - 899.5).abs() < 1e-6, "blocked 1 + connect 300 + send 0.5 + wait 300 + receive 298: {e}");
        assert_eq!(e["request"]["httpVersion"], "h3");
        assert_eq!(e["request"]["queryString"][0]["name"], "x");
        assert_eq!(e["startedDateTime"], "2023-11-14T22:13:20.500Z");
        assert!(entry(&xs[1], "page_1").is_none(), "no response, no entry");
    }

    /// A request's finish or response handled before the request itself
    /// (the browser's events come on one channel per kind) folds as in
    /// order: the CI run that lost a HIT this way counted it "unmarked".
    #[test]
    fn a_requests_events_fold_the_same_in_any_order() {
        let ordered = exchanges(&sample());
        let mut shuffled = sample();
        shuffled.reverse();
        let xs = exchanges(&shuffled);
        let key = |xs: &[Exchange]| xs.iter().map(|x| (x.url.clone(), x.response.clone(), x.finished, x.failed.clone(), x.encoded_bytes)).collect::<Vec<_>>();
        assert_eq!(xs.len(), 2);
        let mut a = key(&ordered);
        let mut b = key(&xs);
        assert_eq!(ordered[0].finished, Some(100.9));
        a.sort_by(|x, y| x.0.cmp(&y.0));
        b.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(a, b);
    }

    #[test]
    fn a_redirects_hops_are_exchanges_of_their_own() {
        let ev = |method, params| NetEvent { method, params };
        let xs = exchanges(&[
            ev(FINISHED, json!({"requestId": "9", "timestamp": 3.0, "encodedDataLength": 5.0})),
            ev(WILL_BE_SENT, json!({"requestId": "9", "timestamp": 1.0, "request": {"url": "http://a.test/old"}})),
            ev(WILL_BE_SENT, json!({"requestId": "9", "timestamp": 2.0, "redirectResponse": {"status": 301}, "request": {"url": "http://a.test/new"}})),
            ev(RESPONSE, json!({"requestId": "9", "response": {"status": 200}})),
        ]);
        assert_eq!(xs.len(), 2);
        assert_eq!((xs[0].response.as_ref().map(|r| r["status"].clone()), xs[0].finished), (Some(json!(301)), Some(2.0)));
        assert_eq!((xs[1].response.as_ref().map(|r| r["status"].clone()), xs[1].finished, xs[1].encoded_bytes), (Some(json!(200)), Some(3.0), 5.0));
    }

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(iso8601(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400.25), "2000-02-29T00:00:00.250Z");
        assert_eq!(iso8601(1_795_000_000.0), "2026-11-18T11:06:40.000Z");
    }
}
