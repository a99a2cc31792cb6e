//! One pump loop for many hops: the event loop a fleet of links shares.
//!
//! With a thread per hop ([`super::Pump::run`]) the emulator's cost grows
//! with links: each thread sleeps and wakes for its own departures, and a
//! wake-up costs tens of µs of CPU on a virtual machine. Here one thread
//! per core drives every hop given to it: it sleeps in one `epoll_pwait2`
//! on all their TUN devices with a nanosecond timeout — the earliest
//! departure of any of them —, and when it wakes it runs a round
//! ([`super::Pump::round`]) for each hop that has a frame waiting or a
//! departure due, so departures that fall due together cost one wake-up
//! and an idle hop costs nothing. It wakes once for the departures that
//! fall due within a window after the earliest ([`coalesce_ns`], 250 µs
//! unless `AEROLINK_COALESCE_US` says otherwise): a departure is late by at
//! most the window and the timer's own lateness, never early, and a busy
//! loop wakes once per window rather than once per packet. It does not
//! poll: the window is the error a fleet is given, where a single link's
//! thread polls to stay within tens of µs.
//!
//! A loop asks for real-time (FIFO) priority, unless `AEROLINK_REALTIME=0`:
//! behind a fleet's own programs on a busy machine it would otherwise wait
//! for a core while its links' departures fall due.
//!
//! Loops start on first use, one per core, and live as long as the
//! process; a hop goes to the loop that drives the fewest ([`add`]). Its
//! lab stops it as it stops a pump thread — the shared stop flag — and
//! then [`poke`]s the loops, which finish the hops whose flag is set and
//! send their reports ([`Handle::join`]).

use std::collections::BTreeSet;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::OnceLock;

use super::{thread_cpu_seconds, Clock, Pump, PumpReport, State};
use crate::sys::{fifo_priority, tight_timer_slack};
use crate::tun::Tun;

/// A hop a shared loop drives: TUN devices and the lab's clock.
pub type SharedPump = Pump<Tun, Clock>;

/// One loop: where hops are sent, the eventfd that wakes it, how many hops
/// it drives.
struct Loop {
    tx: Sender<(SharedPump, Sender<[PumpReport; 2]>)>,
    wake_fd: RawFd,
    hops: &'static AtomicUsize,
}

static LOOPS: OnceLock<Vec<Loop>> = OnceLock::new();

/// The loop's token for its own eventfd (a hop's is its slot and side).
const WAKE: u64 = u64::MAX;

/// The process's loops, started on first use: one per core.
fn loops() -> &'static [Loop] {
    LOOPS.get_or_init(|| {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        (0..n)
            .map(|i| {
                let (tx, rx) = channel();
                // SAFETY: a plain eventfd; it lives as long as the process.
                let wake_fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
                assert!(wake_fd >= 0, "eventfd for the shared pump: {}", std::io::Error::last_os_error());
                let hops: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
                std::thread::Builder::new().name(format!("pump-loop{i}")).spawn(move || run(rx, wake_fd, hops)).expect("spawn a shared pump loop");
                Loop { tx, wake_fd, hops }
            })
            .collect()
    })
}

/// A hop given to a shared loop: its two directions' reports arrive when
/// its lab stops it.
pub struct Handle {
    reports: Receiver<[PumpReport; 2]>,
}

impl Handle {
    /// Waits for the hop's reports ([`poke`] first, with its stop flag
    /// set); `None` if its loop died.
    pub fn join(self) -> Option<[PumpReport; 2]> {
        self.reports.recv().ok()
    }
}

/// Gives `pump` to the loop that drives the fewest hops.
pub fn add(pump: SharedPump) -> Handle {
    let all = loops();
    let l = all.iter().min_by_key(|l| l.hops.load(Ordering::Relaxed)).expect("at least one loop");
    l.hops.fetch_add(1, Ordering::Relaxed);
    let (tx, reports) = channel();
    // A loop that died drops its receiver; the hop's handle then says so.
    let _ = l.tx.send((pump, tx));
    wake(l.wake_fd);
    Handle { reports }
}

/// How many shared loops run (none until a hop asks for one).
pub fn loops_running() -> usize {
    LOOPS.get().map_or(0, |l| l.len())
}

