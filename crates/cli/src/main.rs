//! The `aerolink` binary: a thin layer of commands over the `link` and
//! `net` crates. User mistakes exit with status 2 and one line; other
//! failures exit 1. Never a panic for bad input.

mod check;
mod cluster;
mod error;
mod experiment;
mod manners;
mod pep;
mod probe;
mod profiles;
mod replay;
mod results;
mod route;
mod run;
mod stats;
mod updown;
mod workload;

use clap::{Parser, Subcommand};

const ABOUT: &str = "Emulate aircraft and satellite links in user space and run real programs over them.";

const AFTER_HELP: &str = "\
Examples:
  aerolink profiles list
  aerolink run --profile mss --server 'iperf3 -s -1' --client 'iperf3 -c $AEROLINK_SERVER -n 200K'
  aerolink run --rate 2Mbit/s --rtt 300ms --loss 1% --client 'ping -c 5 $AEROLINK_SERVER'
  aerolink shell --profile da2gc            # an interactive shell behind the link
  aerolink up lab1 --profile geo-600 && aerolink exec lab1 client -- ping -c 3 198.18.0.2
  aerolink down lab1
Inside a run, $AEROLINK_SERVER / $AEROLINK_SERVER_V6 and $AEROLINK_CLIENT / _V6 name the ends.
Docs: docs/guide.md";

#[derive(Parser, Debug)]
#[command(name = "aerolink", version = manners::VERSION, about = ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// List and inspect the built-in link profiles.
    Profiles {
        #[command(subcommand)]
        what: ProfilesCmd,
    },
    /// Run a server and a client on the two ends of an emulated link;
    /// exits with the client's status and removes everything.
    Run(run::RunArgs),
    /// Run a command (default: your shell) in the client namespace, with a
    /// server namespace behind the link.
    Shell(run::ShellArgs),
    /// Bring a lab up and keep it up (for `exec`), until `down`.
    Up(updown::UpArgs),
    /// Run a command on a host of a lab that is up.
    Exec(updown::ExecArgs),
    /// Take a lab down, or with --all every lab and leftover namespace.
    Down(updown::DownArgs),
    /// Summarise a packet log written with --log.
    Stats {
        /// The log file.
        file: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Benchmarks (see `aerolink bench emulator --help`).
    Bench {
        #[command(subcommand)]
        what: aerolink_bench::BenchCmd,
    },
    /// Run experiment files: every combination, stored in SQLite.
    Experiment {
        #[command(subcommand)]
        what: experiment::ExperimentCmd,
    },
    /// Export stored results as CSV or JSON.
    Results {
        #[command(subcommand)]
        what: ResultsCmd,
    },
    /// Write the HTML report of a result store.
    Report(results::ReportArgs),
    /// Performance-enhancing proxies, run in a gateway namespace.
    Pep {
        #[command(subcommand)]
        what: aerolink_pep::cli::PepCmd,
    },
    /// Serve recorded and corpus pages for all their origins over h1, h2
    /// and h3; list or export the corpus.
    Replay {
        #[command(subcommand)]
        what: replay::ReplayCmd,
    },
    /// Record a page with a real browser (headless Chromium) into an
    /// archive for `aerolink replay serve`.
    Record(replay::RecordArgs),
    /// Measure a real link: the agent (`probe run`) and its ground
    /// reflector (`probe serve`).
    Probe {
        #[command(subcommand)]
        what: probe::ProbeCmd,
    },
    /// Analyse a probe log as seed 000 analysed its flights: RTT, loss per
    /// 100 s, outages, technology, DNS caches, proxies, path; an HTML page.
    Analyze(probe::AnalyzeArgs),
    /// Fit a link profile to a probe log (`aerolink run --profile` replays
    /// it).
    Fit(probe::FitArgs),
    /// The workload programs themselves (run inside a lab's namespaces).
    Workload {
        #[command(subcommand)]
        what: aerolink_work::cli::WorkloadCmd,
    },
    /// The link along a flight's route (GEO, LEO, air to ground): delay,
    /// handovers and outages against time and position.
    Route {
        #[command(subcommand)]
        what: route::RouteCmd,
    },
    /// Print shell completions (bash, zsh, fish, elvish, powershell).
    Completions(manners::CompletionsArgs),
    /// Print the manual page, or write one per command with --dir.
    Man(manners::ManArgs),
    #[command(name = "__hold", hide = true)]
    Hold(updown::UpArgs),
}

