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
    /// Whether any UDP socket is bound.
    pub udp_bound: bool,
}

impl Sockets {
    pub fn listening_on(&self, port: u16) -> bool {
        self.tcp_listening.contains(&port)
    }
    /// Whether anything is ready to be talked to.
    pub fn any(&self) -> bool {
        !self.tcp_listening.is_empty() || self.udp_bound
    }
}

/// Reads the sockets of `pid`'s namespace; empty if it is gone.
pub fn sockets(pid: u32) -> Sockets {
    let mut s = Sockets::default();
    for file in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{file}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let mut w = line.split_whitespace();
            let local = w.nth(1).unwrap_or("");
            // "0A" is TCP_LISTEN.
            if w.nth(1) == Some("0A") {
                if let Some(port) = local.rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok()) {
                    s.tcp_listening.push(port);
                }
            }
        }
    }
    s.udp_bound = ["udp", "udp6"].iter().any(|f| std::fs::read_to_string(format!("/proc/{pid}/net/{f}")).map(|t| t.lines().count() > 1).unwrap_or(false));
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
