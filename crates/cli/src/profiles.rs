//! `aerolink profiles list | show NAME`.

use aerolink_link::{builtin, Profile};
use serde_json::json;

use crate::linkargs::load_profile;

pub fn list(json_out: bool) -> anyhow::Result<i32> {
    let mut rows = Vec::new();
    for name in builtin::names() {
        let p = load_profile(name, &[])?;
        rows.push(p);
    }
    if json_out {
        let v: Vec<_> = rows.iter().map(profile_json).collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    println!("{:<16} {:>14} {:>14} {:>9} {:>7}  description", "name", "down", "up", "RTT", "loss");
    for p in &rows {
        // The capacity, whichever stage sets it (a rate, or L-DACS's user rate).
        let rate = |d: &aerolink_link::DirectionSpec| match (&d.rate, d.capacity_bps()) {
            (aerolink_link::profile::RateSpec::Trace { .. }, _) => d.described.get("rate").cloned().unwrap_or_default(),
            (_, Some(bps)) => aerolink_link::units::Rate::from_bps(bps).to_string(),
            (_, None) => "unlimited".to_string(),
        };
        let loss = 1.0 - (1.0 - p.up.mean_loss()) * (1.0 - p.down.mean_loss());
        println!("{:<16} {:>14} {:>14} {:>9} {:>6.2}%  {}", p.name, rate(&p.down), rate(&p.up), p.base_rtt().to_string(), loss * 100.0, p.description);
    }
    println!("\nloss is round-trip (what a ping sees). `aerolink profiles show NAME` for details and sources.");
    Ok(0)
}

pub fn show(name: &str, json_out: bool) -> anyhow::Result<i32> {
    let p = load_profile(name, &[])?;
    if json_out {
        println!("{}", serde_json::to_string_pretty(&profile_json(&p))?);
    } else {
        print!("{p}");
        if let Some(text) = builtin::get(name) {
            println!("\n# the profile file:\n{text}");
        }
    }
    Ok(0)
}

pub fn profile_json(p: &Profile) -> serde_json::Value {
    json!({
        "name": p.name,
        "description": p.description,
        "source": p.source,
        "split": p.split,
        "rtt_ms": p.base_rtt().as_millis_f64(),
        "up": p.up.described,
        "down": p.down.described,
    })
}
