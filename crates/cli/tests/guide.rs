//! Every example in docs/guide.md runs as written, in the order the guide
//! gives them, in three parts (see [`Part`]; `make test` runs them side by
//! side), each in one scratch directory (so `mss.log` made by one example
//! is there for `aerolink stats mss.log` in a later one), with the built
//! `aerolink` first on PATH. A transcript (`$ command` then its output)
//! runs its commands and compares what they print; `$ cat FILE` followed by
//! text makes FILE.
//!
//! A few lines cannot run here as written: they are listed in
//! [`NOT_AS_WRITTEN`] with the reason, and either left out or replaced by
//! a stand-in that makes what later examples need (a two-run experiment
//! for a nine-minute one). A line of the guide that is neither run nor
//! listed fails the test, and so does a listed line the guide no longer
//! has.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What happens to a line of the guide that cannot run here as written.
enum Instead {
    /// Left out, for this reason.
    Skip(&'static str),
    /// Replaced by this command, for this reason.
    StandIn(&'static str, &'static str),
}
use Instead::*;

/// Lines of the guide (matched by how they start) not run as written.
const NOT_AS_WRITTEN: &[(&str, Instead)] = &[
    ("aerolink probe serve ", Skip("a reflector that runs until stopped (crates/cli/tests/flight.rs runs it in a lab)")),
    ("aerolink probe run --target ground.example.net", StandIn(FLIGHT, "a real flight's path leaves this machine, and tests send nothing off the host: the agent measures an emulated MSS flight for 20 s instead, which the analyze and fit examples then read as written")),
    ("aerolink run --profile flight-0412.toml", StandIn(REPLAY, "the replay of the 20-s flight, for 20 s rather than 20 minutes")),
    ("aerolink bench sat-targets", Skip("a benchmark of about 25 minutes (`make bench` territory, not a test)")),
    ("aerolink experiment run experiments/ifc-web.toml --parallel 4 --db results.db", StandIn("aerolink experiment run small.toml --parallel 2 --db results.db", "ifc-web takes nine minutes (`make run` runs it); a four-run experiment makes the store the next examples read")),
    ("aerolink experiment run experiments/ifc-web.toml --shard 2/4", StandIn("aerolink experiment run small.toml --shard 2/4 --db shard-2.db", "the same shard of the four-run stand-in")),
    ("aerolink experiment slurm ", Skip("writes to /shared for a partition `lab` this machine has not; crates/cli/tests/cluster.rs runs a campaign on a one-node Slurm")),
    ("/shared/ifc-web/submit.sh", Skip("see `experiment slurm` above")),
    ("squeue ", Skip("see `experiment slurm` above")),
    ("kubectl ", Skip("no Kubernetes cluster here; the line above writes the manifests, and crates/cli/src/cluster.rs's tests read them back through the Kubernetes API types")),
    ("aerolink experiment check --db results/ifc-web.db", StandIn("aerolink experiment check --db results.db --markdown reproductions.md", "the stores of real campaigns are not here: the whole catalogue judged by the stand-in's store, its page written")),
    ("aerolink report --compare before.db after.db", StandIn("cp results.db before.db && cp results.db after.db && aerolink report --compare before.db after.db -o compare.html", "two stores of the same experiment: here the stand-in's, twice")),
    ("aerolink exec lab airgw -- aerolink pep quic-tunnel air", Skip("the air gateway runs until stopped (crates/cli/tests/pep.rs runs the pair with traffic through it)")),
    ("aerolink experiment run experiments/pep-web.toml", Skip("an experiment of minutes; crates/cli/tests/pep.rs tests each PEP in a lab")),
    ("aerolink experiment run experiments/pep-bulk.toml", Skip("an experiment of minutes")),
    ("aerolink report --experiment pep-web", Skip("needs the pep-web runs above")),
    ("aerolink experiment run experiments/pep-outage.toml", Skip("an experiment of minutes; crates/cli/tests/pep.rs rides the tunnel through a 30 s outage")),
    ("aerolink down --all", Skip("it takes down every lab `up` made, also those of tests running beside this one (make test runs lanes side by side); crates/cli/tests/lifecycle.rs runs it alone")),
    ("make bench", Skip("the benchmarks: minutes of measurement, not a test")),
    ("aerolink bench orchestration", Skip("a benchmark of minutes")),
];

/// The agent's schedule in the stand-in flight and its replay: probes
/// four times a second, a packet train every 10 s, nothing else.
macro_rules! quick_agent {
    ($out:literal) => {
        concat!(
            "aerolink probe run --target $AEROLINK_SERVER --same-clock --out ",
            $out,
            " --duration 20s --udp-every 250ms --rate-every 10s --ping-every 0 --trace-every 0 --dns-every 0 --web-every 0 --bulk-every 0"
        )
    };
}
const FLIGHT: &str = concat!("aerolink run --profile mss --server 'aerolink probe serve' --client '", quick_agent!("flight-0412"), "'");
const REPLAY: &str = concat!("aerolink run --profile flight-0412.toml --server 'aerolink probe serve' --client '", quick_agent!("replay"), "'");

/// The stand-in experiment: four quick web loads (two shards' worth each
/// of two protocols), on a fast link.
const SMALL: &str = r#"
name = "guide-small"
seed = 1
repetitions = 2
timeout = "60s"
profiles = ["fast"]
[[variant]]
name = "fast"
base = "mss"
rate = "20Mbit/s"
rtt = "40ms"
loss = "0%"
[[workload]]
type = "web"
protocols = ["h1", "h2"]
pages = ["4x10KB"]
"#;

/// One line of a shell block: the command (continuations joined as the
/// shell joins them), where it is, and for a transcript what it prints.
struct Line {
    at: usize,
    cmd: String,
    output: Vec<String>,
}

/// An `sh` block: its lines, and the chapter (`## `) and section (`### `)
/// headings it sits under.
struct Block {
    chapter: String,
    section: String,
    lines: Vec<Line>,
}

/// The guide in parts that run side by side, each in a scratch directory
/// of its own (`make test` gives each its own lane): chapter 5's examples
/// take two thirds of the guide's time (benchmarks of real stacks over
/// slow links), so it is two parts; the rest of the guide is the third.
/// Examples read only files made in their own part.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Part {
    /// Chapter 5 up to the browser: `bench` of every workload.
    Workloads,
    /// Chapter 5 from the browser on: Chromium, record and replay, QUIC.
    BrowserAndQuic,
    /// Every other chapter.
    Rest,
}

