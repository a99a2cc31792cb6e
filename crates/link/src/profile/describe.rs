//! How a profile reads to a person: `profiles show`, and the text of each
//! key in [`DirectionSpec::described`](crate::DirectionSpec) (also what a
//! profile's hash is computed from).

use std::fmt;

use crate::jitter::Jitter;
use crate::profile::{Profile, QueueSpec};
use crate::queue::QueueLimit;
use crate::units;

pub(crate) fn pct(p: f64) -> String {
    format!("{}%", units::fmt_num(p * 100.0))
}

pub(crate) fn describe_jitter(j: &Jitter) -> String {
    match j {
        Jitter::Normal { sigma } => format!("normal sigma {sigma}"),
        Jitter::Uniform { spread } => format!("uniform ±{spread}"),
        Jitter::Pareto { scale, shape } => format!("pareto scale {scale} shape {shape}"),
        Jitter::Empirical { samples_ns } => format!("empirical ({} samples)", samples_ns.len()),
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} — {}", self.name, self.description)?;
        if !self.source.is_empty() {
            writeln!(f, "  source: {}", self.source)?;
        }
        if !self.split.is_empty() {
            writeln!(f, "  split:  {}", self.split)?;
        }
        let rtt = self.base_rtt();
        for (dir, label, spec) in [("up", "aircraft → ground", &self.up), ("down", "ground → aircraft", &self.down)] {
            writeln!(f, "  {dir} ({label}):")?;
            for (k, v) in &spec.described {
                let v = spec.shown.get(k).unwrap_or(v);
                writeln!(f, "    {k:<8} {v}")?;
            }
            if spec.queue == QueueSpec::Bdp {
                if let QueueLimit::Bytes(b) = spec.queue_limit(rtt) {
                    writeln!(f, "    (bdp queue at RTT {rtt}: {b} B)")?;
                }
            }
        }
        Ok(())
    }
}
