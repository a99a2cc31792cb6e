//! Scratch files of the store and experiment tests, in the system's
//! temporary directory ([`Scratch`]).
#![allow(dead_code)]

mod scratch;

pub use scratch::Scratch;

/// A fresh path for a store, `aerolink-KIND-NAME-PID.db` (none of it there).
pub fn db(kind: &str, name: &str) -> Scratch {
    let p = std::env::temp_dir().join(format!("aerolink-{kind}-{name}-{}.db", std::process::id()));
    Scratch::remove(&p);
    Scratch::new(p)
}

/// A path for a scratch directory, `aerolink-lab-NAME-PID` (not created).
pub fn dir(name: &str) -> Scratch {
    let p = std::env::temp_dir().join(format!("aerolink-lab-{name}-{}", std::process::id()));
    Scratch::remove(&p);
    Scratch::new(p)
}
