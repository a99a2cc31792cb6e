//! Packet captures of what crossed the link, with each packet's fate:
//! `--pcap DIR` writes one pcapng file per hop (`hop0.pcapng`, …) that
//! Wireshark and tshark read.
//!
//! Each file has four interfaces (link type raw IP, nanosecond
//! timestamps): for each direction, the packets as they **entered** the
//! link (stamped when they arrived) and as they **left** it (stamped when
//! they were due at the far end). A packet is written once its fate is
//! known, so the entering side carries that fate as the packet's comment
//! (`frame.comment` in Wireshark):
//!
//! - `departed: queued 0.120 ms, one-way delay 380.620 ms`
//! - `dropped: loss` · `dropped: queue` · `dropped: outage` ·
//!   `dropped: ARQ gave up`
//! - `still in the link at the end`
//!
//! and the leaving side its delay (`one-way delay 380.620 ms, queued
//! 0.120 ms`). Entering packets are therefore written in the order their
//! fates were decided, not always in time order; Wireshark sorts by time
//! when asked. Timestamps are the pump's clock from the run's start, plus
//! the wall-clock time the run started.
//!
//! A capture keeps `snap` bytes of each packet (all of it by default) and
//! stops writing packets once its file reaches `max_bytes`, counting what
//! it left out. Capturing turns segmentation offload off on the lab's TUN
//! devices, so each packet in a file is one packet on the wire.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use aerolink_link::DropReason;
use serde::Serialize;

use crate::log::{Dir, Event, EventKind};

/// What to capture, and where.
#[derive(Clone, Debug, PartialEq)]
pub struct PcapSpec {
    /// One `hopN.pcapng` per hop is written here (created if missing).
    pub dir: PathBuf,
    /// Bytes kept of each packet (its IP header first).
    pub snap: u32,
    /// A file stops taking packets at this size.
    pub max_bytes: u64,
}

/// Bytes kept of each packet unless asked otherwise: all of it.
pub const DEFAULT_SNAP: u32 = 65_535;
/// A file's size limit unless asked otherwise: 1 GB.
pub const DEFAULT_MAX_BYTES: u64 = 1_000_000_000;

impl PcapSpec {
    /// Whole packets into `dir`, up to [`DEFAULT_MAX_BYTES`] a file.
    pub fn whole(dir: PathBuf) -> PcapSpec {
        PcapSpec { dir, snap: DEFAULT_SNAP, max_bytes: DEFAULT_MAX_BYTES }
    }
}

/// The bytes of a packet as it arrived at the link.
#[derive(Clone, Debug)]
pub struct Snap {
    /// When it arrived.
    pub t: aerolink_link::Instant,
    pub hop: u16,
    pub dir: Dir,
    pub id: u64,
    /// Its length on the wire.
    pub len: u32,
    /// Up to the capture's snap length.
    pub bytes: Vec<u8>,
}

/// What a capture wrote.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PcapReport {
    pub files: Vec<PathBuf>,
    /// Packet records written (a departed packet has two: entering and
    /// leaving).
    pub records: u64,
    /// Records left out once a file reached its size limit.
    pub not_captured: u64,
}

const LINKTYPE_RAW: u16 = 101;

/// Interface of a direction and side in each hop's file.
fn interface(dir: Dir, leaving: bool) -> u32 {
    match dir {
        Dir::Up => leaving as u32,
        Dir::Down => 2 + leaving as u32,
    }
}

fn option(out: &mut Vec<u8>, code: u16, value: &[u8]) {
    out.extend_from_slice(&code.to_le_bytes());
    out.extend_from_slice(&(value.len() as u16).to_le_bytes());
    out.extend_from_slice(value);
    out.resize(out.len().next_multiple_of(4), 0);
}

/// A block: type, total length, body (padded), total length again.
fn block(w: &mut impl Write, kind: u32, body: &[u8]) -> std::io::Result<u64> {
    let total = 12 + body.len() as u32;
    w.write_all(&kind.to_le_bytes())?;
    w.write_all(&total.to_le_bytes())?;
    w.write_all(body)?;
    w.write_all(&total.to_le_bytes())?;
    Ok(total as u64)
}

