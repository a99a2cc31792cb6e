//! The prefetching proxy's frames between its halves, on one TCP
//! connection across the space hop: a request the air half forwards, the
//! ground half's response to it, and what the ground half sends unasked —
//! a promise (an object it will push), the pushed object, or a promise
//! withdrawn.
//!
//! A frame is `kind (1 byte) | id (u32) | head length (u32) | body length
//! (u32) | head (JSON) | body`, big-endian; heads stay small, bodies are
//! the objects' bytes.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Longest head accepted (a request's or response's header block).
const MAX_HEAD: u32 = 1 << 20;
/// Largest object carried (a frame's body).
pub const MAX_BODY: u32 = 256 << 20;

/// A header block: name and value pairs in order.
pub type Headers = Vec<(String, String)>;

/// A request the air half forwards: where the cabin's connection was
/// going, and what it asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub dest: SocketAddr,
    pub method: String,
    /// The request target as the cabin sent it (`/path?query`).
    pub target: String,
    pub headers: Headers,
}

/// A response's status and headers (the body travels beside).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub status: u16,
    pub headers: Headers,
}

/// A pushed object: which one, and its response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pushed {
    pub key: String,
    pub head: Head,
}

/// One frame.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// Air → ground: a request, answered by a `Response` with its id.
    Request(u32, Request, Vec<u8>),
    /// Ground → air: the answer to the request `id`.
    Response(u32, Head, Vec<u8>),
    /// Ground → air: the object `key` will be pushed; hold the cabin's
    /// request for it.
    Promise(String),
    /// Ground → air: a promised object.
    Push(Pushed, Vec<u8>),
    /// Ground → air: a promised object will not come (its fetch failed);
    /// forward the cabin's request for it.
    Cancel(String),
}

const REQUEST: u8 = 1;
const RESPONSE: u8 = 2;
const PROMISE: u8 = 3;
const PUSH: u8 = 4;
const CANCEL: u8 = 5;

fn frame(kind: u8, id: u32, head: &impl Serialize, body: &[u8]) -> Vec<u8> {
    let head = serde_json::to_vec(head).expect("a frame's head is plain data");
    let mut v = Vec::with_capacity(13 + head.len() + body.len());
    v.push(kind);
    v.extend(id.to_be_bytes());
    v.extend((head.len() as u32).to_be_bytes());
    v.extend((body.len() as u32).to_be_bytes());
    v.extend(head);
    v.extend(body);
    v
}

impl Frame {
    /// The frame's bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Frame::Request(id, r, body) => frame(REQUEST, *id, r, body),
            Frame::Response(id, h, body) => frame(RESPONSE, *id, h, body),
            Frame::Promise(key) => frame(PROMISE, 0, key, &[]),
            Frame::Push(p, body) => frame(PUSH, 0, p, body),
            Frame::Cancel(key) => frame(CANCEL, 0, key, &[]),
        }
    }

    /// The next frame from `r`; `None` at a clean end of stream.
    pub async fn read(r: &mut (impl AsyncRead + Unpin)) -> std::io::Result<Option<Frame>> {
        let mut fixed = [0u8; 13];
        match r.read_exact(&mut fixed).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let word = |i: usize| u32::from_be_bytes([fixed[i], fixed[i + 1], fixed[i + 2], fixed[i + 3]]);
        let (kind, id, head_len, body_len) = (fixed[0], word(1), word(5), word(9));
        if head_len > MAX_HEAD || body_len > MAX_BODY {
            return Err(bad(format!("a frame of {head_len} + {body_len} bytes (at most {MAX_HEAD} + {MAX_BODY})")));
        }
        let mut head = vec![0u8; head_len as usize];
        r.read_exact(&mut head).await?;
        let mut body = vec![0u8; body_len as usize];
        r.read_exact(&mut body).await?;
        let json = |e: serde_json::Error| bad(format!("a frame's head: {e}"));
        Ok(Some(match kind {
            REQUEST => Frame::Request(id, serde_json::from_slice(&head).map_err(json)?, body),
            RESPONSE => Frame::Response(id, serde_json::from_slice(&head).map_err(json)?, body),
            PROMISE => Frame::Promise(serde_json::from_slice(&head).map_err(json)?),
            PUSH => Frame::Push(serde_json::from_slice(&head).map_err(json)?, body),
            CANCEL => Frame::Cancel(serde_json::from_slice(&head).map_err(json)?),
            k => return Err(bad(format!("a frame of unknown kind {k}"))),
        }))
    }
}

/// Writes the frames queued on `rx` to `w` until the queue closes or a
/// write fails. What is queued together goes in one write: a page's
/// promises are dozens of small frames, and sent one segment each they
/// would spend the tunnel's congestion window (counted in segments) before
/// the pushes that follow them.
pub async fn write_queued(mut w: impl AsyncWrite + Unpin, mut rx: mpsc::UnboundedReceiver<Vec<u8>>) -> std::io::Result<()> {
    while let Some(mut buf) = rx.recv().await {
        while buf.len() < 1 << 20 {
            match rx.try_recv() {
                Ok(more) => buf.extend(more),
                Err(_) => break,
            }
        }
        w.write_all(&buf).await?;
    }
    Ok(())
}

fn bad(m: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames() -> Vec<Frame> {
        let head = Head { status: 200, headers: vec![("content-type".into(), "text/html".into())] };
        vec![
            Frame::Request(
                7,
                Request { dest: "198.18.2.2:80".parse().unwrap(), method: "GET".into(), target: "/page.html?spec=2x1KB".into(), headers: vec![("host".into(), "www.test".into())] },
                vec![],
            ),
            Frame::Response(7, head.clone(), b"<img src=\"/a\">".to_vec()),
            Frame::Promise("www.test/a".into()),
            Frame::Push(Pushed { key: "www.test/a".into(), head }, vec![0u8; 70_000]),
            Frame::Cancel("www.test/b".into()),
        ]
    }

    #[tokio::test]
    async fn frames_read_back_as_written_one_after_another() {
        let mut bytes = Vec::new();
        for f in frames() {
            bytes.extend(f.encode());
        }
        let mut r = &bytes[..];
        for f in frames() {
            assert_eq!(Frame::read(&mut r).await.unwrap(), Some(f));
        }
        assert_eq!(Frame::read(&mut r).await.unwrap(), None);
    }

    #[tokio::test]
    async fn queued_frames_go_out_together_and_in_order() {
        let (tx, rx) = mpsc::unbounded_channel();
        for f in frames() {
            tx.send(f.encode()).unwrap();
        }
        drop(tx);
        let mut out = Vec::new();
        write_queued(&mut out, rx).await.unwrap();
        let mut r = &out[..];
        for f in frames() {
            assert_eq!(Frame::read(&mut r).await.unwrap(), Some(f));
        }
    }

    #[tokio::test]
    async fn a_cut_or_oversized_frame_is_an_error_not_a_hang() {
        let bytes = frames()[1].encode();
        let mut cut = &bytes[..bytes.len() - 3];
        assert!(Frame::read(&mut cut).await.is_err());
        let mut huge = vec![PUSH];
        huge.extend(0u32.to_be_bytes());
        huge.extend(2u32.to_be_bytes());
        huge.extend((MAX_BODY + 1).to_be_bytes());
        let e = Frame::read(&mut &huge[..]).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        let mut odd = frames()[2].encode();
        odd[0] = 9;
        assert!(Frame::read(&mut &odd[..]).await.unwrap_err().to_string().contains("unknown kind 9"));
    }
}
