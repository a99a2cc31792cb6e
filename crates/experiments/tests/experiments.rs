//! Experiment files parsed and planned without root: every shipped file,
//! the run keys a result store depends on, topology files, and what a bad
//! file is told.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use aerolink_experiments::experiment::{Chain, Experiment};
use aerolink_pep::cli::PepMode;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn shipped() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("experiments")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    v.sort();
    v
}

#[test]
fn every_shipped_experiment_plans_with_the_run_keys_stores_hold() {
    let files = shipped();
    assert!(files.len() >= 8);
    for f in files {
        let e = Experiment::load(&f.to_string_lossy()).unwrap_or_else(|err| panic!("{err}"));
        let plan = e.plan();
        assert_eq!(plan.len(), e.profiles.len() * e.cases.len() * e.repetitions as usize);
        let keys: BTreeSet<String> = plan.iter().map(|p| p.key.clone()).collect();
        assert_eq!(keys.len(), plan.len(), "{}: two runs share a key", e.name);
        // Keys are what lets `experiment run` resume a store; they must not
        // change when the code does (fixtures written by the version that
        // made today's stores).
        let fixture = root().join(format!("crates/experiments/tests/run_keys/{}.keys", f.file_stem().unwrap().to_string_lossy()));
        // A change that means to start over (a profile corrected) writes
        // them anew with AEROLINK_BLESS=1 and says so in its message.
        if std::env::var("AEROLINK_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(&fixture, keys.iter().map(|k| format!("{k}\n")).collect::<String>()).unwrap();
        }
        let want: BTreeSet<String> = std::fs::read_to_string(&fixture).unwrap_or_else(|e| panic!("{}: {e} (AEROLINK_BLESS=1 writes it)", fixture.display())).lines().map(str::to_string).collect();
        assert_eq!(keys, want, "{}: run keys changed", e.name);
    }
}

/// The guide names every shipped experiment file (the studies' table, or
/// the section that runs it), so a reader finds what each one is for.
#[test]
fn the_guide_names_every_shipped_experiment() {
    let guide = std::fs::read_to_string(root().join("docs/guide.md")).unwrap();
    let missing: Vec<String> = shipped().iter().map(|f| format!("experiments/{}", f.file_name().unwrap().to_string_lossy())).filter(|name| !guide.contains(name.as_str())).collect();
    assert!(missing.is_empty(), "docs/guide.md does not name {missing:?}: add each to the table of experiment files");
}

#[test]
fn the_plan_is_shuffled_by_the_seed_and_nothing_else() {
    let f = root().join("experiments/ifc-web.toml");
    let a = Experiment::load(&f.to_string_lossy()).unwrap().plan();
    let b = Experiment::load(&f.to_string_lossy()).unwrap().plan();
    assert_eq!(a.iter().map(|p| &p.key).collect::<Vec<_>>(), b.iter().map(|p| &p.key).collect::<Vec<_>>());
    let text = std::fs::read_to_string(&f).unwrap().replace("seed = 1", "seed = 2");
    let c = Experiment::parse(&text, &f.to_string_lossy()).unwrap().plan();
    assert_ne!(a.iter().map(|p| &p.key).collect::<Vec<_>>(), c.iter().map(|p| &p.key).collect::<Vec<_>>());
    // Repetition r runs with seed + r.
    assert!(c.iter().all(|p| p.seed == 2 + p.rep as u64));
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().to_string()
}

mod common;

fn scratch(name: &str) -> common::Scratch {
    common::dir(name)
}

