//! Reading an experiment file's tables with serde: each table is a struct
//! that refuses unknown keys, read by [`de`] so an error names the key path
//! and what the key allows ([`KeyErr`]). A key given a value or a list of
//! values sweeps them ([`Many`]); values of a closed set, sizes, rates and
//! durations are parsed at the edge by the wrappers below, with our units'
//! messages.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};

/// A key and what was wrong with its value.
pub type KeyErr = (String, String);

/// `t` as a `T` (whose fields are the keys it allows); an error is the key
/// path (`protocols`, `of.profile`) and what is wrong there.
pub fn de<T: DeserializeOwned>(t: toml::Table) -> Result<T, KeyErr> {
    serde_path_to_error::deserialize(toml::Value::Table(t)).map_err(|e| {
        let path = key_path(e.path());
        let message = e.inner().message().to_string();
        // serde names a missing or repeated key in its message, not in the
        // path.
        for (prefix, what) in [("missing field `", "missing"), ("duplicate field `", "given twice (a key and its other name count as one)")] {
            if let Some(field) = message.strip_prefix(prefix).and_then(|m| m.split('`').next()) {
                let key = if path.is_empty() { field.to_string() } else { format!("{path}.{field}") };
                return (key, what.to_string());
            }
        }
        (path, friendlier(&message))
    })
}

/// A path as an experiment file's errors write it: `cases[1].of.profile`,
/// counting list items from 1.
fn key_path(p: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in p.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{}]", index + 1)),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    out
}

/// serde's words for a wrong key or type, in ours: "unknown key; allowed:
/// a, b" and "expected …, not …".
fn friendlier(m: &str) -> String {
    if let Some(rest) = m.strip_prefix("unknown field `") {
        let allowed = rest.split_once("expected ").map(|(_, a)| a.replace('`', "")).unwrap_or_default();
        let allowed = allowed.trim_start_matches("one of ").replace(" or ", ", ");
        return format!("unknown key; allowed: {allowed}");
    }
    // "invalid type: integer `3`, expected a string"
    if let Some((got, want)) = m.strip_prefix("invalid type: ").and_then(|r| r.split_once(", expected ")) {
        return format!("{}: expected {want}", got.replace('`', ""));
    }
    if let Some((value, allowed)) = m.strip_prefix("unknown variant `").and_then(|r| r.split_once("`, expected ")) {
        let allowed = allowed.trim_start_matches("one of ").replace('`', "").replace(" or ", ", ");
        return format!("{value:?}: expected one of {allowed}");
    }
    m.to_string()
}

/// The keys a table type allows, in its declared order (aliases too), as
/// serde hands them to a deserializer.
pub fn fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Fields(Option<&'static [&'static str]>);
    impl<'de> Deserializer<'de> for &mut Fields {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(Self::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(self, _: &'static str, fields: &'static [&'static str], _: V) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(Self::Error::custom("fields read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut f = Fields(None);
    let _ = T::deserialize(&mut f);
    f.0.unwrap_or(&[])
}

/// One value or a list of them: a list sweeps.
#[derive(Clone, Debug, PartialEq)]
pub struct Many<T>(pub Vec<T>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Many<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = match toml::Value::deserialize(d)? {
            toml::Value::Array(a) => a,
            one => vec![one],
        };
        items.into_iter().map(|x| T::deserialize(x).map_err(|e| D::Error::custom(e.message()))).collect::<Result<_, _>>().map(Many)
    }
}

impl<T: Clone> Many<T> {
    /// The values, or `default` when the key was left out.
    pub fn or(m: Option<Many<T>>, default: Vec<T>) -> Vec<T> {
        m.map(|m| m.0).unwrap_or(default)
    }
}

/// A value of a closed set (an enum parsed from its name); the error lists
/// the set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice<T>(pub T);

impl<'de, T: std::str::FromStr<Err: std::fmt::Display>> Deserialize<'de> for Choice<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Text::deserialize(d)?.0;
        s.parse().map(Choice).map_err(D::Error::custom)
    }
}

