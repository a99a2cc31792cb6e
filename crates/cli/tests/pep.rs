//! The PEPs, end to end on real stacks: split TCP and the QUIC tunnel
//! terminate the client's TCP in the gateways (the server sees a gateway,
//! not the client), UDP passes untouched, a VPN leaves them nothing to act
//! on; 500 concurrent connections through each; the tunnel refuses a wrong
//! key and garbage and keeps serving, turns a dead ground gateway into
//! client errors and serves again after a restart, rides out a 30 s outage,
//! sends jumbo datagrams where the space hop carries them;
//! no rule, namespace or process outlives a run, Ctrl-C included.

mod common;
use common::*;

use std::process::Command;
use std::time::{Duration, Instant};

/// Who the iperf3 server saw connecting, for a TCP or UDP test through the
/// `ifc` gateway chain.
fn remote_seen(pep: &[&str], udp: bool) -> String {
    let d = tempdir(&format!("pep-{}-{udp}", pep.join("-")));
    let j = d.join("server.json");
    let server = format!("iperf3 -s -1 -J > {}", j.display());
    let iperf = if udp { "iperf3 -c $AEROLINK_SERVER -u -b 1M -t 1 > /dev/null" } else { "iperf3 -c $AEROLINK_SERVER -n 200K > /dev/null" };
    // The run ends (and stops the server) when the client does; the server
    // writes its report just after the client has its own, so the client
    // waits until the report is there (the test's condition, not a time).
    let client = format!("{iperf}; timeout 10 sh -c 'until grep -q \"end\" {} 2>/dev/null; do sleep 0.05; done'", j.display());
    let mut args = vec!["run", "-q", "--topology", "ifc", "--space", "satcom-100", "--rate", "20Mbit/s", "--server", &server, "--client", &client];
    args.extend(pep);
    let o = aerolink(&args);
    assert!(o.status.success(), "{}", text(&o).1);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    v["start"]["connected"][0]["remote_host"].as_str().unwrap().to_string()
}

#[test]
fn split_tcp_terminates_tcp_in_the_gateways_and_leaves_udp_alone() {
    // Without a proxy the server sees the client; with one, the last proxy
    // on the way: the aircraft gateway (its address on the space hop) or the
    // ground gateway (its address on the terrestrial hop).
    assert_eq!(remote_seen(&[], false), "198.18.0.1");
    assert_eq!(remote_seen(&["--pep", "split-tcp", "--pep-at", "air"], false), "198.18.1.1");
    assert_eq!(remote_seen(&["--pep", "split-tcp", "--pep-at", "both"], false), "198.18.2.1");
    // UDP is not intercepted: iperf3 reports the UDP stream's peer, the
    // client itself.
    assert_eq!(remote_seen(&["--pep", "split-tcp"], true), "198.18.0.1");
    assert!(leftover_namespaces().is_empty());
}

