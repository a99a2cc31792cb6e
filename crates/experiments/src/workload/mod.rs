//! What a run executes: a workload with its parameters, and the knobs of
//! the stacks — typed once, turned into the command lines of the server
//! and client programs, and its client's result decoded as its own type.
//!
//! Each workload is one module (its parameters, how an experiment file's
//! `[[workload]]` table expands into it, its client's command line, its
//! result type and the metrics read from it: [`Kind`], [`Measured`]) and one line in
//! [`workloads!`]'s list below, which makes the [`Workload`] and
//! [`WorkloadResult`] enums and the experiment files' [`KINDS`].

use serde::{Deserialize, Serialize};

use crate::metric::{Metric, Metrics};
use aerolink_work::cli::WorkloadCmd;

mod browser;
mod bulk;
mod cabin;
mod dns;
mod knobs;
mod linksim;
mod messages;
mod objects;
mod ping;
mod realtime;
pub mod table;
mod web;

pub use browser::Browser;
pub use bulk::Bulk;
pub use cabin::Cabin;
pub use dns::{Dns, ResolverAt};
pub use knobs::{Cross, Knobs, Reordering};
pub use linksim::LinkSim;
pub use messages::Messages;
pub use objects::Objects;
pub use ping::Ping;
pub use realtime::Realtime;
pub use web::Web;

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
    #[error("passes: {passes} passes of {windows} windows need a count of at least {need}")]
    PingPasses { passes: u32, windows: usize, need: usize },
}

/// What one workload is: everything else of aerolink reaches it through
/// [`Workload`]'s methods.
pub trait Kind {
    /// The bytes a run moves, as far as the workload says (0 for paced
    /// workloads).
    fn expected_bytes(&self) -> u64 {
        0
    }
    /// Seconds a paced workload runs whatever the link; 0 for the others.
    fn paced_seconds(&self) -> f64 {
        0.0
    }
    /// Checks what the types do not: sizes, counts, page and set names.
    fn validate(&self) -> Result<(), WorkloadError>;
    /// The protocol or transport, for grouping results.
    fn protocol(&self) -> String;
    /// A short label of the parameters (not the protocol), for grouping.
    fn params_label(&self) -> String;
    /// Whether the client asks a resolver aboard (started in the aircraft
    /// gateway; the client's `server` is then that resolver's address).
    fn resolver_aboard(&self) -> bool {
        false
    }
    /// Whether its client resolves names by DNS (the server then answers
    /// every name with its own address).
    fn resolves_names(&self) -> bool {
        false
    }
    /// Whether its client goes through the HTTP cache aboard (squid in the
    /// aircraft gateway, started by the runner).
    fn proxy_aboard(&self) -> bool {
        false
    }
    /// Whether that cache intercepts the cabin's port 80 (transparent):
    /// the client is then not told of it.
    fn proxy_intercepts(&self) -> bool {
        false
    }
    /// Passengers the run's lab gives the client's namespace (their
    /// addresses, `run --passengers`); 0 for the rest.
    fn passengers(&self) -> u16 {
        0
    }
    /// Where those passengers live: addresses of the client's namespace,
    /// or a namespace each behind it.
    fn passenger_hosts(&self) -> aerolink_net::lab::PassengerHosts {
        aerolink_net::lab::PassengerHosts::Addresses
    }
    /// A workload run in simulated time over the run's link model, in
    /// aerolink's own process (no lab): its result as its client would
    /// print it. `None` (the rest): a real client in a real lab.
    fn simulate(&self, _profile: &aerolink_link::profile::Profile, _seed: u64) -> Option<String> {
        None
    }
    /// The client program against `server`.
    fn client_cmd(&self, server: String, knobs: &Knobs) -> WorkloadCmd;
    /// The metrics the report's table shows beside the headline.
    fn table_metrics(&self) -> Vec<Metric>;
    /// The metric a report leads with (its [`Metric::better`] says which
    /// way is better).
    fn headline(&self) -> Metric;
}

