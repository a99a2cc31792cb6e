//! Outage schedules: windows in which the link is down.
//!
//! In a `drop` window every packet due to start transmission is lost; in a
//! `hold` window transmission pauses and queued packets leave when the
//! window ends (the hook for handovers with buffering and call drops with
//! reconnects). Windows are given once or repeat with a period.

use crate::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutageMode {
    Drop,
    Hold,
}

/// One window, or a window that repeats every `every`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutageWindow {
    pub start: Instant,
    pub duration: Duration,
    pub every: Option<Duration>,
    pub mode: OutageMode,
}

impl OutageWindow {
    /// The window containing `t`, as `[from, until)`, if any.
    fn containing(&self, t: Instant) -> Option<(Instant, Instant)> {
        if t < self.start || self.duration == Duration::ZERO {
            return None;
        }
        let from = match self.every {
            Some(p) if p.0 > 0 => Instant(self.start.0 + (t.0 - self.start.0) / p.0 * p.0),
            _ => self.start,
        };
        let until = from + self.duration;
        (t >= from && t < until).then_some((from, until))
    }
}

/// All windows of one direction.
#[derive(Clone, Debug, Default)]
pub struct OutageSchedule {
    windows: Vec<OutageWindow>,
}

/// What the link does with a packet that wants to start at some time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    Open(Instant),
    Dropped(Instant),
}

impl OutageSchedule {
    pub fn new(windows: Vec<OutageWindow>) -> Self {
        OutageSchedule { windows }
    }
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }
    pub fn windows(&self) -> &[OutageWindow] {
        &self.windows
    }

    /// When a packet that may start at `t` really starts, or that it is
    /// dropped. Hold windows push the start to their end (repeatedly, if
    /// windows touch); a drop window anywhere on the way drops it.
    pub fn gate(&self, mut t: Instant) -> Gate {
        // Bounded: each step moves past one window; overlapping schedules
        // cannot loop forever because `until > t` strictly.
        for _ in 0..1024 {
            let mut moved = false;
            for w in &self.windows {
                if let Some((_, until)) = w.containing(t) {
                    match w.mode {
                        OutageMode::Drop => return Gate::Dropped(t),
                        OutageMode::Hold => {
                            t = until;
                            moved = true;
                        }
                    }
                }
            }
            if !moved {
                return Gate::Open(t);
            }
        }
        Gate::Open(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant(x * 1_000_000)
    }

    #[test]
    fn hold_and_drop_windows() {
        let s = OutageSchedule::new(vec![
            OutageWindow { start: ms(100), duration: Duration::from_millis(50), every: None, mode: OutageMode::Hold },
            OutageWindow { start: ms(300), duration: Duration::from_millis(10), every: Some(Duration::from_millis(100)), mode: OutageMode::Drop },
        ]);
        assert_eq!(s.gate(ms(99)), Gate::Open(ms(99)));
        assert_eq!(s.gate(ms(120)), Gate::Open(ms(150)));
        assert_eq!(s.gate(ms(150)), Gate::Open(ms(150)));
        assert_eq!(s.gate(ms(305)), Gate::Dropped(ms(305)));
        assert_eq!(s.gate(ms(405)), Gate::Dropped(ms(405)));
        assert_eq!(s.gate(ms(415)), Gate::Open(ms(415)));
        assert_eq!(s.gate(ms(250)), Gate::Open(ms(250)));
    }
}
