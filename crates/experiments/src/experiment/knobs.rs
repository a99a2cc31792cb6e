//! The knobs of a `[[workload]]` table: each declared once in [`KNOBS`] —
//! its key and how one of its values sets a run's [`Knobs`]. A key given a
//! list sweeps it: every combination of every swept knob is a case.
//!
//! Adding a knob: a field of `Knobs` (workload/knobs.rs), one entry here.

use aerolink_work::quic::{Preset, QuicCc, QuicKnobs, WindowGrowth, PACING_GAIN, WINDOW_UNIT_BYTES};
use aerolink_work::sock::TcpCc;

use crate::gateways::PepSpec;
use crate::workload::table::KeyErr;
use crate::workload::{Cross, Knobs, Reordering};

/// One knob: its key in a `[[workload]]` table, whether it is a PEP
/// setting (those need the gateway chain), and how one value sets it (the
/// error says what the key allows).
pub struct KnobDef {
    pub key: &'static str,
    pub pep: bool,
    set: fn(&mut Knobs, &toml::Value) -> Result<(), String>,
}

/// Every knob, in the order they are swept (a later one may build on an
/// earlier: `quic_cc` changes the preset `quic_preset` chose).
pub const KNOBS: &[KnobDef] = &[
    KnobDef { key: "pep", pep: true, set: |k, v| pep_choice(k, v, |p, s| s.parse().map(|m| p.mode = m)) },
    KnobDef { key: "pep_at", pep: true, set: |k, v| pep_choice(k, v, |p, s| s.parse().map(|m| p.at = m)) },
    KnobDef { key: "pep_cc", pep: true, set: |k, v| pep_choice(k, v, |p, s| s.parse().map(|m| p.tcp_cc = m)) },
    KnobDef {
        key: "pep_initcwnd",
        pep: true,
        set: |k, v| {
            let n = whole(v, 1, 1000, "segments").map_err(|m| format!("{v}: {m}"))?;
            pep(k).initcwnd = Some(n);
            Ok(())
        },
    },
    KnobDef { key: "tunnel_cc", pep: true, set: |k, v| pep_choice(k, v, |p, s| s.parse().map(|m| p.tunnel_cc = m)) },
    KnobDef { key: "tunnel_preset", pep: true, set: |k, v| pep_choice(k, v, |p, s| s.parse().map(|m| p.tunnel_preset = m)) },
    KnobDef {
        key: "tunnel_rate",
        pep: true,
        set: |k, v| {
            pep(k).tunnel_rate = Some(pep_text(v)?.parse().map_err(|m| format!("{v}: {m}"))?);
            Ok(())
        },
    },
    KnobDef {
        key: "tunnel_max_probe",
        pep: true,
        set: |k, v| {
            pep(k).tunnel_max_probe = pep_text(v)?.parse().map_err(|m| format!("{v}: {m}"))?;
            Ok(())
        },
    },
    KnobDef { key: "tcp_cc", pep: false, set: |k, v| choice(v, TcpCc::allowed).map(|c| k.tcp_cc = c) },
    KnobDef {
        key: "initcwnd",
        pep: false,
        set: |k, v| {
            k.initcwnd = Some(whole(v, 1, 1000, "segments")?);
            Ok(())
        },
    },
    KnobDef {
        key: "initrwnd",
        pep: false,
        set: |k, v| {
            k.initrwnd = Some(whole(v, 1, 1000, "segments")?);
            Ok(())
        },
    },
    KnobDef { key: "quic_preset", pep: false, set: |k, v| choice(v, Preset::allowed).map(|p| k.quic = QuicKnobs::preset(p)) },
    KnobDef { key: "quic_cc", pep: false, set: |k, v| choice(v, QuicCc::allowed).map(|c| k.quic.cc = c) },
    KnobDef {
        key: "quic_rate",
        pep: false,
        set: |k, v| {
            let r = v.as_str().and_then(|s| aerolink_work::quic::parse_rate_bps(s).ok());
            k.quic.rate_bps = Some(r.ok_or_else(|| format!("{v}: expected the path's rate, like \"10Mbit/s\" (with quic_cc or quic_preset \"sat\")"))?);
            Ok(())
        },
    },
    KnobDef {
        key: "quic_max_cwnd",
        pep: false,
        set: |k, v| {
            k.quic.max_cwnd_packets = Some(whole(v, 1, 10_000_000, "packets")?);
            Ok(())
        },
    },
    KnobDef {
        key: "quic_pacing_interval",
        pep: false,
        set: |k, v| {
            let us = v.as_str().and_then(|s| aerolink_work::quic::parse_pacing_us(s).ok());
            k.quic.pacing_interval_us = Some(us.ok_or_else(|| format!("{v}: expected a burst interval from \"10us\" to \"100ms\", like \"1.01ms\""))?);
            Ok(())
        },
    },
    KnobDef {
        key: "quic_pacing_gain",
        pep: false,
        set: |k, v| {
            let g = v.as_float().or_else(|| v.as_integer().map(|i| i as f64)).filter(|g| PACING_GAIN.contains(g));
            k.quic.pacing_gain = Some(g.ok_or_else(|| format!("{v}: expected the pacer's rate in windows per RTT, from 1 to 10, like 2"))?);
            Ok(())
        },
    },
    KnobDef {
        key: "quic_window_unit",
        pep: false,
        set: |k, v| {
            let (lo, hi) = (*WINDOW_UNIT_BYTES.start() as i64, *WINDOW_UNIT_BYTES.end() as i64);
            k.quic.window_unit_bytes = Some(whole(v, lo, hi, "bytes per packet of the windows given in packets")?);
            Ok(())
        },
    },
    KnobDef { key: "quic_window_growth", pep: false, set: |k, v| choice(v, WindowGrowth::allowed).map(|g| k.quic.window_growth = Some(g)) },
    KnobDef { key: "cross", pep: false, set: |k, v| choice(v, Cross::allowed).map(|c: Cross| k.cross = (c != Cross::None).then_some(c)) },
    KnobDef {
        key: "cross_flows",
        pep: false,
        set: |k, v| {
            k.cross_flows = whole(v, 1, 16, "TCP connections of the competing traffic")?;
            Ok(())
        },
    },
    KnobDef {
        key: "cross_lead",
        pep: false,
        set: |k, v| {
            let d = v.as_str().and_then(|s| aerolink_link::units::parse_duration(s).ok()).filter(|d| d.0 <= 600_000_000_000);
            let d = d.ok_or_else(|| format!("{v}: expected how long the competing traffic runs first, from \"0 s\" to \"10 min\", like \"20 s\""))?;
            k.cross_lead_ms = Some(d.0 / 1_000_000);
            Ok(())
        },
    },
    KnobDef {
        key: "mss",
        pep: false,
        set: |k, v| {
            k.tcp.mss = Some(whole(v, 88, 65_535, "bytes")?);
            Ok(())
        },
    },
    KnobDef {
        key: "rcvbuf",
        pep: false,
        set: |k, v| {
            k.tcp.rcvbuf = Some(whole(v, 1_024, 1 << 30, "bytes")?);
            Ok(())
        },
    },
    KnobDef { key: "tcp_reordering", pep: false, set: |k, v| choice(v, Reordering::allowed).map(|r| k.tcp_reordering = r) },
    KnobDef { key: "message_stamp", pep: false, set: |k, v| choice(v, aerolink_work::messages::Stamp::allowed).map(|s| k.message_stamp = s) },
    KnobDef { key: "quickack", pep: false, set: |k, v| boolean(v).map(|b| k.tcp.quickack = b) },
    KnobDef { key: "ipv6", pep: false, set: |k, v| boolean(v).map(|b| k.ipv6 = b) },
    KnobDef { key: "tcp_timestamps", pep: false, set: |k, v| boolean(v).map(|b| k.tcp_timestamps = b) },
    KnobDef { key: "tcp_sack", pep: false, set: |k, v| boolean(v).map(|b| k.tcp_sack = b) },
    KnobDef { key: "tls_resume", pep: false, set: |k, v| boolean(v).map(|b| k.tls_resume = b) },
    KnobDef {
        key: "h2_window",
        pep: false,
        set: |k, v| {
            k.h2_window = Some(whole(v, 65_535, i32::MAX as i64, "bytes of the HTTP/2 client's stream and connection windows")?);
            Ok(())
        },
    },
    KnobDef { key: "nagle", pep: false, set: |k, v| boolean(v).map(|b| k.nagle = b) },
    KnobDef {
        key: "push",
        pep: false,
        set: |k, v| {
            k.push = whole(v, 0, 100, "a share of a page's objects in %")?;
            Ok(())
        },
    },
];