/// What a workload's client prints, and what it is judged by.
pub trait Measured {
    /// What its client prints (JSON), decoded.
    type Result: Serialize + serde::de::DeserializeOwned;
    /// The figures a result is judged by.
    fn metrics(r: &Self::Result) -> Metrics;
}

/// How one kind of workload appears in experiment files.
pub struct WorkloadKind {
    /// Its `type`.
    pub name: &'static str,
    /// Its keys, beside `type` and the knobs: its table type's fields.
    pub keys: fn() -> &'static [&'static str],
    expand: fn(toml::Table) -> Result<Vec<Workload>, table::KeyErr>,
    /// The knobs its runs start from, before the table's own.
    pub base_knobs: fn() -> Knobs,
}

impl WorkloadKind {
    /// Every workload the table sweeps.
    pub fn expand(&self, t: toml::Table) -> Result<Vec<Workload>, table::KeyErr> {
        (self.expand)(t)
    }
}

/// The registry: each workload's variant, its module, its `type` name.
/// Both enums' JSON forms are stored (a run's workload is part of its key),
/// so names and fields stay.
macro_rules! workloads {
    ($($variant:ident($module:ident) = $name:literal,)*) => {
        /// What a run executes, typed. Its JSON form is stored with every
        /// result and is part of the run's key.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "workload", rename_all = "lowercase")]
        pub enum Workload {
            $($variant($variant),)*
        }

        /// What the client of a run printed, typed: written as the
        /// workload's own JSON (the store's `result_json`, `run --json`'s
        /// `outcome.result`).
        // One result per run, decoded once: its size does not matter.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, Serialize, Deserialize)]
        #[serde(untagged)]
        pub enum WorkloadResult {
            $($variant(<$variant as Measured>::Result),)*
        }

        /// Every workload an experiment file may name, in this order.
        pub const KINDS: &[WorkloadKind] = &[$($module::KIND,)*];

        impl Workload {
            pub fn name(&self) -> &'static str {
                match self {
                    $(Workload::$variant(_) => $name,)*
                }
            }
            fn kind(&self) -> &dyn Kind {
                match self {
                    $(Workload::$variant(w) => w,)*
                }
            }
            /// The client's output (its JSON) as this workload's result;
            /// an error says what did not fit.
            pub fn decode(&self, text: &str) -> Result<WorkloadResult, serde_json::Error> {
                Ok(match self {
                    $(Workload::$variant(_) => WorkloadResult::$variant(serde_json::from_str(text)?),)*
                })
            }
        }

        impl WorkloadResult {
            /// The figures this result is judged by.
            pub fn metrics(&self) -> Metrics {
                match self {
                    $(WorkloadResult::$variant(r) => <$variant as Measured>::metrics(r),)*
                }
            }
        }
    };
}

