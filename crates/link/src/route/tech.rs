//! The link along a route, per technology: each computes, every `step` of
//! flight time, the one-way delay (propagation over the path it models
//! plus a fixed `extra` for the ground network) or no service, and the
//! events that interrupt it (handovers, reconfigurations), as a
//! [`Timeline`] the profile turns into a delay trace and outage windows.
//!
//! - **GEO**: geostationary satellites by longitude; the aircraft uses the
//!   highest one in view (above `min_elevation`), keeps it until another
//!   stands `hysteresis` degrees higher (a satellite handover:
//!   `satellite_outage` without service), and changes spot beam every
//!   `beam_km` flown (`beam_outage`). Path: aircraft → satellite →
//!   gateway, the gateway seen at `gateway_elevation`. Low over the
//!   horizon the path crosses more atmosphere and the antenna's gain
//!   falls: below `low_from` degrees of elevation the loss grows with the
//!   square of the degrees under it, to `low_loss` (each direction) at
//!   `min_elevation` (0 by default).
//! - **LEO**: a Walker-delta shell (`inclination`, `altitude_km`,
//!   `planes`, `per_plane`, `phasing`) on circular orbits, or the
//!   satellites of a two-line element set (`tle`) propagated by SGP4 (the
//!   `sgp4` crate) from `epoch` (UTC at flight time 0); at each
//!   reconfiguration (every `slot` from `slot_from`, Starlink's 15 s at
//!   seconds 12, 27, 42, 57) the terminal takes the highest satellite
//!   above `min_elevation` that also sees a ground station above it, and
//!   the reconfiguration itself costs `glitch`. Path: aircraft → satellite
//!   → the ground station nearest the satellite (bent pipe: over an ocean
//!   far from ground stations there is no service), or with `isl = true`
//!   through the shell's laser links to a satellite that sees one
//!   ([`super::leo`]).
//! - **ATG** (air to ground): towers within `range_km` (radio line of
//!   sight from cruise height reaches about 400 km); the aircraft uses the
//!   nearest and hands over (`handover_outage`) when another becomes
//!   nearer by `hysteresis_km`. No tower in range: no service. Toward the
//!   edge of a cell the signal weakens: beyond `edge_from_km` from the
//!   tower the loss (`edge_loss` at `range_km`, per direction) and the
//!   extra delay of the radio's retransmissions and lower rates
//!   (`edge_delay` at `range_km`) grow with the square of the distance
//!   past it, so a flight sees them rise where towers are far apart and
//!   vanish near one (seed 000 §4.4: DA2GC's latency and loss spike at
//!   places; MSS's do not). Both 0 by default: the shape and the figures
//!   are a model's choice, not measured.
//! - **L-DACS 1**: ground stations in a line along the track, every
//!   `spacing_km` (seed 002: cells of 225 km overlapping by 100 km, 350
//!   km apart) from `first_station_km`, only within `airport_km` of an
//!   airport of the table (a coarse stand-in for continental airspace,
//!   where L-DACS is planned), or `sites`. The aircraft uses the nearest
//!   station within `range_km` and hands over when another is nearer by
//!   `hysteresis_km` (0: midway, as in the seed). A handover is no fixed
//!   outage here: the profile's `handover` stage carries it out (layer 2,
//!   Mobile IPv6 / NEMO binding, buffering), at the times computed.
//!
//! Ground sites (LEO ground stations, ATG towers) default to the airports
//! of the built-in table: a stand-in, since operators do not publish their
//! sites; give `sites = [{ lat, lon }, …]` for real ones.
use super::earth::{elevation_deg, geo_satellite, norm, slant_range_km, sub, Point, Vec3, GEO_ALTITUDE_KM, LIGHT_KM_S};
use super::track::Track;

/// A ground site: its name (an airport's code, or `site N`) and place.
pub type Site = (String, Point);

