//! A user's mistake gets exit status 2 and one line that names the file or
//! flag, the key, and what is allowed — never a panic or a backtrace.

mod common;
use common::*;

use std::process::Command;

fn one_line_error(args: &[&str]) -> String {
    let o = Command::new(bin()).args(args).output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "args {args:?}: stdout {out} stderr {err}");
    assert_eq!(err.trim().lines().count(), 1, "more than one line: {err}");
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{err}");
    err
}

#[test]
fn bad_profiles_and_flags_name_what_is_wrong() {
    let d = tempdir("errors");
    let bad = d.join("bad.toml");
    std::fs::write(&bad, "[down]\nrate = \"very fast\"\n").unwrap();
    let e = one_line_error(&["profiles", "show", bad.to_str().unwrap()]);
    assert!(e.contains("bad.toml") && e.contains("down.rate") && e.contains("Mbit/s"), "{e}");

    std::fs::write(&bad, "[link]\nloss = 0.5\nspeed = 3\n").unwrap();
    let e = one_line_error(&["run", "--profile", bad.to_str().unwrap(), "--client", "true"]);
    assert!(e.contains("link.") && e.contains("allowed"), "{e}");

    let e = one_line_error(&["run", "--rate", "fast", "--client", "true"]);
    assert!(e.contains("--rate"), "{e}");
    let e = one_line_error(&["run", "--profile", "nosuch", "--client", "true"]);
    assert!(e.contains("nosuch") && e.contains("mss"), "{e}");
    let e = one_line_error(&["run", "--up-jitter", "gaussian", "--client", "true"]);
    assert!(e.contains("--up-jitter"), "{e}");
    let e = one_line_error(&["stats", "/etc/hostname"]);
    assert!(e.contains("not an aerolink packet log"), "{e}");

    // Resolving a browser's names by DNS re-points /etc/resolv.conf: only
    // in a lab's own mount namespace, never the host's.
    let e = one_line_error(&["workload", "browser", "--server", "198.18.0.2", "--resolver", "198.18.0.2", "--page", "news"]);
    assert!(e.contains("--resolver") && e.contains("lab's own namespaces"), "{e}");

    // A negative value reaches our parser, not clap's "unexpected argument".
    let e = one_line_error(&["run", "--rate", "-1Mbit/s", "--client", "true"]);
    assert!(e.contains("--rate") && !e.contains("unexpected argument"), "{e}");
    let e = one_line_error(&["run", "--up-delay", "-5ms", "--client", "true"]);
    assert!(e.contains("--up-delay"), "{e}");
    // A page size without a unit is refused, not read as bytes.
    let e = one_line_error(&["bench", "web", "--page", "10x100", "--rtt", "10ms"]);
    assert!(e.contains("10x100") && e.contains("no unit"), "{e}");
    // A TOML syntax error: one line, with its line and column.
    std::fs::write(&bad, "name = \"x\"\n[link\nrtt = \"1 ms\"\n").unwrap();
    let e = one_line_error(&["profiles", "show", bad.to_str().unwrap()]);
    assert!(e.contains("bad.toml") && e.contains("line 2, column 6") && e.contains("TOML syntax error"), "{e}");
    // A route's rate at a cell's edge needs the rate near a tower, and
    // only that route takes one; the edge's keys are checked too.
    let e = one_line_error(&["route", "show", "FRA-MAD", "--tech", "atg", "--set", "edge_rate = \"2 Mbit/s\""]);
    assert!(e.contains("edge_rate") && e.contains("--rate"), "{e}");
    let e = one_line_error(&["route", "show", "FRA-MAD", "--tech", "geo", "--rate", "10Mbit/s"]);
    assert!(e.contains("--rate: only with edge_rate"), "{e}");
    let e = one_line_error(&["route", "show", "FRA-MAD", "--tech", "atg", "--set", "edge_loss = \"140%\""]);
    assert!(e.contains("edge_loss: expected a probability"), "{e}");
    std::fs::write(&bad, "[link]\nroute = { from = \"FRA\", to = \"MAD\", tech = \"atg\", edge_loss = \"5%\" }\nloss = \"1%\"\n").unwrap();
    let e = one_line_error(&["profiles", "show", bad.to_str().unwrap()]);
    assert!(e.contains("bad.toml") && e.contains("remove `loss`"), "{e}");
}

