//! `aerolink route show ROUTE --tech geo|leo|atg|ldacs` and `aerolink route
//! airports`: the link a flight would have, computed along its route
//! (aerolink_link::route), as a table, JSON or an SVG timeline.
use aerolink_link::route::{airports, clock, Cause, EventKind, RouteSpec, TechName, Timeline};
use clap::builder::TypedValueParser;
use clap::{Args, Subcommand};
use serde_json::json;
use std::path::PathBuf;

use crate::error::user;

#[derive(Subcommand, Debug)]
pub enum RouteCmd {
    /// The link along a route: one-way delay, service, handovers and
    /// outages against flight time and position. E.g. `aerolink route show
    /// LHR-JFK --tech leo --svg leo.svg`; in a profile the same keys go
    /// into `[link]` as `route = { from = "LHR", to = "JFK", tech = "leo" }`
    /// (docs/guide.md, "Routes").
    Show(ShowArgs),
    /// The built-in airports: IATA code, latitude, longitude.
    Airports {
        #[arg(long)]
        json: bool,
    },
}

/// `--tech`: the route's technologies, each with its help line.
fn tech_parser() -> impl clap::builder::TypedValueParser<Value = TechName> {
    let values = TechName::ALL.map(|t| clap::builder::PossibleValue::new(t.as_str()).help(t.about()));
    clap::builder::PossibleValuesParser::new(values).map(|s| TechName::parse(&s).expect("clap checked the value"))
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// FROM-TO (airport codes, e.g. LHR-JFK; see `aerolink route airports`)
    /// or a TOML file with `route = { … }` (at the top or in `[link]`, as a
    /// profile has it).
    pub route: String,
    /// The technology (overrides the file's `tech`).
    #[arg(long, value_parser = tech_parser())]
    pub tech: Option<TechName>,
    /// A route key as TOML, repeatable: --set 'cruise_kmh = 850' --set
    /// 'satellites = [-15.5, 25.5]' --set 'time_scale = 60'.
    #[arg(long = "set", value_name = "KEY = VALUE")]
    pub set: Vec<String>,
    /// Flight time between the table's rows.
    #[arg(long, default_value = "30 min", value_name = "DURATION")]
    pub every: String,
    /// The rate near a tower (a profile's `rate`), for a route whose rate
    /// falls toward a cell's edge (air to ground's `edge_rate`): the table
    /// and the JSON then give the rate at each sample.
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Print JSON (every sample, event and outage) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also draw the one-way delay, outages (shaded) and events (dotted)
    /// against flight time into this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also draw the track on a longitude–latitude map into this SVG file:
    /// red where there is no service, the ground sites (towers, stations,
    /// LEO ground stations) as dots, handovers as rings.
    #[arg(long, value_name = "FILE")]
    pub map: Option<PathBuf>,
}

pub fn run(cmd: RouteCmd) -> anyhow::Result<i32> {
    match cmd {
        RouteCmd::Show(a) => show(a),
        RouteCmd::Airports { json } => {
            if json {
                let v: Vec<_> = airports::AIRPORTS.iter().map(|(c, lat, lon)| json!({"code": c, "lat": lat, "lon": lon})).collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                for (c, lat, lon) in airports::AIRPORTS {
                    println!("{c}  {lat:>9.4}  {lon:>9.4}");
                }
            }
            Ok(0)
        }
    }
}

