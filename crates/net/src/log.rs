//! The packet event log: one line per event, and its summary.
//!
//! ```text
//! # aerolink packet log v1
//! # run=3f9a2c seed=1 profile=mss …
//! t_ns hop dir event id bytes queue_ns delay_ns reason
//! 1200345 0 up arrive 0 84 - - -
//! 381700345 0 up depart 0 84 0 380500000 -
//! ```
//! `t_ns` is nanoseconds since the run began (departures are stamped with the
//! time they were due, the logical time). `delay_ns` is the one-way delay
//! through the link (queueing + transmission + propagation + jitter).
//!
//! Since v2 the link's mechanisms report what they do besides packets'
//! fates, in the same columns (`-` where one does not apply; the last
//! column carries `key=value` pairs):
//!
//! ```text
//! 2650000 0 up sf 99 331 - - used=120,count=1     # DVB-RCS2 super-frame 99: 331 B allocated, 120 B sent
//! 61000000000 0 up chan-down 2 0 - - -            # bonded channel 2 dropped its call
//! 107000000000 0 up chan-up 2 0 - - -             # … and is back
//! 933000000 0 up retx 17 84 - - attempt=2         # L-DACS ARQ sends packet 17 again
//! 20000000000 0 down handover 0 0 - - phase=l2-start  # handover 0: the aircraft leaves the cell
//! ```

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use aerolink_link::{DropReason, Instant, Note};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Aircraft → ground (left to right in a chain).
    Up,
    /// Ground → aircraft.
    Down,
}

