//! A route's keys, parsed and checked: `RouteSpec::parse` reads one TOML
//! table (the profile's `route = { … }`, or what `aerolink route show`
//! builds from its flags) and names the key and what it allows on error.
use super::airports;
use super::earth::Point;
use super::tech::{Atg, Edge, Geo, Ldacs, Leo, Tech, TechName};
use super::track::Track;
use crate::units;

/// The longest flight a route may describe, s (two days).
const MAX_FLIGHT_S: f64 = 172_800.0;
/// The most samples a timeline may have.
const MAX_SAMPLES: f64 = 400_000.0;

/// A parsed route: where the aircraft flies, over which technology, and
/// how flight time maps onto run time.
#[derive(Clone, Debug)]
pub struct RouteSpec {
    pub track: Track,
    pub tech: Tech,
    /// Ground sites (LEO ground stations, ATG towers).
    pub sites: Vec<super::tech::Site>,
    /// Flight seconds between samples.
    pub step_s: f64,
    /// The flight time at run time 0, s.
    pub start_s: f64,
    /// Flight seconds per run second.
    pub time_scale: f64,
    /// Added to every one-way delay: the ground network, ms.
    pub extra_ms: f64,
    /// The technology's parameters as written, for descriptions.
    pub params: String,
}

const COMMON: &[&str] = &["tech", "from", "to", "waypoints", "cruise_kmh", "altitude_m", "taxi", "time_scale", "step", "start", "extra", "sites"];
const GEO_KEYS: &[&str] = &["satellites", "min_elevation", "hysteresis", "gateway_elevation", "beam_km", "beam_outage", "satellite_outage", "low_loss", "low_from"];
const LEO_KEYS: &[&str] = &["inclination", "altitude_km", "planes", "per_plane", "phasing", "min_elevation", "slot", "slot_from", "glitch", "tle", "epoch", "isl"];
/// The shell's keys, which `tle` replaces.
const SHELL_KEYS: &[&str] = &["inclination", "altitude_km", "planes", "per_plane", "phasing"];
/// How far flight time 0 may be from a TLE set's own epoch, days: SGP4's
/// error grows by about a kilometre a day.
const TLE_MAX_DAYS: f64 = 30.0;
const ATG_KEYS: &[&str] = &["range_km", "hysteresis_km", "handover_outage", "edge_loss", "edge_delay", "edge_from_km", "edge_rate"];
const LDACS_KEYS: &[&str] = &["spacing_km", "first_station_km", "airport_km", "range_km", "hysteresis_km"];

/// The table's typed reader: each getter names the key in its error.
struct Keys<'a>(&'a toml::Table);

impl Keys<'_> {
    fn num(&self, key: &str, default: f64, lo: f64, hi: f64) -> Result<f64, String> {
        let v = match self.0.get(key) {
            None => return Ok(default),
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(toml::Value::Float(f)) => *f,
            Some(_) => return Err(format!("{key}: expected a number from {lo} to {hi}")),
        };
        if !(lo..=hi).contains(&v) {
            return Err(format!("{key}: expected a number from {lo} to {hi}, got {v}"));
        }
        Ok(v)
    }

    fn secs(&self, key: &str, default: &str, lo: f64, hi: f64) -> Result<f64, String> {
        let s = match self.0.get(key) {
            None => default.to_string(),
            Some(toml::Value::String(s)) => s.clone(),
            Some(_) => return Err(format!("{key}: expected {} in quotes", units::DURATION_HELP)),
        };
        let d = units::parse_duration(&s).map_err(|m| format!("{key}: expected {m}"))?.as_secs_f64();
        if !(lo..=hi).contains(&d) {
            return Err(format!("{key}: expected from {lo} s to {hi} s, got {s}"));
        }
        Ok(d)
    }

    fn prob(&self, key: &str) -> Result<f64, String> {
        match self.0.get(key) {
            None => Ok(0.0),
            Some(toml::Value::String(s)) => units::parse_probability(s).map_err(|m| format!("{key}: expected {m}")),
            Some(toml::Value::Float(f)) if (0.0..=1.0).contains(f) => Ok(*f),
            Some(_) => Err(format!("{key}: expected {}", units::PROBABILITY_HELP)),
        }
    }

    fn point(&self, key: &str, v: &toml::Value, i: usize, with_time: bool) -> Result<(Point, f64), String> {
        let what = if with_time { "{ lat, lon, alt_m, at = \"1 h\" }" } else { "{ lat, lon }" };
        let t = v.as_table().ok_or_else(|| format!("{key}: entry {}: expected {what}", i + 1))?;
        let allowed: &[&str] = if with_time { &["lat", "lon", "alt_m", "at"] } else { &["lat", "lon"] };
        if let Some(k) = t.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(format!("{key}: entry {}: unknown key `{k}`; allowed: {}", i + 1, allowed.join(", ")));
        }
        let k = Keys(t);
        let at_err = |m: String| format!("{key}: entry {}: {m}", i + 1);
        let (lat, lon) = (k.num("lat", f64::NAN, -90.0, 90.0).map_err(at_err)?, k.num("lon", f64::NAN, -180.0, 180.0).map_err(at_err)?);
        if lat.is_nan() || lon.is_nan() {
            return Err(format!("{key}: entry {}: expected {what}", i + 1));
        }
        let alt = k.num("alt_m", 0.0, 0.0, 20_000.0).map_err(at_err)?;
        let at = if with_time { k.secs("at", "", 0.0, MAX_FLIGHT_S).map_err(at_err)? } else { 0.0 };
        Ok((Point::new(lat, lon, alt), at))
    }

    fn list(&self, key: &str) -> Result<Option<&Vec<toml::Value>>, String> {
        match self.0.get(key) {
            None => Ok(None),
            Some(toml::Value::Array(a)) => Ok(Some(a)),
            Some(_) => Err(format!("{key}: expected a list")),
        }
    }
}

