//! The HTTP prefetching proxy (`--pep http-prefetch`) end to end on real
//! stacks: curl in the cabin loads a page whose style sheet names four
//! objects over the 600 ms GEO hop; with the proxy the style sheet and
//! the objects come from what the ground half pushed (no request of them
//! crosses the space hop), and fetching them one after another takes a
//! fraction of the time it takes without it; HTTPS passes untouched; the
//! run leaves no namespace behind.

mod common;
use common::*;

/// The cabin's loads: the page, then its style sheet and objects one by
/// one as a browser would ask after reading each; each answer's headers
/// in `h0`…`h5` (`h6`: an HTTPS object), the seconds the style sheet and
/// objects took in `took`.
const CLIENT: &str = r#"set -e
S=$AEROLINK_SERVER; H=www.pf.test
c() { curl -sS --max-time 60 --connect-to $H:80:$S:80 -D "$D/h$1" -o /dev/null "http://$H$2"; }
c 0 '/page.html?spec=4x20KB&depth=2'
t0=$(date +%s.%N)
c 1 '/style.css?spec=4x20KB&depth=2&level=1'
for k in 0 1 2 3; do c $((k + 2)) "/obj/$k.img?size=20000"; done
t1=$(date +%s.%N)
awk "BEGIN { print $t1 - $t0 }" > "$D/took"
curl -sSk --max-time 60 --connect-to $H:443:$S:443 -D "$D/h6" -o /dev/null "https://$H/obj/9.img?size=1000"
"#;

/// How each answer was served (`x-prefetch`, empty without the proxy),
/// and the seconds the style sheet and the objects took.
fn load(pep: &str) -> (Vec<String>, f64) {
    let d = tempdir(&format!("prefetch-{pep}"));
    let client = format!("D={}\n{CLIENT}", d.display());
    std::fs::write(d.join("client.sh"), client).unwrap();
    let script = format!("bash {}", d.join("client.sh").display());
    let serve = format!("{} workload serve", bin());
    let o = aerolink(&["run", "-q", "--topology", "ifc", "--space", "geo-600", "--pep", pep, "--server", &serve, "--client", &script]);
    assert!(o.status.success(), "{}", text(&o).1);
    let how = (0..7)
        .map(|k| {
            let h = std::fs::read_to_string(d.join(format!("h{k}"))).unwrap();
            assert!(h.starts_with("HTTP/1.1 200") || h.starts_with("HTTP/2 200"), "answer {k}: {h}");
            h.lines().find_map(|l| l.strip_prefix("x-prefetch: ")).unwrap_or("").trim().to_string()
        })
        .collect();
    let took = std::fs::read_to_string(d.join("took")).unwrap().trim().parse().unwrap();
    (how, took)
}

#[test]
fn pushed_objects_spare_the_cabin_its_round_trips_and_https_passes_untouched() {
    let (plain, plain_s) = load("none");
    assert!(plain.iter().all(String::is_empty), "{plain:?}");
    let (pf, pf_s) = load("http-prefetch");
    // The page itself crosses the space hop; its style sheet and the
    // objects the style sheet names were promised and pushed.
    assert_eq!(pf[0], "forwarded");
    assert!(pf[1..6].iter().all(|h| h == "pushed"), "{pf:?}");
    // HTTPS is not intercepted: no proxy answered it.
    assert_eq!(pf[6], "");
    // Five fetches one after another: without the proxy each is a
    // connection and a request across the hop (≈ 2 × 600 ms), with it
    // they wait only for the pushes (80 KB at 1 Mbit/s).
    eprintln!("the style sheet and its four objects: {pf_s:.2} s with the proxy, {plain_s:.2} s without");
    assert!(pf_s < plain_s / 2.0, "with the proxy {pf_s:.2} s, without {plain_s:.2} s");
    assert!(leftover_namespaces().is_empty());
}