/// Why the link is interrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    SatelliteHandover,
    BeamHandover,
    /// A LEO reconfiguration (every `slot`): one repeating window in a
    /// profile, not drawn by `route show`.
    Reconfiguration,
    /// An air-to-ground tower handover.
    Handover,
    /// An L-DACS cell handover: carried out by the `handover` stage
    /// (Mobile IPv6 / NEMO), no fixed outage.
    CellHandover,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::SatelliteHandover => "satellite handover",
            Cause::BeamHandover => "beam handover",
            Cause::Reconfiguration => "reconfiguration",
            Cause::Handover => "handover",
            Cause::CellHandover => "cell handover",
        }
    }
}

/// What happened: service gained or lost, or a change of the path that
/// interrupts it (`Cause`), or a LEO satellite change at a reconfiguration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Service,
    Interruption(Cause),
}

/// What a technology computed along a route, in flight time.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Seconds between samples.
    pub step_s: f64,
    /// One-way delay in ms at each step from 0, `None` without service.
    pub delay_ms: Vec<Option<f64>>,
    /// The loss probability (each direction) at each step, where the
    /// technology makes it depend on place (ATG's cell edge, GEO's low
    /// elevation); empty otherwise.
    pub loss: Vec<f64>,
    /// The rate at each step, bit/s, where it depends on place (ATG's
    /// `edge_rate`, between the profile's `rate` near a tower and it at the
    /// edge); empty otherwise. Filled by [`Timeline::with_rates`] from
    /// `edge_share`.
    pub rate_bps: Vec<f64>,
    /// How far into the cell's edge the aircraft is at each step (0 near
    /// the tower or without service, 1 at the edge), where the technology
    /// has edges that cost something; empty otherwise.
    pub edge_share: Vec<f64>,
    /// Interruptions: start, length (s) and why.
    pub outages: Vec<(f64, f64, Cause)>,
    /// What happened when (handovers, satellite changes), its kind and a
    /// line for people.
    pub events: Vec<(f64, EventKind, String)>,
}

impl Timeline {
    /// The rates along the route for a profile whose rate near a tower is
    /// `near_bps`: from it down to the edge's rate in proportion to
    /// `edge_share` (ATG's `edge_rate`); unchanged without one.
    pub fn with_rates(mut self, near_bps: f64, edge_bps: Option<f64>) -> Timeline {
        if let Some(edge) = edge_bps {
            self.rate_bps = self.edge_share.iter().map(|s| near_bps - s * (near_bps - edge)).collect();
        }
        self
    }
}

/// GEO parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Geo {
    pub satellites: Vec<f64>,
    pub min_elevation: f64,
    pub hysteresis: f64,
    pub gateway_elevation: f64,
    pub beam_km: f64,
    pub beam_outage_s: f64,
    pub satellite_outage_s: f64,
    /// Loss at `min_elevation` (each direction), growing from `low_from_deg`.
    pub low_loss: f64,
    pub low_from_deg: f64,
}

/// Satellites from two-line element sets, and the UTC time of flight
/// time 0.
#[derive(Clone, Debug, PartialEq)]
pub struct TleSet {
    /// The file, as the profile names it.
    pub path: String,
    pub elements: Vec<sgp4::Elements>,
    pub epoch: sgp4::chrono::NaiveDateTime,
}

/// LEO parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Leo {
    /// The satellites of a TLE set instead of the shell.
    pub tle: Option<TleSet>,
    /// Laser links between the shell's satellites (+Grid).
    pub isl: bool,
    pub inclination: f64,
    pub altitude_km: f64,
    pub planes: u32,
    pub per_plane: u32,
    pub phasing: u32,
    pub min_elevation: f64,
    pub slot_s: f64,
    pub slot_from_s: f64,
    pub glitch_s: f64,
}

/// Air-to-ground parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Atg {
    pub range_km: f64,
    pub hysteresis_km: f64,
    pub handover_outage_s: f64,
    /// At the edge of a cell (`range_km` from its tower).
    pub edge: Edge,
}

