//! The knobs of a run: the stacks' settings beside the workload (TCP and
//! QUIC congestion control and windows, Nagle, push, the PEP chain, cross
//! traffic, TCP's reordering tolerance, how messages are stamped), each
//! recorded with the result. Experiment files set them through
//! `experiment/knobs.rs`'s registry.

use aerolink_work::cli::{ServeArgs, TcpClientArgs, WorkloadCmd};
use aerolink_work::messages::Stamp;
use aerolink_work::quic::{QuicArgs, QuicKnobs};
use aerolink_work::sock::TcpCc;
use serde::{Deserialize, Serialize};

use super::with_prefix;

/// The stack settings of a run; every one is recorded with the result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knobs {
    /// Kernel TCP congestion control (server sockets, and the client's for
    /// uploads).
    pub tcp_cc: TcpCc,
    /// Route initial window in segments; `None` = the kernel's 10.
    pub initcwnd: Option<u32>,
    /// The client's route initial receive window in segments (`ip route …
    /// initrwnd` in the client's and passengers' namespaces): what its SYN
    /// and first ACKs advertise before the window grows with the data;
    /// `None` = the kernel's (10 segments and more; Linux before 2.6.38: 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initrwnd: Option<u32>,
    pub quic: QuicKnobs,
    /// Nagle's algorithm on the server's and messages client's sockets.
    pub nagle: bool,
    /// HTTP/2 server push, % of a page's objects (0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub push: u8,
    /// The bulk client's TCP socket: MSS, receive buffer, quick ACKs.
    #[serde(default, skip_serializing_if = "TcpClientArgs::is_default")]
    pub tcp: TcpClientArgs,
    /// Run over the `ifc` gateway chain (the profile is its space hop) with
    /// this PEP mode; `None` = one hop, client ↔ server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pep: Option<crate::gateways::PepSpec>,
    /// Competing traffic on the same link while the workload runs (seed
    /// 003's congestion): TCP cubic flows of iperf3, started first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross: Option<Cross>,
    /// The competing traffic's TCP connections (iperf3 `-P`); 1 unless set.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub cross_flows: u8,
    /// How long the competing traffic runs before the workload starts, ms;
    /// `None`: until it carries data (its first half-second report), so the
    /// workload meets a flow still in slow start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_lead_ms: Option<u64>,
    /// How the end hosts' kernel TCP treats reordered segments.
    #[serde(default, skip_serializing_if = "Reordering::is_adaptive")]
    pub tcp_reordering: Reordering,
    /// The messages workload's offer time (its latency's start).
    #[serde(default, skip_serializing_if = "is_schedule")]
    pub message_stamp: Stamp,
    /// The client reaches the server at its IPv6 address.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ipv6: bool,
    /// TCP timestamps (RFC 7323) at the end hosts; off, every segment's
    /// header is 20 B instead of 32.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub tcp_timestamps: bool,
    /// TLS sessions resumed within a run: the server keeps them and the
    /// web client's later connections resume (no certificate again), as a
    /// browser's do. Off, every connection makes a full handshake.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tls_resume: bool,
    /// The web client's HTTP/2 receive windows (stream and connection),
    /// bytes; `None`: a browser's 2 MB and 5 MB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2_window: Option<u32>,
    /// Selective acknowledgements (RFC 2018) at the end hosts; off, loss
    /// is recovered as Reno without SACK does (seed 002's TCP).
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub tcp_sack: bool,
}

fn yes() -> bool {
    true
}

fn one() -> u8 {
    1
}

fn is_one(n: &u8) -> bool {
    *n == 1
}

fn is_yes(b: &bool) -> bool {
    *b
}

aerolink_work::choice! {
    /// Cross traffic: a competing TCP download (server to client) or
    /// upload, for as long as the measured workload runs.
    pub enum Cross { None = "none", TcpDown = "tcp-down", TcpUp = "tcp-up" }
}

aerolink_work::choice! {
    /// The end hosts' TCP reordering tolerance (set per namespace before the
    /// programs start). `adaptive` is Linux's: RACK-TLP loss detection
    /// (`tcp_recovery = 1`), DSACK, and a duplicate-ACK threshold that grows
    /// with the reordering seen (up to `tcp_max_reordering = 300`). `strict`
    /// cuts all three — no RACK, no DSACK, the threshold held at 3 — so
    /// three duplicate ACKs mean a loss, as in TCPs before RFC 4653 and
    /// RACK: what a sender meets over channels striped without resequencing
    /// (seed 004's teql).
    #[derive(Default)]
    pub enum Reordering { #[default] Adaptive = "adaptive", Strict = "strict" }
}

impl Reordering {
    fn is_adaptive(&self) -> bool {
        *self == Reordering::Adaptive
    }

    /// The sysctls (net.ipv4.…) that set it in a namespace.
    pub fn sysctls(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Reordering::Adaptive => &[],
            Reordering::Strict => &[("net.ipv4.tcp_recovery", "0"), ("net.ipv4.tcp_dsack", "0"), ("net.ipv4.tcp_reordering", "3"), ("net.ipv4.tcp_max_reordering", "3")],
        }
    }
}

fn is_schedule(s: &Stamp) -> bool {
    *s == Stamp::Schedule
}

fn is_zero(n: &u8) -> bool {
    *n == 0
}

