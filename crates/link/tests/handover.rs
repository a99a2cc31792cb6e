//! Handovers under Mobile IPv6 / NEMO in simulated time: the timeline of
//! each mode (exact with no collisions or signalling loss), the random
//! access back-off and binding-update retransmissions against their
//! distributions (99 % intervals), and what packets see in each direction:
//! lost, cut from the old cell's queue, buffered and flushed, tunnelled.

mod common;
use common::binomial_ci;

use aerolink_link::handover::{HandoverSpec, Mode, Phase, Side, SignalLoss};
use aerolink_link::packet::DropReason;
use aerolink_link::profile::Profile;
use aerolink_link::stage::{stage_rng, Note};
use aerolink_link::{Duration, Instant, Pipeline};

const MS: u64 = 1_000_000;

fn profile(toml: &str) -> Profile {
    Profile::parse(toml, "test.toml", &[], &mut |_| Err("no files".into())).unwrap_or_else(|e| panic!("{e}"))
}

fn spec(mode: Mode) -> HandoverSpec {
    let p = profile(&format!("[link]\nhandover = {{ at = [\"10 s\"], mode = \"{mode}\", ra_collision = 0 }}\n"));
    p.up.handover.clone().unwrap()
}

fn ms(t: Instant) -> f64 {
    t.0 as f64 / 1e6
}

#[test]
fn each_mode_follows_its_timeline() {
    // Trigger at 10 s; random access at the next super-frame (10.08 s),
    // response 65.04 ms later; advertisement 200 ms; DAD 1 s (baseline
    // only); update 250 ms up, acknowledgement 100 ms down.
    let t = |m: Mode| spec(m).timelines(&mut stage_rng(1, 0)).remove(0);
    let base = t(Mode::Baseline);
    assert_eq!((ms(base.l2_start), ms(base.l2_end)), (10_000.0, 10_145.04));
    assert_eq!((ms(base.address), ms(base.bound), ms(base.acked)), (11_345.04, 11_595.04, 11_695.04));
    let nodad = t(Mode::NoDad);
    assert_eq!((ms(nodad.address), ms(nodad.bound)), (10_345.04, 10_595.04));
    assert!(base.buffering.is_none() && nodad.buffering.is_none());
    // Buffer: the modified update reaches the agent at 10.25 s, its
    // acknowledgement the aircraft at 10.35 s; then layer 2 at the next
    // super-frame (10.56 s) as without DAD.
    let buf = t(Mode::Buffer);
    assert_eq!(buf.buffering.map(ms), Some(10_250.0));
    assert_eq!((ms(buf.l2_start), ms(buf.l2_end), ms(buf.bound)), (10_350.0, 10_625.04, 11_075.04));
    // Without DAD a handover takes 0.6–0.84 s from leaving the cell to the
    // binding acknowledgement (seed 002: ≈ 0.8 s).
    assert!((ms(nodad.acked) - ms(nodad.l2_start)) > 600.0 && (ms(nodad.acked) - ms(nodad.l2_start)) < 840.0);
}