/// What the edge of a cell costs, at `range_km` from the tower; nearer,
/// in proportion to the square of the distance past `from_km` (none
/// within it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Edge {
    /// Loss probability, each direction.
    pub loss: f64,
    /// Extra one-way delay, ms.
    pub delay_ms: f64,
    /// Where the edge begins, km from the tower.
    pub from_km: f64,
    /// The rate at the edge, bit/s (the profile's `rate` is the rate near
    /// a tower); none: the rate does not depend on place.
    pub rate_bps: Option<f64>,
}

impl Edge {
    /// The share of the edge's cost at `km` from the tower of a cell of
    /// `range_km`: ((km − from) / (range − from))², 0 within `from_km`.
    pub fn share(&self, km: f64, range_km: f64) -> f64 {
        if km <= self.from_km || range_km <= self.from_km {
            return 0.0;
        }
        ((km - self.from_km) / (range_km - self.from_km)).powi(2).min(1.0)
    }
    fn is_zero(&self) -> bool {
        self.loss == 0.0 && self.delay_ms == 0.0 && self.rate_bps.is_none()
    }
}

/// L-DACS 1 parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Ldacs {
    pub spacing_km: f64,
    pub first_station_km: f64,
    /// Stations only this near an airport of the table; 0: all along.
    pub airport_km: f64,
    pub range_km: f64,
    pub hysteresis_km: f64,
}

/// The technology and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum Tech {
    Geo(Geo),
    Leo(Leo),
    Atg(Atg),
    Ldacs(Ldacs),
}

impl Tech {
    pub fn kind(&self) -> TechName {
        match self {
            Tech::Geo(_) => TechName::Geo,
            Tech::Leo(_) => TechName::Leo,
            Tech::Atg(_) => TechName::Atg,
            Tech::Ldacs(_) => TechName::Ldacs,
        }
    }
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }
}

/// A route's technology by name: the one value set that a route's `tech =
/// "…"` and `aerolink route show --tech` both take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TechName {
    Geo,
    Leo,
    Atg,
    Ldacs,
}

impl TechName {
    pub const ALL: [TechName; 4] = [TechName::Geo, TechName::Leo, TechName::Atg, TechName::Ldacs];
    pub fn as_str(self) -> &'static str {
        match self {
            TechName::Geo => "geo",
            TechName::Leo => "leo",
            TechName::Atg => "atg",
            TechName::Ldacs => "ldacs",
        }
    }
    pub fn parse(s: &str) -> Option<TechName> {
        TechName::ALL.into_iter().find(|t| t.as_str() == s)
    }
    /// One line for help texts.
    pub fn about(self) -> &'static str {
        match self {
            TechName::Geo => "geostationary satellites (default 55°W, 62.6°E, 179.6°E)",
            TechName::Leo => "a LEO shell (default Starlink's 53°, 550 km, 72 × 22) or element sets (`tle`)",
            TechName::Atg => "air-to-ground towers",
            TechName::Ldacs => "L-DACS 1 ground stations along the route (seed 002's line, 350 km apart, near land); handovers by the profile's `handover` stage",
        }
    }
    /// The names, for error messages: `"geo", "leo", "atg" or "ldacs"`.
    pub fn choices() -> String {
        let q: Vec<String> = TechName::ALL.iter().map(|t| format!("{:?}", t.as_str())).collect();
        format!("{} or {}", q[..q.len() - 1].join(", "), q[q.len() - 1])
    }
}

pub(super) fn one_way_ms(km: f64, extra_ms: f64) -> f64 {
    km / LIGHT_KM_S * 1e3 + extra_ms
}

/// Steps of `step` from 0 to the end of the track (inclusive).
pub(super) fn times(track: &Track, step: f64) -> impl Iterator<Item = f64> {
    let n = (track.duration() / step).ceil() as usize;
    (0..=n).map(move |i| i as f64 * step)
}

