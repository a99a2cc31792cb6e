//! `link-sim`: a batch of messages through one direction of the run's link
//! model in simulated time (`aerolink_link::batch`) — no lab, no packets.
//! For losses too rare to count on a real link: seed 002 §6's binding
//! acknowledgement over the L-DACS 1 forward link (6.31e-5 a message; ten
//! million messages a repetition), and its loss after five retries,
//! computed from the measured per-try loss as the seed computes it.

use aerolink_link::batch::{self, Batch, BatchResult};
use aerolink_link::profile::Profile;
use aerolink_link::Duration;
use aerolink_work::bulk::Direction;
use aerolink_work::cli::{LinkSimArgs, WorkloadCmd};
use serde::{Deserialize, Serialize};

use super::table::{de, fields, Choice, Dur, KeyErr, Many, Whole};
use super::{Kind, Knobs, Measured, Workload, WorkloadError, WorkloadKind};
use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkSim {
    /// Toward the server (the aircraft's return link) or the client.
    pub up: bool,
    pub count: u64,
    pub size: u32,
    pub interval_ms: f64,
}

pub const KIND: WorkloadKind = WorkloadKind { name: "link-sim", keys: fields::<Table>, expand, base_knobs: Knobs::default };

/// A `[[workload]]` table of type link-sim: sizes one value or a list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    direction: Option<Choice<Direction>>,
    count: Option<Whole<1, 1_000_000_000>>,
    #[serde(alias = "size")]
    sizes: Option<Many<Whole<1, 65_535>>>,
    interval: Option<Dur>,
}

fn expand(t: toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let t: Table = de(t)?;
    let up = t.direction.map_or(Direction::Up, |d| d.0) == Direction::Up;
    let count = t.count.map_or(100_000, |c| c.get());
    let interval_ms = t.interval.map_or(Duration::from_millis(8), |d| d.0).as_millis_f64();
    Ok(Many::or(t.sizes, vec![Whole(68)]).into_iter().map(|s| Workload::LinkSim(LinkSim { up, count, size: s.get(), interval_ms })).collect())
}

impl LinkSim {
    fn batch(&self) -> Batch {
        Batch { up: self.up, count: self.count, size: self.size, interval: Duration::from_nanos((self.interval_ms * 1e6).round() as u64) }
    }
}

impl Kind for LinkSim {
    fn validate(&self) -> Result<(), WorkloadError> {
        if self.interval_ms <= 0.0 {
            return Err(WorkloadError::Set("link-sim: the interval must be positive".into()));
        }
        Ok(())
    }
    fn protocol(&self) -> String {
        "link model".to_string()
    }
    fn params_label(&self) -> String {
        format!("{} B {} every {} ms ×{}", self.size, if self.up { "up" } else { "down" }, self.interval_ms, self.count)
    }
    fn simulate(&self, profile: &Profile, seed: u64) -> Option<String> {
        Some(serde_json::to_string(&batch::run(profile, &self.batch(), seed)).expect("a batch result serializes"))
    }
    /// The same batch by hand (`aerolink workload link-sim`); the runner
    /// runs it in its own process instead ([`Kind::simulate`]), on the
    /// run's profile, which `server` names here.
    fn client_cmd(&self, server: String, _knobs: &Knobs) -> WorkloadCmd {
        let b = self.batch();
        WorkloadCmd::LinkSim(LinkSimArgs { profile: server, direction: if b.up { Direction::Up } else { Direction::Down }, count: b.count, size: b.size, interval: b.interval, seed: 1 })
    }
    fn table_metrics(&self) -> Vec<Metric> {
        vec![SimTryLoss, SimLossIndependentTries, SimDelayMsMean]
    }
    fn headline(&self) -> Metric {
        SimLoss
    }
}

impl Measured for LinkSim {
    type Result = BatchResult;
    fn metrics(r: &BatchResult) -> Metrics {
        let mut m = Metrics::new();
        if r.sent > 0 {
            m.insert(SimLoss, r.loss());
            m.insert(SimTryLoss, r.try_loss());
            m.insert(SimLossIndependentTries, r.loss_independent_tries());
        }
        if r.delivered > 0 {
            m.insert(SimDelayMsMean, r.delay_ms_mean);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_expands_per_size_and_refuses_a_direction_it_does_not_know() {
        let t: toml::Table = toml::from_str("direction = \"down\"\ncount = 1000\nsizes = [60, 68]\ninterval = \"4 ms\"").unwrap();
        let w = expand(t).unwrap();
        assert_eq!(w, vec![Workload::LinkSim(LinkSim { up: false, count: 1000, size: 60, interval_ms: 4.0 }), Workload::LinkSim(LinkSim { up: false, count: 1000, size: 68, interval_ms: 4.0 })]);
        let t: toml::Table = toml::from_str("direction = \"sideways\"").unwrap();
        let (key, why) = expand(t).expect_err("refused");
        assert!(key == "direction" && why.contains("down") && why.contains("up"), "{key}: {why}");
    }

    #[test]
    fn a_simulated_run_gives_the_metrics_the_judge_reads() {
        let p = crate::profiles::load_profile("ldacs1-158k", &[]).unwrap();
        let w = Workload::LinkSim(LinkSim { up: false, count: 2000, size: 60, interval_ms: 8.0 });
        let text = w.simulate(&p, 1).expect("simulated");
        let m = w.decode(&text).unwrap().metrics();
        assert!(m[&SimLoss] < 0.01 && m[&SimDelayMsMean] > 0.0, "{m:?}");
        assert!(m[&SimLossIndependentTries] <= m[&SimTryLoss], "{m:?}");
    }
}
