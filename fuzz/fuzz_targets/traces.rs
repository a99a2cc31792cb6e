//! The trace files a profile names (Mahimahi delivery opportunities, delay
//! traces and series, empirical jitter samples, loss-rate traces), read
//! through the profile that names them, as `aerolink run` reads them.
#![no_main]
use aerolink_link::Profile;
use libfuzzer_sys::fuzz_target;

const KINDS: [&str; 5] = [
    "[link]\nrate = { trace = \"t\" }\n",
    "[link]\ndelay = { trace = \"t\" }\n",
    "[link]\ndelay = { trace = \"t\", every = \"10 ms\" }\n",
    "[link]\ndelay = \"100 ms\"\njitter = { dist = \"empirical\", file = \"t\" }\n",
    "[link]\nloss = { trace = \"t\", window = \"10 s\" }\n",
];

fuzz_target!(|data: &[u8]| {
    let Some((&k, rest)) = data.split_first() else { return };
    let Ok(file) = std::str::from_utf8(rest) else { return };
    let mut load = |_: &str| Ok::<String, String>(file.to_string());
    if let Ok(p) = Profile::parse(KINDS[k as usize % KINDS.len()], "fuzz.toml", &[], &mut load) {
        aerolink_fuzz::drive(&p);
    }
});
