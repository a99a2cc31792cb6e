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

/// Bytes per packet when a window is given in packets (quic-go's initial
/// packet size).
pub const PACKET_BYTES: u64 = 1252;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuicKnobs {
    /// Preset the values came from (`quinn`, `default`, `h-bdp1`, `h-bdp2`,
    /// or `custom`).
    pub preset: String,
    /// `cubic` (quinn's default), `newreno` or `bbr`.
    pub cc: String,
    pub initial_window_packets: Option<u64>,
    pub stream_window_bytes: Option<u64>,
    pub conn_window_bytes: Option<u64>,
}

pub const PRESETS: &[&str] = &["quinn", "default", "h-bdp1", "h-bdp2"];
pub const QUIC_CCS: &[&str] = &["cubic", "newreno", "bbr"];

impl QuicKnobs {
    pub fn preset(name: &str) -> Result<QuicKnobs, String> {
        let k = |iw: u64, sw: u64, cw: u64| QuicKnobs {
            preset: name.to_string(),
            cc: "cubic".into(),
            initial_window_packets: Some(iw),
            stream_window_bytes: Some(sw),
            conn_window_bytes: Some(cw),
        };
        match name {
            "quinn" => Ok(QuicKnobs { preset: name.into(), cc: "cubic".into(), initial_window_packets: None, stream_window_bytes: None, conn_window_bytes: None }),
            "default" => Ok(k(32, 512_000, 6_000_000)),
            "h-bdp1" => Ok(k(120, 6_000_000, 12_000_000)),
            "h-bdp2" => Ok(k(32, 6_000_000, 12_000_000)),
            _ => Err(format!("QUIC preset {name:?}: expected one of {}", PRESETS.join(", "))),
        }
    }

    /// Command-line form, so a server and a client can be given the same
    /// knobs.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec!["--quic-preset".into(), self.preset.clone(), "--quic-cc".into(), self.cc.clone()];
        if let Some(v) = self.initial_window_packets {
            a.extend(["--quic-iw".into(), v.to_string()]);
        }
        if let Some(v) = self.stream_window_bytes {
            a.extend(["--quic-stream-window".into(), v.to_string()]);
        }
        if let Some(v) = self.conn_window_bytes {
            a.extend(["--quic-conn-window".into(), v.to_string()]);
        }
        a
    }

    pub fn transport(&self) -> Result<quinn::TransportConfig, String> {
        let mut t = quinn::TransportConfig::default();
        let iw = self.initial_window_packets.map(|p| p * PACKET_BYTES);
        match self.cc.as_str() {
            "cubic" => {
                let mut c = quinn::congestion::CubicConfig::default();
                if let Some(iw) = iw {
                    c.initial_window(iw);
                }
                t.congestion_controller_factory(Arc::new(c));
            }
            "newreno" => {
                let mut c = quinn::congestion::NewRenoConfig::default();
                if let Some(iw) = iw {
                    c.initial_window(iw);
                }
                t.congestion_controller_factory(Arc::new(c));
            }
            "bbr" => {
                let mut c = quinn::congestion::BbrConfig::default();
                if let Some(iw) = iw {
                    c.initial_window(iw);
                }
                t.congestion_controller_factory(Arc::new(c));
            }
            other => return Err(format!("QUIC congestion control {other:?}: expected one of {}", QUIC_CCS.join(", "))),
        }
        let varint = |v: u64| quinn::VarInt::from_u64(v).map_err(|_| format!("window {v} is too large"));
        if let Some(w) = self.stream_window_bytes {
            t.stream_receive_window(varint(w)?);
        }
        if let Some(w) = self.conn_window_bytes {
            t.receive_window(varint(w)?);
            t.send_window(w);
        }
        // Long enough to ride out the longest outages the profiles model.
        t.max_idle_timeout(Some(Duration::from_secs(120).try_into().map_err(|_| "idle timeout".to_string())?));
        t.max_concurrent_bidi_streams(varint(1024)?);
        Ok(t)
    }
}

pub fn server_endpoint(addr: std::net::SocketAddr, knobs: &QuicKnobs, alpn: &[&[u8]]) -> anyhow::Result<quinn::Endpoint> {
    Ok(quinn::Endpoint::server(server_config(knobs, alpn)?, addr)?)
}

/// A server's QUIC configuration (a fresh self-signed certificate).
pub fn server_config(knobs: &QuicKnobs, alpn: &[&[u8]]) -> anyhow::Result<quinn::ServerConfig> {
    let tls = crate::tls::server_config(alpn)?;
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)?;
    let mut cfg = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    cfg.transport_config(Arc::new(knobs.transport().map_err(anyhow::Error::msg)?));
    Ok(cfg)
}

pub fn client_endpoint(server: std::net::SocketAddr, knobs: &QuicKnobs, alpn: &[&[u8]]) -> anyhow::Result<quinn::Endpoint> {
    let tls = crate::tls::client_config(alpn)?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)?;
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    cfg.transport_config(Arc::new(knobs.transport().map_err(anyhow::Error::msg)?));
    let bind: std::net::SocketAddr = if server.is_ipv6() { "[::]:0".parse()? } else { "0.0.0.0:0".parse()? };
    let mut ep = quinn::Endpoint::client(bind)?;
    ep.set_default_client_config(cfg);
    Ok(ep)
}
