//! Segmentation-offload bursts (TCP and UDP) through shaped links.
//!
//! A TUN device with a virtio-net header and TSO on hands the pump TCP
//! bursts of up to 64 KB: one IP header, one TCP header, and the payload of
//! many segments, with `gso_size` saying how long each is. With USO on, a
//! UDP socket's `UDP_SEGMENT` sends (what QUIC stacks such as quinn do)
//! arrive the same way: one IP and UDP header and up to 64 datagrams'
//! payloads. A link that
//! shapes (rate, loss, jitter, outages) must treat every segment as the
//! packet it will be on the wire, so the pump describes a burst segment by
//! segment ([`Burst::parse`], [`Burst::segment_len`]: the sizes the kernel
//! would have cut it into) and hands the stages one packet per segment —
//! the same sizes and the same decisions as packet by packet. What leaves
//! together is written back as one frame: any run of consecutive segments
//! ([`Burst::write_run`]) becomes a burst of its own, or a single packet,
//! with the headers the kernel's segmentation gives those segments: IP
//! lengths, IPv4 identification (one more per segment) and header checksum,
//! for TCP the sequence number, CWR only on the first segment of the burst,
//! FIN and PSH only on its last, for UDP the length; and the pseudo-header
//! sum of the new length in the checksum field (the receiving stack or
//! device completes it, as for every frame with `NEEDS_CSUM`).
//!
//! [`segment`] cuts a frame into finished packets with full checksums, as a
//! device would: the tests compare its output with packets built
//! independently.

use crate::tun::VNET_HDR_LEN;

/// `virtio_net_hdr.flags`: the checksum at `csum_start + csum_offset` is
/// partial (the pseudo-header sum); the rest is still to be added.
pub const F_NEEDS_CSUM: u8 = 1;
/// `virtio_net_hdr.gso_type` values.
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_TCPV6: u8 = 4;
/// `VIRTIO_NET_HDR_GSO_UDP_L4`: UDP datagrams of `gso_size` bytes each
/// (the last may be shorter), IPv4 or IPv6.
pub const GSO_UDP_L4: u8 = 5;
pub const GSO_ECN: u8 = 0x80;

const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;

/// What a burst carries: TCP segments or UDP datagrams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum L4 {
    Tcp,
    Udp,
}

impl L4 {
    /// The IP protocol number.
    fn proto(self) -> u8 {
        match self {
            L4::Tcp => IPPROTO_TCP,
            L4::Udp => IPPROTO_UDP,
        }
    }
}

/// The shape of one offloaded TCP or UDP burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Burst {
    v6: bool,
    l4: L4,
    /// IP header length.
    ip_len: usize,
    /// IP and TCP (or UDP) headers.
    hdr_len: usize,
    /// Payload bytes per segment or datagram (`gso_size`).
    mss: usize,
    /// Payload bytes of the whole burst.
    payload: usize,
    count: usize,
}

impl Burst {
    /// The burst in `frame` (virtio-net header, then the IP packet): `None`
    /// unless it is a TCP or UDP burst of at least two segments whose
    /// headers we can rewrite (IPv4, or IPv6 without extension headers;
    /// partial checksum).
    pub fn parse(frame: &[u8]) -> Option<Burst> {
        let v = frame.get(..VNET_HDR_LEN)?;
        let kind = v[1] & !GSO_ECN;
        let l4 = match kind {
            GSO_TCPV4 | GSO_TCPV6 => L4::Tcp,
            GSO_UDP_L4 => L4::Udp,
            _ => return None,
        };
        if v[0] & F_NEEDS_CSUM == 0 {
            return None;
        }
        let mss = u16::from_le_bytes([v[4], v[5]]) as usize;
        let ip = &frame[VNET_HDR_LEN..];
        let (v6, ip_len, proto) = match ip.first()? >> 4 {
            4 => (false, (ip[0] & 0x0f) as usize * 4, *ip.get(9)?),
            6 => (true, 40, *ip.get(6)?),
            _ => return None,
        };
        if proto != l4.proto() || ip_len < 20 || mss == 0 {
            return None;
        }
        let l4_len = match l4 {
            L4::Udp => 8,
            L4::Tcp => (*ip.get(ip_len + 12)? >> 4) as usize * 4,
        };
        let hdr_len = ip_len + l4_len;
        if (l4 == L4::Tcp && l4_len < 20) || ip.len() <= hdr_len {
            return None;
        }
        let payload = ip.len() - hdr_len;
        let count = payload.div_ceil(mss);
        (count >= 2).then_some(Burst { v6, l4, ip_len, hdr_len, mss, payload, count })
    }

