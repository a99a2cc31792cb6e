//! The pump in simulated time: in-memory devices that deliver frames at
//! scheduled times and record what is written to them, and a timer whose
//! clock jumps to the next wake-up (or the next scheduled frame). Used by
//! the pump's tests; usable by anything that wants to drive a whole hop
//! without root or a wall clock.
//!
//! The timer can be told to oversleep by a fixed amount, as a real one
//! does, and each round of busy-waiting costs a fixed amount of simulated
//! time, so the pump's wake-up choice (sleep, then poll the last stretch)
//! is exercised as on a machine.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use aerolink_link::Instant;

use super::{Device, Now, Timer, Woken};
use crate::tun::VNET_HDR_LEN;

/// The simulated time, shared by the timer and the devices.
#[derive(Debug, Default)]
pub struct SimClock(AtomicU64);

impl SimClock {
    pub fn now(&self) -> Instant {
        Instant(self.0.load(Ordering::Relaxed))
    }
    fn advance_to(&self, t: Instant) {
        self.0.fetch_max(t.0, Ordering::Relaxed);
    }
}

/// An in-memory device: frames scheduled to arrive, frames written.
pub struct SimDevice {
    name: String,
    clock: Arc<SimClock>,
    inbox: Mutex<VecDeque<(Instant, Vec<u8>)>>,
    written: Mutex<Vec<(Instant, Vec<u8>)>>,
}

impl SimDevice {
    pub fn new(name: &str, clock: Arc<SimClock>) -> Arc<SimDevice> {
        Arc::new(SimDevice { name: name.into(), clock, inbox: Mutex::default(), written: Mutex::default() })
    }
    /// Schedules an IP packet (or an offloaded burst) to be readable from
    /// `at` on; times must not decrease.
    pub fn schedule(&self, at: Instant, packet: &[u8]) {
        let mut frame = vec![0u8; VNET_HDR_LEN];
        frame.extend_from_slice(packet);
        self.inbox.lock().expect("inbox lock").push_back((at, frame));
    }
    /// When the next scheduled frame becomes readable.
    pub fn next_arrival(&self) -> Option<Instant> {
        self.inbox.lock().expect("inbox lock").front().map(|f| f.0)
    }
    /// What was written so far: the time of each write and the packet
    /// (header removed).
    pub fn written(&self) -> Vec<(Instant, Vec<u8>)> {
        self.written.lock().expect("written lock").iter().map(|(t, f)| (*t, f.get(VNET_HDR_LEN..).unwrap_or_default().to_vec())).collect()
    }
    /// The same with each frame's virtio-net header.
    pub fn written_frames(&self) -> Vec<(Instant, Vec<u8>)> {
        self.written.lock().expect("written lock").clone()
    }
    /// Schedules a frame that carries its own virtio-net header (an
    /// offloaded burst) to be readable from `at` on.
    pub fn schedule_frame(&self, at: Instant, frame: &[u8]) {
        self.inbox.lock().expect("inbox lock").push_back((at, frame.to_vec()));
    }
}

impl Device for SimDevice {
    fn read(&self, buf: &mut [u8]) -> std::io::Result<Option<usize>> {
        let mut inbox = self.inbox.lock().expect("inbox lock");
        match inbox.front() {
            Some((at, _)) if *at <= self.clock.now() => {
                let (_, f) = inbox.pop_front().expect("a front frame");
                // Like a TUN read into a short buffer: the rest is lost.
                let n = f.len().min(buf.len());
                buf[..n].copy_from_slice(&f[..n]);
                Ok(Some(n))
            }
            _ => Ok(None),
        }
    }
    fn write(&self, buf: &[u8]) -> std::io::Result<()> {
        self.written.lock().expect("written lock").push((self.clock.now(), buf.to_vec()));
        Ok(())
    }
    fn name(&self) -> &str {
        &self.name
    }
}

/// A timer in simulated time. When nothing is scheduled and nothing is
/// due, it sets the pump's stop flag: the simulation is over.
pub struct SimTimer {
    pub clock: Arc<SimClock>,
    /// The devices the pump reads from (their schedules wake it).
    pub inputs: Vec<Arc<SimDevice>>,
    /// How late each timed sleep ends, ns.
    pub oversleep_ns: u64,
    /// Simulated time one round of busy-waiting takes, ns (at least 1).
    pub spin_ns: u64,
    /// Rounds of busy-waiting so far (shared, so a test can read it after
    /// the pump is gone).
    pub spins: Arc<AtomicU64>,
    pub stop: Arc<AtomicBool>,
}

impl Now for SimTimer {
    fn now(&self) -> Instant {
        self.clock.now()
    }
}

impl Timer for SimTimer {
    fn wait(&mut self, timeout_ns: Option<u64>) -> Woken {
        let now = self.clock.now();
        let next_in = self.inputs.iter().filter_map(|d| d.next_arrival()).min();
        let deadline = timeout_ns.map(|t| Instant(now.0 + t + self.oversleep_ns));
        let timed_out = match (next_in, deadline) {
            (Some(a), Some(d)) if a < d => {
                self.clock.advance_to(a);
                false
            }
            (_, Some(d)) => {
                self.clock.advance_to(d);
                true
            }
            (Some(a), None) => {
                self.clock.advance_to(a);
                false
            }
            (None, None) => {
                self.stop.store(true, Ordering::Relaxed);
                false
            }
        };
        // What a poll would report: the first two inputs are the two
        // sides' sources.
        let now = self.clock.now();
        let ready = |i: usize| self.inputs.get(i).and_then(|d| d.next_arrival()).is_some_and(|a| a <= now);
        Woken { timed_out, readable: [ready(0), ready(1)] }
    }
    fn spin(&mut self) {
        self.spins.fetch_add(1, Ordering::Relaxed);
        let t = Instant(self.clock.now().0 + self.spin_ns.max(1));
        self.clock.advance_to(t);
    }
}
