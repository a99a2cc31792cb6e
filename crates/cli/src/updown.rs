//! `aerolink up | exec | down`: a lab that stays up for interactive work.
//!
//! `up` starts a detached holder process (`aerolink __hold`) that builds the
//! lab, writes `/run/aerolink/NAME.json` and pumps packets until `down`
//! sends it SIGTERM. The namespaces are ordinary named namespaces, visible
//! to `ip netns`. After a SIGKILL, `down --all` finds the leftovers by
//! their `al-` prefix and removes them, with the runs' temporary
//! directories and monitor files.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aerolink_net::lab::{self, HostInfo};
use aerolink_net::Lab;
use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::error::user;
use crate::run::{lab_spec, print_report};
use aerolink_experiments::linkargs::LinkArgs;

const STATE_DIR: &str = "/run/aerolink";

#[derive(Args, Debug)]
pub struct UpArgs {
    /// A name for the lab: 1–12 lower-case letters and digits.
    pub name: String,
    #[command(flatten)]
    pub link: LinkArgs,
    /// Record every packet event to FILE.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    #[command(flatten)]
    pub capture: crate::run::CaptureArgs,
}

#[derive(Args, Debug)]
pub struct ExecArgs {
    /// The lab's name (from `aerolink up`).
    pub name: String,
    /// The host to run in: client, server, or a topology's host name.
    pub host: String,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

#[derive(Args, Debug)]
pub struct DownArgs {
    /// The lab to take down.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub name: Option<String>,
    /// Remove every lab `up` made and what killed runs left (namespaces,
    /// directories); labs of runs and experiments still under way are kept.
    #[arg(long)]
    pub all: bool,
}

#[derive(Serialize, Deserialize)]
struct State {
    name: String,
    pid: u32,
    label: String,
    seed: u64,
    hosts: Vec<HostInfo>,
    /// The live view's address (`--live`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    live: Option<String>,
}

fn state_path(name: &str) -> PathBuf {
    PathBuf::from(STATE_DIR).join(format!("{name}.json"))
}

fn check_name(name: &str) -> anyhow::Result<()> {
    lab::check_host_name(name).map_err(|_| user(format!("lab name {name:?}: use 1–12 lower-case letters and digits, starting with a letter")))
}

fn read_state(name: &str) -> anyhow::Result<State> {
    let p = state_path(name);
    let text = std::fs::read_to_string(&p).map_err(|_| user(format!("no lab named {name:?} is up (no {}); see `aerolink up --help`", p.display())))?;
    serde_json::from_str(&text).map_err(|e| user(format!("{}: unreadable state: {e}", p.display())))
}

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid as i32, 0) == 0 }
}