    /// How many segments the burst holds.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Segment `i`'s size on the wire (IP packet), bytes.
    pub fn segment_len(&self, i: usize) -> u32 {
        (self.hdr_len + self.mss.min(self.payload - i * self.mss)) as u32
    }

    /// Writes segments `first..end` of the burst in `frame` to `out` as one
    /// frame: a burst again when it holds two or more, a packet when one.
    pub fn write_run(&self, frame: &[u8], first: usize, end: usize, out: &mut Vec<u8>) {
        assert!(first < end && end <= self.count, "segments {first}..{end} of {}", self.count);
        let ip = &frame[VNET_HDR_LEN..];
        let from = self.hdr_len + first * self.mss;
        let to = (self.hdr_len + end * self.mss).min(ip.len());
        out.clear();
        out.extend_from_slice(&frame[..VNET_HDR_LEN + self.hdr_len]);
        out.extend_from_slice(&ip[from..to]);
        // `hdr_len` as read is the linear part of the kernel's buffer, which
        // for a burst forwarded by a router can hold payload and be longer
        // than this run: the kernel refuses a frame shorter than its
        // `hdr_len` (EINVAL). The run's headers are what it is.
        out[2..4].copy_from_slice(&(self.hdr_len as u16).to_le_bytes());
        if end - first == 1 {
            // One segment: a packet, its checksum still partial.
            out[1] = GSO_NONE;
            out[4..6].fill(0);
        }
        let p = &mut out[VNET_HDR_LEN..];
        let l4_bytes = self.hdr_len - self.ip_len + (to - from);
        if self.v6 {
            p[4..6].copy_from_slice(&(l4_bytes as u16).to_be_bytes());
        } else {
            p[2..4].copy_from_slice(&((self.ip_len + l4_bytes) as u16).to_be_bytes());
            let id = u16::from_be_bytes([p[4], p[5]]).wrapping_add(first as u16);
            p[4..6].copy_from_slice(&id.to_be_bytes());
            p[10..12].fill(0);
            let sum = !fold(add_bytes(0, &p[..self.ip_len]));
            p[10..12].copy_from_slice(&sum.to_be_bytes());
        }
        let pseudo = pseudo_header_sum(p, self.v6, self.l4.proto(), l4_bytes);
        let t = &mut p[self.ip_len..];
        if self.l4 == L4::Udp {
            t[4..6].copy_from_slice(&(l4_bytes as u16).to_be_bytes());
            t[6..8].copy_from_slice(&fold(pseudo).to_be_bytes());
            return;
        }
        let seq = u32::from_be_bytes([t[4], t[5], t[6], t[7]]).wrapping_add((first * self.mss) as u32);
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        if first > 0 {
            t[13] &= !TCP_CWR;
        }
        if end < self.count {
            t[13] &= !(TCP_FIN | TCP_PSH);
        }
        t[16..18].copy_from_slice(&fold(pseudo).to_be_bytes());
    }
}

/// The one's-complement sum of the pseudo-header of a TCP segment or UDP
/// datagram (`proto`) of `l4_bytes` in the IP packet `ip`.
fn pseudo_header_sum(ip: &[u8], v6: bool, proto: u8, l4_bytes: usize) -> u32 {
    if v6 {
        let s = add_bytes(0, &ip[8..40]);
        s + (l4_bytes as u32 >> 16) + (l4_bytes as u32 & 0xffff) + proto as u32
    } else {
        add_bytes(0, &ip[12..20]) + proto as u32 + l4_bytes as u32
    }
}

/// Adds `bytes` as big-endian 16-bit words to a one's-complement sum
/// (unfolded).
fn add_bytes(mut sum: u32, bytes: &[u8]) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    for c in &mut chunks {
        sum = sum.wrapping_add(u16::from_be_bytes([c[0], c[1]]) as u32);
        if sum >= 0x8000_0000 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
    }
    if let [b] = chunks.remainder() {
        sum = sum.wrapping_add((*b as u32) << 8);
    }
    sum
}

