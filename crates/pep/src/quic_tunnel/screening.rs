//! Screening on the tunnel's UDP socket, and the endpoint built on it:
//! garbage dropped; at the ground, Initials not keyed with our PSK dropped
//! before quinn answers them, and a source that keeps sending them ignored
//! for a while; at the air half, the ground host's "port unreachable"
//! noticed (a ground gateway that died).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{log, Psk};
use crate::error::Result;
use crate::relay::Counters;

/// Initials not keyed with our PSK a source may send per [`FAIL_WINDOW`]
/// before the ground ignores everything from it until the window ends.
pub(crate) const FAILS_PER_WINDOW: u32 = 10;
pub(crate) const FAIL_WINDOW: Duration = Duration::from_secs(60);
/// Sources tracked at once (a flood of spoofed ones clears the table).
const TRACKED: usize = 4096;

/// The ground's gate: which Initials get an answer.
pub(crate) struct Gate {
    psk: Psk,
    /// Checks the IDs the ground issued, which the air half's later
    /// Initials carry.
    ours: quinn_proto::HashedConnectionIdGenerator,
    /// Failed Initials per source in its current window.
    fails: Mutex<HashMap<IpAddr, (Instant, u32)>>,
    /// Initial connection IDs seen, and from where: a client resends its
    /// Initial with the same ID, a replay comes from elsewhere.
    seen: Mutex<HashMap<Vec<u8>, (SocketAddr, Instant)>>,
}

impl Gate {
    pub(crate) fn new(psk: Psk) -> Gate {
        let ours = quinn_proto::HashedConnectionIdGenerator::from_key(psk.cid_key());
        Gate { psk, ours, fails: Mutex::default(), seen: Mutex::default() }
    }

    /// Why an Initial from `from` must go unanswered, if it must.
    fn check(&self, from: SocketAddr, dcid: &[u8], now: Instant, unix_s: u64) -> Option<String> {
        use quinn_proto::ConnectionIdGenerator;
        if dcid.len() == self.ours.cid_len() && self.ours.validate(&quinn_proto::ConnectionId::new(dcid)).is_ok() {
            // After our first answer the air half addresses the ID we gave.
            return None;
        }
        let mut fails = self.fails.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((since, n)) = fails.get(&from.ip()) {
            if now.duration_since(*since) < FAIL_WINDOW && *n >= FAILS_PER_WINDOW {
                return Some(String::new());
            }
        }
        let why = match self.psk.check_initial_dcid(dcid, unix_s) {
            Err(why) => why.to_string(),
            Ok(()) => {
                let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
                seen.retain(|_, (_, t)| now.duration_since(*t) < 2 * super::auth::INITIAL_DCID_AGE);
                if seen.len() >= TRACKED {
                    seen.clear();
                }
                match seen.entry(dcid.to_vec()).or_insert((from, now)) {
                    (addr, _) if *addr == from => return None,
                    (addr, _) => format!("a replay of an Initial first sent from {addr}"),
                }
            }
        };
        if fails.len() >= TRACKED {
            fails.clear();
        }
        let e = fails.entry(from.ip()).or_insert((now, 0));
        if now.duration_since(e.0) >= FAIL_WINDOW {
            *e = (now, 0);
        }
        e.1 += 1;
        if e.1 == FAILS_PER_WINDOW {
            return Some(format!("{why}; ignoring {} for {} s", from.ip(), FAIL_WINDOW.as_secs()));
        }
        Some(why)
    }
}

/// What the air half's socket saw of the ground host: when a datagram last
/// came, and "port unreachable" answers (ms since `start`).
#[derive(Debug)]
pub(crate) struct Health {
    /// The socket, for its error queue (quinn's socket layer swallows the
    /// errors a send returns, and one of those may be the only sign).
    fd: std::sync::atomic::AtomicI32,
    start: Instant,
    last_rx_ms: AtomicU64,
    refused: AtomicU64,
    last_refused_ms: AtomicU64,
}

impl Health {
    pub(crate) fn new() -> Health {
        Health { fd: std::sync::atomic::AtomicI32::new(-1), start: Instant::now(), last_rx_ms: AtomicU64::new(0), refused: AtomicU64::new(0), last_refused_ms: AtomicU64::new(0) }
    }

    fn ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Whether the ground host has answered "port unreachable" at least
    /// `n` times, the last within `recent`, and nothing else came for
    /// `quiet`: its gateway is gone.
    pub(crate) fn ground_gone(&self, n: u64, recent: Duration, quiet: Duration) -> bool {
        let now = self.ms();
        self.refused.load(Ordering::Relaxed) >= n
            && now.saturating_sub(self.last_refused_ms.load(Ordering::Relaxed)) <= recent.as_millis() as u64
            && now.saturating_sub(self.last_rx_ms.load(Ordering::Relaxed)) >= quiet.as_millis() as u64
    }

