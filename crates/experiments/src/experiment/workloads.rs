//! The kinds of `[[workload]]` table: the registry of workloads
//! ([`crate::workload::KINDS`]: each workload's module declares its `type`,
//! its keys beside the knobs and how a table expands), and the check that
//! names a wrong `type` or key. A key given a list sweeps it, in every
//! combination.

use crate::workload::table::KeyErr;
pub use crate::workload::{WorkloadKind, KINDS};

/// "web, bulk, … or browser".
fn names() -> String {
    let n: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
    format!("{} or {}", n[..n.len() - 1].join(", "), n[n.len() - 1])
}

/// The kind a table's `type` names.
pub fn kind_of(t: &toml::Table) -> Result<&'static WorkloadKind, KeyErr> {
    let ty = t.get("type").and_then(|v| v.as_str()).ok_or_else(|| ("type".to_string(), format!("expected {}", names())))?;
    let kind = KINDS.iter().find(|k| k.name == ty).ok_or_else(|| ("type".to_string(), format!("{ty:?}: expected {}", names())))?;
    for k in t.keys() {
        if k != "type" && !(kind.keys)().contains(&k.as_str()) && !super::knobs::is_knob(k) {
            return Err((k.clone(), format!("unknown key for a {ty} workload; allowed: {}, {}", (kind.keys)().join(", "), super::knobs::keys())));
        }
    }
    Ok(kind)
}
