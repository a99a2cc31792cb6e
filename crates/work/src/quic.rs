//! QUIC knobs and presets, and quinn endpoints built from them.
//!
//! Seed 003 tuned quic-go; our QUIC stack is quinn. The mapping:
//!
//! | seed 003 (quic-go)                        | default | h-bdp1 | h-bdp2 | quinn knob |
//! |-------------------------------------------|---------|--------|--------|------------|
//! | InitialCongestionWindow (packets)         | 32      | 120    | 32     | `initial_window` = packets × 1252 B (quic-go's initial packet size) |
//! | InitialMaxStreamData                      | 512 KB  | 6000 KB| 6000 KB| `stream_receive_window` |
//! | DefaultMaxReceiveStreamFlowControlWindow  | 6 MB    | 12 MB  | 12 MB  | `receive_window` (connection) |
//! | DefaultMaxCongestionWindowPackets         | 1000    | 2500   | 2500   | none: quinn has no cap on cwnd |
//! | MaxTrackedSkippedPackets / SentPackets    | 10/2500 | 50/10000 | 50/10000 | none: quinn sizes these itself |
//! | MinPacingDelay                            | 100 µs  | 10 µs  | 10 µs  | none: quinn paces from cwnd and RTT |
//!
//! Both ends apply the same knobs: the receive windows a peer advertises are
//! what limit the other's sending. `quinn` is quinn's own defaults.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Result, WorkError};

/// Bytes per packet when a window is given in packets (quic-go's initial
/// packet size).
pub const PACKET_BYTES: u64 = 1252;

crate::choice! {
    /// quinn's congestion controllers.
    pub enum QuicCc { Cubic = "cubic", NewReno = "newreno", Bbr = "bbr" }
}

crate::choice! {
    /// Windows and initial window: quinn's own defaults, or seed 003's
    /// quic-go settings (table above).
    pub enum Preset { Quinn = "quinn", Default = "default", HBdp1 = "h-bdp1", HBdp2 = "h-bdp2" }
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
        };
        match preset {
            Preset::Quinn => QuicKnobs { preset, cc: QuicCc::Cubic, initial_window_packets: None, stream_window_bytes: None, conn_window_bytes: None },
            Preset::Default => k(32, 512_000, 6_000_000),
            Preset::HBdp1 => k(120, 6_000_000, 12_000_000),
            Preset::HBdp2 => k(32, 6_000_000, 12_000_000),
        }
    }

    /// Whether a window differs from its preset's (shown as
    /// `PRESET+custom`).
    pub fn is_custom(&self) -> bool {
        let p = QuicKnobs { cc: self.cc, ..QuicKnobs::preset(self.preset) };
        *self != p
    }

    /// `h-bdp1`, or `h-bdp1+custom` when a window was changed.
    pub fn label(&self) -> String {
        if self.is_custom() {
            format!("{}+custom", self.preset)
        } else {
            self.preset.to_string()
        }
    }

    /// Command-line form, so a server and a client can be given the same
    /// knobs ([`QuicArgs`] parses it back).
    pub fn to_args(&self) -> Vec<String> {
        QuicArgs::from(self).to_args()
    }

    pub fn transport(&self) -> Result<quinn::TransportConfig> {
        let mut t = quinn::TransportConfig::default();
        let iw = self.initial_window_packets.map(|p| p * PACKET_BYTES);
        match self.cc {
            QuicCc::Cubic => {
                let mut c = quinn::congestion::CubicConfig::default();
                if let Some(iw) = iw {
                    c.initial_window(iw);
                }
                t.congestion_controller_factory(Arc::new(c));
            }
            QuicCc::NewReno => {
                let mut c = quinn::congestion::NewRenoConfig::default();
                if let Some(iw) = iw {
                    c.initial_window(iw);
                }
                t.congestion_controller_factory(Arc::new(c));
            }
            QuicCc::Bbr => {
                let mut c = quinn::congestion::BbrConfig::default();
                if let Some(iw) = iw {
                    c.initial_window(iw);
                }
                t.congestion_controller_factory(Arc::new(c));
            }
        }
        let varint = |v: u64| quinn::VarInt::from_u64(v).map_err(|_| WorkError::QuicConfig(format!("window {v} is too large")));
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

pub fn server_endpoint(addr: std::net::SocketAddr, knobs: &QuicKnobs, alpn: &[&[u8]]) -> Result<quinn::Endpoint> {
    Ok(quinn::Endpoint::server(server_config(knobs, alpn)?, addr)?)
}

/// A server's QUIC configuration (a fresh self-signed certificate).
pub fn server_config(knobs: &QuicKnobs, alpn: &[&[u8]]) -> Result<quinn::ServerConfig> {
    let tls = crate::tls::server_config(alpn)?;
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)?;
    let mut cfg = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    cfg.transport_config(Arc::new(knobs.transport()?));
    Ok(cfg)
}

