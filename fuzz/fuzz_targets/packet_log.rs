//! A packet log (`--log`), as `aerolink stats` reads it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = aerolink_net::log::summarize(data);
    if let Ok(text) = std::str::from_utf8(data) {
        for line in text.lines() {
            let _ = aerolink_net::log::parse_event(line);
        }
    }
});
