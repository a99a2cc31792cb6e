//! TCP over one long-lived QUIC connection between the gateways (QPEP's
//! idea, with the pieces QPEP lacks: a tuned congestion controller, mutual
//! authentication, and survival of long outages).
//!
//! The **air** half intercepts the clients' TCP (TPROXY, as the split-TCP
//! proxy does) and carries each connection as one bidirectional stream of a
//! QUIC connection to the **ground** half, which opens the TCP connection to
//! the destination and relays. UDP — the clients' own QUIC included — is not
//! intercepted.
//!
//! Wire protocol (ALPN `aerolink-tunnel/1`):
//! - The first stream the air half opens proves the key: it sends
//!   HMAC-SHA256(psk, "air" ‖ E) where E is 32 bytes exported from this
//!   very TLS session (RFC 5705 keying material, label
//!   `EXPORTER-aerolink-tunnel`); the ground half answers with
//!   HMAC-SHA256(psk, "ground" ‖ E). Binding the proof to the session's
//!   exporter means a proof can be neither replayed nor relayed by a man in
//!   the middle (who would hold two different sessions). Until the proof
//!   arrives (up to 60 s: on Iridium it takes seconds), the ground half
//!   serves nothing; a wrong one closes the connection with code 1 and is
//!   logged.
//! - Every other stream is one TCP connection: the air half sends
//!   `[1][family 4|6][address][port, big-endian]`, the ground half answers
//!   one byte (0 connected, 1 failed) and then both relay until each side
//!   has closed.
//!
//! The stateless-reset key is derived from the pre-shared key, so a ground
//! gateway restarted with the same key resets the air half's stale
//! connection at its first packet (instead of letting it wait for the idle
//! timeout): clients see errors, not hangs, and the next connection opens a
//! new tunnel.
//!
//! Modules: [`auth`] (the key and its proofs), [`wire`] (the stream
//! header), [`ground`] and [`air`] (the halves), [`screening`] (garbage on
//! the tunnel's socket); `sim` (tests): both halves in simulated time.

pub mod air;
pub mod auth;
pub mod ground;
pub mod screening;
#[cfg(test)]
mod sim;
pub mod wire;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::{PepError, Result};
use aerolink_link::profile::DEFAULT_MTU;
use aerolink_work::quic::{Preset, QuicCc, QuicKnobs};

pub use air::{air, AirOptions};
pub use auth::Psk;
pub use ground::{ground, GroundOptions};

pub const ALPN: &[u8] = b"aerolink-tunnel/1";
pub const DEFAULT_PORT: u16 = 4433;
pub(crate) const EXPORT_LABEL: &[u8] = b"EXPORTER-aerolink-tunnel";
/// How long the ground waits for the air half's key proof: seconds on a
/// 2.4 kbit/s channel (nothing is served before it).
pub(crate) const AUTH_TIMEOUT: Duration = Duration::from_secs(60);
/// Application close codes.
pub(crate) const CLOSE_UNAUTHENTICATED: u32 = 1;
pub(crate) const CLOSE_SHUTDOWN: u32 = 0;

aerolink_work::choice! {
    /// The tunnel's congestion control: quinn's three, `rate`, our own
    /// controller that holds a set rate through random loss (SCPS-TP's idea),
    /// or `sat`, ours that starts at the path's rate and follows the
    /// delivery rate, random loss not taken as congestion
    /// ([`aerolink_work::satcc`]).
    pub enum TunnelCc { Cubic = "cubic", NewReno = "newreno", Bbr = "bbr", Rate = "rate", Sat = "sat" }
}

/// How the tunnel's QUIC connection is tuned (both halves use the same).
#[derive(Clone, Debug)]
pub struct Tuning {
    /// Windows and initial window (a preset of [`aerolink_work::quic`]).
    pub preset: Preset,
    pub cc: TunnelCc,
    /// The rate the `rate` controller holds, or the `sat` controller's
    /// first window (rate × RTT), bit/s.
    pub rate_bps: Option<u64>,
    /// How long the tunnel survives without hearing from its peer: an
    /// outage shorter than this resets nothing.
    pub idle_timeout: Duration,
    /// The longest the probe timeout may back off to (our patch of
    /// quinn-proto, see vendor/README.md). Stock QUIC doubles it without
    /// bound, so after an outage of T the next probe may come up to about T
    /// later; with a cap the tunnel finds the link back within the cap. With
    /// it set, an ACK the peer held longer than the cap (its earlier ACKs
    /// were lost in the outage) also gives no RTT sample, which would
    /// otherwise hold off loss detection for as long as the outage.
    pub max_probe_timeout: ProbeCap,
    /// A link monitor file the `rate` controller follows, and whether this
    /// half sends up (the air half) or down.
    pub rate_follow: Option<(std::path::PathBuf, bool)>,
}

