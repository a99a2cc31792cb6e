//! The HTTP prefetching proxy: an application-layer PEP as satellite
//! operators run one (seed 001's terminal "accelerated HTTP"), in two
//! halves joined by one long-lived TCP connection across the space hop.
//!
//! - The **air half** ([`air`]) intercepts the cabin's plain HTTP (TCP port
//!   80, nftables TPROXY: no device is configured) and answers each request
//!   from what the ground half pushed, waiting for an object the ground
//!   half promised; anything else it forwards across the tunnel.
//! - The **ground half** ([`ground`]) fetches forwarded requests from the
//!   origin; when the answer is a page or a style sheet it reads the
//!   objects it references (`src`, `href`, `url(…)`), promises them to the
//!   air half before the page itself goes up, fetches them over the short
//!   terrestrial hop and pushes them down, so the browser's requests for
//!   them never cross the space hop.
//!
//! What it cannot see it cannot speed up: HTTPS (TLS hides the page, as
//! seed 001 found of its gateway and SPDY) and QUIC pass through
//! untouched. Names: a referenced object on a host the air half has
//! forwarded a request to is fetched from that host's address; one on a
//! host not seen yet from the address of the page that references it
//! (every name in a lab is the one server; a deployment would resolve it).

pub mod air;
pub mod ground;
pub mod wire;

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// The ground half's port for the air half's tunnel.
pub const DEFAULT_PORT: u16 = 4480;

/// The cabin's port the air half intercepts (plain HTTP).
pub const HTTP_PORT: u16 = 80;

/// What a half counted, printed when it stops (`--json`).
#[derive(Debug, Default, Serialize, Clone, PartialEq)]
pub struct Stats {
    /// Requests the cabin made (air) or the air half forwarded (ground).
    pub requests: u64,
    /// Air: answered from a push that had arrived.
    pub pushed_ready: u64,
    /// Air: answered from a push the request waited for.
    pub pushed_awaited: u64,
    /// Air: forwarded across the tunnel.
    pub forwarded: u64,
    /// Ground: objects promised, pushed, withdrawn (fetch failed).
    pub promised: u64,
    pub pushed: u64,
    pub cancelled: u64,
    /// Pushed objects never asked for (air: expired unclaimed).
    pub unclaimed: u64,
    /// Requests that failed (the tunnel or the origin unreachable).
    pub failed: u64,
    /// Body bytes down the tunnel (responses and pushes).
    pub bytes_down: u64,
    /// Tunnel connections opened (air) or accepted (ground).
    pub tunnels: u64,
}

/// [`Stats`] as the halves update them.
#[derive(Debug, Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub pushed_ready: AtomicU64,
    pub pushed_awaited: AtomicU64,
    pub forwarded: AtomicU64,
    pub promised: AtomicU64,
    pub pushed: AtomicU64,
    pub cancelled: AtomicU64,
    pub unclaimed: AtomicU64,
    pub failed: AtomicU64,
    pub bytes_down: AtomicU64,
    pub tunnels: AtomicU64,
}

impl Counters {
    pub fn snapshot(&self) -> Stats {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            requests: g(&self.requests),
            pushed_ready: g(&self.pushed_ready),
            pushed_awaited: g(&self.pushed_awaited),
            forwarded: g(&self.forwarded),
            promised: g(&self.promised),
            pushed: g(&self.pushed),
            cancelled: g(&self.cancelled),
            unclaimed: g(&self.unclaimed),
            failed: g(&self.failed),
            bytes_down: g(&self.bytes_down),
            tunnels: g(&self.tunnels),
        }
    }
}

pub(crate) fn add(a: &AtomicU64, n: u64) {
    a.fetch_add(n, Ordering::Relaxed);
}

/// Headers that belong to one connection, not to the message (RFC 9110
/// §7.6.1), and the framing each side sets itself.
const HOP_BY_HOP: [&str; 9] = ["connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"];

/// The headers to carry on: without hop-by-hop ones and the length (the
/// other side frames the body itself).
pub fn end_to_end(h: &http::HeaderMap) -> wire::Headers {
    h.iter()
        .filter(|(k, _)| !HOP_BY_HOP.contains(&k.as_str()) && *k != http::header::CONTENT_LENGTH)
        .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect()
}

