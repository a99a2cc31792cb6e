//! Services aboard the aircraft: the caching resolver a passenger's device
//! gets from the cabin network (Debian's dnsmasq in the aircraft gateway,
//! forwarding what it does not hold to the ground's name server), started
//! for a run and stopped with it.

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

/// dnsmasq aboard, killed when dropped.
pub struct Resolver {
    child: Child,
    /// Where the cabin asks it (port 53).
    pub addr: String,
}

impl Resolver {
    /// Starts the resolver in [`HOST`], forwarding to `ground` (the
    /// server's address), and returns once it listens.
    pub fn start(lab: &Lab, ground: &str, env: &[(String, String)], stop: &AtomicBool) -> Result<Resolver, String> {
        let host = lab.host(HOST).ok_or_else(|| format!("a resolver aboard needs a host named {HOST} (the ifc chain: topology = \"ifc\")"))?;
        let argv = [
            "dnsmasq".to_string(),
            "--keep-in-foreground".into(),
            "--conf-file=/dev/null".into(),
            "--no-resolv".into(),
            "--no-hosts".into(),
            format!("--server={ground}"),
            format!("--listen-address={}", host.ipv4),
            "--bind-interfaces".into(),
            format!("--cache-size={CACHE_SIZE}"),
            "--user=root".into(),
            "--pid-file".into(),
        ];
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        let mut child = netns_command(&host.netns, &refs, env).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| format!("dnsmasq (Debian's dnsmasq-base): {e}"))?;
        match wait_listening(&mut child, &[Port::Udp(53)], Duration::from_secs(15), || stop.load(Ordering::SeqCst) || lab.broken()) {
            Ok(()) => Ok(Resolver { child, addr: host.ipv4.clone() }),
            Err(e) => {
                let said = match e {
                    WaitError::Exited(st) => {
                        let mut text = String::new();
                        if let Some(mut err) = child.stderr.take() {
                            let _ = std::io::Read::read_to_string(&mut err, &mut text);
                        }
                        format!("dnsmasq exited ({st}): {}", text.lines().last().unwrap_or(""))
                    }
                    other => format!("dnsmasq did not listen on {}:53 ({other:?})", host.ipv4),
                };
                aerolink_net::procs::kill_process_group(&mut child, Duration::ZERO);
                Err(said)
            }
        }
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        aerolink_net::procs::kill_process_group(&mut self.child, Duration::ZERO);
    }
}
