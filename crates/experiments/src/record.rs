//! What the store keeps of a finished run: the row, its metrics, and the
//! labels reports group by — built here, once, for every command that
//! stores runs.

use std::time::SystemTime;

use crate::experiment::{profile_hash, Experiment};
use crate::metric::Metric;
use crate::pool::Finished;
use crate::store::RunRecord;
use crate::workload::add_rtt_metrics;

/// The time as stored: RFC 3339, seconds.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// The row of a finished run of `e`, measured on `host`.
pub fn record(e: &Experiment, f: &Finished, host: &str) -> RunRecord {
    let p = &e.profiles[f.planned.profile];
    let c = &e.cases[f.planned.case];
    let mut metrics = f.outcome.result.as_ref().filter(|_| f.outcome.ok).map(|r| r.metrics()).unwrap_or_default();
    add_rtt_metrics(&mut metrics, p.base_rtt().as_millis_f64());
    // A link budget's operating margin: the profile's, kept with each run.
    for (dir, m) in [(&p.up, Metric::LdacsMarginDbUp), (&p.down, Metric::LdacsMarginDbDown)] {
        if let Some(b) = dir.ldacs.as_ref().and_then(|l| l.budget.as_ref()) {
            metrics.insert(m, b.operating_margin_db());
        }
    }
    if f.outcome.ok {
        // What the link itself dropped, beside what the protocols report
        // as retransmitted or lost.
        metrics.insert(Metric::LinkDropsDown, f.outcome.link_drops_down as f64);
        metrics.insert(Metric::LinkDropsUp, f.outcome.link_drops_up as f64);
        // What crossed the measured hop (IP packets, headers included).
        metrics.insert(Metric::WireBytesUp, f.outcome.wire_bytes_up as f64);
        metrics.insert(Metric::WireBytesDown, f.outcome.wire_bytes_down as f64);
        metrics.insert(Metric::WireBytes, (f.outcome.wire_bytes_up + f.outcome.wire_bytes_down) as f64);
        let channels = [Metric::CallDropsCh0, Metric::CallDropsCh1, Metric::CallDropsCh2, Metric::CallDropsCh3];
        for (m, n) in channels.into_iter().zip(&f.outcome.channel_drops) {
            metrics.insert(m, *n as f64);
        }
        metrics.insert(Metric::LinkDropsRadio, f.outcome.link_drops_loss as f64);
        metrics.insert(Metric::LinkDropsRadioDown, f.outcome.link_drops_loss_down as f64);
        metrics.insert(Metric::LinkDropsRadioUp, f.outcome.link_drops_loss_up as f64);
        if f.outcome.allocated_bytes_up > 0 {
            metrics.insert(Metric::AllocatedUsedPct, 100.0 * f.outcome.allocated_used_bytes_up as f64 / f.outcome.allocated_bytes_up as f64);
        }
        if let Some(t) = f.outcome.handover_trigger_s {
            metrics.insert(Metric::HandoverTriggerMs, t * 1e3);
        }
        if let Some(t) = f.outcome.handover_l2_start_s {
            metrics.insert(Metric::HandoverL2StartMs, t * 1e3);
        }
        if let Some(t) = f.outcome.handover_s {
            metrics.insert(Metric::HandoverMs, t * 1e3);
        }
        if let Some(d) = down_shares(&f.outcome.channel_down_spans, f.outcome.channel_drops.len(), f.outcome.link_ended_s) {
            metrics.insert(Metric::ChannelDownPctMean, 100.0 * d.each.iter().sum::<f64>() / d.each.len() as f64);
            metrics.insert(Metric::ChannelsAllDownPct, 100.0 * d.all);
            let independent = 100.0 * d.each.iter().product::<f64>();
            metrics.insert(Metric::ChannelsAllDownIndependentPct, independent);
            metrics.insert(Metric::ChannelsAllDownExcessPct, 100.0 * d.all - independent);
        }
        if !f.outcome.redials_s.is_empty() {
            metrics.insert(Metric::RedialMsMean, f.outcome.redials_s.iter().sum::<f64>() * 1e3 / f.outcome.redials_s.len() as f64);
        }
    }
    if let (true, Some(share)) = (f.outcome.ok, header_share_pct(e, f)) {
        metrics.insert(Metric::HeaderSharePct, share);
    }
    let refused = f.outcome.emulator_refused();
    if refused > 0 {
        metrics.insert(Metric::EmulatorRefused, refused as f64);
    }
    RunRecord {
        run_key: f.planned.key.clone(),
        experiment: e.name.clone(),
        profile: p.name.clone(),
        profile_hash: profile_hash(p),
        profile_json: crate::report::profile_summary(p).to_string(),
        workload: c.workload.name().to_string(),
        protocol: c.workload.protocol(),
        params: c.workload.params_label(),
        // Serialising plain data with string keys cannot fail.
        workload_json: serde_json::to_string(&c.workload).expect("a workload serialises"),
        knobs_json: serde_json::to_string(&c.knobs).expect("knobs serialise"),
        seed: f.planned.seed,
        rep: f.planned.rep,
        host: host.to_string(),
        machine: machine(),
        started_at: rfc3339(f.started),
        duration_s: f.seconds,
        outcome: f.outcome.clone(),
        metrics,
    }
}