#[test]
fn a_benchmark_that_would_measure_nothing_is_refused_before_it_starts() {
    // `bench pep --seconds 0` ran the page loads, then iperf3 -t 0, which
    // never ends.
    for (args, flag) in [
        (&["bench", "pep", "--seconds", "0", "--repeat", "0"][..], "--seconds"),
        (&["bench", "pep", "--repeat", "1000"][..], "--repeat"),
        (&["bench", "emulator", "--seconds", "0"][..], "--seconds"),
        (&["bench", "queue", "--seconds", "0"][..], "--seconds"),
        (&["bench", "queue", "--rates", "fast"][..], "--rates"),
        (&["bench", "parallel", "--seconds", "0"][..], "--seconds"),
        (&["bench", "fleet", "--terminals", "0"][..], "--terminals"),
        (&["bench", "fleet", "--terminals", "1001"][..], "--terminals"),
        (&["bench", "fleet", "--seconds", "2"][..], "--seconds"),
        (&["bench", "fleet", "--load", "video"][..], "--load"),
        (&["bench", "flight", "--seconds", "10"][..], "--seconds"),
        (&["bench", "orchestration", "--runs", "0"][..], "--runs"),
        (&["bench", "web", "--repeat", "0", "--rtt", "10ms"][..], "--repeat"),
    ] {
        let e = one_line_error(args);
        assert!(e.contains(flag), "{args:?}: {e}");
    }
}

#[test]
fn a_bad_topology_is_refused() {
    let d = tempdir("topo");
    let t = d.join("t.toml");
    std::fs::write(&t, "hosts = [\"client\", \"server\"]\n").unwrap();
    let e = one_line_error(&["run", "--topology", t.to_str().unwrap(), "--client", "true"]);
    assert!(e.contains("t.toml") && e.contains("hop"), "{e}");
    std::fs::write(&t, "hosts = [\"client\", \"Server!\"]\n[[hop]]\nprofile = \"mss\"\n").unwrap();
    let e = one_line_error(&["run", "--topology", t.to_str().unwrap(), "--client", "true"]);
    assert!(e.contains("hosts"), "{e}");
}