/// The route's keys: from FROM-TO or a file, then --tech and --set.
fn table(a: &ShowArgs) -> anyhow::Result<(toml::Table, String)> {
    let looks_like_pair = a.route.len() == 7 && a.route.as_bytes()[3] == b'-' && !std::path::Path::new(&a.route).exists();
    let (mut t, origin) = if looks_like_pair {
        let mut t = toml::Table::new();
        t.insert("from".into(), a.route[..3].into());
        t.insert("to".into(), a.route[4..].into());
        (t, "the command line".to_string())
    } else {
        let text = std::fs::read_to_string(&a.route).map_err(|e| user(format!("route show: {}: {e} (give FROM-TO such as LHR-JFK, or a TOML file)", a.route)))?;
        let doc: toml::Table = toml::from_str(&text).map_err(|e| user(format!("{}: {}", a.route, e.message())))?;
        let r = doc.get("route").or_else(|| doc.get("link").and_then(|l| l.get("route")));
        let t = r.and_then(|r| r.as_table()).ok_or_else(|| user(format!("{}: expected `route = {{ … }}` at the top or in [link]", a.route)))?;
        (t.clone(), a.route.clone())
    };
    if let Some(tech) = a.tech {
        t.insert("tech".into(), tech.as_str().into());
    }
    for s in &a.set {
        let one: toml::Table = toml::from_str(s).map_err(|e| user(format!("--set {s:?}: expected KEY = VALUE in TOML ({})", e.message().trim())))?;
        t.extend(one);
    }
    Ok((t, origin))
}