/// The run's PEP settings, the defaults until a key sets one.
fn pep(k: &mut Knobs) -> &mut PepSpec {
    k.pep.get_or_insert_with(PepSpec::default)
}

fn pep_text(v: &toml::Value) -> Result<&str, String> {
    v.as_str().ok_or_else(|| format!("{v}: expected text in quotes, or a list"))
}

/// A PEP setting from a closed set.
fn pep_choice(k: &mut Knobs, v: &toml::Value, set: fn(&mut PepSpec, &str) -> Result<(), aerolink_work::UnknownChoice>) -> Result<(), String> {
    set(pep(k), pep_text(v)?).map_err(|e| e.to_string())
}

/// A value of a closed set; the error lists the set.
fn choice<T: std::str::FromStr>(v: &toml::Value, allowed: fn() -> String) -> Result<T, String> {
    v.as_str().and_then(|s| s.parse().ok()).ok_or_else(|| format!("{v}: expected one of {}", allowed()))
}

fn boolean(v: &toml::Value) -> Result<bool, String> {
    v.as_bool().ok_or_else(|| "expected true or false".into())
}

/// A whole number of `what` from `lo` to `hi`; the error says so.
fn whole<T: TryFrom<i64>>(v: &toml::Value, lo: i64, hi: i64, what: &str) -> Result<T, String> {
    v.as_integer().filter(|i| (lo..=hi).contains(i)).and_then(|i| T::try_from(i).ok()).ok_or_else(|| format!("expected {what} from {lo} to {hi}"))
}

