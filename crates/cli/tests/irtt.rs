//! irtt, the community's UDP round-trip tester (Debian's package), run over
//! an emulated link: `aerolink analyze` and `fit` read the JSON it writes
//! (gzipped here, as irtt writes `.json.gz`) and count, per direction, the
//! very probes the link dropped.

mod common;
use common::*;

use serde_json::Value;

/// "dropped N by loss" of the summary line `aerolink run` prints for a
/// direction (`client → server` or `server → client`).
fn dropped_by_loss(stderr: &str, dir: &str) -> u64 {
    let line = stderr.lines().find(|l| l.contains(&format!("{dir}:"))).unwrap_or_else(|| panic!("no {dir} line in {stderr}"));
    let before = line.split(" by loss").next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("{line}"))
}

#[test]
fn an_irtt_run_over_the_link_is_analysed_and_fitted_with_its_drops() {
    let d = tempdir("irtt");
    let out = d.join("trip.json.gz");
    // 20 s of probes every 50 ms over mss (761 ms RTT, 3.05 % loss each
    // way): about 400 round trips, a dozen lost each way.
    let client = format!("irtt client -i 50ms -d 20s -q -o {} $AEROLINK_SERVER:2112", out.display());
    let o = aerolink(&["run", "--profile", "mss", "--server", "irtt server -b $AEROLINK_SERVER:2112", "--client", &client]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(std::fs::read(&out).unwrap()[..2], [0x1f, 0x8b], "irtt did not gzip {}", out.display());
    let page = d.join("trip.html");
    let o = aerolink(&["analyze", out.to_str().unwrap(), "-o", page.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let udp = &v["phases"][0]["udp"];
    // Every probe the link dropped, on the side it dropped it: irtt knows
    // which way from the server's window of received sequence numbers.
    let (up, down) = (dropped_by_loss(&err, "client → server"), dropped_by_loss(&err, "server → client"));
    assert!(up + down > 0, "no loss in 400 round trips at 3 % each way: {err}");
    assert_eq!((udp["lost_up"].as_u64(), udp["lost_down"].as_u64(), udp["lost_unknown"].as_u64()), (Some(up), Some(down), Some(0)), "{udp}");
    // The least RTT is the link's 761 ms plus the 60-byte probes'
    // serialisation at 1.89 Mbit/s and the hosts' own time: under 766.
    let min = udp["rtt_ms"]["min"].as_f64().unwrap();
    assert!((761.0..766.0).contains(&min), "least RTT {min}");
    assert_eq!(v["phases"][0]["technology"], "GEO satellite");
    assert!(std::fs::read_to_string(&page).unwrap().contains("GEO satellite"));
    // fit writes a profile from it that aerolink loads.
    let fitted = d.join("fitted.toml");
    let o = aerolink(&["fit", out.to_str().unwrap(), "-o", fitted.to_str().unwrap()]);
    assert!(o.status.success(), "{:?}", text(&o));
    let o = aerolink(&["profiles", "show", fitted.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{:?}", text(&o));
    // A file that is neither log: one line naming it and the round trip.
    let bad = d.join("bad.json");
    std::fs::write(&bad, "{\n  \"round_trips\": [{\"seqno\": 0, \"lost\": \"sideways\", \"timestamps\": {\"client\": {\"send\": {\"wall\": 1}}}}]\n}\n").unwrap();
    let o = aerolink(&["analyze", bad.to_str().unwrap()]);
    let (_, e) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.trim().lines().count() == 1 && e.contains("bad.json") && e.contains("round_trips[0]") && e.contains("sideways"), "{e}");
}
