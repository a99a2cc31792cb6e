//! What a run executes: a workload with its parameters, and the knobs of
//! the stacks — typed once, turned into the command lines of the server
//! and client programs.

use aerolink_link::units::Rate;
use aerolink_link::Duration;
use aerolink_work::browser::BrowserProtocol;
use aerolink_work::bulk::Direction as BulkDirection;
use aerolink_work::cli::{BrowserArgs, BrowserParams, BulkArgs, MessagesArgs, MessagesParams, ObjectsArgs, ObjectsParams, PingArgs, RealtimeArgs, RealtimeParams, WebArgs, WebParams, WorkloadCmd};
use aerolink_work::messages::Direction as MessagesDirection;
use aerolink_work::quic::QuicArgs;
use aerolink_work::realtime::{Mechanism, Scenario};
use aerolink_work::web::{ObjectsMode, Protocol};
use aerolink_work::Transport;
use serde::{Deserialize, Serialize};

use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

mod knobs;
mod result;
pub use knobs::{Cross, Knobs, Reordering};
pub use result::WorkloadResult;

/// A workload whose values cannot run. Always the user's to fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    #[error("page {page:?}: expected {why}")]
    Page { page: String, why: String },
    #[error("size must be more than 0")]
    Empty,
    #[error("{0}")]
    Set(String),
    #[error("count must be at least 1 and size at least 24 bytes")]
    Realtime,
    #[error("size {0}: messages need at least 12 bytes (timestamp + length)")]
    MessageSize(u32),
    #[error("rate and duration must be positive")]
    MessagesRate,
    #[error("down_size and down_rate (the ground's own offer) need directions = \"both\"")]
    MessagesDownOffer,
    #[error("page {0:?}: expected a corpus page ({1}), a synthetic page like 10x100KB, or an http:// or https:// URL")]
    BrowserPage(String, String),
    #[error("count must be at least 1, the interval at least 2 ms (ping's limit for an ordinary user: Debian's iputils refuses less) and the size at most 65507 bytes")]
    Ping,
}

/// What a run executes, typed. Its JSON form is stored with every result
/// and is part of the run's key, so field names and value spellings stay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "workload", rename_all = "lowercase")]
pub enum Workload {
    Web {
        protocol: Protocol,
        page: String,
        depth: u32,
    },
    Bulk {
        transport: Transport,
        direction: BulkDirection,
        bytes: u64,
    },
    Objects {
        protocol: Protocol,
        set: String,
        parallel: bool,
    },
    Messages {
        #[serde(default = "tcp")]
        transport: Transport,
        direction: MessagesDirection,
        size: u32,
        rate_bps: f64,
        duration_s: f64,
        /// Both ways at once: the ground's own size and rate (seed 004's
        /// third two-way test); `None`, the same as the aircraft's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        down: Option<aerolink_work::messages::Offer>,
    },
    Realtime {
        mechanism: Mechanism,
        scenario: Scenario,
        count: u32,
        interval_ms: u64,
        size: u32,
    },
    /// Echo requests by Debian's ping, each reply's round-trip time.
    Ping {
        count: u32,
        interval_ms: u64,
        size: u32,
    },
    /// A page load in a real browser (Chromium).
    Browser {
        protocol: BrowserProtocol,
        page: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        warm: bool,
        /// Where to write the HAR and the screenshot (`bench browser`);
        /// not part of what a run is.
        #[serde(skip)]
        har: Option<std::path::PathBuf>,
        #[serde(skip)]
        screenshot: Option<std::path::PathBuf>,
        /// Where Chromium writes its net log (`bench browser --net-log`).
        #[serde(skip)]
        net_log: Option<std::path::PathBuf>,
    },
}

fn tcp() -> Transport {
    Transport::Tcp
}

pub(crate) fn with_prefix(cmd: WorkloadCmd) -> Vec<String> {
    let mut a = vec!["workload".to_string()];
    a.extend(cmd.to_args());
    a
}

