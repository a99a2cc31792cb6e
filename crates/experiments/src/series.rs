//! The series a stored run belongs to — its protocol and the knobs that
//! differ from the defaults (`h2 bbr IW40 via quic-tunnel/bbr`) — decoded
//! once, when the store reads the run ([`Series::decode`]), for the report,
//! the judge's `series = "…"` selections, compare and export.

use crate::workload::Knobs;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// The protocol and the knobs' label: what reports, `[[judge]] series`
    /// and exports call the series.
    pub name: String,
    /// The same series without its PEP (`h2 bbr IW40`): what a series is
    /// compared with under `baseline = "pep:none"`.
    pub without_pep: String,
    /// The run's knobs; `None` when the stored JSON does not decode (the
    /// series is then the protocol alone).
    pub knobs: Option<Knobs>,
}

impl Series {
    /// From a stored run's protocol and knobs.
    pub fn decode(protocol: &str, knobs_json: &str) -> Series {
        let knobs = serde_json::from_str::<Knobs>(knobs_json).ok();
        let name = |k: Option<&Knobs>| {
            let label = k.map(|k| k.label()).unwrap_or_default();
            if label.is_empty() {
                protocol.to_string()
            } else {
                format!("{protocol} {label}")
            }
        };
        let bare = knobs.clone().map(|mut k| {
            k.pep = None;
            k
        });
        Series { name: name(knobs.as_ref()), without_pep: name(bare.as_ref()), knobs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_is_its_protocol_and_knobs_and_knows_itself_without_its_pep() {
        let mut k = Knobs::default();
        assert_eq!(Series::decode("h2", &serde_json::to_string(&k).unwrap()).name, "h2");
        k.tcp_cc = aerolink_work::sock::TcpCc::Bbr;
        k.pep = Some(crate::gateways::PepSpec { mode: aerolink_pep::cli::PepMode::QuicTunnel, ..Default::default() });
        let s = Series::decode("h2", &serde_json::to_string(&k).unwrap());
        assert_eq!(s.name, "h2 bbr via quic-tunnel/bbr");
        assert_eq!(s.without_pep, "h2 bbr");
        assert_eq!(Series::decode("h3", "not json"), Series { name: "h3".into(), without_pep: "h3".into(), knobs: None });
    }
}
