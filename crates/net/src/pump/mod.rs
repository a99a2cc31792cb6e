//! The packet pump: one thread per direction of a hop.
//!
//! Read every packet waiting on the source TUN, hand it to the direction's
//! [`Pipeline`] (an offloaded burst as one packet per segment, unless the
//! link passes it whole: [`crate::gso`]), write out what the pipeline says
//! is due (consecutive segments of a burst as one frame), then sleep until
//! the pipeline's next wake-up or the next packet, whichever comes first.
//! Nothing here decides a packet's fate; the pump only keeps time and moves
//! bytes.
//!
//! The pump is generic over its [`Device`] and its [`Timer`]: on a lab it
//! runs on TUN devices with `ppoll` sleeps (nanosecond timeouts, 1 ns timer
//! slack; [`real`]); in tests it runs on in-memory devices in simulated time
//! ([`sim`]), so its reading, batching, wake-up choice, lateness statistics
//! and drop accounting are checked exactly, without root.

mod mode;
pub mod real;
mod send;
pub mod shared;
pub mod sim;

pub use mode::PumpMode;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use aerolink_link::{Instant, Pipeline};
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::gso::Burst;
use crate::log::{Dir, Event, EventKind};
use crate::tun::VNET_HDR_LEN;
use send::{finish_reports, send_due, Out};

pub use real::{thread_cpu_seconds, Clock, PollTimer};

/// Where the pump reads and writes frames: a virtio-net header of
/// [`VNET_HDR_LEN`] bytes, then the IP packet (or an offloaded burst).
pub trait Device: Send + Sync {
    /// One frame, or `Ok(None)` when none is waiting.
    fn read(&self, buf: &mut [u8]) -> std::io::Result<Option<usize>>;
    /// Writes one frame.
    fn write(&self, buf: &[u8]) -> std::io::Result<()>;
    /// The device's name, for errors.
    fn name(&self) -> &str;
}

/// The pump's clock: what a round needs to stamp arrivals and departures.
pub trait Now {
    /// Time since the run began.
    fn now(&self) -> Instant;
}

/// The sleeps of a pump with a thread of its own ([`Pump::run`]); a hop
/// driven by a shared loop ([`shared`]) has only its [`Now`].
pub trait Timer: Now + Send {
    /// Prepares the pump's thread (timer slack, priority); whether it now
    /// runs with real-time priority.
    fn prepare(&mut self) -> bool {
        false
    }
    /// Sleeps `timeout_ns` (`None`: no limit) or until a frame or the stop
    /// signal arrives: whether the whole time passed, and which of the two
    /// sides' sources has a frame waiting.
    fn wait(&mut self, timeout_ns: Option<u64>) -> Woken;
    /// One round of busy-waiting before a departure.
    fn spin(&mut self);
    /// CPU time the pump's thread has used, seconds.
    fn cpu_seconds(&self) -> f64 {
        0.0
    }
}

/// How a [`Timer::wait`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Woken {
    /// The whole time passed (no frame, no stop signal).
    pub timed_out: bool,
    /// Which side's source device has a frame to read.
    pub readable: [bool; 2],
}

/// What the pipeline carries for each packet: its bytes as read from the
/// TUN device (virtio header included), or its place in an offloaded burst
/// cut into segments for a shaped link.
pub enum Frame {
    /// A packet, or a burst that passes the link whole.
    Whole { buf: Vec<u8>, len: usize },
    /// Segment `seg` of a burst ([`crate::gso`]).
    Segment { cut: Arc<Cut>, seg: u16 },
}

/// An offloaded burst whose segments travel the link one by one.
pub struct Cut {
    buf: Vec<u8>,
    len: usize,
    burst: Burst,
}

/// Consecutive segments of one burst, due by now, to be written together.
struct Run {
    cut: Arc<Cut>,
    first: u16,
    end: u16,
}

/// Frames up to this size (virtio header included) are copied out of a
/// 64 KB read buffer into a buffer of their own, so a queue of small
/// packets does not hold 64 KB each.
const SMALL_FRAME: usize = 2048;

/// Bursts up to this size are copied out of their read buffer too.
const SHORT_BURST: usize = 16_384;

