//! Human units: parsing `"1.89 Mbit/s"`, `"380.5 ms"`, `"3.3%"`, `"64 KB"`.
//!
//! Profiles and command-line flags are written by people; these parsers are
//! the one place where text becomes typed values. Each returns a short
//! description of what is allowed, which the caller wraps with the file and
//! key it came from.

use crate::time::Duration;

/// A link rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    pub bits_per_sec: f64,
}

impl Rate {
    pub fn from_bps(bps: f64) -> Self {
        Rate { bits_per_sec: bps }
    }
    pub fn mbps(self) -> f64 {
        self.bits_per_sec / 1e6
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.bits_per_sec;
        if b >= 1e9 {
            write!(f, "{} Gbit/s", fmt_num(b / 1e9))
        } else if b >= 1e6 {
            write!(f, "{} Mbit/s", fmt_num(b / 1e6))
        } else if b >= 1e3 {
            write!(f, "{} kbit/s", fmt_num(b / 1e3))
        } else {
            write!(f, "{} bit/s", fmt_num(b))
        }
    }
}

pub(crate) fn fmt_num(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Splits `"1.89 Mbit/s"` into `(1.89, "mbit/s")`, lower-casing the unit.
fn split_number(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s.char_indices().find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '-' || *c == '+' || *c == 'e')).map(|(i, _)| i).unwrap_or(s.len());
    // "1e3" is a number but "1 ms" must not eat the 'm'; an 'e' is only part
    // of the number when a digit follows it.
    let (mut num, mut rest) = s.split_at(end);
    if num.ends_with('e') {
        num = &num[..num.len() - 1];
        rest = &s[num.len()..];
    }
    let value: f64 = num.parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    Some((value, rest.trim().to_ascii_lowercase()))
}

pub const RATE_HELP: &str = "a rate like \"1.89 Mbit/s\", \"468 kbit/s\", \"2.4kbps\", \"2mbit\" (tc) or \"10 Gbit/s\"";

/// Parses a rate: a positive number with a unit in bit/s, kbit/s, Mbit/s,
/// Gbit/s (also `bps`, `kbps`, `Mbps`, `Gbps`, and `B/s` forms in bytes),
/// or as tc spells bits: `bit`, `kbit`, `mbit`, `gbit` (SI) and `kibit`,
/// `mibit`, `gibit` (powers of 1024), shown back as bit/s.
///
/// tc reads `kbps` as kilobytes per second; here, as everywhere outside
/// tc, it is kilobits (`2.4 kbps` is one Iridium channel). Write tc's
/// `kbit` or our `KB/s` to be unambiguous.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let (v, unit) = split_number(s).ok_or_else(|| RATE_HELP.to_string())?;
    let unit = unit.replace(' ', "");
    let mult = match unit.as_str() {
        "bit/s" | "bps" | "b/s" => 1.0,
        "kbit/s" | "kbps" | "kb/s" => 1e3,
        "mbit/s" | "mbps" | "mb/s" => 1e6,
        "gbit/s" | "gbps" | "gb/s" => 1e9,
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        "kibit" => 1024.0,
        "mibit" => 1048576.0,
        "gibit" => 1073741824.0,
        _ => return Err(RATE_HELP.to_string()),
    };
    // Byte units are spelt with a capital B; the lower-cased match above
    // cannot tell "MB/s" from "Mb/s", so look at the original.
    let bytes = s.contains("B/s") && !s.to_ascii_lowercase().contains("bit");
    let bps = v * mult * if bytes { 8.0 } else { 1.0 };
    if bps <= 0.0 {
        return Err(format!("{RATE_HELP}, greater than zero"));
    }
    Ok(Rate::from_bps(bps))
}

pub const DURATION_HELP: &str = "a duration like \"380.5 ms\", \"2 s\", \"250 us\" or \"3 min\"";

/// The longest duration a profile or flag may give: 100 days.
pub const MAX_DURATION_S: f64 = 100.0 * 86_400.0;

/// Parses a non-negative duration with a unit: ns, us (µs), ms, s, min, h
/// (at most [`MAX_DURATION_S`]).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (v, unit) = split_number(s).ok_or_else(|| DURATION_HELP.to_string())?;
    let mult = match unit.as_str() {
        // tc's spellings too: usec, msec, secs.
        "ns" | "nsec" => 1e-9,
        "us" | "µs" | "usec" => 1e-6,
        "ms" | "msec" => 1e-3,
        "s" | "sec" | "secs" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(DURATION_HELP.to_string()),
    };
    if v < 0.0 {
        return Err(format!("{DURATION_HELP}, not negative"));
    }
    // Longer than any run: a typo, and arithmetic on it would overflow.
    if !(v * mult <= MAX_DURATION_S) {
        return Err(format!("{DURATION_HELP}, at most 100 days"));
    }
    Ok(Duration::from_secs_f64(v * mult))
}

pub const PROBABILITY_HELP: &str = "a probability like \"3.3%\" or 0.033, between 0 and 100%";

