//! Kernel TCP knobs and counters: congestion control per socket, the
//! route's initial window, and what TCP_INFO reports.

use std::os::fd::AsRawFd;

use serde::{Deserialize, Serialize};

use crate::error::{Result, WorkError};

crate::choice! {
    /// Kernel TCP congestion controls this machine offers (set per socket).
    pub enum TcpCc { Reno = "reno", Cubic = "cubic", Bbr = "bbr" }
}

impl Default for TcpCc {
    /// What most of the Internet runs.
    fn default() -> Self {
        TcpCc::Cubic
    }
}

/// A TCP socket made in the network namespace open at `netns` (a
/// `/run/netns/NAME` file): a thread of its own enters the namespace
/// (`setns` moves only the calling thread) and ends there; the socket
/// stays in that namespace wherever it is used.
pub fn tcp_socket_in(netns: std::os::fd::RawFd, v6: bool) -> std::io::Result<tokio::net::TcpSocket> {
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: setns on this short-lived thread only; `netns` is an
            // open namespace file the caller keeps open.
            if unsafe { libc::setns(netns, libc::CLONE_NEWNET) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if v6 {
                tokio::net::TcpSocket::new_v6()
            } else {
                tokio::net::TcpSocket::new_v4()
            }
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the namespace thread panicked")))
    })
}

