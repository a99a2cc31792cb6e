//! `messages`: messages of a size offered at a rate for a duration, up,
//! down or both ways at once (seed 004), each one's latency measured.

use aerolink_link::units::Rate;
use aerolink_link::Duration;
use aerolink_work::cli::{MessagesArgs, MessagesParams, WorkloadCmd};
use aerolink_work::messages::{Direction, MessagesResult, Offer};
use aerolink_work::quic::QuicArgs;
use aerolink_work::Transport;
use serde::{Deserialize, Serialize};

use super::table::{de, fields, Choice, Dur, KeyErr, Many, Rate as RateBps, Whole};
use super::{mean, sorted, Kind, Knobs, Measured, Workload, WorkloadError, WorkloadKind};
use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Messages {
    #[serde(default = "tcp")]
    pub transport: Transport,
    pub direction: Direction,
    pub size: u32,
    pub rate_bps: f64,
    pub duration_s: f64,
    /// Both ways at once: the ground's own size and rate (seed 004's
    /// third two-way test); `None`, the same as the aircraft's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down: Option<Offer>,
}

fn tcp() -> Transport {
    Transport::Tcp
}

pub const KIND: WorkloadKind = WorkloadKind { name: "messages", keys: fields::<Table>, expand, base_knobs: Knobs::default };

/// Message sizes, bytes.
type Bytes = Whole<0, { u32::MAX as i64 }>;

/// A `[[workload]]` table of type messages: transports, directions, sizes
/// and rates one value or a list; `down_size` and `down_rate` the
/// ground's own offer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[serde(alias = "transport")]
    transports: Option<Many<Choice<Transport>>>,
    #[serde(alias = "direction")]
    directions: Option<Many<Choice<Direction>>>,
    #[serde(alias = "size")]
    sizes: Option<Many<Bytes>>,
    #[serde(alias = "rate")]
    rates: Many<RateBps>,
    duration: Option<Dur>,
    down_size: Option<Bytes>,
    down_rate: Option<RateBps>,
}

fn expand(t: toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let t: Table = de(t)?;
    let duration_s = t.duration.map_or(Duration::from_secs(60), |d| d.0).as_secs_f64();
    let (down_size, down_rate) = (t.down_size.map(|s| s.get::<u32>()), t.down_rate.map(|r| r.0));
    let mut out = Vec::new();
    for Choice(transport) in Many::or(t.transports, vec![Choice(Transport::Tcp)]) {
        for &Choice(direction) in &Many::or(t.directions.clone(), vec![Choice(Direction::Up)]) {
            for size in Many::or(t.sizes.clone(), vec![Whole(64)]) {
                for &RateBps(rate_bps) in &t.rates.0 {
                    let up = Offer { size: size.get(), rate_bps };
                    let down = Offer::ground(up, down_size, down_rate);
                    out.push(Workload::Messages(Messages { transport, direction, size: up.size, rate_bps: up.rate_bps, duration_s, down }));
                }
            }
        }
    }
    Ok(out)
}

