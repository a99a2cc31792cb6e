//! The flight tool's commands, flags and what they do, for the binary to
//! dispatch: `aerolink probe run` ([`agent`]), `aerolink analyze`
//! ([`analyze`]) and `aerolink fit` ([`fit`]). A mistake of the user's is an
//! [`aerolink_experiments::UserError`] in the error's chain (exit status 2).

use std::path::{Path, PathBuf};

use clap::Args;

use crate::analysis::{self as flight, Phase};
use crate::probe::agent::{AgentArgs, Networks};
use crate::probe::record::{self, Record, Writer};

fn user(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(aerolink_experiments::UserError(msg.into()))
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Also keep every record in this SQLite store (for `aerolink analyze
    /// --db` and `aerolink report`).
    #[arg(long)]
    pub db: Option<PathBuf>,
}

fn duration_secs(s: &str) -> Result<f64, String> {
    aerolink_link::units::parse_duration(s).map(|d| d.as_secs_f64()).map_err(|m| format!("expected {m}"))
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// A probe log: its directory (`--out` of `probe run`) or one file.
    /// Or use --db.
    pub log: Option<PathBuf>,
    /// Read the log from a store written with `probe run --db`.
    #[arg(long, conflicts_with = "log")]
    pub db: Option<PathBuf>,
    /// The HTML page to write.
    #[arg(short, long, default_value = "flight.html")]
    pub output: PathBuf,
    /// Print the analysis as JSON.
    #[arg(long)]
    pub json: bool,
    /// Analyse phases on their own: NAME=FROM..TO from the log's start
    /// (`climb=0s..20min`, `cruise=20min..`); repeat the flag.
    #[arg(long, value_parser = Phase::parse)]
    pub phase: Vec<Phase>,
    /// Loss is reported per window of this length (seed 000: 100 s).
    #[arg(long, default_value = "100s", value_parser = duration_secs)]
    pub loss_window: f64,
    /// Lost probes spanning at least this long are an outage.
    #[arg(long, default_value = "10s", value_parser = duration_secs)]
    pub outage_min: f64,
    /// Compare with a second log (a replay of a fitted profile): two-sample
    /// Kolmogorov–Smirnov tests of the loss per window and of the RTT.
    #[arg(long)]
    pub against: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct FitArgs {
    /// A probe log: its directory or one file.
    pub log: PathBuf,
    /// The profile to write (jitter sample files go next to it).
    #[arg(short, long, default_value = "fitted.toml")]
    pub output: PathBuf,
    /// The profile's name (default: the output's file stem).
    #[arg(long)]
    pub name: Option<String>,
    /// Lost probes spanning at least this long are an outage.
    #[arg(long, default_value = "10s", value_parser = duration_secs)]
    pub outage_min: f64,
    /// How loss is written: `gilbert` (a chain fitted from the loss run
    /// lengths, or random loss when the runs show no memory) or `trace`
    /// (the measured loss rate of each --trace-window, outages included:
    /// the flight's loss as it happened, in time).
    #[arg(long, value_enum, default_value_t = LossForm::Gilbert)]
    pub loss: LossForm,
    /// The window of a loss trace.
    #[arg(long, default_value = "10s", value_parser = duration_secs)]
    pub trace_window: f64,
    /// Print what was fitted, with 95 % intervals, as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossForm {
    Gilbert,
    Trace,
}

/// `aerolink probe run`: the agent until its duration ends, Ctrl-C or
/// SIGTERM.
pub async fn agent(a: RunArgs) -> anyhow::Result<i32> {
    let ag = a.agent;
    if ag.udp_every.is_zero() && ag.ping_every.is_zero() && ag.trace_every.is_zero() && ag.dns_every.is_zero() && ag.web_every.is_zero() && ag.bulk_every.is_zero() {
        return Err(user("every measurement is off (all --…-every are 0): nothing to do"));
    }
    let target = match ag.target.parse::<std::net::IpAddr>() {
        Ok(ip) => std::net::SocketAddr::new(ip, crate::probe::wire::PORT),
        Err(_) => tokio::net::lookup_host((ag.target.as_str(), crate::probe::wire::PORT))
            .await
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| user(format!("--target {}: not an address, and the name does not resolve", ag.target)))?,
    };
    let networks = match &ag.networks {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| user(format!("--networks {}: {e}", p.display())))?;
            Networks::parse(&text, &p.display().to_string()).map_err(user)?
        }
        None => Networks::default(),
    };
    let mut writer = Writer::open(&ag.out, ag.rotate_size).map_err(|e| user(format!("--out {}: {e}", ag.out.display())))?;
    if let Some(db) = &a.db {
        let store = aerolink_experiments::store::Store::open(db).map_err(|e| user(e.to_string()))?;
        let log = std::fs::canonicalize(&ag.out).unwrap_or(ag.out.clone()).display().to_string();
        let mut warned = false;
        writer.sink = Some(Box::new(move |r: &Record| {
            let json = serde_json::to_string(r).unwrap_or_default();
            if let Err(e) = store.insert_probe_record(&log, r.n, r.t, r.m.kind(), &json) {
                if !warned {
                    eprintln!("aerolink probe: cannot write the store (the log file still has every record): {e}");
                    warned = true;
                }
            }
        }));
    }
    let daily: f64 = ag.daily_bytes().values().sum();
    eprintln!("aerolink probe: measuring {target} into {} (this schedule sends about {:.0} MB a day); Ctrl-C stops", ag.out.display(), daily / 1e6);
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("signal handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        let _ = tx.send(true);
    });
    crate::probe::agent::run(ag, target, writer, networks, rx).await;
    Ok(0)
}

