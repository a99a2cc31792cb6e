//! Values on the command line: rates, durations, probabilities, sizes,
//! netem's option strings and Mahimahi's queue arguments.
#![no_main]
use aerolink_link::profile::foreign;
use aerolink_link::units;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = units::parse_rate(s).map(|r| r.to_string());
    let _ = units::parse_duration(s);
    let _ = units::parse_probability(s);
    let _ = units::parse_size(s);
    let _ = foreign::netem(s);
    let (kind, args) = s.split_once(' ').unwrap_or((s, ""));
    let _ = foreign::mahimahi_queue(kind, Some(args));
});
