//! Earth and orbit geometry for routes: a spherical Earth (radius 6371 km;
//! the ellipsoid changes a GEO or LEO slant range by well under 0.5 %,
//! a fraction of a millisecond of delay), positions as Earth-fixed
//! Cartesian vectors in km, great circles, elevation angles, slant ranges
//! and circular orbits.

/// Mean Earth radius, km.
pub const EARTH_RADIUS_KM: f64 = 6371.0;
/// Speed of light in vacuum, km/s (radio through the air and space).
pub const LIGHT_KM_S: f64 = 299_792.458;
/// Earth's gravitational parameter μ, km³/s².
pub const MU_KM3_S2: f64 = 398_600.441_8;
/// Earth's rotation rate, rad/s (sidereal).
pub const EARTH_RATE_RAD_S: f64 = 7.292_115_9e-5;
/// The geostationary orbit's altitude, km.
pub const GEO_ALTITUDE_KM: f64 = 35_786.0;

/// A point above the Earth: latitude and longitude in degrees, altitude in
/// metres.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub lat: f64,
    pub lon: f64,
    pub alt_m: f64,
}

/// An Earth-fixed Cartesian vector, km.
pub type Vec3 = [f64; 3];

impl Point {
    pub fn new(lat: f64, lon: f64, alt_m: f64) -> Point {
        Point { lat, lon, alt_m }
    }

    /// The Earth-fixed Cartesian position, km.
    pub fn ecef(&self) -> Vec3 {
        let r = EARTH_RADIUS_KM + self.alt_m / 1e3;
        let (la, lo) = (self.lat.to_radians(), self.lon.to_radians());
        [r * la.cos() * lo.cos(), r * la.cos() * lo.sin(), r * la.sin()]
    }
}

pub fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub fn norm(a: Vec3) -> f64 {
    dot(a, a).sqrt()
}

/// The great-circle distance along the surface, km.
pub fn surface_km(a: &Point, b: &Point) -> f64 {
    central_angle(a, b) * EARTH_RADIUS_KM
}

/// The angle between two points seen from the Earth's centre, radians
/// (haversine: exact for short legs too).
pub fn central_angle(a: &Point, b: &Point) -> f64 {
    let (p1, p2) = (a.lat.to_radians(), b.lat.to_radians());
    let dp = p2 - p1;
    let dl = (b.lon - a.lon).to_radians();
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * h.sqrt().min(1.0).asin()
}

/// The point a fraction `f` (0–1) of the way along the great circle from
/// `a` to `b` (latitude and longitude; altitude left at 0).
pub fn intermediate(a: &Point, b: &Point, f: f64) -> Point {
    let d = central_angle(a, b);
    if d < 1e-12 {
        return Point::new(a.lat, a.lon, 0.0);
    }
    let (wa, wb) = (((1.0 - f) * d).sin() / d.sin(), (f * d).sin() / d.sin());
    let (va, vb) = (Point::new(a.lat, a.lon, 0.0).ecef(), Point::new(b.lat, b.lon, 0.0).ecef());
    let v = [wa * va[0] + wb * vb[0], wa * va[1] + wb * vb[1], wa * va[2] + wb * vb[2]];
    let lat = v[2].atan2((v[0] * v[0] + v[1] * v[1]).sqrt()).to_degrees();
    let lon = v[1].atan2(v[0]).to_degrees();
    Point::new(lat, lon, 0.0)
}

/// The elevation of `target` seen from `from` (Earth-fixed km), degrees:
/// 90 overhead, 0 on the horizon, negative below it.
pub fn elevation_deg(from: Vec3, target: Vec3) -> f64 {
    let los = sub(target, from);
    let (n, l) = (norm(from), norm(los));
    if n == 0.0 || l == 0.0 {
        return 90.0;
    }
    (dot(los, from) / (n * l)).clamp(-1.0, 1.0).asin().to_degrees()
}