    /// Reads the socket's error queue (IP_RECVERR): every "connection
    /// refused" in it (an ICMP port unreachable) counts.
    pub(crate) fn drain_errors(&self) {
        let fd = self.fd.load(Ordering::Relaxed);
        if fd < 0 {
            return;
        }
        loop {
            let mut data = [0u8; 64];
            let mut control = [0u64; 64];
            let mut iov = libc::iovec { iov_base: data.as_mut_ptr() as *mut libc::c_void, iov_len: data.len() };
            // SAFETY: zeroed msghdr is valid; the buffers outlive the call.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = std::mem::size_of_val(&control) as _;
            // SAFETY: fd is the endpoint's socket, open while the air half
            // runs; MSG_DONTWAIT never blocks.
            if unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) } < 0 {
                return;
            }
            // SAFETY: walking the control messages the kernel wrote.
            let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
            while !c.is_null() {
                let h = unsafe { &*c };
                if (h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_RECVERR) || (h.cmsg_level == libc::SOL_IPV6 && h.cmsg_type == libc::IPV6_RECVERR) {
                    // SAFETY: the kernel puts a sock_extended_err here.
                    let e = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::sock_extended_err) };
                    if e.ee_errno == libc::ECONNREFUSED as u32 {
                        self.refused.fetch_add(1, Ordering::Relaxed);
                        self.last_refused_ms.store(self.ms(), Ordering::Relaxed);
                    }
                }
                c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
            }
        }
    }

    /// Starts counting afresh (a new tunnel).
    pub(crate) fn reset(&self) {
        self.refused.store(0, Ordering::Relaxed);
    }
}

/// The first byte of a QUIC v1 Initial, and its destination connection ID.
pub fn initial_dcid(d: &[u8]) -> Option<&[u8]> {
    let first = *d.first()?;
    if first & 0x80 == 0 || (first >> 4) & 0x03 != 0 || d.len() < 6 || d[1..5] != [0, 0, 0, 1] {
        return None;
    }
    d.get(6..6 + d[5] as usize)
}

/// The tunnel's UDP socket, screened: datagrams that cannot be QUIC v1 from
/// our peers (fixed bit clear — we turned greasing off —, an unknown
/// version, a header too short to hold our connection IDs) are dropped and
/// logged before quinn sees them. Quinn would drop them too, silently; this
/// way an operator sees someone is knocking.
struct Screened {
    inner: Arc<dyn quinn::AsyncUdpSocket>,
    counters: Arc<Counters>,
    gate: Option<Gate>,
    health: Option<Arc<Health>>,
}

impl std::fmt::Debug for Screened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screened").field("inner", &self.inner).finish()
    }
}

impl Screened {
    fn refused(&self) {
        if let Some(h) = &self.health {
            h.refused.fetch_add(1, Ordering::Relaxed);
            h.last_refused_ms.store(h.ms(), Ordering::Relaxed);
        }
    }

    /// Why a datagram from `from` is dropped, if it is ("" = quietly).
    fn drop_reason(&self, d: &[u8], from: SocketAddr) -> Option<String> {
        if let Some(why) = not_quic(d) {
            self.counters.garbage.fetch_add(1, Ordering::Relaxed);
            return Some(why.to_string());
        }
        let gate = self.gate.as_ref()?;
        let dcid = initial_dcid(d)?;
        let unix_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let why = gate.check(from, dcid, Instant::now(), unix_s)?;
        self.counters.refused.fetch_add(1, Ordering::Relaxed);
        Some(why)
    }
}