/// The section header and the four interfaces of one hop's file.
fn header(w: &mut impl Write, hop: u16, snap: u32) -> std::io::Result<u64> {
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    option(&mut shb, 4, format!("aerolink {}", env!("CARGO_PKG_VERSION")).as_bytes());
    option(&mut shb, 0, &[]);
    let mut n = block(w, 0x0A0D_0D0A, &shb)?;
    for (dir, what) in [(Dir::Up, "aircraft → ground"), (Dir::Down, "ground → aircraft")] {
        for leaving in [false, true] {
            let mut idb = Vec::new();
            idb.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
            idb.extend_from_slice(&0u16.to_le_bytes());
            idb.extend_from_slice(&snap.to_le_bytes());
            let side = if leaving { "out" } else { "in" };
            option(&mut idb, 2, format!("hop{hop}-{}-{side}", dir.as_str()).as_bytes());
            let desc = if leaving { "leaving the link, at the time it was due at the far end" } else { "entering the link, with its fate as the packet's comment" };
            option(&mut idb, 3, format!("hop {hop}, {} ({what}): {desc}", dir.as_str()).as_bytes());
            // if_tsresol: 10^-9 s.
            option(&mut idb, 9, &[9]);
            option(&mut idb, 0, &[]);
            n += block(w, 0x0000_0001, &idb)?;
        }
    }
    Ok(n)
}

/// An enhanced packet block: `t_ns` since the Unix epoch, the comment.
fn packet(w: &mut impl Write, iface: u32, t_ns: u64, len: u32, data: &[u8], comment: &str, inbound: bool) -> std::io::Result<u64> {
    let mut epb = Vec::with_capacity(32 + data.len() + comment.len());
    epb.extend_from_slice(&iface.to_le_bytes());
    epb.extend_from_slice(&((t_ns >> 32) as u32).to_le_bytes());
    epb.extend_from_slice(&(t_ns as u32).to_le_bytes());
    epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
    epb.extend_from_slice(&len.to_le_bytes());
    epb.extend_from_slice(data);
    epb.resize(epb.len().next_multiple_of(4), 0);
    option(&mut epb, 1, comment.as_bytes());
    // epb_flags: direction inbound (01) or outbound (10).
    option(&mut epb, 2, &(if inbound { 1u32 } else { 2u32 }).to_le_bytes());
    option(&mut epb, 0, &[]);
    block(w, 0x0000_0006, &epb)
}

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

fn dropped(r: DropReason) -> &'static str {
    match r {
        DropReason::Loss => "dropped: loss",
        DropReason::Queue => "dropped: queue",
        DropReason::Outage => "dropped: outage",
        DropReason::Arq => "dropped: ARQ gave up",
    }
}

struct HopFile {
    w: BufWriter<File>,
    written: u64,
}

/// The capture of a lab: a file per hop and the packets in flight.
pub struct Capture {
    spec: PcapSpec,
    /// Wall-clock time of the run's start, ns since the Unix epoch.
    epoch_ns: u64,
    hops: Vec<HopFile>,
    /// Packets in the link: arrival time and bytes, by hop, direction, id.
    flying: HashMap<(u16, Dir, u64), (u64, Snap)>,
    report: PcapReport,
}

impl Capture {
    /// Creates `spec.dir` and a file per hop with its header.
    pub fn create(spec: &PcapSpec, hops: usize, epoch_ns: u64) -> std::io::Result<Capture> {
        std::fs::create_dir_all(&spec.dir)?;
        let mut c = Capture { spec: spec.clone(), epoch_ns, hops: Vec::new(), flying: HashMap::new(), report: PcapReport::default() };
        for hop in 0..hops {
            let path = file(&spec.dir, hop);
            let mut w = BufWriter::with_capacity(1 << 20, File::create(&path)?);
            let written = header(&mut w, hop as u16, spec.snap)?;
            c.hops.push(HopFile { w, written });
            c.report.files.push(path);
        }
        Ok(c)
    }

    fn write(&mut self, hop: u16, iface: u32, t_ns: u64, snap: &Snap, comment: &str) -> std::io::Result<()> {
        let Some(f) = self.hops.get_mut(hop as usize) else { return Ok(()) };
        if f.written >= self.spec.max_bytes {
            self.report.not_captured += 1;
            return Ok(());
        }
        f.written += packet(&mut f.w, iface, self.epoch_ns + t_ns, snap.len, &snap.bytes, comment, iface.is_multiple_of(2))?;
        self.report.records += 1;
        Ok(())
    }

    /// Takes a round's arrivals and events: a packet is written when its
    /// fate is known.
    pub fn take(&mut self, events: &[Event], snaps: Vec<Snap>) -> std::io::Result<()> {
        for s in snaps {
            self.flying.insert((s.hop, s.dir, s.id), (s.t.0, s));
        }
        for e in events {
            match e.kind {
                EventKind::Arrive | EventKind::Note(_) => {}
                EventKind::Depart { queue_ns, delay_ns } => {
                    let Some((at, s)) = self.flying.remove(&(e.hop, e.dir, e.id)) else { continue };
                    self.write(e.hop, interface(e.dir, false), at, &s, &format!("departed: queued {}, one-way delay {}", ms(queue_ns), ms(delay_ns)))?;
                    self.write(e.hop, interface(e.dir, true), e.t.0, &s, &format!("one-way delay {}, queued {}", ms(delay_ns), ms(queue_ns)))?;
                }
                EventKind::Drop(r) => {
                    let Some((at, s)) = self.flying.remove(&(e.hop, e.dir, e.id)) else { continue };
                    self.write(e.hop, interface(e.dir, false), at, &s, dropped(r))?;
                }
            }
        }
        Ok(())
    }

