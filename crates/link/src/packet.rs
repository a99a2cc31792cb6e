//! Packets as the models see them: a size, a few timestamps, and an opaque
//! payload the models never look at.

use crate::time::Instant;

/// What the models know about a packet and what happened to it so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Sequence number within this direction, given by the pipeline.
    pub id: u64,
    /// Size on the wire in bytes (the IP packet; per-packet overhead is
    /// added by the rate stage, not here).
    pub len: u32,
    /// When the packet entered the link.
    pub arrived: Instant,
    /// When its transmission started (arrived + queueing delay).
    pub tx_start: Instant,
    /// When its last bit left the sender.
    pub tx_end: Instant,
    /// When it is due at the far end: the departure time the driver must
    /// honour. Drivers stamp this, not the time they happened to wake.
    pub due: Instant,
    /// Whose packet it is, for stages that treat users apart (`per_user`):
    /// the driver's key for a passenger (the pumps: the low 16 bits of the
    /// cabin-side address); 0 when the driver does not say.
    pub user: u32,
}

/// A packet travelling through a link: metadata plus the caller's payload.
#[derive(Debug)]
pub struct Packet<P> {
    pub meta: Meta,
    pub payload: P,
}

impl<P> Packet<P> {
    pub fn new(id: u64, len: u32, arrived: Instant, payload: P) -> Self {
        Packet { meta: Meta { id, len, arrived, tx_start: arrived, tx_end: arrived, due: arrived, user: 0 }, payload }
    }
}

/// Why a packet was dropped. Queue drops are counted apart from random loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// The drop-tail queue was full when the packet arrived.
    Queue,
    /// The random loss model chose this packet.
    Loss,
    /// The link was in a drop-mode outage when the packet was due to start.
    Outage,
    /// Link-layer ARQ gave up after its last retransmission.
    Arq,
}

impl DropReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Queue => "queue",
            DropReason::Loss => "loss",
            DropReason::Outage => "outage",
            DropReason::Arq => "arq",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "queue" => Some(DropReason::Queue),
            "loss" => Some(DropReason::Loss),
            "outage" => Some(DropReason::Outage),
            "arq" => Some(DropReason::Arq),
            _ => None,
        }
    }
}

/// A dropped packet's metadata, the time it was dropped and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drop {
    pub meta: Meta,
    pub at: Instant,
    pub reason: DropReason,
}
