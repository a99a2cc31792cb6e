//! A frame from a TUN device (virtio-net header, then a packet or an
//! offloaded burst): described, every run of its segments rewritten, and
//! cut into finished packets, as the pump does for a shaping link. None of
//! it may panic, whatever the bytes, and every run written is one the
//! kernel would take (no `hdr_len` past its end).
#![no_main]
use aerolink_net::gso::{segment, Burst};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&split, frame)) = data.split_first() else { return };
    if let Some(b) = Burst::parse(frame) {
        let n = b.count();
        let total: u64 = (0..n).map(|i| b.segment_len(i) as u64).sum();
        assert!(total >= frame.len() as u64 - aerolink_net::tun::VNET_HDR_LEN as u64);
        let first = split as usize % n;
        let mut out = Vec::new();
        for (from, to) in [(first, n), (0, first + 1)] {
            b.write_run(frame, from, to, &mut out);
            // The kernel refuses a frame shorter than its header says.
            let hdr_len = u16::from_le_bytes([out[2], out[3]]) as usize;
            assert!(hdr_len <= out.len() - aerolink_net::tun::VNET_HDR_LEN);
        }
    }
    let _ = segment(frame);
});
