//! What the QUIC tunnel reads from the network before and after
//! authentication: the screening of datagrams on its port (and the key
//! gate on Initials), and the header of each tunnelled stream.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| aerolink_fuzzing::tunnel(data));
