//! A frame from a TUN device (virtio-net header, then a packet or an
//! offloaded burst): described, every run of its segments rewritten, and
//! cut into finished packets, as the pump does for a shaping link. None of
//! it may panic, whatever the bytes.
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
        b.write_run(frame, first, n, &mut out);
        b.write_run(frame, 0, first + 1, &mut out);
    }
    let _ = segment(frame);
});