pub fn geo(track: &Track, g: &Geo, step: f64, extra_ms: f64) -> Timeline {
    let sats: Vec<Vec3> = g.satellites.iter().map(|&lon| geo_satellite(lon)).collect();
    let gateway_km = slant_range_km(GEO_ALTITUDE_KM, g.gateway_elevation);
    let mut tl = Timeline { step_s: step, ..Timeline::default() };
    let (mut serving, mut since_beam_km, mut last): (Option<usize>, f64, Option<Point>) = (None, 0.0, None);
    for t in times(track, step) {
        let (p, _) = track.at(t);
        let ac = p.ecef();
        if let Some(q) = last {
            since_beam_km += super::earth::surface_km(&q, &p);
        }
        last = Some(p);
        let el: Vec<f64> = sats.iter().map(|&s| elevation_deg(ac, s)).collect();
        let best = (0..sats.len()).filter(|&i| el[i] >= g.min_elevation).max_by(|&a, &b| el[a].total_cmp(&el[b]));
        let keep = serving.filter(|&s| el[s] >= g.min_elevation && best.is_none_or(|b| el[b] < el[s] + g.hysteresis));
        let now = keep.or(best);
        match (serving, now) {
            (Some(a), Some(b)) if a != b => {
                tl.events.push((t, EventKind::Interruption(Cause::SatelliteHandover), format!("satellite handover: {}° → {}°", g.satellites[a], g.satellites[b])));
                tl.outages.push((t, g.satellite_outage_s, Cause::SatelliteHandover));
                since_beam_km = 0.0;
            }
            (None, Some(b)) => tl.events.push((t, EventKind::Service, format!("satellite at {}° in view", g.satellites[b]))),
            (Some(_), None) => tl.events.push((t, EventKind::Service, "no satellite in view".into())),
            _ => {}
        }
        if now.is_some() && g.beam_km > 0.0 && since_beam_km >= g.beam_km {
            since_beam_km -= g.beam_km;
            tl.events.push((t, EventKind::Interruption(Cause::BeamHandover), "beam handover".into()));
            tl.outages.push((t, g.beam_outage_s, Cause::BeamHandover));
        }
        serving = now;
        tl.delay_ms.push(now.map(|s| one_way_ms(norm(sub(sats[s], ac)) + gateway_km, extra_ms)));
        if g.low_loss > 0.0 {
            let share = now.map_or(0.0, |s| low_share(el[s], g.min_elevation, g.low_from_deg));
            tl.loss.push(share * g.low_loss);
        }
    }
    tl
}

/// The share of GEO's low-elevation loss at `el` degrees: ((from − el) /
/// (from − min))², 0 at `from` and above, 1 at `min`.
pub fn low_share(el: f64, min: f64, from: f64) -> f64 {
    if el >= from || from <= min {
        return 0.0;
    }
    ((from - el) / (from - min)).powi(2).min(1.0)
}

pub use super::leo::{leo, leo_positions, shell, teme_to_ecef};

pub fn atg(track: &Track, a: &Atg, sites: &[Site], step: f64, extra_ms: f64) -> Timeline {
    let cells = Cells { range_km: a.range_km, hysteresis_km: a.hysteresis_km, edge: a.edge };
    nearest_site(track, cells, sites, step, extra_ms, |t, tl| {
        tl.outages.push((t, a.handover_outage_s, Cause::Handover));
        Cause::Handover
    })
}

/// L-DACS 1: the nearest station in range, as air-to-ground; a handover is
/// an event the profile's `handover` stage carries out.
pub fn ldacs(track: &Track, l: &Ldacs, stations: &[Site], step: f64, extra_ms: f64) -> Timeline {
    let cells = Cells { range_km: l.range_km, hysteresis_km: l.hysteresis_km, edge: Edge::default() };
    nearest_site(track, cells, stations, step, extra_ms, |_, _| Cause::CellHandover)
}

