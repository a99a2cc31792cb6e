//! The pump on a lab: TUN devices, the monotonic clock, `ppoll` sleeps with
//! nanosecond timeouts and a 1 ns timer slack.

use std::os::fd::RawFd;

use aerolink_link::Instant;

use super::{Device, Now, Timer, Woken};
use crate::sys::{realtime_priority, tight_timer_slack};
use crate::tun::Tun;

/// Monotonic time since the run began, as the models count it.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: std::time::Instant,
}

impl Clock {
    pub fn start() -> Self {
        Clock { start: std::time::Instant::now() }
    }
    pub fn now(&self) -> Instant {
        Instant(self.start.elapsed().as_nanos() as u64)
    }
    /// When the run began.
    pub fn started(&self) -> std::time::Instant {
        self.start
    }
}

impl Device for Tun {
    fn read(&self, buf: &mut [u8]) -> std::io::Result<Option<usize>> {
        Tun::read(self, buf)
    }
    fn write(&self, buf: &[u8]) -> std::io::Result<()> {
        Tun::write(self, buf)
    }
    fn name(&self) -> &str {
        &self.name
    }
}

/// Sleeps in `ppoll` on the two source devices and the stop eventfd.
pub struct PollTimer {
    pub clock: Clock,
    /// The two sides' source devices, then the stop eventfd.
    pub fds: [RawFd; 3],
}

impl Now for Clock {
    fn now(&self) -> Instant {
        Clock::now(self)
    }
}

impl Now for PollTimer {
    fn now(&self) -> Instant {
        self.clock.now()
    }
}

impl Timer for PollTimer {
    fn prepare(&mut self) -> bool {
        tight_timer_slack();
        realtime_priority()
    }
    fn wait(&mut self, timeout_ns: Option<u64>) -> Woken {
        let mut fds = self.fds.map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
        let ts = timeout_ns.map(|ns| libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long });
        let tsp = ts.as_ref().map(|t| t as *const libc::timespec).unwrap_or(std::ptr::null());
        // SAFETY: fds and ts outlive the call.
        let n = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, tsp, std::ptr::null()) };
        if n < 0 {
            // EINTR: look at both sources again.
            return Woken { timed_out: false, readable: [true, true] };
        }
        let ready = |i: usize| fds[i].revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0;
        Woken { timed_out: n == 0, readable: [ready(0), ready(1)] }
    }
    fn spin(&mut self) {
        std::hint::spin_loop();
    }
    fn cpu_seconds(&self) -> f64 {
        thread_cpu_seconds()
    }
}

/// CPU time of the calling thread.
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer.
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}