/// Folds a one's-complement sum to 16 bits.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Cuts `frame` (virtio-net header, then a packet or a burst) into the
/// packets a device would send, checksums completed: what the far stack
/// receives.
pub fn segment(frame: &[u8]) -> Vec<Vec<u8>> {
    if frame.len() < VNET_HDR_LEN {
        return Vec::new();
    }
    let mut frames = Vec::new();
    match Burst::parse(frame) {
        Some(b) => {
            for i in 0..b.count() {
                let mut out = Vec::new();
                b.write_run(frame, i, i + 1, &mut out);
                frames.push(out);
            }
        }
        None => frames.push(frame.to_vec()),
    }
    frames
        .into_iter()
        .map(|mut f| {
            let start = u16::from_le_bytes([f[6], f[7]]) as usize + VNET_HDR_LEN;
            let at = start + u16::from_le_bytes([f[8], f[9]]) as usize;
            // A checksum field outside the frame is left alone (the kernel
            // refuses such a frame).
            if f[0] & F_NEEDS_CSUM != 0 && at + 2 <= f.len() {
                let mut sum = !fold(add_bytes(0, &f[start..]));
                // UDP sends a computed 0 as all ones (0 means none).
                if sum == 0 && is_udp(&f[VNET_HDR_LEN..]) {
                    sum = 0xffff;
                }
                f[at..at + 2].copy_from_slice(&sum.to_be_bytes());
            }
            f.split_off(VNET_HDR_LEN)
        })
        .collect()
}

/// Whether the IP packet `ip` (no extension headers) carries UDP.
fn is_udp(ip: &[u8]) -> bool {
    match ip.first().map(|b| b >> 4) {
        Some(4) => ip.get(9) == Some(&IPPROTO_UDP),
        Some(6) => ip.get(6) == Some(&IPPROTO_UDP),
        _ => false,
    }
}

/// The TCP checksum a packet `ip` (IPv4 or IPv6, no extension headers)
/// should carry, computed from scratch: for tests and checks.
pub fn tcp_checksum(ip: &[u8]) -> u16 {
    let v6 = ip[0] >> 4 == 6;
    let ip_len = if v6 { 40 } else { (ip[0] & 0x0f) as usize * 4 };
    let tcp = &ip[ip_len..];
    let mut sum = pseudo_header_sum(ip, v6, IPPROTO_TCP, tcp.len());
    sum = add_bytes(sum, &tcp[..16]);
    sum = add_bytes(sum, &tcp[18..]);
    !fold(sum)
}

/// The IPv4 header checksum `ip` should carry.
pub fn ipv4_header_checksum(ip: &[u8]) -> u16 {
    let ip_len = (ip[0] & 0x0f) as usize * 4;
    !fold(add_bytes(add_bytes(0, &ip[..10]), &ip[12..ip_len]))
}