fn part_of(b: &Block) -> Part {
    if !b.chapter.starts_with("5.") {
        Part::Rest
    } else if b.section.is_empty() {
        Part::Workloads
    } else {
        Part::BrowserAndQuic
    }
}

/// The `sh` blocks of a Markdown text.
fn blocks(md: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut cur: Option<Vec<Line>> = None;
    let mut pending: Option<(usize, String)> = None;
    let mut transcript = false;
    let (mut chapter, mut section) = (String::new(), String::new());
    for (i, raw) in md.lines().enumerate() {
        let t = raw.trim_end();
        if t.trim_start().starts_with("```") {
            match cur.take() {
                Some(lines) => out.push(Block { chapter: chapter.clone(), section: section.clone(), lines }),
                None if t.trim() == "```sh" => {
                    cur = Some(Vec::new());
                    transcript = false;
                }
                None => {}
            }
            continue;
        }
        if cur.is_none() {
            if let Some(h) = t.strip_prefix("## ") {
                (chapter, section) = (h.to_string(), String::new());
            } else if let Some(h) = t.strip_prefix("### ") {
                section = h.to_string();
            }
        }
        let Some(b) = cur.as_mut() else { continue };
        if let Some((at, mut acc)) = pending.take() {
            acc.push('\n');
            acc.push_str(t);
            if t.ends_with('\\') || open_quote(&acc) {
                pending = Some((at, acc));
            } else {
                b.push(Line { at, cmd: acc, output: Vec::new() });
            }
            continue;
        }
        let (is_cmd, text) = match t.strip_prefix("$ ") {
            Some(c) => {
                transcript = true;
                (true, c)
            }
            None => (!transcript, t),
        };
        if !is_cmd {
            if let Some(last) = b.last_mut() {
                last.output.push(t.to_string());
            }
            continue;
        }
        if text.trim().is_empty() || text.trim_start().starts_with('#') {
            continue;
        }
        if text.ends_with('\\') || open_quote(text) {
            pending = Some((i + 1, text.to_string()));
        } else {
            b.push(Line { at: i + 1, cmd: text.to_string(), output: Vec::new() });
        }
    }
    out
}

