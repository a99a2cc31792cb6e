//! `aerolink profiles list | show NAME`.

use aerolink_link::{builtin, Profile};
use serde_json::json;

use aerolink_experiments::linkargs::load_profile;

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
            (aerolink_link::profile::RateSpec::Trace { .. } | aerolink_link::profile::RateSpec::Series { .. }, _) => d.described.get("rate").cloned().unwrap_or_default(),
            (_, Some(bps)) => aerolink_link::units::Rate::from_bps(bps).to_string(),
            (_, None) => "unlimited".to_string(),
        };
        let loss = 1.0 - (1.0 - p.up.mean_loss()) * (1.0 - p.down.mean_loss());
        println!("{:<16} {:>14} {:>14} {:>9} {:>6.2}%  {}", p.name, rate(&p.down), rate(&p.up), p.base_rtt().to_string(), loss * 100.0, p.description);
    }
    println!("\nloss is round-trip (what a ping sees). `aerolink profiles show NAME` for details and sources.");
    Ok(0)
}

pub fn show(name: Option<String>, mut link: aerolink_experiments::linkargs::LinkArgs, json_out: bool) -> anyhow::Result<i32> {
    if name.is_some() && link.profile.is_some() {
        return Err(crate::error::user("profiles show: give the profile as NAME or --profile, not both"));
    }
    link.profile = name.or(link.profile);
    if link.topology.is_some() || link.space.is_some() {
        return Err(crate::error::user("profiles show: --topology and --space describe chains; show one profile (NAME) or the link flags"));
    }
    let flags = !link.overrides()?.is_empty();
    if link.profile.is_none() && !flags {
        return Err(crate::error::user("profiles show: give a profile NAME (see `aerolink profiles list`) or link flags such as --rate or --netem"));
    }
    let p = link.profile()?;
    if json_out {
        println!("{}", serde_json::to_string_pretty(&profile_json(&p))?);
    } else {
        print!("{p}");
        if let Some(text) = link.profile.as_deref().filter(|_| !flags).and_then(builtin::get) {
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
