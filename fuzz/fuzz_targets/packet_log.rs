//! A packet log (`--log`), as `aerolink stats` reads it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| aerolink_fuzzing::packet_log(data));