/// What one direction did, for the run summary and the benchmark.
#[derive(Debug, Default, Clone, Serialize)]
pub struct PumpReport {
    pub hop: u16,
    pub dir: Option<Dir>,
    pub packets_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    pub dropped_outage: u64,
    /// Given up by link-layer ARQ after its last retransmission.
    pub dropped_arq: u64,
    /// Link-layer ARQ retransmissions.
    pub retransmissions: u64,
    /// How late packets were written compared with their due time, µs.
    pub lateness_us_p50: f64,
    pub lateness_us_p99: f64,
    pub lateness_us_max: f64,
    /// Whether the thread ran with real-time priority.
    pub realtime: bool,
    /// CPU time this thread used, seconds.
    pub cpu_s: f64,
    /// Frames the kernel refused to take from the pump (lost): none unless
    /// something is wrong, with the first refusal's error.
    pub refused: u64,
    pub refused_why: Option<String>,
    /// Fatal I/O error that stopped this direction, if any.
    pub error: Option<String>,
    /// Bonded channels ([`aerolink_link::Note::Channel`]): call drops during
    /// the run per channel (one found down at the start is not counted), and
    /// each completed redial's time from drop to back, seconds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub channel_drops: Vec<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redials_s: Vec<f64>,
    /// Handovers (`handover`): each phase reached, by handover index, in
    /// seconds since the link started.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub handovers: Vec<(u16, aerolink_link::handover::Phase, f64)>,
    /// Bandwidth on demand (`dama`): the capacity the super-frames that
    /// ended allocated, and the bytes the terminals sent in them.
    #[serde(skip_serializing_if = "is_zero")]
    pub allocated_bytes: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub allocated_used_bytes: u64,
    /// Bonded channels: each time a channel was down, `(channel, from,
    /// to)` in seconds since the link started — one down at the start from
    /// 0, one still down when the link stopped until then ([`Self::ended_s`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub channel_down_spans: Vec<(u16, f64, f64)>,
    /// When the link stopped, seconds since it started.
    pub ended_s: f64,
    /// Working state: when each channel that dropped during the run went
    /// down (back: `None`), and each channel down now (one found down at
    /// the start too).
    #[serde(skip)]
    pub(crate) down_since: Vec<Option<aerolink_link::Instant>>,
    #[serde(skip)]
    pub(crate) down_from: Vec<Option<aerolink_link::Instant>>,
}

impl PumpReport {
    /// Counts what a stage did (retransmissions, channel drops, handover
    /// phases); true when the link's capacity changed.
    fn note(&mut self, note: aerolink_link::Note, at: aerolink_link::Instant) -> bool {
        match note {
            aerolink_link::Note::Retransmit { .. } => self.retransmissions += 1,
            aerolink_link::Note::Channel { channel, up } => return self.channel(channel, up, at),
            aerolink_link::Note::Handover { index, phase } => self.handovers.push((index, phase, at.as_secs_f64())),
            aerolink_link::Note::Superframe { allocated_bytes, used_bytes, .. } => {
                self.allocated_bytes += allocated_bytes;
                self.allocated_used_bytes += used_bytes;
            }
        }
        false
    }

    /// Counts a bonded channel going down (`up = false`) or coming back;
    /// either changes the link's capacity (true).
    fn channel(&mut self, channel: u16, up: bool, at: aerolink_link::Instant) -> bool {
        let i = channel as usize;
        if self.channel_drops.len() <= i {
            self.channel_drops.resize(i + 1, 0);
            self.down_since.resize(i + 1, None);
            self.down_from.resize(i + 1, None);
        }
        match (up, self.down_from[i]) {
            (true, Some(t)) => {
                self.channel_down_spans.push((channel, t.as_secs_f64(), at.as_secs_f64()));
                self.down_from[i] = None;
            }
            (false, None) => self.down_from[i] = Some(at),
            _ => {}
        }
        match (up, self.down_since[i].take()) {
            (true, Some(t)) => self.redials_s.push((at - t).as_secs_f64()),
            (false, _) if at.0 > 0 => {
                self.channel_drops[i] += 1;
                self.down_since[i] = Some(at);
            }
            _ => {}
        }
        true
    }
}

