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
