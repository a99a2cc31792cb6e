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
//!   gateway, the gateway seen at `gateway_elevation`.
//! - **LEO**: a Walker-delta shell (`inclination`, `altitude_km`,
//!   `planes`, `per_plane`, `phasing`) on circular orbits, or the
//!   satellites of a two-line element set (`tle`) propagated by SGP4 (the
//!   `sgp4` crate) from `epoch` (UTC at flight time 0); at each
//!   reconfiguration (every `slot` from `slot_from`, Starlink's 15 s at
//!   seconds 12, 27, 42, 57) the terminal takes the highest satellite
//!   above `min_elevation` that also sees a ground station above it, and
//!   the reconfiguration itself costs `glitch`. Path: aircraft → satellite
//!   → the ground station nearest the satellite (bent pipe; inter-satellite
//!   links are not modelled, so over an ocean far from ground stations
//!   there is no service).
//! - **ATG** (air to ground): towers within `range_km` (radio line of
//!   sight from cruise height reaches about 400 km); the aircraft uses the
//!   nearest and hands over (`handover_outage`) when another becomes
//!   nearer by `hysteresis_km`. No tower in range: no service.
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
use super::earth::{elevation_deg, geo_satellite, norm, slant_range_km, sub, CircularOrbit, Point, Vec3, EARTH_RADIUS_KM, EARTH_RATE_RAD_S, GEO_ALTITUDE_KM, LIGHT_KM_S};
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
    /// Interruptions: start, length (s) and why.
    pub outages: Vec<(f64, f64, Cause)>,
    /// What happened when (handovers, satellite changes), its kind and a
    /// line for people.
    pub events: Vec<(f64, EventKind, String)>,
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
    pub fn name(&self) -> &'static str {
        match self {
            Tech::Geo(_) => "geo",
            Tech::Leo(_) => "leo",
            Tech::Atg(_) => "atg",
            Tech::Ldacs(_) => "ldacs",
        }
    }
}

fn one_way_ms(km: f64, extra_ms: f64) -> f64 {
    km / LIGHT_KM_S * 1e3 + extra_ms
}

/// Steps of `step` from 0 to the end of the track (inclusive).
fn times(track: &Track, step: f64) -> impl Iterator<Item = f64> {
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
    }
    tl
}

/// The shell's satellites on their orbits at time 0.
pub fn shell(l: &Leo) -> Vec<CircularOrbit> {
    let (p, s) = (l.planes.max(1), l.per_plane.max(1));
    let total = f64::from(p * s);
    let tau = std::f64::consts::TAU;
    let mut out = Vec::with_capacity((p * s) as usize);
    for i in 0..p {
        for j in 0..s {
            let u0 = tau * (f64::from(j) / f64::from(s) + f64::from(l.phasing) * f64::from(i) / total);
            out.push(CircularOrbit { raan: tau * f64::from(i) / f64::from(p), u0, incl: l.inclination.to_radians(), radius_km: EARTH_RADIUS_KM + l.altitude_km });
        }
    }
    out
}

/// The satellites a LEO timeline flies with: the shell's circular orbits,
/// or SGP4 propagators with each set's minutes from its own epoch to
/// flight time 0 and Greenwich sidereal time then.
enum Constellation {
    Shell(Vec<CircularOrbit>),
    Tle { sats: Vec<(String, sgp4::Constants, f64)>, theta0: f64 },
}

impl Constellation {
    fn of(l: &Leo) -> Constellation {
        let Some(set) = &l.tle else { return Constellation::Shell(shell(l)) };
        let sats = set
            .elements
            .iter()
            .filter_map(|e| {
                let name = e.object_name.clone().unwrap_or_else(|| format!("NORAD {}", e.norad_id));
                let minutes = (set.epoch - e.datetime).num_milliseconds() as f64 / 60e3;
                // Checked when the set was read: a set that does not
                // initialise is left out here.
                sgp4::Constants::from_elements(e).ok().map(|c| (name, c, minutes))
            })
            .collect();
        Constellation::Tle { sats, theta0: sgp4::iau_epoch_to_sidereal_time(sgp4::julian_years_since_j2000(&set.epoch)) }
    }

    fn len(&self) -> usize {
        match self {
            Constellation::Shell(o) => o.len(),
            Constellation::Tle { sats, .. } => sats.len(),
        }
    }

    /// Satellite `i`'s Earth-fixed position at flight time `t` (s); `None`
    /// when SGP4 cannot propagate it (decayed).
    fn ecef(&self, i: usize, t: f64) -> Option<Vec3> {
        match self {
            Constellation::Shell(o) => Some(o[i].ecef(t)),
            Constellation::Tle { sats, theta0 } => {
                let (_, c, m0) = &sats[i];
                let p = c.propagate(sgp4::MinutesSinceEpoch(m0 + t / 60.0)).ok()?.position;
                Some(teme_to_ecef(p, theta0 + EARTH_RATE_RAD_S * t))
            }
        }
    }

    /// "plane P, slot S" (from 1) for the shell; the set's name otherwise.
    fn name(&self, l: &Leo, i: usize) -> String {
        match self {
            Constellation::Shell(_) => sat_name(l, i),
            Constellation::Tle { sats, .. } => sats[i].0.clone(),
        }
    }
}

