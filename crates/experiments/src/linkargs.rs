//! The link flags, defined once: which profile or topology, and overrides
//! of any value for both directions (`--rate`) or one (`--down-rate`).

use aerolink_link::profile::Override;
use aerolink_link::{Profile, ProfileError};
use clap::Args;

use crate::profiles::LoadError;

/// Link flags that do not make a link: always the user's to fix.
#[derive(Debug, thiserror::Error)]
pub enum LinkArgsError {
    /// A flag's value (`--uplink-queue`'s arguments).
    #[error("{0}")]
    Flag(String),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Profile(#[from] ProfileError),
}

#[derive(Args, Debug, Clone, Default)]
pub struct LinkArgs {
    /// Built-in profile name (see `aerolink profiles list`) or a profile
    /// TOML file. Without it, the flags below alone define the link.
    #[arg(long, short = 'p', value_name = "NAME|FILE")]
    pub profile: Option<String>,
    /// A topology TOML file (a chain of hosts, one profile per hop), or the
    /// preset `ifc`: client ↔ airgw ↔ groundgw ↔ server over cabin Wi-Fi,
    /// the space hop (`--space`) and a terrestrial hop.
    #[arg(long, value_name = "FILE|ifc", conflicts_with = "profile")]
    pub topology: Option<String>,
    /// With `--topology ifc`: the profile of the space hop (default mss).
    /// The link flags below then apply to this hop.
    #[arg(long, value_name = "NAME|FILE")]
    pub space: Option<String>,
    /// Seed for every random choice of the link (recorded in the log).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Who drives the links: `thread` (a thread per hop, the most precise
    /// for one busy link) or `shared` (the process's event loops, one per
    /// core, which many links share; what `bench fleet` compares).
    #[arg(long, default_value = "thread", value_name = "thread|shared")]
    pub pump: aerolink_net::lab::PumpMode,

    /// Rate of both directions, e.g. "2Mbit/s", or "unlimited".
    #[arg(long, allow_hyphen_values = true, value_name = "RATE", help_heading = "Link overrides (both directions)")]
    pub rate: Option<String>,
    /// Round-trip propagation delay, split evenly, e.g. "300ms".
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION", conflicts_with = "delay", help_heading = "Link overrides (both directions)")]
    pub rtt: Option<String>,
    /// One-way propagation delay of each direction, e.g. "150ms".
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION", help_heading = "Link overrides (both directions)")]
    pub delay: Option<String>,
    /// Random (Bernoulli) loss of each direction, e.g. "1%".
    #[arg(long, allow_hyphen_values = true, value_name = "PROB", help_heading = "Link overrides (both directions)")]
    pub loss: Option<String>,
    /// Jitter of each direction: "normal 5ms", "uniform 5ms" or "none".
    #[arg(long, allow_hyphen_values = true, value_name = "DIST", help_heading = "Link overrides (both directions)")]
    pub jitter: Option<String>,
    /// Drop-tail queue: "bdp" (default), "64KB", "100 packets", "unlimited".
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE", help_heading = "Link overrides (both directions)")]
    pub queue: Option<String>,
    /// Per-packet overhead charged by the rate, e.g. "8B".
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE", help_heading = "Link overrides (both directions)")]
    pub overhead: Option<String>,
    /// The largest IP packet the link carries, e.g. "9000" (jumbo frames)
    /// or "1400B"; 1280 to 65535 (default 1500). The sending hosts'
    /// devices get this MTU.
    #[arg(long, allow_hyphen_values = true, value_name = "BYTES", help_heading = "Link overrides (both directions)")]
    pub mtu: Option<String>,
    /// Let jitter reorder packets (default: a FIFO link never reorders).
    #[arg(long, help_heading = "Link overrides (both directions)")]
    pub reorder: bool,

    /// netem's options, applied to each direction, e.g. "delay 100ms 10ms
    /// distribution normal loss 1% rate 2mbit limit 1000" (also `loss gemodel
    /// p r 1-h 1-k`, `rate R OVERHEAD`). As netem, jitter reorders. The
    /// flags above beat what it sets.
    #[arg(long, value_name = "OPTIONS", value_parser = netem_arg, help_heading = "Other tools' words")]
    pub netem: Option<Netem>,
    /// netem's options for the up direction (aircraft → ground) only.
    #[arg(long, value_name = "OPTIONS", value_parser = netem_arg, help_heading = "Other tools' words")]
    pub up_netem: Option<Netem>,
    /// netem's options for the down direction (ground → aircraft) only.
    #[arg(long, value_name = "OPTIONS", value_parser = netem_arg, help_heading = "Other tools' words")]
    pub down_netem: Option<Netem>,
    /// Mahimahi's `mm-link` uplink trace (one line per 1500-byte delivery
    /// opportunity, ms), read unchanged: the up direction's rate.
    #[arg(long, value_name = "FILE", help_heading = "Other tools' words")]
    pub uplink_trace: Option<std::path::PathBuf>,
    /// Mahimahi's downlink trace: the down direction's rate.
    #[arg(long, value_name = "FILE", help_heading = "Other tools' words")]
    pub downlink_trace: Option<std::path::PathBuf>,
    /// Mahimahi's uplink queue: droptail (with --uplink-queue-args
    /// bytes=N or packets=N) or infinite.
    #[arg(long, value_name = "KIND", help_heading = "Other tools' words")]
    pub uplink_queue: Option<String>,
    #[arg(long, value_name = "ARGS", requires = "uplink_queue", help_heading = "Other tools' words")]
    pub uplink_queue_args: Option<String>,
    /// Mahimahi's downlink queue (see --uplink-queue).
    #[arg(long, value_name = "KIND", help_heading = "Other tools' words")]
    pub downlink_queue: Option<String>,
    #[arg(long, value_name = "ARGS", requires = "downlink_queue", help_heading = "Other tools' words")]
    pub downlink_queue_args: Option<String>,

