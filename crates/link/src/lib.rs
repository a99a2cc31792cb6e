//! aerolink-link: the link models, pure and sans-IO.
//!
//! This crate owns what happens to a packet on an emulated link — how long
//! it queues, when its last bit is sent, whether it is lost, when it arrives
//! — and nothing else. It never reads a clock, sleeps, spawns a thread or
//! touches a file: the caller passes `now` ([`Instant`], nanoseconds since
//! the run began) and packets in, and gets packets with exact departure
//! times out. Randomness comes from RNGs seeded by the caller, so the same
//! seed gives the same decisions. That makes every model testable in
//! simulated time, exactly, and reusable by a discrete-event mode.
//!
//! A direction of a link is a [`Pipeline`] of [`Stage`]s chained in the
//! order of the [`registry`]: [`Bottleneck`] (drop-tail queue → rate
//! server, gated by outages) → random loss → [`DelayLine`] (propagation
//! delay + jitter). A [`Profile`] describes both directions in TOML with
//! human units; each stage kind parses its own keys.

pub mod batch;
pub mod bonded;
pub mod bottleneck;
pub mod builtin;
pub mod cabin;
pub mod choice;
pub mod dama;
pub mod delay;
pub mod fair;
pub mod handover;
pub mod jitter;
pub mod ldacs;
pub mod loss;
pub mod outage;
pub mod packet;
pub mod pipeline;
pub mod profile;
pub mod queue;
pub mod rate;
pub mod registry;
pub mod route;
pub mod stage;
pub mod time;
pub mod units;

pub use bottleneck::Bottleneck;
pub use delay::{BaseDelay, DelayLine};
pub use jitter::{Jitter, LinkRng};
pub use packet::{Drop, DropReason, Meta, Packet};
pub use pipeline::Pipeline;
pub use profile::{DirectionSpec, Override, Profile, ProfileError};
pub use registry::StageKind;
pub use stage::{Note, Stage, StageContext, StageEvent};
pub use time::{Duration, Instant};
