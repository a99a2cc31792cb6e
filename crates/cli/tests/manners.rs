//! `aerolink --version` names the commit; `aerolink completions SHELL`
//! completes in a real bash; `aerolink man` renders in man(1) and groff
//! without a warning, one page per command that `--help` lists.

mod common;
use common::*;

use std::process::{Command, Stdio};

fn out(args: &[&str]) -> String {
    let o = Command::new(bin()).args(args).output().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{args:?}: {err}");
    out
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let v = out(&["--version"]);
    // What build.rs asks git, in this checkout (`unknown` outside one).
    let head = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(env!("CARGO_MANIFEST_DIR")).output().ok().filter(|o| o.status.success());
    let commit = head.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_else(|| "unknown".into());
    assert_eq!(v.trim(), format!("aerolink {} (commit {commit})", env!("CARGO_PKG_VERSION")));
}

/// What bash offers after `line` (the last word being completed), with
/// the script `aerolink completions bash` printed loaded.
fn bash_offers(script: &str, words: &[&str]) -> Vec<String> {
    let line = words.join(" ");
    let prog = format!(
        "source {script}\nCOMP_WORDS=({})\nCOMP_CWORD={}\nCOMP_LINE='{line}'\nCOMP_POINT={}\n_aerolink aerolink '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
        words.len() - 1,
        line.len(),
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let o = Command::new("bash").arg("-c").arg(prog).output().unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    text(&o).0.lines().map(str::to_string).collect()
}

#[test]
fn bash_completes_commands_and_flags_from_the_parser() {
    let d = tempdir("completions");
    let script = d.join("aerolink.bash");
    std::fs::write(&script, out(&["completions", "bash"])).unwrap();
    let s = script.to_str().unwrap();
    assert_eq!(bash_offers(s, &["aerolink", "exp"]), vec!["experiment"]);
    assert_eq!(bash_offers(s, &["aerolink", "experiment", "r"]), vec!["run"]);
    let flags = bash_offers(s, &["aerolink", "run", "--prof"]);
    assert_eq!(flags, vec!["--profile"]);
    // The hidden command is not offered.
    let hidden = bash_offers(s, &["aerolink", "__h"]);
    assert!(hidden.iter().all(|w| w.is_empty()), "{hidden:?}");
    // Every shell clap_complete knows gets a script naming the commands.
    for sh in ["zsh", "fish", "elvish", "powershell"] {
        let t = out(&["completions", sh]);
        assert!(t.contains("experiment") && t.contains("--profile"), "{sh}");
    }
}

#[test]
fn an_unknown_shell_is_one_line_naming_the_shells() {
    let o = Command::new(bin()).args(["completions", "tcsh"]).output().unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("tcsh") && err.contains("bash") && err.contains("fish"), "{err}");
    let o = Command::new(bin()).args(["man", "--dir", "/nonexistent/aerolink-man"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("/nonexistent/aerolink-man"));
}

#[test]
fn manual_pages_render_without_a_warning_one_per_command() {
    // aerolink(1) on standard output, as man(1) shows it.
    let page = out(&["man"]);
    let mut man = Command::new("man").args(["-l", "-"]).env("MANWIDTH", "100").env("MANPAGER", "cat").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(man.stdin.as_mut().unwrap(), page.as_bytes()).unwrap();
    let shown = man.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    for s in ["NAME", "SYNOPSIS", "SUBCOMMANDS", "experiment", "Emulate aircraft and satellite links"] {
        assert!(shown.contains(s), "{s} missing from:\n{shown}");
    }
    // One page per command and subcommand --help lists; none hidden.
    let d = tempdir("man");
    let o = Command::new(bin()).args(["man", "--dir", d.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    let pages: Vec<String> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    for p in ["aerolink.1", "aerolink-run.1", "aerolink-experiment-run.1", "aerolink-experiment-check.1", "aerolink-bench-emulator.1", "aerolink-completions.1"] {
        assert!(pages.contains(&p.to_string()), "{p} not in {pages:?}");
    }
    assert!(!pages.iter().any(|p| p.contains("__hold") || p.contains("help")), "{pages:?}");
    assert!(text(&o).1.contains(&format!("{} manual pages", pages.len())));
    // groff finds nothing to warn about in any of them (UTF-8 input).
    for p in &pages {
        let g = Command::new("groff").args(["-Kutf8", "-man", "-ww", "-z"]).arg(d.join(p)).output().unwrap();
        assert!(g.status.success() && g.stderr.is_empty(), "{p}: {}", text(&g).1);
    }
}
