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
//! type = "web"           # web | bulk | objects | messages | realtime | browser
//! protocols = ["h1", "h2", "h3"]
//! pages = ["1x100KB", "10x100KB"]
//! tcp_cc = "cubic"       # knobs: tcp_cc, initcwnd, quic_preset, quic_cc, quic_rate, quic_max_cwnd, quic_pacing_interval, nagle, push (HTTP/2 server push, % of objects), cross (competing traffic: none, tcp-down, tcp-up) (a value or a list to sweep)
//! ```
//!
//! With `topology = "ifc"` every run goes over the gateway chain (client ↔
//! airgw ↔ groundgw ↔ server, each profile being the space hop), and a
//! workload may sweep the PEP: `pep = ["none", "split-tcp", "quic-tunnel",
//! "vpn"]`, with `pep_at`, `pep_cc`, `pep_initcwnd`, `tunnel_cc`,
//! `tunnel_preset`, `tunnel_rate`, `tunnel_max_probe`. `baseline = "pep:none"` compares each
//! series with the same series without a PEP.

use std::collections::BTreeMap;
use std::time::Duration;

use aerolink_link::profile::Override;
use aerolink_link::profile::{LossSpec, RateSpec};
use aerolink_link::{BaseDelay, Profile};
use aerolink_work::browser::BrowserProtocol;
use aerolink_work::bulk::Direction as BulkDirection;
use aerolink_work::messages::Direction as MessagesDirection;
use aerolink_work::quic::{Preset, QuicCc, QuicKnobs};
use aerolink_work::realtime::{Mechanism, Scenario};
use aerolink_work::sock::TcpCc;
use aerolink_work::web::{ObjectsMode, Protocol};
use aerolink_work::Transport;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::Serialize;
use sha2::Digest;

use crate::gateways::PepSpec;
use crate::profiles::load_profile_near;
use crate::topology::{Topology, IFC_PRESET};
use crate::workload::{Knobs, Workload};

/// An experiment file that cannot be used: where, which key, what is allowed.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct SpecError {
    pub file: String,
    pub key: String,
    pub message: String,
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

const TOP: &[&str] = &["name", "description", "seed", "repetitions", "timeout", "baseline", "profiles", "topology", "variant", "workload", "finding", "judge"];
const KNOB_KEYS: &[&str] = &[
    "tcp_cc",
    "initcwnd",
    "quic_preset",
    "quic_cc",
    "quic_rate",
    "quic_max_cwnd",
    "quic_pacing_interval",
    "nagle",
    "push",
    "mss",
    "rcvbuf",
    "quickack",
    "pep",
    "pep_at",
    "pep_cc",
    "pep_initcwnd",
    "tunnel_cc",
    "tunnel_preset",
    "tunnel_rate",
    "tunnel_max_probe",
    "cross",
];
const PEP_KEYS: &[&str] = &["pep", "pep_at", "pep_cc", "pep_initcwnd", "tunnel_cc", "tunnel_preset", "tunnel_rate", "tunnel_max_probe"];

fn strings(v: &toml::Value) -> Option<Vec<String>> {
    match v {
        toml::Value::String(s) => Some(vec![s.clone()]),
        toml::Value::Array(a) => a.iter().map(|x| x.as_str().map(str::to_string)).collect(),
        _ => None,
    }
}

