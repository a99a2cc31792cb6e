//! The `aerolink` binary: a thin layer of commands over the `link` and
//! `net` crates. User mistakes exit with status 2 and one line; other
//! failures exit 1. Never a panic for bad input.

mod bench;
mod error;
mod experiment;
mod linkargs;
mod pep;
mod profiles;
mod results;
mod run;
mod stats;
mod topology;
mod updown;
mod workload;

use clap::{Parser, Subcommand};

use error::UserError;

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
#[command(name = "aerolink", version, about = ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
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
        what: bench::BenchCmd,
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
    /// The workload programs themselves (run inside a lab's namespaces).
    Workload {
        #[command(subcommand)]
        what: aerolink_work::cli::WorkloadCmd,
    },
    #[command(name = "__hold", hide = true)]
    Hold(updown::UpArgs),
}

#[derive(Subcommand, Debug)]
enum ResultsCmd {
    /// Every run with its metrics: `--csv` (default) or `--json`.
    Export(results::ExportArgs),
}

#[derive(Subcommand, Debug)]
enum ProfilesCmd {
    /// One line per built-in profile.
    List {
        #[arg(long)]
        json: bool,
    },
    /// A profile in full: both directions, its source and how it was split.
    Show {
        /// A built-in name or a profile file.
        name: String,
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    // Commands that only print end quietly when their reader goes away
    // (`aerolink profiles list | head`), like other Unix tools. Commands
    // that own sockets keep Rust's default (SIGPIPE ignored), so a peer that
    // closes never kills a workload.
    let printing = matches!(
        cli.cmd,
        Cmd::Profiles { .. } | Cmd::Stats { .. } | Cmd::Results { .. } | Cmd::Experiment { what: experiment::ExperimentCmd::Plan { .. } }
    );
    if printing {
        // SAFETY: setting a signal disposition before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let result = match cli.cmd {
        Cmd::Profiles { what: ProfilesCmd::List { json } } => profiles::list(json),
        Cmd::Profiles { what: ProfilesCmd::Show { name, json } } => profiles::show(&name, json),
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
        Cmd::Bench { what } => bench::bench(what),
        Cmd::Workload { what } => workload::run(what),
        Cmd::Pep { what } => pep::run(what),
        Cmd::Experiment { what } => experiment::run(what),
        Cmd::Results { what: ResultsCmd::Export(a) } => results::export(a),
        Cmd::Report(a) => results::report(a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            if e.downcast_ref::<UserError>().is_some() {
                eprintln!("aerolink: {e}");
                std::process::exit(2);
            }
            eprintln!("aerolink: error: {e:#}");
            std::process::exit(1);
        }
    }
}
