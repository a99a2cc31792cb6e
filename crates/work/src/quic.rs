//! QUIC knobs and presets, and quinn endpoints built from them.
//!
//! Seed 003 tuned quic-go; our QUIC stack is quinn. The mapping:
//!
//! | seed 003 (quic-go)                        | default | h-bdp1 | h-bdp2 | quinn knob |
//! |-------------------------------------------|---------|--------|--------|------------|
//! | InitialCongestionWindow (packets)         | 32      | 120    | 32     | `initial_window` = packets × 1252 B (quic-go's initial packet size) |
//! | InitialMaxStreamData                      | 512 KB  | 6000 KB| 6000 KB| none: where quic-go's stream window starts its auto-tuning; quinn does not auto-tune |
//! | DefaultMaxReceiveStreamFlowControlWindow  | 6 MB    | 12 MB  | 12 MB  | `stream_receive_window`: the most auto-tuning reaches, given from the start |
//! | (DefaultMaxReceiveConnectionFlowControlWindow, not in the seed's table) | 15 MB | 18 MB | 18 MB | `receive_window` (connection): quic-go's 15 MB, 1.5 × the stream's for the tuned presets |
//! | DefaultMaxCongestionWindowPackets         | 1000    | 2500   | 2500   | `Capped` over the controller (quinn has no cap) |
//! | MaxTrackedSkippedPackets / SentPackets    | 10/2500 | 50/10000 | 50/10000 | none: quinn sizes these itself |
//! | MinPacingDelay                            | 100 µs  | 10 µs  | 10 µs  | `pacing_burst_interval` = MinPacingDelay + 1 ms (patched quinn-proto) |
//! | which ACKs grow the window (`isCwndLimited`) | —     | —      | —      | `window_limited_by_flight` with `window_growth` quic-go (patched quinn-proto); the presets keep quinn's rule |
//!
//! Both ends apply the same knobs: the receive windows a peer advertises are
//! what limit the other's sending. `quinn` is quinn's own defaults.
//!
//! `sat` is ours, for GEO paths (650 ms, up to 250 Mbit/s, random loss):
//! the [`crate::satcc`] controller started at `--quic-rate` × RTT, 64 MB
//! windows, an ACK every 10 packets asked of the peer (ACK frequency
//! extension), 1452-byte packets from the start. docs/guide.md §5 gives the
//! reasons and `aerolink bench sat-targets` the figures.

use std::sync::Arc;
use std::time::Duration;

use quinn_proto::congestion::{Controller, ControllerFactory};

use serde::{Deserialize, Serialize};

use crate::error::{Result, WorkError};

mod args;
pub use args::{parse_pacing_gain, parse_pacing_us, parse_rate_bps, QuicArgs};

/// Bytes per packet when a window is given in packets (quic-go's initial
/// packet size).
pub const PACKET_BYTES: u64 = 1252;

/// The pacing gains accepted (`--quic-pacing-gain`, `quic_pacing_gain`),
/// windows per RTT: a pacer slower than the window would leave it unused.
pub const PACING_GAIN: std::ops::RangeInclusive<f64> = 1.0..=10.0;

/// The window units accepted (`--quic-window-unit`, `quic_window_unit`),
/// bytes per packet: QUIC's least datagram to a jumbo frame.
pub const WINDOW_UNIT_BYTES: std::ops::RangeInclusive<u64> = 1200..=9000;

/// `sat` preset: initial window (packets) when no path rate is given.
pub const SAT_IW: u64 = 32;
/// `sat` preset: stream and connection windows, bytes. They must never
/// bind: 250 Mbit/s × 650 ms is 20 MB in flight, and at 1 % loss the
/// receiver holds about another round trip of data behind each hole.
pub const SAT_WINDOW: u64 = 64_000_000;
/// `sat` preset: packets per ACK asked of the peer. At 250 Mbit/s down an
/// ACK every 2 packets is 10 800 ACKs/s, about 5 Mbit/s: more than a
/// 3 Mbit/s return link has.
pub const SAT_ACK_EVERY: u64 = 10;
/// `sat` preset: the first packets are full-size for a 1500-byte MTU
/// (1452 fits IPv6 too), not 1200 B until discovery, which takes round
/// trips a short transfer does not have at 650 ms.
pub const SAT_MTU: u16 = 1452;

