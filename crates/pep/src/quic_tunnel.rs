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
//!   arrives (5 s), the ground half serves nothing; a wrong one closes the
//!   connection with code 1 and is logged.
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

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ring::hmac;
use tokio::net::TcpStream;

use crate::relay::{self, Counters, Stats};

pub const ALPN: &[u8] = b"aerolink-tunnel/1";
pub const DEFAULT_PORT: u16 = 4433;
const EXPORT_LABEL: &[u8] = b"EXPORTER-aerolink-tunnel";
const AUTH_TIMEOUT: Duration = Duration::from_secs(5);
/// Application close codes.
const CLOSE_UNAUTHENTICATED: u32 = 1;
const CLOSE_SHUTDOWN: u32 = 0;

pub const TUNNEL_CCS: &[&str] = &["cubic", "newreno", "bbr", "rate"];

/// How the tunnel's QUIC connection is tuned (both halves use the same).
#[derive(Clone, Debug)]
pub struct Tuning {
    /// Windows and initial window (a preset of [`aerolink_work::quic`]);
    /// its `cc` is `cubic`, `newreno`, `bbr` or `rate`.
    pub knobs: aerolink_work::quic::QuicKnobs,
    /// The rate the `rate` controller holds, bit/s.
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
    /// `None`: stock behaviour.
    pub max_probe_timeout: Option<Duration>,
}

impl Tuning {
    fn transport(&self) -> anyhow::Result<quinn::TransportConfig> {
        let mut k = self.knobs.clone();
        let rate = k.cc == "rate";
        if rate {
            k.cc = "cubic".into();
        }
        let mut t = k.transport().map_err(anyhow::Error::msg)?;
        if rate {
            let rate_bps = self.rate_bps.ok_or_else(|| anyhow::anyhow!("the rate controller needs a rate (--rate)"))?;
            t.congestion_controller_factory(Arc::new(crate::rate_cc::RateConfig { rate_bps }));
        }
        t.max_probe_timeout(self.max_probe_timeout);
        t.max_idle_timeout(Some(self.idle_timeout.try_into().map_err(|_| anyhow::anyhow!("idle timeout {:?} is too long", self.idle_timeout))?));
        // Keep the tunnel warm (and NAT-proof) while no one uses it.
        t.keep_alive_interval(Some((self.idle_timeout / 4).min(Duration::from_secs(10))));
        t.max_concurrent_bidi_streams(quinn::VarInt::from_u32(8192));
        Ok(t)
    }
}

/// The default cap on the tunnel's probe backoff ([`Tuning::max_probe_timeout`]).
pub const DEFAULT_MAX_PROBE: &str = "2s";

/// Reads a probe cap: a duration above 0 (`2s`), or `off` for stock QUIC.
/// The error says what is allowed.
pub fn parse_max_probe(s: &str) -> Result<Option<Duration>, String> {
    if s == "off" {
        return Ok(None);
    }
    match aerolink_link::units::parse_duration(s) {
        Ok(d) if d.0 > 0 => Ok(Some(Duration::from_nanos(d.0))),
        Ok(_) => Err("expected more than 0, or off".into()),
        Err(m) => Err(format!("expected {m}, or off")),
    }
}

/// A pre-shared key: at least 16 bytes, written as hex in a file.
#[derive(Clone)]
pub struct Psk(Vec<u8>);