/// Seed 002's line of L-DACS stations laid along the track: one every
/// `spacing_km` of ground distance flown from `first_station_km`, on the
/// ground under the track, kept where an airport of the table is within
/// `airport_km` (all when 0), and one at the destination when the last is
/// half a spacing or more behind it. Placed to within a second's flight.
pub fn line_stations(track: &Track, l: &Ldacs) -> Vec<Site> {
    let airports: Vec<Point> = super::airports::AIRPORTS.iter().map(|&(_, lat, lon)| Point::new(lat, lon, 0.0)).collect();
    let near_land = |p: &Point| l.airport_km <= 0.0 || airports.iter().any(|a| super::earth::surface_km(a, p) <= l.airport_km);
    let mut out = Vec::new();
    let (mut flown, mut next, mut last) = (0.0, l.first_station_km, None::<Point>);
    for t in times(track, 1.0) {
        let p = track.at(t).0;
        if let Some(q) = last {
            flown += super::earth::surface_km(&q, &p);
        }
        last = Some(p);
        while flown >= next {
            let site = Point::new(p.lat, p.lon, 0.0);
            if near_land(&site) {
                out.push((format!("station {}", out.len() + 1), site));
            }
            next += l.spacing_km.max(1.0);
        }
    }
    if let Some(end) = last.map(|p| Point::new(p.lat, p.lon, 0.0)) {
        if flown - (next - l.spacing_km.max(1.0)) >= l.spacing_km / 2.0 && near_land(&end) {
            out.push((format!("station {}", out.len() + 1), end));
        }
    }
    out
}

/// Cells around ground sites: their reach, the margin that keeps the
/// serving one, and what their edge costs.
#[derive(Clone, Copy)]
struct Cells {
    range_km: f64,
    hysteresis_km: f64,
    edge: Edge,
}

/// The nearest site within `range_km`, kept until another is nearer by
/// `hysteresis_km`, with what the cell's `edge` costs at the distance flown
/// from it; `handover` records a change and says why it was.
fn nearest_site(track: &Track, cells: Cells, sites: &[Site], step: f64, extra_ms: f64, mut handover: impl FnMut(f64, &mut Timeline) -> Cause) -> Timeline {
    let Cells { range_km, hysteresis_km, edge } = cells;
    let towers: Vec<Vec3> = sites.iter().map(|s| s.1.ecef()).collect();
    let mut tl = Timeline { step_s: step, ..Timeline::default() };
    let mut serving: Option<usize> = None;
    for t in times(track, step) {
        let ac = track.at(t).0.ecef();
        let range: Vec<f64> = towers.iter().map(|&g| norm(sub(ac, g))).collect();
        let best = (0..towers.len()).filter(|&i| range[i] <= range_km).min_by(|&x, &y| range[x].total_cmp(&range[y]));
        let keep = serving.filter(|&s| range[s] <= range_km && best.is_none_or(|b| range[b] + hysteresis_km > range[s]));
        let now = keep.or(best);
        match (serving, now) {
            (Some(x), Some(y)) if x != y => {
                let why = handover(t, &mut tl);
                tl.events.push((t, EventKind::Interruption(why), format!("handover: {} → {}", sites[x].0, sites[y].0)));
            }
            (None, Some(y)) => tl.events.push((t, EventKind::Service, format!("{} in range", sites[y].0))),
            (Some(_), None) => tl.events.push((t, EventKind::Service, "no site in range".into())),
            _ => {}
        }
        serving = now;
        let share = now.map_or(0.0, |s| edge.share(range[s], range_km));
        tl.delay_ms.push(now.map(|s| one_way_ms(range[s], extra_ms) + share * edge.delay_ms));
        if !edge.is_zero() {
            tl.loss.push(share * edge.loss);
            tl.edge_share.push(share);
        }
    }
    tl
}
