//! The built-in profiles, embedded in the binary from `profiles/*.toml`.

pub const BUILTIN: &[(&str, &str)] = &[
    ("cabin-wifi", include_str!("../../../profiles/cabin-wifi.toml")),
    ("da2gc-2xrate", include_str!("../../../profiles/da2gc-2xrate.toml")),
    ("da2gc-halfloss", include_str!("../../../profiles/da2gc-halfloss.toml")),
    ("da2gc-halfrtt", include_str!("../../../profiles/da2gc-halfrtt.toml")),
    ("da2gc", include_str!("../../../profiles/da2gc.toml")),
    ("da2gc-flight", include_str!("../../../profiles/da2gc-flight.toml")),
    ("geo-520", include_str!("../../../profiles/geo-520.toml")),
    ("geo-600", include_str!("../../../profiles/geo-600.toml")),
    ("geo-720-loss", include_str!("../../../profiles/geo-720-loss.toml")),
    ("geo-720", include_str!("../../../profiles/geo-720.toml")),
    ("geo-bod-mixed", include_str!("../../../profiles/geo-bod-mixed.toml")),
    ("geo-cra", include_str!("../../../profiles/geo-cra.toml")),
    ("geo-rbdc", include_str!("../../../profiles/geo-rbdc.toml")),
    ("geo-vbdc", include_str!("../../../profiles/geo-vbdc.toml")),
    ("geo-broadband", include_str!("../../../profiles/geo-broadband.toml")),
    ("iridium-1ch", include_str!("../../../profiles/iridium-1ch.toml")),
    ("iridium-2ch", include_str!("../../../profiles/iridium-2ch.toml")),
    ("iridium-3ch-sat2sat", include_str!("../../../profiles/iridium-3ch-sat2sat.toml")),
    ("iridium-3ch", include_str!("../../../profiles/iridium-3ch.toml")),
    ("iridium-3ch-b301", include_str!("../../../profiles/iridium-3ch-b301.toml")),
    ("iridium-3ch-b301-2pots", include_str!("../../../profiles/iridium-3ch-b301-2pots.toml")),
    ("iridium", include_str!("../../../profiles/iridium.toml")),
    ("ldacs1-158k", include_str!("../../../profiles/ldacs1-158k.toml")),
    ("ldacs1-31k5", include_str!("../../../profiles/ldacs1-31k5.toml")),
    ("mss-2xrate", include_str!("../../../profiles/mss-2xrate.toml")),
    ("mss-halfloss", include_str!("../../../profiles/mss-halfloss.toml")),
    ("mss-halfrtt", include_str!("../../../profiles/mss-halfrtt.toml")),
    ("mss", include_str!("../../../profiles/mss.toml")),
    ("mss-flight", include_str!("../../../profiles/mss-flight.toml")),
    ("satcom-100", include_str!("../../../profiles/satcom-100.toml")),
    ("satcom-600", include_str!("../../../profiles/satcom-600.toml")),
    ("starlink-aircraft", include_str!("../../../profiles/starlink-aircraft.toml")),
    ("starlink", include_str!("../../../profiles/starlink.toml")),
    ("terrestrial", include_str!("../../../profiles/terrestrial.toml")),
];
/// The text of a built-in profile.
pub fn get(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Names in reading order: each base profile before its variants.
pub fn names() -> impl Iterator<Item = &'static str> {
    let mut v: Vec<&'static str> = BUILTIN.iter().map(|(n, _)| *n).collect();
    v.sort_by_key(|n| n.replace('-', "~"));
    v.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    #[test]
    fn every_builtin_parses_and_names_its_source() {
        for (name, text) in BUILTIN {
            let p = Profile::parse(text, name, &[], &mut |_| Err("no files".into())).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&p.name, name);
            assert!(!p.source.is_empty(), "{name} has no source");
            assert!(!p.split.is_empty(), "{name} does not say how it was split");
        }
    }
}
