//! `objects`: a set of objects (seed 003's) fetched one after another or
//! all at once over one protocol.

use aerolink_work::cli::{ObjectsArgs, ObjectsParams, WorkloadCmd};
use aerolink_work::quic::QuicArgs;
use aerolink_work::web::{ObjectsMode, ObjectsResult, Protocol};
use serde::{Deserialize, Serialize};

use super::table::{de, fields, Choice, KeyErr, Many, Text};
use super::{Kind, Knobs, Measured, Workload, WorkloadError, WorkloadKind};
use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Objects {
    pub protocol: Protocol,
    pub set: String,
    pub parallel: bool,
}

pub const KIND: WorkloadKind = WorkloadKind { name: "objects", keys: fields::<Table>, expand, base_knobs: Knobs::default };

/// A `[[workload]]` table of type objects: each key one value or a list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[serde(alias = "protocol")]
    protocols: Option<Many<Choice<Protocol>>>,
    #[serde(alias = "set")]
    sets: Many<Text>,
    #[serde(alias = "mode")]
    modes: Option<Many<Choice<ObjectsMode>>>,
}

fn expand(t: toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let t: Table = de(t)?;
    let mut out = Vec::new();
    for Choice(protocol) in Many::or(t.protocols, vec![Choice(Protocol::H3)]) {
        for Text(set) in &t.sets.0 {
            for Choice(mode) in Many::or(t.modes.clone(), vec![Choice(ObjectsMode::Seq)]) {
                out.push(Workload::Objects(Objects { protocol, set: set.clone(), parallel: mode == ObjectsMode::Par }));
            }
        }
    }
    Ok(out)
}

impl Kind for Objects {
    fn expected_bytes(&self) -> u64 {
        aerolink_work::page::object_set(&self.set).map(|v| v.iter().sum()).unwrap_or(0)
    }
    fn validate(&self) -> Result<(), WorkloadError> {
        aerolink_work::page::object_set(&self.set).map(|_| ()).map_err(WorkloadError::Set)
    }
    fn protocol(&self) -> String {
        self.protocol.to_string()
    }
    fn params_label(&self) -> String {
        format!("{} {}", self.set, if self.parallel { "par" } else { "seq" })
    }
    fn client_cmd(&self, server: String, knobs: &Knobs) -> WorkloadCmd {
        let mode = if self.parallel { ObjectsMode::Par } else { ObjectsMode::Seq };
        WorkloadCmd::Objects(ObjectsArgs { server, params: ObjectsParams { protocol: self.protocol, set: self.set.clone(), mode }, quic: QuicArgs::from(&knobs.quic) })
    }
    fn table_metrics(&self) -> Vec<Metric> {
        vec![Connections, ClientRetransmits, LinkDropsDown, LinkDropsUp]
    }
    fn headline(&self) -> Metric {
        TotalMs
    }
}

impl Measured for Objects {
    type Result = ObjectsResult;
    fn metrics(r: &ObjectsResult) -> Metrics {
        Metrics::from([(TotalMs, r.total_ms), (Connections, r.connections as f64), (ClientRetransmits, r.client_retransmits as f64)])
    }
}
