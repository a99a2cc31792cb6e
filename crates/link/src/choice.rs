//! Closed sets of values, each one enum parsed once at the edge:
//! [`choice_core!`] gives an enum one list of names used by serde (profile
//! and experiment files, stored results), `FromStr` and `Display`.
//! `aerolink_work::choice!` adds clap's `ValueEnum` for flags.

/// A value outside a closed set, with what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{value:?}: expected one of {allowed}")]
pub struct UnknownChoice {
    pub value: String,
    /// The names allowed, comma-separated.
    pub allowed: String,
}

/// Defines a closed set (without clap; `aerolink_work::choice!` adds it):
///
/// ```
/// aerolink_link::choice_core! {
///     /// Where a thing runs.
///     pub enum Side { Air = "air", Ground = "ground" }
/// }
/// assert_eq!("air".parse::<Side>().unwrap(), Side::Air);
/// assert_eq!(Side::Ground.to_string(), "ground");
/// assert!("sea".parse::<Side>().unwrap_err().to_string().contains("expected one of air, ground"));
/// ```
#[macro_export]
macro_rules! choice_core {
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
    };
}
