//! `SSLKEYLOGFILE` makes every TLS endpoint of ours write its session keys,
//! and Debian's tshark decrypts a capture of a run with them: HTTP/1.1 and
//! HTTP/2 requests over TLS, HTTP/3 over QUIC. Without the key log the
//! same capture shows nothing of them (so the test can fail). `QLOGDIR`
//! gives every QUIC connection a qlog file of its own (JSON-SEQ).

mod common;
use common::*;

use std::process::Command;

/// The client side of the run: tshark captures the client's end of the
/// link while it loads the same page over h1, h2 and h3. A ping seen in
/// tshark's live output marks that everything sent before it is in the
/// file (tshark says "Capturing" before it captures). seen.txt is made
/// first: the background job's redirection may not have made it yet when
/// `mark` first counts (it then read an empty count and pinged forever).
const CLIENT: &str = r#"
: > seen.txt
tshark -i to-server -w cap.pcapng -P -l > seen.txt 2> tshark.err & pid=$!
mark() { n=$(grep -c ICMP seen.txt); until [ "$(grep -c ICMP seen.txt)" -gt "$n" ]; do kill -0 $pid || exit 1; ping -c 1 -W 1 $AEROLINK_SERVER > /dev/null; done; }
mark
for p in h1 h2 h3; do aerolink workload web --server $AEROLINK_SERVER --protocol $p --page 2x10KB > $p.json || exit 1; done
mark
kill -TERM $pid; wait $pid
"#;

fn fields(dir: &std::path::Path, keys: Option<&str>, filter: &str, field: &str) -> Vec<String> {
    let mut c = Command::new("tshark");
    c.current_dir(dir).args(["-r", "cap.pcapng", "-Y", filter, "-T", "fields", "-e", field]);
    if let Some(k) = keys {
        c.args(["-o", &format!("tls.keylog_file:{k}")]);
    }
    let o = c.output().expect("tshark (Debian: apt-get install tshark)");
    assert!(o.status.success(), "tshark {filter}: {}", text(&o).1);
    text(&o).0.lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
}

#[test]
fn tshark_decrypts_h1_h2_and_h3_with_the_key_log() {
    let d = tempdir("keylog");
    std::fs::write(d.join("client.sh"), CLIENT).unwrap();
    let keys = d.join("keys.log");
    // The built aerolink first on PATH, for the commands inside the lab.
    let dir = std::path::Path::new(bin()).parent().unwrap();
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default());
    let o = aerolink_cmd()
        .current_dir(&d)
        .env("PATH", path)
        .env("SSLKEYLOGFILE", &keys)
        .args(["run", "--rtt", "20ms", "--server", "aerolink workload serve", "--client", "bash client.sh"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{:?}", text(&o));
    // Client and server both log: TLS 1.3's five secrets per connection.
    let log = std::fs::read_to_string(&keys).unwrap();
    assert!(log.lines().filter(|l| l.starts_with("CLIENT_TRAFFIC_SECRET_0 ")).count() >= 3, "{log}");
    let k = Some("keys.log");
    let page = "/page.html?spec=2x10KB&depth=1";
    // HTTP/1.1 over TLS: the request lines.
    let h1 = fields(&d, k, "http.request", "http.request.uri");
    assert!(h1.iter().any(|u| u.ends_with(page)), "{h1:?}");
    // HTTP/2: the :path of each request's HEADERS.
    let h2 = fields(&d, k, "http2.type == 1", "http2.header.value");
    assert!(h2.iter().any(|h| h.contains(page)) && h2.iter().any(|h| h.contains("/obj/1.img")), "{h2:?}");
    // HTTP/3: QUIC's packets decrypt to HTTP/3 frames, the page's body
    // ("<!doctype html>") in the first request stream.
    assert!(!fields(&d, k, "http3", "http3.frame_type").is_empty(), "no HTTP/3 frame decrypted");
    let body = fields(&d, k, "quic.stream.stream_id == 0", "quic.stream_data").concat();
    assert!(body.contains(&hex("<!doctype html>")), "stream 0: {body}");
    // The same capture without the keys: nothing of it.
    assert!(fields(&d, None, "http.request || http2.type == 1 || http3", "frame.number").is_empty());
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The records of a JSON-SEQ file (RFC 7464: each starts with 0x1E).
fn json_seq(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.starts_with('\u{1e}'), "{}: not JSON-SEQ", path.display());
    text.split('\u{1e}').filter(|r| !r.trim().is_empty()).map(|r| serde_json::from_str(r).unwrap_or_else(|e| panic!("{}: {e}: {r}", path.display()))).collect()
}

#[test]
fn qlogdir_gives_each_quic_connection_its_own_qlog() {
    let d = tempdir("qlog");
    let ql = d.join("qlog");
    let dir = std::path::Path::new(bin()).parent().unwrap();
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default());
    // Two page loads over h3: two client processes, one server process
    // with two connections.
    let client = "for i in 1 2; do aerolink workload web --server $AEROLINK_SERVER --protocol h3 --page 2x10KB > /dev/null || exit 1; done";
    let o = aerolink_cmd().env("PATH", path).env("QLOGDIR", &ql).args(["run", "--rtt", "20ms", "--server", "aerolink workload serve", "--client", client]).output().unwrap();
    assert!(o.status.success(), "{:?}", text(&o));
    let mut files: Vec<String> = std::fs::read_dir(&ql).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    let (clients, servers): (Vec<&String>, Vec<&String>) = files.iter().partition(|f| f.starts_with("client-"));
    assert_eq!((clients.len(), servers.len()), (2, 2), "{files:?}");
    // The server's two connections are two files of one process.
    let pid = |f: &str| f.split('-').nth(1).unwrap().to_string();
    assert_eq!(pid(servers[0]), pid(servers[1]), "{files:?}");
    for f in &files {
        let recs = json_seq(&ql.join(f));
        assert_eq!(recs[0]["qlog_format"], "JSON-SEQ", "{f}");
        let count = |name: &str| recs.iter().filter(|r| r["name"] == name).count();
        assert!(count("transport:packet_sent") > 3 && count("transport:packet_received") > 3, "{f}: {} records", recs.len());
    }
    // A client's first packet is its Initial.
    let first = json_seq(&ql.join(clients[0])).into_iter().find(|r| r["name"] == "transport:packet_sent").unwrap();
    assert_eq!(first["data"]["header"]["packet_type"], "initial");
}