pub fn up(args: UpArgs, raw_args: Vec<String>) -> anyhow::Result<i32> {
    check_name(&args.name)?;
    if state_path(&args.name).exists() || !lab::leftover_namespaces(Some(&args.name)).is_empty() {
        return Err(user(format!("a lab named {:?} is already up; `aerolink down {}` first", args.name, args.name)));
    }
    // Validate everything here, where errors reach the user's terminal.
    lab_spec(&args.link, args.name.clone())?;
    aerolink_net::sys::check_preconditions()?;
    std::fs::create_dir_all(STATE_DIR).context("creating /run/aerolink")?;
    let logfile = PathBuf::from(STATE_DIR).join(format!("{}.log", args.name));
    let out = std::fs::File::create(&logfile).with_context(|| format!("creating {}", logfile.display()))?;
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("__hold").args(&raw_args).stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("starting the lab holder")?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(s) = read_state(&args.name) {
            println!("lab {} is up: {}", s.name, s.label);
            for h in &s.hosts {
                println!("  {:<10} {:<16} {:<18} netns {}", h.name, h.ipv4, h.ipv6, h.netns);
            }
            if let Some(u) = &s.live {
                println!("live view at {u}");
            }
            println!("run commands with `aerolink exec {} HOST -- CMD`, remove it with `aerolink down {}`", s.name, s.name);
            return Ok(0);
        }
        if let Some(st) = child.try_wait()? {
            let log = std::fs::read_to_string(&logfile).unwrap_or_default();
            let line = log.lines().last().unwrap_or("the lab holder exited").to_string();
            return Err(user(format!("{} ({st})", line.trim_start_matches("aerolink: "))));
        }
        if Instant::now() > deadline {
            return Err(anyhow::anyhow!("the lab did not come up within 30 s; see {}", logfile.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The detached holder behind `up`.
pub fn hold(args: UpArgs) -> anyhow::Result<i32> {
    let (mut spec, label) = lab_spec(&args.link, args.name.clone())?;
    let live = args.capture.apply(&mut spec, &label)?;
    let log = match &args.log {
        Some(p) => Some(Box::new(std::fs::File::create(p).map_err(|e| user(format!("--log {}: {e}", p.display())))?) as Box<dyn std::io::Write + Send>),
        None => None,
    };
    let signals = aerolink_net::stop::on_signals();
    let lab = Lab::build(&spec, log)?;
    let state = State { name: args.name.clone(), pid: std::process::id(), label, seed: spec.seed, hosts: lab.hosts.clone(), live: live.as_ref().map(|l| l.url()) };
    let tmp = state_path(&format!("{}.tmp", args.name));
    std::fs::write(&tmp, serde_json::to_string_pretty(&state)?)?;
    std::fs::rename(&tmp, state_path(&args.name))?;
    while signals.received().is_none() {
        std::thread::sleep(Duration::from_millis(50));
    }
    let rep = lab.shutdown();
    drop(live);
    print_report(&rep, &spec.hosts);
    crate::run::print_capture(&rep.pcap);
    let _ = std::fs::remove_file(state_path(&args.name));
    Ok(0)
}

pub fn exec(args: ExecArgs) -> anyhow::Result<i32> {
    let s = read_state(&args.name)?;
    let h = s
        .hosts
        .iter()
        .find(|h| h.name == args.host)
        .ok_or_else(|| user(format!("lab {}: no host {:?}; hosts are {}", s.name, args.host, s.hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>().join(", "))))?;
    let st = Command::new("ip").args(["netns", "exec", &h.netns]).args(&args.cmd).envs(lab::lab_env(&s.hosts, s.seed)).status().context("running the command")?;
    use std::os::unix::process::ExitStatusExt;
    Ok(st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)))
}

pub fn down(args: DownArgs) -> anyhow::Result<i32> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // An ordinary user's labs live in its own user namespace and end
        // with their process: only a killed run's directory can remain.
        if !args.all {
            return Err(user("an ordinary user's labs end with the command that made them; nothing stays up to take down (`down --all` removes what killed runs left)"));
        }
        let stale = lab::stale_labs();
        for s in &stale {
            lab::remove_stale(s);
            println!("removed what run {} left (pid {} was killed)", s.run, s.pid);
        }
        if stale.is_empty() {
            println!("nothing to remove");
        }
        return Ok(0);
    }
    let names: Vec<String> = if args.all {
        let mut n: Vec<String> =
            std::fs::read_dir(STATE_DIR).map(|d| d.filter_map(|e| e.ok()).filter_map(|e| e.file_name().to_string_lossy().strip_suffix(".json").map(str::to_string)).collect()).unwrap_or_default();
        n.sort();
        n
    } else {
        let name = args.name.clone().expect("clap requires a name without --all");
        check_name(&name)?;
        if !state_path(&name).exists() && lab::leftover_namespaces(Some(&name)).is_empty() {
            return Err(user(format!("no lab named {name:?} is up")));
        }
        vec![name]
    };
    let mut removed = 0;
    for name in &names {
        if let Ok(s) = read_state(name) {
            if alive(s.pid) {
                // SAFETY: asking our own holder to stop.
                unsafe {
                    libc::kill(s.pid as i32, libc::SIGTERM);
                }
                let deadline = Instant::now() + Duration::from_secs(10);
                while alive(s.pid) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        for ns in lab::leftover_namespaces(Some(name)) {
            lab::remove_namespace(&ns);
        }
        let _ = std::fs::remove_dir_all(lab::run_tmp_dir(name));
        let _ = std::fs::remove_file(state_path(name));
        let _ = std::fs::remove_file(PathBuf::from(STATE_DIR).join(format!("{name}.log")));
        println!("removed lab {name}");
        removed += 1;
    }
    if args.all {
        // Leftovers of runs killed with SIGKILL: namespaces with our prefix
        // that no running aerolink owns (an experiment under way keeps its
        // labs).
        for ns in lab::orphan_namespaces() {
            lab::remove_namespace(&ns);
            println!("removed leftover namespace {ns}");
            removed += 1;
        }
        for f in lab::leftover_files() {
            let _ = if f.is_dir() { std::fs::remove_dir_all(&f) } else { std::fs::remove_file(&f) };
            println!("removed leftover {}", f.display());
            removed += 1;
        }
        if removed == 0 {
            println!("nothing to remove");
        }
    }
    Ok(0)
}
