//! Experiment files: which links, which workloads with which knobs, how
//! many repetitions — expanded into a list of runs in a random (seeded)
//! order, each with a stable key so a store can tell what it already holds.
//!
//! ```toml
//! name = "ifc-web"
//! description = "Seed 000 §6: h1, h2 and h3 page loads on DA2GC and MSS"
//! seed = 1               # link seeds are seed + repetition; also shuffles the order
//! repetitions = 5
//! timeout = "300s"       # per run
//! baseline = "h1"        # the report shows each protocol's ratio to it
//! profiles = ["da2gc", "mss"]     # built-in names or files (relative to this file)
//!
//! [[variant]]            # a derived profile, usable in `profiles`
//! name = "mss-fast"
//! base = "mss"
//! rate = "x2"            # x<factor> or an absolute value; also rtt, loss
//!
//! [[workload]]
//! type = "web"           # web | bulk | objects | messages | realtime | ping | browser | dns (crate::workload's KINDS)
//! protocols = ["h1", "h2", "h3"]
//! pages = ["1x100KB", "10x100KB"]
//! tcp_cc = "cubic"       # knobs (knobs.rs KNOBS): tcp_cc, initcwnd, initrwnd (the client's initial receive window, segments), quic_preset, quic_cc, quic_rate, quic_max_cwnd, quic_pacing_interval, quic_window_growth (quinn, quic-go: which ACKs grow the window), quic_pacing_gain (the pacer's rate in windows per RTT, quinn 1.25), quic_window_unit (bytes per packet of windows given in packets: 1252, quic-go ≤ v0.14 1460), nagle, push (HTTP/2 server push, % of objects), cross (competing traffic: none, tcp-down, tcp-up), cross_flows (its TCP connections, 1–16), cross_lead (how long it runs before the workload, e.g. "30 s"), mss, rcvbuf, quickack, tcp_reordering (adaptive, strict), message_stamp (schedule, send), ipv6 (true: the client reaches the server at its IPv6 address), tcp_timestamps (false: 20 B TCP headers), tcp_sack (false: no selective acknowledgements) (a value or a list to sweep)
//! ```
//!
//! With `topology = "ifc"` every run goes over the gateway chain (client ↔
//! airgw ↔ groundgw ↔ server, each profile being the space hop), and a
//! workload may sweep the PEP: `pep = ["none", "split-tcp", "quic-tunnel",
//! "vpn"]`, with `pep_at`, `pep_cc`, `pep_initcwnd`, `tunnel_cc`,
//! `tunnel_preset`, `tunnel_rate`, `tunnel_max_probe`. `baseline = "pep:none"` compares each
//! series with the same series without a PEP.

use std::time::Duration;

use aerolink_link::profile::Override;
use aerolink_link::Profile;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use sha2::Digest;

mod knobs;
mod variant;
mod workloads;

pub use knobs::{KnobDef, KNOBS};
pub use workloads::{WorkloadKind, KINDS};

use crate::gateways::PepSpec;
use crate::profiles::load_profile_near;
use crate::topology::{Topology, IFC_PRESET};
use crate::workload::table::{de, Dur, KeyErr, Many, Text, Whole};
use crate::workload::{Knobs, Workload};

/// An experiment file that cannot be used: where, which key, what is allowed.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct SpecError {
    pub file: String,
    pub key: String,
    pub message: String,
}

pub use crate::topology::Chain;

