//! A flight log (the probe agent's JSON lines, which a user brings from an
//! aircraft), analysed and fitted as `aerolink analyze` and `fit` do.
#![no_main]
use aerolink_flight::probe::record::Record;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (mut records, mut bad) = (Vec::new(), 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Record>(line) {
            Ok(r) => records.push(r),
            Err(_) => bad += 1,
        }
    }
    records.sort_by_key(|r| r.n);
    let f = aerolink_flight::analysis::analyze(&records, bad, "fuzz", &aerolink_flight::analysis::Options::default());
    let _ = serde_json::to_string(&f);
    for window in [None, Some(10.0)] {
        let o = aerolink_flight::fit::Options { name: "fuzz".into(), stem: "fuzz".into(), outage_min_s: 10.0, source: "fuzz".into(), loss_trace_window_s: window };
        let _ = aerolink_flight::fit::fit(&records, &o);
    }
});