/// Reads a log directory or file, or a store's probe log.
fn load(log: Option<&Path>, db: Option<&Path>) -> anyhow::Result<(Vec<Record>, usize, String)> {
    if let Some(db) = db {
        if !db.exists() {
            return Err(user(format!("--db {}: no such file", db.display())));
        }
        let store = aerolink_experiments::store::Store::open(db).map_err(|e| user(e.to_string()))?;
        let logs = store.probe_logs()?;
        let Some(name) = logs.first() else { return Err(user(format!("--db {}: holds no probe log (write one with `aerolink probe run --db`)", db.display()))) };
        let (mut out, mut bad) = (Vec::new(), 0);
        for line in store.probe_records(name)? {
            match serde_json::from_str::<Record>(&line) {
                Ok(r) => out.push(r),
                Err(_) => bad += 1,
            }
        }
        return Ok((out, bad, format!("{} ({name})", db.display())));
    }
    let log = log.ok_or_else(|| user("give a probe log (its directory or file) or --db"))?;
    if !log.exists() {
        return Err(user(format!("{}: no such file or directory", log.display())));
    }
    let (records, bad) = record::read_dir_or_file(log).map_err(|e| user(format!("{}: {e}", log.display())))?;
    if records.is_empty() {
        return Err(user(format!("{}: no probe records (expected the --out directory of `aerolink probe run`)", log.display())));
    }
    Ok((records, bad, log.display().to_string()))
}

