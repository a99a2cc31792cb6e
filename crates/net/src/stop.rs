//! The process's one stop token. SIGINT, SIGTERM and SIGHUP ask whatever
//! the process runs (a lab, an experiment's runs, a benchmark, a PEP) to
//! stop and clean up; the handlers are registered once, by the first
//! [`on_signals`] call, and every part of the program reads the same token.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// Set once a stop signal arrives.
pub struct Stop {
    flag: Arc<AtomicBool>,
    last: Arc<AtomicUsize>,
}

/// The token, its handlers registered on the first call. Registering can
/// only fail for a signal the OS forbids handling (none of these three).
pub fn on_signals() -> &'static Stop {
    static STOP: OnceLock<Stop> = OnceLock::new();
    STOP.get_or_init(|| {
        let stop = Stop { flag: Arc::new(AtomicBool::new(false)), last: Arc::new(AtomicUsize::new(0)) };
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            let _ = signal_hook::flag::register(sig, stop.flag.clone());
            let _ = signal_hook::flag::register_usize(sig, stop.last.clone(), sig as usize);
        }
        stop
    })
}

impl Stop {
    /// The flag itself, for code that takes an `Arc<AtomicBool>` (worker
    /// pools, PEPs, runs).
    pub fn flag(&self) -> &Arc<AtomicBool> {
        &self.flag
    }

    /// Whether a stop was asked for.
    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The last stop signal received, if any.
    pub fn received(&self) -> Option<i32> {
        match self.last.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s as i32),
        }
    }
}