#[test]
fn random_access_and_binding_updates_retry_as_specified() {
    // Collisions with p = 0.3: requests per handover are geometric, mean
    // 1 / 0.7; each retry waits 1–4 super-frames.
    let mut s = spec(Mode::NoDad);
    s.ra_collision = 0.3;
    s.at = (1..=20_000u64).map(|k| Duration::from_secs(100 * k)).collect();
    let tl = s.timelines(&mut stage_rng(7, 0));
    let first_try = tl.iter().filter(|t| t.ra_attempts == 1).count();
    let (lo, hi) = binomial_ci(first_try, tl.len(), 2.576);
    assert!(lo <= 0.7 && 0.7 <= hi, "{first_try} of {} on the first request", tl.len());
    for t in &tl {
        // Request on the super-frame clock, plus 1–4 super-frames per retry.
        let waited = (t.l2_end.0 - 65_040_000) - t.l2_start.0.div_ceil(240 * MS) * 240 * MS;
        assert!(waited.is_multiple_of(240 * MS) && waited / (240 * MS) >= (t.ra_attempts as u64 - 1) && waited / (240 * MS) <= 4 * (t.ra_attempts as u64 - 1));
    }
    // Signalling loss 0.5: an update and its acknowledgement both get
    // through with probability 0.25; retries after 1.5 s, then 1, 2, 4… s.
    let mut s = spec(Mode::NoDad);
    s.loss = SignalLoss::all(0.5);
    s.at = (1..=20_000u64).map(|k| Duration::from_secs(1000 * k)).collect();
    let tl = s.timelines(&mut stage_rng(8, 0));
    let once = tl.iter().filter(|t| t.bu_attempts == 1).count();
    let (lo, hi) = binomial_ci(once, tl.len(), 2.576);
    assert!(lo <= 0.25 && 0.25 <= hi, "{once} of {} bound at the first update", tl.len());
    let timeouts = [0.0, 1_500.0, 2_500.0, 4_500.0, 8_500.0, 16_500.0, 32_500.0, 64_500.0];
    for t in tl.iter().filter(|t| t.bu_attempts <= 8) {
        let waited = ms(t.acked) - ms(t.address) - 350.0;
        assert!((waited - timeouts[t.bu_attempts as usize - 1]).abs() < 1e-6, "{t:?}");
    }
}

/// Drives `dir` ("up" or "down") of a 31.5 kbit/s link with one handover
/// at 10 s; a 500 B packet every 100 ms from 5 s to 15 s.
fn run(mode: Mode, side: Side) -> (Vec<aerolink_link::Meta>, Vec<aerolink_link::Drop>, Vec<(Phase, Instant)>) {
    run_with(mode, side, "")
}

/// As [`run`], with more handover keys (`extra`, each after a comma).
fn run_with(mode: Mode, side: Side, extra: &str) -> (Vec<aerolink_link::Meta>, Vec<aerolink_link::Drop>, Vec<(Phase, Instant)>) {
    let p = profile(&format!("[link]\nrate = \"31.5 kbit/s\"\ndelay = \"10 ms\"\nqueue = \"64 KB\"\nhandover = {{ at = [\"10 s\"], mode = \"{mode}\", ra_collision = 0{extra} }}\n"));
    let (dir, stream) = match side {
        Side::Mobile => (&p.up, 0),
        Side::Home => (&p.down, 1),
    };
    assert_eq!(dir.handover.as_ref().unwrap().side, side);
    let mut pipe: Pipeline<()> = Pipeline::new(dir, p.base_rtt(), 3, stream);
    let arrivals: Vec<(u64, u32)> = (50..150u64).map(|k| (k * 100 * MS, 500)).collect();
    let (out, drops) = common::drive(&mut pipe, &arrivals);
    let mut ev = Vec::new();
    pipe.take_events(&mut ev);
    let phases = ev
        .iter()
        .filter_map(|e| match e.note {
            Note::Handover { phase, .. } => Some((phase, e.at)),
            _ => None,
        })
        .collect();
    (out, drops, phases)
}