impl Psk {
    pub fn parse(text: &str) -> Result<Psk, String> {
        let t = text.trim();
        let bytes = (0..t.len()).step_by(2).map(|i| t.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect::<Option<Vec<u8>>>();
        match bytes {
            Some(b) if t.len().is_multiple_of(2) && b.len() >= 16 => Ok(Psk(b)),
            _ => Err("expected at least 16 bytes written as hex (make one with `aerolink pep keygen`)".into()),
        }
    }

    /// 32 random bytes as hex.
    pub fn generate() -> String {
        use ring::rand::SecureRandom;
        let mut b = [0u8; 32];
        ring::rand::SystemRandom::new().fill(&mut b).expect("the system's random source");
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn key(&self, purpose: &[u8]) -> hmac::Key {
        let k = hmac::Key::new(hmac::HMAC_SHA256, &self.0);
        hmac::Key::new(hmac::HMAC_SHA256, hmac::sign(&k, purpose).as_ref())
    }

    /// What a half signs: who it is, and 32 bytes exported from this very
    /// TLS session.
    fn message(who: &[u8], conn: &quinn::Connection) -> Option<Vec<u8>> {
        let mut e = [0u8; 32];
        conn.export_keying_material(&mut e, EXPORT_LABEL, b"").ok()?;
        Some([who, &e].concat())
    }

    fn proof(&self, who: &[u8], conn: &quinn::Connection) -> anyhow::Result<hmac::Tag> {
        let msg = Self::message(who, conn).ok_or_else(|| anyhow::anyhow!("exporting keying material"))?;
        Ok(hmac::sign(&self.key(b"auth"), &msg))
    }

    fn verify(&self, who: &[u8], conn: &quinn::Connection, tag: &[u8]) -> bool {
        Self::message(who, conn).is_some_and(|msg| hmac::verify(&self.key(b"auth"), &msg, tag).is_ok())
    }

    fn endpoint_config(&self) -> quinn::EndpointConfig {
        let mut c = quinn::EndpointConfig::new(Arc::new(self.key(b"stateless reset")));
        // Connection IDs carry a check keyed from the PSK too: a restarted
        // ground gateway must recognise its predecessor's IDs as its own to
        // answer them with a stateless reset (it drops foreign ones).
        let cid_key = u64::from_be_bytes(hmac::sign(&self.key(b"connection ids"), b"").as_ref()[..8].try_into().expect("8 bytes"));
        c.cid_generator(move || Box::new(quinn_proto::HashedConnectionIdGenerator::from_key(cid_key)));
        // Both ends are ours: a packet without QUIC's fixed bit is garbage.
        c.grease_quic_bit(false);
        c
    }
}

fn log(msg: impl std::fmt::Display) {
    eprintln!("quic-tunnel: {msg}");
}

fn encode_dest(d: SocketAddr) -> Vec<u8> {
    let mut v = vec![1u8];
    match d.ip() {
        IpAddr::V4(a) => {
            v.push(4);
            v.extend_from_slice(&a.octets());
        }
        IpAddr::V6(a) => {
            v.push(6);
            v.extend_from_slice(&a.octets());
        }
    }
    v.extend_from_slice(&d.port().to_be_bytes());
    v
}

async fn read_dest(r: &mut quinn::RecvStream) -> anyhow::Result<SocketAddr> {
    let mut head = [0u8; 2];
    r.read_exact(&mut head).await?;
    anyhow::ensure!(head[0] == 1, "unknown stream header version {}", head[0]);
    let ip = match head[1] {
        4 => {
            let mut a = [0u8; 4];
            r.read_exact(&mut a).await?;
            IpAddr::from(a)
        }
        6 => {
            let mut a = [0u8; 16];
            r.read_exact(&mut a).await?;
            IpAddr::from(a)
        }
        f => anyhow::bail!("unknown address family {f}"),
    };
    let mut p = [0u8; 2];
    r.read_exact(&mut p).await?;
    Ok(SocketAddr::new(ip, u16::from_be_bytes(p)))
}

// ---------------------------------------------------------------- ground

pub struct GroundOptions {
    pub listen: SocketAddr,
    pub psk: Psk,
    pub tuning: Tuning,
    /// Congestion control and initial window of the onward TCP connections.
    pub tcp_cc: String,
    pub initcwnd: Option<u32>,
}

/// Serves air gateways until `stop` resolves.
pub async fn ground(opts: GroundOptions, stop: impl std::future::Future<Output = ()>, ready: impl FnOnce()) -> anyhow::Result<Stats> {
    anyhow::ensure!(aerolink_work::sock::TCP_CCS.contains(&opts.tcp_cc.as_str()), "--tcp-cc {}: expected one of {}", opts.tcp_cc, aerolink_work::sock::TCP_CCS.join(", "));
    let tls = aerolink_work::tls::server_config(&[ALPN])?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(quinn::crypto::rustls::QuicServerConfig::try_from(tls)?));
    server.transport_config(Arc::new(opts.tuning.transport()?));
    let sock = std::net::UdpSocket::bind(opts.listen).map_err(|e| anyhow::anyhow!("binding {}: {e}", opts.listen))?;
    let counters = Arc::new(Counters::default());
    let ep = endpoint(&opts.psk, Some(server), sock, counters.clone())?;
    let routes = match opts.initcwnd {
        Some(n) => Some(crate::steering::InitialWindow::set("", n)?),
        None => None,
    };
    let psk = Arc::new(opts.psk);
    ready();
    let accept = async {
        while let Some(inc) = ep.accept().await {
            let (counters, psk, cc) = (counters.clone(), psk.clone(), opts.tcp_cc.clone());
            tokio::spawn(async move {
                let remote = inc.remote_address();
                match inc.await {
                    Ok(conn) => serve_air(conn, &psk, &cc, &counters).await,
                    Err(e) => {
                        counters.refused.fetch_add(1, Ordering::Relaxed);
                        log(format!("refused {remote}: handshake failed: {e}"));
                    }
                }
            });
        }
    };
    tokio::select! {
        _ = accept => {}
        _ = stop => {}
    }
    relay::drain(&counters, relay::DRAIN).await;
    ep.close(quinn::VarInt::from_u32(CLOSE_SHUTDOWN), b"ground gateway stopping");
    drop(routes);
    Ok(counters.snapshot())
}

/// One air gateway's connection: prove the key, then a TCP connection per
/// stream.
async fn serve_air(conn: quinn::Connection, psk: &Psk, cc: &str, counters: &Arc<Counters>) {
    let remote = conn.remote_address();
    let auth = async {
        let (mut send, mut recv) = conn.accept_bi().await?;
        let mut tag = [0u8; 32];
        recv.read_exact(&mut tag).await?;
        anyhow::ensure!(psk.verify(b"air", &conn, &tag), "wrong key");
        send.write_all(psk.proof(b"ground", &conn)?.as_ref()).await?;
        send.finish()?;
        Ok(())
    };
    match tokio::time::timeout(AUTH_TIMEOUT, auth).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return refuse(&conn, counters, format!("refused {remote}: {e}")),
        Err(_) => return refuse(&conn, counters, format!("refused {remote}: no key proof within {AUTH_TIMEOUT:?}")),
    }
    counters.tunnels.fetch_add(1, Ordering::Relaxed);
    log(format!("air gateway {remote} authenticated"));
    loop {
        let (send, recv) = match conn.accept_bi().await {
            Ok(s) => s,
            Err(e) => {
                log(format!("tunnel from {remote} ended: {e}"));
                return;
            }
        };
        let (counters, cc) = (counters.clone(), cc.to_string());
        tokio::spawn(async move {
            counters.connections.fetch_add(1, Ordering::Relaxed);
            let _active = relay::Active::new(&counters);
            let _ = ground_stream(send, recv, &cc, &counters).await;
        });
    }
}

