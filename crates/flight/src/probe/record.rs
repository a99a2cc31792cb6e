//! The agent's log: one JSON object per line, one line per measurement,
//! written and flushed as it happens. Files rotate by size
//! (`probe.jsonl`, then `probe.1.jsonl`, `probe.2.jsonl`, … for the
//! full ones); a restarted agent appends and continues the record numbers.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The agent's kernel clock, as adjtimex reports it: whether NTP (or PTP)
/// keeps it synchronised, and its estimated maximum error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockState {
    pub synced: bool,
    pub maxerror_us: i64,
}

/// Reads the kernel's clock discipline state without changing it.
pub fn clock_state() -> ClockState {
    // SAFETY: adjtimex with modes = 0 only reads; the struct is zeroed.
    let mut t: libc::timex = unsafe { std::mem::zeroed() };
    let state = unsafe { libc::adjtimex(&mut t) };
    ClockState { synced: state >= 0 && state != libc::TIME_ERROR && t.status & libc::STA_UNSYNC == 0, maxerror_us: t.maxerror as i64 }
}

/// One measurement with when it began and the agent's clock state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Record number: continues across restarts and rotated files.
    pub n: u64,
    /// When the measurement began, seconds since the Unix epoch.
    pub t: f64,
    pub clock: ClockState,
    #[serde(flatten)]
    pub m: Measurement,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UdpProbe {
    pub seq: u64,
    /// The agent's session (a new one each start).
    pub session: u64,
    /// Round trip; none when no reply came within the timeout.
    pub rtt_ms: Option<f64>,
    /// One-way delays, when both clocks are trusted (see `one_way`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_ms: Option<f64>,
    /// From the reply: the reflector's highest received sequence number
    /// and which of the 64 before it arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_max: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_bitmap: Option<u64>,
    /// Whether the request reached the far end, when the log itself says
    /// (irtt's `true_up` / `true_down`); ours tell by the bitmaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_arrived: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hop {
    pub ttl: u8,
    pub addr: Option<String>,
    pub rtt_ms: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Measurement {
    /// The agent started (or restarted): what it measures and how.
    Start {
        target: String,
        version: String,
        config: serde_json::Value,
    },
    /// The agent stopped cleanly.
    Stop {
        reason: String,
    },
    Udp(UdpProbe),
    /// An ICMP echo through the system's `ping`.
    Ping {
        rtt_ms: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    Trace {
        target: String,
        hops: Vec<Hop>,
        reached: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// One lookup; each name is looked up twice back to back (attempt 1, 2).
    Dns {
        name: String,
        server: String,
        attempt: u8,
        ms: Option<f64>,
        answers: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rcode: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A page load; its HAR is in `har` (relative to the log's directory).
    Web {
        protocol: String,
        page: String,
        plt_ms: Option<f64>,
        ttfb_ms: Option<f64>,
        requests: usize,
        bytes: u64,
        /// Proxy and cache headers seen on any response (`via`, `x-cache`,
        /// `age`, …), each distinct value once.
        headers: BTreeMap<String, Vec<String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        har: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A bounded transfer, down or up.
    /// `peak_bps` is the highest rate over any 1 s of the transfer (the
    /// link's rate once the sender's window has grown past the path's BDP).
    Bulk {
        direction: String,
        bytes: u64,
        ms: Option<f64>,
        goodput_bps: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        peak_bps: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The bottleneck's rate by packet-train dispersion: `packets` sent
    /// back to back, `received` of them, the first and last `ms` apart.
    Rate {
        direction: String,
        packets: u32,
        size: u32,
        received: u32,
        ms: Option<f64>,
        rate_bps: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The agent's address as the reflector sees it (logged when it
    /// changes), and its network from the user's table.
    Address {
        public: String,
        network: Option<String>,
    },
}

impl Measurement {
    pub fn kind(&self) -> &'static str {
        match self {
            Measurement::Start { .. } => "start",
            Measurement::Stop { .. } => "stop",
            Measurement::Udp(_) => "udp",
            Measurement::Ping { .. } => "ping",
            Measurement::Trace { .. } => "trace",
            Measurement::Dns { .. } => "dns",
            Measurement::Web { .. } => "web",
            Measurement::Bulk { .. } => "bulk",
            Measurement::Rate { .. } => "rate",
            Measurement::Address { .. } => "address",
        }
    }
}

/// The log's current file in `dir`.
pub fn current(dir: &Path) -> PathBuf {
    dir.join("probe.jsonl")
}

/// Every log file in `dir`, oldest first (rotated ones by number, then the
/// current one).
pub fn files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut rotated: Vec<(u64, PathBuf)> = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(k) = name.strip_prefix("probe.").and_then(|r| r.strip_suffix(".jsonl")).and_then(|k| k.parse().ok()) {
            rotated.push((k, p));
        }
    }
    rotated.sort();
    let mut out: Vec<PathBuf> = rotated.into_iter().map(|(_, p)| p).collect();
    if current(dir).exists() {
        out.push(current(dir));
    }
    Ok(out)
}

/// Reads a log: every record of every file in order. A line that is not a
/// record (a torn last line after a power cut) is skipped and counted.
///
/// A file that is irtt's JSON output (`irtt client -o`, also gzipped) is
/// read as one ([`super::irtt`]); a mistake in it is an `InvalidData`
/// error naming the round trip.
pub fn read_dir_or_file(path: &Path) -> std::io::Result<(Vec<Record>, usize)> {
    if path.is_file() {
        let mut head = [0u8; 4096];
        let n = std::io::Read::read(&mut File::open(path)?, &mut head)?;
        if super::irtt::looks_like_irtt(path, &head[..n]) {
            return super::irtt::read(path).map(|r| (r, 0)).map_err(|m| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("irtt JSON: {m}")));
        }
    }
    let files = if path.is_dir() { files(path)? } else { vec![path.to_path_buf()] };
    let (mut out, mut bad) = (Vec::new(), 0);
    for f in files {
        for line in BufReader::new(File::open(&f)?).lines() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Record>(&line) {
                Ok(r) => out.push(r),
                Err(_) => bad += 1,
            }
        }
    }
    out.sort_by_key(|r| r.n);
    Ok((out, bad))
}

/// Where a [`Writer`] also hands each record (the SQLite copy).
pub type Sink = Box<dyn FnMut(&Record) + Send>;

/// Appends records to the log in a directory, rotating by size.
pub struct Writer {
    dir: PathBuf,
    file: File,
    written: u64,
    rotate_bytes: u64,
    next_n: u64,
    /// Everything written, for the caller (the SQLite copy).
    pub sink: Option<Sink>,
}

impl Writer {
    /// Opens `dir` (created if missing), continuing a log already there.
    pub fn open(dir: &Path, rotate_bytes: u64) -> std::io::Result<Writer> {
        std::fs::create_dir_all(dir)?;
        let mut next_n = 0;
        if let Some(last) = files(dir)?.last() {
            // The last complete record of the newest file.
            for line in BufReader::new(File::open(last)?).lines() {
                if let Ok(r) = serde_json::from_str::<Record>(&line?) {
                    next_n = next_n.max(r.n + 1);
                }
            }
        }
        let mut file = OpenOptions::new().create(true).append(true).read(true).open(current(dir))?;
        let written = file.metadata()?.len();
        // A line torn by a crash is ended, so the next record starts clean.
        if written > 0 {
            use std::io::{Read, Seek, SeekFrom};
            let mut last = [0u8; 1];
            file.seek(SeekFrom::End(-1))?;
            file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        Ok(Writer { dir: dir.to_path_buf(), file, written, rotate_bytes: rotate_bytes.max(4096), next_n, sink: None })
    }

    /// Writes one measurement now, stamped with its start time.
    pub fn write(&mut self, t: f64, m: Measurement) -> std::io::Result<Record> {
        let r = Record { n: self.next_n, t, clock: clock_state(), m };
        self.next_n += 1;
        let mut line = serde_json::to_vec(&r).map_err(std::io::Error::other)?;
        line.push(b'\n');
        if self.written > 0 && self.written + line.len() as u64 > self.rotate_bytes {
            self.rotate()?;
        }
        self.file.write_all(&line)?;
        self.file.flush()?;
        self.written += line.len() as u64;
        if let Some(sink) = self.sink.as_mut() {
            sink(&r);
        }
        Ok(r)
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        let k = files(&self.dir)?.iter().filter_map(|p| p.file_name()?.to_str()?.strip_prefix("probe.")?.strip_suffix(".jsonl")?.parse::<u64>().ok()).max().map_or(1, |k| k + 1);
        self.file.sync_all()?;
        std::fs::rename(current(&self.dir), self.dir.join(format!("probe.{k}.jsonl")))?;
        self.file = OpenOptions::new().create(true).append(true).open(current(&self.dir))?;
        self.written = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_rotates_and_a_restarted_writer_continues_its_numbers() {
        let dir = std::env::temp_dir().join(format!("aerolink-probe-log-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut w = Writer::open(&dir, 4096).unwrap();
        for i in 0..100 {
            w.write(i as f64, Measurement::Ping { rtt_ms: Some(i as f64), error: None }).unwrap();
        }
        drop(w);
        assert!(files(&dir).unwrap().len() >= 2, "{:?}", files(&dir));
        let mut w = Writer::open(&dir, 4096).unwrap();
        let r = w.write(100.0, Measurement::Stop { reason: "test".into() }).unwrap();
        assert_eq!(r.n, 100);
        // A torn line is skipped, not fatal.
        std::fs::OpenOptions::new().append(true).open(current(&dir)).unwrap().write_all(b"{\"n\": 10").unwrap();
        let (records, bad) = read_dir_or_file(&dir).unwrap();
        assert_eq!(records.iter().map(|r| r.n).collect::<Vec<_>>(), (0..=100).collect::<Vec<_>>());
        assert_eq!(bad, 1);
        assert_eq!(records[3].m, Measurement::Ping { rtt_ms: Some(3.0), error: None });
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
