//! A profile file (TOML), then its two directions built and a few packets
//! driven through them in simulated time: what `--profile FILE` does.
#![no_main]
use aerolink_link::Profile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut load = |_: &str| Err::<String, String>("no files in the fuzzer".into());
    if let Ok(p) = Profile::parse(text, "fuzz.toml", &[], &mut load) {
        aerolink_fuzz::drive(&p);
    }
});