impl Dir {
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::Up => "up",
            Dir::Down => "down",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EventKind {
    Arrive,
    Depart {
        queue_ns: u64,
        delay_ns: u64,
    },
    Drop(DropReason),
    /// What a stage did besides packets' fates.
    Note(Note),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    pub t: Instant,
    pub hop: u16,
    pub dir: Dir,
    pub id: u64,
    pub bytes: u32,
    pub kind: EventKind,
}

impl Event {
    /// A stage's event: `id` and `bytes` carry the note's channel,
    /// super-frame or packet and its bytes, as the log's columns do.
    pub fn note(t: Instant, hop: u16, dir: Dir, note: Note) -> Self {
        let (id, bytes) = match note {
            Note::Superframe { index, allocated_bytes, .. } => (index, allocated_bytes.min(u32::MAX as u64) as u32),
            Note::Channel { channel, .. } => (channel as u64, 0),
            Note::Retransmit { id, bytes, .. } => (id, bytes),
            Note::Handover { index, .. } => (index as u64, 0),
        };
        Event { t, hop, dir, id, bytes, kind: EventKind::Note(note) }
    }
}

pub const HEADER: &str = "t_ns hop dir event id bytes queue_ns delay_ns reason";

/// The first line of a log this version writes.
pub const FIRST_LINE: &str = "# aerolink packet log v2";

pub fn write_header(w: &mut impl Write, meta: &[(String, String)]) -> std::io::Result<()> {
    writeln!(w, "{FIRST_LINE}")?;
    let m: Vec<String> = meta.iter().map(|(k, v)| format!("{k}={}", v.replace(char::is_whitespace, "_"))).collect();
    writeln!(w, "# {}", m.join(" "))?;
    writeln!(w, "{HEADER}")
}

pub fn write_event(w: &mut impl Write, e: &Event) -> std::io::Result<()> {
    let detail;
    let (name, q, d, r) = match e.kind {
        EventKind::Arrive => ("arrive", None, None, "-"),
        EventKind::Depart { queue_ns, delay_ns } => ("depart", Some(queue_ns), Some(delay_ns), "-"),
        EventKind::Drop(reason) => ("drop", None, None, reason.as_str()),
        EventKind::Note(Note::Superframe { count, used_bytes, .. }) => {
            detail = format!("used={used_bytes},count={count}");
            ("sf", None, None, detail.as_str())
        }
        EventKind::Note(Note::Channel { up, .. }) => (if up { "chan-up" } else { "chan-down" }, None, None, "-"),
        EventKind::Note(Note::Retransmit { attempt, .. }) => {
            detail = format!("attempt={attempt}");
            ("retx", None, None, detail.as_str())
        }
        EventKind::Note(Note::Handover { phase, .. }) => {
            detail = format!("phase={}", phase.as_str());
            ("handover", None, None, detail.as_str())
        }
    };
    let opt = |x: Option<u64>| x.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
    writeln!(w, "{} {} {} {} {} {} {} {} {}", e.t.0, e.hop, e.dir.as_str(), name, e.id, e.bytes, opt(q), opt(d), r)
}

/// The value of `key` in a `key=value,…` column.
fn detail(col: &str, key: &str) -> Result<u64, String> {
    col.split(',')
        .find_map(|kv| kv.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .ok_or_else(|| format!("expected {key}=N in {col:?}"))?
        .parse()
        .map_err(|_| format!("{key}: not a number in {col:?}"))
}

/// What a malformed log line was.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The file could not be read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A line is not an event of this format.
    #[error("line {line}: {msg}")]
    Bad { line: usize, msg: String },
    /// The file does not start like an aerolink packet log.
    #[error("not an aerolink packet log (the first line should be `# aerolink packet log v2` or `v1`)")]
    NotALog,
}

pub fn parse_event(line: &str) -> Result<Event, String> {
    let f: Vec<&str> = line.split(' ').collect();
    if f.len() != 9 {
        return Err(format!("expected 9 columns ({HEADER}), got {}", f.len()));
    }
    let num = |s: &str, what: &str| s.parse::<u64>().map_err(|_| format!("{what}: {s:?} is not a number"));
    // What `stats` spreads over per-second bins: a time past 100 days is a
    // corrupt line, not a run.
    let t_ns = num(f[0], "t_ns")?;
    if t_ns > 100 * 24 * 3600 * 1_000_000_000 {
        return Err(format!("t_ns: {t_ns} is more than 100 days into the run"));
    }
    let dir = match f[2] {
        "up" => Dir::Up,
        "down" => Dir::Down,
        x => return Err(format!("dir: expected up or down, got {x:?}")),
    };
    let (id, bytes) = (num(f[4], "id")?, num(f[5], "bytes")?);
    let kind = match f[3] {
        "arrive" => EventKind::Arrive,
        "depart" => EventKind::Depart { queue_ns: num(f[6], "queue_ns")?, delay_ns: num(f[7], "delay_ns")? },
        "drop" => EventKind::Drop(DropReason::parse(f[8]).ok_or_else(|| format!("reason: expected queue, loss, outage or arq, got {:?}", f[8]))?),
        "sf" => EventKind::Note(Note::Superframe { index: id, count: detail(f[8], "count")?, allocated_bytes: bytes, used_bytes: detail(f[8], "used")? }),
        "chan-up" | "chan-down" => EventKind::Note(Note::Channel { channel: id as u16, up: f[3] == "chan-up" }),
        "retx" => EventKind::Note(Note::Retransmit { id, bytes: bytes as u32, attempt: detail(f[8], "attempt")? as u32 }),
        "handover" => {
            let phase = f[8]
                .strip_prefix("phase=")
                .and_then(aerolink_link::handover::Phase::parse)
                .ok_or_else(|| format!("expected phase=trigger|buffering|l2-start|l2-end|address|bound|acked, got {:?}", f[8]))?;
            EventKind::Note(Note::Handover { index: id as u16, phase })
        }
        x => return Err(format!("event: expected arrive, depart, drop, sf, chan-up, chan-down, retx or handover, got {x:?}")),
    };
    Ok(Event { t: Instant(t_ns), hop: num(f[1], "hop")? as u16, dir, id, bytes: bytes as u32, kind })
}

/// Per hop and direction: what arrived, left and was dropped.
#[derive(Debug, Default, Serialize)]
pub struct DirSummary {
    pub hop: u16,
    pub dir: Option<Dir>,
    pub arrived_packets: u64,
    pub departed_packets: u64,
    pub departed_bytes: u64,
    pub dropped: BTreeMap<String, u64>,
    /// Packets still inside the link when the run ended (arrived, neither
    /// departed nor dropped).
    pub in_flight_at_end: u64,
    /// Dropped packets as a fraction of arrivals, per cause.
    pub drop_fraction: BTreeMap<String, f64>,
    /// One-way delay through the link, milliseconds.
    pub delay_ms: Percentiles,
    /// Queueing delay before transmission, milliseconds.
    pub queue_ms: Percentiles,
    /// Throughput of departures in each whole second since the run began,
    /// bit/s.
    pub throughput_bps: Vec<f64>,
    pub mean_throughput_bps: f64,
    /// Link-layer retransmissions (L-DACS ARQ).
    pub retransmissions: u64,
    /// DVB-RCS2 capacity allocated and used, when the link has `dama`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superframes: Option<SuperframeSummary>,
    /// Handover phases and when they came, seconds (`handover`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub handovers: Vec<(&'static str, f64)>,
    /// Bonded channels' call drops, when the link has `bonded`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channels: Option<ChannelSummary>,
}

/// Capacity a DVB-RCS2 terminal was allocated and what it sent in it.
#[derive(Debug, Default, Serialize)]
pub struct SuperframeSummary {
    /// Super-frames reported (idle stretches included).
    pub count: u64,
    /// Super-frames in which the terminal sent something.
    pub busy: u64,
    pub allocated_bytes: u64,
    pub used_bytes: u64,
    /// Used / allocated.
    pub utilization: f64,
    /// Capacity allocated and used in each whole second, bit/s.
    pub allocated_bps: Vec<f64>,
    pub used_bps: Vec<f64>,
}

/// Bonded channels going down and coming back.
#[derive(Debug, Default, Serialize)]
pub struct ChannelSummary {
    /// Call drops, and channels back after redialling.
    pub drops: u64,
    pub redials: u64,
    /// Channel-seconds down (a channel still down at the end counts to
    /// the end), and the longest single outage of one channel.
    pub down_channel_s: f64,
    pub longest_down_s: f64,
}

#[derive(Debug, Default, Serialize, Clone)]
pub struct Percentiles {
    pub count: u64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Percentiles {
    pub fn from_ns(v: &mut [u64]) -> Self {
        if v.is_empty() {
            return Percentiles::default();
        }
        v.sort_unstable();
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize] as f64 / 1e6;
        Percentiles {
            count: v.len() as u64,
            min: v[0] as f64 / 1e6,
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            max: v[v.len() - 1] as f64 / 1e6,
            mean: v.iter().map(|x| *x as f64).sum::<f64>() / v.len() as f64 / 1e6,
        }
    }
}

#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub meta: BTreeMap<String, String>,
    pub duration_s: f64,
    pub directions: Vec<DirSummary>,
}

