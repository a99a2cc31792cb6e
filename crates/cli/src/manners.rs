//! What a command-line tool owes its users beside its work: shell
//! completions (`aerolink completions bash`) and manual pages (`aerolink
//! man`), both generated from the clap definitions the parser itself uses,
//! so they never drift from the flags; and the version with its commit.

use std::io::Write;
use std::path::PathBuf;

use clap::CommandFactory;

use anyhow::Context;

/// `aerolink --version`: the crate's version and the commit it was built
/// from (`unknown` outside a git checkout).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("AEROLINK_COMMIT"), ")");

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  aerolink completions bash > /etc/bash_completion.d/aerolink
  aerolink completions zsh > \"${fpath[1]}/_aerolink\"
  aerolink completions fish > ~/.config/fish/completions/aerolink.fish")]
pub struct CompletionsArgs {
    /// The shell to complete in.
    pub shell: clap_complete::Shell,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  aerolink man | man -l -                  # read it now
  aerolink man --dir /usr/local/share/man/man1 && mandb")]
pub struct ManArgs {
    /// Write a page per command into this directory (aerolink.1,
    /// aerolink-run.1, aerolink-experiment-run.1, …) instead of printing
    /// aerolink(1) on standard output.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The command line as completions should offer it. clap_complete also
/// offers hidden subcommands (clap-rs/clap#1335), and a `Command` cannot
/// drop one, so the root is put together again from its own arguments and
/// its visible subcommands (only the root has a hidden one, `__hold`).
fn visible_command() -> clap::Command {
    let full = crate::Cli::command();
    let root = clap::Command::new("aerolink").version(VERSION).about(crate::ABOUT).args(full.get_arguments().cloned());
    root.subcommands(full.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
}

pub fn completions(a: &CompletionsArgs) -> anyhow::Result<i32> {
    let mut cmd = visible_command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(a.shell, &mut cmd, "aerolink", &mut out);
    out.flush().context("standard output")?;
    Ok(0)
}

pub fn man(a: &ManArgs) -> anyhow::Result<i32> {
    let cmd = crate::Cli::command();
    match &a.dir {
        None => {
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(cmd).render(&mut out).and_then(|_| out.flush()).context("standard output")?;
        }
        Some(dir) => {
            if !dir.is_dir() {
                return Err(crate::error::user(format!("--dir {}: not a directory (make it first)", dir.display())));
            }
            clap_mangen::generate_to(cmd, dir).with_context(|| format!("writing manual pages into {}", dir.display()))?;
            let n = std::fs::read_dir(dir).map(|d| d.filter_map(Result::ok).filter(|e| e.path().extension().is_some_and(|x| x == "1")).count()).unwrap_or(0);
            eprintln!("aerolink: {n} manual pages in {}", dir.display());
        }
    }
    Ok(0)
}