/// A value, or each value of a list.
fn values(v: &toml::Value) -> Vec<toml::Value> {
    match v {
        toml::Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    }
}

/// Every combination of the knobs `t` sweeps, starting from `base`.
pub(super) fn expand(t: &toml::Table, base: Knobs) -> Result<Vec<Knobs>, KeyErr> {
    let mut out = vec![base];
    for def in KNOBS {
        let Some(v) = t.get(def.key) else { continue };
        let xs = values(v);
        let mut next = Vec::with_capacity(out.len() * xs.len());
        for k in &out {
            for x in &xs {
                let mut k = k.clone();
                (def.set)(&mut k, x).map_err(|m| (def.key.to_string(), m))?;
                next.push(k);
            }
        }
        out = next;
    }
    // Checked once every key is in (tunnel_cc = "rate" needs tunnel_rate).
    for k in &out {
        if let Some(p) = &k.pep {
            let key = if t.contains_key("tunnel_cc") { "tunnel_cc" } else { "pep" };
            p.validate().map_err(|e| (key.to_string(), e.to_string()))?;
        }
        if t.contains_key("quic_rate") && k.quic.cc != QuicCc::Sat {
            return Err(("quic_rate".into(), format!("the path rate is used by QUIC congestion control \"sat\" only, not \"{}\" (quic_preset = \"sat\" sets it)", k.quic.cc)));
        }
    }
    Ok(out)
}

/// Whether `key` is a knob.
pub fn is_knob(key: &str) -> bool {
    KNOBS.iter().any(|d| d.key == key)
}

/// Every knob's key, for error messages.
pub fn keys() -> String {
    KNOBS.iter().map(|d| d.key).collect::<Vec<_>>().join(", ")
}
