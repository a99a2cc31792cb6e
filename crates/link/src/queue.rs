//! The drop-tail queue in front of the rate stage.
//!
//! The limit counts every packet the link has accepted but not finished
//! sending, including the one on the wire, in bytes or in packets. Queue
//! drops are reported with [`DropReason::Queue`](crate::DropReason), apart
//! from random loss.

use crate::units::Size;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Bytes(u64),
    Packets(u64),
    /// No limit (only sensible with no rate limit, or for experiments that
    /// want to see bufferbloat).
    Unlimited,
}

impl From<Size> for QueueLimit {
    fn from(s: Size) -> Self {
        match s {
            Size::Bytes(b) => QueueLimit::Bytes(b),
            Size::Packets(p) => QueueLimit::Packets(p),
        }
    }
}

/// As the profile key is written: `30672 B`, `1000 packets`, `unlimited`.
impl std::fmt::Display for QueueLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueueLimit::Bytes(b) => write!(f, "{b} B"),
            QueueLimit::Packets(p) => write!(f, "{p} packets"),
            QueueLimit::Unlimited => f.write_str("unlimited"),
        }
    }
}

/// Accounting for a drop-tail queue.
#[derive(Clone, Debug)]
pub struct DropTail {
    limit: QueueLimit,
    bytes: u64,
    packets: u64,
}

impl DropTail {
    pub fn new(limit: QueueLimit) -> Self {
        DropTail { limit, bytes: 0, packets: 0 }
    }
    pub fn limit(&self) -> QueueLimit {
        self.limit
    }
    /// Whether a packet of `len` bytes fits; if so it is counted in.
    pub fn admit(&mut self, len: u32) -> bool {
        let fits = match self.limit {
            QueueLimit::Bytes(b) => self.bytes + len as u64 <= b,
            QueueLimit::Packets(p) => self.packets < p,
            QueueLimit::Unlimited => true,
        };
        if fits {
            self.bytes += len as u64;
            self.packets += 1;
        }
        fits
    }
    /// Counts a packet out (sent or dropped after admission).
    pub fn release(&mut self, len: u32) {
        self.bytes -= len as u64;
        self.packets -= 1;
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn packets(&self) -> u64 {
        self.packets
    }
}