impl Workload {
    /// The bytes a run moves, as far as the workload says (pages, object
    /// sets, bulk transfers, corpus pages; 0 for paced workloads).
    pub fn expected_bytes(&self) -> u64 {
        match self {
            Workload::Web { page, depth, .. } => aerolink_work::page::Page::parse(page, *depth).map(|p| p.total_bytes()).unwrap_or(0),
            Workload::Objects { set, .. } => aerolink_work::page::object_set(set).map(|v| v.iter().sum()).unwrap_or(0),
            Workload::Bulk { bytes, .. } => *bytes,
            Workload::Browser { page, .. } => aerolink_work::corpus::shape(page).map(|s| s.kilobytes() as u64 * 1000).unwrap_or(0),
            Workload::Messages { .. } | Workload::Realtime { .. } | Workload::Ping { .. } => 0,
        }
    }

    /// Seconds a paced workload runs whatever the link (messages for their
    /// duration, real-time updates at their interval); 0 for the others.
    pub fn paced_seconds(&self) -> f64 {
        match self {
            Workload::Messages { duration_s, .. } => *duration_s,
            Workload::Realtime { count, interval_ms, .. } | Workload::Ping { count, interval_ms, .. } => *count as f64 * *interval_ms as f64 / 1e3,
            _ => 0.0,
        }
    }

    /// Checks what the types do not: sizes, counts, page and set names.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        match self {
            Workload::Web { page, depth, .. } => {
                aerolink_work::page::Page::parse(page, *depth).map_err(|why| WorkloadError::Page { page: page.clone(), why })?;
            }
            Workload::Bulk { bytes, .. } => {
                if *bytes == 0 {
                    return Err(WorkloadError::Empty);
                }
            }
            Workload::Objects { set, .. } => {
                aerolink_work::page::object_set(set).map_err(WorkloadError::Set)?;
            }
            Workload::Realtime { count, size, .. } => {
                if *count == 0 || *size < 24 {
                    return Err(WorkloadError::Realtime);
                }
            }
            Workload::Messages { size, rate_bps, duration_s, down, direction, .. } => {
                for (size, rate) in [(*size, *rate_bps)].into_iter().chain(down.map(|d| (d.size, d.rate_bps))) {
                    if size < aerolink_work::messages::MIN_SIZE {
                        return Err(WorkloadError::MessageSize(size));
                    }
                    if rate <= 0.0 {
                        return Err(WorkloadError::MessagesRate);
                    }
                }
                if *duration_s <= 0.0 {
                    return Err(WorkloadError::MessagesRate);
                }
                if down.is_some() && *direction != MessagesDirection::Both {
                    return Err(WorkloadError::MessagesDownOffer);
                }
            }
            Workload::Ping { count, interval_ms, size } => {
                if *count == 0 || *interval_ms < 2 || *size > aerolink_work::ping::MAX_SIZE {
                    return Err(WorkloadError::Ping);
                }
            }
            Workload::Browser { page, .. } => {
                if aerolink_work::browser::page_url(page).is_none() {
                    return Err(WorkloadError::BrowserPage(page.clone(), aerolink_work::corpus::names().join(", ")));
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
            Workload::Ping { .. } => "ping",
            Workload::Realtime { .. } => "realtime",
            Workload::Browser { .. } => "browser",
        }
    }

    /// The protocol or transport, for grouping results.
    pub fn protocol(&self) -> String {
        match self {
            Workload::Web { protocol, .. } | Workload::Objects { protocol, .. } => protocol.to_string(),
            Workload::Bulk { transport, .. } | Workload::Messages { transport, .. } => transport.to_string(),
            Workload::Realtime { mechanism, .. } => mechanism.to_string(),
            Workload::Ping { .. } => "icmp".to_string(),
            Workload::Browser { protocol, .. } => format!("browser {protocol}"),
        }
    }