fn show(a: ShowArgs) -> anyhow::Result<i32> {
    let (t, origin) = table(&a)?;
    if !t.contains_key("tech") {
        return Err(user(format!("route show: {origin} gives no technology: add --tech {}", TechName::choices().replace('"', ""))));
    }
    // Files the route names (`tle`) are relative to the route's file, or
    // to here for FROM-TO.
    let dir = if origin == a.route { std::path::Path::new(&a.route).parent().map(|p| p.to_path_buf()).unwrap_or_default() } else { PathBuf::new() };
    let mut load = |name: &str| std::fs::read_to_string(dir.join(name)).map_err(|e| e.to_string());
    let spec = RouteSpec::parse(&t, &mut load).map_err(|m| user(format!("{origin}: route: {m}")))?;
    let every = aerolink_link::units::parse_duration(&a.every).map_err(|m| user(format!("--every: expected {m}")))?.as_secs_f64().max(spec.step_s);
    let mut tl = spec.timeline();
    match (spec.edge_rate_bps(), &a.rate) {
        (Some(edge), Some(r)) => {
            let near = aerolink_link::units::parse_rate(r).map_err(|m| user(format!("--rate: expected {m}")))?;
            tl = tl.with_rates(near.bits_per_sec, Some(edge));
        }
        (Some(_), None) => return Err(user(format!("{origin}: route: edge_rate is the rate at a cell's edge: give --rate, the rate near a tower (a profile's `rate`)"))),
        (None, Some(_)) => return Err(user("--rate: only with edge_rate (tech = \"atg\"): elsewhere the rate does not depend on place")),
        (None, None) => {}
    }
    let sample = |i: usize| sample(&spec, &tl, i);
    if let Some(path) = &a.svg {
        std::fs::write(path, draw(&spec, &tl)).map_err(|e| user(format!("--svg {}: {e}", path.display())))?;
    }
    if let Some(path) = &a.map {
        std::fs::write(path, map(&spec, &tl)).map_err(|e| user(format!("--map {}: {e}", path.display())))?;
    }
    if a.json {
        let samples: Vec<_> = (0..tl.delay_ms.len())
            .map(|i| {
                let (t, p, phase, d) = sample(i);
                json!({"t_s": t, "phase": phase.as_str(), "lat": p.lat, "lon": p.lon, "alt_m": p.alt_m, "delay_ms": d, "loss": tl.loss.get(i), "rate_bps": tl.rate_bps.get(i)})
            })
            .collect();
        let v = json!({
            "route": spec.track.label, "tech": spec.tech.name(), "summary": spec.describe(&tl),
            "length_km": spec.track.length_km(), "duration_s": spec.track.duration(), "step_s": tl.step_s,
            "samples": samples,
            "events": tl.events.iter().map(|e| json!({"t_s": e.0, "what": e.2})).collect::<Vec<_>>(),
            "outages": tl.outages.iter().map(|o| json!({"start_s": o.0, "duration_s": o.1, "why": o.2.as_str()})).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    print_text(&spec, &tl, every);
    for p in a.svg.iter().chain(&a.map) {
        println!("drawn: {}", p.display());
    }
    Ok(0)
}

/// The timeline as SVG: the one-way delay, and below it the loss and the
/// rate where they depend on place, against flight time.
fn draw(spec: &RouteSpec, tl: &Timeline) -> String {
    use aerolink_experiments::svg;
    let pts: Vec<(f64, Option<f64>)> = (0..tl.delay_ms.len()).map(|i| (i as f64 * tl.step_s / 3600.0, tl.delay_ms[i])).collect();
    // Out of reach and the interruptions other than LEO's 15 s
    // reconfigurations (shaded); events but LEO's satellite changes
    // (dotted): those come every 15 s and would cover the chart.
    let mut bands: Vec<(f64, f64)> = tl.outages.iter().filter(|o| o.2 != Cause::Reconfiguration).map(|o| (o.0 / 3600.0, (o.0 + o.1) / 3600.0)).collect();
    let h = |i: usize| i as f64 * tl.step_s / 3600.0;
    let mut i = 0;
    while i < tl.delay_ms.len() {
        let g = i;
        while i < tl.delay_ms.len() && tl.delay_ms[i].is_none() {
            i += 1;
        }
        if i > g {
            bands.push((h(g), h(i)));
        }
        i += 1;
    }
    let marks: Vec<(f64, String)> = tl.events.iter().filter(|e| e.1 != EventKind::Interruption(Cause::Reconfiguration)).map(|e| (e.0 / 3600.0, format!("{}: {}", clock(e.0), e.2))).collect();
    let name = |what: &str| format!("{} over {}: {what}", spec.track.label, spec.tech.name());
    let x_label = "flight time (h); shaded: outages, dotted: events";
    let mut charts = vec![svg::timeline(&name("one-way delay"), x_label, "one-way delay (ms)", &pts, &bands, &marks)];
    // Below it the loss and the rate where they depend on place.
    let along = |v: &[f64], scale: f64| -> Vec<(f64, Option<f64>)> { (0..v.len()).map(|i| (h(i), tl.delay_ms[i].map(|_| v[i] * scale))).collect() };
    if tl.loss.iter().any(|&p| p > 0.0) {
        charts.push(svg::timeline(&name("loss, each direction"), x_label, "loss (%)", &along(&tl.loss, 100.0), &bands, &marks));
    }
    if !tl.rate_bps.is_empty() {
        charts.push(svg::timeline(&name("rate"), x_label, "rate (Mbit/s)", &along(&tl.rate_bps, 1e-6), &bands, &marks));
    }
    svg::stack(&charts)
}

/// The track on a map: at most about 2000 segments (every change of
/// service kept), the sites (but GEO's, which has none), the handovers.
fn map(spec: &RouteSpec, tl: &Timeline) -> String {
    let n = tl.delay_ms.len();
    let stride = n.div_ceil(2000).max(1);
    let served = |i: usize| tl.delay_ms[i].is_some();
    let track: Vec<(f64, f64, bool)> = (0..n)
        .filter(|&i| i % stride == 0 || i == n - 1 || (i > 0 && served(i) != served(i - 1)))
        .map(|i| {
            let p = spec.track.at(i as f64 * tl.step_s).0;
            (p.lon, p.lat, served(i))
        })
        .collect();
    let sites: Vec<(f64, f64, String)> = match spec.tech.kind() {
        TechName::Geo => Vec::new(),
        _ => spec.sites.iter().map(|(name, p)| (p.lon, p.lat, name.clone())).collect(),
    };
    let marks: Vec<(f64, f64, String)> = tl
        .events
        .iter()
        .filter(|e| matches!(e.1, EventKind::Interruption(c) if c != Cause::Reconfiguration))
        .map(|e| {
            let p = spec.track.at(e.0).0;
            (p.lon, p.lat, format!("{}: {}", clock(e.0), e.2))
        })
        .collect();
    aerolink_experiments::svg::map(&format!("{} over {}", spec.track.label, spec.tech.name()), &track, &sites, &marks)
}

/// Flight time, place, phase and one-way delay of sample `i`.
fn sample(spec: &RouteSpec, tl: &Timeline, i: usize) -> (f64, aerolink_link::route::earth::Point, aerolink_link::route::track::Phase, Option<f64>) {
    let t = i as f64 * tl.step_s;
    let (p, phase) = spec.track.at(t);
    (t, p, phase, tl.delay_ms[i])
}

/// The timeline as text: the summary, a row every `every` of flight, the
/// events and the time without service.
fn print_text(spec: &RouteSpec, tl: &Timeline, every: f64) {
    let sample = |i: usize| sample(spec, tl, i);
    println!("{}", spec.describe(tl));
    // The loss column only where the technology makes loss depend on place.
    // The loss and rate columns only where the technology makes them
    // depend on place (blank without service).
    let (lossy, rated) = (tl.loss.iter().any(|&p| p > 0.0), !tl.rate_bps.is_empty());
    let loss_col = |i: usize| {
        let served = tl.delay_ms[i].is_some();
        let loss = match tl.loss.get(i) {
            Some(p) if lossy && served => format!("  {:>6.1}", 100.0 * p),
            _ if lossy => format!("  {:>6}", ""),
            _ => String::new(),
        };
        let rate = match tl.rate_bps.get(i) {
            Some(r) if served => format!("  {:>14}", aerolink_link::units::Rate::from_bps(*r).to_string()),
            _ if rated => format!("  {:>14}", ""),
            _ => String::new(),
        };
        format!("{loss}{rate}")
    };
    let loss_head = format!("{}{}", if lossy { "  loss %" } else { "" }, if rated { format!("  {:>14}", "rate") } else { String::new() });
    println!("\n{:>10}  {:<9} {:>8} {:>9} {:>7}  {:>12}{loss_head}", "flight", "phase", "lat", "lon", "alt m", "one-way ms");
    let stride = ((every / tl.step_s).round() as usize).max(1);
    let last = tl.delay_ms.len() - 1;
    for i in (0..=last).step_by(stride).chain((!last.is_multiple_of(stride)).then_some(last)) {
        let (t, p, phase, d) = sample(i);
        let d = d.map_or("no service".to_string(), |d| format!("{d:.1}"));
        println!("{:>10}  {:<9} {:>8.2} {:>9.2} {:>7.0}  {:>12}{}", clock(t), phase.as_str(), p.lat, p.lon, p.alt_m, d, loss_col(i));
    }
    const SHOWN: usize = 15;
    println!("\nevents ({}):", tl.events.len());
    for (t, _, what) in tl.events.iter().take(SHOWN) {
        println!("  {:>10}  {what}", clock(*t));
    }
    if tl.events.len() > SHOWN {
        println!("  … and {} more (--json lists every one)", tl.events.len() - SHOWN);
    }
    let gaps = tl.delay_ms.iter().filter(|d| d.is_none()).count() as f64 * tl.step_s;
    let cut: f64 = tl.outages.iter().map(|o| o.1).fold(0.0, |a, b| a + b);
    println!("\nwithout service: {} out of reach, and {} interruptions of {:.1} s in all", clock(gaps), tl.outages.len(), cut);
    let cells = tl.events.iter().filter(|e| e.1 == EventKind::Interruption(Cause::CellHandover)).count();
    if cells > 0 {
        println!("cell handovers: {cells}, each carried out by the profile's `handover` stage (seed 002's Mobile IPv6 / NEMO: ≈ 0.8 s without DAD)");
    }
}