/// A bulk transfer's headers as a share of what crossed the measured hop
/// in its direction: IP packets as they left the hop (tunnel bytes
/// included), plus the link's own header per packet (L-DACS: 7 B), less
/// the bytes transferred.
fn header_share_pct(e: &Experiment, f: &Finished) -> Option<f64> {
    let crate::workload::Workload::Bulk(crate::workload::Bulk { direction, bytes, .. }) = &e.cases[f.planned.case].workload else { return None };
    let p = &e.profiles[f.planned.profile];
    let (spec, wire, packets) = match direction {
        aerolink_work::bulk::Direction::Down => (&p.down, f.outcome.wire_bytes_down, f.outcome.packets_down),
        aerolink_work::bulk::Direction::Up => (&p.up, f.outcome.wire_bytes_up, f.outcome.packets_up),
    };
    let link_header = spec.ldacs.as_ref().map_or(0, |_| aerolink_link::ldacs::HEADER_BYTES as u64);
    let on_link = wire + link_header * packets;
    (packets > 0 && on_link > *bytes).then(|| 100.0 * (1.0 - *bytes as f64 / on_link as f64))
}

/// A bonded link's channels' down time, as shares of the run.
#[derive(Debug, PartialEq)]
struct DownShares {
    /// Each channel's.
    each: Vec<f64>,
    /// Every channel's at once.
    all: f64,
}

/// The down shares of `channels` channels over a run of `ended_s` seconds
/// from their down spans `(channel, from, to)`; `None` without a bonded
/// link (no channel) or a run of no length.
fn down_shares(spans: &[(u16, f64, f64)], channels: usize, ended_s: f64) -> Option<DownShares> {
    if channels == 0 || ended_s <= 0.0 {
        return None;
    }
    let mut each = vec![0.0; channels];
    // A sweep over the spans' ends: +1 down at a start, −1 at an end; the
    // time with all `channels` down at once is all down.
    let mut edges: Vec<(f64, i32)> = Vec::with_capacity(spans.len() * 2);
    for &(c, from, to) in spans {
        if let Some(e) = each.get_mut(c as usize) {
            *e += (to.min(ended_s) - from).max(0.0) / ended_s;
        }
        edges.extend([(from, 1), (to.min(ended_s), -1)]);
    }
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut down, mut all, mut since) = (0i32, 0.0, 0.0);
    for (t, d) in edges {
        if down as usize == channels {
            all += t - since;
        }
        down += d;
        since = t;
    }
    Some(DownShares { each, all: all / ended_s })
}

/// This machine as a run records it: its cores and kernel (read once).
pub fn machine() -> String {
    static MACHINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MACHINE
        .get_or_init(|| {
            let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
            let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            format!("{cores} cores, Linux {}", kernel.trim())
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn down_shares_count_each_channel_and_their_overlap() {
        // Three channels over 100 s: 0 down 10–40, 1 down 30–50 and 90–100
        // (still down at the end), 2 down 35–45 — all three at once 35–40.
        let spans = [(0, 10.0, 40.0), (1, 30.0, 50.0), (2, 35.0, 45.0), (1, 90.0, 100.0)];
        let d = down_shares(&spans, 3, 100.0).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(d.each[0], 0.30) && close(d.each[1], 0.30) && close(d.each[2], 0.10), "{d:?}");
        assert!(close(d.all, 0.05), "{d:?}");
        // Two of three down together is not all down; a channel that never
        // dropped is down 0 % and none is ever all down.
        let d = down_shares(&[(0, 0.0, 50.0), (1, 25.0, 75.0)], 3, 100.0).unwrap();
        assert_eq!((d.each[2], d.all), (0.0, 0.0));
        assert_eq!(down_shares(&[], 0, 100.0), None);
        // A channel down for the whole run, alone: all down the whole run.
        assert!(close(down_shares(&[(0, 0.0, 60.0)], 1, 60.0).unwrap().all, 1.0));
    }
}
