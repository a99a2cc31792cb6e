//! Golden tables: every built-in profile (and a few synthetic ones that
//! cover each model: traces, Gilbert–Elliott, every jitter law, reordering,
//! outages) driven with one fixed seed and one fixed arrival pattern. The
//! exact departure times and drop decisions are compared with the tables in
//! `tests/golden/`, so a refactor of the stages cannot change what a link
//! does without this test saying so.
//!
//! Each table is driven twice: by a clock that jumps to the exact next
//! event, and by a coarse 1 ms tick (a late driver); logical timestamps make
//! both give the same times.
//!
//! To accept a deliberate change in behaviour, rewrite the tables with
//! `AEROLINK_BLESS=1 cargo test -p aerolink-link --test golden` and explain
//! the diff in the commit.

use std::fmt::Write;

use aerolink_link::profile::Profile;
use aerolink_link::{Instant, Pipeline};

const MS: u64 = 1_000_000;

/// Synthetic profiles that exercise what the built-ins do not.
const SYNTHETIC: &[(&str, &str)] = &[
    (
        "x-gilbert-uniform-reorder",
        "[link]\nrate = \"2 Mbit/s\"\ndelay = \"40 ms\"\njitter = \"uniform 8 ms\"\nreorder = true\nloss = { model = \"gilbert-elliott\", p = \"5%\", r = \"40%\", bad_loss = \"80%\", good_loss = \"1%\" }\n",
    ),
    (
        "x-outages-pareto",
        "[link]\nrate = \"1 Mbit/s\"\ndelay = \"100 ms\"\njitter = { dist = \"pareto\", scale = \"2 ms\", shape = 1.5 }\nqueue = \"40 packets\"\noutages = [{ start = \"2 s\", duration = \"1 s\", mode = \"drop\" }, { start = \"5 s\", duration = \"1500 ms\", every = \"9 s\", mode = \"hold\" }]\n",
    ),
    (
        "x-traces",
        "[link]\nrate = { trace = \"rate.trace\" }\noverhead = \"8 B\"\ndelay = { trace = \"delay.trace\" }\nloss = { trace = \"loss.trace\", window = \"2 s\" }\nqueue = \"12 packets\"\n[down]\nqueue = \"9000 B\"\n",
    ),
    (
        "x-empirical-normal",
        "[up]\ndelay = \"5 ms\"\njitter = { dist = \"empirical\", file = \"jitter.txt\" }\nloss = \"5%\"\n[down]\nrate = \"10 Mbit/s\"\ndelay = \"7 ms\"\njitter = \"normal 3 ms\"\nloss = { model = \"bernoulli\", p = \"2%\" }\n",
    ),
];

fn load(path: &str) -> Result<String, String> {
    match path {
        "rate.trace" => Ok("1\n1\n3\n7\n7\n8\n20\n".into()),
        "delay.trace" => Ok("0 30\n1500 90\n3000 30\n".into()),
        "loss.trace" => Ok("0%\n10%\n40%\n2%\n".into()),
        "jitter.txt" => Ok("0\n0.5\n1\n4\n12\n".into()),
        _ => Err(format!("no file {path}")),
    }
}

/// A fixed arrival pattern: bursts of 1–24 packets of mixed sizes, 0–3 ms
/// apart, with gaps of up to 600 ms, over about 12 s. A small LCG, not
/// `rand`, so the pattern never changes with a dependency.
fn arrivals(salt: u64) -> Vec<(u64, u32)> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D ^ salt;
    let mut next = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as u32
    };
    let mut t = 0u64;
    let mut v = Vec::new();
    while v.len() < 400 {
        let burst = 1 + next() % 24;
        for _ in 0..burst {
            let len = match next() % 4 {
                0 => 40 + next() % 60,
                1 => 576,
                _ => 1500,
            };
            v.push((t, len));
            t += (next() % 3_000) as u64 * 1_000;
        }
        t += (next() % 600) as u64 * MS;
    }
    v
}

