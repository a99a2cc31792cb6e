//! Replaying pages: one server answers for every origin of every archive
//! (and of the corpus) at once — HTTPS with HTTP/1.1 and HTTP/2 by ALPN on
//! 443/tcp, HTTP/3 on 443/udp, plain HTTP on 80/tcp — choosing the origin
//! by SNI and `Host`/`:authority`, each with its own certificate.
//!
//! A browser reaches every origin at the server's one address through its
//! host-resolver rules (`MAP * ADDR`), so no DNS is needed in the lab.
//! Every response carries `Alt-Svc: h3=":443"`, so a browser that is not
//! forced onto QUIC learns it as it would from a real site.
//!
//! HTTP/2 server push is not offered: Chromium removed it (version 106
//! turned it off, and it sends SETTINGS_ENABLE_PUSH = 0), so a replay could
//! not show what it does.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};

use crate::archive::{self, Archive, Sites};
use crate::corpus;
use crate::error::Result;

/// What the servers can answer: archives given on the command line, then
/// the corpus (each page generated on its first request).
#[derive(Default)]
pub struct Catalog {
    archives: Sites,
    corpus: [OnceLock<Sites>; 8],
    no_corpus: bool,
}

const _: () = assert!(corpus::SHAPES.len() == 8, "Catalog::corpus holds one slot per corpus page");

/// A response from the catalog.
pub struct Found {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl Catalog {
    pub fn new(archives: Vec<Archive>, with_corpus: bool) -> Catalog {
        Catalog { archives: Sites::new(archives), no_corpus: !with_corpus, ..Catalog::default() }
    }

    /// The response for `host` and `path_and_query`, if an archive or the
    /// corpus has one.
    pub fn find(&self, host: &str, path_and_query: &str) -> Option<Found> {
        let e = self.archives.find(host, path_and_query).or_else(|| {
            if self.no_corpus {
                return None;
            }
            let name = corpus::page_of_host(host.split(':').next().unwrap_or(host))?.name;
            let i = corpus::SHAPES.iter().position(|s| s.name == name)?;
            self.corpus[i].get_or_init(|| Sites::new(corpus::page(corpus::SHAPES[i].name))).find(host, path_and_query)
        })?;
        let mut headers: Vec<(String, String)> = e.headers.iter().filter(|(k, _)| archive::served_header(k)).cloned().collect();
        headers.push(("alt-svc".into(), "h3=\":443\"; ma=86400".into()));
        Some(Found { status: e.status, headers, body: Bytes::from(e.body.clone()) })
    }

    pub fn archive_hosts(&self) -> Vec<String> {
        let mut h: Vec<String> = self.archives.hosts().cloned().collect();
        h.sort();
        h
    }
}

/// The host a request is for: HTTP/2 and HTTP/3 carry it in the URI,
/// HTTP/1.1 in `Host`.
pub fn request_host<B>(req: &http::Request<B>) -> String {
    req.uri().host().map(str::to_string).or_else(|| req.headers().get(http::header::HOST).and_then(|h| h.to_str().ok()).map(|h| h.split(':').next().unwrap_or(h).to_string())).unwrap_or_default()
}

/// An HTTP response for hyper (HTTP/1.1, HTTP/2).
pub fn hyper_response(f: Found) -> Response<Full<Bytes>> {
    let mut b = Response::builder().status(f.status);
    for (k, v) in &f.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    b.body(Full::new(f.body)).unwrap_or_else(|_| Response::builder().status(500).body(Full::new(Bytes::from_static(b"bad recorded header"))).expect("valid response"))
}

/// The response head for h2 and h3; the body is sent separately.
pub fn response_head(f: &Found) -> http::Response<()> {
    let mut b = http::Response::builder().status(f.status);
    for (k, v) in &f.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    b.body(()).unwrap_or_else(|_| http::Response::builder().status(500).body(()).expect("valid response"))
}

/// `aerolink replay serve`'s settings.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct ReplayArgs {
    /// Archives to serve (written by `aerolink record`); corpus pages are
    /// always served too.
    #[arg(value_name = "ARCHIVE")]
    pub archives: Vec<PathBuf>,
    /// HTTPS port (HTTP/1.1 and HTTP/2 over TCP, HTTP/3 over UDP).
    #[arg(long, default_value_t = 443)]
    pub https_port: u16,
    /// Plain-HTTP port (0: none).
    #[arg(long, default_value_t = 80)]
    pub http_port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "::")]
    pub listen: std::net::IpAddr,
    /// Serve only the archives given, not the corpus.
    #[arg(long)]
    pub no_corpus: bool,
    /// HTTP/2 server push: push this share (0–100 %) of a page's
    /// same-origin objects with its HTML. Chromium (since 106) refuses
    /// push; aerolink's web client accepts it.
    #[arg(long, default_value_t = 0, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(0..=100))]
    pub push: u8,
}