/// One direction of a hop, as the pump sees it.
pub struct Side<D> {
    pub dir: Dir,
    pub src: Arc<D>,
    pub dst: Arc<D>,
    pub pipeline: Pipeline<Frame>,
}

/// The pump of one hop: both directions on one thread, so that at most one
/// thread per hop is ever polling.
pub struct Pump<D, T> {
    pub hop: u16,
    pub sides: [Side<D>; 2],
    pub timer: T,
    pub stop: Arc<AtomicBool>,
    pub log: Option<Sender<crate::sink::Batch>>,
    /// When capturing (`--pcap`): how many bytes of each arriving packet
    /// go to the sink with its events.
    pub snap: Option<u32>,
    /// Buffer size per packet: the MTU plus headers, or 64 KB with
    /// segmentation offload.
    pub buf_len: usize,
    /// Upper bound of the polling margin before a departure (ns); 0 turns
    /// polling off.
    pub max_spin_ns: u64,
    /// How late a departure may be (ns, a high quantile): the pump polls
    /// only for the part of its timer's lateness beyond this, so a machine
    /// whose wake-ups are late by less costs no polling at all.
    pub lateness_target_ns: u64,
    /// The link monitor's file (the lab writes it first): the hop's capacity
    /// per direction, rewritten whenever a channel changes (bonded channels dropping and coming back), for
    /// gateway transports that follow it ([`crate::monitor`]).
    pub monitor: Option<std::path::PathBuf>,
}

/// Default for [`Pump::max_spin_ns`]; `AEROLINK_SPIN_US` overrides it (0
/// turns polling off, trading departure-time precision for CPU).
fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub fn default_spin_ns() -> u64 {
    if std::env::var("AEROLINK_REALTIME").map(|v| v == "1").unwrap_or(false) {
        return 0;
    }
    std::env::var("AEROLINK_SPIN_US").ok().and_then(|v| v.parse::<u64>().ok()).map(|us| us * 1000).unwrap_or(DEFAULT_MAX_SPIN_NS)
}

pub const DEFAULT_MAX_SPIN_NS: u64 = 150_000;

/// Default for [`Pump::lateness_target_ns`]: 50 µs, which keeps the 99th
/// percentile of departure-time error under 100 µs with room for the
/// machine's noise; `AEROLINK_LATENESS_US` overrides it (0: poll for the
/// whole learnt lateness, the most precise and the most CPU).
pub fn default_lateness_target_ns() -> u64 {
    std::env::var("AEROLINK_LATENESS_US").ok().and_then(|v| v.parse::<u64>().ok()).map(|us| us * 1000).unwrap_or(DEFAULT_LATENESS_TARGET_NS)
}

pub const DEFAULT_LATENESS_TARGET_NS: u64 = 50_000;

const MAX_READS_PER_ROUND: usize = 128;

/// Learns how late this machine's timer wake-ups are and polls, before
/// each departure, for the part of that lateness beyond the target,
/// instead of sleeping through it. Polling costs a core while it lasts and
/// a wake-up costs tens of µs of CPU on a virtual machine, so the pump
/// polls only what the target needs: where wake-ups are late by less than
/// the target (bare metal), never; on a virtual machine whose wake-ups are
/// 30–100 µs late, the last few tens of µs.
struct SpinMargin {
    /// Recent oversleeps, ns; the margin comes from a high quantile.
    recent: [u64; 64],
    next: usize,
    margin: u64,
    max: u64,
    target: u64,
}

impl SpinMargin {
    fn new(max: u64, target: u64) -> Self {
        // Until the first 64 wake-ups are learnt, poll as if they were late
        // by half the bound, target or not.
        SpinMargin { recent: [max / 2; 64], next: 0, margin: max / 2, max, target }
    }
    fn record(&mut self, oversleep: u64) {
        self.recent[self.next] = oversleep.min(self.max);
        self.next = (self.next + 1) % self.recent.len();
        if self.next == 0 {
            let mut v = self.recent;
            v.sort_unstable();
            // The 97th percentile plus 10 µs of headroom, less what the
            // target allows.
            self.margin = (v[61] + 10_000).saturating_sub(self.target).min(self.max);
        }
    }
}