/// Every side of every `[[judge]]` mapping must select runs the file
/// plans (its profile, series and params as the store will hold them):
/// a label written otherwise would leave its entry "not run" however many
/// runs are stored. The error names the mapping's key and what is there.
fn selections_have_runs(judges: &[crate::judge::Mapping], profiles: &[Profile], cases: &[Case]) -> Result<(), (String, String)> {
    let mut runs = Vec::new();
    for p in profiles {
        for c in cases {
            let knobs = serde_json::to_string(&c.knobs).expect("knobs serialise");
            runs.push((p.name.clone(), crate::series::Series::decode(&c.workload.protocol(), &knobs).name, c.workload.params_label()));
        }
    }
    let list = |f: fn(&(String, String, String)) -> &String| -> String {
        let set: std::collections::BTreeSet<&String> = runs.iter().map(f).collect();
        set.into_iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ")
    };
    for (i, m) in judges.iter().enumerate() {
        for (j, c) in m.cases.iter().enumerate() {
            for (side, sel) in [("of", Some(&c.of)), ("vs", c.vs.as_ref())] {
                let Some(sel) = sel else { continue };
                let hit = runs.iter().any(|(p, s, pa)| sel.matches_labels(p, s, pa));
                if !hit {
                    let key = if m.cases.len() == 1 { format!("judge[{}].{side}", i + 1) } else { format!("judge[{}].cases[{}].{side}", i + 1, j + 1) };
                    return Err((
                        key,
                        format!("selects {}, which no run of this file is (the mapping of {}); profiles: {}; series: {}; params: {}", sel.text(), m.id, list(|r| &r.0), list(|r| &r.1), list(|r| &r.2)),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Pump CPU per 100 Mbit/s a hop carries, cores, as `aerolink bench
/// emulator` and `bench parallel` measured it on a 2-core virtual machine
/// (0.45 for a saturated 100 Mbit/s link with 50 ms each way, kernel TCP's
/// receive work included; rounded up).
pub const PUMP_CORES_PER_100_MBIT: f64 = 0.5;
/// What an unlimited chain is taken to carry when estimating its cost.
const UNLIMITED_BPS: f64 = 1e9;
/// The share of the machine's cores the pumps of parallel runs may take
/// before their timing degrades (`bench parallel`: beyond about 1.5 of 2
/// cores, departures run milliseconds late).
pub const PUMP_SHARE_OF_CORES: f64 = 0.5;

impl Experiment {
    /// The most CPU one run's pumps can take, cores: every hop of the chain
    /// carries at most the chain's bottleneck rate (either direction).
    pub fn pump_cores_per_run(&self) -> f64 {
        self.profiles
            .iter()
            .map(|p| {
                let (hops, bottleneck) = self.chain_of(p);
                hops as f64 * bottleneck / 1e8 * PUMP_CORES_PER_100_MBIT
            })
            .fold(0.0, f64::max)
    }

    /// The chain over `profile`: its number of hops and its bottleneck rate
    /// (either direction; [`UNLIMITED_BPS`] when nothing limits it).
    fn chain_of(&self, profile: &Profile) -> (usize, f64) {
        let hops = self.chain.build(profile).hops;
        let bottleneck = hops.iter().flat_map(|h| [h.up.capacity_bps(), h.down.capacity_bps()]).flatten().fold(UNLIMITED_BPS, f64::min);
        (hops.len(), bottleneck)
    }

    /// What a run is expected to take, s, to balance shards: set-up, four
    /// round trips, the bytes at the link's bottleneck rate (down, or up
    /// for uploads' sake whichever is lower), and a paced workload's own
    /// duration. A guess for balancing, not a prediction.
    pub fn expected_seconds(&self, run: &PlannedRun) -> f64 {
        let p = &self.profiles[run.profile];
        let w = &self.cases[run.case].workload;
        let (_, bottleneck) = self.chain_of(p);
        0.2 + 4.0 * p.base_rtt().as_secs_f64() + w.expected_bytes() as f64 * 8.0 / bottleneck + w.paced_seconds()
    }

    /// The plan split into `n` shards, balanced by expected run time
    /// (longest first, each to the least loaded shard; ties by run key), so
    /// the same file and `n` give the same shards on any machine.
    pub fn shards(&self, n: usize) -> Vec<Vec<PlannedRun>> {
        let n = n.max(1);
        let plan = self.plan();
        // Within a shard, the plan's own (random, seeded) order.
        let order: std::collections::HashMap<&str, usize> = plan.iter().enumerate().map(|(i, r)| (r.key.as_str(), i)).collect();
        let mut runs: Vec<(f64, &PlannedRun)> = plan.iter().map(|r| (self.expected_seconds(r), r)).collect();
        runs.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.key.cmp(&b.1.key)));
        let mut shards: Vec<(f64, Vec<PlannedRun>)> = vec![(0.0, Vec::new()); n];
        for (t, r) in runs {
            // The least loaded shard; the lowest index on a tie.
            let i = (0..n).min_by(|&a, &b| shards[a].0.total_cmp(&shards[b].0).then(a.cmp(&b))).unwrap_or(0);
            shards[i].0 += t;
            shards[i].1.push(r.clone());
        }
        shards
            .into_iter()
            .map(|(_, mut v)| {
                v.sort_by_key(|r| order[r.key.as_str()]);
                v
            })
            .collect()
    }

    /// How many runs may go at once on `cores` cores without their pumps
    /// taking more than [`PUMP_SHARE_OF_CORES`] of them: at least 1, at
    /// most 2 per core (`bench orchestration`: 4 at once on 2 cores gives
    /// 3.3× the runs per hour; more only queues).
    pub fn safe_parallelism(&self, cores: usize) -> usize {
        let budget = cores as f64 * PUMP_SHARE_OF_CORES;
        let per_run = self.pump_cores_per_run().max(1e-6);
        ((budget / per_run).floor() as usize).clamp(1, 2 * cores.max(1))
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Case {
    pub workload: Workload,
    pub knobs: Knobs,
}

#[derive(Clone, Debug)]
pub struct Experiment {
    pub name: String,
    pub description: String,
    pub file: String,
    pub source: String,
    pub seed: u64,
    pub repetitions: u32,
    pub timeout: Duration,
    pub baseline: Option<String>,
    pub profiles: Vec<Profile>,
    pub cases: Vec<Case>,
    pub chain: Chain,
    /// The seeds' claims this experiment checks (`[[finding]]`).
    /// The catalogue entries this experiment's runs measure (`[[judge]]`).
    pub judges: Vec<crate::judge::Mapping>,
}

#[derive(Clone, Debug)]
pub struct PlannedRun {
    pub key: String,
    pub profile: usize,
    pub case: usize,
    pub rep: u32,
    pub seed: u64,
}

/// An experiment file as written: its keys, typed; the `[[workload]]`
/// tables are read by their `type`'s own table ([`cases`]), the
/// `[[judge]]` entries by [`crate::judge::parse`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Text,
    description: Option<Text>,
    seed: Option<Whole<0, { i64::MAX }>>,
    repetitions: Option<Whole<1, 10_000>>,
    timeout: Option<Dur>,
    baseline: Option<Text>,
    profiles: Option<Many<Text>>,
    topology: Option<Text>,
    #[serde(default)]
    variant: Vec<variant::VariantTable>,
    #[serde(default)]
    workload: Vec<toml::Table>,
    /// Gone: refused with a pointer to the catalogue.
    finding: Option<toml::Value>,
    judge: Option<Vec<toml::Table>>,
}

pub fn run_key(exp: &str, chain: &Chain, profile: &Profile, case: &Case, rep: u32) -> String {
    let mut v = serde_json::json!({
        "experiment": exp, "profile": profile.name, "link": profile.canonical(),
        "workload": case.workload, "knobs": case.knobs, "rep": rep,
    });
    // Direct and ifc runs are told apart by their knobs (`pep`), as they
    // always were; a topology file adds its chain.
    if let Chain::File(t) = chain {
        v["topology"] = t.build_key(profile).into();
    }
    let text = sorted_json(&v);
    let h = sha2::Sha256::digest(text.as_bytes());
    h.iter().take(10).map(|b| format!("{b:02x}")).collect()
}

/// `v` as compact JSON with every object's keys in sorted order, whatever
/// order its maps keep: a run key must not change when a dependency turns
/// on serde_json's `preserve_order` (qlog does), which makes `to_string`
/// write keys in insertion order. Sorted is what `to_string` wrote before,
/// so the keys of stored runs hold.
pub fn sorted_json(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys.iter().map(|k| format!("{}:{}", serde_json::Value::String((*k).clone()), sorted_json(&m[k.as_str()]))).collect();
            format!("{{{}}}", parts.join(","))
        }
        serde_json::Value::Array(a) => format!("[{}]", a.iter().map(sorted_json).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

pub fn profile_hash(p: &Profile) -> String {
    let h = sha2::Sha256::digest(p.canonical().as_bytes());
    h.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

impl Experiment {
    /// Reads and parses an experiment file; profiles and topology files it
    /// names are looked up next to it.
    pub fn load(file: &str) -> Result<Experiment, SpecError> {
        let text = std::fs::read_to_string(file).map_err(|e| SpecError { file: file.to_string(), key: "(file)".into(), message: format!("cannot read: {e}") })?;
        Experiment::parse(&text, file)
    }

    /// Parses an experiment file's text; `file` names it in errors and is
    /// where relative paths start.
    pub fn parse(text: &str, file: &str) -> Result<Experiment, SpecError> {
        let err = |key: &str, m: String| SpecError { file: file.to_string(), key: key.to_string(), message: m };
        let dir = std::path::Path::new(file).parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        let resolve = |name: &str, ov: &[Override]| load_profile_near(&dir, name, ov).map_err(|e| e.to_string());
        let t: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let (at, msg) = aerolink_link::units::toml_syntax(text, &e);
            err(&at, msg)
        })?;
        let f: File = de(t).map_err(|(k, m)| err(&k, m))?;
        let name = f.name.0;
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(err("name", "use letters, digits, - and _".into()));
        }
        let description = f.description.map(|d| d.0).unwrap_or_default();
        let seed = f.seed.map_or(1, |s| s.get());
        let repetitions = f.repetitions.map_or(3, |r| r.get());
        let timeout = f.timeout.map_or(Duration::from_secs(300), |d| Duration::from_nanos(d.0 .0));
        let baseline = f.baseline.map(|b| b.0);
        if f.finding.is_some() {
            return Err(SpecError { file: file.to_string(), key: "finding".into(), message: "[[finding]] with a number and a rule of its own is gone: the studies' results are the catalogue's (findings/); map an entry to these runs with [[judge]] id = \"…\", metric, of, vs (docs/guide.md, \"Findings\")".into() });
        }
        let judges = crate::judge::entries(f.judge.unwrap_or_default()).map_err(|e| SpecError { file: file.to_string(), key: format!("judge[{}].{}", e.index, e.key), message: e.message })?;
        let chain = match f.topology.map(|t| t.0) {
            None => Chain::Direct,
            Some(s) if s == IFC_PRESET && !dir.join(&s).exists() => Chain::Ifc,
            Some(s) => {
                let path = dir.join(s);
                let t = Topology::load(&path.to_string_lossy()).map_err(|e| err("topology", e.to_string()))?;
                Chain::File(t)
            }
        };
        let gateways = chain.has_gateways();
        // Variants first: `profiles` may name them.
        let variants = variant::parse(f.variant, &resolve).map_err(|(k, m)| err(&k, m))?;
        let names: Vec<String> = match (f.profiles, &chain) {
            (Some(_), Chain::File(topo)) if topo.space.is_none() => {
                return Err(err("profiles", format!("{} marks no space hop to put them on: add space = true to one [[hop]], or leave profiles out to run the topology as it is", topo.file)));
            }
            (Some(v), _) => v.0.into_iter().map(|t| t.0).collect(),
            (None, Chain::File(_)) => Vec::new(),
            (None, _) => return Err(err("profiles", "expected a list of profile names or files".into())),
        };
        if names.is_empty() && !matches!(chain, Chain::File(_)) {
            return Err(err("profiles", "expected at least one profile".into()));
        }
        let mut profiles = Vec::new();
        if let (true, Chain::File(topo)) = (names.is_empty(), &chain) {
            // The topology as it is: its own space hop (or first hop) names the runs.
            profiles.push(topo.hops[topo.measured_hop()].clone());
        }
        for n in &names {
            match variants.get(n) {
                Some(p) => profiles.push(p.clone()),
                None => profiles.push(resolve(n, &[]).map_err(|m| err("profiles", m))?),
            }
        }
        let cases = cases(f.workload, gateways).map_err(|(k, m)| err(&k, m))?;
        if cases.is_empty() {
            return Err(err("workload", "no runs: give at least one workload".into()));
        }
        selections_have_runs(&judges, &profiles, &cases).map_err(|(k, m)| err(&k, m))?;
        Ok(Experiment { name, description, file: file.to_string(), source: text.to_string(), seed, repetitions, timeout, baseline, profiles, cases, chain, judges })
    }

    /// Every run, in a random order drawn from the experiment's seed.
    pub fn plan(&self) -> Vec<PlannedRun> {
        let mut v = Vec::new();
        for (pi, p) in self.profiles.iter().enumerate() {
            for (ci, c) in self.cases.iter().enumerate() {
                for rep in 0..self.repetitions {
                    v.push(PlannedRun { key: run_key(&self.name, &self.chain, p, c, rep), profile: pi, case: ci, rep, seed: self.seed + rep as u64 });
                }
            }
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
        v.shuffle(&mut rng);
        v
    }
}

/// Every case of the `[[workload]]` tables: each workload a table sweeps
/// with each combination of the knobs it sweeps.
fn cases(tables: Vec<toml::Table>, gateways: bool) -> Result<Vec<Case>, KeyErr> {
    let mut cases = Vec::new();
    for (i, wt) in tables.into_iter().enumerate() {
        let key = format!("workload[{}]", i + 1);
        let at = |(k, m): KeyErr| (format!("{key}.{k}"), m);
        let kind = workloads::kind_of(&wt).map_err(at)?;
        if !gateways {
            if let Some(k) = knobs::KNOBS.iter().find(|k| k.pep && wt.contains_key(k.key)) {
                return Err((format!("{key}.{}", k.key), "PEP settings need the gateway chain: add topology = \"ifc\" at the top, or a topology file with hosts airgw and groundgw".into()));
            }
        }
        let base = Knobs { pep: gateways.then(PepSpec::default), ..(kind.base_knobs)() };
        let ks = knobs::expand(&wt, base).map_err(at)?;
        // The workload's own keys: not its type, not the knobs.
        let own: toml::Table = wt.into_iter().filter(|(k, _)| k != "type" && !knobs::is_knob(k)).collect();
        let ws = kind.expand(own).map_err(at)?;
        for w in &ws {
            w.validate().map_err(|e| (key.clone(), e.to_string()))?;
            if (w.resolver_aboard() || w.proxy_aboard()) && !gateways {
                let (k, what, or) = if w.resolver_aboard() { ("resolver", "a resolver aboard", ", or resolver = \"ground\"") } else { ("proxy", "the HTTP cache aboard", "") };
                return Err((format!("{key}.{k}"), format!("{what} runs in the aircraft gateway: add topology = \"ifc\" at the top (or a topology file with host airgw){or}")));
            }
            for k in &ks {
                cases.push(Case { workload: w.clone(), knobs: k.clone() });
            }
        }
    }
    Ok(cases)
}

#[cfg(test)]
mod key_tests {
    use super::sorted_json;

    #[test]
    fn keys_hash_the_same_json_whatever_order_the_maps_keep() {
        // Inserted out of order (with serde_json's preserve_order the map
        // keeps this order), nested in an array.
        let mut inner = serde_json::Map::new();
        inner.insert("zeta".into(), 1.into());
        inner.insert("alpha".into(), serde_json::json!([true, null, "x\"y"]));
        let mut outer = serde_json::Map::new();
        outer.insert("rep".into(), 3.into());
        outer.insert("knobs".into(), serde_json::Value::Object(inner));
        let v = serde_json::Value::Object(outer);
        assert_eq!(sorted_json(&v), r#"{"knobs":{"alpha":[true,null,"x\"y"],"zeta":1},"rep":3}"#);
    }
}
