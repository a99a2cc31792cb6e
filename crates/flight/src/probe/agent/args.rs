//! The agent's flags (`aerolink probe run`): what it measures, how often,
//! and what a day of that schedule costs on the link.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use aerolink_work::web::Protocol;
use clap::Args;

use crate::probe::wire;

/// Durations in flags: `2s`, `3min`, `0` to turn a measurement off.
fn every_arg(s: &str) -> Result<Duration, String> {
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    aerolink_work::cli::duration_arg(s).map(|d| Duration::from_nanos(d.0))
}

fn bytes_arg(s: &str) -> Result<u64, String> {
    aerolink_work::page::parse_bytes(s).filter(|b| *b > 0).ok_or_else(|| "expected a size like 1MB, 500KB".to_string())
}

fn page_arg(s: &str) -> Result<aerolink_work::page::Page, String> {
    aerolink_work::page::Page::parse(s, 1)
}

/// What the agent measures and how often. Every interval takes `0` to turn
/// that measurement off.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct AgentArgs {
    /// The ground reflector (`aerolink probe serve`): an address or a name.
    #[arg(long)]
    pub target: String,
    /// Directory of the log (`probe.jsonl`, rotated files, HAR files).
    /// A directory that already holds a log is continued.
    #[arg(long, default_value = "flight")]
    pub out: PathBuf,
    /// Stop after this long (default: until Ctrl-C or SIGTERM).
    #[arg(long, value_parser = every_arg)]
    pub duration: Option<Duration>,
    /// UDP probe interval (round trip, loss per direction, one-way delays).
    #[arg(long, default_value = "2s", value_parser = every_arg)]
    pub udp_every: Duration,
    /// A probe without a reply after this long is lost.
    #[arg(long, default_value = "5s", value_parser = every_arg)]
    pub udp_timeout: Duration,
    /// ICMP ping interval (through the system's `ping`).
    #[arg(long, default_value = "10s", value_parser = every_arg)]
    pub ping_every: Duration,
    /// Traceroute interval.
    #[arg(long, default_value = "3min", value_parser = every_arg)]
    pub trace_every: Duration,
    /// DNS interval: each name of --dns-names looked up twice back to back.
    #[arg(long, default_value = "5min", value_parser = every_arg)]
    pub dns_every: Duration,
    /// Names to look up (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "google.com,youtube.com,facebook.com,wikipedia.org,amazon.com,twitter.com,instagram.com,linkedin.com,netflix.com,bing.com")]
    pub dns_names: Vec<String>,
    /// The resolver to ask (default: the first nameserver of
    /// /etc/resolv.conf, the one DHCP gave).
    #[arg(long)]
    pub resolver: Option<SocketAddr>,
    /// Page-load interval: the page from the reflector over each protocol
    /// of --web-protocols, each load saved as HAR 1.2.
    #[arg(long, default_value = "5min", value_parser = every_arg)]
    pub web_every: Duration,
    #[arg(long, value_delimiter = ',', default_value = "h1,h2,h3")]
    pub web_protocols: Vec<Protocol>,
    /// Also load the page over plain HTTP/1.1 (port 80): the load a proxy
    /// on the path can see into, and mark with `Via` or cache headers.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub web_http: bool,
    /// Send the plain-HTTP load through this forward proxy (`HOST:PORT`),
    /// as a browser configured with one would.
    #[arg(long)]
    pub http_proxy: Option<SocketAddr>,
    /// The page the reflector serves for page loads.
    #[arg(long, default_value = "10x10KB", value_parser = page_arg)]
    pub page: aerolink_work::page::Page,
    /// Throughput-test interval: --bulk-bytes down, then up, over TCP.
    #[arg(long, default_value = "5min", value_parser = every_arg)]
    pub bulk_every: Duration,
    #[arg(long, default_value = "1MB", value_parser = bytes_arg)]
    pub bulk_bytes: u64,
    /// Rate-test interval: a train of --train-packets UDP packets down, then
    /// one up; the bottleneck's rate from how far apart they arrive.
    #[arg(long, default_value = "1min", value_parser = every_arg)]
    pub rate_every: Duration,
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(2..=wire::MAX_TRAIN as i64))]
    pub train_packets: u32,
    /// UDP payload bytes of each train packet.
    #[arg(long, default_value_t = 1200, value_parser = clap::value_parser!(u32).range(wire::MIN_TRAIN_SIZE as i64..=wire::MAX_TRAIN_SIZE as i64))]
    pub train_size: u32,
    /// A page load or transfer that takes longer is given up (and logged).
    #[arg(long, default_value = "60s", value_parser = every_arg)]
    pub task_timeout: Duration,
    /// Name the agent's public address: a file of `PREFIX NAME` lines
    /// (`198.18.0.0/24 provider-a`), longest prefix wins.
    #[arg(long)]
    pub networks: Option<PathBuf>,
    /// The agent and the reflector read the same clock (one host, as in a
    /// lab), so one-way delays are exact. Otherwise they are logged only
    /// when both kernels say their clocks are synchronised.
    #[arg(long)]
    pub same_clock: bool,
    /// A note kept in the log's start record (the flight, the seat, the
    /// provider; or that the link was emulated).
    #[arg(long)]
    pub note: Option<String>,
    /// Start a new log file when the current one reaches this size.
    #[arg(long, default_value = "64MB", value_parser = bytes_arg)]
    pub rotate_size: u64,
}

impl AgentArgs {
    /// Bytes on the wire a day of this schedule costs (both directions,
    /// headers included, no retransmissions), by kind.
    pub fn daily_bytes(&self) -> BTreeMap<&'static str, f64> {
        let per_day = |every: Duration| if every.is_zero() { 0.0 } else { 86_400.0 / every.as_secs_f64() };
        let mut m = BTreeMap::new();
        m.insert("udp", per_day(self.udp_every) * (2.0 * 28.0 + wire::REQUEST_LEN as f64 * 2.0));
        m.insert("ping", per_day(self.ping_every) * 2.0 * 84.0);
        m.insert("trace", per_day(self.trace_every) * 30.0 * (60.0 + 70.0));
        m.insert("dns", per_day(self.dns_every) * self.dns_names.len() as f64 * 2.0 * 150.0);
        // Page and transfer bytes plus about 5 % for headers, handshakes
        // and acknowledgements.
        m.insert("web", per_day(self.web_every) * (self.web_protocols.len() + self.web_http as usize) as f64 * (self.page.total_bytes() as f64 + 8_000.0) * 1.05);
        m.insert("bulk", per_day(self.bulk_every) * 2.0 * self.bulk_bytes as f64 * 1.05);
        m.insert("rate", per_day(self.rate_every) * 2.0 * (self.train_packets as f64 * (self.train_size as f64 + 28.0) + 80.0));
        m
    }
}
