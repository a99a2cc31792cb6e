//! Other tools' vocabulary, read into our keys: a netem option string
//! (`delay 100ms 10ms distribution normal loss 1% rate 2mbit limit 1000`)
//! and Mahimahi's queue flags (`--uplink-queue droptail
//! --uplink-queue-args bytes=30000`). Each becomes the `(key, value)` pairs a
//! profile's direction table would hold, so everything after is the same
//! path as our own flags; what has no equivalent is refused with a line
//! saying what to use instead.

use crate::units;

/// A key and value as a flag gives them (`rate`, `"2mbit"`).
pub type KeyValue = (&'static str, String);

/// Reads netem's options (as after `tc qdisc add dev X root netem`):
/// `delay TIME [JITTER [CORRELATION]] [distribution uniform|normal]`,
/// `loss [random] PERCENT`, `loss gemodel p [r [1-h [1-k]]]`,
/// `rate RATE [packetoverhead BYTES]`, `limit PACKETS`.
///
/// netem delays packets in a time-ordered queue, so jitter reorders them;
/// with jitter this turns `reorder` on to behave the same.
pub fn netem(s: &str) -> Result<Vec<KeyValue>, String> {
    let words: Vec<&str> = s.split_whitespace().collect();
    if words.is_empty() {
        return Err("expected netem options like \"delay 100ms 10ms loss 1% rate 2mbit limit 1000\"".into());
    }
    let mut c = Cursor { words, i: 0 };
    let mut out: Vec<KeyValue> = Vec::new();
    while let Some(w) = c.words.get(c.i).copied() {
        c.i += 1;
        match w {
            "delay" | "latency" => netem_delay(&mut c, &mut out)?,
            "loss" | "drop" => netem_loss(&mut c, &mut out)?,
            "rate" => netem_rate(&mut c, &mut out)?,
            "limit" => {
                let n = c.arg().ok_or("limit: expected a number of packets, like limit 1000")?;
                let packets: u64 = n.parse().ok().filter(|n| *n > 0).ok_or_else(|| format!("limit {n}: expected a whole number of packets, at least 1"))?;
                out.push(("queue", format!("{packets} packets")));
                c.i += 1;
            }
            "reorder" | "gap" => return Err(format!("{w}: netem's forced reordering has no equivalent; aerolink reorders through jitter (delay TIME JITTER) as netem does by default")),
            "duplicate" | "corrupt" | "slot" | "ecn" => return Err(format!("{w}: not available in aerolink")),
            other => return Err(format!("{other}: not a netem option; expected delay, loss, rate or limit")),
        }
    }
    Ok(out)
}

/// netem's words and the one being read.
struct Cursor<'a> {
    words: Vec<&'a str>,
    i: usize,
}

impl<'a> Cursor<'a> {
    /// The word at the cursor if it is not an option name.
    fn arg(&self) -> Option<&'a str> {
        self.words.get(self.i).copied().filter(|w| !is_option(w))
    }
}

/// `delay TIME [JITTER [distribution uniform|normal]]`.
fn netem_delay(c: &mut Cursor, out: &mut Vec<KeyValue>) -> Result<(), String> {
    let d = c.arg().ok_or("delay: expected a time, like delay 100ms")?;
    units::parse_duration(d).map_err(|m| format!("delay {d}: expected {m}"))?;
    out.push(("delay", d.to_string()));
    c.i += 1;
    let mut jitter = None;
    if let Some(j) = c.arg().filter(|w| *w != "distribution") {
        units::parse_duration(j).map_err(|m| format!("delay {d} {j}: the jitter: expected {m}"))?;
        jitter = Some(j);
        c.i += 1;
        if let Some(k) = c.arg().filter(|w| *w != "distribution") {
            return Err(format!("delay {d} {j} {k}: delay correlation is not modelled; leave it out (jitter is independent per packet)"));
        }
    }
    let mut dist = "uniform";
    if c.words.get(c.i) == Some(&"distribution") {
        dist = match c.words.get(c.i + 1).copied() {
            Some("uniform") => "uniform",
            Some("normal") => "normal",
            Some(other) => return Err(format!("distribution {other}: expected uniform or normal here (a Pareto law is `jitter = {{ dist = \"pareto\", scale, shape }}` in a profile)")),
            None => return Err("distribution: expected uniform or normal".into()),
        };
        c.i += 2;
    }
    if let Some(j) = jitter {
        out.push(("jitter", format!("{dist} {j}")));
        out.push(("reorder", "true".into()));
    }
    Ok(())
}

/// `loss [random] PERCENT` or `loss gemodel p [r [1-h [1-k]]]`.
fn netem_loss(c: &mut Cursor, out: &mut Vec<KeyValue>) -> Result<(), String> {
    match c.arg() {
        Some("random") => c.i += 1,
        Some("gemodel") => {
            c.i += 1;
            let mut ps = Vec::new();
            while let Some(p) = c.arg() {
                units::parse_probability(p).map_err(|m| format!("loss gemodel {p}: expected {m}"))?;
                ps.push(p);
                c.i += 1;
            }
            if ps.is_empty() || ps.len() > 4 {
                return Err("loss gemodel: expected p [r [1-h [1-k]]], like loss gemodel 1% 10% 70% 0.1%".into());
            }
            out.push(("loss", format!("gemodel {}", ps.join(" "))));
            return Ok(());
        }
        Some("state") => return Err("loss state: the 4-state model is not available; use loss gemodel p r 1-h 1-k".into()),
        _ => {}
    }
    let p = c.arg().ok_or("loss: expected a percentage, like loss 1%")?;
    units::parse_probability(p).map_err(|m| format!("loss {p}: expected {m}"))?;
    out.push(("loss", p.to_string()));
    c.i += 1;
    if let Some(k) = c.arg() {
        return Err(format!("loss {p} {k}: loss correlation is not modelled; for bursts use loss gemodel p r 1-h 1-k"));
    }
    Ok(())
}