/// `aerolink analyze`: the page, and the summary printed or as JSON.
pub fn analyze(a: AnalyzeArgs) -> anyhow::Result<i32> {
    let (records, bad, source) = load(a.log.as_deref(), a.db.as_deref())?;
    let opts = flight::Options { loss_window_s: a.loss_window, outage_min_s: a.outage_min, phases: a.phase.clone() };
    let f = flight::analyze(&records, bad, &source, &opts);
    std::fs::write(&a.output, flight::render(&f, &records)).map_err(|e| user(format!("{}: {e}", a.output.display())))?;
    let mut json = serde_json::to_value(&f)?;
    if let Some(other) = &a.against {
        let (theirs, _, _) = load(Some(other), None)?;
        let g = flight::analyze(&theirs, 0, &other.display().to_string(), &opts);
        let rtts = |r: &[Record]| {
            r.iter()
                .filter_map(|r| match &r.m {
                    record::Measurement::Udp(u) => u.rtt_ms,
                    _ => None,
                })
                .collect::<Vec<f64>>()
        };
        let (ours_w, theirs_w) = (&f.phases[0].loss_windows.values, &g.phases[0].loss_windows.values);
        let (dl, pl) = crate::fit::ks_two_sample(ours_w, theirs_w);
        let (dr, pr) = crate::fit::ks_two_sample(&rtts(&records), &rtts(&theirs));
        json["against"] = serde_json::json!({"log": other.display().to_string(), "loss_windows": {"ks_d": dl, "p": pl, "ours": ours_w.len(), "theirs": theirs_w.len()}, "rtt": {"ks_d": dr, "p": pr}});
        if !a.json {
            println!(
                "against {}: loss per {:.0} s window KS D = {dl:.3}, p = {pl:.3} ({} vs {} windows); RTT KS D = {dr:.3}, p = {pr:.3}{}",
                other.display(),
                a.loss_window,
                ours_w.len(),
                theirs_w.len(),
                if pl < 0.05 { " — the loss differs" } else { "" }
            );
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        for p in &f.phases {
            if p.udp.sent == 0 {
                println!("{}: no probe was sent in this phase (the log ends before it, or the agent did not probe)", p.name);
                continue;
            }
            let r = p.udp.rtt_ms.as_ref();
            println!(
                "{}: {} ({}); RTT median {:.0} ms; probe loss {:.1} % (up {}, down {}); loss per {:.0} s: median {:.1} %, p90 {:.1} %; {} outage(s); DNS cache aboard: {}; proxies: {}",
                p.name,
                p.technology,
                p.technology_why,
                r.map_or(f64::NAN, |d| d.median),
                p.udp.loss * 100.0,
                p.udp.up_loss.map_or("–".into(), |v| format!("{:.1} %", v * 100.0)),
                p.udp.down_loss.map_or("–".into(), |v| format!("{:.1} %", v * 100.0)),
                a.loss_window,
                p.loss_windows.median.unwrap_or(f64::NAN) * 100.0,
                p.loss_windows.p90.unwrap_or(f64::NAN) * 100.0,
                p.outages.len(),
                if p.dns.cache_aboard { "yes" } else { "no" },
                if p.proxies.is_empty() { "none seen".into() } else { p.proxies.keys().cloned().collect::<Vec<_>>().join(", ") }
            );
        }
        println!("{}", std::fs::canonicalize(&a.output).unwrap_or(a.output.clone()).display());
    }
    Ok(0)
}

/// `aerolink fit`: the profile and its sample files written, and checked
/// to load.
pub fn fit(a: FitArgs) -> anyhow::Result<i32> {
    let (records, _, source) = load(Some(&a.log), None)?;
    let stem = a.output.file_stem().and_then(|s| s.to_str()).unwrap_or("fitted").to_string();
    let o = crate::fit::Options {
        name: a.name.clone().unwrap_or(stem.clone()),
        stem,
        outage_min_s: a.outage_min,
        source: format!("probe log {source}"),
        loss_trace_window_s: (a.loss == LossForm::Trace).then_some(a.trace_window),
    };
    let fitted = crate::fit::fit(&records, &o).map_err(|e| user(format!("{source}: {e}")))?;
    let dir = a.output.parent().filter(|p| !p.as_os_str().is_empty()).map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    for (name, text) in &fitted.files {
        std::fs::write(dir.join(name), text).map_err(|e| user(format!("{}: {e}", dir.join(name).display())))?;
    }
    std::fs::write(&a.output, &fitted.toml).map_err(|e| user(format!("{}: {e}", a.output.display())))?;
    // The profile must load as any other: check it now, not at replay.
    aerolink_experiments::profiles::load_profile(&a.output.display().to_string(), &[]).map_err(|e| anyhow::anyhow!("the fitted profile does not load (a bug): {e}"))?;
    if a.json {
        // Through a Value: its keys in name order, as before the summary was typed.
        println!("{}", serde_json::to_string_pretty(&serde_json::to_value(&fitted.summary)?)?);
    } else {
        print!("{}", crate::fit::describe(&fitted.summary));
        println!("{}", a.output.display());
    }
    Ok(0)
}
