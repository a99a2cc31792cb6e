//! Experiment files and `aerolink experiment` (filled in below).

use aerolink_lab::workload::Workload;

/// Checks a workload's parameters, naming `origin` in the message.
pub fn validate_workload(w: &Workload, origin: &str) -> Result<(), String> {
    match w {
        Workload::Web { protocol, page, depth } => {
            if !aerolink_work::web::PROTOCOLS.contains(&protocol.as_str()) {
                return Err(format!("{origin}: protocol {protocol:?}: expected one of {}", aerolink_work::web::PROTOCOLS.join(", ")));
            }
            aerolink_work::page::Page::parse(page, *depth).map_err(|m| format!("{origin}: page {page:?}: expected {m}"))?;
        }
        Workload::Bulk { transport, direction, bytes } => {
            if !["tcp", "quic"].contains(&transport.as_str()) {
                return Err(format!("{origin}: transport {transport:?}: expected tcp or quic"));
            }
            if !["down", "up"].contains(&direction.as_str()) {
                return Err(format!("{origin}: direction {direction:?}: expected down or up"));
            }
            if *bytes == 0 {
                return Err(format!("{origin}: size must be more than 0"));
            }
        }
        Workload::Objects { protocol, set, .. } => {
            if !["h1", "h2", "h3"].contains(&protocol.as_str()) {
                return Err(format!("{origin}: protocol {protocol:?}: expected h3, h2 or h1"));
            }
            aerolink_work::page::object_set(set).map_err(|m| format!("{origin}: {m}"))?;
        }
        Workload::Messages { direction, size, rate_bps, duration_s } => {
            if !["down", "up", "both"].contains(&direction.as_str()) {
                return Err(format!("{origin}: direction {direction:?}: expected down, up or both"));
            }
            if *size < aerolink_work::messages::MIN_SIZE {
                return Err(format!("{origin}: size {size}: messages need at least 12 bytes (timestamp + length)"));
            }
            if *rate_bps <= 0.0 || *duration_s <= 0.0 {
                return Err(format!("{origin}: rate and duration must be positive"));
            }
        }
    }
    Ok(())
}
