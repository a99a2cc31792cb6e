//! Chains of hosts with one profile per hop: the `ifc` preset, topology
//! files, and what a run builds from either.
//!
//! ```toml
//! name = "ifc"
//! hosts = ["client", "airgw", "groundgw", "server"]
//!
//! [[hop]]                 # client ↔ airgw
//! profile = "cabin-wifi"
//! [[hop]]                 # airgw ↔ groundgw
//! profile = "mss"
//! space = true            # the hop an experiment's profiles replace
//! [[hop]]                 # groundgw ↔ server
//! profile = "terrestrial"
//! ```
//! A hop may instead define its link inline: `[hop.link]`, `[hop.up]`,
//! `[hop.down]` with the same keys as a profile.

use std::path::Path;

use aerolink_link::Profile;

use crate::profiles::{load_profile, load_profile_near, LoadError};

/// The hosts of the gateway chain, in order.
pub const IFC_HOSTS: [&str; 4] = ["client", "airgw", "groundgw", "server"];

/// The name of the gateway chain preset.
pub const IFC_PRESET: &str = "ifc";

/// A topology file that cannot be used: where, which key, what is allowed.
/// Always the user's to fix.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("{file}: {key}: {message}")]
    Spec { file: String, key: String, message: String },
    #[error("{file}: cannot read: {source}")]
    Read { file: String, source: std::io::Error },
    #[error("{file}: {key}: {source}")]
    Profile { file: String, key: String, source: LoadError },
}

/// A chain of hosts and the link of each hop.
#[derive(Clone, Debug)]
pub struct Topology {
    pub name: String,
    pub hosts: Vec<String>,
    pub hops: Vec<Profile>,
    /// The hop marked `space = true`: the one an experiment's profiles
    /// replace, and whose counters a run reports.
    pub space: Option<usize>,
    /// The file it came from (empty for the preset).
    pub file: String,
}

fn builtin(name: &str) -> Profile {
    // Built-in profiles are checked by a test of their own.
    load_profile(name, &[]).expect("built-in profiles parse")
}

impl Topology {
    /// The `ifc` chain around a space-hop profile: cabin Wi-Fi, the space
    /// hop, a terrestrial hop.
    pub fn ifc(space: Profile) -> Topology {
        Topology {
            name: IFC_PRESET.into(),
            hosts: IFC_HOSTS.iter().map(|s| s.to_string()).collect(),
            hops: vec![builtin("cabin-wifi"), space, builtin("terrestrial")],
            space: Some(1),
            file: String::new(),
        }
    }

    /// One hop, client ↔ server.
    pub fn direct(profile: Profile) -> Topology {
        Topology { name: profile.name.clone(), hosts: vec!["client".into(), "server".into()], hops: vec![profile], space: Some(0), file: String::new() }
    }

    /// Whether the PEP modes can run on it (it has both gateways).
    pub fn has_gateways(&self) -> bool {
        ["airgw", "groundgw"].iter().all(|g| self.hosts.iter().any(|h| h == g))
    }

    /// The same chain with `profile` on the space hop.
    pub fn with_space(&self, profile: Profile) -> Option<Topology> {
        let mut t = self.clone();
        *t.hops.get_mut(self.space?)? = profile;
        Some(t)
    }

    /// The hop whose counters a run reports: the space hop, else the first.
    pub fn measured_hop(&self) -> usize {
        self.space.unwrap_or(0)
    }

