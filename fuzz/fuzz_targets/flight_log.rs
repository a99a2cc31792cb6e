//! A flight log (the probe agent's JSON lines, which a user brings from an
//! aircraft), analysed and fitted as `aerolink analyze` and `fit` do.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| aerolink_fuzzing::flight_log(data));