/// Drives `p` with `arr`, waking at the exact next event (`tick` = None) or
/// every `tick` ns, and writes one line per departure and drop.
fn drive(p: &mut Pipeline<()>, arr: &[(u64, u32)], tick: Option<u64>, out: &mut String) {
    let mut i = 0;
    let mut now = Instant(0);
    let mut lines: Vec<(u64, String)> = Vec::new();
    loop {
        let next_arrival = arr.get(i).map(|a| Instant(a.0));
        let next = match (next_arrival, p.next_wakeup()) {
            (Some(a), Some(w)) => a.min(w),
            (Some(a), None) => a,
            (None, Some(w)) => w,
            (None, None) => break,
        };
        now = match tick {
            None => next.max(now),
            // The first tick at or after the event.
            Some(t) => Instant(next.0.div_ceil(t) * t).max(now),
        };
        while i < arr.len() && Instant(arr[i].0) <= now {
            // A late driver stamps arrivals late, as the pump would; the
            // exact driver stamps them on time.
            p.enqueue(now, arr[i].1, ());
            i += 1;
        }
        while let Some(pkt) = p.dequeue(now) {
            let m = pkt.meta;
            assert!(m.due <= now, "a packet left before it was due");
            lines.push((m.id, format!("{:>4} depart len {:>4} arrived {} tx {}..{} due {}", m.id, m.len, m.arrived.0, m.tx_start.0, m.tx_end.0, m.due.0)));
        }
        for d in p.take_drops() {
            lines.push((d.meta.id, format!("{:>4} drop {} at {}", d.meta.id, d.reason.as_str(), d.at.0)));
        }
    }
    // By id: the same packets in the same order whatever the driver's rhythm.
    lines.sort_by_key(|l| l.0);
    for (_, l) in lines {
        let _ = writeln!(out, "{l}");
    }
}

fn table(name: &str, prof: &Profile) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {name}: seed 7, 400 packets per direction; see tests/golden.rs");
    for (dir, spec, stream, salt) in [("up", &prof.up, 0, 1), ("down", &prof.down, 1, 2)] {
        let arr = arrivals(salt);
        for (label, tick) in [("exact", None), ("tick 1 ms", Some(MS))] {
            let _ = writeln!(out, "## {dir}, {label}");
            let mut p: Pipeline<()> = Pipeline::new(spec, prof.base_rtt(), 7, stream);
            drive(&mut p, &arr, tick, &mut out);
        }
    }
    out
}

#[test]
fn every_profile_matches_its_golden_table() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var("AEROLINK_BLESS").is_ok_and(|v| v == "1");
    let mut profiles: Vec<(String, Profile)> = Vec::new();
    for (name, text) in aerolink_link::builtin::BUILTIN {
        profiles.push((name.to_string(), Profile::parse(text, name, &[], &mut |p| load(p)).unwrap_or_else(|e| panic!("{e}"))));
    }
    for (name, text) in SYNTHETIC {
        profiles.push((name.to_string(), Profile::parse(text, name, &[], &mut |p| load(p)).unwrap_or_else(|e| panic!("{e}"))));
    }
    let mut failed = Vec::new();
    for (name, prof) in &profiles {
        let got = table(name, prof);
        let path = dir.join(format!("{name}.txt"));
        if bless {
            std::fs::create_dir_all(&dir).expect("create tests/golden");
            std::fs::write(&path, &got).expect("write a golden table");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (AEROLINK_BLESS=1 writes it)", path.display()));
        if got != want {
            let first = got.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(got.lines().count().min(want.lines().count()));
            failed.push(format!("{name}: first difference at line {}:\n  want: {}\n  got:  {}", first + 1, want.lines().nth(first).unwrap_or("(end)"), got.lines().nth(first).unwrap_or("(end)")));
        }
    }
    assert!(failed.is_empty(), "golden tables differ:\n{}", failed.join("\n"));
}
