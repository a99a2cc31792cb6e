//! End-to-end IP-in-UDP encapsulation between the client and the server —
//! the comparison mode of seed 001: with a VPN, the gateways see only UDP
//! between two addresses, so no PEP can act on the TCP inside.
//!
//! Each end runs one instance: a TUN device (`vpn0`, MTU 1400) with an
//! inner address (198.19.0.1 / 2001:2:0:ff::1 at the client, .2 / ::2 at
//! the server) and a UDP socket; every packet the kernel routes into
//! `vpn0` goes to the peer in one datagram (the TUN's virtio header
//! included, so checksums left to offload stay valid), and every datagram
//! from the peer is written back into `vpn0`. Datagrams from anyone but the
//! configured peer are dropped.
//!
//! It is not encrypted: the point is what the encapsulation does to the
//! path (PEPs bypassed, 38 bytes more per packet, a smaller MTU), not
//! secrecy; WireGuard adds 60 bytes and would behave alike.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{PepError, Result};
use aerolink_net::tun::Tun;
use serde::Serialize;

pub const DEVICE: &str = "vpn0";
pub const MTU: u32 = 1400;
pub const DEFAULT_PORT: u16 = 4500;
/// Inner addresses: the client's end is 1, the server's 2.
pub fn inner_v4(end: u8) -> String {
    format!("198.19.0.{end}")
}
pub fn inner_v6(end: u8) -> String {
    format!("2001:2:0:ff::{end}")
}

#[derive(Debug, Default, Serialize)]
pub struct Stats {
    pub packets_out: u64,
    pub packets_in: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub foreign_dropped: u64,
}

pub struct Options {
    /// 1 at the client, 2 at the server.
    pub end: u8,
    pub peer: SocketAddr,
    pub port: u16,
}

fn ip(args: &[&str]) -> Result<()> {
    let o = Command::new("ip").args(args).output().map_err(|e| PepError::Precondition(format!("ip: {e} (apt-get install iproute2)")))?;
    if !o.status.success() {
        return Err(PepError::Command { cmd: format!("ip {}", args.join(" ")), stderr: String::from_utf8_lossy(&o.stderr).trim().to_string() });
    }
    Ok(())
}

/// Brings the tunnel up, calls `ready`, and carries packets until `stop`
/// is set. The device disappears with the process.
pub fn run(opts: Options, stop: &AtomicBool, ready: impl FnOnce()) -> Result<Stats> {
    if opts.end != 1 && opts.end != 2 {
        return Err(PepError::Tuning("end must be 1 (client) or 2 (server)"));
    }
    let tun = Tun::create(DEVICE, false)?;
    ip(&["addr", "add", &format!("{}/24", inner_v4(opts.end)), "dev", DEVICE])?;
    ip(&["-6", "addr", "add", &format!("{}/64", inner_v6(opts.end)), "dev", DEVICE, "nodad"])?;
    ip(&["link", "set", DEVICE, "mtu", &MTU.to_string(), "multicast", "off", "up"])?;
    let bind: SocketAddr = if opts.peer.is_ipv4() { SocketAddr::from(([0, 0, 0, 0], opts.port)) } else { SocketAddr::from(([0u16; 8], opts.port)) };
    let udp = UdpSocket::bind(bind).map_err(|source| PepError::Sys { what: format!("binding UDP {bind}"), source })?;
    udp.set_nonblocking(true)?;
    ready();
    let mut st = Stats::default();
    let mut buf = vec![0u8; 65536];
    let mut fds = [libc::pollfd { fd: tun.raw(), events: libc::POLLIN, revents: 0 }, libc::pollfd { fd: udp.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
    while !stop.load(Ordering::SeqCst) {
        // SAFETY: two valid pollfds.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, 200) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e.into());
        }
        while let Some(len) = tun.read(&mut buf)? {
            // A full socket buffer drops the packet, as a router would.
            if udp.send_to(&buf[..len], opts.peer).is_ok() {
                st.packets_out += 1;
                st.bytes_out += len as u64;
            }
        }
        loop {
            match udp.recv_from(&mut buf) {
                Ok((len, from)) if from == opts.peer => {
                    if tun.write(&buf[..len]).is_ok() {
                        st.packets_in += 1;
                        st.bytes_in += len as u64;
                    }
                }
                Ok(_) => st.foreign_dropped += 1,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // ICMP errors surface here (peer not up yet): go on.
                Err(_) => break,
            }
        }
    }
    Ok(st)
}
