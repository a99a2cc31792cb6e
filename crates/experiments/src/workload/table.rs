//! Reading a `[[workload]]` table of an experiment file: a key given a
//! value or a list of values sweeps them, each parsed at the edge, and
//! every error is the key and what it allows ([`KeyErr`]).

/// A key and what was wrong with its value.
pub type KeyErr = (String, String);

/// A text value or a list of them.
pub fn strings(v: &toml::Value) -> Option<Vec<String>> {
    match v {
        toml::Value::String(s) => Some(vec![s.clone()]),
        toml::Value::Array(a) => a.iter().map(|x| x.as_str().map(str::to_string)).collect(),
        _ => None,
    }
}

/// A value, or each value of a list.
pub fn values(v: &toml::Value) -> Vec<toml::Value> {
    match v {
        toml::Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    }
}

/// Every value of a key given as text or a list of texts, each parsed from
/// a closed set (the first of `keys` present; `default` when none is).
pub fn picks<T: std::str::FromStr<Err = aerolink_work::UnknownChoice>>(t: &toml::Table, keys: &[&str], default: Vec<T>) -> Result<Vec<T>, KeyErr> {
    for k in keys {
        if t.contains_key(*k) {
            return list_of(t, &[k])?.iter().map(|s| s.parse().map_err(|e: aerolink_work::UnknownChoice| (k.to_string(), e.to_string()))).collect();
        }
    }
    Ok(default)
}

/// The texts of the first of `keys` present.
pub fn list_of(t: &toml::Table, keys: &[&str]) -> Result<Vec<String>, KeyErr> {
    for k in keys {
        if let Some(v) = t.get(*k) {
            return strings(v).ok_or_else(|| (k.to_string(), "expected text in quotes or a list of them".into()));
        }
    }
    Err((keys[0].to_string(), "missing".into()))
}

/// The whole numbers of the first of `keys` present, `d` when none is.
pub fn ints(t: &toml::Table, keys: &[&str], d: i64) -> Result<Vec<i64>, KeyErr> {
    for k in keys {
        if let Some(v) = t.get(*k) {
            return values(v).iter().map(|x| x.as_integer().ok_or_else(|| (k.to_string(), "expected whole numbers".to_string()))).collect();
        }
    }
    Ok(vec![d])
}

/// A positive whole number, `d` when absent.
pub fn positive(t: &toml::Table, k: &str, d: i64) -> Result<i64, KeyErr> {
    match t.get(k) {
        None => Ok(d),
        Some(toml::Value::Integer(i)) if *i > 0 => Ok(*i),
        _ => Err((k.to_string(), "expected a positive whole number".to_string())),
    }
}

/// A duration, `d` when absent.
pub fn duration(t: &toml::Table, k: &str, d: aerolink_link::Duration) -> Result<aerolink_link::Duration, KeyErr> {
    match t.get(k) {
        None => Ok(d),
        Some(v) => aerolink_link::units::parse_duration(v.as_str().unwrap_or("")).map_err(|m| (k.to_string(), format!("expected {m}"))),
    }
}

/// A rate as an experiment file writes it ("1024 bit/s"), bit/s; the error
/// names `key`.
pub fn rate_bps(text: &str, key: &str) -> Result<f64, KeyErr> {
    aerolink_link::units::parse_rate(text).map(|r| r.bits_per_sec).map_err(|m| (key.to_string(), format!("{text:?}: expected {m}")))
}

/// A whole number as a `u32`, clamped.
pub fn u32_of(i: i64) -> u32 {
    i.clamp(0, u32::MAX as i64) as u32
}