/// Sets TCP_CONGESTION on a socket (listening sockets pass it on).
pub fn set_congestion(sock: &impl AsRawFd, cc: TcpCc) -> std::io::Result<()> {
    let cc = cc.as_str();
    // SAFETY: a valid fd and a byte buffer with its length.
    let r = unsafe { libc::setsockopt(sock.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_ptr().cast(), cc.len() as libc::socklen_t) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The congestion control a socket really uses.
pub fn congestion(sock: &impl AsRawFd) -> String {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is valid for len bytes.
    let r = unsafe { libc::getsockopt(sock.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, buf.as_mut_ptr().cast(), &mut len) };
    if r != 0 {
        return "?".into();
    }
    String::from_utf8_lossy(&buf[..len as usize]).trim_end_matches('\0').to_string()
}

/// What TCP_INFO says about one connection.
#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
pub struct TcpCounters {
    pub retransmits: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Smoothed round-trip time the kernel estimates, µs.
    #[serde(default)]
    pub srtt_us: u64,
    /// The retransmission timeout now, µs, and how many times it has been
    /// doubled since the last acknowledgement (0: the Jacobson estimate
    /// from SRTT and RTTVAR itself).
    #[serde(default)]
    pub rto_us: u64,
    #[serde(default)]
    pub backoff: u8,
}

impl std::ops::AddAssign for TcpCounters {
    fn add_assign(&mut self, o: Self) {
        self.retransmits += o.retransmits;
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.srtt_us = self.srtt_us.max(o.srtt_us);
        self.rto_us = self.rto_us.max(o.rto_us);
        self.backoff = self.backoff.max(o.backoff);
    }
}

/// Reads TCP_INFO. Fields are at the kernel ABI's fixed offsets (they only
/// ever grow at the end): tcpi_backoff at 4, tcpi_rto at 8, tcpi_rtt at
/// 68, tcpi_total_retrans at 100,
/// tcpi_bytes_acked at 120, tcpi_bytes_received at 128, tcpi_bytes_sent at
/// 192.
pub fn counters(sock: &impl AsRawFd) -> TcpCounters {
    let mut buf = [0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is valid for len bytes.
    let r = unsafe { libc::getsockopt(sock.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr().cast(), &mut len) };
    if r != 0 {
        return TcpCounters::default();
    }
    let len = len as usize;
    let u32_at = |o: usize| if o + 4 <= len { u32::from_ne_bytes(buf[o..o + 4].try_into().expect("4 bytes")) as u64 } else { 0 };
    let u64_at = |o: usize| if o + 8 <= len { u64::from_ne_bytes(buf[o..o + 8].try_into().expect("8 bytes")) } else { 0 };
    TcpCounters { retransmits: u32_at(100), bytes_sent: u64_at(192), bytes_received: u64_at(128), srtt_us: u32_at(68), rto_us: u32_at(8), backoff: if len > 4 { buf[4] } else { 0 } }
}

/// Retransmission timeouts that expired in this process's network
/// namespace so far (`TcpExt: TCPTimeouts` of /proc/net/netstat, counted
/// per namespace); 0 where it cannot be read.
pub fn namespace_timeouts() -> u64 {
    std::fs::read_to_string("/proc/net/netstat").ok().and_then(|t| netstat_field(&t, "TcpExt:", "TCPTimeouts")).unwrap_or(0)
}

/// A field of /proc/net/netstat: a line of names after `prefix`, then a
/// line of values.
fn netstat_field(text: &str, prefix: &str, name: &str) -> Option<u64> {
    let mut lines = text.lines().filter(|l| l.starts_with(prefix));
    let (names, values) = (lines.next()?, lines.next()?);
    let i = names.split_whitespace().position(|n| n == name)?;
    values.split_whitespace().nth(i)?.parse().ok()
}

/// Sets an integer socket option at the TCP level.
fn set_tcp_opt(sock: &impl AsRawFd, opt: libc::c_int, v: libc::c_int) -> std::io::Result<()> {
    // SAFETY: a valid fd and a c_int with its size.
    let r = unsafe { libc::setsockopt(sock.as_raw_fd(), libc::IPPROTO_TCP, opt, (&v as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Caps the segment size this socket announces and sends (TCP_MAXSEG; set
/// before connecting).
pub fn set_mss(sock: &impl AsRawFd, bytes: u32) -> std::io::Result<()> {
    set_tcp_opt(sock, libc::TCP_MAXSEG, bytes as libc::c_int)
}

/// Acknowledges at once instead of delaying (TCP_QUICKACK; the kernel
/// clears it again, so set it after every read).
pub fn quick_ack(sock: &impl AsRawFd) -> std::io::Result<()> {
    set_tcp_opt(sock, libc::TCP_QUICKACK, 1)
}

/// Sets the initial congestion window (segments) on every unicast route
/// in this namespace, as `ip route … initcwnd N` does: the connected
/// subnet's route too, which is the one a peer on it is reached by (the
/// lab's /24 beside its /15: before 2026-11-27 only the /15 was set, so a
/// direct lab's server kept the kernel's 10).
pub fn set_route_initcwnd(segments: u32) -> Result<()> {
    set_route_windows(&["initcwnd", "initrwnd"], segments)
}

/// Sets only the initial receive window (segments) on every unicast route
/// in this namespace, as `ip route … initrwnd N` does: what a host's SYN
/// and first ACKs advertise before the window grows with the data (Linux
/// before 2.6.38 advertised 4 segments, 5840 B; since then 10 or more).
pub fn set_route_initrwnd(segments: u32) -> Result<()> {
    set_route_windows(&["initrwnd"], segments)
}

fn set_route_windows(keys: &[&str], segments: u32) -> Result<()> {
    let n = segments.to_string();
    let routes = unicast_routes(None)?;
    if !routes.iter().any(|r| r.0 == "-4") {
        return Err(WorkError::Route("no IPv4 route in this namespace".into()));
    }
    for (fam, spec) in routes {
        let mut args: Vec<&str> = vec![fam, "route", "change"];
        args.extend(spec.iter().map(String::as_str));
        for k in keys {
            args.extend([*k, n.as_str()]);
        }
        let st = std::process::Command::new("ip").args(&args).status()?;
        if !st.success() {
            return Err(WorkError::Route(format!("ip {} failed", args.join(" "))));
        }
    }
    Ok(())
}

/// The unicast routes in this namespace (both families), each as `ip
/// route show` gives it with what `ip route change` needs to find it again
/// (the metric, notably, for IPv6) and without the flags it prints but
/// does not take back, or an initial window already set; those leaving
/// through `except_iface` are left out.
pub fn unicast_routes(except_iface: Option<&str>) -> std::io::Result<Vec<(&'static str, Vec<String>)>> {
    let mut out = Vec::new();
    for fam in ["-4", "-6"] {
        let o = std::process::Command::new("ip").args([fam, "route", "show"]).output()?;
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            let dev = w.iter().skip_while(|x| **x != "dev").nth(1);
            match (w.first(), dev) {
                (Some(p), Some(d)) if Some(*d) != except_iface && !["local", "broadcast", "multicast", "unreachable"].contains(p) && !p.starts_with("fe80") => {
                    let mut spec = Vec::new();
                    let mut words = w.iter();
                    while let Some(x) = words.next() {
                        if ["initcwnd", "initrwnd"].contains(x) {
                            words.next();
                        } else if !["linkdown", "dead", "offload", "onlink", "rt_offload", "trap"].contains(x) {
                            spec.push(x.to_string());
                        }
                    }
                    out.push((fam, spec));
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_netstat_field_is_read_by_its_name() {
        let t = "TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes\nTcpExt: 0 7 3\nIpExt: InNoRoutes TCPTimeouts\nIpExt: 1 99\n";
        assert_eq!(super::netstat_field(t, "TcpExt:", "TCPTimeouts"), Some(7));
        assert_eq!(super::netstat_field(t, "TcpExt:", "Nothing"), None);
    }
}