/// The pump's buffers, reused from round to round.
struct Buffers {
    /// The size of a read buffer ([`Pump::buf_len`]).
    buf_len: usize,
    /// Read buffers.
    big: Vec<Vec<u8>>,
    /// Buffers of [`SMALL_FRAME`] bytes for small packets of a lab whose
    /// read buffers are 64 KB.
    small: Vec<Vec<u8>>,
    /// Due times of the segments of the run being gathered.
    dues: Vec<Instant>,
    /// A run of segments, rewritten as one frame.
    out: Vec<u8>,
}

impl Buffers {
    /// Keeps a written frame's buffer for a later read (up to a bound).
    fn keep(&mut self, buf: Vec<u8>) {
        // Kept: enough 1500-byte buffers for a queue's worth of packets,
        // and a few 64 KB ones (a read needs one; bursts in flight hold
        // theirs until their last segment leaves).
        let (pool, most) = if buf.len() == SMALL_FRAME {
            (&mut self.small, 4096)
        } else if buf.len() != self.buf_len {
            return;
        } else if self.buf_len > SMALL_FRAME {
            (&mut self.big, 64)
        } else {
            (&mut self.big, 4096)
        };
        if pool.len() < most {
            pool.push(buf);
        }
    }
}

/// A pump's working state, kept from round to round: its reports and
/// lateness histograms, buffers, and the events waiting to be logged.
pub struct State {
    reps: [PumpReport; 2],
    late: [Histogram<u64>; 2],
    bufs: Buffers,
    /// Whether each side passes offloaded bursts whole.
    whole: [bool; 2],
    events: Vec<Event>,
    snaps: Vec<crate::pcap::Snap>,
    notes: Vec<aerolink_link::StageEvent>,
}

