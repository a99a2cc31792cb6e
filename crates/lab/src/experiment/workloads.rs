//! The kinds of `[[workload]]` table: each declared once in [`KINDS`] — its
//! `type`, its keys (beside the knobs) and how a table expands into
//! workloads. A key given a list sweeps it, in every combination.
//!
//! Adding a workload to experiment files: its `Workload` variant
//! (workload.rs), one entry here.

use aerolink_work::browser::BrowserProtocol;
use aerolink_work::bulk::Direction as BulkDirection;
use aerolink_work::messages::Direction as MessagesDirection;
use aerolink_work::realtime::{Mechanism, Scenario};
use aerolink_work::web::{ObjectsMode, Protocol};
use aerolink_work::Transport;

use super::{strings, values, KeyErr};
use crate::workload::{Knobs, Workload};

/// One kind of workload table.
pub struct WorkloadKind {
    /// Its `type`.
    pub name: &'static str,
    /// Its keys, beside `type` and the knobs.
    pub keys: &'static [&'static str],
    expand: fn(&toml::Table) -> Result<Vec<Workload>, KeyErr>,
    /// The knobs its runs start from, before the table's own.
    pub base_knobs: fn() -> Knobs,
}

pub const KINDS: &[WorkloadKind] = &[
    WorkloadKind { name: "web", keys: &["protocol", "protocols", "page", "pages", "depth", "depths"], expand: web, base_knobs: Knobs::default },
    WorkloadKind { name: "bulk", keys: &["transport", "transports", "direction", "directions", "size", "sizes"], expand: bulk, base_knobs: Knobs::default },
    WorkloadKind { name: "objects", keys: &["protocol", "protocols", "set", "sets", "mode", "modes"], expand: objects, base_knobs: Knobs::default },
    WorkloadKind {
        name: "messages",
        keys: &["transport", "transports", "direction", "directions", "size", "sizes", "rate", "rates", "duration", "down_size", "down_rate"],
        expand: messages,
        base_knobs: Knobs::default,
    },
    // Real-time web keeps Nagle's algorithm on unless told otherwise, as
    // in seed 001's study.
    WorkloadKind {
        name: "realtime",
        keys: &["mechanism", "mechanisms", "scenario", "scenarios", "count", "interval_ms", "size"],
        expand: realtime,
        base_knobs: || Knobs { nagle: true, ..Knobs::default() },
    },
    WorkloadKind { name: "ping", keys: &["count", "interval", "size", "sizes"], expand: ping, base_knobs: Knobs::default },
    WorkloadKind { name: "browser", keys: &["protocol", "protocols", "page", "pages", "warm"], expand: browser, base_knobs: Knobs::default },
];

/// "web, bulk, … or browser".
fn names() -> String {
    let n: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
    format!("{} or {}", n[..n.len() - 1].join(", "), n[n.len() - 1])
}

/// The kind a table's `type` names.
pub fn kind_of(t: &toml::Table) -> Result<&'static WorkloadKind, KeyErr> {
    let ty = t.get("type").and_then(|v| v.as_str()).ok_or_else(|| ("type".to_string(), format!("expected {}", names())))?;
    let kind = KINDS.iter().find(|k| k.name == ty).ok_or_else(|| ("type".to_string(), format!("{ty:?}: expected {}", names())))?;
    for k in t.keys() {
        if k != "type" && !kind.keys.contains(&k.as_str()) && !super::knobs::is_knob(k) {
            return Err((k.clone(), format!("unknown key for a {ty} workload; allowed: {}, {}", kind.keys.join(", "), super::knobs::keys())));
        }
    }
    Ok(kind)
}

impl WorkloadKind {
    /// Every workload the table sweeps.
    pub fn expand(&self, t: &toml::Table) -> Result<Vec<Workload>, KeyErr> {
        (self.expand)(t)
    }
}

/// Every value of a key given as text or a list of texts, each parsed from
/// a closed set (the first of `keys` present; `default` when none is).
fn picks<T: std::str::FromStr<Err = aerolink_work::UnknownChoice>>(t: &toml::Table, keys: &[&str], default: Vec<T>) -> Result<Vec<T>, KeyErr> {
    for k in keys {
        if t.contains_key(*k) {
            return list_of(t, &[k])?.iter().map(|s| s.parse().map_err(|e: aerolink_work::UnknownChoice| (k.to_string(), e.to_string()))).collect();
        }
    }
    Ok(default)
}

/// The texts of the first of `keys` present.
fn list_of(t: &toml::Table, keys: &[&str]) -> Result<Vec<String>, KeyErr> {
    for k in keys {
        if let Some(v) = t.get(*k) {
            return strings(v).ok_or_else(|| (k.to_string(), "expected text in quotes or a list of them".into()));
        }
    }
    Err((keys[0].to_string(), "missing".into()))
}

/// The whole numbers of the first of `keys` present, `d` when none is.
fn ints(t: &toml::Table, keys: &[&str], d: i64) -> Result<Vec<i64>, KeyErr> {
    for k in keys {
        if let Some(v) = t.get(*k) {
            return values(v).iter().map(|x| x.as_integer().ok_or_else(|| (k.to_string(), "expected whole numbers".to_string()))).collect();
        }
    }
    Ok(vec![d])
}

/// A positive whole number, `d` when absent.
fn positive(t: &toml::Table, k: &str, d: i64) -> Result<i64, KeyErr> {
    match t.get(k) {
        None => Ok(d),
        Some(toml::Value::Integer(i)) if *i > 0 => Ok(*i),
        _ => Err((k.to_string(), "expected a positive whole number".to_string())),
    }
}

