//! `ping`: echo requests by Debian's ping, each reply's round-trip time,
//! and seed 000 §4.2's loss per 100 s window. With `passes = N` the pings
//! are N equal passes over a route flown again and again (its period in
//! run time is `count × interval / N`): the run's place metrics correlate
//! the passes window by window ([`place_corr`]), how much the loss and the
//! round-trip time depend on where the aircraft is (seed 000 §4.4).

use aerolink_link::Duration;
use aerolink_work::cli::{PingArgs, WorkloadCmd};
use aerolink_work::ping::{place_corr, PassWindow, PingResult, PLACE_WINDOWS};
use serde::{Deserialize, Serialize};

use super::table::{de, fields, Dur, KeyErr, Many, Whole};
use super::{mean, sorted, Kind, Knobs, Measured, Workload, WorkloadError, WorkloadKind};
use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ping {
    pub count: u32,
    pub interval_ms: u64,
    pub size: u32,
    /// How long ping waits for the last replies after sending (default a
    /// minute); kept out of the run's key when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// Equal passes over a repeated route (1: none); kept out of the run's
    /// key when 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub passes: u32,
}

fn one() -> u32 {
    1
}
fn is_one(n: &u32) -> bool {
    *n == 1
}

/// Long enough for a reply queued behind a minute of Iridium backlog.
const DEFAULT_WAIT_MS: u64 = 60_000;

pub const KIND: WorkloadKind = WorkloadKind { name: "ping", keys: fields::<Table>, expand, base_knobs: Knobs::default };

/// A `[[workload]]` table of type ping: sizes one value or a list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    count: Option<Whole<1, { u32::MAX as i64 }>>,
    interval: Option<Dur>,
    #[serde(alias = "size")]
    sizes: Option<Many<Whole<0, { u32::MAX as i64 }>>>,
    wait: Option<Dur>,
    passes: Option<Whole<1, 100>>,
}

fn expand(t: toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let t: Table = de(t)?;
    let count = t.count.map_or(100, |c| c.get());
    let interval_ms = t.interval.map_or(Duration::from_millis(1000), |d| d.0).as_millis_f64().round() as u64;
    let wait_ms = t.wait.map(|d| d.0.as_millis_f64().round() as u64);
    let passes = t.passes.map_or(1, |p| p.get());
    Ok(Many::or(t.sizes, vec![Whole(56)]).into_iter().map(|size| Workload::Ping(Ping { count, interval_ms, size: size.get(), wait_ms, passes })).collect())
}

/// Seed 000 §4.2's loss windows: the share of pings lost in each whole
/// 100 s window of the run, summarised (none when the run is shorter).
const LOSS_WINDOW_MS: f64 = 100_000.0;

impl Kind for Ping {
    fn paced_seconds(&self) -> f64 {
        self.count as f64 * self.interval_ms as f64 / 1e3
    }
    fn validate(&self) -> Result<(), WorkloadError> {
        if self.count == 0 || self.interval_ms < 2 || self.size > aerolink_work::ping::MAX_SIZE {
            return Err(WorkloadError::Ping);
        }
        // A request per window of each pass, at least.
        let need = self.passes as usize * PLACE_WINDOWS;
        if self.passes > 1 && (self.count as usize) < need {
            return Err(WorkloadError::PingPasses { passes: self.passes, windows: PLACE_WINDOWS, need });
        }
        Ok(())
    }
    fn protocol(&self) -> String {
        "icmp".to_string()
    }
    fn params_label(&self) -> String {
        let wait = self.wait_ms.map(|w| format!(", wait {w} ms")).unwrap_or_default();
        let passes = if self.passes > 1 { format!(", {} passes", self.passes) } else { String::new() };
        format!("{} B every {} ms ×{}{wait}{passes}", self.size, self.interval_ms, self.count)
    }
    fn client_cmd(&self, server: String, _knobs: &Knobs) -> WorkloadCmd {
        WorkloadCmd::Ping(PingArgs {
            server,
            count: self.count,
            interval: Duration::from_millis(self.interval_ms),
            size: self.size,
            wait: Duration::from_millis(self.wait_ms.unwrap_or(DEFAULT_WAIT_MS)),
            passes: self.passes,
        })
    }
    fn table_metrics(&self) -> Vec<Metric> {
        vec![RttMsSd, RttMsMin, RttMsMax, PingLossPct]
    }
    fn headline(&self) -> Metric {
        RttMsMean
    }
}

