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

/// A fixture run of `w` that went (`ok`, taking 1 s) or failed (timed out).
pub fn outcome(w: &aerolink_experiments::workload::Workload, ok: bool) -> aerolink_experiments::runner::RunOutcome {
    let mut o: aerolink_experiments::runner::RunOutcome = serde_json::from_value(serde_json::json!({
        "ok": ok, "error": if ok { None } else { Some("timed out") }, "result": null,
        "wire_bytes_down": 1, "wire_bytes_up": 1, "link_drops_loss": 0, "link_drops_queue": 0, "setup_ms": 1.0, "teardown_ms": 1.0, "client_ms": 1.0
    }))
    .unwrap();
    o.result = ok.then(|| result_of(w, 1000.0));
    o
}
