//! A small table of airports (IATA code, latitude, longitude in degrees,
//! to about 0.01°: public facts), for routes given as `from`/`to`, and as
//! stand-in ground sites (see `tech`).

/// IATA code, latitude, longitude.
pub const AIRPORTS: &[(&str, f64, f64)] = &[
    ("AKL", -37.0082, 174.7850),
    ("AMS", 52.3105, 4.7683),
    ("ANC", 61.1743, -149.9962),
    ("ARN", 59.6498, 17.9238),
    ("ATL", 33.6407, -84.4277),
    ("BOG", 4.7016, -74.1469),
    ("BOM", 19.0896, 72.8656),
    ("BOS", 42.3656, -71.0096),
    ("BRE", 53.0475, 8.7867),
    ("CAI", 30.1219, 31.4056),
    ("CDG", 49.0097, 2.5479),
    ("CPH", 55.6180, 12.6508),
    ("CPT", -33.9715, 18.6021),
    ("DEL", 28.5562, 77.1000),
    ("DFW", 32.8998, -97.0403),
    ("DOH", 25.2731, 51.6081),
    ("DUB", 53.4213, -6.2701),
    ("DXB", 25.2532, 55.3657),
    ("EZE", -34.8222, -58.5358),
    ("FCO", 41.8003, 12.2389),
    ("FRA", 50.0379, 8.5622),
    ("GRU", -23.4356, -46.4731),
    ("HEL", 60.3172, 24.9633),
    ("HKG", 22.3080, 113.9185),
    ("HND", 35.5494, 139.7798),
    ("HNL", 21.3245, -157.9251),
    ("IAD", 38.9531, -77.4565),
    ("ICN", 37.4602, 126.4407),
    ("IST", 41.2753, 28.7519),
    ("JFK", 40.6413, -73.7781),
    ("JNB", -26.1392, 28.2460),
    ("KEF", 63.9850, -22.6056),
    ("LAX", 33.9416, -118.4085),
    ("LHR", 51.4700, -0.4543),
    ("LIS", 38.7742, -9.1342),
    ("MAD", 40.4983, -3.5676),
    ("MEX", 19.4361, -99.0719),
    ("MIA", 25.7959, -80.2870),
    ("MUC", 48.3537, 11.7750),
    ("NBO", -1.3192, 36.9278),
    ("NRT", 35.7720, 140.3929),
    ("ORD", 41.9742, -87.9073),
    ("PEK", 40.0799, 116.6031),
    ("PER", -31.9385, 115.9672),
    ("SEA", 47.4502, -122.3088),
    ("SFO", 37.6213, -122.3790),
    ("SIN", 1.3644, 103.9915),
    ("SYD", -33.9399, 151.1753),
    ("YVR", 49.1967, -123.1815),
    ("YYZ", 43.6777, -79.6248),
    ("ZRH", 47.4582, 8.5555),
];

/// The airport with this IATA code (any case).
pub fn find(code: &str) -> Option<(f64, f64)> {
    AIRPORTS.iter().find(|(c, _, _)| c.eq_ignore_ascii_case(code)).map(|&(_, lat, lon)| (lat, lon))
}

/// The codes, comma-separated (for error messages).
pub fn codes() -> String {
    AIRPORTS.iter().map(|a| a.0).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_is_sorted_unique_and_on_the_globe() {
        let t = super::AIRPORTS;
        assert!(t.windows(2).all(|w| w[0].0 < w[1].0), "sorted by code, no duplicates");
        assert!(t.iter().all(|&(c, la, lo)| c.len() == 3 && la.abs() <= 90.0 && lo.abs() <= 180.0));
        assert_eq!(super::find("lhr"), Some((51.4700, -0.4543)));
        assert_eq!(super::find("XXX"), None);
    }
}
