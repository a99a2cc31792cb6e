//! The L-DACS 1 link budget: the frame error rate from the signal-to-noise
//! ratio a distance, powers, gains and losses give (the `budget` key).

use super::LinkDir;
use crate::profile::keys::number;
use crate::profile::ProfileError;

/// A link budget (seed 002, Tables 1 and 2): the received power after
/// free-space path loss, against thermal noise in the channel bandwidth
/// plus the receiver's noise figure, less a fading/safety margin; the SNR
/// gives the FER through `snr_fer`.
#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    pub distance_km: f64,
    pub tx_power_dbm: f64,
    pub tx_gain_dbi: f64,
    pub tx_loss_db: f64,
    pub rx_gain_dbi: f64,
    pub rx_loss_db: f64,
    pub freq_mhz: f64,
    pub bandwidth_khz: f64,
    pub noise_figure_db: f64,
    /// Subtracted from the SNR (the seed's safety margin, 6 dB).
    pub margin_db: f64,
    /// (SNR dB, FER) points, SNR increasing; log-linear in between,
    /// clamped at the ends.
    pub snr_fer: Vec<(f64, f64)>,
}

/// Our SNR→FER curves for the seed's most robust mode (QPSK, rate-1/2
/// convolutional + rate-0.9 Reed–Solomon code). Only the 8.7 dB points
/// are the seed's (its Fig. 4, read off as 6.31e-5 forward, 6.28e-2
/// return); the rest is an assumed coded-QPSK waterfall through them,
/// steeper for the forward link's 91 B blocks than for the return link's
/// 14 B tiles, which the seed's curve shows far higher at every SNR.
pub const FL_SNR_FER: &[(f64, f64)] = &[(4.0, 0.5), (6.0, 2.0e-2), (7.0, 2.5e-3), (8.0, 3.5e-4), (8.7, 6.31e-5), (10.0, 3.0e-6), (12.0, 1.0e-8)];
pub const RL_SNR_FER: &[(f64, f64)] = &[(4.0, 0.9), (6.0, 0.45), (7.0, 0.25), (8.0, 0.11), (8.7, 6.28e-2), (10.0, 1.5e-2), (12.0, 1.5e-3), (14.0, 1.0e-4), (16.0, 5.0e-6)];

impl Budget {
    /// Seed 002's Table 1 for this direction at `distance_km`: 41 dBm,
    /// antenna gains 8 dBi on the ground and 0 dBi on the aircraft, cable
    /// and diplexer losses 2 dB on the ground and 3.5 dB on the aircraft,
    /// 993.5 / 1056.5 MHz, 498.05 kHz, noise figure 6 dB (aircraft) / 5 dB
    /// (ground), a 6 dB margin.
    pub fn seed(link: LinkDir, distance_km: f64) -> Self {
        let (tx_gain_dbi, tx_loss_db, rx_gain_dbi, rx_loss_db, freq_mhz, noise_figure_db, snr_fer) = match link {
            LinkDir::Forward => (8.0, 2.0, 0.0, 3.5, 993.5, 6.0, FL_SNR_FER),
            LinkDir::Return => (0.0, 3.5, 8.0, 2.0, 1056.5, 5.0, RL_SNR_FER),
        };
        Budget { distance_km, tx_power_dbm: 41.0, tx_gain_dbi, tx_loss_db, rx_gain_dbi, rx_loss_db, freq_mhz, bandwidth_khz: 498.05, noise_figure_db, margin_db: 6.0, snr_fer: snr_fer.to_vec() }
    }
    /// Free-space path loss, dB.
    pub fn path_loss_db(&self) -> f64 {
        20.0 * self.distance_km.log10() + 20.0 * self.freq_mhz.log10() + 32.44
    }
    pub fn rx_power_dbm(&self) -> f64 {
        self.tx_power_dbm + self.tx_gain_dbi - self.tx_loss_db - self.path_loss_db() + self.rx_gain_dbi - self.rx_loss_db
    }
    /// Thermal noise (−174 dBm/Hz at 290 K) in the bandwidth, plus the
    /// noise figure.
    pub fn noise_dbm(&self) -> f64 {
        -174.0 + 10.0 * (self.bandwidth_khz * 1e3).log10() + self.noise_figure_db
    }
    /// The SNR the FER is read at: received power over noise, less the margin.
    pub fn snr_db(&self) -> f64 {
        self.rx_power_dbm() - self.noise_dbm() - self.margin_db
    }
    pub fn fer(&self) -> f64 {
        fer_at(&self.snr_fer, self.snr_db())
    }
    /// The system operating margin (seed 002 Table 2): the SNR, less the
    /// safety margin, above the working point the FERs were read at.
    pub fn operating_margin_db(&self) -> f64 {
        self.snr_db() - WORKING_POINT_SNR_DB
    }
}