#[test]
fn packets_toward_the_aircraft_are_lost_or_buffered() {
    // 500 B every 100 ms at 31.5 kbit/s (127 ms each): a queue builds up.
    let (out, drops, phases) = run(Mode::NoDad, Side::Home);
    let at = |ph: Phase| phases.iter().find(|p| p.0 == ph).unwrap().1;
    let (l2, bound) = (at(Phase::L2Start), at(Phase::Bound));
    assert_eq!((ms(l2), ms(bound)), (10_000.0, 10_595.04));
    // What the old cell held at 10 s is cut; what the agent sent to the old
    // address until the binding is lost; nothing else.
    assert!(drops.iter().all(|d| d.reason == DropReason::Outage));
    let cut: Vec<_> = drops.iter().filter(|d| d.meta.arrived < l2).collect();
    let lost: Vec<_> = drops.iter().filter(|d| d.meta.arrived >= l2).collect();
    assert!(cut.len() >= 5 && cut.iter().all(|d| d.at == l2), "{} cut", cut.len());
    assert_eq!(lost.len(), 6, "packets sent from 10.0 to 10.5 s");
    assert!(lost.iter().all(|d| d.meta.arrived < bound));
    // Before the handover plain, after it 40 B of tunnel more.
    assert!(out.iter().all(|m| m.len == if m.arrived >= bound { 540 } else { 500 }));
    assert_eq!(out.len() + drops.len(), 100);

    // Buffering: the old station first delivers what it holds toward the
    // aircraft, then commands layer 2 (seed 002 §3.2: HO_COM without the
    // P-bit once its packets are out) — here 11 packets queued at the
    // command (10.35 s), out 1.4 s later. Nothing is lost; what came from
    // the agent's first buffering on leaves at the binding, in order,
    // tunnelled.
    let (out, drops, phases) = run(Mode::Buffer, Side::Home);
    let at = |ph: Phase| phases.iter().find(|p| p.0 == ph).unwrap().1;
    assert!(drops.is_empty(), "{} dropped", drops.len());
    assert_eq!(out.len(), 100);
    assert!(out.windows(2).all(|w| w[0].id < w[1].id));
    let (buffering, l2) = (at(Phase::Buffering), at(Phase::L2Start));
    let emptied = out.iter().filter(|m| m.arrived < buffering).map(|m| m.tx_end).max().unwrap();
    assert_eq!((ms(buffering), l2), (10_250.0, emptied));
    assert!(ms(l2) > 11_000.0, "layer 2 at {} ms", ms(l2));
    // Then as drawn: random access at the next super-frame (240 ms clock),
    // its response 65.04 ms after.
    assert_eq!(at(Phase::L2End).0, l2.0.div_ceil(240 * MS) * 240 * MS + 65_040_000);
    let held: Vec<_> = out.iter().filter(|m| m.arrived >= buffering && m.arrived < at(Phase::Bound)).collect();
    let sent = (50..150u64).filter(|k| (buffering.0..at(Phase::Bound).0).contains(&(k * 100 * MS))).count();
    assert_eq!(held.len(), sent);
    assert!(held.len() > 8 && held.iter().all(|m| m.tx_start >= at(Phase::Bound) && m.len == 540));
}

/// Both directions built together (a lab's hop): the aircraft's side
/// leaves the old cell when the ground's station has delivered its queue,
/// not at the drawn command; built alone it keeps the drawn one.
#[test]
fn the_aircraft_leaves_when_the_ground_station_has_delivered() {
    let p = profile("[link]\nrate = \"31.5 kbit/s\"\ndelay = \"10 ms\"\nqueue = \"64 KB\"\nhandover = { at = [\"10 s\"], mode = \"buffer\", ra_collision = 0 }\n");
    let (mut up, mut down): (Pipeline<()>, Pipeline<()>) = Pipeline::pair(&p.up, &p.down, p.base_rtt(), 3, 0);
    let phases = |pipe: &mut Pipeline<()>| {
        let mut ev = Vec::new();
        pipe.take_events(&mut ev);
        ev.iter().filter_map(|e| if let Note::Handover { phase, .. } = e.note { Some((phase, e.at)) } else { None }).collect::<Vec<_>>()
    };
    // The ground's side runs first here; in a lab the two run side by side
    // and the aircraft's side asks again every millisecond.
    common::drive(&mut down, &(50..150u64).map(|k| (k * 100 * MS, 500)).collect::<Vec<_>>());
    let ground = phases(&mut down);
    let l2 = ground.iter().find(|p| p.0 == Phase::L2Start).unwrap().1;
    assert!(ms(l2) > 11_000.0);
    let (out, drops) = common::drive(&mut up, &(50..150u64).map(|k| (k * 100 * MS, 100)).collect::<Vec<_>>());
    let air = phases(&mut up);
    assert_eq!(air, ground, "one timeline");
    // What the aircraft sends before it leaves goes through.
    assert!(out.iter().filter(|m| m.arrived < l2).count() == (50..150u64).filter(|k| k * 100 * MS < l2.0).count());
    assert!(!drops.is_empty() && drops.iter().all(|d| d.meta.arrived >= l2));
    // Alone, the aircraft's side leaves at the drawn command.
    let mut alone: Pipeline<()> = Pipeline::new(&p.up, p.base_rtt(), 3, 0);
    common::drive(&mut alone, &[(100 * MS, 100)]);
    assert_eq!(phases(&mut alone).iter().find(|p| p.0 == Phase::L2Start).map(|p| ms(p.1)), Some(10_350.0));
}

