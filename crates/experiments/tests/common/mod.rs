//! Scratch files of the store and experiment tests, in the system's
//! temporary directory ([`Scratch`]).
#![allow(dead_code)]

mod scratch;

pub use scratch::Scratch;

/// A fresh path for a store, `aerolink-KIND-NAME-PID.db` (none of it there).
pub fn db(kind: &str, name: &str) -> Scratch {
    let p = std::env::temp_dir().join(format!("aerolink-{kind}-{name}-{}.db", std::process::id()));
    Scratch::remove(&p);
    Scratch::new(p)
}

/// A path for a scratch directory, `aerolink-lab-NAME-PID` (not created).
pub fn dir(name: &str) -> Scratch {
    let p = std::env::temp_dir().join(format!("aerolink-lab-{name}-{}", std::process::id()));
    Scratch::remove(&p);
    Scratch::new(p)
}

/// A successful client's result for a fixture run of `w` (web, objects or
/// bulk) taking `ms`: what `aerolink workload` prints, decoded as the
/// runner decodes it.
pub fn result_of(w: &aerolink_experiments::workload::Workload, ms: f64) -> aerolink_experiments::workload::WorkloadResult {
    use aerolink_experiments::workload::Workload;
    let text = match w {
        Workload::Web(_) => serde_json::json!({ "protocol": w.protocol(), "alpn": "", "page": "fixture", "depth": 1, "plt_ms": ms, "ttfb_ms": ms / 4.0,
            "requests": 11, "body_bytes": 1_000_000, "connections": 6, "client_retransmits": 3, "objects": [] }),
        Workload::Objects(_) => serde_json::json!({ "protocol": w.protocol(), "alpn": "", "set": "fixture", "parallel": true, "total_ms": ms,
            "connections": 1, "client_retransmits": 0, "objects": [] }),
        Workload::Bulk(aerolink_experiments::workload::Bulk { bytes, .. }) => {
            serde_json::json!({ "transport": "tcp", "direction": "down", "bytes": bytes, "completion_ms": ms, "goodput_bps": *bytes as f64 * 8e3 / ms,
            "bins_bytes": [1000, 2000], "sender_retransmits": 2, "sender_cc": "cubic", "sender_srtt_ms_max": 900.0 })
        }
        other => panic!("no fixture result for {other:?}"),
    };
    w.decode(&text.to_string()).expect("a fixture result of its workload")
}
