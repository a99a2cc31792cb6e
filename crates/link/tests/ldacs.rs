//! L-DACS 1 medium access and ARQ in simulated time: the grant cycle's
//! exact timing, residual loss with and without ARQ against the formula
//! (99 % intervals), in-order delivery behind a retransmission, and the
//! latency a lightly loaded link shows.

mod common;
use common::binomial_ci;

use aerolink_link::packet::DropReason;
use aerolink_link::profile::Profile;
use aerolink_link::{Instant, Pipeline};

const MS: u64 = 1_000_000;

fn profile(toml: &str) -> Profile {
    Profile::parse(toml, "test.toml", &[], &mut |_| Err("no files".into())).unwrap_or_else(|e| panic!("{e}"))
}

/// Departures `(id, arrived, due)` and drops `(id, reason, at)`.
#[allow(clippy::type_complexity)]
fn drive(p: &mut Pipeline<()>, arrivals: &[(u64, u32)]) -> (Vec<(u64, Instant, Instant)>, Vec<(u64, DropReason, Instant)>) {
    let (out, drops) = common::drive(p, arrivals);
    (out.iter().map(|m| (m.id, m.arrived, m.due)).collect(), drops.iter().map(|d| (d.meta.id, d.reason, d.at)).collect())
}

#[test]
fn the_return_link_waits_a_request_cycle_and_the_forward_link_does_not() {
    let prof = profile("[up]\nldacs = { link = \"rl\", rate = \"31.5 kbit/s\", fer = 0.0 }\n[down]\nldacs = { link = \"fl\", rate = \"31.5 kbit/s\", fer = 0.0 }\ndelay = \"2 ms\"\n");
    // 77 B + 7 B header = 84 B: six 14 B blocks on the return link
    // (21.333 ms at 31.5 kbit/s), one 91 B block forward (23.111 ms).
    let tx = (84.0 * 8.0 / 31_500.0 * 1e9_f64).round() as u64;
    let tx_fl = (91.0 * 8.0 / 31_500.0 * 1e9_f64).round() as u64;
    // Arrival at 10 ms: the request goes in the multi-frame starting at
    // 65.04 ms, the grant in the next (123.36 ms).
    let mut up: Pipeline<()> = Pipeline::new(&prof.up, prof.base_rtt(), 1, 0);
    let (out, drops) = drive(&mut up, &[(10 * MS, 77)]);
    assert!(drops.is_empty());
    assert_eq!(out, vec![(0, Instant(10 * MS), Instant(123_360_000 + tx))]);
    // The forward link starts at the next boundary; then 2 ms of flight.
    let mut down: Pipeline<()> = Pipeline::new(&prof.down, prof.base_rtt(), 1, 1);
    let (out, _) = drive(&mut down, &[(10 * MS, 77)]);
    assert_eq!(out, vec![(0, Instant(10 * MS), Instant(65_040_000 + tx_fl + 2 * MS))]);
}

/// Fraction of `n` 77-byte return-link packets that never arrive.
fn return_link_loss(arq: bool, n: usize, seed: u64) -> (usize, usize) {
    let prof = profile(&format!("[up]\nldacs = {{ link = \"rl\", rate = \"31.5 kbit/s\", arq = {arq}, buffer = \"10 MB\" }}\n"));
    let mut p: Pipeline<()> = Pipeline::new(&prof.up, prof.base_rtt(), seed, 0);
    // One packet per super-frame: no queueing, only the model's own losses.
    let arrivals: Vec<(u64, u32)> = (0..n as u64).map(|i| (i * 240 * MS, 77)).collect();
    let (out, drops) = drive(&mut p, &arrivals);
    assert_eq!(out.len() + drops.len(), n, "every packet leaves or is dropped");
    let want = if arq { DropReason::Arq } else { DropReason::Loss };
    assert!(drops.iter().all(|d| d.1 == want));
    (drops.len(), n)
}

#[test]
fn residual_loss_matches_the_block_error_formula() {
    // Six 14 B blocks at FER 6.28e-2: a transmission is lost with
    // 1 − (1 − 0.0628)^6 ≈ 0.322.
    let p_tx = 1.0 - (1.0f64 - 0.0628).powi(6);
    let (k, n) = return_link_loss(false, 20_000, 7);
    let (lo, hi) = binomial_ci(k, n, 2.576);
    assert!(lo <= p_tx && p_tx <= hi, "no ARQ: {k}/{n} lost, 99 % interval [{lo:.4}, {hi:.4}] misses {p_tx:.4}");
    // With ARQ a packet is lost only if all 6 transmissions are: 0.322^6.
    let p_arq = p_tx.powi(6);
    assert!((p_arq - 1.1e-3).abs() < 0.05e-3);
    let (k, n) = return_link_loss(true, 200_000, 7);
    let (lo, hi) = binomial_ci(k, n, 2.576);
    assert!(lo <= p_arq && p_arq <= hi, "ARQ: {k}/{n} lost, 99 % interval [{lo:.2e}, {hi:.2e}] misses {p_arq:.2e}");
}

