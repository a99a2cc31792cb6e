//! An experiment file (TOML), parsed and planned.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| aerolink_fuzzing::experiment(data));
