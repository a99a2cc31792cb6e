//! The measuring workloads' command lines: `workload ping`, `dns` and
//! `link-sim` (messages through a link model in simulated time).

use clap::Args;

use aerolink_link::Duration;

use super::{duration_arg, duration_text, flag};
use crate::bulk::Direction as BulkDirection;

/// `workload link-sim`: which link, which way, how many messages.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct LinkSimArgs {
    /// A built-in profile (`aerolink profiles list`) or a profile file.
    #[arg(long)]
    pub profile: String,
    /// up: toward the server (an aircraft's return link); down: toward the
    /// client.
    #[arg(long, default_value = "up")]
    pub direction: BulkDirection,
    /// Messages in the batch.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub count: u64,
    /// Each message's size on the link, bytes (an IP packet: the link's own
    /// header comes on top).
    #[arg(long, default_value_t = 68, value_parser = clap::value_parser!(u32).range(1..=65_535))]
    pub size: u32,
    /// From one message to the next.
    #[arg(long, default_value = "8ms", value_parser = duration_arg)]
    pub interval: Duration,
    /// Seeds the link's random processes (the same seed, the same losses).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Args, Debug, Clone, PartialEq)]
pub struct PingArgs {
    #[arg(long)]
    pub server: String,
    /// Echo requests to send.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub count: u32,
    /// Gap between requests (ping's -i; under 2 ms needs root).
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub interval: Duration,
    /// ICMP payload, bytes (ping's -s; at most 65507).
    #[arg(long, default_value_t = 56, value_parser = clap::value_parser!(u32).range(0..=crate::ping::MAX_SIZE as i64))]
    pub size: u32,
    /// How long to wait for the last replies after the last request.
    #[arg(long, default_value = "30s", value_parser = duration_arg)]
    pub wait: Duration,
    /// The run is this many equal passes over a route flown again and
    /// again (its period: COUNT × INTERVAL / PASSES): the result compares
    /// them window by window (`place_loss_corr`, `place_rtt_corr`).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub passes: u32,
}

/// `workload dns`: where to ask and how many names, how often.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct DnsArgs {
    /// The resolver's IP address (port 53; `workload serve` answers every
    /// name there).
    #[arg(long)]
    pub resolver: String,
    /// Names to look up (site1.test, site2.test, …).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub count: u32,
    /// Rounds of lookups.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub rounds: u32,
    /// From the start of one round to the next.
    #[arg(long, default_value = "300s", value_parser = duration_arg)]
    pub interval: Duration,
    /// How long a lookup waits for its answer.
    #[arg(long, default_value = "5s", value_parser = duration_arg)]
    pub timeout: Duration,
}

impl DnsArgs {
    /// Its flags, for [`WorkloadCmd::to_args`](super::WorkloadCmd::to_args).
    pub(super) fn push(&self, a: &mut Vec<String>) {
        flag(a, "resolver", &self.resolver);
        flag(a, "count", self.count);
        flag(a, "rounds", self.rounds);
        flag(a, "interval", duration_text(self.interval));
        flag(a, "timeout", duration_text(self.timeout));
    }
}

impl PingArgs {
    /// Its flags, for [`WorkloadCmd::to_args`](super::WorkloadCmd::to_args).
    pub(super) fn push(&self, a: &mut Vec<String>) {
        flag(a, "server", &self.server);
        flag(a, "count", self.count);
        flag(a, "interval", duration_text(self.interval));
        flag(a, "size", self.size);
        flag(a, "wait", duration_text(self.wait));
        if self.passes > 1 {
            flag(a, "passes", self.passes);
        }
    }
}

impl LinkSimArgs {
    /// Its flags, for [`WorkloadCmd::to_args`](super::WorkloadCmd::to_args).
    pub(super) fn push(&self, a: &mut Vec<String>) {
        flag(a, "profile", &self.profile);
        flag(a, "direction", self.direction);
        flag(a, "count", self.count);
        flag(a, "size", self.size);
        flag(a, "interval", duration_text(self.interval));
        flag(a, "seed", self.seed);
    }
}
