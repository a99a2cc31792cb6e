//! What can go wrong in a proxy. Flags are parsed before a proxy starts,
//! so these are failures of the machine or the network (exit status 1) —
//! except [`PepError::Precondition`], which says what the user must set up.

use std::net::SocketAddr;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum PepError {
    /// Something the proxy needs is missing: root in the gateway
    /// namespace, a tool, a device. The user's to fix.
    #[error("{0}")]
    Precondition(String),
    /// A socket or system call failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A system call failed while doing `what`.
    #[error("{what}: {source}")]
    Sys { what: String, source: std::io::Error },
    /// A command we ran (`nft`, `ip`) failed.
    #[error("`{cmd}` failed: {stderr}")]
    Command { cmd: String, stderr: String },
    /// The workload stack (TLS, QUIC settings) failed.
    #[error(transparent)]
    Work(#[from] aerolink_work::WorkError),
    /// The tunnel's device or namespace set-up failed.
    #[error(transparent)]
    Net(#[from] aerolink_net::NetError),
    /// A QUIC connection could not be started.
    #[error("QUIC: {0}")]
    QuicConnect(#[from] quinn::ConnectError),
    /// The tunnel's QUIC connection failed or was closed.
    #[error("QUIC: {0}")]
    QuicConnection(#[from] quinn::ConnectionError),
    /// Writing to a tunnel stream failed.
    #[error("QUIC stream: {0}")]
    QuicWrite(#[from] quinn::WriteError),
    /// A tunnel stream ended before the bytes expected.
    #[error("QUIC stream: {0}")]
    QuicReadExact(#[from] quinn::ReadExactError),
    /// A tunnel stream was already closed.
    #[error("QUIC stream: {0}")]
    QuicClosedStream(#[from] quinn::ClosedStream),
    /// A task of the proxy panicked or was cancelled.
    #[error("task: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// An onward connection got no answer in time.
    #[error("connecting to {dest}: no answer in {after:?}")]
    ConnectTimeout { dest: SocketAddr, after: Duration },
    /// The ground gateway did not answer in time.
    #[error("no answer from the ground gateway {0} within {1:?}: it answers only a tunnel keyed with its own key, so a different key (--psk) looks like this; or it is not running or not reachable")]
    GroundSilent(SocketAddr, Duration),
    /// The ground gateway could not be reached.
    #[error("connecting to the ground gateway {ground}: {source}")]
    GroundUnreachable { ground: SocketAddr, source: quinn::ConnectionError },
    /// The ground gateway refused the tunnel (usually a different key).
    #[error("the ground gateway {ground} refused the tunnel: {source}")]
    GroundRefused { ground: SocketAddr, source: quinn::ReadExactError },
    /// The ground gateway's proof of the key was wrong.
    #[error("the ground gateway {0} did not prove the key: refusing it")]
    GroundUnproven(SocketAddr),
    /// The air gateway's proof of the key was wrong.
    #[error("wrong key")]
    WrongKey,
    /// TLS keying material could not be exported for the proof.
    #[error("exporting keying material")]
    Export,
    /// A stream header our protocol does not know.
    #[error("stream header: {0}")]
    Header(&'static str),
    /// A tunnel setting that cannot be used.
    #[error("{0}")]
    Tuning(&'static str),
}

impl PepError {
    /// Whether the user must fix something before the proxy can run.
    pub fn is_user(&self) -> bool {
        match self {
            PepError::Precondition(_) => true,
            PepError::Net(n) => n.is_user(),
            _ => false,
        }
    }
}

/// A proxy's result.
pub type Result<T, E = PepError> = std::result::Result<T, E>;