/// `rate RATE [PACKET-OVERHEAD]`.
fn netem_rate(c: &mut Cursor, out: &mut Vec<KeyValue>) -> Result<(), String> {
    let r = c.arg().ok_or("rate: expected a rate, like rate 2mbit")?;
    units::parse_rate(r).map_err(|m| format!("rate {r}: expected {m}"))?;
    out.push(("rate", r.to_string()));
    c.i += 1;
    if let Some(o) = c.arg() {
        // netem's positional packet overhead.
        let n: i64 = o.parse().map_err(|_| format!("rate {r} {o}: expected a packet overhead in bytes or the next option"))?;
        if n < 0 {
            return Err(format!("rate {r} {o}: a negative packet overhead is not modelled"));
        }
        out.push(("overhead", format!("{n} B")));
        c.i += 1;
    }
    if let Some(k) = c.arg() {
        return Err(format!("rate {r} … {k}: cell size and cell overhead are not modelled"));
    }
    Ok(())
}

fn is_option(w: &str) -> bool {
    matches!(w, "delay" | "latency" | "loss" | "drop" | "rate" | "limit" | "reorder" | "gap" | "duplicate" | "corrupt" | "slot" | "ecn")
}

/// Reads Mahimahi's `--uplink-queue KIND` and `--uplink-queue-args ARGS`
/// into a queue value: `droptail` with `bytes=N` or `packets=N`, or
/// `infinite`.
pub fn mahimahi_queue(kind: &str, args: Option<&str>) -> Result<String, String> {
    match kind {
        "infinite" => match args {
            None | Some("") => Ok("unlimited".into()),
            Some(a) => Err(format!("infinite takes no arguments, got {a:?}")),
        },
        "droptail" => {
            let a = args.ok_or("droptail needs --…-queue-args bytes=N or packets=N")?;
            let (k, v) = a.split_once('=').ok_or_else(|| format!("{a:?}: expected bytes=N or packets=N"))?;
            let n: u64 = v.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| format!("{a:?}: expected a whole number above 0 after {k}="))?;
            match k.trim() {
                "bytes" => Ok(format!("{n} B")),
                "packets" => Ok(format!("{n} packets")),
                other => Err(format!("{other}: expected bytes or packets")),
            }
        }
        "drophead" | "codel" | "pie" => Err(format!("{kind}: only droptail and infinite queues are modelled")),
        other => Err(format!("{other}: expected droptail or infinite")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(pairs: &[(&'static str, &str)]) -> Vec<KeyValue> {
        pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
    }

    #[test]
    fn netem_options_become_our_keys() {
        assert_eq!(netem("delay 100ms").unwrap(), kv(&[("delay", "100ms")]));
        assert_eq!(netem("delay 100ms 10ms").unwrap(), kv(&[("delay", "100ms"), ("jitter", "uniform 10ms"), ("reorder", "true")]));
        assert_eq!(
            netem("delay 100ms 10ms distribution normal loss 1% rate 2mbit limit 1000").unwrap(),
            kv(&[("delay", "100ms"), ("jitter", "normal 10ms"), ("reorder", "true"), ("loss", "1%"), ("rate", "2mbit"), ("queue", "1000 packets")])
        );
        assert_eq!(netem("loss random 0.5%").unwrap(), kv(&[("loss", "0.5%")]));
        assert_eq!(netem("loss gemodel 1% 10% 70% 0.1%").unwrap(), kv(&[("loss", "gemodel 1% 10% 70% 0.1%")]));
        assert_eq!(netem("loss gemodel 1% rate 1mbit 20").unwrap(), kv(&[("loss", "gemodel 1%"), ("rate", "1mbit"), ("overhead", "20 B")]));
    }

    #[test]
    fn what_netem_has_and_we_do_not_is_refused_with_what_to_use() {
        for (s, says) in [
            ("", "expected netem options"),
            ("delay 100ms 10ms 25%", "correlation is not modelled"),
            ("delay 100ms 10ms distribution pareto", "pareto"),
            ("loss 1% 25%", "loss gemodel"),
            ("loss state 1% 2%", "gemodel"),
            ("reorder 25% 50%", "through jitter"),
            ("duplicate 1%", "not available"),
            ("limit -5", "whole number"),
            ("delay fast", "delay fast"),
            ("jitter 5ms", "not a netem option"),
            ("loss gemodel", "expected p"),
        ] {
            let e = netem(s).unwrap_err();
            assert!(e.contains(says), "{s:?}: {e}");
        }
    }

    #[test]
    fn mahimahi_queues_become_our_queue_values() {
        assert_eq!(mahimahi_queue("droptail", Some("bytes=30000")).unwrap(), "30000 B");
        assert_eq!(mahimahi_queue("droptail", Some("packets=100")).unwrap(), "100 packets");
        assert_eq!(mahimahi_queue("infinite", None).unwrap(), "unlimited");
        assert!(mahimahi_queue("codel", Some("target=5")).unwrap_err().contains("only droptail"));
        assert!(mahimahi_queue("droptail", None).unwrap_err().contains("bytes=N"));
        assert!(mahimahi_queue("droptail", Some("bytes=0")).unwrap_err().contains("above 0"));
    }
}
