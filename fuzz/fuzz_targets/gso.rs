//! A frame from a TUN device (virtio-net header, then a packet or an
//! offloaded burst): described, every run of its segments rewritten, and
//! cut into finished packets, as the pump does for a shaping link. None of
//! it may panic, whatever the bytes, and every run written is one the
//! kernel would take (no `hdr_len` past its end).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| aerolink_fuzzing::gso(data));
