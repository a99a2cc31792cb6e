//! Summary statistics for the report: quantiles (linear interpolation), a
//! summary of a sample, and the bootstrap of medians that `report
//! --compare` and `bench queue` use.

use rand::{Rng, SeedableRng};
use serde::Serialize;

const RESAMPLES: usize = 2000;

/// Runs a side needs before a comparison's interval means anything.
pub const MIN_RUNS: usize = 3;

pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub p5: f64,
    pub p95: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

pub fn summarize(values: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(Summary { n: v.len(), median: quantile(&v, 0.5), p5: quantile(&v, 0.05), p95: quantile(&v, 0.95), mean: v.iter().sum::<f64>() / v.len() as f64, min: v[0], max: v[v.len() - 1] })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median of `of` combined with the median of `vs` (a ratio, a
/// difference…), and its 95 % bootstrap interval: each side's runs
/// resampled with replacement, [`RESAMPLES`] times, from `seed`.
pub fn bootstrap(of: &[f64], vs: &[f64], combine: impl Fn(f64, f64) -> f64, seed: u64) -> (f64, f64, f64) {
    let value = combine(median(&mut of.to_vec()), if vs.is_empty() { 0.0 } else { median(&mut vs.to_vec()) });
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let draw = |v: &[f64], rng: &mut rand_chacha::ChaCha8Rng| -> f64 {
        if v.is_empty() {
            return 0.0;
        }
        let mut s: Vec<f64> = (0..v.len()).map(|_| v[rng.random_range(0..v.len())]).collect();
        median(&mut s)
    };
    let mut boot: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let a = draw(of, &mut rng);
            let b = draw(vs, &mut rng);
            combine(a, b)
        })
        .collect();
    boot.retain(|x| x.is_finite());
    if boot.is_empty() {
        return (value, value, value);
    }
    boot.sort_by(f64::total_cmp);
    (value, boot[(boot.len() as f64 * 0.025) as usize], boot[((boot.len() as f64 * 0.975) as usize).min(boot.len() - 1)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert_eq!(quantile(&v, 0.25), 2.0);
        assert!((quantile(&v, 0.05) - 1.2).abs() < 1e-12);
        let s = summarize(&[5.0, 1.0, f64::NAN, 3.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (3, 3.0, 1.0, 5.0));
        assert!(summarize(&[]).is_none());
    }
}