crate::choice! {
    /// quinn's congestion controllers; `gquic` is quinn's Cubic emulating
    /// two connections (loss reduction to 0.85, TCP-friendly growth four
    /// times faster), as Chromium's gQUIC of 2016 did (seed 000's QUIC).
    pub enum QuicCc { Cubic = "cubic", NewReno = "newreno", Bbr = "bbr", Sat = "sat", Gquic = "gquic" }
}

crate::choice! {
    /// Which ACKs may grow the congestion window. `quinn`: none that arrive
    /// after the sender last ran out of data (so the ACKs of a short
    /// response, arriving while it waits for the next request, never do).
    /// `quic-go`: those that find the sender window-limited as quic-go's
    /// `isCwndLimited` judges it from the bytes in flight (more than half
    /// the window in slow start; Linux's TCP is alike).
    pub enum WindowGrowth { Quinn = "quinn", QuicGo = "quic-go" }
}

crate::choice! {
    /// Windows and initial window: quinn's own defaults, seed 003's
    /// quic-go settings (table above), or `sat`, ours for long, fat, lossy
    /// paths (below).
    pub enum Preset { Quinn = "quinn", Default = "default", HBdp1 = "h-bdp1", HBdp2 = "h-bdp2", Sat = "sat" }
}

/// The QUIC settings of a run, resolved: a preset's values with any
/// explicit changes on top. Stored with every result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuicKnobs {
    /// The preset the values started from.
    pub preset: Preset,
    pub cc: QuicCc,
    pub initial_window_packets: Option<u64>,
    pub stream_window_bytes: Option<u64>,
    pub conn_window_bytes: Option<u64>,
    /// The path's rate in the direction this end sends, bit/s (cc `sat`:
    /// the first window is this rate × RTT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<u64>,
    /// Ask the peer to acknowledge every N ack-eliciting packets (the ACK
    /// frequency extension; quinn's default is 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_every: Option<u64>,
    /// First UDP payload size tried, bytes (quinn starts at 1200 and
    /// discovers more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_mtu: Option<u16>,
    /// A cap on the congestion window, packets of 1252 B (quic-go's
    /// DefaultMaxCongestionWindowPackets; quinn has none of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cwnd_packets: Option<u64>,
    /// The pacer's burst interval, µs: bursts of this long at the current
    /// rate (quinn's 2000; quic-go's MinPacingDelay + its 1 ms timer
    /// granularity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_interval_us: Option<u64>,
    /// Which ACKs grow the window; `None` is quinn's own rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_growth: Option<WindowGrowth>,
    /// The pacer's rate in windows per RTT (quinn's 1.25; quic-go up to
    /// v0.14 spaced its 1252 B packets RTT × 1460 B / (2 × window) apart,
    /// 1.715; v0.15 to v0.17 RTT × 1252 B / (2 × window), 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_gain: Option<f64>,
    /// Bytes per packet of the windows given in packets (initial window,
    /// cap); `None`: [`PACKET_BYTES`], quic-go's from v0.15 (2020). quic-go
    /// up to v0.14 (2019) counted them in TCP's 1460 B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_unit_bytes: Option<u64>,
}

impl Default for QuicKnobs {
    fn default() -> Self {
        QuicKnobs::preset(Preset::Quinn)
    }
}