workloads! {
    Web(web) = "web",
    Bulk(bulk) = "bulk",
    Objects(objects) = "objects",
    Messages(messages) = "messages",
    Realtime(realtime) = "realtime",
    Ping(ping) = "ping",
    Browser(browser) = "browser",
    Dns(dns) = "dns",
    LinkSim(linksim) = "link-sim",
    Cabin(cabin) = "cabin",
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
        self.kind().expected_bytes()
    }

    /// Seconds a paced workload runs whatever the link (messages for their
    /// duration, real-time updates at their interval); 0 for the others.
    pub fn paced_seconds(&self) -> f64 {
        self.kind().paced_seconds()
    }

    /// Checks what the types do not: sizes, counts, page and set names.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        self.kind().validate()
    }

    /// The protocol or transport, for grouping results.
    pub fn protocol(&self) -> String {
        self.kind().protocol()
    }

    /// A short label of the parameters (not the protocol), for grouping.
    pub fn params_label(&self) -> String {
        self.kind().params_label()
    }

    /// Whether its client asks a caching resolver aboard (dnsmasq in
    /// airgw), which the runner starts.
    pub fn resolver_aboard(&self) -> bool {
        self.kind().resolver_aboard()
    }

    /// Whether its client resolves names by DNS at the ground's name
    /// server (directly or through a resolver aboard).
    pub fn resolves_names(&self) -> bool {
        self.kind().resolves_names()
    }

    /// Runs a simulated-time workload on `profile` ([`Kind::simulate`]);
    /// `None` for a workload with a real client.
    pub fn simulate(&self, profile: &aerolink_link::profile::Profile, seed: u64) -> Option<String> {
        self.kind().simulate(profile, seed)
    }

    /// The client program of this workload against `server`.
    pub fn client_cmd(&self, server: &str, knobs: &Knobs) -> WorkloadCmd {
        self.kind().client_cmd(server.to_string(), knobs)
    }

    /// The same workload keeping Chromium's net log at `path` (a browser
    /// run of `experiment run --traces`); any other workload as it is.
    pub fn with_net_log(&self, path: std::path::PathBuf) -> Workload {
        let mut w = self.clone();
        if let Workload::Browser(b) = &mut w {
            b.net_log = Some(path);
        }
        w
    }

    /// Whether its client goes through the HTTP cache aboard.
    pub fn proxy_aboard(&self) -> bool {
        self.kind().proxy_aboard()
    }

    /// Whether the HTTP cache aboard intercepts the cabin's port 80.
    pub fn proxy_intercepts(&self) -> bool {
        self.kind().proxy_intercepts()
    }

    /// Passengers its lab gives the client's namespace.
    pub fn passengers(&self) -> u16 {
        self.kind().passengers()
    }

    /// Where they live: addresses, or a namespace each.
    pub fn passenger_hosts(&self) -> aerolink_net::lab::PassengerHosts {
        self.kind().passenger_hosts()
    }

    /// The client's command line after `aerolink`, asking the services
    /// aboard that the run started (the resolver, the HTTP cache) where
    /// the workload uses them.
    pub fn client_args(&self, server: &str, knobs: &Knobs, aboard: &crate::aboard::Addrs) -> Vec<String> {
        let mut cmd = self.client_cmd(server, knobs);
        match &mut cmd {
            WorkloadCmd::Browser(b) => {
                if b.resolver.is_some() {
                    b.resolver = aboard.resolver.clone().or(b.resolver.take());
                }
                b.proxy = aboard.proxy.clone();
            }
            WorkloadCmd::Dns(d) => {
                if let Some(r) = &aboard.resolver {
                    d.resolver = r.clone();
                }
            }
            WorkloadCmd::Web(w) if w.resolver.is_some() => {
                w.resolver = aboard.resolver.clone().or(w.resolver.take());
            }
            _ => {}
        }
        with_prefix(cmd)
    }

    /// The metrics the report's table shows beside the headline.
    pub fn table_metrics(&self) -> Vec<Metric> {
        self.kind().table_metrics()
    }

    /// The metric a report leads with (its [`Metric::better`] says which
    /// way is better).
    pub fn headline(&self) -> Metric {
        self.kind().headline()
    }
}

impl WorkloadResult {
    /// A page load's or object set's per-object timings (empty for the
    /// other workloads).
    pub fn objects(&self) -> &[aerolink_work::web::ObjectTiming] {
        match self {
            WorkloadResult::Web(r) => &r.objects,
            WorkloadResult::Objects(r) => &r.objects,
            _ => &[],
        }
    }
}

