//! `aerolink pep split-tcp`: the transparent split-TCP proxy, run in a
//! gateway namespace (by `run --pep split-tcp`, or by hand with
//! `aerolink exec LAB airgw -- aerolink pep split-tcp`).

use clap::Subcommand;

use crate::error::user;

#[derive(Subcommand, Debug)]
pub enum PepCmd {
    /// Intercept the clients' TCP (nftables TPROXY, no client
    /// configuration) and carry it onward on the proxy's own connections.
    /// Rules are removed when it stops (Ctrl-C, SIGTERM).
    SplitTcp {
        /// The interface facing the clients.
        #[arg(long, default_value = "to-client")]
        from: String,
        /// Local port of the transparent listener.
        #[arg(long, default_value_t = 7001)]
        port: u16,
        /// Congestion control of the onward connections: reno, cubic, bbr.
        #[arg(long, default_value = "cubic")]
        cc: String,
        /// Print the statistics as JSON when stopping.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: PepCmd) -> anyhow::Result<i32> {
    let PepCmd::SplitTcp { from, port, cc, json } = cmd;
    if !aerolink_work::sock::TCP_CCS.contains(&cc.as_str()) {
        return Err(user(format!("--cc {cc}: expected one of {}", aerolink_work::sock::TCP_CCS.join(", "))));
    }
    if !std::path::Path::new("/sys/class/net").join(&from).exists() {
        return Err(user(format!("--from {from}: no such interface in this namespace (run it in a gateway: aerolink exec LAB airgw -- aerolink pep split-tcp)")));
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let stats = rt.block_on(async move {
        // Handlers go in before any rule does: a signal between the two
        // would otherwise kill the proxy and leave its rules behind.
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let mut hup = signal(SignalKind::hangup())?;
        let stop = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
                _ = hup.recv() => {}
            }
        };
        let ready = || {
            // The runner waits for this line before starting programs.
            println!("ready");
            use std::io::Write;
            let _ = std::io::stdout().flush();
        };
        aerolink_pep::split_tcp::run(aerolink_pep::split_tcp::Options { from, port, cc }, stop, ready).await
    })?;
    if json {
        println!("{}", serde_json::to_string(&stats)?);
    }
    eprintln!("split-tcp: {} connections ({} failed), {} bytes up, {} bytes down; rules removed", stats.connections, stats.failed, stats.bytes_up, stats.bytes_down);
    Ok(0)
}