#[derive(Subcommand, Debug)]
enum ResultsCmd {
    /// Every run with its metrics: `--csv` (default) or `--json`.
    Export(results::ExportArgs),
    /// Merge stores (the shards of an experiment, runs from several
    /// machines) into one: never a run twice, each keeping its host;
    /// idempotent. Refuses stores of different experiment files or aerolink
    /// versions unless --force.
    Merge(results::MergeArgs),
}

#[derive(Subcommand, Debug)]
#[allow(clippy::large_enum_variant)] // parsed once per process
enum ProfilesCmd {
    /// One line per built-in profile.
    List {
        #[arg(long)]
        json: bool,
    },
    /// A profile in full: both directions, its source and how it was split.
    /// Link flags apply on top, or alone describe the link — e.g.
    /// `aerolink profiles show --netem "delay 100ms 10ms loss 1%"` shows what
    /// netem's words become.
    Show {
        /// A built-in name or a profile file (or use --profile, or only
        /// link flags).
        name: Option<String>,
        #[command(flatten)]
        link: aerolink_experiments::linkargs::LinkArgs,
        #[arg(long)]
        json: bool,
    },
}

/// A flag the user got wrong: one line, exit status 2, like every other
/// mistake. Help and version print as clap writes them.
fn parse_args() -> Cli {
    use clap::error::ErrorKind;
    match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) => e.exit(),
        Err(e) => {
            eprintln!("aerolink: {}", one_line(&e.to_string()));
            std::process::exit(2);
        }
    }
}

/// clap's message up to its usage and hints, on one line.
fn one_line(msg: &str) -> String {
    let body = msg.split("\n\n").next().unwrap_or(msg);
    let text = body.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    text.strip_prefix("error: ").unwrap_or(&text).to_string()
}

