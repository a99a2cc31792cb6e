//! The workload programs' command lines, typed: `aerolink workload serve |
//! web | bulk | objects | messages | realtime | conns | browser`.
//!
//! One definition serves both ends: the binary parses its flags with it
//! (clap), and whoever launches a workload in a lab (experiments, benches)
//! builds the same typed value and turns it into arguments with
//! [`WorkloadCmd::to_args`]. [`WorkloadCmd::from_args`] parses them back; a
//! test round-trips every variant, so a renamed flag fails a unit test, not
//! an end-to-end run as root.

use clap::{Args, Parser, Subcommand};

use aerolink_link::units::{self, Rate};
use aerolink_link::Duration;

use crate::browser::BrowserProtocol;
use crate::bulk::Direction as BulkDirection;
use crate::messages::Direction as MessagesDirection;
use crate::quic::QuicArgs;
use crate::realtime::{Mechanism, Scenario};
use crate::sock::TcpCc;
use crate::web::{ObjectsMode, Protocol};
use crate::Transport;

/// `--rate`-style values: `2Mbit/s`, `1024bit/s`, `1.5 Mbit/s`.
pub fn rate_arg(s: &str) -> Result<Rate, String> {
    units::parse_rate(s).map_err(|m| format!("expected {m}"))
}

/// Duration values: `60s`, `250 ms`.
pub fn duration_arg(s: &str) -> Result<Duration, String> {
    units::parse_duration(s).map_err(|m| format!("expected {m}"))
}

/// A rate as a command line gives it back exactly.
pub fn rate_text(r: Rate) -> String {
    format!("{}bit/s", r.bits_per_sec)
}

/// A duration as a command line gives it back exactly.
pub fn duration_text(d: Duration) -> String {
    format!("{}ns", d.0)
}

#[derive(Subcommand, Debug, Clone, PartialEq)]
pub enum WorkloadCmd {
    /// Serve every workload (HTTPS h1/h2 on 443/tcp, h3 on 443/udp, bulk on
    /// 5201, messages on 5301, names on 53/udp) until killed.
    Serve(ServeArgs),
    /// Load a synthetic page like a browser.
    Web(WebArgs),
    /// Many TCP connections at once: opens COUNT connections to the bulk
    /// port, holds them all open, then each downloads SIZE. Exits 1 unless
    /// every one got all its bytes. For stress-testing what sits on the
    /// path (a PEP must carry them all).
    Conns(ConnsArgs),
    /// One transfer of N bytes over kernel TCP or QUIC.
    Bulk(BulkArgs),
    /// Passengers behind one aircraft link: each of the lab's first N
    /// passenger addresses downloads BYTES over TCP at once; the median and
    /// slowest completion, total goodput and Jain's index.
    Cabin(CabinArgs),
    /// Seed 003's object sets, one after another or in parallel.
    Objects(ObjectsArgs),
    /// Seed 001's real-time web: server update, client update, chat over
    /// WebSocket, server-sent events or long polling.
    Realtime(RealtimeArgs),
    /// Seed 004's message generator over TCP or QUIC.
    Messages(MessagesArgs),
    /// Debian's ping to the server: COUNT echo requests of SIZE bytes
    /// every INTERVAL, each reply's round-trip time (seed 004's channel
    /// pings, seed 002's RTT per segment size, seed 000's flight pings).
    Ping(PingArgs),
    /// Load a page in a real browser (headless Chromium over the DevTools
    /// protocol): paint and load timings, connections, protocols, HAR.
    Browser(BrowserArgs),
    /// DNS lookups of COUNT names (site1.test …), each twice back to back,
    /// at RESOLVER (the server, which answers every name, or a caching
    /// resolver aboard), ROUNDS times every INTERVAL: seed 000 §5.1.
    Dns(DnsArgs),
    /// COUNT messages of SIZE bytes through one direction of a link
    /// profile's model in simulated time (no lab, no packets: the stages a
    /// pump runs, driven by a jumping clock): the share lost, the share of
    /// tries that failed and the loss after the link's ARQ retries if each
    /// try failed independently. Ten million messages take seconds; for
    /// losses too rare to count on a real link (seed 002 §6).
    LinkSim(LinkSimArgs),
}

