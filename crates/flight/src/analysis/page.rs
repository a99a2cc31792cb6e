//! The flight analysis as one self-contained HTML page (`aerolink
//! analyze`): per phase, the technology, RTT and loss over time, outages,
//! goodput, page loads, DNS, what sits on the path.

use std::fmt::Write;

use aerolink_experiments::svg::{self, esc};

use super::{Flight, PhaseAnalysis};
use crate::probe::record::{Measurement, Record};

fn ms(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.0} ms"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{:.1} %", v * 100.0))
}

fn rate(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(b) if b >= 1e6 => format!("{:.2} Mbit/s", b / 1e6),
        Some(b) => format!("{:.0} kbit/s", b / 1e3),
    }
}

fn cdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let step = (v.len() / 400).max(1);
    let n = v.len() as f64;
    let mut out: Vec<(f64, f64)> = v.iter().enumerate().step_by(step).map(|(i, x)| (*x, (i + 1) as f64 / n)).collect();
    if let Some(last) = v.last() {
        out.push((*last, 1.0));
    }
    out
}

/// The flight as one self-contained HTML page.
pub fn render(f: &Flight, records: &[Record]) -> String {
    let mut h = String::new();
    let _ = write!(h, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>aerolink flight analysis</title><style>{}</style></head><body>", aerolink_experiments::report::CSS);
    let _ = write!(
        h,
        "<h1>Flight analysis</h1><p class=\"note\">{} · started {} · {:.1} min · {} records{} · agent started {}×</p>",
        esc(&f.source),
        esc(&f.started),
        f.duration_s / 60.0,
        f.records,
        if f.unreadable_lines > 0 { format!(" ({} unreadable lines skipped)", f.unreadable_lines) } else { String::new() },
        f.agent_starts
    );
    summary_table(&mut h, f);
    charts_of(&mut h, f, records);
    for p in &f.phases {
        details_of(&mut h, p);
    }
    h.push_str("<p class=\"note\">Made by <code>aerolink analyze</code>. Technology from the minimum RTT (under 400 ms: air-to-ground; above: GEO). A DNS answer in under 90 % of the minimum RTT cannot have crossed the link: a resolver aboard cached it (seed 000 §5.3). Loss per direction comes from the reflector's record of which probes reached it.</p></body></html>");
    h
}

/// One row per quantity, one column per phase (a flight has few phases and
/// many quantities).
fn summary_table(h: &mut String, f: &Flight) {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |name: String, cell: &dyn Fn(&PhaseAnalysis) -> String| rows.push((name, f.phases.iter().map(cell).collect()));
    add("technology".into(), &|p| format!("{}<br><span class=\"note\">{}</span>", esc(&p.technology), esc(&p.technology_why)));
    add("RTT min / median / p95".into(), &|p| {
        let r = p.udp.rtt_ms.as_ref();
        format!("{} / {} / {}", ms(r.map(|d| d.min)), ms(r.map(|d| d.median)), ms(r.map(|d| d.p95)))
    });
    add("probes sent / answered".into(), &|p| format!("{} / {}", p.udp.sent, p.udp.answered));
    add("probe loss (up / down)".into(), &|p| format!("{} ({} / {})", pct(Some(p.udp.loss)), pct(p.udp.up_loss), pct(p.udp.down_loss)));
    add(format!("loss per {:.0} s window: median / p90", f.loss_window_s), &|p| format!("{} / {} ({} windows)", pct(p.loss_windows.median), pct(p.loss_windows.p90), p.loss_windows.values.len()));
    add("outages (start, length)".into(), &|p| {
        if p.outages.is_empty() {
            "none".into()
        } else {
            p.outages.iter().map(|o| format!("{:.0} s, {:.1} s", o.start_s, o.duration_s)).collect::<Vec<_>>().join("; ")
        }
    });
    add("link rate down / up (packet trains)".into(), &|p| format!("{} / {}", rate(p.train_down_bps.as_ref().map(|d| d.median)), rate(p.train_up_bps.as_ref().map(|d| d.median))));
    add("TCP goodput down / up (best second)".into(), &|p| {
        format!("{} / {} ({} / {})", rate(p.goodput_down_bps.as_ref().map(|d| d.median)), rate(p.goodput_up_bps.as_ref().map(|d| d.median)), rate(p.peak_down_bps), rate(p.peak_up_bps))
    });
    add("page load, median".into(), &|p| if p.plt_ms.is_empty() { "–".into() } else { p.plt_ms.iter().map(|(k, d)| format!("{} {}", esc(k), ms(Some(d.median)))).collect::<Vec<_>>().join(", ") });
    add("DNS 1st / 2nd lookup, median".into(), &|p| format!("{} / {}", ms(p.dns.first_ms.as_ref().map(|d| d.median)), ms(p.dns.second_ms.as_ref().map(|d| d.median))));
    add("DNS cache aboard".into(), &|p| if p.dns.cache_aboard { format!("yes ({} of 2nd lookups under 90 % of the minimum RTT)", pct(p.dns.second_below_min_rtt)) } else { "no".into() });
    add("proxy and cache headers".into(), &|p| {
        if p.proxies.is_empty() {
            "none seen".into()
        } else {
            esc(&p.proxies.iter().map(|(k, v)| format!("{k}: {}", v.join(" | "))).collect::<Vec<_>>().join("; "))
        }
    });
    add("path leaves the aircraft".into(), &|p| match p.path.exit_ttl {
        Some(t) => format!("after hop {} ({})", t.saturating_sub(1), esc(&p.path.hops.get((t as usize).saturating_sub(2)).and_then(|h| h.addr.clone()).unwrap_or("the agent".into()))),
        None => "–".into(),
    });
    add("public address".into(), &|p| {
        if p.public_addresses.is_empty() {
            "–".into()
        } else {
            p.public_addresses.iter().map(|(a, n)| format!("{}{}", esc(a), n.as_ref().map(|n| format!(" ({})", esc(n))).unwrap_or_default())).collect::<Vec<_>>().join(", ")
        }
    });
    h.push_str("<h2>Summary</h2><table><tr><th></th>");
    for p in &f.phases {
        let _ = write!(h, "<th>{} ({:.0}–{:.0} s)</th>", esc(&p.name), p.from_s, p.to_s);
    }
    h.push_str("</tr>");
    for (name, cells) in &rows {
        let _ = write!(h, "<tr><td style=\"text-align:left\">{}</td>", esc(name));
        for c in cells {
            let _ = write!(h, "<td style=\"text-align:left;white-space:normal\">{c}</td>");
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
}

/// RTT over the flight and its CDF, loss per window, DNS times.
fn charts_of(h: &mut String, f: &Flight, records: &[Record]) {
    h.push_str("<h2>Round-trip time</h2><div class=\"charts\">");
    let series: Vec<(String, Vec<(f64, f64)>)> = vec![
        ("answered probes".into(), f.rtt_series.iter().filter_map(|(t, r)| Some((*t / 60.0, (*r)?))).collect()),
        ("lost (drawn at 0)".into(), f.rtt_series.iter().filter(|(_, r)| r.is_none()).map(|(t, _)| (*t / 60.0, 0.0)).collect()),
    ];
    h.push_str(&svg::lines_with("RTT over the flight", "minutes", "RTT (ms)", &series, false, None, true));
    let rtts: Vec<(String, Vec<(f64, f64)>)> = f.phases.iter().map(|p| (p.name.clone(), cdf(&probes_rtt(records, f, p)))).collect();
    h.push_str(&svg::lines("RTT CDF", "RTT (ms)", "fraction of probes", &rtts, true));
    let loss: Vec<(String, Vec<(f64, f64)>)> = f.phases.iter().map(|p| (p.name.clone(), cdf(&p.loss_windows.values.iter().map(|v| v * 100.0).collect::<Vec<_>>()))).collect();
    let few = f.phases.iter().all(|p| p.loss_windows.values.len() < 10);
    h.push_str(&svg::lines_with(&format!("Loss per {:.0} s window (seed 000 Fig. 4)", f.loss_window_s), "loss (%)", "fraction of windows", &loss, !few, None, few));
    let mut dns_series = Vec::new();
    for p in &f.phases {
        for (attempt, label) in [(1u8, "1st"), (2, "2nd")] {
            let v: Vec<f64> = records
                .iter()
                .filter(|r| p_contains(f, p, r.t))
                .filter_map(|r| match &r.m {
                    Measurement::Dns { attempt: a, ms, .. } if *a == attempt => *ms,
                    _ => None,
                })
                .collect();
            if !v.is_empty() {
                dns_series.push((format!("{} {label} lookup", p.name), cdf(&v)));
            }
        }
    }
    if !dns_series.is_empty() {
        h.push_str(&svg::lines("DNS resolution time (seed 000 Fig. 7)", "ms", "fraction of lookups", &dns_series, true));
    }
    h.push_str("</div>");
}

/// A phase's outages, path and page loads.
fn details_of(h: &mut String, p: &PhaseAnalysis) {
    let _ = write!(h, "<h2>{}: details</h2>", esc(&p.name));
    if !p.outages.is_empty() {
        h.push_str("<h3>Outages</h3><table><tr><th>start</th><th>duration</th></tr>");
        for o in &p.outages {
            let _ = write!(h, "<tr><td>{:.0} s</td><td>{:.1} s</td></tr>", o.start_s, o.duration_s);
        }
        h.push_str("</table>");
    }
    if !p.path.hops.is_empty() {
        let _ = write!(h, "<h3>Path (most common of {} traceroutes, {} reached the reflector)</h3><table><tr><th>hop</th><th>address</th><th>median RTT</th></tr>", p.path.traces, p.path.reached);
        for hop in &p.path.hops {
            let _ = write!(h, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", hop.ttl, esc(hop.addr.as_deref().unwrap_or("*")), ms(hop.rtt_ms));
        }
        h.push_str("</table>");
    }
    if !p.plt_ms.is_empty() {
        h.push_str("<h3>Page loads</h3><table><tr><th>protocol</th><th>loads</th><th>median</th><th>p90</th></tr>");
        for (proto, d) in &p.plt_ms {
            let _ = write!(h, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", esc(proto), d.n, ms(Some(d.median)), ms(Some(d.p90)));
        }
        let _ = write!(h, "</table><p class=\"note\">{} loads failed.</p>", p.loads_failed);
    }
}

fn p_contains(f: &Flight, p: &PhaseAnalysis, t: f64) -> bool {
    let rel = t - f.start_epoch_s;
    rel >= p.from_s && rel <= p.to_s
}

fn probes_rtt(records: &[Record], f: &Flight, p: &PhaseAnalysis) -> Vec<f64> {
    records
        .iter()
        .filter(|r| p_contains(f, p, r.t))
        .filter_map(|r| match &r.m {
            Measurement::Udp(u) => u.rtt_ms,
            _ => None,
        })
        .collect()
}