/// Whether a quote opened in `s` is still open at its end (the shell reads
/// on to the next line).
fn open_quote(s: &str) -> bool {
    let mut q: Option<char> = None;
    let mut prev = ' ';
    for c in s.chars() {
        match (q, c) {
            // A comment: its apostrophes quote nothing.
            (None, '#') if prev.is_whitespace() => return false,
            (None, '\'' | '"') => q = Some(c),
            (Some(o), c) if c == o => q = None,
            _ => {}
        }
        prev = c;
    }
    q.is_some()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `cmd` with bash in `dir`, `aerolink` first on PATH; its status,
/// output, and how long it took. Killed (its whole group) after `limit`.
fn sh(dir: &Path, cmd: &str, limit: Duration) -> (bool, String, String, Duration) {
    use std::os::unix::process::CommandExt;
    let bin_dir = Path::new(bin()).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let (out, err) = (dir.join(".stdout"), dir.join(".stderr"));
    let t0 = Instant::now();
    let mut child = Command::new("bash")
        .args(["-o", "pipefail", "-c", cmd])
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let ok = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.success();
        }
        if t0.elapsed() > limit {
            // SAFETY: signalling the process group the child leads.
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGTERM);
            }
            let _ = child.wait();
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (ok, std::fs::read_to_string(out).unwrap_or_default(), std::fs::read_to_string(err).unwrap_or_default(), t0.elapsed())
}

#[test]
fn the_guide_s_workload_examples_run_as_written() {
    run_part(Part::Workloads, 7);
}

#[test]
fn the_guide_s_browser_and_quic_examples_run_as_written() {
    run_part(Part::BrowserAndQuic, 8);
}

#[test]
fn the_guide_s_other_examples_run_as_written() {
    run_part(Part::Rest, 40);
}

/// Every line listed as not run as written is still in the guide (a
/// stale entry would hide nothing, but says something untrue).
#[test]
fn every_line_not_run_as_written_is_in_the_guide() {
    let guide = std::fs::read_to_string(repo().join("docs/guide.md")).unwrap();
    let lines: Vec<String> = blocks(&guide).iter().flat_map(|b| b.lines.iter().map(|l| l.cmd.replace("\\\n", " ").trim_start().to_string())).collect();
    let stale: Vec<&str> = NOT_AS_WRITTEN.iter().map(|(s, _)| *s).filter(|s| !lines.iter().any(|l| l.starts_with(s))).collect();
    assert!(stale.is_empty(), "listed as not run as written, but no longer in the guide: {stale:?}");
}