/// For a user other than root: enters a user namespace of our own if the
/// command builds a lab; refuses, with why, the commands that keep a lab
/// between processes.
fn rootless(cmd: &Cmd) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let builds_lab = matches!(cmd, Cmd::Run(_) | Cmd::Shell(_) | Cmd::Bench { .. } | Cmd::Replay { .. } | Cmd::Record(_) | Cmd::Experiment { what: experiment::ExperimentCmd::Run(_) });
    if matches!(cmd, Cmd::Up(_) | Cmd::Hold(_) | Cmd::Exec(_)) {
        return Err("aerolink up keeps a lab between commands, which needs root (a user's own namespaces end with the process that made them); as an ordinary user, `aerolink shell` gives the same lab for one shell".into());
    }
    if builds_lab {
        aerolink_net::sys::enter_user_namespace().map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn main() {
    let cli = parse_args();
    // Commands that only print end quietly when their reader goes away
    // (`aerolink profiles list | head`), like other Unix tools. Commands
    // that own sockets keep Rust's default (SIGPIPE ignored), so a peer that
    // closes never kills a workload.
    let printing = matches!(
        cli.cmd,
        Cmd::Profiles { .. }
            | Cmd::Route { .. }
            | Cmd::Completions(_)
            | Cmd::Man(_)
            | Cmd::Replay { what: replay::ReplayCmd::List { .. } }
            | Cmd::Stats { .. }
            | Cmd::Results { .. }
            | Cmd::Experiment { what: experiment::ExperimentCmd::Plan { .. } }
    );
    if printing {
        // SAFETY: setting a signal disposition before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    // An ordinary user gets a user namespace of its own for the commands
    // that build labs (before any thread starts: the kernel requires it).
    if let Err(e) = rootless(&cli.cmd) {
        eprintln!("aerolink: {e}");
        std::process::exit(2);
    }
    let result = match cli.cmd {
        Cmd::Profiles { what: ProfilesCmd::List { json } } => profiles::list(json),
        Cmd::Profiles { what: ProfilesCmd::Show { name, link, json } } => profiles::show(name, link, json),
        Cmd::Run(a) => run::run(a),
        Cmd::Shell(a) => run::shell(a),
        Cmd::Up(a) => {
            let raw: Vec<String> = std::env::args().skip_while(|a| a != "up").skip(1).collect();
            updown::up(a, raw)
        }
        Cmd::Hold(a) => updown::hold(a),
        Cmd::Exec(a) => updown::exec(a),
        Cmd::Down(a) => updown::down(a),
        Cmd::Stats { file, json } => stats::stats(&file, json),
        Cmd::Bench { what } => aerolink_bench::bench(what),
        Cmd::Workload { what } => workload::run(what),
        Cmd::Replay { what } => replay::run(what),
        Cmd::Record(a) => replay::record(a),
        Cmd::Pep { what } => pep::run(what),
        Cmd::Experiment { what } => experiment::run(what),
        Cmd::Results { what: ResultsCmd::Export(a) } => results::export(a),
        Cmd::Results { what: ResultsCmd::Merge(a) } => results::merge(a),
        Cmd::Report(a) => results::report(a),
        Cmd::Probe { what } => probe::run(what),
        Cmd::Analyze(a) => probe::analyze(a),
        Cmd::Fit(a) => probe::fit(a),
        Cmd::Route { what } => route::run(what),
        Cmd::Completions(a) => manners::completions(&a),
        Cmd::Man(a) => manners::man(&a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            if error::is_user(&e) {
                eprintln!("aerolink: {e}");
                std::process::exit(2);
            }
            eprintln!("aerolink: error: {e:#}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("aerolink").chain(args.iter().copied())).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    /// Flattened flag groups (link, PEP, server, workload) must not share
    /// an argument id: clap would hand one group's value to the other.
    #[test]
    fn flag_groups_keep_their_own_values() {
        let cli = parse(&["bench", "objects", "--topology", "ifc", "--mode", "par", "--pep", "split-tcp", "--initcwnd", "20", "--pep-initcwnd", "30", "--cc", "bbr", "--pep-cc", "reno"]);
        let Cmd::Bench { what: aerolink_bench::BenchCmd::Objects { common, params } } = cli.cmd else { panic!("not bench objects") };
        assert_eq!(params.mode, aerolink_work::web::ObjectsMode::Par);
        assert_eq!(common.pep.mode, aerolink_pep::cli::PepMode::SplitTcp);
        assert_eq!((common.server.initcwnd, common.pep.initcwnd), (Some(20), Some(30)));
        assert_eq!((common.server.cc, common.pep.tcp_cc), (aerolink_work::sock::TcpCc::Bbr, aerolink_work::sock::TcpCc::Reno));
        let cli = parse(&["run", "--topology", "ifc", "--pep", "quic-tunnel", "--tunnel-cc", "rate", "--tunnel-rate", "2Mbit/s", "--client", "true"]);
        let Cmd::Run(r) = cli.cmd else { panic!("not run") };
        assert_eq!(r.pep.tunnel_rate.and_then(|t| t.rate).map(|r| r.bits_per_sec), Some(2e6));
    }

    #[test]
    fn clap_errors_fold_into_one_line() {
        let e = Cli::try_parse_from(["aerolink", "bench", "web", "--protocol", "h4"]).unwrap_err();
        let line = one_line(&e.to_string());
        assert!(!line.contains('\n') && line.contains("--protocol") && line.contains("h1-close"), "{line}");
    }
}

/// The commands the docs show are commands aerolink takes: every
/// `aerolink …` line of a shell block in the README and the guide parses,
/// and the lab's variables (`$AEROLINK_SERVER`) are in single quotes, so
/// that the user's shell passes them on instead of expanding them (empty)
/// before aerolink runs.
#[cfg(test)]
mod doc_commands {
    use super::*;

    /// `aerolink …` command lines of the ```sh blocks of `text`: continued
    /// lines joined, cut at the first unquoted pipe, redirection, `&&`,
    /// `;` or comment.
    fn commands(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut in_sh = false;
        let mut pending = String::new();
        for line in text.lines() {
            let t = line.trim();
            if t.starts_with("```") {
                in_sh = !in_sh && (t == "```sh" || t == "```bash" || t == "```shell");
                pending.clear();
                continue;
            }
            if !in_sh {
                continue;
            }
            if let Some(head) = t.strip_suffix('\\') {
                pending.push_str(head.trim_end());
                pending.push(' ');
                continue;
            }
            pending.push_str(t);
            let full = std::mem::take(&mut pending);
            let full = full.trim_start_matches("sudo ").trim_start_matches("$ ");
            if full.starts_with("aerolink ") {
                out.push(cut(full));
            }
        }
        out
    }

    fn cut(s: &str) -> String {
        let (mut single, mut double) = (false, false);
        let b: Vec<char> = s.chars().collect();
        for (i, &c) in b.iter().enumerate() {
            match c {
                '\'' if !double => single = !single,
                '"' if !single => double = !double,
                '|' | '>' | '<' | ';' | '&' if !single && !double => return b[..i].iter().collect::<String>().trim().to_string(),
                '#' if !single && !double && i > 0 && b[i - 1] == ' ' => return b[..i].iter().collect::<String>().trim().to_string(),
                _ => {}
            }
        }
        s.to_string()
    }

    /// Where `$AEROLINK…` appears outside single quotes.
    fn unquoted_lab_variable(s: &str) -> bool {
        let mut single = false;
        for (i, c) in s.char_indices() {
            match c {
                '\'' => single = !single,
                '$' if !single && s[i..].starts_with("$AEROLINK") => return true,
                _ => {}
            }
        }
        false
    }

    #[test]
    fn every_command_in_the_docs_parses_with_its_variables_quoted() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut checked = 0;
        for doc in ["README.md", "docs/guide.md"] {
            let text = std::fs::read_to_string(root.join(doc)).unwrap();
            for cmd in commands(&text) {
                assert!(!unquoted_lab_variable(&cmd), "{doc}: `{cmd}`: put $AEROLINK_… in single quotes, or your shell expands it before aerolink runs");
                let words = shlex::split(&cmd).unwrap_or_else(|| panic!("{doc}: `{cmd}`: unbalanced quotes"));
                if let Err(e) = Cli::try_parse_from(&words) {
                    if !matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion) {
                        panic!("{doc}: `{cmd}` does not parse: {}", one_line(&e.to_string()));
                    }
                }
                checked += 1;
            }
        }
        assert!(checked > 40, "only {checked} commands found in the docs");
    }

    #[test]
    fn the_scanner_finds_what_a_shell_would_run() {
        let md = "text\n```sh\naerolink run --rate 2Mbit/s \\\n  --client 'ping $AEROLINK_SERVER' | tee x # note\nsudo aerolink report --db r.db > out\necho no\n```\n";
        assert_eq!(commands(md), vec!["aerolink run --rate 2Mbit/s --client 'ping $AEROLINK_SERVER'", "aerolink report --db r.db"]);
        assert!(!unquoted_lab_variable("aerolink run --client 'ping $AEROLINK_SERVER'"));
        assert!(unquoted_lab_variable("aerolink run --client \"ping $AEROLINK_SERVER\""));
    }
}