pub fn client_endpoint(server: std::net::SocketAddr, knobs: &QuicKnobs, alpn: &[&[u8]]) -> Result<quinn::Endpoint> {
    let tls = crate::tls::client_config(alpn)?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)?;
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    cfg.transport_config(Arc::new(knobs.transport()?));
    let bind = if server.is_ipv6() { std::net::SocketAddr::from(([0u16; 8], 0)) } else { std::net::SocketAddr::from(([0u8; 4], 0)) };
    let mut ep = quinn::Endpoint::client(bind)?;
    ep.set_default_client_config(cfg);
    Ok(ep)
}

/// The QUIC flags of the workload programs: a preset, and changes on top.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct QuicArgs {
    /// QUIC preset: quinn (quinn's defaults), default, h-bdp1, h-bdp2 (seed
    /// 003's quic-go settings mapped to quinn; see docs/guide.md).
    #[arg(long, default_value = "quinn", help_heading = "QUIC")]
    pub quic_preset: Preset,
    /// QUIC congestion control (default cubic).
    #[arg(long, help_heading = "QUIC")]
    pub quic_cc: Option<QuicCc>,
    /// QUIC initial window, packets of 1252 B.
    #[arg(long, help_heading = "QUIC")]
    pub quic_iw: Option<u64>,
    /// QUIC per-stream receive window, bytes.
    #[arg(long, help_heading = "QUIC")]
    pub quic_stream_window: Option<u64>,
    /// QUIC connection receive (and send) window, bytes.
    #[arg(long, help_heading = "QUIC")]
    pub quic_conn_window: Option<u64>,
}

impl QuicArgs {
    /// The knobs these flags ask for.
    pub fn knobs(&self) -> QuicKnobs {
        let mut k = QuicKnobs::preset(self.quic_preset);
        if let Some(cc) = self.quic_cc {
            k.cc = cc;
        }
        if let Some(v) = self.quic_iw {
            k.initial_window_packets = Some(v);
        }
        if let Some(v) = self.quic_stream_window {
            k.stream_window_bytes = Some(v);
        }
        if let Some(v) = self.quic_conn_window {
            k.conn_window_bytes = Some(v);
        }
        k
    }

    /// The flags, as a command line parses them back.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec!["--quic-preset".into(), self.quic_preset.to_string()];
        if let Some(cc) = self.quic_cc {
            a.extend(["--quic-cc".into(), cc.to_string()]);
        }
        for (flag, v) in [("--quic-iw", self.quic_iw), ("--quic-stream-window", self.quic_stream_window), ("--quic-conn-window", self.quic_conn_window)] {
            if let Some(v) = v {
                a.extend([flag.into(), v.to_string()]);
            }
        }
        a
    }
}

/// Every value explicit, so the far end needs no defaults of its own.
impl From<&QuicKnobs> for QuicArgs {
    fn from(k: &QuicKnobs) -> Self {
        QuicArgs {
            quic_preset: k.preset,
            quic_cc: Some(k.cc),
            quic_iw: k.initial_window_packets,
            quic_stream_window: k.stream_window_bytes,
            quic_conn_window: k.conn_window_bytes,
        }
    }
}
