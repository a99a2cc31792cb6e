//! A page load over plain HTTP/1.1 (port 80), directly or through an
//! explicit proxy: the one kind of load a proxy on the path can see into,
//! so the one whose responses carry its `Via` and cache headers (seed 000
//! §5.3). The page and then its objects in order, on one connection while
//! the server (or proxy) keeps it open.

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Empty;

use crate::error::Result;
use crate::page::{references, Page};
use crate::web::{ObjectTiming, WebResult};

/// Loads `page` from the reflector's plain HTTP port `origin`, through
/// `proxy` when given (absolute-form requests, as to any forward proxy).
pub async fn load(origin: SocketAddr, proxy: Option<SocketAddr>, page: &Page) -> Result<WebResult> {
    let t0 = Instant::now();
    let ms = || t0.elapsed().as_secs_f64() * 1e3;
    let connect = || async {
        let tcp = tokio::net::TcpStream::connect(proxy.unwrap_or(origin)).await?;
        tcp.set_nodelay(true)?;
        let (send, conn) = hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(hyper_util::rt::TokioIo::new(tcp)).await?;
        tokio::spawn(conn);
        Ok::<_, crate::error::WorkError>(send)
    };
    let mut send = connect().await?;
    let mut connections = 1;
    let host = origin.to_string();
    let mut queue = vec![page.url()];
    let mut objects = Vec::new();
    let mut ttfb_ms = 0.0;
    while let Some(path) = queue.first().cloned() {
        queue.remove(0);
        let start_ms = ms();
        let uri = if proxy.is_some() { format!("http://{host}{path}") } else { path.clone() };
        let req = http::Request::get(uri).header("host", &host).header("user-agent", "aerolink-probe").body(Empty::<Bytes>::new())?;
        // A proxy may close after each response (tinyproxy does): open
        // another connection then.
        if send.is_closed() || send.ready().await.is_err() {
            send = connect().await?;
            connections += 1;
        }
        let resp = send.send_request(req).await?;
        let closing = resp.headers().get("connection").and_then(|v| v.to_str().ok()).is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let first_byte_ms = ms();
        if !resp.status().is_success() {
            return Err(crate::error::WorkError::Status(resp.status()));
        }
        let (ct, headers) = crate::web::content_type(resp.headers());
        let body = crate::web::read_hyper_body(resp.into_body()).await?;
        if objects.is_empty() {
            ttfb_ms = first_byte_ms;
        }
        if ct.starts_with("text/html") || ct.starts_with("text/css") {
            queue.extend(references(&body).into_iter().filter(|r| r.starts_with('/')));
        }
        objects.push(ObjectTiming { path, bytes: body.len() as u64, start_ms, first_byte_ms, end_ms: ms(), conn: connections - 1, pushed: false, headers });
        if closing && !queue.is_empty() {
            send = connect().await?;
            connections += 1;
        }
    }
    let plt_ms = objects.iter().map(|o| o.end_ms).fold(0.0, f64::max);
    Ok(WebResult {
        protocol: "http".into(),
        alpn: "http/1.1".into(),
        page: page.spec.clone(),
        depth: page.depth,
        plt_ms,
        ttfb_ms,
        requests: objects.len(),
        pushed: 0,
        body_bytes: objects.iter().map(|o| o.bytes).sum(),
        connections,
        client_retransmits: 0,
        objects,
    })
}
