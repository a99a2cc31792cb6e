//! Traceroute without privileges: UDP datagrams with rising TTL from an
//! ordinary socket, and the ICMP errors they cause read from the socket's
//! error queue (`IP_RECVERR`), as Linux allows any user. TTLs go out in
//! rounds of [`ROUND`] at once (the next round when the previous one has
//! not reached the target), so the target answers at most a round's worth
//! of port-unreachable errors: hosts rate-limit ICMP per peer (Linux: a
//! burst of 6, then one a second), and a whole path's worth at once would
//! leave the nearest probe to reach it unanswered.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::record::Hop;

/// The first destination port (traceroute's).
const BASE_PORT: u16 = 33434;
/// TTLs sent at once.
const ROUND: u8 = 6;

fn setsockopt(fd: i32, level: i32, name: i32, value: i32) -> std::io::Result<()> {
    // SAFETY: a plain int option on a socket we own.
    let r = unsafe { libc::setsockopt(fd, level, name, &value as *const i32 as *const libc::c_void, std::mem::size_of::<i32>() as u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// One ICMP error from the queue: the TTL its probe carried (from the
/// payload), who sent it, and whether it came from the destination.
fn read_error(fd: i32, v6: bool) -> Option<(u8, Option<IpAddr>, bool)> {
    let mut payload = [0u8; 64];
    let mut iov = libc::iovec { iov_base: payload.as_mut_ptr() as *mut libc::c_void, iov_len: payload.len() };
    let mut control = [0u8; 512];
    // SAFETY: msghdr is plain data; the buffers outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = control.len();
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
    if n < 1 {
        return None;
    }
    let ttl = payload[0];
    // SAFETY: walking the control messages the kernel wrote into `control`.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !cmsg.is_null() {
        let c = unsafe { &*cmsg };
        let ours = (!v6 && c.cmsg_level == libc::SOL_IP && c.cmsg_type == libc::IP_RECVERR) || (v6 && c.cmsg_level == libc::SOL_IPV6 && c.cmsg_type == libc::IPV6_RECVERR);
        if ours {
            let ee = unsafe { &*(libc::CMSG_DATA(cmsg) as *const libc::sock_extended_err) };
            let offender = unsafe { (libc::CMSG_DATA(cmsg) as *const libc::sock_extended_err).add(1) as *const libc::sockaddr };
            let addr = match unsafe { (*offender).sa_family } as i32 {
                libc::AF_INET => {
                    let sin = unsafe { &*(offender as *const libc::sockaddr_in) };
                    Some(IpAddr::from(u32::from_be(sin.sin_addr.s_addr).to_be_bytes()))
                }
                libc::AF_INET6 => {
                    let sin6 = unsafe { &*(offender as *const libc::sockaddr_in6) };
                    Some(IpAddr::from(sin6.sin6_addr.s6_addr))
                }
                _ => None,
            };
            // Destination unreachable (port unreachable) means the probe got
            // there; time exceeded is a router on the way.
            let reached = if v6 { ee.ee_type == 1 } else { ee.ee_type == 3 };
            return Some((ttl, addr, reached));
        }
        cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
    }
    None
}

/// Traces the path to `target`: up to `max_hops`, waiting `timeout` for
/// answers. Hops that never answered have no address.
pub fn trace(target: IpAddr, max_hops: u8, timeout: Duration) -> std::io::Result<(Vec<Hop>, bool)> {
    let v6 = target.is_ipv6();
    let sock = if v6 { UdpSocket::bind("[::]:0")? } else { UdpSocket::bind("0.0.0.0:0")? };
    let fd = sock.as_raw_fd();
    if v6 {
        setsockopt(fd, libc::SOL_IPV6, libc::IPV6_RECVERR, 1)?;
    } else {
        setsockopt(fd, libc::SOL_IP, libc::IP_RECVERR, 1)?;
    }
    let mut sent: Vec<Instant> = Vec::new();
    let mut hops: Vec<Hop> = (1..=max_hops).map(|ttl| Hop { ttl, addr: None, rtt_ms: None }).collect();
    let mut reached_at: Option<u8> = None;
    let mut first = 1u8;
    while first <= max_hops && reached_at.is_none() {
        let last = first.saturating_add(ROUND - 1).min(max_hops);
        for ttl in first..=last {
            if v6 {
                setsockopt(fd, libc::SOL_IPV6, libc::IPV6_UNICAST_HOPS, ttl as i32)?;
            } else {
                setsockopt(fd, libc::SOL_IP, libc::IP_TTL, ttl as i32)?;
            }
            sent.push(Instant::now());
            // A send can fail with the error of an earlier probe (the queue
            // reports it); the probe is still sent or counted lost.
            let _ = sock.send_to(&[ttl; 32], SocketAddr::new(target, BASE_PORT + ttl as u16));
        }
        let deadline = Instant::now() + timeout;
        loop {
            while let Some((ttl, addr, reached)) = read_error(fd, v6) {
                if ttl == 0 || ttl as usize > sent.len() {
                    continue;
                }
                let h = &mut hops[ttl as usize - 1];
                if h.addr.is_none() {
                    h.addr = addr.map(|a| a.to_string());
                    h.rtt_ms = Some(sent[ttl as usize - 1].elapsed().as_secs_f64() * 1e3);
                }
                if reached {
                    reached_at = Some(reached_at.map_or(ttl, |r| r.min(ttl)));
                }
            }
            // This round is done when every hop of it (up to the target)
            // has answered.
            let upto = reached_at.unwrap_or(last) as usize;
            if hops[first as usize - 1..upto].iter().all(|h| h.addr.is_some()) {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let mut pfd = libc::pollfd { fd, events: 0, revents: 0 };
            // SAFETY: one pollfd we own; errors are reported as POLLERR.
            unsafe { libc::poll(&mut pfd, 1, left.as_millis().clamp(1, 1000) as i32) };
        }
        first = last.saturating_add(1);
        if last == max_hops {
            break;
        }
    }
    if let Some(r) = reached_at {
        hops.truncate(r as usize);
    } else {
        // Trailing silent hops say nothing: keep up to the last answer.
        let last = hops.iter().rposition(|h| h.addr.is_some()).map_or(0, |i| i + 1);
        hops.truncate(last);
    }
    Ok((hops, reached_at.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loopback is one hop: the port-unreachable error comes from the
    /// target itself (real sockets, no privileges, nothing leaves the host).
    #[test]
    fn loopback_is_reached_in_one_hop() {
        let (hops, reached) = trace("127.0.0.1".parse().unwrap(), 4, Duration::from_secs(5)).unwrap();
        assert!(reached, "{hops:?}");
        assert_eq!(hops.len(), 1, "{hops:?}");
        assert_eq!(hops[0].addr.as_deref(), Some("127.0.0.1"));
    }
}
