//! The trace files a profile names (Mahimahi delivery opportunities, delay
//! traces and series, empirical jitter samples, loss-rate traces), read
//! through the profile that names them, as `aerolink run` reads them.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| aerolink_fuzzing::traces(data));
