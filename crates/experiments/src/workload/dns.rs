//! `dns`: every name looked up twice back to back, as seed 000 §5.1 did
//! with the Alexa top 100 through the aircraft's resolver — here the
//! ground's name server (the workload server answers every name) asked
//! directly, or a caching resolver aboard (Debian's dnsmasq in the
//! aircraft gateway of the `ifc` chain) that forwards what it does not
//! hold to the ground.
//!
//! Hits and misses are told apart as the study told them apart — a cached
//! answer comes back faster than any trip across the space link — without
//! a ping of our own: the lookup times fall in two clusters, split at the
//! widest gap (at least 3×) between them sorted; each cluster's mode is
//! its half-sample mode (seed 000's Figure 7 reads the modes off the
//! histogram). One cluster only: no cache answered, every lookup a miss.

use aerolink_link::Duration;
use aerolink_work::cli::{DnsArgs, WorkloadCmd};
use aerolink_work::dns::DnsResult;
use serde::{Deserialize, Serialize};

use super::table::{de, fields, Choice, Dur, KeyErr, Many, Whole};
use super::{Kind, Knobs, Measured, Workload, WorkloadError, WorkloadKind};
use crate::metric::Metric::{self, *};
use crate::metric::Metrics;

aerolink_work::choice! {
    /// Which resolver the client asks: a caching resolver aboard (dnsmasq
    /// in airgw; needs the gateway chain) or the ground's name server.
    pub enum ResolverAt { Aboard = "aboard", Ground = "ground" }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dns {
    pub resolver: ResolverAt,
    pub names: u32,
    pub rounds: u32,
    pub interval_ms: u64,
}

pub const KIND: WorkloadKind = WorkloadKind { name: "dns", keys: fields::<Table>, expand, base_knobs: Knobs::default };

/// A `[[workload]]` table of type dns: resolvers one value or a list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[serde(alias = "resolver")]
    resolvers: Option<Many<Choice<ResolverAt>>>,
    names: Option<Whole<1, 100_000>>,
    rounds: Option<Whole<1, 10_000>>,
    interval: Option<Dur>,
}

fn expand(t: toml::Table) -> Result<Vec<Workload>, KeyErr> {
    let t: Table = de(t)?;
    let names = t.names.map_or(100, |n| n.get());
    let rounds = t.rounds.map_or(1, |n| n.get());
    let interval_ms = t.interval.map_or(Duration::from_secs(300), |d| d.0).as_millis_f64().round() as u64;
    Ok(Many::or(t.resolvers, vec![Choice(ResolverAt::Aboard)]).into_iter().map(|Choice(resolver)| Workload::Dns(Dns { resolver, names, rounds, interval_ms })).collect())
}

/// How long a lookup waits for its answer (a resolver aboard retries a
/// lost query to the ground after about 3 s).
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

impl Kind for Dns {
    fn paced_seconds(&self) -> f64 {
        self.rounds.saturating_sub(1) as f64 * self.interval_ms as f64 / 1e3
    }
    fn validate(&self) -> Result<(), WorkloadError> {
        Ok(())
    }
    fn protocol(&self) -> String {
        "dns".to_string()
    }
    fn params_label(&self) -> String {
        let rounds = if self.rounds > 1 { format!(" ×{} every {} s", self.rounds, self.interval_ms / 1000) } else { String::new() };
        format!("{} names via {}{rounds}", self.names, self.resolver)
    }
    fn resolver_aboard(&self) -> bool {
        self.resolver == ResolverAt::Aboard
    }
    fn resolves_names(&self) -> bool {
        true
    }
    fn client_cmd(&self, server: String, _knobs: &Knobs) -> WorkloadCmd {
        WorkloadCmd::Dns(DnsArgs { resolver: server, count: self.names, rounds: self.rounds, interval: Duration::from_millis(self.interval_ms), timeout: LOOKUP_TIMEOUT })
    }
    fn table_metrics(&self) -> Vec<Metric> {
        vec![DnsHitMs, DnsMissMs, DnsFirstCachedPct, DnsSecondCachedPct, DnsBothMissPct]
    }
    fn headline(&self) -> Metric {
        DnsFirstMsMedian
    }
}

/// The time that splits hits from misses: the two clusters of the sorted
/// lookup times that differ most (Otsu's split: the greatest
/// between-cluster variance, in milliseconds), if the slower cluster's
/// mean is at least 3× the faster's; the split is the middle (geometric)
/// of the two times either side. A lone hit slowed to tens of
/// milliseconds stays with the hits (the widest *ratio* between
/// neighbours would have put it with the misses).
fn hit_below(times: &[f64]) -> Option<f64> {
    let mut t: Vec<f64> = times.iter().copied().filter(|x| *x > 0.0).collect();
    t.sort_by(f64::total_cmp);
    let (n, total) = (t.len() as f64, t.iter().sum::<f64>());
    let mut below = 0.0;
    let mut best: Option<(f64, usize, f64, f64)> = None;
    for k in 1..t.len() {
        below += t[k - 1];
        let (w0, w1) = (k as f64 / n, 1.0 - k as f64 / n);
        let (m0, m1) = (below / k as f64, (total - below) / (t.len() - k) as f64);
        let between = w0 * w1 * (m1 - m0) * (m1 - m0);
        if best.is_none_or(|b| between > b.0) {
            best = Some((between, k, m0, m1));
        }
    }
    let (_, k, m0, m1) = best?;
    (m1 >= 3.0 * m0).then(|| (t[k - 1] * t[k]).sqrt())
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| crate::stats::quantile(&v, 0.5))
}

