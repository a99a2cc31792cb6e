//! A profile file (TOML), then its two directions built and a few packets
//! driven through them in simulated time: what `--profile FILE` does.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| aerolink_fuzzing::profile(data));