impl QuicKnobs {
    pub fn preset(preset: Preset) -> QuicKnobs {
        let k = |iw: u64, sw: u64, cw: u64| QuicKnobs {
            preset,
            cc: QuicCc::Cubic,
            initial_window_packets: Some(iw),
            stream_window_bytes: Some(sw),
            conn_window_bytes: Some(cw),
            rate_bps: None,
            ack_every: None,
            initial_mtu: None,
            max_cwnd_packets: None,
            pacing_interval_us: None,
            window_growth: None,
            pacing_gain: None,
            window_unit_bytes: None,
        };
        // Seed 003's quic-go rows: the window cap, and MinPacingDelay (100
        // or 10 µs) plus quic-go's 1 ms timer granularity as the burst.
        let quic_go = |iw: u64, sw: u64, cw: u64, max_cwnd: u64, min_pacing_us: u64| QuicKnobs { max_cwnd_packets: Some(max_cwnd), pacing_interval_us: Some(1000 + min_pacing_us), ..k(iw, sw, cw) };
        match preset {
            Preset::Quinn => QuicKnobs { initial_window_packets: None, stream_window_bytes: None, conn_window_bytes: None, ..k(0, 0, 0) },
            Preset::Default => quic_go(32, 6_000_000, 15_000_000, 1000, 100),
            Preset::HBdp1 => quic_go(120, 12_000_000, 18_000_000, 2500, 10),
            Preset::HBdp2 => quic_go(32, 12_000_000, 18_000_000, 2500, 10),
            Preset::Sat => QuicKnobs { cc: QuicCc::Sat, ack_every: Some(SAT_ACK_EVERY), initial_mtu: Some(SAT_MTU), ..k(SAT_IW, SAT_WINDOW, SAT_WINDOW) },
        }
    }

    /// Whether a window or setting differs from its preset's (shown as
    /// `PRESET+custom`); the congestion control, the path rate, the window
    /// growth rule, the pacing gain and the window unit are shown on their
    /// own.
    pub fn is_custom(&self) -> bool {
        let p = QuicKnobs {
            cc: self.cc,
            rate_bps: self.rate_bps,
            window_growth: self.window_growth,
            pacing_gain: self.pacing_gain,
            window_unit_bytes: self.window_unit_bytes,
            ..QuicKnobs::preset(self.preset)
        };
        *self != p
    }

    /// `h-bdp1`, `h-bdp1+custom` when a window was changed, `sat@10Mbit/s`
    /// with a path rate.
    pub fn label(&self) -> String {
        let mut l = self.preset.to_string();
        if self.is_custom() {
            l += "+custom";
        }
        if let Some(r) = self.rate_bps {
            l += &format!("@{}", aerolink_link::units::Rate::from_bps(r as f64).to_string().replace(' ', ""));
        }
        l
    }

    /// Command-line form, so a server and a client can be given the same
    /// knobs ([`QuicArgs`] parses it back).
    pub fn to_args(&self) -> Vec<String> {
        QuicArgs::from(self).to_args()
    }

