//! Closed sets of values — protocols, transports, directions, congestion
//! controls, presets — each one enum, parsed once at the edge. [`choice!`]
//! gives an enum one list of names used by clap (flags), serde (experiment
//! files, stored results), `FromStr` and `Display`, so a flag, a file key
//! and a subprocess's command line can never disagree about a spelling.

/// A value outside a closed set, with what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{value:?}: expected one of {allowed}")]
pub struct UnknownChoice {
    pub value: String,
    /// The names allowed, comma-separated.
    pub allowed: String,
}

/// Defines a closed set:
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
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* $var),+ }

        impl $name {
            /// Every value, in the order they are listed.
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            /// The value's name, as flags, files and results spell it.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$var => $s),+ }
            }
            /// The names allowed, comma-separated, for messages.
            pub fn allowed() -> String {
                Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
            }
        }
        impl ::std::str::FromStr for $name {
            type Err = $crate::choice::UnknownChoice;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s { $($s => Ok($name::$var),)+ _ => Err($crate::choice::UnknownChoice { value: s.to_string(), allowed: Self::allowed() }) }
            }
        }
        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.pad(self.as_str())
            }
        }
        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(d)?;
                s.parse().map_err(::serde::de::Error::custom)
            }
        }
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
