//! Receive times from the kernel (`SO_TIMESTAMPNS`): when a datagram
//! reached the socket, not when the program woke up to read it. On a busy
//! machine (a laptop aboard, a CI host) a wake-up can come milliseconds
//! late, and a one-way delay stamped in user space carries that delay; the
//! kernel's stamp does not. Wall-clock nanoseconds since the Unix epoch,
//! as [`aerolink_work::clock::now_ns`]; where the kernel gives no stamp,
//! that clock read after the datagram.

use std::io;
use std::mem::{size_of, size_of_val, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::AsRawFd;

use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Asks the kernel to stamp every datagram `sock` receives.
pub fn enable(sock: &UdpSocket) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket, an int option of the right size.
    let r = unsafe { libc::setsockopt(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, (&on as *const libc::c_int).cast(), size_of::<libc::c_int>() as libc::socklen_t) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One datagram: its length, its sender and when it arrived (ns since the
/// epoch: the kernel's stamp if [`enable`]d, else the clock now).
pub async fn recv_from(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, u64)> {
    loop {
        sock.readable().await?;
        match sock.try_io(Interest::READABLE, || recvmsg(sock.as_raw_fd(), buf)) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

fn recvmsg(fd: i32, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, u64)> {
    // SAFETY: plain C structs, zero is a valid value for each.
    let mut addr: libc::sockaddr_storage = unsafe { zeroed() };
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // Room for one timespec control message, aligned as cmsghdr wants.
    let mut control = [0u64; 8];
    // SAFETY: as above.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control) as _;
    // SAFETY: every pointer in `msg` points at a live buffer of the size given.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut at = None;
    // SAFETY: the kernel filled `msg`'s control buffer; the CMSG macros walk
    // it within msg_controllen, and a timestamp message holds a timespec.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                at = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let from = socket_addr(&addr).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a datagram from an address that is neither IPv4 nor IPv6"))?;
    Ok((n as usize, from, at.unwrap_or_else(aerolink_work::clock::now_ns)))
}

fn socket_addr(a: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match a.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let v4: &libc::sockaddr_in = unsafe { &*(a as *const libc::sockaddr_storage).cast() };
            Some(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr)), u16::from_be(v4.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let v6: &libc::sockaddr_in6 = unsafe { &*(a as *const libc::sockaddr_storage).cast() };
            Some(SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(v6.sin6_addr.s6_addr), u16::from_be(v6.sin6_port), v6.sin6_flowinfo, v6.sin6_scope_id)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On loopback, a datagram sent while the receiver is not reading is
    /// stamped when it arrived, not when it is read: read 30 ms later, its
    /// stamp is within a few ms of the send, and the sender's address and
    /// the bytes come back as sent (IPv4 and IPv6). The kernel turns
    /// stamping on host-wide a moment after the first socket asks (a
    /// deferred work item; until then a datagram is stamped when read), so
    /// a datagram may be tried up to five times.
    #[tokio::test]
    async fn the_stamp_is_the_arrival_not_the_read() {
        for (any, lo) in [("127.0.0.1:0", "127.0.0.1:0"), ("[::1]:0", "[::1]:0")] {
            let Ok(rx) = UdpSocket::bind(any).await else { continue };
            enable(&rx).unwrap();
            let tx = UdpSocket::bind(lo).await.unwrap();
            let mut tries = Vec::new();
            for _ in 0..5 {
                let sent = aerolink_work::clock::now_ns();
                tx.send_to(b"probe", rx.local_addr().unwrap()).await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(30)).await;
                let read = aerolink_work::clock::now_ns();
                let mut buf = [0u8; 64];
                let (n, from, at) = recv_from(&rx, &mut buf).await.unwrap();
                assert_eq!((&buf[..n], from), (&b"probe"[..], tx.local_addr().unwrap()));
                tries.push(((at as f64 - sent as f64) / 1e6, (read as f64 - at as f64) / 1e6));
                if at >= sent && at < sent + 10_000_000 && read - at >= 25_000_000 {
                    break;
                }
            }
            let (after_send, before_read) = *tries.last().unwrap();
            assert!(after_send < 10.0 && before_read >= 25.0, "{any}: stamped at the read, not the arrival (ms after the send, before the read): {tries:?}");
        }
    }
}