    /// What the types do not check: a path rate only with the `sat`
    /// controller.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.rate_bps.is_some() && self.cc != QuicCc::Sat {
            return Err(format!("--quic-rate: the path rate is used by QUIC congestion control sat only, not {} (--quic-preset sat sets it)", self.cc));
        }
        Ok(())
    }

    pub fn transport(&self) -> Result<quinn::TransportConfig> {
        let mut t = quinn::TransportConfig::default();
        let varint = |v: u64| quinn::VarInt::from_u64(v).map_err(|_| WorkError::QuicConfig(format!("window {v} is too large")));
        let unit = self.window_unit_bytes.unwrap_or(PACKET_BYTES);
        let iw = self.initial_window_packets.map(|p| p * unit);
        let factory: Arc<dyn ControllerFactory + Send + Sync> = match self.cc {
            QuicCc::Cubic | QuicCc::Gquic => {
                let mut c = quinn::congestion::CubicConfig::default();
                if let Some(iw) = iw {
                    c.initial_window(iw);
                }
                if self.cc == QuicCc::Gquic {
                    c.emulated_connections(2);
                }
                Arc::new(c)
            }
            QuicCc::NewReno => {
                let mut c = quinn::congestion::NewRenoConfig::default();
                if let Some(iw) = iw {
                    c.initial_window(iw);
                }
                Arc::new(c)
            }
            QuicCc::Bbr => {
                let mut c = quinn::congestion::BbrConfig::default();
                if let Some(iw) = iw {
                    c.initial_window(iw);
                }
                Arc::new(c)
            }
            QuicCc::Sat => {
                let initial_window = iw.unwrap_or(SAT_IW * PACKET_BYTES);
                Arc::new(crate::satcc::SatConfig { rate_bps: self.rate_bps, initial_window })
            }
        };
        match self.max_cwnd_packets {
            Some(0) => return Err(WorkError::QuicConfig("--quic-max-cwnd: at least 1 packet".into())),
            Some(n) => t.congestion_controller_factory(Arc::new(CappedFactory { inner: factory, cap: n.saturating_mul(unit) })),
            None => t.congestion_controller_factory(factory),
        };
        if let Some(us) = self.pacing_interval_us {
            if !(10..=100_000).contains(&us) {
                return Err(WorkError::QuicConfig(format!("--quic-pacing-interval {us} µs: expected 10 µs to 100 ms")));
            }
            t.pacing_burst_interval(Duration::from_micros(us));
        }
        t.window_limited_by_flight(self.window_growth == Some(WindowGrowth::QuicGo));
        if let Some(g) = self.pacing_gain {
            if !PACING_GAIN.contains(&g) {
                return Err(WorkError::QuicConfig(format!("--quic-pacing-gain {g}: expected 1 to 10 windows per RTT")));
            }
            t.pacing_gain(g);
        }
        self.validate().map_err(WorkError::QuicConfig)?;
        if let Some(n) = self.ack_every {
            if n == 0 {
                return Err(WorkError::QuicConfig("--quic-ack-every: at least 1 packet".into()));
            }
            let mut a = quinn::AckFrequencyConfig::default();
            a.ack_eliciting_threshold(varint(n - 1)?);
            t.ack_frequency_config(Some(a));
        }
        if let Some(m) = self.initial_mtu {
            if m < 1200 {
                return Err(WorkError::QuicConfig(format!("--quic-mtu {m}: QUIC needs at least 1200 bytes")));
            }
            t.initial_mtu(m);
        }
        if let Some(w) = self.stream_window_bytes {
            t.stream_receive_window(varint(w)?);
        }
        if let Some(w) = self.conn_window_bytes {
            t.receive_window(varint(w)?);
            t.send_window(w);
        }
        // Long enough to ride out the longest outages the profiles model.
        t.max_idle_timeout(Some(Duration::from_secs(120).try_into().map_err(|_| WorkError::QuicConfig("idle timeout".into()))?));
        t.max_concurrent_bidi_streams(varint(1024)?);
        Ok(t)
    }
}

/// Caps another controller's window (quic-go's
/// DefaultMaxCongestionWindowPackets): whatever the controller would allow,
/// at most `cap` bytes in flight.
struct CappedFactory {
    inner: Arc<dyn ControllerFactory + Send + Sync>,
    cap: u64,
}

impl ControllerFactory for CappedFactory {
    fn build(self: Arc<Self>, now: std::time::Instant, mtu: u16) -> Box<dyn Controller> {
        Box::new(Capped { inner: self.inner.clone().build(now, mtu), cap: self.cap })
    }
}

struct Capped {
    inner: Box<dyn Controller>,
    cap: u64,
}

