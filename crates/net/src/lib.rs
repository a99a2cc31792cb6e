//! aerolink-net: the thin runtime that runs real programs over the link
//! models.
//!
//! It owns network namespaces, TUN devices and the packet pump: it opens the
//! devices, reads packets, hands them to [`aerolink_link`] pipelines, sleeps
//! until the next departure with a high-resolution timer, writes them out,
//! and logs events. Nothing here decides a packet's fate.

pub mod gso;
pub mod lab;
pub mod live;
pub mod log;
pub mod monitor;
pub mod passengers;
pub mod pcap;
pub mod procs;
pub mod pump;
pub mod sink;
pub mod stale;
pub mod stop;
pub mod sys;
pub mod tun;

pub use lab::{HostInfo, Lab, LabReport, LabSpec};

/// A short name for a new lab (six hex digits from the clock and the PID):
/// its namespaces are `al-<run>-<host>`.
pub fn run_id() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{:06x}", (nanos ^ (std::process::id() << 8)) & 0xff_ffff)
}

impl NetError {
    /// Whether the user must fix it (run as root, install a tool, change
    /// the topology), rather than a failure of ours.
    pub fn is_user(&self) -> bool {
        matches!(self, NetError::Precondition(_) | NetError::Spec(_))
    }
}

/// Everything that can go wrong building or running a lab.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The machine lacks something aerolink needs (root, TUN, `ip`).
    #[error("{0}")]
    Precondition(String),
    /// The topology asked for is not valid.
    #[error("{0}")]
    Spec(String),
    /// A command we ran failed.
    #[error("`{cmd}` failed: {msg}")]
    Command { cmd: String, msg: String },
    /// A system call failed.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// A namespace could reach something outside the lab.
    #[error("refusing to run: {0}")]
    Unsafe(String),
}
