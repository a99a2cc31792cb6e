//! `bulk`: one transfer of `bytes` over TCP or QUIC, either way.

use aerolink_work::bulk::{BulkResult, Direction};
use aerolink_work::cli::{BulkArgs, WorkloadCmd};
use aerolink_work::quic::QuicArgs;
use aerolink_work::Transport;
use serde::{Deserialize, Serialize};

use super::table::{de, fields, Choice, KeyErr, Many, Size};
use super::{human_bytes, Kind, Knobs, Measured, Workload, WorkloadError, WorkloadKind};
use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bulk {
    pub transport: Transport,
    pub direction: Direction,
    pub bytes: u64,
}

pub const KIND: WorkloadKind = WorkloadKind { name: "bulk", keys: fields::<Table>, expand, base_knobs: Knobs::default };

/// A `[[workload]]` table of type bulk: each key one value or a list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[serde(alias = "transport")]
    transports: Option<Many<Choice<Transport>>>,
    #[serde(alias = "direction")]
    directions: Option<Many<Choice<Direction>>>,
    #[serde(alias = "size")]
    sizes: Many<Size>,
}

fn expand(t: toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let t: Table = de(t)?;
    let mut out = Vec::new();
    for Choice(transport) in Many::or(t.transports, vec![Choice(Transport::Tcp)]) {
        for &Choice(direction) in &Many::or(t.directions.clone(), vec![Choice(Direction::Down)]) {
            for &Size(bytes) in &t.sizes.0 {
                out.push(Workload::Bulk(Bulk { transport, direction, bytes }));
            }
        }
    }
    Ok(out)
}

impl Kind for Bulk {
    fn expected_bytes(&self) -> u64 {
        self.bytes
    }
    fn validate(&self) -> Result<(), WorkloadError> {
        if self.bytes == 0 {
            return Err(WorkloadError::Empty);
        }
        Ok(())
    }
    fn protocol(&self) -> String {
        self.transport.to_string()
    }
    fn params_label(&self) -> String {
        format!("{} {}", human_bytes(self.bytes), self.direction)
    }
    fn client_cmd(&self, server: String, knobs: &Knobs) -> WorkloadCmd {
        WorkloadCmd::Bulk(BulkArgs { server, transport: self.transport, direction: self.direction, bytes: self.bytes, cc: knobs.tcp_cc, tcp: knobs.tcp, quic: QuicArgs::from(&knobs.quic) })
    }
    fn table_metrics(&self) -> Vec<Metric> {
        vec![GoodputBps, SenderRetransmits, SenderSrttMsMax, LinkDropsDown, LinkDropsUp]
    }
    fn headline(&self) -> Metric {
        CompletionMs
    }
}

impl Measured for Bulk {
    type Result = BulkResult;
    fn metrics(r: &BulkResult) -> Metrics {
        let mut m = Metrics::from([(CompletionMs, r.completion_ms), (GoodputBps, r.goodput_bps), (SenderRetransmits, r.sender_retransmits as f64), (SenderSrttMsMax, r.sender_srtt_ms_max)]);
        // 0: not sampled (an upload, QUIC, a result from before).
        if r.sender_rto_ms_median != 0.0 {
            m.insert(SenderRtoMsMedian, r.sender_rto_ms_median);
        }
        if let Some(n) = r.sender_timeouts {
            m.insert(SenderTimeouts, n as f64);
        }
        m
    }
}