impl Measured for Ping {
    type Result = PingResult;
    fn metrics(r: &PingResult) -> Metrics {
        let mut m = Metrics::new();
        let rtt = sorted(&r.rtts_ms);
        if r.sent > 0 {
            m.insert(PingLossPct, 100.0 * (1.0 - rtt.len() as f64 / r.sent as f64));
        }
        if !rtt.is_empty() {
            let n = rtt.len() as f64;
            let mu = mean(&rtt);
            m.insert(RttMsMean, mu);
            m.insert(RttMsMin, rtt[0]);
            m.insert(RttMsP50, rtt[rtt.len() / 2]);
            m.insert(RttMsMax, rtt[rtt.len() - 1]);
            m.insert(RttUnder2MsPct, 100.0 * rtt.iter().filter(|x| **x < 2.0).count() as f64 / n);
            m.insert(RttOver10MsPct, 100.0 * rtt.iter().filter(|x| **x >= 10.0).count() as f64 / n);
            // The sample standard deviation of this run's replies.
            if rtt.len() > 1 {
                m.insert(RttMsSd, (rtt.iter().map(|x| (x - mu).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
            }
        }
        let mut w: Vec<f64> = r.loss_windows(LOSS_WINDOW_MS).into_iter().map(|x| 100.0 * x).collect();
        if !w.is_empty() {
            w.sort_by(f64::total_cmp);
            let share = |f: &dyn Fn(f64) -> bool| 100.0 * w.iter().filter(|x| f(**x)).count() as f64 / w.len() as f64;
            m.insert(LossWindowsFreePct, share(&|x| x == 0.0));
            m.insert(LossWindowsOver30Pct, share(&|x| x > 30.0));
            m.insert(LossWindowMedianPct, crate::stats::quantile(&w, 0.5));
            m.insert(LossWindowP90Pct, crate::stats::quantile(&w, 0.9));
            m.insert(LossWindowMaxPct, w[w.len() - 1]);
        }
        // A route flown again and again: how much the loss and the
        // round-trip time depend on place.
        let passes = r.pass_windows();
        if let Some(c) = place_corr(&passes, PassWindow::loss) {
            m.insert(PlaceLossCorr, c);
        }
        if let Some(c) = place_corr(&passes, PassWindow::rtt_ms) {
            m.insert(PlaceRttCorr, c);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written back, a decoded result is the workload's own JSON: stores
    /// and `run --json` keep their form.
    #[test]
    fn a_decoded_result_serializes_as_the_clients_json() {
        let p = Workload::Ping(Ping { count: 3, interval_ms: 10, size: 56, wait_ms: None, passes: 1 });
        let text = r#"{"sent":3,"received":2,"size_bytes":56,"interval_ms":10.0,"rtts_ms":[20.5,21.0],"seqs":[1,2]}"#;
        let r = p.decode(text).unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), text);
        let m = r.metrics();
        assert!((m[&PingLossPct] - 100.0 / 3.0).abs() < 1e-9 && m[&RttMsMin] == 20.5, "{m:?}");
    }

    /// `wait` bounds how long ping waits for the last replies (a link
    /// without service gives 100 % loss, not a run past its time-out);
    /// without it the run's key is what it was.
    #[test]
    fn wait_reaches_ping_and_stays_out_of_the_key_when_not_given() {
        let one = |extra: &str| match expand(toml::from_str(&format!("count = 2\n{extra}")).unwrap()).unwrap().remove(0) {
            Workload::Ping(p) => p,
            w => panic!("{w:?}"),
        };
        let (plain, short) = (one(""), one("wait = \"3s\""));
        assert_eq!(serde_json::to_string(&plain).unwrap(), r#"{"count":2,"interval_ms":1000,"size":56}"#);
        assert_eq!(short.wait_ms, Some(3000));
        let WorkloadCmd::Ping(a) = short.client_cmd("198.18.0.2".into(), &Knobs::default()) else { panic!() };
        assert_eq!(a.wait, Duration::from_secs(3));
        let WorkloadCmd::Ping(a) = plain.client_cmd("198.18.0.2".into(), &Knobs::default()) else { panic!() };
        assert_eq!(a.wait, Duration::from_secs(60));
    }
}