impl RouteSpec {
    /// `load` reads a file the route names (`tle`), relative to where the
    /// route was written.
    pub fn parse(t: &toml::Table, load: crate::profile::Loader<'_>) -> Result<RouteSpec, String> {
        let k = Keys(t);
        let tech_name = match t.get("tech") {
            Some(toml::Value::String(s)) => TechName::parse(s).ok_or_else(|| format!("tech: expected {}, got {s:?}", TechName::choices()))?,
            _ => return Err(format!("tech: expected {}", TechName::choices())),
        };
        let own: &[&str] = match tech_name {
            TechName::Geo => GEO_KEYS,
            TechName::Leo => LEO_KEYS,
            TechName::Atg => ATG_KEYS,
            TechName::Ldacs => LDACS_KEYS,
        };
        if let Some(bad) = t.keys().find(|x| !COMMON.contains(&x.as_str()) && !own.contains(&x.as_str())) {
            return Err(format!("unknown key `{bad}`; allowed with tech = {:?}: {}, {}", tech_name.as_str(), COMMON.join(", "), own.join(", ")));
        }
        let track = parse_track(&k)?;
        if track.duration() > MAX_FLIGHT_S {
            return Err(format!("the flight lasts {:.0} s; at most {MAX_FLIGHT_S} s (two days)", track.duration()));
        }
        let (tech, default_step, default_extra) = parse_tech(&k, tech_name, load)?;
        let step_s = k.secs("step", default_step, 0.1, 600.0)?;
        if track.duration() / step_s > MAX_SAMPLES {
            return Err(format!("step: {step_s} s gives more than {MAX_SAMPLES} samples over this flight; take a longer step"));
        }
        let sites = match (k.list("sites")?, &tech) {
            (None, Tech::Ldacs(l)) => super::tech::line_stations(&track, l),
            (None, _) => airports::AIRPORTS.iter().map(|&(c, lat, lon)| (c.to_string(), Point::new(lat, lon, 0.0))).collect(),
            (Some(a), _) if a.is_empty() => return Err("sites: expected at least one { lat, lon }".into()),
            (Some(a), _) => a.iter().enumerate().map(|(i, v)| k.point("sites", v, i, false).map(|p| (format!("site {}", i + 1), p.0))).collect::<Result<_, _>>()?,
        };
        let params = t.iter().filter(|(x, _)| own.contains(&x.as_str())).map(|(x, v)| format!("{x} = {v}")).collect::<Vec<_>>().join(", ");
        Ok(RouteSpec {
            start_s: k.secs("start", "0 s", 0.0, track.duration())?,
            track,
            tech,
            sites,
            step_s,
            time_scale: k.num("time_scale", 1.0, 1.0, 3600.0)?,
            extra_ms: k.secs("extra", default_extra, 0.0, 10.0)? * 1e3,
            params: if params.is_empty() { "defaults".into() } else { params },
        })
    }
}

