//! Garbage screening on the tunnel's UDP socket, and the endpoint built on
//! it.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{log, Psk};
use crate::relay::Counters;
use crate::error::Result;

/// The tunnel's UDP socket, screened: datagrams that cannot be QUIC v1 from
/// our peers (fixed bit clear — we turned greasing off —, an unknown
/// version, a header too short to hold our connection IDs) are dropped and
/// logged before quinn sees them. Quinn would drop them too, silently; this
/// way an operator sees someone is knocking.
#[derive(Debug)]
struct Screened {
    inner: Arc<dyn quinn::AsyncUdpSocket>,
    counters: Arc<Counters>,
}

/// Why a datagram cannot be one of ours, if it cannot.
pub(crate) fn not_quic(d: &[u8]) -> Option<&'static str> {
    let first = *d.first()?;
    if first & 0x40 == 0 {
        return Some("no QUIC fixed bit");
    }
    if first & 0x80 != 0 {
        if d.len() < 7 {
            return Some("long header too short");
        }
        let version = u32::from_be_bytes([d[1], d[2], d[3], d[4]]);
        if version != 1 && version != 0 {
            return Some("not QUIC version 1");
        }
        if d[5] > 20 {
            return Some("connection ID too long");
        }
    } else if d.len() < 1 + 8 + 1 + 16 {
        // Short header: our 8-byte connection IDs, a packet number, an AEAD tag.
        return Some("short header too short");
    }
    None
}

impl quinn::AsyncUdpSocket for Screened {
    fn create_io_poller(self: Arc<Self>) -> std::pin::Pin<Box<dyn quinn::UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &quinn::udp::Transmit) -> std::io::Result<()> {
        self.inner.try_send(transmit)
    }

    fn poll_recv(&self, cx: &mut std::task::Context, bufs: &mut [std::io::IoSliceMut<'_>], meta: &mut [quinn::udp::RecvMeta]) -> std::task::Poll<std::io::Result<usize>> {
        loop {
            let n = match self.inner.poll_recv(cx, bufs, meta) {
                std::task::Poll::Ready(Ok(n)) => n,
                other => return other,
            };
            let mut kept = 0;
            for i in 0..n {
                let len = meta[i].len;
                if let Some(why) = not_quic(&bufs[i][..meta[i].stride.min(len)]) {
                    let k = self.counters.garbage.fetch_add(1, Ordering::Relaxed);
                    if k < 20 {
                        log(format!("dropped a {len}-byte datagram from {}: {why}{}", meta[i].addr, if k == 19 { " (no more of these will be logged)" } else { "" }));
                    }
                    continue;
                }
                if kept != i {
                    let (a, b) = bufs.split_at_mut(i);
                    a[kept][..len].copy_from_slice(&b[0][..len]);
                    meta[kept] = meta[i];
                }
                kept += 1;
            }
            if kept > 0 {
                return std::task::Poll::Ready(Ok(kept));
            }
            // All garbage: poll again, so the waker is registered.
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.inner.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

/// A quinn endpoint on `sock` whose received datagrams are screened.
pub(crate) fn endpoint(psk: &Psk, server: Option<quinn::ServerConfig>, sock: std::net::UdpSocket, counters: Arc<Counters>) -> Result<quinn::Endpoint> {
    use quinn::Runtime;
    let rt = Arc::new(quinn::TokioRuntime);
    let inner = rt.wrap_udp_socket(sock)?;
    let screened: Arc<dyn quinn::AsyncUdpSocket> = Arc::new(Screened { inner, counters });
    Ok(quinn::Endpoint::new_with_abstract_socket(psk.endpoint_config(), server, screened, rt)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screening_drops_what_cannot_be_quic_and_keeps_what_can() {
        assert_eq!(not_quic(&[0x00; 40]), Some("no QUIC fixed bit"));
        assert_eq!(not_quic(&[0xc0]), Some("long header too short"));
        assert_eq!(not_quic(&[0xc0, 0, 0, 0, 2, 8, 0, 0]), Some("not QUIC version 1"));
        assert_eq!(not_quic(&[0xc0, 0, 0, 0, 1, 21, 0, 0]), Some("connection ID too long"));
        assert_eq!(not_quic(&[0x40; 20]), Some("short header too short"));
        // An Initial of version 1 and a short-header packet of plausible size.
        let mut initial = vec![0xc0, 0, 0, 0, 1, 8];
        initial.resize(1200, 0);
        assert_eq!(not_quic(&initial), None);
        assert_eq!(not_quic(&[0x40; 60]), None);
    }
}
