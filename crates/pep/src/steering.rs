//! nftables TPROXY rules and the policy routing that delivers intercepted
//! packets locally — installed by a proxy when it starts and removed when it
//! stops, so no rule outlives it. They live in the gateway's own namespace.

use crate::error::{PepError, Result};
use aerolink_net::procs::NftError;
use std::process::{Command, Stdio};

pub const TABLE: &str = "aerolink_pep";
/// Firewall mark and routing table the interception uses.
pub const MARK: u32 = 0x1a;
pub const TABLE_ID: u32 = 126;

fn run(cmd: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(cmd).args(args).output().map_err(|e| PepError::Precondition(format!("{cmd}: {e} (apt-get install nftables iproute2)")))?;
    if !out.status.success() {
        return Err(PepError::Command { cmd: format!("{cmd} {}", args.join(" ")), stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    Ok(())
}

/// Intercepts TCP arriving on `iface` (only to port `dport` when given)
/// and hands it to the transparent listener on `port` (IPv4 and IPv6).
/// UDP — including QUIC — passes untouched.
fn install(iface: &str, port: u16, dport: Option<u16>) -> Result<()> {
    remove();
    let tcp = dport.map_or_else(|| "meta l4proto tcp".to_string(), |d| format!("tcp dport {d}"));
    let rules = format!(
        "table inet {TABLE} {{\n  chain prerouting {{\n    type filter hook prerouting priority mangle; policy accept;\n    iifname \"{iface}\" meta nfproto ipv4 {tcp} tproxy ip to 127.0.0.1:{port} meta mark set {MARK} accept\n    iifname \"{iface}\" meta nfproto ipv6 {tcp} tproxy ip6 to [::1]:{port} meta mark set {MARK} accept\n  }}\n}}\n"
    );
    let mut nft = Command::new("nft");
    nft.args(["-f", "-"]);
    aerolink_net::procs::nft_load(nft, &rules).map_err(|e| match e {
        NftError::Start(_) => PepError::Precondition(e.to_string()),
        NftError::Refused(stderr) => PepError::Command { cmd: "nft -f -".into(), stderr },
    })?;
    let mark = format!("{MARK:#x}");
    let table = TABLE_ID.to_string();
    for fam in ["-4", "-6"] {
        run("ip", &[fam, "rule", "add", "fwmark", &mark, "lookup", &table])?;
    }
    run("ip", &["-4", "route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", &table])?;
    run("ip", &["-6", "route", "add", "local", "::/0", "dev", "lo", "table", &table])?;
    Ok(())
}

/// Removes what [`install`] added (best effort; safe to call twice).
pub fn remove() {
    let _ = Command::new("nft").args(["delete", "table", "inet", TABLE]).stderr(Stdio::null()).status();
    let mark = format!("{MARK:#x}");
    let table = TABLE_ID.to_string();
    for fam in ["-4", "-6"] {
        let _ = Command::new("ip").args([fam, "rule", "del", "fwmark", &mark, "lookup", &table]).stderr(Stdio::null()).status();
        let _ = Command::new("ip").args([fam, "route", "flush", "table", &table]).stderr(Stdio::null()).status();
    }
}

/// The interception while it is in place: removed (and the routes' initial
/// windows restored) when dropped.
pub struct Interception {
    _initcwnd: Option<InitialWindow>,
}

impl Interception {
    /// Installs the rules for `iface` → `port`; with `initcwnd`, the routes
    /// onward get that initial window (see [`InitialWindow`]). On failure
    /// nothing is left behind.
    pub fn install(iface: &str, port: u16, initcwnd: Option<u32>) -> Result<Interception> {
        let mut me = Interception { _initcwnd: None };
        install(iface, port, None)?;
        if let Some(n) = initcwnd {
            me._initcwnd = Some(InitialWindow::set(iface, n)?);
        }
        Ok(me)
    }
}

impl Interception {
    /// Intercepts only the TCP to port `dport` (the HTTP proxy's port 80);
    /// the rest passes.
    pub fn install_port(iface: &str, port: u16, dport: u16) -> Result<Interception> {
        install(iface, port, Some(dport))?;
        Ok(Interception { _initcwnd: None })
    }
}

impl Drop for Interception {
    fn drop(&mut self) {
        remove();
    }
}

/// An initial congestion window on the routes of every interface but one
/// (the way onward, away from the clients), so the proxy's own TCP
/// connections start with it — Linux sets initcwnd per route, not per
/// socket. The routes are restored as they were when dropped.
pub struct InitialWindow {
    routes: Vec<Route>,
}

/// A route whose initial window we changed: its family and its
/// description as `ip route show` gave it.
struct Route(&'static str, Vec<String>);

impl InitialWindow {
    pub fn set(except_iface: &str, segments: u32) -> Result<InitialWindow> {
        let mut me = InitialWindow { routes: Vec::new() };
        let n = segments.to_string();
        for r in onward_routes(except_iface)? {
            let mut args: Vec<&str> = vec![r.0, "route", "change"];
            args.extend(r.1.iter().map(String::as_str));
            args.extend(["initcwnd", &n]);
            run("ip", &args)?;
            // Restored on drop, also when a later one fails.
            me.routes.push(r);
        }
        Ok(me)
    }
}

impl Drop for InitialWindow {
    fn drop(&mut self) {
        for Route(fam, spec) in &self.routes {
            let _ = Command::new("ip").args([fam, "route", "change"]).args(spec).stderr(Stdio::null()).status();
        }
    }
}

/// The unicast routes in this namespace that do not leave through `iface`.
fn onward_routes(iface: &str) -> Result<Vec<Route>> {
    Ok(aerolink_work::sock::unicast_routes(Some(iface))?.into_iter().map(|(fam, spec)| Route(fam, spec)).collect())
}

/// Whether our rules are present in this namespace.
pub fn installed() -> bool {
    Command::new("nft").args(["list", "table", "inet", TABLE]).stdout(Stdio::null()).stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
}
