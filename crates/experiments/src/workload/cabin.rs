//! `cabin`: N passengers behind one aircraft link, each downloading (or,
//! `directions = ["up"]`, sending) the same bytes over TCP at once from its
//! own address (the run's lab gets N passengers). `passengers` is a
//! sweepable key: a capacity curve — how
//! long the median and the slowest passenger wait as the cabin fills — with
//! the profile's `per_user` caps and `share` deciding who gets what.
//! `hosts = "namespaces"` makes each passenger a namespace of its own
//! behind the client (N aircraft on one beam, each its own host, its own
//! TCP stack); `"addresses"` (the default) keeps them addresses of the
//! client's namespace. A list runs both.

use aerolink_net::lab::PassengerHosts;
use aerolink_work::bulk::Direction;
use aerolink_work::cabin::CabinResult;
use aerolink_work::cli::{CabinArgs, WorkloadCmd};
use serde::{Deserialize, Serialize};

use super::table::{de, fields, Choice, KeyErr, Many, Size, Whole};
use super::{human_bytes, Kind, Knobs, Measured, Workload, WorkloadError, WorkloadKind};
use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cabin {
    pub passengers: u16,
    /// Bytes each passenger moves.
    pub bytes: u64,
    /// Down (the default, left out of the stored form so earlier runs keep
    /// their keys) or up.
    #[serde(default = "down", skip_serializing_if = "is_down")]
    pub direction: Direction,
    /// Addresses (the default, left out of the stored form likewise) or a
    /// namespace each.
    #[serde(default, skip_serializing_if = "is_addresses")]
    pub hosts: PassengerHosts,
}

fn is_addresses(h: &PassengerHosts) -> bool {
    *h == PassengerHosts::Addresses
}

impl Cabin {
    /// What each passenger moves, and from where: `500KB`, `100KB up`,
    /// `500KB, a namespace each`.
    pub fn what(&self) -> String {
        let up = if self.direction == Direction::Up { " up" } else { "" };
        let own = if self.hosts == PassengerHosts::Namespaces { ", a namespace each" } else { "" };
        format!("{}{up}{own}", human_bytes(self.bytes))
    }
}

fn down() -> Direction {
    Direction::Down
}

fn is_down(d: &Direction) -> bool {
    *d == Direction::Down
}

pub const KIND: WorkloadKind = WorkloadKind { name: "cabin", keys: fields::<Table>, expand, base_knobs: Knobs::default };

/// A `[[workload]]` table of type cabin: each key one value or a list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    passengers: Many<Whole<1, 240>>,
    #[serde(alias = "size")]
    sizes: Many<Size>,
    #[serde(alias = "direction")]
    directions: Option<Many<Choice<Direction>>>,
    hosts: Option<Many<Choice<PassengerHosts>>>,
}

fn expand(t: toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let t: Table = de(t)?;
    let mut out = Vec::new();
    for &Choice(hosts) in &Many::or(t.hosts.clone(), vec![Choice(PassengerHosts::Addresses)]) {
        for &Choice(direction) in &Many::or(t.directions.clone(), vec![Choice(Direction::Down)]) {
            for &Size(bytes) in &t.sizes.0 {
                for n in &t.passengers.0 {
                    out.push(Workload::Cabin(Cabin { passengers: n.get::<u16>(), bytes, direction, hosts }));
                }
            }
        }
    }
    Ok(out)
}

impl Kind for Cabin {
    fn expected_bytes(&self) -> u64 {
        self.bytes * self.passengers as u64
    }
    fn validate(&self) -> Result<(), WorkloadError> {
        if self.bytes == 0 {
            return Err(WorkloadError::Empty);
        }
        Ok(())
    }
    fn passengers(&self) -> u16 {
        self.passengers
    }
    fn passenger_hosts(&self) -> PassengerHosts {
        self.hosts
    }
    fn protocol(&self) -> String {
        "tcp".to_string()
    }
    fn params_label(&self) -> String {
        format!("{} passengers × {}", self.passengers, self.what())
    }
    fn client_cmd(&self, server: String, knobs: &Knobs) -> WorkloadCmd {
        WorkloadCmd::Cabin(CabinArgs { server, passengers: self.passengers, bytes: self.bytes, direction: self.direction, cc: knobs.tcp_cc })
    }
    fn table_metrics(&self) -> Vec<Metric> {
        vec![CompletionMsMax, GoodputBps, JainIndex]
    }
    fn headline(&self) -> Metric {
        CompletionMs
    }
}

impl Measured for Cabin {
    type Result = CabinResult;
    fn metrics(r: &CabinResult) -> Metrics {
        Metrics::from([(CompletionMs, r.completion_ms_median), (CompletionMsMax, r.completion_ms_max), (GoodputBps, r.goodput_bps), (JainIndex, r.jain)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Experiment;

    #[test]
    fn passengers_as_namespaces_are_a_sweepable_key_and_addresses_keep_earlier_run_keys() {
        let spec = |hosts: &str| format!("name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"cabin\"\npassengers = [2]\nsize = \"100KB\"\n{hosts}");
        let e = Experiment::parse(&spec("hosts = [\"addresses\", \"namespaces\"]\n"), "x.toml").unwrap();
        let cabins: Vec<&Cabin> = e.cases.iter().map(|c| if let Workload::Cabin(c) = &c.workload { c } else { panic!("a cabin") }).collect();
        assert_eq!(cabins.iter().map(|c| c.hosts).collect::<Vec<_>>(), [PassengerHosts::Addresses, PassengerHosts::Namespaces]);
        // The stored form names the namespaces and leaves the default out,
        // as an earlier run stored it.
        assert_eq!(serde_json::to_value(cabins[0]).unwrap(), serde_json::json!({"passengers": 2, "bytes": 100000}));
        assert_eq!(serde_json::to_value(cabins[1]).unwrap()["hosts"], "namespaces");
        assert_eq!(e.cases[1].workload.passenger_hosts(), PassengerHosts::Namespaces);
        let err = Experiment::parse(&spec("hosts = \"netns\"\n"), "x.toml").unwrap_err().to_string();
        assert!(err.contains("addresses, namespaces"), "{err}");
    }
}