fn mode(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| crate::stats::half_sample_mode(&v))
}

impl Measured for Dns {
    type Result = DnsResult;
    fn metrics(r: &DnsResult) -> Metrics {
        let mut m = Metrics::new();
        let answered: Vec<f64> = r.first_ms.iter().chain(&r.second_ms).flatten().copied().collect();
        let pairs = r.first_ms.len().min(r.second_ms.len());
        if pairs == 0 {
            return m;
        }
        let split = hit_below(&answered);
        // A lookup never answered is a miss.
        let hit = |x: &Option<f64>| matches!((x, split), (Some(t), Some(s)) if *t < s);
        let pct = |n: usize| 100.0 * n as f64 / pairs as f64;
        m.insert(DnsFirstCachedPct, pct(r.first_ms.iter().filter(|x| hit(x)).count()));
        m.insert(DnsSecondCachedPct, pct(r.second_ms.iter().filter(|x| hit(x)).count()));
        m.insert(DnsBothMissPct, pct(r.first_ms.iter().zip(&r.second_ms).filter(|(a, b)| !hit(a) && !hit(b)).count()));
        m.insert(DnsFailedPct, pct(r.first_ms.iter().filter(|x| x.is_none()).count()));
        if let Some(v) = median(r.first_ms.iter().flatten().copied().collect()) {
            m.insert(DnsFirstMsMedian, v);
        }
        if let Some(v) = mode(answered.iter().copied().filter(|t| split.is_some_and(|s| *t < s)).collect()) {
            m.insert(DnsHitMs, v);
        }
        if let Some(v) = mode(r.first_ms.iter().flatten().copied().filter(|t| split.is_none_or(|s| *t >= s)).collect()) {
            m.insert(DnsMissMs, v);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(first: &[Option<f64>], second: &[Option<f64>]) -> DnsResult {
        DnsResult { resolver: "198.18.0.2:53".into(), names: first.len() as u32, rounds: 1, first_ms: first.to_vec(), second_ms: second.to_vec() }
    }

    /// A cold cache aboard: first lookups cross the link, second ones are
    /// answered aboard; the two clusters give the modes and the shares.
    #[test]
    fn hits_and_misses_are_the_two_clusters() {
        let r = result(&[Some(640.0), Some(700.0), Some(4.0), None], &[Some(3.0), Some(5.0), Some(2.5), Some(690.0)]);
        let m = Dns::metrics(&r);
        assert_eq!(m[&DnsFirstCachedPct], 25.0);
        assert_eq!(m[&DnsSecondCachedPct], 75.0);
        // The fourth: no first answer and a slow second, both misses.
        assert_eq!(m[&DnsBothMissPct], 25.0);
        assert_eq!(m[&DnsFailedPct], 25.0);
        // Hits 2.5, 3, 4, 5: the closest pair's middle.
        assert_eq!(m[&DnsHitMs], 2.75);
        assert_eq!(m[&DnsMissMs], 670.0);
    }

    /// A hit slowed to 40 ms (a busy cabin hop, a loaded host) is still a
    /// hit: far nearer the hits than the 300 ms misses.
    #[test]
    fn a_slow_hit_stays_a_hit() {
        let mut second = vec![Some(1.9); 7];
        second.push(Some(40.0));
        let r = result(&[Some(314.0), Some(315.0), Some(316.0), Some(314.5), Some(315.5), Some(313.0), Some(317.0), Some(318.0)], &second);
        let m = Dns::metrics(&r);
        assert_eq!((m[&DnsFirstCachedPct], m[&DnsSecondCachedPct], m[&DnsBothMissPct]), (0.0, 100.0, 0.0));
    }

    /// Asking the ground directly, every lookup alike: no cache, all
    /// misses.
    #[test]
    fn one_cluster_is_all_misses() {
        let r = result(&[Some(600.0), Some(650.0), Some(900.0)], &[Some(610.0), Some(620.0), Some(1200.0)]);
        let m = Dns::metrics(&r);
        assert_eq!((m[&DnsFirstCachedPct], m[&DnsSecondCachedPct], m[&DnsBothMissPct]), (0.0, 0.0, 100.0));
        assert!(!m.contains_key(&DnsHitMs));
        assert_eq!(m[&DnsMissMs], 625.0);
    }
}