/// What identifies an object between the halves: its host (lower case,
/// `:port` unless 80) and its target, e.g. `www.news.test/obj/1.img?size=9`.
pub fn key(host: &str, target: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    let host = host.strip_suffix(":80").unwrap_or(&host);
    let target = target.split('#').next().unwrap_or("");
    let target = if target.starts_with('/') { target.to_string() } else { format!("/{target}") };
    format!("{host}{target}")
}

/// A reference found in a page or style sheet at `host` + `target`, as
/// `(host, target)`: absolute `http://` URLs, scheme-relative `//host/…`,
/// absolute paths and paths relative to the referencing document. `None`
/// for what plain HTTP cannot fetch or the cabin would not ask for
/// (`https:`, `data:`, `javascript:`, fragments).
pub fn resolve(host: &str, target: &str, reference: &str) -> Option<(String, String)> {
    let r = reference.trim().replace("&amp;", "&");
    let r = r.split('#').next().unwrap_or("");
    if r.is_empty() {
        return None;
    }
    let split = |rest: &str| -> Option<(String, String)> {
        let (h, p) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
        (!h.is_empty()).then(|| (h.to_ascii_lowercase(), if p.starts_with('/') { p.to_string() } else { format!("/{p}") }))
    };
    if let Some(rest) = r.strip_prefix("http://").or_else(|| r.strip_prefix("HTTP://")) {
        return split(rest);
    }
    if let Some(rest) = r.strip_prefix("//") {
        return split(rest);
    }
    if r.starts_with('/') {
        return Some((host.to_ascii_lowercase(), r.to_string()));
    }
    // A scheme of another kind (https:, data:, mailto:…): a colon before
    // any slash, question mark or dot-free path.
    if let Some(colon) = r.find(':') {
        if !r[..colon].contains(['/', '?']) {
            return None;
        }
    }
    let path = target.split('?').next().unwrap_or("/");
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    let dir = if dir.is_empty() { "/" } else { dir };
    Some((host.to_ascii_lowercase(), format!("{dir}{r}")))
}

/// Whether a response of this content type names objects to prefetch.
pub fn names_objects(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|t| {
        let t = t.trim().to_ascii_lowercase();
        t.starts_with("text/html") || t.starts_with("text/css") || t.starts_with("application/xhtml")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_as_a_browser_would_on_plain_http() {
        let at = |r| resolve("www.news.test", "/dir/page.html?x=1", r);
        assert_eq!(at("/obj/1.img?size=9"), Some(("www.news.test".into(), "/obj/1.img?size=9".into())));
        assert_eq!(at("img/a.png"), Some(("www.news.test".into(), "/dir/img/a.png".into())));
        assert_eq!(at("http://IMG.news.test/b.png#top"), Some(("img.news.test".into(), "/b.png".into())));
        assert_eq!(at("//static.news.test"), Some(("static.news.test".into(), "/".into())));
        assert_eq!(at("/style.css?spec=2x1KB&amp;depth=2"), Some(("www.news.test".into(), "/style.css?spec=2x1KB&depth=2".into())));
        for skipped in ["https://img.news.test/c.png", "data:image/png;base64,AAAA", "javascript:void(0)", "#section", "mailto:a@b", ""] {
            assert_eq!(at(skipped), None, "{skipped}");
        }
        assert_eq!(resolve("h", "/", "a.png"), Some(("h".into(), "/a.png".into())));
    }

    #[test]
    fn keys_name_an_object_whatever_the_host_spelling() {
        assert_eq!(key("WWW.news.test:80", "/a?b=1#frag"), "www.news.test/a?b=1");
        assert_eq!(key("www.news.test:8080", "/"), "www.news.test:8080/");
        let (h, t) = resolve("www.news.test", "/", "/a?b=1").unwrap();
        assert_eq!(key(&h, &t), key("www.news.test", "/a?b=1"));
    }

    #[test]
    fn only_pages_and_style_sheets_are_read_for_references() {
        assert!(names_objects(Some("text/html; charset=utf-8")));
        assert!(names_objects(Some("text/css")));
        assert!(!names_objects(Some("image/png")));
        assert!(!names_objects(None));
    }

    #[test]
    fn hop_by_hop_headers_and_the_length_stay_behind() {
        let mut h = http::HeaderMap::new();
        h.insert("connection", "keep-alive".parse().unwrap());
        h.insert("content-length", "12".parse().unwrap());
        h.insert("content-type", "text/html".parse().unwrap());
        h.insert("transfer-encoding", "chunked".parse().unwrap());
        assert_eq!(end_to_end(&h), vec![("content-type".to_string(), "text/html".to_string())]);
    }
}