/// Text in quotes, with our message for anything else.
#[derive(Clone, Debug, PartialEq)]
pub struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) => Ok(Text(s)),
            other => Err(D::Error::custom(format!("{other}: expected text in quotes"))),
        }
    }
}

/// A size in bytes ("1MB").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Size(pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Text::deserialize(d)?.0;
        aerolink_work::page::parse_bytes(&s).map(Size).ok_or_else(|| D::Error::custom(format!("{s:?}: expected a size like 1MB")))
    }
}

/// A rate as an experiment file writes it ("1024 bit/s"), bit/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate(pub f64);

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Text::deserialize(d)?.0;
        aerolink_link::units::parse_rate(&s).map(|r| Rate(r.bits_per_sec)).map_err(|m| D::Error::custom(format!("{s:?}: expected {m}")))
    }
}

/// A duration ("300s", "20ms").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dur(pub aerolink_link::Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) => aerolink_link::units::parse_duration(&s).map(Dur).map_err(|m| D::Error::custom(format!("expected {m}"))),
            other => Err(D::Error::custom(format!("{other}: expected a duration like \"300s\""))),
        }
    }
}

/// A whole number from `LO` to `HI`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Whole<const LO: i64, const HI: i64>(pub i64);

impl<'de, const LO: i64, const HI: i64> Deserialize<'de> for Whole<LO, HI> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match toml::Value::deserialize(d)? {
            toml::Value::Integer(i) if (LO..=HI).contains(&i) => Ok(Whole(i)),
            _ if HI == i64::MAX && LO == 1 => Err(D::Error::custom("expected a positive whole number")),
            _ => Err(D::Error::custom(format!("expected a whole number from {LO} to {HI}"))),
        }
    }
}

/// A positive whole number.
pub type Positive = Whole<1, { i64::MAX }>;

impl<const LO: i64, const HI: i64> Whole<LO, HI> {
    pub fn get<T: TryFrom<i64>>(self) -> T {
        T::try_from(self.0).ok().expect("in range by construction")
    }
}

/// `true` or `false`, with our message for anything else.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match toml::Value::deserialize(d)? {
            toml::Value::Boolean(b) => Ok(Flag(b)),
            _ => Err(D::Error::custom("expected true or false")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct T {
        #[serde(alias = "size")]
        sizes: Many<Size>,
        count: Option<Positive>,
        inner: Option<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        profile: Option<Text>,
    }

    fn read(text: &str) -> Result<T, KeyErr> {
        de(text.parse::<toml::Table>().expect("toml"))
    }

    #[test]
    fn one_value_or_many_aliases_and_errors_name_the_key() {
        assert_eq!(read("size = \"1KB\"").unwrap().sizes, Many(vec![Size(1000)]));
        assert_eq!(read("sizes = [\"1KB\", \"2KB\"]").unwrap().sizes.0.len(), 2);
        assert_eq!(read("sizes = \"1KB\"\ncount = 3").unwrap().count, Some(Whole(3)));
        assert_eq!(read("sizes = \"1KB\"\ninner = { profile = \"mss\" }").unwrap().inner.and_then(|i| i.profile), Some(Text("mss".into())));
        assert_eq!(read("sizes = [\"1KB\", \"lots\"]").unwrap_err(), ("sizes".into(), "\"lots\": expected a size like 1MB".into()));
        assert_eq!(read("sizes = \"1KB\"\ncount = 0").unwrap_err(), ("count".into(), "expected a positive whole number".into()));
        assert_eq!(read("count = 3").unwrap_err(), ("sizes".into(), "missing".into()));
        assert_eq!(read("sizes = \"1KB\"\ncolour = 1").unwrap_err(), ("colour".into(), "unknown key; allowed: size, sizes, count, inner".into()));
        let (k, m) = read("sizes = \"1KB\"\ninner = { profile = 3 }").unwrap_err();
        assert_eq!((k.as_str(), m.as_str()), ("inner.profile", "3: expected text in quotes"));
        assert_eq!(read("sizes = \"1KB\"\ninner = { series = \"h2\" }").unwrap_err().0, "inner.series");
        assert_eq!(fields::<T>(), ["size", "sizes", "count", "inner"]);
    }
}