impl Kind for Messages {
    fn paced_seconds(&self) -> f64 {
        self.duration_s
    }
    fn validate(&self) -> Result<(), WorkloadError> {
        for (size, rate) in [(self.size, self.rate_bps)].into_iter().chain(self.down.map(|d| (d.size, d.rate_bps))) {
            if size < aerolink_work::messages::MIN_SIZE {
                return Err(WorkloadError::MessageSize(size));
            }
            if rate <= 0.0 {
                return Err(WorkloadError::MessagesRate);
            }
        }
        if self.duration_s <= 0.0 {
            return Err(WorkloadError::MessagesRate);
        }
        if self.down.is_some() && self.direction != Direction::Both {
            return Err(WorkloadError::MessagesDownOffer);
        }
        Ok(())
    }
    fn protocol(&self) -> String {
        self.transport.to_string()
    }
    fn params_label(&self) -> String {
        match self.down {
            Some(d) => format!("{} B at {} bit/s up, {} B at {} bit/s down", self.size, self.rate_bps, d.size, d.rate_bps),
            None => format!("{} B at {} bit/s {}", self.size, self.rate_bps, self.direction),
        }
    }
    fn client_cmd(&self, server: String, knobs: &Knobs) -> WorkloadCmd {
        let params = MessagesParams { transport: self.transport, direction: self.direction, size: self.size, duration: Duration::from_secs_f64(self.duration_s) };
        WorkloadCmd::Messages(MessagesArgs {
            server,
            params,
            rate: Rate { bits_per_sec: self.rate_bps },
            nagle: knobs.nagle,
            stamp: knobs.message_stamp,
            down_size: self.down.map(|d| d.size),
            down_rate: self.down.map(|d| Rate { bits_per_sec: d.rate_bps }),
            quic: QuicArgs::from(&knobs.quic),
        })
    }
    fn table_metrics(&self) -> Vec<Metric> {
        match self.direction {
            Direction::Down => vec![LatencyMsMeanDown, LatencyMsP50Down],
            Direction::Both => vec![DeliveredBpsDown, DeliveredBps, LatencyMsMeanUp, LatencyMsMeanDown, LatencyMsMeanBoth],
            _ => vec![LatencyMsMeanUp, LatencyMsP50Up],
        }
    }
    fn headline(&self) -> Metric {
        match self.direction {
            Direction::Down => DeliveredBpsDown,
            _ => DeliveredBpsUp,
        }
    }
}

impl Measured for Messages {
    type Result = MessagesResult;
    fn metrics(r: &MessagesResult) -> Metrics {
        let mut m = Metrics::new();
        let dur = r.duration_s;
        let mut every: Vec<f64> = Vec::new();
        let mut dirs = 0;
        let mut delivered = 0.0;
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
            delivered += bits / dur;
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
        // Every direction added: seed 004 compares two-way tests' combined
        // rates with one-way ones.
        if dirs > 0 {
            m.insert(DeliveredBps, delivered);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways at once, each direction keeps its own figures and the
    /// two-way mean weighs every message once (seed 004's two-way tests
    /// report one latency for both nodes).
    #[test]
    fn two_way_messages_give_each_direction_and_their_common_mean() {
        let w = Workload::Messages(Messages { transport: Transport::Tcp, direction: Direction::Both, size: 64, rate_bps: 2048.0, duration_s: 10.0, down: None });
        let text = r#"{"transport": "tcp", "size_bytes": 64, "direction": "both", "offered_messages": 40,
            "duration_s": 10.0, "offered_bps": 2048.0,
            "up": { "messages": 2, "bytes": 1000, "latencies_ms": [1000.0, 3000.0] },
            "down": { "messages": 4, "bytes": 2000, "latencies_ms": [6000.0, 6000.0, 6000.0, 6000.0] }}"#;
        let m = w.decode(text).unwrap().metrics();
        assert_eq!(m[&DeliveredBpsUp], 800.0);
        assert_eq!(m[&DeliveredBpsDown], 1600.0);
        assert_eq!(m[&DeliveredBps], 2400.0);
        // Against the 2048 bit/s offered each way.
        assert_eq!(m[&DeliveredShareUp], 800.0 / 2048.0);
        assert_eq!(m[&DeliveredShareDown], 1600.0 / 2048.0);
        assert_eq!(m[&LatencyMsMeanUp], 2000.0);
        assert_eq!(m[&LatencyMsMeanDown], 6000.0);
        assert!((m[&LatencyMsMeanBoth] - 28000.0 / 6.0).abs() < 1e-9, "{m:?}");
        // One way only: no two-way mean.
        let one = r#"{"transport": "tcp", "size_bytes": 64, "direction": "up", "offered_messages": 40, "offered_bps": 2048.0,
            "duration_s": 10.0, "down": null, "up": {"messages": 1, "bytes": 1, "latencies_ms": [1.0]}}"#;
        let m = w.decode(one).unwrap().metrics();
        assert!(!m.contains_key(&LatencyMsMeanBoth), "{m:?}");
        assert_eq!(m[&DeliveredBps], 0.8, "one way: the direction's rate");
    }
}
