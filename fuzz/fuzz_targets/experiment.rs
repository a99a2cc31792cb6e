//! An experiment file (TOML), parsed and planned.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(e) = aerolink_experiments::experiment::Experiment::parse(text, "fuzz.toml") {
        let _ = e.plan();
    }
});
