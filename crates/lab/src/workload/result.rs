//! A run's result as its workload's own type, from the client's output to
//! the metrics it is judged by: decoded once, by the workload that ran
//! (`Workload::decode`), and read by field from then on.

use aerolink_work::browser::BrowserResult;
use aerolink_work::bulk::BulkResult;
use aerolink_work::messages::MessagesResult;
use aerolink_work::ping::PingResult;
use aerolink_work::realtime::RealtimeResult;
use aerolink_work::web::{ObjectTiming, ObjectsResult, WebResult};
use serde::{Deserialize, Serialize};

use super::Workload;
use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

/// What the client of a run printed, typed. Written as the workload's own
/// JSON (the store's `result_json`, `run --json`'s `outcome.result`), so
/// stores keep their form.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WorkloadResult {
    Browser(BrowserResult),
    Web(WebResult),
    Objects(ObjectsResult),
    Bulk(BulkResult),
    Realtime(RealtimeResult),
    Messages(MessagesResult),
    Ping(PingResult),
}

impl Workload {
    /// The client's output (its JSON) as this workload's result; an error
    /// says what did not fit.
    pub fn decode(&self, text: &str) -> Result<WorkloadResult, serde_json::Error> {
        use WorkloadResult as R;
        Ok(match self {
            Workload::Web { .. } => R::Web(serde_json::from_str(text)?),
            Workload::Objects { .. } => R::Objects(serde_json::from_str(text)?),
            Workload::Bulk { .. } => R::Bulk(serde_json::from_str(text)?),
            Workload::Realtime { .. } => R::Realtime(serde_json::from_str(text)?),
            Workload::Messages { .. } => R::Messages(serde_json::from_str(text)?),
            Workload::Ping { .. } => R::Ping(serde_json::from_str(text)?),
            Workload::Browser { .. } => R::Browser(serde_json::from_str(text)?),
        })
    }
}

impl WorkloadResult {
    /// A page load's or object set's per-object timings (empty for the
    /// other workloads).
    pub fn objects(&self) -> &[ObjectTiming] {
        match self {
            WorkloadResult::Web(r) => &r.objects,
            WorkloadResult::Objects(r) => &r.objects,
            _ => &[],
        }
    }

    /// The figures this result is judged by.
    pub fn metrics(&self) -> Metrics {
        let mut m = Metrics::new();
        let mut put = |k: Metric, x: f64| {
            m.insert(k, x);
        };
        match self {
            WorkloadResult::Web(r) => {
                for (k, x) in [
                    (PltMs, r.plt_ms),
                    (TtfbMs, r.ttfb_ms),
                    (Connections, r.connections as f64),
                    (Requests, r.requests as f64),
                    (BodyBytes, r.body_bytes as f64),
                    (ClientRetransmits, r.client_retransmits as f64),
                ] {
                    put(k, x);
                }
            }
            WorkloadResult::Objects(r) => {
                for (k, x) in [(TotalMs, r.total_ms), (Connections, r.connections as f64), (ClientRetransmits, r.client_retransmits as f64)] {
                    put(k, x);
                }
            }
            WorkloadResult::Bulk(r) => {
                for (k, x) in [(CompletionMs, r.completion_ms), (GoodputBps, r.goodput_bps), (SenderRetransmits, r.sender_retransmits as f64), (SenderSrttMsMax, r.sender_srtt_ms_max)] {
                    put(k, x);
                }
                // 0: not sampled (an upload, QUIC, a result from before).
                if r.sender_rto_ms_median != 0.0 {
                    put(SenderRtoMsMedian, r.sender_rto_ms_median);
                }
            }
            WorkloadResult::Browser(r) => browser_metrics(&mut m, r),
            WorkloadResult::Realtime(r) => realtime_metrics(&mut m, r),
            WorkloadResult::Messages(r) => messages_metrics(&mut m, r),
            WorkloadResult::Ping(r) => ping_metrics(&mut m, r),
        }
        m
    }
}

