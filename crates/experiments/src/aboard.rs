//! Services aboard the aircraft, started in the aircraft gateway for a run
//! and stopped with it: the caching resolver a passenger's device gets
//! from the cabin network (Debian's dnsmasq, forwarding what it does not
//! hold to the ground's name server) and the HTTP cache (Debian's squid,
//! an explicit proxy, as on seed 000's flights whose `Via` named one).

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

/// The HTTP cache aboard: squid as an explicit proxy, in memory, storing
/// what it fetches for a day (`refresh_pattern`: objects without an expiry
/// of their own count as fresh, as a cache operator tunes for hits), and
/// marking every answer `X-Cache: HIT` or `MISS`. Names are resolved at
/// `ground` (the server's name server). Returns it and `ADDR:PORT`.
pub fn proxy(lab: &Lab, ground: &str, env: &[(String, String)], tmp: &std::path::Path, stop: &AtomicBool) -> Result<(Service, String), String> {
    let addr = lab.host(HOST).map(|h| h.ipv4.clone()).unwrap_or_default();
    let conf = tmp.join("squid.conf");
    let text = format!(
        "http_port {addr}:{PROXY_PORT}\nhttp_access allow all\ncache_mem 256 MB\nmaximum_object_size_in_memory 16 MB\nrefresh_pattern . 1440 100% 10080\n\
         dns_nameservers {ground}\npid_filename none\ncache_log /dev/null\naccess_log none\nvisible_hostname aircraft-cache\nshutdown_lifetime 0 seconds\n"
    );
    std::fs::write(&conf, text).map_err(|e| format!("{}: {e}", conf.display()))?;
    let argv = ["squid".to_string(), "-N".into(), "-f".into(), conf.display().to_string()];
    Service::start(lab, &argv, Port::Tcp(PROXY_PORT), "an HTTP cache (Debian's squid)", env, stop).map(|s| (s, format!("{addr}:{PROXY_PORT}")))
}