/// Seed 002 §6.1's conditions, each a timeline and what packets toward
/// the aircraft see.
#[test]
fn lost_signalling_follows_the_seeds_conditions() {
    let with = |mode: Mode, keys: &str| {
        profile(&format!("[link]\nhandover = {{ at = [\"10 s\"], mode = \"{mode}\", ra_collision = 0, {keys} }}\n")).up.handover.clone().unwrap().timelines(&mut stage_rng(1, 0)).remove(0)
    };
    // First: every modified update lost. No buffering; the station forces
    // layer 2 after the fourth try (4 s), then as without DAD.
    let t = with(Mode::Buffer, "mbu_loss = 1");
    assert_eq!((t.buffering, ms(t.l2_start)), (None, 14_000.0));
    // Random access at the super-frame of 14.16 s, response 65.04 ms
    // later, advertisement 200 ms, update 250 ms.
    assert!((ms(t.bound) - 14_675.04).abs() < 1e-6, "{t:?}");
    // Second: every modified acknowledgement lost. The agent buffers from
    // the first update; the station's command does not wait for the
    // aircraft to hear: the timeline is the lossless one.
    let plain = with(Mode::Buffer, "mba_loss = 0");
    let t = with(Mode::Buffer, "mba_loss = 1");
    assert_eq!((t.buffering, t.l2_start, t.bound, t.acked), (plain.buffering, plain.l2_start, plain.bound, plain.acked));
    // Fourth: the first regular acknowledgement lost. The agent binds at
    // the first update; the aircraft hears only after the update is sent
    // again 1.5 s later, in every mode.
    for &mode in Mode::ALL {
        let plain = with(mode, "first_ba_lost = false");
        let t = with(mode, "first_ba_lost = true");
        assert_eq!((t.bound, t.ba_sent), (plain.bound, plain.bound + Duration::from_millis(1_500)), "{mode}");
        assert!((ms(t.acked) - ms(plain.acked) - 1_500.0).abs() < 1e-6, "{mode}");
        assert_eq!(t.bu_attempts, 2);
    }
    // Third: the first regular update lost; bound 1.5 s later.
    let t = with(Mode::NoDad, "first_bu_lost = true");
    assert!((ms(t.bound) - ms(with(Mode::NoDad, "bu_loss = 0").bound) - 1_500.0).abs() < 1e-6);

    // Packets: with the first acknowledgement lost, what the agent held and
    // what it sends before the second one is dropped (the aircraft has no
    // binding yet); the rest arrives.
    let (out, drops, phases) = run_with(Mode::Buffer, Side::Home, ", first_ba_lost = true");
    let at = |ph: Phase| phases.iter().find(|p| p.0 == ph).unwrap().1;
    let (buffering, bound) = (at(Phase::Buffering), at(Phase::Bound));
    let acked = at(Phase::Acked);
    assert!(drops.iter().all(|d| d.reason == DropReason::Outage && d.meta.arrived >= buffering && d.meta.arrived + Duration::from_millis(100) < acked));
    let expected = (50..150u64).filter(|k| (buffering.0..acked.0 - 100 * MS).contains(&(k * 100 * MS))).count();
    assert_eq!(drops.len(), expected, "held from {} ms, bound at {} ms", ms(buffering), ms(bound));
    assert_eq!(out.len() + drops.len(), 100);
}

