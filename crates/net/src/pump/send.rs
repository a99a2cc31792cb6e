//! Handing frames to the far device: what is due on one side in a round
//! (a burst's segments as one frame), its drops and notes counted, and the
//! reports finished when the pump stops.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use aerolink_link::Instant;
use hdrhistogram::Histogram;

use super::*;
use crate::log::{Event, EventKind};

/// Writes one frame to `dst`; a far side that is gone stops the pump.
#[inline]
fn send<D: Device>(dst: &D, frame: &[u8], rep: &mut PumpReport, stop: &AtomicBool) {
    if let Err(e) = dst.write(frame) {
        // The far side is gone (teardown), or the kernel refused this one
        // frame: count it and go on.
        if e.raw_os_error() == Some(libc::EBADFD) {
            rep.error = Some(format!("the TUN device {} was removed under the link", dst.name()));
            stop.store(true, Ordering::Relaxed);
        } else if e.raw_os_error() == Some(libc::EBADF) {
            rep.error = Some(format!("write {}: {e}", dst.name()));
            stop.store(true, Ordering::Relaxed);
        } else {
            rep.refused += 1;
            if rep.refused_why.is_none() {
                rep.refused_why = Some(format!("write {} ({} bytes): {e}", dst.name(), frame.len()));
            }
        }
    }
}

/// Writes consecutive segments of one burst, all due by `handed`, as one
/// frame: the burst as read when it is all of it, else rewritten
/// ([`Burst::write_run`]). Each segment's lateness is recorded.
#[inline]
fn send_run<D: Device>(dst: &D, handed: Instant, stop: &AtomicBool, rep: &mut PumpReport, late: &mut Histogram<u64>, run: Run, bufs: &mut Buffers) {
    for due in bufs.dues.drain(..) {
        late.saturating_record(handed.0.saturating_sub(due.0).max(1));
    }
    let c = &*run.cut;
    if run.first == 0 && run.end as usize == c.burst.count() {
        send(dst, &c.buf[..c.len], rep, stop);
    } else {
        c.burst.write_run(&c.buf[..c.len], run.first as usize, run.end as usize, &mut bufs.out);
        send(dst, &bufs.out, rep, stop);
    }
    // The last run of a burst gives its buffer back.
    if let Ok(c) = Arc::try_unwrap(run.cut) {
        bufs.keep(c.buf);
    }
}

/// The lateness quantiles, the thread's CPU time split between the
/// directions by packets (an idle hop's evenly, not lost), and the link's
/// end (`now`), which closes the channels still down.
pub(super) fn finish_reports(reps: &mut [PumpReport; 2], late: &[Histogram<u64>; 2], cpu: f64, now: aerolink_link::Instant) {
    for (rep, late) in reps.iter_mut().zip(late.iter()) {
        rep.ended_s = now.as_secs_f64();
        for (i, from) in rep.down_from.iter_mut().enumerate() {
            if let Some(t) = from.take() {
                rep.channel_down_spans.push((i as u16, t.as_secs_f64(), rep.ended_s.max(t.as_secs_f64())));
            }
        }
        if !late.is_empty() {
            rep.lateness_us_p50 = late.value_at_quantile(0.5) as f64 / 1e3;
            rep.lateness_us_p99 = late.value_at_quantile(0.99) as f64 / 1e3;
            rep.lateness_us_max = late.max() as f64 / 1e3;
        }
    }
    // An idle hop's time (no packet out) is split evenly, not lost.
    let total = reps[0].packets_out + reps[1].packets_out;
    for rep in reps.iter_mut() {
        rep.cpu_s = if total == 0 { cpu / 2.0 } else { cpu * rep.packets_out as f64 / total as f64 };
    }
}

/// What one round of one side writes to: its report and lateness, the
/// buffers, and the events and notes to log.
pub(super) struct Out<'a> {
    pub rep: &'a mut PumpReport,
    pub late: &'a mut Histogram<u64>,
    pub bufs: &'a mut Buffers,
    pub events: &'a mut Vec<Event>,
    pub notes: &'a mut Vec<aerolink_link::StageEvent>,
    pub logging: bool,
    pub hop: u16,
}

/// One side's round: sends what is due (consecutive segments of one burst
/// due by now as one frame), counts its drops, takes its link's notes;
/// whether a channel's capacity changed.
#[inline]
pub(super) fn send_due<D: Device, T: Now>(side: &mut Side<D>, timer: &T, stop: &AtomicBool, o: Out<'_>) -> bool {
    let Out { rep, late, bufs, events, notes, logging, hop } = o;
    let mut capacity_changed = false;
    // 2. Send what is due. Consecutive segments of one burst
    //    due by now leave as one frame.
    let now = timer.now();
    let mut run: Option<Run> = None;
    while let Some(p) = side.pipeline.dequeue(now) {
        rep.packets_out += 1;
        rep.bytes_out += p.meta.len as u64;
        if logging {
            events.push(Event {
                t: p.meta.due,
                hop,
                dir: side.dir,
                id: p.meta.id,
                bytes: p.meta.len,
                kind: EventKind::Depart { queue_ns: (p.meta.tx_start - p.meta.arrived).0, delay_ns: (p.meta.due - p.meta.arrived).0 },
            });
        }
        match p.payload {
            Frame::Segment { cut, seg } => {
                match &mut run {
                    Some(r) if Arc::ptr_eq(&r.cut, &cut) && r.end == seg => r.end += 1,
                    _ => {
                        if let Some(r) = run.take() {
                            send_run(&*side.dst, timer.now(), stop, rep, late, r, bufs);
                        }
                        run = Some(Run { cut, first: seg, end: seg + 1 });
                    }
                }
                bufs.dues.push(p.meta.due);
            }
            Frame::Whole { buf, len } => {
                if let Some(r) = run.take() {
                    send_run(&*side.dst, timer.now(), stop, rep, late, r, bufs);
                }
                // The departure is the moment the packet is
                // handed to the kernel; what the receiving stack
                // then does inside write() is the receiver's
                // time, not the link's.
                let handed = timer.now();
                late.saturating_record(handed.0.saturating_sub(p.meta.due.0).max(1));
                send(&*side.dst, &buf[..len], rep, stop);
                bufs.keep(buf);
            }
        }
    }
    if let Some(r) = run.take() {
        send_run(&*side.dst, timer.now(), stop, rep, late, r, bufs);
    }
    for d in side.pipeline.take_drops() {
        match d.reason {
            aerolink_link::DropReason::Queue => rep.dropped_queue += 1,
            aerolink_link::DropReason::Loss => rep.dropped_loss += 1,
            aerolink_link::DropReason::Outage => rep.dropped_outage += 1,
            aerolink_link::DropReason::Arq => rep.dropped_arq += 1,
        }
        if logging {
            events.push(Event { t: d.at, hop, dir: side.dir, id: d.meta.id, bytes: d.meta.len, kind: EventKind::Drop(d.reason) });
        }
    }
    // What the link's mechanisms did (super-frames, channel
    // drops, retransmissions): taken every round, kept if logged.
    side.pipeline.take_events(notes);
    for n in notes.drain(..) {
        capacity_changed |= rep.note(n.note, n.at);
        if logging {
            events.push(Event::note(n.at, hop, side.dir, n.note));
        }
    }
    capacity_changed
}