fn sorted(x: &[f64]) -> Vec<f64> {
    let mut x = x.to_vec();
    x.sort_by(f64::total_cmp);
    x
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

fn browser_metrics(m: &mut Metrics, r: &BrowserResult) {
    let each = [
        (PltMs, Some(r.plt_ms)),
        (OnloadMs, Some(r.onload_ms)),
        (DclMs, Some(r.dcl_ms)),
        (FpMs, r.fp_ms),
        (FcpMs, r.fcp_ms),
        (LcpMs, r.lcp_ms),
        (LastByteMs, Some(r.last_byte_ms)),
        (Requests, Some(r.requests as f64)),
        (FailedRequests, Some(r.failed_requests as f64)),
        (Bytes, Some(r.bytes as f64)),
        (Origins, Some(r.origins as f64)),
        (Connections, Some(r.connections as f64)),
        (ConnsPerOrigin, Some(r.conns_per_origin)),
    ];
    m.extend(each.into_iter().filter_map(|(k, x)| Some((k, x?))));
    // Which protocol the requests really went over.
    for (name, n) in &r.protocols {
        let key = match name.as_str() {
            "http/1.1" => RequestsH1,
            "h2" => RequestsH2,
            "h3" => RequestsH3,
            _ => RequestsOther,
        };
        *m.entry(key).or_default() += *n as f64;
    }
}

fn realtime_metrics(m: &mut Metrics, r: &RealtimeResult) {
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
}

fn messages_metrics(m: &mut Metrics, r: &MessagesResult) {
    let dur = r.duration_s;
    let mut every: Vec<f64> = Vec::new();
    let mut dirs = 0;
    let offered = Some(r.offered_bps).filter(|o| *o > 0.0);
    // The ground's own offer, when it had one.
    let down_offered = r.down_offer.map(|o| o.rate_bps).filter(|o| *o > 0.0).or(offered);
    let each =
        [(&r.up, DeliveredBpsUp, DeliveredShareUp, LatencyMsMeanUp, LatencyMsP50Up, offered), (&r.down, DeliveredBpsDown, DeliveredShareDown, LatencyMsMeanDown, LatencyMsP50Down, down_offered)];
    for (got, rate, share, mean_k, p50_k, offered) in each {
        let Some(got) = got else { continue };
        dirs += 1;
        let bits = got.bytes as f64 * 8.0;
        m.insert(rate, bits / dur);
        if let Some(o) = offered {
            m.insert(share, bits / dur / o);
        }
        let lat = sorted(&got.latencies_ms);
        if !lat.is_empty() {
            m.insert(mean_k, mean(&lat));
            m.insert(p50_k, lat[lat.len() / 2]);
            every.extend(lat);
        }
    }
    // Both ways at once (seed 004's two-way tests): the mean over every
    // message either way.
    if dirs == 2 && !every.is_empty() {
        m.insert(LatencyMsMeanBoth, mean(&every));
    }
}

fn ping_metrics(m: &mut Metrics, r: &PingResult) {
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
    loss_window_metrics(m, r);
}

/// Seed 000 §4.2's loss windows: the share of pings lost in each whole
/// 100 s window of the run, summarised (none when the run is shorter).
const LOSS_WINDOW_MS: f64 = 100_000.0;

fn loss_window_metrics(m: &mut Metrics, r: &PingResult) {
    let mut w: Vec<f64> = r.loss_windows(LOSS_WINDOW_MS).into_iter().map(|x| 100.0 * x).collect();
    if w.is_empty() {
        return;
    }
    w.sort_by(f64::total_cmp);
    let share = |f: &dyn Fn(f64) -> bool| 100.0 * w.iter().filter(|x| f(**x)).count() as f64 / w.len() as f64;
    m.insert(LossWindowsFreePct, share(&|x| x == 0.0));
    m.insert(LossWindowsOver30Pct, share(&|x| x > 30.0));
    m.insert(LossWindowMedianPct, crate::stats::quantile(&w, 0.5));
    m.insert(LossWindowP90Pct, crate::stats::quantile(&w, 0.9));
    m.insert(LossWindowMaxPct, w[w.len() - 1]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use aerolink_work::messages::Direction as MessagesDirection;
    use aerolink_work::Transport;

    /// Both ways at once, each direction keeps its own figures and the
    /// two-way mean weighs every message once (seed 004's two-way tests
    /// report one latency for both nodes).
    #[test]
    fn two_way_messages_give_each_direction_and_their_common_mean() {
        let w = Workload::Messages { transport: Transport::Tcp, direction: MessagesDirection::Both, size: 64, rate_bps: 2048.0, duration_s: 10.0, down: None };
        let text = r#"{"transport": "tcp", "size_bytes": 64, "direction": "both", "offered_messages": 40,
            "duration_s": 10.0, "offered_bps": 2048.0,
            "up": { "messages": 2, "bytes": 1000, "latencies_ms": [1000.0, 3000.0] },
            "down": { "messages": 4, "bytes": 2000, "latencies_ms": [6000.0, 6000.0, 6000.0, 6000.0] }}"#;
        let m = w.decode(text).unwrap().metrics();
        assert_eq!(m[&DeliveredBpsUp], 800.0);
        assert_eq!(m[&DeliveredBpsDown], 1600.0);
        // Against the 2048 bit/s offered each way.
        assert_eq!(m[&DeliveredShareUp], 800.0 / 2048.0);
        assert_eq!(m[&DeliveredShareDown], 1600.0 / 2048.0);
        assert_eq!(m[&LatencyMsMeanUp], 2000.0);
        assert_eq!(m[&LatencyMsMeanDown], 6000.0);
        assert!((m[&LatencyMsMeanBoth] - 28000.0 / 6.0).abs() < 1e-9, "{m:?}");
        // One way only: no two-way mean.
        let one = r#"{"transport": "tcp", "size_bytes": 64, "direction": "up", "offered_messages": 40, "offered_bps": 2048.0,
            "duration_s": 10.0, "down": null, "up": {"messages": 1, "bytes": 1, "latencies_ms": [1.0]}}"#;
        assert!(!w.decode(one).unwrap().metrics().contains_key(&LatencyMsMeanBoth));
    }

    /// A result that is not the workload's own is refused at decoding,
    /// naming the field that is missing.
    #[test]
    fn a_result_of_another_workload_does_not_decode() {
        let bulk = Workload::Bulk { transport: Transport::Tcp, direction: aerolink_work::bulk::Direction::Down, bytes: 1000 };
        let e = bulk.decode(r#"{"plt_ms": 1000.0}"#).unwrap_err().to_string();
        assert!(e.contains("missing field"), "{e}");
    }

    /// Written back, a decoded result is the workload's own JSON: stores
    /// and `run --json` keep their form.
    #[test]
    fn a_decoded_result_serializes_as_the_clients_json() {
        let p = Workload::Ping { count: 3, interval_ms: 10, size: 56 };
        let text = r#"{"sent":3,"received":2,"size_bytes":56,"interval_ms":10.0,"rtts_ms":[20.5,21.0],"seqs":[1,2]}"#;
        let r = p.decode(text).unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), text);
        let m = r.metrics();
        assert!((m[&PingLossPct] - 100.0 / 3.0).abs() < 1e-9 && m[&RttMsMin] == 20.5, "{m:?}");
    }
}