#[test]
fn a_retransmission_holds_back_the_packets_behind_it() {
    // A 1500 B return-link packet is 108 blocks: at FER 6.28e-2 nearly
    // every transmission of it is lost, so ARQ gives up after 1 + 5. The
    // small packet behind it gets through but waits in order.
    let prof = profile("[up]\nldacs = { link = \"rl\", rate = \"158 kbit/s\" }\n");
    let mut p: Pipeline<()> = Pipeline::new(&prof.up, prof.base_rtt(), 3, 0);
    let (out, drops) = drive(&mut p, &[(0, 1500), (MS, 20)]);
    assert_eq!(drops.len(), 1);
    let (id, reason, dropped_at) = drops[0];
    assert_eq!((id, reason), (0, DropReason::Arq));
    // Six transmissions, each followed by a missed acknowledgement and a
    // new request cycle: well over a second.
    assert!(dropped_at.0 > 1_000 * MS, "dropped at {dropped_at:?}");
    assert_eq!(out.len(), 1);
    let (id, _, due) = out[0];
    assert_eq!(id, 1);
    assert!(due >= dropped_at, "the small packet left at {due:?}, before the big one was given up at {dropped_at:?}");
}

fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn one_way_latency_of_a_lightly_loaded_link() {
    // 200 B packets every 1.37 s (not a multiple of any frame) at 158
    // kbit/s with 1 ms of flight: what the guide states.
    let prof = profile(include_str!("../../../profiles/ldacs1-158k.toml"));
    let lat = |spec, stream| {
        let mut p: Pipeline<()> = Pipeline::new(spec, prof.base_rtt(), 11, stream);
        let arrivals: Vec<(u64, u32)> = (0..3000u64).map(|i| (i * 1_370 * MS, 200)).collect();
        let (out, _) = drive(&mut p, &arrivals);
        out.iter().map(|(_, a, d)| (d.0 - a.0) as f64 / 1e6).collect::<Vec<f64>>()
    };
    let (mut fl, mut rl) = (lat(&prof.down, 1), lat(&prof.up, 0));
    let (fl50, fl95) = (percentile(&mut fl, 0.5), percentile(&mut fl, 0.95));
    let (rl50, rl95) = (percentile(&mut rl, 0.5), percentile(&mut rl, 0.95));
    // Forward: at most a multi-frame's wait plus 10.5 ms on the air.
    assert!(fl95 < 58.32 + 11.0 + 1.0 + 1.0, "FL p95 {fl95:.1} ms");
    // Return: one more multi-frame for the grant; ARQ adds a tail.
    assert!(rl50 > fl50 + 50.0, "RL p50 {rl50:.1} vs FL p50 {fl50:.1} ms");
    assert!(rl95 > fl95, "RL p95 {rl95:.1} vs FL {fl95:.1} ms");
    eprintln!("one-way latency, 200 B at 158 kbit/s: FL p50 {fl50:.1} ms p95 {fl95:.1} ms; RL p50 {rl50:.1} ms p95 {rl95:.1} ms");
}

#[test]
fn a_link_budget_sets_the_block_error_rate() {
    // 300 km from the ground station: 2.5 dB less SNR than at the cell
    // edge (225 km); the return link's FER goes from 2.4e-2 to 0.24, as
    // the losses of 84 B packets without ARQ show (99 % intervals).
    let near = profile("[up]\nldacs = { link = \"rl\", rate = \"158 kbit/s\", arq = false, buffer = \"10 MB\", budget = { distance_km = 225 } }\n");
    let far = profile("[up]\nldacs = { link = \"rl\", rate = \"158 kbit/s\", arq = false, buffer = \"10 MB\", budget = { distance_km = 300 } }\n");
    let fer = |p: &Profile| p.up.ldacs.as_ref().unwrap().fer;
    assert!(fer(&far) > 4.0 * fer(&near), "{} vs {}", fer(&far), fer(&near));
    let n = 20_000u64;
    let arrivals: Vec<(u64, u32)> = (0..n).map(|k| (k * 60 * MS, 77)).collect();
    for p in [&near, &far] {
        let mut pipe = Pipeline::new(&p.up, p.base_rtt(), 3, 0);
        let (_, drops) = drive(&mut pipe, &arrivals);
        let expected = 1.0 - (1.0 - fer(p)).powi(6);
        let (lo, hi) = binomial_ci(drops.len(), n as usize, 2.576);
        assert!(lo <= expected && expected <= hi, "lost {} of {n}, expected {expected:.4}", drops.len());
    }
    // The describe line says where the FER came from.
    assert!(far.up.described["ldacs"].contains("SNR") && far.up.described["ldacs"].contains("300 km"), "{}", far.up.described["ldacs"]);
    // fer and budget together, a budget without a distance, a bad table.
    for bad in [
        "ldacs = { link = \"rl\", rate = \"1 kbit/s\", fer = 0.1, budget = { distance_km = 100 } }",
        "ldacs = { link = \"rl\", rate = \"1 kbit/s\", budget = { tx_power_dbm = 41 } }",
        "ldacs = { link = \"rl\", rate = \"1 kbit/s\", budget = { distance_km = 100, snr_fer = [[9, 0.1], [8, 0.01]] } }",
        "ldacs = { link = \"rl\", rate = \"1 kbit/s\", budget = { distance_km = 100, range = 3 } }",
    ] {
        let e = Profile::parse(&format!("[up]\n{bad}\n"), "b.toml", &[], &mut |_| Err("no files".into())).err().unwrap_or_else(|| panic!("accepted {bad}")).to_string();
        assert!(e.contains("b.toml") && e.contains("up.ldacs"), "{e}");
    }
}