/// The browser workload's parameters, shared by `workload browser` and
/// `bench browser`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct BrowserParams {
    /// h1 (HTTP/1.1 only), h2 (HTTP/2, no QUIC), h3 (QUIC forced on
    /// every origin) or auto (Chromium's own choice: HTTP/2, then HTTP/3
    /// where Alt-Svc advertised it).
    #[arg(long, default_value = "h2")]
    pub protocol: BrowserProtocol,
    /// A corpus page (median, mobile, heavy, news, spa, blog, portal,
    /// search; `aerolink replay list`), a synthetic page like 10x100KB (the
    /// one `web` loads), or a URL served by `aerolink replay serve`.
    #[arg(long, default_value = "median")]
    pub page: String,
    /// Load the page once first in the same profile and measure the second
    /// load (warm caches; default: a fresh profile, cold caches).
    #[arg(long)]
    pub warm: bool,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct BrowserArgs {
    /// The server's address: every host name resolves to it (unless
    /// --resolver).
    #[arg(long)]
    pub server: String,
    /// Resolve names by DNS at this resolver (its IP address, port 53)
    /// instead: the load's own /etc/resolv.conf names it (in the lab's
    /// mount namespace only), so every origin costs a lookup as on a real
    /// device.
    #[arg(long, value_name = "ADDR")]
    pub resolver: Option<String>,
    /// Send every request through this HTTP proxy (`ADDR:PORT`, e.g. a
    /// cache aboard); the browser's own cache is then off, so a second
    /// load (--warm) is answered by the proxy's.
    #[arg(long, value_name = "ADDR:PORT")]
    pub proxy: Option<String>,
    #[command(flatten)]
    pub params: BrowserParams,
    /// Write the load's HAR 1.2 here.
    #[arg(long, value_name = "FILE")]
    pub har: Option<std::path::PathBuf>,
    /// Write a PNG screenshot taken after onload here.
    #[arg(long, value_name = "FILE")]
    pub screenshot: Option<std::path::PathBuf>,
    /// Chromium writes its net log here (JSON, every socket, stream and
    /// QUIC session event; Chrome's netlog viewer reads it).
    #[arg(long, value_name = "FILE")]
    pub net_log: Option<std::path::PathBuf>,
    /// Give up on a load after this long.
    #[arg(long, default_value = "300s", value_parser = duration_arg)]
    pub timeout: Duration,
}

/// The server's settings: also what every workload benchmark takes.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct ServeArgs {
    /// Kernel TCP congestion control of the server's sockets (and of the
    /// client's for uploads).
    #[arg(long, default_value = "cubic")]
    pub cc: TcpCc,
    /// Initial congestion window of the server's routes, segments.
    #[arg(long)]
    pub initcwnd: Option<u32>,
    /// Leave Nagle's algorithm on (default: TCP_NODELAY).
    #[arg(long)]
    pub nagle: bool,
    /// HTTP/2 server push: push this share (0–100 %) of a page's objects
    /// with its HTML. The web client accepts push; Chromium (since 106)
    /// refuses it.
    #[arg(long, default_value_t = 0, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(0..=100))]
    pub push: u8,
    #[command(flatten)]
    pub quic: QuicArgs,
    /// Answer every name asked on 53/udp with this address (default
    /// 198.18.255.254, where nothing listens: the `dns` workload only
    /// times lookups); a browser resolving by DNS needs the server's own.
    #[arg(long, value_name = "ADDR")]
    pub dns_answer: Option<std::net::Ipv4Addr>,
    /// Keep TLS sessions so a client's later connections resume them (no
    /// certificate sent again), as servers and browsers do; off, every
    /// connection makes a full handshake.
    #[arg(long)]
    pub tls_resume: bool,
}