/// A file of two-line element sets (with or without name lines, as
/// CelesTrak serves them) and the UTC time of flight time 0 (`epoch`, by
/// default the newest set's own).
fn parse_tle(path: &str, k: &Keys, load: crate::profile::Loader<'_>) -> Result<super::tech::TleSet, String> {
    use sgp4::chrono::NaiveDateTime;
    let text = load(path).map_err(|m| format!("tle: {path}: {m}"))?;
    let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let parsed = if first.starts_with("1 ") { sgp4::parse_2les(&text) } else { sgp4::parse_3les(&text) };
    let elements = parsed.map_err(|e| format!("tle: {path}: not two-line element sets ({e})"))?;
    if elements.is_empty() {
        return Err(format!("tle: {path}: no element sets"));
    }
    if elements.len() > 20_000 {
        return Err(format!("tle: {path}: {} sets; at most 20 000", elements.len()));
    }
    if let Some(e) = elements.iter().find(|e| sgp4::Constants::from_elements(e).is_err()) {
        return Err(format!("tle: {path}: NORAD {}: SGP4 cannot start from these elements", e.norad_id));
    }
    let newest = elements.iter().map(|e| e.datetime).max().expect("at least one set");
    let epoch = match k.0.get("epoch") {
        None => newest,
        Some(toml::Value::String(s)) => {
            NaiveDateTime::parse_from_str(s.trim_end_matches('Z'), "%Y-%m-%dT%H:%M:%S").map_err(|_| format!("epoch: expected a UTC time like \"2024-05-01T12:00:00Z\", got {s:?}"))?
        }
        Some(_) => return Err("epoch: expected a UTC time in quotes, like \"2024-05-01T12:00:00Z\"".into()),
    };
    let days = elements.iter().map(|e| (epoch - e.datetime).num_seconds().abs() as f64 / 86_400.0).fold(0.0, f64::max);
    if days > TLE_MAX_DAYS {
        return Err(format!("epoch: {days:.0} days from a set's own epoch; at most {TLE_MAX_DAYS} (SGP4 drifts about a kilometre a day): take sets from near the flight"));
    }
    Ok(super::tech::TleSet { path: path.to_string(), elements, epoch })
}

fn parse_track(k: &Keys) -> Result<Track, String> {
    if let Some(w) = k.list("waypoints")? {
        if k.0.contains_key("from") || k.0.contains_key("to") {
            return Err("waypoints: give either waypoints or from and to".into());
        }
        let pts = w.iter().enumerate().map(|(i, v)| k.point("waypoints", v, i, true)).collect::<Result<Vec<_>, _>>()?;
        if pts.len() < 2 || pts[0].1 != 0.0 || pts.windows(2).any(|p| p[1].1 <= p[0].1) {
            return Err("waypoints: expected at least two, the first at \"0 s\", times increasing".into());
        }
        return Ok(Track::through(&pts));
    }
    let airport = |key: &str| -> Result<(String, Point), String> {
        let code = match k.0.get(key) {
            Some(toml::Value::String(s)) => s.to_uppercase(),
            _ => return Err(format!("{key}: expected an airport code (one of {}), or give waypoints", airports::codes())),
        };
        let (lat, lon) = airports::find(&code).ok_or_else(|| format!("{key}: unknown airport {code:?}; known: {}", airports::codes()))?;
        Ok((code, Point::new(lat, lon, 0.0)))
    };
    let ((a, pa), (b, pb)) = (airport("from")?, airport("to")?);
    let cruise = k.num("cruise_kmh", 900.0, 100.0, 3000.0)?;
    let alt = k.num("altitude_m", 11_000.0, 100.0, 20_000.0)?;
    let taxi = k.secs("taxi", "10 min", 0.0, 7200.0)?;
    Ok(Track::between(format!("{a}→{b}"), pa, pb, cruise, alt, taxi))
}