    #[arg(long, allow_hyphen_values = true, value_name = "RATE", help_heading = "Up (aircraft → ground) only")]
    pub up_rate: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION", help_heading = "Up (aircraft → ground) only")]
    pub up_delay: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "PROB", help_heading = "Up (aircraft → ground) only")]
    pub up_loss: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "DIST", help_heading = "Up (aircraft → ground) only")]
    pub up_jitter: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE", help_heading = "Up (aircraft → ground) only")]
    pub up_queue: Option<String>,

    #[arg(long, allow_hyphen_values = true, value_name = "RATE", help_heading = "Down (ground → aircraft) only")]
    pub down_rate: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION", help_heading = "Down (ground → aircraft) only")]
    pub down_delay: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "PROB", help_heading = "Down (ground → aircraft) only")]
    pub down_loss: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "DIST", help_heading = "Down (ground → aircraft) only")]
    pub down_jitter: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "SIZE", help_heading = "Down (ground → aircraft) only")]
    pub down_queue: Option<String>,
}

/// netem's options as our keys, checked when the flag is read.
#[derive(Clone, Debug)]
pub struct Netem(pub Vec<aerolink_link::profile::foreign::KeyValue>);

fn netem_arg(s: &str) -> Result<Netem, String> {
    aerolink_link::profile::foreign::netem(s).map(Netem)
}

impl LinkArgs {
    /// Every flag as an override of a profile key, in the order they apply:
    /// other tools' words first, so our own flags beat them.
    pub fn overrides(&self) -> Result<Vec<Override>, LinkArgsError> {
        let mut v = Vec::new();
        for (scope, flag, n) in [("link", "--netem", &self.netem), ("up", "--up-netem", &self.up_netem), ("down", "--down-netem", &self.down_netem)] {
            for (key, value) in n.iter().flat_map(|n| n.0.iter()) {
                v.push(Override { scope: scope.into(), key: key.to_string(), value: value.clone(), flag: flag.into() });
            }
        }
        for (scope, flag, trace) in [("up", "--uplink-trace", &self.uplink_trace), ("down", "--downlink-trace", &self.downlink_trace)] {
            if let Some(t) = trace {
                // Relative to where the user is, whatever profile file is read.
                let abs = std::path::absolute(t).unwrap_or_else(|_| t.clone());
                let quoted = toml::Value::String(abs.display().to_string()).to_string();
                v.push(Override { scope: scope.into(), key: "rate".into(), value: format!("{{ trace = {quoted} }}"), flag: flag.into() });
            }
        }
        for (scope, flag, kind, args) in [("up", "--uplink-queue", &self.uplink_queue, &self.uplink_queue_args), ("down", "--downlink-queue", &self.downlink_queue, &self.downlink_queue_args)] {
            if let Some(k) = kind {
                let q = aerolink_link::profile::foreign::mahimahi_queue(k, args.as_deref()).map_err(|m| LinkArgsError::Flag(format!("{flag}: {m}")))?;
                v.push(Override { scope: scope.into(), key: "queue".into(), value: q, flag: flag.into() });
            }
        }
        let mut add = |scope: &str, key: &str, val: &Option<String>, flag: &str| {
            if let Some(x) = val {
                v.push(Override { scope: scope.into(), key: key.into(), value: x.clone(), flag: flag.into() });
            }
        };
        add("link", "rate", &self.rate, "--rate");
        add("link", "rtt", &self.rtt, "--rtt");
        add("link", "delay", &self.delay, "--delay");
        add("link", "loss", &self.loss, "--loss");
        add("link", "jitter", &self.jitter, "--jitter");
        add("link", "queue", &self.queue, "--queue");
        add("link", "overhead", &self.overhead, "--overhead");
        add("link", "mtu", &self.mtu, "--mtu");
        add("link", "reorder", &self.reorder.then(|| "true".to_string()), "--reorder");
        add("up", "rate", &self.up_rate, "--up-rate");
        add("up", "delay", &self.up_delay, "--up-delay");
        add("up", "loss", &self.up_loss, "--up-loss");
        add("up", "jitter", &self.up_jitter, "--up-jitter");
        add("up", "queue", &self.up_queue, "--up-queue");
        add("down", "rate", &self.down_rate, "--down-rate");
        add("down", "delay", &self.down_delay, "--down-delay");
        add("down", "loss", &self.down_loss, "--down-loss");
        add("down", "jitter", &self.down_jitter, "--down-jitter");
        add("down", "queue", &self.down_queue, "--down-queue");
        Ok(v)
    }

    /// The single-hop profile these flags describe.
    pub fn profile(&self) -> Result<Profile, LinkArgsError> {
        let ov = self.overrides()?;
        match &self.profile {
            Some(p) => Ok(load_profile(p, &ov)?),
            None => {
                // Trace files named by flags are absolute paths.
                let mut load = |p: &str| std::fs::read_to_string(p).map_err(|e| e.to_string());
                Ok(Profile::from_overrides(&ov, &mut load)?)
            }
        }
    }
}

/// Loads a built-in profile by name, or a profile file; trace files are
/// read relative to the profile's directory.
/// A built-in profile or a profile file, with overrides.
pub fn load_profile(name_or_file: &str, overrides: &[Override]) -> Result<Profile, LoadError> {
    crate::profiles::load_profile(name_or_file, overrides)
}