/// Parses a probability: `"3.3%"` or a plain fraction `"0.033"`.
pub fn parse_probability(s: &str) -> Result<f64, String> {
    let (v, unit) = split_number(s).ok_or_else(|| PROBABILITY_HELP.to_string())?;
    let p = match unit.as_str() {
        "%" => v / 100.0,
        "" => v,
        _ => return Err(PROBABILITY_HELP.to_string()),
    };
    if !(0.0..=1.0).contains(&p) {
        return Err(PROBABILITY_HELP.to_string());
    }
    Ok(p)
}

/// A size in bytes or in packets (queues may be limited either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    Bytes(u64),
    Packets(u64),
}

pub const SIZE_HELP: &str = "a size like \"64 KB\", \"1 MiB\", \"1500 B\" or \"100 packets\"";

/// Parses a size: B, KB (1000), KiB (1024), MB, MiB, or packets.
pub fn parse_size(s: &str) -> Result<Size, String> {
    let (v, _) = split_number(s).ok_or_else(|| SIZE_HELP.to_string())?;
    let (_, rest) = s.trim().split_at(s.trim().find(|c: char| c.is_alphabetic()).unwrap_or(s.trim().len()));
    let unit = rest.trim();
    if v < 0.0 {
        return Err(SIZE_HELP.to_string());
    }
    let bytes = |m: f64| Ok(Size::Bytes((v * m).round() as u64));
    match unit {
        "" | "B" | "bytes" | "byte" => bytes(1.0),
        "KB" | "kB" => bytes(1e3),
        "KiB" => bytes(1024.0),
        "MB" => bytes(1e6),
        "MiB" => bytes(1048576.0),
        "GB" => bytes(1e9),
        "packets" | "packet" | "pkts" | "p" => Ok(Size::Packets(v.round() as u64)),
        _ => Err(SIZE_HELP.to_string()),
    }
}

#[cfg(test)]
mod tests {
    /// Found by the fuzzer (fuzz/regressions/profile/dama-huge-rtt): an RTT
    /// of 6.8e60 ms saturated and overflowed the DAMA request cycle.
    #[test]
    fn durations_past_100_days_are_refused() {
        assert!(parse_duration("6777777777777777777777777777777777700 ms").unwrap_err().contains("100 days"));
        assert!(parse_duration("100 h").is_ok());
        assert!(parse_duration("inf s").is_err());
    }

    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("1.89 Mbit/s").unwrap().bits_per_sec, 1.89e6);
        assert_eq!(parse_rate("468kbit/s").unwrap().bits_per_sec, 468e3);
        assert_eq!(parse_rate("2.4 kbps").unwrap().bits_per_sec, 2400.0);
        // tc's forms: 2mbit, 100kbit, 1gibit.
        assert_eq!(parse_rate("2mbit").unwrap().bits_per_sec, 2e6);
        assert_eq!(parse_rate("100kbit").unwrap().bits_per_sec, 1e5);
        assert_eq!(parse_rate("1gibit").unwrap().bits_per_sec, 1073741824.0);
        assert_eq!(parse_rate("2mbit").unwrap().to_string(), "2 Mbit/s");
        assert_eq!(parse_rate("1 MB/s").unwrap().bits_per_sec, 8e6);
        assert_eq!(parse_rate("2Mbit/s").unwrap().bits_per_sec, 2e6);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("0 Mbit/s").is_err());
        assert!(parse_rate("3 furlongs").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("380.5 ms").unwrap(), Duration::from_micros(380_500));
        assert_eq!(parse_duration("100msec").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("250usec").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("3 min").unwrap(), Duration::from_secs(180));
        assert_eq!(parse_duration("250 us").unwrap(), Duration::from_micros(250));
        assert!(parse_duration("-1 ms").is_err());
        assert!(parse_duration("10").is_err());
    }

    #[test]
    fn probabilities_and_sizes() {
        assert!((parse_probability("3.3%").unwrap() - 0.033).abs() < 1e-12);
        assert_eq!(parse_probability("0.5").unwrap(), 0.5);
        assert!(parse_probability("150%").is_err());
        assert_eq!(parse_size("64 KB").unwrap(), Size::Bytes(64_000));
        assert_eq!(parse_size("1 MiB").unwrap(), Size::Bytes(1_048_576));
        assert_eq!(parse_size("100 packets").unwrap(), Size::Packets(100));
        assert!(parse_size("12 parsecs").is_err());
    }
}

/// A TOML syntax error as the "key" and message of our one-line errors:
/// (`line 3, column 6`, `TOML syntax error: invalid table header, expected …`).
pub fn toml_syntax(text: &str, e: &toml::de::Error) -> (String, String) {
    let at = e.span().map(|s| s.start.min(text.len())).unwrap_or(0);
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    let message = e.message().lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(", ");
    let message = if message.is_empty() { "a value or closing bracket is missing".to_string() } else { message };
    (format!("line {line}, column {column}"), format!("TOML syntax error: {message}"))
}

#[cfg(test)]
mod toml_tests {
    #[test]
    fn a_syntax_error_is_one_line_with_its_place() {
        let text = "name = \"x\"\n[link\nrtt = \"1 ms\"\n";
        let e = text.parse::<toml::Table>().unwrap_err();
        let (at, m) = super::toml_syntax(text, &e);
        assert_eq!(at, "line 2, column 6");
        assert!(!m.contains('\n') && m.starts_with("TOML syntax error: "), "{m}");
    }
}