/// A duration, `d` when absent.
fn duration(t: &toml::Table, k: &str, d: aerolink_link::Duration) -> Result<aerolink_link::Duration, KeyErr> {
    match t.get(k) {
        None => Ok(d),
        Some(v) => aerolink_link::units::parse_duration(v.as_str().unwrap_or("")).map_err(|m| (k.to_string(), format!("expected {m}"))),
    }
}

/// A rate as an experiment file writes it ("1024 bit/s"), bit/s; the error
/// names `key`.
fn rate_bps(text: &str, key: &str) -> Result<f64, KeyErr> {
    aerolink_link::units::parse_rate(text).map(|r| r.bits_per_sec).map_err(|m| (key.to_string(), format!("{text:?}: expected {m}")))
}

fn u32_of(i: i64) -> u32 {
    i.clamp(0, u32::MAX as i64) as u32
}

fn web(t: &toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let mut out = Vec::new();
    for protocol in picks(t, &["protocols", "protocol"], vec![Protocol::H2])? {
        for page in list_of(t, &["pages", "page"])? {
            for depth in ints(t, &["depths", "depth"], 1)? {
                out.push(Workload::Web { protocol, page: page.clone(), depth: depth.clamp(0, 100) as u32 });
            }
        }
    }
    Ok(out)
}

fn bulk(t: &toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let mut out = Vec::new();
    for transport in picks(t, &["transports", "transport"], vec![Transport::Tcp])? {
        for direction in picks(t, &["directions", "direction"], vec![BulkDirection::Down])? {
            for size in list_of(t, &["sizes", "size"])? {
                let bytes = aerolink_work::page::parse_bytes(&size).ok_or_else(|| ("sizes".to_string(), format!("{size:?}: expected a size like 1MB")))?;
                out.push(Workload::Bulk { transport, direction, bytes });
            }
        }
    }
    Ok(out)
}

fn objects(t: &toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let mut out = Vec::new();
    for protocol in picks(t, &["protocols", "protocol"], vec![Protocol::H3])? {
        for set in list_of(t, &["sets", "set"])? {
            for mode in picks(t, &["modes", "mode"], vec![ObjectsMode::Seq])? {
                out.push(Workload::Objects { protocol, set: set.clone(), parallel: mode == ObjectsMode::Par });
            }
        }
    }
    Ok(out)
}

fn browser(t: &toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let warm = match t.get("warm") {
        None => false,
        Some(toml::Value::Boolean(b)) => *b,
        Some(_) => return Err(("warm".into(), "expected true or false".into())),
    };
    let mut out = Vec::new();
    for protocol in picks(t, &["protocols", "protocol"], vec![BrowserProtocol::H2])? {
        for page in list_of(t, &["pages", "page"])? {
            out.push(Workload::Browser { protocol, page: page.clone(), warm, har: None, screenshot: None, net_log: None });
        }
    }
    Ok(out)
}

fn realtime(t: &toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let (count, interval_ms, size) = (positive(t, "count", 100)?, positive(t, "interval_ms", 200)?, positive(t, "size", 64)?);
    let mut out = Vec::new();
    for mechanism in picks(t, &["mechanisms", "mechanism"], Mechanism::ALL.to_vec())? {
        for scenario in picks(t, &["scenarios", "scenario"], Scenario::ALL.to_vec())? {
            out.push(Workload::Realtime { mechanism, scenario, count: count as u32, interval_ms: interval_ms as u64, size: size as u32 });
        }
    }
    Ok(out)
}

fn ping(t: &toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let count = positive(t, "count", 100)?;
    let interval_ms = duration(t, "interval", aerolink_link::Duration::from_millis(1000))?.as_millis_f64().round() as u64;
    ints(t, &["sizes", "size"], 56)?.into_iter().map(|size| Ok(Workload::Ping { count: u32_of(count), interval_ms, size: u32_of(size) })).collect()
}

fn messages(t: &toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let duration_s = duration(t, "duration", aerolink_link::Duration::from_secs(60))?.as_secs_f64();
    let down_size = match t.get("down_size") {
        None => None,
        Some(v) => Some(v.as_integer().and_then(|i| u32::try_from(i).ok()).ok_or_else(|| ("down_size".to_string(), "expected the ground's message size in bytes".to_string()))?),
    };
    let down_rate = match t.get("down_rate") {
        None => None,
        Some(v) => Some(rate_bps(v.as_str().ok_or_else(|| ("down_rate".to_string(), "expected the ground's offered rate, like \"1024 bit/s\"".to_string()))?, "down_rate")?),
    };
    let mut out = Vec::new();
    for transport in picks(t, &["transports", "transport"], vec![Transport::Tcp])? {
        for direction in picks(t, &["directions", "direction"], vec![MessagesDirection::Up])? {
            for size in ints(t, &["sizes", "size"], 64)? {
                for rate in list_of(t, &["rates", "rate"])? {
                    let up = aerolink_work::messages::Offer { size: u32_of(size), rate_bps: rate_bps(&rate, "rates")? };
                    let down = aerolink_work::messages::Offer::ground(up, down_size, down_rate);
                    out.push(Workload::Messages { transport, direction, size: up.size, rate_bps: up.rate_bps, duration_s, down });
                }
            }
        }
    }
    Ok(out)
}