/// Reads a whole log and summarises it per hop and direction.
pub fn summarize(r: impl BufRead) -> Result<Summary, LogError> {
    let mut acc: BTreeMap<(u16, Dir), Acc> = BTreeMap::new();
    let mut meta = BTreeMap::new();
    let mut last_t = 0u64;
    for (i, line) in r.lines().enumerate() {
        let line = line?;
        if i == 0 {
            if !line.starts_with("# aerolink packet log") {
                return Err(LogError::NotALog);
            }
            continue;
        }
        if let Some(m) = line.strip_prefix("# ") {
            for kv in m.split(' ') {
                if let Some((k, v)) = kv.split_once('=') {
                    meta.insert(k.to_string(), v.to_string());
                }
            }
            continue;
        }
        if line == HEADER || line.is_empty() {
            continue;
        }
        let e = parse_event(&line).map_err(|msg| LogError::Bad { line: i + 1, msg })?;
        last_t = last_t.max(e.t.0);
        acc.entry((e.hop, e.dir)).or_insert_with(|| Acc::new(e.hop, e.dir)).add(&e);
    }
    let duration_s = last_t as f64 / 1e9;
    let directions = acc.into_values().map(|a| a.finish(duration_s, last_t)).collect();
    Ok(Summary { meta, duration_s, directions })
}

/// One hop and direction of a log, as it is read.
struct Acc {
    s: DirSummary,
    delays: Vec<u64>,
    queues: Vec<u64>,
    bins: Vec<u64>,
    sf: Option<(SuperframeSummary, Vec<f64>, Vec<f64>)>,
    /// When each channel went down, while it is.
    down_since: BTreeMap<u16, u64>,
    ch: Option<ChannelSummary>,
}

