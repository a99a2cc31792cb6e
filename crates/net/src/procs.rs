//! Programs running in a lab: which sockets their namespace has open (read
//! from `/proc/PID/net`, which shows the namespace of that process), and
//! stopping a program's whole process group.

use std::process::Child;
use std::time::{Duration, Instant};

/// The sockets open in the network namespace of a process.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Sockets {
    /// Local ports of listening TCP sockets (IPv4 and IPv6).
    pub tcp_listening: Vec<u16>,
    /// Local ports of bound UDP sockets (IPv4 and IPv6).
    pub udp_bound: Vec<u16>,
}

impl Sockets {
    pub fn listening_on(&self, port: u16) -> bool {
        self.tcp_listening.contains(&port)
    }
    /// Whether anything is ready to be talked to.
    pub fn any(&self) -> bool {
        !self.tcp_listening.is_empty() || !self.udp_bound.is_empty()
    }
    /// Whether every one of `ports` is open.
    pub fn has_all(&self, ports: &[Port]) -> bool {
        ports.iter().all(|p| match p {
            Port::Tcp(n) => self.tcp_listening.contains(n),
            Port::Udp(n) => self.udp_bound.contains(n),
        })
    }
}

/// A port a program is expected to open: a listening TCP socket or a bound
/// UDP socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    Tcp(u16),
    Udp(u16),
}

impl std::str::FromStr for Port {
    type Err = String;
    /// `5201` or `tcp:5201` (TCP), `udp:443`.
    fn from_str(s: &str) -> Result<Port, String> {
        let (proto, n) = s.split_once(':').unwrap_or(("tcp", s));
        let n: u16 = n.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| format!("\"{s}\": expected a port 1-65535, optionally tcp: or udp: (5201, udp:443)"))?;
        match proto.trim() {
            "tcp" => Ok(Port::Tcp(n)),
            "udp" => Ok(Port::Udp(n)),
            _ => Err(format!("\"{s}\": expected tcp: or udp: before the port")),
        }
    }
}

impl std::fmt::Display for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Port::Tcp(n) => write!(f, "tcp:{n}"),
            Port::Udp(n) => write!(f, "udp:{n}"),
        }
    }
}

/// Why a server was not ready.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The server exited before it listened.
    #[error("the server exited ({0}) before it listened")]
    Exited(std::process::ExitStatus),
    /// The ports (or, with none asked for, any socket) were not open in time.
    #[error("the server did not open {missing} within {after:?}")]
    NotOpen { missing: String, after: Duration },
    /// `stop` said to give up.
    #[error("interrupted while waiting for the server")]
    Stopped,
    /// The server's state could not be read.
    #[error("waiting for the server: {0}")]
    Io(#[from] std::io::Error),
}

/// Waits until the program `server` (started in a lab namespace) has every
/// one of `ports` open — or any socket at all when `ports` is empty —
/// polling its namespace's sockets every 5 ms. Gives up after `timeout`,
/// when the server exits, or as soon as `stop()` is true. The one way
/// aerolink waits for a server, so a client never starts before it listens
/// and no test or benchmark sleeps a fixed time instead.
pub fn wait_listening(server: &mut Child, ports: &[Port], timeout: Duration, stop: impl Fn() -> bool) -> Result<(), WaitError> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(st) = server.try_wait()? {
            return Err(WaitError::Exited(st));
        }
        let open = sockets(server.id());
        if if ports.is_empty() { open.any() } else { open.has_all(ports) } {
            return Ok(());
        }
        if stop() {
            return Err(WaitError::Stopped);
        }
        if Instant::now() >= deadline {
            let missing: Vec<String> = ports.iter().filter(|p| !open.has_all(&[**p])).map(|p| p.to_string()).collect();
            let missing = if ports.is_empty() { "any socket".to_string() } else { missing.join(", ") };
            return Err(WaitError::NotOpen { missing, after: timeout });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reads the sockets of `pid`'s namespace; empty if it is gone, or if it is
/// still in our own namespace: lab programs are started with `ip netns exec`,
/// which enters the lab's namespace only after it has started, and until then
/// `/proc/PID/net` shows the host's sockets (a host listener made the client
/// start before the server listened).
pub fn sockets(pid: u32) -> Sockets {
    let mut s = Sockets::default();
    let ns = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/net")).ok();
    match (ns(&pid.to_string()), ns("self")) {
        (Some(theirs), Some(ours)) if theirs != ours => {}
        _ => return s,
    }
    for file in ["tcp", "tcp6", "udp", "udp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{file}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let mut w = line.split_whitespace();
            let local = w.nth(1).unwrap_or("");
            let state = w.nth(1);
            let Some(port) = local.rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok()) else { continue };
            if file.starts_with("udp") {
                s.udp_bound.push(port);
            } else if state == Some("0A") {
                // "0A" is TCP_LISTEN.
                s.tcp_listening.push(port);
            }
        }
    }
    s
}

/// Stops a child started in its own process group (as
/// [`netns_command`](crate::lab::netns_command) starts them): SIGTERM and
/// up to `grace` to exit, then SIGKILL. With no grace, SIGKILL at once.
pub fn kill_process_group(child: &mut Child, grace: Duration) {
    let pgid = child.id() as i32;
    if grace > Duration::ZERO {
        // SAFETY: signalling a process group we created.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.wait();
}

/// Why [`nft_load`] failed.
#[derive(Debug)]
pub enum NftError {
    /// nft could not be started or fed (not installed, most likely).
    Start(String),
    /// nft refused the rules: its own message.
    Refused(String),
}

impl std::fmt::Display for NftError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NftError::Start(m) => write!(f, "nft: {m} (apt-get install nftables)"),
            NftError::Refused(m) => f.write_str(m),
        }
    }
}

/// Loads an nftables ruleset: `nft` is the command to run (`nft -f -`,
/// on the host or in a namespace), `rules` go to its standard input.
pub fn nft_load(mut nft: std::process::Command, rules: &str) -> Result<(), NftError> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = nft.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| NftError::Start(e.to_string()))?;
    child.stdin.take().expect("piped stdin").write_all(rules.as_bytes()).map_err(|e| NftError::Start(e.to_string()))?;
    let out = child.wait_with_output().map_err(|e| NftError::Start(e.to_string()))?;
    if !out.status.success() {
        return Err(NftError::Refused(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(())
}
