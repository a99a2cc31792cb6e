//! Where the pumps' events go: one thread per lab writes the packet log
//! (`--log`, [`crate::log`]) and the captures (`--pcap`, [`crate::pcap`])
//! and counts for the live view (`--live`, [`crate::live`]) from the
//! batches each pump sends once a round.

use std::io::Write;
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::live::Feed;
use crate::log::{self, Event};
use crate::pcap::{Capture, PcapReport, PcapSpec, Snap};

/// One round of a pump: its events, and the bytes of the packets that
/// arrived when capturing.
#[derive(Default)]
pub struct Batch {
    pub events: Vec<Event>,
    pub snaps: Vec<Snap>,
}

/// What the sink wrote.
#[derive(Clone, Debug, Default)]
pub struct SinkReport {
    /// Events in the packet log, when there is one.
    pub log_events: Option<u64>,
    pub pcap: Option<PcapReport>,
}

/// The sink's thread, when there is a log or a capture to write.
pub type Sink = (Sender<Batch>, JoinHandle<std::io::Result<SinkReport>>);

/// Starts the sink: the log's header (with `meta`) and the capture's files
/// (`hops` of them, timestamps from `epoch_ns`) are written before it
/// returns, so a mistake in them is the caller's error, not a lost log.
pub fn spawn(log_to: Option<Box<dyn Write + Send>>, meta: &[(String, String)], pcap: Option<&PcapSpec>, live: Option<Arc<Feed>>, hops: usize, epoch_ns: u64) -> std::io::Result<Option<Sink>> {
    if log_to.is_none() && pcap.is_none() && live.is_none() {
        return Ok(None);
    }
    let mut capture = pcap.map(|p| Capture::create(p, hops, epoch_ns)).transpose()?;
    let mut log = match log_to {
        Some(w) => {
            let mut w = std::io::BufWriter::with_capacity(1 << 20, w);
            log::write_header(&mut w, meta)?;
            Some(w)
        }
        None => None,
    };
    let (tx, rx) = mpsc::channel::<Batch>();
    let handle = std::thread::Builder::new().name("sink".into()).spawn(move || -> std::io::Result<SinkReport> {
        let mut count = 0u64;
        for batch in rx {
            if let Some(w) = log.as_mut() {
                for e in &batch.events {
                    log::write_event(w, e)?;
                }
                count += batch.events.len() as u64;
            }
            if let Some(f) = &live {
                f.take(&batch.events);
            }
            if let Some(c) = capture.as_mut() {
                c.take(&batch.events, batch.snaps)?;
            }
        }
        let log_events = match log.as_mut() {
            Some(w) => {
                w.flush()?;
                Some(count)
            }
            None => None,
        };
        Ok(SinkReport { log_events, pcap: capture.map(Capture::finish).transpose()? })
    })?;
    Ok(Some((tx, handle)))
}