impl Controller for Capped {
    fn on_sent(&mut self, now: std::time::Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number)
    }
    fn on_ack(&mut self, now: std::time::Instant, sent: std::time::Instant, bytes: u64, app_limited: bool, rtt: &quinn_proto::RttEstimator) {
        self.inner.on_ack(now, sent, bytes, app_limited, rtt)
    }
    fn on_end_acks(&mut self, now: std::time::Instant, in_flight: u64, app_limited: bool, largest_packet_num_acked: Option<u64>) {
        self.inner.on_end_acks(now, in_flight, app_limited, largest_packet_num_acked)
    }
    fn on_congestion_event(&mut self, now: std::time::Instant, sent: std::time::Instant, is_persistent_congestion: bool, lost_bytes: u64) {
        self.inner.on_congestion_event(now, sent, is_persistent_congestion, lost_bytes)
    }
    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu)
    }
    fn window(&self) -> u64 {
        self.inner.window().min(self.cap)
    }
    /// The controller's own (its slow-start threshold tells quinn whether
    /// it is in slow start), with the capped window.
    fn metrics(&self) -> quinn_proto::congestion::ControllerMetrics {
        let mut m = self.inner.metrics();
        m.congestion_window = self.window();
        m
    }
    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Capped { inner: self.inner.clone_box(), cap: self.cap })
    }
    fn initial_window(&self) -> u64 {
        self.inner.initial_window().min(self.cap)
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// Where each QUIC connection writes its qlog, when `QLOGDIR` names a
/// directory (the variable quic-go, quiche and neqo read): a file per
/// connection, `ROLE-PID-N.sqlog` (qlog's JSON-SEQ, which qvis opens),
/// written as events happen. Unset: no qlog.
pub fn qlog_factory(role: &'static str) -> Option<quinn_proto::QlogFactory> {
    let dir = std::path::PathBuf::from(std::env::var_os("QLOGDIR")?);
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Some(Arc::new(move || {
        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("{role}-{}-{n}.sqlog", std::process::id()));
        let file = match std::fs::create_dir_all(&dir).and_then(|_| std::fs::File::create(&path)) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("aerolink: QLOGDIR: cannot write {}: {e} (this connection has no qlog)", path.display());
                return None;
            }
        };
        let mut c = quinn_proto::QlogConfig::default();
        // One write per record (JSON-SEQ: each ends with a line feed), so a
        // process stopped at the run's end leaves whole records only.
        c.writer(Box::new(std::io::LineWriter::with_capacity(1 << 16, file)))
            .title(Some(format!("aerolink {role}")))
            .description(Some(format!("{role} connection {n} of process {}", std::process::id())));
        c.into_stream()
    }))
}

pub fn server_endpoint(addr: std::net::SocketAddr, knobs: &QuicKnobs, alpn: &[&[u8]]) -> Result<quinn::Endpoint> {
    Ok(quinn::Endpoint::server(server_config(knobs, alpn)?, addr)?)
}

/// A server's QUIC configuration (a fresh self-signed certificate).
pub fn server_config(knobs: &QuicKnobs, alpn: &[&[u8]]) -> Result<quinn::ServerConfig> {
    let tls = crate::tls::server_config(alpn, false)?;
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)?;
    let mut cfg = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut t = knobs.transport()?;
    t.qlog_per_connection(qlog_factory("server"));
    cfg.transport_config(Arc::new(t));
    Ok(cfg)
}