#[test]
fn an_experiment_may_name_a_topology_file() {
    let d = scratch("topology");
    write(&d, "chain.toml", "name = \"chain\"\nhosts = [\"client\", \"airgw\", \"groundgw\", \"server\"]\n[[hop]]\nprofile = \"cabin-wifi\"\n[[hop]]\nprofile = \"mss\"\nspace = true\n[[hop]]\nprofile = \"terrestrial\"\n");
    let f = write(&d, "e.toml", "name = \"t\"\ntopology = \"chain.toml\"\nprofiles = [\"mss\", \"da2gc\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x10KB\"]\npep = [\"none\", \"split-tcp\"]\n");
    let e = Experiment::load(&f).unwrap();
    let Chain::File(t) = &e.chain else { panic!("not a topology file") };
    assert_eq!(t.name, "chain");
    assert_eq!(e.cases.len(), 2);
    assert_eq!(e.cases.iter().map(|c| c.knobs.pep.as_ref().unwrap().mode).collect::<Vec<_>>(), [PepMode::None, PepMode::SplitTcp]);
    // Each profile goes on the space hop.
    let built = e.chain.build(&e.profiles[1]);
    assert_eq!(built.hops.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["cabin-wifi", "da2gc", "terrestrial"]);
    assert_eq!(built.measured_hop(), 1);
    // The same chain as the preset, but told apart in the store.
    let ifc = Experiment::parse(&std::fs::read_to_string(&f).unwrap().replace("chain.toml", "ifc"), &f).unwrap();
    assert!(matches!(ifc.chain, Chain::Ifc));
    assert_ne!(ifc.plan()[0].key, e.plan()[0].key);
    // Without `profiles`, the topology runs as it is.
    let f2 = write(&d, "e2.toml", "name = \"t2\"\ntopology = \"chain.toml\"\n[[workload]]\ntype = \"bulk\"\nsizes = [\"100KB\"]\n");
    let e2 = Experiment::load(&f2).unwrap();
    assert_eq!(e2.profiles.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["mss"]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_files_name_the_file_the_key_and_what_is_allowed() {
    let d = scratch("bad");
    let cases: &[(&str, &str)] = &[
        (
            "name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\nprotocols = [\"h4\"]\npages = [\"1x1KB\"]\n",
            "workload[1].protocols: \"h4\": expected one of h1, h1-close, http1, http1-close, h2, h3",
        ),
        ("name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"bulk\"\ndirection = \"sideways\"\nsizes = [\"1MB\"]\n", "workload[1].direction: \"sideways\": expected one of down, up"),
        ("name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\ntcp_cc = \"vegas\"\n", "workload[1].tcp_cc"),
        ("name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"bulk\"\nsizes = [\"1MB\"]\ntcp_reordering = \"lax\"\n", "workload[1].tcp_reordering: \"lax\": expected one of adaptive, strict"),
        (
            "name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"messages\"\nrates = [\"1024 bit/s\"]\nmessage_stamp = [\"send\", \"receive\"]\n",
            "workload[1].message_stamp: \"receive\": expected one of schedule, send",
        ),
        ("name = \"x\"\nprofiles = [\"nope\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\n", "profiles: nope: no such built-in profile or file"),
        ("name = \"x\"\ntopology = \"missing.toml\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\n", "topology: "),
        ("name = \"x\"\ntopology = \"ifc\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\ntunnel_cc = \"rate\"\npep = \"quic-tunnel\"\n", "needs tunnel_rate"),
        ("name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"objects\"\nsets = [\"short\"]\nmodes = [\"both\"]\n", "workload[1].modes: \"both\": expected one of seq, par"),
        (
            "name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"objects\"\nsets = [\"short\"]\nquic_window_growth = \"linux\"\n",
            "workload[1].quic_window_growth: \"linux\": expected one of quinn, quic-go",
        ),
        (
            "name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\ncross = \"tcp-down\"\ncross_flows = 0\n",
            "workload[1].cross_flows: expected TCP connections of the competing traffic from 1 to 16",
        ),
        (
            "name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\ncross = \"tcp-down\"\ncross_lead = \"1 h\"\n",
            "workload[1].cross_lead: \"1 h\": expected how long the competing traffic runs first",
        ),
        (
            "name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"bulk\"\nsizes = [\"1MB\"]\nquic_rate = \"10Mbit/s\"\n",
            "workload[1].quic_rate: the path rate is used by QUIC congestion control \"sat\" only",
        ),
        (
            "name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"bulk\"\nsizes = [\"1MB\"]\nquic_preset = \"sat\"\nquic_rate = \"quick\"\n",
            "workload[1].quic_rate: \"quick\": expected the path's rate",
        ),
        (
            "name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\n[[judge]]\nid = \"000-x\"\nmetric = \"plt\"\nof = { profile = \"mss\" }\n",
            "judge[1].metric: no metric \"plt\": expected one of plt_ms, ttfb_ms,",
        ),
        (
            "name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\n[[judge]]\nid = \"000-x\"\nmetric = \"plt_ms\"\nof = { profil = \"mss\" }\n",
            "judge[1].of.profil: unknown key; allowed: profile, series, params",
        ),
        (
            "name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\n[[judge]]\nid = \"000-x\"\nmetric = \"plt_ms\"\nof = { profile = \"mss\", params = \"1x1 KB\" }\n",
            "judge[1].of: selects profile mss, params 1x1 KB, which no run of this file is (the mapping of 000-x); profiles: \"mss\"; series: \"h2\"; params: \"1x1KB\"",
        ),
        ("name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\nprotocol = \"h1\"\nprotocols = [\"h2\"]\n", "workload[1].protocols: given twice"),
        ("name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\n", "workload[1].pages: missing"),
        ("name = \"x\"\nprofiles = [\"mss\"]\ncolour = \"blue\"\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\n", "colour: unknown key; allowed: name, description, seed,"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let f = write(&d, &format!("bad{i}.toml"), text);
        let e = Experiment::load(&f).unwrap_err().to_string();
        assert!(e.starts_with(&f), "{e}");
        assert!(e.contains(want), "{e}\nwant: {want}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_sat_preset_and_a_path_rate_sweep_as_knobs() {
    let text = "name = \"s\"\nrepetitions = 1\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"bulk\"\ntransports = [\"quic\"]\nsizes = [\"1MB\"]\nquic_preset = \"sat\"\nquic_rate = [\"2Mbit/s\", \"10Mbit/s\"]\n";
    let e = Experiment::parse(text, "s.toml").unwrap_or_else(|e| panic!("{e}"));
    let labels: Vec<String> = e.cases.iter().map(|c| c.knobs.label()).collect();
    assert_eq!(labels, ["sat@2Mbit/s", "sat@10Mbit/s"]);
    assert!(e.cases.iter().all(|c| c.knobs.quic.cc == aerolink_work::quic::QuicCc::Sat && c.knobs.quic.ack_every == Some(10)));
}

/// The window growth rule sweeps on top of the preset (whatever order the
/// keys come in), names its series, and reaches the server's command line.
#[test]
fn the_window_growth_rule_sweeps_on_top_of_a_preset() {
    let text = "name = \"g\"\nrepetitions = 1\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"objects\"\nsets = [\"short\"]\nquic_window_growth = [\"quinn\", \"quic-go\"]\nquic_preset = \"h-bdp1\"\n";
    let e = Experiment::parse(text, "g.toml").unwrap_or_else(|e| panic!("{e}"));
    let labels: Vec<String> = e.cases.iter().map(|c| c.knobs.label()).collect();
    assert_eq!(labels, ["h-bdp1 growth-quinn", "h-bdp1 growth-quic-go"]);
    let server = e.cases[1].knobs.server_args().join(" ");
    assert!(server.contains("--quic-preset h-bdp1") && server.contains("--quic-iw 120") && server.contains("--quic-window-growth quic-go"), "{server}");
}

#[test]
fn the_default_parallelism_follows_what_the_links_cost() {
    let exp = |profiles: &str, topology: &str| {
        let topology = if topology.is_empty() { String::new() } else { format!("topology = \"{topology}\"\n") };
        let text = format!("name = \"p\"\nrepetitions = 1\n{topology}profiles = [{profiles}]\n[[workload]]\ntype = \"bulk\"\nsizes = [\"1MB\"]\n");
        Experiment::parse(&text, "p.toml").unwrap_or_else(|e| panic!("{e}"))
    };
    // Kbit/s and Mbit/s links: pumps cost little, so 2 runs per core.
    assert_eq!(exp("\"mss\", \"da2gc\"", "ifc").safe_parallelism(2), 4);
    assert_eq!(exp("\"iridium-3ch\"", "").safe_parallelism(2), 4);
    // satcom-100 (50 Mbit/s each way) direct: a quarter core a run.
    let satcom = exp("\"satcom-100\"", "");
    assert!((satcom.pump_cores_per_run() - 0.25).abs() < 0.01, "{}", satcom.pump_cores_per_run());
    assert_eq!(satcom.safe_parallelism(2), 4);
    // Through the gateway chain every hop carries it: 0.75 core a run, so
    // one at a time on 2 cores, 5 on 8.
    let chain = exp("\"satcom-100\"", "ifc");
    assert!((chain.pump_cores_per_run() - 0.75).abs() < 0.01, "{}", chain.pump_cores_per_run());
    assert_eq!(chain.safe_parallelism(2), 1);
    assert_eq!(chain.safe_parallelism(8), 5);
    assert_eq!(exp("\"mss\", \"satcom-100\"", "ifc").safe_parallelism(2), 1);
    assert_eq!(exp("\"mss\"", "").safe_parallelism(0), 1);
}

/// A variant of a route profile changes its route key by key: another
/// flight point, another technology; the rest of the route stays.
#[test]
fn a_variant_flies_the_base_route_from_another_point_or_technology() {
    let d = scratch("route-variant");
    write(&d, "lhr-jfk.toml", "name = \"lhr-jfk\"\n[link]\nroute = { from = \"LHR\", to = \"JFK\", tech = \"geo\", time_scale = 2 }\nrate = \"20 Mbit/s\"\n");
    let f = write(
        &d,
        "e.toml",
        "name = \"t\"\nprofiles = [\"lhr-jfk.toml\", \"leo-3h\"]\n[[variant]]\nname = \"leo-3h\"\nbase = \"lhr-jfk.toml\"\nrate = \"100 Mbit/s\"\nroute = { tech = \"leo\", start = \"3 h\" }\n[[workload]]\ntype = \"ping\"\ncount = 2\n",
    );
    let e = Experiment::load(&f).unwrap_or_else(|err| panic!("{err}"));
    let route = |i: usize| e.profiles[i].down.described["route"].clone();
    assert!(route(0).starts_with("LHR→JFK over geo") && route(0).contains("from 0:00:00 at ×2"), "{}", route(0));
    assert!(route(1).starts_with("LHR→JFK over leo") && route(1).contains("from 3:00:00 at ×2"), "{}", route(1));
    let bad = write(&d, "bad.toml", "name = \"t\"\nprofiles = [\"v\"]\n[[variant]]\nname = \"v\"\nbase = \"mss\"\nroute = { start = \"1 h\" }\n[[workload]]\ntype = \"ping\"\n");
    let err = Experiment::load(&bad).expect_err("mss has no route").to_string();
    assert!(err.contains("variant[1].route") && err.contains("no route to change"), "{err}");
}