#[test]
fn the_proxy_removes_its_rules_when_stopped() {
    let _ = aerolink(&["down", "tpep"]);
    let o = aerolink(&["up", "tpep", "--topology", "ifc", "--space", "satcom-100"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let ns = "al-tpep-airgw";
    let has_table = || Command::new("ip").args(["netns", "exec", ns, "nft", "list", "table", "inet", "aerolink_pep"]).output().map(|o| o.status.success()).unwrap_or(false);
    let mut child = Command::new(bin()).args(["exec", "tpep", "airgw", "--", bin(), "pep", "split-tcp"]).stdout(std::process::Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !has_table() {
        assert!(Instant::now() < deadline, "the proxy never installed its rules");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Stop the proxy itself (the process running in the gateway namespace).
    let pids = Command::new("ip").args(["netns", "pids", ns]).output().unwrap();
    for p in String::from_utf8_lossy(&pids.stdout).split_whitespace() {
        // SAFETY: signalling a process in our own lab.
        unsafe {
            libc::kill(p.parse().unwrap(), libc::SIGTERM);
        }
    }
    let _ = child.wait();
    assert!(!has_table(), "nftables rules left behind");
    let rules = Command::new("ip").args(["netns", "exec", ns, "ip", "rule", "show"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&rules.stdout).contains("0x1a"), "policy routing left behind");
    let o = aerolink(&["down", "tpep"]);
    assert!(o.status.success());
}

#[test]
fn the_quic_tunnel_carries_tcp_to_the_ground_gateway_and_leaves_udp_alone() {
    // The ground half opens the onward connection, from its address on the
    // terrestrial hop.
    assert_eq!(remote_seen(&["--pep", "quic-tunnel"], false), "198.18.2.1");
    assert_eq!(remote_seen(&["--pep", "quic-tunnel", "--tunnel-cc", "rate", "--tunnel-rate", "15Mbit/s"], false), "198.18.2.1");
    assert_eq!(remote_seen(&["--pep", "quic-tunnel", "--tunnel-cc", "sat", "--tunnel-preset", "sat", "--tunnel-rate", "20Mbit/s"], false), "198.18.2.1");
    assert_eq!(remote_seen(&["--pep", "quic-tunnel"], true), "198.18.0.1");
    assert!(leftover_namespaces().is_empty());
}

#[test]
fn the_tunnel_sends_jumbo_datagrams_where_the_space_hop_carries_them() {
    // Mean IP packet size on the space hop's down direction, which carries
    // the download: the tunnel's datagrams, as large as the path allows.
    let mean_down_packet = |mtu: &str| {
        let client = "iperf3 -c $AEROLINK_SERVER -t 3 -R > /dev/null";
        let o = aerolink(&[
            "run",
            "--json",
            "--topology",
            "ifc",
            "--rate",
            "200Mbit/s",
            "--rtt",
            "10ms",
            "--loss",
            "0",
            "--mtu",
            mtu,
            "--pep",
            "quic-tunnel",
            "--server",
            "iperf3 -s -1",
            "--client",
            client,
        ]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let d = v["link"]["directions"].as_array().unwrap().iter().find(|d| d["hop"] == 1 && d["dir"] == "down").unwrap().clone();
        d["bytes_out"].as_f64().unwrap() / d["packets_out"].as_f64().unwrap().max(1.0)
    };
    // 1500: quinn's own largest datagram (1452 B of UDP payload), no probe
    // beyond it. 9000: path MTU discovery finds up to 8952 B.
    let ordinary = mean_down_packet("1500");
    assert!((1200.0..=1500.0).contains(&ordinary), "{ordinary} B per packet on a 1500-byte space hop");
    let jumbo = mean_down_packet("9000");
    assert!(jumbo > 4.0 * ordinary, "{jumbo} B per packet on a 9000-byte space hop, {ordinary} B on a 1500-byte one");
}

#[test]
fn a_vpn_leaves_the_proxies_nothing_to_act_on() {
    // Split-TCP proxies run in both gateways, yet the server sees the
    // client's address inside the tunnel: its TCP was never intercepted.
    assert_eq!(remote_seen(&["--pep", "vpn"], false), "198.19.0.1");
    assert!(leftover_namespaces().is_empty());
}

/// The sizes of the packets that entered the first hop (client → aircraft
/// gateway) while the client pinged the server with 1000-byte payloads
/// (1028-byte IP packets) through `pep`.
fn ping_sizes_on_the_cabin_hop(pep: &str) -> Vec<u64> {
    let d = tempdir(&format!("vpn-sizes-{pep}"));
    let log = d.join("run.log");
    let o = aerolink(&["run", "--topology", "ifc", "--space", "geo-600", "--pep", pep, "--log", log.to_str().unwrap(), "--client", "ping -c 5 -i 0.2 -s 1000 $AEROLINK_SERVER > /dev/null"]);
    assert!(o.status.success(), "{pep}: {}", text(&o).1);
    let text = std::fs::read_to_string(&log).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() > 5 && f[1] == "0" && f[2] == "up" && f[3] == "arrive")
        .map(|f| f[5].parse().unwrap())
        .collect()
}

#[test]
fn openvpn_hides_the_tcp_and_costs_its_bytes_per_packet() {
    // Debian's OpenVPN between client and server: the split-TCP proxies in
    // both gateways see nothing to intercept, as with our tunnel.
    assert_eq!(remote_seen(&["--pep", "openvpn"], false), "198.19.0.1");
    // Per packet: ours adds 38 bytes (IP, UDP, the virtio header); OpenVPN
    // in static-key mode adds IP and UDP (28), its packet ID and time (8,
    // encrypted with the packet and padded to AES's 16-byte blocks), the
    // IV (16) and the HMAC-SHA256 (32): 1028 → 1116 bytes.
    let count = |v: &[u64], n: u64| v.iter().filter(|&&x| x == n).count();
    assert_eq!(count(&ping_sizes_on_the_cabin_hop("none"), 1028), 5);
    assert_eq!(count(&ping_sizes_on_the_cabin_hop("vpn"), 1028 + 38), 5);
    let ov = ping_sizes_on_the_cabin_hop("openvpn");
    assert_eq!(count(&ov, 28 + 16 + 32 + (1028 + 8) / 16 * 16 + 16), 5, "{ov:?}");
    assert!(leftover_namespaces().is_empty());
    assert!(orphan_processes("openvpn --dev vpn0").is_empty(), "an openvpn process was left behind");
}

#[test]
fn five_hundred_concurrent_connections_pass_each_pep() {
    let serve = format!("{} workload serve", bin());
    for pep in ["split-tcp", "quic-tunnel", "vpn"] {
        let client = format!("{} workload conns --server $AEROLINK_SERVER --count 500 --bytes 20000 --timeout 60s", bin());
        let o = aerolink(&["run", "-q", "--topology", "ifc", "--space", "satcom-100", "--rate", "50Mbit/s", "--pep", pep, "--ready-port", "5201", "--server", &serve, "--client", &client]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{pep}: {out} {err}");
        let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert_eq!(v["ok"], 500, "{pep}: {v}");
        assert_eq!(v["failed"], 0, "{pep}: {v}");
    }
    assert!(leftover_namespaces().is_empty());
}

/// Takes a lab that is up down again, even when the test fails half-way.
struct Down(&'static str);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = Command::new(bin()).args(["down", self.0]).output();
    }
}

/// Brings up lab `lab` on the ifc chain around satcom-100 (`rate`: the
/// space hop's, if given), taken down when the guard drops.
fn ifc_lab(lab: &'static str, rate: Option<&str>) -> Down {
    let _ = aerolink(&["down", lab]);
    let down = Down(lab);
    let mut args = vec!["up", lab, "--topology", "ifc", "--space", "satcom-100"];
    if let Some(r) = rate {
        args.extend(["--rate", r]);
    }
    let o = aerolink(&args);
    assert!(o.status.success(), "{}", text(&o).1);
    down
}

/// A process in a lab namespace, stopped with SIGTERM when dropped.
fn in_ns(ns: &str, args: &[&str], stderr: &std::path::Path) -> KillOnDrop {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).args(args).stdout(std::process::Stdio::piped()).stderr(std::fs::File::create(stderr).unwrap());
    KillOnDrop(c.spawn().unwrap())
}

/// Waits for a proxy's "ready" line.
fn ready(p: &mut KillOnDrop, log: &std::path::Path) {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(p.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "{}", std::fs::read_to_string(log).unwrap_or_default());
}

fn stop(p: &mut KillOnDrop) {
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(p.0.id() as i32, libc::SIGTERM);
    }
    let _ = p.0.wait();
}

fn keyfile(d: &std::path::Path, name: &str) -> String {
    let o = aerolink(&["pep", "keygen"]);
    assert!(o.status.success());
    let path = d.join(name);
    std::fs::write(&path, &o.stdout).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.to_string_lossy().to_string()
}

fn bulk(lab: &str, bytes: &str) -> std::process::Output {
    Command::new("ip").args(["netns", "exec", &format!("al-{lab}-client"), bin(), "workload", "bulk", "--server", "198.18.2.2", "--bytes", bytes]).output().unwrap()
}

#[test]
fn the_tunnel_refuses_a_wrong_key_and_garbage_and_keeps_serving() {
    let lab = "ttun";
    let _down = ifc_lab(lab, Some("20Mbit/s"));
    let d = tempdir("tunnel-auth");
    let (good, bad) = (keyfile(&d, "good.psk"), keyfile(&d, "bad.psk"));
    let glog = d.join("ground.err");
    let mut ground = in_ns(&format!("al-{lab}-groundgw"), &[bin(), "pep", "quic-tunnel", "ground", "--psk", &good], &glog);
    ready(&mut ground, &glog);
    let mut server = in_ns(&format!("al-{lab}-server"), &[bin(), "workload", "serve"], &d.join("server.err"));
    // Garbage on the tunnel port: random datagrams of many sizes.
    let o = Command::new("ip")
        .args(["netns", "exec", &format!("al-{lab}-airgw"), "bash", "-c", "for n in 1 7 40 300 1200 1400; do head -c $n /dev/urandom > /dev/udp/198.18.1.2/4433; done"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    // An air gateway with the wrong key gets no answer at all (the ground
    // answers only Initials keyed with its key), says what that may mean,
    // and leaves no rule behind.
    let o =
        Command::new("ip").args(["netns", "exec", &format!("al-{lab}-airgw"), bin(), "pep", "quic-tunnel", "air", "--ground", "198.18.1.2", "--psk", &bad, "--open-timeout", "4s"]).output().unwrap();
    assert!(!o.status.success());
    assert!(text(&o).1.contains("no answer") && text(&o).1.contains("different key"), "{}", text(&o).1);
    let table = Command::new("ip").args(["netns", "exec", &format!("al-{lab}-airgw"), "nft", "list", "table", "inet", "aerolink_pep"]).output().unwrap();
    assert!(!table.status.success(), "rules left behind by a proxy that failed to start");
    // The right key works, and the tunnel carries a transfer.
    let alog = d.join("air.err");
    let mut air = in_ns(&format!("al-{lab}-airgw"), &[bin(), "pep", "quic-tunnel", "air", "--ground", "198.18.1.2", "--psk", &good], &alog);
    ready(&mut air, &alog);
    let o = bulk(lab, "300000");
    assert!(o.status.success(), "{}", text(&o).1);
    stop(&mut air);
    stop(&mut ground);
    stop(&mut server);
    let log = std::fs::read_to_string(&glog).unwrap();
    assert!(log.contains("not keyed with our key"), "the ground gateway did not log the unanswered Initials: {log}");
    // A 1-byte datagram can never be QUIC: it is always screened and logged.
    assert!(log.contains("dropped a 1-byte datagram"), "garbage was not logged: {log}");
    assert!(log.contains("1 connections"), "{log}");
    assert!(aerolink(&["down", lab]).status.success());
}

/// A tunnel (ground and air halves) in lab `lab` with a 50 MB download
/// (≈ 50 s at 8 Mbit/s) flowing through it; the ground half is killed by
/// the test.
struct Downloading {
    ground: KillOnDrop,
    air: KillOnDrop,
    server: KillOnDrop,
    client: KillOnDrop,
    psk: String,
    glog: std::path::PathBuf,
    alog: std::path::PathBuf,
}

fn downloading(lab: &str, d: &std::path::Path) -> Downloading {
    let psk = keyfile(d, "k.psk");
    let glog = d.join("ground.err");
    let mut ground = in_ns(&format!("al-{lab}-groundgw"), &[bin(), "pep", "quic-tunnel", "ground", "--psk", &psk], &glog);
    ready(&mut ground, &glog);
    let alog = d.join("air.err");
    let mut air = in_ns(&format!("al-{lab}-airgw"), &[bin(), "pep", "quic-tunnel", "air", "--ground", "198.18.1.2", "--psk", &psk], &alog);
    ready(&mut air, &alog);
    let server = in_ns(&format!("al-{lab}-server"), &[bin(), "workload", "serve"], &d.join("server.err"));
    let sns = format!("al-{lab}-server");
    let on_server = |what: &[&str]| {
        let mut a = vec!["netns", "exec", sns.as_str(), "ss", "-Htn"];
        a.extend_from_slice(what);
        Command::new("ip").args(&a).output().map(|o| !o.stdout.is_empty()).unwrap_or(false)
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !on_server(&["-l", "sport = :5201"]) {
        assert!(Instant::now() < deadline, "the workload server never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    let client = KillOnDrop(
        Command::new("ip")
            .args(["netns", "exec", &format!("al-{lab}-client"), bin(), "workload", "bulk", "--server", "198.18.2.2", "--bytes", "50000000"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !on_server(&["state", "established", "sport = :5201"]) {
        assert!(Instant::now() < deadline, "the download never reached the server");
        std::thread::sleep(Duration::from_millis(20));
    }
    Downloading { ground, air, server, client, psk, glog, alog }
}

/// Waits for the client to end (within `limit` of `since`), and says how.
fn client_end(client: &mut KillOnDrop, since: Instant, limit: Duration) -> std::process::ExitStatus {
    loop {
        if let Some(st) = client.0.try_wait().unwrap() {
            return st;
        }
        assert!(since.elapsed() < limit, "the client still waits {:?} after the ground gateway died", since.elapsed());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// After the ground gateway came back: a new connection opens a new tunnel
/// and works; then everything stops and the lab goes.
fn serves_again(lab: &str, mut air: KillOnDrop, mut ground: KillOnDrop, mut server: KillOnDrop, alog: &std::path::Path) {
    let o = bulk(lab, "200000");
    assert!(o.status.success(), "{}", text(&o).1);
    stop(&mut air);
    stop(&mut ground);
    stop(&mut server);
    assert!(std::fs::read_to_string(alog).unwrap().matches("tunnel to 198.18.1.2:4433 up").count() >= 2);
    assert!(aerolink(&["down", lab]).status.success());
}

#[test]
fn killing_the_ground_gateway_gives_clients_errors_and_a_restart_serves_again() {
    let lab = "tkill";
    let _down = ifc_lab(lab, Some("8Mbit/s"));
    let d = tempdir("tunnel-kill");
    let Downloading { mut ground, air, server, mut client, psk, glog, alog } = downloading(lab, &d);
    let gns = format!("al-{lab}-groundgw");
    // The ground gateway dies (SIGKILL: no goodbye) and comes back.
    ground.0.kill().unwrap();
    let _ = ground.0.wait();
    let killed = Instant::now();
    let mut ground = in_ns(&gns, &[bin(), "pep", "quic-tunnel", "ground", "--psk", &psk], &glog);
    ready(&mut ground, &glog);
    // The client gets an error, not a hang: the restarted gateway resets the
    // stale tunnel at the air half's next packet (keep-alives every 10 s).
    let st = client_end(&mut client, killed, Duration::from_secs(40));
    assert!(!st.success(), "the download cannot have completed");
    serves_again(lab, air, ground, server, &alog);
}

/// A ground gateway that dies and stays dead: its host answers the air
/// half's packets with "port unreachable", and the air half ends the tunnel
/// within seconds (the idle timeout would take 120 s), so clients get
/// errors at once and the next connection opens a new tunnel.
#[test]
fn a_dead_ground_gateway_is_noticed_within_seconds() {
    let lab = "tdead";
    let _down = ifc_lab(lab, Some("8Mbit/s"));
    let d = tempdir("tunnel-dead");
    let Downloading { mut ground, air, server, mut client, psk, glog, alog } = downloading(lab, &d);
    let gns = format!("al-{lab}-groundgw");
    ground.0.kill().unwrap();
    let _ = ground.0.wait();
    let killed = Instant::now();
    // Seconds, against the 120 s idle timeout that was the only way to
    // notice before (generous for a loaded 2-core machine).
    let st = client_end(&mut client, killed, Duration::from_secs(20));
    eprintln!("the client had its error {:?} after the kill", killed.elapsed());
    assert!(!st.success(), "the download cannot have completed");
    let log = std::fs::read_to_string(&alog).unwrap();
    assert!(log.contains("is gone"), "{log}");
    // The gateway back: the next connection opens a new tunnel.
    let mut ground = in_ns(&gns, &[bin(), "pep", "quic-tunnel", "ground", "--psk", &psk], &glog);
    ready(&mut ground, &glog);
    serves_again(lab, air, ground, server, &alog);
}

#[test]
fn the_tunnel_rides_out_a_30_second_outage() {
    let d = tempdir("tunnel-outage");
    let profile = d.join("outage.toml");
    std::fs::write(&profile, "name = \"outage30\"\n[link]\nrate = \"4 Mbit/s\"\nrtt = \"100 ms\"\noutages = [ { start = \"6 s\", duration = \"30 s\", mode = \"drop\" } ]\n").unwrap();
    // 5 MB at 4 Mbit/s is 10 s of transfer: it starts before the outage and
    // can only finish after it.
    let client = format!("{} workload bulk --server $AEROLINK_SERVER --bytes 5000000", bin());
    let serve = format!("{} workload serve", bin());
    let o = aerolink(&["run", "-q", "--topology", "ifc", "--space", profile.to_str().unwrap(), "--pep", "quic-tunnel", "--ready-port", "5201", "--server", &serve, "--client", &client]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out} {err}");
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert!(v["completion_ms"].as_f64().unwrap() > 30_000.0, "the transfer did not span the outage: {v}");
    // Bytes per 100 ms at the client: one silence (its longest run of empty
    // bins, read by its length: the outage is at 6–36 s of the link's
    // clock, which starts before the client's), and data again within a
    // few seconds of its end. Stock QUIC resumed only at ≈ 69 s here: its
    // probes back off without bound, and the first ACK after the outage
    // gave a 30 s RTT sample that held off loss detection for 34 s (the
    // tunnel caps the one and drops the other).
    let bins: Vec<u64> = v["bins_bytes"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).collect();
    let (longest, at) = longest_silence(&bins);
    let (silence_s, from_s) = (longest as f64 / 10.0, at as f64 / 10.0);
    assert!(from_s <= 6.2, "the silence began at {from_s} s of the client's clock, after the outage's start: {v}");
    assert!((29.5..=36.0).contains(&silence_s), "a {silence_s} s silence from {from_s} s for a 30 s outage (data back more than 6 s after it): {v}");
    // Neither half saw a relay break: the outage reset nothing.
    let stats: Vec<&str> = err.lines().filter(|l| l.contains("connections (")).collect();
    assert_eq!(stats.len(), 2, "{err}");
    assert!(stats.iter().all(|l| l.contains(" 0 broken")), "{err}");
    assert!(leftover_namespaces().is_empty());
}

#[test]
fn ctrl_c_during_a_tunnel_run_leaves_nothing() {
    require_root();
    let marker = "31.4159";
    let mut run = KillOnDrop(
        Command::new(bin())
            .args(["run", "-q", "--topology", "ifc", "--space", "satcom-100", "--pep", "quic-tunnel", "--client", &format!("sleep {marker}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let sleeping = || Command::new("pgrep").args(["-f", &format!("^sleep {marker}")]).output().map(|o| !o.stdout.is_empty()).unwrap_or(false);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sleeping() {
        assert!(Instant::now() < deadline, "the client never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(run.0.id() as i32, libc::SIGINT);
    }
    let st = run.0.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    assert!(leftover_namespaces().is_empty(), "{:?}", leftover_namespaces());
    let peps = orphan_processes("aerolink pep ");
    assert!(peps.is_empty(), "proxies left running: {peps:?}");
    assert!(!sleeping());
}

#[test]
fn the_rate_tunnel_follows_bonded_channels_through_call_drops() {
    // Three 24 kbit/s channels dropping every 3 s on average, back in 2 s:
    // the tunnel's rate follows the channels up (the link monitor), loss
    // is detected by time, and a 100 KB download gets through.
    let d = tempdir("tunnel-bonded");
    let profile = d.join("bond.toml");
    std::fs::write(
        &profile,
        "[link]\nbonded = { channels = 3, rate = \"24 kbit/s\", delay = \"100 ms\", jitter = \"normal 30 ms\", drop_every = \"3 s\", redial = [\"2 s\", \"2 s\"], queue = \"8 KB\" }\n",
    )
    .unwrap();
    let client = format!("{} workload bulk --server $AEROLINK_SERVER --bytes 100000", bin());
    let serve = format!("{} workload serve", bin());
    let o = aerolink(&[
        "run",
        "-q",
        "--topology",
        "ifc",
        "--space",
        profile.to_str().unwrap(),
        "--seed",
        "3",
        "--pep",
        "quic-tunnel",
        "--tunnel-cc",
        "rate",
        "--tunnel-rate",
        "link",
        "--ready-port",
        "5201",
        "--server",
        &serve,
        "--client",
        &client,
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out} {err}");
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(v["bytes"], 100_000);
    // The ground half (it sends the download) changed its rate with the
    // channels: 64.8 kbit/s with three up, less with fewer.
    let rates: Vec<&str> = err.lines().filter(|l| l.contains("link monitor") && l.contains(" down,")).collect();
    assert!(rates.iter().any(|l| l.contains("rate 64800 bit/s")), "{err}");
    assert!(rates.iter().any(|l| l.contains("rate 43200 bit/s") || l.contains("rate 21600 bit/s")), "{err}");
    assert!(leftover_namespaces().is_empty());
    // Following needs a link whose capacity changes.
    let o = aerolink(&["run", "--topology", "ifc", "--pep", "quic-tunnel", "--tunnel-cc", "rate", "--tunnel-rate", "link", "--client", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o).1);
    assert!(text(&o).1.contains("link monitor"), "{}", text(&o).1);
}

#[test]
fn pep_settings_are_checked() {
    let d = tempdir("pep-bad");
    let f = d.join("x.toml");
    std::fs::write(&f, "name = \"x\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\npep = \"quic-tunnel\"\n").unwrap();
    let o = aerolink(&["experiment", "plan", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("workload[1].pep") && text(&o).1.contains("topology = \"ifc\""), "{}", text(&o).1);
    std::fs::write(&f, "name = \"x\"\ntopology = \"ifc\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\npep = \"socks\"\n").unwrap();
    let o = aerolink(&["experiment", "plan", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("quic-tunnel"), "{}", text(&o).1);
    let o = aerolink(&["run", "--pep", "quic-tunnel", "--client", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--topology ifc"), "{}", text(&o).1);
    let o = aerolink(&["run", "--topology", "ifc", "--pep", "quic-tunnel", "--tunnel-cc", "rate", "--client", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("rate"), "{}", text(&o).1);
    // Only the rate controller follows the link monitor.
    let o = aerolink(&["run", "--topology", "ifc", "--pep", "quic-tunnel", "--tunnel-cc", "sat", "--tunnel-rate", "link", "--client", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("only tunnel_cc \"rate\""), "{}", text(&o).1);
    std::fs::write(&f, "name = \"x\"\ntopology = \"ifc\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\npages = [\"1x1KB\"]\npep = \"quic-tunnel\"\ntunnel_max_probe = \"soon\"\n").unwrap();
    let o = aerolink(&["experiment", "plan", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("tunnel_max_probe") && text(&o).1.contains("off"), "{}", text(&o).1);
    assert_eq!(text(&o).1.lines().count(), 1);
    let o = aerolink(&["run", "--topology", "ifc", "--pep", "quic-tunnel", "--tunnel-max-probe", "0s", "--client", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--tunnel-max-probe"), "{}", text(&o).1);
    std::fs::write(d.join("short.psk"), "abcd").unwrap();
    // A key others can read is refused first (as ssh refuses one)…
    let o = aerolink(&["pep", "quic-tunnel", "ground", "--psk", d.join("short.psk").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("readable by group or others") && text(&o).1.contains("chmod 600"), "{}", text(&o).1);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.join("short.psk"), std::fs::Permissions::from_mode(0o600)).unwrap();
    // …then one too short.
    let o = aerolink(&["pep", "quic-tunnel", "ground", "--psk", d.join("short.psk").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("at least 16 bytes"), "{}", text(&o).1);
    assert_eq!(text(&o).1.lines().count(), 1);
    let good = keyfile(&d, "good.psk");
    for bad in ["0s", "soon"] {
        let o = aerolink(&["pep", "quic-tunnel", "ground", "--psk", &good, "--max-probe-timeout", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(text(&o).1.contains("--max-probe-timeout") && text(&o).1.contains("off"), "{}", text(&o).1);
        assert_eq!(text(&o).1.lines().count(), 1);
    }
}

/// Split TCP sets the initial window on its onward routes (both families,
/// toward the server), not on those back toward the aircraft; the
/// prefetching proxy's ground half on every route (its pushes go back
/// toward the aircraft). Both restore them when they stop.
#[test]
fn the_proxies_initial_window_is_set_while_they_run_and_restored_after() {
    let lab = "ticw";
    let _down = ifc_lab(lab, None);
    let (ns, d) = (format!("al-{lab}-groundgw"), tempdir("initcwnd"));
    let routes = |dev: &str| ["-4", "-6"].map(|f| String::from_utf8(Command::new("ip").args(["-n", &ns, f, "route", "show", "dev", dev]).output().unwrap().stdout).unwrap()).concat();
    let log = d.join("pep.err");
    for (pep_args, dev, untouched) in [(&["split-tcp", "--from", "to-airgw"][..], "to-server", Some("to-airgw")), (&["http-prefetch", "ground"][..], "to-airgw", None)] {
        let before = routes(dev);
        assert!(!before.contains("initcwnd"), "{before}");
        let args = [&[bin(), "pep"][..], pep_args, &["--initcwnd", "40"]].concat();
        let mut pep = in_ns(&ns, &args, &log);
        ready(&mut pep, &log);
        let during = routes(dev);
        assert!(during.matches("initcwnd 40").count() >= 2, "{pep_args:?}: {during}");
        if let Some(other) = untouched {
            assert_eq!(during.matches("initcwnd 40").count(), 2, "{pep_args:?}: {during}");
            assert!(!routes(other).contains("initcwnd"), "{pep_args:?}");
        }
        stop(&mut pep);
        assert_eq!(routes(dev), before, "{pep_args:?}: routes not restored");
    }
}
