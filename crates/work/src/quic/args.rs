//! The QUIC flags of the workload programs (`--quic-preset` and the changes
//! on top), their parsers, and their round trip to and from [`QuicKnobs`].

use super::{Preset, QuicCc, QuicKnobs, WindowGrowth, PACING_GAIN, WINDOW_UNIT_BYTES};

/// The QUIC flags of the workload programs: a preset, and changes on top.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct QuicArgs {
    /// QUIC preset: quinn (quinn's defaults), default, h-bdp1, h-bdp2 (seed
    /// 003's quic-go settings mapped to quinn), sat (ours for GEO paths:
    /// give it --quic-rate); see docs/guide.md.
    #[arg(long, default_value = "quinn", help_heading = "QUIC")]
    pub quic_preset: Preset,
    /// QUIC congestion control (default cubic; sat: the preset's own, rate
    /// from ACKs, random loss not taken as congestion).
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
    /// The path's rate in the direction this end sends, e.g. 10Mbit/s
    /// (congestion control sat: the first window is this rate × RTT,
    /// paced, instead of slow start).
    #[arg(long, value_name = "RATE", value_parser = parse_rate_bps, help_heading = "QUIC")]
    pub quic_rate: Option<u64>,
    /// Ask the peer to acknowledge every N ack-eliciting packets (QUIC ACK
    /// frequency extension; quinn's default 2).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000), help_heading = "QUIC")]
    pub quic_ack_every: Option<u64>,
    /// First UDP payload size tried, bytes (quinn's default 1200, then
    /// path MTU discovery).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u16).range(1200..=9000), help_heading = "QUIC")]
    pub quic_mtu: Option<u16>,
    /// Cap the congestion window at N packets of 1252 B, whatever the
    /// controller would allow (quic-go's DefaultMaxCongestionWindowPackets:
    /// presets default 1000, h-bdp1/h-bdp2 2500).
    #[arg(long, value_name = "PACKETS", value_parser = clap::value_parser!(u64).range(1..=10_000_000), help_heading = "QUIC")]
    pub quic_max_cwnd: Option<u64>,
    /// The pacer's burst interval, e.g. 1.01ms: it lets out this long's
    /// worth of the window at a time (quinn 2ms; seed 003's MinPacingDelay
    /// plus quic-go's 1 ms timer granularity: 1.1ms, h-bdp 1.01ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_pacing_us, help_heading = "QUIC")]
    pub quic_pacing_interval: Option<u64>,
    /// Which ACKs grow the congestion window: quinn (default: none that
    /// arrive after the sender ran out of data, so short responses in
    /// sequence never grow it) or quic-go (while more than half the window
    /// was in flight, in slow start, as quic-go and Linux judge it).
    #[arg(long, value_name = "RULE", help_heading = "QUIC")]
    pub quic_window_growth: Option<WindowGrowth>,
    /// The pacer's rate in congestion windows per RTT, 1 to 10 (quinn
    /// 1.25; quic-go of 2019, seed 003's, spaced its 1252 B packets by
    /// RTT × 1460 B / (2 × window): 1.715).
    #[arg(long, value_name = "GAIN", value_parser = parse_pacing_gain, help_heading = "QUIC")]
    pub quic_pacing_gain: Option<f64>,
    /// Bytes per packet of the windows given in packets (--quic-iw,
    /// --quic-max-cwnd and the presets'): 1252 (quic-go from v0.15, 2020)
    /// unless set; quic-go up to v0.14 (2019) counted TCP's 1460.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(WINDOW_UNIT_BYTES), help_heading = "QUIC")]
    pub quic_window_unit: Option<u64>,
}

/// A pacing gain for `--quic-pacing-gain` / `quic_pacing_gain`: 1 to 10
/// windows per RTT.
pub fn parse_pacing_gain(s: &str) -> std::result::Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(g) if PACING_GAIN.contains(&g) => Ok(g),
        _ => Err(format!("{s}: a pacing rate from 1 to 10 windows per RTT, like 2")),
    }
}

/// A pacing burst interval for `--quic-pacing-interval` /
/// `quic_pacing_interval`, µs: 10 µs to 100 ms.
pub fn parse_pacing_us(s: &str) -> std::result::Result<u64, String> {
    let d = aerolink_link::units::parse_duration(s)?;
    let us = d.0 / 1000;
    if !(10..=100_000).contains(&us) {
        return Err(format!("{s}: a burst interval from 10us to 100ms"));
    }
    Ok(us)
}

/// A path rate for `--quic-rate` / `quic_rate`, bit/s: at least 1 kbit/s.
pub fn parse_rate_bps(s: &str) -> std::result::Result<u64, String> {
    let r = aerolink_link::units::parse_rate(s)?;
    if !(r.bits_per_sec >= 1000.0 && r.bits_per_sec.is_finite()) {
        return Err(format!("{s}: a path rate of at least 1 kbit/s"));
    }
    Ok(r.bits_per_sec as u64)
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
        if let Some(v) = self.quic_rate {
            k.rate_bps = Some(v);
        }
        if let Some(v) = self.quic_ack_every {
            k.ack_every = Some(v);
        }
        if let Some(v) = self.quic_mtu {
            k.initial_mtu = Some(v);
        }
        if let Some(v) = self.quic_max_cwnd {
            k.max_cwnd_packets = Some(v);
        }
        if let Some(v) = self.quic_pacing_interval {
            k.pacing_interval_us = Some(v);
        }
        if let Some(v) = self.quic_window_growth {
            k.window_growth = Some(v);
        }
        if let Some(v) = self.quic_pacing_gain {
            k.pacing_gain = Some(v);
        }
        if let Some(v) = self.quic_window_unit {
            k.window_unit_bytes = Some(v);
        }
        k
    }

    /// The flags, as a command line parses them back.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec!["--quic-preset".into(), self.quic_preset.to_string()];
        if let Some(cc) = self.quic_cc {
            a.extend(["--quic-cc".into(), cc.to_string()]);
        }
        for (flag, v) in [
            ("--quic-iw", self.quic_iw),
            ("--quic-stream-window", self.quic_stream_window),
            ("--quic-conn-window", self.quic_conn_window),
            ("--quic-ack-every", self.quic_ack_every),
            ("--quic-mtu", self.quic_mtu.map(u64::from)),
            ("--quic-max-cwnd", self.quic_max_cwnd),
            ("--quic-window-unit", self.quic_window_unit),
        ] {
            if let Some(v) = v {
                a.extend([flag.into(), v.to_string()]);
            }
        }
        if let Some(r) = self.quic_rate {
            a.extend(["--quic-rate".into(), format!("{r}bit/s")]);
        }
        if let Some(us) = self.quic_pacing_interval {
            a.extend(["--quic-pacing-interval".into(), format!("{us}us")]);
        }
        if let Some(g) = self.quic_window_growth {
            a.extend(["--quic-window-growth".into(), g.to_string()]);
        }
        if let Some(g) = self.quic_pacing_gain {
            a.extend(["--quic-pacing-gain".into(), g.to_string()]);
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
            quic_rate: k.rate_bps,
            quic_ack_every: k.ack_every,
            quic_mtu: k.initial_mtu,
            quic_max_cwnd: k.max_cwnd_packets,
            quic_pacing_interval: k.pacing_interval_us,
            quic_window_growth: k.window_growth,
            quic_pacing_gain: k.pacing_gain,
            quic_window_unit: k.window_unit_bytes,
        }
    }
}