/// The slant range from the ground (or an aircraft) at `elevation` degrees
/// to a satellite at `altitude_km`, km.
pub fn slant_range_km(altitude_km: f64, elevation: f64) -> f64 {
    let (r, e) = (EARTH_RADIUS_KM, elevation.to_radians());
    ((r + altitude_km).powi(2) - (r * e.cos()).powi(2)).sqrt() - r * e.sin()
}

/// A geostationary satellite at `lon` degrees, Earth-fixed km.
pub fn geo_satellite(lon: f64) -> Vec3 {
    Point::new(0.0, lon, GEO_ALTITUDE_KM * 1e3).ecef()
}

/// A satellite on a circular orbit: its right ascension of the ascending
/// node and argument of latitude at time 0 (radians), inclination
/// (radians), radius (km); Earth-fixed position at `t` seconds (the Earth
/// turned by its sidereal rate since 0, when the two frames coincide).
#[derive(Clone, Copy, Debug)]
pub struct CircularOrbit {
    pub raan: f64,
    pub u0: f64,
    pub incl: f64,
    pub radius_km: f64,
}

impl CircularOrbit {
    /// Mean motion, rad/s.
    pub fn mean_motion(&self) -> f64 {
        (MU_KM3_S2 / self.radius_km.powi(3)).sqrt()
    }

    pub fn ecef(&self, t: f64) -> Vec3 {
        let u = self.u0 + self.mean_motion() * t;
        let (cu, su) = (u.cos(), u.sin());
        let (co, so) = (self.raan.cos(), self.raan.sin());
        let (ci, si) = (self.incl.cos(), self.incl.sin());
        let a = self.radius_km;
        let eci = [a * (co * cu - so * su * ci), a * (so * cu + co * su * ci), a * su * si];
        let th = EARTH_RATE_RAD_S * t;
        let (ct, st) = (th.cos(), th.sin());
        [ct * eci[0] + st * eci[1], -st * eci[0] + ct * eci[1], eci[2]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn london_to_new_york_is_5540_km_along_the_great_circle() {
        let (lhr, jfk) = (Point::new(51.4700, -0.4543, 0.0), Point::new(40.6413, -73.7781, 0.0));
        let d = surface_km(&lhr, &jfk);
        assert!((d - 5540.0).abs() < 20.0, "{d}");
        // Halfway is far north of both ends (the great circle bends north).
        let mid = intermediate(&lhr, &jfk, 0.5);
        assert!(mid.lat > 52.0, "{mid:?}");
        assert!((surface_km(&lhr, &mid) - d / 2.0).abs() < 1.0);
    }

    #[test]
    fn a_geo_satellite_overhead_is_35786_km_up_and_at_30_degrees_38609_km() {
        let below = Point::new(0.0, 10.0, 0.0).ecef();
        let sat = geo_satellite(10.0);
        assert!((norm(sub(sat, below)) - GEO_ALTITUDE_KM).abs() < 1e-6);
        assert!((elevation_deg(below, sat) - 90.0).abs() < 1e-6);
        assert!((slant_range_km(GEO_ALTITUDE_KM, 30.0) - 38_609.0).abs() < 2.0);
        assert!((slant_range_km(550.0, 90.0) - 550.0).abs() < 1e-9);
    }

    #[test]
    fn a_550_km_orbit_takes_95_6_minutes_and_keeps_its_radius() {
        let o = CircularOrbit { raan: 0.3, u0: 1.0, incl: 53f64.to_radians(), radius_km: EARTH_RADIUS_KM + 550.0 };
        let period_min = 2.0 * std::f64::consts::PI / o.mean_motion() / 60.0;
        assert!((period_min - 95.6).abs() < 0.2, "{period_min}");
        for t in [0.0, 100.0, 4000.0] {
            assert!((norm(o.ecef(t)) - o.radius_km).abs() < 1e-6);
        }
        // It never passes beyond its inclination's latitude.
        let max_lat = (0..6000).map(|t| (o.ecef(t as f64)[2] / o.radius_km).asin().to_degrees()).fold(f64::MIN, f64::max);
        assert!((max_lat - 53.0).abs() < 0.1, "{max_lat}");
    }
}