/// Departures `(user, arrived, due)` and how many were dropped, on the
/// return link of `ldacs`.
fn drive_cell(ldacs: &str, arrivals: &[(u64, u32, u32)]) -> (Vec<(u32, u64, u64)>, usize) {
    let prof = profile(&format!("[up]\nldacs = {ldacs}\n"));
    let mut p: Pipeline<()> = Pipeline::new(&prof.up, prof.base_rtt(), 7, 0);
    let (out, drops) = common::drive_users(&mut p, arrivals);
    (common::user_departures(&out), drops.len())
}

#[test]
fn one_aircraft_alone_in_a_cell_is_the_single_user_stage() {
    // Lossy blocks and ARQ: the same draws, the same departures.
    let arrivals: Vec<(u64, u32, u32)> = (0..200u64).map(|i| (i * 150 * MS + i % 3 * MS, 77 + (i % 4) as u32 * 100, 11)).collect();
    let one = drive_cell("{ link = \"rl\", rate = \"31.5 kbit/s\" }", &arrivals);
    let cell = drive_cell("{ link = \"rl\", rate = \"31.5 kbit/s\", each_user = true }", &arrivals);
    assert!(one.0.len() > 150, "{one:?}");
    assert_eq!(one, cell);
}

#[test]
fn aircraft_in_one_cell_share_its_rate_and_wait_apart() {
    // Two aircraft, each offering 40 kbit/s of 500 B packets to a
    // 31.5 kbit/s cell without errors: each gets half (15.75 kbit/s of
    // blocks, 507 B each: 3.1 packets a second) over 20 s.
    let mut arrivals: Vec<(u64, u32, u32)> = (0..2000u64).map(|i| (i * 100 * MS, 500, 1)).collect();
    arrivals.extend((0..2000u64).map(|i| (i * 100 * MS + 50 * MS, 500, 2)));
    arrivals.sort_by_key(|a| a.0);
    let cell = "{ link = \"rl\", rate = \"31.5 kbit/s\", fer = 0.0, buffer = \"1 MB\", each_user = true }";
    let (out, _) = drive_cell(cell, &arrivals);
    let sent = |u: u32| out.iter().filter(|(w, _, d)| *w == u && (10_000 * MS..30_000 * MS).contains(d)).count() as f64 / 20.0;
    let each = 31_500.0 / 2.0 / (37.0 * 14.0 * 8.0);
    for u in [1, 2] {
        assert!((sent(u) - each).abs() < 0.1 * each, "aircraft {u}: {} packets/s, want {each:.2}", sent(u));
    }
    // A light aircraft (a 77 B report every 2 s) beside a greedy one keeps
    // its delay near the grant cycle; behind one shared sender it waits
    // behind the greedy one's backlog.
    let mut arrivals: Vec<(u64, u32, u32)> = (0..600u64).map(|i| (i * 100 * MS, 500, 1)).collect();
    arrivals.extend((0..30u64).map(|i| (i * 2_000 * MS + 30 * MS, 77, 2)));
    arrivals.sort_by_key(|a| a.0);
    let light = |out: &[(u32, u64, u64)]| -> f64 { out.iter().filter(|(u, a, _)| *u == 2 && *a > 20_000 * MS).map(|(_, a, d)| (d - a) as f64 / 1e6).fold(0.0, f64::max) };
    let (apart, _) = drive_cell(cell, &arrivals);
    let (together, _) = drive_cell("{ link = \"rl\", rate = \"31.5 kbit/s\", fer = 0.0, buffer = \"1 MB\" }", &arrivals);
    assert!(light(&apart) < 500.0, "apart: worst {} ms", light(&apart));
    assert!(light(&together) > 5_000.0, "together: worst {} ms", light(&together));
}
