//! irtt's JSON output read as a probe log: `aerolink analyze` and `fit`
//! take the file `irtt client -o FILE.json` (or `.json.gz`) writes — the
//! format the Starlink measurement community publishes its traces in (the
//! LENS dataset) — as they take our agent's log.
//!
//! Each round trip becomes one UDP probe record: its sequence number, the
//! client's send time, the round trip when a reply came, and where irtt
//! could tell, which way a lost one was lost (`true_up`: the request never
//! arrived; `true_down`: the reply did not; needs `irtt client --stats`
//! with its window, the default). One-way delays are left out: irtt does
//! not say whether the two clocks were synchronised, and our analysis only
//! uses one-way delays from clocks it trusts. The format is described in
//! irtt-client(1), "JSON Format"; `lost` is a string (`"false"`,
//! `"true"`, `"true_down"`, `"true_up"`) in irtt 0.9 and a boolean in the
//! manual's example: both are read.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::record::{ClockState, Measurement, Record, UdpProbe};

/// Whether `bytes` (a file's start) look like irtt's output: one JSON
/// object (possibly gzipped) rather than our one record per line.
pub fn looks_like_irtt(path: &Path, head: &[u8]) -> bool {
    let gz = head.starts_with(&[0x1f, 0x8b]) || path.extension().is_some_and(|e| e == "gz");
    gz || String::from_utf8_lossy(head).contains("\"round_trips\"") || String::from_utf8_lossy(head).trim_start().starts_with("{\n")
}

/// Reads an irtt JSON file (gzipped when its bytes say so).
pub fn read(path: &Path) -> Result<Vec<Record>, String> {
    let raw = std::fs::read(path).map_err(|e| e.to_string())?;
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&raw[..]).read_to_string(&mut s).map_err(|e| format!("not a gzipped irtt JSON file: {e}"))?;
        s
    } else {
        String::from_utf8(raw).map_err(|_| "not UTF-8 text: expected irtt's JSON output".to_string())?
    };
    records(&text)
}

fn ns(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

/// The records of one irtt run: a start (the target, irtt's version and
/// configuration), a UDP probe per round trip, a stop.
pub fn records(text: &str) -> Result<Vec<Record>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not irtt's JSON output: {e}"))?;
    let trips = v.get("round_trips").and_then(Value::as_array).ok_or("no \"round_trips\" list: not irtt's JSON output (irtt client -o FILE.json)")?;
    let config = v.get("config").cloned().unwrap_or(Value::Null);
    let target = config.get("remote_address").and_then(Value::as_str).unwrap_or("?").to_string();
    let version = v.pointer("/version/irtt").and_then(Value::as_str).unwrap_or("?");
    // A session per run: the start time in ns keeps two runs' apart.
    let start_wall = trips.iter().find_map(|t| t.pointer("/timestamps/client/send/wall").and_then(ns)).ok_or("no round trip has a send time")?;
    let session = start_wall as u64;
    let clock = ClockState { synced: false, maxerror_us: 0 };
    let mut out = vec![Record { n: 0, t: start_wall / 1e9, clock, m: Measurement::Start { target, version: format!("irtt {version}"), config } }];
    let mut last_t = start_wall / 1e9;
    for (i, trip) in trips.iter().enumerate() {
        let err = |what: &str| format!("round_trips[{i}]: {what}");
        let seq = trip.get("seqno").and_then(Value::as_u64).ok_or_else(|| err("no seqno"))?;
        let t = trip.pointer("/timestamps/client/send/wall").and_then(ns).ok_or_else(|| err("no client send time"))? / 1e9;
        let lost = match trip.get("lost") {
            Some(Value::Bool(b)) => {
                if *b {
                    "true"
                } else {
                    "false"
                }
            }
            Some(Value::String(s)) => s.as_str(),
            _ => return Err(err("no \"lost\" status")),
        };
        let (rtt_ms, up_arrived) = match lost {
            "false" => (Some(trip.pointer("/delay/rtt").and_then(ns).ok_or_else(|| err("answered but no delay.rtt"))? / 1e6), Some(true)),
            "true" => (None, None),
            "true_down" => (None, Some(true)),
            "true_up" => (None, Some(false)),
            other => return Err(err(&format!("lost = {other:?}: expected false, true, true_down or true_up"))),
        };
        last_t = last_t.max(t);
        let probe = UdpProbe { seq, session, rtt_ms, up_ms: None, down_ms: None, rx_max: None, rx_bitmap: None, up_arrived };
        out.push(Record { n: i as u64 + 1, t, clock, m: Measurement::Udp(probe) });
    }
    out.push(Record { n: trips.len() as u64 + 1, t: last_t, clock, m: Measurement::Stop { reason: "end of the irtt run".into() } });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trip(seq: u64, send_ns: u64, lost: &str, rtt_ns: Option<u64>) -> String {
        let delay = rtt_ns.map(|r| format!(r#""delay": {{"rtt": {r}, "send": 1, "receive": 2}},"#)).unwrap_or_default();
        format!(r#"{{"seqno": {seq}, "lost": {lost}, "timestamps": {{"client": {{"send": {{"wall": {send_ns}, "monotonic": 1}}, "receive": {{}}}}, "server": {{}}}}, {delay} "ipdv": {{}}}}"#)
    }

    #[test]
    fn round_trips_become_probes_with_their_loss_direction() {
        let t0 = 1_795_756_038_000_000_000u64;
        let trips = [
            trip(0, t0, r#""false""#, Some(612_500_000)),
            trip(1, t0 + 200_000_000, r#""true_up""#, None),
            trip(2, t0 + 400_000_000, r#""true_down""#, None),
            trip(3, t0 + 600_000_000, "true", None),
            trip(4, t0 + 800_000_000, "false", Some(600_000_000)),
        ];
        let text = format!(r#"{{"version": {{"irtt": "0.9.0"}}, "config": {{"remote_address": "198.18.0.2:2112"}}, "round_trips": [{}]}}"#, trips.join(","));
        let r = records(&text).unwrap();
        assert!(matches!(&r[0].m, Measurement::Start { target, version, .. } if target == "198.18.0.2:2112" && version == "irtt 0.9.0"));
        let probes: Vec<&UdpProbe> = r.iter().filter_map(|r| if let Measurement::Udp(u) = &r.m { Some(u) } else { None }).collect();
        assert_eq!(probes.iter().map(|p| p.rtt_ms).collect::<Vec<_>>(), vec![Some(612.5), None, None, None, Some(600.0)]);
        assert_eq!(probes.iter().map(|p| p.up_arrived).collect::<Vec<_>>(), vec![Some(true), Some(false), Some(true), None, Some(true)]);
        assert!((r[2].t - r[1].t - 0.2).abs() < 1e-6);
        assert!(matches!(r.last().unwrap().m, Measurement::Stop { .. }));
        // What is wrong is named.
        assert!(records("{}").unwrap_err().contains("round_trips"));
        let bad = text.replace(r#""true_up""#, r#""sideways""#);
        assert!(records(&bad).unwrap_err().contains("round_trips[1]: lost = \"sideways\""));
    }
}
