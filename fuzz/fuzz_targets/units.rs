//! Values on the command line: rates, durations, probabilities, sizes,
//! netem's option strings and Mahimahi's queue arguments.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| aerolink_fuzzing::units(data));
