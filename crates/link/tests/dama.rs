//! DVB-RCS2 bandwidth on demand in simulated time: what a packet on an
//! idle terminal waits for under each capacity kind, RBDC catching up with
//! a steady stream, and contention on the carrier.

mod common;

use aerolink_link::profile::Profile;
use aerolink_link::Pipeline;

const MS: u64 = 1_000_000;
const SF: u64 = 26_500_000;

fn up(dama: &str) -> Profile {
    let text = format!("[link]\nrtt = \"540 ms\"\n[up]\ndama = {dama}\n");
    Profile::parse(&text, "test.toml", &[], &mut |_| Err("no files".into())).unwrap_or_else(|e| panic!("{e}"))
}

/// Departures `(arrived, due)` of `(arrival ns, len)` packets.
fn drive(prof: &Profile, arrivals: &[(u64, u32)]) -> Vec<(u64, u64)> {
    let mut p: Pipeline<()> = Pipeline::new(&prof.up, prof.base_rtt(), 1, 0);
    let (out, drops) = common::drive(&mut p, arrivals);
    assert!(drops.is_empty());
    out.iter().map(|m| (m.arrived.0, m.due.0)).collect()
}

#[test]
fn an_idle_terminal_waits_a_request_cycle_for_vbdc_but_not_with_cra() {
    // A request made at a super-frame start takes effect 2 × 270 ms → 21
    // super-frames, plus 2 at the scheduler, later.
    let at = 1_000 * MS;
    let next_sf = at.div_ceil(SF);
    let vbdc = drive(&up("{ carrier = \"2 Mbit/s\", vbdc_max = \"64 KB\" }"), &[(at, 84)]);
    // Asked for at the next super-frame, granted 23 later for the whole of
    // that super-frame; then 270 ms of flight.
    let want = (next_sf + 23 + 1) * SF + 270 * MS;
    assert_eq!(vbdc.len(), 1);
    assert!(vbdc[0].1.abs_diff(want) < 1_000, "VBDC: due {} ns, want {want}", vbdc[0].1);
    // With CRA the same packet goes at once at the CRA rate.
    let cra = drive(&up("{ carrier = \"2 Mbit/s\", cra = \"256 kbit/s\" }"), &[(at, 84)]);
    let want = at + (84.0 * 8.0 / 256_000.0 * 1e9) as u64 + 270 * MS;
    assert!(cra[0].1.abs_diff(want) < 1_000, "CRA: due {} ns, want {want}", cra[0].1);
    // The request cycle is what a ping after idle pays: over 600 ms more.
    assert!(vbdc[0].1 - cra[0].1 > 600 * MS);
}

#[test]
fn rbdc_follows_a_steady_stream_after_the_request_cycle() {
    // 1000 B every 40 ms (200 kbit/s) for 10 s, RBDC only.
    let arrivals: Vec<(u64, u32)> = (0..250u64).map(|i| (i * 40 * MS, 1000)).collect();
    let out = drive(&up("{ carrier = \"2 Mbit/s\", rbdc_max = \"1024 kbit/s\" }"), &arrivals);
    assert_eq!(out.len(), 250, "every packet gets through");
    let delay = |(a, d): &(u64, u64)| (d - a) as f64 / 1e6;
    // The first packets wait for the first grant (23 super-frames ≈ 610 ms).
    assert!(delay(&out[0]) > 600.0 + 270.0, "first {} ms", delay(&out[0]));
    // Once the grant follows the arrivals, the queue stops growing: the
    // last second's delays are no worse than the first's.
    let late: Vec<f64> = out.iter().filter(|(a, _)| *a > 9_000 * MS).map(delay).collect();
    let worst_late = late.iter().cloned().fold(0.0, f64::max);
    assert!(worst_late < delay(&out[0]) + 100.0, "late delays {late:?}");
}