    /// Writes what is still in the link, flushes, and says what it wrote.
    pub fn finish(mut self) -> std::io::Result<PcapReport> {
        let mut left: Vec<(u64, Snap)> = self.flying.drain().map(|(_, v)| v).collect();
        left.sort_by_key(|(t, s)| (*t, s.id));
        for (at, s) in left {
            self.write(s.hop, interface(s.dir, false), at, &s, "still in the link at the end")?;
        }
        for f in &mut self.hops {
            f.w.flush()?;
        }
        Ok(self.report)
    }
}

/// Where hop `hop`'s capture goes.
pub fn file(dir: &Path, hop: usize) -> PathBuf {
    dir.join(format!("hop{hop}.pcapng"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aerolink_link::Instant;

    fn ev(t: u64, dir: Dir, id: u64, kind: EventKind) -> Event {
        Event { t: Instant(t), hop: 0, dir, id, bytes: 20, kind }
    }

    /// Walks the blocks of a pcapng file: (type, body).
    fn blocks(b: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let kind = u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
            let total = u32::from_le_bytes(b[i + 4..i + 8].try_into().unwrap()) as usize;
            assert_eq!(total % 4, 0);
            assert_eq!(u32::from_le_bytes(b[i + total - 4..i + total].try_into().unwrap()) as usize, total, "trailing length");
            out.push((kind, b[i + 8..i + total - 4].to_vec()));
            i += total;
        }
        out
    }

    #[test]
    fn fates_become_comments_on_the_entering_side_and_departures_leave() {
        let dir = std::env::temp_dir().join(format!("aerolink-pcap-unit-{}", std::process::id()));
        let spec = PcapSpec { dir: dir.clone(), snap: 65535, max_bytes: u64::MAX };
        let mut c = Capture::create(&spec, 1, 1_000_000_000).unwrap();
        let snap = |id: u64| Snap { t: Instant(10 * (id + 1)), hop: 0, dir: Dir::Up, id, len: 20, bytes: vec![0x45; 20] };
        let evs = [ev(10, Dir::Up, 0, EventKind::Arrive), ev(20, Dir::Up, 1, EventKind::Arrive), ev(30, Dir::Up, 2, EventKind::Arrive)];
        c.take(&evs, vec![snap(0), snap(1), snap(2)]).unwrap();
        let evs = [ev(500, Dir::Up, 0, EventKind::Depart { queue_ns: 5, delay_ns: 490 }), ev(40, Dir::Up, 1, EventKind::Drop(DropReason::Loss))];
        c.take(&evs, vec![]).unwrap();
        let r = c.finish().unwrap();
        assert_eq!(r.records, 4);
        let b = std::fs::read(file(&dir, 0)).unwrap();
        let bl = blocks(&b);
        assert_eq!(bl.iter().map(|b| b.0).collect::<Vec<_>>(), vec![0x0A0D0D0A, 1, 1, 1, 1, 6, 6, 6, 6]);
        let text = |body: &[u8]| String::from_utf8_lossy(body).into_owned();
        assert!(text(&bl[5].1).contains("departed: queued 0.000 ms, one-way delay 0.000 ms"));
        // Interface 1 (up, leaving), stamped at the due time.
        assert_eq!(u32::from_le_bytes(bl[6].1[0..4].try_into().unwrap()), 1);
        let lo = u32::from_le_bytes(bl[6].1[8..12].try_into().unwrap()) as u64;
        assert_eq!(lo, (1_000_000_000u64 + 500) & 0xffff_ffff);
        assert!(text(&bl[7].1).contains("dropped: loss"));
        assert!(text(&bl[8].1).contains("still in the link at the end"));
        // A limit counts what it leaves out.
        let spec = PcapSpec { max_bytes: 1, ..spec };
        let mut c = Capture::create(&spec, 1, 0).unwrap();
        c.take(&[ev(10, Dir::Up, 0, EventKind::Arrive)], vec![snap(0)]).unwrap();
        c.take(&[ev(20, Dir::Up, 0, EventKind::Drop(DropReason::Queue))], vec![]).unwrap();
        assert_eq!(c.finish().unwrap(), PcapReport { files: vec![file(&dir, 0)], records: 0, not_captured: 1 });
        let _ = std::fs::remove_dir_all(&dir);
    }
}