impl Tuning {
    /// Checks the tuning and starts what its configurations share: the
    /// `rate` controller's setting, and the thread that follows a link
    /// monitor with it (one per process).
    fn transports(&self) -> Result<Transports> {
        let rate = match self.cc {
            TunnelCc::Rate => {
                let rate_bps = self.rate_bps.ok_or(PepError::Tuning("the rate controller needs a rate (--rate)"))?;
                let config = crate::rate_cc::RateConfig::fixed(rate_bps);
                if let Some((path, up)) = &self.rate_follow {
                    crate::rate_cc::follow(path.clone(), *up, config.rate_bps.clone());
                }
                Some(config)
            }
            _ => None,
        };
        Ok(Transports { tuning: self.clone(), rate })
    }
}

/// The tunnel's transport configurations: one per path, as they differ only
/// in how far path MTU discovery may go ([`Transports::for_route`]).
pub(crate) struct Transports {
    tuning: Tuning,
    rate: Option<crate::rate_cc::RateConfig>,
}

impl Transports {
    /// The configuration for a path whose first hop carries packets of up
    /// to `route_mtu` bytes ([`route_mtu`]). Above 1500 (jumbo frames)
    /// path MTU discovery may search up to it (at most [`MAX_DATAGRAM`]):
    /// fewer, larger datagrams cost less per byte. Otherwise it is quinn's,
    /// which stops at 1452 B, so an ordinary path sends no probe its first
    /// device would refuse.
    fn for_route(&self, route_mtu: Option<u32>) -> Result<quinn::TransportConfig> {
        let tuning = &self.tuning;
        let mut k = QuicKnobs::preset(tuning.preset);
        k.cc = match tuning.cc {
            TunnelCc::Cubic | TunnelCc::Rate => QuicCc::Cubic,
            TunnelCc::NewReno => QuicCc::NewReno,
            TunnelCc::Bbr => QuicCc::Bbr,
            TunnelCc::Sat => QuicCc::Sat,
        };
        if tuning.cc == TunnelCc::Sat {
            k.rate_bps = tuning.rate_bps;
        }
        let mut t = k.transport()?;
        // QLOGDIR: a qlog per tunnel connection (either half).
        t.qlog_per_connection(aerolink_work::quic::qlog_factory("tunnel"));
        if let Some(datagram) = route_mtu.filter(|m| *m > DEFAULT_MTU).map(|m| (m - IP_UDP_HEADERS).min(MAX_DATAGRAM as u32) as u16) {
            let mut mtu = quinn::MtuDiscoveryConfig::default();
            mtu.upper_bound(datagram);
            t.mtu_discovery_config(Some(mtu));
        }
        if let (Some(config), Some(rate_bps)) = (&self.rate, tuning.rate_bps) {
            t.congestion_controller_factory(Arc::new(config.clone()));
            // Bonded channels reorder packets by up to their delay spread:
            // detect loss by time only (twice the RTT), never by count.
            t.packet_threshold(u32::MAX);
            t.time_threshold(2.0);
            // Before the first RTT sample, assume the handshake's first
            // flight (4 full packets) takes its time at the rate: on a
            // 2.4 kbit/s channel a 1200 B packet is 4 s on the wire, and
            // quinn's 333 ms would fire probes that only fill the queue.
            t.initial_rtt(Duration::from_secs_f64((4.0 * 1200.0 * 8.0 / rate_bps as f64).max(0.333)));
        }
        // On a link so slow that a full packet takes seconds (Iridium), probe
        // no more often than two of them take: faster probes only queue.
        let floor = tuning.rate_bps.filter(|_| tuning.cc == TunnelCc::Rate).map(|r| Duration::from_secs_f64(2.0 * 1200.0 * 8.0 / r as f64));
        t.max_probe_timeout(tuning.max_probe_timeout.0.map(|cap| floor.map_or(cap, |f| cap.max(f))));
        t.max_idle_timeout(Some(tuning.idle_timeout.try_into().map_err(|_| PepError::Tuning("the idle timeout is too long"))?));
        // Keep the tunnel warm (and NAT-proof) while no one uses it.
        t.keep_alive_interval(Some((tuning.idle_timeout / 4).min(Duration::from_secs(10))));
        t.max_concurrent_bidi_streams(quinn::VarInt::from_u32(8192));
        Ok(t)
    }
}

/// The default cap on the tunnel's probe backoff ([`Tuning::max_probe_timeout`]).
pub const DEFAULT_MAX_PROBE: &str = "2s";

/// A cap on the tunnel's probe backoff: a duration above 0 (`2s`), or
/// `off` (`None`) for stock QUIC. Written and read as that text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeCap(pub Option<Duration>);

impl ProbeCap {
    /// [`DEFAULT_MAX_PROBE`].
    pub const DEFAULT: ProbeCap = ProbeCap(Some(Duration::from_secs(2)));
}

impl Default for ProbeCap {
    fn default() -> Self {
        ProbeCap::DEFAULT
    }
}