/// The SNR of the seed's working point (its Fig. 4: 6.31e-5 forward,
/// 6.28e-2 return), dB.
pub const WORKING_POINT_SNR_DB: f64 = 8.7;

/// The FER at `snr` dB: log-linear between the table's points, the end
/// values beyond them.
pub fn fer_at(table: &[(f64, f64)], snr: f64) -> f64 {
    let (first, last) = (table[0], table[table.len() - 1]);
    if snr <= first.0 {
        return first.1;
    }
    if snr >= last.0 {
        return last.1;
    }
    let i = table.iter().position(|p| p.0 > snr).expect("inside the table");
    let ((x0, y0), (x1, y1)) = (table[i - 1], table[i]);
    let f = (snr - x0) / (x1 - x0);
    10f64.powf(y0.log10() + f * (y1.log10() - y0.log10()))
}

pub(super) const HELP: &str =
    "a table { link = \"rl\" | \"fl\", rate = \"31.5 kbit/s\", fer = 0.0628 (or budget = { distance_km = 225 }), arq = true, max_retx = 5, buffer = \"64 KB\", each_user = false }";

const BUDGET_KEYS: &[&str] = &["distance_km", "tx_power_dbm", "tx_gain_dbi", "tx_loss_db", "rx_gain_dbi", "rx_loss_db", "freq_mhz", "bandwidth_khz", "noise_figure_db", "margin_db", "snr_fer"];

/// `budget = { distance_km, … }`: seed 002's values for what is not given.
pub(super) fn parse_budget(r: &crate::profile::keys::Raw, v: &toml::Value, link: LinkDir) -> Result<Budget, ProfileError> {
    let t = v.as_table().ok_or_else(|| {
        r.err("budget: expected a table { distance_km = 225, tx_power_dbm?, tx_gain_dbi?, tx_loss_db?, rx_gain_dbi?, rx_loss_db?, freq_mhz?, bandwidth_khz?, noise_figure_db?, margin_db?, snr_fer? }")
    })?;
    if let Some(k) = t.keys().find(|k| !BUDGET_KEYS.contains(&k.as_str())) {
        return Err(r.err(format!("budget: unknown key {k:?}; allowed: {}", BUDGET_KEYS.join(", "))));
    }
    let num = |k: &str| -> Result<Option<f64>, ProfileError> { t.get(k).map(|v| number(v).ok_or_else(|| r.err(format!("budget.{k}: expected a number")))).transpose() };
    let distance_km = num("distance_km")?.ok_or_else(|| r.err("budget.distance_km: expected the distance to the ground station in km, like 225"))?;
    let mut b = Budget::seed(link, distance_km);
    for (k, field) in [
        ("tx_power_dbm", &mut b.tx_power_dbm),
        ("tx_gain_dbi", &mut b.tx_gain_dbi),
        ("tx_loss_db", &mut b.tx_loss_db),
        ("rx_gain_dbi", &mut b.rx_gain_dbi),
        ("rx_loss_db", &mut b.rx_loss_db),
        ("freq_mhz", &mut b.freq_mhz),
        ("bandwidth_khz", &mut b.bandwidth_khz),
        ("noise_figure_db", &mut b.noise_figure_db),
        ("margin_db", &mut b.margin_db),
    ] {
        if let Some(x) = num(k)? {
            *field = x;
        }
    }
    if b.distance_km <= 0.0 || b.freq_mhz <= 0.0 || b.bandwidth_khz <= 0.0 {
        return Err(r.err("budget: distance_km, freq_mhz and bandwidth_khz must be more than 0"));
    }
    if let Some(v) = t.get("snr_fer") {
        let bad = || r.err("budget.snr_fer: expected [[snr_db, fer], …] with SNR increasing and each FER in (0, 1]");
        let rows = v.as_array().ok_or_else(bad)?;
        let mut table = Vec::new();
        for row in rows {
            let pair = row.as_array().filter(|p| p.len() == 2).ok_or_else(bad)?;
            let x = |v: &toml::Value| number(v).ok_or_else(bad);
            let (snr, fer) = (x(&pair[0])?, x(&pair[1])?);
            if !(fer > 0.0 && fer <= 1.0) || table.last().is_some_and(|(s, _): &(f64, f64)| *s >= snr) {
                return Err(bad());
            }
            table.push((snr, fer));
        }
        if table.is_empty() {
            return Err(bad());
        }
        b.snr_fer = table;
    }
    Ok(b)
}
