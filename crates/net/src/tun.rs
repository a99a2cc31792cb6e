//! TUN devices with a virtio-net header, opened inside a namespace.
//!
//! The header lets the kernel hand us packets with checksums still to be
//! filled in (we pass the header through, so nobody computes them on the
//! way), and segmentation-offload bursts of up to 64 KB — TCP (TSO) and,
//! on Linux 6.2 and later, UDP (USO: a QUIC stack's `UDP_SEGMENT` sends) —
//! which is what makes multi-Gbit/s links possible on two cores: passed
//! whole where the link cannot tell a burst from its segments, cut into
//! segments by the pump where it shapes ([`crate::gso`]).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::sys::cstring;
use crate::NetError;

/// Size of `struct virtio_net_hdr` (no mergeable buffers).
pub const VNET_HDR_LEN: usize = 10;

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
const TUN_F_CSUM: libc::c_uint = 0x01;
const TUN_F_TSO4: libc::c_uint = 0x02;
const TUN_F_TSO6: libc::c_uint = 0x04;
const TUN_F_USO4: libc::c_uint = 0x20;
const TUN_F_USO6: libc::c_uint = 0x40;

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

pub struct Tun {
    fd: OwnedFd,
    pub name: String,
}

impl Tun {
    /// Creates TUN device `name` in the calling thread's namespace. With
    /// `segmentation_offload`, the kernel may hand over 64 KB TCP bursts,
    /// and UDP ones where it can (USO; a kernel before 6.2 refuses it and
    /// segments UDP itself, as before).
    pub fn create(name: &str, segmentation_offload: bool) -> Result<Tun, NetError> {
        let path = cstring("/dev/net/tun");
        // SAFETY: a valid C string and flags.
        let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(NetError::Io("open /dev/net/tun".into(), std::io::Error::last_os_error()));
        }
        // SAFETY: raw is a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = IfReq { name: [0; libc::IFNAMSIZ], flags: IFF_TUN | IFF_NO_PI | IFF_VNET_HDR, _pad: [0; 22] };
        for (i, b) in name.bytes().take(libc::IFNAMSIZ - 1).enumerate() {
            req.name[i] = b as libc::c_char;
        }
        // SAFETY: TUNSETIFF reads an ifreq we own.
        if unsafe { libc::ioctl(raw, TUNSETIFF, &mut req as *mut IfReq) } < 0 {
            return Err(NetError::Io(format!("TUNSETIFF {name}"), std::io::Error::last_os_error()));
        }
        let mut offload = TUN_F_CSUM;
        if segmentation_offload {
            offload |= TUN_F_TSO4 | TUN_F_TSO6;
        }
        // SAFETY: TUNSETOFFLOAD takes the flags by value.
        let set = |flags: libc::c_uint| unsafe { libc::ioctl(raw, TUNSETOFFLOAD, flags as libc::c_ulong) };
        if !(segmentation_offload && set(offload | TUN_F_USO4 | TUN_F_USO6) == 0) && set(offload) < 0 {
            return Err(NetError::Io(format!("TUNSETOFFLOAD {name}"), std::io::Error::last_os_error()));
        }
        Ok(Tun { fd, name: name.to_string() })
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Reads one packet (header included); `Ok(None)` when none is waiting.
    pub fn read(&self, buf: &mut [u8]) -> Result<Option<usize>, std::io::Error> {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::read(self.raw(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(n as usize))
    }

    /// Writes one packet (header included).
    pub fn write(&self, buf: &[u8]) -> Result<(), std::io::Error> {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::write(self.raw(), buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}