/// Wakes every loop to look at its hops' stop flags (a lab stopping).
pub fn poke() {
    if let Some(all) = LOOPS.get() {
        for l in all {
            wake(l.wake_fd);
        }
    }
}

fn wake(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writing 8 bytes to an eventfd of ours.
    unsafe {
        libc::write(fd, (&one as *const u64).cast(), 8);
    }
}

/// A hop in a loop.
struct Slot {
    pump: SharedPump,
    st: State,
    /// Its clock's start less the loop's, ns (its time + this = the loop's).
    offset: i128,
    /// Its next wake-up in the loop's time, if any.
    wake: Option<u64>,
    readable: [bool; 2],
    /// Already in this pass's list of hops to run.
    queued: bool,
    cpu_s: f64,
    reply: Sender<[PumpReport; 2]>,
}

/// The loop's working state.
struct Hops {
    epfd: RawFd,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// Every hop's next wake-up in the loop's time, with its slot.
    due: BTreeSet<(u64, usize)>,
    run: Vec<usize>,
    realtime: bool,
    count: &'static AtomicUsize,
}

impl Hops {
    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64) {
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
        // SAFETY: ev outlives the call; fd is a hop's open TUN device.
        unsafe {
            libc::epoll_ctl(self.epfd, op, fd, &mut ev);
        }
    }

    fn insert(&mut self, pump: SharedPump, reply: Sender<[PumpReport; 2]>, base: std::time::Instant) {
        let started = pump.timer.started();
        let offset = match started.checked_duration_since(base) {
            Some(d) => d.as_nanos() as i128,
            None => -(base.duration_since(started).as_nanos() as i128),
        };
        let st = pump.begin(self.realtime);
        let fds = [pump.sides[0].src.raw(), pump.sides[1].src.raw()];
        let slot = Slot { pump, st, offset, wake: None, readable: [true, true], queued: false, cpu_s: 0.0, reply };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(slot);
                i
            }
            None => {
                self.slots.push(Some(slot));
                self.slots.len() - 1
            }
        };
        for (side, fd) in fds.into_iter().enumerate() {
            self.ctl(libc::EPOLL_CTL_ADD, fd, (i as u64) << 1 | side as u64);
        }
        self.queue(i);
    }

    fn queue(&mut self, i: usize) {
        if let Some(s) = self.slots[i].as_mut().filter(|s| !s.queued) {
            s.queued = true;
            self.run.push(i);
        }
    }

    /// Runs a round of every queued hop; finishes those whose lab stopped
    /// them. `cpu`: the CPU time this pass used, shared among them.
    fn run_queued(&mut self, cpu: f64) {
        let share = cpu / self.run.len().max(1) as f64;
        let run = std::mem::take(&mut self.run);
        for &i in &run {
            let Some(s) = self.slots[i].as_mut() else { continue };
            s.queued = false;
            s.cpu_s += share;
            let readable = std::mem::take(&mut s.readable);
            let next = s.pump.round(&mut s.st, readable).map(|w| (w.0 as i128 + s.offset).max(0) as u64);
            if let Some(w) = std::mem::replace(&mut s.wake, next) {
                self.due.remove(&(w, i));
            }
            if let Some(w) = next {
                self.due.insert((w, i));
            }
            if s.pump.stop.load(Ordering::Relaxed) {
                self.finish(i);
            }
        }
        self.run = run;
        self.run.clear();
    }

    /// Takes hop `i` out of the loop and sends its reports.
    fn finish(&mut self, i: usize) {
        let Some(s) = self.slots[i].take() else { return };
        if let Some(w) = s.wake {
            self.due.remove(&(w, i));
        }
        for side in &s.pump.sides {
            self.ctl(libc::EPOLL_CTL_DEL, side.src.raw(), 0);
        }
        let reports = s.pump.finish(s.st, s.cpu_s);
        // A lab that stopped waiting loses only its reports.
        let _ = s.reply.send(reports);
        self.free.push(i);
        self.count.fetch_sub(1, Ordering::Relaxed);
    }

    /// When to wake next: the latest wake-up within `window` of the
    /// earliest, so that one wake-up serves them all.
    fn next_wake(&self, window: u64) -> Option<u64> {
        let &(first, _) = self.due.first()?;
        self.due.range(..(first.saturating_add(window), usize::MAX)).next_back().map(|&(t, _)| t)
    }

    /// Queues every hop due by `t`.
    fn queue_due(&mut self, t: u64) {
        let due: Vec<usize> = self.due.range(..=(t, usize::MAX)).map(|&(_, i)| i).collect();
        for i in due {
            self.queue(i);
        }
    }
}