/// Why a datagram cannot be one of ours, if it cannot.
pub fn not_quic(d: &[u8]) -> Option<&'static str> {
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
        // quinn-udp swallows every send error but WouldBlock, a "port
        // unreachable" among them: the error queue is how we see those.
        self.inner.try_send(transmit)
    }

    fn poll_recv(&self, cx: &mut std::task::Context, bufs: &mut [std::io::IoSliceMut<'_>], meta: &mut [quinn::udp::RecvMeta]) -> std::task::Poll<std::io::Result<usize>> {
        loop {
            let n = match self.inner.poll_recv(cx, bufs, meta) {
                std::task::Poll::Ready(Ok(n)) => n,
                // The ground host's "port unreachable" (IP_RECVERR): noted,
                // and not passed on — quinn would end the endpoint on it.
                std::task::Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused && self.health.is_some() => {
                    self.refused();
                    continue;
                }
                other => return other,
            };
            if let Some(h) = &self.health {
                h.last_rx_ms.store(h.ms(), Ordering::Relaxed);
            }
            let mut kept = 0;
            for i in 0..n {
                let len = meta[i].len;
                if let Some(why) = self.drop_reason(&bufs[i][..meta[i].stride.min(len)], meta[i].addr) {
                    let k = self.counters.garbage.load(Ordering::Relaxed) + self.counters.refused.load(Ordering::Relaxed);
                    if k <= 20 && !why.is_empty() {
                        log(format!("dropped a {len}-byte datagram from {}: {why}{}", meta[i].addr, if k == 20 { " (no more of these will be logged)" } else { "" }));
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

/// A quinn endpoint on `sock` whose received datagrams are screened: a
/// server's Initials through the PSK gate; a client's socket reports ICMP
/// errors (IP_RECVERR) to `health`.
pub(crate) fn endpoint(psk: &Psk, server: Option<quinn::ServerConfig>, sock: std::net::UdpSocket, counters: Arc<Counters>, health: Option<Arc<Health>>) -> Result<quinn::Endpoint> {
    use quinn::Runtime;
    use std::os::fd::AsRawFd;
    if health.is_some() {
        let on: libc::c_int = 1;
        let (level, opt) = if sock.local_addr()?.is_ipv6() { (libc::SOL_IPV6, libc::IPV6_RECVERR) } else { (libc::SOL_IP, libc::IP_RECVERR) };
        // SAFETY: a valid socket and a c_int option of the right size.
        if unsafe { libc::setsockopt(sock.as_raw_fd(), level, opt, &on as *const _ as *const libc::c_void, std::mem::size_of::<libc::c_int>() as libc::socklen_t) } != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        if let Some(h) = &health {
            h.fd.store(sock.as_raw_fd(), Ordering::Relaxed);
        }
    }
    quinn::set_transmit_batch(super::TRANSMIT_BATCH);
    let inner = quinn::TokioRuntime.wrap_udp_socket(sock)?;
    endpoint_over(psk, server, inner, counters, health)
}

/// The tunnel's endpoint over any datagram socket (the host's, or the
/// simulated link of the tests), screened and gated as [`endpoint`]'s.
pub(crate) fn endpoint_over(psk: &Psk, server: Option<quinn::ServerConfig>, inner: Arc<dyn quinn::AsyncUdpSocket>, counters: Arc<Counters>, health: Option<Arc<Health>>) -> Result<quinn::Endpoint> {
    let gate = server.is_some().then(|| Gate::new(psk.clone()));
    let screened: Arc<dyn quinn::AsyncUdpSocket> = Arc::new(Screened { inner, counters, gate, health });
    Ok(quinn::Endpoint::new_with_abstract_socket(psk.endpoint_config(), server, screened, Arc::new(quinn::TokioRuntime))?)
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

    #[test]
    fn the_gate_answers_initials_keyed_with_our_key_only_and_stops_listening_to_a_prober() {
        let psk = Psk::parse(&Psk::generate()).unwrap();
        let other = Psk::parse(&Psk::generate()).unwrap();
        let gate = Gate::new(psk.clone());
        let (t0, unix) = (Instant::now(), 1_800_000_000u64);
        let air: SocketAddr = "198.18.1.1:5000".parse().unwrap();
        let good = psk.initial_dcid(unix);
        assert_eq!(gate.check(air, &good, t0, unix + 3), None);
        // The same client resending its Initial is answered; the same ID
        // from elsewhere is a replay.
        assert_eq!(gate.check(air, &good, t0, unix + 4), None);
        let thief: SocketAddr = "198.18.3.3:6000".parse().unwrap();
        assert!(gate.check(thief, &good, t0, unix + 5).unwrap().contains("replay"));
        // Another key, an old ID, QUIC's usual random 8 bytes: refused.
        assert!(gate.check(air, &other.initial_dcid(unix), t0, unix).unwrap().contains("not keyed"));
        assert!(gate.check(air, &psk.initial_dcid(unix - 1000), t0, unix).unwrap().contains("too old"));
        assert!(gate.check(air, &[7u8; 8], t0, unix).unwrap().contains("not keyed"));
        // An ID the ground issued (the air half's next Initials carry it).
        use quinn_proto::ConnectionIdGenerator;
        let issued = quinn_proto::HashedConnectionIdGenerator::from_key(psk.cid_key()).generate_cid();
        assert_eq!(gate.check(air, &issued, t0, unix), None);
        // A prober's tenth failure in a minute silences it, even with a
        // good ID, until the minute is over.
        let prober: SocketAddr = "198.18.5.5:7000".parse().unwrap();
        for i in 1..FAILS_PER_WINDOW {
            assert!(!gate.check(prober, &[i as u8; 20], t0, unix).unwrap().is_empty());
        }
        assert!(gate.check(prober, &[0; 20], t0, unix).unwrap().contains("ignoring 198.18.5.5"));
        assert_eq!(gate.check(prober, &psk.initial_dcid(unix), t0, unix), Some(String::new()));
        assert_eq!(gate.check(prober, &psk.initial_dcid(unix), t0 + FAIL_WINDOW, unix), None);
    }

    #[test]
    fn initials_are_told_from_other_packets() {
        let mut p = vec![0xc0, 0, 0, 0, 1, 20];
        p.extend([9u8; 20]);
        p.resize(1200, 0);
        assert_eq!(initial_dcid(&p), Some(&[9u8; 20][..]));
        p[0] = 0xe0; // a Handshake packet
        assert_eq!(initial_dcid(&p), None);
        assert_eq!(initial_dcid(&[0x40; 60]), None);
    }
}