/// TEME (SGP4's frame) to Earth-fixed, turning by Greenwich sidereal time
/// `theta` (rad); polar motion and the equation of the equinoxes (metres
/// to tens of metres) left out.
pub fn teme_to_ecef(p: Vec3, theta: f64) -> Vec3 {
    let (c, s) = (theta.cos(), theta.sin());
    [c * p[0] + s * p[1], -s * p[0] + c * p[1], p[2]]
}

/// Satellite positions (Earth-fixed, km) at flight time `t`, in the set's
/// order (the shell's: plane by plane); for tests and `route show`.
pub fn leo_positions(l: &Leo, t: f64) -> Vec<Option<Vec3>> {
    let c = Constellation::of(l);
    (0..c.len()).map(|i| c.ecef(i, t)).collect()
}

/// The nearest site the satellite sees above `min_el`, and its range (km).
fn ground_station(sat: Vec3, sites: &[Vec3], min_el: f64) -> Option<(usize, f64)> {
    sites.iter().enumerate().filter(|(_, &g)| elevation_deg(g, sat) >= min_el).map(|(i, &g)| (i, norm(sub(sat, g)))).min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Satellite `i` of the shell as "plane P, slot S" (from 1).
fn sat_name(l: &Leo, i: usize) -> String {
    let per = l.per_plane.max(1) as usize;
    format!("{}/{}", i / per + 1, i % per + 1)
}

pub fn leo(track: &Track, l: &Leo, sites: &[Site], step: f64, extra_ms: f64) -> Timeline {
    let sats = Constellation::of(l);
    let ground: Vec<Vec3> = sites.iter().map(|s| s.1.ecef()).collect();
    let mut tl = Timeline { step_s: step, ..Timeline::default() };
    let mut serving: Option<(usize, usize)> = None;
    let mut next_slot = l.slot_from_s;
    let mut first = true;
    for t in times(track, step) {
        let ac = track.at(t).0.ecef();
        let boundary = t >= next_slot;
        if boundary {
            while next_slot <= t {
                next_slot += l.slot_s;
            }
        }
        // A new plan at each reconfiguration, at the start, or when the
        // serving satellite left the sky.
        let lost = serving.is_some_and(|(s, _)| sats.ecef(s, t).is_none_or(|p| elevation_deg(ac, p) < l.min_elevation));
        if boundary || first || lost {
            let before = serving;
            serving = (0..sats.len())
                .filter_map(|i| sats.ecef(i, t).map(|p| (i, p)))
                .map(|(i, s)| (i, s, elevation_deg(ac, s)))
                .filter(|&(_, _, e)| e >= l.min_elevation)
                .filter_map(|(i, s, e)| ground_station(s, &ground, l.min_elevation).map(|(g, _)| (i, g, e)))
                .max_by(|a, b| a.2.total_cmp(&b.2))
                .map(|(i, g, _)| (i, g));
            if boundary && !first && l.glitch_s > 0.0 && serving.is_some() {
                tl.outages.push((t, l.glitch_s, Cause::Reconfiguration));
            }
            match (before, serving) {
                (Some(a), Some(b)) if a != b => {
                    tl.events.push((t, EventKind::Interruption(Cause::Reconfiguration), format!("satellite {} → {} (ground site {})", sats.name(l, a.0), sats.name(l, b.0), sites[b.1].0)))
                }
                (None, Some(b)) => tl.events.push((t, EventKind::Service, format!("satellite {} in view (ground site {})", sats.name(l, b.0), sites[b.1].0))),
                (Some(_), None) | (None, None) if first || before.is_some() => tl.events.push((t, EventKind::Service, "no satellite with a ground station in view".into())),
                _ => {}
            }
            first = false;
        }
        // The serving satellite was propagated at this instant's plan or
        // check above; a failure now ends the service until the next plan.
        let delay = serving.and_then(|(s, g)| sats.ecef(s, t).map(|sat| one_way_ms(norm(sub(sat, ac)) + norm(sub(sat, ground[g])), extra_ms)));
        tl.delay_ms.push(delay);
    }
    tl
}

pub fn atg(track: &Track, a: &Atg, sites: &[Site], step: f64, extra_ms: f64) -> Timeline {
    nearest_site(track, a.range_km, a.hysteresis_km, sites, step, extra_ms, |t, tl| {
        tl.outages.push((t, a.handover_outage_s, Cause::Handover));
        Cause::Handover
    })
}

/// L-DACS 1: the nearest station in range, as air-to-ground; a handover is
/// an event the profile's `handover` stage carries out.
pub fn ldacs(track: &Track, l: &Ldacs, stations: &[Site], step: f64, extra_ms: f64) -> Timeline {
    nearest_site(track, l.range_km, l.hysteresis_km, stations, step, extra_ms, |_, _| Cause::CellHandover)
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

/// The nearest site within `range_km`, kept until another is nearer by
/// `hysteresis_km`; `handover` records a change and says why it was.
fn nearest_site(track: &Track, range_km: f64, hysteresis_km: f64, sites: &[Site], step: f64, extra_ms: f64, mut handover: impl FnMut(f64, &mut Timeline) -> Cause) -> Timeline {
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
        tl.delay_ms.push(now.map(|s| one_way_ms(range[s], extra_ms)));
    }
    tl
}