/// The web workload's parameters, shared by `workload web` and `bench web`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct WebParams {
    #[arg(long, default_value = "h2")]
    pub protocol: Protocol,
    /// Objects: "10x100KB", "1x100KB+50x10KB" or "flags".
    #[arg(long, default_value = "10x100KB")]
    pub page: String,
    /// Dependency depth: 1 = HTML → objects, 2 = HTML → CSS → objects, …
    #[arg(long, default_value_t = 1)]
    pub depth: u32,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct WebArgs {
    /// The server's address (the lab sets $AEROLINK_SERVER).
    #[arg(long)]
    pub server: String,
    /// Look the page's name (aerolink.test) up at this resolver (its IP
    /// address, port 53) and load from the address it answers: the lookup
    /// is part of the page load, as a browser's is (`dns_ms`).
    #[arg(long, value_name = "ADDR")]
    pub resolver: Option<String>,
    #[command(flatten)]
    pub params: WebParams,
    #[command(flatten)]
    pub quic: QuicArgs,
    /// Resume earlier connections' TLS sessions (a browser does; the
    /// server must keep them: `workload serve --tls-resume`).
    #[arg(long)]
    pub tls_resume: bool,
    #[command(flatten)]
    pub client: WebClientArgs,
}

/// The web client's settings that `workload web` and `bench web` share.
#[derive(Args, Debug, Clone, Default, PartialEq)]
pub struct WebClientArgs {
    /// The HTTP/2 client's receive windows, bytes, per stream and for the
    /// connection (default: 2 MB and 5 MB, a browser's order). 65535 is
    /// the protocol's initial window, which a client that never raises it
    /// keeps (nghttp2's command line by default): one window a round trip.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(65_535..=2_147_483_647))]
    pub h2_window: Option<u32>,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct CabinArgs {
    #[arg(long)]
    pub server: String,
    /// Passengers downloading at once, each from its own address: the
    /// first N of the lab's $AEROLINK_PASSENGERS (`run --passengers`).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=240))]
    pub passengers: u16,
    /// Bytes each passenger moves: 1000000, 500KB, 1MiB.
    #[arg(long, default_value = "1000000", value_parser = bytes_arg)]
    pub bytes: u64,
    /// `down`: each passenger downloads from the server; `up`: each sends
    /// to it (the return link carries the data, the forward the ACKs).
    #[arg(long, default_value = "down")]
    pub direction: crate::bulk::Direction,
    /// The client sockets' congestion control (what sends, for `up`).
    #[arg(long, default_value = "cubic")]
    pub cc: TcpCc,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct ConnsArgs {
    #[arg(long)]
    pub server: String,
    #[arg(long, default_value_t = 500)]
    pub count: u32,
    /// Bytes each connection downloads: 10000, 10KB, 1MiB.
    #[arg(long, default_value = "10000", value_parser = bytes_arg)]
    pub bytes: u64,
    /// Each download must be done this long after all are open.
    #[arg(long, default_value = "120s", value_parser = duration_arg)]
    pub timeout: Duration,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct BulkArgs {
    #[arg(long)]
    pub server: String,
    #[arg(long, default_value = "tcp")]
    pub transport: Transport,
    #[arg(long, default_value = "down")]
    pub direction: BulkDirection,
    /// Bytes to transfer: 1000000, 110KB, 1MiB (as experiment files write them).
    #[arg(long, default_value = "1000000", value_parser = bytes_arg)]
    pub bytes: u64,
    /// The client socket's congestion control (matters for uploads).
    #[arg(long, default_value = "cubic")]
    pub cc: TcpCc,
    #[command(flatten)]
    pub tcp: TcpClientArgs,
    #[command(flatten)]
    pub quic: QuicArgs,
}

/// The TCP client socket's settings beyond its congestion control.
#[derive(Args, Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TcpClientArgs {
    /// Largest TCP segment the client announces and sends (TCP_MAXSEG), bytes.
    #[arg(long, value_name = "BYTES", help_heading = "TCP")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    /// The client's receive buffer (SO_RCVBUF), bytes: bounds the window a
    /// download sees (Linux doubles it and advertises about half of that).
    #[arg(long, value_name = "BYTES", help_heading = "TCP")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf: Option<u32>,
    /// Acknowledge every segment at once (no delayed ACKs, TCP_QUICKACK).
    #[arg(long, help_heading = "TCP")]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quickack: bool,
}

impl TcpClientArgs {
    /// Whether every setting is the kernel's default.
    pub fn is_default(&self) -> bool {
        *self == TcpClientArgs::default()
    }
    fn push(&self, a: &mut Vec<String>) {
        if let Some(m) = self.mss {
            flag(a, "mss", m);
        }
        if let Some(b) = self.rcvbuf {
            flag(a, "rcvbuf", b);
        }
        switch(a, "quickack", self.quickack);
    }
}

/// The objects workload's parameters, shared by `workload objects` and
/// `bench objects`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct ObjectsParams {
    /// h3 or h2 (h1 for comparison).
    #[arg(long, default_value = "h3")]
    pub protocol: Protocol,
    /// short (10×40 KB), medium (10×292 KB), long (10×4149 KB), large
    /// (2×66390 KB), all, or COUNTxSIZE.
    #[arg(long, default_value = "short")]
    pub set: String,
    #[arg(long, default_value = "seq")]
    pub mode: ObjectsMode,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct ObjectsArgs {
    #[arg(long)]
    pub server: String,
    #[command(flatten)]
    pub params: ObjectsParams,
    #[command(flatten)]
    pub quic: QuicArgs,
}

/// The real-time workload's parameters, shared by `workload realtime` and
/// `bench realtime`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct RealtimeParams {
    #[arg(long, default_value = "ws")]
    pub mechanism: Mechanism,
    #[arg(long, default_value = "server-update")]
    pub scenario: Scenario,
    /// Updates (or chat messages each way).
    #[arg(long, default_value_t = 100)]
    pub count: u32,
    /// Gap between updates, ms.
    #[arg(long, default_value_t = 200)]
    pub interval_ms: u64,
    /// Message size, bytes (at least 24).
    #[arg(long, default_value_t = 64)]
    pub size: u32,
    /// Turn Nagle's algorithm off (it is on by default, as in the study).
    #[arg(long)]
    pub no_nagle: bool,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct RealtimeArgs {
    #[arg(long)]
    pub server: String,
    #[command(flatten)]
    pub params: RealtimeParams,
}

/// The messages workload's parameters, shared by `workload messages` and
/// `bench messages` (the offered rate is `--rate` in one and `--offered`
/// in the other, where `--rate` is the link's).
#[derive(Args, Debug, Clone, PartialEq)]
pub struct MessagesParams {
    #[arg(long, default_value = "tcp")]
    pub transport: Transport,
    #[arg(long, default_value = "up")]
    pub direction: MessagesDirection,
    /// Message size in bytes (at least 12).
    #[arg(long, default_value_t = 64)]
    pub size: u32,
    #[arg(long, default_value = "60s", value_parser = duration_arg)]
    pub duration: Duration,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct MessagesArgs {
    #[arg(long)]
    pub server: String,
    #[command(flatten)]
    pub params: MessagesParams,
    /// Offered rate, e.g. "1024bit/s".
    #[arg(long, default_value = "1024bit/s", value_parser = rate_arg)]
    pub rate: Rate,
    /// Leave Nagle's algorithm on.
    #[arg(long)]
    pub nagle: bool,
    /// A message's offer time, from which its latency counts: its place in
    /// the rate's schedule, or when its write starts (send).
    #[arg(long, default_value = "schedule")]
    pub stamp: crate::messages::Stamp,
    /// Both ways at once: the server's own message size (default: --size).
    #[arg(long, value_name = "BYTES")]
    pub down_size: Option<u32>,
    /// Both ways at once: the server's own offered rate (default: --rate).
    #[arg(long, value_name = "RATE", value_parser = rate_arg)]
    pub down_rate: Option<Rate>,
    #[command(flatten)]
    pub quic: QuicArgs,
}

impl BrowserArgs {
    /// Its flags, for [`WorkloadCmd::to_args`].
    fn push(&self, a: &mut Vec<String>) {
        flag(a, "server", &self.server);
        if let Some(r) = &self.resolver {
            flag(a, "resolver", r);
        }
        if let Some(p) = &self.proxy {
            flag(a, "proxy", p);
        }
        flag(a, "protocol", self.params.protocol);
        flag(a, "page", &self.params.page);
        switch(a, "warm", self.params.warm);
        if let Some(p) = &self.har {
            flag(a, "har", p.display());
        }
        if let Some(p) = &self.screenshot {
            flag(a, "screenshot", p.display());
        }
        if let Some(p) = &self.net_log {
            flag(a, "net-log", p.display());
        }
        flag(a, "timeout", duration_text(self.timeout));
    }
}

/// For parsing a workload command line on its own.
#[derive(Parser, Debug)]
#[command(name = "workload", no_binary_name = true)]
struct Line {
    #[command(subcommand)]
    cmd: WorkloadCmd,
}

/// Appends `--name value` (for `to_args` of typed commands).
pub fn flag(a: &mut Vec<String>, name: &str, value: impl ToString) {
    a.push(format!("--{name}"));
    a.push(value.to_string());
}

/// Appends `--name` when `on`.
pub fn switch(a: &mut Vec<String>, name: &str, on: bool) {
    if on {
        a.push(format!("--{name}"));
    }
}

impl MessagesArgs {
    /// The test these flags ask for.
    pub fn spec(&self) -> crate::messages::Spec {
        let p = &self.params;
        let offer = crate::messages::Offer { size: p.size, rate_bps: self.rate.bits_per_sec };
        let down = crate::messages::Offer::ground(offer, self.down_size, self.down_rate.map(|r| r.bits_per_sec));
        crate::messages::Spec { transport: p.transport, direction: p.direction, offer, down, duration: std::time::Duration::from_nanos(p.duration.0), nagle: self.nagle, stamp: self.stamp }
    }
}

impl WorkloadCmd {
    /// The subcommand's name (`web`, `bulk`, …).
    pub fn name(&self) -> &'static str {
        match self {
            WorkloadCmd::Serve(_) => "serve",
            WorkloadCmd::Web(_) => "web",
            WorkloadCmd::Conns(_) => "conns",
            WorkloadCmd::Cabin(_) => "cabin",
            WorkloadCmd::Bulk(_) => "bulk",
            WorkloadCmd::Objects(_) => "objects",
            WorkloadCmd::Realtime(_) => "realtime",
            WorkloadCmd::Messages(_) => "messages",
            WorkloadCmd::Ping(_) => "ping",
            WorkloadCmd::Dns(_) => "dns",
            WorkloadCmd::LinkSim(_) => "link-sim",
            WorkloadCmd::Browser(_) => "browser",
        }
    }

    /// The arguments after `aerolink workload`, which
    /// [`from_args`](Self::from_args) parses back to `self`.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec![self.name().to_string()];
        match self {
            WorkloadCmd::Serve(s) => {
                flag(&mut a, "cc", s.cc);
                if let Some(n) = s.initcwnd {
                    flag(&mut a, "initcwnd", n);
                }
                switch(&mut a, "nagle", s.nagle);
                if s.push > 0 {
                    flag(&mut a, "push", s.push);
                }
                a.extend(s.quic.to_args());
                if let Some(d) = s.dns_answer {
                    flag(&mut a, "dns-answer", d);
                }
                switch(&mut a, "tls-resume", s.tls_resume);
            }
            WorkloadCmd::Web(w) => {
                flag(&mut a, "server", &w.server);
                if let Some(r) = &w.resolver {
                    flag(&mut a, "resolver", r);
                }
                flag(&mut a, "protocol", w.params.protocol);
                flag(&mut a, "page", &w.params.page);
                flag(&mut a, "depth", w.params.depth);
                a.extend(w.quic.to_args());
                switch(&mut a, "tls-resume", w.tls_resume);
                if let Some(n) = w.client.h2_window {
                    flag(&mut a, "h2-window", n);
                }
            }
            WorkloadCmd::Cabin(c) => {
                flag(&mut a, "server", &c.server);
                flag(&mut a, "passengers", c.passengers);
                flag(&mut a, "bytes", c.bytes);
                flag(&mut a, "direction", c.direction);
                flag(&mut a, "cc", c.cc);
            }
            WorkloadCmd::Conns(c) => {
                flag(&mut a, "server", &c.server);
                flag(&mut a, "count", c.count);
                flag(&mut a, "bytes", c.bytes);
                flag(&mut a, "timeout", duration_text(c.timeout));
            }
            WorkloadCmd::Bulk(b) => {
                flag(&mut a, "server", &b.server);
                flag(&mut a, "transport", b.transport);
                flag(&mut a, "direction", b.direction);
                flag(&mut a, "bytes", b.bytes);
                flag(&mut a, "cc", b.cc);
                b.tcp.push(&mut a);
                a.extend(b.quic.to_args());
            }
            WorkloadCmd::Objects(o) => {
                flag(&mut a, "server", &o.server);
                flag(&mut a, "protocol", o.params.protocol);
                flag(&mut a, "set", &o.params.set);
                flag(&mut a, "mode", o.params.mode);
                a.extend(o.quic.to_args());
            }
            WorkloadCmd::Realtime(r) => {
                let p = &r.params;
                flag(&mut a, "server", &r.server);
                flag(&mut a, "mechanism", p.mechanism);
                flag(&mut a, "scenario", p.scenario);
                flag(&mut a, "count", p.count);
                flag(&mut a, "interval-ms", p.interval_ms);
                flag(&mut a, "size", p.size);
                switch(&mut a, "no-nagle", p.no_nagle);
            }
            WorkloadCmd::Messages(m) => {
                let p = &m.params;
                flag(&mut a, "server", &m.server);
                flag(&mut a, "transport", p.transport);
                flag(&mut a, "direction", p.direction);
                flag(&mut a, "size", p.size);
                flag(&mut a, "duration", duration_text(p.duration));
                flag(&mut a, "rate", rate_text(m.rate));
                switch(&mut a, "nagle", m.nagle);
                if m.stamp != crate::messages::Stamp::Schedule {
                    flag(&mut a, "stamp", m.stamp);
                }
                if let Some(s) = m.down_size {
                    flag(&mut a, "down-size", s);
                }
                if let Some(r) = m.down_rate {
                    flag(&mut a, "down-rate", rate_text(r));
                }
                a.extend(m.quic.to_args());
            }
            WorkloadCmd::Ping(p) => p.push(&mut a),
            WorkloadCmd::Dns(d) => d.push(&mut a),
            WorkloadCmd::Browser(b) => b.push(&mut a),
            WorkloadCmd::LinkSim(l) => l.push(&mut a),
        }
        a
    }

    /// Parses the arguments after `aerolink workload`.
    pub fn from_args<I: IntoIterator<Item = T>, T: Into<std::ffi::OsString> + Clone>(args: I) -> Result<WorkloadCmd, clap::Error> {
        Line::try_parse_from(args).map(|l| l.cmd)
    }
}

mod measure;
pub use measure::{DnsArgs, LinkSimArgs, PingArgs};

#[cfg(test)]
mod tests;

/// A byte count with an optional unit (B, KB = 1000, KiB, MB, MiB).
fn bytes_arg(s: &str) -> Result<u64, String> {
    crate::page::parse_bytes(s).ok_or_else(|| format!("expected bytes like 110000, 110KB or 1MiB, got {s:?}"))
}