/// The window within which a shared loop's departures share a wake-up
/// (ns): `AEROLINK_COALESCE_US`, 250 µs by default.
pub fn coalesce_ns() -> u64 {
    std::env::var("AEROLINK_COALESCE_US").ok().and_then(|v| v.parse::<u64>().ok()).map_or(DEFAULT_COALESCE_NS, |us| us * 1000)
}

pub const DEFAULT_COALESCE_NS: u64 = 250_000;

/// The loop: waits on every hop's devices and the earliest departure,
/// runs the hops that have something to do.
fn run(rx: Receiver<(SharedPump, Sender<[PumpReport; 2]>)>, wake_fd: RawFd, count: &'static AtomicUsize) {
    tight_timer_slack();
    // Real-time priority unless AEROLINK_REALTIME=0: a loop that waits
    // for a core behind the fleet's own programs makes every link it
    // drives late (100 terminals downloading: departure p99 25 ms without,
    // 1.4 ms with). It never polls, so it cannot trip the kernel's
    // real-time throttling as a polling thread would; where the priority
    // is refused (an ordinary user), it runs as it is.
    let realtime = std::env::var("AEROLINK_REALTIME").map_or(true, |v| v != "0") && fifo_priority();
    let base = std::time::Instant::now();
    // SAFETY: a plain epoll instance, kept for the life of the process.
    let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    assert!(epfd >= 0, "epoll for the shared pump: {}", std::io::Error::last_os_error());
    let mut hops = Hops { epfd, slots: Vec::new(), free: Vec::new(), due: BTreeSet::new(), run: Vec::new(), realtime, count };
    hops.ctl(libc::EPOLL_CTL_ADD, wake_fd, WAKE);
    let window = coalesce_ns();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let now = || base.elapsed().as_nanos() as u64;
    let mut cpu_mark = thread_cpu_seconds();
    // The wait's timeout, ns (`None`: until a frame or a new hop).
    let mut timeout: Option<u64> = Some(0);
    loop {
        let ts = timeout.map(|ns| libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long });
        let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: events and ts outlive the call.
        let n = unsafe { libc::epoll_pwait2(epfd, events.as_mut_ptr(), events.len() as libc::c_int, tsp, std::ptr::null()) };
        let n = n.max(0) as usize;
        let mut look_at_stops = false;
        for ev in &events[..n] {
            let token = ev.u64;
            if token == WAKE {
                let mut v: u64 = 0;
                // SAFETY: reading 8 bytes from our eventfd.
                unsafe {
                    libc::read(wake_fd, (&mut v as *mut u64).cast(), 8);
                }
                look_at_stops = true;
                continue;
            }
            let (i, side) = ((token >> 1) as usize, (token & 1) as usize);
            if let Some(s) = hops.slots.get_mut(i).and_then(|s| s.as_mut()) {
                s.readable[side] = true;
            }
            hops.queue(i);
        }
        if look_at_stops {
            while let Ok((pump, reply)) = rx.try_recv() {
                hops.insert(pump, reply, base);
            }
            let stopped: Vec<usize> = hops.slots.iter().enumerate().filter(|(_, s)| s.as_ref().is_some_and(|s| s.pump.stop.load(Ordering::Relaxed))).map(|(i, _)| i).collect();
            for i in stopped {
                hops.finish(i);
            }
        }
        hops.queue_due(now());
        if !hops.run.is_empty() {
            let cpu = thread_cpu_seconds();
            hops.run_queued(cpu - cpu_mark);
            cpu_mark = cpu;
        }
        let t = now();
        timeout = hops.next_wake(window).map(|d| d.saturating_sub(t));
    }
}
