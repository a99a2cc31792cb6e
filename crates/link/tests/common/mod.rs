//! Helpers shared by the link's simulated-time tests.

/// Wilson score interval for `k` successes in `n` trials at `z` standard
/// deviations (2.576 for 99 %).
pub fn binomial_ci(k: usize, n: usize, z: f64) -> (f64, f64) {
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    (centre - half, centre + half)
}
