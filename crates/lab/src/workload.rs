//! What a run executes: a workload with its parameters, and the knobs of
//! the stacks — typed once, turned into the command lines of the server
//! and client programs.

use std::collections::BTreeMap;

use aerolink_work::quic::QuicKnobs;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "workload", rename_all = "lowercase")]
pub enum Workload {
    Web { protocol: String, page: String, depth: u32 },
    Bulk { transport: String, direction: String, bytes: u64 },
    Objects { protocol: String, set: String, parallel: bool },
    Messages {
        #[serde(default = "tcp")]
        transport: String,
        direction: String,
        size: u32,
        rate_bps: f64,
        duration_s: f64,
    },
    Realtime { mechanism: String, scenario: String, count: u32, interval_ms: u64, size: u32 },
}

/// The stack settings of a run; every one is recorded with the result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knobs {
    /// Kernel TCP congestion control (server sockets, and the client's for
    /// uploads).
    pub tcp_cc: String,
    /// Route initial window in segments; `None` = the kernel's 10.
    pub initcwnd: Option<u32>,
    pub quic: QuicKnobs,
    /// Nagle's algorithm on the server's and messages client's sockets.
    pub nagle: bool,
    /// Run over the `ifc` gateway chain (the profile is its space hop) with
    /// this PEP mode; `None` = one hop, client ↔ server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pep: Option<crate::gateways::PepSpec>,
}

fn tcp() -> String {
    "tcp".into()
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs { tcp_cc: "cubic".into(), initcwnd: None, quic: QuicKnobs::preset("quinn").expect("a known preset"), nagle: false, pep: None }
    }
}

impl Knobs {
    pub fn server_args(&self) -> Vec<String> {
        let mut a = vec!["workload".into(), "serve".into(), "--cc".into(), self.tcp_cc.clone()];
        if let Some(n) = self.initcwnd {
            a.extend(["--initcwnd".into(), n.to_string()]);
        }
        if self.nagle {
            a.push("--nagle".into());
        }
        a.extend(self.quic.to_args());
        a
    }
}

impl Workload {
    /// Checks a workload's parameters, naming `origin` in the message.
    pub fn validate(&self, origin: &str) -> Result<(), String> {
        match self {
            Workload::Web { protocol, page, depth } => {
                if !aerolink_work::web::PROTOCOLS.contains(&protocol.as_str()) {
                    return Err(format!("{origin}: protocol {protocol:?}: expected one of {}", aerolink_work::web::PROTOCOLS.join(", ")));
                }
                aerolink_work::page::Page::parse(page, *depth).map_err(|m| format!("{origin}: page {page:?}: expected {m}"))?;
            }
            Workload::Bulk { transport, direction, bytes } => {
                if !["tcp", "quic"].contains(&transport.as_str()) {
                    return Err(format!("{origin}: transport {transport:?}: expected tcp or quic"));
                }
                if !["down", "up"].contains(&direction.as_str()) {
                    return Err(format!("{origin}: direction {direction:?}: expected down or up"));
                }
                if *bytes == 0 {
                    return Err(format!("{origin}: size must be more than 0"));
                }
            }
            Workload::Objects { protocol, set, .. } => {
                if !["h1", "h2", "h3"].contains(&protocol.as_str()) {
                    return Err(format!("{origin}: protocol {protocol:?}: expected h3, h2 or h1"));
                }
                aerolink_work::page::object_set(set).map_err(|m| format!("{origin}: {m}"))?;
            }
            Workload::Realtime { mechanism, scenario, count, size, .. } => {
                if !aerolink_work::realtime::MECHANISMS.contains(&mechanism.as_str()) {
                    return Err(format!("{origin}: mechanism {mechanism:?}: expected one of {}", aerolink_work::realtime::MECHANISMS.join(", ")));
                }
                if !aerolink_work::realtime::SCENARIOS.contains(&scenario.as_str()) {
                    return Err(format!("{origin}: scenario {scenario:?}: expected one of {}", aerolink_work::realtime::SCENARIOS.join(", ")));
                }
                if *count == 0 || *size < 24 {
                    return Err(format!("{origin}: count must be at least 1 and size at least 24 bytes"));
                }
            }
            Workload::Messages { transport, direction, size, rate_bps, duration_s } => {
                if !["tcp", "quic"].contains(&transport.as_str()) {
                    return Err(format!("{origin}: transport {transport:?}: expected tcp or quic"));
                }
                if !["down", "up", "both"].contains(&direction.as_str()) {
                    return Err(format!("{origin}: direction {direction:?}: expected down, up or both"));
                }
                if *size < aerolink_work::messages::MIN_SIZE {
                    return Err(format!("{origin}: size {size}: messages need at least 12 bytes (timestamp + length)"));
                }
                if *rate_bps <= 0.0 || *duration_s <= 0.0 {
                    return Err(format!("{origin}: rate and duration must be positive"));
                }
            }
        }
        Ok(())
    }

