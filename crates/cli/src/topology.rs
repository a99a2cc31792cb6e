//! Topology files: a chain of hosts with one profile per hop, as data.
//!
//! ```toml
//! name = "ifc"
//! hosts = ["client", "airgw", "groundgw", "server"]
//!
//! [[hop]]                 # client ↔ airgw
//! profile = "cabin-wifi"
//! [[hop]]                 # airgw ↔ groundgw
//! profile = "mss"
//! [[hop]]                 # groundgw ↔ server
//! profile = "terrestrial"
//! ```
//! A hop may instead define its link inline: `[hop.link]`, `[hop.up]`,
//! `[hop.down]` with the same keys as a profile.

use std::path::Path;

use aerolink_link::Profile;

use crate::error::user;
use crate::linkargs::load_profile;

pub struct Topology {
    pub name: String,
    pub hosts: Vec<String>,
    pub hops: Vec<Profile>,
}

pub fn load(file: &str) -> anyhow::Result<Topology> {
    let err = |key: &str, m: &str| user(format!("{file}: {key}: {m}"));
    let text = std::fs::read_to_string(file).map_err(|e| user(format!("{file}: cannot read: {e}")))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| err("(syntax)", &format!("not valid TOML: {}", e.message())))?;
    for k in table.keys() {
        if !["name", "hosts", "hop"].contains(&k.as_str()) {
            return Err(err(k, "unknown key; allowed: name, hosts, hop"));
        }
    }
    let name = table.get("name").and_then(|v| v.as_str()).unwrap_or("topology").to_string();
    let hosts: Vec<String> = table
        .get("hosts")
        .and_then(|v| v.as_array())
        .ok_or_else(|| err("hosts", "expected a list of host names, like [\"client\", \"server\"]"))?
        .iter()
        .map(|v| v.as_str().map(str::to_string).ok_or_else(|| err("hosts", "expected host names in quotes")))
        .collect::<Result<_, _>>()?;
    if hosts.len() < 2 {
        return Err(err("hosts", "expected at least two hosts"));
    }
    for h in &hosts {
        aerolink_net::lab::check_host_name(h).map_err(|m| err("hosts", &m))?;
    }
    if hosts.iter().collect::<std::collections::BTreeSet<_>>().len() != hosts.len() {
        return Err(err("hosts", "host names must be different"));
    }
    let hop_vals = table.get("hop").and_then(|v| v.as_array()).ok_or_else(|| err("hop", "expected [[hop]] tables, one per link"))?;
    if hop_vals.len() != hosts.len() - 1 {
        return Err(err("hop", &format!("{} hosts need {} [[hop]] tables, found {}", hosts.len(), hosts.len() - 1, hop_vals.len())));
    }
    let dir = Path::new(file).parent().map(|p| p.to_path_buf()).unwrap_or_default();
    let mut hops = Vec::new();
    for (i, h) in hop_vals.iter().enumerate() {
        let key = format!("hop[{}]", i + 1);
        let t = h.as_table().ok_or_else(|| err(&key, "expected a table"))?;
        let prof = match t.get("profile") {
            Some(toml::Value::String(p)) => {
                if t.len() > 1 {
                    return Err(err(&key, "give either profile = \"…\" or inline [link]/[up]/[down] keys, not both"));
                }
                let candidate = dir.join(p);
                let target = if candidate.exists() { candidate.to_string_lossy().to_string() } else { p.clone() };
                load_profile(&target, &[])?
            }
            Some(_) => return Err(err(&format!("{key}.profile"), "expected a profile name or file in quotes")),
            None => {
                let inline = toml::to_string(t).map_err(|e| err(&key, &e.to_string()))?;
                let mut load = |p: &str| std::fs::read_to_string(dir.join(p)).map_err(|e| e.to_string());
                let origin = format!("{file} {key}");
                let mut p = Profile::parse(&inline, &origin, &[], &mut load).map_err(|e| user(e.to_string()))?;
                p.name = format!("{name}-hop{}", i + 1);
                p
            }
        };
        hops.push(prof);
    }
    Ok(Topology { name, hosts, hops })
}