impl<D: Device, T: Now> Pump<D, T> {
    /// The state a pump starts from; `realtime`: whether its thread runs
    /// with real-time priority.
    pub fn begin(&self, realtime: bool) -> State {
        State {
            reps: [0, 1].map(|i| PumpReport { hop: self.hop, dir: Some(self.sides[i].dir), realtime, ..Default::default() }),
            late: [0, 1].map(|_| Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")),
            bufs: Buffers { buf_len: self.buf_len, big: Vec::new(), small: Vec::new(), dues: Vec::new(), out: Vec::new() },
            whole: [0, 1].map(|i| self.sides[i].pipeline.is_aggregate_safe()),
            events: Vec::new(),
            snaps: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// One round: takes in what `readable` says may wait on each side,
    /// sends what is due, rewrites the monitor if a channel changed, hands
    /// the round's events to the log; when the pipelines next need the
    /// pump (`None`: only when a packet arrives).
    pub fn round(&mut self, st: &mut State, readable: [bool; 2]) -> Option<Instant> {
        let State { reps, late, bufs, whole, events, snaps, notes } = st;
        self.take_in(reps, readable, *whole, bufs, events, snaps);
        let logging = self.log.is_some();
        let hop = self.hop;
        // A channel went down or came back this round: rewrite the monitor.
        let mut capacity_changed = false;
        for ((side, rep), late) in self.sides.iter_mut().zip(reps.iter_mut()).zip(late.iter_mut()) {
            let out = Out { rep, late, bufs, events, notes, logging, hop };
            capacity_changed |= send_due(side, &self.timer, &self.stop, out);
        }
        if let (Some(path), true) = (&self.monitor, capacity_changed) {
            let cap = |i: usize| self.sides[i].pipeline.capacity_bps().unwrap_or(f64::INFINITY);
            // A monitor that cannot be written loses the monitor, never
            // the link.
            let _ = crate::monitor::write(path, cap(0), cap(1));
        }
        if let (Some(tx), false) = (&self.log, events.is_empty() && snaps.is_empty()) {
            // A closed log only loses the log, never the link.
            let _ = tx.send(crate::sink::Batch { events: std::mem::take(events), snaps: std::mem::take(snaps) });
        }
        match (self.sides[0].pipeline.next_wakeup(), self.sides[1].pipeline.next_wakeup()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The two directions' reports when the pump stops; `cpu`: the CPU
    /// time it used, seconds.
    pub fn finish(&self, mut st: State, cpu: f64) -> [PumpReport; 2] {
        finish_reports(&mut st.reps, &st.late, cpu, self.timer.now());
        st.reps
    }

    /// 1. Takes in what is waiting on each side (bounded, so departures
    ///    are not starved by a flood); a source the last wait saw empty is
    ///    not asked again. With logging or capture, each arrival's event
    ///    (and bytes) go into `events` (`snaps`).
    fn take_in(&mut self, reps: &mut [PumpReport; 2], readable: [bool; 2], whole: [bool; 2], bufs: &mut Buffers, events: &mut Vec<Event>, snaps: &mut Vec<crate::pcap::Snap>) {
        let hop = self.hop;
        for (((side, rep), readable), whole) in self.sides.iter_mut().zip(reps.iter_mut()).zip(readable).zip(whole) {
            // 1. Take in what is waiting (bounded, so departures are not
            //    starved by a flood); a source the wait saw empty is not
            //    asked again.
            if !readable {
                continue;
            }
            for _ in 0..MAX_READS_PER_ROUND {
                let mut buf = bufs.big.pop().unwrap_or_else(|| vec![0u8; self.buf_len]);
                match side.src.read(&mut buf) {
                    Ok(Some(n)) if n > VNET_HDR_LEN => {
                        let now = self.timer.now();
                        // A burst through a shaping link: one packet per
                        // segment, sized as on the wire.
                        if let Some(burst) = (!whole).then(|| Burst::parse(&buf[..n])).flatten() {
                            // A short burst gets a buffer of its size, so
                            // a queue of them does not hold 64 KB each.
                            let cut = if n <= SHORT_BURST {
                                let short = buf[..n].to_vec();
                                bufs.big.push(buf);
                                Arc::new(Cut { buf: short, len: n, burst })
                            } else {
                                Arc::new(Cut { buf, len: n, burst })
                            };
                            let user = passenger(&cut.buf[VNET_HDR_LEN..n], side.dir);
                            for seg in 0..burst.count() {
                                let bytes = burst.segment_len(seg);
                                let id = side.pipeline.enqueue_for(now, bytes, user, Frame::Segment { cut: cut.clone(), seg: seg as u16 });
                                rep.packets_in += 1;
                                if self.log.is_some() {
                                    events.push(Event { t: now, hop, dir: side.dir, id, bytes, kind: EventKind::Arrive });
                                }
                            }
                            continue;
                        }
                        // The packet's bytes for the capture, before
                        // the buffer goes into the link.
                        let snapped = self.snap.map(|s| buf[VNET_HDR_LEN..n.min(VNET_HDR_LEN + s as usize)].to_vec());
                        let user = passenger(&buf[VNET_HDR_LEN..n], side.dir);
                        let frame = if n <= SMALL_FRAME && buf.len() > SMALL_FRAME {
                            let mut small = bufs.small.pop().unwrap_or_else(|| vec![0u8; SMALL_FRAME]);
                            small[..n].copy_from_slice(&buf[..n]);
                            bufs.big.push(buf);
                            Frame::Whole { buf: small, len: n }
                        } else {
                            Frame::Whole { buf, len: n }
                        };
                        let bytes = (n - VNET_HDR_LEN) as u32;
                        let id = side.pipeline.enqueue_for(now, bytes, user, frame);
                        rep.packets_in += 1;
                        if self.log.is_some() {
                            events.push(Event { t: now, hop, dir: side.dir, id, bytes, kind: EventKind::Arrive });
                        }
                        if let Some(b) = snapped {
                            snaps.push(crate::pcap::Snap { t: now, hop, dir: side.dir, id, len: bytes, bytes: b });
                        }
                    }
                    Ok(Some(_)) => bufs.big.push(buf),
                    Ok(None) => {
                        bufs.big.push(buf);
                        break;
                    }
                    Err(e) => {
                        rep.error = Some(match e.raw_os_error() {
                            Some(libc::EBADFD) => format!("the TUN device {} was removed under the link", side.src.name()),
                            _ => format!("read {}: {e}", side.src.name()),
                        });
                        self.stop.store(true, Ordering::Relaxed);
                        break;
                    }
                }
            }
        }
    }
}

impl<D, T> Pump<D, T> {
    /// The same hop kept by another clock (a shared loop's hop has only
    /// its [`Clock`]).
    pub fn with_timer<U>(self, timer: U) -> Pump<D, U> {
        let Pump { hop, sides, timer: _, stop, log, snap, buf_len, max_spin_ns, lateness_target_ns, monitor } = self;
        Pump { hop, sides, timer, stop, log, snap, buf_len, max_spin_ns, lateness_target_ns, monitor }
    }
}

impl<D: Device, T: Timer> Pump<D, T> {
    /// Runs the pump on its own thread until the stop signal: a round,
    /// then a sleep until the next departure or the next packet, whichever
    /// comes first (the last stretch before a departure polled, as
    /// [`SpinMargin`] learns).
    pub fn run(mut self) -> [PumpReport; 2] {
        let realtime = self.timer.prepare();
        let mut st = self.begin(realtime);
        let mut spin = SpinMargin::new(self.max_spin_ns, self.lateness_target_ns);
        // Which sources may have frames: after a wait, what it saw; after a
        // round of polling or a busy round, both (a write can make the far
        // stack answer at once).
        let mut readable = [true, true];
        while !self.stop.load(Ordering::Relaxed) {
            let wake = self.round(&mut st, readable);
            let now = self.timer.now();
            readable = [true, true];
            match wake {
                Some(w) if w <= now => continue,
                // Close to a departure: poll rather than sleep.
                Some(w) if w.0 - now.0 <= spin.margin => {
                    self.timer.spin();
                    continue;
                }
                Some(w) => {
                    let sleep = w.0 - now.0 - spin.margin;
                    let woken = self.timer.wait(Some(sleep));
                    if woken.timed_out {
                        let over = self.timer.now().0.saturating_sub(now.0 + sleep);
                        spin.record(over);
                    }
                    readable = woken.readable;
                }
                None => {
                    readable = self.timer.wait(None).readable;
                }
            }
        }
        let cpu = self.timer.cpu_seconds();
        self.finish(st, cpu)
    }
}

/// The passenger a packet belongs to ([`aerolink_link::Meta::user`]): the
/// low 16 bits of its cabin-side address — the source of what goes up,
/// the destination of what comes down; 0 for what is not IP.
pub fn passenger(ip: &[u8], dir: Dir) -> u32 {
    let (v4, v6) = match dir {
        Dir::Up => (12, 8),
        Dir::Down => (16, 24),
    };
    let low16 = |at: usize| ip.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]) as u32).unwrap_or(0);
    match ip.first().map(|b| b >> 4) {
        Some(4) => low16(v4 + 2),
        Some(6) => low16(v6 + 14),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passenger_is_the_cabin_side_address() {
        // IPv4 198.18.0.11 → 198.18.2.2 (up): the source, 0x000b.
        let mut v4 = [0u8; 20];
        v4[0] = 0x45;
        v4[12..16].copy_from_slice(&[198, 18, 0, 11]);
        v4[16..20].copy_from_slice(&[198, 18, 2, 2]);
        assert_eq!(passenger(&v4, Dir::Up), 11);
        assert_eq!(passenger(&v4, Dir::Down), 0x0202);
        // IPv6 2001:2::0:0:0:0:1:d (source) → 2001:2:0:2::2.
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        v6[22..24].copy_from_slice(&[0x01, 0x0d]);
        v6[38..40].copy_from_slice(&[0, 2]);
        assert_eq!(passenger(&v6, Dir::Up), 0x010d);
        assert_eq!(passenger(&v6, Dir::Down), 2);
        assert_eq!(passenger(&[0x45, 0, 0], Dir::Up), 0, "truncated");
        assert_eq!(passenger(&[], Dir::Down), 0);
    }
}
