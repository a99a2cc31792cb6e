//! Services aboard the aircraft, started in the aircraft gateway for a run
//! and stopped with it: the caching resolver a passenger's device gets
//! from the cabin network (Debian's dnsmasq, forwarding what it does not
//! hold to the ground's name server) and the HTTP cache (Debian's squid,
//! an explicit proxy, as on seed 000's flights whose `Via` named one, or
//! transparent: the gateway redirects the cabin's port 80 to it with an
//! nftables rule in its own namespace, and the device is not told).

use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use aerolink_net::lab::netns_command;
use aerolink_net::procs::{wait_listening, Port, WaitError};
use aerolink_net::Lab;

/// The host the services run on (the `ifc` chain's aircraft gateway).
pub const HOST: &str = "airgw";

/// Entries the resolver aboard holds (dnsmasq's default is 150; a cabin's
/// share of popular names fits in this).
const CACHE_SIZE: u32 = 10_000;

/// Where the client reaches the services aboard that a run started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Addrs {
    /// The resolver's address (port 53).
    pub resolver: Option<String>,
    /// The HTTP proxy, `ADDR:PORT`.
    pub proxy: Option<String>,
}

/// A program aboard, killed when dropped.
pub struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        aerolink_net::procs::kill_process_group(&mut self.0, Duration::ZERO);
    }
}

impl Service {
    /// Starts `argv` in [`HOST`] and returns once it listens on `port`;
    /// `what` names it in errors.
    fn start(lab: &Lab, argv: &[String], port: Port, what: &str, env: &[(String, String)], stop: &AtomicBool) -> Result<Service, String> {
        let host = lab.host(HOST).ok_or_else(|| format!("{what} aboard needs a host named {HOST} (the ifc chain: topology = \"ifc\")"))?;
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        let mut child = netns_command(&host.netns, &refs, env).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| format!("{}: {e}", argv[0]))?;
        match wait_listening(&mut child, &[port], Duration::from_secs(15), || stop.load(Ordering::SeqCst) || lab.broken()) {
            Ok(()) => Ok(Service(child)),
            Err(e) => {
                let said = match e {
                    WaitError::Exited(st) => {
                        let mut text = String::new();
                        if let Some(mut err) = child.stderr.take() {
                            let _ = std::io::Read::read_to_string(&mut err, &mut text);
                        }
                        format!("{} exited ({st}): {}", argv[0], text.lines().last().unwrap_or(""))
                    }
                    other => format!("{} did not listen on {}:{port:?} ({other:?})", argv[0], host.ipv4),
                };
                aerolink_net::procs::kill_process_group(&mut child, Duration::ZERO);
                Err(said)
            }
        }
    }
}

/// The caching resolver aboard: dnsmasq forwarding to `ground` (the
/// server's address). Returns it and where the cabin asks it.
pub fn resolver(lab: &Lab, ground: &str, env: &[(String, String)], stop: &AtomicBool) -> Result<(Service, String), String> {
    let addr = lab.host(HOST).map(|h| h.ipv4.clone()).unwrap_or_default();
    let argv = [
        "dnsmasq".to_string(),
        "--keep-in-foreground".into(),
        "--conf-file=/dev/null".into(),
        "--no-resolv".into(),
        "--no-hosts".into(),
        format!("--server={ground}"),
        format!("--listen-address={addr}"),
        "--bind-interfaces".into(),
        format!("--cache-size={CACHE_SIZE}"),
        "--user=root".into(),
        "--pid-file".into(),
    ];
    Service::start(lab, &argv, Port::Udp(53), "a resolver", env, stop).map(|s| (s, addr))
}

/// The HTTP cache's port aboard.
pub const PROXY_PORT: u16 = 3128;

/// The transparent cache's port aboard, where the gateway redirects the
/// cabin's port 80.
pub const INTERCEPT_PORT: u16 = 3129;

/// The nftables table of the transparent cache's redirect, in the aircraft
/// gateway's namespace (gone with it).
const NFT_TABLE: &str = "aerolink_cache";

/// The HTTP cache aboard: squid as an explicit proxy, in memory, storing
/// what it fetches for a day (`refresh_pattern`: objects without an expiry
/// of their own count as fresh, as a cache operator tunes for hits), and
/// marking every answer `X-Cache: HIT` or `MISS`. Names are resolved at
/// `ground` (the server's name server). With `intercept` it is also
/// transparent: an nftables rule in the gateway redirects the cabin's TCP
/// to port 80 to squid's intercepting port, which finds the original
/// destination from the redirect (and checks the `Host` against it by
/// DNS at `ground`). Returns it and the explicit proxy's `ADDR:PORT`.
pub fn proxy(lab: &Lab, ground: &str, intercept: bool, env: &[(String, String)], tmp: &std::path::Path, stop: &AtomicBool) -> Result<(Service, String), String> {
    let addr = lab.host(HOST).map(|h| h.ipv4.clone()).unwrap_or_default();
    let conf = tmp.join("squid.conf");
    let intercepting = if intercept { format!("http_port {INTERCEPT_PORT} intercept\n") } else { String::new() };
    let text = format!(
        "http_port {addr}:{PROXY_PORT}\n{intercepting}http_access allow all\ncache_mem 256 MB\nmaximum_object_size_in_memory 16 MB\nrefresh_pattern . 1440 100% 10080\n\
         dns_nameservers {ground}\npid_filename none\ncache_log /dev/null\naccess_log none\nvisible_hostname aircraft-cache\nshutdown_lifetime 0 seconds\n"
    );
    std::fs::write(&conf, text).map_err(|e| format!("{}: {e}", conf.display()))?;
    let argv = ["squid".to_string(), "-N".into(), "-f".into(), conf.display().to_string()];
    let service = Service::start(lab, &argv, Port::Tcp(PROXY_PORT), "an HTTP cache (Debian's squid)", env, stop)?;
    if intercept {
        redirect_cabin(lab, env)?;
    }
    Ok((service, format!("{addr}:{PROXY_PORT}")))
}

/// The gateway's redirect of the cabin's port 80 to the transparent
/// cache: every TCP connection from the cabin's side (the lab's first
/// host, the passengers) to port 80 anywhere. Squid's own fetches leave
/// from the gateway itself, which the rule does not match.
fn redirect_cabin(lab: &Lab, env: &[(String, String)]) -> Result<(), String> {
    let gw = lab.host(HOST).ok_or_else(|| format!("a transparent cache needs a host named {HOST} (topology = \"ifc\")"))?;
    let cabin = &lab.hosts[0].ipv4;
    let rules = format!(
        "table ip {NFT_TABLE} {{\n  chain prerouting {{\n    type nat hook prerouting priority dstnat; policy accept;\n    ip saddr {cabin}/24 tcp dport 80 redirect to :{INTERCEPT_PORT}\n  }}\n}}\n"
    );
    aerolink_net::procs::nft_load(netns_command(&gw.netns, &["nft", "-f", "-"], env), &rules).map_err(|m| format!("nft (the cabin's port 80 to the cache): {m}"))
}