    /// A short label of the parameters (not the protocol), for grouping.
    pub fn params_label(&self) -> String {
        match self {
            Workload::Web { page, depth, .. } => {
                if *depth > 1 {
                    format!("{page} depth {depth}")
                } else {
                    page.clone()
                }
            }
            Workload::Bulk { direction, bytes, .. } => format!("{} {direction}", human_bytes(*bytes)),
            Workload::Objects { set, parallel, .. } => format!("{set} {}", if *parallel { "par" } else { "seq" }),
            Workload::Messages { size, rate_bps, down: Some(d), .. } => format!("{size} B at {rate_bps} bit/s up, {} B at {} bit/s down", d.size, d.rate_bps),
            Workload::Messages { direction, size, rate_bps, .. } => format!("{size} B at {} bit/s {direction}", rate_bps),
            Workload::Realtime { scenario, count, .. } => format!("{scenario} ×{count}"),
            Workload::Ping { count, interval_ms, size } => format!("{size} B every {interval_ms} ms ×{count}"),
            Workload::Browser { page, warm, .. } => {
                if *warm {
                    format!("{page} warm")
                } else {
                    page.clone()
                }
            }
        }
    }

    /// The client program of this workload against `server`.
    pub fn client_cmd(&self, server: &str, knobs: &Knobs) -> WorkloadCmd {
        let server = server.to_string();
        let quic = QuicArgs::from(&knobs.quic);
        match self {
            Workload::Web { protocol, page, depth } => WorkloadCmd::Web(WebArgs { server, params: WebParams { protocol: *protocol, page: page.clone(), depth: *depth }, quic }),
            Workload::Bulk { transport, direction, bytes } => {
                WorkloadCmd::Bulk(BulkArgs { server, transport: *transport, direction: *direction, bytes: *bytes, cc: knobs.tcp_cc, tcp: knobs.tcp, quic })
            }
            Workload::Objects { protocol, set, parallel } => {
                let mode = if *parallel { ObjectsMode::Par } else { ObjectsMode::Seq };
                WorkloadCmd::Objects(ObjectsArgs { server, params: ObjectsParams { protocol: *protocol, set: set.clone(), mode }, quic })
            }
            Workload::Messages { transport, direction, size, rate_bps, duration_s, down } => {
                let params = MessagesParams { transport: *transport, direction: *direction, size: *size, duration: Duration::from_secs_f64(*duration_s) };
                WorkloadCmd::Messages(MessagesArgs {
                    server,
                    params,
                    rate: Rate { bits_per_sec: *rate_bps },
                    nagle: knobs.nagle,
                    stamp: knobs.message_stamp,
                    down_size: down.map(|d| d.size),
                    down_rate: down.map(|d| Rate { bits_per_sec: d.rate_bps }),
                    quic,
                })
            }
            Workload::Realtime { mechanism, scenario, count, interval_ms, size } => {
                let params = RealtimeParams { mechanism: *mechanism, scenario: *scenario, count: *count, interval_ms: *interval_ms, size: *size, no_nagle: !knobs.nagle };
                WorkloadCmd::Realtime(RealtimeArgs { server, params })
            }
            Workload::Ping { count, interval_ms, size } => WorkloadCmd::Ping(PingArgs {
                server,
                count: *count,
                interval: Duration::from_millis(*interval_ms),
                size: *size,
                // Long enough for a reply queued behind a minute of
                // Iridium backlog.
                wait: Duration::from_secs(60),
            }),
            Workload::Browser { protocol, page, warm, har, screenshot, net_log } => {
                let params = BrowserParams { protocol: *protocol, page: page.clone(), warm: *warm };
                WorkloadCmd::Browser(BrowserArgs { server, params, har: har.clone(), screenshot: screenshot.clone(), net_log: net_log.clone(), timeout: Duration::from_secs(600) })
            }
        }
    }

    /// The same workload keeping Chromium's net log at `path` (a browser
    /// run of `experiment run --traces`); any other workload as it is.
    pub fn with_net_log(&self, path: std::path::PathBuf) -> Workload {
        let mut w = self.clone();
        if let Workload::Browser { net_log, .. } = &mut w {
            *net_log = Some(path);
        }
        w
    }