pub fn client_endpoint(server: std::net::SocketAddr, knobs: &QuicKnobs, alpn: &[&[u8]]) -> Result<quinn::Endpoint> {
    let tls = crate::tls::client_config(alpn, false)?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)?;
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    let mut t = knobs.transport()?;
    t.qlog_per_connection(qlog_factory("client"));
    cfg.transport_config(Arc::new(t));
    let bind = if server.is_ipv6() { std::net::SocketAddr::from(([0u16; 8], 0)) } else { std::net::SocketAddr::from(([0u8; 4], 0)) };
    let mut ep = if knobs.preset == Preset::Sat {
        // `sat`: the client's connection IDs are empty, so every packet the
        // server sends is 8 bytes shorter (0.6 % of a full one; at 10 Mbit/s
        // and 650 ms the 2 MB target leaves 1 %). The client cannot
        // migrate to another address: a client behind one link never does.
        let mut ec = quinn::EndpointConfig::default();
        ec.cid_generator(|| Box::new(quinn_proto::RandomConnectionIdGenerator::new(0)));
        quinn::Endpoint::new(ec, None, std::net::UdpSocket::bind(bind)?, Arc::new(quinn::TokioRuntime))?
    } else {
        quinn::Endpoint::client(bind)?
    };
    ep.set_default_client_config(cfg);
    Ok(ep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// A controller whose window grows a packet per batch of ACKs and
    /// drops to 40 packets on a loss: what the cap is put over.
    #[derive(Clone)]
    struct Growing(u64);

    impl Controller for Growing {
        fn on_end_acks(&mut self, _: std::time::Instant, _: u64, _: bool, _: Option<u64>) {
            self.0 += PACKET_BYTES;
        }
        fn on_congestion_event(&mut self, _: std::time::Instant, _: std::time::Instant, _: bool, _: u64) {
            self.0 = 40 * PACKET_BYTES;
        }
        fn on_mtu_update(&mut self, _: u16) {}
        fn window(&self) -> u64 {
            self.0
        }
        fn clone_box(&self) -> Box<dyn Controller> {
            Box::new(self.clone())
        }
        fn initial_window(&self) -> u64 {
            120 * PACKET_BYTES
        }
        fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
            self
        }
    }

    struct GrowingFactory;

    impl ControllerFactory for GrowingFactory {
        fn build(self: Arc<Self>, _: std::time::Instant, _: u16) -> Box<dyn Controller> {
            Box::new(Growing(120 * PACKET_BYTES))
        }
    }

    #[test]
    fn the_window_cap_holds_whatever_the_controller_wants() {
        let f = Arc::new(CappedFactory { inner: Arc::new(GrowingFactory), cap: 100 * PACKET_BYTES });
        let t0 = std::time::Instant::now();
        let mut c = f.build(t0, 1252);
        assert_eq!((c.initial_window(), c.window()), (100 * PACKET_BYTES, 100 * PACKET_BYTES));
        for i in 0..500 {
            c.on_end_acks(t0, 0, false, Some(i));
            assert_eq!(c.window(), 100 * PACKET_BYTES);
        }
        // Below the cap the controller's own window is what counts.
        c.on_congestion_event(t0, t0, false, PACKET_BYTES);
        assert_eq!(c.window(), 40 * PACKET_BYTES);
        assert_eq!(c.clone_box().window(), 40 * PACKET_BYTES);
        // And quinn takes the capped factory.
        let k = QuicKnobs { max_cwnd_packets: Some(100), ..QuicKnobs::preset(Preset::HBdp1) };
        assert!(k.transport().is_ok());
    }

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        q: QuicArgs,
    }

    #[test]
    fn seed_003s_quic_go_rows_have_their_equivalents() {
        let d = QuicKnobs::preset(Preset::Default);
        assert_eq!((d.max_cwnd_packets, d.pacing_interval_us), (Some(1000), Some(1100)));
        let h = QuicKnobs::preset(Preset::HBdp1);
        assert_eq!((h.initial_window_packets, h.max_cwnd_packets, h.pacing_interval_us), (Some(120), Some(2500), Some(1010)));
        assert_eq!(QuicKnobs::preset(Preset::Quinn).max_cwnd_packets, None);
        // The flags round-trip, and the transport takes them.
        let f = Flags::try_parse_from(["x", "--quic-preset", "h-bdp2", "--quic-max-cwnd", "300", "--quic-pacing-interval", "0.5ms"]).unwrap();
        let k = f.q.knobs();
        assert_eq!((k.max_cwnd_packets, k.pacing_interval_us, k.is_custom()), (Some(300), Some(500), true));
        let back = Flags::try_parse_from(std::iter::once("x".to_string()).chain(k.to_args())).unwrap().q.knobs();
        assert_eq!(back, k);
        assert!(k.transport().is_ok());
        assert!(Flags::try_parse_from(["x", "--quic-pacing-interval", "5us"]).is_err());
        assert!(Flags::try_parse_from(["x", "--quic-max-cwnd", "0"]).is_err());
    }
}