/// `AEROLINK_PACKET_BY_PACKET=1` turns segmentation offload off on every
/// lab's TUN devices, as [`crate::lab::LabSpec::packet_by_packet`] does for one.
pub fn packet_by_packet_from_env() -> bool {
    std::env::var("AEROLINK_PACKET_BY_PACKET").is_ok_and(|v| v == "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_the_kernel_would_refuse_are_cut_without_a_panic() {
        // Found by the fuzzer: a NEEDS_CSUM frame whose checksum field lies
        // outside it, and frames shorter than the virtio-net header.
        let mut frame = vec![F_NEEDS_CSUM, GSO_NONE, 0x28, 0, 0x9c, 0xfe, 0xff, 0xff, 0xff, 0xff];
        frame.extend_from_slice(&[0xff; 30]);
        assert_eq!(segment(&frame), vec![frame[VNET_HDR_LEN..].to_vec()]);
        assert!(segment(&[1, 1, 0]).is_empty());
        assert_eq!(Burst::parse(&frame), None);
    }

    #[test]
    fn a_tcp_header_shorter_than_20_bytes_is_no_burst() {
        // Found by the fuzzer (fuzz/regressions/gso): a TCP burst whose
        // data offset says 8 bytes (a UDP header's length) would be cut
        // with flags read past its header.
        let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 6, 0, 0, 198, 18, 0, 1, 198, 18, 1, 1];
        ip.extend_from_slice(&[0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 2 << 4, 0x18]);
        ip.extend_from_slice(&[7u8; 100]);
        let mut frame = vec![F_NEEDS_CSUM, GSO_TCPV4, 28, 0, 30, 0, 20, 0, 16, 0];
        frame.extend_from_slice(&ip);
        assert_eq!(Burst::parse(&frame), None);
        // The same bytes as UDP (8-byte header) are a burst of 4.
        frame[1] = GSO_UDP_L4;
        frame[VNET_HDR_LEN + 9] = IPPROTO_UDP;
        assert_eq!(Burst::parse(&frame).map(|b| b.count()), Some(4));
    }

    #[test]
    fn a_partial_checksum_is_the_pseudo_header_sum_of_the_new_length() {
        // A 3-segment IPv4 burst: the first segment alone carries the sum
        // for its own length, which completes to the full checksum.
        let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 6, 0, 0, 198, 18, 0, 1, 198, 18, 1, 1];
        let mut tcp = vec![0u8; 20];
        tcp[12] = 5 << 4;
        tcp[13] = 0x18;
        let payload: Vec<u8> = (0..250u32).map(|i| i as u8).collect();
        let total = (20 + 20 + payload.len()) as u16;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        let full_tcp = 20 + payload.len();
        let mut probe = ip.clone();
        probe.extend_from_slice(&tcp);
        let partial = fold(pseudo_header_sum(&probe, false, IPPROTO_TCP, full_tcp));
        tcp[16..18].copy_from_slice(&partial.to_be_bytes());
        let mut frame = vec![F_NEEDS_CSUM, GSO_TCPV4, 40, 0, 100, 0, 20, 0, 16, 0];
        frame.extend_from_slice(&ip);
        frame.extend_from_slice(&tcp);
        frame.extend_from_slice(&payload);
        let b = Burst::parse(&frame).expect("a burst");
        assert_eq!((b.count(), b.segment_len(0), b.segment_len(2)), (3, 140, 90));
        let packets = segment(&frame);
        assert_eq!(packets.len(), 3);
        for p in &packets {
            assert_eq!(u16::from_be_bytes([p[36], p[37]]), tcp_checksum(p));
            assert_eq!(u16::from_be_bytes([p[10], p[11]]), ipv4_header_checksum(p));
        }
    }

    #[test]
    fn a_run_says_its_own_header_length_not_the_linear_part_read() {
        // A burst forwarded by a router comes with `hdr_len` = the linear
        // part of the kernel's buffer (here 240 bytes, payload included)
        // and the ECN bit in its GSO type. The kernel refuses a frame
        // shorter than its `hdr_len`, so a cut run must say 40.
        let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 6, 0, 0, 198, 18, 0, 1, 198, 18, 1, 1];
        ip[2..4].copy_from_slice(&(20u16 + 20 + 300).to_be_bytes());
        ip.extend_from_slice(&[0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 5 << 4, 0x18, 0, 0, 0, 0, 0, 0]);
        ip.extend_from_slice(&[7u8; 300]);
        let mut frame = vec![F_NEEDS_CSUM, GSO_TCPV4 | GSO_ECN, 240, 0, 100, 0, 20, 0, 16, 0];
        frame.extend_from_slice(&ip);
        let b = Burst::parse(&frame).expect("a burst");
        assert_eq!(b.count(), 3);
        let mut out = Vec::new();
        for (first, end, gso_type) in [(0, 1, GSO_NONE), (1, 3, GSO_TCPV4 | GSO_ECN), (2, 3, GSO_NONE)] {
            b.write_run(&frame, first, end, &mut out);
            let hdr_len = u16::from_le_bytes([out[2], out[3]]) as usize;
            assert_eq!((out[1], hdr_len), (gso_type, 40), "run {first}..{end}");
            assert!(hdr_len <= out.len() - VNET_HDR_LEN);
        }
    }

    #[test]
    fn the_fuzz_seeds_are_bursts_of_each_kind() {
        // fuzz/corpus/gso starts the fuzzer from a TCP burst and UDP bursts
        // over IPv4 and IPv6, so the smoke run reaches both branches from
        // the first input, not only by mutation.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/gso");
        let mut kinds = std::collections::BTreeSet::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let data = std::fs::read(e.unwrap().path()).unwrap();
            let b = Burst::parse(&data[1..]).expect("every seed is a burst");
            assert!(b.count() > 1);
            kinds.insert((b.l4 == L4::Udp, data[VNET_HDR_LEN + 1] >> 4));
        }
        assert_eq!(kinds.into_iter().collect::<Vec<_>>(), vec![(false, 4), (true, 4), (true, 6)]);
    }
}