impl std::str::FromStr for ProbeCap {
    type Err = String;
    /// The error says what is allowed.
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "off" {
            return Ok(ProbeCap(None));
        }
        match aerolink_link::units::parse_duration(s) {
            Ok(d) if d.0 > 0 => Ok(ProbeCap(Some(Duration::from_nanos(d.0)))),
            Ok(_) => Err("expected more than 0, or off".into()),
            Err(m) => Err(format!("expected {m}, or off")),
        }
    }
}

impl std::fmt::Display for ProbeCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            None => f.write_str("off"),
            Some(d) if d.subsec_nanos() == 0 => write!(f, "{}s", d.as_secs()),
            Some(d) if d.as_nanos() % 1_000_000 == 0 => write!(f, "{}ms", d.as_millis()),
            Some(d) => write!(f, "{}ns", d.as_nanos()),
        }
    }
}

impl serde::Serialize for ProbeCap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for ProbeCap {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

pub(crate) fn log(msg: impl std::fmt::Display) {
    eprintln!("quic-tunnel: {msg}");
}

/// Datagrams per transmit (one GSO send) of the tunnel's connection: 40 ×
/// 1452 B still fits one 64 KB UDP send (with larger datagrams quinn sends
/// as many as fit); stock quinn sends 10. Measured by `aerolink bench pep`
/// (vendor/README.md has the figures).
pub(crate) const TRANSMIT_BATCH: usize = 40;

/// IPv6's and UDP's headers: what an MTU leaves for a datagram's payload
/// (IPv4's are smaller; one bound serves both).
const IP_UDP_HEADERS: u32 = 40 + 8;

/// The largest datagram the tunnel sends (UDP payload) when the path
/// carries it: a 9000-byte jumbo frame less [`IP_UDP_HEADERS`].
pub(crate) const MAX_DATAGRAM: u16 = (9000 - IP_UDP_HEADERS) as u16;

/// The MTU of the device the kernel would send to `peer` through (the
/// route's), asked of a UDP socket connected to it, which sends nothing;
/// `None` if there is no route.
pub(crate) fn route_mtu(peer: std::net::SocketAddr) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let peer = std::net::SocketAddr::new(peer.ip().to_canonical(), peer.port());
    let (bind, level, name) = match peer {
        std::net::SocketAddr::V4(_) => (std::net::SocketAddr::from(([0u8; 4], 0)), libc::IPPROTO_IP, libc::IP_MTU),
        std::net::SocketAddr::V6(_) => (std::net::SocketAddr::from(([0u16; 8], 0)), libc::IPPROTO_IPV6, libc::IPV6_MTU),
    };
    let sock = std::net::UdpSocket::bind(bind).ok()?;
    sock.connect(peer).ok()?;
    let mut mtu: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: an int-sized option read into an int of our own, on a socket we hold.
    let r = unsafe { libc::getsockopt(sock.as_raw_fd(), level, name, (&mut mtu as *mut libc::c_int).cast(), &mut len) };
    (r == 0 && mtu > 0).then_some(mtu as u32)
}

/// Reads of a TCP connection go into blocks of this size, handed to quinn
/// as they are (no copy into its send buffer).
const READ_BLOCK: usize = 64 * 1024;
/// A read asks for at least this much room in the current block, so a
/// block that small reads share is pinned by at most this much waste while
/// quinn holds its chunks (until they are acknowledged).
const READ_MIN: usize = 16 * 1024;

/// Relays a TCP connection's bytes into a tunnel stream until end of
/// stream, counting into `counter`, then finishes the stream. The bytes read
/// are given to quinn as they are (`write_chunk`), not copied into it.
pub(crate) async fn tcp_to_stream<R: AsyncRead + Unpin>(mut from: R, to: &mut quinn::SendStream, counter: &AtomicU64) -> std::io::Result<()> {
    let mut buf = bytes::BytesMut::new();
    loop {
        if buf.capacity() < READ_MIN {
            buf = bytes::BytesMut::with_capacity(READ_BLOCK);
        }
        let n = from.read_buf(&mut buf).await?;
        if n == 0 {
            break;
        }
        to.write_chunk(buf.split().freeze()).await?;
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }
    // Finishing can only fail when the stream is gone already (reset or
    // stopped); then there is nothing left to tell.
    let _ = to.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_caps_read_and_write_as_text() {
        assert_eq!(DEFAULT_MAX_PROBE.parse::<ProbeCap>(), Ok(ProbeCap::DEFAULT));
        for s in ["2s", "off", "500ms", "1500ns"] {
            assert_eq!(s.parse::<ProbeCap>().unwrap().to_string(), s);
        }
        assert_eq!("1.5 s".parse::<ProbeCap>().unwrap().to_string(), "1500ms");
        assert!("0s".parse::<ProbeCap>().is_err());
        assert!("soon".parse::<ProbeCap>().unwrap_err().contains("or off"));
    }
}
