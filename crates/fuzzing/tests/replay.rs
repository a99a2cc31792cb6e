//! The fuzz targets on stable Rust, in `make test`: every kept crash input
//! (`fuzz/regressions/TARGET/`) and every seed (`fuzz/corpus/TARGET/`)
//! once, then seeded mutations of the seeds (bit flips, interesting
//! bytes, insertions, deletions, duplicated runs, splices with another
//! seed, truncations), the same inputs on every machine. No input may
//! panic. A failing input is written to `target/fuzz-replay/TARGET-N`
//! with the command that replays it.
//!
//! What libFuzzer adds (`make fuzz`, nightly): coverage guidance, so it
//! finds inputs that reach new branches, and overflow checks (its build
//! has debug assertions; this one is the release build). Seeds it finds
//! are committed to `fuzz/corpus`, so this replay runs them too.
//!
//! `AEROLINK_FUZZ_INPUTS` sets the mutations per target (default 20 000),
//! `AEROLINK_FUZZ_SEED` their seed (default 1).
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dir.canonicalize().unwrap_or(dir)
}

fn env_u64(key: &str, default: u64) -> u64 {
    match std::env::var(key) {
        Ok(v) => v.parse().unwrap_or_else(|_| panic!("{key}={v}: expected a whole number")),
        Err(_) => default,
    }
}

/// The files of one folder, in name order (empty if it is absent).
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
    paths.sort();
    paths.into_iter().map(|p| (p.clone(), std::fs::read(&p).expect("a readable seed"))).collect()
}

/// One input through one target; a panic becomes the input's path.
fn run(name: &str, f: fn(&[u8]), input: &[u8], what: &str) -> Result<(), String> {
    let Err(panic) = catch_unwind(AssertUnwindSafe(|| f(input))) else { return Ok(()) };
    let message = (panic.downcast_ref::<&str>().map(|s| s.to_string())).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
    let dir = root().join("target/fuzz-replay");
    std::fs::create_dir_all(&dir).expect("target/fuzz-replay");
    let n = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    let path = dir.join(format!("{name}-{n}"));
    std::fs::write(&path, input).expect("the failing input written");
    Err(format!("fuzz target {name} panics ({message}) on {what}: input in {} (replay: scripts/fuzz.sh runs:1 {name} with it in fuzz/regressions/{name}/)", path.display()))
}

/// A few random edits of `seed`, some taking bytes from `other`.
fn mutate(rng: &mut ChaCha8Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    const INTERESTING: [u8; 12] = [0, 1, 0x7f, 0x80, 0xff, b'"', b'=', b'\n', b'[', b'{', b'-', b'9'];
    let mut v = seed.to_vec();
    for _ in 0..rng.random_range(1..=8) {
        let len = v.len();
        match rng.random_range(0..7) {
            0 if len > 0 => v[rng.random_range(0..len)] ^= 1 << rng.random_range(0..8),
            1 if len > 0 => v[rng.random_range(0..len)] = INTERESTING[rng.random_range(0..INTERESTING.len())],
            2 => v.insert(rng.random_range(0..=len), rng.random()),
            3 if len > 0 => {
                let at = rng.random_range(0..len);
                let n = rng.random_range(1..=(len - at).min(16));
                v.drain(at..at + n);
            }
            4 if len > 0 => {
                let at = rng.random_range(0..len);
                let n = rng.random_range(1..=(len - at).min(64));
                let run: Vec<u8> = v[at..at + n].to_vec();
                let to = rng.random_range(0..=len);
                v.splice(to..to, run);
            }
            5 if !other.is_empty() => {
                let at = rng.random_range(0..other.len());
                let n = rng.random_range(1..=(other.len() - at).min(64));
                let to = rng.random_range(0..=len);
                v.splice(to..to, other[at..at + n].iter().copied());
            }
            6 if len > 0 => v.truncate(rng.random_range(0..len)),
            _ => {}
        }
    }
    v
}

#[test]
fn every_fuzz_target_survives_its_seeds_kept_crashes_and_their_mutations() {
    let inputs = env_u64("AEROLINK_FUZZ_INPUTS", 20_000);
    let seed = env_u64("AEROLINK_FUZZ_SEED", 1);
    // The panics are reported once, with their input; not each on stderr.
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    for (i, (name, f)) in aerolink_fuzzing::TARGETS.into_iter().enumerate() {
        let kept = files(&root().join("fuzz/regressions").join(name));
        let seeds = files(&root().join("fuzz/corpus").join(name));
        assert!(!seeds.is_empty(), "fuzz/corpus/{name} has no seeds");
        for (path, data) in kept.iter().chain(&seeds) {
            if let Err(e) = run(name, f, data, &path.display().to_string()) {
                failures.push(e);
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_add(i as u64));
        for k in 0..inputs {
            let a = &seeds[rng.random_range(0..seeds.len())].1;
            let b = &seeds[rng.random_range(0..seeds.len())].1;
            let m = mutate(&mut rng, a, b);
            if let Err(e) = run(name, f, &m, &format!("mutation {k} (seed {seed})")) {
                failures.push(e);
                break;
            }
        }
        eprintln!("fuzz {name}: {} kept, {} seeds, {inputs} mutations (seed {seed})", kept.len(), seeds.len());
    }
    let _ = std::panic::take_hook();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