#[test]
fn without_root_where_it_cannot_run_it_says_why() {
    require_root();
    // An ordinary user runs aerolink in a user namespace of its own
    // (tests/rootless.rs); where that cannot work it says why in one line.
    // Here /dev/net/tun is hidden (a tmpfs over /dev/net in a mount
    // namespace of this command only), then setpriv drops to `nobody`.
    let o = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", "mount -t tmpfs none /dev/net && exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$0\" run --client true", bin()])
        .output()
        .expect("unshare and setpriv (util-linux)");
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("needs root, or a user namespace of its own") && err.contains("/dev/net/tun is not open to this user"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A profile written in tc's spellings is the same link as ours, and is
/// shown back in our form.
#[test]
fn tc_spellings_parse_to_the_same_link() {
    let d = tempdir("tc-units");
    let (tc, ours) = (d.join("tc.toml"), d.join("ours.toml"));
    std::fs::write(&tc, "name = \"x\"\n[link]\nrate = \"2mbit\"\ndelay = \"50msec\"\njitter = \"uniform 250usec\"\n").unwrap();
    std::fs::write(&ours, "name = \"x\"\n[link]\nrate = \"2 Mbit/s\"\ndelay = \"50 ms\"\njitter = \"uniform 0.25 ms\"\n").unwrap();
    let show = |p: &std::path::Path| {
        let o = aerolink(&["profiles", "show", "--json", p.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let (a, b) = (show(&tc), show(&ours));
    assert_eq!(a, b);
    assert_eq!(a["down"]["rate"], "2 Mbit/s");
}

#[test]
fn netem_and_mahimahi_words_describe_the_same_link_as_ours() {
    let show = |args: &[&str]| {
        let mut a = vec!["profiles", "show", "--json"];
        a.extend_from_slice(args);
        let o = aerolink(&a);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    // netem's one string, jitter reordering as netem's does.
    let netem = show(&["--netem", "delay 100ms 10ms loss 1% rate 2mbit limit 1000"]);
    let ours = show(&["--delay", "100ms", "--jitter", "uniform 10ms", "--reorder", "--loss", "1%", "--rate", "2Mbit/s", "--queue", "1000 packets"]);
    assert_eq!(netem["up"], ours["up"]);
    assert_eq!(netem["down"], ours["down"]);
    // Gilbert–Elliott in netem's order (p, r, 1-h, 1-k), per direction;
    // our own flags beat it.
    let ge = show(&["--down-netem", "loss gemodel 1% 10% 70% 0.1%", "--netem", "delay 5ms", "--delay", "7ms"]);
    let loss = ge["down"]["loss"].to_string();
    assert!(loss.contains("gilbert-elliott") && loss.contains("70%"), "{loss}");
    assert_eq!(ge["up"]["loss"], show(&["--delay", "7ms"])["up"]["loss"]);
    assert_eq!(ge["down"]["delay"], "7 ms");

    // Mahimahi's trace and queue flags, traces read unchanged.
    let d = tempdir("mahimahi-flags");
    let trace = d.join("down.trace");
    std::fs::write(&trace, "1\n2\n3\n4\n").unwrap();
    let mm = show(&["--downlink-trace", trace.to_str().unwrap(), "--downlink-queue", "droptail", "--downlink-queue-args", "bytes=30000", "--uplink-queue", "infinite"]);
    assert!(mm["down"]["rate"].as_str().unwrap().contains("down.trace"), "{}", mm["down"]);
    assert_eq!(mm["down"]["queue"], show(&["--down-queue", "30000 B"])["down"]["queue"]);
    assert_eq!(mm["up"]["queue"], show(&["--up-queue", "unlimited"])["up"]["queue"]);

    // What has no equivalent: one line, exit 2, naming the flag and what to use.
    for (args, says) in [
        (vec!["--netem", "delay 100ms 10ms 25%"], "--netem"),
        (vec!["--netem", "reorder 25%"], "through jitter"),
        (vec!["--uplink-queue", "codel"], "--uplink-queue: codel"),
        (vec!["--downlink-trace", "/nonexistent/d.trace"], "--downlink-trace"),
    ] {
        let mut a = vec!["profiles", "show"];
        a.extend_from_slice(&args);
        let o = aerolink(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_check_that_cannot_judge_says_why() {
    let d = tempdir("check-errors");
    let e = one_line_error(&["experiment", "check", "--db", d.join("none.db").to_str().unwrap()]);
    assert!(e.contains("--db") && e.contains("none.db") && e.contains("no such store"), "{e}");
    // An experiment file with a rule of its own is told where rules live.
    let exp = d.join("old.toml");
    std::fs::write(&exp, "name = \"old\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\nprotocols = [\"h1\"]\npages = [\"1x10KB\"]\n[[finding]]\nid = \"x\"\nholds = \"< 1\"\n").unwrap();
    let e = one_line_error(&["experiment", "check", exp.to_str().unwrap()]);
    assert!(e.contains("old.toml") && e.contains("finding") && e.contains("[[judge]]"), "{e}");
    // A mapping of an entry the catalogue does not have.
    std::fs::write(&exp, "name = \"old\"\nprofiles = [\"mss\"]\n[[workload]]\ntype = \"web\"\nprotocols = [\"h1\"]\npages = [\"1x10KB\"]\n[[judge]]\nid = \"no-such-entry\"\nmetric = \"plt_ms\"\nof = { series = \"h1\" }\n").unwrap();
    let cat = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../findings");
    let e = one_line_error(&["experiment", "check", exp.to_str().unwrap(), "--catalogue", cat.to_str().unwrap()]);
    assert!(e.contains("old.toml") && e.contains("judge[1].id") && e.contains("no-such-entry"), "{e}");
}