impl Knobs {
    /// The sysctls (net.ipv4.…, which IPv6 TCP follows too) these knobs
    /// set in the end hosts' namespaces.
    pub fn end_host_sysctls(&self) -> Vec<(&'static str, &'static str)> {
        let mut out = self.tcp_reordering.sysctls().to_vec();
        if !self.tcp_timestamps {
            out.push(("net.ipv4.tcp_timestamps", "0"));
        }
        if !self.tcp_sack {
            out.push(("net.ipv4.tcp_sack", "0"));
        }
        out
    }
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            tcp_cc: TcpCc::Cubic,
            initcwnd: None,
            initrwnd: None,
            quic: QuicKnobs::default(),
            nagle: false,
            push: 0,
            tcp: TcpClientArgs::default(),
            pep: None,
            cross: None,
            cross_flows: 1,
            cross_lead_ms: None,
            tcp_reordering: Reordering::Adaptive,
            message_stamp: Stamp::Schedule,
            ipv6: false,
            tcp_timestamps: true,
            tcp_sack: true,
            tls_resume: false,
            h2_window: None,
        }
    }
}

impl Knobs {
    /// The server program every workload of a run talks to.
    pub fn server_cmd(&self) -> WorkloadCmd {
        WorkloadCmd::Serve(ServeArgs { cc: self.tcp_cc, initcwnd: self.initcwnd, nagle: self.nagle, push: self.push, quic: QuicArgs::from(&self.quic), dns_answer: None, tls_resume: self.tls_resume })
    }

    /// What sets this run apart from the defaults, for reports and
    /// progress lines: `bbr IW40 h-bdp1 quic-bbr nagle via quic-tunnel/bbr`.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if self.tcp_cc != TcpCc::Cubic {
            parts.push(self.tcp_cc.to_string());
        }
        if let Some(n) = self.initcwnd {
            parts.push(format!("IW{n}"));
        }
        if let Some(n) = self.initrwnd {
            parts.push(format!("RW{n}"));
        }
        if self.quic.preset != aerolink_work::quic::Preset::Quinn {
            parts.push(self.quic.label());
        }
        if self.quic.cc != aerolink_work::quic::QuicKnobs::preset(self.quic.preset).cc {
            parts.push(format!("quic-{}", self.quic.cc));
        }
        if let Some(g) = self.quic.window_growth {
            parts.push(format!("growth-{g}"));
        }
        if let Some(g) = self.quic.pacing_gain {
            parts.push(format!("pacing×{g}"));
        }
        if let Some(u) = self.quic.window_unit_bytes {
            parts.push(format!("unit{u}B"));
        }
        if self.nagle {
            parts.push("nagle".into());
        }
        if self.push > 0 {
            parts.push(format!("push{}", self.push));
        }
        if let Some(m) = self.tcp.mss {
            parts.push(format!("MSS{m}"));
        }
        if let Some(b) = self.tcp.rcvbuf {
            parts.push(format!("rcvbuf{b}"));
        }
        if self.tcp.quickack {
            parts.push("quickack".into());
        }
        if self.tcp_reordering != Reordering::Adaptive {
            parts.push(format!("reordering-{}", self.tcp_reordering));
        }
        if self.message_stamp != Stamp::Schedule {
            parts.push(format!("stamped-at-{}", self.message_stamp));
        }
        if self.ipv6 {
            parts.push("ipv6".into());
        }
        if !self.tcp_timestamps {
            parts.push("no-timestamps".into());
        }
        if !self.tcp_sack {
            parts.push("no-sack".into());
        }
        if self.tls_resume {
            parts.push("tls-resume".into());
        }
        if let Some(w) = self.h2_window {
            parts.push(format!("h2-window{w}"));
        }
        if let Some(p) = self.pep.as_ref().filter(|p| p.mode != aerolink_pep::cli::PepMode::None) {
            parts.push(format!("via {}", p.label()));
        }
        if let Some(c) = self.cross.filter(|c| *c != Cross::None) {
            let flows = if self.cross_flows == 1 { String::new() } else { format!("×{}", self.cross_flows) };
            let lead = match self.cross_lead_ms {
                None => String::new(),
                Some(ms) if ms % 1000 == 0 => format!(" lead{}s", ms / 1000),
                Some(ms) => format!(" lead{ms}ms"),
            };
            parts.push(format!("cross:{c}{flows}{lead}"));
        }
        parts.join(" ")
    }

    /// The server's command line after `aerolink`.
    pub fn server_args(&self) -> Vec<String> {
        with_prefix(self.server_cmd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An end-host option turned off becomes its sysctl in both end hosts
    /// and a word of the series; left on, the knobs' JSON (part of every
    /// run key) does not change.
    #[test]
    fn tcp_options_off_set_their_sysctls_and_name_the_series() {
        let k = Knobs { tcp_sack: false, tcp_timestamps: false, ..Knobs::default() };
        assert!(k.end_host_sysctls().contains(&("net.ipv4.tcp_sack", "0")) && k.end_host_sysctls().contains(&("net.ipv4.tcp_timestamps", "0")));
        assert!(k.label().contains("no-sack") && k.label().contains("no-timestamps"), "{}", k.label());
        let on = serde_json::to_string(&Knobs::default()).unwrap();
        assert!(!on.contains("tcp_sack") && !on.contains("tcp_timestamps"), "{on}");
        assert!(Knobs::default().end_host_sysctls().iter().all(|(k, _)| !k.contains("sack")));
    }

    /// The client's initial receive window names the series (`RW4`) and,
    /// unset, stays out of the knobs' JSON, so no earlier run's key moves.
    #[test]
    fn the_clients_initial_receive_window_names_the_series_and_unset_is_left_out() {
        let k = Knobs { initcwnd: Some(10), initrwnd: Some(4), ..Knobs::default() };
        assert_eq!(k.label(), "IW10 RW4");
        assert!(serde_json::to_string(&k).unwrap().contains("\"initrwnd\":4"));
        assert!(!serde_json::to_string(&Knobs::default()).unwrap().contains("initrwnd"));
    }
}
