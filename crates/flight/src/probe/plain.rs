//! A page load over plain HTTP/1.1 (port 80), directly or through an
//! explicit proxy: the one kind of load a proxy on the path can see into,
//! so the one whose responses carry its `Via` and cache headers (seed 000
//! §5.3). The page and then its objects in order, on one connection while
//! the server (or proxy) keeps it open.

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Empty;

use aerolink_work::error::Result;
use aerolink_work::page::{references, Page};
use aerolink_work::web::{ObjectTiming, WebResult};

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
        Ok::<_, aerolink_work::error::WorkError>(send)
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
        let request = || http::Request::get(&uri).header("host", &host).header("user-agent", "aerolink-probe").body(Empty::<Bytes>::new());
        // A proxy may close after each response (tinyproxy does): open
        // another connection then.
        if send.is_closed() || send.ready().await.is_err() {
            send = connect().await?;
            connections += 1;
        }
        let reused = objects.last().is_some_and(|o: &ObjectTiming| o.conn == connections - 1);
        let resp = match send.send_request(request()?).await {
            Ok(resp) => resp,
            // The close may still be on its way when the next request
            // leaves (no `Connection: close` seen, the FIN not yet read):
            // a GET that got nothing back on a reused connection is sent
            // again on a new one, as browsers do (RFC 9110 §9.2.2).
            Err(e) if reused && (e.is_incomplete_message() || e.is_canceled()) => {
                send = connect().await?;
                connections += 1;
                send.send_request(request()?).await?
            }
            Err(e) => return Err(e.into()),
        };
        let closing = resp.headers().get("connection").and_then(|v| v.to_str().ok()).is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let first_byte_ms = ms();
        if !resp.status().is_success() {
            return Err(aerolink_work::error::WorkError::Status(resp.status()));
        }
        let (ct, headers) = aerolink_work::web::content_type(resp.headers());
        let body = aerolink_work::web::read_hyper_body(resp.into_body()).await?;
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
        dns_ms: None,
        objects,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads one request head; false when the peer closed first.
    async fn read_head(s: &mut tokio::net::TcpStream) -> Option<String> {
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if s.read(&mut b).await.ok()? == 0 {
                return None;
            }
            head.push(b[0]);
        }
        Some(String::from_utf8_lossy(&head).into_owned())
    }

    /// A server (or proxy) that answers one request per connection with
    /// no `Connection: close`, then closes when the next request arrives
    /// — the close racing the client's next request, as tinyproxy's did
    /// over a long round trip. The page still loads: the object's GET is
    /// sent again on a new connection. Loopback only.
    #[tokio::test]
    async fn a_request_meeting_the_close_of_a_reused_connection_is_sent_again_on_a_new_one() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = listener.local_addr().unwrap();
        let page = Page::parse("1x1KB", 1).unwrap();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let Some(head) = read_head(&mut s).await else { return };
                    let (ct, body) = if head.starts_with("GET /page.html") { ("text/html", "<img src=\"/o1\">") } else { ("application/octet-stream", "0123456789") };
                    let _ = s.write_all(format!("HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\ncontent-length: {}\r\n\r\n{body}", body.len()).as_bytes()).await;
                    // The next request on this connection meets a close.
                    let _ = read_head(&mut s).await;
                });
            }
        });
        let r = load(origin, None, &page).await.unwrap();
        assert_eq!(r.requests, 2);
        assert_eq!(r.connections, 2);
        assert_eq!(r.body_bytes, 15 + 10);
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
