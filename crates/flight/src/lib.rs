//! aerolink-flight: measuring real flights and turning them into links.
//!
//! - [`probe`]: the agent that flies (`aerolink probe run`: probes, pings,
//!   traces, DNS, page loads and transfers on a schedule, one JSON line per
//!   measurement) and its ground reflector (`aerolink probe serve`);
//! - [`analysis`]: a flight's log read back — RTT and loss over time,
//!   outages, phases of flight, what sits on the path (`aerolink analyze`);
//! - [`fit`]: a profile fitted to the log (`aerolink fit`), replayable by
//!   every other aerolink command.
//!
//! [`commands`] holds their flags and what each does; the binary only
//! dispatches (cli `probe.rs`). The flight benchmark (`aerolink bench
//! flight`) flies the agent over links of known truth.

pub mod analysis;
pub mod commands;
pub mod fit;
pub mod probe;
