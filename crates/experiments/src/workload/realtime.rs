//! `realtime`: updates pushed or pulled by a real-time web mechanism
//! (seed 001 §8: polling, long polling, SSE, WebSocket), each one's latency.

use aerolink_work::cli::{RealtimeArgs, RealtimeParams, WorkloadCmd};
use aerolink_work::realtime::{Mechanism, RealtimeResult, Scenario};
use serde::{Deserialize, Serialize};

use super::table::{de, fields, Choice, KeyErr, Many, Positive};
use super::{mean, sorted, Kind, Knobs, Measured, Workload, WorkloadError, WorkloadKind};
use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Realtime {
    pub mechanism: Mechanism,
    pub scenario: Scenario,
    pub count: u32,
    pub interval_ms: u64,
    pub size: u32,
}

// Real-time web keeps Nagle's algorithm on unless told otherwise, as in
// seed 001's study.
pub const KIND: WorkloadKind = WorkloadKind { name: "realtime", keys: fields::<Table>, expand, base_knobs: || Knobs { nagle: true, ..Knobs::default() } };

/// A `[[workload]]` table of type realtime: mechanisms and scenarios one
/// value or a list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    count: Option<Positive>,
    interval_ms: Option<Positive>,
    size: Option<Positive>,
    #[serde(alias = "mechanism")]
    mechanisms: Option<Many<Choice<Mechanism>>>,
    #[serde(alias = "scenario")]
    scenarios: Option<Many<Choice<Scenario>>>,
}

fn expand(t: toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let t: Table = de(t)?;
    let n = |v: Option<Positive>, d: i64| v.map_or(d, |p| p.0);
    let (count, interval_ms, size) = (n(t.count, 100), n(t.interval_ms, 200), n(t.size, 64));
    let mut out = Vec::new();
    for Choice(mechanism) in Many::or(t.mechanisms, Mechanism::ALL.iter().copied().map(Choice).collect()) {
        for Choice(scenario) in Many::or(t.scenarios.clone(), Scenario::ALL.iter().copied().map(Choice).collect()) {
            out.push(Workload::Realtime(Realtime { mechanism, scenario, count: count as u32, interval_ms: interval_ms as u64, size: size as u32 }));
        }
    }
    Ok(out)
}

impl Kind for Realtime {
    fn paced_seconds(&self) -> f64 {
        self.count as f64 * self.interval_ms as f64 / 1e3
    }
    fn validate(&self) -> Result<(), WorkloadError> {
        if self.count == 0 || self.size < 24 {
            return Err(WorkloadError::Realtime);
        }
        Ok(())
    }
    fn protocol(&self) -> String {
        self.mechanism.to_string()
    }
    fn params_label(&self) -> String {
        format!("{} ×{}", self.scenario, self.count)
    }
    fn client_cmd(&self, server: String, knobs: &Knobs) -> WorkloadCmd {
        let params = RealtimeParams { mechanism: self.mechanism, scenario: self.scenario, count: self.count, interval_ms: self.interval_ms, size: self.size, no_nagle: !knobs.nagle };
        WorkloadCmd::Realtime(RealtimeArgs { server, params })
    }
    fn table_metrics(&self) -> Vec<Metric> {
        vec![LatencyPassesMean, LatencyMsMeanS2c, LatencyMsMeanC2s, Connections]
    }
    fn headline(&self) -> Metric {
        LatencyMsMean
    }
}

impl Measured for Realtime {
    type Result = RealtimeResult;
    fn metrics(r: &RealtimeResult) -> Metrics {
        let mut m = Metrics::new();
        for (lat, mean_k, p50_k, n_k) in [(&r.server_to_client_ms, LatencyMsMeanS2c, LatencyMsP50S2c, MessagesS2c), (&r.client_to_server_ms, LatencyMsMeanC2s, LatencyMsP50C2s, MessagesC2s)] {
            let lat = sorted(lat);
            if !lat.is_empty() {
                m.insert(mean_k, mean(&lat));
                m.insert(p50_k, lat[lat.len() / 2]);
                m.insert(n_k, lat.len() as f64);
            }
        }
        // The figure the study reports: the update's latency.
        let headline = match (m.get(&LatencyMsMeanS2c), m.get(&LatencyMsMeanC2s)) {
            (Some(a), Some(b)) => Some((a + b) / 2.0),
            (a, b) => a.or(b).copied(),
        };
        if let Some(x) = headline {
            m.insert(LatencyMsMean, x);
        }
        m.insert(Connections, r.connections as f64);
        m
    }
}
