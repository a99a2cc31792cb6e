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

/// The mode of a sample, by the half-sample mode (Bickel and Frühwirth,
/// 2006): the shortest interval holding half the values, again and again,
/// until two or three are left. Robust, and with no bin width to choose —
/// what a histogram's peak is read for (seed 000's DNS modes). `sorted`
/// ascending; NaN when empty.
pub fn half_sample_mode(sorted: &[f64]) -> f64 {
    let (mut lo, mut n) = (0, sorted.len());
    if n == 0 {
        return f64::NAN;
    }
    while n > 3 {
        let h = n.div_ceil(2);
        let width = |i: usize| sorted[i + h - 1] - sorted[i];
        lo = (lo..=lo + n - h).min_by(|&a, &b| width(a).total_cmp(&width(b))).unwrap_or(lo);
        n = h;
    }
    let x = &sorted[lo..lo + n];
    match x {
        [a] => *a,
        [a, b] => (a + b) / 2.0,
        [a, b, c] if b - a < c - b => (a + b) / 2.0,
        [a, b, c] if b - a > c - b => (b + c) / 2.0,
        [_, b, _] => *b,
        _ => unreachable!("two or three left"),
    }
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
    fn the_half_sample_mode_finds_the_peak_not_the_middle() {
        // A cluster at 150 with a long tail: the median is pulled up, the
        // mode is not.
        let mut x = vec![140.0, 145.0, 148.0, 150.0, 151.0, 152.0, 155.0, 160.0, 300.0, 450.0, 600.0, 700.0, 900.0];
        x.sort_by(f64::total_cmp);
        let m = half_sample_mode(&x);
        assert!((148.0..=155.0).contains(&m), "{m}");
        assert!(quantile(&x, 0.5) >= 155.0);
        assert_eq!(half_sample_mode(&[5.0]), 5.0);
        assert_eq!(half_sample_mode(&[1.0, 2.0, 10.0]), 1.5);
        assert!(half_sample_mode(&[]).is_nan());
    }

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