#[test]
fn contention_shares_the_carrier_fairly() {
    // A greedy 1 Mbit/s stream on a 2 Mbit/s carrier shared with 9 others
    // asking for 300 kbit/s each: max-min fair share is 200 kbit/s.
    let arrivals: Vec<(u64, u32)> = (0..1250u64).map(|i| (i * 8 * MS, 1000)).collect();
    let prof = up("{ carrier = \"2 Mbit/s\", rbdc_max = \"1024 kbit/s\", terminals = 9, load = \"300 kbit/s\", buffer = \"10 MB\" }");
    let out = drive(&prof, &arrivals);
    // Bytes delivered between 3 s and 8 s, after the first grants.
    let bytes = out.iter().filter(|(_, d)| (3_270 * MS..8_270 * MS).contains(d)).count() as f64 * 1000.0;
    let rate = bytes * 8.0 / 5.0;
    assert!((180e3..220e3).contains(&rate), "our share {rate} bit/s");
}

/// Departures `(user, arrived, due)` of `(arrival ns, len, user)` packets.
fn drive_users(prof: &Profile, arrivals: &[(u64, u32, u32)]) -> Vec<(u32, u64, u64)> {
    let mut p: Pipeline<()> = Pipeline::new(&prof.up, prof.base_rtt(), 1, 0);
    let (out, drops) = common::drive_users(&mut p, arrivals);
    assert!(drops.is_empty());
    common::user_departures(&out)
}

#[test]
fn one_user_alone_is_the_single_terminal() {
    // RBDC and VBDC (nothing granted before a terminal asks, so logging on
    // costs nothing): a user as its own terminal leaves exactly as all
    // traffic at one terminal does.
    let arrivals: Vec<(u64, u32, u32)> = (0..300u64).map(|i| (i * 30 * MS + i % 7 * MS, 600 + (i % 5) as u32 * 150, 11)).collect();
    let keys = "carrier = \"1 Mbit/s\", rbdc_max = \"512 kbit/s\", vbdc_max = \"16 KB\"";
    let one = drive_users(&up(&format!("{{ {keys} }}")), &arrivals);
    let each = drive_users(&up(&format!("{{ {keys}, each_user = true }}")), &arrivals);
    assert_eq!(one.len(), 300);
    assert_eq!(one, each);
}

#[test]
fn each_user_is_a_terminal_the_ncc_serves_apart() {
    // Two aircraft on a 1 Mbit/s return carrier: one sends 1 Mbit/s (more
    // than it can have), the other 100 kbit/s. As terminals of their own
    // the light one gets its rate (max-min fair) and its delay stays at the
    // request cycle; behind one terminal its packets queue behind the
    // greedy one's backlog, which grows by 100 kbit/s of excess a second.
    let mut arrivals: Vec<(u64, u32, u32)> = (0..2500u64).map(|i| (i * 8 * MS, 1000, 1)).collect();
    arrivals.extend((0..250u64).map(|i| (i * 80 * MS + 3 * MS, 1000, 2)));
    arrivals.sort_by_key(|a| a.0);
    let keys = "carrier = \"1 Mbit/s\", rbdc_max = \"1024 kbit/s\", buffer = \"10 MB\"";
    let light_delays = |out: &[(u32, u64, u64)]| -> Vec<f64> { out.iter().filter(|(u, a, _)| *u == 2 && *a > 15_000 * MS).map(|(_, a, d)| (d - a) as f64 / 1e6).collect() };
    let each = drive_users(&up(&format!("{{ {keys}, each_user = true }}")), &arrivals);
    let one = drive_users(&up(&format!("{{ {keys} }}")), &arrivals);
    let (apart, together) = (light_delays(&each), light_delays(&one));
    let worst_apart = apart.iter().cloned().fold(0.0, f64::max);
    let best_together = together.iter().cloned().fold(f64::INFINITY, f64::min);
    // 270 ms of flight plus at most a few super-frames of waiting.
    assert!(!apart.is_empty() && worst_apart < 270.0 + 10.0 * 26.5, "apart: {apart:?}");
    assert!(best_together > 1_000.0, "together: {together:?}");
    // The greedy one gets the rest of the carrier: 900 kbit/s between 5
    // and 15 s.
    let bytes = each.iter().filter(|(u, _, d)| *u == 1 && (5_000 * MS..15_000 * MS).contains(d)).count() as f64 * 1000.0;
    let rate = bytes * 8.0 / 10.0;
    assert!((850e3..950e3).contains(&rate), "the greedy one's share {rate} bit/s");
}