fn values(v: &toml::Value) -> Vec<toml::Value> {
    match v {
        toml::Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    }
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
    let text = v.to_string();
    let h = sha2::Sha256::digest(text.as_bytes());
    h.iter().take(10).map(|b| format!("{b:02x}")).collect()
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
        for k in t.keys() {
            if !TOP.contains(&k.as_str()) {
                return Err(err(k, format!("unknown key; allowed: {}", TOP.join(", "))));
            }
        }
        let name = t.get("name").and_then(|v| v.as_str()).ok_or_else(|| err("name", "expected a name in quotes".into()))?.to_string();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(err("name", "use letters, digits, - and _".into()));
        }
        let description = t.get("description").and_then(|v| v.as_str()).unwrap_or("").to_string();
        let int = |k: &str, d: i64, lo: i64, hi: i64| -> Result<i64, SpecError> {
            match t.get(k) {
                None => Ok(d),
                Some(toml::Value::Integer(i)) if (lo..=hi).contains(i) => Ok(*i),
                Some(_) => Err(err(k, format!("expected a whole number from {lo} to {hi}"))),
            }
        };
        let seed = int("seed", 1, 0, i64::MAX)? as u64;
        let repetitions = int("repetitions", 3, 1, 10_000)? as u32;
        let timeout = match t.get("timeout") {
            None => Duration::from_secs(300),
            Some(v) => {
                let s = v.as_str().ok_or_else(|| err("timeout", "expected a duration like \"300s\"".into()))?;
                Duration::from_nanos(aerolink_link::units::parse_duration(s).map_err(|m| err("timeout", format!("expected {m}")))?.0)
            }
        };
        let baseline = t.get("baseline").and_then(|v| v.as_str()).map(str::to_string);
        if t.contains_key("finding") {
            return Err(SpecError { file: file.to_string(), key: "finding".into(), message: "[[finding]] with a number and a rule of its own is gone: the studies' results are the catalogue's (findings/); map an entry to these runs with [[judge]] id = \"…\", metric, of, vs (docs/guide.md, \"Findings\")".into() });
        }
        let judges = crate::judge::parse(&t).map_err(|e| SpecError { file: file.to_string(), key: format!("judge[{}].{}", e.index, e.key), message: e.message })?;
        let chain = match t.get("topology") {
            None => Chain::Direct,
            Some(toml::Value::String(s)) if s == IFC_PRESET && !dir.join(s).exists() => Chain::Ifc,
            Some(toml::Value::String(s)) => {
                let path = dir.join(s);
                let t = Topology::load(&path.to_string_lossy()).map_err(|e| err("topology", e.to_string()))?;
                Chain::File(t)
            }
            Some(_) => return Err(err("topology", "expected \"ifc\" (client ↔ airgw ↔ groundgw ↔ server; each profile is the space hop) or a topology file".into())),
        };
        let gateways = chain.has_gateways();
        // Variants first: `profiles` may name them.
        let mut variants: BTreeMap<String, Profile> = BTreeMap::new();
        if let Some(v) = t.get("variant") {
            let arr = v.as_array().ok_or_else(|| err("variant", "expected [[variant]] tables".into()))?;
            for (i, v) in arr.iter().enumerate() {
                let key = format!("variant[{}]", i + 1);
                let vt = v.as_table().ok_or_else(|| err(&key, "expected a table".into()))?;
                for k in vt.keys() {
                    if !["name", "base", "rate", "rtt", "loss"].contains(&k.as_str()) {
                        return Err(err(&format!("{key}.{k}"), "unknown key; allowed: name, base, rate, rtt, loss".into()));
                    }
                }
                let vname = vt.get("name").and_then(|x| x.as_str()).ok_or_else(|| err(&format!("{key}.name"), "expected a name".into()))?;
                let base_name = vt.get("base").and_then(|x| x.as_str()).ok_or_else(|| err(&format!("{key}.base"), "expected a profile name or file".into()))?;
                let base = resolve(base_name, &[]).map_err(|m| err(&format!("{key}.base"), m))?;
                let mut ov = Vec::new();
                for field in ["rate", "rtt", "loss"] {
                    if let Some(x) = vt.get(field) {
                        let s = x.as_str().ok_or_else(|| err(&format!("{key}.{field}"), "expected \"x<factor>\" or a value in quotes".into()))?;
                        ov.extend(variant_overrides(&base, field, s).map_err(|m| err(&format!("{key}.{field}"), m))?);
                    }
                }
                let mut p = resolve(base_name, &ov).map_err(|m| err(&key, m))?;
                p.name = vname.to_string();
                p.description = format!("{} — variant of {base_name}", p.description);
                variants.insert(vname.to_string(), p);
            }
        }
        let names = match (t.get("profiles"), &chain) {
            (Some(v), Chain::File(topo)) if topo.space.is_none() => {
                let _ = v;
                return Err(err("profiles", format!("{} marks no space hop to put them on: add space = true to one [[hop]], or leave profiles out to run the topology as it is", topo.file)));
            }
            (Some(v), _) => strings(v).ok_or_else(|| err("profiles", "expected a list of profile names or files".into()))?,
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
        let wl = t.get("workload").and_then(|v| v.as_array()).ok_or_else(|| err("workload", "expected [[workload]] tables".into()))?;
        let mut cases = Vec::new();
        for (i, w) in wl.iter().enumerate() {
            let key = format!("workload[{}]", i + 1);
            let wt = w.as_table().ok_or_else(|| err(&key, "expected a table".into()))?;
            let ws = expand_workload(wt).map_err(|(k, m)| err(&format!("{key}.{k}"), m))?;
            if !gateways {
                if let Some(k) = PEP_KEYS.iter().find(|k| wt.contains_key(**k)) {
                    return Err(err(&format!("{key}.{k}"), "PEP settings need the gateway chain: add topology = \"ifc\" at the top, or a topology file with hosts airgw and groundgw".into()));
                }
            }
            let ks = expand_knobs(wt, gateways).map_err(|(k, m)| err(&format!("{key}.{k}"), m))?;
            for w in &ws {
                w.validate().map_err(|e| err(&key, e.to_string()))?;
                for k in &ks {
                    cases.push(Case { workload: w.clone(), knobs: k.clone() });
                }
            }
        }
        if cases.is_empty() {
            return Err(err("workload", "no runs: give at least one workload".into()));
        }
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

/// Overrides that scale (`x2`, `x0.5`) or set a base profile's value.
fn variant_overrides(base: &Profile, field: &str, value: &str) -> Result<Vec<Override>, String> {
    let factor = value.strip_prefix('x').or_else(|| value.strip_prefix('×')).map(|f| f.trim().parse::<f64>().map_err(|_| format!("{value:?}: expected x<number>, like x2 or x0.5")));
    let o = |scope: &str, key: &str, v: String| Override { scope: scope.into(), key: key.into(), value: v, flag: format!("variant {field}") };
    let mut out = Vec::new();
    match (field, factor) {
        (_, Some(Err(m))) => return Err(m),
        ("rtt", None) => out.push(o("link", "rtt", value.into())),
        (f, None) => out.push(o("link", f, value.into())),
        (f, Some(Ok(x))) => {
            if !(x > 0.0 && x.is_finite()) {
                return Err("the factor must be positive".into());
            }
            for (scope, d) in [("up", &base.up), ("down", &base.down)] {
                match f {
                    "rate" => match &d.rate {
                        RateSpec::Constant(r) => out.push(o(scope, "rate", format!("{} bit/s", r.bits_per_sec * x))),
                        _ => return Err("only a constant rate can be scaled".into()),
                    },
                    "rtt" => match &d.delay {
                        BaseDelay::Constant(dl) => out.push(o(scope, "delay", format!("{} ns", (dl.0 as f64 * x).round()))),
                        _ => return Err("only a constant delay can be scaled".into()),
                    },
                    "loss" => match &d.loss {
                        LossSpec::None => {}
                        LossSpec::Bernoulli(p) => out.push(o(scope, "loss", format!("{}", (p * x).min(1.0)))),
                        _ => return Err("only Bernoulli loss can be scaled".into()),
                    },
                    _ => return Err(format!("cannot vary {f}")),
                }
            }
        }
    }
    Ok(out)
}

type KeyErr = (String, String);

/// A value of a closed set, or an error naming the key and what is allowed.
fn pick<T: std::str::FromStr<Err = aerolink_work::UnknownChoice>>(key: &str, s: &str) -> Result<T, KeyErr> {
    s.parse().map_err(|e: aerolink_work::UnknownChoice| (key.to_string(), e.to_string()))
}

/// Every value of a key given as text or a list of texts, each parsed.
fn picks<T: std::str::FromStr<Err = aerolink_work::UnknownChoice>>(t: &toml::Table, keys: &[&str], default: Option<Vec<T>>) -> Result<Vec<T>, KeyErr> {
    for k in keys {
        if t.contains_key(*k) {
            return list_of(t, &[k], None)?.iter().map(|s| pick(k, s)).collect();
        }
    }
    default.ok_or_else(|| (keys[0].to_string(), "missing".into()))
}

fn list_of(t: &toml::Table, keys: &[&str], default: Option<Vec<String>>) -> Result<Vec<String>, KeyErr> {
    for k in keys {
        if let Some(v) = t.get(*k) {
            return strings(v).ok_or_else(|| (k.to_string(), "expected text in quotes or a list of them".into()));
        }
    }
    default.ok_or_else(|| (keys[0].to_string(), "missing".into()))
}

fn expand_workload(t: &toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let ty = t.get("type").and_then(|v| v.as_str()).ok_or_else(|| ("type".to_string(), "expected web, bulk, objects, messages, realtime or browser".to_string()))?;
    let allowed: &[&str] = match ty {
        "web" => &["protocol", "protocols", "page", "pages", "depth", "depths"],
        "bulk" => &["transport", "transports", "direction", "directions", "size", "sizes"],
        "objects" => &["protocol", "protocols", "set", "sets", "mode", "modes"],
        "messages" => &["transport", "transports", "direction", "directions", "size", "sizes", "rate", "rates", "duration"],
        "realtime" => &["mechanism", "mechanisms", "scenario", "scenarios", "count", "interval_ms", "size"],
        "browser" => &["protocol", "protocols", "page", "pages", "warm"],
        "ping" => &["count", "interval", "size", "sizes"],
        other => return Err(("type".into(), format!("{other:?}: expected web, bulk, objects, messages, realtime, ping or browser"))),
    };
    for k in t.keys() {
        if k != "type" && !allowed.contains(&k.as_str()) && !KNOB_KEYS.contains(&k.as_str()) {
            return Err((k.clone(), format!("unknown key for a {ty} workload; allowed: {}, {}", allowed.join(", "), KNOB_KEYS.join(", "))));
        }
    }
    let ints = |keys: &[&str], d: i64| -> Result<Vec<i64>, KeyErr> {
        for k in keys {
            if let Some(v) = t.get(*k) {
                return values(v).iter().map(|x| x.as_integer().ok_or_else(|| (k.to_string(), "expected whole numbers".to_string()))).collect();
            }
        }
        Ok(vec![d])
    };
    let mut out = Vec::new();
    match ty {
        "web" => {
            for protocol in picks(t, &["protocols", "protocol"], Some(vec![Protocol::H2]))? {
                for page in list_of(t, &["pages", "page"], None)? {
                    for depth in ints(&["depths", "depth"], 1)? {
                        out.push(Workload::Web { protocol, page: page.clone(), depth: depth.clamp(0, 100) as u32 });
                    }
                }
            }
        }
        "bulk" => {
            for transport in picks(t, &["transports", "transport"], Some(vec![Transport::Tcp]))? {
                for direction in picks(t, &["directions", "direction"], Some(vec![BulkDirection::Down]))? {
                    for size in list_of(t, &["sizes", "size"], None)? {
                        let bytes = aerolink_work::page::parse_bytes(&size).ok_or_else(|| ("sizes".to_string(), format!("{size:?}: expected a size like 1MB")))?;
                        out.push(Workload::Bulk { transport, direction, bytes });
                    }
                }
            }
        }
        "objects" => {
            for protocol in picks(t, &["protocols", "protocol"], Some(vec![Protocol::H3]))? {
                for set in list_of(t, &["sets", "set"], None)? {
                    for mode in picks(t, &["modes", "mode"], Some(vec![ObjectsMode::Seq]))? {
                        out.push(Workload::Objects { protocol, set: set.clone(), parallel: mode == ObjectsMode::Par });
                    }
                }
            }
        }
        "browser" => {
            let warm = match t.get("warm") {
                None => false,
                Some(toml::Value::Boolean(b)) => *b,
                Some(_) => return Err(("warm".into(), "expected true or false".into())),
            };
            for protocol in picks(t, &["protocols", "protocol"], Some(vec![BrowserProtocol::H2]))? {
                for page in list_of(t, &["pages", "page"], None)? {
                    out.push(Workload::Browser { protocol, page: page.clone(), warm, har: None, screenshot: None });
                }
            }
        }
        "realtime" => {
            let int = |k: &str, d: i64| -> Result<i64, KeyErr> {
                match t.get(k) {
                    None => Ok(d),
                    Some(toml::Value::Integer(i)) if *i > 0 => Ok(*i),
                    _ => Err((k.to_string(), "expected a positive whole number".to_string())),
                }
            };
            let (count, interval_ms, size) = (int("count", 100)?, int("interval_ms", 200)?, int("size", 64)?);
            for mechanism in picks(t, &["mechanisms", "mechanism"], Some(Mechanism::ALL.to_vec()))? {
                for scenario in picks(t, &["scenarios", "scenario"], Some(Scenario::ALL.to_vec()))? {
                    out.push(Workload::Realtime { mechanism, scenario, count: count as u32, interval_ms: interval_ms as u64, size: size as u32 });
                }
            }
        }
        "ping" => {
            let count = match t.get("count") {
                None => 100,
                Some(toml::Value::Integer(i)) if *i > 0 => *i,
                _ => return Err(("count".into(), "expected a positive whole number".into())),
            };
            let interval_ms = match t.get("interval") {
                None => 1000,
                Some(v) => aerolink_link::units::parse_duration(v.as_str().unwrap_or("")).map_err(|m| ("interval".to_string(), format!("expected {m}")))?.as_millis_f64().round() as u64,
            };
            for size in ints(&["sizes", "size"], 56)? {
                out.push(Workload::Ping { count: count.clamp(0, u32::MAX as i64) as u32, interval_ms, size: size.clamp(0, u32::MAX as i64) as u32 });
            }
        }
        _ => {
            let duration = match t.get("duration") {
                None => 60.0,
                Some(v) => aerolink_link::units::parse_duration(v.as_str().unwrap_or("")).map_err(|m| ("duration".to_string(), format!("expected {m}")))?.as_secs_f64(),
            };
            for transport in picks(t, &["transports", "transport"], Some(vec![Transport::Tcp]))? {
                for direction in picks(t, &["directions", "direction"], Some(vec![MessagesDirection::Up]))? {
                    for size in ints(&["sizes", "size"], 64)? {
                        for rate in list_of(t, &["rates", "rate"], None)? {
                            let r = aerolink_link::units::parse_rate(&rate).map_err(|m| ("rates".to_string(), format!("{rate:?}: expected {m}")))?;
                            out.push(Workload::Messages { transport, direction, size: size.clamp(0, u32::MAX as i64) as u32, rate_bps: r.bits_per_sec, duration_s: duration });
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Sets one PEP key, or says what the key allows.
fn set_pep(p: &mut PepSpec, key: &str, v: &toml::Value) -> Result<(), KeyErr> {
    let text = || v.as_str().ok_or_else(|| (key.to_string(), format!("{v}: expected text in quotes, or a list")));
    let err = |m: String| (key.to_string(), format!("{v}: {m}"));
    match key {
        "pep" => p.mode = pick(key, text()?)?,
        "pep_at" => p.at = pick(key, text()?)?,
        "pep_cc" => p.tcp_cc = pick(key, text()?)?,
        "pep_initcwnd" => p.initcwnd = Some(v.as_integer().and_then(|i| u32::try_from(i).ok()).filter(|n| (1..=1000).contains(n)).ok_or_else(|| err("expected segments from 1 to 1000".into()))?),
        "tunnel_cc" => p.tunnel_cc = pick(key, text()?)?,
        "tunnel_preset" => p.tunnel_preset = pick(key, text()?)?,
        "tunnel_rate" => p.tunnel_rate = Some(text()?.parse().map_err(err)?),
        "tunnel_max_probe" => p.tunnel_max_probe = text()?.parse().map_err(err)?,
        _ => return Err((key.to_string(), "not a PEP setting".into())),
    }
    Ok(())
}

/// Every combination of `out` with each of `xs`: for each knob set so far,
/// one copy per value (in order), changed by `set`.
fn sweep<T>(out: Vec<Knobs>, xs: &[T], set: impl Fn(&mut Knobs, &T) -> Result<(), KeyErr>) -> Result<Vec<Knobs>, KeyErr> {
    let mut next = Vec::with_capacity(out.len() * xs.len());
    for k in &out {
        for x in xs {
            let mut k = k.clone();
            set(&mut k, x)?;
            next.push(k);
        }
    }
    Ok(next)
}

fn expand_knobs(t: &toml::Table, gateways: bool) -> Result<Vec<Knobs>, KeyErr> {
    // Real-time web keeps Nagle's algorithm on unless told otherwise, as in
    // seed 001's study.
    let realtime = t.get("type").and_then(|v| v.as_str()) == Some("realtime");
    let mut out = vec![Knobs { nagle: realtime, pep: gateways.then(PepSpec::default), ..Knobs::default() }];
    let err = |key: &str, m: String| (key.to_string(), m);
    // PEP settings: each a value or a list to sweep.
    for key in PEP_KEYS {
        if let Some(v) = t.get(*key) {
            out = sweep(out, &values(v), |k, x| {
                let mut p = k.pep.clone().unwrap_or_default();
                set_pep(&mut p, key, x)?;
                k.pep = Some(p);
                Ok(())
            })?;
        }
    }
    // Checked once every PEP key is in (tunnel_cc = "rate" needs tunnel_rate).
    for k in &out {
        if let Some(p) = &k.pep {
            let key = if t.contains_key("tunnel_cc") { "tunnel_cc" } else { "pep" };
            p.validate().map_err(|e| err(key, e.to_string()))?;
        }
    }
    if let Some(v) = t.get("tcp_cc") {
        let ccs: Vec<TcpCc> = picks(t, &["tcp_cc"], None).map_err(|_| err("tcp_cc", format!("{v}: expected one of {}", TcpCc::allowed())))?;
        out = sweep(out, &ccs, |k, c| {
            k.tcp_cc = *c;
            Ok(())
        })?;
    }
    if let Some(v) = t.get("initcwnd") {
        let ns: Vec<u32> = values(v)
            .iter()
            .map(|x| x.as_integer().filter(|i| (1..=1000).contains(i)).map(|i| i as u32))
            .collect::<Option<_>>()
            .ok_or_else(|| err("initcwnd", "expected segments from 1 to 1000".into()))?;
        out = sweep(out, &ns, |k, n| {
            k.initcwnd = Some(*n);
            Ok(())
        })?;
    }
    if let Some(v) = t.get("quic_preset") {
        let ps: Vec<Preset> = picks(t, &["quic_preset"], None).map_err(|_| err("quic_preset", format!("{v}: expected one of {}", Preset::allowed())))?;
        out = sweep(out, &ps, |k, p| {
            k.quic = QuicKnobs::preset(*p);
            Ok(())
        })?;
    }
    if let Some(v) = t.get("quic_cc") {
        let ccs: Vec<QuicCc> = picks(t, &["quic_cc"], None).map_err(|_| err("quic_cc", format!("{v}: expected one of {}", QuicCc::allowed())))?;
        out = sweep(out, &ccs, |k, c| {
            k.quic.cc = *c;
            Ok(())
        })?;
    }
    if let Some(v) = t.get("quic_rate") {
        let rates: Vec<u64> = values(v)
            .iter()
            .map(|x| x.as_str().and_then(|s| aerolink_work::quic::parse_rate_bps(s).ok()))
            .collect::<Option<_>>()
            .ok_or_else(|| err("quic_rate", format!("{v}: expected the path's rate, like \"10Mbit/s\" (with quic_cc or quic_preset \"sat\")")))?;
        out = sweep(out, &rates, |k, r| {
            k.quic.rate_bps = Some(*r);
            Ok(())
        })?;
        if let Some(k) = out.iter().find(|k| k.quic.cc != QuicCc::Sat) {
            return Err(err("quic_rate", format!("the path rate is used by QUIC congestion control \"sat\" only, not \"{}\" (quic_preset = \"sat\" sets it)", k.quic.cc)));
        }
    }
    if let Some(v) = t.get("quic_max_cwnd") {
        let ns: Vec<u64> = values(v)
            .iter()
            .map(|x| x.as_integer().filter(|i| (1..=10_000_000).contains(i)).map(|i| i as u64))
            .collect::<Option<_>>()
            .ok_or_else(|| err("quic_max_cwnd", "expected packets from 1 to 10000000".into()))?;
        out = sweep(out, &ns, |k, n| {
            k.quic.max_cwnd_packets = Some(*n);
            Ok(())
        })?;
    }
    if let Some(v) = t.get("quic_pacing_interval") {
        let us: Vec<u64> = values(v)
            .iter()
            .map(|x| x.as_str().and_then(|s| aerolink_work::quic::parse_pacing_us(s).ok()))
            .collect::<Option<_>>()
            .ok_or_else(|| err("quic_pacing_interval", format!("{v}: expected a burst interval from \"10us\" to \"100ms\", like \"1.01ms\"")))?;
        out = sweep(out, &us, |k, n| {
            k.quic.pacing_interval_us = Some(*n);
            Ok(())
        })?;
    }
    if let Some(v) = t.get("cross") {
        let cs: Vec<crate::workload::Cross> = picks(t, &["cross"], None).map_err(|_| err("cross", format!("{v}: expected one of {}", crate::workload::Cross::allowed())))?;
        out = sweep(out, &cs, |k, c| {
            k.cross = (*c != crate::workload::Cross::None).then_some(*c);
            Ok(())
        })?;
    }
    for (key, lo, hi) in [("mss", 88, 65_535), ("rcvbuf", 1_024, 1 << 30)] {
        if let Some(v) = t.get(key) {
            let ns: Vec<u32> = values(v)
                .iter()
                .map(|x| x.as_integer().filter(|i| (lo..=hi).contains(i)).map(|i| i as u32))
                .collect::<Option<_>>()
                .ok_or_else(|| err(key, format!("expected bytes from {lo} to {hi}")))?;
            out = sweep(out, &ns, |k, n| {
                if key == "mss" {
                    k.tcp.mss = Some(*n);
                } else {
                    k.tcp.rcvbuf = Some(*n);
                }
                Ok(())
            })?;
        }
    }
    if let Some(v) = t.get("quickack") {
        let bs: Vec<bool> = values(v).iter().map(|x| x.as_bool()).collect::<Option<_>>().ok_or_else(|| err("quickack", "expected true or false".into()))?;
        out = sweep(out, &bs, |k, b| {
            k.tcp.quickack = *b;
            Ok(())
        })?;
    }
    if let Some(v) = t.get("nagle") {
        let bs: Vec<bool> = values(v).iter().map(|x| x.as_bool()).collect::<Option<_>>().ok_or_else(|| err("nagle", "expected true or false".into()))?;
        out = sweep(out, &bs, |k, b| {
            k.nagle = *b;
            Ok(())
        })?;
    }
    if let Some(v) = t.get("push") {
        let ps: Vec<u8> = values(v)
            .iter()
            .map(|x| x.as_integer().filter(|i| (0..=100).contains(i)).map(|i| i as u8))
            .collect::<Option<_>>()
            .ok_or_else(|| err("push", "expected a share of a page's objects in % from 0 to 100".into()))?;
        out = sweep(out, &ps, |k, p| {
            k.push = *p;
            Ok(())
        })?;
    }
    Ok(out)
}