/// The technology, its default step and its default `extra`.
fn parse_tech(k: &Keys, name: TechName, load: crate::profile::Loader<'_>) -> Result<(Tech, &'static str, &'static str), String> {
    Ok(match name {
        TechName::Geo => {
            let satellites = match k.list("satellites")? {
                None => vec![-55.0, 62.6, 179.6],
                Some(a) if !a.is_empty() && a.len() <= 64 => a
                    .iter()
                    .map(|v| v.as_float().or(v.as_integer().map(|i| i as f64)).filter(|l| (-180.0..=180.0).contains(l)))
                    .collect::<Option<Vec<f64>>>()
                    .ok_or("satellites: expected longitudes in degrees, -180 to 180")?,
                Some(_) => return Err("satellites: expected 1 to 64 longitudes".into()),
            };
            let min_elevation = k.num("min_elevation", 5.0, 0.0, 80.0)?;
            let g = Geo {
                satellites,
                min_elevation,
                hysteresis: k.num("hysteresis", 5.0, 0.0, 90.0)?,
                gateway_elevation: k.num("gateway_elevation", 30.0, 0.0, 90.0)?,
                beam_km: k.num("beam_km", 600.0, 0.0, 40_000.0)?,
                beam_outage_s: k.secs("beam_outage", "1 s", 0.0, 600.0)?,
                satellite_outage_s: k.secs("satellite_outage", "30 s", 0.0, 3600.0)?,
                low_loss: k.prob("low_loss")?,
                low_from_deg: k.num("low_from", 20.0, min_elevation, 90.0)?,
            };
            (Tech::Geo(g), "10 s", "20 ms")
        }
        TechName::Leo => {
            let (planes, per_plane) = (k.num("planes", 72.0, 1.0, 1000.0)?, k.num("per_plane", 22.0, 1.0, 1000.0)?);
            if planes * per_plane > 10_000.0 {
                return Err("planes × per_plane: at most 10 000 satellites".into());
            }
            let tle = match k.0.get("tle") {
                None => None,
                Some(toml::Value::String(path)) => {
                    if let Some(bad) = SHELL_KEYS.iter().find(|x| k.0.contains_key(**x)) {
                        return Err(format!("{bad}: the satellites come from `tle`; give one or the other"));
                    }
                    Some(parse_tle(path, k, load)?)
                }
                Some(_) => return Err("tle: expected a file of two-line element sets in quotes, like \"starlink.tle\"".into()),
            };
            if tle.is_none() && k.0.contains_key("epoch") {
                return Err("epoch: only with `tle` (the shell has no date)".into());
            }
            let isl = match k.0.get("isl") {
                None => false,
                Some(toml::Value::Boolean(b)) => *b,
                Some(_) => return Err("isl: expected true or false".into()),
            };
            let l = Leo {
                tle,
                isl,
                inclination: k.num("inclination", 53.0, 0.0, 180.0)?,
                altitude_km: k.num("altitude_km", 550.0, 200.0, 2000.0)?,
                planes: planes as u32,
                per_plane: per_plane as u32,
                phasing: k.num("phasing", 1.0, 0.0, planes - 1.0)? as u32,
                min_elevation: k.num("min_elevation", 25.0, 0.0, 80.0)?,
                slot_s: k.secs("slot", "15 s", 1.0, 3600.0)?,
                slot_from_s: k.secs("slot_from", "12 s", 0.0, 3600.0)?,
                glitch_s: k.secs("glitch", "50 ms", 0.0, 10.0)?,
            };
            (Tech::Leo(l), "1 s", "6 ms")
        }
        TechName::Ldacs => {
            let l = Ldacs {
                spacing_km: k.num("spacing_km", 350.0, 10.0, 5000.0)?,
                first_station_km: k.num("first_station_km", 0.0, 0.0, 40_000.0)?,
                airport_km: k.num("airport_km", 600.0, 0.0, 20_000.0)?,
                range_km: k.num("range_km", 225.0, 1.0, 1000.0)?,
                hysteresis_km: k.num("hysteresis_km", 0.0, 0.0, 1000.0)?,
            };
            (Tech::Ldacs(l), "1 s", "10 ms")
        }
        TechName::Atg => {
            let range_km = k.num("range_km", 300.0, 1.0, 1000.0)?;
            let rate_bps = match k.0.get("edge_rate") {
                None => None,
                Some(toml::Value::String(s)) => Some(units::parse_rate(s).map_err(|m| format!("edge_rate: expected {m}"))?.bits_per_sec),
                Some(_) => return Err(format!("edge_rate: expected {} in quotes", units::RATE_HELP)),
            };
            let edge = Edge { loss: k.prob("edge_loss")?, delay_ms: k.secs("edge_delay", "0 s", 0.0, 60.0)? * 1e3, from_km: k.num("edge_from_km", 0.0, 0.0, range_km)?, rate_bps };
            let a = Atg { range_km, hysteresis_km: k.num("hysteresis_km", 20.0, 0.0, 1000.0)?, handover_outage_s: k.secs("handover_outage", "1 s", 0.0, 600.0)?, edge };
            (Tech::Atg(a), "10 s", "25 ms")
        }
    })
}
