//! LEO along a route: the satellites (a Walker-delta shell on circular
//! orbits, or two-line element sets propagated by SGP4), and at each
//! reconfiguration the path: the highest satellite above `min_elevation`
//! and a bent pipe from it to the ground site nearest it, or with `isl =
//! true` the shortest way through the laser links (+Grid: each satellite to
//! the next and the previous in its plane and to the same slot of the two
//! neighbouring planes; for element sets the planes and slots read from the
//! orbits) to a satellite that sees a ground site.
use super::earth::{dot, elevation_deg, norm, sub, CircularOrbit, Vec3, EARTH_RADIUS_KM, EARTH_RATE_RAD_S};
use super::tech::{one_way_ms, times, Cause, EventKind, Leo, Site, Timeline};
use super::track::Track;

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

    /// Each satellite's four laser links (+Grid): the shell's planes and
    /// slots, or for element sets the planes and slots read from the
    /// orbits at flight time 0 ([`set_grid`]).
    fn links(&self, l: &Leo) -> Vec<[usize; 4]> {
        match self {
            Constellation::Shell(o) => (0..o.len()).map(|i| grid_neighbours(l, i)).collect(),
            Constellation::Tle { sats, .. } => {
                let orbits: Vec<Option<(f64, f64, f64, f64)>> = sats
                    .iter()
                    .map(|(_, c, m0)| {
                        let p = c.propagate(sgp4::MinutesSinceEpoch(*m0)).ok()?;
                        Some(orbit_of(p.position, p.velocity))
                    })
                    .collect();
                set_grid(&orbits)
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
    // Sites farther round the Earth than the satellite's footprint at
    // `min_el` (central angle λ = acos(R cos e / r) − e) cannot see it:
    // one dot product rules most out before the elevation's own.
    let (r, e) = (norm(sat), min_el.to_radians());
    let footprint = ((EARTH_RADIUS_KM * e.cos() / r).clamp(-1.0, 1.0).acos() - e).max(0.0);
    let near = footprint.cos() * r * EARTH_RADIUS_KM * (1.0 - 1e-9);
    sites.iter().enumerate().filter(|(_, &g)| dot(sat, g) >= near && elevation_deg(g, sat) >= min_el).map(|(i, &g)| (i, norm(sub(sat, g)))).min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Satellite `i` of the shell as "plane P, slot S" (from 1).
fn sat_name(l: &Leo, i: usize) -> String {
    let per = l.per_plane.max(1) as usize;
    format!("{}/{}", i / per + 1, i % per + 1)
}

/// The shell's +Grid laser links of satellite `i`: the next and the
/// previous in its plane, the same slot in the planes either side.
fn grid_neighbours(l: &Leo, i: usize) -> [usize; 4] {
    let (planes, per) = (l.planes.max(1) as usize, l.per_plane.max(1) as usize);
    let (p, s) = (i / per, i % per);
    [p * per + (s + 1) % per, p * per + (s + per - 1) % per, ((p + 1) % planes) * per + s, ((p + planes - 1) % planes) * per + s]
}

/// An orbit's inclination, ascending node and argument of latitude
/// (degrees) and radius (km), from a position and velocity in an inertial
/// frame (SGP4's TEME).
fn orbit_of(r: Vec3, v: Vec3) -> (f64, f64, f64, f64) {
    let h = [r[1] * v[2] - r[2] * v[1], r[2] * v[0] - r[0] * v[2], r[0] * v[1] - r[1] * v[0]];
    let incl = (h[2] / norm(h)).clamp(-1.0, 1.0).acos().to_degrees();
    let node = h[0].atan2(-h[1]);
    let towards_node = [node.cos(), node.sin(), 0.0];
    let u = (dot(towards_node, r) / norm(r)).clamp(-1.0, 1.0).acos().to_degrees();
    let u = if r[2] < 0.0 { 360.0 - u } else { u };
    (incl, node.to_degrees().rem_euclid(360.0), u, norm(r))
}

/// The +Grid of satellites given by their orbits (`None`: not
/// propagated; it gets no links): shells by inclination (0.5°) and radius
/// (20 km); a shell's planes by ascending node, a new plane where the
/// nodes part by more than 1.5°; a plane's slots by argument of latitude.
/// Each satellite links to the next and the previous in its plane and to
/// the nearest in phase of the planes either side.
fn set_grid(orbits: &[Option<(f64, f64, f64, f64)>]) -> Vec<[usize; 4]> {
    let mut links: Vec<[usize; 4]> = (0..orbits.len()).map(|i| [i; 4]).collect();
    let mut shells: std::collections::BTreeMap<(i64, i64), Vec<usize>> = Default::default();
    for (i, o) in orbits.iter().enumerate() {
        if let Some((incl, _, _, r)) = o {
            shells.entry(((incl * 2.0).round() as i64, (r / 20.0).round() as i64)).or_default().push(i);
        }
    }
    let at = |i: usize| orbits[i].expect("in a shell");
    let apart = |a: f64, b: f64| {
        let d = (a - b).rem_euclid(360.0);
        d.min(360.0 - d)
    };
    for mut members in shells.into_values() {
        members.sort_by(|&a, &b| at(a).1.total_cmp(&at(b).1));
        // Start after the widest gap of nodes (across 360° too), so a plane
        // near 0° is not cut in two.
        let n = members.len();
        let gap = |k: usize| (at(members[(k + 1) % n]).1 - at(members[k]).1).rem_euclid(360.0);
        let widest = (0..n).max_by(|&a, &b| gap(a).total_cmp(&gap(b))).unwrap_or(0);
        members.rotate_left((widest + 1) % n);
        let mut planes: Vec<Vec<usize>> = Vec::new();
        for (k, &i) in members.iter().enumerate() {
            if k == 0 || apart(at(i).1, at(members[k - 1]).1) > 1.5 {
                planes.push(Vec::new());
            }
            planes.last_mut().expect("a plane").push(i);
        }
        for p in &mut planes {
            p.sort_by(|&a, &b| at(a).2.total_cmp(&at(b).2));
        }
        let np = planes.len();
        for (pi, plane) in planes.iter().enumerate() {
            let nearest = |other: &Vec<usize>, u: f64| other.iter().copied().min_by(|&a, &b| apart(at(a).2, u).total_cmp(&apart(at(b).2, u)));
            for (k, &i) in plane.iter().enumerate() {
                let u = at(i).2;
                let (next, prev) = (plane[(k + 1) % plane.len()], plane[(k + plane.len() - 1) % plane.len()]);
                let east = if np > 1 { nearest(&planes[(pi + 1) % np], u).unwrap_or(i) } else { i };
                let west = if np > 1 { nearest(&planes[(pi + np - 1) % np], u).unwrap_or(i) } else { i };
                links[i] = [next, prev, east, west];
            }
        }
    }
    links
}

/// The path at one plan: satellites from the one the aircraft uses to the
/// one that comes down, and the ground site.
#[derive(Clone, Debug, PartialEq)]
struct Path {
    sats: Vec<usize>,
    site: usize,
}

/// The highest satellite above `min_elevation`; with a bent pipe only one
/// that sees a ground site itself, with laser links the way through them
/// that makes the whole path (links and the way down) shortest.
fn plan(l: &Leo, links: &[[usize; 4]], pos: &[Option<Vec3>], ac: Vec3, ground: &[Vec3]) -> Option<Path> {
    let up = |i: usize| pos[i].map(|p| elevation_deg(ac, p)).filter(|e| *e >= l.min_elevation);
    let down = |i: usize| pos[i].and_then(|p| ground_station(p, ground, l.min_elevation));
    if !l.isl {
        return (0..pos.len()).filter_map(|i| Some((i, up(i)?, down(i)?.0))).max_by(|a, b| a.1.total_cmp(&b.1)).map(|(i, _, g)| Path { sats: vec![i], site: g });
    }
    let first = (0..pos.len()).filter_map(|i| Some((i, up(i)?))).max_by(|a, b| a.1.total_cmp(&b.1))?.0;
    // Dijkstra over the laser links, lengths in km, from the satellite the
    // aircraft uses; each satellite reached is a way down. It stops once
    // the links alone are longer than the best whole path found (every
    // later one only longer still), so it seldom visits the whole shell.
    let n = pos.len();
    let (mut dist, mut prev) = (vec![f64::INFINITY; n], vec![usize::MAX; n]);
    let mut heap = std::collections::BinaryHeap::new();
    let mut best: Option<(usize, usize, f64)> = None;
    dist[first] = 0.0;
    heap.push((std::cmp::Reverse(Km(0.0)), first));
    while let Some((std::cmp::Reverse(Km(d)), i)) = heap.pop() {
        if d > dist[i] {
            continue;
        }
        if best.is_some_and(|b| d >= b.2) {
            break;
        }
        if let Some((g, r)) = down(i) {
            if best.is_none_or(|b| d + r < b.2) {
                best = Some((i, g, d + r));
            }
        }
        let Some(pi) = pos[i] else { continue };
        for j in links[i] {
            let Some(pj) = pos[j] else { continue };
            let dj = d + norm(sub(pi, pj));
            if dj < dist[j] {
                (dist[j], prev[j]) = (dj, i);
                heap.push((std::cmp::Reverse(Km(dj)), j));
            }
        }
    }
    let (last, site, _) = best?;
    let mut sats = vec![last];
    while let Some(&i) = sats.last().filter(|&&i| i != first) {
        sats.push(prev[i]);
    }
    sats.reverse();
    Some(Path { sats, site })
}

/// A length for the heap's order (lengths are never NaN).
#[derive(PartialEq)]
struct Km(f64);
impl Eq for Km {}
impl PartialOrd for Km {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Km {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

pub fn leo(track: &Track, l: &Leo, sites: &[Site], step: f64, extra_ms: f64) -> Timeline {
    let sats = Constellation::of(l);
    let links = if l.isl { sats.links(l) } else { Vec::new() };
    let ground: Vec<Vec3> = sites.iter().map(|s| s.1.ecef()).collect();
    let mut tl = Timeline { step_s: step, ..Timeline::default() };
    let mut serving: Option<Path> = None;
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
        // satellite the aircraft uses left its sky.
        let lost = serving.as_ref().is_some_and(|p| sats.ecef(p.sats[0], t).is_none_or(|s| elevation_deg(ac, s) < l.min_elevation));
        if boundary || first || lost {
            let pos: Vec<Option<Vec3>> = (0..sats.len()).map(|i| sats.ecef(i, t)).collect();
            let before = serving.take();
            serving = plan(l, &links, &pos, ac, &ground);
            if boundary && !first && l.glitch_s > 0.0 && serving.is_some() {
                tl.outages.push((t, l.glitch_s, Cause::Reconfiguration));
            }
            let via = |p: &Path| if p.sats.len() > 1 { format!(", {} laser links", p.sats.len() - 1) } else { String::new() };
            match (&before, &serving) {
                (Some(a), Some(b)) if (a.sats[0], a.site) != (b.sats[0], b.site) => tl.events.push((
                    t,
                    EventKind::Interruption(Cause::Reconfiguration),
                    format!("satellite {} → {} (ground site {}{})", sats.name(l, a.sats[0]), sats.name(l, b.sats[0]), sites[b.site].0, via(b)),
                )),
                (None, Some(b)) => tl.events.push((t, EventKind::Service, format!("satellite {} in view (ground site {}{})", sats.name(l, b.sats[0]), sites[b.site].0, via(b)))),
                (Some(_), None) | (None, None) if first || before.is_some() => {
                    let what = if l.isl { "no satellite in view" } else { "no satellite with a ground station in view" };
                    tl.events.push((t, EventKind::Service, what.into()))
                }
                _ => {}
            }
            first = false;
        }
        // The path's length now: up, along its links, down. A satellite
        // SGP4 cannot propagate now ends the service until the next plan.
        let delay = serving.as_ref().and_then(|p| {
            let pos: Option<Vec<Vec3>> = p.sats.iter().map(|&i| sats.ecef(i, t)).collect();
            let pos = pos?;
            let links: f64 = pos.windows(2).map(|w| norm(sub(w[0], w[1]))).sum();
            Some(one_way_ms(norm(sub(pos[0], ac)) + links + norm(sub(pos[pos.len() - 1], ground[p.site])), extra_ms))
        });
        tl.delay_ms.push(delay);
    }
    tl
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_links_a_satellite_to_its_plane_and_the_planes_beside() {
        let l = Leo { tle: None, isl: true, inclination: 53.0, altitude_km: 550.0, planes: 72, per_plane: 22, phasing: 1, min_elevation: 25.0, slot_s: 15.0, slot_from_s: 12.0, glitch_s: 0.05 };
        assert_eq!(grid_neighbours(&l, 0), [1, 21, 22, 71 * 22]);
        assert_eq!(grid_neighbours(&l, 72 * 22 - 1), [71 * 22, 72 * 22 - 2, 21, 70 * 22 + 21]);
    }

    #[test]
    fn the_grid_read_from_the_orbits_is_the_shells() {
        let l = Leo { tle: None, isl: true, inclination: 53.0, altitude_km: 550.0, planes: 72, per_plane: 22, phasing: 1, min_elevation: 25.0, slot_s: 15.0, slot_from_s: 12.0, glitch_s: 0.05 };
        // Each circle's position and velocity (a quarter turn on), as
        // SGP4 would give them in its inertial frame; a satellite it could
        // not propagate gets no links.
        let mut orbits: Vec<Option<(f64, f64, f64, f64)>> = shell(&l)
            .iter()
            .map(|o| {
                let at = |u: f64| {
                    let (cu, su, co, so, ci, si) = (u.cos(), u.sin(), o.raan.cos(), o.raan.sin(), o.incl.cos(), o.incl.sin());
                    [o.radius_km * (co * cu - so * su * ci), o.radius_km * (so * cu + co * su * ci), o.radius_km * su * si]
                };
                Some(orbit_of(at(o.u0), at(o.u0 + std::f64::consts::FRAC_PI_2)))
            })
            .collect();
        let grid = set_grid(&orbits);
        // The shell's grid, but across the seam (plane 72 to plane 1, where
        // the phasing has added up to nearly a slot) the nearer in phase.
        let phase = |i: usize| orbits[i].expect("propagated").2;
        let apart = |a: usize, b: usize| (phase(a) - phase(b)).rem_euclid(360.0).min((phase(b) - phase(a)).rem_euclid(360.0));
        for (i, &got) in grid.iter().enumerate() {
            let want = grid_neighbours(&l, i);
            let seam = |k: usize| (i / 22 == 0 && k == 3) || (i / 22 == 71 && k == 2);
            for k in 0..4 {
                if seam(k) {
                    assert!(got[k] / 22 == want[k] / 22 && apart(i, got[k]) <= apart(i, want[k]), "{i}: {got:?} {want:?}");
                } else {
                    assert_eq!(got[k], want[k], "{i}: link {k}");
                }
            }
        }
        orbits[5] = None;
        assert_eq!(set_grid(&orbits)[5], [5; 4]);
    }
}