    pub fn name(&self) -> &'static str {
        match self {
            Workload::Web { .. } => "web",
            Workload::Bulk { .. } => "bulk",
            Workload::Objects { .. } => "objects",
            Workload::Messages { .. } => "messages",
            Workload::Realtime { .. } => "realtime",
        }
    }

    /// The protocol or transport, for grouping results.
    pub fn protocol(&self) -> String {
        match self {
            Workload::Web { protocol, .. } | Workload::Objects { protocol, .. } => protocol.clone(),
            Workload::Bulk { transport, .. } => transport.clone(),
            Workload::Messages { transport, .. } => transport.clone(),
            Workload::Realtime { mechanism, .. } => mechanism.clone(),
        }
    }

    /// A short label of the parameters (not the protocol), for grouping.
    pub fn params_label(&self) -> String {
        match self {
            Workload::Web { page, depth, .. } => if *depth > 1 { format!("{page} depth {depth}") } else { page.clone() },
            Workload::Bulk { direction, bytes, .. } => format!("{} {direction}", human_bytes(*bytes)),
            Workload::Objects { set, parallel, .. } => format!("{set} {}", if *parallel { "par" } else { "seq" }),
            Workload::Messages { direction, size, rate_bps, .. } => format!("{size} B at {} bit/s {direction}", rate_bps),
            Workload::Realtime { scenario, count, .. } => format!("{scenario} ×{count}"),
        }
    }

    /// The client's command line after `aerolink`.
    pub fn client_args(&self, server: &str, knobs: &Knobs) -> Vec<String> {
        let mut a: Vec<String> = vec!["workload".into(), self.name().into(), "--server".into(), server.into()];
        match self {
            Workload::Web { protocol, page, depth } => a.extend(["--protocol".into(), protocol.clone(), "--page".into(), page.clone(), "--depth".into(), depth.to_string()]),
            Workload::Bulk { transport, direction, bytes } => {
                a.extend(["--transport".into(), transport.clone(), "--direction".into(), direction.clone(), "--bytes".into(), bytes.to_string(), "--cc".into(), knobs.tcp_cc.clone()])
            }
            Workload::Objects { protocol, set, parallel } => a.extend(["--protocol".into(), protocol.clone(), "--set".into(), set.clone(), "--mode".into(), if *parallel { "par" } else { "seq" }.into()]),
            Workload::Messages { transport, direction, size, rate_bps, duration_s } => {
                a.extend(["--transport".into(), transport.clone(), "--direction".into(), direction.clone(), "--size".into(), size.to_string(), "--rate".into(), format!("{rate_bps}bit/s"), "--duration".into(), format!("{duration_s}s")]);
                if knobs.nagle {
                    a.push("--nagle".into());
                }
            }
            // Its arguments follow below.
            Workload::Realtime { .. } => {}
        }
        if let Workload::Realtime { mechanism, scenario, count, interval_ms, size } = self {
            a.extend([
                "--mechanism".into(), mechanism.clone(), "--scenario".into(), scenario.clone(), "--count".into(), count.to_string(),
                "--interval-ms".into(), interval_ms.to_string(), "--size".into(), size.to_string(),
            ]);
            if !knobs.nagle {
                a.push("--no-nagle".into());
            }
        }
        if matches!(self, Workload::Web { .. } | Workload::Objects { .. } | Workload::Bulk { .. } | Workload::Messages { .. }) {
            a.extend(knobs.quic.to_args());
        }
        a
    }

    /// The figures a result of this workload is judged by, from the
    /// client's JSON.
    pub fn metrics(&self, v: &serde_json::Value) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        let mut put = |k: &str, x: Option<f64>| {
            if let Some(x) = x {
                m.insert(k.to_string(), x);
            }
        };
        let f = |k: &str| v.get(k).and_then(|x| x.as_f64());
        match self {
            Workload::Web { .. } => {
                for k in ["plt_ms", "ttfb_ms", "connections", "requests", "body_bytes", "client_retransmits"] {
                    put(k, f(k));
                }
            }
            Workload::Objects { .. } => {
                for k in ["total_ms", "connections", "client_retransmits"] {
                    put(k, f(k));
                }
            }
            Workload::Bulk { .. } => {
                for k in ["completion_ms", "goodput_bps", "sender_retransmits"] {
                    put(k, f(k));
                }
            }
            Workload::Realtime { .. } => {
                for (key, dir) in [("server_to_client_ms", "s2c"), ("client_to_server_ms", "c2s")] {
                    let mut lat: Vec<f64> = v.get(key).and_then(|l| l.as_array()).map(|a| a.iter().filter_map(|x| x.as_f64()).collect()).unwrap_or_default();
                    if !lat.is_empty() {
                        lat.sort_by(f64::total_cmp);
                        put(&format!("latency_ms_mean_{dir}"), Some(lat.iter().sum::<f64>() / lat.len() as f64));
                        put(&format!("latency_ms_p50_{dir}"), Some(lat[lat.len() / 2]));
                        put(&format!("messages_{dir}"), Some(lat.len() as f64));
                    }
                }
                // The figure the study reports: the update's latency.
                let s2c = m.get("latency_ms_mean_s2c").copied();
                let c2s = m.get("latency_ms_mean_c2s").copied();
                let headline = match (s2c, c2s) {
                    (Some(a), Some(b)) => Some((a + b) / 2.0),
                    (a, b) => a.or(b),
                };
                if let Some(x) = headline {
                    m.insert("latency_ms_mean".into(), x);
                }
            }
            Workload::Messages { .. } => {
                let dur = f("duration_s").unwrap_or(1.0);
                for dir in ["up", "down"] {
                    if let Some(r) = v.get(dir).filter(|r| !r.is_null()) {
                        let bytes = r.get("bytes").and_then(|x| x.as_f64()).unwrap_or(0.0);
                        put(&format!("delivered_bps_{dir}"), Some(bytes * 8.0 / dur));
                        let mut lat: Vec<f64> = r.get("latencies_ms").and_then(|l| l.as_array()).map(|a| a.iter().filter_map(|x| x.as_f64()).collect()).unwrap_or_default();
                        if !lat.is_empty() {
                            lat.sort_by(f64::total_cmp);
                            put(&format!("latency_ms_mean_{dir}"), Some(lat.iter().sum::<f64>() / lat.len() as f64));
                            put(&format!("latency_ms_p50_{dir}"), Some(lat[lat.len() / 2]));
                        }
                    }
                }
            }
        }
        m
    }

    /// The metric a report leads with, and whether lower is better.
    pub fn headline(&self) -> (&'static str, bool) {
        match self {
            Workload::Web { .. } => ("plt_ms", true),
            Workload::Objects { .. } => ("total_ms", true),
            Workload::Bulk { .. } => ("completion_ms", true),
            Workload::Realtime { .. } => ("latency_ms_mean", true),
            Workload::Messages { direction, .. } => {
                if direction == "down" {
                    ("delivered_bps_down", false)
                } else {
                    ("delivered_bps_up", false)
                }
            }
        }
    }
}

/// Adds, for every mean latency in ms, the same in round trips of the link
/// (the unit seed 001 reports in).
pub fn add_rtt_metrics(m: &mut BTreeMap<String, f64>, rtt_ms: f64) {
    if rtt_ms <= 0.0 {
        return;
    }
    let extra: Vec<(String, f64)> = m.iter().filter(|(k, _)| k.starts_with("latency_ms_mean")).map(|(k, v)| (k.replacen("latency_ms", "latency_rtt", 1), v / rtt_ms)).collect();
    m.extend(extra);
}

pub fn human_bytes(b: u64) -> String {
    if b >= 1_000_000 && b % 1000 == 0 {
        format!("{}MB", trim(b as f64 / 1e6))
    } else if b >= 1000 {
        format!("{}KB", trim(b as f64 / 1e3))
    } else {
        format!("{b}B")
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