fn refuse(conn: &quinn::Connection, counters: &Counters, msg: String) {
    counters.refused.fetch_add(1, Ordering::Relaxed);
    log(msg);
    conn.close(quinn::VarInt::from_u32(CLOSE_UNAUTHENTICATED), b"unauthenticated");
}

async fn ground_stream(mut send: quinn::SendStream, mut recv: quinn::RecvStream, cc: &str, counters: &Counters) -> anyhow::Result<()> {
    let dest = read_dest(&mut recv).await?;
    let tcp = match relay::connect(dest, cc, Duration::from_secs(10)).await {
        Ok(t) => t,
        Err(e) => {
            counters.failed.fetch_add(1, Ordering::Relaxed);
            send.write_all(&[1]).await?;
            send.finish()?;
            let _ = recv.stop(quinn::VarInt::from_u32(1));
            return Err(e);
        }
    };
    send.write_all(&[0]).await?;
    let (mut tr, mut tw) = tcp.into_split();
    let r = relay::both_ways(relay::pump(&mut recv, &mut tw, &counters.bytes_up), relay::pump(&mut tr, &mut send, &counters.bytes_down)).await;
    if let Err(e) = &r {
        // One side broke: break the other too, so neither end hangs.
        counters.broke("quic-tunnel ground", dest, e);
        relay::reset(tr.as_ref());
        let _ = send.reset(quinn::VarInt::from_u32(1));
        let _ = recv.stop(quinn::VarInt::from_u32(1));
    }
    Ok(r?)
}