#[test]
fn packets_from_the_aircraft_are_lost_until_the_update_leaves() {
    for &mode in Mode::ALL {
        let (out, drops, phases) = run(mode, Side::Mobile);
        let at = |ph: Phase| phases.iter().find(|p| p.0 == ph).unwrap().1;
        let l2 = at(Phase::L2Start);
        // The update leaves when the address is usable.
        let sent = at(Phase::Address);
        let lost = drops.iter().filter(|d| d.meta.arrived >= l2).count();
        let expected = (50..150u64).filter(|k| (l2.0..sent.0).contains(&(k * 100 * MS))).count();
        assert_eq!(lost, expected, "{mode}");
        assert!(drops.iter().filter(|d| d.meta.arrived < l2).all(|d| d.at == l2), "{mode}: the aircraft's queue is cut at layer 2");
        assert!(out.iter().all(|m| m.len == if m.arrived >= sent { 540 } else { 500 }), "{mode}");
    }
}

#[test]
fn both_directions_share_one_timeline() {
    let p = profile("[link]\nhandover = { at = [\"5 s\", \"50 s\"], ra_collision = 0.5, signal_loss = 0.3 }\n");
    let phases = |dir, stream| {
        let mut pipe: Pipeline<()> = Pipeline::new(dir, p.base_rtt(), 11, stream);
        common::drive(&mut pipe, &[(100 * MS, 100)]);
        let mut ev = Vec::new();
        pipe.take_events(&mut ev);
        ev.iter().map(|e| (e.at, e.note)).collect::<Vec<_>>()
    };
    let up = phases(&p.up, 4);
    assert_eq!(up.len(), 12);
    assert_eq!(up, phases(&p.down, 5));
}

#[test]
fn handover_keys_are_checked() {
    for (bad, says) in [
        ("[up]\nhandover = { at = \"5 s\" }", "[link]"),
        ("[link]\nhandover = { at = [\"9 s\", \"5 s\"] }", "increasing"),
        ("[link]\nhandover = { at = \"5 s\", mode = \"fast\" }", "no-dad"),
        ("[link]\nhandover = { at = \"5 s\", ra_collision = 2.0 }", "probability"),
        ("[link]\nhandover = { at = \"5 s\", ba_loss = 1 }", "until one is acknowledged"),
        ("[link]\nhandover = { at = \"5 s\", mbu_loss = 1.5 }", "from 0 to 1"),
        ("[link]\nhandover = { at = \"5 s\", first_ba_lost = 1 }", "true or false"),
        ("[link]\nhandover = { at = \"5 s\", when = 3 }", "allowed"),
    ] {
        let e = Profile::parse(bad, "h.toml", &[], &mut |_| Err("no files".into())).err().unwrap_or_else(|| panic!("accepted {bad}")).to_string();
        assert!(e.contains("h.toml") && e.contains("handover") && e.contains(says), "{e}");
    }
}

#[test]
fn a_flight_past_the_stations_hands_over_midway_between_them() {
    // Seed 002: 800 km/h, cells of 225 km overlapping by 100 km → stations
    // 350 km apart; from 125 km past the first, the first handover comes
    // after 50 km (225 s), then every 350 km (1575 s).
    let p = profile("[link]\nhandover = { mobility = { count = 3 } }\n");
    let at = &p.up.handover.as_ref().unwrap().at;
    assert_eq!(at.iter().map(|d| d.as_secs_f64().round() as u64).collect::<Vec<_>>(), [225, 1800, 3375]);
    let p = profile("[link]\nhandover = { mobility = { speed_kmh = 900, start_km = 170 } }\n");
    assert!((p.up.handover.as_ref().unwrap().at[0].as_secs_f64() - 20.0).abs() < 1e-6);
    let e = Profile::parse("[link]\nhandover = { at = \"5 s\", mobility = {} }\n", "h.toml", &[], &mut |_| Err("no files".into())).unwrap_err().to_string();
    assert!(e.contains("not both"), "{e}");
}
