//! Where the aircraft is at each moment of a route: legs along great
//! circles with a constant ground speed and a linear climb or descent in
//! each, built from `from`/`to` (taxi, climb, cruise, descent, taxi) or
//! from explicit waypoints.
use super::earth::{intermediate, surface_km, Point};

/// Climb and descent: vertical rates (about 2000 and 1500 ft/min) and the
/// ground speed while climbing or descending, typical of an airliner.
const CLIMB_M_S: f64 = 10.0;
const DESCENT_M_S: f64 = 7.5;
const CLIMB_KMH: f64 = 450.0;

/// The phase of flight a leg belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    TaxiOut,
    Climb,
    Cruise,
    Descent,
    TaxiIn,
    /// A leg between explicit waypoints.
    Leg,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::TaxiOut => "taxi-out",
            Phase::Climb => "climb",
            Phase::Cruise => "cruise",
            Phase::Descent => "descent",
            Phase::TaxiIn => "taxi-in",
            Phase::Leg => "leg",
        }
    }
}

/// One leg: from `a` at `t0` to `b` at `t1` (flight seconds).
#[derive(Clone, Debug)]
pub struct Leg {
    pub t0: f64,
    pub t1: f64,
    pub a: Point,
    pub b: Point,
    pub phase: Phase,
}

/// A route's legs, in time order, from flight time 0.
#[derive(Clone, Debug)]
pub struct Track {
    pub legs: Vec<Leg>,
    /// How the track was given, for descriptions: `LHR→JFK` or `5 waypoints`.
    pub label: String,
}

impl Track {
    /// From airport to airport: `taxi_s` at each end, a climb to
    /// `altitude_m` and a descent from it (lower when the route is too short
    /// for both at full height), and cruise at `cruise_kmh` between.
    pub fn between(label: String, from: Point, to: Point, cruise_kmh: f64, altitude_m: f64, taxi_s: f64) -> Track {
        let total_km = surface_km(&from, &to);
        let climb_km = |alt: f64| CLIMB_KMH / 3.6 * alt / CLIMB_M_S / 1e3;
        let descent_km = |alt: f64| CLIMB_KMH / 3.6 * alt / DESCENT_M_S / 1e3;
        let full = climb_km(altitude_m) + descent_km(altitude_m);
        let alt = if full > total_km { altitude_m * total_km / full } else { altitude_m };
        let (c_km, d_km) = (climb_km(alt), descent_km(alt));
        let at = |km: f64, alt_m: f64| {
            let p = intermediate(&from, &to, if total_km > 0.0 { km / total_km } else { 0.0 });
            Point::new(p.lat, p.lon, alt_m)
        };
        let (top, bottom) = (at(c_km, alt), at((total_km - d_km).max(c_km), alt));
        let mut legs = Vec::new();
        let mut t = 0.0;
        let mut push = |legs: &mut Vec<Leg>, a: Point, b: Point, secs: f64, phase: Phase| {
            legs.push(Leg { t0: t, t1: t + secs, a, b, phase });
            t += secs;
        };
        let ground = |p: Point| Point::new(p.lat, p.lon, 0.0);
        push(&mut legs, ground(from), ground(from), taxi_s, Phase::TaxiOut);
        push(&mut legs, ground(from), top, alt / CLIMB_M_S, Phase::Climb);
        let cruise_km = (total_km - c_km - d_km).max(0.0);
        push(&mut legs, top, bottom, cruise_km / cruise_kmh * 3600.0, Phase::Cruise);
        push(&mut legs, bottom, ground(to), alt / DESCENT_M_S, Phase::Descent);
        push(&mut legs, ground(to), ground(to), taxi_s, Phase::TaxiIn);
        legs.retain(|l| l.t1 > l.t0);
        Track { legs, label }
    }

    /// Through waypoints `(point, flight seconds)`, times increasing.
    pub fn through(points: &[(Point, f64)]) -> Track {
        let legs = points.windows(2).map(|w| Leg { t0: w[0].1, t1: w[1].1, a: w[0].0, b: w[1].0, phase: Phase::Leg }).collect();
        Track { legs, label: format!("{} waypoints", points.len()) }
    }

    /// The flight's length, s.
    pub fn duration(&self) -> f64 {
        self.legs.last().map_or(0.0, |l| l.t1)
    }

    /// The route's length along the ground, km.
    pub fn length_km(&self) -> f64 {
        self.legs.iter().map(|l| surface_km(&l.a, &l.b)).sum()
    }

    /// Where the aircraft is at `t` (held at the ends) and in which phase.
    pub fn at(&self, t: f64) -> (Point, Phase) {
        let Some(first) = self.legs.first() else { return (Point::new(0.0, 0.0, 0.0), Phase::Leg) };
        let leg = self.legs.iter().find(|l| t < l.t1).unwrap_or_else(|| self.legs.last().unwrap_or(first));
        let f = if leg.t1 > leg.t0 { ((t - leg.t0) / (leg.t1 - leg.t0)).clamp(0.0, 1.0) } else { 1.0 };
        let p = intermediate(&leg.a, &leg.b, f);
        (Point::new(p.lat, p.lon, leg.a.alt_m + f * (leg.b.alt_m - leg.a.alt_m)), leg.phase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn london_to_new_york_takes_about_seven_hours_at_900_kmh() {
        let (lhr, jfk) = (Point::new(51.47, -0.4543, 0.0), Point::new(40.6413, -73.7781, 0.0));
        let tr = Track::between("LHR→JFK".into(), lhr, jfk, 900.0, 11_000.0, 600.0);
        let phases: Vec<_> = tr.legs.iter().map(|l| l.phase).collect();
        assert_eq!(phases, [Phase::TaxiOut, Phase::Climb, Phase::Cruise, Phase::Descent, Phase::TaxiIn]);
        let h = tr.duration() / 3600.0;
        assert!((6.5..7.5).contains(&h), "{h} h");
        assert!((tr.length_km() - 5540.0).abs() < 25.0);
        let (p, ph) = tr.at(tr.duration() / 2.0);
        assert_eq!((ph, p.alt_m), (Phase::Cruise, 11_000.0));
        let (end, _) = tr.at(1e9);
        assert!(surface_km(&end, &jfk) < 1e-6);
        // Climbing: higher with time, 10 m/s.
        let (a, _) = tr.at(600.0 + 100.0);
        assert!((a.alt_m - 1000.0).abs() < 1e-6, "{a:?}");
    }

    #[test]
    fn a_hop_too_short_for_cruise_height_climbs_only_part_way() {
        let (a, b) = (Point::new(50.0, 8.0, 0.0), Point::new(50.0, 9.5, 0.0));
        let tr = Track::between("a→b".into(), a, b, 900.0, 11_000.0, 0.0);
        let top = tr.legs.iter().map(|l| l.b.alt_m).fold(0.0, f64::max);
        assert!(top < 11_000.0 && top > 1000.0, "{top}");
        assert!((tr.length_km() - surface_km(&a, &b)).abs() < 1e-6);
    }
}