impl Acc {
    fn new(hop: u16, dir: Dir) -> Acc {
        Acc { s: DirSummary { hop, dir: Some(dir), ..Default::default() }, delays: Vec::new(), queues: Vec::new(), bins: Vec::new(), sf: None, down_since: BTreeMap::new(), ch: None }
    }

    fn add(&mut self, e: &Event) {
        let a = self;
        match e.kind {
            EventKind::Arrive => a.s.arrived_packets += 1,
            EventKind::Depart { queue_ns, delay_ns } => {
                a.s.departed_packets += 1;
                a.s.departed_bytes += e.bytes as u64;
                a.delays.push(delay_ns);
                a.queues.push(queue_ns);
                let sec = (e.t.0 / 1_000_000_000) as usize;
                if a.bins.len() <= sec {
                    a.bins.resize(sec + 1, 0);
                }
                a.bins[sec] += e.bytes as u64;
            }
            EventKind::Drop(r) => *a.s.dropped.entry(r.as_str().to_string()).or_default() += 1,
            EventKind::Note(Note::Retransmit { .. }) => a.s.retransmissions += 1,
            EventKind::Note(Note::Handover { phase, .. }) => a.s.handovers.push((phase.as_str(), e.t.0 as f64 / 1e9)),
            EventKind::Note(Note::Superframe { index, count, allocated_bytes, used_bytes }) => {
                let (s, alloc, used) = a.sf.get_or_insert_with(Default::default);
                s.count += count;
                s.busy += (used_bytes > 0) as u64;
                s.allocated_bytes += allocated_bytes;
                s.used_bytes += used_bytes;
                // Stamped with the end of the last super-frame of the
                // stretch, which began at index × the super-frame.
                let from = e.t.0 / (index + count) * index;
                spread(alloc, from, e.t.0, allocated_bytes as f64);
                spread(used, from, e.t.0, used_bytes as f64);
            }
            EventKind::Note(Note::Channel { channel, up }) => {
                let c = a.ch.get_or_insert_with(Default::default);
                if up {
                    c.redials += 1;
                    if let Some(since) = a.down_since.remove(&channel) {
                        let d = (e.t.0 - since) as f64 / 1e9;
                        c.down_channel_s += d;
                        c.longest_down_s = c.longest_down_s.max(d);
                    }
                } else {
                    c.drops += 1;
                    a.down_since.insert(channel, e.t.0);
                }
            }
        }
    }

    /// The summary once the log is read (`last_t`: its last event).
    fn finish(mut self, duration_s: f64, last_t: u64) -> DirSummary {
        let a = &mut self;
        a.s.delay_ms = Percentiles::from_ns(&mut a.delays);
        a.s.queue_ms = Percentiles::from_ns(&mut a.queues);
        a.s.throughput_bps = a.bins.iter().map(|b| *b as f64 * 8.0).collect();
        a.s.mean_throughput_bps = if duration_s > 0.0 { a.s.departed_bytes as f64 * 8.0 / duration_s } else { 0.0 };
        let dropped: u64 = a.s.dropped.values().sum();
        a.s.in_flight_at_end = a.s.arrived_packets.saturating_sub(a.s.departed_packets + dropped);
        let arrived = a.s.arrived_packets.max(1) as f64;
        a.s.drop_fraction = a.s.dropped.iter().map(|(k, v)| (k.clone(), *v as f64 / arrived)).collect();
        if let Some((mut sf, alloc, used)) = a.sf.take() {
            sf.utilization = if sf.allocated_bytes > 0 { sf.used_bytes as f64 / sf.allocated_bytes as f64 } else { 0.0 };
            sf.allocated_bps = alloc.iter().map(|b| b * 8.0).collect();
            sf.used_bps = used.iter().map(|b| b * 8.0).collect();
            a.s.superframes = Some(sf);
        }
        if let Some(mut c) = a.ch.take() {
            for since in a.down_since.values() {
                let d = (last_t - since) as f64 / 1e9;
                c.down_channel_s += d;
                c.longest_down_s = c.longest_down_s.max(d);
            }
            a.s.channels = Some(c);
        }
        self.s
    }
}