// ------------------------------------------------------------------- air

pub struct AirOptions {
    /// The interface facing the clients.
    pub from: String,
    pub port: u16,
    /// The ground gateway's tunnel address.
    pub ground: SocketAddr,
    pub psk: Psk,
    pub tuning: Tuning,
}

struct Air {
    ep: quinn::Endpoint,
    ground: SocketAddr,
    psk: Psk,
    conn: tokio::sync::Mutex<Option<quinn::Connection>>,
    counters: Arc<Counters>,
}

impl Air {
    /// The tunnel, opened (and authenticated) if there is none or the last
    /// one ended.
    async fn tunnel(&self) -> anyhow::Result<quinn::Connection> {
        let mut g = self.conn.lock().await;
        if let Some(c) = g.as_ref() {
            if c.close_reason().is_none() {
                return Ok(c.clone());
            }
        }
        let c = tokio::time::timeout(Duration::from_secs(10), self.open()).await.map_err(|_| anyhow::anyhow!("no answer from the ground gateway {} within 10 s", self.ground))??;
        self.counters.tunnels.fetch_add(1, Ordering::Relaxed);
        log(format!("tunnel to {} up", self.ground));
        let (watch, ground) = (c.clone(), self.ground);
        tokio::spawn(async move {
            let why = watch.closed().await;
            log(format!("tunnel to {ground} ended: {why}"));
        });
        *g = Some(c.clone());
        Ok(c)
    }

    async fn open(&self) -> anyhow::Result<quinn::Connection> {
        let conn = self.ep.connect(self.ground, aerolink_work::tls::SERVER_NAME)?.await.map_err(|e| anyhow::anyhow!("connecting to the ground gateway {}: {e}", self.ground))?;
        let (mut send, mut recv) = conn.open_bi().await?;
        send.write_all(self.psk.proof(b"air", &conn)?.as_ref()).await?;
        send.finish()?;
        let mut tag = [0u8; 32];
        recv.read_exact(&mut tag).await.map_err(|e| anyhow::anyhow!("the ground gateway {} refused the tunnel: {e}", self.ground))?;
        if !self.psk.verify(b"ground", &conn, &tag) {
            conn.close(quinn::VarInt::from_u32(CLOSE_UNAUTHENTICATED), b"unauthenticated");
            anyhow::bail!("the ground gateway {} did not prove the key: refusing it", self.ground);
        }
        Ok(conn)
    }

    async fn carry(&self, client: TcpStream) -> anyhow::Result<()> {
        let dest = client.local_addr()?;
        let opened = async {
            let conn = self.tunnel().await?;
            let (mut send, recv) = conn.open_bi().await?;
            send.write_all(&encode_dest(dest)).await?;
            anyhow::Ok((send, recv))
        };
        let (mut send, mut recv) = match opened.await {
            Ok(s) => s,
            Err(e) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                relay::reset(&client);
                return Err(e);
            }
        };
        // The client's first bytes go at once, behind the header, without
        // waiting for the ground half to connect: the tunnel adds no round
        // trip to a connection's setup. The answer comes first on the way
        // back.
        let (mut cr, mut cw) = client.into_split();
        let down = async {
            let mut st = [0u8; 1];
            recv.read_exact(&mut st).await.map_err(std::io::Error::other)?;
            if st[0] != 0 {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                return Err(std::io::Error::other(format!("the ground gateway could not reach {dest}")));
            }
            relay::pump(&mut recv, &mut cw, &self.counters.bytes_down).await
        };
        let r = relay::both_ways(relay::pump(&mut cr, &mut send, &self.counters.bytes_up), down).await;
        if let Err(e) = &r {
            // The tunnel or the far end broke: the client gets a reset, the
            // stream is abandoned both ways.
            self.counters.broke("quic-tunnel air", dest, e);
            relay::reset(cr.as_ref());
            let _ = send.reset(quinn::VarInt::from_u32(1));
            let _ = recv.stop(quinn::VarInt::from_u32(1));
        }
        Ok(r?)
    }
}

