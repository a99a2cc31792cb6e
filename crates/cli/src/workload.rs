//! `aerolink workload …`: the workload programs themselves, run inside a
//! lab's namespaces (by `bench`, `experiment` or by hand through `run`).
//! Clients print one JSON result on stdout.

use std::net::SocketAddr;

use aerolink_work::quic::QuicKnobs;
use aerolink_work::{bulk, messages, page, server, web};
use clap::{Args, Subcommand};

use crate::error::user;

#[derive(Args, Debug, Clone)]
pub struct QuicArgs {
    /// QUIC preset: quinn (quinn's defaults), default, h-bdp1, h-bdp2 (seed
    /// 003's quic-go settings mapped to quinn; see docs/guide.md).
    #[arg(long, default_value = "quinn", help_heading = "QUIC")]
    pub quic_preset: String,
    /// QUIC congestion control: cubic, newreno, bbr.
    #[arg(long, help_heading = "QUIC")]
    pub quic_cc: Option<String>,
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
    pub fn knobs(&self) -> anyhow::Result<QuicKnobs> {
        let mut k = QuicKnobs::preset(&self.quic_preset).map_err(|m| user(format!("--quic-preset: {m}")))?;
        let custom = self.quic_iw.is_some() || self.quic_stream_window.is_some() || self.quic_conn_window.is_some();
        if let Some(cc) = &self.quic_cc {
            if !aerolink_work::quic::QUIC_CCS.contains(&cc.as_str()) {
                return Err(user(format!("--quic-cc {cc}: expected one of {}", aerolink_work::quic::QUIC_CCS.join(", "))));
            }
            k.cc = cc.clone();
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
        if custom && k.preset != "custom" {
            k.preset = format!("{}+custom", k.preset);
        }
        Ok(k)
    }
}

/// The messages workload's flags, shared by `workload messages` and `bench
/// messages` (the offered rate is `--rate` in one and `--offered` in the
/// other, where `--rate` is the link's).
#[derive(Args, Debug, Clone)]
pub struct MessagesParams {
    /// tcp or quic.
    #[arg(long, default_value = "tcp")]
    pub transport: String,
    /// down, up or both.
    #[arg(long, default_value = "up")]
    pub direction: String,
    /// Message size in bytes (at least 12).
    #[arg(long, default_value_t = 64)]
    pub size: u32,
    #[arg(long, default_value = "60s")]
    pub duration: String,
}

/// The web workload's flags, shared by `workload web` and `bench web`.
#[derive(Args, Debug, Clone)]
pub struct WebParams {
    /// h1, h1-close, h2 or h3.
    #[arg(long, default_value = "h2")]
    pub protocol: String,
    /// Objects: "10x100KB", "1x100KB+50x10KB" or "flags".
    #[arg(long, default_value = "10x100KB")]
    pub page: String,
    /// Dependency depth: 1 = HTML → objects, 2 = HTML → CSS → objects, …
    #[arg(long, default_value_t = 1)]
    pub depth: u32,
}

/// The objects workload's flags, shared by `workload objects` and
/// `bench objects`.
#[derive(Args, Debug, Clone)]
pub struct ObjectsParams {
    /// h3 or h2 (h1 for comparison).
    #[arg(long, default_value = "h3")]
    pub protocol: String,
    /// short (10×40 KB), medium (10×292 KB), long (10×4149 KB), large
    /// (2×66390 KB), all, or COUNTxSIZE.
    #[arg(long, default_value = "short")]
    pub set: String,
    /// seq or par.
    #[arg(long, default_value = "seq")]
    pub mode: String,
}

/// The real-time workload's flags, shared by `workload realtime` and
/// `bench realtime`.
#[derive(Args, Debug, Clone)]
pub struct RealtimeParams {
    /// ws, sse or alp.
    #[arg(long, default_value = "ws")]
    pub mechanism: String,
    /// server-update, client-update or chat.
    #[arg(long, default_value = "server-update")]
    pub scenario: String,
    /// Updates (or chat messages each way).
    #[arg(long, default_value_t = 100)]
    pub count: u32,
    /// Gap between updates, ms.
    #[arg(long, default_value_t = 200)]
    pub interval_ms: u64,
    /// Message size, bytes.
    #[arg(long, default_value_t = 64)]
    pub size: u32,
    /// Turn Nagle's algorithm off (it is on by default, as in the study).
    #[arg(long)]
    pub no_nagle: bool,
}

#[derive(Subcommand, Debug)]
pub enum WorkloadCmd {
    /// Serve every workload (HTTPS h1/h2 on 443/tcp, h3 on 443/udp, bulk on
    /// 5201, messages on 5301) until killed.
    Serve {
        /// Kernel TCP congestion control: reno, cubic, bbr.
        #[arg(long, default_value = "cubic")]
        cc: String,
        /// Initial congestion window of the server's routes, segments.
        #[arg(long)]
        initcwnd: Option<u32>,
        /// Leave Nagle's algorithm on (default: TCP_NODELAY).
        #[arg(long)]
        nagle: bool,
        #[command(flatten)]
        quic: QuicArgs,
    },
    /// Load a synthetic page like a browser.
    Web {
        #[arg(long)]
        server: String,
        #[command(flatten)]
        params: WebParams,
        #[command(flatten)]
        quic: QuicArgs,
    },
    /// One transfer of N bytes over kernel TCP or QUIC.
    /// Many TCP connections at once: opens COUNT connections to the bulk
    /// port, holds them all open, then each downloads SIZE. Exits 1 unless
    /// every one got all its bytes. For stress-testing what sits on the
    /// path (a PEP must carry them all).
    Conns {
        #[arg(long)]
        server: String,
        #[arg(long, default_value_t = 500)]
        count: u32,
        /// Bytes each connection downloads.
        #[arg(long, default_value_t = 10_000)]
        bytes: u64,
        /// Each download must be done this long after all are open.
        #[arg(long, default_value = "120s")]
        timeout: String,
    },
    Bulk {
        #[arg(long)]
        server: String,
        /// tcp or quic.
        #[arg(long, default_value = "tcp")]
        transport: String,
        /// down (server → client) or up.
        #[arg(long, default_value = "down")]
        direction: String,
        /// Bytes to transfer, e.g. 1000000.
        #[arg(long, default_value_t = 1_000_000)]
        bytes: u64,
        /// The client socket's congestion control (matters for uploads).
        #[arg(long, default_value = "cubic")]
        cc: String,
        #[command(flatten)]
        quic: QuicArgs,
    },
    /// Seed 003's object sets, one after another or in parallel.
    Objects {
        #[arg(long)]
        server: String,
        #[command(flatten)]
        params: ObjectsParams,
        #[command(flatten)]
        quic: QuicArgs,
    },
    /// Seed 001's real-time web: server update, client update, chat over
    /// WebSocket, server-sent events or long polling.
    Realtime {
        #[arg(long)]
        server: String,
        #[command(flatten)]
        params: RealtimeParams,
    },
    /// Seed 004's message generator over TCP.
    Messages {
        #[arg(long)]
        server: String,
        #[command(flatten)]
        params: MessagesParams,
        /// Offered rate, e.g. "1024bit/s".
        #[arg(long, default_value = "1024bit/s")]
        rate: String,
        /// Leave Nagle's algorithm on.
        #[arg(long)]
        nagle: bool,
        #[command(flatten)]
        quic: QuicArgs,
    },
}

fn addr(s: &str) -> anyhow::Result<SocketAddr> {
    let host = s.trim_start_matches('[').trim_end_matches(']');
    let ip: std::net::IpAddr = host.parse().map_err(|_| user(format!("--server {s}: expected an IP address")))?;
    Ok(SocketAddr::new(ip, 0))
}

fn with_port(a: SocketAddr, port: u16) -> SocketAddr {
    SocketAddr::new(a.ip(), port)
}

fn print<T: serde::Serialize>(v: &T) -> anyhow::Result<i32> {
    println!("{}", serde_json::to_string(v)?);
    Ok(0)
}

pub fn run(cmd: WorkloadCmd) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        match cmd {
            WorkloadCmd::Serve { cc, initcwnd, nagle, quic } => {
                if !aerolink_work::sock::TCP_CCS.contains(&cc.as_str()) {
                    return Err(user(format!("--cc {cc}: expected one of {}", aerolink_work::sock::TCP_CCS.join(", "))));
                }
                server::serve(server::ServerOpts { tcp_cc: cc, initcwnd, quic: quic.knobs()?, nagle }).await?;
                Ok(0)
            }
            WorkloadCmd::Web { server, params: WebParams { protocol, page, depth }, quic } => {
                if !web::PROTOCOLS.contains(&protocol.as_str()) {
                    return Err(user(format!("--protocol {protocol}: expected one of {}", web::PROTOCOLS.join(", "))));
                }
                let p = page::Page::parse(&page, depth).map_err(|m| user(format!("--page {page}: expected {m}")))?;
                print(&web::load(&protocol, with_port(addr(&server)?, server::HTTPS_PORT), &p, &quic.knobs()?).await?)
            }
            WorkloadCmd::Conns { server, count, bytes, timeout } => {
                if count == 0 {
                    return Err(user("--count: expected at least 1"));
                }
                let timeout = aerolink_link::units::parse_duration(&timeout).map_err(|m| user(format!("--timeout {timeout}: expected {m}")))?;
                let timeout = std::time::Duration::from_nanos(timeout.0);
                aerolink_pep::relay::raise_fd_limit();
                let r = bulk::concurrent(with_port(addr(&server)?, server::BULK_PORT), count, bytes, timeout).await?;
                print(&r)?;
                Ok(if r.failed == 0 { 0 } else { 1 })
            }
            WorkloadCmd::Bulk { server, transport, direction, bytes, cc, quic } => {
                let dir = match direction.as_str() {
                    "down" => bulk::Direction::Down,
                    "up" => bulk::Direction::Up,
                    _ => return Err(user(format!("--direction {direction}: expected down or up"))),
                };
                let a = with_port(addr(&server)?, server::BULK_PORT);
                match transport.as_str() {
                    "tcp" => print(&bulk::tcp(a, dir, bytes, &cc).await?),
                    "quic" => print(&bulk::quic(a, dir, bytes, &quic.knobs()?).await?),
                    _ => Err(user(format!("--transport {transport}: expected tcp or quic"))),
                }
            }
            WorkloadCmd::Objects { server, params: ObjectsParams { protocol, set, mode }, quic } => {
                let sizes = page::object_set(&set).map_err(|m| user(format!("--set: {m}")))?;
                let parallel = match mode.as_str() {
                    "seq" => false,
                    "par" => true,
                    _ => return Err(user(format!("--mode {mode}: expected seq or par"))),
                };
                print(&web::objects(&protocol, with_port(addr(&server)?, server::HTTPS_PORT), &set, &sizes, parallel, &quic.knobs()?).await?)
            }
            WorkloadCmd::Realtime { server, params: RealtimeParams { mechanism, scenario, count, interval_ms, size, no_nagle } } => {
                let ip = addr(&server)?.ip();
                let p = aerolink_work::realtime::Params { scenario, count, interval_ms, size: size as usize };
                print(&aerolink_work::realtime::run(ip, &mechanism, &p, !no_nagle).await?)
            }
            WorkloadCmd::Messages { server, params: MessagesParams { transport, direction, size, duration }, rate, nagle, quic } => {
                let r = aerolink_link::units::parse_rate(&rate).map_err(|m| user(format!("--rate {rate}: expected {m}")))?;
                let d = aerolink_link::units::parse_duration(&duration).map_err(|m| user(format!("--duration {duration}: expected {m}")))?;
                let a = with_port(addr(&server)?, server::MESSAGES_PORT);
                print(&messages::run(a, &transport, &direction, size, r.bits_per_sec, std::time::Duration::from_nanos(d.0), nagle, &quic.knobs()?).await?)
            }
        }
    })
}
