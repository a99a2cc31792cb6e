//! What can go wrong in a workload: the stacks' own errors, passed on
//! typed, and the few things our protocols check. None of these is the
//! user's mistake (flags and files are parsed before a workload starts), so
//! the binary reports every one as a failure (exit status 1).

use std::time::Duration;

/// A workload's failure.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// A socket, file or system call failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A system call failed while doing `what`.
    #[error("{what}: {source}")]
    Sys { what: String, source: std::io::Error },
    /// TLS (rustls) refused a configuration or a handshake.
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// The self-signed certificate could not be made.
    #[error("certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// quinn refused the TLS configuration.
    #[error("QUIC TLS configuration: {0}")]
    QuicCrypto(#[from] quinn::crypto::rustls::NoInitialCipherSuite),
    /// A QUIC setting is out of range.
    #[error("QUIC setting: {0}")]
    QuicConfig(String),
    /// A QUIC connection could not be started.
    #[error("QUIC: {0}")]
    QuicConnect(#[from] quinn::ConnectError),
    /// A QUIC connection failed or was closed.
    #[error("QUIC: {0}")]
    QuicConnection(#[from] quinn::ConnectionError),
    /// Writing to a QUIC stream failed.
    #[error("QUIC stream: {0}")]
    QuicWrite(#[from] quinn::WriteError),
    /// Reading a QUIC stream failed.
    #[error("QUIC stream: {0}")]
    QuicRead(#[from] quinn::ReadError),
    /// A QUIC stream ended before the bytes expected.
    #[error("QUIC stream: {0}")]
    QuicReadExact(#[from] quinn::ReadExactError),
    /// A QUIC stream was longer than allowed or failed.
    #[error("QUIC stream: {0}")]
    QuicReadToEnd(#[from] quinn::ReadToEndError),
    /// A QUIC stream was already closed.
    #[error("QUIC stream: {0}")]
    QuicClosedStream(#[from] quinn::ClosedStream),
    /// Chromium could not be started, driven or did not load the page.
    #[error("browser: {0}")]
    Browser(String),
    /// HTTP/1.1 or HTTP/2 (hyper) failed.
    #[error("HTTP: {0}")]
    Http(#[from] hyper::Error),
    /// HTTP/2 (h2: the web client, the server when it pushes) failed.
    #[error("HTTP/2: {0}")]
    H2(#[from] h2::Error),
    /// A request could not be built.
    #[error("HTTP request: {0}")]
    HttpRequest(#[from] http::Error),
    /// HTTP/3 failed on a stream.
    #[error("HTTP/3: {0}")]
    H3Stream(#[from] h3::error::StreamError),
    /// HTTP/3 failed on the connection.
    #[error("HTTP/3: {0}")]
    H3Connection(#[from] h3::error::ConnectionError),
    /// A WebSocket failed.
    #[error("WebSocket: {0}")]
    WebSocket(#[from] tokio_tungstenite::tungstenite::Error),
    /// A result could not be written as JSON.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The client's connection pool was closed while a request waited.
    #[error("connection slots: {0}")]
    Slots(#[from] tokio::sync::AcquireError),
    /// A task of the workload panicked or was cancelled.
    #[error("task: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The server answered an HTTP request with an error status.
    #[error("HTTP status {0}")]
    Status(http::StatusCode),
    /// The peer closed the connection before the transfer was complete.
    #[error("the connection closed after {got} of {expected} bytes")]
    ClosedEarly { got: u64, expected: u64 },
    /// The peer closed a channel the workload still needed.
    #[error("the server closed {0}")]
    Closed(&'static str),
    /// The peer sent something our protocol does not allow.
    #[error("bad {0} from the peer")]
    BadMessage(&'static str),
    /// Nothing complete arrived in time.
    #[error("no {what} within {after:?}")]
    Timeout { what: &'static str, after: Duration },
    /// A parameter a caller passed is out of range.
    #[error("{0}")]
    Param(&'static str),
    /// A name the workload needed did not resolve.
    #[error("DNS: {0}")]
    Dns(String),
    /// Setting the route's initial window failed.
    #[error("initial window: {0}")]
    Route(String),
    /// A program the workload runs (Debian's `ping`) failed.
    #[error("{program}: {why}")]
    Program { program: &'static str, why: String },
}

/// A workload's result.
pub type Result<T, E = WorkError> = std::result::Result<T, E>;