/// `x` sorted.
fn sorted(x: &[f64]) -> Vec<f64> {
    let mut x = x.to_vec();
    x.sort_by(f64::total_cmp);
    x
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
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
    use aerolink_work::Transport;

    /// A cache in the path is a cache aboard that intercepts, with its own
    /// label; the explicit cache's runs keep their JSON (and so their
    /// keys). (That the browser finds it unnamed: crates/cli/tests/browser.rs.)
    #[test]
    fn a_transparent_cache_is_aboard_and_unnamed_and_the_explicit_ones_key_stays() {
        let each = |proxy: &str| match KINDS
            .iter()
            .find(|k| k.name == "browser")
            .unwrap()
            .expand(toml::from_str(&format!("pages = [\"8x20KB\"]\nprotocols = [\"http1\"]\nproxy = \"{proxy}\"")).unwrap())
            .unwrap()
            .remove(0)
        {
            w @ Workload::Browser(_) => w,
            w => panic!("{w:?}"),
        };
        let (named, inpath) = (each("aboard"), each("transparent"));
        assert!(named.proxy_aboard() && !named.proxy_intercepts() && inpath.proxy_aboard() && inpath.proxy_intercepts());
        assert_eq!((named.params_label().as_str(), inpath.params_label().as_str()), ("8x20KB cache:aboard", "8x20KB cache:transparent"));
        let json = serde_json::to_string(&named).unwrap();
        assert!(json.contains("\"proxy\":true") && !json.contains("intercepted"), "{json}");
        assert!(serde_json::to_string(&inpath).unwrap().contains("\"intercepted\":true"));
    }

    #[test]
    fn traces_give_a_browser_run_its_net_log_and_leave_other_workloads_alone() {
        let b = Workload::Browser(Browser {
            protocol: aerolink_work::browser::BrowserProtocol::H2,
            page: "10x100KB".into(),
            warm: false,
            resolver: None,
            proxy: false,
            intercepted: false,
            har: None,
            screenshot: None,
            net_log: None,
        });
        let args = b.with_net_log("/t/KEY/netlog.json".into()).client_args("198.18.0.2", &Knobs::default(), &crate::aboard::Addrs::default());
        let at = args.iter().position(|a| a == "--net-log").expect("a --net-log flag");
        assert_eq!(args[at + 1], "/t/KEY/netlog.json");
        // Not part of what the run is: its key is the same.
        assert_eq!(serde_json::to_string(&b.with_net_log("/x".into())).unwrap(), serde_json::to_string(&b).unwrap());
        let w = Workload::Messages(Messages { transport: Transport::Tcp, direction: aerolink_work::messages::Direction::Up, size: 64, rate_bps: 2048.0, duration_s: 10.0, down: None });
        assert_eq!(w.with_net_log("/x".into()), w);
    }

    /// A result that is not the workload's own is refused at decoding,
    /// naming the field that is missing.
    #[test]
    fn a_result_of_another_workload_does_not_decode() {
        let bulk = Workload::Bulk(Bulk { transport: Transport::Tcp, direction: aerolink_work::bulk::Direction::Down, bytes: 1000 });
        let e = bulk.decode(r#"{"plt_ms": 1000.0}"#).unwrap_err().to_string();
        assert!(e.contains("missing field"), "{e}");
    }

    /// The JSON of a workload (part of every run key) is the tag and the
    /// module's fields, as it was when the variants held the fields.
    #[test]
    fn a_workloads_json_is_its_tag_and_fields() {
        let w = Workload::Web(Web { protocol: aerolink_work::web::Protocol::H2, page: "1x1KB".into(), depth: 1, resolver: None });
        assert_eq!(serde_json::to_string(&w).unwrap(), r#"{"workload":"web","protocol":"h2","page":"1x1KB","depth":1}"#);
        let back: Workload = serde_json::from_str(r#"{"workload":"messages","direction":"up","size":64,"rate_bps":1024.0,"duration_s":60.0}"#).unwrap();
        assert_eq!(back.name(), "messages");
        assert_eq!(KINDS.iter().map(|k| k.name).collect::<Vec<_>>(), ["web", "bulk", "objects", "messages", "realtime", "ping", "browser", "dns", "link-sim", "cabin"]);
    }
}