async fn handle(cat: Arc<Catalog>, req: Request<hyper::body::Incoming>) -> std::result::Result<Response<Full<Bytes>>, Infallible> {
    let host = request_host(&req);
    let pq = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
    Ok(match cat.find(&host, &pq) {
        Some(f) => hyper_response(plain(f)),
        // The synthetic pages (`/page.html?spec=…`) too, as on HTTPS.
        None if crate::page::render(&pq).is_some() => {
            let (ct, body) = crate::page::render(&pq).expect("just rendered");
            Response::builder().header("content-type", ct).body(Full::new(Bytes::from(body))).expect("valid response")
        }
        None => Response::builder().status(404).body(Full::new(Bytes::from(format!("{host}{pq}: not in the archives")))).expect("valid response"),
    })
}

/// A response as plain HTTP serves it: the origins a page, style sheet or
/// script names by `https://` named by `http://` instead, so a page loaded
/// over plain HTTP stays on it (as 2013's sites did, and as an HTTP
/// accelerator needs to read it); no `Alt-Svc` (HTTP/3 is for HTTPS
/// origins).
fn plain(mut f: Found) -> Found {
    let text = f.headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("content-type") && ["text/html", "text/css", "javascript", "json"].iter().any(|t| v.contains(t)));
    if text {
        let body = String::from_utf8_lossy(&f.body).replace("https://", "http://");
        f.body = Bytes::from(body);
    }
    f.headers.retain(|(k, _)| !k.eq_ignore_ascii_case("alt-svc"));
    f
}

/// Serves plain HTTP/1.1 (and h2c prior knowledge) from `cat`.
pub async fn serve_plain(listener: tokio::net::TcpListener, cat: Arc<Catalog>) -> Result<()> {
    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        let cat = cat.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(tcp);
            let svc = hyper::service::service_fn(move |r| handle(cat.clone(), r));
            let _ = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new()).serve_connection(io, svc).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_serves_corpus_origins_and_archives_first() {
        let own = Archive {
            format: archive::FORMAT.into(),
            url: "https://www.news.test/".into(),
            source: "t".into(),
            entries: vec![archive::Entry {
                method: "GET".into(),
                url: "https://www.news.test/".into(),
                status: 200,
                headers: vec![("content-type".into(), "text/plain".into()), ("content-length".into(), "99".into())],
                body: b"mine".to_vec(),
            }],
        };
        let cat = Catalog::new(vec![own.clone()], true);
        // Over plain HTTP a corpus page names its origins by http://.
        let page = plain(cat.find("www.news.test", "/").unwrap());
        assert!(!page.headers.iter().any(|(k, _)| k == "alt-svc"));
        let news = plain(Catalog::new(vec![], true).find("www.news.test", "/").unwrap());
        let html = String::from_utf8_lossy(&news.body);
        assert!(html.contains("http://img.news.test/") && !html.contains("https://"), "{html}");
        assert!(Catalog::new(vec![own], false).find("www.median.test", "/").is_none(), "--no-corpus");
        let f = cat.find("www.news.test", "/").unwrap();
        assert_eq!(&f.body[..], b"mine");
        assert!(!f.headers.iter().any(|(k, _)| k == "content-length"), "the server frames the body itself");
        assert!(f.headers.iter().any(|(k, v)| k == "alt-svc" && v.contains("h3")));
        let hero = corpus::page("median").unwrap().entries.iter().find(|e| e.url.contains("/hero-")).unwrap().url.clone();
        let (_, host, path) = archive::split_url(&hero).unwrap();
        assert_eq!(cat.find(host, path).unwrap().headers[0].1, "image/png");
        assert!(cat.find("www.nothing.test", "/").is_none());
    }
}