/// Runs the examples of one part of the guide, in order, in a scratch
/// directory of its own; at least `at_least` lines must run.
fn run_part(part: Part, at_least: usize) {
    require_root();
    let guide = std::fs::read_to_string(repo().join("docs/guide.md")).unwrap();
    let d = tempdir(&format!("guide-{part:?}"));
    for sub in ["experiments", "topologies", "findings"] {
        std::os::unix::fs::symlink(repo().join(sub).canonicalize().unwrap(), d.join(sub)).unwrap();
    }
    std::fs::write(d.join("small.toml"), SMALL).unwrap();
    let (mut ran, mut left_out) = (0, 0);
    let mut failures = Vec::new();
    for block in blocks(&guide).into_iter().filter(|b| part_of(b) == part) {
        let block = block.lines;
        for line in &block {
            let one_line = line.cmd.replace("\\\n", " ");
            let here = format!("docs/guide.md:{}", line.at);
            let cmd = match NOT_AS_WRITTEN.iter().position(|(start, _)| one_line.trim_start().starts_with(start)) {
                Some(i) => match &NOT_AS_WRITTEN[i].1 {
                    Skip(why) => {
                        eprintln!("{here}: not run ({why}): {one_line}");
                        left_out += 1;
                        continue;
                    }
                    StandIn(with, why) => {
                        eprintln!("{here}: stand-in ({why}): {with}");
                        with.to_string()
                    }
                },
                None => line.cmd.clone(),
            };
            // `$ cat FILE` in a transcript: the text after it is the file.
            if let Some(file) = cmd.strip_prefix("cat ").filter(|_| !line.output.is_empty()) {
                std::fs::write(d.join(file.trim()), line.output.join("\n") + "\n").unwrap();
                continue;
            }
            let (ok, out, err, took) = sh(&d, &cmd, Duration::from_secs(300));
            eprintln!("{here}: {} in {:.1} s: {one_line}", if ok { "ok" } else { "FAILED" }, took.as_secs_f64());
            ran += 1;
            if !ok {
                // The last lines of stderr: a run's own error comes before
                // its links' statistics.
                let lines: Vec<&str> = err.trim().lines().collect();
                let tail = if lines.is_empty() { "(nothing on stderr)".to_string() } else { lines[lines.len().saturating_sub(6)..].join(" ⏎ ") };
                failures.push(format!("{here}: `{one_line}` failed: {tail}"));
            } else if !line.output.is_empty() {
                let got: Vec<&str> = out.lines().collect();
                if got != line.output.iter().map(String::as_str).collect::<Vec<_>>() {
                    failures.push(format!("{here}: `{one_line}` printed {got:?}, the guide shows {:?}", line.output));
                }
            }
        }
        // A block leaves no namespace that no running aerolink owns (labs
        // of `up` have their holder; runs of other tests on this machine,
        // side by side with this one, are theirs). Then the labs the block
        // brought up go, by name (a backgrounded gateway with its lab) —
        // not `down --all`, which would take down other tests' labs.
        let left = aerolink_net::lab::orphan_namespaces();
        if !left.is_empty() {
            failures.push(format!("namespaces left by the block ending at line {}: {left:?}", block.last().map_or(0, |l| l.at)));
        }
        for name in block.iter().filter_map(|l| l.cmd.strip_prefix("aerolink up ")).filter_map(|rest| rest.split_whitespace().next()) {
            let _ = Command::new(bin()).args(["down", name]).stdout(Stdio::null()).stderr(Stdio::null()).status();
        }
    }
    if part == Part::Rest {
        let _ = std::fs::remove_file("/tmp/psk");
    }
    assert!(failures.is_empty(), "{} of {ran} examples failed:\n{}", failures.len(), failures.join("\n"));
    assert!(ran >= at_least, "only {ran} example lines ran ({left_out} left out)");
    eprintln!("{ran} example lines ran, {left_out} left out with their reason");
}

#[test]
fn the_block_reader_reads_what_a_reader_would_type() {
    let md = "## 5. W\n### B\nx\n```sh\naerolink run --rate 2Mbit/s \\\n  --client 'ping'   # note\n# a comment\nls\nsqlite3 r.db \"SELECT 1\n  FROM t\"\n```\n```sh\n$ cat a.toml\n[up]\nrate = 1\n$ aerolink run -q\nup_bps 1\n```\n```toml\nnot = 1\n```\n";
    let b = blocks(md);
    assert_eq!(b.len(), 2);
    assert_eq!((b[0].chapter.as_str(), b[0].section.as_str(), part_of(&b[0])), ("5. W", "B", Part::BrowserAndQuic));
    let b: Vec<Vec<Line>> = b.into_iter().map(|b| b.lines).collect();
    assert_eq!(b[0].iter().map(|l| l.cmd.as_str()).collect::<Vec<_>>(), vec!["aerolink run --rate 2Mbit/s \\\n  --client 'ping'   # note", "ls", "sqlite3 r.db \"SELECT 1\n  FROM t\""]);
    assert_eq!((b[0][0].at, b[0][1].at), (5, 8));
    assert_eq!(b[1][0].cmd, "cat a.toml");
    assert_eq!(b[1][0].output, vec!["[up]", "rate = 1"]);
    assert_eq!((b[1][1].cmd.as_str(), b[1][1].output.clone()), ("aerolink run -q", vec!["up_bps 1".to_string()]));
}
