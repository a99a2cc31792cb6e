//! The bodies of the fuzz targets: every parser that reads outside input,
//! driven the way the program drives it (a parsed profile is built and
//! packets pass through it; a parsed experiment is planned; a flight log
//! is analysed and fitted). Each takes any bytes and must not panic.
//!
//! Two harnesses call them: `fuzz/` (cargo fuzz, libFuzzer, coverage
//! guided, nightly Rust: `make fuzz`) and `tests/replay.rs` (stable, in
//! `make test`: every kept crash input and seed, then seeded mutations of
//! the seeds). [`TARGETS`] lists them by the name both use.
use aerolink_link::profile::foreign;
use aerolink_link::{units, Duration, Instant, Pipeline, Profile};

/// A target: any bytes in; it must not panic.
pub type Target = fn(&[u8]);

/// Every target by name: the name is its folder under `fuzz/corpus/` and
/// `fuzz/regressions/` and its binary in `fuzz/fuzz_targets/`.
pub const TARGETS: [(&str, Target); 9] = [
    ("profile", profile),
    ("traces", traces),
    ("units", units),
    ("packet_log", packet_log),
    ("topology", topology),
    ("experiment", experiment),
    ("flight_log", flight_log),
    ("tunnel", tunnel),
    ("gso", gso),
];

/// A profile file (TOML), then its two directions built and a few
/// packets driven through them in simulated time: what `--profile FILE`
/// does.
pub fn profile(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut load = |_: &str| Err::<String, String>("no files in the fuzzer".into());
    if let Ok(p) = Profile::parse(text, "fuzz.toml", &[], &mut load) {
        drive(&p);
    }
}

/// Trace files of each kind a profile can name (the first byte picks the
/// kind, the rest is the file), then the profile driven.
pub fn traces(data: &[u8]) {
    const KINDS: [&str; 5] = [
        "[link]\nrate = { trace = \"t\" }\n",
        "[link]\ndelay = { trace = \"t\" }\n",
        "[link]\ndelay = { trace = \"t\", every = \"10 ms\" }\n",
        "[link]\ndelay = \"100 ms\"\njitter = { dist = \"empirical\", file = \"t\" }\n",
        "[link]\nloss = { trace = \"t\", window = \"10 s\" }\n",
    ];
    let Some((&k, rest)) = data.split_first() else { return };
    let Ok(file) = std::str::from_utf8(rest) else { return };
    let mut load = |_: &str| Ok::<String, String>(file.to_string());
    if let Ok(p) = Profile::parse(KINDS[k as usize % KINDS.len()], "fuzz.toml", &[], &mut load) {
        drive(&p);
    }
}

/// Rates, durations, probabilities and sizes as flags and files write
/// them, and netem's and Mahimahi's command lines.
pub fn units(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = units::parse_rate(s).map(|r| r.to_string());
    let _ = units::parse_duration(s);
    let _ = units::parse_probability(s);
    let _ = units::parse_size(s);
    let _ = foreign::netem(s);
    let (kind, args) = s.split_once(' ').unwrap_or((s, ""));
    let _ = foreign::mahimahi_queue(kind, Some(args));
}

/// A packet log (`--log`): summarised whole and read line by line.
pub fn packet_log(data: &[u8]) {
    let _ = aerolink_net::log::summarize(data);
    if let Ok(text) = std::str::from_utf8(data) {
        for line in text.lines() {
            let _ = aerolink_net::log::parse_event(line);
        }
    }
}

/// A topology file.
pub fn topology(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = aerolink_experiments::topology::Topology::parse(text, "fuzz.toml");
}

/// An experiment file, then its plan (every run it expands to).
pub fn experiment(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(e) = aerolink_experiments::experiment::Experiment::parse(text, "fuzz.toml") {
        let _ = e.plan();
    }
}

/// A probe log from a flight (JSON lines), analysed as `aerolink analyze`
/// does and fitted as `aerolink fit` does, with and without a loss trace.
pub fn flight_log(data: &[u8]) {
    use aerolink_flight::{analysis, fit, probe::record::Record};
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (mut records, mut bad) = (Vec::new(), 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Record>(line) {
            Ok(r) => records.push(r),
            Err(_) => bad += 1,
        }
    }
    records.sort_by_key(|r| r.n);
    let f = analysis::analyze(&records, bad, "fuzz", &analysis::Options::default());
    let _ = serde_json::to_string(&f);
    for window in [None, Some(10.0)] {
        let o = fit::Options { name: "fuzz".into(), stem: "fuzz".into(), outage_min_s: 10.0, source: "fuzz".into(), loss_trace_window_s: window };
        let _ = fit::fit(&records, &o);
    }
}

/// What the QUIC tunnel reads from the network before and after
/// authentication: the screening of datagrams on its port (and the key
/// gate on Initials), and the header of each tunnelled stream.
pub fn tunnel(data: &[u8]) {
    use aerolink_pep::quic_tunnel::{screening, wire, Psk};
    let _ = screening::not_quic(data);
    if let Some(dcid) = screening::initial_dcid(data) {
        let psk = Psk::parse("00112233445566778899aabbccddeeff").expect("a valid key");
        let _ = psk.check_initial_dcid(dcid, 1_800_000_000);
    }
    let _ = wire::decode_dest(data);
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = Psk::parse(s);
    }
}

/// A frame from a TUN device (virtio-net header, then a packet or an
/// offloaded burst; the first byte picks where to split the burst):
/// described, every run of its segments rewritten, and cut into finished
/// packets, as the pump does for a shaping link. Every run written is one
/// the kernel would take (no `hdr_len` past its end).
pub fn gso(data: &[u8]) {
    use aerolink_net::gso::{segment, Burst};
    use aerolink_net::tun::VNET_HDR_LEN;
    let Some((&split, frame)) = data.split_first() else { return };
    if let Some(b) = Burst::parse(frame) {
        let n = b.count();
        let total: u64 = (0..n).map(|i| b.segment_len(i) as u64).sum();
        assert!(total >= frame.len() as u64 - VNET_HDR_LEN as u64);
        let first = split as usize % n;
        let mut out = Vec::new();
        for (from, to) in [(first, n), (0, first + 1)] {
            b.write_run(frame, from, to, &mut out);
            // The kernel refuses a frame shorter than its header says.
            let hdr_len = u16::from_le_bytes([out[2], out[3]]) as usize;
            assert!(hdr_len <= out.len() - VNET_HDR_LEN);
        }
    }
    let _ = segment(frame);
}

/// Builds both directions of a profile and drives a few packets through
/// them in simulated time (up to 64 wake-ups, at most an hour apart), as
/// the emulator would.
pub fn drive(p: &Profile) {
    let _ = p.canonical();
    for (i, d) in [&p.up, &p.down].into_iter().enumerate() {
        let _ = d.mean_delay();
        let mut pl: Pipeline<()> = Pipeline::new(d, p.base_rtt(), 1, i as u64);
        let mut now = Instant::ZERO;
        for k in 0..16u32 {
            pl.enqueue(now, 64 + 97 * k, ());
        }
        for _ in 0..64 {
            let Some(t) = pl.next_wakeup() else { break };
            if t.saturating_since(now) > Duration::from_secs(3600) {
                break;
            }
            now = now.max(t);
            while pl.dequeue(now).is_some() {}
            pl.take_drops().for_each(drop);
        }
    }
}
