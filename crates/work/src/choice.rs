//! Closed sets of values — protocols, transports, directions, congestion
//! controls, presets — each one enum, parsed once at the edge. [`choice!`]
//! gives an enum one list of names used by clap (flags), serde (experiment
//! files, stored results), `FromStr` and `Display`, so a flag, a file key
//! and a subprocess's command line can never disagree about a spelling.

/// Defines a closed set: [`aerolink_link::choice_core!`]'s enum (serde,
/// `FromStr`, `Display`) with clap's `ValueEnum` for flags:
///
/// ```
/// aerolink_work::choice! {
///     /// Where a thing runs.
///     pub enum Side { Air = "air", Ground = "ground" }
/// }
/// assert_eq!("air".parse::<Side>().unwrap(), Side::Air);
/// assert_eq!(Side::Ground.to_string(), "ground");
/// ```
#[macro_export]
macro_rules! choice {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $var:ident = $s:literal),+ $(,)? }) => {
        $crate::choice::__core! { $(#[$m])* pub enum $name { $($(#[$vm])* $var = $s),+ } }
        impl ::clap::ValueEnum for $name {
            fn value_variants<'a>() -> &'a [Self] {
                Self::ALL
            }
            fn to_possible_value(&self) -> Option<::clap::builder::PossibleValue> {
                Some(::clap::builder::PossibleValue::new(self.as_str()))
            }
        }
    };
}

pub use aerolink_link::choice::UnknownChoice;
#[doc(hidden)]
pub use aerolink_link::choice_core as __core;

crate::choice! {
    /// Kernel TCP or QUIC (quinn).
    pub enum Transport { Tcp = "tcp", Quic = "quic" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_every_parser() {
        for t in Transport::ALL {
            assert_eq!(t.as_str().parse::<Transport>(), Ok(*t));
            let json = serde_json::to_string(t).unwrap();
            assert_eq!(json, format!("\"{t}\""));
            assert_eq!(serde_json::from_str::<Transport>(&json).unwrap(), *t);
            let pv = <Transport as clap::ValueEnum>::to_possible_value(t).unwrap();
            assert_eq!(pv.get_name(), t.as_str());
        }
        let e = "udp".parse::<Transport>().unwrap_err();
        assert_eq!(e.to_string(), "\"udp\": expected one of tcp, quic");
    }
}
