//! What the QUIC tunnel reads from the network before and after
//! authentication: the screening of datagrams on its port (and the key
//! gate on Initials), and the header of each tunnelled stream.
#![no_main]
use aerolink_pep::quic_tunnel::{screening, wire, Psk};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = screening::not_quic(data);
    if let Some(dcid) = screening::initial_dcid(data) {
        let psk = Psk::parse("00112233445566778899aabbccddeeff").expect("a valid key");
        let _ = psk.check_initial_dcid(dcid, 1_800_000_000);
    }
    let _ = wire::decode_dest(data);
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = Psk::parse(s);
    }
});