    /// `ifc-mss (cabin-wifi | mss | terrestrial)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.name, self.hops.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(" | "))
    }

    /// A stable text that changes whenever the chain would behave
    /// differently (hosts and every hop's link).
    pub fn canonical(&self) -> String {
        let mut s = format!("hosts={}\n", self.hosts.join(","));
        for (i, h) in self.hops.iter().enumerate() {
            s.push_str(&format!("hop{i}{}:\n{}", if Some(i) == self.space { " (space)" } else { "" }, h.canonical()));
        }
        s
    }

    /// What of the chain around `profile` a run's key depends on.
    pub fn build_key(&self, profile: &Profile) -> String {
        self.with_space(profile.clone()).unwrap_or_else(|| self.clone()).canonical()
    }

    /// Reads a topology file; profiles and trace files are looked up next
    /// to it.
    pub fn load(file: &str) -> Result<Topology, TopologyError> {
        let text = std::fs::read_to_string(file).map_err(|source| TopologyError::Read { file: file.into(), source })?;
        Topology::parse(&text, file)
    }

    /// Parses a topology file's text; `file` names it in errors and is
    /// where relative paths start.
    pub fn parse(text: &str, file: &str) -> Result<Topology, TopologyError> {
        let err = |key: &str, m: &str| TopologyError::Spec { file: file.into(), key: key.into(), message: m.into() };
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let (at, msg) = aerolink_link::units::toml_syntax(text, &e);
            err(&at, &msg)
        })?;
        for k in table.keys() {
            if !["name", "hosts", "hop"].contains(&k.as_str()) {
                return Err(err(k, "unknown key; allowed: name, hosts, hop"));
            }
        }
        let name = match table.get("name") {
            None => "topology".to_string(),
            Some(toml::Value::String(s)) => s.clone(),
            Some(_) => return Err(err("name", "expected a name in quotes")),
        };
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
        let mut space = None;
        for (i, h) in hop_vals.iter().enumerate() {
            let key = format!("hop[{}]", i + 1);
            let mut t = h.as_table().ok_or_else(|| err(&key, "expected a table"))?.clone();
            match t.remove("space") {
                None | Some(toml::Value::Boolean(false)) => {}
                Some(toml::Value::Boolean(true)) if space.is_none() => space = Some(i),
                Some(toml::Value::Boolean(true)) => return Err(err(&format!("{key}.space"), "only one hop can be the space hop")),
                Some(_) => return Err(err(&format!("{key}.space"), "expected true or false")),
            }
            let prof = match t.get("profile") {
                Some(toml::Value::String(p)) => {
                    if t.len() > 1 {
                        return Err(err(&key, "give either profile = \"…\" or inline [link]/[up]/[down] keys, not both"));
                    }
                    let near = if dir.join(p).exists() { dir.join(p).to_string_lossy().to_string() } else { p.clone() };
                    load_profile_near(&dir, &near, &[]).map_err(|source| TopologyError::Profile { file: file.into(), key: format!("{key}.profile"), source })?
                }
                Some(_) => return Err(err(&format!("{key}.profile"), "expected a profile name or file in quotes")),
                None => {
                    let inline = toml::to_string(&t).map_err(|e| err(&key, &e.to_string()))?;
                    let mut load = |p: &str| std::fs::read_to_string(dir.join(p)).map_err(|e| e.to_string());
                    let origin = format!("{file} {key}");
                    let mut p = Profile::parse(&inline, &origin, &[], &mut load).map_err(|e| TopologyError::Profile { file: file.into(), key: key.clone(), source: e.into() })?;
                    p.name = format!("{name}-hop{}", i + 1);
                    p
                }
            };
            hops.push(prof);
        }
        Ok(Topology { name, hosts, hops, space, file: file.into() })
    }
}

/// What each run's lab is: one hop, the `ifc` gateway chain, or a
/// topology file — with the run's profile on the space hop.
#[derive(Clone, Debug)]
pub enum Chain {
    /// client ↔ server over the profile.
    Direct,
    /// client ↔ airgw ↔ groundgw ↔ server; the profile is the space hop.
    Ifc,
    /// A topology file; the profile replaces its space hop.
    File(Topology),
}

impl Chain {
    /// The hosts and hops of a run over `profile`.
    pub fn build(&self, profile: &Profile) -> Topology {
        match self {
            Chain::Direct => Topology::direct(profile.clone()),
            Chain::Ifc => Topology::ifc(profile.clone()),
            Chain::File(t) => t.with_space(profile.clone()).unwrap_or_else(|| t.clone()),
        }
    }

    /// Whether the PEP modes can run on it.
    pub fn has_gateways(&self) -> bool {
        match self {
            Chain::Direct => false,
            Chain::Ifc => true,
            Chain::File(t) => t.has_gateways(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_topology_parses_with_its_space_hop() {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../topologies/ifc-mss.toml");
        let t = Topology::load(file).unwrap();
        assert_eq!(t.hosts, IFC_HOSTS);
        assert_eq!(t.hops.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["cabin-wifi", "mss", "terrestrial"]);
        assert_eq!(t.space, Some(1));
        assert!(t.has_gateways());
        // The same chain as the preset around mss.
        assert_eq!(t.canonical(), Topology::ifc(load_profile("mss", &[]).unwrap()).canonical());
        let da2gc = t.with_space(load_profile("da2gc", &[]).unwrap()).unwrap();
        assert_eq!(da2gc.hops[1].name, "da2gc");
    }

    #[test]
    fn bad_files_name_the_key() {
        let e = |text: &str| Topology::parse(text, "t.toml").unwrap_err().to_string();
        assert_eq!(e("hosts = [\"a\"]\n"), "t.toml: hosts: expected at least two hosts");
        assert!(e("hosts = [\"a\", \"b\"]\n").starts_with("t.toml: hop: expected [[hop]]"));
        assert!(e("hosts = [\"a\", \"b\"]\n[[hop]]\nprofile = \"nope\"\n").starts_with("t.toml: hop[1].profile: nope: no such built-in profile"));
        assert!(e("hosts = [\"a\", \"b\", \"c\"]\n[[hop]]\nprofile = \"mss\"\nspace = true\n[[hop]]\nprofile = \"mss\"\nspace = true\n").contains("hop[2].space: only one"));
        assert!(e("hosts = [\"a\", \"b\"]\n[[hop]]\n[hop.link]\nrate = \"fast\"\n").contains("hop[1]: t.toml hop[1]: link.rate"));
        let inline = Topology::parse("name = \"x\"\nhosts = [\"a\", \"b\"]\n[[hop]]\n[hop.link]\nrate = \"1 Mbit/s\"\n", "t.toml").unwrap();
        assert_eq!(inline.hops[0].name, "x-hop1");
        assert_eq!(inline.space, None);
    }
}
