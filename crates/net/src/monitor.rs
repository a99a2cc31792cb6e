//! The link monitor: a hop whose capacity changes over time (bonded
//! channels dropping and redialling) has a small file the pump rewrites
//! whenever the capacity changes, for gateway transports that follow it
//! (`aerolink pep quic-tunnel --cc rate --rate-follow FILE`). Programs in
//! the lab find it in `AEROLINK_LINK<hop>_MONITOR`.
//!
//! ```text
//! up_bps 4800
//! down_bps 4800
//! ```

use std::path::{Path, PathBuf};

/// The monitor file of hop `hop` of lab `run`.
pub fn path(run: &str, hop: usize) -> PathBuf {
    std::env::temp_dir().join(format!("aerolink-{run}-link{hop}.monitor"))
}

/// Replaces the file at once (written aside, then renamed), so a reader
/// never sees half of it.
pub fn write(path: &Path, up_bps: f64, down_bps: f64) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, format!("up_bps {up_bps:.0}\ndown_bps {down_bps:.0}\n"))?;
    std::fs::rename(&tmp, path)
}

/// The capacities in the file: (up, down) bit/s; `None` if it is missing
/// or not a monitor file.
pub fn read(path: &Path) -> Option<(f64, f64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let get = |k: &str| text.lines().find_map(|l| l.strip_prefix(k)?.trim().parse::<f64>().ok());
    Some((get("up_bps ")?, get("down_bps ")?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_monitor_file_round_trips() {
        let p = std::env::temp_dir().join(format!("aerolink-monitor-test-{}", std::process::id()));
        super::write(&p, 4800.0, 7200.0).unwrap();
        assert_eq!(super::read(&p), Some((4800.0, 7200.0)));
        std::fs::remove_file(&p).unwrap();
        assert_eq!(super::read(&p), None);
    }
}
