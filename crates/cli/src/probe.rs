//! `aerolink probe serve | run`, `aerolink analyze` and `aerolink fit`: the
//! flight measurement loop — measure, analyse, fit a profile, replay it.
//! The flags and the work are the flight crate's
//! ([`aerolink_flight::commands`]); here, the subcommands.

pub use aerolink_flight::commands::{analyze, fit, AnalyzeArgs, FitArgs, RunArgs};
use aerolink_flight::probe::ReflectorArgs;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum ProbeCmd {
    /// The ground reflector: answers UDP probes (port 2112), DNS questions
    /// (port 53) and serves pages (h1/h2 on 443/tcp, h3 on 443/udp) and
    /// transfers (5201) until killed.
    Serve(ReflectorArgs),
    /// The agent: measures on a schedule against a reflector and writes a
    /// JSON line per measurement as it happens (see docs/guide.md, "Measure
    /// a flight"). Stops after --duration, on Ctrl-C or SIGTERM.
    Run(RunArgs),
}

pub fn run(cmd: ProbeCmd) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    match cmd {
        ProbeCmd::Serve(a) => {
            rt.block_on(aerolink_flight::probe::serve(a))?;
            Ok(0)
        }
        ProbeCmd::Run(a) => rt.block_on(aerolink_flight::commands::agent(a)),
    }
}