/// Installs the interception, opens the tunnel, serves until `stop`
/// resolves, removes the interception.
pub async fn air(opts: AirOptions, stop: impl std::future::Future<Output = ()>, ready: impl FnOnce()) -> anyhow::Result<Stats> {
    let tls = aerolink_work::tls::client_config(&[ALPN])?;
    let mut client = quinn::ClientConfig::new(Arc::new(quinn::crypto::rustls::QuicClientConfig::try_from(tls)?));
    client.transport_config(Arc::new(opts.tuning.transport()?));
    let bind: SocketAddr = if opts.ground.is_ipv6() { "[::]:0".parse()? } else { "0.0.0.0:0".parse()? };
    let sock = std::net::UdpSocket::bind(bind)?;
    let counters = Arc::new(Counters::default());
    let mut ep = endpoint(&opts.psk, None, sock, counters.clone())?;
    ep.set_default_client_config(client);
    let air = Arc::new(Air { ep: ep.clone(), ground: opts.ground, psk: opts.psk, conn: tokio::sync::Mutex::new(None), counters: counters.clone() });
    // The tunnel is long-lived: open it before taking any client, so no
    // client pays for its handshake.
    air.tunnel().await?;
    let listeners = relay::Listeners::bind(opts.port)?;
    let guard = crate::steering::Interception::install(&opts.from, opts.port, None)?;
    ready();
    let handle = move |c: TcpStream| {
        let air = air.clone();
        async move {
            air.counters.connections.fetch_add(1, Ordering::Relaxed);
            let _active = relay::Active::new(&air.counters);
            let _ = air.carry(c).await;
        }
    };
    tokio::select! {
        _ = listeners.serve(handle) => {}
        _ = stop => {}
    }
    drop(guard);
    relay::drain(&counters, relay::DRAIN).await;
    ep.close(quinn::VarInt::from_u32(CLOSE_SHUTDOWN), b"air gateway stopping");
    Ok(counters.snapshot())
}

// ------------------------------------------------------ garbage screening

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
fn not_quic(d: &[u8]) -> Option<&'static str> {
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
fn endpoint(psk: &Psk, server: Option<quinn::ServerConfig>, sock: std::net::UdpSocket, counters: Arc<Counters>) -> anyhow::Result<quinn::Endpoint> {
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
    fn keys_are_hex_of_at_least_16_bytes() {
        assert!(Psk::parse(&Psk::generate()).is_ok());
        assert_eq!(Psk::parse("00112233445566778899aabbccddeeff\n").map(|p| p.0.len()), Ok(16));
        assert!(Psk::parse("00112233445566778899aabbccddee").is_err(), "15 bytes");
        assert!(Psk::parse("00112233445566778899aabbccddeeff0").is_err(), "odd length");
        assert!(Psk::parse("zz112233445566778899aabbccddeeff").is_err(), "not hex");
        assert_ne!(Psk::generate(), Psk::generate());
    }

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
    fn destinations_are_encoded_with_family_and_port() {
        for d in ["198.18.2.2:443", "[2001:2:0:2::2]:5201"] {
            let d: SocketAddr = d.parse().unwrap();
            let enc = encode_dest(d);
            assert_eq!(enc[0], 1);
            assert_eq!(enc[1], if d.is_ipv4() { 4 } else { 6 });
            assert_eq!(u16::from_be_bytes([enc[enc.len() - 2], enc[enc.len() - 1]]), d.port());
        }
    }
}