    /// The client's command line after `aerolink`.
    pub fn client_args(&self, server: &str, knobs: &Knobs) -> Vec<String> {
        with_prefix(self.client_cmd(server, knobs))
    }

    /// The metrics the report's table shows beside the headline.
    pub fn table_metrics(&self) -> Vec<Metric> {
        match self {
            Workload::Web { .. } => vec![TtfbMs, Connections, ClientRetransmits, LinkDropsDown, LinkDropsUp],
            Workload::Browser { .. } => vec![FcpMs, LcpMs, Connections, LinkDropsDown, LinkDropsUp],
            Workload::Objects { .. } => vec![Connections, ClientRetransmits, LinkDropsDown, LinkDropsUp],
            Workload::Bulk { .. } => vec![GoodputBps, SenderRetransmits, SenderSrttMsMax, LinkDropsDown, LinkDropsUp],
            Workload::Realtime { .. } => vec![LatencyPassesMean, LatencyMsMeanS2c, LatencyMsMeanC2s, Connections],
            Workload::Ping { .. } => vec![RttMsSd, RttMsMin, RttMsMax, PingLossPct],
            Workload::Messages { direction: MessagesDirection::Down, .. } => vec![LatencyMsMeanDown, LatencyMsP50Down],
            Workload::Messages { direction: MessagesDirection::Both, .. } => vec![DeliveredBpsDown, LatencyMsMeanUp, LatencyMsMeanDown, LatencyMsMeanBoth],
            Workload::Messages { .. } => vec![LatencyMsMeanUp, LatencyMsP50Up],
        }
    }

    /// The metric a report leads with (its [`Metric::better`] says which
    /// way is better).
    pub fn headline(&self) -> Metric {
        match self {
            Workload::Web { .. } | Workload::Browser { .. } => PltMs,
            Workload::Objects { .. } => TotalMs,
            Workload::Bulk { .. } => CompletionMs,
            Workload::Realtime { .. } => LatencyMsMean,
            Workload::Ping { .. } => RttMsMean,
            Workload::Messages { direction: MessagesDirection::Down, .. } => DeliveredBpsDown,
            Workload::Messages { .. } => DeliveredBpsUp,
        }
    }
}

/// Adds, for every mean latency in ms, the same in round trips of the link
/// (`latency_rtt_…`) and in passes over it (`latency_passes_…`: one-way
/// delays, half an RTT). Seed 001 §8 counts in passes: its emulator put
/// 600 ms on each pass, and it calls that an RTT ("WebSocket completes an
/// update in one RTT, SSE in two, long polling in at least two, about
/// 1.2 s").
pub fn add_rtt_metrics(m: &mut Metrics, rtt_ms: f64) {
    if rtt_ms <= 0.0 {
        return;
    }
    let extra: Vec<(Metric, f64)> = m.iter().filter_map(|(k, v)| k.in_rtts().map(|(r, p)| [(r, v / rtt_ms), (p, v / (rtt_ms / 2.0))])).flatten().collect();
    m.extend(extra);
}

pub fn human_bytes(b: u64) -> String {
    if b >= 1_000_000 && b.is_multiple_of(1000) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_give_a_browser_run_its_net_log_and_leave_other_workloads_alone() {
        let b = Workload::Browser { protocol: aerolink_work::browser::BrowserProtocol::H2, page: "10x100KB".into(), warm: false, har: None, screenshot: None, net_log: None };
        let args = b.with_net_log("/t/KEY/netlog.json".into()).client_args("198.18.0.2", &Knobs::default());
        let at = args.iter().position(|a| a == "--net-log").expect("a --net-log flag");
        assert_eq!(args[at + 1], "/t/KEY/netlog.json");
        // Not part of what the run is: its key is the same.
        assert_eq!(serde_json::to_string(&b.with_net_log("/x".into())).unwrap(), serde_json::to_string(&b).unwrap());
        let w = Workload::Messages { transport: Transport::Tcp, direction: MessagesDirection::Up, size: 64, rate_bps: 2048.0, duration_s: 10.0, down: None };
        assert_eq!(w.with_net_log("/x".into()), w);
    }
}