/// Adds `bytes` spread evenly over `[from, to)` ns to per-second bins.
fn spread(bins: &mut Vec<f64>, from: u64, to: u64, bytes: f64) {
    let to = to.max(from + 1);
    let per_ns = bytes / (to - from) as f64;
    let mut t = from;
    while t < to {
        let sec = (t / 1_000_000_000) as usize;
        let end = ((sec as u64 + 1) * 1_000_000_000).min(to);
        if bins.len() <= sec {
            bins.resize(sec + 1, 0.0);
        }
        bins[sec] += per_ns * (end - t) as f64;
        t = end;
    }
}

#[cfg(test)]
mod tests {
    /// Found by the fuzzer (packet_log, out of memory): `stats` spread a
    /// line's bytes over one bin per second up to its time, so a corrupt
    /// time of 9e18 ns asked for 9e9 bins.
    #[test]
    fn a_time_past_100_days_is_a_bad_line() {
        let e = parse_event("9000000000000000000 0 up arrive 0 84 - - -").unwrap_err();
        assert!(e.contains("more than 100 days"), "{e}");
        assert!(parse_event("40895892 0 up arrive 0 84 - - -").is_ok());
    }

    use super::*;

    #[test]
    fn events_round_trip_and_summarise() {
        let mut buf = Vec::new();
        write_header(&mut buf, &[("seed".into(), "7".into())]).unwrap();
        let evs = [
            Event { t: Instant(0), hop: 0, dir: Dir::Up, id: 0, bytes: 1000, kind: EventKind::Arrive },
            Event { t: Instant(1), hop: 0, dir: Dir::Up, id: 1, bytes: 1000, kind: EventKind::Arrive },
            Event { t: Instant(5_000_000), hop: 0, dir: Dir::Up, id: 0, bytes: 1000, kind: EventKind::Depart { queue_ns: 0, delay_ns: 5_000_000 } },
            Event { t: Instant(6_000_000), hop: 0, dir: Dir::Up, id: 1, bytes: 1000, kind: EventKind::Drop(DropReason::Loss) },
            Event::note(Instant(26_500_000), 0, Dir::Up, Note::Superframe { index: 0, count: 1, allocated_bytes: 331, used_bytes: 120 }),
            Event::note(Instant(1_060_000_000), 0, Dir::Up, Note::Superframe { index: 1, count: 39, allocated_bytes: 12_909, used_bytes: 0 }),
            Event::note(Instant(7_000_000), 0, Dir::Up, Note::Channel { channel: 2, up: false }),
            Event::note(Instant(9_000_000), 0, Dir::Up, Note::Channel { channel: 2, up: true }),
            Event::note(Instant(8_000_000), 0, Dir::Up, Note::Retransmit { id: 1, bytes: 1000, attempt: 2 }),
            Event::note(Instant(9_500_000), 0, Dir::Up, Note::Handover { index: 0, phase: aerolink_link::handover::Phase::L2Start }),
        ];
        for e in &evs {
            write_event(&mut buf, e).unwrap();
        }
        let text = String::from_utf8(buf).unwrap();
        for (line, e) in text.lines().skip(3).zip(&evs) {
            assert_eq!(&parse_event(line).unwrap(), e);
        }
        let s = summarize(text.as_bytes()).unwrap();
        assert_eq!(s.meta["seed"], "7");
        let d = &s.directions[0];
        assert_eq!((d.arrived_packets, d.departed_packets, d.dropped["loss"]), (2, 1, 1));
        assert_eq!(d.delay_ms.p50, 5.0);
        assert_eq!(d.retransmissions, 1);
        let sf = d.superframes.as_ref().unwrap();
        assert_eq!((sf.count, sf.busy, sf.allocated_bytes, sf.used_bytes), (40, 1, 13_240, 120));
        // The idle stretch from 26.5 ms to 1.06 s spreads over seconds 0 and 1.
        assert_eq!(sf.allocated_bps.len(), 2);
        assert!((sf.allocated_bps.iter().sum::<f64>() - 13_240.0 * 8.0).abs() < 1e-6);
        let c = d.channels.as_ref().unwrap();
        assert_eq!((c.drops, c.redials), (1, 1));
        assert!((c.longest_down_s - 0.002).abs() < 1e-12);
        assert!(matches!(summarize("hello\n".as_bytes()), Err(LogError::NotALog)));
    }
}
